/* SPDX-License-Identifier: MIT */
/*
 * profstore.c - per-minute, per-process CPU profiles in SQLite.  See
 * profstore.h.
 *
 * Schema (one table):
 *   profiles(minute INTEGER, pid INTEGER, type INTEGER, labels TEXT,
 *            samples INTEGER, bytes INTEGER, blob BLOB)
 *   unique index on (minute, pid, type):
 * a put for a (minute, process, type) already stored replaces it (the collector
 * rewrites the current minute at every drain, so that queries see it).
 * Two connections, each behind its own mutex: the writer's and the
 * readers', so that a long query never holds up the collector (WAL).
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/profstore.h"

#define DEFAULT_RETENTION_MS (30LL * 86400 * 1000)
#define DEFAULT_MAX_BYTES    (1ULL << 30)
#define DEFAULT_MAX_ROWS     100000

struct gw_profstore {
	sqlite3 *w, *r;
	pthread_mutex_t wlock, rlock;
	int64_t retention_ms;
	uint64_t max_bytes, max_rows;
	struct gw_profstore_stats st; /* under wlock; bad_rows under rlock */
	uint64_t bad_rows;
};

static int open_db(const char *path, sqlite3 **db, char *err, size_t errlen)
{
	int rc = sqlite3_open_v2(path, db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					 SQLITE_OPEN_NOMUTEX,
				 NULL);

	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "profiles: cannot open %s: %s", path,
			 *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
		sqlite3_close(*db);
		*db = NULL;
		return -EIO;
	}
	sqlite3_busy_timeout(*db, 5000);
	return 0;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "profiles: %s", msg ? msg : "error");
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

int gw_profstore_open(const struct gw_profstore_opts *o,
		      struct gw_profstore **out, char *err, size_t errlen)
{
	struct gw_profstore *s = calloc(1, sizeof(*s));
	int r;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->retention_ms =
		o->retention_ms > 0 ? o->retention_ms : DEFAULT_RETENTION_MS;
	s->max_bytes = o->max_bytes ? o->max_bytes : DEFAULT_MAX_BYTES;
	s->max_rows = o->max_rows_query ? o->max_rows_query : DEFAULT_MAX_ROWS;
	pthread_mutex_init(&s->wlock, NULL);
	pthread_mutex_init(&s->rlock, NULL);
	r = open_db(o->path, &s->w, err, errlen);
	if (r)
		goto err;
	r = exec(s->w,
		 "PRAGMA journal_mode=WAL;"
		 "PRAGMA synchronous=NORMAL;"
		 "CREATE TABLE IF NOT EXISTS profiles("
		 " minute INTEGER NOT NULL, pid INTEGER NOT NULL,"
		 " type INTEGER NOT NULL,"
		 " labels TEXT NOT NULL, samples INTEGER NOT NULL,"
		 " bytes INTEGER NOT NULL, blob BLOB NOT NULL);"
		 "CREATE UNIQUE INDEX IF NOT EXISTS profiles_minute"
		 " ON profiles(minute, pid, type);",
		 err, errlen);
	if (r)
		goto err;
	r = open_db(o->path, &s->r, err, errlen);
	if (r)
		goto err;
	*out = s;
	return 0;
err:
	gw_profstore_close(s);
	return r;
}

void gw_profstore_close(struct gw_profstore *s)
{
	if (!s)
		return;
	sqlite3_close(s->r);
	sqlite3_close(s->w);
	pthread_mutex_destroy(&s->wlock);
	pthread_mutex_destroy(&s->rlock);
	free(s);
}

