/* SPDX-License-Identifier: MIT */
/*
 * Values as text (gw_promql_fmt_value, gw_promql_fmt_scalar and, for alert
 * templates, gw_promql_fmt_text): the exact text Prometheus 2.42 writes for
 * 600 doubles (promql-values.txt, read from a real Prometheus by
 * promql-values.py), and, on many random doubles, text that reads back as
 * the same double and is the shortest that does.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "query/promql.h"

static double from_bits(uint64_t b)
{
	double v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

static char *text(int (*f)(struct gw_buf *, double), double v, struct gw_buf *b)
{
	gw_buf_reset(b);
	assert_int_equal(f(b, v), 0);
	return b->p;
}

static void as_prometheus_writes_them(void **state)
{
	char line[1024], want_v[400], want_s[400];
	struct gw_buf b;
	unsigned long long bits;
	size_t n = 0;
	FILE *f = fopen(PROMQL_VALUES, "r");

	(void)state;
	assert_non_null(f);
	gw_buf_init(&b, 4096);
	while (fgets(line, sizeof(line), f)) {
		double v;

		if (line[0] == '#')
			continue;
		assert_int_equal(
			sscanf(line, "%llx %399s %399s", &bits, want_v, want_s),
			3);
		v = from_bits(bits);
		if (strcmp(text(gw_promql_fmt_value, v, &b), want_v) != 0)
			fail_msg("sample %.17g: got %s, Prometheus %s", v, b.p,
				 want_v);
		if (strcmp(text(gw_promql_fmt_scalar, v, &b), want_s) != 0)
			fail_msg("scalar %.17g: got %s, Prometheus %s", v, b.p,
				 want_s);
		n++;
	}
	fclose(f);
	gw_buf_release(&b);
	assert_int_equal(n, 600);
}

/* The number of significant digits of a decimal text. */
static int digits(const char *s)
{
	int n = 0, lead = 1, zeros = 0;

	for (; *s && *s != 'e'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (*s == '0' && lead)
			continue;
		lead = 0;
		if (*s == '0') {
			zeros++;
			continue;
		}
		n += zeros + 1;
		zeros = 0;
	}
	return n ? n : 1;
}

/* Whether some decimal of nd significant digits reads back as v (> 0):
 * the nearest one, or its neighbour on either side. */
static bool shorter_reads_back(double v, int nd)
{
	char e[64], c[64];
	unsigned long long m = 0;
	const char *p;
	int x;

	snprintf(e, sizeof(e), "%.*e", nd - 1, v);
	for (p = e; *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			m = m * 10 + (unsigned long long)(*p - '0');
	x = atoi(p + 1) - (nd - 1);
	for (int d = -1; d <= 1; d++) {
		snprintf(c, sizeof(c), "%llue%d", m + (unsigned long long)d, x);
		if (strtod(c, NULL) == v)
			return true;
	}
	return false;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void shortest_round_trip(void **state)
{
	struct gw_buf b;
	size_t checked = 0;

	(void)state;
	gw_buf_init(&b, 4096);
	for (int i = 0; i < 50000; i++) {
		double v = i & 1 ? from_bits(next())
				 : (double)(next() >> 11) / 9007199254740992.0 *
					   pow(10, (int)(next() % 40) - 20);
		double a = fabs(v);
		char *s;

		if (!isfinite(v))
			continue;
		s = text(gw_promql_fmt_value, v, &b);
		if (strtod(s, NULL) != v ||
		    signbit(strtod(s, NULL)) != signbit(v))
			fail_msg("%a writes as %s, which reads as %a", v, s,
				 strtod(s, NULL));
		/* 'e' exactly outside [1e-6, 1e21), as Prometheus. */
		if ((strchr(s, 'e') != NULL) !=
		    (a != 0 && (a < 1e-6 || a >= 1e21)))
			fail_msg("%a writes as %s", v, s);
		if (digits(s) > 1 && shorter_reads_back(a, digits(s) - 1))
			fail_msg("%a writes as %s: %d digits would do", v, s,
				 digits(s) - 1);
		s = text(gw_promql_fmt_scalar, v, &b);
		if (strtod(s, NULL) != v || strchr(s, 'e'))
			fail_msg("scalar %a writes as %s", v, s);
		/* Go's %v (alert templates): 'e' outside [1e-4, 1e6). */
		s = text(gw_promql_fmt_text, v, &b);
		if (strtod(s, NULL) != v ||
		    (strchr(s, 'e') != NULL) !=
			    (a != 0 && (a < 1e-4 || a >= 1e6)))
			fail_msg("%a as text is %s", v, s);
		checked++;
	}
	assert_true(checked > 49000);
	gw_buf_release(&b);
}

static void specials_and_full_buffers(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 4096);
	assert_string_equal(text(gw_promql_fmt_value, NAN, &b), "NaN");
	assert_string_equal(text(gw_promql_fmt_value, INFINITY, &b), "+Inf");
	assert_string_equal(text(gw_promql_fmt_value, -INFINITY, &b), "-Inf");
	assert_string_equal(text(gw_promql_fmt_scalar, -INFINITY, &b), "-Inf");
	gw_buf_release(&b);
	/* A full buffer is an error, not a cut value. */
	gw_buf_init(&b, 4);
	assert_int_equal(gw_promql_fmt_value(&b, 1e-300), -ENOSPC);
	assert_int_equal(gw_promql_fmt_scalar(&b, 12345), -ENOSPC);
	gw_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(as_prometheus_writes_them),
		cmocka_unit_test(shortest_round_trip),
		cmocka_unit_test(specials_and_full_buffers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
