/*
 * stub_cuda.c - a stand-in for the CUDA runtime and driver libraries, for
 * the eBPF tests: real ELF symbols with the real names and signatures, so
 * the agent's uprobes attach to it as they would to NVIDIA's files, and
 * behaviour simple enough that a test knows every number the agent should
 * report.
 *
 * Built twice (tests/bpf/CMakeLists.txt):
 *   stub/libcudart.so.13  -DSTUB_CUDA_RUNTIME  the runtime API names
 *   stub/libcuda.so.1     -DSTUB_CUDA_DRIVER   the driver API names
 * each with its real SONAME.  A name lives in one library only, as in the
 * real pair, so a probe on it fires once per call.
 *
 * Behaviour:
 *   - allocations succeed and write a fresh fake device pointer (runtime:
 *     0x7f0000000000 + n * 0x100000, driver: 0x7e0000000000 + n * 0x100000,
 *     so the two never collide), except a request of STUB_CUDA_OOM_SIZE
 *     bytes, which returns 2 (cudaErrorMemoryAllocation,
 *     CUDA_ERROR_OUT_OF_MEMORY) and writes nothing;
 *   - frees, copies, memsets, launches return 0 (cudaFree(NULL) is valid in
 *     CUDA, and an unknown pointer is not checked: 0 as well);
 *   - cudaDeviceSynchronize sleeps 20 ms, so synchronisation wait is
 *     measurable; the other synchronisations return at once;
 *   - cudaGetDeviceCount reports one device; cuInit returns 0.
 *
 * Every exported function is noinline and counts itself in its own slot,
 * so no two bodies are identical and none can be folded into another by
 * identical-code folding or reached through another exported name: one
 * call, one probe hit.  Nothing here calls an exported name.
 *
 * Each library has process-wide state, like the real ones; calls from
 * several threads are not expected (the counters are not atomic).
 */
#include <stddef.h>
#include <stdint.h>

#include "fixture.h"
#include "stub_cuda.h"

#if defined(STUB_CUDA_RUNTIME) == defined(STUB_CUDA_DRIVER)
#error "define exactly one of STUB_CUDA_RUNTIME and STUB_CUDA_DRIVER"
#endif

#define STUB_API __attribute__((visibility("default"), noinline, used))

#define STUB_SYNC_SLEEP_MS 20
#define STUB_PTR_STEP	   0x100000ull

enum stub_api {
	STUB_CUDA_MALLOC,
	STUB_CUDA_MALLOC_MANAGED,
	STUB_CUDA_MALLOC_HOST,
	STUB_CUDA_FREE,
	STUB_CUDA_FREE_HOST,
	STUB_CUDA_MEMCPY,
	STUB_CUDA_MEMCPY_ASYNC,
	STUB_CUDA_MEMSET,
	STUB_CUDA_LAUNCH_KERNEL,
	STUB_CUDA_DEVICE_SYNCHRONIZE,
	STUB_CUDA_STREAM_SYNCHRONIZE,
	STUB_CUDA_GET_DEVICE_COUNT,
	STUB_CU_INIT,
	STUB_CU_MEM_ALLOC,
	STUB_CU_MEM_FREE,
	STUB_CU_MEMCPY_HTOD,
	STUB_CU_MEMCPY_DTOH,
	STUB_CU_LAUNCH_KERNEL,
	STUB_CU_CTX_SYNCHRONIZE,
	STUB_API_COUNT
};

/* The library's state: what a real runtime keeps per process. */
static struct {
	volatile unsigned long long calls[STUB_API_COUNT];
	volatile unsigned long long bytes[STUB_API_COUNT];
	unsigned long long next_ptr;
} stub;

static void count(enum stub_api api, size_t bytes)
{
	stub.calls[api]++;
	stub.bytes[api] += bytes;
}

static unsigned long long fresh_pointer(unsigned long long base)
{
	return base + stub.next_ptr++ * STUB_PTR_STEP;
}

#ifdef STUB_CUDA_RUNTIME

#define STUB_RUNTIME_BASE 0x7f0000000000ull

STUB_API int gw_stub_cudart_marker(void)
{
	return 13;
}

static int runtime_alloc(enum stub_api api, void **p, size_t n)
{
	count(api, 0);
	if (n == STUB_CUDA_OOM_SIZE)
		return STUB_CUDA_OOM;
	if (p != NULL)
		*p = (void *)(uintptr_t)fresh_pointer(STUB_RUNTIME_BASE);
	stub.bytes[api] += n;
	return 0;
}

