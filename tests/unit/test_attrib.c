// SPDX-License-Identifier: MIT
/*
 * test_attrib.c - process attribution: the cgroup parser on the files each
 * container runtime writes, and the pid cache on a fake /proc tree (hits,
 * expiry, eviction order and bound, exited processes, job variables,
 * labels), plus one lookup of this test's own process in the real /proc.
 *
 * The fixtures live in tests/unit/attrib-fixtures/; ATTRIB_FIXTURES names
 * that directory (the build passes an absolute path; the default works
 * from the repository root).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/attrib.h"
#include "pipeline/metrics.h"

#ifndef ATTRIB_FIXTURES
#define ATTRIB_FIXTURES "tests/unit/attrib-fixtures"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p;
	long n;

	if (!f)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	p = malloc((size_t)n + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
	p[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return p;
}

static char *fixture(const char *name, size_t *len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", ATTRIB_FIXTURES, name);
	return slurp(path, len);
}

static bool all_lhex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

static void assert_valid_ids(const char *cid, const char *pod)
{
	size_t n = strlen(cid);

	assert_true(n == 0 || (n >= 12 && n <= 64));
	assert_true(all_lhex(cid));
	if (!pod[0])
		return;
	assert_int_equal(strlen(pod), 36);
	for (size_t i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(pod[i], '-');
		else
			assert_true(strchr("0123456789abcdef", pod[i]) &&
				    pod[i]);
	}
}

/* The id as the text holds it: dashes, or underscores (systemd). */
static bool pod_in_text(const char *text, size_t len, const char *pod)
{
	char us[64];

	if (memmem(text, len, pod, strlen(pod)))
		return true;
	snprintf(us, sizeof(us), "%s", pod);
	for (char *p = us; *p; p++)
		if (*p == '-')
			*p = '_';
	return memmem(text, len, us, strlen(us)) != NULL;
}

static int parse(const char *text, char *cid, char *pod)
{
	return gw_attrib_parse_cgroup(text, strlen(text), cid, 80, pod, 48);
}

/* ---- the cgroup parser ---- */

static const struct {
	const char *file, *cid, *pod;
} fixtures[] = {
	{ "k8s-cgroupfs-v1-burstable.cgroup",
	  "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
	  "7a3b1f6e-2c1d-4e8f-9a0b-1c2d3e4f5a6b" },
	{ "k8s-cgroupfs-v1-guaranteed.cgroup",
	  "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d",
	  "0d9c8e57-41f2-4c61-b2e3-5f0a9d8c7b61" },
	{ "k8s-cgroupfs-v2-besteffort.cgroup",
	  "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6",
	  "e4b1c2d3-a5f6-47b8-8c9d-0e1f2a3b4c5d" },
	{ "k8s-systemd-v2-containerd.cgroup",
	  "18ac3e7343f016890c510e93f935261169d9e3f565436429830faf0934f4f8e4",
	  "7a3b1f6e-2c1d-4e8f-9a0b-1c2d3e4f5a6b" },
	{ "k8s-systemd-v1-crio.cgroup",
	  "3f79bb7b435b05321651daefd374cdc681dc06faa65e374e38337b88ca046dea",
	  "3f2e1d0c-9b8a-4766-a554-433221100ffe" },
	{ "k8s-systemd-v2-cri-dockerd.cgroup",
	  "252f10c83610ebca1a059c0bae8255eba2f95be4d1d7bcfa89d7248a82d9f111",
	  "a1b2c3d4-e5f6-4789-8abc-def012345678" },
	{ "k8s-systemd-v2-cri-o.cgroup",
	  "cd0aa9856147b6c5b4ff2b7dfee5da20aa38253099ef1b4a64aced233c9afe29",
	  "5c0ffee0-1234-4abc-9def-00112233aabb" },
	/* Seen from inside a cgroup namespace: the path climbs with "..". */
	{ "k8s-systemd-v2-cgroupns.cgroup",
	  "aaa9402664f1a41f40ebbc52c9993eb66aeb366602958fdfaa283b71e64db123",
	  "e4b1c2d3-a5f6-47b8-8c9d-0e1f2a3b4c5d" },
	/* CRI-O's conmon runs in the pod but in no container. */
	{ "k8s-systemd-v2-conmon.cgroup", "",
	  "0d9c8e57-41f2-4c61-b2e3-5f0a9d8c7b61" },
	{ "k8s-v1-most-specific.cgroup",
	  "189f40034be7a199f1fa9891668ee3ab6049f82d38c68be70f596eab2e1857b7",
	  "a1b2c3d4-e5f6-4789-8abc-def012345678" },
	/* kind: the node is a Docker container; the pod's container wins. */
	{ "kind-nested-v1.cgroup",
	  "acac86c0e609ca906f632b0e2dacccb2b77d22b0621f20ebece1a4835b93f6f0",
	  "5c0ffee0-1234-4abc-9def-00112233aabb" },
	{ "docker-cgroupfs-v1.cgroup",
	  "62c66a7a5dd70c3146618063c344e531e6d4b59e379808443ce962b3abd63c5a",
	  "" },
	{ "docker-systemd-v2.cgroup",
	  "1b16b1df538ba12dc3f97edbb85caa7050d46c148134290feba80f8236c83db9",
	  "" },
	{ "podman-rootful-v2.cgroup",
	  "65c74c15a686187bb6bbf9958f494fc6b80068034a659a9ad44991b08c58f2d2",
	  "" },
	{ "podman-rootless-v2.cgroup",
	  "148de9c5a7a44d19e56cd9ae1a554bf67847afb0c58f6e12fa29ac7ddfca9940",
	  "" },
	{ "docker-short-id.cgroup", "4f1c2b3a9d8e", "" },
	{ "host-systemd-v1.cgroup", "", "" },
	{ "host-v2-session.cgroup", "", "" },
	{ "host-root-v2.cgroup", "", "" },
	{ "garbage.cgroup", "", "" },
};

