#!/usr/bin/env bash
# deploy/grafana/gpuwatch-fleet.json against a real VictoriaMetrics (the
# flags of deploy/fleet/victoria-metrics.default) fed by remote_write from
# an agent with the default rollup policy: every target of every panel,
# the dcgm-exporter row included (the agent runs with --compat dcgm),
# evaluates without error and returns data, and the cluster and node
# variables list values.  $__rate_interval is 8m, what Grafana makes of
# the fleet datasources' timeInterval of 2m.  GPU 1 falls off the bus, so
# the XID, GPUs-down and node-alert panels have something to show.
# Takes about three minutes: rollups leave the node once a minute and a
# counter needs two of them for rate().
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet-lib.sh"
need curl
need python3
need victoria-metrics

CHECK="$(dirname "$0")/grafana-check.py"
DASH="$TEST_SRC/../deploy/grafana/gpuwatch-fleet.json"
[ -f "$DASH" ] || fail "no $DASH"
help="$("$GPUWATCH" agent --help 2>&1)"
grep -q -- '--remote-write' <<<"$help" || skip "the remote_write sender is not in this build"

vm_start
start_agent --simulate 2 --compat dcgm --interval 0.5 --detail-interval 1 \
	--rule-interval 1 --fault xid79:1:3 --no-ebpf \
	--remote-write "$VM/api/v1/write" --external-label cluster=grafana-test \
	--external-label instance=node-a

# Polled until every panel answers: the first rollups arrive after their
# minute ends, rate() over counters needs the second.
deadline=$(($(now_ms) + 240000))
until python3 "$CHECK" "$DASH" "$VM" --range 15m --step 1m --rate-interval 8m \
	>"$T_DIR/check.out" 2>&1; do
	if [ "$(now_ms)" -ge $deadline ]; then
		cat "$T_DIR/check.out" >&2
		fail "panels of the fleet dashboard fail against VictoriaMetrics"
	fi
	sleep 5
done
grep -q '^ok   variable cluster: grafana-test' "$T_DIR/check.out" ||
	{ cat "$T_DIR/check.out" >&2; fail "the cluster variable does not list grafana-test"; }
grep -q '^ok   variable instance: node-a' "$T_DIR/check.out" ||
	{ cat "$T_DIR/check.out" >&2; fail "the instance variable does not list node-a"; }
ok "every panel of the fleet dashboard answers with data from VictoriaMetrics ($(tail -n 1 "$T_DIR/check.out"))"

# Against a selection that matches nothing, the same check must fail.
if python3 "$CHECK" "$DASH" "$VM" --range 15m --step 1m --rate-interval 8m \
	--var cluster=no-such-cluster >"$T_DIR/none.out" 2>&1; then
	fail "the check passes panels that select no cluster"
fi
grep -q '^FAIL .*Utilisation by node.*no data' "$T_DIR/none.out" ||
	{ cat "$T_DIR/none.out" >&2; fail "an empty panel is not reported"; }
ok "the check reports panels without data"
stop_agent
