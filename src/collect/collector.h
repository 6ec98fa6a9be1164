/* SPDX-License-Identifier: MIT */
/*
 * collector.h - what a collector is and what it is given.
 *
 * A collector is a source of samples (NVML, eBPF, CUPTI rings, StatsD)
 * behind one small vtable; the agent (core/agent.c) keeps a table of them,
 * starts each with the same environment and stops them together.  A
 * collector publishes what it reads into the registry
 * (pipeline/metrics.h) and knows nothing of who reads it.
 *
 * The environment is the agent's, borrowed for the collector's life: the
 * registry, the attribution cache, the intervals in use (atomics the CPU
 * governor may change while collectors run), the table that lists the
 * collectors' worker threads and their CPU time, and the settings collectors
 * read (struct gw_collect_opts, filled by the agent from its settings
 * table; on SIGHUP the agent changes the reloadable ones in place and calls
 * reload()).  Collectors never see the agent's own types.
 */
#ifndef GW_COLLECTOR_H
#define GW_COLLECTOR_H

#include <stdatomic.h>
#include <stdint.h>

#include "collect/sim/sim.h"
#include "pipeline/metrics.h"

struct gw_attrib_cache;
struct gw_podres;
struct gw_worker_table;
struct gw_profstore;
struct gw_kernels;

enum { GW_PROFILE_OFF, GW_PROFILE_GPU, GW_PROFILE_ALL };
enum { GW_PROFILE_UNWIND_AUTO, GW_PROFILE_UNWIND_FP, GW_PROFILE_UNWIND_DWARF };

/* The settings collectors read; strings are borrowed from the agent. */
struct gw_collect_opts {
	/* NVML, or the simulator behind the same function table */
	const char *nvml_lib;
	int dcgm;		  /* --compat dcgm */
	double collector_timeout; /* seconds; reloadable */
	unsigned int simulate;	  /* simulated GPUs, 0: real NVML */
	double sim_day;
	unsigned long long sim_seed;
	const struct gw_sim_fault *faults;
	unsigned int nfaults;
	/* eBPF */
	int ebpf;
	double leak_age;
	double ebpf_budget;
	double exited_grace; /* seconds an exited process's series stay */
	const char *const *cuda_lib_globs; /* extra library patterns */
	unsigned int ncuda_lib_globs;
	/* CPU profiling (collect/bpf/prof_collector.c) */
	int profile;			 /* GW_PROFILE_OFF, _GPU, _ALL */
	unsigned int profile_freq;	 /* Hz per CPU */
	double profile_flush;		 /* seconds between drains */
	const char *profile_version_env; /* "": the executable's build id */
	int profile_unwind;		 /* GW_PROFILE_UNWIND_* */
	/* --profile-match: selectors a profiled process must match
	 * (collect/prof_select.h); none: the mode alone decides */
	const char *const *profile_match;
	unsigned int nprofile_match;
	/* CUPTI rings */
	int cupti;
	const char *cupti_dir;
	unsigned int cupti_max_kernels;
	/* StatsD */
	const char *statsd_listen; /* "" or "off": no UDP */
	const char *statsd_socket; /* "": none */
	unsigned int statsd_max_series;
	unsigned int statsd_max_tag_values;
	unsigned long long statsd_max_memory; /* bytes; 0 = the default */
	/* Kubernetes: the kubelet's pod-resources socket ("" or "off": not
	 * asked) and how often it is asked, seconds */
	const char *pod_resources_socket;
	double pod_resources_interval;
};

struct gw_collect_env {
	struct gw_registry *reg;
	struct gw_attrib_cache *attrib; /* pid -> comm, container, pod, job */
	_Atomic uint64_t *fast_ms;	/* intervals in use, milliseconds */
	_Atomic uint64_t *detail_ms;
	const struct gw_collect_opts *o;
	/* GPU -> pod, filled by the pod-resources collector, read by NVML's
	 * workers (collect/podres/podres.h); NULL: none. */
	struct gw_podres *podres;
	/* Lists the collectors' threads (common/worker.h); NULL: none. */
	struct gw_worker_table *workers;
	/* Where CPU profiles go (store/profstore.h); NULL: not kept. */
	struct gw_profstore *profiles;
	/* Each process's CUDA kernels, filled by the CUPTI collector, read
	 * by the profiler's launch call paths (collect/kernels.h); NULL:
	 * none. */
	struct gw_kernels *kernels;
	/* The UDP port the StatsD collector bound (0: none), set by its
	 * start(), which comes before the simulated processes' (collect/
	 * sim/sim_work.h) that send to it; NULL: not kept. */
	_Atomic unsigned int *statsd_port;
};

/*
 * A collector plug-in.  start() creates its threads and returns; at the end
 * request_stop() is called on every collector first, so that they all wind
 * down together, then stop() waits at most until deadline (CLOCK_MONOTONIC
 * seconds), returning -ETIMEDOUT if a thread is stuck (in a hung driver
 * call): the agent then exits without freeing what that thread may still
 * touch.
 */
struct gw_collector_ops {
	const char *name;
	int (*start)(const struct gw_collect_env *env, void **priv);
	/* Optional: tell the threads to finish, without waiting for them. */
	void (*request_stop)(void *priv);
	int (*stop)(void *priv, double deadline);
	void (*free)(void *priv);
	/* Optional: reloadable settings in env->o changed (SIGHUP). */
	void (*reload)(void *priv);
};

#endif
