/* SPDX-License-Identifier: MIT */
/*
 * nvml_events.c - XID and ECC events from an NVML event set, on their own
 * thread (the wait blocks).  Events are counted per GPU and XID code and
 * exported as counters with a last-seen timestamp, never as a last-value
 * gauge, so two XIDs between scrapes are both seen.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collect/nvml/nvml_internal.h"
#include "common/clock.h"
#include "common/log.h"

#define WAIT_MS 500

static const char *xid_meaning(unsigned long long xid)
{
	switch (xid) {
	case 13:
		return "graphics engine exception";
	case 31:
		return "GPU memory page fault";
	case 43:
		return "GPU stopped processing";
	case 45:
		return "preemptive cleanup";
	case 48:
		return "double-bit ECC error";
	case 61:
	case 62:
		return "internal micro-controller error";
	case 63:
	case 64:
		return "ECC page retirement or row remapping";
	case 74:
		return "NVLink error";
	case 79:
		return "GPU has fallen off the bus";
	case 92:
		return "high single-bit ECC error rate";
	case 94:
		return "contained ECC error";
	case 95:
		return "uncontained ECC error";
	case 119:
	case 120:
		return "GSP error";
	default:
		return "see NVIDIA's XID catalogue";
	}
}

static gw_nvml_device_t handle_of(struct gpu_dev *d)
{
	gw_nvml_device_t h;

	pthread_mutex_lock(&d->mu); /* a late discovery writes it */
	h = d->h;
	pthread_mutex_unlock(&d->mu);
	return h;
}

static struct gpu_dev *dev_of(struct gw_nvml *c, gw_nvml_device_t h)
{
	for (unsigned int i = 0; i < c->ndev; i++)
		if (h && handle_of(&c->dev[i]) == h)
			return &c->dev[i];
	return NULL;
}

void gw_nvml_count_event(struct gw_nvml *c, const struct gw_nvml_event_data *ev)
{
	struct gpu_dev *d = dev_of(c, ev->device);
	unsigned int i;

	if (!d)
		return;
	pthread_mutex_lock(&c->ev_mu);
	if (ev->event_type & GW_NVML_EVENT_XID_CRITICAL) {
		for (i = 0; i < d->nxid; i++)
			if (d->xid[i].code == ev->event_data)
				break;
		if (i == d->nxid && d->nxid < GW_NVML_MAX_XID_CODES)
			d->xid[d->nxid++].code = ev->event_data;
		if (i < d->nxid) {
			d->xid[i].count++;
			d->xid[i].last_seen = gw_now_real();
		} else {
			c->xid_overflow++;
		}
		d->last_xid = ev->event_data;
	}
	if (ev->event_type & GW_NVML_EVENT_SINGLE_BIT_ECC)
		d->ecc_events[0]++;
	if (ev->event_type & GW_NVML_EVENT_DOUBLE_BIT_ECC)
		d->ecc_events[1]++;
	pthread_mutex_unlock(&c->ev_mu);
	if (ev->event_type & GW_NVML_EVENT_XID_CRITICAL)
		gw_warn("nvml: GPU %u (%s): XID %llu: %s", d->index, d->uuid,
			ev->event_data, xid_meaning(ev->event_data));
	else if (ev->event_type & GW_NVML_EVENT_DOUBLE_BIT_ECC)
		gw_warn("nvml: GPU %u (%s): uncorrectable (double-bit) ECC "
			"error",
			d->index, d->uuid);
}

/* Registers one GPU for XID and ECC events; returns 1 when accepted. */
static int register_dev(struct gw_nvml *c, struct gpu_dev *d, void *set)
{
	const unsigned long long want = GW_NVML_EVENT_XID_CRITICAL |
					GW_NVML_EVENT_SINGLE_BIT_ECC |
					GW_NVML_EVENT_DOUBLE_BIT_ECC;
	gw_nvml_device_t h = handle_of(d);
	unsigned long long types = want, sup = 0;

	if (!h)
		return 0;
	if (c->fns.device_get_supported_event_types &&
	    c->fns.device_get_supported_event_types(h, &sup) == GW_NVML_SUCCESS)
		types &= sup;
	if (!types)
		return 0;
	if (c->fns.device_register_events(h, types, set) == GW_NVML_SUCCESS ||
	    c->fns.device_register_events(h, GW_NVML_EVENT_XID_CRITICAL, set) ==
		    GW_NVML_SUCCESS)
		return 1;
	gw_warn("nvml: GPU %u: cannot register for XID events", d->index);
	return 0;
}

