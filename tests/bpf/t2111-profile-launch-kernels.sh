#!/usr/bin/env bash
# Launch call paths joined with the CUPTI layer's kernels: a process with
# the injection library (the fake libcupti playing CUPTI and the driver)
# launches vecAdd through cudaLaunchKernel (its host stub, joined by
# symbol) and gemm through cuLaunchKernel (a CUfunction the library saw
# cuModuleGetFunction hand out, joined by handle).  type=launches ends each
# path in "[kernel] NAME"; type=gpu_time weighs the same paths by the
# kernels' GPU time from CUPTI (10 us and 2 ms a launch); a process without
# the library keeps its paths without a kernel (t2108).
. "$(dirname "$0")/prof_lib.sh"
prof_require
[ -n "${CUPTI_INJECT:-}" ] && [ -n "${FAKE_CUPTI:-}" ] ||
	skip "the CUPTI injection library is not built"
[ -x "$BPF_FIXTURES/prog_kjoin" ] || skip "prog_kjoin is not built"

ring_dir="$T_DIR/rings"
mkdir -p "$ring_dir"
prof_start_agent --profile gpu --log-level debug --cupti-dir "$ring_dir" --interval 0.2

name=t2111-kjoin
ln -s "$BPF_FIXTURES/prog_kjoin" "$T_DIR/$name"
# The sanitizers' runtimes must come first in a process whose executable
# does not carry them, when the injection library was built with them.
preload=""
for rt in $(ldd "$CUPTI_INJECT" | awk '/lib(asan|ubsan|tsan)\.so/ { print $3 }'); do
	preload="$preload:$rt"
done
preload="${preload#:}"
prog_start "$name" ${preload:+LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0} \
	LD_LIBRARY_PATH="$STUB_DIR" GPUWATCH_CUPTI_DIR="$ring_dir" \
	GPUWATCH_CUPTI_INTERVAL_MS=50 FAKE_CUPTI="$FAKE_CUPTI" \
	CUPTI_INJECT="$CUPTI_INJECT" "$T_DIR/$name"
prog_wait_ready "$name"
pid=${P_PID[$name]}
wait_until 'grep -q "profile: launch call paths from .*libcudart.so.13" "$T_DIR/agent.log" &&
	grep -q "profile: launch call paths from .*libcuda.so.1" "$T_DIR/agent.log"' 30 \
	"no launch probes on the stub libraries"
# This process (not only the libraries: another may have mapped them).
wait_until 'grep -q "profile: pid $pid selected" "$T_DIR/agent.log"' 30 \
	"pid $pid is not selected for profiling"
# The CUPTI layer has read both kernels of the process.
EXPECT_SECS=30 expect gpuwatch_cuda_kernel_launches_total ">=" 2 pid="$pid"
prog_continue "$name"
prog_wait_ready "$name" 60

get() {
	prof_get "{pid=\"$pid\"}" folded --data-urlencode "type=$1" >"$T_DIR/$1"
}
# Every 16th launch per CPU: the count is within 16 per CPU of the truth.
slack=$((16 * $(nproc) * 2))
# path_sum FILE REGEX: the count of the paths matching REGEX.
path_sum() {
	awk -v re="$2" '$0 ~ re { t += $NF } END { printf "%.0f\n", t }' "$1"
}
vec_re=';launch_vecadd;cudaLaunchKernel;\[kernel\] (vecAdd\(float\*, float\*, float\*, int\)|_Z6vecAddPfS_S_i) [0-9]+$'
gemm_re=';launch_gemm;cuLaunchKernel;\[kernel\] (void gemm<128>\(float const\*, float const\*, float\*, int, int, int\)|_Z4gemmILi128EEvPKfS1_Pfiii) [0-9]+$'
# The samples reach the profiles some time after the program made them,
# the launches before their GPU time: read both until each path holds as
# many launches as must come and the GPU time has caught up with them
# (or 30 s pass), then check what was read.
read_profiles() {
	get launches
	get gpu_time
	vec=$(path_sum "$T_DIR/launches" "$vec_re")
	gemm=$(path_sum "$T_DIR/launches" "$gemm_re")
	vec_ns=$(path_sum "$T_DIR/gpu_time" "$vec_re")
	gemm_ns=$(path_sum "$T_DIR/gpu_time" "$gemm_re")
	[ "$vec" -ge $((3200 - slack)) ] && [ "$gemm" -ge $((1600 - slack)) ] &&
		[ "$vec_ns" -eq $((vec * 10000)) ] && [ "$gemm_ns" -eq $((gemm * 2000000)) ]
}
deadline=$(($(now_ms) + 30000))
until read_profiles || [ "$(now_ms)" -ge $deadline ]; do
	sleep 0.2
