/* SPDX-License-Identifier: MIT */
/*
 * fake_nvml.c - a scripted libnvidia-ml.so.1 for tests.
 *
 * Exports the NVML entry points gpuwatch resolves (GW_NVML_SYMBOLS in
 * src/collect/nvml/nvml_abi.h) under their real names and signatures, and
 * answers them from a plain-text script named by $GW_FAKE_NVML_SCRIPT.
 * tests/fakes/README.md is the script's contract; keep the two in step.
 *
 * Built twice from this file: "full" exports every name in GW_NVML_SYMBOLS;
 * with FAKE_NVML_OLD_DRIVER ("old") it exports the older fallback names of
 * GW_NVML_FALLBACKS instead of the new ones and lacks the entry points an
 * old driver does not have (field values, GPM, energy, remapped rows,
 * per-process utilisation, the "ClocksEvent" spelling).
 *
 * State: the parsed script, the init count and the event sets'
 * registrations are guarded by one mutex.  Every entry point takes it once
 * (begin), re-reads the script if its identity, size or mtime changed
 * (checked at most every 50 ms of CLOCK_MONOTONIC), appends to the call
 * log, resolves the values it answers with, and drops it (end) before
 * sleeping for a hang: directive and writing its outputs.  The mutex is
 * never held while sleeping, so one hung GPU does not block the others.
 *
 * This library stands in for a vendor library whose state is process-wide,
 * so unlike the agent it keeps its state in file-scope variables.  Device
 * handles point into a static array of FAKE_MAX_GPUS structs and stay valid
 * whatever the script says; a handle whose index is no longer below `gpus`
 * answers GPU_IS_LOST.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "nvml_abi.h"

#define FAKE_API __attribute__((visibility("default")))

#define FAKE_MAX_GPUS	   16
#define FAKE_STAR	   FAKE_MAX_GPUS /* the gpu.*.KEY slot */
#define FAKE_MAX_PROCS	   256
#define FAKE_MAX_EVENTS	   65536
#define FAKE_MAX_LINE	   65536
#define FAKE_MAX_HANG_S	   3600.0
#define FAKE_RELOAD_NS	   50000000LL /* re-check the script at most this often */
#define FAKE_POLL_NS	   200000000LL /* event wait poll period: 200 ms */
#define FAKE_NO_INSTANCE   0xffffffffu
#define FAKE_ESET_MAGIC	   0x45564e54u
#define FAKE_GPM_MAGIC	   0x47504d53u
#define FAKE_PCI_DEVICE_ID 0x233010deu /* H100 SXM5 80GB; vendor 10de */
#define FAKE_PCI_SUBSYS_ID 0x16c110deu
#define FAKE_PCI_BUS_BASE  0x18

/* ---- exported entry points ------------------------------------------ */

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_API int nvmlInit_v2(void);
FAKE_API int nvmlDeviceGetCount_v2(unsigned int *count);
FAKE_API int nvmlDeviceGetHandleByIndex_v2(unsigned int index,
					   gw_nvml_device_t *device);
FAKE_API int nvmlDeviceGetPciInfo_v3(gw_nvml_device_t device,
				     struct gw_nvml_pci_info *pci);
FAKE_API int
nvmlDeviceGetComputeRunningProcesses_v3(gw_nvml_device_t device,
					unsigned int *count,
					struct gw_nvml_process_info *infos);
FAKE_API int nvmlEventSetWait_v2(void *set, struct gw_nvml_event_data *data,
				 unsigned int timeout_ms);
FAKE_API int nvmlDeviceGetFieldValues(gw_nvml_device_t device, int count,
				      struct gw_nvml_field_value *values);
FAKE_API int nvmlDeviceGetTotalEnergyConsumption(gw_nvml_device_t device,
						 unsigned long long *energy);
FAKE_API int
nvmlDeviceGetCurrentClocksEventReasons(gw_nvml_device_t device,
				       unsigned long long *reasons);
FAKE_API int nvmlDeviceGetRemappedRows(gw_nvml_device_t device,
				       unsigned int *corr, unsigned int *unc,
				       unsigned int *pending,
				       unsigned int *failure);
FAKE_API int nvmlDeviceGetProcessUtilization(
	gw_nvml_device_t device, struct gw_nvml_process_util *samples,
	unsigned int *count, unsigned long long last_seen);
FAKE_API int nvmlGpmQueryDeviceSupport(gw_nvml_device_t device,
				       struct gw_nvml_gpm_support *support);
FAKE_API int nvmlGpmSampleAlloc(void **sample);
FAKE_API int nvmlGpmSampleFree(void *sample);
FAKE_API int nvmlGpmSampleGet(gw_nvml_device_t device, void *sample);
FAKE_API int nvmlGpmMetricsGet(struct gw_nvml_gpm_metrics_get *m);
#else
FAKE_API int nvmlInit(void);
FAKE_API int nvmlDeviceGetCount(unsigned int *count);
FAKE_API int nvmlDeviceGetHandleByIndex(unsigned int index,
					gw_nvml_device_t *device);
FAKE_API int nvmlDeviceGetPciInfo_v2(gw_nvml_device_t device,
				     struct gw_nvml_pci_info *pci);
FAKE_API int
nvmlDeviceGetComputeRunningProcesses_v2(gw_nvml_device_t device,
					unsigned int *count,
					struct gw_nvml_process_info *infos);
FAKE_API int nvmlEventSetWait(void *set, struct gw_nvml_event_data *data,
			      unsigned int timeout_ms);
#endif
FAKE_API int nvmlShutdown(void);
FAKE_API const char *nvmlErrorString(int result);
FAKE_API int nvmlSystemGetDriverVersion(char *version, unsigned int length);
FAKE_API int nvmlDeviceGetName(gw_nvml_device_t device, char *name,
			       unsigned int length);
FAKE_API int nvmlDeviceGetUUID(gw_nvml_device_t device, char *uuid,
			       unsigned int length);
FAKE_API int nvmlDeviceGetTemperature(gw_nvml_device_t device, int sensor,
				      unsigned int *temp);
FAKE_API int nvmlDeviceGetPowerUsage(gw_nvml_device_t device,
				     unsigned int *power);
FAKE_API int nvmlDeviceGetEnforcedPowerLimit(gw_nvml_device_t device,
					     unsigned int *limit);
FAKE_API int nvmlDeviceGetUtilizationRates(gw_nvml_device_t device,
					   struct gw_nvml_utilization *util);
FAKE_API int nvmlDeviceGetMemoryInfo(gw_nvml_device_t device,
				     struct gw_nvml_memory *mem);
FAKE_API int nvmlDeviceGetClockInfo(gw_nvml_device_t device, int type,
				    unsigned int *clock);
FAKE_API int nvmlDeviceGetMaxClockInfo(gw_nvml_device_t device, int type,
				       unsigned int *clock);
FAKE_API int
nvmlDeviceGetCurrentClocksThrottleReasons(gw_nvml_device_t device,
					  unsigned long long *reasons);
FAKE_API int nvmlDeviceGetFanSpeed(gw_nvml_device_t device,
				   unsigned int *speed);
FAKE_API int nvmlDeviceGetPerformanceState(gw_nvml_device_t device, int *state);
FAKE_API int nvmlDeviceGetTotalEccErrors(gw_nvml_device_t device,
					 int error_type, int counter_type,
					 unsigned long long *count);
FAKE_API int nvmlDeviceGetCurrPcieLinkGeneration(gw_nvml_device_t device,
						 unsigned int *gen);
FAKE_API int nvmlDeviceGetMaxPcieLinkGeneration(gw_nvml_device_t device,
						unsigned int *gen);
FAKE_API int nvmlDeviceGetCurrPcieLinkWidth(gw_nvml_device_t device,
					    unsigned int *width);
FAKE_API int nvmlDeviceGetMaxPcieLinkWidth(gw_nvml_device_t device,
					   unsigned int *width);
FAKE_API int nvmlDeviceGetPcieReplayCounter(gw_nvml_device_t device,
					    unsigned int *count);
FAKE_API int nvmlDeviceGetPcieThroughput(gw_nvml_device_t device, int counter,
					 unsigned int *value);
FAKE_API int nvmlDeviceGetNvLinkState(gw_nvml_device_t device,
				      unsigned int link, int *active);
FAKE_API int nvmlDeviceGetNvLinkErrorCounter(gw_nvml_device_t device,
					     unsigned int link, int counter,
					     unsigned long long *value);
FAKE_API int nvmlDeviceGetSupportedEventTypes(gw_nvml_device_t device,
					      unsigned long long *types);
FAKE_API int nvmlEventSetCreate(void **set);
FAKE_API int nvmlDeviceRegisterEvents(gw_nvml_device_t device,
				      unsigned long long types, void *set);
FAKE_API int nvmlEventSetFree(void *set);

/* ---- return codes ---------------------------------------------------- */

