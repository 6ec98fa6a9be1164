#!/usr/bin/env bash
# The built-in rules on the fake NVML: GPU 0's HBM runs at 95 C.  The
# warning (> 85 C, for 2m) and critical (> 93 C, for 1m) alerts go pending
# at once; the critical one fires once its minute has passed, not before;
# GPU 1 (70 C) raises nothing; when the HBM cools down both are gone.
. "$(dirname "$0")/lib.sh"
need curl
need python3
use_fake full

printf 'gpus 2\ngpu.*.memory_temperature 70\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.5 --rule-interval 1
wait_for gpuwatch_gpu_memory_temperature_celsius 'gpu="1"' 70

# states NAME: "STATE:GPU ..." of that alert on /api/v1/alerts.
states() {
	curl -fsS "$URL/api/v1/alerts" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
print(" ".join(sorted(a["state"] + ":" + a["labels"]["gpu"] for a in d["data"]["alerts"]
                      if a["labels"]["alertname"] == sys.argv[1])))' "$1"
}

printf 'gpus 2\ngpu.*.memory_temperature 70\ngpu.0.memory_temperature 95\n' |
	fake_script "$GW_FAKE_NVML_SCRIPT"
hot=$(now_ms)
wait_until '[ "$(states GpuHbmTemperatureCritical)" = pending:0 ]' 15 \
	"GpuHbmTemperatureCritical not pending for GPU 0: '$(states GpuHbmTemperatureCritical)'"
[ "$(states GpuHbmTemperatureHigh)" = pending:0 ] ||
	fail "GpuHbmTemperatureHigh: '$(states GpuHbmTemperatureHigh)'"
wait_until '[ "$(states GpuHbmTemperatureCritical)" = firing:0 ]' 90 \
	"GpuHbmTemperatureCritical did not fire: '$(states GpuHbmTemperatureCritical)'"
took=$(($(now_ms) - hot))
[ $took -ge 60000 ] || fail "fired after ${took} ms, before its 1 minute"
[ "$(states GpuHbmTemperatureHigh)" = pending:0 ] ||
	fail "the warning (for 2m) is '$(states GpuHbmTemperatureHigh)' after ${took} ms"
ok "HBM at 95 C: critical pending, then firing after ${took} ms (for 1m); GPU 1 quiet"

printf 'gpus 2\ngpu.*.memory_temperature 70\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
wait_until '[ -z "$(states GpuHbmTemperatureCritical)$(states GpuHbmTemperatureHigh)" ]' 20 \
	"the HBM alerts did not resolve: '$(states GpuHbmTemperatureCritical)' '$(states GpuHbmTemperatureHigh)'"
ok "cooled down: both resolved"
stop_agent
