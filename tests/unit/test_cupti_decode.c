// SPDX-License-Identifier: MIT
/*
 * test_cupti_decode.c - the agent's reader of the CUPTI rings: header
 * validation, taking the unread bytes out of a ring (wrap, lies about head
 * and tail, a file cut short), and decoding every record type, including
 * the broken ones a damaged or hostile writer could produce.  The rings
 * are memory files written through a mapping by a small writer in this
 * file (not the injection library) and read through their descriptor, as
 * the agent reads them.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <unistd.h>

#include "collect/cupti/decode.h"

#define DATA_OFF  4096u
#define DATA_SIZE GW_CRING_DATA_MIN
#define MAP_LEN	  (DATA_OFF + DATA_SIZE)
#define CAP	  (2 * DATA_SIZE)

/* ---- a minimal writer ---- */

struct ring {
	int fd;	   /* the reader's side */
	void *map; /* the writer's side */
	struct gw_cring_hdr *h;
	struct gw_cupti_ring_info ri;
	char *buf; /* what take copies into */
	struct gw_cupti_proc *p;
};

static struct ring *ring_new(void)
{
	struct ring *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->fd = memfd_create("gw-cupti-test", MFD_CLOEXEC);
	assert_true(r->fd >= 0);
	assert_int_equal(ftruncate(r->fd, MAP_LEN), 0);
	r->map = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		      0);
	assert_true(r->map != MAP_FAILED);
	r->h = r->map;
	r->h->magic = GW_CRING_MAGIC;
	r->h->version = GW_CRING_VERSION;
	r->h->hdr_size = sizeof(struct gw_cring_hdr);
	r->h->data_off = DATA_OFF;
	r->h->data_size = DATA_SIZE;
	r->h->pid = 4242;
	r->h->pidns_ino = 0xeffffffcull;
	r->h->start_ticks = 777;
	r->h->status = GW_CUPTI_ST_OK;
	memcpy(r->h->lib_version, "1.2.3", 6);
	r->buf = malloc(CAP);
	assert_non_null(r->buf);
	assert_int_equal(gw_cupti_proc_new(&r->p), 0);
	assert_int_equal(gw_cupti_ring_check(r->fd, &r->ri), 0);
	return r;
}

static void ring_free(struct ring *r)
{
	gw_cupti_proc_free(r->p);
	free(r->buf);
	munmap(r->map, MAP_LEN);
	close(r->fd);
	free(r);
}

static char *data(struct ring *r)
{
	return (char *)r->map + DATA_OFF;
}

/* Appends one record as the library does: PAD to the end when it does not
 * fit before it.  Returns 0, or -1 when the ring is full. */
static int put(struct ring *r, const void *rec, uint32_t size)
{
	uint64_t head = r->h->head;
	uint32_t off = (uint32_t)(head & (DATA_SIZE - 1));
	uint32_t need = size;

	if (off + size > DATA_SIZE)
		need += DATA_SIZE - off;
	if (head + need - r->h->tail > DATA_SIZE)
		return -1;
	if (off + size > DATA_SIZE) {
		struct gw_crec pad = { GW_CREC_PAD, 1, DATA_SIZE - off };

		memcpy(data(r) + off, &pad, sizeof(pad));
		head += DATA_SIZE - off;
		off = 0;
	}
	memcpy(data(r) + off, rec, size);
	__atomic_store_n(&r->h->head, head + size, __ATOMIC_RELEASE);
	return 0;
}

/* Takes and decodes everything unread; returns the records applied. */
static size_t drain(struct ring *r)
{
	size_t len, n = 0;
	int lost;

	do {
		assert_int_equal(gw_cupti_ring_take(r->fd, &r->ri, r->buf, CAP,
						    &len, &lost, 1000),
				 0);
		assert_int_equal(lost, 0);
		n += gw_cupti_decode(r->p, r->buf, len);
	} while (len);
	return n;
}

static uint32_t mk_process(void *out, uint64_t seq, double ratio)
{
	struct gw_crec_process p;

	memset(&p, 0, sizeof(p));
	p.h.type = GW_CREC_PROCESS;
	p.h.version = 1;
	p.h.size = sizeof(p);
	p.seq = seq;
	p.status = GW_CUPTI_ST_OK;
	p.sampling_ratio = ratio;
	p.contexts_created = 1;
	p.mem_live_bytes = 1000 * seq;
	p.mem_peak_bytes = 5000 * seq;
	p.mem_allocs = 3 * seq;
	p.oom = seq / 2;
	memcpy(out, &p, sizeof(p));
	return sizeof(p);
}