static const struct {
	int code;
	const char *name;
	const char *msg;
} codes[] = {
	{ 0, "SUCCESS", "Success" },
	{ 1, "UNINITIALIZED", "Uninitialized" },
	{ 2, "INVALID_ARGUMENT", "Invalid Argument" },
	{ 3, "NOT_SUPPORTED", "Not Supported" },
	{ 4, "NO_PERMISSION", "Insufficient Permissions" },
	{ 5, "ALREADY_INITIALIZED", "Already Initialized" },
	{ 6, "NOT_FOUND", "Not Found" },
	{ 7, "INSUFFICIENT_SIZE", "Insufficient Size" },
	{ 8, "INSUFFICIENT_POWER", "Insufficient External Power" },
	{ 9, "DRIVER_NOT_LOADED", "Driver Not Loaded" },
	{ 10, "TIMEOUT", "Timeout" },
	{ 11, "IRQ_ISSUE", "Interrupt request issue" },
	{ 12, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found" },
	{ 13, "FUNCTION_NOT_FOUND", "Function Not Found" },
	{ 14, "CORRUPTED_INFOROM", "Corrupted infoROM" },
	{ 15, "GPU_IS_LOST", "GPU is lost" },
	{ 16, "RESET_REQUIRED", "GPU requires restart" },
	{ 17, "OPERATING_SYSTEM",
	  "The operating system has blocked the request." },
	{ 18, "LIB_RM_VERSION_MISMATCH",
	  "RM has detected an NVML/RM version mismatch." },
	{ 19, "IN_USE", "In use by another client" },
	{ 20, "MEMORY", "Insufficient Memory" },
	{ 21, "NO_DATA", "No data" },
	{ 999, "UNKNOWN", "Unknown Error" },
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

static const struct {
	const char *name;
	unsigned long long bit;
} event_types[] = {
	{ "sbe", GW_NVML_EVENT_SINGLE_BIT_ECC },
	{ "dbe", GW_NVML_EVENT_DOUBLE_BIT_ECC },
	{ "pstate", GW_NVML_EVENT_PSTATE },
	{ "xid", GW_NVML_EVENT_XID_CRITICAL },
	{ "clock", GW_NVML_EVENT_CLOCK },
};
#define NEVENT_TYPES (sizeof(event_types) / sizeof(event_types[0]))

/* ---- script keys ----------------------------------------------------- */

enum ktype {
	T_DIRECTIVE, /* only error:/hang: mean anything */
	T_NUM,	     /* unsigned integer (0x.. for hex), at most max */
	T_DOUBLE,    /* non-negative real, at most max */
	T_STR,	     /* rest of the line, at most max bytes */
	T_PROCS,     /* PID:BYTES,... */
	T_PUTIL,     /* PID:SM:MEM[:ENC:DEC],... */
	T_LINKS,     /* N,N,... link numbers, kept as a bitmask */
};

struct keydef {
	const char *name;
	enum ktype type;
	uint64_t max;
	const char *def; /* built-in default; NULL: none or derived */
};

enum gkey {
	G_INIT,
	G_GPUS,
	G_DRIVER_VERSION,
	G_EVENT_WAIT,
	G_CALLS_LOG,
	G_COUNT
};

static const struct keydef global_keys[G_COUNT] = {
	[G_INIT] = { "init", T_DIRECTIVE, 0, NULL },
	[G_GPUS] = { "gpus", T_NUM, FAKE_MAX_GPUS, "1" },
	[G_DRIVER_VERSION] = { "driver_version", T_STR,
			       GW_NVML_DRIVER_VERSION_BUFFER_SIZE - 1,
			       "550.54.15" },
	[G_EVENT_WAIT] = { "event_wait", T_DIRECTIVE, 0, NULL },
	[G_CALLS_LOG] = { "calls_log", T_STR, PATH_MAX - 1, NULL },
};

enum dkey {
	K_ALL,
	K_HANDLE,
	K_NAME,
	K_UUID,
	K_PCI_BUS_ID,
	K_TEMPERATURE,
	K_MEMORY_TEMPERATURE,
	K_POWER_MW,
	K_POWER_LIMIT_MW,
	K_ENERGY_MJ,
	K_UTIL_GPU,
	K_UTIL_MEMORY,
	K_MEMORY_TOTAL,
	K_MEMORY_USED,
	K_CLOCK_GRAPHICS, /* the four clocks in GW_NVML_CLOCK_* order */
	K_CLOCK_SM,
	K_CLOCK_MEM,
	K_CLOCK_VIDEO,
	K_MAX_CLOCK_GRAPHICS,
	K_MAX_CLOCK_SM,
	K_MAX_CLOCK_MEM,
	K_MAX_CLOCK_VIDEO,
	K_CLOCKS_EVENT_REASONS,
	K_FAN_SPEED,
	K_PSTATE,
	K_ECC_CORRECTED,
	K_ECC_UNCORRECTED,
	K_REMAPPED_CORRECTABLE,
	K_REMAPPED_UNCORRECTABLE,
	K_REMAPPED_PENDING,
	K_REMAPPED_FAILURE,
	K_PCIE_GEN,
	K_PCIE_GEN_MAX,
	K_PCIE_WIDTH,
	K_PCIE_WIDTH_MAX,
	K_PCIE_REPLAY,
	K_PCIE_TX_KBS,
	K_PCIE_RX_KBS,
	K_NVLINK_LINKS,
	K_NVLINK_DOWN,
	K_NVLINK_ERRORS,
	K_NVLINK_TX_KIB,
	K_NVLINK_RX_KIB,
	K_PROCESSES,
	K_PROCESS_UTIL,
	K_GPM,
	K_GPM_SM_OCCUPANCY,
	K_GPM_TENSOR,
	K_GPM_DRAM_BW,
	K_GPM_SM_UTIL,
	K_SUPPORTED_EVENTS,
	K_COUNT
};

#define U32 UINT32_MAX
#define U64 UINT64_MAX

static const struct keydef gpu_keys[K_COUNT] = {
	[K_ALL] = { "all", T_DIRECTIVE, 0, NULL },
	[K_HANDLE] = { "handle", T_DIRECTIVE, 0, NULL },
	[K_NAME] = { "name", T_STR, GW_NVML_DEVICE_NAME_BUFFER_SIZE - 1,
		     "NVIDIA H100 80GB HBM3" },
	[K_UUID] = { "uuid", T_STR, GW_NVML_DEVICE_UUID_BUFFER_SIZE - 1, NULL },
	[K_PCI_BUS_ID] = { "pci_bus_id", T_STR,
			   GW_NVML_PCI_BUS_ID_BUFFER_SIZE - 1, NULL },
	[K_TEMPERATURE] = { "temperature", T_NUM, U32, "45" },
	[K_MEMORY_TEMPERATURE] = { "memory_temperature", T_NUM, U32, "50" },
	[K_POWER_MW] = { "power_mw", T_NUM, U32, "250000" },
	[K_POWER_LIMIT_MW] = { "power_limit_mw", T_NUM, U32, "700000" },
	[K_ENERGY_MJ] = { "energy_mj", T_NUM, U64, "1000000000" },
	[K_UTIL_GPU] = { "util_gpu", T_NUM, U32, "50" },
	[K_UTIL_MEMORY] = { "util_memory", T_NUM, U32, "30" },
	[K_MEMORY_TOTAL] = { "memory_total", T_NUM, U64, "85899345920" },
	[K_MEMORY_USED] = { "memory_used", T_NUM, U64, "10737418240" },
	[K_CLOCK_GRAPHICS] = { "clock_graphics", T_NUM, U32, "1755" },
	[K_CLOCK_SM] = { "clock_sm", T_NUM, U32, "1755" },
	[K_CLOCK_MEM] = { "clock_mem", T_NUM, U32, "2619" },
	[K_CLOCK_VIDEO] = { "clock_video", T_NUM, U32, "1500" },
	[K_MAX_CLOCK_GRAPHICS] = { "max_clock_graphics", T_NUM, U32, "1980" },
	[K_MAX_CLOCK_SM] = { "max_clock_sm", T_NUM, U32, "1980" },
	[K_MAX_CLOCK_MEM] = { "max_clock_mem", T_NUM, U32, "2619" },
	[K_MAX_CLOCK_VIDEO] = { "max_clock_video", T_NUM, U32, "1755" },
	[K_CLOCKS_EVENT_REASONS] = { "clocks_event_reasons", T_NUM, U64, "0" },
	[K_FAN_SPEED] = { "fan_speed", T_NUM, U32, "error:NOT_SUPPORTED" },
	[K_PSTATE] = { "pstate", T_NUM, 32, "0" },
	[K_ECC_CORRECTED] = { "ecc_corrected", T_NUM, U64, "0" },
	[K_ECC_UNCORRECTED] = { "ecc_uncorrected", T_NUM, U64, "0" },
	[K_REMAPPED_CORRECTABLE] = { "remapped_correctable", T_NUM, U32, "0" },
	[K_REMAPPED_UNCORRECTABLE] = { "remapped_uncorrectable", T_NUM, U32,
				       "0" },
	[K_REMAPPED_PENDING] = { "remapped_pending", T_NUM, U32, "0" },
	[K_REMAPPED_FAILURE] = { "remapped_failure", T_NUM, U32, "0" },
	[K_PCIE_GEN] = { "pcie_gen", T_NUM, U32, "5" },
	[K_PCIE_GEN_MAX] = { "pcie_gen_max", T_NUM, U32, "5" },
	[K_PCIE_WIDTH] = { "pcie_width", T_NUM, U32, "16" },
	[K_PCIE_WIDTH_MAX] = { "pcie_width_max", T_NUM, U32, "16" },
	[K_PCIE_REPLAY] = { "pcie_replay", T_NUM, U32, "0" },
	[K_PCIE_TX_KBS] = { "pcie_tx_kbs", T_NUM, U32, "1000" },
	[K_PCIE_RX_KBS] = { "pcie_rx_kbs", T_NUM, U32, "2000" },
	[K_NVLINK_LINKS] = { "nvlink_links", T_NUM, GW_NVML_NVLINK_MAX_LINKS,
			     "18" },
	[K_NVLINK_DOWN] = { "nvlink_down", T_LINKS, 0, "" },
	[K_NVLINK_ERRORS] = { "nvlink_errors", T_NUM, U64, "0" },
	[K_NVLINK_TX_KIB] = { "nvlink_tx_kib", T_NUM, U64, "0" },
	[K_NVLINK_RX_KIB] = { "nvlink_rx_kib", T_NUM, U64, "0" },
	[K_PROCESSES] = { "processes", T_PROCS, 0, "" },
	[K_PROCESS_UTIL] = { "process_util", T_PUTIL, 0, "" },
	[K_GPM] = { "gpm", T_NUM, 1, "1" },
	[K_GPM_SM_OCCUPANCY] = { "gpm_sm_occupancy", T_DOUBLE, 100, "40.0" },
	[K_GPM_TENSOR] = { "gpm_tensor", T_DOUBLE, 100, "30.0" },
	[K_GPM_DRAM_BW] = { "gpm_dram_bw", T_DOUBLE, 100, "50.0" },
	[K_GPM_SM_UTIL] = { "gpm_sm_util", T_DOUBLE, 100, "60.0" },
	[K_SUPPORTED_EVENTS] = { "supported_events", T_NUM, U64, "0x1f" },
};

#undef U32
#undef U64

enum vkind { V_UNSET, V_NUM, V_STR, V_ERR, V_HANG };

struct val {
	enum vkind kind;
	int err;    /* V_ERR: the code to return */
	uint64_t u; /* V_NUM */
	double d;   /* V_NUM as a double; V_HANG: seconds */
	char *str;  /* V_STR, owned (T_STR, T_PROCS, T_PUTIL) */
};

struct event {
	uint64_t seq;
	unsigned int gpu;
	unsigned long long type;
	unsigned long long data;
	unsigned int line;
};

struct script {
	struct val global[G_COUNT];
	struct val gpu[FAKE_MAX_GPUS + 1][K_COUNT]; /* [FAKE_STAR]: gpu.* */
	struct event *events;			    /* sorted by seq */
	size_t nevents;
	int missing; /* named but unreadable: nvmlInit fails */
};

/* Device handles. */
struct fake_dev {
	unsigned int index;
};

struct fake_event_set {
	unsigned int magic;
	unsigned long long registered[FAKE_MAX_GPUS]; /* event bits per GPU */
	uint64_t last_seq; /* of the last event delivered */
};

#ifndef FAKE_NVML_OLD_DRIVER
struct fake_gpm_sample {
	unsigned int magic;
	int idx; /* GPU the sample was taken on, -1 before nvmlGpmSampleGet */
	long long ts_us;
};
#endif

/* One entry point's progress, between begin() and end(). */
struct call {
	long long idx; /* device index; -1: no device, -2: bad handle */
	int err;       /* first failure, GW_NVML_SUCCESS when none */
	double hang_s; /* to sleep before answering */
};

enum { F_INIT = 1, F_DEV = 2 };

static struct fake_dev devs[FAKE_MAX_GPUS] = {
	{ 0 }, { 1 }, { 2 },  { 3 },  { 4 },  { 5 },  { 6 },  { 7 },
	{ 8 }, { 9 }, { 10 }, { 11 }, { 12 }, { 13 }, { 14 }, { 15 },
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Everything below is guarded by lock. */
static struct script *cur;
static struct script spare; /* cur when memory for an empty one is short */
static struct val global_defaults[G_COUNT];
static struct val gpu_defaults[K_COUNT];
static int defaults_ready;
static long long last_check_ns;
static int from_file;
static struct {
	int valid;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
} sig;
static unsigned int init_count;

/* ---- time ------------------------------------------------------------ */

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#ifndef FAKE_NVML_OLD_DRIVER
/* Microseconds since 1970, NVML's timestamp unit. */
static long long real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}
#endif

static void sleep_ns(long long ns)
{
	struct timespec ts;

	if (ns <= 0)
		return;
	ts.tv_sec = (time_t)(ns / 1000000000LL);
	ts.tv_nsec = (long)(ns % 1000000000LL);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* ---- parsing --------------------------------------------------------- */

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* A decimal number at *p (no sign, no spaces); advances *p past it. */
static int scan_u64(const char **p, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (**p < '0' || **p > '9')
		return -1;
	errno = 0;
	v = strtoull(*p, &end, 10);
	if (errno || v > max)
		return -1;
	*p = end;
	*out = v;
	return 0;
}

/* A whole string: decimal, or hexadecimal after 0x. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	int base = 10;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (!isxdigit((unsigned char)s[2]))
			return -1;
		base = 16;
	} else if (s[0] < '0' || s[0] > '9') {
		return -1;
	}
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double max, double *out)
{
	char *end;
	double v;

	if ((s[0] < '0' || s[0] > '9') && s[0] != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* After a list item: the end of the string, or a comma and another item. */
static int list_next(const char **p)
{
	skip_ws(p);
	if (!**p)
		return 0;
	if (**p != ',')
		return -1;
	(*p)++;
	skip_ws(p);
	return **p ? 0 : -1;
}

/* "PID:BYTES,..." (BYTES may be "na"); out NULL only checks the syntax.
 * Returns the number of entries or -1. */
static int parse_procs(const char *s, struct gw_nvml_process_info *out)
{
	const char *p = s;
	int n = 0;

	skip_ws(&p);
	while (*p) {
		uint64_t pid, bytes;

		if (n >= FAKE_MAX_PROCS || scan_u64(&p, UINT32_MAX, &pid) ||
		    *p != ':')
			return -1;
		p++;
		if (p[0] == 'n' && p[1] == 'a') {
			bytes = ULLONG_MAX; /* NVML_VALUE_NOT_AVAILABLE */
			p += 2;
		} else if (scan_u64(&p, UINT64_MAX, &bytes)) {
			return -1;
		}
		if (out) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].pid = (unsigned int)pid;
			out[n].used_gpu_memory = bytes;
			out[n].gpu_instance_id = FAKE_NO_INSTANCE;
			out[n].compute_instance_id = FAKE_NO_INSTANCE;
		}
		n++;
		if (list_next(&p))
			return -1;
	}
	return n;
}

/* "PID:SM:MEM[:ENC:DEC],..."; out NULL only checks the syntax. */
static int parse_putil(const char *s, struct gw_nvml_process_util *out,
		       unsigned long long ts)
{
	const char *p = s;
	int n = 0;

	skip_ws(&p);
	while (*p) {
		uint64_t v[5] = { 0 };
		int i;

		if (n >= FAKE_MAX_PROCS || scan_u64(&p, UINT32_MAX, &v[0]))
			return -1;
		for (i = 1; i < 5 && *p == ':'; i++) {
			p++;
			if (scan_u64(&p, 100, &v[i]))
				return -1;
		}
		if (i != 3 && i != 5)
			return -1;
		if (out) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].pid = (unsigned int)v[0];
			out[n].timestamp = ts;
			out[n].sm_util = (unsigned int)v[1];
			out[n].mem_util = (unsigned int)v[2];
			out[n].enc_util = (unsigned int)v[3];
			out[n].dec_util = (unsigned int)v[4];
		}
		n++;
		if (list_next(&p))
			return -1;
	}
	return n;
}

