/* SPDX-License-Identifier: MIT */
/*
 * compact.c - when a day is closed, each series' chunks in a partition are
 * merged into as few chunks as the codec allows (raw: up to 65,535 samples
 * each; rollups: the whole day in one).  Larger chunks spread the per-chunk
 * header and SQLite's per-row cost over more samples, and a closed day is
 * read far more often than it was written.  A series whose chunks do not
 * all decode is left exactly as it was.
 *
 * The partition's own copy of its series keys (what makes a closed day
 * self-contained) is then packed: the series table becomes one
 * zstd-compressed list in meta ('series_zstd'), a tenth of its size for
 * the keys of churning processes, which differ in a pid or two.
 * gw_store_each_series() reads both forms.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "common/bits.h"
#include "common/log.h"

static int points_grow(struct gw_points *p, bool rollup, size_t need)
{
	size_t ncap = p->cap ? p->cap : 4096;

	if (need <= p->cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (rollup) {
		struct gw_rollup *r = realloc(p->r, ncap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		p->r = r;
	} else {
		int64_t *t = realloc(p->t, ncap * sizeof(*t));
		double *v;

		if (!t)
			return -ENOMEM;
		p->t = t;
		v = realloc(p->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->v = v;
	}
	p->cap = ncap;
	return 0;
}

void gw_points_clear(struct gw_points *p, bool rollup)
{
	if (rollup)
		for (size_t i = 0; i < p->n; i++)
			gw_rollup_release(&p->r[i]);
	p->n = 0;
}

void gw_points_release(struct gw_points *p, bool rollup)
{
	gw_points_clear(p, rollup);
	free(p->t);
	free(p->v);
	free(p->r);
	memset(p, 0, sizeof(*p));
}

int gw_points_load(struct gw_points *p, bool rollup, const uint8_t *data,
		   size_t len)
{
	int err;

	if (rollup) {
		struct gw_rollup *r;
		size_t k;

		err = gw_rollup_decode(data, len, &r, &k);
		if (!err)
			err = points_grow(p, true, p->n + k);
		if (err) {
			if (err != -EBADMSG)
				gw_rollup_free_array(r, k);
			return err;
		}
		memcpy(p->r + p->n, r, k * sizeof(*r));
		p->n += k;
		free(r);
	} else {
		struct gw_chunk_dec d;
		int64_t t;
		double v;
		int got = 0;

		err = gw_chunk_dec_init(&d, data, len);
		if (!err)
			err = points_grow(p, false,
					  p->n + gw_chunk_dec_count(&d));
		while (!err && (got = gw_chunk_next(&d, &t, &v)) == 1) {
			p->t[p->n] = t;
			p->v[p->n++] = v;
		}
		if (!err && got < 0)
			err = -EBADMSG;
	}
	return err;
}

/* Reads every chunk of one series; -EBADMSG if one does not decode. */
static int load_series(sqlite3_stmt *sel, int64_t id, bool rollup,
		       struct gw_points *p, size_t *nchunks)
{
	int rc, err = 0;

	*nchunks = 0;
	sqlite3_reset(sel);
	sqlite3_bind_int64(sel, 1, id);
	while (!err && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		(*nchunks)++;
		err = gw_points_load(p, rollup, sqlite3_column_blob(sel, 0),
				     (size_t)sqlite3_column_bytes(sel, 0));
	}
	return err;
}

