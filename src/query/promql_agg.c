/* SPDX-License-Identifier: MIT */
/*
 * promql_agg.c - the PromQL aggregations (sum avg min max count group
 * stddev stdvar count_values topk bottomk quantile, with by/without) at
 * one step of the evaluator (promql_eval.c, sharing promql_int.h).
 * Samples are grouped by their interned group label set, groups kept in
 * order of first appearance; topk, bottomk and quantile then take each
 * group's samples in input order from the evaluator's scratch space.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql_int.h"

struct grp {
	struct lset *ls;
	struct gw_pqe_mean m;
	double v;
	double mean; /* stddev, stdvar */
	size_t count;
};

/*
 * topk and bottomk as Prometheus 2.42 computes them, so that ties come
 * out in the same order: per group, in input order, a binary heap of at
 * most k samples (Go's container/heap: the worst on top, a NaN worst of
 * all), a new sample taking the place of the worst by Pop then Push (in
 * place when k is 1); then the heap sorted best first by Go's sort.Sort
 * (promql_gosort.c).
 */
struct kheap {
	const struct smp *p;
	size_t *h; /* sample indices */
	size_t n;
	bool top;
};

/* Go's Less of vectorByValueHeap (topk) / vectorByReverseValueHeap. */
static bool kless(const struct kheap *k, size_t i, size_t j)
{
	double a = k->p[k->h[i]].v, b = k->p[k->h[j]].v;

	if (isnan(a))
		return true;
	return k->top ? a < b : a > b;
}

static void kswap(struct kheap *k, size_t i, size_t j)
{
	size_t x = k->h[i];

	k->h[i] = k->h[j];
	k->h[j] = x;
}

static void kup(struct kheap *k, size_t j)
{
	while (j > 0) {
		size_t i = (j - 1) / 2;

		if (!kless(k, j, i))
			break;
		kswap(k, i, j);
		j = i;
	}
}

static void kdown(struct kheap *k, size_t i, size_t n)
{
	for (;;) {
		size_t j = 2 * i + 1;

		if (j >= n)
			break;
		if (j + 1 < n && kless(k, j + 1, j))
			j++;
		if (!kless(k, j, i))
			break;
		kswap(k, i, j);
		i = j;
	}
}

/* Sample x of the group, k the parameter. */
static void kadd(struct kheap *k, size_t x, int64_t kk)
{
	double v = k->p[x].v, w;

	if (k->n == 0) {
		k->h[k->n++] = x;
		return;
	}
	w = k->p[k->h[0]].v;
	if (!((int64_t)k->n < kk || (k->top ? w < v : w > v) || isnan(w)))
		return;
	if ((int64_t)k->n == kk) {
		if (kk == 1) {
			k->h[0] = x;
			return;
		}
		kswap(k, 0, k->n - 1); /* Pop */
		kdown(k, 0, k->n - 1);
		k->n--;
	}
	k->h[k->n++] = x; /* Push */
	kup(k, k->n - 1);
}

static bool rev_less(void *ctx, size_t i, size_t j)
{
	return kless(ctx, j, i);
}

static void rev_swap(void *ctx, size_t i, size_t j)
{
	kswap(ctx, i, j);
}

/* sort.Sort(sort.Reverse(heap)): best first, ties as Go leaves them. */
static void ksort_best_first(struct kheap *k)
{
	struct gw_pqe_gosort s = { rev_less, rev_swap, k };

	gw_pqe_gosort(&s, k->n);
}

/* Go's %v of a float64: shortest digits, an exponent below 1e-4 and from
 * 1e6 on (1e+30, 1.5e-07). */
static void go_g(char *out, size_t n, double v)
{
	char s[40], *e;
	int prec, x;

	if (isnan(v) || isinf(v)) {
		snprintf(out, n, "%s",
			 isnan(v) ? "NaN"
			 : v > 0  ? "+Inf"
				  : "-Inf");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(s, sizeof(s), "%.*e", prec, v);
		if (strtod(s, NULL) == v)
			break;
	}
	e = strchr(s, 'e');
	x = e ? atoi(e + 1) : 0;
	if (v != 0 && (x < -4 || x >= 6))
		snprintf(out, n, "%.*e", prec, v);
	else
		snprintf(out, n, "%.*f", prec - x > 0 ? prec - x : 0, v);
}

