/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the one context of the daemon, passed down to every module.
 *
 * Threads: the main thread runs gw_agent_run(): it waits for signals and
 * ticks the self collector and the CPU governor.  The HTTP server runs on
 * its own thread; each collector may own threads of its own (NVML: one per
 * GPU, a scheduler and an event thread).  Collectors hand values to the HTTP
 * side only through the registry (pipeline/metrics.h).
 *
 * The intervals in use are atomics: the governor (main thread) writes them,
 * collector threads read them.
 */
#ifndef GW_AGENT_H
#define GW_AGENT_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/config.h"
#include "pipeline/metrics.h"

struct gw_agent;

/*
 * A collector plug-in.  start() creates its threads and returns; at the end
 * request_stop() is called on every collector first, so that they all wind
 * down together, then stop() waits at most until deadline (CLOCK_MONOTONIC
 * seconds),
 * returning -ETIMEDOUT if a thread is stuck (in a hung driver call): the
 * agent then exits without freeing what that thread may still touch.
 */
struct gw_collector_ops {
	const char *name;
	int (*start)(struct gw_agent *a, void **priv);
	/* Optional: tell the threads to finish, without waiting for them. */
	void (*request_stop)(void *priv);
	int (*stop)(void *priv, double deadline);
	void (*free)(void *priv);
	/* Optional: the config was reloaded (new intervals, log level). */
	void (*reload)(void *priv);
};

struct gw_attrib_cache;
struct gw_store;
struct gw_worker_table;

struct gw_agent {
	struct gw_config cfg;
	struct gw_registry *reg;
	/* pid -> comm, container, pod, job; shared by the collectors. */
	struct gw_attrib_cache *attrib;
	/* The local history (NULL with --no-store); the store collector
	 * feeds it, the HTTP API reads it. */
	struct gw_store *store;
	/* Every worker thread, for gpuwatch_agent_worker_cpu_seconds_total. */
	struct gw_worker_table *workers;
	/* Intervals in use, milliseconds; the governor may stretch them. */
	_Atomic uint64_t fast_ms;
	_Atomic uint64_t detail_ms;
	double start_time;  /* CLOCK_REALTIME seconds */
	int argc;
	char **argv;
};

/* Monotonic and wall clocks in seconds. */
double gw_now_mono(void);
double gw_now_real(void);

/* Runs the agent until SIGTERM/SIGINT; returns the process exit status. */
int gw_agent_main(int argc, char **argv);

#endif
