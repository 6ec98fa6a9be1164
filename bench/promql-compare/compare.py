#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PromQL answers of the agent against Prometheus (and VictoriaMetrics).

Loads the same samples (OpenMetrics text, gen.py / bench_om_export) into
  (a) the agent's store with `gpuwatch store import`, then an agent on it
      with every collector off;
  (b) Prometheus: `promtool tsdb create-blocks-from openmetrics`, then
      `prometheus` on those blocks;
  (c) VictoriaMetrics through /api/v1/import/prometheus (optional;
      informative only: MetricsQL deliberately differs),
then asks each the corpus (corpus.promql) through /api/v1/query at several
instants and /api/v1/query_range at the raw step (the sample interval) over
1 h and at 60 s steps over 1 h (steps not on the minute) and 24 h (on the
minute), and lists every difference from Prometheus beyond 1e-9 relative.
It also measures bytes on disk (all files), ingest rate and query latency,
as ratios against Prometheus and VictoriaMetrics in the same run.

  compare.py --data FILE.om --info INFO.json --dataset mixed --out DIR
             [--gpuwatch BIN] [--instants N] [--kinds instant,raw-1h,...]
             [--known known-differences.tsv] [--no-vm]

Writes DIR/report.md (summary, sizes, rates, latency, differences by
category), DIR/differences.tsv (every difference: kind, expression, time,
series, Prometheus' value, the agent's, relative difference) and
DIR/found.tsv (kind and expression of each differing query).  With --known,
exits 1 when a (kind, expression) differs that the list does not name, and
prints the listed ones that no longer differ.
"""
import argparse
import http.client
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REL_TOL = 1e-9

# Placeholders of corpus.promql per data set.
DATASETS = {
    "mixed": {
        "g": "gpu_temperature_celsius", "g2": "gpu_power_watts",
        "c": "gpu_energy_joules_total", "c2": "http_requests_total",
        "up": "gpu_up", "mem": "gpu_memory_used_bytes",
        "h": "http_request_duration_seconds",
        "p": "process_gpu_memory_bytes", "pc": "process_cpu_seconds_total",
        "n": "sensor_reading", "pid": "1007",
    },
    "sim": {
        "g": "sim_temp_c", "g2": "sim_power_w", "c": "sim_energy_mj_total",
        "mem": "sim_mem_used_b",
    },
    "dcgm": {
        "g": "DCGM_FI_DEV_GPU_TEMP", "g2": "DCGM_FI_DEV_POWER_USAGE",
        "c": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "mem": "DCGM_FI_DEV_FB_USED",
    },
    "churn": {
        "p": "process_gpu_memory_bytes",
        "pc": "process_gpu_utilization_ratio", "pid": "100123",
    },
}
PLACEHOLDER = re.compile(r"\{(g2|g|c2|c|up|mem|h|pc|p|n|pid|ts)\}")
# Latency rows of their own in the report (corpus lines).
SHOWN_LATENCY = ['{p}{pid="{pid}"}', "avg by (gpu) ({p})", "sum by (comm) ({p})",
                 '{g}{gpu="1"}', "sum by (gpu) ({g})", "rate({c}[5m])",
                 "quantile_over_time(0.9, {g}[1h])", "max_over_time({g}[1h])"]
ALL_KINDS = ["instant", "raw-1h", "60s-1h", "60s-24h"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def wait_http(url, proc, what, secs=120):
    deadline = time.time() + secs
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("%s exited at start (status %s)" % (what, proc.returncode))
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status < 300:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise SystemExit("%s did not answer %s within %d s" % (what, url, secs))


def stop(proc):
    """SIGTERM; the exit status (None if it had to be killed)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None
    return proc.returncode


class Target:
    def __init__(self, name, url):
        self.name, self.url = name, url
        self.latency = {}  # kind -> list of seconds
        self.by_expr = {}  # (kind, corpus line) -> list of seconds

    def ask(self, path, params, kind, line=None):
        body = urllib.parse.urlencode(params).encode()
        t0 = time.perf_counter()
        try:
            req = urllib.request.Request(self.url + path, data=body, headers={
                "Content-Type": "application/x-www-form-urlencoded"})
            with urllib.request.urlopen(req, timeout=120) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
        except (urllib.error.URLError, OSError) as e:
            return {"status": "error", "errorType": "transport", "error": str(e)}
        finally:
            dt = time.perf_counter() - t0
            self.latency.setdefault(kind, []).append(dt)
        try:
            resp = json.loads(raw)
        except ValueError:
            return {"status": "error", "errorType": "json", "error": raw[:200].decode("utf-8", "replace")}
        if isinstance(resp, dict) and resp.get("status") == "success":
            # Per expression: answers only (a refusal costs nothing).
            self.by_expr.setdefault((kind, line), []).append(dt)
        return resp


