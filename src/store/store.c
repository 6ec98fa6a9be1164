/* SPDX-License-Identifier: MIT */
/*
 * store.c - the store's write path: the head (open chunks and rollups per
 * series), the head log in index.db, hourly cuts into day partitions,
 * retention, the disk budget and quarantine.  Queries are in store_read.c.
 *
 * Life of a sample (t, v) of series S:
 *
 *   append --> S.raw chunk (hour of t) --seal at hour change--> sealed[]
 *          --> S.m1 (open minute) --close--> S.m1_closed --seal--> sealed[]
 *                                       \--> S.h1 (open hour) --close-->
 *                                             S.h1_day (the day's hours)
 *          --> S.pend --flush (<= flush_ms)--> index.db head log
 *
 *   cut(H), when now >= H + grace: everything before H leaves the head:
 *   sealed[] and the hour's rollups are written to the partitions of their
 *   days, the 1-hour column of the day is rewritten, then the watermark
 *   becomes H and the head log before H is deleted.  A crash between the
 *   two steps replays the log into the same chunk keys (INSERT OR REPLACE),
 *   so a cut is idempotent.
 */
#include "store/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

const char *const gw_store_tier_dir[GW_TIERS] = { "raw", "1m", "1h" };

#define PEND_MAX 4096 /* per series before an early flush */

static int64_t real_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gw_store_now(const struct gw_store *s)
{
	return s->o.now(s->o.now_ctx);
}

void gw_store_opts_defaults(struct gw_store_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->retention_ms[GW_TIER_RAW] = 24 * MS_HOUR;
	o->retention_ms[GW_TIER_1M] = 30 * MS_DAY;
	o->retention_ms[GW_TIER_1H] = 365 * MS_DAY;
	o->flush_ms = 5000;
	o->grace_ms = 10000;
	o->max_series = 100000;
	o->max_values = 10000;
}

void gw_store_day_name(int64_t day_ms, char out[11])
{
	time_t t = (time_t)(floor_to(day_ms, MS_DAY) / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || strftime(out, 11, "%Y-%m-%d", &tm) != 10)
		snprintf(out, 11, "0000-00-00");
}

/* ---- framed rollups: [u32 length][gw_rollup_encode of one] ... ---- */

int gw_store_frame_add(struct gw_buf *b, const struct gw_rollup *r)
{
	struct gw_buf one;
	uint32_t len;
	int err;

	gw_buf_init(&one, 1u << 20);
	err = gw_rollup_encode(r, 1, &one);
	len = (uint32_t)one.len;
	if (!err)
		err = gw_buf_add(b, &len, sizeof(len));
	if (!err)
		err = gw_buf_add(b, one.p, one.len);
	gw_buf_release(&one);
	return err;
}

int gw_store_frame_decode(const struct gw_buf *b, struct gw_rollup **out,
			  size_t *n)
{
	struct gw_rollup *v = NULL;
	size_t cnt = 0, cap = 0, off = 0;
	int err = 0;

	while (off + 4 <= b->len) {
		struct gw_rollup *one;
		size_t k;
		uint32_t len;

		memcpy(&len, b->p + off, 4);
		off += 4;
		if (len > b->len - off) {
			err = -EBADMSG;
			break;
		}
		err = gw_rollup_decode((const uint8_t *)b->p + off, len, &one,
				       &k);
		if (err)
			break;
		off += len;
		if (cnt + k > cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct gw_rollup *nv;

			while (ncap < cnt + k)
				ncap *= 2;
			nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				gw_rollup_free_array(one, k);
				err = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		memcpy(v + cnt, one, k * sizeof(*one)); /* moves the sketches */
		cnt += k;
		free(one);
	}
	if (err) {
		gw_rollup_free_array(v, cnt);
		return err;
	}
	*out = v;
	*n = cnt;
	return 0;
}

/* ---- SQLite plumbing ---- */

int gw_store_sql_err(sqlite3 *db, int rc, const char *what)
{
	gw_err("store: %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
		return -EBADMSG;
	if (rc == SQLITE_FULL)
		return -ENOSPC;
	if (rc == SQLITE_NOMEM)
		return -ENOMEM;
	return -EIO;
}

int gw_store_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		gw_err("store: %s: %s", sql, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? -EBADMSG :
		       rc == SQLITE_FULL			   ? -ENOSPC :
								     -EIO;
	}
	return 0;
}

static const char part_schema[] =
	"CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY,"
	" key TEXT NOT NULL);"
	/* A rowid table: chunks of a few KiB stay on their b-tree page
	 * (WITHOUT ROWID would spill anything over ~1 KiB to overflow
	 * pages); the primary key becomes a small index. */
	"CREATE TABLE IF NOT EXISTS chunks(series INTEGER NOT NULL,"
	" t_min INTEGER NOT NULL, t_max INTEGER NOT NULL, n INTEGER NOT NULL,"
	" data BLOB NOT NULL, PRIMARY KEY(series, t_min));";

int gw_store_open_db(const char *path, bool create, bool readonly,
		     sqlite3 **out)
{
	int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	sqlite3 *db = NULL;
	int rc, err = 0;

	*out = NULL;
	if (create)
		flags |= SQLITE_OPEN_CREATE;
	rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		err = gw_store_sql_err(db, rc, path);
		sqlite3_close(db);
		return err;
	}
	sqlite3_busy_timeout(db, 5000);
	if (!readonly) {
		size_t len = strlen(path);
		bool index = len >= 9 && strcmp(path + len - 9, "/index.db") == 0;
		char pragmas[256];

		/*
		 * Before the first table: index.db reclaims the head log's
		 * pages after each cut (auto_vacuum); partitions only grow
		 * and are vacuumed once when closed, and use small pages
		 * so that a day of sparse series does not cost 4 KiB per
		 * table.
		 */
		snprintf(pragmas, sizeof(pragmas), "%s"
			 "PRAGMA journal_mode=WAL;"
			 "PRAGMA synchronous=NORMAL;"
			 "PRAGMA journal_size_limit=4194304;",
			 !create ? "" : index ? "PRAGMA auto_vacuum=INCREMENTAL;" :
						"PRAGMA page_size=1024;");
		err = gw_store_exec(db, pragmas);
		if (!err && create) {
			char sql[128];

			snprintf(sql, sizeof(sql), "PRAGMA application_id=%d;",
				 STORE_APP_ID);
			err = gw_store_exec(db, sql);
		}
		if (!err && create)
			err = gw_store_exec(db, part_schema);
	}
	if (err) {
		sqlite3_close(db);
		return err;
	}
	*out = db;
	return 0;
}

