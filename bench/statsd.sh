#!/bin/sh
# SPDX-License-Identifier: MIT
# StatsD ingest (docs/internals/statsd.md): datagrams/s and lines/s on one
# core through the collector's receive path, over loopback UDP, next to the
# same receive loop without parsing and aggregation, measured in the same
# run.  Target: >= 200k datagrams/s.
# Usage: bench/statsd.sh [SECONDS] [LINES_PER_DATAGRAM]   (defaults 3 and 5)
#        BUILD=dir  release build directory (default build/)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-$root/build}
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target bench_statsd -- -j2 >/dev/null
exec "$build/bench_statsd" -s "${1:-3}" -l "${2:-5}"
