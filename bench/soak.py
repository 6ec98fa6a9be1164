#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The soak: one agent under a steady mixed load for hours, its footprint
sampled over time.  Driven by bench/soak.sh, which builds and starts the
agent; this script makes the load and records the curves.

Load, all at once for --duration seconds:
  - the agent's own 8 simulated GPUs (started by soak.sh);
  - StatsD: --statsd-rate datagrams/s of counters, gauges, timers, sets
    and distributions, with a job tag that changes every 10 minutes (so
    series stop and new ones start, as jobs do);
  - CUPTI: a short CUDA process (the injection library over the fake
    libcupti) every --cupti-every seconds, so rings come and go;
  - a scrape of /metrics every second;
  - a heavy query every 10 s: a regex range query over every series.

Every --sample-every seconds a row: elapsed s, RSS KiB, open fds, threads,
CPU of one core over the last period (%), dropped samples (every
gpuwatch_*dropped* and *refused* counter summed), scrape and query
latency (p50/max ms over the period), scrapes and queries that failed.

At the end, over the second half of the run (the first is warm-up: the
store's head fills with an hour of raw samples, and the first hourly cut
opens the day's partition files): each column's first and last quarter
compared; a footprint is flat when the last quarter's median is within
10% (RSS, fds, threads) of the first quarter's.  The summary says which
are not.
"""
import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def proc_status(pid):
    rss = threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


def proc_cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime + stime


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def fetch(url, timeout):
    t0 = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = r.read()
    return body, (time.monotonic() - t0) * 1000


def dropped(text):
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        # The store's refusals are also in gpuwatch_store_samples_refused_total.
        if 'reason="store_refused"' in line:
            continue
        if name.startswith("gpuwatch_") and ("dropped" in name or "refused" in name):
            try:
                total += float(line.rsplit(" ", 1)[1])
            except ValueError:
                pass
    return total


class Cupti:
    """One short CUDA process at a time: ready, then told to exit."""

    def __init__(self, host, env):
        self.host, self.env, self.p = host, env, None

    def step(self):
        if self.p is not None:
            try:
                self.p.stdin.close()
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
            self.p = None
        if self.host:
            self.p = subprocess.Popen([self.host, "basic"], env=self.env,
                                      stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)

    def stop(self):
        if self.p is not None:
            self.p.kill()
            self.p.wait()


def statsd_burst(sock, addr, n, job):
    for i in range(n):
        k = random.randrange(5)
        if k == 0:
            line = f"soak.requests:1|c|#job:{job},route:r{i % 20}"
        elif k == 1:
            line = f"soak.loss:{random.random():.4f}|g|#job:{job}"
        elif k == 2:
            line = f"soak.step_ms:{random.gauss(120, 15):.2f}|ms|#job:{job}"
        elif k == 3:
            line = f"soak.users:u{random.randrange(5000)}|s|#job:{job}"
        else:
            line = f"soak.latency:{random.expovariate(0.05):.3f}|d|#job:{job}"
        try:
            sock.sendto(line.encode(), addr)
        except OSError:
            pass


def quarter_medians(col):
    q = max(1, len(col) // 4)
    return statistics.median(col[:q]), statistics.median(col[-q:])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--statsd", required=True, help="HOST:PORT")
    ap.add_argument("--duration", type=float, default=7200)
    ap.add_argument("--sample-every", type=float, default=60)
    ap.add_argument("--statsd-rate", type=int, default=500)
    ap.add_argument("--cupti-every", type=float, default=20)
    ap.add_argument("--inject-host", default="")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    host, port = a.statsd.rsplit(":", 1)
    addr = (host, int(port))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cupti = Cupti(a.inject_host, dict(os.environ))
    heavy = urllib.parse.urlencode({"query": 'count({__name__=~"gpuwatch_.+"})',
                                    "start": 0, "end": 0, "step": 15})
    hz = os.sysconf("SC_CLK_TCK")
    start = time.monotonic()
    next_sample = start + a.sample_every
    next_query = start + 10
    next_cupti = start
    last_ticks, last_t = proc_cpu_ticks(a.pid), start
    scrape_ms, query_ms = [], []
    failed_scrapes = failed_queries = 0
    rows = []
    out = open(a.out, "w")
    out.write("elapsed_s\trss_kib\tfds\tthreads\tcpu_pct\tdropped\t"
              "scrape_p50_ms\tscrape_max_ms\tquery_p50_ms\tquery_max_ms\t"
              "scrapes_failed\tqueries_failed\n")
    last_metrics = b""
    try:
        while True:
            now = time.monotonic()
            if now - start >= a.duration:
                break
            if not os.path.exists(f"/proc/{a.pid}"):
                print("soak: the agent exited", file=sys.stderr)
                return 1
            job = f"j{int((now - start) // 600)}"
            statsd_burst(sock, addr, a.statsd_rate, job)
            try:
                last_metrics, ms = fetch(a.url + "/metrics", 10)
                scrape_ms.append(ms)
            except (urllib.error.URLError, OSError):
                failed_scrapes += 1
            if now >= next_query:
                next_query += 10
                end = time.time()
                q = heavy.replace("start=0", f"start={end - 3600:.3f}").replace(
                    "end=0", f"end={end:.3f}")
                try:
                    _, ms = fetch(a.url + "/api/v1/query_range?" + q, 60)
                    query_ms.append(ms)
                except (urllib.error.URLError, OSError):
                    failed_queries += 1
            if now >= next_cupti and a.inject_host:
                next_cupti += a.cupti_every
                cupti.step()
            if now >= next_sample:
                next_sample += a.sample_every
                ticks = proc_cpu_ticks(a.pid)
                cpu = 100.0 * (ticks - last_ticks) / hz / (now - last_t)
                last_ticks, last_t = ticks, now
                rss, threads = proc_status(a.pid)
                row = (now - start, rss, fds(a.pid), threads, cpu,
                       dropped(last_metrics.decode(errors="replace")),
                       statistics.median(scrape_ms) if scrape_ms else 0,
                       max(scrape_ms, default=0),
                       statistics.median(query_ms) if query_ms else 0,
                       max(query_ms, default=0), failed_scrapes, failed_queries)
                rows.append(row)
                out.write("%.0f\t%d\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%d\t%d\n"
                          % row)
                out.flush()
                scrape_ms, query_ms = [], []
            time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
    finally:
        cupti.stop()
        out.close()

    if len(rows) < 8:
        print("soak: too short for a verdict (fewer than 8 rows)")
        return 0
    warm = rows[len(rows) // 2:]
    print("column      first-quarter  last-quarter  change")
    flat = True
    for i, name in ((1, "rss_kib"), (2, "fds"), (3, "threads"), (4, "cpu_pct")):
        f, l = quarter_medians([r[i] for r in warm])
        change = (l - f) / f if f else 0.0
        mark = ""
        if i != 4 and change > 0.10:
            mark, flat = "  NOT FLAT", False
        print(f"{name:<11} {f:>13.1f} {l:>13.1f} {change:>+7.1%}{mark}")
    d0, d1 = rows[0][5], rows[-1][5]
    print(f"dropped     {d0:>13.0f} {d1:>13.0f}  (counters, first and last row)")
    print(f"scrapes failed {rows[-1][10]}, queries failed {rows[-1][11]}")
    print("verdict:", "flat" if flat else "NOT flat")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
