#!/usr/bin/env bash
# One alert per anomalous episode: with the built-in rules, GPU 1's
# cooling failing 10 s after start fires MetricAnomalous for its
# temperature once (no resolve and re-fire while the episode lasts), with
# the metric named in a label and the peak score as its value; the healthy
# GPU 0's temperature raises nothing.
. "$(dirname "$0")/lib.sh"
need curl
need python3

start_agent --simulate 2 --interval 0.1 --rule-interval 1 \
	--fault thermal-runaway:1:10

# temp_alerts STATE...: the gpu labels of temperature MetricAnomalous alerts.
temp_alerts() {
	curl -fsS "$URL/api/v1/alerts?include_resolved=1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
print(" ".join(sorted(a["labels"]["gpu"] for a in d["data"]["alerts"]
      if a["labels"]["alertname"] == "MetricAnomalous"
      and a["labels"].get("metric") == "gpuwatch_gpu_temperature_celsius"
      and a["state"] in sys.argv[1:])))' "$@"
}

wait_until '[ "$(temp_alerts firing)" = 1 ]' 90 \
	"no episode alert for GPU 1's temperature (alerts: '$(temp_alerts firing pending resolved)')"
ok "the temperature episode of GPU 1 fired MetricAnomalous"

# Let the runaway go on for 20 more evaluations of every rule.
evals() { value gpuwatch_rules_evaluations_total || echo 0; }
rules=$(curl -fsS "$URL/api/v1/rules" | python3 -c '
import json, sys
print(sum(len(g["rules"]) for g in json.load(sys.stdin)["data"]["groups"]))')
e0=$(evals)
wait_until '[ "$(evals)" -ge $((e0 + 20 * rules)) ]' 60 "rules stopped being evaluated"

[ -z "$(temp_alerts firing pending resolved | tr -d '1 ')" ] ||
	fail "the healthy GPU 0's temperature alerted: $(temp_alerts firing pending resolved)"
# The alert's history: firing samples of ALERTS without a gap (a gap is a
# resolve and a new alert), one per evaluation since it started.
curl -fsS -G "$URL/api/v1/query" --data-urlencode \
	'query=ALERTS{alertname="MetricAnomalous",metric="gpuwatch_gpu_temperature_celsius",gpu="1",alertstate="firing"}[10m]' \
	>"$T_DIR/hist.json"
python3 - "$T_DIR/hist.json" <<'PY' || fail "the episode alert did not fire exactly once"
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
assert len(r) == 1, "%d firing series" % len(r)
ts = [float(t) for t, _ in r[0]["values"]]
gaps = [b - a for a, b in zip(ts, ts[1:]) if b - a > 3]
assert len(ts) >= 10, "only %d evaluations firing" % len(ts)
assert not gaps, "resolved and fired again (gaps %s)" % gaps
print("%d evaluations firing, one alert" % len(ts))
PY
ok "one alert for the whole episode, none for the healthy GPU"
