/* SPDX-License-Identifier: MIT */
/*
 * top.h - the parts of `gpuwatch top` (docs/top.md): one snapshot of a node
 * read from an agent's query API (top_fetch.c), shown as plain text
 * (top.c, which also holds the command) or full screen with ncurses
 * (top_screen.c).
 *
 * struct gw_top is the command's one context: options, the libcurl handle,
 * the snapshot shown and the view's state (sort, filter).  Single
 * threaded; nothing here is shared between threads.
 */
#ifndef GW_CLI_TOP_H
#define GW_CLI_TOP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>

#define MAX_ROWS   10 /* kernels, API errors, alerts: the top 10 */
#define FILTER_MAX 64

struct gw_top_gpu {
	char id[16]; /* the gpu label */
	char name[64];
	double up, util, mem_util, mem_used, mem_total, temp, hbm, power, limit,
		sm_clock, mem_clock;
	char throttle[160]; /* active reasons, comma separated */
};

struct gw_top_proc {
	char pid[16], gpu[16], comm[32], owner[96];
	double sm, mem_util, mem, age;
};

struct gw_top_row {
	char pid[16], comm[32], what[160], extra[64];
	double v, v2;
};

struct gw_top_section {
	struct gw_top_row rows[MAX_ROWS];
	size_t n;
	char error[160]; /* the agent refused the query: its reason */
};

struct gw_top_snapshot {
	struct gw_top_gpu *gpus;
	size_t ngpus;
	struct gw_top_proc *procs;
	size_t nprocs;
	struct gw_top_section kernels, errors, alerts;
	double at; /* evaluation time (Unix s); NAN when nothing came back */
	double fast_interval; /* the agent's fast set period (s) */
};

enum gw_top_sort {
	GW_TOP_SORT_MEM,
	GW_TOP_SORT_SM,
	GW_TOP_SORT_MEMUTIL,
	GW_TOP_SORT_PID,
	GW_TOP_SORT_GPU,
	GW_TOP_SORT_COMM,
	GW_TOP_SORT_N
};

struct gw_top {
	char base[1024];
	const char *fixed_time; /* --time, as sent ("secs.mmm"), or NULL */
	char fixed_time_buf[32];
	int64_t interval_ms;
	bool once, plain, utc;
	long iterations; /* --iterations; 0: until stopped */

	CURL *curl; /* one handle: the connection is kept */
	struct gw_top_snapshot snap;
	bool have_snap;
	time_t down_since; /* 0 while the agent answers */
	char down_why[256];
	long refreshes, failures;

	enum gw_top_sort sort;
	bool reverse;
	char filter[FILTER_MAX + 1];
	bool editing; /* typing a filter after '/' */
	char edit[FILTER_MAX + 1];
	bool quit;		     /* q was pressed */
	volatile sig_atomic_t *stop; /* set by SIGINT, SIGTERM, SIGHUP */
};

extern const char *const gw_top_sort_names[GW_TOP_SORT_N];

/*
 * top_fetch.c.  gw_top_update() reads a new snapshot into t->snap: 0; or
 * -EHOSTUNREACH (not reached, not the API, or a 5xx) or -EINVAL (the GPU
 * query refused), with t->down_since and t->down_why set and the previous
 * snapshot kept.  A section's own refusal is kept in its error, not
 * returned.
 */
__attribute__((warn_unused_result)) int gw_top_update(struct gw_top *t);
void gw_top_snapshot_release(struct gw_top_snapshot *s);
/* GPU ids and pids in numeric order where they are numbers. */
int gw_top_id_cmp(const char *a, const char *b);

/* top.c: what both faces show. */
/* The processes passing the filter, in the chosen order, into OUT (room
 * for t->snap.nprocs); returns how many. */
size_t gw_top_shown_procs(const struct gw_top *t, struct gw_top_proc *out);
void gw_top_fmt_clock(const struct gw_top *t, double secs, bool date, char *out,
		      size_t n);
/* "%.*f" of v * scale, or "-" when v is not finite; returns buf. */
const char *gw_top_num(char *buf, size_t n, double v, int decimals,
		       double scale);
/* sw_power_cap,gpu_idle -> pwr-cap,idle */
void gw_top_short_reasons(const char *in, char *out, size_t n);
int64_t gw_top_mono_ms(void);

/* top_screen.c: the full-screen view until q or *t->stop; 0, or 1 when
 * the terminal cannot be set up. */
int gw_top_run_screen(struct gw_top *t);

#endif
