/* SPDX-License-Identifier: MIT */
/*
 * top_fetch.c - `gpuwatch top`'s snapshot of a node, from the agent's
 * Prometheus API (/api/v1/query): the queries, the one function that
 * knows libcurl (fetch), and turning the answers into GPUs, processes,
 * kernels, API errors and alerts.
 *
 * Each refresh asks the GPU query first and evaluates the others at the
 * time the agent stamped on its answer, so one screen is one moment of the
 * agent's clock.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "cli/jv.h"
#include "cli/client.h"
#include "cli/top.h"
#include "common/buf.h"

#define MAX_ANSWER (16u << 20)
#define MAX_GPUS   256
#define MAX_PROCS  4096

/* The GPUs and their processes in one answer: only the clocks and the
 * clock event reasons shown (the answer's size is most of its cost). */
static const char Q_GPU[] =
	"{__name__=~\"gpuwatch_gpu_(info|up|utilization_ratio|memory_"
	"utilization_ratio|memory_used_bytes|memory_total_bytes|temperature_"
	"celsius|memory_temperature_celsius|power_watts|power_limit_watts|"
	"process_memory_used_bytes|process_sm_utilization_ratio|process_"
	"memory_utilization_ratio)\"} or gpuwatch_gpu_clock_hertz{clock=~\"sm|"
	"memory\"} or gpuwatch_gpu_clock_event_active > 0 or "
	"gpuwatch_agent_interval_seconds{set=\"fast\"}";
/* Process series live on for the lookback (5 min) after the process
 * ended: their age tells. */
static const char Q_PROC_AGE[] =
	"time() - timestamp(gpuwatch_gpu_process_memory_used_bytes)";
static const char Q_KERNEL_TIME[] =
	"topk(10, sum by (pid, comm, kernel) "
	"(rate(gpuwatch_cuda_kernel_duration_seconds_sum[1m])))";
static const char Q_KERNEL_CALLS[] =
	"sum by (pid, comm, kernel) "
	"(rate(gpuwatch_cuda_kernel_launches_total[1m]))";
static const char Q_ERRORS[] = "topk(10, sum by (pid, comm, api, code) "
			       "(gpuwatch_cuda_api_errors_total))";
static const char Q_ERRORS_RATE[] =
	"sum by (pid, comm, api, code) "
	"(rate(gpuwatch_cuda_api_errors_total[1m]))";
static const char Q_ALERTS[] = "ALERTS_FOR_STATE and ignoring(alertstate) "
			       "ALERTS{alertstate=\"firing\"}";

void gw_top_snapshot_release(struct gw_top_snapshot *s)
{
	free(s->gpus);
	free(s->procs);
	memset(s, 0, sizeof(*s));
	s->at = NAN;
}

/* ---- fetching ---- */

/*
 * POSTs QUERY (at TIME when not NULL) to /api/v1/query and parses the
 * answer into ROOT.  0 on a success answer; -EHOSTUNREACH when the agent
 * could not be reached or did not speak the API (the caller shows it as
 * unreachable); -EINVAL when the agent refused the query.  WHY says what
 * went wrong.
 */
static int fetch(struct gw_top *t, const char *query, const char *at,
		 struct gw_jv *root, char *why, size_t whyn)
{
	char url[1100], cerr[CURL_ERROR_SIZE] = "";
	struct gw_buf form, body;
	char *esc;
	long status = 0;
	CURLcode rc;
	int err;

