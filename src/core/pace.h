/* SPDX-License-Identifier: MIT */
/*
 * pace.h - the CPU governor: keeps the agent inside its CPU budget by
 * stretching the collection intervals, detail set first.
 *
 * Every window the agent measures its own CPU share and calls
 * gw_pace_update().  Over budget: double the detail interval (up to 8x its
 * configured value), and only when that is exhausted, double the fast
 * interval (up to 8x).  Under half the budget: undo in reverse order, fast
 * set first.  Pure logic, no clocks, so it is unit-tested directly.
 */
#ifndef GW_PACE_H
#define GW_PACE_H

#define GW_PACE_MAX_STRETCH 8.0

struct gw_pace {
	double base_fast, base_detail; /* configured, seconds */
	double fast, detail;	       /* in use, seconds */
};

void gw_pace_init(struct gw_pace *p, double fast, double detail);
/* Returns 1 when an interval changed. */
int gw_pace_update(struct gw_pace *p, double cpu_share, double budget);
/* The window over which the CPU share is measured, seconds. */
double gw_pace_window(const struct gw_pace *p);

#endif
