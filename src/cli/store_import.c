/* SPDX-License-Identifier: MIT */
/*
 * store_import.c - `gpuwatch store import`: backfill the local store from
 * files in the OpenMetrics text format with timestamps (what `promtool tsdb
 * create-blocks-from openmetrics` reads) or the Prometheus text format
 * with millisecond timestamps.
 *
 * The samples go through gw_store_append(), the agent's own write path
 * (alignment, codec, rollups, caps), so an imported store is the store the
 * agent would have written from the same samples.  Then the store is
 * flushed and cut with a clock that walks from the first imported day to
 * the present, one day per step: every finished hour lands in its day
 * partition and every finished day is closed, exactly as an agent running
 * through those days would have left them.  What is newer than the last
 * finished hour stays in the head log, which the agent replays at start.
 *
 * Ownership: the data directory is locked (DIR/agent.lock, the agent's own
 * lock) for the whole import, so an agent cannot start on it meanwhile and
 * an import cannot run under an agent.
 * Errors: a bad line is reported with its file and line number, counted
 * and skipped (with --strict every file is checked first and nothing is
 * imported when one line is bad); samples the store refuses (out of order,
 * older than data already cut, over the caps) are counted by reason.
 * Memory: the imported samples stay in the head, compressed, until the cut
 * (about 2 bytes per sample plus the per-series state).
 * Thread safety: single-threaded (a command).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/parse.h"
#include "store/store.h"

#define MS_HOUR		3600000LL
#define MS_DAY		(24 * MS_HOUR)
#define LINE_MAX_BYTES	(1u << 20) /* longer lines are refused */
#define SHOW_MAX_ERRORS 20	   /* printed; the rest only counted */
#define PROGRESS_TTY_MS 1000
#define PROGRESS_LOG_MS 10000
#define FLUSH_EVERY_MS	5000

enum format { FMT_OPENMETRICS, FMT_PROMETHEUS };

struct import {
	enum format fmt;
	bool strict, quiet, check_only, tty;
	struct gw_store *store;
	/* The store's clock: real time, or `fake` while cutting. */
	int64_t fake;
	bool use_fake;
	/* Per-run results. */
	uint64_t lines, samples, imported, bad_lines, refused_order,
		refused_cap, shown;
	int64_t t_min, t_max;
	int64_t last_progress, last_flush;
	int fatal; /* stops the import (-ENOMEM) */
	uint64_t bytes_done, bytes_total;
	struct gw_buf labels; /* the current line's label text */
};

static int64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t import_now(void *ctx)
{
	const struct import *im = ctx;

	return im->use_fake ? im->fake : real_ms();
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch store import [--data-dir DIR] [OPTIONS] "
		"FILE...\n"
		"\n"
		"Backfills the local store with samples from FILEs (\"-\" "
		"reads standard\n"
		"input), in the OpenMetrics text format with a timestamp on "
		"every sample,\n"
		"the input `promtool tsdb create-blocks-from openmetrics` "
		"takes:\n"
		"\n"
		"  # TYPE gpu_temp_celsius gauge\n"
		"  gpu_temp_celsius{gpu=\"0\"} 41 1764720000.000\n"
		"  gpu_temp_celsius{gpu=\"0\"} 42 1764720001.000\n"
		"  # EOF\n"
		"\n"
		"Samples go through the agent's own write path; afterwards "
		"every finished\n"
		"hour is in its day partition and every finished day is "
		"closed, as if an\n"
		"agent had collected them. Start the agent on DIR afterwards "
		"to query them.\n"
		"The samples of one series must be in time order, and newer "
		"than what DIR\n"
		"already holds for it (import into a new DIR to load older "
		"history).\n"
		"The agent drops days past its --retention-raw, "
		"--retention-1m and\n"
		"--retention-1h: give it retentions that cover the imported "
		"days.\n"
		"\n"
		"A malformed line is reported as FILE:LINE, skipped and "
		"counted; the\n"
		"first %d are shown. Comments (# TYPE, # HELP, # UNIT), "
		"exemplars and\n"
		"blank lines are ignored.\n"
		"\n"
		"Options:\n"
		"  --data-dir DIR            the agent's --data-dir (default "
		"/var/lib/gpuwatch);\n"
		"                            created if missing, refused "
		"while an agent runs on it\n"
		"  --format openmetrics      timestamps in seconds (default; "
		"decimals allowed)\n"
		"  --format prometheus       Prometheus text format: "
		"timestamps in milliseconds\n"
		"  --strict                  check every file first; import "
		"nothing if a line\n"
		"                            is bad (exit status 1)\n"
		"  --store-max-series N      as the agent's option (default "
		"100000)\n"
		"  --store-max-label-values N  as the agent's option "
		"(default 10000)\n"
		"  -q, --quiet               no progress, only errors and "
		"the summary\n"
		"  -h, --help                show this help\n"
		"\n"
		"Progress goes to standard error (every second on a "
		"terminal, every 10 s\n"
		"otherwise); the summary to standard output.\n"
		"\n"
		"Exit status: 0 when the import ran (skipped lines and "
		"refused samples are\n"
		"counted in the summary), 1 when it could not run or "
		"--strict found a bad\n"
		"line, 2 for bad usage.\n"
		"\n"
		"Example:\n"
		"  gpuwatch store import --data-dir /var/lib/gpuwatch "
		"node17-week.om\n",
		SHOW_MAX_ERRORS);
}