# ---- loading ----

def om_to_prometheus_text(src, dst):
    """OpenMetrics (seconds) to the text format with milliseconds, the
    way promtool converts the timestamp (Go's int64(ts*1000))."""
    with open(src) as f, open(dst, "w") as o:
        for line in f:
            if not line or line[0] == "#":
                continue
            head, v, t = line.rsplit(" ", 2)
            o.write("%s %s %d\n" % (head, v, int(float(t) * 1000)))


def load_agent(a, data, work, series):
    d = os.path.join(work, "agent")
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.perf_counter()
    r = subprocess.run([a.gpuwatch, "store", "import", "--quiet", "--data-dir", d,
                        "--store-max-series", str(max(100000, series * 2)),
                        "--store-max-label-values", str(max(10000, series * 2)), data],
                       capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit("gpuwatch store import failed: %s%s" % (r.stdout, r.stderr))
    log("agent import: " + r.stdout.strip().replace("\n", "; "))
    port = free_port()
    agent_log = open(os.path.join(work, "agent.log"), "w")
    p = subprocess.Popen([a.gpuwatch, "agent", "--listen", "127.0.0.1:%d" % port,
                          "--data-dir", d, "--nvml-lib", "/nonexistent/libnvidia-ml.so.1",
                          "--no-ebpf", "--no-cupti", "--statsd-listen", "off",
                          "--cpu-budget", "1", "--disk-budget", "0",
                          "--retention-raw", "3650d", "--retention-1m", "3650d",
                          "--retention-1h", "3650d",
                          "--store-max-series", str(max(100000, series * 2)),
                          "--store-max-label-values", str(max(10000, series * 2)),
                          "--query-max-samples", "50000000"],
                         stdout=agent_log, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    wait_http(url + "/healthz", p, "gpuwatch agent")
    return p, Target("agent", url), secs, d, r.stdout


def load_prometheus(a, data, work):
    d = os.path.join(work, "prometheus")
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.perf_counter()
    r = subprocess.run([a.promtool, "tsdb", "create-blocks-from", "openmetrics", data, d],
                       capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit("promtool create-blocks-from failed: %s%s" % (r.stdout, r.stderr))
    cfg = os.path.join(work, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1m\n")
    port = free_port()
    plog = open(os.path.join(work, "prometheus.log"), "w")
    p = subprocess.Popen([a.prometheus, "--config.file=" + cfg, "--storage.tsdb.path=" + d,
                          "--storage.tsdb.retention.time=100y",
                          "--web.listen-address=127.0.0.1:%d" % port],
                         stdout=plog, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    wait_http(url + "/-/ready", p, "prometheus")
    return p, Target("prometheus", url), secs, d


def load_vm(a, data, work):
    d = os.path.join(work, "victoria-metrics")
    shutil.rmtree(d, ignore_errors=True)
    txt = os.path.join(work, "data.prom")
    om_to_prometheus_text(data, txt)
    port = free_port()
    vlog = open(os.path.join(work, "victoria-metrics.log"), "w")
    p = subprocess.Popen([a.victoria_metrics, "-storageDataPath=" + d,
                          "-httpListenAddr=127.0.0.1:%d" % port, "-retentionPeriod=100y",
                          "-search.latencyOffset=0s", "-search.disableCache"],
                         stdout=vlog, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    wait_http(url + "/health", p, "victoria-metrics")
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    with open(txt, "rb") as f:
        c.request("POST", "/api/v1/import/prometheus", body=f)
        r = c.getresponse()
        r.read()
        if r.status >= 300:
            raise SystemExit("victoria-metrics import: HTTP %d" % r.status)
    urllib.request.urlopen(url + "/internal/force_flush", timeout=600).read()
    secs = time.perf_counter() - t0
    os.unlink(txt)
    return p, Target("victoria-metrics", url), secs, d


# ---- the corpus ----

def read_corpus(path, ph):
    out, section = [], "misc"
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("## "):
                section = line[3:].strip()
                continue
            if not line.strip() or line.startswith("#"):
                continue
            names = PLACEHOLDER.findall(line)
            if any(n not in ph for n in names):
                continue
            expr = PLACEHOLDER.sub(lambda m: ph[m.group(1)], line)
            out.append((section, line, expr))
    return out


def plans(info, kinds, n_instants):
    """(kind, params) for each query the corpus is asked."""
    start, end, iv = info["start"], info["end"], info["interval"]
    stop_t, reset = info["stop"], info["reset"]
    q = []
    if "instant" in kinds:
        cand = [end + 0.5, stop_t + 90.25, reset + 45.5, start + 0.6 * (end - start) + 0.25,
                stop_t + 420.5, end - 1800.125]
        seen = []
        for t in cand:
            t = round(t, 3)
            if start + 600 <= t <= end + 600 and t not in seen:
                seen.append(t)
        for t in seen[:n_instants]:
            q.append(("instant", {"time": "%.3f" % t}))
    if "raw-1h" in kinds:
        e = end + 0.5
        q.append(("raw-1h", {"start": "%.3f" % (e - 3600), "end": "%.3f" % e, "step": "%g" % iv}))
    if "60s-1h" in kinds:
        e = math.floor(end / 60) * 60 - 17.5
        q.append(("60s-1h", {"start": "%.3f" % (e - 3600), "end": "%.3f" % e, "step": "60"}))
    if "60s-24h" in kinds and end - start >= 20 * 3600:
        e = math.floor(end / 60) * 60
        q.append(("60s-24h", {"start": "%.3f" % (e - 86400), "end": "%.3f" % e, "step": "60"}))
    return q


# ---- comparing ----

def fval(s):
    return float({"+Inf": "inf", "-Inf": "-inf", "Inf": "inf"}.get(s, s))


def normal(resp):
    """('error', type, message) or (resultType, {labels: [(ms, value)]}, order)."""
    if not isinstance(resp, dict) or resp.get("status") != "success":
        return ("error", resp.get("errorType", "?") if isinstance(resp, dict) else "?",
                (resp.get("error", "") if isinstance(resp, dict) else "")[:160])
    d = resp["data"]
    rt, res = d["resultType"], d["result"]
    if rt in ("scalar", "string"):
        return (rt, {"": [(round(float(res[0]) * 1000), res[1])]}, [""])
    out, order = {}, []
    for s in res:
        key = "{" + ",".join('%s="%s"' % kv for kv in sorted(s["metric"].items())) + "}"
        pts = s["values"] if "values" in s else [s["value"]]
        out[key] = [(round(float(t) * 1000), v) for t, v in pts]
        order.append(key)
    return (rt, out, order)


def same_value(a, b):
    if a == b:
        return True, 0.0
    try:
        x, y = fval(a), fval(b)
    except ValueError:
        return False, float("nan")
    if math.isnan(x) and math.isnan(y):
        return True, 0.0
    if math.isinf(x) or math.isinf(y) or math.isnan(x) or math.isnan(y):
        return x == y, float("inf")
    m = max(abs(x), abs(y))
    rel = abs(x - y) / m if m else 0.0
    return rel <= REL_TOL, rel


def diff(expr, kind, ref, got):
    """The differences of got (agent) from ref (Prometheus): list of
    (category, time, series, ref value, got value, relative)."""
    out = []
    if ref[0] == "error" or got[0] == "error":
        if ref[0] == "error" and got[0] == "error":
            return out
        if got[0] == "error":
            return [("agent error", "", "", "(answer)", "error: " + got[2], "")]
        return [("prometheus error", "", "", "error: " + ref[2], "(answer)", "")]
    if ref[0] != got[0]:
        return [("result type", "", "", ref[0], got[0], "")]
    r, g = ref[1], got[1]
    for key in sorted(r.keys() - g.keys()):
        out.append(("missing series", "", key, "%d points" % len(r[key]), "-", ""))
    for key in sorted(g.keys() - r.keys()):
        out.append(("extra series", "", key, "-", "%d points" % len(g[key]), ""))
    for key in sorted(r.keys() & g.keys()):
        rp, gp = dict(r[key]), dict(g[key])
        for t in sorted(rp.keys() | gp.keys()):
            ts = "%.3f" % (t / 1000)
            if t not in gp:
                out.append(("missing point", ts, key, rp[t], "-", ""))
            elif t not in rp:
                out.append(("extra point", ts, key, "-", gp[t], ""))
            else:
                ok, rel = same_value(rp[t], gp[t])
                if not ok:
                    out.append(("value", ts, key, rp[t], gp[t], "%.3g" % rel))
    if not out and re.match(r"\s*sort(_desc)?\(", expr) and ref[2] != got[2]:
        out.append(("order", "", "", " ".join(ref[2])[:200], " ".join(got[2])[:200], ""))
    return out


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def gmean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--info", required=True, help="gen.py's JSON summary")
    ap.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpuwatch", default=os.environ.get("GPUWATCH", "gpuwatch"))
    ap.add_argument("--promtool", default="promtool")
    ap.add_argument("--prometheus", default="prometheus")
    ap.add_argument("--victoria-metrics", default="victoria-metrics")
    ap.add_argument("--no-vm", action="store_true")
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus.promql"))
    ap.add_argument("--kinds", default=",".join(ALL_KINDS))
    ap.add_argument("--instants", type=int, default=5)
    ap.add_argument("--known", help="known differences (kind TAB expression TAB reason)")
    a = ap.parse_args()

    os.makedirs(a.out, exist_ok=True)
    with open(a.info) as f:
        info = json.load(f)
    work = os.path.join(a.out, "work")
    os.makedirs(work, exist_ok=True)
    ph = dict(DATASETS[a.dataset])
    ph["ts"] = "%.3f" % round(info["start"] + 0.75 * (info["end"] - info["start"]), 3)
    corpus = read_corpus(a.corpus, ph)
    queries = plans(info, a.kinds.split(","), a.instants)
    samples, series = info["samples"], info["series"]
    procs = []
    try:
        pa, agent, agent_secs, agent_dir, _ = load_agent(a, a.data, work, series)
        procs.append(pa)
        pp, prom, prom_secs, prom_dir = load_prometheus(a, a.data, work)
        procs.append(pp)
        vm = None
        if not a.no_vm and shutil.which(a.victoria_metrics):
            pv, vm, vm_secs, vm_dir = load_vm(a, a.data, work)
            procs.append(pv)
        log("asking %d expressions x %d queries of %s" % (len(corpus), len(queries), ", ".join(
            t.name for t in [agent, prom, vm] if t)))
        diffs, found, vm_found = [], {}, set()
        stats = {}  # (section, kind) -> [asked, differing]
        for section, template, expr in corpus:
            for kind, params in queries:
                path = "/api/v1/query" if kind == "instant" else "/api/v1/query_range"
                p = dict(params, query=expr)
                ref = normal(prom.ask(path, p, kind, template))
                got = normal(agent.ask(path, p, kind, template))
                d = diff(expr, kind, ref, got)
                st = stats.setdefault((section, kind), [0, 0])
                st[0] += 1
                if d:
                    st[1] += 1
                    f = found.setdefault((kind, template), {"section": section, "cats": {}, "n": 0})
                    for c in d:
                        f["cats"][c[0]] = f["cats"].get(c[0], 0) + 1
                        f["n"] += 1
                        at = params.get("time", params.get("start", "") + ".." + params.get("end", ""))
                        diffs.append((kind, template, c[1] or at, c[2], c[3], c[4], c[5], c[0]))
                if vm:
                    vd = diff(expr, kind, ref, normal(vm.ask(path, p, kind, template)))
                    if vd:
                        vm_found.add((kind, template))
    finally:
        status = [stop(p) for p in procs]
    if status[0] != 0:
        # The agent must stop cleanly (sanitizer builds report here).
        with open(os.path.join(work, "agent.log")) as f:
            log("".join(f.readlines()[-30:]))
        log("the agent exited with status %s after SIGTERM" % status[0])
        return 1
    # Sizes after the processes stopped (everything they wrote).
    size = {"agent": du(agent_dir), "prometheus": du(prom_dir)}
    rate = {"agent": samples / agent_secs, "prometheus": samples / prom_secs}
    if vm:
        size["victoria-metrics"] = du(vm_dir)
        rate["victoria-metrics"] = samples / vm_secs

    with open(os.path.join(a.out, "differences.tsv"), "w") as f:
        f.write("kind\texpression\ttime\tseries\tprometheus\tagent\trelative\tcategory\n")
        for d in diffs:
            f.write("\t".join(str(x) for x in d) + "\n")
    with open(os.path.join(a.out, "found.tsv"), "w") as f:
        for (kind, template), v in sorted(found.items()):
            f.write("%s\t%s\t%s\n" % (kind, template, ", ".join(
                "%s %d" % kv for kv in sorted(v["cats"].items()))))

    # The report.
    R = []
    asked = sum(v[0] for v in stats.values())
    R.append("# PromQL comparison: %s\n" % a.dataset)
    R.append("%d series, %d samples, %s to %s UTC; %d expressions, %d queries to each "
             "(kinds: %s).\n" % (series, samples,
                                 time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(info["start"])),
                                 time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(info["end"])),
                                 len(corpus), asked, ", ".join(sorted({k for k, _ in queries}))))
    R.append("## Differences from Prometheus by category\n")
    kinds = []
    for k, _ in queries:
        if k not in kinds:
            kinds.append(k)
    R.append("| section | " + " | ".join(kinds) + " | total |")
    R.append("|---" * (len(kinds) + 2) + "|")
    sections = []
    for s, _, _ in corpus:
        if s not in sections:
            sections.append(s)
    tot = {k: [0, 0] for k in kinds}
    for s in sections:
        row, ra, rd = [], 0, 0
        for k in kinds:
            n, dn = stats.get((s, k), [0, 0])
            tot[k][0] += n
            tot[k][1] += dn
            ra += n
            rd += dn
            row.append("%d/%d" % (dn, n))
        R.append("| %s | %s | %d/%d |" % (s, " | ".join(row), rd, ra))
    R.append("| **all** | %s | %d/%d |\n" % (" | ".join("%d/%d" % (tot[k][1], tot[k][0]) for k in kinds),
                                            sum(v[1] for v in tot.values()), asked))
    R.append("(differing queries / queries asked; a query differs when any series or "
             "point differs by more than %g relative.)\n" % REL_TOL)
    cats = {}
    for v in found.values():
        for c in v["cats"]:
            cats[c] = cats.get(c, 0) + 1
    R.append("| kind of difference | queries |\n|---|---|")
    for c, n in sorted(cats.items(), key=lambda kv: -kv[1]):
        R.append("| %s | %d |" % (c, n))
    R.append("")
    if vm:
        R.append("VictoriaMetrics (informative) differs from Prometheus on %d of %d "
                 "(kind, expression) pairs.\n" % (len(vm_found), len(corpus) * len(kinds)))
    R.append("## Bytes on disk (all files), ingest, latency\n")
    R.append("| | agent | prometheus | victoria-metrics | agent/prometheus | agent/vm |")
    R.append("|---|---|---|---|---|---|")

    def ratio(x, y):
        return "%.2f" % (x / y) if y else "-"
    vmv = size.get("victoria-metrics")
    R.append("| bytes on disk | %d | %d | %s | %s | %s |" % (
        size["agent"], size["prometheus"], vmv if vmv else "-",
        ratio(size["agent"], size["prometheus"]), ratio(size["agent"], vmv) if vmv else "-"))
    R.append("| bytes/sample | %.2f | %.2f | %s | | |" % (
        size["agent"] / samples, size["prometheus"] / samples,
        "%.2f" % (vmv / samples) if vmv else "-"))
    vr = rate.get("victoria-metrics")
    R.append("| ingest samples/s | %.0f | %.0f | %s | %s | %s |" % (
        rate["agent"], rate["prometheus"], "%.0f" % vr if vr else "-",
        ratio(rate["agent"], rate["prometheus"]), ratio(rate["agent"], vr) if vr else "-"))
    for k in kinds:
        la = agent.latency.get(k, [])
        lp = prom.latency.get(k, [])
        lv = vm.latency.get(k, []) if vm else []
        R.append("| latency %s, median ms | %.2f | %.2f | %s | %s | %s |" % (
            k, 1000 * percentile(la, 0.5), 1000 * percentile(lp, 0.5),
            "%.2f" % (1000 * percentile(lv, 0.5)) if lv else "-",
            ratio(percentile(la, 0.5), percentile(lp, 0.5)),
            ratio(percentile(la, 0.5), percentile(lv, 0.5)) if lv else "-"))
        R.append("| latency %s, p90 ms | %.2f | %.2f | %s | %s | %s |" % (
            k, 1000 * percentile(la, 0.9), 1000 * percentile(lp, 0.9),
            "%.2f" % (1000 * percentile(lv, 0.9)) if lv else "-",
            ratio(percentile(la, 0.9), percentile(lp, 0.9)),
            ratio(percentile(la, 0.9), percentile(lv, 0.9)) if lv else "-"))
    # Per expression: the geometric mean of the ratios, and a few that
    # stand for lookups and aggregations.
    def gm_ratio(k, other):
        if not other:
            return "-"
        rs = [percentile(v, 0.5) / percentile(other.by_expr[key], 0.5)
              for key, v in agent.by_expr.items() if key[0] == k and other.by_expr.get(key)]
        return "%.2f" % gmean(rs) if rs else "-"
    for k in kinds:
        R.append("| latency %s, geometric mean of per-expression ratios (both answered) "
                 "| | | | %s | %s |" % (k, gm_ratio(k, prom), gm_ratio(k, vm)))
    for line in SHOWN_LATENCY:
        key = ("instant", line)
        if key not in agent.by_expr or key not in prom.by_expr:
            continue
        la, lp = percentile(agent.by_expr[key], 0.5), percentile(prom.by_expr[key], 0.5)
        lv = percentile(vm.by_expr[key], 0.5) if vm and key in vm.by_expr else None
        R.append("| `%s` instant, median ms | %.2f | %.2f | %s | %s | %s |" % (
            line.replace("|", "\\|"), 1000 * la, 1000 * lp, "%.2f" % (1000 * lv) if lv else "-",
            ratio(la, lp), ratio(la, lv) if lv else "-"))
    R.append("\nIngest: the agent's `gpuwatch store import` (parse, append, cuts, "
             "day close), promtool's block creation, VictoriaMetrics' HTTP import "
             "and flush; wall time.  Latency: each HTTP request as the client sees "
             "it, same client for all.\n")
    R.append("## Differing queries\n")
    R.append("| kind | expression | section | differences |\n|---|---|---|---|")
    for (kind, template), v in sorted(found.items(), key=lambda kv: (kv[1]["section"], kv[0])):
        R.append("| %s | `%s` | %s | %s |" % (kind, template.replace("|", "\\|"), v["section"], ", ".join(
            "%s %d" % kv for kv in sorted(v["cats"].items()))))
    R.append("\nEvery point: differences.tsv.")
    summary = {"dataset": a.dataset, "series": series, "samples": samples,
               "expressions": len(corpus), "queries": asked,
               "differing_queries": sum(v[1] for v in tot.values()),
               "differing_pairs": len(found), "bytes": size, "ingest_samples_per_s": rate,
               "latency_median_ms": {t.name: {k: 1000 * percentile(v, 0.5) for k, v in t.latency.items()}
                                     for t in [agent, prom, vm] if t},
               "latency_p90_ms": {t.name: {k: 1000 * percentile(v, 0.9) for k, v in t.latency.items()}
                                  for t in [agent, prom, vm] if t},
               "latency_median_ms_by_expression": {
                   t.name: {"%s %s" % k: 1000 * percentile(v, 0.5) for k, v in t.by_expr.items()}
                   for t in [agent, prom, vm] if t}}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write("\n".join(R) + "\n")
    log("report: %s" % os.path.join(a.out, "report.md"))

    if not a.known:
        return 0
    known = {}
    with open(a.known) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or not parts[2].strip():
                raise SystemExit("%s: every line is KIND<TAB>EXPRESSION<TAB>REASON: %r" % (a.known, line))
            known[(parts[0], parts[1])] = parts[2]
    asked_pairs = {(k, t) for _, t, _ in corpus for k in kinds}
    # A refusal listed as such that now answers, differently, is new too:
    # the implementation disagrees with Prometheus.
    new = sorted(k for k in found if k not in known or (
        known[k].startswith("agent refuses") and set(found[k]["cats"]) != {"agent error"}))
    gone = sorted(k for k in set(known) - set(found) if k in asked_pairs)
    for k in gone:
        print("no longer differs (trim the list): %s\t%s" % k)
    for k in new:
        v = found[k]
        print("NEW DIFFERENCE: %s\t%s\t(%s)" % (k[0], k[1], ", ".join(
            "%s %d" % kv for kv in sorted(v["cats"].items()))))
        shown = 0
        for d in diffs:
            if (d[0], d[1]) == k and shown < 3:
                print("    at %s %s: prometheus %s, agent %s %s" % (d[2], d[3], d[4], d[5], d[6]))
                shown += 1
    print("%d differing (kind, expression) pairs: %d known, %d new, %d known ones gone" % (
        len(found), len(found) - len(new), len(new), len(gone)))
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
