/* SPDX-License-Identifier: MIT */
/*
 * store_int.h - what the store's files share: store.c (opening, closing,
 * partitions, plumbing), store_head.c (the head and appends),
 * store_maint.c (cuts, closing days, retention, the disk budget),
 * headlog.c, compact.c and store_read.c (queries, partitions on disk,
 * export).  Not for use outside src/store/.
 */
#ifndef GW_STORE_INT_H
#define GW_STORE_INT_H

#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

#include "common/buf.h"
#include "store/series.h"
#include "store/chunk.h"
#include "store/store.h"

#define MS_MIN	60000LL
#define MS_HOUR 3600000LL
#define MS_DAY	86400000LL

#define STORE_APP_ID 0x47575354 /* "GWST" */
#define STORE_FORMAT 1

/* floor(t / unit) * unit, also for negative t. */
static inline int64_t floor_to(int64_t t, int64_t unit)
{
	int64_t q = t / unit;

	if (t < INT64_MIN + unit)
		return INT64_MIN; /* "none" stays "none" */
	if (t % unit < 0)
		q--;
	return q * unit;
}

/* A chunk that left the head and waits for the next cut to be written. */
struct sealed {
	uint32_t id;
	enum gw_tier tier;
	int64_t t_min, t_max;
	uint32_t n;
	uint8_t *data;
	size_t len;
};

struct pending {
	int64_t t;
	double v;
};

/* Per-series head state (struct gw_series.head). */
struct head {
	struct gw_chunk_enc raw;
	int64_t raw_hour; /* hour of the open raw chunk */
	int64_t last_t;	  /* last sample, INT64_MIN when none */
	int64_t first_t;  /* first sample ever; INT64_MIN: unknown */
	bool from_disk;	  /* known before this run: first_t stays unknown */
	struct gw_rollup m1;
	bool m1_open;
	/*
	 * The closed minutes are not kept while their samples are in the
	 * raw chunk: sealing the chunk rebuilds them from it (the same
	 * adds, so the same rollups), and readers do so from a copy.
	 * m1_closed holds those that cannot be: the minutes of a chunk
	 * sealed before its hour ended, and a minute split by such a seal
	 * (m1_split: some of m1's samples are in an earlier chunk; raw
	 * samples before m1_raw_from are in m1_closed).  m1_done: m1 is
	 * in m1_closed or sealed already; closing it only merges it into
	 * h1.
	 */
	struct gw_buf m1_closed; /* framed rollups of the hour m1_hour */
	int64_t m1_hour;
	int64_t m1_raw_from;
	bool m1_split, m1_done;
	struct gw_rollup h1;
	bool h1_open;
	struct pending *pend;
	uint32_t npend, cappend;
	bool persisted; /* row in index.db */
	bool logged;	/* key in index.db or the head log */
	bool in_dirty;	/* on the store's dirty list */
	bool in_active; /* on the store's active list */
};

/*
 * The series evicted from memory (store_head.c), to find one again when
 * its samples return: its key's hash -> id.  Open addressing (hash 0: an
 * empty slot); a hash may repeat.
 */
struct evicted {
	uint64_t hash;
	uint32_t id;
};

struct evicted_map {
	struct evicted *v;
	size_t cap, n; /* cap a power of two, at most half full */
};

/* A list of series (the dirty and active lists). */
struct ser_list {
	struct gw_series **v;
	size_t n, cap;
};

struct part {
	enum gw_tier tier;
	int64_t day; /* ms at 00:00 UTC */
	char path[PATH_MAX + 320];
	sqlite3 *w;    /* write connection while open for writing */
	bool closed;   /* read-only, complete */
	bool archived; /* the archive holds a verified copy */
	bool remote;   /* archived and no longer on the local disk: path
			  is where it was, the reader fetches it */
	bool pinned;   /* restored by an operator: stays on the disk */
	uint64_t bytes;
	bool stale;	  /* written since bytes was read */
	uint64_t samples; /* sum of n over chunks */
};

struct gw_store {
	struct gw_store_opts o;
	char dir[PATH_MAX - 128];
	struct gw_queryable q;

