#!/usr/bin/env bash
# eBPF probe costs, measured against baselines in the same run (root only):
#  1. added cost per call: N cudaLaunchKernel calls on the stub library
#     without the agent, then with the agent's probes attached (no duty
#     cycling), as ns per call and as a ratio;
#  2. the governor: the same launch storm with the default --ebpf-budget
#     (1% of the process's CPU); the share of calls observed, the estimated
#     probe cost against the process's CPU, and the slowdown;
#  3. the agent's own CPU while the storm runs at full speed, per 100k
#     probe events per second.
#
# usage: bench/ebpf.sh [BUILD_DIR]    (a release build with eBPF: make)
set -euo pipefail

build="${1:-build}"
bin="$build/gpuwatch"
fx="$build/tests/bpf"
calls="${CALLS:-300000}"
# The governor needs a process that lives: ~30 s of calls at full speed.
gov_calls="${GOV_CALLS:-4000000000}"
tmp="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "needs root (eBPF)" >&2; exit 1; }
[ -x "$fx/prog_cuda" ] || { echo "build the fixtures first (make)" >&2; exit 1; }

cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
metric() { curl -fsS "$url/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }

# storm N: runs N launches on the stub in one process (in words of at most
# 10M calls); prints "wall_s cpu_s".
storm() {
	local t0 t1 left="$1" words=()
	local TIMEFORMAT='%U %S'
	while [ "$left" -gt 0 ]; do
		words+=(launch $((left > 10000000 ? 10000000 : left)))
		left=$((left - 10000000))
	done
	t0=$(date +%s.%N)
	{ time LD_LIBRARY_PATH="$fx/stub" "$fx/prog_cuda" "${words[@]}" 2>/dev/null; } 2>"$tmp/time"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" '{ printf "%.4f %.4f", b - a, $1 + $2 }' "$tmp/time"
}

start() {
	"$bin" agent --listen 127.0.0.1:0 --data-dir "$tmp/data.$1" "${@:2}" 2>"$tmp/log.$1" &
	pid=$!
	url=""
	for _ in $(seq 1 300); do
		url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$tmp/log.$1" | head -n1)"
		[ -n "$url" ] && grep -q "probes loaded" "$tmp/log.$1" && break
		sleep 0.05
	done
	grep -q "probes loaded" "$tmp/log.$1" || { echo "probes did not load: $(cat "$tmp/log.$1")" >&2; exit 1; }
}
stop() { kill -TERM $pid; wait $pid || true; pid=""; }

echo "gpuwatch eBPF benchmark: $calls cudaLaunchKernel calls per run, $(nproc) cores"
storm 1000 >/dev/null # warm the page cache
read -r base_wall base_cpu <<<"$(storm "$calls")"
read -r gbase_wall gbase_cpu <<<"$(storm "$gov_calls")"

# first contact: a process that lives long enough for the agent to find the
# stub in its maps and attach (probes stay on the file after it exits)
warm() {
	LD_LIBRARY_PATH="$fx/stub" "$fx/prog_cuda" sleep 1500 launch 1 >/dev/null 2>&1
	for _ in $(seq 1 100); do
		grep -q "attached .* probes to .*stub/libcudart" "$tmp/log.$1" && return 0
		sleep 0.1
	done
	echo "the agent never attached to the stub: $(cat "$tmp/log.$1")" >&2
	exit 1
}

start full --ebpf-budget 1
warm full
h0=$(metric gpuwatch_ebpf_probe_hits_total); a0=$(cpu_ns $pid); t0=$(date +%s.%N)
read -r probe_wall probe_cpu <<<"$(storm "$calls")"
t1=$(date +%s.%N); a1=$(cpu_ns $pid); sleep 1.5; h1=$(metric gpuwatch_ebpf_probe_hits_total)
hit_cost=$(metric gpuwatch_ebpf_probe_hit_cost_seconds)
stop

start gov
warm gov
g0=$(metric gpuwatch_ebpf_probe_hits_total)
read -r gov_wall gov_cpu <<<"$(storm "$gov_calls")"
sleep 1.5
g1=$(metric gpuwatch_ebpf_probe_hits_total)
duty_log="$(grep -o 'high-rate probes now on [0-9.]*%' "$tmp/log.gov" | tail -n1 || true)"
stop

awk -v n="$calls" -v bw="$base_wall" -v bc="$base_cpu" -v pw="$probe_wall" -v pc="$probe_cpu" \
	-v h="$((h1 - h0))" -v acpu="$((a1 - a0))" -v at="$t0" -v bt="$t1" -v hc="$hit_cost" \
	-v gw="$gov_wall" -v gc="$gov_cpu" -v gh="$((g1 - g0))" -v duty="$duty_log" -v gn="$gov_calls" -v gbw="$gbase_wall" '
BEGIN {
	printf "\n1. probes attached vs detached, same calls\n"
	printf "   without probes: %.3f s wall, %.0f ns per call\n", bw, 1e9 * bw / n
	printf "   with probes:    %.3f s wall, %.0f ns per call  (ratio %.1fx)\n", pw, 1e9 * pw / n, pw / bw
	printf "   added cost:     %.0f ns per call, %.0f ns per observed call; calibrated hit cost %.0f ns\n",
		1e9 * (pw - bw) / n, 1e9 * (pw - bw) / (h > 0 ? h : 1), 1e9 * hc
	printf "   calls observed: %d of %d (even at --ebpf-budget 1 the governor steps in when the\n", h, n
	printf "   probe costs more than the call itself)\n"
	printf "\n2. governor at the default budget (1%% of the process CPU), %.0f calls in one process\n", gn
	printf "   %.1f s; calls observed: %d (%.3f%%); last: %s\n", gw, gh, 100 * gh / gn, duty
	printf "   (the first %d s run at full rate before the governor has a reading)\n", 2
	printf "   estimated probe cost: %.2f%% of the process CPU; the storm took %.2fx as long as without probes (%.1f s)\n",
		100 * gh * hc / gc, gw / gbw, gbw
	rate = h / (bt - at)
	printf "\n3. agent CPU during the storm: %.0f probe events/s, agent %.2f%% of a core, %.3f%% per 100k events/s\n",
		rate, 100 * acpu / 1e9 / (bt - at), 100 * acpu / 1e9 / (bt - at) * 100000 / rate
}'
