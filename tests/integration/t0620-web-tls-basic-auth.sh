#!/usr/bin/env bash
# The secured endpoint (--web.config.file) with real curl: TLS with a
# test CA made here, basic_auth_users (bcrypt), http_server_config
# headers and --web.healthz-open.
#   - the right CA: served; another CA, or none: the handshake is refused;
#   - a right password: 200; a wrong one or none: 401 with
#     WWW-Authenticate, counted by reason; a flood of wrong ones is
#     throttled (429) once a second of bcrypt is spent, rather than
#     hashed without end, and a remembered password still passes;
#   - the configured headers are on every answer, 401 included;
#   - /healthz answers without a password, /metrics does not;
#   - gpuwatch query --url https://... with --ca-file and --user or
#     --password-file, and says why when the password is missing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls-lib.sh"
need curl
need python3
make_certs
HASH="$(bcrypt_hash 's3cret pass')"
SLOW="$(python3 -W ignore -c 'import crypt
print(crypt.crypt("x", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=4096)))')"
cat >"$T_DIR/web.yml" <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
http_server_config:
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  alice: $HASH
  slow: $SLOW
YML
CURL_OPTS=(--cacert "$T_DIR/ca.crt" --user 'alice:s3cret pass')
start_agent --simulate 1 --web.config.file "$T_DIR/web.yml" --web.healthz-open
case "$URL" in https://*) ;; *) fail "the agent serves $URL, not https" ;; esac
URL="${URL/127.0.0.1/localhost}"

# TLS: our CA verifies it; the system's or another CA's does not.
[ "$(http_code "${CURL_OPTS[@]}" "$URL/metrics")" = 200 ] || fail "no 200 over TLS with the right CA"
[ "$(http_code --user 'alice:s3cret pass' "$URL/metrics")" = 000 ] ||
	fail "the certificate was accepted without its CA"
[ "$(http_code --cacert "$T_DIR/rogue-ca.crt" --user 'alice:s3cret pass' "$URL/metrics")" = 000 ] ||
	fail "the certificate was accepted with another CA"
[ "$(http_code "${URL/https:/http:}/metrics")" = 000 ] ||
	fail "plain HTTP was answered on the TLS port"
ok "TLS: the right CA is accepted; no CA, another CA and plain HTTP are refused"

# Basic auth: right, wrong, absent.
curl -sS --cacert "$T_DIR/ca.crt" --user alice:wrong -D "$T_DIR/h401" -o "$T_DIR/b401" "$URL/metrics" || true
head -n1 "$T_DIR/h401" | found ' 401' || fail "a wrong password got $(head -n1 "$T_DIR/h401")"
grep -qi '^WWW-Authenticate: Basic realm=' "$T_DIR/h401" || fail "401 without WWW-Authenticate: $(cat "$T_DIR/h401")"
grep -qi '^X-Frame-Options: deny' "$T_DIR/h401" || fail "401 without the configured headers"
[ "$(http_code --cacert "$T_DIR/ca.crt" "$URL/metrics")" = 401 ] || fail "no password was not 401"
[ "$(http_code --cacert "$T_DIR/ca.crt" --user bob:'s3cret pass' "$URL/api/v1/labels")" = 401 ] ||
	fail "an unknown user was not 401"
curl -sS "${CURL_OPTS[@]}" -D "$T_DIR/h200" -o "$T_DIR/b200" "$URL/metrics" || fail "scrape failed"
grep -q '^gpuwatch_gpu_up' "$T_DIR/b200" || fail "the scrape has no gpuwatch_gpu_up"
grep -qi '^X-Frame-Options: deny' "$T_DIR/h200" || fail "200 without X-Frame-Options"
grep -qi '^Strict-Transport-Security: max-age=31536000' "$T_DIR/h200" || fail "200 without Strict-Transport-Security"
ok "basic auth: right 200, wrong/unknown/absent 401 with WWW-Authenticate; headers on both"

# /healthz is open (--web.healthz-open); the API is not.
[ "$(http_code --cacert "$T_DIR/ca.crt" "$URL/healthz")" = 200 ] || fail "/healthz asked for a password"
[ "$(http_code --cacert "$T_DIR/ca.crt" "$URL/api/v1/query?query=up")" = 401 ] || fail "the API answered without a password"
ok "/healthz open, /api/v1 asks"

