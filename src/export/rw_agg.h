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
 * all the members' samples, not the mean of their means).
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
	struct gw_rollup *w;	 /* merged windows, by time; sketch unused */
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

/* Adds series d (a gauge carrying some of without) to its group, created
 * with outputs outs when new. */
__attribute__((warn_unused_result)) int
gw_rw_agg_add(struct gw_rw_agg *a, const struct gw_series_data *d,
	      const char *const *without, size_t nwithout, unsigned int outs);

/* A new, empty set. */
void gw_rw_agg_init(struct gw_rw_agg *a);

/* Empties the set, keeping its memory for the next slice. */
void gw_rw_agg_clear(struct gw_rw_agg *a);
void gw_rw_agg_release(struct gw_rw_agg *a);

#endif
