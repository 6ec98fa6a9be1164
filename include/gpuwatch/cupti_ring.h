/* SPDX-License-Identifier: MIT */
/*
 * cupti_ring.h - the wire format between libgpuwatch_cupti.so (inside a CUDA
 * process, the writer) and the agent (the reader): one shared-memory ring
 * per process.  This header is the whole contract; both sides include it
 * and nothing else crosses the boundary.
 *
 * The file.  The writer creates DIR/gpuwatch-cupti.PID.TICKS, where DIR is
 * $GPUWATCH_CUPTI_DIR (default /dev/shm), PID its pid as it sees it and
 * TICKS its start time (field 22 of /proc/self/stat), mode 0600, sized
 * data_off + data_size.  The writer maps it MAP_SHARED; the reader never
 * maps it (the writer could truncate the file under a mapping): it reads
 * with pread() and stores tail and reader_seen_ns with pwrite().  The name
 * is a hint; the header is authoritative.  The writer never waits for a reader:
 * with no agent the ring fills and later summaries are dropped and counted.
 * At exit the writer sets GW_CRING_F_EXITED; it unlinks the file itself
 * only when no reader has touched reader_seen_ns for GW_CRING_READER_STALE_NS
 * (no agent to collect the last summary), otherwise the agent unlinks it
 * after reading.  The agent also removes files of processes that are gone.
 *
 * The data area is a byte ring of data_size (a power of two) bytes.  head
 * and tail count bytes since creation; the unread bytes are [tail, head).
 * The writer alone stores head (release, after the records are written)
 * and the reader alone stores tail.  Records are 8-byte aligned, begin with
 * struct gw_crec and never wrap: when a record does not fit before the end
 * of the area the writer fills the rest with a GW_CREC_PAD record (the
 * remainder is always a multiple of 8) and starts again at offset 0.
 *
 * Records carry cumulative totals since the process started (counters,
 * sums, bins), never deltas: a dropped record loses nothing that the next
 * one of the same key does not carry.  The reader keeps, per key, the last
 * record it saw.
 *
 * Trust.  Each side treats the other as untrusted: the reader copies the
 * unread bytes out before it looks at them and checks every size, count,
 * version and offset; the writer clamps a tail that is ahead of head or
 * more than data_size behind it.
 *
 * Versions.  hdr_size and each record's size tag let either side read an
 * older or a newer peer: a reader reads the fields it knows that lie
 * within size and takes missing trailing fields as zero; the minimum sizes
 * below are the version 1 layouts, and a record shorter than its minimum is
 * invalid.  A new field is only ever appended.  Unknown record types are
 * skipped.  Everything is in the host's byte order (same machine).
 */
#ifndef GPUWATCH_CUPTI_RING_H
#define GPUWATCH_CUPTI_RING_H

#include <stdint.h>

#define GW_CRING_MAGIC		 0x52435747u /* "GWCR" little-endian */
#define GW_CRING_VERSION	 1u
#define GW_CRING_PREFIX		 "gpuwatch-cupti."
#define GW_CRING_DEFAULT_DIR	 "/dev/shm"
#define GW_CRING_DATA_MIN	 (64u << 10)
#define GW_CRING_DATA_MAX	 (16u << 20)
#define GW_CRING_DATA_DEFAULT	 (256u << 10)
#define GW_CRING_READER_STALE_NS (10ull * 1000000000ull)

/* Header flags. */
#define GW_CRING_F_EXITED 1u /* the process ran its exit handler */

/* What the injection library could do; gpuwatch_cupti_status{status}. */
enum gw_cupti_status {
	GW_CUPTI_ST_STARTING = 0,   /* InitializeInjection still running */
	GW_CUPTI_ST_OK = 1,	    /* subscribed, activity enabled */
	GW_CUPTI_ST_NO_LIBRARY = 2, /* libcupti not found or symbols missing */
	GW_CUPTI_ST_BUSY = 3,	    /* another CUPTI subscriber (error 39) */
	GW_CUPTI_ST_FAILED = 4,	    /* subscribe or activity setup failed */
	GW_CUPTI_ST_PARTIAL = 5,    /* subscribed, some kinds not enabled */
	GW_CUPTI_ST_STOPPED = 6,    /* torn down (exit) */
	GW_CUPTI_ST_COUNT
};

