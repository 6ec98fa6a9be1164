/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * profile.bpf.c - the kernel side of the CPU profiler.
 *
 * One program, gw_sample, runs on a software perf event (cpu-clock) per
 * CPU at the profiling frequency.  For the process on CPU, when it is
 * selected (all processes, or those the collector put into `targets`), it
 * records the kernel and the user stack in `stacks` (a stack-trace map:
 * identical stacks share one id) and counts (pid, kernel stack id, user
 * stack id) in `counts`.  The collector drains `counts` every few seconds
 * (lookup-and-delete per key) and then frees the stack ids it read.
 * User stacks are walked by the kernel through frame pointers.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "profile_bpf.h"

#define F_USER_STACK (1ULL << 8) /* BPF_F_USER_STACK */

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before load: 1 = every process, 0 = `targets`. */
const volatile __u32 profile_all = 0;
/* The agent's own process, never sampled (0 = none). */
const volatile __u32 self_pid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, GW_PROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct gw_prof_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GW_PROF_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} pcounters SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&pcounters, &slot);

	if (v)
		*v += 1;
}

SEC("perf_event")
int gw_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gw_prof_key key = {};
	__u64 one = 1, *v;

	count(GW_PROF_SAMPLES);
	if (tgid == 0 || tgid == self_pid)
		return 0; /* idle, or ourselves */
	if (!profile_all && !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	count(GW_PROF_SELECTED);
	key.pid = tgid;
	key.kstack = bpf_get_stackid(ctx, &stacks, 0);
	key.ustack = bpf_get_stackid(ctx, &stacks, F_USER_STACK);
	if (key.kstack < 0 && key.ustack < 0)
		count(GW_PROF_STACK_ERRORS);
	v = bpf_map_lookup_elem(&counts, &key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&counts, &key);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			count(GW_PROF_DROPPED_COUNTS);
	}
	return 0;
}
