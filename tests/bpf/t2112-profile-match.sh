#!/usr/bin/env bash
# --profile-match narrows the profiler's selection with selectors over a
# process's labels:
#   --profile all: a process selected by comm and one by its cgroup are
#     profiled, a third process burning the same CPU is not;
#   --profile gpu: of two CUDA processes only the one whose job label
#     matches is profiled.
# gpuwatch_profile_processes counts the selected ones in both modes.  A
# selected process that execs (a shell becoming the program) is named as
# what it became, its earlier stacks included.
. "$(dirname "$0")/prof_lib.sh"
prof_require

root="$(cg_v1_root pids)"
[ -n "$root" ] || root="$(cg_v2_root)"
grp=""
if [ -n "$root" ] && [ -w "$root/cgroup.procs" ]; then
	grp="t2112-$(random_hex 8)"
	cg_make "$root" "$grp"
fi

prof_start_agent --profile all --profile-match '{comm="t2112-sel"}' \
	--profile-match "{cgroup=~\".*/${grp:-none}\"}"
grep -q 'profile: sampling every process that match --profile-match' "$T_DIR/agent.log" ||
	fail "the start line does not name the selection: $(grep 'profile:' "$T_DIR/agent.log")"
hot_prog t2112-sel "$BPF_FIXTURES/prog_hot" -- 120 1 1
hot_prog t2112-other "$BPF_FIXTURES/prog_hot" -- 120 1 1
if [ -n "$grp" ]; then
	PROG_CGROUPS="$CG_PATH" hot_prog t2112-cg "$BPF_FIXTURES/prog_hot" -- 120 1 1
	prof_wait_samples "{pid=\"${P_PID[t2112-cg]}\"}" 200 90
	grep -q '^t2112-cg;.*hot_a ' "$T_DIR/folded" || fail "not t2112-cg's stacks: $(head -n 3 "$T_DIR/folded")"
	ok "a process in the selected cgroup is profiled"
	# A process that is a shell first, profiled as such, then execs the
	# program: its stacks, those from before the exec too, are named as
	# what it became.  Its first seconds are kept within one minute (a
	# minute's profile written before the exec keeps the old name): the
	# shell's loop takes seconds on a loaded machine, so it starts before :40.
	while [ "$(date +%S | sed 's/^0//')" -ge 40 ]; do sleep 0.2; done
	ln -sf "$BPF_FIXTURES/prog_hot" "$T_DIR/t2112-exec"
	PROG_CGROUPS="$CG_PATH" prog_start t2112-ex /bin/sh -c \
		'i=0; while [ $i -lt 1500000 ]; do i=$((i + 1)); done; exec "$0" 120 1 1' \
		"$T_DIR/t2112-exec"
	prog_wait_ready t2112-ex 60
	deadline=$(($(now_ms) + 30000))
	until prof_get "{pid=\"${P_PID[t2112-ex]}\"}" folded >"$T_DIR/ex" &&
		grep -q '^t2112-exec;.*hot_a ' "$T_DIR/ex"; do
		[ "$(now_ms)" -lt $deadline ] ||
			fail "the exec'd program's stacks are not under its name: $(head -n 3 "$T_DIR/ex")"
		sleep 0.2
	done
	! grep -q '^sh;' "$T_DIR/ex" ||
		fail "stacks keep the name from before the exec: $(grep '^sh;' "$T_DIR/ex" | head -n 3)"
	prof_get '{comm="sh"}' folded >"$T_DIR/sh"
	! grep -q 'hot_a ' "$T_DIR/sh" || fail "the program's samples are labelled comm=\"sh\""
	ok "a process that execs is profiled under the name it took"
fi
prof_wait_samples "{pid=\"${P_PID[t2112-sel]}\"}" 200 90
ok "a process selected by comm is profiled"
prof_get "{comm=\"t2112-other\"}" folded >"$T_DIR/other"
[ "$(prof_total "$T_DIR/other")" -eq 0 ] ||
	fail "--profile all with selectors sampled a process none matches: $(head -n 3 "$T_DIR/other")"
expect gpuwatch_profile_processes "==" "$([ -n "$grp" ] && echo 3 || echo 1)"
ok "a process no selector matches is not sampled"
stop_agent
for n in t2112-sel t2112-other t2112-cg t2112-ex; do
	[ -z "${P_PID[$n]:-}" ] || kill "${P_PID[$n]}" 2>/dev/null || true
done

prof_start_agent --profile gpu --job-env MY_JOB --profile-match '{job="t2112"}'
hot_prog t2112-gpu-in "$BPF_FIXTURES/prog_hot" \
	LD_PRELOAD="$STUB_DIR/libcudart.so.13" MY_JOB=t2112 -- 120 1 1
hot_prog t2112-gpu-out "$BPF_FIXTURES/prog_hot" \
	LD_PRELOAD="$STUB_DIR/libcudart.so.13" MY_JOB=other -- 120 1 1
prof_wait_samples "{job=\"t2112\"}" 200 90
grep -q '^t2112-gpu-in;.*hot_a ' "$T_DIR/folded" || fail "not t2112-gpu-in's stacks: $(head -n 3 "$T_DIR/folded")"
prof_get "{comm=\"t2112-gpu-out\"}" folded >"$T_DIR/out"
[ "$(prof_total "$T_DIR/out")" -eq 0 ] ||
	fail "--profile gpu sampled a CUDA process whose job the selector does not match"
expect gpuwatch_profile_processes "==" 1
ok "--profile gpu: only the CUDA process whose job matches"
stop_agent
