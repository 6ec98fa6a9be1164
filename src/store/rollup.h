/* SPDX-License-Identifier: MIT */
/*
 * rollup.h - one aggregation window of one series: count, sum, min, max,
 * sum of squares and last value (so mean and standard deviation), plus a
 * quantile sketch of the values, so that quantiles over any window and any
 * set of series come out right by merging rather than averaging.
 *
 * The store keeps a 1-minute and a 1-hour rollup per series; a rollup's
 * timestamp is the END of its window (exclusive), t_first and t_last the
 * times of the first and last sample in it.  An empty rollup has count,
 * sum, sumsq and reset 0, min, max, first and last NaN, and t_first and
 * t_last INT64_MIN.
 *
 * A column of rollups is stored as one "rollup chunk": see
 * gw_rollup_encode / gw_rollup_decode.  Decoding validates everything
 * (-EBADMSG, no reads out of bounds).  Errors: 0 or -errno.
 * Not thread-safe.
 */
#ifndef GW_ROLLUP_H
#define GW_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/sketch.h"

struct gw_rollup {
	int64_t t;	 /* window end, ms */
	int64_t t_last;	 /* last sample's timestamp */
	int64_t t_first; /* first sample's timestamp */
	double count, sum, min, max, sumsq, last, first;
	/*
	 * Counter resets in the window: the sum of the value before each
	 * sample lower than the one before it, so a counter's increase over
	 * the window is last - first + reset (Prometheus' rate).  NaN where
	 * the window is no counter's (a second decrease within one window,
	 * or one from a value <= 0: a gauge, whose resets would cost bytes
	 * and mean nothing), and where it is not known: read from a version
	 * 2 chunk, which knows no first sample either (t_first INT64_MIN).
	 */
	double reset;
	struct gw_sketch sk;
};

/* Whether r knows its first sample (not from a version 2 chunk). */
static inline int gw_rollup_has_first(const struct gw_rollup *r)
{
	return r->count > 0 && r->t_first != INT64_MIN;
}

/* Whether r carries its counter resets: a counter's window of version 3. */
static inline int gw_rollup_has_reset(const struct gw_rollup *r)
{
	return gw_rollup_has_first(r) && r->reset == r->reset;
}

void gw_rollup_init(struct gw_rollup *r, int64_t t_end);
void gw_rollup_release(struct gw_rollup *r);
/* Empties the window and moves it to end at t_end. */
void gw_rollup_reset(struct gw_rollup *r, int64_t t_end);

/* Adds one sample (NaN values are counted nowhere, as Prometheus ignores
 * stale markers in *_over_time).  -ENOMEM keeps the totals but not the
 * sketch. */
__attribute__((warn_unused_result)) int gw_rollup_add(struct gw_rollup *r,
						      int64_t t, double v);

/* dst += src (dst keeps its window end; first comes from the earlier
 * one, last from the later).  The resets add up, with one more where the
 * later window starts below where the earlier ended: meaningful for
 * windows of one series, as the store merges minutes into hours. */
__attribute__((warn_unused_result)) int
gw_rollup_merge(struct gw_rollup *dst, const struct gw_rollup *src);

double gw_rollup_mean(const struct gw_rollup *r);
/* Population standard deviation, as PromQL's stddev_over_time. */
double gw_rollup_stddev(const struct gw_rollup *r);

/* At most this many rollups in one chunk. */
#define GW_ROLLUP_CHUNK_MAX 65535

/* Serialises n rollups (t increasing) into out, versioned and
 * checksummed.  -EINVAL: n over GW_ROLLUP_CHUNK_MAX, t not strictly
 * increasing, or a count that is not a whole number in [0, 2^53];
 * -ENOSPC from out; -ENOMEM.  On error out is left as it was. */
__attribute__((warn_unused_result)) int
gw_rollup_encode(const struct gw_rollup *r, size_t n, struct gw_buf *out);

/*
 * Decodes a rollup chunk; on success *out is a malloc'd array of *n
 * initialised rollups the caller frees with gw_rollup_free_array.
 */
__attribute__((warn_unused_result)) int gw_rollup_decode(const uint8_t *p,
							 size_t len,
							 struct gw_rollup **out,
							 size_t *n);
void gw_rollup_free_array(struct gw_rollup *r, size_t n);

#endif
