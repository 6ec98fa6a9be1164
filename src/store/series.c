/* SPDX-License-Identifier: MIT */
/*
 * series.c - the series index: open-addressing hash maps from canonical
 * key to series and from id to series, and a set of label name=value pairs
 * for the per-label cap.
 */
#include "store/series.h"

#include "common/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * A string-keyed open-addressing map (linear probing); keys are borrowed
 * from the values.  Each slot keeps its key's hash, so a probe compares
 * strings only when the hashes agree (keys share long prefixes such as
 * "gpuwatch_gpu_").
 */
struct smap {
	const char **keys;
	void **vals;
	uint64_t *hashes;
	size_t cap, n; /* cap is a power of two */
};

static uint64_t hash_str(const char *s)
{
	return gw_hash_str(s);
}

static void **smap_slot(const struct smap *m, const char *key, uint64_t h,
			size_t *at)
{
	size_t i;

	*at = 0; /* an empty map has no slot: its caller grows it first */
	if (!m->cap)
		return NULL;
	for (i = h & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->hashes[i] == h && strcmp(m->keys[i], key) == 0) {
			*at = i;
			return &m->vals[i];
		}
	}
	*at = i;
	return NULL;
}

static void *smap_get(const struct smap *m, const char *key)
{
	size_t at;
	void **v = smap_slot(m, key, hash_str(key), &at);

	return v ? *v : NULL;
}

static int smap_grow(struct smap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	const char **keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));
	uint64_t *hashes = calloc(cap, sizeof(*hashes));

	if (!keys || !vals || !hashes) {
		free(keys);
		free(vals);
		free(hashes);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		for (j = m->hashes[i] & (cap - 1); keys[j];
		     j = (j + 1) & (cap - 1))
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
		hashes[j] = m->hashes[i];
	}
	free(m->keys);
	free(m->vals);
	free(m->hashes);
	m->keys = keys;
	m->vals = vals;
	m->hashes = hashes;
	m->cap = cap;
	return 0;
}

/* Inserts key (absent) -> val; the key string must outlive the map. */
static int smap_put(struct smap *m, const char *key, void *val)
{
	uint64_t h = hash_str(key);
	size_t at;

	/* At most half full: short probe runs. */
	if ((m->n + 1) * 2 > m->cap) {
		int err = smap_grow(m);

		if (err)
			return err;
	}
	if (smap_slot(m, key, h, &at))
		return -EEXIST;
	m->keys[at] = key;
	m->vals[at] = val;
	m->hashes[at] = h;
	m->n++;
	return 0;
}

/*
 * Removes key (present or not) by backward-shift deletion: the entries of
 * the probe run after it move up, so no tombstone is left and lookups stay
 * as short as before.
 */
