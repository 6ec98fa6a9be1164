// SPDX-License-Identifier: MIT
/*
 * test_api.c - the Prometheus query API as a client sees it: which times,
 * durations and forms are accepted, the exact error envelopes and messages
 * Prometheus gives, the success shapes, and the server around it (GET and
 * POST, repeated match[], body bound, 405, 503 without a store, a scrape
 * that is answered while a query is still running, and a query cut short
 * by gw_http_close).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "common/utf8.h"
#include "api_fx.c"
#include "expo_check.h"
#include "http/api.h"
#include "http/server.h"
#include "pipeline/metrics.h"

#define T0 1000000 /* ms: samples at T0, T0+10s, ..., T0+90s */

/* ---- times and durations ---- */

static void times_accepted(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} ok[] = {
		{ "1435781451.781", 1435781451781 },
		{ "1435781451", 1435781451000 },
		{ "0", 0 },
		{ "-1.5", -1500 },
		{ "1e3", 1000000 },
		{ "2015-07-01T20:10:51.781Z", 1435781451781 },
		{ "2015-07-01T20:10:51Z", 1435781451000 },
		{ "2015-07-01T22:10:51.781+02:00", 1435781451781 },
		{ "2015-07-01T15:40:51.781-04:30", 1435781451781 },
		{ "2015-07-01T20:10:51.7819999Z", 1435781451781 },
		{ "2015-07-01T20:10:51.5Z", 1435781451500 },
		{ "1970-01-01T00:00:00Z", 0 },
		{ "1969-12-31T23:59:59Z", -1000 },
		{ "2016-02-29T00:00:00Z", 1456704000000 },
		{ "2000-03-01T00:00:00+00:00", 951868800000 },
		{ "-292273086-05-16T16:47:06Z", GW_API_MIN_TIME },
		{ "292277025-08-18T07:12:54.999999999Z", GW_API_MAX_TIME },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = 42;
		int r = gw_api_parse_time(ok[i].s, &ms);

		if (r || ms != ok[i].ms)
			fail_msg("time \"%s\": r=%d ms=%lld, want %lld",
				 ok[i].s, r, (long long)ms,
				 (long long)ok[i].ms);
	}
}

static void times_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"abc",
		"now",
		" 1",
		"1 ",
		"NaN",
		"Inf",
		"-Inf",
		"1e300",
		"2015-07-01",
		"2015-07-01T20:10:51",
		"2015-07-01 20:10:51Z",
		"2015-07-01T20:10:51.Z",
		"2015-13-01T00:00:00Z",
		"2015-02-29T00:00:00Z",
		"2015-04-31T00:00:00Z",
		"2015-07-01T24:00:00Z",
		"2015-07-01T20:60:00Z",
		"2015-07-01T20:10:60Z",
		"2015-07-01T20:10:51+0200",
		"2015-07-01T20:10:51+24:00",
		"2015-07-01T20:10:51Zjunk",
		"15-07-01T20:10:51Z",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms = 42;

		if (gw_api_parse_time(bad[i], &ms) != -EINVAL || ms != 42)
			fail_msg("time \"%s\" was accepted as %lld", bad[i],
				 (long long)ms);
	}
	assert_int_equal(gw_api_parse_time(NULL, &(int64_t){ 0 }), -EINVAL);
}