/* "N,N,..." NVLink numbers into a bitmask. */
static int parse_links(const char *s, uint64_t *mask)
{
	const char *p = s;

	*mask = 0;
	skip_ws(&p);
	while (*p) {
		uint64_t link;

		if (scan_u64(&p, GW_NVML_NVLINK_MAX_LINKS - 1, &link))
			return -1;
		*mask |= 1ULL << link;
		if (list_next(&p))
			return -1;
	}
	return 0;
}

/* error:NAME or hang:SECONDS.  1: parsed, 0: not a directive, -1: bad. */
static int parse_directive(const char *s, struct val *v)
{
	uint64_t u;
	size_t i;

	if (strncmp(s, "error:", 6) == 0) {
		s += 6;
		v->kind = V_ERR;
		for (i = 0; i < NCODES; i++) {
			if (strcasecmp(s, codes[i].name) == 0) {
				v->err = codes[i].code;
				return 1;
			}
		}
		if (s[0] == '0' && s[1] == 'x')
			return -1; /* decimal only */
		if (parse_u64(s, INT_MAX, &u))
			return -1;
		v->err = (int)u;
		return 1;
	}
	if (strncmp(s, "hang:", 5) == 0) {
		v->kind = V_HANG;
		return parse_double(s + 5, FAKE_MAX_HANG_S, &v->d) ? -1 : 1;
	}
	return 0;
}

static void val_release(struct val *v)
{
	free(v->str);
	memset(v, 0, sizeof(*v));
}

static int parse_value(const struct keydef *kd, const char *s, struct val *v)
{
	uint64_t u;
	int r;

	memset(v, 0, sizeof(*v));
	r = parse_directive(s, v);
	if (r)
		return r < 0 ? -1 : 0;
	switch (kd->type) {
	case T_DIRECTIVE:
		return -1;
	case T_NUM:
		if (parse_u64(s, kd->max, &u))
			return -1;
		v->u = u;
		v->d = (double)u;
		break;
	case T_DOUBLE:
		if (parse_double(s, (double)kd->max, &v->d))
			return -1;
		v->u = (uint64_t)v->d;
		break;
	case T_LINKS:
		if (parse_links(s, &v->u))
			return -1;
		break;
	case T_STR:
		if (strlen(s) > kd->max)
			return -1;
		goto str;
	case T_PROCS:
		if (parse_procs(s, NULL) < 0)
			return -1;
		goto str;
	case T_PUTIL:
		if (parse_putil(s, NULL, 0) < 0)
			return -1;
	str:
		v->str = strdup(s);
		if (!v->str)
			return -1;
		v->kind = V_STR;
		return 0;
	}
	v->kind = V_NUM;
	return 0;
}

