/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure injection: malloc, calloc and realloc are wrapped at
 * link time (-Wl,--wrap=...) so a test can make the Nth allocation fail.
 * Every path must then report the failure, keep what it had, and leak
 * nothing (LeakSanitizer runs at exit).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "core/config.h"
#include "expo_check.h"
#include "query/promql.h"
#include "pipeline/metrics.h"
#include "store/store.h"

/* The in-memory queryable of the PromQL tests, compiled in here. */
#include "fake_queryable.c"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static long countdown = -1; /* the allocation that fails; -1: none */
static long failures;

static int should_fail(void)
{
	if (countdown < 0)
		return 0;
	if (countdown-- == 0) {
		failures++;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	return should_fail() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	return should_fail() ? NULL : __real_realloc(p, n);
}

static const struct gw_family temp = { "gpuwatch_gpu_temperature_celsius",
				       "GPU core temperature.", GW_GAUGE };
static const struct gw_family xid = { "gpuwatch_gpu_xid_errors_total",
				      "XID errors.", GW_COUNTER };

static void buf_keeps_content(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_buf_adds(&b, "kept"), 0);
	countdown = 0;
	{
		char big[1024];

		memset(big, 'x', sizeof(big));
		assert_int_equal(gw_buf_add(&b, big, sizeof(big)), -ENOMEM);
	}
	countdown = -1;
	assert_string_equal(b.p, "kept");
	assert_int_equal(b.len, 4);
	gw_buf_release(&b);
}

/* An unchecked append that cannot allocate keeps -ENOMEM, even once memory is back. */
static void buf_keeps_first_enomem(void **state)
{
	char big[1024];
	struct gw_buf b;

	(void)state;
	memset(big, 'x', sizeof(big));
	gw_buf_init(&b, 1 << 20);
	gw_buf_puts(&b, "kept");
	countdown = 0;
	gw_buf_put(&b, big, sizeof(big));
	countdown = -1;
	assert_int_equal(gw_buf_error(&b), -ENOMEM);
	gw_buf_put(&b, big, sizeof(big));
	gw_buf_puts(&b, "more");
	assert_int_equal(gw_buf_error(&b), -ENOMEM);
	assert_string_equal(b.p, "kept");
	assert_int_equal(b.len, 4);
	gw_buf_reset(&b);
	gw_buf_put(&b, big, sizeof(big));
	assert_int_equal(gw_buf_error(&b), 0);
	assert_int_equal(b.len, sizeof(big));
	gw_buf_release(&b);
}

static void snap_counts_what_it_cannot_hold(void **state)
{
	struct gw_snap s;

	(void)state;
	gw_snap_init(&s);
	countdown = 0; /* the sample array cannot be allocated */
	gw_snap_add(&s, &temp, 40, NULL, "gpu", "0", NULL);
	countdown = -1;
	assert_int_equal(s.n, 0);
	assert_int_equal(s.dropped, 1);
	gw_snap_add(&s, &temp, 41, NULL, "gpu", "0", NULL);
	assert_int_equal(s.n, 1);
	gw_snap_release(&s);
}

/* Builds, publishes and renders with allocation N failing. */
static int scenario(long n, char **out)
{
	struct gw_registry *r;
	struct gw_snap s;
	struct gw_buf b;
	int slot, err;

	*out = NULL;
	countdown = n;
	r = gw_registry_new();
	if (!r) {
		countdown = -1;
		return -ENOMEM;
	}
	slot = gw_registry_slot(r, "t");
	assert_true(slot >= 0);
	gw_snap_init(&s);
	for (int i = 0; i < 40; i++) {
		char g[8];

		snprintf(g, sizeof(g), "%d", i);
		gw_snap_add(&s, &temp, 40 + i, NULL, "gpu", g, NULL);
		gw_snap_add(&s, &xid, i, NULL, "gpu", g, "xid", "79", NULL);
	}
	gw_registry_publish(r, slot, &s);
	gw_buf_init(&b, 1 << 20);
	err = gw_registry_render(r, GW_EXPO_TEXT_004, &b);
	countdown = -1;
	if (!err) {
		struct gw_registry_stats st;

		gw_registry_stats(r, &st);
		/* Whatever was dropped is counted, and the rest is rendered. */
		assert_int_equal(st.series + st.dropped, 80);
		*out = gw_buf_detach(&b, NULL);
		if (*out)
			assert_unique_series(*out);
	}
	gw_buf_release(&b);
	gw_snap_release(&s);
	gw_registry_free(r);
	return err;
}

