/* SPDX-License-Identifier: MIT */
/*
 * inject.c - libgpuwatch_cupti.so: loaded by the CUDA driver through
 * CUDA_INJECTION64_PATH, which calls InitializeInjection() (the only
 * exported symbol) once.  It opens the shared-memory ring first (so the
 * agent always learns what happened), loads libcupti by name at run time,
 * subscribes, and hands a summary of what it aggregated (agg.h) to the
 * agent about once a second from its own thread ("gw-cupti").
 * docs/internals/inject.md explains the choices; the environment
 * variables are listed there.
 *
 * The status (enum gw_cupti_status, in the ring header and in every
 * PROCESS record):
 *
 *                       ring created
 *   InitializeInjection -----------> STARTING
 *                                       |
 *       +------------+-----------+------+------+-------------+
 *       | libcupti   | subscribe | subscribe   | subscribed, | subscribed,
 *       | or symbols | error 39  | or buffer   | everything  | some kinds or
 *       | missing    |           | setup fails | enabled     | domains refused
 *       v            v           v             v             v
 *   NO_LIBRARY      BUSY       FAILED          OK         PARTIAL
 *                                              |             |
 *                                              +------+------+
 *                                                     |  exit (atexit, once)
 *                                                     v
 *                                                  STOPPED
 *
 * At exit every state gets GW_CRING_F_EXITED; NO_LIBRARY, BUSY and FAILED
 * keep their status, so that the agent can still say why a short-lived
 * process had no CUDA metrics.
 *
 * Only OK and PARTIAL run the summary thread; the others write one
 * summary at start and one at exit and otherwise do nothing.
 * check_state() asserts the transitions (our own invariant).
 *
 * Cost: no callback on kernel launches (or any other hot call: a deny-list
 * is switched off at start and calls that turn out hot are muted);
 * kernels are seen through CONCURRENT_KERNEL activity records, folded in
 * place; when their rate exceeds GPUWATCH_CUPTI_KERNEL_RATE the kind is
 * duty-cycled and counts are scaled by the sampling ratio.
 *
 * Safety: nothing here blocks an application thread for long (callbacks
 * use atomics and, for errors only, one mutex), nothing allocates after
 * start, every CUPTI result is checked (check_result(), the one place that
 * translates them), nothing is ever asserted on what CUPTI returns, and
 * after fork() the child leaves the parent's ring alone.
 */
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "inject/agg.h"
#include "inject/ring.h"

#ifndef GW_VERSION
#define GW_VERSION "0"
#endif

__attribute__((visibility("default"))) int InitializeInjection(void);

#define POOL_BUFS	  8u
#define POOL_BUF_SIZE	  (1u << 20)
#define MAX_CBID	  1024u
#define HOT_CALLS_PER_S	  2000u
#define MIN_CUPTI_VERSION 19u /* CUDA 12.0 */

enum { DOM_RT = 0, DOM_DRV = 1, DOMS = 2 };
enum { CB_DENY = 1, CB_SYNC = 2, CB_ALLOC = 4 };

struct lib_fns {
	CUptiResult (*get_version)(uint32_t *);
	CUptiResult (*get_result_string)(CUptiResult, const char **);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
				 void *);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle,
				     CUpti_CallbackDomain);
	CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle,
				       CUpti_CallbackDomain, CUpti_CallbackId);
	CUptiResult (*get_callback_name)(CUpti_CallbackDomain, uint32_t,
					 const char **);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
					  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*activity_enable)(CUpti_ActivityKind);
	CUptiResult (*activity_disable)(CUpti_ActivityKind);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*get_next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*get_num_dropped)(CUcontext, uint32_t, size_t *);
};

static const struct {
	const char *name;
	size_t off;
	int required;
} symbols[] = {
#define SYM(n, f, req)                                                         \
	{                                                                      \
#n, offsetof(struct lib_fns, f), req                           \
	}
	SYM(cuptiGetVersion, get_version, 1),
	SYM(cuptiGetResultString, get_result_string, 1),
	SYM(cuptiSubscribe, subscribe, 1),
	SYM(cuptiUnsubscribe, unsubscribe, 1),
	SYM(cuptiEnableDomain, enable_domain, 1),
	SYM(cuptiEnableCallback, enable_callback, 1),
	SYM(cuptiGetCallbackName, get_callback_name, 0),
	SYM(cuptiActivityRegisterCallbacks, register_callbacks, 1),
	SYM(cuptiActivityEnable, activity_enable, 1),
	SYM(cuptiActivityDisable, activity_disable, 1),
	SYM(cuptiActivityFlushAll, flush_all, 1),
	SYM(cuptiActivityGetNextRecord, get_next_record, 1),
	SYM(cuptiActivityGetNumDroppedRecords, get_num_dropped, 1),
#undef SYM
};

