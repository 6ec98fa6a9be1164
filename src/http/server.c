/* SPDX-License-Identifier: MIT */
#include "server.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parse.h"
#include "http/gzip.h"
#include "http/web.h"
#include "http/websec.h"

#define MAX_RESPONSE	(64u << 20)
#define MAX_QUEUED	32 /* API requests waiting for a worker */
#define MAX_WORKERS	64
#define DEFAULT_WORKERS 4
/* The query workers' nice value: under CPU contention, collection threads
 * (nice 0) get about ten times their share. */
#define QUERY_NICE 10
/* How long gw_http_close lets the server thread send the replies of
 * requests that were parked (cancelled or 503) before it stops. */
#define FLUSH_NS 1000000000ull

#define DEFAULT_MAX_CONNS      256
#define DEFAULT_MAX_PER_CLIENT 64
#define DEFAULT_RESERVED       16
#define DEFAULT_HEADER_TIMEOUT 5.0
#define DEFAULT_BODY_TIMEOUT   10.0
/* Slots beyond max_connections for connections shut down but not yet
 * closed by libmicrohttpd (it accepts at most 10 in a row). */
#define CLOSING_SLACK 64

/*
 * One open connection, as the limits see it.  Phases:
 *
 *   HEADERS --headers in--> BODY --complete--> BUSY (parked for a worker)
 *      ^                      |                  |
 *      |                      +----> SENDING <---+
 *      |                               |
 *      +------ IDLE <---answer sent----+
 *
 * HEADERS and IDLE may be evicted for a new connection; HEADERS, BODY,
 * SENDING and IDLE have deadlines (the timer thread); BUSY has the query
 * timeout.  `closing`: shut down by us, no longer counted as open, until
 * libmicrohttpd closes it and the slot is free again.
 */
enum conn_phase { PH_HEADERS, PH_BODY, PH_BUSY, PH_SENDING, PH_IDLE };

struct hconn {
	struct gw_http *h;
	bool used, closing;
	enum conn_phase phase;
	uint64_t since_ns; /* the phase began */
	int fd;
	struct sockaddr_storage addr;
};

/*
 * One API request.  States: NEW (headers, then body pieces) -> QUEUED
 * (connection suspended, owned by the queue and then one worker) -> DONE
 * (reply ready, connection resumed) -> SENT -> freed by
 * request_completed().  A request answered without a worker goes from NEW
 * straight to SENT.
 */
enum req_state { REQ_NEW, REQ_QUEUED, REQ_DONE, REQ_SENT };

struct req {
	enum req_state state;
	enum gw_api_endpoint ep;
	bool post, too_big;
	bool parked; /* counted in gw_http.parked until completed */
	struct MHD_Connection *conn;
	char *path;
	struct gw_buf body;
	struct gw_api_params params;
	bool params_full;
	int64_t now_ms;
	uint64_t arrival_ns;
	struct gw_api_reply reply;
	char *accept_encoding; /* the client's, or NULL */
	char *gz;	       /* the reply gzip'd (gzip.h), or NULL */
	size_t gz_len;
	struct req *next; /* queue link */
};

struct gw_http {
	struct MHD_Daemon *d;
	struct gw_registry *reg;
	int fd;
	char url[300];
	_Atomic uint64_t requests, scrapes, errors, last_bytes;
	_Atomic uint64_t scrape_ns_sum, last_scrape_ns;
	_Atomic uint64_t api_requests[GW_API_ENDPOINTS];
	_Atomic uint64_t api_errors[GW_API_ENDPOINTS];
	_Atomic uint64_t api_ns[GW_API_ENDPOINTS];
	_Atomic uint64_t api_rejected;
	_Atomic uint64_t api_in_flight;
	_Atomic uint64_t refused[GW_HTTP_REFUSALS];
	_Atomic uint64_t conns_open; /* used and not closing */

	/* Connection limits: set before start, read-only after. */
	struct gw_http_limits lim;
	uint64_t header_ns, body_ns;

	/* Open connections: admitted and tracked by the server thread,
	 * timed out by the timer thread, under conn_lock. */
	pthread_mutex_t conn_lock;
	struct hconn *conns;
	size_t nslots;
	pthread_cond_t timer_wake; /* CLOCK_MONOTONIC */
	bool timer_stop, timer_running;
	pthread_t timer;

	/* The web configuration (gw_http_set_web): set before start,
	 * read-only after. */
	struct gw_websec *web; /* NULL: plain HTTP, no auth */
	bool healthz_open, admin, lifecycle;
	_Atomic uint64_t auth_failed[GW_HTTP_AUTH_FAILURES];

	/* Set first by gw_http_close: running queries stop (opts.cancel). */
	_Atomic bool cancel;

	/* The query API: set before start, read-only after. */
	bool have_q;
	struct gw_queryable q;
	struct gw_api_opts opts;

	/* Queue of parked requests and the workers taking from it. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct req *head, *tail;
	size_t queued;
	size_t parked;		/* parked requests not yet completed by MHD */
	pthread_cond_t flushed; /* parked went to 0; CLOCK_MONOTONIC */
	bool stopping;
	pthread_t workers[MAX_WORKERS];
	size_t nworkers;
};

/* Marks a non-API request after its first call. */
static int first_call_marker;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *gw_http_refusal_name(enum gw_http_refusal r)
{
	static const char *const names[GW_HTTP_REFUSALS] = {
		[GW_HTTP_REFUSED_MAX_CONNECTIONS] = "max_connections",
		[GW_HTTP_REFUSED_MAX_PER_CLIENT] = "max_per_client",
		[GW_HTTP_REFUSED_EVICTED] = "evicted",
		[GW_HTTP_REFUSED_HEADER_TIMEOUT] = "header_timeout",
		[GW_HTTP_REFUSED_BODY_TIMEOUT] = "body_timeout",
		[GW_HTTP_REFUSED_SEND_TIMEOUT] = "send_timeout",
		[GW_HTTP_REFUSED_RESERVED] = "reserved",
	};

	return (unsigned int)r < GW_HTTP_REFUSALS ? names[r] : "unknown";
}

/* ---- connection limits ---- */

