/* SPDX-License-Identifier: MIT */
#include "self.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/procstat.h"
#include "common/worker.h"
#include "core/pace.h"
#include "http/server.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

static const struct gw_family
	f_cpu = { "gpuwatch_agent_cpu_seconds_total",
		  "CPU time used by the agent (user + system).", GW_COUNTER },
	f_cpu_ratio = { "gpuwatch_agent_cpu_ratio",
			"Share of one core the agent used over the last governor window.",
			GW_GAUGE },
	f_budget = { "gpuwatch_agent_cpu_budget_ratio",
		     "Share of one core the agent may use (--cpu-budget).",
		     GW_GAUGE },
	f_rss = { "gpuwatch_agent_resident_memory_bytes",
		  "Resident memory of the agent.", GW_GAUGE },
	f_rss_peak = { "gpuwatch_agent_resident_memory_peak_bytes",
		       "Peak resident memory of the agent.", GW_GAUGE },
	f_threads = { "gpuwatch_agent_threads", "Threads of the agent.",
		      GW_GAUGE },
	f_worker_cpu = { "gpuwatch_agent_worker_cpu_seconds_total",
			 "CPU time used by each of the agent's worker threads "
			 "(user + system), by thread name; a thread that ended "
			 "keeps its last value.",
			 GW_COUNTER },
	f_series = { "gpuwatch_agent_series",
		     "Series currently exposed on /metrics.", GW_GAUGE },
	f_dropped = { "gpuwatch_agent_dropped_samples_total",
		      "Samples dropped because a bound was reached.",
		      GW_COUNTER },
	f_duplicates = { "gpuwatch_agent_duplicate_series",
			 "Identical series published twice, shown once (last scrape).",
			 GW_GAUGE },
	f_interval = { "gpuwatch_agent_interval_seconds",
		       "Collection interval in use, after the CPU governor.",
		       GW_GAUGE },
	f_interval_cfg = { "gpuwatch_agent_configured_interval_seconds",
			   "Collection interval as configured.", GW_GAUGE },
	f_requests = { "gpuwatch_agent_http_requests_total",
		       "HTTP requests answered.", GW_COUNTER },
	f_http_errors = { "gpuwatch_agent_http_errors_total",
			  "HTTP requests answered with a 4xx or 5xx status.",
			  GW_COUNTER },
	f_scrapes = { "gpuwatch_agent_scrapes_total", "Scrapes of /metrics.",
		      GW_COUNTER },
	f_scrape_sum = { "gpuwatch_agent_scrape_duration_seconds_total",
			 "Time spent rendering /metrics.", GW_COUNTER },
	f_scrape_last = { "gpuwatch_agent_last_scrape_duration_seconds",
			  "Time the last /metrics render took.", GW_GAUGE },
	f_scrape_bytes = { "gpuwatch_agent_last_scrape_bytes",
			   "Size of the last /metrics answer.", GW_GAUGE },
	f_api_requests = { "gpuwatch_agent_api_requests_total",
			   "Prometheus API requests answered, by endpoint.",
			   GW_COUNTER },
	f_api_errors = { "gpuwatch_agent_api_errors_total",
			 "Prometheus API requests answered with a 4xx or 5xx "
			 "status, by endpoint.",
			 GW_COUNTER },
	f_api_seconds = { "gpuwatch_agent_api_query_seconds_total",
			  "Time from arrival to answer of Prometheus API "
			  "requests, queueing included, by endpoint.",
			  GW_COUNTER },
	f_api_rejected = { "gpuwatch_agent_api_rejected_total",
			   "Prometheus API requests refused with 503 because "
			   "the query queue was full.",
			   GW_COUNTER },
	f_api_in_flight = { "gpuwatch_agent_api_queries_in_flight",
			    "Prometheus API requests being evaluated by a "
			    "query worker now.",
			    GW_GAUGE },
	f_build = { "gpuwatch_agent_build_info",
		    "The agent's version; always 1.", GW_INFO },
	f_start = { "gpuwatch_agent_start_time_seconds",
		    "Unix time the agent started.", GW_GAUGE };

struct gw_self {
	struct gw_agent *a;
	struct gw_pace pace;
	int slot;
	struct gw_snap snap;
	double win_start_mono, win_start_cpu, last_ratio;
	long page_size;
};

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident memory and threads from /proc/self/stat, peak from getrusage(). */
static void read_status(long page_size, double *rss, double *hwm,
			double *threads)
{
	struct gw_procstat ps;
	struct rusage ru;

	*rss = *hwm = *threads = NAN;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		*hwm = (double)ru.ru_maxrss * 1024;
	if (gw_procstat_read("/proc/self/stat", &ps))
		return;
	*threads = (double)ps.threads;
	*rss = (double)ps.rss_pages * (double)page_size;
}

static void store_intervals(struct gw_self *s)
{
	atomic_store(&s->a->fast_ms, (uint64_t)(s->pace.fast * 1000 + 0.5));
	atomic_store(&s->a->detail_ms,
		     (uint64_t)(s->pace.detail * 1000 + 0.5));
}

struct gw_self *gw_self_new(struct gw_agent *a)
{
	struct gw_self *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->a = a;
	s->slot = gw_registry_slot(a->reg, "self");
	if (s->slot < 0) {
		free(s);
		return NULL;
	}
	gw_snap_init(&s->snap);
	gw_pace_init(&s->pace, a->cfg.interval, a->cfg.detail_interval);
	store_intervals(s);
	s->win_start_mono = gw_now_mono();
	s->win_start_cpu = cpu_seconds();
	s->last_ratio = NAN;
	s->page_size = sysconf(_SC_PAGESIZE);
	return s;
}