/* Parses value into *slot, replacing what an earlier line set. */
static int set_key(struct val *slot, const struct keydef *kd, const char *value)
{
	struct val v;

	if (parse_value(kd, value, &v))
		return -1;
	val_release(slot);
	*slot = v;
	return 0;
}

/* "I.KEY" or "*.KEY" after "gpu." */
static int parse_gpu_line(struct script *s, const char *rest, const char *value)
{
	const char *dot = strchr(rest, '.');
	const char *p = rest;
	uint64_t idx;
	int k;

	if (!dot)
		return -1;
	if (rest[0] == '*' && dot == rest + 1) {
		idx = FAKE_STAR;
	} else if (scan_u64(&p, FAKE_MAX_GPUS - 1, &idx) || p != dot) {
		return -1;
	}
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(dot + 1, gpu_keys[k].name) == 0)
			return set_key(&s->gpu[idx][k], &gpu_keys[k], value);
	return -1;
}

/* "event.SEQ GPU TYPE [DATA]" */
static int parse_event(struct script *s, const char *seqs, const char *value,
		       unsigned int line)
{
	uint64_t seq, gpu, type = 0, data = 0;
	const char *p = value;
	struct event *e;
	char word[32];
	size_t len, i;

	if (parse_u64(seqs, UINT64_MAX, &seq) || seq == 0)
		return -1;
	if (scan_u64(&p, FAKE_MAX_GPUS - 1, &gpu) || (*p != ' ' && *p != '\t'))
		return -1;
	skip_ws(&p);
	len = strcspn(p, " \t");
	if (len == 0 || len >= sizeof(word))
		return -1;
	memcpy(word, p, len);
	word[len] = '\0';
	p += len;
	for (i = 0; i < NEVENT_TYPES; i++)
		if (strcmp(word, event_types[i].name) == 0)
			type = event_types[i].bit;
	if (!type && (parse_u64(word, UINT64_MAX, &type) || !type))
		return -1;
	skip_ws(&p);
	if (*p && scan_u64(&p, UINT64_MAX, &data))
		return -1;
	skip_ws(&p);
	if (*p || s->nevents >= FAKE_MAX_EVENTS)
		return -1;
	e = realloc(s->events, (s->nevents + 1) * sizeof(*e));
	if (!e)
		return -1;
	s->events = e;
	e = &s->events[s->nevents++];
	e->seq = seq;
	e->gpu = (unsigned int)gpu;
	e->type = type;
	e->data = data;
	e->line = line;
	return 0;
}

/* Cuts a comment (a '#' at the start or after a blank) and trailing
 * blanks. */
static void trim_line(char *line)
{
	size_t i, n;

	for (i = 0; line[i]; i++) {
		if (line[i] == '#' &&
		    (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
			line[i] = '\0';
			break;
		}
	}
	n = strlen(line);
	while (n && isspace((unsigned char)line[n - 1]))
		line[--n] = '\0';
}

static int parse_line(struct script *s, char *line, unsigned int lineno)
{
	char *key, *value, *p;
	int g;

	trim_line(line);
	key = line + strspn(line, " \t");
	if (!*key)
		return 0;
	p = key + strcspn(key, " \t");
	value = p + strspn(p, " \t");
	*p = '\0';
	if (strncmp(key, "gpu.", 4) == 0)
		return parse_gpu_line(s, key + 4, value);
	if (strncmp(key, "event.", 6) == 0)
		return parse_event(s, key + 6, value, lineno);
	for (g = 0; g < G_COUNT; g++)
		if (strcmp(key, global_keys[g].name) == 0)
			return set_key(&s->global[g], &global_keys[g], value);
	return -1;
}

static int event_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static void script_free(struct script *s)
{
	int i, k;

	if (!s || s == &spare)
		return;
	for (i = 0; i < G_COUNT; i++)
		val_release(&s->global[i]);
	for (i = 0; i <= FAKE_MAX_GPUS; i++)
		for (k = 0; k < K_COUNT; k++)
			val_release(&s->gpu[i][k]);
	free(s->events);
	free(s);
}

/* Reads and parses the script; NULL when it cannot be opened or memory
 * runs out.  Bad lines are reported on stderr and skipped. */
static struct script *script_load(const char *path)
{
	struct script *s;
	unsigned int lineno = 0;
	char *line = NULL;
	char shown[160];
	size_t cap = 0, i, j;
	ssize_t len;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto out;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		snprintf(shown, sizeof(shown), "%s", line);
		if (len > FAKE_MAX_LINE || parse_line(s, line, lineno))
			fprintf(stderr, "fake-nvml: %s:%u: cannot parse: %s\n",
				path, lineno, shown);
	}
	if (s->nevents)
		qsort(s->events, s->nevents, sizeof(*s->events), event_cmp);
	for (i = j = 0; i < s->nevents; i++) {
		if (j && s->events[j - 1].seq == s->events[i].seq) {
			fprintf(stderr,
				"fake-nvml: %s:%u: cannot parse: event.%llu "
				"is a duplicate\n",
				path, s->events[i].line,
				(unsigned long long)s->events[i].seq);
			continue;
		}
		s->events[j++] = s->events[i];
	}
	s->nevents = j;
out:
	free(line);
	fclose(f);
	return s;
}

/* ---- state ------------------------------------------------------------ */

static void defaults_init(void)
{
	int i;

	for (i = 0; i < G_COUNT; i++)
		if (global_keys[i].def)
			parse_value(&global_keys[i], global_keys[i].def,
				    &global_defaults[i]);
	for (i = 0; i < K_COUNT; i++)
		if (gpu_keys[i].def)
			parse_value(&gpu_keys[i], gpu_keys[i].def,
				    &gpu_defaults[i]);
	defaults_ready = 1;
}

static void replace(struct script *s)
{
	script_free(cur);
	cur = s;
}

/* All defaults; missing: as if the script named could not be read. */
static void use_empty(int missing)
{
	struct script *s = calloc(1, sizeof(*s));

	replace(s ? s : &spare);
	cur->missing = missing;
}

/* dlclose: release what the statics point to, so a leak checker in the
 * process that loaded us stays quiet. */
__attribute__((destructor)) static void fake_fini(void)
{
	int i;

	pthread_mutex_lock(&lock);
	replace(NULL);
	for (i = 0; i < G_COUNT; i++)
		val_release(&global_defaults[i]);
	for (i = 0; i < K_COUNT; i++)
		val_release(&gpu_defaults[i]);
	defaults_ready = 0;
	sig.valid = 0;
	pthread_mutex_unlock(&lock);
}

/* Makes cur the script in force; called with lock held. */
static void reload(void)
{
	long long now = mono_ns();
	struct script *s;
	const char *path;
	struct stat st;

	if (!defaults_ready)
		defaults_init();
	if (cur && now - last_check_ns < FAKE_RELOAD_NS)
		return;
	last_check_ns = now;
	path = getenv("GW_FAKE_NVML_SCRIPT");
	if (!path || !*path) {
		if (!cur || from_file) {
			use_empty(0);
			from_file = 0;
			sig.valid = 0;
		}
		return;
	}
	if (stat(path, &st)) {
		if (!cur) {
			fprintf(stderr, "fake-nvml: %s: %s\n", path,
				strerror(errno));
			use_empty(1);
		}
		sig.valid = 0;
		return;
	}
	if (cur && sig.valid && sig.dev == st.st_dev && sig.ino == st.st_ino &&
	    sig.size == st.st_size && sig.mtime.tv_sec == st.st_mtim.tv_sec &&
	    sig.mtime.tv_nsec == st.st_mtim.tv_nsec)
		return;
	s = script_load(path);
	if (!s) {
		if (!cur) {
			fprintf(stderr, "fake-nvml: %s: %s\n", path,
				strerror(errno));
			use_empty(1);
		}
		return;
	}
	replace(s);
	from_file = 1;
	sig.valid = 1;
	sig.dev = st.st_dev;
	sig.ino = st.st_ino;
	sig.size = st.st_size;
	sig.mtime = st.st_mtim;
}

static const struct val *global_val(int g)
{
	const struct val *v = &cur->global[g];

	return v->kind != V_UNSET ? v : &global_defaults[g];
}

static unsigned int ngpus(void)
{
	const struct val *v = global_val(G_GPUS);

	if (v->kind != V_NUM)
		v = &global_defaults[G_GPUS];
	return (unsigned int)v->u;
}

/* Appends "SYMBOL INDEX" to calls_log; opened per call so that a test may
 * truncate or remove the file at any time. */
