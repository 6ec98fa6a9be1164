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
 * Errors: 0 or -errno: -EIO (SQLite; the message goes to the log),
 * -ENOMEM, -E2BIG, -ECANCELED.  Thread safety: one writer thread and any
 * number of reader threads at once (each call takes its own connection
 * lock; SQLite's WAL lets readers run beside the writer).
 */
#ifndef GW_STORE_PROFSTORE_H
#define GW_STORE_PROFSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "store/labels.h"
#include "store/profile.h"

#define GW_PROFSTORE_NAME "process_cpu"

/* What a profile counts. */
enum gw_profile_type {
	GW_PROFILE_CPU = 0,	 /* CPU samples */
	GW_PROFILE_LAUNCHES = 1, /* CUDA kernel launches, by call path */
};

struct gw_profstore;

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

#endif
