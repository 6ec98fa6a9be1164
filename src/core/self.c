/* SPDX-License-Identifier: MIT */
#include "self.h"

#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
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
#include "pipeline/catalog.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

struct gw_self {
	struct gw_agent *a;
	struct gw_pace pace;
	int slot;
	struct gw_snap snap;
	double win_start_mono, win_start_cpu, last_ratio;
	double last_trim;
	long page_size;
};

/*
 * Freed memory goes back to the system.  A range query's samples are
 * allocated in the arena of the HTTP thread that ran it and freed when it
 * answers; glibc kept such memory, so a few heavy queries left the agent's
 * resident memory at 450 MiB of which 310 MiB was free (bench/soak.sh).
 * Blocks of 256 KiB and more are mapped on their own and unmapped when
 * freed (a fixed threshold: glibc's default one rises after the first
 * large free, and then query arrays came from the arenas again), and the
 * arenas are trimmed once a minute (milliseconds of work).
 */
static void keep_heap_small(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

static void give_back(struct gw_self *s, double now)
{
#ifdef __GLIBC__
	if (now - s->last_trim < 60)
		return;
	s->last_trim = now;
	malloc_trim(0);
#else
	(void)s;
	(void)now;
#endif
}

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
	atomic_store(&s->a->detail_ms, (uint64_t)(s->pace.detail * 1000 + 0.5));
}

struct gw_self *gw_self_new(struct gw_agent *a)
{
	struct gw_self *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->a = a;
	keep_heap_small();
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

		gw_snap_add(n, GW_FAM(AGENT_API_REQUESTS_TOTAL),
			    (double)hs->api_requests[i], NULL, "endpoint", ep,
			    NULL);
		gw_snap_add(n, GW_FAM(AGENT_API_ERRORS_TOTAL),
			    (double)hs->api_errors[i], NULL, "endpoint", ep,
			    NULL);
		gw_snap_add(n, GW_FAM(AGENT_API_QUERY_SECONDS_TOTAL),
			    hs->api_seconds_sum[i], NULL, "endpoint", ep, NULL);
	}
	gw_snap_add(n, GW_FAM(AGENT_API_REJECTED_TOTAL),
		    (double)hs->api_rejected, NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_API_QUERIES_IN_FLIGHT),
		    (double)hs->api_in_flight, NULL, NULL);
}

static void add_worker(void *ctx, const char *name, double cpu_s,
		       enum gw_worker_state st)
{
	(void)st;
	gw_snap_add(ctx, GW_FAM(AGENT_WORKER_CPU_SECONDS_TOTAL), cpu_s, NULL,
		    "worker", name, NULL);
}

void gw_self_tick(struct gw_self *s, struct gw_http *http)
{
	struct gw_registry_stats rs;
	struct gw_http_stats hs;
	double now = gw_now_mono(), cpu = cpu_seconds(), rss, hwm, threads;
	struct gw_snap *n = &s->snap;

	govern(s, now, cpu);
	give_back(s, now);
	read_status(s->page_size, &rss, &hwm, &threads);
	gw_registry_stats(s->a->reg, &rs);

	gw_snap_add(n, GW_FAM(AGENT_CPU_SECONDS_TOTAL), cpu, NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_CPU_RATIO), s->last_ratio, NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_CPU_BUDGET_RATIO), s->a->cfg.cpu_budget,
		    NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_RESIDENT_MEMORY_BYTES), rss, NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_RESIDENT_MEMORY_PEAK_BYTES), hwm, NULL,
		    NULL);
	gw_snap_add(n, GW_FAM(AGENT_THREADS), threads, NULL, NULL);
	if (s->a->workers)
		gw_worker_table_visit(s->a->workers, add_worker, n);
	gw_snap_add(n, GW_FAM(AGENT_SERIES), (double)rs.series, NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_DROPPED_SAMPLES_TOTAL), (double)rs.dropped,
		    NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_DUPLICATE_SERIES), (double)rs.duplicates,
		    NULL, NULL);
	gw_snap_add(n, GW_FAM(AGENT_INTERVAL_SECONDS), s->pace.fast, NULL,
		    "set", "fast", NULL);
	gw_snap_add(n, GW_FAM(AGENT_INTERVAL_SECONDS), s->pace.detail, NULL,
		    "set", "detail", NULL);
	gw_snap_add(n, GW_FAM(AGENT_CONFIGURED_INTERVAL_SECONDS),
		    s->pace.base_fast, NULL, "set", "fast", NULL);
	gw_snap_add(n, GW_FAM(AGENT_CONFIGURED_INTERVAL_SECONDS),
		    s->pace.base_detail, NULL, "set", "detail", NULL);
	if (http) {
		gw_http_stats(http, &hs);
		gw_snap_add(n, GW_FAM(AGENT_HTTP_REQUESTS_TOTAL),
			    (double)hs.requests, NULL, NULL);
		gw_snap_add(n, GW_FAM(AGENT_HTTP_ERRORS_TOTAL),
			    (double)hs.errors, NULL, NULL);
		gw_snap_add(n, GW_FAM(AGENT_SCRAPES_TOTAL), (double)hs.scrapes,
			    NULL, NULL);
		gw_snap_add(n, GW_FAM(AGENT_SCRAPE_DURATION_SECONDS_TOTAL),
			    hs.scrape_seconds_sum, NULL, NULL);
		gw_snap_add(n, GW_FAM(AGENT_LAST_SCRAPE_DURATION_SECONDS),
			    hs.last_scrape_seconds, NULL, NULL);
		gw_snap_add(n, GW_FAM(AGENT_LAST_SCRAPE_BYTES),
			    (double)hs.last_scrape_bytes, NULL, NULL);
		add_api(n, &hs);
	}
	gw_snap_add(n, GW_FAM(AGENT_BUILD_INFO), 1, NULL, "version", GW_VERSION,
		    NULL);
	gw_snap_add(n, GW_FAM(AGENT_START_TIME_SECONDS), s->a->start_time, NULL,
		    NULL);
	gw_registry_publish(s->a->reg, s->slot, n);
}
