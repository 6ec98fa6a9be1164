/* SPDX-License-Identifier: MIT */
/*
 * alerts.c - the rule evaluator and the alert instances' state machine
 * (diagram in alerts.h), the ALERTS series, delivery and the JSON of
 * /api/v1/alerts and /api/v1/rules.
 *
 * Locking: the evaluating thread is the only writer of rules and
 * instances; it runs each query without the lock and takes the lock to
 * apply the result.  Readers (the HTTP API) take the lock.  A new rule set
 * (reload) waits in pending_rs until the next evaluation picks it up.
 */
#include "alerts.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/worker.h"
#include "pipeline/catalog.h"
#include "store/store.h"

#define DEFAULT_INTERVAL_MS 10000
#define DEFAULT_RESEND_MS   60000
#define DEFAULT_LOOKBACK_MS (5 * 60 * 1000)
#define DEFAULT_MAX_SAMPLES 50000000ull
#define DEFAULT_TIMEOUT	    30.0
#define JSON_MAX	    (64u << 20)
#define TEXT_MAX	    (64u << 10)

struct inst {
	char *key;		 /* canonical key of labels */
	struct gw_labels labels; /* alert labels, alertname included */
	char *ann_json;		 /* {"summary":"..."} */
	enum gw_alert_state state;
	int64_t active_at, fired_at, resolved_at, last_sent;
	bool resolved_sent;
	bool seen; /* in the current evaluation */
	double value;
};

struct rstate {
	struct inst *v;
	size_t n, cap;
	int health; /* 0 unknown, 1 ok, 2 err */
	char last_error[256];
	int64_t last_eval;
	double eval_s;
	uint64_t failures;
};

struct gstate {
	int64_t last_eval, next_due;
	double eval_s;
	/* Iterations missed because the group (or one before it in the same
	 * pass) ran past its interval, counted as Prometheus counts them, and
	 * the rate limit of the message that says so. */
	uint64_t missed, missed_unlogged;
	double missed_logged_s;
};

/* One overrun message per group per minute; the ones between are summed. */
#define MISSED_LOG_EVERY_S 60.0

struct gw_alerts {
	struct gw_alerts_opts o;
	struct gw_ruleset rs;
	struct rstate *rst;
	struct gstate *gst;

	pthread_mutex_t lock;
	struct gw_ruleset pending_rs;
	bool have_pending;
	int64_t pending_interval_ms, pending_resend_ms; /* 0: none */

	/* registry */
	int slot;
	struct gw_snap snap;
	uint64_t evaluations;
	double last_pass_s;

	/* thread: w under lock (set_rules wakes it from any thread); stop
	 * cancels a query in flight */
	struct gw_worker *w;
	_Atomic bool stop;

	/* what gw_alerts_attach() connected */
	struct gw_queryable q;
};

static const char *const state_names[] = { "pending", "firing", "resolved" };

/* ---- instances ---- */

static void inst_release(struct inst *i)
{
	free(i->key);
	gw_labels_release(&i->labels);
	free(i->ann_json);
	memset(i, 0, sizeof(*i));
}

