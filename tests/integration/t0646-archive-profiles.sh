#!/usr/bin/env bash
# The cold tier carries CPU profiles too: closed days of DATA_DIR/profiles.db
# go to the bucket as prof/DAY (with a manifest, verified) and leave the
# local file past --archive-keep-local; /api/v1/profile over those days
# fetches them back and answers what it answered before (also after a
# restart); `store ls --remote` lists them, `store restore prof/DAY FILE`
# downloads a verified day file and `store restore prof/DAY` puts the day
# back into profiles.db, where it stays.  `gpuwatch store archive` (no
# agent) archives profiles the same way.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3-lib.sh"
need curl
need python3
s3_require

# seed_profiles DB: two closed days of one process's profiles (ten minutes
# each, gzip'd pprof as the collector writes them), the first day's hot
# path matmul, the second's conv.
seed_profiles() {
	python3 - "$1" "$DAY1" "$DAY2" "$(dirname "$0")" <<'PY'
import datetime, sys
sys.path.insert(0, sys.argv[4])
from profseed import insert, open_db

db = open_db(sys.argv[1])
for day, hot in ((sys.argv[2], "matmul"), (sys.argv[3], "conv")):
    d0 = int(datetime.datetime.strptime(day, "%Y-%m-%d").replace(
        tzinfo=datetime.timezone.utc).timestamp()) * 1000
    for m in range(10):
        insert(db, d0 + 8 * 3600 * 1000 + m * 60000, 42, "trainer",
               [(["main", "train", hot], 3 + m), (["main", "load"], 1)])
db.commit()
PY
}

# profile_json: both days' profile of the process, folded.
profile_folded() {
	curl -fsS "$URL/api/v1/profile" --data-urlencode 'match[]=process_cpu{comm="trainer"}' \
		--data-urlencode "start=$START" --data-urlencode "end=$END" \
		--data-urlencode "format=folded" -G
}

rows_on_day() {
	python3 - "$1" "$2" <<'PY'
import datetime, sqlite3, sys
d0 = int(datetime.datetime.strptime(sys.argv[2], "%Y-%m-%d").replace(
    tzinfo=datetime.timezone.utc).timestamp()) * 1000
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT count(*) FROM profiles WHERE minute >= ? AND minute < ?",
                 (d0, d0 + 86400000)).fetchone()[0])
PY
}

D="$T_DIR/data"
make_days "$D"
seed_profiles "$D/profiles.db"

start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d
profile_folded >"$T_DIR/before.folded"
# 10 minutes a day: matmul 3..12 (75), conv the same, load 1 each (20).
grep -qx 'main;train;matmul 75' "$T_DIR/before.folded" &&
	grep -qx 'main;train;conv 75' "$T_DIR/before.folded" &&
	grep -qx 'main;load 20' "$T_DIR/before.folded" ||
	fail "the profile before archiving: $(cat "$T_DIR/before.folded")"
stop_agent

s3_start
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 1d
# 6 metric partitions and 2 days of profiles.
wait_for gpuwatch_archive_uploads_total '' 8 30
for day in "$DAY1" "$DAY2"; do
	[ -f "$(s3_object "prof/$day.db")" ] || fail "no object prof/$day.db in the bucket"
	grep -q "^partition prof/$day\$" "$(s3_object "prof/$day.db.manifest")" ||
		fail "no manifest for prof/$day"
	[ "$(sqlite3 "$(s3_object "prof/$day.db")" 'select count(*) from profiles')" -eq 10 ] ||
		fail "the object prof/$day.db does not hold the day's 10 profiles"
	wait_until '[ "$(rows_on_day "$D/profiles.db" "$day")" -eq 0 ]' 15 \
		"the archived day $day of profiles is still in profiles.db"
done
grep -q "sha256 $(sha256sum "$(s3_object "prof/$DAY1.db")" | cut -c1-64)" "$(s3_object "prof/$DAY1.db.manifest")" ||
	fail "the manifest's sha256 is not the object's"
ok "2 days of profiles uploaded with manifests and deleted locally"

profile_folded >"$T_DIR/after.folded"
cmp -s "$T_DIR/before.folded" "$T_DIR/after.folded" ||
	fail "the profile over archived days differs: $(diff "$T_DIR/before.folded" "$T_DIR/after.folded")"
grep -q "archive: fetched prof/$DAY1 for a query" "$T_DIR/agent.log" || fail "the fetch is not logged"
# Each fetch is logged as it happens (one write each); the counter is
# published on the cold tier's own beat, so wait until it has caught up.
fetched=$(grep -c "archive: fetched prof/" "$T_DIR/agent.log")
wait_until '[ "$(value gpuwatch_archive_cache_misses_total)" -ge "$fetched" ]' 15 \
	"gpuwatch_archive_cache_misses_total never counted the $fetched fetches"
