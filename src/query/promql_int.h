/* SPDX-License-Identifier: MIT */
/*
 * promql_int.h - what the PromQL evaluator's files share; internal to
 * promql_eval.c (evaluation proper) and promql_fn.c (its numerics), not
 * part of the promql.h interface.  promql_json.c needs nothing from here.
 *
 * Everything here is pure arithmetic on caller-owned arrays: no function
 * allocates, keeps a pointer, or touches evaluator state, and every one
 * may be called from several threads at once on distinct data.  Values
 * and their edge cases (NaN, +-Inf, empty input) follow Prometheus.
 *
 * Samples are given as parallel arrays: times ts[] in milliseconds,
 * strictly increasing, and values vs[], n of each.
 */
#ifndef GW_PROMQL_INT_H
#define GW_PROMQL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/promql.h"

/* Neumaier's compensated sum: adds x to *sum, the running error to *c;
 * the result is *sum + *c (both start at 0). */
void gw_pqe_ksum(double *sum, double *c, double x);

/* A mean that survives overflow of the running sum; zero-initialise it. */
struct gw_pqe_mean {
	double sum, c, inc;
	double n;
	bool nonfinite; /* an input was +-Inf or NaN */
};

void gw_pqe_mean_add(struct gw_pqe_mean *m, double x);
/* The mean of what was added; NaN when nothing was. */
double gw_pqe_mean_get(const struct gw_pqe_mean *m);

/* Prometheus' quantile q of v[0..n): linear interpolation between the
 * closest ranks, NaN sorted first; v is sorted in place.  NaN for n == 0
 * or q NaN, -Inf for q < 0, +Inf for q > 1. */
double gw_pqe_quantile(double q, double *v, size_t n);

/* a op b for the arithmetic operators (NaN for any other op), and the
 * truth of a op b for the comparison operators (false for any other). */
double gw_pqe_arith(enum gw_pq_binop op, double a, double b);
bool gw_pqe_compare(enum gw_pq_binop op, double a, double b);

/*
 * Prometheus' extrapolated rate (rate), increase (counter) or delta
 * (neither) of the samples in (range_start, range_end], a range of
 * range_ms.  counter: resets are corrected and the start is not
 * extrapolated below zero; rate: per second.  False (and *out untouched)
 * when there is no output: fewer than two samples, or no time between
 * the first and the last.
 */
bool gw_pqe_xrate(const int64_t *ts, const double *vs, size_t n,
		  int64_t range_start, int64_t range_end, int64_t range_ms,
		  bool counter, bool rate, double *out);

/* irate of the last two samples, per second; false as gw_pqe_xrate. */
bool gw_pqe_irate(const int64_t *ts, const double *vs, size_t n, double *out);

/*
 * fn (one of the *_over_time functions; phi is quantile_over_time's
 * argument) of the raw values v[0..n), n >= 1.  tmp has room for n
 * doubles when fn is GW_FN_QUANTILE_OVER_TIME and is unused otherwise.
 * 0, or -EINVAL for any other fn.
 */
__attribute__((warn_unused_result)) int
gw_pqe_over_time_raw(enum gw_pq_func fn, double phi, const double *v, size_t n,
		     double *tmp, double *out);

/*
 * fn of the rollups r[lo, hi) taken together (quantile_over_time merges
 * their sketches).  *ok is false when none of them holds a sample, and on
 * error; 0, -EINVAL for a fn that is not *_over_time, or the sketch
 * merge's error.
 */
__attribute__((warn_unused_result)) int
gw_pqe_over_time_rollup(enum gw_pq_func fn, double phi,
			const struct gw_rollup *r, size_t lo, size_t hi,
			double *out, bool *ok);

#endif /* GW_PROMQL_INT_H */