static int put(void *ctx, int64_t t_min, int64_t t_max, size_t n,
	       const void *data, size_t len)
{
	sqlite3_stmt *ins = ctx;
	int rc;

	/* (the series, parameter 1, is bound by the caller) */
	sqlite3_reset(ins);
	sqlite3_bind_int64(ins, 2, t_min);
	sqlite3_bind_int64(ins, 3, t_max);
	sqlite3_bind_int64(ins, 4, (sqlite3_int64)n);
	sqlite3_bind_blob(ins, 5, data, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(ins);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int gw_points_store(const struct gw_points *p, bool rollup,
		    int (*out)(void *ctx, int64_t t_min, int64_t t_max,
			       size_t n, const void *data, size_t len),
		    void *ctx)
{
	struct gw_chunk_enc e;
	size_t from = 0;
	int err = 0;

	if (rollup) {
		struct gw_buf buf;

		gw_buf_init(&buf, 64u << 20);
		err = gw_rollup_encode(p->r, p->n, &buf);
		if (!err)
			err = out(ctx, p->r[0].t, p->r[p->n - 1].t, p->n, buf.p,
				  buf.len);
		gw_buf_release(&buf);
		return err;
	}
	gw_chunk_enc_init(&e);
	for (size_t i = 0; i <= p->n && !err; i++) {
		int a = i < p->n ? gw_chunk_append(&e, p->t[i], p->v[i])
				 : -ENOSPC;

		if (a == -ENOSPC && gw_chunk_count(&e)) {
			size_t len;
			const uint8_t *b = gw_chunk_bytes(&e, &len);

			err = !b ? -ENOMEM
				 : out(ctx, p->t[from], p->t[i - 1],
				       gw_chunk_count(&e), b, len);
			gw_chunk_enc_reset(&e);
			from = i;
			if (!err && i < p->n)
				a = gw_chunk_append(&e, p->t[i], p->v[i]);
			else
				a = 0;
		}
		if (!err && a)
			err = a;
	}
	gw_chunk_enc_release(&e);
	return err;
}

int gw_store_compact_db(sqlite3 *db, enum gw_tier tier)
{
	sqlite3_stmt *ids = NULL, *sel = NULL, *del = NULL, *ins = NULL;
	bool rollup = tier != GW_TIER_RAW;
	struct gw_points p = { 0 };
	uint64_t merged = 0;
	int err = 0, rc;

	rc = sqlite3_prepare_v2(db,
				"SELECT series FROM chunks GROUP BY series "
				"HAVING count(*) > 1",
				-1, &ids, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"SELECT data FROM chunks WHERE "
					"series = ? ORDER BY t_min",
					-1, &sel, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"DELETE FROM chunks WHERE series = ?",
					-1, &del, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"INSERT INTO chunks(series, t_min, "
					"t_max, n, data) VALUES (?,?,?,?,?)",
					-1, &ins, NULL);
	if (rc != SQLITE_OK || sqlite3_exec(db, "BEGIN", NULL, NULL, NULL)) {
		err = -EIO;
		goto out;
	}
	while (!err && sqlite3_step(ids) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(ids, 0);
		size_t nchunks;
		int r;

		gw_points_clear(&p, rollup);
		r = load_series(sel, id, rollup, &p, &nchunks);
		if (r == -EBADMSG)
			continue; /* leave a damaged series untouched */
		if (r) {
			err = r;
			break;
		}
		if (!p.n)
			continue;
		/* One savepoint per series: a series that cannot be merged
		 * (a rollup column too long, ...) stays as it was. */
		if (sqlite3_exec(db, "SAVEPOINT one", NULL, NULL, NULL)) {
			err = -EIO;
			break;
		}
		sqlite3_reset(del);
		sqlite3_bind_int64(del, 1, id);
		r = sqlite3_step(del) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_reset(ins);
		sqlite3_bind_int64(ins, 1, id);
		if (!r)
			r = gw_points_store(&p, rollup, put, ins);
		if (r) {
			(void)sqlite3_exec(db, "ROLLBACK TO one; RELEASE one",
					   NULL, NULL, NULL);
			if (r == -ENOMEM) {
				err = r;
				break;
			}
			continue;
		}
		(void)sqlite3_exec(db, "RELEASE one", NULL, NULL, NULL);
		merged += nchunks;
	}
	if (err)
		(void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	else if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL))
		err = -EIO;
	if (!err)
		gw_dbg("store: compacted %llu chunks",
		       (unsigned long long)merged);
out:
	gw_points_release(&p, rollup);
	sqlite3_finalize(ids);
	sqlite3_finalize(sel);
	sqlite3_finalize(del);
	sqlite3_finalize(ins);
	if (err)
		gw_warn("store: compacting a closed partition failed (%s); it "
			"stays as written",
			strerror(-err));
	return err;
}

/* ---- the series keys of a closed partition, packed ---- */

/* A packed list: per series varint(id), key, NUL; sorted by key, so that
 * neighbours share their prefixes and zstd finds them. */
#define PACK_LEVEL 3
#define PACK_MAX   (1u << 30)

/*
 * The series table as one packed list (*z NULL when it is empty).  Format
 * 2 (written): 0x00 0x02, then per series, sorted by key: zigzag
 * varint(id - previous id), varint(bytes shared with the previous key),
 * the rest of the key and a NUL.  Keys of like series share all but a few
 * bytes and ids run in steps, so what is left for zstd is the changing
 * digits: under churn 6 KB instead of 350 KB for 100,000 keys.  Format 1
 * (read; no id is 0, so it never starts with a 0x00 byte): varint(id),
 * key, NUL.
 */
#define KEY_MAX (1u << 20)

void gw_keylist_init(struct gw_keylist *k)
{
	memset(k, 0, sizeof(*k));
	gw_buf_init(&k->raw, PACK_MAX);
	gw_buf_put(&k->raw, "\0\2", 2); /* front-coded */
}

void gw_keylist_release(struct gw_keylist *k)
{
	gw_buf_release(&k->raw);
	free(k->prev);
	memset(k, 0, sizeof(*k));
}

int gw_keylist_add(struct gw_keylist *k, int64_t id, const char *key)
{
	size_t len = strlen(key), shared = 0;

	if (len >= KEY_MAX)
		return -E2BIG;
	if (!k->prev && !(k->prev = malloc(KEY_MAX)))
		return -ENOMEM;
	while (shared < k->prevlen && shared < len &&
	       k->prev[shared] == key[shared])
		shared++;
	gw_varint_put(&k->raw, gw_zigzag((uint64_t)(id - k->previd)));
	gw_varint_put(&k->raw, shared);
	gw_buf_put(&k->raw, key + shared, len - shared + 1);
	memcpy(k->prev, key, len);
	k->prevlen = len;
	k->previd = id;
	k->n++;
	return gw_buf_error(&k->raw);
}

int gw_keylist_pack(struct gw_keylist *k, void **z, size_t *zlen)
{
	ZSTD_CCtx *cctx;
	int err = gw_buf_error(&k->raw);

	*z = NULL;
	*zlen = 0;
	if (err || !k->n)
		return err;
	*z = malloc(ZSTD_compressBound(k->raw.len));
	if (!*z)
		return -ENOMEM;
	/* With zstd's checksum: a damaged list is found, not misread. */
	cctx = ZSTD_createCCtx();
	*zlen = cctx &&
				!ZSTD_isError(ZSTD_CCtx_setParameter(
					cctx, ZSTD_c_compressionLevel,
					PACK_LEVEL)) &&
				!ZSTD_isError(ZSTD_CCtx_setParameter(
					cctx, ZSTD_c_checksumFlag, 1))
			? ZSTD_compress2(cctx, *z,
					 ZSTD_compressBound(k->raw.len),
					 k->raw.p, k->raw.len)
			: (size_t)-1;
	ZSTD_freeCCtx(cctx);
	if (ZSTD_isError(*zlen)) {
		free(*z);
		*z = NULL;
		*zlen = 0;
		return -EIO;
	}
	return 0;
}

static int pack_keys(sqlite3 *db, void **z, size_t *zlen)
{
	struct gw_keylist k;
	sqlite3_stmt *st = NULL;
	int err = 0, rc;

	*z = NULL;
	*zlen = 0;
	rc = sqlite3_prepare_v2(db, "SELECT id, key FROM series ORDER BY key",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(db, rc, "pack series");
	gw_keylist_init(&k);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 1);
		int64_t id = sqlite3_column_int64(st, 0);

		if (!key || id <= 0 || id >= UINT32_MAX)
			continue; /* not a series: never written so */
		err = gw_keylist_add(&k, id, key);
	}
	sqlite3_finalize(st);
	/* A key too long: the rows stay as they are. */
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	if (!err)
		err = gw_keylist_pack(&k, z, zlen);
	gw_keylist_release(&k);
	return err;
}

