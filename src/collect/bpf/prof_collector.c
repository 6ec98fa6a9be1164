/* SPDX-License-Identifier: MIT */
/*
 * prof_collector.c - continuous CPU profiling ("gw-prof"): the profiler's
 * counts (profiler.h) drained every --profile-flush, named (symbols.h),
 * gathered per minute and process and written to the profile store
 * (store/profstore.h) as gzip'd pprof.  See prof_collector.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect/attrib.h"
#include "collect/bpf/prof_collector.h"
#include "collect/bpf/profiler.h"
#include "collect/bpf/symbols.h"
#include "collect/bpf/unwind.h"
#include "common/caps.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/worker.h"
#include "pipeline/catalog.h"
#include "store/profile.h"
#include "store/profstore.h"
#include "collect/kernels.h"
#include "collect/prof_select.h"

#define MAX_PROCS    512   /* processes with a profile this minute */
#define MAX_TARGETS  4096  /* selected processes (gpu mode) */
#define MAX_STACKS   20000 /* distinct stacks per process and minute */
#define SCAN_OTHER_S 30.0  /* non-GPU processes are looked at again */
#define GOVERN_S     10.0
#define SAMPLE_NS    2000.0 /* a sample's cost when bpf_stats is off */
#define FRAME_MAX    256
#define MAX_DWARF    4096 /* processes unwound from .eh_frame */
#define RAW_POLL_S   0.2  /* raw samples are taken this often */
/* The last flush at a stop gets this long: the agent's stop is bounded
 * (exit within 5 s of SIGTERM) and the store still flushes after it. */
#define FINI_BUDGET_S 1.0

#define NTYPES 3

struct acc {
	uint32_t pid;
	char labels[768];
	/* [0] CPU samples, [1] sampled launches, [2] their GPU time (ns;
	 * made at the first launch joined with CUPTI's kernels):
	 * store/profstore.h's types */
	struct gw_prof *prof[NTYPES];
	int64_t samples[NTYPES];
	int dirty[NTYPES]; /* samples since the last write */
};

#define LAUNCH_EVERY 16	 /* profile.bpf.c's launch_every */
#define MAX_EXES     256 /* executables whose facts are kept */

/* What is read once per executable, not per process and minute. */
struct exe {
	dev_t dev;
	ino_t ino;
	uint64_t used;
	int has_fp; /* gw_unwind_has_fp() */
	char build_id[72];
};
#define MAX_LAUNCH_FILES 64

/* A process looked at for selection (gpu mode, or --profile-match). */
struct seen {
	uint32_t pid;
	unsigned long long start; /* start time (ticks), tells a reused pid */
	uint32_t comm;		  /* hash of the command name: tells an exec */
	int gpu;		  /* selected: a target of the BPF program */
	double checked;
};

struct prof_col {
	const struct gw_collect_env *env;
	struct gw_worker *w;
	struct gw_worker *self; /* w, as the worker thread has it */
	struct gw_profiler *pr;
	struct gw_symbols *sym;
	struct gw_prof_select *sel; /* --profile-match */
	struct gw_unwind *uw;
	uint32_t dwarf[MAX_DWARF]; /* processes marked for DWARF unwinding */
	unsigned int ndwarf;
	uint64_t uips[GW_PROF_MAX_DEPTH];
	uint64_t raw_samples, unwind_dropped, launch_samples;
	struct {
		dev_t dev;
		ino_t ino;
	} lfiles[MAX_LAUNCH_FILES]; /* files with launch probes */
	struct exe exes[MAX_EXES];
	unsigned int nexes;
	uint64_t exe_clock;
	unsigned int nlfiles;
	int slot;
	int up;
	struct gw_snap snap;
	int64_t minute_ms; /* the minute being gathered */
	struct acc *acc;
	unsigned int nacc;
	struct seen *seen;
	unsigned int nseen, ntargets;
	double next_drain, next_govern, next_maint;
	/* The flush at a stop ends here (0: no stop yet); set where the
	 * thread first sees the stop, in a round or in prof_fini(). */
	double fini_until;
	/* governor */
	double gov_wall, gov_cpu;
	uint64_t gov_run_ns, gov_samples;
	unsigned int freq_max;
	long ncpus;
	/* counters */
	uint64_t launches_joined, launches_unjoined;
	uint64_t samples, dropped_samples, dropped_procs, dropped_stacks;
	uint64_t store_errors, target_dropped;
	unsigned int fini_skipped; /* profiles the last flush did not write */
	/* one sample's frame names, root first */
	char names[FRAME_MAX][GW_PROF_NAME_MAX];
	char environ[65536];
};

static int64_t now_ms(void)
{
	return (int64_t)(gw_now_real() * 1000);
}

static void choose_unwind(struct prof_col *c, uint32_t pid);
static void relabel(struct prof_col *c, uint32_t pid);

/* The facts of pid's executable, from the cache or read now; NULL when
 * the process is gone. */
