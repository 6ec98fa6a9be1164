#!/usr/bin/env bash
# --profile all: a syscall-heavy program (getppid and write to /dev/null)
# shows kernel frames named from /proc/kallsyms above its user frames
# (libc's syscall wrappers have no frame pointer, so the frame-pointer walk
# goes from getppid or write straight to main).
. "$(dirname "$0")/prof_lib.sh"
prof_require

prof_start_agent --profile all
hot_prog t2101-sys "$BPF_FIXTURES/prog_hot" -- 120 syscalls
pid=${P_PID[t2101-sys]}
prof_wait_samples "{pid=\"$pid\"}" 300 90
grep -Eq '^t2101-sys;.*;main;.*;(entry_SYSCALL_64[a-z_]*);do_syscall_64[; ]' "$T_DIR/folded" ||
	fail "no kernel frames above main: $(sort -t' ' -k2 -n "$T_DIR/folded" | tail -n 3)"
k=$(awk '/;(do_syscall_64|entry_SYSCALL_64[a-z_]*)(;| )/ { h += $NF } { t += $NF } END { printf "%d", 100 * h / t }' "$T_DIR/folded")
num_cmp "$k" ">=" 30 || fail "only $k% of the samples in the kernel"
ok "kernel frames by name in $k% of the samples"
stop_agent
