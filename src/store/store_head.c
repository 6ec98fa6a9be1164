/* SPDX-License-Identifier: MIT */
/*
 * store_head.c - the store's head: per series the open raw chunk, the open
 * 1-minute and 1-hour rollups and the closed minutes of the current hour,
 * and the samples not yet in the head log; appends, and sealing
 * what is complete into sealed[] for the next cut (store_maint.c).
 *
 * Life of a sample (t, v) of series S:
 *
 *   append --> S.raw chunk (hour of t) --seal at hour change--> sealed[]
 *                   \--(its minutes rebuilt at the seal)--> sealed[]
 *          --> S.m1 (open minute) --close--> S.h1 (open hour) --close-->
 *                                             sealed[] (one rollup)
 *
 * The closed minutes of the hour are not kept apart while the raw chunk
 * holds their samples: encoding each minute as it closes, and decoding
 * them all again at the seal, cost a fifth of the ingest under churn.
 * Only a chunk sealed before its hour ended (4 samples a second, or a
 * full chunk) leaves its minutes in S.m1_closed, encoded (struct head).
 *          --> S.pend --flush (<= flush_ms)--> index.db head log
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define PEND_MAX 4096 /* per series before an early flush */

void gw_store_head_free(void *v)
{
	struct head *h = v;

	if (!h)
		return;
	gw_chunk_enc_release(&h->raw);
	gw_rollup_release(&h->m1);
	gw_rollup_release(&h->h1);
	gw_buf_release(&h->m1_closed);
	free(h->pend);
	free(h);
}

static struct head *head_new(void)
{
	struct head *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	gw_chunk_enc_init(&h->raw);
	gw_rollup_init(&h->m1, 0);
	gw_rollup_init(&h->h1, 0);
	gw_buf_init(&h->m1_closed, 16u << 20);
	h->raw_hour = INT64_MIN;
	h->last_t = INT64_MIN;
	h->first_t = INT64_MIN;
	h->m1_hour = INT64_MIN;
	h->m1_raw_from = INT64_MIN;
	return h;
}

