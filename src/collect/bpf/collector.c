/* SPDX-License-Identifier: MIT */
/*
 * collector.c - the eBPF collector's thread ("gw-ebpf"): discovery of CUDA
 * libraries, publication of the kernel's aggregates, exits, and the
 * overhead governor.  See collector.h.
 */
#include <bpf/libbpf.h>
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect/attrib.h"
#include "collect/bpf/collector.h"
#include "collect/bpf/discover.h"
#include "collect/bpf/probes.h"
#include "common/caps.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/procstat.h"
#include "common/worker.h"
#include "pipeline/catalog.h"
#include "pipeline/linger.h"

#define MAX_FILES     4096  /* distinct (dev, inode) pairs looked at */
#define MAX_PENDING   4096  /* pids waiting for a maps scan after exec */
#define MAX_PIDS      1024  /* processes exported per pass */
#define MAX_EXIT_KEYS 256   /* distinct label sets of exit counters */
#define MAX_GONE      1024  /* exited pids waiting for a last read */
#define RESCAN_S      120.0 /* full /proc rescan period */
#define GOVERN_S      2.0   /* governor window */
#define DUTY_MIN      0.001
#define CYCLE_S	      1.0  /* shortest duty cycle period */
#define ON_MIN_S      0.05 /* shortest on-phase: switching costs ~30 ms */

/* Exported latency buckets: 2^10 ns (~1 us) to 2^30 ns (~1.07 s), by 4x. */
#define NBOUNDS 11
static double bounds[NBOUNDS];

struct file_id {
	dev_t dev;
	ino_t ino;
};

struct pending {
	uint32_t pid;
	double due;
	int left; /* further scans after this one */
};

struct exit_key {
	char labels[384];
	uint64_t n[3]; /* clean, error, signal */
	uint64_t abnormal_with_memory;
};

/* An exited pid waiting for the publish that reads its last counts. */
struct gone {
	uint32_t pid;
	double exited_unix;
	char comm[16]; /* from the exit event, if attribution has none */
};

struct pid_cost {
	uint32_t pid;
	uint64_t hits; /* probe hits so far (calls of every API) */
	double cpu_s;  /* the process's CPU time when read */
};

struct ebpf_col {
	const struct gw_collect_env *env;
	struct gw_probes *p;
	struct gw_attrib_cache *attrib;
	struct gw_worker *w;  /* the owner's */
	struct gw_worker *me; /* the same, for the thread: set by its init */
	int slot;
	struct gw_snap snap;
	double ns_per_hit;
	int up;

	struct file_id files[MAX_FILES];
	unsigned int nfiles;
	uint64_t files_dropped;
	struct pending pending[MAX_PENDING];
	unsigned int npending;
	uint64_t pending_dropped;
	struct exit_key exits[MAX_EXIT_KEYS];
	unsigned int nexits;
	uint64_t exits_dropped;
	uint64_t pids_dropped;
	/* Exited pids: forgotten after the next publish reads their last counts. */
	struct gone gone[MAX_GONE];
	unsigned int ngone;
	/* Their last values, kept on /metrics for --exited-grace. */
	struct gw_linger *linger;
	/* The host's CUDA libraries, probed before any process maps them. */
	struct gw_discover *disc;

	/* Governor: this window's and the previous window's readings. */
	struct pid_cost cur[MAX_PIDS], prev[MAX_PIDS];
	unsigned int ncur, nprev;
	double duty;
	int high_on;
	double cycle_start, next_govern, next_oom_log;
	double next_pub, next_scan;
	long ticks_per_s;

	/* Per publish pass: labels of each pid, built once. */
	struct pass_pid {
		uint32_t pid;
		char labels[512];
		uint64_t sync_ns;
		int high_rate; /* made calls the duty cycle applies to */
	} * pass;
	unsigned int npass;
};

static int stopping(struct ebpf_col *b)
{
	return gw_worker_stopping(b->me);
}

/* ---- discovery ---- */

static int file_seen(struct ebpf_col *b, const struct stat *st)
{
	for (unsigned int i = 0; i < b->nfiles; i++)
		if (b->files[i].dev == st->st_dev &&
		    b->files[i].ino == st->st_ino)
			return 1;
	if (b->nfiles == MAX_FILES) {
		b->files_dropped++;
		return 1; /* full: do not try to attach more */
	}
	b->files[b->nfiles].dev = st->st_dev;
	b->files[b->nfiles].ino = st->st_ino;
	b->nfiles++;
	return 0;
}

