/* SPDX-License-Identifier: MIT */
/*
 * The store under series churn: selection through the inverted label
 * index gives what a scan of every series gives (in the head and on
 * disk, where one statement reads all selected series of a partition),
 * series that stop are retired so that the caps count live series while
 * their history stays queryable, an hour later they leave memory and stay
 * queryable, and a retired or evicted series that comes back is the same
 * series again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <sqlite3.h>
#include <string.h>

#include "store/store.h"

#define MIN  60000LL
#define HOUR 3600000LL
/* 2026-11-30T00:00:00Z */
#define T0 1795996800000LL

struct fixture {
	char dir[64];
	int64_t now;
	struct gw_store_opts o;
	struct gw_store *s;
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

	snprintf(f->dir, sizeof(f->dir), "/tmp/gw-churn-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	gw_store_opts_defaults(&f->o);
	f->o.dir = f->dir;
	f->o.now = fake_now;
	f->o.now_ctx = f;
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

/* Moves the clock to t, maintaining every 5 s of it (flushes, cuts). */
static void run_until(struct fixture *f, int64_t t)
{
	while (f->now < t) {
		f->now = f->now + 5000 < t ? f->now + 5000 : t;
		assert_int_equal(gw_store_maintain(f->s), 0);
	}
}

/* ---- selection ---- */

#define NSER 240

/* Series i: its labels as a producer writes them, and as a set. */
static void series_text(int i, char *name, size_t nlen, char *labels,
			size_t llen)
{
	static const char *const comm[] = { "python", "bash", "nccl-test" };

	snprintf(name, nlen, "%s", i % 2 ? "gw_proc_mem_bytes" : "gw_proc_cpu");
	if (i % 5 == 0) /* no job label */
		snprintf(labels, llen, "pid=\"%d\",gpu=\"%d\",comm=\"%s\"",
			 1000 + i, i % 4, comm[i % 3]);
	else
		snprintf(labels, llen,
			 "job=\"j%d\",pid=\"%d\",gpu=\"%d\",comm=\"%s\"", i % 7,
			 1000 + i, i % 4, comm[i % 3]);
}

struct spec {
	enum gw_match_op op;
	const char *name, *value;
};

/* Selectors as PromQL users write them; up to 3 matchers, {0} ends. */
static const struct spec selectors[][3] = {
	{ { GW_MATCH_EQ, "pid", "1042" } },
	{ { GW_MATCH_EQ, "__name__", "gw_proc_cpu" },
	  { GW_MATCH_EQ, "gpu", "2" } },
	{ { GW_MATCH_EQ, "__name__", "gw_proc_cpu" },
	  { GW_MATCH_RE, "pid", "10[0-4].|1.*7" } },
	{ { GW_MATCH_RE, "comm", "py.*|bash" }, { GW_MATCH_NE, "gpu", "1" } },
	{ { GW_MATCH_EQ, "__name__", "gw_proc_mem_bytes" },
	  { GW_MATCH_EQ, "job", "" } }, /* series without job */
	{ { GW_MATCH_RE, "job", ".+" }, { GW_MATCH_NRE, "comm", "bash|py.*" } },
	{ { GW_MATCH_NE, "job", "" },
	  { GW_MATCH_RE, "gpu", ".*" },
	  { GW_MATCH_EQ, "gpu", "3" } },
	{ { GW_MATCH_EQ, "pid", "no-such-pid" } },
	{ { GW_MATCH_EQ, "no_such_label", "x" } },
	{ { GW_MATCH_RE, "__name__", "gw_proc_.*" },
	  { GW_MATCH_NRE, "pid", "1.*" } },
};
#define NSEL (sizeof(selectors) / sizeof(selectors[0]))

static size_t matchers_of(const struct spec *sp, struct gw_matcher *m)
{
	size_t n = 0;

	for (; n < 3 && sp[n].name; n++)
		assert_int_equal(gw_matcher_init(&m[n], sp[n].op, sp[n].name,
						 sp[n].value, NULL, 0),
				 0);
	return n;
}

/* The series a scan of all NSER label sets selects, as a bit set. */
static void scan(const struct gw_matcher *m, size_t nm, bool *want)
{
	for (int i = 0; i < NSER; i++) {
		char name[64], text[160];
		struct gw_labels l;

		series_text(i, name, sizeof(name), text, sizeof(text));
		assert_int_equal(gw_labels_parse(&l, name, text), 0);
		want[i] = gw_matchers_match(m, nm, &l);
		gw_labels_release(&l);
	}
}

/* Series i from its pid label. */
static int index_of(const struct gw_labels *l)
{
	const char *pid = gw_labels_get(l, "pid");

	assert_non_null(pid);
	return atoi(pid) - 1000;
}

/* select() returns exactly the scanned series, each with its samples. */
static void check_select(struct fixture *f, const struct gw_matcher *m,
			 size_t nm, const bool *want, size_t samples)
{
	const struct gw_queryable *q = gw_store_queryable(f->s);
	struct gw_query_limits lim = { 0 };
	struct gw_series_set set;
	bool got[NSER] = { false };
	size_t nwant = 0;

	assert_int_equal(
		q->select(q->ctx, m, nm, T0, f->now, GW_TIER_RAW, &lim, &set),
		0);
	for (size_t i = 0; i < set.n; i++) {
		int k = index_of(&set.s[i].labels);

		assert_true(k >= 0 && k < NSER && want[k] && !got[k]);
		got[k] = true;
		/* the series' own samples: value k at T0 + j min + k ms */
		assert_int_equal(set.s[i].n, samples);
		for (size_t j = 0; j < samples; j++) {
			assert_int_equal(set.s[i].t[j],
					 T0 + (int64_t)j * MIN + k);
			assert_true(set.s[i].v[j] == k);
		}
	}
	for (int i = 0; i < NSER; i++)
		nwant += want[i];
	assert_int_equal(set.n, nwant);
	gw_series_set_release(&set);
}

static void append_all(struct fixture *f, size_t minutes)
{
	for (size_t j = 0; j < minutes; j++) {
		for (int i = 0; i < NSER; i++) {
			char name[64], text[160];

			series_text(i, name, sizeof(name), text, sizeof(text));
			assert_int_equal(
				gw_store_append(f->s, name, text,
						T0 + (int64_t)j * MIN + i, i),
				0);
		}
		run_until(f, T0 + (int64_t)(j + 1) * MIN);
	}
}

static void selection_equals_a_scan_of_every_series(void **state)
{
	struct fixture *f = *state;

	append_all(f, 3);
	for (int round = 0; round < 3; round++) {
		/* 0: all in the head; 1: on disk after the cut; 2: after a
		 * restart, from the partitions through the reloaded index */
		if (round == 1)
			run_until(f, T0 + HOUR + MIN);
		if (round == 2)
			reopen(f);
		for (size_t k = 0; k < NSEL; k++) {
			struct gw_matcher m[3];
			bool want[NSER];
			size_t nm = matchers_of(selectors[k], m);

			scan(m, nm, want);
			check_select(f, m, nm, want, 3);
			for (size_t i = 0; i < nm; i++)
				gw_matcher_release(&m[i]);
		}
	}
}

static void series_and_label_values_follow_the_index(void **state)
{
	struct fixture *f = *state;
	const struct gw_queryable *q;
	struct gw_matcher a[3], b[3];
	const struct gw_matcher *sets[2] = { a, b };
	size_t nm[2];
	bool wa[NSER], wb[NSER];
	struct gw_label_set_list ls;
	struct gw_string_list sl;
	size_t nwant = 0;
	bool gpus[4] = { false };

	append_all(f, 1);
	q = gw_store_queryable(f->s);
	nm[0] = matchers_of(selectors[0], a);
	nm[1] = matchers_of(selectors[4], b);
	scan(a, nm[0], wa);
	scan(b, nm[1], wb);
	assert_int_equal(q->series(q->ctx, sets, nm, 2, T0, f->now, NULL, &ls),
			 0);
	for (int i = 0; i < NSER; i++)
		nwant += wa[i] || wb[i];
	assert_int_equal(ls.n, nwant);
	for (size_t i = 0; i < ls.n; i++) {
		int k = index_of(&ls.v[i]);

		assert_true(wa[k] || wb[k]);
	}
	gw_label_set_list_release(&ls);
	/* the gpu values of series without a job label */
	assert_int_equal(q->label_values(q->ctx, "gpu", sets + 1, nm + 1, 1, T0,
					 f->now, NULL, &sl),
			 0);
	for (int i = 0; i < NSER; i++)
		if (wb[i])
			gpus[i % 4] = true;
	nwant = 0;
	for (int g = 0; g < 4; g++)
		nwant += gpus[g];
	assert_int_equal(sl.n, nwant);
	for (size_t i = 0; i < sl.n; i++)
		assert_true(gpus[atoi(sl.v[i])]);
	gw_string_list_release(&sl);
	/* all label names, no matchers */
	assert_int_equal(q->label_values(q->ctx, NULL, NULL, NULL, 0, T0,
					 f->now, NULL, &sl),
			 0);
	assert_int_equal(sl.n, 5);
	assert_string_equal(sl.v[0], "__name__");
	assert_string_equal(sl.v[4], "pid");
	gw_string_list_release(&sl);
	for (size_t i = 0; i < nm[0]; i++)
		gw_matcher_release(&a[i]);
	for (size_t i = 0; i < nm[1]; i++)
		gw_matcher_release(&b[i]);
}

/* A closed day keeps its series keys packed, and an index rebuilt from
 * the partitions alone (index.db damaged) finds every series in them. */
static void closed_days_rebuild_the_index_from_packed_keys(void **state)
{
	struct fixture *f = *state;
	char path[128];
	FILE *fp;

	append_all(f, 3);
	run_until(f, T0 + 25 * HOUR + MIN); /* the day is closed */
	gw_store_close(f->s);
	f->s = NULL;
	snprintf(path, sizeof(path), "%s/index.db", f->dir);
	fp = fopen(path, "r+");
	assert_non_null(fp);
	assert_int_equal(fwrite("garbage, not a database", 1, 23, fp), 23);
	assert_int_equal(fclose(fp), 0);
	reopen(f);
	for (size_t k = 0; k < NSEL; k++) {
		struct gw_matcher m[3];
		bool want[NSER];
		size_t nm = matchers_of(selectors[k], m);

		scan(m, nm, want);
		check_select(f, m, nm, want, 3);
		for (size_t i = 0; i < nm; i++)
			gw_matcher_release(&m[i]);
	}
}

/* ---- retirement ---- */

static int put(struct fixture *f, const char *name, int pid, int64_t t)
{
	char labels[32];

	snprintf(labels, sizeof(labels), "pid=\"%d\"", pid);
	return gw_store_append(f->s, name, labels, t, pid);
}

/* Samples of m{pid="pid"} in [T0, now]. */
static size_t samples_of(struct fixture *f, int pid)
{
	const struct gw_queryable *q = gw_store_queryable(f->s);
	struct gw_query_limits lim = { 0 };
	struct gw_series_set set;
	struct gw_matcher m;
	char v[16];
	size_t n;

	snprintf(v, sizeof(v), "%d", pid);
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_EQ, "pid", v, NULL, 0),
			 0);
	assert_int_equal(
		q->select(q->ctx, &m, 1, T0, f->now, GW_TIER_RAW, &lim, &set),
		0);
	assert_true(set.n <= 1);
	n = set.n ? set.s[0].n : 0;
	for (size_t i = 0; i < n; i++)
		assert_true(set.s[0].v[i] == pid);
	gw_series_set_release(&set);
	gw_matcher_release(&m);
	return n;
}

