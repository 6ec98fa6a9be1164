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
 * User stacks are walked by the kernel through frame pointers.  For a
 * process in `dwarf` (its code has no frame pointers), the program instead
 * copies the user registers and the top GW_PROF_STACK_COPY bytes of the
 * user stack to the ring buffer `raw`, for the collector to unwind from
 * .eh_frame; when the ring is full the sample is counted as above.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "profile_bpf.h"

#define F_USER_STACK (1ULL << 8) /* BPF_F_USER_STACK */
#define E_EXIST	     17		 /* EEXIST */

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
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} dwarf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} raw SEC(".maps");

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

/* One launch in launch_every has its stack recorded. */
const volatile __u32 launch_every = 16;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} launch_tick SEC(".maps");

/* Reserves a raw record and fills in the registers and the stack. */
static __always_inline int submit_raw(const struct pt_regs *u, __u32 tgid,
				      __s32 kstack, __u32 kind)
{
	struct gw_prof_raw *e;

	e = bpf_ringbuf_reserve(&raw, sizeof(*e), 0);
	if (!e)
		return -1;
	e->pid = tgid;
	e->kstack = kstack;
	e->kind = kind;
	e->regs[0] = u->ax;
	e->regs[1] = u->dx;
	e->regs[2] = u->cx;
	e->regs[3] = u->bx;
	e->regs[4] = u->si;
	e->regs[5] = u->di;
	e->regs[6] = u->bp;
	e->regs[7] = u->sp;
	e->regs[8] = u->r8;
	e->regs[9] = u->r9;
	e->regs[10] = u->r10;
	e->regs[11] = u->r11;
	e->regs[12] = u->r12;
	e->regs[13] = u->r13;
	e->regs[14] = u->r14;
	e->regs[15] = u->r15;
	e->regs[16] = u->ip;
	e->len = 0;
	/* Chunk by chunk: the last one may cross the stack's top. */
	for (int i = 0; i < GW_PROF_STACK_COPY / GW_PROF_COPY_CHUNK; i++) {
		if (bpf_probe_read_user(
			    e->stack + i * GW_PROF_COPY_CHUNK,
			    GW_PROF_COPY_CHUNK,
			    (void *)(u->sp + i * GW_PROF_COPY_CHUNK)))
			break;
		e->len += GW_PROF_COPY_CHUNK;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* The user registers of the interrupted task, and the stack above rsp. */
static __always_inline int copy_raw(struct bpf_perf_event_data *ctx, __u32 tgid,
				    __s32 kstack)
{
	struct pt_regs u;

	if ((ctx->regs.cs & 3) == 3) {
		/* Interrupted in user mode: the context's registers (read
		 * field by field: the verifier rewrites context loads). */
		u.ax = ctx->regs.ax;
		u.dx = ctx->regs.dx;
		u.cx = ctx->regs.cx;
		u.bx = ctx->regs.bx;
		u.si = ctx->regs.si;
		u.di = ctx->regs.di;
		u.bp = ctx->regs.bp;
		u.sp = ctx->regs.sp;
		u.r8 = ctx->regs.r8;
		u.r9 = ctx->regs.r9;
		u.r10 = ctx->regs.r10;
		u.r11 = ctx->regs.r11;
		u.r12 = ctx->regs.r12;
		u.r13 = ctx->regs.r13;
		u.r14 = ctx->regs.r14;
		u.r15 = ctx->regs.r15;
		u.ip = ctx->regs.ip;
	} else {
		/* In the kernel: the user registers saved at entry. */
		struct task_struct *t = bpf_get_current_task_btf();
		struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(t);

		if (!r || bpf_probe_read_kernel(&u, sizeof(u), r))
			return -1;
	}
	return submit_raw(&u, tgid, kstack, GW_PROF_KIND_CPU);
}

/*
 * At the entry of cudaLaunchKernel / cuLaunchKernel (uprobes the collector
 * attaches to the CUDA libraries of profiled processes): one launch in
 * launch_every per CPU has its user stack copied, kind LAUNCH, to be
 * unwound like a sample without frame pointers (at a function's entry the
 * frame-pointer walk would skip its caller).
 */
SEC("uprobe")
int gw_launch(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct pt_regs u;
	__u32 *tick;

	if (tgid == self_pid)
		return 0;
	if (!profile_all && !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	count(GW_PROF_LAUNCHES);
	tick = bpf_map_lookup_elem(&launch_tick, &zero);
	if (!tick)
		return 0;
	if ((*tick)++ % launch_every)
		return 0;
	if (bpf_probe_read_kernel(&u, sizeof(u), ctx))
		return 0;
	if (submit_raw(&u, tgid, -1, GW_PROF_KIND_LAUNCH))
		count(GW_PROF_RAW_DROPPED);
	return 0;
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
	if (bpf_map_lookup_elem(&dwarf, &tgid)) {
		if (copy_raw(ctx, tgid, key.kstack) == 0)
			return 0;
		count(GW_PROF_RAW_DROPPED);
	}
	key.ustack = bpf_get_stackid(ctx, &stacks, F_USER_STACK);
	/* The stack's bucket holds another stack until the next drain (the
	 * map is a hash table without chains): rather than counted without
	 * its frames, the sample is unwound in user space. */
	if (key.ustack == -E_EXIST && copy_raw(ctx, tgid, key.kstack) == 0)
		return 0;
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
