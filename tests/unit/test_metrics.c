// SPDX-License-Identifier: MIT
/*
 * test_metrics.c - the registry behind /metrics: what a scraper sees in the
 * Prometheus text format 0.0.4 and in OpenMetrics 1.0, label escaping,
 * number formatting, publish-by-swap and the bounds on a snap.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "expo_check.h"
#include "pipeline/metrics.h"

static const struct gw_family temp = { "gpuwatch_gpu_temperature_celsius",
				       "GPU core temperature.", GW_GAUGE };
static const struct gw_family xid = { "gpuwatch_gpu_xid_errors_total",
				      "XID errors reported by the driver.",
				      GW_COUNTER };
static const struct gw_family info = { "gpuwatch_gpu_info",
				       "Static facts about a GPU.", GW_INFO };
static const struct gw_family mem = { "gpuwatch_gpu_memory_used_bytes",
				      "Framebuffer memory in use.", GW_GAUGE };
static const struct gw_family up = { "gpuwatch_agent_up",
				     "1 while the agent runs.", GW_GAUGE };

/* Renders r in fmt into a malloc'ed string (never NULL). */
static char *render(struct gw_registry *r, enum gw_expo_format fmt)
{
	struct gw_buf out;
	char *s;

	gw_buf_init(&out, 64u << 20);
	assert_int_equal(gw_registry_render(r, fmt, &out), 0);
	s = gw_buf_detach(&out, NULL);
	if (s)
		assert_unique_series(s);
	return s ? s : calloc(1, 1);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += k)
		n++;
	return n;
}

/* One registry with one slot holding a gauge, a counter and an info. */
static struct gw_registry *three_families(void)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_snap s;
	int slot;

	assert_non_null(r);
	slot = gw_registry_slot(r, "nvml");
	assert_true(slot >= 0);
	gw_snap_init(&s);
	gw_snap_add(&s, &xid, 3, "gpu=\"0\"", NULL);
	gw_snap_add(&s, &temp, 50.5, "gpu=\"1\"", NULL);
	gw_snap_add(&s, &temp, 45, "gpu=\"0\"", NULL);
	gw_snap_add(&s, &info, 1, "gpu=\"0\"", "name", "NVIDIA H200", "driver",
		    "550.54.15", NULL);
	gw_registry_publish(r, slot, &s);
	gw_snap_release(&s);
	return r;
}

static void text_format(void **state)
{
	struct gw_registry *r = three_families();
	char *t = render(r, GW_EXPO_TEXT_004);

	(void)state;
	assert_string_equal(
		t,
		"# HELP gpuwatch_gpu_info Static facts about a GPU.\n"
		"# TYPE gpuwatch_gpu_info gauge\n"
		"gpuwatch_gpu_info{gpu=\"0\",name=\"NVIDIA H200\","
		"driver=\"550.54.15\"} 1\n"
		"# HELP gpuwatch_gpu_temperature_celsius GPU core "
		"temperature.\n"
		"# TYPE gpuwatch_gpu_temperature_celsius gauge\n"
		"gpuwatch_gpu_temperature_celsius{gpu=\"0\"} 45\n"
		"gpuwatch_gpu_temperature_celsius{gpu=\"1\"} 50.5\n"
		"# HELP gpuwatch_gpu_xid_errors_total XID errors reported by "
		"the driver.\n"
		"# TYPE gpuwatch_gpu_xid_errors_total counter\n"
		"gpuwatch_gpu_xid_errors_total{gpu=\"0\"} 3\n");
	assert_null(strstr(t, "# EOF"));
	free(t);
	gw_registry_free(r);
}

static void openmetrics_format(void **state)
{
	struct gw_registry *r = three_families();
	char *t = render(r, GW_EXPO_OPENMETRICS);
	size_t n = strlen(t);

	(void)state;
	/* Family names drop _total/_info; samples keep them. */
	assert_string_equal(
		t, "# HELP gpuwatch_gpu Static facts about a GPU.\n"
		   "# TYPE gpuwatch_gpu info\n"
		   "gpuwatch_gpu_info{gpu=\"0\",name=\"NVIDIA H200\","
		   "driver=\"550.54.15\"} 1\n"
		   "# HELP gpuwatch_gpu_temperature_celsius GPU core "
		   "temperature.\n"
		   "# TYPE gpuwatch_gpu_temperature_celsius gauge\n"
		   "gpuwatch_gpu_temperature_celsius{gpu=\"0\"} 45\n"
		   "gpuwatch_gpu_temperature_celsius{gpu=\"1\"} 50.5\n"
		   "# HELP gpuwatch_gpu_xid_errors XID errors reported by the "
		   "driver.\n"
		   "# TYPE gpuwatch_gpu_xid_errors counter\n"
		   "gpuwatch_gpu_xid_errors_total{gpu=\"0\"} 3\n"
		   "# EOF\n");
	/* # EOF is the last line, exactly once. */
	assert_true(n >= 6 && strcmp(t + n - 6, "# EOF\n") == 0);
	assert_int_equal(count(t, "# EOF"), 1);
	free(t);
	gw_registry_free(r);
}

