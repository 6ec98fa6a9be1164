/* SPDX-License-Identifier: MIT */
/*
 * cuda_bpf.h - what cuda.bpf.c (kernel) and the loader (probes*.c) share:
 * the attach cookie, map keys and values, counters and the ring buffer
 * record.
 *
 * Fixed-width types only, no padding the compiler could choose: both sides
 * are built from this header in the same build, but the layouts are also
 * what a reader of the maps with bpftool sees.  Included by BPF code after
 * vmlinux.h and by userspace after <linux/types.h>.
 */
#ifndef GW_CUDA_BPF_H
#define GW_CUDA_BPF_H

#define GW_BPF_HIST_BUCKETS 32 /* log2(ns): [2^i, 2^(i+1)) ns, last open */
#define GW_BPF_COPY_KINDS   5  /* cudaMemcpyKind: H2H H2D D2H D2D default */
#define GW_BPF_COPY_DEFAULT 4
#define GW_BPF_COMM_LEN	    16
#define GW_BPF_FILENAME_LEN 128
#define GW_BPF_API_CALIB    0xffffu /* api of the calibration probe */

/*
 * What the return probe does besides counting; the API table in
 * probes_api.c maps each family to one of these.
 */
enum gw_bpf_op {
	GW_BPF_OP_NONE = 0,
	GW_BPF_OP_ALLOC = 1,  /* (T **ptr, size_t size, ...) */
	GW_BPF_OP_FREE = 2,   /* (T *ptr, ...) - handled at entry */
	GW_BPF_OP_COPY = 3,   /* (dst, src, size_t size[, kind]) */
	GW_BPF_OP_MEMSET = 4, /* (dst, value, size_t count) */
	GW_BPF_OP_SYNC = 5,   /* latency also goes to sync_ns */
};

enum gw_bpf_cookie_flags {
	GW_BPF_F_KIND_ARG = 1u << 0,  /* copy kind is argument 4 (cudaMemcpy) */
	GW_BPF_F_HOST = 1u << 1,      /* allocation is pinned host memory */
	GW_BPF_F_HIGH_RATE = 1u << 2, /* duty-cycled: returns check the epoch */
};

/*
 * The BPF cookie of every uprobe and uretprobe:
 *   bits  0..15 api id      (index into the API table)
 *   bits 16..31 symbol id   (index into the symbol table; aliases such as
 *                            cudaMemcpy_ptds share the api, not the symbol)
 *   bits 32..39 op          (enum gw_bpf_op)
 *   bits 40..47 copy kind   (for copies whose kind the name tells)
 *   bits 48..55 flags       (enum gw_bpf_cookie_flags)
 *   bits 56..63 size shift  (memset: count << shift = bytes)
 */
#define GW_BPF_COOKIE(api, sym, op, kind, flags, shift)                        \
	((__u64)(api) | (__u64)(sym) << 16 | (__u64)(op) << 32 |               \
	 (__u64)(kind) << 40 | (__u64)(flags) << 48 | (__u64)(shift) << 56)
#define GW_BPF_COOKIE_API(c)   ((__u32)((c)&0xffff))
#define GW_BPF_COOKIE_SYM(c)   ((__u32)(((c) >> 16) & 0xffff))
#define GW_BPF_COOKIE_OP(c)    ((__u32)(((c) >> 32) & 0xff))
#define GW_BPF_COOKIE_KIND(c)  ((__u32)(((c) >> 40) & 0xff))
#define GW_BPF_COOKIE_FLAGS(c) ((__u32)(((c) >> 48) & 0xff))
#define GW_BPF_COOKIE_SHIFT(c) ((__u32)(((c) >> 56) & 0xff))

/* inflight: one call in progress, per thread and symbol. */
struct gw_bpf_inflight_key {
	__u64 pid_tgid;
	__u32 sym;
	__u32 pad;
};

struct gw_bpf_inflight {
	__u64 start_ns; /* 0: consumed by the return probe */
	__u64 epoch;
	__u64 arg[4];
};

/* procs: every process the probes have seen return from a CUDA call. */
struct gw_bpf_proc {
	__u64 live_bytes; /* device and managed memory */
	__u64 live_allocs;
	__u64 host_bytes; /* pinned host memory */
	__u64 host_allocs;
	__u64 gen; /* new at each exec: older allocations are stale */
};

/* stats: per process and API. */
struct gw_bpf_stat_key {
	__u32 tgid;
	__u32 api;
};

struct gw_bpf_stat {
	__u64 calls;
	__u64 errors;
	__u64 bytes; /* successful calls only */
	__u64 ns_total;
	__u64 sync_ns;
	__u64 copy_bytes[GW_BPF_COPY_KINDS];
	__u64 hist[GW_BPF_HIST_BUCKETS];
};

/* errors: per process, API and return code; the value is a __u64 count. */
struct gw_bpf_err_key {
	__u32 tgid;
	__u32 api;
	__s32 code;
	__u32 pad;
};

/* allocs: live allocations by address. */
struct gw_bpf_alloc_key {
	__u32 tgid;
	__u32 pad;
	__u64 ptr;
};

struct gw_bpf_alloc {
	__u64 size;
	__u64 ts_ns; /* bpf_ktime_get_ns() = CLOCK_MONOTONIC */
	__u64 gen;   /* the process's gen when allocated */
	__u32 api;
	__u32 flags; /* GW_BPF_F_HOST */
};

/* ratelimit: error events per process in the current one-second window. */
struct gw_bpf_rate {
	__u64 window_ns;
	__u32 errors;
	__u32 ooms;
};

/* Slots of the per-CPU counters array. */
enum gw_bpf_counter {
	GW_BPF_CTR_HITS = 0,	   /* entry probe hits */
	GW_BPF_CTR_DROPPED_ALLOCS, /* allocs map full */
	GW_BPF_CTR_DROPPED_EVENTS, /* events ring buffer full */
	GW_BPF_CTR_DROPPED_EXECS,  /* execs ring buffer full */
	GW_BPF_CTR_RATELIMITED,	   /* error events over the rate */
	GW_BPF_CTR_DROPPED_PIDS,   /* procs map full */
	GW_BPF_CTR_DROPPED_STATS,  /* stats or errors map full */
	GW_BPF_CTR_STALE,	   /* returns whose entry was stale */
	GW_BPF_CTR_MAX
};

enum gw_bpf_event_type {
	GW_BPF_EV_EXEC = 1,
	GW_BPF_EV_EXIT = 2,
	GW_BPF_EV_API_ERROR = 3,
	GW_BPF_EV_FIRST_CALL = 4, /* a process's first probed call returned */
};

enum gw_bpf_event_flags {
	GW_BPF_EVF_OOM = 1u << 0,      /* API_ERROR: out of memory (code 2) */
	GW_BPF_EVF_COREDUMP = 1u << 1, /* EXIT: a core was dumped */
	GW_BPF_EVF_HAD_GPU = 1u << 2,  /* EXEC: the old image used CUDA */
};

struct gw_bpf_event {
	__u32 type;
	__u32 pid; /* tgid */
	__s32 exit_code;
	__s32 signal;
	__u32 api;
	__s32 code;
	__u64 live_bytes;
	__u64 size;
	__u32 flags;
	__u32 pad;
	char comm[GW_BPF_COMM_LEN];
	char filename[GW_BPF_FILENAME_LEN];
};

#endif
