/* SPDX-License-Identifier: MIT */
/*
 * attrib.h - process attribution: which pod, container and batch job a pid
 * belongs to, as labels for every process-level series.
 *
 * For a pid the cache reads, from PROC/PID/:
 *   comm      the command name                       -> comm
 *   cgroup    container id and Kubernetes pod uid    -> container_id, pod_uid
 *   environ   the first configured job variable set  -> job
 * and keeps the answer for ttl_s.  A pid's files are read through one
 * directory fd, so a pid reused between two reads is never mixed up.
 *
 * Bounds: at most max_pids entries, allocated at creation; the cache never
 * grows.  An unknown pid takes a free entry, else evicts the least recently
 * used one (exited processes first) - but never one already looked up at
 * the same `now`: when the pids of one collection pass outnumber max_pids,
 * the excess is refused (-ENOSPC, counted) instead of thrashing.  environ is
 * read up to GW_ATTRIB_ENVIRON_MAX bytes, cgroup up to GW_ATTRIB_CGROUP_MAX;
 * every value is length-bounded, stripped of control characters and cut on
 * a UTF-8 boundary.  Values are label values only: escaping is left to
 * gw_labels_append().
 *
 * `now` is the caller's monotonic clock in seconds; it must move forward
 * for entries to expire and to become evictable.
 *
 * Thread safety: the cache is safe for concurrent use (one mutex, never
 * held while /proc is read).  gw_attrib_parse_cgroup() and
 * gw_attrib_labels() are pure.
 *
 * Ownership: the options are copied at creation (proc_root and the job
 * variable names included); nothing passed in is kept.
 */
#ifndef GW_ATTRIB_H
#define GW_ATTRIB_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define GW_ATTRIB_DEFAULT_MAX_PIDS 4096u
#define GW_ATTRIB_MAX_PIDS_LIMIT   65536u
#define GW_ATTRIB_DEFAULT_TTL_S	   30.0
#define GW_ATTRIB_MAX_JOB_ENV	   8u	/* names in job_env */
#define GW_ATTRIB_ENV_NAME_MAX	   64u	/* bytes of one name */
#define GW_ATTRIB_PROC_ROOT_MAX	   200u /* bytes of proc_root */
#define GW_ATTRIB_ENVIRON_MAX	   (256u << 10)
#define GW_ATTRIB_CGROUP_MAX	   (32u << 10)

/* Smallest output sizes gw_attrib_parse_cgroup() accepts (with the NUL). */
#define GW_ATTRIB_CONTAINER_ID_SIZE 65u
#define GW_ATTRIB_POD_UID_SIZE	    37u

/*
 * Size-tagged: set sz = sizeof(struct gw_attrib_opts).  A zero field means
 * its default; fields past an older caller's sz are defaults too.
 */
struct gw_attrib_opts {
	size_t sz;
	const char *proc_root; /* "/proc"; tests point it at a fake tree */
	unsigned int max_pids; /* cache bound, 4096; at most 65536 */
	double ttl_s;	       /* re-read an entry after this, 30 */
	/*
	 * Environment variables giving the "job" label, in priority order: the
	 * first of the list that the process has (non-empty) wins.  job_env
	 * NULL and njob_env 0 mean {"SLURM_JOB_ID"}; job_env non-NULL with
	 * njob_env 0 means no job label.
	 */
	const char *const *job_env;
	unsigned int njob_env;
};

/* Every field NUL-terminated, "" when unknown. */
struct gw_attrib {
	char comm[64];
	char container_id[80]; /* 12..64 lowercase hex */
	char pod_uid[48];      /* 8-4-4-4-12 lowercase hex, dashes */
	char job[64];
};

struct gw_attrib_cache;

/* -EINVAL for a bad option, -ENOMEM.  *out is set only on success. */
__attribute__((warn_unused_result)) int
gw_attrib_cache_new(const struct gw_attrib_opts *o,
		    struct gw_attrib_cache **out);
void gw_attrib_cache_free(struct gw_attrib_cache *c);

/*
 * Fills *a for pid from the cache, or from /proc when unknown or older than
 * ttl_s.  Returns
 *   0        *a filled.  A process that exited after it was cached keeps
 *            its labels until evicted or forgotten.
 *   -ENOENT  no such process, and not cached.
 *   -ENOSPC  pid unknown and the cache full of entries used at this `now`
 *            (counted in refused); /proc is not read.
 *   -EINVAL  pid 0.
 *   -errno   /proc/PID/comm could not be read for another reason.
 * *a is left as it was on error.
 */
__attribute__((warn_unused_result)) int gw_attrib_get(struct gw_attrib_cache *c,
						      uint32_t pid, double now,
						      struct gw_attrib *a);
/* The process exited: drop its entry now (no-op when not cached). */
void gw_attrib_forget(struct gw_attrib_cache *c, uint32_t pid);

/*
 * Appends pid="..",comm=".." and then container_id, pod_uid and job when
 * non-empty (pid 0: no pid label, for series that outlive the process), escaped by gw_labels_append() and separated by commas, to b.
 * When b is not empty a comma comes first, so it can follow other labels.
 * All or nothing: on -ENOSPC/-ENOMEM b is as it was.
 */
__attribute__((warn_unused_result)) int
gw_attrib_labels(const struct gw_attrib *a, uint32_t pid, struct gw_buf *b);

/*
 * From the text of /proc/PID/cgroup (cgroup v1 "N:controllers:/path" and
 * v2 "0::/path" lines, not NUL-terminated, len bytes), extracts the
 * container id and the Kubernetes pod uid.  Recognised path components:
 *   kubepods .. pod<uid> / <hex>                 (cgroupfs driver)
 *   kubepods-[QOS-]pod<uid_with_underscores>.slice  (systemd driver)
 *   {cri-containerd,docker,crio,cri-o,libpod}-<hex>[.scope]
 *   docker / <hex>
 * where hex is 12..64 lowercase hex digits.  Within a path the innermost
 * pod and the container below it win; across lines the one with the most
 * (container and pod, then container, then pod; first on a tie).  The pod
 * uid comes out with dashes.  Outputs are always NUL-terminated, "" when
 * nothing matched; ids are never truncated.
 * Returns 0, or -EINVAL (NULL arguments, cidlen below
 * GW_ATTRIB_CONTAINER_ID_SIZE or podlen below GW_ATTRIB_POD_UID_SIZE).
 */
__attribute__((warn_unused_result)) int
gw_attrib_parse_cgroup(const char *text, size_t len, char *container_id,
		       size_t cidlen, char *pod_uid, size_t podlen);

struct gw_attrib_stats {
	uint64_t lookups;   /* gw_attrib_get() calls */
	uint64_t misses;    /* of them, those that read /proc */
	uint64_t evictions; /* entries dropped to make room */
	uint64_t refused;   /* -ENOSPC answers */
};
void gw_attrib_stats(struct gw_attrib_cache *c, struct gw_attrib_stats *st);

#endif
