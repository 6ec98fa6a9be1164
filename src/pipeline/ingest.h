/* SPDX-License-Identifier: MIT */
/*
 * ingest.h - the thread that feeds the store: woken by every publish into
 * the registry (gw_registry_on_publish), and at least every fast interval,
 * it takes what the collectors published since its last pass
 * (gw_registry_visit, with each producer's publish time as the timestamp),
 * so that no publish is replaced before the store took it; one that is
 * (the store fell behind) and every sample the store refuses are counted in
 * gpuwatch_agent_dropped_samples_total{reason}.  It appends them to the store,
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
	struct gw_worker_table *workers; /* lists "gw-store"; NULL: none */
};

struct gw_ingest;

/* Starts the "gw-store" thread (a common/worker.h worker).  -ENODEV
 * without a store, -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_ingest_start(const struct gw_ingest_opts *o, struct gw_ingest **out);
/* Tells the thread to make its last pass and flush; does not wait. */
void gw_ingest_request_stop(struct gw_ingest *in);
/* Waits for the thread until deadline (CLOCK_MONOTONIC s): -ETIMEDOUT. */
__attribute__((warn_unused_result)) int gw_ingest_stop(struct gw_ingest *in,
						       double deadline);
/* NULL is a no-op. */
void gw_ingest_free(struct gw_ingest *in);

#endif
