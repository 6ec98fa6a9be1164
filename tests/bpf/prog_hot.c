/* SPDX-License-Identifier: MIT */
/*
 * prog_hot - a CPU-bound program with two hot functions whose work is in a
 * fixed ratio, for the CPU profiler's tests.
 *
 *   prog_hot SECONDS [WORK_A WORK_B]   (default 3 1)
 *
 * Each round calls hot_a() WORK_A times and hot_b() WORK_B times; both do
 * the same unit of work per call, so their shares of the CPU are
 * WORK_A : WORK_B.  With "syscalls" as WORK_A the program instead spends
 * its time in getppid() and write() to /dev/null (kernel frames).  It
 * prints "ready PID" once started.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UNIT 200000

static volatile unsigned long sink;

__attribute__((noinline)) void hot_a(void);
__attribute__((noinline)) void hot_b(void);
__attribute__((noinline)) void done(unsigned long x);

/* A call makes hot_a and hot_b non-leaf functions: GCC omits the frame
 * pointer of leaf functions even with -fno-omit-frame-pointer, and their
 * caller would then be missing from the frame-pointer walk. */
__attribute__((noinline)) void done(unsigned long x)
{
	sink += x;
}

__attribute__((noinline)) void hot_a(void)
{
	unsigned long x = sink;

	for (int i = 0; i < UNIT; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	done(x);
}

__attribute__((noinline)) void hot_b(void)
{
	unsigned long x = sink + 1;

	for (int i = 0; i < UNIT; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	done(x);
}

__attribute__((noinline)) static void syscalls(int fd)
{
	char buf[64];

	memset(buf, 'x', sizeof(buf));
	for (int i = 0; i < 1000; i++) {
		(void)getppid();
		if (write(fd, buf, sizeof(buf)) < 0)
			break;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10, end;
	int a = 3, b = 1, sys = 0, fd = -1;

	if (argc > 2 && strcmp(argv[2], "syscalls") == 0) {
		sys = 1;
		fd = open("/dev/null", O_WRONLY);
	} else if (argc > 3) {
		a = atoi(argv[2]);
		b = atoi(argv[3]);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	end = now() + secs;
	while (now() < end) {
		if (sys) {
			syscalls(fd);
			continue;
		}
		for (int i = 0; i < a; i++)
			hot_a();
		for (int i = 0; i < b; i++)
			hot_b();
	}
	return 0;
}
