/* SPDX-License-Identifier: MIT */
/*
 * test_jv.c - the JSON reader of gpuwatch query and top (src/cli/jv.c):
 * an API answer read back, escapes decoded, and what is not JSON refused
 * with an empty tree.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "cli/jv.h"

static int parse(const char *text, struct gw_jv *j)
{
	return gw_jv_parse(text, strlen(text), j);
}

static void test_api_answer(void **state)
{
	const char *text =
		"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
		"\"result\":[{\"metric\":{\"__name__\":\"gpuwatch_gpu_up\","
		"\"gpu\":\"0\"},\"value\":[1796314112.742,\"1\"]}]}}";
	const struct gw_jv *data, *r, *v;
	struct gw_jv j;

	(void)state;
	assert_int_equal(parse(text, &j), 0);
	assert_string_equal(gw_jv_str(gw_jv_get(&j, "status")), "success");
	data = gw_jv_get(&j, "data");
	assert_string_equal(gw_jv_str(gw_jv_get(data, "resultType")), "vector");
	r = gw_jv_get(data, "result");
	assert_non_null(r);
	assert_int_equal(r->t, GW_JV_ARR);
	assert_int_equal(r->n, 1);
	assert_string_equal(
		gw_jv_str(gw_jv_get(gw_jv_get(&r->v[0], "metric"), "gpu")),
		"0");
	v = gw_jv_get(&r->v[0], "value");
	assert_int_equal(v->n, 2);
	assert_int_equal(v->v[0].t, GW_JV_NUM);
	assert_string_equal(v->v[0].s, "1796314112.742");
	assert_string_equal(gw_jv_str(&v->v[1]), "1");
	/* lookups on the wrong type, or a missing key, are NULL */
	assert_null(gw_jv_get(r, "x"));
	assert_null(gw_jv_get(&j, "nope"));
	assert_null(gw_jv_str(r));
	gw_jv_release(&j);
	gw_jv_release(&j); /* zeroed: releasing again is fine */
	gw_jv_release(NULL);
}

static void test_escapes(void **state)
{
	struct gw_jv j;

	(void)state;
	assert_int_equal(
		parse("\"a\\\"b\\\\c\\/\\n\\u00e9\\ud83d\\ude00\"", &j), 0);
	assert_string_equal(gw_jv_str(&j),
			    "a\"b\\c/\n\xc3\xa9\xf0\x9f\x98\x80");
	gw_jv_release(&j);
	assert_int_equal(parse(" [true, false, null, -0.5e+3, 0] ", &j), 0);
	assert_int_equal(j.n, 5);
	assert_int_equal(j.v[0].t, GW_JV_BOOL);
	assert_int_equal(j.v[2].t, GW_JV_NULL);
	assert_string_equal(j.v[3].s, "-0.5e+3");
	gw_jv_release(&j);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"",	     "tru",	 "nul",	      "01",	  "1.",
		"-",	     "1e",	 "+1",	      "[1,]",	  "[1 2]",
		"{\"a\"}",   "{\"a\":}", "{1:2}",     "\"abc",	  "\"\\x\"",
		"\"\\u12\"", "[1] x",	 "truefalse", "\"a\tb\"",
	};
	struct gw_jv j, zero = { 0 };
	char deep[200];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &j), -EINVAL);
		assert_memory_equal(&j, &zero, sizeof(j));
	}
	/* a NUL byte is not part of a number */
	assert_int_equal(gw_jv_parse("[1\0002]", 5, &j), -EINVAL);
	/* nesting: 65 levels are refused, 64 read */
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	assert_int_equal(gw_jv_parse(deep, 130, &j), -EINVAL);
	assert_int_equal(gw_jv_parse(deep + 1, 128, &j), 0);
	gw_jv_release(&j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_answer),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
