#!/usr/bin/env bash
# The anomaly models survive a restart: after a clean stop the agent saves
# them (DATA_DIR/baselines.bin) and the next start restores them, so
# scores come from the first samples instead of after a new 64-sample
# warm-up; a damaged file is refused with a warning and the models learn
# again.
. "$(dirname "$0")/lib.sh"
need curl
need python3

S='gpuwatch_gpu_temperature_celsius:anomaly_score{gpu="0"}'
# scores_since MS: how many scores of GPU 0 are stamped after MS.
scores_since() {
	curl -fsS -G "$URL/api/v1/query" --data-urlencode "query=$S[1h]" |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
print(sum(1 for r in d["data"]["result"] for t, v in r["values"]
          if float(t) * 1000 > int(sys.argv[1])))' "$1"
}
# samples_since MS: the same for the temperature samples themselves.
samples_since() {
	curl -fsS -G "$URL/api/v1/query" --data-urlencode \
		'query=gpuwatch_gpu_temperature_celsius{gpu="0"}[1h]' |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(1 for r in d["data"]["result"] for t, v in r["values"]
          if float(t) * 1000 > int(sys.argv[1])))' "$1"
}

start_agent --simulate 1 --interval 0.1 --no-default-rules
wait_until '[ "$(scores_since 0)" -gt 20 ]' 60 "no scores after the warm-up"
stop_agent
[ -s "$T_DIR/data/baselines.bin" ] || fail "no models file after a clean stop"
ok "the models were saved at stop"

t0=$(now_ms)
start_agent --simulate 1 --interval 0.1 --no-default-rules
grep -q "baselines: [1-9][0-9]* models restored" "$T_DIR/agent.log" ||
	fail "the models were not restored: $(cat "$T_DIR/agent.log")"
# Once 10 samples have come since the restart, most of them are scored
# (a fresh model would learn for 64).
wait_until '[ "$(samples_since "$t0")" -ge 10 ]' 30 "no samples after the restart"
n=$(scores_since "$t0")
[ "$n" -ge 5 ] || fail "only $n scores among the first samples after the restart"
ok "scores from the first samples after the restart ($n)"
stop_agent

# A damaged file: a warning, and the agent runs and learns again.
printf 'not a models file' >"$T_DIR/data/baselines.bin"
start_agent --simulate 1 --interval 0.1 --no-default-rules
grep -q "baselines: .* not restored" "$T_DIR/agent.log" ||
	fail "no warning for a damaged models file: $(cat "$T_DIR/agent.log")"
ok "a damaged models file is refused with a warning"
stop_agent
