#!/usr/bin/env bash
# Scrapes and queries are not charged to the collection budget: with the
# API and /metrics hammered until the agent as a whole is far over
# --cpu-budget, the governor keeps the configured intervals, and the store
# holds a sample every interval.  (Charging the process's CPU, five
# scrapes a second stretched a 1 s interval to 8 s.)
. "$(dirname "$0")/lib.sh"
need curl
need python3

# The budget is set between what collection costs and what the agent as a
# whole costs under the hammering, both measured here first with no
# budget to speak of (the machine's speed and load, and the sanitizers,
# change both), then applied by SIGHUP, which starts a fresh window.  The
# governor's window is 10 intervals, 5 s.  No eBPF: its discovery of the
# test's own curl processes is collection work, charged rightly.
cat >"$T_DIR/agent.yaml" <<YAML
cpu_budget: 1
YAML
: >"$T_DIR/agent.log"
"$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$T_DIR/data" \
	--statsd-listen 127.0.0.1:0 --config "$T_DIR/agent.yaml" \
	--simulate 2 --interval 0.5 --detail-interval 1 --no-ebpf \
	2>"$T_DIR/agent.log" &
AGENT_PID=$!
wait_until 'URL="$(sed -n "s/.* listening on \(http:[^ ]*\) .*/\1/p" "$T_DIR/agent.log" | head -n1)"; [ -n "$URL" ]' \
	30 "agent did not start"

M=gpuwatch_gpu_power_watts
q_range() {
	local end
	end=$(date +%s)
	curl -s --max-time 30 -o /dev/null "$URL/api/v1/query_range" \
		--data-urlencode "query=quantile_over_time(0.9, $M[10m] offset -10m) * on (gpu) group_left sum by (gpu) (rate(gpuwatch_gpu_energy_joules_total[1m]))" \
		-d start=$((end - 600)) -d end="$end" -d step=0.1 || true
}
HAMMER=()
trap 'for p in "${HAMMER[@]}"; do kill "$p" 2>/dev/null || true; done; cleanup' EXIT
for _ in 1 2; do
	(while :; do curl -s -o /dev/null --max-time 5 "$URL/metrics" || true; done) &
	HAMMER+=($!)
	(while :; do q_range; done) &
	HAMMER+=($!)
done

above() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'
}
# next_window: waits for the governor's next window to end.
next_window() {
	local r0
	r0="$(value gpuwatch_agent_cpu_ratio "")"
	wait_until '[ "$(value gpuwatch_agent_cpu_ratio "")" != "$r0" ]' 30 "no governor window ended"
}
next_window
next_window # the first whole window under the hammering
all="$(value gpuwatch_agent_cpu_ratio "")"
coll="$(value gpuwatch_agent_collection_cpu_ratio "")"
# (An agent without the collection share would have its budget at a third
# of its whole share.)
[ -n "$coll" ] || coll="$(awk -v a="$all" 'BEGIN { print a / 9 }')"
above "$all" "$(awk -v c="$coll" 'BEGIN { print 4 * c }')" ||
	skip "the hammering took the agent to $all of a core, collection alone $coll: too close to tell them apart here"
BUDGET="$(awk -v a="$all" -v c="$coll" 'BEGIN { printf "%.4f", sqrt(a * c) }')"
echo "cpu_budget: $BUDGET" >"$T_DIR/agent.yaml"
kill -HUP "$AGENT_PID"
wait_until 'grep -q "config reloaded" "$T_DIR/agent.log"' 10 "no reload log line"
wait_for gpuwatch_agent_cpu_budget_ratio "" "$BUDGET" 10
ok "the agent used $all of a core, collection $coll: budget $BUDGET"

# Three windows at that budget: the intervals stay as configured.  The
# agent's share is read at each window's end, to know that it was over
# the budget in at least one.
pre="$(value gpuwatch_agent_cpu_ratio "")"
over=""
deadline=$(($(now_ms) + 16000))
while [ "$(now_ms)" -lt $deadline ]; do
	fast="$(value gpuwatch_agent_interval_seconds 'set="fast"')"
	detail="$(value gpuwatch_agent_interval_seconds 'set="detail"')"
	[ "$fast" = 0.5 ] && [ "$detail" = 1 ] ||
		fail "intervals stretched to fast ${fast}s, detail ${detail}s by scrapes and queries (agent $(value gpuwatch_agent_cpu_ratio ""), collection $(value gpuwatch_agent_collection_cpu_ratio ""), budget $BUDGET)"
	r="$(value gpuwatch_agent_cpu_ratio "")"
	if [ "$r" != "$pre" ] && above "$r" "$BUDGET"; then
		over="$r"
	fi
	sleep 0.5 # a reading per interval, not a wait for a condition
done
if grep -q "cpu governor: .*intervals now" "$T_DIR/agent.log"; then
	fail "the governor acted: $(grep "cpu governor" "$T_DIR/agent.log" | head -n 3)"
fi
[ -n "$over" ] ||
	skip "the agent stayed under its budget of $BUDGET after the reload: nothing to tell"
coll="$(value gpuwatch_agent_collection_cpu_ratio "")"

# The store's samples of the last 10 s are 0.5 s apart: the median
# spacing, as a machine starved of CPU (the sanitizers, a loaded host) may
# lose a few rounds; a stretch to 1 s would make it 1 s.
gap="$(curl -fsS --max-time 20 "$URL/api/v1/query" --data-urlencode "query=$M{gpu=\"0\"}[10s]" |
	python3 -c '
import json, statistics, sys
v = json.load(sys.stdin)["data"]["result"][0]["values"]
t = [float(x[0]) for x in v]
print("%.3f %d" % (statistics.median(b - a for a, b in zip(t, t[1:])), len(t)))')"
n="${gap#* }"
gap="${gap% *}"
above 0.6 "$gap" || fail "samples of $M ${gap}s apart in the last 10 s ($n of them), expected 0.5 s"
ok "intervals kept at 0.5 s and 1 s under scrapes and queries; $n samples in 10 s, ${gap}s apart; the agent at $over (budget $BUDGET), collection at $coll"

for p in "${HAMMER[@]}"; do
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
done
HAMMER=()
stop_agent
