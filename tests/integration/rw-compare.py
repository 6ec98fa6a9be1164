#!/usr/bin/env python3
# Compares what remote_write receivers store with the agent's own history
# (tests t0520, t0521).  Raw mode: every sample the agent holds for the
# selector in [start, end] must be in the receiver, same timestamp, same
# value (the receiver's own labels such as instance set aside).  Rollup
# mode: every NAME:1m_<output> point the receiver holds at a window end T
# in (start, end] equals what the agent's raw samples in [T - 60 s, T)
# give; with --complete, the first window after start holds all five
# outputs (or those --outs names) of every gauge series.  With --without
# LABELS the receiver's names are NAME:1m_without_LABELS_<output>, each
# over the samples of every agent series that differs only in LABELS.
#
# VictoriaMetrics keeps 12 significant decimal digits of a value (its
# documented precision), so its values are compared to 1e-11 relative;
# Prometheus' exactly.
#
# Exit 0 when they agree, 1 with the first differences on stderr.
import argparse
import json
import math
import sys
import urllib.parse
import urllib.request

OUTS = ["avg", "min", "max", "stddev", "count_samples"]

# The readings' steps (rollup_steps in src/export/rw_queue.c): no rollup
# digit finer than these.
STEPS = {
    "gpuwatch_gpu_temperature_celsius": 0.1,
    "gpuwatch_gpu_memory_temperature_celsius": 0.1,
    "gpuwatch_gpu_power_watts": 1.0,
    "gpuwatch_gpu_clock_hertz": 1e6,
    "gpuwatch_gpu_memory_used_bytes": 1e7,
    "gpuwatch_gpu_memory_free_bytes": 1e7,
    "gpuwatch_gpu_process_memory_used_bytes": 1e7,
    "gpuwatch_gpu_pcie_throughput_bytes_per_second": 1e7,
    "gpuwatch_gpu_utilization_ratio": 1e-3,
    "gpuwatch_gpu_memory_utilization_ratio": 1e-3,
    "gpuwatch_gpu_fan_speed_ratio": 1e-3,
    "gpuwatch_gpu_process_sm_utilization_ratio": 1e-3,
    "gpuwatch_gpu_process_memory_utilization_ratio": 1e-3,
    "gpuwatch_gpu_sm_occupancy_ratio": 1e-3,
    "gpuwatch_gpu_sm_active_ratio": 1e-3,
    "gpuwatch_gpu_tensor_active_ratio": 1e-3,
    "gpuwatch_gpu_dram_bandwidth_utilization_ratio": 1e-3,
}


def round_stat(v, digits, noise):
    """v as the agent's precision rule sends it: to digits significant
    digits, or to the largest power of ten not above noise where that is
    coarser (the statistic's standard error, or the reading's step).
    Returns (value, quantum)."""
    if v == 0 or not math.isfinite(v):
        return v, 0.0
    k = math.floor(math.log10(abs(v))) - digits + 1
    if noise > 0 and math.isfinite(noise):
        k = max(k, math.floor(math.log10(noise) + 1e-12))
    if k < 0:
        s = 10.0 ** -k
        return round(v * s) / s, 1.0 / s
    s = 10.0 ** k
    return round(v / s) * s, s


def get(url, params):
    data = urllib.parse.urlencode(params, doseq=True).encode()
    with urllib.request.urlopen(url, data, timeout=30) as r:
        return r.read().decode()


def key(metric, drop):
    return tuple(sorted((k, v) for k, v in metric.items() if k not in drop))


def prom_matrix(base, sel, start, end):
    """Raw samples in [start, end] (ms) from a Prometheus-style API."""
    rng = (end - start) // 1000 + 1
    body = json.loads(
        get(base + "/api/v1/query",
            {"query": "%s[%ds]" % (sel, rng), "time": "%.3f" % (end / 1000)}))
    if body["status"] != "success":
        raise SystemExit("query failed at %s: %s" % (base, body))
    out = {}
    for s in body["data"]["result"]:
        for t, v in s.get("values", []):
            tm = int(round(float(t) * 1000))
            if start <= tm <= end:
                out.setdefault(key(s["metric"], ()), {})[tm] = float(v)
    return out


def vm_export(base, sel, start, end):
    text = get(base + "/api/v1/export",
               {"match[]": sel, "start": "%.3f" % (start / 1000),
                "end": "%.3f" % (end / 1000)})
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        s = json.loads(line)
        d = out.setdefault(key(s["metric"], ()), {})
        for t, v in zip(s["timestamps"], s["values"]):
            if start <= t <= end:
                d[t] = float(v)
    return out


def strip(series, drop):
    out = {}
    for k, d in series.items():
        out.setdefault(tuple(p for p in k if p[0] not in drop), {}).update(d)
    return out


