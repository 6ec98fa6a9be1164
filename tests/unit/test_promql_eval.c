/* SPDX-License-Identifier: MIT */
/*
 * test_promql_eval.c - the PromQL evaluator against an in-memory store:
 * what a query returns (values worked out by hand), on raw samples and on
 * rollup tiers, its errors, its limits, its cancel flag and its JSON.
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

/* ---- expressions built by hand (trees the parser would refuse) ---- */

static struct gw_pq_node *node(enum gw_pq_kind k, enum gw_pq_type ty)
{
	struct gw_pq_node *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	n->kind = k;
	n->type = ty;
	return n;
}

static struct gw_pq_node *num(double v)
{
	struct gw_pq_node *n = node(GW_PQ_NUMBER, GW_TYPE_SCALAR);

	n->u.num = v;
	return n;
}

static struct gw_pq_node *str(const char *s)
{
	struct gw_pq_node *n = node(GW_PQ_STRING, GW_TYPE_STRING);

	n->u.str = strdup(s);
	return n;
}

/* name or name[range] */
static struct gw_pq_node *sel(const char *name, int64_t range)
{
	struct gw_pq_node *n = node(range ? GW_PQ_MATRIX : GW_PQ_SELECTOR,
				    range ? GW_TYPE_MATRIX : GW_TYPE_VECTOR);

	n->u.sel.m = calloc(1, sizeof(*n->u.sel.m));
	assert_non_null(n->u.sel.m);
	n->u.sel.nm = 1;
	n->u.sel.range_ms = range;
	assert_int_equal(gw_matcher_init(&n->u.sel.m[0], GW_MATCH_EQ,
					 "__name__", name, NULL, 0),
			 0);
	n->u.sel.name = strdup(name);
	return n;
}

static struct gw_pq_node *call(enum gw_pq_func fn, size_t nargs,
			       struct gw_pq_node *arg)
{
	struct gw_pq_node *n = node(GW_PQ_CALL, GW_TYPE_VECTOR);

	n->u.call.fn = fn;
	n->u.call.nargs = nargs;
	n->u.call.args = calloc(1, sizeof(*n->u.call.args));
	n->u.call.args[0] = arg;
	return n;
}

static struct gw_pq_node *bin(enum gw_pq_binop op, struct gw_pq_node *l,
			      struct gw_pq_node *r)
{
	struct gw_pq_node *n = node(GW_PQ_BINARY, GW_TYPE_VECTOR);

	n->u.bin.op = op;
	n->u.bin.lhs = l;
	n->u.bin.rhs = r;
	return n;
}

static struct gw_pq_node *wrap(enum gw_pq_kind k, struct gw_pq_node *x)
{
	struct gw_pq_node *n = node(k, x->type);

	n->u.inner = x;
	return n;
}

static void tree_free(struct gw_pq_node *n)
{
	if (!n)
		return;
	switch (n->kind) {
	case GW_PQ_STRING:
		free(n->u.str);
		break;
	case GW_PQ_SELECTOR:
	case GW_PQ_MATRIX:
		for (size_t i = 0; i < n->u.sel.nm; i++)
			gw_matcher_release(&n->u.sel.m[i]);
		free(n->u.sel.m);
		free(n->u.sel.name);
		break;
	case GW_PQ_CALL:
		for (size_t i = 0; i < n->u.call.nargs; i++)
			tree_free(n->u.call.args[i]);
		free(n->u.call.args);
		break;
	case GW_PQ_BINARY:
		tree_free(n->u.bin.lhs);
		tree_free(n->u.bin.rhs);
		break;
	case GW_PQ_NEG:
	case GW_PQ_PAREN:
		tree_free(n->u.inner);
		break;
	default:
		break;
	}
	free(n);
}

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
static void tree_err(struct fx *x, struct gw_pq_node *e, int64_t t,
		     enum gw_qerr kind, const char *msg)
{
	struct gw_qresult r;
	int rc = gw_promql_eval_instant(e, &x->q, t, &x->o, &r);

	check_err(&r, rc, kind, msg);
	tree_free(e);
}

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

/* ---- number and JSON formatting ---- */

static void fmt(double v, const char *want)
{
	struct gw_buf b;

	gw_buf_init(&b, 4096);
	assert_int_equal(gw_promql_fmt_value(&b, v), 0);
	if (strcmp(b.p, want) != 0)
		fail_msg("%.17g formats as %s, want %s", v, b.p, want);
	gw_buf_release(&b);
}

static void format_values_as_go(void **state)
{
	struct gw_buf b;

	(void)state;
	fmt(1, "1");
	fmt(0.1, "0.1");
	fmt(1.5, "1.5");
	fmt(-2.25, "-2.25");
	fmt(100, "100");
	fmt(0, "0");
	fmt(1e21, "1000000000000000000000");
	fmt(1e-7, "0.0000001");
	fmt(1.0 / 3, "0.3333333333333333");
	fmt(2.0 / 3, "0.6666666666666666");
	fmt(123456789.125, "123456789.125");
	fmt(9007199254740993.0, "9007199254740992");
	fmt(0.1 + 0.2, "0.30000000000000004");
	fmt(1e23, "100000000000000000000000");
	fmt(NAN, "NaN");
	fmt(INFINITY, "+Inf");
	fmt(-INFINITY, "-Inf");
	/* The extremes fit. */
	gw_buf_init(&b, 4096);
	assert_int_equal(gw_promql_fmt_value(&b, 1.7976931348623157e308), 0);
	assert_int_equal(b.len, 309);
	assert_memory_equal(b.p, "17976931348623157", 17);
	assert_int_equal(strspn(b.p + 17, "0"), 292);
	gw_buf_reset(&b);
	assert_int_equal(gw_promql_fmt_value(&b, -5e-324), 0);
	assert_int_equal(b.len, 3 + 323 + 1);
	assert_memory_equal(b.p, "-0.000", 6);
	assert_int_equal(b.p[b.len - 1], '5');
	gw_buf_release(&b);
	/* A full buffer is an error, not a cut value. */
	gw_buf_init(&b, 4);
	assert_int_equal(gw_promql_fmt_value(&b, 12345), -ENOSPC);
	gw_buf_release(&b);
}

static struct gw_qseries mkseries(const char *name, const char *labels,
				  size_t n, const struct gw_qpoint *p)
{
	struct gw_qseries s;

	assert_int_equal(gw_labels_parse(&s.labels, name, labels), 0);
	s.p = malloc(n * sizeof(*s.p));
	memcpy(s.p, p, n * sizeof(*p));
	s.n = n;
	return s;
}

