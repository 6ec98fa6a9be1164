/* SPDX-License-Identifier: MIT */
/*
 * decode.c - reading the CUPTI rings (contract in decode.h, wire format in
 * include/gpuwatch/cupti_ring.h).
 *
 * The file is shared with an untrusted process that may rewrite any byte
 * at any time and truncate the file.  So: the header is read once per call
 * into a copy and every field used is taken from the copy; head and tail
 * are read once; the unread bytes are copied out with pread() before a
 * single one is interpreted; record fields are read with memcpy from the
 * copy.  Nothing is mapped: a short read is an error, not a fault.
 *
 * Kernel and API records have a variable part.  Its position is fixed by
 * the version 1 layout: the bins start at GW_CREC_KERNEL_MIN_SIZE (the
 * name after them), the API name at GW_CREC_API_MIN_SIZE.  Bytes beyond
 * the name and its padding are a newer writer's additions and ignored.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/cupti/decode.h"

#define HDR_V1_SIZE ((uint32_t)sizeof(struct gw_cring_hdr))
#define HEAD_OFF    offsetof(struct gw_cring_hdr, head)
#define TAIL_OFF    offsetof(struct gw_cring_hdr, tail)
#define SEEN_OFF    offsetof(struct gw_cring_hdr, reader_seen_ns)

static int is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Exactly n bytes at off, or -EBADMSG (file shorter now) / -errno. */
static int pread_all(int fd, void *dst, size_t n, uint64_t off)
{
	ssize_t r = pread(fd, dst, n, (off_t)off);

	if (r < 0)
		return -errno;
	return (size_t)r == n ? 0 : -EBADMSG;
}

static int pwrite64_at(int fd, uint64_t v, size_t off)
{
	ssize_t r = pwrite(fd, &v, sizeof(v), (off_t)off);

	if (r < 0)
		return -errno;
	return r == (ssize_t)sizeof(v) ? 0 : -EBADMSG;
}

/* Checks a copied header against the size of its file. */
static int check_hdr(const struct gw_cring_hdr *h, uint64_t file_len,
		     struct gw_cupti_ring_info *out)
{
	if (h->magic != GW_CRING_MAGIC || h->version == 0)
		return -EBADMSG;
	if (h->version != GW_CRING_VERSION)
		return -EPROTONOSUPPORT;
	if (h->hdr_size < HDR_V1_SIZE || h->data_off < h->hdr_size ||
	    h->data_off % 4096u != 0)
		return -EBADMSG;
	if (!is_pow2(h->data_size) || h->data_size < GW_CRING_DATA_MIN ||
	    h->data_size > GW_CRING_DATA_MAX)
		return -EBADMSG;
	if ((uint64_t)h->data_off + h->data_size > file_len)
		return -EBADMSG;

	memset(out, 0, sizeof(*out));
	out->version = h->version;
	out->data_off = h->data_off;
	out->data_size = h->data_size;
	out->pid = h->pid;
	out->flags = h->flags;
	out->pidns_ino = h->pidns_ino;
	out->start_ticks = h->start_ticks;
	out->created_ns = h->created_ns;
	out->write_ns = h->write_ns;
	out->dropped = h->dropped;
	out->status = h->status;
	for (size_t i = 0; i + 1 < sizeof(out->lib_version); i++) {
		unsigned char c = (unsigned char)h->lib_version[i];

		if (!c)
			break;
		out->lib_version[i] = (c < 0x20 || c > 0x7e) ? '?' : (char)c;
	}
	return 0;
}

int gw_cupti_ring_check(int fd, struct gw_cupti_ring_info *out)
{
	struct gw_cring_hdr h;
	struct stat st;
	int r;

	if (fd < 0 || !out)
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	if (st.st_size < (off_t)sizeof(h))
		return -EBADMSG;
	r = pread_all(fd, &h, sizeof(h), 0);
	if (r)
		return r;
	return check_hdr(&h, (uint64_t)st.st_size, out);
}

/*
 * Length of the prefix of buf[0..n) made of whole records; n itself when
 * the framing breaks before the end (the broken bytes go to the decoder,
 * which refuses them).
 */
