/* SPDX-License-Identifier: MIT */
/*
 * baseline_api.c - /api/v1/baseline: the agent's dynamic baseline of a
 * gauge as a band that a dashboard can draw, with its anomaly scores and
 * episodes.  Nothing is stored for it: the deployed detector
 * (pipeline/detect.h, gw_detect_opts_default, the code and defaults every
 * modelled series runs in the agent and in `gpuwatch detect`) is replayed
 * over the raw history, from a warm-up period before start.  See api.h
 * for the reply and docs/internals/api.md.
 *
 *   query        a series selector (gpuwatch_gpu_power_watts{gpu="0"})
 *   start, end   the range (required, as for query_range)
 *   step         the resolution (required; at most 11,000 points)
 *   warmup       how much history before start the model learns from
 *                (default 1h; 0 .. 7d)
 *
 * The replay starts from an empty model: it equals the agent's own state
 * once the warm-up has run its course (the level and scale forget in a
 * few thousand samples), except for the daily profile and its recurrence
 * memory, which the agent learns over days and the replay only where the
 * warm-up holds whole periods.  Raw samples only: beyond the raw tier's retention there are no
 * points.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/api.h"
#include "pipeline/detect.h"
#include "query/promql.h"

#define DEFAULT_WARMUP_MS (3600LL * 1000)
#define MAX_WARMUP_MS	  (7LL * 86400 * 1000)
#define MAX_EPISODES	  1000 /* per series in one reply */

