/* SPDX-License-Identifier: MIT */
/*
 * probes.c - loader of cuda.bpf.c: the API table, symbol resolution in ELF
 * files, attaching and duty-cycling the uprobes, reading the maps, the ring
 * buffers and the calibration of the per-hit cost.
 *
 * Each attached file keeps an O_RDONLY descriptor; probes attach through
 * "/proc/self/fd/N", which names the inode the descriptor holds whatever
 * happens to the path (a container's root going away, a package upgrade
 * replacing the library), and lets high-rate probes be attached again at
 * every duty cycle without resolving symbols again.
 */
#include "probes.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cuda_bpf.h"
#include "cuda.skel.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the API table ---- */

/* Per-thread default stream spellings: cudaMemcpy_ptds, cuLaunchKernel_ptsz */
enum { VAR_PLAIN, VAR_PTSZ, VAR_PTDS, NVARIANTS };
static const char *const variant_suffix[NVARIANTS] = {"", "_ptsz", "_ptds"};

struct api {
	const char *name;
	unsigned char lib;    /* enum gw_cuda_lib */
	unsigned char family; /* enum gw_cuda_family */
	unsigned char kind;   /* copies: enum gw_copy_kind from the name */
	unsigned char flags;  /* GW_BPF_F_KIND_ARG, GW_BPF_F_HOST */
	unsigned char shift;  /* memsets: element size is 1 << shift */
};

