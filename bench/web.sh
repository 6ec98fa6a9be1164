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
# Needs chromium (scripts/install-deps.sh test) and tests/web's npm
# packages (scripts/install-deps.sh all).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-$root/build}
runs=${1:-5}
hours=${2:-24}
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target gpuwatch >/dev/null
[ -d "$root/tests/web/node_modules/playwright-core" ] || {
	echo "web.sh: run npm ci in tests/web (scripts/install-deps.sh all)" >&2
	exit 2
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gw-web-bench.XXXXXX")
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

now=$(date +%s)
start=$((now - hours * 3600))
echo "history: 8 GPUs x ${hours} h at 1 s, $(date -u -d @$start +%FT%TZ) to now" >&2
t0=$(date +%s.%N)
python3 - "$start" "$now" >"$dir/history.om" <<'PY'
import math, random, sys
start, end = int(sys.argv[1]), int(sys.argv[2])
random.seed(1)
gauges = [
    ("gpuwatch_gpu_utilization_ratio", lambda g, t, d: round(min(1, max(0, 0.55 + 0.4 * d + random.gauss(0, 0.03))), 3)),
    ("gpuwatch_gpu_memory_used_bytes", lambda g, t, d: int((60 + 60 * d) * 2**30) // 2**20 * 2**20),
    ("gpuwatch_gpu_memory_total_bytes", lambda g, t, d: 151397597184),
    ("gpuwatch_gpu_temperature_celsius", lambda g, t, d: round(45 + 25 * d + random.gauss(0, 0.5))),
    ("gpuwatch_gpu_memory_temperature_celsius", lambda g, t, d: round(50 + 28 * d + random.gauss(0, 0.5))),
    ("gpuwatch_gpu_power_watts", lambda g, t, d: round(150 + 500 * d + random.gauss(0, 8), 1)),
    ("gpuwatch_gpu_power_limit_watts", lambda g, t, d: 700),
    ("gpuwatch_gpu_up", lambda g, t, d: 1),
]
out = sys.stdout
for name, _ in gauges:
    out.write("# TYPE %s gauge\n" % name)
out.write("# TYPE gpuwatch_gpu_clock_hertz gauge\n# TYPE gpuwatch_gpu_ecc_errors counter\n"
          "# TYPE gpuwatch_gpu_xid_errors counter\n")
for g in range(8):
    lab = 'gpu="%d",uuid="GPU-sim-%08d"' % (g, g)
    rows = []
    for name, f in gauges:
        w = out.write
        for t in range(start, end):
            d = 0.5 + 0.5 * math.sin(2 * math.pi * (t % 86400) / 86400 + g)
            w("%s{%s} %s %d\n" % (name, lab, f(g, t, d), t))
    for clock, base in (("sm", 1980e6), ("memory", 2619e6)):
        w = out.write
        for t in range(start, end):
            w('gpuwatch_gpu_clock_hertz{%s,clock="%s"} %d %d\n' % (lab, clock, base - (15e6 if t % 7 == 0 else 0), t))
    for typ in ("corrected", "uncorrected"):
        for t in range(start, end):
            out.write('gpuwatch_gpu_ecc_errors_total{%s,type="%s"} %d %d\n' % (lab, typ, 0, t))
    for t in range(start, end):
        out.write('gpuwatch_gpu_xid_errors_total{%s,xid="79"} 0 %d\n' % (lab, t))
out.write("# EOF\n")
PY
t1=$(date +%s.%N)
samples=$(grep -vc '^#' "$dir/history.om")
"$build/gpuwatch" store import --data-dir "$dir/data" -q "$dir/history.om" >&2
t2=$(date +%s.%N)
rm -f "$dir/history.om"
echo "$samples samples: generated in $(echo "$t1 - $t0" | bc) s, imported in $(echo "$t2 - $t1" | bc) s" >&2

"$build/gpuwatch" agent --listen 127.0.0.1:0 --data-dir "$dir/data" \
	--simulate 8 --retention-raw 2d --statsd-listen 127.0.0.1:0 \
	2>"$dir/agent.log" &
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
cd "$root/tests/web"
node bench.mjs "$url" "$runs"
