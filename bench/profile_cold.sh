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
	python3 - "$1" "$d1" "$PROCS" "$STACKS" <<'PY'
import gzip, random, sqlite3, sys

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)

def msg(num, body):
    return varint(num << 3 | 2) + varint(len(body)) + body

def num(n, v):
    return varint(n << 3) + varint(v)

def pprof(stacks, t_ns):
    strings, funcs, out = ["", "samples", "count"], {}, bytearray()
    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)
    out += msg(1, num(1, s("samples")) + num(2, s("count")))
    for frames, value in stacks:
        ids = [funcs.setdefault(f, len(funcs) + 1) for f in frames]
        out += msg(2, msg(1, b"".join(varint(i) for i in reversed(ids))) + msg(2, varint(value)))
    for f, i in funcs.items():
        out += msg(4, num(1, i) + msg(4, num(1, i)))
    for f, i in funcs.items():
        out += msg(5, num(1, i) + num(2, s(f)))
    for x in strings:
        out += msg(6, x.encode())
    out += num(9, t_ns) + num(10, 60 * 10**9)
    return gzip.compress(bytes(out))

path, d1, procs, nstacks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(1)
fns = ["fn_%03d" % i for i in range(400)]
shapes = [["python", "main"] + rnd.sample(fns, rnd.randint(3, 25)) for _ in range(nstacks)]
db = sqlite3.connect(path)
db.executescript("""
CREATE TABLE IF NOT EXISTS profiles(minute INTEGER NOT NULL, pid INTEGER NOT NULL,
 type INTEGER NOT NULL, labels TEXT NOT NULL, samples INTEGER NOT NULL,
 bytes INTEGER NOT NULL, blob BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS profiles_minute ON profiles(minute, pid, type);
""")
for m in range(1440):
    minute = d1 * 1000 + m * 60000
    for p in range(procs):
        stacks = [(st, rnd.randint(1, 30)) for st in shapes]
        blob = pprof(stacks, minute * 10**6)
        db.execute("INSERT INTO profiles VALUES(?,?,?,?,?,?,?)",
                   (minute, 1000 + p, 0, 'pid="%d",comm="trainer"' % (1000 + p),
                    sum(v for _, v in stacks), len(blob), blob))
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