/* clang-format off */
#define RT GW_LIB_RUNTIME
#define DRV GW_LIB_DRIVER
#define A(n, l, f) { #n, l, GW_FAM_##f, 0, 0, 0 }
#define HOST(n, l, f) { #n, l, GW_FAM_##f, 0, GW_BPF_F_HOST, 0 }
#define COPY(n, l, k) { #n, l, GW_FAM_COPY, GW_COPY_##k, 0, 0 }
#define COPYK(n, l) \
	{ #n, l, GW_FAM_COPY, GW_COPY_DEFAULT, GW_BPF_F_KIND_ARG, 0 }
#define SET(n, l, s) { #n, l, GW_FAM_MEMSET, 0, 0, s }

/*
 * Argument order from NVIDIA's CUDA Runtime and Driver API references:
 *   alloc   (T **ptr, size_t size, ...)      cudaMalloc, cuMemAlloc_v2,
 *           cudaMallocManaged(p, size, flags), cudaMallocAsync(p, size,
 *           stream), cudaHostAlloc(p, size, flags), cuMemHostAlloc(...)
 *   free    (T *ptr, ...)                    cudaFree, cuMemFree_v2, ...
 *   copy    (dst, src, size_t count[, kind]) cudaMemcpy(dst, src, count,
 *           kind), cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount), ...
 *   memset  (dst, value, size_t count)       cudaMemset(ptr, value,
 *           count); cuMemsetD32_v2(dst, ui, N) sets N * 4 bytes
 * Other families only count calls, errors and time.
 */
static const struct api apis[] = {
	/* runtime */
	A(cudaMalloc, RT, ALLOC),
	A(cudaMallocManaged, RT, ALLOC),
	A(cudaMallocAsync, RT, ALLOC),
	A(cudaMallocFromPoolAsync, RT, ALLOC),
	HOST(cudaMallocHost, RT, ALLOC),
	HOST(cudaHostAlloc, RT, ALLOC),
	A(cudaFree, RT, FREE),
	A(cudaFreeAsync, RT, FREE),
	A(cudaFreeHost, RT, FREE),
	COPYK(cudaMemcpy, RT),
	COPYK(cudaMemcpyAsync, RT),
	SET(cudaMemset, RT, 0),
	SET(cudaMemsetAsync, RT, 0),
	A(cudaLaunchKernel, RT, LAUNCH),
	A(cudaLaunchCooperativeKernel, RT, LAUNCH),
	A(cudaLaunchKernelExC, RT, LAUNCH),
	A(cudaGraphLaunch, RT, LAUNCH),
	A(cudaDeviceSynchronize, RT, SYNC),
	A(cudaStreamSynchronize, RT, SYNC),
	A(cudaEventSynchronize, RT, SYNC),
	A(cudaSetDevice, RT, DEVICE),
	A(cudaGetDevice, RT, DEVICE),
	A(cudaGetDeviceCount, RT, DEVICE),
	A(cudaDeviceReset, RT, CTX),
	A(cudaStreamCreate, RT, OTHER),
	A(cudaStreamCreateWithFlags, RT, OTHER),
	A(cudaStreamCreateWithPriority, RT, OTHER),
	A(cudaStreamDestroy, RT, OTHER),
	A(cudaEventRecord, RT, EVENT),
	/* driver */
	A(cuInit, DRV, CTX),
	A(cuCtxCreate_v2, DRV, CTX),
	A(cuCtxCreate_v3, DRV, CTX),
	A(cuCtxCreate_v4, DRV, CTX),
	A(cuCtxDestroy_v2, DRV, CTX),
	A(cuDevicePrimaryCtxRetain, DRV, CTX),
	A(cuDevicePrimaryCtxRelease_v2, DRV, CTX),
	A(cuDeviceGet, DRV, DEVICE),
	A(cuDeviceGetCount, DRV, DEVICE),
	A(cuMemAlloc_v2, DRV, ALLOC),
	A(cuMemAllocManaged, DRV, ALLOC),
	A(cuMemAllocAsync, DRV, ALLOC),
	A(cuMemAllocFromPoolAsync, DRV, ALLOC),
	HOST(cuMemAllocHost_v2, DRV, ALLOC),
	HOST(cuMemHostAlloc, DRV, ALLOC),
	A(cuMemFree_v2, DRV, FREE),
	A(cuMemFreeAsync, DRV, FREE),
	A(cuMemFreeHost, DRV, FREE),
	COPY(cuMemcpy, DRV, DEFAULT),
	COPY(cuMemcpyAsync, DRV, DEFAULT),
	COPY(cuMemcpyHtoD_v2, DRV, H2D),
	COPY(cuMemcpyDtoH_v2, DRV, D2H),
	COPY(cuMemcpyDtoD_v2, DRV, D2D),
	COPY(cuMemcpyHtoDAsync_v2, DRV, H2D),
	COPY(cuMemcpyDtoHAsync_v2, DRV, D2H),
	COPY(cuMemcpyDtoDAsync_v2, DRV, D2D),
	SET(cuMemsetD8_v2, DRV, 0),
	SET(cuMemsetD16_v2, DRV, 1),
	SET(cuMemsetD32_v2, DRV, 2),
	SET(cuMemsetD8Async, DRV, 0),
	SET(cuMemsetD16Async, DRV, 1),
	SET(cuMemsetD32Async, DRV, 2),
	A(cuLaunchKernel, DRV, LAUNCH),
	A(cuLaunchKernelEx, DRV, LAUNCH),
	A(cuLaunchCooperativeKernel, DRV, LAUNCH),
	A(cuGraphLaunch, DRV, LAUNCH),
	A(cuCtxSynchronize, DRV, SYNC),
	A(cuStreamSynchronize, DRV, SYNC),
	A(cuEventSynchronize, DRV, SYNC),
	A(cuEventRecord, DRV, EVENT),
	A(cuStreamCreate, DRV, OTHER),
	A(cuStreamDestroy_v2, DRV, OTHER),
};
/* clang-format on */

#undef RT
#undef DRV
#undef A
#undef HOST
#undef COPY
#undef COPYK
#undef SET

#define NAPIS	  ((unsigned int)ARRAY_SIZE(apis))
#define NSYMS	  (NAPIS * NVARIANTS)
#define CALIB_SYM 0xffffu

_Static_assert(NSYMS < CALIB_SYM, "symbol ids must fit the cookie");

static const char *const family_names[] = {
    [GW_FAM_ALLOC] = "alloc",	[GW_FAM_FREE] = "free",
    [GW_FAM_COPY] = "copy",	[GW_FAM_MEMSET] = "memset",
    [GW_FAM_LAUNCH] = "launch", [GW_FAM_SYNC] = "sync",
    [GW_FAM_CTX] = "ctx",	[GW_FAM_DEVICE] = "device",
    [GW_FAM_EVENT] = "event",	[GW_FAM_OTHER] = "other",
};

unsigned int gw_cuda_api_count(void)
{
	return NAPIS;
}

const char *gw_cuda_api_name(unsigned int api)
{
	return api < NAPIS ? apis[api].name : NULL;
}

int gw_cuda_api_find(const char *name)
{
	for (unsigned int i = 0; name && i < NAPIS; i++)
		if (!strcmp(apis[i].name, name))
			return (int)i;
	return -ENOENT;
}

static bool family_high_rate(unsigned int f)
{
	return f == GW_FAM_LAUNCH || f == GW_FAM_COPY || f == GW_FAM_MEMSET;
}

int gw_cuda_api_is_high_rate(unsigned int api)
{
	return api < NAPIS && family_high_rate(apis[api].family);
}

int gw_cuda_api_family(unsigned int api)
{
	return api < NAPIS ? apis[api].family : -EINVAL;
}

unsigned int gw_cuda_api_lib(unsigned int api)
{
	return api < NAPIS ? apis[api].lib : 0;
}

const char *gw_cuda_family_name(int family)
{
	if (family < 0 || (size_t)family >= ARRAY_SIZE(family_names))
		return NULL;
	return family_names[family];
}

/* What the return probe does for each family. */
static const unsigned char family_op[] = {
    [GW_FAM_ALLOC] = GW_BPF_OP_ALLOC, [GW_FAM_FREE] = GW_BPF_OP_FREE,
    [GW_FAM_COPY] = GW_BPF_OP_COPY,   [GW_FAM_MEMSET] = GW_BPF_OP_MEMSET,
    [GW_FAM_SYNC] = GW_BPF_OP_SYNC,   [GW_FAM_OTHER] = GW_BPF_OP_NONE,
};

/* The attach cookie of a symbol id (CALIB_SYM: the calibration probe). */
static uint64_t sym_cookie(unsigned int sym)
{
	const struct api *a;
	unsigned int flags;

	if (sym == CALIB_SYM)
		return GW_BPF_COOKIE(GW_BPF_API_CALIB, CALIB_SYM,
				     GW_BPF_OP_NONE, 0, 0, 0);
	a = &apis[sym / NVARIANTS];
	flags = a->flags;
	if (family_high_rate(a->family))
		flags |= GW_BPF_F_HIGH_RATE;
	return GW_BPF_COOKIE(sym / NVARIANTS, sym, family_op[a->family],
			     a->kind, flags, a->shift);
}

/* ---- the loader's state ---- */

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

__attribute__((format(printf, 2, 3))) static void seterr(struct gw_probes *p,
							 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

const char *gw_probes_last_error(const struct gw_probes *p)
{
	return p ? p->err : "";
}

static int cmp_api_name(const void *a, const void *b)
{
	return strcmp(apis[*(const unsigned short *)a].name,
		      apis[*(const unsigned short *)b].name);
}

static int cmp_name_api(const void *name, const void *api)
{
	return strcmp(name, apis[*(const unsigned short *)api].name);
}

/* The api called name (exactly), or -1. */
static int api_by_name(const struct gw_probes *p, const char *name)
{
	const unsigned short *a =
	    bsearch(name, p->by_name, NAPIS, sizeof(*a), cmp_name_api);

	return a ? *a : -1;
}

/* ---- opening ---- */

__attribute__((format(printf, 3, 4))) static void
put_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * uprobe_multi links (kernel 6.6) attach and detach a whole set of uprobes
 * at the cost of one: with one perf event per uprobe, every detach waits
 * for RCU grace periods under a global mutex (tens of ms each).  Libbpf
 * 1.1 predates them, so they are made with the bpf(2) command directly.
 */
#define UPROBE_MULTI_ATTACH 48 /* BPF_TRACE_UPROBE_MULTI */
#define UPROBE_MULTI_RETURN 1u /* BPF_F_UPROBE_MULTI_RETURN */

struct uprobe_multi_attr { /* union bpf_attr, link_create.uprobe_multi */
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 uflags;
	__u32 pid;
};

/* A link fd for prog on the n offsets of the file at path, or -errno. */
static int multi_link(const struct bpf_program *prog, const char *path,
		      const uint64_t *off, const uint64_t *cookie,
		      unsigned int n, bool ret)
{
	struct uprobe_multi_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)bpf_program__fd(prog);
	a.attach_type = UPROBE_MULTI_ATTACH;
	a.path = (uintptr_t)path;
	a.offsets = (uintptr_t)off;
	a.cookies = (uintptr_t)cookie;
	a.cnt = n;
	a.uflags = ret ? UPROBE_MULTI_RETURN : 0;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : (int)fd;
}

/* Does this kernel know the uprobe_multi attach type? */
static bool have_uprobe_multi(void)
{
	const struct bpf_insn insns[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = UPROBE_MULTI_ATTACH);
	int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &o);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

#define OPT_HAS(o, f)                                                          \
	((o)->sz >= offsetof(struct gw_probes_opts, f) + sizeof((o)->f))

static int sample(void *ctx, void *data, size_t size);

int gw_probes_open(const struct gw_probes_opts *o, struct gw_probes **out,
		   char *err, size_t errlen)
{
	unsigned int max_allocs = GW_PROBES_DEFAULT_MAX_ALLOCS;
	unsigned int max_pids = GW_PROBES_DEFAULT_MAX_PIDS;
	unsigned int max_files = GW_PROBES_DEFAULT_MAX_FILES;
	unsigned int err_rate = GW_PROBES_DEFAULT_ERROR_EVENTS;
	struct gw_probes *p = NULL;
	struct cuda_bpf *s;
	int r;

	put_err(err, errlen, "%s", "");
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (o) {
		if (o->sz < sizeof(o->sz)) {
			put_err(err, errlen, "options: bad size");
			return -EINVAL;
		}
		/* A newer caller's extra fields must be unset. */
		for (size_t i = sizeof(*o); i < o->sz; i++)
			if (((const unsigned char *)o)[i]) {
				put_err(err, errlen,
					"options: unknown field set");
				return -EINVAL;
			}
		if (OPT_HAS(o, max_allocs) && o->max_allocs)
			max_allocs = o->max_allocs;
		if (OPT_HAS(o, max_pids) && o->max_pids)
			max_pids = o->max_pids;
		if (OPT_HAS(o, max_files) && o->max_files)
			max_files = o->max_files;
		if (OPT_HAS(o, error_events_per_sec) && o->error_events_per_sec)
			err_rate = o->error_events_per_sec;
	}
	if (max_pids > (1u << 20) || max_allocs > (1u << 26) ||
	    max_files > 65536) {
		put_err(err, errlen, "options: limit out of range");
		return -EINVAL;
	}

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		r = errno;
		put_err(err, errlen,
			"kernel has no BTF (/sys/kernel/btf/vmlinux: %s; needs "
			"CONFIG_DEBUG_INFO_BTF)",
			strerror(r));
		return r == EACCES ? -EPERM : -ENOSYS;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		put_err(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -ENOSYS;
	}

	p = calloc(1, sizeof(*p));
	if (!p) {
		put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->max_allocs = max_allocs;
	p->max_pids = max_pids;
	p->max_files = max_files;
	p->high_on = 1;
	for (unsigned int i = 0; i < NAPIS; i++)
		p->by_name[i] = (unsigned short)i;
	qsort(p->by_name, NAPIS, sizeof(p->by_name[0]), cmp_api_name);
	p->neg = calloc(NEG_MAX, sizeof(*p->neg));
	p->files = calloc(max_files, sizeof(*p->files));
	if (!p->neg || !p->files) {
		put_err(err, errlen, "out of memory");
		r = -ENOMEM;
		goto err_free;
	}
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0) {
		r = p->ncpus ? p->ncpus : -EINVAL;
		put_err(err, errlen, "cannot count possible CPUs: %s",
			strerror(-r));
		goto err_free;
	}

	p->multi =
	    !(o && OPT_HAS(o, force_perf_attach) && o->force_perf_attach) &&
	    have_uprobe_multi();
	/* Without uprobe_multi links: uprobes as perf events. */
	if (!p->multi &&
	    access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		r = -ENOSYS;
		put_err(err, errlen,
			"kernel has no uprobe events "
			"(/sys/bus/event_source/devices/uprobe: %s; needs "
			"CONFIG_UPROBE_EVENTS)",
			strerror(errno));
		goto err_free;
	}
	s = p->skel = cuda_bpf__open();
	if (!s) {
		r = -errno;
		put_err(err, errlen, "opening the BPF object: %s",
			strerror(-r));
		goto err_free;
	}
	s->rodata->error_events_per_sec = err_rate;
	s->rodata->oom_events_per_sec = err_rate;
	if (p->multi && ((r = bpf_program__set_expected_attach_type(
			      s->progs.gw_entry, UPROBE_MULTI_ATTACH)) ||
			 (r = bpf_program__set_expected_attach_type(
			      s->progs.gw_return, UPROBE_MULTI_ATTACH)))) {
		put_err(err, errlen, "setting up the BPF programs: %s",
			strerror(-r));
		goto err_destroy;
	}
	if ((r = bpf_map__set_max_entries(s->maps.allocs, max_allocs)) ||
	    (r = bpf_map__set_max_entries(s->maps.procs, max_pids)) ||
	    (r = bpf_map__set_max_entries(s->maps.ratelimit, max_pids)) ||
	    (r = bpf_map__set_max_entries(s->maps.stats, max_pids * 32)) ||
	    (r = bpf_map__set_max_entries(s->maps.errors, max_pids * 16))) {
		put_err(err, errlen, "sizing the BPF maps: %s", strerror(-r));
		goto err_destroy;
	}
	r = cuda_bpf__load(s);
	if (r) {
		if (r == -EPERM) {
			put_err(err, errlen,
				"loading BPF programs: %s (needs root, or "
				"CAP_BPF and CAP_PERFMON)",
				strerror(EPERM));
		} else if (r == -ENOSYS || r == -EOPNOTSUPP ||
			   r == -524 /* ENOTSUPP */) {
			r = -ENOSYS;
			put_err(err, errlen,
				"loading BPF programs: the kernel lacks BPF "
				"support they need (ring buffers, attach "
				"cookies: 5.15 or later)");
		} else {
			/* EACCES, EINVAL: the verifier said no. */
			put_err(
			    err, errlen,
			    "loading BPF programs: the kernel rejected them: "
			    "%s (libbpf's messages have the verifier log)",
			    strerror(-r));
			r = -EINVAL;
		}
		goto err_destroy;
	}
	p->exec_link = bpf_program__attach(s->progs.gw_exec);
	p->exit_link =
	    p->exec_link ? bpf_program__attach(s->progs.gw_exit) : NULL;
	if (!p->exit_link) {
		r = -errno;
		put_err(err, errlen,
			"attaching to the sched_process_exec/exit tracepoints: "
			"%s",
			strerror(-r));
		goto err_links;
	}
	p->rb = ring_buffer__new(bpf_map__fd(s->maps.events), sample, p, NULL);
	if (!p->rb) {
		r = -errno;
		put_err(err, errlen, "ring buffer: %s", strerror(-r));
		goto err_links;
	}
	r = ring_buffer__add(p->rb, bpf_map__fd(s->maps.execs), sample, p);
	if (r) {
		put_err(err, errlen, "ring buffer: %s", strerror(-r));
		goto err_rb;
	}
	*out = p;
	return 0;

err_rb:
	ring_buffer__free(p->rb);
err_links:
	bpf_link__destroy(p->exit_link);
	bpf_link__destroy(p->exec_link);
err_destroy:
	cuda_bpf__destroy(p->skel);
err_free:
	free(p->files);
	free(p->neg);
	free(p);
	return r;
}

static void detach_syms(struct gw_probes *p, struct file *f, bool high);

static void file_release(struct gw_probes *p, struct file *f)
{
	detach_syms(p, f, true);
	detach_syms(p, f, false);
	free(f->syms);
	free(f->ml);
	if (f->fd >= 0)
		close(f->fd);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

void gw_probes_close(struct gw_probes *p)
{
	if (!p)
		return;
	for (unsigned int i = 0; i < p->nfiles; i++)
		file_release(p, &p->files[i]);
	ring_buffer__free(p->rb);
	bpf_link__destroy(p->exit_link);
	bpf_link__destroy(p->exec_link);
	cuda_bpf__destroy(p->skel);
	free(p->files);
	free(p->neg);
	free(p);
}

/* ---- symbols ---- */

struct found {
	uint64_t off;
	int rank; /* 0: not found, 1 local, 2 weak, 3 global */
};

/*
 * The symbol id of an ELF symbol name ("cudaMemcpy_ptds@@libcudart.so.13"
 * and the like), or -1 when it is none of the table's APIs in libs.
 */
static int match_symbol(const struct gw_probes *p, const char *name,
			unsigned int libs)
{
	char base[96];
	size_t n = strcspn(name, "@");
	unsigned int var = VAR_PLAIN;
	int api;

	if (name[0] != 'c' || name[1] != 'u' || n >= sizeof(base) || n < 4)
		return -1;
	memcpy(base, name, n);
	base[n] = '\0';
	for (unsigned int v = VAR_PTSZ; v < NVARIANTS; v++) {
		size_t sl = strlen(variant_suffix[v]);

		if (n > sl && !strcmp(base + n - sl, variant_suffix[v])) {
			base[n - sl] = '\0';
			var = v;
			break;
		}
	}
	api = api_by_name(p, base);
	if (api < 0 || !(apis[api].lib & libs))
		return -1;
	return api * NVARIANTS + (int)var;
}

/* File offset of a virtual address, from the loadable segments. */
static int vaddr_to_off(Elf *e, size_t phnum, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Looks up every table symbol of libs in the file's .dynsym and .symtab
 * (executables with cudart linked in statically have it only in .symtab).
 * A global definition wins over a weak one, which wins over a local one.
 */
static int resolve(struct gw_probes *p, int fd, unsigned int libs,
		   struct found *found)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t phnum;
	Elf *e;
	int r = 0;

	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) ||
	    gelf_getclass(e) != ELFCLASS64 || elf_getphdrnum(e, &phnum)) {
		seterr(p, "not a 64-bit ELF file: %s", elf_errmsg(-1));
		r = -ENOEXEC;
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		seterr(p, "not an executable or shared object");
		r = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = NULL;
		GElf_Shdr sh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		while ((d = elf_getdata(scn, d))) {
			for (size_t i = 0; i < n; i++) {
				const char *name;
				GElf_Sym sm;
				uint64_t off;
				int id, rank, bind;

				if (!gelf_getsym(d, (int)i, &sm))
					break;
				if (GELF_ST_TYPE(sm.st_info) != STT_FUNC ||
				    sm.st_shndx == SHN_UNDEF || !sm.st_value)
					continue;
				name = elf_strptr(e, sh.sh_link, sm.st_name);
				if (!name)
					continue;
				id = match_symbol(p, name, libs);
				if (id < 0)
					continue;
				bind = GELF_ST_BIND(sm.st_info);
				rank = bind == STB_GLOBAL  ? 3
				       : bind == STB_WEAK  ? 2
				       : bind == STB_LOCAL ? 1
							   : 0;
				if (rank <= found[id].rank ||
				    vaddr_to_off(e, phnum, sm.st_value, &off))
					continue;
				found[id].off = off;
				found[id].rank = rank;
			}
		}
	}
out:
	elf_end(e);
	return r;
}

