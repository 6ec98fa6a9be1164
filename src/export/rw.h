/* SPDX-License-Identifier: MIT */
/*
 * rw.h - Prometheus remote_write 1.0: the contract between the sending
 * half (encoding, HTTP, retries, configuration: export/rw_encode.c,
 * export/rw_client.c, export/rw_config.c, export/rw_relabel.c) and the
 * queue that decides what leaves the node and when (export/rw_queue.c,
 * which reads the local store).
 *
 * Times are milliseconds since the epoch.
 *
 * The queue hands the client batches of series, each with its samples in
 * time order; the encoder writes one WriteRequest (labels sorted by name,
 * as gw_labels already are), snappy block compressed.  One client per
 * endpoint; the client is used by one thread at a time (the queue keeps
 * one per shard if it sends in parallel).  An endpoint (its configuration
 * and its counters) is shared by its clients and may be read from any
 * thread; it must outlive them.
 *
 * Configuration: every remote_write: block of the config file (Prometheus'
 * format: url, name, remote_timeout, headers, basic_auth, authorization,
 * tls_config, write_relabel_configs, queue_config), or one endpoint per
 * --remote-write URL with the defaults.  docs/remote-write.md is the
 * reference.
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
 * Returns 0, -ENOMEM, -ENOSPC (out's maximum), or -EINVAL (a series with
 * samples out of time order or equal timestamps, or labels not strictly
 * sorted by name).  out is as it was on error.
 */
__attribute__((warn_unused_result)) int
gw_rw_encode(const struct gw_rw_series *s, size_t n, struct gw_buf *out,
	     size_t *raw_len);

/* A decoded WriteRequest: series and labels in wire order, as sent. */
struct gw_rw_decoded_series {
	struct gw_label *labels; /* nlabels, in wire order */
	size_t nlabels;
	int64_t *t;
	double *v;
	size_t n;
};
struct gw_rw_decoded {
	struct gw_rw_decoded_series *s;
	size_t n;
	void *priv;
};

/* Largest WriteRequest gw_rw_decode() inflates (before compression). */
#define GW_RW_DECODE_MAX (64u << 20)

/*
 * Decodes a snappy compressed WriteRequest (tests, the fuzzer, a test
 * receiver).  0, -EINVAL (not snappy, not a WriteRequest, or larger than
 * GW_RW_DECODE_MAX), -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_rw_decode(const void *body, size_t len, struct gw_rw_decoded **out);
void gw_rw_decoded_free(struct gw_rw_decoded *d);

/* ---- configuration (rw_config.c) ---- */

/* queue_config, with Prometheus' names and defaults. */
struct gw_rw_queue_config {
	unsigned int capacity;		   /* 10000 */
	unsigned int max_shards;	   /* 50 */
	unsigned int min_shards;	   /* 1 */
	unsigned int max_samples_per_send; /* 2000 */
	double batch_send_deadline;	   /* seconds, 5 */
	double min_backoff;		   /* seconds, 0.03 */
	double max_backoff;		   /* seconds, 5 */
	bool retry_on_http_429;		   /* true */
};

struct gw_rw_endpoint; /* one remote_write: block (config + counters) */
struct gw_rw_config;   /* every endpoint of the agent */

/*
 * Builds the endpoints: one per --remote-write URL (urls, nurls; defaults
 * for everything else), then one per entry of the config file's
 * remote_write: value, given as YAML text (yaml, len; NULL or "" = none)
 * whose first line is line `line` of `file` (for messages).  Errors name
 * the file, line and key ("agent.yaml:12: remote_write[0].queue_config:
 * unknown key 'max_sample_per_send'").  0, -EINVAL (err set), -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_rw_config_new(const char *const *urls, size_t nurls, const char *yaml,
		 size_t len, const char *file, unsigned int line,
		 struct gw_rw_config **out, char *err, size_t errlen);
void gw_rw_config_free(struct gw_rw_config *c);
size_t gw_rw_config_count(const struct gw_rw_config *c);
struct gw_rw_endpoint *gw_rw_config_endpoint(const struct gw_rw_config *c,
					     size_t i);

/* name: as configured, or the first 6 hex digits of a hash of the URL. */
const char *gw_rw_endpoint_name(const struct gw_rw_endpoint *ep);
const char *gw_rw_endpoint_url(const struct gw_rw_endpoint *ep);
/* The block's own edge policy (key policy: rollup or raw, gpuwatch's
 * addition to Prometheus' format); NULL: the agent's
 * --remote-write-policy. */
const char *gw_rw_endpoint_policy(const struct gw_rw_endpoint *ep);
const struct gw_rw_queue_config *
gw_rw_endpoint_queue(const struct gw_rw_endpoint *ep);

