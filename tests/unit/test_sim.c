// SPDX-License-Identifier: MIT
/*
 * test_sim.c - the GPU simulator behind the NVML function table.
 *
 * Everything goes through gw_sim_fns(), as the collector does.  Most tests
 * use the manual clock, so simulated time moves only with gw_sim_advance()
 * and every result is reproducible; the last tests use the real clock for
 * the blocking event wait and concurrent callers.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "collect/nvml/nvml_abi.h"
#include "collect/sim/sim.h"

#define H200_MEM 151397597184ULL
#define GIB	 (1ULL << 30)

static const struct gw_nvml_fns *F;
static gw_nvml_device_t H[GW_SIM_MAX_GPUS];

/* Start a world with the given faults and open every GPU. */
static void sim_up(unsigned int gpus, double day_s, uint64_t seed, int manual,
		   const char *const *faults)
{
	struct gw_sim_opts o;
	char err[256];
	unsigned int i;

	memset(&o, 0, sizeof(o));
	o.gpus = gpus;
	o.day_s = day_s;
	o.seed = seed;
	o.manual_clock = manual;
	for (; faults && *faults; faults++) {
		assert_int_equal(gw_sim_fault_parse(*faults,
						    &o.faults[o.nfaults], err,
						    sizeof(err)),
				 0);
		o.nfaults++;
	}
	assert_int_equal(gw_sim_start(&o), 0);
	F = gw_sim_fns();
	assert_non_null(F);
	assert_int_equal(F->init(), GW_NVML_SUCCESS);
	for (i = 0; i < gpus; i++)
		assert_int_equal(F->device_get_handle_by_index(i, &H[i]),
				 GW_NVML_SUCCESS);
}

static int teardown_sim(void **state)
{
	(void)state;
	gw_sim_stop();
	return 0;
}

static unsigned int power_mw(unsigned int g)
{
	unsigned int v = 0;

	assert_int_equal(F->device_get_power_usage(H[g], &v), GW_NVML_SUCCESS);
	return v;
}

static unsigned int limit_mw(unsigned int g)
{
	unsigned int v = 0;

	assert_int_equal(F->device_get_enforced_power_limit(H[g], &v),
			 GW_NVML_SUCCESS);
	return v;
}

static unsigned int temp_core(unsigned int g)
{
	unsigned int v = 0;

	assert_int_equal(
		F->device_get_temperature(H[g], GW_NVML_TEMPERATURE_GPU, &v),
		GW_NVML_SUCCESS);
	return v;
}

static unsigned int temp_hbm(unsigned int g)
{
	struct gw_nvml_field_value fv;

	memset(&fv, 0, sizeof(fv));
	fv.field_id = GW_NVML_FI_DEV_MEMORY_TEMP;
	assert_int_equal(F->device_get_field_values(H[g], 1, &fv),
			 GW_NVML_SUCCESS);
	assert_int_equal(fv.nvml_return, GW_NVML_SUCCESS);
	assert_int_equal(fv.value_type, GW_NVML_VALUE_TYPE_UNSIGNED_INT);
	return fv.value.ui;
}

static unsigned int sm_clock(unsigned int g)
{
	unsigned int v = 0;

	assert_int_equal(F->device_get_clock_info(H[g], GW_NVML_CLOCK_SM, &v),
			 GW_NVML_SUCCESS);
	return v;
}

static unsigned long long reasons(unsigned int g)
{
	unsigned long long v = 0, alias = 0;

	assert_int_equal(F->device_get_clocks_event_reasons(H[g], &v),
			 GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_clocks_throttle_reasons(H[g], &alias),
			 GW_NVML_SUCCESS);
	assert_int_equal(v, alias);
	return v;
}

static unsigned long long energy_mj(unsigned int g)
{
	unsigned long long v = 0;

	assert_int_equal(F->device_get_total_energy_consumption(H[g], &v),
			 GW_NVML_SUCCESS);
	return v;
}

static unsigned int util_gpu(unsigned int g)
{
	struct gw_nvml_utilization u;

	assert_int_equal(F->device_get_utilization_rates(H[g], &u),
			 GW_NVML_SUCCESS);
	assert_true(u.gpu <= 100 && u.memory <= 100);
	return u.gpu;
}

static unsigned long long ecc(unsigned int g, int type)
{
	unsigned long long v = 0, agg = 0;

	assert_int_equal(F->device_get_total_ecc_errors(
				 H[g], type, GW_NVML_VOLATILE_ECC, &v),
			 GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_total_ecc_errors(
				 H[g], type, GW_NVML_AGGREGATE_ECC, &agg),
			 GW_NVML_SUCCESS);
	assert_true(agg >= v);
	return v;
}

static unsigned int nprocs(unsigned int g)
{
	unsigned int n = 0;
	int ret = F->device_get_compute_running_processes(H[g], &n, NULL);

	assert_true(ret == GW_NVML_SUCCESS ||
		    ret == GW_NVML_ERROR_INSUFFICIENT_SIZE);
	return n;
}

