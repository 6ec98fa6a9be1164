/* SPDX-License-Identifier: MIT */
/*
 * worker.c - see worker.h.
 *
 * Every wait is on the worker's condition variable (CLOCK_MONOTONIC), so a
 * stop request, a wake and a new period reach a resting thread at once; the
 * eventfd is only for rounds that block in poll(2) themselves.  The CPU
 * clock id of a thread is only valid while the thread lives: the thread
 * stores its last reading and turns DONE under the worker's mutex, and
 * readers use the clock only while it is not DONE, under the same mutex.
 */
#include "common/worker.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/caps.h"
#include "common/log.h"

/* Rests longer than this are waits without a timeout (and never overflow
 * a timespec). */
#define LONGEST_REST_S (86400.0 * 365)

struct gw_worker {
	char name[GW_WORKER_NAME_MAX + 1];
	int (*init)(struct gw_worker *w, void *arg);
	double (*round)(struct gw_worker *w, void *arg);
	void (*fini)(struct gw_worker *w, void *arg);
	void *arg;
	const _Atomic uint64_t *period_ms;
	_Atomic uint64_t period_ns;
	uint64_t caps; /* kept by the thread (caps.h) */
	bool delay_first;
	struct gw_worker_table *table;

	pthread_t thread;
	bool joined; /* the owner's */
	int stop_fd;
	_Atomic bool stop;
	_Atomic int state;
	_Atomic uint64_t rounds;

	pthread_mutex_t mu;
	pthread_cond_t cv; /* state changes, wake, stop, new period */
	/* Under mu. */
	bool woken;
	bool have_clock;
	clockid_t cpu_clock;
	double cpu_last;
};

