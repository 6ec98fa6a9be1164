/* SPDX-License-Identifier: MIT */
/*
 * top_screen.c - `gpuwatch top` full screen (ncurses): the GPU lines with
 * bars, the process table, the sections below it, the help line, and the
 * keys.  Redraws on every refresh, key and resize; nothing below the
 * snapshot is kept between frames.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "cli/top.h"

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

static int draw_gpus(struct gw_top *t, int y, int rows)
{
	const struct gw_top_snapshot *s = &t->snap;
	int w = COLS < 80 ? 80 : COLS, barw = 16 + (w - 80) / 3;
	char a[32], b[32], txt[64], thr[160];
	int x, fit;

	put(y++, 0, A_BOLD,
	    "GPU %-*s %-*s TEMP/HBM POWER/LIMIT  SM MHz THROTTLE", barw, "UTIL",
	    barw, "MEM");
	/* the last row says how many GPUs did not fit */
	fit = (int)s->ngpus > rows ? rows - 1 : rows;
	for (size_t i = 0; i < s->ngpus && (int)i < fit; i++, y++) {
		const struct gw_top_gpu *g = &s->gpus[i];

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
			 gw_top_num(a, sizeof(a), g->util, 0, 100));
		bar(y, x, barw, g->util, txt);
		x += barw + 1;
		snprintf(txt, sizeof(txt), "%s/%sG",
			 gw_top_num(a, sizeof(a), g->mem_used, 0,
				    1.0 / 1073741824),
			 gw_top_num(b, sizeof(b), g->mem_total, 0,
				    1.0 / 1073741824));
		bar(y, x, barw,
		    g->mem_total > 0 ? g->mem_used / g->mem_total : NAN, txt);
		x += barw + 1;
		put(y, x,
		    level(g->hbm >= 95 || g->temp >= 87 ? 1
			  : g->temp >= 80		? 0.8
							: 0),
		    "%3s/%-3sC", gw_top_num(a, sizeof(a), g->temp, 0, 1),
		    gw_top_num(b, sizeof(b), g->hbm, 0, 1));
		x += 9;
		put(y, x, level(g->limit > 0 ? g->power / g->limit * 0.95 : 0),
		    "%4s/%-4sW", gw_top_num(a, sizeof(a), g->power, 0, 1),
		    gw_top_num(b, sizeof(b), g->limit, 0, 1));
		x += 11;
		put(y, x, A_NORMAL, "%6s",
		    gw_top_num(a, sizeof(a), g->sm_clock, 0, 1e-6));
		x += 7;
		gw_top_short_reasons(g->throttle, thr, sizeof(thr));
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

static const char *sort_mark(const struct gw_top *t, enum gw_top_sort k)
{
	if (t->sort != k)
		return " ";
	/* numbers default to largest first, names to smallest first */
	return (k <= GW_TOP_SORT_MEMUTIL) != t->reverse ? "v" : "^";
}

