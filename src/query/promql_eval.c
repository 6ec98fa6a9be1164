/* SPDX-License-Identifier: MIT */
/*
 * promql_eval.c - evaluation of the PromQL subset (promql.h) over a struct
 * gw_queryable (store/query.h): the evaluator's core (its state, label set
 * interning, values, selectors, functions, dispatch, loading and the entry
 * points).  Aggregation is in promql_agg.c, binary operators and vector
 * matching in promql_binop.c, range-vector arguments (range selectors and
 * subqueries) in promql_range.c, the numerics in promql_fn.c, all sharing
 * promql_int.h; results are written as JSON by promql_json.c.
 *
 * Two phases.  Loading: every selector node of the expression is read with
 * one select() covering the times it is evaluated at over the whole query
 * (through offsets, @ and subqueries), all from one tier: raw wherever the
 * store keeps raw samples (pick_tier says so), whatever the step.  A range
 * query whose first steps reach back past the raw horizon loads twice:
 * those steps from the tier pick_tier gives at resolution min(step,
 * smallest range), the rest from raw (plan(); with @ or a subquery in it,
 * the whole query reads the tier picked for it).  The API's tier option
 * forces one tier.  Stepping: the tree is evaluated at each step against
 * the loaded arrays (binary search), giving a scalar or a vector of
 * (label set, value); a subquery is evaluated for all its steps the first
 * time one is needed.
 *
 * Label sets are interned in a per-query table so that they are compared,
 * grouped and matched by pointer.  Sets derived from a set (without
 * __name__, a by() group, a matching signature) are memoised on it, so a
 * derivation costs one allocation per distinct set, not one per step.
 * The per-operation fields of a set (mark, idx) are only valid during one
 * operation, identified by a fresh stamp.
 *
 * Errors: every failure fills res->err/errmsg; internal helpers return
 * -errno and the entry points map anything not yet described to
 * GW_QERR_INTERNAL with strerror.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hash.h"
#include "query/promql.h"
#include "query/promql_int.h"

#define DEFAULT_LOOKBACK_MS	 (5 * 60 * 1000)
#define DEFAULT_SUBQUERY_STEP_MS (60 * 1000)
#define MAX_RESOLUTION		 11000 /* (end - start) / step, as Prometheus */
#define MAX_DEPTH		 (2 * GW_PROMQL_MAX_DEPTH)
#define MAX_LSETS		 (1u << 24) /* distinct label sets per query */
#define KEY_MAX			 (1u << 20)

#define MSG_TOO_MANY                                                           \
	"query processing would load too many samples into memory in query "   \
	"execution"
#define MSG_TIMEOUT	 "query timed out in query execution"
#define MSG_CANCELLED	 "query cancelled: the agent is stopping"
#define MSG_DUP_LABELSET "vector cannot contain metrics with the same labelset"

static const char noname_key; /* memo key: the set without __name__ */

/* ---- errors ---- */

__attribute__((format(printf, 4, 5))) int
gw_pqe_fail(struct ev *ev, enum gw_qerr kind, int err, const char *fmt, ...)
{
	va_list ap;

	if (ev->res->err == GW_QERR_NONE) {
		ev->res->err = kind;
		va_start(ap, fmt);
		vsnprintf(ev->res->errmsg, sizeof(ev->res->errmsg), fmt, ap);
		va_end(ap);
	}
	return err;
}