/* Samples counted by the 1-hour rollups of m{pid="pid"}; *n: rollups. */
static double hourly_count(struct fixture *f, int pid, size_t *n)
{
	const struct gw_queryable *q = gw_store_queryable(f->s);
	struct gw_query_limits lim = { 0 };
	struct gw_series_set set;
	struct gw_matcher m;
	double count = 0;
	char v[16];

	snprintf(v, sizeof(v), "%d", pid);
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_EQ, "pid", v, NULL, 0),
			 0);
	assert_int_equal(
		q->select(q->ctx, &m, 1, T0, f->now, GW_TIER_1H, &lim, &set),
		0);
	assert_true(set.n <= 1);
	*n = set.n ? set.s[0].n : 0;
	for (size_t i = 0; i < *n; i++)
		count += set.s[0].r[i].count;
	gw_series_set_release(&set);
	gw_matcher_release(&m);
	return count;
}

static void stopped_series_leave_the_cap_and_keep_history(void **state)
{
	struct fixture *f = *state;
	struct gw_store_stats st;

	f->o.max_series = 3;
	reopen(f);
	for (int64_t t = T0; t < T0 + 10 * MIN; t += MIN) {
		for (int pid = 0; pid < 3; pid++)
			assert_int_equal(put(f, "m", pid, t), 0);
		assert_int_equal(put(f, "m", 3, t), -ENOSPC);
		run_until(f, t + MIN);
	}
	/* Five minutes without samples (PromQL's lookback): retired at the
	 * next minute's maintenance. */
	run_until(f, T0 + 14 * MIN);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series_live, 3);
	run_until(f, T0 + 15 * MIN);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 3);
	assert_int_equal(st.series_live, 0);
	assert_int_equal(st.samples_refused_cap, 10);
	for (int pid = 3; pid < 6; pid++)
		assert_int_equal(put(f, "m", pid, f->now), 0);
	assert_int_equal(put(f, "m", 6, f->now), -ENOSPC);
	/* the history of the retired ones is still there */
	for (int pid = 0; pid < 3; pid++)
		assert_int_equal(samples_of(f, pid), 10);

	/* pids 3..5 stop; pid 0 comes back: one series, old and new */
	run_until(f, T0 + 4 * HOUR + MIN);
	assert_int_equal(put(f, "m", 0, f->now), 0);
	assert_int_equal(put(f, "m", 7, f->now), 0);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 7);
	assert_int_equal(st.series_live, 2);
	assert_int_equal(samples_of(f, 0), 11);
	assert_int_equal(samples_of(f, 4), 1);
	/* its hours of the day: the one before it stopped (written and
	 * dropped from memory when it was retired) and the new one */
	run_until(f, T0 + 5 * HOUR + MIN);
	{
		size_t n;

		assert_true(hourly_count(f, 0, &n) == 11);
		assert_int_equal(n, 2);
	}
	/* after a restart: everything known; series come back live with
	 * their next sample (or from the head log since the last cut) */
	assert_int_equal(put(f, "m", 7, f->now), 0);
	reopen(f);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series, 7);
	assert_int_equal(st.series_live, 1); /* pid 7, from the head log */
	assert_int_equal(put(f, "m", 0, f->now), 0);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series_live, 2);
	assert_int_equal(samples_of(f, 0), 12);
	assert_int_equal(samples_of(f, 7), 2);
}

