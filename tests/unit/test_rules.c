// SPDX-License-Identifier: MIT
/*
 * test_rules.c - the alert rule loader: what a rule file may say, the
 * message (file:line, group, rule, problem) for what it may not, templates,
 * and the built-in rule set.
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

#include "pipeline/rules.h"

static int load(struct gw_ruleset *rs, const char *yaml, char *err)
{
	memset(err, 0, GW_RULES_ERR_MAX);
	return gw_rules_load_buffer(rs, "r.yml", (const unsigned char *)yaml,
				    strlen(yaml), err, GW_RULES_ERR_MAX);
}

/* Loading yaml fails with -EINVAL and exactly this message. */
static void refused(const char *yaml, const char *want)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];

	gw_ruleset_init(&rs);
	assert_int_equal(load(&rs, yaml, err), -EINVAL);
	assert_string_equal(err, want);
	assert_int_equal(rs.nrules, 0);
	assert_int_equal(rs.ngroups, 0);
	gw_ruleset_release(&rs);
}

static void loads_a_full_rule(void **state)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];
	const struct gw_rule *r;

	(void)state;
	gw_ruleset_init(&rs);
	assert_int_equal(load(&rs,
			      "groups:\n"
			      "  - name: g\n"
			      "    interval: 30s\n"
			      "    rules:\n"
			      "      - alert: Hot\n"
			      "        expr: temp > 80\n"
			      "        for: 1m30s\n"
			      "        labels: {severity: warning}\n"
			      "        annotations:\n"
			      "          summary: 'GPU {{ $labels.gpu }}'\n"
			      "      - alert: Cold\n"
			      "        expr: vector(1)\n"
			      "  - name: h\n"
			      "    rules: []\n",
			      err),
			 0);
	assert_int_equal(rs.ngroups, 2);
	assert_int_equal(rs.nrules, 2);
	assert_string_equal(rs.groups[0].name, "g");
	assert_string_equal(rs.groups[0].file, "r.yml");
	assert_int_equal(rs.groups[0].interval_ms, 30000);
	assert_int_equal(rs.groups[0].n, 2);
	assert_int_equal(rs.groups[1].n, 0);
	r = &rs.rules[0];
	assert_string_equal(r->alert, "Hot");
	assert_string_equal(r->expr, "temp > 80");
	assert_int_equal(r->for_ms, 90000);
	assert_int_equal(r->line, 5);
	assert_int_equal(r->nlabels, 1);
	assert_string_equal(r->labels[0].name, "severity");
	assert_string_equal(r->labels[0].text, "warning");
	assert_int_equal(r->nann, 1);
	assert_int_equal(rs.rules[1].for_ms, 0);
	/* a second file appends */
	assert_int_equal(load(&rs,
			      "groups: [{name: g, rules: [{alert: A, expr: "
			      "x}]}]\n",
			      err),
			 0);
	assert_int_equal(rs.ngroups, 3);
	assert_int_equal(rs.nrules, 3);
	assert_int_equal(rs.groups[2].first, 2);
	gw_ruleset_release(&rs);
}

static void empty_files_have_no_groups(void **state)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];

	(void)state;
	gw_ruleset_init(&rs);
	assert_int_equal(load(&rs, "", err), 0);
	assert_int_equal(load(&rs, "groups:\n", err), 0);
	assert_int_equal(load(&rs, "# nothing\n", err), 0);
	assert_int_equal(rs.ngroups, 0);
	gw_ruleset_release(&rs);
}