static void smap_del(struct smap *m, const char *key)
{
	size_t i, j;

	if (!smap_slot(m, key, hash_str(key), &i))
		return;
	for (j = i;;) {
		size_t home;

		j = (j + 1) & (m->cap - 1);
		if (!m->keys[j])
			break;
		home = m->hashes[j] & (m->cap - 1);
		/* j's entry stays when its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->hashes[i] = m->hashes[j];
		i = j;
	}
	m->keys[i] = NULL;
	m->vals[i] = NULL;
	m->hashes[i] = 0;
	m->n--;
}

static void smap_release(struct smap *m)
{
	free(m->keys);
	free(m->vals);
	free(m->hashes);
	memset(m, 0, sizeof(*m));
}

/*
 * One name=value pair: the ids of the series that carry it (ascending),
 * and how many of them are live (for the per-label cap).
 */
struct posting {
	char *key;	   /* "name\x01value", owned; the map's key */
	const char *value; /* into key */
	uint32_t *ids;
	uint32_t n, cap;
	uint32_t live;
};

/* One label name: its distinct values (every pair ever seen). */
struct label_name {
	char *name;
	size_t live_values; /* pairs with live > 0 */
	struct posting **values;
	size_t nvalues, capvalues;
};

struct gw_series_index {
	uint32_t max_series, max_values;
	struct gw_series **all; /* insertion order */
	size_t n, cap;
	size_t live;
	struct smap by_key;
	struct gw_series **by_id; /* dense: ids are small integers */
	size_t by_id_cap;
	struct smap pairs; /* "name\x01value" -> struct posting */
	struct smap names; /* name -> struct label_name */
	struct smap alias; /* producer's spelling -> series, keys owned */
	uint32_t next_id;
	uint64_t refused_series, refused_values;
	uint64_t evicted;
	/* Evicted series: still in the postings, no struct; ascending. */
	uint32_t *ev_ids;
	size_t nev, capev;
};

struct gw_series_index *gw_series_index_new(uint32_t max_series,
					    uint32_t max_values)
{
	struct gw_series_index *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->max_series = max_series;
	x->max_values = max_values;
	x->next_id = 1;
	return x;
}

void gw_series_index_free(struct gw_series_index *x,
			  void (*free_head)(void *head))
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++) {
		struct gw_series *s = x->all[i];

		if (free_head && s->head)
			free_head(s->head);
		gw_labels_release(&s->labels);
		free((char *)s->key);
		free(s);
	}
	for (size_t i = 0; i < x->pairs.cap; i++) {
		struct posting *p = x->pairs.vals[i];

		if (p) {
			free(p->key);
			free(p->ids);
			free(p);
		}
	}
	for (size_t i = 0; i < x->names.cap; i++) {
		struct label_name *ln = x->names.vals[i];

		if (ln) {
			free(ln->name);
			free(ln->values);
			free(ln);
		}
	}
	for (size_t i = 0; i < x->alias.cap; i++)
		free((char *)x->alias.keys[i]);
	smap_release(&x->alias);
	smap_release(&x->pairs);
	smap_release(&x->names);
	smap_release(&x->by_key);
	free(x->by_id);
	free(x->all);
	free(x->ev_ids);
	free(x);
}

struct gw_series *gw_series_index_find(struct gw_series_index *x,
				       const char *key)
{
	return smap_get(&x->by_key, key);
}

struct gw_series *gw_series_index_find_alias(struct gw_series_index *x,
					     const char *alias)
{
	return smap_get(&x->alias, alias);
}

int gw_series_index_add_alias(struct gw_series_index *x, const char *alias,
			      struct gw_series *s)
{
	char *k;
	int err;

	if (x->alias.n >= 4 * (size_t)(x->max_series ? x->max_series : 65536))
		return -ENOSPC;
	k = strdup(alias);
	if (!k)
		return -ENOMEM;
	err = smap_put(&x->alias, k, s);
	if (err)
		free(k);
	return err;
}

struct gw_series *gw_series_index_get(struct gw_series_index *x, uint32_t id)
{
	return id < x->by_id_cap ? x->by_id[id] : NULL;
}

size_t gw_series_index_count(const struct gw_series_index *x)
{
	return x->n;
}

struct gw_series *gw_series_index_at(struct gw_series_index *x, size_t i)
{
	return i < x->n ? x->all[i] : NULL;
}

void gw_series_index_stats(const struct gw_series_index *x,
			   struct gw_series_index_stats *st)
{
	st->series = x->n;
	st->live = x->live;
	st->refused_series = x->refused_series;
	st->refused_values = x->refused_values;
	st->evicted = x->evicted;
	st->next_id = x->next_id;
}

/* "name\x01value" in buf (or malloc'd when longer); NULL on ENOMEM. */
static char *pair_key(const char *name, const char *value, char *buf,
		      size_t len)
{
	size_t a = strlen(name), b = strlen(value);
	char *k = a + b + 2 <= len ? buf : malloc(a + b + 2);

	if (!k)
		return NULL;
	memcpy(k, name, a);
	k[a] = '\x01';
	memcpy(k + a + 1, value, b + 1);
	return k;
}