/* ---- attaching ---- */

static bool sym_high_rate(const struct fsym *s)
{
	return s->sym < NSYMS &&
	       family_high_rate(apis[s->sym / NVARIANTS].family);
}

/* Older kernels: a perf event per uprobe, the return probe first. */
static int perf_attach(struct gw_probes *p, const char *path, struct fsym *s)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = sym_cookie(s->sym),
		    .retprobe = true);

	s->ret = bpf_program__attach_uprobe_opts(p->skel->progs.gw_return, -1,
						 path, s->off, &o);
	if (!s->ret)
		return -errno;
	o.retprobe = false;
	s->entry = bpf_program__attach_uprobe_opts(p->skel->progs.gw_entry, -1,
						   path, s->off, &o);
	if (!s->entry) {
		int r = -errno;

		bpf_link__destroy(s->ret);
		s->ret = NULL;
		return r;
	}
	return 0;
}

/* One pair of uprobe_multi links (returns, then entries) for n symbols. */
static int multi_attach(struct gw_probes *p, struct file *f, const char *path,
			struct fsym **v, unsigned int n, bool high)
{
	uint64_t *off = calloc(2 * (size_t)n, sizeof(*off)), *cookie = off + n;
	struct mlink *ml;
	int ret, ent, r = -ENOMEM;

