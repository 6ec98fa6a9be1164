#!/usr/bin/env bash
# Above its CPU budget the agent stretches the detail set first, then the
# fast set, and exports the intervals it actually uses.
. "$(dirname "$0")/lib.sh"
need curl

# A budget no agent can meet: the governor must act.
"$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$T_DIR/data" \
	--simulate 8 --interval 0.2 --detail-interval 1 --cpu-budget 0.0001 2>"$T_DIR/agent.log" &
AGENT_PID=$!
wait_until 'URL="$(sed -n "s/.* listening on \(http:[^ ]*\) .*/\1/p" "$T_DIR/agent.log" | head -n1)"; [ -n "$URL" ]' 15 "agent did not start"
wait_for gpuwatch_agent_interval_seconds 'set="detail"' 8 40
wait_for gpuwatch_agent_interval_seconds 'set="fast"' 0.4 40
wait_for gpuwatch_agent_configured_interval_seconds 'set="fast"' 0.2
grep -q "cpu governor: .*intervals now fast" "$T_DIR/agent.log" || fail "no governor log line"
ok "over budget: detail stretched to 8x first, then fast"
stop_agent
