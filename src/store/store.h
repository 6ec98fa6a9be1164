/* SPDX-License-Identifier: MIT */
/*
 * store.h - the embedded, tiered time-series store in --data-dir.
 *
 * Layout of DIR (all SQLite files, inspectable with the sqlite3 shell):
 *
 *   index.db                 series (id, key), the head log, metadata
 *   raw/YYYY-MM-DD.db        raw chunks of that UTC day (1 h per chunk)
 *   1m/YYYY-MM-DD.db         1-minute rollups (1 h of them per chunk)
 *   1h/YYYY-MM-DD.db         1-hour rollups (the day's 24 in one chunk)
 *   quarantine/              files found corrupt, moved aside
 *
 * A partition file holds its own copy of the series keys it uses, so a
 * closed day is self-contained: once the day is over (and its last hour
 * cut) it is compacted, made read-only and never written again, so
 * archiving is a file copy (gw_store_export / `gpuwatch store export`).
 *
 * Write path: gw_store_append() adds samples to the in-memory head: per
 * series an open raw chunk (chunk.h), the open 1-minute and 1-hour rollups
 * and the closed rollups of the current hour/day.  Every flush interval the
 * samples since the last flush go to index.db's head log in one
 * transaction (kill -9 loses at most that interval).  At every hour
 * boundary (plus a grace period for late samples) the hour is "cut": its
 * chunks and rollups are written to the day partitions, the cut watermark
 * advances and the head log before it is deleted.  Opening the store
 * replays the head log after the watermark, so a crash loses nothing that
 * was flushed.  Samples older than the series' last sample, or older than
 * the watermark, are refused and counted.  Timestamps are stored exactly,
 * to the millisecond, jitter and all (the codec codes it compactly).
 *
 * Retention per tier drops whole day partitions; the disk budget drops the
 * oldest partitions first (today's are never dropped).  A partition that
 * fails its integrity check (at open, or after a query met SQLITE_CORRUPT
 * in it: checked at the next maintenance) is moved to quarantine/, counted
 * and logged; everything else keeps working.  A
 * corrupt index.db is quarantined and the series table rebuilt from the
 * partitions (the unflushed head log in it is lost, and reported).
 *
 * Reading: gw_store_queryable() gives the struct gw_queryable the PromQL
 * engine and the HTTP API use.  Reads merge the partitions and the head,
 * the rollup windows still open included.  pick_tier answers raw wherever
 * raw samples are kept (from the oldest raw day on, when older rollups
 * exist; everywhere otherwise), whatever the step.
 *
 * Thread safety: append/flush/maintain from one writer thread; queries
 * from any number of threads concurrently.  Queries never block the
 * writer for longer than a short copy: one rwlock (writers first) guards
 * the head; a query holds it for reading only while it copies head bytes,
 * a batch of series at a time, and matches label values, decodes and
 * reads partitions (per-query read-only SQLite connections, WAL) without
 * it, checking its deadline and cancel flag throughout.
 * Errors: 0 or -errno; messages go to the log.
 */
#ifndef GW_STORE_H
#define GW_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/query.h"

struct gw_store;

struct gw_store_opts {
	const char *dir;
	int64_t retention_ms[GW_TIERS]; /* default 24 h, 30 d, 365 d */
	uint64_t disk_budget;		/* bytes; 0 = unlimited */
	int64_t flush_ms;		/* default 5000 */
	int64_t grace_ms;		/* late samples before a cut; 10 s */
	uint32_t max_series;		/* live series; default 100000 */
	uint32_t max_values;		/* live values per label name
					   (not __name__); default 10000 */
	int64_t retire_ms; /* no samples this long: retired; 5 min */
	/* The clock (ms since the epoch) for retention, cuts and defaults;
	 * NULL = CLOCK_REALTIME.  Tests pass a fake. */
	int64_t (*now)(void *ctx);
	void *now_ctx;
	/*
	 * The cold tier (export/archive.h).  archive: closed partitions are
	 * copied to a bucket by someone else, who reports each verified copy
	 * with gw_store_archived(); from then on the local file leaves the
	 * disk once its day is older than archive_keep_ms (or than its
	 * tier's retention, or when the disk budget needs the room), and the
	 * partition stays listed as remote.  A closed partition that is not
	 * archived yet is kept past its retention (the disk budget still
	 * drops it).  fetch: gives a local file holding the archived
	 * partition name ("raw/2026-12-01") for a query, into path; it may
	 * take long and must stop at the query's deadline or cancel flag
	 * (lim, never NULL); 0 or -errno (-ETIMEDOUT, -ECANCELED stop the
	 * query; any other error skips the partition).  NULL: archived
	 * partitions are not read.
	 */
	bool archive;
	int64_t archive_keep_ms;
	int (*fetch)(void *ctx, const char *name, char *path, size_t len,
		     struct gw_query_limits *lim);
	void *fetch_ctx;
};

void gw_store_opts_defaults(struct gw_store_opts *o);

/*
 * Opens (creating) the store in o->dir, checks every partition, replays
 * the head log.  -errno with a message in err.
 */