static void rstate_release(struct rstate *r)
{
	for (size_t i = 0; i < r->n; i++)
		inst_release(&r->v[i]);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* The state machine's invariants (alerts.h). */
static bool check_alert(const struct inst *i)
{
	switch (i->state) {
	case GW_ALERT_PENDING:
		return i->fired_at == 0 && i->resolved_at == 0;
	case GW_ALERT_FIRING:
		return i->fired_at >= i->active_at && i->resolved_at == 0;
	case GW_ALERT_RESOLVED:
		return i->resolved_at >= i->fired_at && i->fired_at > 0;
	}
	return false;
}

static void free_states(struct gw_alerts *al)
{
	for (size_t i = 0; al->rst && i < al->rs.nrules; i++)
		rstate_release(&al->rst[i]);
	free(al->rst);
	free(al->gst);
	al->rst = NULL;
	al->gst = NULL;
}

/*
 * Installs rs (taken) with fresh states, moving the instances of rules
 * that are the same (group, name, expr) from the old set.  Under the lock.
 */
static int install_rules(struct gw_alerts *al, struct gw_ruleset *rs)
{
	struct rstate *rst = calloc(rs->nrules ? rs->nrules : 1, sizeof(*rst));
	struct gstate *gst =
		calloc(rs->ngroups ? rs->ngroups : 1, sizeof(*gst));

	if (!rst || !gst) {
		free(rst);
		free(gst);
		gw_ruleset_release(rs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rs->nrules; i++) {
		const struct gw_rule *nr = &rs->rules[i];
		const struct gw_rule_group *ng = &rs->groups[nr->group];

		for (size_t j = 0; al->rst && j < al->rs.nrules; j++) {
			const struct gw_rule * or = &al->rs.rules[j];
			const struct gw_rule_group *og =
				&al->rs.groups[or->group];

			if (al->rst[j].v && strcmp(or->alert, nr->alert) == 0 &&
			    strcmp(or->expr, nr->expr) == 0 &&
			    strcmp(og->name, ng->name) == 0 &&
			    strcmp(og->file, ng->file) == 0) {
				rst[i] = al->rst[j];
				memset(&al->rst[j], 0, sizeof(al->rst[j]));
				break;
			}
		}
	}
	for (size_t g = 0; g < rs->ngroups; g++)
		for (size_t j = 0; al->gst && j < al->rs.ngroups; j++)
			if (strcmp(rs->groups[g].name, al->rs.groups[j].name) ==
				    0 &&
			    strcmp(rs->groups[g].file, al->rs.groups[j].file) ==
				    0) {
				gst[g].missed = al->gst[j].missed;
				gst[g].missed_logged_s =
					al->gst[j].missed_logged_s;
				break;
			}
	free_states(al);
	gw_ruleset_release(&al->rs);
	al->rs = *rs;
	memset(rs, 0, sizeof(*rs));
	al->rst = rst;
	al->gst = gst;
	return 0;
}

/* ---- formatting ---- */

static void fmt_time(struct gw_buf *b, int64_t ms)
{
	struct tm tm;
	time_t t;

	if (ms <= 0) {
		gw_buf_puts(b, "\"0001-01-01T00:00:00Z\"");
		return;
	}
	t = (time_t)(ms / 1000);
	if (!gmtime_r(&t, &tm)) {
		gw_buf_puts(b, "\"0001-01-01T00:00:00Z\"");
		return;
	}
	gw_buf_putf(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Go's strconv.FormatFloat(v, 'e', -1, 64), as Prometheus writes values. */
static void fmt_value_e(struct gw_buf *b, double v)
{
	char s[40];

	if (isnan(v)) {
		gw_buf_puts(b, "\"NaN\"");
		return;
	}
	if (isinf(v)) {
		gw_buf_puts(b, v > 0 ? "\"+Inf\"" : "\"-Inf\"");
		return;
	}
	for (int p = 0; p < 17; p++) {
		snprintf(s, sizeof(s), "%.*e", p, v);
		if (strtod(s, NULL) == v)
			break;
	}
	gw_buf_putf(b, "\"%s\"", s);
}

static void pairs_json(struct gw_buf *b, const struct gw_rule_pair *v, size_t n)
{
	gw_buf_puts(b, "{");
	for (size_t i = 0; i < n; i++) {
		gw_buf_puts(b, i ? "," : "");
		gw_json_str(b, v[i].name);
		gw_buf_puts(b, ":");
		gw_json_str(b, v[i].text);
	}
	gw_buf_puts(b, "}");
}

/* ---- one rule ---- */

static struct inst *find_inst(struct rstate *st, const char *key)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->v[i].key, key) == 0)
			return &st->v[i];
	return NULL;
}

/* An evaluated series: labels and the annotation JSON of its instance. */
struct sample {
	struct gw_labels labels;
	char *key;
	char *ann_json;
	double value;
};

static void samples_free(struct sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		gw_labels_release(&s[i].labels);
		free(s[i].key);
		free(s[i].ann_json);
	}
	free(s);
}

