// SPDX-License-Identifier: MIT
/*
 * test_alertmanager.c - delivery to Alertmanager's API v2 against an
 * in-process HTTP server (libmicrohttpd on 127.0.0.1) that records every
 * POST and can be told to answer an error, or to hold a request until the
 * test lets it go: the JSON Alertmanager receives, batching, coalescing,
 * retries after 5xx/429 and a refused connection with nothing lost, 4xx
 * dropped and counted, the queue bound and what it drops first, and a stop
 * that keeps its deadline while the Alertmanager hangs.
 *
 * Every wait is on a condition (the server signals each request) with a
 * deadline; nothing sleeps in place of synchronisation.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "common/clock.h"
#include "httpsrv.h"
#include "export/alertmanager.h"

#define WAIT_S TSRV_WAIT_S

/* ---- the test server (httpsrv.h) ---- */

static struct tsrv *srv_start(unsigned short port)
{
	return tsrv_start(port, NULL, 0);
}

/* Statuses to answer next (an error with a short body), then 200. */
static void srv_script(struct tsrv *s, const int *statuses, unsigned int n)
{
	struct tsrv_step st[16] = { { 0 } };

	assert_true(n <= 16);
	for (unsigned int i = 0; i < n; i++) {
		st[i].status = statuses[i];
		st[i].body = statuses[i] == 200 ? NULL : "bad thing";
	}
	tsrv_script(s, st, n);
}

static unsigned int count_alerts(const char *body)
{
	unsigned int n = 0;

	for (const char *p = body; (p = strstr(p, "{\"labels\":")); p++)
		n++;
	return n;
}

/* Alerts in the requests answered 2xx. */
static unsigned int accepted_locked(const struct tsrv *s)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->nreq; i++)
		if (s->req[i].status == 200)
			n += count_alerts(s->req[i].body);
	return n;
}

/* Waits until the server has received nreq requests. */
static void wait_requests(struct tsrv *s, unsigned int nreq)
{
	struct timespec until = gw_ts_after(CLOCK_MONOTONIC, WAIT_S);
	int r = 0;

	pthread_mutex_lock(&s->mu);
	while (s->nreq < nreq && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&s->cv, &s->mu, &until);
	pthread_mutex_unlock(&s->mu);
	if (s->nreq < nreq)
		fail_msg("server got %u requests, waited for %u", s->nreq,
			 nreq);
}

/* Waits until the server has answered 200 to requests carrying n alerts. */
static void wait_accepted(struct tsrv *s, unsigned int n)
{
	struct timespec until = gw_ts_after(CLOCK_MONOTONIC, WAIT_S);
	unsigned int got;
	int r = 0;

	pthread_mutex_lock(&s->mu);
	while ((got = accepted_locked(s)) < n && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&s->cv, &s->mu, &until);
	pthread_mutex_unlock(&s->mu);
	if (got < n)
		fail_msg("server accepted %u alerts, waited for %u", got, n);
}

static struct gw_am_target_stats stats_of(struct gw_am *am, unsigned int i)
{
	struct gw_am_target_stats st[4];

	memset(st, 0, sizeof(st));
	assert_true(gw_am_stats(am, st, 4) > i);
	return st[i];
}

/*
 * Polls the sender's counters until pred holds (for a target with no
 * server to signal, e.g. one that refuses connections).
 */
static void wait_stats(struct gw_am *am, unsigned int i,
		       int (*pred)(const struct gw_am_target_stats *),
		       const char *what)
{
	double until = tsrv_now() + WAIT_S;
	struct timespec tick = { 0, 1000000 };

	while (!pred((struct gw_am_target_stats[]){ stats_of(am, i) })) {
		if (tsrv_now() > until)
			fail_msg("waited %.0f s for %s", WAIT_S, what);
		nanosleep(&tick, NULL);
	}
}

/* Waits until n alerts were accepted and nothing is left queued: the
 * sender counts after the server has answered. */
static void wait_sent(struct gw_am *am, unsigned int i, uint64_t n)
{
	double until = tsrv_now() + WAIT_S;
	struct timespec tick = { 0, 1000000 };
	struct gw_am_target_stats st;

	while (st = stats_of(am, i), st.sent < n || st.queued) {
		if (tsrv_now() > until)
			fail_msg("sent %llu, queued %llu; waited for %llu sent",
				 (unsigned long long)st.sent,
				 (unsigned long long)st.queued,
				 (unsigned long long)n);
		nanosleep(&tick, NULL);
	}
}

