/* SPDX-License-Identifier: MIT */
/*
 * top.c - `gpuwatch top`: a live view of one node, in the spirit of nvtop:
 * a line per GPU (utilisation and memory bars, core and HBM temperature,
 * power against its limit, SM clock, throttle reasons), the GPU processes
 * (sortable, filterable), the CUDA kernels taking the most GPU time, CUDA
 * API error rates and the firing alerts.
 *
 * Everything comes from the agent's Prometheus API (/api/v1/query), so a
 * remote agent is watched the same way as the local one.  Each refresh asks
 * the GPU query first and evaluates the others at the time the agent
 * stamped on its answer, so one screen is one moment of the agent's clock.
 *
 * Two faces over one snapshot: ncurses on a terminal, and a plain text
 * table per interval when TERM is dumb, standard output is not a terminal,
 * or --plain/--once is given.  When the agent cannot be reached the last
 * snapshot stays on screen under "agent unreachable since ..." and the
 * refresh goes on at the same pace until it answers again.
 *
 * The HTTP exchange is fetch(), the one function that knows libcurl.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <curses.h>

#include "cli/cli.h"
#include "cli/jv.h"
#include "common/buf.h"
#include "http/api.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

#define DEFAULT_URL  "http://127.0.0.1:9400"
#define MAX_ANSWER   (16u << 20)
#define MAX_GPUS     256
#define MAX_PROCS    4096
#define MAX_ROWS     10 /* kernels, API errors, alerts: the top 10 */
#define FILTER_MAX   64
#define INTERVAL_MIN 100     /* ms */
#define INTERVAL_MAX 3600000 /* ms */

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

/* ---- the snapshot ---- */

struct gpu {
	char id[16]; /* the gpu label */
	char name[64];
	double up, util, mem_util, mem_used, mem_total, temp, hbm, power, limit,
		sm_clock, mem_clock;
	char throttle[160]; /* active reasons, comma separated */
};

struct proc {
	char pid[16], gpu[16], comm[32], owner[96];
	double sm, mem_util, mem, age;
};

struct row {
	char pid[16], comm[32], what[160], extra[64];
	double v, v2;
};

struct section {
	struct row rows[MAX_ROWS];
	size_t n;
	char error[160]; /* the agent refused the query: its reason */
};

struct snapshot {
	struct gpu *gpus;
	size_t ngpus;
	struct proc *procs;
	size_t nprocs;
	struct section kernels, errors, alerts;
	double at; /* evaluation time (Unix s); NAN when nothing came back */
	double fast_interval; /* the agent's fast set period (s) */
};

enum sort_key { S_MEM, S_SM, S_MEMUTIL, S_PID, S_GPU, S_COMM, S_N };

static const char *const sort_names[S_N] = { "mem", "util", "memutil",
					     "pid", "gpu",  "comm" };

struct top {
	char base[1024];
	const char *fixed_time; /* --time, as sent ("secs.mmm"), or NULL */
	char fixed_time_buf[32];
	int64_t interval_ms;
	bool once, plain, utc;
	long iterations; /* --iterations; 0: until stopped */

	CURL *curl;
	struct snapshot snap;
	bool have_snap;
	time_t down_since; /* 0 while the agent answers */
	char down_why[256];
	long refreshes, failures;

