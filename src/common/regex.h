/* SPDX-License-Identifier: MIT */
/*
 * regex.h - regular expressions as Prometheus runs them: Go's RE2 syntax,
 * matched against the whole text, in time linear in the text.  A C front to
 * the RE2 library (regex.cc, the one C++ file of the agent).
 *
 * Syntax.  What Go's regexp/syntax accepts with its Perl flags, which is
 * RE2's syntax: no back-references (\1), look-around ((?=, (?<!),
 * possessive quantifiers (a*+), atomic groups or \C; those are errors.
 * Flags (?i) (?m) (?s) (?U) as in Go; "." does not match "\n" unless (?s)
 * is given, as in Prometheus 2.x.
 *
 * Anchoring.  A pattern is compiled as "^(?:pattern)$", the text Prometheus
 * builds, so it matches the whole value: "" matches only the empty string.
 * Prometheus additionally parses a label matcher's pattern on its own, so
 * that "a)|(b" (which the wrapping would turn into an alternation of a
 * prefix and a suffix) is an error there; GW_REGEX_MATCHER asks for that
 * check.  label_replace() does not make it, and neither does this module
 * without the flag.
 *
 * Size.  A pattern whose RE2 program passes RE2's default budget (8 MiB,
 * the program and its DFA cache together) is refused ("expression too
 * large"): Unicode classes repeated hundreds of times, e.g. "\pL{1000}",
 * which Go compiles to far fewer instructions and Prometheus accepts.  So
 * one pattern never costs the agent more than that, nor seconds to compile.
 *
 * Text.  Values are bytes.  As in Go, a byte that does not start a
 * well-formed UTF-8 sequence is read as U+FFFD, one byte at a time, so "."
 * matches it and "\x{fffd}" does too.  Capture offsets always refer to the
 * text as given.
 *
 * Errors: gw_regex_new returns 0, -EINVAL (a bad pattern: err holds Go's
 * message, e.g. "error parsing regexp: invalid escape sequence: `\1`") or
 * -ENOMEM.  Matching cannot fail for a compiled pattern: RE2 never
 * backtracks, and when its DFA cache is exhausted it falls back to another
 * engine rather than giving up.  Only gw_regex_match_groups can report
 * -ENOMEM (for a text that needs re-encoding).
 *
 * Ownership: a struct gw_regex is the caller's, freed by gw_regex_free
 * (NULL is a no-op).  Thread safety: a compiled pattern may be matched from
 * any number of threads at once.
 */
#ifndef GW_REGEX_H
#define GW_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gw_regex;

/* The pattern must also be valid on its own (Prometheus' label matchers). */
#define GW_REGEX_MATCHER 1u

/* Longest error text written, NUL included. */
#define GW_REGEX_ERR_MAX 256

/*
 * Compiles pattern (len bytes; it may hold any byte but must be valid
 * UTF-8, as in Go).  On -EINVAL, err (errlen bytes, may be NULL) receives
 * the message.
 */
__attribute__((warn_unused_result)) int gw_regex_new(struct gw_regex **out,
						     const char *pattern,
						     size_t len, unsigned flags,
						     char *err, size_t errlen);
void gw_regex_free(struct gw_regex *re);

/* True when the whole of s (len bytes) matches. */
bool gw_regex_match(const struct gw_regex *re, const char *s, size_t len);

/* The number of capture groups, the whole match not counted. */
int gw_regex_groups(const struct gw_regex *re);

/*
 * The number of the first group named name ((?P<name>...)), or -1.  Go
 * allows a name twice; like Go's Expand, $name then means the first.
 */
int gw_regex_group_index(const struct gw_regex *re, const char *name);

/* A capture: bytes [start, end) of the text; -1, -1 when it took no part. */
struct gw_regex_span {
	long start, end;
};

/*
 * Matches s like gw_regex_match and, on a match, fills g[0] with the whole
 * match (all of s, unless the pattern undid its anchoring as "a)|(b" does)
 * and g[i] with group i, for i < ng (groups past gw_regex_groups() are
 * -1, -1).  This is what label_replace() expands
 * "$1" and "${name}" from.  1 = matched, 0 = no match, -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_regex_match_groups(const struct gw_regex *re, const char *s, size_t len,
		      struct gw_regex_span *g, size_t ng);

#ifdef __cplusplus
}
#endif

#endif