static void label_value_cap_counts_live_values_not_names(void **state)
{
	struct fixture *f = *state;
	char name[16];

	f->o.max_values = 2;
	reopen(f);
	/* metric names are not capped */
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		assert_int_equal(put(f, name, 1, T0), 0);
	}
	assert_int_equal(put(f, "m0", 2, T0), 0);
	assert_int_equal(put(f, "m0", 3, T0), -E2BIG);
	/* pid 2 stops, pid 1 goes on: pid 3 fits once pid 2 is retired */
	for (int64_t t = T0 + 5 * MIN; t < T0 + 3 * HOUR; t += 5 * MIN) {
		assert_int_equal(put(f, "m0", 1, t), 0);
		run_until(f, t + 1);
	}
	assert_int_equal(put(f, "m0", 3, f->now), 0);
	assert_int_equal(put(f, "m1", 4, f->now), -E2BIG);
	assert_int_equal(samples_of(f, 2), 1);
}

/* ---- readers while the writer churns ---- */

struct reader {
	struct gw_store *s;
	atomic_bool started, stop;
	size_t rounds; /* for a debugger */
	int err;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	const struct gw_queryable *q = gw_store_queryable(r->s);
	struct gw_matcher m[2];

	if (gw_matcher_init(&m[0], GW_MATCH_EQ, "__name__", "m", NULL, 0) ||
	    gw_matcher_init(&m[1], GW_MATCH_RE, "pid", "1.*|2.", NULL, 0)) {
		r->err = -EINVAL;
		return NULL;
	}
	atomic_store(&r->started, true);
	do {
		const struct gw_matcher *sets[1] = { m };
		size_t nm[1] = { 2 };
		struct gw_query_limits lim = { 0 };
		struct gw_series_set set;
		struct gw_label_set_list ls;
		struct gw_string_list sl;

		r->err = q->select(q->ctx, m, 2, T0, T0 + 24 * HOUR,
				   GW_TIER_RAW, &lim, &set);
		if (!r->err) {
			for (size_t i = 0; i < set.n && !r->err; i++)
				if (!set.s[i].n)
					r->err = -EBADMSG;
			gw_series_set_release(&set);
		}
		if (!r->err)
			r->err = q->series(q->ctx, sets, nm, 1, T0,
					   T0 + 24 * HOUR, NULL, &ls);
		if (!r->err)
			gw_label_set_list_release(&ls);
		if (!r->err)
			r->err = q->label_values(q->ctx, "pid", NULL, NULL, 0,
						 T0, T0 + 24 * HOUR, NULL, &sl);
		if (!r->err)
			gw_string_list_release(&sl);
		r->rounds++;
	} while (!atomic_load(&r->stop) && !r->err);
	gw_matcher_release(&m[0]);
	gw_matcher_release(&m[1]);
	return NULL;
}

