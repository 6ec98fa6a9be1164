// SPDX-License-Identifier: MIT
/*
 * sim.c - simulated H200-like GPUs behind struct gw_nvml_fns.
 *
 * The contract is in sim.h; the model is described in docs/internals/sim.md.
 *
 * One static world (see sim.h for why): the options, the fault table, the
 * devices and the event sets, all under one mutex.  A device's state is a
 * function of (seed, device index, step number) only: every random draw
 * happens inside dev_step(), never in a getter, so the values do not depend
 * on who asks, how often or in which order.
 *
 * Per device, the state machine for presence:
 *
 *     present --xid79 fault starts (XID 79 event queued)--> lost
 *        ^                                                   |
 *        +------------- xid79 fault ends (if finite) --------+
 *
 * While lost every call taking that device's handle answers GPU_IS_LOST, its
 * jobs are gone and it draws no power.  check_dev() states the invariants.
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

#include "sim.h"

#define STEP_NS 100000000ULL /* one step of simulated time: 100 ms */
#define STEP_S 0.1
#define NS_PER_S 1000000000ULL

#define DEFAULT_DAY_S 86400.0
#define DAY_START_FRAC (10.0 / 24.0) /* the simulation starts at 10:00 */
#define MAX_TIME_S 1e9               /* fault times and advances */

/* H200 SXM-like constants */
#define GPU_NAME "NVIDIA H200 (simulated)"
#define DRIVER_VERSION "gpuwatch-sim"
#define MEM_TOTAL 151397597184ULL
#define MEM_RESERVED 613416960ULL /* driver and ECC reservation */
#define LIMIT_MW 700000U
#define CAPPED_LIMIT_MW 350000U
#define IDLE_W 90.0
#define DYN_W 640.0 /* full load at full clock: 730 W, above the limit */
#define CLK_STEP 15U
#define CLK_SM_MAX 1980U
#define CLK_SM_IDLE 345U
#define CLK_SM_SW_THERMAL 1410U
#define CLK_SM_HW_SLOWDOWN 990U
#define CLK_MEM 2619U
#define CLK_VIDEO_MAX 1755U
#define CLK_EXP 2.5 /* dynamic power ~ clock^2.5 (frequency and voltage) */
#define PCIE_GEN_MAX 5U
#define PCIE_WIDTH_MAX 16U
#define PCIE_GEN_DOWN 3U
#define PCIE_WIDTH_DOWN 8U
#define PCI_DEVICE_ID 0x233510DEU
#define PCI_SUBSYS_ID 0x18BE10DEU

/* thermal model */
#define AMBIENT_C 27.0
#define K_CORE 0.062   /* degrees C per watt at equilibrium */
#define TAU_TEMP_S 30.0 /* core and HBM share it: HBM stays above core */
#define HBM_OFFSET_C 3.0
#define RUNAWAY_RATE 0.5 /* degrees C per second while cooling fails */
#define RUNAWAY_MAX 65.0
#define SW_THERMAL_C 87.0
#define HW_THERMAL_C 90.0
#define HBM_SW_THERMAL_C 92.0
#define HBM_HW_THERMAL_C 95.0

/* load model */
#define MAX_JOBS 4
#define JOBS_AT_NOON 2.4 /* expected concurrent jobs at the busiest hour */
#define TAU_LOAD_S 2.0
#define PID_BASE 4000000U
#define PIDS_PER_GPU 2000U
#define GIB (1ULL << 30)
#define ALLOC_ALIGN (2ULL << 20)

/* faults */
#define XID_DBE 48
#define XID_FALLEN_OFF_BUS 79
#define ECC_SBE_MIN_PER_STEP 20U /* 20..40 per 100 ms: ~300/s */
#define DBE_FIRST_MAX_S 5.0
#define DBE_GAP_MIN_S 15.0
#define DBE_GAP_MAX_S 25.0
#define ROW_REMAP_FAILURE 64U

#define SUPPORTED_EVENTS                                                      \
	(GW_NVML_EVENT_SINGLE_BIT_ECC | GW_NVML_EVENT_DOUBLE_BIT_ECC |        \
	 GW_NVML_EVENT_XID_CRITICAL)
#define NOT_AVAILABLE 0xFFFFFFFFU /* instance ids outside MIG */

#define MAX_SETS 16
#define MAX_SAMPLES (GW_SIM_MAX_GPUS * 4)
#define EVQ_LEN 256
#define NLINKS GW_NVML_NVLINK_MAX_LINKS
#define NLINK_COUNTERS 4
#define NGPM 4

