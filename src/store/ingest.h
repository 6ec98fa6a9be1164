/* SPDX-License-Identifier: MIT */
/*
 * ingest.h - the thread that feeds the store: every fast interval it takes
 * what the collectors published since its last pass (gw_registry_visit, with
 * each producer's publish time as the timestamp), appends it to the store,
 * runs the store's maintenance (flush, cuts, retention) and publishes the
 * store's own metrics (gpuwatch_store_*).  On stop it flushes, so SIGTERM
 * loses nothing.
 *
 * A collector plug-in (core/agent.h) that needs agent->store; without a
 * store it does not start.
 */
#ifndef GW_INGEST_H
#define GW_INGEST_H

#include "core/agent.h"

extern const struct gw_collector_ops gw_store_collector;

#endif
