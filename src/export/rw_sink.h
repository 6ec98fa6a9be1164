/* SPDX-License-Identifier: MIT */
/*
 * rw_sink.h - the sending half as the queue's sink (export/rw_queue.h):
 * each batch's series go through the endpoint's write_relabel_configs
 * (gw_rw_relabel; dropped series are counted, reason "relabel"), are
 * encoded (gw_rw_encode) and sent by the endpoint's client
 * (gw_rw_client_send, retrying until acknowledged, refused or stopped).
 * Samples the queue reports aged out are counted in the endpoint's
 * dropped counter, reason "retention"; the endpoint's metrics are
 * published with the queue's.
 *
 * Errors: 0 or -errno.  Thread safety: one sink per queue thread.
 */
#ifndef GW_RW_SINK_H
#define GW_RW_SINK_H

#include "export/rw.h"
#include "export/rw_queue.h"

struct gw_rw_sink;

/* A sink sending to ep (borrowed: it must outlive the sink).  -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_rw_sink_new(struct gw_rw_endpoint *ep, struct gw_rw_sink **out);
void gw_rw_sink_free(struct gw_rw_sink *k);

/* The struct gw_rw_queue_opts.sink that sends through k. */
struct gw_rw_queue_sink gw_rw_sink_of(struct gw_rw_sink *k);

#endif
