/* SPDX-License-Identifier: MIT */
/*
 * CPU profiles in memory (store/profile.h) and kept over time
 * (store/profstore.h): stacks and their counts, the folded, JSON and pprof
 * forms read back, differential profiles, per-function flat and cum,
 * bounds, bad input, and the SQLite store's selection, replacement,
 * retention and size bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/api.h"
#include "query/promql.h"
#include "store/profile.h"
#include "store/profstore.h"

static const char *const s1[] = { "prog", "main", "hot_a" };
static const char *const s2[] = { "prog", "main", "hot_b" };
static const char *const s3[] = { "prog", "main", "hot_a", "write" };

static struct gw_prof *sample_prof(void)
{
	struct gw_prof *p = gw_prof_new(0);

	assert_non_null(p);
	assert_int_equal(gw_prof_add(p, s1, 3, 30, 0), 0);
	assert_int_equal(gw_prof_add(p, s2, 3, 10, 0), 0);
	assert_int_equal(gw_prof_add(p, s1, 3, 5, 0), 0);
	assert_int_equal(gw_prof_add(p, s3, 4, 5, 0), 0);
	return p;
}

static char *folded(const struct gw_prof *p)
{
	struct gw_buf b;
	char *s;

	gw_buf_init(&b, 1 << 20);
	gw_prof_folded(p, &b);
	assert_int_equal(gw_buf_error(&b), 0);
	gw_buf_put(&b, "", 1);
	s = gw_buf_detach(&b, NULL);
	gw_buf_release(&b);
	return s;
}

static void folded_sorted_and_summed(void **state)
{
	struct gw_prof *p = sample_prof();
	char *f;

	(void)state;
	assert_int_equal(gw_prof_total(p, 0), 50);
	assert_int_equal(gw_prof_nstacks(p), 3);
	f = folded(p);
	assert_string_equal(f, "prog;main;hot_a 35\n"
			       "prog;main;hot_a;write 5\n"
			       "prog;main;hot_b 10\n");
	free(f);
	gw_prof_free(p);
}

static void json_form(void **state)
{
	struct gw_prof *p = gw_prof_new(0);
	const char *const odd[] = { "a\"b", "c;d" };
	struct gw_buf b;

	(void)state;
	assert_int_equal(gw_prof_add(p, odd, 2, 7, 0), 0);
	gw_buf_init(&b, 4096);
	gw_prof_json(p, &b);
	gw_buf_put(&b, "", 1);
	assert_string_equal(b.p, "{\"samples\":7,\"stacks\":[{\"frames\":"
				 "[\"a\\\"b\",\"c;d\"],\"value\":7}]}");
	gw_buf_release(&b);
	/* A ';' in a name cannot split the folded line. */
	{
		char *f = folded(p);

		assert_string_equal(f, "a\"b;c:d 7\n");
		free(f);
	}
	gw_prof_free(p);
}

static void pprof_round_trip(void **state)
{
	struct gw_prof *p = sample_prof(), *q = gw_prof_new(0);
	struct gw_buf b;
	char *a, *c;

	(void)state;
	gw_prof_set_time(p, 1700000000000000000LL, 60000000000LL, 52631578);
	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_prof_pprof(p, &b), 0);
	/* gzip magic */
	assert_true(b.len > 20);
	assert_int_equal((unsigned char)b.p[0], 0x1f);
	assert_int_equal((unsigned char)b.p[1], 0x8b);
	assert_int_equal(gw_prof_add_pprof(q, b.p, b.len, 0), 0);
	a = folded(p);
	c = folded(q);
	assert_string_equal(a, c);
	/* Twice: the counts add up. */
	assert_int_equal(gw_prof_add_pprof(q, b.p, b.len, 0), 0);
	assert_int_equal(gw_prof_total(q, 0), 100);
	free(a);
	free(c);
	gw_buf_release(&b);
	gw_prof_free(p);
	gw_prof_free(q);
}