/* Appends a copy of `data` to sealed[]; the caller holds the write lock. */
static int seal_push_locked(struct gw_store *s, uint32_t id, enum gw_tier tier,
			    int64_t t_min, int64_t t_max, uint32_t n,
			    const void *data, size_t len)
{
	uint8_t *copy;

	if (!len)
		return 0;
	if (s->nsealed == s->capsealed) {
		size_t ncap = s->capsealed ? s->capsealed * 2 : 256;
		struct sealed *nv = realloc(s->sealed, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->sealed = nv;
		s->capsealed = ncap;
	}
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	s->sealed[s->nsealed++] =
		(struct sealed){ id, tier, t_min, t_max, n, copy, len };
	return 0;
}

static int seal_push(struct gw_store *s, uint32_t id, enum gw_tier tier,
		     int64_t t_min, int64_t t_max, uint32_t n, const void *data,
		     size_t len)
{
	int err;

	pthread_rwlock_wrlock(&s->lock);
	err = seal_push_locked(s, id, tier, t_min, t_max, n, data, len);
	pthread_rwlock_unlock(&s->lock);
	return err;
}

int gw_store_chunk_minutes(const uint8_t *p, size_t len, int64_t from,
			   int64_t upto, struct gw_rollup **r, size_t *n,
			   size_t *cap)
{
	struct gw_rollup *cur = NULL;
	struct gw_chunk_dec d;
	int64_t t;
	double v;
	int k, err = gw_chunk_dec_init(&d, p, len);

	if (err)
		return err;
	while ((k = gw_chunk_next(&d, &t, &v)) == 1) {
		int64_t end = floor_to(t, MS_MIN) + MS_MIN;

		if (t < from)
			continue;
		if (end > upto)
			break; /* and so are the samples after it */
		/* As the head's m1 does: a window opens at its first sample
		 * and closes at the first sample past its end. */
		if (!cur || cur->t != end) {
			if (*n == *cap) {
				size_t ncap = *cap ? *cap * 2 : 64;
				struct gw_rollup *nv =
					realloc(*r, ncap * sizeof(*nv));

				if (!nv)
					return -ENOMEM;
				*r = nv;
				*cap = ncap;
			}
			cur = &(*r)[(*n)++];
			gw_rollup_init(cur, end);
		}
		err = gw_rollup_add(cur, t, v);
		if (err)
			return err;
	}
	return k < 0 ? k : 0;
}

/* Takes the last entry of sealed[] back (a seal that failed half way). */
static void seal_pop_locked(struct gw_store *s)
{
	free(s->sealed[--s->nsealed].data);
}

/*
 * Seals the raw chunk and the minutes its samples make; `next`: the next
 * sample's time, or the time before which nothing more comes (a cut), so
 * that every minute window ending by then is complete.  The chunk that
 * ends its hour seals the hour's 1-minute column with it (m1_closed and
 * the rebuilt minutes); one sealed earlier leaves its complete minutes in
 * m1_closed, and splits the open minute, if any.
 *
 * gw_chunk_bytes() assembles the chunk in the encoder's buffer, which is
 * a write (readers copy with gw_chunk_copy() under the read lock), so the
 * writer takes the lock for it, and to move a complete split minute into
 * m1_closed.  The bytes change only with the writer's next append, and
 * readers only read m1_closed, so the minutes are rebuilt and encoded
 * without the lock; it is taken again to seal them with the chunk.  A
 * failure leaves the head as it was (but for m1, which may have moved
 * into m1_closed, marked done).
 */
static int seal_raw(struct gw_store *s, struct gw_series *ser, struct head *h,
		    int64_t next)
{
	bool final = next >= h->raw_hour + MS_HOUR, m1_full;
	size_t n = 0, cap = 0, at, pushed;
	struct gw_rollup *r = NULL;
	const uint8_t *p;
	struct gw_buf out; /* the hour's column, or an early seal's frames */
	size_t len;
	int err = 0;

	if (!gw_chunk_count(&h->raw))
		return 0;
	pthread_rwlock_wrlock(&s->lock);
	m1_full = h->m1_open && !h->m1_done && h->m1.t <= next;
	/* A split minute that is complete joins the framed ones first. */
	if (m1_full && h->m1_split) {
		err = gw_store_frame_add(&h->m1_closed, &h->m1);
		if (!err) {
			h->m1_hour = floor_to(h->m1.t - 1, MS_HOUR);
			h->m1_done = true;
		}
	}
	/* NULL only when out of memory: the head stays as it is. */
	p = err ? NULL : gw_chunk_bytes(&h->raw, &len);
	if (!err && !p)
		err = -ENOMEM;
	pthread_rwlock_unlock(&s->lock);

	gw_buf_init(&out, 64u << 20);
	if (!err && final && h->m1_closed.len) {
		err = gw_store_frame_decode(&h->m1_closed, &r, &n);
		cap = n;
	}
	if (!err)
		err = gw_store_chunk_minutes(p, len, h->m1_raw_from, next, &r,
					     &n, &cap);
	if (!err && n)
		err = final ? gw_rollup_encode(r, n, &out)
			    : gw_store_frame_add_all(&out, r, n);

	pthread_rwlock_wrlock(&s->lock);
	pushed = s->nsealed;
	at = h->m1_closed.len;
	if (!err && n && final) {
		err = seal_push_locked(s, ser->id, GW_TIER_1M, r[0].t,
				       r[n - 1].t, (uint32_t)n, out.p, out.len);
	} else if (!err && n) {
		err = gw_buf_add(&h->m1_closed, out.p, out.len);
		if (!err)
			h->m1_hour = h->raw_hour;
	}
	if (!err)
		err = seal_push_locked(s, ser->id, GW_TIER_RAW,
				       gw_chunk_first(&h->raw),
				       gw_chunk_last(&h->raw),
				       gw_chunk_count(&h->raw), p, len);
	if (err) {
		while (s->nsealed > pushed)
			seal_pop_locked(s);
		gw_buf_truncate(&h->m1_closed, at);
	} else {
		if (final)
			gw_buf_release(&h->m1_closed);
		if (m1_full) {
			h->m1_done = true;
		} else if (h->m1_open && !h->m1_done) {
			/* the rest of m1's samples go to the next chunk */
			h->m1_split = true;
			h->m1_raw_from = h->m1.t;
		}
		/* The next hour's chunk grows from nothing: a buffer kept at
		 * this hour's size would hold the peak of every series for
		 * ever. */
		gw_chunk_enc_release(&h->raw);
	}
	pthread_rwlock_unlock(&s->lock);
	gw_buf_release(&out);
	gw_rollup_free_array(r, n);
	return err;
}

/* Encodes framed rollups as one rollup chunk and seals it. */
static int seal_rollups(struct gw_store *s, struct gw_series *ser,
			enum gw_tier tier, struct gw_buf *framed)
{
	struct gw_rollup *r = NULL;
	struct gw_buf out;
	size_t n = 0;
	int err;

	if (!framed->len)
		return 0;
	err = gw_store_frame_decode(framed, &r, &n);
	if (err)
		return err;
	gw_buf_init(&out, 64u << 20);
	if (n)
		err = gw_rollup_encode(r, n, &out);
	if (!err && n)
		err = seal_push(s, ser->id, tier, r[0].t, r[n - 1].t,
				(uint32_t)n, out.p, out.len);
	gw_buf_release(&out);
	gw_rollup_free_array(r, n);
	if (!err) {
		pthread_rwlock_wrlock(&s->lock);
		gw_buf_release(framed);
		pthread_rwlock_unlock(&s->lock);
	}
	return err;
}

/* The hour that ended becomes a one-rollup chunk of the 1-hour tier,
 * written at the next cut with the hour's other chunks; closing the day
 * merges a series' hours into one chunk (compact.c). */
static int close_hour(struct gw_store *s, struct gw_series *ser, struct head *h)
{
	struct gw_buf out;
	int err;

	gw_buf_init(&out, 64u << 20);
	err = gw_rollup_encode(&h->h1, 1, &out);
	/* Under the lock: a reader sees the hour either open or sealed. */
	pthread_rwlock_wrlock(&s->lock);
	if (!err)
		err = seal_push_locked(s, ser->id, GW_TIER_1H, h->h1.t, h->h1.t,
				       1, out.p, out.len);
	if (!err)
		h->h1_open = false;
	pthread_rwlock_unlock(&s->lock);
	gw_buf_release(&out);
	return err;
}

static int close_minute(struct gw_store *s, struct gw_series *ser,
			struct head *h)
{
	int64_t hour = floor_to(h->m1.t - 1, MS_HOUR);
	int err = 0;

	if (h->m1_hour != hour && h->m1_closed.len) {
		err = seal_rollups(s, ser, GW_TIER_1M, &h->m1_closed);
		if (err)
			return err;
	}
	if (h->h1_open && h->h1.t != hour + MS_HOUR) {
		err = close_hour(s, ser, h);
		if (err)
			return err;
	}
	/* Under the lock: queries read the open windows (store_read.c).
	 * Unless split, m1's samples are in the raw chunk, which rebuilds
	 * the minute when it is sealed. */
	pthread_rwlock_wrlock(&s->lock);
	if (h->m1_split && !h->m1_done) {
		err = gw_store_frame_add(&h->m1_closed, &h->m1);
		if (!err)
			h->m1_hour = hour;
	}
	if (!err && !h->h1_open) {
		gw_rollup_reset(&h->h1, hour + MS_HOUR);
		h->h1_open = true;
	}
	if (!err)
		err = gw_rollup_merge(&h->h1, &h->m1);
	if (!err)
		h->m1_open = false;
	pthread_rwlock_unlock(&s->lock);
	return err;
}

/*
 * Moves everything of the head before `before` into sealed[]: the raw
 * chunk of an earlier hour, minutes and hours that ended.
 */
int gw_store_head_close_before(struct gw_store *s, struct gw_series *ser,
			       struct head *h, int64_t before)
{
	int err = 0;

	if (gw_chunk_count(&h->raw) && h->raw_hour < before &&
	    h->raw_hour + MS_HOUR <= before)
		err = seal_raw(s, ser, h, before);
	if (!err && h->m1_open && h->m1.t <= before)
		err = close_minute(s, ser, h);
	if (!err && h->m1_closed.len && h->m1_hour + MS_HOUR <= before)
		err = seal_rollups(s, ser, GW_TIER_1M, &h->m1_closed);
	if (!err && h->h1_open && h->h1.t <= before)
		err = close_hour(s, ser, h);
	return err;
}

static int make_active(struct gw_store *s, struct gw_series *ser);

/* The sample path shared by append and log replay. */
int gw_store_head_add(struct gw_store *s, struct gw_series *ser, int64_t t,
		      double v, bool log)
{
	struct head *h = ser->head;
	int64_t hour;
	int err, radd = 0;

	hour = floor_to(t, MS_HOUR);
	if (!ser->live) {
		/* A retired series that comes back, with its old id; replayed
		 * samples were admitted once and are never refused. */
		pthread_rwlock_wrlock(&s->lock);
		err = gw_series_index_revive(s->idx, ser, !log);
		pthread_rwlock_unlock(&s->lock);
		if (err) {
			gw_store_note_cap(s, err, ser->key);
			return err;
		}
	}
	if (!h->in_active) {
		err = make_active(s, ser);
		if (err)
			return err;
	}
	if (log && !h->in_dirty) {
		err = gw_store_list_push(&s->dirty, ser);
		if (err)
			return err;
		h->in_dirty = true;
	}
	if (t < h->last_t || t < s->watermark) {
		atomic_fetch_add(&s->st_order, 1);
		gw_log_once(&s->warned_order, GW_LOG_WARN,
			    "store: sample of %s at %lld is older than the "
			    "series' last one (or the last cut) and is "
			    "dropped; further drops are only counted",
			    ser->key, (long long)t);
		return -EDOM;
	}
	if (log && h->npend == h->cappend) {
		uint32_t ncap = h->cappend ? h->cappend * 2 : 8;
		struct pending *np;

		if (h->npend >= PEND_MAX) {
			/*
			 * Flushes keep failing (disk full, I/O errors): the
			 * oldest half of the series' unflushed samples leaves
			 * the log.  They stay in the head and reach the
			 * partitions at the next cut; only a crash before
			 * then loses them, and they are counted.
			 */
			if (gw_store_now(s) < s->next_flush ||
			    gw_store_flush(s) != 0) {
				uint32_t half = h->npend / 2;

				memmove(h->pend, h->pend + half,
					(h->npend - half) * sizeof(*h->pend));
				h->npend -= half;
				s->pend_total -= half;
				atomic_fetch_add(&s->st_unlogged, half);
			}
		} else {
			np = realloc(h->pend, ncap * sizeof(*np));
			if (!np)
				return -ENOMEM;
			h->pend = np;
			h->cappend = ncap;
		}
	}
	if (h->raw_hour != hour || gw_chunk_count(&h->raw) >= 3600 * 4) {
		err = seal_raw(s, ser, h, t);
		if (err)
			return err;
		h->raw_hour = hour;
	}
	if (h->m1_open && t >= h->m1.t) {
		err = close_minute(s, ser, h);
		if (err)
			return err;
	}
	if (h->h1_open && t >= h->h1.t) {
		err = close_hour(s, ser, h);
		if (err)
			return err;
	}
	pthread_rwlock_wrlock(&s->lock);
	err = gw_chunk_append(&h->raw, t, v);
	if (err == -ENOSPC) {
		pthread_rwlock_unlock(&s->lock);
		err = seal_raw(s, ser, h, t);
		pthread_rwlock_wrlock(&s->lock);
		if (!err)
			err = gw_chunk_append(&h->raw, t, v);
	}
	if (!err) {
		h->last_t = t;
		if (h->first_t == INT64_MIN && !h->from_disk)
			h->first_t = t;
		if (!h->m1_open) {
			gw_rollup_reset(&h->m1, floor_to(t, MS_MIN) + MS_MIN);
			h->m1_open = true;
			h->m1_split = false;
			h->m1_done = false;
		}
		radd = gw_rollup_add(&h->m1, t, v);
	}
	pthread_rwlock_unlock(&s->lock);
	if (err)
		return err;
	err = radd; /* -ENOMEM: the sample is kept, the sketch lost it */
	if (log && h->npend < h->cappend) {
		h->pend[h->npend++] = (struct pending){ t, v };
		s->pend_total++;
	}
	atomic_fetch_add(&s->st_appended, 1);
	return err;
}

int gw_store_list_push(struct ser_list *l, struct gw_series *ser)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		struct gw_series **nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = ser;
	return 0;
}