static void durations(void **state)
{
	static const struct {
		const char *s;
		int r;
		int64_t ms;
	} cases[] = {
		{ "15", 0, 15000 },	 { "0.5", 0, 500 },
		{ "1e-3", 0, 1 },	 { "5m", 0, 300000 },
		{ "1h30m", 0, 5400000 }, { "250ms", 0, 250 },
		{ "-5", 0, -5000 },	 { "0", 0, 0 },
		{ "1d", 0, 86400000 },	 { "", -EINVAL, 0 },
		{ "5x", -EINVAL, 0 },	 { "abc", -EINVAL, 0 },
		{ "NaN", -EINVAL, 0 },	 { "1e20", -ERANGE, 0 },
		{ "-1e20", -ERANGE, 0 }, { "Inf", -ERANGE, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ms = 42;
		int r = gw_api_parse_duration(cases[i].s, &ms);

		if (r != cases[i].r || (r == 0 && ms != cases[i].ms))
			fail_msg("duration \"%s\": r=%d ms=%lld", cases[i].s, r,
				 (long long)ms);
	}
}

/* ---- forms ---- */

static void form_decoding(void **state)
{
	static const char body[] =
		"&query=rate(x%5B5m%5D)+*+2&&match[]=up&"
		"match%5B%5D=%7Bgpu%3D%220%22%7D&empty=&bare";
	struct gw_api_params p = { 0 };
	char err[128] = "";

	(void)state;
	assert_int_equal(gw_api_params_parse_form(&p, body, strlen(body), err,
						  sizeof(err)),
			 0);
	assert_int_equal(p.n, 5);
	assert_string_equal(gw_api_params_get(&p, "query"), "rate(x[5m]) * 2");
	assert_string_equal(p.v[1].name, "match[]");
	assert_string_equal(p.v[1].value, "up");
	assert_string_equal(p.v[2].name, "match[]");
	assert_string_equal(p.v[2].value, "{gpu=\"0\"}");
	/* The first value of a repeated name counts. */
	assert_string_equal(gw_api_params_get(&p, "match[]"), "up");
	assert_string_equal(gw_api_params_get(&p, "empty"), "");
	assert_string_equal(gw_api_params_get(&p, "bare"), "");
	assert_null(gw_api_params_get(&p, "time"));
	gw_api_params_release(&p);

	/* A decoded NUL stays in the value's length (a NUL in a query is a
	 * parse error, not its end). */
	{
		size_t len = 0;
		const char *v;

		assert_int_equal(gw_api_params_parse_form(&p, "query=foo%00bar",
							  15, err, sizeof(err)),
				 0);
		v = gw_api_params_get_len(&p, "query", &len);
		assert_int_equal(len, 7);
		assert_memory_equal(v, "foo\0bar", 8);
		assert_null(gw_api_params_get_len(&p, "none", &len));
		gw_api_params_release(&p);
	}

	assert_int_equal(gw_api_params_parse_form(&p, "a=1&b=%zz&c=3", 13, err,
						  sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "invalid URL escape \"%zz\"");
	assert_int_equal(
		gw_api_params_parse_form(&p, "x=%4", 4, err, sizeof(err)),
		-EINVAL);
	assert_string_equal(err, "invalid URL escape \"%4\"");
	gw_api_params_release(&p);
}

static void form_bounds(void **state)
{
	struct gw_api_params p = { 0 };
	size_t i;
	int r = 0;

	(void)state;
	for (i = 0; i <= GW_API_MAX_PARAMS && !r; i++)
		r = gw_api_params_add(&p, "match[]", "up");
	assert_int_equal(r, -ENOSPC);
	assert_int_equal(p.n, GW_API_MAX_PARAMS);
	gw_api_params_release(&p);
	assert_int_equal(p.n, 0);
	gw_api_params_release(NULL);
}

static void routes(void **state)
{
	static const struct {
		const char *path;
		int r;
		enum gw_api_endpoint ep;
	} cases[] = {
		{ "/api/v1/query", 0, GW_API_QUERY },
		{ "/api/v1/query_range", 0, GW_API_QUERY_RANGE },
		{ "/api/v1/series", 0, GW_API_SERIES },
		{ "/api/v1/labels", 0, GW_API_LABELS },
		{ "/api/v1/label/gpu/values", 0, GW_API_LABEL_VALUES },
		{ "/api/v1/label/__name__/values", 0, GW_API_LABEL_VALUES },
		{ "/api/v1/label//values", 0, GW_API_UNKNOWN },
		{ "/api/v1/label/a/b/values", 0, GW_API_UNKNOWN },
		{ "/api/v1/query/", 0, GW_API_UNKNOWN },
		{ "/api/v1/targets", 0, GW_API_UNKNOWN },
		{ "/api/v1", 0, GW_API_UNKNOWN },
		{ "/metrics", -ENOENT, 0 },
		{ "/api/v2/query", -ENOENT, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum gw_api_endpoint ep = GW_API_ENDPOINTS;
		int r = gw_api_route(cases[i].path, &ep);

		if (r != cases[i].r || (r == 0 && ep != cases[i].ep))
			fail_msg("%s: r=%d ep=%d", cases[i].path, r, (int)ep);
	}
	assert_string_equal(gw_api_endpoint_name(GW_API_QUERY_RANGE),
			    "query_range");
}

/* ---- requests against the fake store ---- */

static int setup(void **state)
{
	struct fix *x = calloc(1, sizeof(*x));
	size_t id;

	if (!x || gw_fakeq_new(&x->f))
		return -1;
	for (int g = 0; g < 2; g++) {
		char l[32];

		snprintf(l, sizeof(l), "gpu=\"%d\"", g);
		if (gw_fakeq_series(x->f, "temp", l, &id))
			return -1;
		for (int i = 0; i < 10; i++)
			if (gw_fakeq_sample(x->f, id, T0 + i * 10000,
					    50 + g * 10 + i))
				return -1;
	}
	if (gw_fakeq_series(x->f, "power", "gpu=\"0\",uuid=\"GPU-a\"", &id) ||
	    gw_fakeq_sample(x->f, id, T0, 1.5))
		return -1;
	gw_fakeq_queryable(x->f, &x->q);
	*state = x;
	return 0;
}

/* The reply's maximum for call(), when not 0 (GW_API_MAX_REPLY). */
static size_t reply_max;

/*
 * Runs path with "name=value" pairs (NULL-terminated) and returns the
 * status; the body goes to out (static, valid until the next call).
 */
static unsigned int call_opts(const struct gw_queryable *q,
			      const struct gw_api_opts *o, uint64_t arrival,
			      const char *path, const char **body, va_list ap)
{
	static char *last;
	struct gw_api_request rq = {
		.path = path,
		.now_ms = T0 + 95000,
		.arrival_ns = arrival,
	};
	unsigned int status;

	free(last);
	status = api_run(q, o, &rq, reply_max, &last, ap);
	*body = last;
	return status;
}

static unsigned int call(const struct gw_queryable *q, const char *path,
			 const char **body, ...)
{
	va_list ap;
	unsigned int s;

	va_start(ap, body);
	s = call_opts(q, NULL, 0, path, body, ap);
	va_end(ap);
	return s;
}

static unsigned int call_o(const struct gw_queryable *q,
			   const struct gw_api_opts *o, uint64_t arrival,
			   const char *path, const char **body, ...)
{
	va_list ap;
	unsigned int s;

	va_start(ap, body);
	s = call_opts(q, o, arrival, path, body, ap);
	va_end(ap);
	return s;
}

#define BAD(msg)                                                               \
	"{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":" msg "}"

static void query_parameter_errors(void **state)
{
	struct fix *x = *state;
	const char *b;

	assert_int_equal(call(&x->q, "/api/v1/query", &b, NULL), 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"query\\\": 1:1: "
				   "parse error: no expression found in "
				   "input\""));
	assert_int_equal(call(&x->q, "/api/v1/query", &b, "query=temp",
			      "time=yesterday", NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"time\\\": cannot "
				   "parse \\\"yesterday\\\" to a valid "
				   "timestamp\""));
	assert_int_equal(call(&x->q, "/api/v1/query", &b, "query=temp",
			      "timeout=soon", NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"timeout\\\": "
				   "cannot parse \\\"soon\\\" to a valid "
				   "duration\""));
	assert_int_equal(call(&x->q, "/api/v1/query", &b, "query=temp",
			      "timeout=0", NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"timeout\\\": "
				   "timeout must be positive\""));
	/* A parse error carries the parser's position and message. */
	assert_int_equal(
		call(&x->q, "/api/v1/query", &b, "query=sum(temp", NULL), 400);
	if (!strstr(b, "\"errorType\":\"bad_data\"") ||
	    !strstr(b, "\"error\":\"invalid parameter \\\"query\\\": 1:") ||
	    !strstr(b, "parse error"))
		fail_msg("parse error reply: %s", b);
	/* A NUL in the query is an unexpected character, as in Prometheus
	 * 2.42, never the end of the query. */
	{
		struct gw_api_params p = { 0 };
		struct gw_api_request rq = { .path = "/api/v1/query",
					     .params = &p,
					     .now_ms = T0 + 95000 };
		struct gw_api_reply r;
		char err[64];

		assert_int_equal(gw_api_params_parse_form(&p, "query=temp%00",
							  13, err, sizeof(err)),
				 0);
		gw_api_reply_init(&r);
		assert_int_equal(gw_api_handle(&x->q, NULL, &rq, &r), 0);
		assert_int_equal(r.status, 400);
		if (!strstr(r.body.p, "1:5: parse error: unexpected character: "
				      "'\\\\x00'"))
			fail_msg("NUL reply: %s", r.body.p);
		gw_api_reply_release(&r);
		gw_api_params_release(&p);
	}
}

static void query_range_parameter_errors(void **state)
{
	static const struct {
		const char *start, *end, *step, *msg;
	} cases[] = {
		{ NULL, "1000", "1",
		  "\"invalid parameter \\\"start\\\": cannot parse \\\"\\\" "
		  "to a valid timestamp\"" },
		{ "1000", "x", "1",
		  "\"invalid parameter \\\"end\\\": cannot "
		  "parse \\\"x\\\" to a valid timestamp\"" },
		{ "1000", "999", "1",
		  "\"invalid parameter \\\"end\\\": end "
		  "timestamp must not be before start "
		  "time\"" },
		{ "1000", "1010", "fast",
		  "\"invalid parameter \\\"step\\\": cannot parse "
		  "\\\"fast\\\" to a valid duration\"" },
		{ "1000", "1010", "1e20",
		  "\"invalid parameter \\\"step\\\": cannot parse "
		  "\\\"1e20\\\" to a valid duration. It overflows int64\"" },
		{ "1000", "1010", "0",
		  "\"invalid parameter \\\"step\\\": zero or negative query "
		  "resolution step widths are not accepted. Try a positive "
		  "integer\"" },
		{ "1000", "1010", "-1s",
		  "\"invalid parameter \\\"step\\\": cannot parse "
		  "\\\"-1s\\\" to a valid duration\"" },
		{ "0", "11001", "1",
		  "\"exceeded maximum resolution of 11,000 points per "
		  "timeseries. Try decreasing the query resolution "
		  "(?step=XX)\"" },
	};
	struct fix *x = *state;
	char s[64], e[64], st[64], want[512];
	const char *b;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(s, sizeof(s), "start=%s",
			 cases[i].start ? cases[i].start : "");
		snprintf(e, sizeof(e), "end=%s", cases[i].end);
		snprintf(st, sizeof(st), "step=%s", cases[i].step);
		snprintf(want, sizeof(want), BAD("%s"), cases[i].msg);
		assert_int_equal(
			call(&x->q, "/api/v1/query_range", &b, "query=temp",
			     cases[i].start ? s : "other=1", e, st, NULL),
			400);
		if (strcmp(b, want) != 0)
			fail_msg("case %zu:\n got %s\nwant %s", i, b, want);
	}
	/* 11,000 steps exactly is still allowed. */
	assert_int_equal(call(&x->q, "/api/v1/query_range", &b, "query=temp",
			      "start=0", "end=11000", "step=1", NULL),
			 200);
}

