// SPDX-License-Identifier: MIT
/*
 * test_promql.c - the PromQL parser: what a query means (its canonical,
 * fully parenthesised form and its static type), and what a user is told,
 * and where, when a query is wrong.  Expected messages and positions are
 * Prometheus' for the same input unless the construct is outside the
 * subset.
 */
#include <errno.h>
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

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char *format(const struct gw_pq_node *n)
{
	struct gw_buf b;
	size_t len;

	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_promql_format(n, &b), 0);
	return gw_buf_detach(&b, &len);
}

/* Parses q (which must succeed) and returns its canonical form. */
static char *canon(const char *q)
{
	struct gw_promql_error e;
	struct gw_pq_node *n = NULL;
	char *s;
	int r = gw_promql_parse(q, &n, &e);

	if (r)
		fail_msg("parse(%s) = %d: %s", q, r, e.msg);
	s = format(n);
	gw_promql_free(n);
	return s;
}

static const struct {
	const char *q, *want;
} valid[] = {
	/* literals */
	{ "1", "1" },
	{ "1.5e3", "1500" },
	{ ".5", "0.5" },
	{ "5.", "5" },
	{ "0x1f", "31" },
	{ "0755", "493" },
	{ "5e-3", "0.005" },
	{ "+Inf", "Inf" },
	{ "-inf", "(-Inf)" },
	{ "NaN", "NaN" },
	{ "nAn", "NaN" },
	{ "-1", "(-1)" },
	{ "- - 1", "1" },
	{ "\"a\\\"b\\n\\t\\\\\"", "\"a\\\"b\\n\\x09\\\\\"" },
	{ "'it\\'s'", "\"it's\"" },
	{ "`raw\\n`", "\"raw\\\\n\"" },
	{ "\"\\x41\\101\\u00e9\\U0001F600\"",
	  "\"AA\\xc3\\xa9\\xf0\\x9f\\x98\\x80\"" },
	/* precedence and associativity */
	{ "1 - 2 - 3", "((1 - 2) - 3)" },
	{ "2 ^ 3 ^ 2", "(2 ^ (3 ^ 2))" },
	{ "-2 ^ 2", "(-(2 ^ 2))" },
	{ "-1 * 2", "((-1) * 2)" },
	{ "-1^-2", "(-(1 ^ (-2)))" },
	{ "+1 + -2 * 1", "(1 + ((-2) * 1))" },
	{ "1 + 2 / (3 * 1)", "(1 + (2 / (3 * 1)))" },
	{ "1 < bool 2 - 1 * 2", "(1 < bool (2 - (1 * 2)))" },
	{ "2 * 3 % 4 / 5", "(((2 * 3) % 4) / 5)" },
	{ "a > b + c * d ^ e", "(a > (b + (c * (d ^ e))))" },
	{ "-a", "(-a)" },
	{ "+a", "a" },
	{ "-a offset 5m", "(-a offset 5m)" },
	{ "(((a)))", "a" },
	{ "1 == bool 1", "(1 == bool 1)" },
	{ "1 != bool 1", "(1 != bool 1)" },
	{ "1 >= bool 1", "(1 >= bool 1)" },
	{ "1 <= bool 1", "(1 <= bool 1)" },
	{ "foo == 1", "(foo == 1)" },
	{ "foo > bool 1", "(foo > bool 1)" },
	{ "2.5 / bar", "(2.5 / bar)" },
	/* selectors */
	{ "foo", "foo" },
	{ "job:rate5m:sum", "job:rate5m:sum" },
	{ ":weird", ":weird" },
	{ "min", "min" },
	{ "foo * sum", "(foo * sum)" },
	{ "sum(sum)", "sum(sum)" },
	{ "by + offset", "(by + offset)" },
	{ "offset offset 5m", "offset offset 5m" },
	{ "foo{a=\"b\", c!=\"d\", e=~\"f.*\", g!~\"h\",}",
	  "foo{a=\"b\", c!=\"d\", e=~\"f.*\", g!~\"h\"}" },
	{ "{__name__=~\"gpu_.*\"}", "{__name__=~\"gpu_.*\"}" },
	{ "{__name__=\"a\", __name__=\"b\"}",
	  "{__name__=\"a\", __name__=\"b\"}" },
	{ "foo{}", "foo" },
	{ "foo{by=\"x\", sum='y'}", "foo{by=\"x\", sum=\"y\"}" },
	{ "foo{a=`b\\c`}", "foo{a=\"b\\\\c\"}" },
	{ "foo[5m]", "foo[5m]" },
	{ "foo [ 90s ]", "foo[1m30s]" },
	{ "foo[1h30m]", "foo[1h30m]" },
	{ "foo[1000ms]", "foo[1s]" },
	{ "foo[1y]", "foo[1y]" },
	{ "foo[2w]", "foo[2w]" },
	{ "foo[14d]", "foo[2w]" },
	{ "foo[8d]", "foo[8d]" },
	{ "foo[5]", "foo[5s]" },
	{ "foo[1.5]", "foo[1s500ms]" },
	{ "foo offset 5m", "foo offset 5m" },
	{ "foo OFFSET -7m", "foo offset -7m" },
	{ "foo offset 1h30m", "foo offset 1h30m" },
	{ "foo offset 1m30ms", "foo offset 1m30ms" },
	{ "test{a=\"b\"}[5y] OFFSET 3d", "test{a=\"b\"}[5y] offset 3d" },
	{ "foo[5m] offset 3600", "foo[5m] offset 1h" },
	/* functions */
	{ "rate(foo[5m])", "rate(foo[5m])" },
	{ "irate(foo[5m])", "irate(foo[5m])" },
	{ "increase(foo[1h])", "increase(foo[1h])" },
	{ "delta(foo[10m])", "delta(foo[10m])" },
	{ "avg_over_time(foo[1h])", "avg_over_time(foo[1h])" },
	{ "min_over_time(foo[1h])", "min_over_time(foo[1h])" },
	{ "max_over_time(foo[1h])", "max_over_time(foo[1h])" },
	{ "sum_over_time(foo[1h])", "sum_over_time(foo[1h])" },
	{ "count_over_time(foo[1h])", "count_over_time(foo[1h])" },
	{ "last_over_time(foo[1h])", "last_over_time(foo[1h])" },
	{ "stddev_over_time(foo[1h])", "stddev_over_time(foo[1h])" },
	{ "quantile_over_time(0.9, foo[1h])",
	  "quantile_over_time(0.9, foo[1h])" },
	{ "abs(foo - 3)", "abs((foo - 3))" },
	{ "time()", "time()" },
	{ "vector(1)", "vector(1)" },
	{ "scalar(foo)", "scalar(foo)" },
	{ "rate((foo[5m]))", "rate(foo[5m])" },
	{ "vector(time() - 60)", "vector((time() - 60))" },
	/* aggregations */
	{ "sum(foo)", "sum(foo)" },
	{ "avg(foo)", "avg(foo)" },
	{ "min(foo)", "min(foo)" },
	{ "max(foo)", "max(foo)" },
	{ "count(foo)", "count(foo)" },
	{ "SUM by (a) (foo)", "sum by (a) (foo)" },
	{ "sum(foo) by (a, b,)", "sum by (a, b) (foo)" },
	{ "sum without (a) (foo)", "sum without (a) (foo)" },
	{ "sum (foo) WITHOUT (a)", "sum without (a) (foo)" },
	{ "sum by () (foo)", "sum by () (foo)" },
	{ "sum without(and, by, avg, count, offset)(foo)",
	  "sum without (and, by, avg, count, offset) (foo)" },
	{ "topk(3, foo)", "topk(3, foo)" },
	{ "bottomk by (gpu) (2, foo)", "bottomk by (gpu) (2, foo)" },
	{ "quantile(0.99, foo) by (node)", "quantile by (node) (0.99, foo)" },
	{ "topk(scalar(bar), foo)", "topk(scalar(bar), foo)" },
	/* vector matching */
	{ "a + on(b) c", "(a + on (b) c)" },
	{ "a + on() c", "(a + on () c)" },
	{ "a / ignoring(b, c,) d", "(a / ignoring (b, c) d)" },
	{ "a > bool on(x) b", "(a > bool on (x) b)" },
	{ "a + on() 1", "(a + 1)" },
	{ "a * on(x) group_left(y, z) b", "(a * on (x) group_left (y, z) b)" },
	{ "a / IGNORING(x) GROUP_RIGHT b",
	  "(a / ignoring (x) group_right () b)" },
	{ "a - on() group_left() b", "(a - on () group_left () b)" },
	{ "a > bool ignoring(x) group_left(y) b",
	  "(a > bool ignoring (x) group_left (y) b)" },
	/* set operators and atan2: Prometheus' precedence (or loosest, then
	 * and/unless, comparisons, + -, * / % atan2, ^) */
	{ "a and b or c", "((a and b) or c)" },
	{ "a or b and c", "(a or (b and c))" },
	{ "a unless b and c", "((a unless b) and c)" },
	{ "a and b unless c", "((a and b) unless c)" },
	{ "a == b and c > d", "((a == b) and (c > d))" },
	{ "a OR on(x) b", "(a or on (x) b)" },
	{ "a unless ignoring(x) b", "(a unless ignoring (x) b)" },
	{ "a + b atan2 c", "(a + (b atan2 c))" },
	{ "a atan2 b * c", "((a atan2 b) * c)" },
	{ "a atan2 b ^ c", "(a atan2 (b ^ c))" },
	{ "-a atan2 b", "((-a) atan2 b)" },
	{ "1 atan2 2", "(1 atan2 2)" },
	{ "and + or", "(and + or)" },
	/* new aggregations */
	{ "stddev by (a) (foo)", "stddev by (a) (foo)" },
	{ "stdvar(foo) without (a)", "stdvar without (a) (foo)" },
	{ "group(foo)", "group(foo)" },
	{ "count_values(\"v\", foo)", "count_values(\"v\", foo)" },
	{ "count_values by (a) ('v', foo)",
	  "count_values by (a) (\"v\", foo)" },
	{ "group + stddev", "(group + stddev)" },
	/* subqueries, @, offset */
	{ "foo[5m:]", "foo[5m:]" },
	{ "foo[5m:1m]", "foo[5m:1m]" },
	{ "foo[90m:30s]", "foo[1h30m:30s]" },
	{ "rate(foo[5m])[1h:5m] offset -1m @ 100",
	  "rate(foo[5m])[1h:5m] @ 100.000 offset -1m" },
	{ "max_over_time(rate(foo[1m])[5m:1m] offset 1m)",
	  "max_over_time(rate(foo[1m])[5m:1m] offset 1m)" },
	{ "min_over_time(max_over_time(foo[5m:])[1h:10m])",
	  "min_over_time(max_over_time(foo[5m:])[1h:10m])" },
	{ "(a + b)[5m:]", "(a + b)[5m:]" },
	{ "sum(foo)[5m:1m] @ 10", "sum(foo)[5m:1m] @ 10.000" },
	{ "rate((foo[5m:1m]))", "rate(foo[5m:1m])" },
	{ "foo @ 1.5", "foo @ 1.500" },
	{ "foo @ -1.5", "foo @ -1.500" },
	{ "foo @ +3", "foo @ 3.000" },
	{ "foo @ 0.0005", "foo @ 0.001" },
	{ "foo offset 5m @ start()", "foo @ start() offset 5m" },
	{ "foo[1m] @ END()", "foo[1m] @ end()" },
	{ "foo[1m] offset -1h @ 1e3", "foo[1m] @ 1000.000 offset -1h" },
	{ "-foo @ 1", "(-foo @ 1.000)" },
	{ "foo @ 1 + bar offset 1m", "(foo @ 1.000 + bar offset 1m)" },
	{ "start @ start()", "start @ start()" },
	/* comments and lines */
	{ "foo # a comment\n + # another\n bar", "(foo + bar)" },
	/* realistic */
	{ "sum by (gpu) (rate(gpuwatch_gpu_energy_joules_total[5m]))",
	  "sum by (gpu) (rate(gpuwatch_gpu_energy_joules_total[5m]))" },
	{ "avg_over_time(gpuwatch_gpu_temperature_celsius{gpu=~\"0|1\"}[1h] "
	  "offset 1d)",
	  "avg_over_time(gpuwatch_gpu_temperature_celsius{gpu=~\"0|1\"}[1h] "
	  "offset 1d)" },
	{ "topk(3, gpuwatch_gpu_power_watts / gpuwatch_gpu_power_limit_watts > "
	  "0.9)",
	  "topk(3, ((gpuwatch_gpu_power_watts / "
	  "gpuwatch_gpu_power_limit_watts) > 0.9))" },
};

