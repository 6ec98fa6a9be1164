/* SPDX-License-Identifier: MIT */
#include "core/alerting.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "core/agent.h"
#include "export/am_sink.h"
#include "store/store.h"

struct gw_alerting {
	struct gw_alerts *al;
	struct gw_am *am; /* NULL: no --alertmanager */
	struct gw_alerts_sink sink;
	size_t nrules, ngroups;
};

static int load_config_rules(const struct gw_config *c, struct gw_ruleset *rs,
			     char *err, size_t errlen)
{
	_Static_assert(sizeof(c->rule_files.v[0]) == 1024,
		       "gw_rules_load_all takes 1024-byte names");
	return gw_rules_load_all(rs, c->default_rules != 0,
				 (const char(*)[1024])c->rule_files.v,
				 c->rule_files.n, err, errlen);
}

int gw_alerting_new(const struct gw_config *c, struct gw_alerting **out,
		    char *err, size_t errlen)
{
	struct gw_alerts_opts o = { .sz = sizeof(o) };
	struct gw_alerting *x;
	struct gw_ruleset rs;
	int r;

	*out = NULL;
	r = load_config_rules(c, &rs, err, errlen);
	if (r)
		return r;
	x = calloc(1, sizeof(*x));
	if (!x) {
		gw_ruleset_release(&rs);
		snprintf(err, errlen, "alert rules: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	x->nrules = rs.nrules;
	x->ngroups = rs.ngroups;
	o.interval_ms = (int64_t)(c->rule_interval * 1000);
	o.resend_ms = (int64_t)(c->alert_resend * 1000);
	o.max_samples = c->query_max_samples;
	o.query_timeout = c->query_timeout;
	r = gw_alerts_new(&o, &rs, &x->al);
	if (r) {
		snprintf(err, errlen, "alert rules: %s", strerror(-r));
		free(x);
		return r;
	}
	*out = x;
	return 0;
}

struct gw_alerts *gw_alerting_alerts(struct gw_alerting *x)
{
	return x ? x->al : NULL;
}

int gw_alerting_start(struct gw_alerting *x, struct gw_agent *a)
{
	const struct gw_config *c = &a->cfg;
	int r;

	if (!x)
		return 0;
	r = gw_alerts_attach(x->al, a->reg, NULL, NULL);
	if (r)
		return r;
	if (!a->store) {
		if (x->nrules)
			gw_warn("rules: %zu alert rules loaded but not "
				"evaluated: rules need the local store "
				"(--no-store is set)",
				x->nrules);
		return 0;
	}
	if (c->alertmanagers.n) {
		const char *urls[GW_CONFIG_LIST_MAX];
		struct gw_am_opts ao = { .sz = sizeof(ao),
					 .workers = a->workers };

		for (unsigned int i = 0; i < c->alertmanagers.n; i++)
			urls[i] = c->alertmanagers.v[i];
		r = gw_am_new(urls, c->alertmanagers.n, &ao, &x->am);
		if (r) {
			gw_err("alertmanager: %s", strerror(-r));
			return r;
		}
		gw_am_sink_init(&x->sink, x->am);
	}
	r = gw_alerts_attach(x->al, NULL, gw_store_queryable(a->store),
			     x->am ? &x->sink : NULL);
	if (r)
		return r;
	gw_info("rules: %zu alert rules in %zu groups, evaluated every %gs%s",
		x->nrules, x->ngroups, c->rule_interval,
		c->alertmanagers.n ? ", sent to the Alertmanager" : "");
	return gw_alerts_start(x->al, a->workers);
}

void gw_alerting_reload(struct gw_alerting *x, const struct gw_config *c)
{
	char err[GW_RULES_ERR_MAX];
	struct gw_ruleset rs;

	if (!x)
		return;
	gw_alerts_set_intervals(x->al, (int64_t)(c->rule_interval * 1000),
				(int64_t)(c->alert_resend * 1000));
	if (load_config_rules(c, &rs, err, sizeof(err))) {
		gw_err("reload: keeping the running alert rules: %s", err);
		return;
	}
	gw_info("reload: %zu alert rules in %zu groups", rs.nrules, rs.ngroups);
	x->nrules = rs.nrules;
	x->ngroups = rs.ngroups;
	gw_alerts_set_rules(x->al, &rs);
}

void gw_alerting_free(struct gw_alerting *x, double deadline)
{
	if (!x)
		return;
	gw_alerts_stop(x->al);
	gw_am_free(x->am, deadline);
	gw_alerts_free(x->al);
	free(x);
}
