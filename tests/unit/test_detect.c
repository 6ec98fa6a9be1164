// SPDX-License-Identifier: MIT
/*
 * test_detect.c - the deployed detector (pipeline/detect.h): one alert per
 * episode, the lockout (at most a day), a model kept across silences,
 * the daily profile used only by series it
 * explains, the context channel; and the `timestamp,value` reader
 * (pipeline/tscsv.h).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/detect.h"
#include "pipeline/tscsv.h"

static uint64_t rng_state = 88172645463325252ull;

static double unif(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) * 0x1.0p-53;
}

static double noise(void)
{
	double u = unif(), v = unif();

	return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

struct run {
	struct gw_detect_config cfg;
	struct gw_detect d;
	int64_t t;
	unsigned onsets, ends;
};

static void run_init(struct run *r)
{
	assert_int_equal(gw_detect_config_init(&r->cfg, NULL), 0);
	gw_detect_init(&r->d);
	r->t = 1700000000000;
	r->onsets = r->ends = 0;
}

/* Feeds one sample 60 s after the last; returns its score. */
static double feed(struct run *r, double v)
{
	enum gw_detect_event ev;
	double s;

	r->t += 60000;
	s = gw_detect_update(&r->d, &r->cfg, r->t, v, &ev);
	r->onsets += ev == GW_DETECT_ONSET;
	r->ends += ev == GW_DETECT_END;
	return s;
}

static void one_alert_per_episode(void **state)
{
	struct run r;
	struct gw_detect_episode ep;
	int64_t spike;

	(void)state;
	run_init(&r);
	for (int i = 0; i < 500; i++)
		feed(&r, 100 + noise());
	assert_int_equal(r.onsets, 0);
	assert_false(gw_detect_episode(&r.d, &ep));
	/* A spike, a dip back, a second spike inside the lockout: one. */
	assert_true(feed(&r, 150) >= 0.9);
	spike = r.t;
	for (int i = 0; i < 20; i++)
		feed(&r, 100 + noise());
	feed(&r, 160);
	assert_int_equal(r.onsets, 1);
	assert_true(gw_detect_episode(&r.d, &ep));
	assert_true(ep.active);
	assert_int_equal(ep.onset_ms, spike);
	assert_int_equal(ep.peak_ms, r.t);
	assert_true(ep.peak > 0.99);
	/* Quiet past the lockout: the episode ends, its end the last high
	 * sample. */
	for (int i = 0; i < 200; i++)
		feed(&r, 100 + noise());
	assert_int_equal(r.ends, 1);
	assert_true(gw_detect_episode(&r.d, &ep));
	assert_false(ep.active);
	assert_true(ep.end_ms >= ep.peak_ms);
	/* A later spike is a new episode. */
	feed(&r, 150);
	assert_int_equal(r.onsets, 2);
	assert_int_equal(r.d.episodes, 2);
}

/* Feeds one sample dt_ms after the last; returns its score. */
static double feed_after(struct run *r, int64_t dt_ms, double v)
{
	r->t += dt_ms - 60000;
	return feed(r, v);
}

/* Hourly samples, a spike, a day and more of quiet, a second spike: the
 * lockout (128 samples, five days here) ends at a day, so the second
 * spike is an alert of its own.  lockout_s: the configured cap. */
static unsigned hourly_spikes(uint32_t lockout_s, unsigned *ends)
{
	struct gw_detect_opts o;
	struct run r;

	run_init(&r);
	gw_detect_opts_default(&o);
	assert_int_equal(o.lockout_s, 86400);
	o.lockout_s = lockout_s;
	assert_int_equal(gw_detect_config_init(&r.cfg, &o), 0);
	for (int i = 0; i < 500; i++)
		feed_after(&r, 3600000, 100 + noise());
	assert_int_equal(r.onsets, 0);
	assert_true(feed_after(&r, 3600000, 150) >= 0.9);
	for (int i = 0; i < 30; i++)
		feed_after(&r, 3600000, 100 + noise());
	assert_true(feed_after(&r, 3600000, 150) >= 0.9);
	*ends = r.ends;
	return r.onsets;
}

static void lockout_lasts_at_most_a_day(void **state)
{
	unsigned ends;

	(void)state;
	assert_int_equal(hourly_spikes(86400, &ends), 2);
	assert_int_equal(ends, 1);
	/* The same samples with the lockout in samples alone: one. */
	assert_int_equal(hourly_spikes(30 * 86400, &ends), 1);
	assert_int_equal(ends, 0);
}

/* A silence keeps the model: the first sample after two days is judged
 * against what the series did before, and one that comes back elsewhere
 * is news until the new level is accepted. */
