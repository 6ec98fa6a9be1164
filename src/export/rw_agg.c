/* SPDX-License-Identifier: MIT */
/*
 * rw_agg.c - see rw_agg.h.
 */
#include "export/rw_agg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

int gw_rw_agg_applies(const struct gw_labels *labels,
		      const char *const *without, size_t nwithout)
{
	for (size_t i = 0; i < nwithout; i++)
		if (gw_labels_get(labels, without[i]))
			return 1;
	return 0;
}

/* The group with these labels (key hash h), created when new. */
static struct gw_rw_agg_group *group_of(struct gw_rw_agg *a,
					struct gw_labels *labels, uint64_t h,
					unsigned int outs)
{
	struct gw_rw_agg_group *g;

	for (size_t i = 0; i < a->n; i++) {
		g = &a->g[i];
		if (g->key == h && gw_labels_cmp(&g->labels, labels) == 0) {
			gw_labels_release(labels);
			return g;
		}
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;

		g = realloc(a->g, cap * sizeof(*g));
		if (!g)
			return NULL;
		memset(g + a->cap, 0, (cap - a->cap) * sizeof(*g));
		a->g = g;
		a->cap = cap;
	}
	g = &a->g[a->n++];
	g->labels = *labels;
	memset(labels, 0, sizeof(*labels));
	g->outs = outs;
	g->n = 0;
	g->key = h;
	return g;
}

/* Merges window src's statistics into the group's window at time src->t. */
static int merge(struct gw_rw_agg_group *g, const struct gw_rollup *src)
{
	size_t lo = 0, hi = g->n;
	struct gw_rollup *w;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->w[mid].t < src->t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < g->n && g->w[lo].t == src->t) {
		w = &g->w[lo];
		w->count += src->count;
		w->sum += src->sum;
		w->sumsq += src->sumsq;
		w->min = fmin(w->min, src->min);
		w->max = fmax(w->max, src->max);
		return 0;
	}
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;

		w = realloc(g->w, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		g->w = w;
		g->cap = cap;
	}
	memmove(&g->w[lo + 1], &g->w[lo], (g->n - lo) * sizeof(g->w[0]));
	w = &g->w[lo];
	memset(w, 0, sizeof(*w));
	w->t = src->t;
	w->t_first = w->t_last = INT64_MIN;
	w->count = src->count;
	w->sum = src->sum;
	w->sumsq = src->sumsq;
	w->min = src->min;
	w->max = src->max;
	w->reset = NAN;
	g->n++;
	return 0;
}

int gw_rw_agg_add(struct gw_rw_agg *a, const struct gw_series_data *d,
		  const char *const *without, size_t nwithout,
		  unsigned int outs)
{
	struct gw_label pairs[GW_LABELS_MAX];
	struct gw_labels l;
	struct gw_rw_agg_group *g;
	size_t n = 0;
	uint64_t h;
	int r;

	for (size_t i = 0; i < d->labels.n && n < GW_LABELS_MAX; i++) {
		bool drop = false;

		for (size_t k = 0; k < nwithout && !drop; k++)
			drop = strcmp(d->labels.v[i].name, without[k]) == 0;
		if (!drop)
			pairs[n++] = d->labels.v[i];
	}
	r = gw_labels_from(&l, pairs, n);
	if (r)
		return r;
	gw_buf_reset(&a->buf);
	r = gw_labels_key(&l, &a->buf);
	if (r) {
		gw_labels_release(&l);
		return r;
	}
	h = gw_fnv1a64(a->buf.p, a->buf.len);
	g = group_of(a, &l, h, outs);
	if (!g) {
		gw_labels_release(&l);
		return -ENOMEM;
	}
	for (size_t k = 0; k < d->n; k++) {
		if (!(d->r[k].count > 0))
			continue;
		r = merge(g, &d->r[k]);
		if (r)
			return r;
	}
	return 0;
}

void gw_rw_agg_init(struct gw_rw_agg *a)
{
	memset(a, 0, sizeof(*a));
	gw_buf_init(&a->buf, 1 << 20);
}

void gw_rw_agg_clear(struct gw_rw_agg *a)
{
	for (size_t i = 0; i < a->n; i++) {
		gw_labels_release(&a->g[i].labels);
		a->g[i].n = 0;
	}
	a->n = 0;
}

void gw_rw_agg_release(struct gw_rw_agg *a)
{
	gw_rw_agg_clear(a);
	for (size_t i = 0; i < a->cap; i++)
		free(a->g[i].w);
	free(a->g);
	gw_buf_release(&a->buf);
	memset(a, 0, sizeof(*a));
}
