#!/usr/bin/env bash
# SIGTERM while a long query runs: the agent cancels it and still exits 0
# within its 5 s grace (the query's own timeout, 120 s here, does not hold
# the stop up), and the client gets an answer or a closed connection, not
# a hang.  Needs the store behind the API (gw_http_set_queryable in agent.c).
. "$(dirname "$0")/lib.sh"
need curl
need python3

M=gpuwatch_gpu_clock_event_active # 18 series (9 reasons x 2 GPUs)
start_agent --simulate 2 --interval 0.1 --query-timeout 120

# At least 40 samples of every series in the store, so the query below has
# real work at each step.
filled() {
	curl -fsS "$URL/api/v1/query" \
		--data-urlencode "query=min(count_over_time($M[1m]))" >"$T_DIR/fill.json" &&
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
sys.exit(0 if r and float(r[0]["value"][1]) >= 40 else 1)' "$T_DIR/fill.json"
}
wait_until filled 60 "the store never held 40 samples of each $M series"
# The API's counters are on /metrics (the wait above made queries).
wait_until '[ "$(value gpuwatch_agent_api_requests_total endpoint=\"query\")" -ge 1 ] 2>/dev/null' \
	15 "gpuwatch_agent_api_requests_total{endpoint=\"query\"} never counted a query"

# A query_range at the API's limit of 11,000 steps (1 s over 3 h), each step
# sorting every sample of every series (the negative offset puts all of
# them in every window), 40 times over: tens of seconds of work.
term="quantile_over_time(0.5, $M[3h] offset -3h)"
q="$term"
for _ in $(seq 39); do
	q="$q + $term"
done
end=$(date +%s)
(
	rc=0
	curl -sS --max-time 60 -o "$T_DIR/answer" -w '%{http_code}' \
		"$URL/api/v1/query_range" --data-urlencode "query=$q" \
		-d start=$((end - 10800)) -d end=$end -d step=1 \
		>"$T_DIR/code" 2>"$T_DIR/curl.err" || rc=$?
	{ echo $rc >"$T_DIR/curl.rc"; } 2>/dev/null # gone if the test failed
) &
CLIENT=$!

# Stop once a query worker is evaluating it.
wait_for gpuwatch_agent_api_queries_in_flight "" 1 30
stop_agent
ok "agent exited 0 ${STOP_MS} ms after SIGTERM with a query running"

wait_until '! kill -0 $CLIENT 2>/dev/null' 10 \
	"the client still waits for an answer after the agent exited"
wait "$CLIENT" || true
rc="$(cat "$T_DIR/curl.rc")"
case "$rc" in
0)
	code="$(cat "$T_DIR/code")"
	[ "$code" = 503 ] || fail "answer: HTTP $code, expected 503: $(head -c 300 "$T_DIR/answer")"
	python3 - "$T_DIR/answer" <<'PY' || fail "answer: $(head -c 300 "$T_DIR/answer")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d == {"status": "error", "errorType": "unavailable",
                    "error": "query cancelled: the agent is stopping"} else 1)
PY
	ok "the client got 503: query cancelled"
	;;
52 | 56)
	ok "the client saw the connection close ($(cat "$T_DIR/curl.err"))"
	;;
*)
	fail "the client failed otherwise (curl exit $rc): $(cat "$T_DIR/curl.err")"
	;;
esac
