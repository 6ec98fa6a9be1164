/* SPDX-License-Identifier: MIT */
/*
 * nvml_read.c - one pass of the fast or the detail set on one GPU, into the
 * worker's snap.  Every call goes through call_result(): a metric NVML says
 * it does not support (or forbids) is never asked for again on that GPU;
 * GPU_IS_LOST ends the pass; other errors are counted by code.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "collect/nvml/nvml_internal.h"
#include "common/clock.h"
#include "common/log.h"

#define NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL /* NVML_VALUE_NOT_AVAILABLE */

/* ---- calling NVML ---- */

static const char *const metric_names[M__COUNT] = {
	[M_TEMP] = "temperature",
	[M_MEMTEMP] = "memory temperature",
	[M_POWER] = "power",
	[M_PLIMIT] = "power limit",
	[M_ENERGY] = "energy",
	[M_UTIL] = "utilization",
	[M_MEMINFO] = "memory info",
	[M_CLOCK] = "clocks",
	[M_MAXCLOCK] = "max clocks",
	[M_REASONS] = "clock event reasons",
	[M_FAN] = "fan speed",
	[M_PSTATE] = "performance state",
	[M_PROCS] = "processes",
	[M_PROCUTIL] = "process utilization",
	[M_GPM] = "GPM metrics",
	[M_PCIE_TP] = "PCIe throughput",
	[M_ECC] = "ECC counters",
	[M_REMAP] = "remapped rows",
	[M_PCIE_GEN] = "PCIe generation",
	[M_PCIE_GEN_MAX] = "PCIe max generation",
	[M_PCIE_WIDTH] = "PCIe width",
	[M_PCIE_WIDTH_MAX] = "PCIe max width",
	[M_REPLAY] = "PCIe replay counter",
	[M_NVLINK] = "NVLink state",
	[M_NVLINK_ERR] = "NVLink error counters",
	[M_NVLINK_TP] = "NVLink throughput",
};

/* A metric is worth calling if its function exists and NVML has not refused it. */
static int wanted(const struct gpu_dev *d, enum metric m, const void *fn)
{
	return fn && !(d->unsupported & (1ULL << m));
}

/*
 * Accounts for one NVML return code.  Returns 1 on success, 0 when there is
 * no value (now or ever), -ENODEV when the GPU is lost.
 */
static int call_result(struct gpu_dev *d, enum metric m, int ret)
{
	struct gw_nvml *c = d->c;
	char nb[24];

	switch (ret) {
	case GW_NVML_SUCCESS:
		return 1;
	case GW_NVML_ERROR_NOT_SUPPORTED:
	case GW_NVML_ERROR_FUNCTION_NOT_FOUND:
		d->unsupported |= 1ULL << m;
		gw_dbg("nvml: GPU %u: %s not supported; not asking again",
		       d->index, metric_names[m]);
		return 0;
	case GW_NVML_ERROR_NO_PERMISSION:
		d->unsupported |= 1ULL << m;
		atomic_fetch_add(&c->errors[gw_nvml_err_slot(ret)], 1);
		gw_log_once(&d->logged_perm[m], GW_LOG_WARN,
			    "nvml: GPU %u: no permission to read %s; run the "
			    "agent as root or with access to /dev/nvidia*",
			    d->index, metric_names[m]);
		return 0;
	case GW_NVML_ERROR_GPU_IS_LOST:
		atomic_fetch_add(&c->errors[gw_nvml_err_slot(ret)], 1);
		return -ENODEV;
	default:
		atomic_fetch_add(&c->errors[gw_nvml_err_slot(ret)], 1);
		gw_log_once(&d->logged_err[m], GW_LOG_WARN,
			    "nvml: GPU %u: reading %s failed: %s (%s); counted "
			    "in gpuwatch_agent_collector_errors_total",
			    d->index, metric_names[m],
			    c->fns.error_string ? c->fns.error_string(ret)
						: "error",
			    gw_nvml_code_name(ret, nb, sizeof(nb)));
		return 0;
	}
}

static void set_in_call(struct gpu_dev *d, const char *sym)
{
	pthread_mutex_lock(&d->mu);
	d->in_call = sym;
	pthread_mutex_unlock(&d->mu);
}

/*
 * CALL(d, metric, member, args...): calls c->fns.member if wanted and
 * evaluates to 1 (value), 0 (none) or -ENODEV (lost: the caller returns).
 */
