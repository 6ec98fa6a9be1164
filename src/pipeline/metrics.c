/* SPDX-License-Identifier: MIT */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"

void gw_snap_init(struct gw_snap *s)
{
	memset(s, 0, sizeof(*s));
	gw_buf_init(&s->labels, GW_SNAP_MAX_LABEL_BYTES);
}

void gw_snap_release(struct gw_snap *s)
{
	free(s->v);
	gw_buf_release(&s->labels);
	memset(s, 0, sizeof(*s));
}

void gw_snap_reset(struct gw_snap *s)
{
	s->n = 0;
	s->dropped = 0;
	gw_buf_reset(&s->labels);
}

/* Makes room for n more samples; 0 or -ENOSPC/-ENOMEM. */
static int reserve_samples(struct gw_snap *s, size_t n)
{
	size_t cap = s->cap ? s->cap : 64;
	struct gw_sample *nv;

	if (s->n + n <= s->cap)
		return 0;
	if (s->n + n > GW_SNAP_MAX_SAMPLES)
		return -ENOSPC;
	while (cap < s->n + n)
		cap *= 2;
	if (cap > GW_SNAP_MAX_SAMPLES)
		cap = GW_SNAP_MAX_SAMPLES;
	nv = realloc(s->v, cap * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->v = nv;
	s->cap = cap;
	return 0;
}

/*
 * Appends base and the name/value pairs of ap to the label arena, leaving
 * out those with an empty value (absent labels, as in Prometheus: neither
 * /metrics nor the store sees them).
 */
static int add_labels(struct gw_snap *s, const char *base, va_list ap,
		      uint32_t *off, uint32_t *len)
{
	size_t start = s->labels.len;
	const char *k, *v;
	int err;

	if (base && *base)
		gw_buf_set_error(&s->labels,
				 gw_labels_append_list(&s->labels, base));
	while (!gw_buf_error(&s->labels) &&
	       (k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		if (!v || !*v)
			continue;
		if (s->labels.len > start)
			gw_buf_put(&s->labels, ",", 1);
		gw_buf_set_error(&s->labels,
				 gw_labels_append(&s->labels, k, v ? v : ""));
	}
	err = gw_buf_error(&s->labels);
	if (err) {
		gw_buf_truncate(&s->labels, start);
		return err;
	}
	*off = (uint32_t)start;
	*len = (uint32_t)(s->labels.len - start);
	return 0;
}

static void push(struct gw_snap *s, const struct gw_family *f, uint32_t off,
		 uint32_t len, double value, enum gw_sample_kind kind,
		 double le)
{
	struct gw_sample *x = &s->v[s->n++];

	x->fam = f;
	x->labels = off;
	x->labels_len = len;
	x->value = value;
	x->kind = kind;
	x->le = le;
}

void gw_snap_add(struct gw_snap *s, const struct gw_family *f, double value,
		 const char *base, ...)
{
	uint32_t off, len;
	va_list ap;
	int err;

	if (isnan(value))
		return;
	if (reserve_samples(s, 1)) {
		s->dropped++;
		return;
	}
	va_start(ap, base);
	err = add_labels(s, base, ap, &off, &len);
	va_end(ap);
	if (err) {
		s->dropped++;
		return;
	}
	push(s, f, off, len, value, GW_SAMPLE_PLAIN, 0);
}

void gw_snap_add_histogram(struct gw_snap *s, const struct gw_family *f,
			   const double *bounds, const uint64_t *counts,
			   size_t n, double sum, const char *base, ...)
{
	uint64_t cum = 0;
	uint32_t off, len;
	va_list ap;
	int err;

	if (reserve_samples(s, n + 3)) {
		s->dropped += n + 3;
		return;
	}
	va_start(ap, base);
	err = add_labels(s, base, ap, &off, &len);
	va_end(ap);
	if (err) {
		s->dropped += n + 3;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		cum += counts[i];
		push(s, f, off, len, (double)cum, GW_SAMPLE_BUCKET, bounds[i]);
	}
	cum += counts[n]; /* above the last bound */
	push(s, f, off, len, (double)cum, GW_SAMPLE_BUCKET, INFINITY);
	push(s, f, off, len, sum, GW_SAMPLE_SUM, 0);
	push(s, f, off, len, (double)cum, GW_SAMPLE_COUNT, 0);
}

void gw_snap_add_summary(struct gw_snap *s, const struct gw_family *f,
			 const double *q, const double *values, size_t n,
			 double count, double sum, const char *base, ...)
{
	uint32_t off, len;
	va_list ap;
	int err;

	if (reserve_samples(s, n + 2)) {
		s->dropped += n + 2;
		return;
	}
	va_start(ap, base);
	err = add_labels(s, base, ap, &off, &len);
	va_end(ap);
	if (err) {
		s->dropped += n + 2;
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (!isnan(values[i]))
			push(s, f, off, len, values[i], GW_SAMPLE_QUANTILE,
			     q[i]);
	push(s, f, off, len, sum, GW_SAMPLE_SUM, 0);
	push(s, f, off, len, count, GW_SAMPLE_COUNT, 0);
}

size_t gw_snap_copy(struct gw_snap *dst, const struct gw_snap *src,
		    const char *prefix)
{
	size_t plen = prefix ? strlen(prefix) : 0, n = 0;
	uint32_t last_src = UINT32_MAX, last_off = 0, last_len = 0;

	for (size_t i = 0; i < src->n; i++) {
		const struct gw_sample *x = &src->v[i];
		const char *l = src->labels.p ? src->labels.p + x->labels : "";
		size_t start;

		if (plen &&
		    (x->labels_len < plen || memcmp(l, prefix, plen) != 0 ||
		     (x->labels_len > plen && l[plen] != ',')))
			continue;
		if (reserve_samples(dst, 1)) {
			dst->dropped++;
			continue;
		}
		/* A histogram's samples share one label text: copy it once. */
		if (x->labels != last_src || x->labels_len != last_len) {
			start = dst->labels.len;
			if (gw_buf_add(&dst->labels, l, x->labels_len)) {
				dst->dropped++;
				last_src = UINT32_MAX;
				continue;
			}
			last_src = x->labels;
			last_off = (uint32_t)start;
			last_len = x->labels_len;
		}
		push(dst, x->fam, last_off, last_len, x->value, x->kind, x->le);
		n++;
	}
	return n;
}

struct slot {
	char owner[32];
	struct gw_snap snap;
	uint64_t gen; /* publishes so far */
	int64_t t_ms; /* CLOCK_REALTIME of the last publish */
};

struct entry {
	const struct gw_sample *s;
	const char *labels;
	size_t order; /* publish order: the first copy of a duplicate wins */
};

struct gw_registry {
	pthread_mutex_t lock;
	int nslots;
	struct slot slots[GW_REGISTRY_MAX_SLOTS];
	struct entry *entries;
	size_t entries_cap;
	uint64_t dropped;
	uint64_t duplicates; /* found by the last render */
};

struct gw_registry *gw_registry_new(void)
{
	struct gw_registry *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

void gw_registry_free(struct gw_registry *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nslots; i++)
		gw_snap_release(&r->slots[i].snap);
	free(r->entries);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int gw_registry_slot(struct gw_registry *r, const char *owner)
{
	int id;

	pthread_mutex_lock(&r->lock);
	if (r->nslots >= GW_REGISTRY_MAX_SLOTS) {
		pthread_mutex_unlock(&r->lock);
		return -ENOSPC;
	}
	id = r->nslots++;
	snprintf(r->slots[id].owner, sizeof(r->slots[id].owner), "%s", owner);
	gw_snap_init(&r->slots[id].snap);
	pthread_mutex_unlock(&r->lock);
	return id;
}

void gw_registry_publish(struct gw_registry *r, int slot, struct gw_snap *s)
{
	struct timespec now;
	struct gw_snap old;

	if (slot < 0 || slot >= GW_REGISTRY_MAX_SLOTS)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&r->lock);
	old = r->slots[slot].snap;
	r->slots[slot].snap = *s;
	r->slots[slot].gen++;
	r->slots[slot].t_ms =
		(int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	r->dropped += s->dropped;
	pthread_mutex_unlock(&r->lock);
	*s = old;
	gw_snap_reset(s);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->s->fam->name, y->s->fam->name);
	size_t n;

	if (c)
		return c;
	n = x->s->labels_len < y->s->labels_len ? x->s->labels_len
						: y->s->labels_len;
	c = memcmp(x->labels, y->labels, n);
	if (c)
		return c;
	return (x->s->labels_len > y->s->labels_len) -
	       (x->s->labels_len < y->s->labels_len);
}

static int entry_cmp_ordered(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = entry_cmp(a, b);

	if (c)
		return c;
	return (x->order > y->order) - (x->order < y->order);
}

/*
 * v as the exposition writes it: NaN, +Inf, -Inf, an integer without a
 * point, else the shortest of %.15g..%.17g that reads back as the same
 * double.  The store gets le and quantile labels in this same form, so a
 * series has one name whether it is scraped or queried.
 */
static void format_value(char *buf, size_t n, double v)
{
	if (isnan(v)) {
		snprintf(buf, n, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, n, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(buf, n, "%.0f", v);
		return;
	}
	for (int prec = 15; prec < 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, n, "%.17g", v);
}

static void add_value(struct gw_buf *out, double v)
{
	char tmp[40];

	format_value(tmp, sizeof(tmp), v);
	gw_buf_puts(out, tmp);
}

/* The family's name in # TYPE/# HELP lines for the given format. */
static void add_family_name(struct gw_buf *out, const struct gw_family *f,
			    enum gw_expo_format fmt)
{
	size_t n = strlen(f->name);

	if (fmt == GW_EXPO_OPENMETRICS) {
		if (f->type == GW_COUNTER && n > 6 &&
		    strcmp(f->name + n - 6, "_total") == 0)
			n -= 6;
		else if (f->type == GW_INFO && n > 5 &&
			 strcmp(f->name + n - 5, "_info") == 0)
			n -= 5;
	}
	gw_buf_put(out, f->name, n);
}

const char *gw_metric_type_name(enum gw_metric_type t)
{
	switch (t) {
	case GW_COUNTER:
		return "counter";
	case GW_INFO:
		return "info";
	case GW_HISTOGRAM:
		return "histogram";
	case GW_SUMMARY:
		return "summary";
	case GW_GAUGE:
	default:
		return "gauge";
	}
}

/* The # TYPE word: the text format 0.0.4 has no info type. */
static const char *type_name(const struct gw_family *f, enum gw_expo_format fmt)
{
	if (f->type == GW_INFO && fmt != GW_EXPO_OPENMETRICS)
		return "gauge";
	return gw_metric_type_name(f->type);
}

static const char *const kind_suffix[] = {
	[GW_SAMPLE_PLAIN] = "",	   [GW_SAMPLE_BUCKET] = "_bucket",
	[GW_SAMPLE_SUM] = "_sum",  [GW_SAMPLE_COUNT] = "_count",
	[GW_SAMPLE_QUANTILE] = "",
};

/* The label a bucket or quantile sample adds, "" for the others. */
static const char *extra_label(enum gw_sample_kind k)
{
	return k == GW_SAMPLE_BUCKET	 ? "le"
	       : k == GW_SAMPLE_QUANTILE ? "quantile"
					 : "";
}

/*
 * One name and label set's samples in publish order (a run): a plain
 * sample once; a histogram or summary as gw_snap_add_histogram() and
 * gw_snap_add_summary() lay it out, buckets or quantiles by rising bound,
 * then _sum, then _count.  A sample that does not continue that layout
 * belongs to a second copy of the series (another ring, another snap)
 * and is not shown, nor is anything after it in the run.
 */
struct run {
	int stage; /* 0 bounds, 1 after _sum, 2 after _count, 3 done */
	int shown;
	double last_le;
};

static int run_accepts(struct run *st, const struct gw_sample *x)
{
	switch (x->kind) {
	case GW_SAMPLE_BUCKET:
	case GW_SAMPLE_QUANTILE:
		if (st->stage || (st->shown && !(x->le > st->last_le)))
			break;
		st->last_le = x->le;
		st->shown++;
		return 1;
	case GW_SAMPLE_SUM:
		if (st->stage)
			break;
		st->stage = 1;
		st->shown++;
		return 1;
	case GW_SAMPLE_COUNT:
		if (st->stage > 1)
			break;
		st->stage = 2;
		st->shown++;
		return 1;
	case GW_SAMPLE_PLAIN:
	default:
		if (st->shown || st->stage)
			break;
		st->stage = 3;
		st->shown++;
		return 1;
	}
	st->stage = 3;
	return 0;
}

static int render_locked(struct gw_registry *r, enum gw_expo_format fmt,
			 struct gw_buf *out)
{
	size_t n = 0, total = 0;
	const char *last_name = NULL;
	struct run run = { 0 };

	for (int i = 0; i < r->nslots; i++)
		total += r->slots[i].snap.n;
	if (total > r->entries_cap) {
		struct entry *e = realloc(r->entries, total * sizeof(*e));

		if (!e)
			return -ENOMEM;
		r->entries = e;
		r->entries_cap = total;
	}
	for (int i = 0; i < r->nslots; i++) {
		const struct gw_snap *s = &r->slots[i].snap;

		for (size_t j = 0; j < s->n; j++) {
			r->entries[n].s = &s->v[j];
			r->entries[n].labels =
				s->labels.p ? s->labels.p + s->v[j].labels : "";
			r->entries[n].order = n;
			n++;
		}
	}
	if (n > 1)
		qsort(r->entries, n, sizeof(*r->entries), entry_cmp_ordered);
	r->duplicates = 0;
	for (size_t i = 0; i < n && !gw_buf_error(out); i++) {
		const struct entry *e = &r->entries[i];
		const struct gw_family *f = e->s->fam;

		/* Entries of one name and label set are a run, in publish
		 * order: the first copy of the series is shown. */
		if (i == 0 || entry_cmp(e, e - 1) != 0)
			run = (struct run){ 0 };
		if (!run_accepts(&run, e->s)) {
			r->duplicates++;
			continue;
		}
		if (!last_name || strcmp(last_name, f->name) != 0) {
			last_name = f->name;
			gw_buf_puts(out, "# HELP ");
			add_family_name(out, f, fmt);
			gw_buf_putf(out, " %s\n# TYPE ", f->help);
			add_family_name(out, f, fmt);
			gw_buf_putf(out, " %s\n", type_name(f, fmt));
		}
		gw_buf_puts(out, f->name);
		gw_buf_puts(out, kind_suffix[e->s->kind]);
		if (e->s->labels_len || *extra_label(e->s->kind)) {
			gw_buf_put(out, "{", 1);
			gw_buf_put(out, e->labels, e->s->labels_len);
			if (*extra_label(e->s->kind)) {
				gw_buf_putf(out, "%s%s=\"",
					    e->s->labels_len ? "," : "",
					    extra_label(e->s->kind));
				add_value(out, e->s->le);
				gw_buf_put(out, "\"", 1);
			}
			gw_buf_put(out, "}", 1);
		}
		gw_buf_put(out, " ", 1);
		add_value(out, e->s->value);
		gw_buf_put(out, "\n", 1);
	}
	if (fmt == GW_EXPO_OPENMETRICS)
		gw_buf_puts(out, "# EOF\n");
	return gw_buf_error(out);
}

int gw_registry_render(struct gw_registry *r, enum gw_expo_format fmt,
		       struct gw_buf *out)
{
	int err;

	pthread_mutex_lock(&r->lock);
	err = render_locked(r, fmt, out);
	pthread_mutex_unlock(&r->lock);
	return err;
}

void gw_registry_stats(struct gw_registry *r, struct gw_registry_stats *st)
{
	uint64_t series = 0;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->nslots; i++)
		series += r->slots[i].snap.n;
	st->series = series;
	st->dropped = r->dropped;
	st->duplicates = r->duplicates;
	pthread_mutex_unlock(&r->lock);
}

size_t gw_registry_visit(struct gw_registry *r, uint64_t *gens,
			 gw_registry_visit_fn fn, void *ctx)
{
	char name[256], labels[4096];
	size_t n = 0;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->nslots; i++) {
		const struct slot *sl = &r->slots[i];
		const struct gw_snap *s = &sl->snap;

		if (sl->gen == gens[i])
			continue;
		gens[i] = sl->gen;
		for (size_t j = 0; j < s->n; j++) {
			const struct gw_sample *x = &s->v[j];
			struct gw_visit v;
			size_t len = x->labels_len;

			if (len >= sizeof(labels) - 64)
				continue;
			memcpy(labels,
			       s->labels.p ? s->labels.p + x->labels : "", len);
			labels[len] = '\0';
			if (*extra_label(x->kind)) {
				char le[40];

				format_value(le, sizeof(le), x->le);
				snprintf(labels + len, sizeof(labels) - len,
					 "%s%s=\"%s\"", len ? "," : "",
					 extra_label(x->kind), le);
			}
			snprintf(name, sizeof(name), "%s%s", x->fam->name,
				 kind_suffix[x->kind]);
			v.name = name;
			v.labels = labels;
			v.value = x->value;
			v.t_ms = sl->t_ms;
			v.type = x->fam->type;
			v.kind = x->kind;
			fn(ctx, &v);
			n++;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}

enum gw_expo_format gw_expo_negotiate(const char *accept)
{
	const char *p =
		accept ? strstr(accept, "application/openmetrics-text") : NULL;
	const char *end, *q;

	if (!p)
		return GW_EXPO_TEXT_004;
	/* "q=0" (or 0.0...) on that media range means "not this one". */
	end = strchr(p, ',');
	if (!end)
		end = p + strlen(p);
	for (q = strstr(p, "q="); q && q < end; q = strstr(q + 2, "q=")) {
		if (q > p && (q[-1] == ';' || q[-1] == ' ') &&
		    strtod(q + 2, NULL) <= 0)
			return GW_EXPO_TEXT_004;
	}
	return GW_EXPO_OPENMETRICS;
}

const char *gw_expo_content_type(enum gw_expo_format fmt)
{
	if (fmt == GW_EXPO_OPENMETRICS)
		return "application/openmetrics-text; version=1.0.0; "
		       "charset=utf-8";
	return "text/plain; version=0.0.4; charset=utf-8";
}