static void json_shapes(void **state)
{
	struct gw_qresult r;
	struct gw_qpoint p1[] = { { 1435781451781, 1 } };
	struct gw_qpoint p2[] = { { 1435781430781, 1 },
				  { 1435781445781, 0.5 },
				  { 1435781460000, NAN } };
	struct gw_buf b;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.type = GW_TYPE_VECTOR;
	r.series = calloc(2, sizeof(*r.series));
	r.series[0] = mkseries(
		"up", "job=\"prometheus\",instance=\"localhost:9090\"", 1, p1);
	r.series[1] = mkseries("up", "job=\"node\",instance=\"localhost:9100\"",
			       1, p1);
	r.nseries = 2;
	assert_json(&r,
		    "{\"resultType\":\"vector\",\"result\":["
		    "{\"metric\":{\"__name__\":\"up\",\"instance\":\"localhost:"
		    "9090\","
		    "\"job\":\"prometheus\"},\"value\":[1435781451.781,\"1\"]},"
		    "{\"metric\":{\"__name__\":\"up\",\"instance\":\"localhost:"
		    "9100\","
		    "\"job\":\"node\"},\"value\":[1435781451.781,\"1\"]}]}");
	r.type = GW_TYPE_MATRIX;
	free(r.series[1].p);
	r.series[1].p = malloc(sizeof(p2));
	memcpy(r.series[1].p, p2, sizeof(p2));
	r.series[1].n = 3;
	assert_json(
		&r,
		"{\"resultType\":\"matrix\",\"result\":["
		"{\"metric\":{\"__name__\":\"up\",\"instance\":\"localhost:"
		"9090\","
		"\"job\":\"prometheus\"},\"values\":[[1435781451.781,\"1\"]]},"
		"{\"metric\":{\"__name__\":\"up\",\"instance\":\"localhost:"
		"9100\","
		"\"job\":\"node\"},\"values\":[[1435781430.781,\"1\"],["
		"1435781445."
		"781,\"0.5\"],[1435781460,\"NaN\"]]}]}");
	gw_qresult_release(&r);
	assert_null(r.series);

	/* Empty results are empty arrays. */
	memset(&r, 0, sizeof(r));
	r.type = GW_TYPE_VECTOR;
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":[]}");
	r.type = GW_TYPE_MATRIX;
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":[]}");

	r.type = GW_TYPE_SCALAR;
	r.scalar.t = 1435781451781;
	r.scalar.v = -INFINITY;
	assert_json(&r, "{\"resultType\":\"scalar\",\"result\":[1435781451.781,"
			"\"-Inf\"]}");
	r.scalar.t = 1500;
	r.scalar.v = 1e-7;
	assert_json(
		&r,
		"{\"resultType\":\"scalar\",\"result\":[1.5,\"0.0000001\"]}");
	r.scalar.t = 10;
	assert_json(
		&r,
		"{\"resultType\":\"scalar\",\"result\":[0.01,\"0.0000001\"]}");
	r.scalar.t = -1500;
	assert_json(
		&r,
		"{\"resultType\":\"scalar\",\"result\":[-1.5,\"0.0000001\"]}");

	r.type = GW_TYPE_STRING;
	r.scalar.t = 1435781460000;
	r.str = strdup("a \"quoted\"\nline");
	assert_json(&r, "{\"resultType\":\"string\",\"result\":[1435781460,\"a "
			"\\\"quoted\\\"\\nline\"]}");
	/* Appends, and leaves the buffer as it was when it does not fit. */
	gw_buf_init(&b, 40);
	assert_int_equal(gw_buf_adds(&b, "x"), 0);
	assert_int_equal(gw_qresult_json(&r, &b), -ENOSPC);
	assert_string_equal(b.p, "x");
	gw_buf_release(&b);
	gw_qresult_release(&r);
	assert_null(r.str);
}

/* ---- selectors ---- */

static void instant_selector_lookback_and_offset(void **state)
{
	struct fx *x = *state;
	const double v[] = { 1, 2, 3 };
	struct gw_qresult r;

	series(x, "m", "job=\"a\"", B, 15 * SEC, 3, v); /* B, B+15s, B+30s */
	one(x, "m", "job=\"b\"", B - 10 * MIN, 7);
	one(x, "other", "job=\"a\"", B, 9);

	assert_near(inst1(x, "m", B + 30 * SEC), 3);
	assert_near(inst1(x, "m", B + 29 * SEC), 2);
	/* The lookback window (t - 5m, t] is open on the left. */
	assert_near(inst1(x, "m", B + 30 * SEC + 5 * MIN - 1), 3);
	inst0(x, "m", B + 30 * SEC + 5 * MIN);
	inst0(x, "m", B - 1);
	/* Offset moves the evaluation back; the result keeps its time. */
	inst(x, "m offset 10s", B + 30 * SEC, &r);
	assert_int_equal(r.nseries, 1);
	assert_near(r.series[0].p[0].v, 2);
	assert_int_equal(r.series[0].p[0].t, B + 30 * SEC);
	gw_qresult_release(&r);
	assert_near(inst1(x, "m offset -30s", B), 3);

	/* A longer lookback finds the old series; results sorted. */
	x->o.lookback_ms = 20 * MIN;
	inst(x, "m", B + 30 * SEC, &r);
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":["
			"{\"metric\":{\"__name__\":\"m\",\"job\":\"a\"},"
			"\"value\":[3600030,\"3\"]},"
			"{\"metric\":{\"__name__\":\"m\",\"job\":\"b\"},"
			"\"value\":[3600030,\"7\"]}]}");
	gw_qresult_release(&r);

	/* Matchers other than the name. */
	inst(x, "{__name__=~\"m|other\", job!=\"b\"}", B + 30 * SEC, &r);
	assert_int_equal(r.nseries, 2);
	assert_near(val(&r, "m{job=\"a\"}"), 3);
	assert_near(val(&r, "other{job=\"a\"}"), 9);
	gw_qresult_release(&r);
}

static void instant_range_selector_is_matrix(void **state)
{
	struct fx *x = *state;
	const double v[] = { 1, 2, 3, 4 };
	struct gw_qresult r;

	series(x, "m", "job=\"a\"", B, 15 * SEC, 4, v);
	/* (B+15s, B+45s]: the samples themselves, with their times. */
	inst(x, "(m[30s])", B + 45 * SEC, &r);
	assert_int_equal(r.type, GW_TYPE_MATRIX);
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{\"__name__\":\"m\",\"job\":\"a\"},"
			"\"values\":[[3600030,\"3\"],[3600045,\"4\"]]}]}");
	gw_qresult_release(&r);
}

/* ---- rate and friends ---- */

static void rate_increase_delta_extrapolate(void **state)
{
	struct fx *x = *state;
	const double c[] = { 10, 20, 30, 40, 50, 60, 70, 80, 90 };
	const double reset[] = { 0, 10, 20, 5, 15 };
	const double low[] = { 1, 11, 21 };
	const double g[] = { 5, 3 };
	struct gw_qresult r;

	series(x, "c", "", B, 15 * SEC, 9, c);
	/* (B+60s, B+120s]: 60..90 at 75..120s, 15s apart: 30 over 45s,
	 * extrapolated by 15s to the start (less than 1.1 intervals). */
	assert_near(inst1(x, "increase(c[1m])", B + 120 * SEC), 40);
	assert_near(inst1(x, "rate(c[1m])", B + 120 * SEC), 40.0 / 60);
	assert_near(inst1(x, "delta(c[1m])", B + 120 * SEC), 40);
	assert_near(inst1(x, "irate(c[1m])", B + 120 * SEC), 10.0 / 15);
	/* The name goes. */
	inst(x, "rate(c[1m])", B + 120 * SEC, &r);
	assert_non_null(find(&r, "{}"));
	gw_qresult_release(&r);
	/* One sample: nothing. */
	inst0(x, "rate(c[15s])", B + 120 * SEC);
	inst0(x, "irate(c[15s])", B + 120 * SEC);

	/* A counter reset adds the value before it: 15 - 10 + 20 = 25. */
	series(x, "reset", "", B, 15 * SEC, 5, reset);
	assert_near(inst1(x, "increase(reset[1m])", B + 60 * SEC),
		    25.0 * 60 / 45);
	assert_near(inst1(x, "rate(reset[1m])", B + 60 * SEC), 25.0 / 45);
	/* delta is not a counter function: 15 - 10. */
	assert_near(inst1(x, "delta(reset[1m])", B + 60 * SEC), 5.0 * 60 / 45);
	/* irate after a reset at the last sample: the last value. */
	assert_near(inst1(x, "irate(reset[1m])", B + 45 * SEC), 5.0 / 15);

	/* A counter is not extrapolated below zero: 1 at 30s rising 10 per
	 * 15s was zero 1.5s earlier, so the start gains 1.5s, not 30s. */
	series(x, "low", "", B + 30 * SEC, 15 * SEC, 3, low);
	assert_near(inst1(x, "increase(low[1m])", B + 60 * SEC),
		    20 * 31.5 / 30);
	/* delta has no such floor, and the 30s gap to the start is more than
	 * 1.1 intervals: half an interval (7.5s) is added. */
	assert_near(inst1(x, "delta(low[1m])", B + 60 * SEC), 20 * 37.5 / 30);

	/* Gaps on both sides: 5s to the start (extrapolated in full), 40s
	 * to the end (more than 1.1 x 15s: half an interval). */
	series(x, "g", "", B + 45 * SEC, 15 * SEC, 2, g);
	assert_near(inst1(x, "delta(g[1m])", B + 100 * SEC), -2 * 27.5 / 15);
}

