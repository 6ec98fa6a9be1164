#!/bin/sh
# SPDX-License-Identifier: MIT
# The injection library's own cost per event, on the CPU (bench/inject.c):
# per kernel activity record (walked with the real libcupti and folded),
# next to the bare walk measured in the same run; per kept API callback;
# per summary written to the ring.  The slowdown of a real CUDA program is
# tests/gpu/cupti_injection.sh's job (a GPU machine).
# Usage: bench/inject.sh [RECORDS [NAMES]]    BUILD=dir (default build/)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target bench_inject >/dev/null
exec "$build/bench_inject" "$@"