static const struct exe *get_exe(struct prof_col *c, uint32_t pid)
{
	char path[64];
	struct stat st;
	struct exe *e;
	unsigned int slot;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (stat(path, &st))
		return NULL;
	c->exe_clock++;
	for (unsigned int i = 0; i < c->nexes; i++)
		if (c->exes[i].dev == st.st_dev &&
		    c->exes[i].ino == st.st_ino) {
			c->exes[i].used = c->exe_clock;
			return &c->exes[i];
		}
	if (c->nexes < MAX_EXES) {
		slot = c->nexes++;
	} else {
		slot = 0;
		for (unsigned int i = 1; i < c->nexes; i++)
			if (c->exes[i].used < c->exes[slot].used)
				slot = i;
	}
	e = &c->exes[slot];
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->used = c->exe_clock;
	e->has_fp = gw_unwind_has_fp(pid);
	if (gw_symbols_build_id(c->sym, pid, e->build_id, sizeof(e->build_id)))
		e->build_id[0] = '\0';
	return e;
}

/* ---- process selection (gpu mode) ---- */

/* The start time (ticks) of pid, and a hash of its command name (an exec
 * changes it, not the start time). */
static unsigned long long proc_start(uint32_t pid, uint32_t *comm)
{
	char path[64], buf[1024], *p, *q;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	*comm = 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	q = strchr(buf, '(');
	for (*comm = 2166136261u; q && ++q < p;)
		*comm = (*comm ^ (unsigned char)*q) * 16777619u;
	/* field 22 (starttime); p is at the end of field 2 */
	for (int f = 2; f < 22 && p; f++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

/* The launch probes on a CUDA library pid maps, once per file. */
static void attach_launch(struct prof_col *c, uint32_t pid, const char *path)
{
	char full[PATH_MAX + 32];
	struct stat st;
	unsigned int n = 0;

	snprintf(full, sizeof(full), "/proc/%u/root%s", pid, path);
	if (stat(full, &st) || c->nlfiles == MAX_LAUNCH_FILES)
		return;
	for (unsigned int i = 0; i < c->nlfiles; i++)
		if (c->lfiles[i].dev == st.st_dev &&
		    c->lfiles[i].ino == st.st_ino)
			return;
	c->lfiles[c->nlfiles].dev = st.st_dev;
	c->lfiles[c->nlfiles].ino = st.st_ino;
	c->nlfiles++;
	if (gw_profiler_attach_launch(c->pr, full, &n))
		gw_dbg("profile: no more launch probes (%s)", path);
	else if (n)
		gw_info("profile: launch call paths from %s", path);
}

/* 1 when the process maps a CUDA library (libcudart, libcuda); their
 * launch functions get the launch probe. */
static int maps_cuda(struct prof_col *c, uint32_t pid)
{
	char path[64], line[4096];
	FILE *fp;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp)) {
		const char *b = strrchr(line, '/'), *p = strchr(line, '/');

		if (b && (strncmp(b + 1, "libcudart.so", 12) == 0 ||
			  strncmp(b + 1, "libcuda.so", 10) == 0)) {
			line[strcspn(line, "\n")] = '\0';
			if (strstr(p, " (deleted)") == NULL)
				attach_launch(c, pid, p);
			found = 1;
		}
	}
	fclose(fp);
	return found;
}

static struct seen *find_seen(struct prof_col *c, uint32_t pid)
{
	for (unsigned int i = 0; i < c->nseen; i++)
		if (c->seen[i].pid == pid)
			return &c->seen[i];
	return NULL;
}

/* 1 when pid matches a --profile-match selector (or there are none). */
static int selected(struct prof_col *c, uint32_t pid)
{
	struct gw_attrib at;

	if (gw_prof_select_count(c->sel) == 0)
		return 1;
	memset(&at, 0, sizeof(at));
	if (c->env->attrib &&
	    gw_attrib_get(c->env->attrib, pid, gw_now_mono(), &at))
		memset(&at, 0, sizeof(at)); /* comm is read by the match */
	return gw_prof_select_match(c->sel, pid, &at);
}

/* Looks at new processes and, every SCAN_OTHER_S, at those without CUDA;
 * forgets those gone. */
