/* SPDX-License-Identifier: MIT */
/*
 * promql_fn.c - the numerics of the PromQL evaluator (promql_int.h):
 * compensated sums and means, Prometheus' quantile, the operators on two
 * numbers, rate/irate/increase/delta extrapolation, and the *_over_time
 * functions on raw samples and on rollups.  Nothing here knows about
 * label sets, selectors or the evaluator's state.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql_int.h"

/* ---- numerics ---- */

/* Neumaier's compensated sum: the result is sum + c. */
void gw_pqe_ksum(double *sum, double *c, double x)
{
	double t = *sum + x;

	if (isinf(t))
		*c = 0;
	else if (fabs(*sum) >= fabs(x))
		*c += (*sum - t) + x;
	else
		*c += (x - t) + *sum;
	*sum = t;
}

void gw_pqe_mean_add(struct gw_pqe_mean *m, double x)
{
	m->n += 1;
	if (!isfinite(x))
		m->nonfinite = true;
	gw_pqe_ksum(&m->sum, &m->c, x);
	m->inc += (x - m->inc) / m->n;
}

double gw_pqe_mean_get(const struct gw_pqe_mean *m)
{
	double s = m->sum + m->c;

	if (!isfinite(s) && !m->nonfinite)
		return m->inc;
	return s / m->n;
}

/* Go's sort.Float64s order: NaN first. */
static int cmp_float(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	if (isnan(x))
		return isnan(y) ? 0 : -1;
	if (isnan(y))
		return 1;
	return (x > y) - (x < y);
}

/* Prometheus' quantile: linear interpolation between closest ranks;
 * v is sorted in place. */
