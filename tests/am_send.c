// SPDX-License-Identifier: MIT
/*
 * am_send.c - delivers alerts given on the command line to an Alertmanager
 * through src/export/alertmanager.c, for the integration tests (t041x).
 *
 *   am_send [-s STARTS_MS] [-g GENERATOR_URL] URL WAIT_S \
 *           STATE LABELS ANNOTATIONS [STATE LABELS ANNOTATIONS...]
 *
 * STATE is "firing" (endsAt one hour ahead) or "resolved" (endsAt now);
 * LABELS and ANNOTATIONS are JSON objects.  Waits up to WAIT_S seconds for
 * everything to be accepted (retrying with backoff between 0.1 and 1 s
 * while the Alertmanager is down), then stops with a 1 s deadline.  Prints
 * the counters; exits 0 when every alert was accepted, 1 when not, 2 on a
 * usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "export/alertmanager.h"

#define ALERTS_MAX 256

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int usage(void)
{
	fprintf(stderr, "usage: am_send [-s STARTS_MS] [-g GENERATOR_URL] URL "
			"WAIT_S STATE LABELS ANNOTATIONS...\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct gw_am_opts o = { .sz = sizeof(o),
				.backoff_min_s = 0.1,
				.backoff_max_s = 1.0,
				.timeout_s = 2.0 };
	static struct gw_am_alert a[ALERTS_MAX];
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	struct gw_am_target_stats st;
	int64_t now = real_ms(), starts = now;
	const char *gen = NULL, *url;
	unsigned long long v;
	struct gw_am *am = NULL;
	double wait_s, until;
	size_t n = 0;
	int i = 1, r;

	signal(SIGPIPE, SIG_IGN);
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "-s") &&
		    !gw_parse_uint(argv[i + 1], 0, INT64_MAX, &v))
			starts = (int64_t)v;
		else if (!strcmp(argv[i], "-g"))
			gen = argv[i + 1];
		else
			return usage();
	}
	if (argc - i < 5 || (argc - i - 2) % 3 ||
	    (argc - i - 2) / 3 > ALERTS_MAX)
		return usage();
	url = argv[i];
	if (gw_parse_double(argv[i + 1], 0, 3600, &wait_s))
		return usage();
	for (i += 2; i < argc; i += 3, n++) {
		int firing = !strcmp(argv[i], "firing");

		if (!firing && strcmp(argv[i], "resolved"))
			return usage();
		a[n] = (struct gw_am_alert){
			.labels = argv[i + 1],
			.annotations = argv[i + 2],
			.starts_ms = starts,
			.ends_ms = firing ? now + 3600 * 1000 : now,
			.generator_url = gen,
		};
	}

	r = gw_am_new(&url, 1, &o, &am);
	if (r) {
		fprintf(stderr, "am_send: %s: %s\n", url, strerror(-r));
		return 2;
	}
	if (gw_am_send(am, a, n))
		fprintf(stderr, "am_send: alerts dropped on queueing\n");
	until = mono_s() + wait_s;
	for (;;) {
		gw_am_stats(am, &st, 1);
		if (!st.queued || mono_s() > until)
			break;
		nanosleep(&tick, NULL);
	}
	gw_am_free(am, mono_s() + 1.0);
	printf("sent=%" PRIu64 " posts_failed=%" PRIu64 " dropped=%" PRIu64
	       " queued=%" PRIu64 "\n",
	       st.sent, st.posts_failed, st.dropped, st.queued);
	return !st.queued && !st.dropped && st.sent ? 0 : 1;
}
