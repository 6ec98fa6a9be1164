#!/usr/bin/env python3
"""Checks what `gpuwatch top` showed against the agent's own answers.

    top-check.py screen|plain URL TIME FILE [--sort KEY] [--reverse]
                 [--filter TEXT] [--min-procs N]

FILE is a tmux capture of the full-screen view (screen) or the output of
`gpuwatch top --once` (plain), both taken with `--time TIME`.  The agent is
asked /api/v1/query at TIME for every value top shows; each GPU and process
row must carry the agent's value formatted as top formats it, every GPU must
be there, every process that was running at TIME must be there (unless it
is filtered out or the screen had no room), and the process rows must be in
the order asked for.  Prints what differs and exits 1, or exits 0.
"""
import argparse
import json
import re
import sys
import urllib.parse
import urllib.request

errors = []


def err(msg):
    errors.append(msg)


def query(url, expr, at):
    body = urllib.parse.urlencode({"query": expr, "time": at}).encode()
    with urllib.request.urlopen(url + "/api/v1/query", body, timeout=10) as r:
        ans = json.load(r)
    if ans.get("status") != "success":
        sys.exit("query %r failed: %s" % (expr, ans))
    return ans["data"]["result"]


def fmt(v, scale=1.0, decimals=0):
    # top: printf("%.*f", decimals, v * scale), "-" when missing
    return "-" if v is None else "%.*f" % (decimals, v * scale)


def by(result, *keys):
    out = {}
    for s in result:
        out[tuple(s["metric"].get(k, "") for k in keys)] = float(s["value"][1])
    return out


def agent_state(url, at):
    g = lambda name, **extra: by(query(url, name, at), "gpu")
    gpus = {k[0] for k in by(query(url, "gpuwatch_gpu_up", at), "gpu")}
    clock = by(query(url, "gpuwatch_gpu_clock_hertz", at), "gpu", "clock")
    reasons = {}
    for s in query(url, "gpuwatch_gpu_clock_event_active == 1", at):
        reasons.setdefault(s["metric"]["gpu"], []).append(s["metric"]["reason"])
    state = {}
    vals = {
        "util": g("gpuwatch_gpu_utilization_ratio"),
        "mem_util": g("gpuwatch_gpu_memory_utilization_ratio"),
        "used": g("gpuwatch_gpu_memory_used_bytes"),
        "total": g("gpuwatch_gpu_memory_total_bytes"),
        "temp": g("gpuwatch_gpu_temperature_celsius"),
        "hbm": g("gpuwatch_gpu_memory_temperature_celsius"),
        "power": g("gpuwatch_gpu_power_watts"),
        "limit": g("gpuwatch_gpu_power_limit_watts"),
        "up": g("gpuwatch_gpu_up"),
    }
    for gpu in gpus:
        st = {k: v.get((gpu,)) for k, v in vals.items()}
        st["sm"] = clock.get((gpu, "sm"))
        st["memclk"] = clock.get((gpu, "memory"))
        st["reasons"] = reasons.get(gpu, [])
        state[gpu] = st
    procs = {}
    pm = by(query(url, "gpuwatch_gpu_process_memory_used_bytes", at), "gpu", "pid")
    ps = by(query(url, "gpuwatch_gpu_process_sm_utilization_ratio", at), "gpu", "pid")
    pu = by(query(url, "gpuwatch_gpu_process_memory_utilization_ratio", at), "gpu", "pid")
    age = by(query(url, "time() - timestamp(gpuwatch_gpu_process_memory_used_bytes)", at), "gpu", "pid")
    for k in set(pm) | set(ps) | set(pu):
        procs[k] = {"mem": pm.get(k), "sm": ps.get(k), "mem_util": pu.get(k), "age": age.get(k)}
    return state, procs


GPU_SCREEN = re.compile(
    r"^\s*(\S+) \[[| ]*([^|\s]+)%\] \[[| ]*([^|\s/]+)/(\S+)G\]\s+(\S+)/(\S+)\s*C\s+(\S+)/(\S+)\s*W\s+(\S+) (\S+)")
GPU_PLAIN = re.compile(
    r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+.*$")
PROC_SCREEN = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)M\s+(\S+)")
PROC_PLAIN = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)")


def check_gpu_screen(m, state):
    gpu = m.group(1)
    st = state.get(gpu)
    if st is None:
        return err("GPU %s is on screen but not in the agent" % gpu)
    want = [fmt(st["util"], 100), fmt(st["used"], 1 / 1073741824), fmt(st["total"], 1 / 1073741824),
            fmt(st["temp"]), fmt(st["hbm"]), fmt(st["power"]), fmt(st["limit"]), fmt(st["sm"], 1e-6)]
    got = [m.group(i) for i in range(2, 10)]
    if want != got:
        err("GPU %s: screen shows %s, the agent says %s" % (gpu, got, want))


