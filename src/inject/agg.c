/* SPDX-License-Identifier: MIT */
/*
 * agg.c - aggregation of CUPTI activity records and API callbacks into the
 * cumulative records of include/gpuwatch/cupti_ring.h; see agg.h.
 *
 * Theoretical occupancy is the standard calculation from the launch
 * configuration of the last launch and the limits of its device (DEVICE
 * record): blocks per SM are the least of the block limit, the warp limit
 * (warps per block = threads rounded up to warps), the register limit
 * (registers per warp rounded up to 256, allocated per SM sub-partition)
 * and the shared-memory limit (static + dynamic + 1 KiB reserved per block
 * from compute capability 8.0, rounded up to 256 bytes, 128 from 8.0);
 * occupancy = blocks * warps per block / max warps per SM.  It is computed
 * when the entry is written, so a DEVICE record that arrives after the
 * kernel's still counts; -1 while the device is unknown.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject/agg.h"

#define KSLOTS 2048u /* hash slots (a power of two), load <= 1/2 */
_Static_assert(KSLOTS >= 2u * GW_AGG_KERNELS, "hash load");
#define OTHER_NAME "(other)"

struct kentry {
	uint64_t hash;
	uint64_t count, total_ns, min_ns, max_ns;
	double est_count, est_ns;
	uint32_t flags, device;
	int32_t grid[3], block[3];
	uint32_t registers, static_smem, dynamic_smem, local_mem;
	int dirty;
	uint16_t name_len; /* with the NUL */
	uint64_t bins[GW_CRING_KBINS];
	char name[GW_CRING_NAME_MAX];
};

struct device {
	int used;
	uint32_t id;
	uint32_t warp_size, max_warps, max_blocks;
	uint32_t regs_sm, regs_block, smem_sm, cc_major, cc_minor;
};

struct api_entry {
	uint32_t domain, cbid;
	int32_t code;
	int dirty;
	uint64_t count;
	char name[GW_CRING_API_NAME_MAX];
};

struct sync_entry {
	uint32_t domain, cbid;
	uint64_t count, total_ns; /* atomics */
	uint64_t written;	  /* count last written (summary only) */
	char name[GW_CRING_API_NAME_MAX];
};

struct kfunc {
	uint64_t handle, hash;
	uint32_t kind;
	int dirty;
};

struct gw_agg {
	pthread_mutex_t lock; /* everything below up to api_lock */
	struct kentry *k;     /* GW_AGG_KERNELS + 1: the last is "other" */
	unsigned int nk;
	uint16_t slot[KSLOTS]; /* 0: empty, else index + 1 */
	struct gw_crec_copy copy[GW_COPY_KINDS];
	struct device dev[GW_AGG_DEVICES];
	uint64_t mem_live, mem_peak, mem_allocs, mem_frees;
	uint64_t records, kernels_overflow, overhead_ns, traced;
	uint64_t seq;
	double ratio; /* atomic (set/read through helpers) */
	uint64_t scratch[GW_CREC_MAX / 8]; /* one serialised record */

	pthread_mutex_t api_lock;
	struct api_entry api[GW_AGG_APIS];
	unsigned int napi;

	/* Lock-free counters. */
	uint64_t ignored;
	uint64_t api_overflow;
	uint64_t records_dropped;
	uint64_t contexts_created, contexts_destroyed, oom, callbacks;
	uint32_t apis_muted;
	unsigned int nsync;
	struct sync_entry sync[GW_AGG_SYNCS];

	pthread_mutex_t kf_lock; /* the launch handles */
	struct kfunc kf[GW_AGG_KFUNCS];
	unsigned int nkf;
};

/* ---- lifecycle ---- */

int gw_agg_new(struct gw_agg **out)
{
	struct gw_agg *a;

	if (!out)
		return -EINVAL;
	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->k = calloc(GW_AGG_KERNELS + 1u, sizeof(*a->k));
	if (!a->k)
		goto err_free;
	if (pthread_mutex_init(&a->lock, NULL) != 0)
		goto err_k;
	if (pthread_mutex_init(&a->api_lock, NULL) != 0)
		goto err_lock;
	if (pthread_mutex_init(&a->kf_lock, NULL) != 0)
		goto err_api;
	a->ratio = 1.0;
	struct kentry *o = &a->k[GW_AGG_KERNELS];
	o->flags = GW_CRING_KF_OTHER;
	o->name_len = (uint16_t)sizeof(OTHER_NAME);
	memcpy(o->name, OTHER_NAME, sizeof(OTHER_NAME));
	*out = a;
	return 0;

err_api:
	pthread_mutex_destroy(&a->api_lock);
err_lock:
	pthread_mutex_destroy(&a->lock);
err_k:
	free(a->k);
err_free:
	free(a);
	return -ENOMEM;
}

