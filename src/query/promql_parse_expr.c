/* SPDX-License-Identifier: MIT */
/*
 * promql_parse_expr.c - the PromQL parser's expressions (see
 * promql_parse_int.h): binary operators by precedence climbing, vector
 * matching (on, ignoring, group_left, group_right), set operators, unary
 * minus, and the postfix modifiers: [range], [range:step] subqueries,
 * offset and @.  promql_parse.c holds the rest of the grammar.
 *
 * Prometheus 2.x's rules followed here:
 *  - precedence, loosest first: or; and unless; == != <= < >= >;
 *    + -; * / % atan2; ^ (right-associative); all others are
 *    left-associative;
 *  - unary minus binds looser than ^ (-2 ^ 2 is -(2 ^ 2)) and tighter than
 *    * / %; a minus on a number literal folds into the literal;
 *  - [range], [range:step], offset and @ bind tighter than any operator,
 *    offset and @ in either order, each at most once per selector or
 *    subquery; a range selector takes neither before its [range];
 *  - a subquery applies to an instant vector only; its step may be left
 *    out ([5m:]), and is then the evaluator's default;
 *  - set operators (and, or, unless) apply between instant vectors only,
 *    always many-to-many, without group_left/group_right; group_left and
 *    group_right follow on(..) or ignoring(..), with an optional list of
 *    labels copied from the "one" side, none of which may be in on(..);
 *  - scalar comparisons need "bool"; "bool" only goes with comparisons.
 *
 * Errors and ownership as in promql_parse.c: the first error wins, and a
 * node built so far is freed here on failure.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql.h"
#include "query/promql_parse_int.h"

#define PREC_POW 6

/* A duration (or a number of seconds) inside [ ] or after offset. */
static int take_duration(struct parser *p, const struct gw_pql_tok *t,
			 int64_t *ms)
{
	*ms = 0; /* also on error */
	if (t->type == GW_PQL_T_DURATION) {
		*ms = t->ms;
	} else {
		double v = t->num * 1000.0;

		/* Within Go's time.Duration, as written durations are. */
		if (!(v > -9223372036854.0 && v < 9223372036854.0))
			return gw_pqp_fail(p, t->pos, "duration out of range");
		*ms = (int64_t)llround(v);
	}
	if (*ms <= 0)
		return gw_pqp_fail(p, t->pos,
				   "duration must be greater than 0");
	return 0;
}

static bool is_duration(const struct gw_pql_tok *t)
{
	return t->type == GW_PQL_T_DURATION || t->type == GW_PQL_T_NUMBER;
}

/* The modifier fields of a selector or subquery node, NULL for others. */
struct mods {
	int64_t *offset_ms;
	enum gw_pq_at *at;
	int64_t *at_ms;
};

static bool modifiable(struct gw_pq_node *n, struct mods *m)
{
	switch (n->kind) {
	case GW_PQ_SELECTOR:
	case GW_PQ_MATRIX:
		m->offset_ms = &n->u.sel.offset_ms;
		m->at = &n->u.sel.at;
		m->at_ms = &n->u.sel.at_ms;
		return true;
	case GW_PQ_SUBQUERY:
		m->offset_ms = &n->u.subq.offset_ms;
		m->at = &n->u.subq.at;
		m->at_ms = &n->u.subq.at_ms;
		return true;
	default:
		return false;
	}
}

/* "[" duration "]" or "[" duration ":" [duration] "]"; *np may be
 * replaced by a subquery node holding it. */