static double elapsed_ms(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 +
	       (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

/* ---- fault specs ------------------------------------------------------- */

static void test_fault_parse_good(void **state)
{
	struct gw_sim_fault f;
	char err[128] = "";

	(void)state;
	assert_int_equal(
		gw_sim_fault_parse("thermal-runaway:0", &f, err, sizeof(err)),
		0);
	assert_int_equal(f.kind, GW_SIM_FAULT_THERMAL_RUNAWAY);
	assert_int_equal(f.gpu, 0);
	assert_true(f.after_s == 0 && f.duration_s == 0);

	assert_int_equal(gw_sim_fault_parse("ecc-storm:3:120:60.5", &f, err,
					    sizeof(err)),
			 0);
	assert_int_equal(f.kind, GW_SIM_FAULT_ECC_STORM);
	assert_int_equal(f.gpu, 3);
	assert_true(f.after_s == 120.0 && f.duration_s == 60.5);

	assert_int_equal(gw_sim_fault_parse("xid79:63:1.5", &f, NULL, 0), 0);
	assert_int_equal(f.kind, GW_SIM_FAULT_XID79);
	assert_int_equal(f.gpu, 63);
	assert_true(f.after_s == 1.5 && f.duration_s == 0);

	assert_int_equal(gw_sim_fault_parse("pcie-downgrade:1:0:1e3", &f, err,
					    sizeof(err)),
			 0);
	assert_int_equal(f.kind, GW_SIM_FAULT_PCIE_DOWNGRADE);
	assert_true(f.duration_s == 1000.0);

	assert_int_equal(
		gw_sim_fault_parse("power-cap:2:.5", &f, err, sizeof(err)), 0);
	assert_int_equal(f.kind, GW_SIM_FAULT_POWER_CAP);
	assert_true(f.after_s == 0.5);
}

static void test_fault_parse_bad(void **state)
{
	static const struct {
		const char *spec;
		const char *says;
	} bad[] = {
		{ "", "empty fault spec" },
		{ "bogus:0", "unknown fault name 'bogus'" },
		{ "XID79:0", "unknown fault name" },
		{ "xid79", "missing GPU index" },
		{ "xid79:", "GPU index ''" },
		{ "xid79:x",
		  "GPU index 'x' is not a whole number from 0 to 63" },
		{ "xid79:-1", "GPU index '-1'" },
		{ "xid79:+1", "GPU index '+1'" },
		{ "xid79: 1", "GPU index ' 1'" },
		{ "xid79:64", "GPU index '64'" },
		{ "xid79:99999999999", "GPU index" },
		{ "xid79:0:", "AFTER_S ''" },
		{ "xid79:0:abc", "AFTER_S 'abc' is not a number of seconds" },
		{ "xid79:0:-5", "AFTER_S '-5'" },
		{ "xid79:0:nan", "AFTER_S 'nan'" },
		{ "xid79:0:inf", "AFTER_S 'inf'" },
		{ "xid79:0:0x10", "AFTER_S '0x10'" },
		{ "xid79:0:1e400", "AFTER_S '1e400'" },
		{ "xid79:0:2e9", "AFTER_S '2e9'" },
		{ "xid79:0:5s", "AFTER_S '5s'" },
		{ "xid79:0:1:x", "DURATION_S 'x'" },
		{ "xid79:0:1:-2", "DURATION_S '-2'" },
		{ "xid79:0:1:2:3", "too many fields" },
	};
	struct gw_sim_fault f, before;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&f, 0x5A, sizeof(f));
		before = f;
		memset(err, 0, sizeof(err));
		assert_int_equal(
			gw_sim_fault_parse(bad[i].spec, &f, err, sizeof(err)),
			-EINVAL);
		if (!strstr(err, bad[i].says))
			fail_msg("spec '%s': message '%s' lacks '%s'",
				 bad[i].spec, err, bad[i].says);
		assert_null(strchr(err, '\n'));
		/* nothing is written on failure */
		assert_memory_equal(&f, &before, sizeof(f));
	}
	assert_int_equal(gw_sim_fault_parse(NULL, &f, err, sizeof(err)),
			 -EINVAL);
	/* a short or absent message buffer is fine */
	assert_int_equal(gw_sim_fault_parse("bogus:0", &f, err, 8), -EINVAL);
	assert_int_equal(strlen(err), 7);
	assert_int_equal(gw_sim_fault_parse("bogus:0", &f, NULL, 0), -EINVAL);
}

static void test_fault_names_round_trip(void **state)
{
	static const enum gw_sim_fault_kind kinds[] = {
		GW_SIM_FAULT_THERMAL_RUNAWAY, GW_SIM_FAULT_ECC_STORM,
		GW_SIM_FAULT_XID79,	      GW_SIM_FAULT_PCIE_DOWNGRADE,
		GW_SIM_FAULT_POWER_CAP,
	};
	struct gw_sim_fault f;
	char spec[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(spec, sizeof(spec), "%s:7:1:2",
			 gw_sim_fault_name(kinds[i]));
		assert_int_equal(gw_sim_fault_parse(spec, &f, NULL, 0), 0);
		assert_int_equal(f.kind, kinds[i]);
		assert_int_equal(f.gpu, 7);
	}
	assert_string_equal(gw_sim_fault_name((enum gw_sim_fault_kind)99),
			    "unknown");
}

/* ---- lifecycle --------------------------------------------------------- */

