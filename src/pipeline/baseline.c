// SPDX-License-Identifier: MIT
/*
 * baseline.c - robust EWMA location and scale with an optional seasonal
 * profile and a sustained-surprise reset; see baseline.h for the contract
 * and docs/internals/baselines.md for the reasoning and the NAB results.
 *
 * State machine of one series:
 *
 *   empty --first sample--> warming --n, time, period--> judging
 *     ^                        ^                            |
 *     +-- gw_baseline_init     +------ gap > gap_s ---------+
 *
 * judging --reset_samples same-side surprises--> judging (level := fast)
 */
#include "pipeline/baseline.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define SIGMA_PER_MAD 1.2533141373155003 /* sqrt(pi/2) */
#define ABS_FLOOR     1e-12
#define GAP_INTERVALS 30.0
#define GAP_MIN_MS    1000.0
#define SEASON_GAIN   0.8
#define RECUR_UNIT    64.0 /* recurrence memory: 1/64 sigma per step */
#define WEEK_PERIODS  7

void gw_baseline_opts_default(struct gw_baseline_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->warmup_samples = 64;
	o->warmup_s = 0;
	o->tau_fast = 3;
	o->tau_level = 64;
	o->tau_scale = 1024;
	o->reset_samples = 8;
	o->gap_s = 0;
	o->z_half = 4;
	o->clip = 5;
	o->rel_floor = 1e-3;
	o->seasonal = false;
	o->season_period_s = 86400;
	o->season_bins = 48;
	o->season_periods = 2;
}

static bool in_u(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi;
}

static bool in_d(double v, double lo, double hi)
{
	return v >= lo && v <= hi; /* false for NaN */
}

int gw_baseline_config_init(struct gw_baseline_config *cfg,
			    const struct gw_baseline_opts *opts)
{
	struct gw_baseline_opts o;
	const uint32_t month = 30u * 86400u;

	gw_baseline_opts_default(&o);
	if (opts) {
		size_t sz = opts->sz;

		if (sz < offsetof(struct gw_baseline_opts, warmup_s))
			return -EINVAL;
		if (sz > sizeof(o)) {
			const unsigned char *p = (const unsigned char *)opts;

			for (size_t i = sizeof(o); i < sz; i++)
				if (p[i])
					return -EINVAL;
			sz = sizeof(o);
		}
		memcpy(&o, opts, sz);
		o.sz = sizeof(o);
	}
	if (!in_u(o.warmup_samples, 2, 1000000) || o.warmup_s > month ||
	    !in_u(o.tau_level, 1, 1000000) ||
	    !in_u(o.tau_fast, 1, o.tau_level) ||
	    !in_u(o.tau_scale, 1, 1000000) ||
	    !in_u(o.reset_samples, 1, 1000000) || o.gap_s > month ||
	    !in_d(o.z_half, 0.5, 100) || !in_d(o.clip, 1, 100) ||
	    !in_d(o.rel_floor, 0, 1) || !in_d(o.season_recur, 0, 100))
		return -EINVAL;
	if (o.seasonal && (!in_u(o.season_period_s, 60, month) ||
			   !in_u(o.season_bins, 2, GW_BASELINE_MAX_BINS) ||
			   !in_u(o.season_periods, 1, 1000)))
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	cfg->o = o;
	cfg->a_fast = 1.0 / o.tau_fast;
	cfg->a_level = 1.0 / o.tau_level;
	cfg->a_scale = 1.0 / o.tau_scale;
	cfg->sd_fast = sqrt(cfg->a_fast / (2 - cfg->a_fast));
	cfg->z_half4 = o.z_half * o.z_half * o.z_half * o.z_half;
	cfg->gap_ms = o.gap_s * 1000.0;
	return 0;
}

void gw_baseline_init(struct gw_baseline *b)
{
	memset(b, 0, sizeof(*b));
}

void gw_baseline_resume(struct gw_baseline *b)
{
	if (b->n)
		b->resume = 1;
}

void gw_baseline_season_init(struct gw_baseline_season *s)
{
	memset(s, 0, sizeof(*s));
}

/* Position of t in a period of per ms in nb bins as bins i0, i1 = i0 + 1
 * (mod nb) and the weight w of i1: linear interpolation between bin
 * centres. */
