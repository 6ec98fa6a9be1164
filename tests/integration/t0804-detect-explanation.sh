#!/usr/bin/env bash
# Cross-layer explanation: GPU 1's power limit is capped 15 s after start;
# with the built-in rules, the episode alerts that follow on GPU 1
# (power draw, clocks) reach a real Alertmanager carrying the label
# `explanation`, which names the co-occurring anomalies of the same GPU,
# the injected cause (the power limit) among them with its onset time;
# no alert of GPU 0 is explained by GPU 1's.  The fault propagates to the
# application layer: the simulated processes of GPU 1 report over StatsD
# the step time of their training loop, whose kernels slow with the
# clock; the step time's alert names its kernel time, the clock and the
# power, each metric once.
. "$(dirname "$0")/lib.sh"
need curl
need python3
am_require
am_start

start_agent --simulate 2 --interval 0.1 --rule-interval 1 \
	--no-ebpf --alertmanager "$AM" --fault power-cap:1:15

# explained: the Alertmanager holds a MetricAnomalous alert of GPU 1 whose
# explanation names the power limit's episode and its onset.
wait_until "am_active 'any(x[\"labels\"].get(\"gpu\") == \"1\" and
	\"gpuwatch_gpu_power_limit_watts\" in x[\"labels\"].get(\"explanation\", \"\")
	and \" since \" in x[\"labels\"][\"explanation\"]
	for x in l if x[\"labels\"][\"alertname\"] == \"MetricAnomalous\")'" 90 \
	"no alert in the Alertmanager explained by the power cap: $(cat "$T_DIR/q.json" 2>/dev/null)"
python3 - "$T_DIR/q.json" <<'PY'
import json, sys
for x in json.load(open(sys.argv[1])):
    l = x["labels"]
    if "explanation" in l:
        print("  %s on GPU %s <- %s" % (l.get("metric"), l.get("gpu"), l["explanation"]))
PY
ok "an alert reached the Alertmanager explained by the power cap"

# The application layer: a step-time alert of GPU 1, from a process's
# StatsD gauge, explained down to the hardware.
wait_until "am_active 'any(x[\"labels\"].get(\"metric\") == \"train_step_seconds\"
	and x[\"labels\"].get(\"gpu\") == \"1\" and x[\"labels\"].get(\"pid\")
	and all(m in x[\"labels\"].get(\"explanation\", \"\") for m in
		(\"train_step_kernel_seconds +\", \"gpuwatch_gpu_clock_hertz{\",
		 \"gpuwatch_gpu_power_\", \" since \"))
	and x[\"labels\"][\"explanation\"].count(\"gpuwatch_gpu_clock_hertz\") == 1
	for x in l if x[\"labels\"][\"alertname\"] == \"MetricAnomalous\")'" 90 \
	"no step-time alert explained down to the clock and power: $(cat "$T_DIR/q.json" 2>/dev/null)"
python3 - "$T_DIR/q.json" <<'PY'
import json, sys
for x in json.load(open(sys.argv[1])):
    l = x["labels"]
    if l.get("metric") == "train_step_seconds":
        print("  %s of pid %s on GPU %s <- %s" % (l["metric"], l.get("pid"), l.get("gpu"), l.get("explanation")))
PY
ok "a process's step time alerted, explained by its kernels, the clock and the power"

curl -fsS "$URL/api/v1/alerts" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]["alerts"]
bad = [a for a in d if a["labels"].get("gpu") == "0"
       and "power_limit" in a["labels"].get("explanation", "")]
assert not bad, bad
assert any("explanation" in a["labels"] for a in d), d' ||
	fail "explanations crossed GPUs or are missing from /api/v1/alerts"
ok "/api/v1/alerts carries the explanation, scoped to its GPU"
stop_agent
am_stop
