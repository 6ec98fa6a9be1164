#!/bin/sh
# SPDX-License-Identifier: MIT
# Bytes on disk (all files) and import CPU of two builds of the agent on the
# same samples, beside Prometheus and VictoriaMetrics loaded with them in
# the same run (bench/README.md, "PromQL compare"): compare.py with a
# one-expression corpus, so only loading and sizes count.
# Usage: bench/promql-compare/sizes.sh BASE_BUILD NEW_BUILD [sim|dcgm|churn]...
#   (default: all three; HOURS=24 GPUS=8 the simulated set, SERIES=100000
#   the churn set, OUT=dir for the data and reports)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 BASE_BUILD NEW_BUILD [sim|dcgm|churn]..." >&2; exit 2; }
base=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
[ $# -gt 0 ] || set -- sim dcgm churn
out=${OUT:-${TMPDIR:-/tmp}/gw-store-sizes}
mkdir -p "$out"
end=$(($(date +%s) / 60 * 60 - 3600))
printf 'up{job="x"}\n' >"$out/corpus.promql"
for set in "$@"; do
	case $set in
	sim)
		"$new/bench_om_export" "${HOURS:-24}" "${GPUS:-8}" 2 "$end" "$out/sim.om" >/dev/null
		python3 - "$out/sim.om" "$end" "${HOURS:-24}" >"$out/sim.om.json" <<'PY'
import json, sys
s = 0
seen = set()
for line in open(sys.argv[1]):
    if line[0] != "#":
        s += 1
        seen.add(line.rsplit(" ", 2)[0])
end, hours = int(sys.argv[2]), float(sys.argv[3])
json.dump({"start": end - hours * 3600 + 1, "end": end, "stop": end, "reset": end,
           "interval": 1.0, "series": len(seen), "samples": s}, sys.stdout)
PY
		;;
	dcgm) python3 "$here/gen.py" dcgm "$out/dcgm.om" >"$out/dcgm.om.json" ;;
	churn)
		python3 "$here/gen.py" churn "$out/churn.om" --series "${SERIES:-100000}" \
			--hours 6 --interval 10 --end "$end" >"$out/churn.om.json"
		;;
	*) echo "unknown data set: $set" >&2; exit 2 ;;
	esac
	for b in base new; do
		eval build=\$$b
		python3 "$here/compare.py" --data "$out/$set.om" --info "$out/$set.om.json" \
			--dataset "$set" --out "$out/$set-$b" --gpuwatch "$build/gpuwatch" \
			--corpus "$out/corpus.promql" --kinds instant --instants 1 >/dev/null
		python3 - "$out/$set-$b/summary.json" "$set" "$b" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
b = s["bytes"]
vm = b.get("victoria-metrics")
print("%-6s %-5s samples %10d  agent %11d B  prometheus %11d B  vm %11s B  agent/vm %s" % (
    sys.argv[2], sys.argv[3], s["samples"], b["agent"], b["prometheus"], vm or "-",
    "%.2f" % (b["agent"] / vm) if vm else "-"))
PY
	done
done
