#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Scores detections with the Numenta Anomaly Benchmark's rules.

Usage: bench/nab_score.py NAB_DIR RESULTS_DIR [--column alert] [--rows]

NAB_DIR holds combined_windows.json (or labels/combined_windows.json, as a
checkout of NAB's repository does) and data/CATEGORY/FILE.csv; RESULTS_DIR
holds CATEGORY/FILE.csv for every file named in the windows, with a header
row that has a `timestamp` column and the detection column (default
`alert`, as `gpuwatch detect` writes it: 1 where an alert starts).  A row
is a detection when its column is >= 0.5 (a fixed threshold: no sweep).

The rules, as NAB's scorer (nab/sweeper.py) applies them:
- probationary period: the first min(floor(0.15 n), 750) rows of a file
  are not scored;
- a detection inside a labelled window: scaled sigmoid of its relative
  position, 2 sigmoid(-5 p) - 1 with p = -(right - i + 1) / width, times
  tp_weight / scaled_sigmoid(-1); only the best (earliest) detection of a
  window counts; a window without one costs -fn_weight;
- a detection outside: fp_weight times the scaled sigmoid of its distance
  past the end of the previous window, (i - right) / (width - 1), or -1
  before any window (and -1 from 3 widths on);
- normalised per profile: 100 (raw - null) / (perfect - null), where the
  null detector detects nothing and the perfect one detects the first
  scorable row of every window.
Profiles: standard (tp 1, fp 0.11, fn 1), reward_low_FP_rate (fp 0.22),
reward_low_FN_rate (fn 2).  Prints the three scores over all files, then the
standard profile per category, then (with --rows) per file.
"""
import csv
import datetime
import json
import math
import os
import sys

PROFILES = {
    "standard": {"tp": 1.0, "fp": 0.11, "fn": 1.0},
    "reward_low_FP_rate": {"tp": 1.0, "fp": 0.22, "fn": 1.0},
    "reward_low_FN_rate": {"tp": 1.0, "fp": 0.11, "fn": 2.0},
}


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def scaled_sigmoid(p):
    if p >= 3.0:
        return -1.0
    return 2 * sigmoid(-5 * p) - 1.0


def parse_time(s):
    s = s.strip()
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
        try:
            return datetime.datetime.strptime(s, fmt)
        except ValueError:
            pass
    raise ValueError("not a NAB timestamp: %r" % s)


def sweep(times, windows):
    """Per row: (unweighted score, is-in-window, window index or None,
    scorable).  Mirrors NAB's Sweeper.calcSweepScore."""
    n = len(times)
    prob = min(math.floor(0.15 * n), 0.15 * 5000)
    index = {t: i for i, t in enumerate(times)}
    wl = list(windows)
    rows = []
    cur = None
    cur_right = cur_width = None
    prev_right = prev_width = None
    for i, t in enumerate(times):
        if wl and t == wl[0][0]:
            cur = len(windows) - len(wl)
            lim = wl.pop(0)
            cur_right = index[lim[1]]
            cur_width = float(cur_right - index[lim[0]] + 1)
        if cur is not None:
            p = -(cur_right - i + 1) / cur_width
            rows.append((scaled_sigmoid(p), cur, i >= prob))
        else:
            if prev_right is None:
                p = 3.0
            else:
                p = abs(prev_right - i) / float(prev_width - 1)
            rows.append((scaled_sigmoid(p), None, i >= prob))
        if cur is not None and i == cur_right:
            prev_right, prev_width = i, cur_width
            cur = None
    return rows


def score_file(rows, det):
    """Raw scores per profile for detections det (list of bool), and the
    null and perfect scores."""
    max_tp = scaled_sigmoid(-1.0)
    out = {}
    for name, w in PROFILES.items():
        win_best = {}
        perfect = {}
        fp = 0.0
        tp = fps = 0
        for (u, win, scorable), d in zip(rows, det):
            if not scorable:
                continue
            if win is not None:
                ws = u * w["tp"] / max_tp
                win_best.setdefault(win, -w["fn"])
                perfect.setdefault(win, ws)  # first scorable row
                if d:
                    win_best[win] = max(win_best[win], ws)
            elif d:
                fp += u * w["fp"]
                fps += 1
        raw = fp + sum(win_best.values())
        null = -w["fn"] * len(win_best)
        perf = sum(perfect.values())
        tp = sum(1 for k in win_best if win_best[k] > -w["fn"])
        out[name] = (raw, null, perf, tp, len(win_best) - tp, fps)
    return out


def norm(raw, null, perf):
    if perf == null:
        return float("nan")
    return 100.0 * (raw - null) / (perf - null)


def load_windows(nab):
    """The labelled windows of NAB_DIR: its combined_windows.json, or the
    one under labels/ in a checkout of NAB's repository."""
    for rel in ("combined_windows.json", "labels/combined_windows.json"):
        path = os.path.join(nab, rel)
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)
    raise SystemExit("nab_score: no combined_windows.json in %s or %s/labels"
                     % (nab, nab))


