/* SPDX-License-Identifier: MIT */
/*
 * table.c - StatsD aggregation.  See table.h.
 *
 * Four chained hash maps share one entry header (struct hent): series by
 * key, families by exported name, tag values by "name\0value" (with the
 * number of series using each) and tag names (with their number of
 * distinct values).  Series are also on a list, walked by publish.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collect/statsd/table.h"
#include "store/sketch.h"

#define KEY_MAX                                                                \
	(2 + GW_STATSD_NAME_MAX + 16 +                                         \
	 GW_STATSD_MAX_TAGS *                                                  \
		 (GW_STATSD_TAG_NAME_MAX + GW_STATSD_TAG_VALUE_MAX + 8))
#define FAMILY_NAME_MAX (GW_STATSD_NAME_MAX + 16)
#define MAP_MIN_BUCKETS 64u

enum kind { K_COUNTER, K_GAUGE, K_SUMMARY, K_SET };

struct hent {
	struct hent *next;
	uint64_t h;
	uint32_t klen;
	char *key;
};

struct map {
	struct hent **b;
	size_t nb; /* a power of two */
	size_t n;
};

struct family {
	struct hent e; /* key = exported name */
	enum kind kind;
	unsigned int nseries;
	struct family *next_dead;
	struct gw_family fam;
	char name[];
};

struct tagname {
	struct hent e; /* key = label name */
	unsigned int nvalues;
};

struct tagvalue {
	struct hent e; /* key = name "\0" value */
	struct tagname *tn;
	unsigned int refs;
};

struct hset {
	uint64_t *v; /* 0 = empty */
	uint32_t n, cap;
};

/* What an allocation of n bytes costs the budget. */
#define COST(n) ((uint64_t)(n) + GW_STATSD_ALLOC_OVERHEAD)

struct series {
	struct hent e; /* key = kind, exported name, tags */
	struct series *prev, *next;
	struct family *f;
	char *labels; /* exposition text, "" for none */
	struct tagvalue **tv;
	unsigned int ntv;
	uint64_t cost; /* of the series itself: struct, key, labels, tv */
	double last;   /* when a value last came */
	int64_t epoch; /* summary and set: period of [0] */
	union {
		double value; /* counter, gauge */
		struct {
			struct gw_sketch sk[2]; /* current, previous */
			double count, sum;
		} sum;
		struct hset set[2];
	} u;
};

struct gw_statsd_table {
	struct gw_statsd_table_opts o;
	struct map series, families, tagnames, tagvalues;
	struct series *head, *tail;
	struct family *dead; /* freed at the next publish */
	struct gw_sketch scratch;
	struct gw_statsd_table_stats st;
	char key[KEY_MAX];
	char fname[FAMILY_NAME_MAX];
	unsigned char order[GW_STATSD_MAX_TAGS];
};

static const char *const refusal_names[GW_STATSD_NREFUSALS] = {
	[0] = "none",
	[GW_STATSD_REFUSED_SERIES] = "series",
	[GW_STATSD_REFUSED_TAG_VALUES] = "tag_values",
	[GW_STATSD_REFUSED_TYPE] = "type_conflict",
	[GW_STATSD_REFUSED_RESERVED] = "reserved_name",
	[GW_STATSD_REFUSED_SET_FULL] = "set_full",
	[GW_STATSD_REFUSED_NOMEM] = "nomem",
	[GW_STATSD_REFUSED_MEMORY] = "memory",
};

const char *gw_statsd_refusal_name(enum gw_statsd_refusal r)
{
	if ((unsigned int)r >= GW_STATSD_NREFUSALS)
		return "unknown";
	return refusal_names[r];
}