/* Builds the alert labels and annotations of one output series. */
static int make_sample(const struct gw_rule *ru, const struct gw_labels *sl,
		       double value, struct sample *out)
{
	struct gw_label pairs[GW_LABELS_MAX + GW_RULES_MAX_PAIRS + 1];
	struct gw_buf text[GW_RULES_MAX_PAIRS], b;
	size_t n = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->value = value;
	for (size_t i = 0; i < ru->nlabels; i++)
		gw_buf_init(&text[i], TEXT_MAX);
	for (size_t i = 0; sl && i < sl->n && n < GW_LABELS_MAX; i++) {
		bool overridden = strcmp(sl->v[i].name, "__name__") == 0 ||
				  strcmp(sl->v[i].name, "alertname") == 0;

		for (size_t j = 0; !overridden && j < ru->nlabels; j++)
			overridden =
				strcmp(ru->labels[j].name, sl->v[i].name) == 0;
		if (!overridden)
			pairs[n++] = sl->v[i];
	}
	for (size_t i = 0; i < ru->nlabels; i++) {
		if (strcmp(ru->labels[i].name, "alertname") == 0)
			continue;
		r = gw_tmpl_expand(&ru->labels[i].t, sl, value, &text[i]);
		if (r)
			goto out;
		pairs[n].name = ru->labels[i].name;
		pairs[n].value = text[i].p ? text[i].p : "";
		n++;
	}
	pairs[n].name = "alertname";
	pairs[n].value = ru->alert;
	n++;
	r = gw_labels_from(&out->labels, pairs, n);
	if (r)
		goto out;
	gw_buf_init(&b, TEXT_MAX * 4);
	r = gw_labels_key(&out->labels, &b);
	out->key = r ? NULL : gw_buf_detach(&b, NULL);
	gw_buf_release(&b);
	if (!r && !out->key)
		r = -ENOMEM;
	if (r)
		goto out;
	gw_buf_init(&b, TEXT_MAX * 4);
	gw_buf_puts(&b, "{");
	for (size_t i = 0; i < ru->nann && !gw_buf_error(&b); i++) {
		struct gw_buf t;

		gw_buf_puts(&b, i ? "," : "");
		gw_json_str(&b, ru->ann[i].name);
		gw_buf_puts(&b, ":");
		gw_buf_init(&t, TEXT_MAX);
		gw_buf_set_error(&b, gw_tmpl_expand(&ru->ann[i].t, &out->labels,
						    value, &t));
		gw_json_str(&b, t.p ? t.p : "");
		gw_buf_release(&t);
	}
	gw_buf_puts(&b, "}");
	r = gw_buf_error(&b);
	out->ann_json = r ? NULL : gw_buf_detach(&b, NULL);
	gw_buf_release(&b);
	if (!r && !out->ann_json)
		r = -ENOMEM;
out:
	for (size_t i = 0; i < ru->nlabels; i++)
		gw_buf_release(&text[i]);
	return r;
}

/* Runs the query of rule ru at now: its output series as samples. */
static int query_rule(struct gw_alerts *al, const struct gw_rule *ru,
		      int64_t now, struct sample **out, size_t *nout, char *err,
		      size_t errlen)
{
	struct gw_promql_opts po = {
		.lookback_ms = al->o.lookback_ms,
		.max_samples = al->o.max_samples,
		.timeout_ns = (uint64_t)(al->o.query_timeout * 1e9),
		.cancel = &al->stop,
	};
	struct gw_qresult res;
	struct sample *s = NULL;
	size_t n = 0;
	int r;

	memset(&res, 0, sizeof(res));
	*out = NULL;
	*nout = 0;
	r = gw_promql_eval_instant(ru->ast, al->o.q, now, &po, &res);
	if (r) {
		snprintf(err, errlen, "%s",
			 res.errmsg[0] ? res.errmsg : strerror(-r));
		gw_qresult_release(&res);
		return r;
	}
	if (res.type == GW_TYPE_SCALAR) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			r = -ENOMEM;
			goto fail;
		}
		n = 1;
		r = make_sample(ru, NULL, res.scalar.v, &s[0]);
	} else if (res.type == GW_TYPE_VECTOR) {
		if (res.nseries > GW_ALERTS_MAX_PER_RULE) {
			snprintf(err, errlen,
				 "the query gives %zu series, more than the "
				 "%d alerts a rule may have",
				 res.nseries, GW_ALERTS_MAX_PER_RULE);
			r = -E2BIG;
			goto fail;
		}
		s = calloc(res.nseries ? res.nseries : 1, sizeof(*s));
		if (!s) {
			r = -ENOMEM;
			goto fail;
		}
		for (size_t i = 0; !r && i < res.nseries; i++) {
			if (!res.series[i].n)
				continue;
			r = make_sample(ru, &res.series[i].labels,
					res.series[i].p[0].v, &s[n]);
			n++;
		}
	} else {
		snprintf(err, errlen, "rule result is not a vector or scalar");
		r = -EINVAL;
		goto fail;
	}
	if (r) {
		snprintf(err, errlen,
			 "cannot expand the rule's labels or "
			 "annotations: %s",
			 strerror(-r));
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(s[i].key, s[j].key) == 0) {
				snprintf(err, errlen,
					 "vector contains metrics with the "
					 "same labelset after applying alert "
					 "labels");
				r = -EINVAL;
				goto fail;
			}
	gw_qresult_release(&res);
	*out = s;
	*nout = n;
	return 0;
fail:
	gw_qresult_release(&res);
	samples_free(s, n);
	return r;
}

