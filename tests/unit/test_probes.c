// SPDX-License-Identifier: MIT
/*
 * test_probes.c - the eBPF probes, for real: loaded into this kernel and
 * attached to real files.  Needs root (or CAP_BPF + CAP_PERFMON) and
 * kernel BTF; exits 77 (skipped) where the programs cannot load.
 *
 * Two kinds of targets:
 *   - this very executable, which defines stand-ins for a few CUDA
 *     functions below (found in its .symtab, as cudart linked statically
 *     would be): exact checks of argument decoding, byte counts, live
 *     memory with frees out of order, leaks, OOM, exits by signal;
 *   - NVIDIA's libcudart.so.13 from the CUDA toolkit (GW_TEST_CUDART, or
 *     the default path), whose cudaMalloc returns 35 on a machine without
 *     a driver: a child calling it N times shows exactly N calls and N
 *     errors with code 35.
 *
 * Forked children run the stand-ins and report over pipes, so that every
 * probe hit is complete before the parent reads the maps.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/bpf/probes.h"

#define DEFAULT_CUDART "/usr/local/cuda/lib64/libcudart.so.13"
#define CUDART_CALLS   7
#define BIG	       (1ull << 40)

/* ---- stand-ins for CUDA functions, probed in this executable ---- */

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int cudaMallocHost(void **p, size_t n);
int cudaFreeHost(void *p);
int cudaMallocManaged(void **p, size_t n, unsigned int flags);
int cuMemAllocManaged(unsigned long long *p, size_t n, unsigned int flags);
int cuMemAlloc_v2(unsigned long long *p, size_t n);
int cuMemFree_v2(unsigned long long p);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
int cudaMemcpy_ptds(void *dst, const void *src, size_t n, int kind);
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n);
int cuMemsetD32_v2(unsigned long long dst, unsigned int v, size_t n);
int cudaLaunchKernel(const void *f);
int cudaDeviceSynchronize(void);
int cudaGetDevice(int *d);

#define NSTUBS 15 /* the functions above */

static unsigned long long next_ptr = 0x7f0000000000ull;

/*
 * Each stand-in keeps its own body at every optimisation level: identical
 * code folding would let a probe on one be hit through another.
 */
#if defined(__clang__)
#define STUB __attribute__((noinline, used))
#else
#define STUB __attribute__((noipa, used))
#endif

STUB int cudaMalloc(void **p, size_t n)
{
	if (n >= BIG)
		return 2; /* cudaErrorMemoryAllocation */
	*p = (void *)(uintptr_t)(next_ptr += 0x100000);
	return 0;
}

STUB int cudaFree(void *p)
{
	__asm__ volatile("" : : "r"(p));
	return 0;
}

STUB int cudaMallocHost(void **p, size_t n)
{
	*p = (void *)(uintptr_t)(0x500000000000ull + n);
	return 0;
}

STUB int cudaFreeHost(void *p)
{
	__asm__ volatile("" : : "r"(p));
	return 0;
}

/* The runtime's call goes through the driver's, as in the real libraries. */
static int (*volatile cu_managed)(unsigned long long *, size_t,
				  unsigned int) = cuMemAllocManaged;

STUB int cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
	unsigned long long d = 0;
	int r = cu_managed(&d, n, flags);

	*p = (void *)(uintptr_t)d;
	return r;
}

STUB int cuMemAllocManaged(unsigned long long *p, size_t n, unsigned int flags)
{
	(void)flags;
	(void)n;
	*p = (next_ptr += 0x100000);
	return 0;
}

STUB int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
	(void)n;
	*p = (next_ptr += 0x100000);
	return 0;
}

STUB int cuMemFree_v2(unsigned long long p)
{
	__asm__ volatile("" : : "r"(p));
	return 0;
}

STUB int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	__asm__ volatile("" : : "r"(dst), "r"(src), "r"(n), "r"(kind));
	return 0;
}

STUB int cudaMemcpy_ptds(void *dst, const void *src, size_t n, int kind)
{
	__asm__ volatile("" : : "r"(dst), "r"(src), "r"(n), "r"(kind));
	return 0;
}

STUB int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
	__asm__ volatile("" : : "r"(dst), "r"(src), "r"(n));
	return 0;
}

STUB int cuMemsetD32_v2(unsigned long long dst, unsigned int v, size_t n)
{
	__asm__ volatile("" : : "r"(dst), "r"(v), "r"(n));
	return 0;
}

