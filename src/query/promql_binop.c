/* SPDX-License-Identifier: MIT */
/*
 * promql_binop.c - the PromQL binary operators at one step of the
 * evaluator (promql_eval.c, sharing promql_int.h): arithmetic and
 * comparisons (with bool) between scalars and vectors, and one-to-one
 * vector matching (on, ignoring) with Prometheus' error messages for
 * duplicate and many-to-one matches.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "query/promql_int.h"

static bool is_cmp(enum gw_pq_binop op)
{
	return op >= GW_OP_EQ && op <= GW_OP_LE;
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
		err = gw_pqe_noname(ev, ls, &ls);
		if (!err)
			err = gw_pqe_vpush(
				&out->v, ls,
				cmp ? (gw_pqe_compare(op, l, r) ? 1 : 0)
				    : gw_pqe_arith(op, l, r));
	}
	if (!err && !(cmp && !boolm))
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

/* The one-to-one result's labels: the left side's, without __name__ for
 * arithmetic and "bool", reduced to on(..) / without ignoring(..). */
static int result_labels(struct ev *ev, const struct gw_pq_node *n,
			 struct lset *ls, struct lset **out)
{
	bool drop = !is_cmp(n->u.bin.op) || n->u.bin.bool_mod;

	if (n->u.bin.on)
		return gw_pqe_derive(ev, ls, &n->u.bin.lhs, n->u.bin.labels,
				     n->u.bin.nlabels, true, drop, out);
	if (n->u.bin.ignoring && n->u.bin.nlabels)
		return gw_pqe_derive(ev, ls, &n->u.bin.lhs, n->u.bin.labels,
				     n->u.bin.nlabels, false, drop, out);
	if (drop)
		return gw_pqe_noname(ev, ls, out);
	*out = ls;
	return 0;
}

static int eval_vec_vec(struct ev *ev, const struct gw_pq_node *n,
			const struct vec *l, const struct vec *r,
			struct val *out)
{
	enum gw_pq_binop op = n->u.bin.op;
	bool cmp = is_cmp(op), boolm = n->u.bin.bool_mod;
	char a[28], b[28], c[28]; /* so the whole message fits errmsg */
	uint64_t st, st2;
	struct lset *sig;
	int err;

	out->type = GW_TYPE_VECTOR;
	if (l->n == 0 || r->n == 0)
		return 0;
	st = ++ev->stamp;
	for (size_t j = 0; j < r->n; j++) {
		err = signature(ev, n, r->p[j].ls, &sig);
		if (err)
			return err;
		if (sig->mark == st) {
			lstr(&sig->l, a, sizeof(a));
			lstr(&r->p[j].ls->l, b, sizeof(b));
			lstr(&r->p[sig->idx].ls->l, c, sizeof(c));
			return gw_pqe_fail(
				ev, GW_QERR_EXECUTION, -EINVAL,
				"found duplicate series for the match group %s "
				"on "
				"the right hand-side of the operation: [%s, "
				"%s];many-to-many matching not allowed: "
				"matching "
				"labels must be unique on one side",
				a, b, c);
		}
		sig->mark = st;
		sig->idx = j;
	}
	st2 = ++ev->stamp;
	for (size_t i = 0; i < l->n; i++) {
		struct lset *ls;
		double x, y, v;
		bool keep = true;

		err = signature(ev, n, l->p[i].ls, &sig);
		if (err)
			return err;
		if (sig->mark != st)
			continue;
		x = l->p[i].v;
		y = r->p[sig->idx].v;
		if (cmp) {
			keep = gw_pqe_compare(op, x, y);
			v = boolm ? (keep ? 1 : 0) : x;
			if (!boolm && !keep)
				continue;
		} else {
			v = gw_pqe_arith(op, x, y);
		}
		if (sig->mark2 == st2)
			return gw_pqe_fail(
				ev, GW_QERR_EXECUTION, -EINVAL,
				"multiple matches for labels: many-to-one "
				"matching "
				"must be explicit (group_left/group_right)");
		sig->mark2 = st2;
		err = result_labels(ev, n, l->p[i].ls, &ls);
		if (!err)
			err = gw_pqe_vpush(&out->v, ls, v);
		if (err)
			return err;
	}
	return gw_pqe_check_dups(ev, &out->v);
}

int gw_pqe_eval_binary(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		       struct val *out)
{
	enum gw_pq_binop op = n->u.bin.op;
	struct val l = { 0 }, r = { 0 };
	int err;

	if (!n->u.bin.lhs || !n->u.bin.rhs || op > GW_OP_LE)
		return gw_pqe_malformed(ev);
	err = gw_pqe_eval(ev, n->u.bin.lhs, t, &l);
	if (!err)
		err = gw_pqe_eval(ev, n->u.bin.rhs, t, &r);
	if (err)
		goto out;
	if ((l.type != GW_TYPE_SCALAR && l.type != GW_TYPE_VECTOR) ||
	    (r.type != GW_TYPE_SCALAR && r.type != GW_TYPE_VECTOR)) {
		err = gw_pqe_malformed(ev);
	} else if (l.type == GW_TYPE_SCALAR && r.type == GW_TYPE_SCALAR) {
		out->type = GW_TYPE_SCALAR;
		out->s = is_cmp(op) ? (gw_pqe_compare(op, l.s, r.s) ? 1 : 0)
				    : gw_pqe_arith(op, l.s, r.s);
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
