// SPDX-License-Identifier: MIT
/*
 * test_statsd.c - StatsD / DogStatsD ingest: what lines are accepted or
 * refused and why, what each type becomes in /metrics (names, labels,
 * values, quantiles within 1%), caps, expiry, and the receive path over
 * real UDP and Unix datagram sockets.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/statsd/collector.h"
#include "collect/statsd/statsd.h"
#include "collect/statsd/table.h"
#include "common/log.h"

static struct gw_statsd_line line;

static enum gw_statsd_result parse(const char *s)
{
	return gw_statsd_parse(s, strlen(s), &line);
}

/* ---- parser ---- */

static void parse_accepts(void **state)
{
	static const struct {
		const char *in;
		enum gw_statsd_type type;
		const char *name;
		size_t nvalues;
		double v0;
		double rate;
		size_t ntags;
	} cases[] = {
		{ "hits:1|c", GW_STATSD_COUNTER, "hits", 1, 1, 1, 0 },
		{ "hits:2.5|c|@0.5", GW_STATSD_COUNTER, "hits", 1, 2.5, 0.5,
		  0 },
		{ "temp:-3|g", GW_STATSD_GAUGE, "temp", 1, -3, 1, 0 },
		{ "temp:1e3|g", GW_STATSD_GAUGE, "temp", 1, 1000, 1, 0 },
		{ "lat:12.5|ms", GW_STATSD_TIMER, "lat", 1, 12.5, 1, 0 },
		{ "size:3|h|@1", GW_STATSD_HISTOGRAM, "size", 1, 3, 1, 0 },
		{ "d:1:2:3|d", GW_STATSD_DISTRIBUTION, "d", 3, 1, 1, 0 },
		{ "users:alice|s", GW_STATSD_SET, "users", 1, 0, 1, 0 },
		{ "my.app-x/req:1|c|#env:prod,region:eu", GW_STATSD_COUNTER,
		  "my_app_x_req", 1, 1, 1, 2 },
		{ "q:1|c|#a:b|c:abc123|T1700000000", GW_STATSD_COUNTER, "q", 1,
		  1, 1, 1 },
		{ "q:1|c|@0.1|#a|x-unknown", GW_STATSD_COUNTER, "q", 1, 1, 0.1,
		  1 },
		{ "9lives:1|c", GW_STATSD_COUNTER, "_9lives", 1, 1, 1, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum gw_statsd_result r = parse(cases[i].in);

		if (r != GW_STATSD_OK)
			fail_msg("%s: %s", cases[i].in,
				 gw_statsd_result_name(r));
		assert_int_equal(line.type, cases[i].type);
		assert_string_equal(line.name, cases[i].name);
		assert_int_equal(line.nvalues, cases[i].nvalues);
		if (cases[i].type != GW_STATSD_SET)
			assert_true(line.values[0].v == cases[i].v0);
		assert_true(line.rate == cases[i].rate);
		assert_int_equal(line.ntags, cases[i].ntags);
	}
}

static void parse_rejects_with_reason(void **state)
{
	static const struct {
		const char *in;
		enum gw_statsd_result want;
	} cases[] = {
		{ "", GW_STATSD_BAD_NAME },
		{ ":1|c", GW_STATSD_BAD_NAME },
		{ "|c", GW_STATSD_BAD_NAME },
		{ "hits", GW_STATSD_BAD_TYPE },
		{ "hits:1", GW_STATSD_BAD_TYPE },
		{ "hits|c", GW_STATSD_BAD_VALUE },
		{ "hits:|c", GW_STATSD_BAD_VALUE },
		{ "hits:abc|c", GW_STATSD_BAD_VALUE },
		{ "hits:nan|g", GW_STATSD_BAD_VALUE },
		{ "hits:inf|g", GW_STATSD_BAD_VALUE },
		{ "hits:1e999|g", GW_STATSD_BAD_VALUE },
		{ "hits:0x10|g", GW_STATSD_BAD_VALUE },
		{ "hits:1.|g", GW_STATSD_OK },
		{ "hits:.|g", GW_STATSD_BAD_VALUE },
		{ "hits:-1|c", GW_STATSD_BAD_VALUE },
		{ "hits:1::2|d", GW_STATSD_BAD_VALUE },
		/* The name ends at the first ':'; "name" is no number. */
		{ "ns:name:1|c", GW_STATSD_BAD_VALUE },
		{ "hits:1|x", GW_STATSD_BAD_TYPE },
		{ "hits:1|", GW_STATSD_BAD_TYPE },
		{ "hits:1|c:2|c", GW_STATSD_BAD_TYPE },
		{ "hits:1|msx", GW_STATSD_BAD_TYPE },
		{ "hits:1|c|@0", GW_STATSD_BAD_RATE },
		{ "hits:1|c|@1.5", GW_STATSD_BAD_RATE },
		{ "hits:1|c|@-0.5", GW_STATSD_BAD_RATE },
		{ "hits:1|c|@", GW_STATSD_BAD_RATE },
		{ "hits:1|c|#a:\x01", GW_STATSD_BAD_TAG },
		{ "hits:1|c|#a:\xff", GW_STATSD_BAD_TAG },
		{ "_e{5,4}:title|text", GW_STATSD_UNSUPPORTED },
		{ "_sc|check|0", GW_STATSD_UNSUPPORTED },
	};
	char big[600];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum gw_statsd_result r = parse(cases[i].in);

		if (r != cases[i].want)
			fail_msg("\"%s\": got %s, want %s", cases[i].in,
				 gw_statsd_result_name(r),
				 gw_statsd_result_name(cases[i].want));
	}
	/* A name over GW_STATSD_NAME_MAX. */
	memset(big, 'a', GW_STATSD_NAME_MAX + 1);
	snprintf(big + GW_STATSD_NAME_MAX + 1, 20, ":1|c");
	assert_int_equal(parse(big), GW_STATSD_BAD_NAME);
	/* More values than GW_STATSD_MAX_VALUES. */
	{
		char *s = malloc(4 * (GW_STATSD_MAX_VALUES + 1) + 16);
		size_t n = 0;

		assert_non_null(s);
		n += (size_t)sprintf(s, "d");
		for (int i = 0; i <= GW_STATSD_MAX_VALUES; i++)
			n += (size_t)sprintf(s + n, ":1");
		sprintf(s + n, "|d");
		assert_int_equal(parse(s), GW_STATSD_TOO_MANY);
		free(s);
	}
	/* More tags than GW_STATSD_MAX_TAGS. */
	{
		char s[1024];
		size_t n = (size_t)sprintf(s, "x:1|c|#");

		for (int i = 0; i <= GW_STATSD_MAX_TAGS; i++)
			n += (size_t)sprintf(s + n, "t%d:v,", i);
		assert_int_equal(parse(s), GW_STATSD_BAD_TAG);
	}
}