/* Library kind of a mapped path by its base name, 0 for none. */
static unsigned int lib_kind(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strncmp(base, "libcudart.so", 12) == 0)
		return GW_LIB_RUNTIME;
	if (strncmp(base, "libcuda.so", 10) == 0)
		return GW_LIB_DRIVER;
	return 0;
}

static void attach(struct ebpf_col *b, uint32_t pid, const char *path,
		   unsigned int libs)
{
	char full[PATH_MAX + 32];
	unsigned int n = 0;
	struct stat st;
	int r;

	/* The path is in the process's mount namespace. */
	snprintf(full, sizeof(full), "/proc/%u/root%s", pid, path);
	if (stat(full, &st) < 0 || !S_ISREG(st.st_mode) || file_seen(b, &st))
		return;
	r = gw_probes_attach_file(b->p, full, libs, &n);
	if (r) {
		gw_warn("ebpf: cannot attach probes to %s (pid %u): %s", path,
			pid, strerror(-r));
		return;
	}
	if (n)
		gw_info("ebpf: attached %u probes to %s", n, path);
}

/*
 * A library of the host found by discovery (discover.h): attached once per
 * (device, inode) however many paths lead to it, logged under its
 * canonical path, the one /proc/PID/maps shows.
 */
static int attach_host(void *ctx, const char *path)
{
	struct ebpf_col *b = ctx;
	unsigned int n = 0, libs = lib_kind(path);
	char real[PATH_MAX];
	struct stat st;
	int r;

	if (stopping(b))
		return -ECANCELED;
	if (!realpath(path, real) || stat(real, &st) < 0 ||
	    !S_ISREG(st.st_mode) || file_seen(b, &st))
		return 0;
	if (!libs) /* a pattern's own choice: a library or a program */
		libs = lib_kind(real);
	if (!libs)
		libs = GW_LIB_RUNTIME | GW_LIB_DRIVER;
	r = gw_probes_attach_file(b->p, real, libs, &n);
	if (r == -ENOEXEC) /* another architecture, not ELF */
		gw_dbg("ebpf: %s: not a library to probe: %s", real,
		       gw_probes_last_error(b->p));
	else if (r)
		gw_warn("ebpf: cannot attach probes to %s: %s", real,
			strerror(-r));
	else if (n)
		gw_info("ebpf: attached %u probes to %s", n, real);
	return 0;
}

static void discover(struct ebpf_col *b)
{
	struct gw_discover_stats st;
	int r;

	if (!b->disc)
		return;
	r = gw_discover_run(b->disc, attach_host, b);
	gw_discover_stats(b->disc, &st);
	gw_dbg("ebpf: discovery found %d CUDA libraries, %llu watches", r,
	       (unsigned long long)st.watches);
}

/* Looks at one process: its CUDA libraries and its executable.  Returns 0
 * when the process is gone. */
static int scan_pid(struct ebpf_col *b, uint32_t pid)
{
	char path[64], line[PATH_MAX + 128], exe[PATH_MAX];
	ssize_t n;
	FILE *f;

	if (pid == (uint32_t)getpid())
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		unsigned int kind;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		kind = lib_kind(p);
		if (kind)
			attach(b, pid, p, kind);
	}
	fclose(f);
	/* An executable may carry cudart itself (nvcc -cudart static). */
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0 && exe[0] == '/') {
		exe[n] = '\0';
		if (!strstr(exe, " (deleted)"))
			attach(b, pid, exe, GW_LIB_RUNTIME | GW_LIB_DRIVER);
	}
	return 1;
}

static void scan_all(struct ebpf_col *b)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL && !stopping(b)) {
		char *end;
		unsigned long pid = strtoul(e->d_name, &end, 10);

		if (*end == '\0' && pid > 0 && pid <= UINT32_MAX)
			scan_pid(b, (uint32_t)pid);
	}
	closedir(d);
}

/* A new program: its libraries are mapped a moment after exec, and some
 * (dlopen) much later, so it is looked at a few times. */
static void schedule_scan(struct ebpf_col *b, uint32_t pid, double now)
{
	if (b->npending == MAX_PENDING) {
		b->pending_dropped++;
		return;
	}
	b->pending[b->npending++] = (struct pending){ pid, now + 0.1, 3 };
}