/* Applies one evaluation's samples to the rule's instances.  Locked. */
static int apply(struct gw_alerts *al, const struct gw_rule *ru,
		 struct rstate *st, struct sample *s, size_t n, int64_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < st->n; i++)
		st->v[i].seen = false;
	for (size_t i = 0; i < n; i++) {
		struct inst *in = find_inst(st, s[i].key);

		if (in && in->state == GW_ALERT_RESOLVED) {
			/* seen again after it resolved: a new episode */
			inst_release(in);
			*in = st->v[--st->n];
			in = NULL;
		}
		if (!in) {
			if (st->n == st->cap) {
				size_t cap = st->cap ? st->cap * 2 : 4;
				struct inst *v =
					realloc(st->v, cap * sizeof(*v));

				if (!v)
					return -ENOMEM;
				st->v = v;
				st->cap = cap;
			}
			in = &st->v[st->n++];
			memset(in, 0, sizeof(*in));
			in->key = s[i].key;
			in->labels = s[i].labels;
			s[i].key = NULL;
			memset(&s[i].labels, 0, sizeof(s[i].labels));
			in->state = GW_ALERT_PENDING;
			in->active_at = now;
		}
		free(in->ann_json);
		in->ann_json = s[i].ann_json;
		s[i].ann_json = NULL;
		in->value = s[i].value;
		in->seen = true;
	}
	/* not seen: pending ones go, firing ones resolve; old resolved go */
	for (size_t i = 0; i < st->n; i++) {
		struct inst *in = &st->v[i];
		bool drop = false;

		if (!in->seen) {
			if (in->state == GW_ALERT_PENDING) {
				drop = true;
			} else if (in->state == GW_ALERT_FIRING) {
				in->state = GW_ALERT_RESOLVED;
				in->resolved_at = now;
			} else if (now - in->resolved_at >=
					   al->o.keep_resolved_ms &&
				   (in->resolved_sent || !al->o.sink)) {
				drop = true;
			}
		} else if (in->state == GW_ALERT_PENDING &&
			   now - in->active_at >= ru->for_ms) {
			in->state = GW_ALERT_FIRING;
			in->fired_at =
				now > in->active_at ? now : in->active_at;
		}
		if (drop) {
			inst_release(in);
			continue;
		}
		if (!check_alert(in))
			gw_warn("rules: alert %s in an impossible state",
				in->key);
		if (k != i)
			st->v[k] = *in;
		k++;
	}
	st->n = k;
	return 0;
}

/* ---- delivery ---- */

static void deliver(struct gw_alerts *al, int64_t now)
{
	struct gw_alert_out batch[64];
	char *lab[64];
	size_t nb = 0;

	if (!al->o.sink)
		return;
	for (size_t r = 0; r < al->rs.nrules; r++) {
		struct rstate *st = &al->rst[r];

		for (size_t i = 0; i < st->n; i++) {
			struct inst *in = &st->v[i];
			struct gw_buf b;
			bool due;

			due = (in->state == GW_ALERT_FIRING &&
			       (in->last_sent == 0 ||
				now - in->last_sent >= al->o.resend_ms)) ||
			      (in->state == GW_ALERT_RESOLVED &&
			       !in->resolved_sent);
			if (!due)
				continue;
			gw_buf_init(&b, TEXT_MAX * 4);
			gw_labels_json(&in->labels, &b);
			if (gw_buf_error(&b) || !b.p) {
				gw_buf_release(&b);
				continue; /* retried next pass */
			}
			lab[nb] = gw_buf_detach(&b, NULL);
			batch[nb] = (struct gw_alert_out){
				.labels = lab[nb],
				.annotations =
					in->ann_json ? in->ann_json : "{}",
				.starts_ms = in->active_at,
				.ends_ms = in->state == GW_ALERT_RESOLVED
						   ? in->resolved_at
						   : now + 4 * al->o.resend_ms,
			};
			nb++;
			in->last_sent = now;
			if (in->state == GW_ALERT_RESOLVED)
				in->resolved_sent = true;
			if (nb == 64) {
				al->o.sink->send(al->o.sink->ctx, batch, nb);
				while (nb)
					free(lab[--nb]);
			}
		}
	}
	if (nb)
		al->o.sink->send(al->o.sink->ctx, batch, nb);
	while (nb)
		free(lab[--nb]);
}

/* ---- registry ---- */

