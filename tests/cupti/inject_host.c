/* SPDX-License-Identifier: MIT */
/*
 * inject_host.c - a stand-in CUDA process for the integration tests: it
 * does what the CUDA driver does with CUDA_INJECTION64_PATH (dlopen the
 * library RTLD_NOW | RTLD_LOCAL, call InitializeInjection), with
 * GPUWATCH_CUPTI_LIB pointing at the fake libcupti (tests/fakes), and then
 * plays a named scenario through the fake's control API (fake_cupti.h).
 *
 *   inject_host SCENARIO [FAKE_CUPTI_PATH]
 *
 * The fake's path is the argument or $FAKE_CUPTI; the injection library is
 * $CUDA_INJECTION64_PATH or $CUPTI_INJECT.  The ring directory is
 * $GPUWATCH_CUPTI_DIR (default /dev/shm), as for the library.
 * GPUWATCH_CUPTI_KERNEL_RATE defaults to 10000000 here, so that the burst
 * of launches below is traced in full (set it to see duty cycling).
 *
 * Scenarios:
 *   basic  one context; a DEVICE record (H100 limits); 1000 launches of
 *          _Z6vecAddPfS_S_i at 10 us and 10 of _Z4gemmILi128EEvPKfS1_Pfiii
 *          at 2 ms; memcpy HtoD 3 x 1 MiB (100 us each), DtoH 1 x 1 MiB
 *          (100 us), one 4096-byte memset; 3 x 1 MiB allocated, one freed;
 *          a cudaMalloc failing with cudaErrorMemoryAllocation (2) whose
 *          cuMemAlloc_v2 fails with CUDA_ERROR_OUT_OF_MEMORY (2); a
 *          cudaMemcpy failing with cudaErrorInvalidValue (1);
 *          cudaDeviceSynchronize (over cuCtxSynchronize) 5 x 1 ms.
 *          Ready once the ring shows a PROCESS record with those totals
 *          (1 context, 3 allocations, 1 free, 2 MiB live, 3 MiB peak,
 *          1 OOM, >= 1010 activity records) and a MEMCPY record with the
 *          copies.
 *   busy   the fake's cuptiSubscribe returns 39 (another tool holds
 *          CUPTI); ready once the ring's status is BUSY.
 *   steady a training loop: one context, a DEVICE record, then every
 *          10 ms one launch of _Z5trainv, 1 ms +-2% long.  Ready once the
 *          ring shows a PROCESS record with the context.  It goes on
 *          launching while it waits; a line "slow" on stdin makes every
 *          later launch 1.4 times as long (as a lower clock would).
 *
 * When ready it prints "ready PID RINGPATH" on stdout and waits for EOF on
 * stdin; then it destroys the context and returns from main, so that the
 * library's exit handler runs.  It reads the ring without advancing tail
 * or touching reader_seen_ns, so an agent reading the same ring sees
 * everything.  Exit status: 0 ok, 1 the scenario failed (a message on
 * stderr), 2 usage, 77 a library is missing.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake_cupti.h"
#include "gpuwatch/cupti_ring.h"

#define DEADLINE_NS (10ull * 1000000000ull)
#define MIB	    (1024ull * 1024ull)

#define RT  CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API

/* A read-only view of our own ring. */
struct ring {
	char path[PATH_MAX];
	int fd;
	uint8_t *map;
	size_t len;
	const struct gw_cring_hdr *hdr;
	uint64_t pos; /* record boundary scanned up to */
	uint8_t *buf; /* data_size bytes */
	int have_process, have_memcpy;
	struct gw_crec_process process;
	struct gw_crec_memcpy memcpy;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pause_ms(unsigned int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* DIR/gpuwatch-cupti.PID.* into r->path; 0 or -ENOENT. */
static int ring_find(struct ring *r, const char *dir)
{
	char prefix[64];
	struct dirent *de;
	int err = -ENOENT;
	DIR *d;

	snprintf(prefix, sizeof(prefix), "%s%ld.", GW_CRING_PREFIX,
		 (long)getpid());
	d = opendir(dir);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(r->path, sizeof(r->path), "%s/%s", dir, de->d_name);
		err = 0;
		break;
	}
	closedir(d);
	return err;
}

/* Maps the ring once its header is complete; 0 or -EAGAIN. */
static int ring_map(struct ring *r)
{
	const struct gw_cring_hdr *h;
	struct stat st;

	r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return -EAGAIN;
	if (fstat(r->fd, &st) || (size_t)st.st_size < sizeof(*h))
		goto again;
	r->len = (size_t)st.st_size;
	r->map = mmap(NULL, r->len, PROT_READ, MAP_SHARED, r->fd, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		goto again;
	}
	h = (const struct gw_cring_hdr *)r->map;
	if (h->magic != GW_CRING_MAGIC || h->hdr_size < sizeof(*h) ||
	    h->data_size < GW_CRING_DATA_MIN ||
	    h->data_size > GW_CRING_DATA_MAX ||
	    (h->data_size & (h->data_size - 1)) ||
	    (uint64_t)h->data_off + h->data_size > r->len)
		goto again;
	r->buf = malloc(h->data_size);
	if (!r->buf)
		goto again;
	r->hdr = h;
	return 0;
again:
	if (r->map)
		munmap(r->map, r->len);
	r->map = NULL;
	close(r->fd);
	r->fd = -1;
	return -EAGAIN;
}

static void ring_apply(struct ring *r, const uint8_t *p, size_t len)
{
	size_t off = 0;

	while (len - off >= sizeof(struct gw_crec)) {
		struct gw_crec c;

		memcpy(&c, p + off, sizeof(c));
		if (c.size < sizeof(c) || c.size % 8 || c.size > GW_CREC_MAX ||
		    c.size > len - off)
			return;
		if (c.type == GW_CREC_PROCESS &&
		    c.size >= GW_CREC_PROCESS_MIN_SIZE) {
			memcpy(&r->process, p + off, sizeof(r->process));
			r->have_process = 1;
		} else if (c.type == GW_CREC_MEMCPY &&
			   c.size >= GW_CREC_MEMCPY_MIN_SIZE) {
			memcpy(&r->memcpy, p + off, sizeof(r->memcpy));
			r->have_memcpy = 1;
		}
		off += c.size;
	}
}

/*
 * Reads the records written since the last call, following our own cursor
 * (an agent may advance tail at any time).  When the writer got more than
 * half a ring ahead of us, or overran what we copied, we resynchronise at
 * tail, which is always a record boundary.
 */
static void ring_scan(struct ring *r)
{
	const uint8_t *data = r->map + r->hdr->data_off;
	uint64_t size = r->hdr->data_size;
	uint64_t head = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
	uint64_t n, at, first;

	if (head < r->pos || head - r->pos > size / 2)
		r->pos = tail <= head && head - tail <= size ? tail : head;
	n = head - r->pos;
	at = r->pos & (size - 1);
	first = size - at < n ? size - at : n;
	memcpy(r->buf, data + at, first);
	memcpy(r->buf + first, data, n - first);
	if (__atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE) - r->pos > size) {
		r->pos = head;
		return;
	}
	ring_apply(r, r->buf, n);
	r->pos = head;
}