	ml = realloc(f->ml, (f->nml + 2) * sizeof(*ml));
	if (ml)
		f->ml = ml;
	if (!off || !ml)
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		off[i] = v[i]->off;
		cookie[i] = sym_cookie(v[i]->sym);
	}
	ret = r =
	    multi_link(p->skel->progs.gw_return, path, off, cookie, n, true);
	if (r < 0)
		goto out;
	ent = r =
	    multi_link(p->skel->progs.gw_entry, path, off, cookie, n, false);
	if (r < 0) {
		close(ret);
		goto out;
	}
	f->ml[f->nml++] = (struct mlink){ret, n, high};
	f->ml[f->nml++] = (struct mlink){ent, n, high};
	r = 0;
out:
	free(off);
	return r;
}

/*
 * Attaches every symbol of f not attached yet that is high-rate (high) or
 * not; a symbol that fails is skipped from then on.  Returns how many were
 * attached, or the last error when none could be.
 */
static int attach_syms(struct gw_probes *p, struct file *f, bool high)
{
	struct fsym **v = calloc(f->nsyms ? f->nsyms : 1, sizeof(*v));
	unsigned int n = 0, done = 0;
	char path[32];
	int r = 0;

	if (!v)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	for (unsigned int i = 0; i < f->nsyms; i++)
		if (!f->syms[i].on && !f->syms[i].failed &&
		    sym_high_rate(&f->syms[i]) == high)
			v[n++] = &f->syms[i];
	/* All in one pair of links if possible, else one by one. */
	if (n && p->multi && !multi_attach(p, f, path, v, n, high)) {
		for (unsigned int i = 0; i < n; i++)
			v[i]->on = true;
		done = n;
		n = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		r = p->multi ? multi_attach(p, f, path, &v[i], 1, high)
			     : perf_attach(p, path, v[i]);
		if (r) {
			v[i]->failed = true;
			p->attach_failures++;
			seterr(p, "attaching %s at offset 0x%" PRIx64 ": %s",
			       apis[v[i]->sym / NVARIANTS].name, v[i]->off,
			       strerror(-r));
			continue;
		}
		v[i]->on = true;
		done++;
	}
	free(v);
	p->nprobes += 2 * (uint64_t)done;
	return done || !r ? (int)done : r;
}

