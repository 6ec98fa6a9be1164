// SPDX-License-Identifier: MIT
/*
 * test_sketch.c - the quantile sketch and the rollups built on it: the 1%
 * relative-error guarantee against exact sorted quantiles, exact merging,
 * collapsing, special values, the encodings (round trips, truncation,
 * corruption), and rollup statistics, merging and chunks.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "store/rollup.h"
#include "store/sketch.h"

#define BUF_MAX (64u << 20)
#define NQ	(sizeof(qs) / sizeof(qs[0]))

static const double qs[] = { 0, 0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1 };

/* ---- helpers ---- */

static uint64_t rng_state;

static void seed(uint64_t s)
{
	rng_state = s * 0x9e3779b97f4a7c15ull + 1;
}

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, 1). */
static double unif(void)
{
	return (double)(rnd() >> 11) * 0x1.0p-53;
}

static double normal(void)
{
	double u = unif(), v = unif();

	return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The "lower" q-quantile of sorted[0..n), as the header defines it. */
static double exact_q(const double *sorted, size_t n, double q)
{
	double r = floor(q * (double)(n - 1));

	return sorted[r >= (double)(n - 1) ? n - 1 : (size_t)r];
}

static void check_close(double got, double want, double q, const char *what)
{
	if (isinf(want)) {
		/* The top bucket: the largest finite magnitudes, or want. */
		if (got == want || (signbit(got) == signbit(want) &&
				    fabs(got) >= DBL_MAX / 1.03))
			return;
	} else if (fabs(got - want) <= GW_SKETCH_ALPHA * fabs(want)) {
		return;
	}
	fail_msg("%s: q=%g got %.17g want %.17g (rel err %g)", what, q, got,
		 want, fabs(got - want) / fabs(want));
}

/*
 * Prometheus' interpolated quantile of sorted[0..n) against the sketch's:
 * within alpha of it when the two neighbouring values share a sign,
 * within alpha of the larger neighbour's magnitude across zero.
 */
static void check_interp(const struct gw_sketch *s, const double *sorted,
			 size_t n, double q, const char *what)
{
	double h = q * (double)(n - 1), w = h - floor(h);
	size_t lo = (size_t)floor(h), hi = lo + 1 < n ? lo + 1 : lo;
	double a = sorted[lo], b = sorted[hi];
	double want = a * (1 - w) + b * w;
	double got = gw_sketch_quantile_interp(s, q);
	double bound = (a < 0) == (b < 0) ? fabs(want) : fmax(fabs(a), fabs(b));

	if (isinf(a) || isinf(b))
		return; /* the top bucket: check_close covers it */
	if (!(fabs(got - want) <= GW_SKETCH_ALPHA * bound * (1 + 1e-12)))
		fail_msg("%s: interpolated q=%g got %.17g want %.17g "
			 "(rel err %g)",
			 what, q, got, want, fabs(got - want) / fabs(want));
}

/* Adds v[0..n) to a fresh sketch and checks every q of qs. */
static void check_dist(double *v, size_t n, const char *what)
{
	struct gw_sketch s;
	size_t i;

	gw_sketch_init(&s);
	for (i = 0; i < n; i++)
		assert_int_equal(gw_sketch_add(&s, v[i]), 0);
	assert_int_equal(s.count, n);
	assert_int_equal(s.collapsed, 0);
	qsort(v, n, sizeof(*v), cmp_double);
	assert_true(gw_sketch_quantile(&s, 0) == v[0]);
	assert_true(gw_sketch_quantile(&s, 1) == v[n - 1]);
	for (i = 0; i < NQ; i++)
		check_close(gw_sketch_quantile(&s, qs[i]), exact_q(v, n, qs[i]),
			    qs[i], what);
	/* And a sweep of 1001 quantiles. */
	for (i = 0; i <= 1000; i++)
		check_close(gw_sketch_quantile(&s, i / 1000.0),
			    exact_q(v, n, i / 1000.0), i / 1000.0, what);
	/* Interpolated as Prometheus does, at q that fall between ranks. */
	assert_true(gw_sketch_quantile_interp(&s, 0) == v[0]);
	assert_true(gw_sketch_quantile_interp(&s, 1) == v[n - 1]);
	for (i = 0; i <= 1000; i++)
		check_interp(&s, v, n, (i + 0.37) / 1001.0, what);
	gw_sketch_release(&s);
}

/* A short window is where rank interpolation matters most: the lower
 * rank of {100, 200} at 0.5 is 100, Prometheus says 150. */
static void quantile_interpolates_as_prometheus(void **state)
{
	double v[6] = { 200, 100, 260, 180, 140, 90 };
	struct gw_sketch s;

	(void)state;
	gw_sketch_init(&s);
	assert_int_equal(gw_sketch_add(&s, 100), 0);
	assert_int_equal(gw_sketch_add(&s, 200), 0);
	check_close(gw_sketch_quantile_interp(&s, 0.5), 150, 0.5, "two");
	check_close(gw_sketch_quantile_interp(&s, 0.9), 190, 0.9, "two");
	gw_sketch_release(&s);
	gw_sketch_init(&s);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(gw_sketch_add(&s, v[i]), 0);
	qsort(v, 6, sizeof(*v), cmp_double);
	for (int i = 0; i <= 100; i++)
		check_interp(&s, v, 6, i / 100.0, "six");
	assert_true(isnan(gw_sketch_quantile_interp(&s, 1.5)));
	gw_sketch_release(&s);
	assert_true(isnan(gw_sketch_quantile_interp(&s, 0.5)));
	/* Across zero: bounded by the larger neighbour's magnitude. */
	gw_sketch_init(&s);
	for (int i = -50; i <= 50; i++)
		assert_int_equal(gw_sketch_add(&s, i * 1.5), 0);
	{
		double w[101];

		for (int i = 0; i <= 100; i++)
			w[i] = (i - 50) * 1.5;
		for (int i = 0; i <= 200; i++)
			check_interp(&s, w, 101, i / 200.0, "signs");
	}
	gw_sketch_release(&s);
}

static void encode_sketch(const struct gw_sketch *s, struct gw_buf *b)
{
	gw_buf_reset(b);
	assert_int_equal(gw_sketch_encode(s, b), 0);
}

/* Same state: counters, extremes (bitwise) and buckets. */
static void assert_sketch_equal(const struct gw_sketch *a,
				const struct gw_sketch *b)
{
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->zero, b->zero);
	assert_int_equal(a->nan, b->nan);
	assert_int_equal(a->collapsed, b->collapsed);
	assert_memory_equal(&a->min, &b->min, sizeof(double));
	assert_memory_equal(&a->max, &b->max, sizeof(double));
	assert_int_equal(a->npos, b->npos);
	assert_int_equal(a->nneg, b->nneg);
	if (a->npos)
		assert_memory_equal(a->pos, b->pos, a->npos * sizeof(*a->pos));
	if (a->nneg)
		assert_memory_equal(a->neg, b->neg, a->nneg * sizeof(*a->neg));
	for (size_t i = 0; i <= 200; i++) {
		double x = gw_sketch_quantile(a, i / 200.0);
		double y = gw_sketch_quantile(b, i / 200.0);

		assert_memory_equal(&x, &y, sizeof(double));
	}
}

/* ---- the accuracy guarantee ---- */

