/* SPDX-License-Identifier: MIT */
/*
 * The store with a fake clock: samples come back exactly, rollups are
 * right, restarts and crashes (a child that _exit()s without closing) keep
 * everything flushed, retention and the disk budget drop the oldest days,
 * damaged files are quarantined while the rest stays readable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zstd.h>

#include "query/promql.h"
#include "store/store.h"
#include "store/store_int.h"

#define HOUR 3600000LL
#define DAY  (24 * HOUR)
/* 2026-11-30T00:00:00Z */
#define T0 1795996800000LL

struct fixture {
	char dir[64];
	int64_t now;
	struct gw_store_opts o;
	struct gw_store *s;
	bool maint_may_fail; /* the test breaks the disk on purpose */
};

static int64_t fake_now(void *ctx)
{
	return ((struct fixture *)ctx)->now;
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

	snprintf(f->dir, sizeof(f->dir), "/tmp/gw-store-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	gw_store_opts_defaults(&f->o);
	f->o.dir = f->dir;
	f->o.now = fake_now;
	f->o.now_ctx = f;
	f->now = T0;
	f->o.disk_budget = 0;
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

static double temp_at(int64_t t)
{
	return 40 + (double)((t / 1000) % 37);
}

/* Appends one sample per second per GPU in [from, to), maintaining. */
static void feed(struct fixture *f, int64_t from, int64_t to, int gpus)
{
	for (int64_t t = from; t < to; t += 1000) {
		for (int g = 0; g < gpus; g++) {
			char labels[64];

			snprintf(labels, sizeof(labels),
				 "uuid=\"GPU-%d\",gpu=\"%d\"", g, g);
			assert_int_equal(
				gw_store_append(
					f->s,
					"gpuwatch_gpu_temperature_celsius",
					labels, t, temp_at(t) + g),
				0);
		}
		f->now = t + 1;
		if (t % 5000 == 0) {
			int r = gw_store_maintain(f->s);

			if (!f->maint_may_fail)
				assert_int_equal(r, 0);
		}
	}
}

static struct gw_series_set select_gpu(struct fixture *f, const char *gpu,
				       int64_t mint, int64_t maxt,
				       enum gw_tier tier)
{
	const struct gw_queryable *q = gw_store_queryable(f->s);
	struct gw_matcher m[2];
	struct gw_query_limits lim = { 0 };
	struct gw_series_set set;

	assert_int_equal(gw_matcher_init(&m[0], GW_MATCH_EQ, "__name__",
					 "gpuwatch_gpu_temperature_celsius",
					 NULL, 0),
			 0);
	assert_int_equal(
		gw_matcher_init(&m[1], GW_MATCH_RE, "gpu", gpu, NULL, 0), 0);
	assert_int_equal(q->select(q->ctx, m, 2, mint, maxt, tier, &lim, &set),
			 0);
	gw_matcher_release(&m[0]);
	gw_matcher_release(&m[1]);
	return set;
}

/* Every raw sample of gpu 1 in [from, to) is there, once, exact. */
static void expect_raw(struct fixture *f, int64_t from, int64_t to)
{
	struct gw_series_set set =
		select_gpu(f, "1", from, to - 1, GW_TIER_RAW);

	assert_int_equal(set.n, 1);
	assert_string_equal(gw_labels_get(&set.s[0].labels, "uuid"), "GPU-1");
	assert_int_equal(set.s[0].n, (size_t)((to - from) / 1000));
	for (size_t i = 0; i < set.s[0].n; i++) {
		int64_t t = from + (int64_t)i * 1000;

		assert_int_equal(set.s[0].t[i], t);
		assert_true(set.s[0].v[i] == temp_at(t) + 1);
	}
	gw_series_set_release(&set);
}

static void samples_round_trip_across_cuts_and_restarts(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;

	feed(f, T0, T0 + 3 * HOUR + 600000, 2);
	gw_store_stats(f->s, &st);
	assert_true(st.cuts >= 2);
	assert_int_equal(st.series, 2);
	expect_raw(f, T0, T0 + 3 * HOUR + 600000);
	/* A clean restart: partitions + the head log. */
	reopen(f);
	expect_raw(f, T0, T0 + 3 * HOUR + 600000);
	/* and the store goes on after it; what came before the restart
	 * stays visible to queries that end before the new samples */
	feed(f, T0 + 3 * HOUR + 600000, T0 + 4 * HOUR + 60000, 2);
	expect_raw(f, T0 + HOUR, T0 + 4 * HOUR + 60000);
	expect_raw(f, T0, T0 + HOUR);
}

/* Rows of a table (or view) of a database file; -1 when there is none. */
static int64_t count_rows(const char *path, const char *table)
{
	char sql[128];
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	int64_t n = -1;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/*
 * A closed day's chunks (each series' hours merged) are zstd blocks
 * (format 2), and index.db's keys of the series known then are packed:
 * every sample and rollup reads back
 * the same, before and after a restart, and a series that goes on after
 * the restart keeps its id (one series, not two).
 */
static void closed_days_are_compressed_and_read_back(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;
	struct gw_series_set set;
	char path[PATH_MAX];

	feed(f, T0, T0 + DAY + 2 * HOUR, 2);
	for (int t = 0; t < 3; t++) {
		static const char *const tier[] = { "raw", "1m", "1h" };

		snprintf(path, sizeof(path), "%s/%s/2026-11-30.db", f->dir,
			 tier[t]);
		assert_true(count_rows(path, "zblocks") > 0);
		assert_int_equal(count_rows(path, "chunks"), -1);
		assert_int_equal(count_rows(path, "hblocks"), -1);
		assert_int_equal(count_rows(path, "hkeys"), -1);
		assert_int_equal(count_rows(path, "series"), 0);
	}
	snprintf(path, sizeof(path), "%s/index.db", f->dir);
	assert_int_equal(count_rows(path, "series"), 0);
	assert_int_equal(count_rows(path, "series_packed"), 1);
	for (int i = 0; i < 2; i++) {
		expect_raw(f, T0, T0 + DAY + 2 * HOUR);
		set = select_gpu(f, "1", T0, T0 + DAY, GW_TIER_1M);
		assert_int_equal(set.n, 1);
		assert_int_equal(set.s[0].n, 1440);
		gw_series_set_release(&set);
		set = select_gpu(f, "1", T0, T0 + DAY, GW_TIER_1H);
		assert_int_equal(set.n, 1);
		assert_int_equal(set.s[0].n, 24);
		assert_int_equal(set.s[0].r[23].count, 3600);
		gw_series_set_release(&set);
		reopen(f);
	}
	feed(f, T0 + DAY + 2 * HOUR, T0 + DAY + 3 * HOUR + 20000, 2);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 2);
	expect_raw(f, T0, T0 + DAY + 3 * HOUR + 20000);
}

struct keys_seen {
	int64_t id[4];
	char key[4][64];
	int n;
};

static int see_key(void *ctx, int64_t id, const char *key)
{
	struct keys_seen *k = ctx;

	assert_true(k->n < 4);
	k->id[k->n] = id;
	snprintf(k->key[k->n++], sizeof(k->key[0]), "%s", key);
	return 0;
}

/* A list of keys packed by an earlier version (format 1: varint id, key,
 * NUL) reads as one of today's (front-coded), and a damaged one is
 * refused, not misread. */
static void packed_key_lists_of_both_formats_are_read(void **state)
{
	static const uint8_t v1[] = "\x05m{a=\"1\"}\0\x81\x01m{a=\"2\"}";
	static const char *const keys[] = { "m{a=\"1\"}", "m{a=\"2\"}" };
	struct fixture *f = *state;
	struct keys_seen k = { 0 };
	char path[PATH_MAX];
	uint8_t z[256];
	size_t zlen;
	sqlite3 *db;
	sqlite3_stmt *st;

	/* format 1, made as the earlier version made it */
	zlen = ZSTD_compress(z, sizeof(z), v1, sizeof(v1), 3);
	assert_false(ZSTD_isError(zlen));
	assert_int_equal(gw_store_each_packed(z, zlen, 4096, see_key, &k), 0);
	assert_int_equal(k.n, 2);
	assert_int_equal(k.id[0], 5);
	assert_int_equal(k.id[1], 129);
	for (int i = 0; i < 2; i++)
		assert_string_equal(k.key[i], keys[i]);
	/* format 2, from a series table */
	snprintf(path, sizeof(path), "%s/keys.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(db,
			     "CREATE TABLE meta(k TEXT PRIMARY KEY, v);"
			     "CREATE TABLE series(id INTEGER PRIMARY KEY, key);"
			     "INSERT INTO series VALUES (129, 'm{a=\"2\"}'),"
			     " (5, 'm{a=\"1\"}');",
			     NULL, NULL, NULL),
		SQLITE_OK);
	assert_int_equal(gw_store_pack_series(db), 0);
	memset(&k, 0, sizeof(k));
	assert_int_equal(gw_store_each_series(db, see_key, &k), 0);
	assert_int_equal(k.n, 2);
	assert_int_equal(k.id[0], 5);
	assert_int_equal(k.id[1], 129);
	for (int i = 0; i < 2; i++)
		assert_string_equal(k.key[i], keys[i]);
	/* one flipped bit: zstd's checksum refuses it */
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT v FROM meta WHERE k = "
					    "'series_zstd'",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	zlen = (size_t)sqlite3_column_bytes(st, 0);
	assert_true(zlen <= sizeof(z));
	memcpy(z, sqlite3_column_blob(st, 0), zlen);
	sqlite3_finalize(st);
	sqlite3_close(db);
	z[zlen / 2] ^= 0x10;
	memset(&k, 0, sizeof(k));
	assert_int_equal(gw_store_each_packed(z, zlen, 4096, see_key, &k),
			 -EBADMSG);
}

/*
 * An hour block of the open day that no longer decodes (one flipped
 * byte: zstd's checksum) is skipped when the day closes, and counted in
 * gpuwatch_store_corrupt_chunks_total; the other hours close as they
 * were.
 */
static void a_damaged_hour_block_is_counted_at_close(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;
	struct gw_series_set set;
	char path[PATH_MAX];
	sqlite3_stmt *q;
	static uint8_t z[1 << 20];
	size_t zlen;
	int64_t id;
	sqlite3 *db;

	feed(f, T0, T0 + 2 * HOUR + 20000, 2);
	gw_store_close(f->s);
	f->s = NULL;
	snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT id, data FROM hblocks "
					    "ORDER BY id LIMIT 1",
					    -1, &q, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	id = sqlite3_column_int64(q, 0);
	zlen = (size_t)sqlite3_column_bytes(q, 1);
	assert_true(zlen > 16 && zlen <= sizeof(z));
	memcpy(z, sqlite3_column_blob(q, 1), zlen);
	sqlite3_finalize(q);
	z[zlen / 2] ^= 0x10;
	assert_int_equal(sqlite3_prepare_v2(db,
					    "UPDATE hblocks SET data = ? "
					    "WHERE id = ?",
					    -1, &q, NULL),
			 SQLITE_OK);
	sqlite3_bind_blob(q, 1, z, (int)zlen, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, id);
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	sqlite3_close(db);
	reopen(f);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.corrupt_chunks, 0);
	/* past the end of the day: it closes */
	feed(f, T0 + 2 * HOUR + 20000, T0 + DAY + HOUR, 2);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.corrupt_chunks, 1);
	/* the first hour is what the block held; the rest is there */
	expect_raw(f, T0 + HOUR, T0 + DAY + HOUR);
	set = select_gpu(f, "1", T0, T0 + HOUR - 1, GW_TIER_RAW);
	assert_true(set.n == 0 || set.s[0].n < HOUR / 1000);
	gw_series_set_release(&set);
}