/* tier=raw|1m|1h reads that tier for the whole query; anything else is
 * bad_data; without it, raw first. */
static void tier_parameter(void **state)
{
	struct fix *x = *state;
	const struct gw_fakeq_stats *st = gw_fakeq_stats(x->f);
	const char *b;

	assert_int_equal(call(&x->q, "/api/v1/query_range", &b, "query=temp",
			      "start=1000", "end=1090", "step=60", NULL),
			 200);
	assert_int_equal(st->sel_tier, GW_TIER_RAW);
	assert_int_equal(call(&x->q, "/api/v1/query_range", &b, "query=temp",
			      "start=1000", "end=1090", "step=60", "tier=1m",
			      NULL),
			 200);
	assert_int_equal(st->sel_tier, GW_TIER_1M);
	assert_int_equal(call(&x->q, "/api/v1/query", &b, "query=temp",
			      "time=1000", "tier=1h", NULL),
			 200);
	assert_int_equal(st->sel_tier, GW_TIER_1H);
	assert_int_equal(call(&x->q, "/api/v1/query", &b, "query=temp",
			      "time=1000", "tier=5m", NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"tier\\\": must "
				   "be raw, 1m or 1h\""));
}

static void query_results(void **state)
{
	struct fix *x = *state;
	const char *b;

	assert_int_equal(call(&x->q, "/api/v1/query", &b,
			      "query=temp{gpu=\"1\"}", "time=1030", NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":{"
			       "\"resultType\":\"vector\",\"result\":[{"
			       "\"metric\":{\"__name__\":\"temp\","
			       "\"gpu\":\"1\"},\"value\":[1030,\"63\"]}]}}");
	/* Without time, the request's arrival time: the last sample. */
	assert_int_equal(
		call(&x->q, "/api/v1/query", &b, "query=temp{gpu=\"0\"}", NULL),
		200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":{"
			       "\"resultType\":\"vector\",\"result\":[{"
			       "\"metric\":{\"__name__\":\"temp\","
			       "\"gpu\":\"0\"},\"value\":[1095,\"59\"]}]}}");
	assert_int_equal(call(&x->q, "/api/v1/query", &b, "query=1 + 1.5",
			      "time=2015-07-01T20:10:51.781Z", NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":{"
			       "\"resultType\":\"scalar\",\"result\":"
			       "[1435781451.781,\"2.5\"]}}");
	assert_int_equal(call(&x->q, "/api/v1/query_range", &b,
			      "query=temp{gpu=\"0\"}", "start=1000", "end=1020",
			      "step=10s", NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":{"
			       "\"resultType\":\"matrix\",\"result\":[{"
			       "\"metric\":{\"__name__\":\"temp\","
			       "\"gpu\":\"0\"},\"values\":[[1000,\"50\"],"
			       "[1010,\"51\"],[1020,\"52\"]]}]}}");
}

static void query_failures(void **state)
{
	struct fix *x = *state;
	struct gw_api_opts o = { .max_samples = 3 };
	const char *b;

	/* Too many samples: Prometheus' "execution" class, HTTP 422. */
	assert_int_equal(call_o(&x->q, &o, 0, "/api/v1/query", &b,
				"query=temp[1m]", "time=1090", NULL),
			 422);
	if (!strstr(b, "\"errorType\":\"execution\""))
		fail_msg("too many samples: %s", b);
	/* A query that waited past its timeout before a worker took it. */
	assert_int_equal(
		call_o(&x->q, NULL, 1, "/api/v1/query", &b, "query=temp", NULL),
		503);
	assert_string_equal(b, "{\"status\":\"error\",\"errorType\":"
			       "\"timeout\",\"error\":\"query timed out in "
			       "query queue\"}");
	/* The store's own failure. */
	gw_fakeq_fail(x->f, -EIO);
	assert_int_equal(call(&x->q, "/api/v1/query", &b, "query=temp", NULL),
			 500);
	if (!strstr(b, "\"errorType\":\"internal\""))
		fail_msg("store failure: %s", b);
	gw_fakeq_fail(x->f, 0);
	/* A range vector is not a range query's result. */
	assert_int_equal(call(&x->q, "/api/v1/query_range", &b,
			      "query=temp[1m]", "start=1000", "end=1010",
			      "step=5", NULL),
			 400);
	if (!strstr(b, "range vector"))
		fail_msg("range vector in a range query: %s", b);
}

/* A result larger than the reply is refused whole, never cut: 422. */
static void reply_too_large(void **state)
{
	static const char want[] =
		"{\"status\":\"error\",\"errorType\":\"execution\",\"error\":"
		"\"the result is larger than 64 MiB; select fewer series or "
		"use a larger step\"}";
	struct fix *x = *state;
	const char *b;

	/* The error fits exactly; none of the answers below does. */
	reply_max = sizeof(want);
	assert_int_equal(call(&x->q, "/api/v1/query_range", &b, "query=temp",
			      "start=1000", "end=1090", "step=10s", NULL),
			 422);
	assert_string_equal(b, want);
	assert_int_equal(call(&x->q, "/api/v1/query", &b,
			      "query=\"a string longer than the reply can "
			      "hold, once it is wrapped in its envelope\"",
			      NULL),
			 422);
	assert_string_equal(b, want);
	assert_int_equal(call(&x->q, "/api/v1/series", &b,
			      "match[]={__name__=~\"temp|power\"}", NULL),
			 422);
	assert_string_equal(b, want);
	/* What fits is answered as usual. */
	assert_int_equal(call(&x->q, "/api/v1/label/gpu/values", &b, NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":"
			       "[\"0\",\"1\"]}");
	reply_max = 0;
}

static void series_and_labels(void **state)
{
	struct fix *x = *state;
	const char *b;

	assert_int_equal(call(&x->q, "/api/v1/series", &b, NULL), 400);
	assert_string_equal(b, BAD("\"no match[] parameter provided\""));
	assert_int_equal(call(&x->q, "/api/v1/series", &b,
			      "match[]={gpu=~\".*\"}", NULL),
			 400);
	/* Prometheus' parser words it, or the API's own check. */
	if (!strstr(b, "\"errorType\":\"bad_data\"") ||
	    !strstr(b, "\"error\":\"invalid parameter \\\"match[]\\\": ") ||
	    !strstr(b, "must contain at least one non-empty matcher\""))
		fail_msg("empty matcher: %s", b);
	assert_int_equal(
		call(&x->q, "/api/v1/series", &b, "match[]=temp{", NULL), 400);
	if (!strstr(b, "invalid parameter \\\"match[]\\\": 1:"))
		fail_msg("bad selector: %s", b);
	assert_int_equal(call(&x->q, "/api/v1/series", &b, "match[]=temp",
			      "start=x", NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"start\\\": cannot "
				   "parse \\\"x\\\" to a valid timestamp\""));

	/* Several match[] are a union. */
	assert_int_equal(call(&x->q, "/api/v1/series", &b,
			      "match[]=temp{gpu=\"1\"}", "match[]=power", NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":["
			       "{\"__name__\":\"power\",\"gpu\":\"0\","
			       "\"uuid\":\"GPU-a\"},"
			       "{\"__name__\":\"temp\",\"gpu\":\"1\"}]}");
	assert_int_equal(call(&x->q, "/api/v1/series", &b,
			      "match[]={__name__=~\"temp|power\"}", "limit=1",
			      NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":["
			       "{\"__name__\":\"power\",\"gpu\":\"0\","
			       "\"uuid\":\"GPU-a\"}],\"warnings\":["
			       "\"results truncated due to limit\"]}");
	assert_int_equal(call(&x->q, "/api/v1/series", &b, "match[]=temp",
			      "limit=-1", NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"limit\\\": limit "
				   "must be non-negative\""));
	assert_int_equal(call(&x->q, "/api/v1/series", &b, "match[]=temp",
			      "limit=ten", NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid parameter \\\"limit\\\": "
				   "strconv.Atoi: parsing \\\"ten\\\": "
				   "invalid syntax\""));

	assert_int_equal(call(&x->q, "/api/v1/labels", &b, NULL), 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":"
			       "[\"__name__\",\"gpu\",\"uuid\"]}");
	assert_int_equal(
		call(&x->q, "/api/v1/labels", &b, "match[]=temp", NULL), 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":"
			       "[\"__name__\",\"gpu\"]}");
	assert_int_equal(call(&x->q, "/api/v1/label/gpu/values", &b, NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":"
			       "[\"0\",\"1\"]}");
	assert_int_equal(call(&x->q, "/api/v1/label/__name__/values", &b,
			      "match[]={gpu=\"1\"}", NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":[\"temp\"]}");
	assert_int_equal(call(&x->q, "/api/v1/label/1gpu/values", &b, NULL),
			 400);
	assert_string_equal(b, BAD("\"invalid label name: \\\"1gpu\\\"\""));
	/* Series outside [start, end] are not listed. */
	assert_int_equal(call(&x->q, "/api/v1/label/__name__/values", &b,
			      "start=2000", NULL),
			 200);
	assert_string_equal(b, "{\"status\":\"success\",\"data\":[]}");
}

static void no_store_and_unknown(void **state)
{
	const char *b;

	(void)state;
	assert_int_equal(call(NULL, "/api/v1/query", &b, "query=up", NULL),
			 503);
	assert_string_equal(b, "{\"status\":\"error\",\"errorType\":"
			       "\"unavailable\",\"error\":\"no local store "
			       "(--data-dir)\"}");
	assert_int_equal(call(NULL, "/api/v1/targets", &b, NULL), 404);
	assert_string_equal(b, "{\"status\":\"error\",\"errorType\":"
			       "\"not_found\",\"error\":\"unknown API "
			       "endpoint \\\"/api/v1/targets\\\"\"}");
}

/* ---- the server ---- */

/* The fake behind a gate: a select() on "slow" waits until opened. */
struct gate {
	struct gw_queryable inner;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, open;
};

static int gated_select(void *ctx, const struct gw_matcher *m, size_t nm,
			int64_t mint, int64_t maxt, enum gw_tier tier,
			struct gw_query_limits *lim, struct gw_series_set *out)
{
	struct gate *g = ctx;

	for (size_t i = 0; i < nm; i++)
		if (strcmp(m[i].name, "__name__") == 0 &&
		    strcmp(m[i].value, "slow") == 0) {
			pthread_mutex_lock(&g->lock);
			g->entered = true;
			pthread_cond_broadcast(&g->cond);
			while (!g->open)
				pthread_cond_wait(&g->cond, &g->lock);
			pthread_mutex_unlock(&g->lock);
		}
	return g->inner.select(g->inner.ctx, m, nm, mint, maxt, tier, lim, out);
}

static enum gw_tier gated_pick(void *ctx, int64_t mint, int64_t maxt,
			       int64_t step)
{
	struct gate *g = ctx;

	return g->inner.pick_tier(g->inner.ctx, mint, maxt, step);
}

static int gated_series(void *ctx, const struct gw_matcher *const *sets,
			const size_t *nm, size_t nsets, int64_t mint,
			int64_t maxt, struct gw_query_limits *lim,
			struct gw_label_set_list *out)
{
	struct gate *g = ctx;

	return g->inner.series(g->inner.ctx, sets, nm, nsets, mint, maxt, lim,
			       out);
}

static int gated_values(void *ctx, const char *name,
			const struct gw_matcher *const *sets, const size_t *nm,
			size_t nsets, int64_t mint, int64_t maxt,
			struct gw_query_limits *lim, struct gw_string_list *out)
{
	struct gate *g = ctx;

	return g->inner.label_values(g->inner.ctx, name, sets, nm, nsets, mint,
				     maxt, lim, out);
}

struct answer {
	long status;
	char ctype[64];
	char allow[64];
	struct gw_buf body;
};

static size_t on_body(char *p, size_t size, size_t n, void *cls)
{
	struct answer *a = cls;

	return gw_buf_add(&a->body, p, size * n) ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *cls)
{
	struct answer *a = cls;
	size_t len = size * n;

	if (len > 7 && strncasecmp(p, "Allow: ", 7) == 0)
		snprintf(a->allow, sizeof(a->allow), "%.*s",
			 (int)strcspn(p + 7, "\r\n"), p + 7);
	return len;
}

/* One request; method NULL = GET, else the method with body (may be NULL);
 * chunked sends the body without a Content-Length. */
static void http_x(const char *url, const char *method, const char *ctype,
		   const char *body, size_t blen, bool chunked,
		   struct answer *a)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char *ct = NULL;
	char h[128];
	CURLcode rc;

	assert_non_null(c);
	memset(a, 0, sizeof(*a));
	gw_buf_init(&a->body, 1u << 20);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	/* A server that never answers fails the test instead of hanging it. */
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	if (method) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		if (body) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)blen);
		}
	}
	if (ctype) {
		snprintf(h, sizeof(h), "Content-Type: %s", ctype);
		hdr = curl_slist_append(hdr, h);
	}
	if (chunked)
		hdr = curl_slist_append(hdr, "Transfer-Encoding: chunked");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s %s (%zu bytes): %s", method ? method : "GET", url,
			 blen, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	snprintf(a->ctype, sizeof(a->ctype), "%s", ct ? ct : "");
	if (!a->body.p)
		assert_int_equal(gw_buf_add(&a->body, "", 0), 0);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
}

static void http(const char *url, const char *method, const char *ctype,
		 const char *body, size_t blen, struct answer *a)
{
	http_x(url, method, ctype, body, blen, false, a);
}

struct srv {
	struct gw_registry *reg;
	struct gw_http *h;
	char url[512];
};

static void srv_start(struct srv *s, const struct gw_queryable *q)
{
	char err[256];

	s->reg = gw_registry_new();
	assert_non_null(s->reg);
	s->h = gw_http_bind("127.0.0.1:0", s->reg, err, sizeof(err));
	if (!s->h)
		fail_msg("bind: %s", err);
	gw_http_set_queryable(s->h, q, NULL);
	if (gw_http_start(s->h, err, sizeof(err)))
		fail_msg("start: %s", err);
	snprintf(s->url, sizeof(s->url), "%s", gw_http_url(s->h));
}

static void srv_stop(struct srv *s)
{
	gw_http_close(s->h);
	gw_registry_free(s->reg);
}

static void server_methods_and_forms(void **state)
{
	struct fix *x = *state;
	struct gw_http_stats st;
	struct answer a;
	struct srv s;
	char url[700], *big;
	static const char form[] =
		"match[]=temp%7Bgpu%3D%221%22%7D&match[]=power";

	srv_start(&s, &x->q);
	/* GET with a repeated parameter in the query string. */
	snprintf(url, sizeof(url),
		 "%s/api/v1/series?match[]=temp%%7Bgpu%%3D%%221%%22%%7D"
		 "&match[]=power",
		 s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 200);
	assert_string_equal(a.ctype, "application/json");
	assert_string_equal(a.body.p,
			    "{\"status\":\"success\",\"data\":["
			    "{\"__name__\":\"power\",\"gpu\":\"0\","
			    "\"uuid\":\"GPU-a\"},"
			    "{\"__name__\":\"temp\",\"gpu\":\"1\"}]}");
	gw_buf_release(&a.body);
	/* The same as a POST form, as Grafana and promtool send it. */
	snprintf(url, sizeof(url), "%s/api/v1/series", s.url);
	http(url, "POST", "application/x-www-form-urlencoded", form,
	     strlen(form), &a);
	assert_int_equal(a.status, 200);
	assert_non_null(strstr(a.body.p, "\"gpu\":\"1\""));
	assert_non_null(strstr(a.body.p, "\"uuid\":\"GPU-a\""));
	gw_buf_release(&a.body);
	/* Body first, then the query string: the body's query counts. */
	snprintf(url, sizeof(url), "%s/api/v1/query?query=temp&time=1000",
		 s.url);
	http(url, "POST", "application/x-www-form-urlencoded", "query=power",
	     11, &a);
	assert_int_equal(a.status, 200);
	assert_non_null(strstr(a.body.p, "\"__name__\":\"power\""));
	gw_buf_release(&a.body);
	/* Other methods. */
	http(url, "PUT", NULL, NULL, 0, &a);
	assert_int_equal(a.status, 405);
	assert_string_equal(a.allow, "GET, POST");
	gw_buf_release(&a.body);
	/* A body of another type, and one past 64 KiB. */
	http(url, "POST", "application/json", "{}", 2, &a);
	assert_int_equal(a.status, 400);
	assert_non_null(strstr(a.body.p, "unsupported Content-Type"));
	gw_buf_release(&a.body);
	big = malloc(GW_API_MAX_BODY + 2);
	assert_non_null(big);
	memcpy(big, "query=", 6);
	memset(big + 6, '!', GW_API_MAX_BODY - 5);
	http(url, "POST", "application/x-www-form-urlencoded", big,
	     GW_API_MAX_BODY + 1, &a);
	assert_int_equal(a.status, 413);
	assert_non_null(strstr(a.body.p, "\"errorType\":\"bad_data\""));
	gw_buf_release(&a.body);
	/* Chunked, the size shows only as the body comes. */
	http_x(url, "POST", "application/x-www-form-urlencoded", big,
	       GW_API_MAX_BODY + 1, true, &a);
	assert_int_equal(a.status, 413);
	gw_buf_release(&a.body);
	/* Exactly 64 KiB is read (and is a parse error, not a size one). */
	http(url, "POST", "application/x-www-form-urlencoded", big,
	     GW_API_MAX_BODY, &a);
	assert_int_equal(a.status, 400);
	assert_non_null(strstr(a.body.p, "invalid parameter \\\"query\\\""));
	gw_buf_release(&a.body);
	free(big);
	snprintf(url, sizeof(url), "%s/api/v1/query?query=%%zz", s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 400); /* MHD keeps a bad escape as is */
	gw_buf_release(&a.body);
	http(url, "POST", NULL, "query=%zz", 9, &a);
	assert_int_equal(a.status, 400);
	assert_non_null(strstr(a.body.p, "error parsing form values: invalid "
					 "URL escape \\\"%zz\\\""));
	gw_buf_release(&a.body);

	gw_http_stats(s.h, &st);
	assert_true(st.api_requests[GW_API_SERIES] == 2);
	assert_true(st.api_requests[GW_API_QUERY] == 8);
	assert_true(st.api_errors[GW_API_QUERY] == 7);
	srv_stop(&s);
}

/* Every byte of s is part of a well-formed UTF-8 sequence, and no control
 * character is left unescaped: what a JSON parser needs. */
static void assert_json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; p[i];) {
		size_t l = gw_utf8_len(p + i, SIZE_MAX, NULL);

		if (!l || p[i] < 0x20)
			fail_msg("byte %zu (0x%02x) of %s", i, p[i], s);
		i += l;
	}
}

/* Invalid UTF-8 in a query, a parameter or a label value never makes the
 * reply invalid JSON: U+FFFD as Go writes it, or \xNN where Prometheus
 * quotes a parameter with %q. */
static void invalid_utf8_never_in_json(void **state)
{
	struct fix *x = *state;
	struct answer a;
	struct srv s;
	char url[700];
	size_t id;
	static const char *const queries[] = {
		"foo%FF",
		"sum(%FF%FE)",
		"foo%7Ba%3D%22%FF%22%7D",
		"%22a%FFb",
		"foo%7Bx%3D~%22%FF%22%7D",
		"foo%7Bx%3D~%22(%E2%82%22%7D",
		"rate(x%C0%AF%5B5m%5D)",
	};

	assert_int_equal(gw_fakeq_series(x->f, "bad",
					 "comm=\"a\xff\xe2\x82"
					 "b\"",
					 &id),
			 0);
	assert_int_equal(gw_fakeq_sample(x->f, id, T0, 1), 0);
	gw_fakeq_queryable(x->f, &x->q);
	srv_start(&s, &x->q);
	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		snprintf(url, sizeof(url), "%s/api/v1/query?query=%s&time=1000",
			 s.url, queries[i]);
		http(url, NULL, NULL, NULL, 0, &a);
		assert_int_equal(a.status, 400);
		assert_non_null(strstr(a.body.p, "\"errorType\":\"bad_data\""));
		assert_json_text(a.body.p);
		gw_buf_release(&a.body);
	}
	snprintf(url, sizeof(url),
		 "%s/api/v1/query?query=1&time=a%%FFb%%C3%%A9", s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 400);
	assert_json_text(a.body.p);
	assert_non_null(strstr(a.body.p,
			       "cannot parse \\\"a\\\\xffb\xc3\xa9\\\" "
			       "to a valid timestamp"));
	gw_buf_release(&a.body);
	/* A stored value that is not UTF-8 comes out as U+FFFD per byte. */
	snprintf(url, sizeof(url), "%s/api/v1/series?match[]=bad", s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 200);
	assert_json_text(a.body.p);
	assert_non_null(
		strstr(a.body.p, "\"comm\":\"a\\ufffd\\ufffd\\ufffdb\""));
	gw_buf_release(&a.body);
	srv_stop(&s);
}

