/* SPDX-License-Identifier: MIT */
/*
 * nvml_abi.h - the subset of NVIDIA's NVML C ABI that gpuwatch calls.
 *
 * NVML ships with the driver only, so the project declares what it uses
 * itself, from NVIDIA's published API reference: return codes, constants,
 * struct layouts and function signatures.  Our names carry the GW_NVML_ /
 * gw_nvml_ prefix; the symbol names exported by libnvidia-ml.so.1 appear
 * only as strings in GW_NVML_SYMBOLS below.
 *
 * Every function is resolved with dlsym() and is optional: a NULL pointer in
 * struct gw_nvml_fns means "not supported by this driver".  The same table is
 * filled by the simulator (src/collect/sim), so simulated GPUs go through the
 * real collector code.
 *
 * Thread safety: NVML itself is thread-safe; this header only declares.
 */
#ifndef GW_NVML_ABI_H
#define GW_NVML_ABI_H

#include <stdint.h>

/* nvmlReturn_t */
#define GW_NVML_SUCCESS			 0
#define GW_NVML_ERROR_UNINITIALIZED	 1
#define GW_NVML_ERROR_INVALID_ARGUMENT	 2
#define GW_NVML_ERROR_NOT_SUPPORTED	 3
#define GW_NVML_ERROR_NO_PERMISSION	 4
#define GW_NVML_ERROR_NOT_FOUND		 6
#define GW_NVML_ERROR_INSUFFICIENT_SIZE	 7
#define GW_NVML_ERROR_DRIVER_NOT_LOADED	 9
#define GW_NVML_ERROR_TIMEOUT		 10
#define GW_NVML_ERROR_IRQ_ISSUE		 11
#define GW_NVML_ERROR_LIBRARY_NOT_FOUND	 12
#define GW_NVML_ERROR_FUNCTION_NOT_FOUND 13
#define GW_NVML_ERROR_GPU_IS_LOST	 15
#define GW_NVML_ERROR_RESET_REQUIRED	 16
#define GW_NVML_ERROR_NO_DATA		 21
#define GW_NVML_ERROR_UNKNOWN		 999

/* nvmlTemperatureSensors_t */
#define GW_NVML_TEMPERATURE_GPU 0

/* nvmlClockType_t */
#define GW_NVML_CLOCK_GRAPHICS 0
#define GW_NVML_CLOCK_SM       1
#define GW_NVML_CLOCK_MEM      2
#define GW_NVML_CLOCK_VIDEO    3

/* nvmlMemoryErrorType_t and nvmlEccCounterType_t */
#define GW_NVML_MEMORY_ERROR_TYPE_CORRECTED   0
#define GW_NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define GW_NVML_VOLATILE_ECC		      0
#define GW_NVML_AGGREGATE_ECC		      1

/* nvmlPcieUtilCounter_t */
#define GW_NVML_PCIE_UTIL_TX_BYTES 0
#define GW_NVML_PCIE_UTIL_RX_BYTES 1

/* nvmlEnableState_t */
#define GW_NVML_FEATURE_DISABLED 0
#define GW_NVML_FEATURE_ENABLED	 1

/* NVLink */
#define GW_NVML_NVLINK_MAX_LINKS	 18
#define GW_NVML_NVLINK_ERROR_DL_REPLAY	 0
#define GW_NVML_NVLINK_ERROR_DL_RECOVERY 1
#define GW_NVML_NVLINK_ERROR_DL_CRC_FLIT 2
#define GW_NVML_NVLINK_ERROR_DL_CRC_DATA 3

/* Field ids for nvmlDeviceGetFieldValues */
#define GW_NVML_FI_DEV_MEMORY_TEMP		 82
#define GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139

/* nvmlValueType_t */
#define GW_NVML_VALUE_TYPE_DOUBLE	      0
#define GW_NVML_VALUE_TYPE_UNSIGNED_INT	      1
#define GW_NVML_VALUE_TYPE_UNSIGNED_LONG      2
#define GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define GW_NVML_VALUE_TYPE_SIGNED_LONG_LONG   4
#define GW_NVML_VALUE_TYPE_SIGNED_INT	      5

