/* SPDX-License-Identifier: MIT */
/* placeholder */
#include "collect/cupti/collector.h"

static int start(struct gw_agent *a, void **priv)
{
	(void)a;
	*priv = 0;
	return 0;
}

static int stop(void *priv, double deadline)
{
	(void)priv;
	(void)deadline;
	return 0;
}

static void release(void *priv)
{
	(void)priv;
}

const struct gw_collector_ops gw_cupti_collector = {
	.name = "cupti", .start = start, .stop = stop, .free = release,
};
