// SPDX-License-Identifier: MIT
/*
 * test_rw_client.c - the remote_write client against receivers in the
 * test: an HTTP server (libmicrohttpd on 127.0.0.1) that records every
 * request (arrival time, headers, body) and answers from a script (status,
 * Retry-After, body, or hang until released), and a raw TCP server that
 * answers garbage.  What is checked is what a receiver and an operator
 * see: the protocol's headers and a body that decodes to the batch; a 4xx
 * sent once and counted failed; 5xx and 429 retried, 429's Retry-After
 * waited (from the times the server recorded); a hanging receiver cut by
 * remote_timeout; garbage survived; basic auth and bearer credentials,
 * re-read from their files; a stop that ends a send in any state.
 *
 * Every wait is on a condition with a deadline; nothing sleeps in place of
 * synchronisation.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
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
#include "export/rw.h"
#include "pipeline/metrics.h"

#define WAIT_S TSRV_WAIT_S

/* ---- the recording receiver (httpsrv.h) ---- */

static struct tsrv *srv_start(const struct tsrv_step *script, unsigned int n)
{
	return tsrv_start(0, script, n);
}

/* ---- a receiver that answers garbage ---- */

struct junk {
	int fd;
	unsigned short port;
	int mode;
	atomic_bool stop;
	atomic_uint conns;
	pthread_t th;
};

static void *junk_main(void *arg)
{
	static const char *const answers[] = {
		"\x16\x03\x01\xff\xff\x00\x01garbage\x80\x81\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
		"HTTP/1.1 abc def\r\n\r\n",
		"",
		("HTTP/1.1 500 Internal Server Error\r\nContent-Length: "
		 "999999999999999999999\r\n\r\n"),
	};
	struct junk *j = arg;

	while (!atomic_load(&j->stop)) {
		struct pollfd p = { .fd = j->fd, .events = POLLIN };
		char buf[65536];
		int c;

		if (poll(&p, 1, 20) <= 0)
			continue;
		c = accept(j->fd, NULL, NULL);
		if (c < 0)
			continue;
		atomic_fetch_add(&j->conns, 1);
		p = (struct pollfd){ .fd = c, .events = POLLIN };
		if (poll(&p, 1, 2000) > 0 && recv(c, buf, sizeof(buf), 0) > 0 &&
		    answers[j->mode][0])
			(void)!send(c, answers[j->mode],
				    strlen(answers[j->mode]), MSG_NOSIGNAL);
		close(c);
	}
	return NULL;
}

/* ---- helpers ---- */