/* Clock event (throttle) reason bits, nvmlClocksEventReason* */
#define GW_NVML_CLOCKS_EVENT_GPU_IDLE		 0x1ULL
#define GW_NVML_CLOCKS_EVENT_APPLICATIONS_CLOCKS 0x2ULL
#define GW_NVML_CLOCKS_EVENT_SW_POWER_CAP	 0x4ULL
#define GW_NVML_CLOCKS_EVENT_HW_SLOWDOWN	 0x8ULL
#define GW_NVML_CLOCKS_EVENT_SYNC_BOOST		 0x10ULL
#define GW_NVML_CLOCKS_EVENT_SW_THERMAL		 0x20ULL
#define GW_NVML_CLOCKS_EVENT_HW_THERMAL		 0x40ULL
#define GW_NVML_CLOCKS_EVENT_HW_POWER_BRAKE	 0x80ULL
#define GW_NVML_CLOCKS_EVENT_DISPLAY_CLOCKS	 0x100ULL

/* nvmlEventType* bits */
#define GW_NVML_EVENT_SINGLE_BIT_ECC 0x1ULL
#define GW_NVML_EVENT_DOUBLE_BIT_ECC 0x2ULL
#define GW_NVML_EVENT_PSTATE	     0x4ULL
#define GW_NVML_EVENT_XID_CRITICAL   0x8ULL
#define GW_NVML_EVENT_CLOCK	     0x10ULL

/* GPM metric ids (nvmlGpmMetricId_t) */
#define GW_NVML_GPM_METRIC_SM_UTIL	   2
#define GW_NVML_GPM_METRIC_SM_OCCUPANCY	   3
#define GW_NVML_GPM_METRIC_ANY_TENSOR_UTIL 5
#define GW_NVML_GPM_METRIC_DRAM_BW_UTIL	   10
#define GW_NVML_GPM_METRICS_GET_VERSION	   1
#define GW_NVML_GPM_SUPPORT_VERSION	   1
/* Our array bound; the library reads only numMetrics entries. */
#define GW_NVML_GPM_METRIC_SLOTS 16

/* Buffer sizes guaranteed large enough by NVML */
#define GW_NVML_DEVICE_NAME_BUFFER_SIZE	   96
#define GW_NVML_DEVICE_UUID_BUFFER_SIZE	   80
#define GW_NVML_DRIVER_VERSION_BUFFER_SIZE 80
#define GW_NVML_PCI_BUS_ID_BUFFER_SIZE	   32
#define GW_NVML_PCI_BUS_ID_LEGACY_SIZE	   16

