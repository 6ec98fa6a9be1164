/* SPDX-License-Identifier: MIT */
#include "pipeline/ingest.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/worker.h"
#include "pipeline/anomaly.h"
#include "pipeline/catalog.h"
#include "store/store.h"

/* How long a pass waits after the wake that starts it, for the rest of a
 * burst of publishes (far below any interval, 0.1 s at least). */
#define COALESCE_S 0.02

/* A sample copied out of the registry: name and labels in the arena. */
struct copied {
	size_t name, labels; /* offsets into the arena */
	double value;
	int64_t t_ms;
	enum gw_metric_type type;
	enum gw_sample_kind kind;
};

/* Copied samples: their names and labels in the arena. */
struct batch {
	struct copied *v;
	size_t n, cap;
	struct gw_buf arena;
};

/*
 * Two threads: "gw-store-in" copies every publish out of the registry into
 * the queue q at once (cheap: no disk, no store lock), and "gw-store"
 * swaps the queue out and appends it, then runs the store's maintenance.
 * An hourly cut or a slow disk stalls only the second: the publishes made
 * meanwhile wait in q (bounded: GW_SNAP_MAX_SAMPLES * 4 samples, 64 MiB of
 * names) instead of being replaced in the registry before the store took
 * them.
 */
struct gw_ingest {
	struct gw_registry *reg;
	struct gw_store *store;
	_Atomic uint64_t *fast_ms;
	struct gw_worker *w;  /* "gw-store": appends, maintenance */
	struct gw_worker *cw; /* "gw-store-in": copies publishes into q */
	int slot;
	struct gw_snap snap;
	double next_stats;  /* CLOCK_MONOTONIC s: the store's metrics due */
	double due;	    /* gw-store-in: the pass after a wake; 0: none */
	_Atomic bool woken; /* a publish woke gw-store-in since its pass */

	pthread_mutex_t qlock;
	/* Under qlock. */
	struct batch q;
	struct gw_registry_cursor cur;
	uint64_t overflow; /* samples q had no room for */

	/* gw-store's own. */
	struct batch work;
	uint64_t overflow_noted;
	/* Dynamic baselines of the gauges (NULL with --no-baselines). */
	struct gw_anomaly *anom;
	char *models_path; /* NULL: not kept across restarts */
	double next_save;  /* gw_now_real() of the next save */
};

#define MODELS_SAVE_S 600.0

static void save_models(struct gw_ingest *in)
{
	int err;

	if (!in->anom || !in->models_path)
		return;
	err = gw_anomaly_save(in->anom, in->models_path);
	if (err)
		gw_warn("baselines: cannot save the models to %s: %s",
			in->models_path, strerror(-err));
}

/* Under qlock: one sample into q. */
static void copy_one(void *ctx, const struct gw_visit *v)
{
	struct gw_ingest *in = ctx;
	struct batch *q = &in->q;
	size_t name = q->arena.len, labels;

	if (q->n == q->cap) {
		size_t ncap = q->cap ? q->cap * 2 : 1024;
		struct copied *nb = ncap <= GW_SNAP_MAX_SAMPLES * 4
					    ? realloc(q->v, ncap * sizeof(*nb))
					    : NULL;

		if (!nb) {
			in->overflow++;
			return;
		}
		q->v = nb;
		q->cap = ncap;
	}
	if (gw_buf_add(&q->arena, v->name, strlen(v->name) + 1)) {
		in->overflow++;
		return;
	}
	labels = q->arena.len;
	if (gw_buf_add(&q->arena, v->labels, strlen(v->labels) + 1)) {
		q->arena.len = name;
		in->overflow++;
		return;
	}
	q->v[q->n++] = (struct copied){ name,	 labels,  v->value,
					v->t_ms, v->type, v->kind };
}

/* Copies what was published since the last visit into q; how many. */
static size_t take_publishes(struct gw_ingest *in)
{
	size_t n;

	pthread_mutex_lock(&in->qlock);
	n = in->q.n;
	gw_registry_visit(in->reg, &in->cur, copy_one, in);
	n = in->q.n - n;
	pthread_mutex_unlock(&in->qlock);
	return n;
}

