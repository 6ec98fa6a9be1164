/* SPDX-License-Identifier: MIT */
/*
 * rw_queue.h - the remote_write queue of one endpoint: the local store is
 * the queue.  A "gw-rw-N" thread reads what the endpoint has not yet
 * acknowledged back from the store (store/query.h), shapes it by the edge
 * aggregation policy, hands batches to a sink (the encoder and client of
 * export/rw.h, or a stand-in in tests) and advances a persisted watermark
 * only once a batch is acknowledged.  docs/internals/remote-write-queue.md
 * explains the design.
 *
 * Streams (each with its own cursor, a time in ms; data in (cursor,
 * now - settle] is due):
 *
 *   1m      policy "rollup" (the default): every completed 1-minute window
 *           of the store's 1m tier.  A gauge leaves as NAME:1m_avg,
 *           NAME:1m_min, NAME:1m_max, NAME:1m_stddev and
 *           NAME:1m_count_samples (VictoriaMetrics' stream aggregation
 *           names, per series: no _by_/_without_ part), stamped with the
 *           window's end; a counter, a histogram's _bucket/_sum/_count, a
 *           summary's _sum/_count, an info metric and ALERTS leave under
 *           their own name as the window's last sample (its own time
 *           stamp), so rate() works centrally.  Names holding ':' (anomaly
 *           scores, recording rules) are not rolled up.
 *   raw     policy "raw": every series, every sample; policy "rollup": the
 *           series the raw selectors (PromQL series selectors) pick.
 *   pushes  raw samples of the series a push selects over [start, end]:
 *           gw_rw_queue_push() (the admin API), a firing alert or an
 *           anomaly score at or over the threshold (the thread finds
 *           those in the store: ALERTS{alertstate="firing"} and
 *           NAME:anomaly_score).  Window: event_before before the event to
 *           event_after after it; a push whose end is in the future stays
 *           open and sends as time passes.
 *
 * Every series leaving carries the external labels (instance, cluster,
 * ...) it does not already have.  A value equal to the last one sent for
 * the same output series is suppressed unless heartbeat has passed since
 * (raw samples are never suppressed).  No output series ever goes back in
 * time within one run (a per-series guard), so a receiver that refuses
 * samples out of order (Prometheus) accepts every one; catch-up reads each
 * stream in time order, in slices of about max_samples_per_send.
 *
 * Pacing: each round serves every stream in turn; a stream that is behind
 * sends slices for at most max_lag / 2 before the others get their turn,
 * so live data waits at most about max_lag while a long outage is
 * replayed.
 *
 * Watermarks: the 1m, raw and event-scan cursors are written to
 * state_path (a temporary file renamed over it) after every acknowledged
 * slice, so a restart, even after kill -9, resumes where the endpoint left
 * off and re-sends at most one slice (normally one batch).  A new endpoint
 * (no state file) starts at the present.  Open pushes are not persisted.
 * Data a cursor has not reached when it leaves the store's retention for
 * its tier is skipped, counted (sink.aged_out: the client's dropped counter, reason "retention") and
 * logged.
 *
 * Outcomes (export/rw.h): SENT advances; REFUSED (4xx) advances and counts
 * the batch refused (the client counts it failed); STOPPED ends the round without
 * advancing.
 *
 * Errors: 0 or -errno.  Thread safety: gw_rw_queue_push, _stats and
 * _publish from any thread (the agent publishes every queue's metrics
 * each second from its own thread, so they move while a send blocks); _step only while the thread is not running
 * (tests); the rest from one thread.
 */
#ifndef GW_RW_QUEUE_H
#define GW_RW_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/rw.h"
#include "pipeline/metrics.h"
#include "store/query.h"

struct gw_worker_table;

/* Where batches go.  send() returns once the batch is acknowledged,
 * refused, or *stop became true. */
struct gw_rw_queue_sink {
	void *ctx;
	enum gw_rw_outcome (*send)(void *ctx, const struct gw_rw_series *s,
				   size_t n, uint64_t samples,
				   const _Atomic bool *stop);
	/* Optional: n samples aged out of the store's retention unsent. */
	void (*aged_out)(void *ctx, uint64_t n);
	/* Optional: adds the sink's own metrics to the queue's. */
	void (*publish)(void *ctx, struct gw_snap *s);
};

enum gw_rw_policy {
	GW_RW_POLICY_ROLLUP, /* 1-minute rollups, last values, raw picks */
	GW_RW_POLICY_RAW,    /* every sample of every series */
};

#define GW_RW_QUEUE_MAX_RAW    16 /* raw selectors */
#define GW_RW_QUEUE_MAX_PUSHES 64 /* open pushes; more are refused */

