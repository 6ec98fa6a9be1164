/* SPDX-License-Identifier: MIT */
/*
 * headlog.c - the head log: every flush interval the samples appended
 * since the last flush, and the keys of the series new since then, go to
 * the end of a log file in one write().  Only the series on the dirty list
 * (samples or a key since the last flush) are visited, so a flush costs
 * what was written, not the series ever seen.
 *
 * The log is a run of segments, DIR/headlog/<n>.log, each the magic
 * "GWHLOG1\n" and then records: u32 length and u32 CRC-32C of the
 * payload (little-endian), then the payload: a version byte (1), varint
 * count of new series and per series varint id, varint length, key; then
 * per series with samples varint id, varint count, varint first timestamp
 * and per sample a varint time delta and the value's 8 bytes.  A record
 * whose CRC does not match (a write torn by a crash of the machine) ends
 * its segment's replay.  A failed write is cut back off the file.
 *
 * A cut writes the logged series' rows into index.db with the watermark
 * (gw_store_log_persist), then starts a new segment (so does a flush that
 * takes one past SEGMENT_MAX); a segment goes once the watermark has
 * passed its newest sample.  Opening the store replays
 * the segments after the watermark, in order.  Like SQLite's WAL with
 * synchronous=NORMAL (what the log was before), nothing is synced: a
 * crash of the process loses at most the samples of the current flush
 * interval; one of the machine may lose what the kernel had not written.
 *
 * Stores from before the log files kept it as rows of index.db's `head`
 * table (format: a row is one flush's samples part); gw_store_replay()
 * still reads those, and the cuts delete them.
 */
#include "store/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bits.h"
#include "common/crc32c.h"
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

#define LOG_MAGIC   "GWHLOG1\n"
#define LOG_VERSION 1
#define LOG_DIR	    "headlog"
#define RECORD_MAX  (1u << 30)
/* A segment goes only once all its samples are cut: one that grows past
 * this ends, so that what outlives its cut is at most this much more
 * than the samples after the watermark (an import of days of history
 * would otherwise stay in one segment until its newest hour is cut). */
#define SEGMENT_MAX (4u << 20)

