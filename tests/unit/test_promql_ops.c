/* SPDX-License-Identifier: MIT */
/*
 * test_promql_ops.c - the PromQL operators and modifiers against an
 * in-memory store: set operators, group_left/group_right, atan2, the
 * aggregations stddev, stdvar, group, count_values, the order of topk and
 * bottomk, subqueries, @ and negative offsets, and NUL bytes and invalid
 * UTF-8 in queries.
 *
 * The data set is the one of prom_fixture() below.  Every expected value
 * and error text here is what Prometheus 2.42 returned for the same query
 * at the same time on the same samples (loaded with `promtool tsdb
 * create-blocks-from openmetrics`, queried through its HTTP API), unless a
 * comment says otherwise.  Range windows are taken at times where a window
 * of Prometheus 2.42 ([t - r, t]) and of ours ((t - r, t]) hold the same
 * points, so the comparison is about the operators, not that choice.
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

#include "common/utf8.h"
#include "query/promql.h"

#include "fake_queryable.c"

#define SEC 1000LL
#define B   (3600000 * SEC) /* the first sample */

struct fx {
	struct gw_fakeq *f;
	struct gw_queryable q;
	struct gw_promql_opts o;
};

/*
 * Every 10 s from B to B + 1200 s: m{s="a"} = i, m{s="b"} = 10 - i % 7,
 * m{s="c"} = i every 30 s; t (ties) a=1 b=1 c=2 d=1 e=NaN f=0; l and r for
 * matching (l{g,i} 1 2 3, l2{g="x",i="1"} 5, r{g,info} 10 20, r2 two
 * series of g="x"); p{s=a,b} 1 2 and q{s=b,c} 20 30 for set operators;
 * v{s,k} 1.5 1.5 2 4 for count_values; w{h="j % 2",i="j"} for j < 40 =
 * (j * 5) % 3, but 5 for j = 23 and NaN for j = 17, many ties for topk.
 */
