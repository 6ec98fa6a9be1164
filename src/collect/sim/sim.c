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

#include "sim_int.h"

static struct gw_sim_instance the_world = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};
_Thread_local struct gw_sim_instance *gw_sim_cur = &the_world;

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

static uint64_t secs_to_steps(double s)
{
	return (uint64_t)ceil(s / STEP_S - 1e-6);
}

static uint64_t ts_diff_ns(const struct timespec *a, const struct timespec *b)
{
	int64_t ns = (int64_t)(b->tv_sec - a->tv_sec) * (int64_t)NS_PER_S +
		     (b->tv_nsec - a->tv_nsec);

	return ns < 0 ? 0 : (uint64_t)ns;
}

/* ---- time of day and load ------------------------------------------ */

/* 0.15 at 03:00, 0.95 at 15:00 */
static double diurnal(double t)
{
	double f = fmod(t / gw_sim_world.day_s + DAY_START_FRAC, 1.0);

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
	dur = -gw_sim_world.mean_job_s * log(1.0 - rnd_u(d));
	if (dur < 5.0)
		dur = 5.0;
	if (dur > 50.0 * gw_sim_world.mean_job_s)
		dur = 50.0 * gw_sim_world.mean_job_s;
	j->end_step = s + secs_to_steps(dur);
	j->mem_target = align_down(
		(unsigned long long)(rnd_range(d, 0.2, 0.9) * (double)avail));
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
	if (rnd_u(d) < expect / gw_sim_world.mean_job_s * STEP_S)
		job_spawn(d, s, 0);
	for (i = 0; i < d->njobs; i++) {
		struct job *j = &d->jobs[i];
		unsigned long long chunk, avail;

		if (j->mem >= j->mem_target || rnd_u(d) >= 0.25)
			continue;
		chunk = align_down((unsigned long long)(rnd_range(d, 1.0, 4.0) *
							(double)GIB));
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
		struct evset *es = gw_sim_world.sets[i];
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
		pthread_cond_broadcast(&gw_sim_world.cond);
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
		fs->next_dbe = s + secs_to_steps(rnd_range(d, DBE_GAP_MIN_S,
							   DBE_GAP_MAX_S));
	}
	if (d->rows_corr + d->rows_unc >= ROW_REMAP_FAILURE)
		d->rows_failure = 1;
}

