/* SPDX-License-Identifier: MIT */
/*
 * test_prof_select.c - --profile-match (collect/prof_select.h): selectors
 * over a process's labels against a fake /proc tree, and the errors a user
 * gets for a selector that cannot work.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/prof_select.h"

static char root[64];

static void put(const char *pid, const char *file, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", root, pid, file);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void exe(const char *pid, const char *target)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s/exe", root, pid);
	assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_prof_select.XXXXXX");
	assert_non_null(mkdtemp(root));
	/* 100: a trainer in a Kubernetes pod (cgroup v2) */
	put("100", "comm", "python3\n");
	put("100", "cgroup",
	    "0::/kubepods.slice/kubepods-pod1234.slice/"
	    "cri-containerd-ab.scope\n");
	exe("100", "/usr/bin/python3.11");
	/* 200: a data loader on a cgroup v1 host */
	put("200", "comm", "loader\n");
	put("200", "cgroup",
	    "12:cpu,cpuacct:/slurm/uid_0/job_7\n"
	    "11:memory:/slurm/uid_0/job_7/step_0\n");
	exe("200", "/opt/app/loader");
	/* 300: a kernel thread: no exe, no cgroup file */
	put("300", "comm", "kworker/0:1\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static struct gw_prof_select *sel(const char *const *v, unsigned int n)
{
	struct gw_prof_select *s = NULL;
	char err[256] = "";

	assert_int_equal(gw_prof_select_new(v, n, root, &s, err, sizeof(err)),
			 0);
	assert_int_equal(gw_prof_select_count(s), n);
	return s;
}

static const struct gw_attrib none;

/* One selector per label: each picks exactly the process it describes. */
static void test_each_label(void **state)
{
	struct {
		const char *sel;
		int p100, p200, p300;
	} cases[] = {
		{ "{comm=\"python3\"}", 1, 0, 0 },
		{ "{comm=~\"py.*\"}", 1, 0, 0 },
		{ "process_cpu{comm!=\"python3\"}", 0, 1, 1 },
		{ "{exe=~\"/usr/bin/python.*\"}", 1, 0, 0 },
		{ "process_cpu{exe!=\"/usr/bin/python3.11\"}", 0, 1, 0 },
		{ "{cgroup=~\"/kubepods.slice/.*\"}", 1, 0, 0 },
		{ "{cgroup=\"/slurm/uid_0/job_7\"}", 0, 1, 0 },
		{ "{cgroup=\"/slurm/uid_0/job_7/step_0\"}", 0, 1, 0 },
		{ "process_cpu{cgroup!~\"/slurm/.*\"}", 1, 0, 0 },
		{ "process_cpu{cgroup!=\"/slurm/uid_0/job_7\"}", 1, 0, 0 },
		{ "{pid=\"200\"}", 0, 1, 0 },
		{ "process_cpu{pid=~\"[13]00\"}", 1, 0, 1 },
		{ "other{pid=\"100\"}", 0, 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *v[] = { cases[i].sel };
		struct gw_prof_select *s = sel(v, 1);

		print_message("%s\n", cases[i].sel);
		assert_int_equal(gw_prof_select_match(s, 100, &none),
				 cases[i].p100);
		assert_int_equal(gw_prof_select_match(s, 200, NULL),
				 cases[i].p200);
		assert_int_equal(gw_prof_select_match(s, 300, &none),
				 cases[i].p300);
		gw_prof_select_free(s);
	}
}

/* The attribution labels come from the caller; its comm wins over
 * /proc's; several selectors are a union, the matchers of one an
 * intersection. */
static void test_attrib_and_union(void **state)
{
	const char *v[] = { "{job=\"7\",comm=\"loader\"}", "{pod_uid=\"1234\"}",
			    "{container_id=~\"ab.*\"}" };
	struct gw_prof_select *s = sel(v, 3);
	struct gw_attrib a = { .comm = "loader", .job = "7" };
	struct gw_attrib b = { .comm = "other", .job = "7" };
	struct gw_attrib c = { .pod_uid = "1234" };
	struct gw_attrib d = { .container_id = "abcdef012345" };

	(void)state;
	assert_int_equal(gw_prof_select_match(s, 200, &a), 1);
	assert_int_equal(gw_prof_select_match(s, 200, &b), 0);
	assert_int_equal(gw_prof_select_match(s, 200, &none), 0);
	assert_int_equal(gw_prof_select_match(s, 100, &c), 1);
	assert_int_equal(gw_prof_select_match(s, 100, &d), 1);
	/* a process gone: comm unreadable, so not selected */
	assert_int_equal(gw_prof_select_match(s, 999, &none), 0);
	gw_prof_select_free(s);
}

/* No selector: every process; NULL selection the same. */
static void test_none(void **state)
{
	struct gw_prof_select *s = sel(NULL, 0);

	(void)state;
	assert_int_equal(gw_prof_select_match(s, 999, NULL), 1);
	assert_int_equal(gw_prof_select_match(NULL, 999, NULL), 1);
	assert_int_equal(gw_prof_select_count(NULL), 0);
	gw_prof_select_free(s);
	gw_prof_select_free(NULL);
}

/* What a user is told for a selector that cannot work. */
static void test_errors(void **state)
{
	struct {
		const char *sel, *says;
	} cases[] = {
		{ "{command=\"python\"}", "no label 'command' on a process" },
		{ "{comm=~\"(a\"}", "missing closing )" },
		{ "{comm=~\"(a)\\\\1\"}", "invalid escape sequence" },
		{ "{comm=\"\"}", "at least one non-empty matcher" },
		{ "{comm=\"a\"", "--profile-match {comm=\"a\": " },
	};
	const char *many[GW_PROF_SELECT_MAX + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *v[] = { cases[i].sel };
		struct gw_prof_select *s = NULL;
		char err[256] = "";

		assert_int_equal(
			gw_prof_select_new(v, 1, root, &s, err, sizeof(err)),
			-EINVAL);
		assert_null(s);
		print_message("%s -> %s\n", cases[i].sel, err);
		assert_non_null(strstr(err, cases[i].says));
	}
	for (size_t i = 0; i < GW_PROF_SELECT_MAX + 1; i++)
		many[i] = "{comm=\"x\"}";
	{
		struct gw_prof_select *s = NULL;
		char err[256] = "";

		assert_int_equal(gw_prof_select_new(many,
						    GW_PROF_SELECT_MAX + 1,
						    root, &s, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "at most"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_label),
		cmocka_unit_test(test_attrib_and_union),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
