/* SPDX-License-Identifier: MIT */
/*
 * promql_parse.c - the PromQL subset's parser and type checker.  Tokens
 * come from promql_lex.c; the canonical printer is promql_format.c.
 *
 * Recursive descent with precedence climbing over two tokens of
 * lookahead.  Tokens carry only their extent; strings are decoded when the
 * parser takes them.  Types are set and checked as each node is built, so
 * the first error found wins and parsing stops there.
 *
 * Prometheus' rules followed here (see promql.h for the subset):
 *  - keywords are case-insensitive (SUM, By, OFFSET); function names are not;
 *  - an aggregation name is an aggregation only when "(" or by/without
 *    follows, otherwise it is a metric name ("sum", "foo * min"); so are
 *    by, without, offset, and, or, unless;
 *  - unary minus binds looser than ^ (-2 ^ 2 is -(2 ^ 2)) and tighter than
 *    * / %; a minus on a number literal folds into the literal;
 *  - offset and [range] bind tighter than any operator;
 *  - a range or an offset of 0 is refused; offsets may be negative;
 *  - scalar comparisons need "bool"; "bool" only goes with comparisons;
 *  - errors read "LINE:COL: parse error: MESSAGE", COL 1-based in bytes
 *    (the lexer records them, see promql_lex.h).
 *
 * Depth: every nesting level (parenthesis, call, unary operator) and every
 * operator of a chain counts one; past GW_PROMQL_MAX_DEPTH the query is
 * refused, which bounds the recursion here, in the evaluator and in
 * gw_promql_free.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "query/promql.h"
#include "query/promql_int.h"
#include "query/promql_lex.h"
#include "query/promql_parse_int.h"

#define MAX_MATCHERS 256
#define MAX_ITEMS    1024 /* call arguments, grouping labels */

/* ---- errors ---- */

static int fail(struct parser *p, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = gw_pql_vfail(&p->lx, pos, fmt, ap);
	va_end(ap);
	return rc;
}

static int nomem(struct parser *p)
{
	return gw_pql_nomem(&p->lx);
}

/* ---- lookahead ---- */

/* The k-th token ahead (k < 2); NULL after a lexer error. */
static const struct gw_pql_tok *peek(struct parser *p, unsigned k)
{
	if (p->lx.rc)
		return NULL;
	while (p->nla <= k) {
		if (gw_pql_lex(&p->lx, &p->la[p->nla]))
			return NULL;
		p->nla++;
	}
	return &p->la[k];
}

static int next(struct parser *p, struct gw_pql_tok *t)
{
	if (!peek(p, 0))
		return p->lx.rc ? p->lx.rc : -EINVAL; /* never 0 without *t */
	*t = p->la[0];
	p->la[0] = p->la[1];
	p->nla--;
	return 0;
}
/* ---- token descriptions, as Prometheus words them ---- */

static const struct {
	const char *name;
	enum gw_pq_aggop op;
	bool param;
	enum gw_pq_type ptype; /* the parameter's */
} aggs[] = {
	{ "sum", GW_AGG_SUM, false, GW_TYPE_SCALAR },
	{ "avg", GW_AGG_AVG, false, GW_TYPE_SCALAR },
	{ "min", GW_AGG_MIN, false, GW_TYPE_SCALAR },
	{ "max", GW_AGG_MAX, false, GW_TYPE_SCALAR },
	{ "count", GW_AGG_COUNT, false, GW_TYPE_SCALAR },
	{ "topk", GW_AGG_TOPK, true, GW_TYPE_SCALAR },
	{ "bottomk", GW_AGG_BOTTOMK, true, GW_TYPE_SCALAR },
	{ "quantile", GW_AGG_QUANTILE, true, GW_TYPE_SCALAR },
	{ "stddev", GW_AGG_STDDEV, false, GW_TYPE_SCALAR },
	{ "stdvar", GW_AGG_STDVAR, false, GW_TYPE_SCALAR },
	{ "group", GW_AGG_GROUP, false, GW_TYPE_SCALAR },
	{ "count_values", GW_AGG_COUNT_VALUES, true, GW_TYPE_STRING },
};

/* Prometheus 3's, not in 2.x: known, so named as unsupported. */
static const char *const other_aggs[] = {
	"limitk",
	"limit_ratio",
};

