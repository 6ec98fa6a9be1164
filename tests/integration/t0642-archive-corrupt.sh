#!/usr/bin/env bash
# A corrupted object in the bucket is refused: a query over its day answers
# without it (the other day still answers), the refusal is logged and
# counted (reason="corrupt"), nothing of it reaches the cache, and
# `store restore` exits 1 saying it does not match its manifest.  A damaged
# manifest is refused the same way.  `store archive` (the operator's
# command) is what archived the days here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3-lib.sh"
need curl
need python3
s3_require

D="$T_DIR/data"
make_days "$D"
s3_start
"$GPUWATCH" store archive --data-dir "$D" "${ARCHIVE[@]}" --archive-keep-local 0 \
	>"$T_DIR/archive.out" 2>&1 || fail "store archive failed: $(cat "$T_DIR/archive.out")"
grep -q "^archived 6 partitions to s3://$S3_BUCKET/node1" "$T_DIR/archive.out" ||
	fail "store archive summary: $(cat "$T_DIR/archive.out")"
[ "$(local_days "$D")" -eq 0 ] || fail "store archive left $(local_days "$D") partitions on disk with --archive-keep-local 0"
ok "store archive uploads and deletes the local copies"

# Flip bytes in the middle of DAY1's raw object (same size).
obj="$(s3_object "raw/$DAY1.db")"
python3 - "$obj" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
for i in range(len(b) // 2, len(b) // 2 + 64):
    b[i] ^= 0x5a
open(p, "wb").write(bytes(b))
PY
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 0
range_json >"$T_DIR/q.json"
python3 - "$T_DIR/q.json" "$START" <<'PY' || fail "the query over a corrupted day: $(head -c 300 "$T_DIR/q.json")"
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
day2 = int(sys.argv[2]) + 86400
assert len(r) == 2, len(r)
for s in r:
    ts = [float(t) for t, _ in s["values"]]
    assert all(t >= day2 for t in ts), "a point of the corrupted day came back"
    assert len(ts) >= 115, len(ts)
PY
wait_for gpuwatch_archive_fetch_failures_total 'reason="corrupt"' 1
grep -q "archive: raw/$DAY1 refused: .*does not match its manifest" "$T_DIR/agent.log" ||
	fail "the refusal is not logged: $(grep archive: "$T_DIR/agent.log")"
[ -z "$(ls "$T_DIR/data/archive-cache")" ] || [ "$(ls "$T_DIR/data/archive-cache" | grep -c "raw-$DAY1")" -eq 0 ] ||
	fail "the corrupted day reached the cache"
ok "a corrupted object is refused, counted and logged; the other day answers"
stop_agent

rc=0
"$GPUWATCH" store restore "raw/$DAY1" "$T_DIR/r.db" "${ARCHIVE[@]}" >"$T_DIR/restore.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "store restore of a corrupted object exited $rc"
grep -q "does not match its manifest; refused" "$T_DIR/restore.out" || fail "restore message: $(cat "$T_DIR/restore.out")"
[ ! -e "$T_DIR/r.db" ] || fail "store restore wrote a corrupted file"
ok "store restore refuses the corrupted object"

# A manifest that does not parse.
printf 'gpuwatch-archive 1\npartition raw/%s\nbytes x\n' "$DAY2" >"$(s3_object "raw/$DAY2.db.manifest")"
rc=0
"$GPUWATCH" store restore "raw/$DAY2" "$T_DIR/r2.db" "${ARCHIVE[@]}" >"$T_DIR/restore2.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "store restore with a damaged manifest exited $rc"
grep -q "a damaged manifest" "$T_DIR/restore2.out" || fail "damaged manifest message: $(cat "$T_DIR/restore2.out")"
ok "a damaged manifest is refused"