/* Size-tagged: sz = sizeof(struct gw_rw_queue_opts); zero = default. */
struct gw_rw_queue_opts {
	size_t sz;
	const char *name;	      /* remote_name label; required */
	const char *url;	      /* url label; required */
	const char *state_path;	      /* watermark file; NULL: none kept */
	const struct gw_queryable *q; /* the store; borrowed */
	struct gw_rw_queue_sink sink;
	enum gw_rw_policy policy;
	/* "name=value" each; instance is usually one.  Copied. */
	const char *const *external;
	size_t nexternal;
	/* PromQL series selectors sent raw (policy rollup).  Copied. */
	const char *const *raw;
	size_t nraw;
	uint32_t max_samples_per_send;	 /* 2000 */
	int64_t batch_send_deadline_ms;	 /* 5 s: raw data waits this long to
					   fill a batch */
	int64_t settle_ms;		 /* 10 s: data younger is not read */
	int64_t heartbeat_ms;		 /* 4 min; < 0: never suppress */
	int64_t max_lag_ms;		 /* 30 s */
	int64_t retention_ms[GW_TIERS];	 /* the store's; 0: unknown (never
					   counted as aged out) */
	bool events;			 /* raw around alerts and anomalies */
	int64_t event_before_ms;	 /* 10 min */
	int64_t event_after_ms;		 /* 10 min */
	double anomaly_threshold;	 /* 0.95 */
	struct gw_worker_table *workers; /* lists the thread; NULL: none */
	/* The clock (ms since the epoch); NULL: CLOCK_REALTIME.  Tests and
	 * the fleet simulation. */
	int64_t (*now)(void *ctx);
	void *now_ctx;
	/* Output series the guard remembers (last time and value sent)
	 * before it is reset; 0: 1 M.  Its memory is about 48 bytes each:
	 * the fleet simulation, with thousands of queues, keeps it small. */
	uint32_t guard_max;
	/* Significant decimal digits kept of a gauge's NAME:1m_avg, _min,
	 * _max and _stddev, and none below the output's standard error in
	 * its minute (their last digits are noise that costs the receiver
	 * most of its bytes; the node keeps the exact samples); where not
	 * 0, a counter keeps 9 significant digits (COUNTER_DIGITS in
	 * rw_queue.c); 0: all of a double's.  _count_samples is exact. */
	unsigned int precision;
	/* The same for NAME:1m_stddev, a spread that needs fewer; 0: as
	 * precision. */
	unsigned int stddev_precision;
	/* The rollups sent of a gauge: a mask of 1 << GW_RW_OUT_*; 0: all
	 * five. */
	unsigned int outputs;
	/* The rollups sent of a process's gauge (a series with a pid label):
	 * a mask of 1 << GW_RW_OUT_*; 0: all five. */
	unsigned int process_outputs;
	/* The rollups sent of a state: a gauge that is 0 or 1 (its catalogue
	 * unit "state": a link up, a clock event active).  Its :1m_avg, the
	 * share of the minute it held, tells the others: min is 1 only where
	 * avg is 1, max is 1 wherever avg is above 0, stddev is
	 * sqrt(avg * (1 - avg)).  A mask as process_outputs; 0: all five. */
	unsigned int state_outputs;
	/* A gauge's series carrying any of these labels leave aggregated
	 * over them (VictoriaMetrics' `without:`), merged minute by minute
	 * with the other series that differ only in them, as
	 * NAME:1m_without_L1_L2_OUTPUT (export/rw_agg.h; L1, L2 those of the
	 * list the series carries); the outputs are process_outputs where
	 * the series has a pid label.  Typically "pid,link": a process is a
	 * new series centrally for each job, while its attribution (pod,
	 * job, container) is what a fleet queries; a GPU's 18 NVLink links
	 * are one series.  Copied; at most GW_RW_QUEUE_MAX_WITHOUT. */
	const char *const *without;
	size_t nwithout;
	/* A counter's series (a name ending in _total) carrying any of these
	 * labels leave summed over them under the counter's own name: each
	 * minute the sum of the members' last values, a minute some member
	 * missed left out (export/rw_agg.h).  For labels whose members
	 * persist, such as a GPU's NVLink "link"; not "pid", whose members
	 * come and go (the sum would fall when a process exits, which a
	 * central rate() reads as a reset).  Copied; at most
	 * GW_RW_QUEUE_MAX_WITHOUT. */
	const char *const *sum_without;
	size_t nsum_without;
};

#define GW_RW_QUEUE_MAX_WITHOUT 8

/* The five rollups of a gauge, in the order they are sent. */
enum gw_rw_out {
	GW_RW_OUT_AVG,
	GW_RW_OUT_MIN,
	GW_RW_OUT_MAX,
	GW_RW_OUT_STDDEV,
	GW_RW_OUT_COUNT,
	GW_RW_OUTS
};
/* "avg", "min", "max", "stddev", "count_samples". */
const char *gw_rw_out_name(enum gw_rw_out o);
/* A comma-separated list of those names into a mask; -EINVAL. */
__attribute__((warn_unused_result)) int gw_rw_outs_parse(const char *list,
							 unsigned int *mask);

