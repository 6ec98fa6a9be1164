/* SPDX-License-Identifier: MIT */
/*
 * store_maint.c - what the writer does besides appending
 * (gw_store_maintain): the hourly cuts into day partitions, closing a
 * finished day's partitions, retention, the disk budget and quarantining
 * a partition a query found damaged.
 *
 *   cut(H), when now >= H + grace: everything before H leaves the head:
 *   sealed[] (raw chunks, the hour's minutes, the hour's 1-hour rollup)
 *   is written to the partitions of their days, per hour of the day as
 *   zstd blocks of whole series and a packed list of the hour's keys; then
 *   the watermark becomes H and the head log before H is deleted.  A crash
 *   between the two steps replays the log into the same hours, whose
 *   blocks the next try replaces, so a cut is idempotent.
 */
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

/* ---- cuts ---- */

/* Partition of a chunk: the day of its first timestamp (a rollup's t is
 * its window end, so its day is that of t - 1). */
static int64_t chunk_day(enum gw_tier tier, int64_t t_min)
{
	return floor_to(tier == GW_TIER_RAW ? t_min : t_min - 1, MS_DAY);
}

/* The hour of the day (0-23) a chunk belongs to, as chunk_day. */
static int64_t chunk_hour(enum gw_tier tier, int64_t t_min)
{
	int64_t t = tier == GW_TIER_RAW ? t_min : t_min - 1;

	return (floor_to(t, MS_HOUR) - floor_to(t, MS_DAY)) / MS_HOUR;
}

/* Whether a sealed chunk is of the time before H: a rollup's t is its
 * window's end, so the window that ends at H is. */
static bool sealed_before(const struct sealed *x, int64_t H)
{
	return x->tier == GW_TIER_RAW ? x->t_min < H : x->t_min <= H;
}

/* A sealed chunk to write, with what orders it. */
struct cut_ref {
	enum gw_tier tier;
	int64_t day, hour;
	uint32_t id;
	int64_t t_min;
	const struct sealed *x;
	const char *key;
};

static int cut_ref_cmp(const void *a, const void *b)
{
	const struct cut_ref *x = a, *y = b;

	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	if (x->day != y->day)
		return x->day < y->day ? -1 : 1;
	if (x->hour != y->hour)
		return x->hour < y->hour ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->t_min > y->t_min) - (x->t_min < y->t_min);
}

static int cut_key_cmp(const void *a, const void *b)
{
	const struct cut_ref *const *x = a, *const *y = b;

	return strcmp((*x)->key, (*y)->key);
}

/* The hour's keys as one packed list: each series once, by key. */
static int write_hour_keys(sqlite3 *db, int64_t hour, struct cut_ref *v,
			   size_t n)
{
	struct cut_ref **byk = malloc(n * sizeof(*byk));
	struct gw_keylist kl;
	sqlite3_stmt *st = NULL;
	size_t m = 0, zlen = 0;
	void *z = NULL;
	int err = 0, rc;

	if (!byk)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) /* v is in id order */
		if (!m || byk[m - 1]->id != v[i].id)
			byk[m++] = &v[i];
	qsort(byk, m, sizeof(*byk), cut_key_cmp);
	gw_keylist_init(&kl);
	for (size_t i = 0; i < m && !err; i++)
		err = gw_keylist_add(&kl, byk[i]->id, byk[i]->key);
	if (!err)
		err = gw_keylist_pack(&kl, &z, &zlen);
	gw_keylist_release(&kl);
	free(byk);
	if (err || !z)
		return err;
	rc = sqlite3_prepare_v2(db,
				"INSERT OR REPLACE INTO hkeys(hour, data) "
				"VALUES (?, ?)",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, hour);
		sqlite3_bind_blob(st, 2, z, (int)zlen, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	free(z);
	return rc == SQLITE_DONE ? 0 : gw_store_sql_err(db, rc, "write cut");
}

