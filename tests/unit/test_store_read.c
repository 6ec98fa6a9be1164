/* SPDX-License-Identifier: MIT */
/*
 * The store's read side beside its writer: the series index tests regular
 * expressions with the store's lock dropped and stops at the query's
 * deadline or cancel; a select copies the head a batch at a time and still
 * returns every sample once (open chunks, sealed chunks, partitions); the
 * writer appends while selects run in other threads (ThreadSanitizer checks
 * this file in `make test-tsan`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/series.h"
#include "store/store.h"

#define HOUR 3600000LL
/* 2026-11-30T00:00:00Z */
#define T0 1795996800000LL

/* ---- the series index with a caller's lock ---- */

struct lock_probe {
	pthread_rwlock_t lock;
	int held;	  /* read holds taken and not given back */
	size_t checks;	  /* calls of check */
	size_t locked_at; /* ... that found the lock held */
	int stop_after;	  /* check returns -ETIMEDOUT from this call on
			     (0: never) */
};

static void probe_lock(void *ctx)
{
	struct lock_probe *p = ctx;

	pthread_rwlock_rdlock(&p->lock);
	p->held++;
}

static void probe_unlock(void *ctx)
{
	struct lock_probe *p = ctx;

	p->held--;
	pthread_rwlock_unlock(&p->lock);
}

/* Called while values are tested: a writer must be able to get in. */
static int probe_check(void *ctx)
{
	struct lock_probe *p = ctx;

	p->checks++;
	if (pthread_rwlock_trywrlock(&p->lock) == 0)
		pthread_rwlock_unlock(&p->lock);
	else
		p->locked_at++;
	if (p->stop_after && (int)p->checks >= p->stop_after)
		return -ETIMEDOUT;
	return 0;
}

#define NSERIES 3000

/* NSERIES series: job j0..j9, inst i0..i2999, two names. */
static struct gw_series_index *fill_index(void)
{
	struct gw_series_index *x = gw_series_index_new(0, 0);

	assert_non_null(x);
	for (int i = 0; i < NSERIES; i++) {
		char inst[32];
		struct gw_labels l;
		struct gw_series *s;

		snprintf(inst, sizeof(inst), "job=\"j%d\",inst=\"i%d\"", i % 10,
			 i);
		assert_int_equal(
			gw_labels_parse(&l, i % 2 ? "up" : "temp", inst), 0);
		assert_int_equal(gw_series_index_add(x, &l, 0, false, &s), 0);
		gw_labels_release(&l);
	}
	return x;
}

struct mspec {
	enum gw_match_op op;
	const char *name, *value;
};

static void init_matchers(struct gw_matcher *m, const struct mspec *spec,
			  size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(gw_matcher_init(&m[i], spec[i].op,
						 spec[i].name, spec[i].value,
						 NULL, 0),
				 0);
}

static void release_matchers(struct gw_matcher *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gw_matcher_release(&m[i]);
}

/* The unlocked selection gives what the locked one gives, and tests the
 * values with the lock dropped (a writer could take it every time). */
static void unlocked_select_matches_without_the_lock(void **state)
{
	static const struct mspec cases[][3] = {
		{ { GW_MATCH_RE, "inst", "i1.*" } },
		{ { GW_MATCH_EQ, "__name__", "up" },
		  { GW_MATCH_RE, "inst", "i2.*7" } },
		{ { GW_MATCH_NRE, "inst", "i1.*" } },
		{ { GW_MATCH_EQ, "job", "j3" }, { GW_MATCH_NE, "inst", "i3" } },
		{ { GW_MATCH_RE, "job", "j[12]" },
		  { GW_MATCH_RE, "inst", ".*9.*" },
		  { GW_MATCH_RE, "nope", ".*" } },
	};
	static const size_t ncases[] = { 1, 2, 1, 2, 3 };
	struct gw_series_index *x = fill_index();

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct lock_probe p = { .held = 0 };
		const struct gw_series_select_ops ops = { probe_lock,
							  probe_unlock,
							  probe_check, &p };
		struct gw_matcher m[3];
		uint32_t *a = NULL, *b = NULL;
		size_t na = 0, nb = 0;

		pthread_rwlock_init(&p.lock, NULL);
		init_matchers(m, cases[c], ncases[c]);
		assert_int_equal(
			gw_series_index_select(x, m, ncases[c], &a, &na), 0);
		assert_int_equal(gw_series_index_select_unlocked(
					 x, m, ncases[c], &ops, &b, &nb),
				 0);
		assert_true(na > 0);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, na * sizeof(*a));
		assert_int_equal(p.held, 0);
		assert_true(p.checks > 0);
		assert_int_equal(p.locked_at, 0);
		free(a);
		free(b);
		release_matchers(m, ncases[c]);
		pthread_rwlock_destroy(&p.lock);
	}
	gw_series_index_free(x, NULL);
}