static bool same_client(const struct sockaddr_storage *a,
			const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (b->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return true; /* one family without addresses: one client */
}

static bool evictable(const struct hconn *c)
{
	return c->used && !c->closing &&
	       (c->phase == PH_HEADERS || c->phase == PH_IDLE);
}

/* Shuts c down (conn_lock held): libmicrohttpd sees the end of the stream
 * at its next poll and closes it; the slot is freed then (conn_closed).
 * The fd is still open here: it is closed only after conn_closed, which
 * takes conn_lock. */
static void shut(struct gw_http *h, struct hconn *c, int reason)
{
	shutdown(c->fd, SHUT_RDWR);
	c->closing = true;
	atomic_fetch_sub(&h->conns_open, 1);
	if (reason >= 0)
		atomic_fetch_add(&h->refused[reason], 1);
}

/*
 * libmicrohttpd's accept policy, on the server thread: admit a new
 * connection from addr, closing the oldest idle or slow one of the same
 * client (then of any) when a limit is reached, or refuse it when every
 * candidate is busy.
 */
static enum MHD_Result admit(void *cls, const struct sockaddr *addr,
			     socklen_t addrlen)
{
	struct gw_http *h = cls;
	struct hconn *mine_old = NULL, *any_old = NULL;
	size_t used = 0, open = 0, mine = 0;

	(void)addrlen;
	pthread_mutex_lock(&h->conn_lock);
	for (size_t i = 0; i < h->nslots; i++) {
		struct hconn *c = &h->conns[i];
		bool same;

		if (!c->used)
			continue;
		used++;
		if (c->closing)
			continue;
		open++;
		same = same_client(&c->addr, addr);
		mine += same;
		if (!evictable(c))
			continue;
		if (!any_old || c->since_ns < any_old->since_ns)
			any_old = c;
		if (same && (!mine_old || c->since_ns < mine_old->since_ns))
			mine_old = c;
	}
	if (used >= h->nslots) {
		/* Too many shut down and not yet closed: wait for those. */
		atomic_fetch_add(&h->refused[GW_HTTP_REFUSED_MAX_CONNECTIONS],
				 1);
		goto refuse;
	}
	if (mine >= h->lim.max_per_client) {
		if (!mine_old) {
			atomic_fetch_add(
				&h->refused[GW_HTTP_REFUSED_MAX_PER_CLIENT], 1);
			goto refuse;
		}
		shut(h, mine_old, GW_HTTP_REFUSED_EVICTED);
		open--;
		if (any_old == mine_old) {
			any_old = NULL;
			for (size_t i = 0; i < h->nslots; i++) {
				struct hconn *c = &h->conns[i];

				if (evictable(c) &&
				    (!any_old ||
				     c->since_ns < any_old->since_ns))
					any_old = c;
			}
		}
	}
	if (open >= h->lim.max_connections) {
		if (!any_old) {
			atomic_fetch_add(
				&h->refused[GW_HTTP_REFUSED_MAX_CONNECTIONS],
				1);
			goto refuse;
		}
		shut(h, any_old, GW_HTTP_REFUSED_EVICTED);
	}
	pthread_mutex_unlock(&h->conn_lock);
	return MHD_YES;
refuse:
	pthread_mutex_unlock(&h->conn_lock);
	return MHD_NO;
}

/* libmicrohttpd's connection notifications, on the server thread: a slot
 * for each admitted connection, freed before the fd is closed. */
static void conn_notify(void *cls, struct MHD_Connection *conn,
			void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct gw_http *h = cls;
	struct hconn *c = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		pthread_mutex_lock(&h->conn_lock);
		if (!c->closing)
			atomic_fetch_sub(&h->conns_open, 1);
		c->used = false;
		pthread_mutex_unlock(&h->conn_lock);
		*socket_context = NULL;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	if (gw_websec_tls(h->web)) {
		const union MHD_ConnectionInfo *ti = MHD_get_connection_info(
			conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);

		/* The session exists; its handshake has not begun:
		 * client_auth_type is enforced in it, as Go does. */
		if (ti && ti->tls_session)
			gw_websec_session(h->web, ti->tls_session);
	}
	{
		const union MHD_ConnectionInfo *fi = MHD_get_connection_info(
			conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai = MHD_get_connection_info(
			conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		pthread_mutex_lock(&h->conn_lock);
		for (size_t i = 0; i < h->nslots && fi; i++) {
			if (h->conns[i].used)
				continue;
			c = &h->conns[i];
			memset(c, 0, sizeof(*c));
			c->h = h;
			c->used = true;
			c->phase = PH_HEADERS;
			c->since_ns = mono_ns();
			c->fd = fi->connect_fd;
			if (ai && ai->client_addr) {
				size_t n =
					ai->client_addr->sa_family == AF_INET6
						? sizeof(struct sockaddr_in6)
						: sizeof(struct sockaddr_in);

				memcpy(&c->addr, ai->client_addr, n);
			}
			atomic_fetch_add(&h->conns_open, 1);
			*socket_context = c;
			break;
		}
		pthread_mutex_unlock(&h->conn_lock);
		/* admit() kept a slot free; without one, close it now. */
		if (!*socket_context && fi)
			shutdown(fi->connect_fd, SHUT_RDWR);
	}
}

static void set_phase(struct MHD_Connection *conn, enum conn_phase ph)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct hconn *c = ci ? ci->socket_context : NULL;

	if (!c)
		return;
	pthread_mutex_lock(&c->h->conn_lock);
	c->phase = ph;
	c->since_ns = mono_ns();
	pthread_mutex_unlock(&c->h->conn_lock);
}

/* Fewer than `reserved` connections free: only /metrics and /healthz. */
static bool reserve_only(struct gw_http *h)
{
	return atomic_load(&h->conns_open) + h->lim.reserved >
	       h->lim.max_connections;
}

/* Closes the connections past their phase's deadline. */
static void expire(struct gw_http *h, uint64_t now)
{
	pthread_mutex_lock(&h->conn_lock);
	for (size_t i = 0; i < h->nslots; i++) {
		struct hconn *c = &h->conns[i];
		uint64_t age = now - c->since_ns;

		if (!c->used || c->closing || now < c->since_ns)
			continue;
		switch (c->phase) {
		case PH_HEADERS:
			if (age > h->header_ns)
				shut(h, c, GW_HTTP_REFUSED_HEADER_TIMEOUT);
			break;
		case PH_IDLE: /* kept alive, no new request: not a refusal */
			if (age > h->header_ns)
				shut(h, c, -1);
			break;
		case PH_BODY:
			if (age > h->body_ns)
				shut(h, c, GW_HTTP_REFUSED_BODY_TIMEOUT);
			break;
		case PH_SENDING:
			if (age > h->body_ns)
				shut(h, c, GW_HTTP_REFUSED_SEND_TIMEOUT);
			break;
		case PH_BUSY:
			break;
		}
	}
	pthread_mutex_unlock(&h->conn_lock);
}

/* "gw-http-timer": checks the deadlines ten times per shortest one (at
 * least every 500 ms, at most every 20 ms). */
static void *timer_main(void *arg)
{
	struct gw_http *h = arg;
	uint64_t tick =
		(h->header_ns < h->body_ns ? h->header_ns : h->body_ns) / 10;

	if (tick > 500000000ull)
		tick = 500000000ull;
	if (tick < 20000000ull)
		tick = 20000000ull;
	pthread_mutex_lock(&h->conn_lock);
	while (!h->timer_stop) {
		uint64_t end = mono_ns() + tick;
		struct timespec until = {
			.tv_sec = (time_t)(end / 1000000000ull),
			.tv_nsec = (long)(end % 1000000000ull),
		};

		pthread_cond_timedwait(&h->timer_wake, &h->conn_lock, &until);
		if (h->timer_stop)
			break;
		pthread_mutex_unlock(&h->conn_lock);
		expire(h, mono_ns());
		pthread_mutex_lock(&h->conn_lock);
	}
	pthread_mutex_unlock(&h->conn_lock);
	return NULL;
}

static void stop_timer(struct gw_http *h)
{
	if (!h->timer_running)
		return;
	pthread_mutex_lock(&h->conn_lock);
	h->timer_stop = true;
	pthread_cond_signal(&h->timer_wake);
	pthread_mutex_unlock(&h->conn_lock);
	pthread_join(h->timer, NULL);
	h->timer_running = false;
}

/* http_server_config's headers, on every answer. */
static void add_headers(const struct gw_http *h, struct MHD_Response *r)
{
	gw_websec_headers(h->web, r);
}

/* How an answer's encoding was chosen (reply_enc). */
enum enc {
	ENC_FIXED, /* one representation: no Vary */
	ENC_PLAIN, /* could have been gzip'd: Vary: Accept-Encoding */
	ENC_GZIP,  /* gzip'd: Content-Encoding: gzip and Vary */
};

static enum MHD_Result reply_enc(struct gw_http *h, struct MHD_Connection *conn,
				 unsigned int status, const char *type,
				 char *body, size_t len, int owned,
				 enum enc enc);

static enum MHD_Result reply(struct gw_http *h, struct MHD_Connection *conn,
			     unsigned int status, const char *type, char *body,
			     size_t len, int owned)
{
	return reply_enc(h, conn, status, type, body, len, owned, ENC_FIXED);
}

static enum MHD_Result reply_enc(struct gw_http *h, struct MHD_Connection *conn,
				 unsigned int status, const char *type,
				 char *body, size_t len, int owned,
				 enum enc enc)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (owned)
		r = MHD_create_response_from_buffer(len, body,
						    MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(len, body,
						    MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (enc == ENC_GZIP)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING,
					"gzip");
	if (enc != ENC_FIXED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY,
					"Accept-Encoding");
	add_headers(h, r);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		set_phase(conn, PH_SENDING);
	return ret;
}

static enum MHD_Result reply_text(struct gw_http *h,
				  struct MHD_Connection *conn,
				  unsigned int status, const char *msg)
{
	if (status >= 400)
		atomic_fetch_add(&h->errors, 1);
	return reply(h, conn, status, "text/plain; charset=utf-8", (char *)msg,
		     strlen(msg), 0);
}

/* An embedded file of the web page (http/web.h): gzip'd when the client
 * takes it, 304 when it has it already. */
static enum MHD_Result serve_web(struct gw_http *h, struct MHD_Connection *conn,
				 const struct gw_web_asset *a)
{
	const char *ae, *inm;
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned int status = MHD_HTTP_OK;
	char etag[40];
	bool gz;

	ae = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_ACCEPT_ENCODING);
	inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					  MHD_HTTP_HEADER_IF_NONE_MATCH);
	gz = gw_web_accepts_gzip(ae);
	gw_web_etag(a, gz, etag, sizeof(etag));
	if (gw_web_etag_matches(inm, etag)) {
		status = MHD_HTTP_NOT_MODIFIED;
		r = MHD_create_response_from_buffer(0, (void *)"",
						    MHD_RESPMEM_PERSISTENT);
	} else {
		r = MHD_create_response_from_buffer(
			gz ? a->gz_len : a->raw_len,
			(void *)(gz ? a->gz : a->raw), MHD_RESPMEM_PERSISTENT);
	}
	if (!r)
		return MHD_NO;
	if (status == MHD_HTTP_OK) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					a->type);
		if (gz)
			MHD_add_response_header(
				r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; "
				"style-src 'self' 'unsafe-inline'; "
				"frame-ancestors 'none'");
	add_headers(h, r); /* those the page does not set itself */
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		set_phase(conn, PH_SENDING);
	return ret;
}

