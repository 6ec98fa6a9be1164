// SPDX-License-Identifier: MIT
/*
 * sim_nvml.c - the simulated GPUs' answers to NVML's calls, the function
 * table behind gw_sim_fns() (sim.h).  Every call takes gw_sim_lock, brings
 * the world to the current step (sim.c) and reads it; nothing here draws a
 * random number, so the values do not depend on who asks or how often.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_int.h"

/* ---- the NVML table: library-level calls ----------------------------- */

static int sim_init(void)
{
	int ret = GW_NVML_SUCCESS;

	pthread_mutex_lock(&gw_sim_lock);
	if (!gw_sim_world.started)
		ret = GW_NVML_ERROR_DRIVER_NOT_LOADED;
	else
		gw_sim_world.refs++;
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

static int sim_shutdown(void)
{
	int ret = GW_NVML_SUCCESS;

	pthread_mutex_lock(&gw_sim_lock);
	if (!gw_sim_world.started || gw_sim_world.refs == 0)
		ret = GW_NVML_ERROR_UNINITIALIZED;
	else
		gw_sim_world.refs--;
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

static const char *sim_error_string(int code)
{
	switch (code) {
	case GW_NVML_SUCCESS:
		return "Success";
	case GW_NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case GW_NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case GW_NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case GW_NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case GW_NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case GW_NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case GW_NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case GW_NVML_ERROR_TIMEOUT:
		return "Timeout";
	case GW_NVML_ERROR_IRQ_ISSUE:
		return "Interrupt request issue";
	case GW_NVML_ERROR_LIBRARY_NOT_FOUND:
		return "NVML Shared Library Not Found";
	case GW_NVML_ERROR_FUNCTION_NOT_FOUND:
		return "Function Not Found";
	case GW_NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case GW_NVML_ERROR_RESET_REQUIRED:
		return "GPU requires restart";
	case GW_NVML_ERROR_NO_DATA:
		return "No data";
	default:
		return "Unknown Error";
	}
}

/* Is the library usable?  Called with gw_sim_lock held. */
static int lib_ready(void)
{
	return gw_sim_world.started && gw_sim_world.refs > 0
		       ? GW_NVML_SUCCESS
		       : GW_NVML_ERROR_UNINITIALIZED;
}

static int sim_system_get_driver_version(char *buf, unsigned int len)
{
	int ret;

	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	pthread_mutex_unlock(&gw_sim_lock);
	if (ret)
		return ret;
	if (!buf)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	if (len < sizeof(DRIVER_VERSION))
		return GW_NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, DRIVER_VERSION, sizeof(DRIVER_VERSION));
	return GW_NVML_SUCCESS;
}

static int sim_device_get_count(unsigned int *count)
{
	int ret;

	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (!ret && !count)
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
	if (!ret)
		*count = gw_sim_world.opts.gpus;
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

/*
 * Look a handle up, bring that device to now and check it answers.  On
 * success gw_sim_lock stays held and the caller releases it with dev_leave().
 */
static int dev_enter(gw_nvml_device_t h, struct dev **out)
{
	uintptr_t off = (uintptr_t)h - (uintptr_t)gw_sim_world.dev;
	struct dev *d;
	int ret;

	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto err_unlock;
	if ((uintptr_t)h < (uintptr_t)gw_sim_world.dev || off % sizeof(*d) ||
	    off / sizeof(*d) >= gw_sim_world.opts.gpus) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto err_unlock;
	}
	d = &gw_sim_world.dev[off / sizeof(*d)];
	gw_sim_catch_up(d, gw_sim_now_step());
	if (d->lost) {
		ret = GW_NVML_ERROR_GPU_IS_LOST;
		goto err_unlock;
	}
	*out = d;
	return GW_NVML_SUCCESS;
err_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

static void dev_leave(void)
{
	pthread_mutex_unlock(&gw_sim_lock);
}

static int sim_device_get_handle_by_index(unsigned int index,
					  gw_nvml_device_t *h)
{
	struct dev *d;
	int ret;

	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	if (!h || index >= gw_sim_world.opts.gpus) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	d = &gw_sim_world.dev[index];
	gw_sim_catch_up(d, gw_sim_now_step());
	if (d->lost) {
		ret = GW_NVML_ERROR_GPU_IS_LOST;
		goto out_unlock;
	}
	*h = d;
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

/* ---- the NVML table: identity ---------------------------------------- */

static int copy_str(char *buf, unsigned int len, const char *s)
{
	size_t n = strlen(s) + 1;

	if (len < n)
		return GW_NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, n);
	return GW_NVML_SUCCESS;
}

static int sim_device_get_name(gw_nvml_device_t h, char *buf, unsigned int len)
{
	struct dev *d;
	int ret;

	if (!buf)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	ret = copy_str(buf, len, GPU_NAME);
	dev_leave();
	return ret;
}

static int sim_device_get_uuid(gw_nvml_device_t h, char *buf, unsigned int len)
{
	struct dev *d;
	int ret;

	if (!buf)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	ret = copy_str(buf, len, d->uuid);
	dev_leave();
	return ret;
}

static int sim_device_get_pci_info(gw_nvml_device_t h,
				   struct gw_nvml_pci_info *pci)
{
	struct dev *d;
	int ret;

	if (!pci)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	*pci = d->pci;
	dev_leave();
	return GW_NVML_SUCCESS;
}

/* ---- the NVML table: sensors ----------------------------------------- */

static unsigned int temp_c(double t)
{
	return t <= 0 ? 0 : (unsigned int)lround(t);
}

static int sim_device_get_temperature(gw_nvml_device_t h, int sensor,
				      unsigned int *t)
{
	struct dev *d;
	int ret;

	if (!t || sensor != GW_NVML_TEMPERATURE_GPU)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	*t = temp_c(d->t_core);
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int sim_device_get_field_values(gw_nvml_device_t h, int count,
				       struct gw_nvml_field_value *v)
{
	struct dev *d;
	long long ts;
	int i, ret;

	if (count < 0 || (count > 0 && !v))
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	ts = gw_sim_step_wall_us(d->step);
	for (i = 0; i < count; i++) {
		v[i].timestamp = ts;
		v[i].latency_usec = 0;
		memset(&v[i].value, 0, sizeof(v[i].value));
		switch (v[i].field_id) {
		case GW_NVML_FI_DEV_MEMORY_TEMP:
			v[i].value_type = GW_NVML_VALUE_TYPE_UNSIGNED_INT;
			v[i].value.ui = temp_c(d->t_hbm);
			v[i].nvml_return = GW_NVML_SUCCESS;
			break;
		case GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
			v[i].value_type = GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
			v[i].value.ull = d->nvl_tx_kib;
			v[i].nvml_return = GW_NVML_SUCCESS;
			break;
		case GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
			v[i].value_type = GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
			v[i].value.ull = d->nvl_rx_kib;
			v[i].nvml_return = GW_NVML_SUCCESS;
			break;
		default:
			v[i].value_type = GW_NVML_VALUE_TYPE_UNSIGNED_INT;
			v[i].nvml_return = GW_NVML_ERROR_NOT_SUPPORTED;
			break;
		}
	}
	dev_leave();
	return GW_NVML_SUCCESS;
}

/*
 * Most getters hand out one value: check the pointer, enter the device (lock,
 * catch up, lost check), copy `expr`, which reads the device through d.
 */
#define DEV_GET(fn, type, expr)                                                \
	static int fn(gw_nvml_device_t h, type *out)                           \
	{                                                                      \
		struct dev *d;                                                 \
		int ret;                                                       \
                                                                               \
		if (!out)                                                      \
			return GW_NVML_ERROR_INVALID_ARGUMENT;                 \
		ret = dev_enter(h, &d);                                        \
		if (ret)                                                       \
			return ret;                                            \
		*out = (expr);                                                 \
		dev_leave();                                                   \
		return GW_NVML_SUCCESS;                                        \
	}

DEV_GET(sim_device_get_power_usage, unsigned int, d->power_mw)
DEV_GET(sim_device_get_enforced_power_limit, unsigned int, d->limit_mw)
DEV_GET(sim_device_get_total_energy_consumption, unsigned long long,
	d->energy_uj / 1000)
DEV_GET(sim_device_get_clocks_event_reasons, unsigned long long, d->reasons)
DEV_GET(sim_device_get_performance_state, int,
	d->njobs > 0 || d->load >= 0.01 ? 0 : 8)
DEV_GET(sim_device_get_curr_pcie_link_generation, unsigned int, d->pcie_gen)
DEV_GET(sim_device_get_curr_pcie_link_width, unsigned int, d->pcie_width)
DEV_GET(sim_device_get_max_pcie_link_generation, unsigned int, PCIE_GEN_MAX)
DEV_GET(sim_device_get_max_pcie_link_width, unsigned int, PCIE_WIDTH_MAX)
DEV_GET(sim_device_get_pcie_replay_counter, unsigned int, d->replay)
DEV_GET(sim_device_get_supported_event_types, unsigned long long,
	SUPPORTED_EVENTS)

static int sim_device_get_utilization_rates(gw_nvml_device_t h,
					    struct gw_nvml_utilization *u)
{
	struct dev *d;
	int ret;

	if (!u)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	u->gpu = d->util_gpu;
	u->memory = d->util_mem;
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int sim_device_get_memory_info(gw_nvml_device_t h,
				      struct gw_nvml_memory *m)
{
	struct dev *d;
	int ret;

	if (!m)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	m->total = MEM_TOTAL;
	m->used = d->mem_used;
	m->free = MEM_TOTAL - d->mem_used;
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int clock_of(const struct dev *d, int type, int max, unsigned int *mhz)
{
	switch (type) {
	case GW_NVML_CLOCK_GRAPHICS:
	case GW_NVML_CLOCK_SM:
		*mhz = max ? CLK_SM_MAX : d->clk_sm;
		return GW_NVML_SUCCESS;
	case GW_NVML_CLOCK_MEM:
		*mhz = CLK_MEM;
		return GW_NVML_SUCCESS;
	case GW_NVML_CLOCK_VIDEO:
		*mhz = max ? CLK_VIDEO_MAX
			   : (d->clk_sm < CLK_VIDEO_MAX ? d->clk_sm
							: CLK_VIDEO_MAX);
		return GW_NVML_SUCCESS;
	default:
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	}
}

static int get_clock(gw_nvml_device_t h, int type, int max, unsigned int *mhz)
{
	struct dev *d;
	int ret;

	if (!mhz)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	ret = clock_of(d, type, max, mhz);
	dev_leave();
	return ret;
}

static int sim_device_get_clock_info(gw_nvml_device_t h, int type,
				     unsigned int *mhz)
{
	return get_clock(h, type, 0, mhz);
}

static int sim_device_get_max_clock_info(gw_nvml_device_t h, int type,
					 unsigned int *mhz)
{
	return get_clock(h, type, 1, mhz);
}

static int sim_device_get_fan_speed(gw_nvml_device_t h, unsigned int *pct)
{
	struct dev *d;
	int ret;

	if (!pct)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	dev_leave();
	return GW_NVML_ERROR_NOT_SUPPORTED; /* SXM boards have no fan */
}

/* ---- the NVML table: reliability ------------------------------------- */

static int sim_device_get_total_ecc_errors(gw_nvml_device_t h, int type,
					   int counter, unsigned long long *n)
{
	struct dev *d;
	int ret;

	if (!n ||
	    (type != GW_NVML_MEMORY_ERROR_TYPE_CORRECTED &&
	     type != GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
	    (counter != GW_NVML_VOLATILE_ECC &&
	     counter != GW_NVML_AGGREGATE_ECC))
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	/* volatile and aggregate agree: no errors before this driver load */
	*n = type == GW_NVML_MEMORY_ERROR_TYPE_CORRECTED ? d->ecc_corr
							 : d->ecc_unc;
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int sim_device_get_remapped_rows(gw_nvml_device_t h, unsigned int *corr,
					unsigned int *unc,
					unsigned int *pending,
					unsigned int *failure)
{
	struct dev *d;
	int ret;

	if (!corr || !unc || !pending || !failure)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	*corr = d->rows_corr;
	*unc = d->rows_unc;
	*pending = d->rows_pending;
	*failure = d->rows_failure;
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int sim_device_get_pcie_throughput(gw_nvml_device_t h, int counter,
					  unsigned int *kbs)
{
	struct dev *d;
	int ret;

	if (!kbs || (counter != GW_NVML_PCIE_UTIL_TX_BYTES &&
		     counter != GW_NVML_PCIE_UTIL_RX_BYTES))
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	*kbs = counter == GW_NVML_PCIE_UTIL_TX_BYTES ? d->pcie_tx_kbs
						     : d->pcie_rx_kbs;
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int sim_device_get_nvlink_state(gw_nvml_device_t h, unsigned int link,
				       int *active)
{
	struct dev *d;
	int ret;

	if (!active || link >= NLINKS)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	*active = GW_NVML_FEATURE_ENABLED;
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int sim_device_get_nvlink_error_counter(gw_nvml_device_t h,
					       unsigned int link, int counter,
					       unsigned long long *n)
{
	struct dev *d;
	int ret;

	if (!n || link >= NLINKS || counter < 0 || counter >= NLINK_COUNTERS)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	*n = d->nvl_err[link][counter];
	dev_leave();
	return GW_NVML_SUCCESS;
}

/* ---- the NVML table: processes --------------------------------------- */

static int sim_device_get_compute_running_processes(
	gw_nvml_device_t h, unsigned int *count, struct gw_nvml_process_info *p)
{
	struct dev *d;
	unsigned int i;
	int ret;

	if (!count)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	if (d->njobs > 0 && (!p || *count < d->njobs)) {
		*count = d->njobs;
		ret = GW_NVML_ERROR_INSUFFICIENT_SIZE;
		goto out_leave;
	}
	*count = d->njobs;
	for (i = 0; i < d->njobs; i++) {
		p[i].pid = d->jobs[i].pid;
		p[i].used_gpu_memory = d->jobs[i].mem;
		p[i].gpu_instance_id = NOT_AVAILABLE;
		p[i].compute_instance_id = NOT_AVAILABLE;
	}
out_leave:
	dev_leave();
	return ret;
}

static int sim_device_get_process_utilization(gw_nvml_device_t h,
					      struct gw_nvml_process_util *u,
					      unsigned int *count,
					      unsigned long long last_seen)
{
	unsigned long long ts;
	struct dev *d;
	double w = 0;
	unsigned int i, n;
	int ret;

	if (!count)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	/* one sample per process, taken at the current step */
	ts = (unsigned long long)gw_sim_step_wall_us(d->step);
	n = ts > last_seen ? d->njobs : 0;
	if (n == 0) {
		*count = 0;
		ret = GW_NVML_ERROR_NOT_FOUND;
		goto out_leave;
	}
	if (!u || *count < n) {
		*count = n;
		ret = GW_NVML_ERROR_INSUFFICIENT_SIZE;
		goto out_leave;
	}
	for (i = 0; i < n; i++)
		w += d->jobs[i].intensity;
	for (i = 0; i < n; i++) {
		const struct job *j = &d->jobs[i];
		double share = w > 0 ? j->intensity / w : 0;

		u[i].pid = j->pid;
		u[i].timestamp = ts;
		u[i].sm_util = (unsigned int)lround(d->util_gpu * share);
		u[i].mem_util =
			(unsigned int)lround(d->util_gpu * share * j->mem_int);
		u[i].enc_util = 0;
		u[i].dec_util = 0;
	}
	*count = n;
out_leave:
	dev_leave();
	return ret;
}

/* ---- the NVML table: events ------------------------------------------ */

/* Index of a live set, or -1.  Called with gw_sim_lock held. */
static int find_set(const void *set)
{
	int i;

	if (!set)
		return -1;
	for (i = 0; i < MAX_SETS; i++) {
		if (gw_sim_world.sets[i] == set)
			return i;
	}
	return -1;
}

static int sim_event_set_create(void **set)
{
	struct evset *es;
	int ret, i;

	if (!set)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	for (i = 0; i < MAX_SETS && gw_sim_world.sets[i]; i++)
		;
	if (i == MAX_SETS) {
		ret = GW_NVML_ERROR_UNKNOWN;
		goto out_unlock;
	}
	es = calloc(1, sizeof(*es));
	if (!es) {
		ret = GW_NVML_ERROR_UNKNOWN;
		goto out_unlock;
	}
	gw_sim_world.sets[i] = es;
	*set = es;
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

static int sim_device_register_events(gw_nvml_device_t h,
				      unsigned long long types, void *set)
{
	struct dev *d;
	int ret, i;

	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	i = find_set(set);
	if (i < 0)
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
	else if (types & ~SUPPORTED_EVENTS)
		ret = GW_NVML_ERROR_NOT_SUPPORTED;
	else
		gw_sim_world.sets[i]->mask[d->index] |= types;
	dev_leave();
	return ret;
}

static int ev_pop(struct evset *es, struct gw_nvml_event_data *data)
{
	if (es->count == 0)
		return 0;
	*data = es->q[es->head];
	es->head = (es->head + 1) % EVQ_LEN;
	es->count--;
	return 1;
}

static void deadline_after(struct timespec *ts, unsigned long long ns)
{
	mono_now(ts);
	ns += (unsigned long long)ts->tv_nsec;
	ts->tv_sec += (time_t)(ns / NS_PER_S);
	ts->tv_nsec = (long)(ns % NS_PER_S);
}

static int ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static int sim_event_set_wait(void *set, struct gw_nvml_event_data *data,
			      unsigned int timeout_ms)
{
	struct timespec deadline, wake, now;
	int ret, i;

	if (!data)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	i = find_set(set);
	if (i < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	gw_sim_catch_up_all();
	if (ev_pop(gw_sim_world.sets[i], data))
		goto out_unlock;
	ret = GW_NVML_ERROR_TIMEOUT;
	if (gw_sim_world.opts.manual_clock || timeout_ms == 0)
		goto out_unlock;
	deadline_after(&deadline, (unsigned long long)timeout_ms * 1000000ULL);
	gw_sim_world.waiters++;
	for (;;) {
		/*
		 * Device calls catch the physics up and broadcast new events,
		 * so waking every 10 steps is only a safety net for idle
		 * devices: each wake-up costs more than a whole poll.
		 */
		deadline_after(&wake, 10 * STEP_NS);
		if (ts_before(&deadline, &wake))
			wake = deadline;
		pthread_cond_timedwait(&gw_sim_world.cond, &gw_sim_lock, &wake);
		if (!gw_sim_world.started) {
			ret = GW_NVML_ERROR_UNINITIALIZED;
			break;
		}
		i = find_set(set);
		if (i < 0) {
			ret = GW_NVML_ERROR_INVALID_ARGUMENT;
			break;
		}
		gw_sim_catch_up_all();
		if (ev_pop(gw_sim_world.sets[i], data)) {
			ret = GW_NVML_SUCCESS;
			break;
		}
		mono_now(&now);
		if (!ts_before(&now, &deadline))
			break;
	}
	gw_sim_world.waiters--;
	if (!gw_sim_world.started)
		pthread_cond_broadcast(
			&gw_sim_world.cond); /* gw_sim_stop() waits */
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

static int sim_event_set_free(void *set)
{
	int ret, i;

	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	i = find_set(set);
	if (i < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	free(gw_sim_world.sets[i]);
	gw_sim_world.sets[i] = NULL;
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

/* ---- the NVML table: GPM ---------------------------------------------- */

/* metric id -> index into gpm_inst, or -1 */
static int gpm_index(unsigned int id)
{
	switch (id) {
	case GW_NVML_GPM_METRIC_SM_UTIL:
		return 0;
	case GW_NVML_GPM_METRIC_SM_OCCUPANCY:
		return 1;
	case GW_NVML_GPM_METRIC_ANY_TENSOR_UTIL:
		return 2;
	case GW_NVML_GPM_METRIC_DRAM_BW_UTIL:
		return 3;
	default:
		return -1;
	}
}

/* The ABI's info strings are char *; these are never written. */
static char gpm_short[NGPM][16] = { "sm_util", "sm_occupancy",
				    "any_tensor_util", "dram_bw_util" };
static char gpm_long[NGPM][32] = { "SM utilization", "SM occupancy",
				   "Any tensor active", "DRAM bandwidth" };
static char gpm_unit[] = "%";

static int sim_gpm_query_device_support(gw_nvml_device_t h,
					struct gw_nvml_gpm_support *s)
{
	struct dev *d;
	int ret;

	if (!s || s->version != GW_NVML_GPM_SUPPORT_VERSION)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	s->is_supported_device = 1;
	dev_leave();
	return GW_NVML_SUCCESS;
}

static int find_sample(const void *p)
{
	int i;

	if (!p)
		return -1;
	for (i = 0; i < MAX_SAMPLES; i++) {
		if (gw_sim_world.samples[i] == p)
			return i;
	}
	return -1;
}

static int sim_gpm_sample_alloc(void **out)
{
	struct gpm_sample *g;
	int ret, i;

	if (!out)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	for (i = 0; i < MAX_SAMPLES && gw_sim_world.samples[i]; i++)
		;
	if (i == MAX_SAMPLES) {
		ret = GW_NVML_ERROR_UNKNOWN;
		goto out_unlock;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		ret = GW_NVML_ERROR_UNKNOWN;
		goto out_unlock;
	}
	gw_sim_world.samples[i] = g;
	*out = g;
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

static int sim_gpm_sample_free(void *p)
{
	int ret, i;

	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	i = find_sample(p);
	if (i < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	free(gw_sim_world.samples[i]);
	gw_sim_world.samples[i] = NULL;
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

static int sim_gpm_sample_get(gw_nvml_device_t h, void *p)
{
	struct gpm_sample *g;
	struct dev *d;
	int ret;

	ret = dev_enter(h, &d);
	if (ret)
		return ret;
	if (find_sample(p) < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_leave;
	}
	g = p;
	g->valid = 1;
	g->dev = d->index;
	g->step = d->step;
	memcpy(g->inst, d->gpm_inst, sizeof(g->inst));
	memcpy(g->integ, d->gpm_integ, sizeof(g->integ));
out_leave:
	dev_leave();
	return ret;
}

static int sim_gpm_metrics_get(struct gw_nvml_gpm_metrics_get *m)
{
	const struct gpm_sample *a, *b;
	double dt;
	unsigned int i;
	int ret, k;

	if (!m || m->version != GW_NVML_GPM_METRICS_GET_VERSION ||
	    m->num_metrics > GW_NVML_GPM_METRIC_SLOTS)
		return GW_NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&gw_sim_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	if (find_sample(m->sample1) < 0 || find_sample(m->sample2) < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	a = m->sample1;
	b = m->sample2;
	if (!a->valid || !b->valid || a->dev != b->dev || b->step < a->step) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	dt = step_time(b->step - a->step);
	for (i = 0; i < m->num_metrics; i++) {
		struct gw_nvml_gpm_metric *g = &m->metrics[i];

		k = gpm_index(g->metric_id);
		if (k < 0) {
			g->nvml_return = GW_NVML_ERROR_NOT_SUPPORTED;
			g->value = 0;
			g->info.short_name = NULL;
			g->info.long_name = NULL;
			g->info.unit = NULL;
			continue;
		}
		g->nvml_return = GW_NVML_SUCCESS;
		g->value =
			dt > 0 ? (b->integ[k] - a->integ[k]) / dt : b->inst[k];
		g->value = clampd(g->value, 0, 100);
		g->info.short_name = gpm_short[k];
		g->info.long_name = gpm_long[k];
		g->info.unit = gpm_unit;
	}
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return ret;
}

/* ---- the table ------------------------------------------------------- */

static const struct gw_nvml_fns sim_fns = {
	.init = sim_init,
	.shutdown = sim_shutdown,
	.error_string = sim_error_string,
	.system_get_driver_version = sim_system_get_driver_version,
	.device_get_count = sim_device_get_count,
	.device_get_handle_by_index = sim_device_get_handle_by_index,
	.device_get_name = sim_device_get_name,
	.device_get_uuid = sim_device_get_uuid,
	.device_get_pci_info = sim_device_get_pci_info,
	.device_get_temperature = sim_device_get_temperature,
	.device_get_field_values = sim_device_get_field_values,
	.device_get_power_usage = sim_device_get_power_usage,
	.device_get_enforced_power_limit = sim_device_get_enforced_power_limit,
	.device_get_total_energy_consumption =
		sim_device_get_total_energy_consumption,
	.device_get_utilization_rates = sim_device_get_utilization_rates,
	.device_get_memory_info = sim_device_get_memory_info,
	.device_get_clock_info = sim_device_get_clock_info,
	.device_get_max_clock_info = sim_device_get_max_clock_info,
	.device_get_clocks_event_reasons = sim_device_get_clocks_event_reasons,
	.device_get_clocks_throttle_reasons =
		sim_device_get_clocks_event_reasons,
	.device_get_fan_speed = sim_device_get_fan_speed,
	.device_get_performance_state = sim_device_get_performance_state,
	.device_get_total_ecc_errors = sim_device_get_total_ecc_errors,
	.device_get_remapped_rows = sim_device_get_remapped_rows,
	.device_get_curr_pcie_link_generation =
		sim_device_get_curr_pcie_link_generation,
	.device_get_max_pcie_link_generation =
		sim_device_get_max_pcie_link_generation,
	.device_get_curr_pcie_link_width = sim_device_get_curr_pcie_link_width,
	.device_get_max_pcie_link_width = sim_device_get_max_pcie_link_width,
	.device_get_pcie_replay_counter = sim_device_get_pcie_replay_counter,
	.device_get_pcie_throughput = sim_device_get_pcie_throughput,
	.device_get_nvlink_state = sim_device_get_nvlink_state,
	.device_get_nvlink_error_counter = sim_device_get_nvlink_error_counter,
	.device_get_compute_running_processes =
		sim_device_get_compute_running_processes,
	.device_get_process_utilization = sim_device_get_process_utilization,
	.device_get_supported_event_types =
		sim_device_get_supported_event_types,
	.event_set_create = sim_event_set_create,
	.device_register_events = sim_device_register_events,
	.event_set_wait = sim_event_set_wait,
	.event_set_free = sim_event_set_free,
	.gpm_query_device_support = sim_gpm_query_device_support,
	.gpm_sample_alloc = sim_gpm_sample_alloc,
	.gpm_sample_free = sim_gpm_sample_free,
	.gpm_sample_get = sim_gpm_sample_get,
	.gpm_metrics_get = sim_gpm_metrics_get,
};

const struct gw_nvml_fns *gw_sim_fns(void)
{
	return &sim_fns;
}
