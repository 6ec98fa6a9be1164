/*
 * prog_cudart_real - calls cudaMalloc of NVIDIA's own libcudart.so.13
 * exactly N times on a machine without a CUDA driver, where each call
 * returns 35 (cudaErrorInsufficientDriver).
 *
 *   prog_cudart_real N
 *
 * Prints "ready <pid>" and waits for a line of stdin (or EOF) before the
 * first call, so that a test can let the agent attach first; makes the N
 * calls; prints "ready <pid>" again and waits for a line (or EOF) while the
 * test reads the metrics; exits 0.
 * A call returning anything but 35 is reported on stderr and the program
 * exits 3 at once (a driver is installed, or the runtime changed); a bad
 * argument exits 2.
 *
 * Linked against the toolkit's libcudart.so.13 with an rpath to its
 * folder.  prog_static.cu is the same program with cudart linked in.
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
				"prog_cudart_real: cudaMalloc call %llu "
				"returned %d, expected %d\n",
				i + 1, rc, EXPECTED);
			return 3;
		}
	}
	fixture_wait();
	return 0;
}
