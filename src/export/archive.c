/* SPDX-License-Identifier: MIT */
/*
 * archive.c - the cold tier (archive.h): upload with verification, the
 * manifest, fetch into a bounded cache.
 *
 * The uploader's states, per pass:
 *
 *   idle --(a closed partition not archived)--> uploading
 *   uploading --(PUT, ETag/HEAD or read-back verified, manifest)--> reported
 *   uploading --(any failure)--> backoff (1 s, doubling to 60 s) --> idle
 *   reported --(the store's writer records it)--> archived (skipped)
 */
#include "export/archive.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/worker.h"
#include "pipeline/catalog.h"
#include "store/profstore.h"
#include "store/store.h"

#define MANIFEST_MAX 4096
#define BACKOFF_MIN  1.0
#define BACKOFF_MAX  60.0
#define IDLE_PERIOD  30.0
#define CACHE_MAX    256 /* files in the cache */
#define REPORTED_MAX 64

enum reason {
	R_CONNECTION,
	R_TIMEOUT,
	R_DENIED,
	R_MISSING,
	R_HTTP,
	R_VERIFY,
	R_CORRUPT,
	R_CANCELLED,
	R_LOCAL,
	R_COUNT
};

static const char *const reason_name[R_COUNT] = {
	"connection", "timeout", "denied",    "missing", "http",
	"verify",     "corrupt", "cancelled", "local",
};

struct cached {
	char name[32];
	uint64_t bytes;
	uint64_t used; /* use clock */
};

struct gw_archive {
	struct gw_s3_config s3c;
	char cache_dir[4096];
	uint64_t cache_max;
	struct gw_store *store;
	struct gw_profstore *profiles;
	struct gw_worker_table *workers;
	struct gw_worker *w;
	struct gw_worker *self; /* w, as the upload thread knows it */
	struct gw_s3 *up;	/* the uploader's connection */

	double backoff, next_try; /* monotonic seconds */
	unsigned int streak;
	char reported[REPORTED_MAX][32];
	size_t nreported;

	pthread_mutex_t cache_lock;
	struct cached cache[CACHE_MAX];
	size_t ncache;
	uint64_t cache_bytes, use_clock, tmp_seq;

	_Atomic uint64_t uploads, upload_bytes, upload_fail[R_COUNT];
	_Atomic uint64_t hits, misses, fetch_bytes, fetch_fail[R_COUNT];
	_Atomic uint64_t evictions, pending, archived, remote;
	_Atomic uint64_t cache_now;
	_Atomic double last_upload;
};

/* ---- checksums ---- */

static void hex(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

void gw_archive_sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	if (EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL) != 1 || dl != 32) {
		out[0] = '\0';
		return;
	}
	hex(d, 32, out);
}

