/* SPDX-License-Identifier: MIT */
/*
 * agent.c - start, run and stop the daemon.
 *
 * What runs: the main thread (signals, self metrics, the CPU governor; on
 * stop, "gw-stop-watch" bounds the stop at STOP_LIMIT), libmicrohttpd's
 * "MHD-single", the "gw-query" workers and "gw-http-timer"
 * of the HTTP side, and these worker threads (common/worker.h), each
 * listed in a.workers with its CPU time in
 * gpuwatch_agent_worker_cpu_seconds_total{worker}.  The CPU governor
 * (core/self.c) charges the main thread and the workers marked * - what the
 * collection intervals pace; HTTP and queries are bounded by connection
 * limits, --query-max-concurrency and --query-timeout, rules by their
 * groups' intervals:
 *
 *   name            owner                  paced by
 * * gw-nvml         collect/nvml           the fast and detail intervals;
 *                                          hands out jobs, watches for hangs
 * * gw-nvml-N       collect/nvml, GPU N    a job from gw-nvml (woken)
 * * gw-nvml-events  collect/nvml           NVML's event wait (0.5 s)
 * * gw-ebpf         collect/bpf            ring buffer poll (<= 250 ms)
 * * gw-cupti        collect/cupti          the fast interval, after a pass
 * * gw-statsd       collect/statsd         socket poll (<= 1 s, a stop ends
 *                                          it); publishes every fast
 *                                          interval
 * * gw-sim-work     collect/sim/sim_work   the fast interval: the simulated
 *                                          processes' StatsD (--simulate)
 * * gw-store-in     pipeline/ingest        each publish (woken), else the
 *                                          fast interval: copies publishes
 *                                          into the ingest queue
 * * gw-store        pipeline/ingest        woken by gw-store-in, else the
 *                                          fast interval: appends, store
 *                                          maintenance; a last pass and
 *                                          flush on stop
 *   gw-rules        pipeline/alerts        the next group due (20 ms..1 s)
 *   gw-am-N         export/alertmanager,   its queue (curl's poll)
 *                   Alertmanager N
 *   gw-rw-N         export/rw_queue,       at once while data is due, else
 *                   remote_write N         each second; sends block in the
 *                                          client (retries, backoff)
 *   gw-rw-metrics   core/remote            each second: the queues' and
 *                                          endpoints' metrics
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collect/attrib.h"
#include "collect/kernels.h"
#include "collect/podres/podres.h"
#include "collect/bpf/collector.h"
#include "collect/bpf/prof_collector.h"
#include "collect/cupti/collector.h"
#include "collect/nvml/nvml.h"
#include "collect/sim/sim_work.h"
#include "collect/statsd/collector.h"
#include "common/caps.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/worker.h"
#include "core/alerting.h"
#include "core/cold.h"
#include "core/remote.h"
#include "core/self.h"
#include "http/api.h"
#include "http/server.h"
#include "pipeline/ingest.h"
#include "store/profstore.h"
#include "store/store.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

/* Seconds the agent gives its threads to finish on SIGTERM. */
#define STOP_GRACE 3.0
/* Seconds after which a stop that still has not finished ends the process
 * (the contract: exit within 5 s of SIGTERM, whatever runs). */
#define STOP_LIMIT 4.5

/*
 * The stop's watchdog: a thread that ends the process at STOP_LIMIT if
 * the orderly stop (queries cancelled, threads joined, last flush) has not
 * finished by then.  What was flushed is on disk (SQLite's WAL makes the
 * cut-off as safe as kill -9); at most the last flush interval is lost,
 * and that is logged.
 */
struct stop_watch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	double until;		   /* CLOCK_MONOTONIC s */
	double t_phase;		   /* when the stop's current phase began */
	const char *_Atomic phase; /* what the stop is doing now */
	pthread_t th;
	bool started;
};

/* The stop moves on to its next phase; the one that ends is logged with
 * its duration (debug), so a slow stop names its slow part. */
