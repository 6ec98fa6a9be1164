/* SPDX-License-Identifier: MIT */
/* Label sets and matchers: parsing, canonical keys, projection, JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "store/labels.h"

static void parse_sorts_and_unescapes(void **state)
{
	struct gw_labels l;
	struct gw_buf b;

	(void)state;
	assert_int_equal(
		gw_labels_parse(
			&l, "m_total",
			"uuid=\"GPU-1\",gpu=\"0\",comm=\"a\\\"b\\\\c\\nd\""),
		0);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.v[0].name, "__name__");
	assert_string_equal(l.v[1].name, "comm");
	assert_string_equal(l.v[1].value, "a\"b\\c\nd");
	assert_string_equal(gw_labels_get(&l, "gpu"), "0");
	assert_null(gw_labels_get(&l, "nope"));
	gw_buf_init(&b, 4096);
	assert_int_equal(gw_labels_key(&l, &b), 0);
	assert_string_equal(
		b.p,
		"m_total{comm=\"a\\\"b\\\\c\\nd\",gpu=\"0\",uuid=\"GPU-1\"}");
	gw_buf_reset(&b);
	gw_labels_json(&l, &b);
	assert_int_equal(gw_buf_error(&b), 0);
	assert_string_equal(
		b.p, "{\"__name__\":\"m_total\",\"comm\":\"a\\\"b\\\\c\\nd\","
		     "\"gpu\":\"0\",\"uuid\":\"GPU-1\"}");
	gw_buf_release(&b);
	gw_labels_release(&l);
}

static void parse_rejects_bad_text(void **state)
{
	static const char *const bad[] = {
		"gpu=0",      "gpu=\"0",  "=\"x\"",    "gpu=\"0\",gpu=\"1\"",
		"gpu=\"0\"x", "9a=\"1\"", "a=\"\\q\"",
	};
	struct gw_labels l;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gw_labels_parse(&l, "m", bad[i]), -EINVAL);
	assert_int_equal(gw_labels_parse(&l, "", ""), -EINVAL);
	assert_int_equal(gw_labels_parse(&l, "m", NULL), 0);
	assert_int_equal(l.n, 1);
	gw_labels_release(&l);
}

/* An empty value is an absent label, whichever way a set is made. */
static void empty_values_are_absent(void **state)
{
	const struct gw_label pairs[] = { { "__name__", "m" },
					  { "comm", "" },
					  { "pid", "7" } };
	struct gw_labels a, b, c;
	struct gw_buf k1, k2;

	(void)state;
	assert_int_equal(gw_labels_parse(&a, "m", "comm=\"\",pid=\"7\""), 0);
	assert_int_equal(gw_labels_parse(&b, "m", "pid=\"7\""), 0);
	assert_int_equal(gw_labels_from(&c, pairs, 3), 0);
	assert_int_equal(a.n, 2);
	assert_null(gw_labels_get(&a, "comm"));
	assert_int_equal(gw_labels_cmp(&a, &b), 0);
	assert_int_equal(gw_labels_cmp(&c, &b), 0);
	gw_buf_init(&k1, 4096);
	gw_buf_init(&k2, 4096);
	assert_int_equal(gw_labels_key(&a, &k1), 0);
	assert_int_equal(gw_labels_key(&b, &k2), 0);
	assert_string_equal(k1.p, "m{pid=\"7\"}");
	assert_string_equal(k1.p, k2.p);
	gw_buf_reset(&k1);
	gw_labels_json(&c, &k1);
	assert_string_equal(k1.p, "{\"__name__\":\"m\",\"pid\":\"7\"}");
	gw_labels_release(&a);
	gw_labels_release(&b);
	gw_labels_release(&c);
	/* Exposition text loses its empty pairs, keeps the others whole. */
	static const char *const lists[][2] = {
		{ "a=\"1\",b=\"\",c=\"2\"", "a=\"1\",c=\"2\"" },
		{ "b=\"\"", "" },
		{ "b=\"\",c=\"\"", "" },
		{ "b=\"\",c=\"x\"", "c=\"x\"" },
		{ "a=\"x=\\\"\\\"\",b=\"\"", "a=\"x=\\\"\\\"\"" },
		{ "a=\"\\\\\",b=\"\"", "a=\"\\\\\"" },
		{ "a=\"1\"", "a=\"1\"" },
	};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		gw_buf_reset(&k1);
		assert_int_equal(gw_labels_append_list(&k1, lists[i][0]), 0);
		assert_string_equal(k1.len ? k1.p : "", lists[i][1]);
	}
	gw_buf_release(&k1);
	gw_buf_release(&k2);
}