struct job {
	unsigned int pid;
	uint64_t end_step;
	unsigned long long mem;
	unsigned long long mem_target;
	double intensity; /* share of the GPU once loaded, 0..1 */
	double mem_int;   /* memory-boundness */
	double occ;       /* SM occupancy per active SM */
	double tensor;    /* tensor-core share */
	double nvlink;    /* multi-GPU traffic */
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

/* The one global; see sim.h.  world_lock guards world and every set. */
static pthread_mutex_t world_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_world world;

static const char *const fault_names[] = {
	[GW_SIM_FAULT_THERMAL_RUNAWAY] = "thermal-runaway",
	[GW_SIM_FAULT_ECC_STORM] = "ecc-storm",
	[GW_SIM_FAULT_XID79] = "xid79",
	[GW_SIM_FAULT_PCIE_DOWNGRADE] = "pcie-downgrade",
	[GW_SIM_FAULT_POWER_CAP] = "power-cap",
};
#define NFAULT_KINDS (sizeof(fault_names) / sizeof(fault_names[0]))

/* ---- numbers and randomness ---------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* xorshift64*: the per-device stream */
static uint64_t rnd(struct dev *d)
{
	d->rng ^= d->rng >> 12;
	d->rng ^= d->rng << 25;
	d->rng ^= d->rng >> 27;
	return d->rng * 0x2545F4914F6CDD1DULL;
}

/* uniform in [0, 1) */
static double rnd_u(struct dev *d)
{
	return (double)(rnd(d) >> 11) * (1.0 / 9007199254740992.0);
}

static double rnd_range(struct dev *d, double lo, double hi)
{
	return lo + (hi - lo) * rnd_u(d);
}

/* approximately standard normal (Irwin-Hall, four terms) */
static double rnd_gauss(struct dev *d)
{
	double s = rnd_u(d) + rnd_u(d) + rnd_u(d) + rnd_u(d);

	return (s - 2.0) * 1.7320508075688772;
}

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static uint64_t secs_to_steps(double s)
{
	return (uint64_t)ceil(s / STEP_S - 1e-6);
}

static double step_time(uint64_t step)
{
	return (double)step * STEP_S;
}

static uint64_t ts_diff_ns(const struct timespec *a, const struct timespec *b)
{
	int64_t ns = (int64_t)(b->tv_sec - a->tv_sec) * (int64_t)NS_PER_S +
		     (b->tv_nsec - a->tv_nsec);

	return ns < 0 ? 0 : (uint64_t)ns;
}

static void mono_now(struct timespec *ts)
{
	/* cannot fail with a valid clock id and pointer */
	(void)clock_gettime(CLOCK_MONOTONIC, ts);
}

/* ---- time of day and load ------------------------------------------ */

/* 0.15 at 03:00, 0.95 at 15:00 */
static double diurnal(double t)
{
	double f = fmod(t / world.day_s + DAY_START_FRAC, 1.0);

	return 0.55 - 0.4 * cos(2.0 * M_PI * (f - 3.0 / 24.0));
}

static unsigned long long mem_free_for_jobs(const struct dev *d)
{
	unsigned long long used = MEM_RESERVED;
	unsigned int i;

	for (i = 0; i < d->njobs; i++)
		used += d->jobs[i].mem;
	return used >= MEM_TOTAL ? 0 : MEM_TOTAL - used;
}

static unsigned long long align_down(unsigned long long v)
{
	return v / ALLOC_ALIGN * ALLOC_ALIGN;
}

static void job_spawn(struct dev *d, uint64_t s, int preloaded)
{
	unsigned long long avail = mem_free_for_jobs(d);
	double dur;
	struct job *j;

	if (d->njobs >= MAX_JOBS || avail < 2 * GIB)
		return;
	j = &d->jobs[d->njobs++];
	memset(j, 0, sizeof(*j));
	j->pid = PID_BASE + d->index * PIDS_PER_GPU + d->pid_seq % PIDS_PER_GPU;
	d->pid_seq++;
	dur = -world.mean_job_s * log(1.0 - rnd_u(d));
	if (dur < 5.0)
		dur = 5.0;
	if (dur > 50.0 * world.mean_job_s)
		dur = 50.0 * world.mean_job_s;
	j->end_step = s + secs_to_steps(dur);
	j->mem_target = align_down((unsigned long long)(
		rnd_range(d, 0.2, 0.9) * (double)avail));
	j->intensity = rnd_range(d, 0.35, 0.95);
	j->mem_int = rnd_range(d, 0.3, 0.8);
	j->occ = rnd_range(d, 0.25, 0.6);
	j->tensor = rnd_range(d, 0.2, 0.8);
	j->nvlink = rnd_range(d, 0.0, 1.0);
	if (preloaded)
		j->mem = j->mem_target;
}

static void jobs_clear(struct dev *d)
{
	d->njobs = 0;
}

static void jobs_update(struct dev *d, uint64_t s)
{
	double expect = JOBS_AT_NOON * diurnal(step_time(s));
	unsigned int i;

	for (i = 0; i < d->njobs;) {
		if (s >= d->jobs[i].end_step) {
			d->jobs[i] = d->jobs[--d->njobs];
			continue;
		}
		i++;
	}
	if (rnd_u(d) < expect / world.mean_job_s * STEP_S)
		job_spawn(d, s, 0);
	for (i = 0; i < d->njobs; i++) {
		struct job *j = &d->jobs[i];
		unsigned long long chunk, avail;

		if (j->mem >= j->mem_target || rnd_u(d) >= 0.25)
			continue;
		chunk = align_down((unsigned long long)(
			rnd_range(d, 1.0, 4.0) * (double)GIB));
		if (chunk > j->mem_target - j->mem)
			chunk = j->mem_target - j->mem;
		avail = align_down(mem_free_for_jobs(d));
		if (chunk >= avail) {
			/* the allocator gives up: settle for what is held */
			chunk = avail;
			j->mem_target = j->mem + chunk;
		}
		j->mem += chunk;
	}
}

/* ---- events ------------------------------------------------------------ */

static void ev_push(struct dev *d, unsigned long long type,
		    unsigned long long data)
{
	unsigned int i;
	int any = 0;

	for (i = 0; i < MAX_SETS; i++) {
		struct evset *es = world.sets[i];
		struct gw_nvml_event_data *e;

		if (!es || !(es->mask[d->index] & type))
			continue;
		if (es->count == EVQ_LEN) {
			es->dropped++;
			continue;
		}
		e = &es->q[(es->head + es->count) % EVQ_LEN];
		e->device = d;
		e->event_type = type;
		e->event_data = data;
		e->gpu_instance_id = NOT_AVAILABLE;
		e->compute_instance_id = NOT_AVAILABLE;
		es->count++;
		any = 1;
	}
	if (any)
		pthread_cond_broadcast(&world.cond);
}

/* ---- faults ------------------------------------------------------------ */

static void ecc_storm_step(struct dev *d, struct fault_state *fs, uint64_t s)
{
	unsigned int n = ECC_SBE_MIN_PER_STEP + (unsigned int)(rnd(d) % 21);

	d->ecc_corr += n;
	if ((s - fs->from) % 10 == 0)
		ev_push(d, GW_NVML_EVENT_SINGLE_BIT_ECC, 0);
	if (s >= fs->next_row) {
		d->rows_corr++;
		fs->next_row = s + secs_to_steps(rnd_range(d, 5.0, 15.0));
	}
	if (s >= fs->next_dbe) {
		d->ecc_unc++;
		d->rows_unc++;
		d->rows_pending = 1;
		ev_push(d, GW_NVML_EVENT_DOUBLE_BIT_ECC, 0);
		ev_push(d, GW_NVML_EVENT_XID_CRITICAL, XID_DBE);
		fs->next_dbe = s + secs_to_steps(
			rnd_range(d, DBE_GAP_MIN_S, DBE_GAP_MAX_S));
	}
	if (d->rows_corr + d->rows_unc >= ROW_REMAP_FAILURE)
		d->rows_failure = 1;
}

static void faults_update(struct dev *d, uint64_t s, double dt)
{
	int lost = 0, runaway = 0, pcie = 0, cap = 0;
	unsigned int i;

	for (i = 0; i < world.opts.nfaults; i++) {
		const struct gw_sim_fault *f = &world.opts.faults[i];
		struct fault_state *fs = &world.fs[i];
		int active, starts;

		if (f->gpu != d->index)
			continue;
		active = s >= fs->from && s < fs->to;
		starts = active && !fs->active;
		fs->active = active;
		if (!active)
			continue;
		switch (f->kind) {
		case GW_SIM_FAULT_THERMAL_RUNAWAY:
			runaway = 1;
			break;
		case GW_SIM_FAULT_ECC_STORM:
			if (starts) {
				fs->next_dbe = s + 1 + secs_to_steps(rnd_range(
					d, 0.0, DBE_FIRST_MAX_S));
				fs->next_row = s + secs_to_steps(5.0);
			}
			if (!d->lost)
				ecc_storm_step(d, fs, s);
			break;
		case GW_SIM_FAULT_XID79:
			lost = 1;
			if (starts && !d->lost)
				ev_push(d, GW_NVML_EVENT_XID_CRITICAL,
					XID_FALLEN_OFF_BUS);
			break;
		case GW_SIM_FAULT_PCIE_DOWNGRADE:
			pcie = 1;
			break;
		case GW_SIM_FAULT_POWER_CAP:
			cap = 1;
			break;
		}
	}
	if (lost && !d->lost)
		jobs_clear(d);
	d->lost = lost;
	d->f_pcie = pcie;
	d->f_cap = cap;
	d->runaway = runaway ? fmin(d->runaway + RUNAWAY_RATE * dt, RUNAWAY_MAX)
			     : 0.0;
}

/* ---- physics ------------------------------------------------------------ */

static double power_at(double idle_w, double dyn_w, double clk)
{
	return idle_w + dyn_w * pow(clk / CLK_SM_MAX, CLK_EXP);
}

/* bandwidth of one PCIe lane, KB/s */
static double pcie_lane_kbs(unsigned int gen)
{
	static const double lane[] = { 0, 250000, 500000, 984600, 1969000,
				       3938000 };

	return gen < sizeof(lane) / sizeof(lane[0]) ? lane[gen] : lane[5];
}

/* What the running jobs ask of the GPU, weighted by their intensity. */
struct mix {
	double target; /* load the jobs would give, 0..1 */
	double mem;    /* memory-boundness */
	double occ;
	double tensor;
	double nvlink;
};

static void jobs_mix(struct dev *d, struct mix *m)
{
	double w = 0;
	unsigned int i;

	memset(m, 0, sizeof(*m));
	d->mem_used = MEM_RESERVED;
	for (i = 0; i < d->njobs; i++) {
		const struct job *j = &d->jobs[i];
		/* a job still allocating is mostly copying data in */
		double eff = j->intensity *
			     (j->mem >= j->mem_target ? 1.0 : 0.25);

		w += eff;
		m->mem += eff * j->mem_int;
		m->occ += eff * j->occ;
		m->tensor += eff * j->tensor;
		m->nvlink += eff * j->nvlink;
		d->mem_used += j->mem;
	}
	if (w > 0) {
		m->mem /= w;
		m->occ /= w;
		m->tensor /= w;
		m->nvlink /= w;
	}
	m->target = fmin(w, 1.0);
}

/*
 * Clocks and power: the highest 15 MHz step that heat and the power limit
 * allow, then the power drawn at that clock in whole milliwatts.
 */
static void clocks_power(struct dev *d, double idle_w, double dyn_w)
{
	unsigned long long reasons = 0;
	double clk = CLK_SM_MAX, limit_w = d->limit_mw / 1000.0;
	long long mw;

	if (d->load < 0.01) {
		clk = CLK_SM_IDLE;
		reasons |= GW_NVML_CLOCKS_EVENT_GPU_IDLE;
	}
	if (d->t_core >= HW_THERMAL_C || d->t_hbm >= HBM_HW_THERMAL_C) {
		clk = fmin(clk, CLK_SM_HW_SLOWDOWN);
		reasons |= GW_NVML_CLOCKS_EVENT_HW_THERMAL |
			   GW_NVML_CLOCKS_EVENT_HW_SLOWDOWN;
	} else if (d->t_core >= SW_THERMAL_C || d->t_hbm >= HBM_SW_THERMAL_C) {
		clk = fmin(clk, CLK_SM_SW_THERMAL);
		reasons |= GW_NVML_CLOCKS_EVENT_SW_THERMAL;
	}
	if (dyn_w > 0 && power_at(idle_w, dyn_w, clk) > limit_w) {
		double f = CLK_SM_MAX * pow(fmax(limit_w - idle_w, 0.0) / dyn_w,
					    1.0 / CLK_EXP);

		if (f < clk) {
			clk = f;
			reasons |= GW_NVML_CLOCKS_EVENT_SW_POWER_CAP;
		}
	}
	d->clk_sm = (unsigned int)(clk / CLK_STEP) * CLK_STEP;
	if (d->clk_sm < CLK_SM_IDLE)
		d->clk_sm = CLK_SM_IDLE;
	d->reasons = reasons;
	mw = llround(power_at(idle_w, dyn_w, d->clk_sm) * 1000.0);
	d->power_mw = mw > (long long)d->limit_mw ? d->limit_mw
						  : (unsigned int)mw;
}

/* Utilisation, profiler metrics and link traffic of a GPU that answers. */
static void activity(struct dev *d, const struct mix *m, double noise,
		     double jitter, double dt)
{
	double sm, bw;

	if (d->load < 0.005) {
		d->util_gpu = 0;
	} else {
		d->util_gpu = (unsigned int)clampd(
			round(100.0 * d->load * (1.0 + 0.03 * noise)), 1, 100);
	}
	d->mem_frac = d->util_gpu / 100.0 * m->mem;
	d->util_mem = (unsigned int)lround(100.0 * d->mem_frac);
	sm = d->util_gpu * 0.92;
	d->gpm_inst[0] = sm;
	d->gpm_inst[1] = sm * m->occ;
	d->gpm_inst[2] = sm * m->tensor;
	d->gpm_inst[3] = clampd(100.0 * d->mem_frac * 0.85, 0, 100);

	/* PCIe in KB/s, limited by the link; NVLink cumulative KiB */
	bw = pcie_lane_kbs(d->pcie_gen) * d->pcie_width * 0.9;
	d->pcie_rx_kbs = (unsigned int)fmin(d->load * 8e6 * jitter, bw);
	d->pcie_tx_kbs = (unsigned int)fmin(d->load * 3e6 * jitter, bw);
	d->nvl_tx_kib += (unsigned long long)(d->load * m->nvlink * 2.5e8 * dt);
	d->nvl_rx_kib += (unsigned long long)(d->load * m->nvlink * 2.5e8 *
					      jitter * 0.95 * dt);
}

static void go_dark(struct dev *d)
{
	d->power_mw = 0;
	d->util_gpu = d->util_mem = 0;
	d->mem_frac = 0;
	d->clk_sm = 0;
	d->reasons = 0;
	d->pcie_tx_kbs = d->pcie_rx_kbs = 0;
	memset(d->gpm_inst, 0, sizeof(d->gpm_inst));
}

/*
 * Compute the observable state for step s from the jobs, the faults and the
 * previous state.  dt = 0 (at start) computes without moving the filters and
 * puts temperatures at equilibrium.
 */
static void physics(struct dev *d, uint64_t s, double dt)
{
	double noise, idle_w, dyn_w, jitter, amb, p, core_tgt, hbm_tgt, a;
	struct mix m;
	unsigned int i;

	jobs_mix(d, &m);
	d->load += (m.target - d->load) * (1.0 - exp(-dt / TAU_LOAD_S));
	if (d->njobs == 0 && d->load < 1e-3)
		d->load = 0;

	/* drawn unconditionally: the stream does not depend on the state */
	noise = rnd_gauss(d);
	idle_w = IDLE_W + rnd_range(d, -1.0, 1.0);
	dyn_w = d->load * DYN_W * fmax(0.0, 1.0 + 0.02 * rnd_gauss(d));
	jitter = rnd_range(d, 0.5, 1.5);

	d->limit_mw = d->f_cap ? CAPPED_LIMIT_MW : LIMIT_MW;
	d->pcie_gen = d->f_pcie ? PCIE_GEN_DOWN : PCIE_GEN_MAX;
	d->pcie_width = d->f_pcie ? PCIE_WIDTH_DOWN : PCIE_WIDTH_MAX;
	if (d->lost) {
		go_dark(d);
	} else {
		clocks_power(d, idle_w, dyn_w);
		activity(d, &m, noise, jitter, dt);
	}

	/* first-order lag toward ambient + k * power (+ failing cooling) */
	p = d->power_mw / 1000.0;
	amb = AMBIENT_C + d->amb_off + 1.5 * (diurnal(step_time(s)) - 0.5);
	core_tgt = amb + K_CORE * p + d->runaway;
	hbm_tgt = core_tgt + HBM_OFFSET_C + 4.0 * d->mem_frac +
		  0.15 * d->runaway;
	if (dt <= 0) {
		d->t_core = core_tgt;
		d->t_hbm = hbm_tgt;
	} else {
		a = 1.0 - exp(-dt / TAU_TEMP_S);
		d->t_core += (core_tgt - d->t_core) * a;
		d->t_hbm += (hbm_tgt - d->t_hbm) * a;
	}
	/* mW * 1 ms = 1 uJ */
	d->energy_uj += (uint64_t)d->power_mw * (uint64_t)llround(dt * 1000.0);
	for (i = 0; i < NGPM; i++)
		d->gpm_integ[i] += d->gpm_inst[i] * dt;

	/* rare background link noise; a degraded PCIe link replays often */
	if (rnd_u(d) < (d->f_pcie ? 0.5 : 2e-5) && !d->lost)
		d->replay++;
	if (rnd_u(d) < 2e-5 && !d->lost) {
		i = (unsigned int)(rnd(d) % NLINKS);
		d->nvl_err[i][GW_NVML_NVLINK_ERROR_DL_CRC_FLIT]++;
		d->nvl_err[i][GW_NVML_NVLINK_ERROR_DL_REPLAY]++;
	}
}

static void check_dev(const struct dev *d)
{
	assert(d->power_mw <= d->limit_mw);
	assert(d->clk_sm % CLK_STEP == 0 && d->clk_sm <= CLK_SM_MAX);
	assert(d->mem_used <= MEM_TOTAL);
	assert(d->util_gpu <= 100 && d->util_mem <= 100);
	assert(!d->lost || (d->njobs == 0 && d->power_mw == 0));
	assert(d->njobs <= MAX_JOBS);
	(void)d;
}

static void dev_step(struct dev *d)
{
	uint64_t s = ++d->step;

	faults_update(d, s, STEP_S);
	if (!d->lost)
		jobs_update(d, s);
	physics(d, s, STEP_S);
	check_dev(d);
}

static void dev_init(struct dev *d, unsigned int index)
{
	static const unsigned int buses[] = { 0x18, 0x2A, 0x3A, 0x5D,
					      0x9A, 0xAB, 0xBA, 0xDB };
	uint64_t x = world.opts.seed ^ (0xD1B54A32D192ED03ULL * (index + 1));
	uint64_t h1, h2;
	unsigned int i, n;

	memset(d, 0, sizeof(*d));
	d->index = index;
	h1 = splitmix64(&x);
	h2 = splitmix64(&x);
	d->rng = splitmix64(&x) | 1;
	snprintf(d->uuid, sizeof(d->uuid),
		 "GPU-5151%04x-%04x-%04x-%04x-%012llx",
		 (unsigned int)(h1 & 0xFFFF), (unsigned int)((h1 >> 16) & 0xFFFF),
		 (unsigned int)((h1 >> 32) & 0x0FFF) | 0x4000,
		 (unsigned int)((h1 >> 48) & 0x3FFF) | 0x8000,
		 (unsigned long long)(h2 & 0xFFFFFFFFFFFFULL));
	d->pci.domain = index / 8;
	d->pci.bus = buses[index % 8];
	d->pci.device = 0;
	d->pci.pci_device_id = PCI_DEVICE_ID;
	d->pci.pci_subsystem_id = PCI_SUBSYS_ID;
	snprintf(d->pci.bus_id, sizeof(d->pci.bus_id), "%08X:%02X:00.0",
		 d->pci.domain, d->pci.bus);
	snprintf(d->pci.bus_id_legacy, sizeof(d->pci.bus_id_legacy),
		 "%04X:%02X:00.0", d->pci.domain & 0xFFFF, d->pci.bus);

	d->amb_off = rnd_range(d, 0.0, 4.0); /* position in the chassis */
	/* energy since driver load: some days at a few hundred watts */
	d->energy_uj = (uint64_t)rnd_range(d, 1e13, 1e14);

	/* a GPU already at work: jobs as many as the hour calls for */
	n = (unsigned int)(JOBS_AT_NOON * diurnal(0) + rnd_u(d));
	for (i = 0; i < n; i++)
		job_spawn(d, 0, 1);
	for (i = 0; i < d->njobs; i++)
		d->load += d->jobs[i].intensity;
	d->load = fmin(d->load, 1.0);

	faults_update(d, 0, 0);
	physics(d, 0, 0);
	check_dev(d);
}

/* ---- the clock ------------------------------------------------------- */

static uint64_t now_step(void)
{
	struct timespec ts;

	if (world.opts.manual_clock)
		return world.manual_ns / STEP_NS;
	mono_now(&ts);
	return ts_diff_ns(&world.t0, &ts) / STEP_NS;
}

static void catch_up(struct dev *d, uint64_t target)
{
	while (d->step < target)
		dev_step(d);
}

static void catch_up_all(void)
{
	uint64_t target = now_step();
	unsigned int i;

	for (i = 0; i < world.opts.gpus; i++)
		catch_up(&world.dev[i], target);
}

static long long step_wall_us(uint64_t step)
{
	return (long long)(world.wall0_us + step * (STEP_NS / 1000));
}

/* ---- public API ------------------------------------------------------ */

const char *gw_sim_fault_name(enum gw_sim_fault_kind k)
{
	if ((unsigned int)k >= NFAULT_KINDS)
		return "unknown";
	return fault_names[k];
}

#define SPEC_FORM "NAME:GPU[:AFTER_S[:DURATION_S]]"
#define SPEC_SHOW 64 /* spec characters quoted in a message */
#define FIELD_SHOW(len) ((int)((len) > 32 ? 32 : (len)))

__attribute__((format(printf, 3, 4))) static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int parse_secs(const char *p, size_t len, double *out)
{
	char buf[40];
	char *end;
	size_t i;
	double v;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	if (!(p[0] >= '0' && p[0] <= '9') && p[0] != '.')
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (!strchr("0123456789.eE+-", p[i]) || p[i] == '\0')
			return -EINVAL;
	}
	memcpy(buf, p, len);
	buf[len] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (errno || end != buf + len || !isfinite(v) || v < 0 ||
	    v > MAX_TIME_S)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_gpu(const char *p, size_t len, unsigned int *out)
{
	char buf[8];
	char *end;
	unsigned long v;
	size_t i;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
	}
	memcpy(buf, p, len);
	buf[len] = '\0';
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || end != buf + len || v >= GW_SIM_MAX_GPUS)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

