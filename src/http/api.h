/* SPDX-License-Identifier: MIT */
/*
 * api.h - Prometheus' HTTP query API (/api/v1/...) over a struct
 * gw_queryable: request parameters in, a JSON reply out.  No sockets here:
 * server.c gathers the parameters (query string and form body) and sends
 * the reply; this module parses, evaluates and renders, so that it can be
 * tested without a server.
 *
 * Endpoints (GET or POST; see docs/internals/api.md)
 *   /api/v1/query                query, time, timeout
 *   /api/v1/query_range          query, start, end, step, timeout
 *   /api/v1/series               match[] (one or more), start, end, limit
 *   /api/v1/labels               match[] (optional), start, end, limit
 *   /api/v1/label/NAME/values    match[] (optional), start, end, limit
 *   /api/v1/alerts               (pending and firing alerts; with
 *                                include_resolved=1 also those resolved
 *                                in the last 15 min, state "resolved")
 *   /api/v1/rules                (alerting rule groups and their alerts)
 *   /api/v1/profile              match[] (optional: every process), start,
 *                                end (default: the last hour), format
 *                                (json, folded, pprof): the CPU profiles
 *                                of the window merged (profile_api.c)
 *   /api/v1/profile/diff         the same and base_start, base_end,
 *                                base_match[] (default: match[]): the
 *                                window against a base window
 *   /api/v1/baseline             query (a series selector), start, end,
 *                                step, warmup (default 1h): the deployed
 *                                anomaly detector replayed over the raw
 *                                samples, its band and score at each step
 *                                (baseline_api.c)
 *   /api/v1/admin/push           POST only: match[] (one or more), start,
 *                                end (default: now): pushes those raw
 *                                samples to every remote_write endpoint
 *                                through gw_api_opts.push; without it 503
 *                                "admin APIs disabled"
 *
 * Parameters follow Prometheus: a time is RFC 3339 (2015-07-01T20:10:51.781Z,
 * or with an offset such as +02:00) or Unix seconds as a float; a duration
 * (step, timeout) is float seconds or a PromQL duration (5m, 1h30m).  When a
 * name is given more than once the first value counts, except match[],
 * which is a list.
 *
 * Replies are Prometheus' envelopes, byte for byte in shape:
 *   {"status":"success","data":...[,"warnings":[...]]}
 *   {"status":"error","errorType":"bad_data","error":"..."}
 * with HTTP 400 (bad_data), 404 (not_found), 422 (execution), 503 (timeout,
 * unavailable: also a query cancelled through gw_api_opts.cancel) and 500
 * (internal).  Messages use Prometheus' wording, e.g.
 * `invalid parameter "query": 1:5: parse error: ...`.
 *
 * Ownership: parameters and the queryable are borrowed; a reply owns its
 * body until gw_api_reply_release.  Errors: 0 or -errno (-ENOMEM, -ENOSPC
 * past a bound, -EINVAL for bad input).
 *
 * Thread safety: gw_api_handle keeps no state of its own and may run in
 * several threads at once over the same queryable (which must allow it, as
 * store/query.h requires).
 */
#ifndef GW_HTTP_API_H
#define GW_HTTP_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/query.h"

struct gw_alerts;

/* "All time" for series/labels without start/end (ms since the epoch). */
#define GW_API_MIN_TIME (INT64_MIN / 4)
#define GW_API_MAX_TIME (INT64_MAX / 4)

#define GW_API_MAX_PARAMS      1024	    /* name=value pairs per request */
#define GW_API_MAX_PARAM_BYTES (256u << 10) /* their decoded size, all */
#define GW_API_MAX_BODY	       (64u << 10)  /* POST form body */
#define GW_API_MAX_REPLY       (64u << 20)  /* JSON reply */
#define GW_API_MAX_POINTS      11000	    /* per series in a range query */

/* What gw_api_opts' zeros mean. */
#define GW_API_DEFAULT_LOOKBACK_MS (5 * 60 * 1000)
#define GW_API_DEFAULT_MAX_SAMPLES 50000000ull
#define GW_API_DEFAULT_TIMEOUT	   120.0

