/* SPDX-License-Identifier: MIT */
/*
 * test_promql_exec.c - the PromQL evaluator against an in-memory store:
 * what it does with what it selected (values worked out by hand):
 * aggregation, binary operators and vector matching, its errors, its
 * limits, its cancel flag, malformed trees, and its numbers and JSON.
 * Selection and windows are in test_promql_eval.c.
 */
#include "promql_eval_fx.c"

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

/* The same for a tree built by hand (and freed here). */
static void tree_err(struct fx *x, struct gw_pq_node *e, int64_t t,
		     enum gw_qerr kind, const char *msg)
{
	struct gw_qresult r;
	int rc = gw_promql_eval_instant(e, &x->q, t, &x->o, &r);

	check_err(&r, rc, kind, msg);
	tree_free(e);
}

/* ---- number and JSON formatting ---- */

static void fmt(double v, const char *want)
{
	struct gw_buf b;

	gw_buf_init(&b, 4096);
	assert_int_equal(gw_promql_fmt_scalar(&b, v), 0);
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
	assert_int_equal(gw_promql_fmt_scalar(&b, 1.7976931348623157e308), 0);
	assert_int_equal(b.len, 309);
	assert_memory_equal(b.p, "17976931348623157", 17);
	assert_int_equal(strspn(b.p + 17, "0"), 292);
	gw_buf_reset(&b);
	assert_int_equal(gw_promql_fmt_scalar(&b, -5e-324), 0);
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
		T(aggregations),
		T(avg_is_stable),
		T(topk_bottomk),
		T(scalar_arithmetic),
		T(vector_scalar),
		T(vector_matching),
		T(limits),
		T(cancellation),
		T(malformed_trees),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