static int parse_bracket(struct parser *p, struct gw_pq_node **np)
{
	struct gw_pq_node *n = *np, *sq;
	struct gw_pql_tok open, d, t, s;
	int64_t ms, step = 0;
	int err;

	if ((err = gw_pqp_next(p, &open)) || (err = gw_pqp_next(p, &d)))
		return err;
	if (!is_duration(&d))
		return gw_pqp_unexpected(p, &d, "subquery or range selector",
					 "duration");
	if ((err = gw_pqp_next(p, &t)))
		return err;
	if (t.type == GW_PQL_T_RBRACKET) {
		if (n->kind != GW_PQ_SELECTOR)
			return gw_pqp_fail(
				p, open.pos,
				"ranges only allowed for vector selectors");
		if (n->u.sel.offset_ms)
			return gw_pqp_fail(
				p, open.pos,
				"no offset modifiers allowed before range");
		if (n->u.sel.at != GW_AT_NONE)
			return gw_pqp_fail(
				p, open.pos,
				"no @ modifiers allowed before range");
		if ((err = take_duration(p, &d, &ms)))
			return err;
		n->kind = GW_PQ_MATRIX;
		n->type = GW_TYPE_MATRIX;
		n->u.sel.range_ms = ms;
		return 0;
	}
	if (t.type != GW_PQL_T_COLON)
		return gw_pqp_unexpected(p, &t, "subquery or range",
					 "\":\" or \"]\"");
	if ((err = take_duration(p, &d, &ms)) || (err = gw_pqp_next(p, &s)))
		return err;
	if (is_duration(&s)) {
		if ((err = take_duration(p, &s, &step)) ||
		    (err = gw_pqp_next(p, &s)))
			return err;
		if (s.type == GW_PQL_T_COLON)
			return gw_pqp_fail(p, s.pos, "unexpected colon ':'");
		if (s.type != GW_PQL_T_RBRACKET)
			return gw_pqp_unexpected(p, &s, "subquery selector",
						 "\"]\"");
	} else if (s.type != GW_PQL_T_RBRACKET) {
		if (s.type == GW_PQL_T_COLON)
			return gw_pqp_fail(p, s.pos, "unexpected colon ':'");
		return gw_pqp_unexpected(p, &s, "subquery selector",
					 "duration or \"]\"");
	}
	if (n->type != GW_TYPE_VECTOR)
		return gw_pqp_fail(p, n->pos,
				   "subquery is only allowed on instant "
				   "vector, got %s instead",
				   n->type == GW_TYPE_MATRIX   ? "matrix"
				   : n->type == GW_TYPE_SCALAR ? "scalar"
							       : "string");
	sq = gw_pqp_node(p, GW_PQ_SUBQUERY, GW_TYPE_MATRIX, n->pos);
	if (!sq)
		return p->lx.rc;
	sq->u.subq.expr = n;
	sq->u.subq.range_ms = ms;
	sq->u.subq.step_ms = step;
	*np = sq;
	return 0;
}

static int parse_offset(struct parser *p, struct gw_pq_node *n)
{
	struct gw_pql_tok t, d;
	struct mods m;
	bool neg = false;
	int64_t ms;
	int err;

	if ((err = gw_pqp_next(p, &t)) || (err = gw_pqp_next(p, &d)))
		return err;
	if (d.type == GW_PQL_T_OP && d.op == GW_OP_SUB) {
		neg = true;
		if ((err = gw_pqp_next(p, &d)))
			return err;
	}
	if (!is_duration(&d))
		return gw_pqp_unexpected(p, &d, "offset", "duration");
	if ((err = take_duration(p, &d, &ms)))
		return err;
	if (!modifiable(n, &m))
		return gw_pqp_fail(p, n->pos,
				   "offset modifier must be preceded by an "
				   "instant vector selector or range vector "
				   "selector or a subquery");
	if (*m.offset_ms)
		return gw_pqp_fail(p, n->pos,
				   "offset may not be set multiple times");
	*m.offset_ms = neg ? -ms : ms;
	return 0;
}

/* Go's %f of a float64, for the @ range error. */
static void go_f(char *buf, size_t n, double v)
{
	if (isnan(v))
		snprintf(buf, n, "NaN");
	else if (isinf(v))
		snprintf(buf, n, "%s", v > 0 ? "+Inf" : "-Inf");
	else
		snprintf(buf, n, "%f", v);
}