static void run_pending(struct ebpf_col *b, double now)
{
	for (unsigned int i = 0; i < b->npending;) {
		struct pending *q = &b->pending[i];

		if (q->due > now) {
			i++;
			continue;
		}
		/* Gone already: nothing more to look at. */
		if (!scan_pid(b, q->pid))
			q->left = 0;
		if (q->left-- > 0) {
			/* +0.1 s, +1 s, +6 s and +66 s after exec: late
			 * dlopen()s, such as a Python import, are common. */
			static const double next[] = { 60.0, 5.0, 0.9 };

			q->due = now + next[q->left < 3 ? q->left : 2];
			i++;
		} else {
			*q = b->pending[--b->npending];
		}
	}
}

/* ---- events ---- */

static const char *const reason_names[3] = { "clean", "error", "signal" };

/* Labels of a process without its pid: comm and attribution. */
static void exit_labels(struct ebpf_col *b, const struct gw_probe_event *e,
			char *out, size_t len, char *comm, size_t commlen)
{
	struct gw_attrib at;
	struct gw_buf buf;

	/*
	 * The process's name as it was seen alive (cached); the event's comm
	 * is the name of whichever thread ended last.
	 */
	memset(&at, 0, sizeof(at));
	if (!b->attrib || gw_attrib_get(b->attrib, e->pid, gw_now_mono(), &at))
		snprintf(at.comm, sizeof(at.comm), "%.*s", (int)sizeof(e->comm),
			 e->comm);
	snprintf(comm, commlen, "%s", at.comm);
	gw_buf_init(&buf, len);
	/* pid 0: no pid label, the counter outlives the process. */
	if (gw_attrib_labels(&at, 0, &buf) || !buf.p)
		out[0] = '\0';
	else
		snprintf(out, len, "%s", buf.p);
	gw_buf_release(&buf);
}

static void on_exit_event(struct ebpf_col *b, const struct gw_probe_event *e)
{
	int reason = e->signal ? 2 : e->exit_code ? 1 : 0;
	char labels[sizeof(b->exits[0].labels)], comm[64];
	struct exit_key *k = NULL;

	if (e->pid == (uint32_t)getpid())
		return;
	exit_labels(b, e, labels, sizeof(labels), comm, sizeof(comm));
	for (unsigned int i = 0; i < b->nexits; i++)
		if (strcmp(b->exits[i].labels, labels) == 0)
			k = &b->exits[i];
	if (!k && b->nexits < MAX_EXIT_KEYS) {
		k = &b->exits[b->nexits++];
		memset(k, 0, sizeof(*k));
		snprintf(k->labels, sizeof(k->labels), "%s", labels);
	}
	if (k) {
		k->n[reason]++;
		if (reason && e->live_bytes)
			k->abnormal_with_memory++;
	} else {
		b->exits_dropped++;
	}
	if (reason == 2)
		gw_warn("ebpf: process %u (%s) exited by signal %d holding "
			"%llu "
			"bytes of GPU memory",
			e->pid, comm, e->signal,
			(unsigned long long)e->live_bytes);
	else if (reason == 1)
		gw_warn("ebpf: process %u (%s) exited with code %d holding "
			"%llu "
			"bytes of GPU memory",
			e->pid, comm, e->exit_code,
			(unsigned long long)e->live_bytes);
	else
		gw_info("ebpf: process %u (%s) exited cleanly", e->pid, comm);
	if (b->ngone < MAX_GONE) {
		struct gone *g = &b->gone[b->ngone++];

		g->pid = e->pid;
		g->exited_unix = gw_now_real();
		snprintf(g->comm, sizeof(g->comm), "%.*s", (int)sizeof(e->comm),
			 e->comm);
	} else {
		gw_probes_forget(b->p, e->pid);
		if (b->attrib)
			gw_attrib_forget(b->attrib, e->pid);
	}
}

/* Exited processes leave the maps once their last counts were published. */
static void forget_gone(struct ebpf_col *b)
{
	for (unsigned int i = 0; i < b->ngone; i++) {
		gw_probes_forget(b->p, b->gone[i].pid);
		if (b->attrib)
			gw_attrib_forget(b->attrib, b->gone[i].pid);
	}
	b->ngone = 0;
}

