/* SPDX-License-Identifier: MIT */
/*
 * linger.h - an exited process's last values, kept on /metrics for a
 * grace period.
 *
 * A producer publishes whole snapshots (metrics.h): a process that exited
 * is not in the next one, so its series would vanish from /metrics at
 * once, and a job that ran between two scrapes would never be scraped.
 * Instead, at the pass where a process is seen gone, its producer copies
 * the process's series from the snapshot it is about to publish
 * (gw_linger_take), and every later pass puts them back unchanged
 * (gw_linger_emit) together with
 *
 *   gpuwatch_process_exited_timestamp_seconds{<the process's labels>,
 *                                             source="<producer>"}
 *
 * the Unix time of the exit, until the grace period has passed.  The
 * process's series keep their labels (and so their identity): a query or
 * a dashboard sees a counter stop, and `unless on(pid)
 * gpuwatch_process_exited_timestamp_seconds` keeps only live processes.
 *
 * Keys are the producer's (a pid).  A key taken again (a reused pid that
 * exited too) replaces its entry; gw_linger_forget() drops one early (a
 * reused pid is alive again, its new series must not meet the old ones).
 *
 * Bounds: at most max_procs processes and max_samples samples kept, set at
 * creation; the oldest exits leave first to make room, counted in
 * evicted, and a process with more samples than max_samples alone is not
 * kept (counted in refused).
 *
 * Not thread-safe: one owner (the producer's thread).
 */
#ifndef GW_LINGER_H
#define GW_LINGER_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/metrics.h"

#define GW_LINGER_DEFAULT_MAX_PROCS   1024u
#define GW_LINGER_DEFAULT_MAX_SAMPLES 32768u
#define GW_LINGER_LABELS_MAX	      512u /* bytes of a process's labels */

struct gw_linger;

/*
 * grace_s: how long an exited process's series stay (0: not at all, every
 * take is then a no-op).  Zero maxima mean the defaults.  source names the
 * producer in the exit marker's `source` label (two layers may see the
 * same process exit; each marks its own series).  NULL on -ENOMEM, a
 * negative grace or no source.
 */
struct gw_linger *gw_linger_new(double grace_s, unsigned int max_procs,
				unsigned int max_samples, const char *source);
/* NULL is a no-op. */
void gw_linger_free(struct gw_linger *l);

/*
 * Process key has exited at exited_unix (seconds since the epoch): copies
 * from src every sample whose labels begin with the label list labels
 * (`pid="42",comm="train"`, see gw_snap_copy) and keeps them until
 * now + grace (now: the caller's monotonic seconds).  src is the snapshot
 * of this same pass, which has the samples already: the next
 * gw_linger_emit() adds only the exit marker for this entry, the later
 * ones the samples too.  Returns the number of samples kept (0: nothing
 * matched, nothing kept), or -ENOSPC (too many samples, counted),
 * -EINVAL (labels empty or too long).
 */
__attribute__((warn_unused_result)) int
gw_linger_take(struct gw_linger *l, uint64_t key, const struct gw_snap *src,
	       const char *labels, double exited_unix, double now);

/* Drops key's entry if there is one (a reused pid is alive again). */
void gw_linger_forget(struct gw_linger *l, uint64_t key);

/* Is key kept? */
int gw_linger_has(const struct gw_linger *l, uint64_t key);

/*
 * Drops the entries whose grace has passed, then appends to dst every kept
 * process's samples and its exit marker (see gw_linger_take).
 */
void gw_linger_emit(struct gw_linger *l, struct gw_snap *dst, double now);

struct gw_linger_stats {
	uint64_t procs;	  /* kept now */
	uint64_t samples; /* kept now */
	uint64_t evicted; /* left before their time, to make room */
	uint64_t refused; /* too large to keep at all */
	uint64_t expired; /* left when their grace ended */
};
void gw_linger_stats(const struct gw_linger *l, struct gw_linger_stats *st);

#endif
