/* SPDX-License-Identifier: MIT */
/*
 * nvml_load.c - finding NVML: dlopen, dlsym of every symbol (each one
 * optional), nvmlInit, and the discovery of devices.  The one place that
 * translates NVML's return codes into our names.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "collect/nvml/nvml_internal.h"
#include "collect/sim/sim.h"
#include "common/buf.h"
#include "common/log.h"

static const struct {
	int code;
	const char *name;
	const char *hint;
} codes[] = {
	{ GW_NVML_SUCCESS, "SUCCESS", NULL },
	{ GW_NVML_ERROR_UNINITIALIZED, "UNINITIALIZED", NULL },
	{ GW_NVML_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT", NULL },
	{ GW_NVML_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED", NULL },
	{ GW_NVML_ERROR_NO_PERMISSION, "NO_PERMISSION",
	  "run the agent as root or give it access to /dev/nvidia*" },
	{ GW_NVML_ERROR_NOT_FOUND, "NOT_FOUND", NULL },
	{ GW_NVML_ERROR_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE", NULL },
	{ GW_NVML_ERROR_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED",
	  "the NVIDIA kernel driver is not loaded (is this a GPU node? "
	  "try 'modprobe nvidia')" },
	{ GW_NVML_ERROR_TIMEOUT, "TIMEOUT", NULL },
	{ GW_NVML_ERROR_IRQ_ISSUE, "IRQ_ISSUE", NULL },
	{ GW_NVML_ERROR_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND", NULL },
	{ GW_NVML_ERROR_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND", NULL },
	{ GW_NVML_ERROR_GPU_IS_LOST, "GPU_IS_LOST", NULL },
	{ GW_NVML_ERROR_RESET_REQUIRED, "RESET_REQUIRED", NULL },
	{ GW_NVML_ERROR_NO_DATA, "NO_DATA", NULL },
	{ GW_NVML_ERROR_UNKNOWN, "UNKNOWN", NULL },
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

const char *gw_nvml_code_name(int code, char *buf, size_t len)
{
	for (size_t i = 0; i < NCODES; i++)
		if (codes[i].code == code)
			return codes[i].name;
	snprintf(buf, len, "CODE_%d", code);
	return buf;
}

/* Error counters are kept per known code; slot NCODES is "other". */
int gw_nvml_err_slot(int code)
{
	for (size_t i = 0; i < NCODES; i++)
		if (codes[i].code == code)
			return (int)i;
	return (int)NCODES;
}

int gw_nvml_slot_code(int slot)
{
	if (slot >= 0 && (size_t)slot < NCODES)
		return codes[slot].code;
	return -1;
}

_Static_assert(NCODES < GW_NVML_ERR_SLOTS, "error slots");

static const char *hint(int code)
{
	for (size_t i = 0; i < NCODES; i++)
		if (codes[i].code == code && codes[i].hint)
			return codes[i].hint;
	return NULL;
}

/* NVML's own message for a code, with our name for it. */
static void describe(struct gw_nvml *c, int code, char *out, size_t len)
{
	const char *msg =
		c->fns.error_string ? c->fns.error_string(code) : NULL;
	const char *h = hint(code);
	char nb[24];

	snprintf(out, len, "%s (%s)%s%s", msg ? msg : "error",
		 gw_nvml_code_name(code, nb, sizeof(nb)), h ? "; " : "",
		 h ? h : "");
}

