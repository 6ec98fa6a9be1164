/* SPDX-License-Identifier: MIT */
/*
 * The store's side of the cold tier, with a fake clock and a "bucket" that
 * is a directory: archived days leave the disk past the local retention
 * and stay readable through the fetch hook (also after a restart), days
 * not archived outlive their retention while archiving is on, a hook that
 * fails skips its day and one stopped by the deadline stops the query, and
 * malformed reports are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"

#define HOUR 3600000LL
#define DAY  (24 * HOUR)
/* 2026-11-30T00:00:00Z */
#define T0 1795996800000LL

struct fixture {
	char dir[64], bucket[96];
	int64_t now;
	struct gw_store_opts o;
	struct gw_store *s;
	int fetches;
	int fail; /* the hook's answer when nonzero */
};

static int64_t fake_now(void *ctx)
{
	return ((struct fixture *)ctx)->now;
}

/* The hook: the "bucket" directory holds raw-2026-11-30.db and so on. */
static int fetch(void *ctx, const char *name, char *path, size_t len,
		 struct gw_query_limits *lim)
{
	struct fixture *f = ctx;
	const char *slash = strchr(name, '/');

	assert_non_null(lim);
	assert_non_null(slash);
	f->fetches++;
	if (f->fail)
		return f->fail;
	snprintf(path, len, "%s/%.*s-%s.db", f->bucket, (int)(slash - name),
		 name, slash + 1);
	return access(path, R_OK) == 0 ? 0 : -ENOENT;
}

