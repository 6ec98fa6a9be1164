#!/usr/bin/env bash
# A local user floods the ring directory: 20,000 empty files and 1,400
# ring-shaped files that all name one of that user's processes.  A CUDA
# process of another user started afterwards is still read, within a
# bounded number of passes over the directory (the listing goes on where
# a pass stopped, new files are opened one owner at a time, and one owner
# holds at most 256 of the ring slots); what is passed over is counted,
# and the agent's log stays short.  Needs root (files of other users).
. "$(dirname "$0")/lib.sh"
need curl
need python3
need setpriv
[ "$(id -u)" = 0 ] || skip "needs root to create files and processes of other users"
[ -n "${CUPTI_INJECT:-}" ] && [ -n "${FAKE_CUPTI:-}" ] && [ -n "${CUPTI_TEST_BIN:-}" ] ||
	skip "the CUPTI injection library is not built"
[ -x "$CUPTI_TEST_BIN/inject_host" ] || skip "inject_host is not built"

FLOODER=65534 # nobody
USER_B=65533
JUNK=20000
RINGS=1400
sleeper=""
host_pid=""
flood_cleanup() {
	local rc=$?
	set +e
	[ -n "$sleeper" ] && kill -KILL "$sleeper" 2>/dev/null && wait "$sleeper" 2>/dev/null
	[ -n "$host_pid" ] && kill -KILL "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null
	(exit $rc)
	cleanup
}
trap flood_cleanup EXIT

chmod 755 "$T_DIR"
ring_dir="$T_DIR/rings"
mkdir -p "$ring_dir"
chmod 1777 "$ring_dir"

# The flooder's own process, which its ring-shaped files name.
setpriv --reuid=$FLOODER --regid=$FLOODER --clear-groups sleep 600 &
sleeper=$!
wait_until '[ "$(stat -c %u /proc/$sleeper 2>/dev/null)" = $FLOODER ]' 10 "the flooder's process did not start"

python3 - "$ring_dir" "$sleeper" "$FLOODER" "$JUNK" "$RINGS" <<'PY'
import os, struct, sys, time
d, pid, uid, junk, rings = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
with open(f"/proc/{pid}/stat") as f:
    ticks = int(f.read().rsplit(")", 1)[1].split()[19])
old = time.time() - 3600
for i in range(junk):
    p = f"{d}/gpuwatch-cupti.junk{i:05d}"
    open(p, "w").close()
    os.chown(p, uid, uid)
    os.utime(p, (old, old))
# include/gpuwatch/cupti_ring.h: a valid header, status OK, nothing written.
hdr = struct.pack("<IHHIIIIQQQ16s", 0x52435747, 1, 192, 4096, 65536, pid, 0, 0,
                  ticks, time.time_ns(), b"flood")
hdr += struct.pack("<QQQI", 0, 0, 0, 1)
for i in range(rings):
    p = f"{d}/gpuwatch-cupti.{pid}.{ticks}.{i}"
    with open(p, "wb") as f:
        f.write(hdr)
        f.truncate(4096 + 65536)
    os.chown(p, uid, uid)
PY
files=$(ls -f "$ring_dir" | wc -l)

start_agent --simulate 1 --no-ebpf --no-store --interval 0.2 --cupti-dir "$ring_dir"
wait_until '[ "$(value gpuwatch_cupti_rings)" -ge 256 ] 2>/dev/null' 60 \
	"the agent did not take in the flooder's rings"

# Another user's CUDA process, started into the flood.
cupti_host_start basic setpriv --reuid=$USER_B --regid=$USER_B --clear-groups
cupti_host_ready
[ "$(stat -c %u "$ring")" = $USER_B ] || fail "the ring $ring is not the second user's"
scans0="$(value gpuwatch_cupti_scans_total || true)"

# Its data, and the passes it took: each pass lists at least 4096 entries
# unless the listing ends, so a file is found within two listings.
got=""
deadline=$(($(now_ms) + 60000))
while [ "$(now_ms)" -lt $deadline ]; do
	scrape >"$T_DIR/m"
	got="$(awk -v p="pid=\"$pid\"" '/^gpuwatch_cuda_kernel_launches_total[{]/ && index($0, p) && index($0, "vecAdd") { print $NF }' "$T_DIR/m")"
	[ "$got" = 1000 ] && break
	sleep 0.1
done
[ "$got" = 1000 ] || fail "the second user's process $pid is not read: kernel launches '$got'; $(grep -E '^gpuwatch_cupti_(rings|scan)' "$T_DIR/m" | tr '\n' ' ')"
scans1="$(awk '/^gpuwatch_cupti_scans_total / { print $2 }' "$T_DIR/m")"
[ -n "$scans0" ] && [ -n "$scans1" ] || fail "no gpuwatch_cupti_scans_total"
bound=$((2 * ((files + 4095) / 4096) + 2))
passes=$((scans1 - scans0))
[ "$passes" -le "$bound" ] || fail "read after $passes passes over $files entries, expected at most $bound"
ok "another user's process read after $passes passes among $files files (bound $bound)"

# What was passed over is counted.
wait_until '[ "$(value gpuwatch_cupti_rings_refused_total reason=\"limit\")" -gt 0 ] 2>/dev/null' 60 \
	"the flooder's rings beyond 256 are not counted as refused (limit)"
[ "$(value gpuwatch_cupti_rings)" -le 257 ] || fail "the flooder holds more than 256 rings"
[ "$(value gpuwatch_cupti_rings_skipped_total 'reason="deferred"')" -gt 0 ] ||
	fail "no file counted as deferred"
[ "$(value gpuwatch_cupti_rings_skipped_total 'reason="duplicate"')" -ge 255 ] ||
	fail "the flooder's rings of one process are not counted as duplicates"
[ "$(value gpuwatch_cupti_rings_refused_total 'reason="size"')" -gt 0 ] ||
	fail "the empty files are not counted as refused (size)"
ok "limit, deferred, duplicate and size counted"

# The log: a few lines per message class per 10 s, not one per file.
lines="$(grep -c 'cupti:' "$T_DIR/agent.log" || true)"
[ "$lines" -le 200 ] || fail "$lines cupti lines in the log for $files files"
ok "$lines cupti log lines for $files files"

exec 3>&-
wait "$host_pid" || fail "inject_host failed: $(cat "$T_DIR/host.err")"
host_pid=""
stop_agent
