#!/usr/bin/env bash
# A CUDA program that runs for a few milliseconds is seen whole, and stays
# on /metrics after it exited:
#   - the host's libcudart.so.13 (the toolkit's, in the loader's cache) is
#     probed from the start, before any process maps it;
#   - a library that appears after the start, in a folder that a
#     --cuda-lib-glob pattern could match in, is probed as it appears;
#   - a program on that library, started with the agent already running
#     and run to its end without waiting, has its 5 calls counted; no other
#     process can have that private copy mapped, so nothing but the attach
#     ahead of time can have seen them;
#   - after it exited its series stay, beside
#     gpuwatch_process_exited_timestamp_seconds, for --exited-grace (3 s
#     here), then leave /metrics; its history stays queryable.
. "$(dirname "$0")/lib.sh"
bpf_require
need python3
prog="$BPF_FIXTURES/prog_cudart_real"
[ -x "$prog" ] || skip "prog_cudart_real not built (no CUDA toolkit found)"
if [ -e /proc/driver/nvidia/version ] || ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
	skip "a CUDA driver is installed: cudaMalloc would not fail with 35"
fi
cudart="$(ldd "$prog" | awk '$1 == "libcudart.so.13" && $2 == "=>" { print $3 }')"
[ -f "$cudart" ] || fail "the loader does not resolve libcudart.so.13 for $prog"
ldconfig -p 2>/dev/null | found -F "$(dirname "$(readlink -f "$cudart")")/libcudart.so" ||
	skip "the loader's cache does not list $cudart"

mkdir "$T_DIR/cuda"
bpf_start_agent --cuda-lib-glob "$T_DIR/cuda/*/libcudart.so*" --exited-grace 3s \
	--interval 0.2
wait_attached "$cudart" 10
ok "the loader's libcudart.so.13 probed from the start"

# A new folder, then the library in it (an old modification time: a
# finished copy, as a package manager leaves it).
mkdir "$T_DIR/cuda/lib"
cp -p "$(readlink -f "$cudart")" "$T_DIR/cuda/lib/libcudart.so.13"
copy="$T_DIR/cuda/lib/libcudart.so.13"
wait_attached "$copy" 10
ok "a library that appeared after the start is probed"

[ "$(LD_LIBRARY_PATH="$T_DIR/cuda/lib" ldd "$prog" |
	awk '$1 == "libcudart.so.13" { print $3 }')" = "$copy" ] ||
	fail "$prog would not load $copy"
t0=$(now_ms)
LD_LIBRARY_PATH="$T_DIR/cuda/lib" "$prog" 5 </dev/null >"$T_DIR/short.out" 2>"$T_DIR/short.err" &
pid=$!
rc=0
wait "$pid" || rc=$?
t1=$(now_ms)
[ $rc -eq 0 ] || fail "the program exited with $rc: $(cat "$T_DIR/short.err")"
echo "# the program ran for $((t1 - t0)) ms, from start to reaped"

# It is gone before the first look: whatever is there stayed after exit.
# The marker comes with the pass that read the process's last counts: one
# scrape that has it shows the final values too, whatever the timing.
deadline=$(($(now_ms) + 15000))
SCRAPED=""
while :; do
	m="$(scrape)" || fail "scrape failed"
	[ -n "$(SCRAPED="$m" metric_series gpuwatch_process_exited_timestamp_seconds pid="$pid")" ] && break
	[ "$(now_ms)" -lt $deadline ] || fail "no gpuwatch_process_exited_timestamp_seconds{pid=\"$pid\"} within 15 s; $(metric_series gpuwatch_cuda_api_calls_total pid="$pid")"
	sleep 0.1
done
SCRAPED="$m"
expect_now gpuwatch_cuda_api_calls_total == 5 pid="$pid" comm=prog_cudart_rea api=cudaMalloc source=ebpf
expect_now gpuwatch_cuda_api_errors_total == 5 pid="$pid" api=cudaMalloc code=35 source=ebpf
expect_now gpuwatch_cuda_api_duration_seconds_count == 5 pid="$pid" api=cudaMalloc
ok "5 calls, 5 errors, 5 timings of a finished short program"
expect_now gpuwatch_process_exited_timestamp_seconds '>=' "$((t0 / 1000 - 1))" pid="$pid" comm=prog_cudart_rea
expect_now gpuwatch_process_exited_timestamp_seconds '<=' "$((t1 / 1000 + 2))" pid="$pid"
# One series per label set, lingering or not.
dups="$(grep -v '^#' <<<"$m" | awk '{ $NF = ""; print }' | sort | uniq -d)"
[ -z "$dups" ] || fail "series exposed twice: $dups"
SCRAPED=""
expect gpuwatch_process_exits_total == 1 comm=prog_cudart_rea reason=clean
ok "its series stay after exit, marked with its exit time"

deadline=$(($(now_ms) + 20000))
while [ -n "$(metric_series gpuwatch_cuda_api_calls_total pid="$pid")$(metric_series gpuwatch_process_exited_timestamp_seconds pid="$pid")" ]; do
	[ "$(now_ms)" -lt $deadline ] || fail "pid $pid's series still on /metrics 20 s after its exit (grace 3 s)"
	sleep 0.2
done
# And they do not come back.
expect_zero gpuwatch_cuda_api_calls_total pid="$pid"
expect_zero gpuwatch_process_exited_timestamp_seconds pid="$pid"
ok "gone from /metrics once the grace has passed"

# The history keeps them.
q="max_over_time(gpuwatch_cuda_api_calls_total{pid=\"$pid\",api=\"cudaMalloc\"}[5m])"
wait_until "curl -fsS -G '$URL/api/v1/query' --data-urlencode 'query=$q' |
	python3 -c 'import json, sys
r = json.load(sys.stdin)[\"data\"][\"result\"]
sys.exit(not (len(r) == 1 and float(r[0][\"value\"][1]) == 5))'" 15 \
	"the history has no 5 calls for pid $pid ($q)"
ok "the history has the 5 calls"
stop_agent