/* Queries run while series come, retire and leave memory. */
static void readers_meet_a_churning_writer(void **state)
{
	struct fixture *f = *state;
	struct reader r = { .s = f->s };
	pthread_t th;

	atomic_init(&r.started, false);
	atomic_init(&r.stop, false);
	assert_int_equal(pthread_create(&th, NULL, read_loop, &r), 0);
	while (!atomic_load(&r.started))
		sched_yield(); /* the reader is under way before the writer */
	/* a process every minute, each living ten minutes, for 3 hours */
	for (int64_t t = T0; t < T0 + 3 * HOUR; t += 30000) {
		int first = (int)((t - T0) / MIN) - 9;

		for (int pid = first < 0 ? 0 : first;
		     pid <= (int)((t - T0) / MIN); pid++)
			assert_int_equal(put(f, "m", pid, t), 0);
		run_until(f, t + 30000);
	}
	atomic_store(&r.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(r.err, 0);
}

/*
 * An hour after their last sample, with everything on disk, retired series
 * leave memory; queries, series and label values still find them, a query
 * after their last sample does not, and a series whose samples return is
 * the same series (its id, its history), also after a restart.
 */
/* quiet: how long after T0 the series stay silent before one is back */
static void evicted_and_back(void **state, int64_t quiet)
{
	struct fixture *f = *state;
	const struct gw_queryable *q;
	struct gw_store_stats st;
	struct gw_query_limits lim = { 0 };
	struct gw_series_set set;
	struct gw_label_set_list ls;
	struct gw_string_list sl;
	struct gw_matcher m[3];
	const struct gw_matcher *sets[1] = { m };
	size_t nm[1];
	char name[64], text[160];
	int64_t back = T0 + quiet + 10 * MIN;

	append_all(f, 3);
	run_until(f, T0 + quiet);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series_evicted, NSER);
	assert_int_equal(st.series, NSER);
	assert_int_equal(st.series_live, 0);
	for (size_t k = 0; k < NSEL; k++) {
		bool want[NSER];
		size_t n = matchers_of(selectors[k], m);

		scan(m, n, want);
		check_select(f, m, n, want, 3);
		for (size_t i = 0; i < n; i++)
			gw_matcher_release(&m[i]);
	}
	q = gw_store_queryable(f->s);
	/* series() and label values over the evicted ones */
	nm[0] = matchers_of(selectors[1], m);
	assert_int_equal(q->series(q->ctx, sets, nm, 1, T0, f->now, NULL, &ls),
			 0);
	assert_int_equal(ls.n, NSER / 4);
	for (size_t i = 0; i < ls.n; i++)
		assert_string_equal(gw_labels_get(&ls.v[i], "gpu"), "2");
	gw_label_set_list_release(&ls);
	assert_int_equal(q->label_values(q->ctx, "gpu", NULL, NULL, 0, T0,
					 f->now, NULL, &sl),
			 0);
	assert_int_equal(sl.n, 4);
	gw_string_list_release(&sl);
	{
		/* two lists: the union, each series once */
		struct gw_matcher a[3], b[3];
		const struct gw_matcher *two[2] = { a, b };
		size_t n2[2] = { matchers_of(selectors[0], a),
				 matchers_of(selectors[4], b) };
		bool wa[NSER], wb[NSER];
		size_t nwant = 0;

		scan(a, n2[0], wa);
		scan(b, n2[1], wb);
		for (int i = 0; i < NSER; i++)
			nwant += wa[i] || wb[i];
		assert_int_equal(
			q->series(q->ctx, two, n2, 2, T0, f->now, NULL, &ls),
			0);
		assert_int_equal(ls.n, nwant);
		for (size_t i = 0; i < ls.n; i++) {
			int k = index_of(&ls.v[i]);

			assert_true(wa[k] || wb[k]);
		}
		gw_label_set_list_release(&ls);
		for (size_t i = 0; i < n2[0]; i++)
			gw_matcher_release(&a[i]);
		for (size_t i = 0; i < n2[1]; i++)
			gw_matcher_release(&b[i]);
	}
	/* after their last sample: nothing */
	assert_int_equal(q->select(q->ctx, m, nm[0], T0 + 10 * MIN, f->now,
				   GW_TIER_RAW, &lim, &set),
			 0);
	assert_int_equal(set.n, 0);
	gw_series_set_release(&set);
	for (size_t i = 0; i < nm[0]; i++)
		gw_matcher_release(&m[i]);

	/* series 7 comes back: one series, old and new samples */
	series_text(7, name, sizeof(name), text, sizeof(text));
	assert_int_equal(gw_store_append(f->s, name, text, back, 77), 0);
	gw_store_stats(f->s, &st);
	assert_int_equal(st.series_evicted, NSER - 1);
	assert_int_equal(st.series, NSER);
	assert_int_equal(st.series_live, 1);
	/* 1: after a restart; 2: the restart's series (known from disk)
	 * leave memory as well */
	for (int round = 0; round < 3; round++) {
		if (round == 1) {
			run_until(f, back + 30000);
			reopen(f);
			q = gw_store_queryable(f->s);
		}
		if (round == 2) {
			run_until(f, back + 2 * HOUR);
			gw_store_stats(f->s, &st);
			assert_int_equal(st.series_evicted, NSER);
			assert_int_equal(st.series, NSER);
		}
		assert_int_equal(gw_matcher_init(&m[0], GW_MATCH_EQ, "pid",
						 "1007", NULL, 0),
				 0);
		assert_int_equal(q->select(q->ctx, m, 1, T0, back, GW_TIER_RAW,
					   &lim, &set),
				 0);
		assert_int_equal(set.n, 1);
		assert_int_equal(set.s[0].n, 4);
		assert_int_equal(set.s[0].t[0], T0 + 7);
		assert_int_equal(set.s[0].t[3], back);
		assert_true(set.s[0].v[3] == 77);
		gw_series_set_release(&set);
		gw_matcher_release(&m[0]);
	}
}

static void evicted_series_stay_queryable_and_come_back(void **state)
{
	evicted_and_back(state, 2 * HOUR);
}

/* The same across a closed day: the evicted series' keys are then in
 * index.db's packed list, no longer rows. */
static void evicted_series_stay_queryable_after_their_day_closed(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX];
	sqlite3 *db;
	sqlite3_stmt *st;

	evicted_and_back(state, 24 * HOUR + 2 * HOUR);
	snprintf(path, sizeof(path), "%s/index.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT (SELECT count(*) FROM "
					    "series_packed), (SELECT count(*) "
					    "FROM series)",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1);
	assert_int_equal(sqlite3_column_int(st, 1), 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			selection_equals_a_scan_of_every_series, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			series_and_label_values_follow_the_index, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			closed_days_rebuild_the_index_from_packed_keys, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			stopped_series_leave_the_cap_and_keep_history, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			label_value_cap_counts_live_values_not_names, setup,
			teardown),
		cmocka_unit_test_setup_teardown(readers_meet_a_churning_writer,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			evicted_series_stay_queryable_after_their_day_closed,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			evicted_series_stay_queryable_and_come_back, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