/* The library's one context (the driver gives us no place to keep it). */
static struct inject {
	int initialized; /* atomic: InitializeInjection ran */
	int torn_down;	 /* atomic: teardown ran */
	int active;	 /* atomic: callbacks may count */
	int child;	 /* set in a fork child */
	pid_t pid;
	int debug;
	uint32_t interval_ms;
	uint32_t ring_bytes;
	uint32_t kernel_rate;
	uint32_t status; /* atomic */
	uint32_t cupti_version;

	void *lib;
	struct lib_fns f;
	CUpti_SubscriberHandle sub;
	int subscribed;
	int kernels_on; /* summary thread only */
	int logged_flush, logged_toggle;

	struct gw_agg *agg;
	struct gw_cring ring;
	int have_ring;
	pthread_mutex_t ring_lock; /* one summary at a time */

	pthread_t thread;
	int have_thread;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	int stop;

	unsigned char *pool; /* POOL_BUFS x POOL_BUF_SIZE */
	uint32_t pool_free;  /* atomic bitmask of free buffers */
	uint64_t pool_empty; /* atomic: requests refused */

	uint8_t cls[DOMS][MAX_CBID];
	int8_t sync_slot[DOMS][MAX_CBID];
	uint32_t calls[DOMS][MAX_CBID];	 /* atomic: calls this interval */
	uint8_t errored[DOMS][MAX_CBID]; /* atomic: ever returned an error */
	uint8_t muted[DOMS][MAX_CBID];	 /* summary thread only */
} g = {
	.ring_lock = PTHREAD_MUTEX_INITIALIZER,
	.stop_lock = PTHREAD_MUTEX_INITIALIZER,
};

/*
 * A runtime API call is in progress on this thread (see on_callback): the
 * driver calls it makes are its own business.  A flag, not a depth:
 * runtime entry points do not nest, and an EXIT lost to muting is undone
 * by the thread's next runtime EXIT.
 */
static __thread int tls_in_rt __attribute__((tls_model("initial-exec")));

/* ---- small helpers ---- */