def check_gpu_plain(m, state):
    gpu = m.group(1)
    st = state.get(gpu)
    if st is None:
        return err("GPU %s is printed but not in the agent" % gpu)
    want = [fmt(st["util"], 100), fmt(st["mem_util"], 100), fmt(st["used"], 1 / 1048576),
            fmt(st["total"], 1 / 1048576), fmt(st["temp"]), fmt(st["hbm"]), fmt(st["power"]),
            fmt(st["limit"]), fmt(st["sm"], 1e-6), fmt(st["memclk"], 1e-6),
            ",".join(st["reasons"]) or "-"]
    got = [m.group(i) for i in range(2, 13)]
    # the reasons come in the agent's order, which top keeps
    if want[:10] != got[:10] or sorted(want[10].split(",")) != sorted(got[10].split(",")):
        err("GPU %s: printed %s, the agent says %s" % (gpu, got, want))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["screen", "plain"])
    ap.add_argument("url")
    ap.add_argument("time")
    ap.add_argument("file")
    ap.add_argument("--sort", default="mem")
    ap.add_argument("--reverse", action="store_true")
    ap.add_argument("--filter", default="")
    ap.add_argument("--min-procs", type=int, default=1)
    a = ap.parse_args()

    state, procs = agent_state(a.url, a.time)
    lines = open(a.file, encoding="utf-8", errors="replace").read().splitlines()
    seen_gpus, lost, rows, more = [], [], [], False
    in_procs = False
    part = "head"
    for ln in lines:
        if a.mode == "screen":
            if re.match(r"^\s*PID", ln):
                in_procs = True
                continue
            if not in_procs:
                m = GPU_SCREEN.match(ln)
                if m:
                    seen_gpus.append(m.group(1))
                    check_gpu_screen(m, state)
                elif re.match(r"^\s*(\S+) LOST", ln):
                    seen_gpus.append(ln.split()[0])
                    lost.append(ln.split()[0])
                continue
            m = PROC_SCREEN.match(ln)
            if m:
                rows.append((m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)))
            elif "more (filter" in ln:
                more = True
            else:
                in_procs = False
        else:
            if ln.startswith("GPU  UTIL%"):
                part = "gpus"
            elif ln.startswith("PROCESSES"):
                part = "procs"
            elif ln.startswith("TOP KERNELS"):
                part = "rest"
            elif part == "gpus" and re.match(r"^\S+\s+LOST", ln):
                seen_gpus.append(ln.split()[0])
                lost.append(ln.split()[0])
            elif part == "gpus" and not ln.startswith("GPU ") and GPU_PLAIN.match(ln):
                m = GPU_PLAIN.match(ln)
                seen_gpus.append(m.group(1))
                check_gpu_plain(m, state)
            elif part == "procs" and PROC_PLAIN.match(ln):
                rows.append(PROC_PLAIN.match(ln).groups())

    for gpu, st in state.items():
        if st["up"] == 0 and gpu not in lost:
            err("GPU %s is down (gpuwatch_gpu_up 0) but not shown LOST" % gpu)
    if sorted(seen_gpus) != sorted(state):
        err("GPUs shown %s, the agent has %s" % (sorted(seen_gpus), sorted(state)))

    # process rows: values, then completeness, then order
    shown = set()
    for pid, gpu, sm, mu, mem, comm in rows:
        p = procs.get((gpu, pid))
        shown.add((gpu, pid))
        if p is None:
            err("process %s on GPU %s is shown but not in the agent" % (pid, gpu))
            continue
        want = [fmt(p["sm"], 100), fmt(p["mem_util"], 100), fmt(p["mem"], 1 / 1048576)]
        if [sm, mu, mem] != want:
            err("process %s on GPU %s: shown %s, the agent says %s" % (pid, gpu, [sm, mu, mem], want))
        if p["age"] is not None and p["age"] > 30:
            err("process %s on GPU %s ended %.0fs before TIME but is shown" % (pid, gpu, p["age"]))
        if a.filter and a.filter.lower() not in (pid + " " + gpu + " " + comm).lower():
            err("process %s on GPU %s does not match the filter %r" % (pid, gpu, a.filter))
    running = {k for k, p in procs.items() if p["age"] is not None and p["age"] <= 2.5}
    if a.filter:
        running = {k for k in running if a.filter.lower() in (k[1] + " " + k[0]).lower()}
    missing = running - shown
    if missing and not more:
        err("running processes not shown: %s" % sorted(missing))
    if len(rows) < a.min_procs:
        err("%d process rows, expected at least %d" % (len(rows), a.min_procs))

    def key(r):
        pid, gpu, sm, mu, mem = r[0], r[1], r[2], r[3], r[4]
        num = lambda s: float("-inf") if s == "-" else float(s)
        return {"mem": -num(mem), "util": -num(sm), "memutil": -num(mu),
                "pid": int(pid), "gpu": int(gpu), "comm": r[5]}[a.sort]

    keys = [key(r) for r in rows]
    want = sorted(keys, reverse=a.reverse)
    if keys != want:
        err("rows are not sorted by %s%s: %s" % (a.sort, " reversed" if a.reverse else "",
                                                 [r[0] for r in rows]))
    for e in errors:
        print("top-check: " + e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
