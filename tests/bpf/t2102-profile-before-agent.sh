#!/usr/bin/env bash
# A GPU process already running when the agent starts is selected from
# /proc at start and profiled, with its version from
# --profile-version-env.
. "$(dirname "$0")/prof_lib.sh"
prof_require

hot_prog t2102-early "$BPF_FIXTURES/prog_hot" LD_PRELOAD="$STUB_DIR/libcudart.so.13" APP_VERSION=7.1 -- 120 1 1
pid=${P_PID[t2102-early]}
prof_start_agent --profile gpu --profile-version-env APP_VERSION
prof_wait_samples "{pid=\"$pid\",version=\"7.1\"}" 200 90
grep -q ';hot_a ' "$T_DIR/folded" || fail "hot_a not in the profile"
ok "profiled, version label from the environment"
stop_agent
