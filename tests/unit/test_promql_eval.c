/* SPDX-License-Identifier: MIT */
/*
 * test_promql_eval.c - the PromQL evaluator against an in-memory store:
 * what selection gives (values worked out by hand): instant and range
 * selectors, their windows' edges (as Prometheus 2.42), rate and the
 * *_over_time functions on raw samples and on rollup tiers, the tier a
 * query reads, range queries' steps.  Aggregation, operators, limits,
 * cancellation and JSON are in test_promql_exec.c.
 */
#include "promql_eval_fx.c"

/* ---- selectors ---- */

static void instant_selector_lookback_and_offset(void **state)
{
	struct fx *x = *state;
	const double v[] = { 1, 2, 3 };
	struct gw_qresult r;

	series(x, "m", "job=\"a\"", B, 15 * SEC, 3, v); /* B, B+15s, B+30s */
	one(x, "m", "job=\"b\"", B - 10 * MIN, 7);
	one(x, "other", "job=\"a\"", B, 9);

	assert_near(inst1(x, "m", B + 30 * SEC), 3);
	assert_near(inst1(x, "m", B + 29 * SEC), 2);
	/* The lookback window [t - 5m, t] is closed, as in Prometheus
	 * 2.42: a sample exactly 5 min old still answers, 1 ms later not. */
	assert_near(inst1(x, "m", B + 30 * SEC + 5 * MIN - 1), 3);
	assert_near(inst1(x, "m", B + 30 * SEC + 5 * MIN), 3);
	inst0(x, "m", B + 30 * SEC + 5 * MIN + 1);
	inst0(x, "m", B - 1);
	/* Offset moves the evaluation back; the result keeps its time. */
	inst(x, "m offset 10s", B + 30 * SEC, &r);
	assert_int_equal(r.nseries, 1);
	assert_near(r.series[0].p[0].v, 2);
	assert_int_equal(r.series[0].p[0].t, B + 30 * SEC);
	gw_qresult_release(&r);
	assert_near(inst1(x, "m offset -30s", B), 3);

	/* A longer lookback finds the old series; results sorted. */
	x->o.lookback_ms = 20 * MIN;
	inst(x, "m", B + 30 * SEC, &r);
	assert_json(&r, "{\"resultType\":\"vector\",\"result\":["
			"{\"metric\":{\"__name__\":\"m\",\"job\":\"a\"},"
			"\"value\":[3600030,\"3\"]},"
			"{\"metric\":{\"__name__\":\"m\",\"job\":\"b\"},"
			"\"value\":[3600030,\"7\"]}]}");
	gw_qresult_release(&r);

	/* Matchers other than the name. */
	inst(x, "{__name__=~\"m|other\", job!=\"b\"}", B + 30 * SEC, &r);
	assert_int_equal(r.nseries, 2);
	assert_near(val(&r, "m{job=\"a\"}"), 3);
	assert_near(val(&r, "other{job=\"a\"}"), 9);
	gw_qresult_release(&r);
}

static void instant_range_selector_is_matrix(void **state)
{
	struct fx *x = *state;
	const double v[] = { 1, 2, 3, 4 };
	struct gw_qresult r;

	series(x, "m", "job=\"a\"", B, 15 * SEC, 4, v);
	/* [B+15s, B+45s]: the samples themselves, with their times, the
	 * one exactly at t - 30s included (Prometheus 2.42). */
	inst(x, "(m[30s])", B + 45 * SEC, &r);
	assert_int_equal(r.type, GW_TYPE_MATRIX);
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{\"__name__\":\"m\",\"job\":\"a\"},"
			"\"values\":[[3600015,\"2\"],[3600030,\"3\"],"
			"[3600045,\"4\"]]}]}");
	gw_qresult_release(&r);
	/* 1 ms later the edge sample is out. */
	inst(x, "(m[30s])", B + 45 * SEC + 1, &r);
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{\"__name__\":\"m\",\"job\":\"a\"},"
			"\"values\":[[3600030,\"3\"],[3600045,\"4\"]]}]}");
	gw_qresult_release(&r);
}

/* ---- rate and friends ---- */

