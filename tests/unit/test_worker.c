// SPDX-License-Identifier: MIT
/*
 * test_worker.c - the worker threads: periodic rounds at a period that can
 * change while they run, a stop that ends an hour's rest at once, a join
 * that gives up on a round stuck in a call, CPU time per thread (also once
 * it ended), and names a `top -H` shows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/worker.h"

#define HOUR 3600.0
/* What "at once" may take on a loaded machine under a sanitizer. */
#define PROMPT_S 1.0
/* The longest wait for a state before a test fails. */
#define PATIENCE_S 10.0

struct probe {
	_Atomic uint64_t rounds, finis;
	_Atomic int entered;
	int fd;	       /* the stuck round reads it */
	double next;   /* what a round returns */
	double busy_s; /* CPU a round burns */
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for a condition the worker reaches by itself; false after
 * PATIENCE_S. */
#define WAIT_FOR(cond)                                                         \
	({                                                                     \
		double until_ = mono_s() + PATIENCE_S;                         \
		struct timespec tick_ = { 0, 1000000 };                        \
		while (!(cond) && mono_s() < until_)                           \
			nanosleep(&tick_, NULL);                               \
		(cond);                                                        \
	})

static double count_round(struct gw_worker *w, void *arg)
{
	struct probe *p = arg;

	(void)w;
	atomic_fetch_add(&p->rounds, 1);
	return p->next;
}

static void count_fini(struct gw_worker *w, void *arg)
{
	struct probe *p = arg;

	(void)w;
	atomic_fetch_add(&p->finis, 1);
}

static struct gw_worker *start(const char *name, struct probe *p, double period,
			       struct gw_worker_table *t)
{
	struct gw_worker_opts o = {
		.name = name,
		.round = count_round,
		.fini = count_fini,
		.arg = p,
		.period = period,
		.table = t,
	};
	struct gw_worker *w;

