/* SPDX-License-Identifier: MIT */
/*
 * The store end to end (bench/README.md, "store"): ingest of simulated GPU
 * telemetry and of a real DCGM trace through gw_store_append with the real
 * flushes, hourly cuts and day closes (a fake clock follows the data), bytes
 * per sample per tier on disk, and query latency through the PromQL engine
 * in-process: 24 h of 1 s data of one series, and a 1 h `sum by` over 1,000
 * series.
 *
 * usage: store [-h HOURS] [-g GPUS] [-j JITTER_MS] [-q RUNS] [-d DIR]
 *              [DCGM_CSV]
 * JITTER_MS (default 2): each sample's delay after its 1 s tick, 0..JITTER;
 * the agent's NVML collector publishes on an exact grid, its self
 * metrics within 1 ms of it.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/datasets.h"
#include "common/log.h"
#include "query/promql.h"
#include "store/store.h"

struct clock {
	int64_t now;
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
	fprintf(stderr, "store bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

static struct gw_store *open_store(const char *dir, struct clock *c)
{
	struct gw_store_opts o;
	struct gw_store *s;
	char err[512] = "";
	int r;

	gw_store_opts_defaults(&o);
	o.dir = dir;
	o.now = fake_now;
	o.now_ctx = c;
	o.disk_budget = 0;
	/* keep everything: the bench measures bytes, not retention */
	for (int t = 0; t < GW_TIERS; t++)
		o.retention_ms[t] = 20 * 365 * 86400000LL;
	r = gw_store_open(&s, &o, err, sizeof(err));
	if (r) {
		fprintf(stderr, "store bench: %s\n", err);
		exit(1);
	}
	return s;
}

/* Appends a dataset in time order (all series share the time grid, give
 * or take jitter) with the agent's maintenance cadence. */
static uint64_t ingest(struct gw_store *s, struct clock *c,
		       const struct bench_dataset *ds, const char *prefix)
{
	size_t *at = calloc(ds->ns, sizeof(*at));
	char(*names)[96] = calloc(ds->ns, sizeof(*names));
	char(*labels)[64] = calloc(ds->ns, sizeof(*labels));
	uint64_t n = 0;
	int64_t next_maint = INT64_MIN;

	if (!at || !names || !labels)
		die("memory", -ENOMEM);
	/* What a collector has at hand: the name and label text. */
	for (size_t i = 0; i < ds->ns; i++) {
		snprintf(names[i], sizeof(names[i]), "%s%s", prefix,
			 ds->s[i].name);
		snprintf(labels[i], sizeof(labels[i]), "gpu=\"%u\"",
			 ds->s[i].gpu);
	}
	for (;;) {
		int64_t tmin = INT64_MAX;

		for (size_t i = 0; i < ds->ns; i++)
			if (at[i] < ds->s[i].n && ds->s[i].t[at[i]] < tmin)
				tmin = ds->s[i].t[at[i]];
		if (tmin == INT64_MAX)
			break;
		/* everything up to the end of this second */
		for (size_t i = 0; i < ds->ns; i++) {
			const struct bench_series *x = &ds->s[i];

			if (at[i] >= x->n || x->t[at[i]] >= tmin + 1000)
				continue;
			while (at[i] < x->n && x->t[at[i]] < tmin + 1000) {
				int r = gw_store_append(s, names[i], labels[i],
							x->t[at[i]],
							x->v[at[i]]);

				if (r && r != -EDOM)
					die("append", r);
				n += r == 0;
				at[i]++;
			}
		}
		c->now = tmin + 1000;
		if (c->now >= next_maint) {
			int r = gw_store_maintain(s);

			if (r)
				die("maintain", r);
			next_maint = c->now + 1000;
		}
	}
	/* let the last hour and day close */
	c->now += 2 * 86400000LL;
	if (gw_store_maintain(s))
		die("maintain", -EIO);
	free(at);
	free(names);
	free(labels);
	return n;
}

static uint64_t dir_bytes(const char *dir, const char *sub)
{
	char cmd[512], line[64];
	uint64_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "du -sb --apparent-size '%s/%s' 2>/dev/null",
		 dir, sub);
	p = popen(cmd, "r");
	if (p && fgets(line, sizeof(line), p))
		n = strtoull(line, NULL, 10);
	if (p)
		pclose(p);
	return n;
}

