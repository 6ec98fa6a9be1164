// SPDX-License-Identifier: MIT
/*
 * test_discover.c - finding CUDA libraries before any process maps them:
 * the loader's cache (glibc's 1.1 format, alone or after the old table;
 * malformed ones refused), the machine's own /etc/ld.so.cache, patterns
 * in a scratch folder, files still being written, and the watches that
 * notice a new folder or a library renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/bpf/discover.h"
#include "collect/bpf/ldcache.h"

/* ---- a cache built by hand ---- */

struct cache {
	unsigned char b[4096];
	size_t len;
};

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/*
 * A 1.1 cache at offset base of c (after an old table of nold entries
 * when nold > 0) listing n (name, path) pairs.
 */
static void build(struct cache *c, unsigned int nold, const char *const *kv,
		  unsigned int n)
{
	size_t base = 0, str;

	memset(c, 0, sizeof(*c));
	if (nold) {
		memcpy(c->b, "ld.so-1.7.0", 11);
		put32(c->b + 12, nold);
		base = (16 + nold * 12 + 7) & ~(size_t)7;
	}
	memcpy(c->b + base, "glibc-ld.so.cache1.1", 20);
	put32(c->b + base + 20, n);
	str = 48 + n * 24;
	for (unsigned int i = 0; i < 2 * n; i++) {
		size_t len = strlen(kv[i]) + 1;

		put32(c->b + base + 48 + (i / 2) * 24 + 4 + (i % 2) * 4,
		      (uint32_t)str);
		memcpy(c->b + base + str, kv[i], len);
		str += len;
	}
	put32(c->b + base + 24, (uint32_t)(str - 48 - n * 24));
	c->len = base + str;
}

struct seen {
	char names[16][64];
	char paths[16][PATH_MAX];
	unsigned int n;
};

static int collect(void *ctx, const char *name, const char *path)
{
	struct seen *s = ctx;

	if (s->n < 16) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
		snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", path);
	}
	s->n++;
	return 0;
}

static const char *const kv[] = {
	"libcudart.so.13", "/usr/local/cuda-13.0/lib/libcudart.so.13",
	"libc.so.6",	   "/lib/x86_64-linux-gnu/libc.so.6",
	"libcuda.so.1",	   "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
};