static void scan_targets(struct prof_col *c, double now)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned int n = 0;
	int all = c->env->o->profile == GW_PROFILE_ALL;
	/* the BPF side samples targets only (gpu mode, or selectors) */
	int targeted = !all || gw_prof_select_count(c->sel) > 0;

	if (!d)
		return;
	/* mark */
	for (unsigned int i = 0; i < c->nseen; i++)
		c->seen[i].start |= 1ull << 63;
	while ((de = readdir(d))) {
		char *end;
		unsigned long v = strtoul(de->d_name, &end, 10);
		uint32_t pid = (uint32_t)v;
		unsigned long long st;
		uint32_t comm;
		struct seen *s;
		int cuda, reused;

		if (*end || v == 0 || v > UINT32_MAX ||
		    pid == (uint32_t)getpid())
			continue;
		st = proc_start(pid, &comm);
		s = find_seen(c, pid);
		reused = s && (s->start & ~(1ull << 63)) != st;
		if (reused) {
			/* a new process under an old pid */
			if (s->gpu && gw_profiler_target(c->pr, pid, 0) == 0)
				c->ntargets--;
			s->gpu = 0;
			s->checked = -INFINITY;
		}
		if (!s) {
			if (c->nseen == MAX_TARGETS * 4) {
				c->target_dropped++;
				continue;
			}
			s = &c->seen[c->nseen++];
			*s = (struct seen){ pid, st, comm, 0, -INFINITY };
		}
		/* Looked at before an exec (a launcher, `env`, a shell):
		 * the program it became may map CUDA, and is named anew. */
		if (s->comm != comm) {
			if (!s->gpu)
				s->checked = -INFINITY;
			if (!reused)
				relabel(c, pid);
		}
		s->comm = comm;
		s->start = st;
		if (s->gpu || now - s->checked < SCAN_OTHER_S)
			continue;
		if (!targeted && s->checked > -INFINITY) {
			/* all: only the launch probes are looked for, once */
			continue;
		}
		s->checked = now;
		cuda = maps_cuda(c, pid);
		if (!targeted || !(cuda || all) || !selected(c, pid))
			continue;
		if (gw_profiler_target(c->pr, pid, 1)) {
			c->target_dropped++;
			continue;
		}
		s->gpu = 1;
		c->ntargets++;
		n++;
		gw_dbg("profile: pid %u selected (%s)", pid,
		       all ? "it matches --profile-match" : "it maps CUDA");
		choose_unwind(c, pid);
	}
	closedir(d);
	/* sweep */
	for (unsigned int i = 0; i < c->nseen;) {
		if (c->seen[i].start & (1ull << 63)) {
			if (c->seen[i].gpu &&
			    gw_profiler_target(c->pr, c->seen[i].pid, 0) == 0)
				c->ntargets--;
			gw_symbols_forget(c->sym, c->seen[i].pid);
			c->seen[i] = c->seen[--c->nseen];
			continue;
		}
		i++;
	}
	if (n)
		gw_dbg("profile: %u new processes selected", n);
}

/* ---- gathering ---- */

/* The value of NAME in /proc/PID/environ, "" when absent. */
static void env_value(char *buf, size_t bufsz, uint32_t pid, const char *name,
		      char *out, size_t len)
{
	char path[64];
	size_t nl = strlen(name);
	ssize_t n;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, bufsz - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (strncmp(p, name, nl) == 0 && p[nl] == '=') {
			snprintf(out, len, "%s", p + nl + 1);
			return;
		}
}

/* Appends ,version="..." with exposition escaping. */
static void add_version(char *labels, size_t len, const char *v)
{
	size_t k = strlen(labels);

	if (!v[0])
		return;
	k += (size_t)snprintf(labels + k, len - k, "%sversion=\"",
			      k ? "," : "");
	for (; *v && k + 3 < len; v++) {
		if (*v == '"' || *v == '\\')
			labels[k++] = '\\';
		if (*v == '\n') {
			labels[k++] = '\\';
			labels[k++] = 'n';
			continue;
		}
		labels[k++] = *v;
	}
	if (k + 2 <= len) {
		labels[k++] = '"';
		labels[k] = '\0';
	} else {
		labels[0] = '\0'; /* too long: better no labels than broken */
	}
}

/* The labels of a's process as its attribution has them now. */
static void acc_label(struct prof_col *c, struct acc *a)
{
	struct gw_attrib at;
	struct gw_buf b;
	char ver[256] = "";

	memset(&at, 0, sizeof(at));
	if (!c->env->attrib ||
	    gw_attrib_get(c->env->attrib, a->pid, gw_now_mono(), &at))
		snprintf(at.comm, sizeof(at.comm), "[%u]", a->pid);
	gw_buf_init(&b, sizeof(a->labels) - 1);
	if (gw_attrib_labels(&at, a->pid, &b) || gw_buf_error(&b))
		snprintf(a->labels, sizeof(a->labels), "pid=\"%u\"", a->pid);
	else
		snprintf(a->labels, sizeof(a->labels), "%.*s", (int)b.len, b.p);
	gw_buf_release(&b);
	if (c->env->o->profile_version_env && c->env->o->profile_version_env[0])
		env_value(c->environ, sizeof(c->environ), a->pid,
			  c->env->o->profile_version_env, ver, sizeof(ver));
	else {
		const struct exe *e = get_exe(c, a->pid);

		snprintf(ver, sizeof(ver), "%s", e ? e->build_id : "");
	}
	add_version(a->labels, sizeof(a->labels), ver);
}

/* The comm label's value of labels, for the root frame. */
static void label_comm(const char *labels, uint32_t pid, char *comm,
		       size_t commlen)
{
	const char *q = strstr(labels, "comm=\"");
	size_t k = 0;

	if (q)
		for (q += 6; *q && *q != '"' && k + 1 < commlen; q++)
			comm[k++] = *q == '\\' && q[1] ? *++q : *q;
	comm[k] = '\0';
	if (!k)
		snprintf(comm, commlen, "[%u]", pid);
}

/* The stacks of *pp under another root frame (a profile's stacks start
 * with the process's name); *pp is kept as it was if that fails.  What it
 * had dropped is added to *dropped. */