/* A partition closed by an earlier version (format 1: one row per chunk in
 * `packed`, `chunks` a view over it) is still read. */
static void closed_days_of_format_1_are_read(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX];
	uint64_t damaged = 0;
	sqlite3 *db;

	feed(f, T0, T0 + 2 * HOUR + 20000, 2);
	gw_store_close(f->s);
	f->s = NULL;
	snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
	assert_true(count_rows(path, "hblocks") > 0);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	/* the cut hours as rows, then what closing a day did before
	 * format 2 */
	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(gw_store_unpack_hours(db, &damaged), 0);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_true(count_rows(path, "chunks") > 0);
	assert_int_equal(
		sqlite3_exec(
			db,
			"BEGIN; CREATE TABLE packed(id INTEGER PRIMARY KEY,"
			" t_min INTEGER NOT NULL, t_max INTEGER NOT NULL,"
			" n INTEGER NOT NULL, data BLOB NOT NULL);"
			"INSERT INTO packed SELECT (series << 20) + "
			"row_number()"
			" OVER (PARTITION BY series ORDER BY t_min) - 1, t_min,"
			" t_max, n, data FROM chunks WHERE series > 0 ORDER BY"
			" series, t_min; DROP TABLE chunks;"
			"CREATE VIEW chunks AS SELECT id >> 20 AS series, "
			"t_min,"
			" t_max, n, data FROM packed; COMMIT;",
			NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);
	reopen(f);
	expect_raw(f, T0, T0 + 2 * HOUR + 20000);
}

/* Every row of a query, as text (blobs in hex), one line each. */
static char *dump(const char *path, const char *query)
{
	struct gw_buf out;
	sqlite3_stmt *st;
	sqlite3 *db;

	gw_buf_init(&out, 1u << 30);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, query, -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int c = 0; c < sqlite3_column_count(st); c++) {
			const uint8_t *b = sqlite3_column_blob(st, c);
			int n = sqlite3_column_bytes(st, c);

			for (int i = 0; i < n; i++)
				assert_int_equal(
					gw_buf_printf(&out, "%02x", b[i]), 0);
			gw_buf_put(&out, " ", 1);
		}
		gw_buf_put(&out, "\n", 1);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	gw_buf_put(&out, "", 1);
	assert_int_equal(gw_buf_error(&out), 0);
	return out.p;
}

/*
 * Closing a day straight from its hour blocks (close.c) writes the same
 * tables, row for row and byte for byte, as unpacking the hours into rows,
 * merging and packing them: for long series whose chunks are merged across
 * hours, short ones of one chunk and ones cut by an hour, in each tier.
 */
