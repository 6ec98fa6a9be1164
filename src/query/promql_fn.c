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
 * Prometheus' extrapolatedRate from what it uses of the samples: the
 * first (t0, v0), the last's time t1, their number n and the increase
 * (corrected for resets when a counter).
 */
static double extrapolate(double result, int64_t t0, double v0, int64_t t1,
			  double n, int64_t range_start, int64_t range_end,
			  int64_t range_ms, bool counter, bool rate)
{
	double to_start, to_end, sampled, avg, thr, ext, factor;

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
	/* One factor, as Prometheus: the same rounding, the same digits. */
	factor = ext / sampled;
	if (rate)
		factor /= (double)range_ms / 1e3;
	return result * factor;
}

/*
 * Prometheus' extrapolated rate/increase/delta over the samples in
 * (range_start, range_end].  False when there is no output.
 */
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

/* Variance with compensated running mean and sum of squares (Welford),
 * population, as Prometheus' stdvar_over_time. */
static double variance(const double *v, size_t n)
{
	double count = 0, mean = 0, cmean = 0, aux = 0, caux = 0;

	for (size_t i = 0; i < n; i++) {
		double delta;

		count++;
		delta = v[i] - (mean + cmean);
		gw_pqe_ksum(&mean, &cmean, delta / count);
		gw_pqe_ksum(&aux, &caux, delta * (v[i] - (mean + cmean)));
	}
	return (aux + caux) / count;
}

