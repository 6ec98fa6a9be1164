// SPDX-License-Identifier: MIT
/*
 * test_anomaly.c - the per-series baselines of the ingest path, on a fake
 * clock (timestamps are the caller's): which samples are judged, what a
 * constant, a spike and a step score, the learning period, the series cap
 * and eviction.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/anomaly.h"

#define T0   1800000000000ll /* ms */
#define STEP 1000	     /* ms between samples */
#define TEMP "gpuwatch_gpu_temperature_celsius"

static struct gw_anomaly *make(uint32_t max_series, uint32_t evict_s)
{
	struct gw_anomaly_opts o;
	struct gw_anomaly *a = NULL;

	gw_anomaly_opts_default(&o);
	if (max_series)
		o.max_series = max_series;
	if (evict_s)
		o.evict_s = evict_s;
	assert_int_equal(gw_anomaly_new(&a, &o), 0);
	assert_non_null(a);
	return a;
}

static double gauge(struct gw_anomaly *a, const char *labels, int64_t i,
		    double v)
{
	return gw_anomaly_feed(a, TEMP, labels, GW_GAUGE, GW_SAMPLE_PLAIN,
			       T0 + i * STEP, v);
}

/* Deterministic noise in [-1, 1]. */
static double noise(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (double)(*s >> 11) / (double)(1ull << 52) - 1.0;
}

static struct gw_anomaly_stats stats(const struct gw_anomaly *a)
{
	struct gw_anomaly_stats st;

	gw_anomaly_stats(a, &st);
	return st;
}

static void learning_then_constant_never_anomalous(void **state)
{
	struct gw_anomaly *a = make(0, 0);
	int64_t learning = 0, judged = 0;

	(void)state;
	for (int64_t i = 0; i < 5000; i++) {
		double s = gauge(a, "gpu=\"0\"", i, 61.0);

		if (isnan(s)) {
			/* Learning comes first and only first. */
			assert_int_equal(judged, 0);
			learning++;
			continue;
		}
		judged++;
		assert_true(s >= 0.0 && s < 0.01);
	}
	/* The default warm-up: nothing is judged for 64 samples. */
	assert_true(learning >= 63 && learning <= 64);
	assert_int_equal(stats(a).scores, (uint64_t)judged);
	assert_int_equal(stats(a).series, 1);
	gw_anomaly_free(a);
}

static void spike_scores_near_one_at_its_timestamp(void **state)
{
	struct gw_anomaly *a = make(0, 0);
	uint64_t rng = 88172645463325252ull;
	double before = NAN, spike, after;
	int64_t i;

	(void)state;
	for (i = 0; i < 600; i++)
		before = gauge(a, "gpu=\"0\"", i, 70.0 + noise(&rng));
	assert_false(isnan(before));
	assert_true(before < 0.5);
	spike = gauge(a, "gpu=\"0\"", i++, 90.0);
	assert_true(spike > 0.99);
	/* The spike did not move the baseline: the noise is soon normal. */
	for (int k = 0; k < 10; k++)
		after = gauge(a, "gpu=\"0\"", i++, 70.0 + noise(&rng));
	assert_true(after < 0.5);
	gw_anomaly_free(a);
}

static void step_is_not_anomalous_forever(void **state)
{
	struct gw_anomaly *a = make(0, 0);
	uint64_t rng = 2463534242ull;
	double s = NAN;
	int64_t i = 0;
	int high = 0;

	(void)state;
	for (; i < 600; i++)
		(void)gauge(a, "", i, 300.0 + 5 * noise(&rng));
	for (int k = 0; k < 400; k++, i++) {
		s = gauge(a, "", i, 650.0 + 5 * noise(&rng));
		if (k == 0)
			assert_true(s > 0.99);
		if (s >= 0.5)
			high++;
	}
	/* The default reset after 8 surprising samples, plus a few for
	 * noise; then the new level is normal. */
	assert_true(high >= 1 && high <= 16);
	assert_true(s < 0.5);
	gw_anomaly_free(a);
}

static void series_are_told_apart_by_labels(void **state)
{
	struct gw_anomaly *a = make(0, 0);
	double s0 = NAN, s1 = NAN;
	int64_t i;

	(void)state;
	for (i = 0; i < 200; i++) {
		(void)gauge(a, "gpu=\"0\"", i, 40.0);
		(void)gauge(a, "gpu=\"1\"", i, 40.0);
	}
	s0 = gauge(a, "gpu=\"0\"", i, 40.0);
	s1 = gauge(a, "gpu=\"1\"", i, 55.0);
	assert_true(s0 < 0.01);
	assert_true(s1 > 0.99);
	assert_int_equal(stats(a).series, 2);
	gw_anomaly_free(a);
}

