/* SPDX-License-Identifier: MIT */
#include "self.h"

#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdbool.h>
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
	/* The governor's window: process CPU (exported) and collection CPU
	 * (what the budget is compared with). */
	double win_start_mono, win_start_cpu, win_start_coll;
	double last_ratio, last_coll_ratio;
	double last_trim;
	double trim_cpu; /* this thread's CPU in malloc_trim(), not charged */
	long page_size;
};

/*
 * The threads whose work the collection intervals pace, by name prefix
 * (agent.c's table): stretching the intervals lowers their cost, so the
 * governor charges them and only them.  The HTTP server, the query
 * workers, the rule evaluator and the senders have their own bounds.
 */
static const char *const collection_threads[] = {
	"gw-nvml", "gw-ebpf", "gw-cupti", "gw-statsd", "gw-store",
};

static double clock_seconds(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
	return clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

static bool is_collection(const char *name)
{
	for (size_t i = 0;
	     i < sizeof(collection_threads) / sizeof(collection_threads[0]);
	     i++) {
		size_t n = strlen(collection_threads[i]);

		if (strncmp(name, collection_threads[i], n) == 0 &&
		    (name[n] == '\0' || name[n] == '-'))
			return true;
	}
	return false;
}

static void sum_collection(void *ctx, const char *name, double cpu_s,
			   enum gw_worker_state st)
{
	(void)st;
	if (is_collection(name))
		*(double *)ctx += cpu_s;
}

/*
 * CPU time charged to the collection budget: the collection workers' own
 * thread clocks, and the main thread's (this one: the self collector and
 * the governor).  A worker that ended keeps its last reading; one freed
 * (a collector stopped) leaves the sum, which the window clamps at 0.
 */
static double collection_cpu_seconds(struct gw_self *s)
{
	double sum = gw_thread_cpu() - s->trim_cpu;

	if (s->a->workers)
		gw_worker_table_visit(s->a->workers, sum_collection, &sum);
	return sum;
}

/*
 * Freed memory goes back to the system.  A range query's samples are
 * allocated in the arena of the HTTP thread that ran it and freed when it
 * answers; glibc kept such memory, so a few heavy queries left the agent's
 * resident memory at 450 MiB of which 310 MiB was free (bench/soak.sh).
 * Blocks of 256 KiB and more are mapped on their own and unmapped when
 * freed (a fixed threshold: glibc's default one rises after the first
 * large free, and then query arrays came from the arenas again), and the
 * arenas are trimmed once a minute (milliseconds of work).
 * That work is the queries', so it is not charged to collection.
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
	double t0;

	if (now - s->last_trim < 60)
		return;
	s->last_trim = now;
	t0 = gw_thread_cpu();
	malloc_trim(0);
	s->trim_cpu += gw_thread_cpu() - t0;
#else
	(void)s;
	(void)now;
#endif
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
	s->win_start_coll = collection_cpu_seconds(s);
	s->last_ratio = s->last_coll_ratio = NAN;
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
	s->win_start_coll = collection_cpu_seconds(s);
}

/*
 * Once per window: the collection threads' share of one core against
 * --cpu-budget.  The process's share is measured over the same window and
 * exported beside it (gpuwatch_agent_cpu_ratio), but scrapes, queries and
 * rules never stretch the intervals.
 */
static void govern(struct gw_self *s, double now, double cpu)
{
	double elapsed = now - s->win_start_mono, share, coll;

	if (elapsed < gw_pace_window(&s->pace))
		return;
	coll = collection_cpu_seconds(s);
	s->last_ratio = (cpu - s->win_start_cpu) / elapsed;
	share = fmax(0, coll - s->win_start_coll) / elapsed;
	s->last_coll_ratio = share;
	s->win_start_mono = now;
	s->win_start_cpu = cpu;
	s->win_start_coll = coll;
	if (gw_pace_update(&s->pace, share, s->a->cfg.cpu_budget)) {
		gw_info("cpu governor: collection used %.3f%% of a core "
			"(budget %.3f%%, the whole agent %.3f%%); intervals "
			"now fast %gs, detail %gs",
			share * 100, s->a->cfg.cpu_budget * 100,
			s->last_ratio * 100, s->pace.fast, s->pace.detail);
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

/* Connections open and refused, one series per reason. */
static void add_connections(struct gw_snap *n, const struct gw_http_stats *hs)
{
	gw_snap_add(n, GW_FAM(AGENT_HTTP_CONNECTIONS), (double)hs->connections,
		    NULL, NULL);
	for (size_t i = 0; i < GW_HTTP_REFUSALS; i++)
		gw_snap_add(n, GW_FAM(AGENT_HTTP_CONNECTIONS_REFUSED_TOTAL),
			    (double)hs->refused[i], NULL, "reason",
			    gw_http_refusal_name((enum gw_http_refusal)i),
			    NULL);
	for (size_t i = 0; i < GW_HTTP_AUTH_FAILURES; i++)
		gw_snap_add(
			n, GW_FAM(AGENT_HTTP_AUTH_FAILURES_TOTAL),
			(double)hs->auth_failed[i], NULL, "reason",
			gw_http_auth_failure_name((enum gw_http_auth_failure)i),
			NULL);
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
	gw_snap_add(n, GW_FAM(AGENT_COLLECTION_CPU_RATIO), s->last_coll_ratio,
		    NULL, NULL);
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
		    NULL, "reason", "snapshot_full", NULL);
	gw_snap_add(n, GW_FAM(AGENT_DROPPED_SAMPLES_TOTAL),
		    (double)rs.superseded, NULL, "reason", "superseded", NULL);
	gw_snap_add(n, GW_FAM(AGENT_DROPPED_SAMPLES_TOTAL), (double)rs.refused,
		    NULL, "reason", "store_refused", NULL);
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
		add_connections(n, &hs);
	}
	gw_snap_add(n, GW_FAM(AGENT_BUILD_INFO), 1, NULL, "version", GW_VERSION,
		    NULL);
	gw_snap_add(n, GW_FAM(AGENT_START_TIME_SECONDS), s->a->start_time, NULL,
		    NULL);
	gw_registry_publish(s->a->reg, s->slot, n);
}
