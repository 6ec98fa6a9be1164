/* SPDX-License-Identifier: MIT */
/*
 * discover.c - the host's CUDA libraries: the loader's cache, built-in and
 * configured patterns, inotify on their folders.  See discover.h.
 */
#include "discover.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect/bpf/ldcache.h"

/*
 * Where CUDA libraries live when the loader's cache does not name them:
 * toolkits (NVIDIA's packages and runfile, Arch's /opt/cuda), the forward
 * compatibility driver, WSL's driver folder, NVIDIA's Python wheels
 * (pip install nvidia-cuda-runtime-cu12 and the like) and conda.
 */
static const char *const builtin[] = {
	"/usr/local/cuda*/lib64/libcudart.so*",
	"/usr/local/cuda*/lib/libcudart.so*",
	"/usr/local/cuda*/targets/*/lib/libcudart.so*",
	"/usr/local/cuda*/compat/libcuda.so*",
	"/opt/cuda*/lib64/libcudart.so*",
	"/opt/cuda*/targets/*/lib/libcudart.so*",
	"/usr/lib/x86_64-linux-gnu/libcuda.so*",
	"/usr/lib/aarch64-linux-gnu/libcuda.so*",
	"/usr/lib64/libcuda.so*",
	"/usr/lib/wsl/lib/libcuda.so*",
	"/usr/local/lib/python3*/dist-packages/nvidia/cuda_runtime/lib/"
	"libcudart.so*",
	"/usr/lib/python3*/site-packages/nvidia/cuda_runtime/lib/"
	"libcudart.so*",
	"/opt/conda/lib/libcudart.so*",
	"/opt/conda/envs/*/lib/libcudart.so*",
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

/* The loader's names handed out, and the filter for their folders. */
static const char *const cache_names[] = { "libcudart.so", "libcuda.so" };
#define CACHE_FILTER "libcuda*.so*"

#define WATCH_MASK                                                             \
	(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW)

/* A folder watched for names matching filter. */
struct watch {
	int wd;
	char filter[NAME_MAX + 1];
};

struct gw_discover {
	char **globs;
	unsigned int nglobs;
	char ldcache[PATH_MAX];
	bool builtin;
	int fd; /* inotify, -1: none */
	struct watch watches[GW_DISCOVER_MAX_WATCHES];
	unsigned int nwatches;
	double retry_at; /* a pass skipped unsettled files: again then */
	struct gw_discover_stats st;

	/* The pass in progress. */
	int (*cb)(void *ctx, const char *path);
	void *ctx;
	unsigned int handed;
	int stop; /* cb's negative value */
};

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define OPT_HAS(o, f)                                                          \
	((o)->sz >= offsetof(struct gw_discover_opts, f) + sizeof((o)->f))

int gw_discover_new(const struct gw_discover_opts *o, struct gw_discover **out)
{
	struct gw_discover *d;
	unsigned int nglobs = 0;
	const char *ldcache = GW_LDCACHE_PATH;
	bool watch = true;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (o) {
		if (o->sz < sizeof(o->sz))
			return -EINVAL;
		for (size_t i = sizeof(*o); i < o->sz; i++)
			if (((const unsigned char *)o)[i])
				return -EINVAL;
		if (OPT_HAS(o, nglobs))
			nglobs = o->nglobs;
		if (nglobs > GW_DISCOVER_MAX_GLOBS || (nglobs && !o->globs))
			return -EINVAL;
		for (unsigned int i = 0; i < nglobs; i++)
			if (!o->globs[i] || o->globs[i][0] != '/' ||
			    strlen(o->globs[i]) >= PATH_MAX)
				return -EINVAL;
		if (OPT_HAS(o, ldcache) && o->ldcache)
			ldcache = o->ldcache;
		if (OPT_HAS(o, no_watch) && o->no_watch)
			watch = false;
	}
	if (strlen(ldcache) >= PATH_MAX)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->fd = -1;
	d->builtin = !(o && OPT_HAS(o, no_builtin) && o->no_builtin);
	snprintf(d->ldcache, sizeof(d->ldcache), "%s", ldcache);
	if (nglobs) {
		d->globs = calloc(nglobs, sizeof(*d->globs));
		if (!d->globs)
			goto err;
		for (unsigned int i = 0; i < nglobs; i++) {
			d->globs[i] = strdup(o->globs[i]);
			if (!d->globs[i])
				goto err;
			d->nglobs++;
		}
	}
	/* Without inotify the caller's periodic passes still find files. */
	if (watch)
		d->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	*out = d;
	return 0;
err:
	gw_discover_free(d);
	return -ENOMEM;
}

void gw_discover_free(struct gw_discover *d)
{
	if (!d)
		return;
	for (unsigned int i = 0; i < d->nglobs; i++)
		free(d->globs[i]);
	free(d->globs);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

int gw_discover_fd(const struct gw_discover *d)
{
	return d ? d->fd : -1;
}

/*
 * Watches dir for names matching filter: one row per folder and filter
 * (inotify gives a folder one wd however often it is added).
 */
static void watch(struct gw_discover *d, const char *dir, const char *filter)
{
	int wd;

	if (d->fd < 0 || strlen(filter) > NAME_MAX)
		return;
	if (d->nwatches == GW_DISCOVER_MAX_WATCHES) {
		d->st.watch_failures++;
		return;
	}
	wd = inotify_add_watch(d->fd, dir, WATCH_MASK);
	if (wd < 0) {
		/* Missing folders are normal; others are counted. */
		if (errno != ENOENT && errno != ENOTDIR)
			d->st.watch_failures++;
		return;
	}
	for (unsigned int i = 0; i < d->nwatches; i++)
		if (d->watches[i].wd == wd &&
		    strcmp(d->watches[i].filter, filter) == 0)
			return;
	d->watches[d->nwatches].wd = wd;
	snprintf(d->watches[d->nwatches].filter,
		 sizeof(d->watches[d->nwatches].filter), "%s", filter);
	d->nwatches++;
}

/* Hands path out when it is a settled regular file. */
static void found(struct gw_discover *d, const char *path)
{
	struct stat st;
	double mtime;

	if (d->stop || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
	if (now_real() - mtime < GW_DISCOVER_SETTLE_S) {
		d->st.unsettled++;
		if (d->retry_at == 0)
			d->retry_at = now_mono() + GW_DISCOVER_SETTLE_S;
		return;
	}
	if (d->handed == GW_DISCOVER_MAX_MATCHES) {
		d->st.dropped++;
		return;
	}
	d->handed++;
	d->st.files++;
	if (d->cb) {
		int r = d->cb(d->ctx, path);

		if (r < 0)
			d->stop = r;
	}
}

static bool has_meta(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == '\\')
			return true;
	return false;
}

/*
 * The folders a pattern's files could appear in: each existing folder its
 * folder part matches (for its last part), and the deepest literal folder
 * above the first wildcard (for the component after it), so that a new
 * toolkit folder is noticed.
 */
static void watch_pattern(struct gw_discover *d, const char *pattern)
{
	char dir[PATH_MAX], next[NAME_MAX + 1];
	const char *slash = strrchr(pattern, '/'), *p, *q;
	size_t n;
	glob_t g;

	if (d->fd < 0 || !slash || slash == pattern)
		return;
	n = (size_t)(slash - pattern);
	if (n >= sizeof(dir))
		return;
	memcpy(dir, pattern, n);
	dir[n] = '\0';
	if (!has_meta(dir, n)) {
		watch(d, dir, slash + 1);
		return;
	}
	if (glob(dir, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			watch(d, g.gl_pathv[i], slash + 1);
	}
	globfree(&g);
	/* The literal prefix: up to the '/' before the first wildcard. */
	for (p = pattern; *p && !has_meta(p, 1); p++)
		;
	while (p > pattern && p[-1] != '/')
		p--;
	if (p <= pattern + 1)
		return;
	q = strchr(p, '/');
	n = q ? (size_t)(q - p) : strlen(p);
	if (n > NAME_MAX || (size_t)(p - 1 - pattern) >= sizeof(dir))
		return;
	memcpy(next, p, n);
	next[n] = '\0';
	memcpy(dir, pattern, (size_t)(p - 1 - pattern));
	dir[p - 1 - pattern] = '\0';
	watch(d, dir, next);
}

static int cache_entry(void *ctx, const char *name, const char *path)
{
	struct gw_discover *d = ctx;
	const char *slash;

	for (size_t i = 0; i < sizeof(cache_names) / sizeof(*cache_names);
	     i++) {
		size_t n = strlen(cache_names[i]);

		if (strncmp(name, cache_names[i], n) != 0 ||
		    (name[n] != '\0' && name[n] != '.'))
			continue;
		found(d, path);
		slash = strrchr(path, '/');
		if (slash && slash > path &&
		    (size_t)(slash - path) < PATH_MAX) {
			char dir[PATH_MAX];

			memcpy(dir, path, (size_t)(slash - path));
			dir[slash - path] = '\0';
			watch(d, dir, CACHE_FILTER);
		}
		break;
	}
	return d->stop;
}

/* The loader's cache, read whole (bounded), parsed by ldcache.c. */
static void read_cache(struct gw_discover *d)
{
	unsigned int bad = 0;
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, r;

	if (!d->ldcache[0])
		return;
	{
		/* ldconfig writes ld.so.cache~ and renames it over. */
		char dir[PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", d->ldcache);
		slash = strrchr(dir, '/');
		if (slash && slash > dir) {
			*slash = '\0';
			watch(d, dir, slash + 1);
		}
	}
	fd = open(d->ldcache, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			d->st.ldcache_bad++;
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > GW_LDCACHE_MAX_LEN)
		goto bad;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		goto bad;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	r = gw_ldcache_parse(buf, got, cache_entry, d, &bad);
	if (r == -ENOEXEC || bad)
		d->st.ldcache_bad++;
	free(buf);
	close(fd);
	return;
bad:
	d->st.ldcache_bad++;
	free(buf);
	close(fd);
}

static void run_pattern(struct gw_discover *d, const char *pattern)
{
	glob_t g;

	watch_pattern(d, pattern);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc && !d->stop; i++)
			found(d, g.gl_pathv[i]);
	globfree(&g);
}

int gw_discover_run(struct gw_discover *d,
		    int (*cb)(void *ctx, const char *path), void *ctx)
{
	if (!d)
		return -EINVAL;
	d->cb = cb;
	d->ctx = ctx;
	d->handed = 0;
	d->stop = 0;
	d->retry_at = 0;
	/* The table is rebuilt by every pass; inotify keeps the wds. */
	d->nwatches = 0;
	d->st.passes++;
	read_cache(d);
	for (size_t i = 0; d->builtin && i < NBUILTIN && !d->stop; i++)
		run_pattern(d, builtin[i]);
	for (unsigned int i = 0; i < d->nglobs && !d->stop; i++)
		run_pattern(d, d->globs[i]);
	d->cb = NULL;
	d->ctx = NULL;
	return d->stop ? d->stop : (int)d->handed;
}

int gw_discover_changed(struct gw_discover *d)
{
	union {
		struct inotify_event e;
		char b[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)];
	} u;
	int changed = 0;

	if (!d)
		return 0;
	if (d->retry_at && now_mono() >= d->retry_at) {
		d->retry_at = 0;
		changed = 1;
	}
	if (d->fd < 0)
		return changed;
	for (;;) {
		ssize_t n = read(d->fd, u.b, sizeof(u.b));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t off = 0;
		     off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *e =
				(const void *)(u.b + off);

			off += (ssize_t)sizeof(*e) + e->len;
			if (e->mask & IN_Q_OVERFLOW) {
				changed = 1;
				continue;
			}
			if (!e->len)
				continue;
			for (unsigned int i = 0; i < d->nwatches; i++)
				if (d->watches[i].wd == e->wd &&
				    fnmatch(d->watches[i].filter, e->name, 0) ==
					    0)
					changed = 1;
		}
	}
	return changed;
}

void gw_discover_stats(const struct gw_discover *d,
		       struct gw_discover_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!d)
		return;
	*st = d->st;
	st->watches = d->nwatches;
}