static void stop_phase(struct stop_watch *w, const char *next)
{
	double now = gw_now_mono();
	const char *prev = atomic_load(&w->phase);

	if (prev)
		gw_dbg("stop: %s took %.3f s", prev, now - w->t_phase);
	w->t_phase = now;
	atomic_store(&w->phase, next);
}

static void *stop_watch_run(void *arg)
{
	struct stop_watch *w = arg;
	struct timespec ts = {
		.tv_sec = (time_t)w->until,
		.tv_nsec = (long)((w->until - (double)(time_t)w->until) * 1e9),
	};
	bool done;

	pthread_mutex_lock(&w->mu);
	while (!w->done &&
	       pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT)
		;
	done = w->done;
	pthread_mutex_unlock(&w->mu);
	if (!done) {
		const char *phase = atomic_load(&w->phase);

		gw_err("stopping took more than %.1f s (at: %s); exiting now "
		       "(samples since the last flush may be lost)",
		       STOP_LIMIT, phase ? phase : "starting");
		fflush(NULL);
		_exit(0);
	}
	return NULL;
}

static void stop_watch_start(struct stop_watch *w)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->done = false;
	w->t_phase = gw_now_mono();
	w->until = w->t_phase + STOP_LIMIT;
	atomic_init(&w->phase, NULL);
	w->started = pthread_create(&w->th, NULL, stop_watch_run, w) == 0;
	if (w->started)
		pthread_setname_np(w->th, "gw-stop-watch");
	else
		gw_warn("stop: no watchdog thread; the stop is not bounded");
}

static void stop_watch_end(struct stop_watch *w)
{
	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	w->started = false;
}

/* The store's ingest thread (pipeline/ingest.h) runs beside the
 * collectors, started and stopped with them. */
static int ingest_start(const struct gw_collect_env *env, void **priv);
static void ingest_request_stop(void *priv);
static int ingest_stop(void *priv, double deadline);
static void ingest_free(void *priv);

static const struct gw_collector_ops ingest_ops = {
	.name = "store",
	.start = ingest_start,
	.request_stop = ingest_request_stop,
	.stop = ingest_stop,
	.free = ingest_free,
};

static const struct gw_collector_ops *const collectors[] = {
	&gw_podres_collector,  &gw_nvml_collector,  &gw_bpf_collector,
	&gw_prof_collector,    &gw_cupti_collector, &gw_statsd_collector,
	&gw_simwork_collector, &ingest_ops,
};
#define NCOLLECTORS (sizeof(collectors) / sizeof(collectors[0]))

/* The agent whose env this is: env is a member of struct gw_agent. */
static struct gw_agent *agent_of(const struct gw_collect_env *env)
{
	return (struct gw_agent *)((char *)env -
				   offsetof(struct gw_agent, env));
}

static int ingest_start(const struct gw_collect_env *env, void **priv)
{
	const struct gw_agent *a = agent_of(env);
	char models[4096];
	struct gw_ingest_opts o = {
		.reg = a->reg,
		.store = a->store,
		.fast_ms = env->fast_ms,
		.baselines = a->cfg.baselines != 0,
		.max_series = a->cfg.store_max_series,
		.models_path = models,
		.workers = env->workers,
	};

	/* The anomaly models live in the data directory, beside the store. */
	if (snprintf(models, sizeof(models), "%s/baselines.bin",
		     a->cfg.data_dir) >= (int)sizeof(models))
		o.models_path = NULL;
	return gw_ingest_start(&o, (struct gw_ingest **)priv);
}

static void ingest_request_stop(void *priv)
{
	gw_ingest_request_stop(priv);
}

static int ingest_stop(void *priv, double deadline)
{
	return gw_ingest_stop(priv, deadline);
}

static void ingest_free(void *priv)
{
	gw_ingest_free(priv);
}

