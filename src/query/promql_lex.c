/* SPDX-License-Identifier: MIT */
/*
 * promql_lex.c - the PromQL subset's lexer (see promql_lex.h): tokens in
 * three modes, string literals with Go's escapes, numbers and durations,
 * and the error sink that turns a byte offset into "LINE:COL".  Durations
 * are common/parse.c's grammar, also behind gw_promql_duration (promql.h).
 *
 * Messages are worded after Prometheus' lexer, characters quoted the way
 * Go's %q and %#U write them (quote_char, unicode_name).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/parse.h"
#include "common/utf8.h"
#include "query/promql_lex.h"

/* ---- errors ---- */

static int fail(struct gw_pql_lexer *lx, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Copies the text src into dst (cap bytes with its NUL) as valid UTF-8:
 * a byte that does not start a well-formed sequence is written \xNN, and
 * a cut never falls inside a sequence or an escape.  An error message
 * quotes the query, which may be anything; the reply that carries the
 * message is JSON, which must be UTF-8.
 */
static void valid_utf8(char *dst, size_t cap, const char *src)
{
	size_t o = 0;

	if (!cap)
		return;
	while (*src) {
		size_t u =
			gw_utf8_len((const unsigned char *)src, SIZE_MAX, NULL);

		if (u && o + u < cap) {
			memcpy(dst + o, src, u);
			o += u;
			src += u;
		} else if (!u && o + 4 < cap) {
			snprintf(dst + o, cap - o, "\\x%02x",
				 (unsigned char)*src);
			o += 4;
			src++;
		} else {
			break;
		}
	}
	dst[o] = '\0';
}

static void set_error(struct gw_promql_error *e, const char *q, size_t len,
		      size_t pos, const char *msg)
{
	unsigned line = 1;
	size_t last_nl = (size_t)-1;

	if (!e)
		return;
	if (pos > len)
		pos = len;
	for (size_t i = 0; i < pos; i++)
		if (q[i] == '\n') {
			line++;
			last_nl = i;
		}
	e->pos = (uint32_t)pos;
	/* The message is cut to fit after the position prefix. */
	snprintf(e->msg, sizeof(e->msg), "%u:%zu: parse error: ", line,
		 pos - last_nl);
	valid_utf8(e->msg + strlen(e->msg), 200, msg);
}

int gw_pql_vfail(struct gw_pql_lexer *lx, size_t pos, const char *fmt,
		 va_list ap)
{
	char msg[256];

	if (lx->rc)
		return lx->rc;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	set_error(lx->err, lx->q, lx->len, pos, msg);
	lx->rc = -EINVAL;
	return lx->rc;
}

static int fail(struct gw_pql_lexer *lx, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = gw_pql_vfail(lx, pos, fmt, ap);
	va_end(ap);
	return rc;
}

int gw_pql_nomem(struct gw_pql_lexer *lx)
{
	if (!lx->rc) {
		set_error(lx->err, lx->q, lx->len, 0, "out of memory");
		lx->rc = -ENOMEM;
	}
	return lx->rc;
}

/* ---- character classes ---- */

static bool is_alpha(int c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(int c)
{
	return is_alpha(c) || is_digit(c);
}

static bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

/* Go's %q of the character at q[i], into buf. */
static const char *quote_char(const char *q, size_t len, size_t i, char *buf,
			      size_t n)
{
	unsigned char c = (unsigned char)q[i];
	size_t u;

	if (c == '\'' || c == '\\')
		snprintf(buf, n, "'\\%c'", c);
	else if (c >= 0x20 && c < 0x7f)
		snprintf(buf, n, "'%c'", c);
	else if (c == '\n')
		snprintf(buf, n, "'\\n'");
	else if (c == '\t')
		snprintf(buf, n, "'\\t'");
	else if (c < 0x80)
		snprintf(buf, n, "'\\x%02x'", c);
	else if ((u = gw_utf8_len((const unsigned char *)q + i, len - i,
				  NULL)) != 0)
		snprintf(buf, n, "'%.*s'", (int)u, q + i);
	else
		snprintf(buf, n, "'\\ufffd'");
	return buf;
}

/* Go's %#U of a code point. */
static const char *unicode_name(uint32_t cp, char *buf, size_t n)
{
	if (cp >= 0x20 && cp < 0x7f)
		snprintf(buf, n, "U+%04X '%c'", (unsigned)cp, (int)cp);
	else
		snprintf(buf, n, "U+%04X", (unsigned)cp);
	return buf;
}

/* ---- strings ---- */

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Scans the string literal opening at q[start] (", ' or `) with Go's
 * rules: escapes \a \b \f \n \r \t \v \\, the opening quote, \NNN octal,
 * \xNN, \uNNNN, \UNNNNNNNN; raw strings take bytes as they are.  Writes
 * the decoded bytes to out (if not NULL; never longer than the literal)
 * and sets *end past the closing quote.  Returns 0 or -EINVAL with a
 * message in msg.  NUL bytes are refused: values are C strings here.
 */
static int scan_string(const char *q, size_t len, size_t start, char *out,
		       size_t *outlen, size_t *end, char *msg, size_t msgn)
{
	char quote = q[start];
	size_t i = start + 1, o = 0;
	char nb[32];

	for (;;) {
		unsigned char c;
		size_t u;

		if (i >= len) {
			snprintf(msg, msgn,
				 quote == '`' ? "unterminated raw string"
					      : "unterminated quoted string");
			return -EINVAL;
		}
		c = (unsigned char)q[i];
		if (c == (unsigned char)quote) {
			i++;
			break;
		}
		if (c == '\n' && quote != '`') {
			snprintf(msg, msgn, "unterminated quoted string");
			return -EINVAL;
		}
		if (c == '\\' && quote != '`') {
			uint32_t x = 0, max = 255;
			int n = 0, base = 16;
			char e;

			if (i + 1 >= len) {
				snprintf(msg, msgn,
					 "escape sequence not terminated");
				return -EINVAL;
			}
			e = q[i + 1];
			i += 2;
			switch (e) {
			case 'a':
				x = '\a';
				break;
			case 'b':
				x = '\b';
				break;
			case 'f':
				x = '\f';
				break;
			case 'n':
				x = '\n';
				break;
			case 'r':
				x = '\r';
				break;
			case 't':
				x = '\t';
				break;
			case 'v':
				x = '\v';
				break;
			case '\\':
				x = '\\';
				break;
			case '0':
			case '1':
			case '2':
			case '3':
			case '4':
			case '5':
			case '6':
			case '7':
				n = 3, base = 8, i--;
				break;
			case 'x':
				n = 2;
				break;
			case 'u':
				n = 4, max = 0x10ffff;
				break;
			case 'U':
				n = 8, max = 0x10ffff;
				break;
			default:
				if (e == quote) {
					x = (unsigned char)e;
					break;
				}
				snprintf(msg, msgn,
					 "unknown escape sequence %s",
					 unicode_name((unsigned char)e, nb,
						      sizeof(nb)));
				return -EINVAL;
			}
			for (int k = 0; k < n; k++, i++) {
				int d;

				if (i >= len) {
					snprintf(msg, msgn,
						 "escape sequence not "
						 "terminated");
					return -EINVAL;
				}
				d = hexval((unsigned char)q[i]);
				if (d >= base) {
					snprintf(msg, msgn,
						 "illegal character %s in "
						 "escape sequence",
						 unicode_name(
							 (unsigned char)q[i],
							 nb, sizeof(nb)));
					return -EINVAL;
				}
				x = x * (uint32_t)base + (uint32_t)d;
			}
			if (n && (x > max || (x >= 0xd800 && x < 0xe000))) {
				snprintf(msg, msgn,
					 "escape sequence is an invalid "
					 "Unicode code point");
				return -EINVAL;
			}
			if (x == 0) {
				snprintf(msg, msgn,
					 "strings must not contain NUL "
					 "characters");
				return -EINVAL;
			}
			if (out) {
				if (max == 255)
					out[o++] = (char)x;
				else
					o += put_utf8(out + o, x);
			}
			continue;
		}
		if (q[i] == '\0') {
			snprintf(msg, msgn,
				 "strings must not contain NUL characters");
			return -EINVAL;
		}
		u = gw_utf8_len((const unsigned char *)q + i, len - i, NULL);
		if (!u) {
			snprintf(msg, msgn, "invalid UTF-8 rune");
			return -EINVAL;
		}
		if (out)
			memcpy(out + o, q + i, u);
		o += u;
		i += u;
	}
	if (out)
		out[o] = '\0';
	if (outlen)
		*outlen = o;
	*end = i;
	return 0;
}

/* ---- durations ---- */

/* Prometheus' duration syntax over s[0..n): common/parse.h. */
static int parse_duration(const char *s, size_t n, int64_t *ms, char *msg,
			  size_t msgn)
{
	return gw_parse_prom_duration(s, n, ms, msg, msgn) ? -EINVAL : 0;
}

int gw_promql_duration(const char *s, int64_t *ms)
{
	char msg[160];
	int64_t v;
	size_t n;

	if (!s || !ms)
		return -EINVAL;
	n = strnlen(s, 64);
	if (n >= 64 || parse_duration(s, n, &v, msg, sizeof(msg)))
		return -EINVAL;
	*ms = v;
	return 0;
}

/* ---- lexer ---- */

static int lex_number_or_duration(struct gw_pql_lexer *lx, struct gw_pql_tok *t)
{
	const char *q = lx->q;
	size_t s = lx->pos, i = s;
	bool hex = false;
	char msg[200];

	if (q[i] == '0' && i + 1 < lx->len &&
	    (q[i + 1] == 'x' || q[i + 1] == 'X') && i + 2 < lx->len &&
	    hexval((unsigned char)q[i + 2]) < 16) {
		hex = true;
		i += 2;
		while (i < lx->len && hexval((unsigned char)q[i]) < 16)
			i++;
	} else {
		while (i < lx->len && is_digit((unsigned char)q[i]))
			i++;
		if (i < lx->len && q[i] == '.') {
			i++;
			while (i < lx->len && is_digit((unsigned char)q[i]))
				i++;
		}
		if (i < lx->len && (q[i] == 'e' || q[i] == 'E')) {
			size_t j = i + 1;

			if (j < lx->len && (q[j] == '+' || q[j] == '-'))
				j++;
			if (j < lx->len && is_digit((unsigned char)q[j])) {
				i = j;
				while (i < lx->len &&
				       is_digit((unsigned char)q[i]))
					i++;
			}
		}
	}
	if (i >= lx->len || (!is_alnum((unsigned char)q[i]) && q[i] != '.')) {
		char text[400];
		char *endp;
		long long iv;
		double v;

		if (i - s >= sizeof(text))
			return fail(
				lx, s,
				"bad number or duration syntax: \"%.40s...\"",
				q + s);
		memcpy(text, q + s, i - s);
		text[i - s] = '\0';
		/* Integers in Go's base-0 syntax first (0755 is octal). */
		errno = 0;
		iv = strtoll(text, &endp, 0);
		if (*endp == '\0' && errno == 0) {
			v = (double)iv;
		} else {
			errno = 0;
			v = strtod(text, &endp);
			if (*endp != '\0')
				return fail(
					lx, s,
					"bad number or duration syntax: \"%s\"",
					text);
			if (errno == ERANGE && isinf(v))
				return fail(lx, s,
					    "error parsing number \"%.40s\": "
					    "value out of range",
					    text);
		}
		t->type = GW_PQL_T_NUMBER;
		t->num = v;
		lx->pos = i;
		return 0;
	}
	/* A duration: the digits so far, then unit letters and more pairs. */
	i = s;
	while (i < lx->len && is_alnum((unsigned char)q[i]))
		i++;
	{
		bool ok = !hex && i > s;
		size_t j = s;

		/* digits, [smhdwy], optional s, then (digits [smhdw] s?)* */
		while (ok && j < i) {
			size_t d = j;

			while (j < i && is_digit((unsigned char)q[j]))
				j++;
			if (j == d || j >= i || !strchr("smhdwy", q[j])) {
				ok = false;
				break;
			}
			j++;
			if (j < i && q[j] == 's')
				j++;
		}
		if (!ok || (i < lx->len && q[i] == '.')) {
			size_t e = s;

			while (e < lx->len &&
			       (is_alnum((unsigned char)q[e]) || q[e] == '.'))
				e++;
			return fail(lx, s,
				    "bad number or duration syntax: \"%.*s\"",
				    (int)(e - s > 64 ? 64 : e - s), q + s);
		}
	}
	if (parse_duration(q + s, i - s, &t->ms, msg, sizeof(msg)))
		return fail(lx, s, "%s", msg);
	t->type = GW_PQL_T_DURATION;
	lx->pos = i;
	return 0;
}

static int lex_string(struct gw_pql_lexer *lx, struct gw_pql_tok *t)
{
	char msg[200];
	size_t end;

	if (scan_string(lx->q, lx->len, lx->pos, NULL, NULL, &end, msg,
			sizeof(msg)))
		return fail(lx, lx->pos, "%s", msg);
	t->type = GW_PQL_T_STRING;
	lx->pos = end;
	return 0;
}

static void skip_space(struct gw_pql_lexer *lx, bool comments)
{
	while (lx->pos < lx->len) {
		char c = lx->q[lx->pos];

		if (is_space((unsigned char)c)) {
			lx->pos++;
		} else if (c == '#' && comments) {
			/* A NUL ends the comment too: it is then an error,
			 * wherever it is in the query. */
			while (lx->pos < lx->len && lx->q[lx->pos] != '\n' &&
			       lx->q[lx->pos] != '\0')
				lx->pos++;
		} else {
			break;
		}
	}
}

static int lex_brace(struct gw_pql_lexer *lx, struct gw_pql_tok *t)
{
	const char *q = lx->q;
	char cb[16];
	char c;

	skip_space(lx, false);
	t->pos = (uint32_t)lx->pos;
	if (lx->pos >= lx->len)
		return fail(lx, lx->pos,
			    "unexpected end of input inside braces");
	c = q[lx->pos];
	if (is_alpha((unsigned char)c)) {
		while (lx->pos < lx->len && is_alnum((unsigned char)q[lx->pos]))
			lx->pos++;
		t->type = GW_PQL_T_IDENT;
		return 0;
	}
	if (c == '"' || c == '\'' || c == '`')
		return lex_string(lx, t);
	lx->pos++;
	switch (c) {
	case ',':
		t->type = GW_PQL_T_COMMA;
		return 0;
	case '}':
		t->type = GW_PQL_T_RBRACE;
		lx->mode = GW_PQL_M_STMT;
		return 0;
	case '=':
		if (lx->pos < lx->len && q[lx->pos] == '~') {
			lx->pos++;
			t->type = GW_PQL_T_RE;
		} else {
			t->type = GW_PQL_T_EQL;
		}
		return 0;
	case '!':
		if (lx->pos < lx->len && q[lx->pos] == '~') {
			lx->pos++;
			t->type = GW_PQL_T_NRE;
			return 0;
		}
		if (lx->pos < lx->len && q[lx->pos] == '=') {
			lx->pos++;
			t->type = GW_PQL_T_OP;
			t->op = GW_OP_NE;
			return 0;
		}
		if (lx->pos >= lx->len)
			return fail(lx, lx->pos,
				    "unexpected end of input inside braces");
		return fail(lx, lx->pos - 1,
			    "unexpected character after '!' inside braces: %s",
			    quote_char(q, lx->len, lx->pos, cb, sizeof(cb)));
	case '{':
		return fail(lx, lx->pos - 1, "unexpected left brace '{'");
	default:
		return fail(
			lx, lx->pos - 1,
			"unexpected character inside braces: %s",
			quote_char(q, lx->len, lx->pos - 1, cb, sizeof(cb)));
	}
}

static int lex_bracket(struct gw_pql_lexer *lx, struct gw_pql_tok *t)
{
	char cb[16];
	char c;

	skip_space(lx, false);
	t->pos = (uint32_t)lx->pos;
	if (lx->pos >= lx->len)
		return fail(lx, lx->pos, "unclosed left bracket");
	c = lx->q[lx->pos];
	if (is_digit((unsigned char)c) ||
	    (c == '.' && lx->pos + 1 < lx->len &&
	     is_digit((unsigned char)lx->q[lx->pos + 1])))
		return lex_number_or_duration(lx, t);
	switch (c) {
	case ':':
		lx->pos++;
		t->type = GW_PQL_T_COLON;
		return 0;
	case ']':
		lx->pos++;
		t->type = GW_PQL_T_RBRACKET;
		lx->mode = GW_PQL_M_STMT;
		return 0;
	default:
		return fail(
			lx, lx->pos,
			"unexpected character in duration expression: %s",
			quote_char(lx->q, lx->len, lx->pos, cb, sizeof(cb)));
	}
}

static int lex_stmt(struct gw_pql_lexer *lx, struct gw_pql_tok *t)
{
	const char *q = lx->q;
	char cb[16];
	char c, n;

	skip_space(lx, true);
	t->pos = (uint32_t)lx->pos;
	if (lx->pos >= lx->len) {
		if (lx->parens)
			return fail(lx, lx->pos, "unclosed left parenthesis");
		t->type = GW_PQL_T_EOF;
		return 0;
	}
	c = q[lx->pos];
	n = lx->pos + 1 < lx->len ? q[lx->pos + 1] : '\0';
	if (is_alpha((unsigned char)c) || c == ':') {
		size_t s = lx->pos;

		while (lx->pos < lx->len &&
		       (is_alnum((unsigned char)q[lx->pos]) ||
			q[lx->pos] == ':'))
			lx->pos++;
		t->type = GW_PQL_T_IDENT;
		if ((lx->pos - s == 3 && (strncasecmp(q + s, "inf", 3) == 0 ||
					  strncasecmp(q + s, "nan", 3) == 0))) {
			t->type = GW_PQL_T_NUMBER;
			t->num = (q[s] | 0x20) == 'i' ? INFINITY : NAN;
		}
		return 0;
	}
	if (is_digit((unsigned char)c) ||
	    (c == '.' && is_digit((unsigned char)n)))
		return lex_number_or_duration(lx, t);
	if (c == '"' || c == '\'' || c == '`')
		return lex_string(lx, t);
	lx->pos++;
	t->type = GW_PQL_T_OP;
	switch (c) {
	case '(':
		t->type = GW_PQL_T_LPAREN;
		lx->parens++;
		return 0;
	case ')':
		if (!lx->parens)
			return fail(lx, lx->pos - 1,
				    "unexpected right parenthesis ')'");
		lx->parens--;
		t->type = GW_PQL_T_RPAREN;
		return 0;
	case '{':
		t->type = GW_PQL_T_LBRACE;
		lx->mode = GW_PQL_M_BRACE;
		return 0;
	case '[':
		t->type = GW_PQL_T_LBRACKET;
		lx->mode = GW_PQL_M_BRACKET;
		return 0;
	case ',':
		t->type = GW_PQL_T_COMMA;
		return 0;
	case '@':
		t->type = GW_PQL_T_AT;
		return 0;
	case '+':
		t->op = GW_OP_ADD;
		return 0;
	case '-':
		t->op = GW_OP_SUB;
		return 0;
	case '*':
		t->op = GW_OP_MUL;
		return 0;
	case '/':
		t->op = GW_OP_DIV;
		return 0;
	case '%':
		t->op = GW_OP_MOD;
		return 0;
	case '^':
		t->op = GW_OP_POW;
		return 0;
	case '=':
		if (n == '=') {
			lx->pos++;
			t->op = GW_OP_EQ;
			return 0;
		}
		if (n == '~')
			return fail(lx, lx->pos - 1,
				    "unexpected character after '=': '~'");
		t->type = GW_PQL_T_EQL;
		return 0;
	case '!':
		if (n == '=') {
			lx->pos++;
			t->op = GW_OP_NE;
			return 0;
		}
		if (!n)
			return fail(lx, lx->pos - 1,
				    "unexpected end of input after '!'");
		return fail(lx, lx->pos - 1,
			    "unexpected character after '!': %s",
			    quote_char(q, lx->len, lx->pos, cb, sizeof(cb)));
	case '<':
		if (n == '=') {
			lx->pos++;
			t->op = GW_OP_LE;
		} else {
			t->op = GW_OP_LT;
		}
		return 0;
	case '>':
		if (n == '=') {
			lx->pos++;
			t->op = GW_OP_GE;
		} else {
			t->op = GW_OP_GT;
		}
		return 0;
	case ']':
		return fail(lx, lx->pos - 1, "unexpected right bracket ']'");
	default:
		return fail(
			lx, lx->pos - 1, "unexpected character: %s",
			quote_char(q, lx->len, lx->pos - 1, cb, sizeof(cb)));
	}
}

/* ---- the lexer's interface ---- */

int gw_pql_lex(struct gw_pql_lexer *lx, struct gw_pql_tok *t)
{
	int err;

	memset(t, 0, sizeof(*t));
	switch (lx->mode) {
	case GW_PQL_M_BRACE:
		err = lex_brace(lx, t);
		break;
	case GW_PQL_M_BRACKET:
		err = lex_bracket(lx, t);
		break;
	default:
		err = lex_stmt(lx, t);
		break;
	}
	t->end = (uint32_t)lx->pos;
	return err;
}

int gw_pql_lex_init(struct gw_pql_lexer *lx, const char *query, size_t len,
		    struct gw_promql_error *err)
{
	memset(lx, 0, sizeof(*lx));
	lx->err = err;
	if (err) {
		err->pos = 0;
		err->msg[0] = '\0';
	}
	if (!query) {
		lx->q = "";
		return fail(lx, 0, "no query given");
	}
	lx->q = query;
	lx->len = len;
	if (lx->len > GW_PROMQL_MAX_QUERY) {
		lx->len = 0;
		return fail(lx, 0, "query is longer than %d bytes",
			    GW_PROMQL_MAX_QUERY);
	}
	return 0;
}

char *gw_pql_dup_text(struct gw_pql_lexer *lx, const struct gw_pql_tok *t)
{
	size_t n = t->end - t->pos;
	char *s = malloc(n + 1);

	if (!s) {
		gw_pql_nomem(lx);
		return NULL;
	}
	memcpy(s, lx->q + t->pos, n);
	s[n] = '\0';
	return s;
}

char *gw_pql_dup_string(struct gw_pql_lexer *lx, const struct gw_pql_tok *t)
{
	char msg[160];
	size_t end;
	char *s = malloc(t->end - t->pos + 1);

	if (!s) {
		gw_pql_nomem(lx);
		return NULL;
	}
	/* Validated by the lexer already. */
	if (scan_string(lx->q, lx->len, t->pos, s, NULL, &end, msg,
			sizeof(msg))) {
		free(s);
		fail(lx, t->pos, "%s", msg);
		return NULL;
	}
	return s;
}
