/* SPDX-License-Identifier: MIT */
/*
 * detect.c - `gpuwatch detect`: the agent's anomaly detector (the
 * dynamic baseline and the one-alert-per-episode decision of
 * pipeline/detect.h, with the agent's defaults) run over `timestamp,value`
 * CSV files (the Numenta Anomaly Benchmark's format) or over a series of
 * the local history, printing `timestamp,value,anomaly_score,alert` per
 * sample.  Users backtest on their own history what the agent would have
 * alerted on; bench/nab.sh scores it.
 *
 * Exit status: 0 done, 1 a file could not be read or held a bad line, the
 * agent could not be asked, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/buf.h"
#include "http/api.h"
#include "pipeline/detect.h"
#include "pipeline/tscsv.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

#define DEFAULT_URL "http://127.0.0.1:9400"
#define MAX_ANSWER  (256u << 20)
#define MAX_DEPTH   64

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch detect [OPTION]... FILE...\n"
		"       gpuwatch detect [OPTION]... --query EXPR [--start T] "
		"[--end T]\n"
		"                       [--url URL] [--ca-file FILE] [--user "
		"USER[:PASS]]...\n"
		"\n"
		"Run the agent's anomaly detector over recorded samples and "
		"print, for each\n"
		"sample, its anomaly score and whether an alert would have "
		"started there.\n"
		"The detector is the agent's own code with the agent's "
		"defaults: the dynamic\n"
		"baseline of every gauge (NAME:anomaly_score in the history) "
		"and the alert\n"
		"decision on its score, one alert per anomalous episode.  What "
		"it prints is\n"
		"what the agent would have scored and alerted on, had it seen "
		"these samples\n"
		"from its start.\n"
		"\n"
		"Input\n"
		"  FILE is CSV with one sample per line, TIMESTAMP,VALUE, as "
		"in the Numenta\n"
		"  Anomaly Benchmark's data files; '-' is standard input.  An "
		"optional header\n"
		"  line \"timestamp,value\", empty lines and lines starting "
		"with '#' are\n"
		"  skipped.  TIMESTAMP is \"YYYY-MM-DD HH:MM:SS\" with an "
		"optional fraction,\n"
		"  an optional T for the space and an optional Z or +HH:MM "
		"offset (none: UTC),\n"
		"  or Unix seconds.  VALUE is a number; NaN and Inf are read "
		"and ignored by\n"
		"  the detector (as the agent ignores them).  Samples must "
		"come "
		"in time order;\n"
		"  older ones are ignored.  A bad line stops that file with an "
		"error naming the\n"
		"  file, the line and the problem.\n"
		"\n"
		"Output\n"
		"  CSV on standard output (or one file per input with "
		"--output-dir): the\n"
		"  header \"timestamp,value,anomaly_score,alert\", then one "
		"row "
		"per sample, the\n"
		"  timestamp as it was read.  anomaly_score is 0 (usual) to 1 "
		"(far outside\n"
		"  what the series has done), empty while the model is still "
		"learning (the\n"
		"  first 64 samples, and after a silence of over 30 days) and "
		"for ignored\n"
		"  samples; a shorter silence keeps the model.  alert is 1 on "
		"the sample\n"
		"  where an anomalous episode starts, the sample at which the "
		"agent's alert\n"
		"  would fire, else 0.  An episode lasts at least 128 samples "
		"or a day,\n"
		"  whichever is shorter.  With several inputs on standard "
		"output each is\n"
		"  preceded by a line \"# FILE\".  A summary of each input "
		"(samples, judged,\n"
		"  episodes) goes to standard error.\n"
		"\n"
		"History\n"
		"  With --query, the raw samples of the series EXPR selects "
		"(a series selector\n"
		"  such as 'gpuwatch_gpu_power_watts{gpu=\"0\"}') from --start "
		"to --end are read\n"
		"  from a running agent's Prometheus API (EXPR[RANGE] at "
		"--end) and each series\n"
		"  is run through its own detector, in time order.  The rows "
		"of "
		"each series are\n"
		"  preceded by a line \"# NAME{LABELS}\"; timestamps are "
		"printed in UTC as\n"
		"  \"YYYY-MM-DD HH:MM:SS.fff\", which this command reads back. "
		" "
		"The agent keeps\n"
		"  raw samples for --retention-raw (24 h by default); "
		"beyond, there are none.\n"
		"\n"
		"Options:\n"
		"  --query EXPR\n"
		"      Read the samples of the series selector EXPR from the "
		"agent instead of\n"
		"      files.\n"
		"  --start T, --end T\n"
		"      The time range for --query (default: the hour before "
		"--end; --end\n"
		"      default: now).  T is RFC 3339 (2026-01-02T15:04:05Z), "
		"Unix "
		"seconds, now,\n"
		"      or now-DURATION (now-6h).\n"
		"  --url URL\n"
		"      The agent to ask with --query (default: $GPUWATCH_URL, "
		"else\n"
		"      " DEFAULT_URL "); https://... for an agent with TLS\n"
		"      (docs/security.md).  The options below reach a secured "
		"agent, as for\n"
		"      gpuwatch query.\n" GW_CLIENT_USAGE
		"  -o, --output-dir DIR\n"
		"      Write the rows of each input FILE to DIR/BASENAME "
		"(created if needed)\n"
		"      instead of standard output (with --query: "
		"DIR/query.csv).\n"
		"  --episodes\n"
		"      Print the episodes instead of the rows: onset, peak "
		"time, "
		"peak score and\n"
		"      end of each, one line each.\n"
		"  -q, --quiet\n"
		"      No summary on standard error.\n"
		"  -h, --help\n"
		"      Show this help and exit.\n"
		"\n"
		"Exit status: 0 when every input was read, 1 when one could "
		"not be read or\n"
		"held a bad line (the other inputs are still processed) or "
		"when the agent\n"
		"could not be asked or refused (e.g. HTTP 401 without --user), "
		"2 for bad\n"
		"usage.\n"
		"\n"
		"Examples:\n"
		"  gpuwatch detect data/realKnownCause/machine_temperature_"
		"system_failure.csv\n"
		"  gpuwatch detect -o scored/ data/*/*.csv\n"
		"  gpuwatch detect --query 'gpuwatch_gpu_temperature_celsius"
		"{gpu=\"3\"}' --start now-12h\n"
		"  gpuwatch detect --query 'gpuwatch_gpu_power_watts' --url "
		"https://node7:9400 \\\n"
		"      --ca-file ca.crt --user ops --password-file "
		"/etc/gpuwatch/password\n");
}