static enum MHD_Result reply_405(struct gw_http *h, struct MHD_Connection *conn)
{
	static const char msg[] = "method not allowed: use GET\n";
	struct MHD_Response *r;
	enum MHD_Result ret;

	atomic_fetch_add(&h->errors, 1);
	r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	add_headers(h, r);
	ret = MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		set_phase(conn, PH_SENDING);
	return ret;
}

static enum MHD_Result serve_metrics(struct gw_http *h,
				     struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	const char *ae = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	enum gw_expo_format fmt = gw_expo_negotiate(accept);
	const char *type = gw_expo_content_type(fmt);
	uint64_t t0 = mono_ns(), dt;
	struct gw_buf b;
	size_t len, gzlen;
	char *body, *gz = NULL;
	int err;

	gw_buf_init(&b, MAX_RESPONSE);
	err = gw_registry_render(h->reg, fmt, &b);
	if (err) {
		gw_buf_release(&b);
		gw_warn("http: cannot render /metrics: %s", strerror(-err));
		return reply_text(h, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot render metrics\n");
	}
	if (!b.p) {
		err = gw_buf_add(&b, "", 0);
		if (err) {
			gw_buf_release(&b);
			return reply_text(h, conn,
					  MHD_HTTP_INTERNAL_SERVER_ERROR,
					  "out of memory\n");
		}
	}
	body = gw_buf_detach(&b, &len);
	/* Prometheus asks for gzip on every scrape, as it does of its own
	 * /metrics; a failure only sends the plain text. */
	if (gw_http_gzip_worth(ae, type, len) &&
	    gw_http_gzip(body, len, &gz, &gzlen) == 0) {
		free(body);
		body = gz;
	}
	dt = mono_ns() - t0;
	atomic_fetch_add(&h->scrapes, 1);
	atomic_fetch_add(&h->scrape_ns_sum, dt);
	atomic_store(&h->last_scrape_ns, dt);
	atomic_store(&h->last_bytes, len);
	return reply_enc(h, conn, MHD_HTTP_OK, type, body, gz ? gzlen : len, 1,
			 gz ? ENC_GZIP : ENC_PLAIN);
}

static void api_count(struct gw_http *h, enum gw_api_endpoint ep,
		      unsigned int status, uint64_t arrival_ns)
{
	if ((unsigned int)ep >= GW_API_ENDPOINTS)
		ep = GW_API_UNKNOWN;
	atomic_fetch_add(&h->api_requests[ep], 1);
	atomic_fetch_add(&h->api_ns[ep], mono_ns() - arrival_ns);
	if (status >= 400) {
		atomic_fetch_add(&h->api_errors[ep], 1);
		atomic_fetch_add(&h->errors, 1);
	}
}

/* Sends an API reply (JSON, or a plain 500 when there is no body). */
static enum MHD_Result send_api(struct gw_http *h, struct MHD_Connection *conn,
				struct req *rq)
{
	struct gw_api_reply *r = &rq->reply;
	size_t len;
	char *body;

	rq->state = REQ_SENT;
	api_count(h, rq->ep, r->status, rq->arrival_ns);
	if (r->content_type && !r->body.len && !gw_buf_error(&r->body))
		return reply(h, conn, r->status, r->content_type, (char *)"", 0,
			     0);
	if (!r->body.p || !r->body.len)
		return reply(h, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     "text/plain; charset=utf-8",
			     (char *)"out of memory\n", 14, 0);
	/* gzip'd by the worker that built it, or here for an answer made in
	 * this thread (small: errors, alerts). */
	if (!rq->gz &&
	    gw_http_gzip_worth(rq->accept_encoding, r->content_type,
			       r->body.len) &&
	    gw_http_gzip(r->body.p, r->body.len, &rq->gz, &rq->gz_len))
		rq->gz = NULL;
	if (rq->gz) {
		body = rq->gz;
		rq->gz = NULL;
		return reply_enc(h, conn, r->status,
				 r->content_type ? r->content_type
						 : "application/json",
				 body, rq->gz_len, 1, ENC_GZIP);
	}
	body = gw_buf_detach(&r->body, &len);
	return reply_enc(h, conn, r->status,
			 r->content_type ? r->content_type : "application/json",
			 body, len, 1, ENC_PLAIN);
}

/* An error envelope sent at once from the server thread. */
static enum MHD_Result api_error_now(struct gw_http *h,
				     struct MHD_Connection *conn,
				     struct req *rq, unsigned int status,
				     const char *type, const char *msg)
{
	if (gw_api_reply_error(&rq->reply, status, type, msg))
		gw_buf_reset(&rq->reply.body);
	return send_api(h, conn, rq);
}

static enum MHD_Result api_405(struct gw_http *h, struct MHD_Connection *conn,
			       enum gw_api_endpoint ep)
{
	static const char msg[] = "method not allowed: use GET or POST\n";
	struct MHD_Response *r;
	enum MHD_Result ret;

	api_count(h, ep, MHD_HTTP_METHOD_NOT_ALLOWED, mono_ns());
	r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, POST");
	add_headers(h, r);
	ret = MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		set_phase(conn, PH_SENDING);
	return ret;
}

static void req_free(struct req *rq)
{
	if (!rq)
		return;
	free(rq->path);
	free(rq->accept_encoding);
	free(rq->gz);
	gw_buf_release(&rq->body);
	gw_api_params_release(&rq->params);
	gw_api_reply_release(&rq->reply);
	free(rq);
}

static void request_completed(void *cls, struct MHD_Connection *conn,
			      void **req_cls,
			      enum MHD_RequestTerminationCode toe)
{
	struct gw_http *h = cls;
	struct req *rq = *req_cls;

	(void)toe;
	set_phase(conn, PH_IDLE);
	*req_cls = NULL;
	if (!rq || (void *)rq == (void *)&first_call_marker)
		return;
	if (rq->parked) {
		pthread_mutex_lock(&h->lock);
		if (--h->parked == 0)
			pthread_cond_broadcast(&h->flushed);
		pthread_mutex_unlock(&h->lock);
	}
	req_free(rq);
}

/* A URL argument; its length keeps a %00 in the value (a NUL in a query is
 * a parse error, not its end). */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
			       const char *key, size_t key_size,
			       const char *value, size_t value_size)
{
	struct req *rq = cls;

	(void)kind;
	(void)key_size;
	if (gw_api_params_add_len(&rq->params, key, value,
				  value ? value_size : 0)) {
		rq->params_full = true;
		return MHD_NO;
	}
	return MHD_YES;
}

