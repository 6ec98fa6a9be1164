// SPDX-License-Identifier: MIT
/*
 * test_inject_agg.c - the injection library's aggregation (src/inject/agg.c)
 * and ring writer (src/inject/ring.c), fed crafted CUDA 13 activity
 * records, written into a ring in a temporary directory and read back with
 * the agent's decoder: what the agent will show for kernels, copies,
 * memory, occupancy, API errors and sync time, and what happens when the
 * ring is full or the kernel table overflows.  The last test lets the real
 * libcupti.so.13 iterate a crafted buffer (skipped where it is absent).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <cupti_activity.h>

#include "collect/cupti/decode.h"
#include "inject/agg.h"
#include "inject/ring.h"

struct fx {
	char dir[64];
	struct gw_agg *a;
	struct gw_cring r;
	struct gw_cupti_proc *p;
	int fd; /* the reader's descriptor of the file */
	unsigned char *buf;
};

#define TAKE_CAP (1u << 20)

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/gw-agg-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(gw_agg_new(&f->a), 0);
	assert_int_equal(
		gw_cring_open(&f->r, f->dir, GW_CRING_DATA_MIN, "test"), 0);
	assert_int_equal(gw_cupti_proc_new(&f->p), 0);
	f->fd = open(f->r.path, O_RDWR | O_CLOEXEC);
	assert_true(f->fd >= 0);
	struct stat st;
	assert_int_equal(fstat(f->fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	f->buf = malloc(TAKE_CAP);
	assert_non_null(f->buf);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	unlink(f->r.path);
	gw_cring_close(&f->r, 0, 0);
	close(f->fd);
	rmdir(f->dir);
	gw_cupti_proc_free(f->p);
	gw_agg_free(f->a);
	free(f->buf);
	free(f);
	return 0;
}

/* What the agent does once a second: take the unread bytes, decode them. */
static size_t agent_pass(struct fx *f)
{
	struct gw_cupti_ring_info ri;
	size_t len = 0, applied = 0;
	int lost = 0;

	assert_int_equal(gw_cupti_ring_check(f->fd, &ri), 0);
	do {
		assert_int_equal(gw_cupti_ring_take(f->fd, &ri, f->buf,
						    TAKE_CAP, &len, &lost, 1),
				 0);
		assert_int_equal(lost, 0);
		applied += gw_cupti_decode(f->p, f->buf, len);
	} while (len > 0);
	assert_int_equal(f->p->st.bad, 0);
	return applied;
}

static void summary(struct fx *f)
{
	assert_int_equal(
		gw_agg_write(f->a, &f->r, GW_CUPTI_ST_OK, 130001, 1000), 0);
	agent_pass(f);
}

static const struct gw_cupti_kernel *find_kernel(struct fx *f, const char *name)
{
	for (unsigned int i = 0; i < f->p->nkernels; i++)
		if (strcmp(f->p->kernels[i].name, name) == 0)
			return &f->p->kernels[i];
	return NULL;
}

static const struct gw_cupti_api *find_api(struct fx *f, uint32_t domain,
					   uint32_t cbid, int32_t code)
{
	for (unsigned int i = 0; i < f->p->napis; i++)
		if (f->p->apis[i].domain == domain &&
		    f->p->apis[i].cbid == cbid && f->p->apis[i].code == code)
			return &f->p->apis[i];
	return NULL;
}

/* ---- crafted CUDA 13 records ---- */

static CUpti_ActivityKernel10 kernel_rec(const char *name, uint64_t dur,
					 uint32_t device, int32_t block_x,
					 uint16_t regs, int32_t smem_static,
					 int32_t smem_dyn)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = name;
	k.start = 1000000;
	k.end = k.start + dur;
	k.deviceId = device;
	k.gridX = 80;
	k.gridY = 2;
	k.gridZ = 1;
	k.blockX = block_x;
	k.blockY = 1;
	k.blockZ = 1;
	k.registersPerThread = regs;
	k.staticSharedMemory = smem_static;
	k.dynamicSharedMemory = smem_dyn;
	k.localMemoryPerThread = 16;
	return k;
}

static void feed_kernel(struct fx *f, const char *name, uint64_t dur)
{
	CUpti_ActivityKernel10 k = kernel_rec(name, dur, 0, 128, 32, 0, 0);

	assert_int_equal(gw_agg_record(f->a, (const CUpti_Activity *)&k), 1);
}