/*
 * One hour of one partition: its blocks replace whatever an earlier try
 * of the same cut wrote (a crash before the watermark moved replays the
 * same samples into the same hour), then its key list.
 */
static int write_hour(sqlite3 *db, int64_t hour, struct cut_ref *v, size_t n,
		      uint64_t *samples)
{
	int64_t base = hour << GW_HOUR_SHIFT;
	struct gw_zwriter w;
	sqlite3_stmt *del = NULL;
	int err, rc;

	rc = sqlite3_prepare_v2(db,
				"DELETE FROM hblocks WHERE id >= ?1 AND id < "
				"?2",
				-1, &del, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(del, 1, base);
		sqlite3_bind_int64(del, 2, (hour + 1) << GW_HOUR_SHIFT);
		rc = sqlite3_step(del);
	}
	sqlite3_finalize(del);
	if (rc != SQLITE_DONE)
		return gw_store_sql_err(db, rc, "write cut");
	err = gw_zwriter_init(&w, db, "hblocks", base, true);
	for (size_t i = 0; i < n && !err; i++) {
		const struct sealed *x = v[i].x;
		struct gw_zchunk c = { x->id,	 x->n,	  x->t_min,
				       x->t_max, x->data, x->len };

		err = gw_zwriter_add(&w, &c);
		*samples += x->n;
	}
	if (!err)
		err = gw_zwriter_flush(&w);
	gw_zwriter_release(&w);
	if (!err)
		err = write_hour_keys(db, hour, v, n);
	return err;
}

/*
 * Writes the sealed chunks before H: per partition (tier, day) one
 * transaction, in it per hour of the day one set of blocks and one key
 * list.  A closed day's partition takes nothing (late data, dropped).
 */
static int write_cut(struct gw_store *s, int64_t H)
{
	struct cut_ref *v = malloc((s->nsealed ? s->nsealed : 1) * sizeof(*v));
	size_t n = 0;
	int err = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->nsealed; i++) {
		const struct sealed *x = &s->sealed[i];
		struct gw_series *ser = gw_series_index_get(s->idx, x->id);

		if (!sealed_before(x, H) || !ser)
			continue;
		v[n++] = (struct cut_ref){ x->tier,
					   chunk_day(x->tier, x->t_min),
					   chunk_hour(x->tier, x->t_min),
					   x->id,
					   x->t_min,
					   x,
					   ser->key };
	}
	qsort(v, n, sizeof(*v), cut_ref_cmp);
	for (size_t i = 0; i < n && !err;) {
		size_t j = i, k = i;
		struct part *p;
		uint64_t samples = 0;

		while (j < n && v[j].tier == v[i].tier && v[j].day == v[i].day)
			j++;
		err = gw_store_part_writable(s, v[i].tier, v[i].day, &p);
		if (err == -EROFS) {
			err = 0;
			i = j;
			continue;
		}
		if (!err)
			err = gw_store_exec(p->w, "BEGIN");
		if (err)
			break;
		while (k < j && !err) {
			size_t e = k;

			while (e < j && v[e].hour == v[k].hour)
				e++;
			err = write_hour(p->w, v[k].hour, v + k, e - k,
					 &samples);
			k = e;
		}
		if (err) {
			(void)gw_store_exec(p->w, "ROLLBACK");
			break;
		}
		err = gw_store_exec(p->w, "COMMIT");
		if (!err)
			p->samples += samples;
		i = j;
	}
	free(v);
	return err;
}

static void drop_sealed_before(struct gw_store *s, int64_t H)
{
	size_t j = 0;

	pthread_rwlock_wrlock(&s->lock);
	for (size_t i = 0; i < s->nsealed; i++) {
		if (sealed_before(&s->sealed[i], H))
			free(s->sealed[i].data);
		else
			s->sealed[j++] = s->sealed[i];
	}
	s->nsealed = j;
	pthread_rwlock_unlock(&s->lock);
}

