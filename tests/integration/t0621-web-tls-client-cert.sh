#!/usr/bin/env bash
# client_auth_type as Go's crypto/tls enforces it, in the handshake:
#   RequireAndVerifyClientCert: a certificate of the client CA is
#     served; none, or one of another CA, is refused;
#   VerifyClientCertIfGiven: none is served, another CA's is refused;
#   RequireAnyClientCert: any certificate is served, none is refused.
# And gpuwatch query --cert/--key reaches the first.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls-lib.sh"
need curl
need python3
make_certs

# web MODE: the agent restarted with that client_auth_type.
web() {
	[ -z "$AGENT_PID" ] || stop_agent
	cat >"$T_DIR/web.yml" <<YML
tls_server_config:
  cert_file: $T_DIR/server.crt
  key_file: $T_DIR/server.key
  client_auth_type: $1
  client_ca_file: $T_DIR/ca.crt
YML
	if [ "$1" = RequireAnyClientCert ]; then
		sed -i '/client_ca_file/d' "$T_DIR/web.yml"
	fi
	CURL_OPTS=(--cacert "$T_DIR/ca.crt" --cert "$T_DIR/client.crt" --key "$T_DIR/client.key")
	rm -rf "$T_DIR/data"
	start_agent --simulate 1 --web.config.file "$T_DIR/web.yml"
	URL="${URL/127.0.0.1/localhost}"
	grep -q "client certificates: $1" "$T_DIR/agent.log" || fail "the agent did not log client_auth_type $1"
}
good() { http_code --cacert "$T_DIR/ca.crt" --cert "$T_DIR/client.crt" --key "$T_DIR/client.key" "$URL/metrics"; }
none() { http_code --cacert "$T_DIR/ca.crt" "$URL/metrics"; }
rogue() { http_code --cacert "$T_DIR/ca.crt" --cert "$T_DIR/rogue.crt" --key "$T_DIR/rogue.key" "$URL/metrics"; }

web RequireAndVerifyClientCert
[ "$(good)" = 200 ] || fail "RequireAndVerifyClientCert: the client CA's certificate got $(good)"
[ "$(none)" = 000 ] || fail "RequireAndVerifyClientCert: no certificate got $(none)"
[ "$(rogue)" = 000 ] || fail "RequireAndVerifyClientCert: another CA's certificate got $(rogue)"
out="$("$GPUWATCH" query --url "$URL" --ca-file "$T_DIR/ca.crt" --cert "$T_DIR/client.crt" \
	--key "$T_DIR/client.key" 'count(gpuwatch_gpu_up)')" || fail "gpuwatch query --cert failed: $out"
case "$out" in *1) ;; *) fail "gpuwatch query --cert answered '$out'" ;; esac
rc=0
"$GPUWATCH" query --url "$URL" --ca-file "$T_DIR/ca.crt" up >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "gpuwatch query without a client certificate exited $rc"
wait_for gpuwatch_agent_http_auth_failures_total 'reason="client_cert"' 1 15
ok "RequireAndVerifyClientCert: the CA's certificate 200, none and another CA's refused (counted); gpuwatch query --cert/--key"

web VerifyClientCertIfGiven
[ "$(good)" = 200 ] || fail "VerifyClientCertIfGiven: the client CA's certificate got $(good)"
[ "$(none)" = 200 ] || fail "VerifyClientCertIfGiven: no certificate got $(none)"
[ "$(rogue)" = 000 ] || fail "VerifyClientCertIfGiven: another CA's certificate got $(rogue)"
ok "VerifyClientCertIfGiven: none 200, the CA's 200, another CA's refused"

web RequireAnyClientCert
[ "$(rogue)" = 200 ] || fail "RequireAnyClientCert: any certificate should do, got $(rogue)"
[ "$(none)" = 000 ] || fail "RequireAnyClientCert: no certificate got $(none)"
ok "RequireAnyClientCert: any certificate 200, none refused"

stop_agent