static void valid_queries(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(valid); i++) {
		char *got = canon(valid[i].q), *again;

		if (strcmp(got, valid[i].want) != 0)
			fail_msg("%s\n  got  %s\n  want %s", valid[i].q, got,
				 valid[i].want);
		/* The canonical form means the same thing. */
		again = canon(got);
		if (strcmp(got, again) != 0)
			fail_msg("%s: reformatted %s as %s", valid[i].q, got,
				 again);
		free(again);
		free(got);
	}
}

static const struct {
	const char *q, *msg;
} invalid[] = {
	{ "", "1:1: parse error: no expression found in input" },
	{ "# just a comment\n\n",
	  "1:1: parse error: no expression found in input" },
	{ "1+", "1:3: parse error: unexpected end of input" },
	{ ".", "1:1: parse error: unexpected character: '.'" },
	{ "2.5.", "1:1: parse error: bad number or duration syntax: \"2.5.\"" },
	{ "0deadbeef",
	  "1:1: parse error: bad number or duration syntax: \"0deadbeef\"" },
	{ "1 /", "1:4: parse error: unexpected end of input" },
	{ "*1", "1:1: parse error: unexpected <op:*>" },
	{ "(1))", "1:4: parse error: unexpected right parenthesis ')'" },
	{ "((1)", "1:5: parse error: unclosed left parenthesis" },
	{ "(", "1:2: parse error: unclosed left parenthesis" },
	{ "1 == 1", "1:3: parse error: comparisons between scalars must use "
		    "BOOL modifier" },
	{ "1 !~ 1", "1:3: parse error: unexpected character after '!': '~'" },
	{ "1 =~ 1", "1:3: parse error: unexpected character after '=': '~'" },
	{ "-\"string\"",
	  "1:1: parse error: unary expression only allowed on expressions of "
	  "type scalar or instant vector, got \"string\"" },
	{ "-test[5m]",
	  "1:1: parse error: unary expression only allowed on expressions of "
	  "type scalar or instant vector, got \"range vector\"" },
	{ "1 offset 1d",
	  "1:1: parse error: offset modifier must be preceded by an instant "
	  "vector selector or range vector selector or a subquery" },
	{ "foo offset 1s offset 2s",
	  "1:1: parse error: offset may not be set multiple times" },
	{ "a - on(b) ignoring(c) d",
	  "1:11: parse error: unexpected <ignoring>" },
	{ "foo == on(bar) 10", "1:1: parse error: vector matching only allowed "
			       "between instant vectors" },
	{ "foo + bool bar", "1:5: parse error: bool modifier can only be used "
			    "on comparison operators" },
	{ "foo + bool 10", "1:5: parse error: bool modifier can only be used "
			   "on comparison operators" },
	{ "1 + \"a\"", "1:5: parse error: binary expression must contain only "
		       "scalar and instant vector types" },
	{ "foo[5m] * 2", "1:1: parse error: binary expression must contain "
			 "only scalar and instant vector types" },
	/*
	 * Set operators, group_left/right, atan2, subqueries and @: each
	 * message and position as Prometheus 2.42 reports it for the same
	 * query (checked against its /api/v1/query).
	 */
	{ "foo and 1", "1:1: parse error: set operator \"and\" not allowed in "
		       "binary scalar expression" },
	{ "1 or foo", "1:1: parse error: set operator \"or\" not allowed in "
		      "binary scalar expression" },
	{ "foo and bool bar", "1:5: parse error: bool modifier can only be "
			      "used on comparison operators" },
	{ "foo and on(a) group_left bar",
	  "1:1: parse error: no grouping allowed for \"and\" operation" },
	{ "foo or ignoring(a) group_right(b) bar",
	  "1:1: parse error: no grouping allowed for \"or\" operation" },
	{ "foo + on(a) group_left(a) bar",
	  "1:5: parse error: label \"a\" must not occur in ON and GROUP "
	  "clause at once" },
	{ "foo + group_left bar", "1:7: parse error: unexpected <group_left>" },
	{ "foo + ignoring(a) group_left(b) 1",
	  "1:1: parse error: vector matching only allowed between instant "
	  "vectors" },
	{ "foo + on(a) group_left b c",
	  "1:26: parse error: unexpected identifier \"c\"" },
	{ "foo atan2 bool bar", "1:5: parse error: bool modifier can only be "
				"used on comparison operators" },
	{ "1 atan2 \"a\"", "1:9: parse error: binary expression must contain "
			   "only scalar and instant vector types" },
	{ "count_values(1, foo)", "1:14: parse error: expected type string in "
				  "aggregation parameter, got scalar" },
	{ "count_values(foo)", "1:1: parse error: wrong number of arguments "
			       "for aggregate expression provided, expected "
			       "2, got 1" },
	{ "stddev(1, foo)", "1:1: parse error: wrong number of arguments for "
			    "aggregate expression provided, expected 1, got "
			    "2" },
	{ "quantile(\"a\", foo)", "1:10: parse error: expected type scalar in "
				  "aggregation parameter, got string" },
	{ "foo[5m:1m:1m]", "1:10: parse error: unexpected colon ':'" },
	{ "foo[5m:1m", "1:10: parse error: unclosed left bracket" },
	{ "foo[5m 1m]", "1:8: parse error: unexpected duration \"1m\" in "
			"subquery or range, expected \":\" or \"]\"" },
	{ "foo[5m:1m] offset 1m offset 1m",
	  "1:1: parse error: offset may not be set multiple times" },
	{ "foo[5m:1m] @ 1 @ 2",
	  "1:1: parse error: @ <timestamp> may not be set multiple times" },
	{ "foo @ start() @ end()",
	  "1:1: parse error: @ <timestamp> may not be set multiple times" },
	{ "foo @ 1 offset 1m @ 2",
	  "1:1: parse error: @ <timestamp> may not be set multiple times" },
	{ "foo @ 1 [5m]",
	  "1:9: parse error: no @ modifiers allowed before range" },
	{ "foo offset 1m [5m]",
	  "1:15: parse error: no offset modifiers allowed before range" },
	{ "foo[5m:][1m:]", "1:1: parse error: subquery is only allowed on "
			   "instant vector, got matrix instead" },
	{ "1[5m:]", "1:1: parse error: subquery is only allowed on instant "
		    "vector, got scalar instead" },
	{ "sum(foo) @ 1", "1:1: parse error: @ modifier must be preceded by an "
			  "instant vector selector or range vector selector "
			  "or a subquery" },
	{ "(foo) @ 1", "1:1: parse error: @ modifier must be preceded by an "
		       "instant vector selector or range vector selector or a "
		       "subquery" },
	{ "foo @", "1:6: parse error: unexpected end of input in @, expected "
		   "timestamp" },
	{ "foo @ start", "1:12: parse error: unexpected end of input in @, "
			 "expected timestamp" },
	{ "foo @ start(", "1:13: parse error: unclosed left parenthesis" },
	{ "foo @ bar()",
	  "1:7: parse error: unexpected identifier \"bar\" in @, "
	  "expected timestamp" },
	{ "foo @ 5m", "1:7: parse error: unexpected duration \"5m\" in @, "
		      "expected timestamp" },
	{ "foo @ Inf", "1:1: parse error: timestamp out of bounds for @ "
		       "modifier: +Inf" },
	{ "foo @ NaN", "1:1: parse error: timestamp out of bounds for @ "
		       "modifier: NaN" },
	{ "foo @ 1e20", "1:1: parse error: timestamp out of bounds for @ "
			"modifier: 100000000000000000000.000000" },
	{ "foo[5m:1m] + 1", "1:1: parse error: binary expression must contain "
			    "only scalar and instant vector types" },
	{ "-foo[5m:]", "1:1: parse error: unary expression only allowed on "
		       "expressions of type scalar or instant vector, got "
		       "\"range vector\"" },
	/* outside the subset */
	{ "limitk(1, foo)",
	  "1:1: parse error: aggregation \"limitk\" is not supported" },
	{ "histogram_count(foo)",
	  "1:1: parse error: function \"histogram_count\" is not supported" },
	/* selectors */
	{ "{", "1:2: parse error: unexpected end of input inside braces" },
	{ "}", "1:1: parse error: unexpected character: '}'" },
	{ "some{", "1:6: parse error: unexpected end of input inside braces" },
	{ "some}", "1:5: parse error: unexpected character: '}'" },
	{ "some_metric{a=b}", "1:15: parse error: unexpected identifier \"b\" "
			      "in label matching, expected string" },
	{ "some_metric{a:b=\"b\"}",
	  "1:14: parse error: unexpected character inside braces: ':'" },
	{ "foo{a*\"b\"}",
	  "1:6: parse error: unexpected character inside braces: '*'" },
	{ "foo{a>=\"b\"}",
	  "1:6: parse error: unexpected character inside braces: '>'" },
	{ "some_metric{a=\"\xff\"}", "1:15: parse error: invalid UTF-8 rune" },
	{ "foo{gibberish}", "1:14: parse error: unexpected \"}\" in label "
			    "matching, expected label matching operator" },
	{ "foo{1}",
	  "1:5: parse error: unexpected character inside braces: '1'" },
	{ "{}", "1:1: parse error: vector selector must contain at least one "
		"non-empty matcher" },
	{ "{x=\"\"}", "1:1: parse error: vector selector must contain at least "
		      "one non-empty matcher" },
	{ "{x=~\".*\"}", "1:1: parse error: vector selector must contain at "
			 "least one non-empty matcher" },
	{ "{x!~\".+\"}", "1:1: parse error: vector selector must contain at "
			 "least one non-empty matcher" },
	{ "{x!=\"a\"}", "1:1: parse error: vector selector must contain at "
			"least one non-empty matcher" },
	{ "foo{__name__=\"bar\"}", "1:1: parse error: metric name must not be "
				   "set twice: \"foo\" or \"bar\"" },
	{ "foo{__name__= =}", "1:15: parse error: unexpected \"=\" in label "
			      "matching, expected string" },
	{ "foo{,}", "1:5: parse error: unexpected \",\" in label matching, "
		    "expected identifier or \"}\"" },
	{ "foo{__name__=\"bar\" lol}",
	  "1:20: parse error: unexpected identifier \"lol\" in label matching, "
	  "expected \",\" or \"}\"" },
	{ "foo{a=~\"(\"}", "1:5: parse error: error parsing regexp: " },
	/* ranges, offsets, durations */
	{ "foo[5mm]",
	  "1:5: parse error: bad number or duration syntax: \"5mm\"" },
	{ "foo[5m1]",
	  "1:5: parse error: bad number or duration syntax: \"5m1\"" },
	{ "foo[5y1hs]",
	  "1:5: parse error: unknown unit \"hs\" in duration \"5y1hs\"" },
	{ "foo[5m1h]",
	  "1:5: parse error: not a valid duration string: \"5m1h\"" },
	{ "foo[5m1m]",
	  "1:5: parse error: not a valid duration string: \"5m1m\"" },
	{ "foo[0m]", "1:5: parse error: duration must be greater than 0" },
	{ "foo[300y]", "1:5: parse error: duration out of range" },
	{ "foo[1111111111111111]", "1:5: parse error: duration out of range" },
	{ "foo[\"5m\"]", "1:5: parse error: unexpected character in duration "
			 "expression: '\"'" },
	{ "foo[]", "1:5: parse error: unexpected \"]\" in subquery or range "
		   "selector, expected duration" },
	{ "foo[-1]", "1:5: parse error: unexpected character in duration "
		     "expression: '-'" },
	{ "foo[5m", "1:7: parse error: unclosed left bracket" },
	{ "some_metric[5m] OFFSET 1mm",
	  "1:24: parse error: bad number or duration syntax: \"1mm\"" },
	{ "some_metric[5m] OFFSET", "1:23: parse error: unexpected end of "
				    "input in offset, expected duration" },
	{ "some_metric OFFSET 1m[5m]",
	  "1:22: parse error: no offset modifiers allowed before range" },
	{ "foo offset 0s",
	  "1:12: parse error: duration must be greater than 0" },
	{ "(foo + bar)[5m]",
	  "1:12: parse error: ranges only allowed for vector selectors" },
	{ "foo[5m][5m]",
	  "1:8: parse error: ranges only allowed for vector selectors" },
	{ "5m", "1:1: parse error: unexpected duration \"5m\"" },
	/* aggregations */
	{ "sum without(==)(some_metric)",
	  "1:13: parse error: unexpected <op:==> in grouping opts, expected "
	  "label" },
	{ "sum without(,)(some_metric)", "1:13: parse error: unexpected \",\" "
					 "in grouping opts, expected label" },
	{ "sum without(foo,,)(some_metric)",
	  "1:17: parse error: unexpected \",\" in grouping opts, expected "
	  "label" },
	{ "sum by (a:b) (foo)",
	  "1:9: parse error: unexpected metric identifier \"a:b\" in grouping "
	  "opts, expected label" },
	{ "sum some_metric by (test)",
	  "1:5: parse error: unexpected identifier \"some_metric\"" },
	{ "sum (some_metric) by test",
	  "1:22: parse error: unexpected identifier \"test\" in grouping opts, "
	  "expected \"(\"" },
	{ "sum () by (test)",
	  "1:1: parse error: no arguments for aggregate expression provided" },
	{ "MIN keep_common (some_metric)",
	  "1:5: parse error: unexpected identifier \"keep_common\"" },
	{ "MIN (some_metric) keep_common",
	  "1:19: parse error: unexpected identifier \"keep_common\"" },
	{ "sum (some_metric) without (test) by (test)",
	  "1:34: parse error: unexpected <by>" },
	{ "sum without (test) (some_metric) by (test)",
	  "1:34: parse error: unexpected <by>" },
	{ "sum by (a) foo",
	  "1:12: parse error: unexpected identifier \"foo\" in aggregation" },
	{ "topk(some_metric)",
	  "1:1: parse error: wrong number of arguments for aggregate "
	  "expression provided, expected 2, got 1" },
	{ "topk(some_metric,)", "1:17: parse error: trailing commas not "
				"allowed in function call args" },
	{ "topk(some_metric, other_metric)",
	  "1:6: parse error: expected type scalar in aggregation parameter, "
	  "got instant vector" },
	{ "sum(foo, bar)", "1:1: parse error: wrong number of arguments for "
			   "aggregate expression provided, expected 1, got 2" },
	{ "sum(foo[5m])", "1:5: parse error: expected type instant vector in "
			  "aggregation expression, got range vector" },
	{ "sum(1)", "1:5: parse error: expected type instant vector in "
		    "aggregation expression, got scalar" },
	/* functions */
	{ "time(some_metric)", "1:1: parse error: expected 0 argument(s) in "
			       "call to \"time\", got 1" },
	{ "abs()", "1:1: parse error: expected 1 argument(s) in call to "
		   "\"abs\", got 0" },
	{ "abs(1)", "1:5: parse error: expected type instant vector in call to "
		    "function \"abs\", got scalar" },
	{ "non_existent_function_far_bar()",
	  "1:1: parse error: unknown function with name "
	  "\"non_existent_function_far_bar\"" },
	{ "a>b()", "1:3: parse error: unknown function with name \"b\"" },
	{ "rate(some_metric)",
	  "1:6: parse error: expected type range vector in call to function "
	  "\"rate\", got instant vector" },
	{ "rate(avg)", "1:6: parse error: expected type range vector in call "
		       "to function \"rate\", got instant vector" },
	{ "quantile_over_time(foo[5m], 0.5)",
	  "1:20: parse error: expected type scalar in call to function "
	  "\"quantile_over_time\", got range vector" },
	{ "vector(foo)", "1:8: parse error: expected type scalar in call to "
			 "function \"vector\", got instant vector" },
	{ "rate(foo[5m],)", "1:13: parse error: trailing commas not allowed in "
			    "function call args" },
	{ "Rate(foo[5m])",
	  "1:1: parse error: unknown function with name \"Rate\"" },
	/* strings */
	{ "\"\\c\"", "1:1: parse error: unknown escape sequence U+0063 'c'" },
	{ "\"\\x.\"",
	  "1:1: parse error: illegal character U+002E '.' in escape sequence" },
	{ "\"\\", "1:1: parse error: escape sequence not terminated" },
	{ "`\\``", "1:4: parse error: unterminated raw string" },
	{ "\"abc", "1:1: parse error: unterminated quoted string" },
	{ "\"a\nb\"", "1:1: parse error: unterminated quoted string" },
	{ "\"\\'\"", "1:1: parse error: unknown escape sequence U+0027 '''" },
	{ "'\\\"'", "1:1: parse error: unknown escape sequence U+0022 '\"'" },
	{ "\"\\400\"", "1:1: parse error: escape sequence is an invalid "
		       "Unicode code point" },
	{ "\"\\ud800\"", "1:1: parse error: escape sequence is an invalid "
			 "Unicode code point" },
	{ "\"\\x00\"",
	  "1:1: parse error: strings must not contain NUL characters" },
	/* misc tokens; multi-line positions */
	{ "-=", "1:2: parse error: unexpected \"=\"" },
	{ "++-++-+-+-<", "1:11: parse error: unexpected <op:<>" },
	{ "foo bar", "1:5: parse error: unexpected identifier \"bar\"" },
	{ "on", "1:1: parse error: unexpected <on>" },
	{ "foo\n  + \n  bar{",
	  "3:7: parse error: unexpected end of input inside braces" },
	{ "foo\n  and bool\n bar",
	  "2:3: parse error: bool modifier can only be "
	  "used on comparison operators" },
	{ "\"long string literal\" foo",
	  "1:23: parse error: unexpected identifier \"foo\"" },
	{ "1 \"long string literal\"",
	  "1:3: parse error: unexpected string \"\\\"long stri\"..." },
};