static CUpti_ActivityMemcpy6 memcpy_rec(uint8_t kind, uint64_t bytes,
					uint64_t dur)
{
	CUpti_ActivityMemcpy6 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = kind;
	m.bytes = bytes;
	m.start = 5000;
	m.end = 5000 + dur;
	return m;
}

static CUpti_ActivityMemset4 memset_rec(uint64_t bytes, uint64_t dur)
{
	CUpti_ActivityMemset4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.bytes = bytes;
	m.start = 10;
	m.end = 10 + dur;
	return m;
}

static CUpti_ActivityMemory4 memory_rec(int op, int kind, uint64_t bytes)
{
	CUpti_ActivityMemory4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
	m.memoryKind = (CUpti_ActivityMemoryKind)kind;
	m.bytes = bytes;
	m.address = 0x7f0000000000ull;
	return m;
}

/* H100-like limits (compute capability 9.0). */
static CUpti_ActivityDevice5 device_rec(uint32_t id)
{
	CUpti_ActivityDevice5 d;

	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.id = id;
	d.numThreadsPerWarp = 32;
	d.numMultiprocessors = 132;
	d.maxWarpsPerMultiprocessor = 64;
	d.maxBlocksPerMultiprocessor = 32;
	d.maxRegistersPerMultiprocessor = 65536;
	d.maxRegistersPerBlock = 65536;
	d.maxSharedMemoryPerMultiprocessor = 228u << 10;
	d.maxSharedMemoryPerBlock = 48u << 10;
	d.maxThreadsPerBlock = 1024;
	d.computeCapabilityMajor = 9;
	d.computeCapabilityMinor = 0;
	return d;
}

