/* SPDX-License-Identifier: MIT */
#include "pipeline/ingest.h"

#include <errno.h>
#include <math.h>
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

struct gw_ingest {
	struct gw_registry *reg;
	struct gw_store *store;
	_Atomic uint64_t *fast_ms;
	struct gw_worker *w; /* "gw-store" */
	int slot;
	struct gw_snap snap;
	struct gw_registry_cursor cur;
	double next_stats;  /* CLOCK_MONOTONIC s: the store's metrics due */
	double due;	    /* the pass after a wake; 0: none pending */
	_Atomic bool woken; /* a publish woke the worker since the last pass */
	/* One pass's samples, copied under the registry lock and appended
	 * after it is released, so that scrapes never wait on the store. */
	struct copied *batch;
	size_t n, cap;
	struct gw_buf arena;
	uint64_t overflow, overflow_noted;
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

static void copy_one(void *ctx, const struct gw_visit *v)
{
	struct gw_ingest *in = ctx;
	size_t name = in->arena.len, labels;

	if (in->n == in->cap) {
		size_t ncap = in->cap ? in->cap * 2 : 1024;
		struct copied *nb =
			ncap <= GW_SNAP_MAX_SAMPLES * 4
				? realloc(in->batch, ncap * sizeof(*nb))
				: NULL;

		if (!nb) {
			in->overflow++;
			return;
		}
		in->batch = nb;
		in->cap = ncap;
	}
	if (gw_buf_add(&in->arena, v->name, strlen(v->name) + 1)) {
		in->overflow++;
		return;
	}
	labels = in->arena.len;
	if (gw_buf_add(&in->arena, v->labels, strlen(v->labels) + 1)) {
		in->arena.len = name;
		in->overflow++;
		return;
	}
	in->batch[in->n++] = (struct copied){ name,    labels,	v->value,
					      v->t_ms, v->type, v->kind };
}

/* Scores a sample the store took and stores the score beside it. */
static void judge(struct gw_ingest *in, const char *name, const char *labels,
		  const struct copied *c)
{
	char sname[320];
	struct gw_anomaly_verdict vd;
	double score = gw_anomaly_judge(in->anom, name, labels, c->type,
					c->kind, c->t_ms, c->value, &vd);

	if (isnan(score) || gw_anomaly_score_name(name, sname, sizeof(sname)))
		return;
	(void)!gw_store_append(in->store, sname, labels, c->t_ms, score);
	/* NAME:anomaly_episode: the open episode's peak score at every
	 * sample from its onset, 0 at the sample that ends it (one alert
	 * per episode for a rule on it). */
	if (!vd.in_episode ||
	    gw_anomaly_episode_name(name, sname, sizeof(sname)))
		return;
	/* With the co-occurring anomalies of the same GPU or process as
	 * the label explanation (alerts on it carry it). */
	if (vd.explanation && vd.explanation[0]) {
		char lb[2048];
		int k = snprintf(lb, sizeof(lb), "%s%sexplanation=\"", labels,
				 labels[0] ? "," : "");
		size_t n = k > 0 ? (size_t)k : sizeof(lb);

		for (const char *p = vd.explanation; *p && n + 3 < sizeof(lb);
		     p++) {
			if (*p == '"' || *p == '\\')
				lb[n++] = '\\';
			lb[n++] = *p;
		}
		if (n + 2 <= sizeof(lb)) {
			lb[n++] = '"';
			lb[n] = '\0';
			labels = lb;
		}
		(void)!gw_store_append(in->store, sname, labels, c->t_ms,
				       vd.event == GW_DETECT_END ? 0 : vd.peak);
		return;
	}
	(void)!gw_store_append(in->store, sname, labels, c->t_ms,
			       vd.event == GW_DETECT_END ? 0 : vd.peak);
}

/* Takes what was published since the last pass into the store. */
static void pass(struct gw_ingest *in)
{
	uint64_t refused = in->overflow - in->overflow_noted;

	in->n = 0;
	gw_buf_reset(&in->arena);
	gw_registry_visit(in->reg, &in->cur, copy_one, in);
	for (size_t i = 0; i < in->n; i++) {
		const struct copied *c = &in->batch[i];
		const char *name = in->arena.p + c->name;
		const char *labels = in->arena.p + c->labels;

		/* Refusals are counted (and logged once) by the store; a
		 * refused sample is not modelled either. */
		if (gw_store_append(in->store, name, labels, c->t_ms,
				    c->value) != 0)
			refused++;
		else if (in->anom)
			judge(in, name, labels, c);
	}
	/* Also in gpuwatch_agent_dropped_samples_total: what was lost on
	 * the way to the disk, whatever the reason. */
	gw_registry_note_refused(in->reg, refused);
	in->overflow_noted = in->overflow;
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
		    (double)in->overflow, NULL, "reason", "batch_full", NULL);
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
	}
	gw_registry_publish(in->reg, in->slot, n);
}

