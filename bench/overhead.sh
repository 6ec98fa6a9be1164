#!/usr/bin/env bash
# Agent overhead: CPU share of one core and peak RSS over DURATION seconds
# (default 60) with 8 fake GPUs (the scripted NVML double) and with
# --simulate 8, both at a 1 s interval; /metrics latency over SCRAPES
# requests (default 500).  Baselines measured in the same run: an agent
# with no GPUs (CPU) and /healthz (latency).
#
# usage: bench/overhead.sh [BUILD_DIR]     (make bench)
#        AGENT_ARGS=--no-ebpf bench/overhead.sh   (the hardware layer alone)
set -euo pipefail

build="${1:-build}"
bin="$build/gpuwatch"
fake="$build/tests/fakes/full/libnvidia-ml.so.1"
duration="${DURATION:-60}"
scrapes="${SCRAPES:-500}"
tmp="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT

[ -x "$bin" ] || { echo "build $bin first (make)" >&2; exit 1; }
[ -f "$fake" ] || { echo "the fake NVML is not built: $fake" >&2; exit 1; }

# CPU time of every thread in nanoseconds (schedstat: finer than the
# 10 ms ticks of /proc/PID/stat, which cannot resolve 0.01% in a minute).
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f", s }'; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# "TID NAME NS" for every thread, for the per-thread breakdown.
thread_ns() {
	for t in /proc/"$1"/task/*; do
		printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm")" \
			"$(cut -d' ' -f1 "$t/schedstat")"
	done 2>/dev/null
}

start() {
	"$bin" agent --listen 127.0.0.1:0 --data-dir "$tmp/data.$1" \
		--interval 1 --detail-interval 30 ${AGENT_ARGS:-} "${@:2}" 2>"$tmp/log.$1" &
	pid=$!
	url=""
	for _ in $(seq 1 200); do
		url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$tmp/log.$1" | head -n1)"
		[ -n "$url" ] && curl -fsS "$url/healthz" >/dev/null 2>&1 && break
		sleep 0.05
	done
	[ -n "$url" ] || { echo "agent did not start: $(cat "$tmp/log.$1")" >&2; exit 1; }
}

# run NAME ARGS...: prints "cpu% rss_mib"
measure() {
	start "$@"
	# Settle: loading the probes, calibrating them and the first scan of
	# every process are a one-time cost, reported apart.
	for _ in $(seq 1 200); do
		grep -qE "ebpf: (probes loaded|unavailable|off)" "$tmp/log.$1" && break
		sleep 0.1
	done
	sleep 5
	startup="$(awk -v c="$(cpu_ns $pid)" 'BEGIN { printf "%.2f", c / 1e9 }')"
	local t0 c0 t1 c1
	t0="$(date +%s.%N)"; c0="$(cpu_ns $pid)"; thread_ns $pid >"$tmp/thr0.$1"
	sleep "$duration"
	t1="$(date +%s.%N)"; c1="$(cpu_ns $pid)"; thread_ns $pid >"$tmp/thr1.$1"
	cpu="$(awk -v c="$((c1 - c0))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", 100 * c / 1e9 / (b - a) }')"
	rss="$(awk -v k="$(hwm_kib $pid)" 'BEGIN { printf "%.1f", k / 1024 }')"
}

latency() { # prints median and p99 in ms of $scrapes GETs of $1
	for _ in $(seq 1 "$scrapes"); do
		curl -fsS -o /dev/null -w '%{time_total}\n' "$1"
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f %.3f", 1000 * v[int(NR * 0.5)], 1000 * v[int(NR * 0.99)] }'
}

stop() { kill -TERM $pid; wait $pid || true; pid=""; }

printf 'gpus 8\n' >"$tmp/nvml.script"
export GW_FAKE_NVML_SCRIPT="$tmp/nvml.script"

echo "gpuwatch overhead benchmark: ${duration}s per scenario, $scrapes scrapes, $(nproc) cores"
measure idle --nvml-lib "$tmp/none.so"
idle_cpu=$cpu idle_rss=$rss idle_start=$startup
stop
measure fake8 --nvml-lib "$fake"
fake_cpu=$cpu fake_rss=$rss fake_start=$startup
read -r m_med m_p99 <<<"$(latency "$url/metrics")"
read -r h_med h_p99 <<<"$(latency "$url/healthz")"
render="$(curl -fsS "$url/metrics" | awk '/^gpuwatch_agent_scrape_duration_seconds_total / { s = $2 } /^gpuwatch_agent_scrapes_total / { n = $2 } END { printf "%.3f", 1000 * s / n }')"
series="$(curl -fsS "$url/metrics" | grep -vc '^#')"
stop
measure sim8 --simulate 8
sim_cpu=$cpu sim_rss=$rss sim_start=$startup
stop

printf '\n%-34s %10s %12s %10s\n' scenario "cpu %core" "vs idle" "peak RSS"
printf '%-34s %10s %12s %8s MiB\n' "idle agent, no GPUs (baseline)" "$idle_cpu" "1.00x" "$idle_rss"
printf '%-34s %10s %12s %8s MiB\n' "8 fake NVML GPUs, 1 s / 30 s" "$fake_cpu" \
	"$(awk -v a="$fake_cpu" -v b="$idle_cpu" 'BEGIN { printf((b > 0) ? "%.2fx" : "n/a", a / (b > 0 ? b : 1)) }')" "$fake_rss"
printf '%-34s %10s %12s %8s MiB\n' "--simulate 8, 1 s / 30 s" "$sim_cpu" \
	"$(awk -v a="$sim_cpu" -v b="$idle_cpu" 'BEGIN { printf((b > 0) ? "%.2fx" : "n/a", a / (b > 0 ? b : 1)) }')" "$sim_rss"
printf '\nstart-up CPU (probe loading, calibration, first scan; once): %s s, %s s, %s s\n' \
	"$idle_start" "$fake_start" "$sim_start"
printf '\n/metrics with 8 GPUs (%s series): median %s ms, p99 %s ms (curl, loopback)\n' "$series" "$m_med" "$m_p99"
printf '/healthz baseline: median %s ms, p99 %s ms; /metrics/healthz median ratio %s\n' "$h_med" "$h_p99" \
	"$(awk -v a="$m_med" -v b="$h_med" 'BEGIN { printf "%.2f", a / b }')"
printf 'render time inside the agent: %s ms per scrape (mean)\n' "$render"
# Where the --simulate 8 agent's CPU went, by thread name (threads of
# one name summed; gpuwatch = the main thread and per-GPU NVML workers).
printf '\n--simulate 8, CPU by thread (%% of a core):'
awk -v d="$duration" 'NR == FNR { c0[$1] = $3; next }
	{ n[$2] += $3 - c0[$1] }
	END { for (k in n) if (n[k] > 0) printf "%s %.4f\n", k, 100 * n[k] / 1e9 / d }' \
	"$tmp/thr0.sim8" "$tmp/thr1.sim8" | sort -k2 -rn | head -8 |
	awk '{ printf "  %s %s", $1, $2 } END { print "" }'
printf '\nbudget: cpu <= 0.5%% of a core, peak RSS <= 32 MiB, scrape <= 2 ms\n'
