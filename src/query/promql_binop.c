/* SPDX-License-Identifier: MIT */
/*
 * promql_binop.c - the PromQL binary operators at one step of the
 * evaluator (promql_eval.c, sharing promql_int.h): arithmetic, atan2 and
 * comparisons (with bool) between scalars and vectors; vector matching
 * one-to-one, many-to-one (group_left) and one-to-many (group_right), on
 * or ignoring labels, with Prometheus' error messages for duplicate and
 * ambiguous matches; the set operators and, or, unless.
 *
 * As Prometheus 2.42: arithmetic (+ - * / % ^) and "bool" drop the
 * metric name, atan2 and filtering comparisons keep it; a filtering
 * comparison keeps the left side's value (with group_right too), and a
 * comparison between a scalar and a vector the vector's.  Results come
 * in the order of the "many" side (the left for one-to-one); set
 * operators keep every label, the left side first for "or".
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql_int.h"

static bool is_cmp(enum gw_pq_binop op)
{
	return op >= GW_OP_EQ && op <= GW_OP_LE;
}

/* Prometheus' shouldDropMetricName: the arithmetic operators. */
static bool drops_name(enum gw_pq_binop op)
{
	return op <= GW_OP_POW;
}

static double arith(enum gw_pq_binop op, double a, double b)
{
	return op == GW_OP_ATAN2 ? atan2(a, b) : gw_pqe_arith(op, a, b);
}

/* Prometheus' Labels.String(): {a="b", c="d"} (for error messages). */
static void lstr(const struct gw_labels *l, char *dst, size_t cap)
{
	size_t n = 0;

#define PUT(c)                                                                 \
	do {                                                                   \
		if (n + 1 < cap)                                               \
			dst[n++] = (c);                                        \
	} while (0)
	PUT('{');
	for (size_t i = 0; i < l->n; i++) {
		if (i) {
			PUT(',');
			PUT(' ');
		}
		for (const char *p = l->v[i].name; *p; p++)
			PUT(*p);
		PUT('=');
		PUT('"');
		for (const char *p = l->v[i].value; *p; p++) {
			if (*p == '"' || *p == '\\') {
				PUT('\\');
				PUT(*p);
			} else if (*p == '\n') {
				PUT('\\');
				PUT('n');
			} else {
				PUT(*p);
			}
		}
		PUT('"');
	}
	PUT('}');
#undef PUT
	dst[n] = '\0';
	if (n + 1 == cap && cap > 5) /* truncated: keep it readable */
		memcpy(dst + cap - 5, "...}", 5);
}

/* ---- binary operators ---- */

static int eval_vec_scalar(struct ev *ev, const struct gw_pq_node *n,
			   const struct vec *v, double s, bool swap,
			   struct val *out)
{
	enum gw_pq_binop op = n->u.bin.op;
	bool cmp = is_cmp(op), boolm = n->u.bin.bool_mod;
	int err = 0;

	out->type = GW_TYPE_VECTOR;
	for (size_t i = 0; i < v->n && !err; i++) {
		double x = v->p[i].v;
		double l = swap ? s : x, r = swap ? x : s;
		struct lset *ls = v->p[i].ls;

		if (cmp && !boolm) {
			/* A filter; the vector's value is kept. */
			if (gw_pqe_compare(op, l, r))
				err = gw_pqe_vpush(&out->v, ls, x);
			continue;
		}
		if (drops_name(op) || boolm)
			err = gw_pqe_noname(ev, ls, &ls);
		if (!err)
			err = gw_pqe_vpush(
				&out->v, ls,
				cmp ? (gw_pqe_compare(op, l, r) ? 1 : 0)
				    : arith(op, l, r));
	}
	if (!err && (drops_name(op) || boolm))
		err = gw_pqe_check_dups(ev, &out->v);
	return err;
}

static int signature(struct ev *ev, const struct gw_pq_node *n, struct lset *ls,
		     struct lset **out)
{
	if (n->u.bin.on)
		return gw_pqe_derive(ev, ls, &n->u.bin.labels, n->u.bin.labels,
				     n->u.bin.nlabels, true, false, out);
	return gw_pqe_derive(ev, ls, &n->u.bin.labels, n->u.bin.labels,
			     n->u.bin.nlabels, false, true, out);
}

/*
 * The result's labels, Prometheus' resultMetric: those of the "many"
 * side's sample ls (the left for one-to-one), without __name__ for
 * arithmetic and "bool"; one-to-one reduced to on(..) / without
 * ignoring(..); group_left/group_right(..) labels copied from the "one"
 * side's sample one (removed where it has none).
 */
