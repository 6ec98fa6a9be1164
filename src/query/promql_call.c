/* SPDX-License-Identifier: MIT */
/*
 * promql_call.c - PromQL's functions: the one table that describes them
 * (name, argument types, result type, implementation; the parser checks
 * calls against it, the evaluator dispatches through it), their
 * evaluation, and the functions on labels and order (label_replace,
 * label_join, absent, sort ...) and histogram_quantile.  The arithmetic
 * of each function is in promql_fn.c; this file moves label sets and
 * vectors (promql_int.h).
 *
 * Semantics are Prometheus 2.x's (promql/functions.go), each handler says
 * where it is not obvious.  Results drop __name__ except where Prometheus
 * keeps it (last_over_time, label_replace, label_join, sort*); every
 * result is checked for two series with the same labels ("vector cannot
 * contain metrics with the same labelset"), as Prometheus checks every
 * function's.  Errors a function raises at run time (a bad regular
 * expression, a bad label name, a smoothing factor out of range) are
 * execution errors with Prometheus' messages.
 *
 * Ownership and threads: as promql_eval.c (one struct ev per query, one
 * thread); compiled regular expressions are kept per call node in the
 * query's state (ev->fnc) and released with it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/regex.h"
#include "query/promql_int.h"

#define MAX_GROUPS 100 /* label_replace: groups past the 99th expand to "" */

/*
 * label_replace's regular expression, compiled once per call node.  The
 * three re_* functions below are the only code that knows how it is
 * compiled and matched: common/regex.h, as Prometheus compiles it for
 * label_replace ("^(?:re)$", without the label matchers' check of the
 * pattern alone).
 */
struct fncache {
	const struct gw_pq_node *node;
	struct gw_regex *re;
	struct fncache *next;
};

/* Compiles pattern into c; -EINVAL for a bad pattern, -ENOMEM. */
static int re_compile(struct fncache *c, const char *pattern)
{
	return gw_regex_new(&c->re, pattern, strlen(pattern), 0, NULL, 0);
}

static void re_release(struct fncache *c)
{
	gw_regex_free(c->re);
	c->re = NULL;
}

/* The match of the whole of s: groups' offsets in ofs (-1: no part);
 * the number of groups + 1, 0 for no match, -ENOMEM. */
static int re_groups(const struct fncache *c, const char *s, long *ofs,
		     size_t nofs)
{
	struct gw_regex_span g[MAX_GROUPS];
	size_t ng = nofs / 2 < MAX_GROUPS ? nofs / 2 : MAX_GROUPS;
	int rc = gw_regex_match_groups(c->re, s, strlen(s), g, ng);

	if (rc <= 0)
		return rc;
	for (size_t i = 0; i < ng; i++) {
		ofs[2 * i] = g[i].start;
		ofs[2 * i + 1] = g[i].end;
	}
	return gw_regex_groups(c->re) + 1;
}

/* The number of the group named name (len bytes), or -1. */
static int re_group_number(const struct fncache *c, const char *name,
			   size_t len)
{
	char buf[256];

	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return gw_regex_group_index(c->re, buf);
}

void gw_pqe_call_release(struct ev *ev)
{
	while (ev->fnc) {
		struct fncache *c = ev->fnc;

		ev->fnc = c->next;
		re_release(c);
		free(c);
	}
}

static const struct gw_pq_node *unparen(const struct gw_pq_node *n)
{
	while (n && n->kind == GW_PQ_PAREN)
		n = n->u.inner;
	return n;
}

/* A run-time error of a function: Prometheus' "execution" errors. */
#define exec_fail(ev, ...)                                                     \
	gw_pqe_fail((ev), GW_QERR_EXECUTION, -EINVAL, __VA_ARGS__)

/* Argument i at t, which must be of type want. */
static int arg(struct ev *ev, const struct gw_pq_node *n, size_t i, int64_t t,
	       enum gw_pq_type want, struct val *out)
{
	int err;

	if (i >= n->u.call.nargs)
		return gw_pqe_malformed(ev);
	err = gw_pqe_eval(ev, n->u.call.args[i], t, out);
	if (!err && out->type != want)
		err = gw_pqe_malformed(ev);
	return err;
}

static int scalar_arg(struct ev *ev, const struct gw_pq_node *n, size_t i,
		      int64_t t, double *out)
{
	if (i >= n->u.call.nargs)
		return gw_pqe_malformed(ev);
	return gw_pqe_eval_scalar_arg(ev, n->u.call.args[i], t, out);
}

/* A string argument: a literal, perhaps in parentheses. */
static const char *str_arg(const struct gw_pq_node *n, size_t i)
{
	const struct gw_pq_node *a =
		i < n->u.call.nargs ? unparen(n->u.call.args[i]) : NULL;

	if (!a || a->kind != GW_PQ_STRING)
		return NULL;
	return a->u.str ? a->u.str : "";
}

/* Appends (ls without __name__, x) to out. */
static int push_noname(struct ev *ev, struct vec *out, struct lset *ls,
		       double x)
{
	int err = gw_pqe_noname(ev, ls, &ls);

	return err ? err : gw_pqe_vpush(out, ls, x);
}