int gw_store_put_packed(sqlite3 *db, const char *sql, const void *z,
			size_t zlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_blob(st, 1, z, (int)zlen, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : gw_store_sql_err(db, rc, "pack series");
}

/* Stores a packed list with sql (one blob parameter), then empties the
 * series table, in the caller's transaction. */
static int pack_into(sqlite3 *db, const char *sql)
{
	void *z;
	size_t zlen;
	int err;

	err = pack_keys(db, &z, &zlen);
	if (err || !z)
		return err;
	err = gw_store_put_packed(db, sql, z, zlen);
	if (!err)
		err = gw_store_exec(db, "DELETE FROM series");
	free(z);
	return err;
}

int gw_store_pack_series(sqlite3 *db)
{
	return pack_into(db, "INSERT OR REPLACE INTO meta(k, v) VALUES "
			     "('series_zstd', ?)");
}

int gw_store_pack_index(sqlite3 *db)
{
	int err = gw_store_exec(db, "BEGIN");

	if (err)
		return err;
	err = pack_into(db, "INSERT INTO series_packed(data) VALUES (?)");
	if (err) {
		(void)gw_store_exec(db, "ROLLBACK");
		return err;
	}
	return gw_store_exec(db, "COMMIT");
}

/* What gw_store_unpack_hours puts back as rows. */
static int row_key(void *ctx, int64_t id, const char *key)
{
	sqlite3_stmt *ins = ctx;

	sqlite3_reset(ins);
	sqlite3_bind_int64(ins, 1, id);
	sqlite3_bind_text(ins, 2, key, -1, SQLITE_STATIC);
	return sqlite3_step(ins) == SQLITE_DONE ? 0 : -EIO;
}

void gw_keyset_init(struct gw_keyset *k)
{
	memset(k, 0, sizeof(*k));
	gw_buf_init(&k->text, PACK_MAX);
}

void gw_keyset_release(struct gw_keyset *k)
{
	gw_buf_release(&k->text);
	free(k->v);
	memset(k, 0, sizeof(*k));
}

int gw_keyset_add(void *ctx, int64_t id, const char *key)
{
	struct gw_keyset *k = ctx;

	/* what packing rows skips: never written so */
	if (!key || id <= 0 || id >= UINT32_MAX)
		return 0;
	if (k->n == k->cap) {
		size_t nc = k->cap ? k->cap * 2 : 1024;
		struct gw_keyset_key *v = realloc(k->v, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = nc;
	}
	k->v[k->n] = (struct gw_keyset_key){ id, k->n, { .off = k->text.len } };
	k->n++;
	gw_buf_put(&k->text, key, strlen(key) + 1);
	return gw_buf_error(&k->text);
}

static int key_by_id(const void *a, const void *b)
{
	const struct gw_keyset_key *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* SQLite's BINARY order of the keys, then the id. */
static int key_by_text(const void *a, const void *b)
{
	const struct gw_keyset_key *x = a, *y = b;
	int c = strcmp(x->s, y->s);

	if (c)
		return c;
	return (x->id > y->id) - (x->id < y->id);
}

int gw_keyset_pack(struct gw_keyset *k, void **z, size_t *zlen)
{
	struct gw_keylist kl;
	size_t n = 0;
	int err = gw_buf_error(&k->text);

	*z = NULL;
	*zlen = 0;
	if (err)
		return err;
	qsort(k->v, k->n, sizeof(*k->v), key_by_id);
	for (size_t i = 0; i < k->n; i++)
		if (!n || k->v[i].id != k->v[n - 1].id) {
			k->v[n] = k->v[i];
			k->v[n].s = k->text.p + k->v[i].off;
			n++;
		}
	k->n = n;
	qsort(k->v, n, sizeof(*k->v), key_by_text);
	gw_keylist_init(&kl);
	for (size_t i = 0; i < n && !err; i++)
		err = gw_keylist_add(&kl, k->v[i].id, k->v[i].s);
	if (!err)
		err = gw_keylist_pack(&kl, z, zlen);
	gw_keylist_release(&kl);
	return err;
}

/*
 * The lists since the last merge, and any rows, become one list: in
 * memory (gw_keyset), as INSERT OR IGNORE into the rows and packing them
 * would (the rows first, then the lists in order; each id's first key).
 */
int gw_store_merge_index(sqlite3 *db)
{
	sqlite3_stmt *sel = NULL, *ins = NULL;
	struct gw_keyset k;
	int64_t from = 0, n = 0;
	void *z = NULL;
	size_t zlen = 0;
	char sql[200];
	int err, rc;

	err = gw_store_exec(db, "BEGIN");
	if (err)
		return err;
	gw_keyset_init(&k);
	rc = sqlite3_prepare_v2(db,
				"SELECT v FROM meta WHERE k = 'packed_merged'",
				-1, &sel, NULL);
	if (rc == SQLITE_OK && sqlite3_step(sel) == SQLITE_ROW)
		from = sqlite3_column_int64(sel, 0);
	sqlite3_finalize(sel);
	sel = NULL;
	rc = sqlite3_prepare_v2(db, "SELECT id, key FROM series", -1, &sel,
				NULL);
	while (rc == SQLITE_OK && !err && sqlite3_step(sel) == SQLITE_ROW)
		err = gw_keyset_add(&k, sqlite3_column_int64(sel, 0),
				    (const char *)sqlite3_column_text(sel, 1));
	sqlite3_finalize(sel);
	sel = NULL;
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"SELECT data FROM series_packed WHERE "
					"seq > ? ORDER BY seq",
					-1, &sel, NULL);
	if (rc != SQLITE_OK)
		err = gw_store_sql_err(db, rc, "merge series lists");
	if (!err)
		sqlite3_bind_int64(sel, 1, from);
	while (!err && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		err = gw_store_each_packed(sqlite3_column_blob(sel, 0),
					   (size_t)sqlite3_column_bytes(sel, 0),
					   PACK_MAX, gw_keyset_add, &k);
		n++;
	}
	sqlite3_finalize(sel);
	/* One list or none: nothing to merge.  A damaged one (checksum)
	 * stays as it is; its keys are read back from the partitions. */
	if (!err && n >= 2)
		err = gw_keyset_pack(&k, &z, &zlen);
	gw_keyset_release(&k);
	if (err || n < 2 || !z) {
		(void)gw_store_exec(db, "ROLLBACK");
		free(z);
		return err == -EBADMSG ? 0 : err;
	}
	snprintf(sql, sizeof(sql),
		 "DELETE FROM series_packed WHERE seq > %lld; DELETE FROM "
		 "series;",
		 (long long)from);
	err = gw_store_exec(db, sql);
	if (!err) {
		rc = sqlite3_prepare_v2(db,
					"INSERT INTO series_packed(data) "
					"VALUES (?)",
					-1, &ins, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_blob(ins, 1, z, (int)zlen, SQLITE_STATIC);
			rc = sqlite3_step(ins);
		}
		if (rc != SQLITE_DONE)
			err = gw_store_sql_err(db, rc, "merge series lists");
		sqlite3_finalize(ins);
	}
	free(z);
	if (!err)
		err = gw_store_exec(db, "INSERT OR REPLACE INTO meta(k, v) "
					"SELECT 'packed_merged', max(seq) FROM "
					"series_packed");
	if (err) {
		(void)gw_store_exec(db, "ROLLBACK");
		return err;
	}
	return gw_store_exec(db, "COMMIT");
}

/* A front-coded list (format 2) in [p, end). */
static int each_fc(const uint8_t *p, const uint8_t *end,
		   int (*fn)(void *ctx, int64_t id, const char *key), void *ctx)
{
	char *key = malloc(KEY_MAX + 1);
	size_t keylen = 0;
	int64_t id = 0;
	int err = 0;

	if (!key)
		return -ENOMEM;
	while (p < end && !err) {
		uint64_t dz, shared;
		const uint8_t *nul;
		size_t rest;

		if (gw_varint_get(&p, end, &dz) ||
		    gw_varint_get(&p, end, &shared) || shared > keylen ||
		    !(nul = memchr(p, '\0', (size_t)(end - p))) ||
		    (rest = (size_t)(nul - p)) > KEY_MAX - shared) {
			err = -EBADMSG;
			break;
		}
		id = (int64_t)((uint64_t)id + gw_unzigzag(dz));
		if (id <= 0 || id >= UINT32_MAX) {
			err = -EBADMSG;
			break;
		}
		memcpy(key + shared, p, rest);
		keylen = (size_t)shared + rest;
		key[keylen] = '\0';
		err = fn(ctx, id, key);
		p = nul + 1;
	}
	free(key);
	return err;
}

int gw_store_each_packed(const void *z, size_t zlen, size_t max,
			 int (*fn)(void *ctx, int64_t id, const char *key),
			 void *ctx)
{
	unsigned long long size = ZSTD_getFrameContentSize(z, zlen);
	const uint8_t *p, *end;
	uint8_t *raw;
	size_t n;
	int err = 0;

	if (size == ZSTD_CONTENTSIZE_ERROR ||
	    size == ZSTD_CONTENTSIZE_UNKNOWN || size > PACK_MAX || size > max)
		return -EBADMSG;
	raw = malloc(size + 1);
	if (!raw)
		return -ENOMEM;
	n = ZSTD_decompress(raw, size, z, zlen);
	if (ZSTD_isError(n) || n != size) {
		free(raw);
		return -EBADMSG;
	}
	raw[n] = '\0';
	if (n >= 2 && raw[0] == 0 && raw[1] == 2)
		err = each_fc(raw + 2, raw + n, fn, ctx);
	else if (n && raw[0] == 0)
		err = -EBADMSG; /* a format to come */
	for (p = raw, end = raw + n; raw[0] != 0 && p < end && !err;) {
		uint64_t id;
		const uint8_t *nul;

		if (gw_varint_get(&p, end, &id) ||
		    !(nul = memchr(p, '\0', (size_t)(end - p)))) {
			err = -EBADMSG;
			break;
		}
		if (id > 0 && id < UINT32_MAX)
			err = fn(ctx, (int64_t)id, (const char *)p);
		p = nul + 1;
	}
	free(raw);
	return err;
}

int gw_store_each_series(sqlite3 *db,
			 int (*fn)(void *ctx, int64_t id, const char *key),
			 void *ctx)
{
	sqlite3_stmt *st;
	int err = 0;

	if (sqlite3_prepare_v2(db, "SELECT id, key FROM series", -1, &st,
			       NULL) != SQLITE_OK)
		return -EBADMSG;
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 1);

		if (key)
			err = fn(ctx, sqlite3_column_int64(st, 0), key);
	}
	sqlite3_finalize(st);
	if (err)
		return err;
	if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = 'series_zstd'",
			       -1, &st, NULL) != SQLITE_OK)
		return -EBADMSG;
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) == SQLITE_BLOB)
		err = gw_store_each_packed(sqlite3_column_blob(st, 0),
					   (size_t)sqlite3_column_bytes(st, 0),
					   PACK_MAX, fn, ctx);
	sqlite3_finalize(st);
	/* An open partition's hours, each with its own list (a partition
	 * from before them has no such table). */
	if (err || sqlite3_prepare_v2(db, "SELECT data FROM hkeys", -1, &st,
				      NULL) != SQLITE_OK)
		return err;
	while (!err && sqlite3_step(st) == SQLITE_ROW)
		err = gw_store_each_packed(sqlite3_column_blob(st, 0),
					   (size_t)sqlite3_column_bytes(st, 0),
					   PACK_MAX, fn, ctx);
	sqlite3_finalize(st);
	return err;
}