struct gw_worker_table {
	pthread_mutex_t mu;
	struct gw_worker *w[GW_WORKER_TABLE_MAX];
	size_t n;
	uint64_t unlisted;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timespec ts_of(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Waits on w->cv until mono time until (or without a timeout). */
static void wait_until(struct gw_worker *w, double until)
{
	if (until - mono_s() > LONGEST_REST_S) {
		pthread_cond_wait(&w->cv, &w->mu);
	} else {
		struct timespec ts = ts_of(until);

		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	}
}

#ifndef NDEBUG
/* The transitions of the diagram in worker.h (asserted in set_state). */
static bool check_state(enum gw_worker_state from, enum gw_worker_state to)
{
	switch (to) {
	case GW_WORKER_RUNNING:
		return from == GW_WORKER_STARTING ||
		       from == GW_WORKER_RUNNING || from == GW_WORKER_SLEEPING;
	case GW_WORKER_SLEEPING:
		return from == GW_WORKER_RUNNING || from == GW_WORKER_SLEEPING;
	case GW_WORKER_DONE:
		return from == GW_WORKER_RUNNING;
	default:
		return false;
	}
}
#endif

/* Under w->mu. */
static void set_state(struct gw_worker *w, enum gw_worker_state to)
{
	assert(check_state(atomic_load(&w->state), to));
	atomic_store(&w->state, to);
}

static double period_s(const struct gw_worker *w)
{
	if (w->period_ms)
		return (double)atomic_load(w->period_ms) / 1000.0;
	return (double)atomic_load(&w->period_ns) / 1e9;
}

/*
 * Rests after a round that began and ended at these times and asked for
 * next (see worker.h), until then, a wake or a stop request.
 */
static void rest(struct gw_worker *w, double began, double ended, double next)
{
	if (isnan(next) || (next < 0 && next != GW_WORKER_PERIOD))
		next = 0;
	pthread_mutex_lock(&w->mu);
	while (!atomic_load(&w->stop) && !w->woken) {
		double until;

		if (next == GW_WORKER_PERIOD) {
			double p = period_s(w);

			until = began + p;
			if (until < ended) /* overran: a whole period's rest */
				until = ended + p;
		} else {
			until = ended + next;
		}
		if (mono_s() >= until)
			break;
		set_state(w, GW_WORKER_SLEEPING);
		wait_until(w, until);
	}
	w->woken = false;
	set_state(w, GW_WORKER_RUNNING);
	pthread_mutex_unlock(&w->mu);
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker_main(void *arg)
{
	struct gw_worker *w = arg;
	double began;
	int r;

	(void)pthread_setname_np(pthread_self(), w->name);
	r = gw_caps_limit_thread(w->caps);
	if (r)
		gw_warn("%s: cannot drop the capabilities it does not need: %s",
			w->name, strerror(-r));
	pthread_mutex_lock(&w->mu);
	w->have_clock =
		pthread_getcpuclockid(pthread_self(), &w->cpu_clock) == 0;
	set_state(w, GW_WORKER_RUNNING);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);

	if (w->init && w->init(w, w->arg))
		goto done;
	if (w->delay_first) {
		began = mono_s();
		rest(w, began, began, GW_WORKER_PERIOD);
	}
	while (!atomic_load(&w->stop)) {
		double next;

		began = mono_s();
		next = w->round(w, w->arg);
		atomic_fetch_add(&w->rounds, 1);
		if (next == GW_WORKER_EXIT)
			break;
		rest(w, began, mono_s(), next);
	}
	if (w->fini)
		w->fini(w, w->arg);
done:
	pthread_mutex_lock(&w->mu);
	w->cpu_last = fmax(w->cpu_last, thread_cpu_s());
	set_state(w, GW_WORKER_DONE);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void table_add(struct gw_worker_table *t, struct gw_worker *w)
{
	pthread_mutex_lock(&t->mu);
	if (t->n < GW_WORKER_TABLE_MAX) {
		t->w[t->n++] = w;
		w->table = t;
	} else {
		if (!t->unlisted)
			gw_warn("worker %s and later ones are not listed: more "
				"than %d threads",
				w->name, GW_WORKER_TABLE_MAX);
		t->unlisted++;
	}
	pthread_mutex_unlock(&t->mu);
}

static void table_remove(struct gw_worker_table *t, struct gw_worker *w)
{
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++) {
		if (t->w[i] != w)
			continue;
		memmove(&t->w[i], &t->w[i + 1],
			(t->n - i - 1) * sizeof(t->w[0]));
		t->n--;
		break;
	}
	pthread_mutex_unlock(&t->mu);
}

int gw_worker_start(const struct gw_worker_opts *o, struct gw_worker **out)
{
	struct gw_worker *w;
	pthread_condattr_t ca;
	pthread_attr_t attr;
	int err;

	*out = NULL;
	if (!o || !o->name || !o->name[0] || !o->round ||
	    strlen(o->name) > GW_WORKER_NAME_MAX)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	memcpy(w->name, o->name, strlen(o->name) + 1);
	w->init = o->init;
	w->round = o->round;
	w->fini = o->fini;
	w->arg = o->arg;
	w->period_ms = o->period_ms;
	atomic_init(&w->state, GW_WORKER_STARTING);
	gw_worker_set_period(w, o->period);
	w->delay_first = o->delay_first;
	w->caps = o->caps;
	w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->stop_fd < 0) {
		err = -errno;
		goto err_free;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);

	pthread_attr_init(&attr);
	err = o->stack_size ? -pthread_attr_setstacksize(&attr, o->stack_size)
			    : 0;
	if (!err)
		err = -pthread_create(&w->thread, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (err)
		goto err_sync;
	/* Named (and its CPU clock known) before anyone looks. */
	pthread_mutex_lock(&w->mu);
	while (atomic_load(&w->state) == GW_WORKER_STARTING)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	if (o->table)
		table_add(o->table, w);
	*out = w;
	return 0;
err_sync:
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	close(w->stop_fd);
err_free:
	free(w);
	return err;
}

void gw_worker_request_stop(struct gw_worker *w)
{
	uint64_t one = 1;

	if (!w || atomic_exchange(&w->stop, true))
		return;
	if (write(w->stop_fd, &one, sizeof(one)) < 0)
		gw_dbg("worker %s: cannot signal its stop fd: %s", w->name,
		       strerror(errno));
	pthread_mutex_lock(&w->mu);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int gw_worker_join(struct gw_worker *w, double deadline)
{
	if (!w || w->joined)
		return 0;
	pthread_mutex_lock(&w->mu);
	while (atomic_load(&w->state) != GW_WORKER_DONE) {
		if (!isinf(deadline) && mono_s() >= deadline) {
			pthread_mutex_unlock(&w->mu);
			return -ETIMEDOUT;
		}
		wait_until(w, deadline);
	}
	pthread_mutex_unlock(&w->mu);
	/* DONE is the thread's last step: this returns at once. */
	pthread_join(w->thread, NULL);
	w->joined = true;
	return 0;
}

int gw_worker_stop(struct gw_worker *w, double deadline)
{
	gw_worker_request_stop(w);
	return gw_worker_join(w, deadline);
}

void gw_worker_free(struct gw_worker *w)
{
	if (!w)
		return;
	if (w->table)
		table_remove(w->table, w);
	if (gw_worker_join(w, 0)) {
		/* Still running (stuck): its thread may touch w. */
		gw_dbg("worker %s is still running; left allocated", w->name);
		return;
	}
	close(w->stop_fd);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

void gw_worker_wake(struct gw_worker *w)
{
	pthread_mutex_lock(&w->mu);
	w->woken = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void gw_worker_set_period(struct gw_worker *w, double secs)
{
	if (!(secs >= 0))
		secs = 0;
	if (secs > LONGEST_REST_S * 2)
		secs = LONGEST_REST_S * 2;
	atomic_store(&w->period_ns, (uint64_t)(secs * 1e9));
	if (atomic_load(&w->state) == GW_WORKER_STARTING)
		return; /* from gw_worker_start(): nobody waits yet */
	pthread_mutex_lock(&w->mu);
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

bool gw_worker_stopping(const struct gw_worker *w)
{
	return atomic_load(&w->stop);
}

int gw_worker_stop_fd(const struct gw_worker *w)
{
	return w->stop_fd;
}

const char *gw_worker_name(const struct gw_worker *w)
{
	return w->name;
}

enum gw_worker_state gw_worker_state(const struct gw_worker *w)
{
	return (enum gw_worker_state)atomic_load(&w->state);
}

uint64_t gw_worker_rounds(const struct gw_worker *w)
{
	return atomic_load(&w->rounds);
}

double gw_worker_cpu_seconds(struct gw_worker *w)
{
	struct timespec ts;
	double v;

	pthread_mutex_lock(&w->mu);
	if (atomic_load(&w->state) != GW_WORKER_DONE && w->have_clock &&
	    clock_gettime(w->cpu_clock, &ts) == 0) {
		v = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
		if (v > w->cpu_last)
			w->cpu_last = v;
	}
	v = w->cpu_last;
	pthread_mutex_unlock(&w->mu);
	return v;
}

/* ---- the table ---- */

struct gw_worker_table *gw_worker_table_new(void)
{
	struct gw_worker_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->mu, NULL);
	return t;
}

void gw_worker_table_free(struct gw_worker_table *t)
{
	if (!t)
		return;
	assert(t->n == 0);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

size_t gw_worker_table_visit(struct gw_worker_table *t,
			     void (*fn)(void *ctx, const char *name,
					double cpu_s, enum gw_worker_state st),
			     void *ctx)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->n;
	for (size_t i = 0; i < t->n; i++)
		fn(ctx, t->w[i]->name, gw_worker_cpu_seconds(t->w[i]),
		   gw_worker_state(t->w[i]));
	pthread_mutex_unlock(&t->mu);
	return n;
}

uint64_t gw_worker_table_unlisted(struct gw_worker_table *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->mu);
	n = t->unlisted;
	pthread_mutex_unlock(&t->mu);
	return n;
}
