#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The deployed detector on the GWDG incident trace (real DCGM telemetry of
GPUs falling off the bus, 10-minute samples; CC BY 4.0, see the data's
SOURCES.md).

Usage: bench/gwdg.py DATA_DIR [GPUWATCH]

For each *_DERIVED_dcgm_wide.csv in DATA_DIR, each GPU and each gauge
field the agent would model (temperatures, power, utilisation, clocks,
framebuffer), the series is run through `gpuwatch detect` at its defaults
and the alert onsets are listed relative to the GPU's first XID 79 sample
(the detachment), together with the number of onsets in the days before.
"""
import csv
import datetime
import os
import subprocess
import sys
import tempfile

GAUGES = ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP",
          "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
          "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_SM_CLOCK",
          "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_FB_USED"]


def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%d %H:%M:%S")


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    gw = argv[2] if len(argv) > 2 else "build/gpuwatch"
    files = sorted(f for f in os.listdir(argv[1])
                   if f.endswith("_DERIVED_dcgm_wide.csv"))
    print("| trace | GPU | first XID 79 | onsets before it (series) "
          "| last onset before it | first onset after |")
    print("|---|---:|---|---:|---|---|")
    for f in files:
        rows = list(csv.DictReader(open(os.path.join(argv[1], f))))
        gpus = sorted({r["gpu"] for r in rows}, key=int)
        trace = f.split("__")[2].split("_")[0]
        for g in gpus:
            mine = [r for r in rows if r["gpu"] == g]
            xid = next((ts(r["timeUtc"]) for r in mine
                        if r["DCGM_FI_DEV_XID_ERRORS"] not in ("", "0.0", "0")
                        and float(r["DCGM_FI_DEV_XID_ERRORS"]) == 79), None)
            onsets = []
            for m in GAUGES:
                with tempfile.NamedTemporaryFile("w", suffix=".csv",
                                                 delete=False) as tf:
                    tf.write("timestamp,value\n")
                    for r in mine:
                        if r[m] != "":
                            tf.write("%s,%s\n" % (r["timeUtc"], r[m]))
                    name = tf.name
                out = subprocess.run([gw, "detect", "-q", name],
                                     capture_output=True, text=True,
                                     check=True).stdout
                os.unlink(name)
                for line in out.splitlines()[1:]:
                    t, v, s, a = line.split(",")
                    if a == "1":
                        onsets.append((ts(t), m.replace("DCGM_FI_DEV_", "")))
            onsets.sort()
            if xid is None:
                print("| %s | %s | none | %d | - | - |" % (trace, g, len(onsets)))
                continue
            before = [o for o in onsets if o[0] < xid]
            after = [o for o in onsets if o[0] >= xid]
            last = before[-1] if before else None
            first = after[0] if after else None
            print("| %s | %s | %s | %d (%s) | %s | %s |" % (
                trace, g, xid, len(before),
                ", ".join(sorted({o[1] for o in before})) or "-",
                "%s %s (%.1f h before)" % (last[0], last[1],
                    (xid - last[0]).total_seconds() / 3600) if last else "-",
                "%s %s (+%d min)" % (first[0], first[1],
                    (first[0] - xid).total_seconds() / 60) if first else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
