/* SPDX-License-Identifier: MIT */
/*
 * api.c - Prometheus' query API: parameters, evaluation, JSON envelopes.
 *
 * Every handler follows the order in which Prometheus checks its
 * parameters, so that the first complaint a client gets is the one
 * Prometheus would give.
 */
#include "api.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "query/promql.h"
#include "pipeline/alerts.h"

#define DEFAULT_LOOKBACK_MS GW_API_DEFAULT_LOOKBACK_MS
#define DEFAULT_MAX_SAMPLES GW_API_DEFAULT_MAX_SAMPLES
#define DEFAULT_TIMEOUT	    GW_API_DEFAULT_TIMEOUT

/* Prometheus' boundary times, which clients send for "unbounded". */
#define PROM_MIN_TIME "-292273086-05-16T16:47:06Z"
#define PROM_MAX_TIME "292277025-08-18T07:12:54.999999999Z"

#define MSG_MAX	  1024 /* an error message; quoted inputs are shortened */
#define QUOTE_MAX 200  /* bytes of an input echoed in a message */

/* ---- parameters ---- */

int gw_api_params_add(struct gw_api_params *p, const char *name,
		      const char *value)
{
	return gw_api_params_add_len(p, name, value ? value : "",
				     value ? strlen(value) : 0);
}

int gw_api_params_add_len(struct gw_api_params *p, const char *name,
			  const char *value, size_t vl)
{
	size_t nl;
	char *n, *v;

	if (!value)
		value = "", vl = 0;
	nl = strlen(name);
	if (p->n >= GW_API_MAX_PARAMS ||
	    nl + vl + 2 > GW_API_MAX_PARAM_BYTES - p->bytes)
		return -ENOSPC;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		struct gw_api_param *nv;

		if (cap > GW_API_MAX_PARAMS)
			cap = GW_API_MAX_PARAMS;
		nv = realloc(p->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		p->v = nv;
		p->cap = cap;
	}
	n = malloc(nl + vl + 2);
	if (!n)
		return -ENOMEM;
	memcpy(n, name, nl + 1);
	v = n + nl + 1;
	memcpy(v, value, vl);
	v[vl] = '\0';
	p->v[p->n].name = n;
	p->v[p->n].value = v;
	p->v[p->n].vlen = vl;
	p->n++;
	p->bytes += nl + vl + 2;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes s[0..len) ('+' and %XX) into out; -EINVAL on a bad escape. */
static int unescape(const char *s, size_t len, struct gw_buf *out, char *err,
		    size_t errlen)
{
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int r;

		if (c == '%') {
			int hi = i + 1 < len ? hexval((unsigned char)s[i + 1])
					     : -1;
			int lo = i + 2 < len ? hexval((unsigned char)s[i + 2])
					     : -1;

			if (hi < 0 || lo < 0) {
				size_t n = len - i < 3 ? len - i : 3;

				snprintf(err, errlen,
					 "invalid URL escape \"%.*s\"", (int)n,
					 s + i);
				return -EINVAL;
			}
			c = (char)(hi * 16 + lo);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		r = gw_buf_add(out, &c, 1);
		if (r)
			return r;
	}
	return gw_buf_add(out, "", 0);
}

int gw_api_params_parse_form(struct gw_api_params *p, const char *body,
			     size_t len, char *err, size_t errlen)
{
	struct gw_buf name, value;
	size_t i = 0;
	int r = 0;

	gw_buf_init(&name, GW_API_MAX_PARAM_BYTES);
	gw_buf_init(&value, GW_API_MAX_PARAM_BYTES);
	while (i < len) {
		const char *pair = body + i, *amp, *eq;
		size_t plen;

		amp = memchr(pair, '&', len - i);
		plen = amp ? (size_t)(amp - pair) : len - i;
		i += plen + 1;
		if (plen == 0)
			continue;
		eq = memchr(pair, '=', plen);
		gw_buf_reset(&name);
		gw_buf_reset(&value);
		r = unescape(pair, eq ? (size_t)(eq - pair) : plen, &name, err,
			     errlen);
		if (!r && eq)
			r = unescape(eq + 1, plen - (size_t)(eq + 1 - pair),
				     &value, err, errlen);
		if (r == -ENOSPC)
			snprintf(err, errlen,
				 "form values larger than %u bytes",
				 GW_API_MAX_PARAM_BYTES);
		if (r)
			break;
		/* A NUL decoded from %00 is kept in the value's length. */
		r = gw_api_params_add_len(p, name.p,
					  eq && value.p ? value.p : "",
					  eq && value.p ? value.len : 0);
		if (r) {
			snprintf(err, errlen, "%s",
				 r == -ENOSPC ? "too many form values"
					      : "out of memory");
			break;
		}
	}
	gw_buf_release(&name);
	gw_buf_release(&value);
	return r;
}

const char *gw_api_params_get_len(const struct gw_api_params *p,
				  const char *name, size_t *len)
{
	for (size_t i = 0; p && i < p->n; i++)
		if (strcmp(p->v[i].name, name) == 0) {
			*len = p->v[i].vlen;
			return p->v[i].value;
		}
	*len = 0;
	return NULL;
}

const char *gw_api_params_get(const struct gw_api_params *p, const char *name)
{
	for (size_t i = 0; p && i < p->n; i++)
		if (strcmp(p->v[i].name, name) == 0)
			return p->v[i].value;
	return NULL;
}

void gw_api_params_release(struct gw_api_params *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].name); /* the value shares the allocation */
	free(p->v);
	memset(p, 0, sizeof(*p));
}

