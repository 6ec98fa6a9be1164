#!/usr/bin/env bash
# A request body sent a byte at a time is cut off at --http-body-timeout
# from the headers, however steadily it trickles (libmicrohttpd's own
# timeout only sees silence), and counted; the connection slot comes back.
. "$(dirname "$0")/lib.sh"
need curl
need python3

start_agent --simulate 1 --http-body-timeout 1 --http-header-timeout 2
PORT="${URL##*:}"

python3 - "$PORT" >"$T_DIR/trickle.out" <<'PY' || fail "trickle: $(cat "$T_DIR/trickle.out")"
import socket, sys, time

s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"POST /api/v1/query HTTP/1.1\r\nHost: gpuwatch\r\n"
          b"Content-Type: application/x-www-form-urlencoded\r\n"
          b"Content-Length: 1000\r\n\r\n")
s.setblocking(False)
start = time.monotonic()
while time.monotonic() - start < 10:
    try:
        s.sendall(b"q")
        if s.recv(4096, socket.MSG_DONTWAIT) == b"":
            break
    except BlockingIOError:
        pass
    except OSError:
        break
    time.sleep(0.2)  # the trickle's pace
took = time.monotonic() - start
print("closed after %.1f s" % took)
sys.exit(0 if took < 4 else 1)
PY
ok "a trickling body was cut off: $(cat "$T_DIR/trickle.out")"
wait_for gpuwatch_agent_http_connections_refused_total 'reason="body_timeout"' 1 10
wait_until '[ "$(value gpuwatch_agent_http_connections "")" -le 1 ] 2>/dev/null' 10 \
	"the trickling connection's slot did not come back"
curl -fsS --max-time 3 "$URL/api/v1/query" --data-urlencode 'query=1' >/dev/null ||
	fail "the API does not answer after the trickle"
ok "counted as body_timeout; the API answers"
stop_agent