/* Detaches the high-rate symbols of f (high), or the others; entries first. */
static void detach_syms(struct gw_probes *p, struct file *f, bool high)
{
	unsigned int j = 0;

	for (unsigned int i = f->nml; i-- > 0;) {
		if (f->ml[i].high != high)
			continue;
		close(f->ml[i].fd);
		f->ml[i].fd = -1;
		p->nprobes -= f->ml[i].n;
	}
	for (unsigned int i = 0; i < f->nml; i++)
		if (f->ml[i].fd >= 0)
			f->ml[j++] = f->ml[i];
	f->nml = j;
	for (unsigned int i = 0; i < f->nsyms; i++) {
		struct fsym *s = &f->syms[i];

		if (sym_high_rate(s) != high || !s->on)
			continue;
		if (s->entry || s->ret) {
			bpf_link__destroy(s->entry);
			bpf_link__destroy(s->ret);
			s->entry = s->ret = NULL;
			p->nprobes -= 2;
		}
		s->on = false;
	}
}

static bool neg_known(const struct gw_probes *p, dev_t dev, ino_t ino,
		      unsigned int libs)
{
	for (unsigned int i = 0; i < p->nneg; i++)
		if (p->neg[i].dev == dev && p->neg[i].ino == ino &&
		    !(libs & ~p->neg[i].libs))
			return true;
	return false;
}

static void neg_add(struct gw_probes *p, dev_t dev, ino_t ino,
		    unsigned int libs)
{
	for (unsigned int i = 0; i < p->nneg; i++)
		if (p->neg[i].dev == dev && p->neg[i].ino == ino) {
			p->neg[i].libs |= libs;
			return;
		}
	p->neg[p->neg_next] = (struct neg){dev, ino, libs};
	p->neg_next = (p->neg_next + 1) % NEG_MAX;
	if (p->nneg < NEG_MAX)
		p->nneg++;
}

int gw_probes_attach_file(struct gw_probes *p, const char *path,
			  unsigned int libs, unsigned int *n)
{
	struct found *found = NULL;
	struct file *f = NULL;
	unsigned int want, nfound = 0, ndeferred = 0;
	struct fsym *syms;
	struct stat st;
	int fd, r, r2 = 0;

	if (n)
		*n = 0;
	if (!p || !path || !n)
		return -EINVAL;
	libs &= GW_LIB_RUNTIME | GW_LIB_DRIVER;
	if (!libs)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		seterr(p, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st)) {
		r = -errno;
		seterr(p, "%s: %s", path, strerror(-r));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(p, "%s: not a regular file", path);
		r = -ENOEXEC;
		goto out_close;
	}
	for (unsigned int i = 0; i < p->nfiles; i++)
		if (p->files[i].dev == st.st_dev &&
		    p->files[i].ino == st.st_ino) {
			f = &p->files[i];
			break;
		}
	want = f ? libs & ~f->libs : libs;
	if (!want || neg_known(p, st.st_dev, st.st_ino, want)) {
		r = 0;
		goto out_close;
	}

	found = calloc(NSYMS, sizeof(*found));
	if (!found) {
		r = -ENOMEM;
		goto out_close;
	}
	r = resolve(p, fd, want, found);
	if (r) {
		if (r == -ENOEXEC)
			neg_add(p, st.st_dev, st.st_ino, want);
		goto out_free;
	}
	for (unsigned int i = 0; i < NSYMS; i++)
		nfound += found[i].rank > 0;
	if (!nfound) {
		neg_add(p, st.st_dev, st.st_ino, want);
		if (f)
			f->libs |= want;
		goto out_free;
	}
	if (!f) {
		if (p->nfiles == p->max_files) {
			p->dropped_files++;
			seterr(p, "%s: more than %u files with probes", path,
			       p->max_files);
			r = -ENOSPC;
			goto out_free;
		}
		f = &p->files[p->nfiles++];
		memset(f, 0, sizeof(*f));
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->fd = -1;
	}
	if (f->fd < 0) {
		f->fd = fd;
		fd = -1;
	}
	f->libs |= want;
	syms = realloc(f->syms, (f->nsyms + nfound) * sizeof(*syms));
	if (!syms) {
		r = -ENOMEM;
		goto out_free;
	}
	f->syms = syms;
	for (unsigned int i = 0; i < NSYMS; i++) {
		if (!found[i].rank)
			continue;
		memset(&f->syms[f->nsyms], 0, sizeof(*syms));
		f->syms[f->nsyms].sym = i;
		f->syms[f->nsyms++].off = found[i].off;
		if (!p->high_on && family_high_rate(apis[i / NVARIANTS].family))
			ndeferred++;
	}
	r = attach_syms(p, f, false);
	if (r >= 0 && p->high_on)
		r2 = attach_syms(p, f, true);
	if (r >= 0 && r2 >= 0)
		*n = (unsigned int)(r + r2) + ndeferred;
	else if (r >= 0)
		*n = (unsigned int)r;
	if (!*n) {
		r = r < 0 ? r : r2;
		goto out_free;
	}
	r = 0;
out_free:
	free(found);
	if (f && f->fd >= 0) {
		bool any = false;

		for (unsigned int i = 0; i < f->nsyms; i++)
			any |= !f->syms[i].failed;
		if (!any) {
			/* Kept, so it is not tried again, without its fd. */
			close(f->fd);
			f->fd = -1;
		}
	}
out_close:
	if (fd >= 0)
		close(fd);
	return r;
}

