#!/usr/bin/env bash
# bench/tls.sh [BUILD_DIR]: what the secured endpoint costs a scrape.
# One agent (--simulate 8) per mode - plain HTTP, TLS, TLS + basic auth
# (bcrypt cost 10) - and for each the /metrics latency with curl on
# loopback over SCRAPES requests (default 200): a new connection each
# time (a TLS handshake each; Prometheus keeps its connection, so this is
# the worst case) and one kept-alive connection; then, with basic auth,
# the first request (bcrypt) against the cached ones.
# Prints medians and 95th percentiles in milliseconds.
set -euo pipefail
BUILD="${1:-build}"
GPUWATCH="$(realpath "$BUILD/gpuwatch")"
SCRAPES="${SCRAPES:-200}"
[ -x "$GPUWATCH" ] || { echo "no $GPUWATCH (build first)" >&2; exit 1; }
D="$(mktemp -d)"
PID=""
trap '[ -z "$PID" ] || kill "$PID" 2>/dev/null || true; rm -rf "$D"' EXIT
cd "$D"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
	-subj "/CN=bench CA" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
	-subj /CN=localhost >/dev/null 2>&1
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
	-out server.crt -days 2 -extfile server.ext >/dev/null 2>&1
HASH="$(python3 -W ignore -c 'import crypt
print(crypt.crypt("bench", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))')"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n' >tls.yml
{ cat tls.yml; printf 'basic_auth_users:\n  bench: %s\n' "$HASH"; } >auth.yml

# stats FILE: "median p95" of the seconds in FILE, in ms.
stats() {
	sort -g "$1" | awk '{ v[NR] = $1 * 1000 } END {
		printf "median %.2f ms  p95 %.2f ms", v[int((NR + 1) / 2)], v[int(NR * 0.95)] }'
}
start() {
	: >agent.log
	"$GPUWATCH" agent --simulate 8 --listen 127.0.0.1:0 --data-dir "$D/data-$1" \
		--statsd-listen 127.0.0.1:0 --no-ebpf --no-cupti "${@:2}" 2>agent.log &
	PID=$!
	for _ in $(seq 1 200); do
		URL="$(sed -n 's/.* listening on \(https\?:[^ ]*\) .*/\1/p' agent.log | head -n1)"
		[ -n "$URL" ] && break
		sleep 0.05
	done
	URL="${URL/127.0.0.1/localhost}"
	sleep 2 # let the simulated GPUs fill /metrics
}
run() {
	local mode="$1"
	shift
	: >new.txt
	for _ in $(seq 1 "$SCRAPES"); do
		curl -fsS -o /dev/null -w '%{time_total}\n' "$@" "$URL/metrics" >>new.txt
	done
	local urls=()
	for _ in $(seq 1 "$SCRAPES"); do urls+=("$URL/metrics" -o /dev/null); done
	curl -fsS -w '%{time_total}\n' "$@" "${urls[@]}" >keep.txt
	printf '%-22s new connection: %s | kept alive: %s\n' "$mode" "$(stats new.txt)" "$(stats keep.txt)"
}

start plain
run "plain HTTP"
kill "$PID"; wait "$PID" || true
start tls --web.config.file "$D/tls.yml"
run "TLS" --cacert ca.crt
kill "$PID"; wait "$PID" || true
start auth --web.config.file "$D/auth.yml"
first="$(curl -fsS -o /dev/null -w '%{time_total}' --cacert ca.crt --user bench:bench "$URL/healthz")"
run "TLS + basic auth" --cacert ca.crt --user bench:bench
printf 'basic auth, first request (bcrypt cost 10): %.2f ms; then cached (above)\n' \
	"$(awk -v t="$first" 'BEGIN { print t * 1000 }')"
: >wrong.txt
t0="$(date +%s%N)"
for _ in $(seq 1 30); do
	curl -sS -o /dev/null -w '%{http_code} %{time_total}\n' --cacert ca.crt --user bench:wrong \
		"$URL/healthz" >>wrong.txt
done
t1="$(date +%s%N)"
printf 'a flood of 30 wrong passwords in %.1f s: %s answered 401 (bcrypt each), %s 429 (no bcrypt)\n' \
	"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')" \
	"$(grep -c '^401' wrong.txt)" "$(grep -c '^429' wrong.txt)"
first="$(curl -fsS -o /dev/null -w '%{time_total}' --cacert ca.crt --user bench:bench "$URL/metrics")"
printf 'a scrape with the remembered password right after: %.2f ms\n' \
	"$(awk -v t="$first" 'BEGIN { print t * 1000 }')"
kill "$PID"; wait "$PID" || true
PID=""