/* ---- hashing and maps ---- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hash(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, c + i, 8);
		h = (h ^ mix(w)) * 0x100000001b3ULL;
	}
	if (i < n) {
		uint64_t w = 0;

		memcpy(&w, c + i, n - i);
		h = (h ^ mix(w ^ 0xa5)) * 0x100000001b3ULL;
	}
	return mix(h);
}

static int map_init(struct map *m)
{
	m->b = calloc(MAP_MIN_BUCKETS, sizeof(*m->b));
	if (!m->b)
		return -ENOMEM;
	m->nb = MAP_MIN_BUCKETS;
	m->n = 0;
	return 0;
}

static struct hent *map_find(const struct map *m, uint64_t h, const char *key,
			     size_t klen)
{
	for (struct hent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
		if (e->h == h && e->klen == klen &&
		    memcmp(e->key, key, klen) == 0)
			return e;
	return NULL;
}

/* What the next insert into m may allocate. */
static uint64_t map_grow_cost(const struct map *m)
{
	if (m->n < m->nb || m->nb >= ((size_t)1 << 30))
		return 0;
	return (uint64_t)m->nb * sizeof(*m->b);
}

/* Whether the budget has room for more bytes. */
static bool room(const struct gw_statsd_table *t, uint64_t more)
{
	return t->st.bytes + more <= t->st.max_bytes;
}

/*
 * Grows at load 1; failing to grow only makes chains longer.  The growth
 * is charged to t's budget but never refused: callers check
 * map_grow_cost() first where it matters.
 */
static void map_insert(struct gw_statsd_table *t, struct map *m, struct hent *e)
{
	size_t i;

	if (m->n >= m->nb && m->nb < ((size_t)1 << 30)) {
		struct hent **nb = calloc(m->nb * 2, sizeof(*nb));

		if (nb) {
			t->st.bytes += (uint64_t)m->nb * sizeof(*nb);
			for (size_t j = 0; j < m->nb; j++) {
				struct hent *x = m->b[j], *next;

				for (; x; x = next) {
					next = x->next;
					i = x->h & (m->nb * 2 - 1);
					x->next = nb[i];
					nb[i] = x;
				}
			}
			free(m->b);
			m->b = nb;
			m->nb *= 2;
		}
	}
	i = e->h & (m->nb - 1);
	e->next = m->b[i];
	m->b[i] = e;
	m->n++;
}

static void map_remove(struct map *m, struct hent *e)
{
	struct hent **pp = &m->b[e->h & (m->nb - 1)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			m->n--;
			return;
		}
	}
}

/* ---- sets ---- */

/* The bytes a set table costs. */
static uint64_t hset_cost(const struct hset *s)
{
	return s->cap ? COST((size_t)s->cap * sizeof(*s->v)) : 0;
}