/* "@" (number | start() | end()). */
static int parse_at(struct parser *p, struct gw_pq_node *n)
{
	const struct gw_pql_tok *la;
	struct gw_pql_tok t, v, close;
	enum gw_pq_at at = GW_AT_TIME;
	double secs = 0;
	bool neg = false;
	struct mods m;
	enum kw kw;
	int err;

	if ((err = gw_pqp_next(p, &t)) || (err = gw_pqp_next(p, &v)))
		return err;
	if (v.type == GW_PQL_T_OP && (v.op == GW_OP_SUB || v.op == GW_OP_ADD)) {
		neg = v.op == GW_OP_SUB;
		if ((err = gw_pqp_next(p, &v)))
			return err;
		if (v.type != GW_PQL_T_NUMBER)
			return gw_pqp_unexpected(p, &v, "@", "timestamp");
	}
	kw = gw_pqp_keyword(p, &v);
	if (v.type == GW_PQL_T_NUMBER) {
		secs = neg ? -v.num : v.num;
	} else if (kw == KW_START || kw == KW_END) {
		at = kw == KW_START ? GW_AT_START : GW_AT_END;
		la = gw_pqp_peek(p, 0);
		if (!la)
			return p->lx.rc;
		if (la->type != GW_PQL_T_LPAREN)
			return gw_pqp_unexpected(p, la, "@", "timestamp");
		if ((err = gw_pqp_next(p, &close)) ||
		    (err = gw_pqp_next(p, &close)))
			return err;
		if (close.type != GW_PQL_T_RPAREN)
			return gw_pqp_unexpected(p, &close, "@", "\")\"");
	} else {
		return gw_pqp_unexpected(p, &v, "@", "timestamp");
	}
	if (at == GW_AT_TIME && !(secs * 1000.0 < 9223372036854775807.0 &&
				  secs * 1000.0 > -9223372036854775807.0)) {
		char b[64];

		go_f(b, sizeof(b), secs);
		return gw_pqp_fail(p, n->pos,
				   "timestamp out of bounds for @ modifier: %s",
				   b);
	}
	if (!modifiable(n, &m))
		return gw_pqp_fail(p, n->pos,
				   "@ modifier must be preceded by an instant "
				   "vector selector or range vector selector "
				   "or a subquery");
	if (*m.at != GW_AT_NONE)
		return gw_pqp_fail(p, n->pos,
				   "@ <timestamp> may not be set multiple "
				   "times");
	*m.at = at;
	/* Prometheus' timestamp.FromFloatSeconds: rounded to the ms. */
	*m.at_ms = at == GW_AT_TIME ? (int64_t)llround(secs * 1000.0) : 0;
	return 0;
}

static int parse_postfix(struct parser *p, struct gw_pq_node **np)
{
	for (;;) {
		const struct gw_pql_tok *la = gw_pqp_peek(p, 0);
		int err;

		if (!la)
			return p->lx.rc;
		if (la->type == GW_PQL_T_LBRACKET)
			err = parse_bracket(p, np);
		else if (gw_pqp_keyword(p, la) == KW_OFFSET)
			err = parse_offset(p, *np);
		else if (la->type == GW_PQL_T_AT)
			err = parse_at(p, *np);
		else
			return 0;
		if (err)
			return err;
	}
}

static int enter(struct parser *p, uint32_t pos)
{
	if (++p->depth > GW_PROMQL_MAX_DEPTH)
		return gw_pqp_fail(
			p, pos,
			"expression nests too deeply (more than %d levels)",
			GW_PROMQL_MAX_DEPTH);
	return 0;
}

static int parse_binary(struct parser *p, int minprec, struct gw_pq_node **out);

static int parse_unary(struct parser *p, struct gw_pq_node **out)
{
	const struct gw_pql_tok *la = gw_pqp_peek(p, 0);
	struct gw_pq_node *inner = NULL, *n;
	struct gw_pql_tok t;
	int err;

	if (!la)
		return p->lx.rc;
	if (la->type != GW_PQL_T_OP ||
	    (la->op != GW_OP_ADD && la->op != GW_OP_SUB)) {
		if ((err = gw_pqp_primary(p, out)))
			return err;
		return parse_postfix(p, out);
	}
	if ((err = gw_pqp_next(p, &t)))
		return err;
	err = parse_binary(p, PREC_POW, &inner);
	if (err) {
		gw_promql_free(inner);
		return err;
	}
	if (inner->kind == GW_PQ_NUMBER) {
		if (t.op == GW_OP_SUB)
			inner->u.num = -inner->u.num;
		inner->pos = t.pos;
		*out = inner;
		return 0;
	}
	if (inner->type != GW_TYPE_SCALAR && inner->type != GW_TYPE_VECTOR) {
		err = gw_pqp_fail(p, t.pos,
				  "unary expression only allowed on "
				  "expressions of type scalar or instant "
				  "vector, got \"%s\"",
				  gw_pqp_type_name[inner->type]);
		gw_promql_free(inner);
		return err;
	}
	if (t.op == GW_OP_ADD) {
		*out = inner;
		return 0;
	}
	n = gw_pqp_node(p, GW_PQ_NEG, inner->type, t.pos);
	if (!n) {
		gw_promql_free(inner);
		return p->lx.rc;
	}
	n->u.inner = inner;
	*out = n;
	return 0;
}

