/* SPDX-License-Identifier: MIT */
/*
 * sim.h - simulated GPUs behind the NVML function table.
 *
 * `gpuwatch agent --simulate N` runs the real NVML collector against N
 * simulated H200-like GPUs.  The simulator fills the same struct gw_nvml_fns
 * that production fills with dlsym() from libnvidia-ml.so.1, so every
 * collector code path runs, including the failure paths: GPU_IS_LOST, XID
 * and ECC events, NOT_SUPPORTED members, INSUFFICIENT_SIZE sizing.
 *
 * The single global: NVML's API is process-global (nvmlInit takes no
 * context and the table's functions receive none), so the simulator keeps
 * exactly one static world in sim.c, created by gw_sim_start() and
 * destroyed by gw_sim_stop().  This is the one sanctioned exception to the
 * "no mutable globals" rule, and it exists only because the ABI has no
 * place to pass a context.
 *
 * Model (see docs/internals/sim.md): state advances lazily to "now" on each
 * call, in fixed steps of 100 ms of simulated time, from CLOCK_MONOTONIC
 * since gw_sim_start(), or only through gw_sim_advance() when manual_clock
 * is set.  Each step depends only on the seed and the step number, so a
 * given seed gives the same values whatever the calling pattern.
 *
 * Lifecycle:
 *
 *     stopped --gw_sim_start()--> started --table init()--> initialised
 *        ^                           |  ^                      |
 *        +------gw_sim_stop()--------+  +--table shutdown()----+
 *
 * Table calls made while not initialised answer UNINITIALIZED (init()
 * itself answers DRIVER_NOT_LOADED while stopped).  init()/shutdown() are
 * reference counted, as in NVML.
 *
 * Ownership: event sets and GPM samples created through the table belong to
 * the caller and are freed through the table; gw_sim_stop() frees any that
 * are left.  Device handles point into the world and are valid from
 * gw_sim_start() to gw_sim_stop().
 *
 * Thread safety: every table function may be called from any thread at
 * once (one thread per GPU plus an event thread is the expected use); one
 * world mutex is held briefly per call.  event_set_wait() blocks without
 * holding it.  gw_sim_start(), gw_sim_stop() and gw_sim_advance() are
 * thread-safe too; gw_sim_stop() wakes and waits out blocked waiters, but
 * the caller must not use handles, sets or samples after it.
 */
#ifndef GW_SIM_H
#define GW_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "collect/nvml/nvml_abi.h"

#define GW_SIM_MAX_GPUS	  64
#define GW_SIM_MAX_FAULTS 32

enum gw_sim_fault_kind {
	GW_SIM_FAULT_THERMAL_RUNAWAY,
	GW_SIM_FAULT_ECC_STORM,
	GW_SIM_FAULT_XID79,
	GW_SIM_FAULT_PCIE_DOWNGRADE,
	GW_SIM_FAULT_POWER_CAP,
};

/* One fault on one GPU, active during [after_s, after_s + duration_s). */
struct gw_sim_fault {
	enum gw_sim_fault_kind kind;
	unsigned int gpu;
	double after_s;	   /* seconds of simulated time after start */
	double duration_s; /* 0 = forever */
};

struct gw_sim_opts {
	unsigned int gpus; /* 1..GW_SIM_MAX_GPUS */
	double day_s;	   /* length of one simulated day; 0 = 86400 */
	uint64_t seed;
	int manual_clock; /* tests: time only moves with gw_sim_advance() */
	struct gw_sim_fault faults[GW_SIM_MAX_FAULTS];
	unsigned int nfaults;
};

/*
 * Parse a fault spec "NAME:GPU[:AFTER_S[:DURATION_S]]", NAME one of
 * thermal-runaway, ecc-storm, xid79, pcie-downgrade, power-cap.  AFTER_S
 * and DURATION_S are seconds (decimals allowed, 0..1e9) and default to 0
 * (from the start, forever).  GPU is checked against GW_SIM_MAX_GPUS here and
 * against opts.gpus by gw_sim_start().  Returns 0, or -EINVAL with a
 * one-line message naming the problem in err (when err and errlen allow);
 * *out is written only on success.
 */
__attribute__((warn_unused_result)) int
gw_sim_fault_parse(const char *spec, struct gw_sim_fault *out, char *err,
		   size_t errlen);

/* The spec name of a fault kind ("xid79"), "unknown" for a bad value. */
const char *gw_sim_fault_name(enum gw_sim_fault_kind k);

/*
 * Create the simulated world.  Returns 0, -EBUSY if already started,
 * -EINVAL for bad options (gpus out of range, day_s negative or not finite,
 * too many faults, a fault on a GPU that does not exist, a fault time
 * negative or not finite), -errno if the clock cannot be read.
 */
__attribute__((warn_unused_result)) int
gw_sim_start(const struct gw_sim_opts *o);

/* Destroy the world and everything created through the table; idempotent. */
void gw_sim_stop(void);

/*
 * The NVML function table; every member is filled.  The same pointer is
 * returned before, during and after a simulation; outside one, its
 * functions answer as described above.
 */
const struct gw_nvml_fns *gw_sim_fns(void);

/*
 * Move simulated time forward (manual_clock only; ignored otherwise, and for
 * negative or non-finite values).  All GPUs are advanced at once, so events
 * are queued before this returns.
 */
void gw_sim_advance(double seconds);

/*
 * The training loop of a simulated process, as the process would report it
 * (over StatsD, by the agent in --simulate mode: collect/sim/sim_work.c).
 * Each job runs steps of host work and GPU kernels; its kernels take
 * longer as the SM clock falls (a power cap, thermal slowdown), so a
 * fault propagates: power limit -> clock -> kernel time -> step time.
 */
struct gw_sim_proc {
	unsigned int gpu, pid;
	double step_s;	 /* the wall time of its last step */
	double kernel_s; /* of which its kernels ran on the GPU */
};

/*
 * Brings every GPU to now and fills out[] with up to max processes that
 * run their training loop (loaded: a job still copying its data in runs no
 * step yet; none on a lost GPU).  Returns how many, or -ENODEV when no
 * world is started.  The times are a function of (seed, pid, the current
 * step and the GPU's clock) only.
 */
int gw_sim_procs(struct gw_sim_proc *out, size_t max);

/*
 * Instances: private worlds, for a simulated fleet: each is a world of its own (its
 * own devices, faults, clock and lock), created with a manual clock.
 * gw_sim_instance_enter(w) makes every call of this thread (the table's
 * included, and gw_sim_advance()) act on w until gw_sim_instance_leave(),
 * which returns it to the global world.  A world is used by one thread at
 * a time.  gw_sim_instance_new: 0, -ENOMEM, or gw_sim_start()'s errors.
 */
struct gw_sim_instance;
__attribute__((warn_unused_result)) int
gw_sim_instance_new(const struct gw_sim_opts *o, struct gw_sim_instance **out);
void gw_sim_instance_free(struct gw_sim_instance *w); /* NULL: no-op */
void gw_sim_instance_enter(struct gw_sim_instance *w);
void gw_sim_instance_leave(void);

#endif /* GW_SIM_H */