static void closing_from_hours_equals_closing_through_rows(void **state)
{
	struct fixture *f = *state;

	/* 3 GPUs at 1 s for 3 h; 400 processes of 10 samples 27 s apart */
	for (int64_t t = T0; t < T0 + 3 * HOUR; t += 1000) {
		for (int g = 0; g < 3; g++) {
			char labels[64];

			snprintf(labels, sizeof(labels), "gpu=\"%d\"", g);
			assert_int_equal(gw_store_append(f->s, "temp", labels,
							 t, temp_at(t) + g),
					 0);
		}
		for (int p = 0; p < 400; p++) {
			int64_t start = T0 + p * (3 * HOUR - 300000) / 400;
			char labels[64];

			if (t < start || t >= start + 270000 ||
			    (t - start) % 27000)
				continue;
			snprintf(labels, sizeof(labels),
				 "pid=\"%d\",comm=\"c%d\"", 1000 + p, p % 7);
			assert_int_equal(
				gw_store_append(f->s, "mem", labels, t,
						(double)(p * 4096 + t % 7)),
				0);
		}
		f->now = t + 1;
		if (t % 5000 == 0)
			assert_int_equal(gw_store_maintain(f->s), 0);
	}
	f->now = T0 + 3 * HOUR + 20000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	gw_store_close(f->s);
	f->s = NULL;
	for (int t = 0; t < 3; t++) {
		static const char *const tier[] = { "raw", "1m", "1h" };
		char path[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 8];
		char cmd[5 * PATH_MAX];
		uint64_t damaged = 0;
		char *x, *y;
		sqlite3 *db;

		snprintf(path, sizeof(path), "%s/%s/2026-11-30.db", f->dir,
			 tier[t]);
		snprintf(a, sizeof(a), "%s.rows", path);
		snprintf(b, sizeof(b), "%s.hours", path);
		snprintf(cmd, sizeof(cmd), "cp %s %s && cp %s %s", path, a,
			 path, b);
		assert_int_equal(system(cmd), 0);
		assert_true(count_rows(path, "hblocks") > 0);
		/* through rows */
		assert_int_equal(sqlite3_open(a, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL),
				 SQLITE_OK);
		assert_int_equal(gw_store_unpack_hours(db, &damaged), 0);
		assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL),
				 SQLITE_OK);
		assert_int_equal(gw_store_compact_db(db, (enum gw_tier)t), 0);
		assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL),
				 SQLITE_OK);
		assert_int_equal(gw_store_pack_series(db), 0);
		assert_int_equal(gw_store_pack_chunks(db), 0);
		assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
		/* straight */
		assert_int_equal(sqlite3_open(b, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL),
				 SQLITE_OK);
		assert_int_equal(
			gw_store_close_hours(db, (enum gw_tier)t, &damaged), 0);
		assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
		assert_int_equal(damaged, 0);
		assert_true(count_rows(b, "zblocks") > 0);
		x = dump(a,
			 "SELECT name, sql FROM sqlite_master ORDER BY name");
		y = dump(b,
			 "SELECT name, sql FROM sqlite_master ORDER BY name");
		assert_string_equal(x, y);
		free(x);
		free(y);
		x = dump(a, "SELECT * FROM zblocks ORDER BY id");
		y = dump(b, "SELECT * FROM zblocks ORDER BY id");
		assert_string_equal(x, y);
		free(x);
		free(y);
		x = dump(a, "SELECT * FROM meta ORDER BY k");
		y = dump(b, "SELECT * FROM meta ORDER BY k");
		assert_non_null(
			strstr(y, "7365726965735f7a737464")); /* series_zstd */
		assert_string_equal(x, y);
		free(x);
		free(y);
	}
	/* and the store closes the day that way, every sample there */
	reopen(f);
	f->now = T0 + DAY + HOUR + 20000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
		assert_int_equal(count_rows(path, "hblocks"), -1);
		assert_true(count_rows(path, "zblocks") > 0);
	}
}

/*
 * A day an earlier version began (its cut hours as rows of `chunks` and
 * `series`, no hour blocks): read as it is, its later hours go to hour
 * blocks beside the rows, and the day closes with every sample and
 * rollup, rows and blocks together.
 */
static void open_days_of_rows_are_read_and_closed(void **state)
{
	struct fixture *f = *state;
	struct gw_series_set set;
	char path[PATH_MAX];
	uint64_t damaged = 0;
	sqlite3 *db;

	feed(f, T0, T0 + 2 * HOUR + 20000, 2);
	gw_store_close(f->s);
	f->s = NULL;
	for (int t = 0; t < 3; t++) {
		static const char *const tier[] = { "raw", "1m", "1h" };

		snprintf(path, sizeof(path), "%s/%s/2026-11-30.db", f->dir,
			 tier[t]);
		assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL),
				 SQLITE_OK);
		assert_int_equal(gw_store_unpack_hours(db, &damaged), 0);
		assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
		assert_true(count_rows(path, "chunks") > 0);
		assert_int_equal(count_rows(path, "hblocks"), -1);
	}
	reopen(f);
	expect_raw(f, T0, T0 + 2 * HOUR + 20000);
	feed(f, T0 + 2 * HOUR + 20000, T0 + DAY + HOUR, 2);
	snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
	assert_true(count_rows(path, "zblocks") > 0);
	expect_raw(f, T0, T0 + DAY + HOUR);
	set = select_gpu(f, "1", T0, T0 + DAY, GW_TIER_1M);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.s[0].n, 1440);
	gw_series_set_release(&set);
	set = select_gpu(f, "1", T0, T0 + DAY, GW_TIER_1H);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.s[0].n, 24);
	for (size_t i = 0; i < 24; i++)
		assert_true(set.s[0].r[i].count == 3600);
	gw_series_set_release(&set);
}

/* A 5-6 Hz series (gpu 9): its raw chunk is sealed at 14,400 samples,
 * in the middle of an hour and of a minute. */
#define FAST_MS 170

static int64_t fast_last; /* the last sample fed */

static double fast_at(int64_t t)
{
	return 3 + 0.1 * (double)((t / FAST_MS) % 97);
}

static void same_bits(double a, double b)
{
	assert_memory_equal(&a, &b, sizeof(a));
}

/* Feeds the samples from the one after fast_last (or T0) to `to`,
 * maintaining every 5 s. */
static void feed_fast(struct fixture *f, int64_t to)
{
	int64_t t = fast_last == INT64_MIN ? T0 : fast_last + FAST_MS;

	for (; t < to; t += FAST_MS) {
		assert_int_equal(
			gw_store_append(f->s,
					"gpuwatch_gpu_temperature_celsius",
					"gpu=\"9\"", t, fast_at(t)),
			0);
		fast_last = t;
		f->now = t + 1;
		if (t / 5000 != (t + FAST_MS) / 5000)
			assert_int_equal(gw_store_maintain(f->s), 0);
	}
}

/* Whether the store's 1-minute column of gpu 9, every minute so far, is
 * the rollups of the samples themselves, added one by one, window for
 * window and bit for bit. */
