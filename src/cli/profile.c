/* SPDX-License-Identifier: MIT */
/*
 * profile.c - `gpuwatch profile`: the agent's stored CPU profiles through
 * /api/v1/profile (libcurl), printed as a top table, folded stacks or
 * written as pprof; and `gpuwatch profile regress`, which compares two
 * selections (e.g. two versions) and exits 1 when a function's share of
 * the samples grew beyond a threshold.
 *
 * Exit status: 0 done (regress: no regression), 1 regress found one,
 * 2 usage, connection or agent error.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/buf.h"
#include "http/api.h"
#include "store/profile.h"

#define DEFAULT_URL "http://127.0.0.1:9400"
#define MAX_ANSWER  (256u << 20)

struct popts {
	const struct gw_client *client; /* the agent: URL, TLS, basic auth */
	const char *match;		/* selector, or NULL */
	char pidsel[64];
	int64_t start_ms, end_ms;
	/* diff: another selector and/or another window */
	const char *base_match;
	int64_t base_start_ms, base_end_ms;
	bool diff;
	const char *pprof_file;
	bool folded;
	bool launches; /* type=launches: CUDA launch call paths */
	bool gpu_time; /* type=gpu_time: the same by their GPU time */
	size_t top;
	double threshold; /* regress: percentage points */
};

static void usage(FILE *f)
{
	fputs("Usage: gpuwatch profile [OPTION]... [--pid N | --match SEL]\n"
	      "       gpuwatch profile regress --base SEL --target SEL "
	      "[OPTION]...\n"
	      "\n"
	      "Print the CPU profile a running agent kept (every process "
	      "that matches,\n"
	      "merged over the window; default: the last hour) as a table of "
	      "the top\n"
	      "functions (flat: samples where the function runs itself; cum: "
	      "samples with\n"
	      "the function on the stack), as folded stacks, or write it as "
	      "gzip'd pprof\n"
	      "for `go tool pprof`.  The agent answers through "
	      "/api/v1/profile.\n"
	      "\n"
	      "SEL is a selector over the labels pid, comm, container_id, "
	      "pod_uid, job\n"
	      "and version, e.g. '{comm=\"python\"}' or 'version=\"1.3\"' "
	      "(braces optional).\n"
	      "\n"
	      "regress compares the --base selection with the --target one "
	      "over the same\n"
	      "window and lists the functions whose share of the samples grew "
	      "by more than\n"
	      "--threshold percentage points.\n"
	      "\n"
	      "Options:\n"
	      "  --pid N\n"
	      "      The process N (the selector {pid=\"N\"}).\n"
	      "  --match SEL\n"
	      "      The processes SEL selects (default: every process).\n"
	      "  --since DURATION\n"
	      "      The window: DURATION (5m, 1h, ...) before --end "
	      "(default: 1h).\n"
	      "  --start T, --end T\n"
	      "      The window's start (default: an hour before --end) and "
	      "end (default:\n"
	      "      now).  T is RFC 3339\n"
	      "      (2026-01-02T15:04:05Z), Unix seconds, now, or "
	      "now-DURATION (now-2h).\n"
	      "  --diff-base SEL|DURATION\n"
	      "      Compare with another selection SEL over the same "
	      "window, or with the\n"
	      "      same selection DURATION earlier; the table then shows "
	      "both shares and\n"
	      "      their difference.\n"
	      "  --top N\n"
	      "      Rows in the table (default 20).\n"
	      "  --folded\n"
	      "      Print folded stacks (\"main;train;matmul 75\"), one "
	      "line per stack.\n"
	      "  --pprof FILE\n"
	      "      Write gzip'd pprof to FILE ('-': standard output).\n"
	      "  --launches\n"
	      "      The call paths of CUDA kernel launches instead of CPU "
	      "samples (one\n"
	      "      launch in 16 is recorded, counted as 16); the kernel "
	      "each launches is\n"
	      "      the leaf ([kernel] NAME) where the CUPTI injection "
	      "library runs.\n"
	      "  --gpu-time\n"
	      "      The same call paths weighted by their kernels' GPU time "
	      "(nanoseconds,\n"
	      "      from CUPTI).\n"
	      "  --base SEL, --target SEL\n"
	      "      (regress) The two selections to compare.\n"
	      "  --threshold PERCENT\n"
	      "      (regress) The growth in percentage points that counts "
	      "(default 5).\n"
	      "  --url URL\n"
	      "      The agent to ask (default: $GPUWATCH_URL, else "
	      "" DEFAULT_URL ");\n"
	      "      https://... for an agent with TLS "
	      "(docs/security.md).\n" GW_CLIENT_USAGE "  -h, --help\n"
	      "      Show this help and exit.\n"
	      "\n"
	      "Exit status: 0 done (regress: no regression), 1 regress found "
	      "one, 2 for a\n"
	      "bad option, an agent that could not be reached or refused "
	      "(e.g. HTTP 401\n"
	      "without --user), or another error.\n"
	      "\n"
	      "Examples:\n"
	      "  gpuwatch profile --match '{comm=\"python\"}' --since 10m\n"
	      "  gpuwatch profile --pid 4242 --pprof cpu.pb.gz\n"
	      "  gpuwatch profile regress --base 'version=\"1.2\"' "
	      "--target 'version=\"1.3\"'\n"
	      "  gpuwatch profile --url https://node7:9400 --ca-file ca.crt "
	      "--user ops \\\n"
	      "      --password-file /etc/gpuwatch/password --folded\n",
	      f);
}