STUB int cudaLaunchKernel(const void *f)
{
	__asm__ volatile("" : : "r"(f));
	return 0;
}

STUB int cudaDeviceSynchronize(void)
{
	struct timespec ts = { 0, 3000000 };

	nanosleep(&ts, NULL);
	return 0;
}

STUB int cudaGetDevice(int *d)
{
	*d = 0;
	return 35;
}

/* Called through pointers, so that no call is inlined or folded away. */
static struct {
	int (*malloc)(void **, size_t);
	int (*free)(void *);
	int (*malloc_host)(void **, size_t);
	int (*free_host)(void *);
	int (*managed)(void **, size_t, unsigned int);
	int (*cu_alloc)(unsigned long long *, size_t);
	int (*cu_free)(unsigned long long);
	int (*memcpy)(void *, const void *, size_t, int);
	int (*memcpy_ptds)(void *, const void *, size_t, int);
	int (*cu_h2d)(unsigned long long, const void *, size_t);
	int (*cu_memset32)(unsigned long long, unsigned int, size_t);
	int (*launch)(const void *);
	int (*sync)(void);
	int (*get_device)(int *);
} const volatile cuda = {
	.malloc = cudaMalloc,
	.free = cudaFree,
	.malloc_host = cudaMallocHost,
	.free_host = cudaFreeHost,
	.managed = cudaMallocManaged,
	.cu_alloc = cuMemAlloc_v2,
	.cu_free = cuMemFree_v2,
	.memcpy = cudaMemcpy,
	.memcpy_ptds = cudaMemcpy_ptds,
	.cu_h2d = cuMemcpyHtoD_v2,
	.cu_memset32 = cuMemsetD32_v2,
	.launch = cudaLaunchKernel,
	.sync = cudaDeviceSynchronize,
	.get_device = cudaGetDevice,
};

/* ---- children ---- */

struct child {
	pid_t pid;
	int cmd;  /* parent writes commands */
	int done; /* child answers one byte per command */
};

typedef int (*child_fn)(char cmd);

/* Forks a child that runs fn(cmd) for each command byte and answers. */
static void child_start(struct child *c, child_fn fn)
{
	int to[2], from[2];

	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		char cmd;

		/*
		 * Drop the inherited probe descriptors: a perf event that a
		 * child still holds stays attached after the parent's detach.
		 */
		if (dup2(to[0], 3) != 3 || dup2(from[1], 4) != 4 ||
		    close_range(5, ~0u, 0))
			_exit(3);
		while (read(3, &cmd, 1) == 1) {
			char ok = (char)(fn(cmd) ? 'f' : 'k');

			if (write(4, &ok, 1) != 1)
				_exit(3);
		}
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	c->cmd = to[1];
	c->done = from[0];
}

static void child_do(struct child *c, char cmd)
{
	char ok = 0;

	assert_int_equal(write(c->cmd, &cmd, 1), 1);
	assert_int_equal(read(c->done, &ok, 1), 1);
	assert_int_equal(ok, 'k');
}

/* Ends the child with sig (0: let it exit 0); returns its wait status. */
static int child_end(struct child *c, int sig)
{
	int status = 0;

	if (sig)
		kill(c->pid, sig);
	close(c->cmd);
	close(c->done);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	return status;
}

/*
 * 'a': the allocation scenario; 'L': five launches; 'x': exec this program
 * again.  After 'a', live:
 * cudaMalloc 1000 and 3000 (2000 freed out of order), cuMemAlloc_v2 4096,
 * cudaMallocManaged 500 (allocated through cuMemAllocManaged: one
 * allocation, not two); pinned: 512.  Device: 8596 in 4 allocations.
 */
static int scenario(char cmd)
{
	void *a = NULL, *b = NULL, *c = NULL, *m = NULL, *h = NULL, *x;
	unsigned long long d = 0;
	char buf[64];
	int dev, bad = 0;

	switch (cmd) {
	case 'a':
		bad |= cuda.malloc(&a, 1000);
		bad |= cuda.malloc(&b, 2000);
		bad |= cuda.malloc(&c, 3000);
		bad |= cuda.free(b);
		bad |= cuda.free((void *)0x1234); /* never allocated */
		bad |= cuda.free(NULL);
		bad |= cuda.cu_alloc(&d, 4096);
		bad |= cuda.managed(&m, 500, 1);
		bad |= cuda.malloc_host(&h, 512);
		bad |= cuda.malloc(&x, BIG) != 2; /* OOM */
		bad |= cuda.memcpy(a, buf, 100, 1);
		bad |= cuda.memcpy(buf, a, 200, 2);
		bad |= cuda.memcpy_ptds(a, c, 50, 3);
		bad |= cuda.memcpy(a, c, 7, 4);
		bad |= cuda.cu_h2d(d, buf, 300);
		bad |= cuda.cu_memset32(d, 0, 10);
		bad |= cuda.sync();
		bad |= cuda.get_device(&dev) != 35;
		return bad;
	case 'L':
		for (int i = 0; i < 5; i++)
			bad |= cuda.launch(buf);
		return bad;
	case 'x': /* a new image; it answers for this command (wait_child) */
		execl("/proc/self/exe", "test_probes", "--child-wait",
		      (char *)NULL);
		return 1;
	default:
		return 1;
	}
}