struct gw_cring_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t hdr_size;    /* sizeof(struct gw_cring_hdr) of the writer */
	uint32_t data_off;    /* multiple of 4096, >= hdr_size */
	uint32_t data_size;   /* power of two, GW_CRING_DATA_MIN..MAX */
	uint32_t pid;	      /* getpid() in the writer's pid namespace */
	uint32_t flags;	      /* GW_CRING_F_*, written by the writer */
	uint64_t pidns_ino;   /* st_ino of /proc/self/ns/pid, 0 if unknown */
	uint64_t start_ticks; /* field 22 of /proc/self/stat */
	uint64_t created_ns;  /* CLOCK_REALTIME at creation */
	char lib_version[16]; /* NUL-terminated */
	/* Written by the writer only (own cache line). */
	uint64_t head;	   /* atomic, release-stored */
	uint64_t write_ns; /* CLOCK_REALTIME of the last summary written */
	uint64_t dropped;  /* records not written: ring full */
	uint32_t status;   /* enum gw_cupti_status */
	uint32_t pad1;
	uint8_t pad2[64 - 32];
	/* Written by the reader only (own cache line). */
	uint64_t tail; /* pwrite() by the reader, atomic load by the writer */
	uint64_t reader_seen_ns; /* CLOCK_REALTIME of the reader's last pass */
	uint8_t pad3[64 - 16];
};
_Static_assert(sizeof(struct gw_cring_hdr) == 192, "ring header layout");

/* Record framing. */
struct gw_crec {
	uint16_t type;	  /* enum gw_crec_type */
	uint16_t version; /* of this type's payload */
	uint32_t size;	  /* whole record with this header, multiple of 8 */
};
#define GW_CREC_MAX 8192u /* no valid record is larger */

enum gw_crec_type {
	GW_CREC_PAD = 0,     /* skip size bytes; at the end of the area */
	GW_CREC_PROCESS = 1, /* struct gw_crec_process */
	GW_CREC_KERNEL = 2,  /* struct gw_crec_kernel + bins + name */
	GW_CREC_MEMCPY = 3,  /* struct gw_crec_memcpy */
	GW_CREC_API = 4,     /* struct gw_crec_api + name */
	GW_CREC_KFUNC = 5,   /* struct gw_crec_kfunc; older readers skip it */
};

/* Process-wide totals; written with every summary (about once a second). */
struct gw_crec_process {
	struct gw_crec h;
	uint64_t seq;		/* summaries written so far, this one incl. */
	uint64_t time_ns;	/* CLOCK_REALTIME of this summary */
	uint32_t status;	/* enum gw_cupti_status */
	uint32_t cupti_version; /* cuptiGetVersion(), 0 if unknown */
	double sampling_ratio;	/* share of kernels traced, 1 if not cycled */
	uint64_t contexts_created;
	uint64_t contexts_destroyed;
	uint64_t mem_live_bytes; /* device memory allocated, not freed */
	uint64_t mem_peak_bytes;
	uint64_t mem_allocs;
	uint64_t mem_frees;
	uint64_t oom;		   /* allocation calls that failed with OOM */
	uint64_t records;	   /* activity records processed */
	uint64_t records_dropped;  /* CUPTI dropped (no buffer, full) */
	uint64_t kernels_overflow; /* kernel records folded into "other" */
	uint64_t api_overflow;	   /* API entries that found no slot */
	uint64_t overhead_ns;	   /* CUPTI's own overhead records, summed */
	uint64_t callbacks;	   /* API callbacks taken */
	uint32_t apis_muted;	   /* callbacks switched off as too hot */
	uint32_t pad;
};
#define GW_CREC_PROCESS_MIN_SIZE ((uint32_t)sizeof(struct gw_crec_process))

/*
 * Kernel duration bins: bin 0 holds durations below 64 ns; bin i >= 1 holds
 * [2^k (1 + j/4), 2^k (1 + (j+1)/4)) ns with k = 6 + (i-1)/4, j = (i-1)%4,
 * so every power of two from 2^7 ns on is a bin edge; the last bin also
 * holds everything longer.  At most 12.5% relative error.
 */
#define GW_CRING_KBINS 128u

static inline unsigned int gw_cring_kbin(uint64_t ns)
{
	if (ns < 64)
		return 0;
	unsigned int k = 63u - (unsigned int)__builtin_clzll(ns);
	unsigned int j = (unsigned int)(ns >> (k - 2)) & 3u;
	unsigned int i = (k - 6) * 4 + j + 1;
	return i < GW_CRING_KBINS ? i : GW_CRING_KBINS - 1;
}

/* Exclusive upper edge of bin i in ns (the last bin: +inf, returns 0). */
static inline uint64_t gw_cring_kbin_upper(unsigned int i)
{
	if (i == 0)
		return 64;
	if (i >= GW_CRING_KBINS - 1)
		return 0;
	unsigned int k = 6 + (i - 1) / 4, j = (i - 1) % 4;
	return (1ull << k) + ((uint64_t)(j + 1) << (k - 2));
}

struct gw_crec_bin {
	uint32_t bin; /* < GW_CRING_KBINS, strictly increasing */
	uint32_t pad;
	uint64_t count; /* traced kernels in the bin */
};

#define GW_CRING_NAME_MAX     1024u /* bytes of a name with its NUL */
#define GW_CRING_KF_TRUNCATED 1u    /* name cut; name_hash is of the full one */
#define GW_CRING_KF_OTHER     2u /* the overflow entry: kernels beyond the table */

