// SPDX-License-Identifier: MIT
/*
 * test_parse.c - strict parsing of numbers, durations, sizes and listen addresses:
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
		"",	"-1",  "+1",  " 1",  "1 ",    "12abc",
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
	assert_int_equal(gw_parse_uint("99999999999999999999999", 0, ~0ULL, &v),
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
	static const char *const bad[] = { "",	  " 1",	 "1 ",	"1.5x",
					   "abc", "1,5", "--1", "." };
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

static void bytes_grammar(void **state)
{
	static const struct {
		const char *s;
		unsigned long long want;
	} ok[] = {
		{ "1KiB", 1024 },	  { "1K", 1024 },
		{ "10GiB", 10ull << 30 }, { "0B", 0 },
		{ "007MiB", 7ull << 20 }, { "16777215TiB", 16777215ull << 40 },
	};
	static const char *const bad[] = {
		"1 GiB", "10gib", "10GB", "10Gi", "GiB10", "1KiBB", "0x10",
		"+1K",	 " 1K",	  "1K ",  "1e3",  "10iB",  "KiB",
	};
	unsigned long long v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 1;
		if (gw_parse_bytes(ok[i].s, &v) != 0 || v != ok[i].want)
			fail_msg("gw_parse_bytes(\"%s\") = %llu", ok[i].s, v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		if (gw_parse_bytes(bad[i], &v) != -EINVAL || v != 42)
			fail_msg("gw_parse_bytes(\"%s\") accepted", bad[i]);
	}
	/* 2^64 bytes does not fit; the unit is applied without wrapping. */
	assert_int_equal(gw_parse_bytes("16777216TiB", &v), -ERANGE);
	assert_int_equal(gw_parse_bytes(ULL_MAX_PLUS_ONE, &v), -ERANGE);
	assert_int_equal(gw_parse_bytes(NULL, &v), -EINVAL);
}

