#!/bin/sh
# SPDX-License-Identifier: MIT
# The dynamic baseline (docs/internals/baselines.md):
#  1. CPU per sample of gw_baseline_update and of the deployed detector
#     (gw_detect_update, the agent's defaults) over 10,000 series x 1,000
#     samples, against a plain EWMA update of the same data in the same run;
#  2. with a NAB directory, the Numenta Anomaly Benchmark scores (standard,
#     reward_low_FP_rate, reward_low_FN_rate) of the baseline, a windowed
#     Gaussian and the null detector, with one scorer and a threshold swept
#     per profile for the whole corpus, by category.
# Usage: bench/baseline.sh [NAB_DIR]
#   NAB_DIR (argument or environment): a directory with NAB's data/ CSVs
#   (data/<category>/<file>.csv) and combined_windows.json.
# Builds bench/baseline with -O2 from the sources it needs (no CMake target).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BUILD:-$root/build}/bench
nab=${1:-${NAB_DIR:-}}
mkdir -p "$out"
${CC:-cc} -std=gnu17 -O2 -g -D_GNU_SOURCE -Wall -Wextra \
	-I"$root/src" -o "$out/baseline" "$here/baseline.c" \
	"$root/src/pipeline/baseline.c" "$root/src/pipeline/detect.c" -lm
"$out/baseline" cpu
if [ -n "$nab" ]; then
	echo
	"$out/baseline" nab "$nab"
else
	echo "(no NAB_DIR: NAB scoring skipped)"
fi