__attribute__((format(printf, 1, 2))) static void dbg(const char *fmt, ...)
{
	char line[320];
	va_list ap;
	int n, m;

	if (!g.debug)
		return;
	n = snprintf(line, sizeof(line),
		     "gpuwatch-cupti[%ld]: ", (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1u, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(line) - 2u)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The one place CUPTI results are translated: 0 or -errno, and the
 * library's own message on stderr under GPUWATCH_CUPTI_DEBUG=1.
 */
static int check_result(CUptiResult r, const char *what)
{
	if (r == CUPTI_SUCCESS)
		return 0;
	if (g.debug) {
		const char *s = NULL;

		if (!g.f.get_result_string ||
		    g.f.get_result_string(r, &s) != CUPTI_SUCCESS || !s)
			s = "unknown error";
		dbg("%s: %s (%d)", what, s, (int)r);
	}
	switch (r) {
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		return -EBUSY;
	case CUPTI_ERROR_NOT_SUPPORTED:
	case CUPTI_ERROR_NOT_COMPATIBLE:
	case CUPTI_ERROR_INVALID_KIND:
		return -ENOTSUP;
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
		return -EPERM;
	case CUPTI_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUPTI_ERROR_INVALID_PARAMETER:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static void set_status(uint32_t st)
{
	__atomic_store_n(&g.status, st, __ATOMIC_RELEASE);
	gw_cring_set_status(&g.ring, st);
}

static uint32_t get_status(void)
{
	return __atomic_load_n(&g.status, __ATOMIC_ACQUIRE);
}

/* Our own invariant: the transitions of the diagram above. */
static void check_state(uint32_t from, uint32_t to)
{
	(void)from;
	(void)to;
	assert(to < GW_CUPTI_ST_COUNT);
	assert(to == GW_CUPTI_ST_STOPPED
		       ? from == GW_CUPTI_ST_OK || from == GW_CUPTI_ST_PARTIAL
		       : from == GW_CUPTI_ST_STARTING &&
				 to != GW_CUPTI_ST_STARTING);
}

static void transition(uint32_t to)
{
	check_state(get_status(), to);
	set_status(to);
}

/* Strict unsigned parse of an environment variable, clamped into [min, max]. */
static uint32_t env_u32(const char *name, uint32_t def, uint32_t min,
			uint32_t max)
{
	const char *s = getenv(name);
	char *end = NULL;
	unsigned long v;

	if (!s || !*s)
		return def;
	if (*s < '0' || *s > '9')
		goto bad;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (end == s || *end != '\0')
		goto bad;
	if (errno == ERANGE || v > max)
		return max;
	return v < min ? min : (uint32_t)v;
bad:
	dbg("%s=%s is not a number; using %u", name, s, def);
	return def;
}

static int env_flag(const char *name)
{
	const char *s = getenv(name);

	return s && *s && strcmp(s, "0") != 0;
}

/* ---- loading libcupti ---- */

static void *try_open(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		dbg("dlopen %s: %s", path, dlerror());
	return h;
}

static void *open_library(void)
{
	static const char *const sonames[] = { "libcupti.so.13",
					       "libcupti.so.12",
					       "libcupti.so" };
	static const char *const in_home[] = { "extras/CUPTI/lib64/libcupti.so",
					       "lib64/libcupti.so" };
	static const char *const fixed[] = {
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
		"/usr/local/cuda/lib64/libcupti.so",
	};
	const char *lib = getenv("GPUWATCH_CUPTI_LIB");
	const char *home = getenv("CUDA_HOME");
	char path[512];
	void *h = NULL;

	if (lib && *lib)
		return try_open(lib);
	for (size_t i = 0; !h && i < sizeof(sonames) / sizeof(sonames[0]); i++)
		h = try_open(sonames[i]);
	for (size_t i = 0;
	     !h && home && *home && i < sizeof(in_home) / sizeof(in_home[0]);
	     i++) {
		int n = snprintf(path, sizeof(path), "%s/%s", home, in_home[i]);

		if (n > 0 && (size_t)n < sizeof(path))
			h = try_open(path);
	}
	for (size_t i = 0; !h && i < sizeof(fixed) / sizeof(fixed[0]); i++)
		h = try_open(fixed[i]);
	return h;
}

static int load_library(void)
{
	g.lib = open_library();
	if (!g.lib)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *p = dlsym(g.lib, symbols[i].name);

		if (!p && symbols[i].required) {
			dbg("libcupti lacks %s", symbols[i].name);
			memset(&g.f, 0, sizeof(g.f));
			return -ENOENT;
		}
		memcpy((char *)&g.f + symbols[i].off, &p, sizeof(p));
	}
	return 0;
}

/* ---- callback classes ---- */

/* A glob with '*' only. */
static int glob_match(const char *pat, const char *s)
{
	if (!*pat)
		return !*s;
	if (*pat == '*') {
		for (;; s++) {
			if (glob_match(pat + 1, s))
				return 1;
			if (!*s)
				return 0;
		}
	}
	return *s == *pat && glob_match(pat + 1, s + 1);
}

static int ends_with(const char *s, size_t n, const char *suf)
{
	size_t m = strlen(suf);

	return n >= m && memcmp(s + n - m, suf, m) == 0;
}

/* cudaMemcpyAsync_ptsz_v7000 -> cudaMemcpyAsync; 0 or -ENAMETOOLONG. */
static int base_name(const char *name, char *out, size_t cap)
{
	size_t n = strnlen(name, cap);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(out, name, n + 1u);
	for (;;) {
		if (ends_with(out, n, "_ptsz") || ends_with(out, n, "_ptds")) {
			n -= 5;
		} else {
			size_t d = n;

			while (d > 0 && out[d - 1] >= '0' && out[d - 1] <= '9')
				d--;
			if (d == n || d < 2 || out[d - 1] != 'v' ||
			    out[d - 2] != '_')
				break;
			n = d - 2;
		}
		out[n] = '\0';
	}
	return 0;
}

static const char *const deny_rt[] = {
	"cudaLaunch*",
	"cudaGraphLaunch*",
	"cudaMemcpy*Async",
	"cudaMemset*Async",
	"cudaEventRecord*",
	"cudaEventQuery",
	"cudaStreamQuery",
	"cudaStreamWaitEvent",
	"cudaGetLastError",
	"cudaPeekAtLastError",
	"cudaGetDevice",
	"cudaSetDevice",
	"cudaGetDriverEntryPoint*",
	"cudaGetExportTable",
	"cudaPointerGetAttributes",
	"cudaStreamIsCapturing",
	"cudaStreamGetCaptureInfo*",
	"cudaThreadExchangeStreamCaptureMode",
	"cudaFuncGetAttributes",
	"cudaFuncSetAttribute",
	"cudaDeviceGetAttribute",
	"cudaOccupancy*",
	NULL,
};
static const char *const deny_drv[] = {
	"cuLaunch*",
	"cuGraphLaunch*",
	"cuMemcpy*Async",
	"cuMemset*Async",
	"cuEventRecord*",
	"cuEventQuery",
	"cuStreamQuery",
	"cuStreamWaitEvent",
	"cuCtxGetCurrent",
	"cuCtxSetCurrent",
	"cuCtxPushCurrent",
	"cuCtxPopCurrent",
	"cuCtxGetDevice",
	"cuGetProcAddress*",
	"cuGetExportTable",
	"cuPointerGetAttribute*",
	"cuStreamIsCapturing",
	"cuStreamGetCaptureInfo*",
	"cuFuncGetAttribute",
	"cuDeviceGetAttribute",
	"cuOccupancy*",
	"cuStreamGetCtx*",
	NULL,
};
static const char *const sync_rt[] = { "cudaDeviceSynchronize",
				       "cudaStreamSynchronize",
				       "cudaEventSynchronize", NULL };
static const char *const sync_drv[] = { "cuCtxSynchronize",
					"cuStreamSynchronize",
					"cuEventSynchronize", NULL };
static const char *const alloc_rt[] = { "cudaMalloc*", "cudaHostAlloc", NULL };
static const char *const alloc_drv[] = { "cuMemAlloc*",
					 "cuMemCreate",
					 "cuMemHostAlloc",
					 "cuArrayCreate",
					 "cuArray3DCreate",
					 "cuMipmappedArrayCreate",
					 NULL };

static int in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (glob_match(*list, s))
			return 1;
	return 0;
}

static void classify(int d, uint32_t cbid, const char *base)
{
	uint8_t c = 0;

	if (in_list(d == DOM_RT ? deny_rt : deny_drv, base))
		c |= CB_DENY;
	if (in_list(d == DOM_RT ? sync_rt : sync_drv, base))
		c |= CB_SYNC;
	if (in_list(d == DOM_RT ? alloc_rt : alloc_drv, base))
		c |= CB_ALLOC;
	if (c & CB_SYNC) {
		int slot = gw_agg_sync_slot(g.agg,
					    d == DOM_RT ? GW_CRING_API_RUNTIME
							: GW_CRING_API_DRIVER,
					    cbid, base);
		if (slot < 0) {
			c &= (uint8_t)~CB_SYNC;
			slot = -1;
		}
		g.sync_slot[d][cbid] = (int8_t)slot;
	}
	g.cls[d][cbid] = c;
}

static void classify_callbacks(void)
{
	char base[GW_CRING_API_NAME_MAX];

	memset(g.sync_slot, -1, sizeof(g.sync_slot));
	if (!g.f.get_callback_name) {
		/* Ids are stable across versions: the essentials from the headers. */
		classify(DOM_RT,
			 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
			 "cudaLaunchKernel");
		classify(DOM_RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
			 "cudaMalloc");
		classify(DOM_RT,
			 CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
			 "cudaDeviceSynchronize");
		classify(DOM_RT,
			 CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
			 "cudaStreamSynchronize");
		classify(DOM_RT,
			 CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
			 "cudaEventSynchronize");
		classify(DOM_DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
			 "cuLaunchKernel");
		classify(DOM_DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
			 "cuMemAlloc");
		classify(DOM_DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
			 "cuCtxSynchronize");
		classify(DOM_DRV, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
			 "cuStreamSynchronize");
		classify(DOM_DRV, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
			 "cuEventSynchronize");
		return;
	}
	for (int d = 0; d < DOMS; d++) {
		CUpti_CallbackDomain dom = d == DOM_RT
						   ? CUPTI_CB_DOMAIN_RUNTIME_API
						   : CUPTI_CB_DOMAIN_DRIVER_API;
		for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++) {
			const char *name = NULL;

			if (g.f.get_callback_name(dom, cbid, &name) !=
				    CUPTI_SUCCESS ||
			    !name || base_name(name, base, sizeof(base)) != 0)
				continue;
			classify(d, cbid, base);
		}
	}
}

/* ---- callbacks (application threads) ---- */

/*
 * The handles a launch may be given, at the exit of the calls that hand
 * them out: cuModuleGetFunction (*hfunc is the kernel named name),
 * cuLibraryGetKernel (*pKernel: a CUkernel, which cuLaunchKernel also
 * takes in place of a CUfunction) and cuKernelGetFunction (*pFunc, the
 * CUfunction of a CUkernel learnt before).
 */
static void learn_function(CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
	int code = 0;
	void *h = NULL;

	if (cd->functionReturnValue)
		memcpy(&code, cd->functionReturnValue, sizeof(code));
	if (code != 0 || !cd->functionParams)
		return;
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction) {
		const cuModuleGetFunction_params *p = cd->functionParams;

		if (!p->hfunc || !p->name)
			return;
		memcpy(&h, p->hfunc, sizeof(h));
		gw_agg_kfunc(g.agg, GW_CRING_KFUNC_CUFUNCTION,
			     (uint64_t)(uintptr_t)h, p->name);
	} else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel) {
		const cuLibraryGetKernel_params *p = cd->functionParams;

		if (!p->pKernel || !p->name)
			return;
		memcpy(&h, p->pKernel, sizeof(h));
		gw_agg_kfunc(g.agg, GW_CRING_KFUNC_CUFUNCTION,
			     (uint64_t)(uintptr_t)h, p->name);
	} else {
		const cuKernelGetFunction_params *p = cd->functionParams;

		if (!p->pFunc)
			return;
		memcpy(&h, p->pFunc, sizeof(h));
		gw_agg_kfunc_alias(g.agg, GW_CRING_KFUNC_CUFUNCTION,
				   (uint64_t)(uintptr_t)h,
				   (uint64_t)(uintptr_t)p->kernel);
	}
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain dom,
				 CUpti_CallbackId cbid, const void *cbdata)
{
	const CUpti_CallbackData *cd = cbdata;
	uint32_t domain;
	int d, code = 0;

	(void)userdata;
	if (!__atomic_load_n(&g.active, __ATOMIC_ACQUIRE) || !cbdata)
		return;
	if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
		if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
			gw_agg_context(g.agg, 1);
		else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
			gw_agg_context(g.agg, 0);
		return;
	}
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
		d = DOM_RT;
		domain = GW_CRING_API_RUNTIME;
	} else if (dom == CUPTI_CB_DOMAIN_DRIVER_API) {
		d = DOM_DRV;
		domain = GW_CRING_API_DRIVER;
	} else {
		return;
	}
	uint8_t cls = cbid < MAX_CBID ? g.cls[d][cbid] : 0;

	gw_agg_callback(g.agg);
	if (cd->callbackSite == CUPTI_API_ENTER) {
		if ((cls & CB_SYNC) && cd->correlationData)
			*cd->correlationData = clock_ns(CLOCK_MONOTONIC);
		if (d == DOM_RT)
			tls_in_rt = 1;
		return;
	}
	if (cd->callbackSite != CUPTI_API_EXIT)
		return;
	if (cbid < MAX_CBID)
		__atomic_fetch_add(&g.calls[d][cbid], 1, __ATOMIC_RELAXED);
	/* The CUfunction a module hands out, for the launch call paths
	 * (cupti_ring.h, GW_CREC_KFUNC). */
	if (d == DOM_DRV &&
	    (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction ||
	     cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel ||
	     cbid == CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction))
		learn_function(cbid, cd);
	/* A driver call made by a runtime call: its wait and its error are
	 * the runtime call's, counted there once (the application called
	 * cudaMalloc, not cuMemAlloc). */
	if (d == DOM_DRV && tls_in_rt)
		return;
	if ((cls & CB_SYNC) && cd->correlationData && *cd->correlationData) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC),
			 t0 = *cd->correlationData;

		gw_agg_sync(g.agg, g.sync_slot[d][cbid],
			    now > t0 ? now - t0 : 0);
	}
	if (d == DOM_RT)
		tls_in_rt = 0;
	if (cd->functionReturnValue)
		memcpy(&code, cd->functionReturnValue, sizeof(code));
	if (code == 0)
		return;
	if (cbid < MAX_CBID)
		__atomic_store_n(&g.errored[d][cbid], 1, __ATOMIC_RELAXED);
	const char *name = cd->functionName;
	if ((!name || !*name) && g.f.get_callback_name &&
	    g.f.get_callback_name(dom, cbid, &name) != CUPTI_SUCCESS)
		name = NULL;
	/* 2: cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY. */
	if (code == 2 && (cls & CB_ALLOC))
		gw_agg_oom(g.agg);
	if (gw_agg_api_error(g.agg, domain, cbid, code, name) != 0)
		return; /* table full: counted in api_overflow */
}