static const struct {
	const char *name;
	enum kw kw;
} keywords[] = {
	{ "by", KW_BY },
	{ "without", KW_WITHOUT },
	{ "on", KW_ON },
	{ "ignoring", KW_IGNORING },
	{ "bool", KW_BOOL },
	{ "offset", KW_OFFSET },
	{ "group_left", KW_GROUP_LEFT },
	{ "group_right", KW_GROUP_RIGHT },
	{ "start", KW_START },
	{ "end", KW_END },
	{ "and", KW_AND },
	{ "or", KW_OR },
	{ "unless", KW_UNLESS },
	{ "atan2", KW_ATAN2 },
};

static bool word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

static enum kw keyword(const struct parser *p, const struct gw_pql_tok *t,
		       int *agg)
{
	const char *s = p->lx.q + t->pos;
	size_t n = t->end - t->pos;

	if (t->type != GW_PQL_T_IDENT)
		return KW_NONE;
	for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (word_is(s, n, keywords[i].name))
			return keywords[i].kw;
	for (size_t i = 0; i < sizeof(aggs) / sizeof(aggs[0]); i++)
		if (word_is(s, n, aggs[i].name)) {
			if (agg)
				*agg = (int)i;
			return KW_AGG;
		}
	for (size_t i = 0; i < sizeof(other_aggs) / sizeof(other_aggs[0]); i++)
		if (word_is(s, n, other_aggs[i]))
			return KW_AGG_OTHER;
	return KW_NONE;
}

static const char *const op_text[] = {
	[GW_OP_ADD] = "+",	   [GW_OP_SUB] = "-",	[GW_OP_MUL] = "*",
	[GW_OP_DIV] = "/",	   [GW_OP_MOD] = "%",	[GW_OP_POW] = "^",
	[GW_OP_EQ] = "==",	   [GW_OP_NE] = "!=",	[GW_OP_GT] = ">",
	[GW_OP_LT] = "<",	   [GW_OP_GE] = ">=",	[GW_OP_LE] = "<=",
	[GW_OP_ATAN2] = "atan2",   [GW_OP_AND] = "and", [GW_OP_OR] = "or",
	[GW_OP_UNLESS] = "unless",
};

/* Go's %q of a byte string, cut to max bytes of the text. */
static void go_quote(char *buf, size_t n, const char *s, size_t len, size_t max)
{
	size_t o = 0;

	if (n < 8)
		return;
	buf[o++] = '"';
	for (size_t i = 0; i < len && i < max && o + 6 < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c >= 0x20 && c < 0x7f) {
			buf[o++] = (char)c;
		} else {
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
		}
	}
	buf[o++] = '"';
	if (len > max && o + 4 < n) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

static const char *describe(const struct parser *p, const struct gw_pql_tok *t,
			    char *buf, size_t n)
{
	const char *s = p->lx.q + t->pos;
	size_t len = t->end - t->pos;
	char qb[96];

	switch (t->type) {
	case GW_PQL_T_EOF:
		return "end of input";
	case GW_PQL_T_LPAREN:
		return "\"(\"";
	case GW_PQL_T_RPAREN:
		return "\")\"";
	case GW_PQL_T_LBRACE:
		return "\"{\"";
	case GW_PQL_T_RBRACE:
		return "\"}\"";
	case GW_PQL_T_LBRACKET:
		return "\"[\"";
	case GW_PQL_T_RBRACKET:
		return "\"]\"";
	case GW_PQL_T_COMMA:
		return "\",\"";
	case GW_PQL_T_COLON:
		return "\":\"";
	case GW_PQL_T_EQL:
		return "\"=\"";
	case GW_PQL_T_AT:
		return "<op:@>";
	case GW_PQL_T_RE:
		return "<op:=~>";
	case GW_PQL_T_NRE:
		return "<op:!~>";
	case GW_PQL_T_OP:
		snprintf(buf, n, "<op:%s>", op_text[t->op]);
		return buf;
	case GW_PQL_T_IDENT:
		switch (keyword(p, t, NULL)) {
		case KW_NONE:
			go_quote(qb, sizeof(qb), s, len, 40);
			snprintf(buf, n, "%s %s",
				 memchr(s, ':', len) ? "metric identifier"
						     : "identifier",
				 qb);
			return buf;
		case KW_AGG:
		case KW_AGG_OTHER:
			snprintf(buf, n, "<aggr:%.*s>", (int)len, s);
			return buf;
		case KW_AND:
		case KW_OR:
		case KW_UNLESS:
		case KW_ATAN2:
			snprintf(buf, n, "<op:%.*s>", (int)len, s);
			return buf;
		default:
			snprintf(buf, n, "<%.*s>", (int)len, s);
			return buf;
		}
	case GW_PQL_T_NUMBER:
	case GW_PQL_T_DURATION:
	case GW_PQL_T_STRING:
		go_quote(qb, sizeof(qb), s, len, 10);
		snprintf(buf, n, "%s %s",
			 t->type == GW_PQL_T_NUMBER	? "number"
			 : t->type == GW_PQL_T_DURATION ? "duration"
							: "string",
			 qb);
		return buf;
	}
	return "token";
}

