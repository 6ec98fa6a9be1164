#!/usr/bin/env bash
# A library loaded with dlopen() after exec, as PyTorch and JAX load CUDA
# (and as libcudart itself loads libcuda.so.1): nothing of CUDA is mapped
# at exec, the agent still finds the library and counts the calls.
. "$(dirname "$0")/lib.sh"
bpf_require
prog="$BPF_FIXTURES/prog_dlopen"
[ -x "$prog" ] || fail "fixture not built: $prog"
bpf_start_agent

prog_start late LD_LIBRARY_PATH="$STUB_DIR" "$prog" 9
prog_wait_ready late
pid=${P_PID[late]}
! grep -q libcudart "/proc/$pid/maps" || fail "libcudart mapped before dlopen"
prog_continue late
prog_wait_ready late
grep -qF "$STUB_DIR/libcudart.so.13" "/proc/$pid/maps" || fail "the stub is not mapped after dlopen"
wait_attached "$STUB_DIR/libcudart.so.13" 20
prog_continue late
prog_wait_ready late

expect gpuwatch_cuda_api_calls_total == 9 pid="$pid" comm=prog_dlopen api=cudaMalloc source=ebpf
expect gpuwatch_cuda_memory_live_bytes == 9437184 pid="$pid"
ok "dlopen'd library found, 9 calls, 9 MiB live"
prog_continue late
prog_wait_exit late 0
stop_agent