int gw_store_check_db(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int rc, ok = 0;

	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *r = sqlite3_column_text(st, 0);

		ok = r && strcmp((const char *)r, "ok") == 0;
	}
	sqlite3_finalize(st);
	if (!ok)
		return -EBADMSG;
	st = NULL;
	rc = sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL);
	ok = rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
	     sqlite3_column_int(st, 0) == STORE_APP_ID;
	sqlite3_finalize(st);
	if (!ok)
		return -EBADMSG;
	rc = sqlite3_prepare_v2(db, "SELECT series, t_min, t_max, n, data "
				    "FROM chunks LIMIT 1", -1, &st, NULL);
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : -EBADMSG;
}

void gw_store_quarantine(struct gw_store *s, const char *path, const char *why)
{
	char qdir[PATH_MAX], dst[2 * PATH_MAX + 64];
	const char *base = strrchr(path, '/');
	const char *tier = "";
	time_t now = time(NULL);

	base = base ? base + 1 : path;
	for (int t = 0; t < GW_TIERS; t++) {
		char needle[16];

		snprintf(needle, sizeof(needle), "/%s/", gw_store_tier_dir[t]);
		if (strstr(path, needle))
			tier = gw_store_tier_dir[t];
	}
	snprintf(qdir, sizeof(qdir), "%s/quarantine", s->dir);
	(void)mkdir(qdir, 0750);
	snprintf(dst, sizeof(dst), "%s/%s%s%s.%lld", qdir, tier, *tier ? "-" : "",
		 base, (long long)now);
	if (rename(path, dst) != 0) {
		gw_err("store: cannot move corrupt %s to %s: %s", path, dst,
		       strerror(errno));
	} else {
		gw_err("store: %s is corrupt (%s); moved to %s, the rest of "
		       "the store is unaffected", path, why, dst);
	}
	for (int i = 0; i < 2; i++) {
		char side[PATH_MAX + 8];

		snprintf(side, sizeof(side), "%s%s", path, i ? "-shm" : "-wal");
		(void)unlink(side);
	}
	atomic_fetch_add(&s->st_quarantined, 1);
}

int gw_store_key_labels(const char *key, struct gw_labels *out)
{
	const char *brace = strchr(key, '{');
	size_t len = strlen(key);
	char *name, *inner;
	int err;

	if (!brace || len < 2 || key[len - 1] != '}')
		return -EINVAL;
	name = strndup(key, (size_t)(brace - key));
	inner = strndup(brace + 1, len - (size_t)(brace - key) - 2);
	err = name && inner ? gw_labels_parse(out, name, inner) : -ENOMEM;
	free(name);
	free(inner);
	return err;
}

/* ---- partitions ---- */

static struct part *part_find(struct gw_store *s, enum gw_tier tier,
			      int64_t day)
{
	for (size_t i = 0; i < s->nparts; i++)
		if (s->parts[i].tier == tier && s->parts[i].day == day)
			return &s->parts[i];
	return NULL;
}

static int part_cmp(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	if (x->day != y->day)
		return x->day < y->day ? -1 : 1;
	return (int)x->tier - (int)y->tier;
}

static void part_path(const struct gw_store *s, enum gw_tier tier, int64_t day,
		      char *out, size_t len)
{
	char name[11];

	gw_store_day_name(day, name);
	snprintf(out, len, "%s/%s/%s.db", s->dir, gw_store_tier_dir[tier],
		 name);
}

static uint64_t file_bytes(const char *path)
{
	uint64_t total = 0;

	for (int i = 0; i < 3; i++) {
		char p[PATH_MAX + 8];
		struct stat st;

		snprintf(p, sizeof(p), "%s%s", path,
			 i == 0 ? "" : i == 1 ? "-wal" : "-shm");
		if (stat(p, &st) == 0)
			total += (uint64_t)st.st_size;
	}
	return total;
}

