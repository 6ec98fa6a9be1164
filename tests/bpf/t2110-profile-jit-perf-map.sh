#!/usr/bin/env bash
# JIT code: a program that runs machine code from anonymous memory and
# names it in /tmp/perf-PID.map (as CPython 3.12 does with -X perf) has
# those samples named from the map.
. "$(dirname "$0")/prof_lib.sh"
prof_require
[ -x "$BPF_FIXTURES/prog_jit" ] || fail "fixtures not built: $BPF_FIXTURES/prog_jit"

prof_start_agent --profile all
hot_prog t2110-jit "$BPF_FIXTURES/prog_jit" -- 120
pid=${P_PID[t2110-jit]}
prof_wait_samples "{pid=\"$pid\"}" 200 90
share=$(prof_share "$T_DIR/folded" "py::train_step:/app/train.py")
num_cmp "$share" ">=" 80 || fail "the JIT frame has $share% of the samples: $(sort -t' ' -k2 -n "$T_DIR/folded" | tail -n 3)"
ok "JIT code named from /tmp/perf-$pid.map in $share% of the samples"
stop_agent