struct kspec {
	uint64_t hash, count;
	const char *name;
	unsigned int nbins;
	const struct gw_crec_bin *bins;
	uint32_t extra;	   /* trailing bytes of a newer writer */
	uint64_t total_ns; /* 0: 1000 per launch */
};

static uint32_t mk_kernel(void *out, const struct kspec *k)
{
	struct gw_crec_kernel h;
	size_t nl = strlen(k->name) + 1;
	uint32_t size =
		(uint32_t)((sizeof(h) + k->nbins * 16u + nl + 7) & ~(size_t)7) +
		k->extra;
	char *o = out;

	memset(&h, 0, sizeof(h));
	h.h.type = GW_CREC_KERNEL;
	h.h.version = 1;
	h.h.size = size;
	h.name_hash = k->hash;
	h.count = k->count;
	h.total_ns = k->total_ns ? k->total_ns : k->count * 1000;
	h.est_count = (double)k->count;
	h.est_ns = (double)h.total_ns;
	h.min_ns = 900;
	h.max_ns = 1100;
	h.grid[0] = 128;
	h.block[0] = 256;
	h.registers = 32;
	h.static_smem = 1024;
	h.dynamic_smem = 2048;
	h.occupancy = 0.5f;
	h.nbins = (uint16_t)k->nbins;
	h.name_len = (uint16_t)nl;
	memset(o, 0xee, size);
	memcpy(o, &h, sizeof(h));
	if (k->nbins)
		memcpy(o + sizeof(h), k->bins, k->nbins * 16u);
	memcpy(o + sizeof(h) + k->nbins * 16u, k->name, nl);
	return size;
}

static uint32_t mk_api(void *out, uint32_t cbid, int32_t code, uint32_t sync,
		       uint64_t count, const char *name)
{
	struct gw_crec_api a;
	size_t nl = strlen(name) + 1;
	uint32_t size = (uint32_t)((sizeof(a) + nl + 7) & ~(size_t)7);

	memset(&a, 0, sizeof(a));
	a.h.type = GW_CREC_API;
	a.h.version = 1;
	a.h.size = size;
	a.domain = GW_CRING_API_RUNTIME;
	a.cbid = cbid;
	a.code = code;
	a.sync = sync;
	a.count = count;
	a.total_ns = count * 10;
	a.name_len = (uint16_t)nl;
	memset(out, 0, size);
	memcpy(out, &a, sizeof(a));
	memcpy((char *)out + sizeof(a), name, nl);
	return size;
}

static uint32_t mk_memcpy(void *out, uint64_t htod_bytes)
{
	struct gw_crec_memcpy m;

	memset(&m, 0, sizeof(m));
	m.h.type = GW_CREC_MEMCPY;
	m.h.version = 1;
	m.h.size = sizeof(m);
	m.kind[GW_COPY_HTOD].count = htod_bytes / 1024;
	m.kind[GW_COPY_HTOD].bytes = htod_bytes;
	m.kind[GW_COPY_HTOD].total_ns = htod_bytes;
	m.kind[GW_COPY_MEMSET].count = 1;
	m.kind[GW_COPY_MEMSET].bytes = 64;
	memcpy(out, &m, sizeof(m));
	return sizeof(m);
}

static void put_ok(struct ring *r, const void *rec, uint32_t size)
{
	assert_int_equal(put(r, rec, size), 0);
}

/* ---- header ---- */

static void header_valid_and_filled(void **state)
{
	struct ring *r = ring_new();

	(void)state;
	assert_int_equal(r->ri.pid, 4242);
	assert_int_equal(r->ri.data_off, DATA_OFF);
	assert_int_equal(r->ri.data_size, DATA_SIZE);
	assert_true(r->ri.pidns_ino == 0xeffffffcull);
	assert_int_equal(r->ri.start_ticks, 777);
	assert_int_equal(r->ri.status, GW_CUPTI_ST_OK);
	assert_string_equal(r->ri.lib_version, "1.2.3");
	/* A newer writer's longer header is fine. */
	r->h->hdr_size = 256;
	assert_int_equal(gw_cupti_ring_check(r->fd, &r->ri), 0);
	ring_free(r);
}

