#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and driver: libgpuwatch_cupti.so injected
# with CUDA_INJECTION64_PATH into an unmodified program (tests/cupti/vecadd)
#   1. kernel counts reach the agent equal to the launches, and the GPU time
#      it reports agrees with the program's own CUDA-event timing;
#   2. the slowdown it causes, as ratios of wall time with and without it:
#      a launch-bound loop (a million empty kernels) and a realistic loop
#      (tiled matrix multiply + elementwise kernel + a copy every 10 steps),
#      each run alternately 3 times, medians compared.
# Skipped (exit 77) without a GPU.  Timing is reported, never judged.
set -euo pipefail
: "${GPUWATCH:?}"
command -v nvidia-smi >/dev/null 2>&1 || { echo "SKIP: no nvidia-smi"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU answers"; exit 77; }
[ -n "${CUPTI_INJECT:-}" ] && [ -x "${CUPTI_TEST_BIN:-}/vecadd" ] ||
	{ echo "SKIP: injection library or vecadd not built"; exit 77; }
prog="$CUPTI_TEST_BIN/vecadd"
TINY="${TINY:-1000000}"
LOOP="${LOOP:-200}"

tmp="$(mktemp -d)"
agent=""
trap '[ -n "$agent" ] && kill -9 $agent 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/rings"
# A sanitizer build of the library needs its runtime first in the process.
preload=""
for rt in $(ldd "$CUPTI_INJECT" | awk '/lib(asan|ubsan|tsan)\.so/ { print $3 }'); do
	preload="$preload:$rt"
done
preload="${preload#:}"
inject() {
	LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 \
		CUDA_INJECTION64_PATH="$CUPTI_INJECT" GPUWATCH_CUPTI_DIR="$tmp/rings" "$@"
}

"$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$tmp/data" --no-store \
	--cupti-dir "$tmp/rings" --cpu-budget 1 2>"$tmp/log" &
agent=$!
url=""
for _ in $(seq 1 300); do
	url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$tmp/log" | head -n1)"
	[ -n "$url" ] && curl -fsS "$url/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
[ -n "$url" ] || { echo "FAIL: agent did not start"; cat "$tmp/log"; exit 1; }

fails=0
# 1. Counts and durations.
mkfifo "$tmp/in"
inject "$prog" check --launches 1000 --hold <"$tmp/in" >"$tmp/out" 2>&1 &
p=$!
exec 7>"$tmp/in"
for _ in $(seq 1 300); do grep -q '^ready ' "$tmp/out" && break; sleep 0.1; done
event_ms="$(awk '/^event_ms/ { print $2 }' "$tmp/out")"
launches="" sum=""
for _ in $(seq 1 100); do
	curl -fsS "$url/metrics" >"$tmp/m"
	launches="$(awk -v p="pid=\"$p\"" '/^gpuwatch_cuda_kernel_launches_total[{]/ && index($0, p) && /vecAdd/ { print $NF }' "$tmp/m")"
	sum="$(awk -v p="pid=\"$p\"" '/^gpuwatch_cuda_kernel_duration_seconds_sum[{]/ && index($0, p) && /vecAdd/ { print $NF }' "$tmp/m")"
	[ "${launches:-0}" = 1000 ] && break
	sleep 0.2
done
exec 7>&-
wait $p || true
awk -f "$(dirname "$0")/../integration/unique-series.awk" "$tmp/m" ||
	{ echo "FAIL: /metrics repeats a series"; exit 1; }
grep -E '^gpuwatch_cupti_(status|sampling_ratio)[{].*pid="'"$p"'"' "$tmp/m" || true
if [ "${launches:-}" = 1000 ]; then
	echo "ok: 1000 launches of vecAdd, the agent counted $launches"
else
	echo "FAIL: 1000 launches of vecAdd, the agent counted '${launches:-}'"; fails=$((fails + 1))
fi
if awk -v s="${sum:-0}" -v e="${event_ms:-0}" 'BEGIN { r = s * 1000 / e; exit !(e > 0 && r > 0.7 && r < 1.05) }'; then
	echo "ok: kernel GPU time ${sum}s vs CUDA events ${event_ms} ms"
else
	echo "FAIL: kernel GPU time '${sum:-}'s vs CUDA events '${event_ms:-}' ms"; fails=$((fails + 1))
fi

# 2. Slowdown, alternating runs, medians.
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for mode in "tiny $TINY" "loop $LOOP"; do
	: >"$tmp/base"; : >"$tmp/inj"
	for _ in 1 2 3; do
		"$prog" $mode | awk '{ print $(NF - 1) }' >>"$tmp/base"
		inject "$prog" $mode | awk '{ print $(NF - 1) }' >>"$tmp/inj"
	done
	b="$(median <"$tmp/base")"; i="$(median <"$tmp/inj")"
	awk -v m="${mode%% *}" -v b="$b" -v i="$i" 'BEGIN {
		printf "slowdown %s: %.4f s without, %.4f s with injection, ratio %.4f (%+.2f%%)\n",
			m, b, i, i / b, (i / b - 1) * 100 }'
done
kill -TERM $agent; wait $agent || true; agent=""
[ $fails -eq 0 ]
