// SPDX-License-Identifier: MIT
/*
 * test_linger.c - an exited process's series on /metrics: copied out of
 * the pass that saw it gone, exposed again with
 * gpuwatch_process_exited_timestamp_seconds until the grace has passed,
 * never twice, within their bounds; and gw_snap_copy()'s label-prefix
 * selection underneath.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "pipeline/linger.h"
#include "pipeline/metrics.h"

static const struct gw_family calls = { "gpuwatch_cuda_api_calls_total",
					"CUDA API calls.", GW_COUNTER };
static const struct gw_family dur = { "gpuwatch_cuda_api_duration_seconds",
				      "Latency.", GW_HISTOGRAM };
static const struct gw_family up = { "gpuwatch_ebpf_up", "Up.", GW_GAUGE };

#define P42  "pid=\"42\",comm=\"train\""
#define P421 "pid=\"421\",comm=\"train\""
#define MARK "gpuwatch_process_exited_timestamp_seconds"

static const double bounds[2] = { 0.001, 0.1 };

/* Process 42 (a counter and a histogram), process 421, one plain series. */
static void fill(struct gw_snap *s, double n42)
{
	const uint64_t counts[3] = { 1, 2, 0 };

	gw_snap_add(s, &calls, n42, P42, "api", "cudaMalloc", NULL);
	gw_snap_add_histogram(s, &dur, bounds, counts, 2, 0.01, P42, "api",
			      "cudaMalloc", NULL);
	gw_snap_add(s, &calls, 9, P421, "api", "cudaFree", NULL);
	gw_snap_add(s, &up, 1, NULL, NULL);
}

/* The text a scrape of s alone would get (malloc'ed). */
static char *render(struct gw_snap *s)
{
	struct gw_registry *r = gw_registry_new();
	struct gw_registry_stats st;
	struct gw_buf out;
	char *text;
	int slot;

	assert_non_null(r);
	slot = gw_registry_slot(r, "test");
	assert_true(slot >= 0);
	gw_registry_publish(r, slot, s);
	gw_buf_init(&out, 1u << 20);
	assert_int_equal(gw_registry_render(r, GW_EXPO_TEXT_004, &out), 0);
	gw_registry_stats(r, &st);
	assert_int_equal(st.duplicates, 0);
	text = gw_buf_detach(&out, NULL);
	gw_registry_free(r);
	return text ? text : calloc(1, 1);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += k)
		n++;
	return n;
}

static void copy_selects_whole_labels(void **state)
{
	struct gw_snap src, dst;
	size_t n;

	(void)state;
	gw_snap_init(&src);
	gw_snap_init(&dst);
	fill(&src, 3);
	/* 1 counter + 3 buckets, sum and count; not pid 421's. */
	n = gw_snap_copy(&dst, &src, P42);
	assert_int_equal(n, 6);
	assert_int_equal(dst.n, 6);
	/* The histogram's label text is stored once, not per sample. */
	assert_true(dst.labels.len < 2 * sizeof(P42 ",api=\"cudaMalloc\"") + 8);
	assert_int_equal(gw_snap_copy(&dst, &src, "pid=\"4\""), 0);
	gw_snap_reset(&dst);
	assert_int_equal(gw_snap_copy(&dst, &src, NULL), src.n);
	gw_snap_release(&src);
	gw_snap_release(&dst);
}

static void kept_for_the_grace(void **state)
{
	struct gw_linger *l = gw_linger_new(5, 0, 0, "test");
	struct gw_linger_stats st;
	struct gw_snap s;
	char *text;

	(void)state;
	assert_non_null(l);
	gw_snap_init(&s);
	/* The pass that sees 42 gone: its final values are in s already. */
	fill(&s, 17);
	assert_int_equal(gw_linger_take(l, 42, &s, P42, 1700000000, 100), 6);
	gw_linger_emit(l, &s, 100);
	text = render(&s);
	assert_non_null(
		strstr(text, MARK "{" P42 ",source=\"test\"} 1700000000\n"));
	assert_int_equal(count(text, "gpuwatch_cuda_api_calls_total{" P42), 1);
	free(text);

	/* Later passes: 42 is no longer read, its last values come back. */
	gw_snap_init(&s);
	gw_snap_add(&s, &up, 1, NULL, NULL);
	gw_linger_emit(l, &s, 104.9);
	text = render(&s);
	assert_non_null(strstr(text, "gpuwatch_cuda_api_calls_total{" P42
				     ",api=\"cudaMalloc\"} 17\n"));
	assert_non_null(strstr(text,
			       "gpuwatch_cuda_api_duration_seconds_bucket{" P42
			       ",api=\"cudaMalloc\",le=\"+Inf\"} 3\n"));
	assert_non_null(
		strstr(text, MARK "{" P42 ",source=\"test\"} 1700000000\n"));
	assert_null(strstr(text, P421));
	free(text);

	/* Past the grace: gone, and counted as expired. */
	gw_snap_init(&s);
	gw_linger_emit(l, &s, 105);
	assert_int_equal(s.n, 0);
	gw_linger_stats(l, &st);
	assert_int_equal(st.procs, 0);
	assert_int_equal(st.samples, 0);
	assert_int_equal(st.expired, 1);
	gw_snap_release(&s);
	gw_linger_free(l);
}