/* The collectors' view of the settings (collect/collector.h). */
static void collect_opts(const struct gw_config *c, struct gw_collect_opts *o,
			 const char **globs, const char **pmatch)
{
	for (unsigned int i = 0; i < c->cuda_lib_globs.n; i++)
		globs[i] = c->cuda_lib_globs.v[i];
	for (unsigned int i = 0; i < c->profile_match.n; i++)
		pmatch[i] = c->profile_match.v[i];
	*o = (struct gw_collect_opts){
		.nvml_lib = c->nvml_lib,
		.dcgm = strcmp(c->compat, "dcgm") == 0,
		.collector_timeout = c->collector_timeout,
		.simulate = c->simulate,
		.sim_day = c->sim_day,
		.sim_seed = c->sim_seed,
		.faults = c->faults,
		.nfaults = c->nfaults,
		.ebpf = c->ebpf,
		.leak_age = c->leak_age,
		.ebpf_budget = c->ebpf_budget,
		.exited_grace = c->exited_grace,
		.cuda_lib_globs = globs,
		.ncuda_lib_globs = c->cuda_lib_globs.n,
		.cupti = c->cupti,
		.cupti_dir = c->cupti_dir,
		.cupti_max_kernels = c->cupti_max_kernels,
		.statsd_listen = c->statsd_listen,
		.statsd_socket = c->statsd_socket,
		.statsd_max_series = c->statsd_max_series,
		.statsd_max_tag_values = c->statsd_max_tag_values,
		.statsd_max_memory = c->statsd_max_memory,
		.pod_resources_socket = c->pod_resources_socket,
		.pod_resources_interval = c->pod_resources_interval,
		.profile = strcmp(c->profile, "all") == 0   ? GW_PROFILE_ALL
			   : strcmp(c->profile, "off") == 0 ? GW_PROFILE_OFF
							    : GW_PROFILE_GPU,
		.profile_freq = c->profile_frequency,
		.profile_flush = c->profile_flush,
		.profile_version_env = c->profile_version_env,
		.profile_unwind = strcmp(c->profile_unwind, "fp") == 0
					  ? GW_PROFILE_UNWIND_FP
				  : strcmp(c->profile_unwind, "dwarf") == 0
					  ? GW_PROFILE_UNWIND_DWARF
					  : GW_PROFILE_UNWIND_AUTO,
		.profile_match = pmatch,
		.nprofile_match = c->profile_match.n,
	};
}

/* mkdir -p with mode 0750 for the parts that are missing. */
static int make_dirs(const char *path)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * Creates the data directory and takes its lock, so that two agents never
 * write the same state.  Returns the lock fd or -1 after logging why.
 */