void gw_store_note_cap(struct gw_store *s, int err, const char *key)
{
	int k = err == -E2BIG;
	int64_t now = gw_store_now(s);

	atomic_fetch_add(&s->st_cap, 1);
	/* The first refusal of each kind, then at most one line an hour
	 * with the count since the last line. */
	if (s->cap_logged[k] && now - s->cap_logged[k] < MS_HOUR) {
		s->cap_unlogged[k]++;
		return;
	}
	if (k)
		gw_warn("store: refusing new series %s: a label would pass "
			"--store-max-label-values %u live values (%llu more "
			"refused since the last line); counted in "
			"gpuwatch_store_samples_refused_total{reason=\"cap\"}",
			key, s->o.max_values,
			(unsigned long long)s->cap_unlogged[k]);
	else
		gw_warn("store: refusing new series %s: --store-max-series "
			"%u live series reached (%llu more refused since the "
			"last line); counted in "
			"gpuwatch_store_samples_refused_total{reason=\"cap\"}",
			key, s->o.max_series,
			(unsigned long long)s->cap_unlogged[k]);
	s->cap_logged[k] = now ? now : 1;
	s->cap_unlogged[k] = 0;
}

static int make_active(struct gw_store *s, struct gw_series *ser)
{
	struct head *h = ser->head;
	int err;

	if (h->in_active)
		return 0;
	err = gw_store_list_push(&s->active, ser);
	if (!err)
		h->in_active = true;
	return err;
}