static void bin_pos(int64_t per, uint32_t nb, int64_t t_ms, uint32_t *i0,
		    uint32_t *i1, double *w)
{
	int64_t ph = t_ms % per;
	double pos;
	uint32_t k;

	if (ph < 0)
		ph += per;
	pos = (double)ph / (double)per * nb - 0.5;
	if (pos < 0)
		pos += nb;
	k = (uint32_t)pos;
	if (k >= nb)
		k = nb - 1;
	*w = pos - k;
	*i0 = k;
	*i1 = k + 1 == nb ? 0 : k + 1;
}

static void season_pos(const struct gw_baseline_config *cfg, int64_t t_ms,
		       uint32_t *i0, uint32_t *i1, double *w)
{
	bin_pos((int64_t)cfg->o.season_period_s * 1000, cfg->o.season_bins,
		t_ms, i0, i1, w);
}

static void week_pos(const struct gw_baseline_config *cfg, int64_t t_ms,
		     uint32_t *i0, uint32_t *i1, double *w)
{
	bin_pos((int64_t)cfg->o.season_period_s * 1000 * WEEK_PERIODS,
		GW_BASELINE_WEEK_BINS, t_ms, i0, i1, w);
}

static bool use_season(const struct gw_baseline_config *cfg,
		       const struct gw_baseline_season *s)
{
	return cfg->o.seasonal && s;
}

static double season_at(const struct gw_baseline_config *cfg,
			const struct gw_baseline_season *s, int64_t t_ms)
{
	uint32_t i0, i1;
	double w;

	if (!use_season(cfg, s) || !s->n)
		return 0;
	season_pos(cfg, t_ms, &i0, &i1, &w);
	return (1 - w) * s->bin[i0] + w * s->bin[i1];
}

/* Whether the profile takes part in the expected value at t_ms: always
 * with a fixed season; with season_auto once a whole period has been
 * learned and the residuals from level + profile are clearly smaller than
 * from the level alone (the profile explains at least a third of the
 * variance). */
static bool season_used(const struct gw_baseline *b,
			const struct gw_baseline_config *cfg,
			const struct gw_baseline_season *s, int64_t t_ms)
{
	if (!use_season(cfg, s))
		return false;
	if (!cfg->o.season_auto)
		return true;
	return s->n &&
	       t_ms - s->t_start >= (int64_t)cfg->o.season_period_s * 1000 &&
	       b->dev < SEASON_GAIN * b->dev0;
}

static bool use_week(const struct gw_baseline_config *cfg,
		     const struct gw_baseline_season *s)
{
	return use_season(cfg, s) && cfg->o.season_week;
}

static double week_at(const struct gw_baseline_config *cfg,
		      const struct gw_baseline_season *s, int64_t t_ms)
{
	uint32_t i0, i1;
	double w;

	if (!use_week(cfg, s) || !s->n)
		return 0;
	week_pos(cfg, t_ms, &i0, &i1, &w);
	return (1 - w) * s->week[i0] + w * s->week[i1];
}

/* Whether the weekly profile takes part in the expected value at t_ms:
 * once season_periods weeks have been learned and the residuals from
 * level + both profiles are clearly smaller than the smaller of those from
 * level + daily profile and from the level alone (the same test as the
 * daily profile's). */
static bool week_used(const struct gw_baseline *b,
		      const struct gw_baseline_config *cfg,
		      const struct gw_baseline_season *s, int64_t t_ms)
{
	double ref = b->dev < b->dev0 ? b->dev : b->dev0;
	int64_t learn = (int64_t)cfg->o.season_period_s * 1000 * WEEK_PERIODS *
			cfg->o.season_periods;

	if (!use_week(cfg, s) || !s->n)
		return false;
	return t_ms - s->t_start >= learn && s->devw < SEASON_GAIN * ref;
}

/* With recurrence: the largest |z| of earlier periods around t_ms (the
 * bins either side of t and one more each way), 0 when there is none to
 * compare with (off, or no whole period learned yet). */
