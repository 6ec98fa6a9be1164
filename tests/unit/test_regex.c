/* SPDX-License-Identifier: MIT */
/*
 * Regular expressions as Prometheus runs them (common/regex.h).  Every
 * expected answer and message below was read from Prometheus 2.42: the
 * matches through label_replace(), which compiles "^(?:re)$" as a label
 * matcher does, the errors from a selector {a=~"re"}.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/regex.h"

static bool matches(const char *re_text, const char *value, unsigned flags)
{
	struct gw_regex *re;
	char err[GW_REGEX_ERR_MAX];
	bool m;

	if (gw_regex_new(&re, re_text, strlen(re_text), flags, err,
			 sizeof(err)) != 0)
		fail_msg("/%s/ does not compile: %s", re_text, err);
	m = gw_regex_match(re, value, strlen(value));
	gw_regex_free(re);
	return m;
}

static void matches_as_prometheus(void **state)
{
	static const struct {
		const char *re, *value;
		bool match;
	} cases[] = {
		{ "a.b", "a\nb", false }, /* "." is not "\n" (2.x) */
		{ "(?s)a.b", "a\nb", true },
		{ ".*", "x\ny", false },
		{ "(?i)abc", "ABC", true },
		{ "", "", true },
		{ "", "x", false },
		{ "a|b", "ab", false }, /* anchored around the alternation */
		{ "a$", "a\n", false }, /* $ is the end of the text */
		{ "(?m)a$", "a\n", false },
		{ "\\d+", "123", true },
		{ "\\pL+", "\xc3\xa9t\xc3\xa9", true },
		{ "\\Qa.b\\E", "a.b", true },
		{ "\\Qa.b\\E", "axb", false },
		{ "(?U)a+", "aaa", true },
		{ "x*", "", true },
		{ "(?P<n>a)(?P<n>b)", "ab", true }, /* Go allows a name twice */
		{ "((((((((((((((((((((a))))))))))))))))))))", "a", true },
		{ "\\z", "", true },
		{ "\\b", "", false },
		{ "(?i)\xc3\xa9", "\xc3\x89", true },
		{ "\\x41", "A", true },
		{ "\\101", "A", true },
		{ "[\\d]", "5", true },
		{ "\\pN", "5", true },
		/* Invalid UTF-8 in a value: each bad byte reads as U+FFFD. */
		{ ".", "\xff", true },
		{ "\\x{fffd}", "\xff", true },
		{ "[^a]", "\xff", true },
		{ "..", "\xe2\x82", true },
		{ ".", "\xe2\x82", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (unsigned f = 0; f <= GW_REGEX_MATCHER; f++)
			if (matches(cases[i].re, cases[i].value, f) !=
			    cases[i].match)
				fail_msg("/%s/ on \"%s\": want %s", cases[i].re,
					 cases[i].value,
					 cases[i].match ? "a match" : "none");
	}
	/* label_replace() takes what the wrapping makes of "a)|(b": a prefix
	 * or a suffix; a label matcher refuses it (below). */
	assert_true(matches("a)|(b", "ab", 0));
	assert_true(matches("a)|(b", "axx", 0));
	assert_true(matches("a)|(b", "xxb", 0));
	assert_false(matches("a)|(b", "xxa", 0));
}