	memset(root, 0, sizeof(*root));
	gw_buf_init(&form, 1u << 16);
	gw_buf_init(&body, MAX_ANSWER);
	esc = curl_easy_escape(t->curl, query, 0);
	if (!esc) {
		snprintf(why, whyn, "out of memory");
		err = -EHOSTUNREACH;
		goto out;
	}
	gw_buf_putf(&form, "query=%s", esc);
	curl_free(esc);
	if (at)
		gw_buf_putf(&form, "&time=%s", at);
	snprintf(url, sizeof(url), "%s/api/v1/query", t->base);
	curl_easy_setopt(t->curl, CURLOPT_URL, url);
	curl_easy_setopt(t->curl, CURLOPT_POSTFIELDS, form.p);
	curl_easy_setopt(t->curl, CURLOPT_POSTFIELDSIZE, (long)form.len);
	curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, gw_client_body);
	curl_easy_setopt(t->curl, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, cerr);
	rc = curl_easy_perform(t->curl);
	if (rc != CURLE_OK) {
		snprintf(why, whyn, "%s",
			 rc == CURLE_WRITE_ERROR ? "answer too large"
			 : cerr[0]		 ? cerr
						 : curl_easy_strerror(rc));
		err = -EHOSTUNREACH;
		goto out;
	}
	curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	if (!body.len || gw_jv_parse(body.p, body.len, root)) {
		const char *hint = gw_client_hint(status);

		snprintf(why, whyn, "HTTP %ld, %s", status,
			 hint ? hint : "not the query API");
		err = -EHOSTUNREACH;
		goto out;
	}
	if (!gw_jv_str(gw_jv_get(root, "status")) ||
	    strcmp(gw_jv_str(gw_jv_get(root, "status")), "success")) {
		const char *em = gw_jv_str(gw_jv_get(root, "error"));

		snprintf(why, whyn, "%s", em ? em : "the agent gave no reason");
		gw_jv_release(root);
		/* 503 (busy) and 5xx are the agent's trouble, not ours */
		err = status >= 500 ? -EHOSTUNREACH : -EINVAL;
		goto out;
	}
	err = 0;
out:
	gw_buf_release(&form);
	gw_buf_release(&body);
	return err;
}

/* The result array of a vector answer, or NULL. */
static const struct gw_jv *vector_of(const struct gw_jv *root)
{
	const struct gw_jv *data = gw_jv_get(root, "data");
	const char *type = gw_jv_str(gw_jv_get(data, "resultType"));
	const struct gw_jv *r = gw_jv_get(data, "result");

	if (!type || strcmp(type, "vector") || !r || r->t != GW_JV_ARR)
		return NULL;
	return r;
}

static const char *label(const struct gw_jv *sample, const char *name)
{
	return gw_jv_str(gw_jv_get(gw_jv_get(sample, "metric"), name));
}

static double sample_value(const struct gw_jv *sample, double *ts)
{
	const struct gw_jv *v = gw_jv_get(sample, "value");
	const char *s;
	char *end;
	double d;

	if (!v || v->t != GW_JV_ARR || v->n != 2)
		return NAN;
	if (ts && v->v[0].t == GW_JV_NUM)
		*ts = strtod(v->v[0].s, NULL);
	s = gw_jv_str(&v->v[1]);
	if (!s)
		return NAN;
	d = strtod(s, &end);
	return end == s ? NAN : d;
}

/* src into dst (n > 0 bytes), cut to fit. */
static void copy(char *dst, size_t n, const char *src)
{
	size_t len = src ? strnlen(src, n - 1) : 0;

	if (len)
		memcpy(dst, src, len);
	dst[len] = '\0';
}

static struct gw_top_gpu *gpu_slot(struct gw_top_snapshot *s, const char *id)
{
	struct gw_top_gpu *g;

	for (size_t i = 0; i < s->ngpus; i++)
		if (strcmp(s->gpus[i].id, id) == 0)
			return &s->gpus[i];
	if (s->ngpus == MAX_GPUS)
		return NULL;
	g = &s->gpus[s->ngpus++];
	memset(g, 0, sizeof(*g));
	copy(g->id, sizeof(g->id), id);
	g->up = g->util = g->mem_util = g->mem_used = g->mem_total = NAN;
	g->temp = g->hbm = g->power = g->limit = NAN;
	g->sm_clock = g->mem_clock = NAN;
	return g;
}

static void add_reason(struct gw_top_gpu *g, const char *reason)
{
	size_t n = strlen(g->throttle);

	if (!reason)
		return;
	snprintf(g->throttle + n, sizeof(g->throttle) - n, "%s%s", n ? "," : "",
		 reason);
}

/* GPUs in order of their index (numerically when they are numbers). */
int gw_top_id_cmp(const char *a, const char *b)
{
	char *ea, *eb;
	long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);

	if (*a && *b && !*ea && !*eb && x != y)
		return x < y ? -1 : 1;
	return strcmp(a, b);
}

static int gpu_cmp(const void *a, const void *b)
{
	return gw_top_id_cmp(((const struct gw_top_gpu *)a)->id,
			     ((const struct gw_top_gpu *)b)->id);
}

