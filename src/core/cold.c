/* SPDX-License-Identifier: MIT */
#include "core/cold.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/worker.h"
#include "core/agent.h"
#include "export/archive.h"
#include "pipeline/metrics.h"
#include "store/profstore.h"

struct gw_cold {
	struct gw_archive *arch;
	struct gw_registry *reg;
	int slot;
	struct gw_snap snap;
	struct gw_worker *w;
	struct gw_worker_table *workers;
	struct gw_profstore *profiles;
};

int gw_cold_check(const struct gw_config *c, char *err, size_t errlen)
{
	struct gw_s3_config s3;
	char msg[1024];
	int r;

	if (!c->archive_url[0])
		return 0;
	r = gw_s3_config_init(&s3, c->archive_url, c->archive_endpoint,
			      c->archive_region, c->archive_addressing, msg,
			      sizeof(msg));
	explicit_bzero(&s3, sizeof(s3));
	if (r) {
		snprintf(err, errlen, "--archive-url: %s", msg);
		return -EINVAL;
	}
	if (!c->store) {
		snprintf(err, errlen,
			 "--archive-url needs the local store (--no-store is "
			 "set)");
		return -EINVAL;
	}
	return 0;
}

static double publish_round(struct gw_worker *w, void *arg)
{
	struct gw_cold *c = arg;

	(void)w;
	gw_snap_reset(&c->snap);
	gw_archive_publish(c->arch, &c->snap);
	gw_registry_publish(c->reg, c->slot, &c->snap);
	return GW_WORKER_PERIOD;
}

int gw_cold_new(struct gw_agent *a, struct gw_store_opts *o,
		struct gw_cold **out, char *err, size_t errlen)
{
	const struct gw_config *cfg = &a->cfg;
	struct gw_s3_config s3;
	struct gw_cold *c;
	char dir[PATH_MAX + 16], msg[1024];
	int r;

	*out = NULL;
	if (!cfg->archive_url[0])
		return 0;
	r = gw_s3_config_init(&s3, cfg->archive_url, cfg->archive_endpoint,
			      cfg->archive_region, cfg->archive_addressing, msg,
			      sizeof(msg));
	if (r) {
		snprintf(err, errlen, "--archive-url: %s", msg);
		return r;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		explicit_bzero(&s3, sizeof(s3));
		return -ENOMEM;
	}
	gw_snap_init(&c->snap);
	c->reg = a->reg;
	c->workers = a->workers;
	c->slot = gw_registry_slot(a->reg, "archive");
	snprintf(dir, sizeof(dir), "%s/archive-cache", cfg->data_dir);
	{
		struct gw_archive_opts ao = {
			.s3 = &s3,
			.cache_dir = dir,
			.cache_bytes = cfg->archive_cache_size,
			.workers = a->workers,
		};

		r = gw_archive_new(&ao, &c->arch, msg, sizeof(msg));
	}
	explicit_bzero(&s3, sizeof(s3));
	if (r || c->slot < 0) {
		snprintf(err, errlen, "archive: %s",
			 r ? msg : "no registry slot left");
		gw_cold_free(c, 0);
		return r ? r : -ENOSPC;
	}
	o->archive = true;
	o->archive_keep_ms = (int64_t)(cfg->archive_keep_local * 1000);
	o->fetch = gw_archive_fetch;
	o->fetch_ctx = c->arch;
	/* Profiles (opened before the store) go the same way. */
	c->profiles = a->profiles;
	if (c->profiles)
		gw_profstore_set_archive(c->profiles, o->archive_keep_ms,
					 gw_archive_fetch, c->arch);
	*out = c;
	return 0;
}

int gw_cold_start(struct gw_cold *c, struct gw_store *s, char *err,
		  size_t errlen)
{
	struct gw_worker_opts wo = {
		.name = "gw-arch-metrics",
		.round = publish_round,
		.period = 1.0,
	};
	int r;

	if (!c)
		return 0;
	wo.arg = c;
	wo.table = c->workers;
	gw_archive_set_store(c->arch, s);
	gw_archive_set_profiles(c->arch, c->profiles);
	r = gw_archive_start(c->arch);
	if (!r)
		r = gw_worker_start(&wo, &c->w);
	if (r)
		snprintf(err, errlen, "archive: %s", strerror(-r));
	return r;
}

void gw_cold_free(struct gw_cold *c, double deadline)
{
	if (!c)
		return;
	if (c->w && gw_worker_stop(c->w, deadline)) {
		gw_warn("archive: the metrics thread did not stop");
		return;
	}
	gw_worker_free(c->w);
	gw_archive_free(c->arch, deadline);
	gw_snap_release(&c->snap);
	free(c);
}
