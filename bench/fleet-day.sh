#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a day adds to a central store that runs on (bench/README.md,
# "Fleet"): bench/fleet.sh twice with the same seed, over the last whole
# UTC day and over the last two, each into its own VictoriaMetrics; the
# second day's bytes are the difference.  Both runs simulate the same
# first day (the seed fixes every GPU, job and fault), so the difference
# is the second day alone: its samples, its day of VictoriaMetrics'
# per-day index, and the better compression of a series' block that
# holds more than one day (as every block of a store that runs on does).
#
# Usage: bench/fleet-day.sh [BUILD_DIR]
#   NODES=25 GPUS=8 SENDERS=2 SEED=1 EXTRA=... VM_EXTRA=... as bench/fleet.sh
# Budget: 100 KB a GPU-day, the whole data directory's growth.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Both end at the same midnight, the last before now.
END=$(( $(date -u +%s) / 86400 * 86400 ))
export END
for days in 1 2; do
	echo "+ END=$END DURATION=${days}d bench/fleet.sh $*" >&2
	DURATION=${days}d "$here/fleet.sh" "$@" | tee "$out/$days" >&2
done
python3 - "$out/1" "$out/2" <<'PY'
import re, sys

def sizes(path):
    text = open(path).read()
    m = re.search(r"^vm_stored_bytes\s+(\d+) \(data/ (\d+), indexdb/ (\d+), "
                  r"cache/ (\d+);", text, re.M)
    gpus = re.search(r"^run\s+(\d+) nodes x (\d+) GPUs", text, re.M)
    if not m or not gpus:
        sys.exit("fleet-day: no sizes in %s" % path)
    return [int(x) for x in m.groups()], int(gpus[1]) * int(gpus[2])

(one, gpus), (two, _) = sizes(sys.argv[1]), sizes(sys.argv[2])
print("---")
print("second_day_gpus              %d" % gpus)
for i, name in enumerate(["whole directory", "data/", "indexdb/", "cache/"]):
    d = two[i] - one[i]
    print("%-28s %d bytes, %d a GPU-day%s" % (
        "second_day " + name, d, round(d / gpus),
        "   (budget 100000)" if i == 0 else ""))
PY