/*
 * The chunks of a closed partition (format 2): blocks of whole series,
 * each one zstd frame, in `zblocks(id, t_min, t_max, n, data)` keyed by the
 * last series id of the block, so that the block of series S is the first
 * one with id >= S.  t_min, t_max and n cover the block (the partition's
 * extent and sample count stay one SQL aggregate away).  Inside a frame,
 * per chunk, in (series, t_min) order: varint(series - previous series),
 * zigzag varint(t_min - previous t_min), varint(t_max - t_min), varint(n),
 * varint(len), the chunk's bytes.  One row per chunk cost SQLite about 30
 * bytes, and chunks of neighbouring series share most of their bytes
 * (headers, scales, the values of like processes), which zstd finds only
 * across them: on a day of churning processes the three tiers shrink 4-8x.
 * Format 1 (`packed`, one row per chunk) and open partitions (`chunks`)
 * are still read.
 */
#define ZBLOCK_TARGET (64u << 10) /* uncompressed bytes per block */
/*
 * ... unless the block holds fewer than ZBLOCK_SERIES series, when it
 * grows up to ZBLOCK_MAX (closed days only): a closed day of a GPU's
 * series read at 1 s is ~75 KB a series, and series read at the same
 * instants share their timestamp stream (chunk format 3), which zstd
 * stores once when they are in one block.  The simulator's 8 GPUs, a
 * closed raw day: 10.3 MB at 64 KB, 9.0 MB at 1 MiB, 8.6 MB at 4 MiB
 * (reading a series decompresses its whole block: 1 MiB, about 1 ms).
 */
