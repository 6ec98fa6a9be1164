#!/usr/bin/env bash
# SIGHUP and the settings table: a changed setting that SIGHUP applies
# takes effect, each changed one that needs a restart is named in exactly
# one log line and keeps its running value; durations are Prometheus' in
# flags and in the file.
. "$(dirname "$0")/lib.sh"
need curl

# /api/v1/rules lists each group with the interval it is evaluated at.
rule_interval_is() {
	curl -fsS "$URL/api/v1/rules" | found "\"interval\":$1,"
}

start_agent --simulate 1 --rule-interval 1m30s
wait_until 'rule_interval_is 90' 10 "--rule-interval 1m30s is not a 90 s rule interval"
stop_agent
ok "--rule-interval 1m30s is 90 s"

cat >"$T_DIR/agent.yaml" <<'YAML'
simulate: 1
interval: 500ms
rule_interval: 10s
statsd_max_series: 10000
leak_age: 5m
YAML
start_agent --config "$T_DIR/agent.yaml"
wait_for gpuwatch_agent_interval_seconds 'set="fast"' 0.5
wait_until 'rule_interval_is 10' 10 "rule_interval: 10s not in use"

cat >"$T_DIR/agent.yaml" <<'YAML'
simulate: 1
interval: 250ms
rule_interval: 1m30s
statsd_max_series: 500
leak_age: 10m
YAML
kill -HUP "$AGENT_PID"
wait_until 'grep -q "config reloaded" "$T_DIR/agent.log"' 10 "no reload log line"
wait_for gpuwatch_agent_interval_seconds 'set="fast"' 0.25
wait_until 'rule_interval_is 90' 10 "rule_interval: 1m30s not applied by SIGHUP"
ok "SIGHUP applies interval and rule_interval"

restart_lines="$(grep -c "restart the agent to apply it" "$T_DIR/agent.log" || true)"
[ "$restart_lines" -eq 2 ] ||
	fail "$restart_lines restart lines, expected 2: $(grep "reload:" "$T_DIR/agent.log")"
for flag in --statsd-max-series --leak-age; do
	n="$(grep -c -- "reload: $flag changed; restart the agent to apply it" "$T_DIR/agent.log" || true)"
	[ "$n" -eq 1 ] || fail "$n log lines name $flag, expected 1"
done
ok "each changed setting that needs a restart is named in one line"

# The agent still runs and stops cleanly.
curl -fsS "$URL/healthz" >/dev/null || fail "agent not serving after the reload"
stop_agent
