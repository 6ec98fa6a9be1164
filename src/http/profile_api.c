/* SPDX-License-Identifier: MIT */
/*
 * profile_api.c - /api/v1/profile and /api/v1/profile/diff: the stored CPU
 * profiles (store/profstore.h) of a window, merged, as JSON, folded stacks
 * or gzip'd pprof.  See api.h and docs/internals/profiling.md.
 *
 *   match[]      PromQL selectors over the profiles' labels (pid, comm,
 *                container_id, pod_uid, job, version; the name is
 *                process_cpu); absent: every process
 *   start, end   the window (default: the hour before now)
 *   base_start, base_end, base_match[]   /diff only: the base window
 *                (required) and its selectors (default: match[])
 *   format       json (default), folded, pprof
 *   type         cpu (default): CPU samples; launches: sampled CUDA
 *                kernel launches by call path (the kernel as the leaf
 *                where the CUPTI layer named it); gpu_time: the same
 *                paths weighted by their kernels' GPU time (ns)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/api.h"
#include "query/promql.h"
#include "store/profile.h"
#include "store/profstore.h"

#define DEFAULT_WINDOW_MS (3600LL * 1000)
#define MAX_WINDOW_MS	  (31LL * 86400 * 1000)
#define MAX_STACKS	  200000

struct sel {
	struct gw_matcher **m;
	size_t *nm;
	size_t n;
};

static void sel_release(struct sel *s)
{
	for (size_t i = 0; i < s->n; i++)
		gw_matchers_free(s->m[i], s->nm[i]);
	free(s->m);
	free(s->nm);
	memset(s, 0, sizeof(*s));
}

static int bad(struct gw_api_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct gw_api_reply *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err = gw_api_reply_error(r, 400, "bad_data", msg);
	return err ? err : 1;
}

/* Every `name` parameter as a selector; 1 = error reply made. */
static int parse_sel(const struct gw_api_request *rq, struct gw_api_reply *r,
		     const char *name, struct sel *out)
{
	const struct gw_api_params *p = rq->params;
	size_t count = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < p->n; i++)
		count += strcmp(p->v[i].name, name) == 0;
	if (!count)
		return 0;
	out->m = calloc(count, sizeof(*out->m));
	out->nm = calloc(count, sizeof(*out->nm));
	if (!out->m || !out->nm) {
		sel_release(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct gw_promql_error perr;
		size_t k = out->n;
		int err;

		if (strcmp(p->v[i].name, name) != 0)
			continue;
		memset(&perr, 0, sizeof(perr));
		err = gw_promql_parse_selector(p->v[i].value, &out->m[k],
					       &out->nm[k], &perr);
		if (err == -ENOMEM) {
			sel_release(out);
			return err;
		}
		if (err) {
			perr.msg[sizeof(perr.msg) - 1] = '\0';
			sel_release(out);
			return bad(r, "invalid parameter \"%s\": %s", name,
				   perr.msg[0] ? perr.msg : "parse error");
		}
		out->n++;
	}
	return 0;
}

/* A time parameter, def when absent; 1 = error reply made. */
static int time_arg(const struct gw_api_request *rq, struct gw_api_reply *r,
		    const char *name, int64_t def, int64_t *ms)
{
	const char *v = gw_api_params_get(rq->params, name);

	*ms = def;
	if (!v || !*v)
		return 0;
	if (gw_api_parse_time(v, ms))
		return bad(r,
			   "invalid parameter \"%s\": cannot parse \"%.100s\" "
			   "to a valid timestamp",
			   name, v);
	return 0;
}

/* start and end of one window; 1 = error reply made. */
static int window(const struct gw_api_opts *o, const struct gw_api_request *rq,
		  struct gw_api_reply *r, const char *sname, const char *ename,
		  bool required, int64_t *start, int64_t *end)
{
	int64_t max = o && o->profile_max_window_ms ? o->profile_max_window_ms
						    : MAX_WINDOW_MS;
	int err;

	if (required && (!gw_api_params_get(rq->params, sname) ||
			 !gw_api_params_get(rq->params, ename)))
		return bad(r, "%s and %s are required", sname, ename);
	err = time_arg(rq, r, ename, rq->now_ms, end);
	if (err)
		return err;
	err = time_arg(rq, r, sname, *end - DEFAULT_WINDOW_MS, start);
	if (err)
		return err;
	if (*end < *start)
		return bad(r,
			   "invalid parameter \"%s\": end timestamp must not "
			   "be before start time",
			   ename);
	if (*end - *start > max)
		return bad(r,
			   "the window %s..%s spans %.1f days; at most %.0f "
			   "days of profiles can be merged at once",
			   sname, ename, (double)(*end - *start) / 86400e3,
			   (double)max / 86400e3);
	return 0;
}

