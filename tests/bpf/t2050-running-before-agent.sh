#!/usr/bin/env bash
# A CUDA program already running when the agent starts is found (from
# /proc at start) and its later calls are counted exactly.  What it did
# before the agent is not invented: its earlier allocation is not live
# memory, and freeing it does not take anything off the live bytes.
. "$(dirname "$0")/lib.sh"
bpf_require

stub_prog t2050-early -- malloc 1000 wait \
	malloc 2000 malloc 3000 launch 4 free 0 wait \
	free 1 wait \
	exit 0
# Pointer 0 (1000 bytes) is allocated before the agent exists.
prog_wait_ready t2050-early
pid=${P_PID[t2050-early]}

bpf_start_agent --ebpf-budget 1
wait_attached "$STUB_DIR/libcudart.so.13"
prog_continue t2050-early
prog_wait_ready t2050-early

expect gpuwatch_cuda_api_calls_total == 2 pid="$pid" comm=t2050-early api=cudaMalloc source=ebpf
expect gpuwatch_cuda_api_calls_total == 4 pid="$pid" api=cudaLaunchKernel
expect gpuwatch_cuda_api_calls_total == 1 pid="$pid" api=cudaFree
expect gpuwatch_cuda_api_bytes_total == 5000 pid="$pid" api=cudaMalloc
expect gpuwatch_cuda_memory_live_bytes == 5000 pid="$pid"
expect gpuwatch_cuda_memory_live_allocations == 2 pid="$pid"
ok "picked up: calls after the agent counted, an unknown free ignored"

prog_continue t2050-early
prog_wait_ready t2050-early
expect gpuwatch_cuda_memory_live_bytes == 3000 pid="$pid"
expect gpuwatch_cuda_memory_live_allocations == 1 pid="$pid"
expect_now gpuwatch_cuda_api_calls_total == 2 pid="$pid" api=cudaFree
ok "a known free matched"

prog_continue t2050-early
prog_wait_exit t2050-early 0
expect gpuwatch_process_exits_total == 1 comm=t2050-early reason=clean
stop_agent
