/* SPDX-License-Identifier: MIT */
/*
 * rules.h - alert rule files in Prometheus' format: load, validate and hold
 * them (evaluation is pipeline/alerts.h).
 *
 *   groups:
 *     - name: gpu                 # unique within a file
 *       interval: 30s             # optional; default: --rule-interval
 *       rules:
 *         - alert: GpuHot         # a metric-like name
 *           expr: gpuwatch_gpu_temperature_celsius > 85   # PromQL subset
 *           for: 2m               # optional, default 0s
 *           labels: {severity: warning}
 *           annotations: {summary: "GPU {{ $labels.gpu }} at {{ $value }} C"}
 *
 * Recording rules (record:) and keep_firing_for are refused with a message
 * that says so; so are the group keys limit and query_offset.
 *
 * Templates (label and annotation values): text with actions
 *   {{ $labels.NAME }}   the value of a label of the alert's series ("" if
 *                        absent)
 *   {{ $value }}         the sample value, shortest round-trip form
 *   {{ $value | F }} or {{ F $value }} with F one of humanize (SI
 *                        prefixes, 1.234k), humanizePercentage (0.5 ->
 *                        50%), humanizeDuration (seconds -> 1h 2m 3s)
 * Anything else between {{ }} is a load error that names its line.
 *
 * Errors: every refusal is one line "FILE:LINE: group 'g' rule 'r':
 * problem" (the group and rule parts when known): unknown or repeated keys,
 * missing fields, bad durations, PromQL errors with the PromQL position
 * ("1:5: parse error: ..."), bad label names, bad templates, bounds.
 * Functions return 0 or -errno (-EINVAL bad input, -ENOENT/-EACCES/... for
 * a file that cannot be read, -EFBIG past GW_RULES_MAX_FILE, -E2BIG past a
 * count bound, -ENOMEM).  On error the set is left as it was before the
 * call (a file is loaded whole or not at all).
 *
 * Ownership: a struct gw_ruleset owns all its strings and expressions.
 * Thread safety: none; a loaded set is read-only and may then be read from
 * several threads.
 */
#ifndef GW_RULES_H
#define GW_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "query/promql.h"
#include "store/labels.h"

#define GW_RULES_ERR_MAX    512
#define GW_RULES_MAX_FILE   (1u << 20) /* bytes per rule file */
#define GW_RULES_MAX_GROUPS 256	       /* groups in a set */
#define GW_RULES_MAX_RULES  2048       /* rules in a set */
#define GW_RULES_MAX_PAIRS  32	       /* labels, annotations per rule */
#define GW_RULES_MAX_TEXT   8192       /* bytes of one label/annotation */
#define GW_RULES_MAX_FOR_MS (7LL * 86400 * 1000)

enum gw_tmpl_op {
	GW_TMPL_TEXT,  /* literal text */
	GW_TMPL_LABEL, /* $labels.NAME, text = NAME */
	GW_TMPL_VALUE, /* $value */
	GW_TMPL_HUMANIZE,
	GW_TMPL_HUMANIZE_PCT,
	GW_TMPL_HUMANIZE_DUR,
};

struct gw_tmpl_part {
	enum gw_tmpl_op op;
	char *text; /* TEXT and LABEL; NULL otherwise */
};

struct gw_tmpl {
	struct gw_tmpl_part *v;
	size_t n;
};

struct gw_rule_pair {
	char *name;
	char *text; /* as written */
	struct gw_tmpl t;
};

struct gw_rule {
	char *alert;
	char *expr;
	struct gw_pq_node *ast;
	int64_t for_ms;
	struct gw_rule_pair *labels;
	size_t nlabels;
	struct gw_rule_pair *ann;
	size_t nann;
	unsigned int line; /* of "alert:" */
	size_t group;	   /* index into the set's groups */
};

struct gw_rule_group {
	char *name;
	char *file;
	int64_t interval_ms; /* 0: the evaluator's default */
	size_t first, n;     /* rules[first .. first + n) */
};

struct gw_ruleset {
	struct gw_rule_group *groups;
	size_t ngroups;
	struct gw_rule *rules;
	size_t nrules;
};

void gw_ruleset_init(struct gw_ruleset *rs);
void gw_ruleset_release(struct gw_ruleset *rs);

/* Appends the groups of a YAML document held in memory; name is used in
 * messages and as the groups' file. */
__attribute__((warn_unused_result)) int
gw_rules_load_buffer(struct gw_ruleset *rs, const char *name,
		     const unsigned char *data, size_t len, char *err,
		     size_t errlen);

/* Appends the groups of a file. */
__attribute__((warn_unused_result)) int
gw_rules_load_file(struct gw_ruleset *rs, const char *path, char *err,
		   size_t errlen);

/* The built-in rule set (deploy/rules/default.yml, compiled in). */
extern const char gw_default_rules[];
extern const unsigned long gw_default_rules_len;
#define GW_RULES_DEFAULT_NAME "<built-in>/default.yml"

/*
 * The rules an agent runs: the built-in set when with_defaults, then each
 * file in order.  On error rs is released and err names the file and line.
 */
__attribute__((warn_unused_result)) int
gw_rules_load_all(struct gw_ruleset *rs, bool with_defaults,
		  const char (*files)[1024], unsigned int nfiles, char *err,
		  size_t errlen);

/*
 * Parses template text into t (released with gw_tmpl_release).  On a bad
 * action returns -EINVAL with err naming it and *err_line the 0-based line
 * within text where it starts.
 */
__attribute__((warn_unused_result)) int gw_tmpl_parse(struct gw_tmpl *t,
						      const char *text,
						      char *err, size_t errlen,
						      unsigned int *err_line);
void gw_tmpl_release(struct gw_tmpl *t);

/* Appends t expanded for a series' labels and value.  0, -ENOSPC, -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_tmpl_expand(const struct gw_tmpl *t, const struct gw_labels *l, double value,
	       struct gw_buf *out);

/* The humanize functions as Prometheus' templates write them: 0, or an error
 * that may also stay in out, as after gw_buf_put(). */
__attribute__((warn_unused_result)) int gw_humanize(struct gw_buf *out,
						    double v);
__attribute__((warn_unused_result)) int gw_humanize_duration(struct gw_buf *out,
							     double seconds);

/* A valid label name (not starting with "__"), a valid alert name. */
bool gw_rules_label_name_ok(const char *s);
bool gw_rules_alert_name_ok(const char *s);

#endif
