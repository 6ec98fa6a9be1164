#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fleet benchmark (bench/README.md, "Fleet"): `gpuwatch sim fleet`
# pushes NODES x GPUS simulated GPUs over DURATION of simulated time (in
# the past: accelerated) into a real VictoriaMetrics (Debian's
# victoria-metrics, its own data directory and port) with the default edge
# policy, then reports
#   - edge CPU per GPU-second (the command's own measure; budget 0.1 ms),
#   - bytes on the wire per GPU-day (after snappy),
#   - VictoriaMetrics' stored bytes per GPU-day after a forced flush and
#     merge: data/ and indexdb/, and its whole data directory once
#     stopped, which also holds the caches it saves at shutdown (cache/:
#     sized by the live series, written once, not per day).  A first day
#     also pays each series' one-off index entries and compresses a day
#     of each series alone; what a day adds to a store that runs on is
#     bench/fleet-day.sh's (the budget of 100 KB),
#   - the central ingest rate, from VictoriaMetrics' own /metrics
#     (vm_rows_inserted_total over the run's wall time),
# and checks with a query that VictoriaMetrics holds the series the nodes
# sent (every instance, and the series count the command reports).
#
# Usage: bench/fleet.sh [BUILD_DIR]
#   NODES=1250 GPUS=8 DURATION=1h SENDERS=4 SEED=1
#   EXTRA="--precision 0 ..." (more options of gpuwatch sim fleet)
#   VM_EXTRA="-relabelConfig=FILE ..." (more flags of VictoriaMetrics)
# bench/README.md has the two runs: 1250 x 8 for 1h and 125 x 8 for 1d.
# Build BUILD_DIR as Release (cmake -DCMAKE_BUILD_TYPE=Release): the
# debug build's CPU figures are not the agent's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build}
GPUWATCH=$build/gpuwatch
NODES=${NODES:-1250}
GPUS=${GPUS:-8}
DURATION=${DURATION:-1h}
SENDERS=${SENDERS:-4}
SEED=${SEED:-1}
[ -x "$GPUWATCH" ] || { echo "no $GPUWATCH: run make first" >&2; exit 1; }
command -v victoria-metrics >/dev/null || { echo "victoria-metrics is not installed" >&2; exit 1; }
export GPUWATCH TEST_SRC=$root/tests
. "$root/tests/integration/lib.sh"
. "$root/tests/integration/rw-lib.sh"
need curl
need python3
rw_trap

vm_metric() { # NAME: the sum of a counter on VictoriaMetrics' /metrics
	curl -fsS "$VM/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%.0f\n", s }'
}
vm_query() { # PROMQL [TIME]: the first value of an instant query
	curl -fsS "$VM/api/v1/query" --data-urlencode "query=$1" \
		${2:+--data-urlencode "time=$2"} |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else 0)'
}

# As deploy/fleet/victoria-metrics.default has it (dedup of exact
# duplicates), with its own data directory and port (vm_start).
VM_PORT=$(rw_port)
VM="http://127.0.0.1:$VM_PORT"
victoria-metrics -storageDataPath="$T_DIR/vm" -httpListenAddr="127.0.0.1:$VM_PORT" \
	-retentionPeriod=100y -search.latencyOffset=0s -dedup.minScrapeInterval=1ms \
	-search.maxUniqueTimeseries=10000000 ${VM_EXTRA:-} >>"$T_DIR/vm.log" 2>&1 &
VM_PID=$!
rw_wait_ready "$VM/health" "$VM_PID" "$T_DIR/vm.log"

rows0=$(vm_metric vm_rows_inserted_total)
t0=$(now_ms)
# A run of whole days covers whole UTC days (the last ends at today's
# midnight), as each day does in a long-running store: VictoriaMetrics
# indexes each UTC day's series once, so a day that straddled two dates
# would pay that twice.
# END= (Unix seconds, a midnight) pins that end, so that runs of 1 and 2
# days that start on either side of a midnight cover the same days
# (bench/fleet-day.sh).
start="-$DURATION"
if [[ $DURATION =~ ^([0-9]+)d$ ]]; then
	end=${END:-$(( $(date -u +%s) / 86400 * 86400 ))}
	[[ $end =~ ^[0-9]+$ ]] || { echo "END=$end: not Unix seconds" >&2; exit 1; }
	start=$(( end - BASH_REMATCH[1] * 86400 ))
fi
cmd=("$GPUWATCH" sim fleet --url "$VM/api/v1/write" --nodes "$NODES" --gpus "$GPUS"
	--start "$start" --duration "$DURATION" --senders "$SENDERS" --seed "$SEED"
	--external-label cluster=bench ${EXTRA:-})
echo "+ ${cmd[*]}" >&2
"${cmd[@]}" | tee "$T_DIR/report"
t1=$(now_ms)
rows1=$(vm_metric vm_rows_inserted_total)
r() { awk -v k="$1" '$1 == k { print $2 }' "$T_DIR/report"; }

