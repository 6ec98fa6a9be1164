/* SPDX-License-Identifier: MIT */
/*
 * attrib.c - pid -> comm, container id, pod uid and job, cached.
 *
 * The cache is a fixed array of entries, a free stack, and an open-addressed
 * index (linear probing, backward-shift deletion) from pid to entry, twice
 * the size of the array.  Eviction scans the array: at 4096 entries that is
 * a few microseconds, and it only happens on a miss with the cache full.
 *
 * An entry's life:
 *
 *         miss: /proc read         now - fetched >= ttl: /proc read again
 *   free ------------------> LIVE ------------------------------------+
 *    ^                        |  ^                                     |
 *    |                        |  +------------ process still there ---+
 *    |  forget / evicted      |                                        |
 *    +------------------------+<---------------- GONE <----------------+
 *                                  (labels kept,    process gone
 *                                   evicted first)
 */
#include "attrib.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline/metrics.h"

#define EMPTY	 UINT32_MAX
#define ID_MIN	 12u
#define ID_MAX	 64u
#define UUID_LEN 36u
/* Longest raw value kept from an environ entry; it is cleaned and cut after. */
#define ENV_VALUE_RAW 128u
#define ENV_CHUNK     4096u

struct entry {
	uint32_t pid;	/* 0: free */
	bool gone;	/* the last /proc read found no process */
	double fetched; /* `now` of the last /proc read */
	double used_at; /* `now` of the last lookup */
	uint64_t seq;	/* order of the last lookup */
	struct gw_attrib a;
};

struct gw_attrib_cache {
	pthread_mutex_t lock;
	/* Set at creation, read without the lock. */
	char proc_root[GW_ATTRIB_PROC_ROOT_MAX + 1];
	char job_env[GW_ATTRIB_MAX_JOB_ENV][GW_ATTRIB_ENV_NAME_MAX + 1];
	size_t job_len[GW_ATTRIB_MAX_JOB_ENV];
	unsigned int njob;
	unsigned int max;
	double ttl;
	/* Under the lock. */
	struct entry *e;
	uint32_t *free_stack;
	unsigned int nfree;
	uint32_t *index;
	uint32_t index_mask;
	unsigned int index_shift;
	uint64_t seq;
	struct gw_attrib_stats st;
};

/* ---- cleaning ---- */

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/*
 * Copies src[0..n) to dst without control characters, NUL-terminated, at
 * most dstlen - 1 bytes; a cut never splits a UTF-8 sequence.  Invalid
 * UTF-8 is left for gw_labels_append() to replace.
 */
static void clean_copy(char *dst, size_t dstlen, const char *src, size_t n)
{
	size_t j = 0, i;
	bool cut = false;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		if (is_ctl(c))
			continue;
		if (j + 1 >= dstlen) {
			cut = true;
			break;
		}
		dst[j++] = (char)c;
	}
	if (cut) {
		/* Back off to the start of the last sequence if incomplete. */
		size_t k = j, back = 0;

		while (k > 0 && back < 4 &&
		       ((unsigned char)dst[k - 1] & 0xc0) == 0x80) {
			k--;
			back++;
		}
		if (k > 0 && (unsigned char)dst[k - 1] >= 0xc0) {
			unsigned char lead = (unsigned char)dst[k - 1];
			size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;

			if (back + 1 < need)
				j = k - 1;
		}
	}
	dst[j] = '\0';
}

/* ---- the cgroup parser ---- */

static bool is_lhex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool hex_id(const char *s, size_t n)
{
	if (n < ID_MIN || n > ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lhex(s[i]))
			return false;
	return true;
}

/* 8-4-4-4-12 lowercase hex; sep is '-' (cgroupfs) or '_' (systemd). */
static bool uuid_at(const char *s, size_t n, char sep)
{
	if (n != UUID_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != sep)
				return false;
		} else if (!is_lhex(s[i])) {
			return false;
		}
	}
	return true;
}

static bool comp_is(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n == l && memcmp(p, lit, l) == 0;
}

