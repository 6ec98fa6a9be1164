#!/bin/sh
# SPDX-License-Identifier: MIT
# The PromQL comparison on the issue's three data sets (bench/README.md,
# "PromQL compare"): the simulator's GPUs at 1 s, the real DCGM trace of
# bench/data/, and a pid-churn set; plus the churn curve (ingest, size and
# lookup latency at 1, 10 and 100 thousand series).
# Usage: bench/promql-compare/run.sh [sim|dcgm|churn|curve|all]...  (default all)
#   BUILD=dir        release build directory (default build/)
#   OUT=dir          results (default ${TMPDIR:-/tmp}/gw-promql-compare)
#   HOURS=24 GPUS=8  the simulated set;  SERIES=100000  the churn set
#   NO_VM=1          without VictoriaMetrics
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
build=${BUILD:-$root/build}
out=${OUT:-${TMPDIR:-/tmp}/gw-promql-compare}
hours=${HOURS:-24}
gpus=${GPUS:-8}
series=${SERIES:-100000}
vm=""
[ -z "${NO_VM:-}" ] || vm="--no-vm"
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gpuwatch bench_om_export >/dev/null
mkdir -p "$out"
# Data end an hour before now, on the minute: the newest hour stays in the
# agent's head log, the rest is in closed day partitions.
end=$(($(date +%s) / 60 * 60 - 3600))

compare() { # NAME DATASET FILE [compare.py options]
	name=$1 ds=$2 file=$3
	shift 3
	python3 "$here/compare.py" --data "$file" --info "$file.json" --dataset "$ds" \
		--out "$out/$name" --gpuwatch "$build/gpuwatch" $vm "$@"
	sed -n '/^## Differences/,/^## Differing/p' "$out/$name/report.md"
}

run() {
	case $1 in
	sim)
		"$build/bench_om_export" "$hours" "$gpus" 2 "$end" "$out/sim.om" >/dev/null
		python3 - "$out/sim.om" "$end" "$hours" >"$out/sim.om.json" <<'PY'
import json, sys
n = s = 0
seen = set()
for line in open(sys.argv[1]):
    if line[0] != "#":
        s += 1
        seen.add(line.rsplit(" ", 2)[0])
end, hours = int(sys.argv[2]), float(sys.argv[3])
json.dump({"start": end - hours * 3600 + 1, "end": end, "stop": end, "reset": end,
           "interval": 1.0, "series": len(seen), "samples": s}, sys.stdout)
PY
		compare sim sim "$out/sim.om"
		;;
	dcgm)
		python3 "$here/gen.py" dcgm "$out/dcgm.om" >"$out/dcgm.om.json"
		compare dcgm dcgm "$out/dcgm.om"
		;;
	churn)
		python3 "$here/gen.py" churn "$out/churn.om" --series "$series" \
			--hours 6 --interval 10 --end "$end" >"$out/churn.om.json"
		compare churn churn "$out/churn.om" --instants 3
		;;
	curve)
		for n in 1000 10000 100000; do
			python3 "$here/gen.py" churn "$out/curve-$n.om" --series $n \
				--hours 6 --interval 10 --end "$end" >"$out/curve-$n.om.json"
			compare "curve-$n" churn "$out/curve-$n.om" --instants 3 \
				--kinds instant,raw-1h >/dev/null
			rm -f "$out/curve-$n.om"
		done
		python3 - "$out" <<'PY'
import json, sys
print("| series | bytes agent/VM | ingest agent/VM | one-series lookup agent/VM | avg by (gpu) agent/VM | all instants agent/VM |")
print("|---|---|---|---|---|---|")
for n in (1000, 10000, 100000):
    s = json.load(open("%s/curve-%d/summary.json" % (sys.argv[1], n)))
    b, r, l = s["bytes"], s["ingest_samples_per_s"], s["latency_median_ms"]
    vm = "victoria-metrics"
    if vm not in b:
        print("| %d | (no VictoriaMetrics) | | | | |" % n)
        continue
    e = s["latency_median_ms_by_expression"]
    look, agg = 'instant {p}{pid="{pid}"}', "instant avg by (gpu) ({p})"
    print("| %d | %.2f | %.2f | %.2f | %.2f | %.2f |" % (n, b["agent"] / b[vm], r["agent"] / r[vm],
          e["agent"][look] / e[vm][look], e["agent"][agg] / e[vm][agg],
          l["agent"]["instant"] / l[vm]["instant"]))
PY
		;;
	*)
		echo "usage: $0 [sim|dcgm|churn|curve|all]..." >&2
		exit 2
		;;
	esac
}

[ $# -gt 0 ] || set -- all
for what in "$@"; do
	if [ "$what" = all ]; then
		for w in dcgm churn sim curve; do run $w; done
	else
		run "$what"
	fi
done
echo "reports: $out/*/report.md"
