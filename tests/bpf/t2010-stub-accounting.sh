#!/usr/bin/env bash
# The stub libraries: call counts, argument decoding (allocation sizes, copy
# sizes for every kind) and live-memory accounting are exact, frees out of
# order included, through both the runtime and the driver API; an
# out-of-memory return is an error with its code, synchronisation wait is
# measured, and with the default --leak-age nothing young is a suspected
# leak.
. "$(dirname "$0")/lib.sh"
bpf_require
# A budget of 100% of the process's CPU: nothing is duty-cycled, so every
# launch and copy is counted.
bpf_start_agent --ebpf-budget 1

# Pointer list indices in the comments.
stub_prog t2010-acct -- wait \
	malloc 1048576 malloc 3000 malloc 65536 cumalloc 4096 cumalloc 12345 malloc 777 \
	free 2 free 0 cufree 4 \
	memcpy 100 h2d memcpy 200 d2h memcpy 300 d2d cuh2d 400 cud2h 500 \
	launch 7 culaunch 5 sync oom wait \
	free 5 cufree 3 wait \
	exit 0
#        0: 1048576 freed   1: 3000 live   2: 65536 freed
#        3: 4096 live, then freed   4: 12345 freed   5: 777 live, then freed
prog_wait_ready t2010-acct
pid=${P_PID[t2010-acct]}
c="comm=t2010-acct"
wait_attached "$STUB_DIR/libcudart.so.13"
wait_attached "$STUB_DIR/libcuda.so.1"
prog_continue t2010-acct
prog_wait_ready t2010-acct

# Calls, per symbol name.
expect gpuwatch_cuda_api_calls_total == 5 pid="$pid" $c api=cudaMalloc source=ebpf
expect gpuwatch_cuda_api_calls_total == 2 pid="$pid" api=cudaFree source=ebpf
expect gpuwatch_cuda_api_calls_total == 2 pid="$pid" api=cuMemAlloc_v2 source=ebpf
expect gpuwatch_cuda_api_calls_total == 1 pid="$pid" api=cuMemFree_v2 source=ebpf
expect gpuwatch_cuda_api_calls_total == 3 pid="$pid" api=cudaMemcpy source=ebpf
expect gpuwatch_cuda_api_calls_total == 1 pid="$pid" api=cuMemcpyHtoD_v2 source=ebpf
expect gpuwatch_cuda_api_calls_total == 1 pid="$pid" api=cuMemcpyDtoH_v2 source=ebpf
expect gpuwatch_cuda_api_calls_total == 7 pid="$pid" api=cudaLaunchKernel source=ebpf
expect gpuwatch_cuda_api_calls_total == 5 pid="$pid" api=cuLaunchKernel source=ebpf
expect gpuwatch_cuda_api_calls_total == 1 pid="$pid" api=cudaDeviceSynchronize source=ebpf
expect gpuwatch_cuda_api_calls_total == 28 pid="$pid"
ok "call counts per API, runtime and driver"
expect gpuwatch_ebpf_sampling_ratio == 1 pid="$pid"

# The one failure: cudaMalloc's out-of-memory, code 2.
expect gpuwatch_cuda_api_errors_total == 1 pid="$pid" api=cudaMalloc code=2 source=ebpf
expect_now gpuwatch_cuda_api_errors_total == 1 pid="$pid"
ok "out of memory counted as error code 2, nothing else"

# Bytes: allocation sizes (the failed 0xDEAD0000DEAD-byte request
# allocated nothing) and copy sizes.
expect gpuwatch_cuda_api_bytes_total == 1117889 pid="$pid" api=cudaMalloc
expect gpuwatch_cuda_api_bytes_total == 16441 pid="$pid" api=cuMemAlloc_v2
expect gpuwatch_cuda_api_bytes_total == 600 pid="$pid" api=cudaMemcpy
expect gpuwatch_cuda_api_bytes_total == 400 pid="$pid" api=cuMemcpyHtoD_v2
expect gpuwatch_cuda_api_bytes_total == 500 pid="$pid" api=cuMemcpyDtoH_v2
ok "bytes of allocations and of copies"

