/* SPDX-License-Identifier: MIT */
/*
 * close.c - a day's partition closed straight from its hour blocks.
 *
 * An open partition holds each cut hour as zstd blocks of that hour's
 * chunks in series order (`hblocks`) and the hour's keys (`hkeys`).
 * Closing it reads the hours side by side, one cursor an hour, each
 * holding one decompressed block: the smallest series among the cursors
 * is the next to write, its chunks of every hour are merged as
 * gw_store_compact_db merges them (one chunk when it had one), and it goes
 * into the day's blocks (`zblocks`, gw_zwriter).  The hours' keys become
 * the packed list (meta 'series_zstd').
 *
 * The result is what unpacking the hours into rows, merging each series'
 * rows and packing them again gives (store_maint.c keeps that path for
 * partitions from before the hour blocks), without writing every chunk
 * into SQLite and reading it back: under churn that was two fifths of
 * the store's CPU for a day (bench/README.md, "churn").  Memory: a block
 * an hour (64 KiB) and the day's keys.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/bits.h"
#include "common/log.h"

/* hblocks are keyed hour << GW_HOUR_SHIFT: hours 0-23 of the day */
#define HOURS 24

/* One hour's blocks, read a chunk at a time. */
struct cursor {
	sqlite3_stmt *st;
	uint8_t *raw; /* the block being read, decompressed */
	struct gw_zblock_it it;
	struct gw_zchunk c; /* the next chunk, when has */
	bool has, spent, done;
};

/* Brings the hour's next chunk into h->c, from its block or the next
 * one.  A damaged block is skipped and counted, as unpacking it into rows
 * skips it (with the chunks it gave before the damage). */
static int cursor_fill(struct cursor *h, uint64_t *damaged)
{
	while (!h->has && !h->done) {
		int r;

		if (h->raw && !h->spent) {
			r = gw_zblock_next(&h->it, &h->c);
			if (r == 1) {
				h->has = true;
				break;
			}
			if (r < 0)
				gw_store_hour_damaged(damaged);
			h->spent = true;
			continue;
		}
		free(h->raw);
		h->raw = NULL;
		r = sqlite3_step(h->st);
		if (r == SQLITE_DONE) {
			h->done = true;
			break;
		}
		if (r != SQLITE_ROW)
			return gw_store_sql_err(sqlite3_db_handle(h->st), r,
						"close day");
		r = gw_zblock_open(&h->it, &h->raw,
				   sqlite3_column_blob(h->st, 0),
				   (size_t)sqlite3_column_bytes(h->st, 0));
		if (r == -EBADMSG) {
			gw_store_hour_damaged(damaged);
			continue;
		}
		if (r)
			return r;
		h->spent = false;
	}
	return 0;
}

/* Moves past h->c within its block; the block stays until the next
 * cursor_fill, so that the chunks taken from it stay valid. */
static void cursor_step(struct cursor *h, uint64_t *damaged)
{
	int r = gw_zblock_next(&h->it, &h->c);

	h->has = r == 1;
	if (r < 0)
		gw_store_hour_damaged(damaged);
	if (r != 1)
		h->spent = true;
}

/* The merged chunks of one series before they go into the day's blocks:
 * data in buf, the rest in v. */
struct merged {
	struct gw_buf buf;
	struct gw_zchunk *v;
	size_t n, cap;
};

static int merged_out(void *ctx, int64_t t_min, int64_t t_max, size_t n,
		      const void *data, size_t len)
{
	struct merged *m = ctx;

	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 16;
		struct gw_zchunk *v = realloc(m->v, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = nc;
	}
	/* data is set once the series is complete: buf may move */
	m->v[m->n++] =
		(struct gw_zchunk){ 0, (uint32_t)n, t_min, t_max, NULL, len };
	gw_buf_put(&m->buf, data, len);
	return gw_buf_error(&m->buf);
}

struct closer {
	struct gw_zwriter w;
	struct gw_points p;
	struct merged m;
	struct gw_zchunk *refs; /* the chunks of the series being written */
	size_t nrefs, caprefs;
	bool rollup;
};

