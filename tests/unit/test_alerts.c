// SPDX-License-Identifier: MIT
/*
 * test_alerts.c - the rule evaluator on a fake clock and an in-memory
 * queryable: pending -> firing after `for`, resolved when the series goes,
 * the ALERTS series, what is handed to the Alertmanager and when, failures,
 * reload, and the JSON of /api/v1/alerts and /api/v1/rules.
 *
 * The Alertmanager client is replaced by the recorder below (the test's
 * own gw_am_* are linked instead of export/alertmanager.c); alerts reach it
 * through the real sink, export/am_sink.c.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "expo_check.h"
#include "export/alertmanager.h"
#include "export/am_sink.h"
#include "pipeline/alerts.h"

#include "fake_queryable.c"

#define SEC 1000LL
#define T0  (1700000000LL * SEC)

/* ---- a recording Alertmanager ---- */

struct sent {
	char labels[512];
	char ann[512];
	int64_t starts, ends;
};

static struct sent sent[64];
static size_t nsent;

int gw_am_new(const char *const *urls, unsigned int n,
	      const struct gw_am_opts *o, struct gw_am **out)
{
	(void)urls;
	(void)n;
	(void)o;
	*out = (struct gw_am *)&nsent;
	return 0;
}

void gw_am_free(struct gw_am *am, double deadline)
{
	(void)am;
	(void)deadline;
}

size_t gw_am_send(struct gw_am *am, const struct gw_am_alert *a, size_t n)
{
	(void)am;
	for (size_t i = 0; i < n && nsent < 64; i++, nsent++) {
		snprintf(sent[nsent].labels, sizeof(sent[nsent].labels), "%s",
			 a[i].labels);
		snprintf(sent[nsent].ann, sizeof(sent[nsent].ann), "%s",
			 a[i].annotations);
		sent[nsent].starts = a[i].starts_ms;
		sent[nsent].ends = a[i].ends_ms;
	}
	return 0;
}

unsigned int gw_am_stats(struct gw_am *am, struct gw_am_target_stats *st,
			 unsigned int max)
{
	(void)am;
	if (max) {
		memset(st, 0, sizeof(*st));
		st->url = "http://am:9093";
		st->sent = nsent;
		st->up = 1;
	}
	return 1;
}

/* ---- fixture ---- */

struct fx {
	struct gw_fakeq *f;
	struct gw_queryable q;
	struct gw_registry *reg;
	struct gw_alerts *al;
	struct gw_alerts_sink sink;
	size_t temp0, temp1;
};

static struct gw_ruleset rules_of(const char *yaml)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];

	gw_ruleset_init(&rs);
	if (gw_rules_load_buffer(&rs, "t.yml", (const unsigned char *)yaml,
				 strlen(yaml), err, sizeof(err)))
		fail_msg("%s", err);
	return rs;
}

static const char hot_rules[] =
	"groups:\n"
	"  - name: gpu\n"
	"    rules:\n"
	"      - alert: Hot\n"
	"        expr: temp > 80\n"
	"        for: 30s\n"
	"        labels: {severity: page, where: 'gpu{{ $labels.gpu }}'}\n"
	"        annotations:\n"
	"          summary: 'GPU {{ $labels.gpu }} at {{ $value }} C "
	"({{ $labels.where }})'\n";

static void fx_open(struct fx *x, const char *yaml, struct gw_am *am)
{
	struct gw_alerts_opts o = { .sz = sizeof(o) };
	struct gw_ruleset rs = rules_of(yaml);

	memset(x, 0, sizeof(*x));
	nsent = 0;
	assert_int_equal(gw_fakeq_new(&x->f), 0);
	gw_fakeq_queryable(x->f, &x->q);
	assert_int_equal(gw_fakeq_series(x->f, "temp", "gpu=\"0\"", &x->temp0),
			 0);
	assert_int_equal(gw_fakeq_series(x->f, "temp", "gpu=\"1\"", &x->temp1),
			 0);
	x->reg = gw_registry_new();
	assert_non_null(x->reg);
	o.q = &x->q;
	o.reg = x->reg;
	if (am) {
		gw_am_sink_init(&x->sink, am);
		o.sink = &x->sink;
	}
	o.interval_ms = 10 * SEC;
	o.resend_ms = 60 * SEC;
	o.lookback_ms = 15 * SEC;
	assert_int_equal(gw_alerts_new(&o, &rs, &x->al), 0);
}

