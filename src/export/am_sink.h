/* SPDX-License-Identifier: MIT */
/*
 * am_sink.h - the Alertmanager client as the alert evaluator's sink: alerts
 * the evaluator hands over (pipeline/alerts.h) are queued for every
 * Alertmanager (export/alertmanager.h), and the client's own metrics are
 * published with the evaluator's:
 *
 *   gpuwatch_alertmanager_alerts_sent_total{url}
 *   gpuwatch_alertmanager_posts_failed_total{url}
 *   gpuwatch_alertmanager_alerts_dropped_total{url}
 *   gpuwatch_alertmanager_queue_length{url}
 *   gpuwatch_alertmanager_up{url}
 *
 * A file of its own so that a test can link it with stand-in gw_am_*.
 */
#ifndef GW_AM_SINK_H
#define GW_AM_SINK_H

#include "export/alertmanager.h"
#include "pipeline/alerts.h"

/* Fills sink so that it delivers to am (borrowed; it must outlive the
 * evaluator's use of the sink). */
void gw_am_sink_init(struct gw_alerts_sink *sink, struct gw_am *am);

#endif