static void reopen(struct fixture *f)
{
	char err[512] = "";

	gw_store_close(f->s);
	f->s = NULL;
	assert_int_equal(gw_store_open(&f->s, &f->o, err, sizeof(err)), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/gw-arch-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->bucket, sizeof(f->bucket), "%s/bucket", f->dir);
	if (mkdir(f->bucket, 0700) != 0)
		return -1;
	gw_store_opts_defaults(&f->o);
	f->o.dir = f->dir;
	f->o.now = fake_now;
	f->o.now_ctx = f;
	f->o.archive = true;
	f->o.archive_keep_ms = DAY;
	f->o.fetch = fetch;
	f->o.fetch_ctx = f;
	f->o.retention_ms[GW_TIER_RAW] = 30 * DAY;
	f->now = T0;
	*state = f;
	reopen(f);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	gw_store_close(f->s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* Two samples an hour over ndays from T0, maintaining as an agent does. */
static void feed_days(struct fixture *f, int ndays)
{
	for (int64_t t = T0; t < T0 + ndays * DAY; t += HOUR / 2) {
		assert_int_equal(gw_store_append(f->s, "m", "gpu=\"1\"", t,
						 (double)(t / HOUR)),
				 0);
		f->now = t + 11000;
		assert_int_equal(gw_store_maintain(f->s), 0);
	}
	f->now = T0 + ndays * DAY + 61000;
	assert_int_equal(gw_store_maintain(f->s), 0);
}

static const char *tier_name(enum gw_tier t)
{
	return t == GW_TIER_RAW ? "raw" : t == GW_TIER_1M ? "1m" : "1h";
}

/* Copies every closed local partition into the bucket and reports it:
 * what the uploader does. */
static int archive_all(struct fixture *f)
{
	struct gw_store_partition *v;
	size_t n;
	int done = 0;

	assert_int_equal(gw_store_partitions(f->s, &v, &n), 0);
	for (size_t i = 0; i < n; i++) {
		char name[32], cmd[512];

		if (!v[i].closed || v[i].archived || !v[i].local)
			continue;
		snprintf(name, sizeof(name), "%s/%s", tier_name(v[i].tier),
			 v[i].day);
		snprintf(cmd, sizeof(cmd), "cp %s/%s.db %s/%s-%s.db", f->dir,
			 name, f->bucket, tier_name(v[i].tier), v[i].day);
		assert_int_equal(system(cmd), 0);
		assert_int_equal(gw_store_archived(f->s, name, v[i].bytes), 0);
		done++;
	}
	free(v);
	return done;
}

static void count_parts(struct fixture *f, size_t *local, size_t *remote,
			size_t *archived)
{
	struct gw_store_partition *v;
	size_t n;

	*local = *remote = *archived = 0;
	assert_int_equal(gw_store_partitions(f->s, &v, &n), 0);
	for (size_t i = 0; i < n; i++) {
		*local += v[i].local;
		*remote += !v[i].local;
		*archived += v[i].archived;
	}
	free(v);
}

/* The raw samples of m in [from, to): count, or -errno. */
static long select_raw(struct fixture *f, int64_t from, int64_t to,
		       struct gw_query_limits *lim)
{
	const struct gw_queryable *q = gw_store_queryable(f->s);
	struct gw_query_limits none = { 0 };
	struct gw_series_set set;
	struct gw_matcher m;
	long n = 0;
	int r;

	assert_int_equal(
		gw_matcher_init(&m, GW_MATCH_EQ, "__name__", "m", NULL, 0), 0);
	r = q->select(q->ctx, &m, 1, from, to - 1, GW_TIER_RAW,
		      lim ? lim : &none, &set);
	gw_matcher_release(&m);
	if (r)
		return r;
	for (size_t i = 0; i < set.n; i++)
		for (size_t k = 0; k < set.s[i].n; k++) {
			/* exact values, in order */
			assert_true(set.s[i].v[k] ==
				    (double)(set.s[i].t[k] / HOUR));
			n++;
		}
	gw_series_set_release(&set);
	return n;
}

static void archived_days_leave_the_disk_and_stay_readable(void **state)
{
	struct fixture *f = *state;
	size_t local, remote, archived;
	char path[128];

	feed_days(f, 4);
	/* Days 0..2 closed (3 tiers each); today is day 4, day 3 closed at
	 * midnight. */
	assert_int_equal(archive_all(f), 12);
	f->now += 1000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	count_parts(f, &local, &remote, &archived);
	assert_int_equal(archived, 12);
	/* Older than a day: days 0, 1 and 2 left; day 3 is kept. */
	assert_int_equal(remote, 9);
	snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/raw/2026-12-03.db", f->dir);
	assert_int_equal(access(path, F_OK), 0);

	/* Every sample of the archived days comes back through the hook. */
	f->fetches = 0;
	assert_int_equal(select_raw(f, T0, T0 + 4 * DAY, NULL), 4 * 48);
	assert_int_equal(f->fetches, 3);
	/* Raw is still the tier for the archived days. */
	{
		const struct gw_queryable *q = gw_store_queryable(f->s);

		assert_int_equal(q->pick_tier(q->ctx, T0, T0 + DAY, HOUR),
				 GW_TIER_RAW);
	}

	/* After a restart the store still knows them. */
	reopen(f);
	count_parts(f, &local, &remote, &archived);
	assert_int_equal(remote, 9);
	assert_int_equal(archived, 12);
	assert_int_equal(select_raw(f, T0, T0 + DAY, NULL), 48);
}

static void unarchived_days_outlive_their_retention(void **state)
{
	struct fixture *f = *state;
	size_t local, remote, archived;

	f->o.retention_ms[GW_TIER_RAW] = DAY;
	reopen(f);
	feed_days(f, 4);
	count_parts(f, &local, &remote, &archived);
	assert_int_equal(remote, 0);
	/* Every raw day is still here although raw keeps one day. */
	assert_int_equal(select_raw(f, T0, T0 + 4 * DAY, NULL), 4 * 48);
	/* Once archived, those past the retention leave the disk. */
	assert_int_equal(archive_all(f), 12);
	f->now += 61000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	count_parts(f, &local, &remote, &archived);
	assert_true(remote >= 3);
	assert_int_equal(select_raw(f, T0, T0 + 4 * DAY, NULL), 4 * 48);
}

static void
a_failing_hook_skips_the_day_a_deadline_stops_the_query(void **state)
{
	struct fixture *f = *state;
	struct gw_query_limits lim = { 0 };

	feed_days(f, 3);
	assert_int_equal(archive_all(f), 9);
	f->now += 1000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	/* Day 0 and 1 are remote; day 2 is local. */
	f->fail = -EILSEQ; /* a corrupted copy, refused by the hook */
	assert_int_equal(select_raw(f, T0, T0 + 3 * DAY, NULL), 48);
	/* The hook saw the query's deadline pass, or the agent stop: the
	 * query ends with that. */
	f->fail = -ETIMEDOUT;
	assert_int_equal(select_raw(f, T0, T0 + 3 * DAY, &lim), -ETIMEDOUT);
	f->fail = -ECANCELED;
	assert_int_equal(select_raw(f, T0, T0 + 3 * DAY, &lim), -ECANCELED);
	f->fail = 0;
	assert_int_equal(select_raw(f, T0, T0 + 3 * DAY, NULL), 3 * 48);
}

static void reports_are_checked(void **state)
{
	struct fixture *f = *state;
	enum gw_tier t;
	int64_t day;
	int r = 0;

	assert_int_equal(gw_store_archived(f->s, "raw/2026-2-1", 1), -EINVAL);
	assert_int_equal(gw_store_archived(f->s, "2m/2026-11-30", 1), -EINVAL);
	assert_int_equal(gw_store_archived(f->s, "raw/2026-02-31", 1), -EINVAL);
	assert_int_equal(gw_store_archived(f->s, "raw", 1), -EINVAL);
	assert_int_equal(gw_store_parse_partition("1h/2026-11-30", &t, &day),
			 0);
	assert_int_equal(t, GW_TIER_1H);
	assert_int_equal(day, T0);
	/* The queue is bounded: the reporter tries again later. */
	for (int i = 0; i < 100 && !r; i++)
		r = gw_store_archived(f->s, "raw/2026-11-30", 1);
	assert_int_equal(r, -EAGAIN);
	/* A report of a partition the store does not have is ignored. */
	assert_int_equal(gw_store_maintain(f->s), 0);
	assert_int_equal(gw_store_archived(f->s, "raw/2026-11-30", 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			archived_days_leave_the_disk_and_stay_readable, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			unarchived_days_outlive_their_retention, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_failing_hook_skips_the_day_a_deadline_stops_the_query,
			setup, teardown),
		cmocka_unit_test_setup_teardown(reports_are_checked, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