/* 0, or -ENOSPC (GW_STATSD_SET_MAX), -ENOBUFS (budget), -ENOMEM. */
static int hset_add(struct gw_statsd_table *t, struct hset *s, uint64_t h)
{
	uint32_t i;

	if (!h)
		h = 1;
	if (s->cap) {
		for (i = (uint32_t)h & (s->cap - 1); s->v[i];
		     i = (i + 1) & (s->cap - 1))
			if (s->v[i] == h)
				return 0;
	}
	if (s->n >= GW_STATSD_SET_MAX)
		return -ENOSPC;
	if ((s->n + 1) * 2 > s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		uint64_t more =
			COST((size_t)cap * sizeof(*s->v)) - hset_cost(s);
		uint64_t *v;

		if (!room(t, more))
			return -ENOBUFS;
		v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->st.bytes += more;
		for (uint32_t j = 0; j < s->cap; j++) {
			if (!s->v[j])
				continue;
			for (i = (uint32_t)s->v[j] & (cap - 1); v[i];
			     i = (i + 1) & (cap - 1))
				;
			v[i] = s->v[j];
		}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	for (i = (uint32_t)h & (s->cap - 1); s->v[i];
	     i = (i + 1) & (s->cap - 1))
		;
	s->v[i] = h;
	s->n++;
	return 0;
}

static int hset_has(const struct hset *s, uint64_t h)
{
	if (!s->cap)
		return 0;
	for (uint32_t i = (uint32_t)h & (s->cap - 1); s->v[i];
	     i = (i + 1) & (s->cap - 1))
		if (s->v[i] == h)
			return 1;
	return 0;
}

static void hset_reset(struct hset *s)
{
	if (s->n)
		memset(s->v, 0, s->cap * sizeof(*s->v));
	s->n = 0;
}

/* ---- families and tags ---- */

static void family_free(struct gw_statsd_table *t, struct family *f)
{
	if (!f)
		return;
	t->st.bytes -= COST(sizeof(*f) + strlen(f->name) + 1);
	free(f);
}

static const char *const helps[] = {
	[K_COUNTER] = "StatsD counter (c), scaled by the sample rate.",
	[K_GAUGE] = "StatsD gauge (g).",
	[K_SUMMARY] = ("StatsD timer (ms, in seconds), histogram (h) or "
		       "distribution (d): quantiles over the window."),
	[K_SET] = "StatsD set (s): distinct values over the window.",
};

static struct family *family_get(struct gw_statsd_table *t, const char *name,
				 enum kind kind, int *refusal)
{
	size_t n = strlen(name);
	uint64_t h = hash(name, n);
	struct hent *e = map_find(&t->families, h, name, n);
	struct family *f;

	if (e) {
		f = (struct family *)e;
		if (f->kind != kind) {
			*refusal = GW_STATSD_REFUSED_TYPE;
			return NULL;
		}
		return f;
	}
	f = calloc(1, sizeof(*f) + n + 1);
	if (!f)
		goto nomem;
	t->st.bytes += COST(sizeof(*f) + n + 1);
	memcpy(f->name, name, n + 1);
	f->kind = kind;
	f->e.h = h;
	f->e.klen = (uint32_t)n;
	f->e.key = f->name;
	f->fam.name = f->name;
	f->fam.help = helps[kind];
	f->fam.type = kind == K_COUNTER	  ? GW_COUNTER
		      : kind == K_SUMMARY ? GW_SUMMARY
					  : GW_GAUGE;
	map_insert(t, &t->families, &f->e);
	return f;
nomem:
	*refusal = GW_STATSD_REFUSED_NOMEM;
	return NULL;
}

static void tagvalue_put(struct gw_statsd_table *t, struct tagvalue *tv)
{
	if (!tv || --tv->refs)
		return;
	map_remove(&t->tagvalues, &tv->e);
	if (--tv->tn->nvalues == 0) {
		map_remove(&t->tagnames, &tv->tn->e);
		t->st.bytes -= COST(sizeof(*tv->tn) + tv->tn->e.klen);
		free(tv->tn);
	}
	t->st.bytes -= COST(sizeof(*tv) + tv->e.klen);
	free(tv);
}

/* Key of a tag value: name "\0" value. */
static size_t tv_key(char *buf, const struct gw_statsd_tag *g)
{
	memcpy(buf, g->name, g->name_len);
	buf[g->name_len] = '\0';
	memcpy(buf + g->name_len + 1, g->value, g->value_len);
	return (size_t)g->name_len + 1 + g->value_len;
}

/* Whether a series with these tags would pass the tag value cap. */
static int tags_fit(struct gw_statsd_table *t, const struct gw_statsd_line *l)
{
	char buf[GW_STATSD_TAG_NAME_MAX + GW_STATSD_TAG_VALUE_MAX + 16];

	for (size_t i = 0; i < l->ntags; i++) {
		const struct gw_statsd_tag *g = &l->tags[i];
		size_t k = tv_key(buf, g);
		struct hent *tn;

		if (map_find(&t->tagvalues, hash(buf, k), buf, k))
			continue;
		tn = map_find(&t->tagnames, hash(g->name, g->name_len), g->name,
			      g->name_len);
		if (tn &&
		    ((struct tagname *)tn)->nvalues >= t->o.max_tag_values)
			return 0;
	}
	return 1;
}

static struct tagvalue *tagvalue_get(struct gw_statsd_table *t,
				     const struct gw_statsd_tag *g)
{
	char buf[GW_STATSD_TAG_NAME_MAX + GW_STATSD_TAG_VALUE_MAX + 16];
	size_t k = tv_key(buf, g);
	uint64_t h = hash(buf, k), hn;
	struct hent *e = map_find(&t->tagvalues, h, buf, k);
	struct tagvalue *tv;
	struct tagname *tn;

	if (e) {
		tv = (struct tagvalue *)e;
		tv->refs++;
		return tv;
	}
	tv = calloc(1, sizeof(*tv) + k);
	if (!tv)
		return NULL;
	hn = hash(g->name, g->name_len);
	e = map_find(&t->tagnames, hn, g->name, g->name_len);
	if (e) {
		tn = (struct tagname *)e;
	} else {
		tn = calloc(1, sizeof(*tn) + g->name_len);
		if (!tn) {
			free(tv);
			return NULL;
		}
		tn->e.key = (char *)(tn + 1);
		memcpy(tn->e.key, g->name, g->name_len);
		tn->e.klen = g->name_len;
		tn->e.h = hn;
		t->st.bytes += COST(sizeof(*tn) + g->name_len);
		map_insert(t, &t->tagnames, &tn->e);
	}
	tn->nvalues++;
	tv->tn = tn;
	tv->refs = 1;
	tv->e.key = (char *)(tv + 1);
	memcpy(tv->e.key, buf, k);
	tv->e.klen = (uint32_t)k;
	tv->e.h = h;
	t->st.bytes += COST(sizeof(*tv) + k);
	map_insert(t, &t->tagvalues, &tv->e);
	return tv;
}

/* ---- series ---- */

/* The bytes a sketch's bins cost. */
static uint64_t sketch_cost(const struct gw_sketch *sk)
{
	return gw_sketch_bytes(sk) +
	       (sk->cappos ? GW_STATSD_ALLOC_OVERHEAD : 0) +
	       (sk->capneg ? GW_STATSD_ALLOC_OVERHEAD : 0);
}

static void series_free(struct gw_statsd_table *t, struct series *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < s->ntv; i++)
		tagvalue_put(t, s->tv[i]);
	t->st.bytes -= s->cost;
	if (s->f) {
		if (s->f->kind == K_SUMMARY) {
			t->st.bytes -= sketch_cost(&s->u.sum.sk[0]) +
				       sketch_cost(&s->u.sum.sk[1]);
			gw_sketch_release(&s->u.sum.sk[0]);
			gw_sketch_release(&s->u.sum.sk[1]);
		} else if (s->f->kind == K_SET) {
			t->st.bytes -= hset_cost(&s->u.set[0]) +
				       hset_cost(&s->u.set[1]);
			free(s->u.set[0].v);
			free(s->u.set[1].v);
		}
	}
	free(s->tv);
	free(s->labels);
	free(s);
}