static void parse_gauge_signs_and_tags(void **state)
{
	(void)state;
	assert_int_equal(parse("g:+4|g"), GW_STATSD_OK);
	assert_true(line.values[0].delta && line.values[0].v == 4);
	assert_int_equal(parse("g:-4|g"), GW_STATSD_OK);
	assert_true(line.values[0].delta && line.values[0].v == -4);
	assert_int_equal(parse("g:4|g"), GW_STATSD_OK);
	assert_false(line.values[0].delta);

	/* Bare tag -> "true"; reserved names renamed; first of repeats wins;
	 * a value may hold ':'; empty keys skipped. */
	assert_int_equal(parse("x:1|c|#canary,le:5,quantile:x,__n:1,"
			       "env:a,env:b,url:http://h:80,,:v,k.e-y:z"),
			 GW_STATSD_OK);
	assert_int_equal(line.ntags, 7);
	static const char *const want[][2] = {
		{ "canary", "true" },	 { "tag_le", "5" },
		{ "tag_quantile", "x" }, { "tag___n", "1" },
		{ "env", "a" },		 { "url", "http://h:80" },
		{ "k_e_y", "z" },
	};
	for (size_t i = 0; i < 7; i++) {
		assert_int_equal(line.tags[i].name_len, strlen(want[i][0]));
		assert_memory_equal(line.tags[i].name, want[i][0],
				    line.tags[i].name_len);
		assert_int_equal(line.tags[i].value_len, strlen(want[i][1]));
		assert_memory_equal(line.tags[i].value, want[i][1],
				    line.tags[i].value_len);
	}
}

/* The label name one tag key becomes. */
static void tag_key_is(const char *key, const char *want)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "x:1|c|#%s:v", key);
	assert_int_equal(parse(buf), GW_STATSD_OK);
	assert_int_equal(line.ntags, 1);
	if (line.tags[0].name_len != strlen(want) ||
	    memcmp(line.tags[0].name, want, line.tags[0].name_len) != 0)
		fail_msg("tag key \"%s\" became \"%.*s\", not \"%s\"", key,
			 (int)line.tags[0].name_len, line.tags[0].name, want);
}

/* Tag keys become valid label names, never reserved ones ("__" first),
 * however the sanitising gets there. */
