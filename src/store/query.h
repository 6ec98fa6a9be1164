/* SPDX-License-Identifier: MIT */
/*
 * query.h - what the PromQL engine and the HTTP API read from: a
 * "queryable", implemented by the store (and by in-memory fakes in tests).
 *
 * Times are milliseconds since the epoch.  Tiers: raw samples, 1-minute and
 * 1-hour rollups (see store/rollup.h; a rollup's t is its window's end).
 *
 * Ownership: every result struct is filled by the queryable and released by
 * the caller with the matching _release function below.
 *
 * Limits: select() adds the samples it loads to lim->samples and returns
 * -E2BIG as soon as lim->samples would pass lim->max_samples; it returns
 * -ETIMEDOUT once the monotonic clock passes lim->deadline_ns (0 = none),
 * and -ECANCELED once *lim->cancel reads true (NULL = never), checked where
 * the deadline is (another thread sets it to stop the query early).
 * The engine reports the first two as Prometheus does (errorType
 * "execution" / "timeout"); a cancelled query is 503 "unavailable".
 *
 * Thread safety: a queryable may be called from several HTTP threads at
 * once.
 */
#ifndef GW_QUERY_H
#define GW_QUERY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/labels.h"
#include "store/rollup.h"

enum gw_tier {
	GW_TIER_RAW = 0,
	GW_TIER_1M = 1,
	GW_TIER_1H = 2,
};
#define GW_TIERS 3

/* Window width of a tier in ms (0 for raw). */
static inline int64_t gw_tier_width(enum gw_tier t)
{
	return t == GW_TIER_1M ? 60000 : t == GW_TIER_1H ? 3600000 : 0;
}

struct gw_query_limits {
	uint64_t max_samples;	    /* 0 = unlimited */
	uint64_t samples;	    /* running total, updated by select() */
	uint64_t deadline_ns;	    /* CLOCK_MONOTONIC; 0 = none */
	const _Atomic bool *cancel; /* true = stop now; NULL = none;
				       borrowed, read only */
};

/* One selected series: raw points (t, v) or rollups (r), by tier. */
struct gw_series_data {
	struct gw_labels labels;
	enum gw_tier tier;
	size_t n;
	int64_t *t;	     /* raw tier: n timestamps, increasing */
	double *v;	     /* raw tier: n values */
	struct gw_rollup *r; /* rollup tiers: n rollups, t increasing */
};

struct gw_series_set {
	struct gw_series_data *s;
	size_t n;
};

void gw_series_set_release(struct gw_series_set *set);

struct gw_label_set_list {
	struct gw_labels *v;
	size_t n;
};
void gw_label_set_list_release(struct gw_label_set_list *l);

struct gw_string_list {
	char **v;
	size_t n;
};
void gw_string_list_release(struct gw_string_list *l);

struct gw_queryable {
	void *ctx;
	/*
	 * The tier to read for samples in [mint, maxt] at resolution step_ms
	 * (0 = finest).  Raw whenever the queryable holds raw samples from
	 * mint on (whatever the step: answers come from raw samples while
	 * they exist); otherwise the coarsest rollup tier not coarser than
	 * step_ms whose retention still covers mint, else the finest tier
	 * that covers mint.  Monotone in mint: once raw, raw for every later
	 * mint (the evaluator splits a range query there).
	 */
	enum gw_tier (*pick_tier)(void *ctx, int64_t mint, int64_t maxt,
				  int64_t step_ms);
	/*
	 * Series matching all matchers with data in [mint, maxt] of the
	 * tier, their samples in that interval (inclusive), sorted by labels.
	 */
	int (*select)(void *ctx, const struct gw_matcher *m, size_t nm,
		      int64_t mint, int64_t maxt, enum gw_tier tier,
		      struct gw_query_limits *lim, struct gw_series_set *out);
	/* Label sets of the series matching any of the matcher lists
	 * (nsets lists; all series when nsets is 0) seen in [mint, maxt],
	 * sorted, without duplicates.  lim (NULL: none): its deadline and
	 * cancel flag, as for select(); max_samples is not used. */
	int (*series)(void *ctx, const struct gw_matcher *const *sets,
		      const size_t *nm, size_t nsets, int64_t mint,
		      int64_t maxt, struct gw_query_limits *lim,
		      struct gw_label_set_list *out);
	/* Sorted distinct label names (name == NULL) or values of label
	 * name, over the same selection as series(). */
	int (*label_values)(void *ctx, const char *name,
			    const struct gw_matcher *const *sets,
			    const size_t *nm, size_t nsets, int64_t mint,
			    int64_t maxt, struct gw_query_limits *lim,
			    struct gw_string_list *out);
};

#endif
