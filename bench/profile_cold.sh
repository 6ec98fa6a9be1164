#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CPU profiles in the cold tier (bench/README.md, "Profiles in the cold
# tier"): one closed day of PROCS processes' profiles, one row per minute
# and process with STACKS distinct stacks (gzip'd pprof, as the collector
# writes them), seeded into profiles.db; archived to a real S3-compatible
# server (s3rver, tests/s3) with `gpuwatch store archive`; then the whole
# day's profile of one process asked RUNS times from an agent holding the
# day locally and from one that has it only in the bucket (the first
# query fetches the day file, the others hit the cache).  Prints the rows'
# blob bytes, the day file's size, the archive's wall time and each
# query's time.
#
# Usage: bench/profile_cold.sh [BUILD_DIR]
#   PROCS=4 STACKS=100 RUNS=3
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build}
GPUWATCH=$build/gpuwatch
PROCS=${PROCS:-4}
STACKS=${STACKS:-100}
RUNS=${RUNS:-3}
[ -x "$GPUWATCH" ] || { echo "no $GPUWATCH: run make first" >&2; exit 1; }
export GPUWATCH TEST_SRC=$root/tests
. "$root/tests/integration/lib.sh"
. "$root/tests/integration/s3-lib.sh"
s3_require

d1=$((($(date +%s) / 86400 - 3) * 86400))
day=$(date -u -d "@$d1" +%F)
seed() {
	python3 - "$1" "$d1" "$PROCS" "$STACKS" "$root/tests/integration" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[5])
from profseed import insert, open_db

path, d1, procs, nstacks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(1)
fns = ["fn_%03d" % i for i in range(400)]
shapes = [["python", "main"] + rnd.sample(fns, rnd.randint(3, 25)) for _ in range(nstacks)]
db = open_db(path)
for m in range(1440):
    minute = d1 * 1000 + m * 60000
    for p in range(procs):
        insert(db, minute, 1000 + p, "trainer",
               [(st, rnd.randint(1, 30)) for st in shapes])
db.commit()
PY
}

ms() { date +%s%3N; }
query() {
	curl -fsS -o /dev/null -w '%{time_total}' "$URL/api/v1/profile" -G \
		--data-urlencode 'match[]=process_cpu{pid="1000"}' \
		--data-urlencode "start=$d1" --data-urlencode "end=$((d1 + 86399))" \
		--data-urlencode format=folded
}

for d in local cold; do
	mkdir -p "$T_DIR/$d/store"
	seed "$T_DIR/$d/profiles.db"
done
blob=$(sqlite3 "$T_DIR/local/profiles.db" 'select sum(bytes) from profiles')
rows=$(sqlite3 "$T_DIR/local/profiles.db" 'select count(*) from profiles')
echo "seeded: $rows rows ($PROCS processes x 1440 minutes, $STACKS stacks each), $blob blob bytes"

s3_start
t0=$(ms)
"$GPUWATCH" store archive --data-dir "$T_DIR/cold" "${ARCHIVE[@]}" --archive-keep-local 1d
t1=$(ms)
obj=$(stat -c %s "$(s3_object "prof/$day.db")")
echo "archive: $((t1 - t0)) ms; prof/$day.db $obj bytes ($(awk -v a="$obj" -v b="$blob" 'BEGIN { printf "%.2f", a / b }') x the blob bytes)"
echo "left in profiles.db: $(sqlite3 "$T_DIR/cold/profiles.db" 'select count(*) from profiles') rows"

for d in local cold; do
	if [ "$d" = cold ]; then
		start_agent --data-dir "$T_DIR/$d" --simulate 1 --no-ebpf "${ARCHIVE[@]}" --archive-keep-local 1d
	else
		start_agent --data-dir "$T_DIR/$d" --simulate 1 --no-ebpf
	fi
	for i in $(seq 1 "$RUNS"); do
		echo "$d query $i: $(query) s"
	done
	[ "$d" = cold ] && grep -o "fetched prof/.*" "$T_DIR/agent.log" | head -n 1
	stop_agent
done