static void header_refusals(void **state)
{
	struct ring *r = ring_new();
	struct gw_cring_hdr good = *r->h;
	struct gw_cupti_ring_info ri;
	static const struct {
		size_t off, size;
		uint64_t v;
		int err;
	} bad[] = {
		{ offsetof(struct gw_cring_hdr, magic), 4, 0x52435748,
		  -EBADMSG },
		{ offsetof(struct gw_cring_hdr, version), 2, 0, -EBADMSG },
		{ offsetof(struct gw_cring_hdr, version), 2, 2,
		  -EPROTONOSUPPORT },
		{ offsetof(struct gw_cring_hdr, hdr_size), 2, 191, -EBADMSG },
		{ offsetof(struct gw_cring_hdr, hdr_size), 2, 8192, -EBADMSG },
		{ offsetof(struct gw_cring_hdr, data_off), 4, 0, -EBADMSG },
		{ offsetof(struct gw_cring_hdr, data_off), 4, 4000, -EBADMSG },
		{ offsetof(struct gw_cring_hdr, data_off), 4, 8192, -EBADMSG },
		{ offsetof(struct gw_cring_hdr, data_size), 4, 65536 + 4096,
		  -EBADMSG },
		{ offsetof(struct gw_cring_hdr, data_size), 4, 32768,
		  -EBADMSG },
		{ offsetof(struct gw_cring_hdr, data_size), 4, 32u << 20,
		  -EBADMSG },
		{ offsetof(struct gw_cring_hdr, data_size), 4, 0, -EBADMSG },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		*r->h = good;
		memcpy((char *)r->map + bad[i].off, &bad[i].v, bad[i].size);
		memset(&ri, 0x5a, sizeof(ri));
		if (gw_cupti_ring_check(r->fd, &ri) != bad[i].err)
			fail_msg("case %zu: not refused with %d", i,
				 bad[i].err);
	}
	*r->h = good;
	/* The data area must lie within the file. */
	assert_int_equal(ftruncate(r->fd, MAP_LEN - 8), 0);
	assert_int_equal(gw_cupti_ring_check(r->fd, &ri), -EBADMSG);
	assert_int_equal(ftruncate(r->fd, 100), 0);
	assert_int_equal(gw_cupti_ring_check(r->fd, &ri), -EBADMSG);
	assert_int_equal(ftruncate(r->fd, MAP_LEN), 0);
	assert_int_equal(gw_cupti_ring_check(r->fd, &ri), 0);
	assert_int_equal(gw_cupti_ring_check(-1, &ri), -EINVAL);
	assert_int_equal(gw_cupti_ring_check(r->fd, NULL), -EINVAL);
	ring_free(r);
}

/* ---- records ---- */

static void every_record_type(void **state)
{
	struct ring *r = ring_new();
	struct gw_crec_bin bins[2] = { { 5, 0, 7 }, { 40, 0, 3 } };
	struct kspec k = { 0xabc, 10, "_Z6vecAddPfS_S_i", 2, bins, 0, 0 };
	uint64_t rec[GW_CREC_MAX / 8];
	const struct gw_cupti_kernel *kk;

	(void)state;
	put_ok(r, rec, mk_process(rec, 1, 0.25));
	put_ok(r, rec, mk_memcpy(rec, 3u << 20));
	put_ok(r, rec, mk_kernel(rec, &k));
	put_ok(r, rec, mk_api(rec, 31, 1, 0, 2, "cudaMemcpy"));
	put_ok(r, rec, mk_api(rec, 165, 0, 1, 4, "cudaDeviceSynchronize"));
	assert_int_equal(drain(r), 5);
	assert_int_equal(r->p->st.records, 5);
	assert_int_equal(r->p->st.bad, 0);

	assert_true(r->p->have_process);
	assert_int_equal(r->p->process.seq, 1);
	assert_true(r->p->process.sampling_ratio == 0.25);
	assert_int_equal(r->p->process.mem_peak_bytes, 5000);
	assert_true(r->p->have_memcpy);
	assert_int_equal(r->p->memcpy.kind[GW_COPY_HTOD].bytes, 3u << 20);
	assert_int_equal(r->p->memcpy.kind[GW_COPY_MEMSET].bytes, 64);

	assert_int_equal(r->p->nkernels, 1);
	kk = &r->p->kernels[0];
	assert_string_equal(kk->name, "_Z6vecAddPfS_S_i");
	assert_int_equal(kk->count, 10);
	assert_int_equal(kk->bins[5], 7);
	assert_int_equal(kk->bins[40], 3);
	assert_int_equal(kk->bins[6], 0);
	assert_int_equal(kk->registers, 32);
	assert_int_equal(kk->dynamic_smem, 2048);
	assert_int_equal(kk->grid[0], 128);
	assert_int_equal(kk->seen_seq, 1);
	assert_true(kk->occupancy == 0.5f);

	assert_int_equal(r->p->napis, 2);
	assert_string_equal(r->p->apis[0].name, "cudaMemcpy");
	assert_int_equal(r->p->apis[0].code, 1);
	assert_int_equal(r->p->apis[0].count, 2);
	assert_int_equal(r->p->apis[1].sync, 1);
	assert_int_equal(r->p->apis[1].total_ns, 40);
	/* The reader marks its pass. */
	assert_int_equal(r->h->reader_seen_ns, 1000);
	ring_free(r);
}

