#!/usr/bin/env bash
# The 3:1 program built without frame pointers (-fomit-frame-pointer):
# --profile-unwind auto sees that its executable keeps none, copies the top
# of the user stack with the registers at each sample and unwinds it from
# .eh_frame in the agent; both functions by name at 75% and 25% (+- 5),
# under main and _start.  With --profile-unwind fp the same program's
# stacks stop at the leaf.
. "$(dirname "$0")/prof_lib.sh"
prof_require
[ -x "$BPF_FIXTURES/prog_hot_nofp" ] || fail "fixtures not built: $BPF_FIXTURES/prog_hot_nofp"

prof_start_agent --profile gpu --profile-unwind auto
hot_prog t2107-nofp "$BPF_FIXTURES/prog_hot_nofp" LD_PRELOAD="$STUB_DIR/libcudart.so.13" -- 120 3 1
pid=${P_PID[t2107-nofp]}
# The first drain's samples were taken before the process was marked
# (more of them the slower the agent); the share is judged on stacks that
# reach main: read the profile until 600 do (or 90 s pass).
deep_samples() {
	prof_get "{pid=\"$pid\"}" folded >"$T_DIR/folded" || fail "GET /api/v1/profile failed"
	grep ';main;' "$T_DIR/folded" >"$T_DIR/deep" || true
	n=$(prof_total "$T_DIR/deep")
	[ "$n" -ge 600 ]
}
deadline=$(($(now_ms) + 90000))
until deep_samples || [ "$(now_ms)" -ge $deadline ]; do
	sleep 0.2
done
num_cmp "$n" ">=" 600 || fail "only $n of $(prof_total "$T_DIR/folded") samples unwound to main: $(sort -t' ' -k2 -n "$T_DIR/folded" | tail -n 3)"
a=$(share_near "$T_DIR/deep" hot_a 75 5)
b=$(share_near "$T_DIR/deep" hot_b 25 5)
grep -q '^t2107-nofp;_start;.*;main;hot_a ' "$T_DIR/deep" || fail "no _start;...;main;hot_a stack"
expect gpuwatch_profile_unwound_samples_total ">=" 600
ok "without frame pointers: hot_a $a%, hot_b $b% of $n samples unwound to _start"
stop_agent

prof_start_agent --profile gpu --profile-unwind fp
hot_prog t2107-fp "$BPF_FIXTURES/prog_hot_nofp" LD_PRELOAD="$STUB_DIR/libcudart.so.13" -- 120 3 1
pid=${P_PID[t2107-fp]}
prof_wait_samples "{pid=\"$pid\"}" 200 90
grep -q ';main;hot_a ' "$T_DIR/folded" && fail "frame pointers found main in a program without them?"
ok "--profile-unwind fp: the stacks stop at the leaf, as expected"
stop_agent