	/* Head: series and sealed chunks, under lock (writer holds it for
	 * writing while it changes them; queries hold it for reading only to
	 * copy, a batch at a time: store_read.c).  Writers first. */
	pthread_rwlock_t lock;
	struct gw_series_index *idx;
	struct sealed *sealed;
	size_t nsealed, capsealed;
	struct part *parts; /* sorted by (day, tier) */
	size_t nparts, capparts;
	/*
	 * Series retired for an hour, drained and persisted leave memory
	 * (gw_store_head_sweep).  Their ids stay in the index's postings;
	 * ev_last[id] (by id, 0: not evicted) is the last sample of an
	 * evicted one (or a time after it), so that a query skips those
	 * that ended before its range, and reads the others' keys from
	 * index.db (store_read.c); ev finds one when its samples return
	 * (gw_store_attach_series).  The structs wait in grave until no
	 * selection that runs with the lock dropped (readers > 0) can still
	 * hold them.
	 */
	struct evicted_map ev;
	int64_t *ev_last;
	size_t ev_last_cap;
	_Atomic unsigned readers;
	struct ser_list grave;

	/* Writer-only state. */
	sqlite3 *index;
	/* Series with samples or a key not yet in the head log: a flush
	 * costs what was written since the last one, not the series ever
	 * seen. */
	struct ser_list dirty;
	/* Series whose head holds anything (an open chunk or rollup, the
	 * day's 1-hour column): the ones a cut visits.  A series leaves it
	 * once the cuts have moved everything to disk. */
	struct ser_list active;
	sqlite3_stmt *st_series, *st_head; /* on index */
	/* The head log (headlog.c): the segment being written (-1: none
	 * yet), its length and newest sample; the segments before it, kept
	 * until the watermark passes their newest sample; the series whose
	 * key is logged but not yet a row of index.db (the next cut writes
	 * them). */
	int log_fd;
	uint64_t log_seq, log_len;
	int64_t log_tmax;
	struct log_seg {
		uint64_t seq, bytes;
		int64_t t_max;
	} * log_old;
	size_t nlog_old, caplog_old;
	struct ser_list unpersisted;
	int64_t cap_logged[2]; /* last refusal logged: series, values */
	uint64_t cap_unlogged[2];
	int64_t watermark;  /* everything before it is in partitions */
	int64_t next_flush; /* ms */
	int64_t last_maint; /* ms */
	int64_t next_evict; /* ms: the sweep's next eviction pass */
	uint64_t pend_total;
	bool flush_failing; /* logged once per streak */
	atomic_flag warned_bad, warned_order, warned_corrupt;

	/* A partition a query found damaged, for the writer to check and
	 * quarantine at its next maintenance (one at a time). */
	pthread_mutex_t suspect_lock;
	char suspect[PATH_MAX + 320];

	/* Partitions the archive reported (gw_store_archived), for the
	 * writer to record at its next maintenance. */
	pthread_mutex_t arch_lock;
	struct arch_report {
		enum gw_tier tier;
		int64_t day;
		uint64_t bytes;
	} arch_q[64];
	size_t narch;
	atomic_flag warned_fetch;

	/* Statistics (atomics: read by any thread). */
	_Atomic uint64_t st_appended, st_order, st_cap, st_bad, st_flushes,
		st_flush_errors, st_cuts, st_drop_ret, st_drop_budget,
		st_quarantined, st_corrupt, st_disk, st_unlogged;
	_Atomic uint64_t st_tier_bytes[GW_TIERS], st_tier_samples[GW_TIERS];
	_Atomic uint64_t st_flush_ns;
};

extern const char *const gw_store_tier_dir[GW_TIERS];

int64_t gw_store_now(const struct gw_store *s);

/* "2026-12-02" for the day starting at day_ms. */
void gw_store_day_name(int64_t day_ms, char out[11]);

/* "raw/2026-12-01" for a partition (store.c). */
void gw_store_part_name(const struct part *p, char *out, size_t len);
/* Records the archive's reports and moves archived partitions past the
 * local retention off the disk (store_maint.c). */