void gw_agg_free(struct gw_agg *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->kf_lock);
	pthread_mutex_destroy(&a->api_lock);
	pthread_mutex_destroy(&a->lock);
	free(a->k);
	free(a);
}

void gw_agg_set_ratio(struct gw_agg *a, double ratio)
{
	if (!a)
		return;
	if (!(ratio >= GW_AGG_RATIO_MIN)) /* NaN too */
		ratio = GW_AGG_RATIO_MIN;
	if (ratio > 1.0)
		ratio = 1.0;
	__atomic_store(&a->ratio, &ratio, __ATOMIC_RELAXED);
}

double gw_agg_ratio(struct gw_agg *a)
{
	double r = 1.0;

	if (a)
		__atomic_load(&a->ratio, &r, __ATOMIC_RELAXED);
	return r;
}

/* ---- kernels ---- */

static uint64_t fnv1a(const char *s, size_t *len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t n = 0;

	for (; s[n]; n++) {
		h ^= (unsigned char)s[n];
		h *= 0x100000001b3ull;
	}
	*len = n;
	return h;
}

static struct kentry *kernel_entry(struct gw_agg *a, const char *name)
{
	size_t len;
	uint64_t h = fnv1a(name, &len);
	unsigned int i = (unsigned int)(h ^ (h >> 32)) & (KSLOTS - 1u);

	for (unsigned int probe = 0; probe < KSLOTS; probe++) {
		uint16_t s = a->slot[i];

		if (s == 0)
			break;
		if (a->k[s - 1u].hash == h)
			return &a->k[s - 1u];
		i = (i + 1u) & (KSLOTS - 1u);
	}
	if (a->nk >= GW_AGG_KERNELS) {
		a->kernels_overflow++;
		return &a->k[GW_AGG_KERNELS];
	}
	struct kentry *e = &a->k[a->nk];
	a->slot[i] = (uint16_t)(a->nk + 1u);
	a->nk++;
	e->hash = h;
	if (len >= GW_CRING_NAME_MAX) {
		len = GW_CRING_NAME_MAX - 1u;
		e->flags |= GW_CRING_KF_TRUNCATED;
	}
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->name_len = (uint16_t)(len + 1u);
	return e;
}

static void on_kernel(struct gw_agg *a, const CUpti_ActivityKernel10 *r,
		      double ratio)
{
	const char *name = r->name ? r->name : "(unknown)";
	struct kentry *e = kernel_entry(a, name);
	uint64_t dur = r->end > r->start ? r->end - r->start : 0;

	if (e->count == 0 || dur < e->min_ns)
		e->min_ns = dur;
	if (dur > e->max_ns)
		e->max_ns = dur;
	e->count++;
	e->total_ns += dur;
	e->est_count += 1.0 / ratio;
	e->est_ns += (double)dur / ratio;
	e->bins[gw_cring_kbin(dur)]++;
	e->device = r->deviceId;
	e->grid[0] = r->gridX;
	e->grid[1] = r->gridY;
	e->grid[2] = r->gridZ;
	e->block[0] = r->blockX;
	e->block[1] = r->blockY;
	e->block[2] = r->blockZ;
	e->registers = r->registersPerThread;
	e->static_smem =
		r->staticSharedMemory > 0 ? (uint32_t)r->staticSharedMemory : 0;
	e->dynamic_smem = r->dynamicSharedMemory > 0
				  ? (uint32_t)r->dynamicSharedMemory
				  : 0;
	e->local_mem = r->localMemoryPerThread;
	e->dirty = 1;
	a->traced++;
}

static const struct device *find_device(const struct gw_agg *a, uint32_t id)
{
	for (unsigned int i = 0; i < GW_AGG_DEVICES; i++)
		if (a->dev[i].used && a->dev[i].id == id)
			return &a->dev[i];
	return NULL;
}

static uint64_t round_up(uint64_t v, uint64_t unit)
{
	return (v + unit - 1u) / unit * unit;
}

