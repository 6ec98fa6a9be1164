/* SPDX-License-Identifier: MIT */
/*
 * collector.c - the cupti collector: one thread ("gw-cupti") that finds
 * the rings libgpuwatch_cupti.so writes (include/gpuwatch/cupti_ring.h),
 * reads them with decode.h and publishes per-process kernel, copy, memory
 * and API metrics.  See docs/internals/cupti.md.
 *
 * A ring's life, one pass every fast interval:
 *
 *   (file appears) --open/fstat/check--> ATTACHED      --pid found--> READ
 *        |                    |                  | tries left: retry    |
 *        |  refused: counted, |                  | no tries: IGNORED    | pid dead, start time
 *        |  remembered by     |                  v                      | changed, EXITED flag
 *        |  (dev, inode)      +-------------> IGNORED                   v
 *        |                                                 last read, publish, close,
 *        |                                                 unlink, forget
 *
 * A file that vanished from the directory (its writer removed it) is read
 * once more and forgotten without an unlink.  Ignored and refused files
 * are remembered in a bounded table so that they are logged and counted
 * once, not once per pass.
 *
 * Discovery is bounded per pass and fair per owner (scan_dir()): attached
 * rings are checked by name first; the listing goes on where the last
 * pass stopped (MAX_READ entries, MAX_CAND new files); new files are
 * opened MAX_OPEN a pass, one of each owner in turn; one owner holds at
 * most UID_RINGS rings.  One ring per host pid is published
 * (publish_rings()).
 *
 * The writer is untrusted: the file must be a regular file owned by the
 * owner of the process it names (or root), within size bounds, opened
 * without following links; the header is re-checked every pass and the
 * file's size too.  Rings are read with pread()/pwrite(), not mapped: a
 * writer that truncates its file makes a read come up short instead of
 * faulting the agent.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef GW_HAVE_DEMANGLE
#include <libiberty/demangle.h>
#endif

#include "collect/attrib.h"
#include "collect/cupti/collector.h"
#include "collect/cupti/export.h"
#include "collect/kernels.h"
#include "common/caps.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/worker.h"
#include "pipeline/catalog.h"
#include "pipeline/linger.h"

#define MAX_RINGS  1024	      /* rings attached at once */
#define UID_RINGS  256	      /* of which one owner may hold */
#define SKIP_SETS  4096u      /* remembered refusals: sets of ... */
#define SKIP_WAYS  8u	      /* ... this many (32768 in all) */
#define MAX_READ   8192u      /* directory entries read per pass */
#define MAX_CAND   4096u      /* new ring files looked at (fstatat) per pass */
#define MAX_OPEN   256u	      /* new ring files opened per pass */
#define CAND_NAME  48u	      /* longest ring file name + 1 */
#define INO_INDEX  2048u      /* attached rings by inode, per pass */
#define MAX_TRIES  5	      /* passes trying to find a ring's host pid */
#define MAX_SCAN   65536      /* /proc entries looked at per search */
#define MAX_SEARCH 16u	      /* such searches per pass */
#define TAKE_CAP   (1u << 20) /* bytes copied out per take */
#define MAX_TAKES  32	      /* takes per ring per pass */
#define NAME_CACHE 2048	      /* kernel label cache entries (direct-mapped) */
#define LABELS_MAX 512
#define MAP_MIN	   (4096u + GW_CRING_DATA_MIN)
#define MAP_MAX	   (65536u + GW_CRING_DATA_MAX)

static const char *const status_names[GW_CUPTI_ST_COUNT] = {
	"starting", "ok", "no_library", "busy", "failed", "partial", "stopped",
};

static const char *const copy_names[GW_COPY_KINDS] = {
	"htod", "dtoh", "dtod", "htoh", "ptop", "memset", "other",
};

enum refuse_reason {
	R_OPEN,
	R_NOT_REGULAR,
	R_SIZE,
	R_HEADER,
	R_VERSION,
	R_LIMIT,
	R_UNRESOLVED,
	R_OWNER,
	R_NAME,
	R_COUNT
};

static const char *const refuse_names[R_COUNT] = {
	"open",	 "not_regular", "size",	 "header", "version",
	"limit", "unresolved",	"owner", "name",
};

/* Why a ring file was passed over this pass (looked at again later). */
enum skip_reason { S_DEFERRED, S_DUPLICATE, S_LINGER, S_COUNT };

static const char *const skip_names[S_COUNT] = { "deferred", "duplicate",
						 "exited_not_kept" };

struct ring {
	char name[NAME_MAX + 1];
	dev_t dev;
	ino_t ino;
	uid_t uid;
	int fd;
	struct gw_cupti_ring_info ri;
	struct gw_cupti_proc *p;
	uint32_t host_pid; /* 0 until resolved */
	int tries;
	int seen;	   /* in the directory this pass */
	int dup_counted;   /* counted once as a duplicate */
	int may_search;	   /* may search /proc for its pid this pass */
	uint64_t overruns; /* takes that found head/tail lying */
	/* what the kernel directory (collect/kernels.h) was given */
	uint64_t shared_seq, shared_kgen;
	int shared;
};

/* A refused file: its inode and a hash of its name (an inode reused by a
 * new file under another name is looked at again). */
struct file_key {
	uint64_t ino;
	uint32_t name_hash;
	uint32_t stamp; /* insertion order, for replacing the oldest */
};

/* A new ring file found this pass, not yet opened. */
struct cand {
	char name[CAND_NAME];
	uint64_t ino;
	uid_t uid;
	int prio; /* 0 names a live process, 1 well formed, 2 the rest */
	unsigned int seq;
};

struct name_entry {
	uint64_t hash;
	int used;
	char label[GW_CUPTI_LABEL_MAX + 1];
};

struct ring_col {
	const struct gw_collect_env *env;
	/* The thread rests between passes until the next or a stop request
	 * (one wake-up per pass: timer wake-ups are not free on a VM). */
	struct gw_worker *w;
	int slot;
	struct gw_snap snap;
	/* Exited processes' last series, kept for --exited-grace. */
	struct gw_linger *linger;
	const char *proc_root;
	uint64_t self_pidns;
	int dir_warned;

	struct ring *rings[MAX_RINGS];
	unsigned int nrings;
	struct file_key *skip; /* SKIP_SETS * SKIP_WAYS */
	uint32_t skip_stamp;
	uint64_t refused[R_COUNT];
	uint64_t skipped[S_COUNT];

	/* Discovery: a listing of the directory that goes on where the last
	 * pass stopped; a cycle is one listing from start to end. */
	DIR *dir;
	unsigned int cycle_passes, last_cycle_passes;
	unsigned int rr; /* the owner served first, in turn */
	uint64_t passes;
	struct cand *cand; /* MAX_CAND */
	uint64_t ino_index[INO_INDEX];