static void fx_close(struct fx *x)
{
	gw_alerts_free(x->al);
	gw_registry_free(x->reg);
	gw_fakeq_free(x->f);
}

/* Samples every 5 s from..to (inclusive) with value v. */
static void feed(struct fx *x, size_t id, int64_t from, int64_t to, double v)
{
	for (int64_t t = from; t <= to; t += 5 * SEC)
		assert_int_equal(gw_fakeq_sample(x->f, id, t, v), 0);
}

static struct gw_alerts_counts counts(struct fx *x)
{
	struct gw_alerts_counts c;

	gw_alerts_counts(x->al, &c);
	return c;
}

static char *json(struct fx *x, bool rules, bool resolved)
{
	struct gw_buf b;

	gw_buf_init(&b, 1 << 20);
	gw_alerts_json(x->al, rules, resolved, &b);
	assert_int_equal(gw_buf_error(&b), 0);
	return gw_buf_detach(&b, NULL);
}

static char *metrics(struct fx *x)
{
	struct gw_buf b;
	char *t;

	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_registry_render(x->reg, GW_EXPO_TEXT_004, &b), 0);
	t = gw_buf_detach(&b, NULL);
	if (t)
		assert_unique_series(t);
	return t;
}

static void contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("\"%s\" not in:\n%s", needle, hay ? hay : "(null)");
}

static void lacks(const char *hay, const char *needle)
{
	if (hay && strstr(hay, needle))
		fail_msg("\"%s\" unexpectedly in:\n%s", needle, hay);
}

/* ---- tests ---- */

static void pending_firing_resolved(void **state)
{
	struct gw_alerts_counts c;
	struct fx x;
	char *s;

	(void)state;
	fx_open(&x, hot_rules, NULL);
	feed(&x, x.temp0, T0, T0 + 10 * SEC, 70);
	feed(&x, x.temp1, T0, T0 + 200 * SEC, 60);
	assert_int_equal(gw_alerts_eval(x.al, T0 + 10 * SEC), 0);
	c = counts(&x);
	assert_int_equal(c.rules, 1);
	assert_int_equal(c.pending + c.firing + c.resolved, 0);

	/* GPU 0 heats up at +15 s: pending from the first evaluation */
	feed(&x, x.temp0, T0 + 15 * SEC, T0 + 60 * SEC, 85);
	gw_alerts_eval(x.al, T0 + 20 * SEC);
	c = counts(&x);
	assert_int_equal(c.pending, 1);
	assert_int_equal(c.firing, 0);
	s = json(&x, false, false);
	assert_string_equal(
		s, "{\"alerts\":[{\"labels\":{\"alertname\":\"Hot\","
		   "\"gpu\":\"0\",\"severity\":\"page\",\"where\":\"gpu0\"},"
		   "\"annotations\":{\"summary\":\"GPU 0 at 85 C (gpu0)\"},"
		   "\"state\":\"pending\",\"activeAt\":"
		   "\"2023-11-14T22:13:40.000Z\",\"value\":\"8.5e+01\"}]}");
	free(s);
	s = metrics(&x);
	contains(s, "ALERTS{alertname=\"Hot\",gpu=\"0\",severity=\"page\","
		    "where=\"gpu0\",alertstate=\"pending\"} 1");
	contains(s, "ALERTS_FOR_STATE{alertname=\"Hot\",gpu=\"0\","
		    "severity=\"page\",where=\"gpu0\"} 1700000020");
	contains(s, "gpuwatch_alerts{state=\"pending\"} 1");
	free(s);

	/* not yet 30 s: still pending; evaluations between due times are
	 * skipped (the group's interval is 10 s) */
	gw_alerts_eval(x.al, T0 + 40 * SEC);
	assert_int_equal(counts(&x).pending, 1);
	gw_alerts_eval(x.al, T0 + 45 * SEC);
	gw_alerts_eval(x.al, T0 + 50 * SEC);
	c = counts(&x);
	assert_int_equal(c.pending, 0);
	assert_int_equal(c.firing, 1);
	s = metrics(&x);
	contains(s, "alertstate=\"firing\"} 1");
	lacks(s, "alertstate=\"pending\"");
	contains(s, "gpuwatch_rules_evaluations_total 4");
	free(s);

	/* cooled down from +65 s (after the lookback the old value goes) */
	feed(&x, x.temp0, T0 + 65 * SEC, T0 + 120 * SEC, 70);
	gw_alerts_eval(x.al, T0 + 70 * SEC);
	c = counts(&x);
	assert_int_equal(c.firing, 0);
	assert_int_equal(c.resolved, 1);
	s = json(&x, false, false);
	assert_string_equal(s, "{\"alerts\":[]}");
	free(s);
	s = json(&x, false, true);
	contains(s, "\"state\":\"resolved\",\"activeAt\":"
		    "\"2023-11-14T22:13:40.000Z\",\"resolvedAt\":"
		    "\"2023-11-14T22:14:30.000Z\"");
	free(s);
	s = metrics(&x);
	lacks(s, "ALERTS{");
	free(s);

	/* resolved ones are kept 15 minutes */
	gw_alerts_eval(x.al, T0 + 70 * SEC + 14 * 60 * SEC);
	assert_int_equal(counts(&x).resolved, 1);
	gw_alerts_eval(x.al, T0 + 71 * SEC + 15 * 60 * SEC);
	assert_int_equal(counts(&x).resolved, 0);
	fx_close(&x);
}

