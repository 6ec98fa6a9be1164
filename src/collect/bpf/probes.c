/* SPDX-License-Identifier: MIT */
/*
 * probes.c - loader of cuda.bpf.c: opening and closing, attaching and
 * duty-cycling the uprobes, and the calibration of the per-hit cost.  The
 * CUDA API table is in probes_api.c, symbol resolution in ELF files in
 * probes_elf.c, reading the maps and the ring buffers in probes_read.c;
 * all share probes_int.h.
 *
 * Each attached file keeps an O_RDONLY descriptor; probes attach through
 * "/proc/self/fd/N", which names the inode the descriptor holds whatever
 * happens to the path (a container's root going away, a package upgrade
 * replacing the library), and lets high-rate probes be attached again at
 * every duty cycle without resolving symbols again.
 */
#include "probes.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cuda_bpf.h"
#include "cuda.skel.h"
#include "probes_int.h"

/* ---- the loader's state (probes_int.h) ---- */

__attribute__((format(printf, 2, 3))) void
gw_probes_seterr(struct gw_probes *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

const char *gw_probes_last_error(const struct gw_probes *p)
{
	return p ? p->err : "";
}

static int cmp_api_name(const void *a, const void *b)
{
	return strcmp(gw_cuda_apis[*(const unsigned short *)a].name,
		      gw_cuda_apis[*(const unsigned short *)b].name);
}

/* ---- opening ---- */

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

/*
 * uprobe_multi links (kernel 6.6) attach and detach a whole set of uprobes
 * at the cost of one: with one perf event per uprobe, every detach waits
 * for RCU grace periods under a global mutex (tens of ms each).  Libbpf
 * 1.1 predates them, so they are made with the bpf(2) command directly.
 */
#define UPROBE_MULTI_ATTACH 48 /* BPF_TRACE_UPROBE_MULTI */
#define UPROBE_MULTI_RETURN 1u /* BPF_F_UPROBE_MULTI_RETURN */

struct uprobe_multi_attr { /* union bpf_attr, link_create.uprobe_multi */
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 uflags;
	__u32 pid;
};

/* A link fd for prog on the n offsets of the file at path, or -errno. */
static int multi_link(const struct bpf_program *prog, const char *path,
		      const uint64_t *off, const uint64_t *cookie,
		      unsigned int n, bool ret)
{
	struct uprobe_multi_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)bpf_program__fd(prog);
	a.attach_type = UPROBE_MULTI_ATTACH;
	a.path = (uintptr_t)path;
	a.offsets = (uintptr_t)off;
	a.cookies = (uintptr_t)cookie;
	a.cnt = n;
	a.uflags = ret ? UPROBE_MULTI_RETURN : 0;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : (int)fd;
}

/* Does this kernel know the uprobe_multi attach type? */
static bool have_uprobe_multi(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = UPROBE_MULTI_ATTACH);
	int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &o);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

#define OPT_HAS(o, f)                                                          \
	((o)->sz >= offsetof(struct gw_probes_opts, f) + sizeof((o)->f))