static void reroot(struct gw_prof **pp, int ty, const char *root,
		   uint64_t *dropped)
{
	struct gw_prof *n = gw_prof_new(MAX_STACKS);
	struct gw_buf in, out;
	int err = !n;

	gw_buf_init(&in, 256u << 20);
	gw_buf_init(&out, 256u << 20);
	if (!err) {
		if (ty == 2)
			gw_prof_set_value_type(n, "gpu_time", "nanoseconds");
		gw_prof_folded(*pp, &in);
	}
	/* "root;frame;...;leaf count": the root ends at the first ';', or
	 * at the count's space when it is the only frame */
	for (size_t i = 0; !err && i < in.len;) {
		const char *line = in.p + i,
			   *nl = memchr(line, '\n', in.len - i);
		size_t len = nl ? (size_t)(nl - line) : in.len - i, cut = len;

		while (cut > 0 && line[cut - 1] != ' ')
			cut--;
		cut = cut ? cut - 1 : len; /* the count's space */
		for (size_t k = 0; k < cut; k++)
			if (line[k] == ';') {
				cut = k;
				break;
			}
		gw_buf_put(&out, root, strlen(root));
		gw_buf_put(&out, line + cut, len - cut);
		gw_buf_put(&out, "\n", 1);
		i += len + 1;
	}
	err = err || gw_buf_error(&in) || gw_buf_error(&out) ||
	      gw_prof_add_folded(n, out.p, out.len, 0);
	if (!err) {
		*dropped += gw_prof_dropped(*pp);
		gw_prof_free(*pp);
		*pp = n;
	} else {
		gw_prof_free(n);
	}
	gw_buf_release(&in);
	gw_buf_release(&out);
}

/*
 * A process that exec'd (a launcher, `env`, a shell becoming the
 * program): its attribution is read again, and its minute's profile is
 * named as what it became, the stacks gathered so far (the few from
 * before the exec included) under its new name; its unwinding is chosen
 * for the new executable.
 */
static void relabel(struct prof_col *c, uint32_t pid)
{
	char comm[64];

	if (c->env->attrib)
		gw_attrib_forget(c->env->attrib, pid);
	for (unsigned int i = 0; i < c->nacc; i++) {
		struct acc *a = &c->acc[i];

		if (a->pid != pid)
			continue;
		acc_label(c, a);
		label_comm(a->labels, pid, comm, sizeof(comm));
		for (int ty = 0; ty < NTYPES; ty++) {
			if (!a->prof[ty] || a->samples[ty] <= 0)
				continue;
			reroot(&a->prof[ty], ty, comm, &c->dropped_stacks);
			a->dirty[ty] = 1;
		}
		choose_unwind(c, pid);
	}
}

static struct acc *get_acc(struct prof_col *c, uint32_t pid, char *comm,
			   size_t commlen)
{
	struct acc *a;

	for (unsigned int i = 0; i < c->nacc; i++)
		if (c->acc[i].pid == pid) {
			a = &c->acc[i];
			goto found;
		}
	if (c->nacc == MAX_PROCS) {
		c->dropped_procs++;
		return NULL;
	}
	a = &c->acc[c->nacc];
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->prof[0] = gw_prof_new(MAX_STACKS);
	a->prof[1] = gw_prof_new(MAX_STACKS);
	if (!a->prof[0] || !a->prof[1]) {
		gw_prof_free(a->prof[0]);
		gw_prof_free(a->prof[1]);
		return NULL;
	}
	acc_label(c, a);
	c->nacc++;
	choose_unwind(c, pid);
found:
	label_comm(a->labels, pid, comm, commlen);
	return a;
}

/* Adds count samples of one stack (user and kernel frames leaf first) to
 * the CPU profile (ty 0) or the launch profile (ty 1); for a launch, leaf
 * (or NULL) is the kernel it starts, and gpu_ns (> 0) its GPU time, added
 * to the GPU time profile (ty 2) under the same path. */
static int add_stack(struct prof_col *c, const struct gw_profiler_sample *s,
		     int ty, const char *leaf, int64_t gpu_ns)
{
	char(*names)[GW_PROF_NAME_MAX] = c->names;
	const char *frames[FRAME_MAX];
	char comm[64];
	size_t n = 0;
	struct acc *a;
	int r;

	if (ty == 0)
		c->samples += s->count;
	a = get_acc(c, s->pid, comm, sizeof(comm));
	if (!a) {
		c->dropped_samples += ty == 0 ? s->count : 0;
		return 0;
	}
	snprintf(names[n], sizeof(names[n]), "%s", comm);
	frames[n] = names[n];
	n++;
	for (unsigned int i = s->nu; i-- > 0 && n < FRAME_MAX;) {
		gw_symbols_user(c->sym, s->pid, s->uips[i], names[n],
				sizeof(names[n]));
		frames[n] = names[n];
		n++;
	}
	for (unsigned int i = s->nk; i-- > 0 && n < FRAME_MAX;) {
		gw_symbols_kernel(c->sym, s->kips[i], names[n],
				  sizeof(names[n]));
		frames[n] = names[n];
		n++;
	}
	if (leaf && n < FRAME_MAX) {
		snprintf(names[n], sizeof(names[n]), "[kernel] %s", leaf);
		frames[n] = names[n];
		n++;
	}
	r = gw_prof_add(a->prof[ty], frames, n, (int64_t)s->count, 0);
	if (r == -ENOMEM)
		return r;
	a->samples[ty] += (int64_t)s->count;
	a->dirty[ty] = 1;
	if (ty == 1 && gpu_ns > 0) {
		if (!a->prof[2]) {
			a->prof[2] = gw_prof_new(MAX_STACKS);
			if (!a->prof[2])
				return -ENOMEM;
			gw_prof_set_value_type(a->prof[2], "gpu_time",
					       "nanoseconds");
		}
		r = gw_prof_add(a->prof[2], frames, n, gpu_ns, 0);
		if (r == -ENOMEM)
			return r;
		a->samples[2] += gpu_ns;
		a->dirty[2] = 1;
	}
	return 0;
}

