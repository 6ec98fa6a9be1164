/* SPDX-License-Identifier: MIT */
/*
 * promql_int.h - what the PromQL evaluator's files share; internal to
 * src/query/, not part of the promql.h interface.  promql_json.c needs
 * nothing from here.
 *
 *   promql_eval.c   the evaluator's core: state, label set interning,
 *                   values, selectors, dispatch, loading and the entry
 *                   points
 *   promql_agg.c    aggregation (sum ... count_values, topk/bottomk)
 *   promql_binop.c  binary operators, vector matching, set operators
 *   promql_range.c  range-vector arguments: range selectors, subqueries
 *   promql_gosort.c Go's sort.Sort, for Prometheus' topk/bottomk order
 *   promql_call.c   the function table (also read by the parser) and the
 *                   functions' evaluation
 *   promql_fn.c     the numerics
 *
 * Two parts.  The evaluator's state (struct ev, one per query, used by
 * one thread) and the helpers its files call on it: they follow
 * promql_eval.c's conventions (errors fill ev->res and return -errno; a
 * struct val is zeroed by the caller and released by it on success and
 * failure alike).
 *
 * The numerics: pure arithmetic on caller-owned arrays: no function
 * allocates, keeps a pointer, or touches evaluator state, and every one
 * may be called from several threads at once on distinct data.  Values
 * and their edge cases (NaN, +-Inf, empty input) follow Prometheus.
 * Samples are given as parallel arrays: times ts[] in milliseconds,
 * strictly increasing, and values vs[], n of each.
 */
#ifndef GW_PROMQL_INT_H
#define GW_PROMQL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/promql.h"

/* ---- the evaluator's state (promql_eval.c) ---- */

#define MEMO 4

/* An interned label set. */
struct lset {
	struct gw_labels l;
	char *key;
	size_t klen;
	uint64_t hash;
	uint64_t mark, mark2; /* stamps of the current operation */
	size_t idx;	      /* set together with mark */
	size_t idx2;	      /* set together with mark2 */
	size_t out;	      /* range query: output series index + 1 */
	struct {
		const void *by;
		struct lset *to;
	} memo[MEMO];
	unsigned memo_next;
};

struct ltab {
	struct lset **slot;
	size_t cap, n;
};

/* A loaded selector: its series sorted by labels, as Prometheus reads
 * them (the order topk/bottomk break ties in). */
struct sel {
	const struct gw_pq_node *node;
	int64_t mint, maxt; /* the times it is evaluated at, @/offset applied */
	struct gw_series_set set;
	struct lset **ls; /* per series */
};

/* One series of a subquery's result. */
struct sqser {
	struct lset *ls;
	int64_t *t;
	double *v;
	size_t n, cap;
};

/*
 * A subquery, evaluated once for the whole query (as Prometheus does) at
 * lo, lo + step, ... <= hi, lo a multiple of step: its points are then
 * taken window by window, as a range selector's samples are.
 */
struct sqc {
	const struct gw_pq_node *node;
	int64_t lo, hi, step;
	bool done;
	struct sqser *s;
	size_t n, cap;
	struct lset **key; /* open addressing: label set -> index in s */
	size_t *val, kcap;
};

struct smp {
	struct lset *ls;
	double v;
};

struct vec {
	struct smp *p;
	size_t n, cap;
};

struct val {
	enum gw_pq_type type;
	double s;
	const char *str;
	struct vec v;
};

/* A range query's output series under construction. */
struct oser {
	struct lset *ls;
	struct gw_qpoint *p;
	size_t n, cap;
};

struct ev {
	const struct gw_queryable *q;
	struct gw_qresult *res;
	int64_t lookback;
	enum gw_tier tier;
	int forced; /* 1 + the tier the options force; 0 = none */
	struct gw_query_limits lim;
	int64_t start, end; /* the query's, for @ start() and @ end() */
	int64_t sq_step;    /* a subquery's step when it gives none */
	struct sel *sel;
	size_t nsel, capsel;
	struct sqc *sq;
	size_t nsq, capsq;
	struct ltab tab;
	struct gw_buf kb;
	struct lset *empty;
	uint64_t stamp;
	int depth;
	/* scratch */
	int64_t *st;
	double *sv;
	size_t scap;
	size_t *ix;
	size_t ixcap;
	/* range query output */
	struct oser *outs;
	size_t nout, capout;
	struct fncache *fnc; /* promql_call.c's, per call node */
};

