/* SPDX-License-Identifier: MIT */
/*
 * catalog.c - the metric catalogue's table, expanded from catalog.def, and
 * its rendering as docs/metrics.md (contract in catalog.h).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "pipeline/catalog.h"

#define GW_L_GPU     "gpu,uuid,pod,namespace,container"
#define GW_L_PROCESS "pid,comm,container_id,pod_uid,job"
#define GW_L_EXITED  "comm,container_id,pod_uid,job"
#define GW_L_DCGM    "gpu,UUID,device,modelName,pci_bus_id"

const struct gw_catalog_entry gw_catalog[GW_CATALOG_COUNT] = {
#define GW_METRIC(id, src, type, unit_, name, labels_, help)                   \
	[GW_CATALOG_##id] = { .fam = { name, help, GW_##type },                \
			      .source = GW_CATALOG_SRC_##src,                  \
			      .unit = unit_,                                   \
			      .labels = labels_,                               \
			      .dcgm_of = -1 },
#define GW_SETTING(id, src, unit_, name, labels_, help)                        \
	[GW_CATALOG_##id] = { .fam = { name, help, GW_GAUGE },                 \
			      .source = GW_CATALOG_SRC_##src,                  \
			      .unit = unit_,                                   \
			      .labels = labels_,                               \
			      .dcgm_of = -1,                                   \
			      .setting = 1 },
#define GW_DCGM(id, unit_, of, label, value, note, help)                       \
	[GW_CATALOG_##id] = { .fam = { #id, help, GW_GAUGE },                  \
			      .source = GW_CATALOG_SRC_DCGM,                   \
			      .unit = unit_,                                   \
			      .labels = GW_L_DCGM,                             \
			      .dcgm_of = GW_CATALOG_##of,                      \
			      .dcgm_label = label,                             \
			      .dcgm_value = value,                             \
			      .dcgm_note = note },
#include "pipeline/catalog.def"
#undef GW_METRIC
#undef GW_SETTING
#undef GW_DCGM
};

const struct gw_family *gw_catalog_dcgm(enum gw_catalog_id of,
					const char *value)
{
	for (size_t i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_catalog_entry *e = &gw_catalog[i];

		if (e->dcgm_of != (int)of)
			continue;
		if (!e->dcgm_value ||
		    (value && strcmp(e->dcgm_value, value) == 0))
			return &e->fam;
	}
	return NULL;
}

/* ---- docs/metrics.md ---- */

static const struct {
	const char *title;
	const char *intro;
} sections[GW_CATALOG_SRC_COUNT] = {
	[GW_CATALOG_SRC_NVML] = {
		"GPU hardware (NVML, or `--simulate`)",
		"Read from NVML every `--interval` (fast set) and "
		"`--detail-interval` (detail set); XID and ECC events as the "
		"driver reports them. See `internals/nvml.md`.",
	},
	[GW_CATALOG_SRC_DCGM] = {
		"dcgm-exporter names (`--compat dcgm`)",
		"Exposed beside ours with `--compat dcgm`, so that dashboards "
		"built for dcgm-exporter work unchanged: gauges with "
		"dcgm-exporter's labels and units, each mirroring one reading "
		"of ours.",
	},
	[GW_CATALOG_SRC_CUPTI] = {
		"CUDA inside processes (CUPTI injection)",
		"From processes that load `libgpuwatch_cupti.so` through "
		"`CUDA_INJECTION64_PATH`; off with `--no-cupti`. See "
		"`internals/cupti.md`.",
	},
	[GW_CATALOG_SRC_EBPF] = {
		"CUDA calls and process exits (eBPF)",
		"From probes on `libcudart` and `libcuda` in every process; "
		"off with `--no-ebpf`. See `internals/ebpf.md`. "
		"`gpuwatch_cuda_api_errors_total` and "
		"`gpuwatch_cuda_sync_wait_seconds_total` above come from here "
		"too, with `source=\"ebpf\"`.",
	},
	[GW_CATALOG_SRC_STATSD] = {
		"StatsD receiver",
		"The receiver's own counters. The application metrics it "
		"receives are named by the application: see "
		"`metrics-conventions.md`.",
	},
	[GW_CATALOG_SRC_SELF] = {
		"The agent itself",
		"What the agent costs and how it is doing.",
	},
	[GW_CATALOG_SRC_STORE] = {
		"Local store and baselines",
		"Off with `--no-store` and `--no-baselines`. See "
		"`internals/store.md` and `internals/baselines.md`.",
	},
	[GW_CATALOG_SRC_RULES] = {
		"Alert rules and Alertmanager",
		"See `internals/alerts.md` and `internals/alertmanager.md`.",
	},
	[GW_CATALOG_SRC_REMOTE] = {
		"remote_write",
		"Per endpoint (`remote_name`: its `name:`, or a hash of its "
		"URL), mirroring Prometheus' `prometheus_remote_storage_*`; "
		"what is pending, suppressed and pushed comes from the queue "
		"that reads the local store. See `remote-write.md` and "
		"`internals/remote-write-queue.md`.",
	},
};

/* Text in a table cell: '|' escaped. */
static void add_cell(struct gw_buf *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p == '|')
			gw_buf_puts(out, "\\|");
		else
			gw_buf_put(out, p, 1);
	}
}

