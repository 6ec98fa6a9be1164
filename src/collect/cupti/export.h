/* SPDX-License-Identifier: MIT */
/*
 * export.h - the pure pieces of the cupti collector (collector.c), exposed
 * for the unit tests only: histogram folding, top-K selection, kernel
 * label values (demangling, capping) and mapping a ring's pid to a host
 * pid through a proc tree.  Nothing here keeps state or allocates, except
 * gw_cupti_demangle() while libiberty works.  Thread safety: all pure,
 * callable from any thread.
 */
#ifndef GW_CUPTI_EXPORT_H
#define GW_CUPTI_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "collect/cupti/decode.h"

/*
 * Exported kernel duration buckets: every power of two from 2^10 ns to
 * 2^34 ns (~1 us .. ~17 s), in seconds, then +Inf.  Every bound is also an
 * edge of the ring's bins, so the folding is exact.
 */
#define GW_CUPTI_HBOUNDS 25u
void gw_cupti_hist_bounds(double bounds[GW_CUPTI_HBOUNDS]);

/*
 * Folds the ring's bins onto the exported buckets (counts has
 * GW_CUPTI_HBOUNDS + 1 entries, the last one +Inf), each count scaled by
 * scale (est_count / count).  Rounding is done on the running total, so
 * the buckets add up to round(traced * scale) and never go negative.
 */
void gw_cupti_hist_fold(const uint64_t bins[GW_CRING_KBINS], double scale,
			uint64_t counts[GW_CUPTI_HBOUNDS + 1]);

/*
 * Chooses the (at most) k entries of ks[0..n) with the largest est_ns (a
 * tie: smaller name_hash first), skipping entries flagged
 * GW_CRING_KF_OTHER, and writes their indexes to idx (n entries), largest
 * first.  Everything else - the entries beyond k and the ring's own OTHER
 * entries - is added into *other (count, total_ns, est_count, est_ns,
 * bins summed; min_ns the least of the non-zero ones, max_ns the largest),
 * which is zeroed first.  Returns the number of indexes written; *folded
 * is set to the entries folded.
 */
unsigned int gw_cupti_topk(const struct gw_cupti_kernel *ks, unsigned int n,
			   unsigned int k, unsigned int *idx,
			   struct gw_cupti_kernel *other, unsigned int *folded);

#define GW_CUPTI_LABEL_MAX 200u /* bytes of a kernel label value */

/*
 * The display form of a mangled kernel name into out (outlen bytes):
 * demangled with parameters when libiberty is built in and the name is an
 * Itanium C++ name ("_Z..."), else the name as it is.  Returns 1 when
 * demangled, 0 when copied.
 */
int gw_cupti_demangle(const char *mangled, char *out, size_t outlen);

/*
 * A label value from a display name: invalid UTF-8 bytes become '?'; a
 * value longer than GW_CUPTI_LABEL_MAX bytes (or force set) is cut on a
 * character boundary and ends in "~" and 8 hex digits of hash, so two
 * names that share their beginning stay two series.  outlen must be at
 * least GW_CUPTI_LABEL_MAX + 1; out is always NUL-terminated.
 */
void gw_cupti_label(const char *name, uint64_t hash, int force, char *out,
		    size_t outlen);

/*
 * Reads field 22 (start time, clock ticks since boot) of ROOT/PID/stat.
 * 0, or -errno (-ENOENT: no such process), -EBADMSG.
 */
__attribute__((warn_unused_result)) int
gw_cupti_start_ticks(const char *proc_root, uint32_t pid, uint64_t *ticks);

/*
 * The pid namespace inode of ROOT/WHO/ns/pid (WHO "self" or a pid), from
 * the link text "pid:[N]", else from stat().  0 or -errno.
 */
__attribute__((warn_unused_result)) int
gw_cupti_pidns(const char *proc_root, const char *who, uint64_t *ino);

/*
 * The host pid of the process that calls itself pid in pid namespace
 * pidns and started at start_ticks.  Same namespace as the agent
 * (pidns == self_pidns, or pidns 0: unknown): pid itself, checked against
 * its start time.  Otherwise the first max_scan entries of ROOT are
 * searched for a process in namespace pidns whose innermost NSpid is pid
 * and whose start time matches.
 * Returns 0 and sets *host; -ESRCH when the process is not (or no longer)
 * there; -EINVAL.
 */
__attribute__((warn_unused_result)) int
gw_cupti_pid_resolve(const char *proc_root, uint64_t self_pidns, uint32_t pid,
		     uint64_t pidns, uint64_t start_ticks,
		     unsigned int max_scan, uint32_t *host);

#endif