/* Reads one window into column col; 1 = error reply made. */
static int load(const struct gw_api_opts *o, struct gw_api_reply *r,
		enum gw_profile_type type, const struct sel *s, int64_t start,
		int64_t end, struct gw_prof *p, int col)
{
	size_t rows = 0;
	int err = gw_profstore_query(o->profiles, type,
				     (const struct gw_matcher *const *)s->m,
				     s->nm, s->n, start, end, p, col, &rows);

	if (err == -E2BIG) {
		err = gw_api_reply_error(r, 422, "execution",
					 "too many profiles in the window; "
					 "narrow the selector or the window");
		return err ? err : 1;
	}
	if (err == -ENOMEM)
		return err;
	if (err) {
		err = gw_api_reply_error(r, 500, "internal",
					 "cannot read the stored profiles");
		return err ? err : 1;
	}
	return 0;
}

int gw_api_profile(const struct gw_api_opts *o, const struct gw_api_request *rq,
		   struct gw_api_reply *out, bool diff)
{
	const char *fmt = gw_api_params_get(rq->params, "format");
	const char *ty = gw_api_params_get(rq->params, "type");
	enum gw_profile_type type = GW_PROFILE_CPU;
	struct sel target = { 0 }, base = { 0 };
	int64_t start, end, bstart = 0, bend = 0;
	struct gw_prof *p = NULL;
	int err;

	if (!o || !o->profiles) {
		err = gw_api_reply_error(
			out, 503, "unavailable",
			o && o->profile_off ? "profiling is off (--profile off)"
					    : "no profile store (--no-store or "
					      "--data-dir)");
		return err;
	}
	if (!fmt || !*fmt)
		fmt = "json";
	if (strcmp(fmt, "json") != 0 && strcmp(fmt, "folded") != 0 &&
	    strcmp(fmt, "pprof") != 0) {
		err = bad(out,
			  "invalid parameter \"format\": \"%.64s\" is not "
			  "json, folded or pprof",
			  fmt);
		return err > 0 ? 0 : err;
	}
	if (ty && *ty && strcmp(ty, "cpu") != 0) {
		if (strcmp(ty, "launches") == 0) {
			type = GW_PROFILE_LAUNCHES;
		} else if (strcmp(ty, "gpu_time") == 0) {
			type = GW_PROFILE_GPU_TIME;
		} else {
			err = bad(out,
				  "invalid parameter \"type\": \"%.64s\" is "
				  "not cpu, launches or gpu_time",
				  ty);
			return err > 0 ? 0 : err;
		}
	}
	err = window(o, rq, out, "start", "end", false, &start, &end);
	if (!err && diff)
		err = window(o, rq, out, "base_start", "base_end", true,
			     &bstart, &bend);
	if (!err)
		err = parse_sel(rq, out, "match[]", &target);
	if (!err && diff)
		err = parse_sel(rq, out, "base_match[]", &base);
	if (err)
		goto out;
	p = gw_prof_new(MAX_STACKS);
	if (!p) {
		err = -ENOMEM;
		goto out;
	}
	if (diff)
		gw_prof_set_diff(p);
	if (type == GW_PROFILE_GPU_TIME)
		gw_prof_set_value_type(p, "gpu_time", "nanoseconds");
	err = load(o, out, type, &target, start, end, p, 0);
	if (!err && diff)
		err = load(o, out, type, base.n ? &base : &target, bstart, bend,
			   p, 1);
	if (err)
		goto out;
	gw_buf_reset(&out->body);
	out->status = 200;
	if (strcmp(fmt, "folded") == 0) {
		out->content_type = "text/plain; charset=utf-8";
		gw_prof_folded(p, &out->body);
	} else if (strcmp(fmt, "pprof") == 0) {
		out->content_type = "application/octet-stream";
		err = gw_prof_pprof(p, &out->body);
	} else {
		out->content_type = NULL;
		gw_buf_puts(&out->body, "{\"status\":\"success\",\"data\":");
		gw_prof_json(p, &out->body);
		gw_buf_puts(&out->body, "}");
	}
	if (!err)
		err = gw_buf_error(&out->body);
	if (err == -ENOSPC)
		err = gw_api_reply_error(out, 422, "execution",
					 "the merged profile is too large; "
					 "narrow the selector or the window");
out:
	gw_prof_free(p);
	sel_release(&target);
	sel_release(&base);
	return err > 0 ? 0 : err;
}
