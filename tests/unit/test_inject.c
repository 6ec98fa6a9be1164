// SPDX-License-Identifier: MIT
/*
 * test_inject.c - libgpuwatch_cupti.so inside a stand-in CUDA process,
 * read back by the agent's decoder.
 *
 * Each test forks a child that plays the CUDA process: it loads the
 * injection library as the driver does (dlopen, InitializeInjection, which
 * is process-global), with GPUWATCH_CUPTI_LIB naming the fake libcupti
 * (tests/fakes/fake_cupti.h), whose control API drives the API callbacks
 * and activity records.  The test process plays the agent: it finds the
 * child's ring in a fresh GPUWATCH_CUPTI_DIR and reads it through its
 * descriptor with gw_cupti_ring_check / gw_cupti_ring_take /
 * gw_cupti_decode, as the collector does, polling until the expected state
 * appears or 10 s pass.
 *
 * Parent and child talk over two pipes, one word per line: the child says
 * what it has done ("played", or "fail FILE:LINE: CONDITION" when one of
 * its own checks failed) and waits for the next step ("exit", ...).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/cupti/decode.h"
#include "fake_cupti.h"

#define DEADLINE_NS (10ull * 1000000000ull)
#define MIB	    (1024ull * 1024ull)
#define RT	    CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV	    CUPTI_CB_DOMAIN_DRIVER_API
#define RES	    CUPTI_CB_DOMAIN_RESOURCE

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pause_ms(unsigned int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* ================= the child: a CUDA process ================= */

static int kid_in = -1, kid_out = -1;
static struct fake_cupti fc;

static void kid_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kid_say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(kid_out, line, (size_t)n) != n)
		_exit(3);
}

static void kid_fail(const char *file, int line, const char *what)
{
	kid_say("fail %s:%d: %s", file, line, what);
	_exit(1);
}

