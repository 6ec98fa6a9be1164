// SPDX-License-Identifier: MIT
/*
 * test_baseline.c - the dynamic baseline on synthetic series (fixed seeds):
 * warm-up, false-positive rate on noise, spikes, level shifts and the
 * sustained-surprise reset, constant series and the scale floor, trends,
 * NaN/Inf, daily seasonality, gaps and irregular timestamps, the band, and
 * options validation.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/baseline.h"

/* ---- helpers ---- */

static uint64_t rng_state;

static void seed(uint64_t s)
{
	rng_state = s * 0x9e3779b97f4a7c15ull + 1;
}

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static double unif(void)
{
	return (double)(rnd() >> 11) * 0x1.0p-53;
}

static double normal(void)
{
	double u = unif(), v = unif();

	return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

static void config(struct gw_baseline_config *cfg,
		   const struct gw_baseline_opts *o)
{
	assert_int_equal(gw_baseline_config_init(cfg, o), 0);
}

/* Feeds n samples of level + sd * N(0, 1) at 1 s spacing from *t. */
static void feed_noise(struct gw_baseline *b,
		       const struct gw_baseline_config *cfg, int64_t *t, int n,
		       double level, double sd)
{
	for (int i = 0; i < n; i++) {
		(void)gw_baseline_update(b, cfg, NULL, *t,
					 level + sd * normal());
		*t += 1000;
	}
}

/* ---- tests ---- */

static void warmup_returns_learning(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline_opts o;
	struct gw_baseline b;
	int64_t t = 0;

	(void)state;
	seed(1);
	config(&cfg, NULL);
	gw_baseline_init(&b);
	for (uint32_t i = 0; i < cfg.o.warmup_samples; i++) {
		assert_true(gw_baseline_learning(&b, &cfg, NULL, t));
		assert_true(isnan(
			gw_baseline_update(&b, &cfg, NULL, t, 10 + normal())));
		t += 1000;
	}
	assert_false(gw_baseline_learning(&b, &cfg, NULL, t));
	assert_false(isnan(gw_baseline_update(&b, &cfg, NULL, t, 10)));

	/* warmup_s: time counts too. */
	gw_baseline_opts_default(&o);
	o.warmup_samples = 2;
	o.warmup_s = 100;
	config(&cfg, &o);
	gw_baseline_init(&b);
	for (t = 0; t < 100000; t += 1000)
		assert_true(isnan(gw_baseline_update(&b, &cfg, NULL, t, 5)));
	assert_false(isnan(gw_baseline_update(&b, &cfg, NULL, t, 5)));
}

static void noise_few_false_positives(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline b;
	int high = 0, scored = 0;
	const int n = 200000;

	(void)state;
	seed(2);
	config(&cfg, NULL);
	gw_baseline_init(&b);
	for (int i = 0; i < n; i++) {
		double s = gw_baseline_update(&b, &cfg, NULL, i * 1000LL,
					      1000 + 5 * normal());

		if (isnan(s))
			continue;
		assert_true(s >= 0 && s <= 1);
		scored++;
		high += s >= 0.5;
	}
	assert_int_equal(scored, n - (int)cfg.o.warmup_samples);
	/* a normal exceeds 4 sigma 6e-5 of the time; allow for the
	 * estimation noise of the scale but not for a drifting model */
	assert_true(high < n / 2000);
	assert_int_equal(b.resets, 0);
}

static void spike_scores_near_one(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline b;
	int64_t t = 0;
	double lvl;

	(void)state;
	seed(3);
	config(&cfg, NULL);
	gw_baseline_init(&b);
	feed_noise(&b, &cfg, &t, 2000, 70, 1);
	lvl = gw_baseline_expected(&b, &cfg, NULL, t);
	assert_true(fabs(lvl - 70) < 0.3);
	for (int i = 0; i < 2; i++, t += 1000)
		assert_true(gw_baseline_update(&b, &cfg, NULL, t, 70 + 25) >
			    0.95);
	/* the clipped update: two spikes do not drag the baseline (unclipped
	 * they would move it 2 * 25 / tau_level = 0.78) */
	assert_true(fabs(gw_baseline_expected(&b, &cfg, NULL, t) - lvl) < 0.25);
	/* the shift term calms down within a few tau_fast */
	feed_noise(&b, &cfg, &t, 4 * (int)cfg.o.tau_fast, 70, 1);
	assert_true(gw_baseline_update(&b, &cfg, NULL, t, 70.5) < 0.5);
	t += 1000;
	assert_true(gw_baseline_update(&b, &cfg, NULL, t, 70 - 15) > 0.95);
	assert_int_equal(b.resets, 0);
}

static void level_shift_relearned(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline b;
	int64_t t = 0;
	const double steps[] = { 20, -8, 1000 };

	(void)state;
	seed(4);
	config(&cfg, NULL);
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		gw_baseline_init(&b);
		feed_noise(&b, &cfg, &t, 1000, 100, 1);
		for (int i = 0; i < 2000; i++) {
			double s = gw_baseline_update(
				&b, &cfg, NULL, t, 100 + steps[k] + normal());

			t += 1000;
			if (i == 0)
				assert_true(s > 0.9);
			/* documented bound: reset_samples samples, plus a
			 * few for the fast EWMA to settle in the noise */
			if (i >
			    (int)cfg.o.reset_samples + 2 * (int)cfg.o.tau_fast)
				assert_true(s < 0.5);
		}
		assert_true(b.resets >= 1);
		assert_true(fabs(gw_baseline_expected(&b, &cfg, NULL, t) - 100 -
				 steps[k]) < 0.5);
	}
}