/* Scores a sample the store took and stores the score beside it. */
static void judge(struct gw_ingest *in, const char *name, const char *labels,
		  const struct copied *c)
{
	char sname[320], lb[2048]; /* lb: the episode's labels, below */
	struct gw_anomaly_verdict vd;
	double score = gw_anomaly_judge(in->anom, name, labels, c->type,
					c->kind, c->t_ms, c->value, &vd);

	if (isnan(score) || gw_anomaly_score_name(name, sname, sizeof(sname)))
		return;
	(void)!gw_store_append(in->store, sname, labels, c->t_ms, score);
	/* NAME:anomaly_episode: the open episode's peak score at every
	 * sample from its onset, 0 at the sample that ends it (one alert
	 * per episode for a rule on it).  While its explanation settles
	 * (anomaly.h) nothing; once settled, its record starts with the
	 * onset's score at the onset's time. */
	if (!vd.in_episode || vd.settling ||
	    gw_anomaly_episode_name(name, sname, sizeof(sname)))
		return;
	/* With the label cause="workload" while a workload change on its
	 * GPU explains the episode (anomaly.h; the built-in rule leaves
	 * those out: the series without it that follows when the episode
	 * loses the explanation is the one that alerts), and the
	 * co-occurring anomalies of the same GPU or process as the label
	 * explanation (alerts on it carry it). */
	if (vd.workload || (vd.explanation && vd.explanation[0])) {
		int k = snprintf(lb, sizeof(lb), "%s%s%s", labels,
				 labels[0] && vd.workload ? "," : "",
				 vd.workload ? "cause=\"workload\"" : "");
		size_t n = k > 0 && (size_t)k < sizeof(lb) ? (size_t)k
							   : sizeof(lb);

		if (n < sizeof(lb) && vd.explanation && vd.explanation[0]) {
			k = snprintf(lb + n, sizeof(lb) - n, "%sexplanation=\"",
				     n ? "," : "");
			n = k > 0 && (size_t)k < sizeof(lb) - n ? n + (size_t)k
								: sizeof(lb);
			for (const char *p = vd.explanation;
			     *p && n + 3 < sizeof(lb); p++) {
				if (*p == '"' || *p == '\\')
					lb[n++] = '\\';
				lb[n++] = *p;
			}
			if (n + 2 <= sizeof(lb)) {
				lb[n++] = '"';
				lb[n] = '\0';
			} else {
				n = sizeof(lb);
			}
		}
		if (n < sizeof(lb))
			labels = lb;
	}
	if (vd.settled && vd.onset_ms < c->t_ms)
		(void)!gw_store_append(in->store, sname, labels, vd.onset_ms,
				       vd.first);
	(void)!gw_store_append(in->store, sname, labels, c->t_ms,
			       vd.event == GW_DETECT_END ? 0 : vd.peak);
}

/* Appends what gw-store-in queued since the last pass to the store. */
static void pass(struct gw_ingest *in)
{
	struct batch t;
	uint64_t refused, overflow;

	pthread_mutex_lock(&in->qlock);
	t = in->q;
	in->q = in->work;
	overflow = in->overflow;
	pthread_mutex_unlock(&in->qlock);
	in->work = t;
	refused = overflow - in->overflow_noted;
	/* Workload changes first: they explain the episodes of the samples
	 * scraped with them. */
	for (size_t i = 0; in->anom && i < in->work.n; i++)
		gw_anomaly_workload(in->anom,
				    in->work.arena.p + in->work.v[i].name,
				    in->work.arena.p + in->work.v[i].labels,
				    in->work.v[i].t_ms, in->work.v[i].value);
	for (size_t i = 0; i < in->work.n; i++) {
		const struct copied *c = &in->work.v[i];
		const char *name = in->work.arena.p + c->name;
		const char *labels = in->work.arena.p + c->labels;

		/* Refusals are counted (and logged once) by the store; a
		 * refused sample is not modelled either. */
		if (gw_store_append(in->store, name, labels, c->t_ms,
				    c->value) != 0)
			refused++;
		else if (in->anom)
			judge(in, name, labels, c);
	}
	in->work.n = 0;
	gw_buf_reset(&in->work.arena);
	/* Also in gpuwatch_agent_dropped_samples_total: what was lost on
	 * the way to the disk, whatever the reason. */
	gw_registry_note_refused(in->reg, refused);
	in->overflow_noted = overflow;
	if (in->anom) {
		double now = gw_now_real();

		gw_anomaly_evict(in->anom, (int64_t)(now * 1000.0));
		if (now >= in->next_save) {
			if (in->next_save > 0)
				save_models(in);
			in->next_save = now + MODELS_SAVE_S;
		}
	}
}