static float occupancy(const struct device *d, const struct kentry *e)
{
	if (!d || d->max_warps == 0 || d->max_blocks == 0)
		return -1.0f;
	int64_t threads = (int64_t)e->block[0] * e->block[1] * e->block[2];
	uint32_t warp = d->warp_size ? d->warp_size : 32u;
	if (e->block[0] <= 0 || e->block[1] <= 0 || e->block[2] <= 0 ||
	    threads > (1 << 20))
		return -1.0f;
	uint64_t wpb = ((uint64_t)threads + warp - 1u) / warp;
	uint64_t blocks = d->max_blocks;
	uint64_t by_warps = d->max_warps / wpb;

	if (by_warps < blocks)
		blocks = by_warps;
	if (e->registers > 0 && d->regs_sm > 0) {
		uint64_t per_warp =
			round_up((uint64_t)e->registers * warp, 256u);
		uint64_t subp =
			(d->cc_major == 6 && d->cc_minor == 0) ? 2u : 4u;
		uint64_t warps_sm = (d->regs_sm / subp / per_warp) * subp;
		uint64_t by_regs = warps_sm / wpb;

		if (d->regs_block && per_warp * wpb > d->regs_block)
			by_regs = 0;
		if (by_regs < blocks)
			blocks = by_regs;
	}
	uint64_t smem = (uint64_t)e->static_smem + e->dynamic_smem;
	if (d->cc_major >= 8)
		smem += 1024u;
	if (smem > 0 && d->smem_sm > 0) {
		smem = round_up(smem, d->cc_major >= 8 ? 128u : 256u);
		uint64_t by_smem = d->smem_sm / smem;

		if (by_smem < blocks)
			blocks = by_smem;
	}
	double occ = (double)(blocks * wpb) / (double)d->max_warps;
	return occ > 1.0 ? 1.0f : (float)occ;
}

/* ---- other activity ---- */

static unsigned int copy_kind(uint8_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		return GW_COPY_HTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		return GW_COPY_DTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
		return GW_COPY_DTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
		return GW_COPY_HTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		return GW_COPY_PTOP;
	default:
		return GW_COPY_OTHER;
	}
}

static void add_copy(struct gw_agg *a, unsigned int kind, uint64_t bytes,
		     uint64_t start, uint64_t end)
{
	struct gw_crec_copy *c = &a->copy[kind];

	c->count++;
	c->bytes += bytes;
	c->total_ns += end > start ? end - start : 0;
}

static void on_memory(struct gw_agg *a, const CUpti_ActivityMemory4 *r)
{
	/* Host allocations (pageable, pinned) are not device memory. */
	if (r->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
	    r->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED)
		return;
	if (r->memoryOperationType ==
	    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
		a->mem_allocs++;
		a->mem_live += r->bytes;
		if (a->mem_live > a->mem_peak)
			a->mem_peak = a->mem_live;
	} else if (r->memoryOperationType ==
		   CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
		a->mem_frees++;
		/* Freed memory allocated before we subscribed: never below 0. */
		a->mem_live -= r->bytes < a->mem_live ? r->bytes : a->mem_live;
	}
}

static void on_device(struct gw_agg *a, const CUpti_ActivityDevice5 *r)
{
	struct device *d = (struct device *)find_device(a, r->id);

	for (unsigned int i = 0; !d && i < GW_AGG_DEVICES; i++)
		if (!a->dev[i].used)
			d = &a->dev[i];
	if (!d)
		return;
	d->used = 1;
	d->id = r->id;
	d->warp_size = r->numThreadsPerWarp;
	d->max_warps = r->maxWarpsPerMultiprocessor;
	d->max_blocks = r->maxBlocksPerMultiprocessor;
	d->regs_sm = r->maxRegistersPerMultiprocessor;
	d->regs_block = r->maxRegistersPerBlock;
	d->smem_sm = r->maxSharedMemoryPerMultiprocessor;
	d->cc_major = r->computeCapabilityMajor;
	d->cc_minor = r->computeCapabilityMinor;
	/* Kernels of this device get their occupancy at the next write. */
	for (unsigned int i = 0; i <= GW_AGG_KERNELS; i++)
		if (a->k[i].count && a->k[i].device == r->id)
			a->k[i].dirty = 1;
}