static void rate_increase_delta_extrapolate(void **state)
{
	struct fx *x = *state;
	const double c[] = { 10, 20, 30, 40, 50, 60, 70, 80, 90 };
	const double reset[] = { 0, 10, 20, 5, 15 };
	const double low[] = { 1, 11, 21 };
	const double g[] = { 5, 3 };
	struct gw_qresult r;

	series(x, "c", "", B, 15 * SEC, 9, c);
	/* [B+60s, B+120s]: 50..90 at 60..120s, the first exactly on the
	 * window's start: 40 over 60s, nothing to extrapolate. */
	assert_near(inst1(x, "increase(c[1m])", B + 120 * SEC), 40);
	assert_near(inst1(x, "rate(c[1m])", B + 120 * SEC), 40.0 / 60);
	assert_near(inst1(x, "delta(c[1m])", B + 120 * SEC), 40);
	assert_near(inst1(x, "irate(c[1m])", B + 120 * SEC), 10.0 / 15);
	/* 1 ms later (B+60s out): 60..90 at 75..120s, 30 over 45s,
	 * extrapolated by 15s - 1ms to the start, 1ms to the end. */
	assert_near(inst1(x, "increase(c[1m])", B + 120 * SEC + 1),
		    30.0 * 60 / 45);
	/* The name goes. */
	inst(x, "rate(c[1m])", B + 120 * SEC, &r);
	assert_non_null(find(&r, "{}"));
	gw_qresult_release(&r);
	/* [B+105s, B+120s] holds two samples, 80 on the edge and 90. */
	assert_near(inst1(x, "rate(c[15s])", B + 120 * SEC), 10.0 / 15);
	assert_near(inst1(x, "irate(c[15s])", B + 120 * SEC), 10.0 / 15);
	/* One sample: nothing. */
	inst0(x, "rate(c[15s])", B + 120 * SEC + 1);
	inst0(x, "irate(c[14s])", B + 120 * SEC);

	/* A counter reset adds the value before it: [B, B+60s] holds all
	 * five, 15 - 0 + 20 = 35 over the whole 60s. */
	series(x, "reset", "", B, 15 * SEC, 5, reset);
	assert_near(inst1(x, "increase(reset[1m])", B + 60 * SEC), 35);
	assert_near(inst1(x, "rate(reset[1m])", B + 60 * SEC), 35.0 / 60);
	/* delta is not a counter function: 15 - 0. */
	assert_near(inst1(x, "delta(reset[1m])", B + 60 * SEC), 15);
	/* Without the edge sample (1 ms later): 15 - 10 + 20 = 25 over
	 * 45s, extrapolated to 60s. */
	assert_near(inst1(x, "increase(reset[1m])", B + 60 * SEC + 1),
		    25.0 * 60 / 45);
	assert_near(inst1(x, "delta(reset[1m])", B + 60 * SEC + 1),
		    5.0 * 60 / 45);
	/* irate after a reset at the last sample: the last value. */
	assert_near(inst1(x, "irate(reset[1m])", B + 45 * SEC), 5.0 / 15);

	/* A counter is not extrapolated below zero: 1 at 30s rising 10 per
	 * 15s was zero 1.5s earlier, so the start gains 1.5s, not 30s. */
	series(x, "low", "", B + 30 * SEC, 15 * SEC, 3, low);
	assert_near(inst1(x, "increase(low[1m])", B + 60 * SEC),
		    20 * 31.5 / 30);
	/* delta has no such floor, and the 30s gap to the start is more than
	 * 1.1 intervals: half an interval (7.5s) is added. */
	assert_near(inst1(x, "delta(low[1m])", B + 60 * SEC), 20 * 37.5 / 30);

	/* Gaps on both sides: 5s to the start (extrapolated in full), 40s
	 * to the end (more than 1.1 x 15s: half an interval). */
	series(x, "g", "", B + 45 * SEC, 15 * SEC, 2, g);
	assert_near(inst1(x, "delta(g[1m])", B + 100 * SEC), -2 * 27.5 / 15);
}