static void publish(struct gw_alerts *al)
{
	struct gw_snap *s = &al->snap;
	struct gw_alerts_counts c;
	struct gw_buf b;

	if (!al->o.reg)
		return;
	gw_snap_reset(s);
	gw_buf_init(&b, TEXT_MAX * 4);
	memset(&c, 0, sizeof(c));
	c.rules = al->rs.nrules;
	for (size_t r = 0; r < al->rs.nrules; r++) {
		const struct gw_rule *ru = &al->rs.rules[r];
		const struct rstate *st = &al->rst[r];

		if (st->failures)
			gw_snap_add(s, GW_FAM(RULES_EVALUATION_FAILURES_TOTAL),
				    (double)st->failures, NULL, "group",
				    al->rs.groups[ru->group].name, "rule",
				    ru->alert, NULL);
		for (size_t i = 0; i < st->n; i++) {
			const struct inst *in = &st->v[i];

			c.pending += in->state == GW_ALERT_PENDING;
			c.firing += in->state == GW_ALERT_FIRING;
			c.resolved += in->state == GW_ALERT_RESOLVED;
			if (in->state == GW_ALERT_RESOLVED)
				continue;
			gw_buf_reset(&b);
			for (size_t j = 0; j < in->labels.n; j++) {
				const struct gw_label *l = &in->labels.v[j];

				if (j)
					gw_buf_puts(&b, ",");
				gw_buf_set_error(&b,
						 gw_labels_append(&b, l->name,
								  l->value));
			}
			if (gw_buf_error(&b))
				continue;
			gw_snap_add(s, GW_FAM(PROMETHEUS_ALERTS), 1,
				    b.p ? b.p : "", "alertstate",
				    state_names[in->state], NULL);
			gw_snap_add(s, GW_FAM(PROMETHEUS_ALERTS_FOR_STATE),
				    (double)in->active_at / 1000.0,
				    b.p ? b.p : "", NULL);
		}
	}
	gw_buf_release(&b);
	for (size_t g = 0; g < al->rs.ngroups; g++) {
		const struct gw_rule_group *gr = &al->rs.groups[g];
		char key[1024];

		/* rule_group as Prometheus writes it: "FILE;NAME" */
		snprintf(key, sizeof(key), "%s;%s", gr->file, gr->name);
		gw_snap_add(s, GW_FAM(RULE_GROUP_ITERATIONS_MISSED_TOTAL),
			    (double)al->gst[g].missed, NULL, "rule_group", key,
			    NULL);
	}
	gw_snap_add(s, GW_FAM(RULES_EVALUATIONS_TOTAL), (double)al->evaluations,
		    NULL, NULL);
	gw_snap_add(s, GW_FAM(RULES_LAST_EVALUATION_SECONDS), al->last_pass_s,
		    NULL, NULL);
	gw_snap_add(s, GW_FAM(RULES), (double)c.rules, NULL, NULL);
	gw_snap_add(s, GW_FAM(ALERTS), (double)c.pending, NULL, "state",
		    "pending", NULL);
	gw_snap_add(s, GW_FAM(ALERTS), (double)c.firing, NULL, "state",
		    "firing", NULL);
	if (al->o.sink && al->o.sink->publish)
		al->o.sink->publish(al->o.sink->ctx, s);
	gw_registry_publish(al->o.reg, al->slot, s);
}

/* ---- evaluation ---- */

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void take_pending(struct gw_alerts *al)
{
	pthread_mutex_lock(&al->lock);
	if (al->pending_interval_ms > 0)
		al->o.interval_ms = al->pending_interval_ms;
	if (al->pending_resend_ms > 0)
		al->o.resend_ms = al->pending_resend_ms;
	al->pending_interval_ms = al->pending_resend_ms = 0;
	if (al->have_pending) {
		al->have_pending = false;
		if (install_rules(al, &al->pending_rs))
			gw_err("rules: out of memory installing the new rules; "
			       "keeping the old ones");
	}
	pthread_mutex_unlock(&al->lock);
}

/*
 * Under the lock, after group gs (due at sched) finished at end: the
 * iterations it missed and the next due time.  Evaluations keep to the
 * grid sched + k * interval, and a missed iteration is, as in Prometheus,
 * a tick of the grid that got no evaluation: the ticks in (sched, end],
 * whether the group started late (a group before it was slow) or ran long
 * itself.  Where Prometheus would run one late catch-up evaluation at once
 * (and not count that tick), the next evaluation here is the first tick
 * after end: ours run at the wall clock, so a catch-up would only repeat
 * the one just done.  So a slow group skips ticks, counted, instead of
 * running back to back.
 */
static void overrun(const struct gw_rule_group *gr, struct gstate *gs,
		    int64_t sched, int64_t end, int64_t iv)
{
	int64_t ticks = end > sched ? (end - sched) / iv : 0;
	double t = mono_s();

	gs->next_due = sched + (ticks + 1) * iv;
	if (ticks < 1)
		return;
	gs->missed += (uint64_t)ticks;
	gs->missed_unlogged += (uint64_t)ticks;
	if (gs->missed_logged_s && t - gs->missed_logged_s < MISSED_LOG_EVERY_S)
		return;
	gw_warn("rules: group '%s' (%s) ended %.3gs after it was due, past "
		"its %.3gs interval: %" PRIu64 " iteration%s missed%s",
		gr->name, gr->file, (double)(end - sched) / 1e3,
		(double)iv / 1e3, gs->missed_unlogged,
		gs->missed_unlogged == 1 ? "" : "s",
		gs->missed_unlogged == (uint64_t)ticks
			? ""
			: " since the last message");
	gs->missed_unlogged = 0;
	gs->missed_logged_s = t;
}

