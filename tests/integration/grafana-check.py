#!/usr/bin/env python3
"""Evaluates every query of a Grafana dashboard against a Prometheus API.

    grafana-check.py DASHBOARD.json URL [--var NAME=VALUE]... [--rate-interval D]
                     [--range D] [--step D] [--allow-empty ROW-TITLE]...
                     [--user USER:PASSWORD]

Walks every panel (also those inside collapsed rows) and every target, puts
in the values Grafana would (template variables as given with --var, "All"
as their allValue otherwise; $__rate_interval, $__interval, $__range and
friends), and asks URL: a range query over the last --range for a range
target, an instant query for an instant one.  Each must answer "success"
with at least one series holding a number; the dashboard's template
variables (label_values(...)) must list at least one value.  Panels under a
row named with --allow-empty may come back empty (their data source is not
fed in this run); errors there still count.

Prints one line per target and exits 1 when any failed.
"""
import argparse
import base64
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def secs(d):
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)", d)
    if not m:
        sys.exit("bad duration %r" % d)
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


class Api:
    def __init__(self, url, user):
        self.url = url.rstrip("/")
        self.auth = None
        if user:
            self.auth = "Basic " + base64.b64encode(user.encode()).decode()

    def get(self, path, params, post=True):
        data = urllib.parse.urlencode(params, doseq=True)
        if post:
            req = urllib.request.Request(self.url + path, data.encode())
            req.add_header("Content-Type", "application/x-www-form-urlencoded")
        else:
            req = urllib.request.Request(self.url + path + "?" + data)
        if self.auth:
            req.add_header("Authorization", self.auth)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            try:
                return json.load(e)
            except ValueError:
                return {"status": "error", "error": "HTTP %d" % e.code}


def panels(dash):
    """(row title, panel) for every panel that is not a row."""
    row = ""
    for p in dash.get("panels", []):
        if p.get("type") == "row":
            row = p.get("title", "")
            for q in p.get("panels", []):
                yield row, q
            continue
        yield row, p


def substitute(expr, variables, a):
    builtins = {
        "__rate_interval": a.rate_interval,
        "__interval": a.step,
        "__range": a.range,
        "__range_s": str(int(secs(a.range))),
        "__range_ms": str(int(secs(a.range) * 1000)),
        "__interval_ms": str(int(secs(a.step) * 1000)),
    }
    values = dict(builtins)
    values.update(variables)

    def repl(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name not in values:
            raise KeyError(name)
        return values[name]

    # ${name}, ${name:fmt}, [[name]] and $name, longest names first
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", repl, expr)


def has_number(result):
    for s in result:
        pts = s.get("values") or ([s["value"]] if "value" in s else [])
        for _, v in pts:
            try:
                if not math.isnan(float(v)):
                    return True
            except ValueError:
                pass
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("url")
    ap.add_argument("--var", action="append", default=[])
    ap.add_argument("--rate-interval", default="1m")
    ap.add_argument("--range", default="15m")
    ap.add_argument("--step", default="15s")
    ap.add_argument("--allow-empty", action="append", default=[])
    ap.add_argument("--user")
    a = ap.parse_args()

    dash = json.load(open(a.dashboard))
    api = Api(a.url, a.user)
    given = dict(v.split("=", 1) for v in a.var)
    variables = {}
    failed = checked = 0

    for v in dash.get("templating", {}).get("list", []):
        name = v["name"]
        if v.get("type") == "datasource":
            variables[name] = "unused"
            continue
        variables[name] = given.get(name, v.get("allValue") or ".*")
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q.strip())
        if not m:
            print("FAIL variable %s: not label_values(SELECTOR, LABEL): %s" % (v["name"], q))
            failed += 1
            continue
        sel = substitute(m.group(1), variables, a)
        ans = api.get("/api/v1/label/%s/values" % m.group(2), {"match[]": sel}, post=False)
        checked += 1
        if ans.get("status") != "success" or not ans.get("data"):
            print("FAIL variable %s: %s lists no value: %s" % (v["name"], q, ans))
            failed += 1
        else:
            print("ok   variable %s: %s" % (v["name"], ", ".join(ans["data"][:8])))

    # The shape Grafana needs: unique panel ids, every panel on the
    # 24-column grid, every query on the dashboard's datasource variable.
    ids = set()
    for row, p in list(panels(dash)) + [("", r) for r in dash.get("panels", []) if r.get("type") == "row"]:
        g = p.get("gridPos", {})
        where = "[%s] %s" % (row, p.get("title"))
        if p.get("id") in ids:
            print("FAIL %s: panel id %s is used twice" % (where, p.get("id")))
            failed += 1
        ids.add(p.get("id"))
        if not (g.get("w", 0) > 0 and g.get("h", 0) > 0 and g.get("x", -1) >= 0 and g["x"] + g["w"] <= 24):
            print("FAIL %s: gridPos %s is off the 24-column grid" % (where, g))
            failed += 1
        for t in p.get("targets", []):
            if t.get("datasource", p.get("datasource", {})).get("uid") != "${datasource}":
                print("FAIL %s / %s: not on the ${datasource} variable" % (where, t.get("refId")))
                failed += 1

    end = time.time()
    start = end - secs(a.range)
    n = 0
    for row, p in panels(dash):
        n += 1
        targets = p.get("targets") or []
        if not targets:
            print("FAIL [%s] %s: no query" % (row, p.get("title")))
            failed += 1
        for t in targets:
            where = "[%s] %s / %s" % (row, p.get("title"), t.get("refId"))
            try:
                expr = substitute(t["expr"], variables, a)
            except KeyError as e:
                print("FAIL %s: unknown variable $%s in %s" % (where, e.args[0], t["expr"]))
                failed += 1
                continue
            checked += 1
            if t.get("instant") and not t.get("range"):
                ans = api.get("/api/v1/query", {"query": expr, "time": "%.3f" % end})
            else:
                ans = api.get("/api/v1/query_range", {"query": expr, "start": "%.3f" % start,
                                                      "end": "%.3f" % end, "step": str(secs(a.step))})
            if ans.get("status") != "success":
                print("FAIL %s: %s: %s" % (where, expr, ans.get("error", ans)))
                failed += 1
                continue
            result = ans["data"]["result"]
            if has_number(result):
                print("ok   %s: %d series" % (where, len(result)))
            elif row in a.allow_empty:
                print("ok   %s: no data (allowed: nothing feeds '%s' here)" % (where, row))
            else:
                print("FAIL %s: no data: %s" % (where, expr))
                failed += 1
    print("%d panels, %d queries checked, %d failed" % (n, checked, failed))
    sys.exit(1 if failed or not checked else 0)


if __name__ == "__main__":
    main()