int gw_sim_fault_parse(const char *spec, struct gw_sim_fault *out, char *err,
		       size_t errlen)
{
	const char *field[4];
	size_t flen[4];
	struct gw_sim_fault f = { 0 };
	unsigned int nf = 0, k;
	const char *p, *colon;

	if (!spec || !*spec) {
		set_err(err, errlen, "empty fault spec (expected " SPEC_FORM ")");
		return -EINVAL;
	}
	if (!out) {
		set_err(err, errlen, "fault '%.*s': nowhere to store the result",
			SPEC_SHOW, spec);
		return -EINVAL;
	}
	for (p = spec;; p = colon + 1) {
		colon = strchr(p, ':');
		if (nf == 4) {
			set_err(err, errlen,
				"fault '%.*s': too many fields (expected " SPEC_FORM
				")",
				SPEC_SHOW, spec);
			return -EINVAL;
		}
		field[nf] = p;
		flen[nf] = colon ? (size_t)(colon - p) : strlen(p);
		nf++;
		if (!colon)
			break;
	}
	for (k = 0; k < NFAULT_KINDS; k++) {
		if (strlen(fault_names[k]) == flen[0] &&
		    memcmp(fault_names[k], field[0], flen[0]) == 0)
			break;
	}
	if (k == NFAULT_KINDS) {
		set_err(err, errlen,
			"fault '%.*s': unknown fault name '%.*s' (expected one "
			"of thermal-runaway, ecc-storm, xid79, pcie-downgrade, "
			"power-cap)",
			SPEC_SHOW, spec, FIELD_SHOW(flen[0]), field[0]);
		return -EINVAL;
	}
	f.kind = (enum gw_sim_fault_kind)k;
	if (nf < 2) {
		set_err(err, errlen,
			"fault '%.*s': missing GPU index (expected " SPEC_FORM
			")",
			SPEC_SHOW, spec);
		return -EINVAL;
	}
	if (parse_gpu(field[1], flen[1], &f.gpu)) {
		set_err(err, errlen,
			"fault '%.*s': GPU index '%.*s' is not a whole number "
			"from 0 to %d",
			SPEC_SHOW, spec, FIELD_SHOW(flen[1]), field[1],
			GW_SIM_MAX_GPUS - 1);
		return -EINVAL;
	}
	if (nf >= 3 && parse_secs(field[2], flen[2], &f.after_s)) {
		set_err(err, errlen,
			"fault '%.*s': AFTER_S '%.*s' is not a number of "
			"seconds from 0 to 1e9",
			SPEC_SHOW, spec, FIELD_SHOW(flen[2]), field[2]);
		return -EINVAL;
	}
	if (nf >= 4 && parse_secs(field[3], flen[3], &f.duration_s)) {
		set_err(err, errlen,
			"fault '%.*s': DURATION_S '%.*s' is not a number of "
			"seconds from 0 to 1e9 (0 = forever)",
			SPEC_SHOW, spec, FIELD_SHOW(flen[3]), field[3]);
		return -EINVAL;
	}
	*out = f;
	return 0;
}