static void over_time_raw(void **state)
{
	struct fx *x = *state;
	const double v[] = { 100, 1, 4, 2, 8, 5 };
	int64_t t;

	/* [B, B+75s]: 100 at B sits on the edge and counts (Prometheus
	 * 2.42); 1 ms later the window holds 1 4 2 8 5. */
	series(x, "g", "job=\"a\"", B, 15 * SEC, 6, v);
	assert_near(inst1(x, "avg_over_time(g[75s])", B + 75 * SEC), 20);
	assert_near(inst1(x, "max_over_time(g[75s])", B + 75 * SEC), 100);
	assert_near(inst1(x, "count_over_time(g[75s])", B + 75 * SEC), 6);
	/* Squares 6400 361 256 324 144 225 over 6. */
	assert_near(inst1(x, "stddev_over_time(g[75s])", B + 75 * SEC),
		    sqrt(7710.0 / 6));
	/* Sorted 1 2 4 5 8 100: rank 0.5 * 5 = 2.5 -> 4.5. */
	assert_near(inst1(x, "quantile_over_time(0.5, g[75s])", B + 75 * SEC),
		    4.5);
	t = B + 75 * SEC + 1;
	assert_near(inst1(x, "avg_over_time(g[75s])", t), 4);
	assert_near(inst1(x, "min_over_time(g[75s])", t), 1);
	assert_near(inst1(x, "max_over_time(g[75s])", t), 8);
	assert_near(inst1(x, "sum_over_time(g[75s])", t), 20);
	assert_near(inst1(x, "count_over_time(g[75s])", t), 5);
	assert_near(inst1(x, "last_over_time(g[75s])", t), 5);
	/* Population deviation: squares 9 0 4 16 1 over 5. */
	assert_near(inst1(x, "stddev_over_time(g[75s])", t), sqrt(6));
	/* Sorted 1 2 4 5 8: rank 0.5 * 4 = 2 -> 4; 0.9 * 4 = 3.6 -> 5 + 0.6
	 * * 3. */
	assert_near(inst1(x, "quantile_over_time(0.5, g[75s])", t), 4);
	assert_near(inst1(x, "quantile_over_time(0.9, g[75s])", t), 6.8);
	assert_near(inst1(x, "quantile_over_time(0, g[75s])", t), 1);
	assert_true(isinf(inst1(x, "quantile_over_time(-1, g[75s])", t)) < 0);
	assert_true(isinf(inst1(x, "quantile_over_time(2, g[75s])", t)) > 0);
	assert_true(isnan(inst1(x, "quantile_over_time(NaN, g[75s])", t)));
	/* Nothing in the window: nothing out. */
	inst0(x, "avg_over_time(g[10s])", B + 100 * SEC);
	inst0(x, "quantile_over_time(0.5, g[10s])", B + 100 * SEC);
}

static void last_over_time_keeps_name(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;

	one(x, "g", "job=\"a\"", B, 1);
	inst(x, "last_over_time(g[1m])", B, &r);
	assert_near(val(&r, "g{job=\"a\"}"), 1);
	gw_qresult_release(&r);
	inst(x, "max_over_time(g[1m])", B, &r);
	assert_near(val(&r, "{job=\"a\"}"), 1);
	gw_qresult_release(&r);
}

static void same_labelset_after_name_drop(void **state)
{
	static const char *const clash[] = {
		"sum_over_time({__name__=~\"a|b\"}[1m])",
		"abs({__name__=~\"a|b\"})",
		"{__name__=~\"a|b\"} * 2",
		"-{__name__=~\"a|b\"}",
		"{__name__=~\"a|b\"} > bool 0",
	};
	struct fx *x = *state;
	struct gw_qresult r;

	one(x, "a", "job=\"x\"", B, 1);
	one(x, "b", "job=\"x\"", B, 2);
	for (size_t i = 0; i < sizeof(clash) / sizeof(clash[0]); i++)
		inst_err(
			x, clash[i], B, GW_QERR_EXECUTION,
			"vector cannot contain metrics with the same labelset");
	/* A filter keeps the names, so no clash; last_over_time too. */
	inst(x, "{__name__=~\"a|b\"} > 0", B, &r);
	assert_int_equal(r.nseries, 2);
	gw_qresult_release(&r);
	inst(x, "last_over_time({__name__=~\"a|b\"}[1m])", B, &r);
	assert_int_equal(r.nseries, 2);
	gw_qresult_release(&r);
}

/* ---- rollup tiers ---- */

/* Raw samples every 10s for 2 hours, but the raw tier only keeps the last
 * 10 minutes: older queries read the 1-minute rollups. */
static const int64_t rt0 = B + 2 * HOUR;

