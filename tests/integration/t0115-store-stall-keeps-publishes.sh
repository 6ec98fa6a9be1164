#!/usr/bin/env bash
# A store that stalls loses nothing: while the store's thread (gw-store)
# does not run (as on a disk that blocks its writes for seconds), the
# collectors keep publishing every second.  The publishes wait in the
# ingest queue and reach the store once it moves again: no sample is
# superseded (gpuwatch_agent_dropped_samples_total), and a simulated GPU's
# raw history has no gap over the stall.
. "$(dirname "$0")/lib.sh"
need curl
need python3

start_agent --simulate 1 --interval 1
M='gpuwatch_gpu_temperature_celsius{gpu="0"}'
flushes() { value gpuwatch_store_flushes_total 'result="ok"'; }
wait_until '[ "$(flushes)" -ge 1 ] 2>/dev/null' 30 "the store never flushed"
dropped0="$(value gpuwatch_agent_dropped_samples_total 'reason="superseded"')"
tid=""
for t in /proc/"$AGENT_PID"/task/*; do
	[ "$(cat "$t/comm" 2>/dev/null)" = gw-store ] && tid="${t##*/}"
done
[ -n "$tid" ] || fail "no gw-store thread in the agent"

# The stall: the store's thread alone is stopped (ptrace, as a debugger
# stops one thread) for 9 s, longer than the flush period (5 s), and
# checked to be stopped, then let go.  The other threads run on.
t0=$(date +%s.%3N)
python3 - "$tid" <<'PY' || fail "cannot stop the store's thread"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                        ctypes.c_void_p]
tid = int(sys.argv[1])
SEIZE, INTERRUPT, DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000
if libc.ptrace(SEIZE, tid, None, None) or libc.ptrace(INTERRUPT, tid, None, None):
    sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
os.waitpid(tid, WALL)
time.sleep(9)  # the fault's length
state = open(f"/proc/{tid}/stat").read().rsplit(")", 1)[1].split()[0]
libc.ptrace(DETACH, tid, None, None)
sys.exit(0 if state == "t" else f"the thread was not stopped ({state})")
PY
t1=$(date +%s.%3N)

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
ok "the store's thread stopped for 9 s: every publish stored, none superseded"
stop_agent
