#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cold tier's costs (bench/README.md, "Cold tier"): one day of SERIES
# series at 1 s (default 16: a node's power readings) imported, archived to
# a real S3-compatible server (s3rver, tests/s3) with `gpuwatch store
# archive`, then the same range query (the day's average per minute) RUNS
# times on an agent holding the day locally and on one that has it only in
# the bucket (the first query fetches it, the others hit the cache).
# Prints the partition sizes, the archive's wall time, the fetch time from
# the log and each query's time.
#
# Usage: bench/cold_tier.sh [BUILD_DIR]
#   SERIES=16 RUNS=3
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build}
GPUWATCH=$build/gpuwatch
SERIES=${SERIES:-16}
RUNS=${RUNS:-3}
[ -x "$GPUWATCH" ] || { echo "no $GPUWATCH: run make first" >&2; exit 1; }
export GPUWATCH TEST_SRC=$root/tests
. "$root/tests/integration/lib.sh"
. "$root/tests/integration/s3-lib.sh"
s3_require

d1=$((($(date +%s) / 86400 - 3) * 86400))
python3 - "$T_DIR/in.om" "$d1" "$SERIES" <<'PY'
import math, sys
path, d1, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as f:
    f.write("# TYPE bench_gpu_power_watts gauge\n")
    for t in range(d1, d1 + 86400):
        for g in range(n):
            f.write('bench_gpu_power_watts{gpu="%d"} %.1f %d\n'
                    % (g, 300 + 50 * math.sin(t / 600 + g) + (t * 7 + g) % 13, t))
    f.write("# EOF\n")
PY
for d in local cold; do
	"$GPUWATCH" store import --data-dir "$T_DIR/$d" "$T_DIR/in.om" >/dev/null
done
"$GPUWATCH" store ls --data-dir "$T_DIR/cold" | sed 's/^/  /'
s3_start
t0=$(now_ms)
"$GPUWATCH" store archive --data-dir "$T_DIR/cold" "${ARCHIVE[@]}" --archive-keep-local 0 2>/dev/null
echo "store archive: $(($(now_ms) - t0)) ms (store open, 3 uploads verified, local copies deleted)"

query() {
	curl -fsS -o /dev/null -w '%{time_total}' "$URL/api/v1/query_range" \
		--data-urlencode 'query=avg(bench_gpu_power_watts)' \
		--data-urlencode "start=$d1" --data-urlencode "end=$((d1 + 86399))" \
		--data-urlencode step=60
}
for d in local cold; do
	if [ $d = local ]; then
		start_agent --data-dir "$T_DIR/$d" --simulate 1 --no-ebpf --retention-raw 30d
	else
		start_agent --data-dir "$T_DIR/$d" --simulate 1 --no-ebpf --retention-raw 30d \
			"${ARCHIVE[@]}" --archive-keep-local 0
	fi
	for i in $(seq "$RUNS"); do
		echo "$d: query_range over the day, run $i: $(query) s"
	done
	grep -o 'archive: fetched .*' "$T_DIR/agent.log" | sed "s/^/$d: /" || true
	stop_agent
done