	assert_int_equal(gw_worker_start(&o, &w), 0);
	return w;
}

static void periodic_rounds(void **state)
{
	struct probe p = { .next = GW_WORKER_PERIOD };
	struct gw_worker *w;

	(void)state;
	w = start("gw-test-tick", &p, 0.01, NULL);
	assert_true(WAIT_FOR(atomic_load(&p.rounds) >= 5));
	assert_int_equal(gw_worker_stop(w, mono_s() + PATIENCE_S), 0);
	assert_int_equal(gw_worker_state(w), GW_WORKER_DONE);
	assert_int_equal(atomic_load(&p.finis), 1);
	assert_int_equal(gw_worker_rounds(w), atomic_load(&p.rounds));
	gw_worker_free(w);
}

/* An hour's period shortened while the worker rests: it re-times. */
static void period_changes_while_resting(void **state)
{
	struct probe p = { .next = GW_WORKER_PERIOD };
	struct gw_worker *w;

	(void)state;
	w = start("gw-test-pace", &p, HOUR, NULL);
	assert_true(WAIT_FOR(gw_worker_state(w) == GW_WORKER_SLEEPING));
	assert_int_equal(atomic_load(&p.rounds), 1);
	gw_worker_set_period(w, 0.01);
	assert_true(WAIT_FOR(atomic_load(&p.rounds) >= 5));
	assert_int_equal(gw_worker_stop(w, mono_s() + PATIENCE_S), 0);
	gw_worker_free(w);
}

/* The governor's atomic interval: read at each rest. */
static void period_from_atomic(void **state)
{
	_Atomic uint64_t ms = 3600 * 1000;
	struct probe p = { .next = GW_WORKER_PERIOD };
	struct gw_worker_opts o = {
		.name = "gw-test-gov",
		.round = count_round,
		.arg = &p,
		.period = 0.001, /* not used: period_ms wins */
		.period_ms = &ms,
	};
	struct gw_worker *w;

	(void)state;
	assert_int_equal(gw_worker_start(&o, &w), 0);
	assert_true(WAIT_FOR(gw_worker_state(w) == GW_WORKER_SLEEPING));
	assert_int_equal(atomic_load(&p.rounds), 1);
	atomic_store(&ms, 10);
	gw_worker_wake(w);
	assert_true(WAIT_FOR(atomic_load(&p.rounds) >= 5));
	assert_int_equal(gw_worker_stop(w, mono_s() + PATIENCE_S), 0);
	gw_worker_free(w);
}

static void stop_ends_long_rest_at_once(void **state)
{
	static const double nexts[] = { GW_WORKER_PERIOD, INFINITY, HOUR };

	(void)state;
	for (size_t i = 0; i < sizeof(nexts) / sizeof(nexts[0]); i++) {
		struct probe p = { .next = nexts[i] };
		struct gw_worker *w = start("gw-test-rest", &p, HOUR, NULL);
		double t0;

		assert_true(WAIT_FOR(gw_worker_state(w) == GW_WORKER_SLEEPING));
		assert_false(gw_worker_stopping(w));
		t0 = mono_s();
		assert_int_equal(gw_worker_stop(w, t0 + HOUR), 0);
		assert_true(mono_s() - t0 < PROMPT_S);
		assert_int_equal(gw_worker_state(w), GW_WORKER_DONE);
		assert_true(gw_worker_stopping(w));
		assert_int_equal(atomic_load(&p.rounds), 1);
		assert_int_equal(atomic_load(&p.finis), 1);
		gw_worker_free(w);
	}
}

/* delay_first: the first round waits a period; stopped before, fini
 * still runs (the store's last flush). */
static void delayed_first_round(void **state)
{
	struct probe p = { .next = GW_WORKER_PERIOD };
	struct gw_worker_opts o = {
		.name = "gw-test-late",
		.round = count_round,
		.fini = count_fini,
		.arg = &p,
		.period = HOUR,
		.delay_first = true,
	};
	struct gw_worker *w;

	(void)state;
	assert_int_equal(gw_worker_start(&o, &w), 0);
	assert_true(WAIT_FOR(gw_worker_state(w) == GW_WORKER_SLEEPING));
	assert_int_equal(gw_worker_stop(w, mono_s() + PROMPT_S), 0);
	assert_int_equal(atomic_load(&p.rounds), 0);
	assert_int_equal(atomic_load(&p.finis), 1);
	gw_worker_free(w);
}

/* A wake ends an endless rest without stopping the worker. */
static void wake_runs_next_round(void **state)
{
	struct probe p = { .next = INFINITY };
	struct gw_worker *w = start("gw-test-wake", &p, 0, NULL);

	(void)state;
	assert_true(WAIT_FOR(gw_worker_state(w) == GW_WORKER_SLEEPING));
	gw_worker_wake(w);
	assert_true(WAIT_FOR(atomic_load(&p.rounds) == 2 &&
			     gw_worker_state(w) == GW_WORKER_SLEEPING));
	assert_false(gw_worker_stopping(w));
	assert_int_equal(gw_worker_stop(w, mono_s() + PATIENCE_S), 0);
	gw_worker_free(w);
}

static int failing_init(struct gw_worker *w, void *arg)
{
	(void)w;
	(void)arg;
	return -ENODEV;
}

/* A worker may end by itself: after GW_WORKER_EXIT, or a failed init
 * (without rounds or fini). */
static void ends_by_itself(void **state)
{
	struct probe p = { .next = GW_WORKER_EXIT };
	struct gw_worker_opts o = {
		.name = "gw-test-init",
		.init = failing_init,
		.round = count_round,
		.fini = count_fini,
		.arg = &p,
	};
	struct gw_worker *w = start("gw-test-exit", &p, 0, NULL);

	(void)state;
	assert_true(WAIT_FOR(gw_worker_state(w) == GW_WORKER_DONE));
	assert_false(gw_worker_stopping(w));
	assert_int_equal(atomic_load(&p.rounds), 1);
	assert_int_equal(atomic_load(&p.finis), 1);
	assert_int_equal(gw_worker_join(w, mono_s()), 0);
	gw_worker_free(w);

	p.rounds = p.finis = 0;
	assert_int_equal(gw_worker_start(&o, &w), 0);
	assert_int_equal(gw_worker_join(w, mono_s() + PATIENCE_S), 0);
	assert_int_equal(atomic_load(&p.rounds), 0);
	assert_int_equal(atomic_load(&p.finis), 0);
	gw_worker_free(w);
}

/* A round that blocks on the stop fd beside its own: the stop reaches it
 * inside its poll. */
static double poll_round(struct gw_worker *w, void *arg)
{
	struct probe *p = arg;
	struct pollfd pfd[2] = {
		{ .fd = p->fd, .events = POLLIN },
		{ .fd = gw_worker_stop_fd(w), .events = POLLIN },
	};

	atomic_store(&p->entered, 1);
	atomic_fetch_add(&p->rounds, 1);
	(void)poll(pfd, 2, (int)(HOUR * 1000));
	return 0;
}

static void stop_fd_wakes_poll(void **state)
{
	int fds[2];
	struct probe p = { 0 };
	struct gw_worker_opts o = {
		.name = "gw-test-poll",
		.round = poll_round,
		.arg = &p,
	};
	struct gw_worker *w;
	double t0;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	p.fd = fds[0];
	assert_int_equal(gw_worker_start(&o, &w), 0);
	assert_true(WAIT_FOR(atomic_load(&p.entered)));
	t0 = mono_s();
	assert_int_equal(gw_worker_stop(w, t0 + HOUR), 0);
	assert_true(mono_s() - t0 < PROMPT_S);
	assert_int_equal(atomic_load(&p.rounds), 1);
	gw_worker_free(w);
	close(fds[0]);
	close(fds[1]);
}

/* A call that does not return (a hung driver): read() on a silent pipe. */
static double stuck_round(struct gw_worker *w, void *arg)
{
	struct probe *p = arg;
	char c;

	(void)w;
	atomic_store(&p->entered, 1);
	(void)!read(p->fd, &c, 1);
	atomic_fetch_add(&p->rounds, 1);
	return GW_WORKER_PERIOD;
}

static void join_deadline_on_stuck_round(void **state)
{
	int fds[2];
	struct probe p = { 0 };
	struct gw_worker_opts o = {
		.name = "gw-test-hung",
		.round = stuck_round,
		.arg = &p,
		.period = HOUR,
	};
	struct gw_worker *w;
	double t0, waited;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	p.fd = fds[0];
	assert_int_equal(gw_worker_start(&o, &w), 0);
	assert_true(WAIT_FOR(atomic_load(&p.entered)));
	t0 = mono_s();
	assert_int_equal(gw_worker_stop(w, t0 + 0.2), -ETIMEDOUT);
	waited = mono_s() - t0;
	assert_true(waited >= 0.2 && waited < 0.2 + PROMPT_S);
	assert_int_equal(gw_worker_state(w), GW_WORKER_RUNNING);
	/* A deadline already passed answers at once. */
	assert_int_equal(gw_worker_join(w, 0), -ETIMEDOUT);
	assert_true(gw_worker_cpu_seconds(w) >= 0);
	/* The call returns: the stop requested before is seen. */
	assert_int_equal(write(fds[1], "x", 1), 1);
	assert_int_equal(gw_worker_join(w, mono_s() + PATIENCE_S), 0);
	assert_int_equal(gw_worker_state(w), GW_WORKER_DONE);
	assert_int_equal(atomic_load(&p.rounds), 1);
	gw_worker_free(w);
	close(fds[0]);
	close(fds[1]);
}

static double busy_round(struct gw_worker *w, void *arg)
{
	struct probe *p = arg;
	double until = thread_cpu_s() + p->busy_s;
	volatile uint64_t x = 0;

	(void)w;
	while (thread_cpu_s() < until)
		x++;
	atomic_fetch_add(&p->rounds, 1);
	return 0;
}

struct listing {
	int busy, idle;
	double busy_cpu, idle_cpu;
};

static void list_one(void *ctx, const char *name, double cpu_s,
		     enum gw_worker_state st)
{
	struct listing *l = ctx;

