#!/usr/bin/env bash
# gpuwatch top full screen, driven in tmux at 80x24 against an agent with
# simulated GPUs: every GPU and running process is on screen with the
# agent's values (/api/v1/query at the same time), the sort keys and the
# / filter reorder and narrow the process table, and when the agent stops
# the view says so and keeps going, then shows the data again once the
# agent is back on the same address.
. "$(dirname "$0")/lib.sh"
need curl
need tmux
need python3

CHECK="$(dirname "$0")/top-check.py"
SOCK="$T_DIR/tmux.sock"
trap 'rc=$?; tmux -S "$SOCK" kill-server 2>/dev/null || true; set +e; (exit $rc); cleanup' EXIT

# count EXPR [TIME]: the value of a one-series PromQL answer (0 when empty).
count() {
	curl -fsS "$URL/api/v1/query" --data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(int(float(r[0]["value"][1])) if r else 0)'
}

screen() {
	tmux -S "$SOCK" capture-pane -p -t top >"$T_DIR/screen"
}

# wait_screen 'CONDITION on $T_DIR/screen' MESSAGE
wait_screen() {
	local deadline=$(($(now_ms) + 15000))
	while :; do
		screen
		eval "$1" && return 0
		if [ "$(now_ms)" -ge $deadline ]; then
			cat "$T_DIR/screen" >&2
			fail "$2 (waited 15 s)"
		fi
		sleep 0.1
	done
}

# check_screen [top-check.py OPTIONS]: polls until the screen agrees with
# the agent (a capture can fall between two redraws).
check_screen() {
	local deadline=$(($(now_ms) + 15000))
	while :; do
		screen
		if python3 "$CHECK" screen "$URL" "$T" "$T_DIR/screen" "$@" >"$T_DIR/check.out" 2>&1; then
			return 0
		fi
		if [ "$(now_ms)" -ge $deadline ]; then
			cat "$T_DIR/screen" "$T_DIR/check.out" >&2
			fail "the screen does not show the agent's values ($*)"
		fi
		sleep 0.1
	done
}

start_agent --simulate 3 --interval 0.5
port="${URL##*:}"
wait_until '[ "$(count "count(gpuwatch_gpu_process_memory_used_bytes)")" -ge 3 ]' 30 \
	"the simulator did not start 3 processes"
# T: a moment the store holds every GPU and 3 processes at (it takes
# samples a moment after they are read, and the first ones later still),
# compared once every GPU has a stored sample a second past it.
pick_t() {
	T="$(python3 -c 'import time; print("%.3f" % (time.time() - 1))')"
	[ "$(count "count(gpuwatch_gpu_up)" "$T")" -eq 3 ] &&
		[ "$(count "count(gpuwatch_gpu_process_memory_used_bytes)" "$T")" -ge 3 ]
}
wait_until pick_t 30 "the store holds no moment with 3 GPUs and 3 processes"
wait_until '[ "$(count "count(timestamp(gpuwatch_gpu_up) > $T + 1)")" -eq 3 ]' 30 \
	"the store has not caught up with T"

tmux -S "$SOCK" -f /dev/null new-session -d -x 80 -y 24 -s top \
	"'$GPUWATCH' top --url '$URL' --time $T --interval 0.5; echo \$? >'$T_DIR/top.rc'"

wait_screen 'grep -q "^ *PID" "$T_DIR/screen"' "no process table on screen"
check_screen --min-procs 3
[ "$(wc -l <"$T_DIR/screen")" -eq 24 ] || fail "the capture is not 24 lines"
tail -n 1 "$T_DIR/screen" | found "q quit  / filter" || fail "no help line at the bottom: $(tail -n 1 "$T_DIR/screen")"
ok "80x24: 3 GPUs and the running processes with the agent's values, sorted by memory"

tmux -S "$SOCK" send-keys -t top p
check_screen --sort pid --min-procs 3
tmux -S "$SOCK" send-keys -t top u
check_screen --sort util --min-procs 3
tmux -S "$SOCK" send-keys -t top r
check_screen --sort util --reverse --min-procs 3
wait_screen 'grep -q "sort=util rev" "$T_DIR/screen"' "the help line does not say sort=util rev"
tmux -S "$SOCK" send-keys -t top r g
check_screen --sort gpu --min-procs 3
ok "p, u, r and g sort the process table"

# Filter on the pid of the process using the least memory.
pid="$(curl -fsS "$URL/api/v1/query" --data-urlencode "query=bottomk(1, gpuwatch_gpu_process_memory_used_bytes)" \
	--data-urlencode "time=$T" | python3 -c 'import json, sys
print(json.load(sys.stdin)["data"]["result"][0]["metric"]["pid"])')"
tmux -S "$SOCK" send-keys -t top m / "$pid"
wait_screen 'grep -q "filter: ${pid}_" "$T_DIR/screen"' "the filter prompt does not show what was typed"
tmux -S "$SOCK" send-keys -t top Enter
# (the filter applies while it is typed: the help line tells Enter apart)
wait_screen 'tail -n 1 "$T_DIR/screen" | found "filter \[$pid\]"' "the help line does not show the filter"
check_screen --filter "$pid"
[ "$(grep -c "^ *$pid " "$T_DIR/screen")" -ge 1 ] || fail "process $pid is not shown under its own filter"
tmux -S "$SOCK" send-keys -t top Escape
check_screen --min-procs 3
ok "/ filters the processes (pid $pid), Esc clears the filter"

# The agent goes away: the view says so, keeps the last values, retries.
stop_agent
wait_screen 'grep -q "agent unreachable since [0-9:]*, retrying" "$T_DIR/screen"' \
	"no 'agent unreachable since' on screen"
[ "$(grep -c '^ *[0-9] \[' "$T_DIR/screen")" -eq 3 ] || fail "the last GPU values are gone"
[ ! -e "$T_DIR/top.rc" ] || fail "top exited when the agent stopped: $(cat "$T_DIR/top.rc")"
ok "agent stopped: 'agent unreachable since', last values kept"

start_agent --simulate 3 --interval 0.5 --listen "127.0.0.1:$port"
[ "${URL##*:}" = "$port" ] || fail "the agent came back on $URL, not port $port"
wait_screen '! grep -q "unreachable" "$T_DIR/screen"' "still unreachable after the agent came back"
check_screen --min-procs 3
ok "agent back: the view shows its values again"

tmux -S "$SOCK" send-keys -t top q
wait_until '[ -s "$T_DIR/top.rc" ]' 10 "q did not end gpuwatch top"
[ "$(cat "$T_DIR/top.rc")" = 0 ] || fail "gpuwatch top exited with $(cat "$T_DIR/top.rc") after q"
ok "q quits with status 0"
stop_agent
