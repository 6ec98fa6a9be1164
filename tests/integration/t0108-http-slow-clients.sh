#!/usr/bin/env bash
# Slow and idle clients cannot blind the scraper.  100 connections sending
# their headers a byte at a time (from the scraper's own address), then
# 500 idle connections from ten other addresses, each reconnecting as soon
# as the agent closes it: every /metrics and /healthz is still answered
# within 3 s (a third of Prometheus' default scrape timeout), the open
# connections stay within --http-max-connections, other paths get 503 while
# the reserve is in use, and every refusal is counted by reason.
. "$(dirname "$0")/lib.sh"
need curl
need python3

# The defaults (256 connections, 64 per client, 16 reserved, 5 s for the
# headers) are what is tested.
start_agent --simulate 1 --no-store

# The attackers: one process per kind, reconnecting whatever is closed.
# Writes "opened N closed M" to its status file after every round.
cat >"$T_DIR/flood.py" <<'PY'
import socket, sys, time

kind, port, n, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
srcs = sys.argv[5].split(",")
HEAD = b"GET /metrics HTTP/1.1\r\nHost: gpuwatch\r\nX-Slow: "
conns = [None] * n
sent = [0] * n
opened = closed = 0

def connect(i):
    global opened
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1)
    try:
        s.bind((srcs[i % len(srcs)], 0))
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        return
    s.setblocking(False)
    conns[i], sent[i] = s, 0
    opened += 1

def drop(i):
    global closed
    conns[i].close()
    conns[i] = None
    closed += 1

while True:
    for i in range(n):
        if conns[i] is None:
            connect(i)
            continue
        s = conns[i]
        try:
            if s.recv(4096, socket.MSG_DONTWAIT) == b"":
                drop(i)
                continue
        except BlockingIOError:
            pass
        except OSError:
            drop(i)
            continue
        if kind == "slow":
            # One byte of a header that never ends.
            b = HEAD[sent[i]:sent[i] + 1] or b"a"
            try:
                s.send(b)
                sent[i] += 1
            except BlockingIOError:
                pass
            except OSError:
                drop(i)
    with open(status + ".tmp", "w") as f:
        f.write("opened %d closed %d\n" % (opened, closed))
    import os
    os.replace(status + ".tmp", status)
    time.sleep(0.2)
PY
PORT="${URL##*:}"
FLOODS=()
trap 'for p in "${FLOODS[@]}"; do kill "$p" 2>/dev/null || true; done; cleanup' EXIT

refused() {
	value gpuwatch_agent_http_connections_refused_total "reason=\"$1\""
}

# scrapes N: N scrapes of /metrics and /healthz, each answered within 3 s,
# with the open connections within the limit.
scrapes() {
	local i body open
	for i in $(seq "$1"); do
		body="$(curl -fsS --max-time 3 "$URL/metrics")" ||
			fail "scrape $i of $1 not answered within 3 s ($2)"
		grep -q '^gpuwatch_agent_build_info' <<<"$body" ||
			fail "scrape $i of $1 is not the exposition ($2)"
		open="$(awk '$1 == "gpuwatch_agent_http_connections" { print $2 }' <<<"$body")"
		[ -n "$open" ] && [ "$open" -le 256 ] ||
			fail "scrape $i: $open connections open, above --http-max-connections 256 ($2)"
		curl -fsS --max-time 3 "$URL/healthz" >/dev/null ||
			fail "/healthz $i of $1 not answered within 3 s ($2)"
		sleep 0.5 # the scrape interval, not a wait for a condition
	done
}

# 1. 50 slowloris connections from the scraper's address: none outlives
# the 5 s header timeout.
python3 "$T_DIR/flood.py" slow "$PORT" 50 "$T_DIR/slow1.status" 127.0.0.1 &
FLOODS+=($!)
wait_until '[ -s "$T_DIR/slow1.status" ] && [ "$(awk "{print \$2}" "$T_DIR/slow1.status")" -ge 50 ]' \
	15 "the slow clients did not connect"
scrapes 12 "50 slow clients"
wait_until '[ "$(refused header_timeout)" -ge 50 ] 2>/dev/null' 15 \
	"the slow clients were not closed for their headers"
ok "12/12 scrapes answered under 50 slow clients; $(refused header_timeout) closed for their headers"

# 2. 50 more from the same address: past 64 the oldest are closed to make
# room, the scraper's among them if it were slow.
python3 "$T_DIR/flood.py" slow "$PORT" 50 "$T_DIR/slow2.status" 127.0.0.1 &
FLOODS+=($!)
wait_until '[ -s "$T_DIR/slow2.status" ] && [ "$(awk "{print \$2}" "$T_DIR/slow2.status")" -ge 50 ]' \
	15 "the slow clients did not connect"
scrapes 12 "100 slow clients"
wait_until '[ "$(refused evicted)" -ge 1 ] 2>/dev/null' 15 \
	"no slow client was closed past 64 connections from one address"
ok "12/12 scrapes answered under 100 slow clients; $(refused evicted) evicted"

# 3. 500 idle connections on top, 50 from each of ten other addresses:
# the total limit binds, idle ones make room for new ones.
python3 "$T_DIR/flood.py" idle "$PORT" 500 "$T_DIR/idle.status" \
	127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9,127.0.0.10,127.0.0.11 &
FLOODS+=($!)
wait_until '[ -s "$T_DIR/idle.status" ] && [ "$(awk "{print \$2}" "$T_DIR/idle.status")" -ge 500 ]' \
	30 "the idle clients did not connect"
before="$(refused evicted)"
scrapes 12 "500 idle and 100 slow clients"
wait_until '[ "$(refused evicted)" -gt "$before" ] 2>/dev/null' 15 \
	"no idle connection was closed for a new one"
# Near the limit only /metrics and /healthz are served.
code_of_root() {
	curl -sS --max-time 3 -o /dev/null -w '%{http_code}' "$URL/" || true
}
wait_until '[ "$(code_of_root)" = 503 ]' 15 "/ was not refused while the reserve was in use"
wait_until '[ "$(refused reserved)" -ge 1 ] 2>/dev/null' 5 "the 503 of the reserve was not counted"
ok "12/12 scrapes answered under 500 idle and 100 slow clients; $(refused evicted) evicted, $(refused reserved) refused for the reserve"

# 4. The flood ends: every slot comes back.
for p in "${FLOODS[@]}"; do
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
done
FLOODS=()
wait_until '[ "$(value gpuwatch_agent_http_connections "")" -le 2 ] 2>/dev/null' 15 \
	"connections still open after the clients left"
[ "$(code_of_root)" = 200 ] || fail "/ still refused after the flood"
ok "connections back to $(value gpuwatch_agent_http_connections "") after the flood"
stop_agent