static void constant_series(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline b;
	int64_t t = 0;
	const double levels[] = { 42, 0, -3e9, 1e-6 };

	(void)state;
	config(&cfg, NULL);
	for (size_t k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
		double c = levels[k], s, bump;

		gw_baseline_init(&b);
		for (int i = 0; i < 5000; i++, t += 1000) {
			s = gw_baseline_update(&b, &cfg, NULL, t, c);
			assert_true(isnan(s) || s == 0);
		}
		/* a change of 0.01% of the level is below the floor ... */
		if (c != 0) {
			s = gw_baseline_update(&b, &cfg, NULL, t, c * 1.0001);
			t += 1000;
			assert_true(s < 0.5);
		}
		/* ... one of 1% (or 1 on a zero series) is an anomaly */
		bump = c != 0 ? c * 0.01 : 1;
		s = gw_baseline_update(&b, &cfg, NULL, t, c + bump);
		t += 1000;
		assert_true(s > 0.9);
	}

	/* a quantised series (integer percent, mostly 50, sometimes 51): a
	 * one-quantum move is never an anomaly */
	gw_baseline_init(&b);
	for (int i = 0; i < 5000; i++, t += 1000) {
		double s = gw_baseline_update(&b, &cfg, NULL, t,
					      i % 97 == 0 ? 51 : 50);

		assert_true(isnan(s) || s < 0.5);
	}
}

static void slow_trend_not_anomalous(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline b;
	int high = 0;

	(void)state;
	seed(5);
	config(&cfg, NULL);
	gw_baseline_init(&b);
	/* a rise of 200 sigma over the run, 0.01 sigma per sample */
	for (int i = 0; i < 20000; i++) {
		double s = gw_baseline_update(&b, &cfg, NULL, i * 1000LL,
					      40 + 0.01 * i + normal());

		high += !isnan(s) && s >= 0.5;
	}
	assert_true(high < 20);
	assert_true(fabs(gw_baseline_expected(&b, &cfg, NULL, 20000000) -
			 (40 + 0.01 * 20000)) < 2);
}

static void nan_and_inf_ignored(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline a, b;
	const double bad[] = { NAN, INFINITY, -INFINITY };

	(void)state;
	config(&cfg, NULL);
	gw_baseline_init(&a);
	gw_baseline_init(&b);
	seed(6);
	for (int i = 0; i < 3000; i++) {
		double v = 20 + normal();
		double sa = gw_baseline_update(&a, &cfg, NULL, i * 1000LL, v);
		double sb;

		if (i % 7 == 3)
			assert_true(isnan(gw_baseline_update(
				&b, &cfg, NULL, i * 1000LL - 500, bad[i % 3])));
		sb = gw_baseline_update(&b, &cfg, NULL, i * 1000LL, v);
		assert_true((isnan(sa) && isnan(sb)) || sa == sb);
	}
	assert_true(b.ignored > 400);
	assert_int_equal(a.ignored, 0);
	b.ignored = 0;
	assert_memory_equal(&a, &b, sizeof(a));

	/* a sample older than the last one is ignored too */
	assert_true(isnan(gw_baseline_update(&b, &cfg, NULL, 0, 1e9)));
	assert_int_equal(b.ignored, 1);
}

/* A daily peak: 50 at night, 80 around PEAK_H o'clock, noise sd 1; 5-min
 * samples. */
#define DAY_MS	(86400LL * 1000)
#define STEP_MS (300LL * 1000)

