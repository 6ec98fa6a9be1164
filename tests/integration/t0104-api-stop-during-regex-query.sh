#!/usr/bin/env bash
# SIGTERM while a query matches a regular expression against 20,000 label
# values (about 15 s of work in a release build, its own timeout 120 s): the agent
# cancels it where it is - inside the store's index, not only between
# evaluation steps - and exits 0 within 5 s with its last flush done; the
# client gets 503 "query cancelled" or a closed connection, not a hang.
. "$(dirname "$0")/lib.sh"
need curl
need python3

preload_series 20000
start_agent --simulate 1 --interval 0.5 --store-max-label-values 20000 \
	--query-timeout 120
parse_ms=$(regex_parse_ms 1000)
(
	rc=0
	curl -sS --max-time 60 -o "$T_DIR/answer" -w '%{http_code}' \
		"$URL/api/v1/query" \
		--data-urlencode "query=count(heavy{inst=~\"$(slow_regex 1000)\"})" \
		>"$T_DIR/code" 2>"$T_DIR/curl.err" || rc=$?
	{ echo $rc >"$T_DIR/curl.rc"; } 2>/dev/null # gone if the test failed
) &
CLIENT=$!

# Stop once a query worker has been on it for three times what parsing
# the expression takes here, at least 2 s: past parsing, inside the matching (15 s here in a release build,
# minutes under a sanitizer).
hold_ms=$((parse_ms * 3 > 2000 ? parse_ms * 3 : 2000))
wait_for gpuwatch_agent_api_queries_in_flight "" 1 30
since=$(now_ms)
wait_until '[ "$(value gpuwatch_agent_api_queries_in_flight)" = 1 ] &&
	[ $(($(now_ms) - since)) -ge $hold_ms ]' 60 "the query did not stay in flight"
stop_agent
ok "agent exited 0 ${STOP_MS} ms after SIGTERM with a regex query running"
grep -q "stopping took more than" "$T_DIR/agent.log" &&
	fail "the stop needed its watchdog: $(grep "stopping took" "$T_DIR/agent.log")"

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

# What was collected up to the stop is on disk: the agent, restarted on
# the same directory, has the simulated GPU's samples from before it.
start_agent --simulate 1 --store-max-label-values 20000
curl -fsS "$URL/api/v1/query" \
	--data-urlencode 'query=count_over_time(gpuwatch_gpu_temperature_celsius{gpu="0"}[5m])' \
	>"$T_DIR/after.json" || fail "query after restart failed"
python3 - "$T_DIR/after.json" <<'PY' || fail "no history after the restart: $(cat "$T_DIR/after.json")"
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
sys.exit(0 if r and float(r[0]["value"][1]) >= 2 else 1)
PY
ok "the samples from before SIGTERM were flushed"
stop_agent