static void empty_registry(void **state)
{
	struct gw_registry *r = gw_registry_new();
	char *t;

	(void)state;
	assert_non_null(r);
	t = render(r, GW_EXPO_TEXT_004);
	assert_string_equal(t, "");
	free(t);
	/* A slot that has not published yet contributes nothing. */
	assert_true(gw_registry_slot(r, "self") >= 0);
	t = render(r, GW_EXPO_OPENMETRICS);
	assert_string_equal(t, "# EOF\n");
	free(t);
	gw_registry_free(r);
}

static void families_grouped_across_slots(void **state)
{
	/* The same family published by two producers, one via a copy. */
	static const struct gw_family temp_copy = {
		"gpuwatch_gpu_temperature_celsius", "GPU core temperature.",
		GW_GAUGE
	};
	struct gw_registry *r = gw_registry_new();
	struct gw_snap a, b;
	int sa, sb;
	char *t;

	(void)state;
	sa = gw_registry_slot(r, "gpu0");
	sb = gw_registry_slot(r, "gpu1");
	assert_true(sa >= 0 && sb >= 0 && sa != sb);
	gw_snap_init(&a);
	gw_snap_init(&b);
	gw_snap_add(&a, &temp, 40, "gpu=\"0\"", NULL);
	gw_snap_add(&a, &mem, 1024, "gpu=\"0\"", NULL);
	gw_snap_add(&b, &temp_copy, 41, "gpu=\"1\"", NULL);
	gw_snap_add(&b, &mem, 2048, "gpu=\"1\"", NULL);
	gw_registry_publish(r, sb, &b);
	gw_registry_publish(r, sa, &a);
	for (int f = 0; f < 2; f++) {
		t = render(r, f ? GW_EXPO_OPENMETRICS : GW_EXPO_TEXT_004);
		assert_int_equal(count(t, "# HELP "
					  "gpuwatch_gpu_temperature_celsius "),
				 1);
		assert_int_equal(count(t, "# TYPE "
					  "gpuwatch_gpu_temperature_celsius "),
				 1);
		assert_int_equal(
			count(t, "# TYPE gpuwatch_gpu_memory_used_bytes "), 1);
		/* Each family's samples follow its TYPE line, together. */
		assert_non_null(strstr(
			t, "# TYPE gpuwatch_gpu_memory_used_bytes gauge\n"
			   "gpuwatch_gpu_memory_used_bytes{gpu=\"0\"} 1024\n"
			   "gpuwatch_gpu_memory_used_bytes{gpu=\"1\"} 2048\n"));
		assert_non_null(strstr(
			t, "# TYPE gpuwatch_gpu_temperature_celsius gauge\n"
			   "gpuwatch_gpu_temperature_celsius{gpu=\"0\"} 40\n"
			   "gpuwatch_gpu_temperature_celsius{gpu=\"1\"} 41\n"));
		free(t);
	}
	gw_snap_release(&a);
	gw_snap_release(&b);
	gw_registry_free(r);
}

static void duplicate_series_rendered_once(void **state)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_registry_stats st;
	struct gw_snap s;
	int slot[4];
	char *t;

	(void)state;
	for (int i = 0; i < 4; i++)
		slot[i] = gw_registry_slot(r, "dup");
	gw_snap_init(&s);
	gw_snap_add(&s, &temp, 40, "gpu=\"0\"", NULL);
	gw_registry_publish(r, slot[0], &s);
	/* A second copy with another value: the first published one is shown. */
	gw_snap_add(&s, &temp, 41, NULL, "gpu", "0", NULL);
	gw_registry_publish(r, slot[1], &s);
	gw_snap_release(&s);
	/* Unlabelled series from snaps that never held any label text. */
	gw_snap_init(&s);
	gw_snap_add(&s, &up, 1, NULL, NULL);
	gw_registry_publish(r, slot[2], &s);
	gw_snap_release(&s);
	gw_snap_init(&s);
	gw_snap_add(&s, &up, 1, "", NULL);
	gw_registry_publish(r, slot[3], &s);
	gw_snap_release(&s);
	gw_registry_stats(r, &st);
	assert_int_equal(st.series, 4);
	assert_int_equal(st.dropped, 0);

	t = render(r, GW_EXPO_TEXT_004);
	assert_string_equal(t,
			    "# HELP gpuwatch_agent_up 1 while the agent runs.\n"
			    "# TYPE gpuwatch_agent_up gauge\n"
			    "gpuwatch_agent_up 1\n"
			    "# HELP gpuwatch_gpu_temperature_celsius GPU core "
			    "temperature.\n"
			    "# TYPE gpuwatch_gpu_temperature_celsius gauge\n"
			    "gpuwatch_gpu_temperature_celsius{gpu=\"0\"} 40\n");
	free(t);
	/* The series left out are visible in the agent's stats, and rendering
	 * again neither changes the output nor inflates the count. */
	gw_registry_stats(r, &st);
	assert_int_equal(st.duplicates, 2);
	assert_int_equal(st.dropped, 0);
	for (int i = 0; i < 3; i++) {
		t = render(r, GW_EXPO_TEXT_004);
		assert_non_null(strstr(t, "{gpu=\"0\"} 40\n"));
		free(t);
	}
	gw_registry_stats(r, &st);
	assert_int_equal(st.duplicates, 2);
	gw_registry_free(r);
}

