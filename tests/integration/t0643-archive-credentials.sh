#!/usr/bin/env bash
# Credentials: none at all is a configuration error at start (exit 2, one
# line saying where they are looked for); a key the server does not know
# gets its answer in the log (HTTP 403 InvalidAccessKeyId), counted as
# reason="denied", and the days stay local; `store ls --remote` says the
# same and exits 1.  The shared credentials file and AWS_PROFILE work.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3-lib.sh"
need curl
need python3
s3_require

D="$T_DIR/data"
make_days "$D"
s3_start

rc=0
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$T_DIR" \
	"$GPUWATCH" agent --data-dir "$D" --listen 127.0.0.1:0 "${ARCHIVE[@]}" \
	>"$T_DIR/nocred.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "an agent without credentials exited $rc"
grep -q "no credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set and $T_DIR/.aws/credentials cannot be read" \
	"$T_DIR/nocred.out" || fail "no-credentials message: $(cat "$T_DIR/nocred.out")"
ok "no credentials: exit 2 with a clear message"

AWS_ACCESS_KEY_ID=NOTAKEY start_agent --data-dir "$D" --simulate 1 --no-ebpf \
	--retention-raw 30d "${ARCHIVE[@]}" --archive-keep-local 1d
wait_ge gpuwatch_archive_upload_failures_total 'reason="denied"' 1 >/dev/null
grep -q "archive: upload failed, the partition stays on the local disk and is retried: PUT node1/.*: HTTP 403 InvalidAccessKeyId" \
	"$T_DIR/agent.log" || fail "the denial is not logged clearly: $(grep archive: "$T_DIR/agent.log")"
[ "$(local_days "$D")" -eq 6 ] || fail "a partition left the disk without an upload"
[ "$(value gpuwatch_archive_uploads_total)" -eq 0 ] || fail "an upload succeeded with a wrong key"
stop_agent
rc=0
AWS_ACCESS_KEY_ID=NOTAKEY "$GPUWATCH" store ls --remote "${ARCHIVE[@]}" >"$T_DIR/ls.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "store ls --remote with a wrong key exited $rc"
grep -q "HTTP 403 InvalidAccessKeyId" "$T_DIR/ls.out" || fail "ls --remote message: $(cat "$T_DIR/ls.out")"
ok "a wrong key: HTTP 403 InvalidAccessKeyId logged, counted as denied, days kept"

# The shared credentials file, a named profile.
cat >"$T_DIR/credentials" <<'INI'
[default]
aws_access_key_id = NOTAKEY
aws_secret_access_key = x

; the one that works
[archive]
aws_access_key_id = S3RVER
aws_secret_access_key = S3RVER
INI
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$T_DIR/credentials" \
	AWS_PROFILE=archive "$GPUWATCH" store archive --data-dir "$D" "${ARCHIVE[@]}" \
	--archive-keep-local 0 >"$T_DIR/archive.out" 2>&1 ||
	fail "store archive with a credentials file failed: $(cat "$T_DIR/archive.out")"
grep -q "^archived 6 partitions" "$T_DIR/archive.out" || fail "$(cat "$T_DIR/archive.out")"
ok "the shared credentials file and AWS_PROFILE are used"
