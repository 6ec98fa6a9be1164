#!/usr/bin/env bash
# The requests are signed as AWS checks them: against an endpoint that
# verifies every AWS Signature Version 4 (tests/s3/sigv4-check.py: the
# canonical request, the key derived from the secret, the payload's
# SHA-256), `store archive`, `store ls --remote` and `store restore` work
# with the right secret key and a session token, every request verified;
# a wrong secret key (which s3rver cannot notice) gets HTTP 403
# SignatureDoesNotMatch in one clear line and exit 1, the days staying
# local.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3-lib.sh"
need python3
need sqlite3

D="$T_DIR/data"
make_days "$D"
python3 "$TEST_SRC/s3/sigv4-check.py" "$T_DIR/sig.port" AKIDTEST s3cr3t/key+X \
	2>"$T_DIR/sig.log" &
SIG_PID=$!
trap 'S3_RC=$?; kill "$SIG_PID" 2>/dev/null || true; set +e; (exit $S3_RC); cleanup' EXIT
wait_until '[ -s "$T_DIR/sig.port" ]' 10 "the signature-checking endpoint did not start"
A=(--archive-url "s3://bkt/node 7" --archive-endpoint "http://127.0.0.1:$(cat "$T_DIR/sig.port")"
	--archive-region eu-west-3)
export AWS_ACCESS_KEY_ID=AKIDTEST AWS_SESSION_TOKEN=session-token-1

rc=0
AWS_SECRET_ACCESS_KEY=wrong "$GPUWATCH" store archive --data-dir "$D" "${A[@]}" \
	--archive-keep-local 0 >"$T_DIR/wrong.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "store archive with a wrong secret exited $rc"
grep -q "HTTP 403 SignatureDoesNotMatch (The request signature we calculated" "$T_DIR/wrong.out" ||
	fail "wrong secret message: $(cat "$T_DIR/wrong.out")"
[ "$(local_days "$D")" -eq 6 ] || fail "a partition left the disk after a refused upload"
grep -q " ok$" "$T_DIR/sig.log" && fail "a request signed with the wrong secret was accepted"
ok "a wrong secret key: 403 SignatureDoesNotMatch, days kept"

# The requests from here on (the server keeps its log open).
skip=$(wc -l <"$T_DIR/sig.log")
export AWS_SECRET_ACCESS_KEY=s3cr3t/key+X
"$GPUWATCH" store archive --data-dir "$D" "${A[@]}" --archive-keep-local 0 \
	>"$T_DIR/archive.out" 2>&1 || fail "store archive failed: $(cat "$T_DIR/archive.out")"
grep -q "^archived 6 partitions" "$T_DIR/archive.out" || fail "$(cat "$T_DIR/archive.out")"
"$GPUWATCH" store ls --remote "${A[@]}" >"$T_DIR/ls.out" || fail "ls --remote failed"
grep -q "^6 partitions in s3://bkt/node 7" "$T_DIR/ls.out" || fail "ls --remote: $(cat "$T_DIR/ls.out")"
"$GPUWATCH" store restore "raw/$DAY1" "$T_DIR/r.db" "${A[@]}" >/dev/null || fail "restore failed"
[ "$(sqlite3 "$T_DIR/r.db" 'select count(*) from zblocks')" -ge 1 ] || fail "the restored file has no chunks"
tail -n +"$((skip + 1))" "$T_DIR/sig.log" >"$T_DIR/good.log"
n=$(grep -c " ok$" "$T_DIR/good.log")
[ "$n" -ge 20 ] || fail "only $n requests verified: $(cat "$T_DIR/good.log")"
! grep -v " ok$" "$T_DIR/good.log" >"$T_DIR/bad.log" || fail "requests failed verification: $(head -5 "$T_DIR/bad.log")"
for m in PUT HEAD GET; do
	grep -q "^$m " "$T_DIR/good.log" || fail "no $m request was checked"
done
ok "$n requests (PUT, HEAD, GET, list) verified as AWS signs them, with a session token"