profile_folded >"$T_DIR/again.folded"
cmp -s "$T_DIR/before.folded" "$T_DIR/again.folded" || fail "the second query differs"
[ "$(grep -c "archive: fetched prof/" "$T_DIR/agent.log")" -eq "$fetched" ] ||
	fail "the second query fetched again: $(grep "archive: fetched prof/" "$T_DIR/agent.log" | tail -n 2)"
ok "the profile API over archived days answers as before; the cache serves the second query"
stop_agent

start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 1d
profile_folded >"$T_DIR/restart.folded"
cmp -s "$T_DIR/before.folded" "$T_DIR/restart.folded" || fail "the profile after a restart differs"
stop_agent
ok "after a restart the archived days of profiles answer the same"

"$GPUWATCH" store ls --remote --data-dir "$D" "${ARCHIVE[@]}" >"$T_DIR/ls.out" ||
	fail "store ls --remote failed"
grep -Eq "^prof +$DAY1 .* complete +remote only" "$T_DIR/ls.out" ||
	fail "ls --remote does not list prof $DAY1: $(cat "$T_DIR/ls.out")"
grep -q "^8 partitions in s3://$S3_BUCKET/node1" "$T_DIR/ls.out" || fail "ls --remote summary: $(tail -1 "$T_DIR/ls.out")"
"$GPUWATCH" store ls --data-dir "$D" >"$T_DIR/ls-local.out"
grep -Eq "^prof +$DAY1 +- +remote" "$T_DIR/ls-local.out" &&
	grep -q "^0 days of profiles, 0 bytes; 2 more in the archive only" "$T_DIR/ls-local.out" ||
	fail "store ls does not show the remote days of profiles: $(cat "$T_DIR/ls-local.out")"
"$GPUWATCH" store restore "prof/$DAY2" "$T_DIR/prof.db" "${ARCHIVE[@]}" >/dev/null ||
	fail "store restore prof/$DAY2 FILE failed"
cmp -s "$T_DIR/prof.db" "$(s3_object "prof/$DAY2.db")" || fail "the restored file differs from the object"
ok "store ls --remote lists the days of profiles; store restore downloads a verified day file"

# Back into profiles.db, where the day then stays past --archive-keep-local.
"$GPUWATCH" store restore "prof/$DAY1" --data-dir "$D" "${ARCHIVE[@]}" >"$T_DIR/into.out" 2>&1 ||
	fail "store restore prof/$DAY1 into the data directory failed: $(cat "$T_DIR/into.out")"
[ "$(rows_on_day "$D/profiles.db" "$DAY1")" -eq 10 ] || fail "the restored day is not in profiles.db"
"$GPUWATCH" store ls --data-dir "$D" >"$T_DIR/ls-restored.out"
grep -Eq "^prof +$DAY1 .* closed +archived \(restored\)" "$T_DIR/ls-restored.out" ||
	fail "store ls after the restore: $(cat "$T_DIR/ls-restored.out")"
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 1d
misses=$(value gpuwatch_archive_cache_misses_total)
profile_folded >"$T_DIR/restored.folded"
cmp -s "$T_DIR/before.folded" "$T_DIR/restored.folded" || fail "the profile after the restore differs"
# Only the other day came from the bucket.
wait_for gpuwatch_archive_cache_misses_total '' $((misses + 1))
[ "$(rows_on_day "$D/profiles.db" "$DAY1")" -eq 10 ] || fail "the restored day left profiles.db again"
stop_agent
ok "store restore prof/DAY puts the day back into profiles.db, where it stays"

# A day that is not archived cannot be restored into the directory.
"$GPUWATCH" store restore "prof/2020-01-01" --data-dir "$D" "${ARCHIVE[@]}" >"$T_DIR/bad.out" 2>&1 &&
	fail "restoring a day the bucket does not hold succeeded"
grep -q "prof/2020-01-01" "$T_DIR/bad.out" || fail "no clear error: $(cat "$T_DIR/bad.out")"

# Without an agent: gpuwatch store archive takes the profiles along.
D2="$T_DIR/data2"
S3_PREFIX_ARGS=(--archive-url "s3://$S3_BUCKET/node2" --archive-endpoint "$S3_ENDPOINT")
make_days "$D2"
seed_profiles "$D2/profiles.db"
"$GPUWATCH" store archive --data-dir "$D2" "${S3_PREFIX_ARGS[@]}" --archive-keep-local 1d >"$T_DIR/cli.out" 2>&1 ||
	fail "store archive failed: $(cat "$T_DIR/cli.out")"
grep -q "^archived 8 partitions" "$T_DIR/cli.out" || fail "store archive: $(cat "$T_DIR/cli.out")"
[ -f "$S3_DIR/$S3_BUCKET/node2/prof/$DAY2.db._S3rver_object" ] || fail "store archive did not upload prof/$DAY2"
[ "$(rows_on_day "$D2/profiles.db" "$DAY2")" -eq 0 ] || fail "store archive left the archived day in profiles.db"
ok "gpuwatch store archive uploads the closed days of profiles and deletes them locally"
