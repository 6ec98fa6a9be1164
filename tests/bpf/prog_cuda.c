/*
 * prog_cuda - runs a script of CUDA calls against whichever libcudart.so.13
 * and libcuda.so.1 the dynamic loader finds; the eBPF tests run it with
 * LD_LIBRARY_PATH set to the stub libraries (it has no rpath on purpose, so
 * the loader's own search decides, as for a real application).
 *
 *   prog_cuda WORD [ARG...] ...
 *
 * Words (sizes and counts are decimal or 0x hexadecimal):
 *   malloc SIZE       cudaMalloc; the pointer joins the pointer list
 *   managed SIZE      cudaMallocManaged; joins the list
 *   cumalloc SIZE     cuMemAlloc_v2; joins the list
 *   free I            cudaFree of the I-th pointer of the list (from 0)
 *   cufree I          cuMemFree_v2 of the I-th pointer
 *   memcpy SIZE KIND  cudaMemcpy, KIND h2d | d2h | d2d (kind 1, 2, 3)
 *   memset SIZE       cudaMemset
 *   cuh2d SIZE        cuMemcpyHtoD_v2
 *   cud2h SIZE        cuMemcpyDtoH_v2
 *   launch N          N calls of cudaLaunchKernel
 *   culaunch N        N calls of cuLaunchKernel
 *   sync              cudaDeviceSynchronize (20 ms in the stub)
 *   ssync             cudaStreamSynchronize
 *   cusync            cuCtxSynchronize
 *   cuinit            cuInit(0)
 *   oom               cudaMalloc of 0xDEAD0000DEAD bytes, must return 2
 *   cuoom             cuMemAlloc_v2 of 0xDEAD0000DEAD bytes, must return 2
 *   wait              print "ready <pid>", wait for a line of stdin or EOF
 *   sleep MS          sleep MS milliseconds
 *   exit CODE         exit with CODE
 *   kill SIG          raise signal SIG (exits 5 if the process survives it)
 *   threads N         start N threads named "gw-worker" that sleep until
 *                     the process ends (CUDA programs are multi-threaded:
 *                     the last thread to exit need not be the main one)
 *
 * Every pointer list index is the order of successful allocations of any
 * kind; frees may come in any order.  Every call must return what the stub
 * returns (0, or 2 for oom/cuoom): otherwise the program says so on stderr
 * and exits 4.  A bad script exits 2.  It prints where cudaMalloc and
 * cuMemAlloc_v2 were found on stderr at start.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "fixture.h"
#include "stub_cuda.h"

#define MAX_POINTERS 4096
#define MAX_REPEAT   10000000ull
#define MAX_BYTES    (1ull << 60)
#define MAX_THREADS  64

struct script {
	int argc;
	char **argv;
	int pos;
	unsigned long long ptrs[MAX_POINTERS];
	int nptrs;
};

static void die(int code, const char *what, const char *detail)
{
	fprintf(stderr, "prog_cuda: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	fflush(stdout);
	exit(code);
}

static void check(const char *call, int got, int want)
{
	if (got != want) {
		fprintf(stderr, "prog_cuda: %s returned %d, expected %d\n",
			call, got, want);
		exit(4);
	}
}

static unsigned long long arg(struct script *s, unsigned long long max)
{
	unsigned long long v;

	if (s->pos >= s->argc)
		die(2, "missing argument after", s->argv[s->pos - 1]);
	if (fixture_parse_u64(s->argv[s->pos], max, &v) != 0)
		die(2, "bad number", s->argv[s->pos]);
	s->pos++;
	return v;
}

static void keep(struct script *s, unsigned long long p)
{
	if (s->nptrs >= MAX_POINTERS)
		die(2, "too many allocations", NULL);
	s->ptrs[s->nptrs++] = p;
}

static unsigned long long pointer(struct script *s)
{
	unsigned long long i = arg(s, MAX_POINTERS);

	if (i >= (unsigned long long)s->nptrs)
		die(2, "no such pointer index", s->argv[s->pos - 1]);
	return s->ptrs[i];
}

static int kind(struct script *s)
{
	const char *k;

	if (s->pos >= s->argc)
		die(2, "missing copy kind", NULL);
	k = s->argv[s->pos++];
	if (strcmp(k, "h2d") == 0)
		return STUB_CUDA_H2D;
	if (strcmp(k, "d2h") == 0)
		return STUB_CUDA_D2H;
	if (strcmp(k, "d2d") == 0)
		return STUB_CUDA_D2D;
	die(2, "copy kind must be h2d, d2h or d2d", k);
	return 0;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void start_threads(unsigned long long n)
{
	for (unsigned long long i = 0; i < n; i++) {
		pthread_t t;
		int r = pthread_create(&t, NULL, worker, NULL);

		if (r != 0)
			die(2, "pthread_create", strerror(r));
		pthread_setname_np(t, "gw-worker");
		pthread_detach(t);
	}
}

static void report_origin(const char *name, void *fn)
{
	Dl_info info;

	if (dladdr(fn, &info) != 0 && info.dli_fname != NULL)
		fprintf(stderr, "prog_cuda: %s from %s\n", name,
			info.dli_fname);
}

static void step(struct script *s, const char *w)
{
	static char host[64];
	struct stub_dim3 one = { 1, 1, 1 };
	unsigned long long n, i, dptr;
	void *p;

	if (strcmp(w, "malloc") == 0) {
		n = arg(s, MAX_BYTES);
		p = NULL;
		check("cudaMalloc", cudaMalloc(&p, n), 0);
		keep(s, (uintptr_t)p);
	} else if (strcmp(w, "managed") == 0) {
		n = arg(s, MAX_BYTES);
		p = NULL;
		check("cudaMallocManaged", cudaMallocManaged(&p, n, 1), 0);
		keep(s, (uintptr_t)p);
	} else if (strcmp(w, "cumalloc") == 0) {
		n = arg(s, MAX_BYTES);
		dptr = 0;
		check("cuMemAlloc_v2", cuMemAlloc_v2(&dptr, n), 0);
		keep(s, dptr);
	} else if (strcmp(w, "free") == 0) {
		check("cudaFree", cudaFree((void *)(uintptr_t)pointer(s)), 0);
	} else if (strcmp(w, "cufree") == 0) {
		check("cuMemFree_v2", cuMemFree_v2(pointer(s)), 0);
	} else if (strcmp(w, "memcpy") == 0) {
		int k;

		n = arg(s, MAX_BYTES);
		k = kind(s);
		check("cudaMemcpy",
		      cudaMemcpy((void *)(uintptr_t)0x7f00000000ull, host, n,
				 k),
		      0);
	} else if (strcmp(w, "memset") == 0) {
		n = arg(s, MAX_BYTES);
		check("cudaMemset",
		      cudaMemset((void *)(uintptr_t)0x7f00000000ull, 0, n), 0);
	} else if (strcmp(w, "cuh2d") == 0) {
		n = arg(s, MAX_BYTES);
		check("cuMemcpyHtoD_v2",
		      cuMemcpyHtoD_v2(0x7e00000000ull, host, n), 0);
	} else if (strcmp(w, "cud2h") == 0) {
		n = arg(s, MAX_BYTES);
		check("cuMemcpyDtoH_v2",
		      cuMemcpyDtoH_v2(host, 0x7e00000000ull, n), 0);
	} else if (strcmp(w, "launch") == 0) {
		n = arg(s, MAX_REPEAT);
		for (i = 0; i < n; i++)
			check("cudaLaunchKernel",
			      cudaLaunchKernel(host, one, one, NULL, 0, NULL),
			      0);
	} else if (strcmp(w, "culaunch") == 0) {
		n = arg(s, MAX_REPEAT);
		for (i = 0; i < n; i++)
			check("cuLaunchKernel",
			      cuLaunchKernel(host, 1, 1, 1, 1, 1, 1, 0, NULL,
					     NULL, NULL),
			      0);
	} else if (strcmp(w, "sync") == 0) {
		check("cudaDeviceSynchronize", cudaDeviceSynchronize(), 0);
	} else if (strcmp(w, "ssync") == 0) {
		check("cudaStreamSynchronize", cudaStreamSynchronize(NULL), 0);
	} else if (strcmp(w, "cusync") == 0) {
		check("cuCtxSynchronize", cuCtxSynchronize(), 0);
	} else if (strcmp(w, "cuinit") == 0) {
		check("cuInit", cuInit(0), 0);
	} else if (strcmp(w, "oom") == 0) {
		p = NULL;
		check("cudaMalloc(0xDEAD0000DEAD)",
		      cudaMalloc(&p, STUB_CUDA_OOM_SIZE), STUB_CUDA_OOM);
	} else if (strcmp(w, "cuoom") == 0) {
		dptr = 0;
		check("cuMemAlloc_v2(0xDEAD0000DEAD)",
		      cuMemAlloc_v2(&dptr, STUB_CUDA_OOM_SIZE), STUB_CUDA_OOM);
	} else if (strcmp(w, "threads") == 0) {
		start_threads(arg(s, MAX_THREADS));
	} else if (strcmp(w, "wait") == 0) {
		fixture_wait();
	} else if (strcmp(w, "sleep") == 0) {
		fixture_sleep_ms(arg(s, 3600000));
	} else if (strcmp(w, "exit") == 0) {
		n = arg(s, 255);
		fflush(stdout);
		exit((int)n);
	} else if (strcmp(w, "kill") == 0) {
		n = arg(s, 64);
		fflush(stdout);
		raise((int)n);
		die(5, "survived signal", s->argv[s->pos - 1]);
	} else {
		die(2, "unknown word", w);
	}
}

int main(int argc, char **argv)
{
	static struct script s;

	/* Both return constants; with -z now a missing one stops the start. */
	if (gw_stub_cudart_marker() != 13 || gw_stub_cuda_marker() != 1)
		die(2, "not running on the stub libraries", NULL);
	report_origin("cudaMalloc", (void *)cudaMalloc);
	report_origin("cuMemAlloc_v2", (void *)cuMemAlloc_v2);

	s.argc = argc;
	s.argv = argv;
	s.pos = 1;
	while (s.pos < s.argc) {
		const char *w = s.argv[s.pos++];

		step(&s, w);
	}
	fflush(stdout);
	return 0;
}