/* Feeds name (type, kind) long past any warm-up; true if ever judged. */
static bool judged(struct gw_anomaly *a, const char *name,
		   enum gw_metric_type type, enum gw_sample_kind kind,
		   const char *labels)
{
	bool any = false;

	for (int64_t i = 0; i < 200; i++)
		any |= !isnan(gw_anomaly_feed(a, name, labels, type, kind,
					      T0 + i * STEP, (double)(i % 3)));
	return any;
}

static void only_gauges_and_quantiles_are_judged(void **state)
{
	struct gw_anomaly *a = make(0, 0);

	(void)state;
	assert_false(judged(a, "gpuwatch_gpu_xid_errors_total", GW_COUNTER,
			    GW_SAMPLE_PLAIN, "gpu=\"0\""));
	assert_false(judged(a, "gpuwatch_gpu_info", GW_INFO, GW_SAMPLE_PLAIN,
			    "gpu=\"0\""));
	assert_false(judged(a, "x_seconds_bucket", GW_HISTOGRAM,
			    GW_SAMPLE_BUCKET, "le=\"0.1\""));
	assert_false(
		judged(a, "x_seconds_sum", GW_HISTOGRAM, GW_SAMPLE_SUM, ""));
	assert_false(judged(a, "x_seconds_count", GW_HISTOGRAM, GW_SAMPLE_COUNT,
			    ""));
	assert_false(judged(a, "train_step_seconds_sum", GW_SUMMARY,
			    GW_SAMPLE_SUM, ""));
	assert_false(judged(a, "train_step_seconds_count", GW_SUMMARY,
			    GW_SAMPLE_COUNT, ""));
	/* The agent's own families, alerts, scores and timestamps. */
	assert_false(judged(a, "gpuwatch_agent_cpu_ratio", GW_GAUGE,
			    GW_SAMPLE_PLAIN, ""));
	assert_false(judged(a, "gpuwatch_store_series", GW_GAUGE,
			    GW_SAMPLE_PLAIN, ""));
	assert_false(judged(a, "gpuwatch_statsd_series", GW_GAUGE,
			    GW_SAMPLE_PLAIN, ""));
	/* An alert firing opens no episode (and no alert) of its own. */
	assert_false(judged(a, "gpuwatch_alerts", GW_GAUGE, GW_SAMPLE_PLAIN,
			    "state=\"firing\""));
	assert_false(judged(a, "gpuwatch_anomaly_series", GW_GAUGE,
			    GW_SAMPLE_PLAIN, ""));
	assert_false(judged(a, "ALERTS", GW_GAUGE, GW_SAMPLE_PLAIN,
			    "alertname=\"X\""));
	assert_false(judged(a, "ALERTS_FOR_STATE", GW_GAUGE, GW_SAMPLE_PLAIN,
			    "alertname=\"X\""));
	assert_false(judged(a, TEMP GW_ANOMALY_SUFFIX, GW_GAUGE,
			    GW_SAMPLE_PLAIN, "gpu=\"0\""));
	assert_false(judged(a, "train_checkpoint_timestamp_seconds", GW_GAUGE,
			    GW_SAMPLE_PLAIN, ""));
	assert_int_equal(stats(a).series, 0);
	assert_int_equal(stats(a).scores, 0);

	assert_true(judged(a, TEMP, GW_GAUGE, GW_SAMPLE_PLAIN, "gpu=\"0\""));
	assert_true(judged(a, "train_step_seconds", GW_SUMMARY,
			   GW_SAMPLE_QUANTILE, "quantile=\"0.99\""));
	assert_true(judged(a, "gpuwatch_cuda_memory_used_bytes", GW_GAUGE,
			   GW_SAMPLE_PLAIN, "pid=\"1\""));
	assert_int_equal(stats(a).series, 3);
	gw_anomaly_free(a);
}

