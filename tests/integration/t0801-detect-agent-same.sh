#!/usr/bin/env bash
# gpuwatch detect runs exactly the agent's detector: GPU 0's cooling fails
# 10 s after start; the raw temperature samples the agent stored, run
# through `gpuwatch detect`, give the same score at every timestamp as the
# agent's own NAME:anomaly_score, and the alert rows are the onsets of the
# agent's NAME:anomaly_episode.
. "$(dirname "$0")/lib.sh"
need curl
need python3

M='gpuwatch_gpu_temperature_celsius{gpu="0"}'
S='gpuwatch_gpu_temperature_celsius:anomaly_score{gpu="0"}'
E='gpuwatch_gpu_temperature_celsius:anomaly_episode{gpu="0"}'

# raw EXPR AT: "t,v" lines of EXPR's raw samples in the hour before AT.
raw() {
	curl -fsS -G "$URL/api/v1/query" --data-urlencode "query=$1[1h]" \
		--data-urlencode "time=$2" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
# Several series when episodes carry different explanation labels: merge.
for t, v in sorted((t, v) for r in d["data"]["result"] for t, v in r["values"]):
    print("%r,%s" % (t, v))'
}

start_agent --simulate 1 --interval 0.1 --fault thermal-runaway:0:10

# Wait until the agent has opened an episode for the failing GPU.
wait_until '[ -n "$(raw "$E" "$(date +%s)")" ]' 60 \
	"the agent opened no anomaly episode for GPU 0"
at=$(($(date +%s) + 1))
raw "$M" "$at" >"$T_DIR/samples.csv"
raw "$S" "$at" >"$T_DIR/agent-scores.csv"
raw "$E" "$at" >"$T_DIR/agent-episode.csv"
# The same samples read by detect itself from the agent's history.
"$GPUWATCH" detect -q --query "$M" --start $((at - 3600)) --end "$at" \
	--url "$URL" >"$T_DIR/query.csv" || fail "detect --query failed"
stop_agent
[ "$(wc -l <"$T_DIR/agent-scores.csv")" -gt 50 ] ||
	fail "too few agent scores: $(wc -l <"$T_DIR/agent-scores.csv")"

"$GPUWATCH" detect -q "$T_DIR/samples.csv" >"$T_DIR/detect.csv" ||
	fail "detect failed on the agent's samples"

python3 - "$T_DIR" <<'PY' || fail "detect and the agent disagree"
import csv, sys
d = sys.argv[1]
agent = {}
for t, v in csv.reader(open(d + "/agent-scores.csv")):
    agent[round(float(t) * 1000)] = float(v)
rows = list(csv.DictReader(open(d + "/detect.csv")))
mine = {round(float(r["timestamp"]) * 1000): r for r in rows}
both = 0
for t, s in agent.items():
    if t not in mine:
        continue  # a sample older than the hour asked for
    r = mine[t]
    if r["anomaly_score"] == "":
        sys.exit("agent scored %d, detect did not" % t)
    if abs(float(r["anomaly_score"]) - s) > 1e-6:
        sys.exit("at %d the agent scored %s, detect %s" % (t, s, r["anomaly_score"]))
    both += 1
if both < 50:
    sys.exit("only %d common samples" % both)
# The last samples may have been read before their scores were stored.
last = max(agent)
scored = sum(1 for t, r in mine.items() if r["anomaly_score"] != "" and t <= last)
if scored != both:
    sys.exit("detect scored %d samples, the agent %d" % (scored, both))
# Alert rows: where the agent's episode series starts (after a 0 or none).
onsets, prev = [], 0.0
for t, v in csv.reader(open(d + "/agent-episode.csv")):
    if prev == 0.0 and float(v) > 0:
        onsets.append(round(float(t) * 1000))
    prev = float(v)
alerts = [t for t, r in mine.items() if r["alert"] == "1" and t <= last]
if not alerts or alerts != onsets[:len(alerts)] or len(onsets) != len(alerts):
    sys.exit("alerts %s, agent episode onsets %s" % (alerts, onsets))
# --query: a "# NAME{LABELS}" line, then the same rows (times in UTC).
q = open(d + "/query.csv").read().splitlines()
if q[0] != '# gpuwatch_gpu_temperature_celsius{gpu="0",uuid="%s"}' % (
        q[0].split('uuid="')[1].split('"')[0] if 'uuid="' in q[0] else ""):
    sys.exit("--query banner: %r" % q[0])
qrows = list(csv.DictReader(q[1:]))
# (It read a moment later: samples that came since may follow.)
a = [(r["value"], r["anomaly_score"], r["alert"]) for r in qrows]
b = [(r["value"], r["anomaly_score"], r["alert"]) for r in rows]
if len(a) < len(b) or a[:len(b)] != b:
    sys.exit("--query gave other rows than the CSV of the same samples:"
             " %d vs %d rows, first difference %s" % (len(a), len(b),
             next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)))
print("%d samples scored alike, %d alert(s) at the agent's onsets" % (both, len(alerts)))
PY
ok "the agent and gpuwatch detect agree on every score and alert"