static void accuracy_distributions(void **state)
{
	enum { N = 20000 };
	double *v = malloc(N * sizeof(*v));
	size_t i;

	(void)state;
	assert_non_null(v);
	seed(1);
	for (i = 0; i < N; i++)
		v[i] = unif() * 100;
	check_dist(v, N, "uniform");

	for (i = 0; i < N; i++)
		v[i] = exp(3 * normal()); /* about 1e-6 .. 1e6 */
	check_dist(v, N, "lognormal");

	for (i = 0; i < N; i++)
		v[i] = 42.5;
	check_dist(v, N, "constant");

	for (i = 0; i < N; i++)
		v[i] = i % 3 ? 50 + 2 * normal() : 500 + 20 * normal();
	check_dist(v, N, "bimodal");

	for (i = 0; i < N; i++)
		v[i] = -exp(2 * normal());
	check_dist(v, N, "negative lognormal");

	for (i = 0; i < N; i++)
		v[i] = 100 * normal();
	check_dist(v, N, "mixed signs");

	for (i = 0; i < N; i++)
		v[i] = i % 10 < 3 ? 0 : 2 * unif() - 1;
	check_dist(v, N, "30% zeros");

	for (i = 0; i < N; i++)
		v[i] = (double)(30 + rnd() % 61);
	check_dist(v, N, "temperature");

	for (i = 0; i < N; i++)
		v[i] = round((100 + 600 * unif()) * 1000) / 1000;
	check_dist(v, N, "power");
	free(v);
}

/* 1e-9 .. 1e9 takes about 2070 buckets: fewer values than that spread
 * over the range leave the sketch uncollapsed and every quantile exact to
 * 1%, across all 18 decades. */
static void accuracy_wide_range(void **state)
{
	enum { N = 1500 };
	double v[N];
	size_t i;

	(void)state;
	seed(2);
	v[0] = 1e-9;
	v[1] = 1e9;
	for (i = 2; i < N; i++)
		v[i] = pow(10, -9 + 18 * unif());
	check_dist(v, N, "1e-9..1e9");
	/* Both signs over the range. */
	for (i = 0; i < N; i++)
		v[i] = (i % 2 ? -1 : 1) * pow(10, -9 + 18 * unif());
	check_dist(v, N, "+-1e-9..1e9");
	/* Extremes of the double range, and zeros between. */
	for (i = 0; i < N; i++)
		v[i] = i % 7 == 0 ? 0
				  : (i % 2 ? -1 : 1) *
					    pow(10, -300 + 600 * unif());
	v[3] = DBL_MAX;
	v[5] = -DBL_MAX;
	v[9] = DBL_MIN;
	check_dist(v, N, "1e-300..1e300");
}

/* Values a hair either side of many bucket edges: the bound holds at the
 * edges too. */
static void accuracy_bucket_edges(void **state)
{
	enum { N = 4000 };
	double v[N];
	const double g = 1.01 / 0.99;
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		double e = pow(g, (double)(i / 4) - 400);

		v[i] = i % 4 == 0   ? nextafter(e, 0)
		       : i % 4 == 1 ? e
		       : i % 4 == 2 ? nextafter(e, INFINITY)
				    : e * (1 + 1e-12);
	}
	check_dist(v, N, "bucket edges");
}

/* ---- special values ---- */

static void nan_is_ignored(void **state)
{
	struct gw_sketch a, b;
	struct gw_buf ea, eb;

	(void)state;
	gw_sketch_init(&a);
	gw_sketch_init(&b);
	gw_buf_init(&ea, BUF_MAX);
	gw_buf_init(&eb, BUF_MAX);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(gw_sketch_add(&a, i), 0);
		assert_int_equal(gw_sketch_add(&b, i), 0);
		assert_int_equal(gw_sketch_add(&b, NAN), 0);
	}
	assert_int_equal(gw_sketch_add_n(&b, -NAN, 5), 0);
	assert_int_equal(b.count, 100);
	assert_int_equal(b.nan, 105);
	for (size_t i = 0; i < NQ; i++)
		assert_true(gw_sketch_quantile(&a, qs[i]) ==
			    gw_sketch_quantile(&b, qs[i]));
	/* A sketch of NaN only is empty. */
	gw_sketch_reset(&a);
	assert_int_equal(gw_sketch_add(&a, NAN), 0);
	assert_int_equal(a.count, 0);
	assert_true(isnan(gw_sketch_quantile(&a, 0.5)));
	/* Queries outside [0, 1] are NaN. */
	assert_true(isnan(gw_sketch_quantile(&b, -0.01)));
	assert_true(isnan(gw_sketch_quantile(&b, 1.01)));
	assert_true(isnan(gw_sketch_quantile(&b, NAN)));
	gw_buf_release(&ea);
	gw_buf_release(&eb);
	gw_sketch_release(&a);
	gw_sketch_release(&b);
}

static void infinities(void **state)
{
	struct gw_sketch s, d;
	struct gw_buf b;
	size_t used;

	(void)state;
	gw_sketch_init(&s);
	gw_sketch_init(&d);
	gw_buf_init(&b, BUF_MAX);
	for (int i = 1; i <= 98; i++)
		assert_int_equal(gw_sketch_add(&s, i), 0);
	assert_int_equal(gw_sketch_add(&s, INFINITY), 0);
	assert_int_equal(gw_sketch_add(&s, -INFINITY), 0);
	assert_int_equal(s.count, 100);
	assert_true(gw_sketch_quantile(&s, 0) == -INFINITY);
	assert_true(gw_sketch_quantile(&s, 1) == INFINITY);
	check_close(gw_sketch_quantile(&s, 0.5), 49, 0.5, "with inf");
	/* Many infinities: the ranks inside them answer the top bucket. */
	assert_int_equal(gw_sketch_add_n(&s, INFINITY, 100), 0);
	check_close(gw_sketch_quantile(&s, 0.9), INFINITY, 0.9, "inf rank");
	assert_true(isfinite(gw_sketch_quantile(&s, 0.9)));
	check_close(gw_sketch_quantile(&s, 0.2), 39, 0.2, "with inf");
	/* DBL_MAX shares the top bucket and keeps its accuracy. */
	gw_sketch_reset(&s);
	assert_int_equal(gw_sketch_add_n(&s, DBL_MAX, 10), 0);
	assert_int_equal(gw_sketch_add_n(&s, INFINITY, 10), 0);
	assert_int_equal(gw_sketch_add(&s, 1), 0);
	check_close(gw_sketch_quantile(&s, 0.3), DBL_MAX, 0.3, "dbl_max");
	assert_int_equal(s.npos, 2);
	/* Round trip. */
	encode_sketch(&s, &b);
	assert_int_equal(gw_sketch_decode(&d, (uint8_t *)b.p, b.len, &used), 0);
	assert_int_equal(used, b.len);
	assert_sketch_equal(&s, &d);
	gw_buf_release(&b);
	gw_sketch_release(&s);
	gw_sketch_release(&d);
}

static void zeros_and_subnormals(void **state)
{
	struct gw_sketch s;

	(void)state;
	gw_sketch_init(&s);
	assert_int_equal(gw_sketch_add(&s, 0.0), 0);
	assert_int_equal(gw_sketch_add(&s, -0.0), 0);
	assert_int_equal(gw_sketch_add(&s, 0.0), 0);
	assert_int_equal(s.zero, 3);
	assert_true(gw_sketch_quantile(&s, 0.5) == 0);
	assert_false(signbit(gw_sketch_quantile(&s, 0)));
	/* Subnormals count as zero, answered within DBL_MIN. */
	gw_sketch_reset(&s);
	assert_int_equal(gw_sketch_add(&s, -1), 0);
	assert_int_equal(gw_sketch_add_n(&s, 4e-310, 3), 0);
	assert_int_equal(gw_sketch_add(&s, 1), 0);
	assert_int_equal(s.zero, 3);
	assert_true(fabs(gw_sketch_quantile(&s, 0.5)) < DBL_MIN);
	/* Only subnormals: the answer lies between the exact extremes. */
	gw_sketch_reset(&s);
	assert_int_equal(gw_sketch_add(&s, 4e-310), 0);
	assert_int_equal(gw_sketch_add(&s, 5e-310), 0);
	assert_int_equal(gw_sketch_add(&s, 6e-310), 0);
	assert_true(gw_sketch_quantile(&s, 0.5) >= 4e-310);
	assert_true(gw_sketch_quantile(&s, 0.5) <= 6e-310);
	gw_sketch_release(&s);
}