static void expect_minutes(struct fixture *f)
{
	int64_t upto = fast_last - fast_last % 60000 + 60000;
	struct gw_series_set set = select_gpu(f, "9", T0, upto, GW_TIER_1M);
	struct gw_rollup want;
	int64_t t = T0;

	assert_int_equal(set.n, 1);
	assert_int_equal(set.s[0].n, (size_t)((upto - T0) / 60000));
	gw_rollup_init(&want, 0);
	for (size_t i = 0; i < set.s[0].n; i++) {
		const struct gw_rollup *r = &set.s[0].r[i];

		assert_int_equal(r->t, T0 + (int64_t)(i + 1) * 60000);
		gw_rollup_reset(&want, r->t);
		for (; t < r->t && t <= fast_last; t += FAST_MS)
			assert_int_equal(gw_rollup_add(&want, t, fast_at(t)),
					 0);
		same_bits(r->count, want.count);
		same_bits(r->sum, want.sum);
		same_bits(r->sumsq, want.sumsq);
		same_bits(r->min, want.min);
		same_bits(r->max, want.max);
		same_bits(r->first, want.first);
		same_bits(r->last, want.last);
		assert_int_equal(r->t_first, want.t_first);
		assert_int_equal(r->t_last, want.t_last);
		assert_true(r->sk.count == want.sk.count);
		same_bits(gw_sketch_quantile(&r->sk, 0.9),
			  gw_sketch_quantile(&want.sk, 0.9));
	}
	gw_rollup_release(&want);
	gw_series_set_release(&set);
}

/*
 * The closed minutes of the hour are rebuilt from the raw chunk when it
 * is sealed, and by readers before that (struct head): a query sees the
 * same rollups whether a minute is in the open chunk, in one sealed
 * before its hour ended, split across two chunks, sealed or written.
 */
static void minutes_rebuilt_from_raw_are_exact(void **state)
{
	struct fixture *f = *state;
	/* the 14,401st sample seals the first chunk at 40 min 48 s */
	int64_t split = T0 + 14400LL * FAST_MS;

	fast_last = INT64_MIN;
	feed_fast(f, T0 + 30 * 60000 + 5000); /* all in the open chunk */
	expect_minutes(f);
	feed_fast(f, split + 1); /* minute 40 split */
	expect_minutes(f);
	feed_fast(f, T0 + 41 * 60000 + 1); /* and closed */
	expect_minutes(f);
	feed_fast(f, T0 + HOUR + 10 * 60000); /* the first hour sealed */
	expect_minutes(f);
	/* past the cut of both hours, and after a restart */
	f->now = T0 + 2 * HOUR + 11 * 60000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	expect_minutes(f);
	reopen(f);
	expect_minutes(f);
}

static void rollups_hold_minute_and_hour_aggregates(void **state)
{
	struct fixture *f = *state;
	struct gw_series_set set;

	feed(f, T0, T0 + 2 * HOUR + 120000, 2);
	set = select_gpu(f, "1", T0, T0 + 2 * HOUR, GW_TIER_1M);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.s[0].n, 120);
	for (size_t i = 0; i < set.s[0].n; i++) {
		const struct gw_rollup *r = &set.s[0].r[i];
		double sum = 0, mn = INFINITY, mx = -INFINITY;
		int64_t start = r->t - 60000;

		assert_int_equal(r->t, T0 + (int64_t)(i + 1) * 60000);
		for (int64_t t = start; t < r->t; t += 1000) {
			double v = temp_at(t) + 1;

			sum += v;
			mn = fmin(mn, v);
			mx = fmax(mx, v);
		}
		assert_true(r->count == 60);
		assert_true(fabs(r->sum - sum) < 1e-9);
		assert_true(r->min == mn);
		assert_true(r->max == mx);
		assert_true(r->last == temp_at(r->t - 1000) + 1);
	}
	gw_series_set_release(&set);
	/* A series that stops: its last minute is there at once, not after
	 * the next cut (it is still open in the head). */
	set = select_gpu(f, "1", T0 + 2 * HOUR + 1, T0 + 2 * HOUR + 120000,
			 GW_TIER_1M);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.s[0].n, 2);
	assert_int_equal(set.s[0].r[1].t, T0 + 2 * HOUR + 120000);
	assert_true(set.s[0].r[1].count == 60);
	assert_true(set.s[0].r[1].last == temp_at(T0 + 2 * HOUR + 119000) + 1);
	gw_series_set_release(&set);
	/* The hour still being filled counts once its end is in range. */
	set = select_gpu(f, "0|1", T0, T0 + 3 * HOUR, GW_TIER_1H);
	assert_int_equal(set.n, 2);
	assert_int_equal(set.s[1].n, 3);
	assert_true(set.s[1].r[0].count == 3600);
	assert_int_equal(set.s[1].r[1].t, T0 + 2 * HOUR);
	assert_true(set.s[1].r[2].count == 120);
	assert_int_equal(set.s[1].r[2].t_last, T0 + 2 * HOUR + 119000);
	gw_series_set_release(&set);
	set = select_gpu(f, "0|1", T0, T0 + 2 * HOUR, GW_TIER_1H);
	assert_int_equal(set.s[1].n, 2);
	gw_series_set_release(&set);
	/* The same after a restart (1-hour column reloaded, head replayed). */
	reopen(f);
	set = select_gpu(f, "1", T0, T0 + 3 * HOUR, GW_TIER_1H);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.s[0].n, 3);
	gw_series_set_release(&set);
}

static void crash_loses_at_most_the_flush_interval(void **state)
{
	struct fixture *f = *state;
	pid_t pid;
	int status;

	/* The child owns the store from open to a death without close. */
	gw_store_close(f->s);
	f->s = NULL;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[256];

		if (gw_store_open(&f->s, &f->o, err, sizeof(err)))
			_exit(2);
		feed(f, T0, T0 + HOUR + 30000, 2);
		/* Flushed at +60 s; the samples after it are not. */
		for (int64_t t = T0 + HOUR + 30000; t < T0 + HOUR + 65000;
		     t += 1000) {
			if (gw_store_append(f->s,
					    "gpuwatch_gpu_temperature_celsius",
					    "gpu=\"1\",uuid=\"GPU-1\"", t,
					    temp_at(t) + 1))
				_exit(3);
			f->now = t;
			if (t == T0 + HOUR + 60000 && gw_store_flush(f->s))
				_exit(4);
		}
		_exit(0); /* no close: what kill -9 leaves behind */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	f->now = T0 + HOUR + 65000;
	reopen(f);
	expect_raw(f, T0, T0 + HOUR + 61000);
	{
		struct gw_series_set set = select_gpu(
			f, "1", T0 + HOUR + 61000, T0 + 2 * HOUR, GW_TIER_RAW);

		assert_int_equal(set.n, 0); /* those were never flushed */
		gw_series_set_release(&set);
	}
}

static void out_of_order_is_refused_and_counted(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;

	assert_int_equal(gw_store_append(f->s, "m", "", T0 + 5000, 1), 0);
	assert_int_equal(gw_store_append(f->s, "m", "", T0 + 5000, 2), 0);
	assert_int_equal(gw_store_append(f->s, "m", "", T0 + 4000, 3), -EDOM);
	assert_int_equal(gw_store_append(f->s, "bad name", "", T0, 3), -EINVAL);
	assert_int_equal(gw_store_append(f->s, "m", "x=1", T0 + 6000, 3),
			 -EINVAL);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.samples_refused_order, 1);
	assert_int_equal(st.samples_refused_bad, 2);
	assert_int_equal(st.samples_appended, 2);
}