static double gauge_at(int64_t t)
{
	int64_t i = (t - B) / (10 * SEC);

	/* spread over three decades, so the quantile is a real test */
	return 1 + (double)((i * 7919) % 1000) * (double)(1 + i % 3);
}

static void rollup_fixture(struct fx *x)
{
	size_t g, c;

	assert_int_equal(gw_fakeq_series(x->f, "g", "job=\"a\"", &g), 0);
	assert_int_equal(gw_fakeq_series(x->f, "c", "job=\"a\"", &c), 0);
	for (int64_t t = B; t < rt0; t += 10 * SEC) {
		assert_int_equal(gw_fakeq_sample(x->f, g, t, gauge_at(t)), 0);
		/* A counter rising by 1 per second. */
		assert_int_equal(
			gw_fakeq_sample(x->f, c, t, (double)(t - B) / 1000), 0);
	}
	gw_fakeq_retention(x->f, GW_TIER_RAW, rt0 - 10 * MIN);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void rollup_over_time(void **state)
{
	struct fx *x = *state;
	int64_t t = B + 30 * MIN;
	double v[60], sum = 0, sumsq = 0, mn = INFINITY, mx = -INFINITY, var;
	size_t n = 0;
	struct gw_qresult r;
	char q[64];

	rollup_fixture(x);
	/* avg_over_time(g[10m]) at 30m: the rollups ending in (20m, 30m],
	 * so the raw samples in [20m, 30m). */
	for (int64_t s = B + 20 * MIN; s < t; s += 10 * SEC) {
		double y = gauge_at(s);

		v[n++] = y;
		sum += y;
		sumsq += y * y;
		mn = fmin(mn, y);
		mx = fmax(mx, y);
	}
	assert_int_equal(n, 60);
	inst(x, "avg_over_time(g[10m])", t, &r);
	assert_int_equal(r.tier, GW_TIER_1M);
	assert_near(val(&r, "{job=\"a\"}"), sum / 60);
	gw_qresult_release(&r);
	assert_near(inst1(x, "sum_over_time(g[10m])", t), sum);
	assert_near(inst1(x, "count_over_time(g[10m])", t), 60);
	assert_near(inst1(x, "min_over_time(g[10m])", t), mn);
	assert_near(inst1(x, "max_over_time(g[10m])", t), mx);
	assert_near(inst1(x, "last_over_time(g[10m])", t),
		    gauge_at(t - 10 * SEC));
	var = sumsq / 60 - (sum / 60) * (sum / 60);
	assert_true(fabs(inst1(x, "stddev_over_time(g[10m])", t) - sqrt(var)) <
		    1e-6 * sqrt(var));
	/* Quantiles come from the merged sketches: within 1% of the union's
	 * exact quantile as Prometheus computes it (ranks interpolated). */
	qsort(v, n, sizeof(v[0]), dbl_cmp);
	for (int i = 0; i <= 20; i++) {
		double phi = i / 20.0, h = phi * (double)(n - 1);
		size_t lo = (size_t)floor(h), hi = lo + 1 < n ? lo + 1 : lo;
		double want = v[lo] * (1 - (h - floor(h))) +
			      v[hi] * (h - floor(h)),
		       got;

		snprintf(q, sizeof(q), "quantile_over_time(%g, g[10m])", phi);
		got = inst1(x, q, t);
		if (fabs(got - want) > 0.01 * fabs(want))
			fail_msg("%s = %g, want %g within 1%%", q, got, want);
	}
	assert_true(isinf(inst1(x, "quantile_over_time(1.5, g[10m])", t)) > 0);
	assert_true(isinf(inst1(x, "quantile_over_time(-0.5, g[10m])", t)) < 0);
	/* Instant selector: the last value of the latest rollup. */
	assert_near(inst1(x, "g", t), gauge_at(t - 10 * SEC));
	assert_near(inst1(x, "g", t + 30 * SEC), gauge_at(t - 10 * SEC));
	/* Nothing in the window. */
	inst0(x, "avg_over_time(g[10m])", B - HOUR);
}

static void rollup_rate(void **state)
{
	struct fx *x = *state;
	int64_t t = B + 30 * MIN;
	struct gw_qresult r;

	rollup_fixture(x);
	/* From the first sample of the first window (20:00) to the last of
	 * the last (29:50): 590 over 590s, extrapolated 10s to the end. */
	inst(x, "increase(c[10m])", t, &r);
	assert_int_equal(r.tier, GW_TIER_1M);
	assert_near(val(&r, "{job=\"a\"}"), 600);
	gw_qresult_release(&r);
	assert_near(inst1(x, "rate(c[10m])", t), 1);
	assert_near(inst1(x, "irate(c[10m])", t), 1);
	assert_near(inst1(x, "delta(c[10m])", t), 600);
	/* One rollup in the window has six samples: a rate, as raw. */
	assert_near(inst1(x, "rate(c[1m])", t), 1);
	/* Recent enough for raw: the raw tier is read. */
	inst(x, "increase(c[1m])", rt0 - 10 * SEC, &r);
	assert_int_equal(r.tier, GW_TIER_RAW);
	gw_qresult_release(&r);
}

/*
 * Past raw retention, rate, increase and delta over rollups equal the raw
 * answers wherever the range is whole windows and no sample lies on a
 * window's edge, counter resets inside a window included (the issue's
 * counter: 694 from the windows' last values, 58,176 from Prometheus).
 */
static void rollup_rate_equals_raw(void **state)
{
	static const char *const exprs[] = {
		"increase(c2[5m])", "rate(c2[5m])", "delta(c2[5m])",
		"increase(c2[1m])", "rate(c2[2m])", "increase(c2[1h])",
	};
	struct fx *x = *state;
	size_t id;
	double c = 0;

	assert_int_equal(gw_fakeq_series(x->f, "c2", "", &id), 0);
	/* Every 10s, 3s past the grid; +970 a sample (about 97/s); resets
	 * to 5 in the middle of minute 31 and of minute 47. */
	for (int64_t k = 0; k < 6 * 60; k++) {
		int64_t t = B + 3 * SEC + k * 10 * SEC;

		c = (k == 31 * 6 + 3 || k == 47 * 6 + 2) ? 5 : c + 970 + k % 3;
		assert_int_equal(gw_fakeq_sample(x->f, id, t, c), 0);
	}
	for (size_t e = 0; e < sizeof(exprs) / sizeof(exprs[0]); e++) {
		for (int64_t t = B + 5 * MIN; t <= B + HOUR; t += MIN) {
			double raw, rollup;

			gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MIN);
			raw = inst1(x, exprs[e], t);
			gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
			rollup = inst1(x, exprs[e], t);
			if (!(fabs(rollup - raw) <= 1e-9 * fabs(raw)))
				fail_msg("%s at +%llds: raw %.17g, rollups "
					 "%.17g",
					 exprs[e], (long long)((t - B) / SEC),
					 raw, rollup);
		}
	}
	/* The minute with the reset, by itself: four increments of about
	 * 971 and the 5 after the reset over 50 s, extrapolated to 60 s
	 * (about 4,670), where the windows' last values alone give
	 * nothing. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
	{
		double v = inst1(x, "increase(c2[1m])", B + 32 * MIN);

		assert_true(v > 4600 && v < 4750);
	}
}

/* Rollups given directly: a reset counter and empty windows. */
static void rollup_given(void **state)
{
	struct fx *x = *state;
	struct gw_rollup ru;
	size_t id;
	const double last[] = { 100, 160, 10, 70 };

	assert_int_equal(gw_fakeq_series(x->f, "c", "", &id), 0);
	for (int i = 0; i < 4; i++) {
		gw_rollup_init(&ru, B + (i + 1) * MIN);
		assert_int_equal(
			gw_rollup_add(&ru, B + i * MIN + 30 * SEC, last[i]), 0);
		assert_int_equal(gw_fakeq_rollup(x->f, id, GW_TIER_1M, &ru), 0);
		gw_rollup_release(&ru);
	}
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
	/* Points at 0:30 1:30 2:30 3:30: 60 + (10 + 160) + 60 = 130 with the
	 * reset, over 180s; 30s (< 66s) extrapolated at each end. */
	assert_near(inst1(x, "increase(c[4m])", B + 4 * MIN),
		    130.0 * 240 / 180);
	assert_near(inst1(x, "irate(c[4m])", B + 4 * MIN), 1);
	assert_near(inst1(x, "irate(c[3m])", B + 3 * MIN), 10.0 / 60);
	assert_near(inst1(x, "count_over_time(c[4m])", B + 4 * MIN), 4);
	/* On the minute tier a value goes stale as a raw one does: 5 min
	 * after its sample (t_last, the lookback closed), not after its
	 * window's end. */
	assert_near(inst1(x, "c", B + 8 * MIN + 30 * SEC), 70);
	inst0(x, "c", B + 8 * MIN + 30 * SEC + 1);
}

/*
 * Raw samples answer wherever they are kept, at any step; the steps whose
 * windows reach past the raw horizon read the tier of min(step, smallest
 * range).  One select per selector and tier.
 */
static void tier_choice_and_single_load(void **state)
{
	struct fx *x = *state;
	const struct gw_fakeq_stats *st = gw_fakeq_stats(x->f);
	struct gw_qresult r;

	rollup_fixture(x);
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MIN);
	assert_int_equal(
		range(x, "rate(c[5m])", B + 10 * MIN, B + 110 * MIN, HOUR, &r),
		0);
	assert_int_equal(r.tier, GW_TIER_RAW);
	assert_int_equal(st->selects, 1);
	assert_int_equal(st->sel_tier, GW_TIER_RAW);
	gw_qresult_release(&r);

	/* Raw from B+50m: the step at B+10m (window from B+5m) reads the
	 * minute tier, the one at B+70m raw. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, B + 50 * MIN);
	assert_int_equal(
		range(x, "rate(c[5m])", B + 10 * MIN, B + 110 * MIN, HOUR, &r),
		0);
	assert_int_equal(r.tier, GW_TIER_1M);
	assert_int_equal(st->pick_step, 5 * MIN);
	assert_int_equal(st->selects, 3);
	assert_int_equal(st->sel_tier, GW_TIER_RAW);
	assert_int_equal(st->sel_mint, B + 65 * MIN); /* [t - 5m, t] */
	assert_int_equal(st->sel_maxt, B + 110 * MIN);
	assert_int_equal(r.nseries, 1);
	assert_int_equal(r.series[0].n, 2);
	assert_int_equal(r.series[0].p[1].t, B + 70 * MIN);
	assert_near(r.series[0].p[0].v, 1);
	assert_near(r.series[0].p[1].v, 1);
	assert_true(r.samples > 0);
	gw_qresult_release(&r);

	/* Without raw, a bare selector at a 2h step reads the hour tier;
	 * the window reaches back two hour windows (more than the
	 * lookback), and offset moves it. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MAX);
	assert_int_equal(range(x, "g offset 10m", B + 2 * HOUR, B + 2 * HOUR,
			       2 * HOUR, &r),
			 0);
	assert_int_equal(r.tier, GW_TIER_1H);
	assert_int_equal(st->sel_mint, B + 2 * HOUR - 10 * MIN - 2 * HOUR + 1);
	assert_int_equal(st->sel_maxt, B + 2 * HOUR - 10 * MIN);
	assert_int_equal(st->selects, 4);
	/* The hour ending at B+1h holds the samples of [B, B+1h). */
	assert_near(r.series[0].p[0].v, gauge_at(B + HOUR - 10 * SEC));
	gw_qresult_release(&r);

	/* Two selectors, two loads, one tier; an instant query is step 0. */
	gw_fakeq_retention(x->f, GW_TIER_RAW, INT64_MIN);
	inst(x, "rate(c[2m]) + on(job) g", B + HOUR, &r);
	assert_int_equal(st->selects, 6);
	assert_int_equal(r.tier, GW_TIER_RAW);
	assert_int_equal(st->pick_step, 0);
	gw_qresult_release(&r);
	/* No selector, no load. */
	inst(x, "1 + 1", B, &r);
	assert_int_equal(st->selects, 6);
	gw_qresult_release(&r);
}

