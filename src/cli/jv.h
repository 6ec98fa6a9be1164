/* SPDX-License-Identifier: MIT */
/*
 * jv.h - a small JSON reader for the agent's API answers, shared by the
 * subcommands that talk to an agent (query, top).
 *
 * gw_jv_parse() builds a tree the caller owns and frees with
 * gw_jv_release() (NULL and a zeroed value are fine).  Numbers and
 * booleans keep their text; strings are decoded to UTF-8.  Nesting deeper
 * than 64 levels, a string over 64 MiB, trailing bytes and anything not
 * JSON are -EINVAL, an allocation failure -ENOMEM; the tree is then empty.
 * Not thread safe for one tree; separate trees are independent.
 */
#ifndef GW_CLI_JV_H
#define GW_CLI_JV_H

#include <stddef.h>

enum gw_jv_type {
	GW_JV_NULL,
	GW_JV_BOOL,
	GW_JV_NUM,
	GW_JV_STR,
	GW_JV_ARR,
	GW_JV_OBJ
};

struct gw_jv {
	enum gw_jv_type t;
	char *s;	 /* STR: decoded; NUM, BOOL: the text */
	struct gw_jv *v; /* ARR, OBJ: n values */
	char **k;	 /* OBJ: n keys */
	size_t n;
};

__attribute__((warn_unused_result)) int
gw_jv_parse(const char *text, size_t len, struct gw_jv *out);
void gw_jv_release(struct gw_jv *j);

/* The member KEY of object O; NULL when O is not an object or lacks it. */
const struct gw_jv *gw_jv_get(const struct gw_jv *o, const char *key);
/* J's text when it is a string, else NULL. */
const char *gw_jv_str(const struct gw_jv *j);

#endif
