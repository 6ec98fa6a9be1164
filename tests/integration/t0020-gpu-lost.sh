#!/usr/bin/env bash
# A GPU that answers GPU_IS_LOST becomes gpuwatch_gpu_up 0 while the others
# go on, and comes back when it answers again.
. "$(dirname "$0")/lib.sh"
need curl
use_fake full

fake_script "$GW_FAKE_NVML_SCRIPT" <<'EOF2'
gpus 3
gpu.*.temperature 40
EOF2
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2 --detail-interval 1
wait_for gpuwatch_gpu_up 'gpu="1"' 1
wait_for gpuwatch_gpu_temperature_celsius 'gpu="1"' 40

fake_script "$GW_FAKE_NVML_SCRIPT" <<'EOF2'
gpus 3
gpu.*.temperature 40
gpu.0.temperature 61
gpu.1.all error:GPU_IS_LOST
EOF2
wait_for gpuwatch_gpu_up 'gpu="1"' 0
wait_for gpuwatch_gpu_up 'gpu="0"' 1
wait_for gpuwatch_gpu_temperature_celsius 'gpu="0"' 61
[ -z "$(value gpuwatch_gpu_temperature_celsius 'gpu="1"')" ] || fail "lost GPU still reports a temperature"
wait_for gpuwatch_gpu_lost_total 'gpu="1"' 1
wait_for gpuwatch_gpu_lost_total 'gpu="0"' 0
grep -q "GPU 1 .* is lost" "$T_DIR/agent.log" || fail "no log line for the lost GPU"
[ "$(grep -c "is lost" "$T_DIR/agent.log")" -eq 1 ] || fail "lost GPU logged more than once"
ok "GPU 1 lost: up=0, others go on, one log line"

fake_script "$GW_FAKE_NVML_SCRIPT" <<'EOF2'
gpus 3
gpu.*.temperature 40
gpu.1.temperature 44
EOF2
wait_for gpuwatch_gpu_up 'gpu="1"' 1 20
wait_for gpuwatch_gpu_temperature_celsius 'gpu="1"' 44
grep -q "GPU 1 .* answers again" "$T_DIR/agent.log" || fail "no recovery log line"
ok "GPU 1 recovered after backoff"
stop_agent

# A GPU that is already gone when the agent starts is reported, and
# identified once it answers.
printf 'gpus 2\ngpu.1.handle error:GPU_IS_LOST\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2 --detail-interval 1
wait_for gpuwatch_gpu_up 'gpu="0"' 1
wait_for gpuwatch_gpu_up 'gpu="1"' 0
printf 'gpus 2\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
wait_for gpuwatch_gpu_up 'gpu="1",uuid="GPU-00000000-0000-0000-0000-000000000001"' 1 20
wait_for gpuwatch_gpu_temperature_celsius 'gpu="1"' 45
stop_agent
ok "GPU missing at start: reported down, identified when it appears"
