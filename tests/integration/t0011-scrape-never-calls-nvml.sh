#!/usr/bin/env bash
# A scrape is served from the last collected values: it never calls NVML.
# And a metric NVML says it does not support is not asked for again.
. "$(dirname "$0")/lib.sh"
need curl
use_fake full

fake_script "$GW_FAKE_NVML_SCRIPT" <<EOF2
gpus 2
calls_log $T_DIR/calls.log
gpu.0.power_mw error:NOT_SUPPORTED
EOF2

start_agent --nvml-lib "$FAKE_LIB" --interval 1h --detail-interval 1h
wait_for gpuwatch_gpu_temperature_celsius 'gpu="1"' 45
# Each GPU has its own worker; the event thread registers each GPU for
# events once it is known. Then only the event thread's waits go on.
for g in 0 1; do
	wait_until '[ -n "$(value gpuwatch_gpu_pcie_link_width "gpu=\"$g\"")" ]' 10 \
		"GPU $g's detail set never arrived"
done
wait_until '[ "$(grep "^nvmlDeviceRegisterEvents [01]$" "$T_DIR/calls.log" | sort -u | wc -l)" -eq 2 ]' 10 \
	"the event thread never registered both GPUs"
# The event thread keeps waiting on its event set; everything else must stay quiet.
before="$(grep -vc '^nvmlEventSetWait' "$T_DIR/calls.log" || true)"
for _ in $(seq 1 20); do scrape >/dev/null; done
after="$(grep -vc '^nvmlEventSetWait' "$T_DIR/calls.log" || true)"
[ "$before" -eq "$after" ] || fail "20 scrapes made $((after - before)) NVML calls"
ok "20 scrapes, 0 NVML calls"

[ -z "$(value gpuwatch_gpu_power_watts 'gpu="0"')" ] || fail "unsupported power is exported"
[ -n "$(value gpuwatch_gpu_power_watts 'gpu="1"')" ] || fail "GPU 1 power missing"
stop_agent

# Now with a fast interval: the unsupported call happens once, not every pass.
: >"$T_DIR/calls.log"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.1 --detail-interval 1
wait_until '[ "$(grep -c "^nvmlDeviceGetTemperature 0" "$T_DIR/calls.log")" -ge 10 ]' 20 "fewer than 10 passes"
n="$(grep -c '^nvmlDeviceGetPowerUsage 0' "$T_DIR/calls.log" || true)"
[ "$n" -eq 1 ] || fail "unsupported nvmlDeviceGetPowerUsage called $n times on GPU 0"
ok "NOT_SUPPORTED is asked once and remembered"
stop_agent