# Failures are counted by reason (wrong: 2 so far, missing: 2).
wait_for gpuwatch_agent_http_auth_failures_total 'reason="wrong"' 2 15
wait_for gpuwatch_agent_http_auth_failures_total 'reason="missing"' 2 15

# gpuwatch query against the TLS + basic auth agent.
printf 's3cret pass\n' >"$T_DIR/password"
out="$("$GPUWATCH" query --url "$URL" --ca-file "$T_DIR/ca.crt" --user 'alice:s3cret pass' 'count(gpuwatch_gpu_up)')" ||
	fail "gpuwatch query --user failed: $out"
case "$out" in *1) ;; *) fail "gpuwatch query answered '$out'" ;; esac
out="$("$GPUWATCH" query --url "$URL" --ca-file "$T_DIR/ca.crt" --user alice --password-file "$T_DIR/password" \
	'count(gpuwatch_gpu_up)')" || fail "gpuwatch query --password-file failed: $out"
case "$out" in *1) ;; *) fail "gpuwatch query --password-file answered '$out'" ;; esac
out="$("$GPUWATCH" query --url "$URL" --insecure --user 'alice:s3cret pass' 'count(gpuwatch_gpu_up)')" ||
	fail "gpuwatch query --insecure failed: $out"
rc=0
err="$("$GPUWATCH" query --url "$URL" --ca-file "$T_DIR/ca.crt" up 2>&1)" || rc=$?
[ $rc -eq 1 ] || fail "gpuwatch query without a password exited $rc"
case "$err" in *"HTTP 401"*--user*) ;; *) fail "gpuwatch query without a password said: $err" ;; esac
rc=0
err="$("$GPUWATCH" query --url "$URL" --user 'alice:s3cret pass' up 2>&1)" || rc=$?
[ $rc -eq 1 ] || fail "gpuwatch query without the CA exited $rc"
case "$err" in *"cannot reach"*certificate*) ;; *) fail "gpuwatch query without the CA said: $err" ;; esac
rc=0
"$GPUWATCH" query --url "$URL" --user alice up >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--user without a password exited $rc, not 2 (a bad option)"
ok "gpuwatch query: --ca-file, --user, --password-file, --insecure; 401 and an unknown CA explained"

# gpuwatch top takes the same client options.
out="$("$GPUWATCH" top --once --url "$URL" --ca-file "$T_DIR/ca.crt" --user alice \
	--password-file "$T_DIR/password" 2>&1)" || fail "gpuwatch top over TLS failed: $out"
grep -Eq '^ *0 ' <<<"$out" || fail "gpuwatch top over TLS shows no GPU 0: $out"
rc=0
err="$("$GPUWATCH" top --once --url "$URL" --ca-file "$T_DIR/ca.crt" 2>&1)" || rc=$?
[ $rc -eq 1 ] || fail "gpuwatch top without a password exited $rc"
case "$err" in *"HTTP 401"*) ;; *) fail "gpuwatch top without a password said: $err" ;; esac
ok "gpuwatch top: the same client options; a 401 explained"

# A flood of guesses is throttled, not hashed without end: "slow" has a
# cost-12 hash, so the 1 s bcrypt budget is spent in a few guesses.  The
# password in use stays remembered (each use keeps it a minute more).
[ "$(http_code "${CURL_OPTS[@]}" "$URL/metrics")" = 200 ] || fail "alice before the flood"
codes=""
for _ in $(seq 1 40); do
	codes="$codes $(http_code --cacert "$T_DIR/ca.crt" --user slow:guess "$URL/metrics")"
done
case "$codes" in *429*) ;; *) fail "40 wrong passwords in a row were never throttled: $codes" ;; esac
wait_until '[ "$(value gpuwatch_agent_http_auth_failures_total reason=\"throttled\")" -ge 1 ] 2>/dev/null' 15 \
	"throttled logins are not counted"
ok "a password flood is throttled (429) and counted"
[ "$(http_code "${CURL_OPTS[@]}" "$URL/metrics")" = 200 ] || fail "a remembered password was throttled too"

stop_agent