/* SHA-256 and MD5 of a file, and its size. */
static int file_sums(const char *path, char sha[65], char md5[33],
		     uint64_t *size)
{
	EVP_MD_CTX *s = EVP_MD_CTX_new(), *m = EVP_MD_CTX_new();
	unsigned char buf[65536], d[EVP_MAX_MD_SIZE];
	unsigned int dl;
	int fd = -1, err = 0;
	ssize_t n;

	*size = 0;
	if (!s || !m || EVP_DigestInit_ex(s, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestInit_ex(m, EVP_md5(), NULL) != 1) {
		err = -ENOMEM;
		goto out;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		EVP_DigestUpdate(s, buf, (size_t)n);
		EVP_DigestUpdate(m, buf, (size_t)n);
		*size += (uint64_t)n;
	}
	if (n < 0) {
		err = -errno;
		goto out;
	}
	EVP_DigestFinal_ex(s, d, &dl);
	hex(d, 32, sha);
	EVP_DigestFinal_ex(m, d, &dl);
	hex(d, 16, md5);
out:
	if (fd >= 0)
		close(fd);
	EVP_MD_CTX_free(s);
	EVP_MD_CTX_free(m);
	return err;
}

/* ---- names ---- */

/* A partition's name: TIER/DAY of the metric store, or prof/DAY. */
static bool name_ok(const char *name)
{
	enum gw_tier t;
	int64_t day;

	return gw_store_parse_partition(name, &t, &day) == 0 ||
	       gw_profstore_parse_day(name, &day) == 0;
}

/* ---- manifest ---- */

int gw_archive_manifest_format(const struct gw_archive_manifest *m, char *out,
			       size_t len)
{
	int n = snprintf(out, len,
			 "gpuwatch-archive 1\npartition %s\nbytes %llu\n"
			 "sha256 %s\nmd5 %s\n",
			 m->partition, (unsigned long long)m->bytes, m->sha256,
			 m->md5);

	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

static bool is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int gw_archive_manifest_parse(const char *text, size_t len,
			      struct gw_archive_manifest *m)
{
	static const char *const keys[] = { "gpuwatch-archive", "partition",
					    "bytes", "sha256", "md5" };
	const char *p = text, *end = text + len;
	size_t k = 0;

	memset(m, 0, sizeof(*m));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *sp;
		char val[80];
		size_t n, kl;

		if (!nl)
			return -EBADMSG; /* every line is '\n' ended */
		n = (size_t)(nl - p);
		sp = memchr(p, ' ', n);
		if (!sp)
			return -EBADMSG;
		kl = (size_t)(sp - p);
		if (n - kl - 1 >= sizeof(val) || memchr(p, '\0', n))
			return -EBADMSG;
		memcpy(val, sp + 1, n - kl - 1);
		val[n - kl - 1] = '\0';
		if (k < 5) {
			if (kl != strlen(keys[k]) || memcmp(p, keys[k], kl))
				return -EBADMSG;
			switch (k) {
			case 0:
				if (strcmp(val, "1") != 0)
					return val[0] >= '2' && val[0] <= '9'
						       ? -EPROTONOSUPPORT
						       : -EBADMSG;
				break;
			case 1: {
				if (strlen(val) >= sizeof(m->partition) ||
				    !name_ok(val))
					return -EBADMSG;
				memcpy(m->partition, val, strlen(val) + 1);
				break;
			}
			case 2: {
				char *e;

				if (!val[0] || val[0] < '0' || val[0] > '9' ||
				    strlen(val) > 19)
					return -EBADMSG;
				m->bytes = strtoull(val, &e, 10);
				if (*e)
					return -EBADMSG;
				break;
			}
			case 3:
				if (!is_hex(val, 64))
					return -EBADMSG;
				memcpy(m->sha256, val, 65);
				break;
			default:
				if (!is_hex(val, 32))
					return -EBADMSG;
				memcpy(m->md5, val, 33);
			}
		}
		k++;
		p = nl + 1;
	}
	return k >= 5 ? 0 : -EBADMSG;
}

/* ---- setup ---- */

static enum reason reason_of(int err)
{
	switch (err) {
	case -ETIMEDOUT:
		return R_TIMEOUT;
	case -EACCES:
		return R_DENIED;
	case -ENOENT:
		return R_MISSING;
	case -EIO:
	case -EBADMSG:
	case -EFBIG:
		return R_HTTP;
	case -ECANCELED:
		return R_CANCELLED;
	case -ECONNREFUSED:
		return R_CONNECTION;
	default:
		return R_LOCAL;
	}
}

/* Deletes what a previous run left in the cache directory. */
static void empty_cache_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[4400];

		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] ||
		     (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		(void)unlink(p);
	}
	closedir(d);
}

int gw_archive_new(const struct gw_archive_opts *o, struct gw_archive **out,
		   char *err, size_t errlen)
{
	struct gw_archive *a = calloc(1, sizeof(*a));
	int r;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->s3c = *o->s3;
	a->cache_max = o->cache_bytes ? o->cache_bytes : (1ULL << 30);
	a->workers = o->workers;
	a->backoff = BACKOFF_MIN;
	pthread_mutex_init(&a->cache_lock, NULL);
	if (snprintf(a->cache_dir, sizeof(a->cache_dir), "%s", o->cache_dir) >=
	    (int)sizeof(a->cache_dir)) {
		snprintf(err, errlen, "archive cache path too long");
		gw_archive_free(a, 0);
		return -ENAMETOOLONG;
	}
	if (mkdir(a->cache_dir, 0750) != 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errlen, "cannot create %s: %s", a->cache_dir,
			 strerror(errno));
		gw_archive_free(a, 0);
		return r;
	}
	empty_cache_dir(a->cache_dir);
	r = gw_s3_new(&a->s3c, &a->up);
	if (r) {
		snprintf(err, errlen, "archive: %s", strerror(-r));
		gw_archive_free(a, 0);
		return r;
	}
	*out = a;
	return 0;
}

