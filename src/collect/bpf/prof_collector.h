/* SPDX-License-Identifier: MIT */
/*
 * prof_collector.h - continuous CPU profiling with eBPF (--profile).
 *
 * One thread ("gw-prof"):
 *   - samples every CPU at --profile-frequency (19 Hz) with a perf event
 *     and a BPF program that counts (process, kernel stack, user stack)
 *     in the kernel (profiler.h); in `gpu` mode only processes that map
 *     libcudart or libcuda (checked for new processes at every drain and
 *     again every 30 s), in `all` mode every process;
 *   - every --profile-flush (5 s) drains the counts, names the frames
 *     (symbols.h) and adds them to the current minute's profile of each
 *     process, whose root frame is the process's comm; the minute's
 *     profiles are written to the profile store at every drain (replacing
 *     the previous write) with the labels pid, comm, container_id,
 *     pod_uid, job and version (the environment variable
 *     --profile-version-env names, else the executable's build id);
 *   - a governor halves the frequency while the profiler's cost is over
 *     --ebpf-budget of the machine, and raises it back when well under.
 *
 * Without BPF support it logs one line and exports gpuwatch_profile_up 0.
 */
#ifndef GW_BPF_PROF_COLLECTOR_H
#define GW_BPF_PROF_COLLECTOR_H

#include "collect/collector.h"

extern const struct gw_collector_ops gw_prof_collector;

#endif
