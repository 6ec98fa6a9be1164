/* SPDX-License-Identifier: MIT */
/*
 * worker.h - one named thread with a paced loop, a cooperative stop, a join
 * with a deadline and its own CPU account.
 *
 * A worker runs init() once, then rounds: round() is called, and what it
 * returns says when the next round runs:
 *
 *   GW_WORKER_PERIOD   one period after this round began (periodic work); a
 *                      round that overran its period rests a whole period
 *                      after it, so that a slow pass never runs back to back
 *   seconds >= 0       that long after this round ended (0: at once, for an
 *                      event-driven round that blocked in its own poll with
 *                      a timeout)
 *   INFINITY           until gw_worker_wake() or a stop request
 *   GW_WORKER_EXIT     never: the worker is done
 *
 * then fini() once, also after a stop request, in the worker's thread.  The
 * period is *o->period_ms when given (an interval the CPU governor
 * stretches, read at every rest), else o->period seconds or what
 * gw_worker_set_period() set last.
 *
 * States (gw_worker_state(); a check: check_state() in worker.c):
 *
 *                                   rest
 *   STARTING --named--> RUNNING -------------> SLEEPING
 *                        |    ^  period over,     |
 *                        |    +- wake or stop ----+
 *                        | init failed, GW_WORKER_EXIT, or stopped
 *                        v (after fini)
 *                       DONE
 *
 * gw_worker_start() returns once the thread has named itself: it is RUNNING
 * (init or a round), SLEEPING, or already DONE.  A stop request wakes a
 * SLEEPING worker at once; a RUNNING one finishes its round first - a round
 * that blocks checks gw_worker_stopping() within its own timeout, or polls
 * gw_worker_stop_fd().  A round stuck in a call that never returns (a hung
 * driver) keeps the worker RUNNING: gw_worker_join() then returns -ETIMEDOUT
 * at its deadline and may be called again later.
 *
 * CPU: gw_worker_cpu_seconds() reads the thread's CPU clock while it runs,
 * and the value it had when it ended afterwards, from any thread.
 *
 * A worker table lists the workers of a process, for the agent's account
 * of what runs (gpuwatch_agent_worker_cpu_seconds_total{worker}): a worker
 * started with o->table is listed from gw_worker_start() until
 * gw_worker_free().
 *
 * Errors: 0 or -errno.  Thread safety: any thread may call any function,
 * except that gw_worker_join(), gw_worker_stop() and gw_worker_free() are
 * the owner's (one thread at a time).
 */
#ifndef GW_WORKER_H
#define GW_WORKER_H

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* pthread names: 15 bytes and the NUL. */
#define GW_WORKER_NAME_MAX 15
/* Workers one table lists; more run unlisted (gw_worker_table_unlisted). */
#define GW_WORKER_TABLE_MAX 256

#define GW_WORKER_PERIOD (-1.0)
#define GW_WORKER_EXIT	 (-2.0)

enum gw_worker_state {
	GW_WORKER_STARTING,
	GW_WORKER_RUNNING,  /* in init(), a round or fini() */
	GW_WORKER_SLEEPING, /* resting between rounds */
	GW_WORKER_DONE,	    /* the thread has returned; CPU time is final */
};

struct gw_worker;
struct gw_worker_table;

struct gw_worker_opts {
	const char *name; /* thread name, at most GW_WORKER_NAME_MAX bytes */
	/* Optional: before the first round; nonzero ends the worker (fini
	 * is not called). */
	int (*init)(struct gw_worker *w, void *arg);
	double (*round)(struct gw_worker *w, void *arg);
	/* Optional: after the last round. */
	void (*fini)(struct gw_worker *w, void *arg);
	void *arg;
	double period;			   /* seconds */
	const _Atomic uint64_t *period_ms; /* when set: the period in use */
	bool delay_first;  /* rest one period before the first round */
	size_t stack_size; /* 0: the default */
	struct gw_worker_table *table; /* NULL: not listed */
	/* The capabilities the thread keeps of those it starts with
	 * (common/caps.h: GW_CAPS_*); every other one is dropped first
	 * thing in the thread, bounding set included.  0: none. */
	uint64_t caps;
};

/* Starts the thread.  -EINVAL (no name or round, name too long), -ENOMEM,
 * -EAGAIN and other pthread_create() errors. */
__attribute__((warn_unused_result)) int
gw_worker_start(const struct gw_worker_opts *o, struct gw_worker **out);

/* Asks the worker to end after its round; wakes it if it rests. */
void gw_worker_request_stop(struct gw_worker *w);
/* Waits until the thread ended, at most until deadline (CLOCK_MONOTONIC
 * seconds; INFINITY waits as long as it takes).  0 or -ETIMEDOUT. */
__attribute__((warn_unused_result)) int gw_worker_join(struct gw_worker *w,
						       double deadline);
/* gw_worker_request_stop(), then gw_worker_join(). */
__attribute__((warn_unused_result)) int gw_worker_stop(struct gw_worker *w,
						       double deadline);
/* Frees a joined worker (or NULL).  A worker whose thread still runs (a
 * join timed out) is left allocated: its thread may still use it. */
void gw_worker_free(struct gw_worker *w);

/* Ends the rest: the next round runs at once (or, mid-round, right after
 * this one). */
void gw_worker_wake(struct gw_worker *w);
/* A new own period (seconds; for a worker without period_ms); a resting
 * worker re-times its rest. */
void gw_worker_set_period(struct gw_worker *w, double secs);

/* For rounds: has a stop been requested? */
bool gw_worker_stopping(const struct gw_worker *w);
/* For rounds: an eventfd readable once a stop is requested (never read
 * it), to poll beside the round's own fds. */
int gw_worker_stop_fd(const struct gw_worker *w);

const char *gw_worker_name(const struct gw_worker *w);
enum gw_worker_state gw_worker_state(const struct gw_worker *w);
/* Rounds that returned. */
uint64_t gw_worker_rounds(const struct gw_worker *w);
/* CPU time of the thread (user + system), seconds; never decreases. */
double gw_worker_cpu_seconds(struct gw_worker *w);

/* ---- the table ---- */

/* NULL when out of memory. */
struct gw_worker_table *gw_worker_table_new(void);
/* Every listed worker must have been freed.  NULL is a no-op. */
void gw_worker_table_free(struct gw_worker_table *t);
/*
 * Calls fn for each listed worker, in start order, with its name, its CPU
 * seconds and its state; under the table's lock (fn must not start or free
 * workers).  Returns how many.
 */
size_t gw_worker_table_visit(struct gw_worker_table *t,
			     void (*fn)(void *ctx, const char *name,
					double cpu_s, enum gw_worker_state st),
			     void *ctx);
/* Workers started while the table was full. */
uint64_t gw_worker_table_unlisted(struct gw_worker_table *t);

#endif