/* A selector with braces: 'version="1"' becomes '{version="1"}'. */
static void braced(const char *sel, char *out, size_t n)
{
	while (*sel == ' ')
		sel++;
	if (strchr(sel, '{'))
		snprintf(out, n, "%s", sel);
	else
		snprintf(out, n, "{%s}", sel);
}

/* Prints a JSON string's content (s after its opening quote), unescaped;
 * \uXXXX beyond ASCII as '?'. */
static void put_json_str(FILE *f, const char *s)
{
	for (; *s && *s != '"'; s++) {
		if (*s != '\\') {
			fputc(*s, f);
			continue;
		}
		s++;
		switch (*s) {
		case 'n':
			fputc('\n', f);
			break;
		case 't':
			fputc('\t', f);
			break;
		case 'u': {
			unsigned int v = 0;

			if (sscanf(s + 1, "%4x", &v) == 1 && strlen(s) >= 5)
				s += 4;
			fputc(v && v < 128 ? (int)v : '?', f);
			break;
		}
		case '\0':
			return;
		default:
			fputc(*s, f);
		}
	}
}

/*
 * POSTs to /api/v1/profile and adds the folded answer to column col of p.
 * 0, or 2 after saying why (the agent's own error message included).
 */
static int fetch(const struct popts *o, const char *match, int64_t start_ms,
		 int64_t end_ms, const char *format, struct gw_prof *p, int col,
		 struct gw_buf *raw)
{
	char url[2048], t[2][32], sel[1024];
	struct gw_buf form, body;
	CURL *c = curl_easy_init();
	long status = 0;
	int err = 2;

