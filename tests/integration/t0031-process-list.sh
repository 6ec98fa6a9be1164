#!/usr/bin/env bash
# The process list goes through NVML's INSUFFICIENT_SIZE sizing dance: all
# processes are seen however many there are, and they leave when they exit.
. "$(dirname "$0")/lib.sh"
need curl
use_fake full

list=""
for i in $(seq 1 40); do list="${list:+$list,}$((4000000 + i)):$((i * 1048576))"; done
printf 'gpus 1\ngpu.0.processes %s\n' "$list" | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2
wait_for gpuwatch_gpu_processes 'gpu="0"' 40
n="$(scrape | grep -c '^gpuwatch_gpu_process_memory_used_bytes{')"
[ "$n" -eq 40 ] || fail "$n process series, expected 40"
wait_for gpuwatch_gpu_process_memory_used_bytes 'pid="4000040"' 41943040
ok "40 processes through the sizing dance"
# No utilisation samples (NVML says NOT_FOUND): every process reads idle.
wait_for gpuwatch_gpu_process_sm_utilization_ratio 'pid="4000007"' 0
n="$(scrape | grep -c '^gpuwatch_gpu_process_sm_utilization_ratio{')"
[ "$n" -eq 40 ] || fail "$n process utilisation series, expected 40"

printf 'gpus 1\ngpu.0.processes 4000001:1048576\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
wait_for gpuwatch_gpu_processes 'gpu="0"' 1
n="$(scrape | grep -c '^gpuwatch_gpu_process_memory_used_bytes{')"
[ "$n" -eq 1 ] || fail "$n process series after 39 exited"
ok "exited processes disappear"
stop_agent