static int check_opts(const struct gw_sim_opts *o)
{
	unsigned int i;

	if (!o || o->gpus == 0 || o->gpus > GW_SIM_MAX_GPUS)
		return -EINVAL;
	if (!isfinite(o->day_s) || o->day_s < 0 ||
	    (o->day_s > 0 && o->day_s < 1.0))
		return -EINVAL;
	if (o->nfaults > GW_SIM_MAX_FAULTS)
		return -EINVAL;
	for (i = 0; i < o->nfaults; i++) {
		const struct gw_sim_fault *f = &o->faults[i];

		if ((unsigned int)f->kind >= NFAULT_KINDS || f->gpu >= o->gpus)
			return -EINVAL;
		if (!isfinite(f->after_s) || f->after_s < 0 ||
		    f->after_s > MAX_TIME_S)
			return -EINVAL;
		if (!isfinite(f->duration_s) || f->duration_s < 0 ||
		    f->duration_s > MAX_TIME_S)
			return -EINVAL;
	}
	return 0;
}

int gw_sim_start(const struct gw_sim_opts *o)
{
	pthread_condattr_t ca;
	struct timespec wall;
	unsigned int i;
	int err;

	err = check_opts(o);
	if (err)
		return err;
	pthread_mutex_lock(&world_lock);
	if (world.started) {
		err = -EBUSY;
		goto out_unlock;
	}
	memset(&world, 0, sizeof(world));
	world.opts = *o;
	world.day_s = o->day_s > 0 ? o->day_s : DEFAULT_DAY_S;
	world.mean_job_s = clampd(world.day_s / 96.0, 10.0, 3600.0);
	if (clock_gettime(CLOCK_MONOTONIC, &world.t0) ||
	    clock_gettime(CLOCK_REALTIME, &wall)) {
		err = -errno;
		goto out_unlock;
	}
	world.wall0_us = (uint64_t)wall.tv_sec * 1000000ULL +
			 (uint64_t)wall.tv_nsec / 1000;
	err = -pthread_condattr_init(&ca);
	if (err)
		goto out_unlock;
	err = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!err)
		err = -pthread_cond_init(&world.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		goto out_unlock;
	for (i = 0; i < o->nfaults; i++) {
		world.fs[i].from = secs_to_steps(o->faults[i].after_s);
		world.fs[i].to = o->faults[i].duration_s > 0
					 ? world.fs[i].from +
						   secs_to_steps(o->faults[i].duration_s)
					 : UINT64_MAX;
	}
	for (i = 0; i < o->gpus; i++)
		dev_init(&world.dev[i], i);
	world.started = 1;
out_unlock:
	pthread_mutex_unlock(&world_lock);
	return err;
}

