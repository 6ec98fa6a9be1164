/* SPDX-License-Identifier: MIT */
/*
 * fake_queryable.c - the in-memory queryable of fake_queryable.h.
 */
#include "fake_queryable.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/labels.h"
#include "store/rollup.h"

struct fake_series {
	struct gw_labels l;
	int64_t *t;
	double *v;
	size_t n, cap;
	struct gw_rollup *r[GW_TIERS]; /* [GW_TIER_1M], [GW_TIER_1H] */
	size_t nr[GW_TIERS], capr[GW_TIERS];
};

struct gw_fakeq {
	struct fake_series *s;
	size_t n, cap;
	int64_t oldest[GW_TIERS];
	int fail;
	unsigned int delay_ms;
	struct gw_fakeq_stats st;
	/* Queries may run on several server threads at once. */
	pthread_mutex_t lock;
};

int gw_fakeq_new(struct gw_fakeq **out)
{
	struct gw_fakeq *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	for (int i = 0; i < GW_TIERS; i++)
		f->oldest[i] = INT64_MIN;
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

void gw_fakeq_free(struct gw_fakeq *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		struct fake_series *s = &f->s[i];

		gw_labels_release(&s->l);
		free(s->t);
		free(s->v);
		for (int k = 1; k < GW_TIERS; k++)
			gw_rollup_free_array(s->r[k], s->nr[k]);
	}
	free(f->s);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int gw_fakeq_series(struct gw_fakeq *f, const char *name, const char *labels,
		    size_t *id)
{
	struct gw_labels l;
	int err;

	err = gw_labels_parse(&l, name, labels);
	if (err)
		return err;
	for (size_t i = 0; i < f->n; i++) {
		if (gw_labels_cmp(&f->s[i].l, &l) == 0) {
			gw_labels_release(&l);
			return -EEXIST;
		}
	}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		struct fake_series *s = realloc(f->s, cap * sizeof(*s));

		if (!s) {
			gw_labels_release(&l);
			return -ENOMEM;
		}
		f->s = s;
		f->cap = cap;
	}
	memset(&f->s[f->n], 0, sizeof(f->s[0]));
	f->s[f->n].l = l;
	*id = f->n++;
	return 0;
}

static int64_t window_end(int64_t t, int64_t w)
{
	int64_t q = t / w;

	if (t % w && t < 0)
		q--;
	return q * w + w;
}

/* Makes room for one more rollup at the end of the series' tier. */
static int rollup_room(struct fake_series *s, enum gw_tier k)
{
	if (s->nr[k] < s->capr[k])
		return 0;
	size_t cap = s->capr[k] ? s->capr[k] * 2 : 8;
	struct gw_rollup *r = realloc(s->r[k], cap * sizeof(*r));

	if (!r)
		return -ENOMEM;
	s->r[k] = r;
	s->capr[k] = cap;
	return 0;
}