/*
 * Nothing of the series is only in the head: no open chunk or rollup, no
 * unflushed sample (what it sealed is in sealed[] until a cut writes it,
 * which the eviction checks on its own).
 */
static bool drained(const struct head *h)
{
	return !gw_chunk_count(&h->raw) && !h->m1_open && !h->m1_closed.len &&
	       !h->h1_open && !h->npend;
}

/* Gives back the memory of a drained head's buffers. */
static void head_trim(struct head *h)
{
	gw_chunk_enc_release(&h->raw);
	gw_chunk_enc_init(&h->raw);
	gw_rollup_release(&h->m1);
	gw_rollup_init(&h->m1, 0);
	gw_rollup_release(&h->h1);
	gw_rollup_init(&h->h1, 0);
	gw_buf_release(&h->m1_closed);
	gw_buf_init(&h->m1_closed, 16u << 20);
	free(h->pend);
	h->pend = NULL;
	h->cappend = 0;
	h->raw_hour = INT64_MIN;
	h->m1_raw_from = INT64_MIN;
}

uint64_t gw_store_key_hash(const char *key)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *key; key++) {
		h ^= (unsigned char)*key;
		h *= 1099511628211ull;
	}
	return h ? h : 1;
}

static int ev_grow(struct evicted_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct evicted *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->v[i].hash)
			continue;
		for (j = m->v[i].hash & (cap - 1); v[j].hash;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = m->v[i];
	}
	free(m->v);
	m->v = v;
	m->cap = cap;
	return 0;
}