unsigned int gw_alerts_eval(struct gw_alerts *al, int64_t now)
{
	unsigned int failed = 0;
	double t0 = mono_s();
	bool any = false;

	take_pending(al);
	if (!al->o.q)
		return 0;
	for (size_t g = 0; g < al->rs.ngroups; g++) {
		const struct gw_rule_group *gr = &al->rs.groups[g];
		struct gstate *gs = &al->gst[g];
		int64_t iv =
			gr->interval_ms ? gr->interval_ms : al->o.interval_ms;
		double g0 = mono_s();
		int64_t sched = gs->next_due ? gs->next_due : now;

		if (gs->next_due && now < gs->next_due)
			continue;
		any = true;
		for (size_t k = 0; k < gr->n; k++) {
			size_t ri = gr->first + k;
			const struct gw_rule *ru = &al->rs.rules[ri];
			struct rstate *st = &al->rst[ri];
			char err[256] = "";
			struct sample *s;
			size_t n;
			double r0 = mono_s();
			int r;

			if (atomic_load(&al->stop))
				break;
			r = query_rule(al, ru, now, &s, &n, err, sizeof(err));
			pthread_mutex_lock(&al->lock);
			al->evaluations++;
			if (!r) {
				r = apply(al, ru, st, s, n, now);
				if (r)
					snprintf(err, sizeof(err),
						 "out of memory");
				samples_free(s, n);
			}
			if (r) {
				if (st->health != 2 ||
				    strcmp(st->last_error, err) != 0)
					gw_warn("rules: group '%s' rule '%s' "
						"failed: %s",
						gr->name, ru->alert, err);
				st->health = 2;
				snprintf(st->last_error, sizeof(st->last_error),
					 "%s", err);
				st->failures++;
				failed++;
			} else {
				st->health = 1;
				st->last_error[0] = '\0';
			}
			st->last_eval = now;
			st->eval_s = mono_s() - r0;
			pthread_mutex_unlock(&al->lock);
		}
		pthread_mutex_lock(&al->lock);
		gs->last_eval = now;
		gs->eval_s = mono_s() - g0;
		overrun(gr, gs, sched, now + (int64_t)((mono_s() - t0) * 1e3),
			iv);
		pthread_mutex_unlock(&al->lock);
	}
	pthread_mutex_lock(&al->lock);
	if (any)
		al->last_pass_s = mono_s() - t0;
	deliver(al, now);
	publish(al);
	pthread_mutex_unlock(&al->lock);
	return failed;
}

/* ---- lifecycle ---- */

int gw_alerts_new(const struct gw_alerts_opts *o, struct gw_ruleset *rules,
		  struct gw_alerts **out)
{
	struct gw_alerts *al = calloc(1, sizeof(*al));
	int r;

	*out = NULL;
	if (!al) {
		gw_ruleset_release(rules);
		return -ENOMEM;
	}
	if (o)
		memcpy(&al->o, o,
		       o->sz < sizeof(al->o) ? o->sz : sizeof(al->o));
	al->o.sz = sizeof(al->o);
	if (al->o.interval_ms <= 0)
		al->o.interval_ms = DEFAULT_INTERVAL_MS;
	if (al->o.resend_ms <= 0)
		al->o.resend_ms = DEFAULT_RESEND_MS;
	if (al->o.keep_resolved_ms <= 0)
		al->o.keep_resolved_ms = GW_ALERTS_KEEP_RESOLVED_MS;
	if (al->o.lookback_ms <= 0)
		al->o.lookback_ms = DEFAULT_LOOKBACK_MS;
	if (!al->o.max_samples)
		al->o.max_samples = DEFAULT_MAX_SAMPLES;
	if (al->o.query_timeout <= 0)
		al->o.query_timeout = DEFAULT_TIMEOUT;
	pthread_mutex_init(&al->lock, NULL);
	gw_snap_init(&al->snap);
	al->slot = -1;
	if (al->o.reg) {
		al->slot = gw_registry_slot(al->o.reg, "rules");
		if (al->slot < 0) {
			r = al->slot;
			gw_ruleset_release(rules);
			gw_alerts_free(al);
			return r;
		}
	}
	r = install_rules(al, rules);
	if (r) {
		gw_alerts_free(al);
		return r;
	}
	*out = al;
	return 0;
}

