/* SPDX-License-Identifier: MIT */
/*
 * rw_agg.h - edge aggregation over labels, as VictoriaMetrics' stream
 * aggregation's `without:` does: the 1-minute windows of the series of one
 * gauge that differ only in the labels dropped (a process's `pid`) are
 * merged minute by minute into one group, whose outputs leave as
 * NAME:1m_without_LABELS_OUTPUT (LABELS the dropped names joined by '_').
 * The merged window is over every sample of every member: its count, sum,
 * sum of squares, minimum and maximum, so avg, min, max, stddev and
 * count_samples mean what they mean for one series (avg is the mean of
 * all the members' samples, not the mean of their means).  LABELS are the
 * names of without that the members carry, in without's order, so the
 * series of one label set are named as one `without:` of theirs would
 * name them (a process's gauge _without_pid, a link's _without_link).
 *
 * Summed groups (counters): the members' last values of each minute are
 * added up and leave under the counter's own name at the latest of their
 * times, so rate() works centrally.  A minute with fewer members than the
 * slice's fullest minute is left out rather than sent short (a central
 * rate() would read the dip as a reset): meant for labels whose members
 * persist, a GPU's NVLink links, not for a pid, whose members come and
 * go.  (A member gone for good lowers the sum once, from the next slice.)
 *
 * A group set lives for one slice of the remote_write queue (export/
 * rw_queue.c): gw_rw_agg_add() for each member series, then the groups in
 * a->g[0..n), each with its windows sorted by time, then gw_rw_agg_clear().
 *
 * Errors: 0 or -ENOMEM.  Thread safety: one set per thread.
 */
#ifndef GW_RW_AGG_H
#define GW_RW_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/labels.h"
#include "store/query.h"
#include "store/rollup.h"

struct gw_rw_agg_group {
	struct gw_labels labels; /* the members' labels less the dropped */
	unsigned int outs;	 /* outputs to send: 1 << GW_RW_OUT_* */
	int sum;		 /* a summed group (counters) */
	char tag[128];		 /* "_without_pid": the dropped names */
	struct gw_rollup *w;	 /* merged windows, by time; sketch unused */
	uint32_t *members;	 /* per window: members that reported */
	size_t n, cap;
	uint64_t key; /* hash of labels' key */
};

struct gw_rw_agg {
	struct gw_rw_agg_group *g;
	size_t n, cap;
	struct gw_buf buf;
};

/* 1 when labels hold any of the nwithout names. */
int gw_rw_agg_applies(const struct gw_labels *labels,
		      const char *const *without, size_t nwithout);

/* Adds series d (a gauge carrying some of without, or with sum a counter)
 * to its group, created with outputs outs when new. */
__attribute__((warn_unused_result)) int
gw_rw_agg_add(struct gw_rw_agg *a, const struct gw_series_data *d,
	      const char *const *without, size_t nwithout, unsigned int outs,
	      int sum);

/* Drops the minutes of summed groups that fewer members reported in than
 * in the slice's fullest minute; call once every member was added, before
 * sending. */
void gw_rw_agg_finish(struct gw_rw_agg *a);

/* A new, empty set. */
void gw_rw_agg_init(struct gw_rw_agg *a);

/* Empties the set, keeping its memory for the next slice. */
void gw_rw_agg_clear(struct gw_rw_agg *a);
void gw_rw_agg_release(struct gw_rw_agg *a);

#endif