static int ev_put(struct evicted_map *m, uint64_t hash, uint32_t id)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && ev_grow(m))
		return -ENOMEM;
	for (j = hash & (m->cap - 1); m->v[j].hash; j = (j + 1) & (m->cap - 1))
		;
	m->v[j] = (struct evicted){ hash, id };
	m->n++;
	return 0;
}

/* Records id's last sample t in ev_last, growing it: 0 or -ENOMEM. */
static int ev_last_set(struct gw_store *s, uint32_t id, int64_t t)
{
	if (id >= s->ev_last_cap) {
		size_t cap = s->ev_last_cap ? s->ev_last_cap : 4096;
		int64_t *v;

		while (cap <= id)
			cap *= 2;
		v = realloc(s->ev_last, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + s->ev_last_cap, 0,
		       (cap - s->ev_last_cap) * sizeof(*v));
		s->ev_last = v;
		s->ev_last_cap = cap;
	}
	s->ev_last[id] = t;
	return 0;
}

/* Removes slot i by backward shift (no tombstones). */
static void ev_del_at(struct evicted_map *m, size_t i)
{
	for (size_t j = i;;) {
		size_t home;

		j = (j + 1) & (m->cap - 1);
		if (!m->v[j].hash)
			break;
		home = m->v[j].hash & (m->cap - 1);
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->v[i] = m->v[j];
		i = j;
	}
	m->v[i] = (struct evicted){ 0 };
	m->n--;
}

