#!/bin/sh
# SPDX-License-Identifier: MIT
# The web page's weight and speed (bench/README.md, "web"): 8 GPUs with
# 24 h of 1 s history (every per-GPU gauge and counter the page reads,
# imported with `gpuwatch store import`), an agent simulating the same 8
# GPUs on top, and headless chromium loading each view cold RUNS times:
# bytes transferred and time to the first chart.
# Budget: <= 300 KB compressed and <= 1 s to the first chart.
# Usage: bench/web.sh [RUNS] [HOURS]  (defaults 5 and 24)
#        BUILD=dir  build directory (default build/)
#        AGENT=bin  the gpuwatch binary to measure instead of BUILD's (an
#                   older build, for a comparison under the same load)
#        DETAIL=1   list each view's requests with their times
# Needs chromium (scripts/install-deps.sh all) and tests/web's npm
# packages (scripts/install-deps.sh all).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-$root/build}
runs=${1:-5}
hours=${2:-24}
if [ -n "${AGENT:-}" ]; then
	gw=$AGENT
else
	[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$build" --target gpuwatch >/dev/null
	gw=$build/gpuwatch
fi
[ -d "$root/tests/web/node_modules/playwright-core" ] || {
	echo "web.sh: run npm ci in tests/web (scripts/install-deps.sh all)" >&2
	exit 2
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gw-web-bench.XXXXXX")
pid=""
# The agent writes into $dir until it has exited: wait for it before
# removing the directory ("Directory not empty" otherwise).
trap '[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$dir"' EXIT

# start_agent ARGS...: the agent on a free port in the background; sets
# pid and url.
start_agent() {
	: >"$dir/agent.log"
	"$gw" agent --listen 127.0.0.1:0 --statsd-listen 127.0.0.1:0 \
		--simulate 8 "$@" 2>"$dir/agent.log" &
	pid=$!
	url=""
	i=0
	while [ -z "$url" ] && [ $i -lt 150 ]; do
		url=$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$dir/agent.log" | head -n1)
		[ -n "$url" ] || sleep 0.1
		i=$((i + 1))
	done
	[ -n "$url" ] || { cat "$dir/agent.log" >&2; exit 1; }
	until curl -fsS "$url/healthz" >/dev/null 2>&1; do sleep 0.1; done
}

# The simulated GPUs' uuids (the same seed gives the same GPUs), so that
# the history and the live agent's samples are the same series.
start_agent --data-dir "$dir/probe"
uuids=""
i=0
while [ "$(echo "$uuids" | wc -w)" -lt 8 ] && [ $i -lt 100 ]; do
	[ $i -eq 0 ] || sleep 0.1
	uuids=$(curl -fsS "$url/metrics" | sed -n 's/^gpuwatch_gpu_up{gpu="\([0-9]*\)",uuid="\([^"]*\)".*/\1=\2/p' | sort -n | tr '\n' ' ')
	i=$((i + 1))
done
kill "$pid"
wait "$pid" || true
pid=""
rm -rf "$dir/probe"

now=$(date +%s)
start=$((now - hours * 3600))
echo "history: 8 GPUs x ${hours} h at 1 s, $(date -u -d @$start +%FT%TZ) to now" >&2
t0=$(date +%s.%N)
# OpenMetrics text, one series at a time (the import wants each series in
# time order): a day-night load cycle per GPU and a little noise.
awk -v start="$start" -v end="$now" -v uuids="$uuids" 'BEGIN {
	srand(1)
	split(uuids, kv, " ")
	for (k in kv) {
		split(kv[k], p, "=")
		uuid[p[1]] = p[2]
	}
	n = split("utilization_ratio memory_used_bytes memory_total_bytes " \
		"temperature_celsius memory_temperature_celsius power_watts " \
		"power_limit_watts up", names, " ")
	for (i = 1; i <= n; i++)
		printf "# TYPE gpuwatch_gpu_%s gauge\n", names[i]
	print "# TYPE gpuwatch_gpu_clock_hertz gauge"
	print "# TYPE gpuwatch_gpu_ecc_errors counter"
	print "# TYPE gpuwatch_gpu_xid_errors counter"
	for (g = 0; g < 8; g++) {
		lab = sprintf("gpu=\"%d\",uuid=\"%s\"", g, uuid[g])
		for (i = 1; i <= n; i++) {
			m = names[i]
			for (t = start; t < end; t++) {
				d = 0.5 + 0.5 * sin(6.283185 * (t % 86400) / 86400 + g)
				r = rand() - 0.5
				if (m == "utilization_ratio") v = sprintf("%.3f", 0.55 + 0.4 * d + 0.05 * r)
				else if (m == "memory_used_bytes") v = sprintf("%.0f", int((60 + 60 * d) * 1024) * 1048576)
				else if (m == "memory_total_bytes") v = "151397597184"
				else if (m == "temperature_celsius") v = sprintf("%d", 45 + 25 * d + r)
				else if (m == "memory_temperature_celsius") v = sprintf("%d", 50 + 28 * d + r)
				else if (m == "power_watts") v = sprintf("%.1f", 150 + 500 * d + 10 * r)
				else if (m == "power_limit_watts") v = "700"
				else v = "1"
				printf "gpuwatch_gpu_%s{%s} %s %d\n", m, lab, v, t
			}
		}
		for (t = start; t < end; t++)
			printf "gpuwatch_gpu_clock_hertz{%s,clock=\"sm\"} %.0f %d\n", lab, (t % 7 ? 1980 : 1965) * 1000000, t
		for (t = start; t < end; t++)
			printf "gpuwatch_gpu_clock_hertz{%s,clock=\"memory\"} 2619000000 %d\n", lab, t
		for (t = start; t < end; t++)
			printf "gpuwatch_gpu_ecc_errors_total{%s,type=\"uncorrected\"} 0 %d\n", lab, t
		for (t = start; t < end; t++)
			printf "gpuwatch_gpu_xid_errors_total{%s,xid=\"79\"} 0 %d\n", lab, t
	}
	print "# EOF"
}' >"$dir/history.om"
t1=$(date +%s.%N)
samples=$(grep -vc '^#' "$dir/history.om")
"$gw" store import --data-dir "$dir/data" -q "$dir/history.om" >&2
t2=$(date +%s.%N)
rm -f "$dir/history.om"
echo "$samples samples: generated in $(echo "$t1 - $t0" | bc) s, imported in $(echo "$t2 - $t1" | bc) s" >&2

start_agent --data-dir "$dir/data" --retention-raw 2d
cd "$root/tests/web"
node bench.mjs "$url" "$runs"
