#!/usr/bin/env bash
# The cold tier against a real S3-compatible server (s3rver): an agent with
# --archive-url uploads every closed day partition with its manifest,
# verified, then deletes the local files past --archive-keep-local; a range
# query over the archived days fetches them back into the cache and answers
# exactly what it answered before archiving (also through `gpuwatch query`
# and after a restart, which empties the cache); `store ls --remote` lists
# them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3-lib.sh"
need curl
need python3
s3_require

D="$T_DIR/data"
make_days "$D"
[ "$(local_days "$D")" -eq 6 ] || fail "expected 6 closed partitions, have $(local_days "$D")"

# The answer before anything is archived.
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d
range_json >"$T_DIR/before.json"
python3 - "$T_DIR/before.json" <<'PY' || fail "the query before archiving returned too little: $(head -c 300 "$T_DIR/before.json")"
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
assert len(r) == 2 and all(len(s["values"]) >= 230 for s in r), [len(s["values"]) for s in r]
PY
"$GPUWATCH" query --url "$URL" --start "$START" --end "$END" --step 60 \
	'sum(cold_temp_celsius)' >"$T_DIR/before.cli"
stop_agent

s3_start
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 1d
wait_for gpuwatch_archive_uploads_total '' 6 30
wait_until '[ "$(local_days "$D")" -eq 0 ]' 15 "the archived partitions are still on the local disk"
wait_for gpuwatch_archive_partitions 'state="remote"' 6
for tier in raw 1m 1h; do
	for day in "$DAY1" "$DAY2"; do
		[ -f "$(s3_object "$tier/$day.db")" ] || fail "no object $tier/$day.db in the bucket"
		[ -f "$(s3_object "$tier/$day.db.manifest")" ] || fail "no manifest for $tier/$day"
	done
done
grep -q "sha256 $(sha256sum "$(s3_object "raw/$DAY1.db")" | cut -c1-64)" "$(s3_object "raw/$DAY1.db.manifest")" ||
	fail "the manifest's sha256 is not the object's"
ok "6 partitions uploaded with manifests and deleted locally"

range_json >"$T_DIR/after.json"
cmp -s "$T_DIR/before.json" "$T_DIR/after.json" ||
	fail "the query over archived days differs: $(diff <(head -c 400 "$T_DIR/before.json") <(head -c 400 "$T_DIR/after.json"))"
misses=$(wait_ge gpuwatch_archive_cache_misses_total '' 2)
wait_for gpuwatch_archive_cache_bytes '' "$(($(stat -c %s "$(s3_object "raw/$DAY1.db")") + $(stat -c %s "$(s3_object "raw/$DAY2.db")")))"
range_json >"$T_DIR/again.json"
cmp -s "$T_DIR/before.json" "$T_DIR/again.json" || fail "the second query differs"
wait_ge gpuwatch_archive_cache_hits_total '' 2 >/dev/null
[ "$(value gpuwatch_archive_cache_misses_total)" -eq "$misses" ] || fail "the second query fetched again"
grep -q "archive: fetched raw/$DAY1 for a query" "$T_DIR/agent.log" || fail "the fetch is not logged"
"$GPUWATCH" query --url "$URL" --start "$START" --end "$END" --step 60 \
	'sum(cold_temp_celsius)' >"$T_DIR/after.cli"
cmp -s "$T_DIR/before.cli" "$T_DIR/after.cli" || fail "gpuwatch query differs after archiving"
ok "queries over archived days answer as before (API and gpuwatch query), the cache serves the second"
stop_agent

# After a restart the archived days are still known and read.
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 1d
range_json >"$T_DIR/restart.json"
cmp -s "$T_DIR/before.json" "$T_DIR/restart.json" || fail "the query after a restart differs"
ok "after a restart the archived days answer the same"
stop_agent

"$GPUWATCH" store ls --remote --data-dir "$D" "${ARCHIVE[@]}" >"$T_DIR/ls.out" ||
	fail "store ls --remote failed"
for tier in raw 1m 1h; do
	grep -Eq "^$tier +$DAY1 .* complete +remote only" "$T_DIR/ls.out" ||
		fail "ls --remote does not list $tier $DAY1: $(cat "$T_DIR/ls.out")"
done
grep -q "^6 partitions in s3://$S3_BUCKET/node1" "$T_DIR/ls.out" || fail "ls --remote summary: $(tail -1 "$T_DIR/ls.out")"
"$GPUWATCH" store ls --data-dir "$D" >"$T_DIR/ls-local.out"
grep -Eq "^raw +$DAY2 .* remote" "$T_DIR/ls-local.out" || fail "store ls does not show the remote day: $(cat "$T_DIR/ls-local.out")"
grep -q "6 more in the archive only" "$T_DIR/ls-local.out" || fail "store ls summary: $(tail -1 "$T_DIR/ls-local.out")"
"$GPUWATCH" store restore "raw/$DAY2" "$T_DIR/restored.db" "${ARCHIVE[@]}" >/dev/null ||
	fail "store restore failed"
cmp -s "$T_DIR/restored.db" "$(s3_object "raw/$DAY2.db")" || fail "the restored file differs from the object"
[ "$(sqlite3 "$T_DIR/restored.db" 'select count(*) from zblocks')" -ge 1 ] || fail "the restored file has no chunks"
ok "store ls --remote lists the bucket; store restore downloads a verified copy"

# Back into the data directory, where it then stays: read locally, kept
# past --archive-keep-local.
"$GPUWATCH" store restore "raw/$DAY1" --data-dir "$D" "${ARCHIVE[@]}" >"$T_DIR/into.out" 2>&1 ||
	fail "store restore into the data directory failed: $(cat "$T_DIR/into.out")"
[ -f "$D/store/raw/$DAY1.db" ] || fail "the restored day is not in the data directory"
"$GPUWATCH" store ls --data-dir "$D" >"$T_DIR/ls-after.out"
grep -Eq "^raw +$DAY1 .* closed +archived" "$T_DIR/ls-after.out" || fail "store ls after the restore: $(cat "$T_DIR/ls-after.out")"
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 1d
range_json >"$T_DIR/restored.json"
cmp -s "$T_DIR/before.json" "$T_DIR/restored.json" || fail "the query after the restore differs"
wait_for gpuwatch_archive_partitions 'state="remote"' 5
# Only the other raw day came from the bucket.
wait_for gpuwatch_archive_cache_misses_total '' 1
[ -f "$D/store/raw/$DAY1.db" ] || fail "the restored day left the disk again"
stop_agent
ok "store restore without FILE puts the day back into the data directory, where it stays"
