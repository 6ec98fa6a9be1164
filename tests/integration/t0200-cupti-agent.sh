#!/usr/bin/env bash
# The agent reads the ring of a CUDA process: the injection library, loaded
# the way the driver loads it and fed by the fake libcupti (inject_host
# basic), reports kernels, copies, memory, an OOM and API errors; the
# agent publishes them under the process's pid with demangled kernel names,
# and when the process exits its series go and its ring file is removed.
. "$(dirname "$0")/lib.sh"
need curl
[ -n "${CUPTI_INJECT:-}" ] && [ -n "${FAKE_CUPTI:-}" ] && [ -n "${CUPTI_TEST_BIN:-}" ] ||
	skip "the CUPTI injection library is not built"
[ -x "$CUPTI_TEST_BIN/inject_host" ] || skip "inject_host is not built"

ring_dir="$T_DIR/rings"
mkdir -p "$ring_dir"
start_agent --simulate 1 --no-ebpf --no-store --interval 0.2 --cupti-dir "$ring_dir" \
	--exited-grace 2s

# The CUDA process: runs its scenario, says "ready", waits for EOF.
cupti_host_start basic
cupti_host_ready
[ "$pid" = "$host_pid" ] || fail "inject_host says pid $pid, started as $host_pid"
[ -f "$ring" ] || fail "ring $ring is not there"

# series NAME SUBSTRING...: the value of the first series of NAME whose
# line holds every substring.
series() {
	local name="$1" m
	shift
	m="$(scrape)" || return 1
	awk -v n="$name" -v subs="$(printf '%s\034' "$@")" '
		BEGIN { k = split(subs, s, "\034") - 1 }
		$1 ~ ("^" n "([{]|$)") {
			for (i = 1; i <= k; i++) if (s[i] != "" && !index($0, s[i])) next
			print $NF; exit
		}' <<<"$m"
}

# expect NAME VALUE SUBSTRING...: polls until the series has VALUE.
expect() {
	local name="$1" want="$2" got=""
	shift 2
	local deadline=$(($(now_ms) + 15000))
	while [ "$(now_ms)" -lt $deadline ]; do
		got="$(series "$name" "$@" || true)"
		if [ -n "$got" ] && awk -v a="$got" -v b="$want" 'BEGIN { exit !(a + 0 == b + 0) }'; then
			return 0
		fi
		sleep 0.1
	done
	fail "$name{$*} is '$got', expected $want"
}

P="pid=\"$pid\""
expect gpuwatch_cupti_status 1 "$P" 'status="ok"'
# The kernels' series may come after the status's: how their names read
# is judged once there are some.
wait_until 'scrape | found "^gpuwatch_cuda_kernel_launches_total{.*$P"' 15 "no kernel series of $P"
if scrape | found 'kernel="_Z6vecAddPfS_S_i"'; then
	# Built without libiberty: names stay mangled.
	vecadd='_Z6vecAddPfS_S_i'
	gemm='_Z4gemmILi128EEvPKfS1_Pfiii'
	echo "note [$T_NAME]: kernel names are not demangled in this build"
else
	vecadd='vecAdd(float*, float*, float*, int)'
	gemm='void gemm<128>(float const*, float const*, float*, int, int, int)'
fi
expect gpuwatch_cuda_kernel_launches_total 1000 "$P" "kernel=\"$vecadd\""
expect gpuwatch_cuda_kernel_launches_total 10 "$P" "kernel=\"$gemm\""
ok "kernel launches by demangled name"
expect gpuwatch_cuda_kernel_duration_seconds_count 1000 "$P" "kernel=\"$vecadd\""
# 10 us launches: all below the 2^14 ns bound, none below 2^13 ns.
expect gpuwatch_cuda_kernel_duration_seconds_bucket 1000 "$P" "kernel=\"$vecadd\"" 'le="1.6384e-05"'
expect gpuwatch_cuda_kernel_duration_seconds_bucket 0 "$P" "kernel=\"$vecadd\"" 'le="8.192e-06"'
expect gpuwatch_cuda_kernel_duration_seconds_sum 0.01 "$P" "kernel=\"$vecadd\""
expect gpuwatch_cuda_kernel_duration_recent_seconds 1e-05 "$P" "kernel=\"$vecadd\""
expect gpuwatch_cuda_kernel_duration_recent_seconds 0.002 "$P" "kernel=\"$gemm\""
expect gpuwatch_cuda_kernel_registers_per_thread 128 "$P" "kernel=\"$gemm\""
expect gpuwatch_cuda_kernel_shared_memory_bytes 49152 "$P" "kernel=\"$gemm\""
expect gpuwatch_cuda_kernel_block_threads 256 "$P" "kernel=\"$vecadd\""
expect gpuwatch_cuda_kernel_grid_blocks 4096 "$P" "kernel=\"$gemm\""
ok "kernel durations and launch configuration"
expect gpuwatch_cuda_memcpy_bytes_total 3145728 "$P" 'kind="htod"'
expect gpuwatch_cuda_memcpy_operations_total 3 "$P" 'kind="htod"'
expect gpuwatch_cuda_memcpy_bytes_total 1048576 "$P" 'kind="dtoh"'
expect gpuwatch_cuda_memcpy_bytes_total 4096 "$P" 'kind="memset"'
expect gpuwatch_cuda_memory_allocated_bytes 2097152 "$P"
expect gpuwatch_cuda_memory_allocated_peak_bytes 3145728 "$P"
expect gpuwatch_cuda_memory_allocations_total 3 "$P" 'op="alloc"'
expect gpuwatch_cuda_memory_allocations_total 1 "$P" 'op="free"'
expect gpuwatch_cuda_oom_total 1 "$P"
expect gpuwatch_cuda_contexts_total 1 "$P" 'event="created"'
ok "copies, memory and one OOM"
expect gpuwatch_cuda_api_errors_total 1 "$P" 'api="cudaMemcpy"' 'code="1"' 'source="cupti"'
expect gpuwatch_cuda_api_errors_total 1 "$P" 'api="cudaMalloc"' 'code="2"' 'source="cupti"'
expect gpuwatch_cuda_sync_calls_total 5 "$P" 'api="cudaDeviceSynchronize"' 'source="cupti"'
expect gpuwatch_cupti_sampling_ratio 1 "$P"
expect gpuwatch_cupti_rings 1
ok "API errors, synchronisation and status"
check_promtool

# The process ends: its last summary is read, its ring file is removed and
# its series go once --exited-grace has passed (t0204 covers the grace).
exec 3>&-
rc=0
wait "$host_pid" || rc=$?
[ $rc -eq 0 ] || fail "inject_host exited with $rc: $(cat "$T_DIR/host.err")"
wait_until '[ -z "$(series gpuwatch_cuda_kernel_launches_total "$P")" ]' 15 \
	"the exited process's kernel series are still there"
wait_until '[ ! -e "$ring" ]' 15 "the exited process's ring $ring is still there"
expect gpuwatch_cupti_rings 0
[ "$(series gpuwatch_cupti_rings_refused_total 'reason="header"')" = 0 ] ||
	fail "a ring was refused: $(scrape | grep refused_total)"
ok "the exited process's series and ring file are gone"
stop_agent
