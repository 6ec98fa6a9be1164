#!/usr/bin/env bash
# --simulate N: N GPUs through the real collector with plausible values, and
# faults that show up where an operator would look.
. "$(dirname "$0")/lib.sh"
need curl

start_agent --simulate 4 --interval 0.2 --detail-interval 1 --sim-day 60 \
	--fault xid79:1:2 --fault pcie-downgrade:2:0 --fault power-cap:3:0
wait_for gpuwatch_gpus '' 4
wait_for gpuwatch_gpu_up 'gpu="0"' 1
wait_for gpuwatch_gpu_up 'gpu="1"' 0 20
wait_for gpuwatch_gpu_xid_errors_total 'gpu="1"' 1
wait_for gpuwatch_gpu_pcie_link_width 'gpu="2"' 8
wait_for gpuwatch_gpu_power_limit_watts 'gpu="3"' 350
t="$(value gpuwatch_gpu_temperature_celsius 'gpu="0"')"
awk -v t="$t" 'BEGIN { exit !(t >= 20 && t <= 100 && t == int(t)) }' || fail "GPU 0 temperature $t"
p="$(value gpuwatch_gpu_power_watts 'gpu="0"')"
l="$(value gpuwatch_gpu_power_limit_watts 'gpu="0"')"
awk -v p="$p" -v l="$l" 'BEGIN { exit !(p > 0 && p <= l) }' || fail "GPU 0 power $p W, limit $l W"
[ -n "$(value gpuwatch_gpu_sm_occupancy_ratio 'gpu="0"')" ] || fail "no GPM metrics from the simulator"
check_promtool
ok "4 simulated GPUs, faults visible, promtool clean"
stop_agent