/* ---- reading helpers ---- */

struct api_find {
	uint32_t pid;
	int api;
	struct gw_api_stats s;
	int found;
};

static int api_find_cb(void *ctx, const struct gw_api_stats *s)
{
	struct api_find *f = ctx;

	if (s->pid == f->pid && (int)s->api == f->api) {
		f->s = *s;
		f->found++;
	}
	return 0;
}

/* The stats of (pid, name); all zero when there are none. */
static struct gw_api_stats api_of(struct gw_probes *p, pid_t pid,
				  const char *name)
{
	struct api_find f;

	memset(&f, 0, sizeof(f));
	f.pid = (uint32_t)pid;
	f.api = gw_cuda_api_find(name);
	assert_true(f.api >= 0);
	assert_int_equal(gw_probes_read_api(p, api_find_cb, &f), 0);
	assert_true(f.found <= 1);
	return f.s;
}

struct pid_count {
	uint32_t pid;
	unsigned int n;
};

static int api_count_cb(void *ctx, const struct gw_api_stats *s)
{
	struct pid_count *c = ctx;

	c->n += s->pid == c->pid;
	return 0;
}

static unsigned int api_entries(struct gw_probes *p, pid_t pid)
{
	struct pid_count c = { (uint32_t)pid, 0 };

	assert_int_equal(gw_probes_read_api(p, api_count_cb, &c), 0);
	return c.n;
}

struct err_find {
	uint32_t pid;
	int api;
	int32_t code;
	uint64_t count;
	unsigned int entries;
};

static int err_find_cb(void *ctx, const struct gw_err_stats *s)
{
	struct err_find *f = ctx;

	if (s->pid != f->pid)
		return 0;
	f->entries++;
	if ((int)s->api == f->api && s->code == f->code)
		f->count = s->count;
	return 0;
}

static uint64_t errors_of(struct gw_probes *p, pid_t pid, const char *name,
			  int32_t code, unsigned int *entries)
{
	struct err_find f = { (uint32_t)pid, gw_cuda_api_find(name), code, 0,
			      0 };

	assert_int_equal(gw_probes_read_errors(p, err_find_cb, &f), 0);
	if (entries)
		*entries = f.entries;
	return f.count;
}

struct mem_find {
	uint32_t pid;
	struct gw_mem_stats m;
	int found;
};

static int mem_find_cb(void *ctx, const struct gw_mem_stats *m)
{
	struct mem_find *f = ctx;

	if (m->pid == f->pid) {
		f->m = *m;
		f->found = 1;
	}
	return 0;
}

static int mem_of(struct gw_probes *p, pid_t pid, uint64_t age,
		  struct gw_mem_stats *m)
{
	struct mem_find f;

	memset(&f, 0, sizeof(f));
	f.pid = (uint32_t)pid;
	assert_int_equal(gw_probes_read_mem(p, age, mem_find_cb, &f), 0);
	*m = f.m;
	return f.found;
}

/*
 * Events seen so far, over all tests.  EXEC events come from every process
 * on the machine: only those of watched pids are kept.
 */
#define MAX_EVENTS 4096
static struct gw_probe_event events[MAX_EVENTS];
static unsigned int nevents;
static pid_t watched;

static int event_cb(void *ctx, const struct gw_probe_event *e)
{
	(void)ctx;
	if (e->type == GW_EV_EXEC && e->pid != (uint32_t)watched)
		return 0;
	if (nevents < MAX_EVENTS)
		events[nevents++] = *e;
	return 0;
}

