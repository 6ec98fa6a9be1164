#!/usr/bin/env bash
# A heavy query does not stop the recording: while a query with a regular
# expression over 20,000 label values runs (until --query-timeout ends it
# with Prometheus' timeout error), a simulated GPU's raw history gets every
# sample - no gap in the spacing the agent's own API returns - and
# gpuwatch_agent_dropped_samples_total{reason} says what was not stored.
. "$(dirname "$0")/lib.sh"
need curl
need python3

preload_series 20000
start_agent --simulate 1 --interval 1 --store-max-label-values 20000 \
	--query-timeout 3
M='gpuwatch_gpu_temperature_celsius{gpu="0"}'

# A few seconds of history before the query.
raw() {
	curl -fsS "$URL/api/v1/query" --data-urlencode "query=$M[$1s]" \
		-d time="$(date +%s.%3N)" >"$T_DIR/raw.json"
}
count_raw() {
	raw 60 && python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
sys.exit(0 if r and len(r[0]["values"]) >= int(sys.argv[2]) else 1)' \
		"$T_DIR/raw.json" "$1"
}
wait_until 'count_raw 3' 30 "fewer than 3 samples of $M stored"

# Matching 20,000 values against 1,000 alternatives takes far longer than
# the 3 s timeout (seconds per few thousand values); the answer must not
# wait for it.
# Parsing the expression comes on top of the timeout (seconds under a
# sanitizer on a busy machine; lib.sh's regex_parse_ms).
limit=$((10 + 2 * $(regex_parse_ms 1000) / 1000))
q_start=$(date +%s.%3N)
code=$(curl -sS --max-time "$limit" -o "$T_DIR/answer" -w '%{http_code}' \
	"$URL/api/v1/query" \
	--data-urlencode "query=count(heavy{inst=~\"$(slow_regex 1000)\"})") ||
	fail "the query ran past --query-timeout 3: no answer within $limit s"
q_end=$(date +%s.%3N)
[ "$code" = 503 ] || fail "answer: HTTP $code, expected 503: $(head -c 300 "$T_DIR/answer")"
python3 - "$T_DIR/answer" <<'PY' || fail "answer: $(head -c 300 "$T_DIR/answer")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["status"] == "error" and d["errorType"] == "timeout" and
         d["error"].startswith("query timed out in ") else 1)
PY
ok "the query stopped at --query-timeout with errorType timeout"

# Every sample from before the query to two past its end, 1 s apart: a
# sample missed (ingest blocked) shows as a gap of 2 s or more.
past_end() {
	raw 120 && python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["data"]["result"][0]["values"]
sys.exit(0 if float(v[-1][0]) >= float(sys.argv[2]) + 2 else 1)' \
		"$T_DIR/raw.json" "$q_end"
}
wait_until past_end 30 "no sample of $M stored 2 s after the query ended"
python3 - "$T_DIR/raw.json" "$q_start" "$q_end" <<'PY' || fail "$M has a gap while the query ran"
import json, sys
v = json.load(open(sys.argv[1]))["data"]["result"][0]["values"]
a, b = float(sys.argv[2]), float(sys.argv[3])
t = [float(x[0]) for x in v if a - 3 <= float(x[0]) <= b + 2]
assert t[0] <= a and t[-1] >= b, (t[0], t[-1], a, b)
gaps = [(t[i - 1], round(t[i] - t[i - 1], 3)) for i in range(1, len(t))
        if t[i] - t[i - 1] > 1.75]
if gaps:
    print("gaps (start, seconds):", gaps, file=sys.stderr)
    sys.exit(1)
PY
ok "$M: a sample every second while the query ran ($q_start..$q_end)"

scrape >"$T_DIR/scrape.txt"
for reason in snapshot_full superseded store_refused; do
	grep -q "^gpuwatch_agent_dropped_samples_total{reason=\"$reason\"} " \
		"$T_DIR/scrape.txt" ||
		fail "no gpuwatch_agent_dropped_samples_total{reason=\"$reason\"}"
done
ok "gpuwatch_agent_dropped_samples_total is exposed by reason"
stop_agent