/* Prometheus' model.LabelName.IsValid. */
static bool label_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '_' || (i > 0 && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

/* ls with label name set to v's text (Go's FormatFloat(v, 'f', -1)). */
static int with_value_label(struct ev *ev, struct lset *ls, const char *name,
			    double v, struct lset **out)
{
	struct gw_label *pairs;
	struct gw_labels l;
	struct gw_buf b;
	size_t k = 0;
	int err;

	gw_buf_init(&b, 64);
	err = gw_promql_fmt_value(&b, v);
	if (!err)
		err = gw_buf_add(&b, "", 0);
	pairs = calloc(ls->l.n + 1, sizeof(*pairs));
	if (!err && !pairs)
		err = -ENOMEM;
	if (err)
		goto out;
	for (size_t i = 0; i < ls->l.n; i++)
		if (strcmp(ls->l.v[i].name, name) != 0)
			pairs[k++] = ls->l.v[i];
	pairs[k].name = name;
	pairs[k].value = b.p;
	k++;
	err = gw_labels_from(&l, pairs, k);
	if (!err)
		err = gw_pqe_intern(ev, &l, out);
out:
	free(pairs);
	gw_buf_release(&b);
	return err;
}

/* The group key of sample set ls (count_values: ls with its value label). */
static int group_key(struct ev *ev, const struct gw_pq_node *n, struct lset *ls,
		     char **by, size_t nby, struct lset **k)
{
	if (n->u.agg.without)
		return gw_pqe_derive(ev, ls, &n->u.agg.labels, n->u.agg.labels,
				     n->u.agg.nlabels, false, true, k);
	if (by != n->u.agg.labels) /* count_values: the value label too */
		return gw_pqe_derive(ev, ls, &n->u.agg.param, by, nby, true,
				     false, k);
	if (!n->u.agg.grouping) {
		*k = ev->empty;
		return 0;
	}
	return gw_pqe_derive(ev, ls, &n->u.agg.labels, n->u.agg.labels,
			     n->u.agg.nlabels, true, false, k);
}

/* The parameters: k (topk, bottomk), q (quantile), the label name
 * (count_values). */
static int agg_param(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		     double *param, int64_t *k, const char **label)
{
	enum gw_pq_aggop op = n->u.agg.op;
	struct val v = { 0 };
	int err;

	if (op != GW_AGG_TOPK && op != GW_AGG_BOTTOMK &&
	    op != GW_AGG_QUANTILE && op != GW_AGG_COUNT_VALUES)
		return 0;
	if (!n->u.agg.param)
		return gw_pqe_malformed(ev);
	if (op == GW_AGG_COUNT_VALUES) {
		err = gw_pqe_eval(ev, n->u.agg.param, t, &v);
		if (!err && v.type != GW_TYPE_STRING)
			err = gw_pqe_malformed(ev);
		if (!err)
			*label = v.str; /* the tree's, outlives v */
		gw_pqe_val_release(&v);
		if (!err && !label_name_ok(*label))
			err = gw_pqe_fail(ev, GW_QERR_EXECUTION, -EINVAL,
					  "invalid label name \"%.200s\"",
					  *label);
		return err;
	}
	err = gw_pqe_eval_scalar_arg(ev, n->u.agg.param, t, param);
	if (err || op == GW_AGG_QUANTILE)
		return err;
	/* Prometheus' convertibleToInt64, then a truncation. */
	if (!(*param >= -9223372036854775808.0 &&
	      *param < 9223372036854775808.0)) {
		char b[40];

		go_g(b, sizeof(b), *param);
		return gw_pqe_fail(ev, GW_QERR_EXECUTION, -EINVAL,
				   "Scalar value %s overflows int64", b);
	}
	*k = (int64_t)*param;
	return 0;
}

int gw_pqe_eval_agg(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    struct val *out)
{
	enum gw_pq_aggop op = n->u.agg.op;
	struct val in = { 0 };
	struct grp *g = NULL;
	size_t ng = 0, *gi = NULL, *ord, *start = NULL;
	const char *vlabel = NULL;
	char **by = n->u.agg.labels;
	size_t nby = n->u.agg.nlabels;
	double param = 0;
	int64_t k = 0;
	uint64_t st;
	int err;

	err = agg_param(ev, n, t, &param, &k, &vlabel);
	if (err)
		return err;
	out->type = GW_TYPE_VECTOR;
	if ((op == GW_AGG_TOPK || op == GW_AGG_BOTTOMK) && k < 1)
		return 0;
	err = gw_pqe_eval(ev, n->u.agg.expr, t, &in);
	if (err)
		goto out;
	if (in.type != GW_TYPE_VECTOR) {
		err = gw_pqe_malformed(ev);
		goto out;
	}
	if (in.v.n == 0)
		goto out;
	if (vlabel && !n->u.agg.without) {
		/* by (labels..., the value label) */
		by = calloc(nby + 1, sizeof(*by));
		if (!by) {
			err = -ENOMEM;
			goto out;
		}
		if (nby)
			memcpy(by, n->u.agg.labels, nby * sizeof(*by));
		by[nby++] = (char *)vlabel;
	}
	g = calloc(in.v.n, sizeof(*g));
	gi = calloc(in.v.n, sizeof(*gi));
	start = calloc(in.v.n + 1, sizeof(*start));
	if (!g || !gi || !start) {
		err = -ENOMEM;
		goto out;
	}
	st = ++ev->stamp;
	for (size_t i = 0; i < in.v.n; i++) {
		struct lset *ls = in.v.p[i].ls, *key;
		double x = in.v.p[i].v;
		struct grp *gg;

		if (vlabel) {
			err = with_value_label(ev, ls, vlabel, x, &ls);
			if (err)
				goto out;
		}
		err = group_key(ev, n, ls, by, nby, &key);
		if (err)
			goto out;
		if (key->mark != st) {
			key->mark = st;
			key->idx = ng;
			g[ng].ls = key;
			g[ng].v = NAN;
			ng++;
		}
		gi[i] = key->idx;
		gg = &g[key->idx];
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
		case GW_AGG_STDDEV:
		case GW_AGG_STDVAR:
			/* Welford's, as Prometheus computes it. */
			if (gg->count == 1) {
				gg->mean = x;
				gg->v = 0;
			} else {
				double d = x - gg->mean;

				gg->mean += d / (double)gg->count;
				gg->v += d * (x - gg->mean);
			}
			break;
		default:
			break;
		}
	}
	if (op != GW_AGG_TOPK && op != GW_AGG_BOTTOMK &&
	    op != GW_AGG_QUANTILE) {
		for (size_t j = 0; j < ng && !err; j++) {
			double x;

			switch (op) {
			case GW_AGG_SUM:
				x = g[j].v + g[j].m.c;
				break;
			case GW_AGG_AVG:
				x = gw_pqe_mean_get(&g[j].m);
				break;
			case GW_AGG_COUNT:
			case GW_AGG_COUNT_VALUES:
				x = (double)g[j].count;
				break;
			case GW_AGG_STDVAR:
				x = g[j].v / (double)g[j].count;
				break;
			case GW_AGG_STDDEV:
				x = sqrt(g[j].v / (double)g[j].count);
				break;
			case GW_AGG_GROUP:
				x = 1;
				break;
			default: /* min, max */
				x = g[j].v;
				break;
			}
			err = gw_pqe_vpush(&out->v, g[j].ls, x);
		}
		goto out;
	}
	/* topk, bottomk, quantile: each group's samples, in input order. */
	err = gw_pqe_scratch_ix(ev, 2 * in.v.n);
	if (err)
		goto out;
	ord = ev->ix;
	for (size_t j = 0; j < ng; j++)
		start[j + 1] = start[j] + g[j].count;
	for (size_t j = 0; j < ng; j++)
		g[j].count = 0;
	for (size_t i = 0; i < in.v.n; i++)
		ord[start[gi[i]] + g[gi[i]].count++] = i;
	if (op == GW_AGG_QUANTILE) {
		err = gw_pqe_scratch(ev, in.v.n);
		for (size_t j = 0; j < ng && !err; j++) {
			size_t m = 0;

			for (size_t i = start[j]; i < start[j + 1]; i++)
				ev->sv[m++] = in.v.p[ord[i]].v;
			err = gw_pqe_vpush(&out->v, g[j].ls,
					   gw_pqe_quantile(param, ev->sv, m));
		}
		goto out;
	}
	for (size_t j = 0; j < ng && !err; j++) {
		struct kheap kh = { in.v.p, ev->ix + in.v.n, 0,
				    op == GW_AGG_TOPK };

		for (size_t i = start[j]; i < start[j + 1]; i++)
			kadd(&kh, ord[i], k);
		if (kh.n > 1)
			ksort_best_first(&kh);
		for (size_t i = 0; i < kh.n && !err; i++)
			err = gw_pqe_vpush(&out->v, in.v.p[kh.h[i]].ls,
					   in.v.p[kh.h[i]].v);
	}
out:
	if (by != n->u.agg.labels)
		free(by);
	free(g);
	free(gi);
	free(start);
	gw_pqe_val_release(&in);
	return err;
}