static const struct gw_probe_event *event_find(uint32_t type, pid_t pid,
					       unsigned int nth)
{
	for (unsigned int i = 0; i < nevents; i++)
		if (events[i].type == type && events[i].pid == (uint32_t)pid &&
		    !nth--)
			return &events[i];
	return NULL;
}

/* Polls until the nth event of (type, pid) arrives, for at most 5 s. */
static const struct gw_probe_event *
event_wait(struct gw_probes *p, uint32_t type, pid_t pid, unsigned int nth)
{
	const struct gw_probe_event *e;

	for (int i = 0; i < 50; i++) {
		e = event_find(type, pid, nth);
		if (e)
			return e;
		assert_true(gw_probes_poll(p, 100, event_cb, NULL) >= 0);
	}
	return event_find(type, pid, nth);
}

static unsigned int event_count(uint32_t type, pid_t pid)
{
	unsigned int n = 0;

	while (event_find(type, pid, n))
		n++;
	return n;
}

/* ---- tests ---- */

static void api_table(void **state)
{
	static const char *const need[] = {
		"cudaMalloc",
		"cudaMallocManaged",
		"cudaMallocAsync",
		"cudaMallocHost",
		"cudaHostAlloc",
		"cudaFree",
		"cudaFreeAsync",
		"cudaFreeHost",
		"cudaMemcpy",
		"cudaMemcpyAsync",
		"cudaMemset",
		"cudaMemsetAsync",
		"cudaLaunchKernel",
		"cudaLaunchCooperativeKernel",
		"cudaGraphLaunch",
		"cudaDeviceSynchronize",
		"cudaStreamSynchronize",
		"cudaEventSynchronize",
		"cudaSetDevice",
		"cudaGetDevice",
		"cudaStreamCreate",
		"cudaStreamCreateWithFlags",
		"cudaStreamDestroy",
		"cudaEventRecord",
		"cudaGetDeviceCount",
		"cuInit",
		"cuLaunchKernel",
		"cuLaunchKernelEx",
		"cuMemAlloc_v2",
		"cuMemAllocManaged",
		"cuMemAllocAsync",
		"cuMemFree_v2",
		"cuMemFreeAsync",
		"cuMemcpy",
		"cuMemcpyHtoD_v2",
		"cuMemcpyDtoH_v2",
		"cuMemcpyDtoD_v2",
		"cuMemcpyAsync",
		"cuMemcpyHtoDAsync_v2",
		"cuMemcpyDtoHAsync_v2",
		"cuCtxCreate_v2",
		"cuCtxDestroy_v2",
		"cuCtxSynchronize",
		"cuStreamSynchronize",
		"cuEventSynchronize",
	};
	unsigned int n = gw_cuda_api_count();

	(void)state;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		int a = gw_cuda_api_find(need[i]);

		if (a < 0)
			fail_msg("%s is not in the table", need[i]);
		assert_string_equal(gw_cuda_api_name((unsigned int)a), need[i]);
		assert_int_equal(gw_cuda_api_lib((unsigned int)a),
				 strncmp(need[i], "cuda", 4) ? GW_LIB_DRIVER
							     : GW_LIB_RUNTIME);
	}
	for (unsigned int i = 0; i < n; i++) {
		const char *name = gw_cuda_api_name(i);
		int f = gw_cuda_api_family(i);

		assert_non_null(name);
		assert_int_equal(gw_cuda_api_find(name), (int)i);
		assert_non_null(gw_cuda_family_name(f));
		assert_int_equal(gw_cuda_api_is_high_rate(i),
				 f == GW_FAM_LAUNCH || f == GW_FAM_COPY ||
					 f == GW_FAM_MEMSET);
	}
	assert_null(gw_cuda_api_name(n));
	assert_int_equal(gw_cuda_api_find("cudaNoSuchThing"), -ENOENT);
	assert_int_equal(gw_cuda_api_family(gw_cuda_api_find("cudaFree")),
			 GW_FAM_FREE);
	assert_true(
		gw_cuda_api_is_high_rate(gw_cuda_api_find("cuLaunchKernel")));
	assert_false(gw_cuda_api_is_high_rate(gw_cuda_api_find("cudaMalloc")));
	assert_false(gw_cuda_api_is_high_rate(n));
}

static void open_rejects_bad_options(void **state)
{
	struct {
		struct gw_probes_opts o;
		unsigned int newer;
	} big;
	struct gw_probes_opts o;
	struct gw_probes *p = (void *)1;
	char err[128];

	(void)state;
	memset(&o, 0, sizeof(o));
	o.sz = 1;
	assert_int_equal(gw_probes_open(&o, &p, err, sizeof(err)), -EINVAL);
	assert_null(p);
	assert_true(err[0] != '\0');
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.newer = 1;
	assert_int_equal(gw_probes_open(&big.o, &p, err, sizeof(err)), -EINVAL);
	gw_probes_close(NULL);
}

