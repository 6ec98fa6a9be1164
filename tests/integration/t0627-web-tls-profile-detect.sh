#!/usr/bin/env bash
# gpuwatch profile and gpuwatch detect --query against a secured agent
# (--web.config.file: TLS with a test CA, basic_auth_users), with the
# client options gpuwatch query and top take:
#   - with --ca-file and --user USER:PASS or --password-file, profile
#     prints the stored profile (folded, top table, regress) and detect
#     scores the agent's samples exactly as it scores the same samples
#     read from a file;
#   - without a password each exits non-zero and explains the agent's 401;
#     without the CA each says the certificate could not be verified.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls-lib.sh"
need curl
need python3
make_certs
cat >"$T_DIR/web.yml" <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  alice: $(bcrypt_hash 's3cret pass')
YML
printf 's3cret pass\n' >"$T_DIR/password"
CURL_OPTS=(--cacert "$T_DIR/ca.crt" --user 'alice:s3cret pass')

# Five minutes of a trainer's CPU profile, ten minutes ago: per minute
# main;train;matmul 3 samples and main;load 1.
mkdir -p "$T_DIR/data"
first=$((($(date +%s) / 60 - 10) * 60000))
python3 "$(dirname "$0")/profseed.py" "$T_DIR/data/profiles.db" 4242 trainer \
	"$first" 5 'main;train;matmul=3' 'main;load=1' || fail "cannot seed profiles.db"

start_agent --simulate 1 --interval 0.1 --no-ebpf --web.config.file "$T_DIR/web.yml"
case "$URL" in https://*) ;; *) fail "the agent serves $URL, not https" ;; esac
URL="${URL/127.0.0.1/localhost}"
USERPASS=(--ca-file "$T_DIR/ca.crt" --user 'alice:s3cret pass')
PWFILE=(--ca-file "$T_DIR/ca.crt" --user alice --password-file "$T_DIR/password")

# ---- gpuwatch profile ----
out="$("$GPUWATCH" profile --url "$URL" "${USERPASS[@]}" --match '{comm="trainer"}' --folded 2>&1)" ||
	fail "gpuwatch profile --user failed: $out"
[ "$(sort <<<"$out")" = "$(printf 'main;load 5\nmain;train;matmul 15')" ] ||
	fail "gpuwatch profile --folded over TLS printed: $out"
out="$("$GPUWATCH" profile --url "$URL" "${PWFILE[@]}" --pid 4242 2>&1)" ||
	fail "gpuwatch profile --password-file failed: $out"
[ "$(head -n1 <<<"$out")" = "20 samples" ] || fail "gpuwatch profile's table: $out"
grep -Eq '^ +15 +75\.00% +15 +75\.00%  matmul$' <<<"$out" || fail "no matmul at 75% in: $out"
out="$("$GPUWATCH" profile regress --url "$URL" "${PWFILE[@]}" --base '{pid="4242"}' \
	--target '{comm="trainer"}' 2>&1)" || fail "gpuwatch profile regress over TLS failed: $out"
[ "$(tail -n1 <<<"$out")" = "no regression" ] || fail "gpuwatch profile regress printed: $out"
rc=0
err="$("$GPUWATCH" profile --url "$URL" --ca-file "$T_DIR/ca.crt" --folded 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "gpuwatch profile without a password exited $rc: $err"
case "$err" in *"HTTP 401"*--user*) ;; *) fail "gpuwatch profile without a password said: $err" ;; esac
rc=0
err="$("$GPUWATCH" profile --url "$URL" --user 'alice:s3cret pass' --folded 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "gpuwatch profile without the CA exited $rc: $err"
case "$err" in *"cannot reach"*certificate*) ;; *) fail "gpuwatch profile without the CA said: $err" ;; esac
ok "gpuwatch profile: --ca-file, --user, --password-file; 401 and an unknown CA explained"

