// SPDX-License-Identifier: MIT
/*
 * test_catalog.c - the metric catalogue (src/pipeline/catalog.def): names
 * follow the conventions the docs promise (unique, units in the name,
 * counters in _total, info in _info), ids follow names, label lists are
 * well formed, every dcgm-exporter name mirrors a GPU family of ours by a
 * label that family has, and gw_catalog_dcgm() finds exactly those.
 * That docs/metrics.md is the catalogue, and that a running agent keeps
 * to it, is tests/integration/t0003-metrics-catalog.sh.
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/catalog.h"

/* The ids as written in catalog.def, next to the rows they name. */
static const char *const ids[GW_CATALOG_COUNT] = {
#define GW_METRIC(id, ...)  [GW_CATALOG_##id] = #id,
#define GW_SETTING(id, ...) [GW_CATALOG_##id] = #id,
#define GW_DCGM(id, ...)    [GW_CATALOG_##id] = #id,
#include "pipeline/catalog.def"
#undef GW_METRIC
#undef GW_SETTING
#undef GW_DCGM
};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void ids_follow_names(void **state)
{
	(void)state;
	for (int i = 0; i < GW_CATALOG_COUNT; i++) {
		const char *name = gw_catalog[i].fam.name, *id = ids[i];
		char want[128];
		size_t j = 0;

		assert_non_null(id);
		if (strncmp(name, "gpuwatch_", 9) == 0) {
			for (const char *p = name + 9;
			     *p && j + 1 < sizeof(want); p++)
				want[j++] = (char)toupper((unsigned char)*p);
			want[j] = '\0';
		} else if (gw_catalog[i].source == GW_CATALOG_SRC_DCGM) {
			snprintf(want, sizeof(want), "%s", name);
		} else {
			snprintf(want, sizeof(want), "PROMETHEUS_%s", name);
		}
		if (strcmp(want, id) != 0)
			fail_msg("row %s names %s", id, name);
	}
}

static void names_are_unique_and_conventional(void **state)
{
	(void)state;
	for (int i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_catalog_entry *e = &gw_catalog[i];
		const char *n = e->fam.name, *h = e->fam.help;

		for (int j = 0; j < i; j++)
			if (strcmp(gw_catalog[j].fam.name, n) == 0)
				fail_msg("%s is listed twice", n);
		for (const char *p = n; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '_')
				fail_msg("%s: not a metric name", n);
		if (!h[0] || h[strlen(h) - 1] != '.' || strchr(h, '\n'))
			fail_msg("%s: help is not one sentence-ended line", n);
		assert_true(e->source < GW_CATALOG_SRC_COUNT);
		if (e->source == GW_CATALOG_SRC_DCGM) {
			assert_int_equal(e->fam.type, GW_GAUGE);
			continue;
		}
		assert_int_equal(e->dcgm_of, -1);
		if (strncmp(n, "gpuwatch_", 9) != 0)
			continue; /* Prometheus's own ALERTS names */
		if ((e->fam.type == GW_COUNTER) != ends_with(n, "_total"))
			fail_msg("%s: a counter ends in _total, nothing else",
				 n);
		if ((e->fam.type == GW_INFO) != ends_with(n, "_info"))
			fail_msg("%s: an info family ends in _info", n);
		if (strcmp(e->unit, "state") == 0) {
			/* 0 or 1: no unit in the name, a gauge */
			if (e->fam.type != GW_GAUGE)
				fail_msg("%s: a state is a gauge", n);
		} else if (e->unit[0]) {
			const char *slash = strchr(e->unit, '/');
			char u[64], total[80];

			if (slash) /* bytes/second */
				snprintf(u, sizeof(u), "_%.*s_per_%s",
					 (int)(slash - e->unit), e->unit,
					 slash + 1);
			else
				snprintf(u, sizeof(u), "_%s", e->unit);
			snprintf(total, sizeof(total), "%s_total", u);
			if (!ends_with(n, u) && !ends_with(n, total))
				fail_msg("%s: unit %s is not in the name", n,
					 e->unit);
		}
	}
}

/* Fails the test unless list is well formed. */
static void check_labels(const char *owner, const char *list)
{
	const char *p = list;
	char seen[32][64];
	int n = 0;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (len == 0 || len >= sizeof(seen[0]) || n >= 32)
			fail_msg("%s: bad label list '%s'", owner, list);
		if (p[0] == '<') {
			if (p[len - 1] != '>')
				fail_msg("%s: '%s'", owner, list);
		} else {
			for (size_t i = 0; i < len; i++)
				if (!(isalnum((unsigned char)p[i]) ||
				      p[i] == '_') ||
				    (i == 0 && isdigit((unsigned char)p[i])))
					fail_msg("%s: label '%.*s'", owner,
						 (int)len, p);
			if ((len == 2 && !strncmp(p, "le", 2)) ||
			    (len == 8 && !strncmp(p, "quantile", 8)))
				fail_msg("%s: %.*s is the exposition's", owner,
					 (int)len, p);
		}
		for (int j = 0; j < n; j++)
			if (strlen(seen[j]) == len && !strncmp(seen[j], p, len))
				fail_msg("%s: %.*s twice", owner, (int)len, p);
		snprintf(seen[n++], sizeof(seen[0]), "%.*s", (int)len, p);
		p += len;
		if (*p == ',' && *++p == '\0')
			fail_msg("%s: trailing comma", owner);
	}
}