static void parse_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
		char cid[80], pod[48];
		size_t len;
		char *text = fixture(fixtures[i].file, &len);

		memset(cid, 'X', sizeof(cid));
		memset(pod, 'X', sizeof(pod));
		assert_int_equal(gw_attrib_parse_cgroup(text, len, cid,
							sizeof(cid), pod,
							sizeof(pod)),
				 0);
		if (strcmp(cid, fixtures[i].cid) ||
		    strcmp(pod, fixtures[i].pod))
			fail_msg("%s: got cid '%s' pod '%s', want '%s' '%s'",
				 fixtures[i].file, cid, pod, fixtures[i].cid,
				 fixtures[i].pod);
		free(text);
	}
}

#define ID64   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID64B  "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UID    "7a3b1f6e-2c1d-4e8f-9a0b-1c2d3e4f5a6b"
#define UID_US "7a3b1f6e_2c1d_4e8f_9a0b_1c2d3e4f5a6b"

static void parse_most_specific_line_wins(void **state)
{
	char cid[80], pod[48];

	(void)state;
	/* A container and pod beat a container alone, whichever comes first. */
	assert_int_equal(parse("1:name=systemd:/docker/" ID64B "\n"
			       "0::/kubepods/pod" UID "/" ID64 "\n",
			       cid, pod),
			 0);
	assert_string_equal(cid, ID64);
	assert_string_equal(pod, UID);
	assert_int_equal(parse("0::/kubepods/pod" UID "/" ID64 "\n"
			       "1:name=systemd:/docker/" ID64B "\n",
			       cid, pod),
			 0);
	assert_string_equal(cid, ID64);
	/* A container beats a pod alone. */
	assert_int_equal(parse("3:cpu:/kubepods/pod" UID "\n"
			       "2:memory:/docker/" ID64B "\n",
			       cid, pod),
			 0);
	assert_string_equal(cid, ID64B);
	assert_string_equal(pod, "");
	/* On a tie the first line. */
	assert_int_equal(parse("3:cpu:/docker/" ID64B "\n"
			       "2:memory:/docker/" ID64 "\n",
			       cid, pod),
			 0);
	assert_string_equal(cid, ID64B);
	/* The last line needs no newline; "//" is one separator. */
	assert_int_equal(parse("0::/kubepods.slice//kubepods-pod" UID_US
			       ".slice/cri-containerd-" ID64 ".scope",
			       cid, pod),
			 0);
	assert_string_equal(cid, ID64);
	assert_string_equal(pod, UID);
}

static void parse_runtime_variants(void **state)
{
	static const char *const scopes[] = {
		"cri-containerd-", "docker-", "crio-", "cri-o-", "libpod-",
	};
	char text[512], cid[80], pod[48];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(scopes); i++) {
		/* Under a systemd pod slice, with and without ".scope". */
		snprintf(text, sizeof(text),
			 "0::/kubepods.slice/kubepods-besteffort.slice/"
			 "kubepods-besteffort-pod" UID_US ".slice/%s" ID64
			 ".scope\n",
			 scopes[i]);
		assert_int_equal(parse(text, cid, pod), 0);
		assert_string_equal(cid, ID64);
		assert_string_equal(pod, UID);
		snprintf(text, sizeof(text),
			 "0::/kubepods/besteffort/pod" UID "/%s" ID64 "\n",
			 scopes[i]);
		assert_int_equal(parse(text, cid, pod), 0);
		assert_string_equal(cid, ID64);
		assert_string_equal(pod, UID);
	}
	/* 12 hex digits is the shortest id, 64 the longest. */
	assert_int_equal(
		parse("0::/system.slice/docker-0123456789ab.scope\n", cid, pod),
		0);
	assert_string_equal(cid, "0123456789ab");
	assert_int_equal(
		parse("0::/system.slice/docker-0123456789a.scope\n", cid, pod),
		0);
	assert_string_equal(cid, "");
	assert_int_equal(parse("0::/docker/" ID64 "0\n", cid, pod), 0);
	assert_string_equal(cid, "");
	/* A container above the pod (kind's node) is not the pod's. */
	assert_int_equal(parse("0::/docker/" ID64B
			       "/kubepods/besteffort/pod" UID "\n",
			       cid, pod),
			 0);
	assert_string_equal(cid, "");
	assert_string_equal(pod, UID);
	/* Each driver writes the uid one way: dashes or underscores. */
	assert_int_equal(parse("0::/kubepods.slice/kubepods-pod" UID ".slice\n"
			       "0::/kubepods/pod" UID_US "\n"
			       "0::/kubepods/pod7a3b1f6e-2c1d_4e8f-9a0b-"
			       "1c2d3e4f5a6b\n",
			       cid, pod),
			 0);
	assert_string_equal(pod, "");
	/* A pod directory counts only below kubepods. */
	assert_int_equal(parse("0::/pod" UID "/" ID64 "\n", cid, pod), 0);
	assert_string_equal(pod, "");
	assert_string_equal(cid, "");
}