int gw_agg_record(struct gw_agg *a, const CUpti_Activity *rec)
{
	int used = 1;

	if (!a || !rec)
		return 0;
	double ratio = gw_agg_ratio(a);
	pthread_mutex_lock(&a->lock);
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		on_kernel(a, (const CUpti_ActivityKernel10 *)(const void *)rec,
			  ratio);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *r = (const void *)rec;
		add_copy(a, copy_kind(r->copyKind), r->bytes, r->start, r->end);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *r = (const void *)rec;
		add_copy(a, GW_COPY_MEMSET, r->bytes, r->start, r->end);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		on_memory(a, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_DEVICE:
		on_device(a, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		const CUpti_ActivityOverhead3 *r = (const void *)rec;
		a->overhead_ns += r->end > r->start ? r->end - r->start : 0;
		break;
	}
	default:
		used = 0;
		break;
	}
	if (used)
		a->records++;
	pthread_mutex_unlock(&a->lock);
	if (!used)
		__atomic_fetch_add(&a->ignored, 1, __ATOMIC_RELAXED);
	return used;
}

uint64_t gw_agg_traced_kernels(struct gw_agg *a)
{
	uint64_t n;

	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	n = a->traced;
	pthread_mutex_unlock(&a->lock);
	return n;
}

uint64_t gw_agg_ignored(struct gw_agg *a)
{
	return a ? __atomic_load_n(&a->ignored, __ATOMIC_RELAXED) : 0;
}

/* ---- callback counters ---- */

void gw_agg_records_dropped(struct gw_agg *a, uint64_t n)
{
	if (a)
		__atomic_fetch_add(&a->records_dropped, n, __ATOMIC_RELAXED);
}

void gw_agg_context(struct gw_agg *a, int created)
{
	if (a)
		__atomic_fetch_add(created ? &a->contexts_created
					   : &a->contexts_destroyed,
				   1, __ATOMIC_RELAXED);
}

void gw_agg_oom(struct gw_agg *a)
{
	if (a)
		__atomic_fetch_add(&a->oom, 1, __ATOMIC_RELAXED);
}

void gw_agg_callback(struct gw_agg *a)
{
	if (a)
		__atomic_fetch_add(&a->callbacks, 1, __ATOMIC_RELAXED);
}

void gw_agg_muted(struct gw_agg *a)
{
	if (a)
		__atomic_fetch_add(&a->apis_muted, 1, __ATOMIC_RELAXED);
}