static int on_event(void *ctx, const struct gw_probe_event *e)
{
	struct ebpf_col *b = ctx;

	switch (e->type) {
	case GW_EV_EXEC:
		schedule_scan(b, e->pid, gw_now_mono());
		break;
	case GW_EV_FIRST_CALL:
		/*
		 * Read the attribution while the process runs: a short one
		 * may be gone by the next publish, its labels stay cached.
		 */
		if (b->attrib && e->pid != (uint32_t)getpid()) {
			struct gw_attrib at;

			if (gw_attrib_get(b->attrib, e->pid, gw_now_mono(),
					  &at))
				gw_dbg("ebpf: process %u gone before its "
				       "attribution was read",
				       e->pid);
		}
		break;
	case GW_EV_EXIT:
		on_exit_event(b, e);
		break;
	case GW_EV_API_ERROR:
		/* Counts are in the maps; the log gets at most one OOM a second. */
		if ((e->flags & GW_EVF_OOM) &&
		    gw_now_mono() >= b->next_oom_log) {
			b->next_oom_log = gw_now_mono() + 1;
			gw_warn("ebpf: process %u (%.*s): %s of %llu bytes "
				"failed: "
				"out of GPU memory (holding %llu bytes)",
				e->pid, (int)sizeof(e->comm), e->comm,
				gw_cuda_api_name(e->api),
				(unsigned long long)e->size,
				(unsigned long long)e->live_bytes);
		} else {
			gw_dbg("ebpf: process %u: %s returned %d", e->pid,
			       gw_cuda_api_name(e->api), e->code);
		}
		break;
	default:
		break;
	}
	return 0;
}

/* ---- publishing ---- */

static struct pass_pid *pass_find(struct ebpf_col *b, uint32_t pid)
{
	for (unsigned int i = 0; i < b->npass; i++)
		if (b->pass[i].pid == pid)
			return &b->pass[i];
	return NULL;
}

/* The labels of pid for this pass, NULL when over the process cap. */
static struct pass_pid *pass_pid(struct ebpf_col *b, uint32_t pid, double now)
{
	struct pass_pid *pp = pass_find(b, pid);
	struct gw_attrib at;
	struct gw_buf buf;

	if (pp)
		return pp;
	if (b->npass == MAX_PIDS) {
		b->pids_dropped++;
		return NULL;
	}
	pp = &b->pass[b->npass++];
	pp->pid = pid;
	pp->sync_ns = 0;
	pp->high_rate = 0;
	memset(&at, 0, sizeof(at));
	if (b->attrib && gw_attrib_get(b->attrib, pid, now, &at)) {
		memset(&at, 0, sizeof(at));
		/* Gone unseen: the name its exit event gave. */
		for (unsigned int i = 0; i < b->ngone; i++)
			if (b->gone[i].pid == pid)
				snprintf(at.comm, sizeof(at.comm), "%s",
					 b->gone[i].comm);
	}
	gw_buf_init(&buf, sizeof(pp->labels));
	if (gw_attrib_labels(&at, pid, &buf) || !buf.p)
		snprintf(pp->labels, sizeof(pp->labels), "pid=\"%u\"", pid);
	else
		snprintf(pp->labels, sizeof(pp->labels), "%s", buf.p);
	gw_buf_release(&buf);
	return pp;
}

struct pub_ctx {
	struct ebpf_col *b;
	double now;
};

static int pub_api(void *ctx, const struct gw_api_stats *s)
{
	struct pub_ctx *pc = ctx;
	struct ebpf_col *b = pc->b;
	struct pass_pid *pp = pass_pid(b, s->pid, pc->now);
	const char *api = gw_cuda_api_name(s->api);
	uint64_t counts[NBOUNDS + 1] = { 0 };

	if (!pp || !s->calls)
		return 0;
	pp->sync_ns += s->sync_ns;
	gw_snap_add(&b->snap, GW_FAM(CUDA_API_CALLS_TOTAL), (double)s->calls,
		    pp->labels, "api", api, "source", "ebpf", NULL);
	if (s->bytes)
		gw_snap_add(&b->snap, GW_FAM(CUDA_API_BYTES_TOTAL),
			    (double)s->bytes, pp->labels, "api", api, NULL);
	/* hist[i]: latencies in [2^i, 2^(i+1)) ns, fold into 4x buckets. */
	for (unsigned int i = 0; i < 32; i++) {
		unsigned int j = 0;

		while (j < NBOUNDS && i + 1 > 10 + 2 * j)
			j++;
		counts[j] += s->hist[i];
	}
	gw_snap_add_histogram(&b->snap, GW_FAM(CUDA_API_DURATION_SECONDS),
			      bounds, counts, NBOUNDS,
			      (double)s->ns_total / 1e9, pp->labels, "api", api,
			      NULL);
	if (gw_cuda_api_is_high_rate(s->api))
		pp->high_rate = 1;
	return 0;
}

