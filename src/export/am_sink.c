/* SPDX-License-Identifier: MIT */
#include "export/am_sink.h"

#include "pipeline/catalog.h"

#define MAX_AM 16
#define BATCH  64

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
		gw_snap_add(s, GW_FAM(ALERTMANAGER_ALERTS_SENT_TOTAL),
			    (double)st[i].sent, NULL, "url", st[i].url, NULL);
		gw_snap_add(s, GW_FAM(ALERTMANAGER_POSTS_FAILED_TOTAL),
			    (double)st[i].posts_failed, NULL, "url", st[i].url,
			    NULL);
		gw_snap_add(s, GW_FAM(ALERTMANAGER_ALERTS_DROPPED_TOTAL),
			    (double)st[i].dropped, NULL, "url", st[i].url,
			    NULL);
		gw_snap_add(s, GW_FAM(ALERTMANAGER_QUEUE_LENGTH),
			    (double)st[i].queued, NULL, "url", st[i].url, NULL);
		gw_snap_add(s, GW_FAM(ALERTMANAGER_UP), st[i].up, NULL, "url",
			    st[i].url, NULL);
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