static void invalid_queries(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(invalid); i++) {
		struct gw_promql_error e;
		struct gw_pq_node *n = (struct gw_pq_node *)&e;
		int r = gw_promql_parse(invalid[i].q, &n, &e);

		if (r != -EINVAL)
			fail_msg("parse(%s) = %d, want -EINVAL", invalid[i].q,
				 r);
		assert_null(n);
		if (strncmp(e.msg, invalid[i].msg, strlen(invalid[i].msg)) != 0)
			fail_msg("%s\n  got  %s\n  want %s", invalid[i].q,
				 e.msg, invalid[i].msg);
	}
}

/* Every position in the message is the byte offset in e.pos. */
static void error_position(void **state)
{
	struct gw_promql_error e;
	struct gw_pq_node *n;

	(void)state;
	assert_int_equal(gw_promql_parse("foo\n  + \n  bar{", &n, &e), -EINVAL);
	assert_int_equal(e.pos, 15);
	assert_int_equal(gw_promql_parse("rate(some_metric)", &n, &e), -EINVAL);
	assert_int_equal(e.pos, 5);
	assert_int_equal(gw_promql_parse(NULL, &n, NULL), -EINVAL);
	assert_int_equal(gw_promql_parse("foo{", &n, NULL), -EINVAL);
}