static double recur_at(const struct gw_baseline_config *cfg,
		       const struct gw_baseline_season *s, int64_t t_ms)
{
	uint32_t i0, i1, nb = cfg->o.season_bins;
	double w, m = 0;

	if (!use_season(cfg, s) || cfg->o.season_recur <= 0 || !s->n ||
	    t_ms - s->t_start < (int64_t)cfg->o.season_period_s * 1000)
		return 0;
	season_pos(cfg, t_ms, &i0, &i1, &w);
	for (uint32_t j = 0; j < 4; j++) {
		uint32_t i = (i0 + nb - 1 + j) % nb;

		if (s->recur[i] > m)
			m = s->recur[i];
	}
	return m / RECUR_UNIT;
}

/* Records az (|z| from level + profile) of a judged sample in its nearest
 * bin; the first sample of another period first folds the last period's
 * peaks into recur[] (after a silence of several periods, once). */
static void recur_learn(const struct gw_baseline_config *cfg,
			struct gw_baseline_season *s, int64_t t_ms, double az)
{
	int64_t per = (int64_t)cfg->o.season_period_s * 1000;
	int64_t pi = t_ms >= 0 ? t_ms / per : -1 - (-1 - t_ms) / per;
	uint32_t i0, i1, nb = cfg->o.season_bins;
	double w, q;

	if (pi != s->period) {
		/* Each older period weighs half as much. */
		for (uint32_t i = 0; i < nb; i++) {
			uint16_t old = s->recur[i] / 2;

			s->recur[i] = s->peak[i] > old ? s->peak[i] : old;
			s->peak[i] = 0;
		}
		s->period = pi;
	}
	season_pos(cfg, t_ms, &i0, &i1, &w);
	if (w >= 0.5)
		i0 = i1;
	q = az * RECUR_UNIT; /* rounded up, saturating (no libm) */
	q = q < 65534 ? (double)(uint32_t)q + 1 : 65535;
	if (q > s->peak[i0])
		s->peak[i0] = (uint16_t)q;
}

static double sigma_dev(const struct gw_baseline *b,
			const struct gw_baseline_config *cfg, double dev)
{
	double s = SIGMA_PER_MAD * dev;
	double f = cfg->o.rel_floor * fabs(b->level);

	if (f < b->quantum)
		f = b->quantum;
	if (f < ABS_FLOOR)
		f = ABS_FLOOR;
	return s > f ? s : f;
}

static double sigma_of(const struct gw_baseline *b,
		       const struct gw_baseline_config *cfg)
{
	return sigma_dev(b, cfg, b->dev);
}

bool gw_baseline_learning(const struct gw_baseline *b,
			  const struct gw_baseline_config *cfg,
			  const struct gw_baseline_season *season, int64_t t_ms)
{
	if (b->n < cfg->o.warmup_samples)
		return true;
	if (t_ms - b->t_start < (int64_t)cfg->o.warmup_s * 1000)
		return true;
	if (use_season(cfg, season) && !cfg->o.season_auto &&
	    t_ms - season->t_start < (int64_t)cfg->o.season_period_s * 1000)
		return true;
	return false;
}

/* (Re)starts the level and scale at v; keeps counters and the profile. */
static void start(struct gw_baseline *b, const struct gw_baseline_config *cfg,
		  struct gw_baseline_season *season, int64_t t_ms, double v)
{
	double y = v - season_at(cfg, season, t_ms);

	b->t_start = t_ms;
	b->t_last = t_ms;
	b->level = y;
	b->fast = y;
	if (use_week(cfg, season))
		season->fastw = y - week_at(cfg, season, t_ms);
	b->dev = 0;
	b->dev0 = 0;
	b->jitter = 0;
	b->prev = v;
	b->quantum = 0;
	b->n = 1;
	b->streak = 0;
	b->side = 0;
	b->sum = 0;
	b->nsum = 0;
	if (use_season(cfg, season) && !season->n)
		season->t_start = t_ms;
}

static double clamp(double x, double lim)
{
	return x > lim ? lim : x < -lim ? -lim : x;
}

