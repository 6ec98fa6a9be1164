/*
 * fixture.h - the handshake shared by the eBPF test programs.
 *
 * A test program prints "ready <pid>" on stdout (flushed) whenever it
 * reaches a point where the test may look at /metrics, then blocks reading
 * stdin until it gets a line or end of file.  The test scripts (see
 * tests/bpf/lib.sh) give it a FIFO as stdin and write one line to let it go
 * on to its next step; by hand, `echo | prog ...` or a terminal works too.
 * Once stdin has reached end of file every later wait returns at once.
 *
 * Header-only (static functions) so that prog_static.cu, built by nvcc as
 * C++, shares it with the C programs.  Not thread safe; the programs have
 * one thread.
 */
#ifndef GW_TEST_BPF_FIXTURE_H
#define GW_TEST_BPF_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Prints "ready <pid>" and waits for one line of stdin, or its end. */
static inline void fixture_wait(void)
{
	char line[256];

	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		size_t n = 0;

		while (line[n] != '\0')
			n++;
		/* A line longer than the buffer is read to its end. */
		if (n > 0 && line[n - 1] == '\n')
			return;
	}
}

/*
 * Parses a whole decimal (or 0x-prefixed hexadecimal) number into *out.
 * Returns 0, or -EINVAL when s is empty, has trailing characters, is
 * negative, or is above max.
 */
static inline int fixture_parse_u64(const char *s, unsigned long long max,
				    unsigned long long *out)
{
	char *end = NULL;
	unsigned long long v;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Sleeps at least ms milliseconds of CLOCK_MONOTONIC, across signals. */
static inline void fixture_sleep_ms(unsigned long long ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(ms / 1000);
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
	       EINTR)
		;
}

#endif /* GW_TEST_BPF_FIXTURE_H */
