/* SPDX-License-Identifier: MIT */
/*
 * promql_agg.c - the PromQL aggregations (sum avg min max count topk
 * bottomk quantile, with by/without) at one step of the evaluator
 * (promql_eval.c, sharing promql_int.h).  Samples are grouped by their
 * interned group label set; topk, bottomk and quantile order each group's
 * samples with a stable merge sort in the evaluator's scratch space.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql_int.h"

struct grp {
	struct lset *ls;
	struct gw_pqe_mean m;
	double v;
	size_t count;
};

/* Order of samples for topk/bottomk/quantile: by group, then best first. */
struct ksort {
	const struct smp *p;
	const size_t *gi;
	bool top;
};

static int ksort_cmp(const struct ksort *k, size_t a, size_t b)
{
	double x = k->p[a].v, y = k->p[b].v;

	if (k->gi[a] != k->gi[b])
		return k->gi[a] < k->gi[b] ? -1 : 1;
	/* NaN last for both topk and bottomk, as Prometheus. */
	if (isnan(x) != isnan(y))
		return isnan(x) ? 1 : -1;
	if (x != y && !isnan(x))
		return (k->top ? x > y : x < y) ? -1 : 1;
	return gw_labels_cmp(&k->p[a].ls->l, &k->p[b].ls->l);
}

/* Merge sort of idx[0..n) (stable, no global state), tmp of n entries. */
static void ksort_run(const struct ksort *k, size_t *idx, size_t *tmp, size_t n)
{
	if (n < 2)
		return;
	size_t h = n / 2, i = 0, j = h, o = 0;

	ksort_run(k, idx, tmp, h);
	ksort_run(k, idx + h, tmp, n - h);
	while (i < h && j < n)
		tmp[o++] =
			ksort_cmp(k, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
	while (i < h)
		tmp[o++] = idx[i++];
	while (j < n)
		tmp[o++] = idx[j++];
	memcpy(idx, tmp, n * sizeof(*idx));
}

int gw_pqe_eval_agg(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    struct val *out)
{
	enum gw_pq_aggop op = n->u.agg.op;
	bool has_param = op == GW_AGG_TOPK || op == GW_AGG_BOTTOMK ||
			 op == GW_AGG_QUANTILE;
	struct val in = { 0 };
	struct grp *g = NULL;
	size_t ng = 0, *gi = NULL, *idx, *tmp;
	double param = 0;
	uint64_t st;
	int err;

	if (has_param) {
		if (!n->u.agg.param)
			return gw_pqe_malformed(ev);
		err = gw_pqe_eval_scalar_arg(ev, n->u.agg.param, t, &param);
		if (err)
			return err;
	}
	err = gw_pqe_eval(ev, n->u.agg.expr, t, &in);
	if (err)
		goto out;
	if (in.type != GW_TYPE_VECTOR) {
		err = gw_pqe_malformed(ev);
		goto out;
	}
	out->type = GW_TYPE_VECTOR;
	if (in.v.n == 0)
		goto out;
	g = calloc(in.v.n, sizeof(*g));
	gi = calloc(in.v.n, sizeof(*gi));
	if (!g || !gi) {
		err = -ENOMEM;
		goto out;
	}
	st = ++ev->stamp;
	for (size_t i = 0; i < in.v.n; i++) {
		struct lset *k;

		if (!n->u.agg.grouping)
			k = ev->empty;
		else if (n->u.agg.without)
			err = gw_pqe_derive(ev, in.v.p[i].ls, &n->u.agg.labels,
					    n->u.agg.labels, n->u.agg.nlabels,
					    false, true, &k);
		else
			err = gw_pqe_derive(ev, in.v.p[i].ls, &n->u.agg.labels,
					    n->u.agg.labels, n->u.agg.nlabels,
					    true, false, &k);
		if (err)
			goto out;
		if (k->mark != st) {
			k->mark = st;
			k->idx = ng;
			g[ng].ls = k;
			g[ng].v = NAN;
			ng++;
		}
		gi[i] = k->idx;
		struct grp *gg = &g[k->idx];
		double x = in.v.p[i].v;

		gg->count++;
		switch (op) {
		case GW_AGG_SUM:
			if (gg->count == 1)
				gg->v = 0;
			gw_pqe_ksum(&gg->v, &gg->m.c, x);
			break;
		case GW_AGG_AVG:
			gw_pqe_mean_add(&gg->m, x);
			break;
		case GW_AGG_MIN:
			if (x < gg->v || isnan(gg->v))
				gg->v = x;
			break;
		case GW_AGG_MAX:
			if (x > gg->v || isnan(gg->v))
				gg->v = x;
			break;
		default:
			break;
		}
	}
	if (op == GW_AGG_SUM || op == GW_AGG_AVG || op == GW_AGG_MIN ||
	    op == GW_AGG_MAX || op == GW_AGG_COUNT) {
		for (size_t j = 0; j < ng && !err; j++) {
			double x = op == GW_AGG_SUM   ? g[j].v + g[j].m.c
				   : op == GW_AGG_AVG ? gw_pqe_mean_get(&g[j].m)
				   : op == GW_AGG_COUNT ? (double)g[j].count
							: g[j].v;

			err = gw_pqe_vpush(&out->v, g[j].ls, x);
		}
		goto out;
	}
	/* topk, bottomk, quantile: order each group's samples. */
	err = gw_pqe_scratch_ix(ev, 2 * in.v.n);
	if (err)
		goto out;
	idx = ev->ix;
	tmp = ev->ix + in.v.n;
	for (size_t i = 0; i < in.v.n; i++)
		idx[i] = i;
	struct ksort ks = { in.v.p, gi, op == GW_AGG_TOPK };

	ksort_run(&ks, idx, tmp, in.v.n);
	if (op == GW_AGG_QUANTILE) {
		err = gw_pqe_scratch(ev, in.v.n);
		if (err)
			goto out;
		for (size_t i = 0, j; i < in.v.n && !err; i = j) {
			size_t k = 0;

			for (j = i; j < in.v.n && gi[idx[j]] == gi[idx[i]]; j++)
				ev->sv[k++] = in.v.p[idx[j]].v;
			err = gw_pqe_vpush(&out->v, g[gi[idx[i]]].ls,
					   gw_pqe_quantile(param, ev->sv, k));
		}
		goto out;
	}
	if (isnan(param) || param < 1)
		goto out;
	double kmax = param >= (double)in.v.n ? (double)in.v.n : floor(param);

	for (size_t i = 0, j; i < in.v.n && !err; i = j) {
		for (j = i; j < in.v.n && gi[idx[j]] == gi[idx[i]]; j++)
			if ((double)(j - i) < kmax)
				err = gw_pqe_vpush(&out->v, in.v.p[idx[j]].ls,
						   in.v.p[idx[j]].v);
	}
out:
	free(g);
	free(gi);
	gw_pqe_val_release(&in);
	return err;
}