int gw_probes_open(const struct gw_probes_opts *o, struct gw_probes **out,
		   char *err, size_t errlen)
{
	unsigned int max_allocs = GW_PROBES_DEFAULT_MAX_ALLOCS;
	unsigned int max_pids = GW_PROBES_DEFAULT_MAX_PIDS;
	unsigned int max_files = GW_PROBES_DEFAULT_MAX_FILES;
	unsigned int err_rate = GW_PROBES_DEFAULT_ERROR_EVENTS;
	struct gw_probes *p = NULL;
	struct cuda_bpf *s;
	int r;

	put_err(err, errlen, "%s", "");
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (o) {
		if (o->sz < sizeof(o->sz)) {
			put_err(err, errlen, "options: bad size");
			return -EINVAL;
		}
		/* A newer caller's extra fields must be unset. */
		for (size_t i = sizeof(*o); i < o->sz; i++)
			if (((const unsigned char *)o)[i]) {
				put_err(err, errlen,
					"options: unknown field set");
				return -EINVAL;
			}
		if (OPT_HAS(o, max_allocs) && o->max_allocs)
			max_allocs = o->max_allocs;
		if (OPT_HAS(o, max_pids) && o->max_pids)
			max_pids = o->max_pids;
		if (OPT_HAS(o, max_files) && o->max_files)
			max_files = o->max_files;
		if (OPT_HAS(o, error_events_per_sec) && o->error_events_per_sec)
			err_rate = o->error_events_per_sec;
	}
	if (max_pids > (1u << 20) || max_allocs > (1u << 26) ||
	    max_files > 65536) {
		put_err(err, errlen, "options: limit out of range");
		return -EINVAL;
	}

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		r = errno;
		put_err(err, errlen,
			"kernel has no BTF (/sys/kernel/btf/vmlinux: %s; needs "
			"CONFIG_DEBUG_INFO_BTF)",
			strerror(r));
		return r == EACCES ? -EPERM : -ENOSYS;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		put_err(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -ENOSYS;
	}

	p = calloc(1, sizeof(*p));
	if (!p) {
		put_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->max_allocs = max_allocs;
	p->max_pids = max_pids;
	p->max_files = max_files;
	p->high_on = 1;
	for (unsigned int i = 0; i < NAPIS; i++)
		p->by_name[i] = (unsigned short)i;
	qsort(p->by_name, NAPIS, sizeof(p->by_name[0]), cmp_api_name);
	p->neg = calloc(NEG_MAX, sizeof(*p->neg));
	p->files = calloc(max_files, sizeof(*p->files));
	if (!p->neg || !p->files) {
		put_err(err, errlen, "out of memory");
		r = -ENOMEM;
		goto err_free;
	}
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0) {
		r = p->ncpus ? p->ncpus : -EINVAL;
		put_err(err, errlen, "cannot count possible CPUs: %s",
			strerror(-r));
		goto err_free;
	}

	p->multi =
		!(o && OPT_HAS(o, force_perf_attach) && o->force_perf_attach) &&
		have_uprobe_multi();
	/* Without uprobe_multi links: uprobes as perf events. */
	if (!p->multi &&
	    access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		r = -ENOSYS;
		put_err(err, errlen,
			"kernel has no uprobe events "
			"(/sys/bus/event_source/devices/uprobe: %s; needs "
			"CONFIG_UPROBE_EVENTS)",
			strerror(errno));
		goto err_free;
	}
	s = p->skel = cuda_bpf__open();
	if (!s) {
		r = -errno;
		put_err(err, errlen, "opening the BPF object: %s",
			strerror(-r));
		goto err_free;
	}
	s->rodata->error_events_per_sec = err_rate;
	s->rodata->oom_events_per_sec = err_rate;
	if (p->multi && ((r = bpf_program__set_expected_attach_type(
				  s->progs.gw_entry, UPROBE_MULTI_ATTACH)) ||
			 (r = bpf_program__set_expected_attach_type(
				  s->progs.gw_return, UPROBE_MULTI_ATTACH)))) {
		put_err(err, errlen, "setting up the BPF programs: %s",
			strerror(-r));
		goto err_destroy;
	}
	if ((r = bpf_map__set_max_entries(s->maps.allocs, max_allocs)) ||
	    (r = bpf_map__set_max_entries(s->maps.procs, max_pids)) ||
	    (r = bpf_map__set_max_entries(s->maps.ratelimit, max_pids)) ||
	    (r = bpf_map__set_max_entries(s->maps.stats, max_pids * 32)) ||
	    (r = bpf_map__set_max_entries(s->maps.errors, max_pids * 16))) {
		put_err(err, errlen, "sizing the BPF maps: %s", strerror(-r));
		goto err_destroy;
	}
	r = cuda_bpf__load(s);
	if (r) {
		if (r == -EPERM) {
			put_err(err, errlen,
				"loading BPF programs: %s (needs root, or "
				"CAP_BPF and CAP_PERFMON)",
				strerror(EPERM));
		} else if (r == -ENOSYS || r == -EOPNOTSUPP ||
			   r == -524 /* ENOTSUPP */) {
			r = -ENOSYS;
			put_err(err, errlen,
				"loading BPF programs: the kernel lacks BPF "
				"support they need (ring buffers, attach "
				"cookies: 5.15 or later)");
		} else {
			/* EACCES, EINVAL: the verifier said no. */
			put_err(err, errlen,
				"loading BPF programs: the kernel rejected "
				"them: "
				"%s (libbpf's messages have the verifier log)",
				strerror(-r));
			r = -EINVAL;
		}
		goto err_destroy;
	}
	p->exec_link = bpf_program__attach(s->progs.gw_exec);
	p->exit_link =
		p->exec_link ? bpf_program__attach(s->progs.gw_exit) : NULL;
	if (!p->exit_link) {
		r = -errno;
		put_err(err, errlen,
			"attaching to the sched_process_exec/exit tracepoints: "
			"%s",
			strerror(-r));
		goto err_links;
	}
	p->rb = ring_buffer__new(bpf_map__fd(s->maps.events), gw_probes_sample,
				 p, NULL);
	if (!p->rb) {
		r = -errno;
		put_err(err, errlen, "ring buffer: %s", strerror(-r));
		goto err_links;
	}
	r = ring_buffer__add(p->rb, bpf_map__fd(s->maps.execs),
			     gw_probes_sample, p);
	if (r) {
		put_err(err, errlen, "ring buffer: %s", strerror(-r));
		goto err_rb;
	}
	*out = p;
	return 0;

err_rb:
	ring_buffer__free(p->rb);
err_links:
	bpf_link__destroy(p->exit_link);
	bpf_link__destroy(p->exec_link);
err_destroy:
	cuda_bpf__destroy(p->skel);
err_free:
	free(p->files);
	free(p->neg);
	free(p);
	return r;
}