static struct gw_pq_node *must(const char *q)
{
	struct gw_promql_error e;
	struct gw_pq_node *n = NULL;

	if (gw_promql_parse(q, &n, &e))
		fail_msg("parse(%s): %s", q, e.msg);
	return n;
}

static void types(void **state)
{
	static const struct {
		const char *q;
		enum gw_pq_type t;
	} cases[] = {
		{ "1", GW_TYPE_SCALAR },
		{ "\"s\"", GW_TYPE_STRING },
		{ "foo", GW_TYPE_VECTOR },
		{ "foo[5m]", GW_TYPE_MATRIX },
		{ "(foo[5m])", GW_TYPE_MATRIX },
		{ "1 + 2", GW_TYPE_SCALAR },
		{ "1 < bool 2", GW_TYPE_SCALAR },
		{ "foo + 1", GW_TYPE_VECTOR },
		{ "1 - foo", GW_TYPE_VECTOR },
		{ "-foo", GW_TYPE_VECTOR },
		{ "-(1)", GW_TYPE_SCALAR },
		{ "time()", GW_TYPE_SCALAR },
		{ "scalar(foo)", GW_TYPE_SCALAR },
		{ "vector(1)", GW_TYPE_VECTOR },
		{ "rate(foo[1m])", GW_TYPE_VECTOR },
		{ "sum(foo)", GW_TYPE_VECTOR },
		{ "topk(1, foo)", GW_TYPE_VECTOR },
		{ "foo[5m:]", GW_TYPE_MATRIX },
		{ "(rate(foo[1m])[5m:1m])", GW_TYPE_MATRIX },
		{ "foo and bar", GW_TYPE_VECTOR },
		{ "1 atan2 2", GW_TYPE_SCALAR },
		{ "foo atan2 2", GW_TYPE_VECTOR },
		{ "count_values(\"v\", foo)", GW_TYPE_VECTOR },
		{ "foo @ end()", GW_TYPE_VECTOR },
	};

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		struct gw_pq_node *n = must(cases[i].q);

		if (n->type != cases[i].t)
			fail_msg("%s: type %d, want %d", cases[i].q, n->type,
				 cases[i].t);
		gw_promql_free(n);
	}
}