	(void)st;
	if (strcmp(name, "gw-test-busy") == 0) {
		l->busy++;
		l->busy_cpu = cpu_s;
	} else if (strcmp(name, "gw-test-idle") == 0) {
		l->idle++;
		l->idle_cpu = cpu_s;
	}
}

static void cpu_seconds_per_worker(void **state)
{
	struct gw_worker_table *t = gw_worker_table_new();
	struct probe busy = { .busy_s = 0.02 };
	struct probe idle = { .next = GW_WORKER_PERIOD };
	struct gw_worker_opts o = {
		.name = "gw-test-busy",
		.round = busy_round,
		.arg = &busy,
		.table = t,
	};
	struct gw_worker *wb, *wi;
	struct listing l = { 0 };
	double c0, c1;

	(void)state;
	assert_non_null(t);
	assert_int_equal(gw_worker_start(&o, &wb), 0);
	wi = start("gw-test-idle", &idle, HOUR, t);
	assert_true(WAIT_FOR(atomic_load(&busy.rounds) >= 5));
	c0 = gw_worker_cpu_seconds(wb);
	assert_true(c0 >= 0.1);
	assert_true(WAIT_FOR(gw_worker_cpu_seconds(wb) >= c0 + 0.05));
	assert_true(WAIT_FOR(gw_worker_state(wi) == GW_WORKER_SLEEPING));
	assert_true(gw_worker_cpu_seconds(wi) < 0.05);

	assert_int_equal(gw_worker_table_visit(t, list_one, &l), 2);
	assert_int_equal(l.busy, 1);
	assert_int_equal(l.idle, 1);
	assert_true(l.busy_cpu >= c0 && l.idle_cpu < 0.05);

	/* After the thread ended: its last reading, no longer moving. */
	assert_int_equal(gw_worker_stop(wb, mono_s() + PATIENCE_S), 0);
	c1 = gw_worker_cpu_seconds(wb);
	assert_true(c1 >= c0 + 0.05);
	assert_true(gw_worker_cpu_seconds(wb) == c1);
	memset(&l, 0, sizeof(l));
	assert_int_equal(gw_worker_table_visit(t, list_one, &l), 2);
	assert_true(l.busy_cpu == c1);

	gw_worker_free(wb);
	memset(&l, 0, sizeof(l));
	assert_int_equal(gw_worker_table_visit(t, list_one, &l), 1);
	assert_int_equal(l.busy, 0);
	assert_int_equal(l.idle, 1);
	assert_int_equal(gw_worker_stop(wi, mono_s() + PATIENCE_S), 0);
	gw_worker_free(wi);
	assert_int_equal(gw_worker_table_unlisted(t), 0);
	gw_worker_table_free(t);
}

/* Is a thread of this process named name? */
static int named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0;

