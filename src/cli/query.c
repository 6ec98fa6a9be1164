/* SPDX-License-Identifier: MIT */
/*
 * query.c - `gpuwatch query EXPR`: evaluates PromQL on a running agent
 * through its Prometheus API (libcurl) and prints the answer as a table, or
 * the API's JSON unchanged with --json.
 *
 * Exit status: 0 answered, 1 the agent refused or could not be reached,
 * 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/jv.h"
#include "common/buf.h"
#include "http/api.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

/* Until cli.h lists it. */
int gw_cmd_query(int argc, char **argv);

#define DEFAULT_URL	 "http://127.0.0.1:9400"
#define MAX_ANSWER	 (64u << 20)
#define LABELS_WIDTH_MAX 100

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch query [OPTION]... EXPR\n"
		"\n"
		"Evaluate the PromQL expression EXPR on a running agent "
		"through its Prometheus\n"
		"API (/api/v1/query, /api/v1/query_range) and print the result "
		"as a table.\n"
		"The agent answers from its local store (gpuwatch agent "
		"--data-dir).\n"
		"\n"
		"Options:\n"
		"  --time T\n"
		"      Evaluate at T (default: now).  T is RFC 3339 "
		"(2026-01-02T15:04:05Z,\n"
		"      2026-01-02T16:04:05.250+01:00), Unix seconds "
		"(1767366245.25), now, or\n"
		"      now-DURATION (now-15m).\n"
		"  --start T\n"
		"      Ask for a range query from T (default: one hour before "
		"--end).  Any of\n"
		"      --start, --end and --step makes the query a range: EXPR "
		"at start,\n"
		"      start+step, ... up to end, at most 11,000 steps.\n"
		"  --end T\n"
		"      The range's end (default: now).\n"
		"  --step D\n"
		"      The range's resolution (default: a 250th of the range, "
		"at least 1s).\n"
		"      D is seconds (15, 0.5) or a PromQL duration (30s, 5m, "
		"1h30m).\n"
		"  --timeout D\n"
		"      Ask the agent to give up after D (default and maximum: "
		"the agent's own\n"
		"      --query-timeout, 30s unless configured).\n"
		"  --tier raw|1m|1h\n"
		"      Read that tier for the whole query (default: raw\n"
		"      samples wherever kept, rollups only before that).\n"
		"  --url URL\n"
		"      The agent to ask (default: $GPUWATCH_URL, "
		"else " DEFAULT_URL ");\n"
		"      https://... for an agent with TLS "
		"(docs/security.md).\n" GW_CLIENT_USAGE "  --json\n"
		"      Print the API's JSON answer unchanged (errors too, "
		"still exiting 1).\n"
		"  --utc\n"
		"      Print times in UTC (default: local time with its UTC "
		"offset).\n"
		"  -h, --help\n"
		"      Show this help and exit.\n"
		"\n"
		"Output: an instant vector prints one line per series, its "
		"labels then its\n"
		"value; a range prints each series' labels, then one "
		"\"TIME  VALUE\" line per\n"
		"sample; a scalar or a string prints its value.  Warnings from "
		"the agent go to\n"
		"standard error.\n"
		"\n"
		"Exit status: 0 when the agent answered (also when nothing "
		"matched), 1 when it\n"
		"rejected the query or could not be reached, 2 for a bad "
		"option.\n"
		"\n"
		"Examples:\n"
		"  gpuwatch query gpuwatch_gpu_temperature_celsius\n"
		"  gpuwatch query 'max by (gpu) (gpuwatch_gpu_power_watts)' "
		"--start now-1h --step 1m\n"
		"  gpuwatch query --url http://node7:9400 --json "
		"'gpuwatch_gpu_up == 0'\n"
		"  gpuwatch query --url https://node7:9400 --ca-file ca.crt "
		"--user prometheus \\\n"
		"      --password-file /etc/gpuwatch/password up\n");
}

/* ---- printing ---- */

struct out_opts {
	bool utc;
};

