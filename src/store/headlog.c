/* SPDX-License-Identifier: MIT */
/*
 * headlog.c - the head log in index.db: every flush interval the samples
 * appended since the last flush go into one row (series id, count, first
 * timestamp, then per sample a varint time delta and the value's 8 bytes),
 * in the same transaction as the rows of new series.  Only the series on
 * the dirty list (samples or an index row since the last flush) are
 * visited, so a flush costs what was written, not the series ever seen.  Opening the store
 * replays the rows after the cut watermark; a cut deletes the rows before
 * it.  SQLite makes each flush atomic, so a crash loses at most the samples
 * of the current flush interval.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/bits.h"
#include "common/log.h"

int gw_store_insert_series(sqlite3 *db, sqlite3_stmt **cache,
			   const struct gw_series *ser, bool ignore)
{
	sqlite3_stmt *st = cache ? *cache : NULL;
	int rc;

	if (!st) {
		rc = sqlite3_prepare_v2(
			db,
			ignore ? "INSERT OR IGNORE INTO series(id, key) "
				 "VALUES (?, ?)"
			       : "INSERT OR REPLACE INTO series(id, key) "
				 "VALUES (?, ?)",
			-1, &st, NULL);
		if (rc != SQLITE_OK)
			return gw_store_sql_err(db, rc, "insert series");
		if (cache)
			*cache = st;
	}
	sqlite3_bind_int64(st, 1, ser->id);
	sqlite3_bind_text(st, 2, ser->key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (!cache)
		sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0
				 : gw_store_sql_err(db, rc, "insert series");
}

int gw_store_flush(struct gw_store *s)
{
	struct timespec a, b;
	struct gw_buf blob;
	int64_t tmin = INT64_MAX, tmax = INT64_MIN;
	size_t n = s->dirty.n;
	sqlite3_stmt *st;
	char why[256] = "";
	int err = 0, rc;

	s->next_flush = gw_store_now(s) + s->o.flush_ms;
	if (!s->dirty.n)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	gw_buf_init(&blob, 1u << 30);
	for (size_t i = 0; i < n && !gw_buf_error(&blob); i++) {
		struct gw_series *ser = s->dirty.v[i];
		struct head *h = ser->head;
		int64_t prev;

		if (!h->npend)
			continue;
		gw_varint_put(&blob, ser->id);
		gw_varint_put(&blob, h->npend);
		prev = h->pend[0].t;
		gw_varint_put(&blob, (uint64_t)prev);
		for (uint32_t j = 0; j < h->npend; j++) {
			uint64_t d = (uint64_t)h->pend[j].t - (uint64_t)prev;

			gw_varint_put(&blob, d);
			gw_buf_put(&blob, &h->pend[j].v, 8);
			prev = h->pend[j].t;
		}
		if (h->pend[0].t < tmin)
			tmin = h->pend[0].t;
		if (prev > tmax)
			tmax = prev;
	}
	err = gw_buf_error(&blob);
	if (err)
		goto out;
	rc = sqlite3_exec(s->index, "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		err = -EIO;
		goto out;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct gw_series *ser = s->dirty.v[i];
		struct head *h = ser->head;

		if (!h->persisted)
			err = gw_store_insert_series(s->index, &s->st_series,
						     ser, false);
	}
	if (!err && blob.len) {
		rc = SQLITE_OK;
		if (!s->st_head)
			rc = sqlite3_prepare_v2(s->index,
						"INSERT INTO head(t_min, t_max,"
						" data) VALUES (?, ?, ?)",
						-1, &s->st_head, NULL);
		st = s->st_head;
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, tmin);
			sqlite3_bind_int64(st, 2, tmax);
			sqlite3_bind_blob(st, 3, blob.p, (int)blob.len,
					  SQLITE_STATIC);
			rc = sqlite3_step(st);
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
		}
		if (rc != SQLITE_DONE)
			err = rc == SQLITE_FULL ? -ENOSPC : -EIO;
	}
	if (!err &&
	    sqlite3_exec(s->index, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		err = -EIO;
	if (err) {
		/* The message before the rollback clears it. */
		snprintf(why, sizeof(why), "%s", sqlite3_errmsg(s->index));
		(void)sqlite3_exec(s->index, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct head *h = s->dirty.v[i]->head;

		h->npend = 0;
		h->persisted = true;
		h->in_dirty = false;
	}
	s->dirty.n = 0;
	s->pend_total = 0;
out:
	gw_buf_release(&blob);
	clock_gettime(CLOCK_MONOTONIC, &b);
	atomic_store(&s->st_flush_ns,
		     (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL +
				(b.tv_nsec - a.tv_nsec)));
	/* One line when flushes start failing and one when they work
	 * again, not one every flush interval. */
	if (err) {
		atomic_fetch_add(&s->st_flush_errors, 1);
		if (!s->flush_failing)
			gw_err("store: flushing new samples to %s/index.db "
			       "failed (%s); they stay in memory, retried "
			       "every "
			       "%lld ms, counted in "
			       "gpuwatch_store_flushes_total{result=\"error\"}",
			       s->dir, *why ? why : strerror(-err),
			       (long long)s->o.flush_ms);
		s->flush_failing = true;
	} else {
		atomic_fetch_add(&s->st_flushes, 1);
		if (s->flush_failing)
			gw_info("store: flushes work again");
		s->flush_failing = false;
	}
	return err;
}

/* Replays the head log after the watermark into the head. */
int gw_store_replay(struct gw_store *s)
{
	sqlite3_stmt *st;
	uint64_t samples = 0, segs = 0;
	int rc, err = 0;

	rc = sqlite3_prepare_v2(s->index,
				"SELECT data FROM head WHERE "
				"t_max >= ? ORDER BY seq",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(s->index, rc, "head log");
	sqlite3_bind_int64(st, 1, s->watermark);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const uint8_t *p = sqlite3_column_blob(st, 0);
		const uint8_t *end = p + sqlite3_column_bytes(st, 0);

		segs++;
		while (p && p < end) {
			uint64_t id, cnt, t0;
			struct gw_series *ser;
			int64_t t;

			if (gw_varint_get(&p, end, &id) ||
			    gw_varint_get(&p, end, &cnt) ||
			    gw_varint_get(&p, end, &t0)) {
				err = -EBADMSG;
				break;
			}
			ser = id <= UINT32_MAX ? gw_series_index_get(
							 s->idx, (uint32_t)id)
					       : NULL;
			t = (int64_t)t0;
			for (uint64_t j = 0; j < cnt; j++) {
				uint64_t d;
				double v;

				if (gw_varint_get(&p, end, &d) || end - p < 8) {
					err = -EBADMSG;
					break;
				}
				memcpy(&v, p, 8);
				p += 8;
				t = (int64_t)((uint64_t)t + d);
				if (ser && t >= s->watermark &&
				    gw_store_head_add(s, ser, t, v, false) == 0)
					samples++;
			}
			if (err)
				break;
		}
		if (err)
			break;
	}
	sqlite3_finalize(st);
	if (err)
		gw_err("store: the head log in index.db is damaged; replayed "
		       "what was readable (%llu samples)",
		       (unsigned long long)samples);
	else if (segs)
		gw_info("store: replayed %llu samples from the head log",
			(unsigned long long)samples);
	return 0;
}
