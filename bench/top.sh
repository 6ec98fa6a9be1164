#!/usr/bin/env bash
# gpuwatch top's cost, against an agent with --simulate 8 (1 s interval):
#
# - one refresh: the wall time of `gpuwatch top --once` (process start,
#   every query, the table), median and worst of RUNS (default 50), and
#   the API requests and answer bytes one refresh takes;
# - the agent's CPU (every thread, schedstat ns) over DURATION seconds
#   (default 30) with one `gpuwatch top` refreshing every second, against
#   the same agent with nobody watching, measured back to back;
# - top's own CPU over the same window.
#
# usage: bench/top.sh [BUILD_DIR]       (a release build: make)
#        AGENT=path/to/gpuwatch bench/top.sh BUILD_DIR   (another agent binary)
set -euo pipefail

build="${1:-build}"
bin="$build/gpuwatch"
runs="${RUNS:-50}"
duration="${DURATION:-30}"
tmp="$(mktemp -d)"
pid=""
top_pid=""
trap '[ -z "$top_pid" ] || kill -9 $top_pid 2>/dev/null
[ -z "$pid" ] || kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
agent="${AGENT:-$bin}"
[ -x "$bin" ] || { echo "build $bin first (make)" >&2; exit 1; }

cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f", s }'; }
now_ms() { date +%s%3N; }

"$agent" agent --listen 127.0.0.1:0 --data-dir "$tmp/data" --simulate 8 \
	--statsd-listen 127.0.0.1:0 --no-ebpf 2>"$tmp/agent.log" &
pid=$!
url=""
for _ in $(seq 100); do
	url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$tmp/agent.log" | head -n1)"
	[ -n "$url" ] && curl -fsS "$url/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
[ -n "$url" ] || { echo "the agent did not start" >&2; exit 1; }
sleep 5 # a few samples of every GPU and process

requests() {
	curl -fsS "$url/metrics" | awk '/^gpuwatch_agent_api_requests_total[{]/ { s += $NF } END { print s + 0 }'
}

# One refresh.
r0="$(requests)"
for i in $(seq "$runs"); do
	s=$(date +%s%N)
	"$bin" top --once --url "$url" >"$tmp/once" || { echo "top --once failed" >&2; exit 1; }
	e=$(date +%s%N)
	echo $(((e - s) / 1000)) >>"$tmp/wall_us"
done
r1="$(requests)"
# The answer bytes of one refresh: the same queries top sends, with curl.
bytes=0
t="$(date +%s)"
while IFS= read -r q; do
	n="$(curl -fsS -o /dev/null -w '%{size_download}' "$url/api/v1/query" \
		--data-urlencode "query=$q" --data-urlencode "time=$t")"
	bytes=$((bytes + n))
done <<'Q'
{__name__=~"gpuwatch_gpu_(info|up|utilization_ratio|memory_utilization_ratio|memory_used_bytes|memory_total_bytes|temperature_celsius|memory_temperature_celsius|power_watts|power_limit_watts|process_memory_used_bytes|process_sm_utilization_ratio|process_memory_utilization_ratio)"} or gpuwatch_gpu_clock_hertz{clock=~"sm|memory"} or gpuwatch_gpu_clock_event_active > 0 or gpuwatch_agent_interval_seconds{set="fast"}
time() - timestamp(gpuwatch_gpu_process_memory_used_bytes)
topk(10, sum by (pid, comm, kernel) (rate(gpuwatch_cuda_kernel_duration_seconds_sum[1m])))
topk(10, sum by (pid, comm, api, code) (gpuwatch_cuda_api_errors_total))
ALERTS_FOR_STATE and ignoring(alertstate) ALERTS{alertstate="firing"}
Q
sort -n "$tmp/wall_us" >"$tmp/sorted"
med="$(awk -v n="$runs" 'NR == int((n + 1) / 2) { print $1 }' "$tmp/sorted")"
max="$(tail -n 1 "$tmp/sorted")"
printf 'one refresh (top --once, 8 GPUs, %d runs): median %.1f ms, worst %.1f ms\n' \
	"$runs" "$(echo "$med / 1000" | bc -l)" "$(echo "$max / 1000" | bc -l)"
printf '  API requests per refresh: %s; answer bytes per refresh: %d\n' \
	"$(echo "($r1 - $r0) / $runs" | bc -l | xargs printf '%.1f')" "$bytes"

# The agent's CPU, nobody watching, then with top at 1 s.
a0=$(cpu_ns "$pid")
t0=$(now_ms)
sleep "$duration"
a1=$(cpu_ns "$pid")
t1=$(now_ms)
"$bin" top --plain --url "$url" --interval 1 >/dev/null &
top_pid=$!
sleep 1
b0=$(cpu_ns "$pid")
p0=$(cpu_ns "$top_pid")
u0=$(now_ms)
sleep "$duration"
b1=$(cpu_ns "$pid")
p1=$(cpu_ns "$top_pid")
u1=$(now_ms)
kill -TERM "$top_pid"
wait "$top_pid" || true
top_pid=""
share() { echo "$1 / ($2 * 10000)" | bc -l | xargs printf '%.3f'; }
echo "agent CPU, share of one core over ${duration} s:"
echo "  nobody watching:           $(share $((a1 - a0)) $((t1 - t0)))%"
echo "  one gpuwatch top at 1 s:   $(share $((b1 - b0)) $((u1 - u0)))%"
echo "gpuwatch top's own CPU:      $(share $((p1 - p0)) $((u1 - u0)))%"