def same(a, b, tol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def stats(vals):
    n = len(vals)
    s = sum(vals)
    sq = sum(x * x for x in vals)
    mean = s / n
    mn, mx = min(vals), max(vals)
    var = sq / n - mean * mean
    sd = 0.0 if mn == mx else math.sqrt(max(var, 0.0))
    return {"avg": mean, "min": mn, "max": mx, "stddev": sd,
            "count_samples": float(n)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--prom")
    ap.add_argument("--vm")
    ap.add_argument("--match", required=True)
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--end", type=int, required=True)
    ap.add_argument("--drop", default="instance")
    ap.add_argument("--rollup", action="store_true")
    ap.add_argument("--complete", action="store_true")
    ap.add_argument("--min-samples", type=int, default=1)
    # The agent's --remote-write-precision: :1m_avg, _min, _max and
    # _stddev leave with this many significant digits (0: all).
    ap.add_argument("--precision", type=int, default=0)
    # --remote-write-stddev-precision (0: as --precision).
    ap.add_argument("--stddev-precision", type=int, default=0)
    ap.add_argument("--without", default="")
    ap.add_argument("--outs", default=",".join(OUTS))
    a = ap.parse_args()
    without = [x for x in a.without.split(",") if x]
    tag = "without_%s_" % "_".join(without) if without else ""
    drop = set(a.drop.split(",")) if a.drop else set()
    errs = []
    recv = {}
    if a.prom:
        recv["prometheus"] = lambda sel, s, e: prom_matrix(a.prom, sel, s, e)
    if a.vm:
        recv["victoriametrics"] = lambda sel, s, e: vm_export(a.vm, sel, s, e)
    if not a.rollup:
        mine = prom_matrix(a.agent, a.match, a.start, a.end)
        total = sum(len(d) for d in mine.values())
        if total < a.min_samples:
            errs.append("the agent holds %d samples, fewer than %d"
                        % (total, a.min_samples))
        for name, fn in recv.items():
            theirs = strip(fn(a.match, a.start, a.end), drop)
            prec = 1e-11 if name == "victoriametrics" else 0
            missing = 0
            for k, d in mine.items():
                o = theirs.get(k, {})
                for t, v in d.items():
                    if t not in o:
                        missing += 1
                        if missing <= 5:
                            errs.append("%s lacks %s @%d" % (name, k, t))
                    elif not same(v, o[t], prec):
                        errs.append("%s: %s @%d = %r, the agent's %r"
                                    % (name, k, t, o[t], v))
            if missing:
                errs.append("%s lacks %d of %d samples" % (name, missing, total))
            print("%s: %d series, %d samples compared, %d missing"
                  % (name, len(mine), total, missing))
    else:
        # The agent's raw samples from a minute before start on.
        raw = prom_matrix(a.agent, a.match, a.start - 60000, a.end)
        gauges = {}
        for k, d in raw.items():
            # grouped over the --without labels (each a group of one
            # without them)
            g = tuple(p for p in k if p[0] not in without)
            gauges.setdefault(g, []).extend(d.items())
        for g in gauges:
            gauges[g].sort()
        if not gauges:
            # nothing to compare with: say where the emptiness came from
            errs.append("the agent answered no raw samples for %s in "
                        "[%d, %d]" % (a.match, a.start - 60000, a.end))
        sel = '{__name__=~"(%s):1m_%s(%s)"}' % (
            "|".join(sorted({dict(k)["__name__"] for k in gauges})) or "none",
            tag, "|".join(OUTS))
        for name, fn in recv.items():
            theirs = strip(fn(sel, a.start, a.end), drop)
            checked = 0
            first = {}
            for k, d in theirs.items():
                lab = dict(k)
                base, out = lab["__name__"].split(":1m_", 1)
                out = out[len(tag):]
                lab["__name__"] = base
                src = gauges.get(tuple(sorted(lab.items())))
                if src is None:
                    errs.append("%s: %s has no source series" % (name, k))
                    continue
                for t, v in d.items():
                    vals = [x for (ts, x) in src if t - 60000 <= ts < t]
                    if not vals:
                        errs.append("%s: %s @%d: no agent samples" % (name, k, t))
                        continue
                    st = stats(vals)
                    want = st[out]
                    tol = 1e-9 if out in ("avg", "stddev") else 0
                    if out == "stddev":
                        tol = 1e-6
                    digits = a.precision
                    if out == "stddev" and a.stddev_precision:
                        digits = a.stddev_precision
                    quantum = 0.0
                    if digits and out != "count_samples":
                        # rounded as the agent rounds (docs/internals/
                        # remote-write-queue.md, "Precision"); a value at
                        # a rounding boundary may go either way, and a
                        # spread at a power of ten may pick the next one
                        sd, n = st["stddev"], st["count_samples"]
                        noise = {"avg": sd / math.sqrt(n),
                                 "min": sd / 4, "max": sd / 4,
                                 "stddev": sd / math.sqrt(2 * (n - 1))
                                 if n > 1 else 0.0}[out]
                        noise = max(noise, STEPS.get(base, 0.0))
                        want, quantum = round_stat(want, digits, noise)
                    if name == "victoriametrics":
                        tol = max(tol, 1e-11)
                    if not (same(v, want, tol) or
                            abs(v - want) <= 10 * quantum):
                        errs.append("%s: %s @%d = %r, the agent's window "
                                    "gives %r" % (name, k, t, v, want))
                    checked += 1
                    first.setdefault((tuple(sorted(lab.items())), t), set()).add(out)
            print("%s: %d rollup points compared" % (name, checked))
            if checked < a.min_samples:
                errs.append("%s: only %d rollup points" % (name, checked))
            if a.complete:
                # The first window end after start: all five outputs of
                # every gauge series that has samples in it.
                t1 = (a.start // 60000 + 1) * 60000
                for k, src in gauges.items():
                    if not [x for (ts, x) in src if t1 - 60000 <= ts < t1]:
                        continue
                    got = first.get((k, t1), set())
                    if got != set(a.outs.split(",")):
                        errs.append("%s: %s @%d has outputs %s" %
                                    (name, k, t1, sorted(got)))
                        break
    if errs:
        for e in errs[:20]:
            print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