/*
 * One pass and maintenance, and the store's metrics once a fast interval.
 * A publish wakes the worker (wake_on_publish), so each pass takes what
 * was published since the last one before the next publish replaces it;
 * without publishes, it runs a fast interval after the last one ended.
 * Either way the pass comes COALESCE_S after the round that starts it.
 */
static double ingest_round(struct gw_worker *w, void *arg)
{
	struct gw_ingest *in = arg;
	double period = (double)atomic_load(in->fast_ms) / 1000.0;
	double now = gw_now_mono();
	int err;

	(void)w;
	/* The collectors publish in bursts (one slot per GPU, all at the
	 * tick): the first wake starts a short wait, the wakes during it
	 * only end its rest early, and one pass takes the whole burst. */
	if (in->due == 0) {
		in->due = now + COALESCE_S;
		return COALESCE_S;
	}
	if (now < in->due)
		return in->due - now;
	in->due = 0;
	/* Publishes from here on wake the next round. */
	atomic_store(&in->woken, false);
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
 * wake per pass is enough. */
static void wake_on_publish(void *ctx)
{
	struct gw_ingest *in = ctx;

	if (!atomic_exchange(&in->woken, true))
		gw_worker_wake(in->w);
}

/* The last pass: what was published up to now, then a flush. */
static void ingest_fini(struct gw_worker *w, void *arg)
{
	struct gw_ingest *in = arg;

	(void)w;
	pass(in);
	if (gw_store_flush(in->store))
		gw_err("store: the final flush failed");
	save_models(in);
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
	if (o->baselines) {
		struct gw_anomaly_opts ao;

		gw_anomaly_opts_default(&ao);
		ao.max_series = o->max_series;
		err = gw_anomaly_new(&in->anom, &ao);
		if (err) {
			free(in);
			return err;
		}
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
	gw_snap_init(&in->snap);
	gw_buf_init(&in->arena, 64u << 20);
	in->slot = gw_registry_slot(in->reg, "store");
	if (in->slot < 0) {
		err = in->slot;
		gw_anomaly_free(in->anom);
		free(in->models_path);
		gw_snap_release(&in->snap);
		gw_buf_release(&in->arena);
		free(in);
		return err;
	}
	wo.arg = in;
	err = gw_worker_start(&wo, &in->w);
	if (err) {
		gw_anomaly_free(in->anom);
		free(in->models_path);
		gw_snap_release(&in->snap);
		gw_buf_release(&in->arena);
		free(in);
		return err;
	}
	gw_registry_on_publish(in->reg, wake_on_publish, in, in->slot);
	*out = in;
	return 0;
}

void gw_ingest_request_stop(struct gw_ingest *in)
{
	gw_worker_request_stop(in->w);
}

int gw_ingest_stop(struct gw_ingest *in, double deadline)
{
	return gw_worker_stop(in->w, deadline);
}

void gw_ingest_free(struct gw_ingest *in)
{
	if (!in)
		return;
	gw_registry_on_publish(in->reg, NULL, NULL, -1);
	gw_worker_free(in->w);
	gw_snap_release(&in->snap);
	gw_buf_release(&in->arena);
	gw_anomaly_free(in->anom);
	free(in->models_path);
	free(in->batch);
	free(in);
}
