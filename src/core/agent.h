/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the one context of the daemon, passed down to every module.
 *
 * Threads: the main thread runs gw_agent_main(): it waits for signals and
 * ticks the self collector and the CPU governor.  The HTTP server runs on
 * its own thread; each collector may own worker threads of its own
 * (common/worker.h; NVML: one per GPU, a scheduler and an event thread),
 * listed in the agent's worker table (agent.c lists them all).  Collectors
 * hand values to the HTTP side only through the registry
 * (pipeline/metrics.h).
 *
 * The intervals in use are atomics: the governor (main thread) writes them,
 * collector threads read them.
 */
#ifndef GW_AGENT_H
#define GW_AGENT_H

#include <stdatomic.h>
#include <stdint.h>

#include "collect/collector.h"
#include "core/config.h"
#include "pipeline/metrics.h"

struct gw_agent;

struct gw_attrib_cache;
struct gw_store;
struct gw_worker_table;
struct gw_podres;
struct gw_kernels;

struct gw_agent {
	struct gw_config cfg;
	struct gw_registry *reg;
	/* pid -> comm, container, pod, job; shared by the collectors. */
	struct gw_attrib_cache *attrib;
	/* GPU -> pod from the kubelet (collect/podres/podres.h). */
	struct gw_podres *podres;
	/* Each process's CUDA kernels (collect/kernels.h): CUPTI -> the
	 * profiler's launch call paths. */
	struct gw_kernels *kernels;
	/* The local history (NULL with --no-store); the store collector
	 * feeds it, the HTTP API reads it. */
	struct gw_store *store;
	/* The cold tier (NULL without --archive-url): uploads the store's
	 * closed days, fetches them back for queries. */
	struct gw_cold *cold;
	/* CPU profiles (NULL with --no-store or --profile off). */
	struct gw_profstore *profiles;
	/* Every worker thread, for gpuwatch_agent_worker_cpu_seconds_total. */
	struct gw_worker_table *workers;
	/* Intervals in use, milliseconds; the governor may stretch them. */
	_Atomic uint64_t fast_ms;
	_Atomic uint64_t detail_ms;
	/* The UDP port StatsD listens on, 0: none (collect/collector.h). */
	_Atomic unsigned int statsd_port;
	/* What the collectors are given (collect/collector.h): copts is
	 * filled from cfg, env points at the fields above. */
	struct gw_collect_opts copts;
	const char *cuda_lib_globs[GW_CONFIG_LIST_MAX]; /* into cfg */
	const char *profile_match[GW_CONFIG_LIST_MAX];	/* into cfg */
	struct gw_collect_env env;
	double start_time; /* CLOCK_REALTIME seconds */
	int argc;
	char **argv;
};

/* Runs the agent until SIGTERM/SIGINT; returns the process exit status. */
int gw_agent_main(int argc, char **argv);

#endif