static uint32_t ring_status(const struct ring *r)
{
	return __atomic_load_n(&r->hdr->status, __ATOMIC_ACQUIRE);
}

static int basic_done(const struct ring *r)
{
	const struct gw_crec_process *p = &r->process;
	const struct gw_crec_copy *k = r->memcpy.kind;

	return r->have_process && r->have_memcpy && p->contexts_created >= 1 &&
	       p->mem_allocs == 3 && p->mem_frees == 1 &&
	       p->mem_live_bytes == 2 * MIB && p->mem_peak_bytes == 3 * MIB &&
	       p->oom == 1 && p->records >= 1010 &&
	       k[GW_COPY_HTOD].count == 3 && k[GW_COPY_HTOD].bytes == 3 * MIB &&
	       k[GW_COPY_DTOH].count == 1 && k[GW_COPY_MEMSET].count == 1;
}

static int steady_done(const struct ring *r)
{
	return r->have_process && r->process.contexts_created >= 1;
}

static int busy_done(const struct ring *r)
{
	return ring_status(r) == GW_CUPTI_ST_BUSY;
}

static void play_basic(struct fake_cupti *fc, uint32_t ctx)
{
	const struct fake_cupti_device h100 = FAKE_CUPTI_H100(0);
	struct fake_cupti_kernel vecadd = {
		.name = "_Z6vecAddPfS_S_i",
		.context = ctx,
		.grid = { 4096, 1, 1 },
		.block = { 256, 1, 1 },
		.registers = 16,
		.duration_ns = 10000,
	};
	struct fake_cupti_kernel gemm = {
		.name = "_Z4gemmILi128EEvPKfS1_Pfiii",
		.context = ctx,
		.grid = { 64, 64, 1 },
		.block = { 128, 1, 1 },
		.registers = 128,
		.static_smem = 32768,
		.dynamic_smem = 16384,
		.duration_ns = 2000000,
	};
	const uint64_t base = 0x7f2000000000ull;

	fc->push_device(&h100);
	for (int i = 0; i < 3; i++) {
		fc->api_call_nested(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 0, DRV,
			CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 0, 0);
		fc->push_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
				base + (uint64_t)i * MIB, MIB);
	}
	for (int i = 0; i < 3; i++) {
		fc->api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0,
			     100000);
		fc->push_memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MIB, 100000);
	}
	fc->api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, 0, 0);
	fc->push_memset(4096, 2000);
	for (int i = 0; i < 1000; i++) {
		fc->api_call_nested(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0,
			DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 0);
		fc->push_kernel(&vecadd);
	}
	for (int i = 0; i < 10; i++) {
		fc->api_call_nested(
			RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0,
			DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 0);
		fc->push_kernel(&gemm);
	}
	fc->api_call_nested(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 2,
			    DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 2, 0);
	fc->api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 1, 0);
	for (int i = 0; i < 5; i++)
		fc->api_call_nested(
			RT,
			CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 0,
			DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 0,
			1000000);
	fc->api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0, 100000);
	fc->push_memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, MIB, 100000);
	fc->api_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, 0, 0);
	fc->push_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, base,
			MIB);
}

