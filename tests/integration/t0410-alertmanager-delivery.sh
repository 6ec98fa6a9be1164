#!/usr/bin/env bash
# Alerts delivered to a real Alertmanager (Debian's prometheus-alertmanager)
# through src/export/alertmanager.c, driven by tests/am_send: a firing alert
# shows up with its labels and annotations; its resolved copy takes it off
# the active list; alerts sent while the Alertmanager is stopped arrive once
# it is back on the same port (retried with backoff, nothing lost).
. "$(dirname "$0")/lib.sh"
need curl
need python3
need amtool
AM_BIN="$(command -v prometheus-alertmanager || true)"
[ -n "$AM_BIN" ] || skip "prometheus-alertmanager is not installed"
AM_SEND="${AM_SEND:-$(dirname "$GPUWATCH")/tests/am_send}"
[ -x "$AM_SEND" ] || skip "the am_send driver is not built ($AM_SEND)"

AM_PID=""
stop_am() {
	[ -n "$AM_PID" ] || return 0
	kill -TERM "$AM_PID" 2>/dev/null || true
	local deadline=$(($(now_ms) + 10000))
	while kill -0 "$AM_PID" 2>/dev/null; do
		if [ "$(now_ms)" -ge $deadline ]; then
			kill -KILL "$AM_PID" 2>/dev/null || true
			break
		fi
		sleep 0.05
	done
	wait "$AM_PID" 2>/dev/null || true
	AM_PID=""
}
trap 'rc=$?; stop_am; (exit $rc); cleanup' EXIT

PORT="$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
AM="http://127.0.0.1:$PORT"
cat >"$T_DIR/am.yml" <<'EOF'
route:
  receiver: "null"
receivers:
  - name: "null"
EOF

start_am() {
	"$AM_BIN" --config.file="$T_DIR/am.yml" --storage.path="$T_DIR/am-data" \
		--web.listen-address="127.0.0.1:$PORT" --cluster.listen-address= \
		>>"$T_DIR/am.log" 2>&1 &
	AM_PID=$!
	local deadline=$(($(now_ms) + 20000))
	until curl -fsS "$AM/-/ready" >/dev/null 2>&1; do
		kill -0 "$AM_PID" 2>/dev/null || fail "alertmanager exited: $(tail -n 20 "$T_DIR/am.log")"
		[ "$(now_ms)" -lt $deadline ] || fail "alertmanager not ready within 20 s"
		sleep 0.05
	done
}

# active 'PYTHON EXPRESSION': true for a, the active alerts by alertname
# (amtool's JSON answer).
active() {
	amtool --alertmanager.url="$AM" -o json alert query >"$T_DIR/q.json" 2>"$T_DIR/q.err" || return 1
	python3 - "$T_DIR/q.json" "$1" <<'PY'
import json, sys
a = {x["labels"].get("alertname"): x for x in json.load(open(sys.argv[1]))}
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
PY
}

start_am
STARTS=$(($(now_ms) - 60000))
HOT='{"alertname":"GpuHot","gpu":"0","instance":"node1","severity":"warning"}'
"$AM_SEND" -s $STARTS -g "http://node1:9400/graph?g0.expr=gpu_temp" "$AM" 10 \
	firing "$HOT" '{"summary":"GPU 0 is hot","description":"85 \"C\" for 5m"}' \
	>"$T_DIR/send1.out" 2>"$T_DIR/send1.err" ||
	fail "am_send: $(cat "$T_DIR/send1.out" "$T_DIR/send1.err")"
grep -q '^sent=1 posts_failed=0 dropped=0 queued=0$' "$T_DIR/send1.out" ||
	fail "counters: $(cat "$T_DIR/send1.out")"
wait_until "active '\"GpuHot\" in a'" 10 "GpuHot is not active in the Alertmanager"
active 'a["GpuHot"]["labels"] == {"alertname": "GpuHot", "gpu": "0",
	"instance": "node1", "severity": "warning"} and
	a["GpuHot"]["annotations"] == {"summary": "GPU 0 is hot",
	"description": "85 \"C\" for 5m"} and
	a["GpuHot"]["generatorURL"] == "http://node1:9400/graph?g0.expr=gpu_temp" and
	a["GpuHot"]["status"]["state"] == "active" and
	a["GpuHot"]["startsAt"].startswith("'"$(date -u -d "@$((STARTS / 1000))" +%Y-%m-%dT%H:%M:%S)"'")' ||
	fail "GpuHot as the Alertmanager holds it: $(cat "$T_DIR/q.json")"
# The API v2 GET agrees.
curl -fsS "$AM/api/v2/alerts?filter=alertname%3DGpuHot" >"$T_DIR/get.json"
python3 -c 'import json, sys
a = json.load(open(sys.argv[1]))
sys.exit(0 if len(a) == 1 and a[0]["labels"]["gpu"] == "0" else 1)' "$T_DIR/get.json" ||
	fail "GET /api/v2/alerts: $(cat "$T_DIR/get.json")"
ok "a firing alert arrives with its labels and annotations"

"$AM_SEND" -s $STARTS "$AM" 10 resolved "$HOT" '{"summary":"GPU 0 is hot"}' \
	>"$T_DIR/send2.out" 2>&1 || fail "am_send resolved: $(cat "$T_DIR/send2.out")"
wait_until "active '\"GpuHot\" not in a'" 10 "the resolved GpuHot is still active"
ok "its resolved copy takes it off the active list"

# Down: the driver retries with backoff until the Alertmanager is back.
stop_am
"$AM_SEND" "$AM" 60 \
	firing '{"alertname":"GpuLost","gpu":"1","instance":"node1"}' '{"summary":"GPU 1 fell off the bus"}' \
	firing '{"alertname":"XidError","gpu":"2","instance":"node1"}' '{}' \
	>"$T_DIR/send3.out" 2>"$T_DIR/send3.err" &
SEND_PID=$!
wait_until "grep -q ': down: ' '$T_DIR/send3.err'" 15 "the driver never saw the Alertmanager down: $(cat "$T_DIR/send3.err")"
start_am
rc=0
wait "$SEND_PID" || rc=$?
[ $rc -eq 0 ] || fail "am_send after the restart: rc $rc: $(cat "$T_DIR/send3.out" "$T_DIR/send3.err")"
grep -Eq '^sent=2 posts_failed=[1-9][0-9]* dropped=0 queued=0$' "$T_DIR/send3.out" ||
	fail "counters: $(cat "$T_DIR/send3.out")"
grep -q ': up again after ' "$T_DIR/send3.err" ||
	fail "no 'up again' line: $(cat "$T_DIR/send3.err")"
[ "$(grep -c ': down: ' "$T_DIR/send3.err")" = 1 ] ||
	fail "the outage was logged more than once: $(cat "$T_DIR/send3.err")"
wait_until "active '\"GpuLost\" in a and \"XidError\" in a'" 10 \
	"alerts queued during the outage did not arrive: $(cat "$T_DIR/q.json")"
active 'a["GpuLost"]["annotations"] == {"summary": "GPU 1 fell off the bus"} and
	a["XidError"]["labels"]["gpu"] == "2"' ||
	fail "after the outage: $(cat "$T_DIR/q.json")"
ok "alerts queued while the Alertmanager was stopped arrive after its restart"