static void tag_keys_sanitised(void **state)
{
	(void)state;
	tag_key_is("__x", "tag___x");
	tag_key_is("..x", "tag___x");
	tag_key_is("-_x", "tag___x");
	tag_key_is("_.x", "tag___x");
	tag_key_is("__", "tag___");
	tag_key_is("é", "tag___"); /* two bytes of UTF-8 */
	tag_key_is("9x", "_9x");
	tag_key_is("9", "_9");
	tag_key_is("1.2", "_1_2");
	tag_key_is(".9", "_9");
	tag_key_is("_9", "_9");
	tag_key_is("_", "_");
	tag_key_is("a:b", "a"); /* the value starts at the first ':' */
	tag_key_is("l.e", "l_e");
	tag_key_is("le", "tag_le");
	tag_key_is("quantile", "tag_quantile");
	tag_key_is("Env-Name", "Env_Name");
	/* Two keys that sanitise alike: the first wins. */
	assert_int_equal(parse("x:1|c|#..a:1,__a:2"), GW_STATSD_OK);
	assert_int_equal(line.ntags, 1);
	assert_int_equal(line.tags[0].value[0], '1');
}

static void sanitize_names(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(
		gw_statsd_sanitize("a.b-c", 5, false, out, sizeof(out)), 5);
	assert_string_equal(out, "a_b_c");
	assert_int_equal(gw_statsd_sanitize("ns:x", 4, false, out, sizeof(out)),
			 4);
	assert_string_equal(out, "ns:x");
	assert_int_equal(gw_statsd_sanitize("ns:x", 4, true, out, sizeof(out)),
			 4);
	assert_string_equal(out, "ns_x");
	assert_int_equal(gw_statsd_sanitize("1x", 2, false, out, sizeof(out)),
			 3);
	assert_string_equal(out, "_1x");
	assert_int_equal(
		gw_statsd_sanitize("caf\xc3\xa9", 5, false, out, sizeof(out)),
		5);
	assert_string_equal(out, "caf__");
	assert_int_equal(gw_statsd_sanitize("", 0, false, out, sizeof(out)), 0);
	assert_int_equal(gw_statsd_sanitize("abcd", 4, false, out, 4), 0);
}

/* ---- table ---- */

static struct gw_statsd_table *new_table(unsigned int series,
					 unsigned int tagvals)
{
	struct gw_statsd_table_opts o = { .max_series = series,
					  .max_tag_values = tagvals };
	struct gw_statsd_table *t;

	assert_int_equal(gw_statsd_table_new(&o, &t), 0);
	return t;
}

static int add(struct gw_statsd_table *t, const char *s, double now)
{
	enum gw_statsd_result r = parse(s);

	if (r != GW_STATSD_OK)
		fail_msg("%s: %s", s, gw_statsd_result_name(r));
	return gw_statsd_table_add(t, &line, now);
}

/* The value of name{labels} in s (labels in exposition text, exact), or
 * NAN when absent. */
/* The value of NAME{LABELS} as the exposition would show it: a summary's
 * quantiles carry quantile="Q", its _count and _sum the family's labels. */
static double find(const struct gw_snap *s, const char *name,
		   const char *labels)
{
	static const char *const suffix[] = {
		[GW_SAMPLE_PLAIN] = "",	   [GW_SAMPLE_BUCKET] = "_bucket",
		[GW_SAMPLE_SUM] = "_sum",  [GW_SAMPLE_COUNT] = "_count",
		[GW_SAMPLE_QUANTILE] = "",
	};

	for (size_t i = 0; i < s->n; i++) {
		const struct gw_sample *v = &s->v[i];
		char full[256], lab[512];
		int n;

		snprintf(full, sizeof(full), "%s%s", v->fam->name,
			 suffix[v->kind]);
		if (strcmp(full, name) != 0)
			continue;
		n = snprintf(lab, sizeof(lab), "%.*s", (int)v->labels_len,
			     v->labels_len ? s->labels.p + v->labels : "");
		if (v->kind == GW_SAMPLE_QUANTILE)
			snprintf(lab + n, sizeof(lab) - (size_t)n,
				 "%squantile=\"%g\"", n ? "," : "", v->le);
		if (strcmp(lab, labels) == 0)
			return v->value;
	}
	return NAN;
}

static void publish(struct gw_statsd_table *t, struct gw_snap *s, double now)
{
	gw_snap_reset(s);
	gw_statsd_table_publish(t, s, now);
}

