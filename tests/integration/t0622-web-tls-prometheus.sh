#!/usr/bin/env bash
# A real Prometheus (Debian's) scrapes the agent over TLS with basic auth,
# and runs itself behind the very same web configuration file, since the
# format is exporter-toolkit's:
#   - job "agent" (the CA, the right password): up == 1, and the agent's
#     series arrive;
#   - job "wrong" (a wrong password): up == 0, and the agent counts the
#     failures;
# all read from Prometheus' API over TLS with basic auth, polling with a
# deadline.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls-lib.sh"
need curl
need python3
PROM_BIN="$(command -v prometheus || true)"
[ -n "$PROM_BIN" ] || skip "prometheus is not installed"
PROM_PID=""
trap 'rc=$?; [ -z "$PROM_PID" ] || kill -KILL "$PROM_PID" 2>/dev/null || true; (exit $rc); cleanup' EXIT

make_certs
HASH="$(bcrypt_hash 'scrape-pass')"
# Relative paths: both read them from the file's own directory.
cat >"$T_DIR/web.yml" <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  min_version: TLS12
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
basic_auth_users:
  prometheus: $HASH
YML
printf 'scrape-pass\n' >"$T_DIR/password"
CURL_OPTS=(--cacert "$T_DIR/ca.crt" --user prometheus:scrape-pass)
start_agent --simulate 1 --web.config.file "$T_DIR/web.yml"
AGENT_HOSTPORT="${URL#https://}"

PROM_PORT="$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
PROM="https://127.0.0.1:$PROM_PORT"
cat >"$T_DIR/prom.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: agent
    scheme: https
    tls_config:
      ca_file: $T_DIR/ca.crt
    basic_auth:
      username: prometheus
      password_file: $T_DIR/password
    static_configs:
      - targets: ['$AGENT_HOSTPORT']
  - job_name: wrong
    scheme: https
    tls_config:
      ca_file: $T_DIR/ca.crt
    basic_auth:
      username: prometheus
      password: not-the-password
    static_configs:
      - targets: ['$AGENT_HOSTPORT']
YML
"$PROM_BIN" --config.file="$T_DIR/prom.yml" --storage.tsdb.path="$T_DIR/prom" \
	--web.config.file="$T_DIR/web.yml" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$T_DIR/prom.log" 2>&1 &
PROM_PID=$!
deadline=$(($(now_ms) + 30000))
until curl -fsS "${CURL_OPTS[@]}" "$PROM/-/ready" >/dev/null 2>&1; do
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -n 20 "$T_DIR/prom.log")"
	[ "$(now_ms)" -lt $deadline ] || fail "prometheus not ready within 30 s: $(tail -n 5 "$T_DIR/prom.log")"
	sleep 0.1
done
[ "$(http_code --cacert "$T_DIR/ca.crt" "$PROM/-/ready")" = 401 ] ||
	fail "Prometheus behind the same web config answered without a password"
ok "Prometheus runs behind the agent's own web config file"

# prom_value QUERY: the first sample's value from Prometheus' API.
prom_value() {
	curl -fsS "${CURL_OPTS[@]}" --data-urlencode "query=$1" "$PROM/api/v1/query" 2>/dev/null |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null || true
}
wait_until '[ "$(prom_value "up{job=\"agent\"}")" = 1 ]' 30 \
	"up{job=\"agent\"} is '$(prom_value 'up{job="agent"}')', not 1: $(curl -sS "${CURL_OPTS[@]}" "$PROM/api/v1/targets" | head -c 600)"
wait_until '[ "$(prom_value "count(gpuwatch_gpu_up{job=\"agent\"})")" = 1 ]' 30 \
	"the agent's series did not reach Prometheus"
ok "Prometheus scrapes the agent over TLS with basic auth: up == 1"
wait_until '[ "$(prom_value "up{job=\"wrong\"}")" = 0 ]' 30 "up{job=\"wrong\"} is not 0"
wait_until '[ "$(value gpuwatch_agent_http_auth_failures_total reason=\"wrong\" || echo 0)" -ge 1 ] 2>/dev/null' 15 \
	"the wrong password's scrapes are not counted"
ok "a wrong password: up == 0, counted by the agent"

kill -TERM "$PROM_PID"
wait "$PROM_PID" 2>/dev/null || true
PROM_PID=""
stop_agent
