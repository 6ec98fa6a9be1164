/* SPDX-License-Identifier: MIT */
/*
 * prog_jit - a stand-in for a JIT (or CPython 3.12 with -X perf): it
 * copies a small loop of machine code into anonymous executable memory,
 * names it in /tmp/perf-PID.map as a JIT does ("ADDR SIZE name"), and
 * spends its CPU there.
 *
 *   prog_jit SECONDS
 *
 * Prints "ready PID" once the map is written.  x86-64 only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* mov rcx, 2000000; 1: dec rcx; jnz 1b; ret */
static const unsigned char code[] = {
	0x48, 0xb9, 0x80, 0x84, 0x1e, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3,
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 10);
	char path[64];
	void (*fn)(void);
	unsigned char *p;
	FILE *f;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(p + 64, code, sizeof(code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "%lx %zx py::train_step:/app/train.py\n",
		(unsigned long)(p + 64), sizeof(code));
	fclose(f);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	fn = (void (*)(void))(void *)(p + 64);
	while (now() < end)
		fn();
	unlink(path);
	return 0;
}