static void log_call(const char *sym, long long idx)
{
	const struct val *v = global_val(G_CALLS_LOG);
	char line[128];
	ssize_t w;
	int fd, n;

	if (v->kind != V_STR || !v->str[0])
		return;
	if (idx >= 0)
		n = snprintf(line, sizeof(line), "%s %lld\n", sym, idx);
	else
		n = snprintf(line, sizeof(line), "%s %s\n", sym,
			     idx == -1 ? "-" : "?");
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	fd = open(v->str, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	w = write(fd, line, (size_t)n);
	(void)w;
	close(fd);
}

static long long dev_index(gw_nvml_device_t h)
{
	int i;

	for (i = 0; i < FAKE_MAX_GPUS; i++)
		if (h == (gw_nvml_device_t)&devs[i])
			return i;
	return -2;
}

static void fail(struct call *c, int r)
{
	if (r != GW_NVML_SUCCESS && c->err == GW_NVML_SUCCESS)
		c->err = r;
}

/* What a value answers with: a hang adds its seconds to the call and falls
 * back to the built-in default; *ret gets the value's own result. */
static const struct val *settle(struct call *c, const struct val *v,
				const struct val *def, int *ret)
{
	if (v->kind == V_HANG) {
		c->hang_s += v->d;
		v = def;
	}
	*ret = v->kind == V_ERR ? v->err : GW_NVML_SUCCESS;
	return v;
}

/* Key k of the call's GPU: gpu.I, else gpu.*, else the default. */
static const struct val *key(struct call *c, int k, int *ret)
{
	const struct val *v = &cur->gpu[c->idx][k];

	if (v->kind == V_UNSET)
		v = &cur->gpu[FAKE_STAR][k];
	if (v->kind == V_UNSET)
		v = &gpu_defaults[k];
	return settle(c, v, &gpu_defaults[k], ret);
}

/* A numeric key; its error (if any) becomes the call's. */
static uint64_t num(struct call *c, int k)
{
	const struct val *v;
	int r;

	v = key(c, k, &r);
	fail(c, r);
	return v->kind == V_NUM ? v->u : 0;
}

/* A list key's text ("" when none); valid until the lock is dropped. */
static const char *list(struct call *c, int k)
{
	const struct val *v;
	int r;

	v = key(c, k, &r);
	fail(c, r);
	return v->kind == V_STR ? v->str : "";
}

static void str(struct call *c, int k, char *buf, size_t len)
{
	const struct val *v;
	int r;

	v = key(c, k, &r);
	fail(c, r);
	buf[0] = '\0';
	if (v->kind == V_STR)
		snprintf(buf, len, "%s", v->str);
	else if (v->kind == V_UNSET && k == K_UUID)
		snprintf(buf, len, "GPU-00000000-0000-0000-0000-%012llx",
			 (unsigned long long)c->idx);
	else if (v->kind == V_UNSET && k == K_PCI_BUS_ID)
		snprintf(buf, len, "%08x:%02llx:00.0", 0u,
			 (unsigned long long)(FAKE_PCI_BUS_BASE + c->idx));
}

/* Takes the lock, refreshes the script and logs the call. */
static void enter(struct call *c, const char *sym, long long log_idx)
{
	pthread_mutex_lock(&lock);
	reload();
	c->idx = -1;
	c->err = GW_NVML_SUCCESS;
	c->hang_s = 0;
	log_call(sym, log_idx);
}

/*
 * Starts an entry point: F_INIT fails it before nvmlInit, F_DEV checks the
 * handle and applies gpu.I.all.  Returns the call's result so far; end()
 * must follow either way.
 */
static int begin(struct call *c, const char *sym, unsigned int flags,
		 gw_nvml_device_t dev)
{
	long long idx = (flags & F_DEV) ? dev_index(dev) : -1;
	int r;

	enter(c, sym, idx);
	if ((flags & F_INIT) && !init_count) {
		c->err = GW_NVML_ERROR_UNINITIALIZED;
	} else if (flags & F_DEV) {
		if (idx < 0) {
			c->err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else if (idx >= ngpus()) {
			c->err = GW_NVML_ERROR_GPU_IS_LOST;
		} else {
			c->idx = idx;
			key(c, K_ALL, &r);
			fail(c, r);
		}
	}
	return c->err;
}

/* Drops the lock, sleeps for any hang, and returns the call's result. */
static int end(struct call *c)
{
	pthread_mutex_unlock(&lock);
	if (c->hang_s > 0)
		sleep_ns((long long)(c->hang_s * 1e9));
	return c->err;
}

/* One unsigned int from key k; k < 0 means a bad argument. */
static int get_uint(const char *sym, gw_nvml_device_t dev, int k,
		    unsigned int *out)
{
	struct call c;
	uint64_t v = 0;

	if (!begin(&c, sym, F_INIT | F_DEV, dev)) {
		if (k < 0 || !out)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			v = num(&c, k);
	}
	if (end(&c))
		return c.err;
	*out = (unsigned int)v;
	return GW_NVML_SUCCESS;
}

static int get_ull(const char *sym, gw_nvml_device_t dev, int k,
		   unsigned long long *out)
{
	struct call c;
	uint64_t v = 0;

	if (!begin(&c, sym, F_INIT | F_DEV, dev)) {
		if (k < 0 || !out)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			v = num(&c, k);
	}
	if (end(&c))
		return c.err;
	*out = v;
	return GW_NVML_SUCCESS;
}

static int put_str(char *dst, unsigned int len, const char *src)
{
	size_t n = strlen(src);

	if (n + 1 > len)
		return GW_NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, n + 1);
	return GW_NVML_SUCCESS;
}

static int get_str(const char *sym, gw_nvml_device_t dev, int k, char *out,
		   unsigned int len)
{
	char buf[GW_NVML_DEVICE_NAME_BUFFER_SIZE];
	struct call c;

	if (!begin(&c, sym, F_INIT | F_DEV, dev)) {
		if (!out)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			str(&c, k, buf, sizeof(buf));
	}
	if (end(&c))
		return c.err;
	return put_str(out, len, buf);
}

/* ---- system ------------------------------------------------------------ */

static int do_init(const char *sym)
{
	struct call c;
	int r;

	enter(&c, sym, -1);
	if (cur->missing) {
		c.err = GW_NVML_ERROR_DRIVER_NOT_LOADED;
	} else {
		settle(&c, global_val(G_INIT), &global_defaults[G_INIT], &r);
		fail(&c, r);
	}
	if (!c.err)
		init_count++;
	return end(&c);
}

FAKE_API int nvmlShutdown(void)
{
	struct call c;

	if (!begin(&c, __func__, F_INIT, NULL))
		init_count--;
	return end(&c);
}

FAKE_API const char *nvmlErrorString(int result)
{
	struct call c;
	size_t i;

	enter(&c, __func__, -1);
	end(&c);
	for (i = 0; i < NCODES; i++)
		if (codes[i].code == result)
			return codes[i].msg;
	return "Unknown Error";
}

FAKE_API int nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	char buf[GW_NVML_DRIVER_VERSION_BUFFER_SIZE] = "";
	const struct val *v;
	struct call c;
	int r;

	if (!begin(&c, __func__, F_INIT, NULL)) {
		if (!version) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			v = settle(&c, global_val(G_DRIVER_VERSION),
				   &global_defaults[G_DRIVER_VERSION], &r);
			fail(&c, r);
			if (v->kind == V_STR)
				snprintf(buf, sizeof(buf), "%s", v->str);
		}
	}
	if (end(&c))
		return c.err;
	return put_str(version, length, buf);
}

static int do_get_count(const char *sym, unsigned int *count)
{
	unsigned int n = 0;
	struct call c;
	int r;

	if (!begin(&c, sym, F_INIT, NULL)) {
		if (!count) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			settle(&c, global_val(G_GPUS), &global_defaults[G_GPUS],
			       &r);
			fail(&c, r);
			n = ngpus();
		}
	}
	if (end(&c))
		return c.err;
	*count = n;
	return GW_NVML_SUCCESS;
}

static int do_get_handle(const char *sym, unsigned int index,
			 gw_nvml_device_t *device)
{
	struct call c;
	int r;

	enter(&c, sym, index);
	if (!init_count) {
		c.err = GW_NVML_ERROR_UNINITIALIZED;
	} else if (!device || index >= ngpus()) {
		c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
	} else {
		c.idx = index;
		key(&c, K_HANDLE, &r);
		fail(&c, r);
	}
	if (end(&c))
		return c.err;
	*device = &devs[index];
	return GW_NVML_SUCCESS;
}

/* ---- identity ---------------------------------------------------------- */

/* "DOMAIN:BUS:DEVICE.FUNCTION" in hex; zeros when it is something else. */
static void parse_bus_id(const char *s, unsigned int out[3])
{
	static const char seps[3] = { ':', ':', '.' };
	unsigned long v[3];
	const char *p = s;
	char *end;
	int i;

	out[0] = out[1] = out[2] = 0;
	for (i = 0; i < 3; i++) {
		if (!isxdigit((unsigned char)*p))
			return;
		errno = 0;
		v[i] = strtoul(p, &end, 16);
		if (errno || *end != seps[i] || v[i] > UINT_MAX)
			return;
		p = end + 1;
	}
	for (i = 0; i < 3; i++)
		out[i] = (unsigned int)v[i];
}

static int do_pci_info(const char *sym, gw_nvml_device_t dev,
		       struct gw_nvml_pci_info *pci)
{
	char id[GW_NVML_PCI_BUS_ID_BUFFER_SIZE];
	unsigned int f[3];
	struct call c;

	if (!begin(&c, sym, F_INIT | F_DEV, dev)) {
		if (!pci)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			str(&c, K_PCI_BUS_ID, id, sizeof(id));
	}
	if (end(&c))
		return c.err;
	parse_bus_id(id, f);
	memset(pci, 0, sizeof(*pci));
	memcpy(pci->bus_id, id, sizeof(pci->bus_id));
	snprintf(pci->bus_id_legacy, sizeof(pci->bus_id_legacy),
		 "%04x:%02x:%02x.0", f[0] & 0xffffu, f[1] & 0xffu,
		 f[2] & 0x1fu);
	pci->domain = f[0];
	pci->bus = f[1];
	pci->device = f[2];
	pci->pci_device_id = FAKE_PCI_DEVICE_ID;
	pci->pci_subsystem_id = FAKE_PCI_SUBSYS_ID;
	return GW_NVML_SUCCESS;
}

FAKE_API int nvmlDeviceGetName(gw_nvml_device_t device, char *name,
			       unsigned int length)
{
	return get_str(__func__, device, K_NAME, name, length);
}

FAKE_API int nvmlDeviceGetUUID(gw_nvml_device_t device, char *uuid,
			       unsigned int length)
{
	return get_str(__func__, device, K_UUID, uuid, length);
}