	if (!c) {
		fprintf(stderr, "gpuwatch profile: cannot start libcurl\n");
		return 2;
	}
	gw_buf_init(&form, 1u << 20);
	gw_buf_init(&body, MAX_ANSWER);
	snprintf(url, sizeof(url), "%s/api/v1/profile", o->client->base);
	snprintf(t[0], sizeof(t[0]), "%.3f", (double)start_ms / 1000);
	snprintf(t[1], sizeof(t[1]), "%.3f", (double)end_ms / 1000);
	if (match) {
		braced(match, sel, sizeof(sel));
		gw_client_form_add(c, &form, "match[]", sel);
	}
	gw_client_form_add(c, &form, "start", t[0]);
	gw_client_form_add(c, &form, "end", t[1]);
	gw_client_form_add(c, &form, "format", format);
	if (o->launches)
		gw_client_form_add(c, &form, "type", "launches");
	else if (o->gpu_time)
		gw_client_form_add(c, &form, "type", "gpu_time");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, form.p ? form.p : "");
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)form.len);
	gw_client_apply(o->client, c);
	if (gw_client_perform(c, "gpuwatch profile", o->client->base, 600,
			      &body, &status))
		goto out;
	if (status != 200 &&
	    gw_client_explain("gpuwatch profile", o->client->base, status))
		goto out;
	if (status != 200) {
		/* {"status":"error",...,"error":"MSG"}: print MSG */
		const char *m = body.p ? strstr(body.p, "\"error\":\"") : NULL;

		if (m) {
			fputs("gpuwatch profile: ", stderr);
			put_json_str(stderr, m + 9);
			fputc('\n', stderr);
		} else {
			fprintf(stderr,
				"gpuwatch profile: the agent answered HTTP "
				"%ld\n",
				status);
		}
		goto out;
	}
	if (raw) {
		if (gw_buf_add(raw, body.p ? body.p : "", body.len)) {
			fprintf(stderr, "gpuwatch profile: out of memory\n");
			goto out;
		}
	} else if (gw_prof_add_folded(p, body.p ? body.p : "", body.len, col)) {
		fprintf(stderr,
			"gpuwatch profile: the agent's answer is not folded "
			"stacks\n");
		goto out;
	}
	err = 0;
out:
	gw_buf_release(&form);
	gw_buf_release(&body);
	curl_easy_cleanup(c);
	return err;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void print_top(const struct gw_prof *p, size_t top, bool diff)
{
	struct gw_prof_fn *f = NULL;
	double tot[2] = { (double)gw_prof_total(p, 0),
			  (double)gw_prof_total(p, 1) };
	size_t n = 0;

	if (gw_prof_functions(p, 0, &f, &n)) {
		fprintf(stderr, "gpuwatch profile: out of memory\n");
		return;
	}
	if (!diff) {
		printf("%lld samples\n%10s %7s %10s %7s  %s\n",
		       (long long)tot[0], "flat", "flat%", "cum", "cum%",
		       "function");
		for (size_t i = 0; i < n && i < top; i++)
			printf("%10lld %6.2f%% %10lld %6.2f%%  %s\n",
			       (long long)f[i].flat[0],
			       tot[0] ? 100.0 * (double)f[i].flat[0] / tot[0]
				      : 0,
			       (long long)f[i].cum[0],
			       tot[0] ? 100.0 * (double)f[i].cum[0] / tot[0]
				      : 0,
			       f[i].name);
	} else {
		printf("%lld samples, base %lld\n%8s %8s %8s  %s\n",
		       (long long)tot[0], (long long)tot[1], "flat%", "base%",
		       "delta", "function");
		for (size_t i = 0; i < n && i < top; i++) {
			double a =
				tot[0] ? 100.0 * (double)f[i].flat[0] / tot[0]
				       : 0;
			double b =
				tot[1] ? 100.0 * (double)f[i].flat[1] / tot[1]
				       : 0;

			printf("%7.2f%% %7.2f%% %+7.2f  %s\n", a, b, a - b,
			       f[i].name);
		}
	}
	free(f);
}

/* Writes p as gzip'd pprof to path; 0 or 2. */
static int write_pprof(const struct gw_prof *p, const char *path)
{
	struct gw_buf b;
	FILE *f;
	int r = 2;

	gw_buf_init(&b, MAX_ANSWER);
	if (gw_prof_pprof(p, &b) || gw_buf_error(&b)) {
		fprintf(stderr, "gpuwatch profile: cannot encode pprof\n");
		goto out;
	}
	f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "gpuwatch profile: %s: %s\n", path,
			strerror(errno));
		goto out;
	}
	if (fwrite(b.p, 1, b.len, f) != b.len || (f != stdout && fclose(f))) {
		fprintf(stderr, "gpuwatch profile: %s: %s\n", path,
			strerror(errno));
		goto out;
	}
	r = 0;