static bool comp_starts(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n >= l && memcmp(p, lit, l) == 0;
}

static bool comp_ends(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n >= l && memcmp(p + n - l, lit, l) == 0;
}

struct found {
	const char *cid; /* hex_id(), cidn long */
	size_t cidn;
	const char *pod; /* uuid_at(), UUID_LEN long, '-' or '_' */
};

static const char *const runtime_prefixes[] = {
	"cri-containerd-", "docker-", "crio-", "cri-o-", "libpod-",
};

/*
 * "kubepods-pod<uid>.slice" or "kubepods-<qos>-pod<uid>.slice": the pod
 * uid, or NULL.
 */
static const char *systemd_pod(const char *p, size_t n)
{
	const char *in, *uid;
	size_t inn;

	if (!comp_starts(p, n, "kubepods-") || !comp_ends(p, n, ".slice"))
		return NULL;
	in = p + strlen("kubepods-");
	inn = n - strlen("kubepods-") - strlen(".slice");
	if (inn < 3 + UUID_LEN)
		return NULL;
	uid = in + inn - UUID_LEN;
	if (memcmp(uid - 3, "pod", 3) != 0 || !uuid_at(uid, UUID_LEN, '_'))
		return NULL;
	if (inn > 3 + UUID_LEN && uid[-4] != '-')
		return NULL;
	return uid;
}

/* "<runtime>-<hex>" or "<runtime>-<hex>.scope": sets the id. */
static bool runtime_scope(const char *p, size_t n, const char **id, size_t *idn)
{
	if (comp_ends(p, n, ".scope"))
		n -= strlen(".scope");
	for (size_t i = 0;
	     i < sizeof(runtime_prefixes) / sizeof(runtime_prefixes[0]); i++) {
		size_t l = strlen(runtime_prefixes[i]);

		if (comp_starts(p, n, runtime_prefixes[i]) &&
		    hex_id(p + l, n - l)) {
			*id = p + l;
			*idn = n - l;
			return true;
		}
	}
	return false;
}

/* Walks one cgroup path, component by component. */
static void scan_path(const char *p, const char *end, struct found *f)
{
	bool kube = false, prev_docker = false, prev_pod = false;

	memset(f, 0, sizeof(*f));
	while (p < end) {
		const char *c = p, *uid;
		size_t n;
		bool is_pod = false;

		while (p < end && *p != '/')
			p++;
		n = (size_t)(p - c);
		if (p < end)
			p++;
		if (n == 0)
			continue;
		if (comp_is(c, n, "kubepods")) {
			kube = true;
		} else if ((uid = systemd_pod(c, n)) != NULL) {
			kube = is_pod = true;
			f->pod = uid;
			f->cid = NULL;
		} else if (kube && n == 3 + UUID_LEN &&
			   comp_starts(c, n, "pod") &&
			   uuid_at(c + 3, UUID_LEN, '-')) {
			is_pod = true;
			f->pod = c + 3;
			f->cid = NULL;
		} else if (runtime_scope(c, n, &f->cid, &f->cidn)) {
			/* set */
		} else if ((prev_docker || prev_pod) && hex_id(c, n)) {
			f->cid = c;
			f->cidn = n;
		}
		prev_docker = comp_is(c, n, "docker");
		prev_pod = is_pod;
	}
}

static int score(const struct found *f)
{
	return (f->cid ? 2 : 0) + (f->pod ? 1 : 0);
}

/*
 * One line: "ID:CONTROLLERS:/PATH" with ID decimal, CONTROLLERS without ':'
 * (empty for v2).  Anything else is skipped.
 */
static void scan_line(const char *s, const char *end, struct found *f)
{
	const char *p = s;

	memset(f, 0, sizeof(*f));
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p == s || p == end || *p != ':')
		return;
	p++;
	while (p < end && *p != ':')
		p++;
	if (p == end)
		return;
	p++;
	if (p == end || *p != '/')
		return;
	scan_path(p, end, f);
}