/*
 * The same histogram (name and labels) published twice - two CUPTI rings
 * of one process did that - is one series on /metrics: the first copy,
 * every bucket once; and a summary likewise.
 */
static void duplicate_histogram_rendered_once(void **state)
{
	static const struct gw_family h = {
		"gpuwatch_cuda_kernel_duration_seconds", "Kernel durations.",
		GW_HISTOGRAM
	};
	static const struct gw_family q = { "gpuwatch_statsd_timer_seconds",
					    "A timer.", GW_SUMMARY };
	static const double bounds[] = { 0.001, 0.01 };
	static const uint64_t first[] = { 1, 2, 3 }, second[] = { 7, 8, 9 };
	static const double qs[] = { 0.5, 0.99 }, qv[] = { 1, 2 };
	struct gw_registry *r = gw_registry_new();
	struct gw_registry_stats st;
	struct gw_snap s;
	int slot[2];
	char *t;

	(void)state;
	for (int i = 0; i < 2; i++) {
		slot[i] = gw_registry_slot(r, "ring");
		gw_snap_init(&s);
		gw_snap_add_histogram(&s, &h, bounds, i ? second : first, 2,
				      i ? 9.5 : 0.5, "pid=\"7\"", "kernel", "k",
				      NULL);
		gw_snap_add_summary(&s, &q, qs, qv, 2, i ? 30 : 3, 1, NULL,
				    "name", "x", NULL);
		/* A copy in the same snap, right after the first. */
		if (i)
			gw_snap_add_histogram(&s, &h, bounds, second, 2, 9.5,
					      "pid=\"7\"", "kernel", "k", NULL);
		gw_registry_publish(r, slot[i], &s);
		gw_snap_release(&s);
	}
	t = render(r, GW_EXPO_TEXT_004);
	assert_int_equal(
		count(t, "_bucket{pid=\"7\",kernel=\"k\",le=\"0.001\"}"), 1);
	assert_int_equal(count(t, "le=\"+Inf\"} "), 1);
	assert_int_equal(count(t, "_sum{pid=\"7\",kernel=\"k\"} 0.5\n"), 1);
	assert_int_equal(count(t, "_count{pid=\"7\",kernel=\"k\"} 6\n"), 1);
	assert_int_equal(count(t, "_count{pid=\"7\",kernel=\"k\"}"), 1);
	assert_int_equal(count(t, "{name=\"x\",quantile=\"0.5\"} 1\n"), 1);
	assert_int_equal(count(t, "_count{name=\"x\"} 3\n"), 1);
	assert_int_equal(count(t, "_count{name=\"x\"}"), 1);
	free(t);
	gw_registry_stats(r, &st);
	/* Two histogram copies of 5 samples and one summary of 4. */
	assert_int_equal(st.duplicates, 14);
	gw_registry_free(r);
}

/* The check every exposition test makes finds a repeated series. */
static void unique_series_check_finds_repeats(void **state)
{
	char first[128];

	(void)state;
	assert_int_equal(count_duplicate_series("# HELP a x\na{x=\"1\"} 1\n"
						"a{x=\"2\"} 1\nb 1\n",
						first, sizeof(first)),
			 0);
	/* Labels in another order are the same series. */
	assert_int_equal(
		count_duplicate_series("a{x=\"1\",y=\"a,b\\\" c\"} 1\n"
				       "b 2\n"
				       "a{y=\"a,b\\\" c\",x=\"1\"} 2\n",
				       first, sizeof(first)),
		1);
	assert_string_equal(first, "a{x=\"1\",y=\"a,b\\\" c\"}");
	assert_int_equal(
		count_duplicate_series("b 1\nb 2\n", first, sizeof(first)), 1);
	assert_string_equal(first, "b{}");
}