void gw_sim_stop(void)
{
	unsigned int i;

	pthread_mutex_lock(&world_lock);
	if (!world.started)
		goto out_unlock;
	world.started = 0;
	pthread_cond_broadcast(&world.cond);
	while (world.waiters)
		pthread_cond_wait(&world.cond, &world_lock);
	for (i = 0; i < MAX_SETS; i++)
		free(world.sets[i]);
	for (i = 0; i < MAX_SAMPLES; i++)
		free(world.samples[i]);
	pthread_cond_destroy(&world.cond);
	memset(&world, 0, sizeof(world));
out_unlock:
	pthread_mutex_unlock(&world_lock);
}

void gw_sim_advance(double seconds)
{
	pthread_mutex_lock(&world_lock);
	if (world.started && world.opts.manual_clock && isfinite(seconds) &&
	    seconds >= 0 && seconds <= MAX_TIME_S) {
		world.manual_ns += (uint64_t)llround(seconds * 1e9);
		catch_up_all();
	}
	pthread_mutex_unlock(&world_lock);
}

/* ---- the NVML table: library-level calls ----------------------------- */

static int sim_init(void)
{
	int ret = GW_NVML_SUCCESS;

	pthread_mutex_lock(&world_lock);
	if (!world.started)
		ret = GW_NVML_ERROR_DRIVER_NOT_LOADED;
	else
		world.refs++;
	pthread_mutex_unlock(&world_lock);
	return ret;
}