static CUpti_ActivityOverhead3 overhead_rec(uint64_t dur)
{
	CUpti_ActivityOverhead3 o;

	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.start = 100;
	o.end = 100 + dur;
	return o;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FEED(f, rec) gw_agg_record((f)->a, (const CUpti_Activity *)&(rec))

/* ---- tests ---- */

static void kernels_counted_per_name(void **state)
{
	struct fx *f = *state;

	feed_kernel(f, "_Z4axpyfPfS_", 100);
	feed_kernel(f, "_Z4axpyfPfS_", 1000);
	feed_kernel(f, "_Z4axpyfPfS_", 10000);
	feed_kernel(f, "_Z4tinyv", 50);
	summary(f);

	const struct gw_cupti_kernel *k = find_kernel(f, "_Z4axpyfPfS_");
	assert_non_null(k);
	assert_int_equal(k->count, 3);
	assert_int_equal(k->total_ns, 11100);
	assert_int_equal(k->min_ns, 100);
	assert_int_equal(k->max_ns, 10000);
	assert_true(k->name_hash == fnv1a("_Z4axpyfPfS_"));
	assert_true(fabs(k->est_count - 3.0) < 1e-9);
	assert_true(fabs(k->est_ns - 11100.0) < 1e-6);
	assert_int_equal(k->flags, 0);
	/* 100 ns in [96, 112), 1000 in [896, 1024), 10000 in [8192, 10240). */
	assert_int_equal(k->bins[gw_cring_kbin(100)], 1);
	assert_int_equal(k->bins[gw_cring_kbin(1000)], 1);
	assert_int_equal(k->bins[gw_cring_kbin(10000)], 1);
	assert_true(gw_cring_kbin_upper(gw_cring_kbin(100)) > 100);
	uint64_t sum = 0;
	for (unsigned int i = 0; i < GW_CRING_KBINS; i++)
		sum += k->bins[i];
	assert_int_equal(sum, 3);
	/* The last launch's configuration. */
	assert_int_equal(k->grid[0], 80);
	assert_int_equal(k->grid[1], 2);
	assert_int_equal(k->block[0], 128);
	assert_int_equal(k->registers, 32);
	assert_int_equal(k->local_mem, 16);

	const struct gw_cupti_kernel *t = find_kernel(f, "_Z4tinyv");
	assert_non_null(t);
	assert_int_equal(t->count, 1);
	assert_int_equal(t->bins[0], 1);
	assert_int_equal(f->p->process.records, 4);
	assert_int_equal(f->p->process.seq, 1);
	assert_int_equal(f->p->process.status, GW_CUPTI_ST_OK);
	assert_int_equal(f->p->process.cupti_version, 130001);

	/* Cumulative: a second summary carries the totals, not a delta. */
	feed_kernel(f, "_Z4axpyfPfS_", 20);
	summary(f);
	k = find_kernel(f, "_Z4axpyfPfS_");
	assert_int_equal(k->count, 4);
	assert_int_equal(k->min_ns, 20);
	assert_int_equal(k->total_ns, 11120);
	assert_int_equal(f->p->process.seq, 2);
}

static void estimates_scaled_by_ratio(void **state)
{
	struct fx *f = *state;

	gw_agg_set_ratio(f->a, 0.25);
	feed_kernel(f, "_Z6sampledv", 400);
	feed_kernel(f, "_Z6sampledv", 400);
	summary(f);
	const struct gw_cupti_kernel *k = find_kernel(f, "_Z6sampledv");
	assert_non_null(k);
	assert_int_equal(k->count, 2);
	assert_int_equal(k->total_ns, 800);
	assert_true(fabs(k->est_count - 8.0) < 1e-9);
	assert_true(fabs(k->est_ns - 3200.0) < 1e-6);
	assert_true(fabs(f->p->process.sampling_ratio - 0.25) < 1e-12);

	/* Back to tracing everything: later launches count once. */
	gw_agg_set_ratio(f->a, 1.0);
	feed_kernel(f, "_Z6sampledv", 400);
	summary(f);
	k = find_kernel(f, "_Z6sampledv");
	assert_true(fabs(k->est_count - 9.0) < 1e-9);
	assert_true(fabs(f->p->process.sampling_ratio - 1.0) < 1e-12);

	/* Never below 0.01, never above 1. */
	gw_agg_set_ratio(f->a, 0.0001);
	assert_true(fabs(gw_agg_ratio(f->a) - 0.01) < 1e-12);
	gw_agg_set_ratio(f->a, NAN);
	assert_true(fabs(gw_agg_ratio(f->a) - 0.01) < 1e-12);
	gw_agg_set_ratio(f->a, 7.0);
	assert_true(fabs(gw_agg_ratio(f->a) - 1.0) < 1e-12);
}

static void occupancy_from_device_limits(void **state)
{
	struct fx *f = *state;
	CUpti_ActivityDevice5 d = device_rec(0);
	/*
	 * 256 threads = 8 warps; 32 regs -> 1024 per warp -> 16 warps per
	 * sub-partition, 64 per SM -> 8 blocks; smem 16 KiB + 32 KiB + 1 KiB
	 * reserved = 50176 B -> 233472 / 50176 = 4 blocks; warps: 8 blocks.
	 * 4 blocks x 8 warps / 64 = 0.5.
	 */
	CUpti_ActivityKernel10 smem_bound =
		kernel_rec("_Z4smemv", 1000, 0, 256, 32, 16384, 32768);
	/*
	 * 128 threads = 4 warps; 40 regs -> 1280 per warp -> 12 warps per
	 * sub-partition, 48 per SM -> 12 blocks; smem 1 KiB reserved -> 228;
	 * warps 16; blocks 32.  12 x 4 / 64 = 0.75.
	 */
	CUpti_ActivityKernel10 reg_bound =
		kernel_rec("_Z4regsv", 1000, 0, 128, 40, 0, 0);
	/* 1024 threads, 16 regs: 32 warps -> 2 blocks by warps -> 1.0. */
	CUpti_ActivityKernel10 full =
		kernel_rec("_Z4fullv", 1000, 0, 1024, 16, 0, 0);
	CUpti_ActivityKernel10 unknown =
		kernel_rec("_Z4elsev", 1000, 7, 128, 32, 0, 0);

	/* A kernel seen before its device gets its occupancy once the device is known. */
	assert_int_equal(FEED(f, smem_bound), 1);
	summary(f);
	assert_true(find_kernel(f, "_Z4smemv")->occupancy < 0);

	assert_int_equal(FEED(f, d), 1);
	assert_int_equal(FEED(f, reg_bound), 1);
	assert_int_equal(FEED(f, full), 1);
	assert_int_equal(FEED(f, unknown), 1);
	summary(f);
	assert_true(fabsf(find_kernel(f, "_Z4smemv")->occupancy - 0.5f) <
		    1e-6f);
	assert_true(fabsf(find_kernel(f, "_Z4regsv")->occupancy - 0.75f) <
		    1e-6f);
	assert_true(fabsf(find_kernel(f, "_Z4fullv")->occupancy - 1.0f) <
		    1e-6f);
	assert_true(find_kernel(f, "_Z4elsev")->occupancy < 0);
	assert_int_equal(find_kernel(f, "_Z4elsev")->device, 7);
	assert_int_equal(find_kernel(f, "_Z4smemv")->static_smem, 16384);
	assert_int_equal(find_kernel(f, "_Z4smemv")->dynamic_smem, 32768);
}

static void copies_by_kind(void **state)
{
	struct fx *f = *state;
	static const struct {
		uint8_t cupti;
		unsigned int want;
	} kinds[] = {
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, GW_COPY_HTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, GW_COPY_HTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, GW_COPY_DTOH },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, GW_COPY_DTOH },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, GW_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, GW_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, GW_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, GW_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, GW_COPY_HTOH },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, GW_COPY_PTOP },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, GW_COPY_OTHER },
		{ 200, GW_COPY_OTHER },
	};
	uint64_t want_count[GW_COPY_KINDS] = { 0 },
		 want_bytes[GW_COPY_KINDS] = { 0 };
	uint64_t want_ns[GW_COPY_KINDS] = { 0 };

	for (unsigned int i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		CUpti_ActivityMemcpy6 m =
			memcpy_rec(kinds[i].cupti, 1000u + i, 10u + i);

		assert_int_equal(FEED(f, m), 1);
		want_count[kinds[i].want]++;
		want_bytes[kinds[i].want] += 1000u + i;
		want_ns[kinds[i].want] += 10u + i;
	}
	CUpti_ActivityMemset4 s = memset_rec(4096, 77);
	assert_int_equal(FEED(f, s), 1);
	want_count[GW_COPY_MEMSET]++;
	want_bytes[GW_COPY_MEMSET] += 4096;
	want_ns[GW_COPY_MEMSET] += 77;
	summary(f);

	assert_true(f->p->have_memcpy);
	for (unsigned int k = 0; k < GW_COPY_KINDS; k++) {
		const struct gw_crec_copy *c = &f->p->memcpy.kind[k];

		if (c->count != want_count[k] || c->bytes != want_bytes[k] ||
		    c->total_ns != want_ns[k])
			fail_msg("kind %u: %llu/%llu/%llu, want %llu/%llu/%llu",
				 k, (unsigned long long)c->count,
				 (unsigned long long)c->bytes,
				 (unsigned long long)c->total_ns,
				 (unsigned long long)want_count[k],
				 (unsigned long long)want_bytes[k],
				 (unsigned long long)want_ns[k]);
	}
}

