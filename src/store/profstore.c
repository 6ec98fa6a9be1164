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
 * and the cold tier's record:
 *   archived(day INTEGER PRIMARY KEY, bytes INTEGER, pinned INTEGER)
 * a day (ms at 00:00 UTC) whose copy is in the bucket; pinned: restored,
 * kept whatever the retention.  An archived day file holds the same
 * profiles table with that day's rows only.
 * Two connections, each behind its own mutex: the writer's and the
 * readers', so that a long query never holds up the collector (WAL).
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "store/profstore.h"
#include "store/query.h"
#include "store/store.h"

#define DEFAULT_RETENTION_MS (30LL * 86400 * 1000)
#define DEFAULT_MAX_BYTES    (1ULL << 30)
#define DEFAULT_MAX_ROWS     100000
#define MS_DAY		     86400000LL
#define FETCH_TIMEOUT_NS     (60ULL * 1000000000ULL)
#define SCHEMA                                                                 \
	"CREATE TABLE IF NOT EXISTS %sprofiles("                               \
	" minute INTEGER NOT NULL, pid INTEGER NOT NULL,"                      \
	" type INTEGER NOT NULL,"                                              \
	" labels TEXT NOT NULL, samples INTEGER NOT NULL,"                     \
	" bytes INTEGER NOT NULL, blob BLOB NOT NULL);"                        \
	"CREATE UNIQUE INDEX IF NOT EXISTS %sprofiles_minute"                  \
	" ON profiles(minute, pid, type);"

