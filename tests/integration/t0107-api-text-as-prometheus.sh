#!/usr/bin/env bash
# The agent's API writes what a real Prometheus (Debian's, 2.42) writes for
# the same queries, byte for byte: sample and scalar values as text (random
# doubles and edge cases), regular expressions' errors (RE2 syntax, as Go
# words them), their acceptance, and through label_replace() what they
# match and capture (newlines, flags, bytes that are not UTF-8).  Queries holding bytes that are not
# UTF-8 get valid UTF-8 JSON from both.  Every difference is listed.
. "$(dirname "$0")/lib.sh"
need curl
need python3
PROM_BIN="$(command -v prometheus || true)"
[ -n "$PROM_BIN" ] || skip "prometheus is not installed"

PROM_PID=""
trap 'rc=$?; [ -z "$PROM_PID" ] || kill -KILL "$PROM_PID" 2>/dev/null || true; (exit $rc); cleanup' EXIT

start_agent --simulate 1 --interval 0.2

PROM_PORT="$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
PROM="http://127.0.0.1:$PROM_PORT"
printf 'global:\n  scrape_interval: 15s\n' >"$T_DIR/prom.yml"
"$PROM_BIN" --config.file="$T_DIR/prom.yml" --storage.tsdb.path="$T_DIR/prom" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$T_DIR/prom.log" 2>&1 &
PROM_PID=$!
deadline=$(($(now_ms) + 30000))
until curl -fsS "$PROM/-/ready" >/dev/null 2>&1; do
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -n 20 "$T_DIR/prom.log")"
	[ "$(now_ms)" -lt $deadline ] || fail "prometheus not ready within 30 s"
	sleep 0.05
done

python3 - "$URL" "$PROM" <<'PY' || fail "answers differ from Prometheus (above)"
import json
import math
import random
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request

agent, prom = sys.argv[1], sys.argv[2]


def ask(base, query):
    data = urllib.parse.urlencode({"query": query, "time": "100"}).encode()
    try:
        with urllib.request.urlopen(base + "/api/v1/query", data) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        body = e.read()
    body.decode("utf-8")  # valid UTF-8, or this raises
    return json.loads(body)


rng = random.Random(107)
values = [0.0, -0.0, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 0.1 + 0.2,
          2.0**53 + 2, 123456789012345678901.0, 1e-6, 9.999999999999999e20,
          5.858190679279809e-244]
values += [rng.random() * 10**rng.randint(-25, 25) for _ in range(100)]
while len(values) < 250:
    f = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
    if math.isfinite(f):
        values.append(f)
queries = []
for v in values:
    lit = repr(abs(v))
    sign = "-" if math.copysign(1, v) < 0 else ""
    queries += ["vector(%s%s)" % (sign, lit), "%s%s" % (sign, lit)]
for re in ["(?=a)a", "(a)\\\\1", "a*+", "a++", "(?<n>a)", "(", ")", "[a",
           "a{1001}", "\\\\", "[z-a]", "*", "\\\\C", "\\\\Z", "(?P<>a)",
           "a)|(b", "[[:foo:]]", "\\\\p{Foo}", "(a{1000}){1000}",
           ".*", "(?i)x", "", "(?P<n>a)(?P<n>b)", "\\\\Qa.b\\\\E"]:
    queries.append('up{job=~"%s"}' % re)
    queries.append('up{job!~"%s"}' % re)


def promql_str(b):
    """bytes as a PromQL double-quoted string, Go escapes."""
    out = ""
    for c in b:
        if chr(c) in '"\\':
            out += "\\" + chr(c)
        elif 0x20 <= c < 0x7f:
            out += chr(c)
        else:
            out += "\\x%02x" % c
    return '"' + out + '"'


# label_replace() runs the same engine on values that selectors cannot
# reach without data: whether the pattern matches, and what it captures.
for pat, val in [(b"a.b", b"a\nb"), (b"(?s)a.b", b"a\nb"), (b".*", b"x\ny"),
                 (b"(?i)abc", b"ABC"), (b"", b""), (b"", b"x"), (b"a|b", b"ab"),
                 (b"a)|(b", b"axx"), (b"a)|(b", b"xxb"), (b".", b"\xff"),
                 (b"\\x{fffd}", b"\xff"), (b"[^a]", b"\xff"),
                 (b"..", b"\xe2\x82"), (b".", b"\xe2\x82"), (b"a$", b"a\n"),
                 (b"(?m)a$", b"a\n"), (b"\\pL+", b"\xc3\xa9t\xc3\xa9"),
                 (b"\\Qa.b\\E", b"axb"), (b"(?U)(a+)(a*)", b"aaa"),
                 (b"(?P<n>a)(?P<n>b)", b"ab"), (b"\\b", b""),
                 (b"(?i)\xc3\xa9", b"\xc3\x89"), (b"(\\d+)?(x)?(.*)", b"12y"),
                 (b"([^:]+):(\\d+)", b"node\xff:9100"), (b"(a)\\1", b"aa"),
                 (b"(?=a)a", b"a")]:
    queries.append(
        'label_replace(label_replace(vector(1), "src", %s, "", ""), '
        '"dst", "[$1|${2}|$n|$0]", "src", %s)' % (promql_str(val),
                                                  promql_str(pat)))

diffs = 0
for q in queries:
    a, p = ask(agent, q), ask(prom, q)
    if a != p:
        diffs += 1
        print("query  %s\n  agent      %s\n  prometheus %s" %
              (q, json.dumps(a), json.dumps(p)))
# Not UTF-8: the words may differ (the parser's), the JSON must be valid.
for q in [b"foo\xff", b"sum(\xff\xfe)", b'foo{a="\xff"}', b'"a\xffb',
          b'up{job=~"\xe2\x82"}']:
    for base in (agent, prom):
        d = ask(base, q)
        if d.get("errorType") != "bad_data":
            diffs += 1
            print("query %r at %s: %s" % (q, base, d))
print("%d queries, %d differences" % (len(queries), diffs))
sys.exit(1 if diffs else 0)
PY
ok "values, regular expressions and invalid UTF-8 answered as Prometheus does"
kill -TERM "$PROM_PID"
wait "$PROM_PID" 2>/dev/null || true
PROM_PID=""
stop_agent