static void pending_that_clears_never_fires(void **state)
{
	struct fx x;

	(void)state;
	fx_open(&x, hot_rules, (struct gw_am *)&nsent);
	feed(&x, x.temp0, T0, T0 + 15 * SEC, 90);
	feed(&x, x.temp0, T0 + 20 * SEC, T0 + 100 * SEC, 50);
	gw_alerts_eval(x.al, T0 + 15 * SEC);
	assert_int_equal(counts(&x).pending, 1);
	gw_alerts_eval(x.al, T0 + 40 * SEC);
	assert_int_equal(counts(&x).pending, 0);
	assert_int_equal(counts(&x).resolved, 0);
	gw_alerts_eval(x.al, T0 + 90 * SEC);
	assert_int_equal(counts(&x).firing, 0);
	assert_int_equal(nsent, 0);
	fx_close(&x);
}

static void zero_for_fires_at_once_and_delivery(void **state)
{
	static const char rules[] =
		"groups:\n  - name: g\n    rules:\n"
		"      - alert: Now\n        expr: temp > 80\n";
	struct fx x;
	char *s;

	(void)state;
	fx_open(&x, rules, (struct gw_am *)&nsent);
	feed(&x, x.temp1, T0, T0 + 200 * SEC, 95);
	gw_alerts_eval(x.al, T0 + 10 * SEC);
	assert_int_equal(counts(&x).firing, 1);
	/* handed over when it starts firing, ends 4 resends ahead */
	assert_int_equal(nsent, 1);
	assert_string_equal(sent[0].labels,
			    "{\"alertname\":\"Now\",\"gpu\":\"1\"}");
	assert_string_equal(sent[0].ann, "{}");
	assert_int_equal(sent[0].starts, T0 + 10 * SEC);
	assert_int_equal(sent[0].ends, T0 + 10 * SEC + 240 * SEC);
	/* not again before the resend interval, then again */
	gw_alerts_eval(x.al, T0 + 20 * SEC);
	gw_alerts_eval(x.al, T0 + 60 * SEC);
	assert_int_equal(nsent, 1);
	gw_alerts_eval(x.al, T0 + 70 * SEC);
	assert_int_equal(nsent, 2);
	assert_int_equal(sent[1].starts, T0 + 10 * SEC);
	s = metrics(&x);
	contains(s, "gpuwatch_alertmanager_up{url=\"http://am:9093\"} 1");
	free(s);
	/* resolved: once, with endsAt when it resolved */
	gw_alerts_eval(x.al, T0 + 400 * SEC);
	assert_int_equal(counts(&x).resolved, 1);
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[2].ends, T0 + 400 * SEC);
	gw_alerts_eval(x.al, T0 + 500 * SEC);
	assert_int_equal(nsent, 3);
	fx_close(&x);
}