/* ---- readings ---------------------------------------------------------- */

FAKE_API int nvmlDeviceGetTemperature(gw_nvml_device_t device, int sensor,
				      unsigned int *temp)
{
	return get_uint(__func__, device,
			sensor == GW_NVML_TEMPERATURE_GPU ? K_TEMPERATURE : -1,
			temp);
}

FAKE_API int nvmlDeviceGetPowerUsage(gw_nvml_device_t device,
				     unsigned int *power)
{
	return get_uint(__func__, device, K_POWER_MW, power);
}

FAKE_API int nvmlDeviceGetEnforcedPowerLimit(gw_nvml_device_t device,
					     unsigned int *limit)
{
	return get_uint(__func__, device, K_POWER_LIMIT_MW, limit);
}

FAKE_API int nvmlDeviceGetUtilizationRates(gw_nvml_device_t device,
					   struct gw_nvml_utilization *util)
{
	uint64_t g = 0, m = 0;
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!util) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			g = num(&c, K_UTIL_GPU);
			m = num(&c, K_UTIL_MEMORY);
		}
	}
	if (end(&c))
		return c.err;
	util->gpu = (unsigned int)g;
	util->memory = (unsigned int)m;
	return GW_NVML_SUCCESS;
}

FAKE_API int nvmlDeviceGetMemoryInfo(gw_nvml_device_t device,
				     struct gw_nvml_memory *mem)
{
	uint64_t total = 0, used = 0;
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!mem) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			total = num(&c, K_MEMORY_TOTAL);
			used = num(&c, K_MEMORY_USED);
		}
	}
	if (end(&c))
		return c.err;
	mem->total = total;
	mem->used = used;
	mem->free = used < total ? total - used : 0;
	return GW_NVML_SUCCESS;
}

static int clock_key(int type, int first)
{
	if (type < GW_NVML_CLOCK_GRAPHICS || type > GW_NVML_CLOCK_VIDEO)
		return -1;
	return first + type;
}

FAKE_API int nvmlDeviceGetClockInfo(gw_nvml_device_t device, int type,
				    unsigned int *clock)
{
	return get_uint(__func__, device, clock_key(type, K_CLOCK_GRAPHICS),
			clock);
}

FAKE_API int nvmlDeviceGetMaxClockInfo(gw_nvml_device_t device, int type,
				       unsigned int *clock)
{
	return get_uint(__func__, device, clock_key(type, K_MAX_CLOCK_GRAPHICS),
			clock);
}

FAKE_API int
nvmlDeviceGetCurrentClocksThrottleReasons(gw_nvml_device_t device,
					  unsigned long long *reasons)
{
	return get_ull(__func__, device, K_CLOCKS_EVENT_REASONS, reasons);
}

FAKE_API int nvmlDeviceGetFanSpeed(gw_nvml_device_t device, unsigned int *speed)
{
	return get_uint(__func__, device, K_FAN_SPEED, speed);
}

FAKE_API int nvmlDeviceGetPerformanceState(gw_nvml_device_t device, int *state)
{
	unsigned int v;
	int r;

	r = get_uint(__func__, device, state ? K_PSTATE : -1, &v);
	if (r == GW_NVML_SUCCESS)
		*state = (int)v;
	return r;
}

FAKE_API int nvmlDeviceGetTotalEccErrors(gw_nvml_device_t device,
					 int error_type, int counter_type,
					 unsigned long long *count)
{
	int k = -1;

	if (counter_type == GW_NVML_VOLATILE_ECC ||
	    counter_type == GW_NVML_AGGREGATE_ECC) {
		if (error_type == GW_NVML_MEMORY_ERROR_TYPE_CORRECTED)
			k = K_ECC_CORRECTED;
		else if (error_type == GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
			k = K_ECC_UNCORRECTED;
	}
	return get_ull(__func__, device, k, count);
}

FAKE_API int nvmlDeviceGetCurrPcieLinkGeneration(gw_nvml_device_t device,
						 unsigned int *gen)
{
	return get_uint(__func__, device, K_PCIE_GEN, gen);
}

FAKE_API int nvmlDeviceGetMaxPcieLinkGeneration(gw_nvml_device_t device,
						unsigned int *gen)
{
	return get_uint(__func__, device, K_PCIE_GEN_MAX, gen);
}

FAKE_API int nvmlDeviceGetCurrPcieLinkWidth(gw_nvml_device_t device,
					    unsigned int *width)
{
	return get_uint(__func__, device, K_PCIE_WIDTH, width);
}

FAKE_API int nvmlDeviceGetMaxPcieLinkWidth(gw_nvml_device_t device,
					   unsigned int *width)
{
	return get_uint(__func__, device, K_PCIE_WIDTH_MAX, width);
}

FAKE_API int nvmlDeviceGetPcieReplayCounter(gw_nvml_device_t device,
					    unsigned int *count)
{
	return get_uint(__func__, device, K_PCIE_REPLAY, count);
}

FAKE_API int nvmlDeviceGetPcieThroughput(gw_nvml_device_t device, int counter,
					 unsigned int *value)
{
	int k = -1;

	if (counter == GW_NVML_PCIE_UTIL_TX_BYTES)
		k = K_PCIE_TX_KBS;
	else if (counter == GW_NVML_PCIE_UTIL_RX_BYTES)
		k = K_PCIE_RX_KBS;
	return get_uint(__func__, device, k, value);
}

/* ---- NVLink ------------------------------------------------------------ */

/* 0 when the link exists; otherwise fails the call. */
static int nvlink_check(struct call *c, unsigned int link)
{
	uint64_t n;

	if (link >= GW_NVML_NVLINK_MAX_LINKS) {
		fail(c, GW_NVML_ERROR_INVALID_ARGUMENT);
		return -1;
	}
	n = num(c, K_NVLINK_LINKS);
	if (c->err)
		return -1;
	if (link >= n) {
		fail(c, GW_NVML_ERROR_NOT_SUPPORTED);
		return -1;
	}
	return 0;
}

FAKE_API int nvmlDeviceGetNvLinkState(gw_nvml_device_t device,
				      unsigned int link, int *active)
{
	int state = GW_NVML_FEATURE_ENABLED;
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!active)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else if (!nvlink_check(&c, link) &&
			 (num(&c, K_NVLINK_DOWN) >> link) & 1)
			state = GW_NVML_FEATURE_DISABLED;
	}
	if (end(&c))
		return c.err;
	*active = state;
	return GW_NVML_SUCCESS;
}

FAKE_API int nvmlDeviceGetNvLinkErrorCounter(gw_nvml_device_t device,
					     unsigned int link, int counter,
					     unsigned long long *value)
{
	uint64_t v = 0;
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!value || counter < GW_NVML_NVLINK_ERROR_DL_REPLAY ||
		    counter > GW_NVML_NVLINK_ERROR_DL_CRC_DATA)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else if (!nvlink_check(&c, link))
			v = num(&c, K_NVLINK_ERRORS);
	}
	if (end(&c))
		return c.err;
	*value = v;
	return GW_NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
/*
 * One link's part of a GPU total: split evenly over the links that are up,
 * the remainder to the lowest one, 0 for a link that is down.  Returns the
 * entry's result.
 */
static int link_share(struct call *c, unsigned int link, uint64_t total,
		      uint64_t *out)
{
	const struct val *v;
	uint64_t n, down, up = 0;
	unsigned int i, first = GW_NVML_NVLINK_MAX_LINKS;
	int r;

	v = key(c, K_NVLINK_LINKS, &r);
	if (r)
		return r;
	n = v->kind == V_NUM ? v->u : 0;
	if (link >= n)
		return GW_NVML_ERROR_NOT_SUPPORTED;
	v = key(c, K_NVLINK_DOWN, &r);
	if (r)
		return r;
	down = v->kind == V_NUM ? v->u : 0;
	for (i = 0; i < n; i++) {
		if ((down >> i) & 1)
			continue;
		if (first == GW_NVML_NVLINK_MAX_LINKS)
			first = i;
		up++;
	}
	if ((down >> link) & 1) {
		*out = 0;
		return GW_NVML_SUCCESS;
	}
	*out = total / up + (link == first ? total % up : 0);
	return GW_NVML_SUCCESS;
}

static void field_value(struct call *c, struct gw_nvml_field_value *fv)
{
	const struct val *v;
	uint64_t total;
	int r;

	fv->timestamp = real_us();
	fv->latency_usec = 0;
	memset(&fv->value, 0, sizeof(fv->value));
	switch (fv->field_id) {
	case GW_NVML_FI_DEV_MEMORY_TEMP:
		v = key(c, K_MEMORY_TEMPERATURE, &r);
		fv->value_type = GW_NVML_VALUE_TYPE_UNSIGNED_INT;
		fv->value.ui = v->kind == V_NUM ? (unsigned int)v->u : 0;
		break;
	case GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
	case GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
		v = key(c,
			fv->field_id == GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX
				? K_NVLINK_TX_KIB
				: K_NVLINK_RX_KIB,
			&r);
		fv->value_type = GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
		total = v->kind == V_NUM ? v->u : 0;
		if (!r && fv->scope_id != UINT_MAX)
			r = link_share(c, fv->scope_id, total, &total);
		fv->value.ull = r ? 0 : total;
		break;
	default:
		fv->value_type = GW_NVML_VALUE_TYPE_UNSIGNED_INT;
		r = GW_NVML_ERROR_NOT_SUPPORTED;
		break;
	}
	fv->nvml_return = r;
}