/* Prometheus' model.LabelName.IsValid. */
static bool label_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') ||
			     (*p >= 'A' && *p <= 'Z') || *p == '_';

		if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
			return false;
	}
	return true;
}

/* ---- scalars and the simplest ---- */

static int fn_time(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		   struct val *out)
{
	(void)ev;
	out->type = GW_TYPE_SCALAR;
	out->s = n->u.call.fn == GW_FN_PI ? M_PI : (double)t / 1e3;
	return 0;
}

static int fn_vector(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		     struct val *out)
{
	double x;
	int err = scalar_arg(ev, n, 0, t, &x);

	out->type = GW_TYPE_VECTOR;
	return err ? err : gw_pqe_vpush(&out->v, ev->empty, x);
}

static int fn_scalar(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		     struct val *out)
{
	struct val a = { 0 };
	int err = arg(ev, n, 0, t, GW_TYPE_VECTOR, &a);

	out->type = GW_TYPE_SCALAR;
	out->s = a.v.n == 1 ? a.v.p[0].v : NAN;
	gw_pqe_val_release(&a);
	return err;
}

/* ---- one value at a time ---- */

/* abs ... rad, round, clamp*, and the date functions given a vector. */
static int fn_values(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		     struct val *out)
{
	enum gw_pq_func fn = n->u.call.fn;
	struct val a = { 0 };
	double p = 1, q = 0;
	int err;

	out->type = GW_TYPE_VECTOR;
	err = arg(ev, n, 0, t, GW_TYPE_VECTOR, &a);
	if (!err && n->u.call.nargs > 1)
		err = scalar_arg(ev, n, 1, t, &p);
	if (!err && n->u.call.nargs > 2)
		err = scalar_arg(ev, n, 2, t, &q);
	/* clamp with max below min is empty (NaN bounds are not). */
	if (err || (fn == GW_FN_CLAMP && q < p))
		goto out;
	for (size_t i = 0; i < a.v.n && !err; i++) {
		double v = a.v.p[i].v;

		switch (fn) {
		case GW_FN_ROUND:
			v = gw_pqe_round(v, p);
			break;
		case GW_FN_CLAMP:
			v = gw_pqe_go_max(p, gw_pqe_go_min(q, v));
			break;
		case GW_FN_CLAMP_MIN:
			v = gw_pqe_go_max(p, v);
			break;
		case GW_FN_CLAMP_MAX:
			v = gw_pqe_go_min(p, v);
			break;
		case GW_FN_DAY_OF_MONTH:
		case GW_FN_DAY_OF_WEEK:
		case GW_FN_DAY_OF_YEAR:
		case GW_FN_DAYS_IN_MONTH:
		case GW_FN_HOUR:
		case GW_FN_MINUTE:
		case GW_FN_MONTH:
		case GW_FN_YEAR:
			v = gw_pqe_date(fn, v);
			break;
		default:
			v = gw_pqe_math(fn, v);
		}
		err = push_noname(ev, &out->v, a.v.p[i].ls, v);
	}
	if (!err)
		err = gw_pqe_check_dups(ev, &out->v);
out:
	gw_pqe_val_release(&a);
	return err;
}

/* day_of_month() ... year(): of the argument, or of time() without. */
static int fn_date(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		   struct val *out)
{
	if (n->u.call.nargs)
		return fn_values(ev, n, t, out);
	out->type = GW_TYPE_VECTOR;
	/* Go's time.Unix(t / 1000, 0): whole seconds. */
	return gw_pqe_vpush(&out->v, ev->empty,
			    gw_pqe_date(n->u.call.fn, (double)(t / 1000)));
}

/* timestamp(v): of a selector, its samples' times; of anything else, the
 * evaluation time (as Prometheus, whose other results are stamped so). */
static int fn_timestamp(struct ev *ev, const struct gw_pq_node *n, int64_t t,
			struct val *out)
{
	const struct gw_pq_node *a =
		n->u.call.nargs == 1 ? unparen(n->u.call.args[0]) : NULL;
	struct val v = { 0 };
	int err;

	if (!a)
		return gw_pqe_malformed(ev);
	out->type = GW_TYPE_VECTOR;
	if (a->kind == GW_PQ_SELECTOR)
		err = gw_pqe_selector(ev, a, t, true, &v);
	else
		err = arg(ev, n, 0, t, GW_TYPE_VECTOR, &v);
	for (size_t i = 0; i < v.v.n && !err; i++)
		err = push_noname(ev, &out->v, v.v.p[i].ls,
				  a->kind == GW_PQ_SELECTOR ? v.v.p[i].v
							    : (double)t / 1e3);
	if (!err)
		err = gw_pqe_check_dups(ev, &out->v);
	gw_pqe_val_release(&v);
	return err;
}

/* ---- range vectors ---- */

static bool from_rollups(enum gw_pq_func fn)
{
	switch (fn) {
	case GW_FN_AVG_OVER_TIME:
	case GW_FN_MIN_OVER_TIME:
	case GW_FN_MAX_OVER_TIME:
	case GW_FN_SUM_OVER_TIME:
	case GW_FN_COUNT_OVER_TIME:
	case GW_FN_LAST_OVER_TIME:
	case GW_FN_STDDEV_OVER_TIME:
	case GW_FN_STDVAR_OVER_TIME:
	case GW_FN_QUANTILE_OVER_TIME:
		return true;
	default:
		return false;
	}
}

