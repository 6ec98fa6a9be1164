/* SPDX-License-Identifier: MIT */
/*
 * collector.h - the cupti collector (see collector.c).
 */
#ifndef GW_CUPTI_COLLECTOR_H
#define GW_CUPTI_COLLECTOR_H

#include "collect/collector.h"

extern const struct gw_collector_ops gw_cupti_collector;

#endif