static void detach_syms(struct gw_probes *p, struct file *f, bool high);

static void file_release(struct gw_probes *p, struct file *f)
{
	detach_syms(p, f, true);
	detach_syms(p, f, false);
	free(f->syms);
	free(f->ml);
	if (f->fd >= 0)
		close(f->fd);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

void gw_probes_close(struct gw_probes *p)
{
	if (!p)
		return;
	for (unsigned int i = 0; i < p->nfiles; i++)
		file_release(p, &p->files[i]);
	ring_buffer__free(p->rb);
	bpf_link__destroy(p->exit_link);
	bpf_link__destroy(p->exec_link);
	cuda_bpf__destroy(p->skel);
	free(p->files);
	free(p->neg);
	free(p);
}

/* ---- attaching ---- */

static bool sym_high_rate(const struct fsym *s)
{
	return s->sym < NSYMS &&
	       family_high_rate(gw_cuda_apis[s->sym / NVARIANTS].family);
}

/* Older kernels: a perf event per uprobe, the return probe first. */
static int perf_attach(struct gw_probes *p, const char *path, struct fsym *s)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o,
		    .bpf_cookie = gw_probes_sym_cookie(s->sym),
		    .retprobe = true);

	s->ret = bpf_program__attach_uprobe_opts(p->skel->progs.gw_return, -1,
						 path, s->off, &o);
	if (!s->ret)
		return -errno;
	o.retprobe = false;
	s->entry = bpf_program__attach_uprobe_opts(p->skel->progs.gw_entry, -1,
						   path, s->off, &o);
	if (!s->entry) {
		int r = -errno;

		bpf_link__destroy(s->ret);
		s->ret = NULL;
		return r;
	}
	return 0;
}

/* One pair of uprobe_multi links (returns, then entries) for n symbols. */
static int multi_attach(struct gw_probes *p, struct file *f, const char *path,
			struct fsym **v, unsigned int n, bool high)
{
	uint64_t *off = calloc(2 * (size_t)n, sizeof(*off)), *cookie = off + n;
	struct mlink *ml;
	int ret, ent, r = -ENOMEM;