static struct gw_rw_config *endpoint(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static struct gw_rw_config *endpoint(const char *fmt, ...)
{
	char yaml[2048], err[512];
	struct gw_rw_config *c = NULL;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(yaml, sizeof(yaml), fmt, ap);
	va_end(ap);
	if (gw_rw_config_new(NULL, 0, yaml, strlen(yaml), "test.yaml", 1, &c,
			     err, sizeof(err)))
		fail_msg("%s", err);
	return c;
}

/* A batch of 3 series x 4 samples, encoded. */
struct batch {
	struct gw_labels l[3];
	int64_t t[4];
	double v[3][4];
	struct gw_rw_series s[3];
	struct gw_buf body;
	size_t raw_len;
	uint64_t samples;
};

static void batch_init(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	for (int i = 0; i < 3; i++) {
		char lab[64];

		snprintf(lab, sizeof(lab), "gpu=\"%d\"", i);
		assert_int_equal(gw_labels_parse(&b->l[i],
						 "gpuwatch_gpu_power_watts",
						 lab),
				 0);
		for (int k = 0; k < 4; k++) {
			b->t[k] = 1700000000000 + k * 1000;
			b->v[i][k] = 100 + i + k * 0.5;
		}
		b->s[i] = (struct gw_rw_series){
			.labels = &b->l[i], .t = b->t, .v = b->v[i], .n = 4
		};
	}
	gw_buf_init(&b->body, 1 << 20);
	assert_int_equal(gw_rw_encode(b->s, 3, &b->body, &b->raw_len), 0);
	b->samples = 12;
}

static void batch_release(struct batch *b)
{
	for (int i = 0; i < 3; i++)
		gw_labels_release(&b->l[i]);
	gw_buf_release(&b->body);
}

static enum gw_rw_outcome send_once(struct gw_rw_config *c, struct batch *b)
{
	struct gw_rw_client *cl;
	enum gw_rw_outcome o;

	assert_int_equal(gw_rw_client_new(gw_rw_config_endpoint(c, 0), &cl), 0);
	o = gw_rw_client_send(cl, b->body.p, b->body.len, b->raw_len,
			      b->samples, NULL);
	gw_rw_client_free(cl);
	return o;
}

static uint64_t code_count(const struct gw_rw_stats *st, int code)
{
	for (unsigned int i = 0; i < st->ncodes; i++)
		if (st->codes[i].code == code)
			return st->codes[i].n;
	return 0;
}

/* A send on its own thread, stopped by the test. */
struct bg {
	struct gw_rw_client *cl;
	struct batch *b;
	atomic_bool stop;
	enum gw_rw_outcome outcome;
	pthread_t th;
};

static void *bg_main(void *arg)
{
	struct bg *g = arg;

	g->outcome = gw_rw_client_send(g->cl, g->b->body.p, g->b->body.len,
				       g->b->raw_len, g->b->samples, &g->stop);
	return NULL;
}

static void bg_start(struct bg *g, struct gw_rw_config *c, struct batch *b)
{
	memset(g, 0, sizeof(*g));
	g->b = b;
	atomic_init(&g->stop, false);
	assert_int_equal(gw_rw_client_new(gw_rw_config_endpoint(c, 0), &g->cl),
			 0);
	assert_int_equal(pthread_create(&g->th, NULL, bg_main, g), 0);
}

static enum gw_rw_outcome bg_stop(struct bg *g)
{
	atomic_store(&g->stop, true);
	pthread_join(g->th, NULL);
	gw_rw_client_free(g->cl);
	return g->outcome;
}

/* Polls the endpoint's counters until pred holds (deadline WAIT_S). */
static void wait_stats(struct gw_rw_endpoint *ep,
		       bool (*pred)(const struct gw_rw_stats *))
{
	struct gw_rw_stats st;
	double end = tsrv_now() + WAIT_S;

	for (;;) {
		struct timespec ts = { 0, 2000000 };

		gw_rw_endpoint_stats(ep, &st);
		if (pred(&st))
			return;
		if (tsrv_now() > end)
			fail_msg("condition not reached within %gs", WAIT_S);
		nanosleep(&ts, NULL); /* polling interval, not a sync */
	}
}

/* ---- tests ---- */

/* What a receiver sees: the protocol's headers and the batch. */
static void protocol_headers_and_body(void **state)
{
	struct tsrv *s = srv_start(NULL, 0);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  name: test\n"
			 "  headers: {X-Scope-OrgID: team-a}\n",
			 s->port);
	struct gw_rw_decoded *d;
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	assert_int_equal(tsrv_count(s), 1);
	assert_string_equal(s->req[0].path, "/api/v1/write");
	assert_string_equal(s->req[0].ce, "snappy");
	assert_string_equal(s->req[0].ct, "application/x-protobuf");
	assert_string_equal(s->req[0].ver, "0.1.0");
	assert_string_equal(s->req[0].ua, "gpuwatch/" GW_VERSION);
	assert_string_equal(s->req[0].org, "team-a");
	assert_string_equal(s->req[0].auth, "");
	assert_int_equal(gw_rw_decode(s->req[0].body, s->req[0].len, &d), 0);
	assert_int_equal(d->n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(d->s[i].n, 4);
		assert_string_equal(d->s[i].labels[0].name, "__name__");
		assert_string_equal(d->s[i].labels[1].name, "gpu");
		for (int k = 0; k < 4; k++) {
			assert_int_equal(d->s[i].t[k], b.t[k]);
			assert_true(d->s[i].v[k] == b.v[i][k]);
		}
	}
	gw_rw_decoded_free(d);

	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_sent, 12);
	assert_int_equal(st.samples_retried, 0);
	assert_int_equal(st.bytes_sent, b.body.len);
	assert_int_equal(st.bytes_raw_sent, b.raw_len);
	assert_int_equal(code_count(&st, 200), 1);
	assert_true(st.last_send_s > 1.7e9);

	/* The same counters on /metrics, with remote_name and url. */
	{
		struct gw_registry *reg = gw_registry_new();
		struct gw_snap snap;
		struct gw_buf out;
		char want[256];
		int slot;

		assert_non_null(reg);
		slot = gw_registry_slot(reg, "rw");
		assert_true(slot >= 0);
		gw_snap_init(&snap);
		gw_rw_endpoint_publish(gw_rw_config_endpoint(c, 0), &snap);
		gw_registry_publish(reg, slot, &snap);
		gw_buf_init(&out, 1 << 20);
		assert_int_equal(
			gw_registry_render(reg, GW_EXPO_TEXT_004, &out), 0);
		snprintf(want, sizeof(want),
			 "gpuwatch_remote_storage_samples_total{remote_name="
			 "\"test\",url=\"http://127.0.0.1:%u/api/v1/write\"} "
			 "12\n",
			 s->port);
		assert_non_null(strstr(out.p, want));
		snprintf(want, sizeof(want),
			 "gpuwatch_remote_storage_requests_total{remote_name="
			 "\"test\",url=\"http://127.0.0.1:%u/api/v1/write\","
			 "code=\"200\"} 1\n",
			 s->port);
		assert_non_null(strstr(out.p, want));
		gw_buf_release(&out);
		gw_snap_release(&snap);
		gw_registry_free(reg);
	}
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