static int pub_err(void *ctx, const struct gw_err_stats *s)
{
	struct pub_ctx *pc = ctx;
	struct pass_pid *pp = pass_pid(pc->b, s->pid, pc->now);
	char code[16];

	if (!pp)
		return 0;
	snprintf(code, sizeof(code), "%d", s->code);
	gw_snap_add(&pc->b->snap, GW_FAM(CUDA_API_ERRORS_TOTAL),
		    (double)s->count, pp->labels, "api",
		    gw_cuda_api_name(s->api), "code", code, "source", "ebpf",
		    NULL);
	return 0;
}

static int pub_mem(void *ctx, const struct gw_mem_stats *s)
{
	struct pub_ctx *pc = ctx;
	struct pass_pid *pp = pass_pid(pc->b, s->pid, pc->now);

	if (!pp)
		return 0;
	gw_snap_add(&pc->b->snap, GW_FAM(CUDA_MEMORY_LIVE_BYTES),
		    (double)s->live_bytes, pp->labels, NULL);
	gw_snap_add(&pc->b->snap, GW_FAM(CUDA_MEMORY_LIVE_ALLOCATIONS),
		    (double)s->live_allocs, pp->labels, NULL);
	gw_snap_add(&pc->b->snap, GW_FAM(CUDA_MEMORY_LEAK_SUSPECT_BYTES),
		    (double)s->leak_bytes, pp->labels, NULL);
	return 0;
}

/*
 * The series of the processes that exited since the last pass, read from
 * the maps into this pass's snap, are kept for --exited-grace, and those
 * kept before are added again with their exit marker (pipeline/linger.h).
 * A pid alive again (reused) first loses what was kept of its old process.
 */
static void linger(struct ebpf_col *b, double now)
{
	for (unsigned int i = 0; i < b->npass; i++) {
		uint32_t pid = b->pass[i].pid;
		bool gone = false;

		for (unsigned int j = 0; j < b->ngone && !gone; j++)
			gone = b->gone[j].pid == pid;
		if (!gone)
			gw_linger_forget(b->linger, pid);
	}
	for (unsigned int i = 0; i < b->ngone; i++) {
		const struct pass_pid *pp = pass_find(b, b->gone[i].pid);
		int r;

		if (!pp)
			continue;
		r = gw_linger_take(b->linger, pp->pid, &b->snap, pp->labels,
				   b->gone[i].exited_unix, now);
		if (r < 0)
			gw_dbg("ebpf: the last values of process %u are not "
			       "kept: %s",
			       pp->pid, strerror(-r));
	}
	gw_linger_emit(b->linger, &b->snap, now);
}