static void attach_rejects_non_elf(void **state)
{
	struct gw_probes *p = *state;
	unsigned int n = 99;

	assert_int_equal(gw_probes_attach_file(p, "/proc/self/status",
					       GW_LIB_RUNTIME, &n),
			 -ENOEXEC);
	assert_int_equal(n, 0);
	assert_int_equal(gw_probes_attach_file(p, "/nonexistent/libcuda.so",
					       GW_LIB_DRIVER, &n),
			 -ENOENT);
	assert_true(gw_probes_last_error(p)[0] != '\0');
	/* A file without any of the symbols: nothing attached, no error. */
	assert_int_equal(
		gw_probes_attach_file(p, "/bin/sh", GW_LIB_RUNTIME, &n), 0);
	assert_int_equal(n, 0);
}

static void attach_self_is_idempotent(void **state)
{
	struct gw_probes *p = *state;
	struct gw_probes_counters c0, c1;
	unsigned int n = 0;

	gw_probes_counters(p, &c0);
	assert_int_equal(gw_probes_attach_file(p, "/proc/self/exe",
					       GW_LIB_RUNTIME | GW_LIB_DRIVER,
					       &n),
			 0);
	assert_int_equal(n, NSTUBS);
	gw_probes_counters(p, &c1);
	assert_int_equal(c1.attached_files, c0.attached_files + 1);
	assert_int_equal(c1.attached_probes, c0.attached_probes + 2 * NSTUBS);
	assert_int_equal(c1.attach_failures, 0);
	/* The same inode again, by another name: nothing new. */
	assert_int_equal(
		gw_probes_attach_file(p, "/proc/self/exe", GW_LIB_RUNTIME, &n),
		0);
	assert_int_equal(n, 0);
	gw_probes_counters(p, &c1);
	assert_int_equal(c1.attached_probes, c0.attached_probes + 2 * NSTUBS);
}