/* name{a="x",b="y"} in the exposition's escaping. */
static int fmt_labels(const struct gw_jv *metric, struct gw_buf *b)
{
	const char *name = gw_jv_str(gw_jv_get(metric, "__name__"));
	bool first = true;
	int err;

	gw_buf_reset(b);
	if (name)
		gw_buf_puts(b, name);
	gw_buf_puts(b, "{");
	for (size_t i = 0; metric && metric->t == GW_JV_OBJ && i < metric->n;
	     i++) {
		const char *v = gw_jv_str(&metric->v[i]);

		if (strcmp(metric->k[i], "__name__") == 0 || !v)
			continue;
		gw_buf_putf(b, "%s%s=\"", first ? "" : ",", metric->k[i]);
		first = false;
		for (; *v; v++) {
			if (*v == '\\' || *v == '"')
				gw_buf_putf(b, "\\%c", *v);
			else if (*v == '\n')
				gw_buf_puts(b, "\\n");
			else
				gw_buf_put(b, v, 1);
		}
		gw_buf_puts(b, "\"");
	}
	gw_buf_puts(b, "}");
	err = gw_buf_error(b);
	/* name{} reads better as name */
	if (!err && name && first)
		gw_buf_truncate(b, b->len - 2);
	return err;
}

/* A sample time (float seconds) as ISO 8601, local or UTC. */
static void fmt_time(const struct gw_jv *t, bool utc, char *out, size_t n)
{
	double secs = t && t->t == GW_JV_NUM ? strtod(t->s, NULL) : NAN;
	long long ms;
	time_t tt;
	struct tm tm;
	char date[40], zone[8];

	if (!isfinite(secs) || fabs(secs) > 1e14) {
		snprintf(out, n, "%s", t && t->s ? t->s : "?");
		return;
	}
	ms = llround(secs * 1000);
	tt = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
	if (!(utc ? gmtime_r(&tt, &tm) : localtime_r(&tt, &tm))) {
		snprintf(out, n, "%s", t->s);
		return;
	}
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	if (utc) {
		snprintf(zone, sizeof(zone), "Z");
	} else {
		char z[8];

		strftime(z, sizeof(z), "%z", &tm); /* +0100 */
		snprintf(zone, sizeof(zone), "%.3s:%.2s", z, z + 3);
	}
	snprintf(out, n, "%s.%03lld%s", date, ms - (long long)tt * 1000, zone);
}

static const char *sample_value(const struct gw_jv *pair)
{
	const char *v = pair && pair->t == GW_JV_ARR && pair->n == 2
				? gw_jv_str(&pair->v[1])
				: NULL;

	return v ? v : "?";
}

static int print_vector(const struct gw_jv *result)
{
	struct gw_buf *keys;
	size_t width = 0;
	int err = 0;

	if (result->n == 0) {
		fprintf(stderr, "gpuwatch query: no series matched\n");
		return 0;
	}
	keys = calloc(result->n, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; !err && i < result->n; i++) {
		gw_buf_init(&keys[i], 1u << 20);
		err = fmt_labels(gw_jv_get(&result->v[i], "metric"), &keys[i]);
		if (!err && keys[i].len > width)
			width = keys[i].len;
	}
	if (width > LABELS_WIDTH_MAX)
		width = LABELS_WIDTH_MAX;
	for (size_t i = 0; !err && i < result->n; i++)
		printf("%-*s  %s\n", (int)width, keys[i].p,
		       sample_value(gw_jv_get(&result->v[i], "value")));
	for (size_t i = 0; i < result->n; i++)
		gw_buf_release(&keys[i]);
	free(keys);
	return err;
}

static int print_matrix(const struct gw_jv *result, const struct out_opts *o)
{
	struct gw_buf key;
	int err = 0;

	if (result->n == 0) {
		fprintf(stderr, "gpuwatch query: no series matched\n");
		return 0;
	}
	gw_buf_init(&key, 1u << 20);
	for (size_t i = 0; !err && i < result->n; i++) {
		const struct gw_jv *values = gw_jv_get(&result->v[i], "values");

		err = fmt_labels(gw_jv_get(&result->v[i], "metric"), &key);
		if (err)
			break;
		printf("%s%s\n", i ? "\n" : "", key.p);
		for (size_t k = 0;
		     values && values->t == GW_JV_ARR && k < values->n; k++) {
			const struct gw_jv *pt = &values->v[k];
			char when[64];

			fmt_time(pt->t == GW_JV_ARR && pt->n == 2 ? &pt->v[0]
								  : NULL,
				 o->utc, when, sizeof(when));
			printf("  %s  %s\n", when, sample_value(pt));
		}
	}
	gw_buf_release(&key);
	return err;
}