static void silence_keeps_the_model(void **state)
{
	struct run r;
	int i;

	(void)state;
	run_init(&r);
	for (i = 0; i < 500; i++)
		feed(&r, 100 + noise());
	assert_true(feed_after(&r, 2 * 86400000LL, 100 + noise()) < 0.5);
	assert_int_equal(r.d.b.rewarms, 0);
	assert_true(feed_after(&r, 3 * 86400000LL, 150) >= 0.9);
	assert_int_equal(r.onsets, 1);
	for (i = 0; i < 20 && !(feed(&r, 150 + noise()) < 0.5); i++)
		;
	assert_true(i <= 12);
	assert_int_equal(r.d.b.rewarms, 0);
	/* Past the longest gap the model starts again: learning. */
	assert_true(isnan(feed_after(&r, 31 * 86400000LL, 150)));
	assert_int_equal(r.d.b.rewarms, 1);
}

static void learning_and_bad_samples_open_nothing(void **state)
{
	struct run r;

	(void)state;
	run_init(&r);
	for (int i = 0; i < 63; i++) {
		feed(&r, i % 2 ? 1e9 : -1e9);
		assert_int_equal(r.onsets, 0);
	}
	for (int i = 0; i < 300; i++)
		assert_true(isnan(feed(&r, NAN)));
	assert_int_equal(r.onsets, 0);
}

/* A daily cycle of amplitude 50 and noise 1, 5-minute samples. */
static double daily(int64_t t_ms)
{
	return 100 + 50 * sin(2 * M_PI * (double)(t_ms % 86400000) / 86400000);
}

static void profile_is_used_where_it_explains(void **state)
{
	struct run cyc, flat;
	double e;

	(void)state;
	run_init(&cyc);
	run_init(&flat);
	cyc.cfg.b.o.season_period_s = 86400;
	for (int i = 0; i < 4 * 288; i++) {
		cyc.t += 240000; /* 5-minute samples */
		feed(&cyc, daily(cyc.t + 60000) + noise());
		flat.t += 240000;
		feed(&flat, 100 + noise());
	}
	/* The cycle's expected value follows the cycle towards its crest
	 * (150; the level alone is 100) ... */
	{
		int64_t crest = cyc.t - cyc.t % 86400000 + 86400000 + 21600000;

		e = gw_baseline_expected(&cyc.d.b, &cyc.cfg.b, &cyc.d.season,
					 crest - 60000);
		assert_true(e > 125 && e < 160);
	}
	/* ... and the flat series' stays its level (no profile noise). */
	e = gw_baseline_expected(&flat.d.b, &flat.cfg.b, &flat.d.season,
				 flat.t + 6 * 3600000);
	assert_true(fabs(e - 100) < 1);
	/* Both were judged from the warm-up on, a day of cycle included,
	 * and a cycle judged against its profile raises nothing after the
	 * first period. */
	assert_true(cyc.onsets <= 2);
	assert_int_equal(flat.onsets, 0);
	{
		unsigned before = cyc.onsets;

		for (int i = 0; i < 2 * 288; i++) {
			cyc.t += 240000;
			feed(&cyc, daily(cyc.t + 60000) + noise());
		}
		assert_int_equal(cyc.onsets, before);
	}
}

/* A square wave between 0 and 10 (period 4 samples, noise 0.1): its
 * baseline (level 5, a wide band) judges a value of 5 usual.  Inside the
 * range but a shape never seen before, the context channel flags it, once;
 * with the channel off nothing does.  Uniform noise over the same range,
 * whose contexts keep coming new, never raises the channel. */
static unsigned square_then_middle(bool novelty, double *score)
{
	struct run r;

	run_init(&r);
	r.cfg.novelty = novelty;
	for (int i = 0; i < 1000; i++)
		feed(&r, (i / 2) % 2 ? 10 + 0.1 * noise() : 0.1 * noise());
	assert_int_equal(r.onsets, 0);
	*score = feed(&r, 5);
	for (int i = 0; i < 3; i++)
		feed(&r, 5 + 0.1 * noise());
	return r.onsets;
}

static void new_contexts_are_news(void **state)
{
	struct run r;
	double s;

	(void)state;
	assert_int_equal(square_then_middle(true, &s), 1);
	assert_true(s >= 0.9);
	assert_int_equal(square_then_middle(false, &s), 0);
	assert_true(s < 0.5);
	run_init(&r);
	for (int i = 0; i < 20000; i++)
		feed(&r, 10 * unif());
	assert_int_equal(r.onsets, 0);
}

/* The agreement: on the square wave with new contexts coming at 3% (past
 * the channel's 1%), a new shape alone is not news, nor is a value at
 * 5.9-6.9 sigma alone; the two within a few samples are. */
static double square_then(bool novelty, double score, unsigned *onsets)
{
	struct run r;
	double sg, v;

	run_init(&r);
	r.cfg.novelty = novelty;
	for (int i = 0; i < 1000; i++)
		feed(&r, (i / 2) % 2 ? 10 + 0.1 * noise() : 0.1 * noise());
	r.d.nov.rate = 0.03f;
	feed(&r, 5); /* a new context */
	assert_int_equal(r.onsets, 0);
	/* sigma against the level alone (no profile learned yet) */
	sg = 1.2533141373155003 * r.d.b.dev0;
	v = gw_baseline_expected(&r.d.b, &r.cfg.b, &r.d.season, r.t + 60000) +
	    gw_baseline_z_for_score(&r.cfg.b, score) * sg;
	score = feed(&r, v);
	*onsets = r.onsets;
	return score;
}

