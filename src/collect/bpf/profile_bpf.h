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

enum gw_prof_counter {
	GW_PROF_SAMPLES,	/* perf samples seen (every process) */
	GW_PROF_SELECTED,	/* of them, in a selected process */
	GW_PROF_DROPPED_COUNTS, /* counts map full */
	GW_PROF_STACK_ERRORS,	/* a stack id could not be had */
	GW_PROF_NCOUNTERS = 8,
};

#endif