static void over_time_raw(void **state)
{
	struct fx *x = *state;
	const double v[] = { 100, 1, 4, 2, 8, 5 };
	int64_t t = B + 75 * SEC;

	/* (B+0, B+75s]: 1 4 2 8 5 (100 at B is outside). */
	series(x, "g", "job=\"a\"", B, 15 * SEC, 6, v);
	assert_near(inst1(x, "avg_over_time(g[75s])", t), 4);
	assert_near(inst1(x, "min_over_time(g[75s])", t), 1);
	assert_near(inst1(x, "max_over_time(g[75s])", t), 8);
	assert_near(inst1(x, "sum_over_time(g[75s])", t), 20);
	assert_near(inst1(x, "count_over_time(g[75s])", t), 5);
	assert_near(inst1(x, "last_over_time(g[75s])", t), 5);
	/* Population deviation: squares 9 0 4 16 1 over 5. */
	assert_near(inst1(x, "stddev_over_time(g[75s])", t), sqrt(6));
	/* Sorted 1 2 4 5 8: rank 0.5 * 4 = 2 -> 4; 0.9 * 4 = 3.6 -> 5 + 0.6
	 * * 3. */
	assert_near(inst1(x, "quantile_over_time(0.5, g[75s])", t), 4);
	assert_near(inst1(x, "quantile_over_time(0.9, g[75s])", t), 6.8);
	assert_near(inst1(x, "quantile_over_time(0, g[75s])", t), 1);
	assert_true(isinf(inst1(x, "quantile_over_time(-1, g[75s])", t)) < 0);
	assert_true(isinf(inst1(x, "quantile_over_time(2, g[75s])", t)) > 0);
	assert_true(isnan(inst1(x, "quantile_over_time(NaN, g[75s])", t)));
	/* Nothing in the window: nothing out. */
	inst0(x, "avg_over_time(g[10s])", B + 100 * SEC);
	inst0(x, "quantile_over_time(0.5, g[10s])", B + 100 * SEC);
}

static void last_over_time_keeps_name(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;

	one(x, "g", "job=\"a\"", B, 1);
	inst(x, "last_over_time(g[1m])", B, &r);
	assert_near(val(&r, "g{job=\"a\"}"), 1);
	gw_qresult_release(&r);
	inst(x, "max_over_time(g[1m])", B, &r);
	assert_near(val(&r, "{job=\"a\"}"), 1);
	gw_qresult_release(&r);
}

static void same_labelset_after_name_drop(void **state)
{
	static const char *const clash[] = {
		"sum_over_time({__name__=~\"a|b\"}[1m])",
		"abs({__name__=~\"a|b\"})",
		"{__name__=~\"a|b\"} * 2",
		"-{__name__=~\"a|b\"}",
		"{__name__=~\"a|b\"} > bool 0",
	};
	struct fx *x = *state;
	struct gw_qresult r;

	one(x, "a", "job=\"x\"", B, 1);
	one(x, "b", "job=\"x\"", B, 2);
	for (size_t i = 0; i < sizeof(clash) / sizeof(clash[0]); i++)
		inst_err(
			x, clash[i], B, GW_QERR_EXECUTION,
			"vector cannot contain metrics with the same labelset");
	/* A filter keeps the names, so no clash; last_over_time too. */
	inst(x, "{__name__=~\"a|b\"} > 0", B, &r);
	assert_int_equal(r.nseries, 2);
	gw_qresult_release(&r);
	inst(x, "last_over_time({__name__=~\"a|b\"}[1m])", B, &r);
	assert_int_equal(r.nseries, 2);
	gw_qresult_release(&r);
}

/* ---- rollup tiers ---- */

/* Raw samples every 10s for 2 hours, but the raw tier only keeps the last
 * 10 minutes: older queries read the 1-minute rollups. */
static const int64_t rt0 = B + 2 * HOUR;

static double gauge_at(int64_t t)
{
	int64_t i = (t - B) / (10 * SEC);

	/* spread over three decades, so the quantile is a real test */
	return 1 + (double)((i * 7919) % 1000) * (double)(1 + i % 3);
}