void gw_archive_set_store(struct gw_archive *a, struct gw_store *s)
{
	a->store = s;
}

void gw_archive_set_profiles(struct gw_archive *a, struct gw_profstore *p)
{
	a->profiles = p;
}

/* ---- upload ---- */

static int stopping(void *ctx)
{
	struct gw_archive *a = ctx;

	/* Read on the upload thread only (set by its rounds). */
	return a->self && gw_worker_stopping(a->self);
}

struct readback {
	EVP_MD_CTX *md;
	uint64_t n;
};

static int readback_sink(void *ctx, const void *p, size_t n)
{
	struct readback *rb = ctx;

	rb->n += n;
	return EVP_DigestUpdate(rb->md, p, n) == 1 ? 0 : -ENOMEM;
}

/* Reads the object back and compares its SHA-256. */
static int verify_by_reading(struct gw_s3 *s3, const char *key,
			     const struct gw_archive_manifest *m, char *err,
			     size_t errlen)
{
	struct readback rb = { EVP_MD_CTX_new(), 0 };
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl;
	char sha[65];
	int r;

	if (!rb.md || EVP_DigestInit_ex(rb.md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(rb.md);
		return -ENOMEM;
	}
	r = gw_s3_get(s3, key, readback_sink, &rb, err, errlen);
	if (!r) {
		EVP_DigestFinal_ex(rb.md, d, &dl);
		hex(d, 32, sha);
		if (rb.n != m->bytes || strcmp(sha, m->sha256) != 0) {
			snprintf(
				err, errlen,
				"%.512s: the object read back differs from the "
				"file (%llu bytes, sha256 %.12s..., expected "
				"%llu, %.12s...)",
				key, (unsigned long long)rb.n, sha,
				(unsigned long long)m->bytes, m->sha256);
			r = -EILSEQ;
		}
	}
	EVP_MD_CTX_free(rb.md);
	return r;
}

/* One partition, from the file path: PUT, verify, manifest; *bytes its
 * size. */
static int upload_one(struct gw_archive *a, struct gw_s3 *s3, const char *name,
		      const char *path, uint64_t *bytes, char *err,
		      size_t errlen)
{
	struct gw_archive_manifest m = { 0 };
	char key[1200], mkey[1300], etag[80], etag2[80];
	char text[MANIFEST_MAX];
	uint64_t size = 0;
	int r, n;

	r = file_sums(path, m.sha256, m.md5, &m.bytes);
	if (r) {
		snprintf(err, errlen, "cannot read %.512s: %s", path,
			 strerror(-r));
		return r;
	}
	snprintf(m.partition, sizeof(m.partition), "%s", name);
	{
		char file[48];

		snprintf(file, sizeof(file), "%s.db", name);
		gw_s3_key(s3, file, key, sizeof(key));
	}
	snprintf(mkey, sizeof(mkey), "%s.manifest", key);
	r = gw_s3_put_file(s3, key, path, m.bytes, m.sha256, etag, err, errlen);
	if (r)
		return r;
	r = gw_s3_head(s3, key, &size, etag2, err, errlen);
	if (r)
		return r;
	if (size != m.bytes) {
		snprintf(err, errlen,
			 "%.512s: the bucket holds %llu bytes, the file has "
			 "%llu",
			 key, (unsigned long long)size,
			 (unsigned long long)m.bytes);
		return -EILSEQ;
	}
	/* A single PUT's ETag is the MD5 of the body, unless the server
	 * encrypts or is not S3: then the object is read back. */
	if (strcmp(etag, m.md5) != 0 || strcmp(etag2, m.md5) != 0) {
		r = verify_by_reading(s3, key, &m, err, errlen);
		if (r)
			return r;
	}
	n = gw_archive_manifest_format(&m, text, sizeof(text));
	if (n < 0)
		return n;
	r = gw_s3_put_mem(s3, mkey, text, (size_t)n, err, errlen);
	if (r)
		return r;
	*bytes = m.bytes;
	atomic_fetch_add(&a->uploads, 1);
	atomic_fetch_add(&a->upload_bytes, m.bytes);
	atomic_store(&a->last_upload, gw_now_real());
	gw_info("archive: %s uploaded and verified (%llu bytes, sha256 "
		"%.12s...)",
		name, (unsigned long long)m.bytes, m.sha256);
	return 0;
}

/* The closed days of profiles not archived yet: each written out to a
 * day file in the cache directory, uploaded, recorded.  0 or the
 * listing's -errno; failures counted in *failed and *last. */
static int profile_pass(struct gw_archive *a, unsigned int *done,
			unsigned int *failed, uint64_t *pending,
			uint64_t *archived, uint64_t *remote, int *last,
			char *err, size_t errlen)
{
	struct gw_profstore_day *v = NULL;
	int64_t now = (int64_t)(gw_now_real() * 1000);
	size_t n = 0;
	int r;

	if (!a->profiles)
		return 0;
	r = gw_profstore_days(a->profiles, now, &v, &n);
	if (r)
		return r;
	for (size_t k = 0; k < n; k++) {
		char path[4300], msg[8192];
		uint64_t bytes = 0;

		*archived += v[k].archived;
		*remote += v[k].archived && !v[k].local;
		if (!v[k].closed || v[k].archived || !v[k].local)
			continue;
		(*pending)++;
		if (stopping(a) || (*last && *failed))
			continue;
		snprintf(path, sizeof(path), "%s/.upload-%s.db", a->cache_dir,
			 v[k].name + 5);
		(void)unlink(path);
		r = gw_profstore_export_day(a->profiles, v[k].day_ms, path);
		if (r)
			snprintf(msg, sizeof(msg), "%s: cannot write %s: %s",
				 v[k].name, path, strerror(-r));
		else
			r = upload_one(a, a->up, v[k].name, path, &bytes, msg,
				       sizeof(msg));
		(void)unlink(path);
		if (!r)
			r = gw_profstore_archived(a->profiles, v[k].day_ms,
						  bytes, now);
		if (!r) {
			(*done)++;
			(*pending)--;
			(*archived)++;
			continue;
		}
		(*failed)++;
		*last = r;
		atomic_fetch_add(
			&a->upload_fail[r == -EILSEQ ? R_VERIFY : reason_of(r)],
			1);
		if (err && errlen && !err[0])
			snprintf(err, errlen, "%s", msg);
	}
	free(v);
	return 0;
}

static bool was_reported(struct gw_archive *a, const char *name)
{
	for (size_t i = 0; i < a->nreported; i++)
		if (strcmp(a->reported[i], name) == 0)
			return true;
	return false;
}

int gw_archive_pass(struct gw_archive *a, unsigned int *done,
		    unsigned int *failed, char *err, size_t errlen)
{
	struct gw_store_partition *v = NULL;
	uint64_t pending = 0, archived = 0, remote = 0;
	size_t n = 0, keep = 0;
	int r, last = 0;

	*done = *failed = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!a->store)
		goto profiles;
	r = gw_store_partitions(a->store, &v, &n);
	if (r)
		return r;
	/* Names the store recorded since leave the reported list. */
	for (size_t i = 0; i < a->nreported; i++) {
		bool still = false;

		for (size_t k = 0; k < n; k++) {
			char name[32];

			snprintf(name, sizeof(name), "%s/%s",
				 v[k].tier == GW_TIER_RAW  ? "raw"
				 : v[k].tier == GW_TIER_1M ? "1m"
							   : "1h",
				 v[k].day);
			if (strcmp(name, a->reported[i]) == 0 && !v[k].archived)
				still = true;
		}
		if (still)
			memmove(a->reported[keep++], a->reported[i], 32);
	}
	a->nreported = keep;
	for (size_t k = 0; k < n; k++) {
		char name[32], msg[1024];

		snprintf(name, sizeof(name), "%s/%s",
			 v[k].tier == GW_TIER_RAW  ? "raw"
			 : v[k].tier == GW_TIER_1M ? "1m"
						   : "1h",
			 v[k].day);
		archived += v[k].archived;
		remote += !v[k].local;
		if (!v[k].closed || v[k].archived || !v[k].local ||
		    was_reported(a, name))
			continue;
		pending++;
		if (stopping(a) || (last && *failed))
			continue; /* counted as pending, tried next pass */
		{
			char path[4200];
			uint64_t bytes;

			snprintf(path, sizeof(path), "%s/%s.db",
				 gw_store_dir(a->store), name);
			r = upload_one(a, a->up, name, path, &bytes, msg,
				       sizeof(msg));
		}
		if (!r) {
			r = gw_store_archived(a->store, name, v[k].bytes);
			if (r == 0 && a->nreported < REPORTED_MAX)
				snprintf(a->reported[a->nreported++], 32, "%s",
					 name);
			if (r == 0) {
				(*done)++;
				pending--;
			}
			continue;
		}
		(*failed)++;
		last = r;
		atomic_fetch_add(
			&a->upload_fail[r == -EILSEQ ? R_VERIFY : reason_of(r)],
			1);
		if (err && errlen && !err[0])
			snprintf(err, errlen, "%s", msg);
	}
	free(v);
profiles:
	r = profile_pass(a, done, failed, &pending, &archived, &remote, &last,
			 err, errlen);
	if (r)
		last = r;
	atomic_store(&a->pending, pending);
	atomic_store(&a->archived, archived);
	atomic_store(&a->remote, remote);
	return last;
}

