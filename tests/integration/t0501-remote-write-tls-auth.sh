#!/usr/bin/env bash
# remote_write over TLS with a test CA made here with openssl, and with
# credentials: a receiver (Python's http.server behind ssl, client
# certificates required) records every request.  What a user configures
# in tls_config and basic_auth / authorization must hold:
#   - ca_file + cert_file/key_file + server_name: accepted, the receiver
#     saw our client certificate and the credentials;
#   - without server_name the certificate (for receiver.test, not
#     127.0.0.1) is refused: nothing reaches the receiver, counted as
#     connection failures, retried until stopped;
#   - insecure_skip_verify: accepted without the CA;
#   - no client certificate: the receiver refuses the handshake.
. "$(dirname "$0")/lib.sh"
need openssl
need python3
need curl
RW_SEND="${RW_SEND:-$(dirname "$GPUWATCH")/tests/rw_send}"
[ -x "$RW_SEND" ] || skip "the rw_send driver is not built ($RW_SEND)"

RX_PID=""
trap 'rc=$?; [ -z "$RX_PID" ] || kill -KILL "$RX_PID" 2>/dev/null || true; (exit $rc); cleanup' EXIT

# The test CA, the receiver's certificate (receiver.test only) and ours.
cd "$T_DIR"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
	-subj "/CN=gpuwatch test CA" >openssl.log 2>&1 || fail "openssl CA: $(cat openssl.log)"
for who in receiver agent; do
	openssl req -newkey rsa:2048 -nodes -keyout "$who.key" -out "$who.csr" \
		-subj "/CN=$who.test" >>openssl.log 2>&1 || fail "openssl: $(cat openssl.log)"
	printf 'subjectAltName=DNS:%s.test\n' "$who" >"$who.ext"
	openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
		-out "$who.pem" -days 2 -extfile "$who.ext" >>openssl.log 2>&1 ||
		fail "openssl sign: $(cat openssl.log)"
done
cd - >/dev/null

PORT="$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"$T_DIR/rx.py" <<'PY'
import http.server, json, ssl, sys
d, port = sys.argv[1], int(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        cert = self.connection.getpeercert() or {}
        cn = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]
        with open(d + "/requests.jsonl", "a") as f:
            f.write(json.dumps({"auth": self.headers.get("Authorization"),
                                "host": self.headers.get("Host"),
                                "ce": self.headers.get("Content-Encoding"),
                                "len": n, "cn": cn}) + "\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/receiver.pem", d + "/receiver.key")
ctx.load_verify_locations(d + "/ca.pem")
ctx.verify_mode = ssl.CERT_REQUIRED
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
PY
python3 "$T_DIR/rx.py" "$T_DIR" "$PORT" >"$T_DIR/rx.log" 2>&1 &
RX_PID=$!
wait_until 'grep -q ready "$T_DIR/rx.log"' 20 "the TLS receiver did not start: $(cat "$T_DIR/rx.log")"
URL="https://127.0.0.1:$PORT/api/v1/write"
printf 's3cret\n' >"$T_DIR/password"

# send NAME BLOCK [STOP_AFTER_S]: one endpoint, 2 series x 10 samples.
send() {
	printf 'remote_write:\n  - url: %s\n    name: %s\n    queue_config: {min_backoff: 10ms, max_backoff: 50ms}\n%s\n' \
		"$URL" "$1" "$2" >"$T_DIR/$1.yaml"
	"$RW_SEND" "$T_DIR/$1.yaml" "$T_DIR/$1.expect" 2 10 1700000000000 1000 ${3:-} \
		>"$T_DIR/$1.out" 2>"$T_DIR/$1.err"
}
requests() {
	[ -f "$T_DIR/requests.jsonl" ] && wc -l <"$T_DIR/requests.jsonl" || echo 0
}

send verified "    tls_config:
      ca_file: $T_DIR/ca.pem
      cert_file: $T_DIR/agent.pem
      key_file: $T_DIR/agent.key
      server_name: receiver.test
    basic_auth:
      username: agent
      password_file: $T_DIR/password" ||
	fail "verified TLS: $(cat "$T_DIR/verified.out" "$T_DIR/verified.err")"
grep -q '^verified sent=20 .* http_204=1 ok$' "$T_DIR/verified.out" ||
	fail "verified: $(cat "$T_DIR/verified.out")"
python3 - "$T_DIR/requests.jsonl" "$PORT" <<'PY' || fail "the receiver saw: $(cat "$T_DIR/requests.jsonl")"
import base64, json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1, r
assert r[0]["cn"] == ["agent.test"], r
assert r[0]["auth"] == "Basic " + base64.b64encode(b"agent:s3cret").decode(), r
assert r[0]["ce"] == "snappy", r
assert r[0]["host"] == "127.0.0.1:" + sys.argv[2], r
PY
ok "TLS with the test CA, a client certificate, server_name and basic auth"

n="$(requests)"
if send unverified "    tls_config:
      ca_file: $T_DIR/ca.pem
      cert_file: $T_DIR/agent.pem
      key_file: $T_DIR/agent.key" 2; then
	fail "a certificate for another name was accepted: $(cat "$T_DIR/unverified.out")"
fi
grep -q '^unverified sent=0 failed=0 .* connection=[1-9][0-9]* .*FAILED$' "$T_DIR/unverified.out" ||
	fail "unverified: $(cat "$T_DIR/unverified.out" "$T_DIR/unverified.err")"
[ "$(requests)" = "$n" ] || fail "a request got through an unverified connection"
ok "a certificate that does not name the host is refused: $(cat "$T_DIR/unverified.out")"

send insecure "    tls_config:
      insecure_skip_verify: true
      cert_file: $T_DIR/agent.pem
      key_file: $T_DIR/agent.key
    authorization:
      credentials: tok-1" ||
	fail "insecure_skip_verify: $(cat "$T_DIR/insecure.out" "$T_DIR/insecure.err")"
tail -n 1 "$T_DIR/requests.jsonl" | found '"auth": "Bearer tok-1"' ||
	fail "bearer: $(tail -n 1 "$T_DIR/requests.jsonl")"
ok "insecure_skip_verify, bearer credentials"

n="$(requests)"
if send nocert "    tls_config:
      ca_file: $T_DIR/ca.pem
      server_name: receiver.test" 2; then
	fail "the receiver took a connection without a client certificate"
fi
grep -q '^nocert sent=0 .*FAILED$' "$T_DIR/nocert.out" || fail "nocert: $(cat "$T_DIR/nocert.out")"
[ "$(requests)" = "$n" ] || fail "a request got through without a client certificate"
ok "no client certificate: refused, counted, retried until stopped"