double gw_pqe_quantile(double q, double *v, size_t n)
{
	double rank, w;
	size_t lo, hi;

	if (n == 0 || isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	qsort(v, n, sizeof(*v), cmp_float);
	rank = q * (double)(n - 1);
	lo = (size_t)floor(rank);
	hi = lo + 1 < n ? lo + 1 : n - 1;
	w = rank - floor(rank);
	return v[lo] * (1 - w) + v[hi] * w;
}

double gw_pqe_arith(enum gw_pq_binop op, double a, double b)
{
	switch (op) {
	case GW_OP_ADD:
		return a + b;
	case GW_OP_SUB:
		return a - b;
	case GW_OP_MUL:
		return a * b;
	case GW_OP_DIV:
		return a / b;
	case GW_OP_MOD:
		return fmod(a, b);
	case GW_OP_POW:
		return pow(a, b);
	default:
		return NAN;
	}
}

bool gw_pqe_compare(enum gw_pq_binop op, double a, double b)
{
	switch (op) {
	case GW_OP_EQ:
		return a == b;
	case GW_OP_NE:
		return a != b;
	case GW_OP_GT:
		return a > b;
	case GW_OP_LT:
		return a < b;
	case GW_OP_GE:
		return a >= b;
	case GW_OP_LE:
		return a <= b;
	default:
		return false;
	}
}

/* ---- range functions ---- */

/*
 * Prometheus' extrapolated rate/increase/delta over the samples in
 * (range_start, range_end].  False when there is no output.
 */
/*
 * Prometheus' extrapolatedRate from what it uses of the samples: the
 * first (t0, v0), the last's time t1, their number n and the increase
 * (corrected for resets when a counter).
 */
static double extrapolate(double result, int64_t t0, double v0, int64_t t1,
			  double n, int64_t range_start, int64_t range_end,
			  int64_t range_ms, bool counter, bool rate)
{
	double to_start, to_end, sampled, avg, thr, ext;

	to_start = (double)(t0 - range_start) / 1e3;
	to_end = (double)(range_end - t1) / 1e3;
	sampled = (double)(t1 - t0) / 1e3;
	avg = sampled / (n - 1);
	if (counter && result > 0 && v0 >= 0) {
		/* A counter does not go below zero: extrapolate at most to
		 * where it would have been zero. */
		double to_zero = sampled * (v0 / result);

		if (to_zero < to_start)
			to_start = to_zero;
	}
	thr = avg * 1.1;
	ext = sampled;
	ext += to_start < thr ? to_start : avg / 2;
	ext += to_end < thr ? to_end : avg / 2;
	result *= ext / sampled;
	if (rate)
		result /= (double)range_ms / 1e3;
	return result;
}

bool gw_pqe_xrate(const int64_t *ts, const double *vs, size_t n,
		  int64_t range_start, int64_t range_end, int64_t range_ms,
		  bool counter, bool rate, double *out)
{
	double result;

	if (n < 2 || ts[n - 1] <= ts[0])
		return false;
	result = vs[n - 1] - vs[0];
	if (counter) {
		double prev = vs[0];

		for (size_t i = 1; i < n; i++) {
			if (vs[i] < prev)
				result += prev;
			prev = vs[i];
		}
	}
	*out = extrapolate(result, ts[0], vs[0], ts[n - 1], (double)n,
			   range_start, range_end, range_ms, counter, rate);
	return true;
}

bool gw_pqe_xrate_rollup(const struct gw_rollup *r, size_t n,
			 int64_t range_start, int64_t range_end,
			 int64_t range_ms, bool counter, bool rate, double *out,
			 bool *ok)
{
	const struct gw_rollup *a = NULL, *b = NULL;
	double count = 0, result;

	*ok = false;
	for (size_t i = 0; i < n; i++) {
		if (!(r[i].count > 0))
			continue;
		if (!gw_rollup_has_first(&r[i]) ||
		    (counter && !gw_rollup_has_reset(&r[i])))
			return false; /* not known: the caller falls back */
		if (!a)
			a = &r[i];
		b = &r[i];
		count += r[i].count;
	}
	if (!a || count < 2 || b->t_last <= a->t_first)
		return true;
	result = b->last - a->first;
	if (counter) {
		const struct gw_rollup *prev = NULL;

		/* As Prometheus adds them: the value before each reset, the
		 * windows' own and those between two windows. */
		for (size_t i = 0; i < n; i++) {
			if (!(r[i].count > 0))
				continue;
			if (prev && r[i].first < prev->last)
				result += prev->last;
			result += r[i].reset;
			prev = &r[i];
		}
	}
	*out = extrapolate(result, a->t_first, a->first, b->t_last, count,
			   range_start, range_end, range_ms, counter, rate);
	*ok = true;
	return true;
}

bool gw_pqe_irate(const int64_t *ts, const double *vs, size_t n, double *out)
{
	double r;

	if (n < 2 || ts[n - 1] == ts[n - 2])
		return false;
	r = vs[n - 1] < vs[n - 2] ? vs[n - 1] : vs[n - 1] - vs[n - 2];
	*out = r / ((double)(ts[n - 1] - ts[n - 2]) / 1e3);
	return true;
}

int gw_pqe_over_time_raw(enum gw_pq_func fn, double phi, const double *v,
			 size_t n, double *tmp, double *out)
{
	struct gw_pqe_mean m = { 0 };
	double a = NAN, c = 0, mu = 0, m2 = 0;

	switch (fn) {
	case GW_FN_AVG_OVER_TIME:
		for (size_t i = 0; i < n; i++)
			gw_pqe_mean_add(&m, v[i]);
		*out = gw_pqe_mean_get(&m);
		return 0;
	case GW_FN_MIN_OVER_TIME:
		for (size_t i = 0; i < n; i++)
			if (v[i] < a || isnan(a))
				a = v[i];
		*out = a;
		return 0;
	case GW_FN_MAX_OVER_TIME:
		for (size_t i = 0; i < n; i++)
			if (v[i] > a || isnan(a))
				a = v[i];
		*out = a;
		return 0;
	case GW_FN_SUM_OVER_TIME:
		a = 0;
		for (size_t i = 0; i < n; i++)
			gw_pqe_ksum(&a, &c, v[i]);
		*out = a + c;
		return 0;
	case GW_FN_COUNT_OVER_TIME:
		*out = (double)n;
		return 0;
	case GW_FN_LAST_OVER_TIME:
		*out = v[n - 1];
		return 0;
	case GW_FN_STDDEV_OVER_TIME:
		/* Welford; population deviation as Prometheus. */
		for (size_t i = 0; i < n; i++) {
			double d = v[i] - mu;

			mu += d / (double)(i + 1);
			m2 += d * (v[i] - mu);
		}
		*out = sqrt(m2 / (double)n);
		return 0;
	case GW_FN_QUANTILE_OVER_TIME:
		memcpy(tmp, v, n * sizeof(*v));
		*out = gw_pqe_quantile(phi, tmp, n);
		return 0;
	default:
		return -EINVAL;
	}
}

/* *_over_time of the rollups [lo, hi); false when none has a value. */
int gw_pqe_over_time_rollup(enum gw_pq_func fn, double phi,
			    const struct gw_rollup *r, size_t lo, size_t hi,
			    double *out, bool *ok)
{
	double cnt = 0, sum = 0, c = 0, sumsq = 0, mn = NAN, mx = NAN;
	double last = NAN, mean, var;
	struct gw_sketch sk;
	int err = 0;

	*ok = false;
	for (size_t i = lo; i < hi; i++) {
		if (!(r[i].count > 0))
			continue;
		cnt += r[i].count;
		gw_pqe_ksum(&sum, &c, r[i].sum);
		sumsq += r[i].sumsq;
		if (r[i].min < mn || isnan(mn))
			mn = r[i].min;
		if (r[i].max > mx || isnan(mx))
			mx = r[i].max;
		last = r[i].last;
	}
	if (!(cnt > 0))
		return 0;
	*ok = true;
	sum += c;
	switch (fn) {
	case GW_FN_AVG_OVER_TIME:
		*out = sum / cnt;
		break;
	case GW_FN_MIN_OVER_TIME:
		*out = mn;
		break;
	case GW_FN_MAX_OVER_TIME:
		*out = mx;
		break;
	case GW_FN_SUM_OVER_TIME:
		*out = sum;
		break;
	case GW_FN_COUNT_OVER_TIME:
		*out = cnt;
		break;
	case GW_FN_LAST_OVER_TIME:
		*out = last;
		break;
	case GW_FN_STDDEV_OVER_TIME:
		mean = sum / cnt;
		var = sumsq / cnt - mean * mean;
		*out = var > 0 ? sqrt(var) : 0;
		break;
	case GW_FN_QUANTILE_OVER_TIME:
		if (isnan(phi) || phi < 0 || phi > 1) {
			*out = isnan(phi) ? NAN
			       : phi < 0  ? -INFINITY
					  : INFINITY;
			break;
		}
		/* Merged, not averaged: the union's quantile. */
		gw_sketch_init(&sk);
		for (size_t i = lo; i < hi && !err; i++)
			if (r[i].count > 0)
				err = gw_sketch_merge(&sk, &r[i].sk);
		if (!err)
			*out = gw_sketch_quantile_interp(&sk, phi);
		gw_sketch_release(&sk);
		break;
	default:
		err = -EINVAL;
	}
	if (err)
		*ok = false;
	return err;
}
