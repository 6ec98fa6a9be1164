/* SPDX-License-Identifier: MIT */
/*
 * top.c - `gpuwatch top`: a live view of one node, in the spirit of nvtop:
 * a line per GPU (utilisation and memory bars, core and HBM temperature,
 * power against its limit, SM clock, throttle reasons), the GPU processes
 * (sortable, filterable), the CUDA kernels taking the most GPU time, CUDA
 * API error rates and the firing alerts.
 *
 * Everything comes from the agent's Prometheus API (/api/v1/query), so a
 * remote agent is watched the same way as the local one (top_fetch.c).
 *
 * Two faces over one snapshot: ncurses on a terminal (top_screen.c), and a
 * plain text table per interval (here) when TERM is dumb, standard output
 * is not a terminal, or --plain/--once is given.  When the agent cannot be
 * reached the last snapshot stays on screen under "agent unreachable since
 * ..." and the refresh goes on at the same pace until it answers again.
 * This file also holds the options and the shared formatting.
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

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/top.h"
#include "http/api.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

#define DEFAULT_URL  "http://127.0.0.1:9400"
#define INTERVAL_MIN 100     /* ms */
#define INTERVAL_MAX 3600000 /* ms */

const char *const gw_top_sort_names[GW_TOP_SORT_N] = { "mem", "util", "memutil",
						       "pid", "gpu",  "comm" };

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
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
		"A secured agent (--web.config.file, docs/security.md): an "
		"https:// --url and\n" GW_CLIENT_USAGE "\n"
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

/* ---- shared formatting ---- */

static bool visible(const struct gw_top *t, const struct gw_top_proc *p)
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
	return gw_top_id_cmp(a, b);
}

static int proc_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct gw_top_proc *a = pa, *b = pb;
	const struct gw_top *t = ctx;
	int c = 0;

	switch (t->sort) {
	case GW_TOP_SORT_MEM:
		c = num_cmp(a->mem, b->mem);
		break;
	case GW_TOP_SORT_SM:
		c = num_cmp(a->sm, b->sm);
		break;
	case GW_TOP_SORT_MEMUTIL:
		c = num_cmp(a->mem_util, b->mem_util);
		break;
	case GW_TOP_SORT_PID:
		c = str_num_cmp(a->pid, b->pid);
		break;
	case GW_TOP_SORT_GPU:
		c = str_num_cmp(a->gpu, b->gpu);
		break;
	case GW_TOP_SORT_COMM:
		c = strcmp(a->comm, b->comm);
		break;
	case GW_TOP_SORT_N:
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
size_t gw_top_shown_procs(const struct gw_top *t, struct gw_top_proc *out)
{
	size_t n = 0;

	for (size_t i = 0; i < t->snap.nprocs; i++)
		if (visible(t, &t->snap.procs[i]))
			out[n++] = t->snap.procs[i];
	qsort_r(out, n, sizeof(*out), proc_cmp, (void *)t);
	return n;
}

void gw_top_fmt_clock(const struct gw_top *t, double secs, bool date, char *out,
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
const char *gw_top_num(char *buf, size_t n, double v, int decimals,
		       double scale)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.*f", decimals, v * scale);
	return buf;
}

/* The short names of throttle reasons, for the full-screen view. */
void gw_top_short_reasons(const char *in, char *out, size_t n)
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

static void plain_section_note(const struct gw_top_section *s, const char *none)
{
	if (s->error[0])
		printf("  (the agent refused the query: %s)\n", s->error);
	else if (!s->n)
		printf("  (%s)\n", none);
}

static void print_plain(struct gw_top *t)
{
	const struct gw_top_snapshot *s = &t->snap;
	struct gw_top_proc *procs;
	char when[64], a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32],
		i2[32], j2[32];
	size_t np;

	if (t->down_since) {
		gw_top_fmt_clock(t, (double)t->down_since, true, when,
				 sizeof(when));
		printf("gpuwatch top: agent unreachable since %s: %s; "
		       "retrying\n",
		       when, t->down_why);
		if (!t->have_snap)
			return;
		printf("(last values shown)\n");
	}
	gw_top_fmt_clock(t, s->at, true, when, sizeof(when));
	printf("gpuwatch top - %s - %s - %zu GPU%s, %zu process%s, %zu "
	       "alert%s firing\n",
	       t->base, when, s->ngpus, s->ngpus == 1 ? "" : "s", s->nprocs,
	       s->nprocs == 1 ? "" : "es", s->alerts.n,
	       s->alerts.n == 1 ? "" : "s");
	printf("\nGPU  UTIL%%  MEM%%  MEM_MIB  TOTAL_MIB  TEMP_C  HBM_C  "
	       "POWER_W  LIMIT_W  SM_MHZ  MEM_MHZ  THROTTLE  NAME\n");
	for (size_t i = 0; i < s->ngpus; i++) {
		const struct gw_top_gpu *x = &s->gpus[i];

		if (x->up == 0) {
			printf("%-3s  LOST  %s\n", x->id, x->name);
			continue;
		}
		printf("%-3s  %5s  %4s  %7s  %9s  %6s  %5s  %7s  %7s  %6s  "
		       "%7s  %s  %s\n",
		       x->id, gw_top_num(a, sizeof(a), x->util, 0, 100),
		       gw_top_num(b, sizeof(b), x->mem_util, 0, 100),
		       gw_top_num(c, sizeof(c), x->mem_used, 0, 1.0 / 1048576),
		       gw_top_num(d, sizeof(d), x->mem_total, 0, 1.0 / 1048576),
		       gw_top_num(e, sizeof(e), x->temp, 0, 1),
		       gw_top_num(f, sizeof(f), x->hbm, 0, 1),
		       gw_top_num(g, sizeof(g), x->power, 0, 1),
		       gw_top_num(h, sizeof(h), x->limit, 0, 1),
		       gw_top_num(i2, sizeof(i2), x->sm_clock, 0, 1e-6),
		       gw_top_num(j2, sizeof(j2), x->mem_clock, 0, 1e-6),
		       x->throttle[0] ? x->throttle : "-",
		       x->name[0] ? x->name : "-");
	}
	if (!s->ngpus)
		printf("  (no GPUs: is the agent watching any?)\n");

	procs = calloc(s->nprocs ? s->nprocs : 1, sizeof(*procs));
	np = procs ? gw_top_shown_procs(t, procs) : 0;
	printf("\nPROCESSES (sorted by %s%s%s%s%s)\n",
	       gw_top_sort_names[t->sort], t->reverse ? ", reversed" : "",
	       t->filter[0] ? ", filter '" : "", t->filter,
	       t->filter[0] ? "'" : "");
	printf("PID       GPU  SM%%  MEM%%  GPU_MEM_MIB  COMM             "
	       "OWNER\n");
	for (size_t i = 0; i < np; i++)
		printf("%-8s  %-3s  %3s  %4s  %11s  %-15s  %s\n", procs[i].pid,
		       procs[i].gpu,
		       gw_top_num(a, sizeof(a), procs[i].sm, 0, 100),
		       gw_top_num(b, sizeof(b), procs[i].mem_util, 0, 100),
		       gw_top_num(c, sizeof(c), procs[i].mem, 0, 1.0 / 1048576),
		       procs[i].comm[0] ? procs[i].comm : "-",
		       procs[i].owner[0] ? procs[i].owner : "-");
	if (!np)
		printf("  (%s)\n", s->nprocs ? "none match the filter"
					     : "no GPU processes");
	free(procs);

	printf("\nTOP KERNELS (GPU time over the last minute)\n"
	       "GPU%%   CALLS/S  PID       COMM             KERNEL\n");
	for (size_t i = 0; i < s->kernels.n; i++) {
		const struct gw_top_row *w = &s->kernels.rows[i];

		printf("%5s  %7s  %-8s  %-15s  %s\n",
		       gw_top_num(a, sizeof(a), w->v, 1, 100),
		       gw_top_num(b, sizeof(b), w->v2, 1, 1), w->pid,
		       w->comm[0] ? w->comm : "-", w->what);
	}
	plain_section_note(&s->kernels,
			   "no kernel data: needs the CUPTI injection");

	printf("\nCUDA API ERRORS (per second over the last minute, and in "
	       "all)\n"
	       "ERR/S    TOTAL     PID       COMM             API CODE\n");
	for (size_t i = 0; i < s->errors.n; i++) {
		const struct gw_top_row *w = &s->errors.rows[i];

		printf("%7s  %8s  %-8s  %-15s  %s\n",
		       gw_top_num(a, sizeof(a), w->v2, 2, 1),
		       gw_top_num(b, sizeof(b), w->v, 0, 1), w->pid,
		       w->comm[0] ? w->comm : "-", w->what);
	}
	plain_section_note(&s->errors, "no API errors");

	printf("\nALERTS FIRING\nSINCE     ALERT                     "
	       "SEVERITY  LABELS\n");
	for (size_t i = 0; i < s->alerts.n; i++) {
		const struct gw_top_row *w = &s->alerts.rows[i];

		gw_top_fmt_clock(t, w->v, false, when, sizeof(when));
		printf("%-8s  %-24s  %-8s  %s\n", when, w->comm,
		       w->extra[0] ? w->extra : "-", w->what);
	}
	plain_section_note(&s->alerts, "none");
	fflush(stdout);
}