done
all=$(prof_total "$T_DIR/launches")
num_cmp "$vec" ">=" $((3200 - slack)) ||
	fail "vecAdd launches under launch_vecadd: $vec of 3200: $(head -n 5 "$T_DIR/launches")"
num_cmp "$gemm" ">=" $((1600 - slack)) ||
	fail "gemm launches under launch_gemm: $gemm of 1600: $(head -n 5 "$T_DIR/launches")"
num_cmp $((vec + gemm)) "==" "$all" ||
	fail "$((all - vec - gemm)) of $all launches have no kernel: $(grep -v '\[kernel\]' "$T_DIR/launches" | head -n 3)"
expect gpuwatch_profile_launch_joins_total ">=" $(((vec + gemm) / 16)) result=kernel
ok "launch paths end in their kernel: $vec x vecAdd (by host stub), $gemm x gemm (by CUfunction)"

# Each kernel's mean GPU time from CUPTI, times its launches.
num_cmp "$vec_ns" "==" $((vec * 10000)) ||
	fail "vecAdd GPU time $vec_ns ns, expected $vec x 10 us: $(cat "$T_DIR/gpu_time")"
num_cmp "$gemm_ns" "==" $((gemm * 2000000)) ||
	fail "gemm GPU time $gemm_ns ns, expected $gemm x 2 ms: $(cat "$T_DIR/gpu_time")"
"$GPUWATCH" profile --url "$URL" --pid "$pid" --gpu-time --folded --since 10m >"$T_DIR/cli" ||
	fail "gpuwatch profile --gpu-time failed"
cmp -s <(sort "$T_DIR/cli") <(sort "$T_DIR/gpu_time") ||
	fail "gpuwatch profile --gpu-time differs from the API: $(head -n 3 "$T_DIR/cli")"
ok "type=gpu_time: gemm's path $gemm_ns ns, vecAdd's $vec_ns ns (CUPTI's 2 ms and 10 us a launch)"

# pprof: one sample type, gpu_time in nanoseconds, that go tool pprof reads.
if command -v go >/dev/null 2>&1; then
	prof_get "{pid=\"$pid\"}" pprof --data-urlencode type=gpu_time >"$T_DIR/gpu.pb.gz"
	HOME="$T_DIR" GOCACHE="$T_DIR/gocache" go tool pprof -raw "$T_DIR/gpu.pb.gz" \
		>"$T_DIR/gpu.raw" 2>"$T_DIR/gpu.err" ||
		fail "go tool pprof cannot read the gpu_time profile: $(cat "$T_DIR/gpu.err")"
	grep -q '^Samples:' "$T_DIR/gpu.raw" && grep -Eq '^gpu_time/nanoseconds$' "$T_DIR/gpu.raw" ||
		fail "the gpu_time pprof's sample type: $(head -n 3 "$T_DIR/gpu.raw")"
	total=$(HOME="$T_DIR" GOCACHE="$T_DIR/gocache" go tool pprof -top "$T_DIR/gpu.pb.gz" 2>/dev/null |
		sed -n 's/.*of \([0-9.]*\)\(m*s\) total.*/\1 \2/p' | head -n 1)
	ok "go tool pprof reads the gpu_time profile (gpu_time/nanoseconds; top says $total total)"
fi

prog_continue "$name"
prog_wait_exit "$name" 0
stop_agent