static void cap_refuses_and_counts_until_eviction(void **state)
{
	struct gw_anomaly *a = make(3, 60);
	char l[32];
	int64_t i;

	(void)state;
	for (i = 0; i < 100; i++) {
		for (int g = 0; g < 4; g++) {
			double s;

			snprintf(l, sizeof(l), "gpu=\"%d\"", g);
			s = gauge(a, l, i, 50.0);
			if (g == 3)
				assert_true(isnan(s));
		}
	}
	assert_int_equal(stats(a).series, 3);
	assert_int_equal(stats(a).refused_cap, 100);
	/* gpu 0-2 vanish; two minutes later gpu 3 gets a baseline. */
	i += 120;
	gw_anomaly_evict(a, T0 + i * STEP);
	assert_int_equal(stats(a).series, 0);
	assert_int_equal(stats(a).evicted, 3);
	for (int64_t k = 0; k < 100; k++)
		(void)gauge(a, "gpu=\"3\"", i + k, 50.0);
	assert_int_equal(stats(a).series, 1);
	assert_int_equal(stats(a).refused_cap, 100);
	assert_true(stats(a).scores > 0);
	gw_anomaly_free(a);
}

/* Many series, half of them stale: eviction drops exactly those and keeps
 * the others' learned state (they are judged at once, not re-learned). */
static void eviction_keeps_the_live_series(void **state)
{
	enum { N = 6000 };
	struct gw_anomaly *a = make(N, 60);
	char l[32];
	int64_t i;

	(void)state;
	for (i = 0; i < 70; i++) {
		for (int k = 0; k < N; k++) {
			snprintf(l, sizeof(l), "pid=\"%d\"", k);
			(void)gauge(a, l, i, 7.0);
		}
	}
	/* Only the even series go on. */
	for (; i < 140; i++) {
		for (int k = 0; k < N; k += 2) {
			snprintf(l, sizeof(l), "pid=\"%d\"", k);
			(void)gauge(a, l, i, 7.0);
		}
	}
	gw_anomaly_evict(a, T0 + i * STEP);
	assert_int_equal(stats(a).series, N / 2);
	assert_int_equal(stats(a).evicted, N / 2);
	for (int k = 0; k < N; k++) {
		double s;

		snprintf(l, sizeof(l), "pid=\"%d\"", k);
		s = gauge(a, l, i, 7.0);
		if (k % 2 == 0)
			assert_true(s < 0.01);
		else
			assert_true(isnan(s)); /* learning again */
	}
	/* A sweep again right away does nothing (and is cheap). */
	gw_anomaly_evict(a, T0 + i * STEP + 1);
	assert_int_equal(stats(a).series, N);
	gw_anomaly_free(a);
}

/* With the default seven days, a GPU's model outlives a silence of two
 * hours, and a process's (labelled with its pid) does not: an hour after
 * its last sample it is gone, its memory with it. */
static void process_models_end_an_hour_after_their_process(void **state)
{
	struct gw_anomaly *a = make(0, 0);
	int64_t i, quiet = 2 * 3600 * 1000 / STEP;

	(void)state;
	for (i = 0; i < 70; i++) {
		(void)gauge(a, "gpu=\"0\"", i, 7.0);
		(void)gauge(a, "gpu=\"0\",pid=\"42\"", i, 7.0);
		(void)gauge(a, "pid=\"43\"", i, 7.0);
	}
	assert_int_equal(stats(a).series, 3);
	gw_anomaly_evict(a, T0 + (i + quiet) * STEP);
	assert_int_equal(stats(a).series, 1);
	assert_int_equal(stats(a).evicted, 2);
	/* the GPU's model is the one kept: feeding it adds none */
	(void)gauge(a, "gpu=\"0\"", i + quiet, 7.0);
	assert_int_equal(stats(a).series, 1);
	(void)gauge(a, "pid=\"43\"", i + quiet, 7.0);
	assert_int_equal(stats(a).series, 2);
	gw_anomaly_free(a);
}

static void score_names_and_options(void **state)
{
	struct gw_anomaly_opts o;
	struct gw_anomaly *a = NULL;
	char buf[64], tiny[8];

	(void)state;
	assert_int_equal(gw_anomaly_score_name(TEMP, buf, sizeof(buf)), 0);
	assert_string_equal(buf, TEMP ":anomaly_score");
	assert_int_equal(gw_anomaly_score_name(TEMP, tiny, sizeof(tiny)),
			 -ENAMETOOLONG);

	gw_anomaly_opts_default(&o);
	o.max_series = 0;
	assert_int_equal(gw_anomaly_new(&a, &o), -EINVAL);
	assert_null(a);
	gw_anomaly_opts_default(&o);
	o.detect.threshold = 1;
	assert_int_equal(gw_anomaly_new(&a, &o), -EINVAL);
	gw_anomaly_opts_default(&o);
	o.detect.baseline.z_half = 0;
	assert_int_equal(gw_anomaly_new(&a, &o), -EINVAL);
	gw_anomaly_free(NULL);
}