static uint64_t sum_samples(sqlite3 *db)
{
	sqlite3_stmt *st;
	uint64_t n = 0;

	if (sqlite3_prepare_v2(db, "SELECT total(n) FROM chunks", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = (uint64_t)sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Adds (or finds) the partition, opening its write connection. */
static int part_writable(struct gw_store *s, enum gw_tier tier, int64_t day,
			 struct part **out)
{
	struct part *p = part_find(s, tier, day);
	char path[PATH_MAX];
	int err;

	if (p && p->w) {
		*out = p;
		return 0;
	}
	if (p && p->closed) {
		gw_warn("store: partition %s is closed; data for it is late "
			"and dropped", p->path);
		return -EROFS;
	}
	part_path(s, tier, day, path, sizeof(path));
	if (!p && s->nparts == s->capparts) {
		size_t ncap = s->capparts ? s->capparts * 2 : 32;
		struct part *np = realloc(s->parts, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		s->parts = np;
		s->capparts = ncap;
	}
	{
		sqlite3 *db;

		err = gw_store_open_db(path, true, false, &db);
		if (err)
			return err;
		pthread_rwlock_wrlock(&s->lock);
		if (!p) {
			p = &s->parts[s->nparts++];
			memset(p, 0, sizeof(*p));
			p->tier = tier;
			p->day = day;
			snprintf(p->path, sizeof(p->path), "%s", path);
			if (s->nparts > 1)
				qsort(s->parts, s->nparts, sizeof(*s->parts),
				      part_cmp);
			p = part_find(s, tier, day);
		}
		p->w = db;
		pthread_rwlock_unlock(&s->lock);
	}
	*out = p;
	return 0;
}

/* ---- head ---- */

static void head_free(void *v)
{
	struct head *h = v;

	if (!h)
		return;
	gw_chunk_enc_release(&h->raw);
	gw_rollup_release(&h->m1);
	gw_rollup_release(&h->h1);
	gw_buf_release(&h->m1_closed);
	gw_buf_release(&h->h1_day);
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
	gw_buf_init(&h->h1_day, 16u << 20);
	h->raw_hour = INT64_MIN;
	h->last_t = INT64_MIN;
	h->first_t = INT64_MIN;
	h->m1_hour = INT64_MIN;
	h->h1_day_start = INT64_MIN;
	return h;
}

static int seal_push(struct gw_store *s, uint32_t id, enum gw_tier tier,
		     int64_t t_min, int64_t t_max, uint32_t n,
		     const void *data, size_t len)
{
	struct sealed *x;
	uint8_t *copy;

	if (!len)
		return 0;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	pthread_rwlock_wrlock(&s->lock);
	if (s->nsealed == s->capsealed) {
		size_t ncap = s->capsealed ? s->capsealed * 2 : 256;
		struct sealed *nv = realloc(s->sealed, ncap * sizeof(*nv));

		if (!nv) {
			pthread_rwlock_unlock(&s->lock);
			free(copy);
			return -ENOMEM;
		}
		s->sealed = nv;
		s->capsealed = ncap;
	}
	x = &s->sealed[s->nsealed++];
	*x = (struct sealed){ id, tier, t_min, t_max, n, copy, len };
	pthread_rwlock_unlock(&s->lock);
	return 0;
}

static int seal_raw(struct gw_store *s, struct gw_series *ser, struct head *h)
{
	const uint8_t *p;
	size_t len;
	int err;

	if (!gw_chunk_count(&h->raw))
		return 0;
	p = gw_chunk_bytes(&h->raw, &len);
	err = seal_push(s, ser->id, GW_TIER_RAW, gw_chunk_first(&h->raw),
			gw_chunk_last(&h->raw), gw_chunk_count(&h->raw), p, len);
	if (err)
		return err;
	pthread_rwlock_wrlock(&s->lock);
	gw_chunk_enc_reset(&h->raw);
	pthread_rwlock_unlock(&s->lock);
	return 0;
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
		gw_buf_reset(framed);
		pthread_rwlock_unlock(&s->lock);
	}
	return err;
}

static int close_hour(struct gw_store *s, struct gw_series *ser,
		      struct head *h)
{
	int64_t day = floor_to(h->h1.t - 1, MS_DAY);
	int err = 0;

	if (h->h1_day_start != day && h->h1_day.len) {
		/* The previous day's column is complete: rewritten at the
		 * next cut from sealed[] rather than from h1_day. */
		err = seal_rollups(s, ser, GW_TIER_1H, &h->h1_day);
		if (err)
			return err;
	}
	pthread_rwlock_wrlock(&s->lock);
	h->h1_day_start = day;
	if (!h->h1_day.len)
		h->h1_day_t0 = h->h1.t;
	err = gw_store_frame_add(&h->h1_day, &h->h1);
	h->h1_open = false;
	h->h1_dirty = true;
	pthread_rwlock_unlock(&s->lock);
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
	pthread_rwlock_wrlock(&s->lock);
	h->m1_hour = hour;
	err = gw_store_frame_add(&h->m1_closed, &h->m1);
	pthread_rwlock_unlock(&s->lock);
	if (err)
		return err;
	if (!h->h1_open) {
		gw_rollup_reset(&h->h1, hour + MS_HOUR);
		h->h1_open = true;
	}
	err = gw_rollup_merge(&h->h1, &h->m1);
	h->m1_open = false;
	return err;
}

/*
 * Moves everything of the head before `before` into sealed[]: the raw
 * chunk of an earlier hour, minutes and hours that ended.
 */
static int head_close_before(struct gw_store *s, struct gw_series *ser,
			     struct head *h, int64_t before)
{
	int err = 0;

	if (gw_chunk_count(&h->raw) && h->raw_hour < before &&
	    h->raw_hour + MS_HOUR <= before)
		err = seal_raw(s, ser, h);
	if (!err && h->m1_open && h->m1.t <= before)
		err = close_minute(s, ser, h);
	if (!err && h->m1_closed.len && h->m1_hour + MS_HOUR <= before)
		err = seal_rollups(s, ser, GW_TIER_1M, &h->m1_closed);
	if (!err && h->h1_open && h->h1.t <= before)
		err = close_hour(s, ser, h);
	if (!err && h->h1_day.len && h->h1_day_start + MS_DAY <= before)
		err = seal_rollups(s, ser, GW_TIER_1H, &h->h1_day);
	return err;
}

/* The sample path shared by append and log replay. */
int gw_store_head_add(struct gw_store *s, struct gw_series *ser, int64_t t,
		      double v, bool log)
{
	struct head *h = ser->head;
	int64_t hour;
	int err;

	/*
	 * Timestamp tolerance (as Prometheus aligns scrape times): a new
	 * sample within GW_STORE_TIME_TOLERANCE_MS of where the series'
	 * interval predicts it is stored at the predicted time, so that a
	 * regular series costs no timestamp bits at all.  Replayed samples
	 * were aligned before they were logged.
	 */
	if (log && h->last_dt > 0 && h->last_t != INT64_MIN) {
		int64_t want = h->last_t + h->last_dt;

		if (t != want && t - want <= GW_STORE_TIME_TOLERANCE_MS &&
		    want - t <= GW_STORE_TIME_TOLERANCE_MS)
			t = want;
	}
	hour = floor_to(t, MS_HOUR);
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
		err = seal_raw(s, ser, h);
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
		err = seal_raw(s, ser, h);
		pthread_rwlock_wrlock(&s->lock);
		if (!err)
			err = gw_chunk_append(&h->raw, t, v);
	}
	if (!err) {
		if (h->last_t != INT64_MIN && t > h->last_t)
			h->last_dt = t - h->last_t;
		h->last_t = t;
		if (h->first_t == INT64_MIN && !h->from_disk)
			h->first_t = t;
	}
	pthread_rwlock_unlock(&s->lock);
	if (err)
		return err;
	if (!h->m1_open) {
		gw_rollup_reset(&h->m1, floor_to(t, MS_MIN) + MS_MIN);
		h->m1_open = true;
	}
	err = gw_rollup_add(&h->m1, t, v);
	if (log && h->npend < h->cappend) {
		h->pend[h->npend++] = (struct pending){ t, v };
		s->pend_total++;
	}
	atomic_fetch_add(&s->st_appended, 1);
	return err;
}

static int attach_series(struct gw_store *s, const struct gw_labels *l,
			 uint32_t id, bool persisted, struct gw_series **out)
{
	/* The head first: a series in the index always has one. */
	struct head *h = head_new();
	struct gw_series *ser = NULL;
	int err;

	if (!h)
		return -ENOMEM;
	h->persisted = persisted;
	/* From disk: it may have data from before this run. */
	h->from_disk = id != 0;
	pthread_rwlock_wrlock(&s->lock);
	err = gw_series_index_add(s->idx, l, id, &ser);
	if (!err && !ser->head) {
		ser->head = h;
		h = NULL;
	}
	pthread_rwlock_unlock(&s->lock);
	head_free(h);
	if (err == -ENOSPC || err == -E2BIG) {
		atomic_fetch_add(&s->st_cap, 1);
		gw_log_once(&s->warned_cap, GW_LOG_WARN,
			    "store: series cap reached (--store-max-series %u, "
			    "--store-max-label-values %u); new series are "
			    "refused and counted in "
			    "gpuwatch_store_samples_refused_total{reason=\"cap\"}",
			    s->o.max_series, s->o.max_values);
	}
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
				    "or labels (%s)", name, labels ? labels : "",
				    strerror(-err));
			goto out;
		}
		err = attach_series(s, &l, 0, false, &ser);
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

/* ---- cuts ---- */

static int write_chunk(sqlite3 *db, uint32_t id, int64_t t_min, int64_t t_max,
		       uint32_t n, const void *data, size_t len)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO chunks(series, "
				"t_min, t_max, n, data) VALUES (?,?,?,?,?)",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(db, rc, "write chunk");
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, t_min);
	sqlite3_bind_int64(st, 3, t_max);
	sqlite3_bind_int64(st, 4, n);
	sqlite3_bind_blob(st, 5, data, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : gw_store_sql_err(db, rc, "write chunk");
}

/* Partition of a chunk: the day of its first timestamp (a rollup's t is
 * its window end, so its day is that of t - 1). */
static int64_t chunk_day(enum gw_tier tier, int64_t t_min)
{
	return floor_to(tier == GW_TIER_RAW ? t_min : t_min - 1, MS_DAY);
}

/*
 * Partitions with an open transaction during a cut, by (tier, day):
 * opening another partition may move the array they live in, so no
 * pointer into it is kept across part_writable().
 */
struct cut_txns {
	struct {
		enum gw_tier tier;
		int64_t day;
	} v[16];
	size_t n;
};

/* The partition for (tier, day), inside the cut's transaction on it;
 * -EROFS for a closed day (its data is late and dropped). */
static int cut_partition(struct gw_store *s, struct cut_txns *tx,
			 enum gw_tier tier, int64_t day, struct part **out)
{
	int err = part_writable(s, tier, day, out);

	if (err)
		return err;
	for (size_t k = 0; k < tx->n; k++)
		if (tx->v[k].tier == tier && tx->v[k].day == day)
			return 0;
	if (tx->n == sizeof(tx->v) / sizeof(tx->v[0]))
		return -E2BIG;
	err = gw_store_exec((*out)->w, "BEGIN");
	if (err)
		return err;
	tx->v[tx->n].tier = tier;
	tx->v[tx->n++].day = day;
	return 0;
}

/* Writes the sealed chunks before H and the partial 1h day columns. */
static int write_cut(struct gw_store *s, int64_t H)
{
	size_t n = gw_series_index_count(s->idx);
	struct cut_txns tx = { .n = 0 };
	int err = 0;

	/* One transaction per partition touched. */
	for (size_t i = 0; i < s->nsealed && !err; i++) {
		struct sealed *x = &s->sealed[i];
		int64_t day = chunk_day(x->tier, x->t_min);
		struct gw_series *ser = gw_series_index_get(s->idx, x->id);
		struct part *p;

		if (x->t_min >= H || !ser)
			continue;
		err = cut_partition(s, &tx, x->tier, day, &p);
		if (err == -EROFS) {
			err = 0;
			continue;
		}
		if (err)
			break;
		err = gw_store_insert_series(p->w, ser, true);
		if (!err)
			err = write_chunk(p->w, x->id, x->t_min, x->t_max, x->n,
					  x->data, x->len);
		if (!err)
			p->samples += x->n;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct gw_series *ser = gw_series_index_at(s->idx, i);
		struct head *h = ser->head;
		struct gw_rollup *r = NULL;
		struct gw_buf out;
		struct part *p;
		size_t k = 0;

		if (!h->h1_dirty || !h->h1_day.len)
			continue;
		err = cut_partition(s, &tx, GW_TIER_1H, h->h1_day_start, &p);
		if (err == -EROFS) {
			err = 0;
			continue;
		}
		if (err)
			break;
		err = gw_store_frame_decode(&h->h1_day, &r, &k);
		gw_buf_init(&out, 64u << 20);
		if (!err && k)
			err = gw_rollup_encode(r, k, &out);
		if (!err)
			err = gw_store_insert_series(p->w, ser, true);
		if (!err && k)
			err = write_chunk(p->w, ser->id, r[0].t, r[k - 1].t,
					  (uint32_t)k, out.p, out.len);
		gw_buf_release(&out);
		gw_rollup_free_array(r, k);
	}
	for (size_t k = 0; k < tx.n; k++) {
		struct part *p = part_find(s, tx.v[k].tier, tx.v[k].day);

		if (!p || !p->w)
			continue;
		if (err)
			(void)gw_store_exec(p->w, "ROLLBACK");
		else
			err = gw_store_exec(p->w, "COMMIT");
	}
	return err;
}

static void drop_sealed_before(struct gw_store *s, int64_t H)
{
	size_t j = 0;

	pthread_rwlock_wrlock(&s->lock);
	for (size_t i = 0; i < s->nsealed; i++) {
		if (s->sealed[i].t_min < H)
			free(s->sealed[i].data);
		else
			s->sealed[j++] = s->sealed[i];
	}
	s->nsealed = j;
	pthread_rwlock_unlock(&s->lock);
}

static int set_watermark(struct gw_store *s, int64_t H)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "BEGIN; INSERT OR REPLACE INTO meta(k, v) VALUES "
		 "('watermark', %lld); DELETE FROM head WHERE t_max < %lld; "
		 "COMMIT; PRAGMA incremental_vacuum;", (long long)H,
		 (long long)H);
	return gw_store_exec(s->index, sql);
}