/* ---- range queries ---- */

static void range_steps_and_merge(void **state)
{
	struct fx *x = *state;
	const double early[] = { 1, 2 }, late[] = { 5, 6 };
	struct gw_qresult r;

	series(x, "m", "s=\"early\"", B, 20 * SEC, 2, early); /* B, B+20s */
	series(x, "m", "s=\"late\"", B + 60 * SEC, 20 * SEC, 2, late);
	x->o.lookback_ms = 30 * SEC;
	assert_int_equal(range(x, "m", B, B + 90 * SEC, 30 * SEC, &r), 0);
	assert_int_equal(r.type, GW_TYPE_MATRIX);
	/* early at 0 and 30 (lookback 30s: 20s is within (0, 30]), late at
	 * 60 and 90 (80s within (60, 90]). */
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{\"__name__\":\"m\",\"s\":\"early\"},"
			"\"values\":[[3600000,\"1\"],[3600030,\"2\"]]},"
			"{\"metric\":{\"__name__\":\"m\",\"s\":\"late\"},"
			"\"values\":[[3600060,\"5\"],[3600090,\"6\"]]}]}");
	gw_qresult_release(&r);

	/* Steps stop at or before end; a scalar is one series without
	 * labels. */
	assert_int_equal(range(x, "time()", B, B + 50 * SEC, 20 * SEC, &r), 0);
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{},\"values\":[[3600000,\"3600000\"],["
			"3600020,\"3600020\"],[3600040,\"3600040\"]]}]}");
	gw_qresult_release(&r);

	/* Series appearing and disappearing under an aggregation; the
	 * output sorted by labels whatever the order they appeared in. */
	assert_int_equal(
		range(x, "sum by (s) (m)", B, B + 90 * SEC, 15 * SEC, &r), 0);
	assert_int_equal(r.nseries, 2);
	assert_int_equal(find(&r, "{s=\"early\"}")->n, 4); /* 0 15 30 45 */
	assert_int_equal(find(&r, "{s=\"late\"}")->n, 3);  /* 60 75 90 */
	gw_qresult_release(&r);
	assert_int_equal(range(x, "topk(1, m)", B, B + 90 * SEC, 30 * SEC, &r),
			 0);
	assert_int_equal(r.nseries, 2);
	assert_non_null(find(&r, "m{s=\"early\"}"));
	gw_qresult_release(&r);

	/* 11,001 points are allowed, as Prometheus. */
	assert_int_equal(range(x, "1", 0, 11000 * SEC, SEC, &r), 0);
	assert_int_equal(r.series[0].n, 11001);
	gw_qresult_release(&r);
}