static void test_lifecycle(void **state)
{
	struct gw_sim_opts o;
	gw_nvml_device_t h;
	unsigned int n = 0;

	(void)state;
	F = gw_sim_fns();
	assert_non_null(F);
	assert_int_equal(F->init(), GW_NVML_ERROR_DRIVER_NOT_LOADED);
	assert_int_equal(F->device_get_count(&n), GW_NVML_ERROR_UNINITIALIZED);

	memset(&o, 0, sizeof(o));
	o.manual_clock = 1;
	assert_int_equal(gw_sim_start(NULL), -EINVAL);
	assert_int_equal(gw_sim_start(&o), -EINVAL); /* no GPUs */
	o.gpus = GW_SIM_MAX_GPUS + 1;
	assert_int_equal(gw_sim_start(&o), -EINVAL);
	o.gpus = 2;
	o.day_s = -1;
	assert_int_equal(gw_sim_start(&o), -EINVAL);
	o.day_s = 0;
	o.nfaults = 1;
	o.faults[0].kind = GW_SIM_FAULT_XID79;
	o.faults[0].gpu = 2; /* only 0 and 1 exist */
	assert_int_equal(gw_sim_start(&o), -EINVAL);
	o.faults[0].gpu = 1;
	o.faults[0].after_s = -3;
	assert_int_equal(gw_sim_start(&o), -EINVAL);
	o.faults[0].after_s = 3;
	o.nfaults = GW_SIM_MAX_FAULTS + 1;
	assert_int_equal(gw_sim_start(&o), -EINVAL);
	o.nfaults = 0;

	assert_int_equal(gw_sim_start(&o), 0);
	assert_int_equal(gw_sim_start(&o), -EBUSY);
	/* started but not initialised */
	assert_int_equal(F->device_get_count(&n), GW_NVML_ERROR_UNINITIALIZED);
	assert_int_equal(F->shutdown(), GW_NVML_ERROR_UNINITIALIZED);
	assert_int_equal(F->init(), GW_NVML_SUCCESS);
	assert_int_equal(F->init(), GW_NVML_SUCCESS); /* counted */
	assert_int_equal(F->device_get_count(&n), GW_NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(F->device_get_handle_by_index(2, &h),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->device_get_handle_by_index(1, &h), GW_NVML_SUCCESS);
	assert_int_equal(F->shutdown(), GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_count(&n), GW_NVML_SUCCESS);
	assert_int_equal(F->shutdown(), GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_power_usage(h, &n),
			 GW_NVML_ERROR_UNINITIALIZED);

	gw_sim_stop();
	gw_sim_stop(); /* idempotent */
	assert_int_equal(F->init(), GW_NVML_ERROR_DRIVER_NOT_LOADED);
	/* and it starts again */
	assert_int_equal(gw_sim_start(&o), 0);
	gw_sim_stop();
}

static void test_identity(void **state)
{
	char buf[GW_NVML_DEVICE_UUID_BUFFER_SIZE], other[sizeof(buf)];
	struct gw_nvml_pci_info pci;
	struct gw_nvml_memory m;
	unsigned int v;

	(void)state;
	sim_up(3, 0, 7, 1, NULL);
	assert_int_equal(F->system_get_driver_version(buf, sizeof(buf)),
			 GW_NVML_SUCCESS);
	assert_string_equal(buf, "gpuwatch-sim");
	assert_int_equal(F->system_get_driver_version(buf, 4),
			 GW_NVML_ERROR_INSUFFICIENT_SIZE);

	assert_int_equal(F->device_get_name(H[0], buf, sizeof(buf)),
			 GW_NVML_SUCCESS);
	assert_string_equal(buf, "NVIDIA H200 (simulated)");
	assert_int_equal(F->device_get_name(H[0], buf, 10),
			 GW_NVML_ERROR_INSUFFICIENT_SIZE);

	assert_int_equal(F->device_get_uuid(H[0], buf, sizeof(buf)),
			 GW_NVML_SUCCESS);
	assert_int_equal(strncmp(buf, "GPU-5151", 8), 0);
	assert_int_equal(strlen(buf), 40);
	assert_true(buf[12] == '-' && buf[17] == '-' && buf[22] == '-' &&
		    buf[27] == '-');
	assert_int_equal(F->device_get_uuid(H[1], other, sizeof(other)),
			 GW_NVML_SUCCESS);
	assert_string_not_equal(buf, other);

	assert_int_equal(F->device_get_pci_info(H[1], &pci), GW_NVML_SUCCESS);
	assert_string_equal(pci.bus_id, "00000000:2A:00.0");
	assert_string_equal(pci.bus_id_legacy, "0000:2A:00.0");
	assert_int_equal(pci.pci_device_id & 0xFFFF, 0x10DE);

	assert_int_equal(F->device_get_memory_info(H[0], &m), GW_NVML_SUCCESS);
	assert_true(m.total == H200_MEM);
	assert_true(m.used + m.free == m.total);

	assert_int_equal(
		F->device_get_max_clock_info(H[0], GW_NVML_CLOCK_SM, &v),
		GW_NVML_SUCCESS);
	assert_int_equal(v, 1980);
	assert_int_equal(
		F->device_get_max_clock_info(H[0], GW_NVML_CLOCK_MEM, &v),
		GW_NVML_SUCCESS);
	assert_int_equal(v, 2619);
	assert_int_equal(F->device_get_clock_info(H[0], 42, &v),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->device_get_max_pcie_link_generation(H[0], &v),
			 GW_NVML_SUCCESS);
	assert_int_equal(v, 5);
	assert_int_equal(F->device_get_max_pcie_link_width(H[0], &v),
			 GW_NVML_SUCCESS);
	assert_int_equal(v, 16);

	/* a pointer that is not a handle */
	assert_int_equal(F->device_get_power_usage((gw_nvml_device_t)&v, &v),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->device_get_power_usage(NULL, &v),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_string_equal(F->error_string(GW_NVML_ERROR_GPU_IS_LOST),
			    "GPU is lost");
	assert_string_equal(F->error_string(12345), "Unknown Error");
}

/* ---- determinism -------------------------------------------------------- */

struct snap {
	unsigned int power, temp, hbm, clk, util, nproc;
	unsigned long long energy, reasons, mem_used;
};

static void take(unsigned int g, struct snap *s)
{
	struct gw_nvml_memory m;

	s->power = power_mw(g);
	s->temp = temp_core(g);
	s->hbm = temp_hbm(g);
	s->clk = sm_clock(g);
	s->util = util_gpu(g);
	s->nproc = nprocs(g);
	s->energy = energy_mj(g);
	s->reasons = reasons(g);
	assert_int_equal(F->device_get_memory_info(H[g], &m), GW_NVML_SUCCESS);
	s->mem_used = m.used;
}

#define TRACE_LEN 300

/* Sample both GPUs every 2 s; `busy` adds extra calls and smaller steps. */
static void trace(uint64_t seed, int busy, struct snap out[2][TRACE_LEN],
		  char uuid[2][GW_NVML_DEVICE_UUID_BUFFER_SIZE])
{
	struct snap junk;
	unsigned int i, g;

	sim_up(2, 3600, seed, 1, NULL);
	for (g = 0; g < 2; g++)
		assert_int_equal(
			F->device_get_uuid(H[g], uuid[g],
					   GW_NVML_DEVICE_UUID_BUFFER_SIZE),
			GW_NVML_SUCCESS);
	for (i = 0; i < TRACE_LEN; i++) {
		if (busy) {
			gw_sim_advance(0.55);
			take(1, &junk);
			gw_sim_advance(0.75);
			take(0, &junk);
			gw_sim_advance(0.7);
		} else {
			gw_sim_advance(2.0);
		}
		for (g = 0; g < 2; g++)
			take(g, &out[g][i]);
	}
	gw_sim_stop();
}

static void test_determinism(void **state)
{
	static struct snap a[2][TRACE_LEN], b[2][TRACE_LEN], c[2][TRACE_LEN];
	char ua[2][GW_NVML_DEVICE_UUID_BUFFER_SIZE];
	char ub[2][GW_NVML_DEVICE_UUID_BUFFER_SIZE];
	char uc[2][GW_NVML_DEVICE_UUID_BUFFER_SIZE];

	(void)state;
	trace(42, 0, a, ua);
	trace(42, 1, b, ub); /* same seed, different calling pattern */
	trace(43, 0, c, uc);
	assert_memory_equal(a, b, sizeof(a));
	assert_string_equal(ua[0], ub[0]);
	assert_string_equal(ua[1], ub[1]);
	assert_memory_not_equal(a, c, sizeof(a));
	assert_string_not_equal(ua[0], uc[0]);
}

/* ---- power, energy, clocks ----------------------------------------------- */

static void test_power_energy_clocks(void **state)
{
	static const char *const faults[] = { "power-cap:5:1800:1800", NULL };
	unsigned long long e_prev[8], e0[8];
	double integral[8] = { 0 };
	unsigned int g, i, saturated = 0, idle_seen = 0;

	(void)state;
	sim_up(8, 3600, 1, 1, faults);
	for (g = 0; g < 8; g++)
		e0[g] = e_prev[g] = energy_mj(g);
	for (i = 0; i < 7200; i++) {
		gw_sim_advance(1.0);
		for (g = 0; g < 8; g++) {
			unsigned int p = power_mw(g), lim = limit_mw(g);
			unsigned int clk = sm_clock(g), mem = 0;
			unsigned long long r = reasons(g), e = energy_mj(g);

			assert_true(p <= lim);
			assert_true(p >= 80000);
			assert_int_equal(clk % 15, 0);
			assert_true(clk >= 345 && clk <= 1980);
			assert_int_equal(F->device_get_clock_info(
						 H[g], GW_NVML_CLOCK_MEM, &mem),
					 GW_NVML_SUCCESS);
			assert_int_equal(mem, 2619);
			assert_true(e >= e_prev[g]);
			e_prev[g] = e;
			integral[g] += p; /* mW for 1 s = mJ */
			if (p >= lim * 0.97 &&
			    (r & GW_NVML_CLOCKS_EVENT_SW_POWER_CAP) &&
			    clk < 1980)
				saturated++;
			if (r & GW_NVML_CLOCKS_EVENT_GPU_IDLE) {
				assert_true(util_gpu(g) <= 1);
				assert_int_equal(clk, 345);
				idle_seen++;
			}
		}
	}
	/* busy GPUs run into the limit; quiet ones idle */
	assert_true(saturated > 100);
	assert_true(idle_seen > 100);
	/* the energy counter is the integral of power (sampled here at 1 s) */
	for (g = 0; g < 8; g++) {
		double de = (double)(e_prev[g] - e0[g]);

		assert_true(de > 0.98 * integral[g] && de < 1.02 * integral[g]);
	}
}

static double hour_of_day(double t, double day_s)
{
	double f = t / day_s + 10.0 / 24.0; /* the simulation starts at 10:00 */

	return (f - (double)(long)f) * 24.0;
}

static void test_day_night_cycle(void **state)
{
	double day = 0, night = 0, h;
	unsigned int nday = 0, nnight = 0, g, i;

	(void)state;
	sim_up(8, 3600, 5, 1, NULL);
	for (i = 1; i <= 720; i++) { /* two days at 10 s */
		gw_sim_advance(10.0);
		h = hour_of_day(i * 10.0, 3600);
		for (g = 0; g < 8; g++) {
			if (h >= 11 && h < 19) {
				day += util_gpu(g);
				nday++;
			} else if (h >= 23 || h < 7) {
				night += util_gpu(g);
				nnight++;
			}
		}
	}
	day /= nday;
	night /= nnight;
	print_message("mean utilisation: day %.1f%%, night %.1f%%\n", day,
		      night);
	assert_true(day > 50.0);
	assert_true(night < day - 25.0);
}

/* ---- temperature -------------------------------------------------------- */

static void test_temperature_lags_power(void **state)
{
	static const char *const faults[] = {
		"power-cap:0:300", "power-cap:1:300", "power-cap:2:300",
		"power-cap:3:300", "power-cap:4:300", "power-cap:5:300",
		"power-cap:6:300", "power-cap:7:300", NULL,
	};
	unsigned int p0[8], t0[8], t10[8], prev[8], g, i, checked = 0;

	(void)state;
	sim_up(8, 0, 11, 1, faults);
	gw_sim_advance(299.9); /* the last step before the cap */
	for (g = 0; g < 8; g++) {
		p0[g] = power_mw(g);
		prev[g] = t0[g] = temp_core(g);
		assert_int_equal(limit_mw(g), 700000);
		/* HBM runs a few degrees above the core */
		assert_true(temp_hbm(g) >= t0[g] + 2);
	}
	for (i = 1; i <= 180; i++) {
		gw_sim_advance(1.0);
		for (g = 0; g < 8; g++) {
			unsigned int t = temp_core(g);

			assert_int_equal(limit_mw(g), 350000);
			assert_true(power_mw(g) <= 350000);
			/* a degree or two a second, never a jump */
			assert_true(t + 2 >= prev[g] && t <= prev[g] + 2);
			if (i == 10)
				t10[g] = t;
			if (i == 180 && p0[g] >= 600000) {
				int drop10 = (int)t0[g] - (int)t10[g];
				int drop180 = (int)t0[g] - (int)t;

				print_message("gpu %u: %u W -> cap: %u C, "
					      "%u C after 10 s, %u C after "
					      "180 s\n",
					      g, p0[g] / 1000, t0[g], t10[g],
					      t);
				/* the power fell at once, the heat follows */
				assert_true(drop180 >= 10);
				assert_true(drop10 * 2 < drop180);
				checked++;
			}
			prev[g] = t;
		}
	}
	/* at least one GPU was busy at the limit when the cap came */
	assert_true(checked >= 1);
}

/* ---- faults ----------------------------------------------------------------- */

static void test_thermal_runaway(void **state)
{
	static const char *const faults[] = { "thermal-runaway:0:60:600",
					      NULL };
	const unsigned long long hot = GW_NVML_CLOCKS_EVENT_HW_THERMAL |
				       GW_NVML_CLOCKS_EVENT_SW_THERMAL;
	unsigned int i, t, hbm, max_hbm = 0, crossed = 0, t_start = 0;

	(void)state;
	sim_up(2, 0, 3, 1, faults);
	for (i = 1; i <= 60; i++) {
		gw_sim_advance(1.0);
		assert_true(temp_core(0) < 85);
		assert_int_equal(reasons(0) & hot, 0);
	}
	t_start = temp_core(0);
	for (i = 61; i < 660; i++) {
		gw_sim_advance(1.0);
		t = temp_core(0);
		hbm = temp_hbm(0);
		if (hbm > max_hbm)
			max_hbm = hbm;
		if (t >= 90 && !crossed)
			crossed = i;
		if (t >= 91) {
			unsigned long long r = reasons(0);

			assert_true(r & GW_NVML_CLOCKS_EVENT_HW_THERMAL);
			assert_true(r & GW_NVML_CLOCKS_EVENT_HW_SLOWDOWN);
			assert_true(sm_clock(0) <= 990);
		}
		/* the other GPU is not affected */
		assert_true(temp_core(1) < 85);
	}
	print_message("runaway: %u C at start, 90 C after %u s, HBM max %u C\n",
		      t_start, crossed - 60, max_hbm);
	assert_true(crossed > 60 && crossed <= 60 + 300);
	assert_true(max_hbm >= 96);
	assert_true(temp_core(0) >= 95); /* still hot at the end */
	/* cooling restored: back to normal within a few time constants */
	gw_sim_advance(300);
	assert_true(temp_core(0) < 85);
	assert_int_equal(reasons(0) & hot, 0);
}

static void test_xid79_lost_and_back(void **state)
{
	static const char *const faults[] = { "xid79:1:10:30", NULL };
	struct gw_nvml_event_data ev;
	void *set = NULL, *other = NULL;
	gw_nvml_device_t h;
	unsigned long long types = 0;
	unsigned int v;
	char name[GW_NVML_DEVICE_NAME_BUFFER_SIZE];
	struct timespec t0;

	(void)state;
	sim_up(2, 0, 9, 1, faults);
	assert_int_equal(F->device_get_supported_event_types(H[1], &types),
			 GW_NVML_SUCCESS);
	assert_true(types & GW_NVML_EVENT_XID_CRITICAL);
	assert_int_equal(F->event_set_create(&set), GW_NVML_SUCCESS);
	assert_int_equal(F->event_set_create(&other), GW_NVML_SUCCESS);
	assert_int_equal(F->device_register_events(H[0], types, set),
			 GW_NVML_SUCCESS);
	assert_int_equal(F->device_register_events(H[1], types, set),
			 GW_NVML_SUCCESS);
	assert_int_equal(F->device_register_events(H[0], types, other),
			 GW_NVML_SUCCESS);
	assert_int_equal(
		F->device_register_events(H[1], GW_NVML_EVENT_CLOCK, set),
		GW_NVML_ERROR_NOT_SUPPORTED);

	gw_sim_advance(9.5);
	/* with the manual clock nothing can arrive: no blocking */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(F->event_set_wait(set, &ev, 20000),
			 GW_NVML_ERROR_TIMEOUT);
	assert_true(elapsed_ms(&t0) < 10000);
	assert_int_equal(F->device_get_power_usage(H[1], &v), GW_NVML_SUCCESS);

	gw_sim_advance(1.0);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(F->event_set_wait(set, &ev, 1000), GW_NVML_SUCCESS);
	assert_ptr_equal(ev.device, H[1]);
	assert_int_equal(ev.event_type, GW_NVML_EVENT_XID_CRITICAL);
	assert_int_equal(ev.event_data, 79);
	/* delivered once */
	assert_int_equal(F->event_set_wait(set, &ev, 1000),
			 GW_NVML_ERROR_TIMEOUT);
	/* a set that did not ask for GPU 1 got nothing */
	assert_int_equal(F->event_set_wait(other, &ev, 0),
			 GW_NVML_ERROR_TIMEOUT);

	/* every call on the lost GPU says so; the other GPU goes on */
	assert_int_equal(F->device_get_power_usage(H[1], &v),
			 GW_NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(F->device_get_temperature(H[1], 0, &v),
			 GW_NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(F->device_get_name(H[1], name, sizeof(name)),
			 GW_NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(
		F->device_get_compute_running_processes(H[1], &v, NULL),
		GW_NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(F->device_get_handle_by_index(1, &h),
			 GW_NVML_ERROR_GPU_IS_LOST);
	assert_int_equal(F->device_get_power_usage(H[0], &v), GW_NVML_SUCCESS);

	gw_sim_advance(28.0); /* t = 38.5: still lost */
	assert_int_equal(F->device_get_power_usage(H[1], &v),
			 GW_NVML_ERROR_GPU_IS_LOST);
	gw_sim_advance(2.0); /* t = 40.5: the fault is over */
	assert_int_equal(F->device_get_power_usage(H[1], &v), GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_handle_by_index(1, &h), GW_NVML_SUCCESS);
	assert_ptr_equal(h, H[1]);
	gw_sim_advance(60.0);
	assert_int_equal(F->event_set_wait(set, &ev, 0), GW_NVML_ERROR_TIMEOUT);
	assert_int_equal(F->event_set_free(set), GW_NVML_SUCCESS);
	assert_int_equal(F->event_set_free(set),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	/* `other` is left for gw_sim_stop() to free */
}

static void test_ecc_storm(void **state)
{
	static const char *const faults[] = { "ecc-storm:0:5:60", NULL };
	struct gw_nvml_event_data ev;
	unsigned int corr, unc, pending, fail;
	unsigned long long c60, u60, sbe = 0, dbe = 0, xid48 = 0, other = 0;
	void *set;

	(void)state;
	sim_up(1, 0, 4, 1, faults);
	assert_int_equal(F->event_set_create(&set), GW_NVML_SUCCESS);
	assert_int_equal(
		F->device_register_events(H[0],
					  GW_NVML_EVENT_SINGLE_BIT_ECC |
						  GW_NVML_EVENT_DOUBLE_BIT_ECC |
						  GW_NVML_EVENT_XID_CRITICAL,
					  set),
		GW_NVML_SUCCESS);
	gw_sim_advance(4.9);
	assert_true(ecc(0, GW_NVML_MEMORY_ERROR_TYPE_CORRECTED) == 0);
	assert_true(ecc(0, GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED) == 0);
	assert_int_equal(
		F->device_get_remapped_rows(H[0], &corr, &unc, &pending, &fail),
		GW_NVML_SUCCESS);
	assert_true(corr == 0 && unc == 0 && pending == 0 && fail == 0);

	gw_sim_advance(30.0);
	c60 = ecc(0, GW_NVML_MEMORY_ERROR_TYPE_CORRECTED);
	assert_true(c60 >= 100 * 30); /* hundreds per second */
	gw_sim_advance(30.0);
	c60 = ecc(0, GW_NVML_MEMORY_ERROR_TYPE_CORRECTED);
	u60 = ecc(0, GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED);
	assert_true(c60 >= 100 * 60 && c60 <= 1000 * 60);
	assert_true(u60 >= 2 && u60 <= 5); /* one every ~20 s */
	assert_int_equal(
		F->device_get_remapped_rows(H[0], &corr, &unc, &pending, &fail),
		GW_NVML_SUCCESS);
	assert_true(corr >= 2);
	assert_int_equal(unc, u60);
	assert_int_equal(pending, 1);

	while (F->event_set_wait(set, &ev, 0) == GW_NVML_SUCCESS) {
		if (ev.event_type == GW_NVML_EVENT_SINGLE_BIT_ECC)
			sbe++;
		else if (ev.event_type == GW_NVML_EVENT_DOUBLE_BIT_ECC)
			dbe++;
		else if (ev.event_type == GW_NVML_EVENT_XID_CRITICAL &&
			 ev.event_data == 48)
			xid48++;
		else
			other++;
	}
	assert_true(sbe >= 30);
	assert_int_equal(dbe, u60);
	assert_int_equal(xid48, u60);
	assert_int_equal(other, 0);

	/* the storm is over: counters stay where they are */
	gw_sim_advance(120.0);
	assert_true(ecc(0, GW_NVML_MEMORY_ERROR_TYPE_CORRECTED) == c60);
	assert_true(ecc(0, GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED) == u60);
	assert_int_equal(F->device_get_total_ecc_errors(
				 H[0], 5, GW_NVML_VOLATILE_ECC, &c60),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
}

static void pcie_link(unsigned int g, unsigned int *gen, unsigned int *width,
		      unsigned int *replay)
{
	assert_int_equal(F->device_get_curr_pcie_link_generation(H[g], gen),
			 GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_curr_pcie_link_width(H[g], width),
			 GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_pcie_replay_counter(H[g], replay),
			 GW_NVML_SUCCESS);
}

static void test_pcie_downgrade(void **state)
{
	static const char *const faults[] = { "pcie-downgrade:0:10:60", NULL };
	unsigned int gen, width, r0, r1, r2, rx;

	(void)state;
	sim_up(1, 0, 6, 1, faults);
	gw_sim_advance(9.0);
	pcie_link(0, &gen, &width, &r0);
	assert_int_equal(gen, 5);
	assert_int_equal(width, 16);
	gw_sim_advance(30.0);
	pcie_link(0, &gen, &width, &r1);
	assert_int_equal(gen, 3);
	assert_int_equal(width, 8);
	assert_true(r1 >= r0 + 30);
	assert_int_equal(F->device_get_pcie_throughput(
				 H[0], GW_NVML_PCIE_UTIL_RX_BYTES, &rx),
			 GW_NVML_SUCCESS);
	assert_true(rx <= 8 * 984600); /* what a gen 3 x8 link carries */
	gw_sim_advance(60.0);
	pcie_link(0, &gen, &width, &r2);
	assert_int_equal(gen, 5);
	assert_int_equal(width, 16);
	assert_true(r2 >= r1); /* a counter: it never goes back */
}

static void test_power_cap(void **state)
{
	static const char *const faults[] = { "power-cap:0:5:120", NULL };
	unsigned int i, capped_busy = 0;

	(void)state;
	sim_up(1, 0, 2, 1, faults);
	gw_sim_advance(4.0);
	assert_int_equal(limit_mw(0), 700000);
	gw_sim_advance(2.0);
	for (i = 0; i < 110; i++) {
		gw_sim_advance(1.0);
		assert_int_equal(limit_mw(0), 350000);
		assert_true(power_mw(0) <= 350000);
		if (util_gpu(0) >= 80) {
			assert_true(reasons(0) &
				    GW_NVML_CLOCKS_EVENT_SW_POWER_CAP);
			assert_true(sm_clock(0) < 1980);
			capped_busy++;
		}
	}
	assert_true(capped_busy > 10);
	gw_sim_advance(30.0);
	assert_int_equal(limit_mw(0), 700000);
}

/*
 * A fault-free day of simulated load, second by second on eight GPUs, stays
 * clear of what the built-in alert rules (deploy/rules/default.yml) call
 * trouble: core <= 83 C and HBM <= 85 C (the warning thresholds), no
 * thermal or hardware slowdown, the power limit never lowered.  Busy GPUs do sit at their own power limit
 * for long stretches, as real ones do: that alone is not an alert.
 */
static void test_healthy_day_below_alert_thresholds(void **state)
{
	const unsigned long long bad = GW_NVML_CLOCKS_EVENT_SW_THERMAL |
				       GW_NVML_CLOCKS_EVENT_HW_THERMAL |
				       GW_NVML_CLOCKS_EVENT_HW_SLOWDOWN;
	unsigned int g, at_limit = 0;

	(void)state;
	sim_up(8, 0, 1, 1, NULL);
	for (int s = 0; s < 86400; s++) {
		gw_sim_advance(1.0);
		if (s % 10)
			continue; /* every 10 s is plenty, and quicker */
		for (g = 0; g < 8; g++) {
			assert_true(temp_core(g) <= 83);
			assert_true(temp_hbm(g) <= 85);
			assert_false(reasons(g) & bad);
			assert_int_equal(limit_mw(g), 700000);
			at_limit += power_mw(g) >= 0.97 * 700000;
		}
	}
	assert_true(at_limit > 0);
}

/* ---- processes ------------------------------------------------------------ */

static void test_processes_sizing(void **state)
{
	struct gw_nvml_process_info p[8];
	struct gw_nvml_process_util u[8];
	struct gw_nvml_memory m;
	unsigned long long sum = 0, last;
	unsigned int n, k, i, j, tries;

	(void)state;
	sim_up(1, 3600, 8, 1, NULL);
	/* wait for at least two jobs */
	for (tries = 0; nprocs(0) < 2; tries++) {
		assert_true(tries < 3600);
		gw_sim_advance(1.0);
	}
	n = nprocs(0);

	k = 0;
	assert_int_equal(
		F->device_get_compute_running_processes(H[0], &k, NULL),
		GW_NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(k, n);
	k = n - 1;
	assert_int_equal(F->device_get_compute_running_processes(H[0], &k, p),
			 GW_NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(k, n);
	k = 8;
	assert_int_equal(F->device_get_compute_running_processes(H[0], &k, p),
			 GW_NVML_SUCCESS);
	assert_int_equal(k, n);
	for (i = 0; i < n; i++) {
		assert_true(p[i].pid >= 4000000 && p[i].pid < 4002000);
		assert_int_equal(p[i].gpu_instance_id, 0xFFFFFFFFU);
		for (j = 0; j < i; j++)
			assert_int_not_equal(p[i].pid, p[j].pid);
		sum += p[i].used_gpu_memory;
	}
	assert_int_equal(F->device_get_memory_info(H[0], &m), GW_NVML_SUCCESS);
	assert_true(sum <= m.used && m.used - sum < GIB);

	k = 0;
	assert_int_equal(F->device_get_process_utilization(H[0], NULL, &k, 0),
			 GW_NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(k, n);
	k = n - 1;
	assert_int_equal(F->device_get_process_utilization(H[0], u, &k, 0),
			 GW_NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(k, n);
	k = 8;
	assert_int_equal(F->device_get_process_utilization(H[0], u, &k, 0),
			 GW_NVML_SUCCESS);
	assert_int_equal(k, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(u[i].pid, p[i].pid);
		assert_true(u[i].sm_util <= 100);
	}
	/* nothing newer than what was just read */
	last = u[0].timestamp;
	k = 8;
	assert_int_equal(F->device_get_process_utilization(H[0], u, &k, last),
			 GW_NVML_ERROR_NOT_FOUND);
	gw_sim_advance(1.0);
	k = 8;
	assert_int_not_equal(
		F->device_get_process_utilization(H[0], u, &k, last),
		GW_NVML_ERROR_NOT_FOUND);

	/* wait for an idle GPU: no processes is success with none */
	for (tries = 0; nprocs(0) > 0; tries++) {
		assert_true(tries < 20000);
		gw_sim_advance(1.0);
	}
	k = 0;
	assert_int_equal(
		F->device_get_compute_running_processes(H[0], &k, NULL),
		GW_NVML_SUCCESS);
	assert_int_equal(k, 0);
	k = 8;
	assert_int_equal(F->device_get_process_utilization(H[0], u, &k, 0),
			 GW_NVML_ERROR_NOT_FOUND);
}

/* ---- fields, links, GPM, the rest of the table -------------------------- */

static void test_fields_links_misc(void **state)
{
	struct gw_nvml_field_value fv[4];
	unsigned long long tx0, n;
	unsigned int v, l;
	int st;

	(void)state;
	sim_up(1, 0, 12, 1, NULL);
	gw_sim_advance(5.0);
	memset(fv, 0, sizeof(fv));
	fv[0].field_id = GW_NVML_FI_DEV_MEMORY_TEMP;
	fv[1].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[2].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
	fv[3].field_id = 9999;
	assert_int_equal(F->device_get_field_values(H[0], 4, fv),
			 GW_NVML_SUCCESS);
	assert_int_equal(fv[0].nvml_return, GW_NVML_SUCCESS);
	assert_true(fv[0].value.ui > temp_core(0));
	assert_int_equal(fv[1].nvml_return, GW_NVML_SUCCESS);
	assert_int_equal(fv[1].value_type,
			 GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
	assert_int_equal(fv[2].nvml_return, GW_NVML_SUCCESS);
	assert_int_equal(fv[3].nvml_return, GW_NVML_ERROR_NOT_SUPPORTED);
	assert_true(fv[0].timestamp > 1600000000LL * 1000000LL);
	tx0 = fv[1].value.ull;
	gw_sim_advance(600.0);
	assert_int_equal(F->device_get_field_values(H[0], 4, fv),
			 GW_NVML_SUCCESS);
	assert_true(fv[1].value.ull >= tx0);

	assert_int_equal(F->device_get_fan_speed(H[0], &v),
			 GW_NVML_ERROR_NOT_SUPPORTED);
	for (l = 0; l < GW_NVML_NVLINK_MAX_LINKS; l++) {
		assert_int_equal(F->device_get_nvlink_state(H[0], l, &st),
				 GW_NVML_SUCCESS);
		assert_int_equal(st, GW_NVML_FEATURE_ENABLED);
		assert_int_equal(
			F->device_get_nvlink_error_counter(
				H[0], l, GW_NVML_NVLINK_ERROR_DL_CRC_FLIT, &n),
			GW_NVML_SUCCESS);
	}
	assert_int_equal(F->device_get_nvlink_state(H[0], 18, &st),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->device_get_nvlink_error_counter(H[0], 0, 9, &n),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->device_get_performance_state(H[0], &st),
			 GW_NVML_SUCCESS);
	assert_true(st == 0 || st == 8);
	assert_int_equal(F->device_get_pcie_throughput(
				 H[0], GW_NVML_PCIE_UTIL_TX_BYTES, &v),
			 GW_NVML_SUCCESS);
	assert_int_equal(F->device_get_pcie_throughput(H[0], 7, &v),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->device_get_temperature(H[0], 1, &v),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->device_get_field_values(H[0], 1, NULL),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
}

static void test_gpm(void **state)
{
	struct gw_nvml_gpm_support sup = { .version = 1 };
	struct gw_nvml_gpm_metrics_get mg;
	void *s1 = NULL, *s2 = NULL, *s3 = NULL;
	unsigned int i;

	(void)state;
	sim_up(2, 0, 13, 1, NULL);
	assert_int_equal(F->gpm_query_device_support(H[0], &sup),
			 GW_NVML_SUCCESS);
	assert_int_equal(sup.is_supported_device, 1);
	sup.version = 99;
	assert_int_equal(F->gpm_query_device_support(H[0], &sup),
			 GW_NVML_ERROR_INVALID_ARGUMENT);

	assert_int_equal(F->gpm_sample_alloc(&s1), GW_NVML_SUCCESS);
	assert_int_equal(F->gpm_sample_alloc(&s2), GW_NVML_SUCCESS);
	assert_int_equal(F->gpm_sample_alloc(&s3), GW_NVML_SUCCESS);
	assert_int_equal(F->gpm_sample_get(H[0], s1), GW_NVML_SUCCESS);
	gw_sim_advance(10.0);
	assert_int_equal(F->gpm_sample_get(H[0], s2), GW_NVML_SUCCESS);
	assert_int_equal(F->gpm_sample_get(H[1], s3), GW_NVML_SUCCESS);

	memset(&mg, 0, sizeof(mg));
	mg.version = GW_NVML_GPM_METRICS_GET_VERSION;
	mg.sample1 = s1;
	mg.sample2 = s2;
	mg.num_metrics = 5;
	mg.metrics[0].metric_id = GW_NVML_GPM_METRIC_SM_UTIL;
	mg.metrics[1].metric_id = GW_NVML_GPM_METRIC_SM_OCCUPANCY;
	mg.metrics[2].metric_id = GW_NVML_GPM_METRIC_ANY_TENSOR_UTIL;
	mg.metrics[3].metric_id = GW_NVML_GPM_METRIC_DRAM_BW_UTIL;
	mg.metrics[4].metric_id = 1; /* graphics util: not simulated */
	assert_int_equal(F->gpm_metrics_get(&mg), GW_NVML_SUCCESS);
	for (i = 0; i < 4; i++) {
		assert_int_equal(mg.metrics[i].nvml_return, GW_NVML_SUCCESS);
		assert_true(mg.metrics[i].value >= 0 &&
			    mg.metrics[i].value <= 100);
		assert_non_null(mg.metrics[i].info.short_name);
	}
	/* occupancy and tensor activity happen on busy SMs only */
	assert_true(mg.metrics[1].value <= mg.metrics[0].value + 1e-9);
	assert_true(mg.metrics[2].value <= mg.metrics[0].value + 1e-9);
	assert_int_equal(mg.metrics[4].nvml_return,
			 GW_NVML_ERROR_NOT_SUPPORTED);

	mg.sample2 = s3; /* another GPU */
	assert_int_equal(F->gpm_metrics_get(&mg),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	mg.sample2 = s2;
	mg.version = 7;
	assert_int_equal(F->gpm_metrics_get(&mg),
			 GW_NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(F->gpm_sample_free(s1), GW_NVML_SUCCESS);
	assert_int_equal(F->gpm_sample_free(s2), GW_NVML_SUCCESS);
	/* s3 is left for gw_sim_stop() */
}

/* ---- real clock: blocking waits and concurrent callers ------------------ */

struct hammer {
	unsigned int gpu;
	atomic_int *stop;
	unsigned long long calls;
	unsigned long long bad;
};

static void *hammer_main(void *arg)
{
	struct hammer *hm = arg;
	struct gw_nvml_process_info p[8];
	struct gw_nvml_memory m;
	unsigned int v, k;
	int ret;

	while (!atomic_load(hm->stop)) {
		ret = F->device_get_power_usage(H[hm->gpu], &v);
		if (ret != GW_NVML_SUCCESS && ret != GW_NVML_ERROR_GPU_IS_LOST)
			hm->bad++;
		ret = F->device_get_memory_info(H[hm->gpu], &m);
		if (ret != GW_NVML_SUCCESS && ret != GW_NVML_ERROR_GPU_IS_LOST)
			hm->bad++;
		k = 8;
		ret = F->device_get_compute_running_processes(H[hm->gpu], &k,
							      p);
		if (ret != GW_NVML_SUCCESS && ret != GW_NVML_ERROR_GPU_IS_LOST)
			hm->bad++;
		hm->calls += 3;
	}
	return NULL;
}

static void test_realtime_events_and_threads(void **state)
{
	static const char *const faults[] = { "xid79:1:0.5", NULL };
	struct hammer hm[3];
	pthread_t th[3];
	atomic_int stop = 0;
	struct gw_nvml_event_data ev;
	struct timespec t0;
	void *set;
	unsigned int i;
	int ret;

	(void)state;
	sim_up(3, 0, 21, 0, faults);
	assert_int_equal(F->event_set_create(&set), GW_NVML_SUCCESS);
	for (i = 0; i < 3; i++)
		assert_int_equal(F->device_register_events(
					 H[i], GW_NVML_EVENT_XID_CRITICAL, set),
				 GW_NVML_SUCCESS);
	for (i = 0; i < 3; i++) {
		hm[i].gpu = i;
		hm[i].stop = &stop;
		hm[i].calls = hm[i].bad = 0;
		assert_int_equal(
			pthread_create(&th[i], NULL, hammer_main, &hm[i]), 0);
	}
	/* the event arrives while we block, within the timeout */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = F->event_set_wait(set, &ev, 5000);
	assert_int_equal(ret, GW_NVML_SUCCESS);
	assert_int_equal(ev.event_data, 79);
	assert_ptr_equal(ev.device, H[1]);
	assert_true(elapsed_ms(&t0) < 4000);
	/* nothing else comes: the wait times out after about its timeout */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(F->event_set_wait(set, &ev, 250),
			 GW_NVML_ERROR_TIMEOUT);
	assert_true(elapsed_ms(&t0) >= 200);

	atomic_store(&stop, 1);
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_true(hm[i].calls > 0);
		assert_int_equal(hm[i].bad, 0);
	}
	{
		unsigned int v;

		assert_int_equal(F->device_get_power_usage(H[1], &v),
				 GW_NVML_ERROR_GPU_IS_LOST);
	}
}

struct waiter {
	void *set;
	int ret;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct gw_nvml_event_data ev;

	w->ret = F->event_set_wait(w->set, &ev, 60000);
	return NULL;
}

static void test_stop_wakes_waiter(void **state)
{
	struct waiter w = { NULL, -1 };
	struct timespec t0, nap = { 0, 100000000 };
	pthread_t th;

	(void)state;
	sim_up(1, 0, 1, 0, NULL);
	assert_int_equal(F->event_set_create(&w.set), GW_NVML_SUCCESS);
	assert_int_equal(F->device_register_events(
				 H[0], GW_NVML_EVENT_XID_CRITICAL, w.set),
			 GW_NVML_SUCCESS);
	assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
	nanosleep(&nap, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	gw_sim_stop();
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.ret, GW_NVML_ERROR_UNINITIALIZED);
	assert_true(elapsed_ms(&t0) < 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_parse_good),
		cmocka_unit_test(test_fault_parse_bad),
		cmocka_unit_test(test_fault_names_round_trip),
		cmocka_unit_test_teardown(test_lifecycle, teardown_sim),
		cmocka_unit_test_teardown(test_identity, teardown_sim),
		cmocka_unit_test_teardown(test_determinism, teardown_sim),
		cmocka_unit_test_teardown(test_power_energy_clocks,
					  teardown_sim),
		cmocka_unit_test_teardown(test_day_night_cycle, teardown_sim),
		cmocka_unit_test_teardown(test_temperature_lags_power,
					  teardown_sim),
		cmocka_unit_test_teardown(test_thermal_runaway, teardown_sim),
		cmocka_unit_test_teardown(test_xid79_lost_and_back,
					  teardown_sim),
		cmocka_unit_test_teardown(test_ecc_storm, teardown_sim),
		cmocka_unit_test_teardown(test_pcie_downgrade, teardown_sim),
		cmocka_unit_test_teardown(test_power_cap, teardown_sim),
		cmocka_unit_test_teardown(
			test_healthy_day_below_alert_thresholds, teardown_sim),
		cmocka_unit_test_teardown(test_processes_sizing, teardown_sim),
		cmocka_unit_test_teardown(test_fields_links_misc, teardown_sim),
		cmocka_unit_test_teardown(test_gpm, teardown_sim),
		cmocka_unit_test_teardown(test_realtime_events_and_threads,
					  teardown_sim),
		cmocka_unit_test_teardown(test_stop_wakes_waiter, teardown_sim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
