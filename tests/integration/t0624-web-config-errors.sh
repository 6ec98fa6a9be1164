#!/usr/bin/env bash
# A web configuration file the agent cannot honour stops it at start with
# one line naming the file, the line and the key - as Prometheus and
# node_exporter refuse it - and the agent serves nothing (exit 2, as any
# bad configuration; --check-config says the same).  The examples
# of docs/security.md (node_exporter's own) are accepted as they are.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls-lib.sh"
need python3
make_certs
HASH="$(bcrypt_hash pw)"

# refused 'YAML' 'EXPECTED MESSAGE' [STATUS]: the agent must exit STATUS
# (default 2, a bad configuration) saying it.
refused() {
	printf '%s\n' "$1" >"$T_DIR/web.yml"
	rc=0
	timeout 20 "$GPUWATCH" agent --simulate 1 --listen 127.0.0.1:0 --data-dir "$T_DIR/data" \
		--statsd-listen 127.0.0.1:0 --web.config.file "$T_DIR/web.yml" >"$T_DIR/out" 2>&1 || rc=$?
	[ $rc -eq "${3:-2}" ] || fail "exit $rc, not ${3:-2}, for: $1 ($(tail -n 3 "$T_DIR/out"))"
	grep -qF -- "$2" "$T_DIR/out" || fail "no '$2' in: $(grep -i web "$T_DIR/out" | head -n 3)"
	! grep -q 'gpuwatch .* listening on http' "$T_DIR/out" || fail "the agent served with a bad web config: $1"
}

refused "$(printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth: RequireAnyClientCert')" \
	"web.yml:4: field client_auth not found in type web.TLSConfig"
refused "$(printf 'basic_auth_users:\n  alice: secret')" \
	"web.yml:2: basic_auth_users: alice: not a bcrypt hash"
refused "$(printf 'tls_server_config:\n  cert_file: server.crt')" \
	"tls_server_config: missing key_file"
refused "$(printf 'tls_server_config:\n  cert_file: ""\n  key_file: server.key')" \
	"tls_server_config: missing cert_file"
refused "$(printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerify')" \
	"web.yml:4: client_auth_type: invalid ClientAuth: RequireAndVerify"
refused "$(printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert')" \
	"needs client_ca_file"
refused "$(printf 'tls_server_config:\n  cert_file: nonexistent.crt\n  key_file: server.key')" \
	"web.yml:2: cert_file: cannot read $T_DIR/nonexistent.crt"
refused "$(printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS14')" \
	"web.yml:4: min_version: unknown TLS version: TLS14"
refused "$(printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]')" \
	"RC4 is not offered"
refused "$(printf 'http_server_config:\n  headers:\n    Server: gpuwatch')" \
	"web.yml:3: HTTP header \"Server\" can not be configured"
refused "$(printf 'basic_auth_users:\n  alice: %s\nbasic_auth_users:\n  bob: %s' "$HASH" "$HASH")" \
	"web.yml:3: web config: key 'basic_auth_users' is given twice (first on line 1)"
refused "$(printf 'tls_server_config: [\n')" "web.yml:"
refused "$(printf 'tls_server_config:\n  cert_file: server.key\n  key_file: server.crt')" \
	"web.yml: tls_server_config: cert_file and key_file:"
refused "$(printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: server.key')" \
	"client_ca_file:"
ok "bad web configs refused at start with the file, line and key"

# docs/security.md's examples, with our certificates: accepted.
sed -n '/^```yaml web-config/,/^```$/p' "$TEST_SRC/../docs/security.md" >"$T_DIR/examples"
n=0
while IFS= read -r line; do
	case "$line" in
	'```yaml web-config'*) : >"$T_DIR/ex.yml" ;;
	'```')
		n=$((n + 1))
		"$GPUWATCH" agent --simulate 1 --check-config --web.config.file "$T_DIR/ex.yml" \
			>"$T_DIR/check" 2>&1 || fail "docs/security.md example $n: $(cat "$T_DIR/check")"
		;;
	*) printf '%s\n' "$line" >>"$T_DIR/ex.yml" ;;
	esac
done <"$T_DIR/examples"
[ $n -ge 2 ] || fail "docs/security.md has $n web-config examples"
ok "docs/security.md's $n examples pass --check-config"