static void range_errors(void **state)
{
	struct fx *x = *state;
	struct gw_qresult r;
	int rc;

	one(x, "a", "job=\"x\"", B, 1);
	one(x, "b", "job=\"x\"", B + 60 * SEC, 2);
	rc = range(x, "a[1m]", B, B + MIN, SEC, &r);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "invalid expression type \"range vector\" for "
			    "range query, must be Scalar or instant Vector");
	gw_qresult_release(&r);
	rc = range(x, "\"s\"", B, B + MIN, SEC, &r);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "invalid expression type \"string\" for range "
			    "query, must be Scalar or instant Vector");
	gw_qresult_release(&r);

	rc = range(x, "a", B, B + MIN, 0, &r);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "zero or negative query resolution step widths are "
			    "not accepted. Try a positive integer");
	gw_qresult_release(&r);
	rc = range(x, "a", B, B - 1, SEC, &r);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "end timestamp must not be before start time");
	gw_qresult_release(&r);
	rc = range(x, "a", 0, 11001 * SEC, SEC, &r);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	assert_string_equal(r.errmsg,
			    "exceeded maximum resolution of 11,000 points per "
			    "timeseries. Try "
			    "decreasing the query resolution (?step=XX)");
	gw_qresult_release(&r);
	rc = range(x, "a", INT64_MIN, INT64_MAX, 1, &r);
	assert_int_equal(r.err, GW_QERR_BAD_DATA);
	gw_qresult_release(&r);

	/* The same labels from two series after a name drop: fine while
	 * they never meet at a step (lookback 30s: a at B and, on the
	 * lookback's edge, B+30s; b at B+60s: 1 1 2, as Prometheus 2.42
	 * answers; its unary minus checks the whole range instead, see
	 * promql.md)... */
	x->o.lookback_ms = 30 * SEC;
	assert_int_equal(range(x, "abs({__name__=~\"a|b\"})", B, B + 60 * SEC,
			       30 * SEC, &r),
			 0);
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{\"job\":\"x\"},\"values\":["
			"[3600000,\"1\"],[3600030,\"1\"],[3600060,\"2\"]]}]}");
	gw_qresult_release(&r);
	/* ... an error once they do. */
	x->o.lookback_ms = 5 * MIN;
	rc = range(x, "abs({__name__=~\"a|b\"})", B, B + 60 * SEC, 30 * SEC,
		   &r);
	check_err(&r, rc, GW_QERR_EXECUTION,
		  "vector cannot contain metrics with the same labelset");
}