sim_s=$(r simulated_seconds)
start_s=$(r start_seconds)
# The series VictoriaMetrics holds for the run, and its instances.
series=$(curl -fsS "$VM/api/v1/series/count" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0])')
# (at the end of the simulated time, which may be a day before now)
instances=$(vm_query "count(count by (instance) (last_over_time(gpuwatch_gpu_info{cluster=\"bench\"}[1d])))" $((start_s + sim_s)))
infos=$(vm_query "count(last_over_time(gpuwatch_gpu_info{cluster=\"bench\"}[1d]))" $((start_s + sim_s)))
# What the series are: VictoriaMetrics' own top names by series count.
curl -fsS "$VM/api/v1/status/tsdb?topN=12&date=$(date -u -d @"$start_s" +%F)" | python3 -c 'import json, sys
d = json.load(sys.stdin)["data"]
print("series by name (first simulated day), top 12 of", d.get("totalSeries"), file=sys.stderr)
for x in d["seriesCountByMetricName"]:
    print("  %-58s %d" % (x["name"], x["value"]), file=sys.stderr)'
# Everything on disk, merged as it will stay: flush, merge the partitions
# the run wrote (months of the simulated time), wait until the merges are
# over and the directory no longer changes, then stop VictoriaMetrics
# (which writes what it still holds) and measure.
months=$(python3 -c 'import sys, time
s, e = int(sys.argv[1]), int(sys.argv[2])
print(" ".join(sorted({time.strftime("%Y_%m", time.gmtime(t)) for t in range(s - 120, e + 86400, 3600)})))' \
	"$start_s" "$((t0 / 1000))")
nmonths=$(wc -w <<<"$months")
# Settled: one part per partition (a part is a directory with a
# values.bin; samples flushed after the forced merge make a second one,
# merged again here), no merge running, and the directory the same for
# 30 s (the index merges its own parts in the background: its size
# depends on how far that got).
force_merge() {
	curl -fsS "$VM/internal/force_flush" >/dev/null
	for month in $months; do
		curl -fsS "$VM/internal/force_merge?partition_prefix=$month" >/dev/null
	done
}
force_merge
same=0
settled() {
	local now parts
	parts=$(find "$T_DIR/vm/data" -name values.bin | wc -l)
	now="$(vm_metric vm_active_merges) $(du -sb "$T_DIR/vm" | awk '{ print $1 }')"
	if [ "${now%% *}" = 0 ] && [ "$parts" -gt "$nmonths" ]; then
		force_merge
		same=0
	elif [ "$now" = "${last:-}" ] && [ "${now%% *}" = 0 ]; then
		same=$((same + 1))
		[ "$same" -ge 10 ] && return 0
	else
		same=0
	fi
	last=$now
	sleep 3 # the next look at the directory
	return 1
}
wait_until settled 900 "VictoriaMetrics still merging"
data=$(du -sb "$T_DIR/vm/data" | awk '{ print $1 }')
index=$(du -sb "$T_DIR/vm/indexdb" | awk '{ print $1 }')
vm_size=$(vm_metric vm_data_size_bytes)
rw_kill "$VM_PID"
VM_PID=
stored=$(du -sb "$T_DIR/vm" | awk '{ print $1 }')
cache=$( (du -sb "$T_DIR/vm/cache" 2>/dev/null || echo 0) | awk '{ print $1 }')

gpus=$(r gpus)
gpu_days=$(python3 -c "print($gpus * $sim_s / 86400)")
wall=$(python3 -c "print(($t1 - $t0) / 1000)")
cat <<EOF
---
run                          $NODES nodes x $GPUS GPUs, $DURATION simulated, $SENDERS senders ${EXTRA:-}
edge_cpu_ms_per_gpu_second   $(r edge_cpu_ms_per_gpu_second)   (budget 0.1)
wire_bytes_per_gpu_day       $(r wire_bytes_per_gpu_day)
samples_per_gpu_minute       $(r samples_per_gpu_minute)
vm_stored_bytes              $stored (data/ $data, indexdb/ $index, cache/ $cache; vm_data_size_bytes $vm_size)
vm_store_bytes_per_gpu_day   $(python3 -c "print(round(($data + $index) / $gpu_days))")   (data/ and indexdb/)
vm_data_bytes_per_gpu_day    $(python3 -c "print(round($data / $gpu_days))")
vm_index_bytes_per_gpu_day   $(python3 -c "print(round($index / $gpu_days))")
vm_stored_bytes_per_gpu_day  $(python3 -c "print(round($stored / $gpu_days))")   (the whole directory, cache/ included)
vm_bytes_per_sample          $(python3 -c "print(round($stored / max(1, $(r samples_sent)), 3))")
vm_rows_inserted             $((rows1 - rows0)) (samples_sent $(r samples_sent))
vm_ingest_rows_per_second    $(python3 -c "print(round(($rows1 - $rows0) / $wall))") over ${wall} s
vm_series                    $series
vm_instances                 $instances of $NODES
vm_gpu_info_series           $infos of $((NODES * GPUS))
EOF
[ "$instances" = "$NODES" ] || { echo "FAIL: VictoriaMetrics holds $instances instances, expected $NODES" >&2; exit 1; }
[ "$infos" = "$((NODES * GPUS))" ] || { echo "FAIL: VictoriaMetrics holds $infos GPUs, expected $((NODES * GPUS))" >&2; exit 1; }
[ "$((rows1 - rows0))" = "$(r samples_sent)" ] ||
	echo "note: VictoriaMetrics counted $((rows1 - rows0)) rows, the command $(r samples_sent) samples" >&2