static int precedence(enum gw_pq_binop op)
{
	switch (op) {
	case GW_OP_POW:
		return PREC_POW;
	case GW_OP_MUL:
	case GW_OP_DIV:
	case GW_OP_MOD:
	case GW_OP_ATAN2:
		return 5;
	case GW_OP_ADD:
	case GW_OP_SUB:
		return 4;
	case GW_OP_AND:
	case GW_OP_UNLESS:
		return 2;
	case GW_OP_OR:
		return 1;
	default: /* comparisons */
		return 3;
	}
}

static bool is_comparison(enum gw_pq_binop op)
{
	return op >= GW_OP_EQ && op <= GW_OP_LE;
}

static bool is_set(enum gw_pq_binop op)
{
	return op == GW_OP_AND || op == GW_OP_OR || op == GW_OP_UNLESS;
}

/* The operator at la, if la is one: a symbol or and/or/unless/atan2. */
static bool binop_at(struct parser *p, const struct gw_pql_tok *la,
		     enum gw_pq_binop *op)
{
	switch (gw_pqp_keyword(p, la)) {
	case KW_AND:
		*op = GW_OP_AND;
		return true;
	case KW_OR:
		*op = GW_OP_OR;
		return true;
	case KW_UNLESS:
		*op = GW_OP_UNLESS;
		return true;
	case KW_ATAN2:
		*op = GW_OP_ATAN2;
		return true;
	default:
		break;
	}
	if (la->type != GW_PQL_T_OP)
		return false;
	*op = la->op;
	return true;
}

/* Modifiers after the operator: [bool] [on|ignoring (labels)
 * [group_left|group_right [(labels)]]]. */
static int parse_bin_modifiers(struct parser *p, struct gw_pq_node *n)
{
	const struct gw_pql_tok *la = gw_pqp_peek(p, 0);
	struct gw_pql_tok t;
	enum kw kw;
	int err;

	if (!la)
		return p->lx.rc;
	if (gw_pqp_keyword(p, la) == KW_BOOL) {
		if ((err = gw_pqp_next(p, &t)))
			return err;
		n->u.bin.bool_mod = true;
		if (!(la = gw_pqp_peek(p, 0)))
			return p->lx.rc;
	}
	kw = gw_pqp_keyword(p, la);
	if (kw != KW_ON && kw != KW_IGNORING)
		return 0;
	if ((err = gw_pqp_next(p, &t)))
		return err;
	n->u.bin.on = kw == KW_ON;
	n->u.bin.ignoring = kw == KW_IGNORING;
	err = gw_pqp_grouping(p, &n->u.bin.labels, &n->u.bin.nlabels);
	if (err)
		return err;
	if (!(la = gw_pqp_peek(p, 0)))
		return p->lx.rc;
	kw = gw_pqp_keyword(p, la);
	if (kw != KW_GROUP_LEFT && kw != KW_GROUP_RIGHT)
		return 0;
	if ((err = gw_pqp_next(p, &t)))
		return err;
	n->u.bin.card =
		kw == KW_GROUP_LEFT ? GW_CARD_MANY_TO_ONE : GW_CARD_ONE_TO_MANY;
	if (!(la = gw_pqp_peek(p, 0)))
		return p->lx.rc;
	if (la->type != GW_PQL_T_LPAREN)
		return 0;
	return gw_pqp_grouping(p, &n->u.bin.include, &n->u.bin.ninclude);
}

