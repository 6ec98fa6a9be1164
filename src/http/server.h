/* SPDX-License-Identifier: MIT */
/*
 * server.h - the agent's HTTP endpoint (libmicrohttpd).
 *
 *   GET /metrics  Prometheus text 0.0.4, or OpenMetrics 1.0.0 when the Accept
 *                 header asks for application/openmetrics-text.  Rendered
 *                 from the registry: a scrape never calls into a collector.
 *   GET /healthz  200 "ok" while the agent runs.
 *   GET /         the web page and its files (http/web.h), embedded at
 *                 build time, gzip'd for clients that take it.
 *   /-/reload, /-/quit, /-/healthy, /-/ready  Prometheus' lifecycle
 *                 endpoints (gw_http_web).
 *   /api/v1/admin/...  403 unless gw_http_web.admin.
 *   /api/v1/...   Prometheus' query API (http/api.h), GET or POST with an
 *                 application/x-www-form-urlencoded body of at most 64 KiB;
 *                 other methods are 405 with "Allow: GET, POST".  Without a
 *                 queryable (gw_http_set_queryable) every API call is 503
 *                 "unavailable".
 * Anything else is 404; methods other than GET and HEAD are 405.
 *
 * Threads: one libmicrohttpd thread does all the socket work and answers
 * /metrics, /healthz and / itself.  An API request is parked (its
 * connection suspended) and handed to a pool of query workers
 * (gw_api_opts.max_concurrency, default 4; nice 10, so that they yield
 * the CPU to collection); at most 32 more wait in a queue and further ones
 * get 503 at once, so a slow query never holds up a scrape.  All threads are created by gw_http_start and inherit the
 * capabilities of the thread that calls it (none, in the agent).
 * gw_http_close first cancels the queries being evaluated (they stop
 * within a step or a store read and answer 503 "unavailable", "query
 * cancelled: the agent is stopping"), answers queued ones with 503 "the
 * agent is stopping", lets the server thread send those replies (at most
 * 1 s), then stops.
 *
 * Connections (gw_http_limits, set before start).  At most
 * max_connections are open, at most max_per_client from one client
 * address.  A new connection beyond either limit closes the oldest
 * connection (of that client, for the second) that is idle between
 * requests or still sending its headers - so a flood of idle or slow
 * connections can never keep a scraper out - and is refused only when
 * every one is busy (a request being read after its headers, answered, or
 * sent).  A request's headers must be complete within header_timeout of
 * the connection opening or of the previous answer; its body within
 * body_timeout of the headers; its answer read within body_timeout of
 * being ready; a connection idle longer than header_timeout is closed.
 * With fewer than `reserved` connections free, every path but /metrics and
 * /healthz is answered 503 at once, so that those two stay answered while
 * the API is flooded.  Each refusal or early close is counted by reason
 * (gw_http_refusal_name), the connections open are a gauge.  A timer
 * thread ("gw-http-timer") enforces the deadlines; libmicrohttpd closes
 * what it shuts down.
 *
 * Counters (requests, bad requests, scrape time, API calls by endpoint,
 * API requests in flight, connections) are atomics read by the self
 * collector through gw_http_stats().
 */
#ifndef GW_HTTP_SERVER_H
#define GW_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/api.h"
#include "http/webconfig.h"
#include "pipeline/metrics.h"
#include "store/query.h"

struct gw_http;

/* Why a connection was refused or closed before its client was done. */
enum gw_http_refusal {
	GW_HTTP_REFUSED_MAX_CONNECTIONS, /* every connection busy */
	GW_HTTP_REFUSED_MAX_PER_CLIENT,	 /* every one of that client's busy */
	GW_HTTP_REFUSED_EVICTED, /* idle or slow: closed to admit a new one */
	GW_HTTP_REFUSED_HEADER_TIMEOUT,
	GW_HTTP_REFUSED_BODY_TIMEOUT,
	GW_HTTP_REFUSED_SEND_TIMEOUT, /* the answer was not read in time */
	GW_HTTP_REFUSED_RESERVED,     /* 503: only /metrics, /healthz now */
	GW_HTTP_REFUSALS
};

/* "max_connections", "max_per_client", "evicted", "header_timeout",
 * "body_timeout", "send_timeout", "reserved". */
const char *gw_http_refusal_name(enum gw_http_refusal r);

struct gw_http_limits {
	unsigned int max_connections; /* 0: 256 */
	unsigned int max_per_client;  /* 0: 64 (at most max_connections) */
	unsigned int reserved;	      /* 0: 16 (less than max_connections) */
	double header_timeout;	      /* seconds; 0: 5 */
	double body_timeout;	      /* seconds; 0: 10 */
};