/* rate, increase and delta: over rollups from their first, last and
 * resets (gw_pqe_xrate_rollup) where the windows carry them. */
static bool xrate_fn(enum gw_pq_func fn)
{
	return fn == GW_FN_RATE || fn == GW_FN_INCREASE || fn == GW_FN_DELTA;
}

/* Go's %f, as Prometheus' messages print a factor. */
static const char *go_f(double x, char *b, size_t len)
{
	if (isnan(x))
		return "NaN";
	if (isinf(x))
		return x > 0 ? "+Inf" : "-Inf";
	snprintf(b, len, "%f", x);
	return b;
}

/* The labels absent() and absent_over_time() give, as Prometheus derives
 * them: each equality matcher (but on __name__) sets its label, unless the
 * name was set before; any other matcher, or a second one, removes it. */
static int absent_labels(struct ev *ev, const struct gw_pq_node *a,
			 struct lset **out)
{
	struct gw_label pairs[GW_LABELS_MAX];
	const char *has[GW_LABELS_MAX];
	struct gw_labels l;
	size_t np = 0, nh = 0;
	int err;

	a = unparen(a);
	if (!a || (a->kind != GW_PQ_SELECTOR && a->kind != GW_PQ_MATRIX)) {
		*out = ev->empty;
		return 0;
	}
	for (size_t i = 0; i < a->u.sel.nm; i++) {
		const struct gw_matcher *m = &a->u.sel.m[i];
		size_t j, h;

		if (strcmp(m->name, "__name__") == 0)
			continue;
		for (h = 0; h < nh && strcmp(has[h], m->name); h++)
			;
		for (j = 0; j < np && strcmp(pairs[j].name, m->name); j++)
			;
		if (j < np) /* set or removed, it goes first */
			pairs[j] = pairs[--np];
		if (m->op != GW_MATCH_EQ || h < nh)
			continue;
		if (nh == GW_LABELS_MAX)
			return gw_pqe_fail(ev, GW_QERR_EXECUTION, -E2BIG,
					   "too many labels");
		has[nh++] = m->name;
		if (m->value[0]) /* an empty value is no label */
			pairs[np++] = (struct gw_label){ m->name, m->value };
	}
	err = gw_labels_from(&l, pairs, np);
	return err ? err : gw_pqe_intern(ev, &l, out);
}

/* Prometheus checks holt_winters' factors once it has samples to smooth. */
static int check_factors(struct ev *ev, const struct gw_pqe_rargs *ra)
{
	char b[64];

	if (ra->a <= 0 || ra->a >= 1)
		return exec_fail(ev,
				 "invalid smoothing factor. Expected: 0 < sf < "
				 "1, got: %s",
				 go_f(ra->a, b, sizeof(b)));
	if (ra->b <= 0 || ra->b >= 1)
		return exec_fail(ev,
				 "invalid trend factor. Expected: 0 < tf < 1, "
				 "got: %s",
				 go_f(ra->b, b, sizeof(b)));
	return 0;
}