/* The fields the evaluator reads. */
static void ast_fields(void **state)
{
	struct gw_pq_node *n, *a;

	(void)state;
	n = must(
		"foo{a=\"1\", b!=\"2\", c=~\"x|y\", d!~\"z\"}[90s] offset -1h");
	assert_int_equal(n->kind, GW_PQ_MATRIX);
	assert_int_equal(n->pos, 0);
	assert_string_equal(n->u.sel.name, "foo");
	assert_int_equal(n->u.sel.nm, 5);
	assert_string_equal(n->u.sel.m[0].name, "__name__");
	assert_string_equal(n->u.sel.m[0].value, "foo");
	assert_int_equal(n->u.sel.m[0].op, GW_MATCH_EQ);
	assert_int_equal(n->u.sel.m[1].op, GW_MATCH_EQ);
	assert_int_equal(n->u.sel.m[2].op, GW_MATCH_NE);
	assert_int_equal(n->u.sel.m[3].op, GW_MATCH_RE);
	assert_string_equal(n->u.sel.m[3].value, "x|y");
	assert_true(gw_matcher_match(&n->u.sel.m[3], "y"));
	assert_false(gw_matcher_match(&n->u.sel.m[3], "xy"));
	assert_int_equal(n->u.sel.m[4].op, GW_MATCH_NRE);
	assert_int_equal(n->u.sel.range_ms, 90000);
	assert_int_equal(n->u.sel.offset_ms, -3600000);
	gw_promql_free(n);

	n = must("{__name__=\"x\"}");
	assert_null(n->u.sel.name);
	assert_int_equal(n->u.sel.nm, 1);
	assert_int_equal(n->u.sel.offset_ms, 0);
	gw_promql_free(n);

	n = must("  quantile_over_time(0.5, (foo[5m]))");
	assert_int_equal(n->kind, GW_PQ_CALL);
	assert_int_equal(n->pos, 2);
	assert_int_equal(n->u.call.fn, GW_FN_QUANTILE_OVER_TIME);
	assert_int_equal(n->u.call.nargs, 2);
	assert_int_equal(n->u.call.args[0]->kind, GW_PQ_NUMBER);
	assert_true(n->u.call.args[0]->u.num == 0.5);
	assert_int_equal(n->u.call.args[1]->kind, GW_PQ_MATRIX);
	gw_promql_free(n);

	n = must("sum(foo) without (a, b)");
	assert_int_equal(n->kind, GW_PQ_AGG);
	assert_int_equal(n->u.agg.op, GW_AGG_SUM);
	assert_true(n->u.agg.grouping && n->u.agg.without);
	assert_int_equal(n->u.agg.nlabels, 2);
	assert_string_equal(n->u.agg.labels[1], "b");
	assert_null(n->u.agg.param);
	gw_promql_free(n);

	n = must("sum by () (foo)");
	assert_true(n->u.agg.grouping && !n->u.agg.without);
	assert_int_equal(n->u.agg.nlabels, 0);
	gw_promql_free(n);

	n = must("quantile(0.9, foo)");
	assert_int_equal(n->u.agg.op, GW_AGG_QUANTILE);
	assert_false(n->u.agg.grouping);
	assert_true(n->u.agg.param->u.num == 0.9);
	gw_promql_free(n);

	n = must("a >= bool ignoring(x) b");
	assert_int_equal(n->kind, GW_PQ_BINARY);
	assert_int_equal(n->u.bin.op, GW_OP_GE);
	assert_true(n->u.bin.bool_mod && n->u.bin.ignoring && !n->u.bin.on);
	assert_string_equal(n->u.bin.labels[0], "x");
	gw_promql_free(n);

	n = must("-(foo)");
	assert_int_equal(n->kind, GW_PQ_NEG);
	a = n->u.inner;
	assert_int_equal(a->kind, GW_PQ_PAREN);
	assert_int_equal(a->pos, 1);
	assert_int_equal(a->u.inner->kind, GW_PQ_SELECTOR);
	gw_promql_free(n);

	n = must("-Inf");
	assert_true(isinf(n->u.num) && n->u.num < 0);
	gw_promql_free(n);
}