	char *buf;
	unsigned int *idx;
	struct gw_cupti_kernel other;
	struct name_entry *names;
	double bounds[GW_CUPTI_HBOUNDS];
};

/* ---- pure pieces (export.h) ---- */

void gw_cupti_hist_bounds(double bounds[GW_CUPTI_HBOUNDS])
{
	for (unsigned int i = 0; i < GW_CUPTI_HBOUNDS; i++)
		bounds[i] = ldexp(1, 10 + (int)i) / 1e9;
}

void gw_cupti_hist_fold(const uint64_t bins[GW_CRING_KBINS], double scale,
			uint64_t counts[GW_CUPTI_HBOUNDS + 1])
{
	uint64_t raw[GW_CUPTI_HBOUNDS + 1] = { 0 };
	double cum = 0;
	uint64_t prev = 0;

	if (!(scale >= 1) || !isfinite(scale))
		scale = 1;
	for (unsigned int i = 0; i < GW_CRING_KBINS; i++) {
		uint64_t up = gw_cring_kbin_upper(i);
		unsigned int j = GW_CUPTI_HBOUNDS; /* +Inf */

		if (!bins[i])
			continue;
		if (up) {
			/* Smallest bound 2^(10+j) >= up (up is exclusive). */
			j = 0;
			while (j < GW_CUPTI_HBOUNDS && (1ull << (10 + j)) < up)
				j++;
		}
		raw[j] += bins[i];
	}
	for (unsigned int j = 0; j <= GW_CUPTI_HBOUNDS; j++) {
		uint64_t r;

		cum += (double)raw[j] * scale;
		r = (uint64_t)llround(cum);
		counts[j] = r >= prev ? r - prev : 0;
		if (r > prev)
			prev = r;
	}
}

static int rank_before(const struct gw_cupti_kernel *a,
		       const struct gw_cupti_kernel *b)
{
	if (a->est_ns != b->est_ns)
		return a->est_ns > b->est_ns;
	return a->name_hash < b->name_hash;
}

static void fold_into(struct gw_cupti_kernel *o,
		      const struct gw_cupti_kernel *k)
{
	o->count += k->count;
	o->total_ns += k->total_ns;
	o->est_count += k->est_count;
	o->est_ns += k->est_ns;
	for (unsigned int i = 0; i < GW_CRING_KBINS; i++)
		o->bins[i] += k->bins[i];
	if (k->min_ns && (!o->min_ns || k->min_ns < o->min_ns))
		o->min_ns = k->min_ns;
	if (k->max_ns > o->max_ns)
		o->max_ns = k->max_ns;
}

unsigned int gw_cupti_topk(const struct gw_cupti_kernel *ks, unsigned int n,
			   unsigned int k, unsigned int *idx,
			   struct gw_cupti_kernel *other, unsigned int *folded)
{
	unsigned int m = 0, nf = 0;

	memset(other, 0, sizeof(*other));
	other->flags = GW_CRING_KF_OTHER;
	snprintf(other->name, sizeof(other->name), "other");
	/* Insertion into a sorted list of at most k; n <= 1024. */
	for (unsigned int i = 0; i < n; i++) {
		unsigned int pos;

		if (ks[i].flags & GW_CRING_KF_OTHER) {
			fold_into(other, &ks[i]);
			nf++;
			continue;
		}
		pos = m;
		while (pos > 0 && rank_before(&ks[i], &ks[idx[pos - 1]]))
			pos--;
		if (pos >= k) {
			fold_into(other, &ks[i]);
			nf++;
			continue;
		}
		if (m == k) {
			fold_into(other, &ks[idx[m - 1]]);
			nf++;
			m--;
		}
		memmove(idx + pos + 1, idx + pos, (m - pos) * sizeof(*idx));
		idx[pos] = i;
		m++;
	}
	if (folded)
		*folded = nf;
	return m;
}

int gw_cupti_demangle(const char *mangled, char *out, size_t outlen)
{
	if (!outlen)
		return 0;
#ifdef GW_HAVE_DEMANGLE
	if (mangled[0] == '_' && mangled[1] == 'Z') {
		char *d = cplus_demangle(mangled, DMGL_PARAMS | DMGL_ANSI);

		if (d) {
			snprintf(out, outlen, "%s", d);
			free(d);
			return 1;
		}
	}
#endif
	snprintf(out, outlen, "%s", mangled);
	return 0;
}

void gw_cupti_label(const char *name, uint64_t hash, int force, char *out,
		    size_t outlen)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t n = strlen(name), o = 0, limit;
	int cut = force;

	if (outlen < GW_CUPTI_LABEL_MAX + 1) {
		if (outlen)
			out[0] = '\0';
		return;
	}
	/* Room for "~" and 8 hex digits when cut. */
	limit = GW_CUPTI_LABEL_MAX;
	for (size_t i = 0; i < n;) {
		size_t l = gw_utf8_len(s + i, n - i, NULL);
		size_t w = l ? l : 1;

		if (o + w > GW_CUPTI_LABEL_MAX - 9 && !cut) {
			/* Would it all fit uncut?  Measure the rest. */
			size_t rest = 0;

			for (size_t j = i; j < n;) {
				size_t lj = gw_utf8_len(s + j, n - j, NULL);

				rest += lj ? lj : 1;
				j += lj ? lj : 1;
			}
			if (o + rest > limit)
				cut = 1;
		}
		if (cut && o + w > GW_CUPTI_LABEL_MAX - 9)
			break;
		if (l)
			memcpy(out + o, s + i, l);
		else
			out[o] = '?';
		o += w;
		i += w;
	}
	if (cut)
		o += (size_t)snprintf(out + o, outlen - o, "~%08" PRIx32,
				      (uint32_t)(hash ^ (hash >> 32)));
	out[o] = '\0';
}

static int read_small(const char *path, char *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return -errno;
	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			close(fd);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return 0;
}

int gw_cupti_start_ticks(const char *proc_root, uint32_t pid, uint64_t *ticks)
{
	char path[PATH_MAX], buf[1024];
	const char *p;
	size_t len;
	int r;

	if (!proc_root || !ticks)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%u/stat", proc_root,
			     pid) >= sizeof(path))
		return -ENAMETOOLONG;
	r = read_small(path, buf, sizeof(buf), &len);
	if (r)
		return r;
	p = strrchr(buf, ')');
	if (!p)
		return -EBADMSG;
	p++;
	/* After ") " come fields 3 (state) .. 22 (starttime). */
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EBADMSG;
		if (field == 22) {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(p, &end, 10);
			if (errno || end == p ||
			    (*end != ' ' && *end != '\n' && *end != '\0'))
				return -EBADMSG;
			*ticks = v;
			return 0;
		}
		while (*p && *p != ' ')
			p++;
	}
	return -EBADMSG;
}

