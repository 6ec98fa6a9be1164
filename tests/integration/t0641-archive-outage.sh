#!/usr/bin/env bash
# An outage of the bucket: uploads fail (counted, logged once), the days stay
# on the local disk and are still answered from it; when the server is back
# the retries (with backoff) upload them and only then are the local files
# deleted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3-lib.sh"
need curl
need python3
s3_require

D="$T_DIR/data"
make_days "$D"
# A port for the server that is not running yet.
s3_start
s3_stop
start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	"${ARCHIVE[@]}" --archive-keep-local 1d
wait_ge gpuwatch_archive_upload_failures_total 'reason="connection"' 2 20 >/dev/null
wait_for gpuwatch_archive_partitions 'state="pending"' 6
[ "$(value gpuwatch_archive_uploads_total)" -eq 0 ] || fail "an upload succeeded without a server"
[ "$(local_days "$D")" -eq 6 ] || fail "a partition left the disk while the bucket was down"
[ "$(grep -c 'archive: upload failed, the partition stays on the local disk' "$T_DIR/agent.log")" -eq 1 ] ||
	fail "the failure streak is not logged exactly once: $(grep archive: "$T_DIR/agent.log")"
n=$(range_json | python3 -c 'import json,sys; print(sum(len(s["values"]) for s in json.load(sys.stdin)["data"]["result"]))')
[ "$n" -ge 460 ] || fail "the local days are not answered during the outage ($n points)"
ok "bucket down: failures counted, logged once, the days stay local and answer"

s3_start
wait_for gpuwatch_archive_uploads_total '' 6 90
wait_until '[ "$(local_days "$D")" -eq 0 ]' 15 "the partitions stayed local after their upload"
grep -q "archive: uploads work again" "$T_DIR/agent.log" || fail "the recovery is not logged"
ok "server back: the retries upload every day, then the local copies go"

stop_agent
