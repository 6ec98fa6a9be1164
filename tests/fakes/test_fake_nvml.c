/* SPDX-License-Identifier: MIT */
/*
 * test_fake_nvml.c - checks the scripted fake libnvidia-ml.so.1 against the
 * contract in tests/fakes/README.md, so that an integration test failing
 * points at the agent and not at its fake.
 *
 * Usage: test_fake_nvml FULL_LIB OLD_LIB
 *
 * Each scenario runs in a child process that dlopen()s the library afresh,
 * so each starts with the library's state clean.  Prints one "ok"/"not ok"
 * line per scenario; exits non-zero if any failed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nvml_abi.h"

#define ENV "GW_FAKE_NVML_SCRIPT"

static int failures;
static char tmpdir[PATH_MAX];
static char script_path[PATH_MAX + 32];

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			failures++;                                            \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long a_ = (long long)(a), b_ = (long long)(b);            \
		if (a_ != b_) {                                                \
			fprintf(stderr,                                        \
				"%s:%d: %s == %lld, expected %s == "           \
				"%lld\n",                                      \
				__FILE__, __LINE__, #a, a_, #b, b_);           \
			failures++;                                            \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		if (strcmp((a), (b)) != 0) {                                   \
			fprintf(stderr,                                        \
				"%s:%d: %s == \"%s\", expected "               \
				"\"%s\"\n",                                    \
				__FILE__, __LINE__, #a, (a), (b));             \
			failures++;                                            \
		}                                                              \
	} while (0)

static const char *const new_names[] = {
#define NAME(member, sym, ret, params) sym,
	GW_NVML_SYMBOLS(NAME)
#undef NAME
};
#define NNEW (sizeof(new_names) / sizeof(new_names[0]))

static const char *const old_names[] = {
#define NAME(member, sym) sym,
	GW_NVML_FALLBACKS(NAME)
#undef NAME
};
#define NOLD (sizeof(old_names) / sizeof(old_names[0]))

/* What the old build lacks besides the new names of the fallbacks. */
static const char *const old_lacks[] = {
	"nvmlInit_v2",
	"nvmlDeviceGetCount_v2",
	"nvmlDeviceGetHandleByIndex_v2",
	"nvmlDeviceGetPciInfo_v3",
	"nvmlDeviceGetComputeRunningProcesses_v3",
	"nvmlEventSetWait_v2",
	"nvmlDeviceGetFieldValues",
	"nvmlGpmQueryDeviceSupport",
	"nvmlGpmSampleAlloc",
	"nvmlGpmSampleFree",
	"nvmlGpmSampleGet",
	"nvmlGpmMetricsGet",
	"nvmlDeviceGetCurrentClocksEventReasons",
	"nvmlDeviceGetRemappedRows",
	"nvmlDeviceGetTotalEnergyConsumption",
	"nvmlDeviceGetProcessUtilization",
};
#define NOLD_LACKS (sizeof(old_lacks) / sizeof(old_lacks[0]))

/* ---- helpers ----------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Replaces path atomically, as the integration tests do. */
static void write_file(const char *path, const char *text)
{
	char tmp[PATH_MAX + 64];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) == EOF || fclose(f) != 0 ||
	    rename(tmp, path) != 0) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
}

/* Writes the script and waits out the fake's 50 ms re-check period. */
static void set_script(const char *text)
{
	write_file(script_path, text);
	sleep_ms(80);
}

static char *read_all(const char *path)
{
	static char buf[65536];
	size_t n = 0;
	FILE *f;

	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int count_lines(const char *text, const char *needle)
{
	const char *p = text;
	int n = 0;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

static void *open_lib(const char *path, struct gw_nvml_fns *f)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(2);
	}
	memset(f, 0, sizeof(*f));
#define RESOLVE(member, sym, ret, params) *(void **)&f->member = dlsym(h, sym);
	GW_NVML_SYMBOLS(RESOLVE)
#undef RESOLVE
#define FALLBACK(member, sym)                                                  \
	if (!f->member)                                                        \
		*(void **)&f->member = dlsym(h, sym);
	GW_NVML_FALLBACKS(FALLBACK)
#undef FALLBACK
	return h;
}

static gw_nvml_device_t handle(const struct gw_nvml_fns *f, unsigned int i)
{
	gw_nvml_device_t d = NULL;

	CHECK_EQ(f->device_get_handle_by_index(i, &d), GW_NVML_SUCCESS);
	return d;
}

/* ---- scenarios ----------------------------------------------------------- */

static void t_symbols_full(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	CHECK(h != NULL);
	if (!h)
		return;
	for (i = 0; i < NNEW; i++)
		if (!dlsym(h, new_names[i])) {
			fprintf(stderr, "full lacks %s\n", new_names[i]);
			failures++;
		}
	for (i = 0; i < NOLD; i++)
		if (dlsym(h, old_names[i])) {
			fprintf(stderr, "full exports %s\n", old_names[i]);
			failures++;
		}
	CHECK(dlsym(h, "reload") == NULL);
	CHECK(dlsym(h, "script_load") == NULL);
	CHECK(dlsym(h, "devs") == NULL);
	dlclose(h);
}

static int lacked_by_old(const char *name)
{
	size_t i;

	for (i = 0; i < NOLD_LACKS; i++)
		if (strcmp(name, old_lacks[i]) == 0)
			return 1;
	return 0;
}