static void cache_formats(void **state)
{
	struct cache c;
	struct seen s;
	unsigned int bad = 0;

	(void)state;
	for (unsigned int nold = 0; nold <= 3; nold += 3) {
		build(&c, nold, kv, 3);
		memset(&s, 0, sizeof(s));
		assert_int_equal(
			gw_ldcache_parse(c.b, c.len, collect, &s, &bad), 3);
		assert_int_equal(bad, 0);
		assert_string_equal(s.names[0], "libcudart.so.13");
		assert_string_equal(s.paths[0],
				    "/usr/local/cuda-13.0/lib/libcudart.so.13");
		assert_string_equal(s.paths[2],
				    "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
	}
}

static void cache_malformed(void **state)
{
	struct cache c;
	struct seen s;
	unsigned int bad = 0;

	(void)state;
	build(&c, 0, kv, 3);
	/* Cut inside the last path: that entry alone is bad. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(gw_ldcache_parse(c.b, c.len - 3, collect, &s, &bad),
			 2);
	assert_int_equal(bad, 1);
	/* An offset past the end. */
	put32(c.b + 48 + 4, 100000);
	bad = 0;
	assert_int_equal(gw_ldcache_parse(c.b, c.len, collect, &s, &bad), 2);
	assert_int_equal(bad, 1);
	/* More entries than the file holds, a bad magic, an old table alone,
	 * an old table longer than the file, too short. */
	build(&c, 0, kv, 3);
	put32(c.b + 20, 1000);
	assert_int_equal(gw_ldcache_parse(c.b, c.len, collect, &s, NULL),
			 -ENOEXEC);
	build(&c, 0, kv, 3);
	c.b[0] = 'G';
	assert_int_equal(gw_ldcache_parse(c.b, c.len, collect, &s, NULL),
			 -ENOEXEC);
	build(&c, 2, kv, 3);
	assert_int_equal(gw_ldcache_parse(c.b, 40, collect, &s, NULL),
			 -ENOEXEC);
	put32(c.b + 12, 0x7fffffff);
	assert_int_equal(gw_ldcache_parse(c.b, c.len, collect, &s, NULL),
			 -ENOEXEC);
	assert_int_equal(gw_ldcache_parse(c.b, 10, collect, &s, NULL),
			 -ENOEXEC);
	assert_int_equal(gw_ldcache_parse(NULL, 0, collect, &s, NULL), -EINVAL);
}

/* The machine's own cache names libc, wherever it is. */
static void cache_of_this_machine(void **state)
{
	FILE *f = fopen(GW_LDCACHE_PATH, "rb");
	static unsigned char buf[8u << 20];
	struct seen s;
	size_t len;
	int n, libc = 0;

	(void)state;
	if (!f) {
		skip();
		return;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	memset(&s, 0, sizeof(s));
	n = gw_ldcache_parse(buf, len, collect, &s, NULL);
	if (n == -ENOEXEC) {
		skip(); /* an old-format cache */
		return;
	}
	assert_true(n > 0);
	for (unsigned int i = 0; i < s.n && i < 16; i++)
		libc |= strncmp(s.names[i], "libc.so", 7) == 0;
	/* Only the first 16 are kept: look for libc among them all. */
	if (!libc)
		libc = memmem(buf, len, "libc.so.6", 10) != NULL;
	assert_true(libc);
}

/* ---- discovery in a scratch folder ---- */

static char tmp[256];

static int setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "%s/gw-discover.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd) == 0 ? 0 : -1;
}

/* Sets the modification time of tmp/rel to now + delta seconds. */
static void set_mtime(const char *rel, int delta)
{
	struct timespec t[2];
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec += delta;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/*
 * Writes a file at tmp/rel; old: modified a minute ago (settled), else an
 * hour from now (still being written, however slow the test runs).
 */
static void make_file(const char *rel, int old)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\177ELF", 4), 4);
	close(fd);
	set_mtime(rel, old ? -60 : 3600);
}

static void make_dir(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

struct paths {
	char v[8][PATH_MAX];
	unsigned int n;
};

static int add_path(void *ctx, const char *path)
{
	struct paths *p = ctx;

	if (p->n < 8)
		snprintf(p->v[p->n], sizeof(p->v[0]), "%s", path);
	p->n++;
	return 0;
}

static int has(const struct paths *p, const char *rel)
{
	char want[PATH_MAX];

	snprintf(want, sizeof(want), "%s/%s", tmp, rel);
	for (unsigned int i = 0; i < p->n && i < 8; i++)
		if (strcmp(p->v[i], want) == 0)
			return 1;
	return 0;
}

/* Polls gw_discover_changed() for up to 5 s. */
static int changed_within(struct gw_discover *d)
{
	for (int i = 0; i < 500; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (gw_discover_changed(d))
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void patterns_and_watches(void **state)
{
	char pattern[PATH_MAX], cache[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
	const char *globs[1] = { pattern };
	struct gw_discover_opts o = { .sz = sizeof(o),
				      .globs = globs,
				      .nglobs = 1,
				      .ldcache = cache,
				      .no_builtin = 1 };
	struct gw_discover_stats st;
	struct gw_discover *d;
	struct paths p;
	struct cache c;
	const char *const ckv[] = { "libcuda.so.1", to, "libm.so.6", from };
	FILE *f;

	(void)state;
	snprintf(pattern, sizeof(pattern), "%s/cuda*/lib/libcudart.so*", tmp);
	snprintf(cache, sizeof(cache), "%s/etc/ld.so.cache", tmp);
	make_dir("etc");
	make_dir("cuda-1");
	make_dir("cuda-1/lib");
	make_file("cuda-1/lib/libcudart.so.13", 1);
	make_file("cuda-1/lib/libcudart.so.12", 0); /* being written */
	make_file("cuda-1/lib/libcublas.so.13", 1);
	assert_int_equal(gw_discover_new(&o, &d), 0);
	assert_true(gw_discover_fd(d) >= 0);

	memset(&p, 0, sizeof(p));
	assert_int_equal(gw_discover_run(d, add_path, &p), 1);
	assert_true(has(&p, "cuda-1/lib/libcudart.so.13"));
	gw_discover_stats(d, &st);
	assert_int_equal(st.unsettled, 1);
	assert_int_equal(st.ldcache_bad, 0); /* no cache: not an error */
	assert_false(gw_discover_changed(d));

	/* A new toolkit folder is noticed in the folder above. */
	make_dir("cuda-2");
	assert_true(changed_within(d));
	make_dir("cuda-2/lib");
	memset(&p, 0, sizeof(p));
	assert_int_equal(gw_discover_run(d, add_path, &p), 1);
	/* A library renamed into place, as package managers install. */
	make_file("cuda-2/lib/.tmp", 1);
	snprintf(from, sizeof(from), "%s/cuda-2/lib/.tmp", tmp);
	snprintf(to, sizeof(to), "%s/cuda-2/lib/libcudart.so.13", tmp);
	assert_false(gw_discover_changed(d)); /* .tmp does not match */
	assert_int_equal(rename(from, to), 0);
	assert_true(changed_within(d));
	memset(&p, 0, sizeof(p));
	assert_int_equal(gw_discover_run(d, add_path, &p), 2);
	assert_true(has(&p, "cuda-2/lib/libcudart.so.13"));

	/* ldconfig writes a new cache naming a driver elsewhere. */
	make_dir("drv");
	snprintf(to, sizeof(to), "%s/drv/libcuda.so.1", tmp);
	snprintf(from, sizeof(from), "%s/drv/libm.so.6", tmp);
	make_file("drv/libcuda.so.1", 1);
	make_file("drv/libm.so.6", 1);
	build(&c, 0, ckv, 2);
	f = fopen(cache, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(c.b, 1, c.len, f), c.len);
	fclose(f);
	assert_true(changed_within(d));
	memset(&p, 0, sizeof(p));
	assert_int_equal(gw_discover_run(d, add_path, &p), 3);
	assert_true(has(&p, "drv/libcuda.so.1"));
	assert_false(has(&p, "drv/libm.so.6"));

	/* The file being written, once settled, at the retry that the pass
	 * which skipped it asked for. */
	gw_discover_stats(d, &st);
	assert_int_equal(st.unsettled, 4);
	set_mtime("cuda-1/lib/libcudart.so.12", -60);
	assert_true(changed_within(d));
	memset(&p, 0, sizeof(p));
	assert_int_equal(gw_discover_run(d, add_path, &p), 4);
	assert_true(has(&p, "cuda-1/lib/libcudart.so.12"));
	gw_discover_stats(d, &st);
	assert_int_equal(st.unsettled, 4);
	assert_int_equal(st.passes, 5);
	assert_int_equal(st.ldcache_bad, 0);
	gw_discover_free(d);
}

static void bad_options(void **state)
{
	const char *rel[1] = { "cuda/*/libcudart.so*" };
	struct gw_discover_opts o = { .sz = sizeof(o),
				      .globs = rel,
				      .nglobs = 1 };
	struct gw_discover *d = (void *)1;

	(void)state;
	assert_int_equal(gw_discover_new(&o, &d), -EINVAL);
	assert_null(d);
	o.nglobs = GW_DISCOVER_MAX_GLOBS + 1;
	assert_int_equal(gw_discover_new(&o, &d), -EINVAL);
	o.nglobs = 0;
	o.no_watch = 1;
	assert_int_equal(gw_discover_new(&o, &d), 0);
	assert_int_equal(gw_discover_fd(d), -1);
	gw_discover_free(d);
	gw_discover_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cache_formats),
		cmocka_unit_test(cache_malformed),
		cmocka_unit_test(cache_of_this_machine),
		cmocka_unit_test_setup_teardown(patterns_and_watches, setup,
						teardown),
		cmocka_unit_test(bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
