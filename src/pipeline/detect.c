// SPDX-License-Identifier: MIT
/*
 * detect.c - the baseline's score turned into episodes; see detect.h for
 * the state machine and the contract.
 */
#include "pipeline/detect.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void gw_detect_opts_default(struct gw_detect_opts *o)
{
	memset(o, 0, sizeof(*o));
	gw_baseline_opts_default(&o->baseline);
	/* A daily profile, used by the series it explains. */
	o->baseline.seasonal = true;
	o->baseline.season_auto = true;
	/* What happened at this time of an earlier day is not news. */
	o->baseline.season_recur = 1.5;
	/* And a weekly one, used by the series it explains. */
	o->baseline.season_week = true;
	/* Silence does not erase what a series has shown (detect.h). */
	o->baseline.gap_s = GW_DETECT_GAP_S;
	/* And a shape of the recent values never seen before. */
	o->novelty = true;
	o->threshold = 0.9;
	o->quiet_samples = 8;
	o->lockout_samples = 128;
	o->lockout_s = 86400;
}

int gw_detect_config_init(struct gw_detect_config *c,
			  const struct gw_detect_opts *o)
{
	struct gw_detect_opts def;
	int err;

	if (!o) {
		gw_detect_opts_default(&def);
		o = &def;
	}
	if (!(o->threshold > 0 && o->threshold < 1) || o->quiet_samples < 1 ||
	    o->quiet_samples > 1000000 || o->lockout_samples > 1000000 ||
	    o->lockout_s < 1 || o->lockout_s > 30 * 86400)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	err = gw_baseline_config_init(&c->b, &o->baseline);
	if (err)
		return err;
	c->threshold = o->threshold;
	c->quiet_samples = o->quiet_samples;
	c->lockout_samples = o->lockout_samples;
	c->lockout_ms = (int64_t)o->lockout_s * 1000;
	c->novelty = o->novelty;
	return 0;
}

void gw_detect_init(struct gw_detect *d)
{
	memset(d, 0, sizeof(*d));
}

#define LEVELS	 8 /* 3 bits each */
#define CONTEXT	 4 /* levels: 12 bits, one of 4,096 contexts */
#define RATE_TAU 200.0
#define RATE_MAX 0.01
/* Of the 2,744 contexts a series can make (8 x 7 x 7 x 7: consecutive
 * levels differ), one that has made more than this many is noise to
 * this channel: it never again finds one news. */
#define CONTEXTS_MAX 1024
/* The agreement's looser limit on the share of new contexts. */
#define AGREE_RATE 0.05

/* The context channel: true when the accepted sample v makes a context
 * never seen before while new contexts are rare (detect.h). */
static bool novel(struct gw_detect_novelty *nv, double v)
{
	uint32_t q = 0, ctx;
	double f;
	bool fresh, news;

	if (!nv->n || v < nv->lo)
		nv->lo = v;
	if (!nv->n || v > nv->hi)
		nv->hi = v;
	if (nv->n < UINT32_MAX)
		nv->n++;
	if (nv->hi > nv->lo) {
		/* Checked before the cast: a range of +-1e308 makes inf /
		 * inf, NaN. */
		f = (v - nv->lo) / (nv->hi - nv->lo) * LEVELS;
		if (f > 0)
			q = f < LEVELS ? (uint32_t)f : LEVELS - 1;
	}
	if ((nv->ctx & (LEVELS - 1)) == q)
		return false; /* the same level: no new context */
	ctx = ((uint32_t)nv->ctx << 3 | q) & ((1u << (3 * CONTEXT)) - 1);
	nv->ctx = (uint16_t)ctx;
	fresh = !(nv->seen[ctx >> 6] & (1ull << (ctx & 63)));
	nv->seen[ctx >> 6] |= 1ull << (ctx & 63);
	if (fresh)
		nv->contexts++;
	if (fresh && nv->n > GW_DETECT_NOVEL_WARMUP && nv->rate < AGREE_RATE &&
	    nv->contexts <= CONTEXTS_MAX)
		nv->since_new = 0; /* for the agreement (detect.h) */
	news = fresh && nv->n > GW_DETECT_NOVEL_WARMUP && nv->rate < RATE_MAX &&
	       nv->contexts <= CONTEXTS_MAX;
	nv->rate += (float)(((fresh ? 1.0 : 0.0) - nv->rate) / RATE_TAU);
	return news;
}

double gw_detect_update(struct gw_detect *d, const struct gw_detect_config *c,
			int64_t t_ms, double v, enum gw_detect_event *ev)
{
	double s = gw_baseline_update(&d->b, &c->b, &d->season, t_ms, v);
	bool fresh = false;

	*ev = GW_DETECT_NONE;
	/* Accepted samples only (not NaN, Inf or out of order). */
	if (c->novelty && isfinite(v) && d->b.t_last == t_ms) {
		if (d->nov.since_new < UINT32_MAX)
			d->nov.since_new++;
		fresh = novel(&d->nov, v);
	}
	if (isnan(s))
		return s;
	/* A new context, or a clear surprise close after one (detect.h). */
	if (c->novelty && s < GW_DETECT_NOVEL_SCORE &&
	    (fresh ||
	     (s >= GW_DETECT_AGREE_SCORE && d->nov.n > GW_DETECT_NOVEL_WARMUP &&
	      d->nov.since_new <= GW_DETECT_AGREE_SAMPLES)))
		s = GW_DETECT_NOVEL_SCORE;
	if (!d->active) {
		if (s >= c->threshold) {
			d->active = true;
			d->onset_ms = d->peak_ms = d->end_ms = t_ms;
			d->peak = (float)s;
			d->since_onset = 0;
			d->quiet = 0;
			d->episodes++;
			*ev = GW_DETECT_ONSET;
		}
		return s;
	}
	d->since_onset++;
	if (s >= c->threshold) {
		d->quiet = 0;
		d->end_ms = t_ms;
		if (s > d->peak) {
			d->peak = (float)s;
			d->peak_ms = t_ms;
		}
	} else if (++d->quiet >= c->quiet_samples &&
		   (d->since_onset >= c->lockout_samples ||
		    t_ms - d->onset_ms >= c->lockout_ms)) {
		d->active = false;
		*ev = GW_DETECT_END;
	}
	return s;
}

bool gw_detect_episode(const struct gw_detect *d, struct gw_detect_episode *ep)
{
	if (!d->episodes)
		return false;
	ep->onset_ms = d->onset_ms;
	ep->peak_ms = d->peak_ms;
	ep->end_ms = d->end_ms;
	ep->peak = d->peak;
	ep->active = d->active;
	return true;
}
