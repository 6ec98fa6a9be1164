#!/usr/bin/env bash
# An empty label value is an absent label, as in Prometheus: a StatsD tag
# "comm:" makes no label, /metrics never prints comm="", the API never lists
# an empty value, and vector matching on(pid, comm) pairs a series without
# comm with one whose comm was empty.
. "$(dirname "$0")/lib.sh"
need curl
need python3

start_agent --interval 0.2 --statsd-listen 127.0.0.1:0
PORT="$(sed -n 's/.*statsd: listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T_DIR/agent.log" | head -n1)"
[ -n "$PORT" ] || fail "no 'statsd: listening on udp' line in the log"

python3 - "$PORT" <<'PYEOF'
import socket
import sys

u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"e.g:1|g|#comm:,pid:5\n"
         b"e.h:3|g|#pid:5\n"
         b"e.h:4|g|#pid:5,comm:x\n", ("127.0.0.1", int(sys.argv[1])))
PYEOF

wait_for e_g 'pid="5"' 1
wait_for e_h 'comm="x"' 4
if scrape | grep -F 'comm=""'; then
	fail "/metrics prints an empty label value"
fi
ok "/metrics: no comm=\"\""

# q PATH [CURL-ARGS...]: the API's JSON answer in $T_DIR/out.
q() {
	local path="$1"
	shift
	curl -fsS -o "$T_DIR/out" "$@" "$URL$path"
}

# check 'PYTHON EXPRESSION' WHAT: true for d, the JSON answer.
check() {
	python3 - "$T_DIR/out" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
PY
}

# The store has the samples once a query sees them.
wait_until 'q /api/v1/query --data-urlencode "query=e_g{comm=\"\"}" &&
	check "len(d[\"data\"][\"result\"]) == 1"' 15 "e_g never reached the store"
check 'd["data"]["result"][0]["metric"] == {"__name__": "e_g", "pid": "5"}' ||
	fail "e_g{comm=\"\"}: $(cat "$T_DIR/out")"

q /api/v1/query --data-urlencode 'query=e_g / on(pid, comm) e_h'
check '[r["value"][1] for r in d["data"]["result"]] == ["0.3333333333333333"]' ||
	fail "e_g / on(pid, comm) e_h: $(cat "$T_DIR/out")"
q /api/v1/query --data-urlencode 'query=count by (comm) ({__name__=~"e_g|e_h"})'
check '{r["metric"].get("comm", "-"): r["value"][1] for r in d["data"]["result"]} == {"-": "2", "x": "1"} and len(d["data"]["result"]) == 2' ||
	fail "count by (comm): $(cat "$T_DIR/out")"
ok "matching and grouping treat comm=\"\" as no comm"

# (Other processes on the machine may have a comm of their own.)
q /api/v1/label/comm/values
check '"x" in d["data"] and "" not in d["data"]' || fail "label values of comm: $(cat "$T_DIR/out")"
q /api/v1/label/comm/values -G --data-urlencode 'match[]={__name__=~"e_g|e_h"}'
check 'd["data"] == ["x"]' || fail "label values of comm for e_g, e_h: $(cat "$T_DIR/out")"
q /api/v1/series --data-urlencode 'match[]={__name__=~"e_g|e_h"}'
check 'all(v != "" for s in d["data"] for v in s.values()) and len(d["data"]) == 3' ||
	fail "series: $(cat "$T_DIR/out")"
q /api/v1/labels
check '"comm" in d["data"]' || fail "labels: $(cat "$T_DIR/out")"
ok "the API lists no empty value"

stop_agent
