/* SPDX-License-Identifier: MIT */
/*
 * detect.h - the deployed anomaly detector of one series: its dynamic
 * baseline (baseline.h) and the alert decision on the baseline's score,
 * one alert per anomalous episode.  The agent runs it on every modelled
 * gauge (anomaly.h); `gpuwatch detect` runs the same code with the same
 * defaults over CSV files or the history, so a backtest shows exactly what
 * the agent would have alerted on.  docs/internals/baselines.md.
 *
 * Episodes (the alert decision)
 *
 *   quiet --score >= threshold--> episode (ONSET: the alert fires)
 *     ^                              |
 *     +----- END: quiet_samples -----+
 *            judged samples in a row below threshold, and at least
 *            lockout_samples samples or lockout_s seconds since the
 *            onset, whichever comes first
 *
 * - One episode is one alert: its onset time, its peak score (and when),
 *   and its end (the last sample at or above the threshold).  A score that
 *   dips below the threshold and comes back inside the episode does not
 *   fire again; the lockout keeps the after-effects of one event (the
 *   spike and the level's return) in the episode of that event.  It is
 *   counted in samples, as the model's time constants are, but lasts at
 *   most lockout_s: 128 samples are two minutes of a 1 s gauge and five
 *   days of an hourly series, whose next event is news after a day.
 * - Silence: the detector's default keeps the model across gaps of up to
 *   GW_DETECT_GAP_S (the baseline's longest): a series that comes back
 *   is judged from its first sample against what it did before, instead
 *   of being learned again for 64 unjudged samples.  One that comes back
 *   elsewhere is news; the sustained-surprise reset (baseline.h) accepts
 *   its new level after reset_samples samples.
 * - Samples the baseline does not judge (learning, NaN, out of order)
 *   neither start nor end an episode.
 *
 * Context channel (opts.novelty; in the spirit of NAB's contextOSE)
 * - Every accepted sample is placed in one of 8 equal levels of the range
 *   of values the series has taken; a change of level makes a context of
 *   the last 4 levels (a repeated level makes none), remembered in a
 *   4,096-bit table.  A context never seen before is news: once the
 *   series has been seen for GW_DETECT_NOVEL_WARMUP samples, while new
 *   contexts have been rare (an EWMA over 200 contexts of the share of
 *   new ones below 1%), and as long as the series has made at most 1,024
 *   distinct contexts (of 2,744 possible: more is noise, whose contexts
 *   keep coming new), a judged sample that makes one scores
 *   GW_DETECT_NOVEL_SCORE if the baseline scored it lower.  The baseline
 *   learns as without it.  A gap keeps the table, as it keeps the profile.
 * - Agreement: a judged sample the baseline scores at least
 *   GW_DETECT_AGREE_SCORE (z = 5.9 sigma) within GW_DETECT_AGREE_SAMPLES
 *   samples of a new context (after the warm-up, under the cap, and
 *   with the share of new contexts below 5% instead of 1%) scores
 *   GW_DETECT_NOVEL_SCORE too: two weaker signals at once, a value rarely
 *   that far out in a shape never seen.
 *
 * Contract
 * - gw_detect_update returns the baseline's score, raised to
 *   GW_DETECT_NOVEL_SCORE by the context channel or the agreement (NaN
 *   when not judged), and sets ev to GW_DETECT_ONSET on the sample that starts an episode,
 *   GW_DETECT_END on the sample that ends one, else GW_DETECT_NONE.
 *   gw_detect_episode describes the current (or last) episode.
 * - State is plain data (no pointers): copy it, keep it in an array.
 *   Not thread-safe per state.  Errors: 0 or -EINVAL.
 */
#ifndef GW_DETECT_H
#define GW_DETECT_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline/baseline.h"

struct gw_detect_opts {
	struct gw_baseline_opts baseline; /* gw_baseline_opts_default */
	double threshold;		  /* score that opens an episode */
	uint32_t quiet_samples;		  /* judged samples below to end */
	uint32_t lockout_samples;	  /* minimum episode length ... */
	uint32_t lockout_s;		  /* ... or this long, if shorter */
	bool novelty;			  /* the context channel (below) */
};

struct gw_detect_config {
	struct gw_baseline_config b;
	double threshold;
	uint32_t quiet_samples, lockout_samples;
	int64_t lockout_ms;
	bool novelty;
};

#define GW_DETECT_NOVEL_SCORE	0.95
#define GW_DETECT_NOVEL_WARMUP	300
#define GW_DETECT_AGREE_SCORE	0.8
#define GW_DETECT_AGREE_SAMPLES 8
#define GW_DETECT_GAP_S		(30 * 86400) /* the default baseline gap_s */

enum gw_detect_event { GW_DETECT_NONE, GW_DETECT_ONSET, GW_DETECT_END };

struct gw_detect_episode {
	int64_t onset_ms, peak_ms, end_ms; /* end_ms: last sample >= T */
	double peak;			   /* highest score */
	bool active;			   /* not ended yet */
};

/* The context channel of one series, 544 bytes. */
struct gw_detect_novelty {
	uint64_t seen[64];  /* one bit per context (4 levels of 8) seen */
	double lo, hi;	    /* the range of the values seen */
	float rate;	    /* EWMA of the share of new contexts */
	uint16_t ctx;	    /* the last 4 levels, 3 bits each */
	uint16_t contexts;  /* contexts seen */
	uint32_t n;	    /* samples seen */
	uint32_t since_new; /* samples since a new context */
};

/* Per-series state. */
struct gw_detect {
	struct gw_baseline b;
	struct gw_baseline_season season;
	struct gw_detect_novelty nov;
	int64_t onset_ms, peak_ms, end_ms;
	float peak;
	uint32_t since_onset, quiet;
	uint32_t episodes; /* episodes started */
	bool active;
};

/* The defaults the agent and `gpuwatch detect` run with. */
void gw_detect_opts_default(struct gw_detect_opts *o);

/* -EINVAL: a baseline option out of range, threshold outside (0, 1),
 * quiet_samples 0, either count above 1e6, or lockout_s 0 or above
 * 30 days. */
__attribute__((warn_unused_result)) int
gw_detect_config_init(struct gw_detect_config *c,
		      const struct gw_detect_opts *o);

void gw_detect_init(struct gw_detect *d);

double gw_detect_update(struct gw_detect *d, const struct gw_detect_config *c,
			int64_t t_ms, double v, enum gw_detect_event *ev);

/* The current episode, or the last one (active false); false if none. */
bool gw_detect_episode(const struct gw_detect *d, struct gw_detect_episode *ep);

#endif
