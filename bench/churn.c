/* SPDX-License-Identifier: MIT */
/*
 * The store under series churn (bench/README.md, "churn"): N series of
 * short-lived processes over one day, each process a pid with two series
 * (gw_proc_mem_bytes, gw_proc_cpu_seconds_total; labels pid, comm, gpu)
 * and ten samples at 30 s, the processes starting evenly over the day.
 * The same samples are written as Prometheus text with timestamps for
 * VictoriaMetrics' /api/v1/import/prometheus (bench/churn.sh loads them
 * there in the same run).
 *
 * Measures, for the store: ingest through gw_store_append with the
 * agent's maintenance cadence (a fake clock follows the data; the day is
 * closed at the end), as samples per CPU-second; then, reopened, the
 * in-process latency (median of RUNS) of a one-series lookup over the day
 * and of avg by (gpu) over every series, through the PromQL engine, with
 * the series in memory (as loaded at a restart) and again after the first
 * maintenance evicted them (read back from index.db).
 * Prints key=value lines for the script.
 *
 * usage: churn -n SERIES -t DAY_START_MS -d DIR [-o IMPORT_FILE] [-q RUNS]
 *              [-H HOURS] [-c] [-O]
 * -H: spread the processes over HOURS instead of 24 (the store still
 * closes the day); -O: leave the day open (its hours cut, not closed;
 * no queries);
 * -c: the agent's default caps (--store-max-series,
 * --store-max-label-values) instead of none: refused samples are counted
 * and reported instead of failing the run.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/log.h"
#include "query/promql.h"
#include "store/store.h"

#define DAY_MS	 86400000LL
#define STEP_MS	 30000LL
#define PER_PROC 10

struct clock {
	int64_t now;
};

struct sample {
	int64_t t;
	uint32_t series;
	uint32_t k; /* sample number within its series */
};

static const char *const comms[] = {
	"python", "torchrun", "nccl-tests", "bash",
	"triton", "vllm",     "jupyter",    "dcgmi"
};