static void project_and_compare(void **state)
{
	struct gw_labels a, b, p;
	const char *names[] = { "gpu" };

	(void)state;
	assert_int_equal(gw_labels_parse(&a, "m", "gpu=\"0\",uuid=\"u\""), 0);
	assert_int_equal(gw_labels_parse(&b, "m", "gpu=\"1\",uuid=\"u\""), 0);
	assert_true(gw_labels_cmp(&a, &b) < 0);
	assert_true(gw_labels_cmp(&b, &a) > 0);
	assert_int_equal(gw_labels_cmp(&a, &a), 0);
	assert_int_equal(gw_labels_project(&p, &a, names, 1, true, true), 0);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.v[0].value, "0");
	gw_labels_release(&p);
	assert_int_equal(gw_labels_project(&p, &a, names, 1, false, true), 0);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.v[0].name, "uuid");
	gw_labels_release(&p);
	assert_int_equal(gw_labels_project(&p, &a, NULL, 0, false, false), 0);
	assert_int_equal(gw_labels_cmp(&p, &a), 0);
	gw_labels_release(&p);
	gw_labels_release(&a);
	gw_labels_release(&b);
}

static void matchers(void **state)
{
	struct gw_matcher m;
	char err[200];
	struct gw_labels l;

	(void)state;
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "gpu", "0|1", err,
					 sizeof(err)),
			 0);
	assert_true(gw_matcher_match(&m, "1"));
	assert_false(gw_matcher_match(&m, "10")); /* anchored */
	assert_false(gw_matcher_match(&m, NULL));
	assert_false(gw_matcher_matches_empty(&m));
	gw_matcher_release(&m);
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_NRE, "gpu", "1.*", err,
					 sizeof(err)),
			 0);
	assert_true(gw_matcher_match(&m, "2"));
	assert_false(gw_matcher_match(&m, "12"));
	assert_true(gw_matcher_matches_empty(&m));
	gw_matcher_release(&m);
	/* the anchoring cannot be escaped from inside the value */
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "gpu", "a)|(?:b", err,
					 sizeof(err)),
			 -EINVAL);
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "gpu", "0|1)|(.*",
					 err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "gpu", "a|b", err,
					 sizeof(err)),
			 0);
	assert_false(gw_matcher_match(&m, "ab"));
	assert_false(gw_matcher_match(&m, "xb"));
	assert_true(gw_matcher_match(&m, "b"));
	gw_matcher_release(&m);
	assert_int_equal(
		gw_matcher_init(&m, GW_MATCH_RE, "gpu", "(", err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "error parsing regexp"));
	assert_int_equal(gw_matcher_init(&m, GW_MATCH_NE, "job", "x", NULL, 0),
			 0);
	assert_int_equal(gw_labels_parse(&l, "m", "gpu=\"0\""), 0);
	assert_true(gw_matchers_match(&m, 1, &l)); /* absent label is "" */
	gw_matcher_release(&m);
	gw_labels_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_sorts_and_unescapes),
		cmocka_unit_test(parse_rejects_bad_text),
		cmocka_unit_test(empty_values_are_absent),
		cmocka_unit_test(project_and_compare),
		cmocka_unit_test(matchers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
