/* SPDX-License-Identifier: MIT */
/*
 * profiler.c - loader of profile.bpf.c.  See profiler.h.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collect/bpf/profiler.h"
#include "profile.skel.h"
#include "profile_bpf.h"

#define OPT_HAS(o, f) ((o)->sz >= offsetof(typeof(*(o)), f) + sizeof((o)->f))

struct gw_profiler {
	struct profile_bpf *skel;
	int ncpus; /* possible CPUs */
	int *pfd;  /* perf event per CPU, -1 where offline */
	struct bpf_link **links;
	unsigned int freq;
	unsigned int max_counts, max_stacks;
	struct gw_prof_key *keys;
	int32_t *ids;  /* stack ids read this drain */
	int32_t *live; /* stack ids of the counts made during it, sorted */
	unsigned int nraw_ids;
	int32_t raw_ids[4096]; /* kernel stack ids of raw samples */
	struct ring_buffer *rb;
	struct bpf_link *launch_links[128];
	unsigned int nlaunch_links;
	void (*raw_cb)(void *ctx, const struct gw_profiler_raw *r);
	void *raw_ctx;
	uint64_t kips[GW_PROF_STACK_DEPTH], uips[GW_PROF_STACK_DEPTH];
};

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

static void close_events(struct gw_profiler *p)
{
	for (int i = 0; i < p->ncpus; i++) {
		bpf_link__destroy(p->links[i]);
		p->links[i] = NULL;
		if (p->pfd[i] >= 0)
			close(p->pfd[i]);
		p->pfd[i] = -1;
	}
}

/* A cpu-clock event per CPU with the program attached; CPUs that are
 * offline are skipped.  -errno when no CPU could be had. */
static int open_events(struct gw_profiler *p, unsigned int hz)
{
	int ok = 0, r = -ENODEV;

	for (int i = 0; i < p->ncpus; i++) {
		struct perf_event_attr a = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(a),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.sample_freq = hz,
			.freq = 1,
		};
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, i, -1,
				      PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno != ENODEV)
				r = -errno;
			continue;
		}
		p->links[i] = bpf_program__attach_perf_event(
			p->skel->progs.gw_sample, fd);
		if (!p->links[i]) {
			r = -errno;
			close(fd);
			continue;
		}
		p->pfd[i] = fd;
		ok++;
	}
	if (!ok) {
		close_events(p);
		return r;
	}
	p->freq = hz;
	return 0;
}

static unsigned int read_stack(int fd, int32_t id, uint64_t *ips);

static int on_raw(void *ctx, void *data, size_t size)
{
	struct gw_profiler *p = ctx;
	const struct gw_prof_raw *e = data;
	struct gw_profiler_raw r;

	if (size < sizeof(*e) || !p->raw_cb)
		return 0;
	r.pid = e->pid;
	r.launch = e->kind == GW_PROF_KIND_LAUNCH;
	r.nk = read_stack(bpf_map__fd(p->skel->maps.stacks), e->kstack,
			  p->kips);
	r.kips = p->kips;
	r.regs = (const uint64_t *)e->regs;
	r.stack = e->stack;
	r.len = e->len < sizeof(e->stack) ? e->len : sizeof(e->stack);
	if (e->kstack >= 0) {
		if (p->nraw_ids == sizeof(p->raw_ids) / sizeof(p->raw_ids[0]))
			bpf_map_delete_elem(bpf_map__fd(p->skel->maps.stacks),
					    &e->kstack);
		else
			p->raw_ids[p->nraw_ids++] = e->kstack;
	}
	p->raw_cb(p->raw_ctx, &r);
	return 0;
}

