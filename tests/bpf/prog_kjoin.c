/*
 * prog_kjoin - a CUDA application with the injection library, for the
 * launch call paths joined with CUPTI's kernels (t2111).  It loads
 * libgpuwatch_cupti.so the way the driver does (CUPTI_INJECT, with the
 * fake libcupti at FAKE_CUPTI playing CUPTI and the driver), runs on the
 * stub libraries (LD_LIBRARY_PATH) so that the agent's launch probes fire,
 * and plays:
 *
 *   1. cuModuleGetFunction hands out the CUfunction GEMM_FUNC for
 *      _Z4gemmILi128EEvPKfS1_Pfiii; one kernel record of each kernel
 *      (vecAdd 10 us, gemm 2 ms) reaches the ring.  "ready PID", wait.
 *   2. N_VEC cudaLaunchKernel of the host stub _Z6vecAddPfS_S_i (defined
 *      here, as nvcc defines one per kernel) from launch_vecadd(), and
 *      N_GEMM cuLaunchKernel(GEMM_FUNC) from launch_gemm(), each with its
 *      kernel record.  "ready PID", wait, exit 0.
 *
 * Exit status: 0, 1 a call failed, 77 a library is missing.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "fake_cupti.h" /* the CUDA headers' own declarations */
#include "fixture.h"

/* stub_cuda.h's markers (its other declarations are the CUDA headers'). */
int gw_stub_cudart_marker(void);
int gw_stub_cuda_marker(void);

#define N_VEC	  3200
#define N_GEMM	  1600
#define GEMM	  "_Z4gemmILi128EEvPKfS1_Pfiii"
#define VECADD	  "_Z6vecAddPfS_S_i"
#define GEMM_FUNC 0x7f3000001000ull

static struct fake_cupti fc;

/* The host stub nvcc would emit for __global__ void vecAdd(float *,
 * float *, float *, int): cudaLaunchKernel's func. */
void vecadd_stub(void) __asm__(VECADD);
__attribute__((noinline, used)) void vecadd_stub(void)
{
	__asm__ volatile("");
}

static const struct fake_cupti_kernel vecadd = {
	.name = VECADD,
	.grid = { 4096, 1, 1 },
	.block = { 256, 1, 1 },
	.registers = 16,
	.duration_ns = 10000,
};
static const struct fake_cupti_kernel gemm = {
	.name = GEMM,
	.grid = { 64, 64, 1 },
	.block = { 128, 1, 1 },
	.registers = 128,
	.duration_ns = 2000000,
};

static void check(const char *what, int ok)
{
	if (!ok) {
		fprintf(stderr, "prog_kjoin: %s failed\n", what);
		exit(1);
	}
}

__attribute__((noinline)) static void launch_vecadd(void)
{
	dim3 one = { 1, 1, 1 };

	for (int i = 0; i < N_VEC; i++) {
		check("cudaLaunchKernel",
		      cudaLaunchKernel((const void *)vecadd_stub, one, one,
				       NULL, 0, NULL) == 0);
		check("push vecAdd",
		      fc.push_kernel(&vecadd) == FAKE_CUPTI_QUEUED);
	}
}

__attribute__((noinline)) static void launch_gemm(void)
{
	for (int i = 0; i < N_GEMM; i++) {
		check("cuLaunchKernel",
		      cuLaunchKernel((CUfunction)(uintptr_t)GEMM_FUNC, 1, 1, 1,
				     1, 1, 1, 0, NULL, NULL, NULL) == 0);
		check("push gemm", fc.push_kernel(&gemm) == FAKE_CUPTI_QUEUED);
	}
}

int main(void)
{
	const char *fake = getenv("FAKE_CUPTI"),
		   *inject = getenv("CUPTI_INJECT");
	CUfunction f = (CUfunction)(uintptr_t)GEMM_FUNC;
	cuModuleGetFunction_params mp = { &f, NULL, GEMM };
	void (*init)(void);
	void *lib;

	if (!fake || !*fake || !inject || !*inject) {
		fprintf(stderr,
			"prog_kjoin: set FAKE_CUPTI and CUPTI_INJECT\n");
		return 77;
	}
	if (gw_stub_cudart_marker() != 13 || gw_stub_cuda_marker() != 1)
		return 77;
	if (setenv("GPUWATCH_CUPTI_LIB", fake, 1) ||
	    setenv("GPUWATCH_CUPTI_KERNEL_RATE", "10000000", 0))
		return 1;
	if (fake_cupti_open(&fc, fake)) {
		fprintf(stderr, "prog_kjoin: %s\n", dlerror());
		return 77;
	}
	lib = dlopen(inject, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "prog_kjoin: %s\n", dlerror());
		return 77;
	}
	*(void **)&init = dlsym(lib, "InitializeInjection");
	check("InitializeInjection lookup", init != NULL);
	init();
	(void)fc.context_create(0);
	fc.api_call_params(CUPTI_CB_DOMAIN_DRIVER_API,
			   CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, 0, &mp,
			   NULL);
	check("push vecAdd", fc.push_kernel(&vecadd) == FAKE_CUPTI_QUEUED);
	check("push gemm", fc.push_kernel(&gemm) == FAKE_CUPTI_QUEUED);
	fixture_wait();
	launch_vecadd();
	launch_gemm();
	fixture_wait();
	return 0;
}
