/* SPDX-License-Identifier: MIT */
/*
 * table.h - StatsD aggregation: parsed lines (statsd.h) in, Prometheus
 * samples (pipeline/metrics.h) out.
 *
 * A series is (kind, sanitised name, sorted tags).  What each type becomes:
 *
 *   c         NAME_total counter (NAME if it already ends in _total); each
 *             value adds value / rate.
 *   g         NAME gauge; "+v"/"-v" add to it, "v" sets it.
 *   ms        NAME_seconds (NAME if it ends in _seconds), values / 1000;
 *   h, d      NAME, values as sent; both as a summary-like trio:
 *               NAME{quantile="0.5"|"0.9"|"0.95"|"0.99"} gauges over the
 *                 window (see below), from a DDSketch (1% relative error);
 *                 absent while the window holds no value;
 *               NAME_count, NAME_sum: since the series began, each value
 *                 weighted 1 / rate (the sketch weighs it round(1 / rate)).
 *             The registry has no summary type, so the three are exported
 *             as gauge families (valid in both exposition formats; linters
 *             remark on the quantile label and the _count suffix).
 *   s         NAME gauge: distinct values seen in the window, exactly, up
 *             to GW_STATSD_SET_MAX per period (more are refused, counted).
 *
 * The window: time is cut into periods of window_s (default 10 s) and a
 * series keeps two, the current and the previous; quantiles and set sizes
 * are over both, so over the last window_s to 2 * window_s seconds.  The
 * window does not depend on --interval.
 *
 * Expiry: a series with no value for ttl_s (default 300 s) is dropped at
 * the next publish (a counter restarting later is a counter reset).
 *
 * Caps and refusals (counted by reason, see gw_statsd_table_stats): a new
 * series beyond max_series; a tag value that would be the
 * (max_tag_values + 1)th distinct value of its tag name, over all series;
 * a name whose exported family already exists with another type; exported
 * names starting with "gpuwatch_" (ours).
 *
 * Memory: all state is allocated when a series or a family is created; a
 * line for an existing series allocates nothing (except a sketch or set
 * growing).  Every allocation is accounted (its size plus
 * GW_STATSD_ALLOC_OVERHEAD for the allocator's own): series, keys, label
 * text, tag values and names, families, the hash tables, set tables and
 * sketch bins.  What would take the total past max_bytes is refused
 * (reason "memory"): a new series, a set value that needs a bigger table
 * (the value is not counted), a summary value that needs more sketch bins
 * (count and sum still take it, the quantiles miss it).  So the table
 * holds at most max_bytes, whatever the other caps; without the budget a
 * set series could take 2 x 64 KiB and a summary 2 x 32 KiB, 1.3 GB at
 * the default 10000 series.  Freed memory is given back to the budget at
 * once.  Families handed to a snap stay valid until the publish after
 * the one that stopped listing them, so publish the snap into the
 * registry before calling gw_statsd_table_publish again.
 *
 * Not thread-safe: one owner (the collector thread).  Errors: 0 or -errno.
 */
#ifndef GW_STATSD_TABLE_H
#define GW_STATSD_TABLE_H

#include <stdint.h>

#include "collect/statsd/statsd.h"
#include "pipeline/metrics.h"

#define GW_STATSD_SET_MAX 4096 /* distinct set values per period */
/* The memory budget when none is given: --statsd-max-memory's default. */
#define GW_STATSD_MAX_BYTES_DEFAULT (64ull << 20)

struct gw_statsd_table_opts {
	unsigned int max_series;      /* >= 1 */
	unsigned int max_tag_values;  /* >= 1 */
	double window_s;	      /* 0 = 10 */
	double ttl_s;		      /* 0 = 300 */
	unsigned long long max_bytes; /* 0 = GW_STATSD_MAX_BYTES_DEFAULT */
};

enum gw_statsd_refusal {
	GW_STATSD_REFUSED_SERIES = 1, /* max_series reached */
	GW_STATSD_REFUSED_TAG_VALUES, /* max_tag_values of a tag reached */
	GW_STATSD_REFUSED_TYPE,	      /* name already used by another type */
	GW_STATSD_REFUSED_RESERVED,   /* gpuwatch_* */
	GW_STATSD_REFUSED_SET_FULL,   /* a set value beyond GW_STATSD_SET_MAX */
	GW_STATSD_REFUSED_NOMEM,      /* out of memory creating a series */
	GW_STATSD_REFUSED_MEMORY,     /* max_bytes reached */
	GW_STATSD_NREFUSALS
};

struct gw_statsd_table_stats {
	uint64_t series;		       /* live */
	uint64_t expired;		       /* since creation */
	uint64_t refused[GW_STATSD_NREFUSALS]; /* by reason, [0] unused */
	uint64_t bytes;			       /* accounted, <= max_bytes */
	uint64_t max_bytes;		       /* the budget in use */
};

#define GW_STATSD_ALLOC_OVERHEAD 16

struct gw_statsd_table;

__attribute__((warn_unused_result)) int
gw_statsd_table_new(const struct gw_statsd_table_opts *o,
		    struct gw_statsd_table **out);
void gw_statsd_table_free(struct gw_statsd_table *t);

/*
 * Applies a parsed line (GW_STATSD_OK) at time now (CLOCK_MONOTONIC
 * seconds, non-decreasing).  Returns 0, or the refusal (> 0), also
 * counted.  A set line may be applied in part (values beyond the set's
 * cap are refused, the others kept).
 */
int gw_statsd_table_add(struct gw_statsd_table *t,
			const struct gw_statsd_line *l, double now);

/* Expires idle series, then adds one sample set per series to s. */
void gw_statsd_table_publish(struct gw_statsd_table *t, struct gw_snap *s,
			     double now);

void gw_statsd_table_stats(const struct gw_statsd_table *t,
			   struct gw_statsd_table_stats *st);

/* "series", "tag_values", "type_conflict", "reserved_name", "set_full",
 * "nomem", "memory". */
const char *gw_statsd_refusal_name(enum gw_statsd_refusal r);

#endif
