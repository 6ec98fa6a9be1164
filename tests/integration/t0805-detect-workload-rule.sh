#!/usr/bin/env bash
# The built-in anomaly rule leaves out what jobs do.  A simulated day
# compressed into a minute, run for two and a half (jobs starting and
# stopping on every GPU every few seconds): the episodes that follow a
# change of a GPU's compute processes are stored with cause="workload" and
# no MetricAnomalous fires.  Then GPU 1's cooling failing 40 s into a run
# (no job change near it) fires MetricAnomalous for its temperatures
# (t0802 checks the healthy GPU's stay silent).
. "$(dirname "$0")/lib.sh"
need curl
need python3

# alerts: "gpu metric" of every MetricAnomalous alert seen so far (the
# store keeps ALERTS), one per line.
alerts() {
	curl -fsS -G "$URL/api/v1/query" --data-urlencode \
		'query=max_over_time(ALERTS{alertname="MetricAnomalous"}[10m])' |
		python3 -c '
import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    m = r["metric"]
    print(m.get("gpu", "-"), m.get("metric", "?"))'
}
# explained: how many episodes opened explained by a workload change
# (stored with cause="workload").
explained() { value gpuwatch_anomaly_workload_episodes_total || echo 0; }
evals() { value gpuwatch_rules_evaluations_total || echo 0; }

start_agent --simulate 4 --sim-day 60 --interval 0.5 --detail-interval 1 \
	--rule-interval 1 --no-ebpf
rules=$(curl -fsS "$URL/api/v1/rules" | python3 -c '
import json, sys
g = json.load(sys.stdin)["data"]["groups"]
print(sum(len(x["rules"]) for x in g))
sys.exit(0 if any(r["name"] == "MetricAnomalous" for x in g for r in x["rules"]) else 1)') ||
	fail "no built-in MetricAnomalous rule"
# Two and a half simulated days: past the 2-minute window of the first
# jobs' episodes.
wait_until '[ "$(evals)" -ge $((rules * 150)) ]' 240 "rules were not evaluated"
n=$(explained)
[ "${n%.*}" -ge 3 ] || fail "only $n episodes explained by workload changes"
# ... and they are in the history with the label.
curl -fsS -G "$URL/api/v1/series" --data-urlencode \
	'match[]={__name__=~".+:anomaly_episode",cause="workload"}' |
	python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)["data"] else 1)' ||
	fail "no episode series with cause=\"workload\""
alerts >"$T_DIR/alerts"
[ ! -s "$T_DIR/alerts" ] ||
	fail "MetricAnomalous on a healthy day: $(tr '\n' ';' <"$T_DIR/alerts")"
ok "$n episodes explained by workload changes, no MetricAnomalous"
stop_agent
# A new agent, not the models and history of that day.
rm -rf "$T_DIR/data"

start_agent --simulate 2 --interval 0.5 --detail-interval 1 --rule-interval 1 \
	--no-ebpf --fault thermal-runaway:1:40
wait_until 'alerts | grep -Eq "^1 gpuwatch_gpu_(memory_)?temperature_celsius$"' 120 \
	"GPU 1's failing cooling raised no MetricAnomalous (alerts: $(alerts | tr '\n' ';'))"
ok "GPU 1's failing cooling fired MetricAnomalous"
stop_agent