/* ---- activity buffers (CUPTI's threads) ---- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
				      size_t *max_records)
{
	uint32_t m;

	*buffer = NULL;
	*size = 0;
	*max_records = 0;
	if (!g.pool)
		return;
	m = __atomic_load_n(&g.pool_free, __ATOMIC_ACQUIRE);
	while (m) {
		unsigned int i = (unsigned int)__builtin_ctz(m);

		if (__atomic_compare_exchange_n(
			    &g.pool_free, &m, m & ~(1u << i), 0,
			    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			*buffer = g.pool + (size_t)i * POOL_BUF_SIZE;
			*size = POOL_BUF_SIZE;
			return;
		}
	}
	/* Pool empty: CUPTI drops the records and counts them. */
	__atomic_fetch_add(&g.pool_empty, 1, __ATOMIC_RELAXED);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
				      uint8_t *buffer, size_t size,
				      size_t valid)
{
	(void)size;
	if (buffer && valid && g.f.get_next_record) {
		CUpti_Activity *rec = NULL;

		while (g.f.get_next_record(buffer, valid, &rec) ==
			       CUPTI_SUCCESS &&
		       rec)
			gw_agg_record(g.agg, rec);
	}
	if (g.f.get_num_dropped) {
		size_t dropped = 0;

		if (g.f.get_num_dropped(ctx, stream, &dropped) ==
			    CUPTI_SUCCESS &&
		    dropped)
			gw_agg_records_dropped(g.agg, dropped);
	}
	if (g.pool && buffer >= g.pool &&
	    buffer < g.pool + (size_t)POOL_BUFS * POOL_BUF_SIZE) {
		size_t off = (size_t)(buffer - g.pool);

		if (off % POOL_BUF_SIZE == 0)
			__atomic_fetch_or(&g.pool_free,
					  1u << (off / POOL_BUF_SIZE),
					  __ATOMIC_RELEASE);
	}
}