static int result_labels(struct ev *ev, const struct gw_pq_node *n,
			 struct lset *ls, struct lset *one, struct lset **out)
{
	bool drop = drops_name(n->u.bin.op) || n->u.bin.bool_mod;
	struct gw_label *v = NULL;
	struct gw_labels l;
	size_t k = 0;
	int err;

	if (n->u.bin.card == GW_CARD_ONE_TO_ONE) {
		if (n->u.bin.on)
			return gw_pqe_derive(ev, ls, &n->u.bin.lhs,
					     n->u.bin.labels, n->u.bin.nlabels,
					     true, drop, out);
		if (n->u.bin.ignoring && n->u.bin.nlabels)
			return gw_pqe_derive(ev, ls, &n->u.bin.lhs,
					     n->u.bin.labels, n->u.bin.nlabels,
					     false, drop, out);
	}
	if (drop && (err = gw_pqe_noname(ev, ls, &ls)))
		return err;
	if (!n->u.bin.ninclude) {
		*out = ls;
		return 0;
	}
	/* ls's labels but the included ones, then the "one" side's. */
	v = calloc(ls->l.n + n->u.bin.ninclude, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ls->l.n; i++) {
		bool inc = false;

		for (size_t j = 0; j < n->u.bin.ninclude && !inc; j++)
			inc = strcmp(ls->l.v[i].name, n->u.bin.include[j]) == 0;
		if (!inc)
			v[k++] = ls->l.v[i];
	}
	for (size_t j = 0; j < n->u.bin.ninclude; j++) {
		const char *x = gw_labels_get(&one->l, n->u.bin.include[j]);
		bool dup = false;

		for (size_t i = 0; i < j && !dup; i++)
			dup = strcmp(n->u.bin.include[i],
				     n->u.bin.include[j]) == 0;
		if (x && *x && !dup) {
			v[k].name = n->u.bin.include[j];
			v[k].value = x;
			k++;
		}
	}
	err = gw_labels_from(&l, v, k);
	free(v);
	if (!err)
		err = gw_pqe_intern(ev, &l, out);
	return err;
}

static int dup_error(struct ev *ev, struct lset *sig, struct lset *cur,
		     struct lset *prev, const char *side)
{
	char a[28], b[28], c[28]; /* so the whole message fits errmsg */

	lstr(&sig->l, a, sizeof(a));
	lstr(&cur->l, b, sizeof(b));
	lstr(&prev->l, c, sizeof(c));
	return gw_pqe_fail(ev, GW_QERR_EXECUTION, -EINVAL,
			   "found duplicate series for the match group %s on "
			   "the %s hand-side of the operation: [%s, %s];many-"
			   "to-many matching not allowed: matching labels "
			   "must be unique on one side",
			   a, side, b, c);
}

/*
 * Vector matching, Prometheus' VectorBinop: the "one" side (the right,
 * the left for group_right) indexed by signature, then each sample of
 * the "many" side matched against it in order.
 */
static int eval_vec_vec(struct ev *ev, const struct gw_pq_node *n,
			const struct vec *l, const struct vec *r,
			struct val *out)
{
	enum gw_pq_binop op = n->u.bin.op;
	enum gw_pq_card card = n->u.bin.card;
	bool cmp = is_cmp(op), boolm = n->u.bin.bool_mod;
	bool swap = card == GW_CARD_ONE_TO_MANY;
	const struct vec *many = swap ? r : l, *one = swap ? l : r;
	uint64_t st, st2;
	struct lset *sig;
	int err;

	out->type = GW_TYPE_VECTOR;
	if (l->n == 0 || r->n == 0)
		return 0;
	st = ++ev->stamp;
	for (size_t j = 0; j < one->n; j++) {
		err = signature(ev, n, one->p[j].ls, &sig);
		if (err)
			return err;
		if (sig->mark == st)
			return dup_error(ev, sig, one->p[j].ls,
					 one->p[sig->idx].ls,
					 swap ? "left" : "right");
		sig->mark = st;
		sig->idx = j;
	}
	st2 = ++ev->stamp;
	for (size_t i = 0; i < many->n; i++) {
		struct lset *ls, *os;
		double x, y, v;
		bool keep = true;

		err = signature(ev, n, many->p[i].ls, &sig);
		if (err)
			return err;
		if (sig->mark != st)
			continue;
		os = one->p[sig->idx].ls;
		x = swap ? one->p[sig->idx].v : many->p[i].v;
		y = swap ? many->p[i].v : one->p[sig->idx].v;
		if (cmp) {
			keep = gw_pqe_compare(op, x, y);
			v = boolm ? (keep ? 1 : 0) : x;
			if (!boolm && !keep)
				continue;
		} else {
			v = arith(op, x, y);
		}
		err = result_labels(ev, n, many->p[i].ls, os, &ls);
		if (err)
			return err;
		if (card == GW_CARD_ONE_TO_ONE) {
			if (sig->mark2 == st2)
				return gw_pqe_fail(
					ev, GW_QERR_EXECUTION, -EINVAL,
					"multiple matches for labels: "
					"many-to-one matching must be explicit "
					"(group_left/group_right)");
			sig->mark2 = st2;
		} else {
			/* The result's sets must differ within a match
			 * group; across groups the check below sees it. */
			if (ls->mark2 == st2 && ls->idx2 == sig->idx)
				return gw_pqe_fail(
					ev, GW_QERR_EXECUTION, -EINVAL,
					"multiple matches for labels: grouping "
					"labels must ensure unique matches");
			ls->mark2 = st2;
			ls->idx2 = sig->idx;
		}
		err = gw_pqe_vpush(&out->v, ls, v);
		if (err)
			return err;
	}
	return gw_pqe_check_dups(ev, &out->v);
}