# ---- gpuwatch detect --query ----
M='gpuwatch_gpu_temperature_celsius{gpu="0"}'
# raw AT: "t,v" lines of M's raw samples in the hour before AT.
raw() {
	curl -fsS "${CURL_OPTS[@]}" -G "$URL/api/v1/query" --data-urlencode "query=$M[1h]" \
		--data-urlencode "time=$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
for r in d["data"]["result"]:
    for t, v in r["values"]:
        print("%r,%s" % (t, v))'
}
# More samples than the detector's warm-up (64), so that some are scored.
wait_until '[ "$(raw "$(date +%s.%3N)" | wc -l)" -ge 100 ]' 30 "the agent stored no 100 samples of $M"
# The end: the newest sample stored, so that both reads see the same ones.
at="$(raw "$(date +%s.%3N)" | tail -n1 | cut -d, -f1)"
raw "$at" >"$T_DIR/samples.csv"
"$GPUWATCH" detect -q "$T_DIR/samples.csv" >"$T_DIR/want.csv" || fail "detect failed on the samples"
"$GPUWATCH" detect -q --query "$M" --end "$at" --url "$URL" "${PWFILE[@]}" >"$T_DIR/got.csv" 2>"$T_DIR/err" ||
	fail "gpuwatch detect --query over TLS failed: $(cat "$T_DIR/err")"
head -n1 "$T_DIR/got.csv" | found -x '# gpuwatch_gpu_temperature_celsius{gpu="0",.*}' ||
	fail "detect --query's banner: $(head -n1 "$T_DIR/got.csv")"
tail -n +2 "$T_DIR/got.csv" | cut -d, -f2- >"$T_DIR/got.rows"
cut -d, -f2- "$T_DIR/want.csv" >"$T_DIR/want.rows"
[ "$(wc -l <"$T_DIR/want.rows")" -gt 100 ] || fail "too few rows: $(wc -l <"$T_DIR/want.rows")"
grep -Eq '^[^,]+,[0-9.]+,[01]$' "$T_DIR/want.rows" || fail "no sample was scored"
cmp -s "$T_DIR/want.rows" "$T_DIR/got.rows" ||
	fail "detect --query over TLS differs from the same samples read from a file: $(diff "$T_DIR/want.rows" "$T_DIR/got.rows" | head)"
out="$("$GPUWATCH" detect -q --query "$M" --end "$at" --url "$URL" "${USERPASS[@]}" 2>&1)" ||
	fail "gpuwatch detect --query --user USER:PASS failed: $out"
[ "$(tail -n +2 <<<"$out" | cut -d, -f2-)" = "$(cat "$T_DIR/want.rows")" ] ||
	fail "gpuwatch detect --query --user USER:PASS gave other rows"
rc=0
err="$("$GPUWATCH" detect --query "$M" --url "$URL" --ca-file "$T_DIR/ca.crt" 2>&1)" || rc=$?
[ $rc -eq 1 ] || fail "gpuwatch detect without a password exited $rc: $err"
case "$err" in *"HTTP 401"*--user*) ;; *) fail "gpuwatch detect without a password said: $err" ;; esac
rc=0
err="$("$GPUWATCH" detect --query "$M" --url "$URL" --user 'alice:s3cret pass' 2>&1)" || rc=$?
[ $rc -eq 1 ] || fail "gpuwatch detect without the CA exited $rc: $err"
case "$err" in *"cannot reach"*certificate*) ;; *) fail "gpuwatch detect without the CA said: $err" ;; esac
rc=0
err="$("$GPUWATCH" detect --user 'alice:s3cret pass' "$T_DIR/samples.csv" 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "detect FILE --user exited $rc, not 2 (a bad option): $err"
case "$err" in *"--user is for --query"*) ;; *) fail "detect FILE --user said: $err" ;; esac
ok "gpuwatch detect --query: --ca-file, --user, --password-file; 401 and an unknown CA explained"

stop_agent
