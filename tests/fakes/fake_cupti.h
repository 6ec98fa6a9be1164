/* SPDX-License-Identifier: MIT */
/*
 * fake_cupti.h - control API of the fake libcupti.so.13 (fake_cupti.c).
 *
 * The fake exports the CUPTI entry points libgpuwatch_cupti.so resolves
 * (cuptiSubscribe, cuptiEnableDomain, cuptiActivityFlushAll, ...) with the
 * real signatures and documented behaviour, and in addition the
 * fake_cupti_* functions below, through which a test plays the part of the
 * CUDA driver: API calls with their ENTER/EXIT callbacks, context creation,
 * and activity records (CUDA 13 layouts) that the next
 * cuptiActivityFlushAll() hands to the subscriber's buffer callbacks.
 *
 * The library under test dlopen()s the fake by path; a test gets the same
 * copy with dlopen() of the same path and looks the control functions up
 * with fake_cupti_open() (dlsym), so nothing links the fake directly.
 *
 * Behaviour worth knowing when writing a scenario:
 *  - A record pushed while its activity kind is disabled is discarded, as
 *    real CUPTI never produces it (FAKE_CUPTI_DISCARDED).  Kernel records
 *    take the kind CONCURRENT_KERNEL when that is enabled, else KERNEL.
 *  - The queue holds FAKE_CUPTI_QUEUE_CAP records; beyond that a record is
 *    dropped (FAKE_CUPTI_DROPPED) and counted for
 *    cuptiActivityGetNumDroppedRecords().
 *  - API calls only reach the subscriber when it subscribed and enabled
 *    that (domain, cbid); the call itself always "happens" and returns ret.
 *  - Everything is thread safe; no fake lock is held while the subscriber's
 *    callbacks run.
 *  - misuse counts calls a real CUPTI would refuse or that break its
 *    rules (NULL arguments, no subscriber, unknown ids, unaligned or NULL
 *    activity buffers, a flush from inside a buffer callback).
 */
#ifndef FAKE_CUPTI_H
#define FAKE_CUPTI_H

#include <dlfcn.h>
#include <stdint.h>

#include <cupti.h>

#define FAKE_CUPTI_QUEUE_CAP 16384u
#define FAKE_CUPTI_NAMES_MAX 8192u /* distinct kernel names kept */

/* What became of a pushed record. */
enum fake_cupti_push {
	FAKE_CUPTI_DISCARDED = 0, /* its kind is not enabled */
	FAKE_CUPTI_QUEUED = 1,	  /* delivered by the next flush */
	FAKE_CUPTI_DROPPED = 2,	  /* queue full */
};

/* One kernel launch, as a CUpti_ActivityKernel10. */
struct fake_cupti_kernel {
	const char *name; /* mangled; copied */
	uint32_t device, context, stream;
	int32_t grid[3], block[3];
	uint16_t registers;		   /* per thread */
	int32_t static_smem, dynamic_smem; /* bytes per block */
	uint32_t local_mem;		   /* bytes per thread */
	uint64_t duration_ns;
};

/* A device's limits, as a CUpti_ActivityDevice5. */
struct fake_cupti_device {
	uint32_t id;
	const char *name; /* static string */
	uint32_t sms;
	uint32_t max_warps_per_sm, max_blocks_per_sm, max_threads_per_block;
	uint32_t max_smem_per_sm, max_smem_per_block;
	uint32_t max_regs_per_sm, max_regs_per_block;
	uint32_t cc_major, cc_minor;
	uint64_t global_memory;
};

/* An H100 SXM5 80 GB. */
#define FAKE_CUPTI_H100(dev)                                                   \
	((struct fake_cupti_device){ .id = (dev),                              \
				     .name = "NVIDIA H100 80GB HBM3",          \
				     .sms = 132,                               \
				     .max_warps_per_sm = 64,                   \
				     .max_blocks_per_sm = 32,                  \
				     .max_threads_per_block = 1024,            \
				     .max_smem_per_sm = 233472,                \
				     .max_smem_per_block = 232448,             \
				     .max_regs_per_sm = 65536,                 \
				     .max_regs_per_block = 65536,              \
				     .cc_major = 9,                            \
				     .cc_minor = 0,                            \
				     .global_memory = 85520809984ull })

struct fake_cupti_stats {
	uint64_t subscribe_calls; /* cuptiSubscribe, whatever it returned */
	uint64_t flushes;	  /* cuptiActivityFlushAll calls */
	uint64_t forced_flushes; /* ... with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */
	uint64_t buffers;	 /* buffers handed to bufferCompleted */
	uint64_t queued;	 /* records accepted into the queue */
	uint64_t delivered;	 /* records handed over in buffers */
	uint64_t discarded;	 /* pushed while their kind was disabled */
	uint64_t dropped;	 /* queue full, or no buffer given */
	uint64_t callbacks;	 /* API callbacks delivered (ENTER + EXIT) */
	uint64_t misuse;	 /* see the file comment */
};