static void take_gpus(struct gw_top_snapshot *s, const struct gw_jv *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct gw_jv *x = &r->v[i];
		const char *name = label(x, "__name__"), *id = label(x, "gpu");
		const char *clock = label(x, "clock");
		double v = sample_value(x, &s->at);
		struct gw_top_gpu *g;

		if (name &&
		    strcmp(name, "gpuwatch_agent_interval_seconds") == 0)
			s->fast_interval = v;
		if (!name || !id || label(x, "pid") ||
		    strncmp(name, "gpuwatch_gpu_", strlen("gpuwatch_gpu_")) ||
		    !(g = gpu_slot(s, id)))
			continue;
		name += strlen("gpuwatch_gpu_");
		if (strcmp(name, "info") == 0)
			copy(g->name, sizeof(g->name), label(x, "name"));
		else if (strcmp(name, "up") == 0)
			g->up = v;
		else if (strcmp(name, "utilization_ratio") == 0)
			g->util = v;
		else if (strcmp(name, "memory_utilization_ratio") == 0)
			g->mem_util = v;
		else if (strcmp(name, "memory_used_bytes") == 0)
			g->mem_used = v;
		else if (strcmp(name, "memory_total_bytes") == 0)
			g->mem_total = v;
		else if (strcmp(name, "temperature_celsius") == 0)
			g->temp = v;
		else if (strcmp(name, "memory_temperature_celsius") == 0)
			g->hbm = v;
		else if (strcmp(name, "power_watts") == 0)
			g->power = v;
		else if (strcmp(name, "power_limit_watts") == 0)
			g->limit = v;
		else if (strcmp(name, "clock_hertz") == 0 && clock &&
			 strcmp(clock, "sm") == 0)
			g->sm_clock = v;
		else if (strcmp(name, "clock_hertz") == 0 && clock &&
			 strcmp(clock, "memory") == 0)
			g->mem_clock = v;
		else if (strcmp(name, "clock_event_active") == 0 && v > 0)
			add_reason(g, label(x, "reason"));
	}
	if (s->ngpus > 1)
		qsort(s->gpus, s->ngpus, sizeof(*s->gpus), gpu_cmp);
}

/* The owner of a process: its job, else its pod, else its container. */
static void owner_of(const struct gw_jv *x, char *out, size_t n)
{
	const char *job = label(x, "job"), *pod = label(x, "pod_uid");
	const char *ctr = label(x, "container_id");

	if (job && *job)
		snprintf(out, n, "job=%s", job);
	else if (pod && *pod)
		snprintf(out, n, "pod=%.8s", pod);
	else if (ctr && *ctr)
		snprintf(out, n, "ctr=%.12s", ctr);
	else
		out[0] = '\0';
}

static void take_procs(struct gw_top_snapshot *s, const struct gw_jv *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct gw_jv *x = &r->v[i];
		const char *name = label(x, "__name__"), *pid = label(x, "pid");
		const char *gpu = label(x, "gpu");
		double v = sample_value(x, NULL);
		struct gw_top_proc *p = NULL;

		if (!name || !pid || !gpu ||
		    strncmp(name, "gpuwatch_gpu_process_",
			    strlen("gpuwatch_gpu_process_")))
			continue;
		for (size_t k = 0; k < s->nprocs && !p; k++)
			if (strcmp(s->procs[k].pid, pid) == 0 &&
			    strcmp(s->procs[k].gpu, gpu) == 0)
				p = &s->procs[k];
		if (!p) {
			if (s->nprocs == MAX_PROCS)
				continue;
			p = &s->procs[s->nprocs++];
			memset(p, 0, sizeof(*p));
			copy(p->pid, sizeof(p->pid), pid);
			copy(p->gpu, sizeof(p->gpu), gpu);
			copy(p->comm, sizeof(p->comm), label(x, "comm"));
			owner_of(x, p->owner, sizeof(p->owner));
			p->sm = p->mem_util = p->mem = p->age = NAN;
		}
		name += strlen("gpuwatch_gpu_process_");
		if (strcmp(name, "memory_used_bytes") == 0)
			p->mem = v;
		else if (strcmp(name, "sm_utilization_ratio") == 0)
			p->sm = v;
		else if (strcmp(name, "memory_utilization_ratio") == 0)
			p->mem_util = v;
	}
}

/* Drops the processes whose memory series is older than three periods
 * of the fast set (at least 5 s): they have ended. */
