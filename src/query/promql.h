/* SPDX-License-Identifier: MIT */
/*
 * promql.h - the PromQL subset: lexer (promql_lex.c), parser
 * (promql_parse.c) and evaluator (promql_eval.c, with aggregation in
 * promql_agg.c, binary operators in promql_binop.c, functions in
 * promql_call.c, its numerics in promql_fn.c and its JSON in
 * promql_json.c) over a struct gw_queryable (store/query.h).
 *
 * The subset
 *   literals      numbers (1, 1.5e3, 0x1f, Inf, NaN), strings ("..", '..')
 *   selectors     name{l="v", l!="v", l=~"re", l!~"re"}, {__name__=~".."}
 *                 with [5m] (range), offset 1h (may be negative) and
 *                 @ <unix seconds> / @ start() / @ end(), in either
 *                 order; durations as in Prometheus: ms s m h d w y,
 *                 combined (1h30m)
 *   subqueries    expr[range:step], expr[range:] (the default step, see
 *                 struct gw_promql_opts), with offset and @, nested,
 *                 wherever a range vector may be
 *   functions     all of Prometheus 2.x's but the native histogram ones
 *                 (the table in promql_call.c): range (rate irate
 *                 increase delta idelta changes resets deriv
 *                 predict_linear holt_winters, avg_ min_ max_ sum_ count_
 *                 last_ stddev_ stdvar_ quantile_ mad_ present_
 *                 absent_over_time), math (abs ceil floor round exp ln
 *                 log2 log10 sqrt sgn, trigonometry, deg rad pi, clamp
 *                 clamp_min clamp_max), time (time timestamp day_of_month
 *                 day_of_week day_of_year days_in_month hour minute month
 *                 year), labels (label_replace label_join), absent, sort
 *                 sort_desc sort_by_label sort_by_label_desc,
 *                 histogram_quantile (classic le buckets), vector scalar
 *   aggregations  sum avg min max count group stddev stdvar
 *                 (by|without (l,...)) (expr), topk bottomk quantile
 *                 (param, expr), count_values("label", expr); the clause
 *                 may come before or after the parenthesised expression
 *   binary        ^  * / % atan2  + -  == != > < >= <= (with "bool")
 *                 and unless  or, loosest last, ^ right-associative,
 *                 between scalars and vectors (set operators between
 *                 vectors only); vector matching one-to-one, or
 *                 group_left/group_right (labels) after on(...) /
 *                 ignoring(...)
 *   unary         -expr, +expr; parentheses
 *
 * Parser guarantees: every node has its static type set and checked; a
 * call's range-vector argument is always a GW_PQ_MATRIX or GW_PQ_SUBQUERY
 * node (parentheses around it are dropped); a subquery's expression is an
 * instant vector; a selector's matchers start with __name__="name" when
 * the name was written outside the braces; offsets may be negative,
 * ranges and steps are > 0 (a step of 0: none given); a binary node's
 * card is GW_CARD_MANY_TO_MANY for set operators and GW_CARD_ONE_TO_ONE
 * when a side is a scalar.  Aggregation names, by, without, offset, and, or, unless
 * may be metric names where Prometheus allows it ("sum", "foo * min").
 *
 * Errors: parse errors carry the byte offset in the query and a message in
 * Prometheus' style ("1:5: parse error: unexpected ..."); gw_promql_parse
 * returns -EINVAL and fills struct gw_promql_error.  The message is valid
 * UTF-8 whatever the query holds (other bytes written \xNN).
 *
 * Thread safety: a parsed expression is read-only during evaluation and
 * may be evaluated by several threads at once.
 */
#ifndef GW_PROMQL_H
#define GW_PROMQL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/labels.h"
#include "store/query.h"

enum gw_pq_kind {
	GW_PQ_NUMBER,
	GW_PQ_STRING,
	GW_PQ_SELECTOR, /* instant vector selector */
	GW_PQ_MATRIX,	/* range vector selector: selector with [range] */
	GW_PQ_CALL,
	GW_PQ_AGG,
	GW_PQ_BINARY,
	GW_PQ_NEG, /* unary minus */
	GW_PQ_PAREN,
	GW_PQ_SUBQUERY, /* expr[range:step], a range vector */
};