/* ---- lines ---- */

static void bad_line(struct import *im, const char *file, uint64_t line,
		     const char *why)
{
	im->bad_lines++;
	if (im->shown++ < SHOW_MAX_ERRORS)
		fprintf(stderr, "%s:%llu: %s\n", file, (unsigned long long)line,
			why);
	else if (im->shown == SHOW_MAX_ERRORS + 1)
		fprintf(stderr, "(further errors are only counted)\n");
}

static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       c == ':';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/*
 * The label block after '{': copies `a="x",b="y"` (no blanks, escapes
 * verbatim) to im->labels.  Returns the character after '}' or NULL.
 */
static const char *scan_labels(struct import *im, const char *p,
			       const char **why)
{
	bool first = true;

	gw_buf_reset(&im->labels);
	for (;;) {
		const char *n0;

		p = skip_blanks(p);
		if (*p == '}')
			return p + 1;
		if (!first) {
			if (*p != ',') {
				*why = "expected ',' or '}' in the labels";
				return NULL;
			}
			p = skip_blanks(p + 1);
			if (*p == '}')
				return p + 1;
		}
		if (!name_start(*p) || *p == ':') {
			*why = "bad label name";
			return NULL;
		}
		n0 = p;
		while (name_char(*p) && *p != ':')
			p++;
		if (!first)
			gw_buf_put(&im->labels, ",", 1);
		gw_buf_put(&im->labels, n0, (size_t)(p - n0));
		p = skip_blanks(p);
		if (*p != '=') {
			*why = "expected '=' after a label name";
			return NULL;
		}
		p = skip_blanks(p + 1);
		if (*p != '"') {
			*why = "a label value must be quoted";
			return NULL;
		}
		n0 = p++;
		while (*p && *p != '"') {
			if (*p == '\\') {
				if (p[1] != '\\' && p[1] != '"' &&
				    p[1] != 'n') {
					*why = "bad escape in a label value";
					return NULL;
				}
				p++;
			}
			p++;
		}
		if (*p != '"') {
			*why = "unterminated label value";
			return NULL;
		}
		p++;
		gw_buf_put(&im->labels, "=", 1);
		gw_buf_put(&im->labels, n0, (size_t)(p - n0));
		first = false;
	}
}

/* The next blank-separated token [*s, *e); false at the end of line. */
static bool token(const char **p, const char **s, const char **e)
{
	const char *q = skip_blanks(*p);

	if (!*q || *q == '#')
		return false;
	*s = q;
	while (*q && *q != ' ' && *q != '\t')
		q++;
	*e = q;
	*p = q;
	return true;
}

static int parse_value(const char *s, const char *e, double *v)
{
	char tmp[64], *end;
	size_t n = (size_t)(e - s);

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	*v = strtod(tmp, &end);
	if (*end || (errno == ERANGE && !isinf(*v) && *v != 0))
		return -EINVAL;
	return 0;
}

static int parse_time(const struct import *im, const char *s, const char *e,
		      int64_t *t)
{
	double ts;

	if (im->fmt == FMT_PROMETHEUS) {
		char tmp[32], *end;
		long long ms;

		if (e - s <= 0 || (size_t)(e - s) >= sizeof(tmp))
			return -EINVAL;
		memcpy(tmp, s, (size_t)(e - s));
		tmp[e - s] = '\0';
		errno = 0;
		ms = strtoll(tmp, &end, 10);
		if (*end || errno)
			return -EINVAL;
		*t = ms;
		return 0;
	}
	if (parse_value(s, e, &ts) || !isfinite(ts) || fabs(ts) > 9.2e15)
		return -EINVAL;
	/* As promtool converts it (Go's int64(ts * 1000) truncates), so that
	 * both stores hold the same millisecond. */
	*t = (int64_t)(ts * 1000.0);
	return 0;
}