static void series_cap_refuses_and_counts(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;
	char labels[32];

	f->o.max_series = 3;
	reopen(f);
	for (int i = 0; i < 5; i++) {
		snprintf(labels, sizeof(labels), "pid=\"%d\"", i);
		assert_int_equal(gw_store_append(f->s, "m", labels, T0, 1),
				 i < 3 ? 0 : -ENOSPC);
	}
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 3);
	assert_int_equal(st.samples_refused_cap, 2);

	/* distinct values of one label name over all series */
	f->o.max_series = 100;
	f->o.max_values = 3;
	reopen(f); /* the three series come back from index.db */
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 3);
	assert_int_equal(gw_store_append(f->s, "m", "pid=\"0\"", T0 + 1000, 1),
			 0);
	assert_int_equal(gw_store_append(f->s, "m2", "pid=\"0\"", T0, 1), 0);
	assert_int_equal(gw_store_append(f->s, "m", "pid=\"7\"", T0, 1),
			 -E2BIG);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.samples_refused_cap, 1);
}

static size_t count_files(const char *dir, const char *sub)
{
	char path[256];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void retention_drops_whole_old_days(void **state)
{
	struct fixture *f = *state;
	struct gw_series_set set;

	f->o.retention_ms[GW_TIER_RAW] = DAY;
	reopen(f);
	/* Two samples an hour for four days. */
	for (int64_t t = T0; t < T0 + 4 * DAY; t += HOUR / 2) {
		assert_int_equal(gw_store_append(f->s, "m", "gpu=\"1\"", t, 1),
				 0);
		f->now = t + 11000;
		assert_int_equal(gw_store_maintain(f->s), 0);
	}
	f->now = T0 + 4 * DAY + 61000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	/* raw keeps the last day or so; 1h keeps all four days */
	assert_true(count_files(f->dir, "raw") <= 2);
	assert_int_equal(count_files(f->dir, "1h"), 4);
	{
		const struct gw_queryable *q = gw_store_queryable(f->s);
		struct gw_matcher m;
		struct gw_query_limits lim = { 0 };

		assert_int_equal(gw_matcher_init(&m, GW_MATCH_EQ, "__name__",
						 "m", NULL, 0),
				 0);
		assert_int_equal(q->select(q->ctx, &m, 1, T0, T0 + DAY,
					   GW_TIER_RAW, &lim, &set),
				 0);
		assert_int_equal(set.n, 0);
		gw_series_set_release(&set);
		/* the tier picked for old data is one that still has it */
		assert_int_equal(q->pick_tier(q->ctx, T0, T0 + DAY, 0),
				 GW_TIER_1M);
		/* and raw wherever raw is kept, at any step */
		assert_int_equal(
			q->pick_tier(q->ctx, T0 + 3 * DAY, T0 + 4 * DAY, HOUR),
			GW_TIER_RAW);
		assert_int_equal(q->pick_tier(q->ctx, T0 + 3 * DAY - 1,
					      T0 + 4 * DAY, HOUR),
				 GW_TIER_1H);
		assert_int_equal(q->select(q->ctx, &m, 1, T0, T0 + DAY,
					   GW_TIER_1H, &lim, &set),
				 0);
		assert_int_equal(set.n, 1);
		assert_int_equal(set.s[0].n, 24);
		gw_series_set_release(&set);
		gw_matcher_release(&m);
	}
}

static void disk_budget_drops_oldest_first(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;

	f->o.retention_ms[GW_TIER_RAW] = 30 * DAY;
	reopen(f);
	feed(f, T0, T0 + 3 * DAY + HOUR, 2);
	/* closing checkpoints the write-ahead logs; the second time round
	 * they hold what the one after the budget will */
	for (int i = 0; i < 2; i++) {
		reopen(f);
		f->now += 61000;
		assert_int_equal(gw_store_maintain(f->s), 0);
	}
	gw_store_stats(f->s, &st);
	assert_true(st.disk_bytes > 0);
	/* Budget: what is used less half of the closed days, so that
	 * some must go (closed days are compressed: small beside the
	 * open day and index.db, whose log comes and goes). */
	{
		struct gw_store_partition *v;
		uint64_t closed = 0;
		size_t n;

		assert_int_equal(gw_store_partitions(f->s, &v, &n), 0);
		for (size_t i = 0; i < n; i++)
			if (v[i].closed)
				closed += v[i].bytes;
		free(v);
		assert_true(closed > 0);
		f->o.disk_budget = st.disk_bytes - closed / 2;
	}
	reopen(f);
	f->now += 61000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	gw_store_stats(f->s, &st);
	assert_true(st.partitions_dropped_budget > 0);
	assert_true(st.disk_bytes <= f->o.disk_budget);
	/* the newest data is still there, the oldest is gone */
	expect_raw(f, T0 + 3 * DAY, T0 + 3 * DAY + HOUR);
	{
		struct gw_series_set set =
			select_gpu(f, "0", T0, T0 + HOUR, GW_TIER_RAW);

		assert_int_equal(set.n, 0);
		gw_series_set_release(&set);
	}
}

static void garble(const char *path, long at, size_t n)
{
	int fd = open(path, O_WRONLY);
	char junk[4096];

	assert_true(fd >= 0);
	memset(junk, 0xA5, sizeof(junk));
	assert_true(n <= sizeof(junk));
	assert_int_equal(pwrite(fd, junk, n, at), (ssize_t)n);
	close(fd);
}

static void damaged_files_are_quarantined(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;
	char path[256];

	feed(f, T0, T0 + DAY + 2 * HOUR, 2);
	gw_store_close(f->s);
	f->s = NULL;
	/* Day 1 raw: truncated.  Day 1 1m: garbled header. */
	snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
	assert_int_equal(chmod(path, 0644), 0);
	{
		struct stat sb;

		assert_int_equal(stat(path, &sb), 0);
		assert_true(sb.st_size >= 2048);
		assert_int_equal(truncate(path, sb.st_size / 2), 0);
	}
	assert_int_equal(gw_store_check_file(path), -EBADMSG);
	snprintf(path, sizeof(path), "%s/1m/2026-11-30.db", f->dir);
	assert_int_equal(chmod(path, 0644), 0);
	garble(path, 0, 100);
	reopen(f);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.files_quarantined, 2);
	assert_int_equal(count_files(f->dir, "quarantine"), 2);
	/* what was not damaged is all there */
	expect_raw(f, T0 + DAY, T0 + DAY + 2 * HOUR);
	{
		struct gw_series_set set =
			select_gpu(f, "1", T0, T0 + DAY, GW_TIER_1H);

		assert_int_equal(set.n, 1);
		assert_int_equal(set.s[0].n, 24);
		gw_series_set_release(&set);
	}
	/* the store goes on writing */
	feed(f, T0 + DAY + 2 * HOUR, T0 + DAY + 3 * HOUR + 20000, 2);
	expect_raw(f, T0 + DAY, T0 + DAY + 3 * HOUR + 20000);
}

static void damage_found_by_a_query_is_quarantined(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;
	struct gw_series_set set;
	char path[256];
	struct stat sb;

	feed(f, T0, T0 + DAY + 2 * HOUR, 2);
	/* Day 1 is closed; damage its raw file under the running store. */
	snprintf(path, sizeof(path), "%s/raw/2026-11-30.db", f->dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(chmod(path, 0644), 0);
	/* every page but the first: opening works, reading does not */
	for (long at = 1024; at + 1024 <= sb.st_size; at += 1024)
		garble(path, at, 1024);
	set = select_gpu(f, "1", T0, T0 + DAY - 1, GW_TIER_RAW);
	gw_series_set_release(&set);
	gw_store_stats(f->s, &st);
	assert_true(st.corrupt_chunks > 0);
	f->now += 1000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.files_quarantined, 1);
	assert_int_equal(count_files(f->dir, "quarantine"), 1);
	assert_int_not_equal(access(path, F_OK), 0);
	/* everything else stays readable */
	expect_raw(f, T0 + DAY, T0 + DAY + 2 * HOUR);
	set = select_gpu(f, "1", T0, T0 + DAY, GW_TIER_1H);
	assert_int_equal(set.n, 1);
	assert_int_equal(set.s[0].n, 24);
	gw_series_set_release(&set);
}

