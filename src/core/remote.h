/* SPDX-License-Identifier: MIT */
/*
 * remote.h - the agent's remote_write, wired: the endpoints of the
 * settings (--remote-write URLs; export/rw.h builds them), and for each a
 * queue over the local store (export/rw_queue.h) sending through the
 * endpoint's client (export/rw_sink.h), with the edge aggregation policy
 * of the settings (--remote-write-policy, --remote-write-raw,
 * --external-label, --remote-write-heartbeat, --remote-write-max-lag,
 * --remote-write-events, --remote-write-event-window,
 * --remote-write-anomaly-threshold).  Watermarks live in
 * DATA_DIR/remote_write/NAME.state.  POST /api/v1/admin/push reaches
 * every queue through gw_remote_api() when --remote-write-admin-push is on.
 *
 * Errors: 0 or -errno.  Called from the agent's main thread, except the
 * push hook (HTTP query workers).
 */
#ifndef GW_REMOTE_H
#define GW_REMOTE_H

#include <stddef.h>

#include "core/config.h"
#include "http/api.h"

struct gw_agent;
struct gw_remote;

/* Checks the remote_write settings of c (endpoints, policy, selectors,
 * labels) as the config check does: -EINVAL with one line in err. */
__attribute__((warn_unused_result)) int
gw_remote_check(const struct gw_config *c, char *err, size_t errlen);

/* Starts a queue per endpoint ("gw-rw-N" threads); *out NULL when none
 * is configured or there is no store (logged).  -errno with err set. */
__attribute__((warn_unused_result)) int gw_remote_start(struct gw_agent *a,
							struct gw_remote **out,
							char *err,
							size_t errlen);

/* Sets o->push when admin push is on and a queue runs. */
void gw_remote_api(struct gw_remote *r, struct gw_api_opts *o);

/* Asks every queue to stop after the slice it sends; no wait. */
void gw_remote_request_stop(struct gw_remote *r);
/* Stops every queue until deadline (CLOCK_MONOTONIC s) and frees
 * everything; a queue stuck past it is left behind (logged).  NULL:
 * no-op. */
void gw_remote_free(struct gw_remote *r, double deadline);

#endif