def read_detections(path, col, cut=0.5):
    """Times and detections (column col >= cut) of one results file; with
    cut None, the column's values (None where empty)."""
    times, det = [], []
    with open(path) as f:
        rd = csv.reader(l for l in f if not l.startswith("#"))
        head = next(rd)
        ti, ci = head.index("timestamp"), head.index(col)
        for r in rd:
            times.append(parse_time(r[ti]))
            v = r[ci].strip()
            if cut is None:
                det.append(float(v) if v != "" else None)
            else:
                det.append(v != "" and float(v) >= cut)
    return times, det


def score_files(labels, detections):
    """Totals per profile, per category per profile, and per file:
    [raw, null, perfect, TP, FN, FP].  detections(fname, profile) gives
    the file's times and detections (a detector may have a threshold per
    profile, as NAB's published results do)."""
    total = {p: [0.0, 0.0, 0.0, 0, 0, 0] for p in PROFILES}
    cats = {}
    per_file = []
    for fname in sorted(labels):
        windows = [(parse_time(a), parse_time(b)) for a, b in labels[fname]]
        cat = fname.split("/")[0]
        cats.setdefault(cat, {p: [0.0, 0.0, 0.0, 0, 0, 0] for p in PROFILES})
        sc = {}
        rows = None
        for p in PROFILES:
            times, det = detections(fname, p)  # the same times each time
            if rows is None:
                rows = sweep(times, windows)
            sc[p] = score_file(rows, det)[p]
            for k in range(6):
                total[p][k] += sc[p][k]
                cats[cat][p][k] += sc[p][k]
        per_file.append((fname, sc))
    return total, cats, per_file


def main(argv):
    col = "alert"
    show_rows = "--rows" in argv
    argv = [a for a in argv if a != "--rows"]
    if "--column" in argv:
        k = argv.index("--column")
        col = argv[k + 1]
        del argv[k:k + 2]
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    nab, res = argv[1], argv[2]
    labels = load_windows(nab)
    cache = {}

    def detections(fname, profile):
        if fname not in cache:
            cache.clear()
            cache[fname] = read_detections(os.path.join(res, fname), col)
        return cache[fname]

    total, cats, per_file = score_files(labels, detections)
    print("| profile | score | raw | null | perfect | TP | FN | FP |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in PROFILES:
        raw, null, perf, tp, fn, fp = total[p]
        print("| %s | %.1f | %.2f | %.1f | %.1f | %d | %d | %d |" %
              (p, norm(raw, null, perf), raw, null, perf, tp, fn, fp))
    print()
    print("| category (standard) | score | raw | TP | FN | FP |")
    print("|---|---:|---:|---:|---:|---:|")
    for c in sorted(cats):
        raw, null, perf, tp, fn, fp = cats[c]["standard"]
        s = norm(raw, null, perf)
        print("| %s | %s | %.2f | %d | %d | %d |" %
              (c, "-" if math.isnan(s) else "%.1f" % s, raw, tp, fn, fp))
    if show_rows:
        print()
        print("| file | standard raw | TP | FN | FP |")
        print("|---|---:|---:|---:|---:|")
        for fname, sc in per_file:
            raw, null, perf, tp, fn, fp = sc["standard"]
            print("| %s | %.2f | %d | %d | %d |" % (fname, raw, tp, fn, fp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