static void damaged_index_is_rebuilt_from_partitions(void **state)
{
	struct fixture *f = *state;
	char path[256];

	feed(f, T0, T0 + 2 * HOUR + 20000, 2);
	gw_store_close(f->s);
	f->s = NULL;
	snprintf(path, sizeof(path), "%s/index.db", f->dir);
	garble(path, 0, 4096);
	reopen(f);
	/* the hours cut to partitions survive with their series */
	expect_raw(f, T0, T0 + 2 * HOUR);
}

static void sql(const char *path, const char *stmt)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_exec(db, stmt, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* comm="" is no label: one series whichever way it is spelled, at append
 * and in data written before empty values were dropped. */
static void empty_label_value_is_absent(void **state)
{
	struct fixture *f = *state;
	const struct gw_queryable *q;
	struct gw_query_limits lim = { 0 };
	struct gw_string_list names;
	struct gw_series_set set;
	struct gw_store_stats st;
	struct gw_matcher m[2];
	char path[128];

	assert_int_equal(
		gw_store_append(f->s, "m", "comm=\"\",pid=\"1\"", T0, 1), 0);
	assert_int_equal(gw_store_append(f->s, "m", "pid=\"1\"", T0 + 1000, 2),
			 0);
	assert_int_equal(
		gw_store_append(f->s, "m", "pid=\"1\",comm=\"\"", T0 + 2000, 3),
		0);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 1);
	f->now = T0 + 5000;
	assert_int_equal(gw_store_maintain(f->s), 0);
	/* An index.db row from an older version, with the empty value. */
	snprintf(path, sizeof(path), "%s/index.db", f->dir);
	gw_store_close(f->s);
	f->s = NULL;
	sql(path, "INSERT INTO series(id, key) VALUES "
		  "(99, 'm{comm=\"\",pid=\"2\"}')");
	reopen(f);
	assert_int_equal(gw_store_append(f->s, "m", "pid=\"2\"", T0 + 3000, 4),
			 0);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 2);
	q = gw_store_queryable(f->s);
	assert_int_equal(
		gw_matcher_init(&m[0], GW_MATCH_EQ, "__name__", "m", NULL, 0),
		0);
	assert_int_equal(
		gw_matcher_init(&m[1], GW_MATCH_EQ, "comm", "", NULL, 0), 0);
	assert_int_equal(q->select(q->ctx, m, 2, T0, T0 + 10000, GW_TIER_RAW,
				   &lim, &set),
			 0);
	assert_int_equal(set.n, 2);
	assert_null(gw_labels_get(&set.s[0].labels, "comm"));
	assert_null(gw_labels_get(&set.s[1].labels, "comm"));
	assert_int_equal(set.s[0].n, 3); /* pid 1: all three samples */
	assert_int_equal(set.s[1].n, 1);
	gw_series_set_release(&set);
	gw_matcher_release(&m[0]);
	gw_matcher_release(&m[1]);
	/* /api/v1/labels and label values never list it. */
	assert_int_equal(q->label_values(q->ctx, NULL, NULL, NULL, 0, T0,
					 T0 + 10000, NULL, &names),
			 0);
	for (size_t i = 0; i < names.n; i++)
		assert_string_not_equal(names.v[i], "comm");
	gw_string_list_release(&names);
	assert_int_equal(q->label_values(q->ctx, "comm", NULL, NULL, 0, T0,
					 T0 + 10000, NULL, &names),
			 0);
	assert_int_equal(names.n, 0);
	gw_string_list_release(&names);
}

static void failing_flushes_keep_samples_in_memory(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;
	struct rlimit full, was;

	feed(f, T0, T0 + 60000, 2);
	/* Flushes fail from now on: no file may grow (as on a full disk;
	 * the limit holds for root too). */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	full = was;
	full.rlim_cur = 1;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &full), 0);
	f->maint_may_fail = true;
	feed(f, T0 + 60000, T0 + 60000 + 5000 * 1000, 2);
	gw_store_stats(f->s, &st);
	assert_true(st.flush_errors > 0);
	assert_true(st.samples_unlogged > 0);
	/* nothing was refused and everything is still readable */
	assert_int_equal(st.samples_refused_order + st.samples_refused_cap +
				 st.samples_refused_bad,
			 0);
	expect_raw(f, T0, T0 + 60000 + 5000 * 1000);
	/* the disk comes back: flushes and cuts go on */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	feed(f, T0 + 60000 + 5000 * 1000, T0 + 3 * HOUR, 2);
	f->maint_may_fail = false;
	assert_int_equal(gw_store_maintain(f->s), 0);
	gw_store_stats(f->s, &st);
	assert_true(st.cuts >= 2);
	reopen(f);
	expect_raw(f, T0, T0 + 3 * HOUR);
}

/* The head log's segments in DIR/headlog, newest last (at most 16). */
static size_t log_segments(struct fixture *f, char (*names)[PATH_MAX])
{
	struct dirent **e;
	char dir[128];
	size_t k = 0;
	int n;

	snprintf(dir, sizeof(dir), "%s/headlog", f->dir);
	n = scandir(dir, &e, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (strstr(e[i]->d_name, ".log") && k < 16)
			snprintf(names[k++], PATH_MAX, "%s/%s", dir,
				 e[i]->d_name);
		free(e[i]);
	}
	if (n >= 0)
		free(e);
	return k;
}

/*
 * The head log keeps only what the partitions do not hold yet: after hours
 * of cuts, the segments are the current one and the one before it (its
 * last samples are after the watermark), not one per hour.
 */
static void the_head_log_keeps_only_what_is_not_cut(void **state)
{
	struct fixture *f = *state;
	char names[16][PATH_MAX];
	size_t n;

	feed(f, T0, T0 + 5 * HOUR + 20000, 2);
	assert_int_equal(gw_store_flush(f->s), 0);
	n = log_segments(f, names);
	assert_true(n >= 1 && n <= 2);
	reopen(f);
	expect_raw(f, T0, T0 + 5 * HOUR + 20000);
}

/* The bytes of the head log's segments. */
static uint64_t log_bytes(struct fixture *f)
{
	char names[16][PATH_MAX];
	uint64_t total = 0;
	size_t n = log_segments(f, names);

	for (size_t i = 0; i < n; i++) {
		struct stat st;

		assert_int_equal(stat(names[i], &st), 0);
		total += (uint64_t)st.st_size;
	}
	return total;
}

/*
 * Hours of history arriving at once (an import: the clock stands after
 * them) fill the head log before any cut; once cut, the log keeps little
 * more than what is after the watermark, not all of it (a segment goes
 * only when all its samples are cut, so segments end at a few MiB).
 */