static int lock_data_dir(const char *dir)
{
	char path[PATH_MAX + 16], pid[32];
	int fd, err, n;

	err = make_dirs(dir);
	if (err) {
		gw_err("data directory %s: cannot create it: %s", dir,
		       strerror(-err));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/agent.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		gw_err("data directory %s: cannot write %s: %s", dir, path,
		       strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		n = (int)pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		gw_err("data directory %s is in use by another agent (pid %s); "
		       "give this one its own --data-dir",
		       dir, pid[0] ? pid : "?");
		close(fd);
		return -1;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		gw_warn("data directory %s: cannot record pid in the lock file",
			dir);
	return fd;
}

/* The attribution cache, with the job variables of --job-env. */
static int new_attrib(const struct gw_config *c, struct gw_attrib_cache **out)
{
	char names[sizeof(c->job_env)], *tok = names;
	const char *vars[GW_ATTRIB_MAX_JOB_ENV];
	struct gw_attrib_opts o = { .sz = sizeof(o) };
	unsigned int n = 0;

	/* config.c checked it: names separated by single commas. */
	snprintf(names, sizeof(names), "%s", c->job_env);
	while (*tok && n < GW_ATTRIB_MAX_JOB_ENV) {
		char *comma = strchr(tok, ',');

		vars[n++] = tok;
		if (!comma)
			break;
		*comma = '\0';
		tok = comma + 1;
	}
	o.job_env = vars;
	o.njob_env = n;
	return gw_attrib_cache_new(&o, out);
}

/*
 * The secured endpoint: --web.config.file read once here (a bad file
 * stops the agent with its line), the admin and lifecycle switches.
 */
static int web_setup(const struct gw_config *c, struct gw_http *http, char *err,
		     size_t errlen)
{
	struct gw_webconfig *wc = NULL;
	struct gw_http_web w = {
		.healthz_open = c->web_healthz_open,
		.admin = c->web_admin || strcmp(c->rw_admin_push, "on") == 0,
		.lifecycle = c->web_lifecycle,
	};
	char why[GW_CONFIG_ERR_MAX];
	int r;

	if (c->web_config_file[0]) {
		r = gw_webconfig_load(c->web_config_file, &wc, why,
				      sizeof(why));
		if (r) {
			snprintf(err, errlen, "--web.config.file: %.480s", why);
			return r;
		}
		w.config = wc;
		if (!wc->tls && wc->nusers)
			gw_warn("web config %s: basic_auth_users without "
				"tls_server_config: passwords cross the "
				"network in clear",
				c->web_config_file);
		gw_info("web config %s: %s, %zu basic auth user(s)%s%s",
			c->web_config_file,
			wc->tls ? "TLS" : "no TLS (plain HTTP)", wc->nusers,
			wc->tls ? ", client certificates: " : "",
			wc->tls ? gw_web_client_auth_name(wc->client_auth)
				: "");
	}
	r = gw_http_set_web(http, &w, why, sizeof(why));
	if (r)
		snprintf(err, errlen, "--web.config.file: %.480s", why);
	gw_webconfig_free(wc);
	return r;
}

/*
 * SIGHUP: the web configuration file read again (certificate rotation,
 * users, headers).  A file that cannot be honoured leaves the running
 * configuration in place, said in the log.
 */
static void web_reload(const struct gw_config *c, struct gw_http *http)
{
	struct gw_webconfig *wc = NULL;
	char why[GW_CONFIG_ERR_MAX];

	if (!c->web_config_file[0])
		return;
	if (gw_webconfig_load(c->web_config_file, &wc, why, sizeof(why)) ||
	    gw_http_reload_web(http, wc, why, sizeof(why)))
		gw_err("web config %s not reloaded, the running one stays: "
		       "%s",
		       c->web_config_file, why);
	else
		gw_info("web config %s reloaded: %s, %zu basic auth user(s)",
			c->web_config_file, wc->tls ? "TLS" : "no TLS",
			wc->nusers);
	gw_webconfig_free(wc);
}

/*
 * SIGHUP: read the config again (file, then the same flags), take over
 * every changed setting the table marks live (config.c logs the others),
 * and hand the new values to the modules that use them.
 */
static void reload(struct gw_agent *a, struct gw_self *self, void **priv,
		   struct gw_alerting *alerts)
{
	struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	int r;

	gw_config_defaults(&c);
	r = gw_config_from_args(&c, a->argc, a->argv, err, sizeof(err));
	if (r) {
		gw_err("reload failed, keeping the running config: %s", err);
		return;
	}
	gw_config_reload(&a->cfg, &c);
	a->copts.collector_timeout = a->cfg.collector_timeout;
	gw_log_set_level(a->cfg.log_level);
	gw_self_reconfigure(self);
	for (size_t i = 0; i < NCOLLECTORS; i++)
		if (priv[i] && collectors[i]->reload)
			collectors[i]->reload(priv[i]);
	gw_alerting_reload(alerts, &a->cfg);
	gw_info("config reloaded: interval %gs, detail-interval %gs, "
		"log-level %s",
		a->cfg.interval, a->cfg.detail_interval,
		gw_log_level_name(a->cfg.log_level));
}

/* The profile store beside the metric store (store/profstore.h). */
static int open_profiles(struct gw_agent *a, char *err, size_t errlen)
{
	struct gw_profstore_opts o = { .sz = sizeof(o) };
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/profiles.db", a->cfg.data_dir);
	o.path = path;
	o.retention_ms = (int64_t)(a->cfg.retention_1m * 1000);
	o.max_bytes = a->cfg.profile_max_bytes;
	return gw_profstore_open(&o, &a->profiles, err, errlen);
}

static int open_store(struct gw_agent *a, char *err, size_t errlen)
{
	struct gw_store_opts o;
	char dir[PATH_MAX + 8];
	int r;

	gw_store_opts_defaults(&o);
	snprintf(dir, sizeof(dir), "%s/store", a->cfg.data_dir);
	o.dir = dir;
	o.retention_ms[GW_TIER_RAW] = (int64_t)(a->cfg.retention_raw * 1000);
	o.retention_ms[GW_TIER_1M] = (int64_t)(a->cfg.retention_1m * 1000);
	o.retention_ms[GW_TIER_1H] = (int64_t)(a->cfg.retention_1h * 1000);
	o.disk_budget = a->cfg.disk_budget;
	o.flush_ms = (int64_t)(a->cfg.flush_interval * 1000);
	o.max_series = a->cfg.store_max_series;
	o.retire_ms = (int64_t)(a->cfg.store_retire_after * 1000);
	o.max_values = a->cfg.store_max_label_values;
	r = gw_cold_new(a, &o, &a->cold, err, errlen);
	if (r)
		return r;
	r = gw_store_open(&a->store, &o, err, errlen);
	if (r)
		return r;
	r = gw_cold_start(a->cold, a->store, err, errlen);
	if (r)
		return r;
	if (a->cold)
		gw_info("archive: closed days go to %s (kept locally %gd, "
			"cache %llu MiB)",
			a->cfg.archive_url, a->cfg.archive_keep_local / 86400,
			a->cfg.archive_cache_size >> 20);
	gw_info("store: history in %s (raw %gh, 1m %gd, 1h %gd)", dir,
		a->cfg.retention_raw / 3600, a->cfg.retention_1m / 86400,
		a->cfg.retention_1h / 86400);
	return 0;
}

int gw_agent_main(int argc, char **argv)
{
	struct gw_agent a = { 0 };
	struct gw_http *http = NULL;
	struct gw_self *self = NULL;
	struct gw_alerting *alerts = NULL;
	struct stop_watch watch = { .started = false };
	struct gw_remote *remote = NULL;
	void *priv[NCOLLECTORS] = { 0 };
	char err[GW_CONFIG_ERR_MAX];
	sigset_t sigs;
	int r, lock_fd = -1, status = 1, stuck = 0, check = 0;

	gw_config_defaults(&a.cfg);
	r = gw_config_from_args(&a.cfg, argc, argv, err, sizeof(err));
	if (r == 1) {
		gw_config_usage(stdout);
		return 0;
	}
	if (r == 2) {
		gw_config_markdown(stdout);
		return 0;
	}
	if (r == 3) {
		check = 1;
		r = 0;
	}
	if (r) {
		fprintf(stderr, "gpuwatch agent: %s\n", err);
		return 2;
	}
	/* Rule files are checked like the config: a bad one is exit 2. */
	r = gw_alerting_new(&a.cfg, &alerts, err, sizeof(err));
	if (r) {
		fprintf(stderr, "gpuwatch agent: %s\n", err);
		return 2;
	}
	r = gw_remote_check(&a.cfg, err, sizeof(err));
	if (!r)
		r = gw_cold_check(&a.cfg, err, sizeof(err));
	if (!r && a.cfg.web_config_file[0]) {
		struct gw_webconfig *wc = NULL;
		char why[GW_CONFIG_ERR_MAX];

		r = gw_webconfig_load(a.cfg.web_config_file, &wc, why,
				      sizeof(why));
		if (r)
			snprintf(err, sizeof(err), "--web.config.file: %.480s",
				 why);
		gw_webconfig_free(wc);
	}
	if (r) {
		fprintf(stderr, "gpuwatch agent: %s\n", err);
		gw_alerting_free(alerts, gw_now_mono());
		return 2;
	}
	if (check) {
		printf("gpuwatch agent: the configuration is valid%s%s\n",
		       a.cfg.config_path[0] ? " in " : "", a.cfg.config_path);
		gw_alerting_free(alerts, gw_now_mono());
		return 0;
	}
	a.argc = argc;
	a.argv = argv;
	gw_log_set_level(a.cfg.log_level);
	/* Start-up is bounded by the configuration: none of its lines is
	 * rate-limited (one per GPU, per collector...). */
	gw_log_unlimited(1);
	a.start_time = gw_now_real();

	/* Signals are taken synchronously by this thread; all threads inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	lock_fd = lock_data_dir(a.cfg.data_dir);
	if (lock_fd < 0) {
		gw_alerting_free(alerts, gw_now_mono());
		return 1;
	}
	a.reg = gw_registry_new();
	a.workers = gw_worker_table_new();
	a.podres = gw_podres_new();
	a.kernels = gw_kernels_new(0);
	if (!a.reg || !a.workers || !a.podres || !a.kernels) {
		gw_err("out of memory");
		goto out;
	}
	if (new_attrib(&a.cfg, &a.attrib)) {
		gw_err("out of memory");
		goto out;
	}
	self = gw_self_new(&a);
	if (!self) {
		gw_err("out of memory");
		goto out;
	}
	/* Profiles first: the cold tier (in open_store) archives them too. */
	if (a.cfg.store && strcmp(a.cfg.profile, "off") != 0 &&
	    open_profiles(&a, err, sizeof(err))) {
		gw_err("%s", err);
		goto out;
	}
	if (a.cfg.store && open_store(&a, err, sizeof(err))) {
		gw_err("%s", err);
		goto out;
	}
	/* The remote_write queues read the store from their watermarks. */
	if (gw_remote_start(&a, &remote, err, sizeof(err))) {
		gw_err("%s", err);
		goto out;
	}
	/* Bind first: a port below 1024 needs a capability. */
	http = gw_http_bind(a.cfg.listen, a.reg, err, sizeof(err));
	if (!http) {
		gw_err("%s", err);
		goto out;
	}
	{
		struct gw_api_opts ao = {
			.max_samples = a.cfg.query_max_samples,
			.timeout = a.cfg.query_timeout,
			.max_concurrency = a.cfg.query_max_concurrency,
			.alerts = gw_alerting_alerts(alerts),
			.profiles = a.profiles,
			.profile_off = strcmp(a.cfg.profile, "off") == 0,
		};
		struct gw_http_limits hl = {
			.max_connections = a.cfg.http_max_connections,
			.max_per_client = a.cfg.http_max_connections_per_client,
			.reserved = a.cfg.http_reserved_connections,
			.header_timeout = a.cfg.http_header_timeout,
			.body_timeout = a.cfg.http_body_timeout,
		};

		gw_remote_api(remote, &ao);
		if (web_setup(&a.cfg, http, err, sizeof(err))) {
			gw_err("%s", err);
			goto out;
		}

		gw_http_set_queryable(
			http, a.store ? gw_store_queryable(a.store) : NULL,
			&ao);
		gw_http_set_limits(http, &hl);
	}
	/*
	 * Collectors next: their threads keep this thread's capabilities
	 * (eBPF needs CAP_BPF and CAP_PERFMON).  Then this thread drops all
	 * of them, so the HTTP server's thread starts with none.
	 */
	collect_opts(&a.cfg, &a.copts, a.cuda_lib_globs, a.profile_match);
	a.env = (struct gw_collect_env){
		.reg = a.reg,
		.attrib = a.attrib,
		.fast_ms = &a.fast_ms,
		.detail_ms = &a.detail_ms,
		.o = &a.copts,
		.workers = a.workers,
		.podres = a.podres,
		.profiles = a.profiles,
		.kernels = a.kernels,
		.statsd_port = &a.statsd_port,
	};
	for (size_t i = 0; i < NCOLLECTORS; i++) {
		r = collectors[i]->start(&a.env, &priv[i]);
		if (r) {
			gw_warn("collector %s did not start: %s",
				collectors[i]->name, strerror(-r));
			priv[i] = NULL;
		}
	}
	r = gw_alerting_start(alerts, &a);
	if (r)
		gw_warn("alert rules are not evaluated: %s", strerror(-r));
	if (gw_caps_any()) {
		r = gw_caps_drop_thread();
		if (r)
			gw_warn("cannot drop capabilities before serving HTTP: "
				"%s",
				strerror(-r));
		else
			gw_dbg("capabilities dropped for the HTTP side");
	}
	if (gw_http_start(http, err, sizeof(err))) {
		gw_err("%s", err);
		goto out;
	}
	gw_info("gpuwatch %s listening on %s (metrics at %s/metrics)",
		GW_VERSION, gw_http_url(http), gw_http_url(http));
	gw_log_unlimited(0);
	gw_self_tick(self, http);

	for (;;) {
		struct timespec ts;
		double wait = (double)atomic_load(&a.fast_ms) / 1000.0;
		siginfo_t si;
		int sig;

		ts.tv_sec = (time_t)wait;
		ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
		sig = sigtimedwait(&sigs, &si, &ts);
		if (sig == SIGTERM || sig == SIGINT) {
			gw_info("received %s, stopping",
				sig == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		}
		if (sig == SIGHUP) {
			/* One line per changed setting: an operator's act. */
			gw_log_unlimited(1);
			reload(&a, self, priv, alerts);
			web_reload(&a.cfg, http);
			gw_log_unlimited(0);
			continue;
		}
		gw_self_tick(self, http);
		gw_log_flush(0);
	}
	status = 0;
out : {
	double deadline = gw_now_mono() + STOP_GRACE;

	stop_watch_start(&watch);
	/* Each phase's time is logged (debug), none of it suppressed. */
	gw_log_unlimited(1);
	/* The collectors wind down (their last reads and flushes) while the
	 * queries are cancelled: none of them reads what the server does. */
	for (size_t i = 0; i < NCOLLECTORS; i++)
		if (priv[i] && collectors[i]->request_stop)
			collectors[i]->request_stop(priv[i]);
	stop_phase(&watch, "closing the HTTP server and its queries");
	/* Cancels the queries in flight (the store checks between batches
	 * and inside its loops, the evaluator between steps). */
	gw_http_close(http);
	/* No new slices: what is being sent may still be acknowledged. */
	gw_remote_request_stop(remote);
	stop_phase(&watch, "stopping the rule evaluator");
	/* Before the store closes: the evaluator reads it.  Queued
		 * alerts get at most a second, the collectors the rest. */
	gw_alerting_free(alerts, gw_now_mono() + 1.0);
	alerts = NULL;
	/* Every thread is joined before anything is freed: the store's
		 * last pass reads what the other collectors published, whose
		 * families (StatsD's) they own. */
	for (size_t i = 0; i < NCOLLECTORS; i++) {
		if (!priv[i])
			continue;
		stop_phase(&watch, collectors[i]->name);
		if (collectors[i]->stop(priv[i], deadline)) {
			gw_warn("collector %s did not stop within %.0f s (a "
				"thread stuck in a driver call, or a machine "
				"short of CPU); leaving it behind",
				collectors[i]->name, STOP_GRACE);
			stuck = 1;
		}
	}
	for (size_t i = 0; i < NCOLLECTORS && !stuck; i++)
		if (priv[i])
			collectors[i]->free(priv[i]);
	/* Before the store closes: the queues read it. */
	stop_phase(&watch, "stopping remote_write");
	gw_remote_free(remote, deadline);
	remote = NULL;
}
	gw_log_unlimited(0);
	gw_log_flush(1);
	if (stuck) {
		/* A thread may still touch the registry: do not free it. */
		gw_info("stopped");
		fflush(NULL);
		_exit(status);
	}
	/* Before the store closes: the uploader reads it. */
	stop_phase(&watch, "stopping the archive uploader");
	gw_cold_free(a.cold, gw_now_mono() + 2.0);
	a.cold = NULL;
	stop_phase(&watch, "closing the store");
	gw_store_close(a.store);
	gw_profstore_close(a.profiles);
	stop_phase(&watch, NULL);
	stop_watch_end(&watch);
	gw_self_free(self);
	gw_attrib_cache_free(a.attrib);
	gw_podres_free(a.podres);
	gw_kernels_free(a.kernels);
	gw_registry_free(a.reg);
	gw_worker_table_free(a.workers);
	if (lock_fd >= 0)
		close(lock_fd);
	if (status == 0)
		gw_info("stopped");
	return status;
}