/* Closes, compacts and write-protects a finished day's partitions. */
static void close_day(struct gw_store *s, int64_t day)
{
	for (int t = 0; t < GW_TIERS; t++) {
		struct part *p = part_find(s, (enum gw_tier)t, day);
		sqlite3 *db;

		if (!p || p->closed)
			continue;
		if (p->w) {
			sqlite3_close(p->w);
			p->w = NULL;
		}
		if (gw_store_open_db(p->path, false, false, &db) == 0) {
			if (p->tier != GW_TIER_1H)
				(void)gw_store_compact_db(db, p->tier);
			(void)gw_store_exec(db, "INSERT OR REPLACE INTO meta(k, v) "
				       "VALUES ('closed', 1);"
				       "PRAGMA journal_mode=DELETE; VACUUM;");
			sqlite3_close(db);
		}
		(void)chmod(p->path, 0444);
		pthread_rwlock_wrlock(&s->lock);
		p->closed = true;
		p->bytes = file_bytes(p->path);
		pthread_rwlock_unlock(&s->lock);
		gw_info("store: closed partition %s (%llu bytes)", p->path,
			(unsigned long long)p->bytes);
	}
}

static int cut(struct gw_store *s, int64_t H)
{
	size_t n = gw_series_index_count(s->idx);
	int err = gw_store_flush(s);

	for (size_t i = 0; i < n && !err; i++) {
		struct gw_series *ser = gw_series_index_at(s->idx, i);

		err = head_close_before(s, ser, ser->head, H);
	}
	if (!err)
		err = write_cut(s, H);
	if (err) {
		gw_err("store: writing the hour before %lld failed (%s); kept "
		       "in memory and in the head log, retried", (long long)H,
		       strerror(-err));
		return err;
	}
	drop_sealed_before(s, H);
	for (size_t i = 0; i < n; i++)
		((struct head *)gw_series_index_at(s->idx, i)->head)->h1_dirty =
			false;
	err = set_watermark(s, H);
	if (err)
		return err;
	s->watermark = H;
	atomic_fetch_add(&s->st_cuts, 1);
	for (size_t i = 0; i < s->nparts; i++)
		if (!s->parts[i].closed && s->parts[i].day + MS_DAY <= H)
			close_day(s, s->parts[i].day);
	return 0;
}

