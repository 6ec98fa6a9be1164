#!/usr/bin/env bash
# A rule on a dynamic baseline: GPU 1's cooling fails 10 s after start;
# the rule on gpuwatch_gpu_temperature_celsius:anomaly_score fires for GPU 1
# (the score is kept with the data by the store's ingest), and never for
# the healthy GPU 0.  A score is high for a few samples around a change, so
# the rule looks at its maximum over a window, as rules on scores should
# (an instant test at one evaluation may fall between them).
. "$(dirname "$0")/lib.sh"
need curl
need python3

cat >"$T_DIR/r.yml" <<'YML'
groups:
  - name: t
    rules:
      - alert: GpuTemperatureUnusual
        expr: max_over_time(gpuwatch_gpu_temperature_celsius:anomaly_score[30s]) > 0.9
        labels: {severity: info}
        annotations:
          summary: "GPU {{ $labels.gpu }} temperature unusual (score {{ $value }})"
YML
start_agent --simulate 2 --interval 0.1 --rule-interval 1 --no-default-rules \
	--rules "$T_DIR/r.yml" --fault thermal-runaway:1:10

# gpus STATE: the gpu labels of GpuTemperatureUnusual alerts in STATE, as
# listed by /api/v1/alerts (resolved ones included, so a short-lived
# anomaly is not missed between two polls).
gpus() {
	curl -fsS "$URL/api/v1/alerts?include_resolved=1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
print(" ".join(sorted({a["labels"]["gpu"] for a in d["data"]["alerts"]
      if a["labels"]["alertname"] == "GpuTemperatureUnusual"
      and a["state"] in sys.argv[1:]})))' "$@"
}

wait_until '[ "$(gpus firing resolved)" = 1 ]' 90 \
	"the anomaly rule did not fire for GPU 1 (alerts for: '$(gpus firing pending resolved)')"
[ -z "$(gpus firing pending resolved | tr -d 1 | tr -d ' ')" ] ||
	fail "the healthy GPU 0 raised the anomaly alert: $(gpus firing pending resolved)"
ok "the anomaly-score rule fired for the failing GPU only"
stop_agent
