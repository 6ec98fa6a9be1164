#!/usr/bin/env bash
# SIGHUP re-reads the web configuration file while the agent serves:
#   - a renewed certificate (new key, new serial) is served by the next
#     handshakes, no restart;
#   - changed basic_auth_users apply to the next requests (the old
#     password 401, the new one 200);
#   - a file that cannot be honoured (a key that is not the
#     certificate's; TLS turned off) is logged and the running
#     configuration stays.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls-lib.sh"
need curl
need python3
need openssl
make_certs

# issue: a new server key and certificate into server.crt/server.key.
issue() {
	(
		cd "$T_DIR"
		openssl req -newkey rsa:2048 -nodes -keyout new.key -out new.csr \
			-subj "/CN=server-$1" >>openssl.log 2>&1
		openssl x509 -req -in new.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out new.crt -days 2 -extfile server.ext >>openssl.log 2>&1
		mv new.crt server.crt
		mv new.key server.key
	) || fail "openssl: $(cat "$T_DIR/openssl.log")"
}
serial_file() { openssl x509 -noout -serial -in "$T_DIR/server.crt"; }
# serial_served: the serial of the certificate the agent presents.
serial_served() {
	openssl s_client -connect "${URL#https://}" -servername localhost </dev/null 2>/dev/null |
		openssl x509 -noout -serial 2>/dev/null || true
}
webyml() {
	printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  alice: %s\n' \
		"$(bcrypt_hash "$1")" >"$T_DIR/web.yml"
}

webyml one
CURL_OPTS=(--cacert "$T_DIR/ca.crt" --user alice:one)
start_agent --simulate 1 --web.config.file "$T_DIR/web.yml"
first="$(serial_file)"
[ "$(serial_served)" = "$first" ] || fail "served $(serial_served), not the file's $first"

issue 2
webyml two
second="$(serial_file)"
[ "$second" != "$first" ] || fail "the new certificate has the old serial"
kill -HUP "$AGENT_PID"
wait_until '[ "$(serial_served)" = "$second" ]' 15 "after SIGHUP the agent serves $(serial_served), not $second"
wait_until 'grep -q "web config .* reloaded" "$T_DIR/agent.log"' 15 "no reload logged"
[ "$(http_code --cacert "$T_DIR/ca.crt" --user alice:two "$URL/metrics")" = 200 ] || fail "the new password is refused"
[ "$(http_code --cacert "$T_DIR/ca.crt" --user alice:one "$URL/metrics")" = 401 ] || fail "the old password still works"
ok "SIGHUP: the renewed certificate and the new password are served without a restart"

# A key that is not the certificate's: refused, the running one stays.
cp "$T_DIR/server.key" "$T_DIR/good.key"
cp "$T_DIR/client.key" "$T_DIR/server.key"
kill -HUP "$AGENT_PID"
wait_until 'grep -q "not reloaded, the running one stays: .*cert_file and key_file" "$T_DIR/agent.log"' 15 \
	"a mismatched key was not refused on reload"
[ "$(serial_served)" = "$second" ] || fail "after a refused reload the agent serves $(serial_served)"
[ "$(http_code --cacert "$T_DIR/ca.crt" --user alice:two "$URL/metrics")" = 200 ] || fail "not serving after a refused reload"
cp "$T_DIR/good.key" "$T_DIR/server.key"

# TLS off needs a restart: refused.
printf 'basic_auth_users:\n  alice: %s\n' "$(bcrypt_hash three)" >"$T_DIR/web.yml"
kill -HUP "$AGENT_PID"
wait_until 'grep -q "not reloaded.*needs a restart" "$T_DIR/agent.log"' 15 "turning TLS off was not refused"
[ "$(http_code --cacert "$T_DIR/ca.crt" --user alice:two "$URL/metrics")" = 200 ] || fail "not serving TLS after TLS off was refused"
ok "a bad web config on SIGHUP is logged and the running one stays"
stop_agent
