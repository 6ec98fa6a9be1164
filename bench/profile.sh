#!/usr/bin/env bash
# CPU profiling at 19 Hz on every CPU, side by side with `perf record -F 19
# -g -a` on the same workload, in the same run (root only):
#  1. CPU cost: the agent's profiler (its gw-prof thread and the BPF
#     program's own run time, from kernel.bpf_stats_enabled) against
#     perf record's process (user + system) over the same wall time, both
#     as a share of the machine (all CPUs);
#  2. agreement: the flat share of each function in the workload's samples
#     (ours from /api/v1/profile, perf's from `perf report --no-children`);
#     the overlap of the two distributions (sum of min(share) over the
#     top 20 of either) and how many of our top 20 are in perf's;
#  3. bytes stored per process-hour (gzip'd pprof rows in profiles.db).
#
# The workload: WORKERS copies of tests/bpf/prog_hot.c (two hot functions,
# 3:1, frame pointers) and one built without frame pointers (unwound from
# .eh_frame by the agent).  Both profilers sample every CPU.
#
# With MODE=gpu the workload needs a CUDA library mapped to be selected:
# PRELOAD names one (e.g. BUILD_DIR/tests/bpf/stub/libcudart.so.13).
#
# usage: bench/profile.sh [BUILD_DIR]   (SECS=60 WORKERS=2 MODE=all PRELOAD=)
set -euo pipefail

build="${1:-build}"
bin="$build/gpuwatch"
secs="${SECS:-60}"
preload="${PRELOAD:-}"
workers="${WORKERS:-2}"
mode="${MODE:-all}"
src="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
agent="" perf_pid="" pids=()
cleanup() {
	for p in "${pids[@]}" $perf_pid $agent; do
		kill -9 "$p" 2>/dev/null || true
	done
	[ -n "${stats_was:-}" ] && sysctl -qw kernel.bpf_stats_enabled="$stats_was" || true
	rm -rf "$tmp"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "needs root (eBPF, perf -a)" >&2; exit 1; }
command -v perf >/dev/null || { echo "needs perf (linux-perf)" >&2; exit 1; }
[ -x "$bin" ] || { echo "build first: $bin" >&2; exit 1; }

cc -O1 -fno-omit-frame-pointer -o "$tmp/bench_hot" "$src/tests/bpf/prog_hot.c"
cc -O1 -fomit-frame-pointer -o "$tmp/bench_nofp" "$src/tests/bpf/prog_hot.c"

