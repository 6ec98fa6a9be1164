/* SPDX-License-Identifier: MIT */
/*
 * test_kernels.c - the kernel directory (collect/kernels.h): the join of a
 * sampled launch's first argument with the CUPTI layer's kernels, by
 * CUfunction handle or by the host stub's symbol, and its bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collect/kernels.h"
#include "gpuwatch/cupti_ring.h"

#define VECADD "_Z6vecAddPfS_S_i"
#define GEMM   "_Z4gemmILi128EEvPKfS1_Pfiii"

static uint64_t fnv(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The name the profiler's symbolizer gives a host stub (demangled when
 * the build demangles, as the directory does). */
static const char *display(const char *mangled, char *buf, size_t len)
{
	struct gw_kernels *k = gw_kernels_new(1);
	double ns;

	gw_kernels_kernel(k, 1, fnv(mangled), mangled, 1, 1);
	gw_kernels_handle(k, 1, GW_CRING_KFUNC_CUFUNCTION, 0x10, fnv(mangled));
	assert_true(gw_kernels_lookup(k, 1, 0x10, NULL, buf, len, &ns));
	gw_kernels_free(k);
	return buf;
}

static void join_by_handle_and_by_symbol(void **state)
{
	struct gw_kernels *k = gw_kernels_new(8);
	char name[GW_KERNELS_NAME_MAX], vec[GW_KERNELS_NAME_MAX];
	double ns = -1;

	(void)state;
	assert_non_null(k);
	/* 100 launches of gemm, 2 ms each; 1000 of vecAdd, 10 us each. */
	gw_kernels_kernel(k, 42, fnv(GEMM), GEMM, 100, 100 * 2e6);
	gw_kernels_kernel(k, 42, fnv(VECADD), VECADD, 1000, 1000 * 1e4);
	gw_kernels_handle(k, 42, GW_CRING_KFUNC_CUFUNCTION, 0x7f00, fnv(GEMM));

	/* cuLaunchKernel(f = 0x7f00): gemm, 2 ms a launch. */
	assert_true(gw_kernels_lookup(k, 42, 0x7f00, NULL, name, sizeof(name),
				      &ns));
	assert_true(strstr(name, "gemm") != NULL);
	assert_true(ns > 1.99e6 && ns < 2.01e6);

	/* cudaLaunchKernel(func = the host stub): by its symbol. */
	display(VECADD, vec, sizeof(vec));
	assert_true(
		gw_kernels_lookup(k, 42, 0x5555, vec, name, sizeof(name), &ns));
	assert_string_equal(name, vec);
	assert_true(ns > 0.99e4 && ns < 1.01e4);

	/* Another process, an unknown handle, an unknown symbol: none. */
	assert_false(
		gw_kernels_lookup(k, 43, 0x7f00, vec, name, sizeof(name), &ns));
	assert_false(gw_kernels_lookup(k, 42, 0x7f08, NULL, name, sizeof(name),
				       &ns));
	assert_false(
		gw_kernels_lookup(k, 42, 0, "main", name, sizeof(name), &ns));
	assert_true(gw_kernels_known(k, 42));
	assert_false(gw_kernels_known(k, 43));

	/* Totals grow: the mean follows. */
	gw_kernels_kernel(k, 42, fnv(GEMM), GEMM, 200, 100 * 2e6 + 100 * 4e6);
	assert_true(gw_kernels_lookup(k, 42, 0x7f00, NULL, name, sizeof(name),
				      &ns));
	assert_true(ns > 2.99e6 && ns < 3.01e6);

	/* A handle reused for another kernel (module reloaded). */
	gw_kernels_handle(k, 42, GW_CRING_KFUNC_CUFUNCTION, 0x7f00,
			  fnv(VECADD));
	assert_true(gw_kernels_lookup(k, 42, 0x7f00, NULL, name, sizeof(name),
				      &ns));
	assert_string_equal(name, vec);

	/* A handle whose kernel has no record yet: unknown. */
	gw_kernels_handle(k, 42, GW_CRING_KFUNC_CUFUNCTION, 0x9000, 12345);
	assert_false(gw_kernels_lookup(k, 42, 0x9000, NULL, name, sizeof(name),
				       &ns));

	/* The process exits. */
	gw_kernels_forget(k, 42);
	assert_false(gw_kernels_known(k, 42));
	assert_false(gw_kernels_lookup(k, 42, 0x7f00, NULL, name, sizeof(name),
				       &ns));
	gw_kernels_free(k);
	gw_kernels_free(NULL);
}

static void bounded(void **state)
{
	struct gw_kernels *k = gw_kernels_new(2);
	struct gw_kernels_stats st;
	char name[64];
	double ns;

	(void)state;
	/* Three processes in a table of two: the one updated longest ago
	 * leaves. */
	gw_kernels_kernel(k, 1, 1, "_Z1av", 1, 10);
	gw_kernels_kernel(k, 2, 1, "_Z1av", 1, 10);
	gw_kernels_kernel(k, 1, 2, "_Z1bv", 1, 10);
	gw_kernels_kernel(k, 3, 1, "_Z1av", 1, 10);
	assert_true(gw_kernels_known(k, 1));
	assert_false(gw_kernels_known(k, 2));
	assert_true(gw_kernels_known(k, 3));
	/* Per process, GW_KERNELS_MAX kernels and handles, then refused. */
	for (unsigned int i = 0; i < GW_KERNELS_MAX + 5; i++) {
		char mangled[32];

		snprintf(mangled, sizeof(mangled), "_Z1k%uv", i);
		gw_kernels_kernel(k, 3, 100 + i, mangled, 1, 1);
		gw_kernels_handle(k, 3, GW_CRING_KFUNC_CUFUNCTION, 0x1000 + i,
				  100 + i);
	}
	gw_kernels_stats(k, &st);
	assert_int_equal(st.procs, 2);
	assert_int_equal(st.refused, 6 + 5);
	assert_true(
		gw_kernels_lookup(k, 3, 0x1000, NULL, name, sizeof(name), &ns));
	/* A long name is cut to the buffer, terminated. */
	assert_true(strlen(name) < sizeof(name));
	gw_kernels_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(join_by_handle_and_by_symbol),
		cmocka_unit_test(bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