int gw_attrib_parse_cgroup(const char *text, size_t len, char *container_id,
			   size_t cidlen, char *pod_uid, size_t podlen)
{
	struct found best = { 0 }, f;
	const char *p, *end;

	if (container_id && cidlen)
		container_id[0] = '\0';
	if (pod_uid && podlen)
		pod_uid[0] = '\0';
	if ((!text && len) || !container_id || !pod_uid ||
	    cidlen < GW_ATTRIB_CONTAINER_ID_SIZE ||
	    podlen < GW_ATTRIB_POD_UID_SIZE)
		return -EINVAL;
	p = text;
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		scan_line(p, le, &f);
		if (score(&f) > score(&best))
			best = f;
		p = nl ? nl + 1 : end;
	}
	if (best.cid) {
		memcpy(container_id, best.cid, best.cidn);
		container_id[best.cidn] = '\0';
	}
	if (best.pod) {
		for (size_t i = 0; i < UUID_LEN; i++)
			pod_uid[i] = best.pod[i] == '_' ? '-' : best.pod[i];
		pod_uid[UUID_LEN] = '\0';
	}
	return 0;
}

/* ---- reading /proc/PID ---- */

static int gone_or(int e)
{
	return e == ENOENT || e == ESRCH || e == ENOTDIR ? -ENOENT : -e;
}