void gw_store_archive_maint(struct gw_store *s, int64_t now);

/* Opens a partition database (creating it when create), applying the
 * pragmas and the schema.  Sets SQLite's busy timeout. */
int gw_store_open_db(const char *path, bool create, bool readonly,
		     sqlite3 **out);

/* Runs SQLite's quick_check and our schema check: 0 or -EBADMSG. */
int gw_store_check_db(sqlite3 *db);

/* Moves a file (and its -wal/-shm) to DIR/quarantine/. */
void gw_store_quarantine(struct gw_store *s, const char *path, const char *why);

/* Splits a canonical key back into labels. */
int gw_store_key_labels(const char *key, struct gw_labels *out);

/* The partition (tier, day), NULL when there is none (store.c). */
struct part *gw_store_part_find(struct gw_store *s, enum gw_tier tier,
				int64_t day);
/* Adds (or finds) the partition, opening its write connection; -EROFS
 * for a closed one (store.c). */
int gw_store_part_writable(struct gw_store *s, enum gw_tier tier, int64_t day,
			   struct part **out);
/* Bytes of a database file with its -wal and -shm (store.c). */
uint64_t gw_store_file_bytes(const char *path);

/* The 1-minute rollups of a raw chunk's samples at or after `from` whose
 * window ends at or before `upto`, appended to (*r)[*n], growing it
 * (*cap): 0, -EBADMSG or -ENOMEM (the caller frees *r either way). */
int gw_store_chunk_minutes(const uint8_t *p, size_t len, int64_t from,
			   int64_t upto, struct gw_rollup **r, size_t *n,
			   size_t *cap);

/* Framed rollup buffers: append one, append n (all or nothing), decode
 * all. */
int gw_store_frame_add(struct gw_buf *b, const struct gw_rollup *r);
int gw_store_frame_add_all(struct gw_buf *b, const struct gw_rollup *r,
			   size_t n);
int gw_store_frame_decode(const struct gw_buf *b, struct gw_rollup **out,
			  size_t *n);

void gw_store_init_queryable(struct gw_store *s);

/* SQLite helpers: run statements, translate result codes (logged). */
int gw_store_exec(sqlite3 *db, const char *sql);
int gw_store_sql_err(sqlite3 *db, int rc, const char *what);
/* Inserts the series' row; with cache, the statement is prepared once and
 * kept in *cache (the caller finalizes it). */
int gw_store_insert_series(sqlite3 *db, sqlite3_stmt **cache,
			   const struct gw_series *ser, bool ignore);

/* The sample path shared by append and replay (log: remember it for the
 * next flush). */
int gw_store_head_add(struct gw_store *s, struct gw_series *ser, int64_t t,
		      double v, bool log);
/* Adds the series with labels l (and its head) to the index; id 0 for a
 * new series, persisted when index.db has its row (store_head.c). */
int gw_store_attach_series(struct gw_store *s, const struct gw_labels *l,
			   uint32_t id, bool persisted, struct gw_series **out);
/* Adds ser to a list (no check for duplicates): 0 or -ENOMEM. */
int gw_store_list_push(struct ser_list *l, struct gw_series *ser);
/* Counts and logs (the first, then at most hourly) a refusal by a cap
 * (err -ENOSPC or -E2BIG) (store_head.c). */
void gw_store_note_cap(struct gw_store *s, int err, const char *key);
/* After a cut and every minute: retires series without samples for
 * o.retire_ms; every 10 minutes also drops retired ones with nothing only
 * in memory and no samples for an hour (or retire_ms if longer) from the
 * active list, releasing their head's memory (store_head.c). */
void gw_store_head_sweep(struct gw_store *s, int64_t now);
/* The hash of a series key in the evicted map (never 0). */
uint64_t gw_store_key_hash(const char *key);
/* Frees the evicted series waiting in the grave, if no reader can hold
 * them; the caller holds the write lock (store_head.c). */
void gw_store_grave_free(struct gw_store *s, bool force);
/* Frees a series' head; NULL is a no-op (store_head.c). */
void gw_store_head_free(void *v);
/* Moves everything of the head before `before` into sealed[]
 * (store_head.c). */
