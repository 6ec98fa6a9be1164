#!/usr/bin/env bash
# A store that stalls loses nothing: while another process holds the write
# lock of the store's index (as a backup tool or a slow disk would stall
# it; the store waits up to its 5 s busy timeout, as during an hourly cut
# on a loaded machine), the collectors keep publishing every second.  The
# publishes wait in the ingest queue and reach the store once it moves
# again: no sample is superseded (gpuwatch_agent_dropped_samples_total),
# and a simulated GPU's raw history has no gap over the stall.
. "$(dirname "$0")/lib.sh"
need curl
need python3

start_agent --simulate 1 --interval 1
M='gpuwatch_gpu_temperature_celsius{gpu="0"}'
db="$T_DIR/data/store/index.db"
flushes() { value gpuwatch_store_flushes_total 'result="ok"'; }
wait_until '[ -f "$db" ] && [ "$(flushes)" -ge 1 ] 2>/dev/null' 30 "the store never flushed"
dropped0="$(value gpuwatch_agent_dropped_samples_total 'reason="superseded"')"

# The lock holder: BEGIN IMMEDIATE takes the database's write lock; it is
# held for the fault's length, then released.  9 s is longer than the
# flush period (5 s): the first flush due while it is held waits for it,
# at least 3 s, until it is released or the store's 5 s busy timeout ends
# the flush with an error (its data kept in memory and flushed later).
e0="$(value gpuwatch_store_flushes_total 'result="error"')"
t0=$(date +%s.%3N)
python3 - "$db" <<'PY' || fail "cannot lock $db"
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("BEGIN IMMEDIATE")
time.sleep(9)  # the fault's length
c.execute("ROLLBACK")
PY
t1=$(date +%s.%3N)

# The stall happened: a flush waited for the lock (2 s or more), or gave
# up on it.
last="" errors=""
stalled() {
	last="$(value gpuwatch_store_last_flush_duration_seconds)"
	errors="$(value gpuwatch_store_flushes_total 'result="error"')"
	python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 2 else 1)' "$last" ||
		[ "$errors" -gt "$e0" ]
}
wait_until stalled 30 "the store did not stall (its last flush took $last s, no flush failed): the test proves nothing"

raw() {
	curl -fsS "$URL/api/v1/query" --data-urlencode "query=$M[60s]" \
		-d time="$(date +%s.%3N)" >"$T_DIR/raw.json"
}
past_end() {
	raw && python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["data"]["result"][0]["values"]
sys.exit(0 if float(v[-1][0]) >= float(sys.argv[2]) + 1 else 1)' \
		"$T_DIR/raw.json" "$t1"
}
wait_until past_end 30 "no sample of $M stored after the stall"
dropped="$(value gpuwatch_agent_dropped_samples_total 'reason="superseded"')"
[ "$dropped" = "$dropped0" ] ||
	fail "$((dropped - dropped0)) publishes superseded while the store stalled"
python3 - "$T_DIR/raw.json" "$t0" "$t1" <<'PY' || fail "$M has a gap over the stall"
import json, sys
v = json.load(open(sys.argv[1]))["data"]["result"][0]["values"]
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
ts = [float(t) for t, _ in v if t0 - 1 <= float(t) <= t1 + 1]
gaps = [b - a for a, b in zip(ts, ts[1:])]
print(f"{len(ts)} samples over the stall, largest gap {max(gaps):.3f} s")
sys.exit(0 if len(ts) >= 8 and max(gaps) < 1.9 else 1)
PY
ok "a store stalled (last flush $last s, $((errors - e0)) flush(es) timed out): every publish stored, none superseded"
stop_agent