enum gw_pq_func {
	GW_FN_RATE,
	GW_FN_IRATE,
	GW_FN_INCREASE,
	GW_FN_DELTA,
	GW_FN_AVG_OVER_TIME,
	GW_FN_MIN_OVER_TIME,
	GW_FN_MAX_OVER_TIME,
	GW_FN_SUM_OVER_TIME,
	GW_FN_COUNT_OVER_TIME,
	GW_FN_LAST_OVER_TIME,
	GW_FN_STDDEV_OVER_TIME,
	GW_FN_QUANTILE_OVER_TIME, /* (scalar, matrix) */
	GW_FN_ABS,
	GW_FN_TIME,   /* () -> scalar */
	GW_FN_VECTOR, /* (scalar) -> vector */
	GW_FN_SCALAR, /* (vector) -> scalar */
	/* range vector -> vector */
	GW_FN_STDVAR_OVER_TIME,
	GW_FN_MAD_OVER_TIME,
	GW_FN_PRESENT_OVER_TIME,
	GW_FN_ABSENT_OVER_TIME,
	GW_FN_CHANGES,
	GW_FN_RESETS,
	GW_FN_DERIV,
	GW_FN_IDELTA,
	GW_FN_PREDICT_LINEAR,		    /* (matrix, scalar) */
	GW_FN_HOLT_WINTERS,		    /* (matrix, scalar, scalar) */
	GW_FN_DOUBLE_EXPONENTIAL_SMOOTHING, /* holt_winters' 3.x name */
	/* instant vector -> vector, one value at a time */
	GW_FN_CEIL,
	GW_FN_FLOOR,
	GW_FN_EXP,
	GW_FN_LN,
	GW_FN_LOG2,
	GW_FN_LOG10,
	GW_FN_SQRT,
	GW_FN_SGN,
	GW_FN_ACOS,
	GW_FN_ACOSH,
	GW_FN_ASIN,
	GW_FN_ASINH,
	GW_FN_ATAN,
	GW_FN_ATANH,
	GW_FN_COS,
	GW_FN_COSH,
	GW_FN_SIN,
	GW_FN_SINH,
	GW_FN_TAN,
	GW_FN_TANH,
	GW_FN_DEG,
	GW_FN_RAD,
	GW_FN_ROUND,	 /* (vector [, scalar]) */
	GW_FN_CLAMP,	 /* (vector, scalar, scalar) */
	GW_FN_CLAMP_MIN, /* (vector, scalar) */
	GW_FN_CLAMP_MAX, /* (vector, scalar) */
	GW_FN_PI,	 /* () -> scalar */
	/* ([vector]) -> vector: the time (default: time()) in UTC */
	GW_FN_DAY_OF_MONTH,
	GW_FN_DAY_OF_WEEK,
	GW_FN_DAY_OF_YEAR,
	GW_FN_DAYS_IN_MONTH,
	GW_FN_HOUR,
	GW_FN_MINUTE,
	GW_FN_MONTH,
	GW_FN_YEAR,
	GW_FN_TIMESTAMP,
	/* labels, order, presence */
	GW_FN_LABEL_REPLACE, /* (vector, dst, replacement, src, regex) */
	GW_FN_LABEL_JOIN,    /* (vector, dst, separator, src...) */
	GW_FN_ABSENT,
	GW_FN_SORT,
	GW_FN_SORT_DESC,
	GW_FN_SORT_BY_LABEL,	  /* (vector, label...) */
	GW_FN_SORT_BY_LABEL_DESC, /* (vector, label...) */
	GW_FN_HISTOGRAM_QUANTILE, /* (scalar, vector) */
};

enum gw_pq_aggop {
	GW_AGG_SUM,
	GW_AGG_AVG,
	GW_AGG_MIN,
	GW_AGG_MAX,
	GW_AGG_COUNT,
	GW_AGG_TOPK,	 /* param: scalar k */
	GW_AGG_BOTTOMK,	 /* param: scalar k */
	GW_AGG_QUANTILE, /* param: scalar q */
	GW_AGG_STDDEV,
	GW_AGG_STDVAR,
	GW_AGG_GROUP,
	GW_AGG_COUNT_VALUES, /* param: string, the output label */
};

enum gw_pq_binop {
	GW_OP_ADD,
	GW_OP_SUB,
	GW_OP_MUL,
	GW_OP_DIV,
	GW_OP_MOD,
	GW_OP_POW,
	GW_OP_EQ,
	GW_OP_NE,
	GW_OP_GT,
	GW_OP_LT,
	GW_OP_GE,
	GW_OP_LE,
	GW_OP_ATAN2,
	GW_OP_AND, /* set operators: vector-vector only */
	GW_OP_OR,
	GW_OP_UNLESS,
};