int gw_profiler_open(const struct gw_profiler_opts *o, struct gw_profiler **out,
		     char *err, size_t errlen)
{
	unsigned int freq = 19, all = 0, max_targets = 4096;
	unsigned int max_counts = 16384, max_stacks = 16384;
	struct gw_profiler *p;
	int r;

	put_err(err, errlen, "%s", "");
	*out = NULL;
	if (o) {
		if (o->sz < sizeof(o->sz)) {
			put_err(err, errlen, "options: bad size");
			return -EINVAL;
		}
		if (OPT_HAS(o, freq) && o->freq)
			freq = o->freq;
		if (OPT_HAS(o, all))
			all = o->all;
		if (OPT_HAS(o, max_targets) && o->max_targets)
			max_targets = o->max_targets;
		if (OPT_HAS(o, max_counts) && o->max_counts)
			max_counts = o->max_counts;
		if (OPT_HAS(o, max_stacks) && o->max_stacks)
			max_stacks = o->max_stacks;
	}
	if (freq > 10000 || max_targets > (1u << 20) ||
	    max_counts > (1u << 22) || max_stacks > (1u << 22)) {
		put_err(err, errlen, "options: limit out of range");
		return -EINVAL;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		r = errno;
		put_err(err, errlen, "kernel has no BTF (%s)", strerror(r));
		return r == EACCES ? -EPERM : -ENOSYS;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->max_counts = max_counts;
	p->max_stacks = max_stacks;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0) {
		r = p->ncpus ? p->ncpus : -EINVAL;
		put_err(err, errlen, "cannot count CPUs: %s", strerror(-r));
		goto err;
	}
	p->pfd = malloc((size_t)p->ncpus * sizeof(*p->pfd));
	p->links = calloc((size_t)p->ncpus, sizeof(*p->links));
	p->keys = calloc(max_counts, sizeof(*p->keys));
	p->ids = calloc((size_t)max_counts * 2, sizeof(*p->ids));
	p->live = calloc((size_t)max_counts * 2, sizeof(*p->live));
	if (!p->pfd || !p->links || !p->keys || !p->ids || !p->live) {
		r = -ENOMEM;
		put_err(err, errlen, "out of memory");
		goto err;
	}
	for (int i = 0; i < p->ncpus; i++)
		p->pfd[i] = -1;
	p->skel = profile_bpf__open();
	if (!p->skel) {
		r = -errno;
		put_err(err, errlen, "opening the BPF object: %s",
			strerror(-r));
		goto err;
	}
	p->skel->rodata->profile_all = all;
	p->skel->rodata->self_pid = (uint32_t)getpid();
	if ((r = bpf_map__set_max_entries(p->skel->maps.targets,
					  max_targets)) ||
	    (r = bpf_map__set_max_entries(p->skel->maps.counts, max_counts)) ||
	    (r = bpf_map__set_max_entries(p->skel->maps.stacks, max_stacks))) {
		put_err(err, errlen, "sizing the BPF maps: %s", strerror(-r));
		goto err;
	}
	r = profile_bpf__load(p->skel);
	if (r) {
		put_err(err, errlen, "loading the BPF program: %s",
			strerror(-r));
		goto err;
	}
	p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.raw), on_raw, p,
				 NULL);
	if (!p->rb) {
		r = -errno;
		put_err(err, errlen, "ring buffer: %s", strerror(-r));
		goto err;
	}
	r = open_events(p, freq);
	if (r) {
		put_err(err, errlen, "perf events (cpu-clock at %u Hz): %s",
			freq, strerror(-r));
		goto err;
	}
	*out = p;
	return 0;
err:
	gw_profiler_close(p);
	return r == -EACCES ? -EPERM : r;
}

void gw_profiler_close(struct gw_profiler *p)
{
	if (!p)
		return;
	if (p->links && p->pfd)
		close_events(p);
	ring_buffer__free(p->rb);
	for (unsigned int i = 0; i < p->nlaunch_links; i++)
		bpf_link__destroy(p->launch_links[i]);
	profile_bpf__destroy(p->skel);
	free(p->pfd);
	free(p->links);
	free(p->keys);
	free(p->ids);
	free(p->live);
	free(p);
}

int gw_profiler_target(struct gw_profiler *p, uint32_t pid, int on)
{
	int fd = bpf_map__fd(p->skel->maps.targets);
	uint8_t one = 1;

	if (!on)
		return bpf_map_delete_elem(fd, &pid) && errno != ENOENT ? -errno
									: 0;
	if (bpf_map_update_elem(fd, &pid, &one, BPF_ANY))
		return errno == E2BIG ? -ENOSPC : -errno;
	return 0;
}

int gw_profiler_dwarf(struct gw_profiler *p, uint32_t pid, int on)
{
	int fd = bpf_map__fd(p->skel->maps.dwarf);
	uint8_t one = 1;

	if (!on)
		return bpf_map_delete_elem(fd, &pid) && errno != ENOENT ? -errno
									: 0;
	if (bpf_map_update_elem(fd, &pid, &one, BPF_ANY))
		return errno == E2BIG ? -ENOSPC : -errno;
	return 0;
}

int gw_profiler_poll_raw(struct gw_profiler *p,
			 void (*cb)(void *ctx, const struct gw_profiler_raw *r),
			 void *ctx)
{
	int n;

	p->raw_cb = cb;
	p->raw_ctx = ctx;
	n = ring_buffer__consume(p->rb);
	p->raw_cb = NULL;
	return n;
}

int gw_profiler_attach_launch(struct gw_profiler *p, const char *path,
			      unsigned int *n)
{
	static const char *const fns[] = { "cudaLaunchKernel",
					   "cuLaunchKernel" };

	*n = 0;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = fns[i]);
		struct bpf_link *l;

		if (p->nlaunch_links ==
		    sizeof(p->launch_links) / sizeof(p->launch_links[0]))
			return -ENOSPC;
		l = bpf_program__attach_uprobe_opts(p->skel->progs.gw_launch,
						    -1, path, 0, &o);
		if (!l)
			continue; /* not defined in this file */
		p->launch_links[p->nlaunch_links++] = l;
		(*n)++;
	}
	return 0;
}

int gw_profiler_set_freq(struct gw_profiler *p, unsigned int hz)
{
	if (hz == 0 || hz > 10000)
		return -EINVAL;
	if (hz == p->freq)
		return 0;
	close_events(p);
	return open_events(p, hz);
}

