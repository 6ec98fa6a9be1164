#!/bin/sh
# SPDX-License-Identifier: MIT
# The soak (bench/soak.py says what load and what is recorded): the agent
# with 8 simulated GPUs, StatsD traffic, short CUDA processes through the
# injection library, a scrape every second and a heavy query every 10 s,
# for DURATION seconds (default 7200); a row every SAMPLE seconds (default
# 60) into $OUT/soak.tsv and a verdict on whether RSS, descriptors and
# threads stayed flat.  Real time: the agent stamps samples with the
# clock, so hours of load take hours.
# Usage: bench/soak.sh      BUILD=dir (default build/), OUT=dir,
#                           DURATION=s, SAMPLE=s, STATSD_RATE=datagrams/s,
#                           CUPTI_EVERY=s (a CUDA process every s, default 20),
#                           WRAP='valgrind --tool=massif' (runs the agent under it)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$(mktemp -d /tmp/gpuwatch-soak.XXXXXX)}
mkdir -p "$out"
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -- -j2 >/dev/null

# The CUDA processes need the test build's fake libcupti and host program.
host="" fake=""
if [ -x "$build/tests/cupti/inject_host" ]; then
	host="$build/tests/cupti/inject_host"
	fake=$(find "$build/tests/fakes/cupti" -name 'libcupti.so*' 2>/dev/null | head -n 1)
fi
[ -n "$fake" ] || { echo "soak: no fake libcupti in $build (configure with -DGW_TESTS=ON); no CUDA processes" >&2; host=""; }

port=$((20000 + $$ % 20000))
sport=$((port + 1))
mkdir -p "$out/data" "$out/rings"
${WRAP:-} "$build/gpuwatch" agent --simulate 8 --interval 1 --no-ebpf \
	--listen "127.0.0.1:$port" --statsd-listen "127.0.0.1:$sport" \
	--data-dir "$out/data" --cupti-dir "$out/rings" \
	>"$out/agent.log" 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null' EXIT INT TERM
i=0
until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "soak: the agent did not start; $out/agent.log" >&2; exit 1; }
	kill -0 $agent 2>/dev/null || { cat "$out/agent.log" >&2; exit 1; }
	sleep 0.1
done
echo "soak: agent pid $agent, output in $out"
CUDA_INJECTION64_PATH="$build/libgpuwatch_cupti.so" GPUWATCH_CUPTI_DIR="$out/rings" \
	GPUWATCH_CUPTI_INTERVAL_MS=200 FAKE_CUPTI="$fake" \
	python3 "$root/bench/soak.py" --pid $agent --url "http://127.0.0.1:$port" \
	--statsd "127.0.0.1:$sport" --duration "${DURATION:-7200}" \
	--sample-every "${SAMPLE:-60}" --statsd-rate "${STATSD_RATE:-500}" --cupti-every "${CUPTI_EVERY:-20}" \
	--inject-host "$host" --out "$out/soak.tsv"