/* and, or, unless: Prometheus' VectorAnd, VectorOr, VectorUnless. */
static int eval_set(struct ev *ev, const struct gw_pq_node *n,
		    const struct vec *l, const struct vec *r, struct val *out)
{
	enum gw_pq_binop op = n->u.bin.op;
	struct lset *sig;
	uint64_t st;
	int err;

	out->type = GW_TYPE_VECTOR;
	if (op == GW_OP_AND && (l->n == 0 || r->n == 0))
		return 0;
	if (op == GW_OP_OR && (l->n == 0 || r->n == 0)) {
		const struct vec *v = l->n ? l : r;

		for (size_t i = 0; i < v->n; i++)
			if ((err = gw_pqe_vpush(&out->v, v->p[i].ls,
						v->p[i].v)))
				return err;
		return 0;
	}
	st = ++ev->stamp;
	/* The signatures of the side looked up: the left for or. */
	const struct vec *idx = op == GW_OP_OR ? l : r;

	for (size_t j = 0; j < idx->n; j++) {
		err = signature(ev, n, idx->p[j].ls, &sig);
		if (err)
			return err;
		sig->mark = st;
	}
	if (op == GW_OP_OR) {
		for (size_t i = 0; i < l->n; i++)
			if ((err = gw_pqe_vpush(&out->v, l->p[i].ls,
						l->p[i].v)))
				return err;
	}
	const struct vec *scan = op == GW_OP_OR ? r : l;

	for (size_t i = 0; i < scan->n; i++) {
		bool found;

		err = signature(ev, n, scan->p[i].ls, &sig);
		if (err)
			return err;
		found = sig->mark == st;
		if (op == GW_OP_AND ? !found : found)
			continue;
		err = gw_pqe_vpush(&out->v, scan->p[i].ls, scan->p[i].v);
		if (err)
			return err;
	}
	return 0;
}

int gw_pqe_eval_binary(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		       struct val *out)
{
	enum gw_pq_binop op = n->u.bin.op;
	struct val l = { 0 }, r = { 0 };
	int err;

	if (!n->u.bin.lhs || !n->u.bin.rhs || op > GW_OP_UNLESS)
		return gw_pqe_malformed(ev);
	err = gw_pqe_eval(ev, n->u.bin.lhs, t, &l);
	if (!err)
		err = gw_pqe_eval(ev, n->u.bin.rhs, t, &r);
	if (err)
		goto out;
	if ((l.type != GW_TYPE_SCALAR && l.type != GW_TYPE_VECTOR) ||
	    (r.type != GW_TYPE_SCALAR && r.type != GW_TYPE_VECTOR)) {
		err = gw_pqe_malformed(ev);
	} else if (op >= GW_OP_AND) {
		err = l.type == GW_TYPE_VECTOR && r.type == GW_TYPE_VECTOR
			      ? eval_set(ev, n, &l.v, &r.v, out)
			      : gw_pqe_malformed(ev);
	} else if (l.type == GW_TYPE_SCALAR && r.type == GW_TYPE_SCALAR) {
		out->type = GW_TYPE_SCALAR;
		out->s = is_cmp(op) ? (gw_pqe_compare(op, l.s, r.s) ? 1 : 0)
				    : arith(op, l.s, r.s);
	} else if (l.type == GW_TYPE_VECTOR && r.type == GW_TYPE_SCALAR) {
		err = eval_vec_scalar(ev, n, &l.v, r.s, false, out);
	} else if (l.type == GW_TYPE_SCALAR) {
		err = eval_vec_scalar(ev, n, &r.v, l.s, true, out);
	} else {
		err = eval_vec_vec(ev, n, &l.v, &r.v, out);
	}
out:
	gw_pqe_val_release(&l);
	gw_pqe_val_release(&r);
	return err;
}
