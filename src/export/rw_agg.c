/* SPDX-License-Identifier: MIT */
/*
 * rw_agg.c - see rw_agg.h.
 */
#include "export/rw_agg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
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

/* The group with these labels (key hash h), tag and kind, created when
 * new. */
static struct gw_rw_agg_group *group_of(struct gw_rw_agg *a,
					struct gw_labels *labels, uint64_t h,
					const char *tag, unsigned int outs,
					int sum)
{
	struct gw_rw_agg_group *g;

	for (size_t i = 0; i < a->n; i++) {
		g = &a->g[i];
		if (g->key == h && g->sum == sum && strcmp(g->tag, tag) == 0 &&
		    gw_labels_cmp(&g->labels, labels) == 0) {
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
	g->sum = sum;
	snprintf(g->tag, sizeof(g->tag), "%s", tag);
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
		w->last += src->last;
		if (src->t_last > w->t_last)
			w->t_last = src->t_last;
		g->members[lo]++;
		return 0;
	}
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;
		uint32_t *m;

		w = realloc(g->w, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		g->w = w;
		m = realloc(g->members, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		g->members = m;
		g->cap = cap;
	}
	memmove(&g->w[lo + 1], &g->w[lo], (g->n - lo) * sizeof(g->w[0]));
	memmove(&g->members[lo + 1], &g->members[lo],
		(g->n - lo) * sizeof(g->members[0]));
	g->members[lo] = 1;
	w = &g->w[lo];
	memset(w, 0, sizeof(*w));
	w->t = src->t;
	w->t_first = INT64_MIN;
	w->t_last = src->t_last;
	w->last = src->last;
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
		  unsigned int outs, int sum)
{
	struct gw_label pairs[GW_LABELS_MAX];
	struct gw_labels l;
	struct gw_rw_agg_group *g;
	char tag[128] = "_without";
	size_t n = 0, tl = strlen(tag);
	uint64_t h;
	int r;

	for (size_t i = 0; i < d->labels.n && n < GW_LABELS_MAX; i++) {
		bool drop = false;

		for (size_t k = 0; k < nwithout && !drop; k++)
			drop = strcmp(d->labels.v[i].name, without[k]) == 0;
		if (!drop)
			pairs[n++] = d->labels.v[i];
	}
	for (size_t k = 0; k < nwithout; k++)
		if (gw_labels_get(&d->labels, without[k]) &&
		    tl + 1 + strlen(without[k]) < sizeof(tag))
			tl += (size_t)snprintf(tag + tl, sizeof(tag) - tl,
					       "_%s", without[k]);
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
	g = group_of(a, &l, h, tag, outs, sum);
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

void gw_rw_agg_finish(struct gw_rw_agg *a)
{
	for (size_t i = 0; i < a->n; i++) {
		struct gw_rw_agg_group *g = &a->g[i];
		uint32_t most = 0;
		size_t k = 0;

		if (!g->sum)
			continue;
		for (size_t j = 0; j < g->n; j++)
			if (g->members[j] > most)
				most = g->members[j];
		for (size_t j = 0; j < g->n; j++)
			if (g->members[j] == most) {
				g->w[k] = g->w[j];
				g->members[k++] = g->members[j];
			}
		g->n = k;
	}
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
	for (size_t i = 0; i < a->cap; i++) {
		free(a->g[i].w);
		free(a->g[i].members);
	}
	free(a->g);
	gw_buf_release(&a->buf);
	memset(a, 0, sizeof(*a));
}