static void memory_live_and_peak(void **state)
{
	struct fx *f = *state;
	CUpti_ActivityMemory4 recs[] = {
		memory_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
			   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1000),
		memory_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
			   CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 500),
		/* Pinned host memory is not device memory. */
		memory_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
			   CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 99999),
		memory_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
			   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1000),
	};

	for (unsigned int i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
		assert_int_equal(FEED(f, recs[i]), 1);
	summary(f);
	assert_int_equal(f->p->process.mem_live_bytes, 500);
	assert_int_equal(f->p->process.mem_peak_bytes, 1500);
	assert_int_equal(f->p->process.mem_allocs, 2);
	assert_int_equal(f->p->process.mem_frees, 1);

	/* Freeing what was allocated before we looked never goes below zero. */
	CUpti_ActivityMemory4 big =
		memory_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
			   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1u << 30);
	assert_int_equal(FEED(f, big), 1);
	summary(f);
	assert_int_equal(f->p->process.mem_live_bytes, 0);
	assert_int_equal(f->p->process.mem_peak_bytes, 1500);
	assert_int_equal(f->p->process.mem_frees, 2);
}

static void counters_overhead_apis_sync(void **state)
{
	struct fx *f = *state;
	CUpti_ActivityOverhead3 o = overhead_rec(1234);

	assert_int_equal(FEED(f, o), 1);
	gw_agg_context(f->a, 1);
	gw_agg_context(f->a, 1);
	gw_agg_context(f->a, 0);
	gw_agg_oom(f->a);
	gw_agg_callback(f->a);
	gw_agg_callback(f->a);
	gw_agg_muted(f->a);
	gw_agg_records_dropped(f->a, 17);
	assert_int_equal(gw_agg_api_error(f->a, GW_CRING_API_RUNTIME, 20, 2,
					  "cudaMalloc"),
			 0);
	assert_int_equal(
		gw_agg_api_error(f->a, GW_CRING_API_RUNTIME, 20, 2, "ignored"),
		0);
	assert_int_equal(gw_agg_api_error(f->a, GW_CRING_API_DRIVER, 243, 2,
					  "cuMemAlloc"),
			 0);
	assert_int_equal(
		gw_agg_api_error(f->a, GW_CRING_API_RUNTIME, 20, 0, "ok"),
		-EINVAL);
	int slot = gw_agg_sync_slot(f->a, GW_CRING_API_RUNTIME, 165,
				    "cudaDeviceSynchronize");
	assert_true(slot >= 0);
	assert_int_equal(gw_agg_sync_slot(f->a, GW_CRING_API_RUNTIME, 165, "x"),
			 slot);
	gw_agg_sync(f->a, slot, 300);
	gw_agg_sync(f->a, slot, 700);
	summary(f);

	const struct gw_crec_process *pr = &f->p->process;
	assert_int_equal(pr->overhead_ns, 1234);
	assert_int_equal(pr->contexts_created, 2);
	assert_int_equal(pr->contexts_destroyed, 1);
	assert_int_equal(pr->oom, 1);
	assert_int_equal(pr->callbacks, 2);
	assert_int_equal(pr->apis_muted, 1);
	assert_int_equal(pr->records_dropped, 17);

	const struct gw_cupti_api *e = find_api(f, GW_CRING_API_RUNTIME, 20, 2);
	assert_non_null(e);
	assert_int_equal(e->count, 2);
	assert_int_equal(e->sync, 0);
	assert_string_equal(e->name, "cudaMalloc");
	e = find_api(f, GW_CRING_API_DRIVER, 243, 2);
	assert_non_null(e);
	assert_int_equal(e->count, 1);
	e = find_api(f, GW_CRING_API_RUNTIME, 165, 0);
	assert_non_null(e);
	assert_int_equal(e->sync, 1);
	assert_int_equal(e->count, 2);
	assert_int_equal(e->total_ns, 1000);
	assert_string_equal(e->name, "cudaDeviceSynchronize");

	/* The API table is bounded: one more distinct error is counted, not kept. */
	for (int i = 0; i < (int)GW_AGG_APIS - 2; i++)
		assert_int_equal(gw_agg_api_error(f->a, GW_CRING_API_DRIVER, 1,
						  100 + i, "cuX"),
				 0);
	assert_int_equal(
		gw_agg_api_error(f->a, GW_CRING_API_DRIVER, 1, 99999, "cuX"),
		-ENOSPC);
	summary(f);
	assert_int_equal(f->p->process.api_overflow, 1);
	assert_int_equal(f->p->napis, GW_AGG_APIS + 1u); /* + the sync entry */
	assert_int_equal(f->p->st.overflow, 0);
}