/* One sample of temp{gpu=gpu} at step i, with its verdict. */
static double judge1(struct gw_anomaly *a, const char *gpu, int64_t i, double v,
		     struct gw_anomaly_verdict *vd)
{
	return gw_anomaly_judge(a, TEMP, gpu, GW_GAUGE, GW_SAMPLE_PLAIN,
				T0 + i * STEP, v, vd);
}

static void procs(struct gw_anomaly *a, const char *gpu, int64_t i, double n)
{
	gw_anomaly_workload(a, GW_ANOMALY_WORKLOAD_NAME, gpu, T0 + i * STEP, n);
}

static void workload_changes_explain_episodes_of_their_gpu(void **state)
{
	static const char *const gpu[] = { "gpu=\"0\"", "gpu=\"1\"" };
	struct gw_anomaly *a = make(0, 0);
	struct gw_anomaly_verdict vd[2];
	uint64_t rng = 88172645463325252ull;
	int64_t i;

	(void)state;
	/* Other names are not workload. */
	gw_anomaly_workload(a, TEMP, gpu[0], T0, 3);
	/* Idle at 70, busy at 90 for a while, idle again. */
	for (i = 0; i < 600; i++)
		for (int g = 0; g < 2; g++) {
			double v = i >= 100 && i < 300 ? 90 : 70;

			/* The first count is no change. */
			procs(a, gpu[g], i, 1);
			(void)judge1(a, gpu[g], i, v + noise(&rng), &vd[g]);
		}
	assert_int_equal(stats(a).workload_changes, 0);
	/* A job starts on GPU 0; 5 s later both GPUs step. */
	procs(a, gpu[0], i, 2);
	procs(a, gpu[1], i, 1);
	assert_int_equal(stats(a).workload_changes, 1);
	for (int64_t k = 1; k <= 5; k++)
		for (int g = 0; g < 2; g++)
			(void)judge1(a, gpu[g], i + k, 70 + noise(&rng),
				     &vd[g]);
	i += 5;
	for (int g = 0; g < 2; g++) {
		assert_true(judge1(a, gpu[g], i, 90, &vd[g]) > 0.9);
		assert_int_equal(vd[g].event, GW_DETECT_ONSET);
	}
	assert_true(vd[0].workload);
	assert_non_null(strstr(vd[0].explanation,
			       "workload change (2 compute processes)"));
	assert_false(vd[1].workload);
	assert_null(strstr(vd[1].explanation, "workload"));
	assert_int_equal(stats(a).workload_episodes, 1);
	/* A spike 100 s after the change is still the job's; so is one
	 * 126 s after it, 16 s after another job's start, at a level the
	 * series took before.  One far above any level seen is not, for
	 * the rest of the episode (the lockout keeps it open). */
	for (int64_t k = 1; k < 124; k++) {
		double v = k == 95 || k == 121 ? 90 : 70 + noise(&rng);

		(void)judge1(a, gpu[0], i + k, v, &vd[0]);
		assert_true(vd[0].in_episode);
		assert_true(vd[0].workload);
		if (k == 105)
			procs(a, gpu[0], i + k, 3);
	}
	assert_int_equal(stats(a).workload_outlasted, 0);
	i += 124;
	assert_true(judge1(a, gpu[0], i, 110, &vd[0]) > 0.9);
	assert_true(vd[0].in_episode);
	assert_false(vd[0].workload);
	assert_int_equal(stats(a).workload_outlasted, 1);
	(void)judge1(a, gpu[0], ++i, 70, &vd[0]);
	assert_false(vd[0].workload);
	gw_anomaly_free(a);
}

/* A gauge that steps from before to after at sample 300 + at, with 0.1%
 * noise. */
struct stepped {
	const char *name, *labels;
	double before, after;
	int at;
};

/* Judges sample i of s; the step's sample must open an episode. */
static void judge_stepped(struct gw_anomaly *a, const struct stepped *s,
			  int64_t i, uint64_t *rng,
			  struct gw_anomaly_verdict *vd)
{
	double v = i < 300 + s->at ? s->before : s->after;