struct gw_profstore {
	sqlite3 *w, *r;
	pthread_mutex_t wlock, rlock;
	int64_t retention_ms;
	uint64_t max_bytes, max_rows;
	struct gw_profstore_stats st; /* under wlock; bad_rows under rlock */
	uint64_t bad_rows;
	/* the cold tier: set before use, read only after */
	bool archiving;
	int64_t keep_ms;
	int (*fetch)(void *ctx, const char *name, char *path, size_t len,
		     struct gw_query_limits *lim);
	void *fetch_ctx;
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
		 " ON profiles(minute, pid, type);"
		 "CREATE TABLE IF NOT EXISTS archived("
		 " day INTEGER PRIMARY KEY, bytes INTEGER NOT NULL,"
		 " pinned INTEGER NOT NULL DEFAULT 0);",
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

/* Under wlock: the local rows of archived, not restored days that ended
 * more than keep_ms ago. */
static int drop_archived(struct gw_profstore *s, int64_t now_ms)
{
	sqlite3_stmt *st = NULL;
	int r = 0;

	if (sqlite3_prepare_v2(s->w,
			       "DELETE FROM profiles WHERE "
			       "minute - minute % 86400000 + 86400000 <= ? AND "
			       "minute - minute % 86400000 IN "
			       " (SELECT day FROM archived WHERE NOT pinned)",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, now_ms - s->keep_ms);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = -EIO;
	sqlite3_finalize(st);
	return r;
}

int gw_profstore_maint(struct gw_profstore *s, int64_t now_ms)
{
	sqlite3_stmt *st = NULL;
	int r = 0;

	pthread_mutex_lock(&s->wlock);
	/* Past the retention, except restored days and, while archiving,
	 * days the bucket does not hold yet; then archived days past the
	 * local retention. */
	if (sqlite3_prepare_v2(s->w,
			       "DELETE FROM profiles WHERE minute < ?1 AND "
			       "minute - minute % 86400000 NOT IN "
			       " (SELECT day FROM archived WHERE pinned) AND "
			       "(?2 = 0 OR minute - minute % 86400000 IN "
			       " (SELECT day FROM archived))",
			       -1, &st, NULL) != SQLITE_OK) {
		r = -EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, now_ms - s->retention_ms);
	sqlite3_bind_int(st, 2, s->archiving);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = -EIO;
	else
		s->st.deleted += (uint64_t)sqlite3_changes(s->w);
	sqlite3_finalize(st);
	st = NULL;
	if (r == 0 && s->archiving)
		r = drop_archived(s, now_ms);
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

/* The rows of st (labels, blob) that match, into column col; *n counts
 * them against max.  0, -E2BIG, -ENOMEM or -EIO. */
static int add_rows(sqlite3_stmt *st, const struct gw_matcher *const *sets,
		    const size_t *nm, size_t nsets, struct gw_prof *p, int col,
		    size_t *n, size_t max, uint64_t *bad)
{
	int r = 0, rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *labels = (const char *)sqlite3_column_text(st, 0);
		const void *blob = sqlite3_column_blob(st, 1);
		int len = sqlite3_column_bytes(st, 1);

		if (!labels || !row_matches(labels, sets, nm, nsets))
			continue;
		if (*n == max)
			return -E2BIG;
		(*n)++;
		r = gw_prof_add_pprof(p, blob, (size_t)len, col);
		if (r == -ENOMEM)
			return r;
		if (r) {
			(*bad)++;
			r = 0;
		}
	}
	return rc == SQLITE_DONE ? 0 : -EIO;
}

#define SELECT_ROWS                                                            \
	"SELECT labels, blob FROM profiles WHERE "                             \
	"minute > ? AND minute <= ? AND type = ? ORDER BY minute"

static void bind_range(sqlite3_stmt *st, int64_t start_ms, int64_t end_ms,
		       enum gw_profile_type type)
{
	/* A minute [m, m + 60 s) overlaps [start, end]. */
	sqlite3_bind_int64(st, 1, start_ms - 60000);
	sqlite3_bind_int64(st, 2, end_ms);
	sqlite3_bind_int(st, 3, (int)type);
}

/* Archived days in [start - 1 min, end] without local rows (at most
 * cap, oldest first): under rlock. */
static size_t remote_days(struct gw_profstore *s, int64_t start_ms,
			  int64_t end_ms, int64_t *days, size_t cap)
{
	sqlite3_stmt *st = NULL;
	size_t n = 0;

	if (sqlite3_prepare_v2(
		    s->r,
		    "SELECT day FROM archived a WHERE day + 86400000 > ? AND "
		    "day <= ? AND NOT EXISTS (SELECT 1 FROM profiles WHERE "
		    "minute >= a.day AND minute < a.day + 86400000) "
		    "ORDER BY day",
		    -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, start_ms - 60000);
	sqlite3_bind_int64(st, 2, end_ms);
	while (n < cap && sqlite3_step(st) == SQLITE_ROW)
		days[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void day_name(int64_t day_ms, char out[32])
{
	time_t t = (time_t)(day_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 32, "prof/%04d-%02d-%02d", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One archived day, fetched through the hook, read from its file. */
static int query_remote(struct gw_profstore *s, int64_t day,
			enum gw_profile_type type,
			const struct gw_matcher *const *sets, const size_t *nm,
			size_t nsets, int64_t start_ms, int64_t end_ms,
			struct gw_prof *p, int col, size_t *n,
			struct gw_query_limits *lim)
{
	char name[32], path[4400];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	uint64_t bad = 0;
	int r;

	day_name(day, name);
	r = s->fetch(s->fetch_ctx, name, path, sizeof(path), lim);
	if (r == -ETIMEDOUT || r == -ECANCELED)
		return r;
	if (r)
		return 0; /* logged and counted by the hook; the day is
			     skipped */
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
		    SQLITE_OK ||
	    sqlite3_prepare_v2(db, SELECT_ROWS, -1, &st, NULL) != SQLITE_OK) {
		gw_err("profiles: cannot read the archived day %s (%s): %s",
		       name, path, db ? sqlite3_errmsg(db) : "out of memory");
		r = 0;
		goto out;
	}
	bind_range(st, start_ms, end_ms, type);
	r = add_rows(st, sets, nm, nsets, p, col, n, s->max_rows, &bad);
	if (r == -EIO) {
		gw_err("profiles: the archived day %s: %s", name,
		       sqlite3_errmsg(db));
		r = 0;
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (bad) {
		pthread_mutex_lock(&s->rlock);
		s->bad_rows += bad;
		pthread_mutex_unlock(&s->rlock);
	}
	return r;
}

int gw_profstore_query(struct gw_profstore *s, enum gw_profile_type type,
		       const struct gw_matcher *const *sets, const size_t *nm,
		       size_t nsets, int64_t start_ms, int64_t end_ms,
		       struct gw_prof *p, int col, size_t *rows)
{
	struct gw_query_limits lim = { 0 };
	sqlite3_stmt *st = NULL;
	int64_t days[64];
	size_t n = 0, nd = 0;
	int r = 0;

	*rows = 0;
	pthread_mutex_lock(&s->rlock);
	if (sqlite3_prepare_v2(s->r, SELECT_ROWS, -1, &st, NULL) != SQLITE_OK) {
		r = -EIO;
		goto out;
	}
	bind_range(st, start_ms, end_ms, type);
	r = add_rows(st, sets, nm, nsets, p, col, &n, s->max_rows,
		     &s->bad_rows);
	if (!r && s->fetch)
		nd = remote_days(s, start_ms, end_ms, days,
				 sizeof(days) / sizeof(days[0]));
out:
	if (r == -EIO)
		gw_err("profiles: query: %s", sqlite3_errmsg(s->r));
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->rlock);
	/* The fetches run without the lock: they may take long. */
	lim.deadline_ns = mono_ns() + FETCH_TIMEOUT_NS;
	for (size_t i = 0; i < nd && !r; i++)
		r = query_remote(s, days[i], type, sets, nm, nsets, start_ms,
				 end_ms, p, col, &n, &lim);
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

/* ---- the cold tier ---- */

void gw_profstore_set_archive(struct gw_profstore *s, int64_t keep_ms,
			      int (*fetch)(void *ctx, const char *name,
					   char *path, size_t len,
					   struct gw_query_limits *lim),
			      void *fetch_ctx)
{
	s->archiving = true;
	s->keep_ms = keep_ms > 0 ? keep_ms : 0;
	s->fetch = fetch;
	s->fetch_ctx = fetch_ctx;
}

int gw_profstore_parse_day(const char *name, int64_t *day_ms)
{
	enum gw_tier t;
	char raw[32];

	if (strncmp(name, "prof/", 5) != 0 || strlen(name) != 15)
		return -EINVAL;
	snprintf(raw, sizeof(raw), "raw/%s", name + 5);
	return gw_store_parse_partition(raw, &t, day_ms);
}

static struct gw_profstore_day *day_find(struct gw_profstore_day *v, size_t n,
					 int64_t day)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].day_ms == day)
			return &v[i];
	return NULL;
}

static int day_cmp(const void *x, const void *y)
{
	const struct gw_profstore_day *a = x, *b = y;

	return a->day_ms < b->day_ms ? -1 : a->day_ms > b->day_ms;
}

int gw_profstore_days(struct gw_profstore *s, int64_t now_ms,
		      struct gw_profstore_day **out, size_t *n)
{
	static const char *const sql[2] = {
		"SELECT minute - minute % 86400000 AS d, count(*), "
		"sum(bytes), 0, 0 FROM profiles GROUP BY d",
		"SELECT day, 0, bytes, 1, pinned FROM archived",
	};
	struct gw_profstore_day *v = NULL;
	size_t nv = 0, cap = 0;
	int r = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&s->rlock);
	for (int q = 0; q < 2 && !r; q++) {
		sqlite3_stmt *st = NULL;
		int rc;

		if (sqlite3_prepare_v2(s->r, sql[q], -1, &st, NULL) !=
		    SQLITE_OK) {
			r = -EIO;
			break;
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t day = sqlite3_column_int64(st, 0);
			struct gw_profstore_day *d = day_find(v, nv, day);

			if (!d) {
				if (nv == cap) {
					size_t c = cap ? cap * 2 : 32;
					struct gw_profstore_day *nvv =
						realloc(v, c * sizeof(*v));

					if (!nvv) {
						r = -ENOMEM;
						break;
					}
					v = nvv;
					cap = c;
				}
				d = &v[nv++];
				memset(d, 0, sizeof(*d));
				d->day_ms = day;
				day_name(day, d->name);
				d->closed =
					day + MS_DAY + GW_PROFSTORE_CLOSE_MS <=
					now_ms;
			}
			if (q == 0) {
				d->rows = (uint64_t)sqlite3_column_int64(st, 1);
				d->bytes =
					(uint64_t)sqlite3_column_int64(st, 2);
				d->local = d->rows > 0;
			} else {
				d->archived = true;
				d->pinned = sqlite3_column_int(st, 4) != 0;
				if (!d->local)
					d->bytes =
						(uint64_t)sqlite3_column_int64(
							st, 2);
			}
		}
		if (!r && rc != SQLITE_DONE)
			r = -EIO;
		sqlite3_finalize(st);
	}
	if (r == -EIO)
		gw_err("profiles: listing the days: %s", sqlite3_errmsg(s->r));
	pthread_mutex_unlock(&s->rlock);
	if (r) {
		free(v);
		return r;
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), day_cmp);
	*out = v;
	*n = nv;
	return 0;
}

/* Runs sql on db with one int64 and one text parameter bound (either
 * may be absent from the statement). */
static int run(sqlite3 *db, const char *sql, int64_t i, const char *t)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_bind_parameter_index(st, "?1"))
		sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, "?1"),
				   i);
	if (t && sqlite3_bind_parameter_index(st, "?2"))
		sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, "?2"), t,
				  -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

