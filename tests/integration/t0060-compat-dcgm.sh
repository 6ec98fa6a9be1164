#!/usr/bin/env bash
# --compat dcgm adds dcgm-exporter's names and labels beside ours.
. "$(dirname "$0")/lib.sh"
need curl
use_fake full

printf 'gpus 1\ngpu.0.temperature 55\ngpu.0.memory_used 2147483648\nevent.1 0 xid 31\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2 --detail-interval 1 --compat dcgm
wait_for DCGM_FI_DEV_GPU_TEMP 'gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",device="nvidia0",modelName="NVIDIA H100 80GB HBM3"' 55
wait_for DCGM_FI_DEV_FB_USED 'gpu="0"' 2048
wait_for DCGM_FI_DEV_POWER_USAGE 'gpu="0"' 250
wait_for DCGM_FI_DEV_XID_ERRORS 'gpu="0"' 31
wait_for DCGM_FI_DEV_PCIE_REPLAY_COUNTER 'gpu="0"' 0
wait_for gpuwatch_gpu_temperature_celsius 'gpu="0"' 55
check_promtool DCGM_
ok "dcgm-exporter names alongside gpuwatch's"
stop_agent