/* The exposition label text of the sorted tags. */
static char *make_labels(const struct gw_statsd_line *l,
			 const unsigned char *order)
{
	struct gw_buf b;
	char name[GW_STATSD_TAG_NAME_MAX + 8];
	char value[GW_STATSD_TAG_VALUE_MAX + 1];
	char *out;
	size_t len;

	gw_buf_init(&b, 64 * 1024);
	for (size_t i = 0; i < l->ntags; i++) {
		const struct gw_statsd_tag *g = &l->tags[order[i]];

		memcpy(name, g->name, g->name_len);
		name[g->name_len] = '\0';
		memcpy(value, g->value, g->value_len);
		value[g->value_len] = '\0';
		if ((i && gw_buf_add(&b, ",", 1)) ||
		    gw_labels_append(&b, name, value))
			goto err;
	}
	out = gw_buf_detach(&b, &len);
	if (!out)
		out = calloc(1, 1); /* no tags: "" */
	return out;
err:
	gw_buf_release(&b);
	return NULL;
}

static struct series *series_new(struct gw_statsd_table *t, struct family *f,
				 const struct gw_statsd_line *l, uint64_t h,
				 size_t klen, int *refusal)
{
	struct series *s;
	uint64_t cost, need;
	char *labels;

	*refusal = GW_STATSD_REFUSED_NOMEM;
	labels = make_labels(l, t->order);
	if (!labels)
		return NULL;
	/* What the series costs, and at most what it adds around it. */
	cost = COST(sizeof(*s) + klen) + COST(strlen(labels) + 1) +
	       (l->ntags ? COST(l->ntags * sizeof(*s->tv)) : 0);
	need = cost + map_grow_cost(&t->series) + map_grow_cost(&t->tagvalues) +
	       map_grow_cost(&t->tagnames);
	for (size_t i = 0; i < l->ntags; i++)
		need += COST(sizeof(struct tagvalue) + l->tags[i].name_len + 1 +
			     l->tags[i].value_len) +
			COST(sizeof(struct tagname) + l->tags[i].name_len);
	if (!room(t, need)) {
		free(labels);
		*refusal = GW_STATSD_REFUSED_MEMORY;
		return NULL;
	}
	s = calloc(1, sizeof(*s) + klen);
	if (!s) {
		free(labels);
		return NULL;
	}
	s->labels = labels;
	s->cost = cost;
	t->st.bytes += cost;
	s->e.key = (char *)(s + 1);
	memcpy(s->e.key, t->key, klen);
	s->e.klen = (uint32_t)klen;
	s->e.h = h;
	if (l->ntags) {
		s->tv = calloc(l->ntags, sizeof(*s->tv));
		if (!s->tv)
			goto err;
		for (size_t i = 0; i < l->ntags; i++) {
			s->tv[i] = tagvalue_get(t, &l->tags[i]);
			if (!s->tv[i])
				goto err;
			s->ntv++;
		}
	}
	if (f->kind == K_SUMMARY) {
		gw_sketch_init(&s->u.sum.sk[0]);
		gw_sketch_init(&s->u.sum.sk[1]);
	}
	s->f = f;
	f->nseries++;
	map_insert(t, &t->series, &s->e);
	s->prev = t->tail;
	if (t->tail)
		t->tail->next = s;
	else
		t->head = s;
	t->tail = s;
	t->st.series++;
	return s;
err:
	series_free(t, s);
	return NULL;
}

