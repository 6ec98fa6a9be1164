#!/usr/bin/env bash
# Launch call paths: the profiler's launch probe on cudaLaunchKernel and
# cuLaunchKernel records the user stack of one launch in 16 (unwound from
# .eh_frame, so the caller at the function's entry is kept), counted as 16:
# type=launches shows both launch functions under the program's step(),
# with about as many launches as were made; CPU profiles never include
# them.
. "$(dirname "$0")/prof_lib.sh"
prof_require

prof_start_agent --profile gpu --log-level debug
stub_prog t2108-launch -- wait launch 3200 culaunch 1600 wait exit 0
prog_wait_ready t2108-launch
pid=${P_PID[t2108-launch]}
wait_until 'grep -q "profile: launch call paths from .*libcudart.so.13" "$T_DIR/agent.log" &&
	grep -q "profile: launch call paths from .*libcuda.so.1" "$T_DIR/agent.log"' 30 \
	"no launch probes on the stub libraries"
# This process (not only the libraries: another may have mapped them).
wait_until 'grep -q "profile: pid $pid selected" "$T_DIR/agent.log"' 30 \
	"pid $pid is not selected for profiling"
prog_continue t2108-launch
prog_wait_ready t2108-launch

# Every 16th launch per CPU: the count is within 16 per CPU of the truth.
slack=$((16 * $(nproc) * 2))
# The samples reach the profile some time after the program made them
# (the agent reads them in batches): wait until each launch function's
# path holds as many as must come, not fewer.
get_launches() {
	prof_get "{pid=\"$pid\"}" folded --data-urlencode type=launches >"$T_DIR/launch"
	rt=$(awk '/;step;cudaLaunchKernel( |;)/ { t += $NF } END { print t + 0 }' "$T_DIR/launch")
	dr=$(awk '/;step;cuLaunchKernel( |;)/ { t += $NF } END { print t + 0 }' "$T_DIR/launch")
	[ "$rt" -ge $((3200 - slack)) ] && [ "$dr" -ge $((1600 - slack)) ]
}
wait_until get_launches 30 "the launch profile of pid $pid never held 3200 and 1600 launches (less $slack) under step()"
all=$(prof_total "$T_DIR/launch")
num_cmp "$all" "<=" $((4800 + slack)) && num_cmp "$all" ">=" $((4800 - slack)) ||
	fail "$all launches recorded, 4800 made: $(head -n 5 "$T_DIR/launch")"
grep -q '^t2108-launch;.*;main;.*step;cudaLaunchKernel ' "$T_DIR/launch" || fail "no path from main"
expect gpuwatch_profile_launches_total ">=" 4800
ok "launch call paths: $rt x cudaLaunchKernel, $dr x cuLaunchKernel under step() (of 3200, 1600)"

prof_get "{pid=\"$pid\"}" folded >"$T_DIR/cpu"
# The program ran for milliseconds: its CPU samples are few, far from the
# 4800 the launch counts would add.
cpu=$(prof_total "$T_DIR/cpu")
num_cmp "$cpu" "<" 1000 || fail "the CPU profile has $cpu samples: launch counts leaked into it"
code=$(curl -sS -o "$T_DIR/body" -w '%{http_code}' -G "$URL/api/v1/profile" -d type=memory)
[ "$code" = 400 ] && grep -q 'is not cpu, launches or gpu_time' "$T_DIR/body" || fail "type=memory: $code"
ok "CPU profiles are apart; an unknown type is 400"
prog_continue t2108-launch
prog_wait_exit t2108-launch 0
stop_agent