/* tail and the reader's mark go back into the file; a writer that cuts
 * its file short gets an error, not a crashed reader. */
static void file_writes_and_truncation(void **state)
{
	struct ring *r = ring_new();
	struct gw_cupti_ring_info ri;
	uint64_t rec[GW_CREC_MAX / 8], tail;
	size_t len = 0;
	int lost = 0;

	(void)state;
	put_ok(r, rec, mk_process(rec, 3, 1));
	put_ok(r, rec, mk_memcpy(rec, 1u << 20));
	assert_int_equal(gw_cupti_ring_take(r->fd, &r->ri, r->buf, CAP, &len,
					    &lost, 2000),
			 0);
	assert_int_equal(lost, 0);
	assert_int_equal(gw_cupti_decode(r->p, r->buf, len), 2);
	assert_int_equal(r->p->process.seq, 3);
	assert_int_equal(r->p->memcpy.kind[GW_COPY_HTOD].bytes, 1u << 20);
	assert_int_equal(pread(r->fd, &tail, sizeof(tail),
			       offsetof(struct gw_cring_hdr, tail)),
			 (ssize_t)sizeof(tail));
	assert_int_equal(tail, r->h->head);
	assert_int_equal(r->h->reader_seen_ns, 2000);

	/* New records, then the writer truncates: short reads, no fault,
	 * and tail stays where it was. */
	put_ok(r, rec, mk_process(rec, 4, 1));
	assert_int_equal(ftruncate(r->fd, DATA_OFF + 64), 0);
	assert_int_equal(gw_cupti_ring_check(r->fd, &ri), -EBADMSG);
	assert_int_equal(gw_cupti_ring_take(r->fd, &r->ri, r->buf, CAP, &len,
					    &lost, 3000),
			 -EBADMSG);
	assert_int_equal(pread(r->fd, &tail, sizeof(tail),
			       offsetof(struct gw_cring_hdr, tail)),
			 (ssize_t)sizeof(tail));
	assert_true(tail < r->h->head);
	assert_int_equal(ftruncate(r->fd, 16), 0);
	assert_int_equal(gw_cupti_ring_check(r->fd, &ri), -EBADMSG);
	assert_true(gw_cupti_ring_take(r->fd, &r->ri, r->buf, CAP, &len, &lost,
				       3000) < 0);
	/* The writer's mapping is beyond the end of the file now: leave it
	 * untouched, as ring_free() does. */
	ring_free(r);
}