static void agreement_of_both_channels(void **state)
{
	unsigned onsets;
	double s;

	(void)state;
	s = square_then(false, 0.85, &onsets);
	assert_true(s >= 0.8 && s < 0.9); /* the premise: 0.85 alone */
	assert_int_equal(onsets, 0);
	s = square_then(true, 0.85, &onsets);
	assert_int_equal(onsets, 1);
	assert_true(s >= 0.9);
	s = square_then(true, 0.7, &onsets); /* too weak to agree */
	assert_int_equal(onsets, 0);
}

static void options_are_checked(void **state)
{
	struct gw_detect_opts o;
	struct gw_detect_config c;

	(void)state;
	gw_detect_opts_default(&o);
	assert_int_equal(gw_detect_config_init(&c, &o), 0);
	o.threshold = 0;
	assert_int_equal(gw_detect_config_init(&c, &o), -EINVAL);
	gw_detect_opts_default(&o);
	o.quiet_samples = 0;
	assert_int_equal(gw_detect_config_init(&c, &o), -EINVAL);
	gw_detect_opts_default(&o);
	o.lockout_s = 0;
	assert_int_equal(gw_detect_config_init(&c, &o), -EINVAL);
	o.lockout_s = 30 * 86400 + 1;
	assert_int_equal(gw_detect_config_init(&c, &o), -EINVAL);
	gw_detect_opts_default(&o);
	o.baseline.tau_level = 0;
	assert_int_equal(gw_detect_config_init(&c, &o), -EINVAL);
}

static int line(struct gw_tscsv *r, const char *s, int64_t *t, double *v)
{
	return gw_tscsv_line(r, s, strlen(s), t, v);
}

static void csv_lines(void **state)
{
	struct gw_tscsv r;
	int64_t t;
	double v;
	char buf[40];

	(void)state;
	gw_tscsv_init(&r);
	assert_int_equal(line(&r, "timestamp,value", &t, &v), 0);
	assert_int_equal(line(&r, "2014-04-01 00:00:00,20.5\r", &t, &v), 1);
	assert_int_equal(t, 1396310400000);
	assert_true(v == 20.5);
	assert_int_equal(line(&r, "2014-04-01T00:00:00.25Z,1e3", &t, &v), 1);
	assert_int_equal(t, 1396310400250);
	assert_int_equal(line(&r, "2014-04-01 02:00:00+02:00,-1", &t, &v), 1);
	assert_int_equal(t, 1396310400000);
	assert_int_equal(line(&r, "1396310400.5,NaN", &t, &v), 1);
	assert_int_equal(t, 1396310400500);
	assert_true(isnan(v));
	assert_int_equal(line(&r, "", &t, &v), 0);
	assert_int_equal(line(&r, "# note", &t, &v), 0);
	/* A header after data is an error, with its line number. */
	assert_int_equal(line(&r, "timestamp,value", &t, &v), -EINVAL);
	assert_string_equal(r.err, "line 8: 'timestamp' is not a timestamp "
				   "(YYYY-MM-DD HH:MM:SS[.fff][Z|+HH:MM] or "
				   "Unix seconds)");
	assert_int_equal(line(&r, "2014-02-30 00:00:00,1", &t, &v), -EINVAL);
	assert_int_equal(line(&r, "2014-04-01 00:00:00", &t, &v), -EINVAL);
	assert_string_equal(r.err, "line 10: expected TIMESTAMP,VALUE (no "
				   "comma)");
	assert_int_equal(line(&r, "2014-04-01 00:00:00,1,2", &t, &v), -EINVAL);
	assert_int_equal(line(&r, "2014-04-01 00:00:00,0x1p3", &t, &v),
			 -EINVAL);
	assert_int_equal(line(&r, "2014-04-01 00:00:00,", &t, &v), -EINVAL);
	assert_int_equal(r.samples, 4);
	gw_tscsv_fmt_time(1396310400250, buf, sizeof(buf));
	assert_string_equal(buf, "2014-04-01 00:00:00.250");
	gw_tscsv_fmt_time(-1, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31 23:59:59.999");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_alert_per_episode),
		cmocka_unit_test(lockout_lasts_at_most_a_day),
		cmocka_unit_test(silence_keeps_the_model),
		cmocka_unit_test(learning_and_bad_samples_open_nothing),
		cmocka_unit_test(profile_is_used_where_it_explains),
		cmocka_unit_test(new_contexts_are_news),
		cmocka_unit_test(agreement_of_both_channels),
		cmocka_unit_test(options_are_checked),
		cmocka_unit_test(csv_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