int gw_probes_set_high_rate(struct gw_probes *p, int on)
{
	int r = 0;

	if (!p)
		return -EINVAL;
	on = !!on;
	if (on == p->high_on)
		return 0;
	if (on) /* returns of calls that started while off are stale */
		__atomic_add_fetch(&p->skel->bss->epoch, 1, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < p->nfiles; i++) {
		struct file *f = &p->files[i];
		int e;

		if (f->fd < 0)
			continue;
		if (!on) {
			detach_syms(p, f, true);
			continue;
		}
		e = attach_syms(p, f, true);
		if (e < 0 && !r)
			r = e;
	}
	p->high_on = on;
	return r;
}

/* ---- reading the maps ---- */

typedef int (*walk_fn)(void *ctx, const void *key, const void *val);

#define WALK_CHUNK 1024

/*
 * fn(ctx, key, value) for every entry of a hash map; stops at fn's < 0.
 * Batches (kernel 5.6, older than attach cookies) go bucket by bucket, so
 * fn may delete the entry it is given.
 */
static int walk(int fd, size_t ksz, size_t vsz, walk_fn fn, void *ctx)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	char *keys = malloc(WALK_CHUNK * ksz), *vals = malloc(WALK_CHUNK * vsz);
	uint64_t in = 0, out = 0;
	bool first = true;
	int r = -ENOMEM, e;

	if (!keys || !vals)
		goto out;
	do {
		__u32 count = WALK_CHUNK;

		e = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys,
					 vals, &count, &o);
		if (e < 0 && e != -ENOENT) {
			r = e;
			goto out;
		}
		first = false;
		for (__u32 i = 0; i < count; i++) {
			r = fn(ctx, keys + i * ksz, vals + i * vsz);
			if (r < 0)
				goto out;
		}
		in = out;
	} while (e != -ENOENT);
	r = 0;
out:
	free(keys);
	free(vals);
	return r;
}

#define WALK(p, map, ktype, vtype, fn, ctx)                                    \
	walk(bpf_map__fd((p)->skel->maps.map), sizeof(ktype), sizeof(vtype),   \
	     fn, ctx)

struct api_walk {
	int (*cb)(void *ctx, const struct gw_api_stats *s);
	void *ctx;
};

static int api_entry(void *ctx, const void *key, const void *val)
{
	const struct gw_bpf_stat_key *k = key;
	const struct gw_bpf_stat *v = val;
	struct api_walk *w = ctx;
	struct gw_api_stats s;

	if (k->api >= NAPIS || !v->calls)
		return 0;
	memset(&s, 0, sizeof(s));
	s.pid = k->tgid;
	s.api = k->api;
	s.calls = v->calls;
	s.errors = v->errors;
	s.bytes = v->bytes;
	s.ns_total = v->ns_total;
	s.sync_ns = v->sync_ns;
	_Static_assert(sizeof(s.hist) == sizeof(v->hist), "histogram");
	_Static_assert(sizeof(s.copy_bytes) == sizeof(v->copy_bytes), "kinds");
	memcpy(s.hist, v->hist, sizeof(s.hist));
	memcpy(s.copy_bytes, v->copy_bytes, sizeof(s.copy_bytes));
	return w->cb(w->ctx, &s);
}

int gw_probes_read_api(struct gw_probes *p,
		       int (*cb)(void *ctx, const struct gw_api_stats *s),
		       void *ctx)
{
	struct api_walk w = {cb, ctx};

	if (!p || !cb)
		return -EINVAL;
	return WALK(p, stats, struct gw_bpf_stat_key, struct gw_bpf_stat,
		    api_entry, &w);
}

struct err_walk {
	int (*cb)(void *ctx, const struct gw_err_stats *s);
	void *ctx;
};

static int err_entry(void *ctx, const void *key, const void *val)
{
	const struct gw_bpf_err_key *k = key;
	struct err_walk *w = ctx;
	struct gw_err_stats s;

	if (k->api >= NAPIS)
		return 0;
	memset(&s, 0, sizeof(s));
	s.pid = k->tgid;
	s.api = k->api;
	s.code = k->code;
	memcpy(&s.count, val, sizeof(s.count));
	return w->cb(w->ctx, &s);
}

int gw_probes_read_errors(struct gw_probes *p,
			  int (*cb)(void *ctx, const struct gw_err_stats *s),
			  void *ctx)
{
	struct err_walk w = {cb, ctx};

	if (!p || !cb)
		return -EINVAL;
	return WALK(p, errors, struct gw_bpf_err_key, __u64, err_entry, &w);
}

/* The procs map at one moment, sorted by pid. */
struct snap_ent {
	struct gw_mem_stats m;
	uint64_t gen;
};

struct proc_snap {
	struct snap_ent *e;
	unsigned int n, cap;
};