static void rollup_fixture(struct fx *x)
{
	size_t g, c;

	assert_int_equal(gw_fakeq_series(x->f, "g", "job=\"a\"", &g), 0);
	assert_int_equal(gw_fakeq_series(x->f, "c", "job=\"a\"", &c), 0);
	for (int64_t t = B; t < rt0; t += 10 * SEC) {
		assert_int_equal(gw_fakeq_sample(x->f, g, t, gauge_at(t)), 0);
		/* A counter rising by 1 per second. */
		assert_int_equal(
			gw_fakeq_sample(x->f, c, t, (double)(t - B) / 1000), 0);
	}
	gw_fakeq_retention(x->f, GW_TIER_RAW, rt0 - 10 * MIN);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void rollup_over_time(void **state)
{
	struct fx *x = *state;
	int64_t t = B + 30 * MIN;
	double v[60], sum = 0, sumsq = 0, mn = INFINITY, mx = -INFINITY, var;
	size_t n = 0;
	struct gw_qresult r;
	char q[64];

	rollup_fixture(x);
	/* avg_over_time(g[10m]) at 30m: the rollups ending in (20m, 30m],
	 * so the raw samples in [20m, 30m). */
	for (int64_t s = B + 20 * MIN; s < t; s += 10 * SEC) {
		double y = gauge_at(s);

		v[n++] = y;
		sum += y;
		sumsq += y * y;
		mn = fmin(mn, y);
		mx = fmax(mx, y);
	}
	assert_int_equal(n, 60);
	inst(x, "avg_over_time(g[10m])", t, &r);
	assert_int_equal(r.tier, GW_TIER_1M);
	assert_near(val(&r, "{job=\"a\"}"), sum / 60);
	gw_qresult_release(&r);
	assert_near(inst1(x, "sum_over_time(g[10m])", t), sum);
	assert_near(inst1(x, "count_over_time(g[10m])", t), 60);
	assert_near(inst1(x, "min_over_time(g[10m])", t), mn);
	assert_near(inst1(x, "max_over_time(g[10m])", t), mx);
	assert_near(inst1(x, "last_over_time(g[10m])", t),
		    gauge_at(t - 10 * SEC));
	var = sumsq / 60 - (sum / 60) * (sum / 60);
	assert_true(fabs(inst1(x, "stddev_over_time(g[10m])", t) - sqrt(var)) <
		    1e-6 * sqrt(var));
	/* Quantiles come from the merged sketches: within 1% of the union's
	 * exact quantile as Prometheus computes it (ranks interpolated). */
	qsort(v, n, sizeof(v[0]), dbl_cmp);
	for (int i = 0; i <= 20; i++) {
		double phi = i / 20.0, h = phi * (double)(n - 1);
		size_t lo = (size_t)floor(h), hi = lo + 1 < n ? lo + 1 : lo;
		double want = v[lo] * (1 - (h - floor(h))) +
			      v[hi] * (h - floor(h)),
		       got;

		snprintf(q, sizeof(q), "quantile_over_time(%g, g[10m])", phi);
		got = inst1(x, q, t);
		if (fabs(got - want) > 0.01 * fabs(want))
			fail_msg("%s = %g, want %g within 1%%", q, got, want);
	}
	assert_true(isinf(inst1(x, "quantile_over_time(1.5, g[10m])", t)) > 0);
	assert_true(isinf(inst1(x, "quantile_over_time(-0.5, g[10m])", t)) < 0);
	/* Instant selector: the last value of the latest rollup. */
	assert_near(inst1(x, "g", t), gauge_at(t - 10 * SEC));
	assert_near(inst1(x, "g", t + 30 * SEC), gauge_at(t - 10 * SEC));
	/* Nothing in the window. */
	inst0(x, "avg_over_time(g[10m])", B - HOUR);
}

static void rollup_rate(void **state)
{
	struct fx *x = *state;
	int64_t t = B + 30 * MIN;
	struct gw_qresult r;

	rollup_fixture(x);
	/* From the first sample of the first window (20:00) to the last of
	 * the last (29:50): 590 over 590s, extrapolated 10s to the end. */
	inst(x, "increase(c[10m])", t, &r);
	assert_int_equal(r.tier, GW_TIER_1M);
	assert_near(val(&r, "{job=\"a\"}"), 600);
	gw_qresult_release(&r);
	assert_near(inst1(x, "rate(c[10m])", t), 1);
	assert_near(inst1(x, "irate(c[10m])", t), 1);
	assert_near(inst1(x, "delta(c[10m])", t), 600);
	/* One rollup in the window has six samples: a rate, as raw. */
	assert_near(inst1(x, "rate(c[1m])", t), 1);
	/* Recent enough for raw: the raw tier is read. */
	inst(x, "increase(c[1m])", rt0 - 10 * SEC, &r);
	assert_int_equal(r.tier, GW_TIER_RAW);
	gw_qresult_release(&r);
}

/*
 * Past raw retention, rate, increase and delta over rollups equal the raw
 * answers wherever the range is whole windows and no sample lies on a
 * window's edge, counter resets inside a window included (the issue's
 * counter: 694 from the windows' last values, 58,176 from Prometheus).
 */
static void rollup_rate_equals_raw(void **state)
{
	static const char *const exprs[] = {
		"increase(c2[5m])", "rate(c2[5m])", "delta(c2[5m])",
		"increase(c2[1m])", "rate(c2[2m])", "increase(c2[1h])",
	};
	struct fx *x = *state;
	size_t id;
	double c = 0;

	assert_int_equal(gw_fakeq_series(x->f, "c2", "", &id), 0);
	/* Every 10s, 3s past the grid; +970 a sample (about 97/s); resets
	 * to 5 in the middle of minute 31 and of minute 47. */
	for (int64_t k = 0; k < 6 * 60; k++) {
		int64_t t = B + 3 * SEC + k * 10 * SEC;

		c = (k == 31 * 6 + 3 || k == 47 * 6 + 2) ? 5 : c + 970 + k % 3;
		assert_int_equal(gw_fakeq_sample(x->f, id, t, c), 0);
	}
	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		for (int64_t t = B + 5 * MIN; t <= B + HOUR; t += MIN) {
			double raw, rollup;

			gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MIN);
			raw = inst1(x, exprs[e], t);
			gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
			rollup = inst1(x, exprs[e], t);
			if (!(fabs(rollup - raw) <= 1e-9 * fabs(raw)))
				fail_msg("%s at +%llds: raw %.17g, rollups "
					 "%.17g",
					 exprs[e], (long long)((t - B) / SEC),
					 raw, rollup);
		}
	}
	/* The minute with the reset, by itself: four increments of about
	 * 971 and the 5 after the reset over 50 s, extrapolated to 60 s
	 * (about 4,670), where the windows' last values alone give
	 * nothing. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
	{
		double v = inst1(x, "increase(c2[1m])", B + 32 * MIN);

		assert_true(v > 4600 && v < 4750);
	}
}

/* Rollups given directly: a reset counter and empty windows. */
static void rollup_given(void **state)
{
	struct fx *x = *state;
	struct gw_rollup ru;
	size_t id;
	const double last[] = { 100, 160, 10, 70 };

	assert_int_equal(gw_fakeq_series(x->f, "c", "", &id), 0);
	for (int i = 0; i < 4; i++) {
		gw_rollup_init(&ru, B + (i + 1) * MIN);
		assert_int_equal(
			gw_rollup_add(&ru, B + i * MIN + 30 * SEC, last[i]), 0);
		assert_int_equal(gw_fakeq_rollup(x->f, id, GW_TIER_1M, &ru), 0);
		gw_rollup_release(&ru);
	}
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
	/* Points at 0:30 1:30 2:30 3:30: 60 + (10 + 160) + 60 = 130 with the
	 * reset, over 180s; 30s (< 66s) extrapolated at each end. */
	assert_near(inst1(x, "increase(c[4m])", B + 4 * MIN),
		    130.0 * 240 / 180);
	assert_near(inst1(x, "irate(c[4m])", B + 4 * MIN), 1);
	assert_near(inst1(x, "irate(c[3m])", B + 3 * MIN), 10.0 / 60);
	assert_near(inst1(x, "count_over_time(c[4m])", B + 4 * MIN), 4);
	/* On the minute tier a value goes stale as a raw one does: 5 min
	 * after its sample (t_last), not after its window's end. */
	assert_near(inst1(x, "c", B + 8 * MIN + 29 * SEC), 70);
	inst0(x, "c", B + 8 * MIN + 30 * SEC);
}

/*
 * Raw samples answer wherever they are kept, at any step; the steps whose
 * windows reach past the raw horizon read the tier of min(step, smallest
 * range).  One select per selector and tier.
 */
