/* SPDX-License-Identifier: MIT */
/*
 * decode.h - the agent's one reader of the CUPTI rings
 * (include/gpuwatch/cupti_ring.h): header validation, copying the unread
 * bytes out of a ring file the writer may change, corrupt or truncate at
 * any moment, and decoding records into one process's state.
 *
 * Rings are read through a file descriptor with pread() and their tail
 * written back with pwrite(), never mapped: a writer that truncates its
 * file makes a read come up short (-EBADMSG) where a mapping would fault
 * the agent.  The collector, the unit tests and the fuzz harness
 * (tests/fuzz/fuzz_cupti_decode.c) all go through these functions.
 *
 * The writer is untrusted: every function here survives arbitrary bytes,
 * bounds every table and counts what it refuses.  Nothing here allocates
 * except gw_cupti_proc_new().
 *
 * Thread safety: none; one reader per ring.
 */
#ifndef GW_CUPTI_DECODE_H
#define GW_CUPTI_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuwatch/cupti_ring.h"

#define GW_CUPTI_MAX_KERNELS 1024u /* kernel entries kept per process */
#define GW_CUPTI_MAX_APIS    256u  /* API entries kept per process */
#define GW_CUPTI_MAX_KFUNCS  1024u /* launch handles kept per process */

/* Header fields the reader relies on, validated. */
struct gw_cupti_ring_info {
	uint32_t version;
	uint32_t data_off, data_size;
	uint32_t pid;
	uint32_t flags;
	uint64_t pidns_ino;
	uint64_t start_ticks;
	uint64_t created_ns;
	uint64_t write_ns;
	uint64_t dropped;
	uint32_t status;
	char lib_version[16];
};

/*
 * Validates the header of the ring file open as fd (read-write): magic, a
 * known major version, hdr_size, data_off/data_size (power of two, within
 * limits) and data_off + data_size within the file's size (fstat()).
 * Returns 0 and fills *out, or -EBADMSG (not a ring, a damaged one, or a
 * file shorter than its header says), -EPROTONOSUPPORT (a version this
 * agent cannot read), -EINVAL (fd < 0, NULL), -errno of fstat/pread.
 */
__attribute__((warn_unused_result)) int
gw_cupti_ring_check(int fd, struct gw_cupti_ring_info *out);

/*
 * Copies the unread bytes [tail, head) of a ring validated by
 * gw_cupti_ring_check() into buf (cap bytes) and advances tail past them,
 * so that the writer may reuse the space.  Records are not interpreted
 * here.  Sets *len to the bytes copied.  When head - tail exceeds
 * data_size, tail is ahead of head or either is not a multiple of 8 (a
 * writer that lied or overran), nothing is copied, tail is set to head,
 * *lost is set to 1 and 0 is returned.  When the unread bytes exceed cap
 * (cap must be at least GW_CREC_MAX), whole records are copied up to cap,
 * following the framing, and the rest is left for the next call; bytes
 * whose framing is broken are copied as they are (gw_cupti_decode() then
 * refuses them).  Also stores now_ns into reader_seen_ns.
 * head and tail are each read once; the data with pread(), so a file cut
 * short returns -EBADMSG and leaves tail as it was.
 * Returns 0, -EBADMSG, -EINVAL or the -errno of pread/pwrite.
 */
__attribute__((warn_unused_result)) int
gw_cupti_ring_take(int fd, const struct gw_cupti_ring_info *ri, void *buf,
		   size_t cap, size_t *len, int *lost, uint64_t now_ns);

/* A kernel entry as decoded; name is the mangled name as sent. */
struct gw_cupti_kernel {
	uint64_t name_hash;
	uint64_t count, total_ns;
	double est_count, est_ns;
	uint64_t min_ns, max_ns;
	uint32_t flags, device;
	int32_t grid[3], block[3];
	uint32_t registers, static_smem, dynamic_smem, local_mem;
	float occupancy;
	uint64_t bins[GW_CRING_KBINS];
	char name[GW_CRING_NAME_MAX];
	uint64_t seen_seq; /* proc->process.seq when last updated */
	/* The mean traced duration of the launches counted since this
	 * kernel's previous record (its first: all of them), from the last
	 * record that counted any; 0 before. */
	double recent_ns;
};

struct gw_cupti_api {
	uint32_t domain, cbid;
	int32_t code;
	uint32_t sync;
	uint64_t count, total_ns;
	char name[GW_CRING_API_NAME_MAX];
};

/* A launch handle -> kernel (GW_CREC_KFUNC). */
struct gw_cupti_kfunc {
	uint64_t handle, name_hash;
	uint32_t kind;
};

struct gw_cupti_decode_stats {
	uint64_t records;  /* valid records applied */
	uint64_t bad;	   /* records refused (size, count, version, value) */
	uint64_t unknown;  /* records of an unknown type, skipped */
	uint64_t overflow; /* entries refused: kernel or API table full */
};

/* One process's latest state, built from its records. */
struct gw_cupti_proc {
	int have_process;		/* a PROCESS record was seen */
	struct gw_crec_process process; /* the last one, zero-extended */
	int have_memcpy;
	struct gw_crec_memcpy memcpy;
	struct gw_cupti_kernel *kernels; /* GW_CUPTI_MAX_KERNELS entries */
	unsigned int nkernels;
	struct gw_cupti_api apis[GW_CUPTI_MAX_APIS];
	unsigned int napis;
	struct gw_cupti_kfunc kfuncs[GW_CUPTI_MAX_KFUNCS];
	unsigned int nkfuncs;
	uint64_t kfunc_gen; /* bumped when a mapping is added or changed */
	struct gw_cupti_decode_stats st;
};

/* -ENOMEM, or 0 with *out zeroed and its kernel table allocated. */
__attribute__((warn_unused_result)) int
gw_cupti_proc_new(struct gw_cupti_proc **out);
void gw_cupti_proc_free(struct gw_cupti_proc *p);

/*
 * Applies the records in buf[0..len) (as copied by gw_cupti_ring_take) to
 * p: a kernel replaces the entry with its name_hash, an API entry the one
 * with its (domain, cbid, code, sync), a launch handle the one with its
 * (kind, handle), PROCESS and MEMCPY the previous ones.
 * Counters never go backwards in p: a record whose cumulative count is
 * below the kept one is refused as bad.  A framing error (size below 8,
 * not a multiple of 8, beyond len, above GW_CREC_MAX) stops decoding of
 * this buffer (counted once in bad); a record whose payload is invalid
 * (minimum size, nbins/name_len not matching size, bins not increasing or
 * out of range, name without its NUL, ratio outside (0, 1], a launch handle
 * of kind 0 or handle 0) is skipped and
 * counted.  Names are kept as sent, with bytes below 0x20 replaced by '?'.
 * Returns the records applied.
 */
size_t gw_cupti_decode(struct gw_cupti_proc *p, const void *buf, size_t len);

#endif