static void series_remove(struct gw_statsd_table *t, struct series *s)
{
	struct family *f = s->f;

	map_remove(&t->series, &s->e);
	if (s->prev)
		s->prev->next = s->next;
	else
		t->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		t->tail = s->prev;
	t->st.series--;
	series_free(t, s);
	if (--f->nseries == 0) {
		map_remove(&t->families, &f->e);
		f->next_dead = t->dead;
		t->dead = f;
	}
}

/* Moves the two periods of a summary or set series to the one of now. */
static void rotate(struct gw_statsd_table *t, struct series *s, double now)
{
	int64_t epoch = (int64_t)floor(now / t->o.window_s);

	if (epoch == s->epoch)
		return;
	if (s->f->kind == K_SUMMARY) {
		struct gw_sketch tmp;

		if (epoch == s->epoch + 1) {
			tmp = s->u.sum.sk[1];
			s->u.sum.sk[1] = s->u.sum.sk[0];
			s->u.sum.sk[0] = tmp;
		} else {
			gw_sketch_reset(&s->u.sum.sk[1]);
		}
		gw_sketch_reset(&s->u.sum.sk[0]);
	} else {
		struct hset tmp;

		if (epoch == s->epoch + 1) {
			tmp = s->u.set[1];
			s->u.set[1] = s->u.set[0];
			s->u.set[0] = tmp;
		} else {
			hset_reset(&s->u.set[1]);
		}
		hset_reset(&s->u.set[0]);
	}
	s->epoch = epoch;
}

/* ---- public ---- */

int gw_statsd_table_new(const struct gw_statsd_table_opts *o,
			struct gw_statsd_table **out)
{
	struct gw_statsd_table *t;
	int err = -ENOMEM;

	*out = NULL;
	if (!o->max_series || !o->max_tag_values || o->window_s < 0 ||
	    o->ttl_s < 0 || !isfinite(o->window_s) || !isfinite(o->ttl_s))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->o = *o;
	t->st.max_bytes =
		o->max_bytes ? o->max_bytes : GW_STATSD_MAX_BYTES_DEFAULT;
	if (t->o.window_s == 0)
		t->o.window_s = 10;
	if (t->o.ttl_s == 0)
		t->o.ttl_s = 300;
	gw_sketch_init(&t->scratch);
	if (map_init(&t->series) || map_init(&t->families) ||
	    map_init(&t->tagnames) || map_init(&t->tagvalues))
		goto err;
	t->st.bytes = 4 * COST(MAP_MIN_BUCKETS * sizeof(struct hent *));
	*out = t;
	return 0;
err:
	gw_statsd_table_free(t);
	return err;
}

static void free_dead(struct gw_statsd_table *t)
{
	while (t->dead) {
		struct family *f = t->dead;

		t->dead = f->next_dead;
		family_free(t, f);
	}
}

