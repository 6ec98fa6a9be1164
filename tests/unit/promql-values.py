#!/usr/bin/env python3
"""Writes promql-values.txt: how a real Prometheus writes values in its API.

Usage: promql-values.py http://127.0.0.1:9090 > tests/unit/promql-values.txt

For each double (edge cases, powers of two and ten, random values and
random bit patterns, seeded), asks Prometheus for vector(v) and for the
scalar v at one instant and records the two texts it answers, next to the
double's bits.  test_promql_values.c checks gw_promql_fmt_value and
gw_promql_fmt_scalar against the file.
"""
import json
import math
import random
import struct
import sys
import urllib.parse
import urllib.request


def query(base, expr):
    data = urllib.parse.urlencode({"query": expr, "time": "100"}).encode()
    with urllib.request.urlopen(base + "/api/v1/query", data) as r:
        return json.loads(r.read())["data"]


def doubles():
    rng = random.Random(20261203)
    v = [0.0, -0.0, 1e21, -1e21, 1e-7, 5e-324, -5e-324,
         1.7976931348623157e308, -1.7976931348623157e308,
         2.2250738585072014e-308, 2.225073858507201e-308, 0.1 + 0.2, 1e20,
         9.999999999999999e20, 1e-6, 9.999999999999999e-7, 2.0**53,
         2.0**53 + 2, 2.0**63, 2.0**64, 123456789012345678901.0, 1 / 3,
         2 / 3, 100.0, 1.5, -2.25, 0.1, 1e23, 9007199254740993.0,
         123456789.125, 1e22, 1e-5, 1e-300, 1e300, 4.35, 0.3, 1234.5678,
         1e15, 1e16, 1e17, 1.0]
    v += [2.0**k for k in range(-1074, 1024, 7)]
    v += [10.0**k for k in range(-30, 31)]
    v += [rng.random() for _ in range(60)]
    v += [rng.random() * 10**rng.randint(-12, 25) for _ in range(80)]
    while len(v) < 600:
        f = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(f):
            v.append(f)
    return v


def main():
    base = sys.argv[1].rstrip("/")
    print("# Values as Prometheus 2.42 writes them in /api/v1/query answers, one per")
    print("# line: the double's IEEE-754 bits in hex, the text of vector(v)'s sample")
    print("# and of the scalar v.  Made by tests/unit/promql-values.py.")
    for v in doubles():
        lit = repr(v)  # the shortest text: Go's ParseFloat reads v exactly
        neg = lit.startswith("-")
        lit = lit.lstrip("-")
        sample = query(base, "vector(%s%s)" % ("-" if neg else "", lit))
        scalar = query(base, "%s%s" % ("-" if neg else "", lit))
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        print("%016x %s %s" % (bits, sample["result"][0]["value"][1],
                               scalar["result"][1]))


if __name__ == "__main__":
    main()