static void add_n_is_n_adds(void **state)
{
	struct gw_sketch a, b;
	struct gw_buf ea, eb;

	(void)state;
	gw_sketch_init(&a);
	gw_sketch_init(&b);
	gw_buf_init(&ea, BUF_MAX);
	gw_buf_init(&eb, BUF_MAX);
	for (int v = -20; v <= 20; v++) {
		assert_int_equal(gw_sketch_add_n(&a, v * 1.5, 7), 0);
		for (int k = 0; k < 7; k++)
			assert_int_equal(gw_sketch_add(&b, v * 1.5), 0);
	}
	assert_int_equal(gw_sketch_add_n(&a, 3, 0), 0);
	assert_sketch_equal(&a, &b);
	encode_sketch(&a, &ea);
	encode_sketch(&b, &eb);
	assert_int_equal(ea.len, eb.len);
	assert_memory_equal(ea.p, eb.p, ea.len);
	/* A bucket holds at most 2^32 - 1 values. */
	assert_int_equal(gw_sketch_add_n(&a, 3, (uint64_t)UINT32_MAX + 1),
			 -EOVERFLOW);
	assert_int_equal(gw_sketch_add_n(&a, 3, UINT32_MAX), -EOVERFLOW);
	assert_int_equal(a.count, b.count);
	gw_buf_release(&ea);
	gw_buf_release(&eb);
	gw_sketch_release(&a);
	gw_sketch_release(&b);
}

/* ---- merging ---- */

/* n values with a heavy spread: both signs, zeros, NaN, 24 decades. */
static double wild(void)
{
	uint64_t k = rnd() % 100;

	if (k < 5)
		return 0;
	if (k < 6)
		return NAN;
	return (k % 2 ? -1 : 1) * pow(10, -12 + 24 * unif());
}

static void merge_equals_single(double (*gen)(void), size_t n, unsigned int K)
{
	struct gw_sketch all, parts[16], merged;
	struct gw_buf ea, em;
	unsigned int k;
	size_t i;

	assert_true(K <= 16);
	gw_sketch_init(&all);
	gw_sketch_init(&merged);
	gw_buf_init(&ea, BUF_MAX);
	gw_buf_init(&em, BUF_MAX);
	for (k = 0; k < K; k++)
		gw_sketch_init(&parts[k]);
	for (i = 0; i < n; i++) {
		double v = gen();

		assert_int_equal(gw_sketch_add(&all, v), 0);
		/* Scattered, not contiguous: order must not matter. */
		assert_int_equal(gw_sketch_add(&parts[rnd() % K], v), 0);
	}
	/* Merged in reverse, and one tree-wise, into an empty sketch. */
	for (k = K; k-- > 0;)
		assert_int_equal(gw_sketch_merge(&merged, &parts[k]), 0);
	assert_sketch_equal(&all, &merged);
	encode_sketch(&all, &ea);
	encode_sketch(&merged, &em);
	assert_int_equal(ea.len, em.len);
	assert_memory_equal(ea.p, em.p, ea.len);

	for (k = 1; k < K; k += 2)
		assert_int_equal(gw_sketch_merge(&parts[k - 1], &parts[k]), 0);
	for (k = 2; k < K; k += 2)
		assert_int_equal(gw_sketch_merge(&parts[0], &parts[k]), 0);
	assert_sketch_equal(&all, &parts[0]);

	for (k = 0; k < K; k++)
		gw_sketch_release(&parts[k]);
	gw_sketch_release(&all);
	gw_sketch_release(&merged);
	gw_buf_release(&ea);
	gw_buf_release(&em);
}

static double temperature(void)
{
	return (double)(30 + rnd() % 61);
}

static double lognormal(void)
{
	return exp(3 * normal());
}

static void merge_exact(void **state)
{
	(void)state;
	seed(3);
	merge_equals_single(temperature, 10000, 7);
	merge_equals_single(lognormal, 20000, 5);
	merge_equals_single(wild, 3000, 9);
	/* Collapsing on both sides: still exact and order-free. */
	merge_equals_single(wild, 200000, 16);
}

static void merge_self_and_empty(void **state)
{
	struct gw_sketch a, b, e;

	(void)state;
	gw_sketch_init(&a);
	gw_sketch_init(&b);
	gw_sketch_init(&e);
	seed(4);
	for (int i = 0; i < 1000; i++) {
		double v = wild();

		assert_int_equal(gw_sketch_add(&a, v), 0);
		assert_int_equal(gw_sketch_add_n(&b, v, 2), 0);
	}
	assert_int_equal(gw_sketch_merge(&a, &e), 0);
	assert_int_equal(gw_sketch_merge(&a, &a), 0);
	assert_sketch_equal(&a, &b);
	assert_int_equal(gw_sketch_merge(&e, &a), 0);
	assert_sketch_equal(&e, &b);
	gw_sketch_release(&a);
	gw_sketch_release(&b);
	gw_sketch_release(&e);
}

/* ---- collapsing ---- */

static void collapse_keeps_upper(void **state)
{
	enum { N = 200000 };
	double *v = malloc(N * sizeof(*v));
	struct gw_sketch s;
	size_t i;

	(void)state;
	assert_non_null(v);
	gw_sketch_init(&s);
	seed(5);
	/* 1e-12 .. 1e12: about 2760 buckets, so about 26% collapse. */
	for (i = 0; i < N; i++) {
		v[i] = pow(10, -12 + 24 * unif());
		assert_int_equal(gw_sketch_add(&s, v[i]), 0);
	}
	assert_int_equal(s.npos, GW_SKETCH_MAX_BINS);
	assert_true(s.collapsed > N / 5 && s.collapsed < N / 10 * 3);
	assert_int_equal(s.count, N);
	qsort(v, N, sizeof(*v), cmp_double);
	/* The collapsed values are the lowest ones: every rank above them
	 * keeps the guarantee... */
	for (i = 0; i <= 2000; i++) {
		size_t rank = s.collapsed + (N - 1 - s.collapsed) * i / 2000;
		double q = ((double)rank + 0.5) / (N - 1);

		if (q > 1)
			q = 1;
		check_close(gw_sketch_quantile(&s, q), exact_q(v, N, q), q,
			    "above the collapse");
	}
	/* ...the usual ones among them, and the exact extremes. */
	for (i = 2; i < NQ; i++)
		check_close(gw_sketch_quantile(&s, qs[i]), exact_q(v, N, qs[i]),
			    qs[i], "collapsed");
	assert_true(gw_sketch_quantile(&s, 0) == v[0]);
	/* Below the collapse the answer is the lowest kept bucket: too high,
	 * but never below the true value nor above the kept ones. */
	assert_true(gw_sketch_quantile(&s, 0.01) >= exact_q(v, N, 0.01));
	gw_sketch_release(&s);
	free(v);
}

/* ---- encoding ---- */