static bool form_type(const char *ct)
{
	static const char form[] = "application/x-www-form-urlencoded";

	/* Without a type a body is taken as a form, as curl -d sends. */
	return !ct || !*ct || strncasecmp(ct, form, sizeof(form) - 1) == 0;
}

/* First call for an API path: method, type and size checks. */
static enum MHD_Result api_begin(struct gw_http *h, struct MHD_Connection *conn,
				 enum gw_api_endpoint ep, const char *url,
				 const char *method, void **req_cls)
{
	const char *ct, *cl;
	struct req *rq;
	bool post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;

	if (!post && strcmp(method, MHD_HTTP_METHOD_GET) != 0)
		return api_405(h, conn, ep);
	rq = calloc(1, sizeof(*rq));
	if (!rq)
		return MHD_NO;
	rq->ep = ep;
	rq->post = post;
	rq->conn = conn;
	rq->arrival_ns = mono_ns();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		rq->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	}
	gw_buf_init(&rq->body, GW_API_MAX_BODY + 1); /* + its NUL */
	gw_api_reply_init(&rq->reply);
	*req_cls = rq;
	rq->path = strdup(url);
	if (!rq->path)
		return MHD_NO; /* request_completed frees rq */
	{
		const char *ae = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);

		/* Kept: the reply is sent after the headers' last call. */
		if (ae && !(rq->accept_encoding = strdup(ae)))
			return MHD_NO;
	}
	if (reserve_only(h)) {
		atomic_fetch_add(&h->refused[GW_HTTP_REFUSED_RESERVED], 1);
		return api_error_now(h, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				     "unavailable",
				     "too many connections: only /metrics and "
				     "/healthz are answered now");
	}
	if (!post)
		return MHD_YES;
	ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!form_type(ct)) {
		char msg[300];

		snprintf(msg, sizeof(msg),
			 "unsupported Content-Type \"%.200s\": send "
			 "application/x-www-form-urlencoded",
			 ct);
		return api_error_now(h, conn, rq, MHD_HTTP_BAD_REQUEST,
				     "bad_data", msg);
	}
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > GW_API_MAX_BODY)
		return api_error_now(h, conn, rq, MHD_HTTP_CONTENT_TOO_LARGE,
				     "bad_data",
				     "request body larger than 65536 bytes");
	return MHD_YES;
}

