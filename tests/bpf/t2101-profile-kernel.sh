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
# The kernel's own account of the program's CPU time, read as the profile
# is: how much of it lands in the kernel depends on the machine (on a
# virtual one, a timer interrupt held back during a system call is taken
# just after it returns), and the kernel's tick accounting sees the same.
read -r utime stime < <(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12, $13 }')
[ $((utime + stime)) -gt 0 ] || fail "the program has no CPU time in /proc/$pid/stat"
s=$((100 * stime / (utime + stime)))
k=$(awk '/;(do_syscall_64|entry_SYSCALL_64[a-z_]*)(;| )/ { h += $NF } { t += $NF } END { printf "%d", 100 * h / t }' "$T_DIR/folded")
num_cmp "$k" ">=" "$((s * 2 / 3 - 5))" ||
	fail "only $k% of the samples in the kernel; the kernel accounts $s% of the program's CPU time as system time"
ok "kernel frames by name in $k% of the samples (system time: $s%)"
stop_agent
