#!/usr/bin/env bash
# remote_write from the store-backed queue into a real VictoriaMetrics and
# a real Prometheus at once, both receivers compared with the agent's own
# history over the same window: every raw sample of the series picked with
# --remote-write-raw present, with equal timestamps and values; every
# NAME:1m_<output> rollup point equal to what the agent's samples in that
# minute give, all five outputs of every gauge in the first window; every
# series carries the external labels; Prometheus refused nothing.  A third
# endpoint nobody listens on is configured too: one endpoint down never
# holds back the others.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rw-lib.sh"
rw_require
rw_trap

vm_start
prom_start
GAUGES='{__name__=~"gpuwatch_gpu_(temperature_celsius|power_watts|utilization_ratio|memory_used_bytes|clock_hertz)"}'
T_START=$(now_ms)
start_agent --simulate 2 --no-ebpf \
	--remote-write "$VM/api/v1/write" --remote-write "$PROM/api/v1/write" \
	--remote-write http://127.0.0.1:1/api/v1/write \
	--remote-write-raw '{__name__=~"gpuwatch_gpu_.+"}' \
	--external-label cluster=test --external-label instance=node-a
grep -q 'remote_write .*: pushing to http://127.0.0.1' "$T_DIR/agent.log" ||
	fail "no queue started: $(cat "$T_DIR/agent.log")"

# Raw: 20 s of history, in both receivers (they get it ~15 s later:
# settle time and batch deadline).
END=$((T_START + 20000))
rw_wait_compare 90 "receivers differ from the agent's history" \
	--vm "$VM" --prom "$PROM" --match '{__name__=~"gpuwatch_gpu_.+"}' \
	--start $T_START --end $END --drop instance,cluster --min-samples 1000
ok "every raw sample of the picked series is in both receivers, same time and value"

# Rollups: the first full minute after the start, in both receivers.
T1=$(((T_START / 60000 + 1) * 60000))
rw_wait_compare 150 "rollups differ from the agent's minutes" \
	--vm "$VM" --prom "$PROM" --match "$GAUGES" --rollup --complete \
	--precision 3 --stddev-precision 2 \
	--start $T_START --end $((T1 + 60000)) --drop instance,cluster --min-samples 20
ok "NAME:1m_avg/min/max/stddev/count_samples equal the agent's minutes"

# A process's gauge leaves merged over pid (--remote-write-without pid),
# its max only (--remote-write-process-rollups max): each point equals the
# largest sample of the GPU's processes (of one comm) in the minute.
rw_wait_compare 150 "process rollups differ from the agent's minutes" \
	--vm "$VM" --prom "$PROM" --match '{__name__="gpuwatch_gpu_process_memory_used_bytes"}' \
	--rollup --complete --without pid --outs max --precision 3 \
	--start $T_START --end $((T1 + 60000)) --drop instance,cluster --min-samples 2
ok "NAME:1m_without_pid_max of the processes equals the agent's minutes"

# The node's identity on every series; counters under their own name.
curl -fsS "$VM/api/v1/series" --data-urlencode 'match[]={__name__=~"gpuwatch_.+"}' \
	>"$T_DIR/series.json"
python3 - "$T_DIR/series.json" <<'PY' || fail "series without the external labels: $(head -c 600 "$T_DIR/series.json")"
import json, sys
d = json.load(open(sys.argv[1]))["data"]
bad = [s for s in d if s.get("instance") != "node-a" or s.get("cluster") != "test"]
names = {s["__name__"] for s in d}
# a state (0/1 gauge) leaves as :1m_avg alone; no rollup keeps a pid
up = {n for n in names if n.startswith("gpuwatch_gpu_up:1m_")}
pids = [s for s in d if ":1m_" in s["__name__"] and "pid" in s]
if up != {"gpuwatch_gpu_up:1m_avg"} or pids:
	print("state outputs %s, rollups with a pid %s" % (sorted(up), pids[:3]), file=sys.stderr)
	sys.exit(1)
sys.exit(1 if bad or not d or "gpuwatch_gpu_energy_joules_total" not in names
	 or "gpuwatch_agent_cpu_seconds_total" not in names else 0)
PY
ok "every pushed series carries instance and cluster; counters keep their name; a state leaves as its :1m_avg; no rollup keeps a pid"

[ "$(prom_refusals)" = 0 ] || fail "Prometheus refused samples: $(curl -fsS "$PROM/metrics" | grep -E 'out_of_order|api/v1/write')"
# (grep -q on a pipe would end curl early: pipefail.  Keep the scrape.)
m="$(scrape)"
grep -q 'gpuwatch_remote_storage_requests_total{.*code="204"}' <<<"$m" ||
	fail "no 204 answers counted: $(grep remote_storage_requests <<<"$m")"
if grep -E 'gpuwatch_remote_storage_requests_total\{.*code="4' <<<"$m"; then
	fail "4xx answers counted"
fi
ok "Prometheus refused no sample; the agent counted no 4xx"

grep -q 'gpuwatch_remote_storage_request_failures_total{.*url="http://127.0.0.1:1/api/v1/write",reason="connection"} [1-9]' <<<"$m" ||
	fail "the dead endpoint was not tried: $(grep 'request_failures_total' <<<"$m")"
ok "the endpoint that is down held back neither of the others"
