// SPDX-License-Identifier: MIT
/*
 * test_log.c - the log's rate limit as a reader of the log sees it: a
 * message class sent 100,000 times is a handful of lines and one
 * "suppressed" line with the exact count; another class still gets
 * through; a window that ends lets the class speak again; a thread set
 * unlimited loses nothing; classes beyond the table are limited together.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"

static char path[64];
static int saved = -1;

/* Sends stderr to a fresh file until uncapture(). */
static void capture(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/gw-test-log.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

/* What was written so far (malloc'd). */
static char *peek(void)
{
	FILE *f;
	char *text;
	long n;

	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

/* Restores stderr; returns what was written (malloc'd). */
static char *uncapture(void)
{
	char *text;

	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	text = peek();
	unlink(path);
	return text;
}

/* Lines holding needle (NULL: all); the summaries only when asked for. */
static unsigned int count_lines(const char *text, const char *needle)
{
	unsigned int n = 0;

	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);

		int summary = memmem(l, len, "log: suppressed", 15) != NULL;

		if (!needle || (memmem(l, len, needle, strlen(needle)) &&
				(!summary || strstr(needle, "suppressed"))))
			n++;
		l += len + (end ? 1 : 0);
	}
	return n;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int setup(void **state)
{
	(void)state;
	gw_log_set_level(GW_LOG_INFO);
	gw_log_flush(1);
	return gw_log_set_limit(GW_LOG_INTERVAL, GW_LOG_BURST);
}

static void flood_is_bounded_and_summarised(void **state)
{
	char *t;

	(void)state;
	assert_int_equal(gw_log_set_limit(3600, 5), 0);
	capture();
	for (int i = 0; i < 100000; i++)
		gw_warn("cupti: not reading ring %d: header", i);
	gw_info("another class: pid %d", 42);
	assert_int_equal(gw_log_flush(1), 99995);
	t = uncapture();
	assert_int_equal(count_lines(t, "cupti: not reading ring"), 5);
	assert_int_equal(count_lines(t, "not reading ring 4: header"), 1);
	assert_int_equal(count_lines(t, "not reading ring 5: header"), 0);
	assert_int_equal(count_lines(t, "another class: pid 42"), 1);
	assert_int_equal(count_lines(t, "log: suppressed 99995 similar "
					"messages"),
			 1);
	assert_int_equal(count_lines(t, "suppressed 99995 similar messages "
					"in the last "),
			 1);
	assert_non_null(strstr(t, " s: \"cupti: not reading ring %d: "
				  "header\"\n"));
	assert_int_equal(count_lines(t, NULL), 7);
	free(t);
	/* Nothing is left to report. */
	capture();
	assert_int_equal(gw_log_flush(1), 0);
	t = uncapture();
	assert_string_equal(t, "");
	free(t);
}

static void window_end_reports_and_reopens(void **state)
{
	double deadline;
	unsigned long long n = 0;
	char *t;

	(void)state;
	assert_int_equal(gw_log_set_limit(0.05, 2), 0);
	capture();
	for (int i = 0; i < 10; i++)
		gw_warn("window line %d", i);
	/* The summary is written once the window is over, not before. */
	deadline = now_mono() + 5;
	while (!(n = gw_log_flush(0)) && now_mono() < deadline)
		;
	gw_warn("window line %d", 10);
	t = uncapture();
	assert_int_equal(n, 8);
	assert_int_equal(count_lines(t, "window line"), 3);
	assert_int_equal(count_lines(t, "window line 10"), 1);
	assert_int_equal(count_lines(t, "suppressed 8 similar messages"), 1);
	free(t);
}

static void summary_before_the_next_line(void **state)
{
	double deadline;
	char *t;

	(void)state;
	assert_int_equal(gw_log_set_limit(0.05, 1), 0);
	capture();
	gw_err("next line %d", 1);
	gw_err("next line %d", 2);
	gw_err("next line %d", 3);
	/* Written by the class's own next line once the window is over. */
	deadline = now_mono() + 5;
	for (t = NULL; !t && now_mono() < deadline;) {
		gw_err("next line %d", 4);
		t = peek();
		if (!strstr(t, "next line 4")) {
			free(t);
			t = NULL;
		}
	}
	free(t);
	t = uncapture();
	assert_int_equal(count_lines(t, "next line 1"), 1);
	assert_int_equal(count_lines(t, "next line 4"), 1);
	assert_int_equal(count_lines(t, "suppressed"), 1);
	/* The summary comes first. */
	assert_true(strstr(t, "suppressed") < strstr(t, "next line 4"));
	free(t);
}

static void unlimited_thread_loses_nothing(void **state)
{
	char *t;

	(void)state;
	assert_int_equal(gw_log_set_limit(3600, 1), 0);
	capture();
	assert_int_equal(gw_log_unlimited(1), 0);
	for (int i = 0; i < 20; i++)
		gw_info("start-up line %d", i);
	assert_int_equal(gw_log_unlimited(0), 1);
	for (int i = 0; i < 20; i++)
		gw_info("start-up line %d", i);
	assert_int_equal(gw_log_flush(1), 20);
	t = uncapture();
	assert_int_equal(count_lines(t, "start-up line"), 20);
	free(t);
}

static void *flood_thread(void *arg)
{
	for (int i = 0; i < 25000; i++)
		gw_warn("thread %d line %d", *(int *)arg, i);
	return NULL;
}

/* Four threads flooding one class: still five lines and one summary. */
static void threads_share_the_limit(void **state)
{
	pthread_t t[4];
	int id[4];
	char *text;

	(void)state;
	assert_int_equal(gw_log_set_limit(3600, 5), 0);
	capture();
	for (int i = 0; i < 4; i++) {
		id[i] = i;
		assert_int_equal(
			pthread_create(&t[i], NULL, flood_thread, &id[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(gw_log_flush(1), 99995);
	text = uncapture();
	assert_int_equal(count_lines(text, " line "), 5);
	assert_int_equal(count_lines(text, "suppressed 99995 similar"), 1);
	assert_int_equal(count_lines(text, NULL), 6);
	free(text);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
static void classes_beyond_the_table_share_a_limit(void **state)
{
	static char fmts[GW_LOG_CLASSES + 100][24];
	unsigned int n = GW_LOG_CLASSES + 100;
	char *t;

	(void)state;
	assert_int_equal(gw_log_set_limit(3600, 2), 0);
	for (unsigned int i = 0; i < n; i++)
		snprintf(fmts[i], sizeof(fmts[i]), "distinct class %u", i);
	capture();
	for (int round = 0; round < 3; round++)
		for (unsigned int i = 0; i < n; i++)
			gw_warn(fmts[i]);
	gw_log_flush(1);
	t = uncapture();
	/* Every class has its own two lines until the table is full; those
	 * beyond (and classes of earlier tests) share two. */
	assert_true(count_lines(t, "distinct class") <= 2 * GW_LOG_CLASSES + 2);
	assert_true(count_lines(t, "distinct class") >= 2 * 100);
	assert_true(count_lines(t, "suppressed") >= 1);
	assert_true(count_lines(t, NULL) <= 3 * GW_LOG_CLASSES + 3);
	free(t);
}
#pragma GCC diagnostic pop

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(flood_is_bounded_and_summarised, setup),
		cmocka_unit_test_setup(window_end_reports_and_reopens, setup),
		cmocka_unit_test_setup(summary_before_the_next_line, setup),
		cmocka_unit_test_setup(unlimited_thread_loses_nothing, setup),
		cmocka_unit_test_setup(threads_share_the_limit, setup),
		cmocka_unit_test_setup(classes_beyond_the_table_share_a_limit,
				       setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
