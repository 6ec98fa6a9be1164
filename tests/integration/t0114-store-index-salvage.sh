#!/usr/bin/env bash
# A damaged index.db: with its first page garbled (SQLite cannot open it
# at all), the store rebuilds the index from the partitions, what survived
# in the file and its write-ahead log, and the head log (headlog/, which
# holds the samples and the keys of the series created since the last
# cut): after a restart every series and every sample is back, exactly as
# an undamaged copy of the same directory answers, and one line reports
# what came back and what did not.  Twice: after a clean stop and after
# kill -9 (index.db-wal's header garbled too, where there is one).
. "$(dirname "$0")/lib.sh"
need curl
need python3

S="$T_DIR/data/store"

# answer T: every stored sample of the hour before T (ms): one line per
# series, its labels, then its samples (time and value), sorted.
answer() {
	curl -fsS -G "$URL/api/v1/query" \
		--data-urlencode 'query={__name__=~".+"}[1h]' \
		--data-urlencode "time=$(awk -v t="$1" 'BEGIN { printf "%.3f", t / 1000 }')" |
		python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
for s in sorted(r, key=lambda s: sorted(s["metric"].items())):
    print(json.dumps(sorted(s["metric"].items())), len(s["values"]),
          json.dumps(s["values"]))'
}

# garble FILE BYTES: overwrites the first BYTES of FILE.
garble() {
	python3 - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.write(b"\xa5" * int(sys.argv[2]))
PY
}

run_case() {
	local how="$1" t_end
	rm -rf "$T_DIR/data" "$T_DIR/data.orig"
	start_agent --simulate 2 --interval 0.2 --no-ebpf --flush-interval 1
	wait_until '[ "$(value gpuwatch_store_flushes_total '"'"'result="ok"'"'"')" -ge 4 ]' 30 \
		"the store never flushed"
	if [ "$how" = kill ]; then
		kill -KILL "$AGENT_PID"
		wait "$AGENT_PID" 2>/dev/null || true
		AGENT_PID=""
	else
		stop_agent
	fi
	t_end=$(now_ms)
	cp -a "$T_DIR/data" "$T_DIR/data.orig"
	# The first page (header and schema); after kill -9 the log holds a
	# newer copy of it, so the log's header goes too (SQLite then ignores
	# the whole log).
	garble "$S/index.db" 4096
	if [ "$how" = kill ] && [ -s "$S/index.db-wal" ]; then
		garble "$S/index.db-wal" 32
	fi

	# The damaged directory.
	start_agent --simulate 2 --interval 0.2 --no-ebpf --flush-interval 1
	grep -q 'index.db rebuilt' "$T_DIR/agent.log" ||
		fail "$how: no report of the rebuild: $(cat "$T_DIR/agent.log")"
	grep 'index.db rebuilt' "$T_DIR/agent.log" | found 'not recovered: 0 samples of 0 series' ||
		fail "$how: the report says something was lost: $(grep 'index.db rebuilt' "$T_DIR/agent.log")"
	answer "$t_end" >"$T_DIR/damaged.$how"
	stop_agent
	# A restart after the rebuild keeps it (the new index.db holds it).
	start_agent --simulate 2 --interval 0.2 --no-ebpf --flush-interval 1
	answer "$t_end" >"$T_DIR/again.$how"
	stop_agent

	# The same directory undamaged.
	rm -rf "$T_DIR/data"
	mv "$T_DIR/data.orig" "$T_DIR/data"
	start_agent --simulate 2 --interval 0.2 --no-ebpf --flush-interval 1
	answer "$t_end" >"$T_DIR/intact.$how"
	stop_agent

	[ "$(wc -l <"$T_DIR/intact.$how")" -ge 20 ] ||
		fail "$how: the intact store answers only $(wc -l <"$T_DIR/intact.$how") series"
	diff "$T_DIR/intact.$how" "$T_DIR/damaged.$how" >"$T_DIR/diff.$how" ||
		fail "$how: after the rebuild the store answers differently (intact < > rebuilt):
$(head -20 "$T_DIR/diff.$how")"
	diff "$T_DIR/intact.$how" "$T_DIR/again.$how" >"$T_DIR/diff2.$how" ||
		fail "$how: a second restart lost what the rebuild recovered:
$(head -20 "$T_DIR/diff2.$how")"
	ok "$how: $(wc -l <"$T_DIR/intact.$how") series, every sample recovered from the damaged index"
}

run_case stop
run_case kill