static void errors_name_file_line_group_rule(void **state)
{
	(void)state;
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: rate(x[5m]\n",
		"r.yml:5: group 'g' rule 'A': expr: 1:11: parse error: "
		"unclosed left parenthesis");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x\n        for: 5\n",
		"r.yml:6: group 'g' rule 'A': for: \"5\" is not a duration "
		"(such as 30s, 5m, 1h30m)");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x\n        severity: page\n",
		"r.yml:6: group 'g' rule 'A': unknown rule key 'severity'");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n",
		"r.yml:4: group 'g' rule 'A': missing 'expr'");
	refused("groups:\n  - name: g\n    rules:\n      - expr: x\n",
		"r.yml:4: group 'g': missing 'alert' (the alert's name)");
	refused("groups:\n  - rules: []\n", "r.yml:2: group without a name");
	refused("groups:\n  - name: g\n  - name: g\n",
		"r.yml:3: group 'g': group name is repeated in the same file");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x\n        labels:\n          __x: y\n",
		"r.yml:7: group 'g' rule 'A': labels: invalid label name "
		"'__x'");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A B\n"
		"        expr: x\n",
		"r.yml:4: group 'g' rule 'A B': invalid alert name (letters, "
		"digits, _ and :, not starting with a digit)");
	refused("groups:\n  - name: g\n    rules:\n      - record: r\n"
		"        expr: x\n",
		"r.yml:4: group 'g': recording rules (record:) are not "
		"supported; gpuwatch evaluates alerting rules only");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x[5m]\n",
		"r.yml:5: group 'g' rule 'A': expr: an alerting expression "
		"must be an instant vector or a scalar, not a range vector");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x\n        expr: y\n",
		"r.yml:6: group 'g' rule 'A': key 'expr' is given twice");
	refused("rules: []\n", "r.yml:1: unknown top-level key 'rules'");
	refused("groups: [\n", "r.yml:2:1: did not find expected node "
			       "content while parsing a flow node");
	refused("groups:\n  - name: g\n    interval: 500ms\n",
		"r.yml:3: group 'g': interval: at least 1s");
	refused("groups: []\n---\ngroups: []\n",
		"r.yml:2: only one YAML document is allowed");
}

static void duplicate_alert_names_are_fine(void **state)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];

	(void)state;
	gw_ruleset_init(&rs);
	assert_int_equal(load(&rs,
			      "groups:\n  - name: g\n    rules:\n"
			      "      - {alert: A, expr: x > 1}\n"
			      "      - {alert: A, expr: x > 2}\n",
			      err),
			 0);
	assert_int_equal(rs.nrules, 2);
	gw_ruleset_release(&rs);
}

static void a_failed_file_leaves_the_set_alone(void **state)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];

	(void)state;
	gw_ruleset_init(&rs);
	assert_int_equal(load(&rs,
			      "groups: [{name: a, rules: [{alert: A, "
			      "expr: x}]}]\n",
			      err),
			 0);
	assert_int_equal(load(&rs,
			      "groups:\n  - name: b\n    rules:\n"
			      "      - {alert: B, expr: y}\n"
			      "      - {alert: C, expr: 'y +'}\n",
			      err),
			 -EINVAL);
	assert_non_null(strstr(err, "r.yml:5: group 'b' rule 'C': expr:"));
	assert_int_equal(rs.ngroups, 1);
	assert_int_equal(rs.nrules, 1);
	assert_string_equal(rs.rules[0].alert, "A");
	gw_ruleset_release(&rs);
}

