/* SPDX-License-Identifier: MIT */
/*
 * rw.h - Prometheus remote_write 1.0: the contract between the sending
 * half (encoding, HTTP, retries: export/rw_encode.c, export/rw_client.c,
 * export/rw_relabel.c) and the queue that decides what leaves the node and
 * when (export/rw_queue.c, which reads the local store).
 *
 * Times are milliseconds since the epoch.
 *
 * The queue hands the client batches of series, each with its samples in
 * time order; the encoder writes one WriteRequest (labels sorted by name,
 * as gw_labels already are), snappy block compressed.  One client per
 * endpoint; the client is used by one thread at a time (the queue keeps
 * one per shard if it sends in parallel).
 */
#ifndef GW_RW_H
#define GW_RW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/labels.h"

/* One series of a batch: n samples, t increasing. */
struct gw_rw_series {
	const struct gw_labels *labels; /* includes __name__ */
	const int64_t *t;
	const double *v;
	size_t n;
};

/*
 * Encodes a WriteRequest of n series into out (appended), snappy
 * compressed; *raw_len gets the protobuf's size before compression.
 * Returns 0, -ENOMEM, or -EINVAL (a series with samples out of order).
 */
int gw_rw_encode(const struct gw_rw_series *s, size_t n, struct gw_buf *out,
		 size_t *raw_len);

/* Decodes a snappy compressed WriteRequest (tests and the fuzzer). */
struct gw_rw_decoded;
int gw_rw_decode(const void *body, size_t len, struct gw_rw_decoded **out);
void gw_rw_decoded_free(struct gw_rw_decoded *d);

/* The outcome of sending one batch. */
enum gw_rw_outcome {
	GW_RW_SENT,    /* 2xx: acknowledged */
	GW_RW_REFUSED, /* 4xx other than 429: not retried, counted dropped */
	GW_RW_STOPPED, /* *stop became true while retrying: not acknowledged */
};

struct gw_rw_endpoint; /* one remote_write: block (config + state) */
struct gw_rw_client;

/*
 * Sends one encoded batch of `samples` samples, retrying 5xx, 429
 * (Retry-After honoured), timeouts and connection errors with exponential
 * backoff and jitter until acknowledged, refused or stopped.  Counts
 * everything in the endpoint's self-metrics.
 */
enum gw_rw_outcome gw_rw_client_send(struct gw_rw_client *c, const void *body,
				     size_t len, size_t raw_len,
				     uint64_t samples,
				     const _Atomic bool *stop);

/*
 * write_relabel_configs: rewrites labels into out (which the caller
 * releases with gw_labels_release); returns false when the series is
 * dropped.
 */
bool gw_rw_relabel(const struct gw_rw_endpoint *ep, const struct gw_labels *in,
		   struct gw_labels *out);

#endif
