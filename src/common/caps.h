/* SPDX-License-Identifier: MIT */
/*
 * caps.h - Linux capabilities, thread by thread.
 *
 * Capabilities are per thread (the effective, permitted, inheritable and
 * bounding sets alike), and a new thread starts with its creator's.  Each
 * part of the agent keeps only what it uses once it is set up:
 *
 *   gw-ebpf               GW_CAPS_EBPF: load and attach probes to new
 *                         processes, read their maps and files
 *   gw-cupti              GW_CAPS_CUPTI: open other users' rings, map
 *                         their pids, attribute them
 *   gw-nvml, gw-nvml-N    GW_CAPS_ATTRIB: attribute GPU processes
 *   every other thread    nothing (the main thread once the collectors
 *                         run, so the HTTP and query threads it starts
 *                         next begin with nothing; statsd, store, rules,
 *                         Alertmanager senders, NVML events)
 *
 * A worker names what it keeps in gw_worker_opts.caps; worker.c calls
 * gw_caps_limit_thread() first thing in the new thread.  What a thread
 * drops it can never regain: the bounding set loses it too.  A thread that
 * holds nothing to begin with (an unprivileged agent) is left alone.  See
 * docs/internals/privileges.md.
 *
 * Errors: 0 or -errno (capset(2), prctl(2)).  Thread safety: each call
 * acts on the calling thread only.
 */
#ifndef GW_CAPS_H
#define GW_CAPS_H

#include <stdint.h>

#define GW_CAP(c) (1ull << (c))

/* Numbers from linux/capability.h, for kernels' headers that lack some. */
#define GW_CAP_DAC_OVERRIDE    1
#define GW_CAP_DAC_READ_SEARCH 2
#define GW_CAP_SYS_PTRACE      19
#define GW_CAP_SYS_ADMIN       21
#define GW_CAP_SYS_RESOURCE    24
#define GW_CAP_SYSLOG	       34
#define GW_CAP_PERFMON	       38
#define GW_CAP_BPF	       39

/* Reading other users' /proc/PID/{environ,cgroup,maps,root}. */
#define GW_CAPS_ATTRIB                                                         \
	(GW_CAP(GW_CAP_SYS_PTRACE) | GW_CAP(GW_CAP_DAC_READ_SEARCH))
/* Rings are other users' files, opened read-write. */
#define GW_CAPS_CUPTI (GW_CAPS_ATTRIB | GW_CAP(GW_CAP_DAC_OVERRIDE))
/* Probes; RLIMIT_MEMLOCK for BPF maps on kernels before 5.11; on kernels
 * without CAP_BPF (before 5.8) CAP_SYS_ADMIN stands for both: see
 * gw_caps_ebpf(). */
#define GW_CAPS_EBPF                                                           \
	(GW_CAP(GW_CAP_BPF) | GW_CAP(GW_CAP_PERFMON) |                         \
	 GW_CAP(GW_CAP_SYS_RESOURCE) | GW_CAPS_ATTRIB)

/* The CPU profiler: the probes', kernel addresses in /proc/kallsyms, and
 * CAP_SYS_ADMIN (see gw_caps_prof()). */
#define GW_CAPS_PROF                                                           \
	(GW_CAPS_EBPF | GW_CAP(GW_CAP_SYSLOG) | GW_CAP(GW_CAP_SYS_ADMIN))

/* What a worker keeps by default in gw_worker_opts: nothing. */
#define GW_CAPS_NONE 0ull

/* GW_CAPS_EBPF, with CAP_SYS_ADMIN where the kernel has no CAP_BPF. */
uint64_t gw_caps_ebpf(void);
/*
 * The CPU profiler's (GW_CAPS_PROF): the probes' (gw_caps_ebpf), CAP_SYSLOG
 * for kernel addresses in /proc/kallsyms, and CAP_SYS_ADMIN: the launch
 * probes (a uprobe program reading the task's registers) do not attach
 * without it (Linux 6.18), and /proc/PID/map_files (a mapped file that was
 * deleted) wants it or CAP_CHECKPOINT_RESTORE.
 */
uint64_t gw_caps_prof(void);

/*
 * Keeps only keep (intersected with what the thread has) in this thread's
 * effective and permitted sets, clears the inheritable and ambient ones,
 * and drops everything else from its bounding set.  A thread without any
 * permitted capability returns 0 at once.
 */
__attribute__((warn_unused_result)) int gw_caps_limit_thread(uint64_t keep);
/* gw_caps_limit_thread(GW_CAPS_NONE). */
__attribute__((warn_unused_result)) int gw_caps_drop_thread(void);
/* 1 when this thread holds any effective capability, 0 otherwise. */
int gw_caps_any(void);
/* This thread's effective set (0 when it cannot be read). */
uint64_t gw_caps_effective(void);

#endif
