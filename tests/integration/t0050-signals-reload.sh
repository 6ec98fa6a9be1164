#!/usr/bin/env bash
# SIGHUP re-reads the config file; SIGTERM/SIGINT end the agent cleanly; the
# data directory is locked against a second agent.
. "$(dirname "$0")/lib.sh"
need curl

cat >"$T_DIR/agent.yaml" <<'YAML'
simulate: 1
interval: 500ms
detail_interval: 5
YAML
start_agent --config "$T_DIR/agent.yaml"
wait_for gpuwatch_agent_interval_seconds 'set="fast"' 0.5
wait_for gpuwatch_agent_interval_seconds 'set="detail"' 5

rc=0; "$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$T_DIR/data" 2>"$T_DIR/second.log" || rc=$?
[ $rc -eq 1 ] || fail "second agent on the same data dir exited $rc"
grep -q "in use by another agent (pid $AGENT_PID)" "$T_DIR/second.log" || fail "lock message: $(cat "$T_DIR/second.log")"
ok "data directory lock names the owner"

printf 'simulate: 1\ninterval: 250ms\ndetail_interval: 2\nlog_level: debug\n' >"$T_DIR/agent.yaml"
kill -HUP "$AGENT_PID"
wait_for gpuwatch_agent_interval_seconds 'set="fast"' 0.25
wait_for gpuwatch_agent_interval_seconds 'set="detail"' 2
# The new intervals are published before the reload ends and says so.
wait_until 'grep -q "config reloaded" "$T_DIR/agent.log"' 10 "no reload log line"

printf 'simulate: 1\ninterval: nope\n' >"$T_DIR/agent.yaml"
kill -HUP "$AGENT_PID"
wait_until 'grep -q "reload failed, keeping the running config: .*agent.yaml:2: interval" "$T_DIR/agent.log"' 10 "bad reload not reported"
wait_for gpuwatch_agent_interval_seconds 'set="fast"' 0.25
ok "SIGHUP applies a good config and keeps the old one on a bad one"

stop_agent
grep -q "received SIGTERM, stopping" "$T_DIR/agent.log" || fail "no stop line"
ok "SIGTERM: exit 0 in ${STOP_MS} ms"

start_agent --simulate 1
kill -INT "$AGENT_PID"
wait_until '! kill -0 $AGENT_PID 2>/dev/null' 5 "SIGINT did not stop the agent"
rc=0; wait "$AGENT_PID" || rc=$?
AGENT_PID=""
[ $rc -eq 0 ] || fail "exit status $rc after SIGINT"
ok "SIGINT: exit 0"
