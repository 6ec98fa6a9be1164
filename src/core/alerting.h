/* SPDX-License-Identifier: MIT */
/*
 * alerting.h - the agent's alerting, wired: the rule files of the settings
 * (pipeline/rules.h), the evaluator on the local history
 * (pipeline/alerts.h) and the Alertmanagers it sends to
 * (export/alertmanager.h through export/am_sink.h).
 *
 * Errors: 0 or -errno.  Called from the agent's main thread only.
 */
#ifndef GW_ALERTING_H
#define GW_ALERTING_H

#include <stddef.h>

#include "core/config.h"
#include "pipeline/alerts.h"

struct gw_agent;
struct gw_alerting;

/* Loads the rules of c (built-in set, --rules files): err names the file
 * and line of a bad one.  On success *out holds an evaluator that is not
 * running yet. */
__attribute__((warn_unused_result)) int
gw_alerting_new(const struct gw_config *c, struct gw_alerting **out, char *err,
		size_t errlen);
/* The evaluator, for the API's /api/v1/alerts and /api/v1/rules. */
struct gw_alerts *gw_alerting_alerts(struct gw_alerting *x);
/* Connects the registry, the store (NULL: logs that rules need the store
 * and evaluates nothing) and the Alertmanagers of a->cfg; starts the
 * "gw-rules" thread. */
__attribute__((warn_unused_result)) int gw_alerting_start(struct gw_alerting *x,
							  struct gw_agent *a);
/* SIGHUP: takes the rule and resend intervals of c, reads the rule files
 * of c again; a bad file keeps the old rules and logs why. */
void gw_alerting_reload(struct gw_alerting *x, const struct gw_config *c);
/* Stops the thread, hands what is queued to the Alertmanagers until
 * deadline (CLOCK_MONOTONIC s) and frees everything.  NULL: no-op. */
void gw_alerting_free(struct gw_alerting *x, double deadline);

#endif