static void reused_pid_and_zero_grace(void **state)
{
	struct gw_linger *l = gw_linger_new(60, 0, 0, "test"), *none;
	struct gw_snap s;

	(void)state;
	assert_non_null(l);
	gw_snap_init(&s);
	fill(&s, 1);
	assert_int_equal(gw_linger_take(l, 42, &s, P42, 1, 0), 6);
	/* Nothing of a process without series is kept. */
	assert_int_equal(gw_linger_take(l, 7, &s, "pid=\"7\"", 1, 0), 0);
	assert_false(gw_linger_has(l, 7));
	/* Taken again (the pid was reused and exited too): one entry. */
	assert_int_equal(gw_linger_take(l, 42, &s, P42, 2, 0), 6);
	gw_snap_reset(&s);
	gw_linger_emit(l, &s, 1);
	assert_int_equal(s.n, 1); /* fresh again: the marker alone */
	gw_snap_reset(&s);
	gw_linger_emit(l, &s, 2);
	assert_int_equal(s.n, 7);
	/* Alive again: what was kept goes at once. */
	gw_linger_forget(l, 42);
	assert_false(gw_linger_has(l, 42));
	gw_snap_reset(&s);
	gw_linger_emit(l, &s, 3);
	assert_int_equal(s.n, 0);
	assert_int_equal(gw_linger_take(l, 1, &s, "", 1, 0), -EINVAL);

	none = gw_linger_new(0, 0, 0, "test");
	assert_non_null(none);
	fill(&s, 1);
	assert_int_equal(gw_linger_take(none, 42, &s, P42, 1, 0), 0);
	assert_false(gw_linger_has(none, 42));
	assert_null(gw_linger_new(-1, 0, 0, "test"));
	assert_null(gw_linger_new(5, 0, 0, NULL));
	assert_null(gw_linger_new(5, 0, 0, ""));
	gw_linger_free(none);
	gw_snap_release(&s);
	gw_linger_free(l);
}

static void bounded(void **state)
{
	struct gw_linger *l = gw_linger_new(60, 2, 10, "test");
	struct gw_linger_stats st;
	struct gw_snap s;
	char lab[64];

	(void)state;
	assert_non_null(l);
	gw_snap_init(&s);
	for (unsigned int pid = 1; pid <= 3; pid++) {
		snprintf(lab, sizeof(lab), "pid=\"%u\"", pid);
		gw_snap_add(&s, &calls, pid, lab, "api", "cudaMalloc", NULL);
		assert_int_equal(gw_linger_take(l, pid, &s, lab, pid, 0), 1);
	}
	/* Two processes at most: the oldest exit left first. */
	assert_false(gw_linger_has(l, 1));
	assert_true(gw_linger_has(l, 2) && gw_linger_has(l, 3));
	/* A third process pushes out the oldest again. */
	gw_snap_reset(&s);
	fill(&s, 1);
	assert_int_equal(gw_linger_take(l, 42, &s, P42, 4, 0), 6);
	gw_linger_stats(l, &st);
	assert_int_equal(st.procs, 2);
	assert_int_equal(st.samples, 7);
	assert_int_equal(st.evicted, 2);
	/* More than ten alone: refused. */
	{
		const uint64_t counts[12] = { 0 };
		const double b[11] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };

		gw_snap_reset(&s);
		gw_snap_add_histogram(&s, &dur, b, counts, 11, 0, "pid=\"5\"",
				      NULL);
		assert_int_equal(gw_linger_take(l, 5, &s, "pid=\"5\"", 5, 0),
				 -ENOSPC);
	}
	gw_linger_stats(l, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.procs, 2);
	assert_int_equal(st.evicted, 2); /* nothing made room for it */
	/* Another six: both older ones leave (a slot, then samples). */
	gw_snap_reset(&s);
	fill(&s, 1);
	assert_int_equal(gw_linger_take(l, 43, &s, P42, 6, 0), 6);
	assert_false(gw_linger_has(l, 3) || gw_linger_has(l, 42));
	assert_true(gw_linger_has(l, 43));
	gw_linger_stats(l, &st);
	assert_int_equal(st.evicted, 4);
	assert_int_equal(st.samples, 6);
	gw_snap_release(&s);
	gw_linger_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(copy_selects_whole_labels),
		cmocka_unit_test(kept_for_the_grace),
		cmocka_unit_test(reused_pid_and_zero_grace),
		cmocka_unit_test(bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