static void diff_columns(void **state)
{
	struct gw_prof *p = gw_prof_new(0), *q = gw_prof_new(0);
	struct gw_prof_fn *fn;
	struct gw_buf b;
	size_t n;
	char *f;

	(void)state;
	assert_int_equal(gw_prof_add(p, s1, 3, 30, 0), 0);
	assert_int_equal(gw_prof_add(p, s2, 3, 20, 0), 0);
	assert_int_equal(gw_prof_add(p, s1, 3, 30, 1), 0);
	assert_int_equal(gw_prof_add(p, s2, 3, 10, 1), 0);
	f = folded(p);
	assert_string_equal(f,
			    "prog;main;hot_a 30 30\nprog;main;hot_b 10 20\n");
	free(f);
	assert_int_equal(gw_prof_functions(p, 0, &fn, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(fn[0].name, "hot_a");
	assert_int_equal(fn[0].flat[0], 30);
	assert_int_equal(fn[0].flat[1], 30);
	assert_string_equal(fn[1].name, "hot_b");
	assert_int_equal(fn[1].flat[0], 20);
	assert_int_equal(fn[1].flat[1], 10);
	assert_int_equal(fn[2].cum[0], 50); /* main or prog */
	assert_int_equal(fn[2].flat[0], 0);
	free(fn);
	/* pprof holds the base negated: a reader sums to target - base. */
	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_prof_pprof(p, &b), 0);
	assert_int_equal(gw_prof_add_pprof(q, b.p, b.len, 0), 0);
	assert_int_equal(gw_prof_total(q, 0), 10);
	gw_buf_release(&b);
	gw_prof_free(p);
	gw_prof_free(q);
}

static void folded_parse(void **state)
{
	static const char text[] = "a;b;c 12\r\n\na;b 3\na;b;c 1";
	struct gw_prof *p = gw_prof_new(0);
	char *f;

	(void)state;
	assert_int_equal(gw_prof_add_folded(p, text, strlen(text), 0), 0);
	f = folded(p);
	assert_string_equal(f, "a;b 3\na;b;c 13\n");
	free(f);
	assert_int_equal(gw_prof_add_folded(p, "a;b", 3, 0), -EINVAL);
	assert_int_equal(gw_prof_add_folded(p, "a;b x", 5, 0), -EINVAL);
	assert_int_equal(gw_prof_add_folded(p, "a 99999999999999999999", 22, 0),
			 -EINVAL);
	assert_int_equal(gw_prof_add_folded(p, "a 1", 3, 2), -EINVAL);
	gw_prof_free(p);
}

static void bad_pprof(void **state)
{
	static const unsigned char junk[] = { 0x1f, 0x8b, 8, 0, 1, 2, 3 };
	static const unsigned char notproto[] = { 0xff, 0xff, 0xff, 0xff };
	struct gw_prof *p = gw_prof_new(0);

	(void)state;
	assert_int_equal(gw_prof_add_pprof(p, junk, sizeof(junk), 0), -EINVAL);
	assert_int_equal(gw_prof_add_pprof(p, notproto, sizeof(notproto), 0),
			 -EINVAL);
	assert_int_equal(gw_prof_total(p, 0), 0);
	gw_prof_free(p);
}

static void bounds(void **state)
{
	struct gw_prof *p = gw_prof_new(2);
	const char *deep[GW_PROF_MAX_DEPTH + 10];
	char name[GW_PROF_NAME_MAX * 2];
	const char *one[1] = { name };

	(void)state;
	assert_int_equal(gw_prof_add(p, s1, 3, 1, 0), 0);
	assert_int_equal(gw_prof_add(p, s2, 3, 1, 0), 0);
	assert_int_equal(gw_prof_add(p, s3, 4, 7, 0), 0);
	assert_int_equal(gw_prof_nstacks(p), 2);
	assert_int_equal(gw_prof_dropped(p), 7);
	gw_prof_free(p);

	p = gw_prof_new(0);
	for (size_t i = 0; i < GW_PROF_MAX_DEPTH + 10; i++)
		deep[i] = i == GW_PROF_MAX_DEPTH + 9 ? "leaf" : "f";
	assert_int_equal(gw_prof_add(p, deep, GW_PROF_MAX_DEPTH + 10, 1, 0), 0);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(gw_prof_add(p, one, 1, 1, 0), 0);
	{
		struct gw_prof_fn *fn;
		size_t n;

		assert_int_equal(gw_prof_functions(p, 0, &fn, &n), 0);
		for (size_t i = 0; i < n; i++)
			assert_true(strlen(fn[i].name) < GW_PROF_NAME_MAX);
		/* the leaf end of the deep stack is kept */
		assert_string_equal(fn[0].name, "leaf");
		free(fn);
	}
	gw_prof_free(p);
}

/* ---- the store ---- */

static char dir[64];

static int st_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_profile.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int st_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct gw_profstore *open_store(uint64_t max_bytes)
{
	struct gw_profstore_opts o = { .sz = sizeof(o) };
	struct gw_profstore *s;
	char path[128], err[256];

	snprintf(path, sizeof(path), "%s/profiles.db", dir);
	o.path = path;
	o.retention_ms = 3600 * 1000;
	o.max_bytes = max_bytes;
	assert_int_equal(gw_profstore_open(&o, &s, err, sizeof(err)), 0);
	return s;
}

static void put_one(struct gw_profstore *s, int64_t minute, uint32_t pid,
		    const char *labels, int64_t count)
{
	struct gw_prof *p = gw_prof_new(0);
	struct gw_buf b;

	assert_int_equal(gw_prof_add(p, s1, 3, count, 0), 0);
	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_prof_pprof(p, &b), 0);
	assert_int_equal(gw_profstore_put(s, minute, pid, GW_PROFILE_CPU,
					  labels, b.p, b.len, count),
			 0);
	/* A launch profile of the same minute and process is another row,
	 * never merged into CPU queries. */
	assert_int_equal(gw_profstore_put(s, minute, pid, GW_PROFILE_LAUNCHES,
					  labels, b.p, b.len, count),
			 0);
	gw_buf_release(&b);
	gw_prof_free(p);
}

