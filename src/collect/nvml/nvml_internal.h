/* SPDX-License-Identifier: MIT */
/*
 * nvml_internal.h - shared between the NVML collector's files; not for
 * other modules.
 */
#ifndef GW_NVML_INTERNAL_H
#define GW_NVML_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "collect/nvml/nvml.h"
#include "collect/nvml/nvml_abi.h"
#include "common/worker.h"
#include "pipeline/catalog.h"
#include "pipeline/metrics.h"

#define GW_NVML_MAX_GPUS      64
#define GW_NVML_MAX_PROCS     1024
#define GW_NVML_MAX_XID_CODES 32

enum job {
	JOB_FAST = 1,
	JOB_DETAIL = 2,
};

enum dev_state {
	DEV_UP,
	DEV_LOST,
};

/* What can be read; a bit is set in dev->unsupported once NVML says no. */
enum metric {
	M_TEMP,
	M_MEMTEMP,
	M_POWER,
	M_PLIMIT,
	M_ENERGY,
	M_UTIL,
	M_MEMINFO,
	M_CLOCK,
	M_MAXCLOCK,
	M_REASONS,
	M_FAN,
	M_PSTATE,
	M_PROCS,
	M_PROCUTIL,
	M_GPM,
	M_PCIE_TP,
	M_ECC,
	M_REMAP,
	M_PCIE_GEN,
	M_PCIE_GEN_MAX,
	M_PCIE_WIDTH,
	M_PCIE_WIDTH_MAX,
	M_REPLAY,
	M_NVLINK,
	M_NVLINK_ERR,
	M_NVLINK_TP,
	M__COUNT
};

/* Errors are counted by NVML return code; these are the codes we name. */
#define GW_NVML_ERR_SLOTS 32

struct xid_count {
	unsigned long long code;
	uint64_t count;
	double last_seen; /* unix seconds */
};

struct gpu_dev {
	struct gw_nvml *c;
	unsigned int index;
	gw_nvml_device_t h;
	char uuid[GW_NVML_DEVICE_UUID_BUFFER_SIZE];
	char name[GW_NVML_DEVICE_NAME_BUFFER_SIZE];
	char bus_id[GW_NVML_PCI_BUS_ID_BUFFER_SIZE];
	/* gpu="0",uuid="GPU-..." and, while a pod holds the GPU (the kubelet's
	 * pod-resources), pod, namespace and container */
	char labels[768];
	char dcgm_labels[640]; /* dcgm-exporter's label set */

	struct gw_worker *w; /* "gw-nvml-N"; written under c->mu */
	int thread_started;  /* the scheduler's */
	pthread_mutex_t mu;  /* guards the fields down to 'end of mu' */
	int jobs;	     /* pending JOB_* bits */
	int busy;	     /* a job is running */
	double job_started;  /* monotonic */
	int hung;	     /* the scheduler declared the job hung */
	const char *in_call; /* NVML symbol being called, for the hang log */
	double dur[2];	     /* last duration of the fast and detail pass */
	enum dev_state state;
	char pod[256], pod_ns[64], pod_container[64]; /* "" when none */
	/* end of mu */
	uint64_t podres_gen; /* worker-owned: the pod map's, when last read */

	/* Worker-owned. */
	uint64_t unsupported; /* bits of enum metric */
	double retry_at, backoff;
	int slot_fast, slot_detail;
	struct gw_snap snap;
	struct gw_nvml_process_info *procs;
	char (*plabels)[1152]; /* series labels of procs[], same capacity */
	unsigned int procs_cap;
	struct gw_nvml_process_util *putil;
	unsigned int putil_cap;
	unsigned long long putil_last_ts;
	void *gpm_sample[2];
	int gpm_have_prev;
	int nvlink_links; /* -1 until probed */
	atomic_flag logged_lost;
	_Atomic uint64_t lost_count; /* GPU_IS_LOST episodes */
	_Atomic int
		register_events; /* identified late: events thread registers it */
	atomic_flag logged_perm[M__COUNT];
	atomic_flag logged_err[M__COUNT];

	/* Events thread-owned, read under c->ev_mu by the publisher. */
	struct xid_count xid[GW_NVML_MAX_XID_CODES];
	unsigned int nxid;
	uint64_t ecc_events[2]; /* single-bit, double-bit */
	unsigned long long last_xid;
};

struct gw_nvml {
	const struct gw_collect_env *env;
	struct gw_nvml_fns fns;
	void *dl; /* dlopen handle, NULL when simulating */
	int simulated;
	int loaded; /* NVML initialised and devices discovered */
	char driver_version[GW_NVML_DRIVER_VERSION_BUFFER_SIZE];
	unsigned int ndev;
	struct gpu_dev dev[GW_NVML_MAX_GPUS];
	int dcgm;

	struct gw_worker *sched; /* "gw-nvml" */
	/* "gw-nvml-events"; it and dev[].w are started by the scheduler and
	 * written under mu, for the stop. */
	struct gw_worker *events;
	pthread_mutex_t mu;
	double next_fast, next_detail; /* the scheduler's */
	void *ev_set;		       /* the events thread's */
	_Atomic uint64_t timeout_ms;   /* --collector-timeout */

	int slot_status, slot_events;
	struct gw_snap status_snap, events_snap, empty_snap;
	pthread_mutex_t ev_mu; /* guards the dev[].xid tables */
	uint64_t xid_overflow;

	_Atomic uint64_t errors[GW_NVML_ERR_SLOTS]; /* by code slot */
	_Atomic uint64_t timeouts;
	double retry_load_at, load_backoff;
	atomic_flag logged_load;
};

/* nvml_load.c */
int gw_nvml_load(struct gw_nvml *c);
/* Gets the handle and identity of d->index; state UP or LOST. */
void gw_nvml_discover(struct gw_nvml *c, struct gpu_dev *d);
void gw_nvml_unload(struct gw_nvml *c);
int gw_nvml_err_slot(int code);
int gw_nvml_slot_code(int slot);

/* nvml_read.c: fill d->snap with one set.  Return -ENODEV if the GPU was
 * lost during the pass. */
int gw_nvml_read_fast(struct gpu_dev *d);
int gw_nvml_read_detail(struct gpu_dev *d);
/* Probe whether a lost GPU answers again. */
int gw_nvml_probe(struct gpu_dev *d);
/* Builds the per-GPU label strings from uuid, name, bus id. */
void gw_nvml_dev_labels(struct gpu_dev *d);

/* nvml_events.c: the "gw-nvml-events" worker (arg: struct gw_nvml). */
int gw_nvml_events_init(struct gw_worker *w, void *arg);
double gw_nvml_events_round(struct gw_worker *w, void *arg);
void gw_nvml_events_fini(struct gw_worker *w, void *arg);
void gw_nvml_publish_events(struct gw_nvml *c);
/* Counts one XID or ECC event in its GPU's tables. */
void gw_nvml_count_event(struct gw_nvml *c,
			 const struct gw_nvml_event_data *ev);
/* Adds the XID and ECC event counters to s (what publish_events
 * publishes). */
void gw_nvml_events_fill(struct gw_nvml *c, struct gw_snap *s);

#endif
