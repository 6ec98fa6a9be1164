/* SPDX-License-Identifier: MIT */
/*
 * cold.h - the agent's cold tier: --archive-* settings into an archive
 * (export/archive.h) that uploads the store's closed days and fetches them
 * back for queries, and a thread publishing its metrics every second.
 *
 * The agent's profile store (a->profiles, opened before) is archived too:
 * gw_cold_new() gives it the fetch hook and the local retention.
 *
 * Order: gw_cold_new() before the store opens (it fills the store's
 * archive options and fetch hook), gw_cold_start() once it is open,
 * gw_cold_free() before it closes.
 */
#ifndef GW_CORE_COLD_H
#define GW_CORE_COLD_H

#include <stddef.h>

#include "core/config.h"
#include "store/store.h"

struct gw_agent;
struct gw_cold;

/* Checks the --archive-* settings (and that credentials are there): 0 or
 * -EINVAL with a message. */
__attribute__((warn_unused_result)) int gw_cold_check(const struct gw_config *c,
						      char *err, size_t errlen);

/* *out NULL when --archive-url is not set. */
__attribute__((warn_unused_result)) int gw_cold_new(struct gw_agent *a,
						    struct gw_store_opts *o,
						    struct gw_cold **out,
						    char *err, size_t errlen);
__attribute__((warn_unused_result)) int
gw_cold_start(struct gw_cold *c, struct gw_store *s, char *err, size_t errlen);
void gw_cold_free(struct gw_cold *c, double deadline);

#endif