static void publish(struct ebpf_col *b, double now)
{
	struct pub_ctx pc = { b, now };
	struct gw_probes_counters pcs;
	struct gw_snap *s = &b->snap;

	b->npass = 0;
	if (b->up) {
		if (gw_probes_read_api(b->p, pub_api, &pc) ||
		    gw_probes_read_errors(b->p, pub_err, &pc) ||
		    gw_probes_read_mem(b->p,
				       (uint64_t)(b->env->o->leak_age * 1e9),
				       pub_mem, &pc))
			gw_dbg("ebpf: reading the maps failed");
		for (unsigned int i = 0; i < b->npass; i++) {
			const struct pass_pid *pp = &b->pass[i];

			if (pp->sync_ns)
				gw_snap_add(
					s, GW_FAM(CUDA_SYNC_WAIT_SECONDS_TOTAL),
					(double)pp->sync_ns / 1e9, pp->labels,
					"source", "ebpf", NULL);
			if (pp->high_rate)
				gw_snap_add(s, GW_FAM(EBPF_SAMPLING_RATIO),
					    b->duty, pp->labels, NULL);
		}
		linger(b, now);
		gw_probes_counters(b->p, &pcs);
		gw_snap_add(s, GW_FAM(EBPF_PROBE_HITS_TOTAL), (double)pcs.hits,
			    NULL, NULL);
		gw_snap_add(s, GW_FAM(EBPF_ATTACHED_FILES),
			    (double)pcs.attached_files, NULL, NULL);
		gw_snap_add(s, GW_FAM(EBPF_PROBE_HIT_COST_SECONDS),
			    b->ns_per_hit / 1e9, NULL, NULL);
		gw_snap_add(s, GW_FAM(EBPF_DROPPED_TOTAL),
			    (double)pcs.dropped_allocs, NULL, "what",
			    "allocations", NULL);
		gw_snap_add(s, GW_FAM(EBPF_DROPPED_TOTAL),
			    (double)pcs.dropped_events, NULL, "what", "events",
			    NULL);
	}
	for (unsigned int i = 0; i < b->nexits; i++) {
		for (int r = 0; r < 3; r++)
			gw_snap_add(s, GW_FAM(PROCESS_EXITS_TOTAL),
				    (double)b->exits[i].n[r],
				    b->exits[i].labels, "reason",
				    reason_names[r], NULL);
		gw_snap_add(
			s, GW_FAM(PROCESS_ABNORMAL_EXITS_WITH_GPU_MEMORY_TOTAL),
			(double)b->exits[i].abnormal_with_memory,
			b->exits[i].labels, NULL);
	}
	gw_snap_add(s, GW_FAM(EBPF_DROPPED_TOTAL), (double)b->pids_dropped,
		    NULL, "what", "processes", NULL);
	gw_snap_add(s, GW_FAM(EBPF_DROPPED_TOTAL),
		    (double)(b->files_dropped + b->pending_dropped), NULL,
		    "what", "files", NULL);
	gw_snap_add(s, GW_FAM(EBPF_DROPPED_TOTAL), (double)b->exits_dropped,
		    NULL, "what", "exit_labels", NULL);
	{
		struct gw_linger_stats ls;

		gw_linger_stats(b->linger, &ls);
		gw_snap_add(s, GW_FAM(EBPF_DROPPED_TOTAL),
			    (double)(ls.evicted + ls.refused), NULL, "what",
			    "exited_processes", NULL);
	}
	gw_snap_add(s, GW_FAM(EBPF_UP), b->up, NULL, NULL);
	gw_registry_publish(b->env->reg, b->slot, s);
	if (b->up)
		forget_gone(b);
}

/* ---- governor ---- */

static double proc_cpu_s(struct ebpf_col *b, uint32_t pid)
{
	struct gw_procstat ps;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (gw_procstat_read(path, &ps))
		return NAN;
	return (double)(ps.utime + ps.stime) / (double)b->ticks_per_s;
}

static int gov_api(void *ctx, const struct gw_api_stats *s)
{
	struct ebpf_col *b = ctx;
	unsigned int i;

	for (i = 0; i < b->ncur; i++)
		if (b->cur[i].pid == s->pid)
			break;
	if (i == b->ncur) {
		if (b->ncur == MAX_PIDS)
			return 0;
		b->cur[b->ncur++] = (struct pid_cost){ s->pid, 0, NAN };
	}
	b->cur[i].hits += s->calls;
	return 0;
}

/*
 * Estimates each process's probe cost over the window (its new hits × the
 * cost of one hit) against its own CPU time over the window, and sets the
 * duty cycle of the high-rate probes from the worst process.
 */
static void govern(struct ebpf_col *b)
{
	double budget = b->env->o->ebpf_budget, old = b->duty, worst = 0;

	b->ncur = 0;
	if (gw_probes_read_api(b->p, gov_api, b))
		return;
	for (unsigned int i = 0; i < b->ncur; i++) {
		struct pid_cost *c = &b->cur[i];

		c->cpu_s = proc_cpu_s(b, c->pid);
		for (unsigned int j = 0; j < b->nprev; j++) {
			const struct pid_cost *p = &b->prev[j];
			double est;

			if (p->pid != c->pid || isnan(p->cpu_s) ||
			    isnan(c->cpu_s) || c->cpu_s <= p->cpu_s ||
			    c->hits < p->hits)
				continue;
			est = (double)(c->hits - p->hits) * b->ns_per_hit / 1e9;
			worst = fmax(worst, est / (c->cpu_s - p->cpu_s));
		}
	}
	memcpy(b->prev, b->cur, b->ncur * sizeof(b->cur[0]));
	b->nprev = b->ncur;
	if (worst > budget)
		b->duty = fmax(DUTY_MIN, b->duty * budget / worst);
	else if (worst < budget / 2 && b->duty < 1)
		b->duty = fmin(1, b->duty * 2);
	if (b->duty != old)
		gw_info("ebpf: probes cost up to %.2f%% of a process's CPU "
			"(budget %.2f%%); high-rate probes now on %.1f%% of "
			"the time",
			worst * 100, budget * 100, b->duty * 100);
}

