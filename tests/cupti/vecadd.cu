// SPDX-License-Identifier: MIT
/*
 * vecadd.cu - a small CUDA application for the injection tests, built with
 * nvcc.  It knows nothing about gpuwatch: whatever the injection library
 * does, this program's output and exit status must not change.
 *
 *   vecadd [check] [--launches N] [--hold]
 *       N launches of vecAdd on 1M floats (default 100), copies in and out,
 *       the result checked; prints what it did and the kernels' GPU time
 *       measured with CUDA events.  --hold: before exiting, whatever the
 *       outcome, print "ready PID" and block until stdin reaches EOF (so
 *       that a test can look at the agent while the process lives).
 *   vecadd tiny N       launch-bound: N empty kernels, one sync at the end;
 *                       prints "tiny N launches S seconds".
 *   vecadd loop N       a realistic step: N iterations of a tiled matrix
 *                       multiply (1024^3) plus a copy out; prints seconds.
 *
 * Exit status: 0 done, 2 a CUDA call failed (its name and error printed,
 * e.g. "cudaMalloc: error 35 (CUDA driver version is insufficient ...)"
 * on a machine without a driver), 3 a wrong result, 64 bad usage.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int hold;

/* Exits with rc; with --hold, first says "ready PID" and waits for EOF. */
static void finish(int rc)
{
	fflush(stdout);
	if (hold) {
		char buf[256];
		printf("ready %ld\n", (long)getpid());
		fflush(stdout);
		while (read(0, buf, sizeof(buf)) > 0)
			;
	}
	exit(rc);
}

#define CHECK(call)                                                          \
	do {                                                                 \
		cudaError_t e_ = (call);                                     \
		if (e_ != cudaSuccess) {                                     \
			printf("%s: error %d (%s)\n", #call, (int)e_,         \
			       cudaGetErrorString(e_));                      \
			finish(2);                                           \
		}                                                            \
	} while (0)

__global__ void vecAdd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void empty(void)
{
}

#define TILE 16
__global__ void matmul(const float *a, const float *b, float *c, int n)
{
	__shared__ float ta[TILE][TILE], tb[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y;
	int col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0;
	for (int t = 0; t < n / TILE; t++) {
		ta[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
		tb[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
		__syncthreads();
	}
	c[row * n + col] = acc;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long arg_count(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < 1 || v > 100000000) {
		fprintf(stderr, "vecadd: bad count '%s'\n", s);
		exit(64);
	}
	return v;
}

static int run_check(long launches)
{
	const int n = 1 << 20;
	size_t bytes = (size_t)n * sizeof(float);
	float *ha = (float *)malloc(bytes), *hb = (float *)malloc(bytes),
	      *hc = (float *)malloc(bytes);
	float *da, *db, *dc;
	cudaEvent_t e0, e1;
	float ms = 0;

	if (!ha || !hb || !hc)
		return 2;
	for (int i = 0; i < n; i++) {
		ha[i] = (float)i;
		hb[i] = (float)(2 * i);
	}
	CHECK(cudaMalloc(&da, bytes));
	CHECK(cudaMalloc(&db, bytes));
	CHECK(cudaMalloc(&dc, bytes));
	CHECK(cudaMemcpy(da, ha, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	CHECK(cudaEventRecord(e0));
	for (long l = 0; l < launches; l++)
		vecAdd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(e1));
	CHECK(cudaEventSynchronize(e1));
	CHECK(cudaEventElapsedTime(&ms, e0, e1));
	CHECK(cudaMemcpy(hc, dc, bytes, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		if (hc[i] != (float)(3 * i)) {
			printf("wrong result at %d: %g\n", i, hc[i]);
			finish(3);
		}
	printf("vecAdd launches %ld elements %d result ok\n", launches, n);
	printf("event_ms %.3f\n", ms);
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	free(ha);
	free(hb);
	free(hc);
	finish(0);
	return 0;
}

static int run_tiny(long n)
{
	double t0;

	CHECK(cudaFree(0)); /* context up before the clock starts */
	empty<<<1, 1>>>();
	CHECK(cudaDeviceSynchronize());
	t0 = now();
	for (long i = 0; i < n; i++)
		empty<<<1, 1>>>();
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	printf("tiny %ld launches %.6f seconds\n", n, now() - t0);
	return 0;
}

static int run_loop(long iters)
{
	const int n = 1024;
	size_t bytes = (size_t)n * n * sizeof(float);
	float *da, *db, *dc, *h = (float *)malloc(bytes);
	double t0;

	if (!h)
		return 2;
	CHECK(cudaMalloc(&da, bytes));
	CHECK(cudaMalloc(&db, bytes));
	CHECK(cudaMalloc(&dc, bytes));
	CHECK(cudaMemset(da, 0, bytes));
	CHECK(cudaMemset(db, 0, bytes));
	dim3 block(TILE, TILE), grid(n / TILE, n / TILE);
	matmul<<<grid, block>>>(da, db, dc, n);
	CHECK(cudaDeviceSynchronize());
	t0 = now();
	for (long i = 0; i < iters; i++) {
		matmul<<<grid, block>>>(da, db, dc, n);
		vecAdd<<<(n * n + 255) / 256, 256>>>(dc, da, db, n * n);
		if (i % 10 == 9)
			CHECK(cudaMemcpy(h, dc, bytes, cudaMemcpyDeviceToHost));
	}
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	printf("loop %ld iterations %.6f seconds\n", iters, now() - t0);
	free(h);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "check";

	if (!strcmp(mode, "tiny") && argc == 3)
		return run_tiny(arg_count(argv[2]));
	if (!strcmp(mode, "loop") && argc == 3)
		return run_loop(arg_count(argv[2]));
	if (!strcmp(mode, "check") || mode[0] == '-') {
		long launches = 100;
		for (int i = strcmp(mode, "check") ? 1 : 2; i < argc; i++) {
			if (!strcmp(argv[i], "--hold"))
				hold = 1;
			else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
				launches = arg_count(argv[++i]);
			else
				goto usage;
		}
		return run_check(launches);
	}
usage:
	fprintf(stderr, "usage: vecadd [check] [--launches N] [--hold] | "
			"tiny N | loop N\n");
	return 64;
}
