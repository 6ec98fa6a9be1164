// SPDX-License-Identifier: MIT
/*
 * fuzz_cupti_decode.c - the agent's CUPTI ring reader (decode.h) on
 * arbitrary bytes.  Rings are memory files read through their descriptor,
 * exactly as the collector reads them.
 *
 * Input: one selector byte, then the bytes.
 *   sel % 3 == 0: the bytes are a whole ring file (header + data area),
 *                 checked and, when valid, taken and decoded; then the file
 *                 is cut short (to a length the first data byte picks) and
 *                 taken again, as a writer truncating its file would do;
 *   sel % 3 == 1: a valid header around a data area filled with the bytes
 *                 (repeated), head and tail taken from the first 16 bytes,
 *                 taken with a small buffer until empty;
 *   sel % 3 == 2: the bytes are a record stream, decoded in pieces split
 *                 at the offsets the next bytes give.
 * Beyond not crashing: tables stay within bounds, names are terminated and
 * free of control bytes, and no cumulative value ever decreases between
 * two decodes (a counter going backwards would reach /metrics as a reset).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect/cupti/decode.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

struct kseen {
	uint64_t hash, count, total_ns;
	double est_count, est_ns;
	uint64_t bins[GW_CRING_KBINS];
};

struct before {
	int have_process, have_memcpy;
	struct gw_crec_process process;
	struct gw_crec_memcpy memcpy;
	unsigned int nkernels, napis;
	struct kseen k[GW_CUPTI_MAX_KERNELS];
	struct gw_cupti_api a[GW_CUPTI_MAX_APIS];
	struct gw_cupti_decode_stats st;
};

static void check_name(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	CHECK(n < cap);
	for (size_t i = 0; i < n; i++)
		CHECK((unsigned char)s[i] >= 0x20);
}

static void remember(const struct gw_cupti_proc *p, struct before *b)
{
	b->have_process = p->have_process;
	b->have_memcpy = p->have_memcpy;
	b->process = p->process;
	b->memcpy = p->memcpy;
	b->nkernels = p->nkernels;
	b->napis = p->napis;
	for (unsigned int i = 0; i < p->nkernels; i++) {
		const struct gw_cupti_kernel *k = &p->kernels[i];

		b->k[i].hash = k->name_hash;
		b->k[i].count = k->count;
		b->k[i].total_ns = k->total_ns;
		b->k[i].est_count = k->est_count;
		b->k[i].est_ns = k->est_ns;
		memcpy(b->k[i].bins, k->bins, sizeof(k->bins));
	}
	memcpy(b->a, p->apis, sizeof(b->a));
	b->st = p->st;
}

static void compare(const struct gw_cupti_proc *p, const struct before *b)
{
	const struct gw_crec_process *o = &b->process, *n = &p->process;

	CHECK(p->nkernels <= GW_CUPTI_MAX_KERNELS);
	CHECK(p->napis <= GW_CUPTI_MAX_APIS);
	/* Entries are never removed or moved. */
	CHECK(p->nkernels >= b->nkernels && p->napis >= b->napis);
	CHECK(p->st.records >= b->st.records && p->st.bad >= b->st.bad);
	if (p->have_process)
		CHECK(n->sampling_ratio > 0 && n->sampling_ratio <= 1);
	if (b->have_process) {
		CHECK(p->have_process);
		CHECK(n->seq >= o->seq && n->oom >= o->oom &&
		      n->contexts_created >= o->contexts_created &&
		      n->contexts_destroyed >= o->contexts_destroyed &&
		      n->mem_allocs >= o->mem_allocs &&
		      n->mem_frees >= o->mem_frees &&
		      n->mem_peak_bytes >= o->mem_peak_bytes &&
		      n->records_dropped >= o->records_dropped &&
		      n->overhead_ns >= o->overhead_ns &&
		      n->kernels_overflow >= o->kernels_overflow &&
		      n->api_overflow >= o->api_overflow);
	}
	if (b->have_memcpy)
		for (unsigned int i = 0; i < GW_COPY_KINDS; i++)
			CHECK(p->memcpy.kind[i].count >=
				      b->memcpy.kind[i].count &&
			      p->memcpy.kind[i].bytes >=
				      b->memcpy.kind[i].bytes &&
			      p->memcpy.kind[i].total_ns >=
				      b->memcpy.kind[i].total_ns);
	for (unsigned int i = 0; i < p->nkernels; i++) {
		const struct gw_cupti_kernel *k = &p->kernels[i];

		check_name(k->name, sizeof(k->name));
		CHECK(isfinite(k->est_count) && k->est_count >= 0);
		CHECK(isfinite(k->est_ns) && k->est_ns >= 0);
		if (i >= b->nkernels)
			continue;
		CHECK(k->name_hash == b->k[i].hash);
		CHECK(k->count >= b->k[i].count &&
		      k->total_ns >= b->k[i].total_ns &&
		      k->est_count >= b->k[i].est_count &&
		      k->est_ns >= b->k[i].est_ns);
		for (unsigned int j = 0; j < GW_CRING_KBINS; j++)
			CHECK(k->bins[j] >= b->k[i].bins[j]);
	}
	for (unsigned int i = 0; i < p->napis; i++) {
		const struct gw_cupti_api *a = &p->apis[i];

		check_name(a->name, sizeof(a->name));
		CHECK(a->sync <= 1);
		if (i >= b->napis)
			continue;
		CHECK(a->domain == b->a[i].domain && a->cbid == b->a[i].cbid &&
		      a->code == b->a[i].code && a->sync == b->a[i].sync);
		CHECK(a->count >= b->a[i].count &&
		      a->total_ns >= b->a[i].total_ns);
	}
}