/* Fills res->err/errmsg unless already set; returns err. */
__attribute__((format(printf, 4, 5))) int
gw_pqe_fail(struct ev *ev, enum gw_qerr kind, int err, const char *fmt, ...);
/* gw_pqe_fail for a tree the parser cannot have produced: -EINVAL. */
int gw_pqe_malformed(struct ev *ev);

/* The interned set equal to *take (always consumed). */
int gw_pqe_intern(struct ev *ev, struct gw_labels *take, struct lset **out);

/* The set derived from s by gw_labels_project(names, keep, drop), memoised
 * under key (one key per distinct derivation). */
int gw_pqe_derive(struct ev *ev, struct lset *s, const void *key,
		  char *const *names, size_t n, bool keep, bool drop,
		  struct lset **out);
/* s without __name__ (s itself when it has none). */
int gw_pqe_noname(struct ev *ev, struct lset *s, struct lset **out);

int gw_pqe_vpush(struct vec *v, struct lset *ls, double x);
void gw_pqe_val_release(struct val *v);
/* Room for n entries in ev->st and ev->sv / in ev->ix. */
int gw_pqe_scratch(struct ev *ev, size_t n);
int gw_pqe_scratch_ix(struct ev *ev, size_t n);
/* Two sets of the vector equal after a name drop: Prometheus' error. */
int gw_pqe_check_dups(struct ev *ev, const struct vec *v);

/* Evaluates n at t into *out (zeroed by the caller); out is released by
 * the caller on both success and failure. */
int gw_pqe_eval(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		struct val *out);
/* n at t, which must give a scalar. */
int gw_pqe_eval_scalar_arg(struct ev *ev, const struct gw_pq_node *n, int64_t t,
			   double *out);

/* An instant selector at t; with stamps, each value is the time of the
 * sample in seconds (timestamp()) instead of the sample's value. */
int gw_pqe_selector(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    bool stamps, struct val *out);

/* The loaded selector of node n; NULL if none. */
struct sel *gw_pqe_find_sel(struct ev *ev, const struct gw_pq_node *n);
/* Between steps: the deadline and the cancel flag of the options. */
int gw_pqe_step_check(struct ev *ev);

/* ---- range-vector arguments (promql_range.c) ---- */

/* a - b, saturating at INT64_MIN / INT64_MAX. */
int64_t gw_pqe_sat_sub(int64_t a, int64_t b);
/* The time a selector or subquery with these modifiers reads at when
 * evaluated at t: t, the @ time, the query's start or end, less offset. */
int64_t gw_pqe_at_time(const struct ev *ev, enum gw_pq_at at, int64_t at_ms,
		       int64_t offset_ms, int64_t t);
/* First index of a raw series / of a rollup series with time > t. */
size_t gw_pqe_upper_raw(const struct gw_series_data *d, int64_t t);
size_t gw_pqe_upper_rollup(const struct gw_series_data *d, int64_t t);

/*
 * Registers subquery n evaluated at times [lo, hi] (at load time, before
 * any step); [*ilo, *ihi] are the times its expression is evaluated at.
 */
int gw_pqe_subq_add(struct ev *ev, const struct gw_pq_node *n, int64_t lo,
		    int64_t hi, int64_t *ilo, int64_t *ihi);
void gw_pqe_subq_release(struct ev *ev);

/* A range-vector argument (range selector or subquery) at one step. */
struct gw_pqe_rarg {
	int64_t from, at, range; /* the window (from, at], at - from = range */
	size_t n;		 /* series */
	struct sel *sel;	 /* one of sel, sq */
	struct sqc *sq;
};

/* One series' points in the window. */
struct gw_pqe_rpts {
	struct lset *ls;
	const int64_t *ts; /* n points, times increasing */
	const double *vs;
	size_t n;
	/* A selector on a rollup tier: its rollups [lo, hi) in the window
	 * (the points are then (t_last, last) of the non-empty ones, in
	 * ev's scratch arrays); NULL otherwise. */
	const struct gw_series_data *roll;
	size_t lo, hi;
};