stats_was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
ncpu=$(nproc)
cpu_s() { awk '{ printf "%.3f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
metric() {
	local m
	m="$(curl -fsS "$url/metrics")" || return 1
	awk -v n="$1" 'index($0, n) == 1 { v = $NF } END { print v }' <<<"$m"
}
prog_ns() {
	local m
	m="$(bpftool prog show name gw_sample 2>/dev/null)" || true
	sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p' <<<"$m" | awk 'NR == 1 { v = $1 } END { print v + 0 }'
}

"$bin" agent --listen 127.0.0.1:0 --data-dir "$tmp/data" --profile "$mode" \
	--profile-frequency 19 --no-cupti --statsd-listen off 2>"$tmp/agent.log" &
agent=$!
for _ in $(seq 100); do
	url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$tmp/agent.log" | head -n 1)"
	[ -n "$url" ] && [ "$(metric 'gpuwatch_profile_up ' || true)" = 1 ] && break
	sleep 0.2
done
[ "$(metric 'gpuwatch_profile_up ' || true)" = 1 ] || { tail "$tmp/agent.log"; exit 1; }

start=$(date +%s)
for i in $(seq "$workers"); do
	LD_PRELOAD="$preload" "$tmp/bench_hot" "$secs" 3 1 >/dev/null &
	pids+=($!)
done
LD_PRELOAD="$preload" "$tmp/bench_nofp" "$secs" 3 1 >/dev/null &
pids+=($!)

# perf record's own CPU time: task-clock of the process (all its threads)
# as perf stat counts it.
perf stat -x, -e task-clock -o "$tmp/pstat" -- \
	perf record -F 19 -g -a -o "$tmp/perf.data" -- sleep "$secs" >"$tmp/perf.log" 2>&1 &
perf_pid=$!
sleep 0.5
prof0=$(metric 'gpuwatch_agent_worker_cpu_seconds_total{worker="gw-prof"}')
bpf0=$(prog_ns)
t0=$(date +%s.%N)
wait "$perf_pid" || true
perf_pid=""
t1=$(date +%s.%N)
prof1=$(metric 'gpuwatch_agent_worker_cpu_seconds_total{worker="gw-prof"}')
bpf1=$(prog_ns)
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
end=$(date +%s)
perf_task_ms=$(awk -F, '/task-clock/ { print $1; exit }' "$tmp/pstat")

wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
ours_s=$(awk -v a="$prof0" -v b="$prof1" -v x="$bpf0" -v y="$bpf1" 'BEGIN { print (b - a) + (y - x) / 1e9 }')
bpf_s=$(awk -v x="$bpf0" -v y="$bpf1" 'BEGIN { print (y - x) / 1e9 }')
perf_s=$(awk -v m="$perf_task_ms" 'BEGIN { print m / 1000 }')

# Agreement over the workload's samples (comm bench_hot and bench_nofp).
sleep 2 # one more drain (--profile-flush default 5 s is the bound)
for c in bench_hot bench_nofp; do
	"$bin" profile --url "$url" --match "{comm=\"$c\"}" --start "$((start - 5))" \
		--end "$((end + 10))" --top 1000 |
		awk 'NR > 2 { sub(/%/, "", $2); print $5 "\t" $2 }' >"$tmp/ours.$c"
	perf report -i "$tmp/perf.data" --stdio --no-children --comms "$c" --percentage relative \
		--sort sym -q -g none 2>/dev/null |
		awk '$1 ~ /%$/ { s = $1; sub(/%/, "", s); n = $3; for (i = 4; i <= NF; i++) n = n " " $i; print n "\t" s }' >"$tmp/perf.$c"
done
# What perf needs beyond recording to give what the agent keeps (every
# process's call stacks, named): one perf report over the whole recording,
# its task-clock as for perf record.
perf stat -x, -e task-clock -o "$tmp/rstat" -- \
	perf report -i "$tmp/perf.data" --stdio --no-children -g caller \
	--sort pid,sym >/dev/null 2>&1 || true
report_ms=$(awk -F, '/task-clock/ { print $1; exit }' "$tmp/rstat")
report_s=$(awk -v m="${report_ms:-0}" 'BEGIN { print m / 1000 }')
# agree OURS PERF: sum over the union of both top 20s of min(share).
agree() {
	awk -F'\t' 'FNR == NR { o[$1] = $2; if (FNR <= 20) top[$1] = 1; next }
		{ p[$1] = $2; if (FNR <= 20) top[$1] = 1 }
		END {
			for (f in top) { a = o[f] + 0; b = p[f] + 0; s += (a < b ? a : b) }
			printf "%.1f", s
		}' "$1" "$2"
}
intop() {
	head -n 20 "$1" | cut -f1 | sort >"$tmp/a"
	head -n 20 "$2" | cut -f1 | sort >"$tmp/b"
	comm -12 "$tmp/a" "$tmp/b" | wc -l
}

bytes=$(sqlite3 "$tmp/data/profiles.db" \
	"SELECT coalesce(sum(bytes),0) FROM profiles WHERE labels LIKE '%comm=\"bench_%'" 2>/dev/null || echo 0)
rows=$(sqlite3 "$tmp/data/profiles.db" \
	"SELECT count(*) FROM profiles WHERE labels LIKE '%comm=\"bench_%'" 2>/dev/null || echo 0)
nproc_run=$((workers + 1))
proc_hours=$(awk -v n="$nproc_run" -v s="$secs" 'BEGIN { print n * s / 3600 }')

printf 'machine: %d CPUs, load %s; %d s, %d workload processes, --profile %s\n' \
	"$ncpu" "$(cut -d' ' -f1-3 /proc/loadavg)" "$secs" "$nproc_run" "$mode"
printf 'CPU cost, all CPUs at 19 Hz:\n'
printf '  gpuwatch  %.3f s (thread %.3f s + BPF %.3f s) = %.3f%% of the machine\n' \
	"$ours_s" "$(awk -v a="$ours_s" -v b="$bpf_s" 'BEGIN { print a - b }')" "$bpf_s" \
	"$(awk -v s="$ours_s" -v w="$wall" -v n="$ncpu" 'BEGIN { print 100 * s / (w * n) }')"
printf '  perf      %.3f s (task-clock of perf record) = %.3f%% of the machine\n' \
	"$perf_s" "$(awk -v s="$perf_s" -v w="$wall" -v n="$ncpu" 'BEGIN { print 100 * s / (w * n) }')"
printf '  perf      + %.3f s naming the stacks (perf report, every process) = %.3f%% with record\n' \
	"$report_s" "$(awk -v s="$perf_s" -v r="$report_s" -v w="$wall" -v n="$ncpu" 'BEGIN { print 100 * (s + r) / (w * n) }')"
for c in bench_hot bench_nofp; do
	printf 'agreement (%s): overlap of flat shares %s%%, %d of our top 20 in perf'"'"'s\n' \
		"$c" "$(agree "$tmp/ours.$c" "$tmp/perf.$c")" "$(intop "$tmp/ours.$c" "$tmp/perf.$c")"
	printf '  ours: %s\n' "$(head -n 3 "$tmp/ours.$c" | tr '\t\n' '= ')"
	printf '  perf: %s\n' "$(head -n 3 "$tmp/perf.$c" | tr '\t\n' '= ')"
done
printf 'stored: %s bytes in %s rows for %.3f process-hours = %.0f bytes per process-hour\n' \
	"$bytes" "$rows" "$proc_hours" "$(awk -v b="$bytes" -v h="$proc_hours" 'BEGIN { print (h > 0 ? b / h : 0) }')"