/* ---- retention, budget, stats ---- */

static void drop_part(struct gw_store *s, size_t i, const char *why)
{
	struct part p;

	pthread_rwlock_wrlock(&s->lock);
	p = s->parts[i];
	memmove(&s->parts[i], &s->parts[i + 1],
		(s->nparts - i - 1) * sizeof(*s->parts));
	s->nparts--;
	pthread_rwlock_unlock(&s->lock);
	if (p.w)
		sqlite3_close(p.w);
	for (int k = 0; k < 3; k++) {
		char path[PATH_MAX + 340];

		snprintf(path, sizeof(path), "%s%s", p.path,
			 k == 0 ? "" : k == 1 ? "-wal" : "-shm");
		(void)unlink(path);
	}
	gw_info("store: dropped %s (%s)", p.path, why);
}

static void refresh_sizes(struct gw_store *s)
{
	uint64_t tier_bytes[GW_TIERS] = { 0 }, tier_samples[GW_TIERS] = { 0 };
	uint64_t total = 0;
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/index.db", s->dir);
	total += file_bytes(path);
	pthread_rwlock_wrlock(&s->lock); /* p->bytes is read by listings */
	for (size_t i = 0; i < s->nparts; i++) {
		struct part *p = &s->parts[i];

		if (!p->closed)
			p->bytes = file_bytes(p->path);
		tier_bytes[p->tier] += p->bytes;
		tier_samples[p->tier] += p->samples;
		total += p->bytes;
	}
	pthread_rwlock_unlock(&s->lock);
	for (int t = 0; t < GW_TIERS; t++) {
		atomic_store(&s->st_tier_bytes[t], tier_bytes[t]);
		atomic_store(&s->st_tier_samples[t], tier_samples[t]);
	}
	atomic_store(&s->st_disk, total);
}

