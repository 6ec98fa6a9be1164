#!/usr/bin/env bash
# What must never crash the agent: a stripped binary (its frames are named
# by the module), an executable deleted while it runs (still named, from
# /proc/PID/map_files), and processes that exit while their samples are
# being named (a stream of short-lived processes).  The agent stays up and
# answers throughout.
. "$(dirname "$0")/prof_lib.sh"
prof_require

prof_start_agent --profile all
hot_prog t2106-strip "$BPF_FIXTURES/prog_hot_stripped" -- 120 3 1
cp "$BPF_FIXTURES/prog_hot" "$T_DIR/t2106-del.bin"
hot_prog t2106-del "$T_DIR/t2106-del.bin" -- 120 3 1
rm -f "$T_DIR/t2106-del.bin" "$T_DIR/t2106-del"
strip=${P_PID[t2106-strip]}
del=${P_PID[t2106-del]}

# Short-lived processes: each lives a few ms, many exit mid-drain.
(
	end=$(($(now_ms) + 8000))
	while [ "$(now_ms)" -lt $end ]; do
		"$BPF_FIXTURES/prog_hot" 0.02 1 1 >/dev/null
	done
) &
churn=$!

prof_wait_samples "{pid=\"$strip\"}" 200 90
grep -q '^t2106-strip;.*\[t2106-strip\]\|^t2106-strip;.*\[prog_hot_stripped\]' "$T_DIR/folded" ||
	fail "stripped frames not named by their module: $(head -n 3 "$T_DIR/folded")"
grep -q 'hot_a' "$T_DIR/folded" && fail "a stripped binary has no names to find"
ok "stripped binary: frames named by the module"

prof_wait_samples "{pid=\"$del\"}" 200 90
grep -q ';main;hot_a ' "$T_DIR/folded" || fail "deleted executable not named: $(head -n 3 "$T_DIR/folded")"
ok "deleted executable: still named"

wait "$churn" || true
kill -0 "$AGENT_PID" || fail "the agent died"
curl -fsS "$URL/healthz" >/dev/null || fail "the agent does not answer"
n=$(prof_get '{comm="prog_hot"}' folded | awk '{ t += $NF } END { print t + 0 }')
ok "short-lived processes: agent up ($n samples of them kept)"
stop_agent
