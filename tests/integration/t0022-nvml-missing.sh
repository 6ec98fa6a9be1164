#!/usr/bin/env bash
# No library, no driver, an old driver, no permission: one clear log line
# each, and the agent serves the rest.
. "$(dirname "$0")/lib.sh"
need curl

start_agent --nvml-lib "$T_DIR/no/libnvidia-ml.so.1"
wait_for gpuwatch_agent_collector_up 'collector="nvml"' 0
[ -n "$(value gpuwatch_agent_cpu_seconds_total)" ] || fail "self metrics missing without NVML"
[ "$(grep -c "cannot load" "$T_DIR/agent.log")" -eq 1 ] || fail "expected exactly one 'cannot load' line"
stop_agent
ok "missing library: one log line, self metrics served"

use_fake full
printf 'init error:DRIVER_NOT_LOADED\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB"
wait_until 'grep -q "Driver Not Loaded\|DRIVER_NOT_LOADED" "$T_DIR/agent.log"' 10 "no driver-not-loaded line"
grep -q "kernel driver is not loaded" "$T_DIR/agent.log" || fail "no hint for a missing driver"
wait_for gpuwatch_agent_collector_up 'collector="nvml"' 0
# The driver appears later: the agent picks it up by itself.
printf 'gpus 1\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
wait_for gpuwatch_agent_collector_up 'collector="nvml"' 1 20
wait_for gpuwatch_gpu_up 'gpu="0"' 1
stop_agent
ok "driver not loaded: clear line, recovered when it loads"

use_fake old
printf 'gpus 1\ngpu.0.processes %s:1048576\n' $$ | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2
wait_for gpuwatch_gpu_temperature_celsius 'gpu="0"' 45
wait_for gpuwatch_gpu_process_memory_used_bytes "pid=\"$$\"" 1048576
wait_for gpuwatch_gpu_clock_event_active 'reason="gpu_idle"' 0
grep -q "functions are missing from .*nvmlDeviceGetFieldValues" "$T_DIR/agent.log" || fail "missing symbols not listed"
[ "$(grep -c "functions are missing" "$T_DIR/agent.log")" -eq 1 ] || fail "missing symbols logged more than once"
[ -z "$(value gpuwatch_gpu_memory_temperature_celsius)" ] || fail "memory temperature without field values"
stop_agent
ok "old driver: missing functions listed once, fallbacks used"

use_fake full
printf 'gpus 1\ngpu.0.ecc_corrected error:NO_PERMISSION\ngpu.0.ecc_uncorrected error:NO_PERMISSION\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2 --detail-interval 1
wait_for gpuwatch_agent_collector_errors_total 'code="NO_PERMISSION"' 1
wait_for gpuwatch_gpu_temperature_celsius 'gpu="0"' 45
grep -q "no permission to read ECC counters" "$T_DIR/agent.log" || fail "no permission line"
stop_agent
ok "no permission: one line, counted, the rest served"