static void server_without_store(void **state)
{
	struct answer a;
	struct srv s;
	char url[600];

	(void)state;
	srv_start(&s, NULL);
	snprintf(url, sizeof(url), "%s/api/v1/query?query=up", s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 503);
	assert_string_equal(a.ctype, "application/json");
	assert_string_equal(a.body.p,
			    "{\"status\":\"error\",\"errorType\":"
			    "\"unavailable\",\"error\":\"no local store "
			    "(--data-dir)\"}");
	gw_buf_release(&a.body);
	/* The rest of the server is as before. */
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	http(url, "POST", NULL, "x=1", 3, &a);
	assert_int_equal(a.status, 405);
	assert_string_equal(a.allow, "GET, HEAD");
	gw_buf_release(&a.body);
	srv_stop(&s);
}

struct slow_call {
	char url[600];
	struct answer a;
	bool done;
	pthread_mutex_t *lock;
};

static void *slow_query(void *arg)
{
	struct slow_call *c = arg;

	http(c->url, NULL, NULL, NULL, 0, &c->a);
	pthread_mutex_lock(c->lock);
	c->done = true;
	pthread_mutex_unlock(c->lock);
	return NULL;
}

static void scrape_during_query(void **state)
{
	struct fix *x = *state;
	struct gate g = { .inner = x->q };
	struct gw_queryable q = {
		.ctx = &g,
		.pick_tier = gated_pick,
		.select = gated_select,
		.series = gated_series,
		.label_values = gated_values,
	};
	struct slow_call c = { 0 };
	struct answer a;
	pthread_t t;
	struct srv s;
	char url[600];
	size_t id;
	bool done;

	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	assert_int_equal(gw_fakeq_series(x->f, "slow", "", &id), 0);
	assert_int_equal(gw_fakeq_sample(x->f, id, T0, 7), 0);
	srv_start(&s, &q);
	snprintf(c.url, sizeof(c.url), "%s/api/v1/query?query=slow&time=1000",
		 s.url);
	c.lock = &g.lock;
	assert_int_equal(pthread_create(&t, NULL, slow_query, &c), 0);
	pthread_mutex_lock(&g.lock);
	while (!g.entered)
		pthread_cond_wait(&g.cond, &g.lock);
	pthread_mutex_unlock(&g.lock);

	/* The query is inside the store; a scrape and a health check and
	 * another query are answered all the same. */
	snprintf(url, sizeof(url), "%s/metrics", s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 200);
	assert_unique_series(a.body.p ? a.body.p : "");
	gw_buf_release(&a.body);
	snprintf(url, sizeof(url), "%s/healthz", s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 200);
	gw_buf_release(&a.body);
	snprintf(url, sizeof(url), "%s/api/v1/labels", s.url);
	http(url, NULL, NULL, NULL, 0, &a);
	assert_int_equal(a.status, 200);
	gw_buf_release(&a.body);
	pthread_mutex_lock(&g.lock);
	done = c.done;
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	assert_false(done);

	pthread_join(t, NULL);
	assert_int_equal(c.a.status, 200);
	assert_string_equal(c.a.body.p,
			    "{\"status\":\"success\",\"data\":{"
			    "\"resultType\":\"vector\",\"result\":[{"
			    "\"metric\":{\"__name__\":\"slow\"},"
			    "\"value\":[1000,\"7\"]}]}}");
	gw_buf_release(&c.a.body);
	srv_stop(&s);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}