int gw_cupti_pidns(const char *proc_root, const char *who, uint64_t *ino)
{
	char path[PATH_MAX], link[64];
	struct stat st;
	ssize_t n;

	if (!proc_root || !who || !ino)
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s/ns/pid", proc_root,
			     who) >= sizeof(path))
		return -ENAMETOOLONG;
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		char *end;
		unsigned long long v;

		link[n] = '\0';
		if (strncmp(link, "pid:[", 5) == 0) {
			errno = 0;
			v = strtoull(link + 5, &end, 10);
			if (!errno && end != link + 5 && end[0] == ']' &&
			    end[1] == '\0') {
				*ino = v;
				return 0;
			}
		}
	}
	if (stat(path, &st))
		return -errno;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

/* The innermost pid of ROOT/P/status's NSpid line, 0 when none. */
static uint32_t nspid_last(const char *proc_root, const char *p)
{
	char path[PATH_MAX], buf[8192];
	const char *l;
	size_t len;
	unsigned long long v = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s/status", proc_root,
			     p) >= sizeof(path) ||
	    read_small(path, buf, sizeof(buf), &len))
		return 0;
	l = strstr(buf, "\nNSpid:");
	if (!l)
		return 0;
	l += 7;
	while (*l && *l != '\n') {
		char *end;

		while (*l == ' ' || *l == '\t')
			l++;
		if (!isdigit((unsigned char)*l))
			break;
		errno = 0;
		v = strtoull(l, &end, 10);
		if (errno || v > UINT32_MAX)
			return 0;
		l = end;
	}
	return (uint32_t)v;
}

int gw_cupti_pid_resolve(const char *proc_root, uint64_t self_pidns,
			 uint32_t pid, uint64_t pidns, uint64_t start_ticks,
			 unsigned int max_scan, uint32_t *host)
{
	DIR *d;
	struct dirent *e;
	unsigned int seen = 0;
	uint64_t t;
	int r = -ESRCH;

	if (!proc_root || !host || !pid)
		return -EINVAL;
	if (!pidns || pidns == self_pidns) {
		if (gw_cupti_start_ticks(proc_root, pid, &t) ||
		    t != start_ticks)
			return -ESRCH;
		*host = pid;
		return 0;
	}
	d = opendir(proc_root);
	if (!d)
		return -errno;
	while ((e = readdir(d)) && seen < max_scan) {
		char *end;
		unsigned long long v;
		uint64_t ns;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		seen++;
		errno = 0;
		v = strtoull(e->d_name, &end, 10);
		if (errno || *end || !v || v > UINT32_MAX)
			continue;
		if (gw_cupti_pidns(proc_root, e->d_name, &ns) || ns != pidns)
			continue;
		if (nspid_last(proc_root, e->d_name) != pid)
			continue;
		if (gw_cupti_start_ticks(proc_root, (uint32_t)v, &t) ||
		    t != start_ticks)
			continue;
		*host = (uint32_t)v;
		r = 0;
		break;
	}
	closedir(d);
	return r;
}

/* ---- rings ---- */

static uint64_t now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static struct file_key *skip_set(const struct ring_col *c, uint64_t ino,
				 uint32_t nh)
{
	uint64_t h = (ino ^ ((uint64_t)nh << 32)) * 0x9e3779b97f4a7c15ull;

	return &c->skip[(h >> 40) % SKIP_SETS * SKIP_WAYS];
}

/* The file was refused before: not looked at again. */
static int skipped(const struct ring_col *c, uint64_t ino, const char *name)
{
	uint32_t nh = name_hash(name);
	const struct file_key *set = skip_set(c, ino, nh);

	for (unsigned int i = 0; i < SKIP_WAYS; i++)
		if (set[i].stamp && set[i].ino == ino && set[i].name_hash == nh)
			return 1;
	return 0;
}

static void remember(struct ring_col *c, uint64_t ino, const char *name)
{
	uint32_t nh = name_hash(name);
	struct file_key *set = skip_set(c, ino, nh), *old = set;

	for (unsigned int i = 0; i < SKIP_WAYS; i++) {
		if (!set[i].stamp) {
			old = &set[i];
			break;
		}
		/* Wrapping stamps: the furthest behind is the oldest. */
		if (c->skip_stamp - set[i].stamp > c->skip_stamp - old->stamp)
			old = &set[i];
	}
	if (++c->skip_stamp == 0)
		c->skip_stamp = 1;
	*old = (struct file_key){ ino, nh, c->skip_stamp };
}

/*
 * Counts a refusal, logs it (each reason its own class, rate-limited) and
 * remembers the file, so that it is refused once, not once per pass.
 */
static void refuse(struct ring_col *c, const char *name, dev_t dev, ino_t ino,
		   enum refuse_reason why, const char *detail)
{
	const char *dir = c->env->o->cupti_dir;

	(void)dev;
	c->refused[why]++;
	switch (why) {
	case R_LIMIT:
		gw_info("cupti: not reading %s/%s: limit: %u rings, %u of "
			"one owner",
			dir, name, MAX_RINGS, UID_RINGS);
		break;
	case R_OWNER:
		gw_info("cupti: not reading %s/%s: owner: the file's owner "
			"does not own the process it names",
			dir, name);
		break;
	case R_NAME:
		gw_info("cupti: not reading %s/%.64s...: name: not a ring "
			"file's name",
			dir, name);
		break;
	default:
		gw_info("cupti: not reading %s/%s: %s%s%s", dir, name,
			refuse_names[why], detail ? ": " : "",
			detail ? detail : "");
		break;
	}
	if (ino)
		remember(c, (uint64_t)ino, name);
}

static void ring_free(struct ring *g)
{
	if (!g)
		return;
	if (g->fd >= 0)
		close(g->fd);
	gw_cupti_proc_free(g->p);
	free(g);
}

/* The header's magic is still 0: a writer in the middle of creating it. */
static int magic_unset(int fd)
{
	uint32_t magic = 1;

	return pread(fd, &magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	       magic == 0;
}

static unsigned int uid_rings(const struct ring_col *c, uid_t uid)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < c->nrings; i++)
		n += c->rings[i]->uid == uid;
	return n;
}

