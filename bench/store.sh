#!/bin/sh
# SPDX-License-Identifier: MIT
# The store end to end (bench/README.md, "store"): ingest samples/s on one
# core with the real flushes and cuts, bytes per sample per tier, and query
# latency, on simulated telemetry and on the real DCGM trace in bench/data/.
# Usage: bench/store.sh [HOURS] [GPUS] [JITTER_MS]  (defaults 24, 8 and 2:
#        the simulator's ticks plus 0..JITTER_MS ms, stored exactly)
#        BUILD=dir  release build directory (default build/)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-$root/build}
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target bench_store >/dev/null
dir=$(mktemp -d "${TMPDIR:-/tmp}/gw-store-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$build/bench_store" -h "${1:-24}" -g "${2:-8}" -j "${3:-2}" -d "$dir" \
	"$here/data/dcgm_ggpu129_gpu-lost_wide.csv"
