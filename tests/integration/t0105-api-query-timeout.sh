#!/usr/bin/env bash
# --query-timeout holds wherever a query spends its time, here matching a
# regular expression against 20,000 label values: instant and range
# queries, series and label values, through the API and `gpuwatch query`,
# end at the timeout (or at
# a request's shorter timeout=) with Prometheus' answer, HTTP 503 and
# errorType "timeout", and the agent goes on answering.
. "$(dirname "$0")/lib.sh"
need curl
need python3

preload_series 20000
start_agent --simulate 1 --store-max-label-values 20000 --query-timeout 2
Q="count(heavy{inst=~\"$(slow_regex 1000)\"})"

# is_timeout FILE: Prometheus' timeout error envelope.
is_timeout() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["status"] == "error" and d["errorType"] == "timeout" and
         d["error"].startswith("query timed out in ") else 1)
PY
}

# The timeout counts from the request; parsing the expression (RE2
# compiles it, which no timeout interrupts) comes on top: 0.1 s in a
# release build, seconds under a sanitizer on a busy machine.
parse_ms=$(regex_parse_ms 1000)
limit=$((8 + 2 * parse_ms / 1000))

# ask NAME CURL-ARGS...: the answer must come within $limit s (the work
# takes far longer), as HTTP 503 with the timeout error.
ask() {
	local name="$1" code
	shift
	code=$(curl -sS --max-time "$limit" -o "$T_DIR/$name" -w '%{http_code}' "$@") ||
		fail "$name: no answer within $limit s (the timeout is 2 s; parsing took $parse_ms ms)"
	[ "$code" = 503 ] || fail "$name: HTTP $code, expected 503: $(head -c 300 "$T_DIR/$name")"
	is_timeout "$T_DIR/$name" || fail "$name: $(head -c 300 "$T_DIR/$name")"
	ok "$name: 503, errorType timeout"
}

ask instant "$URL/api/v1/query" --data-urlencode "query=$Q"
end=$(date +%s)
ask range "$URL/api/v1/query_range" --data-urlencode "query=$Q" \
	-d start=$((end - 600)) -d end="$end" -d step=15
# A request's own timeout= shortens the agent's.
ask short "$URL/api/v1/query" --data-urlencode "query=$Q" -d timeout=500ms
ask matrix "$URL/api/v1/query" \
	--data-urlencode "query=heavy{inst=~\"$(slow_regex 1000)\"}[10m]"
# The series and label endpoints match the same way, under the same limit.
ask series "$URL/api/v1/series" \
	--data-urlencode "match[]=heavy{inst=~\"$(slow_regex 1000)\"}"
ask label-values "$URL/api/v1/label/inst/values" \
	--data-urlencode "match[]=heavy{inst=~\"$(slow_regex 1000)\"}"

# The command-line client reports it as an error.
rc=0
timeout "$limit" "$GPUWATCH" query --url "$URL" "$Q" >"$T_DIR/cli.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "gpuwatch query: exit $rc: $(cat "$T_DIR/cli.out")"
grep -q "timed out" "$T_DIR/cli.out" || fail "gpuwatch query: $(cat "$T_DIR/cli.out")"
ok "gpuwatch query fails with the timeout"

# Still answering (a query of one series: one over the 20,000 could itself
# take the 2 s under a sanitizer on a busy machine).
curl -fsS "$URL/api/v1/query" \
	--data-urlencode 'query=gpuwatch_gpu_temperature_celsius{gpu="0"}' \
	>"$T_DIR/after" 2>&1 ||
	fail "the API stopped answering after the timeouts: $(head -c 300 "$T_DIR/after")"
stop_agent
