// SPDX-License-Identifier: MIT
/*
 * test_pace.c - the CPU governor: over budget the detail set slows first,
 * then the fast set, each at most 8x; under half the budget the fast set
 * comes back first; nothing ever runs faster than configured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pace.h"

#define BUDGET	0.005
#define OVER	(BUDGET * 3)
#define UNDER	(BUDGET / 4)
#define BETWEEN (BUDGET * 0.75)

static void init_uses_configured(void **state)
{
	struct gw_pace p;

	(void)state;
	gw_pace_init(&p, 1, 30);
	assert_true(p.fast == 1 && p.detail == 30);
	assert_true(p.base_fast == 1 && p.base_detail == 30);
	/* Within budget nothing moves. */
	assert_int_equal(gw_pace_update(&p, BUDGET, BUDGET), 0);
	assert_int_equal(gw_pace_update(&p, BETWEEN, BUDGET), 0);
	assert_int_equal(gw_pace_update(&p, UNDER, BUDGET), 0);
	assert_int_equal(gw_pace_update(&p, 0, BUDGET), 0);
	assert_true(p.fast == 1 && p.detail == 30);
}

static void over_budget_detail_first_then_fast(void **state)
{
	static const double want_fast[] = { 1, 1, 1, 2, 4, 8, 8, 8 };
	static const double want_detail[] = { 60,  120, 240, 240,
					      240, 240, 240, 240 };
	struct gw_pace p;

	(void)state;
	gw_pace_init(&p, 1, 30);
	for (size_t i = 0; i < sizeof(want_fast) / sizeof(want_fast[0]); i++) {
		int changed = gw_pace_update(&p, OVER, BUDGET);

		if (p.fast != want_fast[i] || p.detail != want_detail[i])
			fail_msg("step %zu: fast %g detail %g, want %g %g", i,
				 p.fast, p.detail, want_fast[i],
				 want_detail[i]);
		/* Once both are at 8x, nothing changes any more. */
		assert_int_equal(changed, i < 6);
	}
}

static void stretch_caps_at_8x(void **state)
{
	struct gw_pace p;

	(void)state;
	gw_pace_init(&p, 0.5, 10);
	for (int i = 0; i < 100; i++)
		(void)gw_pace_update(&p, 1.0, BUDGET);
	assert_true(p.fast == 0.5 * GW_PACE_MAX_STRETCH);
	assert_true(p.detail == 10 * GW_PACE_MAX_STRETCH);
	assert_true(GW_PACE_MAX_STRETCH == 8.0);
}

static void restores_fast_first(void **state)
{
	static const double want_fast[] = { 4, 2, 1, 1, 1, 1, 1 };
	static const double want_detail[] = { 240, 240, 240, 120, 60, 30, 30 };
	struct gw_pace p;

	(void)state;
	gw_pace_init(&p, 1, 30);
	for (int i = 0; i < 20; i++)
		(void)gw_pace_update(&p, OVER, BUDGET);
	assert_true(p.fast == 8 && p.detail == 240);
	/* Between half and the whole budget: hold where we are. */
	assert_int_equal(gw_pace_update(&p, BETWEEN, BUDGET), 0);
	assert_true(p.fast == 8 && p.detail == 240);
	for (size_t i = 0; i < sizeof(want_fast) / sizeof(want_fast[0]); i++) {
		int changed = gw_pace_update(&p, UNDER, BUDGET);

		if (p.fast != want_fast[i] || p.detail != want_detail[i])
			fail_msg("step %zu: fast %g detail %g, want %g %g", i,
				 p.fast, p.detail, want_fast[i],
				 want_detail[i]);
		assert_int_equal(changed, i < 6);
	}
}

static void never_below_base(void **state)
{
	struct gw_pace p;

	(void)state;
	/* Intervals that are not powers of two apart from 8x. */
	gw_pace_init(&p, 0.3, 7);
	for (int i = 0; i < 4; i++)
		(void)gw_pace_update(&p, OVER, BUDGET);
	for (int i = 0; i < 50; i++) {
		(void)gw_pace_update(&p, UNDER, BUDGET);
		assert_true(p.fast >= 0.3);
		assert_true(p.detail >= 7);
	}
	assert_true(p.fast == 0.3 && p.detail == 7);
	/* Already at the base: under budget is a no-op. */
	assert_int_equal(gw_pace_update(&p, 0, BUDGET), 0);
}

static void detail_never_faster_than_fast(void **state)
{
	/* Valid configurations: detail >= fast, including equal. */
	static const double cfg[][2] = {
		{ 1, 30 }, { 1, 1 },   { 0.1, 1 },
		{ 2, 3 },  { 5, 5.5 }, { 60, 60 },
	};
	/* A load pattern that goes up, down, and oscillates. */
	static const double load[] = {
		9,   9, 9, 9, 9, 9, 9, 0, 0, 9, 0, 9, 9,
		0.7, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
		struct gw_pace p;

		gw_pace_init(&p, cfg[c][0], cfg[c][1]);
		for (size_t i = 0; i < sizeof(load) / sizeof(load[0]); i++) {
			(void)gw_pace_update(&p, load[i] * BUDGET, BUDGET);
			if (p.detail < p.fast || p.fast < cfg[c][0] ||
			    p.detail < cfg[c][1] ||
			    p.fast > cfg[c][0] * GW_PACE_MAX_STRETCH ||
			    p.detail > cfg[c][1] * GW_PACE_MAX_STRETCH)
				fail_msg("cfg %g/%g step %zu: fast %g "
					 "detail %g",
					 cfg[c][0], cfg[c][1], i, p.fast,
					 p.detail);
		}
		/* Long enough under budget: back to the configured pace. */
		assert_true(p.fast == cfg[c][0] && p.detail == cfg[c][1]);
	}
}

static void window_bounds(void **state)
{
	struct gw_pace p;

	(void)state;
	gw_pace_init(&p, 1, 30);
	assert_true(gw_pace_window(&p) == 10);
	gw_pace_init(&p, 0.1, 1);
	assert_true(gw_pace_window(&p) == 2);
	gw_pace_init(&p, 60, 600);
	assert_true(gw_pace_window(&p) == 30);
	/* The window follows the configured pace, not the stretched one. */
	gw_pace_init(&p, 1, 30);
	for (int i = 0; i < 10; i++)
		(void)gw_pace_update(&p, OVER, BUDGET);
	assert_true(gw_pace_window(&p) == 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_uses_configured),
		cmocka_unit_test(over_budget_detail_first_then_fast),
		cmocka_unit_test(stretch_caps_at_8x),
		cmocka_unit_test(restores_fast_first),
		cmocka_unit_test(never_below_base),
		cmocka_unit_test(detail_never_faster_than_fast),
		cmocka_unit_test(window_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