/* ---- times and durations ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

/* n decimal digits at *s into *v; advances *s. */
static bool digits(const char **s, int n, int *v)
{
	int x = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*s)[i]))
			return false;
		x = x * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*v = x;
	return true;
}

/* RFC 3339 as Go's time.RFC3339Nano parses it, truncated to the ms. */
static int parse_rfc3339(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec, frac_ms = 0, oh = 0, om = 0, sign = 0;
	int64_t t;

	if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &mo) ||
	    *s++ != '-' || !digits(&s, 2, &d) || *s++ != 'T' ||
	    !digits(&s, 2, &h) || *s++ != ':' || !digits(&s, 2, &mi) ||
	    *s++ != ':' || !digits(&s, 2, &sec))
		return -EINVAL;
	if (*s == '.') {
		int n = 0;

		s++;
		while (isdigit((unsigned char)*s)) {
			if (n < 3)
				frac_ms = frac_ms * 10 + (*s - '0');
			n++;
			s++;
		}
		if (n == 0)
			return -EINVAL;
		for (; n < 3; n++)
			frac_ms *= 10;
	}
	if (*s == 'Z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if (!digits(&s, 2, &oh) || *s++ != ':' || !digits(&s, 2, &om))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*s || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
	    h > 23 || mi > 59 || sec > 59 || oh > 23 || om > 59)
		return -EINVAL;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	t -= sign * (oh * 3600 + om * 60);
	*ms = t * 1000 + frac_ms;
	return 0;
}

/* strtod over the whole string, no leading space; -EINVAL otherwise. */
static int parse_float(const char *s, double *v)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	if (*end || end == s)
		return -EINVAL;
	return 0;
}

int gw_api_parse_time(const char *s, int64_t *ms)
{
	double f, whole, frac;
	int64_t t;

	if (!s)
		return -EINVAL;
	if (parse_float(s, &f) == 0) {
		if (!isfinite(f) || fabs(f) >= (double)(GW_API_MAX_TIME / 1000))
			return -EINVAL;
		frac = modf(f, &whole);
		*ms = (int64_t)whole * 1000 + (int64_t)llround(frac * 1000);
		return 0;
	}
	if (strcmp(s, PROM_MIN_TIME) == 0) {
		*ms = GW_API_MIN_TIME;
		return 0;
	}
	if (strcmp(s, PROM_MAX_TIME) == 0) {
		*ms = GW_API_MAX_TIME;
		return 0;
	}
	if (parse_rfc3339(s, &t))
		return -EINVAL;
	*ms = t;
	return 0;
}

int gw_api_parse_duration(const char *s, int64_t *ms)
{
	double f;
	int64_t v;

	if (!s)
		return -EINVAL;
	if (parse_float(s, &f) == 0) {
		if (isnan(f))
			return -EINVAL;
		/* Go's limit: the duration in ns must fit an int64. */
		if (f * 1e9 >= 9223372036854775807.0 ||
		    f * 1e9 <= -9223372036854775807.0)
			return -ERANGE;
		*ms = (int64_t)llround(f * 1000);
		return 0;
	}
	if (gw_promql_duration(s, &v))
		return -EINVAL;
	*ms = v;
	return 0;
}

/* ---- messages ---- */

