// SPDX-License-Identifier: MIT
/*
 * test_parse.c - strict parsing of numbers, durations and listen addresses:
 * what a user can write in a flag or config value, and what is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/parse.h"

#define ULL_MAX_PLUS_ONE "18446744073709551616"

/* ---- gw_parse_uint ---- */

static void uint_valid(void **state)
{
	unsigned long long v = 0;

	(void)state;
	assert_int_equal(gw_parse_uint("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(gw_parse_uint("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(gw_parse_uint("007", 0, 100, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(gw_parse_uint("18446744073709551615", 0, ~0ULL, &v),
			 0);
	assert_true(v == ~0ULL);
	/* The bounds are inclusive. */
	assert_int_equal(gw_parse_uint("5", 5, 5, &v), 0);
	assert_int_equal(v, 5);
}

static void uint_invalid_leaves_output(void **state)
{
	static const char *const bad[] = {
		"",    "-1",   "+1",  " 1",  "1 ",  "12abc",
		"0x10", "1.5", "1e3", "abc", "1,000", "\t7",
	};
	unsigned long long v = 1234;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = gw_parse_uint(bad[i], 0, ~0ULL, &v);

		if (r != -EINVAL)
			fail_msg("gw_parse_uint(\"%s\") = %d, want -EINVAL",
				 bad[i], r);
		assert_true(v == 1234);
	}
	assert_int_equal(gw_parse_uint(NULL, 0, 10, &v), -EINVAL);
	assert_true(v == 1234);
}

static void uint_range(void **state)
{
	unsigned long long v = 99;

	(void)state;
	assert_int_equal(gw_parse_uint(ULL_MAX_PLUS_ONE, 0, ~0ULL, &v),
			 -ERANGE);
	assert_int_equal(gw_parse_uint("99999999999999999999999", 0, ~0ULL,
				       &v),
			 -ERANGE);
	assert_int_equal(gw_parse_uint("11", 0, 10, &v), -ERANGE);
	assert_int_equal(gw_parse_uint("4", 5, 10, &v), -ERANGE);
	assert_int_equal(gw_parse_uint("65536", 0, 65535, &v), -ERANGE);
	assert_true(v == 99);
}

/* ---- gw_parse_double ---- */

static void double_valid(void **state)
{
	double d = -1;

	(void)state;
	assert_int_equal(gw_parse_double("0.005", 0, 1, &d), 0);
	assert_true(d == 0.005);
	assert_int_equal(gw_parse_double("1", 0, 1, &d), 0);
	assert_true(d == 1.0);
	assert_int_equal(gw_parse_double("-2.5", -10, 10, &d), 0);
	assert_true(d == -2.5);
	/* Hex floats are not numbers a user means. */
	assert_int_equal(gw_parse_double("0x10", 0, 100, &d), -EINVAL);
	assert_int_equal(gw_parse_double("0x1p3", 0, 100, &d), -EINVAL);
	assert_int_equal(gw_parse_duration("0x10s", 0, 100, &d), -EINVAL);
	assert_int_equal(gw_parse_double("1e-3", 0, 1, &d), 0);
	assert_true(d == 0.001);
	assert_int_equal(gw_parse_double(".5", 0, 1, &d), 0);
	assert_true(d == 0.5);
}

static void double_invalid(void **state)
{
	static const char *const bad[] = { "", " 1", "1 ", "1.5x", "abc",
					   "1,5", "--1", "." };
	double d = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = gw_parse_double(bad[i], -100, 100, &d);

		if (r != -EINVAL)
			fail_msg("gw_parse_double(\"%s\") = %d, want -EINVAL",
				 bad[i], r);
	}
	assert_int_equal(gw_parse_double(NULL, 0, 1, &d), -EINVAL);
	/* Out of range, overflowing or not a number at all. */
	assert_int_equal(gw_parse_double("1.0001", 0, 1, &d), -ERANGE);
	assert_int_equal(gw_parse_double("-0.1", 0, 1, &d), -ERANGE);
	assert_int_equal(gw_parse_double("1e400", -1e300, 1e300, &d), -ERANGE);
	assert_int_equal(gw_parse_double("inf", -1e300, 1e300, &d), -ERANGE);
	assert_int_equal(gw_parse_double("nan", -1e300, 1e300, &d), -ERANGE);
	assert_true(d == 7);
}

/* ---- gw_parse_duration ---- */

static void bytes_units(void **state)
{
	unsigned long long v;

	(void)state;
	assert_int_equal(gw_parse_bytes("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(gw_parse_bytes("512MiB", &v), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(gw_parse_bytes("10G", &v), 0);
	assert_int_equal(v, 10ull << 30);
	assert_int_equal(gw_parse_bytes("2TiB", &v), 0);
	assert_int_equal(v, 2ull << 40);
	assert_int_equal(gw_parse_bytes("100B", &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(gw_parse_bytes("", &v), -EINVAL);
	assert_int_equal(gw_parse_bytes("GiB", &v), -EINVAL);
	assert_int_equal(gw_parse_bytes("1.5G", &v), -EINVAL);
	assert_int_equal(gw_parse_bytes("-1", &v), -EINVAL);
	assert_true(gw_parse_bytes("99999999999TiB", &v) != 0);
}

static void duration_units(void **state)
{
	static const struct {
		const char *s;
		double want;
	} ok[] = {
		{ "2", 2 },       { "0.5", 0.5 },  { "500ms", 0.5 },
		{ "30s", 30 },    { "1m", 60 },    { "5m", 300 },
		{ "1h", 3600 },   { "1.5m", 90 },  { "250ms", 0.25 },
		{ "0s", 0 },      { "2h", 7200 },  { "1e3ms", 1 },   { "1d", 86400 },
		{ "2w", 1209600 }, { "1y", 31536000 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		double d = -1;
		int r = gw_parse_duration(ok[i].s, 0, 1e9, &d);

		if (r != 0 || d != ok[i].want)
			fail_msg("gw_parse_duration(\"%s\") = %d, %g; want %g",
				 ok[i].s, r, d, ok[i].want);
	}
}

static void duration_bad(void **state)
{
	static const char *const bad[] = {
		"5x", "ms", "s", "m", "h", "", "5 s", "5sec", "5mm", "1hms",
		"m5", "5S", "abc", "5ms ", " 5s", "1x",
	};
	double d = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = gw_parse_duration(bad[i], 0, 1e6, &d);

		if (r != -EINVAL)
			fail_msg("gw_parse_duration(\"%s\") = %d, want -EINVAL",
				 bad[i], r);
	}
	assert_int_equal(gw_parse_duration(NULL, 0, 1e6, &d), -EINVAL);
	/* Negative durations are refused, with or without a unit. */
	assert_true(gw_parse_duration("-1", 0, 1e6, &d) < 0);
	assert_true(gw_parse_duration("-1s", 0, 1e6, &d) < 0);
	assert_true(gw_parse_duration("-500ms", 0, 1e6, &d) < 0);
	assert_true(d == 42);
}

static void duration_range_after_unit(void **state)
{
	double d = 42;

	(void)state;
	/* The range applies to seconds, after the unit is applied. */
	assert_int_equal(gw_parse_duration("1h", 0.1, 3600, &d), 0);
	assert_true(d == 3600);
	assert_int_equal(gw_parse_duration("61m", 0.1, 3600, &d), -ERANGE);
	assert_int_equal(gw_parse_duration("50ms", 0.1, 3600, &d), -ERANGE);
	assert_int_equal(gw_parse_duration("100ms", 0.1, 3600, &d), 0);
	assert_true(d == 0.1);
	assert_int_equal(gw_parse_duration("3601", 0.1, 3600, &d), -ERANGE);
	/* A very long number does not overflow the internal copy. */
	{
		char longnum[200];

		memset(longnum, '1', sizeof(longnum) - 3);
		memcpy(longnum + sizeof(longnum) - 3, "ms", 3);
		assert_true(gw_parse_duration(longnum, 0, 1e300, &d) < 0);
	}
}

/* ---- gw_parse_hostport ---- */

static void hostport_forms(void **state)
{
	static const struct {
		const char *s;
		const char *host;
		unsigned int port;
	} ok[] = {
		{ "127.0.0.1:9400", "127.0.0.1", 9400 },
		{ "0.0.0.0:80", "0.0.0.0", 80 },
		{ "localhost:65535", "localhost", 65535 },
		{ "[::1]:9400", "::1", 9400 },
		{ "[fe80::1%eth0]:9400", "fe80::1%eth0", 9400 },
		{ "[::]:1", "::", 1 },
		{ ":9400", "", 9400 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char host[64];
		unsigned int port = 0;
		int r;

		memset(host, 'X', sizeof(host));
		r = gw_parse_hostport(ok[i].s, host, sizeof(host), &port);
		if (r != 0)
			fail_msg("gw_parse_hostport(\"%s\") = %d", ok[i].s, r);
		assert_string_equal(host, ok[i].host);
		assert_int_equal(port, ok[i].port);
	}
}

static void hostport_bad(void **state)
{
	static const char *const bad[] = {
		"127.0.0.1",      /* no port */
		"127.0.0.1:",     /* empty port */
		"localhost:http", /* not a number */
		"::1",            /* bare IPv6 */
		"::1:9400",       /* bare IPv6 with a port */
		"fe80::1:80",
		"[::1]",          /* brackets, no port */
		"[::1]9400",
		"[::1:9400",      /* unclosed bracket */
		"[::1]:",
		"host:-1",
		"host:9400x",
		"host: 9400",
		"",
	};
	char host[64] = "untouched";
	unsigned int port = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = gw_parse_hostport(bad[i], host, sizeof(host), &port);

		if (r == 0)
			fail_msg("gw_parse_hostport(\"%s\") accepted: '%s' %u",
				 bad[i], host, port);
	}
	assert_int_equal(gw_parse_hostport(NULL, host, sizeof(host), &port),
			 -EINVAL);
	/* Ports beyond 65535 are out of range, not silently wrapped. */
	assert_int_equal(gw_parse_hostport("0.0.0.0:70000", host, sizeof(host),
					   &port),
			 -ERANGE);
	assert_int_equal(gw_parse_hostport("[::1]:65536", host, sizeof(host),
					   &port),
			 -ERANGE);
	assert_int_equal(gw_parse_hostport("h:" ULL_MAX_PLUS_ONE, host,
					   sizeof(host), &port),
			 -ERANGE);
	assert_string_equal(host, "untouched");
	assert_int_equal(port, 7);
}

static void hostport_host_buffer(void **state)
{
	char host[10];
	unsigned int port = 0;

	(void)state;
	/* "123456789" plus NUL fits exactly; one more character does not. */
	assert_int_equal(gw_parse_hostport("123456789:1", host, sizeof(host),
					   &port),
			 0);
	assert_string_equal(host, "123456789");
	assert_int_equal(gw_parse_hostport("1234567890:1", host, sizeof(host),
					   &port),
			 -ERANGE);
	assert_int_equal(gw_parse_hostport("[1:2:3:4:56]:1", host, sizeof(host),
					   &port),
			 -ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uint_valid),
		cmocka_unit_test(uint_invalid_leaves_output),
		cmocka_unit_test(uint_range),
		cmocka_unit_test(double_valid),
		cmocka_unit_test(double_invalid),
		cmocka_unit_test(bytes_units),
		cmocka_unit_test(duration_units),
		cmocka_unit_test(duration_bad),
		cmocka_unit_test(duration_range_after_unit),
		cmocka_unit_test(hostport_forms),
		cmocka_unit_test(hostport_bad),
		cmocka_unit_test(hostport_host_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