#define ZBLOCK_SERIES 32
#define ZBLOCK_MAX    (1u << 20)
#define ZBLOCK_LEVEL  6 /* 3 was 1.5-3% larger, no slower to import here */
/* An hour's blocks live until their day closes: level 1 made the open
 * day's files 6% larger than 6 and the churn set's ingest 10% faster at
 * 10,000 series (bench/churn.c -O). */
#define HBLOCK_LEVEL 1

int gw_zwriter_init(struct gw_zwriter *w, sqlite3 *db, const char *table,
		    int64_t base, bool ids)
{
	char sql[160];
	int rc;

	memset(w, 0, sizeof(*w));
	w->base = base;
	w->with_ids = ids;
	/* Closed days: blocks of a few long series grow to ZBLOCK_MAX. */
	w->max = ids ? ZBLOCK_TARGET : ZBLOCK_MAX;
	w->t_min = INT64_MAX;
	w->t_max = INT64_MIN;
	gw_buf_init(&w->raw, PACK_MAX);
	gw_buf_init(&w->ids, PACK_MAX);
	w->cctx = ZSTD_createCCtx();
	if (!w->cctx ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(
		    w->cctx, ZSTD_c_compressionLevel,
		    ids ? HBLOCK_LEVEL : ZBLOCK_LEVEL)) ||
	    ZSTD_isError(
		    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)))
		return -ENOMEM;
	snprintf(sql, sizeof(sql),
		 "INSERT OR REPLACE INTO %s(id, t_min, t_max, n, data%s) "
		 "VALUES (?,?,?,?,?%s)",
		 table, ids ? ", ids" : "", ids ? ",?" : "");
	rc = sqlite3_prepare_v2(db, sql, -1, &w->ins, NULL);
	return rc == SQLITE_OK ? 0 : gw_store_sql_err(db, rc, "pack chunks");
}