/* The watermark, with the rows of the series that only the head log
 * knew (so that its segments before the watermark can go). */
static int set_watermark(struct gw_store *s, int64_t H)
{
	char sql[256];
	int err = gw_store_exec(s->index, "BEGIN");

	if (err)
		return err;
	snprintf(sql, sizeof(sql),
		 "INSERT OR REPLACE INTO meta(k, v) VALUES "
		 "('watermark', %lld); DELETE FROM head WHERE t_max < %lld; ",
		 (long long)H, (long long)H);
	err = gw_store_log_persist(s);
	if (!err)
		err = gw_store_exec(s->index, sql);
	if (!err)
		err = gw_store_exec(s->index, "COMMIT");
	if (err) {
		(void)gw_store_exec(s->index, "ROLLBACK");
		return err;
	}
	gw_store_log_persisted(s);
	(void)gw_store_exec(s->index, "PRAGMA incremental_vacuum;");
	return 0;
}

/*
 * The closed day's final file: a vacuumed copy, in rollback-journal mode
 * (one read-only file, no -wal or -shm), put in place by a rename.  Made
 * aside because a query may be reading the partition: switching it out of
 * WAL or vacuuming it in place needs every reader gone, so the writer
 * would wait on queries.  Readers that have the old file open keep
 * reading it; new ones open the copy.
 *
 * vacuum_aside() writes PATH.closing from the writer's connection db (a
 * read of it, never waiting on readers); put_in_place(), once db is
 * closed, renames it over PATH.
 */
static void closing_path(const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s.closing", path);
}

static int vacuum_aside(sqlite3 *db, const char *path)
{
	char tmp[PATH_MAX + 340];
	sqlite3_stmt *st = NULL;
	sqlite3 *out = NULL;
	int rc;

	closing_path(path, tmp, sizeof(tmp));
	(void)unlink(tmp);
	/* The copy's pages: SQLite's smallest.  A closed day is a few
	 * tables and zstd blocks read whole; a partition of sparse series
	 * is a handful of pages, where half an empty 1 KiB page each is a
	 * tenth of the file. */
	rc = sqlite3_exec(db, "PRAGMA page_size=512", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, tmp, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		gw_warn("store: vacuuming %s into %s: %s", path, tmp,
			sqlite3_errmsg(db));
		goto fail;
	}
	/* Nobody else has the copy open: nothing to wait for. */
	if (sqlite3_open_v2(tmp, &out, SQLITE_OPEN_READWRITE, NULL) !=
		    SQLITE_OK ||
	    gw_store_exec(out, "PRAGMA journal_mode=DELETE;") != 0)
		goto fail;
	sqlite3_close(out);
	return 0;
fail:
	sqlite3_close(out);
	(void)unlink(tmp);
	return -EIO;
}

static int put_in_place(const char *path)
{
	char tmp[PATH_MAX + 340];

	closing_path(path, tmp, sizeof(tmp));
	if (chmod(tmp, 0444) != 0 || rename(tmp, path) != 0) {
		gw_warn("store: putting %s in place of %s: %s", tmp, path,
			strerror(errno));
		(void)unlink(tmp);
		return -errno;
	}
	/* The old file's WAL belongs to its readers now (they hold it
	 * open); the new file has none. */
	for (int i = 0; i < 2; i++) {
		char side[PATH_MAX + 340];

		snprintf(side, sizeof(side), "%s%s", path, i ? "-shm" : "-wal");
		(void)unlink(side);
	}
	return 0;
}

