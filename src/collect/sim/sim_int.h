// SPDX-License-Identifier: MIT
/*
 * sim_int.h - what the simulator's two halves share: the world (devices,
 * faults, event sets, GPM samples, one mutex) and its constants.  sim.c
 * is the model (load, physics, faults, the clock) and the public API;
 * sim_nvml.c answers NVML's calls from it.  Not for use outside sim/.
 */
#ifndef GW_SIM_INT_H
#define GW_SIM_INT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "collect/sim/sim.h"

#define STEP_NS	 100000000ULL /* one step of simulated time: 100 ms */
#define STEP_S	 0.1
#define NS_PER_S 1000000000ULL

#define DEFAULT_DAY_S  86400.0
#define DAY_START_FRAC (10.0 / 24.0) /* the simulation starts at 10:00 */
#define MAX_TIME_S     1e9	     /* fault times and advances */

/* H200 SXM-like constants */
#define GPU_NAME	   "NVIDIA H200 (simulated)"
#define DRIVER_VERSION	   "gpuwatch-sim"
#define MEM_TOTAL	   151397597184ULL
#define MEM_RESERVED	   613416960ULL /* driver and ECC reservation */
#define LIMIT_MW	   700000U
#define CAPPED_LIMIT_MW	   350000U
#define IDLE_W		   90.0
#define DYN_W		   640.0 /* full load at full clock: 730 W, above the limit */
#define CLK_STEP	   15U
#define CLK_SM_MAX	   1980U
#define CLK_SM_IDLE	   345U
#define CLK_SM_SW_THERMAL  1410U
#define CLK_SM_HW_SLOWDOWN 990U
#define CLK_MEM		   2619U
#define CLK_VIDEO_MAX	   1755U
#define CLK_EXP		   2.5 /* dynamic power ~ clock^2.5 (frequency and voltage) */
#define PCIE_GEN_MAX	   5U
#define PCIE_WIDTH_MAX	   16U
#define PCIE_GEN_DOWN	   3U
#define PCIE_WIDTH_DOWN	   8U
#define PCI_DEVICE_ID	   0x233510DEU
#define PCI_SUBSYS_ID	   0x18BE10DEU

/* thermal model */
#define AMBIENT_C	 27.0
#define K_CORE		 0.062 /* degrees C per watt at equilibrium */
#define TAU_TEMP_S	 30.0  /* core and HBM share it: HBM stays above core */
#define HBM_OFFSET_C	 3.0
#define RUNAWAY_RATE	 0.5 /* degrees C per second while cooling fails */
#define RUNAWAY_MAX	 65.0
#define SW_THERMAL_C	 87.0
#define HW_THERMAL_C	 90.0
#define HBM_SW_THERMAL_C 92.0
#define HBM_HW_THERMAL_C 95.0

/* load model */
#define MAX_JOBS     4
#define CLK_HIST     16	 /* steps of SM clock history: two training steps */
#define JOBS_AT_NOON 2.4 /* expected concurrent jobs at the busiest hour */
#define TAU_LOAD_S   2.0
#define PID_BASE     4000000U
#define PIDS_PER_GPU 2000U
#define GIB	     (1ULL << 30)
#define ALLOC_ALIGN  (2ULL << 20)

/* faults */
#define XID_DBE		     48
#define XID_FALLEN_OFF_BUS   79
#define ECC_SBE_MIN_PER_STEP 20U /* 20..40 per 100 ms: ~300/s */
#define DBE_FIRST_MAX_S	     5.0
#define DBE_GAP_MIN_S	     15.0
#define DBE_GAP_MAX_S	     25.0
#define ROW_REMAP_FAILURE    64U

#define SUPPORTED_EVENTS                                                       \
	(GW_NVML_EVENT_SINGLE_BIT_ECC | GW_NVML_EVENT_DOUBLE_BIT_ECC |         \
	 GW_NVML_EVENT_XID_CRITICAL)
#define NOT_AVAILABLE 0xFFFFFFFFU /* instance ids outside MIG */

#define MAX_SETS       16
#define MAX_SAMPLES    (GW_SIM_MAX_GPUS * 4)
#define EVQ_LEN	       256
#define NLINKS	       GW_NVML_NVLINK_MAX_LINKS
#define NLINK_COUNTERS 4
#define NGPM	       4