static int draw_procs(struct gw_top *t, int y, int rows)
{
	struct gw_top_proc *procs =
		calloc(t->snap.nprocs ? t->snap.nprocs : 1, sizeof(*procs));
	size_t np = procs ? gw_top_shown_procs(t, procs) : 0;
	char a[32], b[32], c[32];
	int fit;

	put(y, 0, A_REVERSE, "%-*s", COLS, "");
	put(y++, 0, A_REVERSE,
	    "     PID%s GPU%s  SM%%%s MEM%%%s GPU-MEM%s COMM%s           "
	    "OWNER",
	    sort_mark(t, GW_TOP_SORT_PID), sort_mark(t, GW_TOP_SORT_GPU),
	    sort_mark(t, GW_TOP_SORT_SM), sort_mark(t, GW_TOP_SORT_MEMUTIL),
	    sort_mark(t, GW_TOP_SORT_MEM), sort_mark(t, GW_TOP_SORT_COMM));
	/* ROWS counts the header; the last row says how many did not fit */
	fit = (int)np > rows - 1 ? rows - 2 : rows - 1;
	for (size_t i = 0; i < np && (int)i < fit; i++)
		put(y++, 0, A_NORMAL, "%8s %3s %5s %5s %7sM %-15s %s",
		    procs[i].pid, procs[i].gpu,
		    gw_top_num(a, sizeof(a), procs[i].sm, 0, 100),
		    gw_top_num(b, sizeof(b), procs[i].mem_util, 0, 100),
		    gw_top_num(c, sizeof(c), procs[i].mem, 0, 1.0 / 1048576),
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
static int draw_section(struct gw_top *t, int y, int rows, const char *title,
			const struct gw_top_section *s)
{
	char a[32], b[32], when[32];

	put(y++, 0, A_BOLD, "%s", title);
	if (s->error[0]) {
		put(y++, 2, A_DIM, "the agent refused the query: %s", s->error);
		return y;
	}
	for (size_t i = 0; i < s->n && (int)i < rows; i++) {
		const struct gw_top_row *w = &s->rows[i];

		if (s == &t->snap.alerts) {
			gw_top_fmt_clock(t, w->v, false, when, sizeof(when));
			put(y++, 2,
			    has_colors() ? COLOR_PAIR(C_BAD) | A_BOLD : A_BOLD,
			    "%-24s %-8s since %s  %s", w->comm,
			    w->extra[0] ? w->extra : "-", when, w->what);
		} else if (s == &t->snap.kernels) {
			put(y++, 2, A_NORMAL, "%5s%% %8s/s %8s %-12.12s %s",
			    gw_top_num(a, sizeof(a), w->v, 1, 100),
			    gw_top_num(b, sizeof(b), w->v2, 1, 1), w->pid,
			    w->comm[0] ? w->comm : "-", w->what);
		} else {
			put(y++, 2, A_NORMAL, "%7s/s %7s %8s %-12.12s %s",
			    gw_top_num(a, sizeof(a), w->v2, 2, 1),
			    gw_top_num(b, sizeof(b), w->v, 0, 1), w->pid,
			    w->comm[0] ? w->comm : "-", w->what);
		}
	}
	return y;
}

static int lines_of(const struct gw_top_section *s, int cap)
{
	if (s->error[0])
		return 2;
	return s->n ? 1 + ((int)s->n < cap ? (int)s->n : cap) : 0;
}

static void draw(struct gw_top *t)
{
	const struct gw_top_snapshot *s = &t->snap;
	char when[64], since[64];
	int y = 0, gpu_rows, bottom, proc_rows, cap = 3;
	bool quiet;

	erase();
	gw_top_fmt_clock(t, s->at, t->fixed_time != NULL, when, sizeof(when));
	put(0, 0, A_BOLD, "gpuwatch top  %s  %s  %zu GPU%s  %zu alert%s",
	    t->base, t->have_snap ? when : "", s->ngpus,
	    s->ngpus == 1 ? "" : "s", s->alerts.n, s->alerts.n == 1 ? "" : "s");
	y = 1;
	if (t->down_since) {
		gw_top_fmt_clock(t, (double)t->down_since, false, since,
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
		    t->filter[0] ? "]" : "", gw_top_sort_names[t->sort],
		    t->reverse ? " rev" : "");
	refresh();
}

static void key(struct gw_top *t, int ch, bool *now)
{
	size_t n;

	if (t->editing) {
		n = strlen(t->edit);
		if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
			snprintf(t->filter, sizeof(t->filter), "%s", t->edit);
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
		t->quit = true;
		break;
	case '/':
		t->editing = true;
		snprintf(t->edit, sizeof(t->edit), "%s", t->filter);
		break;
	case 27:
		t->filter[0] = '\0';
		break;
	case 'm':
		t->sort = GW_TOP_SORT_MEM;
		break;
	case 'u':
		t->sort = GW_TOP_SORT_SM;
		break;
	case 'e':
		t->sort = GW_TOP_SORT_MEMUTIL;
		break;
	case 'p':
		t->sort = GW_TOP_SORT_PID;
		break;
	case 'g':
		t->sort = GW_TOP_SORT_GPU;
		break;
	case 'c':
		t->sort = GW_TOP_SORT_COMM;
		break;
	case '>':
		t->sort = (enum gw_top_sort)((t->sort + 1) % GW_TOP_SORT_N);
		break;
	case '<':
		t->sort = (enum gw_top_sort)((t->sort + GW_TOP_SORT_N - 1) %
					     GW_TOP_SORT_N);
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

int gw_top_run_screen(struct gw_top *t)
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
	while (!*t->stop && !t->quit) {
		int64_t now = gw_top_mono_ms();
		bool again = false;
		int ch;

		if (now >= next) {
			if (gw_top_update(t)) {
				/* shown: "agent unreachable since" */
			}
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