/* Vector matching cardinality of a binary operation. */
enum gw_pq_card {
	GW_CARD_ONE_TO_ONE,
	GW_CARD_MANY_TO_ONE,  /* group_left */
	GW_CARD_ONE_TO_MANY,  /* group_right */
	GW_CARD_MANY_TO_MANY, /* and, or, unless */
};

/* The @ modifier of a selector or a subquery. */
enum gw_pq_at {
	GW_AT_NONE,
	GW_AT_TIME,  /* @ <unix seconds>, in at_ms */
	GW_AT_START, /* @ start(): the query's start */
	GW_AT_END,   /* @ end(): the query's end */
};

/* The static type of an expression, as Prometheus reports it. */
enum gw_pq_type {
	GW_TYPE_SCALAR,
	GW_TYPE_VECTOR,
	GW_TYPE_MATRIX,
	GW_TYPE_STRING,
};

struct gw_pq_node {
	enum gw_pq_kind kind;
	enum gw_pq_type type;
	uint32_t pos; /* byte offset of the node's first token */
	union {
		double num;
		char *str;
		struct {
			char *name;	      /* NULL when only {..} */
			struct gw_matcher *m; /* includes __name__ = name */
			size_t nm;
			int64_t range_ms; /* GW_PQ_MATRIX only */
			int64_t offset_ms;
			enum gw_pq_at at;
			int64_t at_ms; /* GW_AT_TIME */
		} sel;
		struct {
			struct gw_pq_node *expr; /* an instant vector */
			int64_t range_ms;
			int64_t step_ms; /* 0: the default step */
			int64_t offset_ms;
			enum gw_pq_at at;
			int64_t at_ms;
		} subq;
		struct {
			enum gw_pq_func fn;
			struct gw_pq_node **args;
			size_t nargs;
		} call;
		struct {
			enum gw_pq_aggop op;
			struct gw_pq_node *expr;
			struct gw_pq_node *param; /* topk/bottomk/quantile */
			char **labels;
			size_t nlabels;
			bool without;
			bool grouping; /* a by/without clause given */
		} agg;
		struct {
			enum gw_pq_binop op;
			struct gw_pq_node *lhs, *rhs;
			bool bool_mod;	   /* comparison with "bool" */
			bool on, ignoring; /* vector matching clause */
			char **labels;
			size_t nlabels;
			enum gw_pq_card card;
			char **include; /* group_left/group_right (labels) */
			size_t ninclude;
		} bin;
		struct gw_pq_node *inner; /* NEG, PAREN */
	} u;
};

struct gw_promql_error {
	uint32_t pos;  /* byte offset into the query */
	char msg[256]; /* Prometheus-style, position included */
};

#define GW_PROMQL_MAX_DEPTH 128	  /* nesting; deeper is a parse error */
#define GW_PROMQL_MAX_QUERY 65536 /* bytes */

/* Parses query; *out is freed with gw_promql_free.  0, -EINVAL, -ENOMEM. */
__attribute__((warn_unused_result)) int
gw_promql_parse(const char *query, struct gw_pq_node **out,
		struct gw_promql_error *err);
/* The same for the len bytes at query, which may hold a NUL: a parse
 * error ("unexpected character: '\x00'"), never the end of the query. */
__attribute__((warn_unused_result)) int
gw_promql_parse_len(const char *query, size_t len, struct gw_pq_node **out,
		    struct gw_promql_error *err);
void gw_promql_free(struct gw_pq_node *n);

/*
 * Appends the canonical text of n to out: binary operations and unary minus
 * fully parenthesised, negative numbers as (-1), durations in Prometheus'
 * form (1h30m), keywords in lower case, parentheses of the query dropped.
 * Parsing the result gives an expression that formats the same.
 * 0, -ENOSPC (out's maximum), -ENOMEM, -EINVAL (a malformed tree); the
 * error stays in out, as after gw_buf_put().
 */
__attribute__((warn_unused_result)) int
gw_promql_format(const struct gw_pq_node *n, struct gw_buf *out);

/* Parses a series selector alone (for /api/v1/series match[]). */
__attribute__((warn_unused_result)) int
gw_promql_parse_selector(const char *text, struct gw_matcher **m, size_t *nm,
			 struct gw_promql_error *err);
void gw_matchers_free(struct gw_matcher *m, size_t nm);

/* Parses a duration such as 5m, 1h30m, 250ms into ms; -EINVAL. */
__attribute__((warn_unused_result)) int gw_promql_duration(const char *s,
							   int64_t *ms);

/* Evaluation */