/* Closes, compacts and write-protects a finished day's partitions. */
static void close_day(struct gw_store *s, int64_t day)
{
	for (int t = 0; t < GW_TIERS; t++) {
		struct part *p = gw_store_part_find(s, (enum gw_tier)t, day);
		sqlite3 *db;
		bool aside;

		if (!p || p->closed)
			continue;
		if (p->w) {
			sqlite3_close(p->w);
			p->w = NULL;
		}
		if (gw_store_open_db(p->path, false, false, &db) == 0) {
			/*
			 * Each series' chunks of the day merged (a query
			 * reads a block a day, not one an hour: a fifth of
			 * the time of a one-series lookup over a day of
			 * churning processes) and the keys and chunks of
			 * the day packed: straight from the hour blocks
			 * where the day is all hour blocks (close.c), else
			 * through rows (a day an earlier version began).
			 * Should a step fail, the day stays readable as it
			 * was written.
			 */
			bool rows = false, packed = false;
			uint64_t damaged = 0;

			if (gw_store_exec(db, "BEGIN") == 0) {
				packed = gw_store_close_hours(db, p->tier,
							      &damaged) == 0 &&
					 gw_store_exec(db, "COMMIT") == 0;
				if (!packed) {
					(void)gw_store_exec(db, "ROLLBACK");
					damaged = 0;
				}
			}
			if (!packed && gw_store_exec(db, "BEGIN") == 0) {
				rows = gw_store_unpack_hours(db, &damaged) ==
					       0 &&
				       gw_store_exec(db, "COMMIT") == 0;
				if (!rows)
					(void)gw_store_exec(db, "ROLLBACK");
			}
			/* (what a damaged hour held is lost: counted) */
			if ((packed || rows) && damaged)
				atomic_fetch_add(&s->st_corrupt, damaged);
			if (rows)
				(void)gw_store_compact_db(db, p->tier);
			if (rows && gw_store_exec(db, "BEGIN") == 0) {
				if (gw_store_pack_series(db) == 0 &&
				    gw_store_pack_chunks(db) == 0)
					(void)gw_store_exec(db, "COMMIT");
				else
					(void)gw_store_exec(db, "ROLLBACK");
			}
			(void)gw_store_exec(db,
					    "INSERT OR REPLACE INTO meta(k, v) "
					    "VALUES ('closed', 1);");
			aside = vacuum_aside(db, p->path) == 0;
			sqlite3_close(db);
			if (!aside || put_in_place(p->path) != 0)
				gw_warn("store: %s is closed but not vacuumed",
					p->path);
		}
		(void)chmod(p->path, 0444);
		pthread_rwlock_wrlock(&s->lock);
		p->closed = true;
		p->bytes = gw_store_file_bytes(p->path);
		pthread_rwlock_unlock(&s->lock);
		gw_info("store: closed partition %s (%llu bytes)", p->path,
			(unsigned long long)p->bytes);
	}
}

static int cut(struct gw_store *s, int64_t H)
{
	bool closed = false;
	size_t n = s->active.n;
	int err = gw_store_flush(s);

	/* Only the active series have anything in the head. */
	for (size_t i = 0; i < n && !err; i++) {
		struct gw_series *ser = s->active.v[i];

		err = gw_store_head_close_before(s, ser, ser->head, H);
	}
	if (!err)
		err = write_cut(s, H);
	if (err) {
		gw_err("store: writing the hour before %lld failed (%s); kept "
		       "in memory and in the head log, retried",
		       (long long)H, strerror(-err));
		return err;
	}
	drop_sealed_before(s, H);
	err = set_watermark(s, H);
	if (err)
		return err;
	s->watermark = H;
	gw_store_log_rotate(s);
	atomic_fetch_add(&s->st_cuts, 1);
	gw_store_head_sweep(s, gw_store_now(s));
	for (size_t i = 0; i < s->nparts; i++)
		if (!s->parts[i].closed && s->parts[i].day + MS_DAY <= H) {
			close_day(s, s->parts[i].day);
			closed = true;
		}
	/* The keys of the series known so far leave their rows for one
	 * packed list (a tenth of the bytes under churn; evicted series are
	 * looked up in both: gw_store_packed_keys); a day's lists become
	 * one when the day closes. */
	if (gw_store_pack_index(s->index) == 0 &&
	    (!closed || gw_store_merge_index(s->index) == 0))
		(void)gw_store_exec(s->index, "PRAGMA incremental_vacuum;");
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
			 k == 0	  ? ""
			 : k == 1 ? "-wal"
				  : "-shm");
		(void)unlink(path);
	}
	gw_info("store: dropped %s (%s)", p.path, why);
}

