#!/usr/bin/env bash
# gpuwatch top as plain text: --once prints one table with the agent's
# values (a lost GPU as LOST, the alert it raises under ALERTS FIRING),
# sorted and filtered as asked; TERM=dumb on a terminal and a pipe get a
# table per interval, and a pipe's keeps going while the agent is away;
# --once against no agent and bad options fail with a clear message.
. "$(dirname "$0")/lib.sh"
need curl
need tmux
need python3

CHECK="$(dirname "$0")/top-check.py"
SOCK="$T_DIR/tmux.sock"
TOP_PID=""
trap 'rc=$?; tmux -S "$SOCK" kill-server 2>/dev/null || true
[ -z "$TOP_PID" ] || kill -KILL "$TOP_PID" 2>/dev/null || true
set +e; (exit $rc); cleanup' EXIT

count() {
	curl -fsS "$URL/api/v1/query" --data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(int(float(r[0]["value"][1])) if r else 0)'
}

# GPU 3 falls off the bus 2 s in: GpuLost's companion GpuCriticalXid (no
# "for") fires at the next rule evaluation.
start_agent --simulate 4 --interval 0.5 --rule-interval 1 --fault xid79:3:2
port="${URL##*:}"
wait_until '[ "$(count "count(gpuwatch_gpu_process_memory_used_bytes)")" -ge 3 ]' 30 \
	"the simulator did not start 3 processes"
wait_until '[ "$(count "count(ALERTS{alertname=\"GpuCriticalXid\",alertstate=\"firing\",gpu=\"3\"})")" -eq 1 ]' 30 \
	"GpuCriticalXid did not fire for GPU 3"
