/* SPDX-License-Identifier: MIT */
/*
 * store_archive.c - the cold tier for operators:
 *
 *   gpuwatch store archive         upload every closed day now (no agent)
 *   gpuwatch store restore P FILE  download one archived partition, verified
 *   gpuwatch store ls --remote     what the bucket holds
 *
 * The archive is named by the agent's own settings (--archive-url and the
 * rest, or --config FILE), parsed by the agent's settings table, so the
 * command line and the config file that run the agent run these too.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/config.h"
#include "export/archive.h"
#include "store/profstore.h"
#include "store/store.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch store archive [--data-dir DIR] "
		"ARCHIVE-OPTIONS\n"
		"       gpuwatch store restore PARTITION [FILE] "
		"ARCHIVE-OPTIONS\n"
		"       gpuwatch store ls --remote [--data-dir DIR] "
		"ARCHIVE-OPTIONS\n"
		"\n"
		"The cold tier: closed day partitions (and closed days of "
		"CPU profiles,\n"
		"as prof/DAY) copied to an S3-compatible bucket.\n"
		"The agent does this by itself with --archive-url; these "
		"commands are for\n"
		"operators.\n"
		"\n"
		"  archive  upload every closed partition of DIR that the "
		"bucket does not\n"
		"           hold yet, verify each (ETag or read back, and "
		"the manifest's\n"
		"           SHA-256), then delete the local files older than\n"
		"           --archive-keep-local. Not while an agent runs on "
		"DIR (it does\n"
		"           the same by itself).\n"
		"  restore  download the archived PARTITION (TIER/DAY, e.g. "
		"raw/2026-11-02;\n"
		"           prof/2026-11-02 for a day of CPU profiles)\n"
		"           to FILE, verified against its manifest: a copy "
		"that does not\n"
		"           match is refused. Safe while the agent runs. "
		"Without FILE,\n"
		"           put it back into DIR, where it then stays "
		"whatever the local\n"
		"           retention (not while an agent runs on DIR).\n"
		"  ls --remote\n"
		"           list the partitions in the bucket: size, complete "
		"(data and\n"
		"           manifest) or not, and whether DIR still has the "
		"file.\n"
		"\n"
		"Archive options (the agent's, see `gpuwatch agent --help`):\n"
		"  --archive-url s3://BUCKET/PREFIX   where the partitions "
		"go (required)\n"
		"  --archive-endpoint URL             an S3 server that is "
		"not AWS\n"
		"  --archive-region REGION            default AWS_REGION, "
		"else us-east-1\n"
		"  --archive-addressing path|virtual|auto\n"
		"  --archive-keep-local DURATION      (archive) days kept "
		"on disk; default 7d\n"
		"  --config FILE                      the agent's config "
		"file, for all of them\n"
		"  --data-dir DIR                     default "
		"/var/lib/gpuwatch\n"
		"\n"
		"Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
		"(and\n"
		"AWS_SESSION_TOKEN), else the profile AWS_PROFILE (default) "
		"of\n"
		"AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials).\n"
		"\n"
		"Exit status: 0 on success, 1 when a partition failed (the "
		"message says\n"
		"why; a failed upload leaves the local file in place), 2 for "
		"bad usage.\n"
		"\n"
		"Examples:\n"
		"  gpuwatch store archive --config /etc/gpuwatch/gpuwatch.yml\n"
		"  gpuwatch store ls --remote --archive-url "
		"s3://metrics/node17 "
		"\\\n"
		"      --archive-endpoint http://minio:9000\n"
		"  gpuwatch store restore raw/2026-11-02 "
		"/tmp/raw-2026-11-02.db "
		"\\\n"
		"      --archive-url s3://metrics/node17\n");
}

/* The agent's lock on DIR: -1 after saying why. */
static int lock_dir(const char *dir)
{
	char path[PATH_MAX + 16], pid[32];
	int fd, n;

	snprintf(path, sizeof(path), "%s/agent.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		fprintf(stderr, "gpuwatch store archive: cannot open %s: %s\n",
			path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		n = (int)pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr,
			"gpuwatch store archive: %s is in use by an agent "
			"(pid %s), which archives by itself with "
			"--archive-url\n",
			dir, pid[0] ? pid : "?");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * DIR/store for `store CMD` into dir, and the options to open it with:
 * nothing dropped (the agent applies its retention), archived partitions
 * kept on the local disk keep_ms.  The agent's lock on DIR, or -1 after
 * saying why.
 */
static int lock_store(const struct gw_config *c, const char *cmd, char *dir,
		      size_t len, struct gw_store_opts *o, int64_t keep_ms)
{
	snprintf(dir, len, "%s/store", c->data_dir);
	if (access(dir, F_OK) != 0) {
		fprintf(stderr, "gpuwatch store %s: no store in %s\n", cmd,
			c->data_dir);
		return -1;
	}
	gw_store_opts_defaults(o);
	o->dir = dir;
	for (int t = 0; t < GW_TIERS; t++)
		o->retention_ms[t] = INT64_MAX / 4;
	o->archive = true;
	o->archive_keep_ms = keep_ms;
	return lock_dir(c->data_dir);
}

static int open_archive(const struct gw_config *c, const char *cache,
			struct gw_archive **out)
{
	struct gw_s3_config s3;
	struct gw_archive_opts ao = { 0 };
	char err[1024];
	int r;

	if (!c->archive_url[0]) {
		fprintf(stderr, "gpuwatch store: --archive-url is required "
				"(or a --config file that sets archive_url)\n");
		return -EINVAL;
	}
	r = gw_s3_config_init(&s3, c->archive_url, c->archive_endpoint,
			      c->archive_region, c->archive_addressing, err,
			      sizeof(err));
	if (r) {
		fprintf(stderr, "gpuwatch store: --archive-url: %s\n", err);
		return r;
	}
	ao.s3 = &s3;
	ao.cache_dir = cache;
	ao.cache_bytes = c->archive_cache_size;
	r = gw_archive_new(&ao, out, err, sizeof(err));
	explicit_bzero(&s3, sizeof(s3));
	if (r)
		fprintf(stderr, "gpuwatch store: %s\n", err);
	return r;
}

/* A private cache directory (the agent's may be in use), removed after:
 * 0, or -errno after saying why. */
static int temp_cache(const char *cmd, char *out, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	int err;

	snprintf(out, len, "%s/gpuwatch-restore.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(out))
		return 0;
	err = errno;
	fprintf(stderr, "gpuwatch store %s: cannot create %s: %s\n", cmd, out,
		strerror(err));
	return -err;
}

/* The cache file gw_archive_fetch or gw_archive_restore left for name,
 * and the directory. */
static void drop_cache(const char *cache, const char *name)
{
	char p[PATH_MAX + 64];
	const char *slash = strchr(name, '/');

	snprintf(p, sizeof(p), "%s/%.*s-%s.db", cache, (int)(slash - name),
		 name, slash + 1);
	(void)unlink(p);
	(void)rmdir(cache);
}

/* Downloads the archived partition name to file, verified against its
 * manifest: 0, or the archive's error after saying why. */
static int download(struct gw_archive *a, const char *name, const char *file)
{
	char err[2048];
	int r = gw_archive_restore(a, name, file, err, sizeof(err));

	if (r)
		fprintf(stderr, "gpuwatch store restore: %s\n", err);
	return r;
}

/* DIR/profiles.db when there is one (*out NULL when not); -1 after
 * saying why. */
static int open_profiles(const struct gw_config *c, const char *cmd,
			 struct gw_profstore **out)
{
	struct gw_profstore_opts o = { .sz = sizeof(o) };
	char path[PATH_MAX + 16], err[1024];

	*out = NULL;
	snprintf(path, sizeof(path), "%s/profiles.db", c->data_dir);
	if (access(path, F_OK) != 0)
		return 0;
	o.path = path;
	if (gw_profstore_open(&o, out, err, sizeof(err)) != 0) {
		fprintf(stderr, "gpuwatch store %s: %s\n", cmd, err);
		return -1;
	}
	return 0;
}

static int do_archive(const struct gw_config *c)
{
	struct gw_store_opts o;
	struct gw_store *s = NULL;
	struct gw_archive *a = NULL;
	struct gw_profstore *ps = NULL;
	char dir[PATH_MAX + 16], cache[PATH_MAX + 32], err[1024];
	unsigned int done = 0, failed = 0;
	int fd, r;

	fd = lock_store(c, "archive", dir, sizeof(dir), &o,
			(int64_t)(c->archive_keep_local * 1000));
	if (fd < 0)
		return 1;
	snprintf(cache, sizeof(cache), "%s/archive-cache", c->data_dir);
	r = open_archive(c, cache, &a);
	if (r) {
		close(fd);
		return r == -EINVAL ? 2 : 1;
	}
	if (open_profiles(c, "archive", &ps)) {
		gw_archive_free(a, 0);
		close(fd);
		return 1;
	}
	if (ps) {
		gw_profstore_set_archive(
			ps, (int64_t)(c->archive_keep_local * 1000), NULL,
			NULL);
		gw_archive_set_profiles(a, ps);
	}
	o.fetch = gw_archive_fetch;
	o.fetch_ctx = a;
	r = gw_store_open(&s, &o, err, sizeof(err));
	if (r) {
		fprintf(stderr, "gpuwatch store archive: %s\n", err);
		gw_archive_free(a, 0);
		gw_profstore_close(ps);
		close(fd);
		return 1;
	}
	gw_archive_set_store(a, s);
	r = gw_archive_pass(a, &done, &failed, err, sizeof(err));
	/* Records the uploads and deletes what is past the local
	 * retention. */
	if (gw_store_maintain(s) != 0)
		fprintf(stderr, "gpuwatch store archive: the store's "
				"maintenance failed; the uploads are recorded "
				"at the next run\n");
	printf("archived %u partition%s to %s", done, done == 1 ? "" : "s",
	       c->archive_url);
	if (failed)
		printf("; %u failed and stay on the local disk", failed);
	printf("\n");
	if (failed)
		fprintf(stderr, "gpuwatch store archive: %s\n", err);
	gw_store_close(s);
	gw_archive_free(a, 0);
	gw_profstore_close(ps);
	close(fd);
	return r || failed ? 1 : 0;
}

static int do_restore(const struct gw_config *c, const char *name,
		      const char *file)
{
	struct gw_archive *a = NULL;
	char cache[PATH_MAX];
	enum gw_tier t;
	int64_t day;
	int r;

	if (gw_store_parse_partition(name, &t, &day) &&
	    gw_profstore_parse_day(name, &day)) {
		fprintf(stderr,
			"gpuwatch store restore: '%s' is not TIER/DAY (raw, "
			"1m, 1h or prof / YYYY-MM-DD)\n",
			name);
		return 2;
	}
	if (temp_cache("restore", cache, sizeof(cache)))
		return 1;
	r = open_archive(c, cache, &a);
	if (!r) {
		r = download(a, name, file);
		if (!r)
			printf("restored %s to %s (verified against its "
			       "manifest)\n",
			       name, file);
	}
	gw_archive_free(a, 0);
	drop_cache(cache, name);
	return r == -EINVAL ? 2 : r ? 1 : 0;
}

/* restore prof/DAY without FILE: the day's profiles back into
 * DIR/profiles.db, kept there whatever the retention. */
static int do_restore_profiles(const struct gw_config *c, const char *name)
{
	struct gw_profstore *ps = NULL;
	struct gw_archive *a = NULL;
	char cache[PATH_MAX], tmp[PATH_MAX + 32];
	int64_t day = 0;
	int fd, r;

	fd = lock_dir(c->data_dir);
	if (fd < 0)
		return 1;
	if (temp_cache("restore", cache, sizeof(cache))) {
		close(fd);
		return 1;
	}
	snprintf(tmp, sizeof(tmp), "%s/day.db", cache);
	if (open_profiles(c, "restore", &ps) || !ps) {
		if (!ps)
			fprintf(stderr,
				"gpuwatch store restore: no profiles in %s\n",
				c->data_dir);
		r = -ENOENT;
		goto out;
	}
	r = open_archive(c, cache, &a);
	if (r)
		goto out;
	r = download(a, name, tmp);
	if (r)
		goto out;
	r = gw_profstore_import(ps, tmp, &day);
	if (r == -ENOENT)
		fprintf(stderr,
			"gpuwatch store restore: %s is not an archived day of "
			"%s/profiles.db (give a FILE to download any object "
			"of the bucket)\n",
			name, c->data_dir);
	else if (r)
		fprintf(stderr, "gpuwatch store restore: %s: %s\n", name,
			r == -EINVAL ? "not one day of profiles"
				     : strerror(-r));
	else
		printf("restored %s into %s/profiles.db (verified against "
		       "its manifest); it stays on the local disk\n",
		       name, c->data_dir);
out:
	(void)unlink(tmp);
	gw_archive_free(a, 0);
	gw_profstore_close(ps);
	drop_cache(cache, name);
	close(fd);
	return r == -EINVAL && !day ? 2 : r ? 1 : 0;
}

/* restore without FILE: back into DIR, kept there (the agent is not
 * running: the directory is locked). */
static int do_restore_into(const struct gw_config *c, const char *name)
{
	struct gw_store_partition *v = NULL;
	struct gw_store_opts o;
	struct gw_store *s = NULL;
	struct gw_archive *a = NULL;
	char dir[PATH_MAX + 16], cache[PATH_MAX], err[2048];
	char path[PATH_MAX + 64], tmp[PATH_MAX + 96];
	bool remote = false, known = false;
	size_t n = 0;
	int fd, r;

	fd = lock_store(c, "restore", dir, sizeof(dir), &o, INT64_MAX / 4);
	if (fd < 0)
		return 1;
	if (temp_cache("restore", cache, sizeof(cache))) {
		close(fd);
		return 1;
	}
	r = open_archive(c, cache, &a);
	if (r)
		goto out;
	r = gw_store_open(&s, &o, err, sizeof(err));
	if (r) {
		fprintf(stderr, "gpuwatch store restore: %s\n", err);
		goto out;
	}
	r = gw_store_partitions(s, &v, &n);
	for (size_t i = 0; !r && i < n; i++) {
		char pn[32];

		snprintf(pn, sizeof(pn), "%s/%s",
			 v[i].tier == GW_TIER_RAW  ? "raw"
			 : v[i].tier == GW_TIER_1M ? "1m"
						   : "1h",
			 v[i].day);
		if (strcmp(pn, name) == 0 && v[i].archived) {
			known = true;
			remote = !v[i].local;
		}
	}
	free(v);
	if (!r && !known) {
		fprintf(stderr,
			"gpuwatch store restore: %s is not an archived "
			"partition of %s (give a FILE to download any object "
			"of the bucket)\n",
			name, c->data_dir);
		r = -ENOENT;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s.db", dir, name);
	if (!r && remote) {
		snprintf(tmp, sizeof(tmp), "%s.restoring", path);
		(void)unlink(tmp);
		r = download(a, name, tmp);
		if (!r && (chmod(tmp, 0444) != 0 || rename(tmp, path) != 0)) {
			r = -errno;
			fprintf(stderr,
				"gpuwatch store restore: cannot put %s in "
				"place: %s\n",
				path, strerror(errno));
		}
		if (r)
			(void)unlink(tmp);
	}
	if (!r) {
		r = gw_store_restored(s, name);
		if (r)
			fprintf(stderr, "gpuwatch store restore: %s: %s\n",
				name, strerror(-r));
		else
			printf("restored %s into %s (verified against its "
			       "manifest); it stays on the local disk\n",
			       name, path);
	}
out:
	gw_store_close(s);
	gw_archive_free(a, 0);
	drop_cache(cache, name);
	close(fd);
	return r == -EINVAL ? 2 : r ? 1 : 0;
}

static int do_ls_remote(const struct gw_config *c)
{
	struct gw_archive *a = NULL;
	struct gw_archive_entry *v = NULL;
	struct gw_profstore *ps = NULL;
	struct gw_profstore_day *pd = NULL;
	char cache[PATH_MAX], err[2048];
	unsigned long long total = 0;
	size_t n = 0, npd = 0;
	int r, incomplete = 0;

	if (temp_cache("ls", cache, sizeof(cache)))
		return 1;
	r = open_archive(c, cache, &a);
	if (!r) {
		r = gw_archive_list(a, &v, &n, err, sizeof(err));
		if (r)
			fprintf(stderr, "gpuwatch store ls --remote: %s\n",
				err);
	}
	if (!r && open_profiles(c, "ls", &ps) == 0 && ps &&
	    gw_profstore_days(ps, 0, &pd, &npd) != 0)
		npd = 0;
	for (size_t i = 0; !r && i < n; i++) {
		char local[PATH_MAX + 64];
		const char *slash = strchr(v[i].name, '/');
		bool here;

		snprintf(local, sizeof(local), "%s/store/%s.db", c->data_dir,
			 v[i].name);
		here = access(local, F_OK) == 0;
		for (size_t k = 0; k < npd; k++)
			if (strcmp(pd[k].name, v[i].name) == 0 && pd[k].local)
				here = true;
		printf("%-4.*s %s  %12llu bytes  %-10s  %s\n",
		       (int)(slash - v[i].name), v[i].name, slash + 1,
		       (unsigned long long)v[i].bytes,
		       v[i].manifest ? "complete" : "INCOMPLETE",
		       here ? "also local" : "remote only");
		total += v[i].bytes;
		incomplete += !v[i].manifest;
	}
	if (!r)
		printf("%zu partition%s in %s, %llu bytes%s\n", n,
		       n == 1 ? "" : "s", c->archive_url, total,
		       incomplete ? " (INCOMPLETE ones have no manifest: an "
				    "upload that did not finish; the agent "
				    "uploads them again)"
				  : "");
	free(v);
	free(pd);
	gw_profstore_close(ps);
	gw_archive_free(a, 0);
	(void)rmdir(cache);
	return r == -EINVAL ? 2 : r ? 1 : 0;
}

int gw_cmd_store_archive(int argc, char **argv, const char *data_dir)
{
	struct gw_config *c;
	char err[GW_CONFIG_ERR_MAX];
	const char *pos[2] = { NULL, NULL };
	char **args;
	int na = 0, npos = 0, r;
	bool remote = false;
	const char *cmd = argv[0];

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		}
	c = calloc(1, sizeof(*c));
	args = calloc((size_t)argc + 4, sizeof(*args));
	if (!c || !args) {
		free(c);
		free(args);
		return 1;
	}
	args[na++] = (char *)"store";
	args[na++] = (char *)"--data-dir";
	args[na++] = (char *)data_dir;
	/* PARTITION [FILE] come first, the options after them. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--remote") == 0)
			remote = true;
		else if (argv[i][0] != '-' && npos < 2 && na == 3)
			pos[npos++] = argv[i];
		else
			args[na++] = argv[i];
	}
	gw_config_defaults(c);
	r = gw_config_from_args(c, na, args, err, sizeof(err));
	if (r) {
		fprintf(stderr, "gpuwatch store %s: %s\n", cmd,
			r < 0 ? err : "unexpected option");
		r = 2;
		goto out;
	}
	if (strcmp(cmd, "archive") == 0 && npos == 0)
		r = do_archive(c);
	else if (strcmp(cmd, "restore") == 0 && npos == 2)
		r = do_restore(c, pos[0], pos[1]);
	else if (strcmp(cmd, "restore") == 0 && npos == 1 &&
		 strncmp(pos[0], "prof/", 5) == 0)
		r = do_restore_profiles(c, pos[0]);
	else if (strcmp(cmd, "restore") == 0 && npos == 1)
		r = do_restore_into(c, pos[0]);
	else if (strcmp(cmd, "ls") == 0 && remote && npos == 0)
		r = do_ls_remote(c);
	else {
		usage(stderr);
		r = 2;
	}
out:
	free(args);
	free(c);
	return r;
}