static void parse_bad_arguments(void **state)
{
	char cid[80], pod[48];

	(void)state;
	/* Too small for a whole id: refused, and still terminated. */
	memset(cid, 'X', sizeof(cid));
	memset(pod, 'X', sizeof(pod));
	assert_int_equal(gw_attrib_parse_cgroup("0::/docker/" ID64, 75, cid, 64,
						pod, sizeof(pod)),
			 -EINVAL);
	assert_int_equal(cid[0], '\0');
	assert_int_equal(pod[0], '\0');
	assert_int_equal(
		gw_attrib_parse_cgroup("0::/", 4, cid, sizeof(cid), pod, 36),
		-EINVAL);
	assert_int_equal(
		gw_attrib_parse_cgroup("0::/", 4, NULL, 80, pod, sizeof(pod)),
		-EINVAL);
	assert_int_equal(gw_attrib_parse_cgroup(NULL, 4, cid, sizeof(cid), pod,
						sizeof(pod)),
			 -EINVAL);
	/* Exactly big enough is enough; an empty text is no match. */
	assert_int_equal(gw_attrib_parse_cgroup("0::/docker/" ID64, 75, cid, 65,
						pod, 37),
			 0);
	assert_string_equal(cid, ID64);
	assert_int_equal(gw_attrib_parse_cgroup(NULL, 0, cid, 65, pod, 37), 0);
	assert_string_equal(cid, "");
}

/*
 * Every prefix of every fixture (a read cut short): never more than the
 * text holds, and only well-formed ids.  The length passed is exact; the
 * copy has no NUL after it, so ASan sees any read past the end.
 */
static void parse_truncated(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
		size_t len;
		char *text = fixture(fixtures[i].file, &len);

		for (size_t k = 0; k <= len; k++) {
			char *cut = malloc(k ? k : 1);
			char cid[80], pod[48];

			assert_non_null(cut);
			memcpy(cut, text, k);
			assert_int_equal(
				gw_attrib_parse_cgroup(cut, k, cid, sizeof(cid),
						       pod, sizeof(pod)),
				0);
			assert_valid_ids(cid, pod);
			assert_true(!cid[0] ||
				    memmem(cut, k, cid, strlen(cid)));
			assert_true(!pod[0] || pod_in_text(cut, k, pod));
			free(cut);
		}
		free(text);
	}
}

static void parse_random_bytes(void **state)
{
	static const char alphabet[] =
		"0123456789abcdef-_/:.\nkubepodslicecrio";
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int round = 0; round < 3000; round++) {
		char text[300], cid[80], pod[48];
		size_t len;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = x % sizeof(text);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* Mostly cgroup-ish characters, some raw bytes. */
			text[i] = (x >> 8) % 4
					  ? alphabet[(x >> 16) %
						     (sizeof(alphabet) - 1)]
					  : (char)(x >> 24);
		}
		assert_int_equal(gw_attrib_parse_cgroup(text, len, cid,
							sizeof(cid), pod,
							sizeof(pod)),
				 0);
		assert_valid_ids(cid, pod);
		assert_true(!cid[0] || memmem(text, len, cid, strlen(cid)));
		assert_true(!pod[0] || pod_in_text(text, len, pod));
	}
}

/* ---- a fake /proc ---- */

struct fake {
	char root[GW_ATTRIB_PROC_ROOT_MAX + 1]; /* what the cache accepts */
};

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void fake_init(struct fake *f)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	assert_true(snprintf(f->root, sizeof(f->root), "%s/gw-attrib-XXXXXX",
			     dir) < (int)sizeof(f->root));
	assert_non_null(mkdtemp(f->root));
}