#define KID_CHECK(cond)                                                        \
	do {                                                                   \
		if (!(cond))                                                   \
			kid_fail(__FILE__, __LINE__, #cond);                   \
	} while (0)

/* Waits for the parent's next word; EOF means the parent gave up. */
static void kid_await(const char *word)
{
	char line[128];
	size_t n = 0;

	while (n < sizeof(line) - 1) {
		ssize_t r = read(kid_in, line + n, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(4);
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	KID_CHECK(!strcmp(line, word));
}

static void kid_open_fake(void)
{
	KID_CHECK(fake_cupti_open(&fc, FAKE_CUPTI) == 0);
}

/* What the driver does with CUDA_INJECTION64_PATH. */
static void kid_inject(void)
{
	void *lib = dlopen(INJECT_LIB, RTLD_NOW | RTLD_LOCAL);
	int (*init)(void);

	KID_CHECK(lib != NULL);
	*(void **)&init = dlsym(lib, "InitializeInjection");
	KID_CHECK(init != NULL);
	init();
}

static void kid_start_process(void)
{
	kid_open_fake();
	kid_inject();
}

/* ================= the parent: the agent ================= */

struct kid {
	pid_t pid;
	int to_kid, from_kid;
	char dir[64];
	char buf[1024];
	size_t have;
	char line[512];
};

static struct kid kid;

static int setup(void **state)
{
	(void)state;
	memset(&kid, 0, sizeof(kid));
	kid.pid = -1;
	kid.to_kid = kid.from_kid = -1;
	snprintf(kid.dir, sizeof(kid.dir), "/tmp/gw-inject.XXXXXX");
	if (!mkdtemp(kid.dir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	struct dirent *de;
	DIR *d;

	(void)state;
	if (kid.pid > 0) {
		kill(kid.pid, SIGKILL);
		waitpid(kid.pid, NULL, 0);
	}
	if (kid.to_kid >= 0)
		close(kid.to_kid);
	if (kid.from_kid >= 0)
		close(kid.from_kid);
	d = opendir(kid.dir);
	if (d) {
		while ((de = readdir(d))) {
			char p[PATH_MAX];

			if (de->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", kid.dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(kid.dir);
	return 0;
}

/*
 * Forks the child, which sets the library's environment (a fresh ring
 * directory, 20 ms summaries, the fake as libcupti, kernels always traced,
 * then env: NULL-ended NAME=VALUE strings), runs play() and returns from "main" with exit(0),
 * so that the library's exit handler runs.
 */
static void kid_start(void (*play)(void), const char *const *env)
{
	int down[2], up[2];

	assert_int_equal(pipe2(down, O_CLOEXEC), 0);
	assert_int_equal(pipe2(up, O_CLOEXEC), 0);
	fflush(stdout);
	fflush(stderr);
	kid.pid = fork();
	assert_true(kid.pid >= 0);
	if (kid.pid == 0) {
		close(down[1]);
		close(up[0]);
		kid_in = down[0];
		kid_out = up[1];
		unsetenv("GPUWATCH_CUPTI_DISABLE");
		unsetenv("GPUWATCH_CUPTI_RING_KB");
		/* Bursts of launches stay below the duty-cycle limit unless
		 * a test sets its own. */
		setenv("GPUWATCH_CUPTI_KERNEL_RATE", "10000000", 1);
		setenv("GPUWATCH_CUPTI_DIR", kid.dir, 1);
		setenv("GPUWATCH_CUPTI_INTERVAL_MS", "20", 1);
		setenv("GPUWATCH_CUPTI_LIB", FAKE_CUPTI, 1);
		setenv("GPUWATCH_CUPTI_DEBUG", "1", 1);
		for (; env && *env; env++) {
			char name[64];
			const char *eq = strchr(*env, '=');

			if (!eq || (size_t)(eq - *env) >= sizeof(name))
				_exit(2);
			memcpy(name, *env, (size_t)(eq - *env));
			name[eq - *env] = '\0';
			setenv(name, eq + 1, 1);
		}
		play();
		exit(0);
	}
	close(down[0]);
	close(up[1]);
	kid.to_kid = down[1];
	kid.from_kid = up[0];
}

/* Next line from the child into kid.line; fails the test on "fail". */
static const char *kid_read(void)
{
	uint64_t deadline = mono_ns() + DEADLINE_NS;

	for (;;) {
		char *nl = memchr(kid.buf, '\n', kid.have);

		if (nl) {
			size_t len = (size_t)(nl - kid.buf);

			if (len >= sizeof(kid.line))
				len = sizeof(kid.line) - 1;
			memcpy(kid.line, kid.buf, len);
			kid.line[len] = '\0';
			kid.have -= (size_t)(nl + 1 - kid.buf);
			memmove(kid.buf, nl + 1, kid.have);
			if (!strncmp(kid.line, "fail ", 5))
				fail_msg("child: %s", kid.line + 5);
			return kid.line;
		}
		uint64_t now = mono_ns();
		struct pollfd pfd = { .fd = kid.from_kid, .events = POLLIN };

		if (now >= deadline)
			fail_msg("child said nothing for 10 s");
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000ull) + 1) <=
		    0)
			continue;
		ssize_t r = read(kid.from_kid, kid.buf + kid.have,
				 sizeof(kid.buf) - kid.have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			fail_msg("child closed its pipe without a word");
		kid.have += (size_t)r;
	}
}

/* Expects "word" or "word REST"; returns REST (maybe empty). */
static const char *kid_expect(const char *word)
{
	const char *line = kid_read();
	size_t n = strlen(word);

	if (strncmp(line, word, n) || (line[n] && line[n] != ' '))
		fail_msg("child said \"%s\", expected \"%s\"", line, word);
	return line[n] ? line + n + 1 : line + n;
}

static void kid_tell(const char *word)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "%s\n", word);

	assert_int_equal(write(kid.to_kid, line, (size_t)n), n);
}

/* Waits for the child to end; returns its exit status (-1: signal). */
static int kid_finish(void)
{
	uint64_t deadline = mono_ns() + DEADLINE_NS;
	int st;

	for (;;) {
		pid_t r = waitpid(kid.pid, &st, WNOHANG);

		if (r == kid.pid)
			break;
		if (mono_ns() > deadline)
			fail_msg("child did not exit within 10 s");
		pause_ms(2);
	}
	kid.pid = -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return -1;
}

static unsigned long long field(const char *line, const char *name)
{
	const char *p = strstr(line, name);
	unsigned long long v;
	char *end;

	if (!p || p[strlen(name)] != '=')
		fail_msg("no %s= in \"%s\"", name, line);
	errno = 0;
	v = strtoull(p + strlen(name) + 1, &end, 10);
	if (errno || end == p + strlen(name) + 1)
		fail_msg("bad %s in \"%s\"", name, line);
	return v;
}

/* ---- the ring, as the agent reads it ---- */

struct rd {
	char path[PATH_MAX];
	int fd;
	struct gw_cupti_ring_info ri;
	struct gw_cupti_proc *p;
	uint8_t *buf;
	size_t cap;
	int lost;
};

static struct rd rd;

static int rd_cleanup(void **state)
{
	if (rd.fd > 0)
		close(rd.fd);
	free(rd.buf);
	gw_cupti_proc_free(rd.p);
	memset(&rd, 0, sizeof(rd));
	return teardown(state);
}

/* Files in the ring directory; the first one's path into rd.path. */
static int dir_rings(void)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(kid.dir);

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (!n++)
			snprintf(rd.path, sizeof(rd.path), "%s/%s", kid.dir,
				 de->d_name);
	}
	closedir(d);
	return n;
}

static int rd_check(void)
{
	return gw_cupti_ring_check(rd.fd, &rd.ri);
}

/*
 * Finds and opens the child's ring (read-write, as the agent does) without
 * touching it: no tail, no reader_seen_ns.
 */
static void rd_open(void)
{
	uint64_t deadline = mono_ns() + DEADLINE_NS;
	char want[64];
	struct stat st;

	snprintf(want, sizeof(want), "%s%ld.", GW_CRING_PREFIX, (long)kid.pid);
	for (;; pause_ms(2)) {
		if (mono_ns() > deadline)
			fail_msg("no valid ring in %s after 10 s", kid.dir);
		if (!dir_rings())
			continue;
		const char *base = strrchr(rd.path, '/') + 1;

		assert_memory_equal(base, want, strlen(want));
		rd.fd = open(rd.path, O_RDWR | O_CLOEXEC);
		if (rd.fd < 0)
			continue;
		if (fstat(rd.fd, &st) || st.st_size < 4096) {
			close(rd.fd);
			continue;
		}
		if (rd_check() == 0)
			break;
		close(rd.fd);
	}
	assert_int_equal(rd.ri.pid, (uint32_t)kid.pid);
	rd.cap = rd.ri.data_size;
	rd.buf = malloc(rd.cap);
	assert_non_null(rd.buf);
	assert_int_equal(gw_cupti_proc_new(&rd.p), 0);
}

/* One agent pass: take everything unread and decode it. */
static void rd_pull(void)
{
	size_t len;
	int lost;

	assert_int_equal(rd_check(), 0);
	do {
		lost = 0;
		assert_int_equal(gw_cupti_ring_take(rd.fd, &rd.ri, rd.buf,
						    rd.cap, &len, &lost,
						    real_ns()),
				 0);
		rd.lost |= lost;
		gw_cupti_decode(rd.p, rd.buf, len);
	} while (len);
}

static uint64_t rd_head(void)
{
	uint64_t head;

	assert_int_equal(pread(rd.fd, &head, sizeof(head),
			       offsetof(struct gw_cring_hdr, head)),
			 (ssize_t)sizeof(head));
	return head;
}

/* Polls (pull: as an agent; else header only) until cond or 10 s. */
#define WAIT_FOR(pull, cond)                                                   \
	do {                                                                   \
		uint64_t deadline_ = mono_ns() + DEADLINE_NS;                  \
		for (;;) {                                                     \
			if (pull)                                              \
				rd_pull();                                     \
			else                                                   \
				assert_int_equal(rd_check(), 0);               \
			if (cond)                                              \
				break;                                         \
			if (mono_ns() > deadline_)                             \
				fail_msg("timed out after 10 s waiting "       \
					 "for %s (status %u)",                 \
					 #cond, rd.ri.status);                 \
			pause_ms(2);                                           \
		}                                                              \
	} while (0)

static const struct gw_cupti_kernel *kernel(const char *name)
{
	for (unsigned int i = 0; i < rd.p->nkernels; i++)
		if (!strcmp(rd.p->kernels[i].name, name))
			return &rd.p->kernels[i];
	return NULL;
}

static uint64_t kernel_count(const char *name)
{
	const struct gw_cupti_kernel *k = kernel(name);

	return k ? k->count : 0;
}

static const struct gw_cupti_api *api(uint32_t domain, const char *name,
				      int32_t code, uint32_t sync)
{
	for (unsigned int i = 0; i < rd.p->napis; i++) {
		const struct gw_cupti_api *a = &rd.p->apis[i];

		if (a->domain == domain && a->code == code && a->sync == sync &&
		    !strcmp(a->name, name))
			return a;
	}
	return NULL;
}

static uint64_t api_count(uint32_t domain, const char *name, int32_t code,
			  uint32_t sync)
{
	const struct gw_cupti_api *a = api(domain, name, code, sync);

	return a ? a->count : 0;
}

/* ================= (a) a small CUDA program ================= */

#define VECADD "_Z6vecAddPfS_S_i"
#define GEMM   "_Z4gemmILi128EEvPKfS1_Pfiii"
/* The CUfunction the "driver" hands out for GEMM, and one it refuses. */
#define GEMM_FUNC    0x7f3000001000ull
#define MISSING_FUNC 0x7f3000002000ull
/* CUDA 12's library API: vecAdd's CUkernel, and the CUfunction got from
 * it. */
#define VECADD_KERNEL 0x7f3000003000ull
#define VECADD_FUNC   0x7f3000004000ull

static uint32_t play_program(void)
{
	const struct fake_cupti_device h100 = FAKE_CUPTI_H100(0);
	struct fake_cupti_kernel vecadd = {
		.name = VECADD,
		.grid = { 4096, 1, 1 },
		.block = { 256, 1, 1 },
		.registers = 16,
		.duration_ns = 10000,
	};
	struct fake_cupti_kernel gemm = {
		.name = GEMM,
		.grid = { 64, 64, 1 },
		.block = { 128, 1, 1 },
		.registers = 128,
		.static_smem = 32768,
		.dynamic_smem = 16384,
		.duration_ns = 2000000,
	};
	const uint64_t base = 0x7f2000000000ull;
	uint32_t ctx;

	ctx = fc.context_create(0);
	KID_CHECK(fc.push_device(&h100) == FAKE_CUPTI_QUEUED);
	/* A driver-API program gets its kernel's CUfunction; a name the
	 * module does not have fails (500: CUDA_ERROR_NOT_FOUND). */
	{
		CUfunction f = (CUfunction)(uintptr_t)GEMM_FUNC,
			   none = (CUfunction)(uintptr_t)MISSING_FUNC;
		cuModuleGetFunction_params ok = { &f, NULL, GEMM },
					   bad = { &none, NULL, "_Z4nopev" };

		fc.api_call_params(DRV,
				   CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction,
				   0, &ok, NULL);
		fc.api_call_params(DRV,
				   CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction,
				   500, &bad, NULL);
	}
	{
		CUkernel k = (CUkernel)(uintptr_t)VECADD_KERNEL;
		CUfunction f = (CUfunction)(uintptr_t)VECADD_FUNC;
		cuLibraryGetKernel_params lk = { &k, NULL, VECADD };
		cuKernelGetFunction_params kf = { &f, k };

		fc.api_call_params(DRV,
				   CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,
				   0, &lk, NULL);
		fc.api_call_params(DRV,
				   CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
				   0, &kf, NULL);
	}
	for (int i = 0; i < 3; i++) {
		fc.api_call_nested(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 0, DRV,
			CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 0, 0);
		fc.push_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
			       base + (uint64_t)i * MIB, MIB);
	}
	for (int i = 0; i < 3; i++) {
		fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0,
			    100000);
		fc.push_memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MIB, 100000);
	}
	fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, 0, 0);
	fc.push_memset(4096, 2000);
	for (int i = 0; i < 1000; i++) {
		fc.api_call_nested(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0,
			DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 0);
		KID_CHECK(fc.push_kernel(&vecadd) == FAKE_CUPTI_QUEUED);
	}
	for (int i = 0; i < 10; i++) {
		fc.api_call_nested(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0,
			DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 0);
		KID_CHECK(fc.push_kernel(&gemm) == FAKE_CUPTI_QUEUED);
	}
	/* Out of memory: the runtime call and the driver call inside it. */
	KID_CHECK(fc.api_call_nested(
			  RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 2, DRV,
			  CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 2, 0) == 2);
	KID_CHECK(fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 1,
			      0) == 1);
	for (int i = 0; i < 5; i++)
		fc.api_call_nested(
			RT,
			CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 0,
			DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 0,
			1000000);
	/* A driver-API program (no runtime call around it): its own error and
	 * its own wait are counted at the driver level. */
	KID_CHECK(fc.api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 2,
			      0) == 2);
	fc.api_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 0, 1000000);
	fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0, 100000);
	fc.push_memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, MIB, 100000);
	fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, 0, 0);
	fc.push_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, base, MIB);
	return ctx;
}