static void counters_gauges_and_rates(void **state)
{
	struct gw_statsd_table *t = new_table(100, 100);
	struct gw_snap s;

	(void)state;
	gw_snap_init(&s);
	assert_int_equal(add(t, "req:1|c", 1), 0);
	assert_int_equal(add(t, "req:2|c|@0.5", 1), 0);	    /* counts 4 */
	assert_int_equal(add(t, "req:1:1:1|c|@0.1", 1), 0); /* counts 30 */
	assert_int_equal(add(t, "bytes_total:5|c", 1), 0);
	assert_int_equal(add(t, "temp:10|g", 1), 0);
	assert_int_equal(add(t, "temp:+5|g", 1), 0);
	assert_int_equal(add(t, "temp:-2.5|g", 1), 0);
	assert_int_equal(add(t, "delta_first:-3|g", 1), 0);
	assert_int_equal(add(t, "set_then_delta:7|g|@0.5", 1), 0);
	publish(t, &s, 2);
	assert_true(fabs(find(&s, "req_total", "") - 35) < 1e-9);
	assert_true(find(&s, "bytes_total", "") == 5);
	assert_true(find(&s, "temp", "") == 12.5);
	assert_true(find(&s, "delta_first", "") == -3);
	/* A gauge ignores the sample rate. */
	assert_true(find(&s, "set_then_delta", "") == 7);
	for (size_t i = 0; i < s.n; i++)
		if (strcmp(s.v[i].fam->name, "req_total") == 0)
			assert_int_equal(s.v[i].fam->type, GW_COUNTER);
	gw_snap_release(&s);
	gw_statsd_table_free(t);
}

static void tags_become_labels(void **state)
{
	struct gw_statsd_table *t = new_table(100, 100);
	struct gw_snap s;
	struct gw_statsd_table_stats st;

	(void)state;
	gw_snap_init(&s);
	/* Tag order does not make another series. */
	assert_int_equal(add(t, "req:1|c|#b:2,a:1", 1), 0);
	assert_int_equal(add(t, "req:1|c|#a:1,b:2", 1), 0);
	assert_int_equal(add(t, "req:1|c|#a:1", 1), 0);
	assert_int_equal(add(t, "req:1|c|#a:x\"y\\z", 1), 0);
	assert_int_equal(add(t, "req:1|c|#canary", 1), 0);
	/* An empty value is no label: these are the series a="1". */
	assert_int_equal(add(t, "req:1|c|#a:1,comm:", 1), 0);
	assert_int_equal(add(t, "req:1|c|#comm:,a:1", 1), 0);
	publish(t, &s, 1);
	assert_true(find(&s, "req_total", "a=\"1\",b=\"2\"") == 2);
	assert_true(find(&s, "req_total", "a=\"1\"") == 3);
	assert_true(find(&s, "req_total", "a=\"x\\\"y\\\\z\"") == 1);
	assert_true(find(&s, "req_total", "canary=\"true\"") == 1);
	gw_statsd_table_stats(t, &st);
	assert_int_equal(st.series, 4);
	gw_snap_release(&s);
	gw_statsd_table_free(t);
}

static uint64_t rng = 88172645463325252ULL;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* 100k lognormal timings: p50/p90/p95/p99 within 1% of the exact ones. */
static void quantiles_within_one_percent(void **state)
{
	enum { N = 100000 };
	struct gw_statsd_table *t = new_table(100, 100);
	struct gw_snap s;
	double *v = malloc(N * sizeof(*v));
	double sum = 0;
	char buf[128];
	static const struct {
		double q;
		const char *label;
	} qs[] = { { 0.5, "quantile=\"0.5\"" },
		   { 0.9, "quantile=\"0.9\"" },
		   { 0.95, "quantile=\"0.95\"" },
		   { 0.99, "quantile=\"0.99\"" } };

	(void)state;
	assert_non_null(v);
	gw_snap_init(&s);
	for (int i = 0; i < N; i++) {
		double z =
			sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
		double ms = exp(3 + 1.2 * z); /* median ~20 ms */

		snprintf(buf, sizeof(buf), "rpc.latency:%.17g|ms", ms);
		assert_int_equal(add(t, buf, 100.5), 0);
		snprintf(buf, sizeof(buf), "payload:%.17g|d|#svc:a", ms);
		assert_int_equal(add(t, buf, 100.5), 0);
		v[i] = strtod(buf + 8, NULL);
		sum += v[i];
	}
	qsort(v, N, sizeof(*v), cmp_double);
	publish(t, &s, 101);
	for (size_t i = 0; i < 4; i++) {
		double exact = v[(size_t)floor(qs[i].q * (N - 1))];
		double got_d;
		char lab[64];

		snprintf(lab, sizeof(lab), "svc=\"a\",%s", qs[i].label);
		got_d = find(&s, "payload", lab);
		assert_true(fabs(got_d - exact) <= 0.01 * exact);
		/* The timer is in seconds. */
		assert_true(fabs(find(&s, "rpc_latency_seconds", qs[i].label) -
				 exact / 1000) <= 0.01 * exact / 1000);
	}
	assert_true(find(&s, "payload_count", "svc=\"a\"") == N);
	assert_true(fabs(find(&s, "payload_sum", "svc=\"a\"") - sum) <=
		    1e-9 * sum);
	assert_true(find(&s, "rpc_latency_seconds_count", "") == N);

	/* The window: 10 s periods, the current and the previous one.  At
	 * 115 the values of period [100, 110) still count; at 120 they do
	 * not, and the quantiles disappear while _count stays. */
	publish(t, &s, 115);
	assert_false(isnan(find(&s, "payload", "svc=\"a\",quantile=\"0.5\"")));
	publish(t, &s, 120);
	assert_true(isnan(find(&s, "payload", "svc=\"a\",quantile=\"0.5\"")));
	assert_true(find(&s, "payload_count", "svc=\"a\"") == N);
	free(v);
	gw_snap_release(&s);
	gw_statsd_table_free(t);
}