static void copy_name(char *dst, const char *src)
{
	size_t n = src ? strnlen(src, GW_CRING_API_NAME_MAX - 1u) : 0;

	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

int gw_agg_api_error(struct gw_agg *a, uint32_t domain, uint32_t cbid,
		     int32_t code, const char *name)
{
	int err = 0;

	if (!a || code == 0)
		return -EINVAL;
	pthread_mutex_lock(&a->api_lock);
	struct api_entry *e = NULL;
	for (unsigned int i = 0; i < a->napi; i++) {
		struct api_entry *x = &a->api[i];
		if (x->domain == domain && x->cbid == cbid && x->code == code) {
			e = x;
			break;
		}
	}
	if (!e) {
		if (a->napi >= GW_AGG_APIS) {
			__atomic_fetch_add(&a->api_overflow, 1,
					   __ATOMIC_RELAXED);
			err = -ENOSPC;
			goto out;
		}
		e = &a->api[a->napi++];
		e->domain = domain;
		e->cbid = cbid;
		e->code = code;
		copy_name(e->name, name);
	}
	e->count++;
	e->dirty = 1;
out:
	pthread_mutex_unlock(&a->api_lock);
	return err;
}

int gw_agg_sync_slot(struct gw_agg *a, uint32_t domain, uint32_t cbid,
		     const char *name)
{
	if (!a)
		return -EINVAL;
	for (unsigned int i = 0; i < a->nsync; i++)
		if (a->sync[i].domain == domain && a->sync[i].cbid == cbid)
			return (int)i;
	if (a->nsync >= GW_AGG_SYNCS)
		return -ENOSPC;
	struct sync_entry *s = &a->sync[a->nsync];
	s->domain = domain;
	s->cbid = cbid;
	copy_name(s->name, name);
	__atomic_store_n(&a->nsync, a->nsync + 1u, __ATOMIC_RELEASE);
	return (int)(a->nsync - 1u);
}

void gw_agg_sync(struct gw_agg *a, int slot, uint64_t ns)
{
	if (!a || slot < 0 || (unsigned int)slot >= GW_AGG_SYNCS)
		return;
	__atomic_fetch_add(&a->sync[slot].total_ns, ns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->sync[slot].count, 1, __ATOMIC_RELEASE);
}

/* ---- launch handles ---- */

/* Under kf_lock: handle -> h. */
static int kfunc_set(struct gw_agg *a, uint32_t kind, uint64_t handle,
		     uint64_t h)
{
	struct kfunc *e = NULL;

	for (unsigned int i = 0; i < a->nkf; i++)
		if (a->kf[i].handle == handle && a->kf[i].kind == kind)
			e = &a->kf[i];
	if (!e && a->nkf < GW_AGG_KFUNCS)
		e = &a->kf[a->nkf++];
	if (e && (e->hash != h || e->handle != handle)) {
		e->handle = handle;
		e->kind = kind;
		e->hash = h;
		e->dirty = 1;
	}
	return e ? 0 : -ENOSPC;
}

void gw_agg_kfunc_alias(struct gw_agg *a, uint32_t kind, uint64_t handle,
			uint64_t of)
{
	int r = 0;

	if (!a || !handle || !of)
		return;
	pthread_mutex_lock(&a->kf_lock);
	for (unsigned int i = 0; i < a->nkf; i++)
		if (a->kf[i].handle == of && a->kf[i].kind == kind) {
			r = kfunc_set(a, kind, handle, a->kf[i].hash);
			break;
		}
	pthread_mutex_unlock(&a->kf_lock);
	if (r)
		__atomic_fetch_add(&a->api_overflow, 1, __ATOMIC_RELAXED);
}

void gw_agg_kfunc(struct gw_agg *a, uint32_t kind, uint64_t handle,
		  const char *name)
{
	size_t len;
	int r;
	uint64_t h;

	if (!a || !name || !handle)
		return;
	h = fnv1a(name, &len);
	pthread_mutex_lock(&a->kf_lock);
	r = kfunc_set(a, kind, handle, h);
	pthread_mutex_unlock(&a->kf_lock);
	if (r)
		__atomic_fetch_add(&a->api_overflow, 1, __ATOMIC_RELAXED);
}

/* ---- summary ---- */

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static int put(struct gw_cring *r, void *rec, uint32_t type, uint32_t size)
{
	struct gw_crec *h = rec;

	h->type = (uint16_t)type;
	h->version = 1;
	h->size = size;
	return gw_cring_append(r, rec, size);
}

static int write_kernel(struct gw_agg *a, struct gw_cring *r, struct kentry *e)
{
	struct gw_crec_kernel *k = (struct gw_crec_kernel *)a->scratch;
	unsigned char *p = (unsigned char *)(k + 1);
	uint16_t nbins = 0;

	memset(k, 0, sizeof(*k));
	k->name_hash = e->hash;
	k->count = e->count;
	k->total_ns = e->total_ns;
	k->est_count = e->est_count;
	k->est_ns = e->est_ns;
	k->min_ns = e->min_ns;
	k->max_ns = e->max_ns;
	k->flags = e->flags;
	k->device = e->device;
	memcpy(k->grid, e->grid, sizeof(k->grid));
	memcpy(k->block, e->block, sizeof(k->block));
	k->registers = e->registers;
	k->static_smem = e->static_smem;
	k->dynamic_smem = e->dynamic_smem;
	k->local_mem = e->local_mem;
	k->occupancy = occupancy(find_device(a, e->device), e);
	for (unsigned int i = 0; i < GW_CRING_KBINS; i++) {
		if (!e->bins[i])
			continue;
		struct gw_crec_bin b = { .bin = i,
					 .pad = 0,
					 .count = e->bins[i] };
		memcpy(p, &b, sizeof(b));
		p += sizeof(b);
		nbins++;
	}
	memcpy(p, e->name, e->name_len);
	p += e->name_len;
	size_t size = (size_t)(p - (unsigned char *)k);
	size_t padded = round_up(size, 8u);
	memset(p, 0, padded - size);
	k->nbins = nbins;
	k->name_len = e->name_len;
	return put(r, k, GW_CREC_KERNEL, (uint32_t)padded);
}

static int write_api(struct gw_agg *a, struct gw_cring *r, uint32_t domain,
		     uint32_t cbid, int32_t code, uint32_t sync, uint64_t count,
		     uint64_t total_ns, const char *name)
{
	struct gw_crec_api *x = (struct gw_crec_api *)a->scratch;
	size_t nlen = strnlen(name, GW_CRING_API_NAME_MAX - 1u) + 1u;

	memset(x, 0, sizeof(*x));
	x->domain = domain;
	x->cbid = cbid;
	x->code = code;
	x->sync = sync;
	x->count = count;
	x->total_ns = total_ns;
	x->name_len = (uint16_t)nlen;
	unsigned char *p = (unsigned char *)(x + 1);
	memcpy(p, name, nlen - 1u);
	p[nlen - 1u] = '\0';
	size_t padded = round_up(sizeof(*x) + nlen, 8u);
	memset(p + nlen, 0, padded - sizeof(*x) - nlen);
	return put(r, x, GW_CREC_API, (uint32_t)padded);
}

int gw_agg_write(struct gw_agg *a, struct gw_cring *r, uint32_t status,
		 uint32_t cupti_version, uint64_t now_ns)
{
	int refused = 0;

	if (!a || !r || !r->hdr)
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	a->seq++;

	struct gw_crec_process *pr = (struct gw_crec_process *)a->scratch;
	memset(pr, 0, sizeof(*pr));
	pr->seq = a->seq;
	pr->time_ns = now_ns;
	pr->status = status;
	pr->cupti_version = cupti_version;
	pr->sampling_ratio = gw_agg_ratio(a);
	pr->contexts_created = ld(&a->contexts_created);
	pr->contexts_destroyed = ld(&a->contexts_destroyed);
	pr->mem_live_bytes = a->mem_live;
	pr->mem_peak_bytes = a->mem_peak;
	pr->mem_allocs = a->mem_allocs;
	pr->mem_frees = a->mem_frees;
	pr->oom = ld(&a->oom);
	pr->records = a->records;
	pr->records_dropped = ld(&a->records_dropped);
	pr->kernels_overflow = a->kernels_overflow;
	pr->api_overflow = ld(&a->api_overflow);
	pr->overhead_ns = a->overhead_ns;
	pr->callbacks = ld(&a->callbacks);
	pr->apis_muted = __atomic_load_n(&a->apis_muted, __ATOMIC_RELAXED);
	if (put(r, pr, GW_CREC_PROCESS, sizeof(*pr)) != 0)
		refused++;

	struct gw_crec_memcpy *mc = (struct gw_crec_memcpy *)a->scratch;
	memset(mc, 0, sizeof(*mc));
	memcpy(mc->kind, a->copy, sizeof(mc->kind));
	if (put(r, mc, GW_CREC_MEMCPY, sizeof(*mc)) != 0)
		refused++;

	for (unsigned int i = 0; i <= a->nk; i++) {
		/* The used entries, then the overflow one. */
		struct kentry *e = &a->k[i < a->nk ? i : GW_AGG_KERNELS];

		if (!e->dirty || !e->count)
			continue;
		if (write_kernel(a, r, e) == 0)
			e->dirty = 0;
		else
			refused++;
	}
	pthread_mutex_unlock(&a->lock);

	pthread_mutex_lock(&a->api_lock);
	for (unsigned int i = 0; i < a->napi; i++) {
		struct api_entry *e = &a->api[i];

		if (!e->dirty)
			continue;
		if (write_api(a, r, e->domain, e->cbid, e->code, 0, e->count, 0,
			      e->name) == 0)
			e->dirty = 0;
		else
			refused++;
	}
	pthread_mutex_unlock(&a->api_lock);

	/* a->scratch is used by one summary at a time: callers serialise. */
	unsigned int nsync = __atomic_load_n(&a->nsync, __ATOMIC_ACQUIRE);
	for (unsigned int i = 0; i < nsync; i++) {
		struct sync_entry *s = &a->sync[i];
		uint64_t count = __atomic_load_n(&s->count, __ATOMIC_ACQUIRE);

		if (count == s->written)
			continue;
		if (write_api(a, r, s->domain, s->cbid, 0, 1, count,
			      ld(&s->total_ns), s->name) == 0)
			s->written = count;
		else
			refused++;
	}
	pthread_mutex_lock(&a->kf_lock);
	for (unsigned int i = 0; i < a->nkf; i++) {
		struct kfunc *e = &a->kf[i];
		struct gw_crec_kfunc *x = (struct gw_crec_kfunc *)a->scratch;

		if (!e->dirty && a->seq % GW_CRING_KFUNC_REPEAT != 0)
			continue;
		memset(x, 0, sizeof(*x));
		x->handle = e->handle;
		x->name_hash = e->hash;
		x->kind = e->kind;
		if (put(r, x, GW_CREC_KFUNC, sizeof(*x)) == 0)
			e->dirty = 0;
		else
			refused++;
	}
	pthread_mutex_unlock(&a->kf_lock);
	gw_cring_publish(r, now_ns);
	return refused;
}