/* Prints a success answer; -EPROTO when it is not the API's shape. */
static int print_answer(const struct gw_jv *root, const struct out_opts *o)
{
	const struct gw_jv *data = gw_jv_get(root, "data");
	const char *type = gw_jv_str(gw_jv_get(data, "resultType"));
	const struct gw_jv *result = gw_jv_get(data, "result");

	if (!type || !result)
		return -EPROTO;
	if (strcmp(type, "vector") == 0 && result->t == GW_JV_ARR)
		return print_vector(result);
	if (strcmp(type, "matrix") == 0 && result->t == GW_JV_ARR)
		return print_matrix(result, o);
	if ((strcmp(type, "scalar") == 0 || strcmp(type, "string") == 0) &&
	    result->t == GW_JV_ARR && result->n == 2) {
		printf("%s\n", sample_value(result));
		return 0;
	}
	return -EPROTO;
}

/* ---- HTTP ---- */

struct request {
	const char *base;
	const struct gw_client *client;
	bool range;
	const char *query, *time, *start, *end, *step, *timeout, *tier;
};

/* POSTs the query; 0 with the HTTP status and body, or 1 after saying why
 * the agent could not be asked. */
static int ask(const struct request *rq, long *status, struct gw_buf *body)
{
	char url[2048];
	struct gw_buf form;
	CURL *c = curl_easy_init();
	int err;

	if (!c) {
		fprintf(stderr, "gpuwatch query: cannot start libcurl\n");
		return 1;
	}
	gw_buf_init(&form, 1u << 20);
	snprintf(url, sizeof(url), "%s/api/v1/%s", rq->base,
		 rq->range ? "query_range" : "query");
	gw_client_form_add(c, &form, "query", rq->query);
	gw_client_form_add(c, &form, "time", rq->time);
	gw_client_form_add(c, &form, "start", rq->start);
	gw_client_form_add(c, &form, "end", rq->end);
	gw_client_form_add(c, &form, "step", rq->step);
	gw_client_form_add(c, &form, "timeout", rq->timeout);
	gw_client_form_add(c, &form, "tier", rq->tier);
	err = gw_buf_error(&form);
	if (err) {
		fprintf(stderr, "gpuwatch query: the query is too large\n");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, form.p);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)form.len);
	gw_client_apply(rq->client, c);
	err = gw_client_perform(c, "gpuwatch query", rq->base, 600, body,
				status);
out:
	gw_buf_release(&form);
	curl_easy_cleanup(c);
	return err ? 1 : 0;
}

/* ---- options ---- */

