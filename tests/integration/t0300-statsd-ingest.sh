#!/usr/bin/env bash
# StatsD and DogStatsD ingest: a stock StatsD client library (Debian's
# python3-statsd) and raw DogStatsD datagrams over UDP and a Unix datagram
# socket become Prometheus series with exact values; malformed lines are
# counted and logged, never fatal; the exposition passes promtool.
. "$(dirname "$0")/lib.sh"
need curl

PY=""
for p in /usr/bin/python3 python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import statsd' 2>/dev/null; then
		PY="$p"
		break
	fi
done
[ -n "$PY" ] || skip "python3-statsd is not installed"

SOCK="$T_DIR/statsd.sock"
start_agent --no-store --interval 0.2 --statsd-listen 127.0.0.1:0 \
	--statsd-socket "$SOCK"
PORT="$(sed -n 's/.*statsd: listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T_DIR/agent.log" | head -n1)"
[ -n "$PORT" ] || fail "no 'statsd: listening on udp' line in the log"
wait_for gpuwatch_statsd_up "address=\"127.0.0.1:$PORT\"" 1
wait_for gpuwatch_statsd_up "address=\"$SOCK\"" 1

# The client library: counter, gauge (set, then a delta), timer, set, and a
# pipeline (several lines in one datagram).
"$PY" - "$PORT" <<'PYEOF'
import sys
import statsd

port = int(sys.argv[1])
app = statsd.StatsClient("127.0.0.1", port, prefix="app")
app.incr("jobs.done")
app.incr("jobs.done", 4)
app.gauge("queue.depth", 10)
app.gauge("queue.depth", -3, delta=True)
app.set("users", "alice")
app.set("users", "bob")
app.set("users", "alice")
lat = statsd.StatsClient("127.0.0.1", port)
with lat.pipeline() as p:
    for ms in range(10, 101, 10):
        p.timing("lat.db", ms)
PYEOF

# Raw DogStatsD datagrams: sample rates, tags, packed values, an event and
# a service check, malformed lines, a reserved name.
"$PY" - "$PORT" "$SOCK" <<'PYEOF'
import socket
import sys

port, path = int(sys.argv[1]), sys.argv[2]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"dd.requests:1|c|@0.5|#env:prod,region:eu\n"
         b"dd.requests:1|c|@0.5|#region:eu,env:prod\n"
         b"lat.dist:1:2:3|d|#svc:api\n"
         b"dd.temp:21.5|g|#gpu:0,canary\n"
         b"_e{5,4}:title|text\n"
         b"_sc|disk|0\n", ("127.0.0.1", port))
u.sendto(b"garbage\nbad.value:nan|g\nbad.rate:1|c|@2\n"
         b"gpuwatch_statsd_up:5|g\n", ("127.0.0.1", port))
x = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
x.sendto(b"ux.temp:42|g|#gpu:1", path)
PYEOF

wait_for app_jobs_done_total '' 5
wait_for app_queue_depth '' 7
wait_for app_users '' 2
wait_for lat_db_seconds_count '' 10
wait_for lat_db_seconds_sum '' 0.55
q="$(value lat_db_seconds 'quantile="0.5"')"
awk -v q="$q" 'BEGIN { exit !(q >= 0.0495 && q <= 0.0505) }' || fail "p50 of 10..100 ms is $q, want 0.05 within 1%"
q="$(value lat_db_seconds 'quantile="0.99"')"
awk -v q="$q" 'BEGIN { exit !(q >= 0.0891 && q <= 0.0909) }' || fail "p99 of 10..100 ms is $q, want 0.09 within 1%"
ok "python3-statsd counter, gauge delta, set, timer pipeline"

wait_for dd_requests_total 'env="prod",region="eu"' 4
wait_for lat_dist_count 'svc="api"' 3
wait_for lat_dist_sum 'svc="api"' 6
wait_for dd_temp 'canary="true",gpu="0"' 21.5
wait_for ux_temp 'gpu="1"' 42
wait_for gpuwatch_statsd_datagrams_total 'transport="unix"' 1
ok "DogStatsD tags, sample rates, packed values, Unix socket"

wait_for gpuwatch_statsd_malformed_total 'reason="type"' 1
wait_for gpuwatch_statsd_malformed_total 'reason="value"' 1
wait_for gpuwatch_statsd_malformed_total 'reason="rate"' 1
wait_for gpuwatch_statsd_unsupported_total '' 2
wait_for gpuwatch_statsd_refused_total 'reason="reserved_name"' 1
wait_for gpuwatch_statsd_up "address=\"127.0.0.1:$PORT\"" 1
grep -q 'statsd: malformed line (type): "garbage"' "$T_DIR/agent.log" || fail "no log line for the malformed line"
! grep -q '^bad_' <<<"$(scrape)" || fail "a malformed line made a series"
ok "malformed lines counted and logged, reserved names refused"

# The exposition, summaries included, must pass the linter.
check_promtool
curl -fsS "$URL/healthz" >/dev/null || fail "agent unhealthy after bad input"
ok "promtool passes, agent healthy"
stop_agent
[ ! -e "$SOCK" ] || fail "the socket file is left behind after stop"
ok "socket removed at stop"