	v *= 1 + 0.001 * noise(rng);
	(void)gw_anomaly_judge(a, s->name, s->labels, GW_GAUGE, GW_SAMPLE_PLAIN,
			       T0 + i * STEP, v, vd);
	if (i == 300 + s->at)
		assert_int_equal(vd->event, GW_DETECT_ONSET);
}

/* A power cap on GPU 1, as the simulator propagates it: the limit and the
 * power drawn, then three clocks, then a process's kernel and step times.
 * The step time's explanation names each metric once (of the clocks, one
 * with the largest change), the limit last with its onset (the lower
 * layer, at the same time as the power), and nothing of GPU 0. */
static void explanations_name_each_metric_once(void **state)
{
	/* at: seconds after the cap */
	static const struct stepped s[] = {
		{ "gpuwatch_gpu_power_watts", "gpu=\"1\"", 640, 320, 0 },
		{ "gpuwatch_gpu_power_limit_watts", "gpu=\"1\"", 700, 350, 0 },
		/* the video clock first: read first, it is not the one kept */
		{ "gpuwatch_gpu_clock_hertz", "clock=\"video\",gpu=\"1\"", 1755,
		  1365, 1 },
		{ "gpuwatch_gpu_clock_hertz", "clock=\"sm\",gpu=\"1\"", 1980,
		  1400, 1 },
		{ "gpuwatch_gpu_clock_hertz", "clock=\"graphics\",gpu=\"1\"",
		  1980, 1400, 1 },
		{ "gpuwatch_gpu_power_watts", "gpu=\"0\"", 600, 200, 1 },
		{ "train_step_kernel_seconds", "gpu=\"1\",pid=\"42\"", 0.3,
		  0.42, 2 },
		{ "train_step_seconds", "gpu=\"1\",pid=\"42\"", 0.4, 0.52, 3 },
		/* read a second after the step time's onset */
		{ "gpuwatch_gpu_memory_temperature_celsius", "gpu=\"1\"", 50,
		  40, 4 },
	};
	const size_t n = sizeof(s) / sizeof(s[0]);
	struct gw_anomaly *a = make(0, 0);
	struct gw_anomaly_verdict vd;
	uint64_t rng = 88172645463325252ull;
	char at_onset[512] = "", e[512] = "";
	const char *p;
	int64_t i;

	(void)state;
	for (i = 0; i < 300 + 6; i++)
		for (size_t k = 0; k < n; k++) {
			judge_stepped(a, &s[k], i, &rng, &vd);
			if (k != n - 2)
				continue;
			/* The step time: its explanation settles 2 s after
			 * its onset, and then names the onset read after
			 * its own. */
			if (i == 303) {
				assert_true(vd.settling && !vd.settled);
				snprintf(at_onset, sizeof(at_onset), "%s",
					 vd.explanation);
			} else if (i == 304) {
				assert_true(vd.settling && !vd.settled);
			} else if (i == 305) {
				assert_true(vd.settled && !vd.settling);
				assert_true(vd.first > 0.9);
				assert_int_equal(vd.onset_ms, T0 + 303 * STEP);
				snprintf(e, sizeof(e), "%s", vd.explanation);
			}
		}
	assert_null(strstr(at_onset, "memory_temperature"));
	assert_non_null(strstr(e,
			       "gpuwatch_gpu_memory_temperature_celsius "
			       "-20% <- train_step_kernel_seconds +40% <- "));
	assert_null(strstr(e, "train_step_seconds"));
	p = strstr(e, "gpuwatch_gpu_clock_hertz{clock=");
	assert_non_null(p);
	assert_null(strstr(p + 1, "gpuwatch_gpu_clock_hertz"));
	assert_null(strstr(e, "video")); /* -22%: the sm or graphics -29% */
	assert_non_null(strstr(e, "<- gpuwatch_gpu_power_limit_watts -50% "
				  "since "));
	assert_non_null(strstr(e, "gpuwatch_gpu_power_watts -50% <- "));
	assert_null(strstr(e, "-67%"));
	gw_anomaly_free(a);
}

/* CUDA's series of a process carry its pid and no gpu: NVML's per-process
 * series link the process to its GPU, so that the GPU's episodes explain
 * its kernels' and the reverse; a process's step time is explained by its
 * own kernels and its GPU's clock, not by another process's. */
