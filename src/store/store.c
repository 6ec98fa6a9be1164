/* SPDX-License-Identifier: MIT */
/*
 * store.c - the store's frame: options, opening (the index, the scan of
 * the partitions, rebuilding the series, restoring the day's 1-hour
 * column, replaying the head log) and closing, the day partitions and
 * their write connections, SQLite plumbing, quarantine, framed rollups
 * and statistics.
 *
 * The rest of the write path: the head, where samples are appended, is in
 * store_head.c; the hourly cuts, closing finished days, retention and the
 * disk budget (gw_store_maintain) in store_maint.c; the head log in
 * headlog.c, compaction of a closed day in compact.c.  Queries are in
 * store_read.c.  All share store_int.h.
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

#include "common/bits.h"
#include "common/log.h"

const char *const gw_store_tier_dir[GW_TIERS] = { "raw", "1m", "1h" };

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
	o->retire_ms = 5 * MS_MIN;
}

void gw_store_part_name(const struct part *p, char *out, size_t len)
{
	char day[11];

	gw_store_day_name(p->day, day);
	snprintf(out, len, "%s/%s", gw_store_tier_dir[p->tier], day);
}

const char *gw_store_dir(const struct gw_store *s)
{
	return s->dir;
}

int gw_store_parse_partition(const char *name, enum gw_tier *tier, int64_t *day)
{
	const char *slash = strchr(name, '/'), *end;
	struct tm tm = { 0 };
	char back[11];
	int t;

	if (!slash)
		return -EINVAL;
	for (t = 0; t < GW_TIERS; t++)
		if (strlen(gw_store_tier_dir[t]) == (size_t)(slash - name) &&
		    strncmp(name, gw_store_tier_dir[t],
			    (size_t)(slash - name)) == 0)
			break;
	if (t == GW_TIERS || strlen(slash + 1) != 10)
		return -EINVAL;
	end = strptime(slash + 1, "%Y-%m-%d", &tm);
	if (!end || *end)
		return -EINVAL;
	*tier = (enum gw_tier)t;
	*day = (int64_t)timegm(&tm) * 1000;
	/* strptime accepts 2026-2-1 and 2026-02-31: only the canonical
	 * spelling names a partition. */
	gw_store_day_name(*day, back);
	return strcmp(back, slash + 1) == 0 ? 0 : -EINVAL;
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
	size_t at = b->len;
	uint32_t len;
	int err = gw_buf_add(b, "\0\0\0\0", 4);

	if (!err)
		err = gw_rollup_encode(r, 1, b);
	/* All or nothing: a length without its frame would make the frames
	 * after it unreadable. */
	if (err) {
		gw_buf_truncate(b, at);
		return err;
	}
	len = (uint32_t)(b->len - at - 4);
	memcpy(b->p + at, &len, sizeof(len));
	return 0;
}

