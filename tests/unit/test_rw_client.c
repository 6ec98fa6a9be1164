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
#include "export/rw.h"
#include "pipeline/metrics.h"

#define MAXREQ	 32
#define BODY_MAX (8u << 20)
#define WAIT_S	 20.0

/* ---- the recording receiver ---- */

struct step {
	int status;
	const char *retry_after; /* NULL: no header */
	const char *body;
	int hang;	      /* hold the request until released */
	const char *location; /* a Location: header (redirects) */
};

struct rec {
	double t; /* CLOCK_MONOTONIC when the request was complete */
	char path[128], ce[64], ct[64], ver[32], ua[64], auth[256], org[64];
	unsigned char *body;
	size_t len;
};

struct srv {
	struct MHD_Daemon *d;
	unsigned short port;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct step script[16];
	unsigned int nscript, iscript;
	struct rec rec[MAXREQ];
	unsigned int nrec;
	int released;
	char retry_date[64]; /* a step's retry_after "DATE" uses this */
};

struct upload {
	unsigned char *p;
	size_t len;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct srv *s = cls;
	struct upload *u = *con_cls;
	struct MHD_Response *r;
	struct step st = { .status = 200 };
	enum MHD_Result ret;
	struct rec *rc;

	(void)version;
	(void)method;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return MHD_NO;
		*con_cls = u;
		return MHD_YES;
	}
	if (*data_size) {
		unsigned char *p;

		if (u->len + *data_size > BODY_MAX)
			return MHD_NO;
		p = realloc(u->p, u->len + *data_size);
		if (!p)
			return MHD_NO;
		memcpy(p + u->len, data, *data_size);
		u->p = p;
		u->len += *data_size;
		*data_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&s->mu);
	rc = &s->rec[s->nrec < MAXREQ ? s->nrec : MAXREQ - 1];
	free(rc->body);
	memset(rc, 0, sizeof(*rc));
	rc->t = now_s();
	copy(rc->path, sizeof(rc->path), url);
#define HDR(f, name)                                                           \
	copy(rc->f, sizeof(rc->f),                                             \
	     MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name))
	HDR(ce, "Content-Encoding");
	HDR(ct, "Content-Type");
	HDR(ver, "X-Prometheus-Remote-Write-Version");
	HDR(ua, "User-Agent");
	HDR(auth, "Authorization");
	HDR(org, "X-Scope-OrgID");