/*
 * The flush at a stop is past its budget (what is left stays unread).  The
 * budget starts when the thread first sees the stop: a round that drains a
 * long backlog then (a busy or slow machine) ends within it too, instead of
 * holding the agent's stop past its grace.
 */
static int out_of_time(struct prof_col *c)
{
	if (c->fini_until == 0) {
		if (!c->self || !gw_worker_stopping(c->self))
			return 0;
		c->fini_until = gw_now_mono() + FINI_BUDGET_S;
	}
	return gw_now_mono() > c->fini_until;
}

static int on_sample(void *ctx, const struct gw_profiler_sample *s)
{
	if (out_of_time(ctx))
		return -ETIMEDOUT;
	return add_stack(ctx, s, 0, NULL, 0);
}

/*
 * The kernel a sampled launch starts (collect/kernels.h): its first
 * argument (rdi at the probe, regs[5] in DWARF order) is a CUfunction or
 * the kernel's host stub, whose symbol is the kernel's name.  1 with name
 * and *mean_ns, 0 when the CUPTI layer does not know it.
 */
static int launch_kernel(struct prof_col *c, const struct gw_profiler_raw *r,
			 char *name, size_t len, double *mean_ns)
{
	struct gw_kernels *k = c->env->kernels;
	char sym[GW_PROF_NAME_MAX];
	uint64_t arg = r->regs[5];

	*mean_ns = 0;
	if (!k || !arg)
		return 0;
	if (gw_kernels_lookup(k, r->pid, arg, NULL, name, len, mean_ns))
		return 1;
	if (!gw_kernels_known(k, r->pid))
		return 0;
	gw_symbols_user(c->sym, r->pid, arg, sym, sizeof(sym));
	return gw_kernels_lookup(k, r->pid, 0, sym, name, len, mean_ns);
}

/* A raw sample of a process without frame pointers: unwound here. */
static void on_raw(void *ctx, const struct gw_profiler_raw *r)
{
	struct prof_col *c = ctx;
	struct gw_profiler_sample s = {
		.pid = r->pid,
		.count = 1,
		.kips = r->kips,
		.nk = r->nk,
		.uips = c->uips,
	};

	char kname[GW_KERNELS_NAME_MAX];
	double mean_ns = 0;
	int joined = 0;

	if (out_of_time(c)) {
		c->unwind_dropped++;
		return;
	}
	if (r->launch) {
		c->launch_samples++;
		s.count = LAUNCH_EVERY; /* one launch in 16 is recorded */
		joined = launch_kernel(c, r, kname, sizeof(kname), &mean_ns);
		if (joined)
			c->launches_joined++;
		else
			c->launches_unjoined++;
	} else {
		c->raw_samples++;
	}
	s.nu = gw_unwind_stack(c->uw, r->pid, r->regs, r->stack, r->len,
			       c->uips, GW_PROF_MAX_DEPTH);
	if (add_stack(c, &s, r->launch ? 1 : 0, joined ? kname : NULL,
		      (int64_t)(mean_ns * LAUNCH_EVERY + 0.5)))
		c->unwind_dropped++;
}

/* --profile-unwind: marks pid for DWARF unwinding when its executable
 * has no frame pointers (auto) or always (dwarf). */
static void choose_unwind(struct prof_col *c, uint32_t pid)
{
	int mode = c->env->o->profile_unwind;

	if (mode == GW_PROFILE_UNWIND_FP || c->ndwarf == MAX_DWARF)
		return;
	for (unsigned int i = 0; i < c->ndwarf; i++)
		if (c->dwarf[i] == pid)
			return;
	if (mode == GW_PROFILE_UNWIND_AUTO) {
		const struct exe *e = get_exe(c, pid);

		if (!e || e->has_fp != 0)
			return;
	}
	if (gw_profiler_dwarf(c->pr, pid, 1) == 0) {
		c->dwarf[c->ndwarf++] = pid;
		gw_dbg("profile: pid %u is unwound from its call frame "
		       "information",
		       pid);
	}
}

