/* SPDX-License-Identifier: MIT */
/*
 * promql_eval_fx.c - what test_promql_eval.c and test_promql_exec.c share,
 * included by both (as fake_queryable.c is): the in-memory store with one
 * fixture per test, queries run and checked (instant and range, results,
 * errors, JSON).  Every helper here is used by both files.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "query/promql.h"

#include "fake_queryable.c"

#define SEC  1000LL
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define B    (1000 * HOUR) /* an hour boundary */

static struct gw_pq_node *parse(const char *q)
{
	struct gw_promql_error err;
	struct gw_pq_node *n = NULL;

	if (gw_promql_parse(q, &n, &err))
		fail_msg("%s: %s", q, err.msg);
	return n;
}

/* ---- the store ---- */

struct fx {
	struct gw_fakeq *f;
	struct gw_queryable q;
	struct gw_promql_opts o;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x || gw_fakeq_new(&x->f)) {
		free(x);
		return -1;
	}
	gw_fakeq_queryable(x->f, &x->q);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	gw_fakeq_free(x->f);
	free(x);
	return 0;
}

/* A series with n samples at t0, t0 + dt, ... */
static size_t series(struct fx *x, const char *name, const char *labels,
		     int64_t t0, int64_t dt, size_t n, const double *v)
{
	size_t id;

	assert_int_equal(gw_fakeq_series(x->f, name, labels, &id), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(
			gw_fakeq_sample(x->f, id, t0 + (int64_t)i * dt, v[i]),
			0);
	return id;
}

static void one(struct fx *x, const char *name, const char *labels, int64_t t,
		double v)
{
	series(x, name, labels, t, 1, 1, &v);
}

/* Evaluates query q at t; the query must succeed. */
static void inst(struct fx *x, const char *q, int64_t t, struct gw_qresult *r)
{
	struct gw_pq_node *e = parse(q);
	int rc = gw_promql_eval_instant(e, &x->q, t, &x->o, r);

	if (rc)
		fail_msg("%s: %d %s", q, rc, r->errmsg);
	assert_int_equal(r->err, GW_QERR_NONE);
	gw_promql_free(e);
}

/* Evaluates query q from start to end; returns what eval_range did. */
static int range(struct fx *x, const char *q, int64_t start, int64_t end,
		 int64_t step, struct gw_qresult *r)
{
	struct gw_pq_node *e = parse(q);
	int rc = gw_promql_eval_range(e, &x->q, start, end, step, &x->o, r);

	gw_promql_free(e);
	return rc;
}

static void check_err(struct gw_qresult *r, int rc, enum gw_qerr kind,
		      const char *msg)
{
	assert_true(rc < 0);
	assert_int_equal(r->err, kind);
	if (strstr(r->errmsg, msg) == NULL)
		fail_msg("message \"%s\" lacks \"%s\"", r->errmsg, msg);
	assert_int_equal(r->nseries, 0);
	assert_null(r->series);
	gw_qresult_release(r);
}

/* Evaluates q at t, expecting failure kind with msg in the message. */
static void inst_err(struct fx *x, const char *q, int64_t t, enum gw_qerr kind,
		     const char *msg)
{
	struct gw_pq_node *e = parse(q);
	struct gw_qresult r;
	int rc = gw_promql_eval_instant(e, &x->q, t, &x->o, &r);

	check_err(&r, rc, kind, msg);
	gw_promql_free(e);
}

/* The same for a tree built by hand (and freed here). */

static const struct gw_qseries *find(const struct gw_qresult *r,
				     const char *key)
{
	struct gw_buf b;
	const struct gw_qseries *s = NULL;

	gw_buf_init(&b, 1 << 16);
	for (size_t i = 0; i < r->nseries && !s; i++) {
		gw_buf_reset(&b);
		assert_int_equal(gw_labels_key(&r->series[i].labels, &b), 0);
		if (strcmp(b.p, key) == 0)
			s = &r->series[i];
	}
	gw_buf_release(&b);
	return s;
}

/* The value of series key in an instant vector result. */
static double val(const struct gw_qresult *r, const char *key)
{
	const struct gw_qseries *s = find(r, key);

	if (!s)
		fail_msg("no series %s", key);
	assert_int_equal(s->n, 1);
	return s->p[0].v;
}

#define assert_near(a, b)                                                      \
	do {                                                                   \
		double a_ = (a), b_ = (b);                                     \
		if (!(fabs(a_ - b_) <= 1e-9 * fmax(1, fabs(b_))))              \
			fail_msg("%s = %.17g, want %.17g", #a, a_, b_);        \
	} while (0)

/* Evaluates e at t: the value of its only series. */
static double inst1(struct fx *x, const char *q, int64_t t)
{
	struct gw_qresult r;
	double v;

	inst(x, q, t, &r);
	assert_int_equal(r.type, GW_TYPE_VECTOR);
	if (r.nseries != 1)
		fail_msg("%zu series, want 1", r.nseries);
	v = r.series[0].p[0].v;
	gw_qresult_release(&r);
	return v;
}

/* Evaluates e at t: no series. */
static void inst0(struct fx *x, const char *q, int64_t t)
{
	struct gw_qresult r;

	inst(x, q, t, &r);
	assert_int_equal(r.type, GW_TYPE_VECTOR);
	assert_int_equal(r.nseries, 0);
	gw_qresult_release(&r);
}

static char *json(const struct gw_qresult *r)
{
	struct gw_buf b;

	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_qresult_json(r, &b), 0);
	return gw_buf_detach(&b, NULL);
}

static void assert_json(const struct gw_qresult *r, const char *want)
{
	char *got = json(r);

	if (strcmp(got, want) != 0)
		fail_msg("got  %s\nwant %s", got, want);
	free(got);
}