static void build_samples(struct gw_sketch *s, int which)
{
	gw_sketch_init(s);
	seed(100 + (uint64_t)which);
	switch (which) {
	case 0: /* empty */
		break;
	case 1: /* NaN only */
		assert_int_equal(gw_sketch_add_n(s, NAN, 3), 0);
		break;
	case 2:
		for (int i = 0; i < 60; i++)
			assert_int_equal(gw_sketch_add(s, temperature()), 0);
		break;
	case 3:
		for (int i = 0; i < 3000; i++)
			assert_int_equal(gw_sketch_add(s, wild()), 0);
		break;
	case 4: /* collapsed on both sides */
		for (int i = 0; i < 30000; i++)
			assert_int_equal(gw_sketch_add(s, wild()), 0);
		assert_true(s->cpos > 0 && s->cneg > 0);
		break;
	default:
		assert_int_equal(gw_sketch_add(s, -INFINITY), 0);
		assert_int_equal(gw_sketch_add(s, 0), 0);
		assert_int_equal(gw_sketch_add(s, 1e-310), 0);
		break;
	}
}

static void encode_round_trip(void **state)
{
	struct gw_buf b, b2;
	size_t used;

	(void)state;
	gw_buf_init(&b, BUF_MAX);
	gw_buf_init(&b2, BUF_MAX);
	for (int w = 0; w < 6; w++) {
		struct gw_sketch s, d;

		build_samples(&s, w);
		gw_sketch_init(&d);
		encode_sketch(&s, &b);
		/* Trailing bytes are not consumed. */
		assert_int_equal(gw_buf_add(&b, "xyz", 3), 0);
		assert_int_equal(
			gw_sketch_decode(&d, (uint8_t *)b.p, b.len, &used), 0);
		assert_int_equal(used, b.len - 3);
		assert_sketch_equal(&s, &d);
		encode_sketch(&d, &b2);
		assert_int_equal(b2.len, used);
		assert_memory_equal(b.p, b2.p, used);
		gw_sketch_release(&s);
		gw_sketch_release(&d);
	}
	gw_buf_release(&b);
	gw_buf_release(&b2);
}

static void encode_is_compact(void **state)
{
	struct gw_sketch s;
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, BUF_MAX);
	build_samples(&s, 0);
	encode_sketch(&s, &b);
	assert_int_equal(b.len, 5);
	/* A minute of a constant integer gauge. */
	assert_int_equal(gw_sketch_add_n(&s, 65, 60), 0);
	encode_sketch(&s, &b);
	assert_true(b.len <= 13);
	gw_sketch_release(&s);
	/* A minute of temperature-like integers, 61 possible values. */
	build_samples(&s, 2);
	encode_sketch(&s, &b);
	assert_true(b.len <= 20 + 2 * s.npos);
	gw_sketch_release(&s);
	gw_buf_release(&b);
}

static void encode_leaves_buffer_on_error(void **state)
{
	struct gw_sketch s;
	struct gw_buf b;

	(void)state;
	build_samples(&s, 3);
	gw_buf_init(&b, 64);
	assert_int_equal(gw_buf_add(&b, "hdr", 3), 0);
	assert_int_equal(gw_sketch_encode(&s, &b), -ENOSPC);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.p, "hdr");
	gw_buf_release(&b);
	gw_sketch_release(&s);
}

/* A decoded sketch behaves: quantiles ordered within [min, max], and its
 * encoding decodes to the same answers. */
static void check_decoded(const struct gw_sketch *d)
{
	struct gw_sketch e;
	struct gw_buf b;
	double prev = -INFINITY;
	size_t used;

	for (int i = 0; i <= 50; i++) {
		double x = gw_sketch_quantile(d, i / 50.0);

		if (d->count == 0) {
			assert_true(isnan(x));
			continue;
		}
		assert_true(x >= prev && x >= d->min && x <= d->max);
		prev = x;
	}
	gw_buf_init(&b, BUF_MAX);
	gw_sketch_init(&e);
	encode_sketch(d, &b);
	assert_int_equal(gw_sketch_decode(&e, (uint8_t *)b.p, b.len, &used), 0);
	assert_sketch_equal(d, &e);
	gw_sketch_release(&e);
	gw_buf_release(&b);
}

static void decode_truncated_and_corrupt(void **state)
{
	struct gw_buf b;
	uint8_t *p;
	size_t used, ok = 0;

	(void)state;
	gw_buf_init(&b, BUF_MAX);
	for (int w = 0; w < 6; w++) {
		struct gw_sketch s, d;

		build_samples(&s, w);
		gw_sketch_init(&d);
		encode_sketch(&s, &b);
		p = malloc(b.len);
		assert_non_null(p);
		/* Every truncation, as an exact-size copy for ASan. */
		for (size_t n = 0; n < b.len; n++) {
			uint8_t *q = malloc(n ? n : 1);

			assert_non_null(q);
			memcpy(q, b.p, n);
			assert_int_equal(gw_sketch_decode(&d, q, n, &used),
					 -EBADMSG);
			assert_int_equal(d.count, 0);
			free(q);
		}
		/* Random corruption of 1 to 3 bytes. */
		seed(200 + (uint64_t)w);
		for (int it = 0; it < 3000; it++) {
			int r;

			memcpy(p, b.p, b.len);
			for (uint64_t k = 0, nk = 1 + rnd() % 3; k < nk; k++)
				p[rnd() % b.len] = (uint8_t)rnd();
			r = gw_sketch_decode(&d, p, b.len, &used);
			assert_true(r == 0 || r == -EBADMSG);
			if (r == 0) {
				ok++;
				assert_true(used <= b.len);
				check_decoded(&d);
			} else {
				assert_int_equal(d.count, 0);
			}
		}
		free(p);
		gw_sketch_release(&s);
		gw_sketch_release(&d);
	}
	/* Some corruptions still decode (a changed count is a valid
	 * sketch), so the check above did run. */
	assert_true(ok > 0);
	gw_buf_release(&b);
}

static void decode_rejects(void **state)
{
	/* version, nan, zero, nneg, npos ... */
	static const struct {
		const char *what;
		uint8_t b[24];
		size_t n;
	} bad[] = {
		{ "version 0", { 0, 0, 0, 0, 0 }, 5 },
		{ "version 2", { 2, 0, 0, 0, 0 }, 5 },
		{ "overlong varint", { 1, 0x80, 0x00, 0, 0, 0 }, 6 },
		{ "zero count bucket", { 1, 0, 0, 0, 1, 2, 0, 0x10, 0x40 }, 9 },
		{ "too many buckets", { 1, 0, 0, 0, 0x81, 0x10 }, 6 },
		{ "index out of range",
		  { 1, 0, 0, 0, 1, 0xff, 0xff, 0x0f, 1, 0x18, 0x3f, 0xf0,
		    0x00 },
		  13 },
		{ "no extremes", { 1, 0, 1, 0, 0 }, 5 },
		/* one zero, min = 1.0 (not in the zero bucket) */
		{ "min off its bucket",
		  { 1, 0, 1, 0, 0, 0x02, 0x3f, 0xf0, 0 },
		  9 },
		/* one zero, min 0, max = -0.0 bits */
		{ "negative zero", { 1, 0, 1, 0, 0, 0, 0x01, 0x80 }, 8 },
		/* non-canonical XOR: lead 0, 2 bytes with a leading zero */
		{ "xor not canonical",
		  { 1, 0, 1, 0, 0, 0x02, 0x00, 0x01, 0 },
		  9 },
	};
	struct gw_sketch s;
	size_t used;

	(void)state;
	gw_sketch_init(&s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = gw_sketch_decode(&s, bad[i].b, bad[i].n, &used);

		if (r != -EBADMSG)
			fail_msg("%s: %d", bad[i].what, r);
	}
	/* The smallest valid ones: empty, and one zero. */
	assert_int_equal(
		gw_sketch_decode(&s, (const uint8_t *)"\1\0\0\0\0", 5, &used),
		0);
	assert_int_equal(gw_sketch_decode(&s, (const uint8_t *)"\1\0\1\0\0\0\0",
					  7, &used),
			 0);
	assert_int_equal(s.count, 1);
	assert_true(gw_sketch_quantile(&s, 0.5) == 0);
	gw_sketch_release(&s);
}