void gw_zwriter_release(struct gw_zwriter *w)
{
	sqlite3_finalize(w->ins);
	ZSTD_freeCCtx(w->cctx);
	free(w->z);
	gw_buf_release(&w->raw);
	gw_buf_release(&w->ids);
	memset(w, 0, sizeof(*w));
}

/* The block so far as one row, keyed base + its last series. */
int gw_zwriter_flush(struct gw_zwriter *w)
{
	size_t bound = ZSTD_compressBound(w->raw.len), zlen;
	int rc;

	if (!w->raw.len)
		return 0;
	if (bound > w->zcap) {
		uint8_t *z = realloc(w->z, bound);

		if (!z)
			return -ENOMEM;
		w->z = z;
		w->zcap = bound;
	}
	zlen = ZSTD_compress2(w->cctx, w->z, w->zcap, w->raw.p, w->raw.len);
	if (ZSTD_isError(zlen))
		return -EIO;
	sqlite3_reset(w->ins);
	sqlite3_bind_int64(w->ins, 1, w->base + w->prev_series);
	sqlite3_bind_int64(w->ins, 2, w->t_min);
	sqlite3_bind_int64(w->ins, 3, w->t_max);
	sqlite3_bind_int64(w->ins, 4, w->n);
	sqlite3_bind_blob(w->ins, 5, w->z, (int)zlen, SQLITE_STATIC);
	if (w->with_ids)
		sqlite3_bind_blob(w->ins, 6, w->ids.p, (int)w->ids.len,
				  SQLITE_STATIC);
	rc = sqlite3_step(w->ins);
	if (rc != SQLITE_DONE)
		return gw_store_sql_err(sqlite3_db_handle(w->ins), rc,
					"pack chunks");
	gw_buf_reset(&w->raw);
	gw_buf_reset(&w->ids);
	w->prev_series = 0;
	w->prev_tmin = 0;
	w->t_min = INT64_MAX;
	w->t_max = INT64_MIN;
	w->n = 0;
	w->nser = 0;
	return 0;
}

int gw_zwriter_add(struct gw_zwriter *w, const struct gw_zchunk *c)
{
	int err = 0;

	/* A block ends between series, never inside one. */
	if (c->series != w->prev_series && w->raw.len >= ZBLOCK_TARGET &&
	    (w->nser >= ZBLOCK_SERIES || w->raw.len >= w->max))
		err = gw_zwriter_flush(w);
	if (err)
		return err;
	if (c->series != w->prev_series || !w->raw.len)
		w->nser++;
	if (w->with_ids && c->series != w->prev_series)
		gw_varint_put(&w->ids,
			      (uint64_t)((int64_t)c->series - w->prev_series));
	gw_varint_put(&w->raw, (uint64_t)((int64_t)c->series - w->prev_series));
	gw_varint_put(&w->raw,
		      gw_zigzag((uint64_t)c->t_min - (uint64_t)w->prev_tmin));
	gw_varint_put(&w->raw, (uint64_t)c->t_max - (uint64_t)c->t_min);
	gw_varint_put(&w->raw, (uint64_t)c->n);
	gw_varint_put(&w->raw, c->len);
	gw_buf_put(&w->raw, c->data, c->len);
	w->prev_series = c->series;
	w->prev_tmin = c->t_min;
	if (c->t_min < w->t_min)
		w->t_min = c->t_min;
	if (c->t_max > w->t_max)
		w->t_max = c->t_max;
	w->n += c->n;
	return gw_buf_error(&w->raw) ? gw_buf_error(&w->raw)
				     : gw_buf_error(&w->ids);
}