static double daily(int64_t t, double peak_h)
{
	double h = (double)(t % DAY_MS) / 3600000.0, d = (h - peak_h) / 1.5;

	return 50 + 30 * exp(-d * d) + normal();
}

static void seasonality(void **state)
{
	struct gw_baseline_config cfg, plain;
	struct gw_baseline_opts o;
	struct gw_baseline b, bp;
	struct gw_baseline_season s;
	double max_on = 0, max_off = 0, max_wrong = 0;
	int64_t t;

	(void)state;
	seed(7);
	gw_baseline_opts_default(&o);
	o.seasonal = true;
	config(&cfg, &o);
	config(&plain, NULL);
	gw_baseline_init(&b);
	gw_baseline_init(&bp);
	gw_baseline_season_init(&s);
	for (t = 0; t < 7 * DAY_MS; t += STEP_MS) {
		double v = daily(t, 14);

		(void)gw_baseline_update(&b, &cfg, &s, t, v);
		(void)gw_baseline_update(&bp, &plain, NULL, t, v);
	}
	/* day 8: the peak where it always is */
	for (; t < 8 * DAY_MS; t += STEP_MS) {
		double v = daily(t, 14);

		max_on = fmax(max_on, gw_baseline_update(&b, &cfg, &s, t, v));
		max_off = fmax(max_off,
			       gw_baseline_update(&bp, &plain, NULL, t, v));
	}
	assert_true(max_on < 0.5);
	assert_true(max_off > 0.5); /* what the profile is for */
	/* at 14:00 the band is around the peak */
	assert_true(fabs(gw_baseline_expected(&b, &cfg, &s,
					      8 * DAY_MS + 14 * 3600000LL) -
			 80) < 3);
	/* day 9: the same peak at 3 o'clock */
	for (; t < 8 * DAY_MS + 6 * 3600000LL; t += STEP_MS)
		max_wrong = fmax(max_wrong, gw_baseline_update(&b, &cfg, &s, t,
							       daily(t, 3)));
	assert_true(max_wrong > 0.9);
}

/* The daily shape, up to 20 lower around noon (+-3 h) on two days of every
 * week (days 5 and 6 of each week since the epoch), at 30-minute samples. */
#define WEEK_MS (7 * DAY_MS)
#define HALF_H	(1800LL * 1000)

static double weekly(int64_t t, bool weekend_everyday)
{
	double h = (double)(t % DAY_MS) / 3600000.0, d = (h - 12) / 3;
	bool weekend = (t / DAY_MS) % 7 >= 5 || weekend_everyday;

	return daily(t, 14) - (weekend ? 20 * exp(-d * d) : 0);
}

/* Five weeks, the last one judged: max score over the fifth week, and
 * over a weekday's daytime at the weekend's level after it. */
static void week_run(bool week, double *usual, double *wrong, double *ex)
{
	struct gw_baseline_config cfg;
	struct gw_baseline_opts o;
	struct gw_baseline b;
	struct gw_baseline_season s;
	int64_t t, sat;

	seed(12);
	gw_baseline_opts_default(&o);
	o.seasonal = true;
	o.season_auto = true;
	o.season_recur = 1.5;
	o.season_week = week;
	config(&cfg, &o);
	gw_baseline_init(&b);
	gw_baseline_season_init(&s);
	for (t = 0; t < 4 * WEEK_MS; t += HALF_H)
		(void)gw_baseline_update(&b, &cfg, &s, t, weekly(t, false));
	/* noon of the fifth week's first weekend day */
	sat = 4 * WEEK_MS + 5 * DAY_MS + 12 * 3600000LL;
	*usual = 0;
	for (; t < 5 * WEEK_MS; t += HALF_H) {
		double sc;

		if (t == sat)
			*ex = gw_baseline_expected(&b, &cfg, &s, t) -
			      (daily(t, 14) - 20);
		sc = gw_baseline_update(&b, &cfg, &s, t, weekly(t, false));
		*usual = fmax(*usual, sc);
	}
	/* day 0 of the sixth week until noon at the weekend's level */
	*wrong = 0;
	for (t = 5 * WEEK_MS; t < 5 * WEEK_MS + 12 * 3600000LL; t += HALF_H)
		*wrong = fmax(*wrong, gw_baseline_update(&b, &cfg, &s, t,
							 weekly(t, true)));
}