	ml = realloc(f->ml, (f->nml + 2) * sizeof(*ml));
	if (ml)
		f->ml = ml;
	if (!off || !ml)
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		off[i] = v[i]->off;
		cookie[i] = gw_probes_sym_cookie(v[i]->sym);
	}
	ret = r = multi_link(p->skel->progs.gw_return, path, off, cookie, n,
			     true);
	if (r < 0)
		goto out;
	ent = r = multi_link(p->skel->progs.gw_entry, path, off, cookie, n,
			     false);
	if (r < 0) {
		close(ret);
		goto out;
	}
	f->ml[f->nml++] = (struct mlink){ ret, n, high };
	f->ml[f->nml++] = (struct mlink){ ent, n, high };
	r = 0;
out:
	free(off);
	return r;
}

/*
 * Attaches every symbol of f not attached yet that is high-rate (high) or
 * not; a symbol that fails is skipped from then on.  Returns how many were
 * attached, or the last error when none could be.
 */
static int attach_syms(struct gw_probes *p, struct file *f, bool high)
{
	struct fsym **v = calloc(f->nsyms ? f->nsyms : 1, sizeof(*v));
	unsigned int n = 0, done = 0;
	char path[32];
	int r = 0;

	if (!v)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	for (unsigned int i = 0; i < f->nsyms; i++)
		if (!f->syms[i].on && !f->syms[i].failed &&
		    sym_high_rate(&f->syms[i]) == high)
			v[n++] = &f->syms[i];
	/* All in one pair of links if possible, else one by one. */
	if (n && p->multi && !multi_attach(p, f, path, v, n, high)) {
		for (unsigned int i = 0; i < n; i++)
			v[i]->on = true;
		done = n;
		n = 0;
	}
	for (unsigned int i = 0; i < n; i++) {
		r = p->multi ? multi_attach(p, f, path, &v[i], 1, high)
			     : perf_attach(p, path, v[i]);
		if (r) {
			v[i]->failed = true;
			p->attach_failures++;
			gw_probes_seterr(
				p, "attaching %s at offset 0x%" PRIx64 ": %s",
				gw_cuda_apis[v[i]->sym / NVARIANTS].name,
				v[i]->off, strerror(-r));
			continue;
		}
		v[i]->on = true;
		done++;
	}
	free(v);
	p->nprobes += 2 * (uint64_t)done;
	return done || !r ? (int)done : r;
}

/* Detaches the high-rate symbols of f (high), or the others; entries first. */
static void detach_syms(struct gw_probes *p, struct file *f, bool high)
{
	unsigned int j = 0;

	for (unsigned int i = f->nml; i-- > 0;) {
		if (f->ml[i].high != high)
			continue;
		close(f->ml[i].fd);
		f->ml[i].fd = -1;
		p->nprobes -= f->ml[i].n;
	}
	for (unsigned int i = 0; i < f->nml; i++)
		if (f->ml[i].fd >= 0)
			f->ml[j++] = f->ml[i];
	f->nml = j;
	for (unsigned int i = 0; i < f->nsyms; i++) {
		struct fsym *s = &f->syms[i];

		if (sym_high_rate(s) != high || !s->on)
			continue;
		if (s->entry || s->ret) {
			bpf_link__destroy(s->entry);
			bpf_link__destroy(s->ret);
			s->entry = s->ret = NULL;
			p->nprobes -= 2;
		}
		s->on = false;
	}
}

static bool neg_known(const struct gw_probes *p, dev_t dev, ino_t ino,
		      unsigned int libs)
{
	for (unsigned int i = 0; i < p->nneg; i++)
		if (p->neg[i].dev == dev && p->neg[i].ino == ino &&
		    !(libs & ~p->neg[i].libs))
			return true;
	return false;
}

static void neg_add(struct gw_probes *p, dev_t dev, ino_t ino,
		    unsigned int libs)
{
	for (unsigned int i = 0; i < p->nneg; i++)
		if (p->neg[i].dev == dev && p->neg[i].ino == ino) {
			p->neg[i].libs |= libs;
			return;
		}
	p->neg[p->neg_next] = (struct neg){ dev, ino, libs };
	p->neg_next = (p->neg_next + 1) % NEG_MAX;
	if (p->nneg < NEG_MAX)
		p->nneg++;
}