static int64_t query(struct gw_profstore *s, const char *sel, int64_t start,
		     int64_t end)
{
	struct gw_matcher *m = NULL;
	struct gw_promql_error e;
	struct gw_prof *p = gw_prof_new(0);
	size_t nm = 0, rows;
	int64_t t;

	if (sel)
		assert_int_equal(gw_promql_parse_selector(sel, &m, &nm, &e), 0);
	assert_int_equal(
		gw_profstore_query(s, GW_PROFILE_CPU,
				   (const struct gw_matcher *const *)&m, &nm,
				   sel ? 1 : 0, start, end, p, 0, &rows),
		0);
	t = gw_prof_total(p, 0);
	gw_matchers_free(m, nm);
	gw_prof_free(p);
	return t;
}

static void store_select_replace_retain(void **state)
{
	int64_t now = 1700000040000LL / 60000 * 60000;
	struct gw_profstore *s = open_store(0);
	struct gw_profstore_stats st;

	(void)state;
	put_one(s, now - 120000, 1, "pid=\"1\",comm=\"a\",version=\"1\"", 4);
	put_one(s, now - 60000, 1, "pid=\"1\",comm=\"a\",version=\"1\"", 5);
	put_one(s, now - 60000, 2, "pid=\"2\",comm=\"b\",version=\"2\"", 7);
	/* The same minute and process again: replaced, not added. */
	put_one(s, now - 60000, 2, "pid=\"2\",comm=\"b\",version=\"2\"", 8);
	assert_int_equal(query(s, NULL, now - 600000, now), 17);
	assert_int_equal(query(s, "{comm=\"a\"}", now - 600000, now), 9);
	assert_int_equal(query(s, "{version=~\"2|3\"}", now - 600000, now), 8);
	assert_int_equal(query(s, "process_cpu{pid=\"1\"}", now - 600000, now),
			 9);
	assert_int_equal(query(s, "{comm=\"nope\"}", now - 600000, now), 0);
	/* A window that only touches the last minute's middle. */
	assert_int_equal(query(s, "{comm=\"a\"}", now - 30000, now - 20000), 5);
	/* Retention: an hour. */
	assert_int_equal(gw_profstore_maint(s, now - 120000 + 3600000 + 1), 0);
	assert_int_equal(query(s, NULL, now - 600000, now), 13);
	gw_profstore_stats(s, &st);
	assert_int_equal(st.rows, 4);
	assert_int_equal(st.deleted, 2);
	gw_profstore_close(s);
	/* Reopened: kept. */
	s = open_store(0);
	assert_int_equal(query(s, NULL, now - 600000, now), 13);
	/* Size bound: the oldest minutes leave first. */
	put_one(s, now, 3, "pid=\"3\"", 1);
	gw_profstore_close(s);
	s = open_store(1);
	assert_int_equal(gw_profstore_maint(s, now), 0);
	gw_profstore_stats(s, &st);
	assert_true(st.rows <= 2);
	gw_profstore_close(s);
}

