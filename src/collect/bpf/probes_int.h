/* SPDX-License-Identifier: MIT */
/*
 * probes_int.h - what the eBPF loader's files share; internal to
 * src/collect/bpf/, not part of the probes.h interface.
 *
 *   probes.c       the loader's state, opening and closing, attaching and
 *                  the duty cycle of the high-rate probes, calibration
 *   probes_api.c   the CUDA API table and the attach cookies
 *   probes_elf.c   finding the table's functions in an ELF file
 *   probes_read.c  reading the maps, forgetting processes, the event ring
 *                  buffers, the counters
 *
 * As probes.h: a struct gw_probes is used by one thread at a time.
 */
#ifndef GW_PROBES_INT_H
#define GW_PROBES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "probes.h"

/* ---- the API table (probes_api.c) ---- */

/* Per-thread default stream spellings: cudaMemcpy_ptds, cuLaunchKernel_ptsz */
enum { VAR_PLAIN, VAR_PTSZ, VAR_PTDS, NVARIANTS };

struct api {
	const char *name;
	unsigned char lib;    /* enum gw_cuda_lib */
	unsigned char family; /* enum gw_cuda_family */
	unsigned char kind;   /* copies: enum gw_copy_kind from the name */
	unsigned char flags;  /* GW_BPF_F_KIND_ARG, GW_BPF_F_HOST */
	unsigned char shift;  /* memsets: element size is 1 << shift */
};

#define NAPIS	  71u /* entries of gw_cuda_apis[] (checked there) */
#define NSYMS	  (NAPIS * NVARIANTS)
#define CALIB_SYM 0xffffu

_Static_assert(NSYMS < CALIB_SYM, "symbol ids must fit the cookie");

/* The table; a symbol id is api * NVARIANTS + variant. */
extern const struct api gw_cuda_apis[];

static inline bool family_high_rate(unsigned int f)
{
	return f == GW_FAM_LAUNCH || f == GW_FAM_COPY || f == GW_FAM_MEMSET;
}

/* The attach cookie of a symbol id (CALIB_SYM: the calibration probe). */
uint64_t gw_probes_sym_cookie(unsigned int sym);

/* ---- the loader's state (probes.c) ---- */

struct fsym {
	uint64_t off; /* file offset of the function */
	unsigned int sym;
	bool on, failed;
	struct bpf_link *entry, *ret; /* one perf event each (older kernels) */
};

/* A uprobe_multi link: n uprobes (entries or returns) behind one fd. */
struct mlink {
	int fd;
	unsigned int n;
	bool high;
};

struct file {
	dev_t dev;
	ino_t ino;
	unsigned int libs; /* tables looked for */
	int fd;
	unsigned int nsyms;
	struct fsym *syms;
	unsigned int nml;
	struct mlink *ml;
};

#define NEG_MAX 4096 /* files known to hold none of our symbols */

struct neg {
	dev_t dev;
	ino_t ino;
	unsigned int libs;
};

struct gw_probes {
	struct cuda_bpf *skel;
	struct bpf_link *exec_link, *exit_link;
	struct ring_buffer *rb;
	int ncpus;
	unsigned int max_allocs, max_pids, max_files;

	struct file *files;
	unsigned int nfiles;
	struct neg *neg;
	unsigned int nneg, neg_next;
	int high_on;
	bool multi; /* uprobe_multi links (kernel 6.6) */
	uint64_t nprobes, attach_failures, dropped_files, calib_hits;
	unsigned short by_name[NAPIS]; /* api ids sorted by name */

	/* gw_probes_poll()'s callback while it runs */
	int (*ev_cb)(void *ctx, const struct gw_probe_event *e);
	void *ev_ctx;
	int ev_ret;

	char err[256];
};

/* Sets the message gw_probes_last_error() returns. */
__attribute__((format(printf, 2, 3))) void
gw_probes_seterr(struct gw_probes *p, const char *fmt, ...);

/* ---- symbols (probes_elf.c) ---- */

struct found {
	uint64_t off;
	int rank; /* 0: not found, 1 local, 2 weak, 3 global */
};

/*
 * Looks up every table symbol of libs in the ELF file fd, into found
 * (NSYMS entries, by symbol id, zeroed by the caller): 0, or -ENOEXEC for
 * a file that is not a 64-bit executable or shared object (message in p).
 */
int gw_probes_resolve(struct gw_probes *p, int fd, unsigned int libs,
		      struct found *found);

/* ---- reading (probes_read.c) ---- */

/* The ring buffers' callback: hands one event to gw_probes_poll()'s. */
int gw_probes_sample(void *ctx, void *data, size_t size);
/* The sum over the CPUs of a counter slot; 0 when it cannot be read. */
uint64_t gw_probes_read_counter(struct gw_probes *p, __u32 slot);
/* CLOCK_MONOTONIC in ns. */
uint64_t gw_probes_mono_ns(void);

#endif /* GW_PROBES_INT_H */