void gw_store_refresh_sizes(struct gw_store *s)
{
	uint64_t tier_bytes[GW_TIERS] = { 0 }, tier_samples[GW_TIERS] = { 0 };
	uint64_t total = 0;
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/index.db", s->dir);
	total += gw_store_file_bytes(path) + gw_store_log_bytes(s);
	pthread_rwlock_wrlock(&s->lock); /* p->bytes is read by listings */
	for (size_t i = 0; i < s->nparts; i++) {
		struct part *p = &s->parts[i];

		if (p->remote)
			continue; /* in the archive, not on this disk */
		/* An open partition changes only where the store writes it
		 * (gw_store_part_writable): its files are not read again
		 * every minute for nothing. */
		if (!p->closed && p->stale) {
			p->bytes = gw_store_file_bytes(p->path);
			p->stale = false;
		}
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

/*
 * An archived partition leaves the disk: the file goes, the partition stays
 * listed as remote (read through the fetch hook).
 */
static void evict_part(struct gw_store *s, size_t i, const char *why)
{
	char path[PATH_MAX + 340];
	struct part *p = &s->parts[i];

	pthread_rwlock_wrlock(&s->lock);
	p->remote = true;
	pthread_rwlock_unlock(&s->lock);
	if (p->w) {
		sqlite3_close(p->w);
		p->w = NULL;
	}
	snprintf(path, sizeof(path), "%s", p->path);
	if (unlink(path) != 0 && errno != ENOENT)
		gw_warn("store: cannot delete the archived %s: %s", path,
			strerror(errno));
	gw_info("store: %s left the local disk (%s); the archive holds it",
		path, why);
}

/* Archiving on, a closed partition the archive does not hold yet stays
 * past its retention (the disk budget still drops it). */
static bool held_for_archive(const struct gw_store *s, const struct part *p)
{
	return s->o.archive && p->closed && !p->archived;
}

static void enforce_limits(struct gw_store *s, int64_t now)
{
	int64_t today = floor_to(now, MS_DAY);

	for (size_t i = 0; i < s->nparts;) {
		struct part *p = &s->parts[i];

		if (!p->remote && !p->pinned &&
		    p->day + MS_DAY <= now - s->o.retention_ms[p->tier]) {
			if (p->archived) {
				evict_part(s, i, "past its retention");
			} else if (!held_for_archive(s, p)) {
				drop_part(s, i, "past its retention");
				atomic_fetch_add(&s->st_drop_ret, 1);
				continue;
			}
		}
		i++;
	}
	gw_store_refresh_sizes(s);
	while (s->o.disk_budget &&
	       atomic_load(&s->st_disk) > s->o.disk_budget) {
		size_t i = 0;

		/* Oldest first; parts are sorted by day.  Never today's. */
		while (i < s->nparts && s->parts[i].remote)
			i++;
		if (i == s->nparts || s->parts[i].day >= today) {
			static atomic_flag warned = ATOMIC_FLAG_INIT;

			gw_log_once(&warned, GW_LOG_WARN,
				    "store: over the disk budget with nothing "
				    "left to drop but today's data");
			break;
		}
		if (s->parts[i].archived) {
			evict_part(s, i, "over the disk budget");
		} else {
			drop_part(s, i, "over the disk budget");
			atomic_fetch_add(&s->st_drop_budget, 1);
		}
		gw_store_refresh_sizes(s);
	}
}

int gw_store_archived(struct gw_store *s, const char *name, uint64_t bytes)
{
	enum gw_tier tier;
	int64_t day;
	int err = 0;

	if (gw_store_parse_partition(name, &tier, &day))
		return -EINVAL;
	pthread_mutex_lock(&s->arch_lock);
	if (s->narch == sizeof(s->arch_q) / sizeof(s->arch_q[0]))
		err = -EAGAIN;
	else
		s->arch_q[s->narch++] =
			(struct arch_report){ tier, day, bytes };
	pthread_mutex_unlock(&s->arch_lock);
	return err;
}

void gw_store_archive_maint(struct gw_store *s, int64_t now)
{
	struct arch_report q[sizeof(s->arch_q) / sizeof(s->arch_q[0])];
	sqlite3_stmt *st = NULL;
	size_t n;

	pthread_mutex_lock(&s->arch_lock);
	n = s->narch;
	memcpy(q, s->arch_q, n * sizeof(q[0]));
	s->narch = 0;
	pthread_mutex_unlock(&s->arch_lock);
	if (n && sqlite3_prepare_v2(s->index,
				    "INSERT OR REPLACE INTO archived(name, "
				    "bytes) VALUES (?, ?)",
				    -1, &st, NULL) != SQLITE_OK) {
		gw_warn("store: cannot record archived partitions: %s",
			sqlite3_errmsg(s->index));
		return; /* reported again by the archive's next pass */
	}
	for (size_t k = 0; k < n; k++) {
		struct part *p = gw_store_part_find(s, q[k].tier, q[k].day);
		char name[32];

		if (!p || !p->closed || p->remote)
			continue;
		gw_store_part_name(p, name, sizeof(name));
		sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)q[k].bytes);
		if (sqlite3_step(st) == SQLITE_DONE) {
			pthread_rwlock_wrlock(&s->lock);
			p->archived = true;
			pthread_rwlock_unlock(&s->lock);
		} else {
			gw_warn("store: cannot record %s as archived: %s", name,
				sqlite3_errmsg(s->index));
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < s->nparts; i++) {
		struct part *p = &s->parts[i];
		int64_t keep = s->o.archive_keep_ms;

		if (s->o.retention_ms[p->tier] < keep)
			keep = s->o.retention_ms[p->tier];
		if (p->archived && !p->remote && !p->pinned &&
		    p->day + MS_DAY <= now - keep) {
			evict_part(s, i, "archived, past the local retention");
			n++;
		}
	}
	if (n)
		gw_store_refresh_sizes(s);
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
		gw_store_quarantine(s, path,
				    "SQLite reported corruption while "
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
	if (s->o.archive)
		gw_store_archive_maint(s, now);
	if (now - s->last_maint >= 60000) {
		s->last_maint = now;
		enforce_limits(s, now);
		/* series without samples for retire_ms leave the caps */
		gw_store_head_sweep(s, now);
	}
	return err;
}

int gw_store_restored(struct gw_store *s, const char *name)
{
	sqlite3_stmt *st = NULL;
	enum gw_tier tier;
	struct part *p;
	int64_t day;
	int rc;

	if (gw_store_parse_partition(name, &tier, &day))
		return -EINVAL;
	p = gw_store_part_find(s, tier, day);
	if (!p || !p->archived)
		return -ENOENT;
	if (access(p->path, R_OK) != 0)
		return -errno;
	rc = sqlite3_prepare_v2(s->index,
				"UPDATE archived SET pinned = 1 WHERE name = ?",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return gw_store_sql_err(s->index, rc, "pinning a partition");
	pthread_rwlock_wrlock(&s->lock);
	p->remote = false;
	p->pinned = true;
	p->bytes = gw_store_file_bytes(p->path);
	pthread_rwlock_unlock(&s->lock);
	gw_store_refresh_sizes(s);
	gw_info("store: %s restored from the archive; it stays on the local "
		"disk",
		p->path);
	return 0;
}
