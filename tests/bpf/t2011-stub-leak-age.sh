#!/usr/bin/env bash
# --leak-age 1: live allocations older than a second are reported as
# suspected leaks, exactly those bytes; a free takes its bytes out of the
# suspects, and a fresh allocation joins them only once it is a second old.
. "$(dirname "$0")/lib.sh"
bpf_require
# --interval 0.2: published every 200 ms, so that a fresh allocation can
# be seen while it is younger than the age.
bpf_start_agent --leak-age 1 --ebpf-budget 1 --interval 0.2

stub_prog t2011-leak -- wait \
	malloc 1000 cumalloc 20000 malloc 300000 free 0 wait \
	cufree 1 wait \
	malloc 4000 wait \
	exit 0
prog_wait_ready t2011-leak
pid=${P_PID[t2011-leak]}
wait_attached "$STUB_DIR/libcudart.so.13"
wait_attached "$STUB_DIR/libcuda.so.1"
prog_continue t2011-leak
prog_wait_ready t2011-leak

expect gpuwatch_cuda_memory_live_bytes == 320000 pid="$pid"
expect gpuwatch_cuda_memory_live_allocations == 2 pid="$pid"
expect gpuwatch_cuda_memory_leak_suspect_bytes == 320000 pid="$pid" comm=t2011-leak
ok "both live allocations become leak suspects"

prog_continue t2011-leak
prog_wait_ready t2011-leak
expect gpuwatch_cuda_memory_live_bytes == 300000 pid="$pid"
expect gpuwatch_cuda_memory_leak_suspect_bytes == 300000 pid="$pid"
ok "a freed suspect leaves the suspects"

# The fresh 4000 bytes: read live and suspects from one scrape, taken
# while the allocation is certainly younger than the age.
start=$(now_ms)
prog_continue t2011-leak
prog_wait_ready t2011-leak
while :; do
	SCRAPED="$(scrape)"
	age=$(($(now_ms) - start))
	[ "$(metric_sum gpuwatch_cuda_memory_live_bytes pid="$pid")" = 304000 ] && break
	[ $age -lt 15000 ] || fail "live bytes never reached 304000"
	sleep 0.05
done
if [ $age -lt 800 ]; then
	got="$(metric_sum gpuwatch_cuda_memory_leak_suspect_bytes pid="$pid")"
	[ "$got" = 300000 ] || fail "a ${age} ms old allocation counted as leak: suspects $got, expected 300000"
	ok "a young allocation is not a suspect (${age} ms)"
else
	echo "note [$T_NAME]: live bytes took ${age} ms to show; young-allocation check not possible"
fi
SCRAPED=""
expect gpuwatch_cuda_memory_leak_suspect_bytes == 304000 pid="$pid"
ok "and becomes one after a second"

prog_continue t2011-leak
prog_wait_exit t2011-leak 0
expect gpuwatch_process_exits_total == 1 comm=t2011-leak reason=clean
stop_agent