static void wrap_with_pad_and_replacement(void **state)
{
	struct ring *r = ring_new();
	uint64_t rec[GW_CREC_MAX / 8];
	char name[600];
	uint64_t pads_seen = 0;

	(void)state;
	memset(name, 'k', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	/* Enough records to go round the ring about 30 times. */
	for (uint64_t i = 1; i <= 3000; i++) {
		struct kspec k = { i % 3, i, name, 0, NULL, 0, 0 };
		uint64_t before = r->h->head;

		put_ok(r, rec, mk_kernel(rec, &k));
		if (r->h->head - before > rec[0] >> 32)
			pads_seen++;
		if (i % 50 == 0)
			drain(r);
	}
	drain(r);
	assert_true(pads_seen > 10);
	assert_int_equal(r->p->st.bad, 0);
	assert_int_equal(r->p->nkernels, 3);
	for (unsigned int i = 0; i < 3; i++) {
		const struct gw_cupti_kernel *k = &r->p->kernels[i];

		/* The latest cumulative value of each key, not a sum. */
		assert_true(k->count >= 2998 && k->count <= 3000);
		assert_int_equal(k->count % 3, k->name_hash);
	}
	ring_free(r);
}

static void counters_backwards_refused(void **state)
{
	struct ring *r = ring_new();
	uint64_t rec[GW_CREC_MAX / 8];
	struct gw_crec_bin b1[1] = { { 9, 0, 5 } }, b2[1] = { { 10, 0, 9 } };
	struct kspec k = { 1, 20, "k", 1, b1, 0, 0 };

	(void)state;
	put_ok(r, rec, mk_process(rec, 5, 1));
	put_ok(r, rec, mk_kernel(rec, &k));
	put_ok(r, rec, mk_memcpy(rec, 4096));
	put_ok(r, rec, mk_api(rec, 31, 1, 0, 5, "cudaMemcpy"));
	assert_int_equal(drain(r), 4);
	put_ok(r, rec, mk_process(rec, 4, 1));
	k.count = 19;
	put_ok(r, rec, mk_kernel(rec, &k));
	/* More launches but a bin that lost counts. */
	k.count = 30;
	k.bins = b2;
	put_ok(r, rec, mk_kernel(rec, &k));
	put_ok(r, rec, mk_memcpy(rec, 1024));
	put_ok(r, rec, mk_api(rec, 31, 1, 0, 4, "cudaMemcpy"));
	assert_int_equal(drain(r), 0);
	assert_int_equal(r->p->st.bad, 5);
	assert_int_equal(r->p->process.seq, 5);
	assert_int_equal(r->p->kernels[0].count, 20);
	assert_int_equal(r->p->kernels[0].bins[9], 5);
	assert_int_equal(r->p->memcpy.kind[GW_COPY_HTOD].bytes, 4096);
	assert_int_equal(r->p->apis[0].count, 5);
	ring_free(r);
}

/* A kernel's recent duration is the mean of the launches its last record
 * added (the first: all), and stays while records add none. */
static void kernel_recent_is_the_new_launches(void **state)
{
	struct ring *r = ring_new();
	uint64_t rec[GW_CREC_MAX / 8];
	struct kspec k = { 1, 10, "k", 0, NULL, 0, 10 * 1000 };

	(void)state;
	put_ok(r, rec, mk_process(rec, 1, 1));
	put_ok(r, rec, mk_kernel(rec, &k));
	assert_int_equal(drain(r), 2);
	assert_true(r->p->kernels[0].recent_ns == 1000);
	put_ok(r, rec, mk_process(rec, 2, 1));
	put_ok(r, rec, mk_kernel(rec, &k));
	assert_int_equal(drain(r), 2);
	assert_true(r->p->kernels[0].recent_ns == 1000);
	k.count = 30;
	k.total_ns = 10 * 1000 + 20 * 1400;
	put_ok(r, rec, mk_process(rec, 3, 1));
	put_ok(r, rec, mk_kernel(rec, &k));
	assert_int_equal(drain(r), 2);
	assert_true(r->p->kernels[0].recent_ns == 1400);
	ring_free(r);
}

/* Decodes buf; the good record after it must still apply unless the
 * framing broke. */
static void expect_bad(const void *rec, uint32_t size, int framing)
{
	struct gw_cupti_proc *p;
	uint64_t buf[3 * GW_CREC_MAX / 8];
	uint32_t n;
	size_t applied;

	assert_int_equal(gw_cupti_proc_new(&p), 0);
	memcpy(buf, rec, size);
	n = mk_api((char *)buf + size, 1, 2, 0, 1, "cudaMalloc");
	applied = gw_cupti_decode(p, buf, (size_t)size + n);
	assert_int_equal(p->st.bad, 1);
	assert_int_equal(applied, framing ? 0 : 1);
	assert_int_equal(p->napis, framing ? 0 : 1);
	assert_int_equal(p->nkernels, 0);
	assert_false(p->have_process);
	gw_cupti_proc_free(p);
}

static void framing_errors_stop_decoding(void **state)
{
	uint64_t rec[GW_CREC_MAX / 8 + 2];
	struct gw_crec *h = (struct gw_crec *)rec;
	struct gw_cupti_proc *p;
	uint32_t sizes[] = { 0, 4, 12, 156, GW_CREC_MAX + 8 };

	(void)state;
	memset(rec, 0, sizeof(rec));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		mk_process(rec, 1, 1);
		h->size = sizes[i];
		/* The bytes handed over are the 152 of the record. */
		expect_bad(rec, GW_CREC_PROCESS_MIN_SIZE, 1);
	}
	/* A size pointing beyond the bytes given. */
	assert_int_equal(gw_cupti_proc_new(&p), 0);
	mk_process(rec, 1, 1);
	assert_int_equal(gw_cupti_decode(p, rec, 100), 0);
	assert_int_equal(p->st.bad, 1);
	/* Trailing bytes that cannot hold a record header. */
	assert_int_equal(gw_cupti_decode(p, rec, 4), 0);
	assert_int_equal(p->st.bad, 2);
	gw_cupti_proc_free(p);
}