static void kid_program(void)
{
	struct fake_cupti_stats st;
	uint32_t ctx;

	kid_start_process();
	ctx = play_program();
	kid_say("played");
	kid_await("destroy");
	fc.context_destroy(ctx);
	kid_say("destroyed");
	kid_await("stats");
	fc.get_stats(&st);
	kid_say("stats misuse=%" PRIu64 " subscribe=%" PRIu64
		" discarded=%" PRIu64 " dropped=%" PRIu64,
		st.misuse, st.subscribe_calls, st.discarded, st.dropped);
	kid_await("exit");
}

static int program_seen(void)
{
	const struct gw_crec_process *p = &rd.p->process;

	return rd.p->have_process && rd.p->have_memcpy && rd.p->nkfuncs == 3 &&
	       kernel_count(VECADD) == 1000 && kernel_count(GEMM) == 10 &&
	       p->mem_allocs == 3 && p->mem_frees == 1 && p->oom == 2 &&
	       p->contexts_created == 1 &&
	       api_count(GW_CRING_API_RUNTIME, "cudaDeviceSynchronize", 0, 1) ==
		       5 &&
	       api_count(GW_CRING_API_RUNTIME, "cudaMemcpy", 1, 0) == 1 &&
	       rd.p->memcpy.kind[GW_COPY_DTOH].count == 1;
}