static void unknown_kinds_ignored(void **state)
{
	struct fx *f = *state;
	CUpti_ActivityKernel10 k = kernel_rec("_Z1kv", 10, 0, 32, 8, 0, 0);

	k.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	assert_int_equal(FEED(f, k), 0);
	k.kind = (CUpti_ActivityKind)9999;
	assert_int_equal(FEED(f, k), 0);
	assert_int_equal(gw_agg_record(f->a, NULL), 0);
	assert_int_equal(gw_agg_ignored(f->a), 2);
	summary(f);
	assert_int_equal(f->p->process.records, 0);
	assert_int_equal(f->p->nkernels, 0);
	assert_int_equal(gw_agg_traced_kernels(f->a), 0);
}

static void kernel_table_overflow(void **state)
{
	struct fx *f = *state;
	char name[64];
	unsigned int total = 1100;

	for (unsigned int i = 0; i < total; i++) {
		snprintf(name, sizeof(name), "_Z6kernel%uv", i);
		feed_kernel(f, name, 100 + i);
	}
	/* A known kernel still finds its own entry after the table is full. */
	feed_kernel(f, "_Z6kernel5v", 1);
	assert_int_equal(gw_agg_traced_kernels(f->a), total + 1);

	/* More than one 64 KiB ring holds: several agent passes. */
	for (int pass = 0; pass < 8; pass++) {
		int refused = gw_agg_write(f->a, &f->r, GW_CUPTI_ST_OK, 0, 1);

		assert_true(refused >= 0);
		agent_pass(f);
		if (refused == 0)
			break;
	}
	assert_int_equal(f->p->st.overflow, 0);
	assert_int_equal(f->p->nkernels, GW_AGG_KERNELS + 1u);
	const struct gw_cupti_kernel *o = find_kernel(f, "(other)");
	assert_non_null(o);
	assert_true(o->flags & GW_CRING_KF_OTHER);
	assert_int_equal(o->count, total - GW_AGG_KERNELS);
	assert_int_equal(f->p->process.kernels_overflow,
			 total - GW_AGG_KERNELS);
	assert_int_equal(find_kernel(f, "_Z6kernel5v")->count, 2);
	assert_int_equal(find_kernel(f, "_Z6kernel5v")->min_ns, 1);
	uint64_t n = 0;
	for (unsigned int i = 0; i < f->p->nkernels; i++)
		n += f->p->kernels[i].count;
	assert_int_equal(n, total + 1);
}

