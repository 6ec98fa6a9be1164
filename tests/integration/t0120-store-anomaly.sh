#!/usr/bin/env bash
# Dynamic baselines in the history: GPU 1's cooling fails 10 s after start
# (thermal-runaway); its gpuwatch_gpu_temperature_celsius:anomaly_score
# rises above 0.9 once the temperature leaves its level, while GPU 0's stays
# low.  The score series are listed by /api/v1/series, counters get none,
# and with --no-baselines there are none at all.
. "$(dirname "$0")/lib.sh"
need curl
need python3

SCORE=gpuwatch_gpu_temperature_celsius:anomaly_score

# query EXPR: prints "gpu value" per series of an instant query.
query() {
	curl -fsS -G "$URL/api/v1/query" --data-urlencode "query=$1" |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
for r in d["data"]["result"]:
    print(r["metric"].get("gpu", "-"), r["value"][1])'
}

# score_of GPU EXPR: the value of EXPR for that GPU ("" when absent).
score_of() {
	query "$2" | awk -v g="$1" '$1 == g { print $2 }'
}

# series MATCH: the series names /api/v1/series lists for MATCH.
series() {
	curl -fsS -G "$URL/api/v1/series" --data-urlencode "match[]=$1" |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
print("\n".join(sorted({s["__name__"] for s in d["data"]}))) '
}

start_agent --simulate 2 --interval 0.1 --fault thermal-runaway:1:10

# Scores appear once the 64-sample warm-up is over (about 7 s here).
wait_until '[ -n "$(score_of 0 "$SCORE")" ]' 30 "no $SCORE for GPU 0"
ok "scores are stored after the warm-up"

# The fault starts at 10 s; the temperature follows with a 30 s lag, so
# its first whole degree comes a few seconds later.
wait_until 'awk -v v="$(score_of 1 "max_over_time($SCORE[5m])")" \
	"BEGIN { exit !(v + 0 > 0.9) }"' 60 \
	"GPU 1's anomaly score never rose above 0.9 after its cooling failed"
healthy="$(score_of 0 "max_over_time($SCORE[5m])")"
awk -v v="$healthy" 'BEGIN { exit !(v != "" && v + 0 < 0.5) }' ||
	fail "GPU 0 (healthy) scored $healthy"
ok "the failing GPU scores above 0.9, the healthy one at most $healthy"

names="$(series '{__name__=~".+:anomaly_score"}')"
grep -qx "$SCORE" <<<"$names" || fail "/api/v1/series lacks $SCORE: $names"
grep -qx "gpuwatch_gpu_power_watts:anomaly_score" <<<"$names" ||
	fail "/api/v1/series lacks the power score: $names"
if grep -Eq '_total:|^gpuwatch_(agent|store|anomaly)_|:anomaly_score:' <<<"$names"; then
	fail "counters, self metrics or scores of scores were scored: $names"
fi
ok "/api/v1/series lists gauge scores only"

n="$(value gpuwatch_anomaly_series)"
awk -v n="$n" 'BEGIN { exit !(n + 0 > 0) }' || fail "gpuwatch_anomaly_series is '$n'"
[ "$(value gpuwatch_anomaly_refused_total 'reason="cap"')" = 0 ] ||
	fail "series refused by the baseline cap"
s="$(value gpuwatch_anomaly_scores_total)"
awk -v n="$s" 'BEGIN { exit !(n + 0 > 0) }' || fail "gpuwatch_anomaly_scores_total is '$s'"
ok "self metrics: $n series modelled, $s scores"
stop_agent

# --no-baselines: the same run stores no score series.
rm -rf "$T_DIR/data"
start_agent --simulate 2 --interval 0.1 --no-baselines
wait_until '[ "$(score_of 0 "count_over_time(gpuwatch_gpu_temperature_celsius[1m])" |
	awk "{ print (\$1 + 0 > 100) }")" = 1 ]' 30 \
	"fewer than 100 temperature samples stored"
[ -z "$(series '{__name__=~".+:anomaly_score"}')" ] ||
	fail "--no-baselines still stores score series"
[ -z "$(value gpuwatch_anomaly_series || true)" ] ||
	fail "--no-baselines still publishes gpuwatch_anomaly_series"
ok "--no-baselines stores no scores"
stop_agent
