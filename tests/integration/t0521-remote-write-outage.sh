#!/usr/bin/env bash
# The local store is the queue: both receivers (VictoriaMetrics and
# Prometheus) are stopped, the agent is restarted during the outage, the
# receivers come back and the agent is killed with SIGKILL while it catches
# up, then started again.  Afterwards both receivers hold every raw sample
# of the agent's history since the start (none missing, equal values), the
# rollups they hold equal the agent's minutes, and Prometheus refused no
# sample as out of order.  (The outage lasts seconds here; the mechanism is
# the same for ten minutes: bench/ measures that.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rw-lib.sh"
rw_require
rw_trap

# Newest sample of the agent's history, ms (0: none).
newest() {
	curl -fsS "$URL/api/v1/query" \
		--data-urlencode 'query=max(timestamp(gpuwatch_gpu_power_watts))' |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(int(float(r[0]["value"][1]) * 1000) if r else 0)'
}

# Samples the endpoints acknowledged in this run of the agent.
acked() {
	scrape | awk '/^gpuwatch_remote_storage_samples_total\{/ { n += $NF }
		END { print n + 0 }'
}

vm_start
prom_start
AGENT_ARGS=(--simulate 2 --no-ebpf
	--remote-write "$VM/api/v1/write" --remote-write "$PROM/api/v1/write"
	--remote-write-raw '{__name__=~"gpuwatch_gpu_.+"}'
	--external-label instance=node-b)
T_START=$(now_ms)
start_agent "${AGENT_ARGS[@]}"
wait_until '[ "$(acked)" -gt 500 ]' 60 "nothing acknowledged before the outage"
ok "pushing before the outage"

vm_stop
prom_stop
T_DOWN=$(now_ms)
wait_until '[ "$(newest)" -gt $((T_DOWN + 5000)) ]' 30 "no history during the outage"
cp "$T_DIR/agent.log" "$T_DIR/agent1.log"
stop_agent
ok "SIGTERM during the outage: the agent stopped in ${STOP_MS} ms"

T_RESTART=$(now_ms)
start_agent "${AGENT_ARGS[@]}"
grep -q 'remote_write .*: resuming from' "$T_DIR/agent.log" ||
	fail "the restarted agent did not resume from its watermarks: $(cat "$T_DIR/agent.log")"
wait_until '[ "$(newest)" -gt $((T_RESTART + 5000)) ]' 30 "no history after the restart"
[ "$(acked)" = 0 ] || fail "samples acknowledged while the receivers are down"
vm_start
prom_start
# Catch-up: killed as soon as the first batches are acknowledged.
wait_until '[ "$(acked)" -gt 0 ]' 60 "no catch-up once the receivers are back"
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=""
cp "$T_DIR/agent.log" "$T_DIR/agent2.log"
ok "killed with SIGKILL during catch-up"

T_LAST=$(now_ms)
start_agent "${AGENT_ARGS[@]}"
END=$((T_LAST + 5000))
rw_wait_compare 120 "after recovery the receivers differ from the agent's history" \
	--vm "$VM" --prom "$PROM" --match '{__name__=~"gpuwatch_gpu_.+"}' \
	--start "$T_START" --end "$END" --drop instance --min-samples 3000
ok "every sample from before, during and after the outage is in both receivers"

# The first complete minute after the start (sent 10 s after its end).
T1=$(((T_START / 60000 + 1) * 60000))
R_END=$((T1 > END ? T1 : END))
rw_wait_compare 120 "rollups differ from the agent's minutes" \
	--vm "$VM" --prom "$PROM" \
	--match '{__name__=~"gpuwatch_gpu_(temperature_celsius|power_watts|utilization_ratio)"}' \
	--rollup --precision 3 --stddev-precision 2 --start "$T_START" --end "$R_END" --drop instance --min-samples 4
ok "the rollups sent after the outage equal the agent's minutes"

[ "$(prom_refusals)" = 0 ] ||
	fail "Prometheus refused samples: $(curl -fsS "$PROM/metrics" | grep -E 'out_of_order|api/v1/write')"
ok "Prometheus refused no sample as out of order"