static void fake_release(struct fake *f)
{
	assert_int_equal(nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void fake_put(struct fake *f, uint32_t pid, const char *name,
		     const void *data, size_t len)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%" PRIu32, f->root, pid);
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/%s", f->root, pid, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

static void fake_puts(struct fake *f, uint32_t pid, const char *name,
		      const char *s)
{
	fake_put(f, pid, name, s, strlen(s));
}

/* A process with a comm, a host cgroup and an empty environment. */
static void fake_proc(struct fake *f, uint32_t pid, const char *comm)
{
	char line[80];

	snprintf(line, sizeof(line), "%s\n", comm);
	fake_puts(f, pid, "comm", line);
	fake_puts(f, pid, "cgroup", "0::/user.slice/session-1.scope\n");
	fake_put(f, pid, "environ", "", 0);
}

static void fake_exit(struct fake *f, uint32_t pid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%" PRIu32, f->root, pid);
	assert_int_equal(nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static struct gw_attrib_cache *cache_on(struct fake *f, unsigned int max,
					double ttl)
{
	struct gw_attrib_opts o = {
		.sz = sizeof(o),
		.proc_root = f->root,
		.max_pids = max,
		.ttl_s = ttl,
	};
	struct gw_attrib_cache *c = NULL;

	assert_int_equal(gw_attrib_cache_new(&o, &c), 0);
	assert_non_null(c);
	return c;
}

static struct gw_attrib_stats stats_of(struct gw_attrib_cache *c)
{
	struct gw_attrib_stats st;

	gw_attrib_stats(c, &st);
	return st;
}

static void expect_comm(struct gw_attrib_cache *c, uint32_t pid, double now,
			const char *comm)
{
	struct gw_attrib a;
	int r = gw_attrib_get(c, pid, now, &a);

	if (r)
		fail_msg("pid %" PRIu32 " at %g: %d", pid, now, r);
	assert_string_equal(a.comm, comm);
}

/* ---- the cache ---- */

static void cache_reads_all_fields(void **state)
{
	static const char env[] = "PATH=/usr/bin\0HOME=/root\0"
				  "SLURM_JOB_ID=4242\0LANG=C";
	struct fake f;
	struct gw_attrib_cache *c;
	struct gw_attrib a;
	struct gw_attrib_stats st;
	size_t len;
	char *cg = fixture("k8s-systemd-v2-containerd.cgroup", &len);

	(void)state;
	fake_init(&f);
	fake_puts(&f, 4100, "comm", "python3\n");
	fake_put(&f, 4100, "cgroup", cg, len);
	fake_put(&f, 4100, "environ", env, sizeof(env));
	c = cache_on(&f, 0, 0);
	assert_int_equal(gw_attrib_get(c, 4100, 100, &a), 0);
	assert_string_equal(a.comm, "python3");
	assert_string_equal(a.container_id, fixtures[3].cid);
	assert_string_equal(a.pod_uid, fixtures[3].pod);
	assert_string_equal(a.job, "4242");
	st = stats_of(c);
	assert_int_equal(st.lookups, 1);
	assert_int_equal(st.misses, 1);

	/* A hit does not read the files again. */
	fake_puts(&f, 4100, "comm", "changed\n");
	fake_puts(&f, 4100, "environ", "SLURM_JOB_ID=1");
	assert_int_equal(gw_attrib_get(c, 4100, 101, &a), 0);
	assert_string_equal(a.comm, "python3");
	assert_string_equal(a.job, "4242");
	st = stats_of(c);
	assert_int_equal(st.lookups, 2);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.refused, 0);

	gw_attrib_cache_free(c);
	fake_release(&f);
	free(cg);
}

/*
 * cgroup is read up to GW_ATTRIB_CGROUP_MAX bytes; a line cut by that bound
 * is dropped, so a half id never comes out as a shorter one.
 */
static void cache_cgroup_bound(void **state)
{
	static const char first[] = "1:name=systemd:/kubepods/pod" UID "\n";
	static const char last[] = "0::/docker/" ID64 "\n";
	const size_t n = GW_ATTRIB_CGROUP_MAX + 100;
	const size_t at = GW_ATTRIB_CGROUP_MAX - 20 - 11; /* 20 hex fit */
	struct fake f;
	struct gw_attrib_cache *c;
	struct gw_attrib a;
	char *cg = malloc(n);

	(void)state;
	assert_non_null(cg);
	memset(cg, 'x', n);
	memcpy(cg, first, sizeof(first) - 1);
	memcpy(cg + sizeof(first) - 1, "5:memory:/", 10);
	cg[at - 1] = '\n';
	memcpy(cg + at, last, sizeof(last) - 1);
	cg[n - 1] = '\n';
	fake_init(&f);
	fake_proc(&f, 3, "x");
	fake_put(&f, 3, "cgroup", cg, n);
	c = cache_on(&f, 0, 0);
	assert_int_equal(gw_attrib_get(c, 3, 0, &a), 0);
	assert_string_equal(a.container_id, "");
	assert_string_equal(a.pod_uid, UID);
	gw_attrib_cache_free(c);
	fake_release(&f);
	free(cg);
}

static void cache_ttl_refresh(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;

	(void)state;
	fake_init(&f);
	fake_proc(&f, 7, "before");
	c = cache_on(&f, 0, 5);
	expect_comm(c, 7, 0, "before");
	fake_proc(&f, 7, "after");
	expect_comm(c, 7, 4.9, "before");
	expect_comm(c, 7, 5, "after");
	expect_comm(c, 7, 9.9, "after");
	assert_int_equal(stats_of(c).misses, 2);
	/* The default ttl is 30 s. */
	gw_attrib_cache_free(c);
	c = cache_on(&f, 0, 0);
	expect_comm(c, 7, 0, "after");
	fake_proc(&f, 7, "later");
	expect_comm(c, 7, 29.9, "after");
	expect_comm(c, 7, 30, "later");
	gw_attrib_cache_free(c);
	fake_release(&f);
}

static void cache_gone_process(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;
	struct gw_attrib a;

	(void)state;
	fake_init(&f);
	c = cache_on(&f, 0, 10);

	/* Only comm is needed; cgroup and environ are optional. */
	fake_puts(&f, 808, "comm", "kthreadd\n");
	assert_int_equal(gw_attrib_get(c, 808, 0, &a), 0);
	assert_string_equal(a.comm, "kthreadd");
	assert_string_equal(a.container_id, "");
	assert_string_equal(a.job, "");
	fake_puts(&f, 809, "cgroup", "0::/docker/" ID64 "\n");
	assert_int_equal(gw_attrib_get(c, 809, 0, &a), -ENOENT);

	/* Never seen: -ENOENT, and the answer is not cached. */
	memset(&a, 'Z', sizeof(a));
	assert_int_equal(gw_attrib_get(c, 31337, 0, &a), -ENOENT);
	assert_int_equal(a.comm[0], 'Z');
	fake_proc(&f, 31337, "late");
	expect_comm(c, 31337, 0.5, "late");

	/* Seen, then exited: its labels stay, within ttl and after. */
	fake_proc(&f, 55, "trainer");
	expect_comm(c, 55, 1, "trainer");
	fake_exit(&f, 55);
	expect_comm(c, 55, 5, "trainer");
	expect_comm(c, 55, 20, "trainer");
	assert_int_equal(stats_of(c).misses, 6);
	/* ...until forgotten. */
	gw_attrib_forget(c, 55);
	assert_int_equal(gw_attrib_get(c, 55, 21, &a), -ENOENT);
	gw_attrib_forget(c, 55);  /* twice is harmless */
	gw_attrib_forget(c, 999); /* never seen */
	expect_comm(c, 31337, 21, "late");

	gw_attrib_cache_free(c);
	fake_release(&f);
}

static void cache_evicts_least_recently_used(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;

	(void)state;
	fake_init(&f);
	for (uint32_t pid = 1; pid <= 4; pid++)
		fake_proc(&f, pid, "old");
	c = cache_on(&f, 3, 1000);
	expect_comm(c, 1, 1, "old");
	expect_comm(c, 2, 2, "old");
	expect_comm(c, 3, 3, "old");
	expect_comm(c, 1, 4, "old"); /* 2 is now the least recently used */
	expect_comm(c, 4, 5, "old");
	assert_int_equal(stats_of(c).evictions, 1);

	for (uint32_t pid = 1; pid <= 4; pid++)
		fake_proc(&f, pid, "new");
	expect_comm(c, 1, 6, "old"); /* still cached */
	expect_comm(c, 4, 6, "old");
	expect_comm(c, 2, 7, "new"); /* was evicted; 3 goes now */
	expect_comm(c, 3, 8, "new"); /* and 1 for it */
	assert_int_equal(stats_of(c).evictions, 3);
	expect_comm(c, 4, 9, "old");
	gw_attrib_cache_free(c);
	fake_release(&f);
}

static void cache_never_exceeds_bound(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;
	struct gw_attrib_stats st;
	char comm[16];

	(void)state;
	fake_init(&f);
	for (uint32_t pid = 100; pid < 200; pid++) {
		snprintf(comm, sizeof(comm), "p%" PRIu32, pid);
		fake_proc(&f, pid, comm);
	}
	c = cache_on(&f, 8, 1000);
	for (uint32_t pid = 100; pid < 200; pid++) {
		snprintf(comm, sizeof(comm), "p%" PRIu32, pid);
		expect_comm(c, pid, pid, comm);
	}
	st = stats_of(c);
	assert_int_equal(st.misses, 100);
	assert_int_equal(st.evictions, 92);
	/* The last 8 are cached, the 9th from last is not. */
	for (uint32_t pid = 192; pid < 200; pid++) {
		snprintf(comm, sizeof(comm), "p%" PRIu32, pid);
		expect_comm(c, pid, 300, comm);
	}
	assert_int_equal(stats_of(c).misses, 100);
	expect_comm(c, 191, 301, "p191");
	assert_int_equal(stats_of(c).misses, 101);
	gw_attrib_cache_free(c);
	fake_release(&f);
}

/*
 * More pids in one pass (one `now`) than entries: the excess is refused
 * rather than evicting what this pass already looked up.
 */
static void cache_refuses_within_one_pass(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;
	struct gw_attrib a;
	struct gw_attrib_stats st;

	(void)state;
	fake_init(&f);
	for (uint32_t pid = 1; pid <= 3; pid++)
		fake_proc(&f, pid, "x");
	c = cache_on(&f, 2, 1000);
	expect_comm(c, 1, 10, "x");
	expect_comm(c, 2, 10, "x");
	memset(&a, 'Z', sizeof(a));
	assert_int_equal(gw_attrib_get(c, 3, 10, &a), -ENOSPC);
	assert_int_equal(a.comm[0], 'Z');
	/* Known pids are still answered. */
	expect_comm(c, 1, 10, "x");
	st = stats_of(c);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.lookups, 4);
	/* Next pass: room is made. */
	expect_comm(c, 3, 11, "x");
	st = stats_of(c);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(st.refused, 1);
	gw_attrib_cache_free(c);
	fake_release(&f);
}

static void cache_evicts_exited_first(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;
	struct gw_attrib a;

	(void)state;
	fake_init(&f);
	for (uint32_t pid = 1; pid <= 3; pid++)
		fake_proc(&f, pid, "x");
	c = cache_on(&f, 2, 1);
	expect_comm(c, 1, 1, "x");
	expect_comm(c, 2, 1.5, "x");
	fake_exit(&f, 1);
	expect_comm(c, 1, 2, "x"); /* re-read: gone, labels kept */
	/* 2 is the least recently used, but 1 has exited. */
	expect_comm(c, 3, 2.2, "x");
	assert_int_equal(stats_of(c).misses, 4);
	expect_comm(c, 2, 2.3, "x");
	assert_int_equal(stats_of(c).misses, 4);
	assert_int_equal(gw_attrib_get(c, 1, 2.4, &a), -ENOENT);
	gw_attrib_cache_free(c);
	fake_release(&f);
}

static struct gw_attrib_cache *
cache_jobs(struct fake *f, const char *const *names, unsigned int n)
{
	struct gw_attrib_opts o = {
		.sz = sizeof(o),
		.proc_root = f->root,
		.job_env = names,
		.njob_env = n,
	};
	struct gw_attrib_cache *c = NULL;

	assert_int_equal(gw_attrib_cache_new(&o, &c), 0);
	return c;
}

static void job_from(struct gw_attrib_cache *c, struct fake *f, const void *env,
		     size_t len, const char *want)
{
	static uint32_t pid = 1000;
	struct gw_attrib a;

	pid++;
	fake_proc(f, pid, "job");
	fake_put(f, pid, "environ", env, len);
	assert_int_equal(gw_attrib_get(c, pid, 0, &a), 0);
	assert_string_equal(a.job, want);
}

#define ENV(s) s, sizeof(s) - 1

static void job_variables(void **state)
{
	static const char *const prio[] = { "PBS_JOBID", "SLURM_JOB_ID" };
	static const char *const none[] = { "UNUSED" };
	struct fake f;
	struct gw_attrib_cache *c;
	char *big;
	const size_t bign = GW_ATTRIB_ENVIRON_MAX + 1000;

	(void)state;
	fake_init(&f);
	c = cache_jobs(&f, prio, 2);
	/* The list is a priority order, not the environment's order. */
	job_from(c, &f, ENV("SLURM_JOB_ID=77\0PBS_JOBID=12.pbs\0"), "12.pbs");
	job_from(c, &f, ENV("SLURM_JOB_ID=77\0"), "77");
	/* Empty values do not count; the next name does. */
	job_from(c, &f, ENV("PBS_JOBID=\0SLURM_JOB_ID=78\0"), "78");
	/* Whole names only. */
	job_from(c, &f,
		 ENV("SLURM_JOB_ID_X=1\0XSLURM_JOB_ID=2\0SLURM_JOB_ID"
		     "\0SLURM_JOB_IDS=3\0"),
		 "");
	/* The first of duplicates, as getenv() sees it. */
	job_from(c, &f, ENV("SLURM_JOB_ID=5\0SLURM_JOB_ID=6\0"), "5");
	/* Control characters go; long values are cut to 63 bytes. */
	job_from(c, &f,
		 ENV("SLURM_JOB_ID=1\t2\x01"
		     "3\x7f\0"),
		 "123");
	job_from(c, &f,
		 ENV("SLURM_JOB_ID=0123456789012345678901234567890123456789"
		     "01234567890123456789012345678901234567890123456789\0"),
		 "012345678901234567890123456789012345678901234567890123456"
		 "789012");
	/* ...and never in the middle of a UTF-8 character. */
	job_from(c, &f,
		 ENV("SLURM_JOB_ID=0123456789012345678901234567890123456789"
		     "0123456789012345678901\xc3\xa9"
		     "\0"),
		 "012345678901234567890123456789012345678901234567890123456"
		 "78901");
	/* The file may end without a NUL. */
	job_from(c, &f, ENV("A=b\0SLURM_JOB_ID=9"), "9");
	job_from(c, &f, ENV(""), "");

	/* Only the first GW_ATTRIB_ENVIRON_MAX bytes are read. */
	big = malloc(bign);
	assert_non_null(big);
	memset(big, 'x', bign);
	memcpy(big, "PAD=", 4);
	big[GW_ATTRIB_ENVIRON_MAX - 40] = '\0';
	memcpy(big + GW_ATTRIB_ENVIRON_MAX - 39, "SLURM_JOB_ID=early", 19);
	big[GW_ATTRIB_ENVIRON_MAX - 13] = '\0';
	/* Cut after "PBS_JOBID=la": a cut entry is not a value. */
	memcpy(big + GW_ATTRIB_ENVIRON_MAX - 12, "PBS_JOBID=late", 15);
	job_from(c, &f, big, bign, "early");
	free(big);
	gw_attrib_cache_free(c);

	/* Defaults: SLURM_JOB_ID; an empty list turns the label off. */
	c = cache_jobs(&f, NULL, 0);
	job_from(c, &f, ENV("PBS_JOBID=1\0SLURM_JOB_ID=2\0"), "2");
	gw_attrib_cache_free(c);
	c = cache_jobs(&f, none, 0);
	job_from(c, &f, ENV("SLURM_JOB_ID=2\0"), "");
	gw_attrib_cache_free(c);
	fake_release(&f);
}

static void comm_is_cleaned(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;
	struct gw_attrib a;
	struct gw_buf b;

	(void)state;
	fake_init(&f);
	fake_proc(&f, 9, "x");
	fake_puts(&f, 9, "comm", "we\x01ird\"na\\me\x1b\n");
	fake_puts(&f, 9, "cgroup", "");
	c = cache_on(&f, 0, 0);
	assert_int_equal(gw_attrib_get(c, 9, 0, &a), 0);
	assert_string_equal(a.comm, "weird\"na\\me");
	gw_buf_init(&b, 1024);
	assert_int_equal(gw_attrib_labels(&a, 9, &b), 0);
	assert_string_equal(b.p, "pid=\"9\",comm=\"weird\\\"na\\\\me\"");
	gw_buf_release(&b);
	gw_attrib_cache_free(c);
	fake_release(&f);
}

static void labels_format(void **state)
{
	struct gw_attrib a = { .comm = "python3" };
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 1024);
	/* Empty ones are left out. */
	assert_int_equal(gw_attrib_labels(&a, 4100, &b), 0);
	assert_string_equal(b.p, "pid=\"4100\",comm=\"python3\"");
	/* After other labels, with a comma; all fields in a fixed order. */
	gw_buf_reset(&b);
	assert_int_equal(gw_buf_adds(&b, "gpu=\"0\""), 0);
	snprintf(a.container_id, sizeof(a.container_id), "%s", ID64);
	snprintf(a.pod_uid, sizeof(a.pod_uid), "%s", UID);
	snprintf(a.job, sizeof(a.job), "%s", "12\"3\n");
	assert_int_equal(gw_attrib_labels(&a, 4294967295u, &b), 0);
	assert_string_equal(b.p,
			    "gpu=\"0\",pid=\"4294967295\",comm=\"python3\","
			    "container_id=\"" ID64 "\",pod_uid=\"" UID
			    "\",job=\"12\\\"3\\n\"");
	/* Only the job. */
	gw_buf_reset(&b);
	a.container_id[0] = a.pod_uid[0] = '\0';
	a.comm[0] = '\0';
	assert_int_equal(gw_attrib_labels(&a, 1, &b), 0);
	assert_string_equal(b.p, "pid=\"1\",comm=\"\",job=\"12\\\"3\\n\"");
	/* pid 0: no pid label (for counters that outlive the process). */
	gw_buf_reset(&b);
	assert_int_equal(gw_attrib_labels(&a, 0, &b), 0);
	assert_string_equal(b.p, "comm=\"\",job=\"12\\\"3\\n\"");
	gw_buf_release(&b);

	/* All or nothing when the buffer is full. */
	gw_buf_init(&b, 30);
	assert_int_equal(gw_buf_adds(&b, "gpu=\"0\""), 0);
	assert_int_equal(gw_attrib_labels(&a, 1, &b), -ENOSPC);
	assert_int_equal(b.len, 7);
	assert_string_equal(b.p, "gpu=\"0\"");
	gw_buf_release(&b);
}

static void options_checked(void **state)
{
	static const char *const eq[] = { "A=B" };
	static const char *const empty[] = { "" };
	static const char *const null[] = { NULL };
	static const char *const nine[9] = { "A", "B", "C", "D", "E",
					     "F", "G", "H", "I" };
	char long_name[GW_ATTRIB_ENV_NAME_MAX + 2];
	char long_root[GW_ATTRIB_PROC_ROOT_MAX + 2];
	struct {
		struct gw_attrib_opts o;
		char newer[16];
	} big;
	const char *ln[] = { long_name };
	struct gw_attrib_opts o;
	struct gw_attrib_cache *c = (void *)&o;
	struct gw_attrib a;

	(void)state;
	memset(long_name, 'A', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	memset(long_root, '/', sizeof(long_root) - 1);
	long_root[sizeof(long_root) - 1] = '\0';

#define BAD(...)                                                               \
	do {                                                                   \
		o = (struct gw_attrib_opts){ .sz = sizeof(o), __VA_ARGS__ };   \
		assert_int_equal(gw_attrib_cache_new(&o, &c), -EINVAL);        \
		assert_ptr_equal(c, (void *)&o);                               \
	} while (0)
	BAD(.max_pids = GW_ATTRIB_MAX_PIDS_LIMIT + 1);
	BAD(.ttl_s = -1);
	BAD(.ttl_s = NAN);
	BAD(.ttl_s = INFINITY);
	BAD(.proc_root = "");
	BAD(.proc_root = long_root);
	BAD(.job_env = eq, .njob_env = 1);
	BAD(.job_env = empty, .njob_env = 1);
	BAD(.job_env = null, .njob_env = 1);
	BAD(.job_env = ln, .njob_env = 1);
	BAD(.job_env = nine, .njob_env = 9);
	BAD(.job_env = NULL, .njob_env = 1);
#undef BAD
	o = (struct gw_attrib_opts){ .sz = 1 };
	assert_int_equal(gw_attrib_cache_new(&o, &c), -EINVAL);
	/* The largest bounds are accepted. */
	o = (struct gw_attrib_opts){ .sz = sizeof(o),
				     .max_pids = GW_ATTRIB_MAX_PIDS_LIMIT,
				     .job_env = nine,
				     .njob_env = 8 };
	assert_int_equal(gw_attrib_cache_new(&o, &c), 0);
	gw_attrib_cache_free(c);

	/* A newer caller: accepted when its extra fields are unset. */
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	assert_int_equal(gw_attrib_cache_new(&big.o, &c), 0);
	gw_attrib_cache_free(c);
	big.newer[3] = 1;
	assert_int_equal(gw_attrib_cache_new(&big.o, &c), -EINVAL);

	/* An older caller: fields past its size are defaults. */
	memset(&o, 0, sizeof(o));
	o.sz = offsetof(struct gw_attrib_opts, max_pids);
	o.proc_root = "/nonexistent-proc";
	o.max_pids = GW_ATTRIB_MAX_PIDS_LIMIT + 1; /* not read */
	assert_int_equal(gw_attrib_cache_new(&o, &c), 0);
	assert_int_equal(gw_attrib_get(c, 1, 0, &a), -ENOENT);
	/* Arguments. */
	assert_int_equal(gw_attrib_get(c, 0, 0, &a), -EINVAL);
	assert_int_equal(gw_attrib_get(c, 1, NAN, &a), -EINVAL);
	gw_attrib_cache_free(c);
	gw_attrib_cache_free(NULL);
}

/* This process, through the real /proc and the defaults. */
static void real_proc_self(void **state)
{
	struct gw_attrib_cache *c;
	struct gw_attrib a;
	char want[16], cid[80], pod[48];
	size_t len;
	char *cg = slurp("/proc/self/cgroup", &len);

	(void)state;
	snprintf(want, sizeof(want), "%s", program_invocation_short_name);
	assert_int_equal(gw_attrib_cache_new(NULL, &c), 0);
	assert_int_equal(gw_attrib_get(c, (uint32_t)getpid(), 0, &a), 0);
	assert_string_equal(a.comm, want);
	assert_int_equal(gw_attrib_parse_cgroup(cg, len, cid, sizeof(cid), pod,
						sizeof(pod)),
			 0);
	assert_string_equal(a.container_id, cid);
	assert_string_equal(a.pod_uid, pod);
	assert_valid_ids(a.container_id, a.pod_uid);
	if (getenv("SLURM_JOB_ID"))
		assert_string_equal(a.job, getenv("SLURM_JOB_ID"));
	gw_attrib_cache_free(c);
	free(cg);
}

/* ---- threads ---- */

#define THREADS 4
#define ROUNDS	3000
#define TPIDS	16

struct worker {
	struct gw_attrib_cache *c;
	unsigned int seed;
	unsigned int ok, refused, wrong;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;

	for (unsigned int i = 0; i < ROUNDS; i++) {
		uint32_t pid = 1 + (uint32_t)(rand_r(&w->seed) % TPIDS);
		struct gw_attrib a;
		char want[16];
		int r;

		if (i % 97 == 0)
			gw_attrib_forget(w->c, pid);
		r = gw_attrib_get(w->c, pid, i / 10.0, &a);
		snprintf(want, sizeof(want), "p%" PRIu32, pid);
		if (r == -ENOSPC)
			w->refused++;
		else if (r == 0 && strcmp(a.comm, want) == 0)
			w->ok++;
		else
			w->wrong++;
	}
	return NULL;
}

static void cache_concurrent(void **state)
{
	struct fake f;
	struct gw_attrib_cache *c;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct gw_attrib_stats st;
	unsigned int refused = 0;
	char comm[16];

	(void)state;
	fake_init(&f);
	for (uint32_t pid = 1; pid <= TPIDS; pid++) {
		snprintf(comm, sizeof(comm), "p%" PRIu32, pid);
		fake_proc(&f, pid, comm);
	}
	c = cache_on(&f, 8, 2);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .c = c, .seed = (unsigned int)i + 1 };
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].wrong, 0);
		assert_int_equal(w[i].ok + w[i].refused, ROUNDS);
		refused += w[i].refused;
	}
	st = stats_of(c);
	assert_int_equal(st.lookups, THREADS * ROUNDS);
	assert_int_equal(st.refused, refused);
	assert_true(st.misses >= TPIDS);
	gw_attrib_cache_free(c);
	fake_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_fixtures),
		cmocka_unit_test(parse_most_specific_line_wins),
		cmocka_unit_test(parse_runtime_variants),
		cmocka_unit_test(parse_bad_arguments),
		cmocka_unit_test(parse_truncated),
		cmocka_unit_test(parse_random_bytes),
		cmocka_unit_test(cache_reads_all_fields),
		cmocka_unit_test(cache_cgroup_bound),
		cmocka_unit_test(cache_ttl_refresh),
		cmocka_unit_test(cache_gone_process),
		cmocka_unit_test(cache_evicts_least_recently_used),
		cmocka_unit_test(cache_never_exceeds_bound),
		cmocka_unit_test(cache_refuses_within_one_pass),
		cmocka_unit_test(cache_evicts_exited_first),
		cmocka_unit_test(job_variables),
		cmocka_unit_test(comm_is_cleaned),
		cmocka_unit_test(labels_format),
		cmocka_unit_test(options_checked),
		cmocka_unit_test(real_proc_self),
		cmocka_unit_test(cache_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