/* s in double quotes with Go-style escapes, shortened past QUOTE_MAX. */
static void quote(char *dst, size_t n, const char *s)
{
	size_t o = 0, i;

#define PUT(c)                                                                 \
	do {                                                                   \
		if (o + 1 < n)                                                 \
			dst[o++] = (char)(c);                                  \
	} while (0)
	PUT('"');
	for (i = 0; s[i] && i < QUOTE_MAX; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			PUT('\\');
			PUT(c);
		} else if (c == '\n') {
			PUT('\\');
			PUT('n');
		} else if (c == '\t') {
			PUT('\\');
			PUT('t');
		} else if (c < 0x20 || c == 0x7f ||
			   (c >= 0x80 &&
			    !gw_utf8_len((const unsigned char *)s + i, SIZE_MAX,
					 NULL))) {
			/* as Go's %q: a byte that is not UTF-8 is \xNN */
			static const char hx[] = "0123456789abcdef";

			PUT('\\');
			PUT('x');
			PUT(hx[c >> 4]);
			PUT(hx[c & 15]);
		} else if (c >= 0x80) { /* a whole sequence, never cut */
			size_t l = gw_utf8_len((const unsigned char *)s + i,
					       SIZE_MAX, NULL);

			for (size_t k = 0; k < l; k++)
				PUT(s[i + k]);
			i += l - 1;
		} else {
			PUT(c);
		}
	}
	if (s[i]) {
		PUT('.');
		PUT('.');
		PUT('.');
	}
	PUT('"');
#undef PUT
	dst[o < n ? o : n - 1] = '\0';
}

static const struct {
	const char *type;
	unsigned int status;
} errtypes[] = {
	{ "bad_data", 400 }, { "not_found", 404 },   { "execution", 422 },
	{ "timeout", 503 },  { "unavailable", 503 }, { "internal", 500 },
	{ "canceled", 499 },
};

static unsigned int status_of(const char *errtype)
{
	for (size_t i = 0; i < sizeof(errtypes) / sizeof(errtypes[0]); i++)
		if (strcmp(errtypes[i].type, errtype) == 0)
			return errtypes[i].status;
	return 500;
}

/* ---- routing and replies ---- */

#define PREFIX "/api/v1/"