int gw_store_head_close_before(struct gw_store *s, struct gw_series *ser,
			       struct head *h, int64_t before);
/* Recomputes the per-tier and total disk usage statistics
 * (store_maint.c). */
void gw_store_refresh_sizes(struct gw_store *s);
/* Replays the rows of index.db's head table after the watermark (the
 * head log before its files; headlog.c). */
int gw_store_replay(struct gw_store *s);
/* Replays the head log's segments (headlog.c). */
int gw_store_log_replay(struct gw_store *s);
/* One head log record's payload (headlog.c): each logged series (its
 * key NUL-terminated, none inside), then per series with samples its id
 * and each sample; -EBADMSG where it does not parse (what came before
 * was given), -ENOMEM. */
struct gw_headlog_sink {
	void *ctx;
	void (*series)(void *ctx, uint64_t id, const char *key);
	void (*group)(void *ctx, uint64_t id);
	void (*sample)(void *ctx, int64_t t, double v);
};
int gw_headlog_parse(const uint8_t *p, size_t len,
		     const struct gw_headlog_sink *k);
/* The bytes of the head log's segments (headlog.c). */
uint64_t gw_store_log_bytes(const struct gw_store *s);
/* Writes the series whose keys are only in the head log to index.db, as
 * one packed list (rows where a key is too long for one), in the
 * caller's transaction; gw_store_log_persisted() once it committed
 * (headlog.c). */
int gw_store_log_persist(struct gw_store *s);
void gw_store_log_persisted(struct gw_store *s);
/* After a cut: starts a new segment and deletes those whose samples are
 * all before the watermark (headlog.c). */
void gw_store_log_rotate(struct gw_store *s);
void gw_store_log_close(struct gw_store *s);

/* Merges each series' chunks in a closed partition (compact.c). */
int gw_store_compact_db(sqlite3 *db, enum gw_tier tier);
/* Closes an open partition straight from its hour blocks, in the
 * caller's transaction: the same tables and bytes as unpacking the hours
 * (gw_store_unpack_hours), merging (gw_store_compact_db) and packing
 * (gw_store_pack_series, gw_store_pack_chunks), without the rows between.
 * -EAGAIN where it does not apply (rows in `chunks` or `series`, a
 * partition from before the hour blocks): the caller takes that path.
 * Damaged hour blocks are skipped and added to *damaged (close.c). */
int gw_store_close_hours(sqlite3 *db, enum gw_tier tier, uint64_t *damaged);
/* A damaged hour block found while closing: warned about and counted. */
void gw_store_hour_damaged(uint64_t *damaged);
/* One series' points while its chunks are merged (compact.c): raw
 * samples (t, v) or rollups (r). */
struct gw_points {
	int64_t *t;
	double *v;
	struct gw_rollup *r;
	size_t n, cap;
};
/* Appends a chunk's points; -EBADMSG if it does not decode, -ENOMEM. */
int gw_points_load(struct gw_points *p, bool rollup, const uint8_t *data,
		   size_t len);
/* The points as few chunks as the codec allows (raw: up to 65,535
 * samples each; rollups: one), each given to out; out's error, an
 * encoder's, or -ENOMEM. */
int gw_points_store(const struct gw_points *p, bool rollup,
		    int (*out)(void *ctx, int64_t t_min, int64_t t_max,
			       size_t n, const void *data, size_t len),
		    void *ctx);
void gw_points_clear(struct gw_points *p, bool rollup);
void gw_points_release(struct gw_points *p, bool rollup);
/* Packs a closing partition's series table into one compressed blob, in
 * the caller's transaction (compact.c). */
int gw_store_pack_series(sqlite3 *db);
/* Rewrites a closing partition's chunks into zstd blocks of whole series
 * (`zblocks`, keyed by the block's last series id; `chunks` is dropped),
 * in the caller's transaction (compact.c). */
int gw_store_pack_chunks(sqlite3 *db);
/* How a partition holds its chunks: `chunks` (open, or closed before
 * packing), `packed` (closed, one row per chunk, keyed series << 20 | k;
 * `chunks` is a view over it) or `zblocks` (closed since format 2). */