static void weekly_profile(void **state)
{
	double usual, wrong, ex;

	(void)state;
	week_run(true, &usual, &wrong, &ex);
	assert_true(usual < 0.5);  /* the weekend is usual */
	assert_true(fabs(ex) < 4); /* the band follows it */
	assert_true(wrong > 0.9);  /* a weekday at its level is not */
	week_run(false, &usual, &wrong, &ex);
	assert_true(usual > 0.9); /* without it, every weekend is news */
	assert_true(fabs(ex) > 10);
}

/* Noise around 10 with a one-sample spike to 40 at 03:00 (+- 10 min) every
 * day: with recurrence the nightly spike stops being news from its second
 * night on; the same spike at 15:00 still is, and so is the first night's. */
static void recur_run(double recur, int days, double *first, double *last,
		      double *other)
{
	struct gw_baseline_config cfg;
	struct gw_baseline_opts o;
	struct gw_baseline b;
	struct gw_baseline_season s;
	int64_t t;

	seed(11);
	gw_baseline_opts_default(&o);
	o.seasonal = true;
	o.season_auto = true;
	o.season_recur = recur;
	config(&cfg, &o);
	gw_baseline_init(&b);
	gw_baseline_season_init(&s);
	*first = *last = *other = 0;
	for (t = 0; t < days * DAY_MS; t += STEP_MS) {
		int64_t day = t / DAY_MS, tod = t % DAY_MS;
		int64_t at = 3 * 3600000LL + ((day * 7) % 5 - 2) * STEP_MS;
		bool spike = tod == at,
		     late = day == days - 1 && tod == 15 * 3600000LL;
		double v = 10 + normal() + (spike || late ? 30 : 0);
		double sc = gw_baseline_update(&b, &cfg, &s, t, v);

		if (spike && day == 1)
			*first = sc;
		if (spike && day == days - 1)
			*last = sc;
		if (late)
			*other = sc;
	}
}

static void recurrence(void **state)
{
	double first, last, other;

	(void)state;
	recur_run(1.5, 8, &first, &last, &other);
	assert_true(first > 0.9); /* nothing earlier at 03:00 */
	assert_true(last < 0.5);  /* the eighth night: usual */
	assert_true(other > 0.9); /* the same spike at 15:00: news */
	recur_run(0, 8, &first, &last, &other);
	assert_true(last > 0.9); /* without recurrence, every night fires */
}

static void gaps_and_irregular_timestamps(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline_opts o;
	struct gw_baseline b;
	int64_t t = 0;

	(void)state;
	seed(8);
	config(&cfg, NULL);
	gw_baseline_init(&b);
	/* jittered 1 s +- 0.4 s spacing: no re-warm, judged normally */
	for (int i = 0; i < 5000; i++) {
		double s = gw_baseline_update(&b, &cfg, NULL, t, 5 + normal());

		if (i > 100)
			assert_true(!isnan(s));
		t += 600 + (int64_t)(rnd() % 801);
	}
	assert_int_equal(b.rewarms, 0);
	/* an hour's gap re-warms: the level is learned again, so coming back
	 * at another level is not an anomaly */
	t += 3600 * 1000;
	for (uint32_t i = 0; i <= cfg.o.warmup_samples; i++, t += 1000)
		assert_true(isnan(gw_baseline_update(&b, &cfg, NULL, t,
						     500 + normal())) ==
			    (i < cfg.o.warmup_samples));
	assert_int_equal(b.rewarms, 1);
	assert_true(fabs(gw_baseline_expected(&b, &cfg, NULL, t) - 500) < 1);

	/* an explicit gap_s: 20 s gaps are fine under gap_s = 60 */
	gw_baseline_opts_default(&o);
	o.gap_s = 60;
	config(&cfg, &o);
	gw_baseline_init(&b);
	for (int i = 0; i < 200; i++)
		(void)gw_baseline_update(&b, &cfg, NULL, i * 20000LL,
					 5 + normal());
	assert_int_equal(b.rewarms, 0);
	(void)gw_baseline_update(&b, &cfg, NULL, 200 * 20000LL + 61000, 5);
	assert_int_equal(b.rewarms, 1);
}

