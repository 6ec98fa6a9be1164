/* SPDX-License-Identifier: MIT */
/*
 * self.h - the agent's own cost, measured and published, and the CPU
 * governor that keeps it within --cpu-budget (core/pace.h).
 *
 * Runs on the main thread: gw_self_tick() is called about once per fast
 * interval.  It reads the process CPU clock and /proc/self, publishes the
 * gpuwatch_agent_* metrics and, once per governor window, stretches or
 * restores the intervals the collectors use (agent->fast_ms, ->detail_ms).
 * Each worker thread's CPU time comes from agent->workers.
 */
#ifndef GW_SELF_H
#define GW_SELF_H

#include "core/agent.h"

struct gw_http;
struct gw_self;

struct gw_self *gw_self_new(struct gw_agent *a);
void gw_self_free(struct gw_self *s);
void gw_self_tick(struct gw_self *s, struct gw_http *http);
/* The configured intervals or budget changed (SIGHUP). */
void gw_self_reconfigure(struct gw_self *s);

#endif