int gw_probes_attach_file(struct gw_probes *p, const char *path,
			  unsigned int libs, unsigned int *n)
{
	struct found *found = NULL;
	struct file *f = NULL;
	unsigned int want, nfound = 0, ndeferred = 0;
	struct fsym *syms;
	struct stat st;
	int fd, r, r2 = 0;

	if (n)
		*n = 0;
	if (!p || !path || !n)
		return -EINVAL;
	libs &= GW_LIB_RUNTIME | GW_LIB_DRIVER;
	if (!libs)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		gw_probes_seterr(p, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st)) {
		r = -errno;
		gw_probes_seterr(p, "%s: %s", path, strerror(-r));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		gw_probes_seterr(p, "%s: not a regular file", path);
		r = -ENOEXEC;
		goto out_close;
	}
	for (unsigned int i = 0; i < p->nfiles; i++)
		if (p->files[i].dev == st.st_dev &&
		    p->files[i].ino == st.st_ino) {
			f = &p->files[i];
			break;
		}
	want = f ? libs & ~f->libs : libs;
	if (!want || neg_known(p, st.st_dev, st.st_ino, want)) {
		r = 0;
		goto out_close;
	}

	found = calloc(NSYMS, sizeof(*found));
	if (!found) {
		r = -ENOMEM;
		goto out_close;
	}
	r = gw_probes_resolve(p, fd, want, found);
	if (r) {
		if (r == -ENOEXEC)
			neg_add(p, st.st_dev, st.st_ino, want);
		goto out_free;
	}
	for (unsigned int i = 0; i < NSYMS; i++)
		nfound += found[i].rank > 0;
	if (!nfound) {
		neg_add(p, st.st_dev, st.st_ino, want);
		if (f)
			f->libs |= want;
		goto out_free;
	}
	if (!f) {
		if (p->nfiles == p->max_files) {
			p->dropped_files++;
			gw_probes_seterr(p,
					 "%s: more than %u files with probes",
					 path, p->max_files);
			r = -ENOSPC;
			goto out_free;
		}
		f = &p->files[p->nfiles++];
		memset(f, 0, sizeof(*f));
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->fd = -1;
	}
	if (f->fd < 0) {
		f->fd = fd;
		fd = -1;
	}
	f->libs |= want;
	syms = realloc(f->syms, (f->nsyms + nfound) * sizeof(*syms));
	if (!syms) {
		r = -ENOMEM;
		goto out_free;
	}
	f->syms = syms;
	for (unsigned int i = 0; i < NSYMS; i++) {
		if (!found[i].rank)
			continue;
		memset(&f->syms[f->nsyms], 0, sizeof(*syms));
		f->syms[f->nsyms].sym = i;
		f->syms[f->nsyms++].off = found[i].off;
		if (!p->high_on &&
		    family_high_rate(gw_cuda_apis[i / NVARIANTS].family))
			ndeferred++;
	}
	r = attach_syms(p, f, false);
	if (r >= 0 && p->high_on)
		r2 = attach_syms(p, f, true);
	if (r >= 0 && r2 >= 0)
		*n = (unsigned int)(r + r2) + ndeferred;
	else if (r >= 0)
		*n = (unsigned int)r;
	if (!*n) {
		r = r < 0 ? r : r2;
		goto out_free;
	}
	r = 0;
out_free:
	free(found);
	if (f && f->fd >= 0) {
		bool any = false;

		for (unsigned int i = 0; i < f->nsyms; i++)
			any |= !f->syms[i].failed;
		if (!any) {
			/* Kept, so it is not tried again, without its fd. */
			close(f->fd);
			f->fd = -1;
		}
	}
out_close:
	if (fd >= 0)
		close(fd);
	return r;
}

int gw_probes_set_high_rate(struct gw_probes *p, int on)
{
	int r = 0;

	if (!p)
		return -EINVAL;
	on = !!on;
	if (on == p->high_on)
		return 0;
	if (on) /* returns of calls that started while off are stale */
		__atomic_add_fetch(&p->skel->bss->epoch, 1, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < p->nfiles; i++) {
		struct file *f = &p->files[i];
		int e;

		if (f->fd < 0)
			continue;
		if (!on) {
			detach_syms(p, f, true);
			continue;
		}
		e = attach_syms(p, f, true);
		if (e < 0 && !r)
			r = e;
	}
	p->high_on = on;
	return r;
}

