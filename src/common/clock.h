/* SPDX-License-Identifier: MIT */
/*
 * clock.h - absolute timeouts for pthread_cond_timedwait() and
 * pthread_timedjoin_np(): "secs from now" on a given clock as a timespec;
 * and the monotonic and wall clocks in seconds.
 */
#ifndef GW_CLOCK_H
#define GW_CLOCK_H

#include <math.h>
#include <time.h>

static inline struct timespec gw_ts_after(clockid_t clock, double secs)
{
	struct timespec ts;

	if (!(secs > 0))
		secs = 0;
	clock_gettime(clock, &ts);
	ts.tv_sec += (time_t)secs;
	ts.tv_nsec += (long)((secs - floor(secs)) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* CLOCK_MONOTONIC in seconds: for intervals and deadlines. */
static inline double gw_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The calling thread's CPU time in seconds (0 if the clock fails). */
static inline double gw_thread_cpu(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CLOCK_REALTIME in seconds: for timestamps. */
static inline double gw_now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