struct run {
	struct gw_detect_config cfg;
	bool episodes, quiet;
};

struct sink {
	FILE *f;
	const char *name;
};

static void print_episode(FILE *f, const struct gw_detect *d)
{
	struct gw_detect_episode ep;
	char on[40], pk[40], end[40];

	if (!gw_detect_episode(d, &ep))
		return;
	gw_tscsv_fmt_time(ep.onset_ms, on, sizeof(on));
	gw_tscsv_fmt_time(ep.peak_ms, pk, sizeof(pk));
	gw_tscsv_fmt_time(ep.end_ms, end, sizeof(end));
	fprintf(f, "%s,%s,%.6f,%s%s\n", on, pk, ep.peak, end,
		ep.active ? ",open" : "");
}

/* Scores one stream of lines from in; returns 0 or 1 (bad input). */
static int detect_stream(const struct run *r, FILE *in, const char *name,
			 FILE *out)
{
	struct gw_tscsv rd;
	struct gw_detect d;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t judged = 0;
	int rc = 0;

	gw_tscsv_init(&rd);
	gw_detect_init(&d);
	if (r->episodes)
		fprintf(out, "onset,peak_time,peak_score,end\n");
	else
		fprintf(out, "timestamp,value,anomaly_score,alert\n");
	while ((len = getline(&line, &cap, in)) >= 0) {
		enum gw_detect_event ev;
		int64_t t;
		double v, s;
		int k;

		if (len && line[len - 1] == '\n')
			len--;
		k = gw_tscsv_line(&rd, line, (size_t)len, &t, &v);
		if (k < 0) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", name,
				rd.err);
			rc = 1;
			break;
		}
		if (k == 0)
			continue;
		s = gw_detect_update(&d, &r->cfg, t, v, &ev);
		if (!isnan(s))
			judged++;
		if (r->episodes) {
			/* An episode is printed when it ends, or when the
			 * next one starts (END needs quiet samples). */
			if (ev == GW_DETECT_END)
				print_episode(out, &d);
			continue;
		}
		/* The sample as it was read (less a trailing '\r'). */
		if (line[len - 1] == '\r')
			len--;
		if (isnan(s))
			fprintf(out, "%.*s,,0\n", (int)len, line);
		else
			fprintf(out, "%.*s,%.6f,%d\n", (int)len, line, s,
				ev == GW_DETECT_ONSET);
	}
	if (r->episodes && d.active)
		print_episode(out, &d);
	if (ferror(in)) {
		fprintf(stderr, "gpuwatch detect: %s: read error: %s\n", name,
			strerror(errno));
		rc = 1;
	}
	if (!r->quiet)
		fprintf(stderr,
			"gpuwatch detect: %s: %llu samples, %llu judged, %u "
			"episodes\n",
			name, (unsigned long long)rd.samples,
			(unsigned long long)judged, d.episodes);
	free(line);
	return rc;
}