void gw_statsd_table_free(struct gw_statsd_table *t)
{
	if (!t)
		return;
	while (t->head)
		series_remove(t, t->head);
	free_dead(t);
	gw_sketch_release(&t->scratch);
	free(t->series.b);
	free(t->families.b);
	free(t->tagnames.b);
	free(t->tagvalues.b);
	free(t);
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The exported family name and kind of a line, in t->fname. */
static enum kind family_of(struct gw_statsd_table *t,
			   const struct gw_statsd_line *l)
{
	const char *suffix = "";
	enum kind k;

	switch (l->type) {
	case GW_STATSD_COUNTER:
		k = K_COUNTER;
		if (!ends_with(l->name, l->name_len, "_total"))
			suffix = "_total";
		break;
	case GW_STATSD_GAUGE:
		k = K_GAUGE;
		break;
	case GW_STATSD_TIMER:
		k = K_SUMMARY;
		if (!ends_with(l->name, l->name_len, "_seconds"))
			suffix = "_seconds";
		break;
	case GW_STATSD_SET:
		k = K_SET;
		break;
	case GW_STATSD_HISTOGRAM:
	case GW_STATSD_DISTRIBUTION:
	default:
		k = K_SUMMARY;
		break;
	}
	memcpy(t->fname, l->name, l->name_len);
	memcpy(t->fname + l->name_len, suffix, strlen(suffix) + 1);
	return k;
}

/* Builds the series key in t->key (tags sorted through t->order). */
static size_t make_key(struct gw_statsd_table *t,
		       const struct gw_statsd_line *l, enum kind k)
{
	size_t n = 0, fl = strlen(t->fname);

	for (size_t i = 0; i < l->ntags; i++) {
		size_t j = i;

		while (j > 0) {
			const struct gw_statsd_tag *a =
				&l->tags[t->order[j - 1]];
			const struct gw_statsd_tag *b = &l->tags[i];
			size_t m = a->name_len < b->name_len ? a->name_len
							     : b->name_len;
			int c = memcmp(a->name, b->name, m);

			if (c < 0 || (c == 0 && a->name_len <= b->name_len))
				break;
			t->order[j] = t->order[j - 1];
			j--;
		}
		t->order[j] = (unsigned char)i;
	}
	t->key[n++] = (char)('0' + k);
	memcpy(t->key + n, t->fname, fl + 1);
	n += fl + 1;
	for (size_t i = 0; i < l->ntags; i++) {
		const struct gw_statsd_tag *g = &l->tags[t->order[i]];

		memcpy(t->key + n, g->name, g->name_len);
		n += g->name_len;
		t->key[n++] = '\0';
		memcpy(t->key + n, g->value, g->value_len);
		n += g->value_len;
		t->key[n++] = '\0';
	}
	return n;
}

int gw_statsd_table_add(struct gw_statsd_table *t,
			const struct gw_statsd_line *l, double now)
{
	enum kind k = family_of(t, l);
	size_t klen = make_key(t, l, k);
	uint64_t h = hash(t->key, klen);
	struct hent *e = map_find(&t->series, h, t->key, klen);
	struct series *s;
	int refusal = 0;

	if (e) {
		s = (struct series *)e;
	} else {
		struct family *f;

		if (strncmp(t->fname, "gpuwatch_", 9) == 0)
			refusal = GW_STATSD_REFUSED_RESERVED;
		else if (t->st.series >= t->o.max_series)
			refusal = GW_STATSD_REFUSED_SERIES;
		else if (!tags_fit(t, l))
			refusal = GW_STATSD_REFUSED_TAG_VALUES;
		if (refusal)
			goto refused;
		f = family_get(t, t->fname, k, &refusal);
		if (!f)
			goto refused;
		s = series_new(t, f, l, h, klen, &refusal);
		if (!s) {
			if (!f->nseries) {
				map_remove(&t->families, &f->e);
				family_free(t, f);
			}
			goto refused;
		}
		s->epoch = (int64_t)floor(now / t->o.window_s);
		refusal = 0;
	}
	s->last = now;
	switch (k) {
	case K_COUNTER:
		for (size_t i = 0; i < l->nvalues; i++)
			s->u.value += l->values[i].v / l->rate;
		break;
	case K_GAUGE:
		for (size_t i = 0; i < l->nvalues; i++) {
			if (l->values[i].delta)
				s->u.value += l->values[i].v;
			else
				s->u.value = l->values[i].v;
		}
		break;
	case K_SUMMARY: {
		double scale = l->type == GW_STATSD_TIMER ? 1e-3 : 1;
		double w = 1 / l->rate;
		uint64_t n = (uint64_t)fmax(1, llround(w));

		rotate(t, s, now);
		for (size_t i = 0; i < l->nvalues; i++) {
			struct gw_sketch *sk = &s->u.sum.sk[0];
			double v = l->values[i].v * scale;
			size_t grow = gw_sketch_add_grows(sk, v);
			uint64_t before = sketch_cost(sk);

			/* A value that needs more bins than the budget has, or
			 * a bucket past 2^32 - 1 values: the quantiles miss
			 * it, count and sum do not. */
			if (grow && !room(t, grow + GW_STATSD_ALLOC_OVERHEAD))
				refusal = GW_STATSD_REFUSED_MEMORY;
			else if (gw_sketch_add_n(sk, v, n))
				refusal = GW_STATSD_REFUSED_NOMEM;
			t->st.bytes += sketch_cost(sk) - before;
			s->u.sum.count += w;
			s->u.sum.sum += v * w;
		}
		break;
	}
	case K_SET:
		rotate(t, s, now);
		for (size_t i = 0; i < l->nvalues; i++) {
			int r = hset_add(
				t, &s->u.set[0],
				hash(l->values[i].s, l->values[i].len));

			if (r == -ENOSPC)
				refusal = GW_STATSD_REFUSED_SET_FULL;
			else if (r == -ENOBUFS)
				refusal = GW_STATSD_REFUSED_MEMORY;
			else if (r)
				refusal = GW_STATSD_REFUSED_NOMEM;
		}
		break;
	}
	if (refusal)
		goto refused;
	return 0;
refused:
	t->st.refused[refusal]++;
	return refusal;
}

/* The quantiles a summary exports. */
#define NQUANTILES 4
static const double quantiles[NQUANTILES] = { 0.5, 0.9, 0.95, 0.99 };

static uint64_t set_size(const struct series *s)
{
	uint64_t n = s->u.set[0].n;
	const struct hset *p = &s->u.set[1];

	for (uint32_t i = 0; i < p->cap; i++)
		if (p->v[i] && !hset_has(&s->u.set[0], p->v[i]))
			n++;
	return n;
}

void gw_statsd_table_publish(struct gw_statsd_table *t, struct gw_snap *snap,
			     double now)
{
	struct series *s, *next;

	free_dead(t);
	for (s = t->head; s; s = next) {
		struct family *f = s->f;

		next = s->next;
		if (now - s->last > t->o.ttl_s) {
			series_remove(t, s);
			t->st.expired++;
			continue;
		}
		switch (f->kind) {
		case K_COUNTER:
		case K_GAUGE:
			gw_snap_add(snap, &f->fam, s->u.value, s->labels, NULL);
			break;
		case K_SUMMARY: {
			double v[NQUANTILES];
			size_t nq = 0;

			rotate(t, s, now);
			gw_sketch_reset(&t->scratch);
			if (!gw_sketch_merge(&t->scratch, &s->u.sum.sk[1]) &&
			    !gw_sketch_merge(&t->scratch, &s->u.sum.sk[0]) &&
			    t->scratch.count) {
				for (; nq < NQUANTILES; nq++)
					v[nq] = gw_sketch_quantile(
						&t->scratch, quantiles[nq]);
			}
			gw_snap_add_summary(snap, &f->fam, quantiles, v, nq,
					    s->u.sum.count, s->u.sum.sum,
					    s->labels, NULL);
			break;
		}
		case K_SET:
			rotate(t, s, now);
			gw_snap_add(snap, &f->fam, (double)set_size(s),
				    s->labels, NULL);
			break;
		}
	}
}

void gw_statsd_table_stats(const struct gw_statsd_table *t,
			   struct gw_statsd_table_stats *st)
{
	*st = t->st;
}