/*
 * Splits a comma-separated list of label names ("pid,link"; "none" or ""
 * for none) into names (at most GW_RW_QUEUE_MAX_WITHOUT), pointing into
 * buf, a copy of list: -EINVAL for a name that is not a label name (or is
 * __name__) or too many, -ENOSPC when buf is too small.
 */
__attribute__((warn_unused_result)) int
gw_rw_without_parse(const char *list, char *buf, size_t buflen,
		    const char **names, size_t *n);

struct gw_rw_queue;

/* -EINVAL (with a message in err: a bad selector or label, a missing
 * name or url), -ENOMEM.  Reads the state file (a corrupt one is logged
 * and the endpoint starts at the present). */
__attribute__((warn_unused_result)) int
gw_rw_queue_new(const struct gw_rw_queue_opts *o, struct gw_rw_queue **out,
		char *err, size_t errlen);
/* Stops the thread if running (without waiting past what stop allows:
 * call gw_rw_queue_stop first).  NULL is a no-op. */
void gw_rw_queue_free(struct gw_rw_queue *q);

/* Starts the "gw-rw-N" thread (N: index, for the thread's name). */
__attribute__((warn_unused_result)) int gw_rw_queue_start(struct gw_rw_queue *q,
							  unsigned int index);
/* Tells the thread to stop after the slice it is sending (so what is
 * being sent can still be acknowledged).  Does not wait. */
void gw_rw_queue_request_stop(struct gw_rw_queue *q);
/* Stops the thread: lets the slice in flight finish until shortly before
 * deadline (CLOCK_MONOTONIC s), then cuts the send (STOPPED: its data is
 * sent again after a restart) and waits until deadline: 0 or
 * -ETIMEDOUT. */
__attribute__((warn_unused_result)) int gw_rw_queue_stop(struct gw_rw_queue *q,
							 double deadline);

/* One round of the thread's work, on the caller's thread (tests): returns
 * the batches sent (0: nothing was due), or -EINTR when a send was
 * stopped. */
int gw_rw_queue_step(struct gw_rw_queue *q);

enum gw_rw_push_reason {
	GW_RW_PUSH_REQUEST,
	GW_RW_PUSH_ALERT,
	GW_RW_PUSH_ANOMALY,
	GW_RW_PUSH_REASONS
};

/*
 * Pushes the raw samples of the series matching any of the nsets matcher
 * lists over [start_ms, end_ms] (an end in the future: sent as it comes).
 * Matchers are copied.  A push overlapping an open one with the same
 * matchers extends it.  -ENOSPC when GW_RW_QUEUE_MAX_PUSHES are open,
 * -EINVAL for end before start.
 */
__attribute__((warn_unused_result)) int
gw_rw_queue_push(struct gw_rw_queue *q, const struct gw_matcher *const *sets,
		 const size_t *nm, size_t nsets, int64_t start_ms,
		 int64_t end_ms, enum gw_rw_push_reason why);

struct gw_rw_queue_stats {
	uint64_t samples_sent;	     /* acknowledged */
	uint64_t samples_suppressed; /* equal to the last sent, no heartbeat
					due yet */
	uint64_t samples_aged_out;   /* left the store's retention unsent */
	uint64_t samples_refused;    /* in batches the endpoint refused */
	uint64_t batches_sent;
	/* At the call: an estimate of what is due and not yet sent (each
	 * stream's last rate, kept in the state file, x how far behind), and
	 * how far the cursor furthest behind is from what is due for it
	 * (now - settle; for the 1m stream the last complete window's end):
	 * 0 when caught up. */
	uint64_t backlog_samples;
	double lag_seconds;
	int64_t highest_acked_ms; /* newest sample acknowledged; 0: none */
	uint64_t pushes[GW_RW_PUSH_REASONS]; /* started */
	uint64_t pushes_refused;	     /* no room */
	uint64_t pushes_open;
	uint64_t state_write_errors;
};
void gw_rw_queue_stats(struct gw_rw_queue *q, struct gw_rw_queue_stats *st);

/* "request", "alert", "anomaly". */
const char *gw_rw_push_reason_name(enum gw_rw_push_reason r);

/* Adds the queue's self-metrics, then the sink's (sink.publish), to s (gpuwatch_remote_storage_samples_pending,
 * ..._queue_highest_sent_timestamp_seconds, ..._queue_lag_seconds,
 * ..._samples_suppressed_total, ..._raw_pushes_total{reason},
 * ..._raw_pushes_open; labels remote_name, url). */
void gw_rw_queue_publish(struct gw_rw_queue *q, struct gw_snap *s);

#endif