/* A histogram renders cumulative buckets in order, +Inf, _sum and _count. */
static void histogram_rendering(void **state)
{
	static const struct gw_family h = {
		"gpuwatch_cuda_api_duration_seconds", "API call latency.",
		GW_HISTOGRAM
	};
	static const double bounds[] = { 0.001, 0.01 };
	static const uint64_t counts[] = { 1, 2, 3 };
	struct gw_registry *r = gw_registry_new();
	struct gw_snap s;
	int slot = gw_registry_slot(r, "h");
	char *t;

	(void)state;
	gw_snap_init(&s);
	gw_snap_add_histogram(&s, &h, bounds, counts, 2, 0.5, NULL, "api",
			      "cudaMalloc", NULL);
	gw_snap_add_histogram(&s, &h, bounds, counts, 2, 0.25, NULL, NULL);
	gw_registry_publish(r, slot, &s);
	t = render(r, GW_EXPO_TEXT_004);
	assert_string_equal(
		t,
		"# HELP gpuwatch_cuda_api_duration_seconds API call latency.\n"
		"# TYPE gpuwatch_cuda_api_duration_seconds histogram\n"
		"gpuwatch_cuda_api_duration_seconds_bucket{le=\"0.001\"} 1\n"
		"gpuwatch_cuda_api_duration_seconds_bucket{le=\"0.01\"} 3\n"
		"gpuwatch_cuda_api_duration_seconds_bucket{le=\"+Inf\"} 6\n"
		"gpuwatch_cuda_api_duration_seconds_sum 0.25\n"
		"gpuwatch_cuda_api_duration_seconds_count 6\n"
		"gpuwatch_cuda_api_duration_seconds_bucket{api=\"cudaMalloc\","
		"le=\"0.001\"} 1\n"
		"gpuwatch_cuda_api_duration_seconds_bucket{api=\"cudaMalloc\","
		"le=\"0.01\"} 3\n"
		"gpuwatch_cuda_api_duration_seconds_bucket{api=\"cudaMalloc\","
		"le=\"+Inf\"} 6\n"
		"gpuwatch_cuda_api_duration_seconds_sum{api=\"cudaMalloc\"} "
		"0.5\n"
		"gpuwatch_cuda_api_duration_seconds_count{api=\"cudaMalloc\"} "
		"6\n");
	free(t);
	t = render(r, GW_EXPO_OPENMETRICS);
	assert_non_null(strstr(
		t, "# TYPE gpuwatch_cuda_api_duration_seconds histogram\n"));
	free(t);
	gw_snap_release(&s);
	gw_registry_free(r);
}

static void collect_visit(void *ctx, const struct gw_visit *v)
{
	struct gw_buf *b = ctx;

	assert_int_equal(
		gw_buf_printf(b, "%s{%s} %g\n", v->name, v->labels, v->value),
		0);
}

/*
 * A summary renders its quantiles, _sum and _count; the store sees every
 * le and quantile label spelled as the exposition spells it (0.9, not
 * 0.90000000000000002), so one series has one name scraped or queried.
 */
static void summary_and_visit_labels(void **state)
{
	static const struct gw_family sm = { "lat_seconds", "Latency.",
					     GW_SUMMARY },
				      h = { "k_seconds", "Kernels.",
					    GW_HISTOGRAM };
	static const double q[] = { 0.5, 0.9, 0.99 }, v[] = { 1, 2, 3 };
	static const double bounds[] = { 1.024e-06, 0.1 };
	static const uint64_t counts[] = { 1, 1, 1 };
	struct gw_registry *r = gw_registry_new();
	uint64_t gens[GW_REGISTRY_MAX_SLOTS] = { 0 };
	struct gw_buf b;
	struct gw_snap s;
	int slot = gw_registry_slot(r, "s");
	char *t;

	(void)state;
	gw_snap_init(&s);
	gw_buf_init(&b, 1 << 16);
	gw_snap_add_summary(&s, &sm, q, v, 3, 7, 12.5, NULL, "job", "a", NULL);
	gw_snap_add_histogram(&s, &h, bounds, counts, 2, 0.5, NULL, NULL);
	gw_registry_publish(r, slot, &s);
	t = render(r, GW_EXPO_TEXT_004);
	assert_non_null(strstr(t, "# TYPE lat_seconds summary\n"
				  "lat_seconds{job=\"a\",quantile=\"0.5\"} 1\n"
				  "lat_seconds{job=\"a\",quantile=\"0.9\"} 2\n"
				  "lat_seconds{job=\"a\",quantile=\"0.99\"} 3\n"
				  "lat_seconds_sum{job=\"a\"} 12.5\n"
				  "lat_seconds_count{job=\"a\"} 7\n"));
	assert_non_null(strstr(t, "k_seconds_bucket{le=\"1.024e-06\"} 1\n"));
	free(t);
	assert_int_equal(gw_registry_visit(r, gens, collect_visit, &b), 10);
	assert_non_null(
		strstr(b.p, "lat_seconds{job=\"a\",quantile=\"0.9\"} 2\n"));
	assert_non_null(strstr(b.p, "lat_seconds_count{job=\"a\"} 7\n"));
	assert_non_null(strstr(b.p, "k_seconds_bucket{le=\"1.024e-06\"} 1\n"));
	assert_non_null(strstr(b.p, "k_seconds_bucket{le=\"0.1\"} 2\n"));
	assert_non_null(strstr(b.p, "k_seconds_bucket{le=\"+Inf\"} 3\n"));
	gw_buf_release(&b);
	gw_snap_release(&s);
	gw_registry_free(r);
}