static int failed_twice(const struct gw_am_target_stats *st)
{
	return st->posts_failed >= 2;
}

static int idle_after_400(const struct gw_am_target_stats *st)
{
	return st->posts_failed == 1 && st->queued == 0;
}

static struct gw_am *am_new(const char *url, unsigned int queue_max,
			    unsigned int batch_max, double timeout_s)
{
	struct gw_am_opts o = {
		.sz = sizeof(o),
		.queue_max = queue_max,
		.batch_max = batch_max,
		.timeout_s = timeout_s,
		.backoff_min_s = 0.005,
		.backoff_max_s = 0.05,
	};
	const char *urls[] = { url };
	struct gw_am *am = NULL;

	assert_int_equal(gw_am_new(urls, 1, &o, &am), 0);
	assert_non_null(am);
	return am;
}

static char *url_of(unsigned short port, const char *path)
{
	static char buf[4][128];
	static unsigned int k;
	char *u = buf[k++ % 4];

	snprintf(u, sizeof(buf[0]), "http://127.0.0.1:%u%s", port, path);
	return u;
}

#define FUTURE_MS 4102444800000LL /* 2100-01-01T00:00:00Z */

static struct gw_am_alert firing(const char *labels, const char *ann)
{
	return (struct gw_am_alert){ .labels = labels,
				     .annotations = ann,
				     .starts_ms = 1700000000000LL,
				     .ends_ms = FUTURE_MS };
}

static struct gw_am_alert resolved(const char *labels, const char *ann)
{
	return (struct gw_am_alert){ .labels = labels,
				     .annotations = ann,
				     .starts_ms = 1700000000000LL,
				     .ends_ms = 1700000060000LL };
}

static const char *body_of(struct tsrv *s, unsigned int i)
{
	const char *b;

	pthread_mutex_lock(&s->mu);
	b = i < s->nreq ? s->req[i].body : NULL;
	pthread_mutex_unlock(&s->mu);
	assert_non_null(b);
	return b;
}

/* ---- tests ---- */

/* What Alertmanager's API v2 receives: the path under a prefix, the
 * Content-Type and the JSON array, byte for byte. */
static void json_shape(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, "/am/"), 0, 0, 0);
	struct gw_am_alert a[2] = {
		{ .labels = "{\"alertname\":\"GpuHot\",\"gpu\":\"0\"}",
		  .annotations = "{\"summary\":\"GPU 0 is \\\"hot\\\"\"}",
		  .starts_ms = 1700000000123LL,
		  .ends_ms = FUTURE_MS,
		  .generator_url =
			  "http://h:9400/graph?g0.expr=up&x=\"q\"\\\t" },
		{ .labels = "{\"alertname\":\"GpuLost\",\"gpu\":\"1\"}",
		  .annotations = NULL,
		  .starts_ms = 1700000000000LL,
		  .ends_ms = 1700000060000LL },
	};

	(void)state;
	assert_int_equal(gw_am_send(am, a, 2), 0);
	wait_accepted(s, 2);
	assert_int_equal(s->nreq, 1);
	assert_string_equal(s->req[0].method, "POST");
	assert_string_equal(s->req[0].path, "/am/api/v2/alerts");
	assert_string_equal(s->req[0].ct, "application/json");
	assert_string_equal(
		s->req[0].body,
		"[{\"labels\":{\"alertname\":\"GpuHot\",\"gpu\":\"0\"},"
		"\"annotations\":{\"summary\":\"GPU 0 is \\\"hot\\\"\"},"
		"\"startsAt\":\"2023-11-14T22:13:20.123Z\","
		"\"endsAt\":\"2100-01-01T00:00:00.000Z\","
		"\"generatorURL\":\"http://h:9400/"
		"graph?g0.expr=up&x=\\\"q\\\"\\\\\\t\"},"
		"{\"labels\":{\"alertname\":\"GpuLost\",\"gpu\":\"1\"},"
		"\"annotations\":{},"
		"\"startsAt\":\"2023-11-14T22:13:20.000Z\","
		"\"endsAt\":\"2023-11-14T22:14:20.000Z\"}]");
	gw_am_free(am, tsrv_now() + 5);
	tsrv_stop(s);
}

