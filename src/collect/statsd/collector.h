/* SPDX-License-Identifier: MIT */
/*
 * collector.h - the statsd collector (see collector.c).
 */
#ifndef GW_STATSD_COLLECTOR_H
#define GW_STATSD_COLLECTOR_H

#include "core/agent.h"

extern const struct gw_collector_ops gw_statsd_collector;

#endif