/* ---- rollups ---- */

static void rollup_stats(void **state)
{
	enum { N = 5000 };
	struct gw_rollup r;
	long double sum = 0, dev = 0;
	double v[N], mean, sd;
	size_t i;

	(void)state;
	gw_rollup_init(&r, 60000);
	assert_true(isnan(gw_rollup_mean(&r)));
	assert_true(isnan(gw_rollup_stddev(&r)));
	assert_true(isnan(r.min) && isnan(r.last));
	seed(6);
	for (i = 0; i < N; i++) {
		v[i] = 65 + 10 * normal();
		assert_int_equal(gw_rollup_add(&r, (int64_t)i, v[i]), 0);
		sum += v[i];
	}
	assert_int_equal(gw_rollup_add(&r, N, NAN), 0);
	assert_true(r.count == N);
	mean = (double)(sum / N);
	for (i = 0; i < N; i++)
		dev += ((long double)v[i] - mean) * ((long double)v[i] - mean);
	sd = sqrt((double)(dev / N));
	assert_true(fabs(gw_rollup_mean(&r) - mean) <= 1e-12 * fabs(mean));
	assert_true(fabs(gw_rollup_stddev(&r) - sd) <= 1e-9 * sd);
	assert_true(r.last == v[N - 1] && r.t_last == N - 1);
	assert_int_equal(r.sk.count, N);

	/* Equal values: exactly 0, never NaN from a negative variance. */
	for (double c = 0.1; c < 1e6; c *= 7.3) {
		gw_rollup_reset(&r, 0);
		for (i = 0; i < 1000; i++)
			assert_int_equal(gw_rollup_add(&r, (int64_t)i, c), 0);
		assert_true(gw_rollup_stddev(&r) == 0);
	}
	/* Nearly equal: rounding can make E[x^2] - mean^2 negative; the
	 * answer is then 0, never NaN.  (From sum and sumsq alone a spread
	 * below about 1e-7 of the mean is not resolved.) */
	for (double c = 0.1; c < 1e6; c *= 3.1) {
		gw_rollup_reset(&r, 0);
		for (i = 0; i < 1000; i++)
			assert_int_equal(
				gw_rollup_add(&r, (int64_t)i,
					      i % 3 ? c
						    : nextafter(c, INFINITY)),
				0);
		sd = gw_rollup_stddev(&r);
		assert_true(sd >= 0 && sd <= 1e-6 * c);
	}
	/* One value. */
	gw_rollup_reset(&r, 0);
	assert_int_equal(gw_rollup_add(&r, 5, 123.456), 0);
	assert_true(gw_rollup_stddev(&r) == 0);
	assert_true(gw_rollup_mean(&r) == 123.456);
	/* An earlier sample does not replace last. */
	assert_int_equal(gw_rollup_add(&r, 4, 7), 0);
	assert_true(r.last == 123.456 && r.t_last == 5);
	gw_rollup_release(&r);
}

static double gpu_power(uint64_t i)
{
	/* 1/1024 W steps: exact sums, whatever the order. */
	return round((250 + 200 * sin((double)i / 300) + 30 * normal()) *
		     1024) /
	       1024;
}

static void rollup_hour_from_minutes(void **state)
{
	struct gw_rollup hour, min[60], merged;
	struct gw_buf a, b;
	int64_t t0 = 1700000000000;

	(void)state;
	gw_buf_init(&a, BUF_MAX);
	gw_buf_init(&b, BUF_MAX);
	/* Two gauges, then a counter that resets inside minute 16 and at
	 * the start of minute 30. */
	for (int kind = 0; kind < 3; kind++) {
		double c = 0, before = 0;

		seed(7 + (uint64_t)kind);
		gw_rollup_init(&hour, t0 + 3600000);
		gw_rollup_init(&merged, t0 + 3600000);
		for (int m = 0; m < 60; m++)
			gw_rollup_init(&min[m], t0 + (m + 1) * 60000);
		for (int s = 0; s < 3600; s++) {
			int64_t t = t0 + s * 1000 + 17;
			double v = kind == 1 ? gpu_power((uint64_t)s)
					     : (double)(60 + rnd() % 25);

			if (kind == 2) {
				if (s == 1000 || s == 1800)
					before += c;
				c = s == 1000 || s == 1800 ? 3 : c + 7 + s % 5;
				v = c;
			}

			assert_int_equal(gw_rollup_add(&hour, t, v), 0);
			assert_int_equal(gw_rollup_add(&min[s / 60], t, v), 0);
		}
		for (int m = 0; m < 60; m++)
			assert_int_equal(gw_rollup_merge(&merged, &min[m]), 0);
		assert_true(merged.t == hour.t);
		assert_true(merged.count == hour.count);
		assert_true(merged.sum == hour.sum);
		assert_true(merged.min == hour.min);
		assert_true(merged.max == hour.max);
		assert_true(merged.last == hour.last);
		assert_true(merged.t_last == hour.t_last);
		/* first, and the resets: a gauge's are NaN; the counter's
		 * minutes have one reset at most, so the merged hour has the
		 * values before both (the hour fed directly sees a second
		 * decrease and takes itself for a gauge). */
		assert_true(merged.first == hour.first);
		assert_true(merged.t_first == hour.t_first);
		assert_true(isnan(hour.reset));
		if (kind == 2)
			assert_true(merged.reset == before && before > 0);
		else
			assert_true(isnan(merged.reset));
		assert_true(fabs(merged.sumsq - hour.sumsq) <=
			    1e-9 * hour.sumsq);
		assert_sketch_equal(&merged.sk, &hour.sk);
		gw_buf_reset(&a);
		gw_buf_reset(&b);
		assert_int_equal(gw_sketch_encode(&merged.sk, &a), 0);
		assert_int_equal(gw_sketch_encode(&hour.sk, &b), 0);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.p, b.p, a.len);
		/* Merging in reverse order: last still from the latest. */
		gw_rollup_reset(&merged, t0);
		for (int m = 60; m-- > 0;)
			assert_int_equal(gw_rollup_merge(&merged, &min[m]), 0);
		assert_true(merged.last == hour.last && merged.t == t0);
		assert_true(merged.first == hour.first);
		assert_true(kind == 2 ? merged.reset == before
				      : isnan(merged.reset));
		assert_sketch_equal(&merged.sk, &hour.sk);
		for (int m = 0; m < 60; m++)
			gw_rollup_release(&min[m]);
		gw_rollup_release(&hour);
		gw_rollup_release(&merged);
	}
	gw_buf_release(&a);
	gw_buf_release(&b);
}

/* n one-minute rollups, with some empty windows and an irregular gap. */
static struct gw_rollup *build_rollups(size_t n, uint64_t sd)
{
	struct gw_rollup *r = malloc(n * sizeof(*r));
	int64_t t = 1700000040000;

