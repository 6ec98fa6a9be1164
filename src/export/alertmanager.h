/* SPDX-License-Identifier: MIT */
/*
 * alertmanager.h - delivery of alerts to one or more Alertmanagers through
 * their API v2 (POST /api/v2/alerts, a JSON array of alerts).
 *
 * The rule engine hands over, after each evaluation, the alerts to send:
 * firing ones (again every --alert-resend while they fire, with endsAt in
 * the future as Prometheus does) and resolved ones (endsAt = when they
 * resolved).  Each Alertmanager has its own bounded queue and its own
 * sender thread: a POST that fails (connection refused, timeout, 5xx) is
 * retried with exponential backoff and jitter (bounded), while new alerts
 * keep queueing; a 4xx is not retried (counted, logged).  When a queue is
 * full the oldest *firing* copies are dropped first (a later resend carries
 * them again); resolved notifications are kept over firing ones, so that
 * nothing resolved is lost within the bound.  Delivery never blocks the
 * caller.
 *
 * Self metrics (published by the owner through gw_am_stats()):
 * alerts sent, failed POSTs, retries, dropped, queue length, per URL.
 *
 * Thread safety: gw_am_send() may be called from any one thread at a time;
 * gw_am_stats() from any thread.
 */
#ifndef GW_ALERTMANAGER_H
#define GW_ALERTMANAGER_H

#include <stddef.h>
#include <stdint.h>

/* One alert, as Alertmanager's API v2 takes it.  Borrowed for the call. */
struct gw_am_alert {
	const char *labels;	   /* JSON object text: {"alertname":"X",...} */
	const char *annotations;   /* JSON object text, "{}" when none */
	int64_t starts_ms;	   /* unix ms */
	int64_t ends_ms;	   /* unix ms; for a firing alert a time in the
				  * future (now + 4 x resend), for a resolved
				  * one when it resolved */
	const char *generator_url; /* may be NULL */
};

struct gw_worker_table;

/* Size-tagged: set sz = sizeof(struct gw_am_opts); zero fields = defaults. */
struct gw_am_opts {
	size_t sz;
	unsigned int queue_max; /* alerts queued per Alertmanager, 10000 */
	double timeout_s;	/* one POST, 10 */
	double backoff_min_s;	/* first retry, 0.5 */
	double backoff_max_s;	/* longest wait between retries, 30 */
	unsigned int batch_max; /* alerts per POST, 64 */
	/* Lists the sender threads ("gw-am-N"); borrowed, NULL: none. */
	struct gw_worker_table *workers;
};

struct gw_am;

/*
 * urls: base URLs (http://host:9093 or with a path prefix); "/api/v2/alerts"
 * is appended.  -EINVAL (a URL that is not http(s)://...), -ENOMEM.
 * Starts one thread per URL.
 */
__attribute__((warn_unused_result)) int gw_am_new(const char *const *urls,
						  unsigned int n,
						  const struct gw_am_opts *o,
						  struct gw_am **out);
/* Tries to deliver what is queued until deadline (CLOCK_MONOTONIC s), then
 * stops the threads and frees everything.  NULL is a no-op. */
void gw_am_free(struct gw_am *am, double deadline);

/* Queues copies of the alerts for every Alertmanager; never blocks on the
 * network.  Returns the alerts dropped to make room (also counted). */
size_t gw_am_send(struct gw_am *am, const struct gw_am_alert *alerts, size_t n);

struct gw_am_target_stats {
	const char *url;       /* valid while am lives */
	uint64_t sent;	       /* alerts accepted by the Alertmanager */
	uint64_t posts_failed; /* POSTs that failed (each retry counts) */
	uint64_t dropped;      /* alerts dropped: queue full or 4xx */
	uint64_t queued;       /* alerts waiting now */
	int up;		       /* the last POST succeeded */
};
/* Fills up to max entries; returns the number of Alertmanagers. */
unsigned int gw_am_stats(struct gw_am *am, struct gw_am_target_stats *st,
			 unsigned int max);

#endif