static bool label_name_ok(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

int gw_api_route(const char *path, enum gw_api_endpoint *ep)
{
	const char *rest;
	size_t n;

	if (strcmp(path, "/api/v1") == 0) {
		*ep = GW_API_UNKNOWN;
		return 0;
	}
	if (strncmp(path, PREFIX, strlen(PREFIX)) != 0)
		return -ENOENT;
	rest = path + strlen(PREFIX);
	if (strcmp(rest, "query") == 0)
		*ep = GW_API_QUERY;
	else if (strcmp(rest, "query_range") == 0)
		*ep = GW_API_QUERY_RANGE;
	else if (strcmp(rest, "series") == 0)
		*ep = GW_API_SERIES;
	else if (strcmp(rest, "labels") == 0)
		*ep = GW_API_LABELS;
	else if (strcmp(rest, "alerts") == 0)
		*ep = GW_API_ALERTS;
	else if (strcmp(rest, "rules") == 0)
		*ep = GW_API_RULES;
	else if (strcmp(rest, "admin/push") == 0)
		*ep = GW_API_ADMIN_PUSH;
	else if (strcmp(rest, "profile") == 0)
		*ep = GW_API_PROFILE;
	else if (strcmp(rest, "profile/diff") == 0)
		*ep = GW_API_PROFILE_DIFF;
	else if (strcmp(rest, "baseline") == 0)
		*ep = GW_API_BASELINE;
	else if (strncmp(rest, "label/", 6) == 0 &&
		 (n = strlen(rest)) > 6 + 7 &&
		 strcmp(rest + n - 7, "/values") == 0 &&
		 !memchr(rest + 6, '/', n - 6 - 7))
		*ep = GW_API_LABEL_VALUES;
	else
		*ep = GW_API_UNKNOWN;
	return 0;
}

const char *gw_api_endpoint_name(enum gw_api_endpoint ep)
{
	static const char *const names[GW_API_ENDPOINTS] = {
		"query",	"query_range", "series",       "labels",
		"label_values", "alerts",      "rules",	       "admin_push",
		"unknown",	"profile",     "profile_diff", "baseline",
	};

	return (unsigned int)ep < GW_API_ENDPOINTS ? names[ep] : "unknown";
}

void gw_api_reply_init(struct gw_api_reply *r)
{
	r->status = 500;
	r->content_type = NULL;
	gw_buf_init(&r->body, GW_API_MAX_REPLY);
}

void gw_api_reply_release(struct gw_api_reply *r)
{
	if (r)
		gw_buf_release(&r->body);
}

int gw_api_reply_error(struct gw_api_reply *r, unsigned int status,
		       const char *errtype, const char *msg)
{
	gw_buf_reset(&r->body);
	r->status = status;
	r->content_type = NULL;
	gw_buf_puts(&r->body, "{\"status\":\"error\",\"errorType\":");
	gw_json_str(&r->body, errtype);
	gw_buf_puts(&r->body, ",\"error\":");
	gw_json_str(&r->body, msg);
	gw_buf_puts(&r->body, "}");
	if (gw_buf_error(&r->body)) {
		gw_buf_reset(&r->body);
		r->status = 500;
		return -ENOMEM;
	}
	return 0;
}

/* An error envelope with the status its type implies; printf-style. */
__attribute__((format(printf, 3, 4))) static int
fail(struct gw_api_reply *r, const char *errtype, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gw_api_reply_error(r, status_of(errtype), errtype, msg);
}

static int invalid_param(struct gw_api_reply *r, const char *param,
			 const char *msg)
{
	return fail(r, "bad_data", "invalid parameter \"%s\": %s", param, msg);
}

static int bad_time(struct gw_api_reply *r, const char *param, const char *s)
{
	char q[QUOTE_MAX * 4 + 8], msg[MSG_MAX];

	quote(q, sizeof(q), s);
	snprintf(msg, sizeof(msg), "cannot parse %s to a valid timestamp", q);
	return invalid_param(r, param, msg);
}

/* The time parameter name, or dflt when it is absent. 1 = reply made. */
static int time_param(const struct gw_api_request *rq, struct gw_api_reply *r,
		      const char *name, int64_t dflt, int64_t *out)
{
	const char *s = gw_api_params_get(rq->params, name);
	int err;

	if (!s || !*s) {
		*out = dflt;
		return 0;
	}
	if (gw_api_parse_time(s, out) == 0)
		return 0;
	err = bad_time(r, name, s);
	return err ? err : 1;
}

/* A duration parameter; 1 = error reply made. */
static int duration_param(struct gw_api_reply *r, const char *name,
			  const char *s, int64_t *out)
{
	char q[QUOTE_MAX * 4 + 8], msg[MSG_MAX];
	int e = gw_api_parse_duration(s, out), err;

	if (e == 0)
		return 0;
	quote(q, sizeof(q), s);
	snprintf(msg, sizeof(msg), "cannot parse %s to a valid duration%s", q,
		 e == -ERANGE ? ". It overflows int64" : "");
	err = invalid_param(r, name, msg);
	return err ? err : 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Starts a success envelope: {"status":"success","data": */
static void begin_ok(struct gw_api_reply *r)
{
	gw_buf_reset(&r->body);
	r->status = 200;
	gw_buf_puts(&r->body, "{\"status\":\"success\",\"data\":");
}

/* Ends it; 0 or the first error met since begin_ok(). */
static int end_ok(struct gw_api_reply *r, const char *warning)
{
	if (warning) {
		gw_buf_puts(&r->body, ",\"warnings\":[");
		gw_json_str(&r->body, warning);
		gw_buf_puts(&r->body, "]");
	}
	gw_buf_puts(&r->body, "}");
	return gw_buf_error(&r->body);
}

/* A failure while building a success body. */
static int build_failed(struct gw_api_reply *r, int err)
{
	if (err == -ENOSPC)
		return fail(r, "execution",
			    "the result is larger than %u MiB; select fewer "
			    "series or use a larger step",
			    GW_API_MAX_REPLY >> 20);
	return fail(r, "internal", "cannot build the reply: %s",
		    strerror(-err));
}

/* ---- query and query_range ---- */

struct qctx {
	const struct gw_queryable *q;
	struct gw_promql_opts po;
	const struct gw_api_request *rq;
	struct gw_api_reply *r;
};

/* The tier parameter (ours, not Prometheus'): raw, 1m or 1h forces that
 * tier for the whole query; absent or empty, raw first. */
static int opts_tier(struct qctx *c)
{
	static const char *const names[GW_TIERS] = { "raw", "1m", "1h" };
	const char *s = gw_api_params_get(c->rq->params, "tier");
	int err;

	c->po.force_tier = false;
	if (!s || !*s)
		return 0;
	for (int t = 0; t < GW_TIERS; t++) {
		if (strcmp(s, names[t]) == 0) {
			c->po.force_tier = true;
			c->po.tier = (enum gw_tier)t;
			return 0;
		}
	}
	err = invalid_param(c->r, "tier", "must be raw, 1m or 1h");
	return err ? err : 1;
}

static int opts_timeout(const struct gw_api_opts *o, struct qctx *c)
{
	const char *to = gw_api_params_get(c->rq->params, "timeout");
	double cap = o && o->timeout > 0 ? o->timeout : DEFAULT_TIMEOUT;
	int64_t limit_ns, waited, left;
	uint64_t arrival = c->rq->arrival_ns ? c->rq->arrival_ns : mono_ns();
	int64_t ms;
	int err;

	if (!(cap <= 1e6)) /* also NaN */
		cap = 1e6;
	limit_ns = (int64_t)(cap * 1e9);
	if (to && *to) {
		err = duration_param(c->r, "timeout", to, &ms);
		if (err)
			return err;
		if (ms <= 0) {
			err = invalid_param(c->r, "timeout",
					    "timeout must be positive");
			return err ? err : 1;
		}
		if (ms < limit_ns / 1000000)
			limit_ns = ms * 1000000;
	}
	waited = (int64_t)(mono_ns() - arrival);
	left = limit_ns - waited;
	if (left <= 0) {
		err = fail(c->r, "timeout", "query timed out in query queue");
		return err ? err : 1;
	}
	c->po.timeout_ns = (uint64_t)left;
	c->po.lookback_ms =
		o && o->lookback_ms > 0 ? o->lookback_ms : DEFAULT_LOOKBACK_MS;
	c->po.max_samples =
		o && o->max_samples ? o->max_samples : DEFAULT_MAX_SAMPLES;
	c->po.cancel = o ? o->cancel : NULL;
	return opts_tier(c);
}

/* Parses the query parameter; 1 = error reply made. */
static int parse_query(struct qctx *c, struct gw_pq_node **e)
{
	size_t len;
	const char *s = gw_api_params_get_len(c->rq->params, "query", &len);
	struct gw_promql_error perr;
	int r, err;

	*e = NULL;
	if (!s || !len) {
		err = invalid_param(c->r, "query",
				    "1:1: parse error: no expression found in "
				    "input");
		return err ? err : 1;
	}
	memset(&perr, 0, sizeof(perr));
	r = gw_promql_parse_len(s, len, e, &perr);
	if (r == -ENOMEM)
		return -ENOMEM;
	if (r) {
		perr.msg[sizeof(perr.msg) - 1] = '\0';
		err = invalid_param(c->r, "query",
				    perr.msg[0] ? perr.msg : "parse error");
		return err ? err : 1;
	}
	return 0;
}

/* Turns an evaluation failure into Prometheus' error envelope. */
static int eval_failed(struct gw_api_reply *r, const struct gw_qresult *res,
		       int e)
{
	static const char *const types[] = {
		[GW_QERR_NONE] = "internal",
		[GW_QERR_BAD_DATA] = "bad_data",
		[GW_QERR_EXECUTION] = "execution",
		[GW_QERR_TIMEOUT] = "timeout",
		[GW_QERR_INTERNAL] = "internal",
	};
	char msg[sizeof(res->errmsg)];

	memcpy(msg, res->errmsg, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	/* Cancelled because the agent stops: not the query's fault, and a
	 * client may retry elsewhere or later, as for a full queue. */
	if (e == -ECANCELED)
		return fail(r, "unavailable", "%s",
			    msg[0] ? msg
				   : "query cancelled: the agent is stopping");
	if (res->err != GW_QERR_NONE &&
	    (unsigned int)res->err < sizeof(types) / sizeof(types[0]))
		return fail(r, types[res->err], "%s",
			    msg[0] ? msg : strerror(e < 0 ? -e : e));
	/* No class given: judge by the errno, as store/query.h defines. */
	if (e == -ETIMEDOUT)
		return fail(r, "timeout",
			    "query timed out in expression evaluation");
	if (e == -E2BIG)
		return fail(r, "execution",
			    "query processing would load too many samples "
			    "into memory in query execution");
	if (e == -EINVAL)
		return fail(r, "bad_data", "%s", msg[0] ? msg : "bad query");
	return fail(r, "internal", "%s", msg[0] ? msg : strerror(-e));
}

static int reply_result(struct gw_api_reply *r, const struct gw_qresult *res)
{
	int err;

	begin_ok(r);
	gw_buf_set_error(&r->body, gw_qresult_json(res, &r->body));
	err = end_ok(r, NULL);
	return err ? build_failed(r, err) : 0;
}

static int do_query(struct qctx *c, const struct gw_api_opts *o)
{
	struct gw_qresult res;
	struct gw_pq_node *e = NULL;
	int64_t t;
	int err, r;

	err = time_param(c->rq, c->r, "time", c->rq->now_ms, &t);
	if (err)
		return err < 0 ? err : 0;
	err = opts_timeout(o, c);
	if (err)
		return err < 0 ? err : 0;
	err = parse_query(c, &e);
	if (err)
		return err < 0 ? err : 0;
	memset(&res, 0, sizeof(res));
	r = gw_promql_eval_instant(e, c->q, t, &c->po, &res);
	err = r ? eval_failed(c->r, &res, r) : reply_result(c->r, &res);
	gw_qresult_release(&res);
	gw_promql_free(e);
	return err;
}

static int do_query_range(struct qctx *c, const struct gw_api_opts *o)
{
	const struct gw_api_params *p = c->rq->params;
	const char *s;
	struct gw_qresult res;
	struct gw_pq_node *e = NULL;
	int64_t start, end, step;
	int err, r;

	s = gw_api_params_get(p, "start");
	if (!s || gw_api_parse_time(s, &start))
		return bad_time(c->r, "start", s ? s : "");
	s = gw_api_params_get(p, "end");
	if (!s || gw_api_parse_time(s, &end))
		return bad_time(c->r, "end", s ? s : "");
	if (end < start)
		return invalid_param(c->r, "end",
				     "end timestamp must not be before start "
				     "time");
	s = gw_api_params_get(p, "step");
	err = duration_param(c->r, "step", s ? s : "", &step);
	if (err)
		return err < 0 ? err : 0;
	if (step <= 0)
		return invalid_param(c->r, "step",
				     "zero or negative query resolution step "
				     "widths are not accepted. Try a positive "
				     "integer");
	if ((end - start) / step > GW_API_MAX_POINTS)
		return fail(c->r, "bad_data",
			    "exceeded maximum resolution of 11,000 points per "
			    "timeseries. Try decreasing the query resolution "
			    "(?step=XX)");
	err = opts_timeout(o, c);
	if (err)
		return err < 0 ? err : 0;
	err = parse_query(c, &e);
	if (err)
		return err < 0 ? err : 0;
	memset(&res, 0, sizeof(res));
	r = gw_promql_eval_range(e, c->q, start, end, step, &c->po, &res);
	err = r ? eval_failed(c->r, &res, r) : reply_result(c->r, &res);
	gw_qresult_release(&res);
	gw_promql_free(e);
	return err;
}

/* ---- series, labels, label values ---- */

struct msets {
	struct gw_matcher **m;
	size_t *nm;
	size_t n;
};

static void msets_release(struct msets *s)
{
	for (size_t i = 0; i < s->n; i++)
		gw_matchers_free(s->m[i], s->nm[i]);
	free(s->m);
	free(s->nm);
	memset(s, 0, sizeof(*s));
}

/* Every match[] as a matcher list; 1 = error reply made. */
static int parse_match(const struct gw_api_request *rq, struct gw_api_reply *r,
		       struct msets *out)
{
	const struct gw_api_params *p = rq->params;
	size_t count = 0;
	int err;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < p->n; i++)
		count += strcmp(p->v[i].name, "match[]") == 0;
	if (!count)
		return 0;
	out->m = calloc(count, sizeof(*out->m));
	out->nm = calloc(count, sizeof(*out->nm));
	if (!out->m || !out->nm) {
		msets_release(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct gw_promql_error perr;
		bool nonempty = false;
		size_t k = out->n;

		if (strcmp(p->v[i].name, "match[]") != 0)
			continue;
		memset(&perr, 0, sizeof(perr));
		err = gw_promql_parse_selector(p->v[i].value, &out->m[k],
					       &out->nm[k], &perr);
		if (err == -ENOMEM) {
			msets_release(out);
			return err;
		}
		if (err) {
			perr.msg[sizeof(perr.msg) - 1] = '\0';
			msets_release(out);
			err = invalid_param(r, "match[]",
					    perr.msg[0] ? perr.msg
							: "parse error");
			return err ? err : 1;
		}
		out->n++;
		for (size_t j = 0; j < out->nm[k]; j++)
			nonempty |= !gw_matcher_matches_empty(&out->m[k][j]);
		if (!nonempty) {
			msets_release(out);
			err = invalid_param(r, "match[]",
					    "match[] must contain at least one "
					    "non-empty matcher");
			return err ? err : 1;
		}
	}
	return 0;
}

/* limit: absent or 0 = none; 1 = error reply made. */
static int limit_param(const struct gw_api_request *rq, struct gw_api_reply *r,
		       size_t *limit)
{
	const char *s = gw_api_params_get(rq->params, "limit");
	char q[QUOTE_MAX * 4 + 8], msg[MSG_MAX], *end;
	long long v;
	int err;

	*limit = SIZE_MAX;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || end == s || errno || isspace((unsigned char)*s)) {
		quote(q, sizeof(q), s);
		snprintf(msg, sizeof(msg), "strconv.Atoi: parsing %s: %s", q,
			 errno == ERANGE ? "value out of range"
					 : "invalid syntax");
		err = invalid_param(r, "limit", msg);
		return err ? err : 1;
	}
	if (v < 0) {
		err = invalid_param(r, "limit", "limit must be non-negative");
		return err ? err : 1;
	}
	if (v > 0)
		*limit = (size_t)v;
	return 0;
}

/* A store error from series()/label_values(). */
static int store_failed(struct gw_api_reply *r, int e)
{
	if (e == -ETIMEDOUT)
		return fail(r, "timeout", "query timed out in query execution");
	if (e == -ECANCELED)
		return fail(r, "unavailable",
			    "query cancelled: the agent is stopping");
	if (e == -E2BIG)
		return fail(r, "execution", "too many series");
	return fail(r, "internal", "cannot read the store: %s", strerror(-e));
}

#define TRUNCATED "results truncated due to limit"

static int do_series(const struct gw_queryable *q, const struct gw_api_opts *o,
		     const struct gw_api_request *rq, struct gw_api_reply *r,
		     enum gw_api_endpoint ep, const char *label)
{
	struct gw_label_set_list sets = { 0 };
	struct gw_string_list names = { 0 };
	/* The agent's query timeout and stop apply here too (matching a
	 * regular expression against many values takes time). */
	double cap = o && o->timeout > 0 && o->timeout <= 1e6 ? o->timeout
							      : DEFAULT_TIMEOUT;
	struct gw_query_limits lim = {
		.deadline_ns = (rq->arrival_ns ? rq->arrival_ns : mono_ns()) +
			       (uint64_t)(cap * 1e9),
		.cancel = o ? o->cancel : NULL,
	};
	struct msets ms;
	int64_t start, end;
	size_t limit, n;
	int err, e;

	err = limit_param(rq, r, &limit);
	if (err)
		return err < 0 ? err : 0;
	if (ep == GW_API_SERIES && !gw_api_params_get(rq->params, "match[]"))
		return fail(r, "bad_data", "no match[] parameter provided");
	err = time_param(rq, r, "start", GW_API_MIN_TIME, &start);
	if (!err)
		err = time_param(rq, r, "end", GW_API_MAX_TIME, &end);
	if (err)
		return err < 0 ? err : 0;
	err = parse_match(rq, r, &ms);
	if (err)
		return err < 0 ? err : 0;
	if (ep == GW_API_SERIES)
		e = q->series(q->ctx, (const struct gw_matcher *const *)ms.m,
			      ms.nm, ms.n, start, end, &lim, &sets);
	else
		e = q->label_values(q->ctx, label,
				    (const struct gw_matcher *const *)ms.m,
				    ms.nm, ms.n, start, end, &lim, &names);
	msets_release(&ms);
	if (e) {
		err = e == -ENOMEM ? -ENOMEM : store_failed(r, e);
		goto out;
	}
	begin_ok(r);
	gw_buf_puts(&r->body, "[");
	n = ep == GW_API_SERIES ? sets.n : names.n;
	for (size_t i = 0; i < n && i < limit && !gw_buf_error(&r->body); i++) {
		if (i)
			gw_buf_puts(&r->body, ",");
		if (ep == GW_API_SERIES)
			gw_labels_json(&sets.v[i], &r->body);
		else
			gw_json_str(&r->body, names.v[i]);
	}
	gw_buf_puts(&r->body, "]");
	err = end_ok(r, n > limit ? TRUNCATED : NULL);
	if (err)
		err = build_failed(r, err);
out:
	gw_label_set_list_release(&sets);
	gw_string_list_release(&names);
	return err;
}

/* ---- alerts and rules ---- */

/* /api/v1/alerts and /api/v1/rules: the evaluator's state, no query. */
static int do_alerts(struct gw_alerts *al, const struct gw_api_request *rq,
		     struct gw_api_reply *r, enum gw_api_endpoint ep)
{
	const char *inc = gw_api_params_get(rq->params, "include_resolved");
	bool resolved =
		inc && (strcmp(inc, "1") == 0 || strcmp(inc, "true") == 0);
	int err;

	begin_ok(r);
	gw_alerts_json(al, ep == GW_API_RULES, resolved, &r->body);
	err = end_ok(r, NULL);
	if (err)
		err = build_failed(r, err);
	return err;
}

/* ---- admin ---- */

/* POST /api/v1/admin/push: match[], start, end (default now). */
static int do_push(const struct gw_api_opts *o, const struct gw_api_request *rq,
		   struct gw_api_reply *r)
{
	struct msets ms;
	int64_t start, end;
	int err, n;

	if (!o || !o->push)
		return fail(r, "unavailable",
			    "no remote_write endpoint to push to (admin APIs "
			    "disabled)");
	if (!rq->post)
		return gw_api_reply_error(r, 405, "bad_data",
					  "method not allowed: use POST");
	if (!gw_api_params_get(rq->params, "match[]"))
		return fail(r, "bad_data", "no match[] parameter provided");
	if (!gw_api_params_get(rq->params, "start"))
		return fail(r, "bad_data", "no start parameter provided");
	err = time_param(rq, r, "start", 0, &start);
	if (!err)
		err = time_param(rq, r, "end", rq->now_ms, &end);
	if (err)
		return err < 0 ? err : 0;
	if (end < start)
		return invalid_param(r, "end",
				     "end timestamp must not be before start "
				     "time");
	err = parse_match(rq, r, &ms);
	if (err)
		return err < 0 ? err : 0;
	n = o->push(o->push_ctx, (const struct gw_matcher *const *)ms.m, ms.nm,
		    ms.n, start, end);
	msets_release(&ms);
	if (n == -ENODEV)
		return fail(r, "unavailable", "no remote_write endpoint");
	if (n == -ENOSPC)
		return fail(r, "unavailable",
			    "too many pushes open; try again later");
	if (n < 0)
		return fail(r, "internal", "push failed: %s", strerror(-n));
	begin_ok(r);
	gw_buf_putf(&r->body, "{\"endpoints\":%d}", n);
	err = end_ok(r, NULL);
	if (err)
		err = build_failed(r, err);
	return err;
}

/* ---- entry ---- */

int gw_api_handle(const struct gw_queryable *q, const struct gw_api_opts *o,
		  const struct gw_api_request *rq, struct gw_api_reply *out)
{
	enum gw_api_endpoint ep;
	char name[256];
	struct qctx c;
	int err;

	if (gw_api_route(rq->path, &ep) || ep == GW_API_UNKNOWN) {
		char qp[QUOTE_MAX * 4 + 8];

		quote(qp, sizeof(qp), rq->path);
		return fail(out, "not_found", "unknown API endpoint %s", qp);
	}
	if (ep == GW_API_ALERTS || ep == GW_API_RULES)
		return do_alerts(o ? o->alerts : NULL, rq, out, ep);
	if (ep == GW_API_PROFILE || ep == GW_API_PROFILE_DIFF) {
		err = gw_api_profile(o, rq, out, ep == GW_API_PROFILE_DIFF);
		return err == -ENOMEM ? fail(out, "internal", "out of memory")
				      : err;
	}
	if (ep == GW_API_ADMIN_PUSH) {
		err = do_push(o, rq, out);
		return err == -ENOMEM ? fail(out, "internal", "out of memory")
				      : err;
	}
	if (!q)
		return fail(out, "unavailable", "no local store (--data-dir)");
	switch (ep) {
	case GW_API_QUERY:
	case GW_API_QUERY_RANGE:
		memset(&c, 0, sizeof(c));
		c.q = q;
		c.rq = rq;
		c.r = out;
		err = ep == GW_API_QUERY ? do_query(&c, o)
					 : do_query_range(&c, o);
		break;
	case GW_API_BASELINE:
		err = gw_api_baseline(q, o, rq, out);
		break;
	case GW_API_SERIES:
	case GW_API_LABELS:
		err = do_series(q, o, rq, out, ep, NULL);
		break;
	case GW_API_LABEL_VALUES: {
		const char *s = rq->path + strlen(PREFIX "label/");
		size_t n = strlen(s) - strlen("/values");

		if (!label_name_ok(s, n) || n >= sizeof(name)) {
			char qn[QUOTE_MAX * 4 + 8];

			snprintf(name, sizeof(name), "%.*s",
				 (int)(n < sizeof(name) ? n : sizeof(name) - 1),
				 s);
			quote(qn, sizeof(qn), name);
			return fail(out, "bad_data", "invalid label name: %s",
				    qn);
		}
		memcpy(name, s, n);
		name[n] = '\0';
		err = do_series(q, o, rq, out, ep, name);
		break;
	}
	default:
		err = fail(out, "not_found", "unknown API endpoint");
		break;
	}
	if (err == -ENOMEM)
		err = fail(out, "internal", "out of memory");
	return err;
}