static int has_label(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

static void label_lists_are_well_formed(void **state)
{
	const char *ours =
		gw_catalog[GW_CATALOG_GPU_TEMPERATURE_CELSIUS].labels;
	const char *dcgm = gw_catalog[GW_CATALOG_DCGM_FI_DEV_GPU_TEMP].labels;

	(void)state;
	for (int i = 0; i < GW_CATALOG_COUNT; i++)
		check_labels(gw_catalog[i].fam.name, gw_catalog[i].labels);
	/* Per-GPU families carry the GPU's identity, each in its spelling. */
	assert_true(has_label(ours, "uuid") && has_label(ours, "gpu"));
	assert_true(has_label(dcgm, "UUID") && has_label(dcgm, "gpu"));
}

static void dcgm_names_mirror_gpu_families(void **state)
{
	int n = 0;

	(void)state;
	for (int i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_catalog_entry *e = &gw_catalog[i];
		const struct gw_catalog_entry *of;

		if (e->source != GW_CATALOG_SRC_DCGM)
			continue;
		n++;
		assert_true(strncmp(e->fam.name, "DCGM_FI_", 8) == 0);
		assert_true(e->dcgm_of >= 0 && e->dcgm_of < GW_CATALOG_COUNT);
		of = &gw_catalog[e->dcgm_of];
		assert_int_equal(of->source, GW_CATALOG_SRC_NVML);
		assert_true(!e->dcgm_label == !e->dcgm_value);
		if (e->dcgm_label && !has_label(of->labels, e->dcgm_label))
			fail_msg("%s selects %s by %s, which it does not have",
				 e->fam.name, of->fam.name, e->dcgm_label);
		/* What the collectors ask for finds this very row. */
		assert_ptr_equal(gw_catalog_dcgm((enum gw_catalog_id)e->dcgm_of,
						 e->dcgm_value),
				 &e->fam);
	}
	assert_int_equal(n, 17);
	assert_ptr_equal(gw_catalog_dcgm(GW_CATALOG_GPU_CLOCK_HERTZ, "sm"),
			 GW_FAM(DCGM_FI_DEV_SM_CLOCK));
	assert_ptr_equal(gw_catalog_dcgm(GW_CATALOG_GPU_CLOCK_HERTZ, "memory"),
			 GW_FAM(DCGM_FI_DEV_MEM_CLOCK));
	assert_null(gw_catalog_dcgm(GW_CATALOG_GPU_CLOCK_HERTZ, "graphics"));
	assert_null(gw_catalog_dcgm(GW_CATALOG_GPU_CLOCK_HERTZ, NULL));
	assert_null(gw_catalog_dcgm(GW_CATALOG_GPU_SM_ACTIVE_RATIO, NULL));
	assert_null(gw_catalog_dcgm(GW_CATALOG_GPU_POWER_LIMIT_WATTS, NULL));
	assert_ptr_equal(
		gw_catalog_dcgm(GW_CATALOG_GPU_ECC_ERRORS_TOTAL, "uncorrected"),
		GW_FAM(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL));
}

/* Every family has its one row in the docs, in its section. */
static void markdown_lists_every_family(void **state)
{
	struct gw_buf b;

	(void)state;
	gw_buf_init(&b, 1u << 20);
	assert_int_equal(gw_catalog_markdown(&b), 0);
	for (int i = 0; i < GW_CATALOG_COUNT; i++) {
		char row[160];
		const char *at;

		snprintf(row, sizeof(row), "\n| `%s` | ",
			 gw_catalog[i].fam.name);
		at = strstr(b.p, row);
		if (!at || strstr(at + 1, row))
			fail_msg("%s: not one row", gw_catalog[i].fam.name);
	}
	assert_non_null(strstr(b.p,
			       "| `gpuwatch_gpu_clock_hertz` | gauge | "
			       "hertz | `gpu`, `uuid`, `pod`, `namespace`, "
			       "`container`, `clock` | "
			       "`DCGM_FI_DEV_SM_CLOCK` (clock=\"sm\"), "
			       "`DCGM_FI_DEV_MEM_CLOCK` (clock=\"memory\") "
			       "| Current clock, by clock domain. |\n"));
	/* A bound too small is an error, not a shorter document. */
	gw_buf_release(&b);
	gw_buf_init(&b, 4096);
	assert_int_equal(gw_catalog_markdown(&b), -ENOSPC);
	gw_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ids_follow_names),
		cmocka_unit_test(names_are_unique_and_conventional),
		cmocka_unit_test(label_lists_are_well_formed),
		cmocka_unit_test(dcgm_names_mirror_gpu_families),
		cmocka_unit_test(markdown_lists_every_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