/*
 * The fake behind a select() that holds a query until the server cancels
 * it, as the store gives up once lim->cancel is set.  It gives up waiting
 * after a minute and answers, so a server that never cancels fails the
 * test with a 200 rather than hanging it.
 */
struct hold {
	struct gw_queryable inner;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int entered;
	bool had_cancel;
};

static int held_select(void *ctx, const struct gw_matcher *m, size_t nm,
		       int64_t mint, int64_t maxt, enum gw_tier tier,
		       struct gw_query_limits *lim, struct gw_series_set *out)
{
	const struct timespec tick = { 0, 1000000 };
	struct hold *g = ctx;

	pthread_mutex_lock(&g->lock);
	g->entered++;
	g->had_cancel = lim->cancel != NULL;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	/* Nothing wakes a store reading chunks: it checks the flag as it
	 * goes, and so does this. */
	for (int i = 0; i < 60000 && lim->cancel; i++) {
		if (atomic_load(lim->cancel))
			return -ECANCELED;
		nanosleep(&tick, NULL);
	}
	return g->inner.select(g->inner.ctx, m, nm, mint, maxt, tier, lim, out);
}

static enum gw_tier held_pick(void *ctx, int64_t mint, int64_t maxt,
			      int64_t step)
{
	struct hold *g = ctx;

	return g->inner.pick_tier(g->inner.ctx, mint, maxt, step);
}