int gw_pqe_malformed(struct ev *ev)
{
	return gw_pqe_fail(ev, GW_QERR_INTERNAL, -EINVAL,
			   "malformed expression");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- label set interning ---- */

static void lset_free(struct lset *s)
{
	if (!s)
		return;
	gw_labels_release(&s->l);
	free(s->key);
	free(s);
}

static int tab_grow(struct ltab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct lset **slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct lset *s = t->slot[i];
		size_t j;

		if (!s)
			continue;
		j = s->hash & (cap - 1);
		while (slot[j])
			j = (j + 1) & (cap - 1);
		slot[j] = s;
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return 0;
}

/* Interns *take (always consumed). */
static int intern(struct ev *ev, struct gw_labels *take, struct lset **out)
{
	struct ltab *t = &ev->tab;
	struct lset *s;
	uint64_t h;
	size_t i;
	int err;

	gw_buf_reset(&ev->kb);
	err = gw_labels_key(take, &ev->kb);
	if (err)
		goto out_release;
	if (t->n >= MAX_LSETS) {
		err = -E2BIG;
		goto out_release;
	}
	if ((t->n + 1) * 2 > t->cap) {
		err = tab_grow(t);
		if (err)
			goto out_release;
	}
	h = gw_fnv1a64(ev->kb.p, ev->kb.len);
	for (i = h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1)) {
		s = t->slot[i];
		if (s->hash == h && s->klen == ev->kb.len &&
		    memcmp(s->key, ev->kb.p, s->klen) == 0) {
			gw_labels_release(take);
			*out = s;
			return 0;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out_release;
	}
	s->key = malloc(ev->kb.len + 1);
	if (!s->key) {
		free(s);
		err = -ENOMEM;
		goto out_release;
	}
	memcpy(s->key, ev->kb.p, ev->kb.len + 1);
	s->klen = ev->kb.len;
	s->hash = h;
	s->l = *take;
	take->v = NULL;
	take->n = 0;
	t->slot[i] = s;
	t->n++;
	*out = s;
	return 0;
out_release:
	gw_labels_release(take);
	return err;
}

int gw_pqe_intern(struct ev *ev, struct gw_labels *take, struct lset **out)
{
	return intern(ev, take, out);
}

static void tab_release(struct ltab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		lset_free(t->slot[i]);
	free(t->slot);
	t->slot = NULL;
	t->cap = t->n = 0;
}

/* The set derived from s by gw_labels_project(names, keep, drop), memoised
 * under key (one key per distinct derivation). */
int gw_pqe_derive(struct ev *ev, struct lset *s, const void *key,
		  char *const *names, size_t n, bool keep, bool drop,
		  struct lset **out)
{
	struct gw_labels l;
	int err;

	for (unsigned i = 0; i < MEMO; i++) {
		if (s->memo[i].by == key) {
			*out = s->memo[i].to;
			return 0;
		}
	}
	err = gw_labels_project(&l, &s->l, (const char *const *)names, n, keep,
				drop);
	if (!err)
		err = intern(ev, &l, out);
	if (err)
		return err;
	s->memo[s->memo_next].by = key;
	s->memo[s->memo_next].to = *out;
	s->memo_next = (s->memo_next + 1) % MEMO;
	return 0;
}

int gw_pqe_noname(struct ev *ev, struct lset *s, struct lset **out)
{
	if (!gw_labels_get(&s->l, "__name__")) {
		*out = s;
		return 0;
	}
	return gw_pqe_derive(ev, s, &noname_key, NULL, 0, false, true, out);
}

/* ---- values ---- */

int gw_pqe_vpush(struct vec *v, struct lset *ls, double x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 8;
		struct smp *p = realloc(v->p, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		v->p = p;
		v->cap = cap;
	}
	v->p[v->n].ls = ls;
	v->p[v->n].v = x;
	v->n++;
	return 0;
}

void gw_pqe_val_release(struct val *v)
{
	free(v->v.p);
	memset(v, 0, sizeof(*v));
}

int gw_pqe_scratch(struct ev *ev, size_t n)
{
	if (n <= ev->scap)
		return 0;
	size_t cap = ev->scap ? ev->scap : 64;

	while (cap < n)
		cap *= 2;
	int64_t *st = realloc(ev->st, cap * sizeof(*st));

	if (!st)
		return -ENOMEM;
	ev->st = st;
	double *sv = realloc(ev->sv, cap * sizeof(*sv));

	if (!sv)
		return -ENOMEM;
	ev->sv = sv;
	ev->scap = cap;
	return 0;
}

int gw_pqe_scratch_ix(struct ev *ev, size_t n)
{
	if (n <= ev->ixcap)
		return 0;
	size_t cap = ev->ixcap ? ev->ixcap : 64;

	while (cap < n)
		cap *= 2;
	size_t *ix = realloc(ev->ix, cap * sizeof(*ix));

	if (!ix)
		return -ENOMEM;
	ev->ix = ix;
	ev->ixcap = cap;
	return 0;
}

/* Two sets of the vector equal after a name drop: Prometheus' error. */
int gw_pqe_check_dups(struct ev *ev, const struct vec *v)
{
	uint64_t st = ++ev->stamp;

	for (size_t i = 0; i < v->n; i++) {
		if (v->p[i].ls->mark == st)
			return gw_pqe_fail(ev, GW_QERR_EXECUTION, -EINVAL,
					   MSG_DUP_LABELSET);
		v->p[i].ls->mark = st;
	}
	return 0;
}

/* ---- loaded data access ---- */

static const struct gw_pq_node *unparen(const struct gw_pq_node *n)
{
	while (n && n->kind == GW_PQ_PAREN)
		n = n->u.inner;
	return n;
}

struct sel *gw_pqe_find_sel(struct ev *ev, const struct gw_pq_node *n)
{
	for (size_t i = 0; i < ev->nsel; i++)
		if (ev->sel[i].node == n)
			return &ev->sel[i];
	return NULL;
}

/* ---- selectors ---- */

int gw_pqe_selector(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    bool stamps, struct val *out)
{
	struct sel *s = gw_pqe_find_sel(ev, n);
	int64_t at = gw_pqe_at_time(ev, n->u.sel.at, n->u.sel.at_ms,
				    n->u.sel.offset_ms, t);
	int64_t lb = ev->lookback;
	int err;

	if (!s)
		return gw_pqe_malformed(ev);
	if (ev->tier != GW_TIER_RAW && lb < 2 * gw_tier_width(ev->tier))
		lb = 2 * gw_tier_width(ev->tier);
	out->type = GW_TYPE_VECTOR;
	for (size_t i = 0; i < s->set.n; i++) {
		const struct gw_series_data *d = &s->set.s[i];
		size_t k;

		if (d->tier == GW_TIER_RAW) {
			k = gw_pqe_upper_raw(d, at);
			if (k == 0 || d->t[k - 1] < gw_pqe_window_first(at, lb))
				continue;
			err = gw_pqe_vpush(&out->v, s->ls[i],
					   stamps ? (double)d->t[k - 1] / 1e3
						  : d->v[k - 1]);
		} else {
			k = gw_pqe_upper_rollup(d, at);
			/* Stale once its last sample is: t_last, not the
			 * window's end, against the lookback. */
			if (k == 0 ||
			    d->r[k - 1].t_last < gw_pqe_window_first(at, lb) ||
			    !(d->r[k - 1].count > 0))
				continue;
			err = gw_pqe_vpush(&out->v, s->ls[i],
					   stamps ? (double)d->r[k - 1].t_last /
							    1e3
						  : d->r[k - 1].last);
		}
		if (err)
			return err;
	}
	return 0;
}

int gw_pqe_eval_scalar_arg(struct ev *ev, const struct gw_pq_node *n, int64_t t,
			   double *out)
{
	struct val v = { 0 };
	int err = gw_pqe_eval(ev, n, t, &v);

	if (!err && v.type != GW_TYPE_SCALAR)
		err = gw_pqe_malformed(ev);
	if (!err)
		*out = v.s;
	gw_pqe_val_release(&v);
	return err;
}

/* ---- unary minus ---- */

static int eval_neg(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    struct val *out)
{
	struct val a = { 0 };
	int err = gw_pqe_eval(ev, n->u.inner, t, &a);

	if (err)
		goto out;
	if (a.type == GW_TYPE_SCALAR) {
		out->type = GW_TYPE_SCALAR;
		out->s = -a.s;
		goto out;
	}
	if (a.type != GW_TYPE_VECTOR) {
		err = gw_pqe_malformed(ev);
		goto out;
	}
	out->type = GW_TYPE_VECTOR;
	for (size_t i = 0; i < a.v.n && !err; i++) {
		struct lset *ls;

		err = gw_pqe_noname(ev, a.v.p[i].ls, &ls);
		if (!err)
			err = gw_pqe_vpush(&out->v, ls, -a.v.p[i].v);
	}
	if (!err)
		err = gw_pqe_check_dups(ev, &out->v);
out:
	gw_pqe_val_release(&a);
	return err;
}

/* ---- dispatch ---- */

/* Evaluates n at t into *out (zeroed by the caller); out is released by
 * the caller on both success and failure. */
int gw_pqe_eval(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		struct val *out)
{
	int err;

	if (!n)
		return gw_pqe_malformed(ev);
	if (++ev->depth > MAX_DEPTH) {
		ev->depth--;
		return gw_pqe_fail(ev, GW_QERR_BAD_DATA, -EINVAL,
				   "expression nested too deeply");
	}
	switch (n->kind) {
	case GW_PQ_NUMBER:
		out->type = GW_TYPE_SCALAR;
		out->s = n->u.num;
		err = 0;
		break;
	case GW_PQ_STRING:
		out->type = GW_TYPE_STRING;
		out->str = n->u.str ? n->u.str : "";
		err = 0;
		break;
	case GW_PQ_SELECTOR:
		err = gw_pqe_selector(ev, n, t, false, out);
		break;
	case GW_PQ_CALL:
		err = gw_pqe_eval_call(ev, n, t, out);
		break;
	case GW_PQ_AGG:
		err = gw_pqe_eval_agg(ev, n, t, out);
		break;
	case GW_PQ_BINARY:
		err = gw_pqe_eval_binary(ev, n, t, out);
		break;
	case GW_PQ_NEG:
		err = eval_neg(ev, n, t, out);
		break;
	case GW_PQ_PAREN:
		err = gw_pqe_eval(ev, n->u.inner, t, out);
		break;
	default: /* a range vector outside a range function */
		err = gw_pqe_malformed(ev);
	}
	ev->depth--;
	return err;
}

/* ---- loading ---- */

/*
 * Finds the selectors and subqueries of n, evaluated at times [lo, hi]:
 * each selector records the times it reads at (@ and offset applied),
 * each subquery the times its expression is evaluated at, which its
 * own selectors then read at.
 */
static int collect(struct ev *ev, const struct gw_pq_node *n, int depth,
		   int64_t lo, int64_t hi)
{
	int64_t ilo, ihi;
	int err = 0;

	if (!n)
		return gw_pqe_malformed(ev);
	if (depth > MAX_DEPTH)
		return gw_pqe_fail(ev, GW_QERR_BAD_DATA, -EINVAL,
				   "expression nested too deeply");
	switch (n->kind) {
	case GW_PQ_SELECTOR:
	case GW_PQ_MATRIX:
		if (n->kind == GW_PQ_MATRIX && n->u.sel.range_ms <= 0)
			return gw_pqe_malformed(ev);
		if (ev->nsel == ev->capsel) {
			size_t cap = ev->capsel ? ev->capsel * 2 : 4;
			struct sel *s = realloc(ev->sel, cap * sizeof(*s));

			if (!s)
				return -ENOMEM;
			ev->sel = s;
			ev->capsel = cap;
		}
		memset(&ev->sel[ev->nsel], 0, sizeof(ev->sel[0]));
		ev->sel[ev->nsel].mint =
			gw_pqe_at_time(ev, n->u.sel.at, n->u.sel.at_ms,
				       n->u.sel.offset_ms, lo);
		ev->sel[ev->nsel].maxt =
			gw_pqe_at_time(ev, n->u.sel.at, n->u.sel.at_ms,
				       n->u.sel.offset_ms, hi);
		ev->sel[ev->nsel++].node = n;
		return 0;
	case GW_PQ_SUBQUERY:
		err = gw_pqe_subq_add(ev, n, lo, hi, &ilo, &ihi);
		if (!err)
			err = collect(ev, n->u.subq.expr, depth + 1, ilo, ihi);
		return err;
	case GW_PQ_CALL:
		for (size_t i = 0; i < n->u.call.nargs && !err; i++)
			err = collect(ev, n->u.call.args[i], depth + 1, lo, hi);
		return err;
	case GW_PQ_AGG:
		err = collect(ev, n->u.agg.expr, depth + 1, lo, hi);
		if (!err && n->u.agg.param)
			err = collect(ev, n->u.agg.param, depth + 1, lo, hi);
		return err;
	case GW_PQ_BINARY:
		err = collect(ev, n->u.bin.lhs, depth + 1, lo, hi);
		if (!err)
			err = collect(ev, n->u.bin.rhs, depth + 1, lo, hi);
		return err;
	case GW_PQ_NEG:
	case GW_PQ_PAREN:
		return collect(ev, n->u.inner, depth + 1, lo, hi);
	case GW_PQ_NUMBER:
	case GW_PQ_STRING:
		return 0;
	default:
		return gw_pqe_malformed(ev);
	}
}

static int64_t sel_lookbehind(const struct ev *ev, const struct gw_pq_node *n,
			      enum gw_tier tier)
{
	int64_t lb = ev->lookback;

	if (n->kind == GW_PQ_MATRIX)
		return n->u.sel.range_ms;
	if (tier != GW_TIER_RAW && lb < 2 * gw_tier_width(tier))
		lb = 2 * gw_tier_width(tier);
	return lb;
}

/* The cancel flag of the options: -ECANCELED once set. */
static int check_cancel(struct ev *ev)
{
	if (ev->lim.cancel && atomic_load(ev->lim.cancel))
		return gw_pqe_fail(ev, GW_QERR_TIMEOUT, -ECANCELED,
				   MSG_CANCELLED);
	return 0;
}

int gw_pqe_step_check(struct ev *ev)
{
	if (ev->lim.deadline_ns && now_ns() > ev->lim.deadline_ns)
		return gw_pqe_fail(ev, GW_QERR_TIMEOUT, -ETIMEDOUT,
				   MSG_TIMEOUT);
	return check_cancel(ev);
}

static int data_cmp(const void *a, const void *b)
{
	const struct gw_series_data *x = a, *y = b;

	return gw_labels_cmp(&x->labels, &y->labels);
}

static int select_error(struct ev *ev, int rc)
{
	if (rc == -ECANCELED)
		return gw_pqe_fail(ev, GW_QERR_TIMEOUT, rc, MSG_CANCELLED);
	if (rc == -E2BIG)
		return gw_pqe_fail(ev, GW_QERR_EXECUTION, rc, MSG_TOO_MANY);
	if (rc == -ETIMEDOUT)
		return gw_pqe_fail(ev, GW_QERR_TIMEOUT, rc, MSG_TIMEOUT);
	return gw_pqe_fail(ev, GW_QERR_INTERNAL, rc < 0 ? rc : -EIO,
			   "reading series: %s", strerror(rc < 0 ? -rc : EIO));
}

/* a + k * step, saturating. */
static int64_t sat_step(int64_t a, size_t k, int64_t step)
{
	int64_t d, r;

	if (__builtin_mul_overflow((int64_t)k, step, &d) ||
	    __builtin_add_overflow(a, d, &r))
		return INT64_MAX;
	return r;
}

/* a + d, saturating. */
static int64_t sat_add(int64_t a, int64_t d)
{
	int64_t r;

	if (__builtin_add_overflow(a, d, &r))
		return d > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* What the selectors need: samples in [*mint, *maxt] at resolution
 * *res_ms (step, or the smallest range when smaller). */
static void span(const struct ev *ev, int64_t step, int64_t *mint,
		 int64_t *maxt, int64_t *res_ms)
{
	*res_ms = step;
	*mint = INT64_MAX;
	*maxt = INT64_MIN;
	for (size_t i = 0; i < ev->nsel; i++) {
		const struct gw_pq_node *n = ev->sel[i].node;
		int64_t lb = n->kind == GW_PQ_MATRIX &&
					     n->u.sel.range_ms > ev->lookback
				     ? n->u.sel.range_ms
				     : ev->lookback;
		int64_t a = gw_pqe_sat_sub(ev->sel[i].mint, lb);
		int64_t b = ev->sel[i].maxt;

		if (n->kind == GW_PQ_MATRIX && n->u.sel.range_ms < *res_ms)
			*res_ms = n->u.sel.range_ms;
		if (a < *mint)
			*mint = a;
		if (b > *maxt)
			*maxt = b;
	}
}

static enum gw_tier pick(struct ev *ev, int64_t mint, int64_t maxt,
			 int64_t res_ms)
{
	return ev->q->pick_tier(ev->q->ctx, mint, maxt, res_ms);
}

/* Drops what the selectors loaded (their nodes and times stay). */
static void unload(struct ev *ev)
{
	for (size_t i = 0; i < ev->nsel; i++) {
		gw_series_set_release(&ev->sel[i].set);
		free(ev->sel[i].ls);
		ev->sel[i].ls = NULL;
	}
}

/*
 * Loads every selector from one tier, for the times it is evaluated at
 * moved by lo_shift at the start and hi_shift at the end (a part of a
 * range query's steps; 0, 0 for all of them).
 */
static int load_tier(struct ev *ev, int64_t lo_shift, int64_t hi_shift,
		     enum gw_tier tier)
{
	int err;

	if ((int)tier < GW_TIER_RAW || (int)tier >= GW_TIERS)
		return gw_pqe_fail(ev, GW_QERR_INTERNAL, -EINVAL,
				   "store picked an unknown tier");
	unload(ev);
	ev->tier = tier;
	for (size_t i = 0; i < ev->nsel; i++) {
		struct sel *s = &ev->sel[i];
		const struct gw_pq_node *n = s->node;
		int64_t lb = sel_lookbehind(ev, n, ev->tier);
		int64_t a = sat_add(s->mint, lo_shift);
		int64_t b = sat_add(s->maxt, hi_shift);
		int rc;

		/* Raw: every sample a window may hold.  Rollups: those
		 * ending after the window's start (promql_int.h). */
		if (ev->tier == GW_TIER_RAW) {
			a = gw_pqe_window_first(a, lb);
		} else {
			a = gw_pqe_sat_sub(a, lb);
			if (a < INT64_MAX)
				a++;
		}
		rc = check_cancel(ev);
		if (rc)
			return rc;
		rc = ev->q->select(ev->q->ctx, n->u.sel.m, n->u.sel.nm, a, b,
				   ev->tier, &ev->lim, &s->set);
		ev->res->samples = ev->lim.samples;
		if (rc)
			return select_error(ev, rc);
		/* Prometheus reads series in label order; ties in topk and
		 * bottomk are broken by it. */
		if (s->set.n > 1)
			qsort(s->set.s, s->set.n, sizeof(*s->set.s), data_cmp);
		s->ls = calloc(s->set.n ? s->set.n : 1, sizeof(*s->ls));
		if (!s->ls)
			return -ENOMEM;
		for (size_t j = 0; j < s->set.n; j++) {
			const struct gw_series_data *d = &s->set.s[j];
			struct gw_labels l;

			if (d->tier != ev->tier ||
			    (d->n &&
			     (d->tier == GW_TIER_RAW ? !d->t || !d->v : !d->r)))
				return gw_pqe_fail(
					ev, GW_QERR_INTERNAL, -EINVAL,
					"store returned inconsistent series");
			err = gw_labels_dup(&l, &d->labels);
			if (!err)
				err = intern(ev, &l, &s->ls[j]);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Whether every selector reads at the step's own time (offsets aside): no
 * @ and no subquery, so a part of the steps needs a part of the data. */
static bool steps_shift(const struct ev *ev)
{
	if (ev->nsq)
		return false;
	for (size_t i = 0; i < ev->nsel; i++)
		if (ev->sel[i].node->u.sel.at != GW_AT_NONE)
			return false;
	return true;
}

/*
 * Which tier answers which steps of start, start + step, ... (nsteps):
 * raw samples answer every step whose windows the raw tier covers (the
 * store says so: pick_tier gives raw for a mint it holds raw samples
 * from); the steps before, whose windows reach past the raw horizon, read
 * the tier picked for the whole query.  *first_raw is the first step read
 * from raw (0: all of them; nsteps: none).  Collects the selectors.
 */
static int plan(struct ev *ev, const struct gw_pq_node *root, int64_t start,
		int64_t end, int64_t step, size_t nsteps, enum gw_tier *tier,
		size_t *first_raw)
{
	int64_t mint, maxt, res_ms;
	size_t lo, hi;
	int err;

	*tier = GW_TIER_RAW;
	*first_raw = 0;
	err = collect(ev, root, 0, start, end);
	if (err || ev->nsel == 0)
		return err;
	if (ev->forced) {
		*tier = (enum gw_tier)(ev->forced - 1);
		*first_raw = *tier == GW_TIER_RAW ? 0 : nsteps;
		return 0;
	}
	span(ev, step, &mint, &maxt, &res_ms);
	*tier = pick(ev, mint, maxt, res_ms);
	*first_raw = *tier == GW_TIER_RAW ? 0 : nsteps;
	if (*tier == GW_TIER_RAW || nsteps < 2 || !steps_shift(ev))
		return 0;
	/* The lookbehind is the same at every step: step k needs samples
	 * from mint + k * step.  Raw once raw, as mint grows. */
	lo = 1;
	hi = nsteps;
	if (pick(ev, sat_step(mint, nsteps - 1, step), maxt, res_ms) !=
	    GW_TIER_RAW)
		lo = hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pick(ev, sat_step(mint, mid, step), maxt, res_ms) ==
		    GW_TIER_RAW)
			hi = mid;
		else
			lo = mid + 1;
	}
	*first_raw = lo;
	return 0;
}

/* An instant query's load: one step, one tier. */
static int load(struct ev *ev, const struct gw_pq_node *root, int64_t t)
{
	enum gw_tier tier;
	size_t first_raw;
	int err;

	err = plan(ev, root, t, t, 0, 1, &tier, &first_raw);
	ev->tier = tier;
	ev->res->tier = tier;
	if (err || !ev->nsel)
		return err;
	return load_tier(ev, 0, 0, tier);
}

/* ---- entry points ---- */

static int ev_init(struct ev *ev, const struct gw_queryable *q,
		   const struct gw_promql_opts *o, struct gw_qresult *res)
{
	struct gw_labels none = { NULL, 0 };
	int err;

	memset(res, 0, sizeof(*res));
	memset(ev, 0, sizeof(*ev));
	ev->q = q;
	ev->res = res;
	ev->lookback =
		o && o->lookback_ms > 0 ? o->lookback_ms : DEFAULT_LOOKBACK_MS;
	ev->sq_step = o && o->subquery_step_ms > 0 ? o->subquery_step_ms
						   : DEFAULT_SUBQUERY_STEP_MS;
	ev->lim.max_samples = o ? o->max_samples : 0;
	if (o && o->force_tier) {
		if ((int)o->tier < GW_TIER_RAW || (int)o->tier >= GW_TIERS)
			return gw_pqe_fail(ev, GW_QERR_BAD_DATA, -EINVAL,
					   "unknown tier");
		ev->forced = 1 + (int)o->tier;
	}
	ev->lim.cancel = o ? o->cancel : NULL;
	if (o && o->timeout_ns) {
		uint64_t now = now_ns();

		ev->lim.deadline_ns = o->timeout_ns > UINT64_MAX - now
					      ? UINT64_MAX
					      : now + o->timeout_ns;
	}
	gw_buf_init(&ev->kb, KEY_MAX);
	if (!q || !q->pick_tier || !q->select)
		return gw_pqe_fail(ev, GW_QERR_INTERNAL, -EINVAL,
				   "no data source");
	err = gw_labels_from(&none, NULL, 0);
	if (!err)
		err = intern(ev, &none, &ev->empty);
	return err;
}

static void ev_release(struct ev *ev)
{
	for (size_t i = 0; i < ev->nsel; i++) {
		gw_series_set_release(&ev->sel[i].set);
		free(ev->sel[i].ls);
	}
	free(ev->sel);
	gw_pqe_subq_release(ev);
	for (size_t i = 0; i < ev->nout; i++)
		free(ev->outs[i].p);
	free(ev->outs);
	tab_release(&ev->tab);
	gw_buf_release(&ev->kb);
	free(ev->st);
	free(ev->sv);
	free(ev->ix);
	gw_pqe_call_release(ev);
}

/* Describes an error not yet described and returns it. */
static int finish(struct ev *ev, int err)
{
	if (err && ev->res->err == GW_QERR_NONE)
		gw_pqe_fail(ev, GW_QERR_INTERNAL, err, "%s", strerror(-err));
	if (err) {
		/* A failed result holds no data. */
		free(ev->res->str);
		ev->res->str = NULL;
		for (size_t i = 0; i < ev->res->nseries; i++) {
			gw_labels_release(&ev->res->series[i].labels);
			free(ev->res->series[i].p);
		}
		free(ev->res->series);
		ev->res->series = NULL;
		ev->res->nseries = 0;
	}
	ev_release(ev);
	return err;
}

static int series_cmp(const void *a, const void *b)
{
	const struct gw_qseries *x = a, *y = b;

	return gw_labels_cmp(&x->labels, &y->labels);
}

/* An instant query whose order is the answer: topk, bottomk, sort... */
static bool top_level_k(const struct gw_pq_node *e)
{
	e = unparen(e);
	return e &&
	       ((e->kind == GW_PQ_AGG && (e->u.agg.op == GW_AGG_TOPK ||
					  e->u.agg.op == GW_AGG_BOTTOMK)) ||
		(e->kind == GW_PQ_CALL && gw_pqe_call_sorts(e)));
}

/* An instant query of a bare range selector or subquery: its points. */
static int instant_matrix(struct ev *ev, const struct gw_pq_node *m, int64_t t)
{
	struct gw_qresult *res = ev->res;
	struct gw_pqe_rarg a;
	int err;

	err = gw_pqe_range_arg(ev, m, t, &a);
	if (err)
		return err;
	res->type = GW_TYPE_MATRIX;
	res->series = calloc(a.n ? a.n : 1, sizeof(*res->series));
	if (!res->series)
		return -ENOMEM;
	for (size_t i = 0; i < a.n; i++) {
		struct gw_qseries *o = &res->series[res->nseries];
		struct gw_pqe_rpts r;

		err = gw_pqe_range_series(ev, &a, i, &r);
		if (err)
			return err;
		if (r.n == 0)
			continue;
		o->p = calloc(r.n, sizeof(*o->p));
		if (!o->p)
			return -ENOMEM;
		res->nseries++;
		for (size_t j = 0; j < r.n; j++) {
			o->p[j].t = r.ts[j];
			o->p[j].v = r.vs[j];
		}
		o->n = r.n;
		err = gw_labels_dup(&o->labels, &r.ls->l);
		if (err)
			return err;
	}
	qsort(res->series, res->nseries, sizeof(*res->series), series_cmp);
	return 0;
}

int gw_promql_eval_instant(const struct gw_pq_node *e,
			   const struct gw_queryable *q, int64_t t,
			   const struct gw_promql_opts *o,
			   struct gw_qresult *res)
{
	struct ev ev;
	struct val v = { 0 };
	int err;

	err = ev_init(&ev, q, o, res);
	ev.start = ev.end = t;
	if (!err && !e)
		err = gw_pqe_malformed(&ev);
	if (!err)
		err = load(&ev, e, t);
	if (err)
		return finish(&ev, err);
	if (unparen(e)->kind == GW_PQ_MATRIX ||
	    unparen(e)->kind == GW_PQ_SUBQUERY)
		return finish(&ev, instant_matrix(&ev, unparen(e), t));
	err = gw_pqe_eval(&ev, e, t, &v);
	if (err)
		goto out;
	res->type = v.type;
	switch (v.type) {
	case GW_TYPE_SCALAR:
		res->scalar.t = t;
		res->scalar.v = v.s;
		break;
	case GW_TYPE_STRING:
		res->scalar.t = t;
		res->str = strdup(v.str);
		if (!res->str)
			err = -ENOMEM;
		break;
	case GW_TYPE_VECTOR:
		res->series = calloc(v.v.n ? v.v.n : 1, sizeof(*res->series));
		if (!res->series) {
			err = -ENOMEM;
			break;
		}
		for (size_t i = 0; i < v.v.n && !err; i++) {
			struct gw_qseries *s = &res->series[i];

			s->p = malloc(sizeof(*s->p));
			if (!s->p) {
				err = -ENOMEM;
				break;
			}
			res->nseries++;
			s->p->t = t;
			s->p->v = v.v.p[i].v;
			s->n = 1;
			err = gw_labels_dup(&s->labels, &v.v.p[i].ls->l);
		}
		if (!err && !top_level_k(e))
			qsort(res->series, res->nseries, sizeof(*res->series),
			      series_cmp);
		break;
	default:
		err = gw_pqe_malformed(&ev);
	}
out:
	gw_pqe_val_release(&v);
	return finish(&ev, err);
}

static int out_add(struct ev *ev, struct lset *ls, int64_t t, double v,
		   size_t nsteps)
{
	struct oser *o;

	if (!ls->out) {
		if (ev->nout == ev->capout) {
			size_t cap = ev->capout ? ev->capout * 2 : 16;
			struct oser *p = realloc(ev->outs, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			ev->outs = p;
			ev->capout = cap;
		}
		memset(&ev->outs[ev->nout], 0, sizeof(ev->outs[0]));
		ev->outs[ev->nout].ls = ls;
		ls->out = ++ev->nout;
	}
	o = &ev->outs[ls->out - 1];
	if (o->n && o->p[o->n - 1].t == t)
		return gw_pqe_fail(ev, GW_QERR_EXECUTION, -EINVAL,
				   MSG_DUP_LABELSET);
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct gw_qpoint *p;

		if (cap > nsteps)
			cap = nsteps;
		p = realloc(o->p, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		o->p = p;
		o->cap = cap;
	}
	o->p[o->n].t = t;
	o->p[o->n].v = v;
	o->n++;
	return 0;
}

int gw_promql_eval_range(const struct gw_pq_node *e,
			 const struct gw_queryable *q, int64_t start,
			 int64_t end, int64_t step,
			 const struct gw_promql_opts *o, struct gw_qresult *res)
{
	const struct gw_pq_node *root;
	struct gw_qresult *r = res;
	enum gw_tier tier;
	struct ev ev;
	size_t nsteps, first_raw;
	int err;

	err = ev_init(&ev, q, o, res);
	ev.start = start;
	ev.end = end;
	if (!err && !e)
		err = gw_pqe_malformed(&ev);
	if (err)
		return finish(&ev, err);
	if (step <= 0)
		return finish(
			&ev,
			gw_pqe_fail(
				&ev, GW_QERR_BAD_DATA, -EINVAL,
				"zero or negative query resolution step widths "
				"are not accepted. Try a positive integer"));
	if (end < start)
		return finish(
			&ev,
			gw_pqe_fail(
				&ev, GW_QERR_BAD_DATA, -EINVAL,
				"end timestamp must not be before start time"));
	if (((uint64_t)end - (uint64_t)start) / (uint64_t)step > MAX_RESOLUTION)
		return finish(
			&ev,
			gw_pqe_fail(&ev, GW_QERR_BAD_DATA, -EINVAL,
				    "exceeded maximum resolution of 11,000 "
				    "points per timeseries. Try decreasing "
				    "the query resolution (?step=XX)"));
	nsteps = (size_t)(((uint64_t)end - (uint64_t)start) / (uint64_t)step) +
		 1;
	root = unparen(e);
	if (!root)
		return finish(&ev, gw_pqe_malformed(&ev));
	if (root->type == GW_TYPE_MATRIX || root->kind == GW_PQ_STRING)
		return finish(
			&ev,
			gw_pqe_fail(&ev, GW_QERR_BAD_DATA, -EINVAL,
				    "invalid expression type \"%s\" for range "
				    "query, must be Scalar or instant Vector",
				    root->type == GW_TYPE_MATRIX
					    ? "range vector"
					    : "string"));
	err = plan(&ev, e, start, end, step, nsteps, &tier, &first_raw);
	ev.res->tier = tier;
	/* The steps before first_raw read tier, the rest raw. */
	if (!err && ev.nsel)
		err = load_tier(
			&ev, 0,
			first_raw && first_raw < nsteps
				? gw_pqe_sat_sub(
					  sat_step(start, first_raw - 1, step),
					  end)
				: 0,
			first_raw ? tier : GW_TIER_RAW);
	for (size_t i = 0; i < nsteps && !err; i++) {
		int64_t t = start + (int64_t)i * step;
		struct val v = { 0 };

		if (i == first_raw && i > 0 && ev.nsel) {
			err = load_tier(&ev, gw_pqe_sat_sub(t, start), 0,
					GW_TIER_RAW);
			if (err)
				break;
		}
		err = gw_pqe_step_check(&ev);
		if (err)
			break;
		err = gw_pqe_eval(&ev, e, t, &v);
		if (!err && v.type == GW_TYPE_SCALAR)
			err = out_add(&ev, ev.empty, t, v.s, nsteps);
		else if (!err && v.type == GW_TYPE_VECTOR)
			for (size_t j = 0; j < v.v.n && !err; j++)
				err = out_add(&ev, v.v.p[j].ls, t, v.v.p[j].v,
					      nsteps);
		else if (!err)
			err = gw_pqe_fail(
				&ev, GW_QERR_BAD_DATA, -EINVAL,
				"invalid expression type \"string\" for range "
				"query, must be Scalar or instant Vector");
		gw_pqe_val_release(&v);
	}
	if (err)
		return finish(&ev, err);
	r->type = GW_TYPE_MATRIX;
	r->series = calloc(ev.nout ? ev.nout : 1, sizeof(*r->series));
	if (!r->series)
		return finish(&ev, -ENOMEM);
	for (size_t i = 0; i < ev.nout; i++) {
		struct oser *os = &ev.outs[i];
		struct gw_qseries *s = &r->series[i];

		/* The interned set is no longer needed: move it. */
		s->labels = os->ls->l;
		os->ls->l.v = NULL;
		os->ls->l.n = 0;
		s->p = os->p;
		s->n = os->n;
		os->p = NULL;
		r->nseries++;
	}
	qsort(r->series, r->nseries, sizeof(*r->series), series_cmp);
	return finish(&ev, 0);
}

void gw_qresult_release(struct gw_qresult *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nseries; i++) {
		gw_labels_release(&r->series[i].labels);
		free(r->series[i].p);
	}
	free(r->series);
	free(r->str);
	r->series = NULL;
	r->nseries = 0;
	r->str = NULL;
}