/* Label values must be UTF-8: invalid bytes become U+FFFD, valid ones stay. */
static void label_values_made_utf8(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 1024);
	assert_int_equal(gw_labels_append(&b, "comm", "py\xff\xfethon"), 0);
	assert_string_equal(b.p, "comm=\"py\xef\xbf\xbd\xef\xbf\xbdthon\"");
	gw_buf_reset(&b);
	/* Truncated sequence, overlong encoding, surrogate. */
	assert_int_equal(gw_labels_append(&b, "a", "x\xe2\x82"), 0);
	assert_string_equal(b.p, "a=\"x\xef\xbf\xbd\xef\xbf\xbd\"");
	gw_buf_reset(&b);
	assert_int_equal(gw_labels_append(&b, "a", "\xc0\xaf\xed\xa0\x80"), 0);
	assert_null(strstr(b.p, "\xc0"));
	assert_null(strstr(b.p, "\xed\xa0"));
	gw_buf_reset(&b);
	assert_int_equal(
		gw_labels_append(&b, "name",
				 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"),
		0);
	assert_string_equal(
		b.p, "name=\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"");
	gw_buf_release(&b);
}

static void label_escaping(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 1024);
	assert_int_equal(gw_labels_append(&b, "cmd", "a\\b\"c\nd"), 0);
	assert_string_equal(b.p, "cmd=\"a\\\\b\\\"c\\nd\"");
	gw_buf_reset(&b);
	assert_int_equal(gw_labels_append(&b, "x", ""), 0);
	assert_string_equal(b.p, "x=\"\"");
	gw_buf_reset(&b);
	assert_int_equal(gw_labels_append(&b, "x", "\n\n\\\""), 0);
	assert_string_equal(b.p, "x=\"\\n\\n\\\\\\\"\"");
	gw_buf_reset(&b);
	/* Other bytes, UTF-8 and tabs included, pass through. */
	assert_int_equal(gw_labels_append(&b, "x", "caf\xc3\xa9\t{}=,"), 0);
	assert_string_equal(b.p, "x=\"caf\xc3\xa9\t{}=,\"");
	gw_buf_release(&b);

	/* A buffer too small for the pair is left as it was. */
	gw_buf_init(&b, 12);
	assert_int_equal(gw_buf_adds(&b, "a=\"1\""), 0);
	assert_int_equal(gw_labels_append(&b, "name", "long value"), -ENOSPC);
	assert_string_equal(b.p, "a=\"1\"");
	assert_int_equal(b.len, 5);
	gw_buf_release(&b);
}

static void escaped_labels_in_exposition(void **state)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_snap s;
	int slot = gw_registry_slot(r, "proc");
	char *t;

	(void)state;
	gw_snap_init(&s);
	gw_snap_add(&s, &mem, 4096, "gpu=\"0\"", "pid", "1234", "command",
		    "python \"train.py\"\n--dir C:\\data", NULL);
	/* Pairs without a base; a NULL value is an empty label, which is no
	 * label at all. */
	gw_snap_add(&s, &temp, 30, NULL, "gpu", "7", "uuid", NULL, NULL);
	gw_registry_publish(r, slot, &s);
	t = render(r, GW_EXPO_TEXT_004);
	assert_non_null(strstr(
		t, "\ngpuwatch_gpu_memory_used_bytes{gpu=\"0\",pid=\"1234\","
		   "command=\"python \\\"train.py\\\"\\n--dir C:\\\\data\"} "
		   "4096\n"));
	assert_non_null(strstr(
		t, "\ngpuwatch_gpu_temperature_celsius{gpu=\"7\"} 30\n"));
	assert_int_equal(count(t, "\n"), 6);
	free(t);
	gw_snap_release(&s);
	gw_registry_free(r);
}

/* As in Prometheus, comm="" is no label: /metrics never prints one, and a
 * series spelled with it is the series spelled without. */
static void empty_values_are_absent(void **state)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_registry_stats st;
	struct gw_snap s;
	int slot = gw_registry_slot(r, "proc");
	char *t;

	(void)state;
	gw_snap_init(&s);
	gw_snap_add(&s, &mem, 1, "gpu=\"0\",comm=\"\",pid=\"5\"", NULL);
	gw_snap_add(&s, &mem, 2, "comm=\"\"", "gpu", "1", "pid", "6", "comm",
		    "", NULL);
	gw_snap_add(&s, &mem, 3, "gpu=\"2\",comm=\"\\\"\"", NULL);
	gw_snap_add(&s, &temp, 4, "gpu=\"3\",comm=\"\"", NULL);
	gw_snap_add(&s, &temp, 4, "gpu=\"3\"", NULL);
	gw_registry_publish(r, slot, &s);
	t = render(r, GW_EXPO_TEXT_004);
	assert_null(strstr(t, "=\"\""));
	assert_non_null(strstr(
		t,
		"\ngpuwatch_gpu_memory_used_bytes{gpu=\"0\",pid=\"5\"} 1\n"));
	assert_non_null(strstr(
		t,
		"\ngpuwatch_gpu_memory_used_bytes{gpu=\"1\",pid=\"6\"} 2\n"));
	/* A value that is one escaped quote is not empty. */
	assert_non_null(strstr(t, "\ngpuwatch_gpu_memory_used_bytes{gpu=\"2\","
				  "comm=\"\\\"\"} 3\n"));
	/* Two spellings, one series: shown once. */
	assert_int_equal(
		count(t, "gpuwatch_gpu_temperature_celsius{gpu=\"3\"}"), 1);
	gw_registry_stats(r, &st);
	assert_int_equal(st.duplicates, 1);
	free(t);
	gw_snap_release(&s);
	gw_registry_free(r);
}