# Live: 3000 + 4096 + 777 bytes in 3 allocations; nothing is old enough
# to be a suspected leak under the default age.
expect gpuwatch_cuda_memory_live_bytes == 7873 pid="$pid" $c
expect gpuwatch_cuda_memory_live_allocations == 3 pid="$pid"
expect_zero gpuwatch_cuda_memory_leak_suspect_bytes pid="$pid"
ok "live bytes after frees out of order"

# cudaDeviceSynchronize sleeps 20 ms in the stub.
expect gpuwatch_cuda_sync_wait_seconds_total '>=' 0.02 pid="$pid"
expect_now gpuwatch_cuda_sync_wait_seconds_total '<' 2 pid="$pid"
expect gpuwatch_cuda_api_duration_seconds_count == 1 pid="$pid" api=cudaDeviceSynchronize
expect_now gpuwatch_cuda_api_duration_seconds_sum '>=' 0.02 pid="$pid" api=cudaDeviceSynchronize
expect_now gpuwatch_cuda_api_duration_seconds_sum '<' 2 pid="$pid" api=cudaDeviceSynchronize
expect_now gpuwatch_cuda_api_duration_seconds_bucket == 1 pid="$pid" api=cudaDeviceSynchronize le=+Inf
# No bucket below 20 ms holds the 20 ms call; every one from 1 s holds it.
metric_series gpuwatch_cuda_api_duration_seconds_bucket pid="$pid" api=cudaDeviceSynchronize |
	awk '{
		if (!match($0, /le="[^"]*"/)) next
		le = substr($0, RSTART + 4, RLENGTH - 5)
		if (le == "+Inf") next
		n++
		if (le + 0 < 0.02 && $NF + 0 != 0) { print "bucket le=" le " holds " $NF; bad = 1 }
		if (le + 0 >= 1 && $NF + 0 != 1) { print "bucket le=" le " holds " $NF; bad = 1 }
	}
	END { if (n == 0) print "no finite buckets"; exit (bad || n == 0) }' >"$T_DIR/buckets" ||
	fail "cudaDeviceSynchronize histogram: $(cat "$T_DIR/buckets")"
expect gpuwatch_cuda_api_duration_seconds_count == 7 pid="$pid" api=cudaLaunchKernel
expect_now gpuwatch_cuda_api_duration_seconds_bucket == 7 pid="$pid" api=cudaLaunchKernel le=+Inf
ok "sync wait and latency histogram"

# Two more frees: 3000 bytes left in one allocation.
prog_continue t2010-acct
prog_wait_ready t2010-acct
expect gpuwatch_cuda_memory_live_bytes == 3000 pid="$pid"
expect gpuwatch_cuda_memory_live_allocations == 1 pid="$pid"
expect gpuwatch_cuda_api_calls_total == 3 pid="$pid" api=cudaFree
expect gpuwatch_cuda_api_calls_total == 2 pid="$pid" api=cuMemFree_v2
# Nothing counted twice on the way.
expect_now gpuwatch_cuda_api_calls_total == 30 pid="$pid"
expect_now gpuwatch_cuda_api_errors_total == 1 pid="$pid"
expect_now gpuwatch_cuda_api_bytes_total == 1117889 pid="$pid" api=cudaMalloc
ok "later frees matched by address"

# A clean exit with memory still held is a clean exit.
prog_continue t2010-acct
prog_wait_exit t2010-acct 0
expect gpuwatch_process_exits_total == 1 $c reason=clean
expect_now gpuwatch_process_exits_total == 1 $c
expect_zero gpuwatch_process_abnormal_exits_with_gpu_memory_total $c
ok "clean exit"
stop_agent