/*
 * One kernel function (by mangled name), cumulative.  Followed by nbins
 * struct gw_crec_bin (only non-empty bins) and then name_len bytes of name
 * (NUL included); size = sizeof + nbins * 16 + name_len rounded up to 8.
 * Launch configuration and resources are the last launch's.
 */
struct gw_crec_kernel {
	struct gw_crec h;
	uint64_t name_hash; /* 64-bit FNV-1a of the full mangled name */
	uint64_t count;	    /* traced launches */
	uint64_t total_ns;  /* traced GPU time */
	double est_count;   /* launches estimated: traced / sampling ratio */
	double est_ns;	    /* GPU time estimated likewise */
	uint64_t min_ns, max_ns;
	uint32_t flags;	 /* GW_CRING_KF_* */
	uint32_t device; /* device id of the last launch */
	int32_t grid[3], block[3];
	uint32_t registers;		    /* per thread */
	uint32_t static_smem, dynamic_smem; /* bytes per block */
	uint32_t local_mem;		    /* bytes per thread */
	float occupancy; /* theoretical, 0..1; < 0 when unknown */
	uint16_t nbins;
	uint16_t name_len; /* with the NUL, <= GW_CRING_NAME_MAX */
};
#define GW_CREC_KERNEL_MIN_SIZE ((uint32_t)sizeof(struct gw_crec_kernel))

enum gw_cring_copy_kind {
	GW_COPY_HTOD = 0,
	GW_COPY_DTOH,
	GW_COPY_DTOD,
	GW_COPY_HTOH,
	GW_COPY_PTOP,
	GW_COPY_MEMSET,
	GW_COPY_OTHER,
	GW_COPY_KINDS
};

struct gw_crec_copy {
	uint64_t count;
	uint64_t bytes;
	uint64_t total_ns; /* GPU time of the operations */
};

/* Memory copies and sets, cumulative, all kinds in one record. */
struct gw_crec_memcpy {
	struct gw_crec h;
	struct gw_crec_copy kind[GW_COPY_KINDS];
};
#define GW_CREC_MEMCPY_MIN_SIZE ((uint32_t)sizeof(struct gw_crec_memcpy))

#define GW_CRING_API_RUNTIME  1u
#define GW_CRING_API_DRIVER   2u
#define GW_CRING_API_NAME_MAX 128u

/*
 * One (domain, API, result) entry, cumulative.  code != 0: calls that
 * returned that error.  code == 0 with sync set: a synchronisation call,
 * count and total_ns are the calls and the host time spent waiting.
 * Followed by name_len bytes of the API's name (NUL included).
 */
struct gw_crec_api {
	struct gw_crec h;
	uint32_t domain; /* GW_CRING_API_* */
	uint32_t cbid;	 /* CUPTI callback id in that domain */
	int32_t code;	 /* cudaError_t or CUresult */
	uint32_t sync;	 /* 1: synchronisation timing entry */
	uint64_t count;
	uint64_t total_ns;
	uint16_t name_len; /* with the NUL, <= GW_CRING_API_NAME_MAX */
	uint16_t pad[3];
};
#define GW_CREC_API_MIN_SIZE ((uint32_t)sizeof(struct gw_crec_api))

/* What a launch handle is. */
#define GW_CRING_KFUNC_CUFUNCTION 1u /* a CUfunction (cuLaunchKernel's f) */
#define GW_CRING_KFUNC_HOST                                                    \
	2u /* a host stub (cudaLaunchKernel's func);
					reserved: not written yet (the agent
					joins host stubs by their symbol) */

/*
 * A launch handle -> kernel mapping, for joining launch call paths taken
 * outside the process (the agent's eBPF probe on cuLaunchKernel sees only
 * the CUfunction it is given) with the kernel's GW_CREC_KERNEL record:
 * name_hash is that record's (FNV-1a of the full mangled name), so the
 * name and GPU time come from there.  Learnt at the exit of
 * cuModuleGetFunction, cuLibraryGetKernel (a CUkernel, which cuLaunchKernel
 * takes as well) and cuKernelGetFunction (not at launches: they have no
 * callback).  Written when learnt and
 * again every GW_CRING_KFUNC_REPEAT summaries (a reader that starts late
 * still learns it); a reader keeps the latest per (kind, handle), bounded.
 * A handle may be reused after its module is unloaded: the newer mapping
 * replaces the older one.
 */
struct gw_crec_kfunc {
	struct gw_crec h;
	uint64_t handle;    /* the CUfunction or host function address */
	uint64_t name_hash; /* of the kernel, as in GW_CREC_KERNEL */
	uint32_t kind;	    /* GW_CRING_KFUNC_* */
	uint32_t pad;
};
#define GW_CREC_KFUNC_MIN_SIZE ((uint32_t)sizeof(struct gw_crec_kfunc))
#define GW_CRING_KFUNC_REPEAT  60u

#endif