static int64_t fake_now(void *ctx)
{
	return ((struct clock *)ctx)->now;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "churn bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

static bool default_caps;
static bool leave_open;

static struct gw_store *open_store(const char *dir, struct clock *c)
{
	struct gw_store_opts o;
	struct gw_store *s;
	char err[512] = "";

	gw_store_opts_defaults(&o);
	o.dir = dir;
	o.now = fake_now;
	o.now_ctx = c;
	/* no cap gets in the way of the measurement, unless asked */
	if (!default_caps) {
		o.max_series = 10000000;
		o.max_values = 10000000;
	}
	for (int t = 0; t < GW_TIERS; t++)
		o.retention_ms[t] = 20 * 365 * DAY_MS;
	if (gw_store_open(&s, &o, err, sizeof(err))) {
		fprintf(stderr, "churn bench: %s\n", err);
		exit(1);
	}
	return s;
}

/* Series i: process i / 2; even: memory, odd: CPU counter. */
static const char *series_name(uint32_t i)
{
	return i % 2 ? "gw_proc_cpu_seconds_total" : "gw_proc_mem_bytes";
}

static void series_labels(uint32_t i, char *out, size_t len)
{
	uint32_t p = i / 2;

	snprintf(out, len, "pid=\"%u\",comm=\"%s\",gpu=\"%u\"", 100000 + p,
		 comms[p % 8], p % 8);
}

static double series_value(uint32_t i, uint32_t k)
{
	uint32_t p = i / 2;

	if (i % 2)
		return 0.25 * k * (1 + p % 4);
	return 1073741824.0 + (double)(p % 1000) * 1048576 + k * 4096.0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->series < y->series ? -1 : x->series > y->series;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median wall time of an instant query, in ms; prints key=value. */
static void time_query(const struct gw_queryable *q, const char *key,
		       const char *query, int64_t t, int runs)
{
	struct gw_promql_error perr;
	struct gw_promql_opts o = { .lookback_ms = 300000 };
	struct gw_pq_node *e;
	double ms[64];
	size_t nseries = 0;

	if (runs > 64)
		runs = 64;
	if (gw_promql_parse(query, &e, &perr)) {
		fprintf(stderr, "churn bench: %s: %s\n", query, perr.msg);
		exit(1);
	}
	for (int i = 0; i < runs; i++) {
		struct gw_qresult res;
		double t0 = mono_s();

		if (gw_promql_eval_instant(e, q, t, &o, &res)) {
			fprintf(stderr, "churn bench: %s: %s\n", query,
				res.errmsg);
			exit(1);
		}
		ms[i] = (mono_s() - t0) * 1000;
		nseries = res.nseries;
		gw_qresult_release(&res);
	}
	qsort(ms, (size_t)runs, sizeof(*ms), cmp_double);
	printf("%s_ms=%.3f\n%s_series=%zu\n", key, ms[runs / 2], key, nseries);
	gw_promql_free(e);
}

int main(int argc, char **argv)
{
	uint32_t nser = 10000;
	int64_t t0 = 0;
	const char *dir = NULL, *import = NULL;
	int runs = 9, opt;
	int64_t span = DAY_MS;
	uint64_t refused = 0;
	struct sample *v;
	size_t nsamples, k = 0;
	struct clock c;
	struct gw_store *s;
	int64_t next_maint = INT64_MIN;
	double cpu0, cpu1;
	struct rusage ru;
	char labels[96], query[256];
	char(*plabels)[64];
	FILE *imp = NULL;

	while ((opt = getopt(argc, argv, "n:t:d:o:q:H:cO")) != -1) {
		switch (opt) {
		case 'H':
			span = strtoll(optarg, NULL, 10) * 3600000LL;
			break;
		case 'c':
			default_caps = true;
			break;
		case 'O':
			leave_open = true;
			break;
		case 'n':
			nser = (uint32_t)strtoul(optarg, NULL, 10) & ~1u;
			break;
		case 't':
			t0 = strtoll(optarg, NULL, 10);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'o':
			import = optarg;
			break;
		case 'q':
			runs = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: churn -n SERIES -t DAY_START_MS "
				"-d DIR [-o IMPORT_FILE] [-q RUNS]\n");
			return 2;
		}
	}
	if (!dir || nser < 2 || !t0 || runs < 1 || span < 3600000LL ||
	    span > DAY_MS) {
		fprintf(stderr, "churn bench: -n, -t and -d are needed\n");
		return 2;
	}
	gw_log_set_level(GW_LOG_WARN);
	nsamples = (size_t)nser * PER_PROC;
	v = calloc(nsamples, sizeof(*v));
	if (!v)
		die("memory", -ENOMEM);
	for (uint32_t i = 0; i < nser; i++) {
		uint32_t p = i / 2, np = nser / 2;
		/* starts spread over the day, the last process ending in it;
		 * 0..2 ms of jitter as a scraper has */
		int64_t start =
			t0 + (int64_t)p * (span - PER_PROC * STEP_MS) / np;

		for (uint32_t j = 0; j < PER_PROC; j++)
			v[k++] = (struct sample){
				start + j * STEP_MS + (p * 7 + j) % 3, i, j
			};
	}
	qsort(v, nsamples, sizeof(*v), cmp_sample);
	if (import) {
		imp = fopen(import, "w");
		if (!imp)
			die(import, -errno);
		for (size_t i = 0; i < nsamples; i++) {
			series_labels(v[i].series, labels, sizeof(labels));
			fprintf(imp, "%s{%s} %.17g %lld\n",
				series_name(v[i].series), labels,
				series_value(v[i].series, v[i].k),
				(long long)v[i].t);
		}
		if (fclose(imp) != 0)
			die(import, -errno);
	}

	/* The label texts, as a scraper has them, made before the clock
	 * starts (VictoriaMetrics is timed on a file already written). */
	plabels = malloc((size_t)(nser / 2) * sizeof(*plabels));
	if (!plabels)
		die("memory", -ENOMEM);
	for (uint32_t p = 0; p < nser / 2; p++)
		series_labels(2 * p, plabels[p], sizeof(plabels[p]));
	c.now = t0;
	s = open_store(dir, &c);
	cpu0 = cpu_s();
	for (size_t i = 0; i < nsamples; i++) {
		int r;

		c.now = v[i].t + 1;
		if (c.now >= next_maint) {
			/* the agent's store thread: every second */
			r = gw_store_maintain(s);
			if (r)
				die("maintain", r);
			next_maint = c.now + 1000;
		}
		r = gw_store_append(s, series_name(v[i].series),
				    plabels[v[i].series / 2], v[i].t,
				    series_value(v[i].series, v[i].k));
		if (default_caps && (r == -ENOSPC || r == -E2BIG))
			refused++;
		else if (r)
			die("append", r);
	}
	/* the day ends: its last hour is cut and its partitions closed
	 * (-O: the clock stops in its last hour, the day's hours cut but
	 * not closed, as a running agent's disk has them) */
	c.now = leave_open ? t0 + DAY_MS - 1 : t0 + DAY_MS + 3600000 + 11000;
	if (gw_store_maintain(s))
		die("maintain", -EIO);
	getrusage(RUSAGE_SELF, &ru);
	gw_store_close(s);
	cpu1 = cpu_s();
	printf("series=%u\nsamples=%zu\ningest_cpu_s=%.3f\n"
	       "ingest_samples_per_s=%.0f\nmax_rss_kb=%ld\n"
	       "refused_by_caps=%llu\n",
	       nser, nsamples, cpu1 - cpu0, (double)nsamples / (cpu1 - cpu0),
	       ru.ru_maxrss, (unsigned long long)refused);
	fflush(stdout);
	if (leave_open) {
		/* No queries: a reopened store's maintenance would close it. */
		free(v);
		free(plabels);
		return 0;
	}

	s = open_store(dir, &c);
	/* a process from the middle of the day */
	snprintf(query, sizeof(query),
		 "max_over_time(gw_proc_mem_bytes{pid=\"%u\"}[1d])",
		 100000 + nser / 4);
	time_query(gw_store_queryable(s), "lookup", query, t0 + DAY_MS, runs);
	time_query(gw_store_queryable(s), "avg_by_gpu",
		   "avg by (gpu) (avg_over_time(gw_proc_mem_bytes[1d]))",
		   t0 + DAY_MS, runs);
	/* The agent's first maintenance after a restart evicts the series
	 * no sample brought back: the same queries then read their keys
	 * from index.db. */
	c.now += 61000;
	if (gw_store_maintain(s))
		die("maintain", -EIO);
	{
		struct gw_store_stats st;

		gw_store_stats(s, &st);
		printf("evicted_series=%llu\n",
		       (unsigned long long)st.series_evicted);
	}
	time_query(gw_store_queryable(s), "lookup_evicted", query, t0 + DAY_MS,
		   runs);
	time_query(gw_store_queryable(s), "avg_by_gpu_evicted",
		   "avg by (gpu) (avg_over_time(gw_proc_mem_bytes[1d]))",
		   t0 + DAY_MS, runs);
	gw_store_close(s);
	free(v);
	free(plabels);
	return 0;
}