static void history_leaves_the_head_log_once_cut(void **state)
{
	struct fixture *f = *state;
	const int64_t end = T0 + 12 * HOUR + 30 * 60000;
	uint64_t before, after;

	f->now = end + 10 * 60000;
	for (int64_t t = T0; t < end; t += 1000) {
		for (int g = 0; g < 20; g++) {
			char labels[64];

			snprintf(labels, sizeof(labels),
				 "uuid=\"GPU-%d\",gpu=\"%d\"", g, g);
			assert_int_equal(
				gw_store_append(
					f->s,
					"gpuwatch_gpu_temperature_celsius",
					labels, t, temp_at(t) + g),
				0);
		}
		if (t % 60000 == 0)
			assert_int_equal(gw_store_flush(f->s), 0);
	}
	assert_int_equal(gw_store_flush(f->s), 0);
	before = log_bytes(f);
	assert_true(before > (8u << 20)); /* 12.5 h of 20 series */
	/* the cut up to 12:00 */
	assert_int_equal(gw_store_maintain(f->s), 0);
	after = log_bytes(f);
	assert_true(after > 0);
	assert_true(after < before / 2);
	/* and every sample is there, cut or replayed */
	reopen(f);
	expect_raw(f, T0, end);
}

/*
 * A crash of the machine can leave a segment's last record partly
 * written: the store opens, replays every record before it and writes on,
 * and the next restart reads both the old segment and the new one.
 */
static void a_torn_head_log_record_is_skipped(void **state)
{
	struct fixture *f = *state;
	char names[16][PATH_MAX];
	size_t n;
	FILE *fp;

	feed(f, T0, T0 + 600000, 2);
	gw_store_close(f->s);
	f->s = NULL;
	n = log_segments(f, names);
	assert_true(n >= 1);
	/* a record's header promising 1000 bytes, and 3 of them */
	fp = fopen(names[n - 1], "ab");
	assert_non_null(fp);
	assert_int_equal(fwrite("\xe8\x03\0\0\1\2\3\4abc", 1, 11, fp), 11);
	assert_int_equal(fclose(fp), 0);
	reopen(f);
	expect_raw(f, T0, T0 + 600000);
	feed(f, T0 + 600000, T0 + 1200000, 2);
	reopen(f);
	expect_raw(f, T0, T0 + 1200000);
}

