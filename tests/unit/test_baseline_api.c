// SPDX-License-Identifier: MIT
/*
 * test_baseline_api.c - /api/v1/baseline over an in-memory history: the
 * scores it answers are the deployed detector's (run here directly on the
 * same samples), a one-sample spike between two steps is the step's point
 * and lies outside the band every normal value lies inside, its episode is
 * reported, the warm-up is honoured, and store failures are the API's
 * usual errors.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api_fx.c"
#include "http/api.h"
#include "pipeline/detect.h"

#define T0    1000000000LL /* ms: the first sample */
#define N     1200	   /* samples, one a second */
#define SPIKE 900	   /* the sample that jumps */

static double value_at(int i)
{
	/* A deterministic wander of +-5 around 300, and one spike. */
	uint32_t x = (uint32_t)i * 2654435761u;

	return i == SPIKE ? 400 : 300 + (double)(x >> 22) / 1024.0 * 10 - 5;
}

static int setup(void **state)
{
	struct fix *x = calloc(1, sizeof(*x));
	size_t id;

	assert_non_null(x);
	assert_int_equal(gw_fakeq_new(&x->f), 0);
	assert_int_equal(gw_fakeq_series(x->f, "power", "gpu=\"0\"", &id), 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(
			gw_fakeq_sample(x->f, id, T0 + i * 1000LL, value_at(i)),
			0);
	gw_fakeq_queryable(x->f, &x->q);
	*state = x;
	return 0;
}

static char *call(const struct gw_queryable *q, const struct gw_api_opts *o,
		  unsigned int *status, ...)
{
	struct gw_api_request rq = {
		.path = "/api/v1/baseline",
		.now_ms = T0 + N * 1000LL,
	};
	char *body;
	va_list ap;

	va_start(ap, status);
	*status = api_run(q, o, &rq, 0, &body, ap);
	va_end(ap);
	return body;
}

/* The [t,"v"] pairs of column name: times in ms, at most max. */
static size_t column(const char *body, const char *name, int64_t *t, double *v,
		     size_t max)
{
	char key[32];
	const char *s;
	size_t n = 0;

	snprintf(key, sizeof(key), "\"%s\":[", name);
	s = strstr(body, key);
	assert_non_null(s);
	s += strlen(key);
	while (*s == '[' && n < max) {
		double ts;
		int used = 0;

		assert_int_equal(
			sscanf(s, "[%lf,\"%lf\"]%n", &ts, &v[n], &used), 2);
		t[n++] = llround(ts * 1000);
		s += used;
		if (*s == ',')
			s++;
	}
	return n;
}

static char num[64];
static const char *sec(int64_t ms)
{
	snprintf(num, sizeof(num), "%.3f", (double)ms / 1000);
	return num;
}

/* Every step's score is the highest the detector gives the samples of
 * (t - step, t]; a spike between steps is its step's point, outside the
 * band; normal values are inside. */
static void scores_band_and_spike(void **state)
{
	struct fix *x = *state;
	static int64_t ts[N], tl[N], tu[N], tv[N];
	static double sc[N], lo[N], up[N], val[N], ref[N];
	struct gw_detect_config cfg;
	struct gw_detect d;
	int64_t start = T0 + 600000, end = T0 + (N - 1) * 1000LL, step = 10000;
	char a[80], b[80];
	unsigned int status;
	size_t ns, nl, nu, nv, inside = 0;
	char *body;

	snprintf(a, sizeof(a), "start=%s", sec(start));
	snprintf(b, sizeof(b), "end=%s", sec(end));
	body = call(&x->q, NULL, &status, "query=power{gpu=\"0\"}", a, b,
		    "step=10", "warmup=10m", NULL);
	assert_int_equal(status, 200);
	assert_non_null(strstr(body, "\"resultType\":\"baseline\""));
	assert_non_null(strstr(body, "\"threshold\":\"0.9\""));
	ns = column(body, "score", ts, sc, N);
	nl = column(body, "lower", tl, lo, N);
	nu = column(body, "upper", tu, up, N);
	nv = column(body, "values", tv, val, N);
	assert_int_equal(nv, (size_t)((end - start) / step + 1));
	assert_int_equal(nl, nv);
	assert_int_equal(nu, nv);
	assert_int_equal(ns, nv); /* one sample a second: every step judged */

	/* The detector itself on the same samples, from the warm-up on. */
	assert_int_equal(gw_detect_config_init(&cfg, NULL), 0);
	gw_detect_init(&d);
	for (size_t k = 0; k < ns; k++)
		ref[k] = -1;
	for (int i = 0; i < N; i++) {
		enum gw_detect_event ev;
		int64_t t = T0 + i * 1000LL;
		double s = gw_detect_update(&d, &cfg, t, value_at(i), &ev);

		if (t <= start - step || isnan(s))
			continue;
		/* its step: the first step time at or after t */
		size_t k = (size_t)((t - start + step - 1) / step);

		if (k < ns && s > ref[k])
			ref[k] = s;
	}
	for (size_t k = 0; k < ns; k++) {
		assert_int_equal(ts[k], start + (int64_t)k * step);
		/* (sent to 9 significant digits) */
		assert_true(fabs(sc[k] - ref[k]) <= 1e-9);
	}
	/* The spike's step shows the spike, outside its band. */
	for (size_t k = 0; k < nv; k++) {
		int64_t spike = T0 + SPIKE * 1000LL;

		if (tv[k] - step < spike && spike <= tv[k]) {
			assert_true(val[k] == 400);
			assert_true(val[k] > up[k]);
			assert_true(sc[k] >= 0.9);
		} else if (tv[k] < spike) {
			assert_true(lo[k] <= val[k] && val[k] <= up[k]);
			assert_true(sc[k] < 0.9);
			inside++;
		}
	}
	assert_true(inside >= 25);
	/* One episode, opened by the spike. */
	assert_non_null(strstr(body, "\"episodes\":[{\"onset\":1000900,"));
	free(body);
}

/* Without a warm-up the model learns in the range: no point for its first
 * 64 samples. */
static void warmup_honoured(void **state)
{
	struct fix *x = *state;
	static int64_t t[N];
	static double v[N];
	unsigned int status;
	char *body;
	size_t n;

	body = call(&x->q, NULL, &status, "query=power", "start=1000000",
		    "end=1000200", "step=1", "warmup=0", NULL);
	assert_int_equal(status, 200);
	n = column(body, "values", t, v, N);
	assert_true(n > 100);
	assert_true(t[0] >= T0 + 63000);
	free(body);
	/* With one, from the first step. */
	body = call(&x->q, NULL, &status, "query=power", "start=1000100",
		    "end=1000200", "step=1", NULL);
	assert_int_equal(status, 200);
	n = column(body, "values", t, v, N);
	assert_int_equal(n, 101);
	assert_int_equal(t[0], T0 + 100000);
	free(body);
}

/* The store's failures and the sample limit: the API's usual envelopes. */
static void failures(void **state)
{
	struct fix *x = *state;
	struct gw_api_opts o = { .max_samples = 100 };
	unsigned int status;
	char *body;

	gw_fakeq_fail(x->f, -ETIMEDOUT);
	body = call(&x->q, NULL, &status, "query=power", "start=1000000",
		    "end=1000200", "step=1", NULL);
	assert_int_equal(status, 503);
	assert_non_null(strstr(body, "\"errorType\":\"timeout\""));
	free(body);
	body = call(&x->q, &o, &status, "query=power", "start=1000000",
		    "end=1000200", "step=1", NULL);
	assert_int_equal(status, 422);
	assert_non_null(strstr(body, "too many samples"));
	free(body);
	body = call(&x->q, NULL, &status, "query=power{", "start=1", "end=2",
		    "step=1", NULL);
	assert_int_equal(status, 400);
	assert_non_null(strstr(body, "invalid parameter \\\"query\\\""));
	free(body);
	body = call(&x->q, NULL, &status, "query={gpu=~\".*\"}", "start=1",
		    "end=2", "step=1", NULL);
	assert_int_equal(status, 400);
	assert_non_null(strstr(body, "non-empty matcher"));
	free(body);
	body = call(&x->q, NULL, &status, "query=power", "start=1", "end=2",
		    "step=1", "warmup=-5", NULL);
	assert_int_equal(status, 400);
	free(body);
	body = call(&x->q, NULL, &status, "query=power", "start=x", "end=2",
		    "step=1", NULL);
	assert_int_equal(status, 400);
	assert_non_null(strstr(body, "\\\"start\\\""));
	free(body);
	/* No store: 503, as every query endpoint. */
	body = call(NULL, NULL, &status, "query=power", "start=1", "end=2",
		    "step=1", NULL);
	assert_int_equal(status, 503);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scores_band_and_spike),
		cmocka_unit_test(warmup_honoured),
		cmocka_unit_test(failures),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