out:
	gw_buf_release(&b);
	return r;
}

static int regress(const struct popts *o, const char *base, const char *target)
{
	struct gw_prof *p = gw_prof_new(0);
	struct gw_prof_fn *f = NULL;
	double tb, tt;
	size_t n = 0, found = 0;
	int r;

	if (!p)
		return 2;
	r = fetch(o, target, o->start_ms, o->end_ms, "folded", p, 0, NULL);
	if (!r)
		r = fetch(o, base, o->start_ms, o->end_ms, "folded", p, 1,
			  NULL);
	if (r)
		goto out;
	tt = (double)gw_prof_total(p, 0);
	tb = (double)gw_prof_total(p, 1);
	if (tt <= 0 || tb <= 0) {
		fprintf(stderr,
			"gpuwatch profile regress: no samples for the %s "
			"selection in the window\n",
			tb <= 0 ? "base" : "target");
		r = 2;
		goto out;
	}
	if (gw_prof_functions(p, 0, &f, &n)) {
		r = 2;
		goto out;
	}
	printf("base %.0f samples, target %.0f samples, threshold %.2f "
	       "points\n",
	       tb, tt, o->threshold);
	for (size_t i = 0; i < n; i++) {
		double a = 100.0 * (double)f[i].flat[0] / tt;
		double b = 100.0 * (double)f[i].flat[1] / tb;

		if (a - b > o->threshold) {
			if (!found++)
				printf("%8s %8s %8s  %s\n", "base%", "target%",
				       "delta", "function");
			printf("%7.2f%% %7.2f%% %+7.2f  %s\n", b, a, a - b,
			       f[i].name);
		}
	}
	if (found)
		printf("regression: %zu function%s grew by more than %.2f "
		       "points\n",
		       found, found == 1 ? "" : "s", o->threshold);
	else
		printf("no regression\n");
	r = found ? 1 : 0;
out:
	free(f);
	gw_prof_free(p);
	return r;
}

