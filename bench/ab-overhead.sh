#!/usr/bin/env bash
# A/B of two builds' overhead in the same minute: the old and the new agent
# run side by side with the same arguments (8 fake NVML GPUs, then
# --simulate 8; 1 s / 30 s intervals, StatsD on), and their CPU (every
# thread's schedstat) is compared over DURATION seconds (default 60) after
# a 10 s warm-up.  Running both at once puts them under the same load, which
# sequential runs of bench/overhead.sh cannot.
#
# usage: bench/ab-overhead.sh OLD_BUILD_DIR NEW_BUILD_DIR
#        (e.g. a worktree of the previous commit, built with make)
set -euo pipefail
old="$1/gpuwatch" new="$2/gpuwatch" fake="$2/tests/fakes/full/libnvidia-ml.so.1"
duration="${DURATION:-60}"
for b in "$old" "$new"; do [ -x "$b" ] || { echo "no $b (make)" >&2; exit 1; }; done
[ -f "$fake" ] || { echo "the fake NVML is not built: $fake" >&2; exit 1; }
tmp="$(mktemp -d)"
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f", s }'; }
printf 'gpus 8\n' >"$tmp/nvml.script"
export GW_FAKE_NVML_SCRIPT="$tmp/nvml.script"

echo "A/B overhead: ${duration}s per scenario, both agents at once, $(nproc) cores"
printf '%-24s %12s %12s %9s\n' scenario "old %core" "new %core" new/old
for scen in "8 fake NVML GPUs" "--simulate 8"; do
	if [ "$scen" = "--simulate 8" ]; then args=(--simulate 8); else args=(--nvml-lib "$fake"); fi
	pids=()
	for side in old new; do
		bin=$old; [ $side = new ] && bin=$new
		"$bin" agent --listen 127.0.0.1:0 --data-dir "$tmp/$side.$RANDOM" \
			--statsd-listen 127.0.0.1:0 --interval 1 --detail-interval 30 \
			"${args[@]}" 2>"$tmp/log.$side" &
		pids+=($!)
	done
	sleep 10
	a0=$(cpu_ns "${pids[0]}"); b0=$(cpu_ns "${pids[1]}"); t0=$(date +%s.%N)
	sleep "$duration"
	a1=$(cpu_ns "${pids[0]}"); b1=$(cpu_ns "${pids[1]}"); t1=$(date +%s.%N)
	kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
	awk -v s="$scen" -v a=$((a1 - a0)) -v b=$((b1 - b0)) -v t0="$t0" -v t1="$t1" \
		'BEGIN { d = t1 - t0; printf "%-24s %12.4f %12.4f %8.3fx\n", s, 100 * a / 1e9 / d, 100 * b / 1e9 / d, b / a }'
done