static void drop_ended(struct gw_top_snapshot *s, const struct gw_jv *r)
{
	double limit = isfinite(s->fast_interval) && s->fast_interval > 0
			       ? 3 * s->fast_interval
			       : 3;
	size_t n = 0;

	if (limit < 5)
		limit = 5;
	for (size_t i = 0; i < r->n; i++) {
		const char *pid = label(&r->v[i], "pid");
		const char *gpu = label(&r->v[i], "gpu");

		for (size_t k = 0; pid && gpu && k < s->nprocs; k++)
			if (!strcmp(s->procs[k].pid, pid) &&
			    !strcmp(s->procs[k].gpu, gpu))
				s->procs[k].age = sample_value(&r->v[i], NULL);
	}
	for (size_t k = 0; k < s->nprocs; k++)
		if (!(s->procs[k].age > limit))
			s->procs[n++] = s->procs[k];
	s->nprocs = n;
}

static int row_cmp(const void *a, const void *b)
{
	double x = ((const struct gw_top_row *)a)->v,
	       y = ((const struct gw_top_row *)b)->v;

	return x > y ? -1 : x < y ? 1 : 0;
}

/* Rows of a top-N answer: pid, comm, WHAT (labels joined), value. */
static void take_rows(struct gw_top_section *sec, const struct gw_jv *r,
		      const char *const *what, size_t nwhat)
{
	for (size_t i = 0; i < r->n && sec->n < MAX_ROWS; i++) {
		const struct gw_jv *x = &r->v[i];
		struct gw_top_row *w = &sec->rows[sec->n++];
		size_t len = 0;

		memset(w, 0, sizeof(*w));
		copy(w->pid, sizeof(w->pid), label(x, "pid"));
		copy(w->comm, sizeof(w->comm), label(x, "comm"));
		for (size_t k = 0; k < nwhat; k++) {
			const char *v = label(x, what[k]);

			if (v && len < sizeof(w->what))
				len += (size_t)snprintf(
					w->what + len, sizeof(w->what) - len,
					"%s%s", len ? " " : "", v);
		}
		w->v = sample_value(x, NULL);
		w->v2 = NAN;
	}
	if (sec->n > 1)
		qsort(sec->rows, sec->n, sizeof(*sec->rows), row_cmp);
}

/* Puts the values of R into v2 of the rows with the same pid and WHAT. */
static void join_second(struct gw_top_section *sec, const struct gw_jv *r,
			const char *const *what, size_t nwhat)
{
	struct gw_top_section tmp = { 0 };

	for (size_t i = 0; i < r->n; i += MAX_ROWS) {
		struct gw_jv part = { .t = GW_JV_ARR,
				      .v = r->v + i,
				      .n = r->n - i < MAX_ROWS ? r->n - i
							       : MAX_ROWS };

		tmp.n = 0;
		take_rows(&tmp, &part, what, nwhat);
		for (size_t k = 0; k < tmp.n; k++)
			for (size_t j = 0; j < sec->n; j++)
				if (!strcmp(sec->rows[j].pid,
					    tmp.rows[k].pid) &&
				    !strcmp(sec->rows[j].what,
					    tmp.rows[k].what))
					sec->rows[j].v2 = tmp.rows[k].v;
	}
}

/* API errors: the highest rate first, then the most errors. */
static int rate_cmp(const void *a, const void *b)
{
	const struct gw_top_row *x = a, *y = b;
	double rx = isnan(x->v2) ? -1 : x->v2, ry = isnan(y->v2) ? -1 : y->v2;

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return row_cmp(a, b);
}

/* Firing alerts: name, the labels that say where, and since when. */
static void take_alerts(struct gw_top_section *sec, const struct gw_jv *r)
{
	for (size_t i = 0; i < r->n && sec->n < MAX_ROWS; i++) {
		const struct gw_jv *x = &r->v[i];
		const struct gw_jv *m = gw_jv_get(x, "metric");
		struct gw_top_row *w = &sec->rows[sec->n++];
		size_t len = 0;

		memset(w, 0, sizeof(*w));
		copy(w->comm, sizeof(w->comm), label(x, "alertname"));
		for (size_t k = 0; m && m->t == GW_JV_OBJ && k < m->n; k++) {
			const char *key = m->k[k], *v = gw_jv_str(&m->v[k]);

			if (!v || !strcmp(key, "__name__") ||
			    !strcmp(key, "alertname") ||
			    !strcmp(key, "alertstate") || !strcmp(key, "uuid"))
				continue;
			if (!strcmp(key, "severity")) {
				copy(w->extra, sizeof(w->extra), v);
				continue;
			}
			if (len < sizeof(w->what))
				len += (size_t)snprintf(
					w->what + len, sizeof(w->what) - len,
					"%s%s=%s", len ? " " : "", key, v);
		}
		w->v = sample_value(x, NULL); /* activeAt */
		w->v2 = NAN;
	}
}