/*
 * The control functions, as an X-macro: X(return type, name, parameters).
 * The fake exports fake_cupti_NAME for each.
 */
#define FAKE_CUPTI_FUNCS(X)                                                    \
	/* Result of the next cuptiSubscribe() calls (0: normal). */           \
	X(void, set_subscribe_result, (int result))                            \
	/* Result of cuptiActivityEnable(kind) (0: normal). */                 \
	X(void, set_activity_result, (int kind, int result))                   \
	X(int, subscribed, (void))                                             \
	X(int, activity_enabled, (int kind))                                   \
	X(int, callback_enabled, (int domain, uint32_t cbid))                  \
	/* Callbacks and activity kinds enabled, all domains. */               \
	X(unsigned int, enabled_count, (void))                                 \
	/* cbid's name as cuptiGetCallbackName() gives it, or NULL. */         \
	X(const char *, callback_name, (int domain, uint32_t cbid))            \
	/* Completed calls of (domain, cbid) the subscriber saw. */            \
	X(uint64_t, callbacks_seen, (int domain, uint32_t cbid))               \
	/* ENTER, busy_ns of work, EXIT with ret; returns ret. */              \
	X(int, api_call,                                                       \
	  (int domain, uint32_t cbid, int ret, uint64_t busy_ns))              \
	/* The same with a nested call inside (a runtime call and the     \
	 * driver call it makes): ENTER outer, ENTER inner, busy_ns, EXIT \
	 * inner with inner_ret, EXIT outer with ret; returns ret. */    \
	X(int, api_call_nested,                                                \
	  (int domain, uint32_t cbid, int ret, int inner_domain,               \
	   uint32_t inner_cbid, int inner_ret, uint64_t busy_ns))              \
	/* The same with the call's parameters (functionParams, e.g. a    \
	 * cuModuleGetFunction_params whose *hfunc the "driver" has set)  \
	 * and symbolName; returns ret. */    \
	X(int, api_call_params,                                                \
	  (int domain, uint32_t cbid, int ret, const void *params,             \
	   const char *symbol))                                                \
	/* RESOURCE CONTEXT_CREATED; returns the context id (>= 1). */         \
	X(uint32_t, context_create, (uint32_t device))                         \
	/* RESOURCE CONTEXT_DESTROY_STARTING. */                               \
	X(void, context_destroy, (uint32_t context))                           \
	X(int, push_kernel, (const struct fake_cupti_kernel *k))               \
	/* copy_kind: CUpti_ActivityMemcpyKind. */                             \
	X(int, push_memcpy,                                                    \
	  (int copy_kind, uint64_t bytes, uint64_t duration_ns))               \
	X(int, push_memset, (uint64_t bytes, uint64_t duration_ns))            \
	/* op: CUpti_ActivityMemoryOperationType; MEMORY2 records. */          \
	X(int, push_memory, (int op, uint64_t address, uint64_t bytes))        \
	X(int, push_device, (const struct fake_cupti_device *d))               \
	X(int, push_overhead, (uint64_t duration_ns))                          \
	X(void, get_stats, (struct fake_cupti_stats * out))

#define FAKE_CUPTI_PROTO(ret, name, params) ret fake_cupti_##name params;
FAKE_CUPTI_FUNCS(FAKE_CUPTI_PROTO)
#undef FAKE_CUPTI_PROTO

/* The control functions of a loaded fake, looked up with dlsym. */
struct fake_cupti {
	void *handle;
#define FAKE_CUPTI_MEMBER(ret, name, params) ret(*name) params;
	FAKE_CUPTI_FUNCS(FAKE_CUPTI_MEMBER)
#undef FAKE_CUPTI_MEMBER
};

/*
 * dlopen()s path (RTLD_NOW | RTLD_LOCAL, so that it is the copy the
 * library under test loads by the same path) and fills fc.  Returns 0, or
 * -1 with fc->handle NULL when the file or a function is missing
 * (dlerror() says which).
 */
static inline int fake_cupti_open(struct fake_cupti *fc, const char *path)
{
	fc->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!fc->handle)
		return -1;
#define FAKE_CUPTI_LOOKUP(ret, name, params)                                   \
	*(void **)&fc->name = dlsym(fc->handle, "fake_cupti_" #name);          \
	if (!fc->name)                                                         \
		goto missing;
	FAKE_CUPTI_FUNCS(FAKE_CUPTI_LOOKUP)
#undef FAKE_CUPTI_LOOKUP
	return 0;
missing:
	dlclose(fc->handle);
	fc->handle = NULL;
	return -1;
}

#endif