static void refuses_what_go_refuses(void **state)
{
	static const struct {
		const char *re, *msg;
	} cases[] = {
		{ "\\C", "invalid escape sequence: `\\C`" },
		{ "(?=a)a", "invalid or unsupported Perl syntax: `(?=`" },
		{ "(?<!a)b", "invalid or unsupported Perl syntax: `(?<`" },
		{ "(?<n>a)", "invalid or unsupported Perl syntax: `(?<`" },
		{ "(a)\\1", "invalid escape sequence: `\\1`" },
		{ "a*+", "invalid nested repetition operator: `*+`" },
		{ "a++", "invalid nested repetition operator: `++`" },
		{ "a**", "invalid nested repetition operator: `**`" },
		{ "(", "missing closing ): `^(?:()$`" },
		{ ")", "unexpected ): `^(?:))$`" },
		{ "[a", "missing closing ]: `[a)$`" },
		{ "\\", "missing closing ): `^(?:\\)$`" },
		{ "a{1001}", "invalid repeat count: `{1001}`" },
		{ "a{2,1}", "invalid repeat count: `{2,1}`" },
		{ "(a{1000}){1000}", "invalid repeat count: `{1000}`" },
		{ "[z-a]", "invalid character class range: `z-a`" },
		{ "[[:foo:]]", "invalid character class range: `[:foo:]`" },
		{ "\\p{Foo}", "invalid character class range: `\\p{Foo}`" },
		{ "*", "missing argument to repetition operator: `*`" },
		{ "\\8", "invalid escape sequence: `\\8`" },
		{ "\\Z", "invalid escape sequence: `\\Z`" },
		{ "(?P<>a)", "invalid named capture: `(?P<>`" },
		{ "\xff", "invalid UTF-8: `\xff)$`" },
		{ "a)|(b", "unexpected ): `a)|(b`" }, /* the pattern alone */
	};
	char err[GW_REGEX_ERR_MAX], want[GW_REGEX_ERR_MAX];
	struct gw_regex *re;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = gw_regex_new(&re, cases[i].re, strlen(cases[i].re),
				      GW_REGEX_MATCHER, err, sizeof(err));

		if (rc != -EINVAL)
			fail_msg("/%s/ compiles (%d)", cases[i].re, rc);
		assert_null(re);
		snprintf(want, sizeof(want), "error parsing regexp: %s",
			 cases[i].msg);
		if (strcmp(err, want) != 0)
			fail_msg("/%s/: got\n  %s\nwant\n  %s", cases[i].re,
				 err, want);
	}
}

/* A pattern that makes a backtracking engine give up (or take forever)
 * still answers, and answers right. */
static void linear_time(void **state)
{
	char text[4097];
	struct gw_regex *re;
	const char *p = "(a|a)*(a|a)*(a|a)*b";

	(void)state;
	memset(text, 'a', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	assert_int_equal(
		gw_regex_new(&re, p, strlen(p), GW_REGEX_MATCHER, NULL, 0), 0);
	assert_false(gw_regex_match(re, text, strlen(text)));
	text[sizeof(text) - 2] = 'b';
	assert_true(gw_regex_match(re, text, strlen(text)));
	gw_regex_free(re);
	p = "(x+x+)+y";
	assert_int_equal(
		gw_regex_new(&re, p, strlen(p), GW_REGEX_MATCHER, NULL, 0), 0);
	memset(text, 'x', sizeof(text) - 1);
	assert_false(gw_regex_match(re, text, strlen(text)));
	gw_regex_free(re);
}

static void captures(void **state)
{
	struct gw_regex_span g[5];
	struct gw_regex *re;
	const char *p = "(?P<host>[^:]+):(\\d+)?(x)?(?P<host>.*)";
	const char *s = "node\xff:9100";

	(void)state;
	assert_int_equal(gw_regex_new(&re, p, strlen(p), 0, NULL, 0), 0);
	assert_int_equal(gw_regex_groups(re), 4);
	assert_int_equal(gw_regex_group_index(re, "host"), 1);
	assert_int_equal(gw_regex_group_index(re, "port"), -1);
	assert_int_equal(gw_regex_match_groups(re, s, strlen(s), g, 5), 1);
	/* Offsets are in the text as given, the invalid byte included. */
	assert_int_equal(g[0].start, 0);
	assert_int_equal(g[0].end, 10);
	assert_int_equal(g[1].start, 0);
	assert_int_equal(g[1].end, 5);
	assert_int_equal(g[2].start, 6);
	assert_int_equal(g[2].end, 10);
	assert_int_equal(g[3].start, -1); /* took no part */
	assert_int_equal(g[4].start, 10);
	assert_int_equal(g[4].end, 10);
	assert_int_equal(gw_regex_match_groups(re, "nocolon", 7, g, 5), 0);
	assert_int_equal(g[0].start, -1);
	gw_regex_free(re);
	gw_regex_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matches_as_prometheus),
		cmocka_unit_test(refuses_what_go_refuses),
		cmocka_unit_test(linear_time),
		cmocka_unit_test(captures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