static void allocations_copies_and_exit_by_signal(void **state)
{
	struct gw_probes *p = *state;
	const struct gw_probe_event *e;
	struct gw_api_stats s;
	struct gw_mem_stats m;
	struct child c;
	unsigned int nerr;
	int status;

	child_start(&c, scenario);
	child_do(&c, 'a');

	s = api_of(p, c.pid, "cudaMalloc");
	assert_int_equal(s.calls, 4);
	assert_int_equal(s.errors, 1);
	assert_int_equal(s.bytes, 6000); /* the OOM asked, got nothing */
	s = api_of(p, c.pid, "cudaFree");
	assert_int_equal(s.calls, 3);
	assert_int_equal(s.errors, 0);
	s = api_of(p, c.pid, "cudaMallocManaged");
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.bytes, 500);
	s = api_of(p, c.pid, "cuMemAllocManaged");
	assert_int_equal(s.calls, 1);
	/* cudaMemcpy and cudaMemcpy_ptds are one API; kinds from argument 4. */
	s = api_of(p, c.pid, "cudaMemcpy");
	assert_int_equal(s.calls, 4);
	assert_int_equal(s.bytes, 357);
	assert_int_equal(s.copy_bytes[GW_COPY_H2D], 100);
	assert_int_equal(s.copy_bytes[GW_COPY_D2H], 200);
	assert_int_equal(s.copy_bytes[GW_COPY_D2D], 50);
	assert_int_equal(s.copy_bytes[GW_COPY_DEFAULT], 7);
	/* The driver's kind comes from the name. */
	s = api_of(p, c.pid, "cuMemcpyHtoD_v2");
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.copy_bytes[GW_COPY_H2D], 300);
	/* cuMemsetD32: N 32-bit words. */
	s = api_of(p, c.pid, "cuMemsetD32_v2");
	assert_int_equal(s.bytes, 40);
	/* 3 ms of synchronisation, in the [2^21, 2^22) ns bucket or above. */
	s = api_of(p, c.pid, "cudaDeviceSynchronize");
	assert_int_equal(s.calls, 1);
	assert_true(s.sync_ns >= 3000000 && s.sync_ns == s.ns_total);
	assert_int_equal(s.hist[0] + s.hist[21] + s.hist[22] + s.hist[23] +
				 s.hist[24] + s.hist[25],
			 1);
	assert_int_equal(s.hist[0], 0);
	s = api_of(p, c.pid, "cudaGetDevice");
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.errors, 1);
	assert_int_equal(s.sync_ns, 0);

	assert_int_equal(errors_of(p, c.pid, "cudaMalloc", 2, &nerr), 1);
	assert_int_equal(errors_of(p, c.pid, "cudaGetDevice", 35, NULL), 1);
	assert_int_equal(nerr, 2);

	assert_true(mem_of(p, c.pid, 3600ull * 1000000000, &m));
	assert_int_equal(m.live_bytes, 1000 + 3000 + 4096 + 500);
	assert_int_equal(m.live_allocs, 4);
	assert_int_equal(m.host_bytes, 512);
	assert_int_equal(m.host_allocs, 1);
	assert_int_equal(m.leak_bytes, 0);
	assert_int_equal(m.leak_allocs, 0);
	assert_true(mem_of(p, c.pid, 0, &m));
	assert_int_equal(m.leak_bytes, 1000 + 3000 + 4096 + 500);
	assert_int_equal(m.leak_allocs, 4);

	e = event_wait(p, GW_EV_API_ERROR, c.pid, 0);
	assert_non_null(e);
	assert_int_equal(e->api, gw_cuda_api_find("cudaMalloc"));
	assert_int_equal(e->code, 2);
	assert_true(e->flags & GW_EVF_OOM);
	assert_int_equal(e->size, BIG);
	e = event_wait(p, GW_EV_API_ERROR, c.pid, 1);
	assert_non_null(e);
	assert_int_equal(e->code, 35);
	assert_false(e->flags & GW_EVF_OOM);

	/* Killed while holding memory. */
	status = child_end(&c, SIGKILL);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	e = event_wait(p, GW_EV_EXIT, c.pid, 0);
	assert_non_null(e);
	assert_int_equal(e->signal, SIGKILL);
	assert_int_equal(e->exit_code, 0);
	assert_int_equal(e->live_bytes, 1000 + 3000 + 4096 + 500);
	assert_true(e->comm[0] != '\0');
	/* Gone from memory at once, its counts stay until forgotten. */
	assert_false(mem_of(p, c.pid, 0, &m));
	assert_int_equal(api_of(p, c.pid, "cudaMalloc").calls, 4);
	gw_probes_forget(p, (uint32_t)c.pid);
	assert_int_equal(api_entries(p, c.pid), 0);
	assert_int_equal(errors_of(p, c.pid, "cudaMalloc", 2, &nerr), 0);
	assert_int_equal(nerr, 0);
	/* Only one EXIT, however many threads. */
	assert_int_equal(event_count(GW_EV_EXIT, c.pid), 1);
}

static void high_rate_duty_cycle(void **state)
{
	struct gw_probes *p = *state;
	struct gw_probes_counters c0, c1;
	struct child c;
	unsigned int n;

	assert_int_equal(
		gw_probes_attach_file(p, "/proc/self/exe", GW_LIB_RUNTIME, &n),
		0);
	gw_probes_counters(p, &c0);
	child_start(&c, scenario);
	child_do(&c, 'L');
	assert_int_equal(api_of(p, c.pid, "cudaLaunchKernel").calls, 5);

	assert_int_equal(gw_probes_set_high_rate(p, 0), 0);
	gw_probes_counters(p, &c1);
	/* Off: launch, the two copies (3 symbols) and the memset. */
	assert_int_equal(c1.attached_probes, c0.attached_probes - 2 * 5);
	child_do(&c, 'L');
	assert_int_equal(api_of(p, c.pid, "cudaLaunchKernel").calls, 5);
	assert_int_equal(gw_probes_set_high_rate(p, 0), 0); /* no change */

	assert_int_equal(gw_probes_set_high_rate(p, 1), 0);
	gw_probes_counters(p, &c1);
	assert_int_equal(c1.attached_probes, c0.attached_probes);
	child_do(&c, 'L');
	assert_int_equal(api_of(p, c.pid, "cudaLaunchKernel").calls, 10);
	assert_int_equal(api_of(p, c.pid, "cudaLaunchKernel").errors, 0);

	assert_int_equal(child_end(&c, 0), 0);
	assert_non_null(event_wait(p, GW_EV_EXIT, c.pid, 0));
	gw_probes_forget(p, (uint32_t)c.pid);
}