static void progress(struct import *im, bool last)
{
	int64_t now = real_ms();

	if (im->quiet || im->check_only)
		return;
	if (!last && now - im->last_progress <
			     (im->tty ? PROGRESS_TTY_MS : PROGRESS_LOG_MS))
		return;
	im->last_progress = now;
	fprintf(stderr, "%simported %llu samples, %llu lines",
		im->tty ? "\r" : "", (unsigned long long)im->imported,
		(unsigned long long)im->lines);
	if (im->bytes_total)
		fprintf(stderr, " (%.0f%%)",
			100.0 * (double)im->bytes_done /
				(double)im->bytes_total);
	fprintf(stderr, "%s", im->tty && !last ? "" : "\n");
}

/* Appends one sample; counts what the store refuses. */
static void append(struct import *im, const char *file, uint64_t line,
		   const char *name, int64_t t, double v)
{
	int err;

	im->samples++;
	if (im->t_min > t)
		im->t_min = t;
	if (im->t_max < t)
		im->t_max = t;
	if (im->check_only)
		return;
	err = gw_store_append(im->store, name, im->labels.p, t, v);
	switch (err) {
	case 0:
		im->imported++;
		break;
	case -EDOM:
		im->refused_order++;
		break;
	case -ENOSPC:
	case -E2BIG:
		im->refused_cap++;
		break;
	case -ENOMEM:
		im->fatal = err;
		break;
	default:
		bad_line(im, file, line,
			 "the store refused the series name "
			 "or labels");
		break;
	}
}

/* One line; the text is NUL-terminated without its newline. */
static void parse_line(struct import *im, const char *file, uint64_t line,
		       char *p, size_t len, bool *eof)
{
	const char *why = NULL, *s, *e, *q;
	char name[256];
	size_t nlen;
	int64_t t;
	double v;

	if (strlen(p) != len) {
		bad_line(im, file, line, "NUL byte in the line");
		return;
	}
	if (*eof) {
		bad_line(im, file, line, "text after # EOF");
		return;
	}
	if (len == 0)
		return;
	if (p[0] == '#') {
		if (strcmp(p, "# EOF") == 0)
			*eof = true;
		return;
	}
	if (!name_start(p[0])) {
		bad_line(im, file, line, "expected a metric name");
		return;
	}
	q = p;
	while (name_char(*q))
		q++;
	nlen = (size_t)(q - p);
	if (nlen >= sizeof(name)) {
		bad_line(im, file, line, "metric name longer than 255 bytes");
		return;
	}
	memcpy(name, p, nlen);
	name[nlen] = '\0';
	if (*q == '{') {
		q = scan_labels(im, q + 1, &why);
		if (!q) {
			bad_line(im, file, line, why);
			return;
		}
	} else {
		gw_buf_reset(&im->labels);
	}
	gw_buf_put(&im->labels, "", 1);
	if (gw_buf_error(&im->labels)) {
		bad_line(im, file, line, "labels too long");
		return;
	}
	if (*q != ' ' && *q != '\t') {
		bad_line(im, file, line, "expected a blank before the value");
		return;
	}
	if (!token(&q, &s, &e) || parse_value(s, e, &v)) {
		bad_line(im, file, line, "bad or missing value");
		return;
	}
	if (!token(&q, &s, &e)) {
		bad_line(im, file, line,
			 "no timestamp (an import needs one per sample)");
		return;
	}
	if (parse_time(im, s, e, &t)) {
		bad_line(im, file, line,
			 im->fmt == FMT_OPENMETRICS
				 ? "bad timestamp (seconds expected)"
				 : "bad timestamp (integer milliseconds "
				   "expected)");
		return;
	}
	q = skip_blanks(q);
	if (*q && *q != '#') {
		bad_line(im, file, line, "unexpected text after the timestamp");
		return;
	}
	append(im, file, line, name, t, v);
}