struct bg_call {
	char url[600];
	struct answer a;
	CURLcode rc;
};

/* A GET in its own thread; its outcome is judged by the main thread. */
static void *bg_get(void *arg)
{
	struct bg_call *c = arg;
	CURL *h = curl_easy_init();

	memset(&c->a, 0, sizeof(c->a));
	gw_buf_init(&c->a.body, 1u << 20);
	c->rc = CURLE_FAILED_INIT;
	if (!h)
		return NULL;
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->a);
	c->rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->a.status);
	if (!c->a.body.p && gw_buf_add(&c->a.body, "", 0))
		c->rc = CURLE_OUT_OF_MEMORY;
	curl_easy_cleanup(h);
	return NULL;
}

static void close_during_query(void **state)
{
	struct fix *x = *state;
	struct hold g = { .inner = x->q };
	struct gw_queryable q = {
		.ctx = &g,
		.pick_tier = held_pick,
		.select = held_select,
		.series = x->q.series,
		.label_values = x->q.label_values,
	};
	struct gw_http_stats st;
	struct bg_call c[2];
	pthread_t t[2];
	struct srv s;

	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	srv_start(&s, &q);
	/* Two queries, an instant and a range one, both held in the store. */
	snprintf(c[0].url, sizeof(c[0].url),
		 "%s/api/v1/query?query=temp&time=1000", s.url);
	snprintf(c[1].url, sizeof(c[1].url),
		 "%s/api/v1/query_range?query=temp&start=1000&end=1090&step=10",
		 s.url);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, bg_get, &c[i]), 0);
	pthread_mutex_lock(&g.lock);
	while (g.entered < 2)
		pthread_cond_wait(&g.cond, &g.lock);
	pthread_mutex_unlock(&g.lock);
	assert_true(g.had_cancel);
	gw_http_stats(s.h, &st);
	assert_true(st.api_in_flight == 2);

	/* Closing cancels them; each client reads the 503 envelope. */
	srv_stop(&s);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (c[i].rc != CURLE_OK)
			fail_msg("%s: %s", c[i].url,
				 curl_easy_strerror(c[i].rc));
		assert_int_equal(c[i].a.status, 503);
		assert_string_equal(c[i].a.body.p,
				    "{\"status\":\"error\",\"errorType\":"
				    "\"unavailable\",\"error\":\"query "
				    "cancelled: the agent is stopping\"}");
		gw_buf_release(&c[i].a.body);
	}
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}