static void nth_allocation_fails(void **state)
{
	char *good, *out;
	long n;

	(void)state;
	assert_int_equal(scenario(-1, &good), 0);
	assert_non_null(strstr(
		good, "gpuwatch_gpu_temperature_celsius{gpu=\"39\"} 79\n"));
	for (n = 0; n < 200; n++) {
		long before = failures;
		int err = scenario(n, &out);

		if (failures == before) {
			/* n is past the last allocation: nothing failed. */
			assert_int_equal(err, 0);
			assert_string_equal(out, good);
			free(out);
			break;
		}
		/* A failed render says so; a successful one is well formed. */
		if (err) {
			assert_int_equal(err, -ENOMEM);
			assert_null(out);
		} else {
			assert_non_null(out);
			assert_true(out[0] == '\0' ||
				    out[strlen(out) - 1] == '\n');
			free(out);
		}
	}
	assert_true(n > 3 && n < 200);
	free(good);
}

static void config_file_out_of_memory(void **state)
{
	char path[] = "/tmp/gw-alloc-XXXXXX", err[GW_CONFIG_ERR_MAX];
	struct gw_config c;
	int fd = mkstemp(path), r = -1;

	(void)state;
	assert_true(fd >= 0);
	assert_true(write(fd, "interval: 2\n", 12) == 12);
	close(fd);
	for (long n = 0; n < 50; n++) {
		long before = failures;

		gw_config_defaults(&c);
		countdown = n;
		r = gw_config_load_file(&c, path, err, sizeof(err));
		countdown = -1;
		if (failures == before)
			break;
		/* Either a clear error or, if the failure was survivable, success. */
		if (r)
			assert_non_null(strstr(err, path));
	}
	assert_int_equal(r, 0);
	assert_true(c.interval == 2);
	unlink(path);
}

/* One query, parsed and evaluated, with allocation n failing. */
static int promql_once(const struct gw_queryable *q, const char *query,
		       bool range, long n)
{
	struct gw_promql_opts o = { .lookback_ms = 300000 };
	struct gw_promql_error perr;
	struct gw_pq_node *e = NULL;
	struct gw_qresult res;
	int r;

	countdown = n;
	r = gw_promql_parse(query, &e, &perr);
	if (r == 0) {
		r = range ? gw_promql_eval_range(e, q, 60000, 600000, 15000, &o,
						 &res)
			  : gw_promql_eval_instant(e, q, 600000, &o, &res);
		/* A failed evaluation says why and holds no data. */
		if (r)
			assert_true(res.err != GW_QERR_NONE &&
				    res.nseries == 0);
		gw_qresult_release(&res);
	}
	countdown = -1;
	gw_promql_free(e);
	return r;
}

