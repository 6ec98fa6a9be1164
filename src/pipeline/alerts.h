/* SPDX-License-Identifier: MIT */
/*
 * alerts.h - the alert rule evaluator: every interval each rule's expr is
 * evaluated as an instant query at "now" against the store's queryable;
 * each output series is an alert instance whose labels are the series'
 * labels (without __name__) + the rule's labels (templates expanded) +
 * alertname.
 *
 * Lifecycle of one instance (a check: check_alert() in alerts.c)
 *
 *            seen, for > 0             active >= for
 *   (none) ----------------> PENDING -----------------> FIRING
 *      |   seen, for = 0        | not seen                 | not seen
 *      +------------------------|------------------------->+
 *                               v                          v
 *                            (none)                     RESOLVED --15 min--> (none)
 *
 * A resolved instance seen again starts anew as pending.  A rule whose
 * query fails keeps its instances as they are (health "err").
 *
 * Delivery (to a sink, struct gw_alerts_sink: export/am_sink.c hands
 * alerts to the Alertmanager client): an instance is handed over when it
 * starts firing, then every resend interval while it fires (endsAt = now +
 * 4 x resend), and once when it resolves (endsAt = when it resolved).
 *
 * Published into the registry (so the store keeps alert history):
 * ALERTS{alertname,alertstate,...} 1 and ALERTS_FOR_STATE{alertname,...}
 * = activeAt in seconds, for pending and firing instances; self metrics
 * gpuwatch_rules_evaluations_total, gpuwatch_rules_evaluation_failures_total
 * {group,rule}, gpuwatch_rules_last_evaluation_seconds, gpuwatch_rules,
 * gpuwatch_alerts{state}, and what the sink adds (the Alertmanager
 * client's gpuwatch_alertmanager_*{url}).
 *
 * Errors: 0 or -errno.  Ownership: a rule set handed over is taken (the
 * caller's struct is emptied).  Thread safety: gw_alerts_eval runs on one
 * thread at a time (the "gw-rules" thread once started); gw_alerts_json,
 * gw_alerts_set_rules and gw_alerts_set_intervals may be called from any
 * thread.
 */
#ifndef GW_ALERTS_H
#define GW_ALERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "pipeline/metrics.h"
#include "pipeline/rules.h"
#include "store/query.h"

struct gw_worker_table;

#define GW_ALERTS_MAX_PER_RULE	   1000 /* instances; more fail the rule */
#define GW_ALERTS_KEEP_RESOLVED_MS (15 * 60 * 1000)

enum gw_alert_state {
	GW_ALERT_PENDING,
	GW_ALERT_FIRING,
	GW_ALERT_RESOLVED,
};

/* One alert handed to a sink; borrowed for the call. */
struct gw_alert_out {
	const char *labels;	 /* JSON object text: {"alertname":"X",...} */
	const char *annotations; /* JSON object text, "{}" when none */
	int64_t starts_ms;	 /* unix ms */
	int64_t ends_ms;	 /* unix ms: in the future while firing (now +
				  * 4 x resend), when it resolved once resolved */
};

/* Where alerts go; implemented above this layer (export/am_sink.h). */
struct gw_alerts_sink {
	void *ctx;
	/* Queues copies; never blocks on the network. */
	void (*send)(void *ctx, const struct gw_alert_out *v, size_t n);
	/* Optional: adds the sink's own metrics to the evaluator's. */
	void (*publish)(void *ctx, struct gw_snap *s);
};

/* Size-tagged: sz = sizeof(struct gw_alerts_opts); zero = defaults. */
struct gw_alerts_opts {
	size_t sz;
	const struct gw_queryable *q; /* borrowed; NULL: nothing evaluates */
	struct gw_registry *reg;      /* borrowed; NULL: nothing published */
	const struct gw_alerts_sink *sink; /* borrowed; NULL: no delivery */
	int64_t interval_ms;		   /* groups without interval; 10 s */
	int64_t resend_ms;		   /* 60 s */
	int64_t keep_resolved_ms;	   /* 15 min */
	int64_t lookback_ms;		   /* instant selectors; 5 min */
	uint64_t max_samples;		   /* per query; 0: 50,000,000 */
	double query_timeout;		   /* seconds per query; 0: 30 */
};

struct gw_alerts;

/* rules is taken.  -ENOMEM, -ENOSPC (no registry slot). */
__attribute__((warn_unused_result)) int
gw_alerts_new(const struct gw_alerts_opts *o, struct gw_ruleset *rules,
	      struct gw_alerts **out);
/* Stops the thread if started.  NULL is a no-op. */
void gw_alerts_free(struct gw_alerts *al);

/* Replaces the rules at the next evaluation (taken).  Instances of a rule
 * with the same group, name and expression carry over. */
void gw_alerts_set_rules(struct gw_alerts *al, struct gw_ruleset *rules);

/* Replaces the evaluation interval of groups without their own and the
 * resend interval at the next evaluation; 0 keeps one as it is. */
void gw_alerts_set_intervals(struct gw_alerts *al, int64_t interval_ms,
			     int64_t resend_ms);

/* Evaluates every group due at now_ms (unix ms), updates the instances,
 * publishes and delivers.  Returns the rules that failed. */
unsigned int gw_alerts_eval(struct gw_alerts *al, int64_t now_ms);

/* Starts the "gw-rules" thread (a common/worker.h worker, listed in
 * workers unless NULL): gw_alerts_eval at the wall clock, each second or
 * each interval whichever is shorter.  -EAGAIN etc. */
__attribute__((warn_unused_result)) int
gw_alerts_start(struct gw_alerts *al, struct gw_worker_table *workers);
/* Asks the thread to end and waits for it (evaluations are bounded by
 * the query timeout). */
void gw_alerts_stop(struct gw_alerts *al);

struct gw_alerts_counts {
	size_t rules, pending, firing, resolved;
};
void gw_alerts_counts(struct gw_alerts *al, struct gw_alerts_counts *c);

/*
 * The "data" of Prometheus' /api/v1/alerts ({"alerts":[...]}, pending and
 * firing, or resolved too with include_resolved, as state "resolved" with
 * "resolvedAt") or of /api/v1/rules ({"groups":[...]}).  al NULL gives the
 * empty answer.  Like gw_buf_put(), a failure (-ENOSPC, -ENOMEM) is kept in
 * out for gw_buf_error().
 */
void gw_alerts_json(struct gw_alerts *al, bool rules, bool include_resolved,
		    struct gw_buf *out);

/*
 * Connects what was not known when the rules were loaded (an agent checks
 * its rule files before it opens the store): the registry to publish into
 * (taken only if none was given), the history to query and the sink.
 * NULLs leave that part as it is.  Before gw_alerts_start().  0 or -ENOSPC
 * (no registry slot).
 */
__attribute__((warn_unused_result)) int
gw_alerts_attach(struct gw_alerts *al, struct gw_registry *reg,
		 const struct gw_queryable *q,
		 const struct gw_alerts_sink *sink);

#endif