static int sim_shutdown(void)
{
	int ret = GW_NVML_SUCCESS;

	pthread_mutex_lock(&world_lock);
	if (!world.started || world.refs == 0)
		ret = GW_NVML_ERROR_UNINITIALIZED;
	else
		world.refs--;
	pthread_mutex_unlock(&world_lock);
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

/* Is the library usable?  Called with world_lock held. */
static int lib_ready(void)
{
	return world.started && world.refs > 0 ? GW_NVML_SUCCESS
					       : GW_NVML_ERROR_UNINITIALIZED;
}

static int sim_system_get_driver_version(char *buf, unsigned int len)
{
	int ret;

	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	pthread_mutex_unlock(&world_lock);
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

	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (!ret && !count)
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
	if (!ret)
		*count = world.opts.gpus;
	pthread_mutex_unlock(&world_lock);
	return ret;
}

/*
 * Look a handle up, bring that device to now and check it answers.  On
 * success world_lock stays held and the caller releases it with dev_leave().
 */
static int dev_enter(gw_nvml_device_t h, struct dev **out)
{
	uintptr_t off = (uintptr_t)h - (uintptr_t)world.dev;
	struct dev *d;
	int ret;

	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (ret)
		goto err_unlock;
	if ((uintptr_t)h < (uintptr_t)world.dev || off % sizeof(*d) ||
	    off / sizeof(*d) >= world.opts.gpus) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto err_unlock;
	}
	d = &world.dev[off / sizeof(*d)];
	catch_up(d, now_step());
	if (d->lost) {
		ret = GW_NVML_ERROR_GPU_IS_LOST;
		goto err_unlock;
	}
	*out = d;
	return GW_NVML_SUCCESS;
err_unlock:
	pthread_mutex_unlock(&world_lock);
	return ret;
}

