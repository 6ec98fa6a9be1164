/* SPDX-License-Identifier: MIT */
/*
 * catalog.h - the metric catalogue: every family the agent names itself,
 * with its type, unit, label names and help text, and dcgm-exporter's
 * names (--compat dcgm) with the family of ours each one mirrors.  The
 * rows are in catalog.def.
 *
 * Producers publish through these entries, GW_FAM(GPU_POWER_WATTS), and
 * never spell a name or a help text themselves; the registry renders
 * # HELP and # TYPE from the entry's struct gw_family.  The dcgm-compat
 * mapping is data here: a collector hands over a reading of one of our
 * families and gw_catalog_dcgm() says under which dcgm-exporter name, if
 * any, it is also exposed.  docs/metrics.md is gw_catalog_markdown()'s
 * output (`gpuwatch help --metrics-markdown`);
 * tests/integration/t0003-metrics-catalog.sh checks the two agree and
 * that a running agent's series carry only the labels listed.
 *
 * Not here: families named from outside (StatsD application metrics,
 * recording rules, NAME:anomaly_score).
 *
 * Thread safety: constant data; every function may be called from any
 * thread.
 */
#ifndef GW_CATALOG_H
#define GW_CATALOG_H

#include "common/buf.h"
#include "pipeline/metrics.h"

/* The part of the agent that publishes a family; the docs' sections. */
enum gw_catalog_source {
	GW_CATALOG_SRC_NVML,
	GW_CATALOG_SRC_DCGM,
	GW_CATALOG_SRC_CUPTI,
	GW_CATALOG_SRC_EBPF,
	GW_CATALOG_SRC_STATSD,
	GW_CATALOG_SRC_SELF,
	GW_CATALOG_SRC_STORE,
	GW_CATALOG_SRC_RULES,
	GW_CATALOG_SRC_REMOTE,
	GW_CATALOG_SRC_COUNT
};

enum gw_catalog_id {
#define GW_METRIC(id, ...)  GW_CATALOG_##id,
#define GW_SETTING(id, ...) GW_CATALOG_##id,
#define GW_DCGM(id, ...)    GW_CATALOG_##id,
#include "pipeline/catalog.def"
#undef GW_METRIC
#undef GW_SETTING
#undef GW_DCGM
	GW_CATALOG_COUNT
};

struct gw_catalog_entry {
	struct gw_family fam; /* name, help, type: what /metrics shows */
	enum gw_catalog_source source;
	const char *unit;   /* base unit; "" for counts, "state" for 0/1 */
	int setting;	    /* a GW_SETTING row: a gauge that moves in steps */
	const char *labels; /* label names, comma-separated */
	/* dcgm-exporter names only (source GW_CATALOG_SRC_DCGM): */
	int dcgm_of;		/* enum gw_catalog_id of ours; -1 otherwise */
	const char *dcgm_label; /* with dcgm_value, selects of's series; */
	const char *dcgm_value; /* NULL: of has one series per GPU */
	const char *dcgm_note;	/* how the readings differ, or NULL */
};

extern const struct gw_catalog_entry gw_catalog[GW_CATALOG_COUNT];

/* The family of catalogue row ID (catalog.def), for gw_snap_add(). */
#define GW_FAM(id) (&gw_catalog[GW_CATALOG_##id].fam)

/*
 * The dcgm-exporter family that mirrors our family `of`, for the series
 * whose selecting label has value (NULL for a family with one series per
 * GPU), or NULL when dcgm-exporter has no such name.
 */
const struct gw_family *gw_catalog_dcgm(enum gw_catalog_id of,
					const char *value);

/*
 * Appends docs/metrics.md - the catalogue as Markdown tables, one section
 * per source - to out.  0, or -ENOSPC/-ENOMEM from out.
 */
__attribute__((warn_unused_result)) int gw_catalog_markdown(struct gw_buf *out);

#endif