/* Processes gone leave the DWARF table (and the unwinder's cache). */
static void sweep_dwarf(struct prof_col *c)
{
	for (unsigned int i = 0; i < c->ndwarf;) {
		char path[32];

		snprintf(path, sizeof(path), "/proc/%u", c->dwarf[i]);
		if (access(path, F_OK) == 0) {
			i++;
			continue;
		}
		if (gw_profiler_dwarf(c->pr, c->dwarf[i], 0))
			gw_dbg("profile: cannot unmark pid %u", c->dwarf[i]);
		gw_unwind_forget(c->uw, c->dwarf[i]);
		c->dwarf[i] = c->dwarf[--c->ndwarf];
	}
}

/* Writes every process's profile of the minute (replacing what an
 * earlier drain wrote); at a minute's end, drops them. */
static void write_minute(struct prof_col *c, int closing)
{
	int64_t period = (int64_t)(1e9 / gw_profiler_freq(c->pr));
	struct gw_buf b;

	gw_buf_init(&b, 256u << 20);
	for (unsigned int i = 0; i < c->nacc; i++) {
		struct acc *a = &c->acc[i];

		for (int ty = 0; ty < NTYPES; ty++) {
			static const enum gw_profile_type types[NTYPES] = {
				GW_PROFILE_CPU, GW_PROFILE_LAUNCHES,
				GW_PROFILE_GPU_TIME
			};

			if (!a->dirty[ty] || !a->prof[ty] || !c->env->profiles)
				continue;
			if (out_of_time(c)) {
				/* Stored up to the flush before this one. */
				c->fini_skipped++;
				continue;
			}
			gw_buf_reset(&b);
			gw_prof_set_time(a->prof[ty], c->minute_ms * 1000000,
					 60000000000LL, ty ? 1 : period);
			if (gw_prof_pprof(a->prof[ty], &b) ||
			    gw_buf_error(&b) ||
			    gw_profstore_put(c->env->profiles, c->minute_ms,
					     a->pid, types[ty], a->labels, b.p,
					     b.len, a->samples[ty]))
				c->store_errors++;
			a->dirty[ty] = 0;
		}
		if (closing) {
			for (int ty = 0; ty < NTYPES; ty++) {
				if (!a->prof[ty])
					continue;
				c->dropped_stacks +=
					gw_prof_dropped(a->prof[ty]);
				gw_prof_free(a->prof[ty]);
				a->prof[ty] = NULL;
			}
		}
	}
	if (closing)
		c->nacc = 0;
	gw_buf_release(&b);
}

static void drain(struct prof_col *c)
{
	int64_t minute = now_ms() / 60000 * 60000;
	int r;

	gw_symbols_round(c->sym);
	if (gw_profiler_poll_raw(c->pr, on_raw, c) < 0)
		gw_dbg("profile: raw samples: ring buffer error");
	if (minute != c->minute_ms && c->nacc) {
		/* What is in the kernel belongs to the minute that ends. */
		r = gw_profiler_drain(c->pr, on_sample, c);
		if (r)
			gw_dbg("profile: drain: %s", strerror(-r));
		write_minute(c, 1);
		sweep_dwarf(c);
	}
	c->minute_ms = minute;
	r = gw_profiler_drain(c->pr, on_sample, c);
	if (r)
		gw_dbg("profile: drain: %s", strerror(-r));
	write_minute(c, 0);
}

/* ---- governor ---- */

/*
 * The profiler's cost (the BPF program's run time where bpf_stats is on,
 * else samples × SAMPLE_NS, plus this thread's CPU time) against the
 * machine's CPU time; over --ebpf-budget the frequency halves, well under
 * it it comes back up to --profile-frequency.
 */
static void govern(struct prof_col *c)
{
	struct gw_profiler_counters pc;
	double wall = gw_now_mono(), cpu = gw_thread_cpu(), cost, share;
	double budget = c->env->o->ebpf_budget;
	unsigned int f = gw_profiler_freq(c->pr), nf = f;

	gw_profiler_counters(c->pr, &pc);
	if (c->gov_wall > 0 && wall > c->gov_wall) {
		cost = cpu - c->gov_cpu;
		if (pc.run_ns > c->gov_run_ns)
			cost += (double)(pc.run_ns - c->gov_run_ns) / 1e9;
		else
			cost += (double)(pc.samples - c->gov_samples) *
				SAMPLE_NS / 1e9;
		share = cost / ((wall - c->gov_wall) * (double)c->ncpus);
		if (share > budget && f > 1)
			nf = (unsigned int)fmax(1, f / 2);
		else if (share < budget / 4 && f < c->freq_max)
			nf = (unsigned int)fmin(c->freq_max, f * 2);
		if (nf != f) {
			if (gw_profiler_set_freq(c->pr, nf) == 0)
				gw_info("profile: sampling costs %.3f%% of the "
					"machine (budget %.2f%%): %u Hz",
					share * 100, budget * 100, nf);
			else if (gw_profiler_set_freq(c->pr, f))
				gw_warn("profile: cannot reopen the perf "
					"events; sampling stopped");
		}
	}
	c->gov_wall = wall;
	c->gov_cpu = cpu;
	c->gov_run_ns = pc.run_ns;
	c->gov_samples = pc.samples;
}

/* ---- publishing ---- */