/*
 * Last call for an API request: gather the parameters (form body first,
 * then the query string, as Prometheus' Go server orders them) and park
 * the request for a worker, or answer at once when no worker is needed or
 * none can take it.
 */
static enum MHD_Result api_run(struct gw_http *h, struct MHD_Connection *conn,
			       struct req *rq)
{
	char err[300];

	if (rq->post && rq->body.len) {
		int r = gw_api_params_parse_form(&rq->params, rq->body.p,
						 rq->body.len, err,
						 sizeof(err) - 40);

		if (r) {
			char msg[340];

			snprintf(msg, sizeof(msg),
				 "error parsing form values: %s", err);
			return api_error_now(h, conn, rq, MHD_HTTP_BAD_REQUEST,
					     "bad_data", msg);
		}
	}
	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, add_arg, rq);
	if (rq->params_full)
		return api_error_now(h, conn, rq, MHD_HTTP_BAD_REQUEST,
				     "bad_data",
				     "too many or too large parameters");
	if (!h->have_q || rq->ep == GW_API_UNKNOWN) {
		/* Answered from this thread: nothing to evaluate. */
		struct gw_api_request arq = {
			.path = rq->path,
			.params = &rq->params,
			.now_ms = rq->now_ms,
			.arrival_ns = rq->arrival_ns,
			.post = rq->post,
		};

		if (gw_api_handle(NULL, &h->opts, &arq, &rq->reply))
			gw_buf_reset(&rq->reply.body);
		return send_api(h, conn, rq);
	}
	pthread_mutex_lock(&h->lock);
	if (h->stopping || h->queued >= MAX_QUEUED) {
		bool stopping = h->stopping;

		pthread_mutex_unlock(&h->lock);
		if (!stopping)
			atomic_fetch_add(&h->api_rejected, 1);
		return api_error_now(h, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				     "unavailable",
				     stopping ? "the agent is stopping"
					      : "too many queries waiting; "
						"try again later");
	}
	/* Suspended before it is published, so a worker's resume always
	 * follows this suspend. */
	MHD_suspend_connection(conn);
	set_phase(conn, PH_BUSY);
	rq->state = REQ_QUEUED;
	rq->parked = true;
	h->parked++;
	rq->next = NULL;
	if (h->tail)
		h->tail->next = rq;
	else
		h->head = rq;
	h->tail = rq;
	h->queued++;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	return MHD_YES;
}

static enum MHD_Result api_call(struct gw_http *h, struct MHD_Connection *conn,
				struct req *rq, const char *upload_data,
				size_t *upload_size)
{
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (!rq->post || rq->state != REQ_NEW || rq->too_big)
			return MHD_YES; /* a body on GET is ignored */
		/* Without a Content-Length (chunked) the size shows here;
		 * the rest is read and dropped, and the answer waits for the
		 * end of the body, as MHD wants. */
		if (n > GW_API_MAX_BODY - rq->body.len ||
		    gw_buf_add(&rq->body, upload_data, n))
			rq->too_big = true;
		return MHD_YES;
	}
	if (rq->too_big && rq->state == REQ_NEW)
		return api_error_now(h, conn, rq, MHD_HTTP_CONTENT_TOO_LARGE,
				     "bad_data",
				     "request body larger than 65536 bytes");
	if (rq->state == REQ_DONE)
		return send_api(h, conn, rq);
	if (rq->state != REQ_NEW)
		return MHD_YES; /* parked, or answered already */
	return api_run(h, conn, rq);
}

static const char admin_off[] =
	"{\"status\":\"error\",\"errorType\":\"unavailable\","
	"\"error\":\"admin APIs disabled (--web.enable-admin-api)\"}";

/*
 * basic_auth_users: true when the request may go on; otherwise the
 * answer (401 with WWW-Authenticate, or 429 while bcrypt checks are
 * rate limited) is queued in *ret and the failure counted.
 */