static void payload_errors_skip_one_record(void **state)
{
	uint64_t rec[GW_CREC_MAX / 8];
	struct gw_crec_kernel *k = (struct gw_crec_kernel *)rec;
	struct gw_crec_api *a = (struct gw_crec_api *)rec;
	struct gw_crec_bin *bins =
		(struct gw_crec_bin *)((char *)rec + sizeof(*k));
	struct gw_crec_bin two[2] = { { 3, 0, 1 }, { 4, 0, 1 } };
	struct kspec ks = { 7, 1, "kern", 2, two, 0, 0 };
	uint32_t n;
	double ratios[] = { 0, -0.5, NAN, 1.0001, INFINITY };

	(void)state;
	/* nbins beyond what size holds. */
	n = mk_kernel(rec, &ks);
	k->nbins = 40;
	expect_bad(rec, n, 0);
	/* name_len beyond size, and 0. */
	n = mk_kernel(rec, &ks);
	k->name_len = 64;
	expect_bad(rec, n, 0);
	n = mk_kernel(rec, &ks);
	k->name_len = 0;
	expect_bad(rec, n, 0);
	n = mk_kernel(rec, &ks);
	k->nbins = GW_CRING_KBINS + 1;
	expect_bad(rec, n, 0);
	/* Bins out of order, repeated, out of range. */
	n = mk_kernel(rec, &ks);
	bins[0].bin = 4;
	bins[1].bin = 3;
	expect_bad(rec, n, 0);
	n = mk_kernel(rec, &ks);
	bins[1].bin = 3;
	expect_bad(rec, n, 0);
	n = mk_kernel(rec, &ks);
	bins[1].bin = GW_CRING_KBINS;
	expect_bad(rec, n, 0);
	/* A name without its NUL. */
	n = mk_kernel(rec, &ks);
	((char *)rec)[sizeof(*k) + 32 + 4] = 'x';
	expect_bad(rec, n, 0);
	/* Estimates that are not numbers. */
	n = mk_kernel(rec, &ks);
	k->est_count = NAN;
	expect_bad(rec, n, 0);
	/* API names. */
	n = mk_api(rec, 3, 2, 0, 1, "cudaFree");
	a->name_len = 200;
	expect_bad(rec, n, 0);
	n = mk_api(rec, 3, 2, 0, 1, "cudaFree");
	((char *)rec)[sizeof(*a) + 8] = 'x';
	expect_bad(rec, n, 0);
	/* Sampling ratios outside (0, 1]. */
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		n = mk_process(rec, 1, ratios[i]);
		expect_bad(rec, n, 0);
	}
}

/* Rewrites a built record's header field in place; rec is an array of
 * uint64_t, so the header is written with memcpy, not through a cast. */
static void set_size(void *rec, uint32_t size)
{
	memcpy((char *)rec + offsetof(struct gw_crec, size), &size,
	       sizeof(size));
}

static void set_type(void *rec, uint16_t type)
{
	memcpy((char *)rec + offsetof(struct gw_crec, type), &type,
	       sizeof(type));
}

static void older_and_newer_sizes(void **state)
{
	struct ring *r = ring_new();
	uint64_t rec[GW_CREC_MAX / 8];
	struct kspec ks = { 9, 3, "newer", 0, NULL, 64, 0 };
	uint32_t n;

	(void)state;
	/* Shorter than the version 1 layout: refused. */
	n = mk_process(rec, 1, 1);
	set_size(rec, n - 8);
	expect_bad(rec, n - 8, 0);
	n = mk_memcpy(rec, 10);
	set_size(rec, n - 16);
	expect_bad(rec, n - 16, 0);
	n = mk_api(rec, 1, 2, 0, 1, "");
	set_size(rec, 40);
	expect_bad(rec, 40, 0);
	/* Longer, extra trailing bytes: read as version 1. */
	memset(rec, 0x77, sizeof(rec));
	mk_process(rec, 3, 1);
	set_size(rec, GW_CREC_PROCESS_MIN_SIZE + 40);
	put_ok(r, rec, GW_CREC_PROCESS_MIN_SIZE + 40);
	put_ok(r, rec, mk_kernel(rec, &ks));
	n = mk_memcpy(rec, 2048);
	memset((char *)rec + n, 0x55, 24);
	set_size(rec, n + 24);
	put_ok(r, rec, n + 24);
	assert_int_equal(drain(r), 3);
	assert_int_equal(r->p->st.bad, 0);
	assert_int_equal(r->p->process.seq, 3);
	assert_string_equal(r->p->kernels[0].name, "newer");
	assert_int_equal(r->p->memcpy.kind[GW_COPY_HTOD].bytes, 2048);
	/* An unknown record type is skipped, the next one applied. */
	set_type(rec, 77);
	set_size(rec, 16);
	put_ok(r, rec, 16);
	put_ok(r, rec, mk_process(rec, 4, 1));
	assert_int_equal(drain(r), 1);
	assert_int_equal(r->p->st.unknown, 1);
	assert_int_equal(r->p->process.seq, 4);
	ring_free(r);
}

