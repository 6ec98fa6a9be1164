/* SPDX-License-Identifier: MIT */
/*
 * promql_range.c - range-vector arguments for the PromQL evaluator
 * (promql_eval.c, sharing promql_int.h): what a range function's argument
 * holds at one step, whether it is a range selector (name[5m]) or a
 * subquery (expr[5m:1m]), so that a function sees the points of one
 * series in its window and never which of the two produced them.
 *
 * Windows.  At evaluation time t, an argument with range r, offset o and
 * no @ covers the points with time in (t - o - r, t - o]; with @ T (or
 * @ start() / @ end(), the query's start or end) in (T - o - r, T - o],
 * the same at every step.  A selector's points are its samples (on a
 * rollup tier: (t_last, last) of each non-empty rollup, with the rollups
 * themselves for the *_over_time functions); a subquery's are its
 * results at the steps in the window.
 *
 * Subqueries.  As in Prometheus 2.42, a subquery is evaluated once for
 * the whole query: its expression at every multiple of its step (the
 * step given, or the evaluator's default, Prometheus' global evaluation
 * interval) from the first at or after (first evaluation time - o - r)
 * to (last evaluation time - o); nested subqueries likewise within their
 * parent's times.  The result is kept per series (label set) and windowed
 * at each step by binary search.  Its points count against max_samples.
 *
 * Errors follow promql_eval.c: res->err/errmsg filled, -errno returned.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql_int.h"

#define MSG_TOO_MANY                                                           \
	"query processing would load too many samples into memory in query "   \
	"execution"
#define MSG_DUP_LABELSET "vector cannot contain metrics with the same labelset"

int64_t gw_pqe_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b > 0 ? INT64_MIN : INT64_MAX;
	return r;
}

int64_t gw_pqe_at_time(const struct ev *ev, enum gw_pq_at at, int64_t at_ms,
		       int64_t offset_ms, int64_t t)
{
	switch (at) {
	case GW_AT_TIME:
		t = at_ms;
		break;
	case GW_AT_START:
		t = ev->start;
		break;
	case GW_AT_END:
		t = ev->end;
		break;
	default:
		break;
	}
	return gw_pqe_sat_sub(t, offset_ms);
}

/* ---- windows over loaded selectors ---- */