FAKE_API int nvmlDeviceGetFieldValues(gw_nvml_device_t device, int count,
				      struct gw_nvml_field_value *values)
{
	struct call c;
	int i;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (count <= 0 || !values)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			for (i = 0; i < count; i++)
				field_value(&c, &values[i]);
	}
	return end(&c);
}

FAKE_API int nvmlDeviceGetTotalEnergyConsumption(gw_nvml_device_t device,
						 unsigned long long *energy)
{
	return get_ull(__func__, device, K_ENERGY_MJ, energy);
}

FAKE_API int nvmlDeviceGetCurrentClocksEventReasons(gw_nvml_device_t device,
						    unsigned long long *reasons)
{
	return get_ull(__func__, device, K_CLOCKS_EVENT_REASONS, reasons);
}

FAKE_API int nvmlDeviceGetRemappedRows(gw_nvml_device_t device,
				       unsigned int *corr, unsigned int *unc,
				       unsigned int *pending,
				       unsigned int *failure)
{
	uint64_t v[4] = { 0 };
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!corr || !unc || !pending || !failure) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			v[0] = num(&c, K_REMAPPED_CORRECTABLE);
			v[1] = num(&c, K_REMAPPED_UNCORRECTABLE);
			v[2] = num(&c, K_REMAPPED_PENDING);
			v[3] = num(&c, K_REMAPPED_FAILURE);
		}
	}
	if (end(&c))
		return c.err;
	*corr = (unsigned int)v[0];
	*unc = (unsigned int)v[1];
	*pending = (unsigned int)v[2];
	*failure = (unsigned int)v[3];
	return GW_NVML_SUCCESS;
}
#endif /* !FAKE_NVML_OLD_DRIVER */

/* ---- processes --------------------------------------------------------- */

static int do_procs(const char *sym, gw_nvml_device_t dev, unsigned int *count,
		    struct gw_nvml_process_info *infos)
{
	struct gw_nvml_process_info list_[FAKE_MAX_PROCS];
	struct call c;
	unsigned int n = 0;
	int r;

	if (!begin(&c, sym, F_INIT | F_DEV, dev)) {
		if (!count) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			r = parse_procs(list(&c, K_PROCESSES), list_);
			n = r > 0 ? (unsigned int)r : 0;
		}
	}
	if (end(&c))
		return c.err;
	if (n && (!infos || *count < n)) {
		*count = n;
		return GW_NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (n)
		memcpy(infos, list_, n * sizeof(*infos));
	*count = n;
	return GW_NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_API int
nvmlDeviceGetComputeRunningProcesses_v3(gw_nvml_device_t device,
					unsigned int *count,
					struct gw_nvml_process_info *infos)
{
	return do_procs(__func__, device, count, infos);
}

FAKE_API int nvmlDeviceGetProcessUtilization(
	gw_nvml_device_t device, struct gw_nvml_process_util *samples,
	unsigned int *count, unsigned long long last_seen)
{
	struct gw_nvml_process_util list_[FAKE_MAX_PROCS];
	long long now = real_us();
	struct call c;
	unsigned int n = 0;
	int r;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!count) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			r = parse_putil(list(&c, K_PROCESS_UTIL), list_,
					(unsigned long long)now);
			n = r > 0 && (unsigned long long)now > last_seen
				    ? (unsigned int)r
				    : 0;
		}
	}
	if (end(&c))
		return c.err;
	if (!n) {
		*count = 0;
		return GW_NVML_ERROR_NOT_FOUND;
	}
	if (!samples || *count < n) {
		*count = n;
		return GW_NVML_ERROR_INSUFFICIENT_SIZE;
	}
	memcpy(samples, list_, n * sizeof(*samples));
	*count = n;
	return GW_NVML_SUCCESS;
}
#endif

/* ---- events ------------------------------------------------------------ */

static int set_ok(const struct fake_event_set *es)
{
	return es && es->magic == FAKE_ESET_MAGIC;
}

FAKE_API int nvmlDeviceGetSupportedEventTypes(gw_nvml_device_t device,
					      unsigned long long *types)
{
	return get_ull(__func__, device, K_SUPPORTED_EVENTS, types);
}

FAKE_API int nvmlEventSetCreate(void **set)
{
	struct fake_event_set *es = NULL;
	struct call c;

	if (!begin(&c, __func__, F_INIT, NULL)) {
		if (!set)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else if (!(es = calloc(1, sizeof(*es))))
			c.err = GW_NVML_ERROR_UNKNOWN;
	}
	if (end(&c))
		return c.err;
	es->magic = FAKE_ESET_MAGIC;
	*set = es;
	return GW_NVML_SUCCESS;
}

FAKE_API int nvmlDeviceRegisterEvents(gw_nvml_device_t device,
				      unsigned long long types, void *set)
{
	struct fake_event_set *es = set;
	uint64_t supported;
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!set_ok(es)) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			supported = num(&c, K_SUPPORTED_EVENTS);
			if (!c.err && (types & ~supported))
				c.err = GW_NVML_ERROR_NOT_SUPPORTED;
			if (!c.err)
				es->registered[c.idx] |= types;
		}
	}
	return end(&c);
}

FAKE_API int nvmlEventSetFree(void *set)
{
	struct fake_event_set *es = set;
	struct call c;

	if (!begin(&c, __func__, F_INIT, NULL) && !set_ok(es))
		c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
	if (end(&c))
		return c.err;
	es->magic = 0;
	free(es);
	return GW_NVML_SUCCESS;
}

/* The first event after the set's last one that the set registered for. */
static const struct event *next_event(const struct fake_event_set *es)
{
	unsigned int n = ngpus();
	const struct event *e;
	size_t i;

	for (i = 0; i < cur->nevents; i++) {
		e = &cur->events[i];
		if (e->seq > es->last_seq && e->gpu < n &&
		    (es->registered[e->gpu] & e->type))
			return e;
	}
	return NULL;
}

/* The forced result of event_wait error:NAME, or SUCCESS. */
static int forced_wait_error(void)
{
	const struct val *v = global_val(G_EVENT_WAIT);

	return v->kind == V_ERR ? v->err : GW_NVML_SUCCESS;
}

/* v2: also fill the instance ids (nvmlEventData_t grew them in _v2). */
static int do_event_wait(const char *sym, void *set,
			 struct gw_nvml_event_data *data,
			 unsigned int timeout_ms, int v2)
{
	struct fake_event_set *es = set;
	const struct event *e;
	long long deadline, now;
	struct call c;
	int r;

	if (!begin(&c, sym, F_INIT, NULL)) {
		if (!set_ok(es) || !data) {
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		} else {
			settle(&c, global_val(G_EVENT_WAIT),
			       &global_defaults[G_EVENT_WAIT], &r);
			fail(&c, r);
		}
	}
	if (end(&c))
		return c.err;
	deadline = mono_ns() + (long long)timeout_ms * 1000000LL;
	for (;;) {
		pthread_mutex_lock(&lock);
		reload();
		r = forced_wait_error();
		e = r ? NULL : next_event(es);
		if (e) {
			es->last_seq = e->seq;
			data->device = &devs[e->gpu];
			data->event_type = e->type;
			data->event_data = e->data;
			if (v2) {
				data->gpu_instance_id = FAKE_NO_INSTANCE;
				data->compute_instance_id = FAKE_NO_INSTANCE;
			}
		}
		pthread_mutex_unlock(&lock);
		if (r || e)
			return r;
		now = mono_ns();
		if (now >= deadline)
			return GW_NVML_ERROR_TIMEOUT;
		sleep_ns(deadline - now < FAKE_POLL_NS ? deadline - now
						       : FAKE_POLL_NS);
	}
}

/* ---- GPM --------------------------------------------------------------- */

#ifndef FAKE_NVML_OLD_DRIVER
static char gpm_unit[] = "%";
static char gpm_sm_util_s[] = "sm_util";
static char gpm_sm_util_l[] = "SM utilization";
static char gpm_sm_occ_s[] = "sm_occupancy";
static char gpm_sm_occ_l[] = "SM occupancy";
static char gpm_tensor_s[] = "any_tensor_util";
static char gpm_tensor_l[] = "Any tensor pipe utilization";
static char gpm_dram_s[] = "dram_bw_util";
static char gpm_dram_l[] = "DRAM bandwidth utilization";

static const struct {
	unsigned int id;
	int key;
	char *short_name;
	char *long_name;
} gpm_metrics[] = {
	{ GW_NVML_GPM_METRIC_SM_UTIL, K_GPM_SM_UTIL, gpm_sm_util_s,
	  gpm_sm_util_l },
	{ GW_NVML_GPM_METRIC_SM_OCCUPANCY, K_GPM_SM_OCCUPANCY, gpm_sm_occ_s,
	  gpm_sm_occ_l },
	{ GW_NVML_GPM_METRIC_ANY_TENSOR_UTIL, K_GPM_TENSOR, gpm_tensor_s,
	  gpm_tensor_l },
	{ GW_NVML_GPM_METRIC_DRAM_BW_UTIL, K_GPM_DRAM_BW, gpm_dram_s,
	  gpm_dram_l },
};
#define NGPM_METRICS (sizeof(gpm_metrics) / sizeof(gpm_metrics[0]))

static int sample_ok(const void *p)
{
	const struct fake_gpm_sample *s = p;

	return s && s->magic == FAKE_GPM_MAGIC;
}

/* The call fails unless GPM is on for its GPU. */
static void gpm_check(struct call *c)
{
	if (!num(c, K_GPM))
		fail(c, GW_NVML_ERROR_NOT_SUPPORTED);
}