int gw_pqe_over_time_raw(enum gw_pq_func fn, double phi, const double *v,
			 size_t n, double *tmp, double *out)
{
	struct gw_pqe_mean m = { 0 };
	double a = NAN, c = 0;

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
		*out = sqrt(variance(v, n));
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
	case GW_FN_STDVAR_OVER_TIME:
		mean = sum / cnt;
		var = sumsq / cnt - mean * mean;
		var = var > 0 ? var : 0;
		*out = fn == GW_FN_STDDEV_OVER_TIME ? sqrt(var) : var;
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

/* ---- the other range functions ---- */

/* Prometheus' linear regression of the samples, x in seconds from
 * intercept_t: a compensated least-squares fit; a constant series has
 * slope 0 (NaN when the constant is infinite). */
static void linreg(const int64_t *ts, const double *vs, size_t n,
		   int64_t intercept_t, double *slope, double *intercept)
{
	double sx = 0, cx = 0, sy = 0, cy = 0, sxy = 0, cxy = 0, sx2 = 0;
	double cx2 = 0, cov, var, nn = (double)n;
	bool const_y = true;

	for (size_t i = 0; i < n; i++) {
		double x = (double)(ts[i] - intercept_t) / 1e3;

		if (const_y && i > 0 && vs[i] != vs[0])
			const_y = false;
		gw_pqe_ksum(&sx, &cx, x);
		gw_pqe_ksum(&sy, &cy, vs[i]);
		gw_pqe_ksum(&sxy, &cxy, x * vs[i]);
		gw_pqe_ksum(&sx2, &cx2, x * x);
	}
	if (const_y) {
		*slope = isinf(vs[0]) ? NAN : 0;
		*intercept = isinf(vs[0]) ? NAN : vs[0];
		return;
	}
	sx += cx;
	sy += cy;
	sxy += cxy;
	sx2 += cx2;
	cov = sxy - sx * sy / nn;
	var = sx2 - sx * sx / nn;
	*slope = cov / var;
	*intercept = sy / nn - *slope * sx / nn;
}

/* Holt's double exponential smoothing, as Prometheus' holt_winters. */
static double holt_winters(const double *vs, size_t n, double sf, double tf)
{
	double s0 = 0, s1 = vs[0], b = vs[1] - vs[0];

	for (size_t i = 1; i < n; i++) {
		double x = sf * vs[i], y;

		if (i > 1)
			b = tf * (s1 - s0) + (1 - tf) * b;
		y = (1 - sf) * (s1 + b);
		s0 = s1;
		s1 = x + y;
	}
	return s1;
}

int gw_pqe_range_raw(enum gw_pq_func fn, const int64_t *ts, const double *vs,
		     size_t n, const struct gw_pqe_rargs *a, double *tmp,
		     double *out, bool *ok)
{
	double slope, icpt, med;
	size_t k = 0;

	*ok = false;
	if (n == 0)
		return 0;
	switch (fn) {
	case GW_FN_RATE:
	case GW_FN_INCREASE:
	case GW_FN_DELTA:
		*ok = gw_pqe_xrate(ts, vs, n, a->range_start, a->range_end,
				   a->range_ms, fn != GW_FN_DELTA,
				   fn == GW_FN_RATE, out);
		return 0;
	case GW_FN_IRATE:
		*ok = gw_pqe_irate(ts, vs, n, out);
		return 0;
	case GW_FN_IDELTA:
		if (n < 2 || ts[n - 1] == ts[n - 2])
			return 0;
		*out = vs[n - 1] - vs[n - 2];
		break;
	case GW_FN_AVG_OVER_TIME:
	case GW_FN_MIN_OVER_TIME:
	case GW_FN_MAX_OVER_TIME:
	case GW_FN_SUM_OVER_TIME:
	case GW_FN_COUNT_OVER_TIME:
	case GW_FN_LAST_OVER_TIME:
	case GW_FN_STDDEV_OVER_TIME:
	case GW_FN_QUANTILE_OVER_TIME:
		*ok = true;
		return gw_pqe_over_time_raw(fn, a->a, vs, n, tmp, out);
	case GW_FN_STDVAR_OVER_TIME:
		*out = variance(vs, n);
		break;
	case GW_FN_MAD_OVER_TIME:
		memcpy(tmp, vs, n * sizeof(*vs));
		med = gw_pqe_quantile(0.5, tmp, n);
		for (size_t i = 0; i < n; i++)
			tmp[i] = fabs(vs[i] - med);
		*out = gw_pqe_quantile(0.5, tmp, n);
		break;
	case GW_FN_PRESENT_OVER_TIME:
	case GW_FN_ABSENT_OVER_TIME:
		*out = 1;
		break;
	case GW_FN_CHANGES:
		for (size_t i = 1; i < n; i++)
			if (vs[i] != vs[i - 1] &&
			    !(isnan(vs[i]) && isnan(vs[i - 1])))
				k++;
		*out = (double)k;
		break;
	case GW_FN_RESETS:
		for (size_t i = 1; i < n; i++)
			if (vs[i] < vs[i - 1])
				k++;
		*out = (double)k;
		break;
	case GW_FN_DERIV:
		if (n < 2)
			return 0;
		/* x from the first sample keeps the sums small. */
		linreg(ts, vs, n, ts[0], &slope, &icpt);
		*out = slope;
		break;
	case GW_FN_PREDICT_LINEAR:
		if (n < 2)
			return 0;
		linreg(ts, vs, n, a->t, &slope, &icpt);
		*out = slope * a->a + icpt;
		break;
	case GW_FN_HOLT_WINTERS:
	case GW_FN_DOUBLE_EXPONENTIAL_SMOOTHING:
		if (n < 2)
			return 0;
		*out = holt_winters(vs, n, a->a, a->b);
		break;
	default:
		return -EINVAL;
	}
	*ok = true;
	return 0;
}

/* ---- instant functions ---- */

double gw_pqe_go_max(double x, double y)
{
	if (isinf(x) && x > 0)
		return x;
	if (isinf(y) && y > 0)
		return y;
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == 0 && x == y)
		return signbit(x) ? y : x;
	return x > y ? x : y;
}

double gw_pqe_go_min(double x, double y)
{
	if (isinf(x) && x < 0)
		return x;
	if (isinf(y) && y < 0)
		return y;
	if (isnan(x) || isnan(y))
		return NAN;
	if (x == 0 && x == y)
		return signbit(x) ? x : y;
	return x < y ? x : y;
}

/*
 * The natural logarithm as Go computes it (fdlibm's e_log.c reduction and
 * polynomial, without fused multiply-add), so ln, log2 and log10 give
 * Prometheus' last digit: the C library's log differs from it in the last
 * bit for about one value in a hundred.
 */
