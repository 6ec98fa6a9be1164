#!/usr/bin/env bash
# Scrapes and queries are not charged to the collection budget: with the
# API and /metrics hammered until the agent as a whole is far over
# --cpu-budget, the governor keeps the configured intervals, and the store
# holds a sample every interval.  (Charging the process's CPU, five
# scrapes a second stretched a 1 s interval to 8 s.)
. "$(dirname "$0")/lib.sh"
need curl
need python3

# Collection of 2 simulated GPUs every 0.5 s costs well under 1% of a core
# (under the sanitizers too); the hammering below costs the agent 5% or
# more.  The governor's window is 10 intervals, 5 s.  No eBPF: its discovery
# of the test's own curl processes is collection work, charged rightly.
BUDGET=0.02
# (start_agent's own --cpu-budget 1 comes first; this one wins.)
start_agent --simulate 2 --interval 0.5 --detail-interval 1 --no-ebpf \
	--cpu-budget $BUDGET

M=gpuwatch_gpu_power_watts
q_range() {
	local end
	end=$(date +%s)
	curl -s --max-time 30 -o /dev/null "$URL/api/v1/query_range" \
		--data-urlencode "query=quantile_over_time(0.9, $M[1m]) * on (gpu) group_left sum by (gpu) (rate(gpuwatch_gpu_energy_joules_total[1m]))" \
		-d start=$((end - 600)) -d end="$end" -d step=1 || true
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
# The test means something only once the agent as a whole is over budget.
wait_until 'r="$(value gpuwatch_agent_cpu_ratio "")"; [ -n "$r" ] && above "$r" $BUDGET' 60 \
	"the hammering did not take the agent over its budget of $BUDGET"
ok "the agent used $(value gpuwatch_agent_cpu_ratio "") of a core (budget $BUDGET), collection $(value gpuwatch_agent_collection_cpu_ratio "")"

# Three more windows of it: the intervals stay as configured.
deadline=$(($(now_ms) + 16000))
while [ "$(now_ms)" -lt $deadline ]; do
	fast="$(value gpuwatch_agent_interval_seconds 'set="fast"')"
	detail="$(value gpuwatch_agent_interval_seconds 'set="detail"')"
	[ "$fast" = 0.5 ] && [ "$detail" = 1 ] ||
		fail "intervals stretched to fast ${fast}s, detail ${detail}s by scrapes and queries (agent $(value gpuwatch_agent_cpu_ratio ""), collection $(value gpuwatch_agent_collection_cpu_ratio ""))"
	sleep 0.5 # a reading per interval, not a wait for a condition
done
if grep -q "cpu governor: .*intervals now" "$T_DIR/agent.log"; then
	fail "the governor acted: $(grep "cpu governor" "$T_DIR/agent.log" | head -n 3)"
fi
coll="$(value gpuwatch_agent_collection_cpu_ratio "")"
above $BUDGET "$coll" || fail "collection alone used $coll of a core, over the budget: the test cannot tell"

# The store saw a sample every 0.5 s over the last 10 s: 20, allowing for
# the edges of the window.
n="$(curl -fsS "$URL/api/v1/query" --data-urlencode "query=min(count_over_time($M[10s]))" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')"
[ "$n" -ge 18 ] || fail "$n samples of $M in the last 10 s, expected 20 at a 0.5 s interval"
ok "intervals kept at 0.5 s and 1 s under scrapes and queries; $n samples in 10 s; the agent at $(value gpuwatch_agent_cpu_ratio ""), collection at $coll"

for p in "${HAMMER[@]}"; do
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
done
HAMMER=()
stop_agent