static void publish_stats(struct gw_ingest *in)
{
	static const char *const tiers[GW_TIERS] = { "raw", "1m", "1h" };
	struct gw_store_stats st;
	struct gw_snap *n = &in->snap;

	gw_store_stats(in->store, &st);
	gw_snap_add(n, GW_FAM(STORE_SERIES), (double)st.series, NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_SERIES_LIVE), (double)st.series_live, NULL,
		    NULL);
	gw_snap_add(n, GW_FAM(STORE_SERIES_EVICTED), (double)st.series_evicted,
		    NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_SAMPLES_APPENDED_TOTAL),
		    (double)st.samples_appended, NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_SAMPLES_REFUSED_TOTAL),
		    (double)st.samples_refused_order, NULL, "reason",
		    "out_of_order", NULL);
	gw_snap_add(n, GW_FAM(STORE_SAMPLES_REFUSED_TOTAL),
		    (double)st.samples_refused_cap, NULL, "reason", "cap",
		    NULL);
	gw_snap_add(n, GW_FAM(STORE_SAMPLES_REFUSED_TOTAL),
		    (double)st.samples_refused_bad, NULL, "reason", "bad",
		    NULL);
	gw_snap_add(n, GW_FAM(STORE_SAMPLES_REFUSED_TOTAL),
		    (double)in->overflow_noted, NULL, "reason", "batch_full",
		    NULL);
	gw_snap_add(n, GW_FAM(STORE_FLUSHES_TOTAL), (double)st.flushes, NULL,
		    "result", "ok", NULL);
	gw_snap_add(n, GW_FAM(STORE_FLUSHES_TOTAL), (double)st.flush_errors,
		    NULL, "result", "error", NULL);
	gw_snap_add(n, GW_FAM(STORE_LAST_FLUSH_DURATION_SECONDS),
		    st.last_flush_seconds, NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_SAMPLES_UNLOGGED_TOTAL),
		    (double)st.samples_unlogged, NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_CUTS_TOTAL), (double)st.cuts, NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_PARTITIONS), (double)st.partitions, NULL,
		    NULL);
	gw_snap_add(n, GW_FAM(STORE_PARTITIONS_DROPPED_TOTAL),
		    (double)st.partitions_dropped_retention, NULL, "reason",
		    "retention", NULL);
	gw_snap_add(n, GW_FAM(STORE_PARTITIONS_DROPPED_TOTAL),
		    (double)st.partitions_dropped_budget, NULL, "reason",
		    "budget", NULL);
	gw_snap_add(n, GW_FAM(STORE_FILES_QUARANTINED_TOTAL),
		    (double)st.files_quarantined, NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_CORRUPT_CHUNKS_TOTAL),
		    (double)st.corrupt_chunks, NULL, NULL);
	gw_snap_add(n, GW_FAM(STORE_DISK_BYTES), (double)st.disk_bytes, NULL,
		    NULL);
	for (int t = 0; t < GW_TIERS; t++) {
		gw_snap_add(n, GW_FAM(STORE_TIER_BYTES),
			    (double)st.tier_bytes[t], NULL, "tier", tiers[t],
			    NULL);
		gw_snap_add(n, GW_FAM(STORE_TIER_SAMPLES),
			    (double)st.tier_samples[t], NULL, "tier", tiers[t],
			    NULL);
	}
	if (in->anom) {
		struct gw_anomaly_stats as;

		gw_anomaly_stats(in->anom, &as);
		gw_snap_add(n, GW_FAM(ANOMALY_SERIES), (double)as.series, NULL,
			    NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_SCORES_TOTAL), (double)as.scores,
			    NULL, NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_REFUSED_TOTAL),
			    (double)as.refused_cap, NULL, "reason", "cap",
			    NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_REFUSED_TOTAL),
			    (double)as.refused_memory, NULL, "reason", "memory",
			    NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_EVICTED_TOTAL),
			    (double)as.evicted, NULL, NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_EPISODES_TOTAL),
			    (double)as.episodes, NULL, NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_WORKLOAD_CHANGES_TOTAL),
			    (double)as.workload_changes, NULL, NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_WORKLOAD_EPISODES_TOTAL),
			    (double)as.workload_episodes, NULL, NULL);
		gw_snap_add(n, GW_FAM(ANOMALY_WORKLOAD_OUTLASTED_TOTAL),
			    (double)as.workload_outlasted, NULL, NULL);
	}
	gw_registry_publish(in->reg, in->slot, n);
}

/*
 * gw-store-in: a publish wakes it (wake_on_publish) and it copies what was
 * published before the next publish replaces it; without publishes it
 * looks a fast interval after the last one.  The collectors publish in
 * bursts (one slot per GPU, all at the tick): the first wake starts a
 * short wait, the wakes during it only end its rest early, and one visit
 * takes the whole burst.  gw-store is woken when something was copied.
 */
static double copy_round(struct gw_worker *w, void *arg)
{
	struct gw_ingest *in = arg;
	double now = gw_now_mono();

	(void)w;
	if (in->due == 0) {
		in->due = now + COALESCE_S;
		return COALESCE_S;
	}
	if (now < in->due)
		return in->due - now;
	in->due = 0;
	/* Publishes from here on wake the next round. */
	atomic_store(&in->woken, false);
	if (take_publishes(in))
		gw_worker_wake(in->w);
	return (double)atomic_load(in->fast_ms) / 1000.0;
}