static void tier_choice_and_single_load(void **state)
{
	struct fx *x = *state;
	const struct gw_fakeq_stats *st = gw_fakeq_stats(x->f);
	struct gw_qresult r;

	rollup_fixture(x);
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MIN);
	assert_int_equal(
		range(x, "rate(c[5m])", B + 10 * MIN, B + 110 * MIN, HOUR, &r),
		0);
	assert_int_equal(r.tier, GW_TIER_RAW);
	assert_int_equal(st->selects, 1);
	assert_int_equal(st->sel_tier, GW_TIER_RAW);
	gw_qresult_release(&r);

	/* Raw from B+50m: the step at B+10m (window from B+5m) reads the
	 * minute tier, the one at B+70m raw. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, B + 50 * MIN);
	assert_int_equal(
		range(x, "rate(c[5m])", B + 10 * MIN, B + 110 * MIN, HOUR, &r),
		0);
	assert_int_equal(r.tier, GW_TIER_1M);
	assert_int_equal(st->pick_step, 5 * MIN);
	assert_int_equal(st->selects, 3);
	assert_int_equal(st->sel_tier, GW_TIER_RAW);
	assert_int_equal(st->sel_mint, B + 65 * MIN + 1);
	assert_int_equal(st->sel_maxt, B + 110 * MIN);
	assert_int_equal(r.nseries, 1);
	assert_int_equal(r.series[0].n, 2);
	assert_int_equal(r.series[0].p[1].t, B + 70 * MIN);
	assert_near(r.series[0].p[0].v, 1);
	assert_near(r.series[0].p[1].v, 1);
	assert_true(r.samples > 0);
	gw_qresult_release(&r);

	/* Without raw, a bare selector at a 2h step reads the hour tier;
	 * the window reaches back two hour windows (more than the
	 * lookback), and offset moves it. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
	assert_int_equal(range(x, "g offset 10m", B + 2 * HOUR, B + 2 * HOUR,
			       2 * HOUR, &r),
			 0);
	assert_int_equal(r.tier, GW_TIER_1H);
	assert_int_equal(st->sel_mint, B + 2 * HOUR - 10 * MIN - 2 * HOUR + 1);
	assert_int_equal(st->sel_maxt, B + 2 * HOUR - 10 * MIN);
	assert_int_equal(st->selects, 4);
	/* The hour ending at B+1h holds the samples of [B, B+1h). */
	assert_near(r.series[0].p[0].v, gauge_at(B + HOUR - 10 * SEC));
	gw_qresult_release(&r);

	/* Two selectors, two loads, one tier; an instant query is step 0. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MIN);
	inst(x, "rate(c[2m]) + on(job) g", B + HOUR, &r);
	assert_int_equal(st->selects, 6);
	assert_int_equal(r.tier, GW_TIER_RAW);
	assert_int_equal(st->pick_step, 0);
	gw_qresult_release(&r);
	/* No selector, no load. */
	inst(x, "1 + 1", B, &r);
	assert_int_equal(st->selects, 6);
	gw_qresult_release(&r);
}

/* ---- aggregation ---- */

static void agg_fixture(struct fx *x)
{
	one(x, "x", "job=\"a\",inst=\"1\"", B, 1);
	one(x, "x", "job=\"a\",inst=\"2\"", B, 2);
	one(x, "x", "job=\"b\",inst=\"1\"", B, 4);
	one(x, "x", "job=\"b\",inst=\"2\"", B, 8);
	one(x, "x", "job=\"b\",inst=\"3\"", B, 16);
}

static void aggregations(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;

	agg_fixture(x);
	inst(x, "sum by (job) (x)", B, &r);
	assert_json(
		&r,
		"{\"resultType\":\"vector\",\"result\":["
		"{\"metric\":{\"job\":\"a\"},\"value\":[3600000,\"3\"]},"
		"{\"metric\":{\"job\":\"b\"},\"value\":[3600000,\"28\"]}]}");
	gw_qresult_release(&r);
	inst(x, "sum(x) without (inst)", B, &r);
	assert_int_equal(r.nseries, 2);
	assert_near(val(&r, "{job=\"a\"}"), 3);
	assert_near(val(&r, "{job=\"b\"}"), 28);
	gw_qresult_release(&r);
	inst(x, "sum(x)", B, &r);
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":["
			"{\"metric\":{},\"value\":[3600000,\"31\"]}]}");
	gw_qresult_release(&r);
	/* by (__name__, inst) keeps the name as asked. */
	inst(x, "count by (__name__, inst) (x)", B, &r);
	assert_int_equal(r.nseries, 3);
	assert_near(val(&r, "x{inst=\"1\"}"), 2);
	assert_near(val(&r, "x{inst=\"3\"}"), 1);
	gw_qresult_release(&r);
	inst(x, "avg by (job) (x)", B, &r);
	assert_near(val(&r, "{job=\"a\"}"), 1.5);
	assert_near(val(&r, "{job=\"b\"}"), 28.0 / 3);
	gw_qresult_release(&r);
	inst(x, "min by (job) (x)", B, &r);
	assert_near(val(&r, "{job=\"a\"}"), 1);
	assert_near(val(&r, "{job=\"b\"}"), 4);
	gw_qresult_release(&r);
	inst(x, "max without (job) (x)", B, &r);
	assert_near(val(&r, "{inst=\"1\"}"), 4);
	assert_near(val(&r, "{inst=\"2\"}"), 8);
	assert_near(val(&r, "{inst=\"3\"}"), 16);
	gw_qresult_release(&r);
	inst(x, "count by (job) (x)", B, &r);
	assert_near(val(&r, "{job=\"b\"}"), 3);
	gw_qresult_release(&r);
	/* quantile interpolates: 1 2 4 8 16 -> 4; job a: 1.5; b: 8. */
	assert_near(inst1(x, "quantile(0.5, x)", B), 4);
	assert_near(inst1(x, "quantile(0.75, x)", B), 8);
	assert_near(inst1(x, "quantile(0.1, x)", B), 1.4);
	assert_true(isinf(inst1(x, "quantile(1.1, x)", B)) > 0);
	inst(x, "quantile by (job) (0.5, x)", B, &r);
	assert_near(val(&r, "{job=\"a\"}"), 1.5);
	assert_near(val(&r, "{job=\"b\"}"), 8);
	gw_qresult_release(&r);
	/* Aggregating nothing gives nothing. */
	inst0(x, "sum(nothing)", B);
	/* min and max skip NaN unless it is all there is. */
	one(x, "n", "i=\"1\"", B, NAN);
	one(x, "n", "i=\"2\"", B, 3);
	assert_near(inst1(x, "min(n)", B), 3);
	assert_near(inst1(x, "max(n)", B), 3);
	assert_true(isnan(inst1(x, "max(n{i=\"1\"})", B)));
}

static void avg_is_stable(void **state)
{
	struct fx *x = *state;

	/* The plain sum overflows; the mean does not. */
	one(x, "big", "i=\"1\"", B, 1.5e308);
	one(x, "big", "i=\"2\"", B, 1.5e308);
	one(x, "big", "i=\"3\"", B, 0.9e308);
	assert_near(inst1(x, "avg(big)", B), 1.3e308);
	/* A compensated sum keeps the small parts. */
	one(x, "k", "i=\"1\"", B, 1e16);
	one(x, "k", "i=\"2\"", B, 1);
	one(x, "k", "i=\"3\"", B, -1e16);
	one(x, "k", "i=\"4\"", B, 1);
	assert_near(inst1(x, "sum(k)", B), 2);
	assert_near(inst1(x, "avg(k)", B), 0.5);
	/* Infinities stay infinite. */
	one(x, "infs", "i=\"1\"", B, INFINITY);
	one(x, "infs", "i=\"2\"", B, 1);
	assert_true(isinf(inst1(x, "avg(infs)", B)));
}

