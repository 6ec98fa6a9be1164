#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The published NAB detectors, scored on the same files as ours.

Usage: bench/nab_peers.py NAB_CHECKOUT [--files NAB_DIR] [DETECTOR...]

NAB_CHECKOUT is a checkout of the Numenta Anomaly Benchmark's repository:
its results/DETECTOR/CATEGORY/DETECTOR_FILE.csv (each detector's
anomaly_score per row, as published), config/thresholds.json (the threshold
per profile that NAB's optimiser chose for the detector over the whole
corpus) and results/final_results.json (the published scores).  Each
detector's rows at or above its threshold are its detections, as in NAB's
own scoring; they are scored with bench/nab_score.py over the files whose
windows NAB_DIR labels (default: the checkout's, all 58 files), so the
figures compare with `bench/nab.sh NAB_DIR` row for row.

Over all of the checkout's files the scores must equal the published ones:
a check of this scorer against NAB's.  The table marks each such row
"= published" or prints the published score beside it; the exit status is
1 if any differs by more than 0.05.

DETECTOR: the ones to score (default: every one in config/thresholds.json
that has results).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nab_score  # noqa: E402


def main(argv):
    args = argv[1:]
    files = None
    if "--files" in args:
        k = args.index("--files")
        if k + 1 >= len(args):
            sys.stderr.write(__doc__)
            return 2
        files = args[k + 1]
        del args[k:k + 2]
    if not args or args[0].startswith("-"):
        sys.stderr.write(__doc__)
        return 2
    repo, dets = args[0], args[1:]
    try:
        with open(os.path.join(repo, "config", "thresholds.json")) as f:
            thresholds = json.load(f)
        with open(os.path.join(repo, "results", "final_results.json")) as f:
            published = json.load(f)
    except OSError as e:
        sys.stderr.write("nab_peers: %s: not a checkout of NAB (%s)\n" %
                         (repo, e))
        return 2
    everything = nab_score.load_windows(repo)
    labels = nab_score.load_windows(files) if files else everything
    missing = sorted(set(labels) - set(everything))
    if missing:
        sys.stderr.write("nab_peers: %s: not in NAB's labels\n" % missing[0])
        return 2
    whole = set(labels) == set(everything)
    if not dets:
        dets = sorted(d for d in thresholds
                      if os.path.isdir(os.path.join(repo, "results", d)))
    unknown = [d for d in dets if d not in thresholds]
    if unknown:
        sys.stderr.write("nab_peers: %s: no such detector in %s\n" %
                         (unknown[0], "config/thresholds.json"))
        return 2
    profiles = list(nab_score.PROFILES)
    print("%d files, %d windows%s" %
          (len(labels), sum(len(w) for w in labels.values()),
           " (all of NAB)" if whole else ""))
    print()
    print("| detector | threshold | " + " | ".join(profiles) +
          " | TP | FN | FP |")
    print("|---|---:|" + "---:|" * (len(profiles) + 3))
    bad = 0
    for det in dets:
        th = {p: thresholds[det][p]["threshold"] for p in profiles}
        cache = {}

        def detections(fname, profile):
            if fname not in cache:
                cat, name = fname.split("/", 1)
                path = os.path.join(repo, "results", det, cat,
                                    "%s_%s" % (det, name))
                cache.clear()
                cache[fname] = nab_score.read_detections(path,
                                                         "anomaly_score",
                                                         None)
            times, scores = cache[fname]
            return times, [s is not None and s >= th[profile]
                           for s in scores]

        try:
            total, _, _ = nab_score.score_files(labels, detections)
        except (OSError, ValueError, KeyError) as e:
            sys.stderr.write("nab_peers: %s: %s\n" % (det, e))
            return 2
        cells = []
        for p in profiles:
            raw, null, perf = total[p][:3]
            s = nab_score.norm(raw, null, perf)
            cell = "%.1f" % s
            if whole and det in published:
                pub = published[det][p]
                if abs(s - pub) > 0.05:
                    bad = 1
                    cell += " (published %.1f)" % pub
            cells.append(cell)
        tp, fn, fp = total["standard"][3:6]
        print("| %s | %.3f | %s | %d | %d | %d |" %
              (det, th["standard"], " | ".join(cells), tp, fn, fp))
    if whole:
        print()
        print("every score equals the published one" if not bad else
              "scores that differ from the published ones are marked")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