static void program_totals(void **state)
{
	const struct gw_crec_process *p;
	const struct gw_crec_copy *c;
	const struct gw_cupti_kernel *k, *g;
	const struct gw_cupti_api *a;
	const char *line;

	(void)state;
	kid_start(kid_program, NULL);
	kid_expect("played");
	rd_open();
	WAIT_FOR(1, program_seen());
	p = &rd.p->process;
	c = rd.p->memcpy.kind;

	assert_int_equal(p->status, GW_CUPTI_ST_OK);
	assert_int_equal(p->cupti_version, 130001);
	assert_true(p->sampling_ratio == 1.0);

	k = kernel(VECADD);
	assert_int_equal(k->count, 1000);
	assert_int_equal(k->total_ns, 1000 * 10000ull);
	assert_int_equal(k->min_ns, 10000);
	assert_int_equal(k->max_ns, 10000);
	assert_true(k->est_count == 1000.0);
	assert_int_equal(k->bins[gw_cring_kbin(10000)], 1000);
	assert_int_equal(k->grid[0], 4096);
	assert_int_equal(k->grid[1], 1);
	assert_int_equal(k->block[0], 256);
	assert_int_equal(k->registers, 16);
	assert_int_equal(k->dynamic_smem, 0);
	assert_true(k->occupancy > 0.0f && k->occupancy <= 1.0f);

	g = kernel(GEMM);
	assert_int_equal(g->count, 10);
	/* The launch handles name their kernels' records (the profiler's
	 * join): GEMM's CUfunction, vecAdd's CUkernel and the CUfunction
	 * got from it; the failed lookup taught nothing. */
	assert_int_equal(rd.p->nkfuncs, 3);
	for (unsigned int i = 0; i < rd.p->nkfuncs; i++) {
		const struct gw_cupti_kfunc *f = &rd.p->kfuncs[i];

		assert_int_equal(f->kind, GW_CRING_KFUNC_CUFUNCTION);
		assert_true(f->handle != MISSING_FUNC);
		assert_int_equal(f->name_hash, f->handle == GEMM_FUNC
						       ? g->name_hash
						       : k->name_hash);
	}
	assert_int_equal(g->total_ns, 10 * 2000000ull);
	assert_int_equal(g->min_ns, 2000000);
	assert_int_equal(g->max_ns, 2000000);
	assert_int_equal(g->bins[gw_cring_kbin(2000000)], 10);
	assert_int_equal(g->grid[0], 64);
	assert_int_equal(g->grid[1], 64);
	assert_int_equal(g->block[0], 128);
	assert_int_equal(g->registers, 128);
	assert_int_equal(g->static_smem, 32768);
	assert_int_equal(g->dynamic_smem, 16384);
	/* 128 registers and 48 KiB per block: far from a full H100 SM. */
	assert_true(g->occupancy > 0.0f && g->occupancy <= 1.0f);
	assert_true(g->occupancy < k->occupancy);

	assert_int_equal(c[GW_COPY_HTOD].count, 3);
	assert_int_equal(c[GW_COPY_HTOD].bytes, 3 * MIB);
	assert_int_equal(c[GW_COPY_HTOD].total_ns, 300000);
	assert_int_equal(c[GW_COPY_DTOH].count, 1);
	assert_int_equal(c[GW_COPY_DTOH].bytes, MIB);
	assert_int_equal(c[GW_COPY_MEMSET].count, 1);
	assert_int_equal(c[GW_COPY_MEMSET].bytes, 4096);
	assert_int_equal(c[GW_COPY_DTOD].count, 0);

	assert_int_equal(p->mem_allocs, 3);
	assert_int_equal(p->mem_frees, 1);
	assert_int_equal(p->mem_live_bytes, 2 * MIB);
	assert_int_equal(p->mem_peak_bytes, 3 * MIB);
	/* One failed cudaMalloc is one OOM, whatever failed inside it; the
	 * failed cuMemAlloc of the driver-API part is another. */
	assert_int_equal(p->oom, 2);
	assert_int_equal(p->contexts_created, 1);
	assert_int_equal(p->contexts_destroyed, 0);
	assert_true(p->records >= 1000 + 10 + 4 + 3 + 1);

	/* API errors, by (domain, name, code). */
	assert_int_equal(api_count(GW_CRING_API_RUNTIME, "cudaMalloc", 2, 0),
			 1);
	/* The driver call inside the failed cudaMalloc is not counted again;
	 * the application's own cuMemAlloc is. */
	assert_int_equal(api_count(GW_CRING_API_DRIVER, "cuMemAlloc_v2", 2, 0),
			 1);
	assert_int_equal(api_count(GW_CRING_API_RUNTIME, "cudaMemcpy", 1, 0),
			 1);
	a = api(GW_CRING_API_RUNTIME, "cudaMalloc", 2, 0);
	assert_int_equal(a->cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
	/* Successful calls are not errors. */
	assert_null(api(GW_CRING_API_RUNTIME, "cudaMalloc", 0, 0));
	assert_null(api(GW_CRING_API_RUNTIME, "cudaLaunchKernel", 0, 0));

	/* Synchronisation: 5 calls of 1 ms each, host time. */
	a = api(GW_CRING_API_RUNTIME, "cudaDeviceSynchronize", 0, 1);
	assert_non_null(a);
	assert_int_equal(a->count, 5);
	assert_true(a->total_ns >= 5 * 1000000ull);
	/* The waits inside cudaDeviceSynchronize are its own: the driver's
	 * entry has only the application's direct call (no upper bound on
	 * its time: a 1 ms wait can take longer on a loaded machine). */
	a = api(GW_CRING_API_DRIVER, "cuCtxSynchronize", 0, 1);
	assert_non_null(a);
	assert_int_equal(a->count, 1);
	assert_true(a->total_ns >= 1000000ull);

	kid_tell("destroy");
	kid_expect("destroyed");
	WAIT_FOR(1, rd.p->process.contexts_destroyed == 1);
	assert_int_equal(rd.p->process.contexts_created, 1);

	kid_tell("stats");
	line = kid_expect("stats");
	assert_int_equal(field(line, "misuse"), 0);
	assert_int_equal(field(line, "subscribe"), 1);
	assert_int_equal(field(line, "dropped"), 0);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
	assert_false(rd.lost);
	assert_int_equal(rd.p->st.bad, 0);
}

/* ================= (b) what is subscribed ================= */

static void kid_subscriptions(void)
{
	struct fake_cupti_stats st;

	kid_start_process();
	KID_CHECK(fc.subscribed());
	/* Hot calls stay off: their callbacks would cost every launch. */
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020));
	KID_CHECK(!fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
	KID_CHECK(!fc.callback_enabled(DRV,
				       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
	KID_CHECK(!fc.callback_enabled(
		DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz));
	KID_CHECK(!fc.callback_enabled(
		DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
	KID_CHECK(!fc.callback_enabled(
		DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent));
	KID_CHECK(!fc.callback_enabled(
		DRV, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2));
	/* What the agent reports on stays on. */
	KID_CHECK(fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020));
	KID_CHECK(fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020));
	KID_CHECK(fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020));
	KID_CHECK(fc.callback_enabled(
		RT, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
	KID_CHECK(fc.callback_enabled(DRV,
				      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
	KID_CHECK(fc.callback_enabled(
		DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));
	KID_CHECK(
		fc.callback_enabled(RES, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
	KID_CHECK(fc.callback_enabled(
		RES, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
	KID_CHECK(fc.activity_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	KID_CHECK(fc.activity_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
	KID_CHECK(fc.activity_enabled(CUPTI_ACTIVITY_KIND_MEMSET));
	KID_CHECK(fc.activity_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
	KID_CHECK(fc.activity_enabled(CUPTI_ACTIVITY_KIND_DEVICE));

	/* A launch reaches the library as an activity record only. */
	for (int i = 0; i < 100; i++)
		fc.api_call_nested(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0,
			DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 0);
	fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 0, 0);
	KID_CHECK(
		fc.callbacks_seen(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) ==
		0);
	KID_CHECK(fc.callbacks_seen(
			  DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == 0);
	KID_CHECK(fc.callbacks_seen(
			  RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) == 1);
	fc.get_stats(&st);
	KID_CHECK(st.misuse == 0);
	kid_say("checked");
	kid_await("exit");
}

static void hot_apis_not_subscribed(void **state)
{
	(void)state;
	kid_start(kid_subscriptions, NULL);
	kid_expect("checked");
	rd_open();
	WAIT_FOR(0, rd.ri.status == GW_CUPTI_ST_OK);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
}

/* ================= (c) another CUPTI subscriber ================= */

static void kid_busy(void)
{
	struct fake_cupti_kernel k = { .name = "_Z1kv", .duration_ns = 1000 };
	struct fake_cupti_stats st;

	kid_open_fake();
	fc.set_subscribe_result(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	kid_inject();
	KID_CHECK(!fc.subscribed());
	KID_CHECK(fc.enabled_count() == 0);
	/* The application's calls go through untouched. */
	fc.context_create(0);
	KID_CHECK(fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 0,
			      0) == 0);
	KID_CHECK(fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 2,
			      0) == 2);
	KID_CHECK(fc.push_kernel(&k) == FAKE_CUPTI_DISCARDED);
	fc.get_stats(&st);
	KID_CHECK(st.callbacks == 0);
	KID_CHECK(st.subscribe_calls == 1);
	kid_say("played");
	kid_await("exit");
}

static void busy_when_another_subscriber(void **state)
{
	(void)state;
	kid_start(kid_busy, NULL);
	kid_expect("played");
	rd_open();
	WAIT_FOR(0, rd.ri.status == GW_CUPTI_ST_BUSY);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
	/* The reason outlives the process: still BUSY, now EXITED. */
	assert_int_equal(rd_check(), 0);
	assert_int_equal(rd.ri.flags & GW_CRING_F_EXITED, GW_CRING_F_EXITED);
	assert_int_equal(rd.ri.status, GW_CUPTI_ST_BUSY);
}

/* ================= (d) no libcupti ================= */

static void kid_nolib(void)
{
	kid_inject();
	kid_say("played");
	kid_await("exit");
}

static void no_library(void **state)
{
	static const char *const env[] = {
		"GPUWATCH_CUPTI_LIB=/nonexistent/libcupti.so.13", NULL
	};

	(void)state;
	kid_start(kid_nolib, env);
	kid_expect("played");
	rd_open();
	WAIT_FOR(0, rd.ri.status == GW_CUPTI_ST_NO_LIBRARY);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
}

/* ================= (e) disabled ================= */

static void kid_disabled(void)
{
	kid_start_process();
	KID_CHECK(!fc.subscribed());
	KID_CHECK(fc.enabled_count() == 0);
	fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 2, 0);
	kid_say("played");
	kid_await("exit");
}

static void disabled_leaves_no_trace(void **state)
{
	static const char *const env[] = { "GPUWATCH_CUPTI_DISABLE=1", NULL };

	(void)state;
	kid_start(kid_disabled, env);
	kid_expect("played");
	assert_int_equal(dir_rings(), 0);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
	assert_int_equal(dir_rings(), 0);
}

/* ================= (f) a full ring ================= */

#define MANY_KERNELS 200

static void many_name(char *buf, size_t cap, int i)
{
	char body[381];

	/* Long template instantiations, as real kernel names often are. */
	memset(body, 'x', 380);
	body[380] = '\0';
	snprintf(buf, cap, "_Z%dkernel_%03d_%sv", 11 + 380, i, body);
}

static void kid_many(void)
{
	const struct fake_cupti_device h100 = FAKE_CUPTI_H100(0);
	char name[512];

	kid_start_process();
	fc.context_create(0);
	fc.push_device(&h100);
	for (int i = 0; i < MANY_KERNELS; i++) {
		struct fake_cupti_kernel k = {
			.name = name,
			.grid = { 1, 1, 1 },
			.block = { 32, 1, 1 },
			.registers = 8,
			.duration_ns = 5000 + (uint64_t)i,
		};

		many_name(name, sizeof(name), i);
		KID_CHECK(fc.push_kernel(&k) == FAKE_CUPTI_QUEUED);
	}
	kid_say("pushed");
	kid_await("sync");
	fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 0,
		    0);
	kid_say("synced");
	kid_await("exit");
}

static int many_seen(void)
{
	char name[512];

	for (int i = 0; i < MANY_KERNELS; i++) {
		many_name(name, sizeof(name), i);
		if (kernel_count(name) != 1)
			return 0;
	}
	return api_count(GW_CRING_API_RUNTIME, "cudaDeviceSynchronize", 0, 1) ==
	       1;
}

static void full_ring_drops_then_catches_up(void **state)
{
	static const char *const env[] = { "GPUWATCH_CUPTI_RING_KB=64", NULL };
	uint64_t dropped;
	char name[512];

	(void)state;
	kid_start(kid_many, env);
	kid_expect("pushed");
	rd_open();
	assert_int_equal(rd.ri.data_size, 64u << 10);
	/* Nobody reads: the summaries no longer fit and are counted. */
	WAIT_FOR(0, rd.ri.dropped > 0);
	dropped = rd.ri.dropped;
	/* The process is not held up by the full ring... */
	kid_tell("sync");
	kid_expect("synced");
	/* ...and neither is the summary thread: it keeps counting. */
	WAIT_FOR(0, rd.ri.dropped > dropped);

	/* An agent arrives: cumulative records bring everything back. */
	WAIT_FOR(1, many_seen());
	assert_false(rd.lost);
	assert_true(rd.p->process.records >= MANY_KERNELS);
	many_name(name, sizeof(name), 7);
	assert_int_equal(kernel(name)->total_ns, 5007);
	assert_int_equal(rd.p->st.bad, 0);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
}

/* ================= (g) kernel duty cycle ================= */

#define HOT "_Z9hotKernelPf"

static struct {
	pthread_t thread;
	int stop;
	uint64_t queued, discarded, dropped;
} pusher;

/* About 20 launches per millisecond, far above the limit. */
static void *push_hot(void *arg)
{
	struct fake_cupti_kernel k = {
		.name = HOT,
		.grid = { 80, 1, 1 },
		.block = { 256, 1, 1 },
		.registers = 32,
		.duration_ns = 5000,
	};
	uint64_t deadline = mono_ns() + DEADLINE_NS;

	(void)arg;
	while (!__atomic_load_n(&pusher.stop, __ATOMIC_ACQUIRE) &&
	       mono_ns() < deadline) {
		for (int i = 0; i < 20; i++) {
			switch (fc.push_kernel(&k)) {
			case FAKE_CUPTI_QUEUED:
				pusher.queued++;
				break;
			case FAKE_CUPTI_DISCARDED:
				pusher.discarded++;
				break;
			default:
				pusher.dropped++;
				break;
			}
		}
		pause_ms(1);
	}
	return NULL;
}

static void kid_hot(void)
{
	kid_start_process();
	fc.context_create(0);
	KID_CHECK(pthread_create(&pusher.thread, NULL, push_hot, NULL) == 0);
	kid_say("pushing");
	kid_await("stop");
	__atomic_store_n(&pusher.stop, 1, __ATOMIC_RELEASE);
	pthread_join(pusher.thread, NULL);
	/* Tracing was switched off part of the time, and back on. */
	KID_CHECK(pusher.discarded > 0);
	KID_CHECK(pusher.queued > 0);
	kid_say("pushed queued=%" PRIu64 " discarded=%" PRIu64
		" dropped=%" PRIu64,
		pusher.queued, pusher.discarded, pusher.dropped);
	kid_await("exit");
}

static void kernel_tracing_is_duty_cycled(void **state)
{
	/* Pushed at about 20000/s: tracing is on about 10% of each 50 ms
	 * period, long enough for timer slack not to skew the estimate. */
	static const char *const env[] = { "GPUWATCH_CUPTI_KERNEL_RATE=2000",
					   "GPUWATCH_CUPTI_INTERVAL_MS=50",
					   NULL };
	unsigned long long queued, discarded, dropped, launched;
	const struct gw_cupti_kernel *k;
	const char *line;
	double ratio;
	uint64_t seq;

	(void)state;
	kid_start(kid_hot, env);
	kid_expect("pushing");
	rd_open();
	WAIT_FOR(1, rd.p->have_process && rd.p->process.sampling_ratio < 1.0 &&
			    kernel_count(HOT) > 0);
	ratio = rd.p->process.sampling_ratio;
	assert_true(ratio > 0.0 && ratio < 1.0);
	/* Ten more summaries of duty cycling, so that the estimate covers
	 * many on/off periods, not one. */
	seq = rd.p->process.seq;
	WAIT_FOR(1, rd.p->process.seq >= seq + 10 &&
			    kernel(HOT)->est_count > (double)kernel_count(HOT));
	kid_tell("stop");
	line = kid_expect("pushed");
	queued = field(line, "queued");
	discarded = field(line, "discarded");
	dropped = field(line, "dropped");
	launched = queued + discarded + dropped;

	/* Every record CUPTI produced is counted, none twice. */
	WAIT_FOR(1, kernel_count(HOT) == queued);
	k = kernel(HOT);
	assert_true(queued < launched);
	/* The estimate scales the traced launches back up... */
	assert_true(k->est_count > (double)k->count);
	assert_true(k->est_ns > (double)k->total_ns);
	/* ...to about what was launched. */
	if (!(k->est_count > (double)launched / 3.0 &&
	      k->est_count < (double)launched * 3.0))
		fail_msg("estimated %.0f launches (%" PRIu64 " traced, ratio "
			 "%.3f), %llu launched",
			 k->est_count, k->count, rd.p->process.sampling_ratio,
			 launched);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
}

/* ================= (h) a second InitializeInjection ================= */

static void kid_twice(void)
{
	struct fake_cupti_stats st;

	kid_start_process();
	kid_inject();
	fc.get_stats(&st);
	KID_CHECK(st.subscribe_calls == 1);
	KID_CHECK(fc.subscribed());
	fc.context_create(0);
	kid_say("played");
	kid_await("exit");
}

static void initialize_twice_subscribes_once(void **state)
{
	(void)state;
	kid_start(kid_twice, NULL);
	kid_expect("played");
	rd_open();
	WAIT_FOR(1, rd.p->have_process && rd.p->process.contexts_created == 1);
	assert_int_equal(dir_rings(), 1);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
}

/* ================= (i) exit ================= */

#define LAST "_Z8lastKernPf"

static void kid_exits(void)
{
	struct fake_cupti_kernel k = { .name = LAST, .duration_ns = 7000 };
	uint32_t ctx;

	kid_start_process();
	ctx = fc.context_create(0);
	kid_say("played");
	kid_await("exit");
	/* Right before exit: only the exit path can deliver these. */
	KID_CHECK(fc.push_kernel(&k) == FAKE_CUPTI_QUEUED);
	fc.context_destroy(ctx);
}

static int hdr_flags(void)
{
	uint32_t flags;

	assert_int_equal(pread(rd.fd, &flags, sizeof(flags),
			       offsetof(struct gw_cring_hdr, flags)),
			 (ssize_t)sizeof(flags));
	return (int)flags;
}

static void exit_without_reader_unlinks(void **state)
{
	(void)state;
	kid_start(kid_exits, NULL);
	kid_expect("played");
	rd_open();
	WAIT_FOR(0, rd.ri.status == GW_CUPTI_ST_OK);
	assert_int_equal(hdr_flags() & GW_CRING_F_EXITED, 0);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
	/* Our descriptor outlives the file's name. */
	assert_int_equal(rd_check(), 0);
	assert_int_equal(rd.ri.flags & GW_CRING_F_EXITED, GW_CRING_F_EXITED);
	assert_int_equal(rd.ri.status, GW_CUPTI_ST_STOPPED);
	assert_int_equal(access(rd.path, F_OK), -1);
	assert_int_equal(dir_rings(), 0);
}

static void exit_with_reader_keeps_ring(void **state)
{
	(void)state;
	kid_start(kid_exits, NULL);
	kid_expect("played");
	rd_open();
	WAIT_FOR(1, rd.p->have_process && rd.p->process.contexts_created == 1);
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
	assert_int_equal(access(rd.path, F_OK), 0);
	rd_pull();
	assert_int_equal(rd.ri.flags & GW_CRING_F_EXITED, GW_CRING_F_EXITED);
	assert_int_equal(rd.ri.status, GW_CUPTI_ST_STOPPED);
	/* The final summary carries what happened last. */
	assert_int_equal(kernel_count(LAST), 1);
	assert_int_equal(rd.p->process.contexts_destroyed, 1);
	assert_false(rd.lost);
}

/* ================= (j) fork ================= */

static void kid_forks(void)
{
	pid_t pid;
	int st;

	kid_start_process();
	fc.context_create(0);
	kid_say("played");
	kid_await("fork");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	KID_CHECK(pid >= 0);
	if (pid == 0) {
		/* A child that uses CUDA state it must not own, then ends. */
		fc.api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 2,
			    0);
		exit(0);
	}
	KID_CHECK(waitpid(pid, &st, 0) == pid);
	KID_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	kid_say("forked");
	kid_await("exit");
}

static void forked_child_leaves_ring_alone(void **state)
{
	/* No periodic summary in the window: head moves only on exit. */
	static const char *const env[] = { "GPUWATCH_CUPTI_INTERVAL_MS=60000",
					   NULL };
	uint64_t head;

	(void)state;
	kid_start(kid_forks, env);
	kid_expect("played");
	rd_open();
	WAIT_FOR(0, rd.ri.status == GW_CUPTI_ST_OK);
	head = rd_head();
	kid_tell("fork");
	kid_expect("forked");
	assert_int_equal(rd_check(), 0);
	assert_true(rd_head() == head);
	assert_int_equal(rd.ri.flags & GW_CRING_F_EXITED, 0);
	assert_int_equal(rd.ri.status, GW_CUPTI_ST_OK);
	assert_int_equal(access(rd.path, F_OK), 0);

	/* The process's own exit does write: the check above can fail. */
	kid_tell("exit");
	assert_int_equal(kid_finish(), 0);
	assert_true(rd_head() > head);
	assert_int_equal(hdr_flags() & GW_CRING_F_EXITED, GW_CRING_F_EXITED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(program_totals, setup,
						rd_cleanup),
		cmocka_unit_test_setup_teardown(hot_apis_not_subscribed, setup,
						rd_cleanup),
		cmocka_unit_test_setup_teardown(busy_when_another_subscriber,
						setup, rd_cleanup),
		cmocka_unit_test_setup_teardown(no_library, setup, rd_cleanup),
		cmocka_unit_test_setup_teardown(disabled_leaves_no_trace, setup,
						rd_cleanup),
		cmocka_unit_test_setup_teardown(full_ring_drops_then_catches_up,
						setup, rd_cleanup),
		cmocka_unit_test_setup_teardown(kernel_tracing_is_duty_cycled,
						setup, rd_cleanup),
		cmocka_unit_test_setup_teardown(
			initialize_twice_subscribes_once, setup, rd_cleanup),
		cmocka_unit_test_setup_teardown(exit_without_reader_unlinks,
						setup, rd_cleanup),
		cmocka_unit_test_setup_teardown(exit_with_reader_keeps_ring,
						setup, rd_cleanup),
		cmocka_unit_test_setup_teardown(forked_child_leaves_ring_alone,
						setup, rd_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