static int add_ref(struct closer *cl, const struct gw_zchunk *c)
{
	if (cl->nrefs == cl->caprefs) {
		size_t nc = cl->caprefs ? cl->caprefs * 2 : 64;
		struct gw_zchunk *v = realloc(cl->refs, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		cl->refs = v;
		cl->caprefs = nc;
	}
	cl->refs[cl->nrefs++] = *c;
	return 0;
}

/* One series: its chunks merged into as few as the codec allows, or as
 * they are where one does not decode or the merge fails (as
 * gw_store_compact_db leaves such a series). */
static int write_series(struct closer *cl)
{
	size_t off = 0;
	int err = 0;

	if (cl->nrefs > 1) {
		gw_points_clear(&cl->p, cl->rollup);
		for (size_t i = 0; i < cl->nrefs && !err; i++)
			err = gw_points_load(&cl->p, cl->rollup,
					     cl->refs[i].data, cl->refs[i].len);
		gw_buf_reset(&cl->m.buf);
		cl->m.n = 0;
		if (!err && cl->p.n)
			err = gw_points_store(&cl->p, cl->rollup, merged_out,
					      &cl->m);
		if (err == -ENOMEM)
			return err;
		if (!err && cl->p.n) {
			for (size_t i = 0; i < cl->m.n && !err; i++) {
				struct gw_zchunk c = cl->m.v[i];

				c.series = cl->refs[0].series;
				c.data = (const uint8_t *)cl->m.buf.p + off;
				off += c.len;
				err = gw_zwriter_add(&cl->w, &c);
			}
			return err;
		}
		err = 0;
	}
	for (size_t i = 0; i < cl->nrefs && !err; i++)
		err = gw_zwriter_add(&cl->w, &cl->refs[i]);
	return err;
}

/* ---- the keys ---- */

/* The hours' keys, the first of each id (as INSERT OR IGNORE took them),
 * as the packed list in meta. */
static int write_keys(sqlite3 *db, uint64_t *damaged)
{
	struct gw_keyset k;
	sqlite3_stmt *st = NULL;
	void *z = NULL;
	size_t zlen = 0;
	int err = 0, rc;

	gw_keyset_init(&k);
	rc = sqlite3_prepare_v2(db, "SELECT data FROM hkeys", -1, &st, NULL);
	if (rc != SQLITE_OK)
		err = gw_store_sql_err(db, rc, "close day");
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		err = gw_store_each_packed(sqlite3_column_blob(st, 0),
					   (size_t)sqlite3_column_bytes(st, 0),
					   1u << 30, gw_keyset_add, &k);
		if (err == -EBADMSG) {
			gw_store_hour_damaged(damaged);
			err = 0;
		}
	}
	if (!err && rc != SQLITE_DONE)
		err = gw_store_sql_err(db, rc, "close day");
	sqlite3_finalize(st);
	st = NULL;
	if (!err)
		err = gw_keyset_pack(&k, &z, &zlen);
	if (!err && z) {
		rc = sqlite3_prepare_v2(db,
					"INSERT OR REPLACE INTO meta(k, v) "
					"VALUES ('series_zstd', ?)",
					-1, &st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_blob(st, 1, z, (int)zlen, SQLITE_STATIC);
			rc = sqlite3_step(st);
		}
		if (rc != SQLITE_DONE)
			err = gw_store_sql_err(db, rc, "close day");
		sqlite3_finalize(st);
	}
	free(z);
	gw_keyset_release(&k);
	return err;
}

/* ---- the day ---- */

/* Whether the partition holds its day as hour blocks only: both tables
 * there (the statement names them, so it fails without either), every
 * block keyed an hour of the day, no rows in `chunks` or `series`. */
static bool hours_only(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	bool yes = sqlite3_prepare_v2(db,
				      "SELECT (SELECT count(*) FROM hblocks "
				      "WHERE id < 0 OR id >= ?1) + "
				      "EXISTS(SELECT 1 FROM hkeys) * 0 + "
				      "EXISTS(SELECT 1 FROM chunks) + "
				      "EXISTS(SELECT 1 FROM series)",
				      -1, &st, NULL) == SQLITE_OK;

	if (yes) {
		sqlite3_bind_int64(st, 1, (int64_t)HOURS << GW_HOUR_SHIFT);
		yes = sqlite3_step(st) == SQLITE_ROW &&
		      sqlite3_column_int64(st, 0) == 0;
	}
	sqlite3_finalize(st);
	return yes;
}

int gw_store_close_hours(sqlite3 *db, enum gw_tier tier, uint64_t *damaged)
{
	struct cursor h[HOURS] = { 0 };
	struct closer cl = { .rollup = tier != GW_TIER_RAW };
	int err = 0, rc = SQLITE_OK;

	if (!hours_only(db))
		return -EAGAIN;
	err = write_keys(db, damaged);
	if (err)
		return err;
	for (int i = 0; i < HOURS && rc == SQLITE_OK; i++) {
		rc = sqlite3_prepare_v2(db,
					"SELECT data FROM hblocks WHERE id >= "
					"?1 AND id < ?2 ORDER BY id",
					-1, &h[i].st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(h[i].st, 1,
					   (int64_t)i << GW_HOUR_SHIFT);
			sqlite3_bind_int64(h[i].st, 2,
					   (int64_t)(i + 1) << GW_HOUR_SHIFT);
		}
	}
	if (rc != SQLITE_OK)
		err = gw_store_sql_err(db, rc, "close day");
	if (!err)
		err = gw_store_exec(db,
				    "CREATE TABLE zblocks(id INTEGER PRIMARY "
				    "KEY, t_min INTEGER NOT NULL, t_max "
				    "INTEGER NOT NULL, n INTEGER NOT NULL, "
				    "data BLOB NOT NULL)");
	if (!err)
		err = gw_zwriter_init(&cl.w, db, "zblocks", 0, false);
	gw_buf_init(&cl.m.buf, 1u << 30);
	while (!err) {
		uint32_t s = 0;
		bool any = false;

		for (int i = 0; i < HOURS && !err; i++) {
			err = cursor_fill(&h[i], damaged);
			if (!err && h[i].has && (!any || h[i].c.series < s)) {
				s = h[i].c.series;
				any = true;
			}
		}
		if (err || !any)
			break;
		/* Its chunks, hour by hour: a series' chunks of one hour
		 * are in one block, in time order. */
		cl.nrefs = 0;
		for (int i = 0; i < HOURS && !err; i++)
			while (!err && h[i].has && h[i].c.series == s) {
				err = add_ref(&cl, &h[i].c);
				cursor_step(&h[i], damaged);
			}
		if (!err)
			err = write_series(&cl);
	}
	if (!err)
		err = gw_zwriter_flush(&cl.w);
	for (int i = 0; i < HOURS; i++) {
		sqlite3_finalize(h[i].st);
		free(h[i].raw);
	}
	gw_zwriter_release(&cl.w);
	gw_points_release(&cl.p, cl.rollup);
	gw_buf_release(&cl.m.buf);
	free(cl.m.v);
	free(cl.refs);
	if (!err)
		err = gw_store_exec(db,
				    "DROP TABLE chunks; DROP TABLE hblocks; "
				    "DROP TABLE hkeys;");
	return err;
}