static void summary_rate_weights(void **state)
{
	struct gw_statsd_table *t = new_table(100, 100);
	struct gw_snap s;

	(void)state;
	gw_snap_init(&s);
	assert_int_equal(add(t, "h:2:4|h|@0.25", 1), 0);
	publish(t, &s, 1);
	assert_true(find(&s, "h_count", "") == 8);
	assert_true(find(&s, "h_sum", "") == 24);
	gw_snap_release(&s);
	gw_statsd_table_free(t);
}

static void sets_count_distinct_over_window(void **state)
{
	struct gw_statsd_table *t = new_table(100, 100);
	struct gw_snap s;
	char buf[64];

	(void)state;
	gw_snap_init(&s);
	assert_int_equal(add(t, "users:alice|s", 1), 0);
	assert_int_equal(add(t, "users:bob|s", 2), 0);
	assert_int_equal(add(t, "users:alice|s", 3), 0);
	publish(t, &s, 4);
	assert_true(find(&s, "users", "") == 2);
	/* Next period: carol new, bob again: union {alice, bob, carol}. */
	assert_int_equal(add(t, "users:carol|s", 12), 0);
	assert_int_equal(add(t, "users:bob|s", 12), 0);
	publish(t, &s, 13);
	assert_true(find(&s, "users", "") == 3);
	/* Two periods later only the current one's values count. */
	assert_int_equal(add(t, "users:dave|s", 21), 0);
	publish(t, &s, 22);
	assert_true(find(&s, "users", "") == 3); /* carol, bob, dave */
	publish(t, &s, 31);
	assert_true(find(&s, "users", "") == 1); /* dave */
	publish(t, &s, 41);
	assert_true(find(&s, "users", "") == 0);
	/* The cap on distinct values per period. */
	for (int i = 0; i < GW_STATSD_SET_MAX; i++) {
		snprintf(buf, sizeof(buf), "big:%d|s", i);
		assert_int_equal(add(t, buf, 50), 0);
	}
	assert_int_equal(add(t, "big:again|s", 50), GW_STATSD_REFUSED_SET_FULL);
	assert_int_equal(add(t, "big:7|s", 50), 0); /* seen: fine */
	publish(t, &s, 51);
	assert_true(find(&s, "big", "") == GW_STATSD_SET_MAX);
	gw_snap_release(&s);
	gw_statsd_table_free(t);
}

static void caps_refuse_and_count(void **state)
{
	struct gw_statsd_table *t = new_table(3, 2);
	struct gw_statsd_table_stats st;
	struct gw_snap s;

	(void)state;
	gw_snap_init(&s);
	/* Tag values: at most 2 distinct values of "user". */
	assert_int_equal(add(t, "a:1|c|#user:1", 1), 0);
	assert_int_equal(add(t, "a:1|c|#user:2", 1), 0);
	assert_int_equal(add(t, "a:1|c|#user:3", 1),
			 GW_STATSD_REFUSED_TAG_VALUES);
	/* Known values on other metrics are fine. */
	assert_int_equal(add(t, "b:1|g|#user:2", 1), 0);
	/* Series: 3 at most. */
	assert_int_equal(add(t, "c:1|g", 1), GW_STATSD_REFUSED_SERIES);
	/* Existing series still update. */
	assert_int_equal(add(t, "a:5|c|#user:1", 1), 0);
	/* The same exported name with another type; our own prefix. */
	gw_statsd_table_free(t);
	t = new_table(100, 100);
	assert_int_equal(add(t, "x:1|g", 1), 0);
	assert_int_equal(add(t, "x:1|s", 1), GW_STATSD_REFUSED_TYPE);
	assert_int_equal(add(t, "x:1|h", 1), GW_STATSD_REFUSED_TYPE);
	assert_int_equal(add(t, "x:1|d", 1), GW_STATSD_REFUSED_TYPE);
	assert_int_equal(add(t, "y:1|h", 1), 0);
	assert_int_equal(add(t, "y:1|d|#k:v", 1), 0); /* h and d share */
	assert_int_equal(add(t, "gpuwatch.up:1|g", 1),
			 GW_STATSD_REFUSED_RESERVED);
	gw_statsd_table_stats(t, &st);
	assert_int_equal(st.refused[GW_STATSD_REFUSED_TYPE], 3);
	assert_int_equal(st.refused[GW_STATSD_REFUSED_RESERVED], 1);
	assert_int_equal(st.series, 3);
	publish(t, &s, 2);
	assert_true(isnan(find(&s, "gpuwatch_up", "")));
	gw_snap_release(&s);
	gw_statsd_table_free(t);
}