/*
 * The evicted series with this key: the slot of its entry (its id and
 * last sample), or -1.  The key is checked against index.db's row, since
 * hashes may collide.  Writer only.
 */
static ssize_t ev_find(struct gw_store *s, const char *key)
{
	uint64_t hash = gw_store_key_hash(key);
	const struct evicted_map *m = &s->ev;
	sqlite3_stmt *st = NULL;
	ssize_t found = -1;

	if (!m->n)
		return -1;
	for (size_t j = hash & (m->cap - 1); m->v[j].hash && found < 0;
	     j = (j + 1) & (m->cap - 1)) {
		const unsigned char *k;

		if (m->v[j].hash != hash)
			continue;
		if (!st && sqlite3_prepare_v2(s->index,
					      "SELECT key FROM series WHERE "
					      "id = ?",
					      -1, &st, NULL) != SQLITE_OK)
			break;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, m->v[j].id);
		if (sqlite3_step(st) == SQLITE_ROW &&
		    (k = sqlite3_column_text(st, 0))) {
			if (strcmp((const char *)k, key) == 0)
				found = (ssize_t)j;
		} else {
			/* known before the last closed day: packed */
			char *pk = NULL;

			if (gw_store_packed_keys(s->index, &m->v[j].id, 1,
						 &pk) == 0 &&
			    pk && strcmp(pk, key) == 0)
				found = (ssize_t)j;
			free(pk);
		}
	}
	sqlite3_finalize(st);
	return found;
}