int gw_store_frame_add_all(struct gw_buf *b, const struct gw_rollup *r,
			   size_t n)
{
	size_t at = b->len;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = gw_store_frame_add(b, &r[i]);
	if (err)
		gw_buf_truncate(b, at);
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
	gw_err("store: %s: %s", what,
	       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
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
		return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? -EBADMSG
		       : rc == SQLITE_FULL			   ? -ENOSPC
								   : -EIO;
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
	" data BLOB NOT NULL, PRIMARY KEY(series, t_min));"
	/* The open day's cut hours (store_maint.c): blocks of the hour's
	 * chunks keyed hour << 32 | last series, and the hour's keys.  A
	 * block's series ids come before its data, so that a lookup reads
	 * them without the block's overflow pages. */
	"CREATE TABLE IF NOT EXISTS hblocks(id INTEGER PRIMARY KEY,"
	" t_min INTEGER NOT NULL, t_max INTEGER NOT NULL, n INTEGER NOT NULL,"
	" ids BLOB, data BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS hkeys(hour INTEGER PRIMARY KEY,"
	" data BLOB NOT NULL);";

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
		bool index =
			len >= 9 && strcmp(path + len - 9, "/index.db") == 0;
		char pragmas[320];

		/*
		 * Before the first table: index.db reclaims the head log's
		 * pages after each cut (auto_vacuum); partitions only grow
		 * and are vacuumed once when closed.  Both use small pages
		 * so that a day of sparse series does not cost 4 KiB per
		 * table (index.db has seven of them; an older one keeps
		 * its 4 KiB pages).
		 */
		snprintf(pragmas, sizeof(pragmas),
			 "%s"
			 "PRAGMA journal_mode=WAL;"
			 "PRAGMA synchronous=NORMAL;"
			 "PRAGMA journal_size_limit=4194304;"
			 /* Debian's SQLite overwrites every freed page
			  * (SECURE_DELETE): each cut's deleted hour of
			  * head log and each closed day's dropped rows
			  * were written twice.  FAST clears them only
			  * where no extra I/O is needed. */
			 "PRAGMA secure_delete=FAST;",
			 !create ? ""
			 : index ? "PRAGMA page_size=1024;"
				   "PRAGMA auto_vacuum=INCREMENTAL;"
				 : "PRAGMA page_size=1024;");
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
	rc = sqlite3_prepare_v2(
		db,
		gw_store_part_form(db) == GW_PART_ZBLOCKS
			? "SELECT id, t_min, t_max, n, data "
			  "FROM zblocks LIMIT 1"
			: "SELECT series, t_min, t_max, n, data "
			  "FROM chunks LIMIT 1",
		-1, &st, NULL);
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
	snprintf(dst, sizeof(dst), "%s/%s%s%s.%lld", qdir, tier,
		 *tier ? "-" : "", base, (long long)now);
	if (rename(path, dst) != 0) {
		gw_err("store: cannot move corrupt %s to %s: %s", path, dst,
		       strerror(errno));
	} else {
		gw_err("store: %s is corrupt (%s); moved to %s, the rest of "
		       "the store is unaffected",
		       path, why, dst);
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

struct part *gw_store_part_find(struct gw_store *s, enum gw_tier tier,
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

uint64_t gw_store_file_bytes(const char *path)
{
	uint64_t total = 0;

	for (int i = 0; i < 3; i++) {
		char p[PATH_MAX + 8];
		struct stat st;
		int n;

		/* a name too long to fit cannot be there */
		n = snprintf(p, sizeof(p), "%s%s", path,
			     i == 0   ? ""
			     : i == 1 ? "-wal"
				      : "-shm");
		if (n > 0 && (size_t)n < sizeof(p) && stat(p, &st) == 0)
			total += (uint64_t)st.st_size;
	}
	return total;
}

static uint64_t sum_samples(sqlite3 *db)
{
	sqlite3_stmt *st;
	uint64_t n = 0;

	enum gw_part_form f = gw_store_part_form(db);

	if (sqlite3_prepare_v2(db,
			       f == GW_PART_ZBLOCKS
				       ? "SELECT total(n) FROM zblocks"
			       : f == GW_PART_PACKED
				       ? "SELECT total(n) FROM chunks"
				       : "SELECT total(n) + (SELECT total(n) "
					 "FROM hblocks) FROM chunks",
			       -1, &st, NULL) != SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT total(n) FROM chunks", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = (uint64_t)sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Adds (or finds) the partition, opening its write connection. */
int gw_store_part_writable(struct gw_store *s, enum gw_tier tier, int64_t day,
			   struct part **out)
{
	struct part *p = gw_store_part_find(s, tier, day);
	char path[PATH_MAX];
	int err;

	if (p && p->w) {
		p->stale = true; /* about to be written */
		*out = p;
		return 0;
	}
	if (p && p->closed) {
		gw_warn("store: partition %s is closed; data for it is late "
			"and dropped",
			p->path);
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
			p = gw_store_part_find(s, tier, day);
		}
		p->w = db;
		p->stale = true;
		pthread_rwlock_unlock(&s->lock);
	}
	*out = p;
	return 0;
}

/* ---- open / close ---- */

/* The index's series, from its rows and its packed lists, by id. */
struct idkeys {
	struct idkey {
		int64_t id;
		char *key;
	} * v;
	size_t n, cap;
};

static int idkeys_add(void *ctx, int64_t id, const char *key)
{
	struct idkeys *k = ctx;
	char *dup;

	if (id <= 0 || id >= UINT32_MAX)
		return 0;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		struct idkey *v = realloc(k->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	dup = strdup(key);
	if (!dup)
		return -ENOMEM;
	k->v[k->n].id = id;
	k->v[k->n++].key = dup;
	return 0;
}

static int cmp_idkey(const void *a, const void *b)
{
	const struct idkey *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int load_index(struct gw_store *s, bool *damaged)
{
	struct idkeys k = { 0 };
	sqlite3_stmt *st;
	uint64_t loaded = 0;
	int err = 0, rc;

	rc = sqlite3_prepare_v2(s->index,
				"SELECT v FROM meta WHERE "
				"k = 'watermark'",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(s->index, rc, "index.db");
	if (sqlite3_step(st) == SQLITE_ROW)
		s->watermark = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	rc = sqlite3_prepare_v2(s->index, "SELECT id, key FROM series", -1, &st,
				NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(s->index, rc, "index.db");
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 1);

		if (key)
			err = idkeys_add(&k, sqlite3_column_int64(st, 0), key);
	}
	sqlite3_finalize(st);
	/* The series of closed days, packed (gw_store_pack_index). */
	rc = sqlite3_prepare_v2(s->index, "SELECT data FROM series_packed", -1,
				&st, NULL);
	if (rc != SQLITE_OK) {
		err = gw_store_sql_err(s->index, rc, "index.db");
		goto out;
	}
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		int r = gw_store_each_packed(
			sqlite3_column_blob(st, 0),
			(size_t)sqlite3_column_bytes(st, 0), SIZE_MAX,
			idkeys_add, &k);

		if (r == -EBADMSG) {
			gw_err("store: a packed list of series in index.db "
			       "is damaged; its series are read from the "
			       "partitions instead");
			*damaged = true;
		} else {
			err = r;
		}
	}
	sqlite3_finalize(st);
	if (err)
		goto out;
	if (k.n > 1)
		qsort(k.v, k.n, sizeof(*k.v), cmp_idkey);
	for (size_t i = 0; i < k.n; i++) {
		int64_t id = k.v[i].id;
		const char *key = k.v[i].key;
		struct gw_series *ser;
		struct gw_labels l;

		if ((i && k.v[i - 1].id == id) ||
		    gw_store_key_labels(key, &l) != 0)
			continue;
		if (gw_store_attach_series(s, &l, (uint32_t)id, true, &ser) ==
		    0)
			loaded++;
		/* Two keys of an older version that differ only by empty
		 * values are one series now: the first id holds it. */
		if (ser && ser->id != (uint32_t)id)
			gw_warn("store: series %lld (%s) is series %u once "
				"empty label values are dropped; its samples "
				"from before are not read",
				(long long)id, key, ser->id);
		gw_labels_release(&l);
	}
	if (loaded)
		gw_info("store: %llu series in the index",
			(unsigned long long)loaded);
out:
	for (size_t i = 0; i < k.n; i++)
		free(k.v[i].key);
	free(k.v);
	return err;
}

static int open_index(struct gw_store *s, bool *fresh,
		      struct gw_store_salvage *sv, bool *salvaged)
{
	char path[PATH_MAX + 16];
	uint8_t *log = NULL;
	size_t loglen = 0;
	int err;

	snprintf(path, sizeof(path), "%s/index.db", s->dir);
	*fresh = access(path, F_OK) != 0;
	/* The log after a crash holds the last flushes; SQLite empties a log
	 * it cannot use, so a copy is taken first (at most a few MiB:
	 * journal_size_limit and the automatic checkpoints bound it). */
	if (!*fresh && gw_store_salvage_read_log(path, &log, &loglen) != 0)
		log = NULL;
	err = gw_store_open_db(path, true, false, &s->index);
	if (!err && !*fresh)
		err = gw_store_check_db(s->index);
	if (err == -EBADMSG) {
		int r;

		sqlite3_close(s->index);
		s->index = NULL;
		/* Before it goes: what the damaged file still holds. */
		r = gw_store_salvage(path, log, loglen, sv);
		if (r)
			gw_err("store: cannot read the damaged %s to recover "
			       "from it: %s",
			       path, strerror(-r));
		*salvaged = r == 0;
		gw_store_quarantine(s, path, "failed its integrity check");
		*fresh = true;
		err = gw_store_open_db(path, true, false, &s->index);
	}
	free(log);
	if (!err)
		err = gw_store_exec(
			s->index,
			"CREATE TABLE IF NOT EXISTS head(seq INTEGER "
			"PRIMARY KEY, t_min INTEGER NOT NULL, t_max INTEGER "
			"NOT NULL, data BLOB NOT NULL);");
	/* The keys of the series known before the last closed day, packed
	 * (gw_store_pack_index): a tenth of their rows' size. */
	if (!err)
		err = gw_store_exec(s->index,
				    "CREATE TABLE IF NOT EXISTS series_packed("
				    "seq INTEGER PRIMARY KEY, data BLOB NOT "
				    "NULL);");
	/* The partitions the archive holds (the cold tier): name
	 * ("raw/2026-12-01"), size, and pinned: restored to this disk by an
	 * operator, kept here whatever the local retention. */
	if (!err)
		err = gw_store_exec(
			s->index,
			"CREATE TABLE IF NOT EXISTS archived(name TEXT "
			"PRIMARY KEY, bytes INTEGER NOT NULL, pinned INTEGER "
			"NOT NULL DEFAULT 0);");
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
			gw_store_quarantine(s, full,
					    "failed its integrity check");
			continue;
		}
		p.samples = sum_samples(db);
		sqlite3_close(db);
		p.bytes = gw_store_file_bytes(full);
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

static int add_part(struct gw_store *s, const struct part *p)
{
	if (s->nparts == s->capparts) {
		size_t ncap = s->capparts ? s->capparts * 2 : 32;
		struct part *np = realloc(s->parts, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		s->parts = np;
		s->capparts = ncap;
	}
	s->parts[s->nparts++] = *p;
	return 0;
}

/*
 * The partitions the archive holds (index.db's archived table): a local
 * one is marked archived, one no longer on the disk is listed as remote,
 * read through the fetch hook.
 */
static int load_archived(struct gw_store *s)
{
	sqlite3_stmt *st;
	int rc, err = 0;

	rc = sqlite3_prepare_v2(s->index,
				"SELECT name, bytes, pinned FROM archived", -1,
				&st, NULL);
	if (rc != SQLITE_OK)
		return gw_store_sql_err(s->index, rc, "reading archived");
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		struct part p = { 0 }, *have;

		if (!name || gw_store_parse_partition(name, &p.tier, &p.day))
			continue;
		have = gw_store_part_find(s, p.tier, p.day);
		if (have) {
			have->archived = have->closed;
			have->pinned = sqlite3_column_int(st, 2) != 0;
			continue;
		}
		p.closed = p.archived = p.remote = true;
		p.bytes = (uint64_t)sqlite3_column_int64(st, 1);
		snprintf(p.path, sizeof(p.path), "%s/%s.db", s->dir, name);
		err = add_part(s, &p);
	}
	sqlite3_finalize(st);
	return err;
}

struct rebuild {
	struct gw_store *s;
	uint64_t n;
};

/* The newest t_max of a partition, whatever its form. */
static bool prepare_max_t(sqlite3 *db, sqlite3_stmt **st)
{
	enum gw_part_form f = gw_store_part_form(db);

	return sqlite3_prepare_v2(
		       db,
		       f == GW_PART_ZBLOCKS ? "SELECT max(t_max) FROM zblocks"
		       : f == GW_PART_PACKED
			       ? "SELECT max(t_max) FROM chunks"
			       : "SELECT max(t) FROM (SELECT max(t_max) AS t "
				 "FROM chunks UNION ALL SELECT max(t_max) "
				 "FROM hblocks)",
		       -1, st, NULL) == SQLITE_OK ||
	       sqlite3_prepare_v2(db, "SELECT max(t_max) FROM chunks", -1, st,
				  NULL) == SQLITE_OK;
}

/* The hour after the newest raw sample in the partitions (a cut writes
 * whole hours, so every sample before it is there): INT64_MIN if none. */
static int64_t partitions_end(struct gw_store *s)
{
	int64_t end = INT64_MIN;

	for (size_t i = 0; i < s->nparts; i++) {
		sqlite3_stmt *st;
		sqlite3 *db;

		if (s->parts[i].tier != GW_TIER_RAW || s->parts[i].remote ||
		    gw_store_open_db(s->parts[i].path, false, true, &db) != 0)
			continue;
		if (prepare_max_t(db, &st) && sqlite3_step(st) == SQLITE_ROW &&
		    sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
			int64_t t = sqlite3_column_int64(st, 0);

			if (t < INT64_MAX - MS_HOUR &&
			    floor_to(t, MS_HOUR) + MS_HOUR > end)
				end = floor_to(t, MS_HOUR) + MS_HOUR;
		}
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
	return end;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_row(const void *a, const void *b)
{
	const struct gw_store_salvage_row *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->t_min < y->t_min ? -1 : x->t_min > y->t_min;
}

/*
 * After the index was rebuilt from the partitions: puts back what the
 * damaged index.db still held (salvage.c).  Series rows the partitions do
 * not know (series created since the last cut) are added; the watermark
 * is the newest of the one found and the partitions' end; head log rows
 * after it go into the new head log, from where gw_store_replay() reads
 * them as after any restart.  One report says what came back and what
 * did not: samples of series whose key was lost, damaged records.
 */
static void apply_salvage(struct gw_store *s, struct gw_store_salvage *sv,
			  uint64_t from_parts)
{
	uint64_t nser = 0, nrows = 0, samples = 0, lost = 0, old = 0;
	int64_t wm = partitions_end(s);
	uint32_t *ids = NULL;
	size_t nids = 0, capids = 0, lost_series = 0;
	sqlite3_stmt *st = NULL;
	char sql[160];

	for (size_t i = 0; i < sv->nseries; i++) {
		struct gw_series *ser;
		struct gw_labels l;

		if (gw_series_index_get(s->idx, (uint32_t)sv->series[i].id) ||
		    gw_store_key_labels(sv->series[i].key, &l) != 0)
			continue;
		if (gw_store_attach_series(s, &l, (uint32_t)sv->series[i].id,
					   false, &ser) == 0 &&
		    ser->id == (uint32_t)sv->series[i].id)
			nser++;
		gw_labels_release(&l);
	}
	if (sv->have_watermark && sv->watermark > wm)
		wm = sv->watermark;
	s->watermark = wm;
	if (wm != INT64_MIN) {
		snprintf(sql, sizeof(sql),
			 "INSERT OR REPLACE INTO meta(k, v) VALUES "
			 "('watermark', %lld);",
			 (long long)wm);
		if (gw_store_exec(s->index, sql))
			gw_warn("store: cannot write the watermark to the new "
				"index.db");
	}
	if (sv->nrows > 1)
		qsort(sv->rows, sv->nrows, sizeof(*sv->rows), cmp_row);
	if (sqlite3_prepare_v2(s->index,
			       "INSERT INTO head(t_min, t_max, data) "
			       "VALUES (?, ?, ?)",
			       -1, &st, NULL) != SQLITE_OK)
		st = NULL;
	(void)gw_store_exec(s->index, "BEGIN;");
	for (size_t i = 0; i < sv->nrows; i++) {
		const uint8_t *p = sv->rows[i].data;
		const uint8_t *end = p + sv->rows[i].len;

		if (sv->rows[i].t_max < wm) {
			old++; /* deleted by a cut: in the partitions */
			continue;
		}
		/* What it holds, for the report. */
		while (p < end) {
			uint64_t id, cnt, t0, d;
			bool known;

			if (gw_varint_get(&p, end, &id) ||
			    gw_varint_get(&p, end, &cnt) ||
			    gw_varint_get(&p, end, &t0))
				break;
			known = id <= UINT32_MAX &&
				gw_series_index_get(s->idx, (uint32_t)id);
			if (!known && nids == capids) {
				size_t cap = capids ? capids * 2 : 64;
				uint32_t *v = realloc(ids, cap * sizeof(*v));

				if (v) {
					ids = v;
					capids = cap;
				}
			}
			if (!known && nids < capids)
				ids[nids++] = (uint32_t)id;
			for (uint64_t j = 0, t = t0; j < cnt; j++) {
				if (gw_varint_get(&p, end, &d) || end - p < 8) {
					sv->damaged++;
					p = end;
					break;
				}
				p += 8;
				t += d;
				if ((int64_t)t < wm)
					continue;
				if (known)
					samples++;
				else
					lost++;
			}
		}
		if (st) {
			sqlite3_bind_int64(st, 1, sv->rows[i].t_min);
			sqlite3_bind_int64(st, 2, sv->rows[i].t_max);
			sqlite3_bind_blob(st, 3, sv->rows[i].data,
					  (int)sv->rows[i].len, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_DONE)
				nrows++;
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
		}
	}
	(void)gw_store_exec(s->index, "COMMIT;");
	sqlite3_finalize(st);
	if (nids) {
		qsort(ids, nids, sizeof(*ids), cmp_u32);
		for (size_t i = 0; i < nids; i++)
			lost_series += i == 0 || ids[i] != ids[i - 1];
	}
	free(ids);
	gw_warn("store: index.db rebuilt: %llu series from the partitions; "
		"from the damaged file %llu series, %llu head log records "
		"with %llu samples since the last cut%s; not recovered: "
		"%llu samples of %zu series whose keys were lost, %llu "
		"damaged records%s",
		(unsigned long long)from_parts, (unsigned long long)nser,
		(unsigned long long)nrows, (unsigned long long)samples,
		sv->have_watermark ? ""
				   : " (its watermark was lost: taken "
				     "from the partitions)",
		(unsigned long long)lost, lost_series,
		(unsigned long long)sv->damaged,
		old ? " (older records already in the partitions skipped)"
		    : "");
}

static int rebuild_one(void *ctx, int64_t id, const char *key)
{
	struct rebuild *rb = ctx;
	struct gw_series *ser;
	struct gw_labels l;
	size_t before = gw_series_index_count(rb->s->idx);

	if (id <= 0 || id >= UINT32_MAX || gw_store_key_labels(key, &l) != 0)
		return 0;
	if (gw_store_attach_series(rb->s, &l, (uint32_t)id, false, &ser) == 0)
		rb->n += gw_series_index_count(rb->s->idx) - before;
	gw_labels_release(&l);
	return 0;
}

/* With a fresh index, the series come back from the partitions; the
 * number that did. */
static uint64_t rebuild_series(struct gw_store *s)
{
	struct rebuild rb = { s, 0 };

	for (size_t i = 0; i < s->nparts; i++) {
		sqlite3 *db;

		if (s->parts[i].remote ||
		    gw_store_open_db(s->parts[i].path, false, true, &db) != 0)
			continue;
		if (gw_store_each_series(db, rebuild_one, &rb) != 0)
			gw_warn("store: the series list of %s is damaged; "
				"its series may be missing",
				s->parts[i].path);
		sqlite3_close(db);
	}
	if (rb.n)
		gw_warn("store: index rebuilt from the partitions (%llu "
			"series)",
			(unsigned long long)rb.n);
	return rb.n;
}

int gw_store_open(struct gw_store **out, const struct gw_store_opts *o,
		  char *err, size_t errlen)
{
	struct gw_store *s = calloc(1, sizeof(*s));
	struct gw_store_salvage sv = { 0 };
	bool fresh = false, salvaged = false, damaged = false;
	uint64_t rebuilt = 0;
	int rc = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->log_fd = -1;
	s->o = *o;
	if (!s->o.now)
		s->o.now = real_now;
	if (s->o.flush_ms <= 0)
		s->o.flush_ms = 5000;
	if (s->o.retire_ms <= 0)
		s->o.retire_ms = 5 * MS_MIN;
	snprintf(s->dir, sizeof(s->dir), "%s", o->dir);
	{
		/* Writers first: a stream of queries, each holding the read
		 * lock for one short copy at a time, never keeps the writer
		 * out longer than one such copy. */
		pthread_rwlockattr_t ra;

		pthread_rwlockattr_init(&ra);
		pthread_rwlockattr_setkind_np(
			&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->lock, &ra);
		pthread_rwlockattr_destroy(&ra);
	}
	pthread_mutex_init(&s->suspect_lock, NULL);
	pthread_mutex_init(&s->arch_lock, NULL);
	atomic_flag_clear(&s->warned_fetch);
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
	rc = open_index(s, &fresh, &sv, &salvaged);
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
	rc = load_archived(s);
	if (rc) {
		snprintf(err, errlen,
			 "cannot read the archived partitions "
			 "from %s/index.db: %s",
			 s->dir, strerror(-rc));
		goto fail;
	}
	if (s->nparts > 1)
		qsort(s->parts, s->nparts, sizeof(*s->parts), part_cmp);
	rc = load_index(s, &damaged);
	if (!rc && (fresh || damaged))
		rebuilt = rebuild_series(s);
	if (rc) {
		snprintf(err, errlen, "cannot load %s/index.db: %s", s->dir,
			 strerror(-rc));
		goto fail;
	}
	if (salvaged) {
		apply_salvage(s, &sv, rebuilt);
	} else if (fresh && s->nparts) {
		/* Nothing after the newest partition's data is recoverable;
		 * start the watermark at the current hour. */
		s->watermark = floor_to(gw_store_now(s), MS_HOUR);
	}
	gw_store_salvage_release(&sv);
	rc = gw_store_replay(s);
	if (!rc)
		rc = gw_store_log_replay(s);
	if (rc) {
		snprintf(err, errlen, "cannot replay the head log in %s: %s",
			 s->dir, strerror(-rc));
		goto fail;
	}
	/* Series known from disk that the log did not revive: the sweeps
	 * take them out of memory like any series that stopped. */
	for (size_t i = 0; i < gw_series_index_count(s->idx); i++) {
		struct gw_series *ser = gw_series_index_at(s->idx, i);
		struct head *h = ser->head;

		if (!h->in_active && gw_store_list_push(&s->active, ser) == 0)
			h->in_active = true;
	}
	s->next_flush = gw_store_now(s) + s->o.flush_ms;
	gw_store_refresh_sizes(s);
	s->last_maint = gw_store_now(s);
	gw_store_init_queryable(s);
	*out = s;
	return 0;
fail:
	gw_store_salvage_release(&sv);
	if (!*err)
		snprintf(err, errlen, "%s", strerror(-rc));
	gw_store_close(s);
	return rc;
}

/*
 * A read-only connection that is the last to close a WAL database cannot
 * checkpoint it or delete its -wal and -shm files, so queries of an open
 * day would leave them beside it after a stop.  Opening and closing each
 * open partition read-write once more, last, removes them.
 */
static void tidy_wal(struct gw_store *s)
{
	for (size_t i = 0; i < s->nparts; i++) {
		char shm[sizeof(s->parts[i].path) + 8];
		sqlite3 *db = NULL;

		if (s->parts[i].closed || s->parts[i].remote)
			continue;
		snprintf(shm, sizeof(shm), "%s-shm", s->parts[i].path);
		if (access(shm, F_OK) != 0)
			continue;
		if (sqlite3_open_v2(s->parts[i].path, &db,
				    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
				    NULL) == SQLITE_OK)
			(void)sqlite3_exec(db, "PRAGMA schema_version", NULL,
					   NULL, NULL);
		sqlite3_close(db);
	}
}

void gw_store_close(struct gw_store *s)
{
	if (!s)
		return;
	if (s->index && gw_store_flush(s) != 0)
		gw_err("store: the last flush failed; up to %lld ms of samples "
		       "are lost",
		       (long long)s->o.flush_ms);
	gw_store_log_close(s);
	for (size_t i = 0; i < s->nparts; i++)
		sqlite3_close(s->parts[i].w);
	tidy_wal(s);
	free(s->parts);
	for (size_t i = 0; i < s->nsealed; i++)
		free(s->sealed[i].data);
	free(s->sealed);
	free(s->dirty.v);
	free(s->active.v);
	sqlite3_finalize(s->st_series);
	sqlite3_finalize(s->st_head);
	sqlite3_close(s->index);
	gw_store_grave_free(s, true);
	free(s->grave.v);
	free(s->ev.v);
	free(s->ev_last);
	gw_series_index_free(s->idx, gw_store_head_free);
	pthread_rwlock_destroy(&s->lock);
	pthread_mutex_destroy(&s->suspect_lock);
	pthread_mutex_destroy(&s->arch_lock);
	free(s);
}

void gw_store_stats(struct gw_store *s, struct gw_store_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_rwlock_rdlock(&s->lock);
	{
		struct gw_series_index_stats xs;

		gw_series_index_stats(s->idx, &xs);
		st->series = xs.series + s->ev.n;
		st->series_evicted = s->ev.n;
		st->series_live = xs.live;
	}
	for (size_t i = 0; i < s->nparts; i++)
		st->partitions += !s->parts[i].remote; /* on this disk */
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