static void topk_bottomk(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;

	agg_fixture(x);
	/* Original labels, best first. */
	inst(x, "topk(2, x)", B, &r);
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":["
			"{\"metric\":{\"__name__\":\"x\",\"inst\":\"3\","
			"\"job\":\"b\"},\"value\":[3600000,\"16\"]},"
			"{\"metric\":{\"__name__\":\"x\",\"inst\":\"2\","
			"\"job\":\"b\"},\"value\":[3600000,\"8\"]}]}");
	gw_qresult_release(&r);
	inst(x, "(bottomk by (job) (1, x))", B, &r);
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":["
			"{\"metric\":{\"__name__\":\"x\",\"inst\":\"1\","
			"\"job\":\"a\"},\"value\":[3600000,\"1\"]},"
			"{\"metric\":{\"__name__\":\"x\",\"inst\":\"1\","
			"\"job\":\"b\"},\"value\":[3600000,\"4\"]}]}");
	gw_qresult_release(&r);
	/* k is truncated; groups in order of first appearance. */
	inst(x, "topk by (job) (2.9, x)", B, &r);
	assert_int_equal(r.nseries, 4);
	assert_near(r.series[0].p[0].v, 2);
	assert_near(r.series[1].p[0].v, 1);
	assert_near(r.series[2].p[0].v, 16);
	assert_near(r.series[3].p[0].v, 8);
	gw_qresult_release(&r);
	inst(x, "topk(100, x)", B, &r);
	assert_int_equal(r.nseries, 5);
	assert_near(r.series[4].p[0].v, 1);
	gw_qresult_release(&r);
	inst0(x, "topk(0, x)", B);
	/* k must fit an int64, as Prometheus 2.42 checks. */
	inst_err(x, "bottomk(NaN, x)", B, GW_QERR_EXECUTION,
		 "Scalar value NaN overflows int64");
	/* Inside another expression the order is by labels again. */
	inst(x, "topk(2, x) * 1", B, &r);
	assert_near(r.series[0].p[0].v, 8);
	gw_qresult_release(&r);
	/* NaN is last for both. */
	one(x, "n", "i=\"1\"", B, NAN);
	one(x, "n", "i=\"2\"", B, 3);
	assert_near(inst1(x, "topk(1, n)", B), 3);
	assert_near(inst1(x, "bottomk(1, n)", B), 3);
}

/* ---- binary operators ---- */

static void scalar_arithmetic(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;
	static const struct {
		const char *q;
		double want;
	} c[] = {
		{ "1 + 2", 3 },	       { "1 - 2", -1 },
		{ "3 * 4", 12 },       { "1 / 4", 0.25 },
		{ "1 / 0", INFINITY }, { "-1 / 0", -INFINITY },
		{ "7 % 3", 1 },	       { "-7 % 3", -1 },
		{ "5.5 % 2", 1.5 },    { "2 ^ 10", 1024 },
		{ "4 ^ 0.5", 2 },      { "2 ^ 3 ^ 2", 512 },
		{ "1 + 2 * 3", 7 },    { "-2 ^ 2", -4 },
		{ "1 < bool 2", 1 },   { "1 == bool 2", 0 },
		{ "(1 + 2) * 3", 9 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		inst(x, c[i].q, B, &r);
		assert_int_equal(r.type, GW_TYPE_SCALAR);
		assert_int_equal(r.scalar.t, B);
		if (isinf(c[i].want) ? r.scalar.v != c[i].want
				     : fabs(r.scalar.v - c[i].want) > 1e-12)
			fail_msg("%s = %g, want %g", c[i].q, r.scalar.v,
				 c[i].want);
		gw_qresult_release(&r);
	}
	inst(x, "0 / 0", B, &r);
	assert_json(&r,
		    "{\"resultType\":\"scalar\",\"result\":[3600000,\"NaN\"]}");
	gw_qresult_release(&r);
	inst(x, "time()", B + 1500, &r);
	assert_json(&r, "{\"resultType\":\"scalar\",\"result\":[3600001.5,"
			"\"3600001.5\"]}");
	gw_qresult_release(&r);
	inst(x, "\"hi\"", B, &r);
	assert_json(&r,
		    "{\"resultType\":\"string\",\"result\":[3600000,\"hi\"]}");
	gw_qresult_release(&r);
}

static void vector_scalar(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;

	agg_fixture(x);
	inst(x, "x * 2", B, &r);
	assert_int_equal(r.nseries, 5);
	assert_near(val(&r, "{inst=\"3\",job=\"b\"}"), 32);
	gw_qresult_release(&r);
	inst(x, "20 - x", B, &r);
	assert_near(val(&r, "{inst=\"3\",job=\"b\"}"), 4);
	gw_qresult_release(&r);
	inst(x, "x % 3 ^ 2", B, &r);
	assert_near(val(&r, "{inst=\"3\",job=\"b\"}"), 7);
	gw_qresult_release(&r);
	/* A filter keeps the name and the value. */
	inst(x, "x > 3", B, &r);
	assert_int_equal(r.nseries, 3);
	assert_near(val(&r, "x{inst=\"1\",job=\"b\"}"), 4);
	gw_qresult_release(&r);
	/* Scalar on the left: still the vector's value. */
	inst(x, "7 < x", B, &r);
	assert_int_equal(r.nseries, 2);
	assert_near(val(&r, "x{inst=\"2\",job=\"b\"}"), 8);
	gw_qresult_release(&r);
	/* bool: 0/1, name dropped. */
	inst(x, "x > bool 3", B, &r);
	assert_int_equal(r.nseries, 5);
	assert_near(val(&r, "{inst=\"1\",job=\"a\"}"), 0);
	assert_near(val(&r, "{inst=\"1\",job=\"b\"}"), 1);
	gw_qresult_release(&r);
	inst(x, "x / 0", B, &r);
	assert_true(isinf(val(&r, "{inst=\"1\",job=\"a\"}")));
	gw_qresult_release(&r);
	/* abs, unary minus, vector(), scalar() */
	inst(x, "abs(-x)", B, &r);
	assert_near(val(&r, "{inst=\"3\",job=\"b\"}"), 16);
	gw_qresult_release(&r);
	inst(x, "vector(time())", B, &r);
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":["
			"{\"metric\":{},\"value\":[3600000,\"3600000\"]}]}");
	gw_qresult_release(&r);
	inst(x, "scalar(x)", B, &r);
	assert_int_equal(r.type, GW_TYPE_SCALAR);
	assert_true(isnan(r.scalar.v));
	gw_qresult_release(&r);
	inst(x, "scalar(sum(x))", B, &r);
	assert_near(r.scalar.v, 31);
	gw_qresult_release(&r);
	inst(x, "x + scalar(count(x))", B, &r);
	assert_near(val(&r, "{inst=\"1\",job=\"a\"}"), 6);
	gw_qresult_release(&r);
}