static size_t whole_records(const char *buf, size_t n)
{
	size_t off = 0;

	while (off + sizeof(struct gw_crec) <= n) {
		struct gw_crec r;

		memcpy(&r, buf + off, sizeof(r));
		if (r.size < sizeof(r) || r.size % 8 || r.size > GW_CREC_MAX)
			return n;
		if (r.size > n - off)
			break;
		off += r.size;
	}
	return off;
}

int gw_cupti_ring_take(int fd, const struct gw_cupti_ring_info *ri, void *buf,
		       size_t cap, size_t *len, int *lost, uint64_t now_ns)
{
	uint64_t head, tail, unread, pos;
	size_t n, first;
	int r;

	if (fd < 0 || !ri || !buf || !len || !lost || cap < GW_CREC_MAX ||
	    !is_pow2(ri->data_size))
		return -EINVAL;
	*len = 0;
	*lost = 0;
	r = pread_all(fd, &head, sizeof(head), HEAD_OFF);
	if (!r)
		r = pread_all(fd, &tail, sizeof(tail), TAIL_OFF);
	if (!r)
		r = pwrite64_at(fd, now_ns, SEEN_OFF);
	if (r)
		return r;
	unread = head - tail;
	if (tail > head || unread > ri->data_size || head % 8 || tail % 8) {
		*lost = 1;
		return pwrite64_at(fd, head, TAIL_OFF);
	}
	if (!unread)
		return 0;
	n = unread > cap ? cap : (size_t)unread;
	pos = tail & (ri->data_size - 1);
	first = ri->data_size - pos;
	if (first > n)
		first = n;
	r = pread_all(fd, buf, first, ri->data_off + pos);
	if (!r && n > first)
		r = pread_all(fd, (char *)buf + first, n - first, ri->data_off);
	if (r)
		return r;
	if (n < unread)
		n = whole_records(buf, n);
	*len = n;
	return pwrite64_at(fd, tail + n, TAIL_OFF);
}

int gw_cupti_proc_new(struct gw_cupti_proc **out)
{
	struct gw_cupti_proc *p;

	if (!out)
		return -EINVAL;
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->kernels = calloc(GW_CUPTI_MAX_KERNELS, sizeof(*p->kernels));
	if (!p->kernels) {
		free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void gw_cupti_proc_free(struct gw_cupti_proc *p)
{
	if (!p)
		return;
	free(p->kernels);
	free(p);
}

/* ---- records ---- */

static size_t round8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

/* A NUL-terminated name of len bytes (NUL included), control bytes -> '?'. */
static int copy_name(char *dst, const char *src, size_t len)
{
	if (len < 1 || src[len - 1] != '\0')
		return -EBADMSG;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];

		if (!c) {
			dst[i] = '\0';
			return 0;
		}
		dst[i] = c < 0x20 ? '?' : (char)c;
	}
	return 0;
}

static int finite_nonneg(double v)
{
	return isfinite(v) && v >= 0;
}

static int apply_process(struct gw_cupti_proc *p, const char *rec,
			 uint32_t size)
{
	struct gw_crec_process r;
	const struct gw_crec_process *o = &p->process;

	if (size < GW_CREC_PROCESS_MIN_SIZE)
		return -EBADMSG;
	memset(&r, 0, sizeof(r));
	memcpy(&r, rec, size < sizeof(r) ? size : sizeof(r));
	if (!(r.sampling_ratio > 0 && r.sampling_ratio <= 1))
		return -EBADMSG;
	if (p->have_process &&
	    (r.seq < o->seq || r.contexts_created < o->contexts_created ||
	     r.contexts_destroyed < o->contexts_destroyed ||
	     r.mem_peak_bytes < o->mem_peak_bytes ||
	     r.mem_allocs < o->mem_allocs || r.mem_frees < o->mem_frees ||
	     r.oom < o->oom || r.records < o->records ||
	     r.records_dropped < o->records_dropped ||
	     r.kernels_overflow < o->kernels_overflow ||
	     r.api_overflow < o->api_overflow ||
	     r.overhead_ns < o->overhead_ns || r.callbacks < o->callbacks ||
	     r.apis_muted < o->apis_muted))
		return -EBADMSG;
	p->process = r;
	p->have_process = 1;
	return 0;
}