static void enforce_limits(struct gw_store *s, int64_t now)
{
	int64_t today = floor_to(now, MS_DAY);

	for (size_t i = 0; i < s->nparts;) {
		struct part *p = &s->parts[i];

		if (p->day + MS_DAY <= now - s->o.retention_ms[p->tier]) {
			drop_part(s, i, "past its retention");
			atomic_fetch_add(&s->st_drop_ret, 1);
			continue;
		}
		i++;
	}
	refresh_sizes(s);
	while (s->o.disk_budget && atomic_load(&s->st_disk) > s->o.disk_budget) {
		/* Oldest first; parts are sorted by day.  Never today's. */
		if (!s->nparts || s->parts[0].day >= today) {
			static atomic_flag warned = ATOMIC_FLAG_INIT;

			gw_log_once(&warned, GW_LOG_WARN,
				    "store: over the disk budget with nothing "
				    "left to drop but today's data");
			break;
		}
		drop_part(s, 0, "over the disk budget");
		atomic_fetch_add(&s->st_drop_budget, 1);
		refresh_sizes(s);
	}
}

/* Quarantines a partition a query found damaged, once checked. */
static void check_suspect(struct gw_store *s)
{
	char path[sizeof(s->suspect)];

	pthread_mutex_lock(&s->suspect_lock);
	memcpy(path, s->suspect, sizeof(path));
	s->suspect[0] = '\0';
	pthread_mutex_unlock(&s->suspect_lock);
	if (!path[0])
		return;
	for (size_t i = 0; i < s->nparts; i++) {
		struct part p;

		if (strcmp(s->parts[i].path, path) != 0)
			continue;
		if (gw_store_check_file(path) != -EBADMSG)
			return; /* readable after all (or gone) */
		pthread_rwlock_wrlock(&s->lock);
		p = s->parts[i];
		memmove(&s->parts[i], &s->parts[i + 1],
			(s->nparts - i - 1) * sizeof(*s->parts));
		s->nparts--;
		pthread_rwlock_unlock(&s->lock);
		if (p.w)
			sqlite3_close(p.w);
		gw_store_quarantine(s, path, "SQLite reported corruption while "
				    "reading it");
		return;
	}
}

int gw_store_maintain(struct gw_store *s)
{
	int64_t now = gw_store_now(s);
	int64_t H = floor_to(now - s->o.grace_ms, MS_HOUR);
	int err = 0;

	check_suspect(s);
	if (now >= s->next_flush)
		err = gw_store_flush(s);
	if (!err && H > s->watermark)
		err = cut(s, H);
	if (now - s->last_maint >= 60000) {
		s->last_maint = now;
		enforce_limits(s, now);
	}
	return err;
}

/* ---- open / close ---- */