static double upload_round(struct gw_worker *w, void *arg)
{
	struct gw_archive *a = arg;
	unsigned int done, failed;
	char err[1024];
	int r;

	a->self = w;
	r = gw_archive_pass(a, &done, &failed, err, sizeof(err));
	if (r == -ECANCELED)
		return IDLE_PERIOD;
	if (failed) {
		if (a->streak++ == 0)
			gw_warn("archive: upload failed, the partition stays "
				"on the local disk and is retried: %s",
				err);
		else
			gw_dbg("archive: upload failed again (%u): %s",
			       a->streak, err);
		a->backoff = a->streak == 1 ? BACKOFF_MIN : a->backoff * 2;
		if (a->backoff > BACKOFF_MAX)
			a->backoff = BACKOFF_MAX;
		return a->backoff;
	}
	if (a->streak) {
		gw_info("archive: uploads work again after %u failed "
			"tries",
			a->streak);
		a->streak = 0;
	}
	a->backoff = BACKOFF_MIN;
	/* A report the store could not take yet: soon again. */
	return done ? BACKOFF_MIN : IDLE_PERIOD;
}

int gw_archive_start(struct gw_archive *a)
{
	struct gw_worker_opts wo = {
		.name = "gw-archive",
		.round = upload_round,
		.arg = a,
		.period = IDLE_PERIOD,
		.table = a->workers,
	};

	gw_s3_set_cancel(a->up, stopping, a);
	return gw_worker_start(&wo, &a->w);
}

