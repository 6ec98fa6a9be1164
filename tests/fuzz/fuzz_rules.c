// SPDX-License-Identifier: MIT
/*
 * fuzz_rules.c - the alert rule loader on arbitrary bytes: it must never
 * crash, leak or read out of bounds; a refusal leaves the set as it was and
 * carries a message naming the file; an accepted set is within its bounds,
 * every rule has a parsed expression of vector or scalar type, and every
 * template expands.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pipeline/rules.h"

#define NAME "fuzz.yml"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static void check_pairs(const struct gw_rule_pair *v, size_t n,
			const struct gw_labels *l)
{
	CHECK(n <= GW_RULES_MAX_PAIRS);
	for (size_t i = 0; i < n; i++) {
		struct gw_buf b;

		CHECK(gw_rules_label_name_ok(v[i].name));
		CHECK(strlen(v[i].text) <= GW_RULES_MAX_TEXT);
		gw_buf_init(&b, 1 << 20);
		CHECK(gw_tmpl_expand(&v[i].t, l, 1.5, &b) == 0);
		CHECK(gw_tmpl_expand(&v[i].t, NULL, NAN, &b) == 0);
		gw_buf_release(&b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_ruleset rs;
	struct gw_labels l;
	char err[GW_RULES_ERR_MAX];
	size_t nr = 0;
	int r;

	if (gw_labels_parse(&l, "m", "gpu=\"0\",job=\"x\""))
		return 0;
	gw_ruleset_init(&rs);
	memset(err, 0, sizeof(err));
	r = gw_rules_load_buffer(&rs, NAME, data, size, err, sizeof(err));
	CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	if (r) {
		CHECK(r < 0);
		CHECK(strncmp(err, NAME, strlen(NAME)) == 0);
		CHECK(rs.nrules == 0 && rs.ngroups == 0);
	} else {
		CHECK(rs.ngroups <= GW_RULES_MAX_GROUPS);
		CHECK(rs.nrules <= GW_RULES_MAX_RULES);
		for (size_t g = 0; g < rs.ngroups; g++) {
			CHECK(rs.groups[g].first == nr);
			CHECK(rs.groups[g].name[0] != '\0');
			CHECK(rs.groups[g].interval_ms == 0 ||
			      rs.groups[g].interval_ms >= 1000);
			nr += rs.groups[g].n;
		}
		CHECK(nr == rs.nrules);
		for (size_t i = 0; i < rs.nrules; i++) {
			const struct gw_rule *ru = &rs.rules[i];

			CHECK(gw_rules_alert_name_ok(ru->alert));
			CHECK(ru->ast && (ru->ast->type == GW_TYPE_VECTOR ||
					  ru->ast->type == GW_TYPE_SCALAR));
			CHECK(ru->for_ms >= 0 &&
			      ru->for_ms <= GW_RULES_MAX_FOR_MS);
			CHECK(ru->group < rs.ngroups);
			check_pairs(ru->labels, ru->nlabels, &l);
			check_pairs(ru->ann, ru->nann, &l);
		}
	}
	gw_ruleset_release(&rs);
	gw_labels_release(&l);
	return 0;
}