static bool authorized(struct gw_http *h, struct MHD_Connection *conn,
		       const char *url, enum MHD_Result *ret)
{
	static const char denied[] = "Unauthorized\n";
	static const char busy[] = "too many failed logins; try again\n";
	enum gw_http_auth_failure why = GW_HTTP_AUTH_MISSING;
	struct MHD_Response *r;
	char *user, *pass = NULL;

	if (!gw_websec_has_users(h->web) ||
	    (h->healthz_open && strcmp(url, "/healthz") == 0))
		return true;
	user = MHD_basic_auth_get_username_password(conn, &pass);
	if (user) {
		enum gw_webauth_verdict v = gw_websec_check(
			h->web, user, pass ? pass : "", mono_ns());

		why = v == GW_WEBAUTH_THROTTLED ? GW_HTTP_AUTH_THROTTLED
						: GW_HTTP_AUTH_WRONG;
		if (pass)
			explicit_bzero(pass, strlen(pass));
		MHD_free(user);
		MHD_free(pass);
		if (v == GW_WEBAUTH_OK)
			return true;
	}
	atomic_fetch_add(&h->auth_failed[why], 1);
	atomic_fetch_add(&h->errors, 1);
	*ret = MHD_NO;
	if (why == GW_HTTP_AUTH_THROTTLED) {
		r = MHD_create_response_from_buffer(
			sizeof(busy) - 1, (void *)busy, MHD_RESPMEM_PERSISTENT);
		if (!r)
			return false;
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	} else {
		r = MHD_create_response_from_buffer(sizeof(denied) - 1,
						    (void *)denied,
						    MHD_RESPMEM_PERSISTENT);
		if (!r)
			return false;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	add_headers(h, r);
	if (why == GW_HTTP_AUTH_THROTTLED)
		*ret = MHD_queue_response(conn, MHD_HTTP_TOO_MANY_REQUESTS, r);
	else
		*ret = MHD_queue_basic_auth_fail_response(conn, "gpuwatch", r);
	MHD_destroy_response(r);
	if (*ret == MHD_YES)
		set_phase(conn, PH_SENDING);
	return false;
}

/*
 * Prometheus' lifecycle endpoints: POST or PUT /-/reload raises SIGHUP,
 * /-/quit SIGTERM, in the agent's own process (its main thread waits
 * for both); 403 unless --web.enable-lifecycle.
 */
static enum MHD_Result lifecycle(struct gw_http *h, struct MHD_Connection *conn,
				 const char *url, const char *method)
{
	int sig;

	if (strcmp(url, "/-/healthy") == 0 || strcmp(url, "/-/ready") == 0)
		return reply_text(h, conn, MHD_HTTP_OK, "gpuwatch is ready.\n");
	if (strcmp(url, "/-/reload") == 0)
		sig = SIGHUP;
	else if (strcmp(url, "/-/quit") == 0)
		sig = SIGTERM;
	else
		return reply_text(h, conn, MHD_HTTP_NOT_FOUND, "not found\n");
	if (!h->lifecycle)
		return reply_text(h, conn, MHD_HTTP_FORBIDDEN,
				  "Lifecycle API is not enabled.\n");
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_PUT) != 0)
		return reply_text(h, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "Only POST or PUT requests allowed\n");
	gw_info("http: %s asked for by a client", url);
	if (kill(getpid(), sig))
		return reply_text(h, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot signal the agent\n");
	return reply_text(h, conn, MHD_HTTP_OK,
			  sig == SIGHUP ? "reloading\n" : "stopping\n");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_size, void **req_cls)
{
	struct gw_http *h = cls;
	enum gw_api_endpoint ep;

	(void)version;
	/*
	 * MHD calls once for the headers, then for each piece of a body, then
	 * to answer.  Count and judge the method on the first call, so a body
	 * sent with a wrong method is never read.
	 */
	if (*req_cls == NULL) {
		enum MHD_Result ret;

		atomic_fetch_add(&h->requests, 1);
		set_phase(conn, PH_BODY); /* the headers are in */
		if (!authorized(h, conn, url, &ret)) {
			*req_cls = &first_call_marker;
			return ret;
		}
		if (strncmp(url, "/-/", 3) == 0) {
			*req_cls = &first_call_marker;
			return lifecycle(h, conn, url, method);
		}
		if (strncmp(url, "/api/v1/admin/", 14) == 0 && !h->admin) {
			*req_cls = &first_call_marker;
			api_count(h, GW_API_ADMIN_PUSH, MHD_HTTP_FORBIDDEN,
				  mono_ns());
			return reply(h, conn, MHD_HTTP_FORBIDDEN,
				     "application/json", (char *)admin_off,
				     sizeof(admin_off) - 1, 0);
		}
		if (gw_api_route(url, &ep) == 0)
			return api_begin(h, conn, ep, url, method, req_cls);
		*req_cls = &first_call_marker;
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return reply_405(h, conn);
		if (strcmp(url, "/metrics") != 0 &&
		    strcmp(url, "/healthz") != 0 && reserve_only(h)) {
			atomic_fetch_add(&h->refused[GW_HTTP_REFUSED_RESERVED],
					 1);
			return reply_text(h, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "too many connections: only /metrics "
					  "and /healthz are answered now\n");
		}
		return MHD_YES;
	}
	if (*req_cls != &first_call_marker)
		return api_call(h, conn, *req_cls, upload_data, upload_size);
	if (*upload_size) {
		*upload_size = 0; /* a body on GET is ignored */
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") == 0)
		return serve_metrics(h, conn);
	if (strcmp(url, "/healthz") == 0)
		return reply_text(h, conn, MHD_HTTP_OK, "ok\n");
	{
		const struct gw_web_asset *a = gw_web_find(url);

		if (a)
			return serve_web(h, conn, a);
	}
	return reply_text(h, conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* A query worker: takes parked requests, answers them, resumes them. */
/*
 * A query that worked for a while allocated its samples in this thread's
 * arena and has freed them; glibc keeps freed memory, and a heavy query
 * every few seconds held hundreds of MiB resident though 35 MiB was in
 * use (bench/soak.sh).  Trimming costs milliseconds, small next to such a
 * query.
 */
static void give_back_after(double cpu_seconds)
{
#ifdef __GLIBC__
	if (cpu_seconds >= 0.02)
		malloc_trim(0);
#else
	(void)cpu_seconds;
#endif
}

static void *worker(void *arg)
{
	struct gw_http *h = arg;
	double cpu0;

	/* Queries yield to collection when the CPU is short (Linux nice is
	 * per thread; raising it needs no privilege).  A failure only
	 * leaves the default. */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), QUERY_NICE);
	for (;;) {
		struct gw_api_request arq;
		struct MHD_Connection *conn;
		struct req *rq;

		pthread_mutex_lock(&h->lock);
		while (!h->head && !h->stopping)
			pthread_cond_wait(&h->wake, &h->lock);
		if (h->stopping) {
			pthread_mutex_unlock(&h->lock);
			break;
		}
		rq = h->head;
		h->head = rq->next;
		if (!h->head)
			h->tail = NULL;
		h->queued--;
		pthread_mutex_unlock(&h->lock);

		arq = (struct gw_api_request){
			.path = rq->path,
			.params = &rq->params,
			.now_ms = rq->now_ms,
			.arrival_ns = rq->arrival_ns,
			.post = rq->post,
		};
		atomic_fetch_add(&h->api_in_flight, 1);
		cpu0 = gw_thread_cpu();
		if (gw_api_handle(&h->q, &h->opts, &arq, &rq->reply))
			gw_buf_reset(&rq->reply.body);
		/* Compressed here, off the server thread. */
		if (gw_http_gzip_worth(rq->accept_encoding,
				       rq->reply.content_type,
				       rq->reply.body.len) &&
		    gw_http_gzip(rq->reply.body.p, rq->reply.body.len, &rq->gz,
				 &rq->gz_len))
			rq->gz = NULL;
		atomic_fetch_sub(&h->api_in_flight, 1);
		give_back_after(gw_thread_cpu() - cpu0);
		rq->state = REQ_DONE;
		conn = rq->conn;
		/* From here rq belongs to the server thread again. */
		MHD_resume_connection(conn);
	}
	return NULL;
}

static int bind_listen(struct gw_http *h, const char *addr, char *err,
		       size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port_s[16], ahost[INET6_ADDRSTRLEN];
	unsigned int port;
	int fd = -1, one = 1, r;

	if (gw_parse_hostport(addr, host, sizeof(host), &port)) {
		snprintf(err, errlen, "'%s' is not HOST:PORT", addr);
		return -EINVAL;
	}
	snprintf(port_s, sizeof(port_s), "%u", port);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(host[0] ? host : NULL, port_s, &hints, &res);
	if (r) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host,
			 gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", addr,
			 strerror(errno));
		close(fd);
		fd = -1;
		goto out;
	}
	r = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &s6->sin6_addr, ahost,
				  sizeof(ahost));
			snprintf(h->url, sizeof(h->url), "http://[%s]:%u",
				 ahost, ntohs(s6->sin6_port));
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &s4->sin_addr, ahost, sizeof(ahost));
			snprintf(h->url, sizeof(h->url), "http://%s:%u", ahost,
				 ntohs(s4->sin_port));
		}
	}
	h->fd = fd;
