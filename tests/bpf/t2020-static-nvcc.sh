#!/usr/bin/env bash
# A program built by nvcc with the runtime linked in (-cudart static): no
# libcudart.so in the process, cudaMalloc is in the executable's .symtab
# (there a local or hidden symbol).  Its 17 calls and their 17 errors with
# code 35 (no driver) are seen all the same.
. "$(dirname "$0")/lib.sh"
bpf_require
prog="$BPF_FIXTURES/prog_static"
[ -x "$prog" ] || skip "prog_static not built (no nvcc)"
if [ -e /proc/driver/nvidia/version ] || ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
	skip "a CUDA driver is installed: cudaMalloc would not fail with 35"
fi
need nm
nm "$prog" | grep -E ' [Tt] cudaMalloc$' >/dev/null || fail "cudaMalloc is not in $prog's symbol table"
! nm -D "$prog" | grep ' cudaMalloc$' >/dev/null || fail "cudaMalloc is dynamic in $prog: not a static build"

bpf_start_agent
prog_start static "$prog" 17
prog_wait_ready static
pid=${P_PID[static]}
! grep -q 'libcudart' "/proc/$pid/maps" || fail "libcudart mapped in the static program"
wait_attached "$prog"
prog_continue static
prog_wait_ready static

expect gpuwatch_cuda_api_calls_total == 17 pid="$pid" comm=prog_static api=cudaMalloc source=ebpf
expect gpuwatch_cuda_api_errors_total == 17 pid="$pid" api=cudaMalloc code=35 source=ebpf
expect_now gpuwatch_cuda_api_errors_total == 17 pid="$pid"
expect_zero gpuwatch_cuda_memory_live_bytes pid="$pid"
ok "static cudart: 17 calls, 17 errors with code 35"

prog_continue static
prog_wait_exit static 0
expect gpuwatch_process_exits_total == 1 comm=prog_static reason=clean
stop_agent