static void nan_skipped(void **state)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_snap s;
	int slot = gw_registry_slot(r, "nvml");
	char *t;

	(void)state;
	gw_snap_init(&s);
	gw_snap_add(&s, &temp, NAN, "gpu=\"0\"", NULL);
	gw_snap_add(&s, &mem, NAN, NULL, "gpu", "0", NULL);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.dropped, 0);
	gw_snap_add(&s, &temp, 33, "gpu=\"1\"", NULL);
	gw_snap_add(&s, &mem, INFINITY, "gpu=\"1\"", NULL);
	assert_int_equal(s.n, 2);
	gw_registry_publish(r, slot, &s);
	t = render(r, GW_EXPO_TEXT_004);
	assert_null(strstr(t, "NaN"));
	assert_null(strstr(t, "gpu=\"0\""));
	assert_non_null(
		strstr(t, "gpuwatch_gpu_temperature_celsius{gpu=\"1\"} 33\n"));
	assert_non_null(
		strstr(t, "gpuwatch_gpu_memory_used_bytes{gpu=\"1\"} +Inf\n"));
	free(t);
	gw_snap_release(&s);
	gw_registry_free(r);
}

/* The value printed for one sample of v, as a scraper sees it. */
static void value_text(double v, char *out, size_t outlen)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_snap s;
	int slot = gw_registry_slot(r, "x");
	char *t, *sp, *nl;

	gw_snap_init(&s);
	gw_snap_add(&s, &mem, v, NULL, NULL);
	gw_registry_publish(r, slot, &s);
	t = render(r, GW_EXPO_TEXT_004);
	sp = strstr(t, "\ngpuwatch_gpu_memory_used_bytes ");
	assert_non_null(sp);
	sp += strlen("\ngpuwatch_gpu_memory_used_bytes ");
	nl = strchr(sp, '\n');
	assert_non_null(nl);
	snprintf(out, outlen, "%.*s", (int)(nl - sp), sp);
	free(t);
	gw_snap_release(&s);
	gw_registry_free(r);
}

static void number_formatting(void **state)
{
	static const struct {
		double v;
		const char *want;
	} ints[] = {
		{ 85899345920.0, "85899345920" },
		{ 151397597184.0, "151397597184" },
		{ 0, "0" },
		{ 1, "1" },
		{ -3, "-3" },
		{ 1e15, "1000000000000000" },
		{ 9007199254740991.0, "9007199254740991" },
	};
	static const double frac[] = { 0.1,   50.5,    1.0 / 3,	      1e-300,
				       -2.75, 123.456, 4.9e-324,      1e300,
				       1e20,  0.005,   2.0 / 3 * 1e10 };
	char got[64];

	(void)state;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		value_text(ints[i].v, got, sizeof(got));
		assert_string_equal(got, ints[i].want);
	}
	/* Non-integers (and huge numbers) read back to the same double. */
	for (size_t i = 0; i < sizeof(frac) / sizeof(frac[0]); i++) {
		char *end;

		value_text(frac[i], got, sizeof(got));
		if (strtod(got, &end) != frac[i] || *end)
			fail_msg("%.17g rendered as '%s'", frac[i], got);
	}
	value_text(-INFINITY, got, sizeof(got));
	assert_string_equal(got, "-Inf");
}