/* ---- POST /api/v1/admin/push: the hook the agent wires ---- */

struct push_seen {
	size_t nsets, nm0;
	int64_t start, end;
	char name0[64];
	int ret;
};

static int push_hook(void *ctx, const struct gw_matcher *const *sets,
		     const size_t *nm, size_t nsets, int64_t start_ms,
		     int64_t end_ms)
{
	struct push_seen *p = ctx;

	p->nsets = nsets;
	p->nm0 = nm[0];
	p->start = start_ms;
	p->end = end_ms;
	snprintf(p->name0, sizeof(p->name0), "%s=%s", sets[0][0].name,
		 sets[0][0].value);
	return p->ret;
}

static unsigned int push_call(const struct gw_api_opts *o, bool post,
			      const char **body, ...)
{
	static char *last;
	struct gw_api_params p = { 0 };
	struct gw_api_reply r;
	struct gw_api_request rq = {
		.path = "/api/v1/admin/push",
		.params = &p,
		.now_ms = T0 + 95000,
		.post = post,
	};
	const char *kv;
	va_list ap;

	va_start(ap, body);
	while ((kv = va_arg(ap, const char *)) != NULL) {
		const char *eq = strchr(kv, '=');
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		assert_int_equal(gw_api_params_add(&p, name, eq + 1), 0);
	}
	va_end(ap);
	gw_api_reply_init(&r);
	assert_int_equal(gw_api_handle(NULL, o, &rq, &r), 0);
	free(last);
	last = gw_buf_detach(&r.body, NULL);
	gw_api_reply_release(&r);
	gw_api_params_release(&p);
	*body = last;
	return r.status;
}

