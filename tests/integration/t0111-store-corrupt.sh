#!/usr/bin/env bash
# Damaged store files: a garbled index.db, a junk day partition and a
# truncated one are moved to quarantine/, counted and logged; the agent
# starts, serves the API and keeps storing new samples.
. "$(dirname "$0")/lib.sh"
need curl
need python3

start_agent --simulate 1 --interval 0.2 --no-ebpf --flush-interval 1
wait_until '[ "$(value gpuwatch_store_flushes_total '"'"'result="ok"'"'"')" -ge 1 ]' 20 \
	"the store never flushed"
stop_agent

S="$T_DIR/data/store"
[ -f "$S/index.db" ] || fail "no index.db in $S"
# Garble the index's first page, plant a junk partition and a truncated one.
python3 - "$S/index.db" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.write(b"\xa5" * 4096)
PY
mkdir -p "$S/raw" "$S/1m"
head -c 20000 /dev/urandom >"$S/raw/2026-01-01.db"
printf 'SQLite format 3\0' >"$S/1m/2026-01-02.db"
"$GPUWATCH" store check --data-dir "$T_DIR/data" >"$T_DIR/check.out" && fail "store check passed damaged files"
grep -q 'DAMAGED' "$T_DIR/check.out" || fail "store check did not name the damage: $(cat "$T_DIR/check.out")"

start_agent --simulate 1 --interval 0.2 --no-ebpf --flush-interval 1
wait_for gpuwatch_store_files_quarantined_total '' 3
[ "$(find "$S/quarantine" -type f | wc -l)" -eq 3 ] || fail "quarantine/ does not hold the 3 files"
[ ! -e "$S/raw/2026-01-01.db" ] || fail "the junk partition is still in place"
grep -q 'is corrupt' "$T_DIR/agent.log" || fail "no log line names the corrupt files"
# New samples are stored and queryable.
wait_until 'curl -fsS -G "$URL/api/v1/query" --data-urlencode "query=count_over_time(gpuwatch_gpu_temperature_celsius[1m])" |
	python3 -c "import json,sys; r=json.load(sys.stdin)[\"data\"][\"result\"]; sys.exit(0 if r and float(r[0][\"value\"][1]) >= 5 else 1)"' 30 \
	"new samples are not queryable after the quarantine"
"$GPUWATCH" store check --data-dir "$T_DIR/data" >"$T_DIR/check.out" || fail "store check after quarantine: $(cat "$T_DIR/check.out")"
ok "damaged files quarantined, the agent stores and answers"
stop_agent
