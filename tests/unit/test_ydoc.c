/* SPDX-License-Identifier: MIT */
/*
 * common/ydoc: the YAML walker the configuration readers share, seen from
 * what an operator reads: one line naming the file, the line in that
 * file (also when the text is a block cut out of a larger file), the
 * path of the value and what was expected; duplicate keys; an alias bomb
 * refused within the node bound; a path too long for its room ending in
 * "..." rather than cut silently.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/ydoc.h"

static char err[512];

static void load(struct gw_ydoc *y, const char *text, unsigned int line0)
{
	*y = (struct gw_ydoc){ .file = "x.yml",
			       .line0 = line0,
			       .err = err,
			       .errlen = sizeof(err) };
	err[0] = '\0';
	assert_int_equal(gw_ydoc_load(y, text, strlen(text), "top"), 0);
}

static int count_pair(struct gw_ydoc *y, const char *key, const yaml_node_t *k,
		      const yaml_node_t *v, const char *path, void *arg)
{
	(void)y;
	(void)key;
	(void)k;
	(void)v;
	(void)path;
	(*(unsigned int *)arg)++;
	return 0;
}

/* Refuses every pair whose value is not a bool, with its path. */
static int bool_pair(struct gw_ydoc *y, const char *key, const yaml_node_t *k,
		     const yaml_node_t *v, const char *path, void *arg)
{
	bool b;

	(void)key;
	(void)k;
	(void)arg;
	return gw_ydoc_bool(y, v, path, &b);
}

static void syntax_error_names_file_line_and_path(void **state)
{
	struct gw_ydoc y = {
		.file = "x.yml", .line0 = 10, .err = err, .errlen = sizeof(err)
	};
	const char *text = "a: 1\nb: [1, 2\n";

	(void)state;
	assert_int_equal(gw_ydoc_load(&y, text, strlen(text), "remote_write"),
			 -EINVAL);
	/* libyaml finds it at the end of the text, line 3 of the block */
	assert_string_equal(err, "x.yml:12: remote_write: did not find "
				 "expected ',' or ']'");
	gw_ydoc_release(&y); /* never loaded: a no-op */
}

static void lines_count_from_the_block_start(void **state)
{
	struct gw_ydoc y;
	unsigned int n = 0;

	(void)state;
	/* The block's first line is line 7 of the file. */
	load(&y, "a: 1\nb: 2\na: 3\n", 7);
	assert_int_equal(
		gw_ydoc_mapping(&y, gw_ydoc_root(&y), "top", count_pair, &n),
		-EINVAL);
	assert_string_equal(err, "x.yml:9: top: key 'a' is given twice "
				 "(first on line 7)");
	assert_int_equal(n, 2); /* a and b were walked before */
	gw_ydoc_release(&y);
	gw_ydoc_release(&y);
}

static void values_refused_with_their_path(void **state)
{
	struct gw_ydoc y;

	(void)state;
	load(&y, "ok: true\nalso: False\nbad: yes\n", 0);
	assert_int_equal(
		gw_ydoc_mapping(&y, gw_ydoc_root(&y), "web", bool_pair, NULL),
		-EINVAL);
	assert_string_equal(err,
			    "x.yml:3: web.bad: 'yes' is not true or false");
	gw_ydoc_release(&y);

	load(&y, "k: [1]\n", 0);
	assert_int_equal(
		gw_ydoc_mapping(&y, gw_ydoc_root(&y), "web", bool_pair, NULL),
		-EINVAL);
	assert_string_equal(err, "x.yml:1: web.k: expected a single value");
	gw_ydoc_release(&y);

	/* A null is no mapping: the reader decides what null means. */
	load(&y, "~\n", 0);
	assert_true(gw_ydoc_is_null(gw_ydoc_root(&y)));
	assert_int_equal(
		gw_ydoc_mapping(&y, gw_ydoc_root(&y), "web", count_pair, NULL),
		-EINVAL);
	assert_string_equal(err, "x.yml:1: web: expected a mapping (key: "
				 "value)");
	gw_ydoc_release(&y);
}

static void nul_byte_refused(void **state)
{
	static const char text[] = "k: \"a\\0b\"\n";
	struct gw_ydoc y;
	const char *s = "unset";

	(void)state;
	load(&y, text, 0);
	{
		const yaml_node_t *root = gw_ydoc_root(&y);
		const yaml_node_pair_t *p = root->data.mapping.pairs.start;

		assert_int_equal(
			gw_ydoc_scalar(&y, gw_ydoc_node(&y, p->value), "k", &s),
			-EINVAL);
	}
	assert_null(s);
	assert_string_equal(err, "x.yml:1: k: must not contain a NUL byte");
	gw_ydoc_release(&y);
}

/* Walks every node below n, as a reader of nested settings does. */
static int walk(struct gw_ydoc *y, const yaml_node_t *n);

static int deep_pair(struct gw_ydoc *y, const char *key, const yaml_node_t *k,
		     const yaml_node_t *v, const char *path, void *arg)
{
	(void)key;
	(void)k;
	(void)path;
	(void)arg;
	return walk(y, v);
}

static int walk(struct gw_ydoc *y, const yaml_node_t *n)
{
	if (n && n->type == YAML_MAPPING_NODE)
		return gw_ydoc_mapping(y, n, "m", deep_pair, NULL);
	if (n && n->type == YAML_SEQUENCE_NODE)
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     i < n->data.sequence.items.top; i++) {
			const yaml_node_t *e = gw_ydoc_node(y, *i);
			int r = gw_ydoc_step(y, e, "m");

			if (!r)
				r = walk(y, e);
			if (r)
				return r;
		}
	return 0;
}

static void alias_bomb_refused(void **state)
{
	/* Ten levels of ten references: 10^10 keys if expanded. */
	char text[2048];
	size_t n = 0;
	struct gw_ydoc y;

	(void)state;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "l0: &l0 {k: v}\n");
	for (int i = 1; i <= 10; i++) {
		n += (size_t)snprintf(text + n, sizeof(text) - n, "l%d: &l%d [",
				      i, i);
		for (int j = 0; j < 10; j++)
			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "%s*l%d", j ? ", " : "", i - 1);
		n += (size_t)snprintf(text + n, sizeof(text) - n, "]\n");
	}
	assert_true(n < sizeof(text) - 1);
	load(&y, text, 0);
	assert_int_equal(
		gw_ydoc_mapping(&y, gw_ydoc_root(&y), "top", deep_pair, NULL),
		-EINVAL);
	assert_non_null(strstr(err, "too many nodes"));
	assert_int_equal(y.steps, GW_YDOC_MAX_STEPS + 1);
	gw_ydoc_release(&y);
}

static void long_paths_end_in_dots(void **state)
{
	char path[GW_YDOC_PATH_MAX], out[GW_YDOC_PATH_MAX];

	(void)state;
	assert_string_equal(gw_ydoc_subpath(out, "a.b", "c"), "a.b.c");
	memset(path, 'p', sizeof(path) - 10);
	path[sizeof(path) - 10] = '\0';
	gw_ydoc_subpath(out, path, "queue_config");
	assert_int_equal(strlen(out), GW_YDOC_PATH_MAX - 1);
	assert_string_equal(out + GW_YDOC_PATH_MAX - 4, "...");
	assert_memory_equal(out, path, sizeof(path) - 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(syntax_error_names_file_line_and_path),
		cmocka_unit_test(lines_count_from_the_block_start),
		cmocka_unit_test(values_refused_with_their_path),
		cmocka_unit_test(nul_byte_refused),
		cmocka_unit_test(alias_bomb_refused),
		cmocka_unit_test(long_paths_end_in_dots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