static void failures_keep_state(void **state)
{
	struct fx x;
	char *s;

	(void)state;
	fx_open(&x, hot_rules, NULL);
	feed(&x, x.temp0, T0, T0 + 200 * SEC, 90);
	gw_alerts_eval(x.al, T0 + 10 * SEC);
	assert_int_equal(counts(&x).pending, 1);
	gw_fakeq_fail(x.f, -E2BIG);
	assert_int_equal(gw_alerts_eval(x.al, T0 + 20 * SEC), 1);
	assert_int_equal(counts(&x).pending, 1);
	s = json(&x, true, false);
	contains(s, "\"health\":\"err\",\"lastError\":");
	free(s);
	s = metrics(&x);
	contains(s, "gpuwatch_rules_evaluation_failures_total{group=\"gpu\","
		    "rule=\"Hot\"} 1");
	free(s);
	gw_alerts_eval(x.al, T0 + 40 * SEC);
	assert_int_equal(counts(&x).firing, 1);
	s = json(&x, true, false);
	contains(s, "\"health\":\"ok\"");
	free(s);
	fx_close(&x);
}

static void same_labels_after_rule_labels_fail(void **state)
{
	static const char rules[] =
		"groups:\n  - name: g\n    rules:\n"
		"      - alert: Dup\n        expr: temp > 0\n"
		"        labels: {gpu: all}\n";
	struct fx x;
	char *s;

	(void)state;
	fx_open(&x, rules, NULL);
	feed(&x, x.temp0, T0, T0 + 20 * SEC, 1);
	feed(&x, x.temp1, T0, T0 + 20 * SEC, 1);
	assert_int_equal(gw_alerts_eval(x.al, T0 + 10 * SEC), 1);
	s = json(&x, true, false);
	contains(s, "\"lastError\":\"vector contains metrics with the same "
		    "labelset after applying alert labels\"");
	free(s);
	fx_close(&x);
}

static void rules_json_shape(void **state)
{
	struct fx x;
	char *s;

	(void)state;
	fx_open(&x, hot_rules, NULL);
	s = json(&x, true, false);
	assert_string_equal(
		s, "{\"groups\":[{\"name\":\"gpu\",\"file\":\"t.yml\","
		   "\"rules\":[{\"state\":\"inactive\",\"name\":\"Hot\","
		   "\"query\":\"temp > 80\",\"duration\":30,"
		   "\"keepFiringFor\":0,\"labels\":{\"severity\":\"page\","
		   "\"where\":\"gpu{{ $labels.gpu }}\"},\"annotations\":"
		   "{\"summary\":\"GPU {{ $labels.gpu }} at {{ $value }} C "
		   "({{ $labels.where }})\"},\"alerts\":[],\"health\":"
		   "\"unknown\",\"evaluationTime\":0,\"lastEvaluation\":"
		   "\"0001-01-01T00:00:00Z\",\"type\":\"alerting\"}],"
		   "\"interval\":10,\"limit\":0,\"evaluationTime\":0,"
		   "\"lastEvaluation\":\"0001-01-01T00:00:00Z\"}]}");
	free(s);
	/* no evaluator: empty lists */
	{
		struct gw_buf b;

		gw_buf_init(&b, 1024);
		gw_alerts_json(NULL, false, false, &b);
		assert_int_equal(gw_buf_error(&b), 0);
		assert_string_equal(b.p, "{\"alerts\":[]}");
		gw_buf_reset(&b);
		gw_alerts_json(NULL, true, false, &b);
		assert_int_equal(gw_buf_error(&b), 0);
		assert_string_equal(b.p, "{\"groups\":[]}");
		gw_buf_release(&b);
	}
	fx_close(&x);
}

static void reload_keeps_matching_alerts(void **state)
{
	static const char other[] =
		"groups:\n  - name: gpu\n    rules:\n"
		"      - alert: Hot\n        expr: temp > 80\n"
		"        for: 30s\n"
		"        labels: {severity: page, where: 'gpu{{ $labels.gpu "
		"}}'}\n"
		"      - alert: Warm\n        expr: temp > 70\n";
	struct gw_ruleset rs;
	struct fx x;

	(void)state;
	fx_open(&x, hot_rules, NULL);
	feed(&x, x.temp0, T0, T0 + 200 * SEC, 90);
	gw_alerts_eval(x.al, T0 + 10 * SEC);
	gw_alerts_eval(x.al, T0 + 40 * SEC);
	assert_int_equal(counts(&x).firing, 1);
	rs = rules_of(other);
	gw_alerts_set_rules(x.al, &rs);
	assert_int_equal(rs.nrules, 0); /* taken */
	gw_alerts_eval(x.al, T0 + 41 * SEC);
	/* Hot still firing (carried over), Warm fires at once */
	assert_int_equal(counts(&x).rules, 2);
	assert_int_equal(counts(&x).firing, 2);
	/* a changed expression starts afresh */
	rs = rules_of("groups:\n  - name: gpu\n    rules:\n"
		      "      - alert: Hot\n        expr: temp > 81\n"
		      "        for: 30s\n");
	gw_alerts_set_rules(x.al, &rs);
	gw_alerts_eval(x.al, T0 + 60 * SEC);
	assert_int_equal(counts(&x).pending, 1);
	assert_int_equal(counts(&x).firing, 0);
	fx_close(&x);
}

