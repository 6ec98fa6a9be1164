/* SPDX-License-Identifier: MIT */
/*
 * promql_lex.h - the PromQL subset's lexer; internal to promql_parse.c and
 * promql_lex.c, not part of the promql.h interface.
 *
 * Tokens.  A struct gw_pql_tok is a kind, the byte extent [pos, end) of its
 * text in the query, and a value where the kind has one: the operator of
 * GW_PQL_T_OP (also "!=" inside braces), the number of GW_PQL_T_NUMBER
 * (decimal, hex, Go-style octal, exponents, Inf and NaN in any case), the
 * milliseconds of GW_PQL_T_DURATION.  Identifiers are not told apart from
 * keywords here; that is the parser's business.  The lexer has three modes,
 * as Prometheus' does: statements (the default; '#' starts a comment to the
 * end of the line), inside {braces} (label matchers) and inside [brackets]
 * (durations); it switches on { } [ ] itself and counts open parentheses
 * so that the end of input can report one left unclosed.  Space is ' ',
 * '\t', '\n', '\r'.
 *
 * Ownership.  The lexer borrows the query: it allocates nothing, and the
 * query text must outlive the lexer and every token.  A token holds no
 * text of its own, only its extent.  A string literal's escapes are
 * checked when it is lexed but decoded only by gw_pql_dup_string;
 * gw_pql_dup_text copies a token's text as written.  Both return a
 * malloc'd NUL-terminated copy that the caller frees.
 *
 * Errors.  The lexer is also the parser's error sink: the first error
 * recorded (by the lexer itself, or by the parser through gw_pql_vfail or
 * gw_pql_nomem) sets rc to -EINVAL or -ENOMEM and fills the caller's
 * struct gw_promql_error (if any) with the byte offset and
 * "LINE:COL: parse error: MESSAGE", LINE 1-based, COL 1-based in bytes;
 * later errors are ignored and the first one is returned again.  Once rc
 * is set, gw_pql_lex must not be called again.
 *
 * Thread safety: a lexer is used by one thread; the functions keep no
 * state outside it.
 */
#ifndef GW_PROMQL_LEX_H
#define GW_PROMQL_LEX_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "query/promql.h"

enum gw_pql_tk {
	GW_PQL_T_EOF,
	GW_PQL_T_IDENT, /* names, keywords; ':' allowed outside braces */
	GW_PQL_T_NUMBER,
	GW_PQL_T_DURATION, /* only where a number cannot be: 5m, 1h30m */
	GW_PQL_T_STRING,   /* "..", '..' or `..`, quotes included */
	GW_PQL_T_LPAREN,
	GW_PQL_T_RPAREN,
	GW_PQL_T_LBRACE,
	GW_PQL_T_RBRACE,
	GW_PQL_T_LBRACKET,
	GW_PQL_T_RBRACKET,
	GW_PQL_T_COMMA,
	GW_PQL_T_COLON,
	GW_PQL_T_AT,
	GW_PQL_T_EQL, /* = */
	GW_PQL_T_OP,  /* a binary operator, in tok.op */
	GW_PQL_T_RE,  /* =~ */
	GW_PQL_T_NRE, /* !~ */
};

struct gw_pql_tok {
	enum gw_pql_tk type;
	enum gw_pq_binop op;
	uint32_t pos, end; /* byte extent in the query */
	double num;
	int64_t ms;
};

enum gw_pql_mode { GW_PQL_M_STMT, GW_PQL_M_BRACE, GW_PQL_M_BRACKET };

/* All fields private to promql_lex.c except q, len and rc, which the
 * parser reads. */
struct gw_pql_lexer {
	const char *q;
	size_t len;
	size_t pos;
	enum gw_pql_mode mode;
	unsigned parens;
	struct gw_promql_error *err;
	int rc; /* the first error, once set */
};

/*
 * Starts lexing the len bytes at query (borrowed; at most
 * GW_PROMQL_MAX_QUERY) and clears err.  A NULL or too long query is an
 * error, recorded as any other: returns 0 or -EINVAL.  A NUL byte among
 * the len is a character like any other (an unexpected one).
 */
__attribute__((warn_unused_result)) int
gw_pql_lex_init(struct gw_pql_lexer *lx, const char *query, size_t len,
		struct gw_promql_error *err);

/* The next token into t (cleared first, extent always set); at the end of
 * input GW_PQL_T_EOF, or an error inside braces, brackets or parentheses.
 * Returns 0 or the error recorded. */
__attribute__((warn_unused_result)) int gw_pql_lex(struct gw_pql_lexer *lx,
						   struct gw_pql_tok *t);

/* Records an error at byte offset pos (see Errors above); returns rc, for
 * "return gw_pql_vfail(...)". */
__attribute__((format(printf, 3, 0))) int
gw_pql_vfail(struct gw_pql_lexer *lx, size_t pos, const char *fmt, va_list ap);

/* Records "out of memory" at offset 0 with -ENOMEM; returns rc. */
int gw_pql_nomem(struct gw_pql_lexer *lx);

/* The token's text as written, malloc'd; NULL (rc set) on no memory. */
__attribute__((warn_unused_result)) char *
gw_pql_dup_text(struct gw_pql_lexer *lx, const struct gw_pql_tok *t);

/* A GW_PQL_T_STRING token's value with its escapes decoded, malloc'd;
 * NULL (rc set) on no memory. */
__attribute__((warn_unused_result)) char *
gw_pql_dup_string(struct gw_pql_lexer *lx, const struct gw_pql_tok *t);

/* The parser's names (promql_parse.c), for the canonical form
 * (promql_format.c): a function's name and an operator's text; NULL for a
 * value they do not know. */
const char *gw_pql_func_name(enum gw_pq_func fn);
const char *gw_pql_op_text(enum gw_pq_binop op);

#endif /* GW_PROMQL_LEX_H */
