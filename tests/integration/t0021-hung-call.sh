#!/usr/bin/env bash
# An NVML call that hangs blocks neither /metrics nor the other GPUs; it is
# counted as a timeout, and SIGTERM still ends the agent within 5 s.
. "$(dirname "$0")/lib.sh"
need curl
use_fake full

fake_script "$GW_FAKE_NVML_SCRIPT" <<'EOF2'
gpus 2
gpu.*.temperature 40
EOF2
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2 --detail-interval 1 --collector-timeout 1
wait_for gpuwatch_gpu_up 'gpu="1"' 1

fake_script "$GW_FAKE_NVML_SCRIPT" <<'EOF2'
gpus 2
gpu.*.temperature 40
gpu.0.temperature 66
gpu.1.power_mw hang:60
EOF2
wait_for gpuwatch_gpu_up 'gpu="1"' 0 10
wait_for gpuwatch_agent_collector_timeouts_total 'collector="nvml"' 1
wait_for gpuwatch_gpu_temperature_celsius 'gpu="0"' 66
grep -q "GPU 1: device_get_power_usage has not returned" "$T_DIR/agent.log" || fail "hang log line does not name the call"
# Scrapes stay fast while the call hangs.
for _ in $(seq 1 10); do
	t="$(curl -fsS -o /dev/null -w '%{time_total}' "$URL/metrics")"
	awk -v t="$t" 'BEGIN { exit !(t < 1.0) }' || fail "a scrape took ${t}s during the hang"
done
ok "hung GPU: up=0, timeout counted, GPU 0 and scrapes unaffected"
stop_agent
ok "SIGTERM with a thread stuck in NVML: exit 0 in ${STOP_MS} ms"