/* ---- setup ---- */

static int enable_activity(CUpti_ActivityKind kind, const char *what)
{
	return check_result(g.f.activity_enable(kind), what);
}

static void set_kernels(int on)
{
	CUptiResult r;

	if (on == g.kernels_on)
		return;
	r = on ? g.f.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
	       : g.f.activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (r != CUPTI_SUCCESS && !g.logged_toggle) {
		g.logged_toggle = 1;
		(void)check_result(r,
				   on ? "enable kernels" : "disable kernels");
	}
	if (r == CUPTI_SUCCESS)
		g.kernels_on = on;
}

static uint32_t start_cupti(void)
{
	int partial = 0, err;
	uint32_t v = 0;

	if (load_library() != 0)
		return GW_CUPTI_ST_NO_LIBRARY;
	if (check_result(g.f.get_version(&v), "cuptiGetVersion") == 0)
		g.cupti_version = v;
	if (g.cupti_version && g.cupti_version < MIN_CUPTI_VERSION) {
		dbg("CUPTI API version %u is older than CUDA 12",
		    g.cupti_version);
		return GW_CUPTI_ST_NO_LIBRARY;
	}
	classify_callbacks();

	err = check_result(g.f.subscribe(&g.sub, on_callback, NULL),
			   "cuptiSubscribe");
	if (err == -EBUSY)
		return GW_CUPTI_ST_BUSY;
	if (err)
		return GW_CUPTI_ST_FAILED;
	g.subscribed = 1;

	g.pool = mmap(NULL, (size_t)POOL_BUFS * POOL_BUF_SIZE,
		      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		      0);
	if (g.pool == MAP_FAILED) {
		dbg("no memory for activity buffers");
		g.pool = NULL;
	} else {
		__atomic_store_n(&g.pool_free, (1u << POOL_BUFS) - 1u,
				 __ATOMIC_RELEASE);
	}
	if (!g.pool || check_result(g.f.register_callbacks(buffer_requested,
							   buffer_completed),
				    "cuptiActivityRegisterCallbacks") != 0) {
		(void)check_result(g.f.unsubscribe(g.sub), "cuptiUnsubscribe");
		g.subscribed = 0;
		return GW_CUPTI_ST_FAILED;
	}
	__atomic_store_n(&g.active, 1, __ATOMIC_RELEASE);

	if (check_result(
		    g.f.enable_callback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
					CUPTI_CBID_RESOURCE_CONTEXT_CREATED),
		    "enable CONTEXT_CREATED") ||
	    check_result(g.f.enable_callback(
				 1, g.sub, CUPTI_CB_DOMAIN_RESOURCE,
				 CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
			 "enable CONTEXT_DESTROY_STARTING"))
		partial = 1;
	for (int d = 0; d < DOMS; d++) {
		CUpti_CallbackDomain dom = d == DOM_RT
						   ? CUPTI_CB_DOMAIN_RUNTIME_API
						   : CUPTI_CB_DOMAIN_DRIVER_API;
		if (check_result(g.f.enable_domain(1, g.sub, dom),
				 d == DOM_RT ? "enable runtime API"
					     : "enable driver API")) {
			partial = 1;
			continue;
		}
		for (uint32_t cbid = 1; cbid < MAX_CBID; cbid++)
			if ((g.cls[d][cbid] & CB_DENY) &&
			    g.f.enable_callback(0, g.sub, dom, cbid) !=
				    CUPTI_SUCCESS)
				dbg("could not switch off callback %u/%u",
				    (unsigned)d, cbid);
	}
	if (enable_activity(CUPTI_ACTIVITY_KIND_DEVICE, "activity DEVICE") ||
	    enable_activity(CUPTI_ACTIVITY_KIND_MEMCPY, "activity MEMCPY") ||
	    enable_activity(CUPTI_ACTIVITY_KIND_MEMSET, "activity MEMSET") ||
	    enable_activity(CUPTI_ACTIVITY_KIND_MEMORY2, "activity MEMORY2") ||
	    enable_activity(CUPTI_ACTIVITY_KIND_OVERHEAD, "activity OVERHEAD"))
		partial = 1;
	if (g.kernel_rate > 0) {
		if (enable_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
				    "activity CONCURRENT_KERNEL"))
			partial = 1;
		else
			g.kernels_on = 1;
	}
	return partial ? GW_CUPTI_ST_PARTIAL : GW_CUPTI_ST_OK;
}

