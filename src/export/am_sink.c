/* SPDX-License-Identifier: MIT */
#include "export/am_sink.h"

#define MAX_AM 16
#define BATCH 64

static const struct gw_family f_am_sent = {
	"gpuwatch_alertmanager_alerts_sent_total",
	"Alerts accepted by each Alertmanager.", GW_COUNTER
};
static const struct gw_family f_am_failed = {
	"gpuwatch_alertmanager_posts_failed_total",
	"POSTs to each Alertmanager that failed (each retry counts).",
	GW_COUNTER
};
static const struct gw_family f_am_dropped = {
	"gpuwatch_alertmanager_alerts_dropped_total",
	"Alerts dropped for each Alertmanager (queue full or refused).",
	GW_COUNTER
};
static const struct gw_family f_am_queued = {
	"gpuwatch_alertmanager_queue_length",
	"Alerts waiting for each Alertmanager.", GW_GAUGE
};
static const struct gw_family f_am_up = {
	"gpuwatch_alertmanager_up",
	"1 when the last POST to the Alertmanager succeeded.", GW_GAUGE
};

static void send(void *ctx, const struct gw_alert_out *v, size_t n)
{
	struct gw_am_alert batch[BATCH];

	while (n) {
		size_t k = n < BATCH ? n : BATCH;

		for (size_t i = 0; i < k; i++)
			batch[i] = (struct gw_am_alert){
				.labels = v[i].labels,
				.annotations = v[i].annotations,
				.starts_ms = v[i].starts_ms,
				.ends_ms = v[i].ends_ms,
			};
		gw_am_send(ctx, batch, k);
		v += k;
		n -= k;
	}
}

static void publish(void *ctx, struct gw_snap *s)
{
	struct gw_am_target_stats st[MAX_AM];
	unsigned int n = gw_am_stats(ctx, st, MAX_AM);

	for (unsigned int i = 0; i < n && i < MAX_AM; i++) {
		gw_snap_add(s, &f_am_sent, (double)st[i].sent, NULL, "url",
			    st[i].url, NULL);
		gw_snap_add(s, &f_am_failed, (double)st[i].posts_failed, NULL,
			    "url", st[i].url, NULL);
		gw_snap_add(s, &f_am_dropped, (double)st[i].dropped, NULL,
			    "url", st[i].url, NULL);
		gw_snap_add(s, &f_am_queued, (double)st[i].queued, NULL, "url",
			    st[i].url, NULL);
		gw_snap_add(s, &f_am_up, st[i].up, NULL, "url", st[i].url,
			    NULL);
	}
}

void gw_am_sink_init(struct gw_alerts_sink *sink, struct gw_am *am)
{
	*sink = (struct gw_alerts_sink){
		.ctx = am,
		.send = send,
		.publish = publish,
	};
}