static void vector_matching(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;

	one(x, "num", "job=\"a\",inst=\"1\"", B, 10);
	one(x, "num", "job=\"a\",inst=\"2\"", B, 20);
	one(x, "num", "job=\"b\",inst=\"1\"", B, 30);
	one(x, "den", "job=\"a\",inst=\"1\"", B, 2);
	one(x, "den", "job=\"a\",inst=\"2\"", B, 0);
	one(x, "den", "job=\"c\",inst=\"1\"", B, 5);
	one(x, "tot", "job=\"a\"", B, 100);
	one(x, "tot", "job=\"b\"", B, 200);

	/* All labels but the name; unmatched sides dropped. */
	inst(x, "num / den", B, &r);
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":["
			"{\"metric\":{\"inst\":\"1\",\"job\":\"a\"},\"value\":["
			"3600000,\"5\"]},"
			"{\"metric\":{\"inst\":\"2\",\"job\":\"a\"},\"value\":["
			"3600000,\"+Inf\"]}]}");
	gw_qresult_release(&r);
	/* A comparison filters and keeps the left side, name included. */
	inst(x, "num > den", B, &r);
	assert_int_equal(r.nseries, 2);
	assert_near(val(&r, "num{inst=\"2\",job=\"a\"}"), 20);
	gw_qresult_release(&r);
	inst(x, "num < bool den", B, &r);
	assert_int_equal(r.nseries, 2);
	assert_near(val(&r, "{inst=\"2\",job=\"a\"}"), 0);
	gw_qresult_release(&r);
	/* ignoring(inst): num's two job="a" series meet one tot. */
	inst_err(x, "num / ignoring(inst) tot", B, GW_QERR_EXECUTION,
		 "multiple matches for labels: many-to-one matching must be "
		 "explicit (group_left/group_right)");
	/* on(job) with the many on the right. */
	inst_err(x, "tot / on(job) num", B, GW_QERR_EXECUTION,
		 "found duplicate series for the match group {job=\"a\"} on "
		 "the right hand-side of the operation: [");
	inst_err(x, "tot / on(job) num", B, GW_QERR_EXECUTION,
		 "];many-to-many matching not allowed: matching labels must be "
		 "unique on one side");
	/* on(job) one-to-one: the result keeps only job. */
	inst(x, "tot * on(job) sum by (job) (num)", B, &r);
	assert_json(
		&r,
		"{\"resultType\":\"vector\",\"result\":["
		"{\"metric\":{\"job\":\"a\"},\"value\":[3600000,\"3000\"]},"
		"{\"metric\":{\"job\":\"b\"},\"value\":[3600000,\"6000\"]}]}");
	gw_qresult_release(&r);
	/* ignoring(inst) one-to-one: the result loses inst and the name. */
	inst(x, "num{job=\"b\"} - ignoring(inst) tot", B, &r);
	assert_json(
		&r,
		"{\"resultType\":\"vector\",\"result\":["
		"{\"metric\":{\"job\":\"b\"},\"value\":[3600000,\"-170\"]}]}");
	gw_qresult_release(&r);
	/* A filter with on() keeps the left side's value, reduced labels. */
	inst(x, "tot > on(job) sum by (job) (num)", B, &r);
	assert_json(
		&r,
		"{\"resultType\":\"vector\",\"result\":["
		"{\"metric\":{\"job\":\"a\"},\"value\":[3600000,\"100\"]},"
		"{\"metric\":{\"job\":\"b\"},\"value\":[3600000,\"200\"]}]}");
	gw_qresult_release(&r);
	/* An empty side short-circuits, even with duplicates on the other. */
	inst0(x, "nothing / on(job) num", B);
}

/* ---- range queries ---- */

static void range_steps_and_merge(void **state)
{
	struct fx *x = *state;
	const double early[] = { 1, 2 }, late[] = { 5, 6 };
	struct gw_qresult r;

	series(x, "m", "s=\"early\"", B, 20 * SEC, 2, early); /* B, B+20s */
	series(x, "m", "s=\"late\"", B + 60 * SEC, 20 * SEC, 2, late);
	x->o.lookback_ms = 30 * SEC;
	assert_int_equal(range(x, "m", B, B + 90 * SEC, 30 * SEC, &r), 0);
	assert_int_equal(r.type, GW_TYPE_MATRIX);
	/* early at 0 and 30 (lookback 30s: 20s is within (0, 30]), late at
	 * 60 and 90 (80s within (60, 90]). */
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{\"__name__\":\"m\",\"s\":\"early\"},"
			"\"values\":[[3600000,\"1\"],[3600030,\"2\"]]},"
			"{\"metric\":{\"__name__\":\"m\",\"s\":\"late\"},"
			"\"values\":[[3600060,\"5\"],[3600090,\"6\"]]}]}");
	gw_qresult_release(&r);

	/* Steps stop at or before end; a scalar is one series without
	 * labels. */
	assert_int_equal(range(x, "time()", B, B + 50 * SEC, 20 * SEC, &r), 0);
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{},\"values\":[[3600000,\"3600000\"],["
			"3600020,\"3600020\"],[3600040,\"3600040\"]]}]}");
	gw_qresult_release(&r);

	/* Series appearing and disappearing under an aggregation; the
	 * output sorted by labels whatever the order they appeared in. */
	assert_int_equal(
		range(x, "sum by (s) (m)", B, B + 90 * SEC, 15 * SEC, &r), 0);
	assert_int_equal(r.nseries, 2);
	assert_int_equal(find(&r, "{s=\"early\"}")->n, 4); /* 0 15 30 45 */
	assert_int_equal(find(&r, "{s=\"late\"}")->n, 3);  /* 60 75 90 */
	gw_qresult_release(&r);
	assert_int_equal(range(x, "topk(1, m)", B, B + 90 * SEC, 30 * SEC, &r),
			 0);
	assert_int_equal(r.nseries, 2);
	assert_non_null(find(&r, "m{s=\"early\"}"));
	gw_qresult_release(&r);

	/* 11,001 points are allowed, as Prometheus. */
	assert_int_equal(range(x, "1", 0, 11000 * SEC, SEC, &r), 0);
	assert_int_equal(r.series[0].n, 11001);
	gw_qresult_release(&r);
}

static void range_errors(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;
	int rc;

	one(x, "a", "job=\"x\"", B, 1);
	one(x, "b", "job=\"x\"", B + 60 * SEC, 2);
	rc = range(x, "a[1m]", B, B + MIN, SEC, &r);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "invalid expression type \"range vector\" for "
			    "range query, must be Scalar or instant Vector");
	gw_qresult_release(&r);
	rc = range(x, "\"s\"", B, B + MIN, SEC, &r);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "invalid expression type \"string\" for range "
			    "query, must be Scalar or instant Vector");
	gw_qresult_release(&r);

	rc = range(x, "a", B, B + MIN, 0, &r);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "zero or negative query resolution step widths are "
			    "not accepted. Try a positive integer");
	gw_qresult_release(&r);
	rc = range(x, "a", B, B - 1, SEC, &r);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "end timestamp must not be before start time");
	gw_qresult_release(&r);
	rc = range(x, "a", 0, 11001 * SEC, SEC, &r);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "exceeded maximum resolution of 11,000 points per "
			    "timeseries. Try "
			    "decreasing the query resolution (?step=XX)");
	gw_qresult_release(&r);
	rc = range(x, "a", INT64_MIN, INT64_MAX, 1, &r);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	gw_qresult_release(&r);

	/* The same labels from two series after a name drop: fine while
	 * they never meet at a step (lookback 30s)... */
	x->o.lookback_ms = 30 * SEC;
	assert_int_equal(
		range(x, "-{__name__=~\"a|b\"}", B, B + 60 * SEC, 30 * SEC, &r),
		0);
	assert_int_equal(r.nseries, 1);
	assert_int_equal(r.series[0].n, 2);
	gw_qresult_release(&r);
	/* ... an error once they do. */
	x->o.lookback_ms = 5 * MIN;
	rc = range(x, "-{__name__=~\"a|b\"}", B, B + 60 * SEC, 30 * SEC, &r);
	check_err(&r, rc, GW_QERR_EXECUTION,
		  "vector cannot contain metrics with the same labelset");
}

/* ---- limits ---- */

