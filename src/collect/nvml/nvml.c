/* SPDX-License-Identifier: MIT */
/*
 * nvml.c - the hardware collector's threads: scheduler ("gw-nvml"), per-GPU
 * workers ("gw-nvml-N") and the hang watchdog.  See nvml.h for the thread
 * and state diagram.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/nvml/nvml_internal.h"
#include "collect/podres/podres.h"
#include "common/caps.h"
#include "common/clock.h"
#include "common/log.h"

#define THREAD_STACK	 (256u * 1024)
#define LOST_BACKOFF_MAX 60.0
#define LOAD_BACKOFF_MIN 5.0
#define LOAD_BACKOFF_MAX 60.0

/* Starts a worker of the collector; *out is written under c->mu. */
static int start_worker(struct gw_nvml *c, struct gw_worker **out,
			struct gw_worker_opts *o)
{
	struct gw_worker *w;
	int r;

	o->stack_size = THREAD_STACK;
	o->table = c->env->workers;
	r = gw_worker_start(o, &w);
	if (r)
		return r;
	pthread_mutex_lock(&c->mu);
	*out = w;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static void mark_lost(struct gpu_dev *d)
{
	struct gw_nvml *c = d->c;

	pthread_mutex_lock(&d->mu);
	d->state = DEV_LOST;
	pthread_mutex_unlock(&d->mu);
	/* Backoff restarts at 1 s only after a clean pass: a flapping GPU
	 * keeps doubling it. */
	d->backoff = fmin(fmax(1, d->backoff * 2), LOST_BACKOFF_MAX);
	d->retry_at = gw_now_mono() + d->backoff;
	d->gpm_have_prev = 0;
	atomic_fetch_add(&d->lost_count, 1);
	gw_log_once(&d->logged_lost, GW_LOG_WARN,
		    "nvml: GPU %u (%s) is lost: NVML says GPU_IS_LOST; "
		    "gpuwatch_gpu_up is 0 and the agent retries with backoff",
		    d->index, d->uuid);
	gw_snap_reset(&d->snap);
	gw_registry_publish(c->env->reg, d->slot_fast, &d->snap);
	gw_registry_publish(c->env->reg, d->slot_detail, &d->snap);
}

/* A lost GPU is probed with exponential backoff; returns 1 when it is back. */
static int try_recover(struct gpu_dev *d)
{
	double now = gw_now_mono();
	int up;

	if (now < d->retry_at)
		return 0;
	if (gw_nvml_probe(d) < 0) {
		d->backoff = fmin(fmax(1, d->backoff * 2), LOST_BACKOFF_MAX);
		d->retry_at = now + d->backoff;
		return 0;
	}
	if (!d->uuid[0]) {
		gw_nvml_discover(d->c, d); /* never identified: do it now */
		if (d->h)
			atomic_store(&d->register_events, 1);
	} else {
		pthread_mutex_lock(&d->mu);
		d->state = DEV_UP;
		pthread_mutex_unlock(&d->mu);
	}
	pthread_mutex_lock(&d->mu);
	up = d->state == DEV_UP;
	pthread_mutex_unlock(&d->mu);
	if (!up) {
		d->backoff = fmin(fmax(1, d->backoff * 2), LOST_BACKOFF_MAX);
		d->retry_at = now + d->backoff;
		return 0;
	}
	d->nvlink_links = -1;
	atomic_flag_clear(&d->logged_lost);
	gw_info("nvml: GPU %u (%s) answers again", d->index, d->uuid);
	return 1;
}

/*
 * The GPU's pod, from the kubelet's pod-resources map, when the map changed
 * since the last look: the labels of the GPU's series follow (a new pod is
 * a new series, as in Prometheus; none leaves gpu and uuid alone).
 */
static void pod_labels(struct gpu_dev *d)
{
	struct gw_podres *p = d->c->env->podres;
	struct gw_podres_dev pd;
	uint64_t gen = gw_podres_generation(p);

	if (!p || gen == d->podres_gen)
		return;
	d->podres_gen = gen;
	/* Lock order: d->mu, then the map's own. */
	pthread_mutex_lock(&d->mu);
	if (!gw_podres_lookup(p, d->uuid, &pd))
		memset(&pd, 0, sizeof(pd));
	if (strcmp(pd.pod, d->pod) || strcmp(pd.ns, d->pod_ns) ||
	    strcmp(pd.container, d->pod_container)) {
		snprintf(d->pod, sizeof(d->pod), "%s", pd.pod);
		snprintf(d->pod_ns, sizeof(d->pod_ns), "%s", pd.ns);
		snprintf(d->pod_container, sizeof(d->pod_container), "%s",
			 pd.container);
		gw_nvml_dev_labels(d);
	}
	pthread_mutex_unlock(&d->mu);
}

static void run_jobs(struct gpu_dev *d, int jobs)
{
	static int (*const readers[2])(
		struct gpu_dev *) = { gw_nvml_read_fast, gw_nvml_read_detail };
	struct gw_nvml *c = d->c;
	enum dev_state st;

	pthread_mutex_lock(&d->mu);
	st = d->state;
	pthread_mutex_unlock(&d->mu);
	if (st == DEV_LOST) {
		if (!try_recover(d))
			return;
		jobs = JOB_FAST | JOB_DETAIL;
	}
	pod_labels(d);
	for (int set = 0; set < 2; set++) {
		double t0;
		int r;

		if (!(jobs & (1 << set)))
			continue;
		t0 = gw_now_mono();
		gw_snap_reset(&d->snap);
		r = readers[set](d);
		if (r == -ENODEV) {
			mark_lost(d);
			return;
		}
		pthread_mutex_lock(&d->mu);
		d->dur[set] = gw_now_mono() - t0;
		pthread_mutex_unlock(&d->mu);
		gw_registry_publish(c->env->reg,
				    set ? d->slot_detail : d->slot_fast,
				    &d->snap);
	}
	d->backoff = 0; /* a clean pass */
}

/* A GPU's worker: runs the job the scheduler handed over, then rests
 * until the next one wakes it. */
static double dev_round(struct gw_worker *w, void *arg)
{
	struct gpu_dev *d = arg;
	int jobs;

	(void)w;
	pthread_mutex_lock(&d->mu);
	jobs = d->jobs;
	d->jobs = 0;
	if (jobs) {
		d->busy = 1;
		d->job_started = gw_now_mono();
	}
	pthread_mutex_unlock(&d->mu);
	if (!jobs)
		return INFINITY;

	run_jobs(d, jobs);

	pthread_mutex_lock(&d->mu);
	d->busy = 0;
	d->in_call = NULL;
	if (d->hung) {
		d->hung = 0;
		gw_info("nvml: GPU %u answers again after a hung call",
			d->index);
	}
	pthread_mutex_unlock(&d->mu);
	return INFINITY;
}

/* Starts the per-GPU workers and the event thread after a successful load. */
static int start_workers(struct gw_nvml *c)
{
	int r;

	for (unsigned int i = 0; i < c->ndev; i++) {
		struct gpu_dev *d = &c->dev[i];
		char owner[32], name[24]; /* "gw-nvml-63" at most */
		struct gw_worker_opts o = {
			.name = name,
			.round = dev_round,
			.arg = d,
			.caps = GW_CAPS_ATTRIB, /* the process list */
		};

		snprintf(owner, sizeof(owner), "nvml-gpu%u-fast", i);
		d->slot_fast = gw_registry_slot(c->env->reg, owner);
		snprintf(owner, sizeof(owner), "nvml-gpu%u-detail", i);
		d->slot_detail = gw_registry_slot(c->env->reg, owner);
		if (d->slot_fast < 0 || d->slot_detail < 0)
			return -ENOSPC;
		snprintf(name, sizeof(name), "gw-nvml-%u", i);
		r = start_worker(c, &d->w, &o);
		if (r) {
			gw_err("nvml: cannot start the thread for GPU %u: %s",
			       i, strerror(-r));
			return r;
		}
		d->thread_started = 1;
	}
	if (c->fns.event_set_create && c->fns.event_set_wait &&
	    c->fns.device_register_events) {
		struct gw_worker_opts o = {
			.name = "gw-nvml-events",
			.init = gw_nvml_events_init,
			.round = gw_nvml_events_round,
			.fini = gw_nvml_events_fini,
			.arg = c,
		};

		r = start_worker(c, &c->events, &o);
		if (r)
			gw_warn("nvml: cannot start the event thread: %s; XID "
				"errors are not counted",
				strerror(-r));
	} else {
		gw_warn("nvml: no event API in this driver; XID errors are not "
			"counted");
	}
	return 0;
}

static void add_status(struct gw_nvml *c, struct gw_snap *s)
{
	double dur[2] = { NAN, NAN };
	char nb[24];

	gw_snap_add(s, GW_FAM(AGENT_COLLECTOR_UP), c->loaded, NULL, "collector",
		    "nvml", NULL);
	gw_snap_add(s, GW_FAM(AGENT_COLLECTOR_TIMEOUTS_TOTAL),
		    (double)atomic_load(&c->timeouts), NULL, "collector",
		    "nvml", NULL);
	for (int i = 0; i < GW_NVML_ERR_SLOTS; i++) {
		uint64_t n = atomic_load(&c->errors[i]);
		int code = gw_nvml_slot_code(i);

		if (n)
			gw_snap_add(s, GW_FAM(AGENT_COLLECTOR_ERRORS_TOTAL),
				    (double)n, NULL, "collector", "nvml",
				    "code",
				    code < 0 ? "OTHER"
					     : gw_nvml_code_name(code, nb,
								 sizeof(nb)),
				    NULL);
	}
	if (!c->loaded)
		return;
	gw_snap_add(s, GW_FAM(GPUS), c->ndev, NULL, NULL);
	for (unsigned int i = 0; i < c->ndev; i++) {
		struct gpu_dev *d = &c->dev[i];
		int up;

		pthread_mutex_lock(&d->mu);
		up = d->state == DEV_UP && !d->hung && d->thread_started;
		for (int k = 0; k < 2; k++)
			if (d->dur[k] > 0 && !(d->dur[k] <= dur[k]))
				dur[k] = d->dur[k];
		gw_snap_add(s, GW_FAM(GPU_UP), up, d->labels, NULL);
		gw_snap_add(s, GW_FAM(GPU_LOST_TOTAL),
			    (double)atomic_load(&d->lost_count), d->labels,
			    NULL);
		gw_snap_add(s, GW_FAM(GPU_INFO), 1, d->labels, "name", d->name,
			    "pci_bus_id", d->bus_id, "driver_version",
			    c->driver_version, NULL);
		pthread_mutex_unlock(&d->mu);
	}
	gw_snap_add(s, GW_FAM(AGENT_COLLECTOR_DURATION_SECONDS), dur[0], NULL,
		    "collector", "nvml", "set", "fast", NULL);
	gw_snap_add(s, GW_FAM(AGENT_COLLECTOR_DURATION_SECONDS), dur[1], NULL,
		    "collector", "nvml", "set", "detail", NULL);
}

/*
 * Hands jobs to idle workers; declares busy ones hung past the timeout.
 * Returns how many were newly declared hung; *watch is lowered to the time
 * a busy worker would become hung, so the scheduler wakes only then.
 */
static int dispatch(struct gw_nvml *c, int jobs, double now, double *watch)
{
	double timeout = (double)atomic_load(&c->timeout_ms) / 1000;
	int hung = 0;

	for (unsigned int i = 0; i < c->ndev; i++) {
		struct gpu_dev *d = &c->dev[i];

		if (!d->thread_started)
			continue;
		pthread_mutex_lock(&d->mu);
		if (d->busy) {
			if (!d->hung && now - d->job_started > timeout) {
				d->hung = 1;
				atomic_fetch_add(&c->timeouts, 1);
				hung++;
				gw_warn("nvml: GPU %u: %s has not returned "
					"after %.1fs; reporting the GPU down "
					"until it does",
					d->index,
					d->in_call ? d->in_call : "a call",
					now - d->job_started);
				/* Its last values are stale now. */
				gw_registry_publish(c->env->reg, d->slot_fast,
						    &c->empty_snap);
				gw_registry_publish(c->env->reg, d->slot_detail,
						    &c->empty_snap);
			} else if (!d->hung)
				*watch = fmin(*watch,
					      d->job_started + timeout + 0.01);
		} else if (jobs) {
			d->jobs |= jobs;
			d->job_started = now; /* until the worker takes it */
			gw_worker_wake(d->w);
			*watch = fmin(*watch, now + timeout + 0.01);
		}
		pthread_mutex_unlock(&d->mu);
	}
	return hung;
}

static int sched_init(struct gw_worker *w, void *arg)
{
	struct gw_nvml *c = arg;

	(void)w;
	c->load_backoff = LOAD_BACKOFF_MIN;
	return 0;
}

/* One tick; rests until the next set is due, a busy worker would turn hung
 * or the next load attempt (a reload wakes it). */
static double sched_round(struct gw_worker *w, void *arg)
{
	struct gw_nvml *c = arg;
	const struct gw_collect_env *env = c->env;
	double now = gw_now_mono(), fast, detail, next;
	int jobs = 0;

	(void)w;
	if (!c->loaded) {
		if (now >= c->retry_load_at) {
			if (gw_nvml_load(c) == 0) {
				if (start_workers(c))
					gw_err("nvml: collector disabled");
			} else {
				c->retry_load_at = now + c->load_backoff;
				c->load_backoff = fmin(c->load_backoff * 2,
						       LOAD_BACKOFF_MAX);
			}
		}
		if (!c->loaded) {
			add_status(c, &c->status_snap);
			gw_registry_publish(env->reg, c->slot_status,
					    &c->status_snap);
			return c->retry_load_at - gw_now_mono();
		}
		now = gw_now_mono();
	}
	fast = (double)atomic_load(env->fast_ms) / 1000;
	detail = (double)atomic_load(env->detail_ms) / 1000;
	if (now >= c->next_fast) {
		jobs |= JOB_FAST;
		c->next_fast = c->next_fast + fast > now ? c->next_fast + fast
							 : now + fast;
	}
	if (now >= c->next_detail) {
		jobs |= JOB_DETAIL;
		c->next_detail = c->next_detail + detail > now
					 ? c->next_detail + detail
					 : now + detail;
	}
	/* Status and events are published on each tick, and at once
	 * when a worker is declared hung. */
	next = fmin(c->next_fast, c->next_detail);
	if (dispatch(c, jobs, now, &next) || jobs) {
		add_status(c, &c->status_snap);
		gw_registry_publish(env->reg, c->slot_status, &c->status_snap);
		gw_nvml_publish_events(c);
	}
	return next - gw_now_mono();
}

static int col_start(const struct gw_collect_env *env, void **out)
{
	struct gw_nvml *c = calloc(1, sizeof(*c));
	struct gw_worker_opts o = {
		.name = "gw-nvml",
		.init = sched_init,
		.round = sched_round,
		/* what the per-GPU threads it starts keep */
		.caps = GW_CAPS_ATTRIB,
	};
	int r;

	if (!c)
		return -ENOMEM;
	c->env = env;
	c->dcgm = env->o->dcgm;
	atomic_store(&c->timeout_ms,
		     (uint64_t)(env->o->collector_timeout * 1000));
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->ev_mu, NULL);
	for (unsigned int i = 0; i < GW_NVML_MAX_GPUS; i++) {
		struct gpu_dev *d = &c->dev[i];

		d->c = c;
		d->index = i;
		d->nvlink_links = -1;
		d->slot_fast = d->slot_detail = -1;
		pthread_mutex_init(&d->mu, NULL);
		gw_snap_init(&d->snap);
	}
	gw_snap_init(&c->status_snap);
	gw_snap_init(&c->events_snap);
	gw_snap_init(&c->empty_snap);
	c->slot_status = gw_registry_slot(env->reg, "nvml-status");
	c->slot_events = gw_registry_slot(env->reg, "nvml-events");
	if (c->slot_status < 0 || c->slot_events < 0) {
		r = -ENOSPC;
		goto err;
	}
	o.arg = c;
	r = start_worker(c, &c->sched, &o);
	if (r)
		goto err;
	*out = c;
	return 0;
err:
	free(c);
	return r;
}