	assert_non_null(d);
	while (!found && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = '\0';
			found = strcmp(comm, name) == 0;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

static void names_in_proc(void **state)
{
	struct probe pa = { .next = INFINITY }, pb = { .next = INFINITY };
	struct gw_worker_opts o = { .round = count_round, .arg = &pa };
	struct gw_worker *a, *b;

	(void)state;
	assert_false(named("gw-test-name-a"));
	a = start("gw-test-name-a", &pa, 0, NULL);
	b = start("gw-nvml-63", &pb, 0, NULL);
	/* Named before gw_worker_start() returns. */
	assert_true(named("gw-test-name-a"));
	assert_true(named("gw-nvml-63"));
	assert_string_equal(gw_worker_name(a), "gw-test-name-a");
	assert_int_equal(gw_worker_stop(a, mono_s() + PATIENCE_S), 0);
	assert_int_equal(gw_worker_stop(b, mono_s() + PATIENCE_S), 0);
	gw_worker_free(a);
	gw_worker_free(b);
	assert_false(named("gw-test-name-a"));

	/* What a kernel would cut is refused. */
	o.name = "gw-sixteen-bytes";
	assert_int_equal(gw_worker_start(&o, &a), -EINVAL);
	assert_null(a);
	o.name = "";
	assert_int_equal(gw_worker_start(&o, &a), -EINVAL);
	o.name = "gw-test";
	o.round = NULL;
	assert_int_equal(gw_worker_start(&o, &a), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(periodic_rounds),
		cmocka_unit_test(period_changes_while_resting),
		cmocka_unit_test(period_from_atomic),
		cmocka_unit_test(stop_ends_long_rest_at_once),
		cmocka_unit_test(delayed_first_round),
		cmocka_unit_test(wake_runs_next_round),
		cmocka_unit_test(ends_by_itself),
		cmocka_unit_test(stop_fd_wakes_poll),
		cmocka_unit_test(join_deadline_on_stuck_round),
		cmocka_unit_test(cpu_seconds_per_worker),
		cmocka_unit_test(names_in_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
