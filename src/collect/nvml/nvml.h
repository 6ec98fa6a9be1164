/* SPDX-License-Identifier: MIT */
/*
 * nvml.h - the hardware collector: every GPU read through NVML (or through
 * the simulator's stand-in table with --simulate).
 *
 * Threads (common/worker.h workers):
 *   scheduler   "gw-nvml"; ticks the fast and detail sets, hands a job to
 *               each GPU's worker, declares a worker hung after
 *               --collector-timeout, publishes gpu_up/gpu_info and the
 *               collector's own counters.  Also (re)tries to load NVML.
 *   worker      "gw-nvml-N", one per GPU; runs the NVML calls of a job and
 *               publishes.  A call that hangs blocks only its own GPU.
 *   events      "gw-nvml-events"; waits on an NVML event set for XID and
 *               ECC events.
 *
 * Device states (per GPU, owned by its worker):
 *
 *      discover ok            GPU_IS_LOST on any call
 *   ----------------> UP ---------------------------------> LOST
 *                      ^                                      |
 *                      +---- a retry call succeeds <----------+
 *                            (backoff 1 s, doubling to 60 s)
 *
 *   and, decided by the scheduler, HUNG while a job runs longer than the
 *   timeout; it ends when the call returns.  gpu_up is 1 only in UP and not
 *   HUNG.
 */
#ifndef GW_NVML_H
#define GW_NVML_H

#include "collect/collector.h"

extern const struct gw_collector_ops gw_nvml_collector;

/* "GPU_IS_LOST" for GW_NVML_ERROR_GPU_IS_LOST, ...; "CODE_<n>" if unknown. */
const char *gw_nvml_code_name(int code, char *buf, size_t len);

#endif