static int snap_entry(void *ctx, const void *key, const void *val)
{
	const struct gw_bpf_proc *v = val;
	struct proc_snap *ps = ctx;
	struct snap_ent *e;

	if (ps->n == ps->cap)
		return 0; /* the map holds at most cap */
	e = &ps->e[ps->n++];
	memset(e, 0, sizeof(*e));
	memcpy(&e->m.pid, key, sizeof(e->m.pid));
	e->m.live_bytes = v->live_bytes;
	e->m.live_allocs = v->live_allocs;
	e->m.host_bytes = v->host_bytes;
	e->m.host_allocs = v->host_allocs;
	e->gen = v->gen;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The entry of pid, NULL if none (m.pid is the first member). */
static struct snap_ent *snap_find(const struct proc_snap *ps, uint32_t pid)
{
	return ps->n ? bsearch(&pid, ps->e, ps->n, sizeof(*ps->e), cmp_u32)
		     : NULL;
}

static void snap_release(struct proc_snap *ps)
{
	free(ps->e);
	ps->e = NULL;
}

static int snap_procs(struct gw_probes *p, struct proc_snap *ps)
{
	int r;

	memset(ps, 0, sizeof(*ps));
	ps->cap = bpf_map__max_entries(p->skel->maps.procs);
	ps->e = calloc(ps->cap, sizeof(*ps->e));
	if (!ps->e)
		return -ENOMEM;
	r = WALK(p, procs, __u32, struct gw_bpf_proc, snap_entry, ps);
	if (r) {
		snap_release(ps);
		return r;
	}
	qsort(ps->e, ps->n, sizeof(*ps->e), cmp_u32);
	return 0;
}

struct mem_walk {
	struct proc_snap *ps;
	uint64_t now, age;
	int fd;
};

static int mem_entry(void *ctx, const void *key, const void *val)
{
	const struct gw_bpf_alloc_key *k = key;
	const struct gw_bpf_alloc *a = val;
	struct mem_walk *w = ctx;
	struct snap_ent *e = snap_find(w->ps, k->tgid);

	if (!e)
		return 0; /* exited: gw_probes_forget() */
	if (a->gen != e->gen) {
		/* From before an exec: gone with the old image. */
		bpf_map_delete_elem(w->fd, key);
		return 0;
	}
	if (!(a->flags & GW_BPF_F_HOST) && w->now >= a->ts_ns &&
	    w->now - a->ts_ns >= w->age) {
		e->m.leak_bytes += a->size;
		e->m.leak_allocs++;
	}
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int gw_probes_read_mem(struct gw_probes *p, uint64_t leak_age_ns,
		       int (*cb)(void *ctx, const struct gw_mem_stats *s),
		       void *ctx)
{
	struct proc_snap ps;
	struct mem_walk w;
	int r;

	if (!p || !cb)
		return -EINVAL;
	r = snap_procs(p, &ps);
	if (r)
		return r;
	w.ps = &ps;
	w.age = leak_age_ns;
	w.now = mono_ns();
	w.fd = bpf_map__fd(p->skel->maps.allocs);
	/*
	 * The walk visits every bucket of a large map (about a millisecond):
	 * with no process tracked there is nothing to find in it.
	 */
	r = ps.n ? WALK(p, allocs, struct gw_bpf_alloc_key, struct gw_bpf_alloc,
			mem_entry, &w) :
		   0;
	for (unsigned int i = 0; !r && i < ps.n; i++) {
		int c = cb(ctx, &ps.e[i].m);

		r = c < 0 ? c : 0;
	}
	snap_release(&ps);
	return r;
}

/* ---- forgetting ---- */

/* A sorted set of pids. */
struct pidset {
	uint32_t *pid;
	unsigned int n, cap;
};

/* Every key of the maps below starts with the tgid. */
static uint32_t key_pid(const void *key)
{
	uint32_t pid;

	memcpy(&pid, key, sizeof(pid));
	return pid;
}

struct forget_walk {
	const struct pidset *pids;
	int fd;
};

static int forget_entry(void *ctx, const void *key, const void *val)
{
	struct forget_walk *w = ctx;
	uint32_t pid = key_pid(key);

	(void)val;
	if (bsearch(&pid, w->pids->pid, w->pids->n, sizeof(pid), cmp_u32))
		bpf_map_delete_elem(w->fd, key);
	return 0;
}

static int forget_map(struct bpf_map *m, const struct pidset *pids)
{
	struct forget_walk w = {pids, bpf_map__fd(m)};

	return walk(w.fd, bpf_map__key_size(m), bpf_map__value_size(m),
		    forget_entry, &w);
}

static int forget_set(struct gw_probes *p, const struct pidset *pids)
{
	int r = 0, e;

	if (!pids->n)
		return 0;
	if ((e = forget_map(p->skel->maps.stats, pids)))
		r = e;
	if ((e = forget_map(p->skel->maps.errors, pids)) && !r)
		r = e;
	if ((e = forget_map(p->skel->maps.allocs, pids)) && !r)
		r = e;
	for (unsigned int i = 0; i < pids->n; i++)
		bpf_map_delete_elem(bpf_map__fd(p->skel->maps.ratelimit),
				    &pids->pid[i]);
	return r;
}

void gw_probes_forget(struct gw_probes *p, uint32_t pid)
{
	struct pidset one = {&pid, 1, 1};

	if (!p)
		return;
	if (forget_set(p, &one))
		return;
	/* A pid still alive starts over; one that exited has no entry. */
	bpf_map_delete_elem(bpf_map__fd(p->skel->maps.procs), &pid);
}

static int pids_entry(void *ctx, const void *key, const void *val)
{
	struct pidset *ps = ctx;
	uint32_t pid = key_pid(key);

	(void)val;
	/* Keys of one pid tend to come together. */
	if (ps->n && ps->pid[ps->n - 1] == pid)
		return 0;
	if (ps->n == ps->cap) {
		/* Full of repeats: compact, then give up if still full. */
		unsigned int j = 0;

		qsort(ps->pid, ps->n, sizeof(*ps->pid), cmp_u32);
		for (unsigned int i = 0; i < ps->n; i++)
			if (!j || ps->pid[j - 1] != ps->pid[i])
				ps->pid[j++] = ps->pid[i];
		ps->n = j;
		if (ps->n == ps->cap)
			return -ENOSPC;
	}
	ps->pid[ps->n++] = pid;
	return 0;
}

int gw_probes_sweep(struct gw_probes *p, unsigned int *n)
{
	struct pidset seen = {0}, dead = {0};
	struct proc_snap live;
	int r;

	if (n)
		*n = 0;
	if (!p)
		return -EINVAL;
	/*
	 * Pids with entries first, then the live ones: a pid's procs entry
	 * is made before its other entries, so one with entries that is not
	 * live afterwards has exited.
	 */
	seen.cap = p->max_pids * 4;
	seen.pid = calloc(seen.cap, sizeof(*seen.pid));
	if (!seen.pid)
		return -ENOMEM;
	r = WALK(p, stats, struct gw_bpf_stat_key, struct gw_bpf_stat,
		 pids_entry, &seen);
	if (!r)
		r = WALK(p, errors, struct gw_bpf_err_key, __u64, pids_entry,
			 &seen);
	if (!r)
		r = WALK(p, allocs, struct gw_bpf_alloc_key,
			 struct gw_bpf_alloc, pids_entry, &seen);
	if (r)
		goto out;
	r = snap_procs(p, &live);
	if (r)
		goto out;
	qsort(seen.pid, seen.n, sizeof(*seen.pid), cmp_u32);
	dead.pid = seen.pid; /* filtered in place */
	for (unsigned int i = 0; i < seen.n; i++) {
		uint32_t pid = seen.pid[i];

		if ((dead.n && dead.pid[dead.n - 1] == pid) ||
		    snap_find(&live, pid))
			continue;
		dead.pid[dead.n++] = pid;
	}
	dead.cap = dead.n;
	snap_release(&live);
	r = forget_set(p, &dead);
	if (!r && n)
		*n = dead.n;
out:
	free(seen.pid);
	return r;
}

/* ---- events ---- */

static int sample(void *ctx, void *data, size_t size)
{
	const struct gw_bpf_event *k = data;
	struct gw_probes *p = ctx;
	struct gw_probe_event e;
	int r;

	if (size < sizeof(*k) || !p->ev_cb)
		return 0;
	memset(&e, 0, sizeof(e));
	e.type = k->type;
	e.pid = k->pid;
	e.exit_code = k->exit_code;
	e.signal = k->signal;
	e.api = k->api;
	e.code = k->code;
	e.live_bytes = k->live_bytes;
	e.size = k->size;
	e.flags = k->flags;
	_Static_assert(sizeof(e.comm) == sizeof(k->comm), "comm");
	_Static_assert(sizeof(e.filename) == sizeof(k->filename), "filename");
	memcpy(e.comm, k->comm, sizeof(e.comm));
	e.comm[sizeof(e.comm) - 1] = '\0';
	memcpy(e.filename, k->filename, sizeof(e.filename));
	e.filename[sizeof(e.filename) - 1] = '\0';
	r = p->ev_cb(p->ev_ctx, &e);
	if (r < 0) {
		p->ev_ret = r;
		return r;
	}
	return 0;
}

int gw_probes_poll(struct gw_probes *p, int timeout_ms,
		   int (*cb)(void *ctx, const struct gw_probe_event *e),
		   void *ctx)
{
	int r;

	if (!p || !cb)
		return -EINVAL;
	p->ev_cb = cb;
	p->ev_ctx = ctx;
	p->ev_ret = 0;
	r = ring_buffer__poll(p->rb, timeout_ms);
	p->ev_cb = NULL;
	p->ev_ctx = NULL;
	if (p->ev_ret)
		return p->ev_ret;
	return r;
}

int gw_probes_fd(const struct gw_probes *p)
{
	return p ? ring_buffer__epoll_fd(p->rb) : -EINVAL;
}

/* ---- counters ---- */

static uint64_t counter(struct gw_probes *p, __u32 slot)
{
	uint64_t sum = 0, *v = calloc((size_t)p->ncpus, sizeof(*v));

	if (!v)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.counters), &slot, v))
		for (int i = 0; i < p->ncpus; i++)
			sum += v[i];
	free(v);
	return sum;
}