double gw_baseline_update(struct gw_baseline *b,
			  const struct gw_baseline_config *cfg,
			  struct gw_baseline_season *season, int64_t t_ms,
			  double v)
{
	double s, y, r, r0, sigma, sigma0, z, zs, zz, score, lim, rc, d, a_l,
		a_d, rec, zn, zsn, wk = 0, rw = 0, sigmaw = 0;
	bool judge, wused;
	int side;

	if (!isfinite(v) || (b->n && t_ms < b->t_last)) {
		b->ignored++;
		return GW_BASELINE_LEARNING;
	}
	if (!b->n) {
		start(b, cfg, season, t_ms, v);
		goto learn_season;
	}
	d = (double)(t_ms - b->t_last);
	{
		double gap = cfg->gap_ms;

		if (gap <= 0) {
			gap = GAP_INTERVALS * b->dt;
			if (gap < GAP_MIN_MS)
				gap = GAP_MIN_MS;
		}
		if (b->resume) {
			/* Across a restart: neither a gap nor an interval. */
			b->resume = 0;
			d = b->dt;
		} else if (b->n > 1 && d > gap) {
			b->rewarms++;
			start(b, cfg, season, t_ms, v);
			return GW_BASELINE_LEARNING;
		}
	}
	/* Interval estimate: the first interval, then an EWMA of intervals
	 * clipped to 4x the estimate so a near-gap does not inflate it. */
	if (b->n == 1)
		b->dt = d;
	else if (d > 0)
		b->dt += ((d > 4 * b->dt ? 4 * b->dt : d) - b->dt) * 0.0625;
	b->t_last = t_ms;

	judge = !gw_baseline_learning(b, cfg, season, t_ms);
	s = season_at(cfg, season, t_ms);
	y = v - s;
	r = y - b->level;
	r0 = v - b->level;
	sigma = sigma_of(b, cfg);
	sigma0 = sigma_dev(b, cfg, b->dev0);
	wused = week_used(b, cfg, season, t_ms);
	if (use_week(cfg, season)) {
		wk = week_at(cfg, season, t_ms);
		rw = r - wk;
		sigmaw = sigma_dev(b, cfg, season->devw);
	}
	if (wused)
		z = rw / sigmaw;
	else if (season_used(b, cfg, season, t_ms) || !use_season(cfg, season))
		z = r / sigma;
	else
		z = r0 / sigma0;
	if (wused)
		zs = (season->fastw - b->level) / (sigmaw * cfg->sd_fast);
	else
		zs = (b->fast - b->level) / (sigma * cfg->sd_fast);
	/* Recurrence: an excursion as large as earlier periods had here is
	 * not news.  It changes the score only: the streak and the reset
	 * below still see z, so the model learns as without it. */
	rec = cfg->o.season_recur * recur_at(cfg, season, t_ms);
	zn = fabs(z) <= rec ? 0 : z;
	zsn = fabs(zs) <= rec ? 0 : zs;
	zz = fabs(zn) > fabs(zsn) ? zn * zn : zsn * zsn;
	score = zz * zz / (zz * zz + cfg->z_half4);

	/* Learn: quantum, then location and scale (plain running means while
	 * n is below the time constant, so the warm-up converges). */
	d = fabs(v - b->prev);
	if (d > 0 && (b->quantum == 0 || d < b->quantum))
		b->quantum = d;
	b->prev = v;
	b->n++;
	a_l = cfg->a_level;
	a_d = cfg->a_scale;
	if (b->n < cfg->o.tau_level)
		a_l = 1.0 / b->n;
	if (b->n < cfg->o.tau_scale)
		a_d = 1.0 / b->n;
	lim = cfg->o.clip * sigma;
	rc = judge ? clamp(r, lim) : r;
	b->level += a_l * rc;
	b->fast += cfg->a_fast * (y - b->fast);
	if (use_week(cfg, season))
		season->fastw += cfg->a_fast * (y - wk - season->fastw);
	b->dev += a_d * ((judge ? fmin(fabs(r), lim) : fabs(r)) - b->dev);
	b->dev0 += a_d *
		   ((judge ? fmin(fabs(r0), cfg->o.clip * sigma0) : fabs(r0)) -
		    b->dev0);

	b->jitter += cfg->a_fast * (d - b->jitter);

	/* Sustained surprise: a leaky same-side count; at reset_samples the
	 * model accepts the new normal. */
	if (judge) {
		side = 0;
		if (fabs(z) >= cfg->o.z_half)
			side = z > 0 ? 1 : -1;
		else if (fabs(zs) >= cfg->o.z_half)
			side = zs > 0 ? 1 : -1;
		if (side && side == b->side) {
			b->streak++;
			b->sum += y;
			b->nsum++;
		} else if (side) {
			b->side = side;
			b->streak = 1;
			b->sum = y;
			b->nsum = 1;
		} else if (b->streak) {
			b->streak--;
		}
		if (b->streak >= cfg->o.reset_samples) {
			/* jitter is E|x_i - x_i-1| = 2 sigma / sqrt(pi) for
			 * white noise; dev = sigma * sqrt(2 / pi). */
			double jd = b->jitter * 0.7071067811865476;

			b->level = b->sum / b->nsum;
			b->fast = b->level;
			if (use_week(cfg, season))
				season->fastw = b->level;
			if (b->dev < jd)
				b->dev = jd;
			b->streak = 0;
			b->side = 0;
			b->resets++;
		}
	}
	if (!judge)
		score = GW_BASELINE_LEARNING;
	if (use_season(cfg, season)) {
		double e;
		uint32_t i0, i1;
		double w, a;

		/* The profile learns the clipped residual of the value from the
		 * level over about season_periods periods. */
		e = judge ? clamp(r, lim) : r;
		season_pos(cfg, t_ms, &i0, &i1, &w);
		a = b->dt * cfg->o.season_bins /
		    (cfg->o.season_period_s * 1000.0 * cfg->o.season_periods);
		if (a > 0.5)
			a = 0.5;
		if (season->n < 1000000)
			season->n++;
		season->bin[i0] += (float)(a * (1 - w) * e);
		season->bin[i1] += (float)(a * w * e);
		if (use_week(cfg, season)) {
			double lw = cfg->o.clip * sigmaw;

			/* The same for the residual from level + daily
			 * profile, per hour of the week. */
			e = judge ? clamp(rw, lw) : rw;
			week_pos(cfg, t_ms, &i0, &i1, &w);
			a *= (double)GW_BASELINE_WEEK_BINS /
			     (cfg->o.season_bins * WEEK_PERIODS);
			if (a > 0.5)
				a = 0.5;
			season->week[i0] += (float)(a * (1 - w) * e);
			season->week[i1] += (float)(a * w * e);
			season->devw +=
				a_d * ((judge ? fmin(fabs(rw), lw) : fabs(rw)) -
				       season->devw);
		}
		/* Remembered: the excursion from level + profile in
		 * sigma, whether or not the profile is used yet. */
		if (judge && cfg->o.season_recur > 0)
			recur_learn(cfg, season, t_ms, fabs(r / sigma));
	}
	return score;

learn_season:
	if (use_season(cfg, season) && !season->n) {
		season->t_start = t_ms;
		season->n = 1;
	}
	return GW_BASELINE_LEARNING;
}