/* Requests refused by basic_auth_users (the web configuration). */
enum gw_http_auth_failure {
	GW_HTTP_AUTH_MISSING,	  /* 401: no Authorization: Basic header */
	GW_HTTP_AUTH_WRONG,	  /* 401: unknown user or wrong password */
	GW_HTTP_AUTH_THROTTLED,	  /* 429: bcrypt checks rate limited */
	GW_HTTP_AUTH_CLIENT_CERT, /* a client certificate that does not
				     verify: the handshake refused */
	GW_HTTP_AUTH_FAILURES
};

/* "missing", "wrong", "throttled", "client_cert". */
const char *gw_http_auth_failure_name(enum gw_http_auth_failure f);

/*
 * The secured endpoint (gw_http_set_web).  config is the web
 * configuration file (http/webconfig.h), borrowed for the call: TLS with
 * its client_auth_type enforced in the handshake, basic_auth_users on
 * every path (but /healthz when healthz_open), http_server_config's
 * headers on every answer.  admin: the admin API (/api/v1/admin/...) served, else 403.
 * lifecycle: POST or PUT /-/reload and /-/quit raise SIGHUP and SIGTERM
 * in the process, else 403.  /-/healthy and /-/ready answer 200.
 */
struct gw_http_web {
	const struct gw_webconfig *config; /* NULL: plain HTTP, no auth */
	bool healthz_open;
	bool admin;
	bool lifecycle;
};

struct gw_http_stats {
	uint64_t requests;
	uint64_t scrapes;
	uint64_t errors; /* 4xx and 5xx answers */
	double scrape_seconds_sum;
	double last_scrape_seconds;
	uint64_t last_scrape_bytes;
	/* Prometheus API, by enum gw_api_endpoint (see gw_api_endpoint_name) */
	uint64_t api_requests[GW_API_ENDPOINTS];
	uint64_t api_errors[GW_API_ENDPOINTS];	  /* 4xx and 5xx answers */
	double api_seconds_sum[GW_API_ENDPOINTS]; /* arrival to answer */
	uint64_t api_rejected;			  /* queue full: 503 */
	uint64_t api_in_flight; /* API requests a query worker is answering
				    now (a gauge) */
	uint64_t connections;	/* open now, not being closed (a gauge) */
	uint64_t refused[GW_HTTP_REFUSALS];
	uint64_t auth_failed[GW_HTTP_AUTH_FAILURES];
};

/*
 * Binds listen ("HOST:PORT"; port 0 picks a free one) without serving yet,
 * so that a privileged port can be bound before privileges are dropped.
 * On failure returns NULL with a one-line reason in err.
 */
struct gw_http *gw_http_bind(const char *listen, struct gw_registry *reg,
			     char *err, size_t errlen);
/*
 * Serves the query API from q with options o (both copied; q->ctx is
 * borrowed and must outlive the server; o NULL = defaults; o->cancel is
 * replaced by the server's own flag, set by gw_http_close).  Call between
 * gw_http_bind and gw_http_start; q NULL leaves the API answering 503.
 */
void gw_http_set_queryable(struct gw_http *h, const struct gw_queryable *q,
			   const struct gw_api_opts *o);
/* Connection limits (copied; NULL = defaults).  Call before
 * gw_http_start. */
void gw_http_set_limits(struct gw_http *h, const struct gw_http_limits *l);
/* The web configuration and endpoint switches (copied; NULL = plain
 * HTTP, admin and lifecycle off).  Call before gw_http_start; the URL
 * becomes https:// with TLS.  -EINVAL with a reason when GnuTLS refuses
 * the TLS settings. */
__attribute__((warn_unused_result)) int
gw_http_set_web(struct gw_http *h, const struct gw_http_web *w, char *err,
		size_t errlen);
/* A reload of the web configuration (SIGHUP) while serving: the next
 * handshakes get the new certificate, client CA, priorities and
 * client_auth_type, the next requests the new users and headers.  TLS
 * cannot be turned on or off (websec.h).  0, or -errno with a reason in
 * err and the running configuration kept. */
__attribute__((warn_unused_result)) int
gw_http_reload_web(struct gw_http *h, const struct gw_webconfig *c, char *err,
		   size_t errlen);
/* Starts serving on the bound socket (the server thread and the query
 * workers are created here). */
__attribute__((warn_unused_result)) int gw_http_start(struct gw_http *h,
						      char *err, size_t errlen);
void gw_http_close(struct gw_http *h);
/* "http://127.0.0.1:9400" as actually bound. */
const char *gw_http_url(const struct gw_http *h);
void gw_http_stats(struct gw_http *h, struct gw_http_stats *st);

#endif