void gw_alerts_free(struct gw_alerts *al)
{
	if (!al)
		return;
	gw_alerts_stop(al);
	free_states(al);
	gw_ruleset_release(&al->rs);
	if (al->have_pending)
		gw_ruleset_release(&al->pending_rs);
	gw_snap_release(&al->snap);
	pthread_mutex_destroy(&al->lock);
	free(al);
}

/* Under al->lock: the evaluator takes what is pending at once. */
static void wake(struct gw_alerts *al)
{
	if (al->w)
		gw_worker_wake(al->w);
}

void gw_alerts_set_rules(struct gw_alerts *al, struct gw_ruleset *rules)
{
	pthread_mutex_lock(&al->lock);
	if (al->have_pending)
		gw_ruleset_release(&al->pending_rs);
	al->pending_rs = *rules;
	al->have_pending = true;
	memset(rules, 0, sizeof(*rules));
	wake(al);
	pthread_mutex_unlock(&al->lock);
}

void gw_alerts_set_intervals(struct gw_alerts *al, int64_t interval_ms,
			     int64_t resend_ms)
{
	pthread_mutex_lock(&al->lock);
	al->pending_interval_ms = interval_ms > 0 ? interval_ms : 0;
	al->pending_resend_ms = resend_ms > 0 ? resend_ms : 0;
	wake(al);
	pthread_mutex_unlock(&al->lock);
}

static int64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One pass; the next when the first group is due, within 20 ms to 1 s. */
static double eval_round(struct gw_worker *w, void *arg)
{
	struct gw_alerts *al = arg;
	int64_t wait = 1000;

	(void)w;
	gw_alerts_eval(al, real_ms());
	pthread_mutex_lock(&al->lock);
	for (size_t g = 0; g < al->rs.ngroups; g++) {
		int64_t d = al->gst[g].next_due - real_ms();

		if (d < wait)
			wait = d;
	}
	pthread_mutex_unlock(&al->lock);
	if (wait < 20)
		wait = 20;
	return (double)wait / 1000.0;
}

int gw_alerts_start(struct gw_alerts *al, struct gw_worker_table *workers)
{
	struct gw_worker_opts wo = {
		.name = "gw-rules",
		.round = eval_round,
		.arg = al,
		.table = workers,
	};
	struct gw_worker *w;
	int r;

	if (al->w)
		return 0;
	atomic_store(&al->stop, false);
	r = gw_worker_start(&wo, &w);
	if (r)
		return r;
	pthread_mutex_lock(&al->lock);
	al->w = w;
	pthread_mutex_unlock(&al->lock);
	return 0;
}

void gw_alerts_stop(struct gw_alerts *al)
{
	struct gw_worker *w;

	if (!al || !al->w)
		return;
	/* Cancels a query in flight: evaluations are bounded anyway. */
	atomic_store(&al->stop, true);
	if (gw_worker_stop(al->w, INFINITY))
		return; /* not with an endless deadline */
	pthread_mutex_lock(&al->lock);
	w = al->w;
	al->w = NULL;
	pthread_mutex_unlock(&al->lock);
	gw_worker_free(w);
}

void gw_alerts_counts(struct gw_alerts *al, struct gw_alerts_counts *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_lock(&al->lock);
	c->rules = al->rs.nrules;
	for (size_t r = 0; r < al->rs.nrules; r++)
		for (size_t i = 0; i < al->rst[r].n; i++) {
			enum gw_alert_state s = al->rst[r].v[i].state;

			c->pending += s == GW_ALERT_PENDING;
			c->firing += s == GW_ALERT_FIRING;
			c->resolved += s == GW_ALERT_RESOLVED;
		}
	pthread_mutex_unlock(&al->lock);
}

/* ---- JSON ---- */

static void inst_json(struct gw_buf *b, const struct inst *in)
{
	gw_buf_puts(b, "{\"labels\":");
	gw_labels_json(&in->labels, b);
	gw_buf_putf(b, ",\"annotations\":%s,\"state\":\"%s\",\"activeAt\":",
		    in->ann_json ? in->ann_json : "{}", state_names[in->state]);
	fmt_time(b, in->active_at);
	if (in->state == GW_ALERT_RESOLVED) {
		gw_buf_puts(b, ",\"resolvedAt\":");
		fmt_time(b, in->resolved_at);
	}
	gw_buf_puts(b, ",\"value\":");
	fmt_value_e(b, in->value);
	gw_buf_puts(b, "}");
}

