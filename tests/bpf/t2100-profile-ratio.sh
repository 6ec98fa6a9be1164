#!/usr/bin/env bash
# --profile gpu: a program that maps libcudart and spends its CPU in two
# functions in a 3:1 ratio (built with frame pointers) shows both by name
# at 75% and 25% (+- 5) of its samples, under main, with the attribution
# labels; the same program without CUDA libraries mapped is not profiled.
. "$(dirname "$0")/prof_lib.sh"
prof_require

prof_start_agent --profile gpu
hot_prog t2100-gpu "$BPF_FIXTURES/prog_hot" LD_PRELOAD="$STUB_DIR/libcudart.so.13" -- 120 3 1
hot_prog t2100-cpu "$BPF_FIXTURES/prog_hot" -- 120 3 1
gpu=${P_PID[t2100-gpu]}
cpu=${P_PID[t2100-cpu]}

prof_wait_samples "{pid=\"$gpu\"}" 2000 90
a=$(share_near "$T_DIR/folded" hot_a 75 5)
b=$(share_near "$T_DIR/folded" hot_b 25 5)
grep -q "^t2100-gpu;.*;main;hot_a " "$T_DIR/folded" ||
	fail "no stack comm;...;main;hot_a: $(head -n 3 "$T_DIR/folded")"
ok "hot_a $a%, hot_b $b% of $(prof_total "$T_DIR/folded") samples, under main"

prof_get "{comm=\"t2100-gpu\",pid=\"$gpu\"}" json >"$T_DIR/json"
grep -q '"frames":\["t2100-gpu",' "$T_DIR/json" || fail "json: $(head -c 300 "$T_DIR/json")"
grep -q '"samples":[1-9]' "$T_DIR/json" || fail "json without samples"
ok "json by comm and pid"

if command -v readelf >/dev/null 2>&1; then
	bid=$(readelf -n "$BPF_FIXTURES/prog_hot" | sed -n 's/.*Build ID: *//p')
	[ -n "$bid" ] || fail "prog_hot has no build id"
	prof_get "{pid=\"$gpu\",version=\"$bid\"}" folded >"$T_DIR/byversion"
	[ "$(prof_total "$T_DIR/byversion")" -gt 0 ] || fail "no profile with version=$bid (the build id)"
	ok "version is the executable's build id"
fi

prof_get "{pid=\"$cpu\"}" folded >"$T_DIR/other"
[ "$(prof_total "$T_DIR/other")" -eq 0 ] || fail "a process without CUDA was profiled in gpu mode"
expect gpuwatch_profile_processes ">=" 1
ok "a process without CUDA libraries is not sampled"
stop_agent
