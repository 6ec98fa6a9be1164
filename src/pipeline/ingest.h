/* SPDX-License-Identifier: MIT */
/*
 * ingest.h - the threads that feed the store.  "gw-store-in", woken by
 * every publish into the registry (gw_registry_on_publish) and at least
 * every fast interval, copies what the collectors published since its last
 * visit (gw_registry_visit, with each producer's publish time as the
 * timestamp) into a bounded queue, so that no publish is replaced before
 * it was taken, even while the store is busy (an hourly cut, a slow disk,
 * a locked database).  One that is replaced anyway, one the queue has no
 * room for, and every sample the store refuses are counted in
 * gpuwatch_agent_dropped_samples_total{reason}.  "gw-store" appends the
 * queue to the store,
 * scores every gauge against its dynamic baseline (pipeline/anomaly.h) and
 * stores the score beside it, runs the store's maintenance (flush, cuts,
 * retention) and publishes the store's own metrics (gpuwatch_store_*).  On
 * stop it flushes, so SIGTERM loses nothing.
 *
 * Errors: 0 or -errno.  Thread safety: start, stop and free from one
 * thread (the agent's); request_stop from any.
 */
#ifndef GW_INGEST_H
#define GW_INGEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct gw_registry;
struct gw_store;
struct gw_worker_table;

struct gw_ingest_opts {
	struct gw_registry *reg;   /* borrowed: what is read */
	struct gw_store *store;	   /* borrowed: where it goes; NULL: -ENODEV */
	_Atomic uint64_t *fast_ms; /* the pass period in use, milliseconds */
	bool baselines;		   /* anomaly scores for gauges */
	unsigned int max_series;   /* baselines kept */
	/* Where the models are kept across restarts (loaded at start, saved
	 * every 10 minutes and at stop); NULL: not kept. */
	const char *models_path;
	struct gw_worker_table *workers; /* lists both threads; NULL: none */
};

struct gw_ingest;

/* Starts the "gw-store-in" and "gw-store" threads (common/worker.h
 * workers).  -ENODEV without a store, -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_ingest_start(const struct gw_ingest_opts *o, struct gw_ingest **out);
/* Tells the threads to end, gw-store after its last pass and flush; does
 * not wait. */
void gw_ingest_request_stop(struct gw_ingest *in);
/* Waits for the threads until deadline (CLOCK_MONOTONIC s): -ETIMEDOUT. */
__attribute__((warn_unused_result)) int gw_ingest_stop(struct gw_ingest *in,
						       double deadline);
/* NULL is a no-op. */
void gw_ingest_free(struct gw_ingest *in);

#endif