/* ---- the cold tier ---- */

#define DAY_MS (86400 * 1000LL)

/* The fetch hook's stand-in: the day file exported to DIR/bucket-NAME. */
static struct {
	int calls, result;
	char last[32];
} hook;

static int fetch_day(void *ctx, const char *name, char *path, size_t len,
		     struct gw_query_limits *lim)
{
	(void)ctx;
	assert_non_null(lim);
	assert_true(lim->deadline_ns > 0);
	hook.calls++;
	snprintf(hook.last, sizeof(hook.last), "%s", name);
	snprintf(path, len, "%s/bucket-%s.db", dir, name + 5);
	return hook.result;
}

static void store_cold_tier(void **state)
{
	int64_t today = 1700000040000LL / DAY_MS * DAY_MS;
	int64_t d1 = today - 3 * DAY_MS, d2 = today - 2 * DAY_MS;
	int64_t now = today + 3600 * 1000;
	struct gw_profstore *s = open_store(0);
	struct gw_profstore_day *v = NULL;
	char path[128], two[128];
	size_t n = 0;
	int64_t day = 0, before;

	(void)state;
	memset(&hook, 0, sizeof(hook));
	put_one(s, d1 + 60000, 1, "pid=\"1\"", 3);
	put_one(s, d1 + 120000, 1, "pid=\"1\"", 4);
	put_one(s, d2 + 60000, 1, "pid=\"1\"", 5);
	put_one(s, today + 60000, 1, "pid=\"1\"", 6);
	before = query(s, NULL, d1, d2 + DAY_MS);
	assert_int_equal(before, 12);

	/* Three days; today's is not closed. */
	assert_int_equal(gw_profstore_days(s, now, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].day_ms, d1);
	assert_true(v[0].closed && v[0].local && !v[0].archived);
	assert_int_equal(v[0].rows, 4); /* CPU and launch rows */
	assert_true(v[1].closed);
	assert_false(v[2].closed);
	assert_int_equal(strncmp(v[1].name, "prof/", 5), 0);
	assert_int_equal(gw_profstore_parse_day(v[1].name, &day), 0);
	assert_int_equal(day, d2);
	free(v);
	assert_int_equal(gw_profstore_parse_day("raw/2026-12-01", &day),
			 -EINVAL);
	assert_int_equal(gw_profstore_parse_day("prof/2026-02-31", &day),
			 -EINVAL);

	/* The day file: that day's rows only; never over a file. */
	assert_int_equal(gw_profstore_days(s, now, &v, &n), 0);
	snprintf(path, sizeof(path), "%s/bucket-%s.db", dir, v[0].name + 5);
	free(v);
	assert_int_equal(gw_profstore_export_day(s, d1, path), 0);
	assert_int_equal(gw_profstore_export_day(s, d1, path), -EEXIST);

	/* Archived with a day kept locally: d1's rows leave, the query
	 * fetches the day file and answers the same. */
	gw_profstore_set_archive(s, DAY_MS, fetch_day, NULL);
	assert_int_equal(gw_profstore_archived(s, d1, 4096, now), 0);
	assert_int_equal(gw_profstore_days(s, now, &v, &n), 0);
	assert_true(v[0].archived && !v[0].local);
	assert_int_equal(v[0].bytes, 4096);
	free(v);
	assert_int_equal(query(s, NULL, d1, d2 + DAY_MS), before);
	assert_int_equal(hook.calls, 1);
	assert_int_equal(strncmp(hook.last, "prof/", 5), 0);
	/* A window without the archived day does not fetch it. */
	assert_int_equal(query(s, NULL, d2 + 60000, d2 + DAY_MS), 5);
	assert_int_equal(hook.calls, 1);
	/* A fetch that fails: the day is skipped; a timeout stops. */
	hook.result = -EIO;
	assert_int_equal(query(s, NULL, d1, d2 + DAY_MS), 5);
	hook.result = -ETIMEDOUT;
	{
		struct gw_prof *p = gw_prof_new(0);
		size_t rows;

		assert_int_equal(gw_profstore_query(s, GW_PROFILE_CPU, NULL,
						    NULL, 0, d1, d2 + DAY_MS, p,
						    0, &rows),
				 -ETIMEDOUT);
		gw_prof_free(p);
	}
	hook.result = 0;

	/* Past the retention (an hour here), a day the bucket does not hold
	 * yet stays; archived ones go. */
	assert_int_equal(gw_profstore_maint(s, now), 0);
	assert_int_equal(query(s, NULL, d2 + 60000, d2 + DAY_MS), 5);

	/* Restored: back in profiles.db, pinned past every retention. */
	assert_int_equal(gw_profstore_import(s, path, &day), 0);
	assert_int_equal(day, d1);
	hook.calls = 0;
	assert_int_equal(gw_profstore_maint(s, now + 400 * DAY_MS), 0);
	assert_int_equal(query(s, NULL, d1, d1 + DAY_MS), 7);
	assert_int_equal(hook.calls, 0);
	/* Not an archived day; a file holding two days. */
	snprintf(two, sizeof(two), "%s/two.db", dir);
	assert_int_equal(gw_profstore_export_day(s, d2, two), 0);
	assert_int_equal(gw_profstore_import(s, two, &day), -ENOENT);
	gw_profstore_close(s);
	s = open_store(0);
	put_one(s, d1 + 60000, 1, "pid=\"1\"", 3);
	put_one(s, d2 + 60000, 1, "pid=\"1\"", 3);
	unlink(two);
	assert_int_equal(gw_profstore_archived(s, d1, 1, now), 0);
	{
		/* Both days into one file, by hand. */
		char cmd[512];

		snprintf(cmd, sizeof(cmd),
			 "sqlite3 %s/profiles.db \".backup %s\"", dir, two);
		if (system(cmd) != 0) {
			gw_profstore_close(s);
			skip();
		}
	}
	assert_int_equal(gw_profstore_import(s, two, &day), -EINVAL);
	gw_profstore_close(s);
}