static void log_path(const struct gw_store *s, uint64_t seq, char *out,
		     size_t len)
{
	snprintf(out, len, "%s/" LOG_DIR "/%012llu.log", s->dir,
		 (unsigned long long)seq);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* A segment done with: kept until the watermark passes its newest
 * sample. */
static int log_keep(struct gw_store *s, uint64_t seq, uint64_t bytes,
		    int64_t t_max)
{
	if (s->nlog_old == s->caplog_old) {
		size_t nc = s->caplog_old ? s->caplog_old * 2 : 8;
		struct log_seg *v = realloc(s->log_old, nc * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->log_old = v;
		s->caplog_old = nc;
	}
	s->log_old[s->nlog_old++] = (struct log_seg){ seq, bytes, t_max };
	return 0;
}

static int log_open_new(struct gw_store *s)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/" LOG_DIR, s->dir);
	if (mkdir(path, 0750) != 0 && errno != EEXIST)
		return -errno;
	log_path(s, s->log_seq + 1, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (write(fd, LOG_MAGIC, 8) != 8) {
		int err = errno ? -errno : -EIO;

		close(fd);
		(void)unlink(path);
		return err;
	}
	s->log_seq++;
	s->log_fd = fd;
	s->log_len = 8;
	s->log_tmax = INT64_MIN;
	return 0;
}

/* The open segment joins the old ones. */
static void log_retire(struct gw_store *s)
{
	if (s->log_fd < 0)
		return;
	close(s->log_fd);
	s->log_fd = -1;
	if (log_keep(s, s->log_seq, s->log_len, s->log_tmax) != 0)
		gw_warn("store: no memory to track head log segment %llu; "
			"it stays until the next restart",
			(unsigned long long)s->log_seq);
}

/* Appends one record, all of it or none. */
static int log_write(struct gw_store *s, const uint8_t *p, size_t len)
{
	size_t off = 0;
	int err = 0;

	if (s->log_fd < 0 && (err = log_open_new(s)) != 0)
		return err;
	while (off < len) {
		ssize_t n = write(s->log_fd, p + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	if (!err) {
		s->log_len += len;
		return 0;
	}
	/* Cut a partial record back off; where that fails, the segment
	 * ends here (its replay stops at the partial record) and the next
	 * flush starts another. */
	if (off && ftruncate(s->log_fd, (off_t)s->log_len) != 0)
		log_retire(s);
	else if (off && lseek(s->log_fd, (off_t)s->log_len, SEEK_SET) < 0)
		log_retire(s);
	return err;
}

int gw_store_flush(struct gw_store *s)
{
	struct timespec a, b;
	struct gw_buf rec;
	int64_t tmin = INT64_MAX, tmax = INT64_MIN;
	size_t n = s->dirty.n;
	uint64_t nkeys = 0;
	char why[256] = "";
	int err = 0;

	s->next_flush = gw_store_now(s) + s->o.flush_ms;
	if (!s->dirty.n)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	gw_buf_init(&rec, RECORD_MAX);
	gw_buf_put(&rec, "\0\0\0\0\0\0\0\0", 8); /* length, CRC */
	gw_buf_put(&rec, "\1", 1);		 /* LOG_VERSION */
	for (size_t i = 0; i < n; i++)
		nkeys += !((struct head *)s->dirty.v[i]->head)->logged;
	gw_varint_put(&rec, nkeys);
	for (size_t i = 0; i < n && nkeys; i++) {
		struct gw_series *ser = s->dirty.v[i];
		size_t klen;

		if (((struct head *)ser->head)->logged)
			continue;
		klen = strlen(ser->key);
		gw_varint_put(&rec, ser->id);
		gw_varint_put(&rec, klen);
		gw_buf_put(&rec, ser->key, klen);
	}
	for (size_t i = 0; i < n && !gw_buf_error(&rec); i++) {
		struct gw_series *ser = s->dirty.v[i];
		struct head *h = ser->head;
		int64_t prev;

		if (!h->npend)
			continue;
		gw_varint_put(&rec, ser->id);
		gw_varint_put(&rec, h->npend);
		prev = h->pend[0].t;
		gw_varint_put(&rec, (uint64_t)prev);
		for (uint32_t j = 0; j < h->npend; j++) {
			uint64_t d = (uint64_t)h->pend[j].t - (uint64_t)prev;

			gw_varint_put(&rec, d);
			gw_buf_put(&rec, &h->pend[j].v, 8);
			prev = h->pend[j].t;
		}
		if (h->pend[0].t < tmin)
			tmin = h->pend[0].t;
		if (prev > tmax)
			tmax = prev;
	}
	err = gw_buf_error(&rec);
	/* Room for the new keys on the list the next cut writes to
	 * index.db, before they are logged. */
	if (!err && s->unpersisted.cap - s->unpersisted.n < nkeys) {
		size_t nc = s->unpersisted.n + nkeys + 256;
		struct gw_series **v =
			realloc(s->unpersisted.v, nc * sizeof(*v));

		if (!v)
			err = -ENOMEM;
		else {
			s->unpersisted.v = v;
			s->unpersisted.cap = nc;
		}
	}
	if (!err) {
		uint8_t *p = (uint8_t *)rec.p;

		put_le32(p, (uint32_t)(rec.len - 8));
		put_le32(p + 4, gw_crc32c(0, p + 8, rec.len - 8));
		err = log_write(s, p, rec.len);
		if (err)
			snprintf(why, sizeof(why), "%s", strerror(-err));
	}
	if (err)
		goto out;
	if (tmax > s->log_tmax)
		s->log_tmax = tmax;
	if (s->log_len >= SEGMENT_MAX)
		log_retire(s);
	for (size_t i = 0; i < n; i++) {
		struct gw_series *ser = s->dirty.v[i];
		struct head *h = ser->head;

		h->npend = 0;
		if (!h->logged)
			s->unpersisted.v[s->unpersisted.n++] = ser;
		h->logged = true;
		h->in_dirty = false;
	}
	s->dirty.n = 0;
	s->pend_total = 0;
out:
	gw_buf_release(&rec);
	clock_gettime(CLOCK_MONOTONIC, &b);
	atomic_store(&s->st_flush_ns,
		     (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL +
				(b.tv_nsec - a.tv_nsec)));
	/* One line when flushes start failing and one when they work
	 * again, not one every flush interval. */
	if (err) {
		atomic_fetch_add(&s->st_flush_errors, 1);
		if (!s->flush_failing)
			gw_err("store: flushing new samples to the head log in "
			       "%s/" LOG_DIR " failed (%s); they stay in "
			       "memory, retried every %lld ms, counted in "
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

static int by_key(const void *a, const void *b)
{
	const struct gw_series *x = *(const struct gw_series *const *)a;
	const struct gw_series *y = *(const struct gw_series *const *)b;

	return strcmp(x->key, y->key);
}

/*
 * The series as one packed list in series_packed, what
 * gw_store_pack_index() would make of their rows right after (format 2,
 * by key); the series' rows are never written.  -E2BIG for a key too
 * long for a list.
 */
static int persist_packed(struct gw_store *s)
{
	struct gw_series **v = malloc(s->unpersisted.n * sizeof(*v));
	struct gw_keylist k;
	size_t n = 0, zlen = 0;
	void *z = NULL;
	int err = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->unpersisted.n; i++)
		if (!((struct head *)s->unpersisted.v[i]->head)->persisted)
			v[n++] = s->unpersisted.v[i];
	qsort(v, n, sizeof(*v), by_key);
	gw_keylist_init(&k);
	for (size_t i = 0; i < n && !err; i++)
		if (!i || v[i] != v[i - 1])
			err = gw_keylist_add(&k, v[i]->id, v[i]->key);
	if (!err)
		err = gw_keylist_pack(&k, &z, &zlen);
	gw_keylist_release(&k);
	free(v);
	if (err || !z)
		return err;
	err = gw_store_put_packed(s->index,
				  "INSERT INTO series_packed(data) VALUES (?)",
				  z, zlen);
	free(z);
	return err;
}

int gw_store_log_persist(struct gw_store *s)
{
	int err = s->unpersisted.n ? persist_packed(s) : 0;

	if (err != -E2BIG)
		return err;
	/* as rows, which gw_store_pack_index() leaves as they are */
	err = 0;
	for (size_t i = 0; i < s->unpersisted.n && !err; i++) {
		struct gw_series *ser = s->unpersisted.v[i];

		if (!((struct head *)ser->head)->persisted)
			err = gw_store_insert_series(s->index, &s->st_series,
						     ser, false);
	}
	return err;
}

void gw_store_log_persisted(struct gw_store *s)
{
	for (size_t i = 0; i < s->unpersisted.n; i++)
		((struct head *)s->unpersisted.v[i]->head)->persisted = true;
	s->unpersisted.n = 0;
}

void gw_store_log_rotate(struct gw_store *s)
{
	size_t j = 0;

	log_retire(s);
	for (size_t i = 0; i < s->nlog_old; i++) {
		char path[PATH_MAX + 64];

		if (s->log_old[i].t_max >= s->watermark) {
			s->log_old[j++] = s->log_old[i];
			continue;
		}
		log_path(s, s->log_old[i].seq, path, sizeof(path));
		if (unlink(path) != 0 && errno != ENOENT) {
			gw_warn("store: cannot delete %s: %s", path,
				strerror(errno));
			s->log_old[j++] = s->log_old[i];
		}
	}
	s->nlog_old = j;
}

uint64_t gw_store_log_bytes(const struct gw_store *s)
{
	uint64_t n = s->log_fd >= 0 ? s->log_len : 0;

	for (size_t i = 0; i < s->nlog_old; i++)
		n += s->log_old[i].bytes;
	return n;
}

void gw_store_log_close(struct gw_store *s)
{
	if (s->log_fd >= 0)
		close(s->log_fd);
	s->log_fd = -1;
	free(s->log_old);
	s->log_old = NULL;
	s->nlog_old = s->caplog_old = 0;
	free(s->unpersisted.v);
	memset(&s->unpersisted, 0, sizeof(s->unpersisted));
}

/* ---- replay ---- */

/* Series whose id in the log names another key in the index: their
 * samples go to the series of the logged key. */
struct remap {
	struct {
		uint64_t id;
		struct gw_series *ser;
	} * v;
	size_t n, cap;
};

static struct gw_series *log_series_at(struct gw_store *s,
				       const struct remap *rm, uint64_t id)
{
	for (size_t i = 0; i < rm->n; i++)
		if (rm->v[i].id == id)
			return rm->v[i].ser;
	return id <= UINT32_MAX ? gw_series_index_get(s->idx, (uint32_t)id)
				: NULL;
}

/* A logged series: known, or attached (with its id where it is free). */
static void log_series(struct gw_store *s, struct remap *rm, uint64_t id,
		       const char *key)
{
	struct gw_series *ser =
		id && id < UINT32_MAX
			? gw_series_index_get(s->idx, (uint32_t)id)
			: NULL;
	struct gw_labels l;

	if (ser && strcmp(ser->key, key) == 0)
		return;
	if (gw_store_key_labels(key, &l) != 0)
		return;
	if (gw_store_attach_series(
		    s, &l, ser || !id || id >= UINT32_MAX ? 0 : (uint32_t)id,
		    false, &ser) != 0)
		ser = NULL;
	gw_labels_release(&l);
	if (ser && ser->id != id) {
		if (rm->n == rm->cap) {
			size_t nc = rm->cap ? rm->cap * 2 : 8;
			void *v = realloc(rm->v, nc * sizeof(*rm->v));

			if (!v)
				return;
			rm->v = v;
			rm->cap = nc;
		}
		rm->v[rm->n].id = id;
		rm->v[rm->n++].ser = ser;
	}
}

int gw_headlog_parse(const uint8_t *p, size_t len,
		     const struct gw_headlog_sink *k)
{
	const uint8_t *end = p + len;
	uint64_t nkeys;

	if (p >= end || *p++ != LOG_VERSION || gw_varint_get(&p, end, &nkeys))
		return -EBADMSG;
	for (uint64_t i = 0; i < nkeys; i++) {
		uint64_t id, klen;
		char key[4096], *kb = key;

		if (gw_varint_get(&p, end, &id) ||
		    gw_varint_get(&p, end, &klen) || klen > (uint64_t)(end - p))
			return -EBADMSG;
		if (klen >= sizeof(key) && !(kb = malloc(klen + 1)))
			return -ENOMEM;
		memcpy(kb, p, klen);
		kb[klen] = '\0';
		p += klen;
		/* (a key with a NUL inside was never written) */
		if (strlen(kb) == klen)
			k->series(k->ctx, id, kb);
		if (kb != key)
			free(kb);
	}
	while (p < end) {
		uint64_t id, cnt, t0;
		int64_t t;

		if (gw_varint_get(&p, end, &id) ||
		    gw_varint_get(&p, end, &cnt) || gw_varint_get(&p, end, &t0))
			return -EBADMSG;
		k->group(k->ctx, id);
		t = (int64_t)t0;
		for (uint64_t j = 0; j < cnt; j++) {
			uint64_t d;
			double v;

			if (gw_varint_get(&p, end, &d) || end - p < 8)
				return -EBADMSG;
			memcpy(&v, p, 8);
			p += 8;
			t = (int64_t)((uint64_t)t + d);
			k->sample(k->ctx, t, v);
		}
	}
	return 0;
}

/* Replay: the records' series and samples into the head. */
struct replay {
	struct gw_store *s;
	struct remap rm;
	struct gw_series *ser; /* of the samples being read */
	int64_t t_max;
	uint64_t samples;
};

static void replay_series(void *ctx, uint64_t id, const char *key)
{
	struct replay *r = ctx;

	log_series(r->s, &r->rm, id, key);
}

static void replay_group(void *ctx, uint64_t id)
{
	struct replay *r = ctx;

	r->ser = log_series_at(r->s, &r->rm, id);
}

static void replay_sample(void *ctx, int64_t t, double v)
{
	struct replay *r = ctx;

	if (t > r->t_max)
		r->t_max = t;
	if (r->ser && t >= r->s->watermark &&
	    gw_store_head_add(r->s, r->ser, t, v, false) == 0)
		r->samples++;
}

/* One segment; its newest sample into r->t_max. */
static int log_replay_one(struct replay *r, const char *path)
{
	const struct gw_headlog_sink sink = { r, replay_series, replay_group,
					      replay_sample };
	uint8_t hdr[8], *rec = NULL;
	size_t cap = 0;
	long at = 8;
	int err = 0;
	FILE *f = fopen(path, "rbe");

	r->t_max = INT64_MIN;
	if (!f)
		return -errno;
	if (fread(hdr, 1, 8, f) != 8 || memcmp(hdr, LOG_MAGIC, 8) != 0) {
		gw_warn("store: %s is not a head log segment; skipped", path);
		fclose(f);
		return 0;
	}
	for (;;) {
		size_t got = fread(hdr, 1, 8, f);
		uint32_t len, crc;

		if (got == 0)
			break;
		len = got == 8 ? get_le32(hdr) : 0;
		crc = got == 8 ? get_le32(hdr + 4) : 0;
		if (got != 8 || len > RECORD_MAX) {
			err = -EBADMSG;
			break;
		}
		if (len > cap) {
			uint8_t *v = realloc(rec, len);

			if (!v) {
				err = -ENOMEM;
				break;
			}
			rec = v;
			cap = len;
		}
		if (fread(rec, 1, len, f) != len ||
		    gw_crc32c(0, rec, len) != crc) {
			err = -EBADMSG;
			break;
		}
		err = gw_headlog_parse(rec, len, &sink);
		if (err)
			break;
		at += 8 + (long)len;
	}
	if (err == -EBADMSG)
		gw_warn("store: %s ends in a damaged or partly written record "
			"at byte %ld (a crash while writing it); replayed what "
			"came before",
			path, at);
	free(rec);
	fclose(f);
	return err == -EBADMSG ? 0 : err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int gw_store_log_replay(struct gw_store *s)
{
	char path[PATH_MAX + 64];
	struct replay r = { .s = s };
	uint64_t *seqs = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int err = 0;
	DIR *d;

	s->log_fd = -1;
	snprintf(path, sizeof(path), "%s/" LOG_DIR, s->dir);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) != NULL) {
		char *endp;
		unsigned long long seq = strtoull(e->d_name, &endp, 10);

		if (endp == e->d_name || strcmp(endp, ".log") != 0)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			uint64_t *v = realloc(seqs, nc * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				break;
			}
			seqs = v;
			cap = nc;
		}
		seqs[n++] = seq;
	}
	closedir(d);
	if (n > 1)
		qsort(seqs, n, sizeof(*seqs), cmp_u64);
	for (size_t i = 0; i < n && !err; i++) {
		log_path(s, seqs[i], path, sizeof(path));
		err = log_replay_one(&r, path);
		if (!err)
			err = log_keep(s, seqs[i], gw_store_file_bytes(path),
				       r.t_max);
		if (seqs[i] > s->log_seq)
			s->log_seq = seqs[i];
	}
	free(seqs);
	free(r.rm.v);
	if (!err && r.samples)
		gw_info("store: replayed %llu samples from the head log",
			(unsigned long long)r.samples);
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
