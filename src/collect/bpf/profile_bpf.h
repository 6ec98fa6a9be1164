/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * profile_bpf.h - what profile.bpf.c and its loader (profiler.c) share:
 * the key of the sample counts and the counter slots.  Fixed-width types
 * only; the layout is the same on both sides.
 */
#ifndef GW_PROFILE_BPF_H
#define GW_PROFILE_BPF_H

/* Frames kept per stack (the kernel's own limit is 127). */
#define GW_PROF_STACK_DEPTH 127

/* counts: (process, kernel stack, user stack) -> samples.  A stack id
 * below 0 is the kernel's error for "no stack" (-EFAULT: none, e.g. a
 * kernel thread's user stack; -EEXIST: the table's slot was taken). */
struct gw_prof_key {
	__u32 pid;
	__s32 kstack;
	__s32 ustack;
	__u32 pad;
};

/* What a raw sample is: a CPU sample, or a sampled CUDA kernel launch
 * (the stack at the entry of cudaLaunchKernel or cuLaunchKernel). */
#define GW_PROF_KIND_CPU    0
#define GW_PROF_KIND_LAUNCH 1

/* Bytes of user stack copied for unwinding in user space (DWARF). */
#define GW_PROF_STACK_COPY 8192
#define GW_PROF_COPY_CHUNK 1024

/*
 * A sample of a process without frame pointers (in `dwarf`), on the ring
 * buffer `raw`: the user registers in DWARF's x86-64 order (rax rdx rcx
 * rbx rsi rdi rbp rsp r8..r15 rip) and the top of the user stack from rsp
 * up; the kernel stack as an id in `stacks`.
 */
struct gw_prof_raw {
	__u32 pid;
	__s32 kstack;
	__u32 len;  /* bytes of stack copied */
	__u32 kind; /* GW_PROF_KIND_* */
	__u64 regs[17];
	__u8 stack[GW_PROF_STACK_COPY];
};

enum gw_prof_counter {
	GW_PROF_SAMPLES,	/* perf samples seen (every process) */
	GW_PROF_SELECTED,	/* of them, in a selected process */
	GW_PROF_DROPPED_COUNTS, /* counts map full */
	GW_PROF_STACK_ERRORS,	/* a stack id could not be had */
	GW_PROF_LAUNCHES,	/* launches seen by the launch probes */
	GW_PROF_RAW_DROPPED, /* ring buffer full: counted by frame pointers */
	GW_PROF_NCOUNTERS = 8,
};

#endif