/*
 * write_relabel_configs: rewrites in's labels into out (which the caller
 * releases with gw_labels_release).  1: kept (out set); 0: the series is
 * dropped (out untouched; the caller counts its samples with
 * gw_rw_endpoint_dropped(ep, GW_RW_DROP_RELABEL, n)); -ENOMEM.
 * Thread-safe.
 */
__attribute__((warn_unused_result)) int
gw_rw_relabel(const struct gw_rw_endpoint *ep, const struct gw_labels *in,
	      struct gw_labels *out);

/* ---- sending (rw_client.c) ---- */

/* The outcome of sending one batch. */
enum gw_rw_outcome {
	GW_RW_SENT,    /* 2xx: acknowledged */
	GW_RW_REFUSED, /* 4xx other than 429 (and 429 when
			* retry_on_http_429 is false): not retried, counted
			* failed */
	GW_RW_STOPPED, /* *stop became true while retrying: not acknowledged */
};

struct gw_rw_client;

/* A client of ep (borrowed; it must outlive the client).  -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_rw_client_new(struct gw_rw_endpoint *ep, struct gw_rw_client **out);
void gw_rw_client_free(struct gw_rw_client *c);

/*
 * Sends one encoded batch of `samples` samples, retrying 5xx, 429
 * (Retry-After honoured), timeouts and connection errors with exponential
 * backoff and full jitter within [min_backoff, max_backoff] until
 * acknowledged, refused or stopped.  *stop is checked while waiting and
 * during a transfer.  Counts everything in the endpoint's self-metrics.
 */
enum gw_rw_outcome gw_rw_client_send(struct gw_rw_client *c, const void *body,
				     size_t len, size_t raw_len,
				     uint64_t samples,
				     const _Atomic bool *stop);

/* ---- self-metrics ---- */

/* Why samples were dropped before being sent. */
enum gw_rw_drop_reason {
	GW_RW_DROP_RELABEL,   /* write_relabel_configs dropped the series */
	GW_RW_DROP_RETENTION, /* aged out of the store before being sent */
	GW_RW_DROP_COUNT
};
const char *gw_rw_drop_reason_name(enum gw_rw_drop_reason r);

/* Counts n samples dropped for reason r (any thread). */
void gw_rw_endpoint_dropped(struct gw_rw_endpoint *ep, enum gw_rw_drop_reason r,
			    uint64_t n);

/* HTTP answers counted per status code; transport failures by kind. */
enum gw_rw_fail {
	GW_RW_FAIL_TIMEOUT,	/* remote_timeout passed */
	GW_RW_FAIL_CONNECTION,	/* refused, reset, DNS, TLS */
	GW_RW_FAIL_PROTOCOL,	/* an answer that is not HTTP */
	GW_RW_FAIL_CREDENTIALS, /* password_file/credentials_file unreadable */
	GW_RW_FAIL_COUNT
};
const char *gw_rw_fail_name(enum gw_rw_fail f);

#define GW_RW_CODES_MAX 16

/* A snapshot of one endpoint's counters (gw_rw_endpoint_stats()). */
struct gw_rw_stats {
	uint64_t samples_sent;	  /* acknowledged (2xx) */
	uint64_t samples_retried; /* each retry of a batch adds its samples */
	uint64_t samples_failed;  /* refused by the receiver (4xx) */
	uint64_t samples_dropped[GW_RW_DROP_COUNT];
	uint64_t bytes_sent;	 /* bodies sent whole, compressed, every try */
	uint64_t bytes_raw_sent; /* the same before compression */
	uint64_t failures[GW_RW_FAIL_COUNT];
	double last_send_s; /* wall clock of the last 2xx, 0 = never */
	/* HTTP answers by status code: the first GW_RW_CODES_MAX - 1 codes
	 * seen, then (code 0) every other. */
	unsigned int ncodes;
	struct {
		int code;
		uint64_t n;
	} codes[GW_RW_CODES_MAX];
};

void gw_rw_endpoint_stats(const struct gw_rw_endpoint *ep,
			  struct gw_rw_stats *st);

struct gw_snap;
/*
 * Adds ep's counters to s under Prometheus' remote storage names with the
 * gpuwatch_ prefix, labels remote_name and url
 * (gpuwatch_remote_storage_samples_total, ..._samples_retried_total,
 * ..._samples_failed_total, ..._samples_dropped_total{reason},
 * ..._bytes_total, ..._uncompressed_bytes_total, ..._requests_total{code},
 * ..._request_failures_total{reason}, ..._last_send_timestamp_seconds).
 */
void gw_rw_endpoint_publish(const struct gw_rw_endpoint *ep, struct gw_snap *s);

#endif
