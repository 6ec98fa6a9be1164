/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - the last-value metric registry behind /metrics.
 *
 * Producers (collectors) build a struct gw_snap off-lock - a batch of
 * samples with their labels - and publish it into a slot they own in the
 * registry.  Publishing swaps buffers under the registry's mutex, so a
 * producer never holds the lock while it talks to hardware, and a scrape
 * never waits on a collector: it renders whatever was published last.
 * Series that a producer stops publishing disappear with its next publish;
 * a producer that wants an exited process's series to stay a while keeps
 * them itself and publishes them again (pipeline/linger.h).
 *
 * Families are static descriptors (struct gw_family): the agent's own are
 * the metric catalogue's entries (pipeline/catalog.h, GW_FAM()); families
 * named at run time (StatsD) are owned by their producer.  The registry
 * keeps pointers to them.  Label strings are copied.
 *
 * Bounds: a snap holds at most GW_SNAP_MAX_SAMPLES samples and
 * GW_SNAP_MAX_LABEL_BYTES of label text; what does not fit is counted in
 * snap->dropped and reported as gpuwatch_agent_dropped_samples_total.
 *
 * Thread safety: a snap has one owner.  The registry is safe for concurrent
 * publish and render.
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/labels.h"

enum gw_metric_type {
	GW_GAUGE,
	GW_COUNTER,   /* name ends in _total */
	GW_INFO,      /* gauge fixed at 1, name ends in _info */
	GW_HISTOGRAM, /* _bucket{le}, _sum and _count samples */
	GW_SUMMARY,   /* {quantile}, _sum and _count samples */
};

struct gw_family {
	const char *name;
	const char *help;
	enum gw_metric_type type;
};

/* OpenMetrics' word for a type: gauge, counter, info, histogram, summary. */
const char *gw_metric_type_name(enum gw_metric_type t);

#define GW_SNAP_MAX_SAMPLES	65536
#define GW_SNAP_MAX_LABEL_BYTES (4u << 20)

enum gw_sample_kind {
	GW_SAMPLE_PLAIN,
	GW_SAMPLE_BUCKET, /* a histogram's name_bucket{le} */
	GW_SAMPLE_SUM,
	GW_SAMPLE_COUNT,
	GW_SAMPLE_QUANTILE, /* a summary's name{quantile} */
};

struct gw_sample {
	const struct gw_family *fam;
	uint32_t labels; /* offset into the snap's label arena */
	uint32_t labels_len;
	double value;
	double le; /* upper bound (GW_SAMPLE_BUCKET) or quantile
			     * (GW_SAMPLE_QUANTILE) */
	enum gw_sample_kind kind;
};

struct gw_snap {
	struct gw_sample *v;
	size_t n, cap;
	struct gw_buf labels;
	uint64_t dropped;
};

void gw_snap_init(struct gw_snap *s);
void gw_snap_release(struct gw_snap *s);
void gw_snap_reset(struct gw_snap *s);

/*
 * Adds one sample.  base is an already-formatted label list such as
 * `gpu="0",uuid="GPU-..."` (or "" or NULL); it is followed by zero or more
 * name/value pairs ending with NULL, whose values are escaped here.
 * A NaN value is skipped (nothing was measured).  Never fails: a sample that
 * does not fit is counted in s->dropped.
 */
void gw_snap_add(struct gw_snap *s, const struct gw_family *f, double value,
		 const char *base, ...) __attribute__((sentinel));

/*
 * Adds a histogram: counts[i] observations in (bounds[i-1], bounds[i]] for
 * i < n, and counts[n] above bounds[n-1]; the buckets are rendered
 * cumulative with a final le="+Inf".  Labels as for gw_snap_add.
 */
void gw_snap_add_histogram(struct gw_snap *s, const struct gw_family *f,
			   const double *bounds, const uint64_t *counts,
			   size_t n, double sum, const char *base, ...)
	__attribute__((sentinel));

/*
 * Adds a summary: values[i] is the quantile q[i] (0..1) for i < n (n may be
 * 0: nothing observed lately), then _sum and _count.  Labels as for
 * gw_snap_add.
 */
void gw_snap_add_summary(struct gw_snap *s, const struct gw_family *f,
			 const double *q, const double *values, size_t n,
			 double count, double sum, const char *base, ...)
	__attribute__((sentinel));

/*
 * Appends to dst the samples of src whose label list begins with the whole
 * label list prefix (`pid="42",comm="train"` selects `pid="42",comm=
 * "train",api="cudaMalloc"` but not `pid="421",...`); NULL or "" selects
 * every sample.  Returns how many were appended; what does not fit is
 * counted in dst->dropped.
 */
size_t gw_snap_copy(struct gw_snap *dst, const struct gw_snap *src,
		    const char *prefix);

struct gw_registry;

enum gw_expo_format {
	GW_EXPO_TEXT_004,    /* text/plain; version=0.0.4 */
	GW_EXPO_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

#define GW_REGISTRY_MAX_SLOTS 512

struct gw_registry *gw_registry_new(void);
void gw_registry_free(struct gw_registry *r);

/* Reserves a slot for one producer; returns its id or -ENOSPC. */
__attribute__((warn_unused_result)) int gw_registry_slot(struct gw_registry *r,
							 const char *owner);
/*
 * Publishes s into slot: the registry takes the samples and hands back the
 * previous buffer, reset, for the producer to refill.  Drops are accounted.
 */
void gw_registry_publish(struct gw_registry *r, int slot, struct gw_snap *s);

/*
 * Renders every published sample, families grouped and sorted by name.
 * 0, -ENOMEM, or out's error, which stays in out as after gw_buf_put().
 */
__attribute__((warn_unused_result)) int
gw_registry_render(struct gw_registry *r, enum gw_expo_format fmt,
		   struct gw_buf *out);

struct gw_registry_stats {
	uint64_t series;
	uint64_t dropped;    /* samples that did not fit, since start */
	uint64_t duplicates; /* identical series hidden by the last render */
};
void gw_registry_stats(struct gw_registry *r, struct gw_registry_stats *st);

/* One sample as the store sees it. */
struct gw_visit {
	const char *name;   /* family name + _bucket/_sum/_count */
	const char *labels; /* exposition form, le="..." added for buckets */
	double value;
	int64_t t_ms;		  /* when its producer published it */
	enum gw_metric_type type; /* of its family */
	enum gw_sample_kind kind; /* plain, bucket, sum, count or quantile */
};
typedef void (*gw_registry_visit_fn)(void *ctx, const struct gw_visit *v);

/*
 * Calls fn for every sample of the slots published since the last visit:
 * gens (GW_REGISTRY_MAX_SLOTS entries, zeroed before the first call)
 * remembers each slot's publish count.  fn runs under the registry's lock:
 * it must be quick and must not call the registry.  Returns the samples
 * visited.
 */
size_t gw_registry_visit(struct gw_registry *r, uint64_t *gens,
			 gw_registry_visit_fn fn, void *ctx);

/* Picks the format asked for by an HTTP Accept header (NULL = text). */
enum gw_expo_format gw_expo_negotiate(const char *accept);
const char *gw_expo_content_type(enum gw_expo_format fmt);

#endif
