/* SPDX-License-Identifier: MIT */
/*
 * probes_api.c - the CUDA API table of the eBPF loader (probes_int.h):
 * every runtime and driver function probed, its family, what its return
 * probe does with its arguments, the lookups probes.h offers on the
 * table, and the BPF cookie each attached symbol carries (cuda_bpf.h).
 */
#include "probes_int.h"

#include <errno.h>
#include <string.h>

#include "cuda_bpf.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* clang-format off */
#define RT GW_LIB_RUNTIME
#define DRV GW_LIB_DRIVER
#define A(n, l, f) { #n, l, GW_FAM_##f, 0, 0, 0 }
#define HOST(n, l, f) { #n, l, GW_FAM_##f, 0, GW_BPF_F_HOST, 0 }
#define COPY(n, l, k) { #n, l, GW_FAM_COPY, GW_COPY_##k, 0, 0 }
#define COPYK(n, l) \
	{ #n, l, GW_FAM_COPY, GW_COPY_DEFAULT, GW_BPF_F_KIND_ARG, 0 }
#define SET(n, l, s) { #n, l, GW_FAM_MEMSET, 0, 0, s }

/*
 * Argument order from NVIDIA's CUDA Runtime and Driver API references:
 *   alloc   (T **ptr, size_t size, ...)      cudaMalloc, cuMemAlloc_v2,
 *           cudaMallocManaged(p, size, flags), cudaMallocAsync(p, size,
 *           stream), cudaHostAlloc(p, size, flags), cuMemHostAlloc(...)
 *   free    (T *ptr, ...)                    cudaFree, cuMemFree_v2, ...
 *   copy    (dst, src, size_t count[, kind]) cudaMemcpy(dst, src, count,
 *           kind), cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount), ...
 *   memset  (dst, value, size_t count)       cudaMemset(ptr, value,
 *           count); cuMemsetD32_v2(dst, ui, N) sets N * 4 bytes
 * Other families only count calls, errors and time.
 */
const struct api gw_cuda_apis[] = {
	/* runtime */
	A(cudaMalloc, RT, ALLOC),
	A(cudaMallocManaged, RT, ALLOC),
	A(cudaMallocAsync, RT, ALLOC),
	A(cudaMallocFromPoolAsync, RT, ALLOC),
	HOST(cudaMallocHost, RT, ALLOC),
	HOST(cudaHostAlloc, RT, ALLOC),
	A(cudaFree, RT, FREE),
	A(cudaFreeAsync, RT, FREE),
	A(cudaFreeHost, RT, FREE),
	COPYK(cudaMemcpy, RT),
	COPYK(cudaMemcpyAsync, RT),
	SET(cudaMemset, RT, 0),
	SET(cudaMemsetAsync, RT, 0),
	A(cudaLaunchKernel, RT, LAUNCH),
	A(cudaLaunchCooperativeKernel, RT, LAUNCH),
	A(cudaLaunchKernelExC, RT, LAUNCH),
	A(cudaGraphLaunch, RT, LAUNCH),
	A(cudaDeviceSynchronize, RT, SYNC),
	A(cudaStreamSynchronize, RT, SYNC),
	A(cudaEventSynchronize, RT, SYNC),
	A(cudaSetDevice, RT, DEVICE),
	A(cudaGetDevice, RT, DEVICE),
	A(cudaGetDeviceCount, RT, DEVICE),
	A(cudaDeviceReset, RT, CTX),
	A(cudaStreamCreate, RT, OTHER),
	A(cudaStreamCreateWithFlags, RT, OTHER),
	A(cudaStreamCreateWithPriority, RT, OTHER),
	A(cudaStreamDestroy, RT, OTHER),
	A(cudaEventRecord, RT, EVENT),
	/* driver */
	A(cuInit, DRV, CTX),
	A(cuCtxCreate_v2, DRV, CTX),
	A(cuCtxCreate_v3, DRV, CTX),
	A(cuCtxCreate_v4, DRV, CTX),
	A(cuCtxDestroy_v2, DRV, CTX),
	A(cuDevicePrimaryCtxRetain, DRV, CTX),
	A(cuDevicePrimaryCtxRelease_v2, DRV, CTX),
	A(cuDeviceGet, DRV, DEVICE),
	A(cuDeviceGetCount, DRV, DEVICE),
	A(cuMemAlloc_v2, DRV, ALLOC),
	A(cuMemAllocManaged, DRV, ALLOC),
	A(cuMemAllocAsync, DRV, ALLOC),
	A(cuMemAllocFromPoolAsync, DRV, ALLOC),
	HOST(cuMemAllocHost_v2, DRV, ALLOC),
	HOST(cuMemHostAlloc, DRV, ALLOC),
	A(cuMemFree_v2, DRV, FREE),
	A(cuMemFreeAsync, DRV, FREE),
	A(cuMemFreeHost, DRV, FREE),
	COPY(cuMemcpy, DRV, DEFAULT),
	COPY(cuMemcpyAsync, DRV, DEFAULT),
	COPY(cuMemcpyHtoD_v2, DRV, H2D),
	COPY(cuMemcpyDtoH_v2, DRV, D2H),
	COPY(cuMemcpyDtoD_v2, DRV, D2D),
	COPY(cuMemcpyHtoDAsync_v2, DRV, H2D),
	COPY(cuMemcpyDtoHAsync_v2, DRV, D2H),
	COPY(cuMemcpyDtoDAsync_v2, DRV, D2D),
	SET(cuMemsetD8_v2, DRV, 0),
	SET(cuMemsetD16_v2, DRV, 1),
	SET(cuMemsetD32_v2, DRV, 2),
	SET(cuMemsetD8Async, DRV, 0),
	SET(cuMemsetD16Async, DRV, 1),
	SET(cuMemsetD32Async, DRV, 2),
	A(cuLaunchKernel, DRV, LAUNCH),
	A(cuLaunchKernelEx, DRV, LAUNCH),
	A(cuLaunchCooperativeKernel, DRV, LAUNCH),
	A(cuGraphLaunch, DRV, LAUNCH),
	A(cuCtxSynchronize, DRV, SYNC),
	A(cuStreamSynchronize, DRV, SYNC),
	A(cuEventSynchronize, DRV, SYNC),
	A(cuEventRecord, DRV, EVENT),
	A(cuStreamCreate, DRV, OTHER),
	A(cuStreamDestroy_v2, DRV, OTHER),
};
/* clang-format on */

#undef RT
#undef DRV
#undef A
#undef HOST
#undef COPY
#undef COPYK
#undef SET

_Static_assert(ARRAY_SIZE(gw_cuda_apis) == NAPIS, "NAPIS is the table's size");

static const char *const family_names[] = {
	[GW_FAM_ALLOC] = "alloc",   [GW_FAM_FREE] = "free",
	[GW_FAM_COPY] = "copy",	    [GW_FAM_MEMSET] = "memset",
	[GW_FAM_LAUNCH] = "launch", [GW_FAM_SYNC] = "sync",
	[GW_FAM_CTX] = "ctx",	    [GW_FAM_DEVICE] = "device",
	[GW_FAM_EVENT] = "event",   [GW_FAM_OTHER] = "other",
};

unsigned int gw_cuda_api_count(void)
{
	return NAPIS;
}

const char *gw_cuda_api_name(unsigned int api)
{
	return api < NAPIS ? gw_cuda_apis[api].name : NULL;
}

int gw_cuda_api_find(const char *name)
{
	for (unsigned int i = 0; name && i < NAPIS; i++)
		if (!strcmp(gw_cuda_apis[i].name, name))
			return (int)i;
	return -ENOENT;
}

int gw_cuda_api_is_high_rate(unsigned int api)
{
	return api < NAPIS && family_high_rate(gw_cuda_apis[api].family);
}

int gw_cuda_api_family(unsigned int api)
{
	return api < NAPIS ? gw_cuda_apis[api].family : -EINVAL;
}

unsigned int gw_cuda_api_lib(unsigned int api)
{
	return api < NAPIS ? gw_cuda_apis[api].lib : 0;
}

const char *gw_cuda_family_name(int family)
{
	if (family < 0 || (size_t)family >= ARRAY_SIZE(family_names))
		return NULL;
	return family_names[family];
}

/* What the return probe does for each family. */
static const unsigned char family_op[] = {
	[GW_FAM_ALLOC] = GW_BPF_OP_ALLOC, [GW_FAM_FREE] = GW_BPF_OP_FREE,
	[GW_FAM_COPY] = GW_BPF_OP_COPY,	  [GW_FAM_MEMSET] = GW_BPF_OP_MEMSET,
	[GW_FAM_SYNC] = GW_BPF_OP_SYNC,	  [GW_FAM_OTHER] = GW_BPF_OP_NONE,
};

/* The attach cookie of a symbol id (CALIB_SYM: the calibration probe). */
uint64_t gw_probes_sym_cookie(unsigned int sym)
{
	const struct api *a;
	unsigned int flags;

	if (sym == CALIB_SYM)
		return GW_BPF_COOKIE(GW_BPF_API_CALIB, CALIB_SYM,
				     GW_BPF_OP_NONE, 0, 0, 0);
	a = &gw_cuda_apis[sym / NVARIANTS];
	flags = a->flags;
	if (family_high_rate(a->family))
		flags |= GW_BPF_F_HIGH_RATE;
	return GW_BPF_COOKIE(sym / NVARIANTS, sym, family_op[a->family],
			     a->kind, flags, a->shift);
}