/* nvmlPciInfo_t (as filled by nvmlDeviceGetPciInfo_v3) */
struct gw_nvml_pci_info {
	char bus_id_legacy[GW_NVML_PCI_BUS_ID_LEGACY_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pci_device_id;
	unsigned int pci_subsystem_id;
	char bus_id[GW_NVML_PCI_BUS_ID_BUFFER_SIZE];
};

/* nvmlUtilization_t */
struct gw_nvml_utilization {
	unsigned int gpu;    /* percent of time a kernel was running */
	unsigned int memory; /* percent of time memory was read or written */
};

/* nvmlMemory_t */
struct gw_nvml_memory {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

/* nvmlValue_t */
union gw_nvml_value {
	double d;
	unsigned int ui;
	unsigned long ul;
	unsigned long long ull;
	long long sll;
	int si;
};

/* nvmlFieldValue_t */
struct gw_nvml_field_value {
	unsigned int field_id;
	unsigned int scope_id;
	long long timestamp; /* microseconds since 1970 */
	long long latency_usec;
	int value_type;	 /* GW_NVML_VALUE_TYPE_* */
	int nvml_return; /* per-field result */
	union gw_nvml_value value;
};

/* nvmlProcessInfo_t (v2 and v3 share this layout) */
struct gw_nvml_process_info {
	unsigned int pid;
	unsigned long long used_gpu_memory; /* bytes; may be "not available" */
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};

/* nvmlProcessUtilizationSample_t */
struct gw_nvml_process_util {
	unsigned int pid;
	unsigned long long timestamp; /* microseconds */
	unsigned int sm_util;
	unsigned int mem_util;
	unsigned int enc_util;
	unsigned int dec_util;
};

/* nvmlEventData_t */
struct gw_nvml_event_data {
	void *device;
	unsigned long long event_type;
	unsigned long long event_data; /* the XID code for XID events */
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
};

/* nvmlGpmSupport_t */
struct gw_nvml_gpm_support {
	unsigned int version;
	unsigned int is_supported_device;
};

/* nvmlGpmMetric_t */
struct gw_nvml_gpm_metric {
	unsigned int metric_id;
	int nvml_return;
	double value;
	struct {
		char *short_name;
		char *long_name;
		char *unit;
	} info;
};

/* nvmlGpmMetricsGet_t */
struct gw_nvml_gpm_metrics_get {
	unsigned int version;
	unsigned int num_metrics;
	void *sample1;
	void *sample2;
	struct gw_nvml_gpm_metric metrics[GW_NVML_GPM_METRIC_SLOTS];
};

typedef void *gw_nvml_device_t; /* opaque handle, as NVML defines it */

/*
 * X(member, "exported symbol", return type, parameter list)
 * The first symbol listed for a member wins; later entries are fallbacks
 * for older drivers (see GW_NVML_FALLBACKS).
 */
#define GW_NVML_SYMBOLS(X)                                                     \
	X(init, "nvmlInit_v2", int, (void))                                    \
	X(shutdown, "nvmlShutdown", int, (void))                               \
	X(error_string, "nvmlErrorString", const char *, (int))                \
	X(system_get_driver_version, "nvmlSystemGetDriverVersion", int,        \
	  (char *, unsigned int))                                              \
	X(device_get_count, "nvmlDeviceGetCount_v2", int, (unsigned int *))    \
	X(device_get_handle_by_index, "nvmlDeviceGetHandleByIndex_v2", int,    \
	  (unsigned int, gw_nvml_device_t *))                                  \
	X(device_get_name, "nvmlDeviceGetName", int,                           \
	  (gw_nvml_device_t, char *, unsigned int))                            \
	X(device_get_uuid, "nvmlDeviceGetUUID", int,                           \
	  (gw_nvml_device_t, char *, unsigned int))                            \
	X(device_get_pci_info, "nvmlDeviceGetPciInfo_v3", int,                 \
	  (gw_nvml_device_t, struct gw_nvml_pci_info *))                       \
	X(device_get_temperature, "nvmlDeviceGetTemperature", int,             \
	  (gw_nvml_device_t, int, unsigned int *))                             \
	X(device_get_field_values, "nvmlDeviceGetFieldValues", int,            \
	  (gw_nvml_device_t, int, struct gw_nvml_field_value *))               \
	X(device_get_power_usage, "nvmlDeviceGetPowerUsage", int,              \
	  (gw_nvml_device_t, unsigned int *))                                  \
	X(device_get_enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit",  \
	  int, (gw_nvml_device_t, unsigned int *))                             \
	X(device_get_total_energy_consumption,                                 \
	  "nvmlDeviceGetTotalEnergyConsumption", int,                          \
	  (gw_nvml_device_t, unsigned long long *))                            \
	X(device_get_utilization_rates, "nvmlDeviceGetUtilizationRates", int,  \
	  (gw_nvml_device_t, struct gw_nvml_utilization *))                    \
	X(device_get_memory_info, "nvmlDeviceGetMemoryInfo", int,              \
	  (gw_nvml_device_t, struct gw_nvml_memory *))                         \
	X(device_get_clock_info, "nvmlDeviceGetClockInfo", int,                \
	  (gw_nvml_device_t, int, unsigned int *))                             \
	X(device_get_max_clock_info, "nvmlDeviceGetMaxClockInfo", int,         \
	  (gw_nvml_device_t, int, unsigned int *))                             \
	X(device_get_clocks_event_reasons,                                     \
	  "nvmlDeviceGetCurrentClocksEventReasons", int,                       \
	  (gw_nvml_device_t, unsigned long long *))                            \
	X(device_get_clocks_throttle_reasons,                                  \
	  "nvmlDeviceGetCurrentClocksThrottleReasons", int,                    \
	  (gw_nvml_device_t, unsigned long long *))                            \
	X(device_get_fan_speed, "nvmlDeviceGetFanSpeed", int,                  \
	  (gw_nvml_device_t, unsigned int *))                                  \
	X(device_get_performance_state, "nvmlDeviceGetPerformanceState", int,  \
	  (gw_nvml_device_t, int *))                                           \
	X(device_get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors", int,     \
	  (gw_nvml_device_t, int, int, unsigned long long *))                  \
	X(device_get_remapped_rows, "nvmlDeviceGetRemappedRows", int,          \
	  (gw_nvml_device_t, unsigned int *, unsigned int *, unsigned int *,   \
	   unsigned int *))                                                    \
	X(device_get_curr_pcie_link_generation,                                \
	  "nvmlDeviceGetCurrPcieLinkGeneration", int,                          \
	  (gw_nvml_device_t, unsigned int *))                                  \
	X(device_get_max_pcie_link_generation,                                 \
	  "nvmlDeviceGetMaxPcieLinkGeneration", int,                           \
	  (gw_nvml_device_t, unsigned int *))                                  \
	X(device_get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth",   \
	  int, (gw_nvml_device_t, unsigned int *))                             \
	X(device_get_max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth",     \
	  int, (gw_nvml_device_t, unsigned int *))                             \
	X(device_get_pcie_replay_counter, "nvmlDeviceGetPcieReplayCounter",    \
	  int, (gw_nvml_device_t, unsigned int *))                             \
	X(device_get_pcie_throughput, "nvmlDeviceGetPcieThroughput", int,      \
	  (gw_nvml_device_t, int, unsigned int *))                             \
	X(device_get_nvlink_state, "nvmlDeviceGetNvLinkState", int,            \
	  (gw_nvml_device_t, unsigned int, int *))                             \
	X(device_get_nvlink_error_counter, "nvmlDeviceGetNvLinkErrorCounter",  \
	  int, (gw_nvml_device_t, unsigned int, int, unsigned long long *))    \
	X(device_get_compute_running_processes,                                \
	  "nvmlDeviceGetComputeRunningProcesses_v3", int,                      \
	  (gw_nvml_device_t, unsigned int *, struct gw_nvml_process_info *))   \
	X(device_get_process_utilization, "nvmlDeviceGetProcessUtilization",   \
	  int,                                                                 \
	  (gw_nvml_device_t, struct gw_nvml_process_util *, unsigned int *,    \
	   unsigned long long))                                                \
	X(device_get_supported_event_types,                                    \
	  "nvmlDeviceGetSupportedEventTypes", int,                             \
	  (gw_nvml_device_t, unsigned long long *))                            \
	X(event_set_create, "nvmlEventSetCreate", int, (void **))              \
	X(device_register_events, "nvmlDeviceRegisterEvents", int,             \
	  (gw_nvml_device_t, unsigned long long, void *))                      \
	X(event_set_wait, "nvmlEventSetWait_v2", int,                          \
	  (void *, struct gw_nvml_event_data *, unsigned int))                 \
	X(event_set_free, "nvmlEventSetFree", int, (void *))                   \
	X(gpm_query_device_support, "nvmlGpmQueryDeviceSupport", int,          \
	  (gw_nvml_device_t, struct gw_nvml_gpm_support *))                    \
	X(gpm_sample_alloc, "nvmlGpmSampleAlloc", int, (void **))              \
	X(gpm_sample_free, "nvmlGpmSampleFree", int, (void *))                 \
	X(gpm_sample_get, "nvmlGpmSampleGet", int, (gw_nvml_device_t, void *)) \
	X(gpm_metrics_get, "nvmlGpmMetricsGet", int,                           \
	  (struct gw_nvml_gpm_metrics_get *))

/* Older names tried when the preferred symbol is missing. */
#define GW_NVML_FALLBACKS(X)                                                   \
	X(init, "nvmlInit")                                                    \
	X(device_get_count, "nvmlDeviceGetCount")                              \
	X(device_get_handle_by_index, "nvmlDeviceGetHandleByIndex")            \
	X(device_get_pci_info, "nvmlDeviceGetPciInfo_v2")                      \
	X(device_get_compute_running_processes,                                \
	  "nvmlDeviceGetComputeRunningProcesses_v2")                           \
	X(event_set_wait, "nvmlEventSetWait")

#define GW_NVML_MEMBER(member, sym, ret, params) ret(*member) params;
struct gw_nvml_fns {
	GW_NVML_SYMBOLS(GW_NVML_MEMBER)
};
#undef GW_NVML_MEMBER

#endif /* GW_NVML_ABI_H */
