#!/usr/bin/env bash
# A StatsD socket that cannot be bound (the UDP port is taken, the socket
# path is a regular file) leaves the agent running: one log line each,
# gpuwatch_statsd_up 0 for that transport, everything else served.
. "$(dirname "$0")/lib.sh"
need curl
need python3

# Hold a UDP port until fd 3 is closed.
exec 3> >(python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
sys.stdin.read()
' >"$T_DIR/port")
wait_until '[ -s "$T_DIR/port" ]' 10 "the port holder did not start"
PORT="$(cat "$T_DIR/port")"
: >"$T_DIR/not-a-socket"

start_agent --no-store --interval 0.2 --statsd-listen "127.0.0.1:$PORT" \
	--statsd-socket "$T_DIR/not-a-socket"
wait_for gpuwatch_statsd_up "transport=\"udp\",address=\"127.0.0.1:$PORT\"" 0
wait_for gpuwatch_statsd_up "transport=\"unix\",address=\"$T_DIR/not-a-socket\"" 0
grep -q "statsd: cannot bind udp 127.0.0.1:$PORT" "$T_DIR/agent.log" || fail "no log line for the UDP bind failure"
grep -q "statsd: $T_DIR/not-a-socket exists and is not a socket" "$T_DIR/agent.log" || fail "no log line for the socket path"
[ -f "$T_DIR/not-a-socket" ] || fail "the regular file at the socket path was removed"
curl -fsS "$URL/healthz" >/dev/null || fail "agent unhealthy"
check_promtool
ok "bind failures logged, up=0, agent serving"
stop_agent
exec 3>&-
ok "agent stops cleanly"
