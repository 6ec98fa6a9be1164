/* SPDX-License-Identifier: MIT */
/*
 * fake_queryable.h - an in-memory struct gw_queryable for tests of the
 * PromQL engine and the HTTP API.
 *
 * Series are added with their labels, then raw samples in increasing time
 * order; every raw sample also feeds the series' 1-minute and 1-hour
 * rollups (window [end - width, end), stamped with its end, as the store
 * does).  Rollups can instead be given directly with gw_fakeq_rollup.
 *
 * pick_tier follows the contract in store/query.h, with each tier's
 * retention set by gw_fakeq_retention (default: every tier covers all
 * time).  select() honours the limits: it adds what it returns to
 * lim->samples, fails with -E2BIG past lim->max_samples and with
 * -ETIMEDOUT once CLOCK_MONOTONIC passes lim->deadline_ns.  gw_fakeq_fail
 * makes the next select() fail with a chosen error.  Results are allocated
 * as gw_series_set_release frees them: each series' labels, t, v and r
 * arrays separately (r as initialised rollups, see gw_rollup_free_array).
 *
 * Use: #include "fake_queryable.c" in the test (it is not part of gwcore).
 * Errors: 0 or -errno.  Not thread-safe.
 */
#ifndef GW_FAKE_QUERYABLE_H
#define GW_FAKE_QUERYABLE_H

#include <stddef.h>
#include <stdint.h>

#include "store/query.h"

struct gw_fakeq;

/* What the fake saw, for tests of how the engine reads. */
struct gw_fakeq_stats {
	unsigned selects;			 /* select() calls */
	unsigned picks;				 /* pick_tier() calls */
	int64_t pick_mint, pick_maxt, pick_step; /* last pick_tier() */
	int64_t sel_mint, sel_maxt;		 /* last select() */
	enum gw_tier sel_tier;
	uint64_t sel_max_samples, sel_deadline_ns;
};

__attribute__((warn_unused_result)) int gw_fakeq_new(struct gw_fakeq **out);
void gw_fakeq_free(struct gw_fakeq *f);

/* Adds a series (labels as for gw_labels_parse); *id names it after. */
__attribute__((warn_unused_result)) int gw_fakeq_series(struct gw_fakeq *f,
							const char *name,
							const char *labels,
							size_t *id);

/* Adds a raw sample (t after the series' previous one) and feeds it into
 * the series' rollups. */
__attribute__((warn_unused_result)) int
gw_fakeq_sample(struct gw_fakeq *f, size_t id, int64_t t, double v);

/* Appends a copy of rollup r to the series' tier (t after the last). */
__attribute__((warn_unused_result)) int
gw_fakeq_rollup(struct gw_fakeq *f, size_t id, enum gw_tier tier,
		const struct gw_rollup *r);

/* The oldest time tier still holds (INT64_MIN: all). */
void gw_fakeq_retention(struct gw_fakeq *f, enum gw_tier tier, int64_t oldest);

/* The next select() fails with err (a negative errno; 0 clears). */
void gw_fakeq_fail(struct gw_fakeq *f, int err);

/* Every select() from now on first takes ms milliseconds of wall time (a
 * slow store, for tests of what overruns; 0 clears). */
void gw_fakeq_delay(struct gw_fakeq *f, unsigned int ms);

/* Fills q with f's callbacks (series() and label_values() included). */
void gw_fakeq_queryable(struct gw_fakeq *f, struct gw_queryable *q);

const struct gw_fakeq_stats *gw_fakeq_stats(const struct gw_fakeq *f);

#endif