static int detect_file(const struct run *r, const char *path,
		       const char *outdir, bool banner)
{
	FILE *in = stdin, *out = stdout;
	char *opath = NULL;
	int rc;

	if (strcmp(path, "-") != 0) {
		in = fopen(path, "r");
		if (!in) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", path,
				strerror(errno));
			return 1;
		}
	}
	if (outdir) {
		const char *base = strrchr(path, '/');

		base = base ? base + 1 : path;
		if (strcmp(path, "-") == 0)
			base = "stdin.csv";
		if (asprintf(&opath, "%s/%s", outdir, base) < 0) {
			opath = NULL;
			rc = 1;
			goto out;
		}
		out = fopen(opath, "w");
		if (!out) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", opath,
				strerror(errno));
			rc = 1;
			goto out;
		}
	} else if (banner) {
		fprintf(out, "# %s\n", path);
	}
	rc = detect_stream(r, in, path, out);
	if (out != stdout && fclose(out) != 0) {
		fprintf(stderr, "gpuwatch detect: %s: %s\n", opath,
			strerror(errno));
		rc = 1;
	}
out:
	if (in != stdin)
		fclose(in);
	free(opath);
	return rc;
}

/* ---- --query: the raw samples of a running agent's history ---- */

/* A scanner over the API's JSON answer: just what the matrix answer
 * needs (strings, numbers as text, skipping anything else). */
struct js {
	const char *p, *end;
	int depth;
};

static void js_ws(struct js *j)
{
	while (j->p < j->end && strchr(" \t\r\n", *j->p))
		j->p++;
}

static bool js_is(struct js *j, char c)
{
	js_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

/* A string into out (NUL-terminated, cut at n - 1 bytes); \uXXXX
 * outside ASCII becomes '?', enough for labels shown in a comment. */
static int js_str(struct js *j, char *out, size_t n)
{
	size_t k = 0;

	if (!js_is(j, '"'))
		return -EINVAL;
	while (j->p < j->end && *j->p != '"') {
		char c = *j->p++;

		if (c == '\\') {
			if (j->p >= j->end)
				return -EINVAL;
			c = *j->p++;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'u') {
				unsigned long u;
				char h[5];

				if (j->end - j->p < 4)
					return -EINVAL;
				memcpy(h, j->p, 4);
				h[4] = '\0';
				u = strtoul(h, NULL, 16);
				j->p += 4;
				c = u < 0x80 ? (char)u : '?';
			} else if (c != '"' && c != '\\' && c != '/') {
				c = '?';
			}
		}
		if (out && k + 1 < n)
			out[k++] = c;
	}
	if (out && n)
		out[k] = '\0';
	return js_is(j, '"') ? 0 : -EINVAL;
}

static int js_skip(struct js *j)
{
	js_ws(j);
	if (j->p >= j->end || ++j->depth > MAX_DEPTH)
		return -EINVAL;
	if (*j->p == '"') {
		j->depth--;
		return js_str(j, NULL, 0);
	}
	if (*j->p == '{' || *j->p == '[') {
		char close = *j->p == '{' ? '}' : ']';

		j->p++;
		if (!js_is(j, close)) {
			do {
				if (close == '}' &&
				    (js_str(j, NULL, 0) || !js_is(j, ':')))
					return -EINVAL;
				if (js_skip(j))
					return -EINVAL;
			} while (js_is(j, ','));
			if (!js_is(j, close))
				return -EINVAL;
		}
		j->depth--;
		return 0;
	}
	{
		const char *s = j->p;

		while (j->p < j->end &&
		       strchr("+-.0123456789eEtruefalsn", *j->p))
			j->p++;
		j->depth--;
		return j->p > s ? 0 : -EINVAL;
	}
}