static void durations(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} ok[] = {
		{ "0", 0 },
		{ "250ms", 250 },
		{ "30s", 30000 },
		{ "5m", 300000 },
		{ "1h30m", 5400000 },
		{ "2d", 172800000 },
		{ "1w", 604800000 },
		{ "1y", 31536000000 },
		{ "1y2w3d4h5m6s7ms", 31536000000 + 1209600000 + 259200000 +
					     14400000 + 300000 + 6000 + 7 },
		{ "292y", 292 * 31536000000 },
	};
	static const char *const bad[] = {
		"",    "5",   "1.5h", "30m1h", "1m1m", "5x",
		"h",   "-5m", "5m ",  " 5m",   "300y", "99999999999999999999s",
		"1hs", "5M",
	};
	int64_t ms;

	(void)state;
	for (size_t i = 0; i < N(ok); i++) {
		ms = -1;
		if (gw_promql_duration(ok[i].s, &ms) != 0)
			fail_msg("duration(%s) failed", ok[i].s);
		assert_int_equal(ms, ok[i].ms);
	}
	for (size_t i = 0; i < N(bad); i++) {
		ms = 12345;
		if (gw_promql_duration(bad[i], &ms) != -EINVAL)
			fail_msg("duration(%s) accepted", bad[i]);
		assert_int_equal(ms, 12345);
	}
	assert_int_equal(gw_promql_duration(NULL, &ms), -EINVAL);
}