/* Seven alerts queued at once go out as POSTs of at most batch_max. */
static void batching(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, ""), 0, 3, 0);
	char labels[7][64];
	struct gw_am_alert a[7];

	(void)state;
	for (int i = 0; i < 7; i++) {
		snprintf(labels[i], sizeof(labels[i]),
			 "{\"alertname\":\"A\",\"gpu\":\"%d\"}", i);
		a[i] = firing(labels[i], "{}");
	}
	assert_int_equal(gw_am_send(am, a, 7), 0);
	wait_accepted(s, 7);
	assert_int_equal(s->nreq, 3);
	assert_int_equal(count_alerts(s->req[0].body), 3);
	assert_int_equal(count_alerts(s->req[1].body), 3);
	assert_int_equal(count_alerts(s->req[2].body), 1);
	for (int i = 0; i < 7; i++)
		assert_non_null(strstr(s->req[i / 3].body, labels[i]));
	wait_sent(am, 0, 7);
	assert_int_equal(stats_of(am, 0).sent, 7);
	gw_am_free(am, tsrv_now() + 5);
	tsrv_stop(s);
}

/* The same labels queued twice before a send go out once, in their latest
 * state: within one call, and while an earlier POST is in flight. */
static void coalescing(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, ""), 0, 0, 0);
	const char *x = "{\"alertname\":\"X\"}", *y = "{\"alertname\":\"Y\"}";
	struct gw_am_alert three[3] = {
		firing(x, "{\"v\":\"1\"}"),
		firing(y, "{\"v\":\"1\"}"),
		firing(x, "{\"v\":\"2\"}"),
	};
	struct gw_am_alert a;
	const char *b;

	(void)state;
	s->hold = 1;
	assert_int_equal(gw_am_send(am, three, 3), 0);
	wait_requests(s, 1); /* held: the next ones queue */
	b = body_of(s, 0);
	assert_int_equal(count_alerts(b), 2);
	assert_non_null(strstr(b, "{\"labels\":{\"alertname\":\"X\"},"
				  "\"annotations\":{\"v\":\"2\"}"));
	assert_null(strstr(b, "{\"labels\":{\"alertname\":\"X\"},"
			      "\"annotations\":{\"v\":\"1\"}"));

	a = firing(x, "{\"v\":\"3\"}");
	assert_int_equal(gw_am_send(am, &a, 1), 0);
	a = resolved(x, "{\"v\":\"4\"}");
	assert_int_equal(gw_am_send(am, &a, 1), 0);
	a = firing(y, "{\"v\":\"5\"}");
	assert_int_equal(gw_am_send(am, &a, 1), 0);
	assert_int_equal(stats_of(am, 0).queued, 2 + 2);
	tsrv_release(s);
	wait_accepted(s, 4);
	assert_int_equal(s->nreq, 2);
	assert_string_equal(body_of(s, 1),
			    "[{\"labels\":{\"alertname\":\"X\"},"
			    "\"annotations\":{\"v\":\"4\"},"
			    "\"startsAt\":\"2023-11-14T22:13:20.000Z\","
			    "\"endsAt\":\"2023-11-14T22:14:20.000Z\"},"
			    "{\"labels\":{\"alertname\":\"Y\"},\"annotations\":"
			    "{\"v\":\"5\"},"
			    "\"startsAt\":\"2023-11-14T22:13:20.000Z\","
			    "\"endsAt\":\"2100-01-01T00:00:00.000Z\"}]");
	wait_sent(am, 0, 4);
	assert_int_equal(stats_of(am, 0).sent, 4);
	gw_am_free(am, tsrv_now() + 5);
	tsrv_stop(s);
}

/* 500, 429 and 503 are retried (with backoff) until accepted; every alert
 * arrives, and alerts queued meanwhile too. */
static void retry_until_success(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, ""), 0, 0, 0);
	static const int fails[] = { 500, 429, 503 };
	struct gw_am_alert a[2] = { firing("{\"alertname\":\"A\"}", "{}"),
				    resolved("{\"alertname\":\"B\"}", "{}") };
	struct gw_am_alert c = firing("{\"alertname\":\"C\"}", "{}");
	struct gw_am_target_stats st;

	(void)state;
	srv_script(s, fails, 3);
	assert_int_equal(gw_am_send(am, a, 2), 0);
	wait_requests(s, 2);
	assert_int_equal(gw_am_send(am, &c, 1), 0);
	wait_accepted(s, 3);
	for (unsigned int i = 0; i < s->nreq; i++) {
		assert_non_null(strstr(s->req[i].body, "\"A\""));
		assert_non_null(strstr(s->req[i].body, "\"B\""));
	}
	assert_int_equal(s->req[3].status, 200);
	assert_int_equal(s->nreq, 4);
	wait_sent(am, 0, 3);
	st = stats_of(am, 0);
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.posts_failed, 3);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.up, 1);
	gw_am_free(am, tsrv_now() + 5);
	tsrv_stop(s);
}