static void attach(struct ring_col *c, int dfd, const char *name)
{
	struct ring *g = NULL;
	struct stat st;
	int fd, r, young;

	fd = openat(dfd, name,
		    O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		/* Gone meanwhile: nothing to say. */
		if (errno != ENOENT) {
			if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				refuse(c, name, st.st_dev, st.st_ino, R_OPEN,
				       strerror(errno));
		}
		return;
	}
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	if (skipped(c, (uint64_t)st.st_ino, name)) {
		close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		refuse(c, name, st.st_dev, st.st_ino, R_NOT_REGULAR, NULL);
		goto fail;
	}
	young = gw_now_real() - (double)st.st_mtime < 10;
	if (st.st_size < (off_t)MAP_MIN || st.st_size > (off_t)MAP_MAX) {
		/* A writer still sizing its file gets another chance. */
		if (st.st_size == 0 && young)
			goto fail;
		refuse(c, name, st.st_dev, st.st_ino, R_SIZE, NULL);
		goto fail;
	}
	if (c->nrings >= MAX_RINGS || uid_rings(c, st.st_uid) >= UID_RINGS) {
		refuse(c, name, st.st_dev, st.st_ino, R_LIMIT, NULL);
		goto fail;
	}
	g = calloc(1, sizeof(*g));
	if (!g || gw_cupti_proc_new(&g->p))
		goto fail;
	g->fd = fd;
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->dev = st.st_dev;
	g->ino = st.st_ino;
	g->uid = st.st_uid;
	r = gw_cupti_ring_check(fd, &g->ri);
	if (r == -EBADMSG && young && magic_unset(fd))
		goto fail_ring; /* the writer stores the magic last */
	if (r) {
		refuse(c, name, st.st_dev, st.st_ino,
		       r == -EPROTONOSUPPORT ? R_VERSION : R_HEADER, NULL);
		goto fail_ring;
	}
	g->seen = 1;
	c->rings[c->nrings++] = g;
	gw_dbg("cupti: attached %s (pid %u in its namespace, library %s)", name,
	       g->ri.pid, g->ri.lib_version);
	return;
fail_ring:
	ring_free(g);
	return;
fail:
	if (g)
		gw_cupti_proc_free(g->p);
	free(g);
	close(fd);
}

/* Attached rings by inode, rebuilt every pass (open addressing). */
static void index_rings(struct ring_col *c)
{
	memset(c->ino_index, 0, sizeof(c->ino_index));
	for (unsigned int i = 0; i < c->nrings; i++) {
		uint64_t ino = (uint64_t)c->rings[i]->ino;
		unsigned int h =
			(unsigned int)(ino * 0x9e3779b97f4a7c15ull >> 40) %
			INO_INDEX;

		if (!ino)
			continue;
		while (c->ino_index[h])
			h = (h + 1) % INO_INDEX;
		c->ino_index[h] = ino;
	}
}

static int attached_ino(const struct ring_col *c, uint64_t ino)
{
	unsigned int h =
		(unsigned int)(ino * 0x9e3779b97f4a7c15ull >> 40) % INO_INDEX;

	while (c->ino_index[h]) {
		if (c->ino_index[h] == ino)
			return 1;
		h = (h + 1) % INO_INDEX;
	}
	return 0;
}

/*
 * A ring file's name, gpuwatch-cupti.PID.TICKS, says which process wrote
 * it (a hint only): 0 when that pid is a process here, 1 for a name of
 * that form, 2 for any other name.
 */