static int apply_memcpy(struct gw_cupti_proc *p, const char *rec, uint32_t size)
{
	struct gw_crec_memcpy r;

	if (size < GW_CREC_MEMCPY_MIN_SIZE)
		return -EBADMSG;
	memset(&r, 0, sizeof(r));
	memcpy(&r, rec, size < sizeof(r) ? size : sizeof(r));
	if (p->have_memcpy) {
		for (unsigned int k = 0; k < GW_COPY_KINDS; k++) {
			const struct gw_crec_copy *o = &p->memcpy.kind[k];

			if (r.kind[k].count < o->count ||
			    r.kind[k].bytes < o->bytes ||
			    r.kind[k].total_ns < o->total_ns)
				return -EBADMSG;
		}
	}
	p->memcpy = r;
	p->have_memcpy = 1;
	return 0;
}

static struct gw_cupti_kernel *find_kernel(struct gw_cupti_proc *p,
					   uint64_t hash)
{
	for (unsigned int i = 0; i < p->nkernels; i++)
		if (p->kernels[i].name_hash == hash)
			return &p->kernels[i];
	return NULL;
}

/* Returns 0, -EBADMSG (refused) or -ENOSPC (table full). */
static int apply_kernel(struct gw_cupti_proc *p, const char *rec, uint32_t size)
{
	struct gw_crec_kernel r;
	struct gw_cupti_kernel *k;
	uint64_t bins[GW_CRING_KBINS];
	char name[GW_CRING_NAME_MAX];
	const char *var = rec + GW_CREC_KERNEL_MIN_SIZE;

	if (size < GW_CREC_KERNEL_MIN_SIZE)
		return -EBADMSG;
	memcpy(&r, rec, sizeof(r));
	if (r.nbins > GW_CRING_KBINS || r.name_len < 1 ||
	    r.name_len > GW_CRING_NAME_MAX ||
	    round8((size_t)GW_CREC_KERNEL_MIN_SIZE +
		   (size_t)r.nbins * sizeof(struct gw_crec_bin) + r.name_len) >
		    size)
		return -EBADMSG;
	if (!finite_nonneg(r.est_count) || !finite_nonneg(r.est_ns))
		return -EBADMSG;
	memset(bins, 0, sizeof(bins));
	for (unsigned int i = 0; i < r.nbins; i++) {
		struct gw_crec_bin b;

		memcpy(&b, var + (size_t)i * sizeof(b), sizeof(b));
		if (b.bin >= GW_CRING_KBINS)
			return -EBADMSG;
		if (i > 0) {
			struct gw_crec_bin prev;

			memcpy(&prev, var + (size_t)(i - 1) * sizeof(prev),
			       sizeof(prev));
			if (b.bin <= prev.bin)
				return -EBADMSG;
		}
		bins[b.bin] = b.count;
	}
	if (copy_name(name, var + (size_t)r.nbins * sizeof(struct gw_crec_bin),
		      r.name_len))
		return -EBADMSG;

	k = find_kernel(p, r.name_hash);
	if (k) {
		if (r.count < k->count || r.total_ns < k->total_ns ||
		    r.est_count < k->est_count || r.est_ns < k->est_ns)
			return -EBADMSG;
		for (unsigned int i = 0; i < GW_CRING_KBINS; i++)
			if (bins[i] < k->bins[i])
				return -EBADMSG;
	} else {
		if (p->nkernels >= GW_CUPTI_MAX_KERNELS)
			return -ENOSPC;
		k = &p->kernels[p->nkernels++];
		memset(k, 0, sizeof(*k));
	}
	if (r.count > k->count)
		k->recent_ns = (double)(r.total_ns - k->total_ns) /
			       (double)(r.count - k->count);
	k->name_hash = r.name_hash;
	k->count = r.count;
	k->total_ns = r.total_ns;
	k->est_count = r.est_count;
	k->est_ns = r.est_ns;
	k->min_ns = r.min_ns;
	k->max_ns = r.max_ns;
	k->flags = r.flags;
	k->device = r.device;
	memcpy(k->grid, r.grid, sizeof(k->grid));
	memcpy(k->block, r.block, sizeof(k->block));
	k->registers = r.registers;
	k->static_smem = r.static_smem;
	k->dynamic_smem = r.dynamic_smem;
	k->local_mem = r.local_mem;
	k->occupancy = r.occupancy;
	memcpy(k->bins, bins, sizeof(bins));
	memcpy(k->name, name, sizeof(k->name));
	k->seen_seq = p->process.seq;
	return 0;
}

