/* SPDX-License-Identifier: MIT */
/*
 * profiler.h - the CPU profiler's loader: a cpu-clock perf event per
 * online CPU at a frequency, the BPF program profile.bpf.c on each, and
 * the readers of what it counted.
 *
 * What it gives: for each (process, kernel stack, user stack) sampled
 * since the last drain, the count and the raw instruction pointers (leaf
 * first).  Symbolisation is the caller's (symbols.h).
 *
 * Process selection: every process (all = 1) or those added with
 * gw_profiler_target(); the agent itself is never sampled.
 *
 * Errors: 0 or -errno; -EPERM without privileges (CAP_BPF + CAP_PERFMON
 * or root), -ENOSYS without kernel support.  Not thread-safe: one owner.
 */
#ifndef GW_BPF_PROFILER_H
#define GW_BPF_PROFILER_H

#include <stddef.h>
#include <stdint.h>

struct gw_profiler;

/* Size-tagged: sz = sizeof(struct gw_profiler_opts); zero = default. */
struct gw_profiler_opts {
	size_t sz;
	unsigned int freq;	  /* Hz per CPU (19) */
	unsigned int all;	  /* every process, else targets only */
	unsigned int max_targets; /* selected processes (4096) */
	unsigned int max_counts;  /* distinct (pid, stacks) per drain (16384) */
	unsigned int max_stacks;  /* distinct stacks per drain (16384) */
};

__attribute__((warn_unused_result)) int
gw_profiler_open(const struct gw_profiler_opts *o, struct gw_profiler **out,
		 char *err, size_t errlen);
void gw_profiler_close(struct gw_profiler *p);

/* Selects (on = 1) or drops (0) a process; -ENOSPC when the table is
 * full. */
__attribute__((warn_unused_result)) int
gw_profiler_target(struct gw_profiler *p, uint32_t pid, int on);

/* Marks a process as one without frame pointers (on = 1): its samples
 * come as raw samples (gw_profiler_poll_raw) for unwinding in user space. */
__attribute__((warn_unused_result)) int gw_profiler_dwarf(struct gw_profiler *p,
							  uint32_t pid, int on);

struct gw_profiler_raw {
	uint32_t pid;
	unsigned int launch;  /* a sampled kernel launch, not a CPU sample */
	const uint64_t *kips; /* kernel frames, leaf first */
	unsigned int nk;
	const uint64_t *regs; /* 17, DWARF x86-64 order */
	const void *stack;    /* copied from regs[7] (rsp) up */
	size_t len;
};

/* Calls cb for every raw sample waiting (the data is valid during the
 * call only); the number consumed or -errno. */
__attribute__((warn_unused_result)) int
gw_profiler_poll_raw(struct gw_profiler *p,
		     void (*cb)(void *ctx, const struct gw_profiler_raw *r),
		     void *ctx);

/*
 * Attaches the launch probe to cudaLaunchKernel and cuLaunchKernel in the
 * file at path (those it defines; *n says how many): one launch in 16 of
 * a profiled process then comes as a raw sample with launch set.
 * -ENOSPC past 64 files.
 */
__attribute__((warn_unused_result)) int
gw_profiler_attach_launch(struct gw_profiler *p, const char *path,
			  unsigned int *n);

/* Changes the frequency (reopens the perf events). */
__attribute__((warn_unused_result)) int
gw_profiler_set_freq(struct gw_profiler *p, unsigned int hz);
unsigned int gw_profiler_freq(const struct gw_profiler *p);

struct gw_profiler_sample {
	uint32_t pid;
	uint64_t count;
	const uint64_t *kips; /* kernel frames, leaf first */
	unsigned int nk;
	const uint64_t *uips; /* user frames, leaf first */
	unsigned int nu;
};

/*
 * Reads and removes every count, calling cb for each (the arrays are
 * valid during the call only), then frees the stack ids read.  A cb that
 * returns non-zero stops the walk; the rest stays for the next drain.
 */
__attribute__((warn_unused_result)) int
gw_profiler_drain(struct gw_profiler *p,
		  int (*cb)(void *ctx, const struct gw_profiler_sample *s),
		  void *ctx);

struct gw_profiler_counters {
	uint64_t samples;	 /* perf samples, every process */
	uint64_t selected;	 /* in a selected process */
	uint64_t dropped_counts; /* counts map full */
	uint64_t stack_errors;	 /* no stack could be had */
	uint64_t raw_dropped;	 /* raw samples lost to a full ring */
	uint64_t launches;	 /* launches the launch probes saw */
	uint64_t run_ns;	 /* the program's run time (bpf_stats) */
	uint64_t run_cnt;
};
void gw_profiler_counters(struct gw_profiler *p,
			  struct gw_profiler_counters *c);

#endif
