#!/usr/bin/env bash
# NVIDIA's own libcudart.so.13, no driver: every cudaMalloc returns 35
# (cudaErrorInsufficientDriver).  A program that calls it exactly 17 times
# shows exactly 17 calls and 17 errors with code 35 for its pid, no memory,
# and a clean exit.
. "$(dirname "$0")/lib.sh"
bpf_require
prog="$BPF_FIXTURES/prog_cudart_real"
[ -x "$prog" ] || skip "prog_cudart_real not built (no CUDA toolkit found)"
if [ -e /proc/driver/nvidia/version ] || ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
	skip "a CUDA driver is installed: cudaMalloc would not fail with 35"
fi
# Where the loader takes libcudart.so.13 from (its rpath): the file the
# agent has to find in the process and attach to.
cudart="$(ldd "$prog" | awk '$1 == "libcudart.so.13" && $2 == "=>" { print $3 }')"
[ -f "$cudart" ] || fail "the loader does not resolve libcudart.so.13 for $prog"

bpf_start_agent
prog_start real "$prog" 17
prog_wait_ready real
pid=${P_PID[real]}
comm="$(cat "/proc/$pid/comm")"
grep -qF "$(readlink -f "$cudart")" "/proc/$pid/maps" || fail "$cudart is not mapped in $pid"
wait_attached "$cudart"
prog_continue real
prog_wait_ready real

expect gpuwatch_cuda_api_calls_total == 17 pid="$pid" comm="$comm" api=cudaMalloc source=ebpf
expect gpuwatch_cuda_api_errors_total == 17 pid="$pid" api=cudaMalloc code=35 source=ebpf
# No other API or code failed.
expect_now gpuwatch_cuda_api_errors_total == 17 pid="$pid"
expect gpuwatch_cuda_api_duration_seconds_count == 17 pid="$pid" api=cudaMalloc
expect gpuwatch_cuda_api_duration_seconds_bucket == 17 pid="$pid" api=cudaMalloc le=+Inf
ok "17 calls, 17 errors with code 35, 17 timings"
# Failed allocations hold nothing and allocate no bytes.
expect_zero gpuwatch_cuda_memory_live_bytes pid="$pid"
expect_zero gpuwatch_cuda_memory_live_allocations pid="$pid"
expect_zero gpuwatch_cuda_api_bytes_total pid="$pid" api=cudaMalloc
ok "failed allocations: no live memory, no bytes"
# Still exact after more polls of the kernel's maps.
expect_now gpuwatch_cuda_api_calls_total == 17 pid="$pid" api=cudaMalloc

prog_continue real
prog_wait_exit real 0
expect gpuwatch_process_exits_total == 1 comm="$comm" reason=clean
# Once, whatever the reason.
expect_now gpuwatch_process_exits_total == 1 comm="$comm"
expect_zero gpuwatch_process_abnormal_exits_with_gpu_memory_total comm="$comm"
wait_until 'grep -qF "ebpf: process $pid ($comm) exited" "$T_DIR/agent.log"' 10 \
	"no 'ebpf: process $pid ($comm) exited' line"
ok "clean exit counted and logged"
stop_agent