/*
 * The cycle: on for duty × period, off for the rest.  A small duty gets a
 * longer period, so that the on-phase stays at least ON_MIN_S and the
 * switching itself (attach, detach) stays cheap.
 */
static double cycle_len(const struct ebpf_col *b)
{
	return fmin(60, fmax(CYCLE_S, ON_MIN_S / b->duty));
}

/* Switches the high-rate probes on and off within each cycle. */
static void duty_cycle(struct ebpf_col *b, double now)
{
	int want;

	if (now - b->cycle_start >= cycle_len(b))
		b->cycle_start = now;
	want = b->duty >= 1 || now - b->cycle_start < b->duty * cycle_len(b);
	if (want != b->high_on && gw_probes_set_high_rate(b->p, want) == 0)
		b->high_on = want;
}

/* ---- thread ---- */

/* libbpf's own messages: warnings as debug lines (our log says what matters). */
static __attribute__((format(printf, 2, 0))) int
libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];

	if (level == LIBBPF_DEBUG || !gw_log_enabled(GW_LOG_DEBUG))
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	gw_dbg("ebpf: libbpf: %s", line);
	return 0;
}

/* Loads and calibrates the probes and looks at every process once.  When
 * the probes cannot load, publishes ebpf_up 0 and ends the thread. */
static int probes_init(struct gw_worker *w, void *arg)
{
	struct ebpf_col *b = arg;
	struct gw_probes_opts o = { .sz = sizeof(o) };
	char err[256];
	double now;
	int r;

	b->me = w;
	libbpf_set_print(libbpf_log);
	r = gw_probes_open(&o, &b->p, err, sizeof(err));
	if (r) {
		gw_warn("ebpf: unavailable: %s; CUDA API metrics from eBPF are "
			"off (needs root or CAP_BPF and CAP_PERFMON, and "
			"kernel "
			"BTF; --no-ebpf silences this)",
			err);
		publish(b, gw_now_mono());
		return r;
	}
	/* The least of three: a busy machine inflates single readings. */
	b->ns_per_hit = 0;
	for (int i = 0; i < 3 && !stopping(b); i++) {
		double ns;

		if (gw_probes_calibrate(b->p, &ns) == 0 && ns > 0 &&
		    (b->ns_per_hit == 0 || ns < b->ns_per_hit))
			b->ns_per_hit = ns;
	}
	if (b->ns_per_hit <= 0)
		b->ns_per_hit = 7000; /* a typical uprobe + uretprobe */
	gw_info("ebpf: probes loaded; one probe hit costs %.1f us here",
		b->ns_per_hit / 1000);
	b->up = 1;
	b->high_on = 1;
	b->duty = 1;
	{
		struct gw_discover_opts d = {
			.sz = sizeof(d),
			.globs = b->env->o->cuda_lib_globs,
			.nglobs = b->env->o->ncuda_lib_globs,
		};

		r = gw_discover_new(&d, &b->disc);
		if (r)
			gw_warn("ebpf: CUDA libraries are probed once a "
				"process maps them, not from the start: %s",
				strerror(-r));
	}
	discover(b);
	scan_all(b);
	now = gw_now_mono();
	b->next_pub = now;
	b->next_scan = now + RESCAN_S;
	b->next_govern = now + GOVERN_S;
	b->cycle_start = now;
	return 0;
}

/*
 * What is due (scans, governor, duty cycle, publication), then the ring
 * buffer's events until the next thing is due, at most 250 ms: the round
 * ends that often, so a stop request is seen within 250 ms.
 */