static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu %lu", &size, &resident), 2);
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * At the default series and tag caps, every series a set or a summary
 * filled to its own bounds (two periods of 4096 set values; 2048 bins a
 * side in both sketches): without the budget that is 10000 x 128 KiB.
 * The table's own count stays within the budget, what does not fit is
 * refused as "memory", the process does not grow past the budget (with
 * room for the allocator and the sanitizers' own), and all of it is given
 * back when the series expire.
 */
static void memory_bounded_at_the_caps(void **state)
{
	const unsigned long long budget = 16ull << 20;
	struct gw_statsd_table_opts o = { .max_series = 10000,
					  .max_tag_values = 1000,
					  .max_bytes = budget };
	struct gw_statsd_table *t;
	struct gw_statsd_table_stats st;
	struct gw_snap s;
	uint64_t rss0, rss1, empty;
	unsigned int kept = 0;
	char buf[128];

	(void)state;
	gw_snap_init(&s);
	assert_int_equal(gw_statsd_table_new(&o, &t), 0);
	gw_statsd_table_stats(t, &st);
	assert_int_equal(st.max_bytes, budget);
	empty = st.bytes;
	rss0 = rss_bytes();
	for (unsigned int i = 0; i < o.max_series; i++) {
		bool set = i % 2 == 0;
		int r;

		/* one value first: a series refused stays refused */
		snprintf(buf, sizeof(buf),
			 set ? "s%u:v|s|#k:%u" : "d%u:1|d|#k:%u", i, i % 1000);
		r = add(t, buf, 1);
		if (r) {
			assert_int_equal(r, GW_STATSD_REFUSED_MEMORY);
			continue;
		}
		kept++;
		for (int period = 0; period < 2; period++) {
			double now = 1 + 10 * period;

			for (int k = 0; k < (set ? GW_STATSD_SET_MAX : 2048);
			     k++) {
				if (set)
					snprintf(buf, sizeof(buf),
						 "s%u:%d|s|#k:%u", i, k,
						 i % 1000);
				else
					snprintf(buf, sizeof(buf),
						 "d%u:%.17g:%.17g|d|#k:%u", i,
						 exp(k * 0.03), -exp(k * 0.03),
						 i % 1000);
				r = add(t, buf, now);
				assert_true(r == 0 ||
					    r == GW_STATSD_REFUSED_MEMORY ||
					    r == GW_STATSD_REFUSED_SET_FULL);
			}
		}
	}
	gw_statsd_table_stats(t, &st);
	assert_true(st.bytes <= budget);
	/* the budget is used, not left mostly empty by a coarse estimate */
	assert_true(st.bytes > budget / 10 * 9);
	assert_true(st.refused[GW_STATSD_REFUSED_MEMORY] > 0);
	assert_true(kept > 10 && kept < o.max_series);
	/* (a series may be made and its first value refused) */
	assert_true(st.series >= kept && st.series <= kept + 1);
	rss1 = rss_bytes();
#ifndef __SANITIZE_THREAD__
	/* (ThreadSanitizer's allocator and shadow take several times what
	 * the program allocates: there the table's own count is the bound) */
	if (rss1 > rss0 && rss1 - rss0 > 3 * budget + (16u << 20))
		fail_msg("RSS grew by %llu bytes for a %llu-byte budget",
			 (unsigned long long)(rss1 - rss0), budget);
#else
	(void)rss0;
	(void)rss1;
#endif
	/* Everything is published, then expires and is given back. */
	publish(t, &s, 12);
	assert_true(find(&s, "s0", "k=\"0\"") > 0);
	publish(t, &s, 1000);
	publish(t, &s, 1001);
	gw_statsd_table_stats(t, &st);
	assert_int_equal(st.series, 0);
	assert_true(st.bytes >= empty); /* no unsigned wrap: all credited */
	assert_true(st.bytes <= empty + (256u << 10)); /* hash tables kept */
	gw_snap_release(&s);
	gw_statsd_table_free(t);
	/* the default budget */
	o.max_bytes = 0;
	assert_int_equal(gw_statsd_table_new(&o, &t), 0);
	gw_statsd_table_stats(t, &st);
	assert_int_equal(st.max_bytes, GW_STATSD_MAX_BYTES_DEFAULT);
	gw_statsd_table_free(t);
}

static void idle_series_expire(void **state)
{
	struct gw_statsd_table *t = new_table(2, 1);
	struct gw_statsd_table_stats st;
	struct gw_snap s;

	(void)state;
	gw_snap_init(&s);
	assert_int_equal(add(t, "old:1|g|#v:a", 0), 0);
	assert_int_equal(add(t, "new:1|c", 200), 0);
	publish(t, &s, 300);
	assert_true(find(&s, "old", "v=\"a\"") == 1);
	publish(t, &s, 301); /* 301 s idle > 300 s */
	assert_true(isnan(find(&s, "old", "v=\"a\"")));
	assert_true(find(&s, "new_total", "") == 1);
	gw_statsd_table_stats(t, &st);
	assert_int_equal(st.series, 1);
	assert_int_equal(st.expired, 1);
	/* Its series slot and its tag value are free again. */
	assert_int_equal(add(t, "other:1|g|#v:b", 302), 0);
	publish(t, &s, 303);
	assert_true(find(&s, "other", "v=\"b\"") == 1);
	gw_snap_release(&s);
	gw_statsd_table_free(t);
}

/* ---- the receive path, over real sockets ---- */

static void send_udp(unsigned int port, const char *msg)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(sendto(fd, msg, strlen(msg), 0,
				(struct sockaddr *)&sin, sizeof(sin)),
			 (ssize_t)strlen(msg));
	close(fd);
}

