/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure injection: malloc, calloc and realloc are wrapped at
 * link time (-Wl,--wrap=...) so a test can make the Nth allocation fail.
 * Every path must then report the failure, keep what it had, and leak
 * nothing (LeakSanitizer runs at exit).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "core/config.h"
#include "pipeline/metrics.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static long countdown = -1; /* the allocation that fails; -1: none */
static long failures;

static int should_fail(void)
{
	if (countdown < 0)
		return 0;
	if (countdown-- == 0) {
		failures++;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	return should_fail() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	return should_fail() ? NULL : __real_realloc(p, n);
}

static const struct gw_family temp = { "gpuwatch_gpu_temperature_celsius",
				       "GPU core temperature.", GW_GAUGE };
static const struct gw_family xid = { "gpuwatch_gpu_xid_errors_total",
				      "XID errors.", GW_COUNTER };

static void buf_keeps_content(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_buf_adds(&b, "kept"), 0);
	countdown = 0;
	{
		char big[1024];

		memset(big, 'x', sizeof(big));
		assert_int_equal(gw_buf_add(&b, big, sizeof(big)), -ENOMEM);
	}
	countdown = -1;
	assert_string_equal(b.p, "kept");
	assert_int_equal(b.len, 4);
	gw_buf_release(&b);
}

static void snap_counts_what_it_cannot_hold(void **state)
{
	struct gw_snap s;

	(void)state;
	gw_snap_init(&s);
	countdown = 0; /* the sample array cannot be allocated */
	gw_snap_add(&s, &temp, 40, NULL, "gpu", "0", NULL);
	countdown = -1;
	assert_int_equal(s.n, 0);
	assert_int_equal(s.dropped, 1);
	gw_snap_add(&s, &temp, 41, NULL, "gpu", "0", NULL);
	assert_int_equal(s.n, 1);
	gw_snap_release(&s);
}

/* Builds, publishes and renders with allocation N failing. */
static int scenario(long n, char **out)
{
	struct gw_registry *r;
	struct gw_snap s;
	struct gw_buf b;
	int slot, err;

	*out = NULL;
	countdown = n;
	r = gw_registry_new();
	if (!r) {
		countdown = -1;
		return -ENOMEM;
	}
	slot = gw_registry_slot(r, "t");
	assert_true(slot >= 0);
	gw_snap_init(&s);
	for (int i = 0; i < 40; i++) {
		char g[8];

		snprintf(g, sizeof(g), "%d", i);
		gw_snap_add(&s, &temp, 40 + i, NULL, "gpu", g, NULL);
		gw_snap_add(&s, &xid, i, NULL, "gpu", g, "xid", "79", NULL);
	}
	gw_registry_publish(r, slot, &s);
	gw_buf_init(&b, 1 << 20);
	err = gw_registry_render(r, GW_EXPO_TEXT_004, &b);
	countdown = -1;
	if (!err) {
		struct gw_registry_stats st;

		gw_registry_stats(r, &st);
		/* Whatever was dropped is counted, and the rest is rendered. */
		assert_int_equal(st.series + st.dropped, 80);
		*out = gw_buf_detach(&b, NULL);
	}
	gw_buf_release(&b);
	gw_snap_release(&s);
	gw_registry_free(r);
	return err;
}

static void nth_allocation_fails(void **state)
{
	char *good, *out;
	long n;

	(void)state;
	assert_int_equal(scenario(-1, &good), 0);
	assert_non_null(strstr(good, "gpuwatch_gpu_temperature_celsius{gpu=\"39\"} 79\n"));
	for (n = 0; n < 200; n++) {
		long before = failures;
		int err = scenario(n, &out);

		if (failures == before) {
			/* n is past the last allocation: nothing failed. */
			assert_int_equal(err, 0);
			assert_string_equal(out, good);
			free(out);
			break;
		}
		/* A failed render says so; a successful one is well formed. */
		if (err) {
			assert_int_equal(err, -ENOMEM);
			assert_null(out);
		} else {
			assert_non_null(out);
			assert_true(out[0] == '\0' || out[strlen(out) - 1] == '\n');
			free(out);
		}
	}
	assert_true(n > 3 && n < 200);
	free(good);
}

static void config_file_out_of_memory(void **state)
{
	char path[] = "/tmp/gw-alloc-XXXXXX", err[GW_CONFIG_ERR_MAX];
	struct gw_config c;
	int fd = mkstemp(path), r = -1;

	(void)state;
	assert_true(fd >= 0);
	assert_true(write(fd, "interval: 2\n", 12) == 12);
	close(fd);
	for (long n = 0; n < 50; n++) {
		long before = failures;

		gw_config_defaults(&c);
		countdown = n;
		r = gw_config_load_file(&c, path, err, sizeof(err));
		countdown = -1;
		if (failures == before)
			break;
		/* Either a clear error or, if the failure was survivable, success. */
		if (r)
			assert_non_null(strstr(err, path));
	}
	assert_int_equal(r, 0);
	assert_true(c.interval == 2);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buf_keeps_content),
		cmocka_unit_test(snap_counts_what_it_cannot_hold),
		cmocka_unit_test(nth_allocation_fails),
		cmocka_unit_test(config_file_out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