double gw_baseline_expected(const struct gw_baseline *b,
			    const struct gw_baseline_config *cfg,
			    const struct gw_baseline_season *season,
			    int64_t t_ms)
{
	if (!b->n)
		return NAN;
	if (week_used(b, cfg, season, t_ms))
		return b->level + season_at(cfg, season, t_ms) +
		       week_at(cfg, season, t_ms);
	if (cfg->o.season_auto && !season_used(b, cfg, season, t_ms))
		return b->level;
	return b->level + season_at(cfg, season, t_ms);
}

double gw_baseline_sigma(const struct gw_baseline *b,
			 const struct gw_baseline_config *cfg)
{
	if (!b->n)
		return NAN;
	return sigma_of(b, cfg);
}

double gw_baseline_z_for_score(const struct gw_baseline_config *cfg,
			       double score)
{
	if (!(score > 0 && score < 1))
		return NAN;
	/* score = z^4 / (z^4 + h^4)  =>  z = h * (score / (1 - score))^(1/4) */
	return cfg->o.z_half * sqrt(sqrt(score / (1 - score)));
}

int gw_baseline_band(const struct gw_baseline *b,
		     const struct gw_baseline_config *cfg,
		     const struct gw_baseline_season *season, int64_t t_ms,
		     double score, double *lo, double *hi)
{
	double z = gw_baseline_z_for_score(cfg, score), e, sg;

	if (isnan(z))
		return -EINVAL;
	if (!b->n)
		return -EAGAIN;
	e = gw_baseline_expected(b, cfg, season, t_ms);
	sg = week_used(b, cfg, season, t_ms) ? sigma_dev(b, cfg, season->devw)
					     : sigma_of(b, cfg);
	*lo = e - z * sg;
	*hi = e + z * sg;
	return 0;
}
