/* SPDX-License-Identifier: MIT */
/*
 * probes.h - eBPF uprobes on the CUDA runtime (libcudart) and driver
 * (libcuda) in every process, and the process exec/exit tracepoints: load,
 * attach, read the in-kernel aggregates, take the rare events.
 *
 * The kernel side (cuda.bpf.c) aggregates per process: calls, errors by
 * return code, bytes, latency histograms, synchronisation time, live
 * allocations by address.  Nothing per call crosses to userspace; exits,
 * exec and API errors (rate limited) come through ring buffers.
 *
 * Probes attach to files, not processes: one attach to a library's inode
 * covers every process that maps it, now and later.  gw_probes_attach_file()
 * resolves the API table's symbols in the file itself (.dynsym and .symtab,
 * so executables that link cudart statically work too, unless stripped) and
 * attaches by offset through a descriptor it keeps open, so the path may
 * be a /proc/PID/root/... view that goes away later.
 *
 * Needs kernel 5.15 or later (attach cookies) with BTF, and root or
 * CAP_BPF + CAP_PERFMON in the calling thread.  Kernels from 6.6 get
 * uprobe_multi links: a whole file's probes attach and detach at the cost
 * of one (detaching perf-event uprobes waits tens of ms each).  The
 * descriptors are close-on-exec; a child forked without exec keeps the
 * probes attached until it exits.
 * Pids are those of the initial pid namespace (run with hostPID in a
 * container).
 *
 * Errors: 0 or -errno.  gw_probes_open() writes a reason to the caller's
 * buffer; later calls leave one in gw_probes_last_error().  Libbpf's own
 * messages go wherever the program's libbpf_set_print() sends them.
 *
 * Not thread-safe: one owner thread for a struct gw_probes.  Callbacks
 * must not call back into the same struct gw_probes; they return 0 to go
 * on, or a negative value to stop, which the call then returns.
 */
#ifndef GW_PROBES_H
#define GW_PROBES_H

#include <stddef.h>
#include <stdint.h>

struct gw_probes;

/* Size-tagged: set sz = sizeof(struct gw_probes_opts); zero = default. */
struct gw_probes_opts {
	size_t sz;
	unsigned int max_allocs; /* live allocations, all pids (262144) */
	unsigned int max_pids;	 /* processes tracked (1024) */
	unsigned int max_files;	 /* files with probes (256) */
	unsigned int error_events_per_sec; /* API_ERROR events per pid (10) */
	/*
	 * One perf event per uprobe even where the kernel has uprobe_multi
	 * links (6.6): for tests of the older kernels' path.
	 */
	unsigned int force_perf_attach;
};

#define GW_PROBES_DEFAULT_MAX_ALLOCS   262144u
#define GW_PROBES_DEFAULT_MAX_PIDS     1024u
#define GW_PROBES_DEFAULT_MAX_FILES    256u
#define GW_PROBES_DEFAULT_ERROR_EVENTS 10u

/*
 * Loads the programs and attaches the exec and exit tracepoints.  -EPERM
 * without privileges, -ENOSYS when the kernel lacks BTF, BPF or uprobes;
 * the reason is written to err (NUL-terminated, may be truncated).
 */
__attribute__((warn_unused_result)) int
gw_probes_open(const struct gw_probes_opts *o, struct gw_probes **out,
	       char *err, size_t errlen);
/* Detaches everything and frees p; NULL is a no-op. */
void gw_probes_close(struct gw_probes *p);

/* The last error's reason, "" if none. */
const char *gw_probes_last_error(const struct gw_probes *p);

/* ---- the API table ---- */

enum gw_cuda_lib {
	GW_LIB_RUNTIME = 1, /* libcudart.so*, or cudart linked statically */
	GW_LIB_DRIVER = 2,  /* libcuda.so* */
};

enum gw_cuda_family {
	GW_FAM_ALLOC = 0,
	GW_FAM_FREE,
	GW_FAM_COPY,
	GW_FAM_MEMSET,
	GW_FAM_LAUNCH,
	GW_FAM_SYNC,
	GW_FAM_CTX,
	GW_FAM_DEVICE,
	GW_FAM_EVENT,
	GW_FAM_OTHER,
};