static int name_prio(const struct ring_col *c, const char *name)
{
	const char *p = name + sizeof(GW_CRING_PREFIX) - 1, *dot;
	char path[64];
	struct stat st;
	size_t n;

	dot = strchr(p, '.');
	n = dot ? (size_t)(dot - p) : 0;
	if (!n || n > 10 || strspn(p, "0123456789") != n || !dot[1] ||
	    strspn(dot + 1, "0123456789") != strlen(dot + 1))
		return 2;
	if ((size_t)snprintf(path, sizeof(path), "%s/%.*s", c->proc_root,
			     (int)n, p) >= sizeof(path))
		return 1;
	return stat(path, &st) == 0 ? 0 : 1;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio - y->prio;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/*
 * Reads on in the directory listing: at most MAX_READ entries and
 * MAX_CAND new ring files (name, not attached, not refused before, a
 * regular file by fstatat) into c->cand.  Returns their number.  At the
 * end of the listing the cycle is complete and the next pass starts a
 * new one.
 */
static unsigned int list_new(struct ring_col *c, int dfd)
{
	unsigned int nread = 0, n = 0;

	if (!c->dir) {
		int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		c->dir = fd >= 0 ? fdopendir(fd) : NULL;
		if (!c->dir) {
			if (fd >= 0)
				close(fd);
			return 0;
		}
	}
	c->cycle_passes++;
	while (nread < MAX_READ && n < MAX_CAND) {
		struct dirent *e = readdir(c->dir);
		struct cand *k = &c->cand[n];
		struct stat st;
		size_t len;

		if (!e) {
			closedir(c->dir);
			c->dir = NULL;
			c->last_cycle_passes = c->cycle_passes;
			c->cycle_passes = 0;
			break;
		}
		nread++;
		if (strncmp(e->d_name, GW_CRING_PREFIX,
			    sizeof(GW_CRING_PREFIX) - 1) != 0 ||
		    attached_ino(c, (uint64_t)e->d_ino) ||
		    skipped(c, (uint64_t)e->d_ino, e->d_name))
			continue;
		len = strlen(e->d_name);
		if (len >= CAND_NAME) {
			refuse(c, e->d_name, 0, e->d_ino, R_NAME, NULL);
			continue;
		}
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue; /* gone meanwhile */
		/* Where d_ino is not st_ino (overlayfs), by st_ino again. */
		if ((uint64_t)st.st_ino != (uint64_t)e->d_ino &&
		    (attached_ino(c, (uint64_t)st.st_ino) ||
		     skipped(c, (uint64_t)st.st_ino, e->d_name)))
			continue;
		if (!S_ISREG(st.st_mode)) {
			refuse(c, e->d_name, st.st_dev, st.st_ino,
			       R_NOT_REGULAR, NULL);
			continue;
		}
		memcpy(k->name, e->d_name, len + 1);
		k->ino = (uint64_t)st.st_ino;
		k->uid = st.st_uid;
		k->prio = name_prio(c, k->name);
		k->seq = n++;
	}
	return n;
}

/*
 * One pass of discovery.  The rings attached already come first: each is
 * looked up by name (seen while its name still leads to its inode),
 * however large the directory.  Then new files from the listing are
 * opened, at most MAX_OPEN a pass, taking one file of each owner in turn
 * (a flood from one user does not hold back another's process), within
 * an owner the files that name a live process first.  Files left over
 * are counted (deferred) and found again when the listing comes round.
 */
static void scan_dir(struct ring_col *c)
{
	const char *dir = c->env->o->cupti_dir;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unsigned int n, end, opened = 0, ngroups = 0, first;
	unsigned int start[MAX_OPEN + 1];

	c->passes++;
	if (dfd < 0) {
		if (!c->dir_warned)
			gw_warn("cupti: cannot read %s: %s; no CUDA kernel "
				"metrics from the injection library",
				dir, strerror(errno));
		c->dir_warned = 1;
		/* Keep the rings we have: the directory may come back. */
		for (unsigned int i = 0; i < c->nrings; i++)
			c->rings[i]->seen = 1;
		if (c->dir) {
			closedir(c->dir);
			c->dir = NULL;
		}
		return;
	}
	c->dir_warned = 0;
	for (unsigned int i = 0; i < c->nrings; i++) {
		struct ring *g = c->rings[i];
		struct stat st;

		g->seen =
			fstatat(dfd, g->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			st.st_ino == g->ino && st.st_dev == g->dev;
	}
	index_rings(c);
	n = list_new(c, dfd);
	if (n > 1)
		qsort(c->cand, n, sizeof(*c->cand), cand_cmp);
	/* Groups of one owner each: start[i] .. start[i + 1]; owners beyond
	 * MAX_OPEN are served when the listing comes round again. */
	for (end = 0; end < n; end++) {
		if (end && c->cand[end].uid == c->cand[end - 1].uid)
			continue;
		if (ngroups == MAX_OPEN)
			break;
		start[ngroups++] = end;
	}
	start[ngroups] = end;
	first = ngroups ? c->rr++ % ngroups : 0;
	for (unsigned int round = 0; opened < MAX_OPEN; round++) {
		unsigned int took = 0;

		for (unsigned int j = 0; j < ngroups && opened < MAX_OPEN;
		     j++) {
			unsigned int gi = (first + j) % ngroups;
			unsigned int i = start[gi] + round;

			if (i >= start[gi + 1])
				continue;
			took++;
			opened++;
			attach(c, dfd, c->cand[i].name);
		}
		if (!took)
			break;
	}
	c->skipped[S_DEFERRED] += n - opened;
	close(dfd);
}

/* The process is gone: pid dead or reused. */
static int process_gone(struct ring_col *c, const struct ring *g)
{
	uint64_t t;

	return gw_cupti_start_ticks(c->proc_root, g->host_pid, &t) ||
	       t != g->ri.start_ticks;
}

static int owner_ok(struct ring_col *c, const struct ring *g)
{
	char path[PATH_MAX];
	struct stat st;

	if (g->uid == 0)
		return 1;
	snprintf(path, sizeof(path), "%s/%u", c->proc_root, g->host_pid);
	if (stat(path, &st))
		return 1; /* gone: judged by process_gone() */
	return st.st_uid == g->uid;
}

static void drain(struct ring_col *c, struct ring *g)
{
	uint64_t now = now_real_ns();

	for (int i = 0; i < MAX_TAKES; i++) {
		size_t len = 0;
		int lost = 0;

		if (gw_cupti_ring_take(g->fd, &g->ri, c->buf, TAKE_CAP, &len,
				       &lost, now))
			break;
		if (lost)
			g->overruns++;
		if (!len)
			break;
		gw_cupti_decode(g->p, c->buf, len);
	}
}

/* Hands what the ring taught since the last pass to the kernel directory
 * (collect/kernels.h), for the profiler's launch call paths. */
static void share_kernels(struct ring_col *c, struct ring *g)
{
	struct gw_kernels *k = c->env->kernels;
	const struct gw_cupti_proc *p = g->p;

	if (!k || !g->host_pid)
		return;
	for (unsigned int i = 0; i < p->nkernels; i++) {
		const struct gw_cupti_kernel *e = &p->kernels[i];

		if (g->shared && e->seen_seq <= g->shared_seq)
			continue;
		if (e->flags & GW_CRING_KF_OTHER)
			continue;
		gw_kernels_kernel(k, g->host_pid, e->name_hash, e->name,
				  e->est_count, e->est_ns);
	}
	if (!g->shared || p->kfunc_gen != g->shared_kgen)
		for (unsigned int i = 0; i < p->nkfuncs; i++)
			gw_kernels_handle(k, g->host_pid, p->kfuncs[i].kind,
					  p->kfuncs[i].handle,
					  p->kfuncs[i].name_hash);
	g->shared_seq = p->process.seq;
	g->shared_kgen = p->kfunc_gen;
	g->shared = 1;
}

/* The label value of a kernel, from the cache or computed. */
static const char *kernel_label(struct ring_col *c,
				const struct gw_cupti_kernel *k)
{
	struct name_entry *e = &c->names[k->name_hash % NAME_CACHE];
	char disp[GW_CRING_NAME_MAX * 2];
	int force;

	if (e->used && e->hash == k->name_hash)
		return e->label;
	gw_cupti_demangle(k->name, disp, sizeof(disp));
	/* A cut name, or one that reads like the fold bucket, gets its
	 * hash: two kernels never share a series. */
	force = (k->flags & GW_CRING_KF_TRUNCATED) ||
		strcmp(disp, "other") == 0;
	gw_cupti_label(disp, k->name_hash, force, e->label, sizeof(e->label));
	e->hash = k->name_hash;
	e->used = 1;
	return e->label;
}

static double prod3(const int32_t v[3])
{
	double p = 1;

	for (int i = 0; i < 3; i++)
		p *= v[i] > 0 ? v[i] : 1;
	return p;
}

static void pub_kernel(struct ring_col *c, const char *L,
		       const struct gw_cupti_kernel *k, const char *kname,
		       int detail)
{
	struct gw_snap *s = &c->snap;
	uint64_t counts[GW_CUPTI_HBOUNDS + 1];
	double scale = k->count ? k->est_count / (double)k->count : 1;

	gw_snap_add(s, GW_FAM(CUDA_KERNEL_LAUNCHES_TOTAL), k->est_count, L,
		    "kernel", kname, NULL);
	gw_cupti_hist_fold(k->bins, scale, counts);
	gw_snap_add_histogram(s, GW_FAM(CUDA_KERNEL_DURATION_SECONDS),
			      c->bounds, counts, GW_CUPTI_HBOUNDS,
			      k->est_ns / 1e9, L, "kernel", kname, NULL);
	if (k->count) {
		gw_snap_add(s, GW_FAM(CUDA_KERNEL_DURATION_MIN_SECONDS),
			    (double)k->min_ns / 1e9, L, "kernel", kname, NULL);
		gw_snap_add(s, GW_FAM(CUDA_KERNEL_DURATION_MAX_SECONDS),
			    (double)k->max_ns / 1e9, L, "kernel", kname, NULL);
	}
	if (!detail || !k->count)
		return;
	gw_snap_add(s, GW_FAM(CUDA_KERNEL_DURATION_RECENT_SECONDS),
		    k->recent_ns / 1e9, L, "kernel", kname, NULL);
	gw_snap_add(s, GW_FAM(CUDA_KERNEL_REGISTERS_PER_THREAD), k->registers,
		    L, "kernel", kname, NULL);
	gw_snap_add(s, GW_FAM(CUDA_KERNEL_SHARED_MEMORY_BYTES),
		    (double)k->static_smem + k->dynamic_smem, L, "kernel",
		    kname, NULL);
	gw_snap_add(s, GW_FAM(CUDA_KERNEL_BLOCK_THREADS), prod3(k->block), L,
		    "kernel", kname, NULL);
	gw_snap_add(s, GW_FAM(CUDA_KERNEL_GRID_BLOCKS), prod3(k->grid), L,
		    "kernel", kname, NULL);
	if (k->occupancy >= 0 && k->occupancy <= 1)
		gw_snap_add(s, GW_FAM(CUDA_KERNEL_OCCUPANCY_RATIO),
			    k->occupancy, L, "kernel", kname, NULL);
}

/* L: the process's labels, LABELS_MAX bytes, filled for the caller. */
static void pub_ring(struct ring_col *c, const struct ring *g, double now_mono,
		     char *L)
{
	struct gw_snap *s = &c->snap;
	const struct gw_cupti_proc *p = g->p;
	const struct gw_crec_process *pr = &p->process;
	struct gw_attrib at;
	struct gw_buf buf;
	char code[16];
	unsigned int m, k = c->env->o->cupti_max_kernels;
	uint32_t st = g->ri.status;

	memset(&at, 0, sizeof(at));
	if (c->env->attrib &&
	    gw_attrib_get(c->env->attrib, g->host_pid, now_mono, &at))
		memset(&at, 0, sizeof(at));
	gw_buf_init(&buf, sizeof(L));
	if (gw_attrib_labels(&at, g->host_pid, &buf) || !buf.p)
		snprintf(L, LABELS_MAX, "pid=\"%u\"", g->host_pid);
	else
		snprintf(L, LABELS_MAX, "%s", buf.p);
	gw_buf_release(&buf);

	if (st < GW_CUPTI_ST_COUNT)
		gw_snap_add(s, GW_FAM(CUPTI_STATUS), 1, L, "status",
			    status_names[st], NULL);
	if (p->have_process) {
		gw_snap_add(s, GW_FAM(CUPTI_SAMPLING_RATIO), pr->sampling_ratio,
			    L, NULL);
		gw_snap_add(s, GW_FAM(CUPTI_OVERHEAD_SECONDS_TOTAL),
			    (double)pr->overhead_ns / 1e9, L, NULL);
		gw_snap_add(s, GW_FAM(CUDA_MEMORY_ALLOCATED_BYTES),
			    (double)pr->mem_live_bytes, L, NULL);
		gw_snap_add(s, GW_FAM(CUDA_MEMORY_ALLOCATED_PEAK_BYTES),
			    (double)pr->mem_peak_bytes, L, NULL);
		gw_snap_add(s, GW_FAM(CUDA_MEMORY_ALLOCATIONS_TOTAL),
			    (double)pr->mem_allocs, L, "op", "alloc", NULL);
		gw_snap_add(s, GW_FAM(CUDA_MEMORY_ALLOCATIONS_TOTAL),
			    (double)pr->mem_frees, L, "op", "free", NULL);
		gw_snap_add(s, GW_FAM(CUDA_OOM_TOTAL), (double)pr->oom, L,
			    NULL);
		gw_snap_add(s, GW_FAM(CUDA_CONTEXTS_TOTAL),
			    (double)pr->contexts_created, L, "event", "created",
			    NULL);
		gw_snap_add(s, GW_FAM(CUDA_CONTEXTS_TOTAL),
			    (double)pr->contexts_destroyed, L, "event",
			    "destroyed", NULL);
	}
	gw_snap_add(s, GW_FAM(CUPTI_DROPPED_TOTAL), (double)g->ri.dropped, L,
		    "reason", "ring_full", NULL);
	gw_snap_add(s, GW_FAM(CUPTI_DROPPED_TOTAL), (double)pr->records_dropped,
		    L, "reason", "cupti", NULL);
	gw_snap_add(s, GW_FAM(CUPTI_DROPPED_TOTAL),
		    (double)pr->kernels_overflow, L, "reason", "kernel_table",
		    NULL);
	gw_snap_add(s, GW_FAM(CUPTI_DROPPED_TOTAL), (double)pr->api_overflow, L,
		    "reason", "api_table", NULL);
	/* Entries beyond the agent's tables only come from a bad writer. */
	gw_snap_add(s, GW_FAM(CUPTI_DROPPED_TOTAL),
		    (double)(p->st.bad + p->st.overflow), L, "reason",
		    "bad_record", NULL);
	gw_snap_add(s, GW_FAM(CUPTI_DROPPED_TOTAL), (double)g->overruns, L,
		    "reason", "overrun", NULL);

	if (p->have_memcpy) {
		const struct gw_family *bandwidth =
			GW_FAM(CUDA_MEMCPY_BANDWIDTH_BYTES_PER_SECOND);

		for (unsigned int i = 0; i < GW_COPY_KINDS; i++) {
			const struct gw_crec_copy *cp = &p->memcpy.kind[i];

			if (!cp->count && !cp->bytes)
				continue;
			gw_snap_add(s, GW_FAM(CUDA_MEMCPY_BYTES_TOTAL),
				    (double)cp->bytes, L, "kind", copy_names[i],
				    NULL);
			gw_snap_add(s, GW_FAM(CUDA_MEMCPY_OPERATIONS_TOTAL),
				    (double)cp->count, L, "kind", copy_names[i],
				    NULL);
			gw_snap_add(s, GW_FAM(CUDA_MEMCPY_SECONDS_TOTAL),
				    (double)cp->total_ns / 1e9, L, "kind",
				    copy_names[i], NULL);
			if (cp->total_ns)
				gw_snap_add(
					s, bandwidth,
					(double)cp->bytes /
						((double)cp->total_ns / 1e9),
					L, "kind", copy_names[i], NULL);
		}
	}

	for (unsigned int i = 0; i < p->napis; i++) {
		const struct gw_cupti_api *a = &p->apis[i];

		if (a->code != 0) {
			snprintf(code, sizeof(code), "%d", a->code);
			gw_snap_add(s, GW_FAM(CUDA_API_ERRORS_TOTAL),
				    (double)a->count, L, "api", a->name, "code",
				    code, "source", "cupti", NULL);
		} else if (a->sync) {
			gw_snap_add(s, GW_FAM(CUDA_SYNC_WAIT_SECONDS_TOTAL),
				    (double)a->total_ns / 1e9, L, "api",
				    a->name, "source", "cupti", NULL);
			gw_snap_add(s, GW_FAM(CUDA_SYNC_CALLS_TOTAL),
				    (double)a->count, L, "api", a->name,
				    "source", "cupti", NULL);
		}
	}

	unsigned int folded = 0;

	m = gw_cupti_topk(p->kernels, p->nkernels, k, c->idx, &c->other,
			  &folded);
	for (unsigned int i = 0; i < m; i++) {
		const struct gw_cupti_kernel *kk = &p->kernels[c->idx[i]];

		pub_kernel(c, L, kk, kernel_label(c, kk), 1);
	}
	if (folded)
		pub_kernel(c, L, &c->other, "other", 0);
}

/* Unlinks g's file if the name still points at it. */
static void unlink_ring(struct ring_col *c, const struct ring *g)
{
	int dfd =
		open(c->env->o->cupti_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (dfd < 0)
		return;
	if (fstatat(dfd, g->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == g->dev && st.st_ino == g->ino &&
	    unlinkat(dfd, g->name, 0) && errno != ENOENT)
		gw_dbg("cupti: cannot remove %s: %s", g->name, strerror(errno));
	close(dfd);
}

static void forget(struct ring_col *c, unsigned int i, int remove)
{
	struct ring *g = c->rings[i];

	if (remove)
		unlink_ring(c, g);
	if (g->host_pid && c->env->attrib)
		gw_attrib_forget(c->env->attrib, g->host_pid);
	if (g->host_pid)
		gw_kernels_forget(c->env->kernels, g->host_pid);
	ring_free(g);
	c->rings[i] = c->rings[--c->nrings];
}

/* Where rings go after this pass's publish. */
enum fate { KEEP, FORGET, REMOVE, IGNORE };

/* A ring read this pass, in the order publishing prefers. */
struct pub {
	struct ring *g;
	unsigned int i;
	unsigned char fate;
};

static int live_status(uint32_t st)
{
	return st == GW_CUPTI_ST_OK || st == GW_CUPTI_ST_PARTIAL;
}

/*
 * Rings of one host pid together; first the newer process (a pid reused),
 * then one whose process still runs, then one whose injection works, then
 * the one written last.
 */
static int pub_cmp(const void *a, const void *b)
{
	const struct pub *x = a, *y = b;
	const struct gw_cupti_ring_info *p = &x->g->ri, *q = &y->g->ri;

	if (x->g->host_pid != y->g->host_pid)
		return x->g->host_pid < y->g->host_pid ? -1 : 1;
	if (p->start_ticks != q->start_ticks)
		return p->start_ticks > q->start_ticks ? -1 : 1;
	if ((x->fate == KEEP) != (y->fate == KEEP))
		return x->fate == KEEP ? -1 : 1;
	if (live_status(p->status) != live_status(q->status))
		return live_status(p->status) ? -1 : 1;
	if (p->write_ns != q->write_ns)
		return p->write_ns > q->write_ns ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * A ring read for the last time (its process exited, or its file went
 * away) leaves its series on /metrics for --exited-grace with
 * gpuwatch_process_exited_timestamp_seconds{source="cupti"}, as the eBPF
 * layer does for its own (pipeline/linger.h): a job shorter than a scrape
 * interval is still scraped.  A pid published alive again (reused) first
 * loses what was kept of its old process.  The exit time is the ring's
 * last write, the injection's atexit flush.
 */
static void linger_ring(struct ring_col *c, const struct ring *g,
			unsigned char fate, const char *L, double now)
{
	double exited;
	int r;

	if (fate == KEEP) {
		gw_linger_forget(c->linger, g->host_pid);
		return;
	}
	if (fate != REMOVE && fate != FORGET)
		return;
	exited = g->ri.write_ns ? (double)g->ri.write_ns / 1e9 : gw_now_real();
	r = gw_linger_take(c->linger, g->host_pid, &c->snap, L, exited, now);
	if (r < 0) {
		c->skipped[S_LINGER]++;
		gw_dbg("cupti: the last values of process %u are not kept: %s",
		       g->host_pid, strerror(-r));
	}
}

/*
 * Publishes one ring per host pid: the process labels are the series'
 * identity, so a second ring of the same pid (a process that loaded the
 * library twice, a file copied, a pid reused while the old ring is read
 * for the last time) would repeat every series.  The others are read but
 * not published, counted once each as skipped (duplicate).
 */
static void publish_rings(struct ring_col *c, struct pub *pub, unsigned int n,
			  double now)
{
	char L[LABELS_MAX];

	if (n > 1)
		qsort(pub, n, sizeof(*pub), pub_cmp);
	for (unsigned int k = 0; k < n; k++) {
		struct ring *g = pub[k].g;

		if (k && g->host_pid == pub[k - 1].g->host_pid) {
			if (!g->dup_counted) {
				g->dup_counted = 1;
				c->skipped[S_DUPLICATE]++;
				gw_info("cupti: %s/%s names process %u as "
					"%s/%s does; only the latter is "
					"published",
					c->env->o->cupti_dir, g->name,
					g->host_pid, c->env->o->cupti_dir,
					pub[k - 1].g->name);
			}
			pub[k].g = pub[k - 1].g; /* the group's first */
			continue;
		}
		pub_ring(c, g, now, L);
		linger_ring(c, g, pub[k].fate, L, now);
	}
	gw_linger_emit(c->linger, &c->snap, now);
}

static void pass(struct ring_col *c)
{
	unsigned char fate[MAX_RINGS];
	struct pub pub[MAX_RINGS];
	double now = gw_now_mono();
	struct gw_snap *s = &c->snap;
	unsigned int attached = 0, searches = 0, n;

	scan_dir(c);
	n = c->nrings;
	/* A search of /proc for a ring of another pid namespace is costly:
	 * MAX_SEARCH a pass, the rings taking turns. */
	for (unsigned int k = 0; k < n; k++) {
		struct ring *g = c->rings[(c->passes + k) % n];

		g->may_search = searches < MAX_SEARCH;
		if (!g->host_pid && g->ri.pidns_ino &&
		    g->ri.pidns_ino != c->self_pidns && g->may_search)
			searches++;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct ring *g = c->rings[i];
		int exited;

		fate[i] = KEEP;
		/* Read through the fd: a file cut short fails, never faults. */
		if (gw_cupti_ring_check(g->fd, &g->ri)) {
			refuse(c, g->name, g->dev, g->ino, R_HEADER,
			       "changed while read");
			fate[i] = IGNORE;
			continue;
		}
		exited = (g->ri.flags & GW_CRING_F_EXITED) != 0;
		if (!g->host_pid) {
			uint32_t host;
			int r;

			if (g->ri.pidns_ino &&
			    g->ri.pidns_ino != c->self_pidns && !g->may_search)
				continue; /* its turn comes */
			r = gw_cupti_pid_resolve(c->proc_root, c->self_pidns,
						 g->ri.pid, g->ri.pidns_ino,
						 g->ri.start_ticks, MAX_SCAN,
						 &host);
			if (r == 0) {
				g->host_pid = host;
			} else if (!g->ri.pidns_ino ||
				   g->ri.pidns_ino == c->self_pidns) {
				/* Our namespace, and no such process: the
				 * file of a dead one.  Nothing to label. */
				fate[i] = REMOVE;
				continue;
			} else if (exited) {
				fate[i] = REMOVE;
				continue;
			} else if (++g->tries >= MAX_TRIES) {
				refuse(c, g->name, g->dev, g->ino, R_UNRESOLVED,
				       NULL);
				fate[i] = IGNORE;
				continue;
			} else {
				continue;
			}
			if (!owner_ok(c, g)) {
				refuse(c, g->name, g->dev, g->ino, R_OWNER,
				       NULL);
				fate[i] = IGNORE;
				continue;
			}
		}
		/* Judged before the read: a dead writer wrote all it will. */
		if (!g->seen)
			fate[i] = FORGET;
		else if (exited || process_gone(c, g))
			fate[i] = REMOVE;
		drain(c, g);
		share_kernels(c, g);
		pub[attached++] = (struct pub){ g, i, fate[i] };
	}
	publish_rings(c, pub, attached, now);
	for (unsigned int i = 0; i < R_COUNT; i++)
		gw_snap_add(s, GW_FAM(CUPTI_RINGS_REFUSED_TOTAL),
			    (double)c->refused[i], NULL, "reason",
			    refuse_names[i], NULL);
	for (unsigned int i = 0; i < S_COUNT; i++)
		gw_snap_add(s, GW_FAM(CUPTI_RINGS_SKIPPED_TOTAL),
			    (double)c->skipped[i], NULL, "reason",
			    skip_names[i], NULL);
	gw_snap_add(s, GW_FAM(CUPTI_SCANS_TOTAL), (double)c->passes, NULL,
		    NULL);
	if (c->last_cycle_passes)
		gw_snap_add(s, GW_FAM(CUPTI_SCAN_CYCLE_PASSES),
			    c->last_cycle_passes, NULL, NULL);
	gw_snap_add(s, GW_FAM(CUPTI_RINGS), attached, NULL, NULL);
	gw_registry_publish(c->env->reg, c->slot, s);

	/* From the end, as forget() moves the last ring into the hole. */
	for (unsigned int i = c->nrings; i-- > 0;) {
		if (fate[i] == KEEP)
			continue;
		if (fate[i] == REMOVE)
			gw_dbg("cupti: process %u finished; removing %s",
			       c->rings[i]->host_pid ? c->rings[i]->host_pid
						     : c->rings[i]->ri.pid,
			       c->rings[i]->name);
		forget(c, i, fate[i] == REMOVE);
	}
}

static int rings_init(struct gw_worker *w, void *arg)
{
	struct ring_col *c = arg;

	(void)w;
	if (gw_cupti_pidns(c->proc_root, "self", &c->self_pidns))
		c->self_pidns = 0;
	return 0;
}

/* One pass; the next a fast interval after this one ended. */
static double rings_round(struct gw_worker *w, void *arg)
{
	struct ring_col *c = arg;

	(void)w;
	pass(c);
	return (double)atomic_load(c->env->fast_ms) / 1000;
}

static void col_free(void *priv)
{
	struct ring_col *c = priv;

	if (!c)
		return;
	gw_worker_free(c->w);
	/* Rings stay: their writers unlink them once we stop reading. */
	for (unsigned int i = 0; i < c->nrings; i++)
		ring_free(c->rings[i]);
	if (c->dir)
		closedir(c->dir);
	gw_snap_release(&c->snap);
	gw_linger_free(c->linger);
	free(c->skip);
	free(c->cand);
	free(c->buf);
	free(c->idx);
	free(c->names);
	free(c);
}

static int col_start(const struct gw_collect_env *env, void **priv)
{
	struct gw_worker_opts wo = {
		.name = "gw-cupti",
		.init = rings_init,
		.round = rings_round,
		.table = env->workers,
		.caps = GW_CAPS_CUPTI,
	};
	struct ring_col *c;
	int r = -ENOMEM;

	*priv = NULL;
	if (!env->o->cupti) {
		gw_info("cupti: off (--no-cupti)");
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	gw_snap_init(&c->snap);
	c->env = env;
	c->proc_root = "/proc";
	c->buf = malloc(TAKE_CAP);
	c->idx = calloc(GW_CUPTI_MAX_KERNELS, sizeof(*c->idx));
	c->names = calloc(NAME_CACHE, sizeof(*c->names));
	c->skip = calloc((size_t)SKIP_SETS * SKIP_WAYS, sizeof(*c->skip));
	c->cand = calloc(MAX_CAND, sizeof(*c->cand));
	c->linger = gw_linger_new(env->o->exited_grace, MAX_RINGS, 0, "cupti");
	if (!c->buf || !c->idx || !c->names || !c->skip || !c->cand ||
	    !c->linger)
		goto err;
	gw_cupti_hist_bounds(c->bounds);
	c->slot = gw_registry_slot(env->reg, "cupti");
	if (c->slot < 0) {
		r = -ENOSPC;
		goto err;
	}
	wo.arg = c;
	r = gw_worker_start(&wo, &c->w);
	if (r)
		goto err;
	*priv = c;
	return 0;
err:
	col_free(c);
	return r;
}

/* Ends the thread's rest between passes at once. */
static void col_request_stop(void *priv)
{
	struct ring_col *c = priv;

	gw_worker_request_stop(c->w);
}

static int col_stop(void *priv, double deadline)
{
	struct ring_col *c = priv;

	return gw_worker_stop(c->w, deadline);
}

const struct gw_collector_ops gw_cupti_collector = {
	.name = "cupti",
	.start = col_start,
	.request_stop = col_request_stop,
	.stop = col_stop,
	.free = col_free,
};
