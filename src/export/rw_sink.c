/* SPDX-License-Identifier: MIT */
#include "export/rw_sink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

/* Largest encoded batch: 2000 samples take ~100 KB; a generous bound. */
#define BODY_MAX (256u << 20)

struct gw_rw_sink {
	struct gw_rw_endpoint *ep;
	struct gw_rw_client *client;
	struct gw_buf body;
	struct gw_rw_series *s; /* relabelled view */
	struct gw_labels *l;	/* their labels */
	size_t cap;
	time_t next_log;
};

int gw_rw_sink_new(struct gw_rw_endpoint *ep, struct gw_rw_sink **out)
{
	struct gw_rw_sink *k = calloc(1, sizeof(*k));
	int r;

	*out = NULL;
	if (!k)
		return -ENOMEM;
	k->ep = ep;
	gw_buf_init(&k->body, BODY_MAX);
	r = gw_rw_client_new(ep, &k->client);
	if (r) {
		free(k);
		return r;
	}
	*out = k;
	return 0;
}

void gw_rw_sink_free(struct gw_rw_sink *k)
{
	if (!k)
		return;
	gw_rw_client_free(k->client);
	gw_buf_release(&k->body);
	free(k->s);
	free(k->l);
	free(k);
}

static enum gw_rw_outcome send(void *ctx, const struct gw_rw_series *s,
			       size_t n, uint64_t samples,
			       const _Atomic bool *stop)
{
	struct gw_rw_sink *k = ctx;
	enum gw_rw_outcome out = GW_RW_REFUSED;
	uint64_t dropped = 0;
	size_t m = 0, raw_len = 0;
	int r = 0;

	if (n > k->cap) {
		struct gw_rw_series *ns = realloc(k->s, n * sizeof(*ns));
		struct gw_labels *nl;

		if (ns)
			k->s = ns;
		nl = ns ? realloc(k->l, n * sizeof(*nl)) : NULL;
		if (nl)
			k->l = nl;
		if (!ns || !nl) {
			r = -ENOMEM;
			goto log;
		}
		k->cap = n;
	}
	for (size_t i = 0; i < n && !r; i++) {
		r = gw_rw_relabel(k->ep, s[i].labels, &k->l[m]);
		if (r == 1) {
			k->s[m] = s[i];
			k->s[m].labels = &k->l[m];
			m++;
			r = 0;
		} else if (r == 0) {
			dropped += s[i].n;
		}
	}
	if (dropped)
		gw_rw_endpoint_dropped(k->ep, GW_RW_DROP_RELABEL, dropped);
	if (r)
		goto out;
	if (!m) {
		out = GW_RW_SENT; /* nothing left to send */
		goto out;
	}
	gw_buf_reset(&k->body);
	r = gw_rw_encode(k->s, m, &k->body, &raw_len);
	if (r)
		goto out;
	out = gw_rw_client_send(k->client, k->body.p, k->body.len, raw_len,
				samples - dropped, stop);
out:
	for (size_t i = 0; i < m; i++)
		gw_labels_release(&k->l[i]);
log:
	if (r) {
		time_t now = time(NULL);

		/* Once a minute at most: the batch is counted refused. */
		if (now >= k->next_log) {
			k->next_log = now + 60;
			gw_warn("remote_write %s: a batch of %llu samples "
				"could not be encoded: %s",
				gw_rw_endpoint_name(k->ep),
				(unsigned long long)samples, strerror(-r));
		}
	}
	return out;
}

static void aged_out(void *ctx, uint64_t n)
{
	struct gw_rw_sink *k = ctx;

	gw_rw_endpoint_dropped(k->ep, GW_RW_DROP_RETENTION, n);
}

static void publish(void *ctx, struct gw_snap *s)
{
	struct gw_rw_sink *k = ctx;

	gw_rw_endpoint_publish(k->ep, s);
}

struct gw_rw_queue_sink gw_rw_sink_of(struct gw_rw_sink *k)
{
	return (struct gw_rw_queue_sink){
		.ctx = k,
		.send = send,
		.aged_out = aged_out,
		.publish = publish,
	};
}