/* Copy directions, as cudaMemcpyKind; byte counters per kind. */
enum gw_copy_kind {
	GW_COPY_H2H = 0,
	GW_COPY_H2D = 1,
	GW_COPY_D2H = 2,
	GW_COPY_D2D = 3,
	GW_COPY_DEFAULT = 4, /* unified addressing decides (cuMemcpy, kind 4) */
	GW_COPY_KINDS = 5,
};

/* APIs are numbered 0 .. gw_cuda_api_count() - 1 within one build. */
unsigned int gw_cuda_api_count(void);
/* "cudaMalloc", "cuMemAlloc_v2", ...; NULL when api is out of range. */
const char *gw_cuda_api_name(unsigned int api);
/* The api with that name, or -ENOENT. */
int gw_cuda_api_find(const char *name);
/* Launch, copy and memset APIs: duty-cycled by gw_probes_set_high_rate(). */
int gw_cuda_api_is_high_rate(unsigned int api);
/* enum gw_cuda_family, or -EINVAL. */
int gw_cuda_api_family(unsigned int api);
/* enum gw_cuda_lib, or 0 when api is out of range. */
unsigned int gw_cuda_api_lib(unsigned int api);
/* "alloc", "free", "copy", ...; NULL when out of range. */
const char *gw_cuda_family_name(int family);

/* ---- attaching ---- */

/*
 * Attaches an entry and a return probe to every API of the tables in libs
 * (a mask of enum gw_cuda_lib) whose symbol the ELF file at path defines.
 * Idempotent per (device, inode) and table: *n is the number of symbols
 * newly attached (cudaMemcpy and cudaMemcpy_ptds are two; high-rate ones
 * count while switched off too), 0 when the file was seen before or
 * defines none of them.
 * -ENOEXEC for a file that is not ELF, -ENOSPC past max_files; a symbol
 * that fails to attach is skipped and counted (attach_failures).
 */
__attribute__((warn_unused_result)) int
gw_probes_attach_file(struct gw_probes *p, const char *path, unsigned int libs,
		      unsigned int *n);

/*
 * Duty cycle: attach (on = 1) or detach (on = 0) the high-rate probes of
 * every attached file; files attached while off get them when it turns on.
 * Calls in flight across a switch are not counted.
 */
__attribute__((warn_unused_result)) int
gw_probes_set_high_rate(struct gw_probes *p, int on);

/* ---- reading ---- */

struct gw_api_stats {
	uint32_t pid;
	uint32_t api;
	uint64_t calls, errors;
	uint64_t bytes; /* successful allocations, copies, memsets */
	uint64_t ns_total, sync_ns;
	uint64_t hist[32]; /* calls with latency in [2^i, 2^(i+1)) ns */
	uint64_t copy_bytes[GW_COPY_KINDS];
};

struct gw_err_stats {
	uint32_t pid;
	uint32_t api;
	int32_t code; /* cudaError_t or CUresult */
	uint64_t count;
};

struct gw_mem_stats {
	uint32_t pid;
	/* device and managed memory */
	uint64_t live_bytes, live_allocs;
	/* the part of it allocated more than leak_age_ns ago */
	uint64_t leak_bytes, leak_allocs;
	/* pinned host memory (cudaMallocHost, cudaHostAlloc, ...) */
	uint64_t host_bytes, host_allocs;
};

/* Every (pid, api) with calls; counters are cumulative. */
__attribute__((warn_unused_result)) int
gw_probes_read_api(struct gw_probes *p,
		   int (*cb)(void *ctx, const struct gw_api_stats *s),
		   void *ctx);
/* Every (pid, api, code) an error came from; counts are cumulative. */
__attribute__((warn_unused_result)) int
gw_probes_read_errors(struct gw_probes *p,
		      int (*cb)(void *ctx, const struct gw_err_stats *s),
		      void *ctx);