STUB_API int cudaMalloc(void **p, size_t n)
{
	return runtime_alloc(STUB_CUDA_MALLOC, p, n);
}

STUB_API int cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
	(void)flags;
	return runtime_alloc(STUB_CUDA_MALLOC_MANAGED, p, n);
}

STUB_API int cudaMallocHost(void **p, size_t n)
{
	return runtime_alloc(STUB_CUDA_MALLOC_HOST, p, n);
}

STUB_API int cudaFree(void *p)
{
	(void)p;
	count(STUB_CUDA_FREE, 0);
	return 0;
}

STUB_API int cudaFreeHost(void *p)
{
	(void)p;
	count(STUB_CUDA_FREE_HOST, 0);
	return 0;
}

STUB_API int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	(void)dst;
	(void)src;
	(void)kind;
	count(STUB_CUDA_MEMCPY, n);
	return 0;
}

STUB_API int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind,
			     void *stream)
{
	(void)dst;
	(void)src;
	(void)kind;
	(void)stream;
	count(STUB_CUDA_MEMCPY_ASYNC, n);
	return 0;
}

STUB_API int cudaMemset(void *p, int value, size_t n)
{
	(void)p;
	(void)value;
	count(STUB_CUDA_MEMSET, n);
	return 0;
}

STUB_API int cudaLaunchKernel(const void *func, struct stub_dim3 grid,
			      struct stub_dim3 block, void **args,
			      size_t shared_mem, void *stream)
{
	(void)func;
	(void)args;
	(void)stream;
	count(STUB_CUDA_LAUNCH_KERNEL,
	      (size_t)grid.x * grid.y * grid.z * block.x * block.y * block.z +
		      shared_mem);
	return 0;
}

STUB_API int cudaDeviceSynchronize(void)
{
	count(STUB_CUDA_DEVICE_SYNCHRONIZE, 0);
	fixture_sleep_ms(STUB_SYNC_SLEEP_MS);
	return 0;
}

STUB_API int cudaStreamSynchronize(void *stream)
{
	(void)stream;
	count(STUB_CUDA_STREAM_SYNCHRONIZE, 0);
	return 0;
}

STUB_API int cudaGetDeviceCount(int *n)
{
	count(STUB_CUDA_GET_DEVICE_COUNT, 0);
	if (n != NULL)
		*n = 1;
	return 0;
}

#else /* STUB_CUDA_DRIVER */

#define STUB_DRIVER_BASE 0x7e0000000000ull

STUB_API int gw_stub_cuda_marker(void)
{
	return 1;
}

STUB_API int cuInit(unsigned int flags)
{
	(void)flags;
	count(STUB_CU_INIT, 0);
	return 0;
}

STUB_API int cuMemAlloc_v2(unsigned long long *dptr, size_t n)
{
	count(STUB_CU_MEM_ALLOC, 0);
	if (n == STUB_CUDA_OOM_SIZE)
		return STUB_CUDA_OOM;
	if (dptr != NULL)
		*dptr = fresh_pointer(STUB_DRIVER_BASE);
	stub.bytes[STUB_CU_MEM_ALLOC] += n;
	return 0;
}

STUB_API int cuMemFree_v2(unsigned long long dptr)
{
	(void)dptr;
	count(STUB_CU_MEM_FREE, 0);
	return 0;
}

STUB_API int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
	(void)dst;
	(void)src;
	count(STUB_CU_MEMCPY_HTOD, n);
	return 0;
}

STUB_API int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
	(void)dst;
	(void)src;
	count(STUB_CU_MEMCPY_DTOH, n);
	return 0;
}

STUB_API int cuLaunchKernel(void *f, unsigned int gx, unsigned int gy,
			    unsigned int gz, unsigned int bx, unsigned int by,
			    unsigned int bz, unsigned int shared_mem,
			    void *stream, void **params, void **extra)
{
	(void)f;
	(void)stream;
	(void)params;
	(void)extra;
	count(STUB_CU_LAUNCH_KERNEL,
	      (size_t)gx * gy * gz * bx * by * bz + shared_mem);
	return 0;
}

STUB_API int cuCtxSynchronize(void)
{
	count(STUB_CU_CTX_SYNCHRONIZE, 0);
	return 0;
}

#endif