int gw_profstore_export_day(struct gw_profstore *s, int64_t day_ms,
			    const char *path)
{
	char schema[1024], err[256];
	int r;

	if (access(path, F_OK) == 0)
		return -EEXIST;
	snprintf(schema, sizeof(schema), SCHEMA, "x.", "x.");
	pthread_mutex_lock(&s->rlock);
	r = run(s->r, "ATTACH DATABASE ?2 AS x", 0, path);
	if (r)
		goto out;
	r = exec(s->r, schema, err, sizeof(err));
	if (!r)
		r = run(s->r,
			"INSERT INTO x.profiles SELECT minute, pid, type, "
			"labels, samples, bytes, blob FROM main.profiles "
			"WHERE minute >= ?1 AND minute < ?1 + 86400000 "
			"ORDER BY minute, pid, type",
			day_ms, NULL);
	if (run(s->r, "DETACH DATABASE x", 0, NULL) && !r)
		r = -EIO;
out:
	if (r)
		gw_err("profiles: cannot write the day file %s: %s", path,
		       sqlite3_errmsg(s->r));
	pthread_mutex_unlock(&s->rlock);
	if (r)
		(void)unlink(path);
	return r;
}

int gw_profstore_archived(struct gw_profstore *s, int64_t day_ms,
			  uint64_t bytes, int64_t now_ms)
{
	sqlite3_stmt *st = NULL;
	int r = -EIO;

	pthread_mutex_lock(&s->wlock);
	if (sqlite3_prepare_v2(s->w,
			       "INSERT INTO archived(day, bytes) VALUES(?, ?) "
			       "ON CONFLICT(day) DO UPDATE SET bytes = "
			       "excluded.bytes",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(st, 1, day_ms);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)bytes);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto out;
	r = s->archiving ? drop_archived(s, now_ms) : 0;
out:
	if (r)
		gw_err("profiles: cannot record an archived day: %s",
		       sqlite3_errmsg(s->w));
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->wlock);
	return r;
}

