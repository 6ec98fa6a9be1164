#!/bin/sh
# SPDX-License-Identifier: MIT
# The quantile sketch and the rollups (docs/internals/rollups.md): ns per
# gw_sketch_add / gw_rollup_add, merge cost, encoded sizes of 1-minute and
# 1-hour windows of GPU-like gauges, rollup chunk size and codec cost.
# Usage: bench/sketch.sh
# Builds bench/sketch with -O2 from the sources it needs (no CMake target).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BUILD:-$root/build}/bench
mkdir -p "$out"
${CC:-cc} -std=gnu17 -O2 -g -D_GNU_SOURCE -Wall -Wextra \
	-I"$root/src" -o "$out/sketch" "$here/sketch.c" \
	"$root/src/store/sketch.c" "$root/src/store/rollup.c" \
	"$root/src/common/buf.c" "$root/src/common/crc32c.c" -lm
exec "$out/sketch"
