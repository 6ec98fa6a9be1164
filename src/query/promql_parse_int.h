/* SPDX-License-Identifier: MIT */
/*
 * promql_parse_int.h - what the parser's two files share; internal to
 * src/query/, not part of the promql.h interface.
 *
 *   promql_parse.c       the entry points, tokens as Prometheus names them,
 *                        selectors, calls, aggregations, the node tree
 *   promql_parse_expr.c  expressions: binary operators (precedence, vector
 *                        matching, set operators), unary minus and the
 *                        postfix modifiers (range, subquery, offset, @)
 *
 * Conventions are promql_parse.c's: a function returns 0 or the first
 * error recorded in the lexer (p->lx.rc, see promql_lex.h), a node is
 * stored in *out as soon as it exists so that the caller frees it on
 * failure, and lookahead is at most two tokens.
 *
 * Thread safety: a parser is used by one thread.
 */
#ifndef GW_PROMQL_PARSE_INT_H
#define GW_PROMQL_PARSE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/promql.h"
#include "query/promql_lex.h"

struct parser {
	struct gw_pql_lexer lx; /* the query, the position, the first error */
	struct gw_pql_tok la[2];
	unsigned nla;
	unsigned depth;
};

/* Keywords, told apart from identifiers by the parser. */
enum kw {
	KW_NONE,
	KW_BY,
	KW_WITHOUT,
	KW_ON,
	KW_IGNORING,
	KW_BOOL,
	KW_OFFSET,
	KW_GROUP_LEFT,
	KW_GROUP_RIGHT,
	KW_START,
	KW_END,
	KW_AND,
	KW_OR,
	KW_UNLESS,
	KW_ATAN2,
	KW_AGG,	      /* an aggregation we evaluate */
	KW_AGG_OTHER, /* one of Prometheus' others */
};

/* "scalar", "instant vector", "range vector", "string". */
extern const char *const gw_pqp_type_name[];

/* promql_parse.c */
__attribute__((format(printf, 3, 4))) int
gw_pqp_fail(struct parser *p, size_t pos, const char *fmt, ...);
/* The k-th token ahead (k < 2); NULL after a lexer error. */
const struct gw_pql_tok *gw_pqp_peek(struct parser *p, unsigned k);
int gw_pqp_next(struct parser *p, struct gw_pql_tok *t);
/* "unexpected TOKEN[ in CONTEXT][, expected EXPECTED]" at t. */
int gw_pqp_unexpected(struct parser *p, const struct gw_pql_tok *t,
		      const char *context, const char *expected);
enum kw gw_pqp_keyword(const struct parser *p, const struct gw_pql_tok *t);
struct gw_pq_node *gw_pqp_node(struct parser *p, enum gw_pq_kind kind,
			       enum gw_pq_type type, uint32_t pos);
/* "(" label, ... ")" into a new array. */
int gw_pqp_grouping(struct parser *p, char ***labels, size_t *nlabels);
/* A literal, a selector, a call, an aggregation or a parenthesis. */
int gw_pqp_primary(struct parser *p, struct gw_pq_node **out);

/* promql_parse_expr.c */
int gw_pqp_expr(struct parser *p, struct gw_pq_node **out);

#endif /* GW_PROMQL_PARSE_INT_H */