static void admin_push(void **state)
{
	struct push_seen seen = { .ret = 2 };
	struct gw_api_opts off = { 0 };
	struct gw_api_opts on = { .push = push_hook, .push_ctx = &seen };
	enum gw_api_endpoint ep;
	const char *b;

	(void)state;
	assert_int_equal(gw_api_route("/api/v1/admin/push", &ep), 0);
	assert_int_equal(ep, GW_API_ADMIN_PUSH);
	assert_string_equal(gw_api_endpoint_name(ep), "admin_push");
	assert_int_equal(
		push_call(&off, true, &b, "match[]=up", "start=1", NULL), 503);
	assert_non_null(strstr(b, "admin APIs disabled"));
	assert_int_equal(
		push_call(&on, false, &b, "match[]=up", "start=1", NULL), 405);
	assert_int_equal(push_call(&on, true, &b, "start=1", NULL), 400);
	assert_non_null(strstr(b, "no match[] parameter provided"));
	assert_int_equal(push_call(&on, true, &b, "match[]=up", NULL), 400);
	assert_int_equal(push_call(&on, true, &b, "match[]=up", "start=100",
				   "end=50", NULL),
			 400);
	assert_int_equal(push_call(&on, true, &b, "match[]={a=~\".*\"}",
				   "start=1", NULL),
			 400);
	assert_int_equal(seen.nsets, 0);
	assert_int_equal(push_call(&on, true, &b, "match[]=up{job=\"x\"}",
				   "match[]=down", "start=100", "end=200.5",
				   NULL),
			 200);
	assert_non_null(strstr(b, "\"endpoints\":2"));
	assert_int_equal(seen.nsets, 2);
	assert_int_equal(seen.nm0, 2);
	assert_string_equal(seen.name0, "__name__=up");
	assert_int_equal(seen.start, 100000);
	assert_int_equal(seen.end, 200500);
	/* end defaults to the request's time */
	assert_int_equal(
		push_call(&on, true, &b, "match[]=up", "start=100", NULL), 200);
	assert_int_equal(seen.end, T0 + 95000);
	seen.ret = -ENODEV;
	assert_int_equal(
		push_call(&on, true, &b, "match[]=up", "start=1", NULL), 503);
	assert_non_null(strstr(b, "no remote_write endpoint"));
	seen.ret = -ENOSPC;
	assert_int_equal(
		push_call(&on, true, &b, "match[]=up", "start=1", NULL), 503);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(times_accepted),
		cmocka_unit_test(times_refused),
		cmocka_unit_test(durations),
		cmocka_unit_test(form_decoding),
		cmocka_unit_test(form_bounds),
		cmocka_unit_test(routes),
		cmocka_unit_test_setup_teardown(query_parameter_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tier_parameter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(query_range_parameter_errors,
						setup, teardown),
		cmocka_unit_test_setup_teardown(query_results, setup, teardown),
		cmocka_unit_test_setup_teardown(query_failures, setup,
						teardown),
		cmocka_unit_test_setup_teardown(reply_too_large, setup,
						teardown),
		cmocka_unit_test_setup_teardown(series_and_labels, setup,
						teardown),
		cmocka_unit_test(no_store_and_unknown),
		cmocka_unit_test_setup_teardown(server_methods_and_forms, setup,
						teardown),
		cmocka_unit_test_setup_teardown(invalid_utf8_never_in_json,
						setup, teardown),
		cmocka_unit_test(server_without_store),
		cmocka_unit_test(admin_push),
		cmocka_unit_test_setup_teardown(scrape_during_query, setup,
						teardown),
		cmocka_unit_test_setup_teardown(close_during_query, setup,
						teardown),
	};
	int r;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