static void scalar_rules_and_no_store(void **state)
{
	static const char rules[] =
		"groups:\n  - name: g\n    rules:\n"
		"      - alert: Always\n        expr: vector(1)\n"
		"      - alert: Scalar\n        expr: 2\n";
	struct gw_alerts_opts o = { .sz = sizeof(o) };
	struct gw_ruleset rs;
	struct gw_alerts *al;
	struct fx x;

	(void)state;
	fx_open(&x, rules, NULL);
	gw_alerts_eval(x.al, T0);
	assert_int_equal(counts(&x).firing, 2);
	fx_close(&x);
	/* without a queryable nothing is evaluated */
	rs = rules_of(rules);
	assert_int_equal(gw_alerts_new(&o, &rs, &al), 0);
	assert_int_equal(gw_alerts_eval(al, T0), 0);
	{
		struct gw_alerts_counts c;

		gw_alerts_counts(al, &c);
		assert_int_equal(c.rules, 2);
		assert_int_equal(c.firing, 0);
	}
	gw_alerts_free(al);
}

/*
 * A group that runs past its interval misses iterations: the ticks of its
 * grid that got no evaluation, counted in
 * gpuwatch_rule_group_iterations_missed_total{rule_group="FILE;GROUP"};
 * the next evaluation is the next tick of the grid.
 */
static void overrun_counts_missed_iterations(void **state)
{
	static const char slow_rules[] = "groups:\n"
					 "  - name: slow\n"
					 "    interval: 1s\n"
					 "    rules:\n"
					 "      - alert: Hot\n"
					 "        expr: temp > 80\n";
	struct fx x;
	char *s;

	(void)state;
	/* late by the clock: due at T0+10s, run at T0+45s: one evaluation
	 * for the ticks 10s to 40s, three missed; 50s is next */
	fx_open(&x, hot_rules, NULL);
	feed(&x, x.temp0, T0, T0 + 60 * SEC, 90);
	gw_alerts_eval(x.al, T0);
	s = metrics(&x);
	contains(s, "gpuwatch_rule_group_iterations_missed_total{rule_group="
		    "\"t.yml;gpu\"} 0\n");
	free(s);
	gw_alerts_eval(x.al, T0 + 45 * SEC);
	s = metrics(&x);
	contains(s, "gpuwatch_rule_group_iterations_missed_total{rule_group="
		    "\"t.yml;gpu\"} 3\n");
	free(s);
	assert_int_equal(counts(&x).rules, 1);
	{
		uint64_t before, after;

		before = gw_fakeq_stats(x.f)->selects;
		gw_alerts_eval(x.al, T0 + 49 * SEC);
		after = gw_fakeq_stats(x.f)->selects;
		assert_true(before > 0);
		assert_int_equal(after, before);
		gw_alerts_eval(x.al, T0 + 50 * SEC);
		assert_true(gw_fakeq_stats(x.f)->selects > after);
	}
	fx_close(&x);

	/* slow by the store: a 1s group whose query takes 2.1s: the ticks at
	 * 1s and 2s pass during it */
	fx_open(&x, slow_rules, NULL);
	feed(&x, x.temp0, T0, T0 + 60 * SEC, 90);
	gw_fakeq_delay(x.f, 2100);
	gw_alerts_eval(x.al, T0);
	s = metrics(&x);
	contains(s, "gpuwatch_rule_group_iterations_missed_total{rule_group="
		    "\"t.yml;slow\"} 2\n");
	free(s);
	fx_close(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pending_firing_resolved),
		cmocka_unit_test(pending_that_clears_never_fires),
		cmocka_unit_test(zero_for_fires_at_once_and_delivery),
		cmocka_unit_test(failures_keep_state),
		cmocka_unit_test(same_labels_after_rule_labels_fail),
		cmocka_unit_test(rules_json_shape),
		cmocka_unit_test(reload_keeps_matching_alerts),
		cmocka_unit_test(scalar_rules_and_no_store),
		cmocka_unit_test(overrun_counts_missed_iterations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