/* ---- the summary thread ---- */

/* Flushes CUPTI's buffers first unless flush is 0 (inside InitializeInjection). */
static void summary(int flush, uint32_t flush_flags)
{
	if (flush && g.subscribed) {
		CUptiResult r = g.f.flush_all(flush_flags);

		if (r != CUPTI_SUCCESS && !g.logged_flush) {
			g.logged_flush = 1;
			(void)check_result(r, "cuptiActivityFlushAll");
		}
	}
	pthread_mutex_lock(&g.ring_lock);
	if (g.have_ring)
		(void)gw_agg_write(g.agg, &g.ring, get_status(),
				   g.cupti_version, clock_ns(CLOCK_REALTIME));
	pthread_mutex_unlock(&g.ring_lock);
}

/* Sleeps ns or until told to stop; returns 1 when told to stop. */
static int wait_stop(uint64_t ns)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + ns;
	struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000ull),
			       .tv_nsec = (long)(deadline % 1000000000ull) };
	int stop;

	pthread_mutex_lock(&g.stop_lock);
	while (!g.stop) {
		if (pthread_cond_timedwait(&g.stop_cond, &g.stop_lock, &ts) ==
		    ETIMEDOUT)
			break;
	}
	stop = g.stop;
	pthread_mutex_unlock(&g.stop_lock);
	return stop;
}