int gw_nvml_events_init(struct gw_worker *w, void *arg)
{
	struct gw_nvml *c = arg;
	unsigned int registered = 0;
	char nb[24];
	int r;

	(void)w;
	r = c->fns.event_set_create(&c->ev_set);
	if (r != GW_NVML_SUCCESS) {
		gw_warn("nvml: cannot create an event set (%s); XID errors "
			"are not counted",
			gw_nvml_code_name(r, nb, sizeof(nb)));
		return -EIO;
	}
	for (unsigned int i = 0; i < c->ndev; i++)
		registered += register_dev(c, &c->dev[i], c->ev_set);
	if (registered == 0 && c->ndev > 0)
		gw_warn("nvml: no GPU accepts event registration yet; XID "
			"errors are not counted");
	return 0;
}

/* One wait on the event set; the stop is seen within WAIT_MS. */
double gw_nvml_events_round(struct gw_worker *w, void *arg)
{
	struct gw_nvml *c = arg;
	struct gw_nvml_event_data ev;
	int r;

	(void)w;
	/* GPUs identified after start join the set here. */
	for (unsigned int i = 0; i < c->ndev; i++)
		if (atomic_exchange(&c->dev[i].register_events, 0))
			register_dev(c, &c->dev[i], c->ev_set);

	memset(&ev, 0, sizeof(ev));
	r = c->fns.event_set_wait(c->ev_set, &ev, WAIT_MS);
	if (r == GW_NVML_SUCCESS) {
		gw_nvml_count_event(c, &ev);
		return 0;
	}
	if (r == GW_NVML_ERROR_TIMEOUT)
		return 0;
	/* A lost GPU or a driver in trouble: do not spin. */
	atomic_fetch_add(&c->errors[gw_nvml_err_slot(r)], 1);
	return WAIT_MS / 1000.0;
}

void gw_nvml_events_fini(struct gw_worker *w, void *arg)
{
	struct gw_nvml *c = arg;

	(void)w;
	if (c->fns.event_set_free)
		c->fns.event_set_free(c->ev_set);
	c->ev_set = NULL;
}

void gw_nvml_publish_events(struct gw_nvml *c)
{
	gw_nvml_events_fill(c, &c->events_snap);
	gw_registry_publish(c->env->reg, c->slot_events, &c->events_snap);
}

void gw_nvml_events_fill(struct gw_nvml *c, struct gw_snap *s)
{
	const struct gw_family *xid_dcgm =
		gw_catalog_dcgm(GW_CATALOG_GPU_XID_ERRORS_TOTAL, NULL);

	pthread_mutex_lock(&c->ev_mu);
	for (unsigned int i = 0; i < c->ndev; i++) {
		struct gpu_dev *d = &c->dev[i];
		char labels[sizeof(d->labels)], dcgm[sizeof(d->dcgm_labels)];

		/* Lock order: ev_mu, then d->mu (nothing takes them the other way). */
		pthread_mutex_lock(&d->mu);
		memcpy(labels, d->labels, sizeof(labels));
		memcpy(dcgm, d->dcgm_labels, sizeof(dcgm));
		pthread_mutex_unlock(&d->mu);

		for (unsigned int k = 0; k < d->nxid; k++) {
			char code[24];

			snprintf(code, sizeof(code), "%llu", d->xid[k].code);
			gw_snap_add(s, GW_FAM(GPU_XID_ERRORS_TOTAL),
				    (double)d->xid[k].count, labels, "xid",
				    code, NULL);
			gw_snap_add(s, GW_FAM(GPU_XID_LAST_TIMESTAMP_SECONDS),
				    d->xid[k].last_seen, labels, "xid", code,
				    NULL);
		}
		gw_snap_add(s, GW_FAM(GPU_ECC_ERROR_EVENTS_TOTAL),
			    (double)d->ecc_events[0], labels, "type",
			    "single_bit", NULL);
		gw_snap_add(s, GW_FAM(GPU_ECC_ERROR_EVENTS_TOTAL),
			    (double)d->ecc_events[1], labels, "type",
			    "double_bit", NULL);
		if (c->dcgm && xid_dcgm)
			gw_snap_add(s, xid_dcgm, (double)d->last_xid, dcgm,
				    NULL);
	}
	gw_snap_add(s, GW_FAM(GPU_XID_CODES_DROPPED_TOTAL),
		    (double)c->xid_overflow, NULL, NULL);
	pthread_mutex_unlock(&c->ev_mu);
}
