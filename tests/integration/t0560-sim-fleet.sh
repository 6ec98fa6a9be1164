#!/usr/bin/env bash
# `gpuwatch sim fleet` into a real VictoriaMetrics: three simulated nodes of
# two GPUs, twenty minutes of the past, accelerated.  Every node arrives as
# its own instance with the external label, gauges arrive as the five
# 1-minute rollups and counters under their own names, and the counts the
# command reports agree with what VictoriaMetrics holds: the samples it
# says were acknowledged are the rows VictoriaMetrics inserted and the
# samples it exports, none failed.  Bad usage is refused with a message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rw-lib.sh"
need curl
need python3
command -v victoria-metrics >/dev/null || skip "victoria-metrics is not installed"
rw_trap

rc=0; err="$("$GPUWATCH" sim fleet --nodes 2 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--url is required" <<<"$err" || fail "no --url: rc $rc: $err"
rc=0; err="$("$GPUWATCH" sim fleet --url http://127.0.0.1:1/api/v1/write --duration 90s 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--duration: '90s' is not whole minutes" <<<"$err" || fail "bad --duration: rc $rc: $err"
rc=0; err="$("$GPUWATCH" sim frobnicate 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q "'frobnicate' is not a simulation" <<<"$err" || fail "bad simulation: rc $rc: $err"
help="$("$GPUWATCH" sim fleet --help)"
for flag in --url --nodes --gpus --start --duration --senders --interval --detail-interval \
	--faults-per-gpu-day --seed --instance-prefix --external-label --heartbeat --log-level \
	--precision --stddev-precision --rollups --process-rollups --state-rollups --without; do
	grep -Eq -- "^  $flag( |\$)" <<<"$help" || fail "sim fleet --help does not document $flag"
done
grep -q "in-memory" <<<"$help" || fail "--help does not say a simulated node's durability is in memory"
# The agent's side of the same policy: a bad list is refused at start.
rc=0; err="$("$GPUWATCH" agent --remote-write-process-rollups max,median --check-config 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--remote-write-process-rollups: 'max,median' is not all or a list" <<<"$err" ||
	fail "bad --remote-write-process-rollups: rc $rc: $err"
rc=0; err="$("$GPUWATCH" sim fleet --url http://127.0.0.1:1/api/v1/write --process-rollups median 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--process-rollups: 'median'" <<<"$err" || fail "bad --process-rollups: rc $rc: $err"
rc=0; err="$("$GPUWATCH" agent --remote-write-without 'pid,__name__' --check-config 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--remote-write-without: 'pid,__name__' is not none or a list" <<<"$err" ||
	fail "bad --remote-write-without: rc $rc: $err"
rc=0; err="$("$GPUWATCH" agent --remote-write-rollups max,p99 --check-config 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--remote-write-rollups: 'max,p99' is not all or a list" <<<"$err" ||
	fail "bad --remote-write-rollups: rc $rc: $err"
rc=0; err="$("$GPUWATCH" agent --remote-write-state-rollups avg,last --check-config 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--remote-write-state-rollups: 'avg,last' is not all or a list" <<<"$err" ||
	fail "bad --remote-write-state-rollups: rc $rc: $err"
rc=0; err="$("$GPUWATCH" sim fleet --url http://127.0.0.1:1/api/v1/write --without 'p-id' 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--without: 'p-id'" <<<"$err" || fail "bad --without: rc $rc: $err"
ok "usage"

vm_start
vm_rows() {
	curl -fsS "$VM/metrics" | awk '$1 == "vm_rows_inserted_total{type=\"promremotewrite\"}" { n = $2 } END { print n + 0 }'
}
rows0=$(vm_rows)
"$GPUWATCH" sim fleet --url "$VM/api/v1/write" --nodes 3 --gpus 2 --start -40m \
	--duration 20m --senders 2 --faults-per-gpu-day 20 --external-label cluster=t0560 \
	>"$T_DIR/report" 2>"$T_DIR/stderr" || fail "sim fleet failed: $(cat "$T_DIR/stderr" "$T_DIR/report")"
r() { awk -v k="$1" '$1 == k { print $2 }' "$T_DIR/report"; }
sent=$(r samples_sent)
[ "$(r nodes)" = 3 ] && [ "$(r gpus)" = 6 ] && [ "$(r simulated_seconds)" = 1200 ] ||
	fail "report: $(cat "$T_DIR/report")"
[ "$sent" -gt 0 ] || fail "nothing sent: $(cat "$T_DIR/report")"
[ "$(r samples_failed)" = 0 ] || fail "samples failed: $(cat "$T_DIR/report")"
[ "$(r samples_suppressed)" -gt 0 ] || fail "nothing suppressed: $(cat "$T_DIR/report")"
[ "$(r samples_generated)" -gt "$sent" ] || fail "generated not above sent: $(cat "$T_DIR/report")"
grep -q '^requests{code="204"} [1-9]' "$T_DIR/report" || fail "no 204 answers: $(cat "$T_DIR/report")"
for k in wire_bytes_per_gpu_day edge_cpu_ms_per_gpu_second samples_per_second_sent; do
	awk -v k="$k" '$1 == k && $2 > 0 { f = 1 } END { exit !f }' "$T_DIR/report" ||
		fail "$k missing or zero: $(cat "$T_DIR/report")"
done
ok "report: $sent samples sent"

# VictoriaMetrics counted every acknowledged sample as a row (its
# counters are read from /metrics: poll).
wait_until '[ "$(( $(vm_rows) - rows0 ))" = "$sent" ]' 30 \
	"VictoriaMetrics inserted $(( $(vm_rows) - rows0 )) rows, the command sent $sent"