/* The number (or string) text of one value, e.g. a sample's time. */
static int js_scalar(struct js *j, char *out, size_t n)
{
	const char *s;

	js_ws(j);
	if (j->p < j->end && *j->p == '"')
		return js_str(j, out, n);
	s = j->p;
	while (j->p < j->end && strchr("+-.0123456789eE", *j->p))
		j->p++;
	if (j->p == s || (size_t)(j->p - s) >= n)
		return -EINVAL;
	memcpy(out, s, (size_t)(j->p - s));
	out[j->p - s] = '\0';
	return 0;
}

/* {"__name__":"x","gpu":"0"} as x{gpu="0"} (the name first wherever it
 * comes). */
static int js_metric(struct js *j, struct gw_buf *b)
{
	char k[256], v[1024], name[1024] = "";
	struct gw_buf lb;
	int err;

	gw_buf_reset(b);
	gw_buf_init(&lb, 1u << 16);
	if (!js_is(j, '{'))
		goto bad;
	if (!js_is(j, '}')) {
		do {
			if (js_str(j, k, sizeof(k)) || !js_is(j, ':') ||
			    js_str(j, v, sizeof(v)))
				goto bad;
			if (strcmp(k, "__name__") == 0)
				snprintf(name, sizeof(name), "%s", v);
			else
				(void)!gw_buf_printf(&lb, "%s%s=\"%s\"",
						     lb.len ? "," : "", k, v);
		} while (js_is(j, ','));
		if (!js_is(j, '}'))
			goto bad;
	}
	(void)!gw_buf_printf(b, "%s{%.*s}", name, (int)lb.len,
			     lb.p ? lb.p : "");
	(void)!gw_buf_add(b, "", 1);
	err = gw_buf_error(b) ? gw_buf_error(b) : gw_buf_error(&lb);
	gw_buf_release(&lb);
	return err;
bad:
	gw_buf_release(&lb);
	return -EINVAL;
}

/* GET BASE/api/v1/query?query=EXPR[RANGE]&time=END into body; 0, or 1
 * after saying why (an agent that wants a password included). */
static int fetch(const struct gw_client *cl, const char *expr, int64_t start_ms,
		 int64_t end_ms, struct gw_buf *body)
{
	const char *base = cl->base;
	char tm[40];
	struct gw_buf url;
	CURL *c = curl_easy_init();
	char *q = NULL, *sel = NULL;
	long status = 0;
	int err = 1;

	gw_buf_init(&url, 1u << 16);
	if (!c)
		goto out;
	if (asprintf(&sel, "%s[%lldms]", expr, (long long)(end_ms - start_ms)) <
	    0) {
		sel = NULL;
		goto out;
	}
	q = curl_easy_escape(c, sel, 0);
	snprintf(tm, sizeof(tm), "%lld.%03lld", (long long)(end_ms / 1000),
		 (long long)(end_ms % 1000));
	(void)!gw_buf_printf(&url, "%s/api/v1/query?query=%s&time=%s", base,
			     q ? q : "", tm);
	(void)!gw_buf_add(&url, "", 1);
	if (!q || gw_buf_error(&url)) {
		fprintf(stderr, "gpuwatch detect: the query is too large\n");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, url.p);
	gw_client_apply(cl, c);
	err = gw_client_perform(c, "gpuwatch detect", base, 600, body, &status);
	if (!err && gw_client_explain("gpuwatch detect", base, status))
		err = 1;
out:
	curl_free(q);
	free(sel);
	gw_buf_release(&url);
	curl_easy_cleanup(c);
	return err;
}