#undef HDR
	rc->body = u->p;
	rc->len = u->len;
	u->p = NULL;
	u->len = 0;
	if (s->nrec < MAXREQ)
		s->nrec++;
	if (s->iscript < s->nscript)
		st = s->script[s->iscript++];
	pthread_cond_broadcast(&s->cv);
	if (st.hang) {
		struct timespec until = gw_ts_after(CLOCK_MONOTONIC, 60);

		while (!s->released &&
		       pthread_cond_timedwait(&s->cv, &s->mu, &until) !=
			       ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&s->mu);
	if (st.hang)
		return MHD_NO; /* the client gave up long ago */

	r = MHD_create_response_from_buffer(st.body ? strlen(st.body) : 0,
					    (void *)(st.body ? st.body : ""),
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (st.location)
		MHD_add_response_header(r, "Location", st.location);
	if (st.retry_after)
		MHD_add_response_header(r, "Retry-After",
					strcmp(st.retry_after, "DATE")
						? st.retry_after
						: s->retry_date);
	ret = MHD_queue_response(conn, (unsigned int)st.status, r);
	MHD_destroy_response(r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct upload *u = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (u) {
		free(u->p);
		free(u);
		*con_cls = NULL;
	}
}

static int listen_any(unsigned short *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static struct srv *srv_start(const struct step *script, unsigned int n)
{
	struct srv *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int fd;

	assert_non_null(s);
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (n)
		memcpy(s->script, script, n * sizeof(*script));
	s->nscript = n;
	fd = listen_any(&s->port);
	s->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD |
			MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC,
		0, NULL, NULL, handler, s, MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_NOTIFY_COMPLETED, completed, s,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
		MHD_OPTION_END);
	assert_non_null(s->d);
	return s;
}

static void srv_stop(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	s->released = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	MHD_stop_daemon(s->d);
	for (unsigned int i = 0; i < MAXREQ; i++)
		free(s->rec[i].body);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static unsigned int srv_count(struct srv *s)
{
	unsigned int n;

	pthread_mutex_lock(&s->mu);
	n = s->nrec;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Waits (on the server's condition) until it has seen n requests. */
static void srv_wait(struct srv *s, unsigned int n)
{
	struct timespec until = gw_ts_after(CLOCK_MONOTONIC, WAIT_S);

	pthread_mutex_lock(&s->mu);
	while (s->nrec < n)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
			break;
	n = s->nrec >= n;
	pthread_mutex_unlock(&s->mu);
	assert_true(n);
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
		"HTTP/1.1 500 Internal Server Error\r\nContent-Length: "
		"999999999999999999999\r\n\r\n",
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
	double end = now_s() + WAIT_S;

	for (;;) {
		struct timespec ts = { 0, 2000000 };

		gw_rw_endpoint_stats(ep, &st);
		if (pred(&st))
			return;
		if (now_s() > end)
			fail_msg("condition not reached within %gs", WAIT_S);
		nanosleep(&ts, NULL); /* polling interval, not a sync */
	}
}

/* ---- tests ---- */

/* What a receiver sees: the protocol's headers and the batch. */
static void protocol_headers_and_body(void **state)
{
	struct srv *s = srv_start(NULL, 0);
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
	assert_int_equal(srv_count(s), 1);
	assert_string_equal(s->rec[0].path, "/api/v1/write");
	assert_string_equal(s->rec[0].ce, "snappy");
	assert_string_equal(s->rec[0].ct, "application/x-protobuf");
	assert_string_equal(s->rec[0].ver, "0.1.0");
	assert_string_equal(s->rec[0].ua, "gpuwatch/" GW_VERSION);
	assert_string_equal(s->rec[0].org, "team-a");
	assert_string_equal(s->rec[0].auth, "");
	assert_int_equal(gw_rw_decode(s->rec[0].body, s->rec[0].len, &d), 0);
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
	srv_stop(s);
}

/* Redirects are followed with the body (follow_redirects, default true),
 * or are a refusal when turned off. */
static void redirects(void **state)
{
	static const struct step script[] = {
		{ .status = 308, .location = "/moved/write" },
		{ .status = 200 },
		{ .status = 307, .location = "/moved/write" },
	};
	struct srv *s = srv_start(script, 3);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n", s->port);
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	assert_int_equal(srv_count(s), 2);
	assert_string_equal(s->rec[1].path, "/moved/write");
	assert_int_equal(s->rec[1].len, b.body.len);
	assert_memory_equal(s->rec[1].body, b.body.p, b.body.len);
	gw_rw_config_free(c);
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  follow_redirects: false\n",
		     s->port);
	assert_int_equal(send_once(c, &b), GW_RW_REFUSED);
	assert_int_equal(srv_count(s), 3);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_failed, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	srv_stop(s);
}

/* A 4xx is sent once, counted failed, never retried. */
static void refused_4xx_not_retried(void **state)
{
	static const struct step script[] = {
		{ .status = 400, .body = "out of order sample\nsecond line" },
	};
	struct srv *s = srv_start(script, 1);
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
	assert_int_equal(srv_count(s), 1);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_failed, 12);
	assert_int_equal(st.samples_sent, 0);
	assert_int_equal(st.samples_retried, 0);
	assert_int_equal(code_count(&st, 400), 1);
	batch_release(&b);
	gw_rw_config_free(c);
	srv_stop(s);
}

/* 5xx are retried after a backoff of at least min_backoff; then sent. */
static void retry_5xx_then_success(void **state)
{
	static const struct step script[] = {
		{ .status = 500, .body = "boom" },
		{ .status = 503 },
		{ .status = 204 },
	};
	struct srv *s = srv_start(script, 3);
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
	assert_int_equal(srv_count(s), 3);
	assert_true(s->rec[1].t - s->rec[0].t >= 0.05);
	assert_true(s->rec[2].t - s->rec[1].t >= 0.05);
	/* The same bytes each time. */
	assert_int_equal(s->rec[2].len, b.body.len);
	assert_memory_equal(s->rec[2].body, b.body.p, b.body.len);
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
	srv_stop(s);
}

/* 429 with Retry-After: the next try comes no sooner than it says, in
 * seconds or as an HTTP date, even beyond max_backoff. */
static void retry_after_429(void **state)
{
	static const struct step script[] = {
		{ .status = 429, .retry_after = "1" },
		{ .status = 429, .retry_after = "DATE" },
		{ .status = 200 },
	};
	struct srv *s = srv_start(script, 3);
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
	assert_int_equal(srv_count(s), 3);
	assert_true(s->rec[1].t - s->rec[0].t >= 1.0);
	/* The date was 4 s ahead (whole seconds) before the first try and
	 * its 1 s wait: at least about 2 s after the answer carrying it. */
	if (s->rec[2].t - s->rec[1].t < 1.0)
		fail_msg("waited %gs after Retry-After: %s",
			 s->rec[2].t - s->rec[1].t, s->retry_date);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(code_count(&st, 429), 2);
	assert_int_equal(st.samples_retried, 24);
	assert_int_equal(st.samples_sent, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	srv_stop(s);
}

/* retry_on_http_429: false makes a 429 a refusal, as in Prometheus. */
static void no_retry_on_429(void **state)
{
	static const struct step script[] = {
		{ .status = 429, .retry_after = "1" },
	};
	struct srv *s = srv_start(script, 1);
	struct gw_rw_config *c =
		endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
			 "  queue_config: {retry_on_http_429: false}\n",
			 s->port);
	struct gw_rw_stats st;
	struct batch b;

	(void)state;
	batch_init(&b);
	assert_int_equal(send_once(c, &b), GW_RW_REFUSED);
	assert_int_equal(srv_count(s), 1);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.samples_failed, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	srv_stop(s);
}

/* A receiver that never answers is cut by remote_timeout and the batch
 * retried; the next answer acknowledges it. */
static void hanging_receiver_times_out(void **state)
{
	static const struct step script[] = {
		{ .hang = 1 },
		{ .status = 200 },
	};
	struct srv *s = srv_start(script, 2);
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
	assert_int_equal(srv_count(s), 2);
	gw_rw_endpoint_stats(gw_rw_config_endpoint(c, 0), &st);
	assert_int_equal(st.failures[GW_RW_FAIL_TIMEOUT], 1);
	assert_int_equal(st.samples_retried, 12);
	assert_int_equal(st.samples_sent, 12);
	batch_release(&b);
	gw_rw_config_free(c);
	srv_stop(s);
}

static bool one_request_seen(const struct gw_rw_stats *st)
{
	return st->samples_retried >= 12;
}

/* A stop ends the send while it waits out a Retry-After of an hour, and
 * while a transfer hangs (remote_timeout a minute). */
static void stop_is_prompt(void **state)
{
	static const struct step script[] = {
		{ .status = 503, .retry_after = "3600" },
		{ .hang = 1 },
	};
	struct srv *s = srv_start(script, 2);
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
	srv_wait(s, 2);
	assert_int_equal(bg_stop(&g), GW_RW_STOPPED);
	assert_int_equal(srv_count(s), 2);
	batch_release(&b);
	gw_rw_config_free(c);
	srv_stop(s);
}

static bool three_connection_failures(const struct gw_rw_stats *st)
{
	return st->failures[GW_RW_FAIL_CONNECTION] >= 3;
}

/* Nobody listening: connection errors, retried until stopped. */
static void connection_refused_retried(void **state)
{
	unsigned short port;
	int fd = listen_any(&port);
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

		j.fd = listen_any(&j.port);
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
	struct srv *s = srv_start(NULL, 0);
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
	srv_wait(s, 1);
	assert_string_equal(s->rec[0].auth, "Basic dXNlcjpwYXNz");
	gw_rw_config_free(c);
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  basic_auth: {username: agent, password_file: %s}\n",
		     s->port, pwfile);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	srv_wait(s, 2);
	assert_string_equal(s->rec[1].auth, "Basic YWdlbnQ6czNjcmV0");
	gw_rw_config_free(c);
	unlink(pwfile);
	batch_release(&b);
	srv_stop(s);
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
	struct srv *s = srv_start(NULL, 0);
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
	srv_wait(s, 1);
	assert_string_equal(s->rec[0].auth, "Bearer tok1");
	write_file(tok, "tok2");
	assert_int_equal(gw_rw_client_send(cl, b.body.p, b.body.len, b.raw_len,
					   b.samples, NULL),
			 GW_RW_SENT);
	srv_wait(s, 2);
	assert_string_equal(s->rec[1].auth, "Bearer tok2");
	gw_rw_client_free(cl);

	/* The file disappears: tries fail (nothing sent without it) until
	 * it is back. */
	unlink(tok);
	bg_start(&g, c, &b);
	wait_stats(gw_rw_config_endpoint(c, 0), credentials_failed);
	assert_int_equal(srv_count(s), 2);
	write_file(tok, "tok3\n");
	wait_stats(gw_rw_config_endpoint(c, 0), sent_36);
	assert_int_equal(bg_stop(&g), GW_RW_SENT);
	srv_wait(s, 3);
	assert_string_equal(s->rec[2].auth, "Bearer tok3");
	gw_rw_config_free(c);

	/* Another type, inline credentials. */
	c = endpoint("- url: http://127.0.0.1:%u/api/v1/write\n"
		     "  authorization: {type: Custom, credentials: abc}\n",
		     s->port);
	assert_int_equal(send_once(c, &b), GW_RW_SENT);
	srv_wait(s, 4);
	assert_string_equal(s->rec[3].auth, "Custom abc");
	gw_rw_config_free(c);
	unlink(tok);
	rmdir(dir);
	batch_release(&b);
	srv_stop(s);
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