/* After 'x': acknowledge, wait for the parent to close the pipe, exit 3. */
static int wait_child(void)
{
	char c = 'k';

	if (write(4, &c, 1) != 1)
		return 2;
	while (read(3, &c, 1) == 1)
		;
	return 3;
}

static void exec_starts_a_new_image(void **state)
{
	struct gw_probes *p = *state;
	const struct gw_probe_event *e;
	struct gw_mem_stats m;
	struct child c;
	unsigned int n;
	int status;

	assert_int_equal(
		gw_probes_attach_file(p, "/proc/self/exe", GW_LIB_RUNTIME, &n),
		0);
	child_start(&c, scenario);
	watched = c.pid;
	child_do(&c, 'a');
	assert_true(mem_of(p, c.pid, 0, &m));
	assert_int_equal(m.live_bytes, 8596);
	child_do(&c, 'x');
	e = event_wait(p, GW_EV_EXEC, c.pid, 0);
	assert_non_null(e);
	assert_true(e->flags & GW_EVF_HAD_GPU);
	assert_int_equal(e->live_bytes, 8596);
	/* The old image's allocations are gone with it. */
	assert_true(mem_of(p, c.pid, 0, &m));
	assert_int_equal(m.live_bytes, 0);
	assert_int_equal(m.live_allocs, 0);
	assert_int_equal(m.host_bytes, 0);
	assert_int_equal(m.leak_bytes, 0);
	assert_int_equal(m.leak_allocs, 0);
	/* Its calls stay counted: same process. */
	assert_int_equal(api_of(p, c.pid, "cudaMalloc").calls, 4);

	status = child_end(&c, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	e = event_wait(p, GW_EV_EXIT, c.pid, 0);
	assert_non_null(e);
	assert_int_equal(e->exit_code, 3);
	assert_int_equal(e->signal, 0);
	assert_int_equal(e->live_bytes, 0);
	gw_probes_forget(p, (uint32_t)c.pid);
	assert_int_equal(api_entries(p, c.pid), 0);
}

static const char *cudart_path(void)
{
	const char *env = getenv("GW_TEST_CUDART");

	return env && *env ? env : DEFAULT_CUDART;
}

/* The re-executed child: N calls of the real cudaMalloc, each must be 35. */
static int cudart_child(const char *lib, const char *count)
{
	int (*fn)(void **, size_t);
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	long n = strtol(count, NULL, 10);

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	*(void **)&fn = dlsym(h, "cudaMalloc");
	if (!fn)
		return 2;
	for (long i = 0; i < n; i++) {
		void *d = NULL;

		if (fn(&d, 1 << 20) != 35)
			return 3;
	}
	return 0;
}

static void real_cudart_counts_exactly(void **state)
{
	struct gw_probes *p = *state;
	const char *lib = cudart_path();
	const struct gw_probe_event *e;
	struct gw_api_stats s;
	char self[PATH_MAX], count[16], link[PATH_MAX], *dir;
	unsigned int n = 0, nerr, swept = 0;
	ssize_t len;
	pid_t pid;
	int status;

	if (access(lib, R_OK)) {
		print_message("no %s: set GW_TEST_CUDART\n", lib);
		skip();
	}
	assert_int_equal(gw_probes_attach_file(p, lib, GW_LIB_RUNTIME, &n), 0);
	assert_true(n >= 25);
	/* A symlink next to it (libcudart.so) names the same inode. */
	snprintf(link, sizeof(link), "%s", lib);
	dir = strrchr(link, '/');
	if (dir && !strncmp(dir, "/libcudart.so.", 14)) {
		dir[strlen("/libcudart.so")] = '\0';
		if (!access(link, R_OK)) {
			assert_int_equal(gw_probes_attach_file(
						 p, link, GW_LIB_RUNTIME, &n),
					 0);
			assert_int_equal(n, 0);
		}
	}

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(len > 0);
	self[len] = '\0';
	snprintf(count, sizeof(count), "%d", CUDART_CALLS);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(self, self, "--child-cudart", lib, count, (char *)NULL);
		_exit(127);
	}
	watched = pid;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	e = event_wait(p, GW_EV_EXEC, pid, 0);
	assert_non_null(e);
	assert_string_equal(e->filename, self);
	e = event_wait(p, GW_EV_EXIT, pid, 0);
	assert_non_null(e);
	assert_int_equal(e->exit_code, 0);
	assert_int_equal(e->signal, 0);
	assert_int_equal(e->live_bytes, 0);

	s = api_of(p, pid, "cudaMalloc");
	assert_int_equal(s.calls, CUDART_CALLS);
	assert_int_equal(s.errors, CUDART_CALLS);
	assert_int_equal(s.bytes, 0);
	assert_int_equal(errors_of(p, pid, "cudaMalloc", 35, &nerr),
			 CUDART_CALLS);
	assert_int_equal(event_count(GW_EV_API_ERROR, pid), CUDART_CALLS);
	/* One FIRST_CALL, at its first call, however many followed. */
	assert_int_equal(event_count(GW_EV_FIRST_CALL, pid), 1);

	/* Its EXIT came; without gw_probes_forget() a sweep finds it. */
	assert_int_equal(gw_probes_sweep(p, &swept), 0);
	assert_true(swept >= 1);
	assert_int_equal(api_entries(p, pid), 0);
}