/* Redirects are followed with the body (follow_redirects, default true),
 * or are a refusal when turned off. */
static void redirects(void **state)
{
	static const struct tsrv_step script[] = {
		{ .status = 308, .location = "/moved/write" },
		{ .status = 200 },
		{ .status = 307, .location = "/moved/write" },
	};
	struct tsrv *s = srv_start(script, 3);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n", s->port);
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	assert_int_equal(tsrv_count(s), 2);
	assert_string_equal(s->req[1].path, "/moved/write");
	assert_int_equal(s->req[1].len, b.body.len);
	assert_memory_equal(s->req[1].body, b.body.p, b.body.len);
	gw_rw_config_free(c);
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  follow_redirects: false\n",
		     s->port);
	assert_int_equal(send_once(c, &b), GW_RW_REFUSED);
	assert_int_equal(tsrv_count(s), 3);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_failed, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

/* A 4xx is sent once, counted failed, never retried. */
static void refused_4xx_not_retried(void **state)
{
	static const struct tsrv_step script[] = {
		{ .status = 400, .body = "out of order sample\nsecond line" },
	};
	struct tsrv *s = srv_start(script, 1);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  queue_config: {min_backoff: 1ms, max_backoff: "
			 "2ms}\n",
			 s->port);
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_REFUSED);
	assert_int_equal(tsrv_count(s), 1);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_failed, 12);
	assert_int_equal(st.samples_sent, 0);
	assert_int_equal(st.samples_retried, 0);
	assert_int_equal(code_count(&st, 400), 1);
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

