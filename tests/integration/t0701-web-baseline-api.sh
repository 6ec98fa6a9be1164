#!/usr/bin/env bash
# GET /api/v1/baseline replays the agent's own detector over the raw
# history: GPU 0's cooling fails 10 s after start; before the failure every
# value lies inside the band the endpoint returns, the failure falls
# outside it and opens an episode, and each step's score is the highest
# score the agent itself stored in that step (the same code, the same
# defaults).  Bad requests are 400 with a message that says what is wrong.
. "$(dirname "$0")/lib.sh"
need curl
need python3

M='gpuwatch_gpu_temperature_celsius{gpu="0"}'
S='gpuwatch_gpu_temperature_celsius:anomaly_score{gpu="0"}'

start_agent --simulate 1 --interval 0.1 --fault thermal-runaway:0:10
t0=$(date +%s)

baseline() { # END [STEP]
	curl -sS -G "$URL/api/v1/baseline" --data-urlencode "query=$M" \
		--data-urlencode "start=$((t0 - 5))" --data-urlencode "end=$1" \
		--data-urlencode "step=${2:-0.2}"
}
episodes() {
	baseline "$(date +%s)" 1 | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(len(r["episodes"]) for r in d["data"]["result"]))'
}

wait_until '[ "$(episodes)" -gt 0 ] 2>/dev/null' 60 \
	"the baseline endpoint reported no anomaly episode for GPU 0"
# A few seconds of the failure, then the answer and the agent's scores.
sleep_until=$(($(date +%s) + 3))
wait_until '[ "$(date +%s)" -ge $sleep_until ]' 10 "clock"
end=$(date +%s)
baseline "$end" >"$T_DIR/baseline.json"
curl -fsS -G "$URL/api/v1/query" --data-urlencode "query=$S[1h]" \
	--data-urlencode "time=$end" >"$T_DIR/scores.json"

python3 - "$T_DIR" "$t0" <<'PY' || fail "the baseline band is wrong"
import json, sys
d, t0 = sys.argv[1], int(sys.argv[2])
b = json.load(open(d + "/baseline.json"))
assert b["status"] == "success", b
data = b["data"]
assert data["resultType"] == "baseline", data
thr = float(data["threshold"])
res = data["result"]
assert len(res) == 1 and res[0]["metric"]["gpu"] == "0", res
r = res[0]
col = {k: {t: float(v) for t, v in r[k]} for k in ("values", "expected", "lower", "upper", "score")}
ts = sorted(col["values"])
assert ts and all(t in col["lower"] and t in col["upper"] and t in col["expected"] for t in ts)
assert len(r["episodes"]) >= 1, r["episodes"]
onset = r["episodes"][0]["onset"]
if not onset >= t0 + 9:
    sys.exit("an episode opened at %s, before the fault (start %d)" % (onset, t0))
before = [t for t in ts if t < onset]
after = [t for t in ts if t >= onset]
if len(before) < 20:
    sys.exit("only %d banded points before the fault" % len(before))
for t in before:
    lo, hi, v = col["lower"][t], col["upper"][t], col["values"][t]
    if not lo <= col["expected"][t] <= hi:
        sys.exit("at %s expected %s is outside [%s, %s]" % (t, col["expected"][t], lo, hi))
    if not lo <= v <= hi:
        sys.exit("normal value %s at %s is outside the band [%s, %s]" % (v, t, lo, hi))
out = [t for t in after if not col["lower"][t] <= col["values"][t] <= col["upper"][t]]
if not out:
    sys.exit("no value of the failing GPU falls outside the band: %s" % [
        (t, col["values"][t], col["lower"][t], col["upper"][t], col["score"].get(t))
        for t in ts if onset - 2 <= t <= onset + 2])
if max(col["score"][t] for t in after if t in col["score"]) < thr:
    sys.exit("no score at or above the threshold after the fault")
# The agent's own scores: the step's score is the highest stored in it.
s = json.load(open(d + "/scores.json"))["data"]["result"]
agent = sorted((t, float(v)) for x in s for t, v in x["values"])
assert len(agent) > 50, len(agent)
last = agent[-1][0] - 1  # the newest scores may not be stored yet
step = 0.2
checked = 0
for t, v in sorted(col["score"].items()):
    if t > last:
        continue
    mine = [a for at, a in agent if t - step < at <= t + 1e-9]
    if not mine:
        continue
    if abs(max(mine) - v) > 1e-6:
        sys.exit("at %s the agent stored %s, the endpoint says %s" % (t, max(mine), v))
    checked += 1
if checked < 20:
    sys.exit("only %d steps compared with the agent's scores" % checked)
print("%d points in the band before the fault, %d outside after it, %d scores as the agent's"
      % (len(before), len(out), checked))
PY

# Bad requests: a clear 400, never a crash.
bad() { # WANT_IN_MESSAGE CURL_ARGS...
	local want="$1" code
	shift
	code=$(curl -sS -o "$T_DIR/err.json" -w '%{http_code}' -G "$URL/api/v1/baseline" "$@")
	[ "$code" = 400 ] || fail "$* answered $code: $(cat "$T_DIR/err.json")"
	grep -q '"errorType":"bad_data"' "$T_DIR/err.json" &&
		grep -qF "$want" "$T_DIR/err.json" ||
		fail "$*: unclear error $(cat "$T_DIR/err.json")"
}
bad 'wants a series selector' --data-urlencode 'query=rate(x[5m])' \
	-d start=1 -d end=2 -d step=1
bad 'no series selector given' -d start=1 -d end=2 -d step=1
bad '\"step\"' --data-urlencode "query=$M" -d start=1 -d end=2
bad 'end timestamp must not be before start' --data-urlencode "query=$M" \
	-d start=5 -d end=2 -d step=1
bad '\"warmup\"' --data-urlencode "query=$M" -d start=1 -d end=2 -d step=1 \
	-d warmup=30d
bad 'maximum resolution' --data-urlencode "query=$M" -d start=1 \
	-d end=100000 -d step=1
# An unknown series is no error: nothing to draw.
curl -fsS -G "$URL/api/v1/baseline" --data-urlencode 'query=no_such_metric' \
	-d "start=$((end - 3600))" -d "end=$end" -d step=60 | found '"result":\[\]' ||
	fail "an unknown series did not answer an empty result"
kill -0 "$AGENT_PID" || fail "the agent died"
stop_agent
ok "the baseline endpoint draws the agent's band, scores and episodes"