static int load_index(struct gw_store *s)
{
	sqlite3_stmt *st;
	uint64_t loaded = 0;
	int rc;

	rc = sqlite3_prepare_v2(s->index, "SELECT v FROM meta WHERE "
				"k = 'watermark'", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(s->index, rc, "index.db");
	if (sqlite3_step(st) == SQLITE_ROW)
		s->watermark = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	rc = sqlite3_prepare_v2(s->index, "SELECT id, key FROM series ORDER "
				"BY id", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(s->index, rc, "index.db");
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const char *key = (const char *)sqlite3_column_text(st, 1);
		struct gw_series *ser;
		struct gw_labels l;

		if (!key || id <= 0 || id >= UINT32_MAX ||
		    gw_store_key_labels(key, &l) != 0)
			continue;
		if (attach_series(s, &l, (uint32_t)id, true, &ser) == 0)
			loaded++;
		gw_labels_release(&l);
	}
	sqlite3_finalize(st);
	if (loaded)
		gw_info("store: %llu series in the index",
			(unsigned long long)loaded);
	return 0;
}

static int open_index(struct gw_store *s, bool *fresh)
{
	char path[PATH_MAX + 16];
	int err;

	snprintf(path, sizeof(path), "%s/index.db", s->dir);
	*fresh = access(path, F_OK) != 0;
	err = gw_store_open_db(path, true, false, &s->index);
	if (!err && !*fresh)
		err = gw_store_check_db(s->index);
	if (err == -EBADMSG) {
		sqlite3_close(s->index);
		s->index = NULL;
		gw_store_quarantine(s, path, "failed its integrity check");
		*fresh = true;
		err = gw_store_open_db(path, true, false, &s->index);
	}
	if (!err)
		err = gw_store_exec(s->index,
			   "CREATE TABLE IF NOT EXISTS head(seq INTEGER "
			   "PRIMARY KEY, t_min INTEGER NOT NULL, t_max INTEGER "
			   "NOT NULL, data BLOB NOT NULL);");
	return err;
}

/* Scans one tier directory, checking each partition. */
static int scan_tier(struct gw_store *s, enum gw_tier tier)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", s->dir, gw_store_tier_dir[tier]);
	if (mkdir(path, 0750) != 0 && errno != EEXIST)
		return -errno;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct tm tm = { 0 };
		char full[PATH_MAX + 300];

		if (strlen(de->d_name) > 64)
			continue;
		const char *end;
		sqlite3 *db;
		struct part p = { 0 };
		struct stat stt;

		end = strptime(de->d_name, "%Y-%m-%d", &tm);
		if (!end || strcmp(end, ".db") != 0)
			continue;
		snprintf(full, sizeof(full), "%s/%s", path, de->d_name);
		p.tier = tier;
		p.day = (int64_t)timegm(&tm) * 1000;
		snprintf(p.path, sizeof(p.path), "%s", full);
		p.closed = stat(full, &stt) == 0 && !(stt.st_mode & 0200);
		if (gw_store_open_db(full, false, true, &db) != 0 ||
		    gw_store_check_db(db) != 0) {
			sqlite3_close(db);
			gw_store_quarantine(s, full, "failed its integrity check");
			continue;
		}
		p.samples = sum_samples(db);
		sqlite3_close(db);
		p.bytes = file_bytes(full);
		if (s->nparts == s->capparts) {
			size_t ncap = s->capparts ? s->capparts * 2 : 32;
			struct part *np = realloc(s->parts, ncap * sizeof(*np));

			if (!np) {
				closedir(d);
				return -ENOMEM;
			}
			s->parts = np;
			s->capparts = ncap;
		}
		s->parts[s->nparts++] = p;
	}
	closedir(d);
	return 0;
}

/* With a fresh index, the series come back from the partitions. */
static void rebuild_series(struct gw_store *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nparts; i++) {
		sqlite3_stmt *st;
		sqlite3 *db;

		if (gw_store_open_db(s->parts[i].path, false, true, &db) != 0)
			continue;
		if (sqlite3_prepare_v2(db, "SELECT id, key FROM series", -1, &st,
				       NULL) == SQLITE_OK) {
			while (sqlite3_step(st) == SQLITE_ROW) {
				int64_t id = sqlite3_column_int64(st, 0);
				const char *key =
					(const char *)sqlite3_column_text(st, 1);
				struct gw_series *ser;
				struct gw_labels l;

				if (!key || id <= 0 || id >= UINT32_MAX ||
				    gw_store_key_labels(key, &l) != 0)
					continue;
				size_t before = gw_series_index_count(s->idx);

				if (attach_series(s, &l, (uint32_t)id, false,
						  &ser) == 0)
					n += gw_series_index_count(s->idx) -
					     before;
				gw_labels_release(&l);
			}
		}
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
	if (n)
		gw_warn("store: index rebuilt from the partitions (%llu "
			"series)", (unsigned long long)n);
}