static int unexpected(struct parser *p, const struct gw_pql_tok *t,
		      const char *context, const char *expected)
{
	char b[160];

	if (!t)
		return p->lx.rc;
	return fail(p, t->pos, "unexpected %s%s%s%s%s",
		    describe(p, t, b, sizeof(b)), context ? " in " : "",
		    context ? context : "", expected ? ", expected " : "",
		    expected ? expected : "");
}

/* ---- nodes ---- */

const char *const gw_pqp_type_name[] = {
	[GW_TYPE_SCALAR] = "scalar",
	[GW_TYPE_VECTOR] = "instant vector",
	[GW_TYPE_MATRIX] = "range vector",
	[GW_TYPE_STRING] = "string",
};

/* Prometheus' other functions (native histograms, 3.x's info): known, so
 * named as unsupported. */
static const char *const other_fns[] = {
	"histogram_avg",
	"histogram_count",
	"histogram_fraction",
	"histogram_stddev",
	"histogram_stdvar",
	"histogram_sum",
	"info",
};

void gw_matchers_free(struct gw_matcher *m, size_t nm)
{
	if (!m)
		return;
	for (size_t i = 0; i < nm; i++)
		gw_matcher_release(&m[i]);
	free(m);
}

static void free_strv(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void gw_promql_free(struct gw_pq_node *n)
{
	if (!n)
		return;
	switch (n->kind) {
	case GW_PQ_NUMBER:
		break;
	case GW_PQ_STRING:
		free(n->u.str);
		break;
	case GW_PQ_SELECTOR:
	case GW_PQ_MATRIX:
		free(n->u.sel.name);
		gw_matchers_free(n->u.sel.m, n->u.sel.nm);
		break;
	case GW_PQ_CALL:
		for (size_t i = 0; i < n->u.call.nargs; i++)
			gw_promql_free(n->u.call.args[i]);
		free(n->u.call.args);
		break;
	case GW_PQ_AGG:
		gw_promql_free(n->u.agg.expr);
		gw_promql_free(n->u.agg.param);
		free_strv(n->u.agg.labels, n->u.agg.nlabels);
		break;
	case GW_PQ_BINARY:
		gw_promql_free(n->u.bin.lhs);
		gw_promql_free(n->u.bin.rhs);
		free_strv(n->u.bin.labels, n->u.bin.nlabels);
		free_strv(n->u.bin.include, n->u.bin.ninclude);
		break;
	case GW_PQ_SUBQUERY:
		gw_promql_free(n->u.subq.expr);
		break;
	case GW_PQ_NEG:
	case GW_PQ_PAREN:
		gw_promql_free(n->u.inner);
		break;
	}
	free(n);
}

static struct gw_pq_node *new_node(struct parser *p, enum gw_pq_kind kind,
				   enum gw_pq_type type, uint32_t pos)
{
	struct gw_pq_node *n = calloc(1, sizeof(*n));

	if (!n) {
		nomem(p);
		return NULL;
	}
	n->kind = kind;
	n->type = type;
	n->pos = pos;
	return n;
}

/*
 * Makes room for item n in the array at *pv (a pointer to the array
 * pointer; cap items allocated, of sz bytes each), up to max items.
 */
static int grow(struct parser *p, void *pv, size_t *cap, size_t n, size_t sz,
		size_t max, uint32_t pos, const char *what)
{
	void *old, *nv;
	size_t nc;

	if (n < *cap)
		return 0;
	if (n >= max)
		return fail(p, pos, "too many %s (at most %zu)", what, max);
	nc = *cap ? *cap * 2 : 4;
	if (nc > max)
		nc = max;
	memcpy(&old, pv, sizeof(old));
	nv = realloc(old, nc * sz);
	if (!nv)
		return nomem(p);
	memcpy(pv, &nv, sizeof(nv));
	*cap = nc;
	return 0;
}

/* ---- the grammar ---- */

static int parse_expr(struct parser *p, struct gw_pq_node **out)
{
	return gw_pqp_expr(p, out);
}

static int expect(struct parser *p, enum gw_pql_tk type, struct gw_pql_tok *t,
		  const char *context, const char *expected)
{
	const struct gw_pql_tok *la = peek(p, 0);

	if (!la)
		return p->lx.rc;
	if (la->type != type)
		return unexpected(p, la, context, expected);
	return next(p, t);
}

/* "(" label, ... ")" after by/without/on/ignoring. */
static int parse_grouping(struct parser *p, char ***labels, size_t *nlabels)
{
	size_t cap = 0;
	struct gw_pql_tok t;
	int err;

	err = expect(p, GW_PQL_T_LPAREN, &t, "grouping opts", "\"(\"");
	if (err)
		return err;
	for (;;) {
		const struct gw_pql_tok *la = peek(p, 0);

		if (!la)
			return p->lx.rc;
		if (la->type == GW_PQL_T_RPAREN)
			break;
		if (la->type != GW_PQL_T_IDENT ||
		    memchr(p->lx.q + la->pos, ':', la->end - la->pos))
			return unexpected(p, la, "grouping opts", "label");
		err = grow(p, labels, &cap, *nlabels, sizeof(char *), MAX_ITEMS,
			   la->pos, "grouping labels");
		if (err)
			return err;
		(*labels)[*nlabels] = gw_pql_dup_text(&p->lx, la);
		if (!(*labels)[*nlabels])
			return p->lx.rc;
		(*nlabels)++;
		if ((err = next(p, &t)))
			return err;
		la = peek(p, 0);
		if (!la)
			return p->lx.rc;
		if (la->type == GW_PQL_T_RPAREN)
			break;
		if (la->type != GW_PQL_T_COMMA)
			return unexpected(p, la, "grouping opts",
					  "\",\" or \")\"");
		if ((err = next(p, &t)))
			return err;
	}
	return next(p, &t);
}

/* "(" [expr {"," expr}] ")" for calls and aggregations. */
static int parse_args(struct parser *p, struct gw_pq_node ***args,
		      size_t *nargs)
{
	size_t cap = 0;
	struct gw_pql_tok t;
	int err;

	if ((err = expect(p, GW_PQL_T_LPAREN, &t, NULL, NULL)))
		return err;
	for (;;) {
		const struct gw_pql_tok *la = peek(p, 0);

		if (!la)
			return p->lx.rc;
		if (la->type == GW_PQL_T_RPAREN)
			break;
		err = grow(p, args, &cap, *nargs, sizeof(**args), MAX_ITEMS,
			   la->pos, "arguments");
		if (err)
			return err;
		(*args)[*nargs] = NULL;
		err = parse_expr(p, &(*args)[*nargs]);
		if ((*args)[*nargs])
			(*nargs)++;
		if (err)
			return err;
		la = peek(p, 0);
		if (!la)
			return p->lx.rc;
		if (la->type == GW_PQL_T_RPAREN)
			break;
		if (la->type != GW_PQL_T_COMMA)
			return unexpected(p, la, NULL, NULL);
		if ((err = next(p, &t)))
			return err;
		la = peek(p, 0);
		if (!la)
			return p->lx.rc;
		if (la->type == GW_PQL_T_RPAREN)
			return fail(p, t.pos,
				    "trailing commas not allowed in function "
				    "call args");
	}
	return next(p, &t);
}

static int expect_type(struct parser *p, const struct gw_pq_node *n,
		       enum gw_pq_type want, const char *context)
{
	if (n->type == want)
		return 0;
	return fail(p, n->pos, "expected type %s in %s, got %s",
		    gw_pqp_type_name[want], context, gw_pqp_type_name[n->type]);
}

static int parse_aggregation(struct parser *p, int which,
			     struct gw_pq_node **out)
{
	struct gw_pq_node *n, **args = NULL;
	size_t nargs = 0, want;
	const struct gw_pql_tok *la;
	struct gw_pql_tok t;
	int err;

	if ((err = next(p, &t)))
		return err;
	n = new_node(p, GW_PQ_AGG, GW_TYPE_VECTOR, t.pos);
	if (!n)
		return p->lx.rc;
	*out = n;
	n->u.agg.op = aggs[which].op;
	for (int pass = 0; pass < 2; pass++) {
		enum kw kw;

		la = peek(p, 0);
		if (!la)
			goto out;
		kw = keyword(p, la, NULL);
		if (!n->u.agg.grouping && (kw == KW_BY || kw == KW_WITHOUT)) {
			if ((err = next(p, &t)))
				goto out;
			n->u.agg.grouping = true;
			n->u.agg.without = kw == KW_WITHOUT;
			err = parse_grouping(p, &n->u.agg.labels,
					     &n->u.agg.nlabels);
			if (err)
				goto out;
		}
		if (pass == 0) {
			la = peek(p, 0);
			if (!la)
				goto out;
			if (la->type != GW_PQL_T_LPAREN) {
				unexpected(p, la, "aggregation", NULL);
				goto out;
			}
			err = parse_args(p, &args, &nargs);
			if (err)
				goto out;
		}
	}
	want = aggs[which].param ? 2 : 1;
	if (nargs == 0) {
		fail(p, n->pos,
		     "no arguments for aggregate expression provided");
		goto out;
	}
	if (nargs != want) {
		fail(p, n->pos,
		     "wrong number of arguments for aggregate expression "
		     "provided, expected %zu, got %zu",
		     want, nargs);
		goto out;
	}
	n->u.agg.expr = args[want - 1];
	if (want == 2)
		n->u.agg.param = args[0];
	free(args);
	args = NULL;
	nargs = 0;
	if (expect_type(p, n->u.agg.expr, GW_TYPE_VECTOR,
			"aggregation expression"))
		goto out;
	if (n->u.agg.param)
		expect_type(p, n->u.agg.param, aggs[which].ptype,
			    "aggregation parameter");
out:
	for (size_t i = 0; i < nargs; i++)
		gw_promql_free(args[i]);
	free(args);
	return p->lx.rc;
}

static int parse_call(struct parser *p, struct gw_pq_node **out)
{
	const struct gw_pq_fndef *f;
	struct gw_pq_node *n;
	struct gw_pql_tok name;
	char fname[64];
	size_t len, na, min;
	int err;

	if ((err = next(p, &name)))
		return err;
	n = new_node(p, GW_PQ_CALL, GW_TYPE_VECTOR, name.pos);
	if (!n)
		return p->lx.rc;
	*out = n;
	if ((err = parse_args(p, &n->u.call.args, &n->u.call.nargs)))
		return err;
	len = name.end - name.pos;
	snprintf(fname, sizeof(fname), "%.*s", (int)len, p->lx.q + name.pos);
	f = gw_pq_fn_lookup(p->lx.q + name.pos, len);
	if (!f) {
		for (size_t i = 0; i < sizeof(other_fns) / sizeof(other_fns[0]);
		     i++)
			if (strlen(other_fns[i]) == len &&
			    memcmp(other_fns[i], p->lx.q + name.pos, len) == 0)
				return fail(p, name.pos,
					    "function \"%s\" is not supported",
					    fname);
		return fail(p, name.pos, "unknown function with name \"%.*s\"",
			    (int)(len > 100 ? 100 : len), p->lx.q + name.pos);
	}
	n->u.call.fn = f->fn;
	n->type = f->ret;
	na = n->u.call.nargs;
	/* Prometheus' checks and messages, variadic functions included. */
	min = f->variadic ? (size_t)f->nargs - 1 : f->nargs;
	if (f->variadic == 0 && na != f->nargs)
		return fail(
			p, n->pos,
			"expected %u argument(s) in call to \"%s\", got %zu",
			f->nargs, f->name, na);
	if (na < min)
		return fail(p, n->pos,
			    "expected at least %zu argument(s) in call to "
			    "\"%s\", got %zu",
			    min, f->name, na);
	if (f->variadic > 0 && na > min + (size_t)f->variadic)
		return fail(p, n->pos,
			    "expected at most %zu argument(s) in call to "
			    "\"%s\", got %zu",
			    min + (size_t)f->variadic, f->name, na);
	for (size_t i = 0; i < na; i++) {
		struct gw_pq_node *a = n->u.call.args[i];
		enum gw_pq_type want =
			f->args[i < f->nargs ? i : (size_t)f->nargs - 1];
		char ctx[64];

		snprintf(ctx, sizeof(ctx), "call to function \"%s\"", f->name);
		if ((err = expect_type(p, a, want, ctx)))
			return err;
		/* A range argument is always the selector itself. */
		while (a->kind == GW_PQ_PAREN && want == GW_TYPE_MATRIX) {
			struct gw_pq_node *in = a->u.inner;

			a->u.inner = NULL;
			gw_promql_free(a);
			a = in;
		}
		n->u.call.args[i] = a;
	}
	return 0;
}

static int add_matcher(struct parser *p, struct gw_pq_node *n, size_t *cap,
		       enum gw_match_op op, const char *name, const char *value,
		       uint32_t pos)
{
	char msg[200] = "";
	int err;

	err = grow(p, &n->u.sel.m, cap, n->u.sel.nm, sizeof(*n->u.sel.m),
		   MAX_MATCHERS, pos, "label matchers");
	if (err)
		return err;
	err = gw_matcher_init(&n->u.sel.m[n->u.sel.nm], op, name, value, msg,
			      sizeof(msg));
	if (err == -ENOMEM)
		return nomem(p);
	if (err)
		return fail(p, pos, "%s",
			    msg[0] ? msg : "invalid regular expression");
	n->u.sel.nm++;
	return 0;
}

/* [name] ["{" matchers "}"]; the current token is the name or "{". */
static int parse_selector(struct parser *p, struct gw_pq_node **out)
{
	static const enum gw_match_op ops[] = { GW_MATCH_EQ, GW_MATCH_NE,
						GW_MATCH_RE, GW_MATCH_NRE };
	const struct gw_pql_tok *la = peek(p, 0);
	struct gw_pq_node *n;
	size_t cap = 0;
	struct gw_pql_tok t;
	bool nonempty = false;
	int err;

	if (!la)
		return p->lx.rc;
	n = new_node(p, GW_PQ_SELECTOR, GW_TYPE_VECTOR, la->pos);
	if (!n)
		return p->lx.rc;
	*out = n;
	if (la->type == GW_PQL_T_IDENT) {
		if ((err = next(p, &t)))
			return err;
		n->u.sel.name = gw_pql_dup_text(&p->lx, &t);
		if (!n->u.sel.name)
			return p->lx.rc;
		err = add_matcher(p, n, &cap, GW_MATCH_EQ, "__name__",
				  n->u.sel.name, t.pos);
		if (err)
			return err;
		la = peek(p, 0);
		if (!la)
			return p->lx.rc;
		if (la->type != GW_PQL_T_LBRACE)
			return 0;
	}
	if ((err = next(p, &t))) /* "{" */
		return err;
	for (;;) {
		struct gw_pql_tok name, op, val;
		int oi;
		char *lname, *value;

		if ((err = next(p, &name)))
			return err;
		if (name.type == GW_PQL_T_RBRACE)
			break;
		if (name.type != GW_PQL_T_IDENT)
			return unexpected(p, &name, "label matching",
					  "identifier or \"}\"");
		if ((err = next(p, &op)))
			return err;
		oi = op.type == GW_PQL_T_EQL   ? 0
		     : op.type == GW_PQL_T_OP  ? 1
		     : op.type == GW_PQL_T_RE  ? 2
		     : op.type == GW_PQL_T_NRE ? 3
					       : -1;
		if (oi < 0)
			return unexpected(p, &op, "label matching",
					  "label matching operator");
		if ((err = next(p, &val)))
			return err;
		if (val.type != GW_PQL_T_STRING)
			return unexpected(p, &val, "label matching", "string");
		lname = gw_pql_dup_text(&p->lx, &name);
		value = lname ? gw_pql_dup_string(&p->lx, &val) : NULL;
		if (!value) {
			free(lname);
			return p->lx.rc;
		}
		err = add_matcher(p, n, &cap, ops[oi], lname, value, name.pos);
		free(lname);
		free(value);
		if (err)
			return err;
		if ((err = next(p, &t)))
			return err;
		if (t.type == GW_PQL_T_RBRACE)
			break;
		if (t.type != GW_PQL_T_COMMA)
			return unexpected(p, &t, "label matching",
					  "\",\" or \"}\"");
	}
	for (size_t i = 1; n->u.sel.name && i < n->u.sel.nm; i++)
		if (strcmp(n->u.sel.m[i].name, "__name__") == 0)
			return fail(p, n->pos,
				    "metric name must not be set twice: "
				    "\"%.60s\" or \"%.60s\"",
				    n->u.sel.name, n->u.sel.m[i].value);
	for (size_t i = 0; i < n->u.sel.nm; i++)
		if (!gw_matcher_matches_empty(&n->u.sel.m[i]))
			nonempty = true;
	if (!nonempty)
		return fail(p, n->pos,
			    "vector selector must contain at least one "
			    "non-empty matcher");
	return 0;
}

static int parse_primary(struct parser *p, struct gw_pq_node **out)
{
	const struct gw_pql_tok *la = peek(p, 0), *la1;
	struct gw_pq_node *n;
	struct gw_pql_tok t;
	int err, agg = -1;
	enum kw kw;

	if (!la)
		return p->lx.rc;
	switch (la->type) {
	case GW_PQL_T_NUMBER:
		n = new_node(p, GW_PQ_NUMBER, GW_TYPE_SCALAR, la->pos);
		if (!n)
			return p->lx.rc;
		n->u.num = la->num;
		*out = n;
		return next(p, &t);
	case GW_PQL_T_STRING:
		n = new_node(p, GW_PQ_STRING, GW_TYPE_STRING, la->pos);
		if (!n)
			return p->lx.rc;
		*out = n;
		if ((err = next(p, &t)))
			return err;
		n->u.str = gw_pql_dup_string(&p->lx, &t);
		return n->u.str ? 0 : p->lx.rc;
	case GW_PQL_T_LPAREN:
		n = new_node(p, GW_PQ_PAREN, GW_TYPE_SCALAR, la->pos);
		if (!n)
			return p->lx.rc;
		*out = n;
		if ((err = next(p, &t)))
			return err;
		if ((err = parse_expr(p, &n->u.inner)))
			return err;
		n->type = n->u.inner->type;
		return expect(p, GW_PQL_T_RPAREN, &t, NULL, NULL);
	case GW_PQL_T_LBRACE:
		return parse_selector(p, out);
	case GW_PQL_T_IDENT:
		kw = keyword(p, la, &agg);
		if (kw == KW_AGG || kw == KW_AGG_OTHER) {
			enum kw k1;

			la1 = peek(p, 1);
			if (!la1)
				return p->lx.rc;
			k1 = keyword(p, la1, NULL);
			if (la1->type == GW_PQL_T_LPAREN || k1 == KW_BY ||
			    k1 == KW_WITHOUT) {
				if (kw == KW_AGG)
					return parse_aggregation(p, agg, out);
				return fail(
					p, la->pos,
					"aggregation \"%.*s\" is not supported",
					(int)(la->end - la->pos),
					p->lx.q + la->pos);
			}
			return parse_selector(p, out);
		}
		switch (kw) {
		case KW_ON:
		case KW_IGNORING:
		case KW_BOOL:
		case KW_GROUP_LEFT:
		case KW_GROUP_RIGHT:
		case KW_ATAN2:
			return unexpected(p, la, NULL, NULL);
		default:
			break;
		}
		la1 = peek(p, 1);
		if (!la1)
			return p->lx.rc;
		if (kw == KW_NONE && la1->type == GW_PQL_T_LPAREN &&
		    !memchr(p->lx.q + la->pos, ':', la->end - la->pos))
			return parse_call(p, out);
		return parse_selector(p, out);
	default:
		return unexpected(p, la, NULL, NULL);
	}
}

static int start(struct parser *p, const char *q, size_t len,
		 struct gw_promql_error *err)
{
	memset(p, 0, sizeof(*p));
	return gw_pql_lex_init(&p->lx, q, len, err);
}

int gw_promql_parse(const char *query, struct gw_pq_node **out,
		    struct gw_promql_error *err)
{
	return gw_promql_parse_len(
		query, query ? strnlen(query, GW_PROMQL_MAX_QUERY + 1) : 0, out,
		err);
}

int gw_promql_parse_len(const char *query, size_t len, struct gw_pq_node **out,
			struct gw_promql_error *err)
{
	struct gw_pq_node *n = NULL;
	const struct gw_pql_tok *la;
	struct parser p;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if ((rc = start(&p, query, len, err)))
		return rc;
	if (!(la = peek(&p, 0)))
		return p.lx.rc;
	if (la->type == GW_PQL_T_EOF)
		return fail(&p, 0, "no expression found in input");
	rc = parse_expr(&p, &n);
	if (!rc) {
		la = peek(&p, 0);
		if (la && la->type != GW_PQL_T_EOF)
			unexpected(&p, la, NULL, NULL);
		rc = p.lx.rc;
	}
	if (rc) {
		gw_promql_free(n);
		return rc;
	}
	*out = n;
	return 0;
}

int gw_promql_parse_selector(const char *text, struct gw_matcher **m,
			     size_t *nm, struct gw_promql_error *err)
{
	struct gw_pq_node *n = NULL;
	const struct gw_pql_tok *la;
	struct parser p;
	int rc;

	if (!m || !nm)
		return -EINVAL;
	*m = NULL;
	*nm = 0;
	if ((rc = start(&p, text,
			text ? strnlen(text, GW_PROMQL_MAX_QUERY + 1) : 0,
			err)))
		return rc;
	if (!(la = peek(&p, 0)))
		return p.lx.rc;
	if (la->type == GW_PQL_T_EOF)
		return fail(&p, 0, "no expression found in input");
	if (la->type != GW_PQL_T_LBRACE &&
	    (la->type != GW_PQL_T_IDENT || keyword(&p, la, NULL) == KW_ON ||
	     keyword(&p, la, NULL) == KW_IGNORING ||
	     keyword(&p, la, NULL) == KW_BOOL ||
	     keyword(&p, la, NULL) == KW_GROUP_LEFT ||
	     keyword(&p, la, NULL) == KW_GROUP_RIGHT ||
	     keyword(&p, la, NULL) == KW_ATAN2))
		return unexpected(&p, la, NULL, NULL);
	rc = parse_selector(&p, &n);
	if (!rc) {
		la = peek(&p, 0);
		if (la && la->type != GW_PQL_T_EOF)
			unexpected(&p, la, NULL, NULL);
		rc = p.lx.rc;
	}
	if (!rc) {
		*m = n->u.sel.m;
		*nm = n->u.sel.nm;
		n->u.sel.m = NULL;
		n->u.sel.nm = 0;
	}
	gw_promql_free(n);
	return rc;
}

/* ---- names, for the canonical form (promql_format.c) ---- */

const char *gw_pql_func_name(enum gw_pq_func fn)
{
	const struct gw_pq_fndef *f = gw_pq_fn_def(fn);

	return f ? f->name : NULL;
}

const char *gw_pql_op_text(enum gw_pq_binop op)
{
	if ((size_t)op >= sizeof(op_text) / sizeof(op_text[0]))
		return NULL;
	return op_text[op];
}

/* ---- for promql_parse_expr.c (promql_parse_int.h) ---- */

int gw_pqp_fail(struct parser *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = gw_pql_vfail(&p->lx, pos, fmt, ap);
	va_end(ap);
	return rc;
}

const struct gw_pql_tok *gw_pqp_peek(struct parser *p, unsigned k)
{
	return peek(p, k);
}

int gw_pqp_next(struct parser *p, struct gw_pql_tok *t)
{
	return next(p, t);
}

int gw_pqp_unexpected(struct parser *p, const struct gw_pql_tok *t,
		      const char *context, const char *expected)
{
	return unexpected(p, t, context, expected);
}

enum kw gw_pqp_keyword(const struct parser *p, const struct gw_pql_tok *t)
{
	return keyword(p, t, NULL);
}

struct gw_pq_node *gw_pqp_node(struct parser *p, enum gw_pq_kind kind,
			       enum gw_pq_type type, uint32_t pos)
{
	return new_node(p, kind, type, pos);
}

int gw_pqp_grouping(struct parser *p, char ***labels, size_t *nlabels)
{
	return parse_grouping(p, labels, nlabels);
}

int gw_pqp_primary(struct parser *p, struct gw_pq_node **out)
{
	return parse_primary(p, out);
}