/* steady: one launch of _Z5trainv, 1 ms * slow +-2% (a fixed sequence). */
static void train_step(struct fake_cupti *fc, uint32_t ctx, double slow)
{
	static uint64_t x = 88172645463325252ull;
	struct fake_cupti_kernel k = {
		.name = "_Z5trainv",
		.context = ctx,
		.grid = { 1024, 1, 1 },
		.block = { 256, 1, 1 },
		.registers = 64,
	};

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	k.duration_ns = (uint64_t)(1e6 * slow *
				   (0.98 + 0.04 * (double)(x >> 11) / 0x1p53));
	fc->api_call_nested(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
			    0, DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0,
			    0);
	fc->push_kernel(&k);
}

/* steady, once ready: a launch every 10 ms until EOF on stdin; "slow"
 * makes the later ones longer. */
static void play_steady(struct fake_cupti *fc, uint32_t ctx)
{
	double slow = 1;
	char line[64];
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		int n = poll(&p, 1, 10);
		ssize_t got;

		if (n < 0 && errno != EINTR)
			return;
		if (n > 0) {
			got = read(STDIN_FILENO, line + len,
				   sizeof(line) - 1 - len);
			if (got == 0 || (got < 0 && errno != EINTR))
				return;
			len += got > 0 ? (size_t)got : 0;
			line[len] = '\0';
			if (strstr(line, "slow\n"))
				slow = 1.4;
			if (strchr(line, '\n') || len + 1 >= sizeof(line))
				len = 0;
		}
		train_step(fc, ctx, slow);
	}
}