static double probes_round(struct gw_worker *w, void *arg)
{
	struct ebpf_col *b = arg;
	double wake, now = gw_now_mono();
	int timeout, r;

	(void)w;
	run_pending(b, now);
	if (b->disc && gw_discover_changed(b->disc))
		discover(b);
	if (now >= b->next_scan) {
		unsigned int swept = 0;

		discover(b);
		scan_all(b);
		/* Exits whose event was lost (ring buffer full). */
		if (gw_probes_sweep(b->p, &swept) == 0 && swept)
			gw_dbg("ebpf: swept %u exited processes", swept);
		b->next_scan = now + RESCAN_S;
	}
	if (now >= b->next_govern) {
		govern(b);
		b->next_govern = now + GOVERN_S;
	}
	duty_cycle(b, now);
	if (now >= b->next_pub) {
		publish(b, now);
		b->next_pub = now + (double)atomic_load(b->env->fast_ms) / 1000;
	}
	wake = fmin(b->next_pub, fmin(b->next_scan, b->next_govern));
	for (unsigned int i = 0; i < b->npending; i++)
		wake = fmin(wake, b->pending[i].due);
	if (b->duty < 1)
		wake = fmin(wake, b->cycle_start + (b->high_on ? b->duty : 1) *
							   cycle_len(b));
	timeout = (int)fmin(250, fmax(1, (wake - gw_now_mono()) * 1000));
	{
		/* Events, or a watched folder of CUDA libraries changed. */
		struct pollfd pf[2] = {
			{ .fd = gw_probes_fd(b->p), .events = POLLIN },
			{ .fd = gw_discover_fd(b->disc), .events = POLLIN },
		};

		if (poll(pf, pf[1].fd >= 0 ? 2 : 1, timeout) < 0 &&
		    errno != EINTR)
			gw_dbg("ebpf: poll: %s", strerror(errno));
	}
	r = gw_probes_poll(b->p, 0, on_event, b);
	if (r < 0 && r != -EINTR)
		gw_dbg("ebpf: ring buffer poll: %s", strerror(-r));
	return 0;
}

static int col_start(const struct gw_collect_env *env, void **priv)
{
	struct gw_worker_opts wo = {
		.name = "gw-ebpf",
		.init = probes_init,
		.round = probes_round,
		.table = env->workers,
		.caps = gw_caps_ebpf(),
	};
	struct ebpf_col *b;
	int r;

	*priv = NULL;
	if (!env->o->ebpf) {
		gw_info("ebpf: off (--no-ebpf)");
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->pass = calloc(MAX_PIDS, sizeof(*b->pass));
	if (!b->pass) {
		free(b);
		return -ENOMEM;
	}
	for (int i = 0; i < NBOUNDS; i++)
		bounds[i] = ldexp(1, 10 + 2 * i) / 1e9;
	b->env = env;
	b->attrib = env->attrib;
	b->linger = gw_linger_new(env->o->exited_grace, MAX_GONE, 0, "ebpf");
	if (!b->linger) {
		free(b->pass);
		free(b);
		return -ENOMEM;
	}
	b->ticks_per_s = sysconf(_SC_CLK_TCK);
	if (b->ticks_per_s <= 0)
		b->ticks_per_s = 100;
	gw_snap_init(&b->snap);
	b->slot = gw_registry_slot(env->reg, "ebpf");
	if (b->slot < 0) {
		r = -ENOSPC;
		goto err;
	}
	wo.arg = b;
	r = gw_worker_start(&wo, &b->w);
	if (r)
		goto err;
	*priv = b;
	return 0;
err:
	gw_snap_release(&b->snap);
	gw_linger_free(b->linger);
	free(b->pass);
	free(b);
	return r;
}

static void col_request_stop(void *priv)
{
	struct ebpf_col *b = priv;

	gw_worker_request_stop(b->w);
}

static int col_stop(void *priv, double deadline)
{
	struct ebpf_col *b = priv;

	/*
	 * The thread sees the request within 250 ms of its loop, but loading
	 * and attaching at start can take longer on a busy machine.
	 */
	return gw_worker_stop(b->w, deadline);
}

static void col_free(void *priv)
{
	struct ebpf_col *b = priv;

	if (!b)
		return;
	gw_worker_free(b->w);
	gw_probes_close(b->p);
	gw_discover_free(b->disc);
	gw_linger_free(b->linger);
	gw_snap_release(&b->snap);
	free(b->pass);
	free(b);
}

const struct gw_collector_ops gw_bpf_collector = {
	.name = "ebpf",
	.start = col_start,
	.request_stop = col_request_stop,
	.stop = col_stop,
	.free = col_free,
};