int64_t gw_top_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int run_plain(struct gw_top *t)
{
	for (long i = 0; !stop_flag; i++) {
		int64_t start = gw_top_mono_ms(), left;
		int err = gw_top_update(t);

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
		left = start + t->interval_ms - gw_top_mono_ms();
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
	O_INTERVAL = 256,
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
		GW_CLIENT_LONGOPTS,
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
	struct gw_client cl = { 0 };
	struct gw_top *t;
	struct sigaction sa;
	const char *term;
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
	t->stop = &stop_flag;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		rc = 2;
		switch (ch) {
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
			for (n = 0; n < GW_TOP_SORT_N; n++)
				if (strcmp(optarg, gw_top_sort_names[n]) == 0)
					break;
			if (n == GW_TOP_SORT_N) {
				rc = bad("--sort '%s' is none of mem, util, "
					 "memutil, pid, gpu, comm",
					 optarg);
				goto out;
			}
			t->sort = (enum gw_top_sort)n;
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
			snprintf(t->filter, sizeof(t->filter), "%s", optarg);
			break;
		case O_UTC:
			t->utc = true;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			if (gw_client_opt(&cl, ch, optarg))
				break;
			rc = bad("bad option '%s'", argv[optind - 1]);
			goto out;
		}
	}
	if (optind != argc) {
		rc = bad("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (gw_client_finish(&cl, "gpuwatch top", DEFAULT_URL)) {
		rc = 2;
		goto out;
	}
	snprintf(t->base, sizeof(t->base), "%s", cl.base);

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
	gw_client_apply(&cl, t->curl);

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
		rc = gw_top_run_screen(t);
	curl_easy_cleanup(t->curl);
out_curl:
	curl_global_cleanup();
out:
	gw_client_release(&cl);
	gw_top_snapshot_release(&t->snap);
	free(t);
	return rc;
}