void gw_archive_free(struct gw_archive *a, double deadline)
{
	if (!a)
		return;
	if (a->w && gw_worker_stop(a->w, deadline)) {
		gw_warn("archive: the upload thread did not stop in time");
		return; /* it may still use a */
	}
	gw_worker_free(a->w);
	gw_s3_free(a->up);
	pthread_mutex_destroy(&a->cache_lock);
	explicit_bzero(&a->s3c, sizeof(a->s3c));
	free(a);
}

/* ---- fetch ---- */

struct fetch {
	struct gw_archive *a;
	struct gw_query_limits *lim;
	FILE *f;
	EVP_MD_CTX *md;
	uint64_t n, max;
	bool timed_out;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int fetch_cancel(void *ctx)
{
	struct fetch *f = ctx;

	if (f->lim->deadline_ns && mono_ns() > f->lim->deadline_ns) {
		f->timed_out = true;
		return 1;
	}
	return f->lim->cancel && atomic_load(f->lim->cancel);
}

static int fetch_sink(void *ctx, const void *p, size_t n)
{
	struct fetch *f = ctx;

	f->n += n;
	if (f->n > f->max)
		return -EFBIG;
	if (fwrite(p, 1, n, f->f) != n)
		return -EIO;
	return EVP_DigestUpdate(f->md, p, n) == 1 ? 0 : -ENOMEM;
}

static void cache_path(const struct gw_archive *a, const char *name, char *out,
		       size_t len)
{
	/* raw/2026-12-01 -> DIR/raw-2026-12-01.db */
	const char *slash = strchr(name, '/');

	snprintf(out, len, "%s/%.*s-%s.db", a->cache_dir, (int)(slash - name),
		 name, slash + 1);
}

/* Under cache_lock: drops the least recently used files (not keep) until
 * the cache fits. */
static void cache_trim(struct gw_archive *a, const char *keep)
{
	while (a->ncache > 1 &&
	       (a->cache_bytes > a->cache_max || a->ncache == CACHE_MAX)) {
		size_t old = SIZE_MAX;
		char p[4200];

		for (size_t i = 0; i < a->ncache; i++)
			if (strcmp(a->cache[i].name, keep) != 0 &&
			    (old == SIZE_MAX ||
			     a->cache[i].used < a->cache[old].used))
				old = i;
		if (old == SIZE_MAX)
			break;
		cache_path(a, a->cache[old].name, p, sizeof(p));
		/* A reader that has it open keeps reading it. */
		(void)unlink(p);
		a->cache_bytes -= a->cache[old].bytes;
		a->cache[old] = a->cache[--a->ncache];
		atomic_fetch_add(&a->evictions, 1);
	}
	atomic_store(&a->cache_now, a->cache_bytes);
}

static int fetch_fail(struct gw_archive *a, const char *name, int r,
		      const char *msg)
{
	enum reason why = r == -EILSEQ ? R_CORRUPT : reason_of(r);
	static atomic_flag warned[R_COUNT];

	atomic_fetch_add(&a->fetch_fail[why], 1);
	if (why == R_CORRUPT)
		gw_err("archive: %s refused: %s", name, msg);
	else if (why != R_CANCELLED && why != R_TIMEOUT)
		gw_log_once(&warned[why], GW_LOG_WARN,
			    "archive: cannot fetch %s for a query: %s", name,
			    msg);
	return r;
}

int gw_archive_fetch(void *ctx, const char *name, char *path, size_t len,
		     struct gw_query_limits *lim)
{
	struct gw_archive *a = ctx;
	struct gw_archive_manifest m;
	struct fetch f = { .a = a, .lim = lim };
	char key[1200], mkey[1300], tmp[4300], msg[8192], sha[65], *text = NULL;
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl;
	struct gw_s3 *s3 = NULL;
	size_t tlen;
	double t0;
	int r;