/* 5xx are retried after a backoff of at least min_backoff; then sent. */
static void retry_5xx_then_success(void **state)
{
	static const struct tsrv_step script[] = {
		{ .status = 500, .body = "boom" },
		{ .status = 503 },
		{ .status = 204 },
	};
	struct tsrv *s = srv_start(script, 3);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  queue_config: {min_backoff: 50ms, max_backoff: "
			 "200ms}\n",
			 s->port);
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	assert_int_equal(tsrv_count(s), 3);
	assert_true(s->req[1].t - s->req[0].t >= 0.05);
	assert_true(s->req[2].t - s->req[1].t >= 0.05);
	/* The same bytes each time. */
	assert_int_equal(s->req[2].len, b.body.len);
	assert_memory_equal(s->req[2].body, b.body.p, b.body.len);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_sent, 12);
	assert_int_equal(st.samples_retried, 24);
	assert_int_equal(st.samples_failed, 0);
	assert_int_equal(code_count(&st, 500), 1);
	assert_int_equal(code_count(&st, 503), 1);
	assert_int_equal(code_count(&st, 204), 1);
	assert_int_equal(st.bytes_sent, 3 * b.body.len);
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

/* 429 with Retry-After: the next try comes no sooner than it says, in
 * seconds or as an HTTP date, even beyond max_backoff. */
static void retry_after_429(void **state)
{
	static const struct tsrv_step script[] = {
		{ .status = 429, .retry_after = "1" },
		{ .status = 429, .retry_after = "DATE" },
		{ .status = 200 },
	};
	struct tsrv *s = srv_start(script, 3);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  queue_config: {min_backoff: 1ms, max_backoff: "
			 "5ms}\n",
			 s->port);
	struct gw_rw_stats st;
	struct batch b;
	time_t when = time(NULL) + 4;
	struct tm tm;

	(void)state;
	gmtime_r(&when, &tm);
	strftime(s->retry_date, sizeof(s->retry_date),
		 "%a, %d %b %Y %H:%M:%S GMT", &tm);
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	assert_int_equal(tsrv_count(s), 3);
	assert_true(s->req[1].t - s->req[0].t >= 1.0);
	/* The date was 4 s ahead (whole seconds) before the first try and
	 * its 1 s wait: at least about 2 s after the answer carrying it. */
	if (s->req[2].t - s->req[1].t < 1.0)
		fail_msg("waited %gs after Retry-After: %s",
			 s->req[2].t - s->req[1].t, s->retry_date);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(code_count(&st, 429), 2);
	assert_int_equal(st.samples_retried, 24);
	assert_int_equal(st.samples_sent, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

/* retry_on_http_429: false makes a 429 a refusal, as in Prometheus. */
static void no_retry_on_429(void **state)
{
	static const struct tsrv_step script[] = {
		{ .status = 429, .retry_after = "1" },
	};
	struct tsrv *s = srv_start(script, 1);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  queue_config: {retry_on_http_429: false}\n",
			 s->port);
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_REFUSED);
	assert_int_equal(tsrv_count(s), 1);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_failed, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

/* A receiver that never answers is cut by remote_timeout and the batch
 * retried; the next answer acknowledges it. */
static void hanging_receiver_times_out(void **state)
{
	static const struct tsrv_step script[] = {
		{ .hang = 1 },
		{ .status = 200 },
	};
	struct tsrv *s = srv_start(script, 2);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  remote_timeout: 300ms\n"
			 "  queue_config: {min_backoff: 1ms, max_backoff: "
			 "5ms}\n",
			 s->port);
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	assert_int_equal(tsrv_count(s), 2);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.failures[GW_RW_FAIL_TIMEOUT], 1);
	assert_int_equal(st.samples_retried, 12);
	assert_int_equal(st.samples_sent, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

static bool one_request_seen(const struct gw_rw_stats *st)
{
	return st->samples_retried >= 12;
}

/* A stop ends the send while it waits out a Retry-After of an hour, and
 * while a transfer hangs (remote_timeout a minute). */
static void stop_is_prompt(void **state)
{
	static const struct tsrv_step script[] = {
		{ .status = 503, .retry_after = "3600" },
		{ .hang = 1 },
	};
	struct tsrv *s = srv_start(script, 2);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  remote_timeout: 1m\n",
			 s->port);
	struct batch b;
	struct bg g;

	(void)state;
	batch_init(&b);
	bg_start(&g, c, &b);
	wait_stats(gw_rw_config_endpoint(c, 0), one_request_seen);
	assert_int_equal(bg_stop(&g), GW_RW_STOPPED);
	/* Now in a transfer that hangs. */
	bg_start(&g, c, &b);
	tsrv_wait(s, 2);
	assert_int_equal(bg_stop(&g), GW_RW_STOPPED);
	assert_int_equal(tsrv_count(s), 2);
	batch_release(&b);
	gw_rw_config_free(c);
	tsrv_stop(s);
}