static void duration_units(void **state)
{
	static const struct {
		const char *s;
		double want;
	} ok[] = {
		{ "2", 2 },	 { "0.5", 0.5 },    { "500ms", 0.5 },
		{ "30s", 30 },	 { "1m", 60 },	    { "5m", 300 },
		{ "1h", 3600 },	 { "1.5m", 90 },    { "250ms", 0.25 },
		{ "0s", 0 },	 { "2h", 7200 },    { "1e3ms", 1 },
		{ "1d", 86400 }, { "2w", 1209600 }, { "1y", 31536000 },
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
		"5x",  "ms",   "s",  "m",  "h",	  "",	  "5 s", "5sec",
		"5mm", "1hms", "m5", "5S", "abc", "5ms ", " 5s", "1x",
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

/* ---- gw_parse_prom_duration: the one grammar ---- */

static int prom(const char *s, int64_t *ms, char *msg, size_t msgn)
{
	return gw_parse_prom_duration(s, strlen(s), ms, msg, msgn);
}

static void prom_duration_valid(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} ok[] = {
		{ "0", 0 },
		{ "0s", 0 },
		{ "500ms", 500 },
		{ "90s", 90000 },
		{ "1m30s", 90000 },
		{ "1h30m", 5400000 },
		{ "1d", 86400000 },
		{ "1w", 604800000 },
		{ "1y", 31536000000 },
		{ "2h0m5s", 7205000 },
		{ "1s500ms", 1500 },
		{ "007m", 420000 },
		{ "1y2w3d4h5m6s7ms", 31536000000 + 1209600000 + 259200000 +
					     14400000 + 300000 + 6000 + 7 },
		/* Go's time.Duration holds 292 years and a bit. */
		{ "292y", 292 * 31536000000 },
		{ "9223372036854ms", 9223372036854 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t ms = -1;
		int r = prom(ok[i].s, &ms, NULL, 0);

		if (r != 0 || ms != ok[i].ms)
			fail_msg("gw_parse_prom_duration(\"%s\") = %d, %lld; "
				 "want %lld",
				 ok[i].s, r, (long long)ms,
				 (long long)ok[i].ms);
	}
	/* Only s[0..n) is read: a duration inside a longer text. */
	{
		int64_t ms = -1;

		assert_int_equal(gw_parse_prom_duration("5m]", 2, &ms, NULL, 0),
				 0);
		assert_true(ms == 300000);
	}
}

static void prom_duration_errors(void **state)
{
	static const struct {
		const char *s;
		int err;
		const char *msg;
	} bad[] = {
		{ "", -EINVAL, "empty duration string" },
		{ "5", -EINVAL, "not a valid duration string: \"5\"" },
		{ "1.5h", -EINVAL, "unknown unit \".\" in duration \"1.5h\"" },
		{ "5x", -EINVAL, "unknown unit \"x\" in duration \"5x\"" },
		{ "5M", -EINVAL, "unknown unit \"M\"" },
		{ "5sec", -EINVAL, "unknown unit \"sec\"" },
		/* Units largest first, each once. */
		{ "30s1m", -EINVAL, "not a valid duration string: \"30s1m\"" },
		{ "1m1m", -EINVAL, "not a valid duration string" },
		{ "1ms1s", -EINVAL, "not a valid duration string" },
		{ "h", -EINVAL, "not a valid duration string" },
		{ "m5", -EINVAL, "not a valid duration string" },
		{ "-5m", -EINVAL, "not a valid duration string" },
		{ "+5m", -EINVAL, "not a valid duration string" },
		{ " 5m", -EINVAL, "not a valid duration string" },
		{ "5m ", -EINVAL, "unknown unit \"m \"" },
		{ "1h 30m", -EINVAL, "unknown unit \"h \"" },
		{ "00", -EINVAL, "not a valid duration string" },
		{ "99999999999999999999s", -EINVAL,
		  "not a valid duration string" },
		{ "300y", -ERANGE, "duration out of range" },
		{ "292y25w", -ERANGE, "duration out of range" },
		{ "9223372036855ms", -ERANGE, "duration out of range" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char msg[160] = "";
		int64_t ms = 12345;
		int r = prom(bad[i].s, &ms, msg, sizeof(msg));

		if (r != bad[i].err || ms != 12345 || !strstr(msg, bad[i].msg))
			fail_msg("gw_parse_prom_duration(\"%s\") = %d '%s', "
				 "want %d '%s'",
				 bad[i].s, r, msg, bad[i].err, bad[i].msg);
	}
	/* No message buffer, or a short one, is fine. */
	{
		char tiny[8];
		int64_t ms = 1;

		assert_int_equal(prom("5x", &ms, NULL, 0), -EINVAL);
		assert_int_equal(prom("5x", &ms, tiny, sizeof(tiny)), -EINVAL);
		assert_string_equal(tiny, "unknown");
		assert_int_equal(gw_parse_prom_duration(NULL, 0, &ms, NULL, 0),
				 -EINVAL);
		assert_true(ms == 1);
	}
}

/* A setting takes the same grammar, plus plain seconds. */
static void duration_setting_grammar(void **state)
{
	static const struct {
		const char *s;
		double want;
	} ok[] = {
		{ "1m30s", 90 },     { "1h30m", 5400 },	 { "2h0m5s", 7205 },
		{ "1d12h", 129600 }, { "1w1d", 691200 }, { "1s500ms", 1.5 },
		{ "0", 0 },	     { "90", 90 },	 { "1y", 31536000 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		double d = -1;
		int r = gw_parse_duration(ok[i].s, 0, 1e9, &d);

		if (r != 0 || d != ok[i].want)
			fail_msg("gw_parse_duration(\"%s\") = %d, %g; want %g",
				 ok[i].s, r, d, ok[i].want);
	}
	/* What Prometheus refuses for order or repetition, settings refuse
	 * too; the range applies to the sum. */
	{
		static const char *const bad[] = {
			"30s1m", "1m1m", "1m 30s", "1m30", "1.5m30s", "1m-30s"
		};
		double d = 42;

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (gw_parse_duration(bad[i], 0, 1e9, &d) != -EINVAL)
				fail_msg("gw_parse_duration(\"%s\") accepted",
					 bad[i]);
		assert_int_equal(gw_parse_duration("1h0m1s", 1, 3600, &d),
				 -ERANGE);
		assert_int_equal(gw_parse_duration("300y", 0, 1e300, &d),
				 -ERANGE);
		assert_true(d == 42);
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
		"127.0.0.1",	  /* no port */
		"127.0.0.1:",	  /* empty port */
		"localhost:http", /* not a number */
		"::1",		  /* bare IPv6 */
		"::1:9400",	  /* bare IPv6 with a port */
		"fe80::1:80",
		"[::1]", /* brackets, no port */
		"[::1]9400",
		"[::1:9400", /* unclosed bracket */
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
	assert_int_equal(
		gw_parse_hostport("0.0.0.0:70000", host, sizeof(host), &port),
		-ERANGE);
	assert_int_equal(
		gw_parse_hostport("[::1]:65536", host, sizeof(host), &port),
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
	assert_int_equal(
		gw_parse_hostport("123456789:1", host, sizeof(host), &port), 0);
	assert_string_equal(host, "123456789");
	assert_int_equal(
		gw_parse_hostport("1234567890:1", host, sizeof(host), &port),
		-ERANGE);
	assert_int_equal(
		gw_parse_hostport("[1:2:3:4:56]:1", host, sizeof(host), &port),
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
		cmocka_unit_test(bytes_grammar),
		cmocka_unit_test(duration_units),
		cmocka_unit_test(duration_bad),
		cmocka_unit_test(duration_range_after_unit),
		cmocka_unit_test(prom_duration_valid),
		cmocka_unit_test(prom_duration_errors),
		cmocka_unit_test(duration_setting_grammar),
		cmocka_unit_test(hostport_forms),
		cmocka_unit_test(hostport_bad),
		cmocka_unit_test(hostport_host_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