int gw_cmd_profile(int argc, char **argv)
{
	static const struct option longopts[] = {
		GW_CLIENT_LONGOPTS,
		{ "pid", required_argument, NULL, 'p' },
		{ "match", required_argument, NULL, 'm' },
		{ "since", required_argument, NULL, 's' },
		{ "start", required_argument, NULL, 'S' },
		{ "end", required_argument, NULL, 'E' },
		{ "diff-base", required_argument, NULL, 'd' },
		{ "folded", no_argument, NULL, 'f' },
		{ "top", required_argument, NULL, 't' },
		{ "pprof", required_argument, NULL, 'o' },
		{ "base", required_argument, NULL, 'b' },
		{ "target", required_argument, NULL, 'T' },
		{ "threshold", required_argument, NULL, 'x' },
		{ "launches", no_argument, NULL, 'L' },
		{ "gpu-time", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct popts o = { .top = 20, .threshold = 5 };
	struct gw_client cl = { 0 };
	const char *since = NULL, *start = NULL, *end = NULL, *dbase = NULL;
	const char *base = NULL, *target = NULL;
	bool is_regress = false;
	struct gw_prof *p = NULL;
	int64_t now;
	int c, r = 2;

	if (argc > 1 && strcmp(argv[1], "regress") == 0) {
		is_regress = true;
		argv++;
		argc--;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		char *e;

		switch (c) {
		case 'p': {
			unsigned long v = strtoul(optarg, &e, 10);

			if (*e || !*optarg || v == 0 || v > 4194304) {
				fprintf(stderr,
					"gpuwatch profile: --pid '%s' is not a "
					"process id\n",
					optarg);
				return 2;
			}
			snprintf(o.pidsel, sizeof(o.pidsel), "{pid=\"%lu\"}",
				 v);
			o.match = o.pidsel;
			break;
		}
		case 'm':
			o.match = optarg;
			break;
		case 's':
			since = optarg;
			break;
		case 'S':
			start = optarg;
			break;
		case 'E':
			end = optarg;
			break;
		case 'd':
			dbase = optarg;
			break;
		case 'f':
			o.folded = true;
			break;
		case 't': {
			unsigned long v = strtoul(optarg, &e, 10);

			if (*e || !*optarg || v == 0 || v > 100000) {
				fprintf(stderr,
					"gpuwatch profile: --top '%s' is not a "
					"count (1..100000)\n",
					optarg);
				return 2;
			}
			o.top = v;
			break;
		}
		case 'o':
			o.pprof_file = optarg;
			break;
		case 'b':
			base = optarg;
			break;
		case 'T':
			target = optarg;
			break;
		case 'x':
			o.threshold = strtod(optarg, &e);
			if (*e || !*optarg || o.threshold < 0 ||
			    o.threshold > 100) {
				fprintf(stderr,
					"gpuwatch profile: --threshold '%s' is "
					"not a percentage (0..100)\n",
					optarg);
				return 2;
			}
			break;
		case 'L':
			o.launches = true;
			break;
		case 'G':
			o.gpu_time = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (gw_client_opt(&cl, c, optarg))
				break;
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpuwatch profile: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	now = now_ms();
	o.end_ms = now;
	if (end && gw_client_parse_time("gpuwatch profile", "--end", end, now,
					&o.end_ms))
		return 2;
	if (since) {
		int64_t d;

		if (start) {
			fprintf(stderr, "gpuwatch profile: --since and --start "
					"exclude each other\n");
			return 2;
		}
		if (gw_api_parse_duration(since, &d) || d <= 0) {
			fprintf(stderr,
				"gpuwatch profile: --since '%s' is not a "
				"duration (5m, 1h, ...)\n",
				since);
			return 2;
		}
		o.start_ms = o.end_ms - d;
	} else if (start) {
		if (gw_client_parse_time("gpuwatch profile", "--start", start,
					 now, &o.start_ms))
			return 2;
	} else {
		o.start_ms = o.end_ms - 3600 * 1000;
	}
	if (gw_client_finish(&cl, "gpuwatch profile", DEFAULT_URL)) {
		gw_client_release(&cl);
		return 2;
	}
	o.client = &cl;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (is_regress) {
		if (!base || !target) {
			fprintf(stderr, "gpuwatch profile regress: --base and "
					"--target are required\n");
			r = 2;
			goto out;
		}
		r = regress(&o, base, target);
		goto out;
	}
	if (base || target) {
		fprintf(stderr, "gpuwatch profile: --base and --target belong "
				"to `gpuwatch profile regress`\n");
		goto out;
	}
	p = gw_prof_new(0);
	if (!p)
		goto out;
	r = fetch(&o, o.match, o.start_ms, o.end_ms, "folded", p, 0, NULL);
	if (r)
		goto out;
	if (dbase) {
		int64_t d;

		o.diff = true;
		if (gw_api_parse_duration(dbase, &d) == 0 && d > 0)
			r = fetch(&o, o.match, o.start_ms - d, o.end_ms - d,
				  "folded", p, 1, NULL);
		else
			r = fetch(&o, dbase, o.start_ms, o.end_ms, "folded", p,
				  1, NULL);
		if (r)
			goto out;
	}
	if (o.pprof_file) {
		r = write_pprof(p, o.pprof_file);
	} else if (o.folded) {
		struct gw_buf b;

		gw_buf_init(&b, MAX_ANSWER);
		gw_prof_folded(p, &b);
		if (gw_buf_error(&b)) {
			fprintf(stderr, "gpuwatch profile: out of memory\n");
		} else {
			fwrite(b.p ? b.p : "", 1, b.len, stdout);
			r = 0;
		}
		gw_buf_release(&b);
	} else {
		print_top(p, o.top, o.diff);
		r = 0;
	}
out:
	gw_prof_free(p);
	curl_global_cleanup();
	gw_client_release(&cl);
	return r;
}
