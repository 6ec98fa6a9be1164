/* SPDX-License-Identifier: MIT */
/*
 * profile.h - a CPU profile in memory: distinct call stacks (function
 * names, root first) with sample counts, and its three written forms:
 *
 *   pprof    gzip'd profile.proto (store/profile.proto, pprof's field
 *            numbers): what the local store keeps and `go tool pprof`
 *            reads.  Sample types "samples/count" and "cpu/nanoseconds".
 *   folded   Brendan Gregg's folded stacks: "root;...;leaf COUNT\n", one
 *            line per distinct stack, sorted by stack.  A differential
 *            profile writes "stack BASE TARGET" (difffolded.pl's form).
 *   json     {"samples":N,"stacks":[{"frames":[root,...,leaf],"value":N}]}
 *            (a differential one adds "base_samples" and per stack "base").
 *
 * Every stack has two values: column 0 (the profile, or a diff's target)
 * and column 1 (a diff's base).  A profile is "differential" once a
 * value was added to column 1.  Frame names are interned; a name is cut to
 * GW_PROF_NAME_MAX bytes and a stack to GW_PROF_MAX_DEPTH frames (the leaf
 * end is kept).  The number of distinct stacks is bounded at creation:
 * samples of further stacks are counted in dropped and lost.
 *
 * Input is untrusted: gw_prof_add_pprof() and gw_prof_add_folded() check
 * every index and length and return -EINVAL (-ENOSPC past a bound) for
 * bad data; what was added before the error stays.
 *
 * Errors: 0 or -errno (-ENOMEM, -ENOSPC, -EINVAL).  Not thread-safe; one
 * owner at a time.
 */
#ifndef GW_STORE_PROFILE_H
#define GW_STORE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define GW_PROF_NAME_MAX  512
#define GW_PROF_MAX_DEPTH 256
/* A pprof blob is inflated to at most this many bytes. */
#define GW_PROF_MAX_RAW (64u << 20)

struct gw_prof;

/* max_stacks: distinct stacks kept (0: 100,000). */
struct gw_prof *gw_prof_new(size_t max_stacks);
void gw_prof_free(struct gw_prof *p);

/* Adds value to the stack frames[0] (root) .. frames[n - 1] (leaf) in
 * column col (0 or 1). */
__attribute__((warn_unused_result)) int gw_prof_add(struct gw_prof *p,
						    const char *const *frames,
						    size_t n, int64_t value,
						    int col);

/* Adds every sample of a gzip'd (or plain) pprof profile's first sample
 * type to column col; time and duration widen the profile's. */
__attribute__((warn_unused_result)) int
gw_prof_add_pprof(struct gw_prof *p, const void *data, size_t len, int col);

/* Adds folded lines ("a;b;c 12"); an empty line is skipped, a line
 * without a count is -EINVAL. */
__attribute__((warn_unused_result)) int
gw_prof_add_folded(struct gw_prof *p, const char *text, size_t len, int col);

/* Makes the profile differential even before a base value is added (a
 * diff against an empty base). */
void gw_prof_set_diff(struct gw_prof *p);

/* What the values are, for pprof, when they are not CPU samples: one
 * sample type type/unit (e.g. "gpu_time", "nanoseconds"; static strings,
 * borrowed) instead of samples/count and cpu/nanoseconds. */
void gw_prof_set_value_type(struct gw_prof *p, const char *type,
			    const char *unit);

/* Sampling period (ns per sample) and the time covered, for pprof. */
void gw_prof_set_time(struct gw_prof *p, int64_t time_ns, int64_t duration_ns,
		      int64_t period_ns);

/* Sum of a column's values; distinct stacks; samples lost to the bound. */
int64_t gw_prof_total(const struct gw_prof *p, int col);
size_t gw_prof_nstacks(const struct gw_prof *p);
uint64_t gw_prof_dropped(const struct gw_prof *p);

/*
 * The written forms, appended to out (errors stay in out, as with
 * gw_buf_put()).  pprof of a differential profile holds the target's
 * samples and the base's negated, the form `go tool pprof -diff_base`
 * builds itself.
 */
__attribute__((warn_unused_result)) int gw_prof_pprof(const struct gw_prof *p,
						      struct gw_buf *out);
void gw_prof_folded(const struct gw_prof *p, struct gw_buf *out);
void gw_prof_json(const struct gw_prof *p, struct gw_buf *out);

/* Per function: flat (samples where it is the leaf) and cum (samples of
 * stacks it is in, once per stack) of a column. */
struct gw_prof_fn {
	const char *name; /* borrowed from the profile */
	int64_t flat[2];
	int64_t cum[2];
};

/* Every function, sorted by flat of column col, largest first; the array
 * is the caller's to free().  -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_prof_functions(const struct gw_prof *p, int col, struct gw_prof_fn **out,
		  size_t *n);

/* gzip of len bytes appended to out (level 6). */
__attribute__((warn_unused_result)) int
gw_prof_gzip(const void *data, size_t len, struct gw_buf *out);

#endif