static void publish_swaps(void **state)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_registry_stats st;
	struct gw_snap s;
	int slot = gw_registry_slot(r, "proc");
	char *t;

	(void)state;
	gw_snap_init(&s);
	gw_snap_add(&s, &mem, 100, "gpu=\"0\",pid=\"10\"", NULL);
	gw_snap_add(&s, &mem, 200, "gpu=\"0\",pid=\"20\"", NULL);
	gw_registry_publish(r, slot, &s);
	/* The producer gets an empty snap back. */
	assert_int_equal(s.n, 0);
	assert_int_equal(s.dropped, 0);
	assert_true(s.labels.len == 0);
	t = render(r, GW_EXPO_TEXT_004);
	assert_non_null(strstr(t, "pid=\"10\"} 100\n"));
	assert_non_null(strstr(t, "pid=\"20\"} 200\n"));
	free(t);
	gw_registry_stats(r, &st);
	assert_int_equal(st.series, 2);

	/* Process 10 exited: its series goes away with the next publish. */
	gw_snap_add(&s, &mem, 250, "gpu=\"0\",pid=\"20\"", NULL);
	gw_registry_publish(r, slot, &s);
	assert_int_equal(s.n, 0);
	t = render(r, GW_EXPO_TEXT_004);
	assert_null(strstr(t, "pid=\"10\""));
	assert_null(strstr(t, "} 200\n"));
	assert_non_null(strstr(t, "pid=\"20\"} 250\n"));
	free(t);
	gw_registry_stats(r, &st);
	assert_int_equal(st.series, 1);

	/* Publishing nothing empties the slot; the buffers keep cycling. */
	for (int i = 0; i < 5; i++) {
		gw_snap_add(&s, &temp, i, "gpu=\"0\"", NULL);
		gw_registry_publish(r, slot, &s);
	}
	t = render(r, GW_EXPO_TEXT_004);
	assert_string_equal(t,
			    "# HELP gpuwatch_gpu_temperature_celsius GPU core "
			    "temperature.\n"
			    "# TYPE gpuwatch_gpu_temperature_celsius gauge\n"
			    "gpuwatch_gpu_temperature_celsius{gpu=\"0\"} 4\n");
	free(t);
	gw_registry_publish(r, slot, &s);
	t = render(r, GW_EXPO_TEXT_004);
	assert_string_equal(t, "");
	free(t);
	gw_snap_release(&s);
	gw_registry_free(r);
}

static void publish_bad_slot_keeps_snap(void **state)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_snap s;
	int slot;
	char *t;

	(void)state;
	for (int i = 0; i < GW_REGISTRY_MAX_SLOTS; i++)
		assert_int_equal(gw_registry_slot(r, "many"), i);
	slot = gw_registry_slot(r, "one too many");
	assert_int_equal(slot, -ENOSPC);
	gw_snap_init(&s);
	gw_snap_add(&s, &temp, 1, NULL, NULL);
	gw_registry_publish(r, slot, &s);
	assert_int_equal(s.n, 1);
	t = render(r, GW_EXPO_TEXT_004);
	assert_string_equal(t, "");
	free(t);
	gw_snap_release(&s);
	gw_registry_free(r);
}

static void snap_bounds_count_drops(void **state)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_registry_stats st;
	struct gw_snap s;
	int slot = gw_registry_slot(r, "big");
	char *big;
	size_t before;

	(void)state;
	gw_snap_init(&s);
	for (unsigned int i = 0; i < GW_SNAP_MAX_SAMPLES + 5; i++)
		gw_snap_add(&s, &temp, i, NULL, NULL);
	assert_int_equal(s.n, GW_SNAP_MAX_SAMPLES);
	assert_int_equal(s.dropped, 5);
	gw_registry_publish(r, slot, &s);
	gw_registry_stats(r, &st);
	assert_int_equal(st.series, GW_SNAP_MAX_SAMPLES);
	assert_int_equal(st.dropped, 5);

	/* Label text: 1 MiB values, at most 4 MiB in all. */
	big = malloc(1u << 20);
	assert_non_null(big);
	memset(big, 'v', (1u << 20) - 1);
	big[(1u << 20) - 1] = '\0';
	for (int i = 0; i < 6; i++) {
		big[0] = (char)('a' + i);
		gw_snap_add(&s, &mem, i, NULL, "cmd", big, NULL);
	}
	assert_int_equal(s.n, 3);
	assert_int_equal(s.dropped, 3);
	assert_true(s.labels.len <= GW_SNAP_MAX_LABEL_BYTES);
	/* A failed sample leaves nothing behind; a small one still fits. */
	before = s.labels.len;
	gw_snap_add(&s, &mem, 9, "gpu=\"9\"", NULL);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.labels.len, before + strlen("gpu=\"9\""));
	gw_registry_publish(r, slot, &s);
	gw_registry_stats(r, &st);
	assert_int_equal(st.series, 4);
	assert_int_equal(st.dropped, 8);
	{
		char *t = render(r, GW_EXPO_TEXT_004);

		assert_int_equal(count(t, "\ngpuwatch_gpu_memory_used_bytes{"),
				 4);
		assert_non_null(strstr(t, "{gpu=\"9\"} 9\n"));
		free(t);
	}
	free(big);
	gw_snap_release(&s);
	gw_registry_free(r);
}

static void render_bounded_output(void **state)
{
	struct gw_registry *r = three_families();
	struct gw_buf out;

	(void)state;
	gw_buf_init(&out, 64);
	assert_int_equal(gw_registry_render(r, GW_EXPO_TEXT_004, &out),
			 -ENOSPC);
	assert_true(out.len < 64);
	gw_buf_release(&out);
	gw_registry_free(r);
}