/* A 400 is not retried: its alerts are dropped and counted, and what comes
 * next is delivered. */
static void client_error_dropped(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, ""), 0, 0, 0);
	static const int bad[] = { 400 };
	struct gw_am_alert a[2] = { firing("{\"alertname\":\"A\"}", "{}"),
				    firing("{\"alertname\":\"B\"}", "{}") };
	struct gw_am_alert c = firing("{\"alertname\":\"C\"}", "{}");
	struct gw_am_target_stats st;

	(void)state;
	srv_script(s, bad, 1);
	assert_int_equal(gw_am_send(am, a, 2), 0);
	wait_requests(s, 1);
	wait_stats(am, 0, idle_after_400, "the 400 to be handled");
	st = stats_of(am, 0);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.up, 0);
	assert_int_equal(gw_am_send(am, &c, 1), 0);
	wait_accepted(s, 1);
	assert_int_equal(s->nreq, 2);
	assert_null(strstr(body_of(s, 1), "\"A\""));
	assert_non_null(strstr(body_of(s, 1), "\"C\""));
	wait_sent(am, 0, 1);
	st = stats_of(am, 0);
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.posts_failed, 1);
	assert_int_equal(st.up, 1);
	gw_am_free(am, tsrv_now() + 5);
	tsrv_stop(s);
}

/* A full queue drops the oldest firing copy first, and only when no firing
 * copy is left the oldest resolved one. */
static void queue_bound_drop_order(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, ""), 4, 8, 0);
	struct gw_am_alert x = firing("{\"alertname\":\"X\"}", "{}");
	struct gw_am_alert f[3] = { firing("{\"alertname\":\"F1\"}", "{}"),
				    firing("{\"alertname\":\"F2\"}", "{}"),
				    firing("{\"alertname\":\"F3\"}", "{}") };
	struct gw_am_alert r[5] = { resolved("{\"alertname\":\"R1\"}", "{}"),
				    resolved("{\"alertname\":\"R2\"}", "{}"),
				    resolved("{\"alertname\":\"R3\"}", "{}"),
				    resolved("{\"alertname\":\"R4\"}", "{}"),
				    resolved("{\"alertname\":\"R5\"}", "{}") };
	struct gw_am_alert fill[4] = { f[0], r[0], f[1], r[1] };
	struct gw_am_target_stats st;

	(void)state;
	s->hold = 1;
	assert_int_equal(gw_am_send(am, &x, 1), 0);
	wait_requests(s, 1);			       /* X in flight, held */
	assert_int_equal(gw_am_send(am, fill, 4), 0);  /* F1 R1 F2 R2: full */
	assert_int_equal(gw_am_send(am, &r[2], 1), 1); /* drops F1 */
	assert_int_equal(gw_am_send(am, &f[2], 1), 1); /* drops F2 */
	assert_int_equal(gw_am_send(am, &r[3], 1), 1); /* drops F3 */
	assert_int_equal(gw_am_send(am, &r[4], 1), 1); /* drops R1 */
	st = stats_of(am, 0);
	assert_int_equal(st.dropped, 4);
	assert_int_equal(st.queued, 4 + 1);
	tsrv_release(s);
	wait_accepted(s, 5);
	assert_int_equal(s->nreq, 2);
	assert_string_equal(
		body_of(s, 1),
		"[{\"labels\":{\"alertname\":\"R2\"},\"annotations\":{},"
		"\"startsAt\":\"2023-11-14T22:13:20.000Z\","
		"\"endsAt\":\"2023-11-14T22:14:20.000Z\"},"
		"{\"labels\":{\"alertname\":\"R3\"},\"annotations\":{},"
		"\"startsAt\":\"2023-11-14T22:13:20.000Z\","
		"\"endsAt\":\"2023-11-14T22:14:20.000Z\"},"
		"{\"labels\":{\"alertname\":\"R4\"},\"annotations\":{},"
		"\"startsAt\":\"2023-11-14T22:13:20.000Z\","
		"\"endsAt\":\"2023-11-14T22:14:20.000Z\"},"
		"{\"labels\":{\"alertname\":\"R5\"},\"annotations\":{},"
		"\"startsAt\":\"2023-11-14T22:13:20.000Z\","
		"\"endsAt\":\"2023-11-14T22:14:20.000Z\"}]");
	gw_am_free(am, tsrv_now() + 5);
	tsrv_stop(s);
}