int gw_fakeq_sample(struct gw_fakeq *f, size_t id, int64_t t, double v)
{
	struct fake_series *s;
	int err;

	if (id >= f->n)
		return -EINVAL;
	s = &f->s[id];
	if (s->n && t <= s->t[s->n - 1])
		return -EINVAL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		int64_t *nt = realloc(s->t, cap * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		s->t = nt;
		double *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	s->t[s->n] = t;
	s->v[s->n] = v;
	s->n++;
	for (int k = GW_TIER_1M; k < GW_TIERS; k++) {
		int64_t end = window_end(t, gw_tier_width((enum gw_tier)k));
		struct gw_rollup *r;

		if (!s->nr[k] || s->r[k][s->nr[k] - 1].t != end) {
			err = rollup_room(s, (enum gw_tier)k);
			if (err)
				return err;
			gw_rollup_init(&s->r[k][s->nr[k]++], end);
		}
		r = &s->r[k][s->nr[k] - 1];
		err = gw_rollup_add(r, t, v);
		if (err)
			return err;
	}
	return 0;
}

static int rollup_copy(struct gw_rollup *dst, const struct gw_rollup *src)
{
	*dst = *src;
	gw_sketch_init(&dst->sk);
	return gw_sketch_merge(&dst->sk, &src->sk);
}

int gw_fakeq_rollup(struct gw_fakeq *f, size_t id, enum gw_tier tier,
		    const struct gw_rollup *r)
{
	struct fake_series *s;
	int err;

	if (id >= f->n || tier == GW_TIER_RAW || (int)tier >= GW_TIERS)
		return -EINVAL;
	s = &f->s[id];
	if (s->nr[tier] && r->t <= s->r[tier][s->nr[tier] - 1].t)
		return -EINVAL;
	err = rollup_room(s, tier);
	if (err)
		return err;
	err = rollup_copy(&s->r[tier][s->nr[tier]], r);
	if (err) {
		gw_sketch_release(&s->r[tier][s->nr[tier]].sk);
		return err;
	}
	s->nr[tier]++;
	return 0;
}

void gw_fakeq_retention(struct gw_fakeq *f, enum gw_tier tier, int64_t oldest)
{
	if ((int)tier >= 0 && (int)tier < GW_TIERS)
		f->oldest[tier] = oldest;
}

void gw_fakeq_delay(struct gw_fakeq *f, unsigned int ms)
{
	pthread_mutex_lock(&f->lock);
	f->delay_ms = ms;
	pthread_mutex_unlock(&f->lock);
}

void gw_fakeq_fail(struct gw_fakeq *f, int err)
{
	f->fail = err;
}

const struct gw_fakeq_stats *gw_fakeq_stats(const struct gw_fakeq *f)
{
	return &f->st;
}

static enum gw_tier fake_pick_tier(void *ctx, int64_t mint, int64_t maxt,
				   int64_t step_ms)
{
	struct gw_fakeq *f = ctx;

	pthread_mutex_lock(&f->lock);
	f->st.picks++;
	f->st.pick_mint = mint;
	f->st.pick_maxt = maxt;
	f->st.pick_step = step_ms;
	pthread_mutex_unlock(&f->lock);
	if (f->oldest[GW_TIER_RAW] <= mint)
		return GW_TIER_RAW; /* raw first, at any step */
	for (int k = GW_TIERS - 1; k > GW_TIER_RAW; k--)
		if (gw_tier_width((enum gw_tier)k) <= step_ms &&
		    f->oldest[k] <= mint)
			return (enum gw_tier)k;
	for (int k = 0; k < GW_TIERS; k++)
		if (f->oldest[k] <= mint)
			return (enum gw_tier)k;
	return GW_TIER_1H;
}

static void data_release(struct gw_series_data *d, size_t nr_init)
{
	gw_labels_release(&d->labels);
	free(d->t);
	free(d->v);
	gw_rollup_free_array(d->r, nr_init);
	memset(d, 0, sizeof(*d));
}

/* Copies the part of s within [mint, maxt] of tier into d; d->n = 0 when
 * there is none. */
static int copy_series(const struct fake_series *s, enum gw_tier tier,
		       int64_t mint, int64_t maxt, struct gw_series_data *d)
{
	size_t lo = 0, hi = 0;
	int err;

	memset(d, 0, sizeof(*d));
	d->tier = tier;
	if (tier == GW_TIER_RAW) {
		while (lo < s->n && s->t[lo] < mint)
			lo++;
		for (hi = lo; hi < s->n && s->t[hi] <= maxt; hi++)
			;
		if (hi == lo)
			return 0;
		d->t = malloc((hi - lo) * sizeof(*d->t));
		d->v = malloc((hi - lo) * sizeof(*d->v));
		if (!d->t || !d->v) {
			data_release(d, 0);
			return -ENOMEM;
		}
		memcpy(d->t, s->t + lo, (hi - lo) * sizeof(*d->t));
		memcpy(d->v, s->v + lo, (hi - lo) * sizeof(*d->v));
	} else {
		const struct gw_rollup *r = s->r[tier];

		while (lo < s->nr[tier] && r[lo].t < mint)
			lo++;
		for (hi = lo; hi < s->nr[tier] && r[hi].t <= maxt; hi++)
			;
		if (hi == lo)
			return 0;
		d->r = malloc((hi - lo) * sizeof(*d->r));
		if (!d->r)
			return -ENOMEM;
		for (size_t i = lo; i < hi; i++) {
			err = rollup_copy(&d->r[i - lo], &r[i]);
			if (err) {
				gw_sketch_release(&d->r[i - lo].sk);
				data_release(d, i - lo);
				return err;
			}
		}
	}
	d->n = hi - lo;
	err = gw_labels_dup(&d->labels, &s->l);
	if (err) {
		data_release(d, d->n);
		return err;
	}
	return 0;
}

static int data_cmp(const void *a, const void *b)
{
	const struct gw_series_data *x = a, *y = b;

	return gw_labels_cmp(&x->labels, &y->labels);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fake_select(void *ctx, const struct gw_matcher *m, size_t nm,
		       int64_t mint, int64_t maxt, enum gw_tier tier,
		       struct gw_query_limits *lim, struct gw_series_set *out)
{
	struct gw_fakeq *f = ctx;
	struct gw_series_data *v = NULL;
	struct timespec delay;
	size_t n = 0;
	int err = 0;

	out->s = NULL;
	out->n = 0;
	pthread_mutex_lock(&f->lock);
	f->st.selects++;
	f->st.sel_mint = mint;
	f->st.sel_maxt = maxt;
	f->st.sel_tier = tier;
	f->st.sel_max_samples = lim->max_samples;
	f->st.sel_deadline_ns = lim->deadline_ns;
	err = f->fail;
	f->fail = 0;
	delay.tv_sec = f->delay_ms / 1000;
	delay.tv_nsec = (long)(f->delay_ms % 1000) * 1000000L;
	pthread_mutex_unlock(&f->lock);
	while (nanosleep(&delay, &delay) == -1 && errno == EINTR)
		;
	if (err)
		return err;
	if (lim->cancel && atomic_load(lim->cancel))
		return -ECANCELED;
	if ((int)tier < 0 || (int)tier >= GW_TIERS)
		return -EINVAL;
	if (lim->deadline_ns && mono_ns() > lim->deadline_ns)
		return -ETIMEDOUT;
	v = calloc(f->n ? f->n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++) {
		if (!gw_matchers_match(m, nm, &f->s[i].l))
			continue;
		err = copy_series(&f->s[i], tier, mint, maxt, &v[n]);
		if (err)
			goto fail;
		if (!v[n].n)
			continue;
		lim->samples += v[n].n;
		n++;
		if (lim->max_samples && lim->samples > lim->max_samples) {
			err = -E2BIG;
			goto fail;
		}
	}
	qsort(v, n, sizeof(*v), data_cmp);
	out->s = v;
	out->n = n;
	return 0;
fail:
	for (size_t i = 0; i < n; i++)
		data_release(&v[i], v[i].n);
	free(v);
	return err;
}

/* The series selected by any of the matcher lists (all when nsets is 0)
 * with a raw sample in [mint, maxt]. */
static bool chosen(const struct fake_series *s,
		   const struct gw_matcher *const *sets, const size_t *nm,
		   size_t nsets, int64_t mint, int64_t maxt)
{
	bool in = false, match = nsets == 0;

	for (size_t i = 0; i < s->n && !in; i++)
		in = s->t[i] >= mint && s->t[i] <= maxt;
	for (size_t i = 0; i < nsets && !match; i++)
		match = gw_matchers_match(sets[i], nm[i], &s->l);
	return in && match;
}

static int labels_cmp(const void *a, const void *b)
{
	return gw_labels_cmp(a, b);
}

static int fake_series_fn(void *ctx, const struct gw_matcher *const *sets,
			  const size_t *nm, size_t nsets, int64_t mint,
			  int64_t maxt, struct gw_query_limits *lim,
			  struct gw_label_set_list *out)
{
	struct gw_fakeq *f = ctx;
	size_t n = 0;
	int err;

	(void)lim;
	out->v = calloc(f->n ? f->n : 1, sizeof(*out->v));
	out->n = 0;
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++) {
		if (!chosen(&f->s[i], sets, nm, nsets, mint, maxt))
			continue;
		err = gw_labels_dup(&out->v[n], &f->s[i].l);
		if (err) {
			for (size_t j = 0; j < n; j++)
				gw_labels_release(&out->v[j]);
			free(out->v);
			out->v = NULL;
			return err;
		}
		n++;
	}
	qsort(out->v, n, sizeof(*out->v), labels_cmp);
	out->n = n;
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int fake_label_values(void *ctx, const char *name,
			     const struct gw_matcher *const *sets,
			     const size_t *nm, size_t nsets, int64_t mint,
			     int64_t maxt, struct gw_query_limits *lim,
			     struct gw_string_list *out)
{
	struct gw_fakeq *f = ctx;
	size_t total = 0, n = 0;

	(void)lim;
	for (size_t i = 0; i < f->n; i++)
		total += f->s[i].l.n;
	out->v = calloc(total ? total : 1, sizeof(*out->v));
	out->n = 0;
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++) {
		const struct fake_series *s = &f->s[i];

		if (!chosen(s, sets, nm, nsets, mint, maxt))
			continue;
		for (size_t j = 0; j < s->l.n; j++) {
			const char *x = name ? NULL : s->l.v[j].name;

			if (name && strcmp(s->l.v[j].name, name) == 0)
				x = s->l.v[j].value;
			if (!x)
				continue;
			out->v[n] = strdup(x);
			if (!out->v[n]) {
				for (size_t k = 0; k < n; k++)
					free(out->v[k]);
				free(out->v);
				out->v = NULL;
				return -ENOMEM;
			}
			n++;
		}
	}
	qsort(out->v, n, sizeof(*out->v), str_cmp);
	/* Drop duplicates. */
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && strcmp(out->v[k - 1], out->v[i]) == 0)
			free(out->v[i]);
		else
			out->v[k++] = out->v[i];
	}
	out->n = k;
	return 0;
}

void gw_fakeq_queryable(struct gw_fakeq *f, struct gw_queryable *q)
{
	q->ctx = f;
	q->pick_tier = fake_pick_tier;
	q->select = fake_select;
	q->series = fake_series_fn;
	q->label_values = fake_label_values;
}
