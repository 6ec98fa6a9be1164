#!/bin/sh
# SPDX-License-Identifier: MIT
# NAB score of the deployed detector: `gpuwatch detect` at its defaults
# over every file of a NAB directory, its `alert` column (alert onsets)
# scored by bench/nab_score.py (standard, reward_low_FP_rate,
# reward_low_FN_rate; per category; --rows: per file).
# Usage: bench/nab.sh NAB_DIR [--rows]
#   GPUWATCH: the binary (default build/gpuwatch).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
nab=${1:?usage: bench/nab.sh NAB_DIR [--rows]}
shift
gw=${GPUWATCH:-$root/build/gpuwatch}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for d in "$nab"/data/*/; do
	cat=$(basename "$d")
	"$gw" detect -q -o "$out/$cat" "$d"*.csv
done
python3 "$here/nab_score.py" "$nab" "$out" "$@"