/* Runs a detector over the samples [[t,"v"],...] of one series. */
static int detect_values(const struct run *r, struct js *j, const char *id,
			 FILE *out)
{
	struct gw_detect d;
	uint64_t n = 0, judged = 0;

	gw_detect_init(&d);
	fprintf(out, "# %s\n", id);
	if (!r->episodes)
		fprintf(out, "timestamp,value,anomaly_score,alert\n");
	else
		fprintf(out, "onset,peak_time,peak_score,end\n");
	if (!js_is(j, '['))
		return -EINVAL;
	if (js_is(j, ']'))
		goto done;
	do {
		char ts[40], vs[64], tt[40];
		enum gw_detect_event ev;
		int64_t t;
		double v, s;

		if (!js_is(j, '[') || js_scalar(j, ts, sizeof(ts)) ||
		    !js_is(j, ',') || js_scalar(j, vs, sizeof(vs)) ||
		    !js_is(j, ']'))
			return -EINVAL;
		if (gw_api_parse_time(ts, &t))
			return -EINVAL;
		v = strtod(vs, NULL);
		s = gw_detect_update(&d, &r->cfg, t, v, &ev);
		n++;
		if (!isnan(s))
			judged++;
		if (r->episodes) {
			if (ev == GW_DETECT_END)
				print_episode(out, &d);
			continue;
		}
		gw_tscsv_fmt_time(t, tt, sizeof(tt));
		if (isnan(s))
			fprintf(out, "%s,%s,,0\n", tt, vs);
		else
			fprintf(out, "%s,%s,%.6f,%d\n", tt, vs, s,
				ev == GW_DETECT_ONSET);
	} while (js_is(j, ','));
	if (!js_is(j, ']'))
		return -EINVAL;
done:
	if (r->episodes && d.active)
		print_episode(out, &d);
	if (!r->quiet)
		fprintf(stderr,
			"gpuwatch detect: %s: %llu samples, %llu judged, %u "
			"episodes\n",
			id, (unsigned long long)n, (unsigned long long)judged,
			d.episodes);
	return 0;
}

/* The answer {"status":..,"data":{"resultType":"matrix","result":[..]}}. */
static int detect_answer(const struct run *r, const char *text, size_t len,
			 FILE *out)
{
	struct js j = { text, text + len, 0 };
	char key[64], status[32] = "", error[512] = "";
	struct gw_buf id;
	int err = -EINVAL, nseries = 0;

	gw_buf_init(&id, 1u << 16);
	if (!js_is(&j, '{'))
		goto bad;
	do {
		if (js_str(&j, key, sizeof(key)) || !js_is(&j, ':'))
			goto bad;
		if (strcmp(key, "status") == 0) {
			if (js_str(&j, status, sizeof(status)))
				goto bad;
		} else if (strcmp(key, "error") == 0) {
			if (js_str(&j, error, sizeof(error)))
				goto bad;
		} else if (strcmp(key, "data") == 0 && js_is(&j, '{')) {
			do {
				if (js_str(&j, key, sizeof(key)) ||
				    !js_is(&j, ':'))
					goto bad;
				if (strcmp(key, "result") != 0) {
					if (js_skip(&j))
						goto bad;
					continue;
				}
				if (!js_is(&j, '['))
					goto bad;
				if (js_is(&j, ']'))
					continue;
				do {
					if (!js_is(&j, '{'))
						goto bad;
					do {
						if (js_str(&j, key,
							   sizeof(key)) ||
						    !js_is(&j, ':'))
							goto bad;
						if (strcmp(key, "metric") == 0)
							err = js_metric(&j,
									&id);
						else if (strcmp(key,
								"values") == 0)
							err = detect_values(
								r, &j,
								id.p ? id.p
								     : "",
								out);
						else
							err = js_skip(&j);
						if (err)
							goto bad;
					} while (js_is(&j, ','));
					if (!js_is(&j, '}'))
						goto bad;
					nseries++;
				} while (js_is(&j, ','));
				if (!js_is(&j, ']'))
					goto bad;
			} while (js_is(&j, ','));
			if (!js_is(&j, '}'))
				goto bad;
		} else if (js_skip(&j)) {
			goto bad;
		}
	} while (js_is(&j, ','));
	if (strcmp(status, "success") != 0) {
		fprintf(stderr, "gpuwatch detect: the agent refused: %s\n",
			error[0] ? error : "no reason given");
		gw_buf_release(&id);
		return 1;
	}
	if (!nseries)
		fprintf(stderr, "gpuwatch detect: no series matched\n");
	gw_buf_release(&id);
	return 0;
bad:
	fprintf(stderr, "gpuwatch detect: the agent's answer is not a range "
			"of samples (EXPR must be a series selector)\n");
	gw_buf_release(&id);
	return 1;
}

