#!/bin/sh
# SPDX-License-Identifier: MIT
# The sample codec against Gorilla and zstd (bench/README.md, "codec").
# Usage: bench/codec.sh [HOURS] [GPUS] [JITTER_MS]
#   simulated hours (default 4), GPUs (default 8), timestamp jitter (default 4)
# Builds bench/codec with -O2 from the sources it needs (no CMake target)
# and runs it on the simulator and on bench/data/dcgm_ggpu129_gpu-lost_wide.csv.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BUILD:-$root/build}/bench
mkdir -p "$out"
${CC:-cc} -std=gnu17 -O2 -g -D_GNU_SOURCE -Wall -Wextra \
	-I"$root/src" -I"$root/src/collect/nvml" -I"$root" \
	-o "$out/codec" "$here/codec.c" "$here/datasets.c" "$root/src/store/chunk.c" \
	"$root/src/common/crc32c.c" \
	"$root/src/collect/sim/sim.c" "$root/src/collect/sim/sim_nvml.c" \
	-lzstd -lm -lpthread
exec "$out/codec" -h "${1:-4}" -g "${2:-8}" -j "${3:-4}" \
	"$here/data/dcgm_ggpu129_gpu-lost_wide.csv"