unsigned int gw_profiler_freq(const struct gw_profiler *p)
{
	return p->freq;
}

static unsigned int read_stack(int fd, int32_t id, uint64_t *ips)
{
	unsigned int n = 0;

	if (id < 0 || bpf_map_lookup_elem(fd, &id, ips))
		return 0;
	while (n < GW_PROF_STACK_DEPTH && ips[n])
		n++;
	return n;
}

static int cmp_id(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* The keys of the counts map now, into p->keys (at most max_counts). */
static unsigned int read_keys(struct gw_profiler *p, int cfd)
{
	struct gw_prof_key *prev = NULL;
	unsigned int nk = 0;

	while (nk < p->max_counts &&
	       bpf_map_get_next_key(cfd, prev, &p->keys[nk]) == 0) {
		prev = &p->keys[nk];
		nk++;
	}
	return nk;
}

/*
 * The stack ids of the counts the BPF program made while this drain read
 * the others (it runs on meanwhile), sorted into p->live: a drain that
 * freed them would leave those counts without frames at the next drain.
 * Returns how many.
 */
static unsigned int live_ids(struct gw_profiler *p, int cfd)
{
	unsigned int n = 0, nk = read_keys(p, cfd);

	for (unsigned int i = 0; i < nk; i++) {
		if (p->keys[i].kstack >= 0)
			p->live[n++] = p->keys[i].kstack;
		if (p->keys[i].ustack >= 0)
			p->live[n++] = p->keys[i].ustack;
	}
	qsort(p->live, n, sizeof(*p->live), cmp_id);
	return n;
}

/* Frees a stack id read this drain, unless a count made since uses it. */
static void free_stack(const struct gw_profiler *p, int sfd, int32_t id,
		       unsigned int nlive)
{
	if (!bsearch(&id, p->live, nlive, sizeof(*p->live), cmp_id))
		bpf_map_delete_elem(sfd, &id);
}

int gw_profiler_drain(struct gw_profiler *p,
		      int (*cb)(void *ctx, const struct gw_profiler_sample *s),
		      void *ctx)
{
	int cfd = bpf_map__fd(p->skel->maps.counts);
	int sfd = bpf_map__fd(p->skel->maps.stacks);
	struct gw_prof_key k;
	unsigned int nk = read_keys(p, cfd), nids = 0, nlive;
	int r = 0;

	for (unsigned int i = 0; i < nk; i++) {
		struct gw_profiler_sample s = { 0 };
		uint64_t v = 0;

		k = p->keys[i];
		if (bpf_map_lookup_and_delete_elem(cfd, &k, &v)) {
			/* Older kernels: no lookup-and-delete on hashes. */
			if (bpf_map_lookup_elem(cfd, &k, &v))
				continue;
			bpf_map_delete_elem(cfd, &k);
		}
		if (k.kstack >= 0)
			p->ids[nids++] = k.kstack;
		if (k.ustack >= 0)
			p->ids[nids++] = k.ustack;
		if (r)
			continue; /* counts after a stop are lost */
		s.pid = k.pid;
		s.count = v;
		s.nk = read_stack(sfd, k.kstack, p->kips);
		s.kips = p->kips;
		s.nu = read_stack(sfd, k.ustack, p->uips);
		s.uips = p->uips;
		r = cb(ctx, &s);
	}
	/* Free the stack ids (a stack id may appear several times), those
	 * of the raw samples read since the last drain too, but not those
	 * that counts made meanwhile use: they go with those counts.  What
	 * is sampled between this look and the frees may still lose its
	 * frames, a window of a map walk rather than of the whole drain
	 * (under a slow drain, that lost a hot function half its frames). */
	nlive = live_ids(p, cfd);
	for (unsigned int i = 0; i < nids; i++)
		free_stack(p, sfd, p->ids[i], nlive);
	for (unsigned int i = 0; i < p->nraw_ids; i++)
		free_stack(p, sfd, p->raw_ids[i], nlive);
	p->nraw_ids = 0;
	return r > 0 ? 0 : r;
}

void gw_profiler_counters(struct gw_profiler *p, struct gw_profiler_counters *c)
{
	int fd = bpf_map__fd(p->skel->maps.pcounters);
	uint64_t *v = calloc((size_t)p->ncpus, sizeof(*v));
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(c, 0, sizeof(*c));
	if (v) {
		uint64_t *dst[] = { &c->samples,	&c->selected,
				    &c->dropped_counts, &c->stack_errors,
				    &c->launches,	&c->raw_dropped };

		for (uint32_t slot = 0; slot < 6; slot++) {
			if (bpf_map_lookup_elem(fd, &slot, v))
				continue;
			for (int i = 0; i < p->ncpus; i++)
				*dst[slot] += v[i];
		}
		free(v);
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p->skel->progs.gw_sample),
				   &info, &len) == 0) {
		c->run_ns = info.run_time_ns;
		c->run_cnt = info.run_cnt;
	}
}
