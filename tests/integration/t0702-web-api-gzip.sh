#!/usr/bin/env bash
# API answers and /metrics are gzip'd, as Prometheus sends them, for a
# client that asks (Accept-Encoding: gzip, curl --compressed): the same
# bytes once inflated, much fewer on the wire, with Content-Encoding: gzip
# and Vary: Accept-Encoding.  A client that does not ask (or refuses gzip
# with q=0) gets plain JSON, still with Vary.  Prometheus scrapes the
# agent (it asks for gzip) and reads the same series.
. "$(dirname "$0")/lib.sh"
need curl
need gzip

start_agent --simulate 8 --interval 0.5
# 6 s of history of 8 GPUs.
wait_until 'curl -fsS "$URL/api/v1/query" --data-urlencode "query=count(gpuwatch_gpu_temperature_celsius offset 6s)" | found "\"8\""' 30 \
	"no temperature of 8 GPUs stored 6 s back"
# The window ends where the store is complete: the answers read below
# must not grow between them.
wait_until 'end=$(($(date +%s) - 1)) && caught_up gpuwatch_gpu_temperature_celsius "$end" 8' 30 \
	"the store never caught up with the last second"
start=$((end - 4))
Q="query=gpuwatch_gpu_temperature_celsius&start=$start&end=$end&step=0.5"

# get NAME CURL_ARGS...: headers to NAME.h, body (as sent) to NAME.body
get() {
	local name="$1"
	shift
	curl -fsS -D "$T_DIR/$name.h" -o "$T_DIR/$name.body" "$@" ||
		fail "curl $* failed"
}
header() { # FILE NAME: the header's value
	sed -n "s/^$2: *\\([^[:space:]]*\\).*/\\1/Ip" "$1" | head -n1
}

get plain "$URL/api/v1/query_range?$Q"
get gz -H 'Accept-Encoding: gzip' "$URL/api/v1/query_range?$Q"
get curl --compressed "$URL/api/v1/query_range?$Q"
get q0 -H 'Accept-Encoding: gzip;q=0, identity' "$URL/api/v1/query_range?$Q"

[ -z "$(header "$T_DIR/plain.h" Content-Encoding)" ] ||
	fail "gzip sent to a client that did not ask: $(cat "$T_DIR/plain.h")"
[ -z "$(header "$T_DIR/q0.h" Content-Encoding)" ] ||
	fail "gzip sent to a client that refused it: $(cat "$T_DIR/q0.h")"
grep -q '^{"status":"success"' "$T_DIR/plain.body" || fail "plain answer is not JSON"
for f in plain gz curl q0; do
	[ "$(header "$T_DIR/$f.h" Vary)" = Accept-Encoding ] ||
		fail "$f: no Vary: Accept-Encoding: $(cat "$T_DIR/$f.h")"
done
[ "$(header "$T_DIR/gz.h" Content-Encoding)" = gzip ] ||
	fail "no gzip for Accept-Encoding: gzip: $(cat "$T_DIR/gz.h")"
gzip -dc <"$T_DIR/gz.body" >"$T_DIR/gz.json" || fail "the gzip'd answer does not inflate"
cmp -s "$T_DIR/gz.json" "$T_DIR/plain.body" || fail "the gzip'd answer inflates to other bytes"
cmp -s "$T_DIR/curl.body" "$T_DIR/plain.body" || fail "curl --compressed read other bytes"
plain=$(stat -c %s "$T_DIR/plain.body")
gz=$(stat -c %s "$T_DIR/gz.body")
[ $((gz * 3)) -lt "$plain" ] || fail "gzip'd $gz bytes of $plain"
ok "query_range: $plain bytes plain, $gz gzip'd, the same JSON"

# An error is JSON either way (small: not worth compressing).
code=$(curl -sS --compressed -o "$T_DIR/err.json" -w '%{http_code}' "$URL/api/v1/query?query=sum(")
[ "$code" = 400 ] && grep -q '"errorType":"bad_data"' "$T_DIR/err.json" ||
	fail "a bad query with --compressed: $code $(cat "$T_DIR/err.json")"

# /metrics: the same families either way.
get mplain "$URL/metrics"
get mgz -H 'Accept-Encoding: gzip' "$URL/metrics"
[ -z "$(header "$T_DIR/mplain.h" Content-Encoding)" ] || fail "/metrics gzip'd unasked"
[ "$(header "$T_DIR/mgz.h" Content-Encoding)" = gzip ] || fail "/metrics not gzip'd: $(cat "$T_DIR/mgz.h")"
[ "$(header "$T_DIR/mgz.h" Vary)" = Accept-Encoding ] || fail "/metrics: no Vary"
gzip -dc <"$T_DIR/mgz.body" | grep '^# TYPE' >"$T_DIR/mgz.types" || fail "/metrics gzip'd does not inflate"
grep '^# TYPE' "$T_DIR/mplain.body" >"$T_DIR/mplain.types"
cmp -s "$T_DIR/mgz.types" "$T_DIR/mplain.types" || fail "/metrics gzip'd holds other families"
ok "/metrics: $(stat -c %s "$T_DIR/mplain.body") bytes plain, $(stat -c %s "$T_DIR/mgz.body") gzip'd"

# A real Prometheus asks for gzip when it scrapes: it reads the GPUs.
if command -v prometheus >/dev/null && command -v python3 >/dev/null; then
	PROM_PORT="$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
	cat >"$T_DIR/prom.yml" <<YML
global: { scrape_interval: 1s }
scrape_configs:
  - job_name: node
    static_configs: [ { targets: ['${URL#http://}'] } ]
YML
	prometheus --config.file="$T_DIR/prom.yml" --storage.tsdb.path="$T_DIR/prom" \
		--web.listen-address="127.0.0.1:$PROM_PORT" >"$T_DIR/prom.log" 2>&1 &
	PROM_PID=$!
	trap 'rc=$?; kill -KILL "$PROM_PID" 2>/dev/null; (exit $rc); cleanup' EXIT
	wait_until 'curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/query?query=count(gpuwatch_gpu_temperature_celsius)" 2>/dev/null | found "\"8\""' 60 \
		"prometheus read no 8 GPUs from the gzip'd scrape: $(tail -n 5 "$T_DIR/prom.log")"
	ok "a real Prometheus scrapes the gzip'd /metrics"
fi
stop_agent
ok "API answers and /metrics are gzip'd for those who ask, and only for them"