int gw_store_pack_chunks(sqlite3 *db)
{
	struct gw_zwriter w;
	sqlite3_stmt *sel = NULL;
	int err, rc;

	err = gw_store_exec(db,
			    "CREATE TABLE zblocks(id INTEGER PRIMARY KEY,"
			    " t_min INTEGER NOT NULL, t_max INTEGER NOT "
			    "NULL, n INTEGER NOT NULL, data BLOB NOT NULL)");
	if (err)
		return err;
	err = gw_zwriter_init(&w, db, "zblocks", 0, false);
	if (err)
		goto out;
	rc = sqlite3_prepare_v2(db,
				"SELECT series, t_min, t_max, n, data FROM "
				"chunks WHERE series > 0 AND series < "
				"4294967296 ORDER BY series, t_min",
				-1, &sel, NULL);
	if (rc != SQLITE_OK) {
		err = gw_store_sql_err(db, rc, "pack chunks");
		goto out;
	}
	while (!err && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		struct gw_zchunk c = {
			.series = (uint32_t)sqlite3_column_int64(sel, 0),
			.t_min = sqlite3_column_int64(sel, 1),
			.t_max = sqlite3_column_int64(sel, 2),
			.data = sqlite3_column_blob(sel, 4),
			.len = (size_t)sqlite3_column_bytes(sel, 4),
		};
		int64_t n = sqlite3_column_int64(sel, 3);

		if (c.t_max < c.t_min || n < 0 || n > UINT32_MAX)
			continue; /* not ours: never written so */
		c.n = (uint32_t)n;
		err = gw_zwriter_add(&w, &c);
	}
	if (!err && rc != SQLITE_DONE)
		err = gw_store_sql_err(db, rc, "pack chunks");
	if (!err)
		err = gw_zwriter_flush(&w);
	sqlite3_finalize(sel);
	sel = NULL;
	/* One transaction with the rest of the close (the caller's). */
	if (!err)
		err = gw_store_exec(db, "DROP TABLE chunks");
out:
	sqlite3_finalize(sel);
	gw_zwriter_release(&w);
	return err;
}

/* ---- the open day: one set of blocks and one key list per hour ---- */

void gw_store_hour_damaged(uint64_t *damaged)
{
	/* zstd's checksum: what the frame held is lost; the rest of the day
	 * closes. */
	gw_warn("store: a damaged hour block in a closing partition is "
		"skipped");
	(*damaged)++;
}

/* What gw_store_unpack_hours puts back as rows. */
struct unpack {
	sqlite3_stmt *ins;
	int err;
};

static int unpack_chunk(void *ctx, const struct gw_zchunk *c)
{
	struct unpack *u = ctx;

	sqlite3_reset(u->ins);
	sqlite3_bind_int64(u->ins, 1, c->series);
	sqlite3_bind_int64(u->ins, 2, c->t_min);
	sqlite3_bind_int64(u->ins, 3, c->t_max);
	sqlite3_bind_int64(u->ins, 4, c->n);
	sqlite3_bind_blob(u->ins, 5, c->data, (int)c->len, SQLITE_STATIC);
	return sqlite3_step(u->ins) == SQLITE_DONE ? 0 : -EIO;
}

static int unpack_key(void *ctx, int64_t id, const char *key)
{
	return row_key(((struct unpack *)ctx)->ins, id, key);
}

/* Runs each blob of sel (column 0) through each(blob, fn) into ins;
 * adds the damaged ones, skipped, to *damaged. */
static int unpack_all(sqlite3 *db, const char *sel_sql, const char *ins_sql,
		      bool keys, uint64_t *damaged)
{
	sqlite3_stmt *sel = NULL;
	struct unpack u = { NULL, 0 };
	int err = 0, rc;

	rc = sqlite3_prepare_v2(db, sel_sql, -1, &sel, NULL);
	if (rc != SQLITE_OK)
		return 0; /* a partition from before the hour blocks */
	rc = sqlite3_prepare_v2(db, ins_sql, -1, &u.ins, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(sel);
		return gw_store_sql_err(db, rc, "unpack hours");
	}
	while (!err && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		const void *z = sqlite3_column_blob(sel, 0);
		size_t zlen = (size_t)sqlite3_column_bytes(sel, 0);

		err = keys ? gw_store_each_packed(z, zlen, PACK_MAX, unpack_key,
						  &u)
			   : gw_store_zblock_each(z, zlen, unpack_chunk, &u);
		if (err == -EBADMSG) {
			gw_store_hour_damaged(damaged);
			err = 0;
		}
	}
	if (!err && rc != SQLITE_DONE)
		err = gw_store_sql_err(db, rc, "unpack hours");
	sqlite3_finalize(sel);
	sqlite3_finalize(u.ins);
	return err;
}

int gw_store_unpack_hours(sqlite3 *db, uint64_t *damaged)
{
	int err = unpack_all(db, "SELECT data FROM hkeys",
			     "INSERT OR IGNORE INTO series(id, key) VALUES "
			     "(?, ?)",
			     true, damaged);

	if (!err)
		err = unpack_all(db, "SELECT data FROM hblocks ORDER BY id",
				 "INSERT OR REPLACE INTO chunks(series, t_min, "
				 "t_max, n, data) VALUES (?,?,?,?,?)",
				 false, damaged);
	if (!err)
		err = gw_store_exec(db, "DROP TABLE IF EXISTS hblocks; "
					"DROP TABLE IF EXISTS hkeys;");
	return err;
}

static uint32_t id_at(const uint32_t *ids, size_t stride, size_t k)
{
	uint32_t v;

	memcpy(&v, (const char *)ids + k * stride, sizeof(v));
	return v;
}