/* A check that says stop (a deadline, a cancel) ends the selection with
 * its error, the lock given back, nothing returned. */
static void unlocked_select_stops_when_told(void **state)
{
	static const struct mspec spec[] = { { GW_MATCH_RE, "inst", ".*5.*" } };
	struct gw_series_index *x = fill_index();
	struct lock_probe p = { .stop_after = 3 };
	const struct gw_series_select_ops ops = { probe_lock, probe_unlock,
						  probe_check, &p };
	struct gw_matcher m[1];
	uint32_t *ids = NULL;
	size_t n = 99;

	(void)state;
	pthread_rwlock_init(&p.lock, NULL);
	init_matchers(m, spec, 1);
	assert_int_equal(
		gw_series_index_select_unlocked(x, m, 1, &ops, &ids, &n),
		-ETIMEDOUT);
	assert_null(ids);
	assert_int_equal(n, 0);
	assert_int_equal(p.held, 0);
	/* Stopped at the third check: NSERIES values were not all tested. */
	assert_int_equal(p.checks, 3);
	release_matchers(m, 1);
	pthread_rwlock_destroy(&p.lock);
	gw_series_index_free(x, NULL);
}

/* ---- the store ---- */

struct fixture {
	char dir[64];
	_Atomic int64_t now;
	struct gw_store_opts o;
	struct gw_store *s;
};

static int64_t fake_now(void *ctx)
{
	return atomic_load(&((struct fixture *)ctx)->now);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[512] = "";

	snprintf(f->dir, sizeof(f->dir), "/tmp/gw-store-read-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	gw_store_opts_defaults(&f->o);
	f->o.dir = f->dir;
	f->o.now = fake_now;
	f->o.now_ctx = f;
	f->o.max_values = 0;
	atomic_store(&f->now, T0);
	if (gw_store_open(&f->s, &f->o, err, sizeof(err)) != 0)
		return -1;
	*state = f;
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

static void append(struct fixture *f, int i, int64_t t)
{
	char labels[64];

	snprintf(labels, sizeof(labels), "inst=\"i%d\"", i);
	assert_int_equal(gw_store_append(f->s, "load", labels, t, (double)i),
			 0);
}

/* Series per select in the big-select test: more than one batch. */
#define WIDE 1500

static int select_all(struct fixture *f, const char *re, int64_t mint,
		      int64_t maxt, struct gw_query_limits *lim,
		      struct gw_series_set *set)
{
	const struct gw_queryable *q = gw_store_queryable(f->s);
	struct gw_matcher m;
	int r;

	assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "inst", re, NULL, 0),
			 0);
	r = q->select(q->ctx, &m, 1, mint, maxt, GW_TIER_RAW, lim, set);
	gw_matcher_release(&m);
	return r;
}

/*
 * WIDE series, with samples on disk (an hour that was cut), sealed and
 * waiting for the cut (the hour just ended, inside the grace period) and
 * in the open chunk: a select copies the head in several batches and
 * returns each sample exactly once.
 */
static void wide_select_sees_every_sample_once(void **state)
{
	struct fixture *f = *state;
	struct gw_query_limits lim = { 0 };
	struct gw_series_set set;
	/* Samples every 10 s from T0 to T0 + 2h: the first hour is cut to
	 * disk, the second sealed (the cut waits for the grace period),
	 * the last sample in an open chunk. */
	const int64_t end = T0 + 2 * HOUR + 10000;

	for (int64_t t = T0; t < end; t += 10000) {
		for (int i = 0; i < WIDE; i++)
			append(f, i, t);
		atomic_store(&f->now, t + 1);
		if (t % 60000 == 0)
			assert_int_equal(gw_store_maintain(f->s), 0);
	}
	assert_int_equal(select_all(f, "i.*", T0, end, &lim, &set), 0);
	assert_int_equal(set.n, WIDE);
	for (size_t k = 0; k < set.n; k++) {
		assert_int_equal(set.s[k].n, (size_t)((end - T0) / 10000));
		for (size_t j = 0; j < set.s[k].n; j++)
			assert_int_equal(set.s[k].t[j],
					 T0 + (int64_t)j * 10000);
	}
	gw_series_set_release(&set);
}

/* A select whose deadline passed, or whose query was cancelled, stops
 * even when the index matches nothing to read. */
static void select_stops_at_deadline_and_cancel(void **state)
{
	struct fixture *f = *state;
	_Atomic bool cancel = false;
	struct gw_query_limits lim = { .deadline_ns = 1 };
	struct gw_series_set set;

	for (int i = 0; i < WIDE; i++)
		append(f, i, T0);
	/* A regular expression that accepts no value, tested against all
	 * of them: the deadline (long past) stops it. */
	assert_int_equal(select_all(f, "x.*", T0, T0 + HOUR, &lim, &set),
			 -ETIMEDOUT);
	assert_int_equal(set.n, 0);
	lim = (struct gw_query_limits){ .cancel = &cancel };
	assert_int_equal(select_all(f, "x.*", T0, T0 + HOUR, &lim, &set), 0);
	gw_series_set_release(&set);
	atomic_store(&cancel, true);
	assert_int_equal(select_all(f, "i.*", T0, T0 + HOUR, &lim, &set),
			 -ECANCELED);
	assert_int_equal(set.n, 0);
}