FAKE_API int nvmlGpmQueryDeviceSupport(gw_nvml_device_t device,
				       struct gw_nvml_gpm_support *support)
{
	uint64_t on = 0;
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!support || support->version != GW_NVML_GPM_SUPPORT_VERSION)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			on = num(&c, K_GPM);
	}
	if (end(&c))
		return c.err;
	support->is_supported_device = on ? 1 : 0;
	return GW_NVML_SUCCESS;
}

FAKE_API int nvmlGpmSampleAlloc(void **sample)
{
	struct fake_gpm_sample *s = NULL;
	struct call c;

	if (!begin(&c, __func__, F_INIT, NULL)) {
		if (!sample)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else if (!(s = calloc(1, sizeof(*s))))
			c.err = GW_NVML_ERROR_UNKNOWN;
	}
	if (end(&c))
		return c.err;
	s->magic = FAKE_GPM_MAGIC;
	s->idx = -1;
	*sample = s;
	return GW_NVML_SUCCESS;
}

FAKE_API int nvmlGpmSampleFree(void *sample)
{
	struct fake_gpm_sample *s = sample;
	struct call c;

	if (!begin(&c, __func__, F_INIT, NULL) && !sample_ok(s))
		c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
	if (end(&c))
		return c.err;
	s->magic = 0;
	free(s);
	return GW_NVML_SUCCESS;
}

FAKE_API int nvmlGpmSampleGet(gw_nvml_device_t device, void *sample)
{
	struct fake_gpm_sample *s = sample;
	struct call c;

	if (!begin(&c, __func__, F_INIT | F_DEV, device)) {
		if (!sample_ok(s))
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			gpm_check(&c);
	}
	if (end(&c))
		return c.err;
	s->idx = (int)c.idx;
	s->ts_us = real_us();
	return GW_NVML_SUCCESS;
}

static void gpm_metric(struct call *c, struct gw_nvml_gpm_metric *m)
{
	const struct val *v;
	size_t i;
	int r;

	m->value = 0;
	m->info.short_name = NULL;
	m->info.long_name = NULL;
	m->info.unit = NULL;
	for (i = 0; i < NGPM_METRICS; i++)
		if (gpm_metrics[i].id == m->metric_id)
			break;
	if (i == NGPM_METRICS) {
		m->nvml_return = GW_NVML_ERROR_NOT_SUPPORTED;
		return;
	}
	v = key(c, gpm_metrics[i].key, &r);
	m->nvml_return = r;
	if (!r && v->kind == V_NUM)
		m->value = v->d;
	m->info.short_name = gpm_metrics[i].short_name;
	m->info.long_name = gpm_metrics[i].long_name;
	m->info.unit = gpm_unit;
}

FAKE_API int nvmlGpmMetricsGet(struct gw_nvml_gpm_metrics_get *m)
{
	const struct fake_gpm_sample *s1, *s2;
	gw_nvml_device_t dev = NULL;
	struct call c;
	unsigned int i;

	if (m && sample_ok(m->sample1) && sample_ok(m->sample2)) {
		s1 = m->sample1;
		s2 = m->sample2;
		if (s1->idx >= 0 && s1->idx == s2->idx)
			dev = &devs[s1->idx];
	}
	if (!begin(&c, __func__, F_INIT | F_DEV, dev)) {
		if (m->version != GW_NVML_GPM_METRICS_GET_VERSION ||
		    m->num_metrics > GW_NVML_GPM_METRIC_SLOTS)
			c.err = GW_NVML_ERROR_INVALID_ARGUMENT;
		else
			gpm_check(&c);
		for (i = 0; !c.err && i < m->num_metrics; i++)
			gpm_metric(&c, &m->metrics[i]);
	}
	return end(&c);
}
#endif /* !FAKE_NVML_OLD_DRIVER */

/* ---- names that differ between driver generations --------------------- */

#ifndef FAKE_NVML_OLD_DRIVER
FAKE_API int nvmlInit_v2(void)
{
	return do_init(__func__);
}

FAKE_API int nvmlDeviceGetCount_v2(unsigned int *count)
{
	return do_get_count(__func__, count);
}

FAKE_API int nvmlDeviceGetHandleByIndex_v2(unsigned int index,
					   gw_nvml_device_t *device)
{
	return do_get_handle(__func__, index, device);
}

FAKE_API int nvmlDeviceGetPciInfo_v3(gw_nvml_device_t device,
				     struct gw_nvml_pci_info *pci)
{
	return do_pci_info(__func__, device, pci);
}

FAKE_API int nvmlEventSetWait_v2(void *set, struct gw_nvml_event_data *data,
				 unsigned int timeout_ms)
{
	return do_event_wait(__func__, set, data, timeout_ms, 1);
}
#else
FAKE_API int nvmlInit(void)
{
	return do_init(__func__);
}

FAKE_API int nvmlDeviceGetCount(unsigned int *count)
{
	return do_get_count(__func__, count);
}

FAKE_API int nvmlDeviceGetHandleByIndex(unsigned int index,
					gw_nvml_device_t *device)
{
	return do_get_handle(__func__, index, device);
}

FAKE_API int nvmlDeviceGetPciInfo_v2(gw_nvml_device_t device,
				     struct gw_nvml_pci_info *pci)
{
	return do_pci_info(__func__, device, pci);
}

FAKE_API int
nvmlDeviceGetComputeRunningProcesses_v2(gw_nvml_device_t device,
					unsigned int *count,
					struct gw_nvml_process_info *infos)
{
	return do_procs(__func__, device, count, infos);
}

/* The old nvmlEventData_t ends after event_data. */
FAKE_API int nvmlEventSetWait(void *set, struct gw_nvml_event_data *data,
			      unsigned int timeout_ms)
{
	return do_event_wait(__func__, set, data, timeout_ms, 0);
}
#endif

/*
 * Compile-time check that every export has the signature nvml_abi.h
 * declares: a mismatch is an incompatible-pointer-types diagnostic.
 */
static const struct gw_nvml_fns abi_check __attribute__((unused)) = {
#ifndef FAKE_NVML_OLD_DRIVER
	.init = nvmlInit_v2,
	.device_get_count = nvmlDeviceGetCount_v2,
	.device_get_handle_by_index = nvmlDeviceGetHandleByIndex_v2,
	.device_get_pci_info = nvmlDeviceGetPciInfo_v3,
	.device_get_compute_running_processes =
		nvmlDeviceGetComputeRunningProcesses_v3,
	.event_set_wait = nvmlEventSetWait_v2,
	.device_get_field_values = nvmlDeviceGetFieldValues,
	.device_get_total_energy_consumption =
		nvmlDeviceGetTotalEnergyConsumption,
	.device_get_clocks_event_reasons =
		nvmlDeviceGetCurrentClocksEventReasons,
	.device_get_remapped_rows = nvmlDeviceGetRemappedRows,
	.device_get_process_utilization = nvmlDeviceGetProcessUtilization,
	.gpm_query_device_support = nvmlGpmQueryDeviceSupport,
	.gpm_sample_alloc = nvmlGpmSampleAlloc,
	.gpm_sample_free = nvmlGpmSampleFree,
	.gpm_sample_get = nvmlGpmSampleGet,
	.gpm_metrics_get = nvmlGpmMetricsGet,
#else
	.init = nvmlInit,
	.device_get_count = nvmlDeviceGetCount,
	.device_get_handle_by_index = nvmlDeviceGetHandleByIndex,
	.device_get_pci_info = nvmlDeviceGetPciInfo_v2,
	.device_get_compute_running_processes =
		nvmlDeviceGetComputeRunningProcesses_v2,
	.event_set_wait = nvmlEventSetWait,
#endif
	.shutdown = nvmlShutdown,
	.error_string = nvmlErrorString,
	.system_get_driver_version = nvmlSystemGetDriverVersion,
	.device_get_name = nvmlDeviceGetName,
	.device_get_uuid = nvmlDeviceGetUUID,
	.device_get_temperature = nvmlDeviceGetTemperature,
	.device_get_power_usage = nvmlDeviceGetPowerUsage,
	.device_get_enforced_power_limit = nvmlDeviceGetEnforcedPowerLimit,
	.device_get_utilization_rates = nvmlDeviceGetUtilizationRates,
	.device_get_memory_info = nvmlDeviceGetMemoryInfo,
	.device_get_clock_info = nvmlDeviceGetClockInfo,
	.device_get_max_clock_info = nvmlDeviceGetMaxClockInfo,
	.device_get_clocks_throttle_reasons =
		nvmlDeviceGetCurrentClocksThrottleReasons,
	.device_get_fan_speed = nvmlDeviceGetFanSpeed,
	.device_get_performance_state = nvmlDeviceGetPerformanceState,
	.device_get_total_ecc_errors = nvmlDeviceGetTotalEccErrors,
	.device_get_curr_pcie_link_generation =
		nvmlDeviceGetCurrPcieLinkGeneration,
	.device_get_max_pcie_link_generation =
		nvmlDeviceGetMaxPcieLinkGeneration,
	.device_get_curr_pcie_link_width = nvmlDeviceGetCurrPcieLinkWidth,
	.device_get_max_pcie_link_width = nvmlDeviceGetMaxPcieLinkWidth,
	.device_get_pcie_replay_counter = nvmlDeviceGetPcieReplayCounter,
	.device_get_pcie_throughput = nvmlDeviceGetPcieThroughput,
	.device_get_nvlink_state = nvmlDeviceGetNvLinkState,
	.device_get_nvlink_error_counter = nvmlDeviceGetNvLinkErrorCounter,
	.device_get_supported_event_types = nvmlDeviceGetSupportedEventTypes,
	.event_set_create = nvmlEventSetCreate,
	.device_register_events = nvmlDeviceRegisterEvents,
	.event_set_free = nvmlEventSetFree,
};
