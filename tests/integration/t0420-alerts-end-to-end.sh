#!/usr/bin/env bash
# What an operator sees: the agent with its defaults (built-in rules on)
# and one --alertmanager, a real Alertmanager, two simulated GPUs of which
# GPU 0 gets an ECC storm, and a training job (our Python client's
# example) whose loss turns NaN.  The Alertmanager receives the hardware
# alerts for GPU 0 and the training alert for the job, nothing for the
# healthy GPU 1, and the agent's /api/v1/alerts agrees.
. "$(dirname "$0")/lib.sh"
need curl
need python3
am_require
CLIENTS="$TEST_SRC/../clients"
PY=python3
python3 -c 'import socket' 2>/dev/null || skip "no python3"

am_start
start_agent --simulate 2 --interval 0.5 --detail-interval 1 --rule-interval 1 \
	--alertmanager "$AM" --alert-resend 5 --fault ecc-storm:0:3
PORT="$(sed -n 's/.*statsd: listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T_DIR/agent.log" | head -n1)"
[ -n "$PORT" ] || fail "no 'statsd: listening on udp' line in the log"

"$PY" "$CLIENTS/python/examples/train_loop.py" --port "$PORT" --steps 30 \
	--step-ms 5 --nan-at 12 --tags job:llm-7b,rank:0 >"$T_DIR/train.out" ||
	fail "train_loop.py failed: $(cat "$T_DIR/train.out")"

wait_until "am_active '\"GpuUncorrectedEccErrors\" in a and \"TrainingNotFinite\" in a'" 60 \
	"the Alertmanager did not get both alerts: $(cat "$T_DIR/q.json" 2>/dev/null)"
am_active 'all(x["labels"].get("gpu") in (None, "0") for x in l)' ||
	fail "an alert for the healthy GPU 1: $(cat "$T_DIR/q.json")"
am_active 'a["GpuUncorrectedEccErrors"]["labels"]["severity"] == "critical" and
	a["GpuUncorrectedEccErrors"]["annotations"]["summary"] != "" and
	a["TrainingNotFinite"]["labels"]["job"] == "llm-7b" and
	a["TrainingNotFinite"]["labels"]["what"] == "loss" and
	a["TrainingNotFinite"]["labels"]["severity"] == "critical" and
	"llm-7b" in a["TrainingNotFinite"]["annotations"]["summary"]' ||
	fail "labels or annotations: $(cat "$T_DIR/q.json")"
ok "the Alertmanager has the ECC alert for GPU 0 and the NaN-loss alert for the job"

curl -fsS "$URL/api/v1/alerts" | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = {a["labels"]["alertname"] for a in d["data"]["alerts"] if a["state"] == "firing"}
assert {"GpuUncorrectedEccErrors", "TrainingNotFinite"} <= names, names
assert all(a["labels"].get("gpu") in (None, "0") for a in d["data"]["alerts"]
           if a["state"] == "firing"), d' ||
	fail "/api/v1/alerts disagrees"
# Published at the evaluation after a post returns.
wait_until 'sent="$(value gpuwatch_alertmanager_alerts_sent_total "url=\"$AM\"")" &&
	awk -v s="$sent" "BEGIN { exit !(s + 0 >= 2) }"' 15 \
	"gpuwatch_alertmanager_alerts_sent_total stayed below 2"
wait_for gpuwatch_alertmanager_up "url=\"$AM\"" 1
ok "/api/v1/alerts lists the same firing alerts; $sent alerts sent"
stop_agent
am_stop