static void bounds(void **state)
{
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX];
	unsigned char *big = calloc(1, GW_RULES_MAX_FILE + 1);
	char *y = malloc(200000), *p = y;

	(void)state;
	assert_non_null(big);
	assert_non_null(y);
	gw_ruleset_init(&rs);
	assert_int_equal(gw_rules_load_buffer(&rs, "big.yml", big,
					      GW_RULES_MAX_FILE + 1, err,
					      sizeof(err)),
			 -EFBIG);
	assert_string_equal(err, "big.yml: larger than 1048576 bytes");
	/* an alias bomb is bounded by the rule count, never expanded */
	p += sprintf(p, "x: &r {alert: A, expr: x}\ngroups:\n  - name: g\n"
			"    rules: [");
	for (int i = 0; i < GW_RULES_MAX_RULES + 1; i++)
		p += sprintf(p, "%s*r", i ? "," : "");
	sprintf(p, "]\n");
	assert_int_equal(load(&rs, y, err), -EINVAL);
	assert_string_equal(err, "r.yml:1: unknown top-level key 'x'");
	p = y + sprintf(y, "groups:\n  - name: g\n    rules: [");
	for (int i = 0; i < GW_RULES_MAX_RULES + 1; i++)
		p += sprintf(p, "%s{alert: A, expr: x}", i ? "," : "");
	sprintf(p, "]\n");
	assert_int_equal(load(&rs, y, err), -EINVAL);
	assert_non_null(strstr(err, "more than 2048 rules"));
	assert_int_equal(rs.nrules, 0);
	gw_ruleset_release(&rs);
	free(big);
	free(y);
}

/* ---- templates ---- */

static char *expand(const char *text, double v)
{
	struct gw_labels l;
	struct gw_tmpl t;
	struct gw_buf b;
	char err[300];
	char *s;

	assert_int_equal(gw_labels_parse(&l, "m", "gpu=\"3\",uuid=\"GPU-1\""),
			 0);
	assert_int_equal(gw_tmpl_parse(&t, text, err, sizeof(err), NULL), 0);
	gw_buf_init(&b, 4096);
	assert_int_equal(gw_tmpl_expand(&t, &l, v, &b), 0);
	s = strdup(b.p);
	gw_buf_release(&b);
	gw_tmpl_release(&t);
	gw_labels_release(&l);
	return s;
}

static void templates_expand(void **state)
{
	static const struct {
		const char *text;
		double v;
		const char *want;
	} cases[] = {
		{ "plain", 0, "plain" },
		{ "", 0, "" },
		{ "GPU {{ $labels.gpu }} at {{ $value }} C", 95.5,
		  "GPU 3 at 95.5 C" },
		{ "{{$labels.uuid}}/{{ $labels.missing }}.", 0, "GPU-1/." },
		{ "{{ $value | humanize }}", 1234567, "1.235M" },
		{ "{{ humanize $value }}", 0.0025, "2.5m" },
		{ "{{ $value | humanize }}", 0, "0" },
		{ "{{ $value | humanizePercentage }}", 0.256, "25.6%" },
		{ "{{ $value | humanizeDuration }}", 3723, "1h 2m 3s" },
		{ "{{ $value | humanizeDuration }}", 90061, "1d 1h 1m 1s" },
		{ "{{ $value | humanizeDuration }}", 0.25, "250ms" },
		{ "{{ $value }}", NAN, "NaN" },
		/* As promtool test rules shows Prometheus 2.42's {{ $value }}
		 * (Go's %v). */
		{ "{{ $value }}", 1000000, "1e+06" },
		{ "{{ $value }}", 0.0000001, "1e-07" },
		{ "{{ $value }}", 123456.5, "123456.5" },
		{ "{{ $value }}", 1e21, "1e+21" },
		{ "{{ $value }}", 0.0001, "0.0001" },
		{ "a }} b", 0, "a }} b" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = expand(cases[i].text, cases[i].v);

		if (strcmp(s, cases[i].want) != 0)
			fail_msg("'%s' (%g) gave '%s', want '%s'",
				 cases[i].text, cases[i].v, s, cases[i].want);
		free(s);
	}
}

static void templates_refused_with_line(void **state)
{
	(void)state;
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x\n        annotations:\n"
		"          summary: '{{ .Labels.gpu }}'\n",
		"r.yml:7: group 'g' rule 'A': annotations 'summary': template: "
		"unsupported action \"{{ .Labels.gpu }}\"; supported: "
		"{{ $labels.NAME }}, {{ $value }}, {{ $value | humanize }} "
		"(or humanizePercentage, humanizeDuration)");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x\n        annotations:\n"
		"          description: |\n            first line\n"
		"            {{ $value }} fine\n            {{ printf \"%.1f\" "
		"$value }}\n",
		"r.yml:10: group 'g' rule 'A': annotations 'description': "
		"template: unsupported action \"{{ printf \"%.1f\" $value "
		"}}\"; "
		"supported: {{ $labels.NAME }}, {{ $value }}, "
		"{{ $value | humanize }} (or humanizePercentage, "
		"humanizeDuration)");
	refused("groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: x\n        labels:\n          x: '{{ $value'\n",
		"r.yml:7: group 'g' rule 'A': labels 'x': template: unclosed "
		"action \"{{ $value\"");
}