static int import_file(struct import *im, const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	const char *shown = f == stdin ? "(standard input)" : path;
	char *buf = NULL;
	size_t cap = 0;
	uint64_t line = 0;
	bool eof = false;
	ssize_t n;
	int err = 0;

	if (!f) {
		fprintf(stderr, "gpuwatch store import: cannot open %s: %s\n",
			path, strerror(errno));
		return -errno;
	}
	while (!im->fatal && (n = getline(&buf, &cap, f)) >= 0) {
		line++;
		im->lines++;
		im->bytes_done += (uint64_t)n;
		if (n && buf[n - 1] == '\n')
			buf[--n] = '\0';
		if (n && buf[n - 1] == '\r')
			buf[--n] = '\0';
		if ((size_t)n > LINE_MAX_BYTES)
			bad_line(im, shown, line, "line longer than 1 MiB");
		else
			parse_line(im, shown, line, buf, (size_t)n, &eof);
		if ((im->lines & 0xffff) == 0) {
			if (!im->check_only &&
			    real_ms() - im->last_flush >= FLUSH_EVERY_MS) {
				im->last_flush = real_ms();
				err = gw_store_flush(im->store);
				if (err) {
					fprintf(stderr,
						"gpuwatch store import: "
						"writing the head log: %s\n",
						strerror(-err));
					break;
				}
			}
			progress(im, false);
		}
	}
	if (!err && im->fatal) {
		err = im->fatal;
		fprintf(stderr, "gpuwatch store import: %s:%llu: %s\n", shown,
			(unsigned long long)line, strerror(-err));
	}
	if (!err && ferror(f)) {
		err = -EIO;
		fprintf(stderr, "gpuwatch store import: reading %s: %s\n",
			shown, strerror(errno));
	}
	if (!err && im->fmt == FMT_OPENMETRICS && !eof)
		bad_line(im, shown, line + 1,
			 "no '# EOF' at the end (truncated file?)");
	free(buf);
	if (f != stdin)
		fclose(f);
	return err;
}

/* ---- the store ---- */