/* Restores the day's 1-hour column of every series from its partition. */
static void load_h1_day(struct gw_store *s)
{
	int64_t day = floor_to(s->watermark, MS_DAY);
	struct part *p;
	sqlite3_stmt *st;
	sqlite3 *db;

	if (s->watermark == day || !(p = part_find(s, GW_TIER_1H, day)))
		return;
	if (gw_store_open_db(p->path, false, true, &db) != 0)
		return;
	if (sqlite3_prepare_v2(db, "SELECT series, data FROM chunks", -1, &st,
			       NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			struct gw_series *ser = gw_series_index_get(
				s->idx, (uint32_t)sqlite3_column_int64(st, 0));
			struct gw_rollup *r;
			struct head *h;
			size_t k;

			if (!ser ||
			    gw_rollup_decode(sqlite3_column_blob(st, 1),
					     (size_t)sqlite3_column_bytes(st, 1),
					     &r, &k) != 0)
				continue;
			h = ser->head;
			gw_buf_reset(&h->h1_day);
			h->h1_day_start = day;
			h->h1_day_t0 = k ? r[0].t : INT64_MIN;
			for (size_t i = 0; i < k; i++)
				if (gw_store_frame_add(&h->h1_day, &r[i]) != 0)
					break;
			gw_rollup_free_array(r, k);
		}
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

int gw_store_open(struct gw_store **out, const struct gw_store_opts *o,
		  char *err, size_t errlen)
{
	struct gw_store *s = calloc(1, sizeof(*s));
	bool fresh = false;
	int rc = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.now)
		s->o.now = real_now;
	if (s->o.flush_ms <= 0)
		s->o.flush_ms = 5000;
	snprintf(s->dir, sizeof(s->dir), "%s", o->dir);
	pthread_rwlock_init(&s->lock, NULL);
	pthread_mutex_init(&s->suspect_lock, NULL);
	atomic_flag_clear(&s->warned_cap);
	atomic_flag_clear(&s->warned_bad);
	atomic_flag_clear(&s->warned_order);
	atomic_flag_clear(&s->warned_corrupt);
	s->watermark = INT64_MIN;
	s->idx = gw_series_index_new(o->max_series, o->max_values);
	if (!s->idx) {
		rc = -ENOMEM;
		goto fail;
	}
	if (strlen(o->dir) >= sizeof(s->dir)) {
		rc = -ENAMETOOLONG;
		snprintf(err, errlen, "data directory path too long");
		goto fail;
	}
	if (mkdir(s->dir, 0750) != 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "cannot create %s: %s", s->dir,
			 strerror(errno));
		goto fail;
	}
	rc = open_index(s, &fresh);
	if (rc) {
		snprintf(err, errlen, "cannot open %s/index.db: %s", s->dir,
			 strerror(-rc));
		goto fail;
	}
	for (int t = 0; t < GW_TIERS && !rc; t++)
		rc = scan_tier(s, (enum gw_tier)t);
	if (rc) {
		snprintf(err, errlen, "cannot read %s: %s", s->dir,
			 strerror(-rc));
		goto fail;
	}
	if (s->nparts > 1)
		qsort(s->parts, s->nparts, sizeof(*s->parts), part_cmp);
	rc = load_index(s);
	if (!rc && fresh)
		rebuild_series(s);
	if (rc) {
		snprintf(err, errlen, "cannot load %s/index.db: %s", s->dir,
			 strerror(-rc));
		goto fail;
	}
	if (fresh && s->nparts) {
		/* Nothing after the newest partition's data is recoverable;
		 * start the watermark at the current hour. */
		s->watermark = floor_to(gw_store_now(s), MS_HOUR);
	}
	load_h1_day(s);
	rc = gw_store_replay(s);
	if (rc)
		goto fail;
	s->next_flush = gw_store_now(s) + s->o.flush_ms;
	refresh_sizes(s);
	s->last_maint = gw_store_now(s);
	gw_store_init_queryable(s);
	*out = s;
	return 0;
fail:
	if (!*err)
		snprintf(err, errlen, "%s", strerror(-rc));
	gw_store_close(s);
	return rc;
}

void gw_store_close(struct gw_store *s)
{
	if (!s)
		return;
	if (s->index && gw_store_flush(s) != 0)
		gw_err("store: the last flush failed; up to %lld ms of samples "
		       "are lost", (long long)s->o.flush_ms);
	for (size_t i = 0; i < s->nparts; i++)
		sqlite3_close(s->parts[i].w);
	free(s->parts);
	for (size_t i = 0; i < s->nsealed; i++)
		free(s->sealed[i].data);
	free(s->sealed);
	sqlite3_close(s->index);
	gw_series_index_free(s->idx, head_free);
	pthread_rwlock_destroy(&s->lock);
	pthread_mutex_destroy(&s->suspect_lock);
	free(s);
}

void gw_store_stats(struct gw_store *s, struct gw_store_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_rwlock_rdlock(&s->lock);
	st->series = gw_series_index_count(s->idx);
	st->partitions = s->nparts;
	pthread_rwlock_unlock(&s->lock);
	st->samples_appended = atomic_load(&s->st_appended);
	st->samples_refused_order = atomic_load(&s->st_order);
	st->samples_refused_cap = atomic_load(&s->st_cap);
	st->samples_refused_bad = atomic_load(&s->st_bad);
	st->flushes = atomic_load(&s->st_flushes);
	st->samples_unlogged = atomic_load(&s->st_unlogged);
	st->flush_errors = atomic_load(&s->st_flush_errors);
	st->cuts = atomic_load(&s->st_cuts);
	st->partitions_dropped_retention = atomic_load(&s->st_drop_ret);
	st->partitions_dropped_budget = atomic_load(&s->st_drop_budget);
	st->files_quarantined = atomic_load(&s->st_quarantined);
	st->corrupt_chunks = atomic_load(&s->st_corrupt);
	st->disk_bytes = atomic_load(&s->st_disk);
	for (int t = 0; t < GW_TIERS; t++) {
		st->tier_bytes[t] = atomic_load(&s->st_tier_bytes[t]);
		st->tier_samples[t] = atomic_load(&s->st_tier_samples[t]);
	}
	st->last_flush_seconds = (double)atomic_load(&s->st_flush_ns) / 1e9;
}