	enum sort_key sort;
	bool reverse;
	char filter[FILTER_MAX + 1];
	bool editing; /* typing a filter after '/' */
	char edit[FILTER_MAX + 1];
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void snapshot_release(struct snapshot *s)
{
	free(s->gpus);
	free(s->procs);
	memset(s, 0, sizeof(*s));
	s->at = NAN;
}

/* ---- usage ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch top [OPTION]...\n"
		"\n"
		"Watch a node live: one line per GPU (utilisation and memory "
		"bars, core and\n"
		"HBM temperature, power against the enforced limit, SM clock, "
		"what throttles\n"
		"the clocks), the GPU processes, the CUDA kernels taking the "
		"most GPU time,\n"
		"CUDA API error rates and the alerts firing.  The numbers come "
		"from the\n"
		"agent's Prometheus API (/api/v1/query), refreshed every "
		"--interval; a remote\n"
		"agent is watched the same way as the local one.\n"
		"\n"
		"On a terminal the view is full screen (80x24 is enough).  "
		"With "
		"TERM=dumb,\n"
		"when standard output is not a terminal, or with --plain, a "
		"plain text table\n"
		"is printed every interval instead; --once prints one and "
		"exits.\n"
		"\n"
		"Options:\n"
		"  --url URL\n"
		"      The agent to watch (default: $GPUWATCH_URL, "
		"else " DEFAULT_URL ").\n"
		"  --interval D\n"
		"      Refresh every D (default 1s; 0.1s to 1h).  D is seconds "
		"(2, 0.5) or a\n"
		"      PromQL duration (5s, 1m).\n"
		"  --once\n"
		"      Print one plain table and exit: for scripts.\n"
		"  --plain\n"
		"      Plain tables even on a terminal.\n"
		"  --iterations N\n"
		"      Stop after N refreshes (default: run until q, Ctrl-C or "
		"SIGTERM).\n"
		"  --time T\n"
		"      Show the node as it was at T instead of now: RFC 3339\n"
		"      (2026-01-02T15:04:05Z), Unix seconds, or now-DURATION "
		"(now-10m).\n"
		"      Rates are over the minute before T.\n"
		"  --sort KEY\n"
		"      Order processes by mem (GPU memory, the default), util "
		"(SM share),\n"
		"      memutil (memory-controller share), pid, gpu or comm.\n"
		"  --reverse\n"
		"      Reverse that order (numbers are largest first, names "
		"and pids smallest\n"
		"      first, unless reversed).\n"
		"  --filter TEXT\n"
		"      Show only processes whose pid, GPU, command, job, pod "
		"or "
		"container\n"
		"      contains TEXT (case does not matter).\n"
		"  --utc\n"
		"      Print times in UTC (default: local time).\n"
		"  -h, --help\n"
		"      Show this help and exit.\n"
		"\n"
		"Keys (full screen):\n"
		"  q            quit\n"
		"  m u e p g c  sort processes by memory, SM utilisation, "
		"memory utilisation,\n"
		"               pid, GPU, command\n"
		"  < >          previous / next sort column\n"
		"  r            reverse the order\n"
		"  /            filter processes: type, Enter keeps it, Esc "
		"clears it\n"
		"  Esc          clear the filter\n"
		"  space        refresh now\n"
		"\n"
		"Columns: UTIL is the share of time a kernel ran; MEM the "
		"framebuffer memory\n"
		"in use; TEMP/HBM the core and memory temperatures (C); POWER "
		"the draw and\n"
		"the enforced limit (W); SM the SM clock (MHz); THROTTLE the "
		"clock event\n"
		"reasons active (gpuwatch_gpu_clock_event_active).  Processes: "
		"SM%% and MEM%%\n"
		"are their shares of SM and memory-controller time, GPU-MEM "
		"their memory\n"
		"(MiB), OWNER the job, pod or container they belong to.  "
		"Kernels: GPU%% is\n"
		"GPU time per second over the last minute (100 = one GPU "
		"busy), CALLS/S the\n"
		"launch rate; they need the CUPTI injection in the process.  "
		"CUDA API\n"
		"errors: per second over the last minute and in all, from the "
		"eBPF probes or\n"
		"the CUPTI injection.\n"
		"\n"
		"When the agent cannot be reached the last values stay on "
		"screen under\n"
		"\"agent unreachable since TIME\" and it is asked again every "
		"interval.\n"
		"\n"
		"Exit status: 0 on quit; 1 when --once could not reach the "
		"agent or it\n"
		"refused the GPU query; 2 for a bad option.\n"
		"\n"
		"Examples:\n"
		"  gpuwatch top\n"
		"  gpuwatch top --url http://node7:9400 --sort util\n"
		"  gpuwatch top --once --filter train | grep -A20 "
		"'^PROCESSES'\n"
		"  gpuwatch top --time now-2h        # the node two hours "
		"ago\n");
}

/* ---- fetching ---- */

static size_t on_data(char *p, size_t size, size_t n, void *cls)
{
	struct gw_buf *b = cls;

	return gw_buf_add(b, p, size * n) ? 0 : size * n;
}

/*
 * POSTs QUERY (at TIME when not NULL) to /api/v1/query and parses the
 * answer into ROOT.  0 on a success answer; -EHOSTUNREACH when the agent
 * could not be reached or did not speak the API (the caller shows it as
 * unreachable); -EINVAL when the agent refused the query.  WHY says what
 * went wrong.
 */
static int fetch(struct top *t, const char *query, const char *at,
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
	curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, on_data);
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
		snprintf(why, whyn, "HTTP %ld, not the query API", status);
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

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static struct gpu *gpu_slot(struct snapshot *s, const char *id)
{
	struct gpu *g;

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

static void add_reason(struct gpu *g, const char *reason)
{
	size_t n = strlen(g->throttle);

	if (!reason)
		return;
	snprintf(g->throttle + n, sizeof(g->throttle) - n, "%s%s", n ? "," : "",
		 reason);
}

/* GPUs in order of their index (numerically when they are numbers). */
static int gpu_id_cmp(const char *a, const char *b)
{
	char *ea, *eb;
	long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);

	if (*a && *b && !*ea && !*eb && x != y)
		return x < y ? -1 : 1;
	return strcmp(a, b);
}

static int gpu_cmp(const void *a, const void *b)
{
	return gpu_id_cmp(((const struct gpu *)a)->id,
			  ((const struct gpu *)b)->id);
}

static void take_gpus(struct snapshot *s, const struct gw_jv *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct gw_jv *x = &r->v[i];
		const char *name = label(x, "__name__"), *id = label(x, "gpu");
		const char *clock = label(x, "clock");
		double v = sample_value(x, &s->at);
		struct gpu *g;

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

static void take_procs(struct snapshot *s, const struct gw_jv *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct gw_jv *x = &r->v[i];
		const char *name = label(x, "__name__"), *pid = label(x, "pid");
		const char *gpu = label(x, "gpu");
		double v = sample_value(x, NULL);
		struct proc *p = NULL;

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
static void drop_ended(struct snapshot *s, const struct gw_jv *r)
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
	double x = ((const struct row *)a)->v, y = ((const struct row *)b)->v;

	return x > y ? -1 : x < y ? 1 : 0;
}

/* Rows of a top-N answer: pid, comm, WHAT (labels joined), value. */
static void take_rows(struct section *sec, const struct gw_jv *r,
		      const char *const *what, size_t nwhat)
{
	for (size_t i = 0; i < r->n && sec->n < MAX_ROWS; i++) {
		const struct gw_jv *x = &r->v[i];
		struct row *w = &sec->rows[sec->n++];
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
	qsort(sec->rows, sec->n, sizeof(*sec->rows), row_cmp);
}

/* Puts the values of R into v2 of the rows with the same pid and WHAT. */
static void join_second(struct section *sec, const struct gw_jv *r,
			const char *const *what, size_t nwhat)
{
	struct section tmp = { 0 };

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
	const struct row *x = a, *y = b;
	double rx = isnan(x->v2) ? -1 : x->v2, ry = isnan(y->v2) ? -1 : y->v2;

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return row_cmp(a, b);
}

/* Firing alerts: name, the labels that say where, and since when. */
static void take_alerts(struct section *sec, const struct gw_jv *r)
{
	for (size_t i = 0; i < r->n && sec->n < MAX_ROWS; i++) {
		const struct gw_jv *x = &r->v[i];
		const struct gw_jv *m = gw_jv_get(x, "metric");
		struct row *w = &sec->rows[sec->n++];
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
static int section_query(struct top *t, const char *q, const char *at,
			 struct gw_jv *root, struct section *sec, char *why,
			 size_t whyn)
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
static int update(struct top *t)
{
	static const char *const kernel_what[] = { "kernel" };
	static const char *const error_what[] = { "api", "code" };
	struct snapshot s = { 0 };
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
	snapshot_release(&t->snap);
	t->snap = s;
	t->have_snap = true;
	t->down_since = 0;
	t->refreshes++;
	return 0;
fail:
	snapshot_release(&s);
	t->failures++;
	if (!t->down_since)
		t->down_since = time(NULL);
	copy(t->down_why, sizeof(t->down_why), why);
	return err;
}

/* ---- shared formatting ---- */

static bool visible(const struct top *t, const struct proc *p)
{
	const char *f = t->editing ? t->edit : t->filter;

	if (!*f)
		return true;
	return strcasestr(p->pid, f) || strcasestr(p->gpu, f) ||
	       strcasestr(p->comm, f) || strcasestr(p->owner, f);
}

static int num_cmp(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) - isnan(b); /* missing values last */
	return a > b ? -1 : a < b ? 1 : 0;
}

static int str_num_cmp(const char *a, const char *b)
{
	return gpu_id_cmp(a, b);
}

static int proc_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct proc *a = pa, *b = pb;
	const struct top *t = ctx;
	int c = 0;

	switch (t->sort) {
	case S_MEM:
		c = num_cmp(a->mem, b->mem);
		break;
	case S_SM:
		c = num_cmp(a->sm, b->sm);
		break;
	case S_MEMUTIL:
		c = num_cmp(a->mem_util, b->mem_util);
		break;
	case S_PID:
		c = str_num_cmp(a->pid, b->pid);
		break;
	case S_GPU:
		c = str_num_cmp(a->gpu, b->gpu);
		break;
	case S_COMM:
		c = strcmp(a->comm, b->comm);
		break;
	case S_N:
		break;
	}
	if (t->reverse)
		c = -c;
	if (!c)
		c = str_num_cmp(a->pid, b->pid);
	if (!c)
		c = str_num_cmp(a->gpu, b->gpu);
	return c;
}

/* The processes to show, in order: indexes into the snapshot. */
static size_t shown_procs(const struct top *t, struct proc *out)
{
	size_t n = 0;

	for (size_t i = 0; i < t->snap.nprocs; i++)
		if (visible(t, &t->snap.procs[i]))
			out[n++] = t->snap.procs[i];
	qsort_r(out, n, sizeof(*out), proc_cmp, (void *)t);
	return n;
}

static void fmt_clock(const struct top *t, double secs, bool date, char *out,
		      size_t n)
{
	time_t tt = (time_t)secs;
	struct tm tm;

	if (!isfinite(secs) ||
	    !(t->utc ? gmtime_r(&tt, &tm) : localtime_r(&tt, &tm))) {
		snprintf(out, n, "-");
		return;
	}
	strftime(out, n,
		 date ? (t->utc ? "%Y-%m-%d %H:%M:%S UTC"
				: "%Y-%m-%d %H:%M:%S %Z")
		      : "%H:%M:%S",
		 &tm);
}

/* %.Nf, or "-" when the value is missing. */
static const char *num(char *buf, size_t n, double v, int decimals,
		       double scale)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.*f", decimals, v * scale);
	return buf;
}

/* The short names of throttle reasons, for the full-screen view. */
static void short_reasons(const char *in, char *out, size_t n)
{
	static const struct {
		const char *name, *abbr;
	} map[] = {
		{ "sw_power_cap", "pwr-cap" },
		{ "hw_power_brake_slowdown", "pwr-brake" },
		{ "sw_thermal_slowdown", "sw-therm" },
		{ "hw_thermal_slowdown", "hw-therm" },
		{ "hw_slowdown", "hw-slow" },
		{ "gpu_idle", "idle" },
		{ "applications_clocks", "app-clk" },
		{ "sync_boost", "sync" },
		{ "display_clock_setting", "display" },
	};
	size_t len = 0;

	out[0] = '\0';
	while (*in && len < n) {
		size_t k = strcspn(in, ",");
		const char *word = in;
		int wlen = (int)k;

		for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (strlen(map[i].name) == k &&
			    !strncmp(map[i].name, in, k)) {
				word = map[i].abbr;
				wlen = (int)strlen(word);
			}
		len += (size_t)snprintf(out + len, n - len, "%s%.*s",
					len ? "," : "", wlen, word);
		in += k + (in[k] == ',');
	}
}

/* ---- plain text ---- */

static void plain_section_note(const struct section *s, const char *none)
{
	if (s->error[0])
		printf("  (the agent refused the query: %s)\n", s->error);
	else if (!s->n)
		printf("  (%s)\n", none);
}

static void print_plain(struct top *t)
{
	const struct snapshot *s = &t->snap;
	struct proc *procs;
	char when[64], a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32],
		i2[32], j2[32];
	size_t np;

	if (t->down_since) {
		fmt_clock(t, (double)t->down_since, true, when, sizeof(when));
		printf("gpuwatch top: agent unreachable since %s: %s; "
		       "retrying\n",
		       when, t->down_why);
		if (!t->have_snap)
			return;
		printf("(last values shown)\n");
	}
	fmt_clock(t, s->at, true, when, sizeof(when));
	printf("gpuwatch top - %s - %s - %zu GPU%s, %zu process%s, %zu "
	       "alert%s firing\n",
	       t->base, when, s->ngpus, s->ngpus == 1 ? "" : "s", s->nprocs,
	       s->nprocs == 1 ? "" : "es", s->alerts.n,
	       s->alerts.n == 1 ? "" : "s");
	printf("\nGPU  UTIL%%  MEM%%  MEM_MIB  TOTAL_MIB  TEMP_C  HBM_C  "
	       "POWER_W  LIMIT_W  SM_MHZ  MEM_MHZ  THROTTLE  NAME\n");
	for (size_t i = 0; i < s->ngpus; i++) {
		const struct gpu *x = &s->gpus[i];

		if (x->up == 0) {
			printf("%-3s  LOST  %s\n", x->id, x->name);
			continue;
		}
		printf("%-3s  %5s  %4s  %7s  %9s  %6s  %5s  %7s  %7s  %6s  "
		       "%7s  %s  %s\n",
		       x->id, num(a, sizeof(a), x->util, 0, 100),
		       num(b, sizeof(b), x->mem_util, 0, 100),
		       num(c, sizeof(c), x->mem_used, 0, 1.0 / 1048576),
		       num(d, sizeof(d), x->mem_total, 0, 1.0 / 1048576),
		       num(e, sizeof(e), x->temp, 0, 1),
		       num(f, sizeof(f), x->hbm, 0, 1),
		       num(g, sizeof(g), x->power, 0, 1),
		       num(h, sizeof(h), x->limit, 0, 1),
		       num(i2, sizeof(i2), x->sm_clock, 0, 1e-6),
		       num(j2, sizeof(j2), x->mem_clock, 0, 1e-6),
		       x->throttle[0] ? x->throttle : "-",
		       x->name[0] ? x->name : "-");
	}
	if (!s->ngpus)
		printf("  (no GPUs: is the agent watching any?)\n");

	procs = calloc(s->nprocs ? s->nprocs : 1, sizeof(*procs));
	np = procs ? shown_procs(t, procs) : 0;
	printf("\nPROCESSES (sorted by %s%s%s%s%s)\n", sort_names[t->sort],
	       t->reverse ? ", reversed" : "", t->filter[0] ? ", filter '" : "",
	       t->filter, t->filter[0] ? "'" : "");
	printf("PID       GPU  SM%%  MEM%%  GPU_MEM_MIB  COMM             "
	       "OWNER\n");
	for (size_t i = 0; i < np; i++)
		printf("%-8s  %-3s  %3s  %4s  %11s  %-15s  %s\n", procs[i].pid,
		       procs[i].gpu, num(a, sizeof(a), procs[i].sm, 0, 100),
		       num(b, sizeof(b), procs[i].mem_util, 0, 100),
		       num(c, sizeof(c), procs[i].mem, 0, 1.0 / 1048576),
		       procs[i].comm[0] ? procs[i].comm : "-",
		       procs[i].owner[0] ? procs[i].owner : "-");
	if (!np)
		printf("  (%s)\n", s->nprocs ? "none match the filter"
					     : "no GPU processes");
	free(procs);

	printf("\nTOP KERNELS (GPU time over the last minute)\n"
	       "GPU%%   CALLS/S  PID       COMM             KERNEL\n");
	for (size_t i = 0; i < s->kernels.n; i++) {
		const struct row *w = &s->kernels.rows[i];

		printf("%5s  %7s  %-8s  %-15s  %s\n",
		       num(a, sizeof(a), w->v, 1, 100),
		       num(b, sizeof(b), w->v2, 1, 1), w->pid,
		       w->comm[0] ? w->comm : "-", w->what);
	}
	plain_section_note(&s->kernels,
			   "no kernel data: needs the CUPTI injection");

	printf("\nCUDA API ERRORS (per second over the last minute, and in "
	       "all)\n"
	       "ERR/S    TOTAL     PID       COMM             API CODE\n");
	for (size_t i = 0; i < s->errors.n; i++) {
		const struct row *w = &s->errors.rows[i];

		printf("%7s  %8s  %-8s  %-15s  %s\n",
		       num(a, sizeof(a), w->v2, 2, 1),
		       num(b, sizeof(b), w->v, 0, 1), w->pid,
		       w->comm[0] ? w->comm : "-", w->what);
	}
	plain_section_note(&s->errors, "no API errors");

	printf("\nALERTS FIRING\nSINCE     ALERT                     "
	       "SEVERITY  LABELS\n");
	for (size_t i = 0; i < s->alerts.n; i++) {
		const struct row *w = &s->alerts.rows[i];

		fmt_clock(t, w->v, false, when, sizeof(when));
		printf("%-8s  %-24s  %-8s  %s\n", when, w->comm,
		       w->extra[0] ? w->extra : "-", w->what);
	}
	plain_section_note(&s->alerts, "none");
	fflush(stdout);
}

/* ---- full screen ---- */

enum { C_OK = 1, C_WARN, C_BAD, C_HEAD, C_DOWN, C_DIM };

/* printf at (y, x), clipped to the screen's width. */
__attribute__((format(printf, 4, 5))) static void put(int y, int x, attr_t attr,
						      const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (y < 0 || y >= LINES || x >= COLS)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	attron(attr);
	mvaddnstr(y, x, buf, COLS - x);
	attroff(attr);
}

static attr_t level(double ratio)
{
	if (!has_colors())
		return ratio >= 0.9 ? A_BOLD : A_NORMAL;
	return COLOR_PAIR(ratio >= 0.9 ? C_BAD : ratio >= 0.7 ? C_WARN : C_OK);
}

/* [|||||   text] of WIDTH cells in all, filled to RATIO. */
static void bar(int y, int x, int width, double ratio, const char *text)
{
	int inner = width - 2, fill, tl = (int)strlen(text);

	if (inner < 1)
		return;
	if (!isfinite(ratio))
		ratio = 0;
	ratio = ratio < 0 ? 0 : ratio > 1 ? 1 : ratio;
	fill = (int)lround(ratio * inner);
	put(y, x, A_NORMAL, "[");
	for (int i = 0; i < inner; i++) {
		int ti = i - (inner - tl);
		char ch = ti >= 0 ? text[ti] : i < fill ? '|' : ' ';

		if (x + 1 + i >= COLS)
			break;
		attron(i < fill ? level(ratio) : A_NORMAL);
		mvaddch(y, x + 1 + i, (chtype)(unsigned char)ch);
		attroff(i < fill ? level(ratio) : A_NORMAL);
	}
	put(y, x + width - 1, A_NORMAL, "]");
}

static int draw_gpus(struct top *t, int y, int rows)
{
	const struct snapshot *s = &t->snap;
	int w = COLS < 80 ? 80 : COLS, barw = 16 + (w - 80) / 3;
	char a[32], b[32], txt[64], thr[160];
	int x, fit;

	put(y++, 0, A_BOLD,
	    "GPU %-*s %-*s TEMP/HBM POWER/LIMIT  SM MHz THROTTLE", barw, "UTIL",
	    barw, "MEM");
	/* the last row says how many GPUs did not fit */
	fit = (int)s->ngpus > rows ? rows - 1 : rows;
	for (size_t i = 0; i < s->ngpus && (int)i < fit; i++, y++) {
		const struct gpu *g = &s->gpus[i];

		put(y, 0, A_BOLD, "%3s", g->id);
		x = 4;
		if (g->up == 0) {
			put(y, x,
			    has_colors() ? COLOR_PAIR(C_BAD) | A_BOLD
					 : A_REVERSE,
			    "LOST: the GPU does not answer");
			continue;
		}
		snprintf(txt, sizeof(txt), "%s%%",
			 num(a, sizeof(a), g->util, 0, 100));
		bar(y, x, barw, g->util, txt);
		x += barw + 1;
		snprintf(txt, sizeof(txt), "%s/%sG",
			 num(a, sizeof(a), g->mem_used, 0, 1.0 / 1073741824),
			 num(b, sizeof(b), g->mem_total, 0, 1.0 / 1073741824));
		bar(y, x, barw,
		    g->mem_total > 0 ? g->mem_used / g->mem_total : NAN, txt);
		x += barw + 1;
		put(y, x,
		    level(g->hbm >= 95 || g->temp >= 87 ? 1
			  : g->temp >= 80		? 0.8
							: 0),
		    "%3s/%-3sC", num(a, sizeof(a), g->temp, 0, 1),
		    num(b, sizeof(b), g->hbm, 0, 1));
		x += 9;
		put(y, x, level(g->limit > 0 ? g->power / g->limit * 0.95 : 0),
		    "%4s/%-4sW", num(a, sizeof(a), g->power, 0, 1),
		    num(b, sizeof(b), g->limit, 0, 1));
		x += 11;
		put(y, x, A_NORMAL, "%6s",
		    num(a, sizeof(a), g->sm_clock, 0, 1e-6));
		x += 7;
		short_reasons(g->throttle, thr, sizeof(thr));
		put(y, x,
		    strstr(g->throttle, "thermal") || strstr(g->throttle, "hw_")
			    ? level(1)
			    : A_NORMAL,
		    "%s", thr[0] ? thr : "-");
	}
	if (!s->ngpus)
		put(y++, 4, A_DIM, "no GPUs: is the agent watching any?");
	else if ((int)s->ngpus > rows && fit >= 0)
		put(y++, 4, A_DIM,
		    "... %zu more GPUs (a taller terminal shows them)",
		    s->ngpus - (size_t)fit);
	return y;
}

static const char *sort_mark(const struct top *t, enum sort_key k)
{
	if (t->sort != k)
		return " ";
	/* numbers default to largest first, names to smallest first */
	return (k <= S_MEMUTIL) != t->reverse ? "v" : "^";
}

static int draw_procs(struct top *t, int y, int rows)
{
	struct proc *procs =
		calloc(t->snap.nprocs ? t->snap.nprocs : 1, sizeof(*procs));
	size_t np = procs ? shown_procs(t, procs) : 0;
	char a[32], b[32], c[32];
	int fit;

	put(y, 0, A_REVERSE, "%-*s", COLS, "");
	put(y++, 0, A_REVERSE,
	    "     PID%s GPU%s  SM%%%s MEM%%%s GPU-MEM%s COMM%s           "
	    "OWNER",
	    sort_mark(t, S_PID), sort_mark(t, S_GPU), sort_mark(t, S_SM),
	    sort_mark(t, S_MEMUTIL), sort_mark(t, S_MEM), sort_mark(t, S_COMM));
	/* ROWS counts the header; the last row says how many did not fit */
	fit = (int)np > rows - 1 ? rows - 2 : rows - 1;
	for (size_t i = 0; i < np && (int)i < fit; i++)
		put(y++, 0, A_NORMAL, "%8s %3s %5s %5s %7sM %-15s %s",
		    procs[i].pid, procs[i].gpu,
		    num(a, sizeof(a), procs[i].sm, 0, 100),
		    num(b, sizeof(b), procs[i].mem_util, 0, 100),
		    num(c, sizeof(c), procs[i].mem, 0, 1.0 / 1048576),
		    procs[i].comm[0] ? procs[i].comm : "-",
		    procs[i].owner[0] ? procs[i].owner : "");
	if (!np)
		put(y++, 4, A_DIM, "%s",
		    t->snap.nprocs ? "no process matches the filter"
				   : "no GPU processes");
	else if ((int)np > rows - 1 && fit >= 0)
		put(y++, 4, A_DIM, "... %zu more (filter with /)",
		    np - (size_t)fit);
	free(procs);
	return y;
}

/* A section's title and up to ROWS of its lines; returns the next y. */
static int draw_section(struct top *t, int y, int rows, const char *title,
			const struct section *s)
{
	char a[32], b[32], when[32];

	put(y++, 0, A_BOLD, "%s", title);
	if (s->error[0]) {
		put(y++, 2, A_DIM, "the agent refused the query: %s", s->error);
		return y;
	}
	for (size_t i = 0; i < s->n && (int)i < rows; i++) {
		const struct row *w = &s->rows[i];

		if (s == &t->snap.alerts) {
			fmt_clock(t, w->v, false, when, sizeof(when));
			put(y++, 2,
			    has_colors() ? COLOR_PAIR(C_BAD) | A_BOLD : A_BOLD,
			    "%-24s %-8s since %s  %s", w->comm,
			    w->extra[0] ? w->extra : "-", when, w->what);
		} else if (s == &t->snap.kernels) {
			put(y++, 2, A_NORMAL, "%5s%% %8s/s %8s %-12.12s %s",
			    num(a, sizeof(a), w->v, 1, 100),
			    num(b, sizeof(b), w->v2, 1, 1), w->pid,
			    w->comm[0] ? w->comm : "-", w->what);
		} else {
			put(y++, 2, A_NORMAL, "%7s/s %7s %8s %-12.12s %s",
			    num(a, sizeof(a), w->v2, 2, 1),
			    num(b, sizeof(b), w->v, 0, 1), w->pid,
			    w->comm[0] ? w->comm : "-", w->what);
		}
	}
	return y;
}

static int lines_of(const struct section *s, int cap)
{
	if (s->error[0])
		return 2;
	return s->n ? 1 + ((int)s->n < cap ? (int)s->n : cap) : 0;
}

static void draw(struct top *t)
{
	const struct snapshot *s = &t->snap;
	char when[64], since[64];
	int y = 0, gpu_rows, bottom, proc_rows, cap = 3;
	bool quiet;

	erase();
	fmt_clock(t, s->at, t->fixed_time != NULL, when, sizeof(when));
	put(0, 0, A_BOLD, "gpuwatch top  %s  %s  %zu GPU%s  %zu alert%s",
	    t->base, t->have_snap ? when : "", s->ngpus,
	    s->ngpus == 1 ? "" : "s", s->alerts.n, s->alerts.n == 1 ? "" : "s");
	y = 1;
	if (t->down_since) {
		fmt_clock(t, (double)t->down_since, false, since,
			  sizeof(since));
		put(y++, 0,
		    has_colors() ? COLOR_PAIR(C_DOWN) | A_BOLD : A_REVERSE,
		    "agent unreachable since %s, retrying every %.1fs: %s",
		    since, (double)t->interval_ms / 1000, t->down_why);
	}
	if (!t->have_snap) {
		put(y + 1, 2, A_NORMAL, "waiting for the agent at %s ...",
		    t->base);
		goto help;
	}

	gpu_rows = (int)s->ngpus;
	if (gpu_rows > LINES - y - 8)
		gpu_rows = LINES - y - 8 > 1 ? LINES - y - 8 : 1;
	y = draw_gpus(t, y, gpu_rows);

	quiet = !s->kernels.n && !s->errors.n && !s->alerts.n &&
		!s->kernels.error[0] && !s->errors.error[0] &&
		!s->alerts.error[0];
	for (;; cap--) {
		bottom = quiet ? 1
			       : lines_of(&s->alerts, cap) +
					 lines_of(&s->kernels, cap) +
					 lines_of(&s->errors, cap);
		proc_rows = LINES - 1 - y - bottom;
		if (proc_rows >= 4 || cap == 1)
			break;
	}
	if (proc_rows < 2) {
		/* a very small terminal: the processes before the rest */
		proc_rows = LINES - 1 - y;
		bottom = 0;
	}
	y = draw_procs(t, y, proc_rows);
	y = LINES - 1 - bottom;
	if (!bottom) {
		/* no room below the processes */
	} else if (quiet) {
		put(y, 0, A_DIM,
		    "no alerts firing, no CUDA API errors, no "
		    "kernel data (needs CUPTI)");
	} else {
		if (lines_of(&s->alerts, cap))
			y = draw_section(t, y, cap, "ALERTS FIRING",
					 &s->alerts);
		if (lines_of(&s->kernels, cap))
			y = draw_section(t, y, cap,
					 "TOP KERNELS   GPU%     CALLS      "
					 "PID COMM         KERNEL",
					 &s->kernels);
		if (lines_of(&s->errors, cap))
			draw_section(t, y, cap,
				     "CUDA API ERRORS    RATE   TOTAL      PID "
				     "COMM         API CODE",
				     &s->errors);
	}
help:
	if (t->editing)
		put(LINES - 1, 0, A_REVERSE,
		    "filter: %s_  (Enter keep, Esc clear)", t->edit);
	else
		put(LINES - 1, 0, A_REVERSE,
		    "q quit  / filter%s%s%s  m u e p g c sort  < > r  "
		    "sort=%s%s",
		    t->filter[0] ? " [" : "", t->filter,
		    t->filter[0] ? "]" : "", sort_names[t->sort],
		    t->reverse ? " rev" : "");
	refresh();
}

static void key(struct top *t, int ch, bool *now)
{
	size_t n;

	if (t->editing) {
		n = strlen(t->edit);
		if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
			copy(t->filter, sizeof(t->filter), t->edit);
			t->editing = false;
		} else if (ch == 27) {
			t->filter[0] = '\0';
			t->editing = false;
		} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n) {
			t->edit[n - 1] = '\0';
		} else if (ch >= 32 && ch < 127 && n < FILTER_MAX) {
			t->edit[n] = (char)ch;
			t->edit[n + 1] = '\0';
		}
		return;
	}
	switch (ch) {
	case 'q':
	case 'Q':
		stop_flag = 1;
		break;
	case '/':
		t->editing = true;
		copy(t->edit, sizeof(t->edit), t->filter);
		break;
	case 27:
		t->filter[0] = '\0';
		break;
	case 'm':
		t->sort = S_MEM;
		break;
	case 'u':
		t->sort = S_SM;
		break;
	case 'e':
		t->sort = S_MEMUTIL;
		break;
	case 'p':
		t->sort = S_PID;
		break;
	case 'g':
		t->sort = S_GPU;
		break;
	case 'c':
		t->sort = S_COMM;
		break;
	case '>':
		t->sort = (enum sort_key)((t->sort + 1) % S_N);
		break;
	case '<':
		t->sort = (enum sort_key)((t->sort + S_N - 1) % S_N);
		break;
	case 'r':
		t->reverse = !t->reverse;
		break;
	case ' ':
		*now = true;
		break;
	default:
		break;
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int run_screen(struct top *t)
{
	int64_t next = 0;

	if (!initscr()) {
		fprintf(stderr, "gpuwatch top: cannot start the terminal\n");
		return 1;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	if (has_colors()) {
		start_color();
		use_default_colors();
		init_pair(C_OK, COLOR_GREEN, -1);
		init_pair(C_WARN, COLOR_YELLOW, -1);
		init_pair(C_BAD, COLOR_RED, -1);
		init_pair(C_HEAD, COLOR_CYAN, -1);
		init_pair(C_DOWN, COLOR_WHITE, COLOR_RED);
		init_pair(C_DIM, COLOR_BLUE, -1);
	}
	draw(t);
	while (!stop_flag) {
		int64_t now = mono_ms();
		bool again = false;
		int ch;

		if (now >= next) {
			update(t);
			next = now + t->interval_ms;
			draw(t);
			if (t->iterations &&
			    t->refreshes + t->failures >= t->iterations)
				break;
			continue;
		}
		timeout((int)(next - now));
		ch = getch();
		if (ch == ERR)
			continue;
		key(t, ch, &again);
		if (again)
			next = 0;
		draw(t);
	}
	endwin();
	return 0;
}

static int run_plain(struct top *t)
{
	for (long i = 0; !stop_flag; i++) {
		int64_t start = mono_ms(), left;
		int err = update(t);

		if (t->once) {
			if (err) {
				fprintf(stderr,
					"gpuwatch top: cannot %s %s: %s\n%s",
					err == -EINVAL ? "query the agent at"
						       : "reach the agent at",
					t->base, t->down_why,
					err == -EINVAL
						? ""
						: "(is 'gpuwatch agent' "
						  "running there? choose "
						  "another with --url or "
						  "GPUWATCH_URL)\n");
				return 1;
			}
			print_plain(t);
			return 0;
		}
		if (i)
			printf("\n");
		print_plain(t);
		if (t->iterations && i + 1 >= t->iterations)
			break;
		/* pace the refreshes; a signal ends the wait early */
		left = start + t->interval_ms - mono_ms();
		if (left > 0) {
			struct timespec ts = { (time_t)(left / 1000),
					       (long)(left % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/* ---- options ---- */

static int parse_when(const char *s, int64_t *ms)
{
	struct timespec ts;
	int64_t now, d;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (strcmp(s, "now") == 0) {
		*ms = now;
		return 0;
	}
	if (strncmp(s, "now-", 4) == 0 &&
	    gw_api_parse_duration(s + 4, &d) == 0 && d >= 0) {
		*ms = now - d;
		return 0;
	}
	return gw_api_parse_time(s, ms);
}

enum {
	O_URL = 256,
	O_INTERVAL,
	O_ONCE,
	O_PLAIN,
	O_ITER,
	O_TIME,
	O_SORT,
	O_REVERSE,
	O_FILTER,
	O_UTC
};

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gpuwatch top: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see 'gpuwatch top --help'\n");
	return 2;
}

int gw_cmd_top(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "url", required_argument, NULL, O_URL },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "once", no_argument, NULL, O_ONCE },
		{ "plain", no_argument, NULL, O_PLAIN },
		{ "iterations", required_argument, NULL, O_ITER },
		{ "time", required_argument, NULL, O_TIME },
		{ "sort", required_argument, NULL, O_SORT },
		{ "reverse", no_argument, NULL, O_REVERSE },
		{ "filter", required_argument, NULL, O_FILTER },
		{ "utc", no_argument, NULL, O_UTC },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct top *t;
	struct sigaction sa;
	const char *url = NULL, *term;
	int64_t ms;
	char *end;
	int ch, rc;
	size_t n;

	t = calloc(1, sizeof(*t));
	if (!t) {
		fprintf(stderr, "gpuwatch top: out of memory\n");
		return 1;
	}
	t->interval_ms = 1000;
	t->snap.at = NAN;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		rc = 2;
		switch (ch) {
		case O_URL:
			url = optarg;
			break;
		case O_INTERVAL:
			if (gw_api_parse_duration(optarg, &ms) ||
			    ms < INTERVAL_MIN || ms > INTERVAL_MAX) {
				rc = bad("--interval '%s' is not a duration "
					 "from 0.1s to 1h",
					 optarg);
				goto out;
			}
			t->interval_ms = ms;
			break;
		case O_ONCE:
			t->once = true;
			break;
		case O_PLAIN:
			t->plain = true;
			break;
		case O_ITER:
			errno = 0;
			t->iterations = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end ||
			    t->iterations < 1) {
				rc = bad("--iterations '%s' is not a whole "
					 "number above 0",
					 optarg);
				goto out;
			}
			break;
		case O_TIME:
			if (parse_when(optarg, &ms)) {
				rc = bad("--time '%s' is not a time (RFC 3339, "
					 "Unix seconds, now or now-DURATION)",
					 optarg);
				goto out;
			}
			snprintf(t->fixed_time_buf, sizeof(t->fixed_time_buf),
				 "%lld.%03lld", (long long)(ms / 1000),
				 (long long)(ms % 1000));
			t->fixed_time = t->fixed_time_buf;
			break;
		case O_SORT:
			for (n = 0; n < S_N; n++)
				if (strcmp(optarg, sort_names[n]) == 0)
					break;
			if (n == S_N) {
				rc = bad("--sort '%s' is none of mem, util, "
					 "memutil, pid, gpu, comm",
					 optarg);
				goto out;
			}
			t->sort = (enum sort_key)n;
			break;
		case O_REVERSE:
			t->reverse = true;
			break;
		case O_FILTER:
			if (strlen(optarg) > FILTER_MAX) {
				rc = bad("--filter '%s' is longer than 64 "
					 "characters",
					 optarg);
				goto out;
			}
			copy(t->filter, sizeof(t->filter), optarg);
			break;
		case O_UTC:
			t->utc = true;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			rc = bad("bad option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (optind != argc) {
		rc = bad("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (!url || !*url)
		url = getenv("GPUWATCH_URL");
	if (!url || !*url)
		url = DEFAULT_URL;
	snprintf(t->base, sizeof(t->base), "%s%s",
		 strstr(url, "://") ? "" : "http://", url);
	n = strlen(t->base);
	while (n > 0 && t->base[n - 1] == '/')
		t->base[--n] = '\0';

	rc = 1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(stderr, "gpuwatch top: cannot start libcurl\n");
		goto out;
	}
	t->curl = curl_easy_init();
	if (!t->curl) {
		fprintf(stderr, "gpuwatch top: cannot start libcurl\n");
		goto out_curl;
	}
	curl_easy_setopt(t->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(t->interval_ms > 2000 ? t->interval_ms : 2000));
	curl_easy_setopt(t->curl, CURLOPT_TIMEOUT_MS,
			 (long)(t->interval_ms > 5000 ? t->interval_ms : 5000));
	curl_easy_setopt(t->curl, CURLOPT_USERAGENT, "gpuwatch/" GW_VERSION);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	term = getenv("TERM");
	if (t->once || t->plain || !isatty(STDOUT_FILENO) ||
	    !isatty(STDIN_FILENO) || !term || !*term ||
	    strcmp(term, "dumb") == 0)
		rc = run_plain(t);
	else
		rc = run_screen(t);
	curl_easy_cleanup(t->curl);
out_curl:
	curl_global_cleanup();
out:
	snapshot_release(&t->snap);
	free(t);
	return rc;
}