	cache_path(a, name, path, len);
	pthread_mutex_lock(&a->cache_lock);
	for (size_t i = 0; i < a->ncache; i++)
		if (strcmp(a->cache[i].name, name) == 0) {
			a->cache[i].used = ++a->use_clock;
			pthread_mutex_unlock(&a->cache_lock);
			atomic_fetch_add(&a->hits, 1);
			return 0;
		}
	snprintf(tmp, sizeof(tmp), "%s/.fetch-%llu", a->cache_dir,
		 (unsigned long long)++a->tmp_seq);
	pthread_mutex_unlock(&a->cache_lock);
	atomic_fetch_add(&a->misses, 1);
	t0 = gw_now_mono();

	r = gw_s3_new(&a->s3c, &s3);
	if (r)
		return fetch_fail(a, name, r, strerror(-r));
	gw_s3_set_cancel(s3, fetch_cancel, &f);
	{
		char file[48];

		snprintf(file, sizeof(file), "%s.db", name);
		gw_s3_key(s3, file, key, sizeof(key));
	}
	snprintf(mkey, sizeof(mkey), "%s.manifest", key);
	r = gw_s3_get_mem(s3, mkey, MANIFEST_MAX, &text, &tlen, msg,
			  sizeof(msg));
	if (!r) {
		r = gw_archive_manifest_parse(text, tlen, &m);
		if (r)
			snprintf(msg, sizeof(msg), "%s: a damaged manifest",
				 mkey);
		else if (strcmp(m.partition, name) != 0) {
			snprintf(msg, sizeof(msg), "%s: the manifest names %s",
				 mkey, m.partition);
			r = -EBADMSG;
		}
		if (r)
			r = -EILSEQ;
	}
	free(text);
	if (r)
		goto out;
	f.max = m.bytes;
	f.md = EVP_MD_CTX_new();
	f.f = fopen(tmp, "wbx");
	if (!f.md || EVP_DigestInit_ex(f.md, EVP_sha256(), NULL) != 1 || !f.f) {
		r = f.f ? -ENOMEM : -errno;
		snprintf(msg, sizeof(msg), "cannot write %s: %s", tmp,
			 strerror(-r));
		goto out;
	}
	r = gw_s3_get(s3, key, fetch_sink, &f, msg, sizeof(msg));
	if (fclose(f.f) != 0 && !r) {
		r = -EIO;
		snprintf(msg, sizeof(msg), "cannot write %s", tmp);
	}
	f.f = NULL;
	if (r == -ECANCELED && f.timed_out)
		r = -ETIMEDOUT;
	if (r == -EFBIG) {
		snprintf(msg, sizeof(msg),
			 "%s: larger than the %llu bytes its manifest says",
			 key, (unsigned long long)m.bytes);
		r = -EILSEQ;
	}
	if (r)
		goto out;
	EVP_DigestFinal_ex(f.md, d, &dl);
	hex(d, 32, sha);
	if (f.n != m.bytes || strcmp(sha, m.sha256) != 0) {
		snprintf(msg, sizeof(msg),
			 "%s does not match its manifest (%llu bytes, sha256 "
			 "%.12s...; the manifest says %llu, %.12s...)",
			 key, (unsigned long long)f.n, sha,
			 (unsigned long long)m.bytes, m.sha256);
		r = -EILSEQ;
		goto out;
	}
	(void)chmod(tmp, 0440);
	if (rename(tmp, path) != 0) {
		r = -errno;
		snprintf(msg, sizeof(msg), "cannot rename %s: %s", tmp,
			 strerror(errno));
		goto out;
	}
	atomic_fetch_add(&a->fetch_bytes, f.n);
	pthread_mutex_lock(&a->cache_lock);
	{
		bool have = false;

		for (size_t i = 0; i < a->ncache; i++)
			if (strcmp(a->cache[i].name, name) == 0) {
				have = true; /* a concurrent fetch won */
				a->cache[i].used = ++a->use_clock;
			}
		if (!have && a->ncache < CACHE_MAX) {
			struct cached *c = &a->cache[a->ncache++];

			snprintf(c->name, sizeof(c->name), "%s", name);
			c->bytes = f.n;
			c->used = ++a->use_clock;
			a->cache_bytes += f.n;
		}
		cache_trim(a, name);
	}
	pthread_mutex_unlock(&a->cache_lock);
	gw_info("archive: fetched %s for a query (%llu bytes in %.2f s)", name,
		(unsigned long long)f.n, gw_now_mono() - t0);
out:
	if (r == -ECANCELED && f.timed_out)
		r = -ETIMEDOUT;
	if (f.f)
		fclose(f.f);
	if (r)
		(void)unlink(tmp);
	EVP_MD_CTX_free(f.md);
	gw_s3_free(s3);
	return r ? fetch_fail(a, name, r, msg) : 0;
}

int gw_archive_restore(struct gw_archive *a, const char *name, const char *path,
		       char *err, size_t errlen)
{
	struct gw_query_limits none = { 0 };
	char cached[4300];
	int r;

	if (access(path, F_OK) == 0) {
		snprintf(err, errlen, "%s exists; not overwriting it", path);
		return -EEXIST;
	}
	r = gw_archive_fetch(a, name, cached, sizeof(cached), &none);
	if (r) {
		snprintf(err, errlen, "%s: %s (the log line above says more)",
			 name,
			 r == -EILSEQ ? "the object does not match its "
					"manifest; refused"
				      : strerror(-r));
		return r;
	}
	/* Copy out of the cache: the cache may drop its file any time. */
	{
		FILE *in = fopen(cached, "rb"), *out = NULL;
		char buf[65536];
		size_t n;

		if (in)
			out = fopen(path, "wbx");
		if (!in || !out) {
			r = -errno;
			snprintf(err, errlen, "cannot write %s: %s", path,
				 strerror(errno));
		}
		while (!r && (n = fread(buf, 1, sizeof(buf), in)) > 0)
			if (fwrite(buf, 1, n, out) != n) {
				r = -EIO;
				snprintf(err, errlen, "cannot write %s", path);
			}
		if (in)
			fclose(in);
		if (out && fclose(out) != 0 && !r) {
			r = -EIO;
			snprintf(err, errlen, "cannot write %s", path);
		}
	}
	return r;
}

/* ---- listing ---- */

struct listing {
	struct gw_archive_entry *v;
	size_t n, cap;
	size_t skip; /* prefix length with its '/' */
};

static int list_one(void *ctx, const struct gw_s3_object *o)
{
	struct listing *l = ctx;
	const char *rel = strlen(o->key) > l->skip ? o->key + l->skip : "";
	char name[32];
	size_t n = strlen(rel);
	bool manifest = n > 12 && strcmp(rel + n - 12, ".db.manifest") == 0;

	if (!manifest && !(n > 3 && strcmp(rel + n - 3, ".db") == 0))
		return 0;
	n -= manifest ? 12 : 3;
	if (n >= sizeof(name))
		return 0;
	memcpy(name, rel, n);
	name[n] = '\0';
	if (!name_ok(name))
		return 0;
	if (!l->n || strcmp(l->v[l->n - 1].name, name) != 0) {
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct gw_archive_entry *v =
				realloc(l->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			l->v = v;
			l->cap = cap;
		}
		memset(&l->v[l->n], 0, sizeof(l->v[0]));
		memcpy(l->v[l->n].name, name, sizeof(name));
		l->n++;
	}
	if (manifest)
		l->v[l->n - 1].manifest = true;
	else
		l->v[l->n - 1].bytes = o->size;
	return 0;
}

static int entry_cmp(const void *x, const void *y)
{
	const struct gw_archive_entry *a = x, *b = y;

	return strcmp(a->name, b->name);
}

int gw_archive_list(struct gw_archive *a, struct gw_archive_entry **out,
		    size_t *n, char *err, size_t errlen)
{
	struct listing l = { 0 };
	char pfx[1200];
	int r;

	gw_s3_key(a->up, "", pfx, sizeof(pfx));
	l.skip = strlen(pfx);
	r = gw_s3_list(a->up, "", list_one, &l, err, errlen);
	if (r) {
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		free(l.v);
		return r;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), entry_cmp);
	*out = l.v;
	*n = l.n;
	return 0;
}

