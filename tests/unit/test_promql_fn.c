/* SPDX-License-Identifier: MIT */
/*
 * test_promql_fn.c - PromQL's functions as a user sees them: the values,
 * labels, order and errors of each function on an in-memory store, the
 * parser's argument checks, and the range functions on rollup tiers.
 *
 * Expected values are worked out by hand from Prometheus' documented
 * semantics (the working is in the comments).  Where the semantics are not
 * obvious (Go's calendar for NaN, bucket corner cases, label derivation,
 * error texts) the value was also checked against Prometheus 2.42 on the
 * same samples (promtool tsdb create-blocks-from openmetrics, then its
 * /api/v1/query), and the comment says so.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
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
#define B    (1000 * HOUR) /* 1970-02-11T16:00:00Z, a Wednesday */

/* ---- the store and queries ---- */

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
static void series(struct fx *x, const char *name, const char *labels,
		   int64_t t0, int64_t dt, size_t n, const double *v)
{
	size_t id;

	assert_int_equal(gw_fakeq_series(x->f, name, labels, &id), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(
			gw_fakeq_sample(x->f, id, t0 + (int64_t)i * dt, v[i]),
			0);
}

/* A series holding the value v from B - 1m to B + 1m, every 30s. */
static void one(struct fx *x, const char *name, const char *labels, double v)
{
	double vs[] = { v, v, v, v, v };

	series(x, name, labels, B - MIN, 30 * SEC, 5, vs);
}

static struct gw_pq_node *parse(const char *q)
{
	struct gw_promql_error err;
	struct gw_pq_node *n = NULL;

	if (gw_promql_parse(q, &n, &err))
		fail_msg("%s: %s", q, err.msg);
	return n;
}

/* Evaluates q at t; the query must succeed. */
static void inst(struct fx *x, const char *q, int64_t t, struct gw_qresult *r)
{
	struct gw_pq_node *e = parse(q);
	int rc = gw_promql_eval_instant(e, &x->q, t, &x->o, r);

	if (rc)
		fail_msg("%s: %d %s", q, rc, r->errmsg);
	gw_promql_free(e);
}

/* Evaluates q at t, expecting an error of kind with exactly msg. */
static void inst_err(struct fx *x, const char *q, int64_t t, enum gw_qerr kind,
		     const char *msg)
{
	struct gw_pq_node *e = parse(q);
	struct gw_qresult r;
	int rc = gw_promql_eval_instant(e, &x->q, t, &x->o, &r);

	if (rc == 0)
		fail_msg("%s: succeeded, want \"%s\"", q, msg);
	assert_int_equal(r.err, kind);
	assert_string_equal(r.errmsg, msg);
	assert_int_equal(r.nseries, 0);
	gw_qresult_release(&r);
	gw_promql_free(e);
}

/* The canonical key of series i. */
static char *key(const struct gw_qresult *r, size_t i)
{
	struct gw_buf b;

	gw_buf_init(&b, 1 << 16);
	assert_int_equal(gw_labels_key(&r->series[i].labels, &b), 0);
	return gw_buf_detach(&b, NULL);
}

/*
 * Evaluates q at t and compares the vector with want: "key=value;..." in
 * the result's order ({}=1 for a set without labels), values as %.17g
 * or NaN, +Inf, -Inf, -0.
 */
static void expect_at(struct fx *x, const char *q, int64_t t, const char *want)
{
	struct gw_qresult r;
	struct gw_buf b;
	const char *got;

	inst(x, q, t, &r);
	assert_int_equal(r.type, GW_TYPE_VECTOR);
	gw_buf_init(&b, 1 << 16);
	for (size_t i = 0; i < r.nseries; i++) {
		char *k = key(&r, i);
		double v = r.series[i].p[0].v;

		assert_int_equal(r.series[i].n, 1);
		gw_buf_putf(&b, "%s%s=", i ? ";" : "", k);
		if (isnan(v))
			gw_buf_puts(&b, "NaN");
		else if (isinf(v))
			gw_buf_puts(&b, v > 0 ? "+Inf" : "-Inf");
		else if (v == 0 && signbit(v))
			gw_buf_puts(&b, "-0");
		else
			gw_buf_putf(&b, "%.17g", v);
		free(k);
	}
	assert_int_equal(gw_buf_error(&b), 0);
	got = b.p ? b.p : "";
	if (strcmp(got, want) != 0)
		fail_msg("%s\n got: %s\nwant: %s", q, got, want);
	gw_buf_release(&b);
	gw_qresult_release(&r);
}

static void expect(struct fx *x, const char *q, const char *want)
{
	expect_at(x, q, B, want);
}

/* The value of the only series of q at t. */
static double value_at(struct fx *x, const char *q, int64_t t)
{
	struct gw_qresult r;
	double v;

	inst(x, q, t, &r);
	assert_int_equal(r.type, GW_TYPE_VECTOR);
	if (r.nseries != 1)
		fail_msg("%s: %zu series, want 1", q, r.nseries);
	v = r.series[0].p[0].v;
	gw_qresult_release(&r);
	return v;
}

/*
 * Evaluates q from start to end and compares the matrix with want:
 * "key:s=v,s=v;key:..." with s the seconds since start.
 */
static void expect_range(struct fx *x, const char *q, int64_t start,
			 int64_t end, int64_t step, const char *want)
{
	struct gw_pq_node *e = parse(q);
	struct gw_qresult r;
	struct gw_buf b;
	int rc = gw_promql_eval_range(e, &x->q, start, end, step, &x->o, &r);

	if (rc)
		fail_msg("%s: %d %s", q, rc, r.errmsg);
	gw_buf_init(&b, 1 << 16);
	for (size_t i = 0; i < r.nseries; i++) {
		char *k = key(&r, i);

		gw_buf_putf(&b, "%s%s:", i ? ";" : "", k);
		for (size_t j = 0; j < r.series[i].n; j++)
			gw_buf_putf(&b, "%s%lld=%.17g", j ? "," : "",
				    (long long)(r.series[i].p[j].t - start) /
					    1000,
				    r.series[i].p[j].v);
		free(k);
	}
	assert_int_equal(gw_buf_error(&b), 0);
	if (strcmp(b.p ? b.p : "", want) != 0)
		fail_msg("%s\n got: %s\nwant: %s", q, b.p ? b.p : "", want);
	gw_buf_release(&b);
	gw_qresult_release(&r);
	gw_promql_free(e);
}

#define assert_near(a, b)                                                      \
	do {                                                                   \
		double a_ = (a), b_ = (b);                                     \
		if (!(fabs(a_ - b_) <= 1e-9 * fmax(1, fabs(b_))))              \
			fail_msg("%s = %.17g, want %.17g", #a, a_, b_);        \
	} while (0)

/* ---- one value at a time ---- */

static void math_functions(void **state)
{
	struct fx *x = *state;

	one(x, "m", "k=\"a\"", 2.5);
	one(x, "m", "k=\"b\"", -2.5);
	one(x, "m", "k=\"c\"", -0.0);
	one(x, "m", "k=\"d\"", NAN);
	one(x, "m", "k=\"e\"", 1000);
	one(x, "m", "k=\"f\"", 8);
	/* Ties round up (floor(v + 0.5)); the name is dropped. */
	expect(x, "round(m)",
	       "{k=\"a\"}=3;{k=\"b\"}=-2;{k=\"c\"}=0;{k=\"d\"}=NaN;"
	       "{k=\"e\"}=1000;{k=\"f\"}=8");
	/* To the nearest 0.1 through its inverse: 1.25 -> 1.3 (Prometheus
	 * 2.42 says 1.3 too). */
	expect(x, "round(vector(1.25), 0.1)", "{}=1.3");
	expect(x, "round(m{k=\"a\"}, 2)", "{k=\"a\"}=2");
	expect(x, "ceil(m{k=~\"a|b\"})", "{k=\"a\"}=3;{k=\"b\"}=-2");
	expect(x, "floor(m{k=~\"a|b\"})", "{k=\"a\"}=2;{k=\"b\"}=-3");
	/* sgn keeps zero's sign and NaN. */
	expect(x, "sgn(m{k=~\"a|b|c|d\"})",
	       "{k=\"a\"}=1;{k=\"b\"}=-1;{k=\"c\"}=-0;{k=\"d\"}=NaN");
	expect(x, "abs(m{k=\"b\"})", "{k=\"b\"}=2.5");
	/* Powers give exact logarithms (Go's Log2 is exact for 2^n, and
	 * Prometheus answers 3 for log10(1000)). */
	expect(x, "log2(m{k=\"f\"})", "{k=\"f\"}=3");
	expect(x, "log10(m{k=\"e\"})", "{k=\"e\"}=3");
	expect(x, "ln(vector(0))", "{}=-Inf");
	expect(x, "ln(vector(-1))", "{}=NaN");
	expect(x, "sqrt(m{k=\"f\"})", "{k=\"f\"}=2.8284271247461903");
	expect(x, "exp(vector(0))", "{}=1");
	assert_near(value_at(x, "ln(vector(2.718281828459045))", B), 1);
	assert_near(value_at(x, "cos(vector(pi()))", B), -1);
	assert_near(value_at(x, "sin(vector(pi() / 2))", B), 1);
	assert_near(value_at(x, "tan(vector(pi() / 4))", B), 1);
	assert_near(value_at(x, "acos(vector(-1))", B), M_PI);
	assert_near(value_at(x, "asin(vector(1))", B), M_PI / 2);
	assert_near(value_at(x, "atan(vector(1))", B), M_PI / 4);
	assert_near(value_at(x, "cosh(vector(0))", B), 1);
	assert_near(value_at(x, "sinh(vector(1))", B), (M_E - 1 / M_E) / 2);
	assert_near(value_at(x, "tanh(vector(1))", B),
		    (M_E * M_E - 1) / (M_E * M_E + 1));
	assert_near(value_at(x, "acosh(vector(1))", B), 0);
	assert_near(value_at(x, "asinh(vector(0))", B), 0);
	expect(x, "atanh(vector(1))", "{}=+Inf");
	expect(x, "deg(vector(pi()))", "{}=180");
	expect(x, "rad(vector(180))", "{}=3.1415926535897931");
	/* Two series equal but for their names: an error. */
	one(x, "m2", "k=\"a\"", 1);
	inst_err(x, "abs({__name__=~\"m|m2\", k=\"a\"})", B, GW_QERR_EXECUTION,
		 "vector cannot contain metrics with the same labelset");
}

static void clamp_functions(void **state)
{
	struct fx *x = *state;

	one(x, "m", "k=\"a\"", 2.5);
	one(x, "m", "k=\"b\"", -2.5);
	one(x, "m", "k=\"c\"", -0.0);
	one(x, "m", "k=\"d\"", NAN);
	expect(x, "clamp(m, -1, 1)",
	       "{k=\"a\"}=1;{k=\"b\"}=-1;{k=\"c\"}=-0;{k=\"d\"}=NaN");
	/* max below min: no output at all. */
	expect(x, "clamp(m, 1, -1)", "");
	expect(x, "clamp_min(m, 0)",
	       "{k=\"a\"}=2.5;{k=\"b\"}=0;{k=\"c\"}=0;{k=\"d\"}=NaN");
	expect(x, "clamp_max(m, 0)",
	       "{k=\"a\"}=0;{k=\"b\"}=-2.5;{k=\"c\"}=-0;{k=\"d\"}=NaN");
	/* Go's Max and Min: NaN wins, +0 is above -0 (Prometheus 2.42:
	 * clamp(vector(5), NaN, 1) is NaN, clamp_min(vector(-0), 0) is 0). */
	expect(x, "clamp(vector(5), NaN, 1)", "{}=NaN");
	expect(x, "clamp_min(m{k=\"c\"}, 0)", "{k=\"c\"}=0");
	expect(x, "clamp_max(vector(0), -0)", "{}=-0");
}

static void date_functions(void **state)
{
	struct fx *x = *state;

	one(x, "d", "k=\"leap\"", 951782400);	/* 2000-02-29 00:00:00 Tue */
	one(x, "d", "k=\"pre\"", -1.5);		/* 1969-12-31 23:59:59 Wed */
	one(x, "d", "k=\"late\"", 4102444799.); /* 2099-12-31 23:59:59 Thu */
	expect(x, "year(d)",
	       "{k=\"late\"}=2099;{k=\"leap\"}=2000;{k=\"pre\"}=1969");
	expect(x, "month(d)", "{k=\"late\"}=12;{k=\"leap\"}=2;{k=\"pre\"}=12");
	expect(x, "day_of_month(d)",
	       "{k=\"late\"}=31;{k=\"leap\"}=29;{k=\"pre\"}=31");
	expect(x, "day_of_week(d)",
	       "{k=\"late\"}=4;{k=\"leap\"}=2;{k=\"pre\"}=3");
	expect(x, "day_of_year(d)",
	       "{k=\"late\"}=365;{k=\"leap\"}=60;{k=\"pre\"}=365");
	expect(x, "days_in_month(d)",
	       "{k=\"late\"}=31;{k=\"leap\"}=29;{k=\"pre\"}=31");
	expect(x, "hour(d)", "{k=\"late\"}=23;{k=\"leap\"}=0;{k=\"pre\"}=23");
	expect(x, "minute(d)", "{k=\"late\"}=59;{k=\"leap\"}=0;{k=\"pre\"}=59");
	/* Without an argument: the evaluation time, B = 1970-02-11 16:00,
	 * a Wednesday, day 42 of the year; no labels. */
	expect(x, "year()", "{}=1970");
	expect(x, "month()", "{}=2");
	expect(x, "day_of_month()", "{}=11");
	expect(x, "day_of_week()", "{}=3");
	expect(x, "day_of_year()", "{}=42");
	expect(x, "days_in_month()", "{}=28");
	expect(x, "hour()", "{}=16");
	expect_at(x, "minute()", B + 59 * MIN + 59 * SEC, "{}=59");
	/* NaN: Go converts it to the smallest int64, a date 292 billion
	 * years away.  Prometheus 2.42 answers these, on amd64. */
	expect(x, "year(vector(NaN))", "{}=292277026596");
	expect(x, "month(vector(NaN))", "{}=12");
	expect(x, "day_of_month(vector(NaN))", "{}=4");
	expect(x, "day_of_year(vector(NaN))", "{}=339");
	expect(x, "day_of_week(vector(NaN))", "{}=0");
	expect(x, "hour(vector(NaN))", "{}=15");
	expect(x, "minute(vector(NaN))", "{}=30");
	expect(x, "days_in_month(vector(NaN))", "{}=31");
	expect(x, "year(vector(Inf))", "{}=292277026596");
}

static void timestamp_function(void **state)
{
	struct fx *x = *state;
	double v[] = { 5, 6 };
	size_t id;

	assert_int_equal(gw_fakeq_series(x->f, "ts", "job=\"a\"", &id), 0);
	assert_int_equal(gw_fakeq_sample(x->f, id, B + SEC, v[0]), 0);
	assert_int_equal(gw_fakeq_sample(x->f, id, B + 61500, v[1]), 0);
	/* The sample's own time, name dropped. */
	expect_at(x, "timestamp(ts)", B + 100 * SEC, "{job=\"a\"}=3600061.5");
	expect_at(x, "timestamp((ts))", B + 100 * SEC, "{job=\"a\"}=3600061.5");
	/* With offset: the time of the sample the offset found. */
	expect_at(x, "timestamp(ts offset 1m)", B + 100 * SEC,
		  "{job=\"a\"}=3600001");
	/* Of anything else: the evaluation time. */
	expect_at(x, "timestamp(ts * 2)", B + 100 * SEC, "{job=\"a\"}=3600100");
	/* Past the lookback: nothing. */
	expect_at(x, "timestamp(ts)", B + 400 * SEC, "");
}

/* ---- range vectors ---- */

static void range_functions(void **state)
{
	struct fx *x = *state;
	double ch[] = { 1, 1, 2, NAN, NAN, 2, 3 };
	double rs[] = { 5, 3, 4, 1, 1, 0.5 };
	double ln[] = { 5, 10, 15, 20 };
	double hw[] = { 1, 2, 4 };
	double id[] = { 1, 3, 2 };
	double sv[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	double md[] = { 1, 1, 2, 2, 4, 6, 9 };
	double cs[] = { 7, 7, 7 };
	double infs[] = { INFINITY, INFINITY };

	series(x, "ch", "", B - 70 * SEC, 10 * SEC, 7, ch);
	series(x, "rs", "", B - 60 * SEC, 10 * SEC, 6, rs);
	/* ln: y = 0.5 * (seconds since B - 1m): a line of slope 0.5. */
	series(x, "ln", "", B - 50 * SEC, 10 * SEC, 4, ln);
	series(x, "hw", "", B - 30 * SEC, 10 * SEC, 3, hw);
	series(x, "id", "", B - 30 * SEC, 10 * SEC, 3, id);
	series(x, "sv", "", B - 80 * SEC, 10 * SEC, 8, sv);
	series(x, "md", "", B - 70 * SEC, 10 * SEC, 7, md);
	series(x, "cs", "", B - 30 * SEC, 10 * SEC, 3, cs);
	series(x, "infs", "", B - 20 * SEC, 10 * SEC, 2, infs);
	/* 1=1, 1->2, 2->NaN, NaN=NaN, NaN->2, 2->3: four changes. */
	expect(x, "changes(ch[2m])", "{}=4");
	/* 5->3, 4->1, 1->0.5 go down. */
	expect(x, "resets(rs[2m])", "{}=3");
	expect(x, "deriv(ln[2m])", "{}=0.5");
	/* The line at B + 100s (20 at B - 20s, so 20 + 0.5 * 120). */
	expect(x, "predict_linear(ln[2m], 100)", "{}=80");
	expect(x, "deriv(cs[1m])", "{}=0");
	expect(x, "predict_linear(cs[1m], 3600)", "{}=7");
	/* A constant infinity has no slope. */
	expect(x, "deriv(infs[1m])", "{}=NaN");
	/* One sample: no output. */
	expect(x, "deriv(ln[15s])", "");
	/* s1 = 1, b = 1; x = 1, y = 0.5 (1 + 1): s = 2; b = 0.5 (2 - 1) +
	 * 0.5 * 1 = 1, x = 2, y = 0.5 (2 + 1): s = 3.5. */
	expect(x, "holt_winters(hw[1m], 0.5, 0.5)", "{}=3.5");
	expect(x, "double_exponential_smoothing(hw[1m], 0.5, 0.5)", "{}=3.5");
	expect(x, "idelta(id[1m])", "{}=-1");
	expect(x, "idelta(id[5s])", "");
	/* Mean 5, squares of deviations 9 1 1 1 0 0 4 16: 32 / 8. */
	expect(x, "stdvar_over_time(sv[2m])", "{}=4");
	expect(x, "stddev_over_time(sv[2m])", "{}=2");
	/* Median 2; deviations 1 1 0 0 2 4 7, their median 1. */
	expect(x, "mad_over_time(md[2m])", "{}=1");
	expect(x, "present_over_time(hw[1m])", "{}=1");
	expect(x, "present_over_time(hw[5s])", "");
	/* Prometheus checks the factors when there is something to smooth
	 * (texts as Prometheus 2.42's). */
	inst_err(x, "holt_winters(hw[1m], 0, 0.5)", B, GW_QERR_EXECUTION,
		 "invalid smoothing factor. Expected: 0 < sf < 1, got: "
		 "0.000000");
	inst_err(x, "holt_winters(hw[1m], 0.5, 1)", B, GW_QERR_EXECUTION,
		 "invalid trend factor. Expected: 0 < tf < 1, got: 1.000000");
	expect(x, "holt_winters(nothing[1m], 0, 0.5)", "");
}

static void absent_functions(void **state)
{
	struct fx *x = *state;
	double v[] = { 1, 2 };

	one(x, "here", "job=\"a\"", 1);
	expect(x, "absent(here)", "");
	expect(x, "absent(nothing)", "{}=1");
	/* The equality matchers' labels; a name matched twice, or also
	 * matched otherwise, is left out; an empty value is no label.
	 * Checked against Prometheus 2.42. */
	expect(x, "absent(nothing{job=\"x\"})", "{job=\"x\"}=1");
	expect(x, "absent(nothing{job=\"x\",job=\"y\",a=\"b\"})",
	       "{a=\"b\"}=1");
	expect(x, "absent(nothing{job=~\"x\",a=\"b\",a!=\"c\",d=\"e\"})",
	       "{d=\"e\"}=1");
	expect(x, "absent(nothing{job=~\"x\",job=\"y\"})", "{job=\"y\"}=1");
	expect(x, "absent(nothing{job=\"\"})", "{}=1");
	expect(x, "absent((nothing{job=\"x\"}))", "{job=\"x\"}=1");
	expect(x, "absent(sum(nothing{job=\"x\"}))", "{}=1");
	expect(x, "absent({__name__=\"nothing\",foo=\"bar\"})",
	       "{foo=\"bar\"}=1");
	expect(x, "absent_over_time(here[1m])", "");
	expect(x, "absent_over_time(nothing{a=\"b\",c=~\"d\"}[1m])",
	       "{a=\"b\"}=1");
	/* A range query: 1 where the window holds no sample of any series
	 * (samples at B and B + 170s; 30s windows every minute). */
	series(x, "sp", "job=\"a\"", B, 170 * SEC, 2, v);
	expect_range(x, "absent_over_time(sp{job=\"a\"}[30s])", B, B + 5 * MIN,
		     MIN, "{job=\"a\"}:60=1,120=1,240=1,300=1");
	expect_range(x, "present_over_time(sp[30s])", B, B + 5 * MIN, MIN,
		     "{job=\"a\"}:0=1,180=1");
}

/* ---- labels ---- */

static void label_fixture(struct fx *x)
{
	one(x, "l", "src=\"foo-bar-12\",x=\"y\",dst=\"old\"", 1);
	one(x, "l", "src=\"baz\",x=\"z\"", 2);
}

static void label_replace_function(void **state)
{
	struct fx *x = *state;

	label_fixture(x);
	/* Groups by number; the name is kept; no match leaves the series
	 * as it was (dst="old" stays only where the regex failed). */
	expect(x,
	       "label_replace(l, \"dst\", \"$1-$2\", \"src\", "
	       "\"([a-z]+)-([a-z]+)-([0-9]+)\")",
	       "l{dst=\"foo-bar\",src=\"foo-bar-12\",x=\"y\"}=1;"
	       "l{src=\"baz\",x=\"z\"}=2");
	/* The regex is anchored: "a" does not match "baz". */
	expect(x, "label_replace(l, \"dst\", \"new\", \"src\", \"a\")",
	       "l{dst=\"old\",src=\"foo-bar-12\",x=\"y\"}=1;"
	       "l{src=\"baz\",x=\"z\"}=2");
	/* ${1}x is group 1 then x; $1x is the group named "1x", which does
	 * not exist: "" and the label goes (Go's Expand). */
	expect(x, "label_replace(l, \"dst\", \"${1}x\", \"src\", \"(b)(.*)\")",
	       "l{dst=\"bx\",src=\"baz\",x=\"z\"}=2;"
	       "l{dst=\"old\",src=\"foo-bar-12\",x=\"y\"}=1");
	expect(x, "label_replace(l, \"dst\", \"$1x\", \"src\", \"(f)(.*)\")",
	       "l{src=\"baz\",x=\"z\"}=2;l{src=\"foo-bar-12\",x=\"y\"}=1");
	/* Named groups; $$ is a dollar, a malformed reference is text. */
	expect(x,
	       "label_replace(l, \"dst\", \"$name\", \"src\", "
	       "\"(?P<name>[a-z]+).*\")",
	       "l{dst=\"baz\",src=\"baz\",x=\"z\"}=2;"
	       "l{dst=\"foo\",src=\"foo-bar-12\",x=\"y\"}=1");
	expect(x, "label_replace(l, \"dst\", \"$$1 $ ${\", \"src\", \"baz\")",
	       "l{dst=\"$1 $ ${\",src=\"baz\",x=\"z\"}=2;"
	       "l{dst=\"old\",src=\"foo-bar-12\",x=\"y\"}=1");
	/* A missing source label is "", which ".*" matches. */
	expect(x, "label_replace(l, \"dst\", \"$1\", \"nope\", \"(.*)\")",
	       "l{src=\"baz\",x=\"z\"}=2;l{src=\"foo-bar-12\",x=\"y\"}=1");
	/* The name can be rewritten too. */
	expect(x,
	       "label_replace(l, \"__name__\", \"n_$1\", \"src\", \"ba(.)\")",
	       "l{dst=\"old\",src=\"foo-bar-12\",x=\"y\"}=1;"
	       "n_z{src=\"baz\",x=\"z\"}=2");
	/* Errors, checked even with nothing to rewrite; texts as
	 * Prometheus 2.42's. */
	inst_err(x, "label_replace(l, \"dst\", \"$1\", \"src\", \"(.*\")", B,
		 GW_QERR_EXECUTION,
		 "invalid regular expression in label_replace(): (.*");
	inst_err(x,
		 "label_replace(nothing, \"1dst\", \"$1\", \"src\", \"(.*)\")",
		 B, GW_QERR_EXECUTION,
		 "invalid destination label name in label_replace(): 1dst");
	/* A range query rewrites every step alike. */
	expect_range(x, "label_replace(l, \"dst\", \"$1\", \"src\", \"(b).*\")",
		     B - MIN, B, 30 * SEC,
		     "l{dst=\"b\",src=\"baz\",x=\"z\"}:0=2,30=2,60=2;"
		     "l{dst=\"old\",src=\"foo-bar-12\",x=\"y\"}:0=1,30=1,60=1");
	/* Two series made equal: Prometheus' error. */
	one(x, "l", "src=\"qux\",x=\"q\"", 3);
	inst_err(x,
		 "label_replace(label_replace(l, \"x\", \"\", \"x\", \".*\"), "
		 "\"src\", \"s\", \"src\", \".*\")",
		 B, GW_QERR_EXECUTION,
		 "vector cannot contain metrics with the same labelset");
}

static void label_join_function(void **state)
{
	struct fx *x = *state;

	label_fixture(x);
	expect(x, "label_join(l, \"j\", \"-\", \"src\", \"x\")",
	       "l{dst=\"old\",j=\"foo-bar-12-y\",src=\"foo-bar-12\",x=\"y\"}=1;"
	       "l{j=\"baz-z\",src=\"baz\",x=\"z\"}=2");
	/* Missing labels join as "", an empty result removes the label. */
	expect(x, "label_join(l, \"j\", \",\", \"nope\", \"x\", \"nope\")",
	       "l{dst=\"old\",j=\",y,\",src=\"foo-bar-12\",x=\"y\"}=1;"
	       "l{j=\",z,\",src=\"baz\",x=\"z\"}=2");
	expect(x, "label_join(l, \"dst\", \",\")",
	       "l{src=\"baz\",x=\"z\"}=2;l{src=\"foo-bar-12\",x=\"y\"}=1");
	expect(x, "label_join(l, \"src\", \"\", \"x\", \"x\")",
	       "l{dst=\"old\",src=\"yy\",x=\"y\"}=1;l{src=\"zz\",x=\"z\"}=2");
	inst_err(x, "label_join(l, \"j\", \",\", \"1x\")", B, GW_QERR_EXECUTION,
		 "invalid source label name in label_join(): 1x");
	inst_err(x, "label_join(nothing, \"1j\", \",\", \"x\")", B,
		 GW_QERR_EXECUTION,
		 "invalid destination label name in label_join(): 1j");
}

/* ---- order ---- */

static void sort_functions(void **state)
{
	struct fx *x = *state;
	static const double v[] = { 3, NAN, -1, 3, 10, INFINITY, -INFINITY, 0 };
	char lab[16];

	for (int i = 0; i < 8; i++) {
		snprintf(lab, sizeof(lab), "i=\"%d\"", i);
		one(x, "so", lab, v[i]);
	}
	/* An instant query keeps the order; NaN last both ways (as
	 * Prometheus 2.42 orders them); equal values by labels. */
	expect(x, "sort(so)",
	       "so{i=\"6\"}=-Inf;so{i=\"2\"}=-1;so{i=\"7\"}=0;so{i=\"0\"}=3;"
	       "so{i=\"3\"}=3;so{i=\"4\"}=10;so{i=\"5\"}=+Inf;so{i=\"1\"}=NaN");
	expect(x, "sort_desc(so)",
	       "so{i=\"5\"}=+Inf;so{i=\"4\"}=10;so{i=\"0\"}=3;so{i=\"3\"}=3;"
	       "so{i=\"7\"}=0;so{i=\"2\"}=-1;so{i=\"6\"}=-Inf;so{i=\"1\"}=NaN");
	expect(x, "(sort_desc(so{i=~\"[0-2]\"}))",
	       "so{i=\"0\"}=3;so{i=\"2\"}=-1;so{i=\"1\"}=NaN");
	/* Inside an expression the order is not the answer: by labels. */
	expect(x, "sort_desc(so{i=~\"[0-2]\"}) * 1",
	       "{i=\"0\"}=3;{i=\"1\"}=NaN;{i=\"2\"}=-1");
	/* Natural order: a9 < a10 < a010b (equal numbers: the string that
	 * ends first is the smaller) < b; then by all labels. */
	one(x, "n", "s=\"a10\"", 1);
	one(x, "n", "s=\"a9\"", 2);
	one(x, "n", "s=\"a010b\"", 3);
	one(x, "n", "s=\"b\",t=\"2\"", 4);
	one(x, "n", "s=\"b\",t=\"1\"", 5);
	expect(x, "sort_by_label(n, \"s\")",
	       "n{s=\"a9\"}=2;n{s=\"a10\"}=1;n{s=\"a010b\"}=3;"
	       "n{s=\"b\",t=\"1\"}=5;n{s=\"b\",t=\"2\"}=4");
	expect(x, "sort_by_label_desc(n, \"s\")",
	       "n{s=\"b\",t=\"2\"}=4;n{s=\"b\",t=\"1\"}=5;n{s=\"a010b\"}=3;"
	       "n{s=\"a10\"}=1;n{s=\"a9\"}=2");
	expect(x, "sort_by_label(n{s=\"b\"}, \"t\")",
	       "n{s=\"b\",t=\"1\"}=5;n{s=\"b\",t=\"2\"}=4");
}

/* ---- histogram_quantile ---- */

static void buckets(struct fx *x, const char *name, const char *job,
		    const char *const *le, const double *c, size_t n)
{
	char lab[128];

	for (size_t i = 0; i < n; i++) {
		snprintf(lab, sizeof(lab), "job=\"%s\",le=\"%s\"", job, le[i]);
		one(x, name, lab, c[i]);
	}
}

static void histogram_quantile_function(void **state)
{
	struct fx *x = *state;
	static const char *const le[] = { "0.1", "0.5", "1", "2.5", "+Inf" };
	static const double a[] = { 1, 5, 9, 10, 12 };
	static const double c[] = { 2, 5, 4, 6, 6 }; /* not monotonic */
	static const double z[] = { 0, 0, 0, 0, 0 };
	static const char *const le_noinf[] = { "0.1", "1" };
	static const char *const le_dup[] = { "1", "1.0", "5", "+Inf", "x" };
	static const double dup[] = { 2, 3, 8, 10, 100 };
	static const char *const le_neg[] = { "-1", "0", "1", "+Inf" };
	static const double neg[] = { 2, 4, 6, 8 };

	buckets(x, "h_bucket", "a", le, a, 5);
	buckets(x, "h_bucket", "c", le, c, 5);
	buckets(x, "h_bucket", "z", le, z, 5);
	buckets(x, "h_bucket", "noinf", le_noinf, a, 2);
	buckets(x, "h_bucket", "dup", le_dup, dup, 5);
	buckets(x, "h_bucket", "neg", le_neg, neg, 4);
	/* a: rank 0.5 * 12 = 6 falls in (0.5, 1] holding 5..9: 0.5 + 0.5 *
	 * (6 - 5) / 4.  c: counts raised to 2 5 5 6 6, rank 3 in (0.1, 0.5]
	 * holding 2..5: 0.1 + 0.4 / 3.  dup: "1" and "1.0" are one bucket
	 * of 5, "x" is no bucket: rank 5 is the top of (0, 1].  neg: rank 4
	 * in (-1, 0] holding 2..4.  z: no observations; noinf: no +Inf. */
	expect(x, "histogram_quantile(0.5, h_bucket)",
	       "{job=\"a\"}=0.625;{job=\"c\"}=0.23333333333333334;"
	       "{job=\"dup\"}=1;{job=\"neg\"}=0;{job=\"noinf\"}=NaN;"
	       "{job=\"z\"}=NaN");
	/* a: rank 10.8 lies in +Inf: the largest finite bound.  neg: rank
	 * 0.8 in the first bucket, whose bound is <= 0: that bound. */
	expect(x, "histogram_quantile(0.9, h_bucket{job=\"a\"})",
	       "{job=\"a\"}=2.5");
	expect(x, "histogram_quantile(0.1, h_bucket{job=\"neg\"})",
	       "{job=\"neg\"}=-1");
	expect(x, "histogram_quantile(0, h_bucket{job=\"a\"})",
	       "{job=\"a\"}=0");
	expect(x, "histogram_quantile(-1, h_bucket{job=\"a\"})",
	       "{job=\"a\"}=-Inf");
	expect(x, "histogram_quantile(2, h_bucket{job=\"a\"})",
	       "{job=\"a\"}=+Inf");
	expect(x, "histogram_quantile(NaN, h_bucket{job=\"a\"})",
	       "{job=\"a\"}=NaN");
	/* Over rates, grouped by all labels but le. */
	/* Summed first: 3 10 13 16 18, rank 9 in (0.1, 0.5] holding 3..10. */
	assert_near(value_at(x,
			     "histogram_quantile(0.5, sum by (le) "
			     "(h_bucket{job=~\"a|c\"}))",
			     B),
		    0.1 + 0.4 * 6 / 7);
	/* Series without le are not buckets. */
	one(x, "g", "job=\"a\"", 1);
	expect(x, "histogram_quantile(0.5, g)", "");
	/* The name is part of the group, then dropped: two histograms with
	 * the same labels clash. */
	buckets(x, "h2_bucket", "a", le, a, 5);
	inst_err(x,
		 "histogram_quantile(0.5, {__name__=~\"h_bucket|h2_bucket\","
		 "job=\"a\"})",
		 B, GW_QERR_EXECUTION,
		 "vector cannot contain metrics with the same labelset");
}

/* ---- rollup tiers ---- */

/* A gauge and a counter (1 per second) every 10s for 2 hours; the raw tier
 * keeps the last 10 minutes, so B + 30m reads the 1-minute rollups. */
static void rollup_functions(void **state)
{
	struct fx *x = *state;
	int64_t end = B + 2 * HOUR, t = B + 30 * MIN;
	double sum = 0, sumsq = 0, n = 0, mean;
	struct gw_qresult r;
	size_t g, c;

	assert_int_equal(gw_fakeq_series(x->f, "g", "job=\"a\"", &g), 0);
	assert_int_equal(gw_fakeq_series(x->f, "c", "job=\"a\"", &c), 0);
	for (int64_t s = B; s < end; s += 10 * SEC) {
		double y = (double)((s / SEC) % 7);

		assert_int_equal(gw_fakeq_sample(x->f, g, s, y), 0);
		assert_int_equal(
			gw_fakeq_sample(x->f, c, s, (double)(s - B) / 1000), 0);
		if (s >= t - 10 * MIN && s < t) {
			sum += y;
			sumsq += y * y;
			n++;
		}
	}
	gw_fakeq_retention(x->f, GW_TIER_RAW, end - 10 * MIN);
	inst(x, "stdvar_over_time(g[10m])", t, &r);
	assert_int_equal(r.tier, GW_TIER_1M);
	gw_qresult_release(&r);
	/* From the rollups' count, sum and sum of squares: the raw values
	 * of the windows ending in (20m, 30m]. */
	mean = sum / n;
	assert_near(value_at(x, "stdvar_over_time(g[10m])", t),
		    sumsq / n - mean * mean);
	/* Functions of the samples see each rollup's last sample: 10
	 * points, from (20:50, 1250) to (29:50, 1790). */
	assert_near(value_at(x, "changes(c[10m])", t), 9);
	assert_near(value_at(x, "resets(c[10m])", t), 0);
	assert_near(value_at(x, "deriv(c[10m])", t), 1);
	assert_near(value_at(x, "idelta(c[10m])", t), 60);
	assert_near(value_at(x, "predict_linear(c[10m], 60)", t), 1860);
	assert_near(value_at(x, "present_over_time(c[10m])", t), 1);
	expect_at(x, "absent_over_time(c[10m])", t, "");
	/* timestamp: the time of the latest rollup's last sample. */
	expect_at(x, "timestamp(c)", t, "{job=\"a\"}=3601790");
}

/* ---- the parser ---- */

static void parse_calls(void **state)
{
	static const struct {
		const char *q, *msg;
	} bad[] = {
		/* Prometheus 2.42's texts. */
		{ "round()", "1:1: parse error: expected at least 1 "
			     "argument(s) in call to \"round\", got 0" },
		{ "round(g, 1, 2)", "1:1: parse error: expected at most 2 "
				    "argument(s) in call to \"round\", got 3" },
		{ "label_join(l, \"a\")",
		  "1:1: parse error: expected at least 3 argument(s) in call "
		  "to \"label_join\", got 2" },
		{ "day_of_month(g, g)",
		  "1:1: parse error: expected at most 1 argument(s) in call "
		  "to \"day_of_month\", got 2" },
		{ "clamp(g, 1)", "1:1: parse error: expected 3 argument(s) in "
				 "call to \"clamp\", got 2" },
		{ "pi(1)", "1:1: parse error: expected 0 argument(s) in call "
			   "to \"pi\", got 1" },
		{ "histogram_quantile(g, 0.5)",
		  "1:20: parse error: expected type scalar in call to "
		  "function \"histogram_quantile\", got instant vector" },
		{ "label_join(l, \"a\", \"b\", \"c\", 1)",
		  "1:30: parse error: expected type string in call to "
		  "function \"label_join\", got scalar" },
		{ "absent_over_time(g)",
		  "1:18: parse error: expected type range vector in call to "
		  "function \"absent_over_time\", got instant vector" },
		{ "timestamp(g[1m])",
		  "1:11: parse error: expected type instant vector in call to "
		  "function \"timestamp\", got range vector" },
		{ "histogram_sum(g)", "1:1: parse error: function "
				      "\"histogram_sum\" is not supported" },
	};
	static const char *const good[] = {
		"round(g)",
		"round(g, 0.5)",
		"year()",
		"year(g)",
		"label_join(l, \"a\", \",\")",
		"label_join(l, \"a\", \",\", \"b\", \"c\", \"d\")",
		"sort_by_label(g)",
		"sort_by_label_desc(g, \"a\", \"b\")",
		"holt_winters((g[5m]), 0.5, 0.5)",
		"predict_linear(g[5m], 60)",
		"clamp(g, 0, 1)",
		"pi()",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gw_promql_error err;
		struct gw_pq_node *n = NULL;

		if (gw_promql_parse(bad[i].q, &n, &err) != -EINVAL)
			fail_msg("%s: parsed", bad[i].q);
		assert_string_equal(err.msg, bad[i].msg);
	}
	/* Valid calls, and their canonical text parses to the same. */
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct gw_pq_node *n = parse(good[i]), *m;
		struct gw_buf a, b;

		gw_buf_init(&a, 4096);
		gw_buf_init(&b, 4096);
		assert_int_equal(gw_promql_format(n, &a), 0);
		m = parse(a.p);
		assert_int_equal(gw_promql_format(m, &b), 0);
		assert_string_equal(a.p, b.p);
		gw_buf_release(&a);
		gw_buf_release(&b);
		gw_promql_free(n);
		gw_promql_free(m);
	}
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(math_functions),	   T(clamp_functions),
		T(date_functions),	   T(timestamp_function),
		T(range_functions),	   T(absent_functions),
		T(label_replace_function), T(label_join_function),
		T(sort_functions),	   T(histogram_quantile_function),
		T(rollup_functions),	   cmocka_unit_test(parse_calls),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