static int setup(void **state)
{
	static const struct {
		const char *name, *labels;
	} k[] = {
		{ "m", "s=\"a\"" },
		{ "m", "s=\"b\"" },
		{ "m", "s=\"c\"" },
		{ "t", "s=\"a\"" },
		{ "t", "s=\"b\"" },
		{ "t", "s=\"c\"" },
		{ "t", "s=\"d\"" },
		{ "t", "s=\"e\"" },
		{ "t", "s=\"f\"" },
		{ "l", "g=\"x\",i=\"1\"" },
		{ "l", "g=\"x\",i=\"2\"" },
		{ "l", "g=\"y\",i=\"3\"" },
		{ "l2", "g=\"x\",i=\"1\"" },
		{ "r", "g=\"x\",info=\"ix\"" },
		{ "r", "g=\"y\",info=\"iy\"" },
		{ "r2", "g=\"x\",info=\"a\"" },
		{ "r2", "g=\"x\",info=\"b\"" },
		{ "p", "s=\"a\"" },
		{ "p", "s=\"b\"" },
		{ "q", "s=\"b\"" },
		{ "q", "s=\"c\"" },
		{ "v", "s=\"a\",k=\"x\"" },
		{ "v", "s=\"b\",k=\"x\"" },
		{ "v", "s=\"c\",k=\"y\"" },
		{ "v", "s=\"d\",k=\"y\"" },
	};
	static const double konst[] = {
		0,  0,	0,  1,	1, 2, 1,  NAN, 0,   1,	 2, 3, 5,
		10, 20, 10, 20, 1, 2, 20, 30,  1.5, 1.5, 2, 4,
	};
	struct fx *x = calloc(1, sizeof(*x));
	size_t id[sizeof(k) / sizeof(k[0])], wid[40];

	if (!x || gw_fakeq_new(&x->f)) {
		free(x);
		return -1;
	}
	gw_fakeq_queryable(x->f, &x->q);
	for (size_t j = 0; j < sizeof(k) / sizeof(k[0]); j++)
		assert_int_equal(
			gw_fakeq_series(x->f, k[j].name, k[j].labels, &id[j]),
			0);
	for (int j = 0; j < 40; j++) {
		char l[32];

		snprintf(l, sizeof(l), "h=\"%d\",i=\"%02d\"", j % 2, j);
		assert_int_equal(gw_fakeq_series(x->f, "w", l, &wid[j]), 0);
	}
	for (int i = 0; i <= 120; i++)
		for (int j = 0; j < 40; j++)
			assert_int_equal(
				gw_fakeq_sample(x->f, wid[j], B + i * 10 * SEC,
						j == 17	  ? NAN
						: j == 23 ? 5
							  : (j * 5) % 3),
				0);
	for (int i = 0; i <= 120; i++)
		for (size_t j = 0; j < sizeof(k) / sizeof(k[0]); j++) {
			double v = j == 0   ? i
				   : j == 1 ? 10 - i % 7
				   : j == 2 ? i
					    : konst[j];

			if (j == 2 && i % 3)
				continue;
			assert_int_equal(gw_fakeq_sample(x->f, id[j],
							 B + i * 10 * SEC, v),
					 0);
		}
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

/* ---- helpers ---- */

/* A result as text, in its order: "key value, ..." for a vector, "key
 * [t:v t:v], ..." for a matrix (t in seconds after B), "value" for a
 * scalar. */
static char *text(const struct gw_qresult *r)
{
	struct gw_buf b;

	gw_buf_init(&b, 1 << 20);
	if (r->type == GW_TYPE_SCALAR) {
		assert_int_equal(gw_promql_fmt_value(&b, r->scalar.v), 0);
		return gw_buf_detach(&b, NULL);
	}
	for (size_t i = 0; i < r->nseries; i++) {
		const struct gw_qseries *s = &r->series[i];

		if (i)
			gw_buf_puts(&b, ", ");
		assert_int_equal(gw_labels_key(&s->labels, &b), 0);
		gw_buf_puts(&b, r->type == GW_TYPE_MATRIX ? " [" : " ");
		for (size_t j = 0; j < s->n; j++) {
			if (r->type == GW_TYPE_MATRIX)
				gw_buf_putf(&b, "%s%lld:", j ? " " : "",
					    (long long)((s->p[j].t - B) / SEC));
			assert_int_equal(gw_promql_fmt_value(&b, s->p[j].v), 0);
		}
		if (r->type == GW_TYPE_MATRIX)
			gw_buf_puts(&b, "]");
	}
	gw_buf_put(&b, "", 1);
	assert_int_equal(gw_buf_error(&b), 0);
	return gw_buf_detach(&b, NULL);
}

static struct gw_pq_node *parse(const char *q)
{
	struct gw_promql_error err;
	struct gw_pq_node *n = NULL;

	if (gw_promql_parse(q, &n, &err))
		fail_msg("%s: %s", q, err.msg);
	return n;
}

/* q at B + secs must give want (as text()). */
static void at(struct fx *x, const char *q, int64_t secs, const char *want)
{
	struct gw_pq_node *e = parse(q);
	struct gw_qresult r;
	int rc = gw_promql_eval_instant(e, &x->q, B + secs * SEC, &x->o, &r);
	char *got;

	if (rc)
		fail_msg("%s: %d %s", q, rc, r.errmsg);
	got = text(&r);
	if (strcmp(got, want) != 0)
		fail_msg("%s at +%llds\n  got  %s\n  want %s", q,
			 (long long)secs, got, want);
	free(got);
	gw_qresult_release(&r);
	gw_promql_free(e);
}

/* q from B + start to B + end by step (seconds) must give want. */
static void over(struct fx *x, const char *q, int64_t start, int64_t end,
		 int64_t step, const char *want)
{
	struct gw_pq_node *e = parse(q);
	struct gw_qresult r;
	int rc = gw_promql_eval_range(e, &x->q, B + start * SEC, B + end * SEC,
				      step * SEC, &x->o, &r);
	char *got;

	if (rc)
		fail_msg("%s: %d %s", q, rc, r.errmsg);
	got = text(&r);
	if (strcmp(got, want) != 0)
		fail_msg("%s\n  got  %s\n  want %s", q, got, want);
	free(got);
	gw_qresult_release(&r);
	gw_promql_free(e);
}

/* q at B + secs must fail with kind and msg in its message. */
static void fails(struct fx *x, const char *q, int64_t secs, enum gw_qerr kind,
		  const char *msg)
{
	struct gw_pq_node *e = parse(q);
	struct gw_qresult r;
	int rc = gw_promql_eval_instant(e, &x->q, B + secs * SEC, &x->o, &r);

	assert_true(rc < 0);
	assert_int_equal(r.err, kind);
	if (!strstr(r.errmsg, msg))
		fail_msg("%s: \"%s\" lacks \"%s\"", q, r.errmsg, msg);
	assert_int_equal(r.nseries, 0);
	gw_qresult_release(&r);
	gw_promql_free(e);
}

/* ---- set operators ---- */

static void set_operators(void **state)
{
	struct fx *x = *state;

	/* and/unless keep the left side whole; or adds the right side's
	 * unmatched series after the left's (instant results are sorted by
	 * labels here, see promql.md). */
	at(x, "p and q", 600, "p{s=\"b\"} 2");
	at(x, "p unless q", 600, "p{s=\"a\"} 1");
	at(x, "p or q", 600, "p{s=\"a\"} 1, p{s=\"b\"} 2, q{s=\"c\"} 30");
	at(x, "q or p", 600, "p{s=\"a\"} 1, q{s=\"b\"} 20, q{s=\"c\"} 30");
	/* on() matches everything with everything. */
	at(x, "p and on() q", 600, "p{s=\"a\"} 1, p{s=\"b\"} 2");
	at(x, "p or on() q", 600, "p{s=\"a\"} 1, p{s=\"b\"} 2");
	at(x, "p unless on() q", 600, "");
	at(x, "l unless on(g) r{g=\"x\"}", 600, "l{g=\"y\",i=\"3\"} 3");
	/* The name is part of the match: l and r share no label set. */
	at(x, "l or r", 600,
	   "l{g=\"x\",i=\"1\"} 1, l{g=\"x\",i=\"2\"} 2, l{g=\"y\",i=\"3\"} 3, "
	   "r{g=\"x\",info=\"ix\"} 10, r{g=\"y\",info=\"iy\"} 20");
	/* Duplicates on either side are fine for set operators. */
	at(x, "l and on(g) r", 600,
	   "l{g=\"x\",i=\"1\"} 1, l{g=\"x\",i=\"2\"} 2, l{g=\"y\",i=\"3\"} 3");
	/* An empty side. */
	at(x, "nothing or p", 600, "p{s=\"a\"} 1, p{s=\"b\"} 2");
	at(x, "p unless nothing", 600, "p{s=\"a\"} 1, p{s=\"b\"} 2");
	at(x, "p and nothing", 600, "");
	/* Precedence: and binds tighter than or, comparisons tighter still. */
	over(x, "p or q{s=\"c\"} > 25", 600, 610, 10,
	     "p{s=\"a\"} [600:1 610:1], p{s=\"b\"} [600:2 610:2], "
	     "q{s=\"c\"} [600:30 610:30]");
}

/* ---- vector matching ---- */

static void group_left_right(void **state)
{
	struct fx *x = *state;

	at(x, "l * on(g) group_left(info) r", 600,
	   "{g=\"x\",i=\"1\",info=\"ix\"} 10, {g=\"x\",i=\"2\",info=\"ix\"} "
	   "20, "
	   "{g=\"y\",i=\"3\",info=\"iy\"} 60");
	at(x, "r * on(g) group_right(info) l", 600,
	   "{g=\"x\",i=\"1\",info=\"ix\"} 10, {g=\"x\",i=\"2\",info=\"ix\"} "
	   "20, "
	   "{g=\"y\",i=\"3\",info=\"iy\"} 60");
	at(x, "l2 + on(g) group_left(info) r", 600,
	   "{g=\"x\",i=\"1\",info=\"ix\"} 15");
	/* ignoring(i): the match group still holds info, so nothing
	 * matches; ignoring(i, info) does. */
	at(x, "l + ignoring(i) group_left r", 600, "");
	at(x, "l + ignoring(i, info) group_left r", 600,
	   "{g=\"x\",i=\"1\"} 11, {g=\"x\",i=\"2\"} 12, {g=\"y\",i=\"3\"} 23");
	/* A filter keeps the "many" side's labels, name included, and the
	 * left side's value: with group_right, the "one" side's. */
	at(x, "l < on(g) group_left r", 600,
	   "l{g=\"x\",i=\"1\"} 1, l{g=\"x\",i=\"2\"} 2, l{g=\"y\",i=\"3\"} 3");
	at(x, "r > on(g) group_right l", 600,
	   "l{g=\"x\",i=\"1\"} 10, l{g=\"x\",i=\"2\"} 10, l{g=\"y\",i=\"3\"} "
	   "20");
	/* The errors, as Prometheus words them. */
	fails(x, "l * on(g) group_right(info) r", 600, GW_QERR_EXECUTION,
	      "found duplicate series for the match group {g=\"x\"} on the "
	      "left hand-side of the operation: [");
	fails(x, "l / on(g) group_left(info) r2", 600, GW_QERR_EXECUTION,
	      "found duplicate series for the match group {g=\"x\"} on the "
	      "right hand-side of the operation: [");
	fails(x, "l / on(g) group_left(info) r2", 600, GW_QERR_EXECUTION,
	      ";many-to-many matching not allowed: matching labels must be "
	      "unique on one side");
	fails(x, "l * on(g) r", 600, GW_QERR_EXECUTION,
	      "multiple matches for labels: many-to-one matching must be "
	      "explicit (group_left/group_right)");
	fails(x, "{__name__=~\"l|l2\"} * on(g) group_left r", 600,
	      GW_QERR_EXECUTION,
	      "multiple matches for labels: grouping labels must ensure "
	      "unique matches");
}

static void atan2_operator(void **state)
{
	struct fx *x = *state;

	/* atan2 keeps the metric name, unlike arithmetic. */
	at(x, "m atan2 2", 600,
	   "m{s=\"a\"} 1.5374753309166493, m{s=\"b\"} 1.2490457723982544, "
	   "m{s=\"c\"} 1.5374753309166493");
	at(x, "m{s=\"b\"} atan2 m", 600, "m{s=\"b\"} 0.7853981633974483");
	at(x, "1 atan2 2", 600, "0.4636476090008061");
	/* Tighter than +, as tight as *. */
	at(x, "0 + 1 atan2 2 * 2", 600, "0.9272952180016122");
}

/* ---- aggregations ---- */

static void new_aggregations(void **state)
{
	struct fx *x = *state;

	at(x, "stddev(m)", 600, "{} 25.45584412271571");
	at(x, "stdvar(m)", 600, "{} 648");
	at(x, "stddev(v)", 630, "{} 1.0307764064044151");
	at(x, "stdvar(t)", 630, "{} NaN");
	at(x, "stddev by (s) (m)", 600,
	   "{s=\"a\"} 0, {s=\"b\"} 0, {s=\"c\"} 0");
	at(x, "group(m)", 600, "{} 1");
	at(x, "group without (i) (l)", 600, "{g=\"x\"} 1, {g=\"y\"} 1");
	/* count_values: the value as a label, Go's shortest form. */
	at(x, "count_values(\"v\", v)", 630,
	   "{v=\"1.5\"} 2, {v=\"2\"} 1, {v=\"4\"} 1");
	at(x, "count_values(\"v\", t)", 630,
	   "{v=\"0\"} 1, {v=\"1\"} 3, {v=\"2\"} 1, {v=\"NaN\"} 1");
	at(x, "count_values by (k) (\"v\", v)", 630,
	   "{k=\"x\",v=\"1.5\"} 2, {k=\"y\",v=\"2\"} 1, {k=\"y\",v=\"4\"} 1");
	at(x, "count_values without (s) (\"v\", v)", 630,
	   "{k=\"x\",v=\"1.5\"} 2, {k=\"y\",v=\"2\"} 1, {k=\"y\",v=\"4\"} 1");
	/* The value label replaces one of the same name; without() may drop
	 * it again. */
	at(x, "count_values(\"k\", v)", 630,
	   "{k=\"1.5\"} 2, {k=\"2\"} 1, {k=\"4\"} 1");
	at(x, "count_values without (s) (\"s\", v)", 630,
	   "{k=\"x\"} 2, {k=\"y\"} 2");
	fails(x, "count_values(\"a b\", m)", 600, GW_QERR_EXECUTION,
	      "invalid label name \"a b\"");
}

static void topk_bottomk_order(void **state)
{
	struct fx *x = *state;

	/* Ties and NaN in Prometheus 2.42's order: its heap, then its sort. */
	at(x, "topk(3, t)", 600, "t{s=\"c\"} 2, t{s=\"a\"} 1, t{s=\"b\"} 1");
	at(x, "topk(5, t)", 600,
	   "t{s=\"c\"} 2, t{s=\"b\"} 1, t{s=\"d\"} 1, t{s=\"a\"} 1, "
	   "t{s=\"f\"} 0");
	at(x, "topk(6, t)", 600,
	   "t{s=\"c\"} 2, t{s=\"a\"} 1, t{s=\"d\"} 1, t{s=\"b\"} 1, "
	   "t{s=\"f\"} 0, t{s=\"e\"} NaN");
	at(x, "topk(2.9, t)", 600, "t{s=\"c\"} 2, t{s=\"b\"} 1");
	at(x, "bottomk(2, t)", 600, "t{s=\"f\"} 0, t{s=\"b\"} 1");
	at(x, "bottomk(3, t)", 600, "t{s=\"f\"} 0, t{s=\"d\"} 1, t{s=\"b\"} 1");
	at(x, "bottomk(4, t)", 600,
	   "t{s=\"f\"} 0, t{s=\"d\"} 1, t{s=\"b\"} 1, t{s=\"a\"} 1");
	at(x, "bottomk(5, t)", 600,
	   "t{s=\"f\"} 0, t{s=\"b\"} 1, t{s=\"a\"} 1, t{s=\"d\"} 1, "
	   "t{s=\"c\"} 2");
	at(x, "bottomk(6, t)", 600,
	   "t{s=\"f\"} 0, t{s=\"a\"} 1, t{s=\"d\"} 1, t{s=\"b\"} 1, "
	   "t{s=\"c\"} 2, t{s=\"e\"} NaN");
	at(x, "bottomk(3, t{s=~\"a|b|c|d\"})", 600,
	   "t{s=\"a\"} 1, t{s=\"b\"} 1, t{s=\"d\"} 1");
	/* Past 12 samples Go's sort is a pattern-defeating quicksort: ties
	 * end where it leaves them. */
	at(x, "topk(13, w)", 600,
	   "w{h=\"1\",i=\"23\"} 5, w{h=\"0\",i=\"04\"} 2, w{h=\"1\",i=\"19\"} "
	   "2, "
	   "w{h=\"0\",i=\"28\"} 2, w{h=\"1\",i=\"07\"} 2, w{h=\"0\",i=\"22\"} "
	   "2, "
	   "w{h=\"1\",i=\"25\"} 2, w{h=\"0\",i=\"34\"} 2, w{h=\"0\",i=\"16\"} "
	   "2, "
	   "w{h=\"0\",i=\"10\"} 2, w{h=\"1\",i=\"01\"} 2, w{h=\"1\",i=\"13\"} "
	   "2, "
	   "w{h=\"1\",i=\"31\"} 2");
	at(x, "topk(20, w)", 600,
	   "w{h=\"1\",i=\"23\"} 5, w{h=\"1\",i=\"01\"} 2, w{h=\"0\",i=\"28\"} "
	   "2, "
	   "w{h=\"1\",i=\"31\"} 2, w{h=\"0\",i=\"16\"} 2, w{h=\"1\",i=\"13\"} "
	   "2, "
	   "w{h=\"1\",i=\"07\"} 2, w{h=\"1\",i=\"19\"} 2, w{h=\"0\",i=\"34\"} "
	   "2, "
	   "w{h=\"1\",i=\"25\"} 2, w{h=\"1\",i=\"37\"} 2, w{h=\"0\",i=\"10\"} "
	   "2, "
	   "w{h=\"0\",i=\"22\"} 2, w{h=\"0\",i=\"04\"} 2, w{h=\"1\",i=\"11\"} "
	   "1, "
	   "w{h=\"0\",i=\"38\"} 1, w{h=\"0\",i=\"26\"} 1, w{h=\"1\",i=\"05\"} "
	   "1, "
	   "w{h=\"0\",i=\"08\"} 1, w{h=\"0\",i=\"20\"} 1");
	at(x, "bottomk(15, w)", 600,
	   "w{h=\"1\",i=\"27\"} 0, w{h=\"1\",i=\"03\"} 0, w{h=\"1\",i=\"33\"} "
	   "0, "
	   "w{h=\"1\",i=\"09\"} 0, w{h=\"1\",i=\"15\"} 0, w{h=\"0\",i=\"36\"} "
	   "0, "
	   "w{h=\"1\",i=\"21\"} 0, w{h=\"0\",i=\"06\"} 0, w{h=\"1\",i=\"39\"} "
	   "0, "
	   "w{h=\"0\",i=\"18\"} 0, w{h=\"0\",i=\"00\"} 0, w{h=\"0\",i=\"30\"} "
	   "0, "
	   "w{h=\"0\",i=\"24\"} 0, w{h=\"0\",i=\"12\"} 0, w{h=\"0\",i=\"32\"} "
	   "1");
	at(x, "bottomk(40, w)", 600,
	   "w{h=\"0\",i=\"18\"} 0, w{h=\"1\",i=\"39\"} 0, w{h=\"0\",i=\"36\"} "
	   "0, "
	   "w{h=\"1\",i=\"33\"} 0, w{h=\"0\",i=\"06\"} 0, w{h=\"1\",i=\"27\"} "
	   "0, "
	   "w{h=\"0\",i=\"30\"} 0, w{h=\"1\",i=\"21\"} 0, w{h=\"0\",i=\"12\"} "
	   "0, "
	   "w{h=\"1\",i=\"15\"} 0, w{h=\"0\",i=\"24\"} 0, w{h=\"1\",i=\"09\"} "
	   "0, "
	   "w{h=\"0\",i=\"00\"} 0, w{h=\"1\",i=\"03\"} 0, w{h=\"1\",i=\"05\"} "
	   "1, "
	   "w{h=\"1\",i=\"11\"} 1, w{h=\"1\",i=\"29\"} 1, w{h=\"0\",i=\"08\"} "
	   "1, "
	   "w{h=\"1\",i=\"35\"} 1, w{h=\"0\",i=\"14\"} 1, w{h=\"0\",i=\"38\"} "
	   "1, "
	   "w{h=\"0\",i=\"32\"} 1, w{h=\"0\",i=\"26\"} 1, w{h=\"0\",i=\"02\"} "
	   "1, "
	   "w{h=\"0\",i=\"20\"} 1, w{h=\"0\",i=\"28\"} 2, w{h=\"1\",i=\"25\"} "
	   "2, "
	   "w{h=\"1\",i=\"07\"} 2, w{h=\"1\",i=\"31\"} 2, w{h=\"1\",i=\"13\"} "
	   "2, "
	   "w{h=\"0\",i=\"34\"} 2, w{h=\"0\",i=\"10\"} 2, w{h=\"1\",i=\"37\"} "
	   "2, "
	   "w{h=\"0\",i=\"22\"} 2, w{h=\"1\",i=\"01\"} 2, w{h=\"1\",i=\"19\"} "
	   "2, "
	   "w{h=\"0\",i=\"16\"} 2, w{h=\"0\",i=\"04\"} 2, w{h=\"1\",i=\"23\"} "
	   "5, "
	   "w{h=\"1\",i=\"17\"} NaN");
	at(x, "topk by (h) (14, w)", 600,
	   "w{h=\"0\",i=\"28\"} 2, w{h=\"0\",i=\"10\"} 2, w{h=\"0\",i=\"22\"} "
	   "2, "
	   "w{h=\"0\",i=\"04\"} 2, w{h=\"0\",i=\"16\"} 2, w{h=\"0\",i=\"34\"} "
	   "2, "
	   "w{h=\"0\",i=\"14\"} 1, w{h=\"0\",i=\"26\"} 1, w{h=\"0\",i=\"08\"} "
	   "1, "
	   "w{h=\"0\",i=\"20\"} 1, w{h=\"0\",i=\"32\"} 1, w{h=\"0\",i=\"02\"} "
	   "1, "
	   "w{h=\"0\",i=\"38\"} 1, w{h=\"0\",i=\"24\"} 0, w{h=\"1\",i=\"23\"} "
	   "5, "
	   "w{h=\"1\",i=\"13\"} 2, w{h=\"1\",i=\"37\"} 2, w{h=\"1\",i=\"25\"} "
	   "2, "
	   "w{h=\"1\",i=\"31\"} 2, w{h=\"1\",i=\"01\"} 2, w{h=\"1\",i=\"19\"} "
	   "2, "
	   "w{h=\"1\",i=\"07\"} 2, w{h=\"1\",i=\"29\"} 1, w{h=\"1\",i=\"05\"} "
	   "1, "
	   "w{h=\"1\",i=\"11\"} 1, w{h=\"1\",i=\"35\"} 1, w{h=\"1\",i=\"21\"} "
	   "0, "
	   "w{h=\"1\",i=\"27\"} 0");
	at(x, "bottomk by (h) (13, w)", 600,
	   "w{h=\"0\",i=\"18\"} 0, w{h=\"0\",i=\"12\"} 0, w{h=\"0\",i=\"06\"} "
	   "0, "
	   "w{h=\"0\",i=\"24\"} 0, w{h=\"0\",i=\"00\"} 0, w{h=\"0\",i=\"30\"} "
	   "0, "
	   "w{h=\"0\",i=\"36\"} 0, w{h=\"0\",i=\"08\"} 1, w{h=\"0\",i=\"26\"} "
	   "1, "
	   "w{h=\"0\",i=\"14\"} 1, w{h=\"0\",i=\"20\"} 1, w{h=\"0\",i=\"02\"} "
	   "1, "
	   "w{h=\"0\",i=\"32\"} 1, w{h=\"1\",i=\"09\"} 0, w{h=\"1\",i=\"27\"} "
	   "0, "
	   "w{h=\"1\",i=\"33\"} 0, w{h=\"1\",i=\"15\"} 0, w{h=\"1\",i=\"03\"} "
	   "0, "
	   "w{h=\"1\",i=\"21\"} 0, w{h=\"1\",i=\"39\"} 0, w{h=\"1\",i=\"29\"} "
	   "1, "
	   "w{h=\"1\",i=\"35\"} 1, w{h=\"1\",i=\"05\"} 1, w{h=\"1\",i=\"11\"} "
	   "1, "
	   "w{h=\"1\",i=\"13\"} 2, w{h=\"1\",i=\"25\"} 2");
	at(x, "topk(0, t)", 600, "");
	fails(x, "topk(NaN, t)", 600, GW_QERR_EXECUTION,
	      "Scalar value NaN overflows int64");
	fails(x, "bottomk(-Inf, t)", 600, GW_QERR_EXECUTION,
	      "Scalar value -Inf overflows int64");
	fails(x, "topk(-1e30, t)", 600, GW_QERR_EXECUTION,
	      "Scalar value -1e+30 overflows int64");
}

/* ---- subqueries, @, offset ---- */

static void subqueries(void **state)
{
	struct fx *x = *state;

	/* Steps at multiples of the step: at +630 s, [5m:1m] holds +360
	 * ... +600. */
	at(x, "sum_over_time(m{s=\"a\"}[5m:1m])", 630, "{s=\"a\"} 240");
	/* At a whole minute the step at t - 5m is inside the window, closed
	 * as Prometheus 2.42's: +300 ... +600, six steps (2.42 says 6;
	 * 3.x's left-open windows would say 5). */
	at(x, "count_over_time(m{s=\"a\"}[5m:1m])", 600, "{s=\"a\"} 6");
	at(x, "sum_over_time(m{s=\"a\"}[5m:1m])", 600, "{s=\"a\"} 270");
	at(x, "count_over_time(m[5m:1m])", 630,
	   "{s=\"a\"} 5, {s=\"b\"} 5, {s=\"c\"} 5");
	/* No step: the default (Prometheus' evaluation_interval, 1m). */
	at(x, "count_over_time(m[5m:])", 630,
	   "{s=\"a\"} 5, {s=\"b\"} 5, {s=\"c\"} 5");
	at(x, "sum_over_time(m{s=\"a\"}[5m:1m] offset 2m)", 630,
	   "{s=\"a\"} 180");
	/* Nested: a range function of a subquery inside a subquery. */
	at(x, "max_over_time(rate(m{s=\"a\"}[1m])[5m:1m])", 630,
	   "{s=\"a\"} 0.1");
	at(x, "max_over_time(sum_over_time(m{s=\"a\"}[125s:1m])[5m:1m])", 630,
	   "{s=\"a\"} 162");
	/* A bare subquery is a matrix of its points. */
	at(x, "m{s=\"a\"}[1m:30s]", 615, "m{s=\"a\"} [570:57 600:60]");
	/* In a range query: evaluated once, windowed per step. */
	over(x, "sum_over_time(m{s=\"a\"}[1m:30s])", 615, 675, 30,
	     "{s=\"a\"} [615:117 645:123 675:129]");
	/* The offset reaches before the data: those steps see less. */
	over(x, "sum_over_time(m{s=\"a\"}[5m:1m] offset 10m)", 615, 675, 30,
	     "{s=\"a\"} [615:0 645:0 675:6]");
	/* ... and past the query's end, after the last sample. */
	at(x, "sum_over_time(m{s=\"a\"}[5m:1m] offset 10m)", 1230,
	   "{s=\"a\"} 240");
	/* @ inside, on, and with an offset of a subquery. */
	at(x, "sum_over_time(m{s=\"a\"} @ 3600300 [5m:1m])", 635,
	   "{s=\"a\"} 150");
	at(x, "m{s=\"a\"}[5m:1m] @ 3600330", 635,
	   "m{s=\"a\"} [60:6 120:12 180:18 240:24 300:30]");
	at(x, "sum_over_time(m{s=\"a\"}[5m:1m] @ 3600630 offset 1m)", 635,
	   "{s=\"a\"} 210");
	at(x, "sum_over_time(m{s=\"a\"} @ 3600300 [5m:1m] offset 3m)", 635,
	   "{s=\"a\"} 150");
	at(x, "sum_over_time(m{s=\"a\"} offset 1m [5m:1m] @ 3600630)", 635,
	   "{s=\"a\"} 210");
	at(x, "rate(m{s=\"a\"}[1m:10s])", 635, "{s=\"a\"} 0.1");
	at(x, "count_over_time((p or q)[2m:45s])", 635,
	   "{s=\"a\"} 3, {s=\"b\"} 3, {s=\"c\"} 3");
	/* Every range function takes a subquery's points as samples. */
	at(x, "max_over_time(vector(1)[5m:1m])", 630, "{} 1");
	at(x, "sum_over_time(vector(time())[2m:1m])", 630, "{} 7201140");
	at(x, "count_over_time((m{s=\"a\"} > 1000)[5m:1m])", 630, "");
	at(x, "last_over_time(m{s=\"a\"}[5m:1m])", 630, "m{s=\"a\"} 60");
	at(x, "quantile_over_time(0.5, m{s=\"a\"}[5m:1m])", 630,
	   "{s=\"a\"} 48");
	at(x, "irate(m{s=\"a\"}[5m:1m])", 630, "{s=\"a\"} 0.1");
	at(x, "delta(m{s=\"a\"}[5m:1m])", 630, "{s=\"a\"} 30");
	at(x, "increase(m{s=\"b\"}[5m:20s])", 630,
	   "{s=\"b\"} 85.71428571428571");
	at(x,
	   "avg_over_time((sum by (g) (l) * on(g) group_left(info) r)"
	   "[1m:25s])",
	   630, "{g=\"x\",info=\"ix\"} 30, {g=\"y\",info=\"iy\"} 60");
	at(x, "deriv(m{s=\"a\"}[5m:1m])", 630, "{s=\"a\"} 0.1");
	at(x, "changes(m{s=\"b\"}[5m:20s])", 630, "{s=\"b\"} 14");
	at(x, "resets(m{s=\"b\"}[5m:20s])", 630, "{s=\"b\"} 10");
	at(x, "predict_linear(m{s=\"a\"}[5m:1m], 60)", 630, "{s=\"a\"} 69");
	at(x, "holt_winters(m{s=\"b\"}[5m:20s], 0.5, 0.5)", 630,
	   "{s=\"b\"} 5.659325569868088");
	at(x, "idelta(m{s=\"b\"}[5m:20s])", 630, "{s=\"b\"} -2");
	at(x, "stdvar_over_time(m{s=\"b\"}[5m:20s])", 630,
	   "{s=\"b\"} 4.293333333333334");
	at(x, "present_over_time(m{s=\"a\"}[5m:1m])", 630, "{s=\"a\"} 1");
	at(x, "absent_over_time(nothing[5m:1m])", 630, "{} 1");
	at(x, "timestamp(m{s=\"a\"} @ 3600300)", 630, "{s=\"a\"} 3600300");
	at(x,
	   "label_replace(m{s=\"a\"} @ 3600100, \"x\", \"$1\", \"s\", "
	   "\"(.*)\")",
	   630, "m{s=\"a\",x=\"a\"} 10");
	at(x, "min_over_time(max_over_time(m{s=\"b\"}[65s:15s])[3m:15s])", 635,
	   "{s=\"b\"} 9");
}

static void subquery_errors_and_limits(void **state)
{
	struct fx *x = *state;
	struct gw_pq_node *e = parse("m[5m:1m]");
	struct gw_qresult r;

	/* A range query cannot return a range vector. */
	assert_int_equal(gw_promql_eval_range(e, &x->q, B, B + 60 * SEC,
					      10 * SEC, &x->o, &r),
			 -EINVAL);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_non_null(strstr(r.errmsg, "invalid expression type \"range "
					 "vector\" for range query"));
	gw_qresult_release(&r);
	gw_promql_free(e);
	/* Its points count as samples: 3 series x 5 points is more than 10
	 * (the selector under it loads fewer). This limit is ours. */
	x->o.max_samples = 40;
	fails(x, "count_over_time(m[5m:1m])", 630, GW_QERR_EXECUTION,
	      "query processing would load too many samples");
	x->o.max_samples = 0;
	/* The default step is an option. */
	x->o.subquery_step_ms = 30 * SEC;
	at(x, "count_over_time(m{s=\"a\"}[5m:])", 615, "{s=\"a\"} 10");
	x->o.subquery_step_ms = 0;
}

static void at_modifier(void **state)
{
	struct fx *x = *state;

	at(x, "m{s=\"a\"} @ 3600300", 1000, "m{s=\"a\"} 30");
	/* Rounded to the millisecond, as Prometheus. */
	at(x, "m @ 3600300.0001", 630,
	   "m{s=\"a\"} 30, m{s=\"b\"} 8, m{s=\"c\"} 30");
	/* Either order with offset, negative offsets too. */
	at(x, "m{s=\"a\"} offset -1m @ 3600300", 630, "m{s=\"a\"} 36");
	at(x, "m{s=\"a\"} @ 3600300 offset -1m", 0, "m{s=\"a\"} 36");
	at(x, "m{s=\"a\"} offset -5m", 300, "m{s=\"a\"} 60");
	/* Far from the query's time: loaded all the same. */
	at(x, "m{s=\"a\"} @ 3600010", 1200, "m{s=\"a\"} 1");
	at(x, "m{s=\"a\"} @ 3601200", 0, "m{s=\"a\"} 120");
	at(x, "count_over_time(m{s=\"a\"}[1m] @ 3600605)", 630, "{s=\"a\"} 6");
	/* start() and end(): the query's. */
	over(x, "m{s=\"a\"} @ start()", 100, 200, 50,
	     "m{s=\"a\"} [100:10 150:10 200:10]");
	over(x, "m{s=\"a\"} @ end() - m{s=\"a\"}", 100, 200, 50,
	     "{s=\"a\"} [100:10 150:5 200:0]");
	over(x, "sum_over_time(m{s=\"a\"}[1m:30s] @ end())", 100, 200, 50,
	     "{s=\"a\"} [100:33 150:33 200:33]");
	at(x, "m{s=\"a\"} @ end()", 630, "m{s=\"a\"} 63");
	/* Before the data: nothing. */
	at(x, "m @ -100", 630, "");
}

/* ---- NUL and UTF-8 in queries ---- */

static bool valid_utf8(const char *s)
{
	while (*s) {
		size_t u =
			gw_utf8_len((const unsigned char *)s, SIZE_MAX, NULL);

		if (!u)
			return false;
		s += u;
	}
	return true;
}

static void nul_and_utf8(void **state)
{
	struct gw_promql_error e;
	struct gw_pq_node *n = NULL;
	char q[160];

	(void)state;
	/* A NUL is a character like any other, and not one PromQL has. */
	assert_int_equal(gw_promql_parse_len("foo\0bar", 7, &n, &e), -EINVAL);
	assert_null(n);
	assert_string_equal(e.msg,
			    "1:4: parse error: unexpected character: '\\x00'");
	assert_int_equal(gw_promql_parse_len("foo\0", 4, &n, &e), -EINVAL);
	assert_int_equal(gw_promql_parse_len("foo{a=\"x\0\"}", 11, &n, &e),
			 -EINVAL);
	/* Also inside a comment, where Prometheus' lexer would skip it:
	 * a NUL anywhere is an error. (Ours.) */
	assert_int_equal(gw_promql_parse_len("foo # a\0b\n", 10, &n, &e),
			 -EINVAL);
	assert_null(n);
	assert_string_equal(e.msg,
			    "1:8: parse error: unexpected character: '\\x00'");
	assert_int_equal(gw_promql_parse_len("foo", 3, &n, &e), 0);
	gw_promql_free(n);
	n = NULL;
	/* An error quoting invalid UTF-8 (here a decoded "\xff") escapes
	 * it; one cut inside a sequence does not split it. (Ours.) */
	assert_int_equal(gw_promql_parse("foo{__name__=\"\\xff\"}", &n, &e),
			 -EINVAL);
	assert_true(valid_utf8(e.msg));
	assert_non_null(strstr(e.msg, "\"\\xff\""));
	snprintf(q, sizeof(q), "foo{__name__=\"%.59s\xc3\xa9\"}",
		 "0123456789012345678901234567890123456789012345678901234567"
		 "8");
	assert_int_equal(gw_promql_parse(q, &n, &e), -EINVAL);
	assert_true(valid_utf8(e.msg));
	assert_int_equal(gw_promql_parse("\xff\xfe", &n, &e), -EINVAL);
	assert_true(valid_utf8(e.msg));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(set_operators),
		T(group_left_right),
		T(atan2_operator),
		T(new_aggregations),
		T(topk_bottomk_order),
		T(subqueries),
		T(subquery_errors_and_limits),
		T(at_modifier),
#undef T
		cmocka_unit_test(nul_and_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