/* A launch handle record, size bytes (the version 1 size or more). */
static uint32_t mk_kfunc(void *out, uint64_t handle, uint64_t hash,
			 uint32_t kind, uint32_t size)
{
	struct gw_crec_kfunc x = { .h = { GW_CREC_KFUNC, 1, size },
				   .handle = handle,
				   .name_hash = hash,
				   .kind = kind };

	memset(out, 0x33, size);
	memcpy(out, &x, sizeof(x));
	return size;
}

static void launch_handles(void **state)
{
	struct ring *r = ring_new();
	uint64_t rec[GW_CREC_MAX / 8];
	uint64_t gen;

	(void)state;
	put_ok(r, rec,
	       mk_kfunc(rec, 0x1000, 7, GW_CRING_KFUNC_CUFUNCTION,
			GW_CREC_KFUNC_MIN_SIZE));
	/* A newer writer's longer record: read as version 1. */
	put_ok(r, rec,
	       mk_kfunc(rec, 0x2000, 8, GW_CRING_KFUNC_CUFUNCTION,
			GW_CREC_KFUNC_MIN_SIZE + 16));
	assert_int_equal(drain(r), 2);
	assert_int_equal(r->p->nkfuncs, 2);
	assert_int_equal(r->p->kfuncs[1].handle, 0x2000);
	assert_int_equal(r->p->kfuncs[1].name_hash, 8);
	gen = r->p->kfunc_gen;
	/* Sent again unchanged (the writer repeats them): nothing new. */
	put_ok(r, rec,
	       mk_kfunc(rec, 0x1000, 7, GW_CRING_KFUNC_CUFUNCTION,
			GW_CREC_KFUNC_MIN_SIZE));
	assert_int_equal(drain(r), 1);
	assert_int_equal(r->p->kfunc_gen, gen);
	/* A handle reused for another kernel: replaced. */
	put_ok(r, rec,
	       mk_kfunc(rec, 0x1000, 9, GW_CRING_KFUNC_CUFUNCTION,
			GW_CREC_KFUNC_MIN_SIZE));
	assert_int_equal(drain(r), 1);
	assert_int_equal(r->p->nkfuncs, 2);
	assert_int_equal(r->p->kfuncs[0].name_hash, 9);
	assert_true(r->p->kfunc_gen > gen);
	/* Too short, handle 0, kind 0: refused, counted. */
	put_ok(r, rec, mk_kfunc(rec, 0x3000, 1, GW_CRING_KFUNC_CUFUNCTION, 24));
	put_ok(r, rec,
	       mk_kfunc(rec, 0, 1, GW_CRING_KFUNC_CUFUNCTION,
			GW_CREC_KFUNC_MIN_SIZE));
	put_ok(r, rec, mk_kfunc(rec, 0x3000, 1, 0, GW_CREC_KFUNC_MIN_SIZE));
	assert_int_equal(drain(r), 0);
	assert_int_equal(r->p->st.bad, 3);
	assert_int_equal(r->p->nkfuncs, 2);
	/* Bounded: beyond GW_CUPTI_MAX_KFUNCS, refused as overflow. */
	for (uint64_t i = 0; i < GW_CUPTI_MAX_KFUNCS; i++) {
		put_ok(r, rec,
		       mk_kfunc(rec, 0x10000 + i * 8, i,
				GW_CRING_KFUNC_CUFUNCTION,
				GW_CREC_KFUNC_MIN_SIZE));
		if (i % 64 == 63)
			drain(r);
	}
	drain(r);
	assert_int_equal(r->p->nkfuncs, GW_CUPTI_MAX_KFUNCS);
	assert_int_equal(r->p->st.overflow, 2);
	ring_free(r);
}

static void head_and_tail_lies_resync(void **state)
{
	struct ring *r = ring_new();
	uint64_t rec[GW_CREC_MAX / 8];
	size_t len;
	int lost;

	(void)state;
	put_ok(r, rec, mk_process(rec, 1, 1));
	/* head more than data_size ahead of tail. */
	r->h->head = r->h->tail + DATA_SIZE + 8;
	assert_int_equal(
		gw_cupti_ring_take(r->fd, &r->ri, r->buf, CAP, &len, &lost, 5),
		0);
	assert_int_equal(lost, 1);
	assert_int_equal(len, 0);
	assert_true(r->h->tail == r->h->head);
	/* tail ahead of head. */
	r->h->tail = r->h->head + 64;
	assert_int_equal(
		gw_cupti_ring_take(r->fd, &r->ri, r->buf, CAP, &len, &lost, 6),
		0);
	assert_int_equal(lost, 1);
	assert_true(r->h->tail == r->h->head);
	/* The writer goes on from there and is read again. */
	put_ok(r, rec, mk_process(rec, 2, 1));
	assert_int_equal(drain(r), 1);
	assert_int_equal(r->p->process.seq, 2);
	assert_int_equal(
		gw_cupti_ring_take(-1, &r->ri, r->buf, CAP, &len, &lost, 6),
		-EINVAL);
	assert_int_equal(gw_cupti_ring_take(r->fd, &r->ri, r->buf,
					    GW_CREC_MAX - 8, &len, &lost, 6),
			 -EINVAL);
	ring_free(r);
}