static void promql_out_of_memory(void **state)
{
	static const char *const queries[] = {
		"sum by (gpu) (rate(m_total[1m]))",
		"topk(2, avg_over_time(m_total[2m]) * 2 > 1)",
		"quantile_over_time(0.9, m_total{gpu=~\"0|1\"}[5m])",
		"m_total / on (gpu) group_x",
		"histogram_quantile(0.9, label_replace(rate(m_total[1m]), "
		"\"le\", \"$1\", \"gpu\", \"(.*)\"))",
		"sort_desc(label_join(deriv(m_total[2m]), \"j\", \",\", "
		"\"gpu\", \"gpu\"))",
		"absent(nope{a=\"b\"}) + absent_over_time(nope{c=\"d\"}[1m])",
		"clamp(predict_linear(m_total[2m], 60), 0, 10) + year(m_total)",
	};
	struct gw_queryable q;
	struct gw_fakeq *f = NULL;

	(void)state;
	assert_int_equal(gw_fakeq_new(&f), 0);
	for (int g = 0; g < 3; g++) {
		char labels[16];
		size_t id;

		snprintf(labels, sizeof(labels), "gpu=\"%d\"", g);
		assert_int_equal(gw_fakeq_series(f, "m_total", labels, &id), 0);
		for (int64_t t = 0; t <= 600000; t += 10000)
			assert_int_equal(
				gw_fakeq_sample(f, id, t,
						(double)(t / 1000 * (g + 1))),
				0);
	}
	gw_fakeq_queryable(f, &q);
	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		for (int range = 0; range < 2; range++) {
			int good = promql_once(&q, queries[i], range, -1);
			long n;

			for (n = 0; n < 5000; n++) {
				long before = failures;
				int r = promql_once(&q, queries[i], range, n);

				if (failures == before) {
					assert_int_equal(r, good);
					break;
				}
				assert_true(r == 0 || r == -ENOMEM ||
					    r == -EINVAL);
			}
			assert_true(n < 5000);
		}
	}
	gw_fakeq_free(f);
}

static int64_t store_clock(void *ctx)
{
	return *(int64_t *)ctx;
}

/* Opens a store, appends across an hourly cut, reads, closes: with
 * allocation n failing somewhere.  Returns the samples read back. */
static long store_once(const char *dir, long n)
{
	struct gw_store_opts o;
	struct gw_store *s = NULL;
	const int64_t start = 1796083200000LL; /* 2026-12-01T00:00:00Z */
	int64_t now = start;
	char err[256];
	long got = -1;

	gw_store_opts_defaults(&o);
	o.dir = dir;
	o.now = store_clock;
	o.now_ctx = &now;
	countdown = n;
	if (gw_store_open(&s, &o, err, sizeof(err)) == 0) {
		const struct gw_queryable *q = gw_store_queryable(s);
		struct gw_query_limits lim = { 0 };
		struct gw_series_set set = { 0 };
		struct gw_matcher m;

		for (int64_t t = start; t < start + 3600000 + 60000;
		     t += 20000) {
			(void)!gw_store_append(s, "gpuwatch_x", "gpu=\"0\"", t,
					       (double)t);
			(void)!gw_store_append(s, "gpuwatch_y", "gpu=\"1\"", t,
					       1);
			now = t + 1;
			(void)!gw_store_maintain(s);
		}
		if (gw_matcher_init(&m, GW_MATCH_EQ, "gpu", "0", NULL, 0) ==
		    0) {
			if (q->select(q->ctx, &m, 1, 0, INT64_MAX, GW_TIER_RAW,
				      &lim, &set) == 0)
				got = set.n ? (long)set.s[0].n : 0;
			gw_series_set_release(&set);
			gw_matcher_release(&m);
		}
		gw_store_close(s);
	}
	countdown = -1;
	return got;
}

static void store_out_of_memory(void **state)
{
	long n;

	(void)state;
	for (n = 0; n < 20000; n += n < 400 ? 1 : 37) {
		char dir[] = "/tmp/gw-alloc-store-XXXXXX", cmd[64];
		long before = failures, got;

		assert_non_null(mkdtemp(dir));
		got = store_once(dir, n);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		assert_int_equal(system(cmd), 0);
		if (failures == before) {
			assert_int_equal(got, 183);
			break;
		}
		/* Whatever failed, what comes back is no more than was put. */
		assert_true(got <= 183);
	}
	assert_true(n < 20000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buf_keeps_content),
		cmocka_unit_test(buf_keeps_first_enomem),
		cmocka_unit_test(snap_counts_what_it_cannot_hold),
		cmocka_unit_test(nth_allocation_fails),
		cmocka_unit_test(config_file_out_of_memory),
		cmocka_unit_test(promql_out_of_memory),
		cmocka_unit_test(store_out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