static void selector_alone(void **state)
{
	struct gw_promql_error e;
	struct gw_matcher *m = NULL;
	size_t nm = 0;

	(void)state;
	assert_int_equal(
		gw_promql_parse_selector("up{job=~\"gpu.*\", instance!=\"\"}",
					 &m, &nm, &e),
		0);
	assert_int_equal(nm, 3);
	assert_string_equal(m[0].name, "__name__");
	assert_string_equal(m[0].value, "up");
	assert_string_equal(m[1].name, "job");
	assert_int_equal(m[2].op, GW_MATCH_NE);
	gw_matchers_free(m, nm);

	assert_int_equal(gw_promql_parse_selector("{gpu=\"0\"}", &m, &nm, &e),
			 0);
	assert_int_equal(nm, 1);
	gw_matchers_free(m, nm);

	assert_int_equal(gw_promql_parse_selector("up[5m]", &m, &nm, &e),
			 -EINVAL);
	assert_null(m);
	assert_int_equal(nm, 0);
	assert_string_equal(e.msg, "1:3: parse error: unexpected \"[\"");
	assert_int_equal(gw_promql_parse_selector("rate(x[5m])", &m, &nm, &e),
			 -EINVAL);
	assert_int_equal(gw_promql_parse_selector("{a=\"\"}", &m, &nm, &e),
			 -EINVAL);
	assert_string_equal(e.msg, "1:1: parse error: vector selector must "
				   "contain at least one non-empty matcher");
	assert_int_equal(gw_promql_parse_selector("1", &m, &nm, &e), -EINVAL);
	assert_int_equal(gw_promql_parse_selector("", &m, &nm, &e), -EINVAL);
	gw_matchers_free(NULL, 0);
}