int main(int argc, char **argv)
{
	const char *scenario = argc > 1 ? argv[1] : NULL;
	const char *fake_path = argc > 2 ? argv[2] : getenv("FAKE_CUPTI");
	const char *inject = getenv("CUDA_INJECTION64_PATH");
	const char *dir = getenv("GPUWATCH_CUPTI_DIR");
	struct ring r = { .fd = -1 };
	struct fake_cupti fc;
	int (*init)(void);
	int (*done)(const struct ring *);
	uint32_t ctx = 0;
	uint64_t deadline;
	void *lib;
	char c;

	if (!scenario ||
	    (strcmp(scenario, "basic") && strcmp(scenario, "busy") &&
	     strcmp(scenario, "steady"))) {
		fprintf(stderr,
			"usage: inject_host basic|busy|steady [FAKE_CUPTI]\n");
		return 2;
	}
	done = !strcmp(scenario, "busy")     ? busy_done
	       : !strcmp(scenario, "steady") ? steady_done
					     : basic_done;
	if (!inject || !*inject)
		inject = getenv("CUPTI_INJECT");
	if (!fake_path || !*fake_path || !inject || !*inject) {
		fprintf(stderr, "inject_host: set FAKE_CUPTI (or pass it) and "
				"CUDA_INJECTION64_PATH or CUPTI_INJECT\n");
		return 77;
	}
	if (!dir || !*dir)
		dir = GW_CRING_DEFAULT_DIR;
	/* 1010 launches in a few ms: trace them all unless told otherwise. */
	if (setenv("GPUWATCH_CUPTI_LIB", fake_path, 1) ||
	    setenv("GPUWATCH_CUPTI_KERNEL_RATE", "10000000", 0))
		return 1;
	if (fake_cupti_open(&fc, fake_path)) {
		fprintf(stderr, "inject_host: %s\n", dlerror());
		return 77;
	}
	if (!strcmp(scenario, "busy"))
		fc.set_subscribe_result(
			CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);

	/* What the driver does with CUDA_INJECTION64_PATH. */
	lib = dlopen(inject, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "inject_host: %s\n", dlerror());
		return 77;
	}
	*(void **)&init = dlsym(lib, "InitializeInjection");
	if (!init) {
		fprintf(stderr, "inject_host: %s has no InitializeInjection\n",
			inject);
		return 1;
	}
	init();

	ctx = fc.context_create(0);
	if (!strcmp(scenario, "basic"))
		play_basic(&fc, ctx);
	if (!strcmp(scenario, "steady")) {
		const struct fake_cupti_device h100 = FAKE_CUPTI_H100(0);

		fc.push_device(&h100);
		train_step(&fc, ctx, 1);
	}

	deadline = now_ns() + DEADLINE_NS;
	for (;;) {
		if (!r.hdr && !ring_find(&r, dir))
			(void)ring_map(&r);
		if (r.hdr) {
			ring_scan(&r);
			if (done(&r))
				break;
		}
		if (now_ns() > deadline) {
			fprintf(stderr,
				"inject_host: %s: ring %s not ready after 10 "
				"s: "
				"status %u, process record %d (seq %" PRIu64
				", contexts %" PRIu64 ", allocs %" PRIu64
				", frees %" PRIu64 ", oom %" PRIu64
				", records %" PRIu64 ")\n",
				scenario, r.hdr ? r.path : "(none)",
				r.hdr ? ring_status(&r) : 0u, r.have_process,
				r.process.seq, r.process.contexts_created,
				r.process.mem_allocs, r.process.mem_frees,
				r.process.oom, r.process.records);
			return 1;
		}
		pause_ms(2);
	}
	printf("ready %ld %s\n", (long)getpid(), r.path);
	fflush(stdout);
	if (!strcmp(scenario, "steady"))
		play_steady(&fc, ctx);
	for (;;) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		break;
	}
	fc.context_destroy(ctx);
	munmap(r.map, r.len);
	close(r.fd);
	free(r.buf);
	return 0;
}
