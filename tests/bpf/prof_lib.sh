# Helpers for the CPU profiling tests t21NN (sourced, not run), on top of
# lib.sh.  The fixture prog_hot (prog_hot.c) burns CPU in hot_a() and
# hot_b() in a ratio given on its command line; prog_hot_nofp is the same
# built without frame pointers, prog_hot_stripped the same stripped;
# prog_jit runs code from anonymous memory named in /tmp/perf-PID.map.
#
# The profiler samples at 499 Hz in these tests (--profile-frequency), so
# that a few seconds of a process's CPU give hundreds of samples even on a
# busy machine, and the shares are judged on enough of them.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# prof_require: bpf_require and the profiling fixtures.
prof_require() {
	bpf_require
	[ -x "$BPF_FIXTURES/prog_hot" ] || fail "fixtures not built: $BPF_FIXTURES/prog_hot"
}

# prof_start_agent ARGS...: the agent with profiling; waits for
# gpuwatch_profile_up 1 (skips where the kernel refuses BPF or perf events).
prof_start_agent() {
	start_agent --profile-flush 0.5 --profile-frequency 499 --ebpf-budget 1 "$@"
	local deadline=$(($(now_ms) + 30000)) up="" why
	while [ "$(now_ms)" -lt $deadline ]; do
		why="$(grep -m1 "profile: unavailable" "$T_DIR/agent.log" || true)"
		if [ -n "$why" ]; then
			case "$why" in
			*"no eBPF support"*) skip "$why" ;;
			esac
			kernel_loads_bpf || skip "$why"
			fail "this kernel loads BPF programs, yet the agent says: ${why#*profile: }"
		fi
		up="$(metric_sum gpuwatch_profile_up || true)"
		[ "$up" = 1 ] && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || fail "agent exited: $(tail -n 5 "$T_DIR/agent.log")"
		sleep 0.1
	done
	fail "gpuwatch_profile_up is '$up', expected 1 (waited 30s)"
}

# hot_prog NAME BINARY [VAR=VALUE...] -- ARGS...: starts BINARY under the
# command name NAME (a link in T_DIR) through prog_start and waits until it
# is ready.
hot_prog() {
	local name="$1" bin="$2" envs=()
	shift 2
	[ ${#name} -le 15 ] || fail "command name $name is longer than 15 characters"
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	[ "${1:-}" = "--" ] && shift
	ln -sf "$bin" "$T_DIR/$name"
	prog_start "$name" "${envs[@]}" "$T_DIR/$name" "$@"
	prog_wait_ready "$name"
}

# prof_get SELECTOR FORMAT [EXTRA-CURL-ARGS...]: the agent's profile of the
# last 10 minutes for SELECTOR on stdout.
prof_get() {
	local sel="$1" fmt="$2"
	shift 2
	curl -fsS -G "$URL/api/v1/profile" --data-urlencode "match[]=$sel" \
		--data-urlencode "format=$fmt" \
		--data-urlencode "start=$(($(date +%s) - 600))" "$@"
}

# prof_total FOLDED-FILE: samples in a folded profile.
prof_total() {
	awk '{ t += $NF } END { print t + 0 }' "$1"
}

# prof_share FOLDED-FILE FRAME: percentage of the samples whose stack has
# FRAME (a whole frame name), with two decimals.
prof_share() {
	awk -v f="$2" '{
		n = $NF; t += n
		s = substr($0, 1, length($0) - length($NF) - 1)
		k = split(s, F, ";")
		for (i = 1; i <= k; i++) if (F[i] == f) { h += n; break }
	} END { printf "%.2f\n", t ? 100 * h / t : 0 }' "$1"
}

# prof_wait_samples SELECTOR N [SECONDS]: polls until the profile of
# SELECTOR holds at least N samples; leaves it in $T_DIR/folded.
prof_wait_samples() {
	local sel="$1" want="$2" secs="${3:-60}" got=0 deadline
	deadline=$(($(now_ms) + secs * 1000))
	while :; do
		prof_get "$sel" folded >"$T_DIR/folded" || fail "GET /api/v1/profile failed"
		got="$(prof_total "$T_DIR/folded")"
		[ "$got" -ge "$want" ] && return 0
		[ "$(now_ms)" -lt $deadline ] || fail "profile of $sel has $got samples, expected >= $want (waited ${secs}s)"
		sleep 0.2
	done
}

# share_near FILE FRAME WANT TOLERANCE: the frame's share is WANT +- TOL.
share_near() {
	local got
	got="$(prof_share "$1" "$2")"
	num_cmp "$got" ">=" "$(($3 - $4))" && num_cmp "$got" "<=" "$(($3 + $4))" ||
		fail "$2 has $got% of the samples, expected $3% +- $4: $(sort -t' ' -k2 -n "$1" | tail -n 5 | tr '\n' '|')"
	echo "$got"
}