/*
 * gw-store: one pass (what gw-store-in queued), maintenance, and the
 * store's metrics once a fast interval; woken by gw-store-in, else a fast
 * interval after the last round.
 */
static double ingest_round(struct gw_worker *w, void *arg)
{
	struct gw_ingest *in = arg;
	double period = (double)atomic_load(in->fast_ms) / 1000.0;
	double now;
	int err;

	(void)w;
	pass(in);
	err = gw_store_maintain(in->store);
	if (err)
		gw_dbg("store maintenance: %s", strerror(-err));
	now = gw_now_mono();
	if (now >= in->next_stats) {
		publish_stats(in);
		in->next_stats = now + period;
	}
	return period;
}

/* Registry hook: a producer published (not the store's own slot); one
 * wake per visit is enough. */
static void wake_on_publish(void *ctx)
{
	struct gw_ingest *in = ctx;

	if (!atomic_exchange(&in->woken, true))
		gw_worker_wake(in->cw);
}

/* The last pass: what was published up to now, then a flush. */
static void ingest_fini(struct gw_worker *w, void *arg)
{
	struct gw_ingest *in = arg;

	(void)w;
	(void)take_publishes(in);
	pass(in);
	if (gw_store_flush(in->store))
		gw_err("store: the final flush failed");
	save_models(in);
}

static void ingest_release(struct gw_ingest *in)
{
	gw_worker_free(in->cw);
	gw_worker_free(in->w);
	gw_anomaly_free(in->anom);
	gw_snap_release(&in->snap);
	gw_buf_release(&in->q.arena);
	gw_buf_release(&in->work.arena);
	free(in->q.v);
	free(in->work.v);
	pthread_mutex_destroy(&in->qlock);
	free(in->models_path);
	free(in);
}

int gw_ingest_start(const struct gw_ingest_opts *o, struct gw_ingest **out)
{
	struct gw_worker_opts wo = {
		.name = "gw-store",
		.round = ingest_round,
		.fini = ingest_fini,
		.period_ms = o->fast_ms,
		.delay_first = true,
		.table = o->workers,
	};
	struct gw_worker_opts co = {
		.name = "gw-store-in",
		.round = copy_round,
		.period_ms = o->fast_ms,
		.delay_first = true,
		.table = o->workers,
	};
	struct gw_ingest *in;
	int err;

	*out = NULL;
	if (!o->store)
		return -ENODEV;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->reg = o->reg;
	in->store = o->store;
	in->fast_ms = o->fast_ms;
	pthread_mutex_init(&in->qlock, NULL);
	gw_snap_init(&in->snap);
	gw_buf_init(&in->q.arena, 64u << 20);
	gw_buf_init(&in->work.arena, 64u << 20);
	if (o->baselines) {
		struct gw_anomaly_opts ao;

		gw_anomaly_opts_default(&ao);
		ao.max_series = o->max_series;
		err = gw_anomaly_new(&in->anom, &ao);
		if (err)
			goto fail;
		if (o->models_path) {
			size_t n = 0;

			in->models_path = strdup(o->models_path);
			err = in->models_path
				      ? gw_anomaly_load(in->anom,
							in->models_path, &n)
				      : -ENOMEM;
			if (!err)
				gw_info("baselines: %zu models restored from "
					"%s",
					n, o->models_path);
			else if (err != -ENOENT)
				gw_warn("baselines: %s not restored (%s); the "
					"models learn again",
					o->models_path,
					err == -EINVAL ? "another build's "
							 "layout, or damaged"
						       : strerror(-err));
		}
	}
	in->slot = gw_registry_slot(in->reg, "store");
	if (in->slot < 0) {
		err = in->slot;
		goto fail;
	}
	wo.arg = in;
	err = gw_worker_start(&wo, &in->w);
	if (err)
		goto fail;
	co.arg = in;
	err = gw_worker_start(&co, &in->cw);
	if (err) {
		gw_worker_request_stop(in->w);
		(void)!gw_worker_stop(in->w, gw_now_mono() + 5);
		goto fail;
	}
	gw_registry_on_publish(in->reg, wake_on_publish, in, in->slot);
	*out = in;
	return 0;
fail:
	ingest_release(in);
	return err;
}

void gw_ingest_request_stop(struct gw_ingest *in)
{
	gw_worker_request_stop(in->cw);
	gw_worker_request_stop(in->w);
}

int gw_ingest_stop(struct gw_ingest *in, double deadline)
{
	int err = gw_worker_stop(in->cw, deadline);
	int err2 = gw_worker_stop(in->w, deadline);

	return err ? err : err2;
}

void gw_ingest_free(struct gw_ingest *in)
{
	if (!in)
		return;
	gw_registry_on_publish(in->reg, NULL, NULL, -1);
	ingest_release(in);
}