struct gw_api_opts {
	int64_t lookback_ms;	      /* instant selectors; 0: 5 min */
	uint64_t max_samples;	      /* per query; 0: 50,000,000 */
	double timeout;		      /* seconds: the default and the cap
					 of ?timeout=; 0: 120 */
	unsigned int max_concurrency; /* queries evaluated at once; 0: 4
					 (read by server.c) */
	/* Set (by another thread) to end running queries at once: they
	 * answer 503 "unavailable", "query cancelled: the agent is
	 * stopping".  NULL = none; borrowed.  server.c puts its own here. */
	const _Atomic bool *cancel;
	/* The alert evaluator behind /api/v1/alerts and /api/v1/rules
	 * (pipeline/alerts.h); NULL: both answer empty lists.  Borrowed. */
	struct gw_alerts *alerts;
	/*
	 * POST /api/v1/admin/push, wired by the agent (this layer cannot see
	 * export/): pushes the raw samples of the series matching any of the
	 * nsets matcher lists over [start_ms, end_ms].  Returns the
	 * endpoints that took it (> 0), -ENODEV (none configured), -ENOSPC
	 * (too many pushes open) or another -errno.  NULL: disabled.
	 * Called from query worker threads.
	 */
	int (*push)(void *ctx, const struct gw_matcher *const *sets,
		    const size_t *nm, size_t nsets, int64_t start_ms,
		    int64_t end_ms);
	void *push_ctx;
	/* CPU profiles behind /api/v1/profile (store/profstore.h); NULL:
	 * 503.  profile_off says why: --profile off.  Borrowed. */
	struct gw_profstore *profiles;
	bool profile_off;
	int64_t profile_max_window_ms; /* 0: 31 days */
};

/* ---- parameters ---- */

struct gw_api_param {
	char *name;
	char *value;
	size_t vlen; /* value's bytes: a decoded %00 is kept, and ends value
			for those who read it as a C string */
};

/* A list of decoded name/value pairs in arrival order; zero-initialise. */
struct gw_api_params {
	struct gw_api_param *v;
	size_t n;
	size_t cap;
	size_t bytes; /* private: decoded bytes held */
};

/* Copies one pair (value NULL = ""); -ENOSPC past the bounds above. */
__attribute__((warn_unused_result)) int
gw_api_params_add(struct gw_api_params *p, const char *name, const char *value);
/* The same with the value's length given (it may hold NUL bytes). */
__attribute__((warn_unused_result)) int
gw_api_params_add_len(struct gw_api_params *p, const char *name,
		      const char *value, size_t vlen);
/*
 * Appends the pairs of an application/x-www-form-urlencoded body
 * (a=1&b=%2F+x): '+' is a space, %XX a byte.  A bad escape is -EINVAL with
 * `invalid URL escape "%zz"` in err; the pairs before it stay added.
 */
__attribute__((warn_unused_result)) int
gw_api_params_parse_form(struct gw_api_params *p, const char *body, size_t len,
			 char *err, size_t errlen);
/* The first value of name, or NULL. */
const char *gw_api_params_get(const struct gw_api_params *p, const char *name);
/* The same with its length in *len, NUL bytes included. */
const char *gw_api_params_get_len(const struct gw_api_params *p,
				  const char *name, size_t *len);
void gw_api_params_release(struct gw_api_params *p);

/* ---- values ---- */

/*
 * A time: Unix seconds as a float ("1435781451.781", rounded to the
 * millisecond) or RFC 3339 ("2015-07-01T20:10:51.781Z", "...+02:00", any
 * number of fraction digits, truncated to the millisecond).  Prometheus'
 * own "minimum/maximum time" strings map to GW_API_MIN/MAX_TIME.  -EINVAL
 * for anything else or out of that range; *ms is left alone on error.
 */
__attribute__((warn_unused_result)) int gw_api_parse_time(const char *s,
							  int64_t *ms);
/*
 * A duration: float seconds ("15", "0.5") or a PromQL duration ("5m",
 * "1h30m").  -ERANGE when it overflows, -EINVAL otherwise.  Negative and
 * zero values are returned: the caller judges them.
 */
__attribute__((warn_unused_result)) int gw_api_parse_duration(const char *s,
							      int64_t *ms);

/* ---- routing and replies ---- */

