/* SPDX-License-Identifier: MIT */
#include "core/remote.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/worker.h"
#include "core/agent.h"
#include "export/rw.h"
#include "export/rw_queue.h"
#include "export/rw_sink.h"
#include "query/promql.h"
#include "store/store.h"

struct gw_remote {
	struct gw_rw_config *cfg;
	size_t n;
	struct gw_rw_sink **sink;
	struct gw_rw_queue **q;
	bool admin_push;
	/* "gw-rw-metrics": every queue's and endpoint's metrics each
	 * second, also while a queue's thread waits in a send. */
	struct gw_registry *reg;
	int slot;
	struct gw_snap snap;
	struct gw_worker *w;
};

static double publish_round(struct gw_worker *w, void *arg)
{
	struct gw_remote *x = arg;

	(void)w;
	gw_snap_reset(&x->snap);
	for (size_t i = 0; i < x->n; i++)
		if (x->q[i])
			gw_rw_queue_publish(x->q[i], &x->snap);
	gw_registry_publish(x->reg, x->slot, &x->snap);
	return GW_WORKER_PERIOD;
}

static int build_endpoints(const struct gw_config *c, struct gw_rw_config **out,
			   char *err, size_t errlen)
{
	return gw_config_remote_write(c, out, err, errlen);
}

int gw_remote_check(const struct gw_config *c, char *err, size_t errlen)
{
	struct gw_rw_config *rc = NULL;
	unsigned int outs;
	int r;

	if (strcmp(c->rw_policy, "rollup") != 0 &&
	    strcmp(c->rw_policy, "raw") != 0) {
		snprintf(err, errlen,
			 "--remote-write-policy: '%s' is not rollup or raw",
			 c->rw_policy);
		return -EINVAL;
	}
	if (strcmp(c->rw_process_rollups, "all") != 0 &&
	    gw_rw_outs_parse(c->rw_process_rollups, &outs)) {
		snprintf(err, errlen,
			 "--remote-write-process-rollups: '%s' is not all or a "
			 "list of avg, min, max, stddev, count_samples",
			 c->rw_process_rollups);
		return -EINVAL;
	}
	if (strcmp(c->rw_rollups, "all") != 0 &&
	    gw_rw_outs_parse(c->rw_rollups, &outs)) {
		snprintf(err, errlen,
			 "--remote-write-rollups: '%s' is not all or a "
			 "list of avg, min, max, stddev, count_samples",
			 c->rw_rollups);
		return -EINVAL;
	}
	if (strcmp(c->rw_state_rollups, "all") != 0 &&
	    gw_rw_outs_parse(c->rw_state_rollups, &outs)) {
		snprintf(err, errlen,
			 "--remote-write-state-rollups: '%s' is not all or a "
			 "list of avg, min, max, stddev, count_samples",
			 c->rw_state_rollups);
		return -EINVAL;
	}
	{
		char buf[sizeof(c->rw_without)];
		const char *names[GW_RW_QUEUE_MAX_WITHOUT];
		size_t n;

		if (gw_rw_without_parse(c->rw_without, buf, sizeof(buf), names,
					&n)) {
			snprintf(err, errlen,
				 "--remote-write-without: '%s' is not none or "
				 "a list of at most %d label names",
				 c->rw_without, GW_RW_QUEUE_MAX_WITHOUT);
			return -EINVAL;
		}
		if (gw_rw_without_parse(c->rw_sum_without, buf, sizeof(buf),
					names, &n)) {
			snprintf(err, errlen,
				 "--remote-write-sum-without: '%s' is not none "
				 "or a list of at most %d label names",
				 c->rw_sum_without, GW_RW_QUEUE_MAX_WITHOUT);
			return -EINVAL;
		}
	}
	if (strcmp(c->rw_admin_push, "on") != 0 &&
	    strcmp(c->rw_admin_push, "off") != 0) {
		snprintf(err, errlen,
			 "--remote-write-admin-push: '%s' is not on or off",
			 c->rw_admin_push);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < c->rw_raw.n; i++) {
		struct gw_promql_error perr;
		struct gw_matcher *m;
		size_t nm;

		if (i >= GW_RW_QUEUE_MAX_RAW) {
			snprintf(err, errlen,
				 "--remote-write-raw: at most %d selectors",
				 GW_RW_QUEUE_MAX_RAW);
			return -EINVAL;
		}
		memset(&perr, 0, sizeof(perr));
		r = gw_promql_parse_selector(c->rw_raw.v[i], &m, &nm, &perr);
		if (r) {
			perr.msg[sizeof(perr.msg) - 1] = '\0';
			snprintf(err, errlen, "--remote-write-raw %s: %s",
				 c->rw_raw.v[i],
				 perr.msg[0] ? perr.msg : strerror(-r));
			return -EINVAL;
		}
		gw_matchers_free(m, nm);
	}
	for (unsigned int i = 0; i < c->external_labels.n; i++) {
		const char *s = c->external_labels.v[i], *eq = strchr(s, '=');

		if (!eq || eq == s || !eq[1]) {
			snprintf(err, errlen,
				 "--external-label %s: expected NAME=VALUE", s);
			return -EINVAL;
		}
	}
	r = build_endpoints(c, &rc, err, errlen);
	gw_rw_config_free(rc);
	return r;
}