static void long_name_truncated(void **state)
{
	struct fx *f = *state;
	char *name = malloc(3000);

	assert_non_null(name);
	memset(name, 'x', 2999);
	name[0] = '_';
	name[2999] = '\0';
	feed_kernel(f, name, 10);
	summary(f);
	assert_int_equal(f->p->nkernels, 1);
	const struct gw_cupti_kernel *k = &f->p->kernels[0];
	assert_true(k->flags & GW_CRING_KF_TRUNCATED);
	assert_true(k->name_hash == fnv1a(name));
	assert_int_equal(strlen(k->name), GW_CRING_NAME_MAX - 1u);
	assert_memory_equal(k->name, name, GW_CRING_NAME_MAX - 1u);
	free(name);
}

static void ring_full_drops_without_blocking(void **state)
{
	struct fx *f = *state;
	char name[64];
	struct gw_cring_hdr *h = f->r.hdr; /* the writer's mapping */

	for (unsigned int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "_Z4fill%uv", i);
		feed_kernel(f, name, 100 + i);
	}
	/* No agent reads: every write returns at once, what did not fit is counted. */
	int refused = gw_agg_write(f->a, &f->r, GW_CUPTI_ST_OK, 0, 1);
	assert_true(refused > 0);
	assert_int_equal(h->dropped, (uint64_t)refused);
	uint64_t head = h->head;
	int again = gw_agg_write(f->a, &f->r, GW_CUPTI_ST_OK, 0, 2);
	assert_true(again > 0);
	assert_true(gw_cring_free(&f->r) < 8192);
	assert_true(h->head - h->tail <= h->data_size);
	assert_true(h->head >= head);
	assert_int_equal(h->dropped, (uint64_t)(refused + again));

	/* Once the agent catches up, the refused entries follow (they stay pending). */
	for (int pass = 0; pass < 16; pass++) {
		agent_pass(f);
		if (gw_agg_write(f->a, &f->r, GW_CUPTI_ST_OK, 0, 3) == 0)
			break;
	}
	agent_pass(f);
	assert_int_equal(f->p->nkernels, 500);
	for (unsigned int i = 0; i < 500; i += 99) {
		snprintf(name, sizeof(name), "_Z4fill%uv", i);
		assert_int_equal(find_kernel(f, name)->count, 1);
	}
	/* Nothing is pending any more: a summary is PROCESS + MEMCPY only. */
	uint64_t before = h->head;
	assert_int_equal(gw_agg_write(f->a, &f->r, GW_CUPTI_ST_OK, 0, 4), 0);
	assert_int_equal(h->head - before,
			 sizeof(struct gw_crec_process) +
				 sizeof(struct gw_crec_memcpy));
}

static void ring_wraps_with_padding(void **state)
{
	struct fx *f = *state;
	struct gw_cring_hdr *h = f->r.hdr; /* the writer's mapping */

	feed_kernel(f, "_Z4wrapv", 5);
	/* Many summaries through a 64 KiB ring: head passes the end several times. */
	for (int i = 0; i < 600; i++) {
		feed_kernel(f, "_Z4wrapv", 5);
		assert_int_equal(
			gw_agg_write(f->a, &f->r, GW_CUPTI_ST_OK, 0, 1), 0);
		agent_pass(f);
	}
	assert_true(h->head > 4ull * h->data_size);
	assert_int_equal(h->dropped, 0);
	assert_int_equal(find_kernel(f, "_Z4wrapv")->count, 601);
	assert_int_equal(f->p->process.seq, 600);
}