/* Room for n doubles in *tmp (of *cap). */
static int tmp_room(double **tmp, size_t *cap, size_t n)
{
	double *p;

	if (n <= *cap)
		return 0;
	p = realloc(*tmp, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*tmp = p;
	*cap = n;
	return 0;
}

/*
 * Every function of a range vector: per series with samples in the window,
 * promql_fn.c's value of them (of the rollups for the *_over_time
 * functions they can answer), the name dropped but by last_over_time;
 * absent_over_time is about all the series together.
 */
static int fn_range(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    struct val *out)
{
	enum gw_pq_func fn = n->u.call.fn;
	size_t mi = fn == GW_FN_QUANTILE_OVER_TIME ? 1 : 0, tcap = 0;
	bool hw = fn == GW_FN_HOLT_WINTERS ||
		  fn == GW_FN_DOUBLE_EXPONENTIAL_SMOOTHING;
	bool any = false;
	struct gw_pqe_rargs ra = { 0 };
	struct gw_pqe_rarg a;
	double *tmp = NULL;
	struct lset *ls;
	int err = 0;

	out->type = GW_TYPE_VECTOR;
	if (mi >= n->u.call.nargs)
		return gw_pqe_malformed(ev);
	for (size_t i = 0, k = 0; i < n->u.call.nargs && !err; i++)
		if (i != mi)
			err = scalar_arg(ev, n, i, t, k++ ? &ra.b : &ra.a);
	if (!err)
		err = gw_pqe_range_arg(ev, n->u.call.args[mi], t, &a);
	if (err)
		return err;
	ra.range_start = a.from;
	ra.range_end = a.at;
	ra.range_ms = a.range;
	ra.t = t;
	for (size_t i = 0; i < a.n && !err; i++) {
		struct gw_pqe_rpts r;
		bool ok = false;
		double x = 0;

		err = gw_pqe_range_series(ev, &a, i, &r);
		if (err || r.n == 0) /* no sample (rollups: none non-empty) */
			continue;
		if (hw && !any)
			err = check_factors(ev, &ra);
		any = true;
		if (err || fn == GW_FN_ABSENT_OVER_TIME)
			continue;
		if (r.roll && from_rollups(fn)) {
			err = gw_pqe_over_time_rollup(fn, ra.a, r.roll->r, r.lo,
						      r.hi, &x, &ok);
		} else if (r.roll && xrate_fn(fn) &&
			   gw_pqe_xrate_rollup(r.roll->r + r.lo, r.hi - r.lo,
					       a.from, a.at, a.range,
					       fn != GW_FN_DELTA,
					       fn == GW_FN_RATE, &x, &ok)) {
			/* from the windows' first, last and resets */
		} else {
			/* Not ev's scratch: it may hold the points. */
			err = tmp_room(&tmp, &tcap, r.n);
			if (!err)
				err = gw_pqe_range_raw(fn, r.ts, r.vs, r.n, &ra,
						       tmp, &x, &ok);
		}
		if (err || !ok)
			continue;
		ls = r.ls;
		/* last_over_time acts like offset and keeps the name. */
		if (fn != GW_FN_LAST_OVER_TIME)
			err = gw_pqe_noname(ev, ls, &ls);
		if (!err)
			err = gw_pqe_vpush(&out->v, ls, x);
	}
	free(tmp);
	if (!err && fn == GW_FN_ABSENT_OVER_TIME && !any) {
		err = absent_labels(ev, n->u.call.args[mi], &ls);
		if (!err)
			err = gw_pqe_vpush(&out->v, ls, 1);
	}
	if (!err)
		err = gw_pqe_check_dups(ev, &out->v);
	return err;
}

/* ---- presence ---- */

static int fn_absent(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		     struct val *out)
{
	struct val a = { 0 };
	struct lset *ls;
	int err = arg(ev, n, 0, t, GW_TYPE_VECTOR, &a);

	out->type = GW_TYPE_VECTOR;
	if (!err && a.v.n == 0) {
		err = absent_labels(ev, n->u.call.args[0], &ls);
		if (!err)
			err = gw_pqe_vpush(&out->v, ls, 1);
	}
	gw_pqe_val_release(&a);
	return err;
}

/* ---- labels ---- */

static struct lset *memo_put(struct lset *s, const void *key, struct lset *to)
{
	s->memo[s->memo_next].by = key;
	s->memo[s->memo_next].to = to;
	s->memo_next = (s->memo_next + 1) % MEMO;
	return to;
}

static struct lset *memo_get(struct lset *s, const void *key)
{
	for (unsigned i = 0; i < MEMO; i++)
		if (s->memo[i].by == key)
			return s->memo[i].to;
	return NULL;
}

/* The set s with label name set to value ("" removes it), memoised on s
 * under the call node n: a series is rewritten once per query. */
static int with_label(struct ev *ev, struct lset *s, const void *key,
		      const char *name, const char *value, struct lset **out)
{
	struct gw_label pairs[GW_LABELS_MAX + 1];
	struct gw_labels l;
	size_t np = 0;
	int err;

	if (s->l.n > GW_LABELS_MAX)
		return gw_pqe_fail(ev, GW_QERR_EXECUTION, -E2BIG,
				   "too many labels");
	for (size_t i = 0; i < s->l.n; i++)
		if (strcmp(s->l.v[i].name, name) != 0)
			pairs[np++] = s->l.v[i];
	if (*value)
		pairs[np++] = (struct gw_label){ name, value };
	if (np > GW_LABELS_MAX)
		return gw_pqe_fail(ev, GW_QERR_EXECUTION, -E2BIG,
				   "too many labels");
	err = gw_labels_from(&l, pairs, np);
	if (!err)
		err = gw_pqe_intern(ev, &l, out);
	if (err)
		return err;
	memo_put(s, key, *out);
	return 0;
}

/* Go's regexp.Expand of template for the match of re on src (groups in
 * ofs, ng of them): $n, ${n}, $name, ${name}; $$ is $; an unknown or
 * unmatched group is "", a malformed reference is kept as text. */
static int expand(const struct fncache *re, const char *tpl, const char *src,
		  const long *ofs, int ng, struct gw_buf *out)
{
	gw_buf_reset(out);
	for (const char *p = tpl; *p;) {
		const char *d = strchr(p, '$'), *nm;
		bool brace;
		size_t len = 0;
		long num = 0;

		if (!d) {
			gw_buf_puts(out, p);
			break;
		}
		gw_buf_put(out, p, (size_t)(d - p));
		p = d + 1;
		if (*p == '$') {
			gw_buf_put(out, "$", 1);
			p++;
			continue;
		}
		brace = *p == '{';
		nm = p + brace;
		while ((nm[len] >= 'a' && nm[len] <= 'z') ||
		       (nm[len] >= 'A' && nm[len] <= 'Z') ||
		       (nm[len] >= '0' && nm[len] <= '9') || nm[len] == '_' ||
		       (unsigned char)nm[len] >= 0x80)
			len++;
		if (len == 0 || (brace && nm[len] != '}')) {
			gw_buf_put(out, "$", 1);
			continue;
		}
		p = nm + len + brace;
		for (size_t i = 0; i < len && num >= 0; i++)
			num = nm[i] >= '0' && nm[i] <= '9' && num < 100000000
				      ? num * 10 + (nm[i] - '0')
				      : -1;
		if (nm[0] == '0' && len > 1)
			num = -1;
		if (num < 0)
			num = re_group_number(re, nm, len);
		if (num >= 0 && num < ng && num < MAX_GROUPS &&
		    ofs[2 * num] >= 0)
			gw_buf_put(out, src + ofs[2 * num],
				   (size_t)(ofs[2 * num + 1] - ofs[2 * num]));
	}
	return gw_buf_error(out);
}

static int replace_regex(struct ev *ev, const struct gw_pq_node *n,
			 const char *re, struct fncache **out)
{
	struct fncache *c;
	int err;

	for (c = ev->fnc; c; c = c->next)
		if (c->node == n) {
			*out = c;
			return 0;
		}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = re_compile(c, re);
	if (err) {
		free(c);
		return err == -ENOMEM ? err
				      : exec_fail(ev,
						  "invalid regular expression "
						  "in label_replace(): %s",
						  re);
	}
	c->node = n;
	c->next = ev->fnc;
	ev->fnc = c;
	*out = c;
	return 0;
}

static int fn_label_replace(struct ev *ev, const struct gw_pq_node *n,
			    int64_t t, struct val *out)
{
	const char *dst = str_arg(n, 1), *repl = str_arg(n, 2);
	const char *src = str_arg(n, 3), *res = str_arg(n, 4);
	long ofs[2 * MAX_GROUPS];
	struct fncache *re = NULL; /* set once arg() succeeded */
	struct val a = { 0 };
	struct gw_buf b;
	int err;

	if (!dst || !repl || !src || !res)
		return gw_pqe_malformed(ev);
	out->type = GW_TYPE_VECTOR;
	gw_buf_init(&b, GW_LABEL_VALUE_MAX * 64);
	err = arg(ev, n, 0, t, GW_TYPE_VECTOR, &a);
	if (!err)
		err = replace_regex(ev, n, res, &re);
	if (!err && !label_name_ok(dst))
		err = exec_fail(ev,
				"invalid destination label name in "
				"label_replace(): %s",
				dst);
	for (size_t i = 0; i < a.v.n && !err; i++) {
		struct lset *ls = a.v.p[i].ls, *to = memo_get(ls, n);
		const char *sv;
		int ng;

		if (!to) {
			sv = gw_labels_get(&ls->l, src);
			sv = sv ? sv : "";
			ng = re_groups(re, sv, ofs, 2 * MAX_GROUPS);
			if (ng < 0) {
				err = ng;
				break;
			}
			if (ng == 0)
				to = memo_put(ls, n, ls); /* no match */
			else
				err = expand(re, repl, sv, ofs, ng, &b);
			if (!err && !to)
				err = with_label(ev, ls, n, dst, b.p ? b.p : "",
						 &to);
		}
		if (!err)
			err = gw_pqe_vpush(&out->v, to, a.v.p[i].v);
	}
	if (!err)
		err = gw_pqe_check_dups(ev, &out->v);
	gw_buf_release(&b);
	gw_pqe_val_release(&a);
	return err;
}

static int fn_label_join(struct ev *ev, const struct gw_pq_node *n, int64_t t,
			 struct val *out)
{
	const char *dst = str_arg(n, 1), *sep = str_arg(n, 2);
	struct val a = { 0 };
	struct gw_buf b;
	int err;

	if (!dst || !sep)
		return gw_pqe_malformed(ev);
	out->type = GW_TYPE_VECTOR;
	gw_buf_init(&b, GW_LABEL_VALUE_MAX * 64);
	err = arg(ev, n, 0, t, GW_TYPE_VECTOR, &a);
	for (size_t i = 3; i < n->u.call.nargs && !err; i++) {
		const char *s = str_arg(n, i);

		if (!s)
			err = gw_pqe_malformed(ev);
		else if (!label_name_ok(s))
			err = exec_fail(ev,
					"invalid source label name in "
					"label_join(): %s",
					s);
	}
	if (!err && !label_name_ok(dst))
		err = exec_fail(ev,
				"invalid destination label name in "
				"label_join(): %s",
				dst);
	for (size_t i = 0; i < a.v.n && !err; i++) {
		struct lset *ls = a.v.p[i].ls, *to = memo_get(ls, n);

		if (!to) {
			gw_buf_reset(&b);
			for (size_t k = 3; k < n->u.call.nargs; k++) {
				const char *v =
					gw_labels_get(&ls->l, str_arg(n, k));

				if (k > 3)
					gw_buf_puts(&b, sep);
				gw_buf_puts(&b, v ? v : "");
			}
			err = gw_buf_error(&b);
			if (!err)
				err = with_label(ev, ls, n, dst, b.p ? b.p : "",
						 &to);
		}
		if (!err)
			err = gw_pqe_vpush(&out->v, to, a.v.p[i].v);
	}
	if (!err)
		err = gw_pqe_check_dups(ev, &out->v);
	gw_buf_release(&b);
	gw_pqe_val_release(&a);
	return err;
}

/* ---- order ---- */

/* The next chunk of s for natless: a run of digits or of other bytes;
 * *num is its value when it is digits that fit an int64 (Go's Atoi). */
static size_t chunk(const char *s, long long *num, bool *isnum)
{
	bool d = *s >= '0' && *s <= '9';
	size_t n = 0;

	*num = 0;
	*isnum = d;
	while (s[n] && (s[n] >= '0' && s[n] <= '9') == d) {
		if (d && (__builtin_mul_overflow(*num, 10, num) ||
			  __builtin_add_overflow(*num, s[n] - '0', num)))
			*isnum = false;
		n++;
	}
	return n;
}

/* facette/natsort's Compare, Prometheus' sort_by_label order: a < b,
 * chunk by chunk, runs of digits as integers when both are; equal chunks
 * make the string that ends there the smaller. */
static bool natless(const char *a, const char *b)
{
	while (*a) {
		long long ia, ib;
		bool na, nb, eq;
		size_t la, lb;

		if (!*b)
			return false;
		la = chunk(a, &ia, &na);
		lb = chunk(b, &ib, &nb);
		if (na && nb) {
			if (ia != ib)
				return ia < ib;
			eq = true;
		} else {
			int c = memcmp(a, b, la < lb ? la : lb);

			eq = c == 0 && la == lb;
			if (!eq)
				return c ? c < 0 : la < lb;
		}
		if (!a[la])
			return true;
		if (!b[lb])
			return false;
		a += la;
		b += lb;
	}
	return false;
}

struct sort_ctx {
	const struct gw_pq_node *n;
	bool desc, by_label;
};

/* qsort has no context argument: the vector is sorted as an array of
 * these. */
struct sort_item {
	struct smp s;
	const struct sort_ctx *c;
};

static int sort_cmp(const void *pa, const void *pb)
{
	const struct sort_item *x = pa, *y = pb;
	const struct sort_ctx *c = x->c;
	const struct gw_labels *la = &x->s.ls->l, *lb = &y->s.ls->l;
	int r;

	if (!c->by_label) {
		double a = x->s.v, b = y->s.v;

		/* NaN last either way, as Prometheus' heap order. */
		if (!isnan(a) != !isnan(b))
			r = isnan(a) ? 1 : -1;
		else if (!isnan(a) && a != b)
			r = ((a > b) - (a < b)) * (c->desc ? -1 : 1);
		else
			r = gw_labels_cmp(la, lb);
		return r;
	}
	for (size_t i = 1; i < c->n->u.call.nargs; i++) {
		const char *name = str_arg(c->n, i);
		const char *a = gw_labels_get(la, name ? name : "");
		const char *b = gw_labels_get(lb, name ? name : "");

		a = a ? a : "";
		b = b ? b : "";
		if (strcmp(a, b) == 0)
			continue;
		r = natless(a, b) ? -1 : 1;
		return c->desc ? -r : r;
	}
	r = gw_labels_cmp(la, lb);
	return c->desc ? -r : r;
}

static int fn_sort(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		   struct val *out)
{
	enum gw_pq_func fn = n->u.call.fn;
	struct sort_ctx c = {
		n, fn == GW_FN_SORT_DESC || fn == GW_FN_SORT_BY_LABEL_DESC,
		fn == GW_FN_SORT_BY_LABEL || fn == GW_FN_SORT_BY_LABEL_DESC
	};
	struct sort_item *it;
	int err = arg(ev, n, 0, t, GW_TYPE_VECTOR, out);

	if (err || out->v.n < 2)
		return err;
	for (size_t i = 1; i < n->u.call.nargs; i++)
		if (!str_arg(n, i))
			return gw_pqe_malformed(ev);
	it = calloc(out->v.n, sizeof(*it));
	if (!it)
		return -ENOMEM;
	for (size_t i = 0; i < out->v.n; i++) {
		it[i].s = out->v.p[i];
		it[i].c = &c;
	}
	qsort(it, out->v.n, sizeof(*it), sort_cmp);
	for (size_t i = 0; i < out->v.n; i++)
		out->v.p[i] = it[i].s;
	free(it);
	return 0;
}

bool gw_pqe_call_sorts(const struct gw_pq_node *n)
{
	switch (n->u.call.fn) {
	case GW_FN_SORT:
	case GW_FN_SORT_DESC:
	case GW_FN_SORT_BY_LABEL:
	case GW_FN_SORT_BY_LABEL_DESC:
		return true;
	default:
		return false;
	}
}

/* ---- histogram_quantile ---- */

/* Go's strconv.ParseFloat: the whole text, no spaces, hexadecimal only
 * with an exponent; false on overflow. */
static bool go_float(const char *s, double *out)
{
	char *end;
	bool hex = strchr(s, 'x') || strchr(s, 'X');

	if (!*s ||
	    (*s != '+' && *s != '-' && *s != '.' && *s != 'i' && *s != 'I' &&
	     *s != 'n' && *s != 'N' && !(*s >= '0' && *s <= '9')))
		return false;
	if (hex && !strchr(s, 'p') && !strchr(s, 'P'))
		return false;
	if (strchr(s, '('))
		return false;
	errno = 0;
	*out = strtod(s, &end);
	if (*end || end == s)
		return false;
	return !(errno == ERANGE && isinf(*out));
}

struct hq_item {
	size_t group;
	struct gw_pqe_bucket b;
};

static int cmp_group(const void *a, const void *b)
{
	const struct hq_item *x = a, *y = b;

	return (x->group > y->group) - (x->group < y->group);
}

static const char le_key; /* memo key: the set without le */

static int fn_histogram_quantile(struct ev *ev, const struct gw_pq_node *n,
				 int64_t t, struct val *out)
{
	static char le_name[] = "le";
	static char *const le[] = { le_name };
	struct hq_item *items = NULL;
	struct gw_pqe_bucket *bk = NULL;
	struct lset **groups = NULL;
	size_t ni = 0, ng = 0;
	struct val a = { 0 };
	uint64_t st;
	double q;
	int err;

	out->type = GW_TYPE_VECTOR;
	err = scalar_arg(ev, n, 0, t, &q);
	if (!err)
		err = arg(ev, n, 1, t, GW_TYPE_VECTOR, &a);
	if (err || a.v.n == 0)
		goto out;
	items = calloc(a.v.n, sizeof(*items));
	bk = calloc(a.v.n, sizeof(*bk));
	groups = calloc(a.v.n, sizeof(*groups));
	if (!items || !bk || !groups) {
		err = -ENOMEM;
		goto out;
	}
	st = ++ev->stamp;
	for (size_t i = 0; i < a.v.n && !err; i++) {
		const char *lv = gw_labels_get(&a.v.p[i].ls->l, "le");
		struct lset *g;
		double upper;

		/* No le, or one that is not a number: not a bucket. */
		if (!lv || !go_float(lv, &upper))
			continue;
		/* Grouped by all labels but le, the name included. */
		err = gw_pqe_derive(ev, a.v.p[i].ls, &le_key, le, 1, false,
				    false, &g);
		if (err)
			break;
		if (g->mark != st) {
			g->mark = st;
			g->idx = ng;
			groups[ng++] = g;
		}
		items[ni].group = g->idx;
		items[ni].b.upper = upper;
		items[ni++].b.count = a.v.p[i].v;
	}
	if (err)
		goto out;
	qsort(items, ni, sizeof(*items), cmp_group);
	for (size_t i = 0, j; i < ni && !err; i = j) {
		for (j = i; j < ni && items[j].group == items[i].group; j++)
			bk[j - i] = items[j].b;
		err = push_noname(ev, &out->v, groups[items[i].group],
				  gw_pqe_bucket_quantile(q, bk, j - i));
	}
	if (!err)
		err = gw_pqe_check_dups(ev, &out->v);
out:
	free(items);
	free(bk);
	free(groups);
	gw_pqe_val_release(&a);
	return err;
}

/* ---- the table ---- */

#define S   GW_TYPE_SCALAR
#define V   GW_TYPE_VECTOR
#define M   GW_TYPE_MATRIX
#define STR GW_TYPE_STRING

#define RANGE(nm, f)                                                           \
	{                                                                      \
		nm, f, 1, 0, { M }, V, fn_range                                \
	}
#define MATH(nm, f)                                                            \
	{                                                                      \
		nm, f, 1, 0, { V }, V, fn_values                               \
	}
#define DATE(nm, f)                                                            \
	{                                                                      \
		nm, f, 1, 1, { V }, V, fn_date                                 \
	}

static const struct gw_pq_fndef fndefs[] = {
	RANGE("rate", GW_FN_RATE),
	RANGE("irate", GW_FN_IRATE),
	RANGE("increase", GW_FN_INCREASE),
	RANGE("delta", GW_FN_DELTA),
	RANGE("idelta", GW_FN_IDELTA),
	RANGE("changes", GW_FN_CHANGES),
	RANGE("resets", GW_FN_RESETS),
	RANGE("deriv", GW_FN_DERIV),
	{ "predict_linear", GW_FN_PREDICT_LINEAR, 2, 0, { M, S }, V, fn_range },
	{ "holt_winters", GW_FN_HOLT_WINTERS, 3, 0, { M, S, S }, V, fn_range },
	{ "double_exponential_smoothing",
	  GW_FN_DOUBLE_EXPONENTIAL_SMOOTHING,
	  3,
	  0,
	  { M, S, S },
	  V,
	  fn_range },
	RANGE("avg_over_time", GW_FN_AVG_OVER_TIME),
	RANGE("min_over_time", GW_FN_MIN_OVER_TIME),
	RANGE("max_over_time", GW_FN_MAX_OVER_TIME),
	RANGE("sum_over_time", GW_FN_SUM_OVER_TIME),
	RANGE("count_over_time", GW_FN_COUNT_OVER_TIME),
	RANGE("last_over_time", GW_FN_LAST_OVER_TIME),
	RANGE("stddev_over_time", GW_FN_STDDEV_OVER_TIME),
	RANGE("stdvar_over_time", GW_FN_STDVAR_OVER_TIME),
	RANGE("mad_over_time", GW_FN_MAD_OVER_TIME),
	RANGE("present_over_time", GW_FN_PRESENT_OVER_TIME),
	RANGE("absent_over_time", GW_FN_ABSENT_OVER_TIME),
	{ "quantile_over_time",
	  GW_FN_QUANTILE_OVER_TIME,
	  2,
	  0,
	  { S, M },
	  V,
	  fn_range },
	MATH("abs", GW_FN_ABS),
	MATH("ceil", GW_FN_CEIL),
	MATH("floor", GW_FN_FLOOR),
	MATH("exp", GW_FN_EXP),
	MATH("ln", GW_FN_LN),
	MATH("log2", GW_FN_LOG2),
	MATH("log10", GW_FN_LOG10),
	MATH("sqrt", GW_FN_SQRT),
	MATH("sgn", GW_FN_SGN),
	MATH("acos", GW_FN_ACOS),
	MATH("acosh", GW_FN_ACOSH),
	MATH("asin", GW_FN_ASIN),
	MATH("asinh", GW_FN_ASINH),
	MATH("atan", GW_FN_ATAN),
	MATH("atanh", GW_FN_ATANH),
	MATH("cos", GW_FN_COS),
	MATH("cosh", GW_FN_COSH),
	MATH("sin", GW_FN_SIN),
	MATH("sinh", GW_FN_SINH),
	MATH("tan", GW_FN_TAN),
	MATH("tanh", GW_FN_TANH),
	MATH("deg", GW_FN_DEG),
	MATH("rad", GW_FN_RAD),
	{ "round", GW_FN_ROUND, 2, 1, { V, S }, V, fn_values },
	{ "clamp", GW_FN_CLAMP, 3, 0, { V, S, S }, V, fn_values },
	{ "clamp_min", GW_FN_CLAMP_MIN, 2, 0, { V, S }, V, fn_values },
	{ "clamp_max", GW_FN_CLAMP_MAX, 2, 0, { V, S }, V, fn_values },
	DATE("day_of_month", GW_FN_DAY_OF_MONTH),
	DATE("day_of_week", GW_FN_DAY_OF_WEEK),
	DATE("day_of_year", GW_FN_DAY_OF_YEAR),
	DATE("days_in_month", GW_FN_DAYS_IN_MONTH),
	DATE("hour", GW_FN_HOUR),
	DATE("minute", GW_FN_MINUTE),
	DATE("month", GW_FN_MONTH),
	DATE("year", GW_FN_YEAR),
	{ "timestamp", GW_FN_TIMESTAMP, 1, 0, { V }, V, fn_timestamp },
	{ "time", GW_FN_TIME, 0, 0, { S }, S, fn_time },
	{ "pi", GW_FN_PI, 0, 0, { S }, S, fn_time },
	{ "vector", GW_FN_VECTOR, 1, 0, { S }, V, fn_vector },
	{ "scalar", GW_FN_SCALAR, 1, 0, { V }, S, fn_scalar },
	{ "absent", GW_FN_ABSENT, 1, 0, { V }, V, fn_absent },
	{ "label_replace",
	  GW_FN_LABEL_REPLACE,
	  5,
	  0,
	  { V, STR, STR, STR, STR },
	  V,
	  fn_label_replace },
	{ "label_join",
	  GW_FN_LABEL_JOIN,
	  4,
	  -1,
	  { V, STR, STR, STR },
	  V,
	  fn_label_join },
	{ "sort", GW_FN_SORT, 1, 0, { V }, V, fn_sort },
	{ "sort_desc", GW_FN_SORT_DESC, 1, 0, { V }, V, fn_sort },
	{ "sort_by_label", GW_FN_SORT_BY_LABEL, 2, -1, { V, STR }, V, fn_sort },
	{ "sort_by_label_desc",
	  GW_FN_SORT_BY_LABEL_DESC,
	  2,
	  -1,
	  { V, STR },
	  V,
	  fn_sort },
	{ "histogram_quantile",
	  GW_FN_HISTOGRAM_QUANTILE,
	  2,
	  0,
	  { S, V },
	  V,
	  fn_histogram_quantile },
};

const struct gw_pq_fndef *gw_pq_fn_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(fndefs) / sizeof(fndefs[0]); i++)
		if (strlen(fndefs[i].name) == len &&
		    memcmp(fndefs[i].name, name, len) == 0)
			return &fndefs[i];
	return NULL;
}

const struct gw_pq_fndef *gw_pq_fn_def(enum gw_pq_func fn)
{
	for (size_t i = 0; i < sizeof(fndefs) / sizeof(fndefs[0]); i++)
		if (fndefs[i].fn == fn)
			return &fndefs[i];
	return NULL;
}

int gw_pqe_eval_call(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		     struct val *out)
{
	const struct gw_pq_fndef *d = gw_pq_fn_def(n->u.call.fn);
	size_t na = n->u.call.nargs;

	/* The parser's checks, again: a tree built otherwise is refused. */
	if (!d || (d->variadic == 0 && na != d->nargs) ||
	    (d->variadic != 0 && na + 1 < d->nargs) ||
	    (d->variadic > 0 && na > (size_t)d->nargs - 1 + d->variadic))
		return gw_pqe_malformed(ev);
	for (size_t i = 0; i < na; i++)
		if (!n->u.call.args[i])
			return gw_pqe_malformed(ev);
	return d->eval(ev, n, t, out);
}