#define CALL(d, m, member, ...)                                                \
	(wanted(d, m, (void *)(d)->c->fns.member)                              \
		 ? (set_in_call(d, #member),                                   \
		    call_result(d, m, (d)->c->fns.member(__VA_ARGS__)))        \
		 : 0)

/* Evaluates expr (which may assign r) and returns a negative result. */
#define TRY(expr)                                                              \
	do {                                                                   \
		int try_ = (expr);                                             \
		if (try_ < 0)                                                  \
			return try_;                                           \
	} while (0)

/*
 * With --compat dcgm, v (in dcgm-exporter's unit) also goes out under the
 * dcgm-exporter name the catalogue gives our family `of` for the series
 * whose selecting label is value (NULL: the GPU's one series), if any.
 */
static void dcgm_add(struct gpu_dev *d, enum gw_catalog_id of,
		     const char *value, double v)
{
	const struct gw_family *f;

	if (!d->c->dcgm)
		return;
	f = gw_catalog_dcgm(of, value);
	if (f)
		gw_snap_add(&d->snap, f, v, d->dcgm_labels, NULL);
}

void gw_nvml_dev_labels(struct gpu_dev *d)
{
	struct gw_buf b;
	char idx[16], dev[24];

	snprintf(idx, sizeof(idx), "%u", d->index);
	gw_buf_init(&b, sizeof(d->labels));
	if (gw_labels_append(&b, "gpu", idx) || gw_buf_add(&b, ",", 1) ||
	    gw_labels_append(&b, "uuid", d->uuid))
		gw_buf_reset(&b);
	if (d->pod[0] &&
	    (gw_buf_add(&b, ",", 1) || gw_labels_append(&b, "pod", d->pod) ||
	     gw_buf_add(&b, ",", 1) ||
	     gw_labels_append(&b, "namespace", d->pod_ns) ||
	     gw_buf_add(&b, ",", 1) ||
	     gw_labels_append(&b, "container", d->pod_container)))
		gw_buf_reset(&b);
	snprintf(d->labels, sizeof(d->labels), "%s", b.p ? b.p : "");
	gw_buf_release(&b);

	snprintf(dev, sizeof(dev), "nvidia%u", d->index);
	gw_buf_init(&b, sizeof(d->dcgm_labels));
	if (gw_labels_append(&b, "gpu", idx) || gw_buf_add(&b, ",", 1) ||
	    gw_labels_append(&b, "UUID", d->uuid) || gw_buf_add(&b, ",", 1) ||
	    gw_labels_append(&b, "device", dev) || gw_buf_add(&b, ",", 1) ||
	    gw_labels_append(&b, "modelName", d->name) ||
	    gw_buf_add(&b, ",", 1) ||
	    gw_labels_append(&b, "pci_bus_id", d->bus_id))
		gw_buf_reset(&b);
	snprintf(d->dcgm_labels, sizeof(d->dcgm_labels), "%s", b.p ? b.p : "");
	gw_buf_release(&b);
}

static double field_double(const struct gw_nvml_field_value *f)
{
	switch (f->value_type) {
	case GW_NVML_VALUE_TYPE_DOUBLE:
		return f->value.d;
	case GW_NVML_VALUE_TYPE_UNSIGNED_INT:
		return (double)f->value.ui;
	case GW_NVML_VALUE_TYPE_UNSIGNED_LONG:
		return (double)f->value.ul;
	case GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
		return (double)f->value.ull;
	case GW_NVML_VALUE_TYPE_SIGNED_LONG_LONG:
		return (double)f->value.sll;
	case GW_NVML_VALUE_TYPE_SIGNED_INT:
		return (double)f->value.si;
	default:
		return NAN;
	}
}

/*
 * The labels of a process's series on this GPU: the GPU's, then pid, comm
 * and the attribution (container, pod, job) from the agent's cache.
 */
static void proc_labels(struct gpu_dev *d, unsigned int pid, char *out,
			size_t len)
{
	struct gw_attrib at;
	struct gw_buf b;
	char pids[16];

	memset(&at, 0, sizeof(at));
	if (d->c->env->attrib &&
	    gw_attrib_get(d->c->env->attrib, pid, gw_now_mono(), &at))
		memset(&at, 0, sizeof(at)); /* gone, or over the cache bound */
	gw_buf_init(&b, len);
	gw_buf_puts(&b, d->labels);
	gw_buf_set_error(&b, gw_attrib_labels(&at, pid, &b));
	if (gw_buf_error(&b) || !b.p) {
		snprintf(pids, sizeof(pids), "%u", pid);
		snprintf(out, len, "%s,pid=\"%s\"", d->labels, pids);
	} else {
		snprintf(out, len, "%s", b.p);
	}
	gw_buf_release(&b);
}

/* Grows the process buffers to hold want entries (at most GW_NVML_MAX_PROCS). */
static int grow_procs(struct gpu_dev *d, unsigned int want)
{
	void *p;

	if (want <= d->procs_cap)
		return 0;
	if (want > GW_NVML_MAX_PROCS)
		return -E2BIG;
	p = realloc(d->procs, want * sizeof(*d->procs));
	if (!p)
		return -ENOMEM;
	d->procs = p;
	p = realloc(d->plabels, want * sizeof(*d->plabels));
	if (!p)
		return -ENOMEM;
	d->plabels = p;
	d->procs_cap = want;
	return 0;
}

/*
 * The INSUFFICIENT_SIZE dance: call with the buffer we have (none at
 * first); when NVML says it needs more, grow with some headroom and call
 * again - the list may grow in between, hence the loop.
 */
static int read_procs(struct gpu_dev *d, unsigned int *n)
{
	struct gw_nvml *c = d->c;

	if (!wanted(d, M_PROCS,
		    (void *)c->fns.device_get_compute_running_processes))
		return 0;
	for (int attempt = 0; attempt < 4; attempt++) {
		unsigned int count = d->procs_cap;
		int ret;

		set_in_call(d, "device_get_compute_running_processes");
		ret = c->fns.device_get_compute_running_processes(
			d->h, &count, d->procs_cap ? d->procs : NULL);
		if (ret != GW_NVML_ERROR_INSUFFICIENT_SIZE) {
			int r = call_result(d, M_PROCS, ret);

			if (r <= 0)
				return r;
			*n = count < d->procs_cap ? count : d->procs_cap;
			return 1;
		}
		if (count <= d->procs_cap)
			count = d->procs_cap; /* NVML did not say how many */
		if (grow_procs(d, count + 8 < GW_NVML_MAX_PROCS ? count + 8
								: count)) {
			d->snap.dropped += count;
			gw_dbg("nvml: GPU %u: %u processes, more than the %d "
			       "we "
			       "track",
			       d->index, count, GW_NVML_MAX_PROCS);
			return 0;
		}
	}
	return 0;
}

static void read_proc_util(struct gpu_dev *d, unsigned int nprocs)
{
	struct gw_nvml *c = d->c;
	unsigned int count = d->putil_cap;
	char seen[GW_NVML_MAX_PROCS];
	int ret;

	if (!wanted(d, M_PROCUTIL,
		    (void *)c->fns.device_get_process_utilization))
		return;
	set_in_call(d, "device_get_process_utilization");
	ret = c->fns.device_get_process_utilization(
		d->h, d->putil_cap ? d->putil : NULL, &count, d->putil_last_ts);
	if (ret == GW_NVML_ERROR_INSUFFICIENT_SIZE) {
		unsigned int cap = count + 8;
		void *p;

		if (cap > GW_NVML_MAX_PROCS)
			cap = GW_NVML_MAX_PROCS;
		p = realloc(d->putil, cap * sizeof(*d->putil));
		if (!p)
			return;
		d->putil = p;
		d->putil_cap = cap;
		count = cap;
		ret = c->fns.device_get_process_utilization(
			d->h, d->putil, &count, d->putil_last_ts);
	}
	if (ret == GW_NVML_ERROR_NOT_FOUND) {
		count = 0; /* no samples since last time: all idle */
	} else {
		if (call_result(d, M_PROCUTIL, ret) <= 0)
			return;
		if (count > d->putil_cap)
			count = d->putil_cap;
	}
	memset(seen, 0, nprocs);
	for (unsigned int i = 0; i < count; i++) {
		const struct gw_nvml_process_util *u = &d->putil[i];
		const char *labels = NULL;
		char own[sizeof(*d->plabels)];
		int dup = 0;

		if (u->timestamp > d->putil_last_ts)
			d->putil_last_ts = u->timestamp;
		/* Several samples per pid may come back: keep the last one. */
		for (unsigned int j = i + 1; j < count; j++)
			if (d->putil[j].pid == u->pid)
				dup = 1;
		if (dup)
			continue;
		for (unsigned int j = 0; j < nprocs; j++) {
			if (d->procs[j].pid == u->pid) {
				labels = d->plabels[j];
				seen[j] = 1;
			}
		}
		if (!labels) { /* not a compute process: graphics, say */
			proc_labels(d, u->pid, own, sizeof(own));
			labels = own;
		}
		gw_snap_add(&d->snap, GW_FAM(GPU_PROCESS_SM_UTILIZATION_RATIO),
			    u->sm_util / 100.0, labels, NULL);
		gw_snap_add(&d->snap,
			    GW_FAM(GPU_PROCESS_MEMORY_UTILIZATION_RATIO),
			    u->mem_util / 100.0, labels, NULL);
	}
	/* A process with no sample since the last pass used nothing. */
	for (unsigned int j = 0; j < nprocs; j++) {
		if (seen[j])
			continue;
		gw_snap_add(&d->snap, GW_FAM(GPU_PROCESS_SM_UTILIZATION_RATIO),
			    0, d->plabels[j], NULL);
		gw_snap_add(&d->snap,
			    GW_FAM(GPU_PROCESS_MEMORY_UTILIZATION_RATIO), 0,
			    d->plabels[j], NULL);
	}
}

static int read_processes(struct gpu_dev *d)
{
	unsigned int n = 0;
	int r;

	r = read_procs(d, &n);
	if (r <= 0)
		return r;
	gw_snap_add(&d->snap, GW_FAM(GPU_PROCESSES), n, d->labels, NULL);
	for (unsigned int i = 0; i < n; i++) {
		const struct gw_nvml_process_info *p = &d->procs[i];

		proc_labels(d, p->pid, d->plabels[i], sizeof(d->plabels[i]));
		if (p->used_gpu_memory != NOT_AVAILABLE)
			gw_snap_add(&d->snap,
				    GW_FAM(GPU_PROCESS_MEMORY_USED_BYTES),
				    (double)p->used_gpu_memory, d->plabels[i],
				    NULL);
	}
	read_proc_util(d, n);
	return 0;
}

static const struct {
	int type;
	const char *label;
} clock_domains[] = {
	{ GW_NVML_CLOCK_GRAPHICS, "graphics" },
	{ GW_NVML_CLOCK_SM, "sm" },
	{ GW_NVML_CLOCK_MEM, "memory" },
	{ GW_NVML_CLOCK_VIDEO, "video" },
};

static const struct {
	unsigned long long bit;
	const char *label;
} reasons[] = {
	{ GW_NVML_CLOCKS_EVENT_GPU_IDLE, "gpu_idle" },
	{ GW_NVML_CLOCKS_EVENT_APPLICATIONS_CLOCKS, "applications_clocks" },
	{ GW_NVML_CLOCKS_EVENT_SW_POWER_CAP, "sw_power_cap" },
	{ GW_NVML_CLOCKS_EVENT_HW_SLOWDOWN, "hw_slowdown" },
	{ GW_NVML_CLOCKS_EVENT_SYNC_BOOST, "sync_boost" },
	{ GW_NVML_CLOCKS_EVENT_SW_THERMAL, "sw_thermal_slowdown" },
	{ GW_NVML_CLOCKS_EVENT_HW_THERMAL, "hw_thermal_slowdown" },
	{ GW_NVML_CLOCKS_EVENT_HW_POWER_BRAKE, "hw_power_brake_slowdown" },
	{ GW_NVML_CLOCKS_EVENT_DISPLAY_CLOCKS, "display_clock_setting" },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * GPM: two sample buffers per GPU; each fast pass takes a sample and
 * computes the metrics over the interval since the previous one.
 */
static int read_gpm(struct gpu_dev *d)
{
	static const struct {
		unsigned int id;
		enum gw_catalog_id m;
	} gpm[] = {
		{ GW_NVML_GPM_METRIC_SM_OCCUPANCY,
		  GW_CATALOG_GPU_SM_OCCUPANCY_RATIO },
		{ GW_NVML_GPM_METRIC_SM_UTIL, GW_CATALOG_GPU_SM_ACTIVE_RATIO },
		{ GW_NVML_GPM_METRIC_ANY_TENSOR_UTIL,
		  GW_CATALOG_GPU_TENSOR_ACTIVE_RATIO },
		{ GW_NVML_GPM_METRIC_DRAM_BW_UTIL,
		  GW_CATALOG_GPU_DRAM_BANDWIDTH_UTILIZATION_RATIO },
	};
	struct gw_nvml *c = d->c;
	struct gw_nvml_gpm_metrics_get mg;
	void *tmp;
	int r;

	if (!wanted(d, M_GPM, (void *)c->fns.gpm_metrics_get) ||
	    !c->fns.gpm_sample_get || !c->fns.gpm_sample_alloc)
		return 0;
	if (!d->gpm_sample[0]) {
		struct gw_nvml_gpm_support sup = { GW_NVML_GPM_SUPPORT_VERSION,
						   0 };

		if (c->fns.gpm_query_device_support) {
			TRY(CALL(d, M_GPM, gpm_query_device_support, d->h,
				 &sup));
			if (!sup.is_supported_device) {
				d->unsupported |= 1ULL << M_GPM;
				return 0;
			}
		}
		if (c->fns.gpm_sample_alloc(&d->gpm_sample[0]) ||
		    c->fns.gpm_sample_alloc(&d->gpm_sample[1])) {
			d->unsupported |= 1ULL << M_GPM;
			return 0;
		}
	}
	TRY(r = CALL(d, M_GPM, gpm_sample_get, d->h, d->gpm_sample[1]));
	if (r == 0) {
		d->gpm_have_prev = 0;
		return 0;
	}
	if (d->gpm_have_prev) {
		memset(&mg, 0, sizeof(mg));
		mg.version = GW_NVML_GPM_METRICS_GET_VERSION;
		mg.num_metrics = N(gpm);
		mg.sample1 = d->gpm_sample[0];
		mg.sample2 = d->gpm_sample[1];
		for (size_t i = 0; i < N(gpm); i++)
			mg.metrics[i].metric_id = gpm[i].id;
		TRY(r = CALL(d, M_GPM, gpm_metrics_get, &mg));
		for (size_t i = 0; r > 0 && i < N(gpm); i++) {
			double v;

			if (mg.metrics[i].nvml_return != GW_NVML_SUCCESS)
				continue;
			v = mg.metrics[i].value / 100.0;
			gw_snap_add(&d->snap, &gw_catalog[gpm[i].m].fam, v,
				    d->labels, NULL);
			dcgm_add(d, gpm[i].m, NULL, v);
		}
	}
	tmp = d->gpm_sample[0];
	d->gpm_sample[0] = d->gpm_sample[1];
	d->gpm_sample[1] = tmp;
	d->gpm_have_prev = 1;
	return 0;
}

int gw_nvml_read_fast(struct gpu_dev *d)
{
	struct gw_snap *s = &d->snap;
	const char *L = d->labels;
	struct gw_nvml_field_value fv;
	struct gw_nvml_utilization u;
	struct gw_nvml_memory mem;
	unsigned long long ull;
	unsigned int ui;
	int r, pstate;

	TRY(r = CALL(d, M_TEMP, device_get_temperature, d->h,
		     GW_NVML_TEMPERATURE_GPU, &ui));
	if (r) {
		gw_snap_add(s, GW_FAM(GPU_TEMPERATURE_CELSIUS), ui, L, NULL);
		dcgm_add(d, GW_CATALOG_GPU_TEMPERATURE_CELSIUS, NULL, ui);
	}
	memset(&fv, 0, sizeof(fv));
	fv.field_id = GW_NVML_FI_DEV_MEMORY_TEMP;
	TRY(r = CALL(d, M_MEMTEMP, device_get_field_values, d->h, 1, &fv));
	if (r) {
		r = call_result(d, M_MEMTEMP, fv.nvml_return);
		if (r < 0)
			return r;
		if (r) {
			gw_snap_add(s, GW_FAM(GPU_MEMORY_TEMPERATURE_CELSIUS),
				    field_double(&fv), L, NULL);
			dcgm_add(d, GW_CATALOG_GPU_MEMORY_TEMPERATURE_CELSIUS,
				 NULL, field_double(&fv));
		}
	}
	TRY(r = CALL(d, M_POWER, device_get_power_usage, d->h, &ui));
	if (r) {
		gw_snap_add(s, GW_FAM(GPU_POWER_WATTS), ui / 1000.0, L, NULL);
		dcgm_add(d, GW_CATALOG_GPU_POWER_WATTS, NULL, ui / 1000.0);
	}
	TRY(r = CALL(d, M_PLIMIT, device_get_enforced_power_limit, d->h, &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_POWER_LIMIT_WATTS), ui / 1000.0, L,
			    NULL);
	TRY(r = CALL(d, M_ENERGY, device_get_total_energy_consumption, d->h,
		     &ull));
	if (r) {
		gw_snap_add(s, GW_FAM(GPU_ENERGY_JOULES_TOTAL),
			    (double)ull / 1000.0, L, NULL);
		dcgm_add(d, GW_CATALOG_GPU_ENERGY_JOULES_TOTAL, NULL,
			 (double)ull);
	}
	TRY(r = CALL(d, M_UTIL, device_get_utilization_rates, d->h, &u));
	if (r) {
		gw_snap_add(s, GW_FAM(GPU_UTILIZATION_RATIO), u.gpu / 100.0, L,
			    NULL);
		gw_snap_add(s, GW_FAM(GPU_MEMORY_UTILIZATION_RATIO),
			    u.memory / 100.0, L, NULL);
		dcgm_add(d, GW_CATALOG_GPU_UTILIZATION_RATIO, NULL, u.gpu);
		dcgm_add(d, GW_CATALOG_GPU_MEMORY_UTILIZATION_RATIO, NULL,
			 u.memory);
	}
	TRY(r = CALL(d, M_MEMINFO, device_get_memory_info, d->h, &mem));
	if (r) {
		gw_snap_add(s, GW_FAM(GPU_MEMORY_USED_BYTES), (double)mem.used,
			    L, NULL);
		gw_snap_add(s, GW_FAM(GPU_MEMORY_FREE_BYTES), (double)mem.free,
			    L, NULL);
		gw_snap_add(s, GW_FAM(GPU_MEMORY_TOTAL_BYTES),
			    (double)mem.total, L, NULL);
		dcgm_add(d, GW_CATALOG_GPU_MEMORY_USED_BYTES, NULL,
			 (double)(mem.used >> 20));
		dcgm_add(d, GW_CATALOG_GPU_MEMORY_FREE_BYTES, NULL,
			 (double)(mem.free >> 20));
	}
	for (size_t i = 0; i < N(clock_domains); i++) {
		TRY(r = CALL(d, M_CLOCK, device_get_clock_info, d->h,
			     clock_domains[i].type, &ui));
		if (!r)
			continue;
		gw_snap_add(s, GW_FAM(GPU_CLOCK_HERTZ), ui * 1e6, L, "clock",
			    clock_domains[i].label, NULL);
		dcgm_add(d, GW_CATALOG_GPU_CLOCK_HERTZ, clock_domains[i].label,
			 ui);
	}
	TRY(r = CALL(d, M_REASONS, device_get_clocks_event_reasons, d->h,
		     &ull));
	if (r)
		for (size_t i = 0; i < N(reasons); i++)
			gw_snap_add(s, GW_FAM(GPU_CLOCK_EVENT_ACTIVE),
				    (ull & reasons[i].bit) ? 1 : 0, L, "reason",
				    reasons[i].label, NULL);
	TRY(r = CALL(d, M_FAN, device_get_fan_speed, d->h, &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_FAN_SPEED_RATIO), ui / 100.0, L,
			    NULL);
	TRY(r = CALL(d, M_PSTATE, device_get_performance_state, d->h, &pstate));
	if (r && pstate >= 0 && pstate <= 15)
		gw_snap_add(s, GW_FAM(GPU_PERFORMANCE_STATE), pstate, L, NULL);
	TRY(r = CALL(d, M_PCIE_TP, device_get_pcie_throughput, d->h,
		     GW_NVML_PCIE_UTIL_TX_BYTES, &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_PCIE_THROUGHPUT_BYTES_PER_SECOND),
			    ui * 1024.0, L, "direction", "tx", NULL);
	TRY(r = CALL(d, M_PCIE_TP, device_get_pcie_throughput, d->h,
		     GW_NVML_PCIE_UTIL_RX_BYTES, &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_PCIE_THROUGHPUT_BYTES_PER_SECOND),
			    ui * 1024.0, L, "direction", "rx", NULL);
	TRY(read_processes(d));
	TRY(read_gpm(d));
	return 0;
}

static int read_nvlink(struct gpu_dev *d)
{
	static const struct {
		int counter;
		const char *label;
	} errs[] = {
		{ GW_NVML_NVLINK_ERROR_DL_REPLAY, "replay" },
		{ GW_NVML_NVLINK_ERROR_DL_RECOVERY, "recovery" },
		{ GW_NVML_NVLINK_ERROR_DL_CRC_FLIT, "crc_flit" },
		{ GW_NVML_NVLINK_ERROR_DL_CRC_DATA, "crc_data" },
	};
	struct gw_nvml *c = d->c;
	struct gw_nvml_field_value fv[2];
	unsigned int active = 0, links = 0;
	int r;

	if (!wanted(d, M_NVLINK, (void *)c->fns.device_get_nvlink_state))
		return 0;
	/* Links past the last one that exists answer NOT_SUPPORTED. */
	for (unsigned int l = 0; l < GW_NVML_NVLINK_MAX_LINKS; l++) {
		char link[8];
		int st = 0, ret;

		if (d->nvlink_links >= 0 && l >= (unsigned int)d->nvlink_links)
			break;
		set_in_call(d, "device_get_nvlink_state");
		ret = c->fns.device_get_nvlink_state(d->h, l, &st);
		if (ret == GW_NVML_ERROR_NOT_SUPPORTED ||
		    ret == GW_NVML_ERROR_INVALID_ARGUMENT) {
			if (d->nvlink_links < 0)
				d->nvlink_links = (int)l;
			break;
		}
		TRY(r = call_result(d, M_NVLINK, ret));
		if (!r) {
			/* A transient error: try all links again next time. */
			if (!(d->unsupported & (1ULL << M_NVLINK)))
				return 0;
			break;
		}
		links++;
		snprintf(link, sizeof(link), "%u", l);
		gw_snap_add(&d->snap, GW_FAM(GPU_NVLINK_UP),
			    st == GW_NVML_FEATURE_ENABLED, d->labels, "link",
			    link, NULL);
		active += st == GW_NVML_FEATURE_ENABLED;
		for (size_t k = 0; k < N(errs); k++) {
			unsigned long long v;

			TRY(r = CALL(d, M_NVLINK_ERR,
				     device_get_nvlink_error_counter, d->h, l,
				     errs[k].counter, &v));
			if (r)
				gw_snap_add(&d->snap,
					    GW_FAM(GPU_NVLINK_ERRORS_TOTAL),
					    (double)v, d->labels, "link", link,
					    "type", errs[k].label, NULL);
		}
	}
	if (d->nvlink_links < 0)
		d->nvlink_links = (int)links;
	if (!links) {
		d->unsupported |= 1ULL << M_NVLINK;
		return 0;
	}
	gw_snap_add(&d->snap, GW_FAM(GPU_NVLINK_LINKS_ACTIVE), active,
		    d->labels, NULL);
	memset(fv, 0, sizeof(fv));
	fv[0].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[1].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
	fv[0].scope_id = fv[1].scope_id = UINT_MAX; /* all links */
	TRY(r = CALL(d, M_NVLINK_TP, device_get_field_values, d->h, 2, fv));
	for (int i = 0; r > 0 && i < 2; i++) {
		if (fv[i].nvml_return != GW_NVML_SUCCESS)
			continue;
		gw_snap_add(&d->snap, GW_FAM(GPU_NVLINK_DATA_BYTES_TOTAL),
			    field_double(&fv[i]) * 1024, d->labels, "direction",
			    i ? "rx" : "tx", NULL);
	}
	return 0;
}

int gw_nvml_read_detail(struct gpu_dev *d)
{
	static const struct {
		int type;
		const char *label;
	} ecc[] = {
		{ GW_NVML_MEMORY_ERROR_TYPE_CORRECTED, "corrected" },
		{ GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "uncorrected" },
	};
	struct gw_nvml *c = d->c;
	struct gw_snap *s = &d->snap;
	const char *L = d->labels;
	unsigned int corr, unc, pending, failed, ui;
	unsigned long long ull;
	int r;

	for (size_t i = 0; i < N(ecc); i++) {
		TRY(r = CALL(d, M_ECC, device_get_total_ecc_errors, d->h,
			     ecc[i].type, GW_NVML_AGGREGATE_ECC, &ull));
		if (!r)
			continue;
		gw_snap_add(s, GW_FAM(GPU_ECC_ERRORS_TOTAL), (double)ull, L,
			    "type", ecc[i].label, NULL);
		/* dcgm-exporter's counts are the volatile ones. */
		if (c->dcgm) {
			TRY(r = CALL(d, M_ECC, device_get_total_ecc_errors,
				     d->h, ecc[i].type, GW_NVML_VOLATILE_ECC,
				     &ull));
			if (r)
				dcgm_add(d, GW_CATALOG_GPU_ECC_ERRORS_TOTAL,
					 ecc[i].label, (double)ull);
		}
	}
	TRY(r = CALL(d, M_REMAP, device_get_remapped_rows, d->h, &corr, &unc,
		     &pending, &failed));
	if (r) {
		gw_snap_add(s, GW_FAM(GPU_REMAPPED_ROWS_TOTAL), corr, L, "type",
			    "correctable", NULL);
		gw_snap_add(s, GW_FAM(GPU_REMAPPED_ROWS_TOTAL), unc, L, "type",
			    "uncorrectable", NULL);
		gw_snap_add(s, GW_FAM(GPU_REMAPPED_ROWS_PENDING), pending != 0,
			    L, NULL);
		gw_snap_add(s, GW_FAM(GPU_REMAPPED_ROWS_FAILURE), failed != 0,
			    L, NULL);
	}
	TRY(r = CALL(d, M_PCIE_GEN, device_get_curr_pcie_link_generation, d->h,
		     &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_PCIE_LINK_GENERATION), ui, L, NULL);
	TRY(r = CALL(d, M_PCIE_GEN_MAX, device_get_max_pcie_link_generation,
		     d->h, &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_PCIE_LINK_GENERATION_MAX), ui, L,
			    NULL);
	TRY(r = CALL(d, M_PCIE_WIDTH, device_get_curr_pcie_link_width, d->h,
		     &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_PCIE_LINK_WIDTH), ui, L, NULL);
	TRY(r = CALL(d, M_PCIE_WIDTH_MAX, device_get_max_pcie_link_width, d->h,
		     &ui));
	if (r)
		gw_snap_add(s, GW_FAM(GPU_PCIE_LINK_WIDTH_MAX), ui, L, NULL);
	TRY(r = CALL(d, M_REPLAY, device_get_pcie_replay_counter, d->h, &ui));
	if (r) {
		gw_snap_add(s, GW_FAM(GPU_PCIE_REPLAY_ERRORS_TOTAL), ui, L,
			    NULL);
		dcgm_add(d, GW_CATALOG_GPU_PCIE_REPLAY_ERRORS_TOTAL, NULL, ui);
	}
	for (size_t i = 0; i < N(clock_domains); i++) {
		TRY(r = CALL(d, M_MAXCLOCK, device_get_max_clock_info, d->h,
			     clock_domains[i].type, &ui));
		if (r)
			gw_snap_add(s, GW_FAM(GPU_CLOCK_MAX_HERTZ), ui * 1e6, L,
				    "clock", clock_domains[i].label, NULL);
	}
	TRY(read_nvlink(d));
	return 0;
}

int gw_nvml_probe(struct gpu_dev *d)
{
	struct gw_nvml *c = d->c;
	unsigned int t;
	int ret;

	if (!d->h) {
		gw_nvml_device_t h;

		/* Never identified: the caller discovers it when this works. */
		set_in_call(d, "device_get_handle_by_index");
		ret = c->fns.device_get_handle_by_index(d->index, &h);
		return ret == GW_NVML_SUCCESS ? 0 : -ENODEV;
	}
	/* Only a real answer counts; a GPU without a temperature sensor is
	 * asked for its memory instead. */
	if (c->fns.device_get_temperature) {
		set_in_call(d, "device_get_temperature");
		ret = c->fns.device_get_temperature(
			d->h, GW_NVML_TEMPERATURE_GPU, &t);
		if (ret != GW_NVML_ERROR_NOT_SUPPORTED)
			return ret == GW_NVML_SUCCESS ? 0 : -ENODEV;
	}
	if (c->fns.device_get_memory_info) {
		struct gw_nvml_memory m;

		set_in_call(d, "device_get_memory_info");
		ret = c->fns.device_get_memory_info(d->h, &m);
		return ret == GW_NVML_SUCCESS ? 0 : -ENODEV;
	}
	return 0;
}
