/* SPDX-License-Identifier: MIT */
/*
 * kernels.h - the CUDA kernels of each process, as the CUPTI collector
 * learns them from the injection library's rings (collect/cupti/), for the
 * profiler's launch call paths (collect/bpf/prof_collector.c): which
 * kernel a sampled launch starts, and its mean GPU time.
 *
 * The join.  The profiler's probe on cudaLaunchKernel / cuLaunchKernel
 * records the call's first argument with the user stack: the host stub
 * of the kernel (runtime) or a CUfunction (driver).  A CUfunction is
 * looked up among the handles the injection library saw handed out by
 * cuModuleGetFunction (GW_CREC_KFUNC records); a host stub is looked up by
 * its symbol, which nvcc names after the kernel (the same mangled name,
 * so the same demangled one).  Either way the kernel's GW_CREC_KERNEL
 * record gives its name and GPU time.  A process without the injection
 * library has no entries: its launches stay without a kernel.
 *
 * Bounds: max_procs processes (the one updated longest ago leaves), and
 * per process GW_KERNELS_MAX kernels and GW_KERNELS_MAX handles (beyond:
 * refused and counted), in tables that grow as needed (about 300 bytes a
 * kernel).  Thread safety: any threads (one mutex; lookups
 * are short).
 */
#ifndef GW_COLLECT_KERNELS_H
#define GW_COLLECT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define GW_KERNELS_MAX	    1024u
#define GW_KERNELS_NAME_MAX 256u

struct gw_kernels;

/* NULL when out of memory. */
struct gw_kernels *gw_kernels_new(unsigned int max_procs);
void gw_kernels_free(struct gw_kernels *k);

/* pid's kernel name_hash (FNV-1a of the mangled name) is mangled, with
 * est_count launches and est_ns of GPU time so far (cumulative). */
void gw_kernels_kernel(struct gw_kernels *k, uint32_t pid, uint64_t name_hash,
		       const char *mangled, double est_count, double est_ns);

/* pid's launch handle (GW_CRING_KFUNC_*) starts the kernel name_hash. */
void gw_kernels_handle(struct gw_kernels *k, uint32_t pid, uint32_t kind,
		       uint64_t handle, uint64_t name_hash);

/* Whether pid has any kernel or handle (its injection library runs). */
int gw_kernels_known(struct gw_kernels *k, uint32_t pid);

/* pid is gone. */
void gw_kernels_forget(struct gw_kernels *k, uint32_t pid);

/*
 * The kernel a launch of pid starts: by the launch's first argument as a
 * CUfunction, else by symbol (the argument's symbol as the profiler names
 * it, demangled; NULL: none).  1 and name (the demangled kernel name) and
 * *mean_ns (its mean GPU time; 0 when not traced yet), or 0: unknown.
 */
int gw_kernels_lookup(struct gw_kernels *k, uint32_t pid, uint64_t arg,
		      const char *symbol, char *name, size_t len,
		      double *mean_ns);

struct gw_kernels_stats {
	uint64_t procs, kernels, handles;
	uint64_t refused;      /* a table was full */
	uint64_t hits, misses; /* lookups */
};
void gw_kernels_stats(struct gw_kernels *k, struct gw_kernels_stats *st);

#endif