out:
	freeaddrinfo(res);
	return r;
}

struct gw_http *gw_http_bind(const char *listen, struct gw_registry *reg,
			     char *err, size_t errlen)
{
	struct gw_http *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->reg = reg;
	h->fd = -1;
	if (bind_listen(h, listen, err, errlen)) {
		free(h);
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->conn_lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->flushed, &ca);
	pthread_cond_init(&h->timer_wake, &ca);
	pthread_condattr_destroy(&ca);
	gw_http_set_limits(h, NULL);
	return h;
}

void gw_http_set_queryable(struct gw_http *h, const struct gw_queryable *q,
			   const struct gw_api_opts *o)
{
	if (h->d)
		return; /* serving already: the contract says before start */
	h->have_q = q != NULL;
	if (q)
		h->q = *q;
	memset(&h->opts, 0, sizeof(h->opts));
	if (o)
		h->opts = *o;
	h->opts.cancel = &h->cancel;
}

void gw_http_set_limits(struct gw_http *h, const struct gw_http_limits *l)
{
	struct gw_http_limits v = { 0 };

	if (h->d)
		return; /* serving already: the contract says before start */
	if (l)
		v = *l;
	if (!v.max_connections)
		v.max_connections = DEFAULT_MAX_CONNS;
	if (!v.max_per_client)
		v.max_per_client = DEFAULT_MAX_PER_CLIENT;
	if (v.max_per_client > v.max_connections)
		v.max_per_client = v.max_connections;
	if (!v.reserved)
		v.reserved = DEFAULT_RESERVED;
	if (v.reserved >= v.max_connections)
		v.reserved = v.max_connections - 1;
	if (!(v.header_timeout > 0))
		v.header_timeout = DEFAULT_HEADER_TIMEOUT;
	if (!(v.body_timeout > 0))
		v.body_timeout = DEFAULT_BODY_TIMEOUT;
	h->lim = v;
	h->header_ns = (uint64_t)(v.header_timeout * 1e9);
	h->body_ns = (uint64_t)(v.body_timeout * 1e9);
}

int gw_http_set_web(struct gw_http *h, const struct gw_http_web *w, char *err,
		    size_t errlen)
{
	const struct gw_webconfig *c = w ? w->config : NULL;

	if (h->d) {
		snprintf(err, errlen, "the HTTP server is running already");
		return -EBUSY;
	}
	gw_websec_free(h->web);
	h->web = NULL;
	h->healthz_open = w && w->healthz_open;
	h->admin = w && w->admin;
	h->lifecycle = w && w->lifecycle;
	if (!c)
		return 0;
	h->web = gw_websec_new(c, err, errlen);
	if (!h->web)
		return -EINVAL;
	if (gw_websec_tls(h->web) && strncmp(h->url, "http://", 7) == 0) {
		char u[sizeof(h->url)];

		snprintf(u, sizeof(u), "https://%s", h->url + 7);
		snprintf(h->url, sizeof(h->url), "%s", u);
	}
	return 0;
}

int gw_http_reload_web(struct gw_http *h, const struct gw_webconfig *c,
		       char *err, size_t errlen)
{
	if (!h->web) {
		snprintf(err, errlen,
			 "the agent started without --web.config.file: that "
			 "needs a restart");
		return -EINVAL;
	}
	return gw_websec_reload(h->web, c, mono_ns(), err, errlen);
}

/* Stops the workers: queued requests get 503; running ones finish, at
 * once when h->cancel is set. */
static void stop_workers(struct gw_http *h)
{
	struct req *rq;

	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	rq = h->head;
	h->head = h->tail = NULL;
	h->queued = 0;
	pthread_cond_broadcast(&h->wake);
	pthread_mutex_unlock(&h->lock);
	while (rq) {
		struct req *next = rq->next;

		if (gw_api_reply_error(&rq->reply, MHD_HTTP_SERVICE_UNAVAILABLE,
				       "unavailable", "the agent is stopping"))
			gw_buf_reset(&rq->reply.body);
		rq->state = REQ_DONE;
		MHD_resume_connection(rq->conn);
		rq = next;
	}
	for (size_t i = 0; i < h->nworkers; i++)
		pthread_join(h->workers[i], NULL);
	h->nworkers = 0;
}