static int resolve(struct gw_nvml *c)
{
	struct gw_buf missing;
	unsigned int nmissing = 0;

	gw_buf_init(&missing, 4096);
#define RESOLVE(member, sym, ret, params)                                      \
	*(void **)&c->fns.member = dlsym(c->dl, sym);
	GW_NVML_SYMBOLS(RESOLVE)
#undef RESOLVE
#define FALLBACK(member, sym)                                                  \
	if (!c->fns.member)                                                    \
		*(void **)&c->fns.member = dlsym(c->dl, sym);
	GW_NVML_FALLBACKS(FALLBACK)
#undef FALLBACK
	/* The throttle-reasons name is the older spelling of the same call. */
	if (!c->fns.device_get_clocks_event_reasons)
		c->fns.device_get_clocks_event_reasons =
			c->fns.device_get_clocks_throttle_reasons;
#define MISSING(member, sym, ret, params)                                      \
	if (!c->fns.member &&                                                  \
	    strcmp(#member, "device_get_clocks_throttle_reasons") != 0) {      \
		gw_buf_putf(&missing, "%s%s", nmissing ? ", " : "", sym);      \
		nmissing++;                                                    \
	}
	GW_NVML_SYMBOLS(MISSING)
#undef MISSING
	if (nmissing)
		gw_warn("nvml: %u functions are missing from %s (an older "
			"driver?): %s; their metrics are off",
			nmissing, c->env->o->nvml_lib,
			missing.p ? missing.p : "?");
	gw_buf_release(&missing);
	if (!c->fns.init || !c->fns.device_get_count ||
	    !c->fns.device_get_handle_by_index) {
		gw_err("nvml: %s lacks nvmlInit, nvmlDeviceGetCount or "
		       "nvmlDeviceGetHandleByIndex; hardware metrics are off",
		       c->env->o->nvml_lib);
		return -ENOSYS;
	}
	return 0;
}

void gw_nvml_discover(struct gw_nvml *c, struct gpu_dev *d)
{
	char uuid[sizeof(d->uuid)] = "", name[sizeof(d->name)] = "";
	char bus[sizeof(d->bus_id)] = "", why[256];
	struct gw_nvml_pci_info pci;
	gw_nvml_device_t h = NULL;
	int r;

	/* NVML calls first, without the lock: they may be slow. */
	r = c->fns.device_get_handle_by_index(d->index, &h);
	if (r != GW_NVML_SUCCESS) {
		describe(c, r, why, sizeof(why));
		gw_warn("nvml: GPU %u: no handle: %s", d->index, why);
		pthread_mutex_lock(&d->mu);
		d->h = NULL;
		d->state = DEV_LOST;
		gw_nvml_dev_labels(d); /* gpu="N" until it can be identified */
		pthread_mutex_unlock(&d->mu);
		return;
	}
	if (c->fns.device_get_uuid &&
	    c->fns.device_get_uuid(h, uuid, sizeof(uuid)) != GW_NVML_SUCCESS)
		uuid[0] = '\0';
	if (c->fns.device_get_name &&
	    c->fns.device_get_name(h, name, sizeof(name)) != GW_NVML_SUCCESS)
		name[0] = '\0';
	memset(&pci, 0, sizeof(pci));
	if (c->fns.device_get_pci_info &&
	    c->fns.device_get_pci_info(h, &pci) == GW_NVML_SUCCESS)
		snprintf(bus, sizeof(bus), "%.*s", (int)sizeof(pci.bus_id),
			 pci.bus_id);
	uuid[sizeof(uuid) - 1] = '\0';
	name[sizeof(name) - 1] = '\0';
	/* The scheduler reads identity and labels under d->mu. */
	pthread_mutex_lock(&d->mu);
	d->h = h;
	memcpy(d->uuid, uuid, sizeof(uuid));
	memcpy(d->name, name, sizeof(name));
	memcpy(d->bus_id, bus, sizeof(bus));
	gw_nvml_dev_labels(d);
	d->state = DEV_UP;
	pthread_mutex_unlock(&d->mu);
	gw_info("nvml: GPU %u: %s %s %s", d->index,
		name[0] ? name : "(no name)", uuid[0] ? uuid : "(no uuid)",
		bus);
}

int gw_nvml_load(struct gw_nvml *c)
{
	const struct gw_collect_opts *cfg = c->env->o;
	unsigned int n = 0;
	char why[256];
	int r;

	if (cfg->simulate) {
		struct gw_sim_opts o = { 0 };

		o.gpus = cfg->simulate;
		o.day_s = cfg->sim_day;
		o.seed = cfg->sim_seed;
		o.nfaults = cfg->nfaults < GW_SIM_MAX_FAULTS
				    ? cfg->nfaults
				    : GW_SIM_MAX_FAULTS;
		if (o.nfaults)
			memcpy(o.faults, cfg->faults,
			       o.nfaults * sizeof(o.faults[0]));
		r = gw_sim_start(&o);
		if (r) {
			gw_err("sim: cannot start: %s", strerror(-r));
			return r;
		}
		c->fns = *gw_sim_fns();
		c->simulated = 1;
	} else {
		memset(&c->fns, 0, sizeof(c->fns));
		c->dl = dlopen(cfg->nvml_lib, RTLD_NOW | RTLD_LOCAL);
		if (!c->dl) {
			const char *e = dlerror();

			gw_log_once(
				&c->logged_load, GW_LOG_WARN,
				"nvml: cannot load %s: %s; hardware metrics "
				"are off until it can be loaded (is the "
				"NVIDIA driver installed? --nvml-lib sets "
				"the path)",
				cfg->nvml_lib, e ? e : "unknown error");
			return -ENOENT;
		}
		r = resolve(c);
		if (r)
			goto err_close;
	}
	r = c->fns.init();
	if (r != GW_NVML_SUCCESS) {
		describe(c, r, why, sizeof(why));
		gw_log_once(&c->logged_load, GW_LOG_WARN,
			    "nvml: initialisation failed: %s; hardware "
			    "metrics are off, retrying in the background",
			    why);
		r = -ENODEV;
		goto err_close;
	}
	if (c->fns.system_get_driver_version &&
	    c->fns.system_get_driver_version(c->driver_version,
					     sizeof(c->driver_version)) !=
		    GW_NVML_SUCCESS)
		c->driver_version[0] = '\0';
	c->driver_version[sizeof(c->driver_version) - 1] = '\0';
	r = c->fns.device_get_count(&n);
	if (r != GW_NVML_SUCCESS) {
		describe(c, r, why, sizeof(why));
		gw_warn("nvml: cannot count GPUs: %s", why);
		n = 0;
	}
	if (n > GW_NVML_MAX_GPUS) {
		gw_warn("nvml: %u GPUs found; watching the first %d", n,
			GW_NVML_MAX_GPUS);
		n = GW_NVML_MAX_GPUS;
	}
	c->ndev = n;
	for (unsigned int i = 0; i < n; i++)
		gw_nvml_discover(c, &c->dev[i]);
	gw_info("nvml: %u GPU%s, driver %s%s", n, n == 1 ? "" : "s",
		c->driver_version[0] ? c->driver_version : "unknown",
		c->simulated ? " (simulated)" : "");
	atomic_flag_clear(&c->logged_load);
	c->loaded = 1;
	return 0;
err_close:
	gw_nvml_unload(c);
	return r;
}

void gw_nvml_unload(struct gw_nvml *c)
{
	if (c->fns.shutdown && c->loaded)
		c->fns.shutdown();
	c->loaded = 0;
	if (c->simulated)
		gw_sim_stop();
	c->simulated = 0;
	if (c->dl)
		dlclose(c->dl);
	c->dl = NULL;
	memset(&c->fns, 0, sizeof(c->fns));
}