/* Mutes API callbacks that fire above HOT_CALLS_PER_S without errors. */
static void mute_hot(uint64_t elapsed_ns)
{
	if (elapsed_ns == 0)
		return;
	for (int d = 0; d < DOMS; d++) {
		CUpti_CallbackDomain dom = d == DOM_RT
						   ? CUPTI_CB_DOMAIN_RUNTIME_API
						   : CUPTI_CB_DOMAIN_DRIVER_API;
		for (uint32_t cbid = 0; cbid < MAX_CBID; cbid++) {
			uint64_t n = __atomic_exchange_n(&g.calls[d][cbid], 0,
							 __ATOMIC_RELAXED);

			if (n == 0 || g.muted[d][cbid] ||
			    (g.cls[d][cbid] & (CB_SYNC | CB_ALLOC)) ||
			    __atomic_load_n(&g.errored[d][cbid],
					    __ATOMIC_RELAXED))
				continue;
			if (n * 1000000000ull <=
			    (uint64_t)HOT_CALLS_PER_S * elapsed_ns)
				continue;
			g.muted[d][cbid] = 1;
			if (check_result(
				    g.f.enable_callback(0, g.sub, dom, cbid),
				    "mute a hot callback") == 0)
				gw_agg_muted(g.agg);
		}
	}
}

/*
 * Next share of each period during which kernels are traced: the traced
 * rate while tracing is the application's launch rate; keep the traced
 * rate near kernel_rate.
 */
static double next_on_share(double share, uint64_t traced, uint64_t on_ns)
{
	if (on_ns == 0)
		return share;
	double rate = (double)traced * 1e9 / (double)on_ns;
	if (rate <= (double)g.kernel_rate)
		return 1.0; /* tracing everything stays within the budget */
	double s = (double)g.kernel_rate / rate;
	return s < GW_AGG_RATIO_MIN ? GW_AGG_RATIO_MIN : s;
}

static void *summary_main(void *arg)
{
	uint64_t period = (uint64_t)g.interval_ms * 1000000ull;
	double share = 1.0;
	uint64_t last = clock_ns(CLOCK_MONOTONIC);
	uint64_t traced = gw_agg_traced_kernels(g.agg);

	(void)arg;
	pthread_setname_np(pthread_self(), "gw-cupti");
	for (;;) {
		uint64_t on_ns = period;

		if (g.kernel_rate > 0 && share < 1.0) {
			on_ns = (uint64_t)((double)period * share);
			if (wait_stop(on_ns))
				break;
			set_kernels(0);
			if (wait_stop(period - on_ns))
				break;
		} else if (wait_stop(period)) {
			break;
		}
		summary(1, 0);

		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		uint64_t elapsed = now > last ? now - last : 0;
		last = now;
		mute_hot(elapsed);
		if (g.kernel_rate == 0)
			continue;
		uint64_t t = gw_agg_traced_kernels(g.agg);
		if (share >= 1.0)
			on_ns = elapsed;
		share = next_on_share(share, t - traced, on_ns);
		traced = t;
		gw_agg_set_ratio(g.agg, share);
		set_kernels(1);
	}
	return NULL;
}