static int make_dirs(const char *dir)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The agent's lock on DIR (agent.c): -1 after saying why. */
static int lock_dir(const char *dir)
{
	char path[PATH_MAX + 16], pid[32];
	int fd, n, err = make_dirs(dir);

	if (err) {
		fprintf(stderr, "gpuwatch store import: cannot create %s: %s\n",
			dir, strerror(-err));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/agent.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		fprintf(stderr, "gpuwatch store import: cannot open %s: %s\n",
			path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		n = (int)pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr,
			"gpuwatch store import: %s is in use by an agent "
			"(pid %s); stop it first, or import into another "
			"--data-dir\n",
			dir, pid[0] ? pid : "?");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Cuts day by day from the first imported day to now, so that no cut
 * spans more than a day's partitions, then at the real time.
 */
static int cut_all(struct import *im)
{
	int64_t now = real_ms(), grace = 10000;
	int err = gw_store_flush(im->store);

	if (!err && im->imported) {
		int64_t d = im->t_min - im->t_min % MS_DAY + MS_DAY;

		im->use_fake = true;
		for (; !err && d <= now - grace && d <= im->t_max + MS_DAY;
		     d += MS_DAY) {
			im->fake = d + grace;
			err = gw_store_maintain(im->store);
		}
		im->use_fake = false;
	}
	if (!err)
		err = gw_store_maintain(im->store);
	return err;
}

static int open_store(struct import *im, const char *data_dir,
		      unsigned long long max_series,
		      unsigned long long max_values)
{
	struct gw_store_opts o;
	char dir[PATH_MAX], err[PATH_MAX * 2 + 128];
	int r;

	gw_store_opts_defaults(&o);
	snprintf(dir, sizeof(dir), "%s/store", data_dir);
	o.dir = dir;
	/* The agent applies its own retention and budget when it runs. */
	for (int t = 0; t < GW_TIERS; t++)
		o.retention_ms[t] = 100 * 366 * MS_DAY;
	o.disk_budget = 0;
	o.max_series = (uint32_t)max_series;
	o.max_values = (uint32_t)max_values;
	o.now = import_now;
	o.now_ctx = im;
	r = gw_store_open(&im->store, &o, err, sizeof(err));
	if (r)
		fprintf(stderr, "gpuwatch store import: %s\n", err);
	return r;
}

static void reset_counts(struct import *im)
{
	im->lines = im->samples = im->imported = im->bad_lines = 0;
	im->refused_order = im->refused_cap = 0;
	im->shown = 0;
	im->bytes_done = 0;
	im->t_min = INT64_MAX;
	im->t_max = INT64_MIN;
}

static void fmt_time(int64_t ms, char *out, size_t n)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&s, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(out, n, "%lld ms", (long long)ms);
}

static int run_files(struct import *im, char **files, int nfiles)
{
	int err = 0;

	for (int i = 0; i < nfiles && !err; i++)
		err = import_file(im, files[i]);
	return err;
}

int gw_cmd_store_import(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'f' },
		{ "strict", no_argument, NULL, 's' },
		{ "store-max-series", required_argument, NULL, 'S' },
		{ "store-max-label-values", required_argument, NULL, 'L' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long long max_series = 100000, max_values = 10000;
	const char *data_dir = "/var/lib/gpuwatch";
	struct import im = { .fmt = FMT_OPENMETRICS };
	int ch, lock_fd, status = 1, err;
	int64_t t0;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "qh", lopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return 0;
		case 'd':
			data_dir = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "openmetrics") == 0)
				im.fmt = FMT_OPENMETRICS;
			else if (strcmp(optarg, "prometheus") == 0)
				im.fmt = FMT_PROMETHEUS;
			else {
				fprintf(stderr,
					"gpuwatch store import: --format is "
					"openmetrics or prometheus, not "
					"'%s'\n",
					optarg);
				return 2;
			}
			break;
		case 's':
			im.strict = true;
			break;
		case 'q':
			im.quiet = true;
			break;
		case 'S':
		case 'L':
			if (gw_parse_uint(optarg, 1, 10000000,
					  ch == 'S' ? &max_series
						    : &max_values)) {
				fprintf(stderr,
					"gpuwatch store import: %s wants a "
					"number from 1 to 10000000\n",
					argv[optind - 1]);
				return 2;
			}
			break;
		default:
			fprintf(stderr,
				"gpuwatch store import: unknown or "
				"incomplete option '%s'\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	im.tty = isatty(2);
	/* The store's notes on closing each day are noise here. */
	if (!gw_log_enabled(GW_LOG_DEBUG))
		gw_log_set_level(GW_LOG_WARN);
	for (int i = optind; i < argc; i++) {
		struct stat st;

		if (strcmp(argv[i], "-") == 0)
			continue;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "gpuwatch store import: %s: %s\n",
				argv[i], strerror(errno));
			return 1;
		}
		im.bytes_total += (uint64_t)st.st_size;
	}
	lock_fd = lock_dir(data_dir);
	if (lock_fd < 0)
		return 1;
	gw_buf_init(&im.labels, 64u << 10);
	if (im.strict) {
		im.check_only = true;
		reset_counts(&im);
		err = run_files(&im, argv + optind, argc - optind);
		if (err || im.bad_lines) {
			fprintf(stderr,
				"gpuwatch store import: %llu bad line%s; "
				"nothing imported (--strict)\n",
				(unsigned long long)im.bad_lines,
				im.bad_lines == 1 ? "" : "s");
			goto out;
		}
		im.check_only = false;
	}
	reset_counts(&im);
	if (open_store(&im, data_dir, max_series, max_values))
		goto out;
	t0 = real_ms();
	im.last_flush = im.last_progress = t0;
	err = run_files(&im, argv + optind, argc - optind);
	if (im.tty)
		progress(&im, true);
	if (!err)
		err = cut_all(&im);
	if (err) {
		fprintf(stderr,
			"gpuwatch store import: %s; what was read is in the "
			"head log and replays when the store next opens\n",
			strerror(-err));
	} else {
		struct gw_store_stats st;
		char a[32] = "-", b[32] = "-";
		double secs = (double)(real_ms() - t0) / 1000.0;

		gw_store_stats(im.store, &st);
		if (im.samples) {
			fmt_time(im.t_min, a, sizeof(a));
			fmt_time(im.t_max, b, sizeof(b));
		}
		printf("imported %llu of %llu samples (%s to %s UTC) in "
		       "%.1f s, %.0f samples/s; %llu series in the store\n",
		       (unsigned long long)im.imported,
		       (unsigned long long)im.samples, a, b, secs,
		       secs > 0 ? (double)im.imported / secs : 0.0,
		       (unsigned long long)st.series);
		if (im.bad_lines || im.refused_order || im.refused_cap)
			printf("skipped: %llu bad lines, %llu samples out "
			       "of order or older than the store's data, "
			       "%llu over the series caps\n",
			       (unsigned long long)im.bad_lines,
			       (unsigned long long)im.refused_order,
			       (unsigned long long)im.refused_cap);
		status = 0;
	}
	gw_store_close(im.store);
out:
	gw_buf_release(&im.labels);
	close(lock_fd);
	return status;
}