	assert_non_null(r);
	seed(sd);
	for (size_t i = 0; i < n; i++) {
		t += i == n / 2 ? 37 * 60000 + 1 : 60000;
		gw_rollup_init(&r[i], t);
		if (i % 17 == 5)
			continue;
		for (int s = 0; s < 60; s++) {
			double v = i % 2 ? (double)(40 + rnd() % 30)
					 : round((100 + 600 * unif()) * 1000) /
						   1000;

			assert_int_equal(
				gw_rollup_add(&r[i], t - 60000 + s * 1000, v),
				0);
		}
	}
	return r;
}

/* The fields version 2 keeps, bit for bit. */
static void assert_rollup_equal_v2(const struct gw_rollup *a,
				   const struct gw_rollup *b)
{
	assert_true(a->t == b->t);
	assert_true(a->t_last == b->t_last);
	assert_memory_equal(&a->count, &b->count, sizeof(double));
	assert_memory_equal(&a->sum, &b->sum, sizeof(double));
	assert_memory_equal(&a->min, &b->min, sizeof(double));
	assert_memory_equal(&a->max, &b->max, sizeof(double));
	assert_memory_equal(&a->sumsq, &b->sumsq, sizeof(double));
	assert_memory_equal(&a->last, &b->last, sizeof(double));
	assert_sketch_equal(&a->sk, &b->sk);
}

/* All of them: version 3 adds the first sample and the resets. */
static void assert_rollup_equal(const struct gw_rollup *a,
				const struct gw_rollup *b)
{
	assert_rollup_equal_v2(a, b);
	assert_true(a->t_first == b->t_first);
	assert_memory_equal(&a->first, &b->first, sizeof(double));
	assert_memory_equal(&a->reset, &b->reset, sizeof(double));
}

static void chunk_round_trip(void **state)
{
	enum { N = 200 };
	struct gw_rollup *r = build_rollups(N, 8), *d = NULL;
	struct gw_buf b, b2;
	size_t n;

	(void)state;
	gw_buf_init(&b, BUF_MAX);
	gw_buf_init(&b2, BUF_MAX);
	assert_int_equal(gw_rollup_encode(r, N, &b), 0);
	assert_int_equal(gw_rollup_decode((uint8_t *)b.p, b.len, &d, &n), 0);
	assert_int_equal(n, N);
	for (size_t i = 0; i < N; i++)
		assert_rollup_equal(&r[i], &d[i]);
	assert_int_equal(gw_rollup_encode(d, n, &b2), 0);
	assert_int_equal(b.len, b2.len);
	assert_memory_equal(b.p, b2.p, b.len);
	gw_rollup_free_array(d, n);
	/* Zero rollups; and extreme timestamps. */
	gw_buf_reset(&b);
	assert_int_equal(gw_rollup_encode(r, 0, &b), 0);
	assert_int_equal(gw_rollup_decode((uint8_t *)b.p, b.len, &d, &n), 0);
	assert_int_equal(n, 0);
	gw_rollup_free_array(d, n);
	r[0].t = INT64_MIN;
	r[1].t = -1;
	r[2].t = INT64_MAX - 1;
	gw_buf_reset(&b);
	assert_int_equal(gw_rollup_encode(r, 3, &b), 0);
	assert_int_equal(gw_rollup_decode((uint8_t *)b.p, b.len, &d, &n), 0);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < 3; i++)
		assert_rollup_equal(&r[i], &d[i]);
	gw_rollup_free_array(d, n);
	gw_rollup_free_array(r, N);
	gw_buf_release(&b);
	gw_buf_release(&b2);
}

static void chunk_is_compact(void **state)
{
	enum { N = 60 };
	struct gw_rollup r[N];
	struct gw_buf b;
	int64_t t = 1700000040000;

	(void)state;
	/* An hour of one-minute rollups of a steady temperature. */
	gw_buf_init(&b, BUF_MAX);
	seed(9);
	for (int i = 0; i < N; i++) {
		t += 60000;
		gw_rollup_init(&r[i], t);
		for (int s = 0; s < 60; s++) {
			double v = (double)(64 + rnd() % 3);

			assert_int_equal(
				gw_rollup_add(&r[i], t - 60000 + s * 1000, v),
				0);
		}
	}
	assert_int_equal(gw_rollup_encode(r, N, &b), 0);
	print_message("chunk of %d temperature minutes: %zu bytes\n", N, b.len);
	assert_true(b.len < 24 * N);
	for (int i = 0; i < N; i++)
		gw_rollup_release(&r[i]);
	gw_buf_release(&b);
}

/* Encodes n rollups, checks the round trip field by field and that the
 * decoded ones encode to the same bytes; returns the chunk's size. */
static size_t round_trip(const struct gw_rollup *r, size_t n)
{
	struct gw_rollup *d = NULL;
	struct gw_buf b, b2;
	size_t k, len;

	gw_buf_init(&b, BUF_MAX);
	gw_buf_init(&b2, BUF_MAX);
	assert_int_equal(gw_rollup_encode(r, n, &b), 0);
	assert_int_equal(gw_rollup_decode((uint8_t *)b.p, b.len, &d, &k), 0);
	assert_int_equal(k, n);
	for (size_t i = 0; i < n; i++)
		assert_rollup_equal(&r[i], &d[i]);
	assert_int_equal(gw_rollup_encode(d, k, &b2), 0);
	assert_int_equal(b.len, b2.len);
	assert_memory_equal(b.p, b2.p, b.len);
	gw_rollup_free_array(d, k);
	len = b.len;
	gw_buf_release(&b);
	gw_buf_release(&b2);
	return len;
}

/*
 * The common cases cost little: a sparse series (one sample in a minute
 * now and then) and constant windows keep only a value or two each.
 */
static void chunk_common_cases_compact(void **state)
{
	enum { N = 200 };
	struct gw_rollup *r = malloc(N * sizeof(*r));
	int64_t t = 1700000040000;
	size_t len;

	(void)state;
	assert_non_null(r);
	seed(21);
	/* One sample every 10 minutes, a temperature walking around 60. */
	for (size_t i = 0; i < N; i++) {
		t += 600000;
		gw_rollup_init(&r[i], t);
		assert_int_equal(gw_rollup_add(&r[i], t - 60000 + 2,
					       (double)(55 + rnd() % 10)),
				 0);
	}
	len = round_trip(r, N);
	print_message("%d one-sample minutes: %zu bytes\n", N, len);
	assert_true(len < 5 * N);
	/* The same with power readings of three decimals. */
	for (size_t i = 0; i < N; i++) {
		gw_rollup_reset(&r[i], r[i].t);
		assert_int_equal(
			gw_rollup_add(&r[i], r[i].t - 60000 + 2,
				      round((100 + 600 * unif()) * 1000) /
					      1000),
			0);
	}
	len = round_trip(r, N);
	print_message("%d one-sample power minutes: %zu bytes\n", N, len);
	assert_true(len < 11 * N);
	/* Minutes of 60 equal values: a clock, a memory size. */
	for (size_t i = 0; i < N; i++) {
		double v = i % 50 < 25 ? 1410 : 1980 + (double)(i % 3) * 15;

		gw_rollup_reset(&r[i], r[i].t);
		for (int s = 0; s < 60; s++)
			assert_int_equal(
				gw_rollup_add(&r[i], r[i].t - 60000 + s * 1000,
					      v),
				0);
	}
	len = round_trip(r, N);
	print_message("%d constant minutes: %zu bytes\n", N, len);
	assert_true(len < 4 * N);
	gw_rollup_free_array(r, N);
}