static int start_thread(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	if (pthread_condattr_init(&ca) != 0)
		return -ENOMEM;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&g.stop_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		return -err;
	/* The application's signals are not for our thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&g.thread, NULL, summary_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&g.stop_cond);
		return -err;
	}
	g.have_thread = 1;
	return 0;
}

static void stop_thread(void)
{
	if (!g.have_thread)
		return;
	pthread_mutex_lock(&g.stop_lock);
	g.stop = 1;
	pthread_cond_signal(&g.stop_cond);
	pthread_mutex_unlock(&g.stop_lock);
	pthread_join(g.thread, NULL);
	g.have_thread = 0;
}

/* ---- exit and fork ---- */

static void teardown(void)
{
	if (__atomic_exchange_n(&g.torn_down, 1, __ATOMIC_ACQ_REL))
		return;
	if (g.child || g.pid != getpid() || !g.have_ring)
		return;
	stop_thread();
	if (get_status() == GW_CUPTI_ST_OK ||
	    get_status() == GW_CUPTI_ST_PARTIAL)
		transition(GW_CUPTI_ST_STOPPED);
	summary(1, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	__atomic_store_n(&g.active, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&g.ring_lock);
	gw_cring_set_flags(&g.ring, GW_CRING_F_EXITED);
	gw_cring_publish(&g.ring, clock_ns(CLOCK_REALTIME));
	/* Callbacks never touch the ring; the summary thread is gone. */
	gw_cring_close(&g.ring, 1, clock_ns(CLOCK_REALTIME));
	g.have_ring = 0;
	pthread_mutex_unlock(&g.ring_lock);
}

static void after_fork_child(void)
{
	/* The parent's ring and thread are not ours: never write to them. */
	g.child = 1;
	g.have_thread = 0;
	__atomic_store_n(&g.active, 0, __ATOMIC_RELEASE);
}

/* ---- entry point ---- */

int InitializeInjection(void)
{
	uint32_t st;
	int err;

	if (__atomic_exchange_n(&g.initialized, 1, __ATOMIC_ACQ_REL))
		return 1;
	if (env_flag("GPUWATCH_CUPTI_DISABLE"))
		return 1;
	g.debug = env_flag("GPUWATCH_CUPTI_DEBUG");
	g.pid = getpid();
	g.interval_ms = env_u32("GPUWATCH_CUPTI_INTERVAL_MS", 1000, 10, 60000);
	uint32_t kb =
		env_u32("GPUWATCH_CUPTI_RING_KB", GW_CRING_DATA_DEFAULT >> 10,
			GW_CRING_DATA_MIN >> 10, GW_CRING_DATA_MAX >> 10);
	g.ring_bytes = 1u << (31 - __builtin_clz(kb)) << 10;
	g.kernel_rate =
		env_u32("GPUWATCH_CUPTI_KERNEL_RATE", 20000, 0, 100000000);

	err = gw_cring_open(&g.ring, getenv("GPUWATCH_CUPTI_DIR"), g.ring_bytes,
			    GW_VERSION);
	if (err) {
		/* Nowhere to report to: do nothing at all. */
		dbg("cannot create the ring: %s", strerror(-err));
		return 1;
	}
	g.have_ring = 1;
	g.status = GW_CUPTI_ST_STARTING;
	if (gw_agg_new(&g.agg) != 0) {
		dbg("no memory for the tables");
		st = GW_CUPTI_ST_FAILED;
	} else {
		st = start_cupti();
	}
	transition(st);
	if (st == GW_CUPTI_ST_OK || st == GW_CUPTI_ST_PARTIAL) {
		err = start_thread();
		if (err)
			dbg("no summary thread (%s): summaries at exit only",
			    strerror(-err));
	}
	summary(0, 0); /* the status, at once */
	/* Registered last, after libcupti set up its own exit handlers, so
	 * that ours runs first. */
	if (pthread_atfork(NULL, NULL, after_fork_child) != 0)
		dbg("pthread_atfork failed");
	if (atexit(teardown) != 0)
		dbg("atexit failed: no final summary");
	dbg("status %u, CUPTI %u", (unsigned)st, g.cupti_version);
	return 1;
}