struct gw_promql_opts {
	int64_t lookback_ms; /* instant selectors; default 5 min */
	/* The step of a subquery written without one (expr[5m:]): Prometheus'
	 * global evaluation_interval; default 1 min. */
	int64_t subquery_step_ms;
	uint64_t max_samples; /* 0 = unlimited */
	uint64_t timeout_ns;  /* 0 = none */
	/*
	 * force_tier: every step reads `tier` (the API's tier parameter)
	 * instead of raw wherever raw samples exist and the store's pick
	 * before that.
	 */
	bool force_tier;
	enum gw_tier tier;
	/*
	 * Read between steps and passed to select() (gw_query_limits): once
	 * true the evaluation stops with -ECANCELED, res->err
	 * GW_QERR_TIMEOUT and "query cancelled: the agent is stopping".
	 * NULL = never; borrowed, set by another thread.
	 */
	const _Atomic bool *cancel;
};

struct gw_qpoint {
	int64_t t;
	double v;
};

struct gw_qseries {
	struct gw_labels labels;
	struct gw_qpoint *p;
	size_t n;
};

enum gw_qerr {
	GW_QERR_NONE,
	GW_QERR_BAD_DATA,  /* errorType "bad_data" */
	GW_QERR_EXECUTION, /* "execution": too many samples, etc. */
	GW_QERR_TIMEOUT,   /* "timeout" */
	GW_QERR_INTERNAL,  /* "internal" */
};

struct gw_qresult {
	enum gw_pq_type type; /* scalar, vector, matrix or string */
	/* scalar / string: one point (and str) */
	struct gw_qpoint scalar;
	char *str;
	/* vector: each series has one point; matrix: n points each */
	struct gw_qseries *series;
	size_t nseries;
	/* statistics */
	uint64_t samples;  /* samples the query touched */
	enum gw_tier tier; /* tier the selectors read */
	/* on failure */
	enum gw_qerr err;
	char errmsg[256];
};

void gw_qresult_release(struct gw_qresult *r);

/*
 * Evaluates e at time t (instant query).  The result type is the
 * expression's (a bare range selector gives a matrix, as Prometheus).
 * Returns 0 or a negative errno with res->err/errmsg set.
 */
__attribute__((warn_unused_result)) int
gw_promql_eval_instant(const struct gw_pq_node *e, const struct gw_queryable *q,
		       int64_t t, const struct gw_promql_opts *o,
		       struct gw_qresult *res);

/*
 * Evaluates e at start, start+step, ... <= end: a matrix (scalars become
 * one series with no labels, as Prometheus).  A range selector at top
 * level is bad_data ("invalid expression type \"range vector\" for range
 * query, must be Scalar or instant Vector").
 */
__attribute__((warn_unused_result)) int
gw_promql_eval_range(const struct gw_pq_node *e, const struct gw_queryable *q,
		     int64_t start, int64_t end, int64_t step,
		     const struct gw_promql_opts *o, struct gw_qresult *res);

/*
 * A sample value as Prometheus 2.42 writes it in JSON (vectors, matrices):
 * the shortest decimal that reads back as v (Go's strconv.FormatFloat with
 * precision -1), in 'f' layout ("0.30000000000000004", "-0",
 * "123456789012345680000") unless |v| < 1e-6 or |v| >= 1e21, then 'e'
 * layout ("1e-07", "5e-324", "1.5e+21"); "NaN", "+Inf", "-Inf".  All or
 * nothing, like gw_buf_add().
 */
__attribute__((warn_unused_result)) int gw_promql_fmt_value(struct gw_buf *out,
							    double v);

/*
 * A scalar result of an instant query as Prometheus writes it: the same
 * digits, always in 'f' layout ("0.0000001", "1000000000000000000000").
 */
__attribute__((warn_unused_result)) int gw_promql_fmt_scalar(struct gw_buf *out,
							     double v);

/* A timestamp (ms) as Prometheus writes it: seconds with up to 3
 * decimals, no trailing zeros. */
void gw_promql_fmt_time(struct gw_buf *out, int64_t t_ms);

/*
 * v as Go's fmt prints a float64 ("%v"), which is how Prometheus' alert
 * templates show {{ $value }}: the same digits, in 'e' layout when the
 * exponent is below -4 or from 6 up ("1e+06", "1e-05", "123456.5").
 */
__attribute__((warn_unused_result)) int gw_promql_fmt_text(struct gw_buf *out,
							   double v);

/* Appends the "data" object of Prometheus' query API for res:
 * {"resultType":"matrix","result":[...]}.  All or nothing: on failure out
 * is left as it was.  */
__attribute__((warn_unused_result)) int
gw_qresult_json(const struct gw_qresult *res, struct gw_buf *out);

#endif