__attribute__((warn_unused_result)) int
gw_store_open(struct gw_store **out, const struct gw_store_opts *o, char *err,
	      size_t errlen);
/* Flushes the head log and closes; NULL is a no-op. */
void gw_store_close(struct gw_store *s);

/*
 * Appends one sample of the series name{labels} (labels in exposition
 * form, as gw_snap keeps them; "" for none).  0; -EDOM (out of order or
 * before the watermark), -ENOSPC / -E2BIG (series or label cap), -EINVAL
 * (bad name or labels), -ENOMEM; every refusal is counted.
 */
__attribute__((warn_unused_result)) int gw_store_append(struct gw_store *s,
							const char *name,
							const char *labels,
							int64_t t, double v);

/* Writes the samples appended since the last flush to the head log. */
__attribute__((warn_unused_result)) int gw_store_flush(struct gw_store *s);

/*
 * Periodic work at time now: flush when due, cut finished hours, close
 * finished days, apply retention and the disk budget, quarantine
 * partitions found corrupt.  Cheap when there is nothing to do.
 */
__attribute__((warn_unused_result)) int gw_store_maintain(struct gw_store *s);

const struct gw_queryable *gw_store_queryable(struct gw_store *s);

struct gw_store_stats {
	uint64_t series;	 /* known, live or retired (or evicted) */
	uint64_t series_evicted; /* retired and out of memory */
	uint64_t series_live;	 /* counted against the caps */
	uint64_t samples_appended;
	uint64_t samples_refused_order; /* out of order / too late */
	uint64_t samples_refused_cap;	/* series or label caps */
	uint64_t samples_refused_bad;	/* malformed names or labels */
	uint64_t flushes, flush_errors;
	uint64_t samples_unlogged; /* kept in memory only: flushes failed */
	uint64_t cuts;
	uint64_t partitions;
	uint64_t partitions_dropped_retention;
	uint64_t partitions_dropped_budget;
	uint64_t files_quarantined;
	uint64_t corrupt_chunks;	 /* skipped on read */
	uint64_t disk_bytes;		 /* all files, last maintenance */
	uint64_t tier_bytes[GW_TIERS];	 /* partition bytes per tier */
	uint64_t tier_samples[GW_TIERS]; /* raw samples / rollups stored */
	double last_flush_seconds;
};
void gw_store_stats(struct gw_store *s, struct gw_store_stats *st);

/* One partition: tier, day (UTC, "YYYY-MM-DD"), size, closed or not,
 * copied to the archive, still on the local disk. */
struct gw_store_partition {
	enum gw_tier tier;
	char day[11];
	uint64_t bytes;
	bool closed;
	bool archived;
	bool local;
};

/* Lists the partitions, oldest first; *out is malloc'd. */
__attribute__((warn_unused_result)) int
gw_store_partitions(struct gw_store *s, struct gw_store_partition **out,
		    size_t *n);

/*
 * The archive holds a verified copy of the closed partition name
 * ("raw/2026-12-01", bytes long).  Any thread: the store's writer records
 * it in index.db at its next maintenance and deletes the local file when
 * its day is past the local retention.  0; -ENOENT (no such closed local
 * partition), -EAGAIN (too many reports pending: try again later),
 * -EINVAL (a malformed name).
 */
__attribute__((warn_unused_result)) int
gw_store_archived(struct gw_store *s, const char *name, uint64_t bytes);

/*
 * The partitions DIR's index.db records as archived, read without opening
 * the store (also while the agent runs): sorted names ("raw/2026-12-01")
 * in *out (malloc'd; none for a store that never archived).  0 or -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_store_archived_names(const char *dir, char (**out)[32], size_t *n);

/*
 * The archived partition name is back on the local disk, at its own path
 * (DIR/store/raw/2026-12-01.db, verified by the caller): it is read from
 * there and kept whatever the local retention (pinned in index.db).  The
 * writer's call (`gpuwatch store restore` holds the directory).  0;
 * -ENOENT (not an archived partition), -EINVAL, or -errno when the file
 * cannot be read.
 */
__attribute__((warn_unused_result)) int gw_store_restored(struct gw_store *s,
							  const char *name);

/* The store's directory (DIR/store), for the partitions' paths. */
const char *gw_store_dir(const struct gw_store *s);

/* "raw/2026-12-01" -> tier and day (ms at 00:00 UTC): 0 or -EINVAL. */
__attribute__((warn_unused_result)) int
gw_store_parse_partition(const char *name, enum gw_tier *tier, int64_t *day);

/*
 * Writes a consistent copy of one partition ("raw/2026-12-01") to path
 * (which must not exist).  Works while the agent runs.
 */
__attribute__((warn_unused_result)) int
gw_store_export(const char *dir, const char *partition, const char *path,
		char *err, size_t errlen);

/*
 * Checks one store file (SQLite integrity and our schema) without opening
 * the store: 0, -EBADMSG (corrupt), or -errno when it cannot be read.
 */
__attribute__((warn_unused_result)) int gw_store_check_file(const char *path);

#endif