static bool three_connection_failures(const struct gw_rw_stats *st)
{
	return st->failures[GW_RW_FAIL_CONNECTION] >= 3;
}

/* Nobody listening: connection errors, retried until stopped. */
static void connection_refused_retried(void **state)
{
	unsigned short port = 0;
	int fd = tsrv_listen(&port);
	struct gw_rw_config *c;
	struct gw_rw_stats st;
	struct batch b;
	struct bg g;

	(void)state;
	close(fd);
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  queue_config: {min_backoff: 1ms, max_backoff: 10ms}\n",
		     port);
	batch_init(&b);
	bg_start(&g, c, &b);
	wait_stats(gw_rw_config_endpoint(c, 0), three_connection_failures);
	assert_int_equal(bg_stop(&g), GW_RW_STOPPED);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_true(st.samples_retried >= 36);
	assert_int_equal(st.samples_sent, 0);
	assert_int_equal(st.samples_failed, 0);
	batch_release(&b);
	gw_rw_config_free(c);
}

static bool two_failures(const struct gw_rw_stats *st)
{
	uint64_t n = 0;

	for (int i = 0; i < GW_RW_FAIL_COUNT; i++)
		n += st->failures[i];
	for (unsigned int i = 0; i < st->ncodes; i++)
		n += st->codes[i].n;
	return n >= 2;
}

/* Answers that are not HTTP, cut short, or absurd: counted and retried,
 * never a crash, never "sent". */
static void garbage_answers(void **state)
{
	(void)state;
	for (int mode = 0; mode < 5; mode++) {
		struct junk j = { 0 };
		struct gw_rw_config *c;
		struct gw_rw_stats st;
		struct batch b;
		struct bg g;

		j.fd = tsrv_listen(&j.port);
		j.mode = mode;
		atomic_init(&j.stop, false);
		assert_int_equal(pthread_create(&j.th, NULL, junk_main, &j), 0);
		c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			     "  remote_timeout: 1s\n"
			     "  queue_config: {min_backoff: 1ms, max_backoff: "
			     "5ms}\n",
			     j.port);
		batch_init(&b);
		bg_start(&g, c, &b);
		wait_stats(gw_rw_config_endpoint(c, 0), two_failures);
		assert_int_equal(bg_stop(&g), GW_RW_STOPPED);
		gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
		assert_int_equal(st.samples_sent, 0);
		assert_true(atomic_load(&j.conns) >= 2);
		atomic_store(&j.stop, true);
		pthread_join(j.th, NULL);
		close(j.fd);
		batch_release(&b);
		gw_rw_config_free(c);
	}
}

/* Replaces path's content at once (a reader never sees it half written). */
static void write_file(const char *path, const char *text)
{
	char tmp[256];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(rename(tmp, path), 0);
}