static void calibrate(void **state)
{
	struct gw_probes *p = *state;
	struct gw_probes_counters c0, c1;
	double ns = 0;

	gw_probes_counters(p, &c0);
	assert_int_equal(gw_probes_calibrate(p, &ns), 0);
	gw_probes_counters(p, &c1);
	print_message("one uprobe + uretprobe hit: %.0f ns\n", ns);
	assert_true(ns > 0 && ns < 1e6);
	/* Its 60,000 hits are not counted (other processes' may be). */
	assert_true(c1.hits - c0.hits < 1000);
	assert_int_equal(api_entries(p, getpid()), 0);
}

static int open_probes(void **state, unsigned int force_perf)
{
	struct gw_probes_opts o = { .sz = sizeof(o) };
	struct gw_probes *p = NULL;
	char err[256];

	o.force_perf_attach = force_perf;
	if (gw_probes_open(&o, &p, err, sizeof(err))) {
		print_error("gw_probes_open: %s\n", err);
		return -1;
	}
	*state = p;
	return 0;
}

/* uprobe_multi links where the kernel has them (6.6 on). */
static int group_setup(void **state)
{
	return open_probes(state, 0);
}

/* One perf event per uprobe, as on older kernels. */
static int group_setup_perf(void **state)
{
	return open_probes(state, 1);
}

static int group_teardown(void **state)
{
	gw_probes_close(*state);
	return 0;
}

int main(int argc, char **argv)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(api_table),
		cmocka_unit_test(open_rejects_bad_options),
		cmocka_unit_test(attach_rejects_non_elf),
		cmocka_unit_test(attach_self_is_idempotent),
		cmocka_unit_test(allocations_copies_and_exit_by_signal),
		cmocka_unit_test(high_rate_duty_cycle),
		cmocka_unit_test(exec_starts_a_new_image),
		cmocka_unit_test(real_cudart_counts_exactly),
		cmocka_unit_test(calibrate),
	};
	/* The same through the older kernels' attach path (slower). */
	const struct CMUnitTest perf_tests[] = {
		cmocka_unit_test(attach_self_is_idempotent),
		cmocka_unit_test(allocations_copies_and_exit_by_signal),
		cmocka_unit_test(high_rate_duty_cycle),
		cmocka_unit_test(exec_starts_a_new_image),
		cmocka_unit_test(calibrate),
	};
	/* clang-format on */
	struct gw_probes_opts o = { .sz = sizeof(o) };
	struct gw_probes *p = NULL;
	char err[256];
	int r;

	if (argc == 4 && !strcmp(argv[1], "--child-cudart"))
		return cudart_child(argv[2], argv[3]);
	if (argc == 2 && !strcmp(argv[1], "--child-wait"))
		return wait_child();
	/*
	 * Skip where BPF cannot work here (no privileges, BTF or uprobes);
	 * programs the kernel rejects are a failure.
	 */
	if (geteuid() != 0) {
		fprintf(stderr, "test_probes: skipped: not root\n");
		return 77;
	}
	r = gw_probes_open(&o, &p, err, sizeof(err));
	if (r == -EPERM || r == -ENOSYS) {
		fprintf(stderr, "test_probes: skipped: %s\n", err);
		return 77;
	}
	if (r) {
		fprintf(stderr, "test_probes: %s\n", err);
		return 1;
	}
	gw_probes_close(p);
	r = cmocka_run_group_tests_name("uprobe_multi links", tests,
					group_setup, group_teardown);
	return r | cmocka_run_group_tests_name("perf event uprobes", perf_tests,
					       group_setup_perf,
					       group_teardown);
}