/* ---- metrics ---- */

void gw_archive_publish(struct gw_archive *a, struct gw_snap *snap)
{
	gw_snap_add(snap, GW_FAM(ARCHIVE_UPLOADS_TOTAL),
		    (double)atomic_load(&a->uploads), NULL, NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_UPLOAD_BYTES_TOTAL),
		    (double)atomic_load(&a->upload_bytes), NULL, NULL);
	for (int i = 0; i < R_COUNT; i++) {
		gw_snap_add(snap, GW_FAM(ARCHIVE_UPLOAD_FAILURES_TOTAL),
			    (double)atomic_load(&a->upload_fail[i]), NULL,
			    "reason", reason_name[i], NULL);
		gw_snap_add(snap, GW_FAM(ARCHIVE_FETCH_FAILURES_TOTAL),
			    (double)atomic_load(&a->fetch_fail[i]), NULL,
			    "reason", reason_name[i], NULL);
	}
	gw_snap_add(snap, GW_FAM(ARCHIVE_PARTITIONS),
		    (double)atomic_load(&a->pending), NULL, "state", "pending",
		    NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_PARTITIONS),
		    (double)atomic_load(&a->archived), NULL, "state",
		    "archived", NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_PARTITIONS),
		    (double)atomic_load(&a->remote), NULL, "state", "remote",
		    NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_LAST_UPLOAD_TIMESTAMP_SECONDS),
		    atomic_load(&a->last_upload), NULL, NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_CACHE_HITS_TOTAL),
		    (double)atomic_load(&a->hits), NULL, NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_CACHE_MISSES_TOTAL),
		    (double)atomic_load(&a->misses), NULL, NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_CACHE_BYTES),
		    (double)atomic_load(&a->cache_now), NULL, NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_CACHE_EVICTIONS_TOTAL),
		    (double)atomic_load(&a->evictions), NULL, NULL);
	gw_snap_add(snap, GW_FAM(ARCHIVE_FETCH_BYTES_TOTAL),
		    (double)atomic_load(&a->fetch_bytes), NULL, NULL);
}