static double go_log(double x)
{
	static const double ln2_hi = 6.93147180369123816490e-01;
	static const double ln2_lo = 1.90821492927058770002e-10;
	static const double l1 = 6.666666666666735130e-01;
	static const double l2 = 3.999999999940941908e-01;
	static const double l3 = 2.857142874366239149e-01;
	static const double l4 = 2.222219843214978396e-01;
	static const double l5 = 1.818357216161805012e-01;
	static const double l6 = 1.531383769920937332e-01;
	static const double l7 = 1.479819860511658591e-01;
	double f1, f, k, s, s2, s4, t1, t2, r, hfsq;
	int ki;

	if (isnan(x) || (isinf(x) && x > 0))
		return x;
	if (x < 0)
		return NAN;
	if (x == 0)
		return -INFINITY;
	f1 = frexp(x, &ki);
	if (f1 < M_SQRT2 / 2) {
		f1 *= 2;
		ki--;
	}
	f = f1 - 1;
	k = (double)ki;
	s = f / (2 + f);
	s2 = s * s;
	s4 = s2 * s2;
	t1 = s2 * (l1 + s4 * (l3 + s4 * (l5 + s4 * l7)));
	t2 = s4 * (l2 + s4 * (l4 + s4 * l6));
	r = t1 + t2;
	hfsq = 0.5 * f * f;
	return k * ln2_hi - ((hfsq - (s * (hfsq + r) + k * ln2_lo)) - f);
}

/* Go's math.Log2: exact for powers of two. */
static double go_log2(double x)
{
	int e;
	double f = frexp(x, &e);

	if (f == 0.5)
		return (double)(e - 1);
	return go_log(f) * M_LOG2E + (double)e;
}

double gw_pqe_math(enum gw_pq_func fn, double v)
{
	switch (fn) {
	case GW_FN_ABS:
		return fabs(v);
	case GW_FN_CEIL:
		return ceil(v);
	case GW_FN_FLOOR:
		return floor(v);
	case GW_FN_EXP:
		return exp(v);
	case GW_FN_LN:
		return go_log(v);
	case GW_FN_LOG2:
		return go_log2(v);
	case GW_FN_LOG10:
		/* Go's math.Log10. */
		return go_log(v) * M_LOG10E;
	case GW_FN_SQRT:
		return sqrt(v);
	case GW_FN_SGN:
		return v < 0 ? -1 : v > 0 ? 1 : v;
	case GW_FN_ACOS:
		return acos(v);
	case GW_FN_ACOSH:
		return acosh(v);
	case GW_FN_ASIN:
		return asin(v);
	case GW_FN_ASINH:
		return asinh(v);
	case GW_FN_ATAN:
		return atan(v);
	case GW_FN_ATANH:
		return atanh(v);
	case GW_FN_COS:
		return cos(v);
	case GW_FN_COSH:
		return cosh(v);
	case GW_FN_SIN:
		return sin(v);
	case GW_FN_SINH:
		return sinh(v);
	case GW_FN_TAN:
		return tan(v);
	case GW_FN_TANH:
		return tanh(v);
	case GW_FN_DEG:
		return v * 180 / M_PI;
	case GW_FN_RAD:
		return v * M_PI / 180;
	default:
		return NAN;
	}
}

double gw_pqe_round(double v, double to_nearest)
{
	/* The inverse, as Prometheus: fewer representation surprises. */
	double inv = 1.0 / to_nearest;

	return floor(v * inv + 0.5) / inv;
}

/* ---- dates: Go's calendar, so that any value gives Prometheus' answer ---- */

#define SEC_PER_MIN  60
#define SEC_PER_HOUR 3600
#define SEC_PER_DAY  86400
#define SEC_PER_WEEK (7 * SEC_PER_DAY)
#define DAYS_400Y    (365 * 400 + 97)
#define DAYS_100Y    (365 * 100 + 24)
#define DAYS_4Y	     (365 * 4 + 1)
/* Go's time: the absolute epoch is year -292277022399; Unix seconds plus
 * this (modulo 2^64) are seconds since it. */
#define ABS_ZERO_YEAR (-292277022399LL)
#define UNIX_TO_ABS   9223372028715321600ULL