/* basic_auth with a password or a password_file. */
static void basic_auth(void **state)
{
	struct tsrv *s = srv_start(NULL, 0);
	char pwfile[] = "/tmp/gw-rw-pw-XXXXXX";
	int fd = mkstemp(pwfile);
	struct gw_rw_config *c;
	struct batch b;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_file(pwfile, "s3cret\n");
	batch_init(&b);
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  basic_auth: {username: user, password: pass}\n",
		     s->port);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	tsrv_wait(s, 1);
	assert_string_equal(s->req[0].auth, "Basic dXNlcjpwYXNz");
	gw_rw_config_free(c);
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  basic_auth: {username: agent, password_file: %s}\n",
		     s->port, pwfile);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	tsrv_wait(s, 2);
	assert_string_equal(s->req[1].auth, "Basic YWdlbnQ6czNjcmV0");
	gw_rw_config_free(c);
	unlink(pwfile);
	batch_release(&b);
	tsrv_stop(s);
}

static bool sent_36(const struct gw_rw_stats *st)
{
	return st->samples_sent >= 36;
}

static bool credentials_failed(const struct gw_rw_stats *st)
{
	return st->failures[GW_RW_FAIL_CREDENTIALS] >= 1;
}

/* authorization: Bearer by default, credentials_file re-read at every
 * send (a rotated token is used at once); a missing file is retried until
 * it appears. */
static void bearer_credentials(void **state)
{
	struct tsrv *s = srv_start(NULL, 0);
	char dir[] = "/tmp/gw-rw-tok-XXXXXX", tok[64];
	struct gw_rw_config *c;
	struct gw_rw_client *cl;
	struct batch b;
	struct bg g;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(tok, sizeof(tok), "%s/token", dir);
	write_file(tok, "tok1\n");
	batch_init(&b);
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  authorization: {credentials_file: %s}\n"
		     "  queue_config: {min_backoff: 1ms, max_backoff: 5ms}\n",
		     s->port, tok);
	assert_int_equal(gw_rw_client_new(gw_rw_config_endpoint(c, 0), &cl), 0);
	assert_int_equal(gw_rw_client_send(cl, b.body.p, b.body.len, b.raw_len,
					   b.samples, NULL),
			 GW_RW_SENT);
	tsrv_wait(s, 1);
	assert_string_equal(s->req[0].auth, "Bearer tok1");
	write_file(tok, "tok2");
	assert_int_equal(gw_rw_client_send(cl, b.body.p, b.body.len, b.raw_len,
					   b.samples, NULL),
			 GW_RW_SENT);
	tsrv_wait(s, 2);
	assert_string_equal(s->req[1].auth, "Bearer tok2");
	gw_rw_client_free(cl);

	/* The file disappears: tries fail (nothing sent without it) until
	 * it is back. */
	unlink(tok);
	bg_start(&g, c, &b);
	wait_stats(gw_rw_config_endpoint(c, 0), credentials_failed);
	assert_int_equal(tsrv_count(s), 2);
	write_file(tok, "tok3\n");
	wait_stats(gw_rw_config_endpoint(c, 0), sent_36);
	assert_int_equal(bg_stop(&g), GW_RW_SENT);
	tsrv_wait(s, 3);
	assert_string_equal(s->req[2].auth, "Bearer tok3");
	gw_rw_config_free(c);

	/* Another type, inline credentials. */
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  authorization: {type: Custom, credentials: abc}\n",
		     s->port);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	tsrv_wait(s, 4);
	assert_string_equal(s->req[3].auth, "Custom abc");
	gw_rw_config_free(c);
	unlink(tok);
	rmdir(dir);
	batch_release(&b);
	tsrv_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(protocol_headers_and_body),
		cmocka_unit_test(refused_4xx_not_retried),
		cmocka_unit_test(redirects),
		cmocka_unit_test(retry_5xx_then_success),
		cmocka_unit_test(retry_after_429),
		cmocka_unit_test(no_retry_on_429),
		cmocka_unit_test(hanging_receiver_times_out),
		cmocka_unit_test(stop_is_prompt),
		cmocka_unit_test(connection_refused_retried),
		cmocka_unit_test(garbage_answers),
		cmocka_unit_test(basic_auth),
		cmocka_unit_test(bearer_credentials),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
