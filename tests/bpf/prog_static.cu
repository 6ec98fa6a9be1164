/*
 * prog_static - prog_cudart_real built by nvcc with the CUDA runtime
 * linked in statically (-cudart static): no libcudart.so in the process,
 * cudaMalloc is a function of the executable, found in its .symtab (the
 * build keeps the symbol table).
 *
 *   prog_static N
 *
 * "ready <pid>", wait for a line of stdin or EOF, N calls of cudaMalloc
 * each expected to return 35 (no driver; anything else: stderr, exit 3),
 * "ready <pid>", wait for a line or EOF, exit 0.
 */
#include <cuda_runtime_api.h>

#include "fixture.h"

#define EXPECTED 35 /* cudaErrorInsufficientDriver */

int main(int argc, char **argv)
{
	unsigned long long n, i;

	if (argc != 2 || fixture_parse_u64(argv[1], 1000000, &n) != 0) {
		fprintf(stderr, "usage: %s N (0 to 1000000 calls)\n", argv[0]);
		return 2;
	}
	fixture_wait();
	for (i = 0; i < n; i++) {
		void *p = NULL;
		int rc = (int)cudaMalloc(&p, 1 << 20);

		if (rc != EXPECTED) {
			fprintf(stderr,
				"prog_static: cudaMalloc call %llu returned %d, expected %d\n",
				i + 1, rc, EXPECTED);
			return 3;
		}
	}
	fixture_wait();
	return 0;
}