static char *repeat(const char *a, int n, const char *mid, const char *b)
{
	size_t la = strlen(a), lm = strlen(mid), lb = strlen(b);
	char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1), *o = s;

	assert_non_null(s);
	for (int i = 0; i < n; i++, o += la)
		memcpy(o, a, la);
	memcpy(o, mid, lm);
	o += lm;
	for (int i = 0; i < n; i++, o += lb)
		memcpy(o, b, lb);
	*o = '\0';
	return s;
}

static void limits(void **state)
{
	struct gw_promql_error e;
	struct gw_pq_node *n;
	char *q;

	(void)state;
	/* Nesting within the limit parses; past it is an error, not a crash. */
	q = repeat("(", 100, "1", ")");
	n = must(q);
	gw_promql_free(n);
	free(q);
	q = repeat("(", 20000, "1", ")");
	assert_int_equal(gw_promql_parse(q, &n, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "nests too deeply"));
	free(q);
	q = repeat("-", 30000, "1", "");
	assert_int_equal(gw_promql_parse(q, &n, &e), -EINVAL);
	free(q);
	q = repeat("1+", 30000, "1", "");
	assert_int_equal(gw_promql_parse(q, &n, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "nests too deeply"));
	free(q);
	q = repeat("abs(", 20000, "foo", ")");
	assert_int_equal(gw_promql_parse(q, &n, &e), -EINVAL);
	free(q);
	q = repeat("2^", 20000, "1", "");
	assert_int_equal(gw_promql_parse(q, &n, &e), -EINVAL);
	free(q);

	/* Length: exactly the maximum is fine, one byte more is not. */
	q = malloc(GW_PROMQL_MAX_QUERY + 2);
	assert_non_null(q);
	memset(q, ' ', GW_PROMQL_MAX_QUERY + 1);
	q[0] = '1';
	q[GW_PROMQL_MAX_QUERY] = '\0';
	n = must(q);
	gw_promql_free(n);
	q[GW_PROMQL_MAX_QUERY] = ' ';
	q[GW_PROMQL_MAX_QUERY + 1] = '\0';
	assert_int_equal(gw_promql_parse(q, &n, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "longer than"));
	free(q);
}

/* The canonical form survives odd values: it reparses to the same. */
static void format_roundtrip_values(void **state)
{
	static const char *const qs[] = {
		"1e308 * 1e-308",
		"0.1 + 0.2",
		"123456789012345678",
		"-0",
		"(-1) ^ -2",
		"-(-(1))",
		"foo{a=\"\\xff\\x01 \\\" \\\\ \\n\"}",
		"4.9e-324",
		"0x7fffffffffffffff",
		"foo offset 1y1ms",
	};
	struct gw_buf small;
	struct gw_pq_node *n;

	(void)state;
	for (size_t i = 0; i < N(qs); i++) {
		char *a = canon(qs[i]), *b = canon(a);

		if (strcmp(a, b) != 0)
			fail_msg("%s: %s then %s", qs[i], a, b);
		free(a);
		free(b);
	}
	/* A full buffer is reported, not overrun. */
	n = must("sum by (gpu) (rate(foo[5m]))");
	gw_buf_init(&small, 10);
	assert_int_equal(gw_promql_format(n, &small), -ENOSPC);
	gw_buf_release(&small);
	gw_promql_free(n);
	gw_promql_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_queries),
		cmocka_unit_test(invalid_queries),
		cmocka_unit_test(error_position),
		cmocka_unit_test(types),
		cmocka_unit_test(ast_fields),
		cmocka_unit_test(durations),
		cmocka_unit_test(selector_alone),
		cmocka_unit_test(limits),
		cmocka_unit_test(format_roundtrip_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