static void publish(struct prof_col *c)
{
	struct gw_snap *s = &c->snap;
	struct gw_symbols_stats ss = { 0 };
	struct gw_profiler_counters pc = { 0 };

	gw_snap_reset(s);
	gw_snap_add(s, GW_FAM(PROFILE_UP), c->up, NULL, NULL);
	if (c->up) {
		gw_profiler_counters(c->pr, &pc);
		gw_symbols_stats(c->sym, &ss);
		gw_snap_add(s, GW_FAM(PROFILE_FREQUENCY_HERTZ),
			    gw_profiler_freq(c->pr), NULL, NULL);
		gw_snap_add(s, GW_FAM(PROFILE_SAMPLES_TOTAL),
			    (double)c->samples, NULL, NULL);
		gw_snap_add(s, GW_FAM(PROFILE_PROCESSES),
			    c->env->o->profile == GW_PROFILE_ALL &&
					    !gw_prof_select_count(c->sel)
				    ? (double)c->nacc
				    : (double)c->ntargets,
			    NULL, NULL);
		gw_snap_add(s, GW_FAM(PROFILE_DROPPED_TOTAL),
			    (double)(c->dropped_samples + pc.dropped_counts +
				     c->unwind_dropped),
			    NULL, "what", "samples", NULL);
		gw_snap_add(s, GW_FAM(PROFILE_DROPPED_TOTAL),
			    (double)c->dropped_stacks, NULL, "what", "stacks",
			    NULL);
		gw_snap_add(s, GW_FAM(PROFILE_DROPPED_TOTAL),
			    (double)pc.raw_dropped, NULL, "what",
			    "stack_copies", NULL);
		gw_snap_add(s, GW_FAM(PROFILE_UNWOUND_SAMPLES_TOTAL),
			    (double)c->raw_samples, NULL, NULL);
		gw_snap_add(s, GW_FAM(PROFILE_LAUNCHES_TOTAL),
			    (double)pc.launches, NULL, NULL);
		gw_snap_add(s, GW_FAM(PROFILE_LAUNCH_SAMPLES_TOTAL),
			    (double)c->launch_samples, NULL, NULL);
		gw_snap_add(s, GW_FAM(PROFILE_LAUNCH_JOINS_TOTAL),
			    (double)c->launches_joined, NULL, "result",
			    "kernel", NULL);
		gw_snap_add(s, GW_FAM(PROFILE_LAUNCH_JOINS_TOTAL),
			    (double)c->launches_unjoined, NULL, "result",
			    "unknown", NULL);
		gw_snap_add(s, GW_FAM(PROFILE_DROPPED_TOTAL),
			    (double)(c->dropped_procs + c->target_dropped),
			    NULL, "what", "processes", NULL);
		gw_snap_add(s, GW_FAM(PROFILE_DROPPED_TOTAL),
			    (double)ss.unknown, NULL, "what", "unnamed_frames",
			    NULL);
		if (c->env->kernels) {
			struct gw_kernels_stats ks;

			gw_kernels_stats(c->env->kernels, &ks);
			gw_snap_add(s, GW_FAM(PROFILE_DROPPED_TOTAL),
				    (double)ks.refused, NULL, "what", "kernels",
				    NULL);
		}
		gw_snap_add(s, GW_FAM(PROFILE_DROPPED_TOTAL),
			    (double)c->store_errors, NULL, "what", "store",
			    NULL);
		if (c->env->profiles) {
			struct gw_profstore_stats ps;

			gw_profstore_stats(c->env->profiles, &ps);
			gw_snap_add(s, GW_FAM(PROFILE_STORED_BYTES),
				    (double)ps.bytes, NULL, NULL);
		}
	}
	gw_registry_publish(c->env->reg, c->slot, s);
}

/* ---- thread ---- */

static int prof_init(struct gw_worker *w, void *arg)
{
	struct prof_col *c = arg;
	const struct gw_collect_opts *o = c->env->o;
	struct gw_profiler_opts po = {
		.sz = sizeof(po),
		.freq = o->profile_freq,
		.all = o->profile == GW_PROFILE_ALL &&
		       gw_prof_select_count(c->sel) == 0,
		.max_targets = MAX_TARGETS,
	};
	char err[256];
	int r;

	c->self = w;
	r = gw_profiler_open(&po, &c->pr, err, sizeof(err));
	if (r) {
		gw_warn("profile: unavailable: %s; CPU profiles are off "
			"(needs root or CAP_BPF and CAP_PERFMON, and kernel "
			"BTF; --profile off silences this)",
			err);
		publish(c);
		return r;
	}
	c->up = 1;
	c->freq_max = gw_profiler_freq(c->pr);
	c->minute_ms = now_ms() / 60000 * 60000;
	gw_info("profile: sampling %s%s at %u Hz per CPU",
		o->profile == GW_PROFILE_ALL ? "every process"
					     : "GPU processes",
		gw_prof_select_count(c->sel) ? " that match --profile-match"
					     : "",
		c->freq_max);
	if (!po.all)
		scan_targets(c, gw_now_mono());
	c->next_drain = gw_now_mono() + o->profile_flush;
	c->next_govern = gw_now_mono() + GOVERN_S;
	publish(c);
	return 0;
}