static bool is_leap(int64_t y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

/* Go's time.Unix(int64(v), 0).UTC(): seconds since the absolute epoch,
 * with Go's conversion of NaN and out-of-range values (amd64: the
 * minimum int64). */
static uint64_t go_abs_time(double v)
{
	int64_t sec = INT64_MIN;

	if (v >= -9223372036854775808.0 && v < 9223372036854775808.0)
		sec = (int64_t)v;
	return (uint64_t)sec + UNIX_TO_ABS;
}

/* Go's absDate: the year, the day of the year (0-based), month (1-12) and
 * day of the month (1-31). */
static void go_date(uint64_t abs, int64_t *year, int *yday, int *month,
		    int *mday)
{
	static const int before[] = { 0,   31,	59,  90,  120, 151, 181,
				      212, 243, 273, 304, 334, 365 };
	uint64_t d = abs / SEC_PER_DAY, y, n;
	int day, m, begin, end;

	n = d / DAYS_400Y;
	y = 400 * n;
	d -= DAYS_400Y * n;
	n = d / DAYS_100Y;
	n -= n >> 2;
	y += 100 * n;
	d -= DAYS_100Y * n;
	n = d / DAYS_4Y;
	y += 4 * n;
	d -= DAYS_4Y * n;
	n = d / 365;
	n -= n >> 2;
	y += n;
	d -= 365 * n;
	*year = (int64_t)y + ABS_ZERO_YEAR;
	*yday = (int)d;
	day = *yday;
	if (is_leap(*year)) {
		if (day == 31 + 29 - 1) {
			*month = 2;
			*mday = 29;
			return;
		}
		if (day > 31 + 29 - 1)
			day--;
	}
	m = day / 31;
	end = before[m + 1];
	if (day >= end) {
		m++;
		begin = end;
	} else {
		begin = before[m];
	}
	*month = m + 1;
	*mday = day - begin + 1;
}

double gw_pqe_date(enum gw_pq_func fn, double secs)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31 };
	uint64_t abs = go_abs_time(secs);
	int64_t year;
	int yday, month, mday;

	switch (fn) {
	case GW_FN_HOUR:
		return (double)((abs % SEC_PER_DAY) / SEC_PER_HOUR);
	case GW_FN_MINUTE:
		return (double)((abs % SEC_PER_HOUR) / SEC_PER_MIN);
	case GW_FN_DAY_OF_WEEK:
		return (double)(((abs + SEC_PER_DAY) % SEC_PER_WEEK) /
				SEC_PER_DAY);
	default:
		break;
	}
	go_date(abs, &year, &yday, &month, &mday);
	switch (fn) {
	case GW_FN_DAY_OF_MONTH:
		return mday;
	case GW_FN_DAY_OF_YEAR:
		return yday + 1;
	case GW_FN_DAYS_IN_MONTH:
		return month == 2 && is_leap(year) ? 29 : mdays[month - 1];
	case GW_FN_MONTH:
		return month;
	case GW_FN_YEAR:
		return (double)year;
	default:
		return NAN;
	}
}

/* ---- histogram_quantile ---- */

static int cmp_bucket(const void *a, const void *b)
{
	const struct gw_pqe_bucket *x = a, *y = b;

	return (x->upper > y->upper) - (x->upper < y->upper);
}

double gw_pqe_bucket_quantile(double q, struct gw_pqe_bucket *b, size_t n)
{
	double max = -INFINITY, obs, rank, start = 0, count;
	size_t i, k;

	if (isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	if (n == 0)
		return NAN;
	qsort(b, n, sizeof(*b), cmp_bucket);
	if (!(isinf(b[n - 1].upper) && b[n - 1].upper > 0))
		return NAN;
	/* Buckets with the same bound are one bucket. */
	for (i = 1, k = 0; i < n; i++) {
		if (b[i].upper == b[k].upper)
			b[k].count += b[i].count;
		else
			b[++k] = b[i];
	}
	n = k + 1;
	/* Counts that go down (buckets scraped at different moments) are
	 * raised to the largest count below them. */
	for (i = 0; i < n; i++) {
		if (b[i].count > max)
			max = b[i].count;
		else if (b[i].count < max)
			b[i].count = max;
	}
	if (n < 2)
		return NAN;
	obs = b[n - 1].count;
	if (obs == 0)
		return NAN;
	rank = q * obs;
	/* The first bucket (of all but +Inf) holding the rank, by Go's
	 * sort.Search (a binary search: NaN counts steer it as in Go). */
	for (size_t lo = 0, hi = n - 1;;) {
		size_t h = (lo + hi) / 2;

		if (lo >= hi) {
			k = lo;
			break;
		}
		if (!(b[h].count >= rank))
			lo = h + 1;
		else
			hi = h;
	}
	if (k == n - 1)
		return b[n - 2].upper;
	if (k == 0 && b[0].upper <= 0)
		return b[0].upper;
	count = b[k].count;
	if (k > 0) {
		start = b[k - 1].upper;
		count -= b[k - 1].count;
		rank -= b[k - 1].count;
	}
	return start + (b[k].upper - start) * (rank / count);
}