static void negotiate(void **state)
{
	(void)state;
	assert_int_equal(gw_expo_negotiate(NULL), GW_EXPO_TEXT_004);
	assert_int_equal(gw_expo_negotiate(""), GW_EXPO_TEXT_004);
	assert_int_equal(gw_expo_negotiate("*/*"), GW_EXPO_TEXT_004);
	assert_int_equal(gw_expo_negotiate("text/plain;version=0.0.4"),
			 GW_EXPO_TEXT_004);
	assert_int_equal(gw_expo_negotiate("application/json"),
			 GW_EXPO_TEXT_004);
	assert_int_equal(gw_expo_negotiate("application/openmetrics-text; "
					   "version=1.0.0; charset=utf-8"),
			 GW_EXPO_OPENMETRICS);
	/* What Prometheus 2.x sends. */
	assert_int_equal(
		gw_expo_negotiate("application/openmetrics-text;version=1.0.0,"
				  "application/openmetrics-text;version=0.0.1;"
				  "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;"
				  "q=0.1"),
		GW_EXPO_OPENMETRICS);
	/* q=0 means the client refuses OpenMetrics. */
	assert_int_equal(gw_expo_negotiate("application/openmetrics-text;q=0,"
					   "text/plain;version=0.0.4"),
			 GW_EXPO_TEXT_004);
	assert_int_equal(gw_expo_negotiate("application/openmetrics-text; "
					   "version=1.0.0; q=0.0"),
			 GW_EXPO_TEXT_004);
	assert_string_equal(gw_expo_content_type(GW_EXPO_TEXT_004),
			    "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(
		gw_expo_content_type(GW_EXPO_OPENMETRICS),
		"application/openmetrics-text; version=1.0.0; charset=utf-8");
}

/* ---- concurrent publish and render ---- */

#define RACE_SERIES 8

struct race {
	struct gw_registry *r;
	int slot;
	int id;
	int rounds;
};

static void *publisher(void *arg)
{
	struct race *x = arg;
	struct gw_snap s;
	char racer[8];

	snprintf(racer, sizeof(racer), "%d", x->id);
	gw_snap_init(&s);
	for (int i = 0; i < x->rounds; i++) {
		/* Every snap holds the same series, all with value i. */
		for (int g = 0; g < RACE_SERIES; g++) {
			char gpu[8];

			snprintf(gpu, sizeof(gpu), "%d", g);
			gw_snap_add(&s, &temp, i, NULL, "racer", racer, "gpu",
				    gpu, NULL);
		}
		gw_registry_publish(x->r, x->slot, &s);
	}
	gw_snap_release(&s);
	return NULL;
}

/* Every series of one racer shows the same value: no torn snap. */
static void check_whole(const char *t, int id)
{
	char needle[32];
	const char *p = t;
	long first = -1;
	int n = 0;

	snprintf(needle, sizeof(needle), "{racer=\"%d\",", id);
	while ((p = strstr(p, needle)) != NULL) {
		const char *v = strstr(p, "} ");
		long val;

		assert_non_null(v);
		val = strtol(v + 2, NULL, 10);
		if (first < 0)
			first = val;
		if (val != first)
			fail_msg("racer %d: values %ld and %ld in one "
				 "render:\n%s",
				 id, first, val, t);
		n++;
		p = v;
	}
	if (n != 0 && n != RACE_SERIES)
		fail_msg("racer %d: %d series in one render", id, n);
}

static void concurrent_publish_render(void **state)
{
	struct race x[2];
	pthread_t th[2];
	struct gw_registry *r = gw_registry_new();

	(void)state;
	for (int i = 0; i < 2; i++) {
		x[i].r = r;
		x[i].slot = gw_registry_slot(r, "racer");
		x[i].id = i;
		x[i].rounds = 3000;
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, publisher, &x[i]),
				 0);
	for (int i = 0; i < 300; i++) {
		char *t = render(r, i % 2 ? GW_EXPO_OPENMETRICS
					  : GW_EXPO_TEXT_004);

		check_whole(t, 0);
		check_whole(t, 1);
		assert_true(count(t, "# TYPE ") <= 1);
		free(t);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	gw_registry_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(text_format),
		cmocka_unit_test(openmetrics_format),
		cmocka_unit_test(empty_registry),
		cmocka_unit_test(families_grouped_across_slots),
		cmocka_unit_test(duplicate_series_rendered_once),
		cmocka_unit_test(label_escaping),
		cmocka_unit_test(label_values_made_utf8),
		cmocka_unit_test(duplicate_histogram_rendered_once),
		cmocka_unit_test(unique_series_check_finds_repeats),
		cmocka_unit_test(histogram_rendering),
		cmocka_unit_test(escaped_labels_in_exposition),
		cmocka_unit_test(empty_values_are_absent),
		cmocka_unit_test(nan_skipped),
		cmocka_unit_test(number_formatting),
		cmocka_unit_test(publish_swaps),
		cmocka_unit_test(publish_bad_slot_keeps_snap),
		cmocka_unit_test(snap_bounds_count_drops),
		cmocka_unit_test(render_bounded_output),
		cmocka_unit_test(negotiate),
		cmocka_unit_test(summary_and_visit_labels),
		cmocka_unit_test(concurrent_publish_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
