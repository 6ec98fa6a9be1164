/*
 * stub_cuda.h - the CUDA entry points the stub libraries export, with the
 * real signatures spelt in plain C types (error enums as int, handles as
 * pointers, CUdeviceptr as unsigned long long), so that the registers a
 * probe reads hold what they hold for NVIDIA's libraries.
 *
 * libcudart.so.13 (stub) exports the runtime names and
 * gw_stub_cudart_marker(); libcuda.so.1 (stub) the driver names and
 * gw_stub_cuda_marker().  The markers exist only in the stubs: a program
 * linked with -z now against them cannot start on the real libraries.
 */
#ifndef GW_TEST_BPF_STUB_CUDA_H
#define GW_TEST_BPF_STUB_CUDA_H

#include <stddef.h>

/* An allocation of exactly this many bytes fails as out of memory. */
#define STUB_CUDA_OOM_SIZE ((size_t)0xDEAD0000DEADull)
/* cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY. */
#define STUB_CUDA_OOM 2

/* cudaMemcpyKind */
#define STUB_CUDA_H2D 1
#define STUB_CUDA_D2H 2
#define STUB_CUDA_D2D 3

/* dim3 as the runtime passes it: three unsigned ints, by value. */
struct stub_dim3 {
	unsigned int x, y, z;
};

/* Runtime API (libcudart.so.13). */
int gw_stub_cudart_marker(void);
int cudaMalloc(void **p, size_t n);
int cudaMallocManaged(void **p, size_t n, unsigned int flags);
int cudaMallocHost(void **p, size_t n);
int cudaFree(void *p);
int cudaFreeHost(void *p);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind,
		    void *stream);
int cudaMemset(void *p, int value, size_t n);
int cudaLaunchKernel(const void *func, struct stub_dim3 grid,
		     struct stub_dim3 block, void **args, size_t shared_mem,
		     void *stream);
int cudaDeviceSynchronize(void);
int cudaStreamSynchronize(void *stream);
int cudaGetDeviceCount(int *n);

/* Driver API (libcuda.so.1). */
int gw_stub_cuda_marker(void);
int cuInit(unsigned int flags);
int cuMemAlloc_v2(unsigned long long *dptr, size_t n);
int cuMemFree_v2(unsigned long long dptr);
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n);
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n);
int cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz,
		   unsigned int bx, unsigned int by, unsigned int bz,
		   unsigned int shared_mem, void *stream, void **params,
		   void **extra);
int cuCtxSynchronize(void);

#endif /* GW_TEST_BPF_STUB_CUDA_H */