/* Asks every thread started so far to finish. */
static void col_request_stop(void *priv)
{
	struct gw_nvml *c = priv;

	pthread_mutex_lock(&c->mu);
	gw_worker_request_stop(c->sched);
	for (unsigned int i = 0; i < GW_NVML_MAX_GPUS; i++)
		gw_worker_request_stop(c->dev[i].w);
	gw_worker_request_stop(c->events);
	pthread_mutex_unlock(&c->mu);
}

static int col_stop(void *priv, double deadline)
{
	struct gw_nvml *c = priv;
	struct gw_worker *w[GW_NVML_MAX_GPUS + 1];
	int r = 0;

	col_request_stop(c);
	if (gw_worker_join(c->sched, deadline))
		r = -ETIMEDOUT;
	/* Threads the scheduler started after the request (it may still be
	 * starting them if it is stuck) are asked again. */
	col_request_stop(c);
	pthread_mutex_lock(&c->mu);
	for (unsigned int i = 0; i < GW_NVML_MAX_GPUS; i++)
		w[i] = c->dev[i].w;
	w[GW_NVML_MAX_GPUS] = c->events;
	pthread_mutex_unlock(&c->mu);
	/* Join every thread that finishes in time, even past a stuck one. */
	for (unsigned int i = 0; i <= GW_NVML_MAX_GPUS; i++)
		if (gw_worker_join(w[i], deadline))
			r = -ETIMEDOUT;
	return r;
}