static int check_binary(struct parser *p, struct gw_pq_node *n, uint32_t oppos)
{
	struct gw_pq_node *l = n->u.bin.lhs, *r = n->u.bin.rhs;
	enum gw_pq_binop op = n->u.bin.op;
	bool cmp = is_comparison(op);

	if (n->u.bin.bool_mod && !cmp)
		return gw_pqp_fail(p, oppos,
				   "bool modifier can only be used on "
				   "comparison operators");
	if (cmp && !n->u.bin.bool_mod && l->type == GW_TYPE_SCALAR &&
	    r->type == GW_TYPE_SCALAR)
		return gw_pqp_fail(p, oppos,
				   "comparisons between scalars must use BOOL "
				   "modifier");
	if (is_set(op) && n->u.bin.card == GW_CARD_ONE_TO_ONE)
		n->u.bin.card = GW_CARD_MANY_TO_MANY;
	for (size_t i = 0; n->u.bin.on && i < n->u.bin.nlabels; i++)
		for (size_t j = 0; j < n->u.bin.ninclude; j++)
			if (strcmp(n->u.bin.labels[i], n->u.bin.include[j]) ==
			    0)
				return gw_pqp_fail(
					p, oppos,
					"label \"%.100s\" must not occur in ON "
					"and GROUP clause at once",
					n->u.bin.labels[i]);
	if (l->type != GW_TYPE_SCALAR && l->type != GW_TYPE_VECTOR)
		return gw_pqp_fail(p, l->pos,
				   "binary expression must contain only "
				   "scalar and instant vector types");
	if (r->type != GW_TYPE_SCALAR && r->type != GW_TYPE_VECTOR)
		return gw_pqp_fail(p, r->pos,
				   "binary expression must contain only "
				   "scalar and instant vector types");
	if (l->type == GW_TYPE_SCALAR || r->type == GW_TYPE_SCALAR) {
		if (n->u.bin.nlabels)
			return gw_pqp_fail(p, n->pos,
					   "vector matching only allowed "
					   "between instant vectors");
		if (is_set(op))
			return gw_pqp_fail(p, n->pos,
					   "set operator \"%s\" not allowed in "
					   "binary scalar expression",
					   gw_pql_op_text(op));
		/* Matching means nothing here: the tree holds none. */
		n->u.bin.on = n->u.bin.ignoring = false;
		n->u.bin.card = GW_CARD_ONE_TO_ONE;
		for (size_t j = 0; j < n->u.bin.ninclude; j++)
			free(n->u.bin.include[j]);
		free(n->u.bin.include);
		n->u.bin.include = NULL;
		n->u.bin.ninclude = 0;
		n->type = l->type == GW_TYPE_SCALAR && r->type == GW_TYPE_SCALAR
				  ? GW_TYPE_SCALAR
				  : GW_TYPE_VECTOR;
		return 0;
	}
	if (is_set(op) && n->u.bin.card != GW_CARD_MANY_TO_MANY)
		return gw_pqp_fail(p, n->pos,
				   "no grouping allowed for \"%s\" operation",
				   gw_pql_op_text(op));
	n->type = GW_TYPE_VECTOR;
	return 0;
}

static int parse_binary(struct parser *p, int minprec, struct gw_pq_node **out)
{
	unsigned saved = p->depth;
	struct gw_pq_node *lhs = NULL;
	const struct gw_pql_tok *la;
	int err;

	if (!(la = gw_pqp_peek(p, 0)))
		return p->lx.rc;
	if ((err = enter(p, la->pos)))
		goto out;
	if ((err = parse_unary(p, &lhs)))
		goto out;
	for (;;) {
		struct gw_pq_node *n;
		struct gw_pql_tok optok;
		enum gw_pq_binop op;
		int prec;

		if (!(la = gw_pqp_peek(p, 0))) {
			err = p->lx.rc;
			goto out;
		}
		if (!binop_at(p, la, &op))
			break;
		prec = precedence(op);
		if (prec < minprec)
			break;
		if ((err = enter(p, la->pos)) || (err = gw_pqp_next(p, &optok)))
			goto out;
		n = gw_pqp_node(p, GW_PQ_BINARY, GW_TYPE_VECTOR, lhs->pos);
		if (!n) {
			err = p->lx.rc;
			goto out;
		}
		n->u.bin.op = op;
		n->u.bin.lhs = lhs;
		lhs = n;
		if ((err = parse_bin_modifiers(p, n)))
			goto out;
		err = parse_binary(p, op == GW_OP_POW ? prec : prec + 1,
				   &n->u.bin.rhs);
		if (err)
			goto out;
		if ((err = check_binary(p, n, optok.pos)))
			goto out;
	}
	p->depth = saved;
	*out = lhs;
	return 0;
out:
	p->depth = saved;
	gw_promql_free(lhs);
	return err ? err : p->lx.rc;
}

int gw_pqp_expr(struct parser *p, struct gw_pq_node **out)
{
	return parse_binary(p, 0, out);
}