static void faults_update(struct dev *d, uint64_t s, double dt)
{
	int lost = 0, runaway = 0, pcie = 0, cap = 0;
	unsigned int i;

	for (i = 0; i < gw_sim_world.opts.nfaults; i++) {
		const struct gw_sim_fault *f = &gw_sim_world.opts.faults[i];
		struct fault_state *fs = &gw_sim_world.fs[i];
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
				fs->next_dbe =
					s + 1 +
					secs_to_steps(rnd_range(
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
	static const double lane[] = { 0,      250000,	500000,
				       984600, 1969000, 3938000 };

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
		double eff =
			j->intensity * (j->mem >= j->mem_target ? 1.0 : 0.25);

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
	d->power_mw =
		mw > (long long)d->limit_mw ? d->limit_mw : (unsigned int)mw;
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
	hbm_tgt =
		core_tgt + HBM_OFFSET_C + 4.0 * d->mem_frac + 0.15 * d->runaway;
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
	d->clk_hist[s % CLK_HIST] = (unsigned short)d->clk_sm;
	check_dev(d);
}

static void dev_init(struct dev *d, unsigned int index)
{
	static const unsigned int buses[] = { 0x18, 0x2A, 0x3A, 0x5D,
					      0x9A, 0xAB, 0xBA, 0xDB };
	uint64_t x =
		gw_sim_world.opts.seed ^ (0xD1B54A32D192ED03ULL * (index + 1));
	uint64_t h1, h2;
	double uptime_s, nvl_frac;
	unsigned int i, n;

	memset(d, 0, sizeof(*d));
	d->index = index;
	h1 = splitmix64(&x);
	h2 = splitmix64(&x);
	d->rng = splitmix64(&x) | 1;
	snprintf(d->uuid, sizeof(d->uuid),
		 "GPU-5151%04x-%04x-%04x-%04x-%012llx",
		 (unsigned int)(h1 & 0xFFFF),
		 (unsigned int)((h1 >> 16) & 0xFFFF),
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
	/* NVLink traffic over those same days (energy / 300 W of uptime) at
	 * 10-40% of the links' rate, from the uuid's bits, not the random
	 * stream: counters that start where a GPU days into its work has
	 * them, not at zero */
	uptime_s = (double)d->energy_uj / 1e6 / 300.0;
	nvl_frac = 0.1 + 0.3 * (double)((h2 >> 48) & 0xFFFF) / 65535.0;
	d->nvl_tx_kib = (unsigned long long)(uptime_s * 2.5e8 * nvl_frac);
	d->nvl_rx_kib =
		(unsigned long long)(uptime_s * 2.5e8 * nvl_frac * 0.95);

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

uint64_t gw_sim_now_step(void)
{
	struct timespec ts;

	if (gw_sim_world.opts.manual_clock)
		return gw_sim_world.manual_ns / STEP_NS;
	mono_now(&ts);
	return ts_diff_ns(&gw_sim_world.t0, &ts) / STEP_NS;
}

void gw_sim_catch_up(struct dev *d, uint64_t target)
{
	while (d->step < target)
		dev_step(d);
}

void gw_sim_catch_up_all(void)
{
	uint64_t target = gw_sim_now_step();
	unsigned int i;

	for (i = 0; i < gw_sim_world.opts.gpus; i++)
		gw_sim_catch_up(&gw_sim_world.dev[i], target);
}

long long gw_sim_step_wall_us(uint64_t step)
{
	return (long long)(gw_sim_world.wall0_us + step * (STEP_NS / 1000));
}

/* ---- public API ------------------------------------------------------ */

const char *gw_sim_fault_name(enum gw_sim_fault_kind k)
{
	if ((unsigned int)k >= NFAULT_KINDS)
		return "unknown";
	return fault_names[k];
}

#define SPEC_FORM	"NAME:GPU[:AFTER_S[:DURATION_S]]"
#define SPEC_SHOW	64 /* spec characters quoted in a message */
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
		set_err(err, errlen,
			"empty fault spec (expected " SPEC_FORM ")");
		return -EINVAL;
	}
	if (!out) {
		set_err(err, errlen,
			"fault '%.*s': nowhere to store the result", SPEC_SHOW,
			spec);
		return -EINVAL;
	}
	for (p = spec;; p = colon + 1) {
		colon = strchr(p, ':');
		if (nf == 4) {
			set_err(err, errlen,
				"fault '%.*s': too many fields "
				"(expected " SPEC_FORM ")",
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
	pthread_mutex_lock(&gw_sim_lock);
	if (gw_sim_world.started) {
		err = -EBUSY;
		goto out_unlock;
	}
	memset(&gw_sim_world, 0, sizeof(gw_sim_world));
	gw_sim_world.opts = *o;
	gw_sim_world.day_s = o->day_s > 0 ? o->day_s : DEFAULT_DAY_S;
	gw_sim_world.mean_job_s =
		clampd(gw_sim_world.day_s / 96.0, 10.0, 3600.0);
	if (clock_gettime(CLOCK_MONOTONIC, &gw_sim_world.t0) ||
	    clock_gettime(CLOCK_REALTIME, &wall)) {
		err = -errno;
		goto out_unlock;
	}
	gw_sim_world.wall0_us = (uint64_t)wall.tv_sec * 1000000ULL +
				(uint64_t)wall.tv_nsec / 1000;
	err = -pthread_condattr_init(&ca);
	if (err)
		goto out_unlock;
	err = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!err)
		err = -pthread_cond_init(&gw_sim_world.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		goto out_unlock;
	for (i = 0; i < o->nfaults; i++) {
		gw_sim_world.fs[i].from = secs_to_steps(o->faults[i].after_s);
		gw_sim_world.fs[i].to =
			o->faults[i].duration_s > 0
				? gw_sim_world.fs[i].from +
					  secs_to_steps(o->faults[i].duration_s)
				: UINT64_MAX;
	}
	for (i = 0; i < o->gpus; i++)
		dev_init(&gw_sim_world.dev[i], i);
	gw_sim_world.started = 1;
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
	return err;
}

void gw_sim_stop(void)
{
	unsigned int i;

	pthread_mutex_lock(&gw_sim_lock);
	if (!gw_sim_world.started)
		goto out_unlock;
	gw_sim_world.started = 0;
	pthread_cond_broadcast(&gw_sim_world.cond);
	while (gw_sim_world.waiters)
		pthread_cond_wait(&gw_sim_world.cond, &gw_sim_lock);
	for (i = 0; i < MAX_SETS; i++)
		free(gw_sim_world.sets[i]);
	for (i = 0; i < MAX_SAMPLES; i++)
		free(gw_sim_world.samples[i]);
	pthread_cond_destroy(&gw_sim_world.cond);
	memset(&gw_sim_world, 0, sizeof(gw_sim_world));
out_unlock:
	pthread_mutex_unlock(&gw_sim_lock);
}

/* uniform in [0, 1) from a hash stream */
static double hash_u(uint64_t *h)
{
	return (double)(splitmix64(h) >> 11) * 0x1.0p-53;
}

/*
 * A job's training loop, as the job reports it at step s: the last
 * training step it finished.  Its steps are n simulated steps long (its
 * nominal step time at full clock, 0.2 to 0.75 s, at most 0.8 s), on a
 * grid of its own phase; the report is that of the step that ended at the
 * last grid point at or before s.  Its kernels take k0 seconds at full clock, scaled by
 * CLK_SM_MAX / clk_sm over the simulated steps they ran in (compute-bound
 * kernels); its host work h0 seconds.  Each with a few percent of noise.
 * The job's constants and the noise come from a hash of (seed, pid, the
 * step reported), so the devices' random streams, and every other value,
 * are the same with or without reports.
 */
static void proc_times(const struct dev *d, const struct job *j, uint64_t s,
		       struct gw_sim_proc *p)
{
	uint64_t h = gw_sim_world.opts.seed ^ (0x9E6C63D0676A9A99ULL * j->pid);
	uint64_t n, g;
	double k0, h0, slow = 0;

	k0 = 0.15 + 0.45 * hash_u(&h);
	h0 = 0.05 + 0.10 * hash_u(&h);
	n = (uint64_t)((k0 + h0) / STEP_S + 0.5);
	if (n < 1)
		n = 1;
	if (n > CLK_HIST / 2)
		n = CLK_HIST / 2;
	g = s - (s + (h % n)) % n; /* the last grid point: a step ended */
	if (g < n)
		g = n; /* the first whole step */
	for (uint64_t k = g - n; k < g; k++) {
		unsigned int c = d->clk_hist[k % CLK_HIST];

		slow += c ? (double)CLK_SM_MAX / c : 1.0;
	}
	h ^= g * 0xD6E8FEB86659FD93ULL;
	p->gpu = d->index;
	p->pid = j->pid;
	/* sums of two uniforms: triangular noise, +-3% and +-6% at most */
	p->kernel_s = k0 * slow / (double)n *
		      (1 + 0.03 * (hash_u(&h) + hash_u(&h) - 1));
	p->step_s =
		p->kernel_s + h0 * (1 + 0.06 * (hash_u(&h) + hash_u(&h) - 1));
}

int gw_sim_procs(struct gw_sim_proc *out, size_t max)
{
	uint64_t s;
	size_t n = 0;

	pthread_mutex_lock(&gw_sim_lock);
	if (!gw_sim_world.started) {
		pthread_mutex_unlock(&gw_sim_lock);
		return -ENODEV;
	}
	gw_sim_catch_up_all();
	s = gw_sim_now_step();
	for (unsigned int i = 0; i < gw_sim_world.opts.gpus; i++) {
		const struct dev *d = &gw_sim_world.dev[i];

		for (unsigned int k = 0; k < d->njobs && !d->lost && n < max;
		     k++)
			if (d->jobs[k].mem >= d->jobs[k].mem_target)
				proc_times(d, &d->jobs[k], s, &out[n++]);
	}
	pthread_mutex_unlock(&gw_sim_lock);
	return (int)n;
}

void gw_sim_advance(double seconds)
{
	pthread_mutex_lock(&gw_sim_lock);
	if (gw_sim_world.started && gw_sim_world.opts.manual_clock &&
	    isfinite(seconds) && seconds >= 0 && seconds <= MAX_TIME_S) {
		gw_sim_world.manual_ns += (uint64_t)llround(seconds * 1e9);
		gw_sim_catch_up_all();
	}
	pthread_mutex_unlock(&gw_sim_lock);
}

/* ---- private worlds (sim.h) ------------------------------------------ */

int gw_sim_instance_new(const struct gw_sim_opts *o,
			struct gw_sim_instance **out)
{
	struct gw_sim_opts mo = *o;
	struct gw_sim_instance *w, *prev = gw_sim_cur;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	err = -pthread_mutex_init(&w->lock, NULL);
	if (err) {
		free(w);
		return err;
	}
	mo.manual_clock = 1;
	gw_sim_cur = w;
	err = gw_sim_start(&mo);
	gw_sim_cur = prev;
	if (err) {
		pthread_mutex_destroy(&w->lock);
		free(w);
		return err;
	}
	*out = w;
	return 0;
}

void gw_sim_instance_free(struct gw_sim_instance *w)
{
	struct gw_sim_instance *prev = gw_sim_cur;

	if (!w)
		return;
	gw_sim_cur = w;
	gw_sim_stop();
	gw_sim_cur = prev == w ? &the_world : prev;
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void gw_sim_instance_enter(struct gw_sim_instance *w)
{
	gw_sim_cur = w ? w : &the_world;
}

void gw_sim_instance_leave(void)
{
	gw_sim_cur = &the_world;
}