/* Everything outside the common cases still comes back bit for bit. */
static void chunk_uncommon_round_trip(void **state)
{
	static const double one[] = { -0.0,	0.0,	   4.9e-324, -2.2e-308,
				      INFINITY, -INFINITY, DBL_MAX,  -3.25,
				      0.1,	1e300 };
	enum { NONE = sizeof(one) / sizeof(one[0]), N = NONE + 12 };
	struct gw_rollup r[N];
	int64_t t = 0;
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		t += 60000;
		gw_rollup_init(&r[i], t);
	}
	/* Single samples of special values, at varying times. */
	for (i = 0; i < NONE; i++)
		assert_int_equal(gw_rollup_add(&r[i],
					       r[i].t - 1 - (int64_t)i % 3,
					       one[i]),
				 0);
	/* Constant windows whose sums are not count * value. */
	for (int s = 0; s < 60; s++) {
		assert_int_equal(gw_rollup_add(&r[i], t - 60000 + s, 0.1), 0);
		assert_int_equal(gw_rollup_add(&r[i + 1], t, 1e300), 0);
		/* -0.0 and 0.0: min and max differ in their bits only. */
		assert_int_equal(
			gw_rollup_add(&r[i + 2], s, s % 2 ? 0.0 : -0.0), 0);
		/* Two buckets; then one bucket, three values. */
		assert_int_equal(gw_rollup_add(&r[i + 3], s, s == 7 ? 90 : 40),
				 0);
		assert_int_equal(
			gw_rollup_add(&r[i + 4], s, 40 + (s % 3) * 0.01), 0);
		/* Negative and positive, last neither min nor max. */
		assert_int_equal(gw_rollup_add(&r[i + 5], s, s - 30.5), 0);
	}
	/* A sketch that lost values (-ENOMEM in an add keeps the totals). */
	assert_int_equal(gw_rollup_add(&r[i + 6], 5, 12), 0);
	assert_int_equal(gw_rollup_add(&r[i + 6], 6, 13), 0);
	gw_sketch_reset(&r[i + 6].sk);
	assert_int_equal(gw_rollup_add(&r[i + 7], 5, 12), 0);
	assert_int_equal(gw_rollup_add(&r[i + 7], 6, 13), 0);
	assert_int_equal(gw_sketch_add(&r[i + 7].sk, 11), 0);
	/* A sketch that counted a NaN, and one of other values. */
	assert_int_equal(gw_rollup_add(&r[i + 8], 5, 12), 0);
	assert_int_equal(gw_sketch_add(&r[i + 8].sk, NAN), 0);
	assert_int_equal(gw_rollup_add(&r[i + 9], 5, 12), 0);
	gw_sketch_reset(&r[i + 9].sk);
	assert_int_equal(gw_sketch_add(&r[i + 9].sk, -7), 0);
	/* Hand-set totals, and a merged hour with an empty window in it. */
	assert_int_equal(gw_rollup_add(&r[i + 10], 5, 12), 0);
	r[i + 10].sum = 11;
	r[i + 10].sumsq = 0;
	r[i + 10].t_last = INT64_MIN;
	r[i + 10].t_first = INT64_MIN;
	assert_int_equal(gw_rollup_merge(&r[i + 11], &r[i + 3]), 0);
	assert_int_equal(gw_rollup_merge(&r[i + 11], &r[i + 5]), 0);
	for (i = 0; i < N; i++)
		round_trip(&r[i], 1);
	round_trip(r, N);
	for (i = 0; i < N; i++)
		gw_rollup_release(&r[i]);
}

static void fix_crc(uint8_t *p, size_t len);

/*
 * The format of one single-sample minute, and the decoder's strictness:
 * the same rollup with something stored that the flags could have implied
 * is refused, so that every chunk has one encoding.
 */
static void chunk_format(void **state)
{
	/* version 2, n 1, t 60000, flags (max, last, sum and sumsq implied,
	 * sketch derived) in a run of 1, count 1, t - t_last 60000, min 5.0
	 * as an XOR double, CRC. */
	static const uint8_t want[] = { 2,    1, 0xc0, 0xa9, 7, 0xb6, 2,
					0,    1, 0xc0, 0xa9, 7, 0x02, 0x40,
					0x14, 0, 0,    0,    0 };
	/* version 3: the same, the flags with t_last - t_first as before
	 * (0), first = min and no reset (0x1736); nothing more stored. */
	static const uint8_t want3[] = { 3,    1, 0xc0, 0xa9, 7, 0xb6, 0x2e,
					 0,    1, 0xc0, 0xa9, 7, 0x02, 0x40,
					 0x14, 0, 0,	0,    0 };
	/* version 4: the same, min in decimal (mode byte e 0, no bits for
	 * ulps; then zigzag(5 - 0) = 10) where XOR took three bytes. */
	static const uint8_t want4[] = { 4,    1,    0xc0, 0xa9, 7,    0xb6,
					 0x2e, 0,    1,	   0xc0, 0xa9, 7,
					 0x00, 0x0a, 0,	   0,	 0,    0 };
	uint8_t p[64];
	struct gw_rollup r, *d;
	struct gw_buf b;
	size_t n, len;

	(void)state;
	gw_rollup_init(&r, 60000);
	assert_int_equal(gw_rollup_add(&r, 0, 5.0), 0);
	gw_buf_init(&b, BUF_MAX);
	assert_int_equal(gw_rollup_encode(&r, 1, &b), 0);
	memcpy(p, want4, sizeof(want4));
	fix_crc(p, sizeof(want4));
	assert_int_equal(b.len, sizeof(want4));
	assert_memory_equal(b.p, p, sizeof(want4));
	assert_int_equal(gw_rollup_decode(p, sizeof(want4), &d, &n), 0);
	assert_rollup_equal(&r, d);
	gw_rollup_free_array(d, n);
	/* Decimal only where it is the encoder's choice: the same value
	 * at e 1 (50), or with a bit for ulps it does not need, is refused;
	 * so is the column in XOR doubles, which are longer here. */
	p[12] = 0x01;
	p[13] = 0x64;
	fix_crc(p, sizeof(want4));
	assert_int_equal(gw_rollup_decode(p, sizeof(want4), &d, &n), -EBADMSG);
	p[12] = 0x20;
	p[13] = 0x14;
	fix_crc(p, sizeof(want4));
	assert_int_equal(gw_rollup_decode(p, sizeof(want4), &d, &n), -EBADMSG);
	memcpy(p, want4, 12);
	memcpy(p + 12, "\xff\x02\x40\x14", 4);
	fix_crc(p, 20);
	assert_int_equal(gw_rollup_decode(p, 20, &d, &n), -EBADMSG);
	/* Version 3 is still read, and written again as version 4. */
	memcpy(p, want3, sizeof(want3));
	fix_crc(p, sizeof(want3));
	assert_int_equal(gw_rollup_decode(p, sizeof(want3), &d, &n), 0);
	assert_rollup_equal(&r, d);
	gw_buf_reset(&b);
	assert_int_equal(gw_rollup_encode(d, 1, &b), 0);
	assert_int_equal(b.len, sizeof(want4));
	gw_rollup_free_array(d, n);
	/* Version 2 is still read: the first sample and the resets are not
	 * known (reset NaN), and such rollups are written as version 2. */
	memcpy(p, want, sizeof(want));
	fix_crc(p, sizeof(want));
	assert_int_equal(gw_rollup_decode(p, sizeof(want), &d, &n), 0);
	assert_rollup_equal_v2(&r, d);
	assert_true(isnan(d->reset) && isnan(d->first));
	assert_false(gw_rollup_has_first(d));
	gw_buf_reset(&b);
	assert_int_equal(gw_rollup_encode(d, 1, &b), 0);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.p, p, sizeof(want));
	gw_rollup_free_array(d, n);
	/* Version 2 knows no flag past bit 8. */
	p[6] = 0x2e;
	fix_crc(p, sizeof(want));
	assert_int_equal(gw_rollup_decode(p, sizeof(want), &d, &n), -EBADMSG);
	/* max stored rather than implied (flags without bit 1). */
	memcpy(p, want, 12);
	p[5] = 0xb4;
	memcpy(p + 12, "\x02\x40\x14\x02\x40\x14", 6);
	fix_crc(p, 22);
	assert_int_equal(gw_rollup_decode(p, 22, &d, &n), -EBADMSG);
	assert_null(d);
	/* The same, flags and all, is accepted. */
	p[5] = 0xb6;
	fix_crc(p, 19);
	assert_int_equal(gw_rollup_decode(p, 19, &d, &n), 0);
	assert_rollup_equal_v2(&r, d);
	gw_rollup_free_array(d, n);
	/* The sketch stored in full rather than derived. */
	memcpy(p, want, 15);
	p[5] = 0x36; /* flags 0x36: sketch in full */
	gw_buf_reset(&b);
	assert_int_equal(gw_sketch_encode(&r.sk, &b), 0);
	assert_true(15 + b.len + 4 <= sizeof(p));
	memcpy(p + 15, b.p, b.len);
	len = 15 + b.len + 4;
	fix_crc(p, len);
	assert_int_equal(gw_rollup_decode(p, len, &d, &n), -EBADMSG);
	/* A run of flags longer than the chunk, and an unknown flag. */
	memcpy(p, want, sizeof(want));
	p[7] = 1;
	fix_crc(p, sizeof(want));
	assert_int_equal(gw_rollup_decode(p, sizeof(want), &d, &n), -EBADMSG);
	memcpy(p, want, sizeof(want));
	p[6] = 6; /* flags 0x336: sketch form 3 */
	fix_crc(p, sizeof(want));
	assert_int_equal(gw_rollup_decode(p, sizeof(want), &d, &n), -EBADMSG);
	gw_buf_release(&b);
	gw_rollup_release(&r);
}