/* DIR/remote_write/NAME.state, NAME kept to [A-Za-z0-9._-]. */
static int state_path(const char *dir, const char *name, char *out, size_t len)
{
	char safe[128];
	size_t i;

	for (i = 0; name[i] && i < sizeof(safe) - 1; i++)
		safe[i] = (strchr("._-", name[i]) ||
			   (name[i] >= '0' && name[i] <= '9') ||
			   ((name[i] | 32) >= 'a' && (name[i] | 32) <= 'z'))
				  ? name[i]
				  : '_';
	safe[i] = '\0';
	if ((size_t)snprintf(out, len, "%s/remote_write", dir) >= len)
		return -ENAMETOOLONG;
	if (mkdir(out, 0750) < 0 && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(out, len, "%s/remote_write/%s.state", dir, safe) >=
	    len)
		return -ENAMETOOLONG;
	return 0;
}

int gw_remote_start(struct gw_agent *a, struct gw_remote **out, char *err,
		    size_t errlen)
{
	const struct gw_config *c = &a->cfg;
	const char *ext[GW_CONFIG_LIST_MAX + 1], *raw[GW_CONFIG_LIST_MAX];
	char host[256], inst[300], path[PATH_MAX];
	struct gw_remote *x;
	size_t next = 0;
	bool has_instance = false;
	int r;

	*out = NULL;
	if (!c->remote_write.urls.n && !c->remote_write.yaml[0])
		return 0;
	if (!a->store) {
		gw_warn("remote_write: endpoints configured but nothing is "
			"sent: the queue reads the local store (--no-store is "
			"set)");
		return 0;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		goto nomem;
	gw_snap_init(&x->snap);
	x->reg = a->reg;
	x->slot = gw_registry_slot(a->reg, "remote_write");
	if (x->slot < 0) {
		r = x->slot;
		snprintf(err, errlen, "remote_write: no registry slot left");
		goto fail;
	}
	r = build_endpoints(c, &x->cfg, err, errlen);
	if (r)
		goto fail;
	x->n = gw_rw_config_count(x->cfg);
	x->sink = calloc(x->n ? x->n : 1, sizeof(*x->sink));
	x->q = calloc(x->n ? x->n : 1, sizeof(*x->q));
	if (!x->sink || !x->q)
		goto nomem;
	/* --remote-write-admin-push on is the old spelling of
	 * --web.enable-admin-api; the HTTP layer refuses the admin API when
	 * neither is on. */
	x->admin_push = strcmp(c->rw_admin_push, "on") == 0 || c->web_admin;
	for (unsigned int i = 0; i < c->external_labels.n; i++) {
		ext[next++] = c->external_labels.v[i];
		has_instance |=
			strncmp(c->external_labels.v[i], "instance=", 9) == 0;
	}
	if (!has_instance) {
		if (gethostname(host, sizeof(host)) < 0 || !host[0])
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(inst, sizeof(inst), "instance=%s", host);
		ext[next++] = inst;
	}
	for (unsigned int i = 0; i < c->rw_raw.n; i++)
		raw[i] = c->rw_raw.v[i];
	for (size_t i = 0; i < x->n; i++) {
		struct gw_rw_endpoint *ep = gw_rw_config_endpoint(x->cfg, i);
		const struct gw_rw_queue_config *qc = gw_rw_endpoint_queue(ep);
		char without_buf[sizeof(c->rw_without)];
		char sum_buf[sizeof(c->rw_sum_without)];
		const char *without[GW_RW_QUEUE_MAX_WITHOUT];
		const char *sum_without[GW_RW_QUEUE_MAX_WITHOUT];
		struct gw_rw_queue_opts o = {
			.sz = sizeof(o),
			.name = gw_rw_endpoint_name(ep),
			.url = gw_rw_endpoint_url(ep),
			.state_path = path,
			.q = gw_store_queryable(a->store),
			.policy = strcmp(gw_rw_endpoint_policy(ep)
						 ? gw_rw_endpoint_policy(ep)
						 : c->rw_policy,
					 "raw") == 0
					  ? GW_RW_POLICY_RAW
					  : GW_RW_POLICY_ROLLUP,
			.external = ext,
			.nexternal = next,
			.raw = raw,
			.nraw = c->rw_raw.n,
			.max_samples_per_send = qc->max_samples_per_send,
			.batch_send_deadline_ms =
				(int64_t)(qc->batch_send_deadline * 1000),
			.heartbeat_ms =
				c->rw_heartbeat > 0
					? (int64_t)(c->rw_heartbeat * 1000)
					: -1,
			.max_lag_ms = (int64_t)(c->rw_max_lag * 1000),
			.retention_ms = { (int64_t)(c->retention_raw * 1000),
					  (int64_t)(c->retention_1m * 1000),
					  (int64_t)(c->retention_1h * 1000) },
			.events = c->rw_events != 0,
			.event_before_ms = (int64_t)(c->rw_event_window * 1000),
			.event_after_ms = (int64_t)(c->rw_event_window * 1000),
			.anomaly_threshold = c->rw_anomaly_threshold,
			.workers = a->workers,
			.precision = c->rw_precision,
			.stddev_precision = c->rw_stddev_precision,
		};

		if (strcmp(c->rw_process_rollups, "all") != 0 &&
		    gw_rw_outs_parse(c->rw_process_rollups, &o.process_outputs))
			o.process_outputs = 0; /* checked before: not reached */
		if (strcmp(c->rw_rollups, "all") != 0 &&
		    gw_rw_outs_parse(c->rw_rollups, &o.outputs))
			o.outputs = 0; /* (the same) */
		if (strcmp(c->rw_state_rollups, "all") != 0 &&
		    gw_rw_outs_parse(c->rw_state_rollups, &o.state_outputs))
			o.state_outputs = 0; /* (the same) */
		if (gw_rw_without_parse(c->rw_without, without_buf,
					sizeof(without_buf), without,
					&o.nwithout))
			o.nwithout = 0; /* (the same) */
		o.without = without;
		if (gw_rw_without_parse(c->rw_sum_without, sum_buf,
					sizeof(sum_buf), sum_without,
					&o.nsum_without))
			o.nsum_without = 0; /* (the same) */
		o.sum_without = sum_without;

		r = state_path(c->data_dir, o.name, path, sizeof(path));
		if (r) {
			snprintf(err, errlen,
				 "remote_write %s: cannot create %s/"
				 "remote_write: %s",
				 o.name, c->data_dir, strerror(-r));
			goto fail;
		}
		r = gw_rw_sink_new(ep, &x->sink[i]);
		if (r) {
			snprintf(err, errlen, "remote_write %s: %s", o.name,
				 strerror(-r));
			goto fail;
		}
		o.sink = gw_rw_sink_of(x->sink[i]);
		r = gw_rw_queue_new(&o, &x->q[i], err, errlen);
		if (r)
			goto fail;
		r = gw_rw_queue_start(x->q[i], (unsigned int)i);
		if (r) {
			snprintf(err, errlen, "remote_write %s: %s", o.name,
				 strerror(-r));
			goto fail;
		}
		gw_info("remote_write %s: pushing to %s (policy %s%s)", o.name,
			o.url, o.policy == GW_RW_POLICY_RAW ? "raw" : "rollup",
			c->rw_raw.n ? ", raw selectors" : "");
	}
	{
		struct gw_worker_opts wo = {
			.name = "gw-rw-metrics",
			.round = publish_round,
			.arg = x,
			.period = 1.0,
			.table = a->workers,
		};

		r = gw_worker_start(&wo, &x->w);
		if (r) {
			snprintf(err, errlen, "remote_write: %s", strerror(-r));
			goto fail;
		}
	}
	*out = x;
	return 0;
nomem:
	r = -ENOMEM;
	snprintf(err, errlen, "remote_write: %s", strerror(ENOMEM));
fail:
	gw_remote_free(x, gw_now_mono() + 1.0);
	return r;
}

/* POST /api/v1/admin/push: every queue gets the push. */
static int push(void *ctx, const struct gw_matcher *const *sets,
		const size_t *nm, size_t nsets, int64_t start_ms,
		int64_t end_ms)
{
	struct gw_remote *x = ctx;
	int n = 0, last = -ENODEV;

	for (size_t i = 0; i < x->n; i++) {
		int r = gw_rw_queue_push(x->q[i], sets, nm, nsets, start_ms,
					 end_ms, GW_RW_PUSH_REQUEST);

		if (r == 0)
			n++;
		else
			last = r;
	}
	return n ? n : last;
}

void gw_remote_api(struct gw_remote *x, struct gw_api_opts *o)
{
	if (!x || !x->admin_push)
		return;
	o->push = push;
	o->push_ctx = x;
}

void gw_remote_request_stop(struct gw_remote *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++)
		gw_rw_queue_request_stop(x->q[i]);
}

void gw_remote_free(struct gw_remote *x, double deadline)
{
	bool stuck = false;

	if (!x)
		return;
	gw_remote_request_stop(x);
	if (x->w && gw_worker_stop(x->w, deadline)) {
		gw_warn("remote_write: the metrics thread did not stop");
		return;
	}
	gw_worker_free(x->w);
	x->w = NULL;
	for (size_t i = 0; x->q && i < x->n; i++) {
		if (x->q[i] && gw_rw_queue_stop(x->q[i], deadline)) {
			gw_warn("remote_write: a queue did not stop in time; "
				"leaving it behind");
			stuck = true;
		}
	}
	if (stuck)
		return; /* its thread may still use the endpoint and sink */
	for (size_t i = 0; x->q && i < x->n; i++) {
		gw_rw_queue_free(x->q[i]);
		gw_rw_sink_free(x->sink[i]);
	}
	gw_rw_config_free(x->cfg);
	gw_snap_release(&x->snap);
	free(x->q);
	free(x->sink);
	free(x);
}
