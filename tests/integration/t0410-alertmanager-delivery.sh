#!/usr/bin/env bash
# Alerts delivered to a real Alertmanager (Debian's prometheus-alertmanager)
# through src/export/alertmanager.c, driven by tests/am_send: a firing alert
# shows up with its labels and annotations; its resolved copy takes it off
# the active list; alerts sent while the Alertmanager is stopped arrive once
# it is back on the same port (retried with backoff, nothing lost).
. "$(dirname "$0")/lib.sh"
need curl
need python3
am_require
AM_SEND="${AM_SEND:-$(dirname "$GPUWATCH")/tests/am_send}"
[ -x "$AM_SEND" ] || skip "the am_send driver is not built ($AM_SEND)"

am_start
STARTS=$(($(now_ms) - 60000))
HOT='{"alertname":"GpuHot","gpu":"0","instance":"node1","severity":"warning"}'
"$AM_SEND" -s $STARTS -g "http://node1:9400/graph?g0.expr=gpu_temp" "$AM" 10 \
	firing "$HOT" '{"summary":"GPU 0 is hot","description":"85 \"C\" for 5m"}' \
	>"$T_DIR/send1.out" 2>"$T_DIR/send1.err" ||
	fail "am_send: $(cat "$T_DIR/send1.out" "$T_DIR/send1.err")"
grep -q '^sent=1 posts_failed=0 dropped=0 queued=0$' "$T_DIR/send1.out" ||
	fail "counters: $(cat "$T_DIR/send1.out")"
wait_until "am_active '\"GpuHot\" in a'" 10 "GpuHot is not active in the Alertmanager"
am_active 'a["GpuHot"]["labels"] == {"alertname": "GpuHot", "gpu": "0",
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
wait_until "am_active '\"GpuHot\" not in a'" 10 "the resolved GpuHot is still active"
ok "its resolved copy takes it off the active list"

# Down: the driver retries with backoff until the Alertmanager is back.
am_stop
"$AM_SEND" "$AM" 60 \
	firing '{"alertname":"GpuLost","gpu":"1","instance":"node1"}' '{"summary":"GPU 1 fell off the bus"}' \
	firing '{"alertname":"XidError","gpu":"2","instance":"node1"}' '{}' \
	>"$T_DIR/send3.out" 2>"$T_DIR/send3.err" &
SEND_PID=$!
wait_until "grep -q ': down: ' '$T_DIR/send3.err'" 15 "the driver never saw the Alertmanager down: $(cat "$T_DIR/send3.err")"
am_start "$AM_PORT"
rc=0
wait "$SEND_PID" || rc=$?
[ $rc -eq 0 ] || fail "am_send after the restart: rc $rc: $(cat "$T_DIR/send3.out" "$T_DIR/send3.err")"
grep -Eq '^sent=2 posts_failed=[1-9][0-9]* dropped=0 queued=0$' "$T_DIR/send3.out" ||
	fail "counters: $(cat "$T_DIR/send3.out")"
grep -q ': up again after ' "$T_DIR/send3.err" ||
	fail "no 'up again' line: $(cat "$T_DIR/send3.err")"
[ "$(grep -c ': down: ' "$T_DIR/send3.err")" = 1 ] ||
	fail "the outage was logged more than once: $(cat "$T_DIR/send3.err")"
wait_until "am_active '\"GpuLost\" in a and \"XidError\" in a'" 10 \
	"alerts queued during the outage did not arrive: $(cat "$T_DIR/q.json")"
am_active 'a["GpuLost"]["annotations"] == {"summary": "GPU 1 fell off the bus"} and
	a["XidError"]["labels"]["gpu"] == "2"' ||
	fail "after the outage: $(cat "$T_DIR/q.json")"
ok "alerts queued while the Alertmanager was stopped arrive after its restart"
