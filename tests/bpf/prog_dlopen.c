/*
 * prog_dlopen - loads libcudart.so.13 with dlopen() long after it started,
 * as Python frameworks load CUDA, then calls cudaMalloc N times.
 *
 *   prog_dlopen N
 *
 * "ready <pid>" and wait (nothing of CUDA mapped yet); dlopen by soname
 * (LD_LIBRARY_PATH decides which file), "ready <pid>" and wait; N calls of
 * cudaMalloc(1 MiB), each expected to return 0 (the stub); "ready <pid>"
 * and wait; exit 0.  A failed dlopen or dlsym exits 3, an unexpected
 * return 4, a bad argument 2.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "fixture.h"

typedef int (*cuda_malloc_fn)(void **p, size_t n);

int main(int argc, char **argv)
{
	unsigned long long n, i;
	cuda_malloc_fn cuda_malloc;
	void *lib, *sym;

	if (argc != 2 || fixture_parse_u64(argv[1], 1000000, &n) != 0) {
		fprintf(stderr, "usage: %s N (0 to 1000000 calls)\n", argv[0]);
		return 2;
	}
	fixture_wait();
	lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		fprintf(stderr, "prog_dlopen: %s\n", dlerror());
		return 3;
	}
	sym = dlsym(lib, "cudaMalloc");
	if (sym == NULL) {
		fprintf(stderr, "prog_dlopen: %s\n", dlerror());
		return 3;
	}
	*(void **)&cuda_malloc = sym;
	fixture_wait();
	for (i = 0; i < n; i++) {
		void *p = NULL;
		int rc = cuda_malloc(&p, 1 << 20);

		if (rc != 0) {
			fprintf(stderr,
				"prog_dlopen: cudaMalloc call %llu returned "
				"%d\n",
				i + 1, rc);
			return 4;
		}
	}
	fixture_wait();
	return 0;
}
