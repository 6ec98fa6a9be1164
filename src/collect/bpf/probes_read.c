/* SPDX-License-Identifier: MIT */
/*
 * probes_read.c - what the eBPF loader reads back (probes_int.h): the
 * per-process API statistics, errors and memory in the BPF hash maps
 * (walked in batches), forgetting the entries of exited processes, the
 * event ring buffers and the per-CPU counters.
 */
#include "probes_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cuda_bpf.h"
#include "cuda.skel.h"

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
	struct api_walk w = { cb, ctx };

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
	struct err_walk w = { cb, ctx };

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

uint64_t gw_probes_mono_ns(void)
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
	w.now = gw_probes_mono_ns();
	w.fd = bpf_map__fd(p->skel->maps.allocs);
	/*
	 * The walk visits every bucket of a large map (about a millisecond):
	 * with no process tracked there is nothing to find in it.
	 */
	r = ps.n ? WALK(p, allocs, struct gw_bpf_alloc_key, struct gw_bpf_alloc,
			mem_entry, &w)
		 : 0;
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
	struct forget_walk w = { pids, bpf_map__fd(m) };

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
	struct pidset one = { &pid, 1, 1 };

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
	struct pidset seen = { 0 }, dead = { 0 };
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

int gw_probes_sample(void *ctx, void *data, size_t size)
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

uint64_t gw_probes_read_counter(struct gw_probes *p, __u32 slot)
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
	hits = gw_probes_read_counter(p, GW_BPF_CTR_HITS);
	c->hits = hits > p->calib_hits ? hits - p->calib_hits : 0;
	c->dropped_allocs =
		gw_probes_read_counter(p, GW_BPF_CTR_DROPPED_ALLOCS);
	c->dropped_events =
		gw_probes_read_counter(p, GW_BPF_CTR_DROPPED_EVENTS);
	c->dropped_execs = gw_probes_read_counter(p, GW_BPF_CTR_DROPPED_EXECS);
	c->ratelimited_events =
		gw_probes_read_counter(p, GW_BPF_CTR_RATELIMITED);
	c->dropped_pids = gw_probes_read_counter(p, GW_BPF_CTR_DROPPED_PIDS);
	c->dropped_stats = gw_probes_read_counter(p, GW_BPF_CTR_DROPPED_STATS);
	c->stale_returns = gw_probes_read_counter(p, GW_BPF_CTR_STALE);
	for (unsigned int i = 0; i < p->nfiles; i++)
		files += p->files[i].fd >= 0;
	c->attached_files = files;
	c->attached_probes = p->nprobes;
	c->attach_failures = p->attach_failures;
	c->dropped_files = p->dropped_files;
}