/*
 * Every live process the probes have seen (one that exited is gone even
 * before gw_probes_forget()).  Walks the allocation map: O(max_allocs).
 */
__attribute__((warn_unused_result)) int
gw_probes_read_mem(struct gw_probes *p, uint64_t leak_age_ns,
		   int (*cb)(void *ctx, const struct gw_mem_stats *s),
		   void *ctx);

/* ---- events ---- */

enum gw_probe_event_type {
	GW_EV_EXEC = 1,	      /* every exec on the machine */
	GW_EV_EXIT = 2,	      /* a process the probes had seen has exited */
	GW_EV_API_ERROR = 3,  /* rate-limited per pid; counts are in the maps */
	GW_EV_FIRST_CALL = 4, /* a process's first probed call returned */
};

enum gw_probe_event_flags {
	GW_EVF_OOM = 1u << 0,	   /* API_ERROR with code 2: out of memory */
	GW_EVF_COREDUMP = 1u << 1, /* EXIT: a core was dumped */
	GW_EVF_HAD_GPU = 1u << 2,  /* EXEC: the old image had used CUDA;
				      live_bytes is what it held */
};

struct gw_probe_event {
	uint32_t type, pid;
	int32_t exit_code, signal; /* EXIT: exit(code) or signal, not both */
	uint32_t api;		   /* API_ERROR */
	int32_t code;		   /* API_ERROR */
	uint64_t live_bytes;	   /* EXIT, API_ERROR: device memory held */
	uint64_t size;		   /* API_ERROR: bytes asked for */
	char comm[16];		   /* NUL-terminated */
	char filename[128];	   /* EXEC, NUL-terminated */
	uint32_t flags;		   /* enum gw_probe_event_flags */
};

/*
 * Waits up to timeout_ms (0: don't wait, -1: forever) for events and hands
 * each to cb.  Returns the number handled, or -errno (-EINTR when a signal
 * interrupted the wait).
 */
__attribute__((warn_unused_result)) int
gw_probes_poll(struct gw_probes *p, int timeout_ms,
	       int (*cb)(void *ctx, const struct gw_probe_event *e), void *ctx);
/* An epoll descriptor that is readable when events wait, for a poll loop. */
int gw_probes_fd(const struct gw_probes *p);

/*
 * Drops every map entry of pid (stats, errors, allocations): call after
 * its EXIT event, once its final counts are read.  A reused pid starts
 * from zero only after this.
 */
void gw_probes_forget(struct gw_probes *p, uint32_t pid);
/*
 * Forgets every pid that has entries but is no longer alive in the kernel's
 * view (its EXIT event was lost).  *n: how many.
 */
__attribute__((warn_unused_result)) int gw_probes_sweep(struct gw_probes *p,
							unsigned int *n);

/* ---- self-observation ---- */

struct gw_probes_counters {
	uint64_t hits;		  /* entry probe hits, calibration excluded */
	uint64_t dropped_allocs;  /* allocation map full */
	uint64_t dropped_events;  /* exit/error ring buffer full */
	uint64_t attached_files;  /* files with at least one probe */
	uint64_t attached_probes; /* entry + return probes attached now */
	uint64_t dropped_execs;	  /* exec ring buffer full */
	uint64_t ratelimited_events; /* error events over the per-pid rate */
	uint64_t dropped_pids;	     /* process map full: pid not tracked */
	uint64_t dropped_stats;	     /* stats or error map full */
	uint64_t stale_returns;	     /* high-rate returns across a switch */
	uint64_t attach_failures;    /* symbols found that failed to attach */
	uint64_t dropped_files;	     /* files refused past max_files */
};

void gw_probes_counters(struct gw_probes *p, struct gw_probes_counters *c);

/*
 * Measures the cost of one uprobe + uretprobe hit through these very
 * programs: attaches them to a function of this process and times calls
 * with and without.  Takes about 0.1-0.5 s.  *ns_per_hit > 0 on success.
 */
__attribute__((warn_unused_result)) int gw_probes_calibrate(struct gw_probes *p,
							    double *ns_per_hit);

#endif
