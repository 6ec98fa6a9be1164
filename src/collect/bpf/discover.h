/* SPDX-License-Identifier: MIT */
/*
 * discover.h - finding the host's CUDA libraries before any process maps
 * them, and noticing new ones as they appear.
 *
 * Uprobes belong to files: once attached to a library's inode they fire in
 * every process that maps it, from its first call, even a process that
 * runs for a millisecond.  A pass (gw_discover_run) hands out
 *
 *   - every file the dynamic loader's cache (/etc/ld.so.cache, ldcache.h)
 *     names for libcudart.so* or libcuda.so*;
 *   - every match of the built-in patterns: the CUDA toolkits
 *     (/usr/local/cuda*, /opt/cuda*, their targets/ and compat/ folders),
 *     the usual driver folders, and NVIDIA's Python wheels and conda's
 *     lib folder (GW_DISCOVER_BUILTIN below);
 *   - every match of the caller's own glob(7) patterns (--cuda-lib-glob).
 *
 * and watches (inotify) the folders they live in, the folders their
 * patterns could match in, and /etc for a new ld.so.cache, so that
 * gw_discover_changed() says when a pass is worth running again: a
 * library installed, a toolkit unpacked, ldconfig run.  A file still being
 * written is reported as changed but not handed out (its modification time
 * is less than GW_DISCOVER_SETTLE_S old); the caller runs again later.
 * Folders created below a new folder are seen at the caller's next pass.
 *
 * Handing out a path means nothing more than "this regular file matched";
 * the same file may come by several paths (symbolic links): the caller
 * attaches by (device, inode).
 *
 * Bounds: GW_DISCOVER_MAX_GLOBS caller patterns, GW_DISCOVER_MAX_MATCHES
 * files per pass, GW_DISCOVER_MAX_WATCHES watched folders; what is over is
 * counted (struct gw_discover_stats).  Without inotify (a full table of
 * watches, a kernel without it) passes still work, changes are then seen
 * at the caller's periodic pass only.
 *
 * Errors: 0 or -errno.  Not thread-safe: one owner thread.
 */
#ifndef GW_DISCOVER_H
#define GW_DISCOVER_H

#include <stddef.h>
#include <stdint.h>

#define GW_DISCOVER_MAX_GLOBS	32u
#define GW_DISCOVER_MAX_MATCHES 4096u
#define GW_DISCOVER_MAX_WATCHES 256u
#define GW_DISCOVER_SETTLE_S	2.0

/* Size-tagged: sz = sizeof(struct gw_discover_opts); zero = default. */
struct gw_discover_opts {
	size_t sz;
	const char *const *globs; /* extra patterns, copied */
	unsigned int nglobs;
	const char *ldcache; /* NULL: /etc/ld.so.cache; "": none */
	int no_builtin;	     /* only the caller's patterns (tests) */
	int no_watch;	     /* no inotify */
};

struct gw_discover;

/* -EINVAL for a bad option (a relative pattern, too many), -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_discover_new(const struct gw_discover_opts *o, struct gw_discover **out);
/* NULL is a no-op. */
void gw_discover_free(struct gw_discover *d);

/*
 * One pass: calls cb(ctx, path) for every settled regular file found (see
 * above), then re-arms the watches.  Returns the number handed out, or
 * cb's negative value, which stops the pass.
 */
__attribute__((warn_unused_result)) int
gw_discover_run(struct gw_discover *d, int (*cb)(void *ctx, const char *path),
		void *ctx);

/* A descriptor readable when watched folders changed; -1 without one. */
int gw_discover_fd(const struct gw_discover *d);

/*
 * Reads what the watches saw, without waiting: 1 when a pass may find
 * something new, else 0.
 */
int gw_discover_changed(struct gw_discover *d);

struct gw_discover_stats {
	uint64_t passes;
	uint64_t files;		 /* handed out, all passes */
	uint64_t unsettled;	 /* files skipped while being written */
	uint64_t dropped;	 /* matches past GW_DISCOVER_MAX_MATCHES */
	uint64_t watches;	 /* (folder, name pattern) pairs watched */
	uint64_t watch_failures; /* folders that could not be watched */
	uint64_t ldcache_bad;	 /* cache unreadable or entries malformed */
};
void gw_discover_stats(const struct gw_discover *d,
		       struct gw_discover_stats *st);

#endif