enum gw_part_form { GW_PART_CHUNKS, GW_PART_PACKED, GW_PART_ZBLOCKS };
enum gw_part_form gw_store_part_form(sqlite3 *db);
/* One chunk of a block; data points into the decompressed block. */
struct gw_zchunk {
	uint32_t series, n;
	int64_t t_min, t_max;
	const uint8_t *data;
	size_t len;
};
/* Whether an hour block's ids column (gw_zwriter: its series as
 * ascending varint deltas) names one of n ascending ids, stride bytes
 * apart, that are <= last; a missing or malformed column says yes, so
 * the block is read (compact.c). */
bool gw_store_ids_any(const uint8_t *p, size_t len, const uint32_t *ids,
		      size_t stride, size_t n, uint64_t last);
/* Reading a block chunk by chunk: gw_zblock_open decompresses it into
 * *raw (the caller frees it; the chunks point into it), gw_zblock_next
 * gives its next chunk (1), 0 at its end or -EBADMSG (and nothing more). */
struct gw_zblock_it {
	const uint8_t *p, *end;
	int64_t series, tmin;
};
int gw_zblock_open(struct gw_zblock_it *it, uint8_t **raw, const void *z,
		   size_t zlen);
int gw_zblock_next(struct gw_zblock_it *it, struct gw_zchunk *c);
/* Decompresses one block and calls fn for each of its chunks, in
 * (series, t_min) order; fn's error stops it.  -EBADMSG for a damaged
 * block, -ENOMEM. */
int gw_store_zblock_each(const void *z, size_t zlen,
			 int (*fn)(void *ctx, const struct gw_zchunk *c),
			 void *ctx);
/*
 * Blocks of whole series as rows (id, t_min, t_max, n, data) of a table:
 * add chunks in (series, t_min) order; a block is written when it has
 * grown past its target, between series, keyed base + its last series
 * (compact.c).
 */
struct gw_zwriter {
	sqlite3_stmt *ins;
	void *cctx; /* ZSTD_CCtx */
	struct gw_buf raw;
	uint8_t *z;
	size_t zcap;
	struct gw_buf ids; /* the block's series: varint deltas */
	bool with_ids;
	size_t max;    /* uncompressed bytes a block of few series ends at */
	uint32_t nser; /* series in the block so far */
	int64_t base, prev_series, prev_tmin, t_min, t_max, n;
};
/* ids: the table has an `ids` column, given the block's series ids as
 * ascending varint deltas (a lookup skips a block without its series
 * before decompressing it). */
int gw_zwriter_init(struct gw_zwriter *w, sqlite3 *db, const char *table,
		    int64_t base, bool ids);
int gw_zwriter_add(struct gw_zwriter *w, const struct gw_zchunk *c);
/* Writes what is buffered as one more block. */
int gw_zwriter_flush(struct gw_zwriter *w);
void gw_zwriter_release(struct gw_zwriter *w);
/* A packed key list (format 2, front-coded) built from (id, key) pairs
 * added in key order, then compressed with its checksum (compact.c). */
struct gw_keylist {
	struct gw_buf raw;
	char *prev;
	size_t prevlen, n;
	int64_t previd;
};
void gw_keylist_init(struct gw_keylist *k);
int gw_keylist_add(struct gw_keylist *k, int64_t id, const char *key);
/* *z (malloc'd) NULL when no key was added. */
int gw_keylist_pack(struct gw_keylist *k, void **z, size_t *zlen);
void gw_keylist_release(struct gw_keylist *k);
/* Runs sql (one blob parameter) with the packed list z, in the caller's
 * transaction: 0 or gw_store_sql_err()'s -errno (logged) (compact.c). */
int gw_store_put_packed(sqlite3 *db, const char *sql, const void *z,
			size_t zlen);
/* (id, key) pairs gathered from packed lists and rows (gw_keyset_add is
 * gw_store_each_packed's callback), packed as one list: each id once,
 * with its first key, in key order, as rows taken with INSERT OR IGNORE
 * and packed by key would be (compact.c). */