void gw_self_free(struct gw_self *s)
{
	if (!s)
		return;
	gw_snap_release(&s->snap);
	free(s);
}

void gw_self_reconfigure(struct gw_self *s)
{
	gw_pace_init(&s->pace, s->a->cfg.interval, s->a->cfg.detail_interval);
	store_intervals(s);
	s->win_start_mono = gw_now_mono();
	s->win_start_cpu = cpu_seconds();
}

static void govern(struct gw_self *s, double now, double cpu)
{
	double elapsed = now - s->win_start_mono, share;

	if (elapsed < gw_pace_window(&s->pace))
		return;
	share = (cpu - s->win_start_cpu) / elapsed;
	s->last_ratio = share;
	s->win_start_mono = now;
	s->win_start_cpu = cpu;
	if (gw_pace_update(&s->pace, share, s->a->cfg.cpu_budget)) {
		gw_info("cpu governor: agent used %.3f%% of a core (budget "
			"%.3f%%); intervals now fast %gs, detail %gs",
			share * 100, s->a->cfg.cpu_budget * 100, s->pace.fast,
			s->pace.detail);
		store_intervals(s);
	}
}

/* The Prometheus API's counters, one series per endpoint. */
static void add_api(struct gw_snap *n, const struct gw_http_stats *hs)
{
	for (size_t i = 0; i < GW_API_ENDPOINTS; i++) {
		const char *ep = gw_api_endpoint_name((enum gw_api_endpoint)i);

		gw_snap_add(n, &f_api_requests, (double)hs->api_requests[i],
			    NULL, "endpoint", ep, NULL);
		gw_snap_add(n, &f_api_errors, (double)hs->api_errors[i], NULL,
			    "endpoint", ep, NULL);
		gw_snap_add(n, &f_api_seconds, hs->api_seconds_sum[i], NULL,
			    "endpoint", ep, NULL);
	}
	gw_snap_add(n, &f_api_rejected, (double)hs->api_rejected, NULL, NULL);
	gw_snap_add(n, &f_api_in_flight, (double)hs->api_in_flight, NULL,
		    NULL);
}

static void add_worker(void *ctx, const char *name, double cpu_s,
		       enum gw_worker_state st)
{
	(void)st;
	gw_snap_add(ctx, &f_worker_cpu, cpu_s, NULL, "worker", name, NULL);
}

void gw_self_tick(struct gw_self *s, struct gw_http *http)
{
	struct gw_registry_stats rs;
	struct gw_http_stats hs;
	double now = gw_now_mono(), cpu = cpu_seconds(), rss, hwm, threads;
	struct gw_snap *n = &s->snap;

	govern(s, now, cpu);
	read_status(s->page_size, &rss, &hwm, &threads);
	gw_registry_stats(s->a->reg, &rs);

	gw_snap_add(n, &f_cpu, cpu, NULL, NULL);
	gw_snap_add(n, &f_cpu_ratio, s->last_ratio, NULL, NULL);
	gw_snap_add(n, &f_budget, s->a->cfg.cpu_budget, NULL, NULL);
	gw_snap_add(n, &f_rss, rss, NULL, NULL);
	gw_snap_add(n, &f_rss_peak, hwm, NULL, NULL);
	gw_snap_add(n, &f_threads, threads, NULL, NULL);
	if (s->a->workers)
		gw_worker_table_visit(s->a->workers, add_worker, n);
	gw_snap_add(n, &f_series, (double)rs.series, NULL, NULL);
	gw_snap_add(n, &f_dropped, (double)rs.dropped, NULL, NULL);
	gw_snap_add(n, &f_duplicates, (double)rs.duplicates, NULL, NULL);
	gw_snap_add(n, &f_interval, s->pace.fast, NULL, "set", "fast", NULL);
	gw_snap_add(n, &f_interval, s->pace.detail, NULL, "set", "detail",
		    NULL);
	gw_snap_add(n, &f_interval_cfg, s->pace.base_fast, NULL, "set", "fast",
		    NULL);
	gw_snap_add(n, &f_interval_cfg, s->pace.base_detail, NULL, "set",
		    "detail", NULL);
	if (http) {
		gw_http_stats(http, &hs);
		gw_snap_add(n, &f_requests, (double)hs.requests, NULL, NULL);
		gw_snap_add(n, &f_http_errors, (double)hs.errors, NULL, NULL);
		gw_snap_add(n, &f_scrapes, (double)hs.scrapes, NULL, NULL);
		gw_snap_add(n, &f_scrape_sum, hs.scrape_seconds_sum, NULL, NULL);
		gw_snap_add(n, &f_scrape_last, hs.last_scrape_seconds, NULL,
			    NULL);
		gw_snap_add(n, &f_scrape_bytes, (double)hs.last_scrape_bytes,
			    NULL, NULL);
		add_api(n, &hs);
	}
	gw_snap_add(n, &f_build, 1, NULL, "version", GW_VERSION, NULL);
	gw_snap_add(n, &f_start, s->a->start_time, NULL, NULL);
	gw_registry_publish(s->a->reg, s->slot, n);
}