static double prof_round(struct gw_worker *w, void *arg)
{
	struct prof_col *c = arg;
	double now = gw_now_mono();

	(void)w;
	if (gw_profiler_poll_raw(c->pr, on_raw, c) < 0)
		gw_dbg("profile: raw samples: ring buffer error");
	if (now >= c->next_drain) {
		/* Drain first: the samples of a process that just exited are
		 * named from its cached maps, which the scan forgets. */
		drain(c);
		scan_targets(c, now);
		publish(c);
		c->next_drain = now + c->env->o->profile_flush;
	}
	if (now >= c->next_govern) {
		govern(c);
		c->next_govern = now + GOVERN_S;
	}
	if (now >= c->next_maint && c->env->profiles) {
		if (gw_profstore_maint(c->env->profiles, now_ms()))
			c->store_errors++;
		c->next_maint = now + 60;
	}
	return fmax(0.01, fmin(RAW_POLL_S, fmin(c->next_drain, c->next_govern) -
						   gw_now_mono()));
}

/* The last drain: what was sampled until the stop is kept. */
static void prof_fini(struct gw_worker *w, void *arg)
{
	struct prof_col *c = arg;
	int r;

	(void)w;
	if (!c->pr)
		return;
	if (c->fini_until == 0)
		c->fini_until = gw_now_mono() + FINI_BUDGET_S;
	gw_symbols_round(c->sym);
	if (gw_profiler_poll_raw(c->pr, on_raw, c) < 0)
		gw_dbg("profile: raw samples: ring buffer error");
	r = gw_profiler_drain(c->pr, on_sample, c);
	if (r == 0 || r == -ETIMEDOUT)
		write_minute(c, 1);
	if (r == -ETIMEDOUT || c->fini_skipped)
		gw_warn("profile: the flush at the stop took over %.1f s and "
			"was cut short: %s%u profiles keep what the flush "
			"before it stored",
			FINI_BUDGET_S,
			r == -ETIMEDOUT ? "samples not read yet are lost; "
					: "",
			c->fini_skipped);
}

static int col_start(const struct gw_collect_env *env, void **priv)
{
	struct gw_worker_opts wo = {
		.name = "gw-prof",
		.init = prof_init,
		.round = prof_round,
		.fini = prof_fini,
		.table = env->workers,
		.caps = gw_caps_prof(),
	};
	struct prof_col *c;
	char err[512];
	int r;

	*priv = NULL;
	if (env->o->profile == GW_PROFILE_OFF) {
		gw_info("profile: off (--profile off)");
		return 0;
	}
	if (!env->o->ebpf) {
		gw_info("profile: off with the eBPF probes (--no-ebpf)");
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->env = env;
	c->acc = calloc(MAX_PROCS, sizeof(*c->acc));
	c->seen = calloc(MAX_TARGETS * 4, sizeof(*c->seen));
	r = gw_prof_select_new(env->o->profile_match, env->o->nprofile_match,
			       NULL, &c->sel, err, sizeof(err));
	if (r) {
		gw_err("profile: %s", err);
		goto err;
	}
	c->sym = gw_symbols_new(256, 1024);
	c->uw = gw_unwind_new(64);
	if (!c->acc || !c->seen || !c->sym || !c->uw) {
		r = -ENOMEM;
		goto err;
	}
	c->ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (c->ncpus <= 0)
		c->ncpus = 1;
	gw_snap_init(&c->snap);
	c->slot = gw_registry_slot(env->reg, "profile");
	if (c->slot < 0) {
		r = -ENOSPC;
		goto err_snap;
	}
	wo.arg = c;
	r = gw_worker_start(&wo, &c->w);
	if (r)
		goto err_snap;
	*priv = c;
	return 0;
err_snap:
	gw_snap_release(&c->snap);
err:
	gw_prof_select_free(c->sel);
	gw_unwind_free(c->uw);
	gw_symbols_free(c->sym);
	free(c->seen);
	free(c->acc);
	free(c);
	return r;
}

static void col_request_stop(void *priv)
{
	struct prof_col *c = priv;

	gw_worker_request_stop(c->w);
}

static int col_stop(void *priv, double deadline)
{
	struct prof_col *c = priv;

	return gw_worker_stop(c->w, deadline);
}

static void col_free(void *priv)
{
	struct prof_col *c = priv;

	if (!c)
		return;
	gw_worker_free(c->w);
	for (unsigned int i = 0; i < c->nacc; i++) {
		gw_prof_free(c->acc[i].prof[0]);
		gw_prof_free(c->acc[i].prof[1]);
		gw_prof_free(c->acc[i].prof[2]);
	}
	gw_profiler_close(c->pr);
	gw_symbols_free(c->sym);
	gw_unwind_free(c->uw);
	gw_prof_select_free(c->sel);
	gw_snap_release(&c->snap);
	free(c->seen);
	free(c->acc);
	free(c);
}

const struct gw_collector_ops gw_prof_collector = {
	.name = "profile",
	.start = col_start,
	.request_stop = col_request_stop,
	.stop = col_stop,
	.free = col_free,
};