/* ---- calibration ---- */

/* The probed function: a call that does nothing and returns 0 (success). */
__attribute__((noinline, used)) static int calib_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return 0;
}

static int (*volatile calib_fn)(int) = calib_target;

/* ns per call of calib_fn over n calls, the best of three runs. */
static double time_calls(unsigned int n)
{
	double best = 0;

	for (int run = 0; run < 3; run++) {
		uint64_t t0 = gw_probes_mono_ns(), t1;
		int acc = 0;

		for (unsigned int i = 0; i < n; i++)
			acc += calib_fn((int)i);
		t1 = gw_probes_mono_ns();
		__asm__ volatile("" : : "r"(acc));
		if (!run || (double)(t1 - t0) / n < best)
			best = (double)(t1 - t0) / n;
	}
	return best;
}

/* The file and file offset that hold addr, from /proc/self/maps. */
static int self_offset(uintptr_t addr, char *path, size_t len, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;
		char perms[8];
		const char *name;
		size_t nl;

		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &pgoff) !=
			    4 ||
		    addr < lo || addr >= hi)
			continue;
		name = strchr(line, '/');
		if (!name || perms[2] != 'x')
			break;
		nl = strcspn(name, "\n");
		if (nl >= len || strstr(name, " (deleted)"))
			break;
		memcpy(path, name, nl);
		path[nl] = '\0';
		*off = addr - lo + pgoff;
		r = 0;
		break;
	}
	fclose(f);
	return r;
}

int gw_probes_calibrate(struct gw_probes *p, double *ns_per_hit)
{
	const unsigned int nbase = 200000, nprobed = 5000;
	struct file f = { .fd = -1 };
	struct fsym sym = { .sym = CALIB_SYM }, *v = &sym;
	struct gw_bpf_stat_key sk;
	struct gw_bpf_proc proc;
	uint64_t hits0, nprobes = p ? p->nprobes : 0;
	double base, probed;
	char path[1024];
	__u32 self = (__u32)getpid();
	bool had_proc;
	int r;

	if (!p || !ns_per_hit)
		return -EINVAL;
	*ns_per_hit = 0;
	r = self_offset((uintptr_t)calib_target, path, sizeof(path), &sym.off);
	if (r) {
		gw_probes_seterr(
			p, "calibration: cannot find this process's code: %s",
			strerror(-r));
		return r;
	}
	had_proc = !bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.procs), &self,
					&proc);
	base = time_calls(nbase);

	hits0 = gw_probes_read_counter(p, GW_BPF_CTR_HITS);
	r = p->multi ? multi_attach(p, &f, path, &v, 1, false)
		     : perf_attach(p, path, &sym);
	if (r) {
		gw_probes_seterr(p, "calibration: attaching to %s: %s", path,
				 strerror(-r));
		free(f.ml);
		return r;
	}
	sym.on = true;
	f.syms = &sym;
	f.nsyms = 1;
	p->nprobes += 2;
	probed = time_calls(nprobed);
	detach_syms(p, &f, false);
	free(f.ml);
	p->nprobes = nprobes;
	p->calib_hits += gw_probes_read_counter(p, GW_BPF_CTR_HITS) - hits0;

	/* Leave no trace of this process in the maps. */
	sk.tgid = self;
	sk.api = GW_BPF_API_CALIB;
	bpf_map_delete_elem(bpf_map__fd(p->skel->maps.stats), &sk);
	if (!had_proc)
		bpf_map_delete_elem(bpf_map__fd(p->skel->maps.procs), &self);

	if (probed <= base) {
		gw_probes_seterr(
			p,
			"calibration: probed calls were not slower (%.1f "
			"vs %.1f ns)",
			probed, base);
		return -EAGAIN;
	}
	*ns_per_hit = probed - base;
	return 0;
}
