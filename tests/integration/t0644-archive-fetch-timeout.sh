#!/usr/bin/env bash
# A fetch from a bucket that never answers is bounded by the query: the
# query's timeout ends it with a "timeout" error (counted as
# reason="timeout"), and stopping the agent cancels one in flight (it still
# exits within 5 s).  The archived days come from s3rver; the endpoint the
# agent is then given accepts connections and never answers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3-lib.sh"
need curl
need python3
s3_require

D="$T_DIR/data"
make_days "$D"
s3_start
"$GPUWATCH" store archive --data-dir "$D" "${ARCHIVE[@]}" --archive-keep-local 0 \
	>"$T_DIR/archive.out" 2>&1 || fail "store archive failed: $(cat "$T_DIR/archive.out")"
s3_stop

# A server that accepts and stays silent.
python3 - "$T_DIR/mute.port" <<'PY' &
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    c, _ = s.accept()
    held.append(c)
PY
MUTE_PID=$!
trap 'S3_RC=$?; kill "$MUTE_PID" 2>/dev/null || true; s3_stop; set +e; (exit $S3_RC); cleanup' EXIT
wait_until '[ -s "$T_DIR/mute.port" ]' 10 "the silent server did not start"
mute="http://127.0.0.1:$(cat "$T_DIR/mute.port")"

start_agent --data-dir "$D" --simulate 1 --no-ebpf --retention-raw 30d \
	--archive-url "s3://$S3_BUCKET/node1" --archive-endpoint "$mute" \
	--query-timeout 60s
code=$(curl -sS -o "$T_DIR/q.json" -w '%{http_code}' --max-time 30 "$URL/api/v1/query_range" \
	--data-urlencode "query=cold_temp_celsius" --data-urlencode "start=$START" \
	--data-urlencode "end=$END" --data-urlencode "step=60" --data-urlencode "timeout=2s")
grep -q '"errorType":"timeout"' "$T_DIR/q.json" ||
	fail "a query stuck in a fetch did not time out: HTTP $code $(head -c 300 "$T_DIR/q.json")"
wait_ge gpuwatch_archive_fetch_failures_total 'reason="timeout"' 1 >/dev/null
ok "the query's timeout ends a fetch from a silent bucket"

curl -sS -o /dev/null --max-time 60 "$URL/api/v1/query_range" \
	--data-urlencode "query=cold_temp_celsius" --data-urlencode "start=$START" \
	--data-urlencode "end=$END" --data-urlencode "step=60" &
Q_PID=$!
wait_ge gpuwatch_archive_cache_misses_total '' 2 >/dev/null
stop_agent
wait "$Q_PID" 2>/dev/null || true
ok "stopping the agent cancels a fetch in flight (stopped in ${STOP_MS} ms)"