static void report_bytes(const char *dir, uint64_t samples, double hours,
			 size_t nseries)
{
	uint64_t raw = dir_bytes(dir, "raw"), m1 = dir_bytes(dir, "1m");
	uint64_t h1 = dir_bytes(dir, "1h"), all = dir_bytes(dir, "");
	uint64_t minutes = (uint64_t)(hours * 60) * nseries;
	uint64_t hrs = (uint64_t)ceil(hours) * nseries;

	printf("  %-34s %12llu bytes  %6.3f B/sample\n", "raw tier (all files)",
	       (unsigned long long)raw, (double)raw / (double)samples);
	printf("  %-34s %12llu bytes  %6.2f B/rollup (%.3f B per raw sample)\n",
	       "1-minute tier", (unsigned long long)m1,
	       minutes ? (double)m1 / (double)minutes : 0,
	       (double)m1 / (double)samples);
	printf("  %-34s %12llu bytes  %6.2f B/rollup\n", "1-hour tier",
	       (unsigned long long)h1, hrs ? (double)h1 / (double)hrs : 0);
	printf("  %-34s %12llu bytes  %6.3f B/sample (everything in the "
	       "directory)\n",
	       "all store files", (unsigned long long)all,
	       (double)all / (double)samples);
	printf("  %-34s %12llu bytes  16.000 B/sample\n",
	       "for scale: raw "
	       "int64+double",
	       (unsigned long long)samples * 16);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Runs one query RUNS times; prints median and worst wall time. */
static void time_query(const struct gw_queryable *q, const char *what,
		       const char *query, int64_t start, int64_t end,
		       int64_t step, int runs)
{
	struct gw_promql_error perr;
	struct gw_promql_opts o = { .lookback_ms = 300000 };
	struct gw_pq_node *e;
	double *ms = calloc((size_t)runs, sizeof(*ms));
	uint64_t samples = 0;
	size_t points = 0;
	enum gw_tier tier = GW_TIER_RAW;

	if (!ms || gw_promql_parse(query, &e, &perr)) {
		fprintf(stderr, "store bench: %s: %s\n", query, perr.msg);
		exit(1);
	}
	for (int i = 0; i < runs; i++) {
		struct gw_qresult res;
		double t0 = mono_s();
		int r = step ? gw_promql_eval_range(e, q, start, end, step, &o,
						    &res)
			     : gw_promql_eval_instant(e, q, end, &o, &res);

		ms[i] = (mono_s() - t0) * 1000;
		if (r) {
			fprintf(stderr, "store bench: %s: %s\n", query,
				res.errmsg);
			exit(1);
		}
		samples = res.samples;
		tier = res.tier;
		points = 0;
		for (size_t k = 0; k < res.nseries; k++)
			points += res.series[k].n;
		gw_qresult_release(&res);
	}
	qsort(ms, (size_t)runs, sizeof(*ms), cmp_double);
	printf("  %-44s %8.2f ms median  %8.2f ms max  (%s tier, %llu "
	       "samples read, %zu points out)\n",
	       what, ms[runs / 2], ms[runs - 1],
	       tier == GW_TIER_RAW  ? "raw"
	       : tier == GW_TIER_1M ? "1m"
				    : "1h",
	       (unsigned long long)samples, points);
	printf("      %s\n", query);
	gw_promql_free(e);
	free(ms);
}

/* 1,000 per-process series on 8 GPUs for one hour at 1 s. */
static uint64_t ingest_procs(struct gw_store *s, struct clock *c, int64_t t0)
{
	uint64_t n = 0;

	static char labels[1000][64];

	for (int p = 0; p < 1000; p++)
		snprintf(labels[p], sizeof(labels[p]), "gpu=\"%d\",pid=\"%d\"",
			 p % 8, 10000 + p);
	for (int64_t t = t0; t < t0 + 3600000; t += 1000) {
		for (int p = 0; p < 1000; p++) {
			double v =
				(double)((p * 7919 + t / 1000) % 97) * 1048576;

			if (gw_store_append(
				    s, "gpuwatch_bench_process_memory_bytes",
				    labels[p], t, v) == 0)
				n++;
		}
		c->now = t + 1000;
		if (t % 1000 == 0 && gw_store_maintain(s))
			die("maintain", -EIO);
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned hours = 24, gpus = 8, jitter = 2;
	int runs = 9, ch;
	char dir[256] = "";
	struct bench_dataset ds;
	struct clock c = { 0 };
	struct gw_store *s;
	double w0, c0, wall, cpu;
	uint64_t n;
	char sub[300];

	while ((ch = getopt(argc, argv, "h:g:j:q:d:")) != -1) {
		switch (ch) {
		case 'j':
			jitter = (unsigned)atoi(optarg);
			break;
		case 'h':
			hours = (unsigned)atoi(optarg);
			break;
		case 'g':
			gpus = (unsigned)atoi(optarg);
			break;
		case 'q':
			runs = atoi(optarg);
			break;
		case 'd':
			snprintf(dir, sizeof(dir), "%s", optarg);
			break;
		default:
			fprintf(stderr, "usage: store [-h HOURS] [-g GPUS] "
					"[-q RUNS] [-d DIR] [DCGM_CSV]\n");
			return 2;
		}
	}
	if (hours < 2 || gpus < 1 || runs < 1)
		return 2;
	if (!*dir) {
		snprintf(dir, sizeof(dir), "%s/gw-store-bench-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			die("mkdtemp", -errno);
	}
	gw_log_set_level(GW_LOG_WARN);

	printf("gpuwatch store benchmark (one thread; fake clock following "
	       "the data)\n\n");
	bench_load_sim(&ds, gpus, hours, jitter);
	printf("%s: %zu series\n", ds.name, ds.ns);
	snprintf(sub, sizeof(sub), "%s/sim", dir);
	c.now = ds.s[0].t[0];
	s = open_store(sub, &c);
	w0 = mono_s();
	c0 = cpu_s();
	n = ingest(s, &c, &ds, "gpuwatch_bench_");
	wall = mono_s() - w0;
	cpu = cpu_s() - c0;
	printf("  ingest end to end: %llu samples in %.2f s CPU (%.2f s wall): "
	       "%.2f M samples/s on one core\n    (append, 1-minute and "
	       "1-hour rollups with sketches, head log every 5 s,\n    hourly "
	       "cuts into SQLite, day close with compaction)\n",
	       (unsigned long long)n, cpu, wall, (double)n / cpu / 1e6);
	gw_store_close(s);
	report_bytes(sub, n, hours, ds.ns);

	/* Queries over what was just stored (reopened: all from disk). */
	s = open_store(sub, &c);
	{
		const struct gw_queryable *q = gw_store_queryable(s);
		int64_t end = ds.s[0].t[ds.s[0].n - 1];
		char query[256];

		printf("\nquery latency, in-process (PromQL parse + select + "
		       "evaluate), %d runs each:\n",
		       runs);
		snprintf(query, sizeof(query),
			 "gpuwatch_bench_temp_c{gpu=\"0\"}[24h]");
		time_query(q, "24 h of 1 s data, one series (raw matrix)",
			   query, 0, end, 0, runs);
		snprintf(
			query, sizeof(query),
			"max_over_time(gpuwatch_bench_temp_c{gpu=\"0\"}[24h])");
		time_query(q, "max_over_time over 24 h, one series", query, 0,
			   end, 0, runs);
		snprintf(query, sizeof(query),
			 "quantile_over_time(0.99, "
			 "gpuwatch_bench_power_w{gpu=\"0\"}[1h])");
		time_query(q, "p99 per hour over 24 h (range, step 1h)", query,
			   end - 86400000LL + 3600000, end, 3600000, runs);
		snprintf(
			query, sizeof(query),
			"avg_over_time(gpuwatch_bench_power_w{gpu=\"0\"}[1m])");
		time_query(q, "24 h at step 1m, one series", query,
			   end - 86400000LL, end, 60000, runs);
		gw_store_close(s);
	}

	/* 1,000 series for an hour, then `sum by` over them. */
	snprintf(sub, sizeof(sub), "%s/procs", dir);
	c.now = ds.s[0].t[0];
	s = open_store(sub, &c);
	w0 = mono_s();
	c0 = cpu_s();
	n = ingest_procs(s, &c, c.now);
	cpu = cpu_s() - c0;
	printf("\n1,000 process series x 1 h at 1 s: %llu samples, ingest "
	       "%.2f M samples/s on one core\n",
	       (unsigned long long)n, (double)n / cpu / 1e6);
	{
		const struct gw_queryable *q = gw_store_queryable(s);
		int64_t end = c.now - 1000;

		time_query(q, "1 h sum by (gpu) over 1,000 series, step 15s",
			   "sum by (gpu) (gpuwatch_bench_process_memory_bytes)",
			   end - 3600000, end, 15000, runs);
		time_query(q, "1 h sum by (gpu) (rate[1m]), step 15s",
			   "sum by (gpu) "
			   "(rate(gpuwatch_bench_process_memory_bytes[1m]))",
			   end - 3600000, end, 15000, runs);
	}
	gw_store_close(s);
	bench_dataset_free(&ds);

	if (optind < argc) {
		bench_load_dcgm(&ds, argv[optind]);
		printf("\n%s: %zu series\n", ds.name, ds.ns);
		snprintf(sub, sizeof(sub), "%s/dcgm", dir);
		c.now = INT64_MAX;
		for (size_t i = 0; i < ds.ns; i++)
			if (ds.s[i].n && ds.s[i].t[0] < c.now)
				c.now = ds.s[i].t[0];
		s = open_store(sub, &c);
		c0 = cpu_s();
		n = ingest(s, &c, &ds, "DCGM_FI_DEV_");
		cpu = cpu_s() - c0;
		printf("  ingest: %llu samples, %.2f M samples/s on one core\n",
		       (unsigned long long)n, (double)n / cpu / 1e6);
		gw_store_close(s);
		{
			int64_t first = INT64_MAX, last = INT64_MIN;

			for (size_t i = 0; i < ds.ns; i++) {
				if (!ds.s[i].n)
					continue;
				if (ds.s[i].t[0] < first)
					first = ds.s[i].t[0];
				if (ds.s[i].t[ds.s[i].n - 1] > last)
					last = ds.s[i].t[ds.s[i].n - 1];
			}
			report_bytes(sub, n, (double)(last - first) / 3600000.0,
				     ds.ns);
		}
		bench_dataset_free(&ds);
	}
	printf("\nstore files left in %s\n", dir);
	return 0;
}