static void export_copies_a_partition(void **state)
{
	struct fixture *f = *state;
	char out[256], err[512];

	feed(f, T0, T0 + HOUR + 20000, 1);
	snprintf(out, sizeof(out), "%s/export.db", f->dir);
	assert_int_equal(gw_store_export(f->dir, "raw/2026-11-30", out, err,
					 sizeof(err)),
			 0);
	assert_int_equal(gw_store_check_file(out), 0);
	assert_int_equal(gw_store_export(f->dir, "raw/2026-11-30", out, err,
					 sizeof(err)),
			 -EEXIST);
	assert_int_equal(gw_store_export(f->dir, "../x", out, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(gw_store_export(f->dir, "raw/2026-01-01", "/tmp/x",
					 err, sizeof(err)),
			 -ENOENT);
}

/* A rollup frame that does not fit leaves nothing behind: the frames
 * before it still decode (a length without its data would not). */
static void frame_add_is_all_or_nothing(void **state)
{
	struct gw_rollup r, *out = NULL;
	struct gw_buf one, b;
	size_t n = 0;

	(void)state;
	gw_rollup_init(&r, 60000);
	assert_int_equal(gw_rollup_add(&r, 30000, 1.5), 0);
	gw_buf_init(&one, 1u << 20);
	assert_int_equal(gw_store_frame_add(&one, &r), 0);
	/* Room for one frame and the next frame's length, not its data. */
	gw_buf_init(&b, one.len + sizeof(uint32_t) + 1);
	assert_int_equal(gw_store_frame_add(&b, &r), 0);
	assert_int_equal(b.len, one.len);
	assert_int_equal(gw_store_frame_add(&b, &r), -ENOSPC);
	assert_int_equal(b.len, one.len);
	assert_int_equal(gw_store_frame_decode(&b, &out, &n), 0);
	assert_int_equal(n, 1);
	gw_rollup_free_array(out, n);
	gw_buf_release(&b);
	gw_buf_release(&one);
	gw_rollup_release(&r);
}

/* 0..2 ms of scrape jitter, deterministic. */
static int64_t jitter_ms(int64_t i)
{
	return (int64_t)(((uint64_t)i * 2654435761u) >> 7) % 3;
}

/* Timestamps are data: jittered ones come back as they were appended,
 * from the head, from the partitions after a cut and after a restart. */
static void jittered_timestamps_round_trip_exactly(void **state)
{
	struct fixture *f = *state;
	const int64_t n = 3 * 3600 / 2;
	struct gw_series_set set;
	size_t k;

	for (int64_t i = 0; i < n; i++) {
		int64_t t = T0 + i * 2000 + jitter_ms(i);

		assert_int_equal(gw_store_append(f->s, "j", "", t, (double)i),
				 0);
		f->now = t + 1;
		if (i % 5 == 0)
			assert_int_equal(gw_store_maintain(f->s), 0);
	}
	for (int pass = 0; pass < 2; pass++) {
		const struct gw_queryable *q = gw_store_queryable(f->s);
		struct gw_query_limits lim = { 0 };
		struct gw_matcher m;

		assert_int_equal(gw_matcher_init(&m, GW_MATCH_EQ, "__name__",
						 "j", NULL, 0),
				 0);
		assert_int_equal(q->select(q->ctx, &m, 1, T0, T0 + 4 * HOUR,
					   GW_TIER_RAW, &lim, &set),
				 0);
		gw_matcher_release(&m);
		assert_int_equal(set.n, 1);
		assert_int_equal(set.s[0].n, (size_t)n);
		for (k = 0; k < set.s[0].n; k++) {
			int64_t i = (int64_t)k;

			assert_int_equal(set.s[0].t[k],
					 T0 + i * 2000 + jitter_ms(i));
			assert_true(set.s[0].v[k] == (double)i);
		}
		gw_series_set_release(&set);
		reopen(f);
	}
}

/* Evaluates q over the store; fails the test on an error. */
static void eval_q(struct fixture *f, const char *q, int64_t start, int64_t end,
		   int64_t step, struct gw_qresult *r)
{
	struct gw_promql_error perr;
	struct gw_pq_node *e = NULL;
	int rc;

	assert_int_equal(gw_promql_parse(q, &e, &perr), 0);
	if (step)
		rc = gw_promql_eval_range(e, gw_store_queryable(f->s), start,
					  end, step, NULL, r);
	else
		rc = gw_promql_eval_instant(e, gw_store_queryable(f->s), start,
					    NULL, r);
	if (rc)
		fail_msg("%s: %s", q, r->errmsg);
	gw_promql_free(e);
}

/* The point of series 0 of a range result at t; false when none. */
static bool point_at(const struct gw_qresult *r, int64_t t, double *v)
{
	if (!r->nseries)
		return false;
	for (size_t i = 0; i < r->series[0].n; i++) {
		if (r->series[0].p[i].t == t) {
			*v = r->series[0].p[i].v;
			return true;
		}
	}
	return false;
}

#define GPU_LOST   (T0 + 40 * 60000 + 17300) /* gpu_up 1 -> 0 */
#define STOPPED_AT (T0 + 50 * 60000 + 3400)  /* last sample of "gone" */
#define RESET_AT   (T0 + 30 * 60000 + 20500) /* the counter restarts */

/* A node for an hour and a half at 1 s with 0-2 ms jitter: a GPU lost at
 * GPU_LOST, a gauge that stops at STOPPED_AT, a counter (about 970/s)
 * that resets inside a minute, a noisy gauge. */
static void feed_node(struct fixture *f)
{
	double c = 0;

	for (int64_t i = 0; i < 90 * 60; i++) {
		int64_t t = T0 + i * 1000 + jitter_ms(i);

		c = t >= RESET_AT && t - 1000 < RESET_AT ? 5 : c + 970 + i % 7;
		assert_int_equal(gw_store_append(f->s, "gpu_up", "gpu=\"0\"", t,
						 t < GPU_LOST ? 1 : 0),
				 0);
		assert_int_equal(gw_store_append(f->s, "bytes_total", "", t, c),
				 0);
		assert_int_equal(gw_store_append(f->s, "power", "", t,
						 100 + (double)(i * 37 % 101)),
				 0);
		if (t <= STOPPED_AT)
			assert_int_equal(
				gw_store_append(f->s, "gone", "", t, 7), 0);
		f->now = t + 1;
		if (i % 5 == 0)
			assert_int_equal(gw_store_maintain(f->s), 0);
	}
}

/*
 * At steps of a minute that are not on the minute, a range query answers
 * from raw samples: every point is the instant query's answer at its time
 * (raw), the lost GPU reads 0 from the exact sample on, a series that
 * stopped is there until 5 min after its last sample and not after, and a
 * counter reset inside a minute is counted.
 */
/* After a stop, no SQLite -wal or -shm file is left beside a partition,
 * even where queries of the open day were the last to read it. */
static void a_stop_leaves_no_wal_files(void **state)
{
	struct fixture *f = *state;
	struct gw_series_set set;
	char cmd[256];

	feed(f, T0, T0 + 2 * HOUR + 10000, 2);
	/* Reopened and only read: readers open the day's files read-only. */
	reopen(f);
	set = select_gpu(f, "1", T0, T0 + 2 * HOUR, GW_TIER_RAW);
	assert_int_equal(set.n, 1);
	gw_series_set_release(&set);
	gw_store_close(f->s);
	f->s = NULL;
	snprintf(cmd, sizeof(cmd),
		 "test -z \"$(find %s -name '*-wal' -o -name '*-shm')\"",
		 f->dir);
	assert_int_equal(system(cmd), 0);
	reopen(f);
	expect_raw(f, T0, T0 + 2 * HOUR);
}

static void range_queries_read_raw_at_any_step(void **state)
{
	static const char *const exprs[] = {
		"gpu_up",
		"rate(bytes_total[1m])",
		"increase(bytes_total[5m])",
		"quantile_over_time(0.9, power[2m])",
		"avg_over_time(power[1m])",
		"gone",
	};
	struct fixture *f = *state;
	const int64_t start = T0 + 6 * 60000 + 37123, step = 60000;
	const int64_t end = T0 + 89 * 60000;
	struct gw_qresult r, one;
	double v = NAN, w = NAN;

	feed_node(f);
	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		size_t seen = 0;

		eval_q(f, exprs[e], start, end, step, &r);
		assert_int_equal(r.tier, GW_TIER_RAW);
		for (int64_t t = start; t <= end; t += step) {
			bool have = point_at(&r, t, &v);

			eval_q(f, exprs[e], t, t, 0, &one);
			assert_int_equal(one.tier, GW_TIER_RAW);
			assert_int_equal(one.nseries, have ? 1 : 0);
			if (have && !(one.series[0].p[0].v == v))
				fail_msg("%s at %lld: range %.17g, instant "
					 "%.17g",
					 exprs[e], (long long)(t - T0), v,
					 one.series[0].p[0].v);
			seen += have;
			gw_qresult_release(&one);
		}
		assert_true(seen > 0);
		gw_qresult_release(&r);
	}
	/* The flip and the disappearance at their exact times, at a step
	 * of a second around them. */
	eval_q(f, "gpu_up", GPU_LOST - 3000, GPU_LOST + 3000, 1000, &r);
	for (int64_t t = GPU_LOST - 3000; t <= GPU_LOST + 3000; t += 1000) {
		int64_t i = (t - T0) / 1000;
		int64_t at = T0 + i * 1000 + jitter_ms(i); /* sample i */

		assert_true(point_at(&r, t, &v));
		/* The latest sample at or before t decides. */
		w = (at <= t ? at
			     : at - 1000 + jitter_ms(i - 1) - jitter_ms(i)) <
				    GPU_LOST
			    ? 1
			    : 0;
		assert_true(v == w);
	}
	gw_qresult_release(&r);
	eval_q(f, "gone", STOPPED_AT + 5 * 60000 - 2000,
	       STOPPED_AT + 5 * 60000 + 2000, 1000, &r);
	assert_int_equal(r.nseries, 1);
	assert_true(point_at(&r, STOPPED_AT + 5 * 60000 - 1000, &v));
	assert_false(point_at(&r, STOPPED_AT + 5 * 60000, &v));
	gw_qresult_release(&r);
	/* The reset: increase over the minute around it is the counter's
	 * growth before the reset plus its value after, extrapolated to
	 * the window, never the few units a tier's last values show. */
	eval_q(f, "increase(bytes_total[1m])", RESET_AT + 30000,
	       RESET_AT + 30000, 60000, &r);
	assert_true(point_at(&r, RESET_AT + 30000, &v));
	assert_true(v > 55000 && v < 62000);
	gw_qresult_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			samples_round_trip_across_cuts_and_restarts, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			closed_days_are_compressed_and_read_back, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			closed_days_of_format_1_are_read, setup, teardown),
		cmocka_unit_test_setup_teardown(
			packed_key_lists_of_both_formats_are_read, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			minutes_rebuilt_from_raw_are_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(
			rollups_hold_minute_and_hour_aggregates, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			crash_loses_at_most_the_flush_interval, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			out_of_order_is_refused_and_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(
			open_days_of_rows_are_read_and_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_damaged_hour_block_is_counted_at_close, setup,
			teardown),
		cmocka_unit_test_setup_teardown(empty_label_value_is_absent,
						setup, teardown),
		cmocka_unit_test_setup_teardown(series_cap_refuses_and_counts,
						setup, teardown),
		cmocka_unit_test_setup_teardown(retention_drops_whole_old_days,
						setup, teardown),
		cmocka_unit_test_setup_teardown(disk_budget_drops_oldest_first,
						setup, teardown),
		cmocka_unit_test(frame_add_is_all_or_nothing),
		cmocka_unit_test_setup_teardown(damaged_files_are_quarantined,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			damage_found_by_a_query_is_quarantined, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			damaged_index_is_rebuilt_from_partitions, setup,
			teardown),
		cmocka_unit_test_setup_teardown(export_copies_a_partition,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			failing_flushes_keep_samples_in_memory, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			jittered_timestamps_round_trip_exactly, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			range_queries_read_raw_at_any_step, setup, teardown),
		cmocka_unit_test_setup_teardown(a_stop_leaves_no_wal_files,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			closing_from_hours_equals_closing_through_rows, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			the_head_log_keeps_only_what_is_not_cut, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_torn_head_log_record_is_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(
			history_leaves_the_head_log_once_cut, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