void gw_store_grave_free(struct gw_store *s, bool force)
{
	if (!force && atomic_load(&s->readers))
		return;
	for (size_t i = 0; i < s->grave.n; i++) {
		gw_store_head_free(s->grave.v[i]->head);
		gw_series_release(s->grave.v[i]);
	}
	s->grave.n = 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether a sealed chunk (not yet cut) belongs to id; ids: the sealed
 * chunks' ids, sorted. */
static bool sealed_has(const uint32_t *ids, size_t n, uint32_t id)
{
	return n && bsearch(&id, ids, n, sizeof(*ids), cmp_u32);
}

/*
 * Retired series are looked at for eviction every this often, not every
 * minute: under churn most of the active list is retired series waiting
 * out their hour, and an eviction pass walks the index's series and
 * aliases once (gw_series_index_evict).  Memory goes back up to this much
 * later.
 */
#define EVICT_EVERY_MS (10 * MS_MIN)

void gw_store_head_sweep(struct gw_store *s, int64_t now)
{
	/* Memory is given back later than the caps: a series that samples
	 * every few minutes keeps its day's 1-hour column in one chunk. */
	int64_t trim_ms = s->o.retire_ms > MS_HOUR ? s->o.retire_ms : MS_HOUR;
	bool evict = now >= s->next_evict;
	uint32_t *sealed = NULL;
	size_t j = 0, first, nsealed = 0;

	if (evict)
		s->next_evict = now + EVICT_EVERY_MS;
	pthread_rwlock_wrlock(&s->lock);
	first = s->grave.n;
	if (evict && s->nsealed &&
	    (sealed = malloc(s->nsealed * sizeof(*sealed)))) {
		for (size_t i = 0; i < s->nsealed; i++)
			sealed[i] = s->sealed[i].id;
		nsealed = s->nsealed;
		qsort(sealed, nsealed, sizeof(*sealed), cmp_u32);
	}
	for (size_t i = 0; i < s->active.n; i++) {
		struct gw_series *ser = s->active.v[i];
		struct head *h = ser->head;

		if (ser->live && (h->last_t == INT64_MIN ||
				  h->last_t < now - s->o.retire_ms))
			gw_series_index_retire(s->idx, ser);
		if (!ser->live && evict && drained(h) &&
		    (h->last_t == INT64_MIN || h->last_t < now - trim_ms)) {
			/*
			 * Everything of it is on disk (its index.db row, its
			 * chunks, no sealed chunk waiting for a cut): it
			 * leaves memory, found again through ev.  Otherwise
			 * (no memory for the bookkeeping: rare) only its
			 * buffers go.
			 */
			if (h->persisted && !h->in_dirty &&
			    (!s->nsealed || sealed) &&
			    !sealed_has(sealed, nsealed, ser->id) &&
			    gw_store_list_push(&s->grave, ser) == 0) {
				/* Known from disk and not revived: nothing
				 * of it after the last cut. */
				int64_t t = h->last_t != INT64_MIN ? h->last_t
					    : s->watermark != INT64_MIN
						    ? s->watermark
						    : now;

				if (ev_last_set(s, ser->id, t) == 0 &&
				    ev_put(&s->ev, gw_store_key_hash(ser->key),
					   ser->id) == 0) {
					h->in_active = false;
					continue;
				}
				if (ser->id < s->ev_last_cap)
					s->ev_last[ser->id] = 0;
				s->grave.n--;
			}
			head_trim(h);
			h->in_active = false;
			continue;
		}
		s->active.v[j++] = ser;
	}
	s->active.n = j;
	if (s->grave.n > first) {
		/* The grave's entries from first on are this sweep's. */
		gw_series_index_evict(s->idx, s->grave.v + first,
				      s->grave.n - first);
	}
	gw_store_grave_free(s, false);
	pthread_rwlock_unlock(&s->lock);
	free(sealed);
}

int gw_store_attach_series(struct gw_store *s, const struct gw_labels *l,
			   uint32_t id, bool persisted, struct gw_series **out)
{
	/* The head first: a series in the index always has one. */
	struct head *h = head_new();
	struct gw_series *ser = NULL;
	int64_t last_t = INT64_MIN;
	uint64_t ev_hash = 0;
	int err;

	if (!h)
		return -ENOMEM;
	/* A series evicted earlier comes back with its id (and so with its
	 * history), retired until its samples revive it under the caps. */
	if (!id && s->ev.n) {
		struct gw_buf key;
		ssize_t at = -1;

		gw_buf_init(&key, 64 * 1024);
		if (gw_labels_key(l, &key) == 0 &&
		    !gw_series_index_find(s->idx, key.p))
			at = ev_find(s, key.p);
		gw_buf_release(&key);
		if (at >= 0) {
			ev_hash = s->ev.v[at].hash;
			id = s->ev.v[at].id;
			persisted = true;
			pthread_rwlock_wrlock(&s->lock);
			if (id < s->ev_last_cap && s->ev_last[id])
				last_t = s->ev_last[id];
			ev_del_at(&s->ev, (size_t)at);
			pthread_rwlock_unlock(&s->lock);
			h->last_t = last_t;
		}
	}
	h->persisted = persisted;
	h->logged = persisted; /* its key is on disk: index.db's row */
	/* From disk: it may have data from before this run, and is retired
	 * until samples come (the caps count what is live). */
	h->from_disk = id != 0;
	pthread_rwlock_wrlock(&s->lock);
	err = gw_series_index_add(s->idx, l, id, id != 0, &ser);
	if (!err && ev_hash && id < s->ev_last_cap)
		s->ev_last[id] = 0; /* in memory again */
	if (!err && !ser->head) {
		ser->head = h;
		h = NULL;
	}
	/* Not back after all (no memory): still found as evicted. */
	if (err && ev_hash && ev_put(&s->ev, ev_hash, id))
		gw_warn("store: series %u lost from the evicted list (no "
			"memory): its history may show as a second series",
			(unsigned)id);
	pthread_rwlock_unlock(&s->lock);
	gw_store_head_free(h);
	if (err == -ENOSPC || err == -E2BIG) {
		struct gw_buf key;

		gw_buf_init(&key, 4096);
		if (gw_labels_key(l, &key) != 0)
			gw_buf_reset(&key);
		gw_store_note_cap(s, err, key.len ? key.p : "?");
		gw_buf_release(&key);
	}
	if (!err && !((struct head *)ser->head)->logged &&
	    !((struct head *)ser->head)->in_dirty) {
		err = gw_store_list_push(&s->dirty, ser);
		if (!err)
			((struct head *)ser->head)->in_dirty = true;
	}
	if (!err && ser->live)
		err = make_active(s, ser);
	*out = err ? NULL : ser;
	return err;
}

int gw_store_append(struct gw_store *s, const char *name, const char *labels,
		    int64_t t, double v)
{
	char stackkey[512];
	char *key = stackkey;
	size_t ln = strlen(name), ll = labels ? strlen(labels) : 0;
	struct gw_series *ser;
	int err = 0;

	if (ln + ll + 2 > sizeof(stackkey)) {
		key = malloc(ln + ll + 2);
		if (!key)
			return -ENOMEM;
	}
	memcpy(key, name, ln);
	key[ln] = '\x01';
	memcpy(key + ln + 1, labels ? labels : "", ll + 1);
	ser = gw_series_index_find_alias(s->idx, key);
	if (!ser) {
		struct gw_labels l;

		err = gw_labels_parse(&l, name, labels);
		if (err) {
			atomic_fetch_add(&s->st_bad, 1);
			gw_log_once(&s->warned_bad, GW_LOG_WARN,
				    "store: refusing series %s{%s}: bad name "
				    "or labels (%s)",
				    name, labels ? labels : "", strerror(-err));
			goto out;
		}
		err = gw_store_attach_series(s, &l, 0, false, &ser);
		gw_labels_release(&l);
		if (err)
			goto out;
		pthread_rwlock_wrlock(&s->lock);
		if (gw_series_index_add_alias(s->idx, key, ser))
			gw_dbg("store: alias cache full");
		pthread_rwlock_unlock(&s->lock);
	}
	err = gw_store_head_add(s, ser, t, v, true);
out:
	if (key != stackkey)
		free(key);
	return err;
}