static void receive_datagrams(void **state)
{
	char path[64];
	struct gw_statsd_rx_opts o = { .listen = "127.0.0.1:0",
				       .max_series = 100,
				       .max_tag_values = 100 };
	struct gw_statsd_rx *rx;
	struct gw_statsd_rx_counts c;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct gw_snap s;
	const char *m = "lines:1|c\nlines:2|c|#k:v\r\n\n"
			"bad line\nhits:x|c\n_e{1,1}:a|b\nt:5|g";
	char addr[160];
	int fd, got = 0;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/gw-test-statsd-%d.sock",
		 (int)getpid());
	o.socket = path;
	gw_snap_init(&s);
	assert_int_equal(gw_statsd_rx_open(&o, &rx), 0);
	assert_true(gw_statsd_rx_port(rx) > 0);
	send_udp(gw_statsd_rx_port(rx), m);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	assert_int_equal(
		sendto(fd, "u:3|g", 5, 0, (struct sockaddr *)&sun, sizeof(sun)),
		5);
	close(fd);
	while (got < 2) {
		int r = gw_statsd_rx_poll(rx, 1000, 1);

		assert_true(r > 0);
		got += r;
	}
	gw_statsd_rx_counts(rx, &c);
	assert_int_equal(c.datagrams[0], 1);
	assert_int_equal(c.datagrams[1], 1);
	assert_int_equal(c.lines, 7);
	gw_statsd_rx_publish(rx, &s, 2);
	assert_true(find(&s, "lines_total", "") == 1);
	assert_true(find(&s, "lines_total", "k=\"v\"") == 2);
	assert_true(find(&s, "t", "") == 5);
	assert_true(find(&s, "u", "") == 3);
	assert_true(find(&s, "gpuwatch_statsd_malformed_total",
			 "reason=\"name\"") == 0);
	assert_true(find(&s, "gpuwatch_statsd_malformed_total",
			 "reason=\"type\"") == 1);
	assert_true(find(&s, "gpuwatch_statsd_malformed_total",
			 "reason=\"value\"") == 1);
	assert_true(find(&s, "gpuwatch_statsd_unsupported_total", "") == 1);
	assert_true(find(&s, "gpuwatch_statsd_series", "") == 4);
	snprintf(addr, sizeof(addr),
		 "transport=\"udp\",address=\"127.0.0.1:%u\"",
		 gw_statsd_rx_port(rx));
	assert_true(find(&s, "gpuwatch_statsd_up", addr) == 1);
	snprintf(addr, sizeof(addr), "transport=\"unix\",address=\"%s\"", path);
	assert_true(find(&s, "gpuwatch_statsd_up", addr) == 1);
	gw_statsd_rx_close(rx);
	/* The socket file is removed at close. */
	assert_int_equal(access(path, F_OK), -1);
	gw_snap_release(&s);
}