/* An Alertmanager that refuses connections, then comes up on its port:
 * everything queued meanwhile arrives. */
static void down_then_up(void **state)
{
	unsigned short port = tsrv_free_port();
	struct gw_am *am = am_new(url_of(port, ""), 0, 0, 0);
	struct gw_am_alert a[3] = { firing("{\"alertname\":\"A\"}", "{}"),
				    resolved("{\"alertname\":\"B\"}", "{}"),
				    firing("{\"alertname\":\"C\"}", "{}") };
	struct gw_am_alert d[2] = { firing("{\"alertname\":\"D\"}", "{}"),
				    resolved("{\"alertname\":\"A\"}", "{}") };
	struct gw_am_target_stats st;
	struct tsrv *s;

	(void)state;
	assert_int_equal(gw_am_send(am, a, 3), 0);
	wait_stats(am, 0, failed_twice, "two refused POSTs");
	st = stats_of(am, 0);
	assert_int_equal(st.up, 0);
	assert_int_equal(st.sent, 0);
	assert_int_equal(gw_am_send(am, d, 2), 0);
	s = srv_start(port);
	wait_accepted(s, 4); /* A (resolved), B, C, D */
	wait_sent(am, 0, 4);
	st = stats_of(am, 0);
	assert_int_equal(st.sent, 4);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.up, 1);
	assert_true(st.posts_failed >= 2);
	for (unsigned int i = 0; i < s->nreq; i++)
		assert_null(strstr(s->req[i].body,
				   "{\"alertname\":\"A\"},\"annotations\":{},"
				   "\"startsAt\":\"2023-11-14T22:13:20.000Z\","
				   "\"endsAt\":\"2100"));
	gw_am_free(am, tsrv_now() + 5);
	tsrv_stop(s);
}

/* Two Alertmanagers: one refusing does not hold up the other. */
static void targets_independent(void **state)
{
	struct tsrv *s = srv_start(0);
	const char *urls[2];
	struct gw_am_opts o = { .sz = sizeof(o),
				.backoff_min_s = 0.005,
				.backoff_max_s = 0.05 };
	struct gw_am_target_stats st[3];
	struct gw_am *am = NULL;
	struct gw_am_alert a = firing("{\"alertname\":\"A\"}", "{}");

	(void)state;
	urls[0] = url_of(tsrv_free_port(), "");
	urls[1] = url_of(s->port, "/");
	assert_int_equal(gw_am_new(urls, 2, &o, &am), 0);
	assert_int_equal(gw_am_send(am, &a, 1), 0);
	wait_accepted(s, 1);
	wait_sent(am, 1, 1);
	wait_stats(am, 0, failed_twice, "two refused POSTs");
	assert_int_equal(gw_am_stats(am, st, 3), 2);
	assert_string_equal(st[0].url, urls[0]);
	assert_string_equal(st[1].url, urls[1]);
	assert_int_equal(st[0].sent, 0);
	assert_int_equal(st[0].queued, 1);
	assert_int_equal(st[1].sent, 1);
	assert_int_equal(st[1].queued, 0);
	assert_string_equal(s->req[0].path, "/api/v2/alerts");
	/* Filling only up to max entries. */
	assert_int_equal(gw_am_stats(am, st, 1), 2);
	gw_am_free(am, tsrv_now() + 0.1);
	tsrv_stop(s);
}

/* Alerts queued right before the stop are still delivered within it. */
static void free_drains(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, ""), 0, 2, 0);
	struct gw_am_alert a[5] = { firing("{\"alertname\":\"A\"}", "{}"),
				    firing("{\"alertname\":\"B\"}", "{}"),
				    firing("{\"alertname\":\"C\"}", "{}"),
				    firing("{\"alertname\":\"D\"}", "{}"),
				    resolved("{\"alertname\":\"E\"}", "{}") };

	(void)state;
	assert_int_equal(gw_am_send(am, a, 5), 0);
	gw_am_free(am, tsrv_now() + WAIT_S);
	pthread_mutex_lock(&s->mu);
	assert_int_equal(accepted_locked(s), 5);
	pthread_mutex_unlock(&s->mu);
	tsrv_stop(s);
}