static struct posting *find_pair(const struct gw_series_index *x,
				 const char *name, const char *value)
{
	char buf[256];
	char *k = pair_key(name, value, buf, sizeof(buf));
	struct posting *p;

	if (!k)
		return NULL;
	p = smap_get(&x->pairs, k);
	if (k != buf)
		free(k);
	return p;
}

/* __name__ is not a label value users create per process: uncapped. */
static bool capped_name(const char *name)
{
	return strcmp(name, "__name__") != 0;
}

/*
 * Would making a series with labels l live pass the caps?  0, -ENOSPC
 * (series) or -E2BIG (a label's live values); counted when refused.
 */
static int check_caps(struct gw_series_index *x, const struct gw_labels *l)
{
	if (x->max_series && x->live >= x->max_series) {
		x->refused_series++;
		return -ENOSPC;
	}
	if (!x->max_values)
		return 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct gw_label *lb = &l->v[i];
		struct posting *p;
		struct label_name *ln;

		if (!capped_name(lb->name))
			continue;
		p = find_pair(x, lb->name, lb->value);
		if (p && p->live)
			continue; /* not a new live value */
		ln = smap_get(&x->names, lb->name);
		if (ln && ln->live_values >= x->max_values) {
			x->refused_values++;
			return -E2BIG;
		}
	}
	return 0;
}

/* Counts s as live (or not) in its pairs and the index. */
static void set_live(struct gw_series_index *x, struct gw_series *s, bool live)
{
	if (s->live == live)
		return;
	for (size_t i = 0; i < s->labels.n; i++) {
		const struct gw_label *lb = &s->labels.v[i];
		struct posting *p = find_pair(x, lb->name, lb->value);
		struct label_name *ln = smap_get(&x->names, lb->name);

		if (!p || !ln)
			continue; /* only after ENOMEM in find_pair */
		if (live && p->live++ == 0)
			ln->live_values++;
		else if (!live && --p->live == 0)
			ln->live_values--;
	}
	s->live = live;
	if (live)
		x->live++;
	else
		x->live--;
}

