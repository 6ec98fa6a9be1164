#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Data sets for the PromQL comparison (bench/README.md, "PromQL compare").

Writes OpenMetrics text with a timestamp on every sample and a final
"# EOF": the input of `promtool tsdb create-blocks-from openmetrics` and of
`gpuwatch store import`.  Deterministic for a given seed.

  gen.py mixed FILE [--hours H] [--interval S] [--end T] [--seed N]
      simulator-like gauges and counters with resets, 0-2 ms scrape jitter,
      series that stop (a GPU lost), empty label values, a histogram with
      `le` buckets, a NaN-bearing gauge and per-process (pid churn) series.
  gen.py churn FILE --series N [--hours H] [--interval S] [--end T]
      N per-process series (pid, comm, gpu), each process living a few
      minutes: the pid-churn set.
  gen.py dcgm FILE [--csv PATH]
      the real DCGM trace of bench/data/ (one series per GPU and field).

The simulator's own 8 GPUs come from `bench_om_export sim` (om_export.c).
--end is the last timestamp (Unix seconds, default: now rounded down to the
minute, less one hour).  Prints a JSON summary (series, samples, times and
the reference instants the corpus uses) on standard output.
"""
import argparse
import calendar
import csv
import json
import math
import os
import random
import sys
import time

JITTER_MS = 2


def fmt_v(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    r = repr(float(v))
    return r[:-2] if r.endswith(".0") else r


def fmt_t(ms):
    return "%d.%03d" % (ms // 1000, ms % 1000)


class Writer:
    def __init__(self, path):
        self.f = open(path, "w")
        self.series = 0
        self.samples = 0

    def series_of(self, name, labels, points):
        """points: iterable of (t_ms, value) in time order."""
        lab = ",".join('%s="%s"' % (k, v.replace("\\", "\\\\").replace('"', '\\"'))
                       for k, v in labels)
        head = name + ("{" + lab + "}" if lab else "")
        n = 0
        for t, v in points:
            self.f.write("%s %s %s\n" % (head, fmt_v(v), fmt_t(t)))
            n += 1
        if n:
            self.series += 1
            self.samples += n

    def close(self):
        self.f.write("# EOF\n")
        self.f.close()


def ticks(rng, start, end, step, jitter=True):
    t = start
    while t <= end:
        yield t + (rng.randint(0, JITTER_MS) if jitter else 0)
        t += step


def mixed(a, w):
    rng = random.Random(a.seed)
    step = int(a.interval * 1000)
    end = a.end * 1000
    start = end - int(a.hours * 3600 * 1000) + step
    dur = end - start
    stop = start + int(dur * 0.7) // step * step  # GPU 3 is lost here
    reset = start + int(dur * 0.4) // step * step  # counters reset here
    gpus = ["0", "1", "2", "3"]
    for g in gpus:
        gi = int(g)
        last = stop if g == "3" else end
        ts = list(ticks(rng, start, last, step))
        w.series_of("gpu_temperature_celsius", [("gpu", g), ("host", "n1")],
                    ((t, round(55 + 10 * math.sin(t / 6e5 + gi) + rng.random(), 2)) for t in ts))
        w.series_of("gpu_power_watts", [("gpu", g), ("host", "n1")],
                    ((t, 300 + 200 * math.sin(t / 9e5 + gi) + rng.random() * 10) for t in ts))
        w.series_of("gpu_up", [("gpu", g), ("host", "n1")], ((t, 1) for t in ts))
        w.series_of("gpu_memory_used_bytes", [("gpu", g), ("host", "n1")],
                    ((t, float(int(40e9 + 30e9 * math.sin(t / 3e6 + gi)))) for t in ts))
        e, pts = 1e6 * (gi + 1), []
        for t in ts:
            if g == "1" and t == reset:
                e = 0.0  # the driver reloaded: the counter restarts
            e += 250 + rng.random() * 100
            pts.append((t, round(e, 3)))
        w.series_of("gpu_energy_joules_total", [("gpu", g), ("host", "n1")], pts)
        x = 0
        pts = []
        for t in ts:
            if rng.random() < 0.002:
                x += 1
            pts.append((t, x))
        w.series_of("gpu_xid_errors_total", [("gpu", g), ("host", "n1")], pts)
    ts = list(ticks(rng, start, end, step))
    for h in ["/api/v1/query", "/metrics"]:
        for code in ["200", "500"]:
            c, pts = 0, []
            for t in ts:
                if h == "/metrics" and code == "200" and t == reset:
                    c = 0
                c += rng.randint(0, 20) if code == "200" else (1 if rng.random() < 0.05 else 0)
                pts.append((t, c))
            w.series_of("http_requests_total", [("code", code), ("handler", h)], pts)
        # A histogram: cumulative buckets, _sum, _count.
        bounds = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "+Inf"]
        cum = [0] * len(bounds)
        s, cnt = 0.0, 0
        rows = {b: [] for b in bounds}
        sums, counts = [], []
        for t in ts:
            for _ in range(rng.randint(0, 8)):
                d = rng.lognormvariate(-3.5 if h == "/metrics" else -2.5, 1.0)
                s += d
                cnt += 1
                for i, b in enumerate(bounds):
                    if b == "+Inf" or d <= float(b):
                        cum[i] += 1
            for i, b in enumerate(bounds):
                rows[b].append((t, cum[i]))
            sums.append((t, round(s, 6)))
            counts.append((t, cnt))
        for b in bounds:
            w.series_of("http_request_duration_seconds_bucket", [("handler", h), ("le", b)], rows[b])
        w.series_of("http_request_duration_seconds_sum", [("handler", h)], sums)
        w.series_of("http_request_duration_seconds_count", [("handler", h)], counts)
    # A gauge with NaN readings and negative values.
    w.series_of("sensor_reading", [("sensor", "inlet")],
                ((t, float("nan") if rng.random() < 0.01 else round(rng.uniform(-5, 5), 3)) for t in ts))
    # Processes: pid churn, an empty comm (kernel threads, exited
    # processes), memory and CPU per (pid, comm).
    life = max(10, int(600 / a.interval))  # samples a process lives
    n_proc = max(4, len(ts) // life * 3)
    for i in range(n_proc):
        pid = str(1000 + i * 7)
        comm = ["python", "", "train.py", "nccl-worker"][i % 4]
        gpu = gpus[i % 3]
        first = rng.randint(0, max(0, len(ts) - life))
        pts = ts[first:first + life]
        mem = rng.randint(1, 40) * 1e9
        w.series_of("process_gpu_memory_bytes", [("comm", comm), ("gpu", gpu), ("pid", pid)],
                    ((t, mem + (k % 10) * 1e6) for k, t in enumerate(pts)))
        cpu = 0.0
        cpts = []
        for t in pts:
            cpu += rng.random() * a.interval
            cpts.append((t, round(cpu, 3)))
        w.series_of("process_cpu_seconds_total", [("comm", comm), ("pid", pid)], cpts)
    return {"start": start / 1000, "end": end / 1000, "stop": stop / 1000,
            "reset": reset / 1000, "interval": a.interval}


def churn(a, w):
    rng = random.Random(a.seed)
    step = int(a.interval * 1000)
    end = a.end * 1000
    start = end - int(a.hours * 3600 * 1000) + step
    ts = list(range(start, end + 1, step))
    per_proc = 2  # series per process
    n_proc = max(1, a.series // per_proc)
    life = max(3, min(len(ts), int(a.life / a.interval)))
    comms = ["python", "", "torchrun", "nccl", "triton_server", "ray::worker"]
    for i in range(n_proc):
        pid = str(100000 + i)
        comm = comms[i % len(comms)]
        gpu = str(i % 8)
        first = (i * (len(ts) - life)) // max(1, n_proc - 1) if n_proc > 1 else 0
        pts = [t + rng.randint(0, JITTER_MS) for t in ts[first:first + life]]
        mem = rng.randint(1, 80) * 1e9
        w.series_of("process_gpu_memory_bytes", [("comm", comm), ("gpu", gpu), ("pid", pid)],
                    ((t, mem) for t in pts))
        u = [(t, float(rng.randint(0, 100))) for t in pts]
        w.series_of("process_gpu_utilization_ratio", [("comm", comm), ("gpu", gpu), ("pid", pid)],
                    ((t, v / 100) for t, v in u))
    return {"start": start / 1000, "end": end / 1000, "stop": end / 1000,
            "reset": end / 1000, "interval": a.interval}


def dcgm(a, w):
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    fields = [k for k in rows[0] if k.startswith("DCGM_FI_")]
    series = {}
    for r in rows:
        t = calendar.timegm(time.strptime(r["timeUtc"], "%Y-%m-%d %H:%M:%S"))
        for k in fields:
            if r[k] != "":
                series.setdefault((k, r["gpu"], r["node"], r["modelName"]), []).append((t * 1000, float(r[k])))
    t0 = min(p[0][0] for p in series.values())
    t1 = max(p[-1][0] for p in series.values())
    for (k, g, node, model), pts in sorted(series.items()):
        w.series_of(k, [("gpu", g), ("Hostname", node), ("modelName", model)], pts)
    return {"start": t0 / 1000, "end": t1 / 1000, "stop": t1 / 1000,
            "reset": t1 / 1000, "interval": 600.0}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["mixed", "churn", "dcgm"])
    p.add_argument("file")
    p.add_argument("--hours", type=float, default=3)
    p.add_argument("--interval", type=float, default=1)
    p.add_argument("--end", type=int, default=(int(time.time()) // 60 * 60) - 3600)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--series", type=int, default=100000)
    p.add_argument("--life", type=float, default=300, help="seconds a churn process lives")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--csv", default=os.path.join(here, "..", "data", "dcgm_ggpu129_gpu-lost_wide.csv"))
    a = p.parse_args()
    w = Writer(a.file)
    info = {"mixed": mixed, "churn": churn, "dcgm": dcgm}[a.kind](a, w)
    w.close()
    info.update(kind=a.kind, series=w.series, samples=w.samples)
    json.dump(info, sys.stdout)
    print()


if __name__ == "__main__":
    main()