# What it exports, once searchable (poll): per instance and name.
export_counts() {
	curl -fsS "$VM/api/v1/export" -d 'match[]={cluster="t0560"}' |
		python3 -c 'import json, sys, collections
n = 0; inst = collections.Counter(); names = set(); links = 0
for line in sys.stdin:
    s = json.loads(line)
    n += len(s["values"])
    inst[s["metric"].get("instance", "")] += 1
    names.add(s["metric"]["__name__"])
    links += "link" in s["metric"]
print(n)
print(" ".join(sorted(inst)))
print(" ".join(sorted(names)))
print(links)' >"$T_DIR/export"
	[ "$(head -n 1 "$T_DIR/export")" = "$sent" ]
}
wait_until export_counts 30 "VictoriaMetrics exports $(head -n 1 "$T_DIR/export" 2>/dev/null) samples, the command sent $sent"
[ "$(sed -n 2p "$T_DIR/export")" = "sim-node-0 sim-node-1 sim-node-2" ] ||
	fail "instances: $(sed -n 2p "$T_DIR/export")"
names=" $(sed -n 3p "$T_DIR/export") "
for n in gpuwatch_gpu_temperature_celsius:1m_avg gpuwatch_gpu_temperature_celsius:1m_min \
	gpuwatch_gpu_temperature_celsius:1m_max gpuwatch_gpu_temperature_celsius:1m_stddev \
	gpuwatch_gpu_temperature_celsius:1m_count_samples gpuwatch_gpu_up:1m_avg \
	gpuwatch_gpu_energy_joules_total gpuwatch_gpu_info \
	gpuwatch_gpu_process_memory_used_bytes:1m_without_pid_max \
	gpuwatch_gpu_nvlink_up:1m_without_link_avg gpuwatch_gpu_nvlink_errors_total \
	gpuwatch_gpu_power_limit_watts:1m_avg; do
	grep -q " $n " <<<"$names" || fail "$n did not arrive"
done
# (a process's gauges leave merged over pid, as :1m_without_pid_max only:
# --remote-write-without, --remote-write-process-rollups; a state or a
# setting as its :1m_avg only: --remote-write-state-rollups; a GPU's links
# as one series: the link states merged, the error counters summed,
# --remote-write-sum-without)
for n in gpuwatch_gpu_temperature_celsius gpuwatch_gpu_energy_joules_total:1m_avg \
	gpuwatch_gpu_process_memory_used_bytes:1m_max \
	gpuwatch_gpu_process_memory_used_bytes:1m_without_pid_avg \
	gpuwatch_gpu_up:1m_max gpuwatch_gpu_nvlink_up:1m_min \
	gpuwatch_gpu_nvlink_up:1m_avg gpuwatch_gpu_power_limit_watts:1m_max \
	gpuwatch_gpu_clock_max_hertz:1m_min; do
	grep -q " $n " <<<"$names" && fail "$n arrived: the default policy does not send it"
done
[ "$(sed -n 4p "$T_DIR/export")" = 0 ] ||
	fail "$(sed -n 4p "$T_DIR/export") series arrived with a link label: the default sums and merges a GPU's links"
ok "every instance, the rollups and the counters arrived; $sent samples in both counts"

# Each GPU of each node is there at every minute of the run, as a central
# query with a 5-minute lookback sees it: unchanged values are suppressed
# but resent within the heartbeat (4 minutes).
start=$(r start_seconds)
q=$(curl -fsS "$VM/api/v1/query_range" --data-urlencode \
	'query=count(last_over_time(gpuwatch_gpu_up:1m_avg{cluster="t0560"}[5m]))' \
	--data-urlencode "start=$((start + 60))" --data-urlencode "end=$((start + 1200))" \
	--data-urlencode step=60)
python3 -c 'import json, sys
r = json.loads(sys.argv[1])["data"]["result"]
v = [x[1] for x in r[0]["values"]]
assert len(v) == 20 and set(v) == {"6"}, v' "$q" ||
	fail "GPUs seen each minute: $q"
ok "the 6 GPUs seen at each of the 20 minutes"

# Rollups of gauges leave with at most 3 significant digits (the default
# --remote-write-precision; fewer where the minute's noise is larger); a
# counter with 9 significant digits, so it never goes down.
curl -fsS "$VM/api/v1/export" -d 'match[]={cluster="t0560",__name__=~"gpuwatch_gpu_power_watts:1m_(avg|stddev)|gpuwatch_gpu_energy_joules_total"}' |
	python3 -c 'import json, math, sys
def digits(v):
    for d in range(1, 18):
        if v == 0 or float("%.*g" % (d, v)) == v:
            return d
    return 17
seen = {"avg": 0, "energy": 0}
for line in sys.stdin:
    s = json.loads(line)
    n = s["metric"]["__name__"]
    v = s["values"]
    d = max(digits(x) for x in v)
    if n.endswith("_total"):
        assert all(a <= b for a, b in zip(v, v[1:])), (n, v[:10])
        assert d <= 9, (n, v[:5])
        seen["energy"] = max(seen["energy"], d)
    else:
        assert d <= 3, (n, v[:5])
        seen["avg"] += 1
assert seen["avg"] >= 6 and seen["energy"] > 4, seen' ||
	fail "rollups are not at 3 significant digits, or a counter lost its size or went down"
ok "gauge rollups at 3 significant digits, counters at 9"
