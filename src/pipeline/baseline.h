/* SPDX-License-Identifier: MIT */
/*
 * baseline.h - a dynamic baseline per series: an online model of where a
 * gauge normally sits and how much it wanders, giving every sample an
 * anomaly score in [0, 1] that alert rules can use, and an expected value
 * and band that a dashboard can draw.  docs/internals/baselines.md.
 *
 * Model (robust exponentially weighted location and scale)
 * - level: EWMA (tau_level samples) of the value with each residual clipped
 *   to +-clip sigma, so outliers do not drag it; fast: unclipped EWMA
 *   (tau_fast samples) that follows shifts; dev: EWMA (tau_scale samples)
 *   of the clipped absolute residual; sigma = 1.2533 * dev (the mean
 *   absolute deviation of a normal is sigma * sqrt(2/pi)), floored at
 *   max(rel_floor * |level|, the series' quantum, 1e-12): the quantum is the
 *   smallest non-zero step seen between consecutive samples.
 * - Optional daily (any period) seasonality: season_bins offsets of the
 *   value from the level, linearly interpolated between bin centres and
 *   learned over about season_periods periods (struct gw_baseline_season,
 *   kept by the caller beside the state).
 * - Recurrence (with seasonality and season_recur > 0): the profile also
 *   keeps, per bin, the largest |z| judged there (from level + profile,
 *   whether or not the profile is used yet) in the current period and in
 *   the previous ones (halved at each new period).  A sample whose |z|
 *   is at most season_recur times the largest of the previous periods'
 *   in its own and the neighbouring bins (about +-1.5 bins) is not
 *   surprising: the same excursion happened at this time of an earlier
 *   period (a nightly job's spike), so its z (and the fast one) count as
 *   0 in its score.  Only an earlier period counts, so a first excursion,
 *   however long, never excuses itself.  The model (level, scale, the
 *   sustained-surprise reset) learns as without it.
 * - Weekly (with seasonality and season_week): a second profile of
 *   GW_BASELINE_WEEK_BINS bins over 7 periods (an hour each for a daily
 *   period) learns the residual from level + daily profile, with its own
 *   residual scale (devw) and fast EWMA (fastw).  It is used once
 *   season_periods weeks have been learned and devw is below 0.8 of the
 *   smaller of dev and dev0 (it explains at least a third of what is
 *   left); then the expected value is level + both profiles and z, the
 *   fast z and the band use devw.  The recurrence memory stays daily.
 * - The score of a sample is computed before it is learned from:
 *   z = max(|x - expected| / sigma, |fast - level| / (sigma * sd_fast)),
 *   where sd_fast = sqrt(a/(2-a)) is the standard deviation of an EWMA of
 *   unit white noise, and score = z^4 / (z^4 + z_half^4): 0.5 at z_half
 *   sigma, 0.06 at z_half/2, 0.94 at 2 z_half.  A rule's threshold T on the
 *   score is the band expected +- gw_baseline_z_for_score(T) sigma.
 *
 * Contract
 * - Learning: the first sample and every sample until warmup_samples have
 *   been learned and warmup_s seconds (and one season period when seasonal)
 *   have passed since the (re)start return GW_BASELINE_LEARNING (NaN).
 *   With season_auto the period is not waited for: the profile is used
 *   once a whole period has been learned and the residual scale with it
 *   is below 0.8 of the scale without it (dev0); until then, and for a
 *   series it does not explain, the expected value is the level alone.
 *   Test it with isnan() or gw_baseline_learning().
 * - NaN and +-Inf are ignored (not learned from, counted in ignored) and
 *   return NaN; so does a sample older than the last one learned.
 * - A gap longer than gap_s (0: 30 typical intervals, at least 1 s) re-warms
 *   the level and scale (counted in rewarms); a season profile is kept.
 * - A constant series is never anomalous (its scale is the floor and its
 *   residual 0); a change on it of more than z_half floors scores >= 0.5.
 * - Sustained surprise: reset_samples samples more than z_half sigma off to
 *   the same side (a leaky count: an unsurprising sample takes one off)
 *   make the level jump to the mean of the surprising samples and the
 *   scale grow to the fast estimate of sample-to-sample jitter (counted in
 *   resets).  So after a
 *   clean step the score is back below 0.5 from sample reset_samples + 1 of
 *   the new level, whatever the step's size; a series is never anomalous
 *   forever.
 * - Cost: a few dozen flops per sample, no allocation, no locks, no libm
 *   calls on the hot path.  Measured by bench/baseline.sh.
 *
 * Options are size-tagged (sz = sizeof(struct gw_baseline_opts) of the
 * caller): an older, shorter struct gets defaults for the fields it lacks, a
 * newer, longer one must have zeros past the fields known here.
 * gw_baseline_config_init validates them into a config shared by every
 * series that uses the same options.  The state is plain data (no
 * pointers, no resources): copy it, keep it in an array, reset it with
 * gw_baseline_init.  Not thread-safe: one writer per state.
 * Errors: 0 or -errno (-EINVAL for out-of-range options).
 */
#ifndef GW_BASELINE_H
#define GW_BASELINE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define GW_BASELINE_LEARNING  NAN
#define GW_BASELINE_MAX_BINS  48
#define GW_BASELINE_WEEK_BINS 168 /* an hour each for a daily period */

