/* SPDX-License-Identifier: MIT */
/*
 * agg.h - in-process aggregation of what CUPTI reports, for
 * libgpuwatch_cupti.so: nothing per event leaves the process; these tables
 * are folded in place and written to the ring (ring.h) as cumulative
 * records about once a second.
 *
 * Every table is allocated by gw_agg_new() and bounded: 1024 kernel
 * entries (keyed by the 64-bit FNV-1a of the full mangled name; 1023
 * named, later ones fold into one entry flagged GW_CRING_KF_OTHER and are counted),
 * 240 API error entries (beyond: counted in api_overflow), 16
 * synchronisation entries, GW_AGG_DEVICES devices.  No function allocates
 * after gw_agg_new().
 *
 * gw_agg_record() takes one activity record as CUPTI hands it (read only
 * through fields the CUDA 12 and 13 layouts share) and makes no CUPTI
 * call, so crafted records can be fed to it.  Records of kinds it does not
 * know are ignored (counted only in gw_agg_ignored()).
 *
 * Thread safety: every function may be called from any thread.  Activity
 * records and the summary take an internal mutex; API errors take a
 * second one (errors are rare); counters called from API callbacks
 * (contexts, OOM, callbacks, sync timings) are lock-free atomics.
 */
#ifndef GW_INJECT_AGG_H
#define GW_INJECT_AGG_H

#include <stdint.h>

#include <cupti_activity.h>

#include "inject/ring.h"

/* Named kernel entries; with the overflow entry 1024, what the agent keeps
 * (GW_CUPTI_MAX_KERNELS). */
#define GW_AGG_KERNELS 1023u
/* (domain, cbid, code) error entries and timed synchronisation calls; 256
 * together, what the agent keeps (GW_CUPTI_MAX_APIS). */
#define GW_AGG_SYNCS	 16u
#define GW_AGG_APIS	 (256u - GW_AGG_SYNCS)
#define GW_AGG_DEVICES	 64u /* devices whose limits are known */
#define GW_AGG_RATIO_MIN 0.01

struct gw_agg;

/* -EINVAL or -ENOMEM, or 0 with *out ready (sampling ratio 1). */
__attribute__((warn_unused_result)) int gw_agg_new(struct gw_agg **out);
void gw_agg_free(struct gw_agg *a);

/*
 * Sampling ratio applied to the kernel records that follow (est_count +=
 * 1/ratio); clamped into [GW_AGG_RATIO_MIN, 1].  Also reported in PROCESS.
 */
void gw_agg_set_ratio(struct gw_agg *a, double ratio);
double gw_agg_ratio(struct gw_agg *a);

/*
 * Folds one activity record into the tables.  Returns 1 when the record
 * was of a kind used here, 0 when it was ignored (unknown kind, NULL).
 */
int gw_agg_record(struct gw_agg *a, const CUpti_Activity *rec);

/* Kernel records traced so far (all entries, overflow included). */
uint64_t gw_agg_traced_kernels(struct gw_agg *a);
/* Records ignored by gw_agg_record() (unknown kinds). */
uint64_t gw_agg_ignored(struct gw_agg *a);

/* Counters fed from callbacks; lock-free. */
void gw_agg_records_dropped(struct gw_agg *a, uint64_t n);
void gw_agg_context(struct gw_agg *a, int created);
void gw_agg_oom(struct gw_agg *a);
void gw_agg_callback(struct gw_agg *a);
void gw_agg_muted(struct gw_agg *a);

/*
 * Counts one call of API (domain GW_CRING_API_*, cbid) that returned code
 * (!= 0).  name (may be NULL) is kept from the first call, cut to
 * GW_CRING_API_NAME_MAX - 1 bytes.  -ENOSPC (counted in api_overflow) when
 * the table is full, -EINVAL for code 0.
 */
__attribute__((warn_unused_result)) int
gw_agg_api_error(struct gw_agg *a, uint32_t domain, uint32_t cbid, int32_t code,
		 const char *name);

/*
 * Registers a synchronisation call to be timed; returns its slot (>= 0),
 * or -ENOSPC / -EINVAL.  Call before any gw_agg_sync() (not thread-safe
 * against it).
 */
__attribute__((warn_unused_result)) int gw_agg_sync_slot(struct gw_agg *a,
							 uint32_t domain,
							 uint32_t cbid,
							 const char *name);
/* One call of slot waited ns. Lock-free. */
void gw_agg_sync(struct gw_agg *a, int slot, uint64_t ns);

/*
 * A launch handle (GW_CRING_KFUNC_*) names the kernel name (mangled, as
 * CUPTI and the driver give it): kept (the newer mapping of a handle
 * replaces the older) for the next summaries, GW_AGG_KFUNCS at most
 * (beyond: counted in api_overflow).  Any thread.
 */
#define GW_AGG_KFUNCS 1024u
void gw_agg_kfunc(struct gw_agg *a, uint32_t kind, uint64_t handle,
		  const char *name);
/* handle starts the same kernel as the handle of learnt before (nothing
 * when of is not known): a CUfunction got from a CUkernel. */
void gw_agg_kfunc_alias(struct gw_agg *a, uint32_t kind, uint64_t handle,
			uint64_t of);

/*
 * Writes one summary to the ring: a PROCESS record (status, cupti_version,
 * now_ns), the MEMCPY record, then every kernel, API and sync entry that
 * changed since it was last written successfully (an entry stays pending
 * until it is), the launch handles learnt since (all of them every
 * GW_CRING_KFUNC_REPEAT summaries), and publishes.  Returns the records the ring refused (0
 * when everything fit), or -EINVAL.  One caller at a time (the ring has
 * one writer).
 */
int gw_agg_write(struct gw_agg *a, struct gw_cring *r, uint32_t status,
		 uint32_t cupti_version, uint64_t now_ns);

#endif