static void rule_json(struct gw_alerts *al, size_t ri, struct gw_buf *b)
{
	const struct gw_rule *ru = &al->rs.rules[ri];
	const struct rstate *st = &al->rst[ri];
	const char *state = "inactive";
	bool first = true;

	for (size_t i = 0; i < st->n; i++) {
		if (st->v[i].state == GW_ALERT_FIRING)
			state = "firing";
		else if (st->v[i].state == GW_ALERT_PENDING &&
			 strcmp(state, "firing") != 0)
			state = "pending";
	}
	gw_buf_putf(b, "{\"state\":\"%s\",\"name\":", state);
	gw_json_str(b, ru->alert);
	gw_buf_puts(b, ",\"query\":");
	gw_json_str(b, ru->expr);
	gw_buf_putf(b, ",\"duration\":%g,\"keepFiringFor\":0,\"labels\":",
		    (double)ru->for_ms / 1000.0);
	pairs_json(b, ru->labels, ru->nlabels);
	gw_buf_puts(b, ",\"annotations\":");
	pairs_json(b, ru->ann, ru->nann);
	gw_buf_puts(b, ",\"alerts\":[");
	for (size_t i = 0; i < st->n; i++) {
		if (st->v[i].state == GW_ALERT_RESOLVED)
			continue;
		gw_buf_puts(b, first ? "" : ",");
		first = false;
		inst_json(b, &st->v[i]);
	}
	gw_buf_putf(b, "],\"health\":\"%s\"",
		    st->health == 1   ? "ok"
		    : st->health == 2 ? "err"
				      : "unknown");
	if (st->health == 2) {
		gw_buf_puts(b, ",\"lastError\":");
		gw_json_str(b, st->last_error);
	}
	gw_buf_putf(b,
		    ",\"evaluationTime\":%g,\"lastEvaluation\":", st->eval_s);
	fmt_time(b, st->last_eval);
	gw_buf_puts(b, ",\"type\":\"alerting\"}");
}

static void json_locked(struct gw_alerts *al, bool rules, bool include_resolved,
			struct gw_buf *out)
{
	bool first = true;

	if (!rules) {
		gw_buf_puts(out, "{\"alerts\":[");
		for (size_t ri = 0; al && ri < al->rs.nrules; ri++)
			for (size_t i = 0; i < al->rst[ri].n; i++) {
				const struct inst *in = &al->rst[ri].v[i];

				if (in->state == GW_ALERT_RESOLVED &&
				    !include_resolved)
					continue;
				gw_buf_puts(out, first ? "" : ",");
				first = false;
				inst_json(out, in);
			}
		gw_buf_puts(out, "]}");
		return;
	}
	gw_buf_puts(out, "{\"groups\":[");
	for (size_t g = 0; al && g < al->rs.ngroups; g++) {
		const struct gw_rule_group *gr = &al->rs.groups[g];
		int64_t iv =
			gr->interval_ms ? gr->interval_ms : al->o.interval_ms;

		gw_buf_puts(out, g ? ",{\"name\":" : "{\"name\":");
		gw_json_str(out, gr->name);
		gw_buf_puts(out, ",\"file\":");
		gw_json_str(out, gr->file);
		gw_buf_puts(out, ",\"rules\":[");
		for (size_t k = 0; k < gr->n; k++) {
			gw_buf_puts(out, k ? "," : "");
			rule_json(al, gr->first + k, out);
		}
		gw_buf_putf(out,
			    "],\"interval\":%g,\"limit\":0,"
			    "\"evaluationTime\":%g,\"lastEvaluation\":",
			    (double)iv / 1000.0, al->gst[g].eval_s);
		fmt_time(out, al->gst[g].last_eval);
		gw_buf_puts(out, "}");
	}
	gw_buf_puts(out, "]}");
}

void gw_alerts_json(struct gw_alerts *al, bool rules, bool include_resolved,
		    struct gw_buf *out)
{
	if (!al) {
		json_locked(NULL, rules, include_resolved, out);
		return;
	}
	pthread_mutex_lock(&al->lock);
	json_locked(al, rules, include_resolved, out);
	pthread_mutex_unlock(&al->lock);
}

int gw_alerts_attach(struct gw_alerts *al, struct gw_registry *reg,
		     const struct gw_queryable *q,
		     const struct gw_alerts_sink *sink)
{
	if (reg && al->slot < 0) {
		int slot = gw_registry_slot(reg, "rules");

		if (slot < 0)
			return slot;
		al->slot = slot;
		al->o.reg = reg;
	}
	if (q) {
		al->q = *q;
		al->o.q = &al->q;
	}
	al->o.sink = sink;
	return 0;
}