static int bad(struct gw_api_reply *r, unsigned int status, const char *type,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int bad(struct gw_api_reply *r, unsigned int status, const char *type,
	       const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err = gw_api_reply_error(r, status, type, msg);
	return err ? err : 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Milliseconds as Prometheus writes a time: seconds, up to 3 decimals. */
static void put_value(struct gw_buf *out, double v)
{
	gw_buf_puts(out, "\"");
	gw_buf_set_error(out, gw_promql_fmt_value(out, v));
	gw_buf_puts(out, "\"");
}

/* A model's number (expected value, bound, score) to 9 significant
 * digits: far finer than any chart, and one printf where the shortest
 * exact form costs up to 17 (most of the reply's CPU at 720 steps). */
static void put_model(struct gw_buf *out, double v)
{
	if (!isfinite(v)) {
		put_value(out, v);
		return;
	}
	gw_buf_putf(out, "\"%.9g\"", v == 0 ? 0.0 : v); /* no "-0" */
}

/* The columns of one series, [t,"x"] pairs each. */
enum { C_VALUE, C_EXPECTED, C_LOWER, C_UPPER, C_SCORE, C_N };
static const char *const col_name[C_N] = { "values", "expected", "lower",
					   "upper", "score" };

struct episode {
	int64_t onset, peak_t, end;
	double peak;
	bool active;
};

struct replay {
	struct gw_buf col[C_N];
	size_t npts[C_N];
	struct episode ep[MAX_EPISODES];
	size_t nep;
	bool ep_dropped;
};

static void col_point(struct replay *rp, int c, int64_t t, double v)
{
	struct gw_buf *b = &rp->col[c];

	if (rp->npts[c]++)
		gw_buf_puts(b, ",");
	gw_buf_puts(b, "[");
	gw_promql_fmt_time(b, t);
	gw_buf_puts(b, ",");
	if (c == C_VALUE)
		put_value(b, v); /* the sample as stored */
	else
		put_model(b, v);
	gw_buf_puts(b, "]");
}

static void episode_note(struct replay *rp, const struct gw_detect *d,
			 int64_t start)
{
	struct gw_detect_episode e;
	struct episode *x;

	if (!gw_detect_episode(d, &e) || e.end_ms < start)
		return;
	if (rp->nep && rp->ep[rp->nep - 1].onset == e.onset_ms)
		x = &rp->ep[rp->nep - 1]; /* the open one, ending now */
	else if (rp->nep < MAX_EPISODES)
		x = &rp->ep[rp->nep++];
	else {
		rp->ep_dropped = true;
		return;
	}
	x->onset = e.onset_ms;
	x->peak_t = e.peak_ms;
	x->end = e.end_ms;
	x->peak = e.peak;
	x->active = e.active;
}

/* A sample with the band it was judged against. */
struct judged {
	int64_t t;
	double v, ex, lo, hi, score;
	bool banded;
};

/*
 * Runs one series' samples through a fresh detector and fills rp's
 * columns at the steps of [start, end]: each step shows its most
 * anomalous sample (the highest score in (t - step, t]) with the band that
 * sample was judged against, so that a short excursion between two steps
 * is not lost; a step with no judged sample shows the last one before it
 * (within the lookback), without a score.
 */
static void replay_series(struct replay *rp, const struct gw_detect_config *cfg,
			  const struct gw_series_data *s, int64_t start,
			  int64_t end, int64_t step, int64_t lookback)
{
	struct judged last = { .banded = false }, top = { 0 };
	struct gw_detect d;
	size_t i = 0;
	bool have = false;

	gw_detect_init(&d);
	for (int64_t t = start; t <= end; t += step) {
		bool got = false;

		for (; i < s->n && s->t[i] <= t; i++) {
			enum gw_detect_event ev;
			struct judged j = { .t = s->t[i], .v = s->v[i] };

			/* The band before the model learns from the sample. */
			j.banded = !gw_baseline_learning(&d.b, &cfg->b,
							 &d.season, j.t) &&
				   gw_baseline_band(&d.b, &cfg->b, &d.season,
						    j.t, cfg->threshold, &j.lo,
						    &j.hi) == 0;
			if (j.banded) {
				j.ex = gw_baseline_expected(&d.b, &cfg->b,
							    &d.season, j.t);
				j.banded = !isnan(j.ex) && !isnan(j.v);
			}
			j.score = gw_detect_update(&d, cfg, j.t, j.v, &ev);
			if (ev != GW_DETECT_NONE || d.active)
				episode_note(rp, &d, start);
			if (j.banded && !isnan(j.score) && j.t > t - step &&
			    (!got || j.score > top.score)) {
				top = j;
				got = true;
			}
			last = j;
			have = true;
		}
		if (!got) {
			if (!have || t - last.t > lookback || !last.banded)
				continue;
			top = last;
			top.score = NAN;
		}
		col_point(rp, C_VALUE, t, top.v);
		col_point(rp, C_EXPECTED, t, top.ex);
		col_point(rp, C_LOWER, t, top.lo);
		col_point(rp, C_UPPER, t, top.hi);
		if (!isnan(top.score))
			col_point(rp, C_SCORE, t, top.score);
	}
}

static void put_series(struct gw_buf *out, const struct gw_series_data *s,
		       struct replay *rp)
{
	gw_buf_puts(out, "{\"metric\":");
	gw_labels_json(&s->labels, out);
	for (int c = 0; c < C_N; c++) {
		gw_buf_putf(out, ",\"%s\":[", col_name[c]);
		if (rp->col[c].len)
			gw_buf_put(out, rp->col[c].p, rp->col[c].len);
		gw_buf_puts(out, "]");
	}
	gw_buf_puts(out, ",\"episodes\":[");
	for (size_t k = 0; k < rp->nep; k++) {
		const struct episode *e = &rp->ep[k];

		gw_buf_puts(out, k ? ",{\"onset\":" : "{\"onset\":");
		gw_promql_fmt_time(out, e->onset);
		gw_buf_puts(out, ",\"peak_time\":");
		gw_promql_fmt_time(out, e->peak_t);
		gw_buf_puts(out, ",\"end\":");
		gw_promql_fmt_time(out, e->end);
		gw_buf_puts(out, ",\"peak\":");
		put_model(out, e->peak);
		gw_buf_putf(out, ",\"active\":%s}",
			    e->active ? "true" : "false");
	}
	gw_buf_puts(out, "]}");
}

static int param_time(const struct gw_api_request *rq, struct gw_api_reply *r,
		      const char *name, int64_t *ms)
{
	const char *s = gw_api_params_get(rq->params, name);

	if (!s || gw_api_parse_time(s, ms))
		return bad(r, 400, "bad_data",
			   "invalid parameter \"%s\": cannot parse \"%.200s\" "
			   "to a valid timestamp",
			   name, s ? s : "");
	return 0;
}

static int param_duration(const struct gw_api_request *rq,
			  struct gw_api_reply *r, const char *name,
			  int64_t dflt, int64_t *ms)
{
	const char *s = gw_api_params_get(rq->params, name);

	if (!s || !*s) {
		if (dflt < 0)
			return bad(r, 400, "bad_data",
				   "invalid parameter \"%s\": cannot parse "
				   "\"\" to a valid duration",
				   name);
		*ms = dflt;
		return 0;
	}
	if (gw_api_parse_duration(s, ms))
		return bad(r, 400, "bad_data",
			   "invalid parameter \"%s\": cannot parse \"%.200s\" "
			   "to a valid duration",
			   name, s);
	return 0;
}

/* Checks the parameters; 1 = error reply made. */
static int params(const struct gw_api_request *rq, struct gw_api_reply *r,
		  struct gw_matcher **m, size_t *nm, int64_t *start,
		  int64_t *end, int64_t *step, int64_t *warmup)
{
	const char *query = gw_api_params_get(rq->params, "query");
	struct gw_promql_error perr;
	bool nonempty = false;
	int err;

	if ((err = param_time(rq, r, "start", start)) ||
	    (err = param_time(rq, r, "end", end)))
		return err;
	if (*end < *start)
		return bad(r, 400, "bad_data",
			   "invalid parameter \"end\": end timestamp must not "
			   "be before start time");
	if ((err = param_duration(rq, r, "step", -1, step)))
		return err;
	if (*step <= 0)
		return bad(r, 400, "bad_data",
			   "invalid parameter \"step\": zero or negative query "
			   "resolution step widths are not accepted. Try a "
			   "positive integer");
	if ((*end - *start) / *step > GW_API_MAX_POINTS)
		return bad(r, 400, "bad_data",
			   "exceeded maximum resolution of 11,000 points per "
			   "timeseries. Try decreasing the query resolution "
			   "(?step=XX)");
	if ((err = param_duration(rq, r, "warmup", DEFAULT_WARMUP_MS, warmup)))
		return err;
	if (*warmup < 0 || *warmup > MAX_WARMUP_MS)
		return bad(r, 400, "bad_data",
			   "invalid parameter \"warmup\": must be 0 to 7d");
	if (!query || !*query)
		return bad(r, 400, "bad_data",
			   "invalid parameter \"query\": no series selector "
			   "given");
	memset(&perr, 0, sizeof(perr));
	err = gw_promql_parse_selector(query, m, nm, &perr);
	if (err == -ENOMEM)
		return err;
	if (err) {
		perr.msg[sizeof(perr.msg) - 1] = '\0';
		return bad(r, 400, "bad_data",
			   "invalid parameter \"query\": %s (the baseline "
			   "wants a series selector such as "
			   "gpuwatch_gpu_power_watts{gpu=\"0\"})",
			   perr.msg[0] ? perr.msg : "parse error");
	}
	for (size_t j = 0; j < *nm; j++)
		nonempty |= !gw_matcher_matches_empty(&(*m)[j]);
	if (!nonempty) {
		gw_matchers_free(*m, *nm);
		*m = NULL;
		return bad(r, 400, "bad_data",
			   "invalid parameter \"query\": the selector must "
			   "contain at least one non-empty matcher");
	}
	return 0;
}

static int store_failed(struct gw_api_reply *r, int e)
{
	if (e == -ETIMEDOUT)
		return bad(r, 503, "timeout",
			   "query timed out in query execution");
	if (e == -ECANCELED)
		return bad(r, 503, "unavailable",
			   "query cancelled: the agent is stopping");
	if (e == -E2BIG)
		return bad(r, 422, "execution",
			   "query processing would load too many samples "
			   "into memory in query execution");
	return bad(r, 500, "internal", "cannot read the store: %s",
		   strerror(-e));
}

int gw_api_baseline(const struct gw_queryable *q, const struct gw_api_opts *o,
		    const struct gw_api_request *rq, struct gw_api_reply *r)
{
	double cap = o && o->timeout > 0 && o->timeout <= 1e6
			     ? o->timeout
			     : GW_API_DEFAULT_TIMEOUT;
	struct gw_query_limits lim = {
		.max_samples = o && o->max_samples ? o->max_samples
						   : GW_API_DEFAULT_MAX_SAMPLES,
		.deadline_ns = (rq->arrival_ns ? rq->arrival_ns : mono_ns()) +
			       (uint64_t)(cap * 1e9),
		.cancel = o ? o->cancel : NULL,
	};
	int64_t lookback = o && o->lookback_ms > 0 ? o->lookback_ms
						   : GW_API_DEFAULT_LOOKBACK_MS;
	struct gw_series_set set = { 0 };
	struct gw_detect_config cfg;
	struct gw_matcher *m = NULL;
	struct replay *rp = NULL;
	int64_t start, end, step, warmup;
	size_t nm = 0, shown = 0;
	int err;

	err = params(rq, r, &m, &nm, &start, &end, &step, &warmup);
	if (err)
		return err < 0 ? err : 0;
	err = gw_detect_config_init(&cfg, NULL);
	if (err) {
		err = bad(r, 500, "internal", "the detector's defaults: %s",
			  strerror(-err));
		goto out;
	}
	err = q->select(q->ctx, m, nm, start - warmup, end, GW_TIER_RAW, &lim,
			&set);
	if (err) {
		err = err == -ENOMEM ? -ENOMEM : store_failed(r, err);
		goto out;
	}
	rp = calloc(1, sizeof(*rp));
	if (!rp) {
		err = -ENOMEM;
		goto out;
	}
	gw_buf_reset(&r->body);
	r->status = 200;
	gw_buf_putf(&r->body,
		    "{\"status\":\"success\",\"data\":{\"resultType\":"
		    "\"baseline\",\"threshold\":");
	put_value(&r->body, cfg.threshold);
	gw_buf_putf(&r->body, ",\"warmup\":%lld,\"result\":[",
		    (long long)(warmup / 1000));
	for (size_t k = 0; k < set.n && !gw_buf_error(&r->body); k++) {
		const struct gw_series_data *s = &set.s[k];

		for (int c = 0; c < C_N; c++) {
			gw_buf_release(&rp->col[c]);
			gw_buf_init(&rp->col[c], GW_API_MAX_REPLY);
			rp->npts[c] = 0;
		}
		rp->nep = 0;
		if (s->tier != GW_TIER_RAW || !s->n)
			continue;
		replay_series(rp, &cfg, s, start, end, step, lookback);
		for (int c = 0; c < C_N; c++)
			gw_buf_set_error(&r->body, gw_buf_error(&rp->col[c]));
		if (!rp->npts[C_VALUE] && !rp->nep)
			continue;
		if (shown++)
			gw_buf_puts(&r->body, ",");
		put_series(&r->body, s, rp);
	}
	gw_buf_puts(&r->body, "]}");
	if (rp->ep_dropped)
		gw_buf_putf(&r->body,
			    ",\"warnings\":[\"more than %d episodes in a "
			    "series; the first are shown\"]",
			    MAX_EPISODES);
	gw_buf_puts(&r->body, "}");
	err = gw_buf_error(&r->body);
	if (err == -ENOSPC)
		err = bad(r, 422, "execution",
			  "the result is larger than %u MiB; select fewer "
			  "series or use a larger step",
			  GW_API_MAX_REPLY >> 20);
	else if (err && err != -ENOMEM)
		err = bad(r, 500, "internal", "cannot build the reply: %s",
			  strerror(-err));
out:
	if (rp)
		for (int c = 0; c < C_N; c++)
			gw_buf_release(&rp->col[c]);
	free(rp);
	gw_series_set_release(&set);
	gw_matchers_free(m, nm);
	return err < 0 ? err : 0;
}