static struct before *g_before;

static void decode_checked(struct gw_cupti_proc *p, const void *buf, size_t len)
{
	size_t n;

	remember(p, g_before);
	n = gw_cupti_decode(p, buf, len);
	CHECK(n <= len / 8);
	CHECK(p->st.records - g_before->st.records == n);
	compare(p, g_before);
}

/* A memory file holding d[0..n), or -1. */
static int file_of(const void *d, size_t n)
{
	int fd = memfd_create("fuzz-cupti", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)n) ||
	    (n && pwrite(fd, d, n, 0) != (ssize_t)n)) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t field_at(int fd, size_t off)
{
	uint64_t v = 0;

	CHECK(pread(fd, &v, sizeof(v), (off_t)off) == (ssize_t)sizeof(v));
	return v;
}

static void whole_file(struct gw_cupti_proc *p, const uint8_t *d, size_t n)
{
	struct gw_cupti_ring_info ri;
	size_t len, cut;
	int lost, fd, r;
	void *buf;

	if (n < sizeof(struct gw_cring_hdr))
		return;
	fd = file_of(d, n);
	buf = malloc(GW_CREC_MAX);
	if (fd < 0 || !buf)
		goto out;
	if (gw_cupti_ring_check(fd, &ri) != 0)
		goto out;
	CHECK(ri.data_size >= GW_CRING_DATA_MIN &&
	      ri.data_size <= GW_CRING_DATA_MAX);
	CHECK((uint64_t)ri.data_off + ri.data_size <= n);
	CHECK(ri.lib_version[sizeof(ri.lib_version) - 1] == '\0');
	if (gw_cupti_ring_take(fd, &ri, buf, GW_CREC_MAX, &len, &lost, 1) ==
	    0) {
		CHECK(len <= GW_CREC_MAX);
		decode_checked(p, buf, len);
	}
	/* The writer truncates its file under the reader. */
	cut = n * d[sizeof(struct gw_cring_hdr) - 1] / 256;
	if (ftruncate(fd, (off_t)cut))
		goto out;
	r = gw_cupti_ring_take(fd, &ri, buf, GW_CREC_MAX, &len, &lost, 2);
	CHECK(r == 0 || r == -EBADMSG);
	if (r == 0) {
		CHECK(len <= GW_CREC_MAX);
		decode_checked(p, buf, len);
	}
	r = gw_cupti_ring_check(fd, &ri);
	CHECK(r == 0 || r == -EBADMSG || r == -EPROTONOSUPPORT);
out:
	free(buf);
	if (fd >= 0)
		close(fd);
}

