/* SPDX-License-Identifier: MIT */
/*
 * store_read.c - the store's read side: the struct gw_queryable the PromQL
 * engine and the HTTP API use, partition listing and export.
 *
 * A select matches the series with the lock dropped (the index takes the
 * read lock only to read; regular expressions run without it), copies
 * what the head holds for them (open and sealed chunks, closed rollups)
 * under the read lock, COPY_BATCH series per hold, then decodes and reads
 * the partitions through its own read-only SQLite connections without any
 * lock.  The query's deadline and cancel flag are checked in each of
 * these loops.  A chunk that moved from the head to disk in between is
 * seen twice; the copy on disk is skipped when the head had a chunk with
 * the same first timestamp (chunks are keyed by (series, t_min), so that
 * identifies it).
 */
#include "store/store_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/bits.h"
#include "common/log.h"

/* One in-memory piece copied from the head. */
struct memchunk {
	enum gw_tier tier;
	bool framed;   /* framed rollups (head buffers) */
	int64_t t_min; /* for the duplicate check; INT64_MIN if framed */
	uint8_t *data;
	size_t len;
};

struct sel {
	uint32_t id;
	struct gw_labels labels;
	struct memchunk *mem;
	size_t nmem;
	/* collected points */
	int64_t *t;
	double *v;
	struct gw_rollup *r;
	size_t n, cap;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int check_limits(struct gw_query_limits *lim, size_t add)
{
	if (!lim)
		return 0;
	lim->samples += add;
	if (lim->max_samples && lim->samples > lim->max_samples)
		return -E2BIG;
	if (lim->deadline_ns && mono_ns() > lim->deadline_ns)
		return -ETIMEDOUT;
	if (lim->cancel && atomic_load(lim->cancel))
		return -ECANCELED;
	return 0;
}

static int mem_add(struct sel *x, enum gw_tier tier, bool framed, int64_t t_min,
		   const void *data, size_t len)
{
	struct memchunk *nm;
	uint8_t *copy;

	if (!len)
		return 0;
	nm = realloc(x->mem, (x->nmem + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	x->mem = nm;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	x->mem[x->nmem++] = (struct memchunk){ tier, framed, t_min, copy, len };
	return 0;
}

/* Adds a malloc'd piece (taken: freed here on failure). */
static int mem_take(struct sel *x, enum gw_tier tier, int64_t t_min,
		    uint8_t *data, size_t len)
{
	struct memchunk *nm;

	if (!len) {
		free(data);
		return 0;
	}
	nm = realloc(x->mem, (x->nmem + 1) * sizeof(*nm));
	if (!nm) {
		free(data);
		return -ENOMEM;
	}
	x->mem = nm;
	x->mem[x->nmem++] = (struct memchunk){ tier, false, t_min, data, len };
	return 0;
}

/*
 * The windows still open in the head (the minute and the hour being
 * filled), as framed rollups: a series that stopped has its last minute
 * and hour there until the next cut.  Their t is the window's end, so a
 * query ending before that end leaves them out (keep_rollups).  Called
 * under the lock; the writer changes them only under it.
 */
static int mem_add_open(struct sel *x, enum gw_tier tier, const struct head *h)
{
	struct gw_rollup hour;
	struct gw_buf b;
	int err = 0;

	gw_buf_init(&b, 16u << 20);
	gw_rollup_init(&hour, 0);
	if (tier == GW_TIER_1M && h->m1_open && !h->m1_done &&
	    h->m1.count > 0) {
		err = gw_store_frame_add(&b, &h->m1);
	} else if (tier == GW_TIER_1H) {
		int64_t m1_end = floor_to(h->m1.t - 1, MS_HOUR) + MS_HOUR;
		bool m1 = h->m1_open && h->m1.count > 0;

		if (h->h1_open && h->h1.count > 0) {
			gw_rollup_reset(&hour, h->h1.t);
			err = gw_rollup_merge(&hour, &h->h1);
			if (!err && m1 && m1_end == h->h1.t) {
				err = gw_rollup_merge(&hour, &h->m1);
				m1 = false;
			}
			if (!err)
				err = gw_store_frame_add(&b, &hour);
		}
		if (!err && m1) {
			gw_rollup_reset(&hour, m1_end);
			err = gw_rollup_merge(&hour, &h->m1);
			if (!err)
				err = gw_store_frame_add(&b, &hour);
		}
	}
	if (!err)
		err = mem_add(x, tier, true, INT64_MIN, b.p, b.len);
	gw_rollup_release(&hour);
	gw_buf_release(&b);
	return err;
}

static void sel_release(struct sel *x)
{
	for (size_t i = 0; i < x->nmem; i++)
		free(x->mem[i].data);
	free(x->mem);
	gw_labels_release(&x->labels);
	free(x->t);
	free(x->v);
	if (x->r)
		gw_rollup_free_array(x->r, x->n);
	memset(x, 0, sizeof(*x));
}

static bool in_memory(const struct sel *x, int64_t t_min)
{
	for (size_t i = 0; i < x->nmem; i++)
		if (x->mem[i].t_min == t_min)
			return true;
	return false;
}

static int grow(struct sel *x, enum gw_tier tier, size_t need)
{
	size_t ncap = x->cap ? x->cap : 256;

	if (need <= x->cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (tier == GW_TIER_RAW) {
		int64_t *t = realloc(x->t, ncap * sizeof(*t));
		double *v;

		if (!t)
			return -ENOMEM;
		x->t = t;
		v = realloc(x->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		x->v = v;
	} else {
		struct gw_rollup *r = realloc(x->r, ncap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		x->r = r;
	}
	x->cap = ncap;
	return 0;
}

/* Decodes one raw chunk, keeping the samples in [mint, maxt]. */
static int take_raw(struct gw_store *s, struct sel *x, const uint8_t *p,
		    size_t len, int64_t mint, int64_t maxt,
		    struct gw_query_limits *lim)
{
	struct gw_chunk_dec d;
	size_t before = x->n;
	int64_t t;
	double v;
	int rc;

	if (gw_chunk_dec_init(&d, p, len) != 0)
		goto corrupt;
	while ((rc = gw_chunk_next(&d, &t, &v)) == 1) {
		if (t < mint || t > maxt)
			continue;
		if (grow(x, GW_TIER_RAW, x->n + 1))
			return -ENOMEM;
		x->t[x->n] = t;
		x->v[x->n++] = v;
	}
	if (rc < 0) {
		x->n = before;
		goto corrupt;
	}
	return check_limits(lim, x->n - before);
corrupt:
	atomic_fetch_add(&s->st_corrupt, 1);
	gw_log_once(&s->warned_corrupt, GW_LOG_ERROR,
		    "store: a chunk of %s failed its checksum and was skipped; "
		    "further ones are counted in "
		    "gpuwatch_store_corrupt_chunks_total",
		    x->labels.n ? x->labels.v[0].value : "?");
	return 0;
}

static int keep_rollups(struct gw_store *s, struct sel *x, struct gw_rollup *r,
			size_t k, int64_t mint, int64_t maxt, enum gw_tier tier,
			struct gw_query_limits *lim)
{
	size_t kept = 0;
	int err = 0;

	(void)s;
	for (size_t i = 0; i < k; i++) {
		if (r[i].t < mint || r[i].t > maxt || err) {
			gw_rollup_release(&r[i]);
			continue;
		}
		err = grow(x, tier, x->n + 1);
		if (err) {
			gw_rollup_release(&r[i]);
			continue;
		}
		x->r[x->n++] = r[i]; /* moved */
		kept++;
	}
	free(r);
	if (err)
		return err;
	return check_limits(lim, kept);
}

static int take_rollups(struct gw_store *s, struct sel *x, enum gw_tier tier,
			const uint8_t *p, size_t len, bool framed, int64_t mint,
			int64_t maxt, struct gw_query_limits *lim)
{
	struct gw_rollup *r = NULL;
	size_t k = 0;
	int err;

	if (framed) {
		struct gw_buf b = { (char *)p, len, len, len, 0 };

		err = gw_store_frame_decode(&b, &r, &k);
	} else {
		err = gw_rollup_decode(p, len, &r, &k);
	}
	if (err == -ENOMEM)
		return err;
	if (err) {
		atomic_fetch_add(&s->st_corrupt, 1);
		return 0;
	}
	return keep_rollups(s, x, r, k, mint, maxt, tier, lim);
}

static int cmp_data(const void *a, const void *b)
{
	const struct gw_series_data *x = a, *y = b;

	return gw_labels_cmp(&x->labels, &y->labels);
}

/* Sorts collected points by time (stable for equal times). */
static int sort_points(struct sel *x, enum gw_tier tier)
{
	bool sorted = true;

	for (size_t i = 1; i < x->n && sorted; i++)
		sorted = tier == GW_TIER_RAW ? x->t[i - 1] <= x->t[i]
					     : x->r[i - 1].t <= x->r[i].t;
	if (sorted)
		return 0;
	/* Insertion sort over runs: pieces arrive mostly in order. */
	for (size_t i = 1; i < x->n; i++) {
		size_t j = i;

		if (tier == GW_TIER_RAW) {
			int64_t t = x->t[i];
			double v = x->v[i];

			while (j > 0 && x->t[j - 1] > t) {
				x->t[j] = x->t[j - 1];
				x->v[j] = x->v[j - 1];
				j--;
			}
			x->t[j] = t;
			x->v[j] = v;
		} else {
			struct gw_rollup r = x->r[i];

			while (j > 0 && x->r[j - 1].t > r.t) {
				x->r[j] = x->r[j - 1];
				j--;
			}
			x->r[j] = r;
		}
	}
	return 0;
}

struct part_ref {
	char path[PATH_MAX + 320];
	char name[32]; /* "raw/2026-12-01" */
	bool remote;   /* in the archive only: fetched first */
};

static void note_corrupt_file(struct gw_store *s, const char *path)
{
	atomic_fetch_add(&s->st_corrupt, 1);
	gw_log_once(&s->warned_corrupt, GW_LOG_ERROR,
		    "store: %s is damaged (SQLite reports corruption); its "
		    "chunks are skipped and the file is checked and "
		    "quarantined",
		    path);
	pthread_mutex_lock(&s->suspect_lock);
	if (!s->suspect[0])
		snprintf(s->suspect, sizeof(s->suspect), "%s", path);
	pthread_mutex_unlock(&s->suspect_lock);
}

/* The selection whose id is id (sels ascending by id), from *at on. */
static struct sel *sel_seek(struct sel *sels, size_t n, size_t *at, uint32_t id)
{
	while (*at < n && sels[*at].id < id)
		(*at)++;
	return *at < n && sels[*at].id == id ? &sels[*at] : NULL;
}

/* SQLite's progress callback: a long statement stops (SQLITE_INTERRUPT)
 * once the query's deadline passed or it was cancelled. */
static int read_progress(void *ctx)
{
	struct gw_query_limits *lim = ctx;

	return (lim->deadline_ns && mono_ns() > lim->deadline_ns) ||
	       (lim->cancel && atomic_load(lim->cancel));
}

/*
 * Reads the chunks in [mint, maxt] of every selected series from one
 * partition with one statement: the ids go in as a JSON array, SQLite
 * looks each up in the (series, t_min) key and returns the rows in that
 * order, which is the order of sels.
 */
/* What the chunks of one block go to (read_zblocks). */
struct zread {
	struct gw_store *s;
	struct sel *sels;
	size_t n, at;
	enum gw_tier tier;
	int64_t mint, maxt;
	struct gw_query_limits *lim;
};

static int zread_chunk(void *ctx, const struct gw_zchunk *c)
{
	struct zread *z = ctx;
	struct sel *x;

	if (c->t_max < z->mint || c->t_min > z->maxt)
		return 0;
	x = sel_seek(z->sels, z->n, &z->at, c->series);
	if (!x || in_memory(x, c->t_min))
		return 0;
	if (z->tier == GW_TIER_RAW)
		return take_raw(z->s, x, c->data, c->len, z->mint, z->maxt,
				z->lim);
	return take_rollups(z->s, x, z->tier, c->data, c->len, false, z->mint,
			    z->maxt, z->lim);
}

/* How a partition's statement ended (rc): the query's own stop (its
 * deadline or cancel, for an interrupt), a damaged file noted for the
 * writer, or another error logged; 0 or the query's error. */
static int read_status(struct gw_store *s, sqlite3 *db, const char *path,
		       int rc, struct gw_query_limits *lim)
{
	int err = rc == SQLITE_INTERRUPT ? check_limits(lim, 0) : 0;

	if (!err && rc != SQLITE_DONE && rc != SQLITE_ROW) {
		if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
			note_corrupt_file(s, path);
		else
			gw_warn("store: reading %s: %s", path,
				sqlite3_errmsg(db));
	}
	return err;
}

/*
 * Blocks of whole series (compact.c): in a closed partition `zblocks`
 * keyed by their last series id, in an hour's (the open day, a raw day) `hblocks` keyed hour <<
 * 32 | last series id (base: hour << 32).  The block of the next selected
 * series not read yet is the first with key >= base + its id; one block
 * answers every selected series up to its last.  An hour block's ids
 * come first (st: id, ids; data: its data by id), so that a lookup
 * decompresses only the blocks that hold its series.
 */
static int read_blocks(struct gw_store *s, sqlite3 *db, const char *path,
		       sqlite3_stmt *st, sqlite3_stmt *data, int64_t base,
		       struct sel *sels, size_t n, enum gw_tier tier,
		       int64_t mint, int64_t maxt, struct gw_query_limits *lim)
{
	struct zread z = { s, sels, n, 0, tier, mint, maxt, lim };
	size_t next = 0;
	int err = 0, rc = SQLITE_DONE;

	while (!err && next < n) {
		int64_t last;

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, base + sels[next].id);
		sqlite3_bind_int64(st, 2, mint);
		sqlite3_bind_int64(st, 3, maxt);
		sqlite3_bind_int64(st, 4, base + ((int64_t)1 << GW_HOUR_SHIFT));
		rc = sqlite3_step(st);
		if (rc != SQLITE_ROW)
			break;
		last = sqlite3_column_int64(st, 0) - base;
		z.at = next;
		if (!data) {
			err = gw_store_zblock_each(
				sqlite3_column_blob(st, 1),
				(size_t)sqlite3_column_bytes(st, 1),
				zread_chunk, &z);
		} else if (gw_store_ids_any(sqlite3_column_blob(st, 1),
					    (size_t)sqlite3_column_bytes(st, 1),
					    &sels[next].id, sizeof(*sels),
					    n - next, (uint64_t)last)) {
			/* Only now its data: read apart, it is a chain
			 * of overflow pages the ids let us skip. */
			sqlite3_reset(data);
			sqlite3_bind_int64(data, 1, last + base);
			err = sqlite3_step(data) == SQLITE_ROW
				      ? gw_store_zblock_each(
						sqlite3_column_blob(data, 0),
						(size_t)sqlite3_column_bytes(
							data, 0),
						zread_chunk, &z)
				      : read_status(s, db, path,
						    sqlite3_errcode(db), lim);
		}
		if (err == -EBADMSG) {
			atomic_fetch_add(&s->st_corrupt, 1);
			note_corrupt_file(s, path);
			err = 0;
		}
		if (!err)
			err = check_limits(lim, 0);
		while (next < n && sels[next].id <= last)
			next++;
	}
	if (!err)
		err = read_status(s, db, path, rc, lim);
	return err;
}

/* A statement of read_blocks: 1 on SQLite's interrupt (the query's
 * limits), -1 when the table is not there. */
static int prepare_blocks(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : rc == SQLITE_INTERRUPT ? 1 : -1;
}

static int read_zblocks(struct gw_store *s, sqlite3 *db, const char *path,
			struct sel *sels, size_t n, enum gw_tier tier,
			int64_t mint, int64_t maxt, struct gw_query_limits *lim)
{
	sqlite3_stmt *st = NULL;
	int err, p;

	p = prepare_blocks(db,
			   "SELECT id, data FROM zblocks WHERE id >= ?1 AND "
			   "t_max >= ?2 AND t_min <= ?3 ORDER BY id LIMIT 1",
			   &st);
	if (p) {
		if (p > 0)
			return check_limits(lim, 0);
		note_corrupt_file(s, path);
		return 0;
	}
	err = read_blocks(s, db, path, st, NULL, 0, sels, n, tier, mint, maxt,
			  lim);
	sqlite3_finalize(st);
	return err;
}

/* The hours an open partition's cuts wrote, each in its own blocks. */
static int read_hours(struct gw_store *s, sqlite3 *db, const char *path,
		      struct sel *sels, size_t n, enum gw_tier tier,
		      int64_t mint, int64_t maxt, struct gw_query_limits *lim)
{
	sqlite3_stmt *st = NULL, *data = NULL;
	int err = 0, p;

	p = prepare_blocks(db,
			   "SELECT id, ids FROM hblocks WHERE id >= ?1 AND id "
			   "< ?4 AND t_max >= ?2 AND t_min <= ?3 ORDER BY id "
			   "LIMIT 1",
			   &st);
	if (!p)
		p = prepare_blocks(db, "SELECT data FROM hblocks WHERE id = ?1",
				   &data);
	if (p) { /* a partition from before the hour blocks: none */
		sqlite3_finalize(st);
		return p > 0 ? check_limits(lim, 0) : 0;
	}
	for (int64_t h = 0; h < 24 && !err; h++)
		err = read_blocks(s, db, path, st, data, h << GW_HOUR_SHIFT,
				  sels, n, tier, mint, maxt, lim);
	sqlite3_finalize(st);
	sqlite3_finalize(data);
	return err;
}

static int read_partition(struct gw_store *s, const char *path,
			  struct sel *sels, size_t n, enum gw_tier tier,
			  int64_t mint, int64_t maxt,
			  struct gw_query_limits *lim)
{
	sqlite3_stmt *st = NULL;
	struct gw_buf ids;
	enum gw_part_form form;
	size_t at = 0;
	bool packed;
	sqlite3 *db;
	int err = 0, rc;

	if (gw_store_open_db(path, false, true, &db) != 0)
		return 0; /* dropped meanwhile, or unreadable: skip */
	form = gw_store_part_form(db);
	packed = form == GW_PART_PACKED;
	if (form == GW_PART_ZBLOCKS) {
		if (lim && (lim->deadline_ns || lim->cancel))
			sqlite3_progress_handler(db, 4096, read_progress, lim);
		err = read_zblocks(s, db, path, sels, n, tier, mint, maxt, lim);
		sqlite3_close(db);
		return err;
	}
	if (lim && (lim->deadline_ns || lim->cancel))
		sqlite3_progress_handler(db, 4096, read_progress, lim);
	gw_buf_init(&ids, (size_t)1 << 31);
	gw_buf_put(&ids, "[", 1);
	for (size_t i = 0; i < n; i++) {
		char num[16];
		int len = snprintf(num, sizeof(num), "%s%u", i ? "," : "",
				   sels[i].id);

		gw_buf_put(&ids, num, (size_t)len);
	}
	gw_buf_put(&ids, "]", 2); /* with its NUL */
	err = gw_buf_error(&ids);
	if (err)
		goto out;
	/* A closed day's chunks are keyed series << 20 | k (compact.c):
	 * one rowid range per series. */
	rc = sqlite3_prepare_v2(
		db,
		packed ? "SELECT p.id >> 20, p.t_min, p.data FROM "
			 "json_each(?1) AS j JOIN packed AS p ON p.id >= "
			 "(j.value << 20) AND p.id < ((j.value + 1) << 20) "
			 "WHERE p.t_max >= ?2 AND p.t_min <= ?3 ORDER BY p.id"
		       : "SELECT series, t_min, data FROM chunks "
			 "WHERE series IN (SELECT value FROM "
			 "json_each(?1)) AND t_max >= ?2 AND "
			 "t_min <= ?3 ORDER BY series, t_min",
		-1, &st, NULL);
	if (rc == SQLITE_INTERRUPT) {
		err = check_limits(lim, 0);
		goto out;
	}
	if (rc != SQLITE_OK) {
		note_corrupt_file(s, path);
		goto out;
	}
	sqlite3_bind_text(st, 1, ids.p, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, mint);
	sqlite3_bind_int64(st, 3, maxt);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		int64_t t_min = sqlite3_column_int64(st, 1);
		const uint8_t *p = sqlite3_column_blob(st, 2);
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		struct sel *x = id > 0 && id < UINT32_MAX
					? sel_seek(sels, n, &at, (uint32_t)id)
					: NULL;

		if (!x || in_memory(x, t_min))
			continue;
		if (tier == GW_TIER_RAW)
			err = take_raw(s, x, p, len, mint, maxt, lim);
		else
			err = take_rollups(s, x, tier, p, len, false, mint,
					   maxt, lim);
	}
	if (!err)
		err = read_status(s, db, path, rc, lim);
	if (!err && !packed)
		err = read_hours(s, db, path, sels, n, tier, mint, maxt, lim);
out:
	gw_buf_release(&ids);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return err;
}

/*
 * An archived partition: the fetch hook puts it into a local file (the
 * archive's cache) and r->path becomes that file.  -ENOENT when it cannot
 * be read (no hook, not in the bucket, damaged, unreachable: logged by
 * the hook, and here once), the query's own errors when it stopped it.
 */
static int fetch_part(struct gw_store *s, struct part_ref *r,
		      struct gw_query_limits *lim)
{
	struct gw_query_limits none = { 0 };
	int err;

	if (!s->o.fetch) {
		gw_log_once(&s->warned_fetch, GW_LOG_WARN,
			    "store: %s is in the archive, and no archive is "
			    "configured to read it from (--archive-url); "
			    "queries skip it",
			    r->name);
		return -ENOENT;
	}
	err = s->o.fetch(s->o.fetch_ctx, r->name, r->path, sizeof(r->path),
			 lim ? lim : &none);
	if (err == -ETIMEDOUT || err == -ECANCELED || err == -ENOMEM)
		return err;
	return err ? -ENOENT : 0;
}

static bool part_overlaps(const struct part *p, enum gw_tier tier, int64_t mint,
			  int64_t maxt)
{
	if (p->tier != tier)
		return false;
	/* Raw chunks of day D hold t in [D, D+1d); rollups t in (D, D+1d]. */
	return p->day <= maxt && p->day + MS_DAY >= mint;
}

/* The select's view of the store lock and of its query's limits, for
 * gw_series_index_select_unlocked(). */
struct sel_ctx {
	struct gw_store *s;
	struct gw_query_limits *lim;
};

static void sel_lock(void *ctx)
{
	pthread_rwlock_rdlock(&((struct sel_ctx *)ctx)->s->lock);
}

static void sel_unlock(void *ctx)
{
	pthread_rwlock_unlock(&((struct sel_ctx *)ctx)->s->lock);
}

static int sel_check(void *ctx)
{
	return check_limits(((struct sel_ctx *)ctx)->lim, 0);
}

/*
 * The closed minutes whose samples are still in the head's raw chunk (the
 * writer rebuilds them when it seals the chunk: struct head), rebuilt the
 * same way, as framed rollups.  Under the read lock.
 */
static int head_minutes(struct sel *x, const struct head *h)
{
	int64_t upto = h->m1_open ? h->m1.t - MS_MIN : INT64_MAX;
	struct gw_rollup *r = NULL;
	size_t n = 0, cap = 0;
	struct gw_buf b;
	uint8_t *p;
	size_t len;
	int err;

	if (!gw_chunk_count(&h->raw))
		return 0;
	err = gw_chunk_copy(&h->raw, &p, &len);
	if (err)
		return err;
	gw_buf_init(&b, 64u << 20);
	err = gw_store_chunk_minutes(p, len, h->m1_raw_from, upto, &r, &n,
				     &cap);
	if (!err)
		err = gw_store_frame_add_all(&b, r, n);
	if (!err)
		err = mem_add(x, GW_TIER_1M, true, INT64_MIN, b.p, b.len);
	gw_buf_release(&b);
	gw_rollup_free_array(r, n);
	free(p);
	return err;
}

/* Copies what the head holds of one series for the tier; under the read
 * lock. */
static int copy_head(struct sel *x, enum gw_tier tier, const struct head *h)
{
	int err = 0;

	if (tier == GW_TIER_RAW && gw_chunk_count(&h->raw)) {
		uint8_t *p;
		size_t len;

		err = gw_chunk_copy(&h->raw, &p, &len);
		if (!err)
			err = mem_take(x, tier, gw_chunk_first(&h->raw), p,
				       len);
	} else if (tier == GW_TIER_1M) {
		err = mem_add(x, tier, true, INT64_MIN, h->m1_closed.p,
			      h->m1_closed.len);
		if (!err)
			err = head_minutes(x, h);
	}
	if (!err && tier != GW_TIER_RAW)
		err = mem_add_open(x, tier, h);
	return err;
}

/* The sealed chunks of the series sels[0..n) (ascending ids); under the
 * read lock, in the same hold as their heads were copied, so that a chunk
 * is seen either in the head or here. */
static int copy_sealed(const struct gw_store *s, struct sel *sels, size_t n,
		       enum gw_tier tier)
{
	int err = 0;

	if (!n)
		return 0;
	for (size_t k = 0; k < s->nsealed && !err; k++) {
		const struct sealed *z = &s->sealed[k];
		size_t lo = 0, hi = n;

		if (z->tier != tier || z->id < sels[0].id ||
		    z->id > sels[n - 1].id)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (sels[mid].id < z->id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && sels[lo].id == z->id)
			err = mem_add(&sels[lo], tier, false, z->t_min, z->data,
				      z->len);
	}
	return err;
}

/* A series found through the evicted list: only on disk. */
struct ev_hit {
	uint32_t id;
	struct gw_labels labels;
};

static void ev_hits_free(struct ev_hit *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gw_labels_release(&v[i].labels);
	free(v);
}

/* The metric name an equality matcher asks for, or NULL. */
static const char *eq_name(const struct gw_matcher *m, size_t nm)
{
	for (size_t i = 0; i < nm; i++)
		if (m[i].op == GW_MATCH_EQ &&
		    strcmp(m[i].name, "__name__") == 0)
			return m[i].value;
	return NULL;
}

/*
 * The series ids[0..n) (ascending, evicted from memory: store_head.c)
 * that a matcher list selects (any of nsets; every one when nsets is 0),
 * their keys read back from index.db: *out in the same order.  A series
 * index.db does not know is skipped.
 */
static int evicted_read(struct gw_store *s, const uint32_t *ids, size_t n,
			const struct gw_matcher *const *sets, const size_t *nm,
			size_t nsets, struct gw_query_limits *lim,
			struct ev_hit **out, size_t *nout)
{
	const char *name = nsets == 1 ? eq_name(sets[0], nm[0]) : NULL;
	size_t lname = name ? strlen(name) : 0, k = 0;
	struct ev_hit *hits = NULL;
	char **packed = NULL;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	char path[PATH_MAX];
	int err = 0;

	*out = NULL;
	*nout = 0;
	if (!n)
		return 0;
	snprintf(path, sizeof(path), "%s/index.db", s->dir);
	if (gw_store_open_db(path, false, true, &db) != 0 ||
	    sqlite3_prepare_v2(db, "SELECT key FROM series WHERE id = ?", -1,
			       &st, NULL) != SQLITE_OK) {
		gw_warn("store: cannot read index.db for the series evicted "
			"from memory; the answer lacks them");
		goto out;
	}
	hits = calloc(n, sizeof(*hits));
	packed = calloc(n, sizeof(*packed));
	if (!hits || !packed) {
		err = -ENOMEM;
		goto out;
	}
	/* The keys of the series known before the last closed day are in
	 * packed lists rather than rows. */
	err = gw_store_packed_keys(db, ids, n, packed);
	for (size_t i = 0; i < n && !err; i++) {
		const char *key = NULL;
		struct gw_labels l;
		bool any = !nsets;

		if (i % 256 == 255 && (err = check_limits(lim, 0)))
			break;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, ids[i]);
		if (sqlite3_step(st) == SQLITE_ROW)
			key = (const char *)sqlite3_column_text(st, 0);
		if (!key)
			key = packed[i];
		if (!key)
			continue;
		/* The key starts with the name: a quick no. */
		if (name &&
		    (strncmp(key, name, lname) != 0 || key[lname] != '{'))
			continue;
		if (gw_store_key_labels(key, &l) != 0)
			continue;
		for (size_t j = 0; j < nsets && !any; j++)
			any = gw_matchers_match(sets[j], nm[j], &l);
		if (!any) {
			gw_labels_release(&l);
			continue;
		}
		hits[k].id = ids[i];
		hits[k++].labels = l;
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	for (size_t i = 0; packed && i < n; i++)
		free(packed[i]);
	free(packed);
	if (err) {
		ev_hits_free(hits, k);
		return err;
	}
	*out = hits;
	*nout = k;
	return 0;
}

/* Whether evicted series id may have samples at or after mint; under the
 * read lock. */
static bool evicted_since(const struct gw_store *s, uint32_t id, int64_t mint)
{
	return id < s->ev_last_cap && s->ev_last[id] && s->ev_last[id] >= mint;
}

static int cmp_sel(const void *a, const void *b)
{
	const struct sel *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The partitions of the tier overlapping [mint, maxt], under the read
 * lock; *out malloc'd. */
static int parts_overlapping(struct gw_store *s, enum gw_tier tier,
			     int64_t mint, int64_t maxt, struct part_ref **out,
			     size_t *np)
{
	struct part_ref *parts =
		calloc(s->nparts ? s->nparts : 1, sizeof(*parts));

	*out = parts;
	*np = 0;
	if (!parts)
		return -ENOMEM;
	for (size_t k = 0; k < s->nparts; k++)
		if (part_overlaps(&s->parts[k], tier, mint, maxt)) {
			struct part_ref *r = &parts[(*np)++];

			snprintf(r->path, sizeof(r->path), "%s",
				 s->parts[k].path);
			gw_store_part_name(&s->parts[k], r->name,
					   sizeof(r->name));
			r->remote = s->parts[k].remote;
		}
	return 0;
}

/*
 * Series copied per hold of the read lock: the writer waits at most one
 * batch.  Each batch also scans the sealed chunks once, so a batch holds
 * at least an eighth of them (they pile up only in the grace period after
 * an hour, until the cut writes them).
 */
#define COPY_BATCH 512

static int select_locked(void *ctx, const struct gw_matcher *m, size_t nm,
			 int64_t mint, int64_t maxt, enum gw_tier tier,
			 struct gw_query_limits *lim, struct gw_series_set *out)
{
	struct gw_store *s = ctx;
	struct sel_ctx sc = { s, lim };
	const struct gw_series_select_ops ops = { sel_lock, sel_unlock,
						  sel_check, &sc };
	struct sel *sels = NULL;
	struct part_ref *parts = NULL;
	struct ev_hit *ev = NULL;
	uint32_t *ids = NULL, *gone = NULL;
	size_t n = 0, nids = 0, np = 0, nev = 0, ngone = 0, i = 0;
	int err = 0;

	out->s = NULL;
	out->n = 0;
	/* The regular expressions run with the lock dropped (series.h). */
	err = gw_series_index_select_unlocked(s->idx, m, nm, &ops, &ids, &nids);
	if (!err && nids) {
		sels = calloc(nids, sizeof(*sels));
		gone = malloc(nids * sizeof(*gone));
		if (!sels || !gone)
			err = -ENOMEM;
	}
	/*
	 * The head, a batch of series per read lock: readers only copy
	 * bytes under it (decoding comes later), and sels stays in
	 * ascending id order, as the index returns them.
	 */
	while (i < nids && !err) {
		size_t first = n, end;

		pthread_rwlock_rdlock(&s->lock);
		end = s->nsealed / 8 > COPY_BATCH ? s->nsealed / 8 : COPY_BATCH;
		end = nids - i < end ? nids : i + end;
		for (; i < end && !err; i++) {
			struct gw_series *ser =
				gw_series_index_get(s->idx, ids[i]);
			const struct head *h;
			struct sel *x;

			/* Evicted (its id still in the postings): its key
			 * from index.db below, if it lasted into the range. */
			if (!ser) {
				if (evicted_since(s, ids[i], mint))
					gone[ngone++] = ids[i];
				continue;
			}
			h = ser->head;
			if (h->first_t != INT64_MIN &&
			    h->first_t - MS_HOUR > maxt)
				continue;
			x = &sels[n++];
			x->id = ser->id;
			err = gw_labels_dup(&x->labels, &ser->labels);
			if (!err)
				err = copy_head(x, tier, h);
		}
		if (!err)
			err = copy_sealed(s, sels + first, n - first, tier);
		/* The partitions as they are after the last batch: a cut
		 * meanwhile wrote what the batches found sealed. */
		if (!err && i == nids && (n || ngone))
			err = parts_overlapping(s, tier, mint, maxt, &parts,
						&np);
		pthread_rwlock_unlock(&s->lock);
		if (!err)
			err = check_limits(lim, 0);
	}
	if (!err && ngone)
		err = evicted_read(s, gone, ngone, &m, &nm, 1, lim, &ev, &nev);
	/* The evicted series: in the partitions only.  sels in ascending
	 * ids again for the readers of partitions. */
	if (!err && nev) {
		for (size_t k = 0; k < nev; k++) {
			sels[n].id = ev[k].id;
			sels[n++].labels = ev[k].labels;
			ev[k].labels = (struct gw_labels){ 0 };
		}
		qsort(sels, n, sizeof(*sels), cmp_sel);
	}
	ev_hits_free(ev, nev);

	for (size_t i = 0; i < np && !err; i++) {
		if (parts[i].remote) {
			err = fetch_part(s, &parts[i], lim);
			if (err == -ENOENT) {
				err = 0;
				continue;
			}
		}
		if (!err)
			err = read_partition(s, parts[i].path, sels, n, tier,
					     mint, maxt, lim);
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct sel *x = &sels[i];

		for (size_t k = 0; k < x->nmem && !err; k++) {
			struct memchunk *c = &x->mem[k];

			if (tier == GW_TIER_RAW)
				err = take_raw(s, x, c->data, c->len, mint,
					       maxt, lim);
			else
				err = take_rollups(s, x, tier, c->data, c->len,
						   c->framed, mint, maxt, lim);
		}
		if (!err)
			err = sort_points(x, tier);
	}
	if (!err) {
		size_t k = 0;

		out->s = calloc(n ? n : 1, sizeof(*out->s));
		if (!out->s)
			err = -ENOMEM;
		for (size_t i = 0; !err && i < n; i++) {
			struct sel *x = &sels[i];
			struct gw_series_data *d;

			if (!x->n)
				continue;
			d = &out->s[k++];
			d->labels = x->labels;
			x->labels = (struct gw_labels){ 0 };
			d->tier = tier;
			d->n = x->n;
			d->t = x->t;
			d->v = x->v;
			d->r = x->r;
			x->t = NULL;
			x->v = NULL;
			x->r = NULL;
			x->n = 0;
		}
		out->n = k;
		if (!err && k > 1)
			qsort(out->s, k, sizeof(*out->s), cmp_data);
	}
	for (size_t i = 0; i < n; i++)
		sel_release(&sels[i]);
	free(sels);
	free(gone);
	free(ids);
	free(parts);
	if (err)
		gw_series_set_release(out);
	return err;
}

/*
 * A selection holds series with the lock dropped (series.h): it counts
 * itself in readers, so that series evicted meanwhile are freed only
 * after it (gw_store_grave_free).
 */
static int store_select(void *ctx, const struct gw_matcher *m, size_t nm,
			int64_t mint, int64_t maxt, enum gw_tier tier,
			struct gw_query_limits *lim, struct gw_series_set *out)
{
	struct gw_store *s = ctx;
	int err;

	atomic_fetch_add(&s->readers, 1);
	err = select_locked(ctx, m, nm, mint, maxt, tier, lim, out);
	atomic_fetch_sub(&s->readers, 1);
	return err;
}

void gw_series_set_release(struct gw_series_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++) {
		struct gw_series_data *d = &set->s[i];

		gw_labels_release(&d->labels);
		free(d->t);
		free(d->v);
		if (d->r)
			gw_rollup_free_array(d->r, d->n);
	}
	free(set->s);
	set->s = NULL;
	set->n = 0;
}

void gw_label_set_list_release(struct gw_label_set_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		gw_labels_release(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void gw_string_list_release(struct gw_string_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Series seen in [mint, maxt] (as far as the head knows). */
static bool in_time(const struct gw_series *ser, int64_t mint, int64_t maxt)
{
	const struct head *h = ser->head;

	if (h->first_t != INT64_MIN && h->first_t > maxt)
		return false;
	if (h->last_t != INT64_MIN && h->last_t < mint)
		return false;
	return true;
}

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The ids of the series chosen by series() and label_values(): those any
 * matcher list selects (every series when nsets is 0), ascending, each
 * once.  Called without the lock: the index takes it to read, not to
 * match (series.h), checking lim's deadline and cancel flag (lim may be
 * NULL).
 */
static int chosen_ids(struct gw_store *s, const struct gw_matcher *const *sets,
		      const size_t *nm, size_t nsets,
		      struct gw_query_limits *lim, uint32_t **out, size_t *nout)
{
	struct sel_ctx sc = { s, lim };
	const struct gw_series_select_ops ops = { sel_lock, sel_unlock,
						  sel_check, &sc };
	uint32_t *all = NULL;
	size_t n = 0;
	int err = 0;

	if (nsets <= 1)
		return gw_series_index_select_unlocked(
			s->idx, nsets ? sets[0] : NULL, nsets ? nm[0] : 0, &ops,
			out, nout);
	for (size_t i = 0; i < nsets && !err; i++) {
		uint32_t *one, *nv;
		size_t k;

		err = gw_series_index_select_unlocked(s->idx, sets[i], nm[i],
						      &ops, &one, &k);
		if (err || !k)
			continue;
		nv = realloc(all, (n + k) * sizeof(*nv));
		if (!nv) {
			free(one);
			err = -ENOMEM;
			break;
		}
		all = nv;
		memcpy(all + n, one, k * sizeof(*one));
		n += k;
		free(one);
	}
	if (err) {
		free(all);
		return err;
	}
	if (n > 1) {
		size_t u = 1;

		qsort(all, n, sizeof(*all), cmp_id);
		for (size_t i = 1; i < n; i++)
			if (all[i] != all[u - 1])
				all[u++] = all[i];
		n = u;
	}
	*out = all;
	*nout = n;
	return 0;
}

static int cmp_labels_p(const void *a, const void *b)
{
	return gw_labels_cmp(a, b);
}

/* Series per read hold when series() and label_values() check the head
 * for the time range. */
#define TIME_BATCH 4096

/*
 * The series chosen by series() and label_values() that were seen in
 * [mint, maxt] (*out malloc'd, ascending ids): matched without the lock,
 * then checked against the head a batch per read hold.  A series and its
 * labels never change once added, so the caller reads them without the
 * lock.
 */
static int chosen_series(struct gw_store *s,
			 const struct gw_matcher *const *sets, const size_t *nm,
			 size_t nsets, int64_t mint, int64_t maxt,
			 struct gw_query_limits *lim, struct gw_series ***out,
			 size_t *nout, struct ev_hit **ev, size_t *nev)
{
	struct gw_series **v = NULL;
	uint32_t *ids = NULL;
	size_t n = 0, k = 0, i = 0, ngone = 0;
	int err;

	*out = NULL;
	*nout = 0;
	*ev = NULL;
	*nev = 0;
	err = chosen_ids(s, sets, nm, nsets, lim, &ids, &n);
	if (!err && n) {
		v = malloc(n * sizeof(*v));
		if (!v)
			err = -ENOMEM;
	}
	while (!err && i < n) {
		size_t end = n - i < TIME_BATCH ? n : i + TIME_BATCH;

		pthread_rwlock_rdlock(&s->lock);
		for (; i < end; i++) {
			struct gw_series *ser =
				gw_series_index_get(s->idx, ids[i]);

			/* NULL: evicted; its key from index.db below, if
			 * it lasted into the range (ids[] is reused). */
			if (!ser && evicted_since(s, ids[i], mint))
				ids[ngone++] = ids[i];
			else if (ser && in_time(ser, mint, maxt))
				v[k++] = ser;
		}
		pthread_rwlock_unlock(&s->lock);
		err = check_limits(lim, 0);
	}
	if (!err && ngone)
		err = evicted_read(s, ids, ngone, sets, nm, nsets, lim, ev,
				   nev);
	free(ids);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nout = k;
	return 0;
}

static int store_series(void *ctx, const struct gw_matcher *const *sets,
			const size_t *nm, size_t nsets, int64_t mint,
			int64_t maxt, struct gw_query_limits *lim,
			struct gw_label_set_list *out)
{
	struct gw_store *s = ctx;
	struct gw_series **ser = NULL;
	struct ev_hit *ev = NULL;
	size_t n = 0, k = 0, nev = 0;
	int err;

	out->v = NULL;
	out->n = 0;
	atomic_fetch_add(&s->readers, 1);
	err = chosen_series(s, sets, nm, nsets, mint, maxt, lim, &ser, &n, &ev,
			    &nev);
	if (!err) {
		out->v = calloc(n + nev ? n + nev : 1, sizeof(*out->v));
		if (!out->v)
			err = -ENOMEM;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = gw_labels_dup(&out->v[k++], &ser[i]->labels);
	atomic_fetch_sub(&s->readers, 1);
	for (size_t i = 0; i < nev && !err; i++) {
		out->v[k++] = ev[i].labels;
		ev[i].labels = (struct gw_labels){ 0 };
	}
	ev_hits_free(ev, nev);
	free(ser);
	out->n = k;
	if (err) {
		gw_label_set_list_release(out);
		return err;
	}
	qsort(out->v, k, sizeof(*out->v), cmp_labels_p);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int store_label_values(void *ctx, const char *name,
			      const struct gw_matcher *const *sets,
			      const size_t *nm, size_t nsets, int64_t mint,
			      int64_t maxt, struct gw_query_limits *lim,
			      struct gw_string_list *out)
{
	struct gw_store *s = ctx;
	struct gw_series **sel = NULL;
	struct ev_hit *ev = NULL;
	size_t cap = 0, k = 0, nsel = 0, nev = 0;
	char **v = NULL;
	int err;

	out->v = NULL;
	out->n = 0;
	atomic_fetch_add(&s->readers, 1);
	err = chosen_series(s, sets, nm, nsets, mint, maxt, lim, &sel, &nsel,
			    &ev, &nev);
	for (size_t i = 0; i < nsel + nev && !err; i++) {
		const struct gw_labels *l =
			i < nsel ? &sel[i]->labels : &ev[i - nsel].labels;

		for (size_t j = 0; j < l->n && !err; j++) {
			const char *x = name ? l->v[j].value : l->v[j].name;

			if (name && strcmp(l->v[j].name, name) != 0)
				continue;
			if (k == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				char **nv = realloc(v, ncap * sizeof(*nv));

				if (!nv) {
					err = -ENOMEM;
					break;
				}
				v = nv;
				cap = ncap;
			}
			v[k] = strdup(x);
			if (!v[k])
				err = -ENOMEM;
			else
				k++;
		}
	}
	atomic_fetch_sub(&s->readers, 1);
	ev_hits_free(ev, nev);
	free(sel);
	if (!err && k > 1) {
		size_t u = 1;

		qsort(v, k, sizeof(*v), cmp_str);
		for (size_t i = 1; i < k; i++) {
			if (strcmp(v[i], v[u - 1]) == 0)
				free(v[i]);
			else
				v[u++] = v[i];
		}
		k = u;
	}
	out->v = v;
	out->n = k;
	if (err)
		gw_string_list_release(out);
	return err;
}

/*
 * Where raw samples start: retention and the disk budget drop whole days,
 * oldest first, so raw is complete from the oldest raw partition's day on.
 * Only a rollup partition older than that means the rollups know more;
 * otherwise (a young store, rollups dropped as well, nothing on disk yet)
 * raw holds everything there is: INT64_MIN.  Parts are sorted by day.
 */
static int64_t raw_from(struct gw_store *s)
{
	int64_t raw = INT64_MAX, rollup = INT64_MAX;

	pthread_rwlock_rdlock(&s->lock);
	for (size_t i = 0; i < s->nparts; i++) {
		const struct part *p = &s->parts[i];

		if (p->tier == GW_TIER_RAW && raw == INT64_MAX)
			raw = p->day;
		else if (p->tier != GW_TIER_RAW && rollup == INT64_MAX)
			rollup = p->day;
	}
	pthread_rwlock_unlock(&s->lock);
	if (rollup == INT64_MAX || rollup >= raw)
		return INT64_MIN;
	return raw;
}

static enum gw_tier store_pick_tier(void *ctx, int64_t mint, int64_t maxt,
				    int64_t step_ms)
{
	struct gw_store *s = ctx;
	int64_t now = gw_store_now(s);

	(void)maxt;
	if (mint >= raw_from(s))
		return GW_TIER_RAW;
	for (int t = GW_TIERS - 1; t > GW_TIER_RAW; t--) {
		if (gw_tier_width((enum gw_tier)t) > step_ms)
			continue;
		if (mint >= now - s->o.retention_ms[t])
			return (enum gw_tier)t;
	}
	/* Nothing fine enough covers mint: the finest tier that does. */
	for (int t = GW_TIER_1M; t < GW_TIERS; t++)
		if (mint >= now - s->o.retention_ms[t])
			return (enum gw_tier)t;
	return GW_TIER_1H;
}

void gw_store_init_queryable(struct gw_store *s)
{
	s->q.ctx = s;
	s->q.pick_tier = store_pick_tier;
	s->q.select = store_select;
	s->q.series = store_series;
	s->q.label_values = store_label_values;
}

const struct gw_queryable *gw_store_queryable(struct gw_store *s)
{
	return &s->q;
}

int gw_store_partitions(struct gw_store *s, struct gw_store_partition **out,
			size_t *n)
{
	struct gw_store_partition *v;

	pthread_rwlock_rdlock(&s->lock);
	v = calloc(s->nparts ? s->nparts : 1, sizeof(*v));
	if (!v) {
		pthread_rwlock_unlock(&s->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nparts; i++) {
		v[i].tier = s->parts[i].tier;
		gw_store_day_name(s->parts[i].day, v[i].day);
		v[i].bytes = s->parts[i].bytes;
		v[i].closed = s->parts[i].closed;
		v[i].archived = s->parts[i].archived;
		v[i].local = !s->parts[i].remote;
	}
	*n = s->nparts;
	pthread_rwlock_unlock(&s->lock);
	*out = v;
	return 0;
}

int gw_store_export(const char *dir, const char *partition, const char *path,
		    char *err, size_t errlen)
{
	char src[PATH_MAX + 64], tier[8] = "", day[11] = "";
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	bool ok_tier = false;
	struct tm tm = { 0 };
	const char *end;
	int rc;

	if (sscanf(partition, "%7[^/]/%10s", tier, day) != 2)
		goto bad;
	for (int t = 0; t < GW_TIERS; t++)
		ok_tier |= strcmp(tier, gw_store_tier_dir[t]) == 0;
	end = strptime(day, "%Y-%m-%d", &tm);
	if (!ok_tier || !end || *end)
		goto bad;
	snprintf(src, sizeof(src), "%s/%s/%s.db", dir, tier, day);
	if (access(src, R_OK) != 0) {
		snprintf(err, errlen, "no partition %s in %s (%s)", partition,
			 dir, strerror(errno));
		return -ENOENT;
	}
	if (access(path, F_OK) == 0) {
		snprintf(err, errlen, "%s exists; not overwriting it", path);
		return -EEXIST;
	}
	if (gw_store_open_db(src, false, true, &db) != 0 ||
	    gw_store_check_db(db) != 0) {
		sqlite3_close(db);
		snprintf(err, errlen, "%s fails its integrity check", src);
		return -EBADMSG;
	}
	rc = sqlite3_prepare_v2(db, "VACUUM INTO ?", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE)
		snprintf(err, errlen, "exporting %s to %s: %s", src, path,
			 sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc == SQLITE_DONE ? 0 : -EIO;
bad:
	snprintf(err, errlen,
		 "bad partition name \"%s\": expected "
		 "raw|1m|1h/YYYY-MM-DD",
		 partition);
	return -EINVAL;
}

int gw_store_check_file(const char *path)
{
	sqlite3 *db;
	int err;

	if (access(path, R_OK) != 0)
		return -errno;
	err = gw_store_open_db(path, false, true, &db);
	if (!err)
		err = gw_store_check_db(db);
	sqlite3_close(db);
	return err == -EIO ? -EBADMSG : err;
}

int gw_store_archived_names(const char *dir, char (**out)[32], size_t *n)
{
	char path[PATH_MAX + 16];
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	size_t cap = 0;
	int err = 0;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "file:%s/index.db?mode=ro", dir);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
			    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT name FROM archived ORDER BY name",
			       -1, &st, NULL) != SQLITE_OK)
		goto out;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if (!name || strlen(name) >= 32)
			continue;
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			char(*v)[32] = realloc(*out, nc * sizeof(**out));

			if (!v) {
				err = -ENOMEM;
				break;
			}
			*out = v;
			cap = nc;
		}
		memcpy((*out)[(*n)++], name, strlen(name) + 1);
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}