/* A query of a section; its refusal is kept in the section. */
static int section_query(struct gw_top *t, const char *q, const char *at,
			 struct gw_jv *root, struct gw_top_section *sec,
			 char *why, size_t whyn)
{
	int err = fetch(t, q, at, root, why, whyn);

	if (err == -EINVAL) {
		copy(sec->error, sizeof(sec->error), why);
		return 0;
	}
	return err;
}

/*
 * One refresh into a new snapshot; on success it replaces the shown one.
 * 0, -EHOSTUNREACH (t->down_why says why) or -EINVAL (the GPU query was
 * refused; also in down_why).
 */
int gw_top_update(struct gw_top *t)
{
	static const char *const kernel_what[] = { "kernel" };
	static const char *const error_what[] = { "api", "code" };
	struct gw_top_snapshot s = { 0 };
	struct gw_jv root;
	const struct gw_jv *r;
	char why[256], at_buf[40];
	const char *at = t->fixed_time;
	int err;

	s.at = s.fast_interval = NAN;
	s.gpus = calloc(MAX_GPUS, sizeof(*s.gpus));
	s.procs = calloc(MAX_PROCS, sizeof(*s.procs));
	if (!s.gpus || !s.procs) {
		snprintf(why, sizeof(why), "out of memory");
		err = -ENOMEM;
		goto fail;
	}
	err = fetch(t, Q_GPU, at, &root, why, sizeof(why));
	if (err)
		goto fail;
	if ((r = vector_of(&root))) {
		take_gpus(&s, r);
		take_procs(&s, r);
	}
	gw_jv_release(&root);
	if (!at && isfinite(s.at)) {
		snprintf(at_buf, sizeof(at_buf), "%.3f", s.at);
		at = at_buf;
	}

	if (s.nprocs) {
		err = fetch(t, Q_PROC_AGE, at, &root, why, sizeof(why));
		if (err)
			goto fail;
		if ((r = vector_of(&root)))
			drop_ended(&s, r);
		gw_jv_release(&root);
	}

	err = section_query(t, Q_KERNEL_TIME, at, &root, &s.kernels, why,
			    sizeof(why));
	if (err)
		goto fail;
	if ((r = vector_of(&root)))
		take_rows(&s.kernels, r, kernel_what, 1);
	gw_jv_release(&root);
	if (s.kernels.n) {
		err = section_query(t, Q_KERNEL_CALLS, at, &root, &s.kernels,
				    why, sizeof(why));
		if (err)
			goto fail;
		if ((r = vector_of(&root)))
			join_second(&s.kernels, r, kernel_what, 1);
		gw_jv_release(&root);
	}

	err = section_query(t, Q_ERRORS, at, &root, &s.errors, why,
			    sizeof(why));
	if (err)
		goto fail;
	if ((r = vector_of(&root)))
		take_rows(&s.errors, r, error_what, 2);
	gw_jv_release(&root);
	if (s.errors.n) {
		err = section_query(t, Q_ERRORS_RATE, at, &root, &s.errors, why,
				    sizeof(why));
		if (err)
			goto fail;
		if ((r = vector_of(&root)))
			join_second(&s.errors, r, error_what, 2);
		gw_jv_release(&root);
		if (s.errors.n > 1)
			qsort(s.errors.rows, s.errors.n, sizeof(*s.errors.rows),
			      rate_cmp);
	}

	err = section_query(t, Q_ALERTS, at, &root, &s.alerts, why,
			    sizeof(why));
	if (err)
		goto fail;
	if ((r = vector_of(&root)))
		take_alerts(&s.alerts, r);
	gw_jv_release(&root);

	if (!isfinite(s.at) && at)
		s.at = strtod(at, NULL);
	gw_top_snapshot_release(&t->snap);
	t->snap = s;
	t->have_snap = true;
	t->down_since = 0;
	t->refreshes++;
	return 0;
fail:
	gw_top_snapshot_release(&s);
	t->failures++;
	if (!t->down_since)
		t->down_since = time(NULL);
	copy(t->down_why, sizeof(t->down_why), why);
	return err;
}
