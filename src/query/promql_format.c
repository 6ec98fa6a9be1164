/* SPDX-License-Identifier: MIT */
/*
 * promql_format.c - the canonical form of a parsed expression
 * (gw_promql_format, query/promql.h): what Prometheus prints for the same
 * tree, so that rule files, the API and `gpuwatch query` echo an expression
 * as Prometheus would.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql.h"
#include "query/promql_lex.h"

/* Go's %v of a float64: shortest exact digits, exponent below 1e-4 and
 * from 1e21 on. */
static void fmt_number(struct gw_buf *b, double v)
{
	char s[48], *e;
	double a = fabs(v);
	int prec, x;

	if (isnan(v)) {
		gw_buf_puts(b, "NaN");
		return;
	}
	if (isinf(v)) {
		gw_buf_puts(b, v > 0 ? "Inf" : "(-Inf)");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(s, sizeof(s), "%.*e", prec, a);
		if (strtod(s, NULL) == a)
			break;
	}
	e = strchr(s, 'e');
	x = e ? atoi(e + 1) : 0;
	if (a != 0 && (x < -4 || x >= 21)) {
		/* d.ddde+XX, as Go writes it: at least two exponent digits */
		snprintf(s, sizeof(s), "%.*e", prec, a);
	} else {
		snprintf(s, sizeof(s), "%.*f", prec - x > 0 ? prec - x : 0, a);
	}
	if (signbit(v))
		gw_buf_putf(b, "(-%s)", s);
	else
		gw_buf_puts(b, s);
}

static void fmt_string(struct gw_buf *b, const char *s)
{
	gw_buf_put(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			gw_buf_putf(b, "\\%c", c);
		else if (c == '\n')
			gw_buf_puts(b, "\\n");
		else if (c >= 0x20 && c < 0x7f)
			gw_buf_put(b, s, 1);
		else
			gw_buf_putf(b, "\\x%02x", c);
	}
	gw_buf_put(b, "\"", 1);
}

static void fmt_duration(struct gw_buf *b, int64_t ms)
{
	static const struct {
		const char *unit;
		int64_t ms;
		bool exact;
	} u[] = {
		{ "y", 365LL * 86400000, true },
		{ "w", 7LL * 86400000, true },
		{ "d", 86400000, false },
		{ "h", 3600000, false },
		{ "m", 60000, false },
		{ "s", 1000, false },
		{ "ms", 1, false },
	};

	if (ms < 0) {
		gw_buf_put(b, "-", 1);
		ms = -ms;
	}
	if (ms == 0) {
		gw_buf_puts(b, "0s");
		return;
	}
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		if (u[i].exact && ms % u[i].ms)
			continue;
		if (ms / u[i].ms > 0) {
			gw_buf_putf(b, "%lld%s", (long long)(ms / u[i].ms),
				    u[i].unit);
			ms %= u[i].ms;
		}
	}
}

static void fmt_labels(struct gw_buf *b, char *const *l, size_t n)
{
	gw_buf_put(b, "(", 1);
	for (size_t i = 0; i < n; i++)
		gw_buf_putf(b, "%s%s", i ? ", " : "", l[i]);
	gw_buf_put(b, ")", 1);
}

/* " @ t" then " offset d", in Prometheus' order. */
static void fmt_mods(struct gw_buf *b, int64_t offset_ms, enum gw_pq_at at,
		     int64_t at_ms)
{
	switch (at) {
	case GW_AT_TIME:
		/* Go's %.3f of the seconds, as Prometheus prints them. */
		gw_buf_putf(
			b, " @ %s%lld.%03lld", at_ms < 0 ? "-" : "",
			(long long)(at_ms < 0 ? -(at_ms / 1000) : at_ms / 1000),
			(long long)(at_ms < 0 ? -(at_ms % 1000)
					      : at_ms % 1000));
		break;
	case GW_AT_START:
		gw_buf_puts(b, " @ start()");
		break;
	case GW_AT_END:
		gw_buf_puts(b, " @ end()");
		break;
	default:
		break;
	}
	if (offset_ms) {
		gw_buf_puts(b, " offset ");
		fmt_duration(b, offset_ms);
	}
}

static void fmt_selector(struct gw_buf *b, const struct gw_pq_node *n)
{
	static const char *const mops[] = { "=", "!=", "=~", "!~" };
	size_t first = n->u.sel.name ? 1 : 0, k = 0;

	if (n->u.sel.name)
		gw_buf_puts(b, n->u.sel.name);
	if (n->u.sel.nm > first)
		gw_buf_put(b, "{", 1);
	for (size_t i = first; i < n->u.sel.nm; i++) {
		const struct gw_matcher *m = &n->u.sel.m[i];

		gw_buf_putf(b, "%s%s%s", k++ ? ", " : "", m->name, mops[m->op]);
		fmt_string(b, m->value);
	}
	if (n->u.sel.nm > first)
		gw_buf_put(b, "}", 1);
	if (n->kind == GW_PQ_MATRIX) {
		gw_buf_put(b, "[", 1);
		fmt_duration(b, n->u.sel.range_ms);
		gw_buf_put(b, "]", 1);
	}
	fmt_mods(b, n->u.sel.offset_ms, n->u.sel.at, n->u.sel.at_ms);
}