/* m (parentheses allowed) at t; a subquery is evaluated on first use. */
int gw_pqe_range_arg(struct ev *ev, const struct gw_pq_node *m, int64_t t,
		     struct gw_pqe_rarg *a);
/* Series i < a->n of a; valid until the next call or evaluation. */
int gw_pqe_range_series(struct ev *ev, const struct gw_pqe_rarg *a, size_t i,
			struct gw_pqe_rpts *p);

/* A function call node (promql_call.c). */
int gw_pqe_eval_call(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		     struct val *out);
/* Releases what the functions kept in ev (ev->fnc). */
void gw_pqe_call_release(struct ev *ev);
/* True for a call whose result order is its answer (sort and friends):
 * an instant query keeps that order. */
bool gw_pqe_call_sorts(const struct gw_pq_node *n);

/*
 * The function table (promql_call.c), the one place a function is
 * described: the parser checks calls against it, the evaluator runs
 * them from it.  Arguments as Prometheus declares them: nargs types;
 * variadic 0 (exactly nargs), > 0 (up to that many of the last ones may
 * be left out) or < 0 (any number more of the last type).
 */
struct gw_pq_fndef {
	const char *name;
	enum gw_pq_func fn;
	unsigned char nargs;
	signed char variadic;
	enum gw_pq_type args[5];
	enum gw_pq_type ret;
	int (*eval)(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    struct val *out);
};

/* The function named name (len bytes, not NUL-terminated), or NULL. */
const struct gw_pq_fndef *gw_pq_fn_lookup(const char *name, size_t len);
/* The function fn, or NULL. */
const struct gw_pq_fndef *gw_pq_fn_def(enum gw_pq_func fn);

/* An aggregation node (promql_agg.c). */
int gw_pqe_eval_agg(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		    struct val *out);
/* A binary operator node (promql_binop.c). */
int gw_pqe_eval_binary(struct ev *ev, const struct gw_pq_node *n, int64_t t,
		       struct val *out);

/* ---- Go's sort.Sort (promql_gosort.c) ---- */

/* Elements 0..n-1 reached through callbacks: less(i, j), swap(i, j). */
struct gw_pqe_gosort {
	bool (*less)(void *ctx, size_t i, size_t j);
	void (*swap)(void *ctx, size_t i, size_t j);
	void *ctx;
};

/* Sorts as Go 1.19+'s sort.Sort does, comparison for comparison (not
 * stable: equal elements end where Go leaves them). */
void gw_pqe_gosort(const struct gw_pqe_gosort *s, size_t n);

/* ---- the numerics (promql_fn.c) ---- */

/* Neumaier's compensated sum: adds x to *sum, the running error to *c;
 * the result is *sum + *c (both start at 0). */
void gw_pqe_ksum(double *sum, double *c, double x);

/* A mean that survives overflow of the running sum; zero-initialise it. */
struct gw_pqe_mean {
	double sum, c, inc;
	double n;
	bool nonfinite; /* an input was +-Inf or NaN */
};

void gw_pqe_mean_add(struct gw_pqe_mean *m, double x);
/* The mean of what was added; NaN when nothing was. */
double gw_pqe_mean_get(const struct gw_pqe_mean *m);

/* Prometheus' quantile q of v[0..n): linear interpolation between the
 * closest ranks, NaN sorted first; v is sorted in place.  NaN for n == 0
 * or q NaN, -Inf for q < 0, +Inf for q > 1. */
double gw_pqe_quantile(double q, double *v, size_t n);

/* a op b for the arithmetic operators (NaN for any other op), and the
 * truth of a op b for the comparison operators (false for any other). */
double gw_pqe_arith(enum gw_pq_binop op, double a, double b);
bool gw_pqe_compare(enum gw_pq_binop op, double a, double b);

/*
 * Prometheus' extrapolated rate (rate), increase (counter) or delta
 * (neither) of the samples in (range_start, range_end], a range of
 * range_ms.  counter: resets are corrected and the start is not
 * extrapolated below zero; rate: per second.  False (and *out untouched)
 * when there is no output: fewer than two samples, or no time between
 * the first and the last.
 */