/* `a`, `b`, *set named by the configuration* */
static void add_labels(struct gw_buf *out, const char *labels)
{
	for (const char *p = labels; *p;) {
		size_t n = strcspn(p, ",");

		if (p != labels)
			gw_buf_puts(out, ", ");
		if (p[0] == '<' && n > 2 && p[n - 1] == '>')
			gw_buf_putf(out, "*%.*s*", (int)(n - 2), p + 1);
		else
			gw_buf_putf(out, "`%.*s`", (int)n, p);
		p += n;
		if (*p == ',')
			p++;
	}
}

/* `name{label="value"}` of a dcgm-exporter row's mirrored series. */
static void add_mirrored(struct gw_buf *out, const struct gw_catalog_entry *e)
{
	const char *of = gw_catalog[e->dcgm_of].fam.name;

	if (e->dcgm_value)
		gw_buf_putf(out, "`%s{%s=\"%s\"}`", of, e->dcgm_label,
			    e->dcgm_value);
	else
		gw_buf_putf(out, "`%s`", of);
}

/* The dcgm-exporter names mirroring ours, or nothing. */
static void add_twins(struct gw_buf *out, int id)
{
	int n = 0;

	for (size_t i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_catalog_entry *e = &gw_catalog[i];

		if (e->dcgm_of != id)
			continue;
		gw_buf_putf(out, "%s`%s`", n++ ? ", " : "", e->fam.name);
		if (e->dcgm_value)
			gw_buf_putf(out, " (%s=\"%s\")", e->dcgm_label,
				    e->dcgm_value);
	}
}

static int has_twins(enum gw_catalog_source src)
{
	for (size_t i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_catalog_entry *e = &gw_catalog[i];

		if (e->dcgm_of >= 0 && gw_catalog[e->dcgm_of].source == src)
			return 1;
	}
	return 0;
}

/* The cells every table starts with: name, type, unit, labels. */
static void add_row_head(struct gw_buf *out, const struct gw_catalog_entry *e)
{
	gw_buf_putf(out, "| `%s` | %s%s | ", e->fam.name,
		    gw_metric_type_name(e->fam.type),
		    e->setting ? " (setting)" : "");
	add_cell(out, e->unit);
	gw_buf_puts(out, " | ");
	add_labels(out, e->labels);
}

static void add_dcgm_section(struct gw_buf *out)
{
	gw_buf_puts(out, "| name | type | unit | labels | mirrors | "
			 "meaning |\n|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_catalog_entry *e = &gw_catalog[i];

		if (e->source != GW_CATALOG_SRC_DCGM)
			continue;
		add_row_head(out, e);
		gw_buf_puts(out, " | ");
		add_mirrored(out, e);
		if (e->dcgm_note) {
			gw_buf_puts(out, "; ");
			add_cell(out, e->dcgm_note);
		}
		gw_buf_puts(out, " | ");
		add_cell(out, e->fam.help);
		gw_buf_puts(out, " |\n");
	}
}

static void add_section(struct gw_buf *out, enum gw_catalog_source src)
{
	int twins = has_twins(src);

	gw_buf_putf(out,
		    "| name | type | unit | labels |%s "
		    "meaning |\n|---|---|---|---|%s---|\n",
		    twins ? " dcgm-exporter |" : "", twins ? "---|" : "");
	for (size_t i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_catalog_entry *e = &gw_catalog[i];

		if (e->source != src)
			continue;
		add_row_head(out, e);
		if (twins) {
			gw_buf_puts(out, " | ");
			add_twins(out, (int)i);
		}
		gw_buf_puts(out, " | ");
		add_cell(out, e->fam.help);
		gw_buf_puts(out, " |\n");
	}
}

int gw_catalog_markdown(struct gw_buf *out)
{
	gw_buf_puts(
		out,
		"# Metrics\n"
		"\n"
		"<!-- Generated from src/pipeline/catalog.def by `gpuwatch "
		"help "
		"--metrics-markdown`;\n"
		"     edit that file, not this one "
		"(tests/integration/t0003-metrics-catalog.sh). -->\n"
		"\n"
		"Every metric family the agent names itself, as `/metrics` "
		"shows it; the\n"
		"meaning is the family's `# HELP` text. Label lists name every "
		"label a series\n"
		"may carry: `container_id`, `pod_uid` and `job` only where the "
		"process has\n"
		"them (`internals/attribution.md`); histograms add `le`. "
		"Application metrics\n"
		"sent over StatsD are named by the application: see "
		"`metrics-conventions.md`.\n"
		"The unit `state` marks a gauge that is 0 or 1 (no unit in "
		"its name), the type\n"
		"`gauge (setting)` one that holds a setting or a level moving "
		"in steps (a limit,\n"
		"a maximum, a total); remote_write sends the `:1m_avg` of "
		"either alone (`fleet.md`).\n");

	for (int s = 0; s < GW_CATALOG_SRC_COUNT; s++) {
		gw_buf_putf(out, "\n## %s\n\n%s\n\n", sections[s].title,
			    sections[s].intro);
		if (s == GW_CATALOG_SRC_DCGM)
			add_dcgm_section(out);
		else
			add_section(out, (enum gw_catalog_source)s);
	}
	return gw_buf_error(out);
}
