/* SPDX-License-Identifier: MIT */
/*
 * nvml_node.c - a simulated node read by the collector's own code
 * (contract in nvml_node.h).  What the collector's threads do for the
 * agent (discover, read the fast and detail sets, mark a lost GPU and
 * probe it again, drain the event set, publish the status) is done here
 * in line, on the caller's thread, against a private simulator world.
 */
#include "collect/nvml/nvml_node.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collector.h"
#include "nvml_internal.h"

struct gw_nvml_node {
	struct gw_sim_instance *w;
	struct gw_collect_opts o;
	struct gw_collect_env env;
	struct gw_snap out;
	bool initialised;
	double t_s; /* simulated time reached */
	uint64_t lost[GW_NVML_MAX_GPUS];
	struct gw_nvml c; /* last: large */
};

int gw_nvml_node_new(const struct gw_sim_opts *o, struct gw_nvml_node **out)
{
	struct gw_nvml_node *n;
	struct gw_nvml *c;
	unsigned int count = 0;
	int r;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	c = &n->c;
	n->env.o = &n->o;
	c->env = &n->env;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->ev_mu, NULL);
	for (unsigned int i = 0; i < GW_NVML_MAX_GPUS; i++) {
		struct gpu_dev *d = &c->dev[i];

		d->c = c;
		d->index = i;
		d->nvlink_links = -1;
		d->slot_fast = d->slot_detail = -1;
		pthread_mutex_init(&d->mu, NULL);
		gw_snap_init(&d->snap);
	}
	gw_snap_init(&n->out);
	r = gw_sim_instance_new(o, &n->w);
	if (r)
		goto err;
	gw_sim_instance_enter(n->w);
	c->fns = *gw_sim_fns();
	r = -ENODEV;
	if (c->fns.init() != GW_NVML_SUCCESS)
		goto err_leave;
	n->initialised = true;
	if (c->fns.system_get_driver_version(c->driver_version,
					     sizeof(c->driver_version)) !=
	    GW_NVML_SUCCESS)
		c->driver_version[0] = '\0';
	c->driver_version[sizeof(c->driver_version) - 1] = '\0';
	if (c->fns.device_get_count(&count) != GW_NVML_SUCCESS)
		goto err_leave;
	c->ndev = count < GW_NVML_MAX_GPUS ? count : GW_NVML_MAX_GPUS;
	for (unsigned int i = 0; i < c->ndev; i++)
		gw_nvml_discover(c, &c->dev[i]);
	c->loaded = 1;
	if (c->fns.event_set_create(&c->ev_set) == GW_NVML_SUCCESS)
		for (unsigned int i = 0; i < c->ndev; i++)
			if (c->dev[i].h)
				(void)c->fns.device_register_events(
					c->dev[i].h,
					GW_NVML_EVENT_XID_CRITICAL |
						GW_NVML_EVENT_SINGLE_BIT_ECC |
						GW_NVML_EVENT_DOUBLE_BIT_ECC,
					c->ev_set);
	gw_sim_instance_leave();
	*out = n;
	return 0;
err_leave:
	gw_sim_instance_leave();
err:
	gw_nvml_node_free(n);
	return r;
}

void gw_nvml_node_free(struct gw_nvml_node *n)
{
	struct gw_nvml *c;

	if (!n)
		return;
	c = &n->c;
	if (n->w) {
		gw_sim_instance_enter(n->w);
		if (c->ev_set && c->fns.event_set_free)
			c->fns.event_set_free(c->ev_set);
		if (n->initialised)
			c->fns.shutdown();
		gw_sim_instance_leave();
	}
	for (unsigned int i = 0; i < GW_NVML_MAX_GPUS; i++) {
		struct gpu_dev *d = &c->dev[i];

		free(d->procs);
		free(d->plabels);
		free(d->putil);
		gw_snap_release(&d->snap);
		pthread_mutex_destroy(&d->mu);
	}
	gw_sim_instance_free(n->w);
	gw_snap_release(&n->out);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->ev_mu);
	free(n);
}

void gw_nvml_node_read(struct gw_nvml_node *n, double t_s, bool detail,
		       void (*each)(void *ctx, const struct gw_snap *s),
		       void *ctx)
{
	static int (*const readers[2])(
		struct gpu_dev *) = { gw_nvml_read_fast, gw_nvml_read_detail };
	struct gw_nvml *c = &n->c;
	struct gw_nvml_event_data ev;

	gw_sim_instance_enter(n->w);
	gw_snap_reset(&n->out);
	if (t_s > n->t_s) {
		gw_sim_advance(t_s - n->t_s);
		n->t_s = t_s;
	}
	for (unsigned int i = 0; i < c->ndev; i++) {
		struct gpu_dev *d = &c->dev[i];

		if (d->state == DEV_LOST) {
			if (gw_nvml_probe(d) < 0)
				continue;
			if (!d->uuid[0])
				gw_nvml_discover(c, d);
			d->state = d->h ? DEV_UP : DEV_LOST;
			d->nvlink_links = -1;
			if (d->state == DEV_LOST)
				continue;
		}
		for (int set = 0; set < 2; set++) {
			if (set == 1 && !detail)
				break;
			gw_snap_reset(&d->snap);
			if (readers[set](d) == -ENODEV) {
				d->state = DEV_LOST;
				n->lost[i]++;
				break;
			}
			each(ctx, &d->snap);
		}
	}
	while (c->ev_set &&
	       c->fns.event_set_wait(c->ev_set, &ev, 0) == GW_NVML_SUCCESS)
		gw_nvml_count_event(c, &ev);
	gw_sim_instance_leave();
	gw_snap_add(&n->out, GW_FAM(GPUS), c->ndev, NULL, NULL);
	for (unsigned int i = 0; i < c->ndev; i++) {
		struct gpu_dev *d = &c->dev[i];

		gw_snap_add(&n->out, GW_FAM(GPU_UP), d->state == DEV_UP,
			    d->labels, NULL);
		gw_snap_add(&n->out, GW_FAM(GPU_LOST_TOTAL), (double)n->lost[i],
			    d->labels, NULL);
		gw_snap_add(&n->out, GW_FAM(GPU_INFO), 1, d->labels, "name",
			    d->name, "pci_bus_id", d->bus_id, "driver_version",
			    c->driver_version, NULL);
	}
	gw_nvml_events_fill(c, &n->out);
	each(ctx, &n->out);
}