static void band_and_expected(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline b;
	double lo, hi, e, sg;
	int64_t t = 0;

	(void)state;
	seed(9);
	config(&cfg, NULL);
	gw_baseline_init(&b);
	assert_true(isnan(gw_baseline_expected(&b, &cfg, NULL, 0)));
	assert_int_equal(gw_baseline_band(&b, &cfg, NULL, 0, 0.5, &lo, &hi),
			 -EAGAIN);
	feed_noise(&b, &cfg, &t, 5000, 30, 2);
	e = gw_baseline_expected(&b, &cfg, NULL, t);
	sg = gw_baseline_sigma(&b, &cfg);
	assert_true(fabs(e - 30) < 0.5);
	assert_true(fabs(sg - 2) < 0.4);
	assert_true(fabs(gw_baseline_z_for_score(&cfg, 0.5) - cfg.o.z_half) <
		    1e-12);
	assert_int_equal(gw_baseline_band(&b, &cfg, NULL, t, 0.5, &lo, &hi), 0);
	assert_true(fabs(hi - (e + cfg.o.z_half * sg)) < 1e-9);
	assert_true(fabs(lo - (e - cfg.o.z_half * sg)) < 1e-9);
	/* just inside and just outside the 0.9 band */
	assert_int_equal(gw_baseline_band(&b, &cfg, NULL, t, 0.9, &lo, &hi), 0);
	{
		struct gw_baseline c = b;

		assert_true(gw_baseline_update(&c, &cfg, NULL, t, hi - 0.01) <
			    0.9);
		c = b;
		assert_true(gw_baseline_update(&c, &cfg, NULL, t, hi + 0.01) >=
			    0.9);
	}
	assert_int_equal(gw_baseline_band(&b, &cfg, NULL, t, 1, &lo, &hi),
			 -EINVAL);
	assert_int_equal(gw_baseline_band(&b, &cfg, NULL, t, 0, &lo, &hi),
			 -EINVAL);
	assert_true(isnan(gw_baseline_z_for_score(&cfg, NAN)));
}

static void options_validation(void **state)
{
	struct gw_baseline_config cfg;
	struct gw_baseline_opts o;
	struct {
		struct gw_baseline_opts o;
		uint64_t extra;
	} big;

	(void)state;
	config(&cfg, NULL);
	assert_int_equal(cfg.o.warmup_samples, 64);
	assert_true(sizeof(struct gw_baseline) <= 256);

#define BAD(stmt)                                                              \
	do {                                                                   \
		gw_baseline_opts_default(&o);                                  \
		stmt;                                                          \
		assert_int_equal(gw_baseline_config_init(&cfg, &o), -EINVAL);  \
	} while (0)
	BAD(o.sz = 4);
	BAD(o.warmup_samples = 1);
	BAD(o.tau_level = 0);
	BAD(o.tau_fast = o.tau_level + 1);
	BAD(o.tau_scale = 0);
	BAD(o.reset_samples = 0);
	BAD(o.z_half = 0);
	BAD(o.z_half = NAN);
	BAD(o.clip = 0.5);
	BAD(o.rel_floor = -1);
	BAD(o.warmup_s = 31 * 86400);
	BAD((o.seasonal = true, o.season_bins = GW_BASELINE_MAX_BINS + 1));
	BAD((o.seasonal = true, o.season_bins = 1));
	BAD((o.seasonal = true, o.season_period_s = 10));
	BAD(o.season_recur = -1);
	BAD(o.season_recur = NAN);
#undef BAD
	/* out-of-range season fields do not matter with seasonality off */
	gw_baseline_opts_default(&o);
	o.season_bins = 1000;
	assert_int_equal(gw_baseline_config_init(&cfg, &o), 0);

	/* an older, shorter struct: defaults for what it lacks */
	gw_baseline_opts_default(&o);
	o.sz = offsetof(struct gw_baseline_opts, tau_fast);
	o.warmup_samples = 10;
	o.tau_level = 7777;
	assert_int_equal(gw_baseline_config_init(&cfg, &o), 0);
	assert_int_equal(cfg.o.warmup_samples, 10);
	assert_int_equal(cfg.o.tau_level, 64);

	/* a newer, longer struct: zeros past the known fields */
	memset(&big, 0, sizeof(big));
	gw_baseline_opts_default(&big.o);
	big.o.sz = sizeof(big);
	assert_int_equal(gw_baseline_config_init(&cfg, &big.o), 0);
	big.extra = 1;
	assert_int_equal(gw_baseline_config_init(&cfg, &big.o), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(warmup_returns_learning),
		cmocka_unit_test(noise_few_false_positives),
		cmocka_unit_test(spike_scores_near_one),
		cmocka_unit_test(level_shift_relearned),
		cmocka_unit_test(constant_series),
		cmocka_unit_test(slow_trend_not_anomalous),
		cmocka_unit_test(nan_and_inf_ignored),
		cmocka_unit_test(seasonality),
		cmocka_unit_test(recurrence),
		cmocka_unit_test(weekly_profile),
		cmocka_unit_test(gaps_and_irregular_timestamps),
		cmocka_unit_test(band_and_expected),
		cmocka_unit_test(options_validation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