enum gw_api_endpoint {
	GW_API_QUERY,
	GW_API_QUERY_RANGE,
	GW_API_SERIES,
	GW_API_LABELS,
	GW_API_LABEL_VALUES,
	GW_API_ALERTS,
	GW_API_RULES,
	GW_API_ADMIN_PUSH,
	GW_API_UNKNOWN, /* under /api/v1/ but not served: 404 not_found */
	GW_API_PROFILE,
	GW_API_PROFILE_DIFF,
	GW_API_BASELINE,
};
#define GW_API_ENDPOINTS 12

/* 0 and *ep when path is under /api/v1/, -ENOENT otherwise. */
__attribute__((warn_unused_result)) int gw_api_route(const char *path,
						     enum gw_api_endpoint *ep);
/* "query", "query_range", "series", "labels", "label_values", "alerts",
 * "rules", "admin_push", "unknown", "profile", "profile_diff", "baseline". */
const char *gw_api_endpoint_name(enum gw_api_endpoint ep);

struct gw_api_reply {
	unsigned int status; /* HTTP status */
	struct gw_buf body;  /* JSON, NUL-terminated; or as content_type says */
	/* NULL: application/json; else the body's type (folded stacks,
	 * pprof), possibly empty.  A static string. */
	const char *content_type;
};

void gw_api_reply_init(struct gw_api_reply *r);
void gw_api_reply_release(struct gw_api_reply *r);
/* Replaces the reply with an error envelope; errtype as Prometheus names
 * it ("bad_data", "execution", "timeout", "unavailable", ...). */
__attribute__((warn_unused_result)) int
gw_api_reply_error(struct gw_api_reply *r, unsigned int status,
		   const char *errtype, const char *msg);

struct gw_api_request {
	const char *path; /* URL path, already decoded */
	const struct gw_api_params *params;
	int64_t now_ms;	     /* wall clock at arrival */
	uint64_t arrival_ns; /* CLOCK_MONOTONIC at arrival,
					       0 = now; the timeout counts
					       from here */
	bool post;	     /* the method was POST (admin endpoints want it) */
};

/*
 * Answers one request into out (initialised by the caller).  q NULL means
 * no store: 503 unavailable.  o NULL means the defaults.  Returns 0 with
 * out->status and a JSON body in every case the client should see, or
 * -ENOMEM when not even an error envelope could be built (answer 500).
 */
__attribute__((warn_unused_result)) int
gw_api_handle(const struct gw_queryable *q, const struct gw_api_opts *o,
	      const struct gw_api_request *rq, struct gw_api_reply *out);

/* /api/v1/profile (diff false) and /api/v1/profile/diff (profile_api.c),
 * called by gw_api_handle; the same contract. */
__attribute__((warn_unused_result)) int
gw_api_profile(const struct gw_api_opts *o, const struct gw_api_request *rq,
	       struct gw_api_reply *out, bool diff);

/*
 * /api/v1/baseline (baseline_api.c), called by gw_api_handle; the same
 * contract.  For each series the selector picks, the deployed detector
 * (pipeline/detect.h, the agent's defaults) is run over its raw samples
 * from start - warmup to end.  At each step t from start to end it reports
 * the most anomalous sample of (t - step, t] (the highest score; so a
 * short excursion between two steps is not lost): its value, its score and
 * the band it was judged against (expected value, lower and upper bounds
 * at the detector's threshold score); a step with no judged sample shows
 * the last sample before it (within the lookback) and its band, without a
 * score.  Plus the anomalous episodes that overlap [start, end].  No point
 * while the model learns; raw samples only.  The model's numbers have 9
 * significant digits; values are the samples' own.
 *
 *   {"resultType":"baseline","threshold":"0.9","warmup":3600,"result":[
 *     {"metric":{...},"values":[[t,"v"],...],"expected":[...],
 *      "lower":[...],"upper":[...],"score":[...],
 *      "episodes":[{"onset":t,"peak_time":t,"end":t,"peak":"0.99",
 *                   "active":false}]}]}
 */
__attribute__((warn_unused_result)) int
gw_api_baseline(const struct gw_queryable *q, const struct gw_api_opts *o,
		const struct gw_api_request *rq, struct gw_api_reply *out);

#endif