/* ---- the API (http/profile_api.c) ---- */

/* GET path?a=b&c=d... (pairs as "name=value" strings, NULL-terminated). */
static unsigned int api(const struct gw_api_opts *o, const char *path,
			int64_t now, struct gw_api_reply *r, ...)
{
	struct gw_api_params p = { 0 };
	struct gw_api_request rq = { .path = path,
				     .params = &p,
				     .now_ms = now };
	const char *kv;
	va_list ap;

	va_start(ap, r);
	while ((kv = va_arg(ap, const char *))) {
		char name[64];
		const char *eq = strchr(kv, '=');

		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		assert_int_equal(gw_api_params_add(&p, name, eq + 1), 0);
	}
	va_end(ap);
	gw_api_reply_init(r);
	assert_int_equal(gw_api_handle(NULL, o, &rq, r), 0);
	gw_buf_put(&r->body, "", 1);
	gw_api_params_release(&p);
	return r->status;
}

static void api_answers(void **state)
{
	int64_t now = 1700000040000LL / 60000 * 60000;
	struct gw_profstore *s = open_store(0);
	struct gw_api_opts o = { .profiles = s };
	struct gw_api_opts off = { .profile_off = true };
	struct gw_api_reply r;

	(void)state;
	put_one(s, now - 60000, 1, "pid=\"1\",comm=\"a\"", 4);
	put_one(s, now - 60000, 2, "pid=\"2\",comm=\"b\"", 6);

	assert_int_equal(api(&o, "/api/v1/profile", now, &r,
			     "match[]={comm=\"a\"}", "format=folded", NULL),
			 200);
	assert_string_equal(r.content_type, "text/plain; charset=utf-8");
	assert_string_equal(r.body.p, "prog;main;hot_a 4\n");
	gw_api_reply_release(&r);

	assert_int_equal(api(&o, "/api/v1/profile", now, &r, NULL), 200);
	assert_null(r.content_type);
	assert_string_equal(r.body.p,
			    "{\"status\":\"success\",\"data\":{\"samples\":10,"
			    "\"stacks\":[{\"frames\":[\"prog\",\"main\","
			    "\"hot_a\"],\"value\":10}]}}");
	gw_api_reply_release(&r);

	assert_int_equal(
		api(&o, "/api/v1/profile/diff", now, &r, "match[]={comm=\"b\"}",
		    "base_match[]={comm=\"a\"}", "base_start=1699999000",
		    "base_end=1700000040", "format=folded", NULL),
		200);
	assert_string_equal(r.body.p, "prog;main;hot_a 4 6\n");
	gw_api_reply_release(&r);

	assert_int_equal(
		api(&o, "/api/v1/profile", now, &r, "format=pprof", NULL), 200);
	assert_string_equal(r.content_type, "application/octet-stream");
	assert_int_equal((unsigned char)r.body.p[0], 0x1f);
	gw_api_reply_release(&r);

	/* Bad input: 400 bad_data with the reason. */
	assert_int_equal(
		api(&o, "/api/v1/profile", now, &r, "match[]={a=", NULL), 400);
	assert_non_null(strstr(r.body.p, "invalid parameter \\\"match[]\\\""));
	gw_api_reply_release(&r);
	assert_int_equal(api(&o, "/api/v1/profile", now, &r, "start=2000",
			     "end=1000", NULL),
			 400);
	assert_non_null(strstr(r.body.p, "end timestamp must not be before"));
	gw_api_reply_release(&r);
	assert_int_equal(
		api(&o, "/api/v1/profile", now, &r, "start=0", "end=1e9", NULL),
		400);
	assert_non_null(strstr(r.body.p, "at most 31 days"));
	gw_api_reply_release(&r);
	assert_int_equal(
		api(&o, "/api/v1/profile", now, &r, "format=svg", NULL), 400);
	gw_api_reply_release(&r);
	assert_int_equal(api(&o, "/api/v1/profile", now, &r, "type=heap", NULL),
			 400);
	gw_api_reply_release(&r);
	assert_int_equal(api(&o, "/api/v1/profile/diff", now, &r, NULL), 400);
	assert_non_null(
		strstr(r.body.p, "base_start and base_end are required"));
	gw_api_reply_release(&r);

	/* --profile off */
	assert_int_equal(api(&off, "/api/v1/profile", now, &r, NULL), 503);
	assert_string_equal(
		r.body.p, "{\"status\":\"error\",\"errorType\":\"unavailable\","
			  "\"error\":\"profiling is off (--profile off)\"}");
	gw_api_reply_release(&r);
	gw_profstore_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(folded_sorted_and_summed),
		cmocka_unit_test(json_form),
		cmocka_unit_test(pprof_round_trip),
		cmocka_unit_test(diff_columns),
		cmocka_unit_test(folded_parse),
		cmocka_unit_test(bad_pprof),
		cmocka_unit_test(bounds),
		cmocka_unit_test_setup_teardown(store_select_replace_retain,
						st_setup, st_teardown),
		cmocka_unit_test_setup_teardown(store_cold_tier, st_setup,
						st_teardown),
		cmocka_unit_test_setup_teardown(api_answers, st_setup,
						st_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