static void fmt_secs(char *out, size_t n, int64_t ms)
{
	snprintf(out, n, "%s%lld.%03lld", ms < 0 ? "-" : "",
		 (long long)(ms < 0 ? -ms : ms) / 1000,
		 (long long)(ms < 0 ? -ms : ms) % 1000);
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

enum { O_TIME = 256, O_START, O_END, O_STEP, O_TIMEOUT, O_TIER, O_JSON, O_UTC };

int gw_cmd_query(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "time", required_argument, NULL, O_TIME },
		{ "start", required_argument, NULL, O_START },
		{ "end", required_argument, NULL, O_END },
		{ "step", required_argument, NULL, O_STEP },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "tier", required_argument, NULL, O_TIER },
		GW_CLIENT_LONGOPTS,
		{ "json", no_argument, NULL, O_JSON },
		{ "utc", no_argument, NULL, O_UTC },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *t_time = NULL, *t_start = NULL, *t_end = NULL;
	const char *step = NULL, *timeout = NULL, *base;
	char s_time[32], s_start[32], s_end[32], s_step[32];
	struct gw_client cl = { 0 };
	struct out_opts oo = { 0 };
	struct request rq = { 0 };
	struct gw_buf body;
	struct gw_jv root;
	bool json = false;
	int64_t now = wall_ms(), ms, start_ms, end_ms, d;
	long status = 0;
	int ch, rc = 1;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (ch) {
		case O_TIME:
			t_time = optarg;
			break;
		case O_START:
			t_start = optarg;
			break;
		case O_END:
			t_end = optarg;
			break;
		case O_STEP:
			step = optarg;
			break;
		case O_TIMEOUT:
			timeout = optarg;
			break;
		case O_TIER:
			rq.tier = optarg; /* the agent checks it */
			break;
		case O_JSON:
			json = true;
			break;
		case O_UTC:
			oo.utc = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (gw_client_opt(&cl, ch, optarg))
				break;
			fprintf(stderr,
				"gpuwatch query: bad option '%s'; see "
				"'gpuwatch query --help'\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr,
			"gpuwatch query: %s; see 'gpuwatch query "
			"--help'\n",
			optind >= argc ? "give one PromQL EXPR"
				       : "give exactly one EXPR (quote it)");
		return 2;
	}
	rq.query = argv[optind];
	rq.range = t_start || t_end || step;
	if (rq.range && t_time) {
		fprintf(stderr, "gpuwatch query: --time is for an instant "
				"query; a range takes --start, --end, "
				"--step\n");
		return 2;
	}
	if (t_time) {
		if (gw_client_parse_time("gpuwatch query", "--time", t_time,
					 now, &ms))
			return 2;
		fmt_secs(s_time, sizeof(s_time), ms);
		rq.time = s_time;
	}
	if (rq.range) {
		end_ms = now;
		if (t_end && gw_client_parse_time("gpuwatch query", "--end",
						  t_end, now, &end_ms))
			return 2;
		start_ms = end_ms - 3600 * 1000;
		if (t_start && gw_client_parse_time("gpuwatch query", "--start",
						    t_start, now, &start_ms))
			return 2;
		if (step) {
			if (gw_api_parse_duration(step, &d) || d <= 0) {
				fprintf(stderr,
					"gpuwatch query: --step '%s' is not a "
					"positive duration (15, 0.5, 30s, "
					"5m)\n",
					step);
				return 2;
			}
		} else {
			d = (end_ms - start_ms) / 250;
			d = d < 1000 ? 1000 : (d + 999) / 1000 * 1000;
			fmt_secs(s_step, sizeof(s_step), d);
			step = s_step;
		}
		fmt_secs(s_start, sizeof(s_start), start_ms);
		fmt_secs(s_end, sizeof(s_end), end_ms);
		rq.start = s_start;
		rq.end = s_end;
		rq.step = step;
	}
	if (timeout && (gw_api_parse_duration(timeout, &d) || d <= 0)) {
		fprintf(stderr,
			"gpuwatch query: --timeout '%s' is not a positive "
			"duration\n",
			timeout);
		return 2;
	}
	rq.timeout = timeout;
	if (gw_client_finish(&cl, "gpuwatch query", DEFAULT_URL))
		return 2;
	base = cl.base;
	rq.base = base;
	rq.client = &cl;

	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "gpuwatch query: cannot start libcurl\n");
		return 1;
	}
	gw_buf_init(&body, MAX_ANSWER);
	if (ask(&rq, &status, &body))
		goto out;
	if (json) {
		if (body.len)
			fwrite(body.p, 1, body.len, stdout);
		if (!body.len || body.p[body.len - 1] != '\n')
			putchar('\n');
	}
	if (!body.len || gw_jv_parse(body.p, body.len, &root)) {
		const char *b = body.len ? body.p : "";
		size_t line = strcspn(b, "\r\n");

		if (!json && !gw_client_explain("gpuwatch query", base, status))
			fprintf(stderr,
				"gpuwatch query: %s answered HTTP %ld, not the "
				"query API: %.*s\n",
				base, status, (int)(line > 200 ? 200 : line),
				b);
		goto out;
	}
	{
		const char *st = gw_jv_str(gw_jv_get(&root, "status"));
		const struct gw_jv *w = gw_jv_get(&root, "warnings");

		for (size_t i = 0; w && w->t == GW_JV_ARR && i < w->n; i++)
			if (gw_jv_str(&w->v[i]))
				fprintf(stderr, "gpuwatch query: warning: %s\n",
					w->v[i].s);
		if (st && strcmp(st, "success") == 0) {
			int e = json ? 0 : print_answer(&root, &oo);

			if (e == -EPROTO)
				fprintf(stderr,
					"gpuwatch query: unexpected answer "
					"from %s\n",
					base);
			else if (e)
				fprintf(stderr, "gpuwatch query: %s\n",
					strerror(-e));
			rc = e ? 1 : 0;
		} else if (!json) {
			const char *et =
				gw_jv_str(gw_jv_get(&root, "errorType"));
			const char *em = gw_jv_str(gw_jv_get(&root, "error"));

			fprintf(stderr, "gpuwatch query: %s: %s\n",
				et ? et : "error",
				em ? em : "the agent gave no reason");
		}
	}
	gw_jv_release(&root);
out:
	fflush(stdout);
	gw_buf_release(&body);
	curl_global_cleanup();
	gw_client_release(&cl);
	return rc;
}