static void explanations_link_processes_to_their_gpus(void **state)
{
#define KMAX "gpuwatch_cuda_kernel_duration_max_seconds"
	/* at: seconds after the clock drop */
	static const struct stepped s[] = {
		{ "gpuwatch_gpu_clock_hertz", "clock=\"sm\",gpu=\"1\"", 1980,
		  1400, 0 },
		{ KMAX, "pid=\"42\",comm=\"train\",kernel=\"gemm\"", 0.001,
		  0.0014, 1 },
		{ KMAX, "pid=\"43\",comm=\"eval\",kernel=\"gemm\"", 0.001,
		  0.0015, 1 },
		{ KMAX, "pid=\"44\",comm=\"other\",kernel=\"gemm\"", 0.001,
		  0.0016, 1 },
		{ "train_step_seconds", "gpu=\"1\",pid=\"7\"", 0.4, 0.9, 1 },
		{ "train_step_seconds", "gpu=\"1\",pid=\"42\"", 0.4, 0.52, 2 },
	};
	const size_t n = sizeof(s) / sizeof(s[0]);
	struct gw_anomaly *a = make(0, 0);
	struct gw_anomaly_verdict vd;
	uint64_t rng = 88172645463325252ull;
	char e[6][512];
	int64_t i;

	(void)state;
	memset(e, 0, sizeof(e));
	for (i = 0; i < 300 + 6; i++) {
		/* pid 42 and 7 run on GPU 1, pid 43 on GPU 0; 44 is not
		 * seen by NVML. */
		gw_anomaly_workload(a, "gpuwatch_gpu_process_memory_used_bytes",
				    "gpu=\"1\",pid=\"42\"", T0 + i * STEP, 1e9);
		gw_anomaly_workload(a, "gpuwatch_gpu_process_memory_used_bytes",
				    "gpu=\"1\",pid=\"7\"", T0 + i * STEP, 1e9);
		gw_anomaly_workload(a, "gpuwatch_gpu_process_memory_used_bytes",
				    "gpu=\"0\",pid=\"43\"", T0 + i * STEP, 1e9);
		for (size_t k = 0; k < n; k++) {
			judge_stepped(a, &s[k], i, &rng, &vd);
			if (vd.settled)
				snprintf(e[k], sizeof(e[k]), "%s",
					 vd.explanation);
		}
	}
	/* The clock names the kernels of the process on its GPU only. */
	assert_non_null(strstr(e[0], KMAX "{kernel=\"gemm\"} +40%"));
	assert_null(strstr(e[0], "+50%"));
	assert_null(strstr(e[0], "+60%"));
	/* pid 42's kernels: the clock of its GPU (and its own step time,
	 * not pid 7's). */
	assert_non_null(strstr(e[1], "gpuwatch_gpu_clock_hertz{clock=\"sm\"} "
				     "-29% since "));
	assert_null(strstr(e[1], "+125%")); /* pid 7's step time */
	/* pid 43's GPU and pid 44's (unknown) had no episode. */
	assert_string_equal(e[2], "");
	assert_string_equal(e[3], "");
	/* pid 42's step time: its kernels and its GPU's clock, not pid 7's
	 * step time on the same GPU. */
	assert_non_null(strstr(e[5],
			       KMAX "{kernel=\"gemm\"} +40% <- "
				    "gpuwatch_gpu_clock_hertz{clock=\"sm\"} "
				    "-29% since "));
	assert_null(strstr(e[5], "+125%"));
	gw_anomaly_free(a);
#undef KMAX
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(learning_then_constant_never_anomalous),
		cmocka_unit_test(spike_scores_near_one_at_its_timestamp),
		cmocka_unit_test(step_is_not_anomalous_forever),
		cmocka_unit_test(series_are_told_apart_by_labels),
		cmocka_unit_test(only_gauges_and_quantiles_are_judged),
		cmocka_unit_test(cap_refuses_and_counts_until_eviction),
		cmocka_unit_test(eviction_keeps_the_live_series),
		cmocka_unit_test(
			process_models_end_an_hour_after_their_process),
		cmocka_unit_test(score_names_and_options),
		cmocka_unit_test(
			workload_changes_explain_episodes_of_their_gpu),
		cmocka_unit_test(explanations_name_each_metric_once),
		cmocka_unit_test(explanations_link_processes_to_their_gpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