static int detect_query(const struct run *r, const struct gw_client *cl,
			const char *expr, int64_t start_ms, int64_t end_ms,
			const char *outdir)
{
	struct gw_buf body;
	FILE *out = stdout;
	char *opath = NULL;
	int rc;

	if (outdir) {
		if (asprintf(&opath, "%s/query.csv", outdir) < 0)
			return 1;
		out = fopen(opath, "w");
		if (!out) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", opath,
				strerror(errno));
			free(opath);
			return 1;
		}
	}
	gw_buf_init(&body, MAX_ANSWER);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "gpuwatch detect: cannot start libcurl\n");
		rc = 1;
		goto out;
	}
	rc = fetch(cl, expr, start_ms, end_ms, &body);
	if (!rc && gw_buf_error(&body)) {
		fprintf(stderr,
			"gpuwatch detect: the answer is larger than "
			"%u MiB; ask for a shorter range\n",
			MAX_ANSWER >> 20);
		rc = 1;
	}
	if (!rc)
		rc = detect_answer(r, body.p ? body.p : "", body.len, out);
	curl_global_cleanup();
out:
	gw_buf_release(&body);
	if (out != stdout && fclose(out) != 0)
		rc = 1;
	free(opath);
	return rc;
}

enum { O_EPISODES = 256, O_QUERY, O_START, O_END };

int gw_cmd_detect(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output-dir", required_argument, NULL, 'o' },
		{ "episodes", no_argument, NULL, O_EPISODES },
		{ "query", required_argument, NULL, O_QUERY },
		{ "start", required_argument, NULL, O_START },
		{ "end", required_argument, NULL, O_END },
		GW_CLIENT_LONGOPTS,
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run r = { 0 };
	const char *outdir = NULL, *query = NULL, *start = NULL, *end = NULL;
	struct gw_client cl = { 0 };
	const char *agent_opt = NULL; /* the first of the client's options */
	int c, li = 0, rc = 0, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:qh", lo, &li)) != -1) {
		switch (c) {
		case 'o':
			outdir = optarg;
			break;
		case O_EPISODES:
			r.episodes = true;
			break;
		case O_QUERY:
			query = optarg;
			break;
		case O_START:
			start = optarg;
			break;
		case O_END:
			end = optarg;
			break;
		case 'q':
			r.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (gw_client_opt(&cl, c, optarg)) {
				if (!agent_opt)
					agent_opt = lo[li].name;
				break;
			}
			fprintf(stderr, "Try 'gpuwatch detect --help'.\n");
			return 2;
		}
	}
	if (query && optind < argc) {
		fprintf(stderr, "gpuwatch detect: FILE and --query do not go "
				"together\n");
		return 2;
	}
	if (!query && (start || end)) {
		fprintf(stderr, "gpuwatch detect: --start and --end need "
				"--query\n");
		return 2;
	}
	if (!query && agent_opt) {
		fprintf(stderr,
			"gpuwatch detect: --%s is for --query (the "
			"agent's history), not for FILEs\n",
			agent_opt);
		return 2;
	}
	if (query) {
		struct timespec ts;
		int64_t now, s_ms, e_ms;

		clock_gettime(CLOCK_REALTIME, &ts);
		now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (gw_client_parse_time("gpuwatch detect", "--end",
					 end ? end : "now", now, &e_ms) ||
		    (start && gw_client_parse_time("gpuwatch detect", "--start",
						   start, now, &s_ms)))
			return 2;
		if (!start)
			s_ms = e_ms - 3600000;
		if (s_ms >= e_ms) {
			fprintf(stderr, "gpuwatch detect: --start must be "
					"before --end\n");
			return 2;
		}
		if (gw_detect_config_init(&r.cfg, NULL))
			return 1;
		if (outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", outdir,
				strerror(errno));
			return 1;
		}
		if (gw_client_finish(&cl, "gpuwatch detect", DEFAULT_URL)) {
			gw_client_release(&cl);
			return 2;
		}
		rc = detect_query(&r, &cl, query, s_ms, e_ms, outdir);
		gw_client_release(&cl);
		return rc;
	}
	if (optind >= argc) {
		fprintf(stderr, "gpuwatch detect: no input (FILE... or "
				"--query EXPR)\n"
				"Try 'gpuwatch detect --help'.\n");
		return 2;
	}
	err = gw_detect_config_init(&r.cfg, NULL);
	if (err) {
		fprintf(stderr, "gpuwatch detect: %s\n", strerror(-err));
		return 1;
	}
	if (outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "gpuwatch detect: %s: %s\n", outdir,
			strerror(errno));
		return 1;
	}
	for (int i = optind; i < argc; i++)
		rc |= detect_file(&r, argv[i], outdir, argc - optind > 1);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "gpuwatch detect: standard output: %s\n",
			strerror(errno));
		rc = 1;
	}
	return rc;
}