void gw_probes_counters(struct gw_probes *p, struct gw_probes_counters *c)
{
	uint64_t hits;
	unsigned int files = 0;

	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	if (!p)
		return;
	hits = counter(p, GW_BPF_CTR_HITS);
	c->hits = hits > p->calib_hits ? hits - p->calib_hits : 0;
	c->dropped_allocs = counter(p, GW_BPF_CTR_DROPPED_ALLOCS);
	c->dropped_events = counter(p, GW_BPF_CTR_DROPPED_EVENTS);
	c->dropped_execs = counter(p, GW_BPF_CTR_DROPPED_EXECS);
	c->ratelimited_events = counter(p, GW_BPF_CTR_RATELIMITED);
	c->dropped_pids = counter(p, GW_BPF_CTR_DROPPED_PIDS);
	c->dropped_stats = counter(p, GW_BPF_CTR_DROPPED_STATS);
	c->stale_returns = counter(p, GW_BPF_CTR_STALE);
	for (unsigned int i = 0; i < p->nfiles; i++)
		files += p->files[i].fd >= 0;
	c->attached_files = files;
	c->attached_probes = p->nprobes;
	c->attach_failures = p->attach_failures;
	c->dropped_files = p->dropped_files;
}

/* ---- calibration ---- */

/* The probed function: a call that does nothing and returns 0 (success). */
__attribute__((noinline, used)) static int calib_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return 0;
}

static int (*volatile calib_fn)(int) = calib_target;

/* ns per call of calib_fn over n calls, the best of three runs. */
static double time_calls(unsigned int n)
{
	double best = 0;

	for (int run = 0; run < 3; run++) {
		uint64_t t0 = mono_ns(), t1;
		int acc = 0;

		for (unsigned int i = 0; i < n; i++)
			acc += calib_fn((int)i);
		t1 = mono_ns();
		__asm__ volatile("" : : "r"(acc));
		if (!run || (double)(t1 - t0) / n < best)
			best = (double)(t1 - t0) / n;
	}
	return best;
}

/* The file and file offset that hold addr, from /proc/self/maps. */
static int self_offset(uintptr_t addr, char *path, size_t len, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;
		char perms[8];
		const char *name;
		size_t nl;

		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &pgoff) !=
			4 ||
		    addr < lo || addr >= hi)
			continue;
		name = strchr(line, '/');
		if (!name || perms[2] != 'x')
			break;
		nl = strcspn(name, "\n");
		if (nl >= len || strstr(name, " (deleted)"))
			break;
		memcpy(path, name, nl);
		path[nl] = '\0';
		*off = addr - lo + pgoff;
		r = 0;
		break;
	}
	fclose(f);
	return r;
}

int gw_probes_calibrate(struct gw_probes *p, double *ns_per_hit)
{
	const unsigned int nbase = 200000, nprobed = 5000;
	struct file f = {.fd = -1};
	struct fsym sym = {.sym = CALIB_SYM}, *v = &sym;
	struct gw_bpf_stat_key sk;
	struct gw_bpf_proc proc;
	uint64_t hits0, nprobes = p ? p->nprobes : 0;
	double base, probed;
	char path[1024];
	__u32 self = (__u32)getpid();
	bool had_proc;
	int r;

	if (!p || !ns_per_hit)
		return -EINVAL;
	*ns_per_hit = 0;
	r = self_offset((uintptr_t)calib_target, path, sizeof(path), &sym.off);
	if (r) {
		seterr(p, "calibration: cannot find this process's code: %s",
		       strerror(-r));
		return r;
	}
	had_proc = !bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.procs), &self,
					&proc);
	base = time_calls(nbase);

	hits0 = counter(p, GW_BPF_CTR_HITS);
	r = p->multi ? multi_attach(p, &f, path, &v, 1, false)
		     : perf_attach(p, path, &sym);
	if (r) {
		seterr(p, "calibration: attaching to %s: %s", path,
		       strerror(-r));
		free(f.ml);
		return r;
	}
	sym.on = true;
	f.syms = &sym;
	f.nsyms = 1;
	p->nprobes += 2;
	probed = time_calls(nprobed);
	detach_syms(p, &f, false);
	free(f.ml);
	p->nprobes = nprobes;
	p->calib_hits += counter(p, GW_BPF_CTR_HITS) - hits0;

	/* Leave no trace of this process in the maps. */
	sk.tgid = self;
	sk.api = GW_BPF_API_CALIB;
	bpf_map_delete_elem(bpf_map__fd(p->skel->maps.stats), &sk);
	if (!had_proc)
		bpf_map_delete_elem(bpf_map__fd(p->skel->maps.procs), &self);

	if (probed <= base) {
		seterr(p,
		       "calibration: probed calls were not slower (%.1f "
		       "vs %.1f ns)",
		       probed, base);
		return -EAGAIN;
	}
	*ns_per_hit = probed - base;
	return 0;
}