static void col_free(void *priv)
{
	struct gw_nvml *c = priv;

	if (!c)
		return;
	for (unsigned int i = 0; i < GW_NVML_MAX_GPUS; i++) {
		struct gpu_dev *d = &c->dev[i];

		for (int k = 0; k < 2; k++)
			if (d->gpm_sample[k] && c->fns.gpm_sample_free)
				c->fns.gpm_sample_free(d->gpm_sample[k]);
		free(d->procs);
		free(d->plabels);
		free(d->putil);
		gw_snap_release(&d->snap);
		pthread_mutex_destroy(&d->mu);
		gw_worker_free(d->w);
	}
	gw_worker_free(c->events);
	gw_worker_free(c->sched);
	gw_nvml_unload(c);
	gw_snap_release(&c->status_snap);
	gw_snap_release(&c->events_snap);
	gw_snap_release(&c->empty_snap);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->ev_mu);
	free(c);
}

static void col_reload(void *priv)
{
	struct gw_nvml *c = priv;

	atomic_store(&c->timeout_ms,
		     (uint64_t)(c->env->o->collector_timeout * 1000));
	gw_worker_wake(c->sched);
}

const struct gw_collector_ops gw_nvml_collector = {
	.name = "nvml",
	.start = col_start,
	.request_stop = col_request_stop,
	.stop = col_stop,
	.free = col_free,
	.reload = col_reload,
};