static void t_symbols_old(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	CHECK(h != NULL);
	if (!h)
		return;
	CHECK(dlsym(h, "nvmlInit") != NULL);
	CHECK(dlsym(h, "nvmlInit_v2") == NULL);
	CHECK(dlsym(h, "nvmlDeviceGetCurrentClocksThrottleReasons") != NULL);
	for (i = 0; i < NOLD; i++)
		if (!dlsym(h, old_names[i])) {
			fprintf(stderr, "old lacks %s\n", old_names[i]);
			failures++;
		}
	for (i = 0; i < NNEW; i++) {
		int want = !lacked_by_old(new_names[i]);

		if (!!dlsym(h, new_names[i]) != want) {
			fprintf(stderr, "old %s %s\n",
				want ? "lacks" : "exports", new_names[i]);
			failures++;
		}
	}
	dlclose(h);
}

/* No script: one healthy H100 with the documented defaults. */
static void t_defaults(const char *lib)
{
	struct gw_nvml_fns f;
	struct gw_nvml_pci_info pci;
	struct gw_nvml_utilization util;
	struct gw_nvml_memory mem;
	struct gw_nvml_field_value fv[2];
	gw_nvml_device_t d, bad = NULL;
	unsigned long long ull;
	unsigned int n, u;
	char buf[128];
	int i;
	void *h;

	unsetenv(ENV);
	h = open_lib(lib, &f);
	CHECK_EQ(f.device_get_count(&n), GW_NVML_ERROR_UNINITIALIZED);
	CHECK_EQ(f.device_get_handle_by_index(0, &bad),
		 GW_NVML_ERROR_UNINITIALIZED);
	CHECK_EQ(f.shutdown(), GW_NVML_ERROR_UNINITIALIZED);
	CHECK_EQ(f.init(), GW_NVML_SUCCESS);
	CHECK_EQ(f.device_get_count(&n), GW_NVML_SUCCESS);
	CHECK_EQ(n, 1);
	d = handle(&f, 0);
	CHECK_EQ(f.device_get_handle_by_index(1, &bad),
		 GW_NVML_ERROR_INVALID_ARGUMENT);
	CHECK_EQ(f.device_get_temperature(&n, 0, &u),
		 GW_NVML_ERROR_INVALID_ARGUMENT);

	CHECK_EQ(f.system_get_driver_version(buf, sizeof(buf)), 0);
	CHECK_STR(buf, "550.54.15");
	CHECK_EQ(f.device_get_name(d, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "NVIDIA H100 80GB HBM3");
	CHECK_EQ(f.device_get_name(d, buf, 8), GW_NVML_ERROR_INSUFFICIENT_SIZE);
	CHECK_EQ(f.device_get_uuid(d, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "GPU-00000000-0000-0000-0000-000000000000");
	CHECK_EQ(f.device_get_pci_info(d, &pci), 0);
	CHECK_STR(pci.bus_id, "00000000:18:00.0");
	CHECK_STR(pci.bus_id_legacy, "0000:18:00.0");
	CHECK_EQ(pci.bus, 0x18);
	CHECK_EQ(pci.pci_device_id, 0x233010de);

	CHECK_EQ(f.device_get_temperature(d, GW_NVML_TEMPERATURE_GPU, &u), 0);
	CHECK_EQ(u, 45);
	CHECK_EQ(f.device_get_temperature(d, 1, &u),
		 GW_NVML_ERROR_INVALID_ARGUMENT);
	CHECK_EQ(f.device_get_power_usage(d, &u), 0);
	CHECK_EQ(u, 250000);
	CHECK_EQ(f.device_get_enforced_power_limit(d, &u), 0);
	CHECK_EQ(u, 700000);
	CHECK_EQ(f.device_get_total_energy_consumption(d, &ull), 0);
	CHECK_EQ(ull, 1000000000);
	CHECK_EQ(f.device_get_utilization_rates(d, &util), 0);
	CHECK_EQ(util.gpu, 50);
	CHECK_EQ(util.memory, 30);
	CHECK_EQ(f.device_get_memory_info(d, &mem), 0);
	CHECK_EQ(mem.total, 85899345920LL);
	CHECK_EQ(mem.used, 10737418240LL);
	CHECK_EQ(mem.free, 85899345920LL - 10737418240LL);
	CHECK_EQ(f.device_get_clock_info(d, GW_NVML_CLOCK_SM, &u), 0);
	CHECK_EQ(u, 1755);
	CHECK_EQ(f.device_get_clock_info(d, GW_NVML_CLOCK_MEM, &u), 0);
	CHECK_EQ(u, 2619);
	CHECK_EQ(f.device_get_clock_info(d, 7, &u),
		 GW_NVML_ERROR_INVALID_ARGUMENT);
	CHECK_EQ(f.device_get_max_clock_info(d, GW_NVML_CLOCK_VIDEO, &u), 0);
	CHECK_EQ(u, 1755);
	CHECK_EQ(f.device_get_fan_speed(d, &u), GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(f.device_get_performance_state(d, &i), 0);
	CHECK_EQ(i, 0);
	CHECK_EQ(f.device_get_total_ecc_errors(d, 1, 1, &ull), 0);
	CHECK_EQ(ull, 0);
	CHECK_EQ(f.device_get_curr_pcie_link_generation(d, &u), 0);
	CHECK_EQ(u, 5);
	CHECK_EQ(f.device_get_curr_pcie_link_width(d, &u), 0);
	CHECK_EQ(u, 16);
	CHECK_EQ(
		f.device_get_pcie_throughput(d, GW_NVML_PCIE_UTIL_RX_BYTES, &u),
		0);
	CHECK_EQ(u, 2000);
	CHECK_EQ(f.device_get_nvlink_state(d, 17, &i), 0);
	CHECK_EQ(i, GW_NVML_FEATURE_ENABLED);
	CHECK_EQ(f.device_get_nvlink_state(d, 18, &i),
		 GW_NVML_ERROR_INVALID_ARGUMENT);
	CHECK_EQ(f.device_get_supported_event_types(d, &ull), 0);
	CHECK_EQ(ull, 0x1f);
	memset(fv, 0, sizeof(fv));
	fv[0].field_id = GW_NVML_FI_DEV_MEMORY_TEMP;
	fv[1].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
	fv[1].scope_id = UINT_MAX;
	CHECK_EQ(f.device_get_field_values(d, 2, fv), 0);
	CHECK_EQ(fv[0].nvml_return, 0);
	CHECK_EQ(fv[0].value_type, GW_NVML_VALUE_TYPE_UNSIGNED_INT);
	CHECK_EQ(fv[0].value.ui, 50);
	CHECK_EQ(fv[1].nvml_return, 0);
	CHECK_EQ(fv[1].value.ull, 0);

	CHECK_STR(f.error_string(GW_NVML_ERROR_GPU_IS_LOST), "GPU is lost");
	CHECK_STR(f.error_string(GW_NVML_ERROR_NOT_SUPPORTED), "Not Supported");
	CHECK_STR(f.error_string(GW_NVML_ERROR_NO_PERMISSION),
		  "Insufficient Permissions");
	CHECK_STR(f.error_string(GW_NVML_ERROR_TIMEOUT), "Timeout");
	CHECK_EQ(f.shutdown(), GW_NVML_SUCCESS);
	CHECK_EQ(f.device_get_temperature(d, 0, &u),
		 GW_NVML_ERROR_UNINITIALIZED);
	dlclose(h);
}

static void t_values(const char *lib)
{
	static const unsigned int gpm_ids[] = { 2, 3, 5, 10, 99 };
	struct gw_nvml_fns f;
	struct gw_nvml_pci_info pci;
	struct gw_nvml_memory mem;
	struct gw_nvml_field_value fv[8];
	struct gw_nvml_gpm_support sup = { GW_NVML_GPM_SUPPORT_VERSION, 9 };
	struct gw_nvml_gpm_metrics_get mg;
	gw_nvml_device_t d0, d1, d2, bad = NULL;
	unsigned int n, u, c1, c2, c3, c4;
	unsigned long long ull;
	void *s0a, *s0b, *s1;
	char buf[128];
	size_t i;
	int st;
	void *h;

	set_script("# a comment\n"
		   "\n"
		   "gpus 4\n"
		   "driver_version 535.129.03\n"
		   "gpu.*.temperature 60\n"
		   "gpu.1.temperature 70   # trailing comment\n"
		   "gpu.1.name NVIDIA A100-SXM4-80GB\n"
		   "gpu.1.uuid GPU-abc\n"
		   "gpu.1.pci_bus_id 00000000:9A:00.0\n"
		   "gpu.0.power_mw error:NO_PERMISSION\n"
		   "gpu.0.fan_speed 40\n"
		   "gpu.1.memory_total 5000\n"
		   "gpu.1.memory_used 1000\n"
		   "gpu.2.all error:GPU_IS_LOST\n"
		   "gpu.3.handle error:NO_PERMISSION\n"
		   "gpu.0.clocks_event_reasons 0x44\n"
		   "gpu.0.nvlink_links 4\n"
		   "gpu.0.nvlink_down 1, 3\n"
		   "gpu.0.nvlink_errors 7\n"
		   "gpu.0.nvlink_tx_kib 1001\n"
		   "gpu.0.memory_temperature error:NOT_SUPPORTED\n"
		   "gpu.1.pstate 8\n"
		   "gpu.1.ecc_uncorrected 2\n"
		   "gpu.1.remapped_pending 1\n"
		   "gpu.0.pcie_rx_kbs error:123\n"
		   "gpu.0.gpm_tensor 12.5\n"
		   "gpu.1.gpm 0\n");
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);
	CHECK_EQ(f.init(), 0);
	CHECK_EQ(f.device_get_count(&n), 0);
	CHECK_EQ(n, 4);
	d0 = handle(&f, 0);
	d1 = handle(&f, 1);
	d2 = handle(&f, 2);
	CHECK_EQ(f.device_get_handle_by_index(3, &bad),
		 GW_NVML_ERROR_NO_PERMISSION);
	CHECK_EQ(f.system_get_driver_version(buf, sizeof(buf)), 0);
	CHECK_STR(buf, "535.129.03");

	CHECK_EQ(f.device_get_temperature(d0, 0, &u), 0);
	CHECK_EQ(u, 60);
	CHECK_EQ(f.device_get_temperature(d1, 0, &u), 0);
	CHECK_EQ(u, 70);
	CHECK_EQ(f.device_get_temperature(d2, 0, &u),
		 GW_NVML_ERROR_GPU_IS_LOST);
	CHECK_EQ(f.device_get_name(d2, buf, sizeof(buf)),
		 GW_NVML_ERROR_GPU_IS_LOST);
	CHECK_EQ(f.device_get_name(d1, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "NVIDIA A100-SXM4-80GB");
	CHECK_EQ(f.device_get_uuid(d1, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "GPU-abc");
	CHECK_EQ(f.device_get_pci_info(d1, &pci), 0);
	CHECK_STR(pci.bus_id, "00000000:9A:00.0");
	CHECK_STR(pci.bus_id_legacy, "0000:9a:00.0");
	CHECK_EQ(pci.bus, 0x9a);
	CHECK_EQ(f.device_get_uuid(d0, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "GPU-00000000-0000-0000-0000-000000000000");

	CHECK_EQ(f.device_get_power_usage(d0, &u), GW_NVML_ERROR_NO_PERMISSION);
	CHECK_EQ(f.device_get_power_usage(d1, &u), 0);
	CHECK_EQ(u, 250000);
	CHECK_EQ(f.device_get_fan_speed(d0, &u), 0);
	CHECK_EQ(u, 40);
	CHECK_EQ(f.device_get_fan_speed(d1, &u), GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(f.device_get_memory_info(d1, &mem), 0);
	CHECK_EQ(mem.total, 5000);
	CHECK_EQ(mem.used, 1000);
	CHECK_EQ(mem.free, 4000);
	CHECK_EQ(f.device_get_clocks_event_reasons(d0, &ull), 0);
	CHECK_EQ(ull, 0x44);
	CHECK_EQ(f.device_get_clocks_throttle_reasons(d0, &ull), 0);
	CHECK_EQ(ull, 0x44);
	CHECK_EQ(f.device_get_performance_state(d1, &st), 0);
	CHECK_EQ(st, 8);
	CHECK_EQ(f.device_get_total_ecc_errors(d1, 1, 0, &ull), 0);
	CHECK_EQ(ull, 2);
	CHECK_EQ(f.device_get_total_ecc_errors(d1, 1, 1, &ull), 0);
	CHECK_EQ(ull, 2);
	CHECK_EQ(f.device_get_total_ecc_errors(d1, 0, 1, &ull), 0);
	CHECK_EQ(ull, 0);
	CHECK_EQ(f.device_get_remapped_rows(d1, &c1, &c2, &c3, &c4), 0);
	CHECK(c1 == 0 && c2 == 0 && c3 == 1 && c4 == 0);
	CHECK_EQ(f.device_get_pcie_throughput(d0, 1, &u), 123);
	CHECK_EQ(f.device_get_pcie_throughput(d0, 0, &u), 0);
	CHECK_EQ(u, 1000);

	/* NVLink: 4 links, 1 and 3 down. */
	CHECK_EQ(f.device_get_nvlink_state(d0, 0, &st), 0);
	CHECK_EQ(st, GW_NVML_FEATURE_ENABLED);
	CHECK_EQ(f.device_get_nvlink_state(d0, 1, &st), 0);
	CHECK_EQ(st, GW_NVML_FEATURE_DISABLED);
	CHECK_EQ(f.device_get_nvlink_state(d0, 3, &st), 0);
	CHECK_EQ(st, GW_NVML_FEATURE_DISABLED);
	CHECK_EQ(f.device_get_nvlink_state(d0, 4, &st),
		 GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(f.device_get_nvlink_error_counter(d0, 2, 3, &ull), 0);
	CHECK_EQ(ull, 7);
	CHECK_EQ(f.device_get_nvlink_error_counter(d0, 2, 4, &ull),
		 GW_NVML_ERROR_INVALID_ARGUMENT);
	CHECK_EQ(f.device_get_nvlink_error_counter(d0, 9, 0, &ull),
		 GW_NVML_ERROR_NOT_SUPPORTED);

	/* Field values: per-entry results, the call itself succeeds. */
	memset(fv, 0, sizeof(fv));
	fv[0].field_id = GW_NVML_FI_DEV_MEMORY_TEMP;
	fv[1].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[1].scope_id = UINT_MAX;
	fv[2].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
	fv[2].scope_id = UINT_MAX;
	fv[3].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[3].scope_id = 0;
	fv[4].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[4].scope_id = 2;
	fv[5].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[5].scope_id = 1;
	fv[6].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[6].scope_id = 5;
	fv[7].field_id = 9999;
	CHECK_EQ(f.device_get_field_values(d0, 8, fv), 0);
	CHECK_EQ(fv[0].nvml_return, GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(fv[1].nvml_return, 0);
	CHECK_EQ(fv[1].value_type, GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
	CHECK_EQ(fv[1].value.ull, 1001);
	CHECK(fv[1].timestamp > 1600000000000000LL);
	CHECK_EQ(fv[2].value.ull, 0);
	CHECK_EQ(fv[3].value.ull, 501);
	CHECK_EQ(fv[4].value.ull, 500);
	CHECK_EQ(fv[5].nvml_return, 0);
	CHECK_EQ(fv[5].value.ull, 0);
	CHECK_EQ(fv[6].nvml_return, GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(fv[7].nvml_return, GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(f.device_get_field_values(d2, 1, fv),
		 GW_NVML_ERROR_GPU_IS_LOST);
	CHECK_EQ(f.device_get_field_values(d0, 0, fv),
		 GW_NVML_ERROR_INVALID_ARGUMENT);

	/* GPM */
	CHECK_EQ(f.gpm_query_device_support(d0, &sup), 0);
	CHECK_EQ(sup.is_supported_device, 1);
	CHECK_EQ(f.gpm_query_device_support(d1, &sup), 0);
	CHECK_EQ(sup.is_supported_device, 0);
	CHECK_EQ(f.gpm_sample_alloc(&s0a), 0);
	CHECK_EQ(f.gpm_sample_alloc(&s0b), 0);
	CHECK_EQ(f.gpm_sample_alloc(&s1), 0);
	CHECK_EQ(f.gpm_sample_get(d0, s0a), 0);
	CHECK_EQ(f.gpm_sample_get(d0, s0b), 0);
	CHECK_EQ(f.gpm_sample_get(d1, s1), GW_NVML_ERROR_NOT_SUPPORTED);
	memset(&mg, 0, sizeof(mg));
	mg.version = GW_NVML_GPM_METRICS_GET_VERSION;
	mg.sample1 = s0a;
	mg.sample2 = s0b;
	mg.num_metrics = sizeof(gpm_ids) / sizeof(gpm_ids[0]);
	for (i = 0; i < mg.num_metrics; i++)
		mg.metrics[i].metric_id = gpm_ids[i];
	CHECK_EQ(f.gpm_metrics_get(&mg), 0);
	CHECK(mg.metrics[0].nvml_return == 0 && mg.metrics[0].value == 60.0);
	CHECK(mg.metrics[1].nvml_return == 0 && mg.metrics[1].value == 40.0);
	CHECK(mg.metrics[2].nvml_return == 0 && mg.metrics[2].value == 12.5);
	CHECK(mg.metrics[3].nvml_return == 0 && mg.metrics[3].value == 50.0);
	CHECK_EQ(mg.metrics[4].nvml_return, GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK(mg.metrics[0].info.unit && mg.metrics[0].info.short_name);
	mg.sample2 = s1; /* never filled */
	CHECK_EQ(f.gpm_metrics_get(&mg), GW_NVML_ERROR_INVALID_ARGUMENT);
	mg.sample2 = s0b;
	mg.version = 2;
	CHECK_EQ(f.gpm_metrics_get(&mg), GW_NVML_ERROR_INVALID_ARGUMENT);
	CHECK_EQ(f.gpm_sample_free(s0a), 0);
	CHECK_EQ(f.gpm_sample_free(s0b), 0);
	CHECK_EQ(f.gpm_sample_free(s1), 0);
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

struct hang_arg {
	const struct gw_nvml_fns *f;
	gw_nvml_device_t d;
	struct gw_nvml_utilization util;
	int r;
	double took;
};

static void *hang_thread(void *p)
{
	struct hang_arg *a = p;
	double t0 = now_s();

	a->r = a->f->device_get_utilization_rates(a->d, &a->util);
	a->took = now_s() - t0;
	return NULL;
}

/* hang: sleeps without blocking the other GPUs, then answers defaults. */
static void t_hang(const char *lib)
{
	struct hang_arg a = { 0 };
	struct gw_nvml_fns f;
	gw_nvml_device_t d1;
	unsigned int u;
	pthread_t th;
	double t0, took;
	void *h;

	set_script("gpus 2\n"
		   "gpu.0.util_gpu hang:1.0\n"
		   "gpu.0.util_memory 33\n"
		   "gpu.1.all hang:0.5\n"
		   "gpu.1.temperature 66\n");
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);
	CHECK_EQ(f.init(), 0);
	a.f = &f;
	a.d = handle(&f, 0);
	d1 = handle(&f, 1);
	CHECK_EQ(pthread_create(&th, NULL, hang_thread, &a), 0);
	sleep_ms(100);
	t0 = now_s();
	CHECK_EQ(f.device_get_temperature(a.d, 0, &u), 0);
	CHECK_EQ(f.device_get_count(&u), 0);
	took = now_s() - t0;
	CHECK(took < 0.4); /* the hung call holds no lock */
	t0 = now_s();
	CHECK_EQ(f.device_get_temperature(d1, 0, &u), 0);
	took = now_s() - t0;
	CHECK(took >= 0.45);
	CHECK_EQ(u, 66);
	pthread_join(th, NULL);
	CHECK_EQ(a.r, 0);
	CHECK(a.took >= 0.95);
	CHECK_EQ(a.util.gpu, 50); /* the built-in default */
	CHECK_EQ(a.util.memory, 33);
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

static void t_procs(const char *lib)
{
	struct gw_nvml_process_info pi[8];
	struct gw_nvml_process_util pu[8];
	struct gw_nvml_fns f;
	gw_nvml_device_t d0, d1;
	struct timespec ts;
	long long now_us;
	unsigned int n;
	void *h;

	set_script("gpus 2\n"
		   "gpu.0.processes 100:1000, 200:na,300:3000\n"
		   "gpu.0.process_util 100:10:20,200:30:40:1:2\n");
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);
	CHECK_EQ(f.init(), 0);
	d0 = handle(&f, 0);
	d1 = handle(&f, 1);

	n = 0;
	CHECK_EQ(f.device_get_compute_running_processes(d0, &n, NULL),
		 GW_NVML_ERROR_INSUFFICIENT_SIZE);
	CHECK_EQ(n, 3);
	n = 2;
	CHECK_EQ(f.device_get_compute_running_processes(d0, &n, pi),
		 GW_NVML_ERROR_INSUFFICIENT_SIZE);
	CHECK_EQ(n, 3);
	n = 8;
	memset(pi, 0, sizeof(pi));
	CHECK_EQ(f.device_get_compute_running_processes(d0, &n, pi), 0);
	CHECK_EQ(n, 3);
	CHECK(pi[0].pid == 100 && pi[0].used_gpu_memory == 1000);
	CHECK(pi[1].pid == 200 && pi[1].used_gpu_memory == ULLONG_MAX);
	CHECK(pi[2].pid == 300 && pi[2].used_gpu_memory == 3000);
	CHECK_EQ(pi[0].gpu_instance_id, 0xffffffffu);
	n = 0;
	CHECK_EQ(f.device_get_compute_running_processes(d1, &n, NULL), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(f.device_get_compute_running_processes(d1, NULL, NULL),
		 GW_NVML_ERROR_INVALID_ARGUMENT);

	n = 0;
	CHECK_EQ(f.device_get_process_utilization(d0, NULL, &n, 0),
		 GW_NVML_ERROR_INSUFFICIENT_SIZE);
	CHECK_EQ(n, 2);
	n = 1;
	CHECK_EQ(f.device_get_process_utilization(d0, pu, &n, 0),
		 GW_NVML_ERROR_INSUFFICIENT_SIZE);
	CHECK_EQ(n, 2);
	n = 8;
	CHECK_EQ(f.device_get_process_utilization(d0, pu, &n, 0), 0);
	CHECK_EQ(n, 2);
	CHECK(pu[0].pid == 100 && pu[0].sm_util == 10 && pu[0].mem_util == 20);
	CHECK(pu[1].pid == 200 && pu[1].sm_util == 30 && pu[1].enc_util == 1 &&
	      pu[1].dec_util == 2);
	clock_gettime(CLOCK_REALTIME, &ts);
	now_us = (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
	CHECK(llabs((long long)pu[0].timestamp - now_us) < 10000000LL);
	n = 8;
	CHECK_EQ(f.device_get_process_utilization(
			 d0, pu, &n, (unsigned long long)now_us + 60000000ULL),
		 GW_NVML_ERROR_NOT_FOUND);
	n = 8;
	CHECK_EQ(f.device_get_process_utilization(d1, pu, &n, 0),
		 GW_NVML_ERROR_NOT_FOUND);
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

static const char events_script[] = "gpus 2\n"
				    "gpu.1.supported_events 0xa\n"
				    "event.3 0 xid 79\n"
				    "event.1 0 xid 13\n"
				    "event.2 1 dbe\n"
				    "event.4 1 sbe 0\n"
				    "event.5 0 pstate 0\n"
				    "event.6 1 xid 48\n";

struct writer_arg {
	long delay_ms;
	const char *text;
};

static void *writer_thread(void *p)
{
	const struct writer_arg *w = p;

	sleep_ms(w->delay_ms);
	write_file(script_path, w->text);
	return NULL;
}

static void t_events(const char *lib)
{
	static const struct {
		unsigned long long seq_data;
		unsigned int gpu;
		unsigned long long type;
	} want[] = {
		{ 13, 0, GW_NVML_EVENT_XID_CRITICAL },
		{ 0, 1, GW_NVML_EVENT_DOUBLE_BIT_ECC },
		{ 79, 0, GW_NVML_EVENT_XID_CRITICAL },
		{ 48, 1, GW_NVML_EVENT_XID_CRITICAL },
	};
	char text[1024];
	struct writer_arg w;
	struct gw_nvml_event_data ev;
	struct gw_nvml_fns f;
	gw_nvml_device_t d[2];
	void *set = NULL, *set2 = NULL;
	pthread_t th;
	double t0, took;
	size_t i;
	void *h;

	set_script(events_script);
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);
	CHECK_EQ(f.event_set_create(&set), GW_NVML_ERROR_UNINITIALIZED);
	CHECK_EQ(f.init(), 0);
	d[0] = handle(&f, 0);
	d[1] = handle(&f, 1);
	CHECK_EQ(f.event_set_create(&set), 0);
	CHECK_EQ(f.device_register_events(d[0],
					  GW_NVML_EVENT_XID_CRITICAL |
						  GW_NVML_EVENT_DOUBLE_BIT_ECC |
						  GW_NVML_EVENT_SINGLE_BIT_ECC,
					  set),
		 0);
	CHECK_EQ(f.device_register_events(d[1], GW_NVML_EVENT_SINGLE_BIT_ECC,
					  set),
		 GW_NVML_ERROR_NOT_SUPPORTED);
	CHECK_EQ(f.device_register_events(d[1],
					  GW_NVML_EVENT_XID_CRITICAL |
						  GW_NVML_EVENT_DOUBLE_BIT_ECC,
					  set),
		 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		memset(&ev, 0, sizeof(ev));
		CHECK_EQ(f.event_set_wait(set, &ev, 1000), 0);
		CHECK(ev.device == d[want[i].gpu]);
		CHECK_EQ(ev.event_type, want[i].type);
		CHECK_EQ(ev.event_data, want[i].seq_data);
		CHECK_EQ(ev.gpu_instance_id, 0xffffffffu);
	}
	t0 = now_s();
	CHECK_EQ(f.event_set_wait(set, &ev, 150), GW_NVML_ERROR_TIMEOUT);
	took = now_s() - t0;
	CHECK(took >= 0.14 && took < 1.0);

	/* An event appended while a wait is in progress is delivered. */
	snprintf(text, sizeof(text), "%sevent.7 0 xid 31\n", events_script);
	w.delay_ms = 200;
	w.text = text;
	CHECK_EQ(pthread_create(&th, NULL, writer_thread, &w), 0);
	t0 = now_s();
	CHECK_EQ(f.event_set_wait(set, &ev, 5000), 0);
	took = now_s() - t0;
	pthread_join(th, NULL);
	CHECK(took >= 0.15 && took < 2.0);
	CHECK_EQ(ev.event_data, 31);
	CHECK(ev.device == d[0]);
	CHECK_EQ(f.event_set_wait(set, &ev, 0), GW_NVML_ERROR_TIMEOUT);

	/* A new set starts from the beginning of the script. */
	CHECK_EQ(f.event_set_create(&set2), 0);
	CHECK_EQ(f.device_register_events(d[0], GW_NVML_EVENT_PSTATE, set2), 0);
	CHECK_EQ(f.event_set_wait(set2, &ev, 0), 0);
	CHECK_EQ(ev.event_type, GW_NVML_EVENT_PSTATE);
	CHECK_EQ(f.event_set_wait(set2, &ev, 0), GW_NVML_ERROR_TIMEOUT);

	snprintf(text, sizeof(text), "%sevent_wait error:GPU_IS_LOST\n",
		 events_script);
	set_script(text);
	t0 = now_s();
	CHECK_EQ(f.event_set_wait(set, &ev, 5000), GW_NVML_ERROR_GPU_IS_LOST);
	CHECK(now_s() - t0 < 1.0);
	CHECK_EQ(f.event_set_wait(NULL, &ev, 0),
		 GW_NVML_ERROR_INVALID_ARGUMENT);
	CHECK_EQ(f.event_set_free(set), 0);
	CHECK_EQ(f.event_set_free(set2), 0);
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

/* Live re-read, the call log and the parse-error report. */
static void t_live(const char *lib)
{
	char logp[PATH_MAX + 32], errp[PATH_MAX + 32], text[2 * PATH_MAX];
	struct gw_nvml_fns f;
	gw_nvml_device_t d;
	const char *log;
	unsigned int u;
	int saved, fd;
	void *h;

	snprintf(logp, sizeof(logp), "%s/calls.log", tmpdir);
	snprintf(errp, sizeof(errp), "%s/stderr.txt", tmpdir);
	snprintf(text, sizeof(text),
		 "calls_log %s\n"
		 "gpu.0.temperature 50\n"
		 "this is not valid\n"
		 "gpu.0.temperature abc\n"
		 "gpu.99.temperature 1\n"
		 "event.0 0 xid 1\n"
		 "gpu.0.no_such_key 1\n",
		 logp);
	set_script(text);
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);

	fflush(stderr);
	saved = dup(2);
	fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	CHECK_EQ(f.init(), 0);
	d = handle(&f, 0);
	CHECK_EQ(f.device_get_temperature(d, 0, &u), 0);
	CHECK_EQ(u, 50);
	sleep_ms(80);
	CHECK_EQ(f.device_get_temperature(d, 0, &u), 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	log = read_all(errp);
	CHECK_EQ(count_lines(log, "fake-nvml: "), 5); /* once per parse */
	CHECK(strstr(log, ":3: cannot parse: this is not valid") != NULL);
	CHECK(strstr(log, ":7: cannot parse: gpu.0.no_such_key 1") != NULL);

	log = read_all(logp);
	CHECK(strstr(log, "nvmlInit_v2 -\n") != NULL);
	CHECK(strstr(log, "nvmlDeviceGetHandleByIndex_v2 0\n") != NULL);
	CHECK_EQ(count_lines(log, "nvmlDeviceGetTemperature 0\n"), 2);

	/* No calls, no lines; one call, one line. */
	unlink(logp);
	sleep_ms(100);
	CHECK(access(logp, F_OK) != 0);
	CHECK_EQ(f.device_get_power_usage(d, &u), 0);
	CHECK_STR(read_all(logp), "nvmlDeviceGetPowerUsage 0\n");

	/* A rewritten script takes effect while the library is in use. */
	snprintf(text, sizeof(text), "calls_log %s\ngpu.0.temperature 77\n",
		 logp);
	set_script(text);
	CHECK_EQ(f.device_get_temperature(d, 0, &u), 0);
	CHECK_EQ(u, 77);
	set_script("gpus 0\n");
	CHECK_EQ(f.device_get_temperature(d, 0, &u), GW_NVML_ERROR_GPU_IS_LOST);
	CHECK_EQ(f.device_get_count(&u), 0);
	CHECK_EQ(u, 0);
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

static void t_init(const char *lib)
{
	struct gw_nvml_fns f;
	unsigned int n;
	double t0;
	void *h;

	/* Named but missing: the driver is "not loaded" until it appears. */
	unlink(script_path);
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);
	CHECK_EQ(f.init(), GW_NVML_ERROR_DRIVER_NOT_LOADED);
	set_script("init error:NO_PERMISSION\n");
	CHECK_EQ(f.init(), GW_NVML_ERROR_NO_PERMISSION);
	set_script("init error:7\ngpus error:UNKNOWN\n");
	CHECK_EQ(f.init(), GW_NVML_ERROR_INSUFFICIENT_SIZE);
	set_script("init hang:0.3\ngpus error:UNKNOWN\n");
	t0 = now_s();
	CHECK_EQ(f.init(), 0);
	CHECK(now_s() - t0 >= 0.28);
	CHECK_EQ(f.device_get_count(&n), GW_NVML_ERROR_UNKNOWN);
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

struct stress_arg {
	const struct gw_nvml_fns *f;
	unsigned int gpu;
	int bad;
};

static void *stress_thread(void *p)
{
	struct stress_arg *a = p;
	struct gw_nvml_memory mem;
	gw_nvml_device_t d = NULL;
	unsigned int u;
	int i;

	if (a->f->device_get_handle_by_index(a->gpu, &d))
		a->bad++;
	for (i = 0; i < 3000; i++) {
		if (a->f->device_get_temperature(d, 0, &u) ||
		    (u != 40 + a->gpu && u != 60 + a->gpu))
			a->bad++;
		if (a->f->device_get_memory_info(d, &mem))
			a->bad++;
	}
	return NULL;
}

/* Many threads while the script is rewritten under them. */
static void t_threads(const char *lib)
{
	struct stress_arg a[4];
	struct gw_nvml_fns f;
	pthread_t th[4];
	char text[256];
	int i;
	void *h;

	set_script("gpus 4\ngpu.0.temperature 40\ngpu.1.temperature 41\n"
		   "gpu.2.temperature 42\ngpu.3.temperature 43\n");
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);
	CHECK_EQ(f.init(), 0);
	for (i = 0; i < 4; i++) {
		a[i].f = &f;
		a[i].gpu = (unsigned int)i;
		a[i].bad = 0;
		CHECK_EQ(pthread_create(&th[i], NULL, stress_thread, &a[i]), 0);
	}
	for (i = 0; i < 10; i++) {
		int base = i % 2 ? 40 : 60;

		snprintf(text, sizeof(text),
			 "gpus 4\ngpu.0.temperature %d\ngpu.1.temperature %d\n"
			 "gpu.2.temperature %d\ngpu.3.temperature %d\n",
			 base, base + 1, base + 2, base + 3);
		write_file(script_path, text);
		sleep_ms(20);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(a[i].bad, 0);
	}
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

/* The old build, through the fallback names, with no script. */
static void t_old(const char *lib)
{
	struct gw_nvml_process_info pi[2];
	struct gw_nvml_pci_info pci;
	struct gw_nvml_event_data ev;
	struct gw_nvml_fns f;
	unsigned long long ull;
	gw_nvml_device_t d;
	unsigned int n;
	void *h, *set;

	set_script("event.1 0 xid 43\ngpu.0.clocks_event_reasons 0x8\n");
	setenv(ENV, script_path, 1);
	h = open_lib(lib, &f);
	CHECK(f.device_get_field_values == NULL);
	CHECK(f.gpm_metrics_get == NULL);
	CHECK(f.device_get_clocks_event_reasons == NULL);
	CHECK_EQ(f.init(), 0);
	CHECK_EQ(f.device_get_count(&n), 0);
	CHECK_EQ(n, 1);
	d = handle(&f, 0);
	CHECK_EQ(f.device_get_pci_info(d, &pci), 0);
	CHECK_STR(pci.bus_id, "00000000:18:00.0");
	n = 2;
	CHECK_EQ(f.device_get_compute_running_processes(d, &n, pi), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(f.device_get_clocks_throttle_reasons(d, &ull), 0);
	CHECK_EQ(ull, 8);
	CHECK_EQ(f.event_set_create(&set), 0);
	CHECK_EQ(f.device_register_events(d, GW_NVML_EVENT_XID_CRITICAL, set),
		 0);
	memset(&ev, 0, sizeof(ev));
	ev.gpu_instance_id = 0x1234;
	CHECK_EQ(f.event_set_wait(set, &ev, 1000), 0);
	CHECK_EQ(ev.event_data, 43);
	CHECK(ev.device == d);
	CHECK_EQ(ev.gpu_instance_id, 0x1234); /* the v1 struct is shorter */
	CHECK_EQ(f.event_set_free(set), 0);
	CHECK_EQ(f.shutdown(), 0);
	dlclose(h);
}

/* ---- runner -------------------------------------------------------------- */

static int run(const char *name, void (*fn)(const char *), const char *lib)
{
	int status = 0, ok;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		failures = 0;
		fn(lib);
		exit(failures ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0)
		status = -1;
	ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	printf("%s - %s\n", ok ? "ok" : "not ok", name);
	return !ok;
}

int main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");
	char full[PATH_MAX], old[PATH_MAX];
	int bad = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s FULL_LIB OLD_LIB\n", argv[0]);
		return 2;
	}
	/* A path, never a name for dlopen() to search for. */
	if (!realpath(argv[1], full) || !realpath(argv[2], old)) {
		perror("realpath");
		return 2;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s/fake-nvml-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	snprintf(script_path, sizeof(script_path), "%s/script", tmpdir);

	bad += run("full exports every GW_NVML_SYMBOLS name and nothing else",
		   t_symbols_full, full);
	bad += run("old exports the fallback names only", t_symbols_old, old);
	bad += run("defaults without a script", t_defaults, full);
	bad += run("values, overrides, error: directives", t_values, full);
	bad += run("hang: sleeps without holding the lock", t_hang, full);
	bad += run("process lists and the sizing dance", t_procs, full);
	bad += run("events: order, once only, live", t_events, full);
	bad += run("live re-read, calls_log, parse errors", t_live, full);
	bad += run("init failures and a missing script", t_init, full);
	bad += run("threads while the script changes", t_threads, full);
	bad += run("old driver through the fallbacks", t_old, old);

	unlink(script_path);
	{
		char p[PATH_MAX + 32];

		snprintf(p, sizeof(p), "%s/calls.log", tmpdir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/stderr.txt", tmpdir);
		unlink(p);
	}
	rmdir(tmpdir);
	return bad ? 1 : 0;
}