/* A stop while the Alertmanager hangs returns by its deadline, not after
 * the POST timeout. */
static void free_deadline_hang(void **state)
{
	struct tsrv *s = srv_start(0);
	struct gw_am *am = am_new(url_of(s->port, ""), 0, 0, 60);
	struct gw_am_alert a = firing("{\"alertname\":\"A\"}", "{}");
	double t0;

	(void)state;
	s->hold = 1;
	assert_int_equal(gw_am_send(am, &a, 1), 0);
	wait_requests(s, 1);
	t0 = tsrv_now();
	gw_am_free(am, t0 + 0.2);
	/* Far below the 60 s POST timeout; the agent's whole stop has 5 s. */
	assert_true(tsrv_now() - t0 < 3.0);
	tsrv_stop(s);
}

/* A stop while the Alertmanager refuses: back at the deadline. */
static void free_deadline_down(void **state)
{
	struct gw_am *am = am_new(url_of(tsrv_free_port(), ""), 0, 0, 0);
	struct gw_am_alert a = firing("{\"alertname\":\"A\"}", "{}");
	double t0;

	(void)state;
	assert_int_equal(gw_am_send(am, &a, 1), 0);
	wait_stats(am, 0, failed_twice, "two refused POSTs");
	t0 = tsrv_now();
	gw_am_free(am, t0 + 0.1);
	assert_true(tsrv_now() - t0 < 3.0);
}

/* What gw_am_new refuses, and alerts that cannot be sent. */
static void invalid_input(void **state)
{
	static const char *const bad[] = {
		"",
		"localhost:9093",
		"ftp://host:9093",
		"http://",
		"http:///path",
		"http://host:9093/?x=1",
		"http://host:9093/#f",
		"http://ho st:9093",
		"http://host:9093/\n",
	};
	const char *good[] = { "HTTPS://am.example:9093/prefix" };
	struct gw_am_opts o = { .sz = sizeof(o) };
	struct {
		struct gw_am_opts o;
		uint64_t newer;
	} big = { .o = { .sz = sizeof(big) }, .newer = 1 };
	struct gw_am *am = (struct gw_am *)&o;
	struct gw_am_alert a[3] = {
		{ .labels = NULL, .annotations = "{}" },
		{ .labels = "alertname=X", .annotations = "{}" },
		{ .labels = "{\"alertname\":\"X\"}", .annotations = "[]" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *u[] = { bad[i] };

		if (gw_am_new(u, 1, NULL, &am) != -EINVAL)
			fail_msg("URL \"%s\" accepted", bad[i]);
		assert_null(am);
	}
	o.backoff_min_s = 2;
	o.backoff_max_s = 1;
	assert_int_equal(gw_am_new(good, 1, &o, &am), -EINVAL);
	o.backoff_min_s = 0;
	o.backoff_max_s = 0;
	o.timeout_s = NAN;
	assert_int_equal(gw_am_new(good, 1, &o, &am), -EINVAL);
	o.timeout_s = -1;
	assert_int_equal(gw_am_new(good, 1, &o, &am), -EINVAL);
	/* A newer caller's field we do not know, set: refused. */
	assert_int_equal(gw_am_new(good, 1, &big.o, &am), -EINVAL);
	big.newer = 0;
	assert_int_equal(gw_am_new(good, 1, &big.o, &am), 0);
	/* Alerts that cannot be sent are dropped and counted. */
	assert_int_equal(gw_am_send(am, a, 3), 3);
	assert_int_equal(stats_of(am, 0).dropped, 3);
	assert_int_equal(stats_of(am, 0).queued, 0);
	gw_am_free(am, tsrv_now());
	gw_am_free(NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_shape),
		cmocka_unit_test(batching),
		cmocka_unit_test(coalescing),
		cmocka_unit_test(retry_until_success),
		cmocka_unit_test(client_error_dropped),
		cmocka_unit_test(queue_bound_drop_order),
		cmocka_unit_test(down_then_up),
		cmocka_unit_test(targets_independent),
		cmocka_unit_test(free_drains),
		cmocka_unit_test(free_deadline_hang),
		cmocka_unit_test(free_deadline_down),
		cmocka_unit_test(invalid_input),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
