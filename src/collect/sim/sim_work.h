/* SPDX-License-Identifier: MIT */
/*
 * sim_work.h - the simulated GPUs' processes report their training loop
 * over StatsD (`--simulate N` with StatsD on UDP).
 *
 * Every fast interval, each simulated process that runs its loop
 * (gw_sim_procs() in sim.h) sends, as a training script would, two
 * DogStatsD gauges to the agent's own StatsD port, tagged with its GPU and
 * pid:
 *
 *   train_step_seconds:0.412|g|#gpu:1,pid:4002003
 *   train_step_kernel_seconds:0.331|g|#gpu:1,pid:4002003
 *
 * They go through the agent's StatsD receiver like any application's, so
 * the application layer of a simulated node is real data: a power cap
 * lowers the SM clock, the kernels take longer, and so does the step, each
 * an anomaly of the same GPU that the explanation of the others can name.
 * One datagram per GPU per interval.  A send that fails is not retried
 * (UDP, as an application's); the first failure is logged.
 *
 * Off (start() returns 0 and runs nothing) without --simulate or when
 * StatsD does not listen on UDP.
 */
#ifndef GW_SIM_WORK_H
#define GW_SIM_WORK_H

#include "collect/collector.h"

extern const struct gw_collector_ops gw_simwork_collector;

#endif