int gw_http_start(struct gw_http *h, char *err, size_t errlen)
{
	unsigned int n = h->opts.max_concurrency ? h->opts.max_concurrency
						 : DEFAULT_WORKERS;
	int r;

	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	h->nslots = (size_t)h->lim.max_connections + CLOSING_SLACK;
	h->conns = calloc(h->nslots, sizeof(*h->conns));
	if (!h->conns) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = pthread_create(&h->timer, NULL, timer_main, h);
	if (r) {
		snprintf(err, errlen, "cannot start the HTTP timer: %s",
			 strerror(r));
		return -r;
	}
	h->timer_running = true;
	pthread_setname_np(h->timer, "gw-http-timer");
	/*
	 * libmicrohttpd's own limit is only a backstop (admit() keeps to
	 * ours); its inactivity timeout closes what our timer would anyway,
	 * a suspended connection never.
	 */
	{
		bool on = gw_websec_tls(h->web);
		struct MHD_OptionItem tls[3];
		size_t nt = 0;

		/*
		 * The certificate comes from a callback at each handshake,
		 * so a reload rotates it; client certificates are asked
		 * for and verified per session (websec.c), not by
		 * libmicrohttpd.
		 */
		if (on) {
			tls[nt++] = (struct MHD_OptionItem){
				MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
				(void *)gw_websec_cert_callback()
			};
			tls[nt++] = (struct MHD_OptionItem){
				MHD_OPTION_HTTPS_PRIORITIES, 0,
				(void *)gw_websec_priorities(h->web)
			};
		}
		tls[nt] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
		h->d = MHD_start_daemon(
			MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_EPOLL_LINUX_ONLY |
				MHD_ALLOW_SUSPEND_RESUME |
				(on ? MHD_USE_TLS : 0),
			0, admit, h, handler, h, MHD_OPTION_ARRAY, tls,
			MHD_OPTION_LISTEN_SOCKET, h->fd,
			MHD_OPTION_CONNECTION_LIMIT, (unsigned int)h->nslots,
			MHD_OPTION_CONNECTION_TIMEOUT,
			(unsigned int)ceil(h->lim.header_timeout +
					   h->lim.body_timeout),
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
			MHD_OPTION_NOTIFY_COMPLETED, request_completed, h,
			MHD_OPTION_NOTIFY_CONNECTION, conn_notify, h,
			MHD_OPTION_END);
	}
	if (!h->d) {
		stop_timer(h);
		snprintf(err, errlen, "cannot start the HTTP server on %s%s",
			 h->url, gw_websec_tls(h->web) ? " with TLS" : "");
		return -EIO;
	}
	h->fd = -1; /* MHD owns the socket now and closes it on stop */
	for (; h->have_q && h->nworkers < n; h->nworkers++) {
		r = pthread_create(&h->workers[h->nworkers], NULL, worker, h);
		if (r) {
			snprintf(err, errlen, "cannot start a query worker: %s",
				 strerror(r));
			stop_workers(h);
			stop_timer(h);
			MHD_stop_daemon(h->d);
			h->d = NULL;
			return -r;
		}
		pthread_setname_np(h->workers[h->nworkers], "gw-query");
	}
	return 0;
}

/*
 * Waits, at most FLUSH_NS, until the server thread has sent (or the client
 * dropped) every parked request's reply, so that a client whose query was
 * cancelled or refused reads the 503 rather than a closed connection.
 */
static void flush_parked(struct gw_http *h)
{
	struct timespec until;
	uint64_t end = mono_ns() + FLUSH_NS;

	until.tv_sec = (time_t)(end / 1000000000ull);
	until.tv_nsec = (long)(end % 1000000000ull);
	pthread_mutex_lock(&h->lock);
	while (h->parked &&
	       pthread_cond_timedwait(&h->flushed, &h->lock, &until) == 0)
		;
	if (h->parked)
		gw_warn("http: %zu API replies not sent before stopping",
			h->parked);
	pthread_mutex_unlock(&h->lock);
}

void gw_http_close(struct gw_http *h)
{
	if (!h)
		return;
	/* Running queries see this between steps and inside the store. */
	atomic_store(&h->cancel, true);
	if (h->d) {
		/* No connection may stay suspended past MHD_stop_daemon. */
		stop_workers(h);
		flush_parked(h);
		stop_timer(h);
		MHD_stop_daemon(h->d);
	}
	stop_timer(h);
	if (h->fd >= 0)
		close(h->fd);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->conn_lock);
	pthread_cond_destroy(&h->wake);
	pthread_cond_destroy(&h->flushed);
	pthread_cond_destroy(&h->timer_wake);
	free(h->conns);
	gw_websec_free(h->web);
	free(h);
}

const char *gw_http_url(const struct gw_http *h)
{
	return h->url;
}

void gw_http_stats(struct gw_http *h, struct gw_http_stats *st)
{
	st->requests = atomic_load(&h->requests);
	st->scrapes = atomic_load(&h->scrapes);
	st->errors = atomic_load(&h->errors);
	st->scrape_seconds_sum = (double)atomic_load(&h->scrape_ns_sum) / 1e9;
	st->last_scrape_seconds = (double)atomic_load(&h->last_scrape_ns) / 1e9;
	st->last_scrape_bytes = atomic_load(&h->last_bytes);
	for (size_t i = 0; i < GW_API_ENDPOINTS; i++) {
		st->api_requests[i] = atomic_load(&h->api_requests[i]);
		st->api_errors[i] = atomic_load(&h->api_errors[i]);
		st->api_seconds_sum[i] =
			(double)atomic_load(&h->api_ns[i]) / 1e9;
	}
	st->api_rejected = atomic_load(&h->api_rejected);
	st->api_in_flight = atomic_load(&h->api_in_flight);
	st->connections = atomic_load(&h->conns_open);
	for (size_t i = 0; i < GW_HTTP_REFUSALS; i++)
		st->refused[i] = atomic_load(&h->refused[i]);
	for (size_t i = 0; i < GW_HTTP_AUTH_FAILURES; i++)
		st->auth_failed[i] = atomic_load(&h->auth_failed[i]);
	st->auth_failed[GW_HTTP_AUTH_CLIENT_CERT] =
		gw_websec_cert_refused(h->web);
}

const char *gw_http_auth_failure_name(enum gw_http_auth_failure f)
{
	static const char *const names[GW_HTTP_AUTH_FAILURES] = {
		"missing",
		"wrong",
		"throttled",
		"client_cert",
	};

	return (unsigned int)f < GW_HTTP_AUTH_FAILURES ? names[f] : "unknown";
}