struct job {
	unsigned int pid;
	uint64_t end_step;
	unsigned long long mem;
	unsigned long long mem_target;
	double intensity; /* share of the GPU once loaded, 0..1 */
	double mem_int;	  /* memory-boundness */
	double occ;	  /* SM occupancy per active SM */
	double tensor;	  /* tensor-core share */
	double nvlink;	  /* multi-GPU traffic */
};

struct dev {
	unsigned int index;
	uint64_t rng;
	uint64_t step; /* the state is that of time step * STEP_S */
	char uuid[GW_NVML_DEVICE_UUID_BUFFER_SIZE];
	struct gw_nvml_pci_info pci;
	double amb_off;

	/* what the faults say this step */
	int lost;
	int f_pcie;
	int f_cap;
	double runaway; /* extra degrees C from failing cooling */

	struct job jobs[MAX_JOBS];
	unsigned int njobs;
	unsigned int pid_seq;
	double load;

	/* observable state */
	unsigned int limit_mw;
	unsigned int power_mw;
	uint64_t energy_uj;
	double t_core;
	double t_hbm;
	double mem_frac; /* memory busy, 0..1 */
	unsigned int clk_sm;
	/* clk_sm of the last CLK_HIST steps, at step % CLK_HIST: the
	 * processes' kernels ran at these (gw_sim_procs) */
	unsigned short clk_hist[CLK_HIST];
	unsigned long long reasons;
	unsigned int util_gpu;
	unsigned int util_mem;
	unsigned long long mem_used;
	unsigned int pcie_gen;
	unsigned int pcie_width;
	unsigned int replay;
	unsigned int pcie_tx_kbs;
	unsigned int pcie_rx_kbs;
	unsigned long long nvl_tx_kib;
	unsigned long long nvl_rx_kib;
	unsigned long long nvl_err[NLINKS][NLINK_COUNTERS];
	unsigned long long ecc_corr;
	unsigned long long ecc_unc;
	unsigned int rows_corr;
	unsigned int rows_unc;
	unsigned int rows_pending;
	unsigned int rows_failure;
	double gpm_inst[NGPM]; /* percent: SM util, occupancy, tensor, DRAM */
	double gpm_integ[NGPM];
};

struct fault_state {
	uint64_t from; /* first step active */
	uint64_t to;   /* first step no longer active; UINT64_MAX = never */
	int active;
	uint64_t next_dbe;
	uint64_t next_row;
};

struct evset {
	unsigned long long mask[GW_SIM_MAX_GPUS];
	struct gw_nvml_event_data q[EVQ_LEN];
	unsigned int head;
	unsigned int count;
	unsigned long long dropped;
};

struct gpm_sample {
	int valid;
	unsigned int dev;
	uint64_t step;
	double inst[NGPM];
	double integ[NGPM];
};

struct sim_world {
	int started;
	unsigned int refs; /* init() minus shutdown() */
	struct gw_sim_opts opts;
	double day_s;
	double mean_job_s;
	struct timespec t0;
	uint64_t wall0_us;
	uint64_t manual_ns;
	pthread_cond_t cond; /* events queued, or stopping */
	unsigned int waiters;
	struct fault_state fs[GW_SIM_MAX_FAULTS];
	struct dev dev[GW_SIM_MAX_GPUS];
	struct evset *sets[MAX_SETS];
	struct gpm_sample *samples[MAX_SAMPLES];
};

/* The world this thread's calls act on: the one global (see sim.h)
 * unless gw_sim_instance_enter() chose another.  Its lock guards it and
 * every event set of it. */
struct gw_sim_instance {
	struct sim_world w;
	pthread_mutex_t lock;
};
extern _Thread_local struct gw_sim_instance *gw_sim_cur;
#define gw_sim_world (gw_sim_cur->w)
#define gw_sim_lock  (gw_sim_cur->lock)

static inline double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static inline double step_time(uint64_t step)
{
	return (double)step * STEP_S;
}

static inline void mono_now(struct timespec *ts)
{
	/* cannot fail with a valid clock id and pointer */
	(void)clock_gettime(CLOCK_MONOTONIC, ts);
}

/* Under gw_sim_lock: the current step of simulated time. */
uint64_t gw_sim_now_step(void);
/* Under gw_sim_lock: brings one device, or all, to the current step. */
void gw_sim_catch_up(struct dev *d, uint64_t target);
void gw_sim_catch_up_all(void);
/* CLOCK_MONOTONIC microseconds of a step (event and sample times). */
long long gw_sim_step_wall_us(uint64_t step);

#endif