/* Reads up to cap bytes of dfd/name; *len is what was read. */
static int read_at(int dfd, const char *name, char *buf, size_t cap,
		   size_t *len)
{
	size_t got = 0;
	int fd, err = 0;

	*len = 0;
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return gone_or(errno);
	while (got < cap) {
		ssize_t r = read(fd, buf + got, cap - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = gone_or(errno);
			break;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return err;
}

static int read_comm(int dfd, struct gw_attrib *a)
{
	char buf[128];
	size_t n;
	int err = read_at(dfd, "comm", buf, sizeof(buf), &n);

	if (err)
		return err;
	clean_copy(a->comm, sizeof(a->comm), buf, n); /* drops the '\n' */
	return 0;
}

/*
 * A missing or unreadable cgroup file (a kernel without cgroups, a process
 * that just exited) leaves the ids empty.
 */
static int read_cgroup(int dfd, struct gw_attrib *a)
{
	char *buf = malloc(GW_ATTRIB_CGROUP_MAX);
	size_t n;

	if (!buf)
		return -ENOMEM;
	if (read_at(dfd, "cgroup", buf, GW_ATTRIB_CGROUP_MAX, &n) != 0)
		n = 0;
	if (n == GW_ATTRIB_CGROUP_MAX) {
		/* Cut at the bound: drop the partial line, not half an id. */
		while (n > 0 && buf[n - 1] != '\n')
			n--;
	}
	if (gw_attrib_parse_cgroup(buf, n, a->container_id,
				   sizeof(a->container_id), a->pod_uid,
				   sizeof(a->pod_uid)) != 0)
		a->container_id[0] = a->pod_uid[0] = '\0';
	free(buf);
	return 0;
}

/* One environ entry "NAME=VALUE" (perhaps cut): the job, by priority. */
static void env_entry(const struct gw_attrib_cache *c, const char *s, size_t n,
		      unsigned int *best, struct gw_attrib *a)
{
	for (unsigned int i = 0; i < c->njob && i < *best; i++) {
		size_t l = c->job_len[i];
		char v[sizeof(a->job)];

		if (n <= l || s[l] != '=' || memcmp(s, c->job_env[i], l) != 0)
			continue;
		clean_copy(v, sizeof(v), s + l + 1, n - l - 1);
		if (!v[0])
			continue;
		memcpy(a->job, v, sizeof(v));
		*best = i;
		return;
	}
}

/*
 * Streams the first GW_ATTRIB_ENVIRON_MAX bytes of environ, keeping only
 * the head of each entry.  Unreadable (another user's process without
 * CAP_SYS_PTRACE, a process that just exited) leaves the job empty.
 */
static void read_environ(const struct gw_attrib_cache *c, int dfd,
			 struct gw_attrib *a)
{
	char chunk[ENV_CHUNK];
	char cur[GW_ATTRIB_ENV_NAME_MAX + 1 + ENV_VALUE_RAW];
	size_t curn = 0, total = 0;
	unsigned int best = c->njob;
	bool eof = false;
	int fd;

	if (!c->njob)
		return;
	fd = openat(dfd, "environ", O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	while (total < GW_ATTRIB_ENVIRON_MAX && best > 0) {
		size_t want = GW_ATTRIB_ENVIRON_MAX - total;
		ssize_t r;
		const char *p, *end;

		if (want > sizeof(chunk))
			want = sizeof(chunk);
		r = read(fd, chunk, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			eof = r == 0;
			break;
		}
		total += (size_t)r;
		p = chunk;
		end = chunk + r;
		while (p < end) {
			const char *z = memchr(p, '\0', (size_t)(end - p));
			const char *ze = z ? z : end;
			size_t take = (size_t)(ze - p);

			if (take > sizeof(cur) - curn)
				take = sizeof(cur) - curn;
			memcpy(cur + curn, p, take);
			curn += take;
			if (!z)
				break;
			env_entry(c, cur, curn, &best, a);
			curn = 0;
			p = z + 1;
		}
	}
	/* A last entry without its NUL counts only if the file ended there. */
	if (eof && curn)
		env_entry(c, cur, curn, &best, a);
	close(fd);
}

static int read_proc(const struct gw_attrib_cache *c, uint32_t pid,
		     struct gw_attrib *a)
{
	char path[GW_ATTRIB_PROC_ROOT_MAX + 16];
	int dfd, err;

	memset(a, 0, sizeof(*a));
	snprintf(path, sizeof(path), "%s/%" PRIu32, c->proc_root, pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return gone_or(errno);
	/* comm decides whether the process is there; the rest is optional. */
	err = read_comm(dfd, a);
	if (!err)
		err = read_cgroup(dfd, a);
	if (!err)
		read_environ(c, dfd, a);
	close(dfd);
	return err;
}

/* ---- the cache ---- */

static uint32_t home(const struct gw_attrib_cache *c, uint32_t pid)
{
	return (uint32_t)(pid * 0x9e3779b1u) >> c->index_shift;
}

/* Index position holding pid, or -1. */
static long find(const struct gw_attrib_cache *c, uint32_t pid)
{
	uint32_t i = home(c, pid);

	while (c->index[i] != EMPTY) {
		if (c->e[c->index[i]].pid == pid)
			return (long)i;
		i = (i + 1) & c->index_mask;
	}
	return -1;
}

static void index_add(struct gw_attrib_cache *c, uint32_t idx)
{
	uint32_t i = home(c, c->e[idx].pid);

	while (c->index[i] != EMPTY)
		i = (i + 1) & c->index_mask;
	c->index[i] = idx;
}

/* Drops the entry at index position pos; it goes back to the free stack. */
static void drop(struct gw_attrib_cache *c, uint32_t pos)
{
	uint32_t idx = c->index[pos], i = pos, j = pos;

	for (;;) {
		uint32_t k;

		c->index[i] = EMPTY;
		for (;;) {
			j = (j + 1) & c->index_mask;
			if (c->index[j] == EMPTY)
				goto done;
			k = home(c, c->e[c->index[j]].pid);
			/* Stays when its home is cyclically in (i, j]. */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			c->index[i] = c->index[j];
			i = j;
			break;
		}
	}
done:
	c->e[idx].pid = 0;
	c->free_stack[c->nfree++] = idx;
}

/*
 * The entry to evict for a new pid at `now`: not looked up at this `now`,
 * exited processes first, then the least recently used.  -1 when none.
 */
static long victim(const struct gw_attrib_cache *c, double now)
{
	long best = -1;

	for (unsigned int i = 0; i < c->max; i++) {
		const struct entry *e = &c->e[i];

		if (!e->pid || !(e->used_at < now))
			continue;
		if (best < 0 || (e->gone && !c->e[best].gone) ||
		    (e->gone == c->e[best].gone && e->seq < c->e[best].seq))
			best = (long)i;
	}
	return best;
}

static bool has_room(const struct gw_attrib_cache *c, double now)
{
	return c->nfree > 0 || victim(c, now) >= 0;
}

/* A free entry for pid, evicting if needed; -1 when full. */
static long take(struct gw_attrib_cache *c, uint32_t pid, double now)
{
	uint32_t idx;

	if (!c->nfree) {
		long v = victim(c, now);

		if (v < 0)
			return -1;
		drop(c, (uint32_t)find(c, c->e[v].pid));
		c->st.evictions++;
	}
	idx = c->free_stack[--c->nfree];
	c->e[idx].pid = pid;
	index_add(c, idx);
	return (long)idx;
}

static void touch(struct gw_attrib_cache *c, struct entry *e, double now)
{
	e->used_at = now;
	e->seq = ++c->seq;
}

static bool expired(const struct gw_attrib_cache *c, const struct entry *e,
		    double now)
{
	return now - e->fetched >= c->ttl;
}

#define OPT_HAS(o, f)                                                          \
	((o)->sz >= offsetof(struct gw_attrib_opts, f) + sizeof((o)->f))

static int copy_opts(struct gw_attrib_cache *c, const struct gw_attrib_opts *o)
{
	static const char *const def_env[] = { "SLURM_JOB_ID" };
	const char *root = "/proc";
	const char *const *env = def_env;
	unsigned int nenv = 1;
	size_t l;

	c->max = GW_ATTRIB_DEFAULT_MAX_PIDS;
	c->ttl = GW_ATTRIB_DEFAULT_TTL_S;
	if (o) {
		if (o->sz < sizeof(o->sz))
			return -EINVAL;
		/* A newer caller's fields must be unset. */
		for (size_t i = sizeof(*o); i < o->sz; i++)
			if (((const unsigned char *)o)[i])
				return -EINVAL;
		if (OPT_HAS(o, proc_root) && o->proc_root)
			root = o->proc_root;
		if (OPT_HAS(o, max_pids) && o->max_pids)
			c->max = o->max_pids;
		if (OPT_HAS(o, ttl_s) && o->ttl_s != 0)
			c->ttl = o->ttl_s;
		if (OPT_HAS(o, njob_env) && (o->job_env || o->njob_env)) {
			env = o->job_env;
			nenv = o->njob_env;
		}
	}
	if (c->max > GW_ATTRIB_MAX_PIDS_LIMIT || !isfinite(c->ttl) ||
	    c->ttl < 0 || nenv > GW_ATTRIB_MAX_JOB_ENV || (nenv && !env))
		return -EINVAL;
	l = strlen(root);
	if (!l || l > GW_ATTRIB_PROC_ROOT_MAX)
		return -EINVAL;
	memcpy(c->proc_root, root, l + 1);
	for (unsigned int i = 0; i < nenv; i++) {
		if (!env[i])
			return -EINVAL;
		l = strlen(env[i]);
		if (!l || l > GW_ATTRIB_ENV_NAME_MAX || memchr(env[i], '=', l))
			return -EINVAL;
		memcpy(c->job_env[i], env[i], l + 1);
		c->job_len[i] = l;
	}
	c->njob = nenv;
	return 0;
}

int gw_attrib_cache_new(const struct gw_attrib_opts *o,
			struct gw_attrib_cache **out)
{
	struct gw_attrib_cache *c;
	uint32_t size = 16;
	unsigned int bits = 4;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = copy_opts(c, o);
	if (err)
		goto err_free;
	while (size < 2 * c->max) {
		size *= 2;
		bits++;
	}
	c->index_mask = size - 1;
	c->index_shift = 32 - bits;
	err = -ENOMEM;
	c->e = calloc(c->max, sizeof(*c->e));
	c->free_stack = calloc(c->max, sizeof(*c->free_stack));
	c->index = malloc(size * sizeof(*c->index));
	if (!c->e || !c->free_stack || !c->index)
		goto err_arrays;
	memset(c->index, 0xff, size * sizeof(*c->index));
	/* Popped from the top: entry 0 first. */
	for (unsigned int i = 0; i < c->max; i++)
		c->free_stack[i] = c->max - 1 - i;
	c->nfree = c->max;
	err = -pthread_mutex_init(&c->lock, NULL);
	if (err)
		goto err_arrays;
	*out = c;
	return 0;

err_arrays:
	free(c->e);
	free(c->free_stack);
	free(c->index);
err_free:
	free(c);
	return err;
}

void gw_attrib_cache_free(struct gw_attrib_cache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->e);
	free(c->free_stack);
	free(c->index);
	free(c);
}

int gw_attrib_get(struct gw_attrib_cache *c, uint32_t pid, double now,
		  struct gw_attrib *a)
{
	struct gw_attrib fresh;
	struct entry *e;
	long pos;
	int err;

	if (!pid || !isfinite(now))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	c->st.lookups++;
	pos = find(c, pid);
	if (pos >= 0) {
		e = &c->e[c->index[pos]];
		if (!expired(c, e, now)) {
			touch(c, e, now);
			*a = e->a;
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
	} else if (!has_room(c, now)) {
		c->st.refused++;
		pthread_mutex_unlock(&c->lock);
		return -ENOSPC;
	}
	c->st.misses++;
	pthread_mutex_unlock(&c->lock);

	err = read_proc(c, pid, &fresh);

	pthread_mutex_lock(&c->lock);
	pos = find(c, pid);
	if (err) {
		/* Keep what was seen; re-check a gone process after ttl. */
		if (pos >= 0) {
			e = &c->e[c->index[pos]];
			if (err == -ENOENT) {
				e->gone = true;
				e->fetched = now;
			}
			touch(c, e, now);
			*a = e->a;
			err = 0;
		}
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	if (pos < 0) {
		pos = take(c, pid, now);
		if (pos < 0) {
			c->st.refused++;
			pthread_mutex_unlock(&c->lock);
			return -ENOSPC;
		}
		e = &c->e[pos];
	} else {
		e = &c->e[c->index[pos]];
	}
	e->a = fresh;
	e->gone = false;
	e->fetched = now;
	touch(c, e, now);
	*a = fresh;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void gw_attrib_forget(struct gw_attrib_cache *c, uint32_t pid)
{
	long pos;

	if (!pid)
		return;
	pthread_mutex_lock(&c->lock);
	pos = find(c, pid);
	if (pos >= 0)
		drop(c, (uint32_t)pos);
	pthread_mutex_unlock(&c->lock);
}

void gw_attrib_stats(struct gw_attrib_cache *c, struct gw_attrib_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}

int gw_attrib_labels(const struct gw_attrib *a, uint32_t pid, struct gw_buf *b)
{
	const struct {
		const char *name, *value;
	} opt[] = {
		{ "container_id", a->container_id },
		{ "pod_uid", a->pod_uid },
		{ "job", a->job },
	};
	size_t start = b->len;
	char num[16];
	int err = gw_buf_error(b);

	if (err)
		return err;
	snprintf(num, sizeof(num), "%" PRIu32, pid);
	if (b->len)
		gw_buf_put(b, ",", 1);
	if (pid) {
		gw_buf_set_error(b, gw_labels_append(b, "pid", num));
		gw_buf_put(b, ",", 1);
	}
	gw_buf_set_error(b, gw_labels_append(b, "comm", a->comm));
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
		if (!opt[i].value[0])
			continue;
		gw_buf_put(b, ",", 1);
		gw_buf_set_error(
			b, gw_labels_append(b, opt[i].name, opt[i].value));
	}
	err = gw_buf_error(b);
	if (err)
		gw_buf_truncate(b, start);
	return err;
}