static void in_ring(struct gw_cupti_proc *p, const uint8_t *d, size_t n)
{
	const size_t file_len = 4096 + GW_CRING_DATA_MIN;
	const size_t head_off = offsetof(struct gw_cring_hdr, head);
	const size_t tail_off = offsetof(struct gw_cring_hdr, tail);
	struct gw_cring_hdr *h;
	struct gw_cupti_ring_info ri;
	char *img = NULL, *buf = NULL;
	uint64_t head = 0, tail = 0;
	int fd = -1;

	if (n < 16)
		return;
	memcpy(&head, d, 8);
	memcpy(&tail, d + 8, 8);
	d += 16;
	n -= 16;
	img = calloc(1, file_len);
	buf = malloc(GW_CREC_MAX);
	if (!img || !buf)
		goto out;
	h = (struct gw_cring_hdr *)(void *)img;
	h->magic = GW_CRING_MAGIC;
	h->version = GW_CRING_VERSION;
	h->hdr_size = sizeof(*h);
	h->data_off = 4096;
	h->data_size = GW_CRING_DATA_MIN;
	for (size_t i = 0; i < GW_CRING_DATA_MIN; i++)
		img[4096 + i] = n ? (char)d[i % n] : 0;
	/* Plausible positions most of the time, lies otherwise. */
	if (!(head & 1)) {
		head = (head >> 8) & ~(uint64_t)7;
		tail = head - ((tail >> 8) % (GW_CRING_DATA_MIN + 16) & ~7ull);
	}
	h->head = head;
	h->tail = tail;
	fd = file_of(img, file_len);
	if (fd < 0)
		goto out;
	CHECK(gw_cupti_ring_check(fd, &ri) == 0);
	for (int i = 0; i < 64; i++) {
		size_t len;
		int lost;
		uint64_t t0 = field_at(fd, tail_off), t1, h1;

		CHECK(gw_cupti_ring_take(fd, &ri, buf, GW_CREC_MAX, &len, &lost,
					 2) == 0);
		CHECK(len <= GW_CREC_MAX);
		t1 = field_at(fd, tail_off);
		h1 = field_at(fd, head_off);
		if (lost) {
			CHECK(len == 0 && t1 == h1);
		} else {
			CHECK(t1 == t0 + len);
			CHECK(h1 - t1 <= GW_CRING_DATA_MIN);
		}
		decode_checked(p, buf, len);
		if (!len)
			break;
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(img);
}

static void stream(struct gw_cupti_proc *p, const uint8_t *d, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);
	size_t off = 0;

	if (!copy)
		return;
	memcpy(copy, d, n);
	/* Whole, then again (same cumulative values: nothing may move). */
	decode_checked(p, copy, n);
	decode_checked(p, copy, n);
	/* In 8-byte aligned pieces, as take would hand them over. */
	while (off < n) {
		size_t piece = ((size_t)copy[off] * 8 + 8);

		if (piece > n - off)
			piece = n - off;
		decode_checked(p, copy + off, piece);
		off += piece;
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_cupti_proc *p;

	if (size < 1)
		return 0;
	if (!g_before) {
		g_before = malloc(sizeof(*g_before));
		if (!g_before)
			return 0;
	}
	if (gw_cupti_proc_new(&p))
		return 0;
	switch (data[0] % 3) {
	case 0:
		whole_file(p, data + 1, size - 1);
		break;
	case 1:
		in_ring(p, data + 1, size - 1);
		break;
	default:
		stream(p, data + 1, size - 1);
		break;
	}
	gw_cupti_proc_free(p);
	return 0;
}