bool gw_pqe_xrate(const int64_t *ts, const double *vs, size_t n,
		  int64_t range_start, int64_t range_end, int64_t range_ms,
		  bool counter, bool rate, double *out);

/*
 * gw_pqe_xrate over the rollups r[0, n) of one series: their first sample,
 * their last, their number and (counter) their resets within and between
 * windows, so the answer is the raw one's up to the samples of the edge
 * windows that lie outside the range.  Returns false when a non-empty
 * rollup does not know what is needed (version 2, or a gauge's window for
 * a counter function): the caller uses the (t_last, last) points.  *ok as
 * gw_pqe_xrate's result.
 */
bool gw_pqe_xrate_rollup(const struct gw_rollup *r, size_t n,
			 int64_t range_start, int64_t range_end,
			 int64_t range_ms, bool counter, bool rate, double *out,
			 bool *ok);

/* irate of the last two samples, per second; false as gw_pqe_xrate. */
bool gw_pqe_irate(const int64_t *ts, const double *vs, size_t n, double *out);

/*
 * fn (one of the *_over_time functions; phi is quantile_over_time's
 * argument) of the raw values v[0..n), n >= 1.  tmp has room for n
 * doubles when fn is GW_FN_QUANTILE_OVER_TIME and is unused otherwise.
 * 0, or -EINVAL for any other fn.
 */
__attribute__((warn_unused_result)) int
gw_pqe_over_time_raw(enum gw_pq_func fn, double phi, const double *v, size_t n,
		     double *tmp, double *out);

/*
 * fn of the rollups r[lo, hi) taken together (quantile_over_time merges
 * their sketches).  *ok is false when none of them holds a sample, and on
 * error; 0, -EINVAL for a fn that is not *_over_time, or the sketch
 * merge's error.
 */
__attribute__((warn_unused_result)) int
gw_pqe_over_time_rollup(enum gw_pq_func fn, double phi,
			const struct gw_rollup *r, size_t lo, size_t hi,
			double *out, bool *ok);

/* The arguments of a range function besides its samples: the window
 * (range_start, range_end] of range_ms, the evaluation time t (ms), and
 * the scalar arguments a, b (quantile_over_time's phi, predict_linear's
 * seconds, holt_winters' factors). */
struct gw_pqe_rargs {
	int64_t range_start, range_end, range_ms, t;
	double a, b;
};

/*
 * Range function fn of the samples (ts[i], vs[i]), i < n, in a's window:
 * every function taking a range vector but absent_over_time's absence
 * (which is about all series, not one).  *ok false when it has no output
 * (too few samples).  tmp has room for n doubles (quantile, mad).  0, or
 * -EINVAL for a fn that is not a range function.
 */
__attribute__((warn_unused_result)) int
gw_pqe_range_raw(enum gw_pq_func fn, const int64_t *ts, const double *vs,
		 size_t n, const struct gw_pqe_rargs *a, double *tmp,
		 double *out, bool *ok);

/* Go's math.Max and math.Min (NaN wins over all but the infinity on
 * their side; +0 is greater than -0), as clamp uses them. */
double gw_pqe_go_max(double x, double y);
double gw_pqe_go_min(double x, double y);

/* The one-value function fn (abs ... rad) of v; NaN for another fn. */
double gw_pqe_math(enum gw_pq_func fn, double v);

/* round(v, to_nearest): ties up, as Prometheus. */
double gw_pqe_round(double v, double to_nearest);

/* The date function fn (day_of_month ... year) of secs since the epoch,
 * UTC, as Go computes it from int64(secs) (so NaN and huge values give
 * what Prometheus gives on amd64). */
double gw_pqe_date(enum gw_pq_func fn, double secs);

/* A classic histogram bucket: upper bound (le) and cumulative count. */
struct gw_pqe_bucket {
	double upper, count;
};

/*
 * Prometheus' histogram_quantile q of b[0..n) (any order, sorted in place,
 * merged and made monotonic): NaN without a +Inf bucket, with fewer than
 * two distinct bounds or no observations; -Inf/+Inf for q < 0 / q > 1.
 */
double gw_pqe_bucket_quantile(double q, struct gw_pqe_bucket *b, size_t n);

#endif /* GW_PROMQL_INT_H */