static int ids_insert(struct posting *p, uint32_t id)
{
	uint32_t at = p->n;

	if (p->n == p->cap) {
		uint32_t ncap = p->cap ? p->cap * 2 : 4;
		uint32_t *nv = realloc(p->ids, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		p->ids = nv;
		p->cap = ncap;
	}
	/* Ids mostly arrive in ascending order: append. */
	while (at > 0 && p->ids[at - 1] > id)
		at--;
	if (at > 0 && p->ids[at - 1] == id)
		return 0; /* an evicted series back: still posted */
	memmove(p->ids + at + 1, p->ids + at, (p->n - at) * sizeof(*p->ids));
	p->ids[at] = id;
	p->n++;
	return 0;
}

/* The pair's posting, created with its label name when new. */
static int pair_get(struct gw_series_index *x, const struct gw_label *lb,
		    struct posting **out)
{
	struct posting *p = find_pair(x, lb->name, lb->value);
	struct label_name *ln;
	int err = -ENOMEM;

	*out = p;
	if (p)
		return 0;
	ln = smap_get(&x->names, lb->name);
	if (!ln) {
		ln = calloc(1, sizeof(*ln));
		if (!ln)
			return -ENOMEM;
		ln->name = strdup(lb->name);
		if (!ln->name || smap_put(&x->names, ln->name, ln)) {
			free(ln->name);
			free(ln);
			return -ENOMEM;
		}
	}
	if (ln->nvalues == ln->capvalues) {
		size_t ncap = ln->capvalues ? ln->capvalues * 2 : 8;
		struct posting **nv = realloc(ln->values, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		ln->values = nv;
		ln->capvalues = ncap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->key = pair_key(lb->name, lb->value, NULL, 0);
	if (!p->key)
		goto fail;
	p->value = p->key + strlen(lb->name) + 1;
	err = smap_put(&x->pairs, p->key, p);
	if (err)
		goto fail;
	ln->values[ln->nvalues++] = p;
	*out = p;
	return 0;
fail:
	free(p->key);
	free(p);
	return err;
}

/* Adds s's id to the postings of each of its pairs. */
static int post_series(struct gw_series_index *x, const struct gw_series *s)
{
	for (size_t i = 0; i < s->labels.n; i++) {
		struct posting *p;
		int err = pair_get(x, &s->labels.v[i], &p);

		if (!err)
			err = ids_insert(p, s->id);
		if (err)
			return err;
	}
	return 0;
}

static int grow_ptrs(struct gw_series ***v, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 64;
	struct gw_series **p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*v, ncap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + *cap, 0, (ncap - *cap) * sizeof(*p));
	*v = p;
	*cap = ncap;
	return 0;
}

int gw_series_index_revive(struct gw_series_index *x, struct gw_series *s,
			   bool force)
{
	int err;

	if (s->live)
		return 0;
	err = force ? 0 : check_caps(x, &s->labels);
	if (!err)
		set_live(x, s, true);
	return err;
}

void gw_series_index_retire(struct gw_series_index *x, struct gw_series *s)
{
	set_live(x, s, false);
}

static int cmp_id32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Adds the ids of v[0..n) to the ascending evicted ids (a merge).  Out
 * of memory, they stay out of the list: selected through their postings
 * still, only not by a selection of every series. */
static void ev_ids_add(struct gw_series_index *x, struct gw_series *const *v,
		       size_t n)
{
	uint32_t *add = malloc(n * sizeof(*add)), *nv;
	size_t i, j, k;

	if (!add)
		return;
	for (i = 0; i < n; i++)
		add[i] = v[i]->id;
	qsort(add, n, sizeof(*add), cmp_id32);
	if (x->nev + n > x->capev) {
		size_t cap = x->capev ? x->capev : 1024;

		while (cap < x->nev + n)
			cap *= 2;
		nv = realloc(x->ev_ids, cap * sizeof(*nv));
		if (!nv) {
			free(add);
			return;
		}
		x->ev_ids = nv;
		x->capev = cap;
	}
	/* Merge from the back, in place. */
	i = x->nev;
	j = n;
	k = x->nev + n;
	while (j > 0) {
		if (i > 0 && x->ev_ids[i - 1] > add[j - 1])
			x->ev_ids[--k] = x->ev_ids[--i];
		else
			x->ev_ids[--k] = add[--j];
	}
	x->nev += n;
	free(add);
}

/* An evicted id that comes back leaves the list. */
static void ev_ids_del(struct gw_series_index *x, uint32_t id)
{
	uint32_t *at = x->nev ? bsearch(&id, x->ev_ids, x->nev,
					sizeof(*x->ev_ids), cmp_id32)
			      : NULL;

	if (!at)
		return;
	memmove(at, at + 1,
		(size_t)(x->ev_ids + x->nev - at - 1) * sizeof(*at));
	x->nev--;
}

void gw_series_index_evict(struct gw_series_index *x,
			   struct gw_series *const *v, size_t n)
{
	const char **gone = NULL;
	size_t k = 0, ngone = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++) {
		struct gw_series *s = v[i];

		set_live(x, s, false);
		smap_del(&x->by_key, s->key);
		if (s->id < x->by_id_cap && x->by_id[s->id] == s)
			x->by_id[s->id] = NULL;
		s->evicted = true;
	}
	for (size_t i = 0; i < x->n; i++)
		if (!x->all[i]->evicted)
			x->all[k++] = x->all[i];
	x->n = k;
	x->evicted += n;
	ev_ids_add(x, v, n);
	/* The producers' spellings of the evicted series: found in one pass,
	 * deleted after it (a deletion moves entries). */
	for (size_t i = 0; i < x->alias.cap; i++) {
		const struct gw_series *s = x->alias.vals[i];
		const char **nv;

		if (!x->alias.keys[i] || !s->evicted)
			continue;
		nv = realloc(gone, (ngone + 1) * sizeof(*gone));
		if (!nv)
			break; /* kept: found by key, harmless */
		gone = nv;
		gone[ngone++] = x->alias.keys[i];
	}
	for (size_t i = 0; i < ngone; i++) {
		smap_del(&x->alias, gone[i]);
		free((char *)gone[i]);
	}
	free(gone);
}

void gw_series_release(struct gw_series *s)
{
	if (!s)
		return;
	gw_labels_release(&s->labels);
	free((char *)s->key);
	free(s);
}

int gw_series_index_add(struct gw_series_index *x, const struct gw_labels *l,
			uint32_t id, bool retired, struct gw_series **out)
{
	struct gw_buf key;
	struct gw_series *s = NULL;
	int err;

	*out = NULL;
	gw_buf_init(&key, 64 * 1024);
	err = gw_labels_key(l, &key);
	if (err)
		goto out;
	s = smap_get(&x->by_key, key.p);
	if (s) {
		if (!retired)
			err = gw_series_index_revive(x, s, false);
		if (!err)
			*out = s;
		s = NULL;
		goto out;
	}
	if (id && gw_series_index_get(x, id)) {
		err = -EEXIST;
		goto out;
	}
	if (!retired) {
		err = check_caps(x, l);
		if (err)
			goto out;
	}
	if (!id)
		id = x->next_id;
	if (id == UINT32_MAX) {
		err = -ENOSPC;
		goto out;
	}
	err = grow_ptrs(&x->all, &x->cap, x->n + 1);
	if (!err)
		err = grow_ptrs(&x->by_id, &x->by_id_cap, (size_t)id + 1);
	if (err)
		goto out;
	s = calloc(1, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	err = gw_labels_dup(&s->labels, l);
	if (err)
		goto out;
	s->id = id;
	s->key = gw_buf_detach(&key, NULL);
	s->name = gw_labels_get(&s->labels, "__name__");
	if (!s->name)
		s->name = "";
	err = smap_put(&x->by_key, s->key, s);
	if (err) {
		free((char *)s->key);
		goto out;
	}
	/* From here on s is in the index: a posting that fails to grow
	 * (ENOMEM) leaves it unselectable by that pair, nothing worse. */
	x->all[x->n++] = s;
	x->by_id[id] = s;
	if (x->nev)
		ev_ids_del(x, id);
	if (id >= x->next_id)
		x->next_id = id + 1;
	err = post_series(x, s);
	if (!retired)
		set_live(x, s, true);
	*out = s;
	s = NULL;
out:
	if (s) {
		gw_labels_release(&s->labels);
		free(s);
	}
	gw_buf_release(&key);
	return err;
}

/* ---- selection through the postings ---- */

/* An id set: ids (ascending), owned or borrowed from a posting. */
struct idset {
	uint32_t *ids;
	size_t n;
	bool owned;
};

static void idset_release(struct idset *a)
{
	if (a->owned)
		free(a->ids);
	*a = (struct idset){ 0 };
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* a := a AND b (a is owned afterwards). */
static int idset_intersect(struct idset *a, const struct idset *b)
{
	uint32_t *out = a->owned ? a->ids : malloc((a->n ? a->n : 1) * 4);
	size_t i = 0, j = 0, k = 0;

	if (!out)
		return -ENOMEM;
	while (i < a->n && j < b->n) {
		if (a->ids[i] < b->ids[j]) {
			i++;
		} else if (a->ids[i] > b->ids[j]) {
			j++;
		} else {
			out[k++] = a->ids[i];
			i++;
			j++;
		}
	}
	a->ids = out;
	a->n = k;
	a->owned = true;
	return 0;
}

/* The caller's lock and checks around the value tests (NULL: none). */
static void op_lock(const struct gw_series_select_ops *o)
{
	if (o && o->lock)
		o->lock(o->ctx);
}

static void op_unlock(const struct gw_series_select_ops *o)
{
	if (o && o->unlock)
		o->unlock(o->ctx);
}

static int op_check(const struct gw_series_select_ops *o, size_t i)
{
	if (!o || !o->check || i % GW_SERIES_CHECK_EVERY)
		return 0;
	return o->check(o->ctx);
}

/* A borrowed set becomes a copy: the lock is about to be dropped. */
static int idset_own(struct idset *a)
{
	uint32_t *copy;

	if (a->owned)
		return 0;
	copy = malloc((a->n ? a->n : 1) * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (a->n)
		memcpy(copy, a->ids, a->n * sizeof(*copy));
	a->ids = copy;
	a->owned = true;
	return 0;
}

/*
 * The series whose value of m->name satisfies m (m does not match the
 * empty string, so only series carrying the label can): the union of the
 * postings of the matching values, each value tested once.  With ops, the
 * values are tested with the lock dropped (a posting's value string never
 * changes and postings are never freed, so the pointers copied under the
 * lock stay good), and out is owned.
 */
static int matcher_set(const struct gw_series_index *x,
		       const struct gw_matcher *m,
		       const struct gw_series_select_ops *ops,
		       struct idset *out)
{
	struct label_name *ln = smap_get(&x->names, m->name);
	struct posting **hit;
	size_t nhit = 0, total = 0, nv;
	int err = 0;

	*out = (struct idset){ 0 };
	if (!ln)
		return 0;
	if (m->op == GW_MATCH_EQ) {
		struct posting *p = find_pair(x, m->name, m->value);

		if (p)
			*out = (struct idset){ p->ids, p->n, false };
		return ops ? idset_own(out) : 0;
	}
	nv = ln->nvalues;
	hit = malloc((nv ? nv : 1) * sizeof(*hit));
	if (!hit)
		return -ENOMEM;
	if (nv)
		memcpy(hit, ln->values, nv * sizeof(*hit));
	op_unlock(ops);
	for (size_t i = 0; i < nv && !err; i++) {
		err = op_check(ops, i);
		if (!err && gw_matcher_match(m, hit[i]->value))
			hit[nhit++] = hit[i];
	}
	op_lock(ops);
	if (err) {
		free(hit);
		return err;
	}
	for (size_t i = 0; i < nhit; i++)
		total += hit[i]->n;
	if (nhit == 1) {
		*out = (struct idset){ hit[0]->ids, hit[0]->n, false };
		err = ops ? idset_own(out) : 0;
	} else if (nhit > 1) {
		out->ids = malloc((total + 1) * sizeof(*out->ids));
		if (!out->ids) {
			free(hit);
			return -ENOMEM;
		}
		out->owned = true;
		for (size_t i = 0; i < nhit; i++) {
			memcpy(out->ids + out->n, hit[i]->ids,
			       hit[i]->n * sizeof(*out->ids));
			out->n += hit[i]->n;
		}
		/* A series has one value per name: no duplicates.  The ids
		 * are a copy: sorted without the lock. */
		op_unlock(ops);
		qsort(out->ids, out->n, sizeof(*out->ids), cmp_u32);
		op_lock(ops);
	}
	free(hit);
	return err;
}

/*
 * Keeps the series of a that m accepts, testing each one's value; with
 * ops, with the lock dropped (a series and its labels never change or
 * move once added).
 */
static int idset_filter(const struct gw_series_index *x, struct idset *a,
			const struct gw_matcher *m,
			const struct gw_series_select_ops *ops)
{
	const struct gw_series **ser = NULL;
	uint32_t *out;
	size_t k = 0;
	int err = ops ? idset_own(a) : 0;

	if (err)
		return err;
	out = a->owned ? a->ids : malloc((a->n ? a->n : 1) * 4);
	if (!out)
		return -ENOMEM;
	if (ops) {
		ser = malloc((a->n ? a->n : 1) * sizeof(*ser));
		if (!ser) {
			if (!a->owned)
				free(out);
			return -ENOMEM;
		}
		for (size_t i = 0; i < a->n; i++)
			ser[i] = x->by_id[a->ids[i]];
		op_unlock(ops);
	}
	for (size_t i = 0; i < a->n && !err; i++) {
		const struct gw_series *s = ser ? ser[i] : x->by_id[a->ids[i]];

		err = op_check(ops, i);
		/* NULL: evicted (now or while the lock was dropped): kept,
		 * for the caller to test on its labels from disk. */
		if (!err && (!s || gw_matcher_match(m, gw_labels_get(&s->labels,
								     m->name))))
			out[k++] = a->ids[i];
	}
	if (ops)
		op_lock(ops);
	free(ser);
	a->ids = out;
	a->n = k;
	a->owned = true;
	return err;
}

static size_t name_values(const struct gw_series_index *x, const char *name)
{
	const struct label_name *ln = smap_get(&x->names, name);

	return ln ? ln->nvalues : 0;
}

static int select_ops(const struct gw_series_index *x,
		      const struct gw_matcher *m, size_t nm,
		      const struct gw_series_select_ops *ops, uint32_t **ids,
		      size_t *n)
{
	struct idset cand = { 0 };
	bool all = true;
	int err = 0;

	*ids = NULL;
	*n = 0;
	op_lock(ops);
	/* Equality first: the smallest sets, found without a scan. */
	for (int pass = 0; pass < 2 && !err; pass++) {
		for (size_t i = 0; i < nm && !err; i++) {
			const struct gw_matcher *mi = &m[i];
			struct idset b;

			if ((mi->op == GW_MATCH_EQ) != (pass == 0) ||
			    gw_matcher_matches_empty(mi))
				continue;
			if (!all && cand.n < name_values(x, mi->name)) {
				/* Fewer candidates than values to test. */
				err = idset_filter(x, &cand, mi, ops);
				continue;
			}
			if (ops && !all)
				err = idset_own(&cand);
			if (!err)
				err = matcher_set(x, mi, ops, &b);
			if (err)
				break;
			if (all) {
				cand = b;
				all = false;
			} else {
				err = idset_intersect(&cand, &b);
				idset_release(&b);
			}
		}
	}
	if (!err && all) {
		/* Only matchers that accept "": start from every series. */
		cand.ids = malloc((x->n + x->nev ? x->n + x->nev : 1) *
				  sizeof(*cand.ids));
		if (!cand.ids) {
			op_unlock(ops);
			return -ENOMEM;
		}
		cand.owned = true;
		for (size_t i = 0; i < x->n; i++)
			cand.ids[i] = x->all[i]->id;
		if (x->nev)
			memcpy(cand.ids + x->n, x->ev_ids,
			       x->nev * sizeof(*cand.ids));
		cand.n = x->n + x->nev;
		op_unlock(ops);
		qsort(cand.ids, cand.n, sizeof(*cand.ids), cmp_u32);
		op_lock(ops);
	}
	for (size_t i = 0; i < nm && !err; i++)
		if (gw_matcher_matches_empty(&m[i]))
			err = idset_filter(x, &cand, &m[i], ops);
	if (!err)
		err = idset_own(&cand);
	op_unlock(ops);
	if (err) {
		idset_release(&cand);
		return err;
	}
	if (!cand.n)
		idset_release(&cand);
	*ids = cand.ids;
	*n = cand.n;
	return 0;
}

int gw_series_index_select(const struct gw_series_index *x,
			   const struct gw_matcher *m, size_t nm,
			   uint32_t **ids, size_t *n)
{
	return select_ops(x, m, nm, NULL, ids, n);
}

int gw_series_index_select_unlocked(const struct gw_series_index *x,
				    const struct gw_matcher *m, size_t nm,
				    const struct gw_series_select_ops *ops,
				    uint32_t **ids, size_t *n)
{
	return select_ops(x, m, nm, ops, ids, n);
}
