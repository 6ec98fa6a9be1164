/* SPDX-License-Identifier: MIT */
/*
 * profstore.h - CPU profiles kept over time: one row per (minute, process)
 * holding that minute's profile as gzip'd pprof (store/profile.h), with
 * the process's labels (pid, comm, container_id, pod_uid, job, version),
 * in its own SQLite file (DIR/profiles.db) beside the metric store.
 *
 * Bounds: rows older than the retention are deleted, and while the
 * profiles take more than max_bytes the oldest minutes go first; both run
 * on every gw_profstore_maint() (the collector calls it once a minute).
 * Nothing is refused for space: old data leaves instead.
 *
 * Queries select rows whose minute overlaps [start_ms, end_ms] and whose
 * labels satisfy any of the matcher lists (a PromQL selector's matchers;
 * the set's __name__ is "process_cpu"), and add their pprof into a
 * gw_prof column.  At most max_rows rows are read (-E2BIG beyond).
 *
 * The cold tier (export/archive.h): a closed day (UTC, ended more than
 * GW_PROFSTORE_CLOSE_MS ago) is written out as a file of its own
 * (gw_profstore_export_day: the same schema, that day's rows only),
 * uploaded as the partition "prof/YYYY-MM-DD", and reported with
 * gw_profstore_archived(); from then on its local rows leave once the day
 * is older than archive_keep_ms, and a query reaching the day asks the
 * fetch hook for a local copy of the file and reads it from there.  A day
 * not archived yet is kept past the retention (the size bound still drops
 * it).  gw_profstore_import() puts an archived day back (`gpuwatch store
 * restore prof/DAY`): its rows are then kept whatever the retention.
 *
 * Errors: 0 or -errno: -EIO (SQLite; the message goes to the log),
 * -ENOMEM, -E2BIG, -ECANCELED.  Thread safety: one writer thread and any
 * number of reader threads at once (each call takes its own connection
 * lock; SQLite's WAL lets readers run beside the writer).
 */
#ifndef GW_STORE_PROFSTORE_H
#define GW_STORE_PROFSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/labels.h"
#include "store/profile.h"

#define GW_PROFSTORE_NAME "process_cpu"
/* A day is closed (archivable) this long after its end: late flushes of
 * its last minute are in by then. */
#define GW_PROFSTORE_CLOSE_MS (10 * 60 * 1000LL)

/* What a profile counts. */
enum gw_profile_type {
	GW_PROFILE_CPU = 0,	 /* CPU samples */
	GW_PROFILE_LAUNCHES = 1, /* CUDA kernel launches, by call path */
	GW_PROFILE_GPU_TIME = 2, /* their GPU time (ns), by call path */
};

struct gw_profstore;
struct gw_query_limits;

struct gw_profstore_opts {
	size_t sz;
	const char *path;	 /* the SQLite file */
	int64_t retention_ms;	 /* 0: 30 days */
	uint64_t max_bytes;	 /* 0: 1 GiB */
	uint64_t max_rows_query; /* 0: 100,000 */
};

__attribute__((warn_unused_result)) int
gw_profstore_open(const struct gw_profstore_opts *o, struct gw_profstore **out,
		  char *err, size_t errlen);
void gw_profstore_close(struct gw_profstore *s);

/* Stores (or replaces) one minute of one process: labels is an exposition-style list
 * (`pid="1",comm="x"`); blob is gzip'd pprof; samples its total. */
__attribute__((warn_unused_result)) int
gw_profstore_put(struct gw_profstore *s, int64_t minute_ms, uint32_t pid,
		 enum gw_profile_type type, const char *labels,
		 const void *blob, size_t len, int64_t samples);

/* Retention and the size bound, now_ms the wall clock. */
__attribute__((warn_unused_result)) int
gw_profstore_maint(struct gw_profstore *s, int64_t now_ms);

/* Adds the matching rows to column col of p; *rows the number read.
 * sets NULL or nsets 0: every row. */
__attribute__((warn_unused_result)) int
gw_profstore_query(struct gw_profstore *s, enum gw_profile_type type,
		   const struct gw_matcher *const *sets, const size_t *nm,
		   size_t nsets, int64_t start_ms, int64_t end_ms,
		   struct gw_prof *p, int col, size_t *rows);

struct gw_profstore_stats {
	uint64_t rows;
	uint64_t bytes;	   /* blob bytes */
	uint64_t deleted;  /* rows dropped for age or size */
	uint64_t bad_rows; /* blobs that did not decode (skipped) */
	uint64_t put_errors;
};
void gw_profstore_stats(struct gw_profstore *s, struct gw_profstore_stats *st);

/*
 * The cold tier.  Before any query or maintenance: keep_ms how long an
 * archived day's rows stay local; fetch (store.h's hook: a local file
 * holding the partition "prof/2026-12-01" into path, stopping at lim's
 * deadline or cancel flag) or NULL (archived days are not read).
 */
void gw_profstore_set_archive(struct gw_profstore *s, int64_t keep_ms,
			      int (*fetch)(void *ctx, const char *name,
					   char *path, size_t len,
					   struct gw_query_limits *lim),
			      void *fetch_ctx);

/* One day of profiles. */
struct gw_profstore_day {
	int64_t day_ms; /* 00:00 UTC */
	char name[32];	/* prof/2026-12-01 */
	uint64_t rows;	/* local */
	uint64_t bytes; /* local blob bytes, or the archived file's */
	bool closed;	/* ended GW_PROFSTORE_CLOSE_MS before now_ms */
	bool archived;	/* a verified copy is in the bucket */
	bool local;	/* rows on the local disk */
	bool pinned;	/* restored: kept whatever the retention */
};

/* Days with local rows or archived, oldest first; *out malloc'd. */
__attribute__((warn_unused_result)) int
gw_profstore_days(struct gw_profstore *s, int64_t now_ms,
		  struct gw_profstore_day **out, size_t *n);

/* Writes day_ms's rows to a new SQLite file path (which must not
 * exist): -EEXIST, -EIO. */
__attribute__((warn_unused_result)) int
gw_profstore_export_day(struct gw_profstore *s, int64_t day_ms,
			const char *path);

/* The bucket holds a verified copy of day_ms (bytes long): recorded, and
 * the day's rows deleted when it is older than keep_ms. */
__attribute__((warn_unused_result)) int
gw_profstore_archived(struct gw_profstore *s, int64_t day_ms, uint64_t bytes,
		      int64_t now_ms);

/* Puts the rows of a day file (gw_profstore_export_day's, downloaded)
 * back, pinned.  *day_ms the day it holds.  -EINVAL: not one day's
 * profiles; -ENOENT: not an archived day; -EIO. */
__attribute__((warn_unused_result)) int
gw_profstore_import(struct gw_profstore *s, const char *path, int64_t *day_ms);

/* "prof/2026-12-01" -> the day's ms at 00:00 UTC: 0 or -EINVAL. */
__attribute__((warn_unused_result)) int gw_profstore_parse_day(const char *name,
							       int64_t *day_ms);

#endif