static void ring_header_and_misuse(void **state)
{
	struct fx *f = *state;
	struct gw_cupti_ring_info ri;
	struct gw_cring other;
	uint64_t rec[2] = { 0, 0 };

	assert_int_equal(gw_cupti_ring_check(f->fd, &ri), 0);
	assert_int_equal(ri.pid, (uint32_t)getpid());
	assert_int_equal(ri.data_size, GW_CRING_DATA_MIN);
	assert_int_equal(ri.status, GW_CUPTI_ST_STARTING);
	assert_string_equal(ri.lib_version, "test");
	assert_true(ri.start_ticks > 0);
	assert_true(ri.start_ticks == gw_cring_start_ticks());
	assert_true(ri.pidns_ino != 0);
	assert_non_null(strstr(f->r.path, GW_CRING_PREFIX));
	gw_cring_set_status(&f->r, GW_CUPTI_ST_BUSY);
	gw_cring_set_flags(&f->r, GW_CRING_F_EXITED);
	assert_int_equal(gw_cupti_ring_check(f->fd, &ri), 0);
	assert_int_equal(ri.status, GW_CUPTI_ST_BUSY);
	assert_int_equal(ri.flags, GW_CRING_F_EXITED);

	/* Bad records are refused, not written. */
	assert_int_equal(gw_cring_append(&f->r, rec, 16),
			 -EINVAL); /* size field 0 */
	memcpy(rec, &(struct gw_crec){ .size = 12 }, sizeof(struct gw_crec));
	assert_int_equal(gw_cring_append(&f->r, rec, 12), -EINVAL);
	/* Sizes that are not a power of two, and the same process twice. */
	assert_int_equal(gw_cring_open(&other, f->dir, 100000, "x"), -EINVAL);
	assert_int_equal(gw_cring_open(&other, f->dir, GW_CRING_DATA_MIN, "x"),
			 0);
	assert_string_equal(other.path,
			    f->r.path); /* replaced: same pid and start */
	gw_cring_close(&other, 0, 0);
	gw_cring_close(&other, 0, 0); /* twice: harmless */
	/* A reader seen recently keeps the file at close; a stale one does not. */
	struct gw_cring r3;
	assert_int_equal(gw_cring_open(&r3, f->dir, GW_CRING_DATA_MIN, "x"), 0);
	r3.hdr->reader_seen_ns = 100ull * 1000000000ull;
	gw_cring_close(&r3, 1, 105ull * 1000000000ull);
	assert_int_equal(access(f->r.path, F_OK), 0);
	assert_int_equal(gw_cring_open(&r3, f->dir, GW_CRING_DATA_MIN, "x"), 0);
	r3.hdr->reader_seen_ns = 100ull * 1000000000ull;
	gw_cring_close(&r3, 1, 111ull * 1000000000ull);
	assert_int_equal(access(f->r.path, F_OK), -1);
	/* The fixture's mapping still works; recreate the name for teardown. */
}

/* ---- the real libcupti iterating a crafted buffer ---- */

static void real_libcupti_iterates_crafted_buffer(void **state)
{
	struct fx *f = *state;
	void *lib =
		dlopen(REAL_CUPTI_DIR "/libcupti.so.13", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		print_message("no libcupti.so.13 in " REAL_CUPTI_DIR
			      ": skipped\n");
		skip();
	}
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	void *sym = dlsym(lib, "cuptiActivityGetNextRecord");
	assert_non_null(sym);
	memcpy(&next, &sym, sizeof(sym));

	static uint8_t buf[1 << 16] __attribute__((aligned(8)));
	size_t len = 0;
	CUpti_ActivityDevice5 d = device_rec(0);
	CUpti_ActivityKernel10 k1 =
		kernel_rec("_Z4realv", 1000, 0, 128, 40, 0, 0);
	CUpti_ActivityKernel10 k2 =
		kernel_rec("_Z4realv", 3000, 0, 128, 40, 0, 0);
	CUpti_ActivityMemcpy6 m =
		memcpy_rec(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 4096, 50);
	CUpti_ActivityMemset4 s = memset_rec(512, 5);
	CUpti_ActivityMemory4 a =
		memory_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
			   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1 << 20);
	CUpti_ActivityOverhead3 o = overhead_rec(99);
