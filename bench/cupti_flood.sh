#!/usr/bin/env bash
# The cupti collector under a ring directory flood: JUNK empty files and
# RINGS ring-shaped files of one user (nobody) naming that user's process,
# in a fresh directory the agent watches.  Reported, for the agent's
# default --interval 1 over SECONDS seconds: the agent's CPU per pass over
# the directory (all its threads, so the rest of the agent is included:
# compare with FLOOD=0), the passes, the rings read, what was refused and
# skipped, and the cupti lines in its log.
#
# usage: bench/cupti_flood.sh [BUILD_DIR]   (root; a release build: make)
#   JUNK=20000 RINGS=1400 SECONDS_RUN=30 FLOOD=1
set -euo pipefail

build="${1:-build}"
bin="$build/gpuwatch"
junk="${JUNK:-20000}"
rings="${RINGS:-1400}"
secs="${SECONDS_RUN:-30}"
flood="${FLOOD:-1}"
tmp="$(mktemp -d)"
pid="" sleeper=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; [ -n "$sleeper" ] && kill -9 $sleeper 2>/dev/null; rm -rf "$tmp"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "needs root (files of another user)" >&2; exit 1; }
[ -x "$bin" ] || { echo "no $bin (make)" >&2; exit 1; }
mkdir -p "$tmp/rings"
chmod 1777 "$tmp/rings"
setpriv --reuid=65534 --regid=65534 --clear-groups sleep 3600 &
sleeper=$!
while [ "$(stat -c %u /proc/$sleeper 2>/dev/null)" != 65534 ]; do sleep 0.05; done
if [ "$flood" = 1 ]; then
	python3 - "$tmp/rings" "$sleeper" 65534 "$junk" "$rings" <<'PY'
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
fi

"$bin" agent --listen 127.0.0.1:0 --data-dir "$tmp/data" --no-store --no-ebpf \
	--simulate 1 --interval 1 --cupti-dir "$tmp/rings" 2>"$tmp/log" &
pid=$!
url=""
until [ -n "$url" ]; do
	url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$tmp/log" 2>/dev/null | head -n1 || true)"
	kill -0 $pid
	sleep 0.05
done
ticks_s=$(getconf CLK_TCK)
cpu() { awk -v t="$ticks_s" '{ print ($14 + $15) / t }' /proc/"$pid"/stat; }
sleep "$secs" # a measurement period, not a synchronisation
m="$(curl -fsS "$url/metrics")"
c="$(cpu)"
passes="$(awk '$1 == "gpuwatch_cupti_scans_total" { print $2 }' <<<"$m")"
echo "files: $(($(ls -f "$tmp/rings" | wc -l) - 2)), ${secs} s at --interval 1, build $build"
echo "agent CPU: ${c} s in all; passes: ${passes:-?} (no gpuwatch_cupti_scans_total before the bounded scan)"
[ -n "$passes" ] && awk -v c="$c" -v p="$passes" 'BEGIN { printf "agent CPU per pass: %.2f ms\n", 1000 * c / p }'
grep -E '^gpuwatch_cupti_(rings|rings_refused_total|rings_skipped_total|scan_cycle_passes)' <<<"$m" | grep -v ' 0$' || true
echo "cupti log lines: $(grep -c 'cupti:' "$tmp/log" || true); all log lines: $(wc -l <"$tmp/log")"