static void limits(void **state)
{
	struct fx *x = *state;
	const struct gw_fakeq_stats *st = gw_fakeq_stats(x->f);
	const double v[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct gw_qresult r;
	int rc;

	series(x, "m", "i=\"1\"", B, SEC, 8, v);
	series(x, "m", "i=\"2\"", B, SEC, 8, v);
	x->o.max_samples = 10;
	inst_err(x, "sum_over_time(m[1m])", B + 10 * SEC, GW_QERR_EXECUTION,
		 "query processing would load too many samples into memory in "
		 "query execution");
	assert_int_equal(st->sel_max_samples, 10);
	x->o.max_samples = 16;
	inst(x, "sum_over_time(m[1m])", B + 10 * SEC, &r);
	assert_int_equal(r.samples, 16);
	assert_int_equal(r.nseries, 2);
	gw_qresult_release(&r);
	/* The second selector's load counts on top of the first's. */
	inst_err(x, "m + m", B + 10 * SEC, GW_QERR_EXECUTION,
		 "too many samples");
	x->o.max_samples = 0;

	/* The deadline goes to the store... */
	x->o.timeout_ns = 60ull * 1000000000;
	inst(x, "m", B, &r);
	assert_true(st->sel_deadline_ns > 0);
	gw_qresult_release(&r);
	gw_fakeq_fail(x->f, -ETIMEDOUT);
	inst_err(x, "m", B, GW_QERR_TIMEOUT,
		 "query timed out in query execution");
	/* ... and is checked between steps. */
	x->o.timeout_ns = 1;
	rc = range(x, "time()", 0, 11000 * SEC, SEC, &r);
	assert_int_equal(rc, -ETIMEDOUT);
	check_err(&r, rc, GW_QERR_TIMEOUT,
		  "query timed out in query execution");
	x->o.timeout_ns = 0;

	/* Other store failures are internal errors. */
	gw_fakeq_fail(x->f, -EIO);
	inst_err(x, "m", B, GW_QERR_INTERNAL, strerror(EIO));
	/* A failure after a successful load frees what was loaded. */
	x->o.max_samples = 12; /* the first load (12) fits, the second not */
	inst_err(x, "m + m", B + 5 * SEC, GW_QERR_EXECUTION,
		 "too many samples");
	x->o.max_samples = 0;
	/* A failure mid-way through a range query frees its output. */
	one(x, "a", "job=\"x\"", B, 1);
	one(x, "b", "job=\"x\"", B + 60 * SEC, 2);
	x->o.lookback_ms = 90 * SEC; /* they meet at the third step */
	rc = range(x, "-{__name__=~\"a|b|m\"}", B, B + 120 * SEC, 30 * SEC, &r);
	check_err(&r, rc, GW_QERR_EXECUTION, "same labelset");
}

/* ---- cancellation ---- */

#define MSG_CANCELLED "query cancelled: the agent is stopping"

/* The fake behind a select() that raises the cancel flag, as the server's
 * thread would while the query is loading. */
struct canceller {
	struct gw_queryable inner;
	_Atomic bool flag;
	const _Atomic bool *seen; /* lim->cancel of the last select() */
};

static enum gw_tier cancelling_pick(void *ctx, int64_t mint, int64_t maxt,
				    int64_t step)
{
	struct canceller *c = ctx;

	return c->inner.pick_tier(c->inner.ctx, mint, maxt, step);
}

static int cancelling_select(void *ctx, const struct gw_matcher *m, size_t nm,
			     int64_t mint, int64_t maxt, enum gw_tier tier,
			     struct gw_query_limits *lim,
			     struct gw_series_set *out)
{
	struct canceller *c = ctx;

	c->seen = lim->cancel;
	atomic_store(&c->flag, true);
	return c->inner.select(c->inner.ctx, m, nm, mint, maxt, tier, lim, out);
}

static void cancellation(void **state)
{
	struct fx *x = *state;
	const struct gw_fakeq_stats *st = gw_fakeq_stats(x->f);
	const double v[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct canceller c = { .inner = x->q };
	struct gw_queryable q = {
		.ctx = &c,
		.pick_tier = cancelling_pick,
		.select = cancelling_select,
	};
	struct gw_pq_node *e;
	struct gw_qresult r;
	unsigned selects;
	int rc;

	series(x, "m", "", B, SEC, 8, v);
	x->o.cancel = &c.flag;
	/* A flag that stays clear changes nothing. */
	rc = range(x, "m", B, B + 7 * SEC, SEC, &r);
	assert_int_equal(rc, 0);
	assert_int_equal(r.nseries, 1);
	assert_int_equal(r.series[0].n, 8);
	gw_qresult_release(&r);

	/* Set: a range query stops at its first step... */
	atomic_store(&c.flag, true);
	rc = range(x, "time()", 0, 10000 * SEC, SEC, &r);
	assert_int_equal(rc, -ECANCELED);
	check_err(&r, rc, GW_QERR_TIMEOUT, MSG_CANCELLED);
	/* ... and an instant query before it reads the store. */
	selects = st->selects;
	e = parse("sum_over_time(m[1m])");
	rc = gw_promql_eval_instant(e, &x->q, B + 10 * SEC, &x->o, &r);
	gw_promql_free(e);
	assert_int_equal(rc, -ECANCELED);
	check_err(&r, rc, GW_QERR_TIMEOUT, MSG_CANCELLED);
	assert_int_equal(st->selects, selects);

	/* Set while the store is read: the flag went down to select() and
	 * the steps after the load see it. */
	atomic_store(&c.flag, false);
	e = parse("m * 2");
	rc = gw_promql_eval_range(e, &q, B, B + 7 * SEC, SEC, &x->o, &r);
	gw_promql_free(e);
	assert_ptr_equal(c.seen, &c.flag);
	assert_int_equal(rc, -ECANCELED);
	check_err(&r, rc, GW_QERR_TIMEOUT, MSG_CANCELLED);

	/* A store that noticed the flag itself (-ECANCELED) says the same. */
	atomic_store(&c.flag, false);
	gw_fakeq_fail(x->f, -ECANCELED);
	e = parse("m");
	rc = gw_promql_eval_instant(e, &x->q, B, &x->o, &r);
	gw_promql_free(e);
	assert_int_equal(rc, -ECANCELED);
	check_err(&r, rc, GW_QERR_TIMEOUT, MSG_CANCELLED);
	x->o.cancel = NULL;
}

/* A hand-built tree the parser would refuse is an error, not a crash. */
static void malformed_trees(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;

	one(x, "m", "", B, 1);
	tree_err(x, call(GW_FN_RATE, 1, sel("m", 0)), B, GW_QERR_INTERNAL,
		 "malformed");
	tree_err(x, call(GW_FN_ABS, 0, NULL), B, GW_QERR_INTERNAL, "malformed");
	tree_err(x, call(GW_FN_SCALAR, 1, num(1)), B, GW_QERR_INTERNAL,
		 "malformed");
	tree_err(x, bin(GW_OP_ADD, str("a"), num(1)), B, GW_QERR_INTERNAL,
		 "malformed");
	tree_err(x, wrap(GW_PQ_PAREN, call(GW_FN_ABS, 1, sel("m", MIN))), B,
		 GW_QERR_INTERNAL, "malformed");
	tree_err(x, wrap(GW_PQ_NEG, str("a")), B, GW_QERR_INTERNAL,
		 "malformed");
	assert_int_equal(gw_promql_eval_instant(NULL, &x->q, B, NULL, &r),
			 -EINVAL);
	assert_int_equal(r.err, GW_QERR_INTERNAL);
	gw_qresult_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(format_values_as_go),
		cmocka_unit_test(json_shapes),
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(instant_selector_lookback_and_offset),
		T(instant_range_selector_is_matrix),
		T(rate_increase_delta_extrapolate),
		T(over_time_raw),
		T(last_over_time_keeps_name),
		T(same_labelset_after_name_drop),
		T(rollup_over_time),
		T(rollup_rate),
		T(rollup_rate_equals_raw),
		T(rollup_given),
		T(tier_choice_and_single_load),
		T(aggregations),
		T(avg_is_stable),
		T(topk_bottomk),
		T(scalar_arithmetic),
		T(vector_scalar),
		T(vector_matching),
		T(range_steps_and_merge),
		T(range_errors),
		T(limits),
		T(cancellation),
		T(malformed_trees),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
