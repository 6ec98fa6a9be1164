/* SPDX-License-Identifier: MIT */
/*
 * archive.h - the cold tier: closed day partitions copied to an
 * S3-compatible bucket (s3.h), and fetched back for queries.
 *
 * In the bucket, under s3://BUCKET/PREFIX, each partition is two objects:
 *
 *   PREFIX/raw/2026-12-01.db            the closed SQLite file, as on disk
 *   PREFIX/raw/2026-12-01.db.manifest   what it must be (below)
 *
 * CPU profiles (store/profstore.h) go the same way, one object per closed
 * day written out of profiles.db: PREFIX/prof/2026-12-01.db (and its
 * manifest), fetched back through the profile store's fetch hook.
 *
 * Upload (its own thread, never the ingest's or a query's): every closed
 * partition the store lists as not yet archived is PUT with its SHA-256 as
 * x-amz-content-sha256; the answer's ETag must be the file's MD5 and a
 * HEAD must report its size (else the object is read back and its SHA-256
 * compared); only then is the manifest written and the store told
 * (gw_store_archived), which deletes the local file once its day is past
 * --archive-keep-local.  A failure is logged once per streak, counted by
 * reason, and retried with a doubling backoff (1 s to 1 min): the day
 * stays on the local disk until it succeeds.
 *
 * Fetch (the store's fetch hook, on a query's thread): the manifest, then
 * the object into the cache directory, hashed on the way; a size or
 * SHA-256 that differs from the manifest is refused, logged and counted
 * (reason="corrupt") and the file never reaches a reader.  The cache is
 * bounded (--archive-cache-size, least recently used out first) and emptied
 * at start.  A fetch stops at the query's deadline or cancel flag.
 *
 * Manifest text, one "key value" per line, in this order, '\n' ended:
 *
 *   gpuwatch-archive 1
 *   partition raw/2026-12-01
 *   bytes 123456
 *   sha256 <64 lower-case hex>
 *   md5 <32 lower-case hex>
 *
 * Readers accept unknown keys after these (newer writers) and refuse a
 * newer major version.
 *
 * Thread safety: the uploader runs on its thread; gw_archive_fetch on any
 * number of query threads at once; counters are atomics.
 */
#ifndef GW_EXPORT_ARCHIVE_H
#define GW_EXPORT_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/s3.h"
#include "pipeline/metrics.h"
#include "store/query.h"

struct gw_store;
struct gw_worker_table;
struct gw_archive;

struct gw_archive_opts {
	const struct gw_s3_config *s3;
	const char *cache_dir; /* created; emptied at start */
	uint64_t cache_bytes;  /* 0: 1 GiB */
	struct gw_worker_table *workers;
};

__attribute__((warn_unused_result)) int
gw_archive_new(const struct gw_archive_opts *o, struct gw_archive **out,
	       char *err, size_t errlen);

/* The store the uploader copies from (set before gw_archive_start). */
void gw_archive_set_store(struct gw_archive *a, struct gw_store *s);

/* The profile store whose closed days are uploaded too (optional; set
 * before gw_archive_start). */
struct gw_profstore;
void gw_archive_set_profiles(struct gw_archive *a, struct gw_profstore *p);

/* Starts the upload thread. */
__attribute__((warn_unused_result)) int gw_archive_start(struct gw_archive *a);

/* Stops the thread (a transfer in flight is cancelled) and frees;
 * NULL is a no-op. */
void gw_archive_free(struct gw_archive *a, double deadline);

/* The store's fetch hook (store.h, gw_store_opts.fetch); ctx is the
 * struct gw_archive. */
int gw_archive_fetch(void *ctx, const char *name, char *path, size_t len,
		     struct gw_query_limits *lim);

/*
 * One upload pass on the caller's thread: every closed local partition not
 * yet archived.  *done and *failed count the partitions; the first
 * failure's message in err.  0, or the last failure's -errno.
 */
__attribute__((warn_unused_result)) int
gw_archive_pass(struct gw_archive *a, unsigned int *done, unsigned int *failed,
		char *err, size_t errlen);

/* Downloads the archived partition name to path (which must not exist),
 * verified against its manifest. */
__attribute__((warn_unused_result)) int
gw_archive_restore(struct gw_archive *a, const char *name, const char *path,
		   char *err, size_t errlen);

/* One partition in the bucket, for `gpuwatch store ls --remote`. */
struct gw_archive_entry {
	char name[32]; /* raw/2026-12-01, prof/2026-12-01 */
	uint64_t bytes;
	bool manifest; /* complete: data and manifest */
};

/* Lists the partitions in the bucket (sorted by name); *out malloc'd. */
__attribute__((warn_unused_result)) int
gw_archive_list(struct gw_archive *a, struct gw_archive_entry **out, size_t *n,
		char *err, size_t errlen);

/* Adds the cold tier's metrics (gpuwatch_archive_*). */
void gw_archive_publish(struct gw_archive *a, struct gw_snap *snap);

struct gw_archive_manifest {
	char partition[32];
	uint64_t bytes;
	char sha256[65];
	char md5[33];
};

/* 0 or -EBADMSG (-EPROTONOSUPPORT for a newer major version). */
__attribute__((warn_unused_result)) int
gw_archive_manifest_parse(const char *text, size_t len,
			  struct gw_archive_manifest *m);
/* The manifest's text into out: its length, or -ENOSPC. */
int gw_archive_manifest_format(const struct gw_archive_manifest *m, char *out,
			       size_t len);

/* SHA-256 (hex) of a buffer. */
void gw_archive_sha256_hex(const void *p, size_t n, char out[65]);

#endif