bool gw_store_ids_any(const uint8_t *p, size_t len, const uint32_t *ids,
		      size_t stride, size_t n, uint64_t last)
{
	const uint8_t *end = p + len;
	uint64_t id = 0, d;
	size_t i = 0;

	if (!p)
		return true;
	while (i < n && id_at(ids, stride, i) <= last && p < end) {
		if (gw_varint_get(&p, end, &d) || d > UINT32_MAX)
			return true; /* not what we wrote: read the block */
		id += d;
		while (i < n && id_at(ids, stride, i) < id)
			i++;
		if (i < n && id_at(ids, stride, i) == id && id <= last)
			return true;
	}
	return false;
}

int gw_zblock_open(struct gw_zblock_it *it, uint8_t **raw, const void *z,
		   size_t zlen)
{
	unsigned long long size = ZSTD_getFrameContentSize(z, zlen);
	size_t got;

	*raw = NULL;
	memset(it, 0, sizeof(*it));
	if (size == ZSTD_CONTENTSIZE_ERROR ||
	    size == ZSTD_CONTENTSIZE_UNKNOWN || size > PACK_MAX)
		return -EBADMSG;
	*raw = malloc(size ? size : 1);
	if (!*raw)
		return -ENOMEM;
	got = ZSTD_decompress(*raw, size, z, zlen);
	if (ZSTD_isError(got) || got != size) {
		free(*raw);
		*raw = NULL;
		return -EBADMSG;
	}
	it->p = *raw;
	it->end = *raw + got;
	return 0;
}

int gw_zblock_next(struct gw_zblock_it *it, struct gw_zchunk *c)
{
	uint64_t ds, dt, span, n, len;

	if (it->p >= it->end)
		return 0;
	if (gw_varint_get(&it->p, it->end, &ds) ||
	    gw_varint_get(&it->p, it->end, &dt) ||
	    gw_varint_get(&it->p, it->end, &span) ||
	    gw_varint_get(&it->p, it->end, &n) ||
	    gw_varint_get(&it->p, it->end, &len) ||
	    len > (uint64_t)(it->end - it->p) || n > UINT32_MAX ||
	    ds > UINT32_MAX || (uint64_t)it->series + ds >= UINT32_MAX ||
	    (it->series && !ds && (int64_t)gw_unzigzag(dt) < 0) ||
	    span > (uint64_t)INT64_MAX)
		goto bad;
	it->series += (int64_t)ds;
	it->tmin = (int64_t)((uint64_t)it->tmin + gw_unzigzag(dt));
	if (!it->series || it->tmin > INT64_MAX - (int64_t)span)
		goto bad;
	c->series = (uint32_t)it->series;
	c->t_min = it->tmin;
	c->t_max = it->tmin + (int64_t)span;
	c->n = (uint32_t)n;
	c->data = it->p;
	c->len = (size_t)len;
	it->p += len;
	return 1;
bad:
	it->p = it->end;
	return -EBADMSG;
}

int gw_store_zblock_each(const void *z, size_t zlen,
			 int (*fn)(void *ctx, const struct gw_zchunk *c),
			 void *ctx)
{
	struct gw_zblock_it it;
	struct gw_zchunk c;
	uint8_t *raw;
	int err = gw_zblock_open(&it, &raw, z, zlen), r;

	while (!err && (r = gw_zblock_next(&it, &c)) != 0)
		err = r < 0 ? r : fn(ctx, &c);
	free(raw);
	return err;
}

enum gw_part_form gw_store_part_form(sqlite3 *db)
{
	sqlite3_stmt *st;
	enum gw_part_form f = GW_PART_CHUNKS;

	if (sqlite3_prepare_v2(db,
			       "SELECT name FROM sqlite_master WHERE type = "
			       "'table' AND name IN ('packed', 'zblocks')",
			       -1, &st, NULL) != SQLITE_OK)
		return f;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		f = name && strcmp(name, "zblocks") == 0 ? GW_PART_ZBLOCKS
							 : GW_PART_PACKED;
	}
	sqlite3_finalize(st);
	return f;
}

/* What gw_store_packed_keys looks for. */
struct pk_find {
	const uint32_t *ids;
	size_t n;
	char **keys;
};

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int pk_one(void *ctx, int64_t id, const char *key)
{
	struct pk_find *f = ctx;
	uint32_t u = (uint32_t)id;
	const uint32_t *hit = bsearch(&u, f->ids, f->n, sizeof(u), cmp_id);
	size_t i;

	if (!hit)
		return 0;
	i = (size_t)(hit - f->ids);
	if (f->keys[i])
		return 0;
	f->keys[i] = strdup(key);
	return f->keys[i] ? 0 : -ENOMEM;
}

int gw_store_packed_keys(sqlite3 *db, const uint32_t *ids, size_t n,
			 char **keys)
{
	struct pk_find f = { ids, n, keys };
	sqlite3_stmt *st;
	int err = 0;

	if (!n || sqlite3_prepare_v2(db, "SELECT data FROM series_packed", -1,
				     &st, NULL) != SQLITE_OK)
		return 0; /* none, or an index.db from before them */
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		err = gw_store_each_packed(sqlite3_column_blob(st, 0),
					   (size_t)sqlite3_column_bytes(st, 0),
					   PACK_MAX, pk_one, &f);
		if (err == -EBADMSG)
			err = 0; /* logged at open; the others still count */
	}
	sqlite3_finalize(st);
	return err;
}