static void chunk_encode_errors(void **state)
{
	struct gw_rollup *r = build_rollups(10, 10);
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, BUF_MAX);
	assert_int_equal(gw_buf_add(&b, "hdr", 3), 0);
	r[4].t = r[3].t;
	assert_int_equal(gw_rollup_encode(r, 10, &b), -EINVAL);
	r[4].t = r[3].t + 1;
	r[2].count = 2.5;
	assert_int_equal(gw_rollup_encode(r, 10, &b), -EINVAL);
	r[2].count = 60;
	r[3].last = r[3].max + 1;
	assert_int_equal(gw_rollup_encode(r, 10, &b), -EINVAL);
	r[3].last = r[3].max;
	assert_int_equal(gw_rollup_encode(r, GW_ROLLUP_CHUNK_MAX + 1, &b),
			 -EINVAL);
	assert_int_equal(b.len, 3);
	gw_buf_release(&b);
	gw_buf_init(&b, 100);
	assert_int_equal(gw_buf_add(&b, "hdr", 3), 0);
	assert_int_equal(gw_rollup_encode(r, 10, &b), -ENOSPC);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.p, "hdr");
	gw_buf_release(&b);
	gw_rollup_free_array(r, 10);
}

static void fix_crc(uint8_t *p, size_t len)
{
	uint32_t c = gw_crc32c(0, p, len - 4);

	p[len - 4] = (uint8_t)c;
	p[len - 3] = (uint8_t)(c >> 8);
	p[len - 2] = (uint8_t)(c >> 16);
	p[len - 1] = (uint8_t)(c >> 24);
}

static void chunk_truncated_and_corrupt(void **state)
{
	enum { N = 12 };
	struct gw_rollup *r = build_rollups(N, 11), *d;
	struct gw_buf b, b2;
	size_t n, ok = 0;
	uint8_t *p;

	(void)state;
	/* The checksum is CRC-32C. */
	assert_int_equal(gw_crc32c(0, "123456789", 9), 0xe3069283);
	gw_buf_init(&b, BUF_MAX);
	gw_buf_init(&b2, BUF_MAX);
	assert_int_equal(gw_rollup_encode(r, N, &b), 0);
	for (size_t len = 0; len < b.len; len++) {
		uint8_t *q = malloc(len ? len : 1);

		assert_non_null(q);
		memcpy(q, b.p, len);
		assert_int_equal(gw_rollup_decode(q, len, &d, &n), -EBADMSG);
		assert_null(d);
		/* Even with the checksum made right. */
		if (len >= 6) {
			fix_crc(q, len);
			assert_int_equal(gw_rollup_decode(q, len, &d, &n),
					 -EBADMSG);
		}
		free(q);
	}
	p = malloc(b.len);
	assert_non_null(p);
	seed(12);
	for (int it = 0; it < 6000; it++) {
		int rc;

		memcpy(p, b.p, b.len);
		/* One changed byte: the checksum catches it. */
		size_t at = rnd() % b.len;
		p[at] ^= (uint8_t)(1 + rnd() % 255);
		assert_int_equal(gw_rollup_decode(p, b.len, &d, &n), -EBADMSG);
		/* With the checksum fixed: the parser itself. */
		if (rnd() % 2)
			p[rnd() % b.len] = (uint8_t)rnd();
		fix_crc(p, b.len);
		rc = gw_rollup_decode(p, b.len, &d, &n);
		assert_true(rc == 0 || rc == -EBADMSG);
		if (rc == 0) {
			ok++;
			gw_buf_reset(&b2);
			assert_int_equal(gw_rollup_encode(d, n, &b2), 0);
			assert_int_equal(b2.len, b.len);
			assert_memory_equal(b2.p, p, b.len);
			for (size_t i = 0; i < n; i++)
				check_decoded(&d[i].sk);
			gw_rollup_free_array(d, n);
		}
	}
	assert_true(ok > 0);
	free(p);
	gw_rollup_free_array(r, N);
	gw_buf_release(&b);
	gw_buf_release(&b2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(accuracy_distributions),
		cmocka_unit_test(accuracy_wide_range),
		cmocka_unit_test(accuracy_bucket_edges),
		cmocka_unit_test(quantile_interpolates_as_prometheus),
		cmocka_unit_test(nan_is_ignored),
		cmocka_unit_test(infinities),
		cmocka_unit_test(zeros_and_subnormals),
		cmocka_unit_test(add_n_is_n_adds),
		cmocka_unit_test(merge_exact),
		cmocka_unit_test(merge_self_and_empty),
		cmocka_unit_test(collapse_keeps_upper),
		cmocka_unit_test(encode_round_trip),
		cmocka_unit_test(encode_is_compact),
		cmocka_unit_test(encode_leaves_buffer_on_error),
		cmocka_unit_test(decode_truncated_and_corrupt),
		cmocka_unit_test(decode_rejects),
		cmocka_unit_test(rollup_stats),
		cmocka_unit_test(rollup_hour_from_minutes),
		cmocka_unit_test(chunk_round_trip),
		cmocka_unit_test(chunk_is_compact),
		cmocka_unit_test(chunk_common_cases_compact),
		cmocka_unit_test(chunk_uncommon_round_trip),
		cmocka_unit_test(chunk_format),
		cmocka_unit_test(chunk_encode_errors),
		cmocka_unit_test(chunk_truncated_and_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