static int apply_api(struct gw_cupti_proc *p, const char *rec, uint32_t size)
{
	struct gw_crec_api r;
	struct gw_cupti_api *a = NULL;
	char name[GW_CRING_API_NAME_MAX];

	if (size < GW_CREC_API_MIN_SIZE)
		return -EBADMSG;
	memcpy(&r, rec, sizeof(r));
	if (r.name_len < 1 || r.name_len > GW_CRING_API_NAME_MAX ||
	    round8((size_t)GW_CREC_API_MIN_SIZE + r.name_len) > size)
		return -EBADMSG;
	if (copy_name(name, rec + GW_CREC_API_MIN_SIZE, r.name_len))
		return -EBADMSG;
	r.sync = r.sync ? 1 : 0;
	for (unsigned int i = 0; i < p->napis; i++) {
		struct gw_cupti_api *e = &p->apis[i];

		if (e->domain == r.domain && e->cbid == r.cbid &&
		    e->code == r.code && e->sync == r.sync) {
			a = e;
			break;
		}
	}
	if (a) {
		if (r.count < a->count || r.total_ns < a->total_ns)
			return -EBADMSG;
	} else {
		if (p->napis >= GW_CUPTI_MAX_APIS)
			return -ENOSPC;
		a = &p->apis[p->napis++];
	}
	a->domain = r.domain;
	a->cbid = r.cbid;
	a->code = r.code;
	a->sync = r.sync;
	a->count = r.count;
	a->total_ns = r.total_ns;
	memcpy(a->name, name, sizeof(a->name));
	return 0;
}

static int apply_kfunc(struct gw_cupti_proc *p, const char *rec, uint32_t size)
{
	struct gw_crec_kfunc r;
	struct gw_cupti_kfunc *k = NULL;

	if (size < GW_CREC_KFUNC_MIN_SIZE)
		return -EBADMSG;
	memcpy(&r, rec, sizeof(r));
	if (r.handle == 0 || r.kind == 0)
		return -EBADMSG;
	for (unsigned int i = 0; i < p->nkfuncs && !k; i++)
		if (p->kfuncs[i].handle == r.handle &&
		    p->kfuncs[i].kind == r.kind)
			k = &p->kfuncs[i];
	if (!k) {
		if (p->nkfuncs >= GW_CUPTI_MAX_KFUNCS)
			return -ENOSPC;
		k = &p->kfuncs[p->nkfuncs++];
		k->handle = r.handle;
		k->kind = r.kind;
		k->name_hash = ~r.name_hash;
	}
	if (k->name_hash != r.name_hash) {
		k->name_hash = r.name_hash;
		p->kfunc_gen++;
	}
	return 0;
}

size_t gw_cupti_decode(struct gw_cupti_proc *p, const void *buf, size_t len)
{
	const char *b = buf;
	size_t off = 0, applied = 0;

	if (!p || (!buf && len))
		return 0;
	while (off < len) {
		struct gw_crec h;
		int r;

		if (len - off < sizeof(h)) {
			p->st.bad++;
			break;
		}
		memcpy(&h, b + off, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > GW_CREC_MAX ||
		    h.size > len - off) {
			p->st.bad++;
			break;
		}
		switch (h.type) {
		case GW_CREC_PAD:
			r = 1;
			break;
		case GW_CREC_PROCESS:
			r = apply_process(p, b + off, h.size);
			break;
		case GW_CREC_KERNEL:
			r = apply_kernel(p, b + off, h.size);
			break;
		case GW_CREC_MEMCPY:
			r = apply_memcpy(p, b + off, h.size);
			break;
		case GW_CREC_API:
			r = apply_api(p, b + off, h.size);
			break;
		case GW_CREC_KFUNC:
			r = apply_kfunc(p, b + off, h.size);
			break;
		default:
			p->st.unknown++;
			r = 1;
			break;
		}
		if (r == 0) {
			p->st.records++;
			applied++;
		} else if (r == -ENOSPC) {
			p->st.overflow++;
		} else if (r < 0) {
			p->st.bad++;
		}
		off += h.size;
	}
	return applied;
}
