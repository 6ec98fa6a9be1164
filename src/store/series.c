/* SPDX-License-Identifier: MIT */
/*
 * series.c - the series index: open-addressing hash maps from canonical
 * key to series and from id to series, and a set of label name=value pairs
 * for the per-label cap.
 */
#include "store/series.h"

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
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static void **smap_slot(const struct smap *m, const char *key, uint64_t h,
			size_t *at)
{
	size_t i;

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

static void smap_release(struct smap *m)
{
	free(m->keys);
	free(m->vals);
	free(m->hashes);
	memset(m, 0, sizeof(*m));
}

/* Distinct values seen for one label name. */
struct label_name {
	char *name;
	size_t values;
};

struct gw_series_index {
	uint32_t max_series, max_values;
	struct gw_series **all; /* insertion order */
	size_t n, cap;
	struct smap by_key;
	struct gw_series **by_id; /* dense: ids are small integers */
	size_t by_id_cap;
	struct smap pairs; /* "name\x01value" -> (void *)1, keys owned */
	struct smap names; /* name -> struct label_name */
	struct smap alias; /* producer's spelling -> series, keys owned */
	uint32_t next_id;
	uint64_t refused_series, refused_values;
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
	for (size_t i = 0; i < x->pairs.cap; i++)
		free((char *)x->pairs.keys[i]);
	for (size_t i = 0; i < x->names.cap; i++) {
		struct label_name *ln = x->names.vals[i];

		if (ln) {
			free(ln->name);
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
	st->refused_series = x->refused_series;
	st->refused_values = x->refused_values;
	st->next_id = x->next_id;
}

static char *pair_key(const struct gw_label *l)
{
	size_t a = strlen(l->name), b = strlen(l->value);
	char *k = malloc(a + b + 2);

	if (!k)
		return NULL;
	memcpy(k, l->name, a);
	k[a] = '\x01';
	memcpy(k + a + 1, l->value, b + 1);
	return k;
}

/*
 * Checks the per-label cap for every new name=value pair of l; on success
 * records them.  Nothing is recorded when any pair is refused.
 */
static int admit_pairs(struct gw_series_index *x, const struct gw_labels *l)
{
	char *fresh[GW_LABELS_MAX];
	size_t nfresh = 0;
	int err = 0;

	for (size_t i = 0; i < l->n && !err; i++) {
		struct label_name *ln = smap_get(&x->names, l->v[i].name);
		char *k = pair_key(&l->v[i]);

		if (!k) {
			err = -ENOMEM;
			break;
		}
		if (smap_get(&x->pairs, k)) {
			free(k);
			continue;
		}
		if (ln && x->max_values && ln->values >= x->max_values)
			err = -E2BIG;
		if (err) {
			free(k);
			break;
		}
		fresh[nfresh++] = k;
	}
	for (size_t i = 0; i < nfresh && !err; i++) {
		const char *name = fresh[i];
		struct label_name *ln;
		char *sep = strchr(fresh[i], '\x01');

		*sep = '\0';
		ln = smap_get(&x->names, name);
		if (!ln) {
			ln = calloc(1, sizeof(*ln));
			if (ln)
				ln->name = strdup(name);
			if (!ln || !ln->name ||
			    smap_put(&x->names, ln->name, ln)) {
				if (ln)
					free(ln->name);
				free(ln);
				*sep = '\x01';
				err = -ENOMEM;
				break;
			}
		}
		*sep = '\x01';
		err = smap_put(&x->pairs, fresh[i], (void *)1);
		if (err)
			break;
		ln->values++;
		fresh[i] = NULL;
	}
	for (size_t i = 0; i < nfresh; i++)
		free(fresh[i]);
	return err;
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

int gw_series_index_add(struct gw_series_index *x, const struct gw_labels *l,
			uint32_t id, struct gw_series **out)
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
		*out = s;
		s = NULL;
		goto out;
	}
	if (id && gw_series_index_get(x, id)) {
		err = -EEXIST;
		goto out;
	}
	if (x->max_series && x->n >= x->max_series) {
		x->refused_series++;
		err = -ENOSPC;
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
	err = admit_pairs(x, l);
	if (err == -E2BIG)
		x->refused_values++;
	if (err)
		goto out;
	s->id = id;
	s->key = gw_buf_detach(&key, NULL);
	s->name = gw_labels_get(&s->labels, "__name__");
	if (!s->name)
		s->name = "";
	err = smap_put(&x->by_key, s->key, s);
	if (err) {
		/* The pairs stay admitted: harmless, they only count. */
		free((char *)s->key);
		goto out;
	}
	x->all[x->n++] = s;
	x->by_id[id] = s;
	if (id >= x->next_id)
		x->next_id = id + 1;
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