/* ---- window edges ---- */

/*
 * A sample exactly at t - range, or exactly a lookback old, is inside the
 * window (closed, as in Prometheus 2.42; 3.x made windows left-open), and
 * 1 ms later it is out; the same for a subquery's step at t - range, with
 * offset and @.  Every value here was also read from Prometheus 2.42 on
 * the same samples (promtool tsdb create-blocks-from openmetrics, then
 * /api/v1/query and query_range).
 */
static void window_edges_as_prometheus_2_42(void **state)
{
	struct fx *x = *state;
	const double m[] = { 1, 2, 3, 4 };
	double sq[121];
	struct gw_qresult r;

	series(x, "m", "job=\"a\"", B, 15 * SEC, 4, m); /* last at B+45s */
	for (size_t i = 0; i < 121; i++)
		sq[i] = (double)i;
	series(x, "sq", "s=\"a\"", B, 10 * SEC, 121, sq); /* i at B+10i s */

	/* The lookback: the last sample is exactly 5 min old. */
	assert_near(inst1(x, "m", B + 45 * SEC + 5 * MIN), 4);
	assert_near(inst1(x, "timestamp(m)", B + 45 * SEC + 5 * MIN), 3600045);
	inst0(x, "m", B + 45 * SEC + 5 * MIN + 1);

	/* absent_ and present_over_time see the sample at t - 30s. */
	inst0(x, "absent_over_time(m[30s])", B + 75 * SEC);
	assert_near(inst1(x, "present_over_time(m[30s])", B + 75 * SEC), 1);
	assert_near(inst1(x, "absent_over_time(m[30s])", B + 75 * SEC + 1), 1);
	inst0(x, "present_over_time(m[30s])", B + 75 * SEC + 1);

	/* Offset and @ move the window, edges included: [B+540s, B+600s]
	 * holds 54 ... 60. */
	assert_near(
		inst1(x, "count_over_time(sq[60s] offset 1m)", B + 660 * SEC),
		7);
	assert_near(
		inst1(x, "count_over_time(sq[60s] @ 3600600)", B + 900 * SEC),
		7);
	assert_near(inst1(x, "count_over_time(sq[60s] offset 1m)",
			  B + 660 * SEC + 1),
		    6);

	/* A subquery's steps: [1m:30s] at a multiple of 30s holds three
	 * (t - 60s, t - 30s, t), with an offset too; in a range query at
	 * every step. */
	assert_near(inst1(x, "count_over_time(sq[1m:30s])", B + 600 * SEC), 3);
	assert_near(inst1(x, "count_over_time(sq[1m:30s] offset 30s)",
			  B + 600 * SEC),
		    3);
	assert_near(inst1(x, "rate(sq[1m:30s])", B + 600 * SEC), 0.1);
	assert_near(inst1(x, "count_over_time(sq[1m:30s])", B + 600 * SEC + 1),
		    2);
	assert_int_equal(range(x, "count_over_time(sq[1m:30s])", B + 570 * SEC,
			       B + 630 * SEC, 30 * SEC, &r),
			 0);
	assert_json(&r, "{\"resultType\":\"matrix\",\"result\":["
			"{\"metric\":{\"s\":\"a\"},\"values\":["
			"[3600570,\"3\"],[3600600,\"3\"],[3600630,\"3\"]]}]}");
	gw_qresult_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(instant_selector_lookback_and_offset),
		T(instant_range_selector_is_matrix),
		T(rate_increase_delta_extrapolate),
		T(over_time_raw),
		T(last_over_time_keeps_name),
		T(same_labelset_after_name_drop),
		T(rollup_over_time),
		T(rollup_rate),
		T(rollup_rate_equals_raw),
		T(rollup_given),
		T(tier_choice_and_single_load),
		T(range_steps_and_merge),
		T(range_errors),
		T(window_edges_as_prometheus_2_42),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