struct gw_keyset {
	struct gw_buf text;
	struct gw_keyset_key {
		int64_t id;
		size_t seq;
		union {
			size_t off; /* into text, while it grows */
			const char *s;
		};
	} * v;
	size_t n, cap;
};
void gw_keyset_init(struct gw_keyset *k);
int gw_keyset_add(void *ctx, int64_t id, const char *key);
/* *z (malloc'd) NULL when the set is empty. */
int gw_keyset_pack(struct gw_keyset *k, void **z, size_t *zlen);
void gw_keyset_release(struct gw_keyset *k);
/*
 * An open partition keeps each cut hour as blocks of that hour's chunks
 * (`hblocks`, keyed hour << 32 | the block's last series, hour 0-23 of
 * the partition's day) and the keys of that hour's series (`hkeys`).
 * Closing the day puts them back as rows of `chunks` and `series` for
 * the compaction and the day's packing, in the caller's transaction
 * (compact.c).  A block or key list that does not decode (zstd's
 * checksum) is skipped, logged and added to *damaged.
 */
#define GW_HOUR_SHIFT 32
int gw_store_unpack_hours(sqlite3 *db, uint64_t *damaged);
/* Moves index.db's series rows into one more packed list, a row of
 * series_packed (after every cut; its own transaction). */
int gw_store_pack_index(sqlite3 *db);
/* Merges the lists packed since the last merge into one (after a day is
 * closed, so that a year holds a list a day, not one an hour; its own
 * transaction). */
int gw_store_merge_index(sqlite3 *db);
/* The keys of ids[0..n) (ascending) found in index.db's packed lists:
 * keys[i] is set (malloc'd) where it was NULL and the id is there.  0,
 * -ENOMEM (compact.c). */
int gw_store_packed_keys(sqlite3 *db, const uint32_t *ids, size_t n,
			 char **keys);
/* Calls fn for each (id, key) of a packed list whose decompressed size is
 * at most max; -EBADMSG for a damaged one (compact.c). */
int gw_store_each_packed(const void *z, size_t zlen, size_t max,
			 int (*fn)(void *ctx, int64_t id, const char *key),
			 void *ctx);
/* Calls fn(ctx, id, key) for each series a partition names, packed or
 * not; fn's error stops it.  -EBADMSG for a damaged list (compact.c). */
int gw_store_each_series(sqlite3 *db,
			 int (*fn)(void *ctx, int64_t id, const char *key),
			 void *ctx);

/*
 * salvage.c: what a damaged index.db (and its log, read beforehand with
 * gw_store_salvage_read_log) still holds, read page
 * by page: the series rows, the head log's rows and the watermark.  Rows
 * are kept once by content; head rows may include ones a cut deleted
 * (older than the watermark), which the caller drops.  damaged counts
 * cells that looked like records but whose overflow chain was broken.
 * 0 or -errno (the file could not be read, -ENOMEM).
 */
struct gw_store_salvage {
	int64_t watermark;
	bool have_watermark;
	struct {
		int64_t id;
		char *key;
	} * series;
	size_t nseries, capseries;
	struct gw_store_salvage_row {
		int64_t seq, t_min, t_max;
		uint8_t *data;
		size_t len;
	} * rows;
	size_t nrows, caprows;
	uint64_t damaged;
};

__attribute__((warn_unused_result)) int
gw_store_salvage(const char *path, const uint8_t *log, size_t loglen,
		 struct gw_store_salvage *out);
/* The same on images in memory (the fuzzer's way in). */
__attribute__((warn_unused_result)) int
gw_store_salvage_mem(const uint8_t *db, size_t dblen, const uint8_t *log,
		     size_t loglen, struct gw_store_salvage *out);
/*
 * Reads PATH-wal (the log as it is before SQLite opens the database: a
 * connection that finds the log unusable empties it on close).  *log is
 * NULL when there is none; free() it.  0 or -errno.
 */
__attribute__((warn_unused_result)) int
gw_store_salvage_read_log(const char *path, uint8_t **log, size_t *len);
void gw_store_salvage_release(struct gw_store_salvage *s);

#endif