size_t gw_pqe_upper_raw(const struct gw_series_data *d, int64_t t)
{
	size_t lo = 0, hi = d->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->t[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t gw_pqe_upper_rollup(const struct gw_series_data *d, int64_t t)
{
	size_t lo = 0, hi = d->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->r[mid].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First index of t[0..n) whose time is > x. */
static size_t upper_t(const int64_t *t, size_t n, int64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- subqueries ---- */

static struct sqc *find_sq(struct ev *ev, const struct gw_pq_node *n)
{
	for (size_t i = 0; i < ev->nsq; i++)
		if (ev->sq[i].node == n)
			return &ev->sq[i];
	return NULL;
}

/* The first multiple of step at or after x (step > 0). */
static int64_t align_up(int64_t x, int64_t step)
{
	int64_t q = x / step * step; /* toward zero, as Go */

	if (q < x && q <= INT64_MAX - step)
		q += step;
	return q;
}

int gw_pqe_subq_add(struct ev *ev, const struct gw_pq_node *n, int64_t lo,
		    int64_t hi, int64_t *ilo, int64_t *ihi)
{
	int64_t step = n->u.subq.step_ms > 0 ? n->u.subq.step_ms : ev->sq_step;
	int64_t a = gw_pqe_at_time(ev, n->u.subq.at, n->u.subq.at_ms,
				   n->u.subq.offset_ms, lo);
	int64_t b = gw_pqe_at_time(ev, n->u.subq.at, n->u.subq.at_ms,
				   n->u.subq.offset_ms, hi);
	struct sqc *c;

	if (step <= 0 || n->u.subq.range_ms <= 0 || !n->u.subq.expr)
		return gw_pqe_malformed(ev);
	if (ev->nsq == ev->capsq) {
		size_t cap = ev->capsq ? ev->capsq * 2 : 4;
		struct sqc *p = realloc(ev->sq, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ev->sq = p;
		ev->capsq = cap;
	}
	c = &ev->sq[ev->nsq++];
	memset(c, 0, sizeof(*c));
	c->node = n;
	c->step = step;
	c->lo = align_up(gw_pqe_sat_sub(a, n->u.subq.range_ms), step);
	c->hi = b;
	*ilo = c->lo;
	*ihi = c->hi < c->lo ? c->lo : c->hi;
	return 0;
}

void gw_pqe_subq_release(struct ev *ev)
{
	for (size_t i = 0; i < ev->nsq; i++) {
		struct sqc *c = &ev->sq[i];

		for (size_t j = 0; j < c->n; j++) {
			free(c->s[j].t);
			free(c->s[j].v);
		}
		free(c->s);
		free(c->key);
		free(c->val);
	}
	free(ev->sq);
	ev->sq = NULL;
	ev->nsq = ev->capsq = 0;
}

static size_t ptr_hash(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static int key_grow(struct sqc *c)
{
	size_t cap = c->kcap ? c->kcap * 2 : 64;
	struct lset **key = calloc(cap, sizeof(*key));
	size_t *val = calloc(cap, sizeof(*val));

	if (!key || !val) {
		free(key);
		free(val);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->kcap; i++) {
		size_t j;

		if (!c->key[i])
			continue;
		for (j = ptr_hash(c->key[i], cap); key[j];
		     j = (j + 1) & (cap - 1))
			;
		key[j] = c->key[i];
		val[j] = c->val[i];
	}
	free(c->key);
	free(c->val);
	c->key = key;
	c->val = val;
	c->kcap = cap;
	return 0;
}

/* The series of c for ls, added when new. */
static int sq_series(struct sqc *c, struct lset *ls, struct sqser **out)
{
	size_t j;
	int err;

	if ((c->n + 1) * 2 > c->kcap && (err = key_grow(c)))
		return err;
	for (j = ptr_hash(ls, c->kcap); c->key[j]; j = (j + 1) & (c->kcap - 1))
		if (c->key[j] == ls) {
			*out = &c->s[c->val[j]];
			return 0;
		}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		struct sqser *s = realloc(c->s, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->s = s;
		c->cap = cap;
	}
	memset(&c->s[c->n], 0, sizeof(c->s[0]));
	c->s[c->n].ls = ls;
	c->key[j] = ls;
	c->val[j] = c->n;
	*out = &c->s[c->n++];
	return 0;
}

static int sq_push(struct ev *ev, struct sqc *c, struct lset *ls, int64_t t,
		   double v)
{
	struct sqser *s;
	int err = sq_series(c, ls, &s);

	if (err)
		return err;
	if (s->n && s->t[s->n - 1] == t)
		return gw_pqe_fail(ev, GW_QERR_EXECUTION, -EINVAL,
				   MSG_DUP_LABELSET);
	if (ev->lim.max_samples && ev->lim.samples >= ev->lim.max_samples)
		return gw_pqe_fail(ev, GW_QERR_EXECUTION, -E2BIG, MSG_TOO_MANY);
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		int64_t *pt = realloc(s->t, cap * sizeof(*pt));
		double *pv;

		if (!pt)
			return -ENOMEM;
		s->t = pt;
		pv = realloc(s->v, cap * sizeof(*pv));
		if (!pv)
			return -ENOMEM;
		s->v = pv;
		s->cap = cap;
	}
	s->t[s->n] = t;
	s->v[s->n] = v;
	s->n++;
	ev->lim.samples++;
	ev->res->samples = ev->lim.samples;
	return 0;
}

/* Evaluates c's expression at all its steps (once per query). */
static int sq_run(struct ev *ev, struct sqc *c)
{
	int err = 0;

	c->done = true;
	for (int64_t t = c->lo; t <= c->hi && !err; t += c->step) {
		struct val v = { 0 };

		err = gw_pqe_step_check(ev);
		if (!err)
			err = gw_pqe_eval(ev, c->node->u.subq.expr, t, &v);
		if (!err && v.type != GW_TYPE_VECTOR)
			err = gw_pqe_malformed(ev);
		for (size_t i = 0; i < v.v.n && !err; i++)
			err = sq_push(ev, c, v.v.p[i].ls, t, v.v.p[i].v);
		gw_pqe_val_release(&v);
		if (t > INT64_MAX - c->step)
			break;
	}
	return err;
}

/* ---- range arguments ---- */

int gw_pqe_range_arg(struct ev *ev, const struct gw_pq_node *m, int64_t t,
		     struct gw_pqe_rarg *a)
{
	int err;

	while (m && m->kind == GW_PQ_PAREN)
		m = m->u.inner;
	memset(a, 0, sizeof(*a));
	if (m && m->kind == GW_PQ_MATRIX) {
		a->sel = gw_pqe_find_sel(ev, m);
		if (!a->sel || m->u.sel.range_ms <= 0)
			return gw_pqe_malformed(ev);
		a->range = m->u.sel.range_ms;
		a->at = gw_pqe_at_time(ev, m->u.sel.at, m->u.sel.at_ms,
				       m->u.sel.offset_ms, t);
		a->n = a->sel->set.n;
	} else if (m && m->kind == GW_PQ_SUBQUERY) {
		a->sq = find_sq(ev, m);
		if (!a->sq)
			return gw_pqe_malformed(ev);
		if (!a->sq->done && (err = sq_run(ev, a->sq)))
			return err;
		a->range = m->u.subq.range_ms;
		a->at = gw_pqe_at_time(ev, m->u.subq.at, m->u.subq.at_ms,
				       m->u.subq.offset_ms, t);
		a->n = a->sq->n;
	} else {
		return gw_pqe_malformed(ev);
	}
	a->from = gw_pqe_sat_sub(a->at, a->range);
	return 0;
}

int gw_pqe_range_series(struct ev *ev, const struct gw_pqe_rarg *a, size_t i,
			struct gw_pqe_rpts *p)
{
	memset(p, 0, sizeof(*p));
	if (a->sq) {
		const struct sqser *s = &a->sq->s[i];
		size_t lo = upper_t(s->t, s->n, a->from);
		size_t hi = upper_t(s->t, s->n, a->at);

		p->ls = s->ls;
		if (hi > lo) {
			p->ts = s->t + lo;
			p->vs = s->v + lo;
			p->n = hi - lo;
		}
		return 0;
	}
	const struct gw_series_data *d = &a->sel->set.s[i];
	size_t k = 0;
	int err;

	p->ls = a->sel->ls[i];
	if (d->tier == GW_TIER_RAW) {
		p->lo = gw_pqe_upper_raw(d, a->from);
		p->hi = gw_pqe_upper_raw(d, a->at);
		if (p->hi > p->lo) {
			p->ts = d->t + p->lo;
			p->vs = d->v + p->lo;
			p->n = p->hi - p->lo;
		}
		return 0;
	}
	p->roll = d;
	p->lo = gw_pqe_upper_rollup(d, a->from);
	p->hi = gw_pqe_upper_rollup(d, a->at);
	if (p->hi < p->lo)
		p->hi = p->lo;
	/* The points: (t_last, last) of each non-empty rollup. */
	err = gw_pqe_scratch(ev, p->hi - p->lo);
	if (err)
		return err;
	for (size_t j = p->lo; j < p->hi; j++) {
		if (!(d->r[j].count > 0))
			continue;
		ev->st[k] = d->r[j].t_last;
		ev->sv[k] = d->r[j].last;
		k++;
	}
	p->ts = ev->st;
	p->vs = ev->sv;
	p->n = k;
	return 0;
}