static void take_copies_whole_records_up_to_cap(void **state)
{
	struct ring *r = ring_new();
	uint64_t rec[GW_CREC_MAX / 8];
	char name[1000];
	size_t len, total = 0;
	int lost, rounds = 0;

	(void)state;
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	for (uint64_t i = 0; i < 40; i++) {
		struct kspec k = { i, 1, name, 0, NULL, 0, 0 };

		put_ok(r, rec, mk_kernel(rec, &k));
	}
	do {
		assert_int_equal(gw_cupti_ring_take(r->fd, &r->ri, r->buf,
						    GW_CREC_MAX, &len, &lost,
						    1),
				 0);
		assert_true(len <= GW_CREC_MAX);
		assert_int_equal(len % 1120, 0);
		total += len;
		gw_cupti_decode(r->p, r->buf, len);
		rounds++;
	} while (len);
	assert_int_equal(total, 40 * 1120);
	assert_true(rounds > 5);
	assert_int_equal(r->p->nkernels, 40);
	assert_int_equal(r->p->st.bad, 0);
	ring_free(r);
}

static void tables_are_bounded(void **state)
{
	struct gw_cupti_proc *p;
	uint64_t rec[GW_CREC_MAX / 8];
	uint32_t n;

	(void)state;
	assert_int_equal(gw_cupti_proc_new(&p), 0);
	for (uint64_t i = 0; i < GW_CUPTI_MAX_KERNELS + 3; i++) {
		struct kspec k = { i + 1, 1, "k", 0, NULL, 0, 0 };

		n = mk_kernel(rec, &k);
		gw_cupti_decode(p, rec, n);
	}
	assert_int_equal(p->nkernels, GW_CUPTI_MAX_KERNELS);
	assert_int_equal(p->st.overflow, 3);
	for (uint32_t i = 0; i < GW_CUPTI_MAX_APIS + 2; i++) {
		n = mk_api(rec, i, 1, 0, 1, "cuX");
		gw_cupti_decode(p, rec, n);
	}
	assert_int_equal(p->napis, GW_CUPTI_MAX_APIS);
	assert_int_equal(p->st.overflow, 5);
	/* A known key still updates when the table is full. */
	n = mk_api(rec, 0, 1, 0, 9, "cuX");
	assert_int_equal(gw_cupti_decode(p, rec, n), 1);
	assert_int_equal(p->apis[0].count, 9);
	assert_int_equal(p->st.bad, 0);
	gw_cupti_proc_free(p);
}

static void control_bytes_in_names(void **state)
{
	struct gw_cupti_proc *p;
	uint64_t rec[GW_CREC_MAX / 8];
	struct kspec k = { 1,
			   1,
			   "a\nb\x01"
			   "c\x7f\xc3\xa9",
			   0,
			   NULL,
			   0,
			   0 };
	uint32_t n = mk_kernel(rec, &k);

	(void)state;
	assert_int_equal(gw_cupti_proc_new(&p), 0);
	assert_int_equal(gw_cupti_decode(p, rec, n), 1);
	assert_string_equal(p->kernels[0].name, "a?b?c\x7f\xc3\xa9");
	gw_cupti_proc_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(header_valid_and_filled),
		cmocka_unit_test(header_refusals),
		cmocka_unit_test(every_record_type),
		cmocka_unit_test(file_writes_and_truncation),
		cmocka_unit_test(wrap_with_pad_and_replacement),
		cmocka_unit_test(counters_backwards_refused),
		cmocka_unit_test(kernel_recent_is_the_new_launches),
		cmocka_unit_test(framing_errors_stop_decoding),
		cmocka_unit_test(payload_errors_skip_one_record),
		cmocka_unit_test(older_and_newer_sizes),
		cmocka_unit_test(launch_handles),
		cmocka_unit_test(head_and_tail_lies_resync),
		cmocka_unit_test(take_copies_whole_records_up_to_cap),
		cmocka_unit_test(tables_are_bounded),
		cmocka_unit_test(control_bytes_in_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