struct gw_baseline_opts {
	uint32_t sz;		 /* sizeof(struct gw_baseline_opts) */
	uint32_t warmup_samples; /* 64; 2 .. 1e6 */
	uint32_t warmup_s;	 /* 0; .. 30 days */
	uint32_t tau_fast;	 /* 3 samples; 1 .. tau_level */
	uint32_t tau_level;	 /* 64 samples; 1 .. 1e6 */
	uint32_t tau_scale;	 /* 1024 samples; 1 .. 1e6 */
	uint32_t reset_samples;	 /* 8; 1 .. 1e6 */
	uint32_t gap_s;		 /* 0 = auto; .. 30 days */
	double z_half;	  /* 4; score 0.5 at this many sigma; 0.5 .. 100 */
	double clip;	  /* 5 sigma; 1 .. 100 */
	double rel_floor; /* 1e-3; sigma >= rel_floor*|level|; 0 .. 1 */
	bool seasonal;	  /* false */
	uint32_t season_period_s; /* 86400; 60 .. 30 days */
	uint32_t season_bins;	  /* 48; 2 .. GW_BASELINE_MAX_BINS */
	uint32_t
		season_periods; /* 2; learning time of the profile; 1 .. 1000 */
	bool season_auto;    /* seasonal: judge from the start, use the profile
			   * only once it explains the series (see above) */
	double season_recur; /* 0 (off); recurrence factor; 0 .. 100 */
	bool season_week;    /* false; seasonal: also a profile of 7
			      * periods, used where it explains the series */
};

/* Validated options and constants derived from them.  Read-only once made. */
struct gw_baseline_config {
	struct gw_baseline_opts o;
	/* Private. */
	double a_fast, a_level, a_scale, sd_fast, z_half4, gap_ms;
};

/* Per-series state, 120 bytes. */
struct gw_baseline {
	int64_t t_start, t_last; /* ms; t_start of the current warm-up */
	double level, fast, dev, jitter, prev, quantum;
	double dt;	  /* EWMA of the sample interval, ms */
	double dev0;	  /* dev of the value from the level alone */
	double sum;	  /* sum of the surprising samples ... */
	uint32_t nsum;	  /* ... and their count, this streak */
	uint32_t n;	  /* samples learned since the (re)start */
	uint32_t streak;  /* leaky count of same-side surprises */
	int32_t side;	  /* +1 / -1: side of the streak */
	uint32_t ignored; /* NaN, Inf and out-of-order samples */
	uint32_t resets;  /* sustained-surprise resets */
	uint32_t rewarms; /* gaps that re-warmed the model */
	uint32_t resume;  /* the next interval is not a gap (a restart) */
};

/* The seasonal profile of one series (with opts.seasonal), 1,096 bytes. */
struct gw_baseline_season {
	float bin[GW_BASELINE_MAX_BINS];
	/* max |z| per bin in 1/64 sigma (saturating at 1023.98 sigma) this
	 * period, and over the earlier periods, decayed */
	uint16_t peak[GW_BASELINE_MAX_BINS], recur[GW_BASELINE_MAX_BINS];
	int64_t t_start; /* ms, first sample learned into the profile */
	int64_t period;	 /* index of the period peak[] is about */
	uint32_t n;	 /* samples learned */
	uint32_t pad;
	/* season_week: offsets from level + daily profile per hour of the
	 * week, and the scale of the residuals from level + both */
	float week[GW_BASELINE_WEEK_BINS];
	double devw;  /* as dev, from level + both profiles */
	double fastw; /* as fast, of the value less both profiles */
};

/* Fills opts with the defaults above (sz set). */
void gw_baseline_opts_default(struct gw_baseline_opts *opts);

/* Validates opts (NULL: defaults) into cfg.  -EINVAL: sz too small, a field
 * out of range, or non-zero bytes past the known fields. */
__attribute__((warn_unused_result)) int
gw_baseline_config_init(struct gw_baseline_config *cfg,
			const struct gw_baseline_opts *opts);

/* Resets a series' state (and its profile) to "never seen a sample". */
void gw_baseline_init(struct gw_baseline *b);
void gw_baseline_season_init(struct gw_baseline_season *s);

/*
 * Scores sample (t_ms, v) against the model, then learns from it.  Returns
 * the anomaly score in [0, 1], or GW_BASELINE_LEARNING (NaN) while learning
 * and for an ignored sample.  season: the series' profile, or NULL for
 * none (required for seasonality: cfg->o.seasonal with NULL models no
 * season).
 */
double gw_baseline_update(struct gw_baseline *b,
			  const struct gw_baseline_config *cfg,
			  struct gw_baseline_season *season, int64_t t_ms,
			  double v);

/* The next sample continues the series whatever time has passed (the
 * model was saved and loaded across a restart): no gap, no re-warm. */
void gw_baseline_resume(struct gw_baseline *b);

/* True while the model would answer GW_BASELINE_LEARNING at t_ms. */
bool gw_baseline_learning(const struct gw_baseline *b,
			  const struct gw_baseline_config *cfg,
			  const struct gw_baseline_season *season,
			  int64_t t_ms);

/* The expected value at t_ms (level plus the seasonal offset there), NaN
 * before the first sample. */
double gw_baseline_expected(const struct gw_baseline *b,
			    const struct gw_baseline_config *cfg,
			    const struct gw_baseline_season *season,
			    int64_t t_ms);

/* The current scale (sigma), NaN before the first sample. */
double gw_baseline_sigma(const struct gw_baseline *b,
			 const struct gw_baseline_config *cfg);

/* The z (in sigma) at which a sample scores `score`; NaN outside (0, 1). */
double gw_baseline_z_for_score(const struct gw_baseline_config *cfg,
			       double score);

/*
 * The band at t_ms inside which a sample scores below `score` (point part
 * of the score): [expected - z sigma, expected + z sigma].  -EINVAL for a
 * score outside (0, 1), -EAGAIN before the first sample.
 */
__attribute__((warn_unused_result)) int
gw_baseline_band(const struct gw_baseline *b,
		 const struct gw_baseline_config *cfg,
		 const struct gw_baseline_season *season, int64_t t_ms,
		 double score, double *lo, double *hi);

#endif