/* Appends the text of n; a failure, -EINVAL for a malformed tree, stays in out. */
static void fmt_node(const struct gw_pq_node *n, struct gw_buf *out)
{
	static const char *const agg_names[] = {
		[GW_AGG_SUM] = "sum",
		[GW_AGG_AVG] = "avg",
		[GW_AGG_MIN] = "min",
		[GW_AGG_MAX] = "max",
		[GW_AGG_COUNT] = "count",
		[GW_AGG_TOPK] = "topk",
		[GW_AGG_BOTTOMK] = "bottomk",
		[GW_AGG_QUANTILE] = "quantile",
		[GW_AGG_STDDEV] = "stddev",
		[GW_AGG_STDVAR] = "stdvar",
		[GW_AGG_GROUP] = "group",
		[GW_AGG_COUNT_VALUES] = "count_values",
	};

	if (!n) {
		gw_buf_set_error(out, -EINVAL);
		return;
	}
	switch (n->kind) {
	case GW_PQ_NUMBER:
		fmt_number(out, n->u.num);
		return;
	case GW_PQ_STRING:
		fmt_string(out, n->u.str);
		return;
	case GW_PQ_SELECTOR:
	case GW_PQ_MATRIX:
		fmt_selector(out, n);
		return;
	case GW_PQ_CALL:
		if (gw_pql_func_name(n->u.call.fn))
			gw_buf_putf(out, "%s(", gw_pql_func_name(n->u.call.fn));
		for (size_t i = 0; i < n->u.call.nargs; i++) {
			if (i)
				gw_buf_puts(out, ", ");
			fmt_node(n->u.call.args[i], out);
		}
		gw_buf_put(out, ")", 1);
		return;
	case GW_PQ_AGG:
		if ((size_t)n->u.agg.op >=
			    sizeof(agg_names) / sizeof(agg_names[0]) ||
		    !agg_names[n->u.agg.op])
			break;
		gw_buf_puts(out, agg_names[n->u.agg.op]);
		if (n->u.agg.grouping) {
			gw_buf_puts(out,
				    n->u.agg.without ? " without " : " by ");
			fmt_labels(out, n->u.agg.labels, n->u.agg.nlabels);
			gw_buf_put(out, " ", 1);
		}
		gw_buf_put(out, "(", 1);
		if (n->u.agg.param) {
			fmt_node(n->u.agg.param, out);
			gw_buf_puts(out, ", ");
		}
		fmt_node(n->u.agg.expr, out);
		gw_buf_put(out, ")", 1);
		return;
	case GW_PQ_BINARY:
		gw_buf_put(out, "(", 1);
		fmt_node(n->u.bin.lhs, out);
		gw_buf_putf(out, " %s ", gw_pql_op_text(n->u.bin.op));
		if (n->u.bin.bool_mod)
			gw_buf_puts(out, "bool ");
		if (n->u.bin.on || n->u.bin.ignoring) {
			gw_buf_puts(out, n->u.bin.on ? "on " : "ignoring ");
			fmt_labels(out, n->u.bin.labels, n->u.bin.nlabels);
			gw_buf_put(out, " ", 1);
		}
		if (n->u.bin.card == GW_CARD_MANY_TO_ONE ||
		    n->u.bin.card == GW_CARD_ONE_TO_MANY) {
			gw_buf_puts(out, n->u.bin.card == GW_CARD_MANY_TO_ONE
						 ? "group_left "
						 : "group_right ");
			fmt_labels(out, n->u.bin.include, n->u.bin.ninclude);
			gw_buf_put(out, " ", 1);
		}
		fmt_node(n->u.bin.rhs, out);
		gw_buf_put(out, ")", 1);
		return;
	case GW_PQ_NEG:
		gw_buf_puts(out, "(-");
		fmt_node(n->u.inner, out);
		gw_buf_put(out, ")", 1);
		return;
	case GW_PQ_PAREN:
		fmt_node(n->u.inner, out);
		return;
	case GW_PQ_SUBQUERY:
		/* The inner expression always prints as one term. */
		fmt_node(n->u.subq.expr, out);
		gw_buf_put(out, "[", 1);
		fmt_duration(out, n->u.subq.range_ms);
		gw_buf_put(out, ":", 1);
		if (n->u.subq.step_ms)
			fmt_duration(out, n->u.subq.step_ms);
		gw_buf_put(out, "]", 1);
		fmt_mods(out, n->u.subq.offset_ms, n->u.subq.at,
			 n->u.subq.at_ms);
		return;
	}
	gw_buf_set_error(out, -EINVAL);
}

int gw_promql_format(const struct gw_pq_node *n, struct gw_buf *out)
{
	if (!n || !out)
		return -EINVAL;
	fmt_node(n, out);
	return gw_buf_error(out);
}
