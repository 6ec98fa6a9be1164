/* SPDX-License-Identifier: MIT */
/*
 * server.h - the agent's HTTP endpoint (libmicrohttpd, one internal thread).
 *
 *   GET /metrics  Prometheus text 0.0.4, or OpenMetrics 1.0.0 when the Accept
 *                 header asks for application/openmetrics-text.  Rendered
 *                 from the registry: a scrape never calls into a collector.
 *   GET /healthz  200 "ok" while the agent runs.
 *   GET /         a short index of the endpoints.
 * Anything else is 404; methods other than GET and HEAD are 405.
 *
 * Counters (requests, bad requests, scrape time) are atomics read by the
 * self collector through gw_http_stats().
 */
#ifndef GW_HTTP_SERVER_H
#define GW_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/metrics.h"

struct gw_http;

struct gw_http_stats {
	uint64_t requests;
	uint64_t scrapes;
	uint64_t errors;            /* 4xx and 5xx answers */
	double scrape_seconds_sum;
	double last_scrape_seconds;
	uint64_t last_scrape_bytes;
};

/*
 * Binds listen ("HOST:PORT"; port 0 picks a free one) without serving yet,
 * so that a privileged port can be bound before privileges are dropped.
 * On failure returns NULL with a one-line reason in err.
 */
struct gw_http *gw_http_bind(const char *listen, struct gw_registry *reg,
			     char *err, size_t errlen);
/* Starts serving on the bound socket (the server thread is created here). */
__attribute__((warn_unused_result)) int gw_http_start(struct gw_http *h,
						      char *err, size_t errlen);
void gw_http_close(struct gw_http *h);
/* "http://127.0.0.1:9400" as actually bound. */
const char *gw_http_url(const struct gw_http *h);
void gw_http_stats(struct gw_http *h, struct gw_http_stats *st);

#endif