#define PUT(x)                                                                 \
	do {                                                                   \
		memcpy(buf + len, &(x), sizeof(x));                            \
		len += sizeof(x);                                              \
	} while (0)
	PUT(d);
	PUT(k1);
	PUT(k2);
	PUT(m);
	PUT(s);
	PUT(a);
	PUT(o);
#undef PUT
	CUpti_Activity *rec = NULL;
	unsigned int n = 0, used = 0;
	CUptiResult r;
	while ((r = next(buf, len, &rec)) == CUPTI_SUCCESS) {
		n++;
		used += (unsigned int)gw_agg_record(f->a, rec);
	}
	assert_int_equal(r, CUPTI_ERROR_MAX_LIMIT_REACHED);
	assert_int_equal(n, 7);
	assert_int_equal(used, 7);
	summary(f);
	const struct gw_cupti_kernel *k = find_kernel(f, "_Z4realv");
	assert_non_null(k);
	assert_int_equal(k->count, 2);
	assert_int_equal(k->total_ns, 4000);
	assert_int_equal(k->min_ns, 1000);
	assert_int_equal(k->max_ns, 3000);
	assert_true(fabsf(k->occupancy - 0.75f) < 1e-6f);
	assert_int_equal(f->p->memcpy.kind[GW_COPY_DTOH].bytes, 4096);
	assert_int_equal(f->p->memcpy.kind[GW_COPY_DTOH].total_ns, 50);
	assert_int_equal(f->p->memcpy.kind[GW_COPY_MEMSET].bytes, 512);
	assert_int_equal(f->p->process.mem_live_bytes, 1 << 20);
	assert_int_equal(f->p->process.overhead_ns, 99);
	assert_int_equal(f->p->process.records, 7);
	/* Not closed: libcupti keeps allocations that only its globals reach. */
}

/* Launch handles: learnt, aliased, written once, then again every
 * GW_CRING_KFUNC_REPEAT summaries for a reader that came late. */
static void launch_handles_repeated(void **state)
{
	struct fx *f = *state;
	const char *gemm = "_Z4gemmILi128EEvPKfS1_Pfiii";
	struct gw_cupti_proc *late, *keep = f->p;
	unsigned int i;

	gw_agg_kfunc(f->a, GW_CRING_KFUNC_CUFUNCTION, 0x1000, gemm);
	gw_agg_kfunc_alias(f->a, GW_CRING_KFUNC_CUFUNCTION, 0x2000, 0x1000);
	/* Of a handle never learnt: nothing. */
	gw_agg_kfunc_alias(f->a, GW_CRING_KFUNC_CUFUNCTION, 0x3000, 0x9999);
	gw_agg_kfunc(f->a, GW_CRING_KFUNC_CUFUNCTION, 0, gemm);
	summary(f);
	assert_int_equal(f->p->nkfuncs, 2);
	for (i = 0; i < 2; i++)
		assert_int_equal(f->p->kfuncs[i].name_hash, fnv1a(gemm));

	/* A reader starting now sees nothing until the repeat. */
	assert_int_equal(gw_cupti_proc_new(&late), 0);
	f->p = late;
	for (i = 2; i < GW_CRING_KFUNC_REPEAT; i++) {
		summary(f);
		assert_int_equal(late->nkfuncs, 0);
	}
	summary(f);
	assert_int_equal(late->process.seq, GW_CRING_KFUNC_REPEAT);
	assert_int_equal(late->nkfuncs, 2);
	f->p = keep;
	gw_cupti_proc_free(late);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
		T(kernels_counted_per_name),
		T(estimates_scaled_by_ratio),
		T(occupancy_from_device_limits),
		T(copies_by_kind),
		T(memory_live_and_peak),
		T(counters_overhead_apis_sync),
		T(unknown_kinds_ignored),
		T(kernel_table_overflow),
		T(long_name_truncated),
		T(ring_full_drops_without_blocking),
		T(ring_wraps_with_padding),
		T(ring_header_and_misuse),
		T(real_libcupti_iterates_crafted_buffer),
		T(launch_handles_repeated),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
