#!/usr/bin/env bash
# min_version, max_version and cipher_suites (Go's names) hold on the
# wire, checked with curl (OpenSSL):
#   - min_version TLS13: a TLS 1.2 client is refused, TLS 1.3 served;
#   - max_version TLS12 with one suite named: that suite is served,
#     another TLS 1.2 suite and TLS 1.3 are refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls-lib.sh"
need curl
need python3
make_certs

web() {
	[ -z "$AGENT_PID" ] || stop_agent
	printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n%s\n' "$1" >"$T_DIR/web.yml"
	rm -rf "$T_DIR/data"
	CURL_OPTS=(--cacert "$T_DIR/ca.crt")
	start_agent --simulate 1 --web.config.file "$T_DIR/web.yml"
	URL="${URL/127.0.0.1/localhost}"
}
# proto ARGS...: "TLSv1.x / SUITE" as curl negotiated it, or "refused".
proto() {
	local v
	v="$(curl -sS -v -o /dev/null --cacert "$T_DIR/ca.crt" "$@" "$URL/healthz" 2>&1 |
		sed -n 's/^\* SSL connection using \(.*\)$/\1/p')"
	echo "${v:-refused}"
}

web '  min_version: TLS13'
[ "$(proto --tls-max 1.2)" = refused ] || fail "min_version TLS13 served TLS 1.2: $(proto --tls-max 1.2)"
case "$(proto)" in TLSv1.3*) ;; *) fail "min_version TLS13: $(proto)" ;; esac
ok "min_version TLS13: TLS 1.2 refused, 1.3 served"

web "$(printf '  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]')"
case "$(proto)" in "TLSv1.2 / ECDHE-RSA-AES256-GCM-SHA384") ;; *) fail "the named suite: $(proto)" ;; esac
[ "$(proto --tls-max 1.2 --ciphers ECDHE-RSA-AES128-GCM-SHA256)" = refused ] ||
	fail "a suite not named was served: $(proto --tls-max 1.2 --ciphers ECDHE-RSA-AES128-GCM-SHA256)"
[ "$(proto --tlsv1.3)" = refused ] || fail "max_version TLS12 served $(proto --tlsv1.3)"
ok "cipher_suites and max_version hold: only the named suite, no TLS 1.3"
stop_agent