static void dev_leave(void)
{
	pthread_mutex_unlock(&world_lock);
}

static int sim_device_get_handle_by_index(unsigned int index,
					  gw_nvml_device_t *h)
{
	struct dev *d;
	int ret;

	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	if (!h || index >= world.opts.gpus) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	d = &world.dev[index];
	catch_up(d, now_step());
	if (d->lost) {
		ret = GW_NVML_ERROR_GPU_IS_LOST;
		goto out_unlock;
	}
	*h = d;
out_unlock:
	pthread_mutex_unlock(&world_lock);
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
	ts = step_wall_us(d->step);
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
#define DEV_GET(fn, type, expr)                                               \
	static int fn(gw_nvml_device_t h, type *out)                          \
	{                                                                     \
		struct dev *d;                                                \
		int ret;                                                      \
									      \
		if (!out)                                                     \
			return GW_NVML_ERROR_INVALID_ARGUMENT;                \
		ret = dev_enter(h, &d);                                       \
		if (ret)                                                      \
			return ret;                                           \
		*out = (expr);                                                \
		dev_leave();                                                  \
		return GW_NVML_SUCCESS;                                       \
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

	if (!n || (type != GW_NVML_MEMORY_ERROR_TYPE_CORRECTED &&
		   type != GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
	    (counter != GW_NVML_VOLATILE_ECC && counter != GW_NVML_AGGREGATE_ECC))
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
					unsigned int *unc, unsigned int *pending,
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
	ts = (unsigned long long)step_wall_us(d->step);
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
		u[i].mem_util = (unsigned int)lround(
			d->util_gpu * share * j->mem_int);
		u[i].enc_util = 0;
		u[i].dec_util = 0;
	}
	*count = n;
out_leave:
	dev_leave();
	return ret;
}

/* ---- the NVML table: events ------------------------------------------ */

/* Index of a live set, or -1.  Called with world_lock held. */
static int find_set(const void *set)
{
	int i;

	if (!set)
		return -1;
	for (i = 0; i < MAX_SETS; i++) {
		if (world.sets[i] == set)
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
	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	for (i = 0; i < MAX_SETS && world.sets[i]; i++)
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
	world.sets[i] = es;
	*set = es;
out_unlock:
	pthread_mutex_unlock(&world_lock);
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
		world.sets[i]->mask[d->index] |= types;
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
	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	i = find_set(set);
	if (i < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	catch_up_all();
	if (ev_pop(world.sets[i], data))
		goto out_unlock;
	ret = GW_NVML_ERROR_TIMEOUT;
	if (world.opts.manual_clock || timeout_ms == 0)
		goto out_unlock;
	deadline_after(&deadline, (unsigned long long)timeout_ms * 1000000ULL);
	world.waiters++;
	for (;;) {
		/*
		 * Device calls catch the physics up and broadcast new events,
		 * so waking every 10 steps is only a safety net for idle
		 * devices: each wake-up costs more than a whole poll.
		 */
		deadline_after(&wake, 10 * STEP_NS);
		if (ts_before(&deadline, &wake))
			wake = deadline;
		pthread_cond_timedwait(&world.cond, &world_lock, &wake);
		if (!world.started) {
			ret = GW_NVML_ERROR_UNINITIALIZED;
			break;
		}
		i = find_set(set);
		if (i < 0) {
			ret = GW_NVML_ERROR_INVALID_ARGUMENT;
			break;
		}
		catch_up_all();
		if (ev_pop(world.sets[i], data)) {
			ret = GW_NVML_SUCCESS;
			break;
		}
		mono_now(&now);
		if (!ts_before(&now, &deadline))
			break;
	}
	world.waiters--;
	if (!world.started)
		pthread_cond_broadcast(&world.cond); /* gw_sim_stop() waits */
out_unlock:
	pthread_mutex_unlock(&world_lock);
	return ret;
}

static int sim_event_set_free(void *set)
{
	int ret, i;

	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	i = find_set(set);
	if (i < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	free(world.sets[i]);
	world.sets[i] = NULL;
out_unlock:
	pthread_mutex_unlock(&world_lock);
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
		if (world.samples[i] == p)
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
	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	for (i = 0; i < MAX_SAMPLES && world.samples[i]; i++)
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
	world.samples[i] = g;
	*out = g;
out_unlock:
	pthread_mutex_unlock(&world_lock);
	return ret;
}

static int sim_gpm_sample_free(void *p)
{
	int ret, i;

	pthread_mutex_lock(&world_lock);
	ret = lib_ready();
	if (ret)
		goto out_unlock;
	i = find_sample(p);
	if (i < 0) {
		ret = GW_NVML_ERROR_INVALID_ARGUMENT;
		goto out_unlock;
	}
	free(world.samples[i]);
	world.samples[i] = NULL;
out_unlock:
	pthread_mutex_unlock(&world_lock);
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
	pthread_mutex_lock(&world_lock);
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
		g->value = dt > 0 ? (b->integ[k] - a->integ[k]) / dt
				  : b->inst[k];
		g->value = clampd(g->value, 0, 100);
		g->info.short_name = gpm_short[k];
		g->info.long_name = gpm_long[k];
		g->info.unit = gpm_unit;
	}
out_unlock:
	pthread_mutex_unlock(&world_lock);
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
