/* SPDX-License-Identifier: MIT */
/*
 * collector.h - the StatsD collector: UDP (--statsd-listen) and a Unix
 * datagram socket (--statsd-socket) read by one thread, "gw-statsd",
 * which parses (statsd.h), aggregates (table.h) and publishes into the
 * registry every fast interval.
 *
 * A socket that cannot be bound is not an error for the agent: one line
 * is logged, gpuwatch_statsd_up{transport,address} is 0 for it, and the
 * agent runs on.  A UDP port 0 binds a free port; the port bound is logged
 * ("statsd: listening on udp 127.0.0.1:PORT") and is the address label of
 * gpuwatch_statsd_up.
 *
 * The receiver below is the collector without its thread, so that the
 * benchmark runs the very same receive path.  One owner; not thread-safe.
 */
#ifndef GW_STATSD_COLLECTOR_H
#define GW_STATSD_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "collect/collector.h"

extern const struct gw_collector_ops gw_statsd_collector;

struct gw_statsd_rx_opts {
	const char *listen; /* UDP HOST:PORT; NULL, "" or "off" = none */
	const char *socket; /* Unix datagram socket path; NULL or "" = none */
	unsigned int max_series, max_tag_values;
	unsigned long long max_bytes; /* the table's budget; 0 = default */
	int rcvbuf;		      /* SO_RCVBUF asked for; 0 = 8 MiB */
	bool receive_only; /* benchmark baseline: receive and count only */
};

struct gw_statsd_rx_counts {
	uint64_t datagrams[2]; /* [0] UDP, [1] Unix */
	uint64_t lines;
	uint64_t receive_errors;
	/* UDP datagrams the kernel dropped because the socket's receive
	 * buffer was full (SO_RXQ_OVFL: the socket's drop count, as the
	 * next datagram received after drops reports it). */
	uint64_t udp_drops;
};

struct gw_statsd_rx;

/*
 * Opens the sockets and the table.  An address that does not parse or
 * cannot be bound is logged and leaves that transport down (not an
 * error); errors are -ENOMEM only.
 */
__attribute__((warn_unused_result)) int
gw_statsd_rx_open(const struct gw_statsd_rx_opts *o, struct gw_statsd_rx **out);
void gw_statsd_rx_close(struct gw_statsd_rx *rx);

/* The UDP port bound, 0 when UDP is down or off. */
unsigned int gw_statsd_rx_port(const struct gw_statsd_rx *rx);

/* An fd (or -1) whose readability ends gw_statsd_rx_poll's wait: the
 * collector's stop.  Borrowed, never read. */
void gw_statsd_rx_wake_fd(struct gw_statsd_rx *rx, int fd);

/*
 * Waits at most timeout_ms for datagrams (or the wake fd), then handles
 * what is queued (a bounded number of batches).  now: CLOCK_MONOTONIC
 * seconds.  Returns the datagrams handled, or -errno when poll fails.
 */
int gw_statsd_rx_poll(struct gw_statsd_rx *rx, int timeout_ms, double now);

/* Adds the StatsD series and the self metrics to s. */
void gw_statsd_rx_publish(struct gw_statsd_rx *rx, struct gw_snap *s,
			  double now);

void gw_statsd_rx_counts(const struct gw_statsd_rx *rx,
			 struct gw_statsd_rx_counts *c);

#endif