/* ---- the built-in set ---- */

static void default_rules_load(void **state)
{
	static const char *const must[] = {
		"GpuHbmTemperatureHigh",
		"GpuHbmTemperatureCritical",
		"GpuTemperatureHigh",
		"GpuUncorrectedEccErrors",
		"GpuCriticalXid",
		"GpuPcieLinkWidthDegraded",
		"GpuPcieLinkGenerationDegraded",
		"GpuNvlinkDown",
		"GpuThermalSlowdown",
		"GpuHardwareSlowdown",
		"GpuPowerAtLimit",
		"GpuLost",
		"GpuMemoryLeakSuspected",
		"CudaOutOfMemory",
		"CudaApiErrorSpike",
		"GpuProcessAbnormalExit",
		"TrainingNotFinite",
		"TrainingStepTimeRegressed",
		"TrainingStalled",
		"TrainingCheckpointTooOld",
		"InferenceLatencyP99High",
		"InferenceErrorRatioHigh",
	};
	struct gw_ruleset rs;
	char err[GW_RULES_ERR_MAX] = "";

	(void)state;
	if (gw_rules_load_all(&rs, true, NULL, 0, err, sizeof(err)))
		fail_msg("%s", err);
	for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++) {
		const struct gw_rule *found = NULL;

		for (size_t j = 0; j < rs.nrules; j++)
			if (strcmp(rs.rules[j].alert, must[i]) == 0)
				found = &rs.rules[j];
		if (!found)
			fail_msg("built-in rule %s is missing", must[i]);
		/* each has a severity and a summary */
		assert_int_equal(found->nlabels, 1);
		assert_string_equal(found->labels[0].name, "severity");
		assert_true(found->nann >= 1);
		assert_string_equal(found->ann[0].name, "summary");
	}
	/* the HBM critical threshold is 93 C */
	for (size_t j = 0; j < rs.nrules; j++)
		if (strcmp(rs.rules[j].alert, "GpuHbmTemperatureCritical") == 0)
			assert_non_null(strstr(rs.rules[j].expr, "> 93"));
	assert_string_equal(rs.groups[0].file, GW_RULES_DEFAULT_NAME);
	gw_ruleset_release(&rs);
}

static void missing_file(void **state)
{
	struct gw_ruleset rs;
	const char files[1][1024] = { "/nonexistent/rules.yml" };
	char err[GW_RULES_ERR_MAX];

	(void)state;
	assert_int_equal(
		gw_rules_load_all(&rs, true, files, 1, err, sizeof(err)),
		-ENOENT);
	assert_string_equal(err, "/nonexistent/rules.yml: cannot open rule "
				 "file: No such file or directory");
	assert_int_equal(rs.nrules, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loads_a_full_rule),
		cmocka_unit_test(empty_files_have_no_groups),
		cmocka_unit_test(errors_name_file_line_group_rule),
		cmocka_unit_test(duplicate_alert_names_are_fine),
		cmocka_unit_test(a_failed_file_leaves_the_set_alone),
		cmocka_unit_test(bounds),
		cmocka_unit_test(templates_expand),
		cmocka_unit_test(templates_refused_with_line),
		cmocka_unit_test(default_rules_load),
		cmocka_unit_test(missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