/*
 * A flood that overruns a tiny receive buffer: the kernel drops datagrams
 * and gpuwatch_statsd_udp_drops_total counts exactly those.
 */
static void udp_drops_counted(void **state)
{
	struct gw_statsd_rx_opts o = { .listen = "127.0.0.1:0",
				       .max_series = 10,
				       .max_tag_values = 10,
				       .rcvbuf = 1 /* the kernel's least */ };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct gw_statsd_rx *rx;
	struct gw_statsd_rx_counts c;
	struct gw_snap s;
	char msg[1024];
	const int sent = 500;
	int fd;

	(void)state;
	gw_snap_init(&s);
	assert_int_equal(gw_statsd_rx_open(&o, &rx), 0);
	sin.sin_port = htons((uint16_t)gw_statsd_rx_port(rx));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	memset(msg, 'x', sizeof(msg));
	memcpy(msg, "flood:1|c|#pad:", 15);
	for (int i = 0; i < sent; i++)
		assert_int_equal(sendto(fd, msg, sizeof(msg), 0,
					(struct sockaddr *)&sin, sizeof(sin)),
				 (ssize_t)sizeof(msg));
	/* Read what the buffer held, then one more datagram: the kernel
	 * reports the drop count with the next one queued after the drops. */
	while (gw_statsd_rx_poll(rx, 0, 1) > 0)
		;
	assert_int_equal(sendto(fd, "last:1|c", 8, 0, (struct sockaddr *)&sin,
				sizeof(sin)),
			 8);
	close(fd);
	for (int tries = 0; tries < 100; tries++) {
		gw_statsd_rx_counts(rx, &c);
		if (c.datagrams[0] == 0 ||
		    c.datagrams[0] + c.udp_drops >= (uint64_t)sent + 1)
			break;
		(void)gw_statsd_rx_poll(rx, 100, 1);
	}
	gw_statsd_rx_counts(rx, &c);
	assert_true(c.datagrams[0] < (uint64_t)sent);
	assert_true(c.udp_drops > 0);
	assert_int_equal(c.datagrams[0] + c.udp_drops, sent + 1);
	gw_statsd_rx_publish(rx, &s, 2);
	assert_true(find(&s, "gpuwatch_statsd_udp_drops_total", "") ==
		    (double)c.udp_drops);
	assert_true(find(&s, "last_total", "") == 1);
	gw_statsd_rx_close(rx);
	gw_snap_release(&s);
}

static void bind_failure_is_not_fatal(void **state)
{
	struct gw_statsd_rx_opts o = { .listen = "127.0.0.1:0",
				       .max_series = 10,
				       .max_tag_values = 10 };
	struct gw_statsd_rx *a, *b;
	struct gw_snap s;
	char addr[64], lab[128];

	(void)state;
	gw_snap_init(&s);
	assert_int_equal(gw_statsd_rx_open(&o, &a), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", gw_statsd_rx_port(a));
	o.listen = addr;
	o.socket = "/nonexistent-dir/x.sock";
	assert_int_equal(gw_statsd_rx_open(&o, &b), 0);
	assert_int_equal(gw_statsd_rx_port(b), 0);
	gw_statsd_rx_publish(b, &s, 1);
	snprintf(lab, sizeof(lab), "transport=\"udp\",address=\"%s\"", addr);
	assert_true(find(&s, "gpuwatch_statsd_up", lab) == 0);
	assert_true(find(&s, "gpuwatch_statsd_up",
			 "transport=\"unix\",address=\"/nonexistent-dir/"
			 "x.sock\"") == 0);
	gw_statsd_rx_close(b);
	o.listen = "not an address";
	o.socket = NULL;
	assert_int_equal(gw_statsd_rx_open(&o, &b), 0);
	gw_statsd_rx_close(b);
	gw_statsd_rx_close(a);
	gw_snap_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_accepts),
		cmocka_unit_test(parse_rejects_with_reason),
		cmocka_unit_test(parse_gauge_signs_and_tags),
		cmocka_unit_test(sanitize_names),
		cmocka_unit_test(tag_keys_sanitised),
		cmocka_unit_test(memory_bounded_at_the_caps),
		cmocka_unit_test(udp_drops_counted),
		cmocka_unit_test(counters_gauges_and_rates),
		cmocka_unit_test(tags_become_labels),
		cmocka_unit_test(quantiles_within_one_percent),
		cmocka_unit_test(summary_rate_weights),
		cmocka_unit_test(sets_count_distinct_over_window),
		cmocka_unit_test(caps_refuse_and_count),
		cmocka_unit_test(idle_series_expire),
		cmocka_unit_test(receive_datagrams),
		cmocka_unit_test(bind_failure_is_not_fatal),
	};

	gw_log_set_level(GW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