int gw_profstore_import(struct gw_profstore *s, const char *path,
			int64_t *day_ms)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t lo = 0, hi = -1, known;
	char err[256], sql[96];
	int r = -EINVAL;

	/* One day's profiles, checked before anything is copied. */
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
		    SQLITE_OK &&
	    sqlite3_prepare_v2(db,
			       "SELECT min(minute), max(minute), count(*) "
			       "FROM profiles",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 2) > 0) {
		lo = sqlite3_column_int64(st, 0);
		hi = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (hi < 0 || lo < 0 || lo - lo % MS_DAY != hi - hi % MS_DAY)
		return -EINVAL;
	*day_ms = lo - lo % MS_DAY;
	pthread_mutex_lock(&s->wlock);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM archived WHERE day = %lld",
		 (long long)*day_ms);
	known = one_int(s->w, sql);
	if (known <= 0) {
		r = known < 0 ? -EIO : -ENOENT;
		goto out;
	}
	r = run(s->w, "ATTACH DATABASE ?2 AS x", 0, path);
	if (r)
		goto out;
	r = exec(s->w, "BEGIN", err, sizeof(err));
	if (!r)
		r = run(s->w,
			"INSERT OR REPLACE INTO main.profiles(minute, pid, "
			"type, labels, samples, bytes, blob) SELECT minute, "
			"pid, type, labels, samples, bytes, blob FROM "
			"x.profiles",
			0, NULL);
	if (!r)
		r = run(s->w, "UPDATE archived SET pinned = 1 WHERE day = ?1",
			*day_ms, NULL);
	if (!r)
		r = exec(s->w, "COMMIT", err, sizeof(err));
	else
		(void)exec(s->w, "ROLLBACK", err, sizeof(err));
	(void)run(s->w, "DETACH DATABASE x", 0, NULL);
out:
	if (r == -EIO)
		gw_err("profiles: cannot import %s: %s", path,
		       sqlite3_errmsg(s->w));
	pthread_mutex_unlock(&s->wlock);
	return r;
}