/* The journal mode of a database file, as a new connection finds it. */
static void journal_mode(const char *path, char *out, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	out[0] = '\0';
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	assert_int_equal(
		sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* The open day's blocks of cut hours (store_maint.c). */
static int64_t count_blocks(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int64_t n;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM hblocks",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/*
 * A day closes while a query reads its partition (a read transaction
 * open on it): the writer does not wait for the reader (it vacuums a
 * copy and renames it into place), the file ends closed in
 * rollback-journal mode without a -wal, and the reader goes on reading
 * what it had.
 */
static void day_closes_under_a_reader(void **state)
{
	struct fixture *f = *state;
	const int64_t day = T0 + 24 * HOUR;
	char path[128], side[140], mode[32];
	sqlite3 *rd = NULL;
	struct stat st;
	int64_t before;

	snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
	for (int64_t t = day - 2 * HOUR; t < day - HOUR + 60000; t += 10000) {
		append(f, 1, t);
		atomic_store(&f->now, t + 1);
		assert_int_equal(gw_store_maintain(f->s), 0);
	}
	/* The query: a read transaction on the day's raw partition. */
	assert_int_equal(sqlite3_open_v2(path, &rd, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_exec(rd, "BEGIN", NULL, NULL, NULL),
			 SQLITE_OK);
	before = count_blocks(rd);
	assert_true(before > 0);
	for (int64_t t = day - HOUR + 60000; t < day + 120000; t += 10000) {
		append(f, 1, t);
		atomic_store(&f->now, t + 1);
		assert_int_equal(gw_store_maintain(f->s), 0);
	}
	journal_mode(path, mode, sizeof(mode));
	assert_string_equal(mode, "delete");
	snprintf(side, sizeof(side), "%s-wal", path);
	assert_int_equal(access(side, F_OK), -1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0222, 0); /* write-protected: closed */
	assert_int_equal(count_blocks(rd), before);
	assert_int_equal(sqlite3_exec(rd, "COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(rd);
}

/* ---- the writer beside readers ---- */

struct reader {
	struct fixture *f;
	_Atomic bool *stop;
	size_t selects;
	int err;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;

	while (!atomic_load(r->stop) && !r->err) {
		struct gw_query_limits lim = { 0 };
		struct gw_series_set set;

		r->err = select_all(r->f, ".*1.*", T0, T0 + 3 * HOUR, &lim,
				    &set);
		gw_series_set_release(&set);
		r->selects++;
	}
	return NULL;
}

/*
 * Two threads select in a loop while the writer appends across an hour
 * (seals, a cut): every sample is stored, every select succeeds, and the
 * last select sees all of them.
 */
static void writer_appends_while_readers_select(void **state)
{
	struct fixture *f = *state;
	_Atomic bool stop = false;
	struct reader rd[2] = { { f, &stop, 0, 0 }, { f, &stop, 0, 0 } };
	pthread_t th[2];
	struct gw_query_limits lim = { 0 };
	struct gw_series_set set;
	const int64_t from = T0 + HOUR - 120000, end = T0 + HOUR + 120000;
	size_t n = 0;

	for (int k = 0; k < 2; k++)
		assert_int_equal(
			pthread_create(&th[k], NULL, read_loop, &rd[k]), 0);
	for (int64_t t = from; t < end; t += 1000) {
		for (int i = 0; i < 300; i++)
			append(f, i, t);
		atomic_store(&f->now, t + 1);
		if (t % 5000 == 0)
			assert_int_equal(gw_store_maintain(f->s), 0);
	}
	atomic_store(&stop, true);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(pthread_join(th[k], NULL), 0);
		assert_int_equal(rd[k].err, 0);
		assert_true(rd[k].selects > 0);
	}
	assert_int_equal(select_all(f, "i.*", from, end, &lim, &set), 0);
	assert_int_equal(set.n, 300);
	for (size_t k = 0; k < set.n; k++)
		n += set.s[k].n;
	assert_int_equal(n, 300 * (size_t)((end - from) / 1000));
	gw_series_set_release(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unlocked_select_matches_without_the_lock),
		cmocka_unit_test(unlocked_select_stops_when_told),
		cmocka_unit_test_setup_teardown(
			wide_select_sees_every_sample_once, setup, teardown),
		cmocka_unit_test_setup_teardown(
			select_stops_at_deadline_and_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(
			writer_appends_while_readers_select, setup, teardown),
		cmocka_unit_test_setup_teardown(day_closes_under_a_reader,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
