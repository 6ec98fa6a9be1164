/* SPDX-License-Identifier: MIT */
/*
 * labels.h - label sets and label matchers, shared by the series index, the
 * store, the PromQL engine and the HTTP API.
 *
 * A label set is an array of name/value pairs sorted by name, with the
 * metric name as the label "__name__" (so it sorts first among the usual
 * lower-case names, as in Prometheus).  A set owns its strings: every name
 * and value is one allocation in a single block freed by gw_labels_release.
 *
 * Matchers follow PromQL: =, !=, =~, !~; regular expressions are PCRE2,
 * anchored at both ends ("^(?:re)$") as Prometheus anchors RE2.  A label
 * that is absent matches as the empty string.
 *
 * Errors: 0 or -errno (-EINVAL for bad text, -ENOMEM).  Not thread-safe per
 * object; a compiled matcher may be used from several threads at once.
 */
#ifndef GW_LABELS_H
#define GW_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

struct gw_label {
	const char *name;
	const char *value;
};

struct gw_labels {
	struct gw_label *v; /* sorted by name; points into the same block */
	size_t n;
};

#define GW_LABELS_MAX	   64	/* labels per series */
#define GW_LABEL_VALUE_MAX 1024 /* bytes per value */

/*
 * Parses a metric name and an exposition-style label list such as
 * `gpu="0",uuid="GPU-1"` (escapes \\ \" \n; may be "" or NULL) into a
 * sorted set that includes __name__.  Duplicate names are -EINVAL.
 */
__attribute__((warn_unused_result)) int
gw_labels_parse(struct gw_labels *out, const char *name, const char *text);

/* Builds a set from n pairs (any order); copies the strings. */
__attribute__((warn_unused_result)) int
gw_labels_from(struct gw_labels *out, const struct gw_label *pairs, size_t n);

/* Deep copy. */
__attribute__((warn_unused_result)) int
gw_labels_dup(struct gw_labels *out, const struct gw_labels *in);

void gw_labels_release(struct gw_labels *l);

/* The value of name, or NULL. */
const char *gw_labels_get(const struct gw_labels *l, const char *name);

/* Total order: by name then value, pair by pair, then by length. */
int gw_labels_cmp(const struct gw_labels *a, const struct gw_labels *b);

/*
 * Appends the canonical key `name{a="x",b="y"}` (the __name__ label as the
 * prefix, the others in order, exposition escaping).  Two sets are equal
 * exactly when their keys are.  Returns out's error: one that occurs stays
 * in out, as after gw_buf_put().
 */
__attribute__((warn_unused_result)) int gw_labels_key(const struct gw_labels *l,
						      struct gw_buf *out);

/*
 * A new set: l without __name__ (drop_name), and keeping only (keep=true) or
 * removing (keep=false) the names listed.  Used by aggregation "by" /
 * "without" and by vector matching "on" / "ignoring".
 */
__attribute__((warn_unused_result)) int
gw_labels_project(struct gw_labels *out, const struct gw_labels *l,
		  const char *const *names, size_t nnames, bool keep,
		  bool drop_name);

/*
 * JSON object {"name":"value",...} with JSON escaping.  Like gw_buf_put(),
 * a failure is kept in out for gw_buf_error().
 */
void gw_labels_json(const struct gw_labels *l, struct gw_buf *out);

/* Appends s as a JSON string literal, quotes included; errors as gw_buf_put(). */
void gw_json_str(struct gw_buf *out, const char *s);

enum gw_match_op {
	GW_MATCH_EQ,  /* =  */
	GW_MATCH_NE,  /* != */
	GW_MATCH_RE,  /* =~ */
	GW_MATCH_NRE, /* !~ */
};

struct gw_matcher {
	enum gw_match_op op;
	char *name;
	char *value;
	void *re; /* pcre2_code *, RE/NRE only */
};

/*
 * Compiles a matcher; on a bad regular expression returns -EINVAL and, if
 * err is not NULL, writes PCRE2's message and the offset into err.
 */
__attribute__((warn_unused_result)) int
gw_matcher_init(struct gw_matcher *m, enum gw_match_op op, const char *name,
		const char *value, char *err, size_t errlen);
void gw_matcher_release(struct gw_matcher *m);

/* True when value (NULL = label absent = "") satisfies m. */
bool gw_matcher_match(const struct gw_matcher *m, const char *value);

/*
 * The groups of a regular-expression matcher's (=~, !~) match of the whole
 * of s, for label_replace: ofs[2i] and ofs[2i+1] are the byte offsets of
 * group i (0: the whole match), -1 for a group that took no part, for the
 * first nofs / 2 groups.  Returns the number of groups + 1 of the
 * expression, 0 when s does not match, -EINVAL for a matcher without a
 * regular expression, -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_matcher_groups(const struct gw_matcher *m, const char *s, long *ofs,
		  size_t nofs);

/* The number of m's group named name (len bytes), or -1. */
int gw_matcher_group_number(const struct gw_matcher *m, const char *name,
			    size_t len);

/* True when every matcher accepts the set. */
bool gw_matchers_match(const struct gw_matcher *m, size_t n,
		       const struct gw_labels *l);

/* True when m accepts the empty string (so it also selects series lacking
 * the label); a selector needs one matcher for which this is false. */
bool gw_matcher_matches_empty(const struct gw_matcher *m);

/*
 * Appends name="value" with Prometheus escaping to b; no separator.  All or
 * nothing: on -ENOSPC/-ENOMEM b is as it was (a kept error is returned).
 */
__attribute__((warn_unused_result)) int
gw_labels_append(struct gw_buf *b, const char *name, const char *value);

#endif