int gw_profstore_put(struct gw_profstore *s, int64_t minute_ms, uint32_t pid,
		     enum gw_profile_type type, const char *labels,
		     const void *blob, size_t len, int64_t samples)
{
	sqlite3_stmt *st = NULL;
	int r = -EIO;

	pthread_mutex_lock(&s->wlock);
	if (sqlite3_prepare_v2(
		    s->w,
		    "INSERT OR REPLACE INTO profiles(minute, pid, labels, "
		    "samples, bytes, blob, type) VALUES(?,?,?,?,?,?,?)",
		    -1, &st, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(st, 1, minute_ms);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_text(st, 3, labels, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, samples);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)len);
	sqlite3_bind_blob(st, 6, blob, (int)len, SQLITE_STATIC);
	sqlite3_bind_int(st, 7, (int)type);
	if (sqlite3_step(st) == SQLITE_DONE)
		r = 0;
out:
	if (r) {
		s->st.put_errors++;
		gw_err("profiles: cannot store a profile: %s",
		       sqlite3_errmsg(s->w));
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->wlock);
	return r;
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int gw_profstore_maint(struct gw_profstore *s, int64_t now_ms)
{
	sqlite3_stmt *st = NULL;
	int r = 0;

	pthread_mutex_lock(&s->wlock);
	if (sqlite3_prepare_v2(s->w, "DELETE FROM profiles WHERE minute < ?",
			       -1, &st, NULL) != SQLITE_OK) {
		r = -EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, now_ms - s->retention_ms);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = -EIO;
	else
		s->st.deleted += (uint64_t)sqlite3_changes(s->w);
	sqlite3_finalize(st);
	st = NULL;
	/* Size: the oldest minutes first, one minute at a time. */
	for (int i = 0; i < 10000 && r == 0; i++) {
		int64_t bytes = one_int(s->w, "SELECT coalesce(sum(bytes),0) "
					      "FROM profiles");
		int64_t oldest;
		char sql[128];

		if (bytes < 0 || (uint64_t)bytes <= s->max_bytes)
			break;
		oldest = one_int(s->w, "SELECT min(minute) FROM profiles");
		snprintf(sql, sizeof(sql),
			 "DELETE FROM profiles WHERE minute = %lld",
			 (long long)oldest);
		if (sqlite3_exec(s->w, sql, NULL, NULL, NULL) != SQLITE_OK)
			r = -EIO;
		else
			s->st.deleted += (uint64_t)sqlite3_changes(s->w);
	}
out:
	if (r)
		gw_err("profiles: maintenance: %s", sqlite3_errmsg(s->w));
	pthread_mutex_unlock(&s->wlock);
	return r;
}

static bool row_matches(const char *text, const struct gw_matcher *const *sets,
			const size_t *nm, size_t nsets)
{
	struct gw_labels l;
	bool ok = false;

	if (nsets == 0)
		return true;
	if (gw_labels_parse(&l, GW_PROFSTORE_NAME, text))
		return false;
	for (size_t i = 0; i < nsets && !ok; i++)
		ok = gw_matchers_match(sets[i], nm[i], &l);
	gw_labels_release(&l);
	return ok;
}

int gw_profstore_query(struct gw_profstore *s, enum gw_profile_type type,
		       const struct gw_matcher *const *sets, const size_t *nm,
		       size_t nsets, int64_t start_ms, int64_t end_ms,
		       struct gw_prof *p, int col, size_t *rows)
{
	sqlite3_stmt *st = NULL;
	size_t n = 0;
	int r = 0, rc;

	*rows = 0;
	pthread_mutex_lock(&s->rlock);
	if (sqlite3_prepare_v2(s->r,
			       "SELECT labels, blob FROM profiles WHERE "
			       "minute > ? AND minute <= ? AND type = ? "
			       "ORDER BY minute",
			       -1, &st, NULL) != SQLITE_OK) {
		r = -EIO;
		goto out;
	}
	/* A minute [m, m + 60 s) overlaps [start, end]. */
	sqlite3_bind_int64(st, 1, start_ms - 60000);
	sqlite3_bind_int64(st, 2, end_ms);
	sqlite3_bind_int(st, 3, (int)type);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *labels = (const char *)sqlite3_column_text(st, 0);
		const void *blob = sqlite3_column_blob(st, 1);
		int len = sqlite3_column_bytes(st, 1);

		if (!labels || !row_matches(labels, sets, nm, nsets))
			continue;
		if (n == s->max_rows) {
			r = -E2BIG;
			goto out;
		}
		n++;
		r = gw_prof_add_pprof(p, blob, (size_t)len, col);
		if (r == -ENOMEM)
			goto out;
		if (r) {
			s->bad_rows++;
			r = 0;
		}
	}
	if (rc != SQLITE_DONE)
		r = -EIO;
out:
	if (r == -EIO)
		gw_err("profiles: query: %s", sqlite3_errmsg(s->r));
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->rlock);
	*rows = n;
	return r;
}

void gw_profstore_stats(struct gw_profstore *s, struct gw_profstore_stats *st)
{
	pthread_mutex_lock(&s->wlock);
	*st = s->st;
	st->rows = (uint64_t)one_int(s->w, "SELECT count(*) FROM profiles");
	st->bytes =
		(uint64_t)one_int(s->w, "SELECT coalesce(sum(bytes),0) FROM "
					"profiles");
	pthread_mutex_unlock(&s->wlock);
	pthread_mutex_lock(&s->rlock);
	st->bad_rows = s->bad_rows;
	pthread_mutex_unlock(&s->rlock);
}