wait_until '[ "$(count "count(gpuwatch_gpu_up == 0)")" -eq 1 ]' 30 "GPU 3 is not down"
# T: a moment the store holds the 4 GPUs, GPU 3 down, 3 processes and the
# alert at (it takes samples a moment after they are read), compared once
# every GPU has a stored sample a second past it.
pick_t() {
	T="$(python3 -c 'import time; print("%.3f" % (time.time() - 1))')"
	[ "$(count "count(gpuwatch_gpu_up)" "$T")" -eq 4 ] &&
		[ "$(count "count(gpuwatch_gpu_up == 0)" "$T")" -eq 1 ] &&
		[ "$(count "count(gpuwatch_gpu_process_memory_used_bytes)" "$T")" -ge 3 ] &&
		[ "$(count "count(ALERTS{alertname=\"GpuCriticalXid\",alertstate=\"firing\",gpu=\"3\"})" "$T")" -eq 1 ]
}
wait_until pick_t 30 "the store holds no moment with 4 GPUs, GPU 3 down, 3 processes and the alert"
wait_until '[ "$(count "count(timestamp(gpuwatch_gpu_up) > $T + 1)")" -eq 4 ]' 30 \
	"the store has not caught up with T"

"$GPUWATCH" top --once --url "$URL" --time "$T" >"$T_DIR/once" 2>"$T_DIR/once.err" ||
	fail "--once failed: $(cat "$T_DIR/once.err")"
python3 "$CHECK" plain "$URL" "$T" "$T_DIR/once" --min-procs 3 >&2 ||
	{ cat "$T_DIR/once" >&2; fail "--once does not print the agent's values"; }
grep -q '^3 *LOST' "$T_DIR/once" || fail "GPU 3 is not LOST: $(cat "$T_DIR/once")"
awk '/^ALERTS FIRING/ { on = 1 } on && /GpuCriticalXid/ && /gpu=3/ { found = 1 } END { exit !found }' \
	"$T_DIR/once" || fail "GpuCriticalXid on GPU 3 is not under ALERTS FIRING: $(cat "$T_DIR/once")"
grep -q "^gpuwatch top - $URL - .* - 4 GPUs, .* 1 alert firing" "$T_DIR/once" ||
	fail "header: $(head -n 1 "$T_DIR/once")"
ok "--once: the agent's values, GPU 3 LOST, GpuCriticalXid firing"

"$GPUWATCH" top --once --url "$URL" --time "$T" --sort pid --reverse >"$T_DIR/once" ||
	fail "--once --sort pid failed"
python3 "$CHECK" plain "$URL" "$T" "$T_DIR/once" --sort pid --reverse --min-procs 3 >&2 ||
	{ cat "$T_DIR/once" >&2; fail "--sort pid --reverse"; }
pid="$(awk '/^PID/ { getline; print $1; exit }' "$T_DIR/once")"
"$GPUWATCH" top --once --url "$URL" --time "$T" --filter "$pid" >"$T_DIR/once" ||
	fail "--once --filter failed"
python3 "$CHECK" plain "$URL" "$T" "$T_DIR/once" --filter "$pid" >&2 ||
	{ cat "$T_DIR/once" >&2; fail "--filter $pid"; }
grep -q "sorted by mem, filter '$pid'" "$T_DIR/once" || fail "the filter is not stated"
ok "--sort pid --reverse and --filter $pid"

# The same check must fail on a table that differs from the agent.
sed 's/^\(0 *\)\([0-9][0-9]*\)/\1999/' "$T_DIR/once" >"$T_DIR/bad"
if python3 "$CHECK" plain "$URL" "$T" "$T_DIR/bad" >/dev/null 2>&1; then
	fail "top-check.py accepts a table whose GPU 0 utilisation is wrong"
fi
ok "the check catches a wrong value"

# TERM=dumb on a terminal: plain tables, one per interval.
tmux -S "$SOCK" -f /dev/null new-session -d -x 120 -y 200 -s dumb \
	"TERM=dumb '$GPUWATCH' top --url '$URL' --interval 0.2 --iterations 3; echo \$? >'$T_DIR/dumb.rc'; sleep 60"
wait_until '[ -s "$T_DIR/dumb.rc" ]' 20 "TERM=dumb top did not end after 3 iterations"
tmux -S "$SOCK" capture-pane -p -S - -t dumb >"$T_DIR/dumb"
[ "$(cat "$T_DIR/dumb.rc")" = 0 ] || fail "TERM=dumb top exited $(cat "$T_DIR/dumb.rc")"
[ "$(grep -c '^gpuwatch top - ' "$T_DIR/dumb")" -eq 3 ] ||
	{ cat "$T_DIR/dumb" >&2; fail "TERM=dumb did not print 3 plain tables"; }
grep -q "^GPU  UTIL%" "$T_DIR/dumb" || fail "TERM=dumb: no GPU table"
ok "TERM=dumb: a plain table per interval"

# A pipe: tables until the agent goes, "unreachable since", then tables
# again when it is back.
"$GPUWATCH" top --url "$URL" --interval 0.2 >"$T_DIR/live" 2>&1 &
TOP_PID=$!
wait_until '[ "$(grep -c "^gpuwatch top - " "$T_DIR/live")" -ge 2 ]' 15 "no tables on the pipe"
stop_agent
wait_until 'grep -q "^gpuwatch top: agent unreachable since .*; retrying" "$T_DIR/live"' 15 \
	"no 'agent unreachable since' on the pipe"
kill -0 "$TOP_PID" || fail "top exited when the agent stopped"
before="$(grep -c "^gpuwatch top - " "$T_DIR/live")"
start_agent --simulate 4 --interval 0.5 --listen "127.0.0.1:$port"
wait_until 'tail -n 40 "$T_DIR/live" | found "^gpuwatch top - " &&
	! tail -n 40 "$T_DIR/live" | found unreachable' 15 "no fresh table after the agent came back"
kill -TERM "$TOP_PID"
rc=0
wait "$TOP_PID" || rc=$?
TOP_PID=""
[ $rc -eq 0 ] || fail "top exited $rc on SIGTERM"
[ "$(grep -c "^gpuwatch top - " "$T_DIR/live")" -gt "$before" ] || fail "no table after the agent came back"
ok "a pipe: tables, 'agent unreachable since', tables again; SIGTERM exits 0"
stop_agent

# No agent: --once says so and exits 1; bad options exit 2.
rc=0
"$GPUWATCH" top --once --url "http://127.0.0.1:$port" >"$T_DIR/out" 2>"$T_DIR/err" || rc=$?
[ $rc -eq 1 ] || fail "--once with no agent exited $rc"
grep -q "cannot reach the agent at http://127.0.0.1:$port" "$T_DIR/err" || fail "no agent: $(cat "$T_DIR/err")"
for args in "--interval 0" "--interval x" "--sort bogus" "--iterations 0" "--time yesterday" "extra"; do
	rc=0
	# shellcheck disable=SC2086
	"$GPUWATCH" top --once $args >"$T_DIR/out" 2>"$T_DIR/err" || rc=$?
	[ $rc -eq 2 ] || fail "top $args exited $rc, not 2"
	grep -q "gpuwatch top: .*see 'gpuwatch top --help'" "$T_DIR/err" || fail "top $args: $(cat "$T_DIR/err")"
done
"$GPUWATCH" top --help >"$T_DIR/help" || fail "--help failed"
for w in --url --interval --once --plain --time --sort --filter "Keys" "Exit status"; do
	grep -q -- "$w" "$T_DIR/help" || fail "--help does not mention $w"
done
"$GPUWATCH" help top | cmp -s - "$T_DIR/help" || fail "'gpuwatch help top' differs from --help"
ok "no agent: exit 1 with the reason; bad options: exit 2; --help"
