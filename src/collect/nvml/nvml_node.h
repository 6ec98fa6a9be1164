/* SPDX-License-Identifier: MIT */
/*
 * nvml_node.h - one simulated node for a fleet simulation: a private
 * simulator world (collect/sim/sim.h: its own GPUs, jobs, faults and a
 * manual clock) read by the NVML collector's own read functions, so a
 * node's samples are the agent's full metric set with the agent's names
 * and labels: the fast set, the detail set, the GPUs' status
 * (gpuwatch_gpu_up, gpuwatch_gpu_info, gpuwatch_gpu_lost_total) and the
 * XID and ECC event counters.  No thread, no registry: the caller asks
 * for a reading at a simulated time.
 *
 * Errors: 0 or -errno.  Thread safety: a node is used by one thread at a
 * time; different nodes may be read from different threads at once.
 */
#ifndef GW_NVML_NODE_H
#define GW_NVML_NODE_H

#include <stdbool.h>

#include "collect/sim/sim.h"
#include "pipeline/metrics.h"

struct gw_nvml_node;

/* A node of o->gpus GPUs (o: the simulator's options; the clock is made
 * manual).  -EINVAL (bad options), -ENOMEM, -ENODEV (the simulated NVML
 * did not start). */
__attribute__((warn_unused_result)) int
gw_nvml_node_new(const struct gw_sim_opts *o, struct gw_nvml_node **out);
void gw_nvml_node_free(struct gw_nvml_node *n); /* NULL: no-op */

/*
 * Advances the node to t_s seconds of simulated time after its start
 * (never backwards) and reads the fast set of every GPU, the detail set
 * too when detail is true, then the status and event counters, calling
 * each() with every snapshot read (one per GPU and set, then one of the
 * status and events).  The snapshots are the node's, valid during the
 * call.
 */
void gw_nvml_node_read(struct gw_nvml_node *n, double t_s, bool detail,
		       void (*each)(void *ctx, const struct gw_snap *s),
		       void *ctx);

#endif
