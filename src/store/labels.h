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
 * An empty value is an absent label, as in Prometheus: every constructor
 * here (parse, from, dup, project) leaves out pairs with an empty value, so
 * `m{comm=""}` and `m` are one set, one key, one series; and no set ever
 * holds an empty value.  Label text built for exposition goes through
 * gw_labels_append_list() for the same reason.
 *
 * Matchers follow PromQL: =, !=, =~, !~; regular expressions are RE2's
 * syntax, matched against the whole value, as Prometheus runs them
 * (common/regex.h).  A label that is absent matches as the empty string.
 *
 * Errors: 0 or -errno (-EINVAL for bad text, -ENOMEM).  Not thread-safe per
 * object; a compiled matcher may be used from several threads at once.
 */
#ifndef GW_LABELS_H
#define GW_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/regex.h"

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

/*
 * Appends s as a JSON string literal, quotes included; errors as
 * gw_buf_put().  Always valid UTF-8 and JSON: a byte that is not part of a
 * well-formed UTF-8 sequence is written as \ufffd, as Go's encoder does.
 */
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
	struct gw_regex *re; /* RE/NRE only */
};

/*
 * Compiles a matcher; on a bad regular expression returns -EINVAL and, if
 * err is not NULL, writes the message Prometheus gives into err (e.g.
 * "error parsing regexp: invalid escape sequence: `\1`").
 */
__attribute__((warn_unused_result)) int
gw_matcher_init(struct gw_matcher *m, enum gw_match_op op, const char *name,
		const char *value, char *err, size_t errlen);
void gw_matcher_release(struct gw_matcher *m);

/* True when value (NULL = label absent = "") satisfies m. */
bool gw_matcher_match(const struct gw_matcher *m, const char *value);

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

/*
 * Appends an exposition-style label list (`a="x",b="y"`, as
 * gw_labels_append() writes its pairs) without the pairs whose value is
 * empty, commas between the others; no leading or trailing separator.
 * Text that is not such a list is appended from where it stops being one.
 * Errors stay in b as after gw_buf_put() and are returned.
 */
__attribute__((warn_unused_result)) int gw_labels_append_list(struct gw_buf *b,
							      const char *text);

#endif
