// SPDX-License-Identifier: MIT
/*
 * rw_send - pushes a generated batch through the remote_write sending half
 * (configuration, write_relabel_configs, encoder, client) to every
 * endpoint of a config file, for the integration tests with real
 * receivers (t05xx).
 *
 *   rw_send CONFIG.yaml EXPECT.jsonl [SERIES SAMPLES START_MS STEP_MS
 *           [STOP_AFTER_S]]
 *
 * CONFIG.yaml holds a remote_write: list as the agent's config file does
 * (read through the agent's own config code).  Series are
 * rwtest_gauge{gpu="i",node="n1"}, i < SERIES (default 8), with SAMPLES
 * samples each (default 120) from START_MS (default now - 1 h) every
 * STEP_MS (default 15000), value i * 1000 + k * 0.25 (exact in binary and
 * in decimal).  Each endpoint gets them relabelled by its own rules, in
 * batches of at most its max_samples_per_send, each series in time order.
 * EXPECT.jsonl gets, per endpoint, what it should now hold, one series a
 * line: {"endpoint": NAME, "metric": {...}, "timestamps": [...],
 * "values": [...]}.  STOP_AFTER_S (default: never) sets the stop flag
 * after that many seconds, which ends a send that keeps failing.  Prints
 * each endpoint's counters; exit 0 when every batch was acknowledged, 1
 * otherwise, 2 for bad arguments.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "export/rw.h"

#define MAX_SERIES 1000

static _Atomic bool stop;

static void *stopper(void *arg)
{
	struct timespec ts = { .tv_sec = *(long long *)arg };

	/* A deadline for the whole run, not a synchronisation. */
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	return NULL;
}

static int push(struct gw_rw_endpoint *ep, size_t ns, size_t np, int64_t start,
		int64_t step, FILE *expect)
{
	static struct gw_labels in[MAX_SERIES], out[MAX_SERIES];
	static bool kept[MAX_SERIES];
	const struct gw_rw_queue_config *q = gw_rw_endpoint_queue(ep);
	int64_t *t = calloc(np, sizeof(*t));
	double *v = calloc(ns * np, sizeof(*v));
	struct gw_rw_series *s = calloc(ns, sizeof(*s));
	struct gw_rw_client *cl = NULL;
	struct gw_rw_stats st;
	size_t nkept = 0, per, ok = 1;
	struct gw_buf body;

	if (!t || !v || !s || gw_rw_client_new(ep, &cl)) {
		fprintf(stderr, "rw_send: out of memory\n");
		exit(1);
	}
	for (size_t k = 0; k < np; k++)
		t[k] = start + (int64_t)k * step;
	for (size_t i = 0; i < ns; i++) {
		char text[128];
		int r;

		snprintf(text, sizeof(text), "gpu=\"%zu\",node=\"n1\"", i);
		if (gw_labels_parse(&in[i], "rwtest_gauge", text))
			exit(1);
		for (size_t k = 0; k < np; k++)
			v[i * np + k] = (double)i * 1000 + (double)k * 0.25;
		r = gw_rw_relabel(ep, &in[i], &out[i]);
		if (r < 0)
			exit(1);
		kept[i] = r == 1;
		if (!kept[i])
			gw_rw_endpoint_dropped(ep, GW_RW_DROP_RELABEL, np);
		nkept += kept[i];
	}
	/* Time slices of `per` samples for every kept series. */
	per = nkept ? q->max_samples_per_send / nkept : np;
	if (per == 0)
		per = 1;
	gw_buf_init(&body, 256u << 20);
	for (size_t k0 = 0; k0 < np && ok; k0 += per) {
		size_t n = k0 + per > np ? np - k0 : per, m = 0, raw_len = 0;

		for (size_t i = 0; i < ns; i++)
			if (kept[i])
				s[m++] = (struct gw_rw_series){
					.labels = &out[i],
					.t = t + k0,
					.v = v + i * np + k0,
					.n = n,
				};
		gw_buf_reset(&body);
		if (gw_rw_encode(s, m, &body, &raw_len)) {
			fprintf(stderr, "rw_send: encoding failed\n");
			exit(1);
		}
		ok = gw_rw_client_send(cl, body.p, body.len, raw_len,
				       (uint64_t)(m * n), &stop) == GW_RW_SENT;
	}
	for (size_t i = 0; i < ns; i++) {
		if (kept[i]) {
			fprintf(expect, "{\"endpoint\": \"%s\", \"metric\": ",
				gw_rw_endpoint_name(ep));
			gw_buf_reset(&body);
			gw_labels_json(&out[i], &body);
			fprintf(expect, "%s, \"timestamps\": [", body.p);
			for (size_t k = 0; k < np; k++)
				fprintf(expect, "%s%" PRId64, k ? ", " : "",
					t[k]);
			fprintf(expect, "], \"values\": [");
			for (size_t k = 0; k < np; k++)
				fprintf(expect, "%s%.17g", k ? ", " : "",
					v[i * np + k]);
			fprintf(expect, "]}\n");
			gw_labels_release(&out[i]);
		}
		gw_labels_release(&in[i]);
	}
	gw_rw_endpoint_stats(ep, &st);
	printf("%s sent=%" PRIu64 " failed=%" PRIu64 " retried=%" PRIu64
	       " dropped_relabel=%" PRIu64 " bytes=%" PRIu64
	       " uncompressed=%" PRIu64,
	       gw_rw_endpoint_name(ep), st.samples_sent, st.samples_failed,
	       st.samples_retried, st.samples_dropped[GW_RW_DROP_RELABEL],
	       st.bytes_sent, st.bytes_raw_sent);
	for (int f = 0; f < GW_RW_FAIL_COUNT; f++)
		printf(" %s=%" PRIu64, gw_rw_fail_name((enum gw_rw_fail)f),
		       st.failures[f]);
	for (unsigned int i = 0; i < st.ncodes; i++)
		printf(" http_%d=%" PRIu64, st.codes[i].code, st.codes[i].n);
	printf(" %s\n", ok ? "ok" : "FAILED");
	gw_buf_release(&body);
	gw_rw_client_free(cl);
	free(s);
	free(v);
	free(t);
	return ok ? 0 : 1;
}

static long long arg(int argc, char **argv, int i, long long def)
{
	char *end;
	long long x;

	if (i >= argc)
		return def;
	x = strtoll(argv[i], &end, 10);
	if (*end || end == argv[i]) {
		fprintf(stderr, "rw_send: '%s' is not a number\n", argv[i]);
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	static struct gw_config c;
	char err[GW_CONFIG_ERR_MAX];
	struct gw_rw_config *rw;
	long long ns, np, start, step, stop_after;
	pthread_t th;
	FILE *expect;
	int rc = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: rw_send CONFIG.yaml EXPECT.jsonl "
				"[SERIES SAMPLES START_MS STEP_MS]\n");
		return 2;
	}
	ns = arg(argc, argv, 3, 8);
	np = arg(argc, argv, 4, 120);
	start = arg(argc, argv, 5, (long long)time(NULL) * 1000 - 3600000);
	step = arg(argc, argv, 6, 15000);
	stop_after = arg(argc, argv, 7, 0);
	if (stop_after > 0 && pthread_create(&th, NULL, stopper, &stop_after))
		return 2;
	if (ns < 1 || ns > MAX_SERIES || np < 1 || step < 1) {
		fprintf(stderr,
			"rw_send: SERIES 1..%d, SAMPLES and STEP_MS "
			">= 1\n",
			MAX_SERIES);
		return 2;
	}
	gw_config_defaults(&c);
	if (gw_config_load_file(&c, argv[1], err, sizeof(err)) ||
	    gw_config_validate(&c, err, sizeof(err))) {
		fprintf(stderr, "rw_send: %s\n", err);
		return 2;
	}
	if (gw_config_remote_write(&c, &rw, err, sizeof(err))) {
		fprintf(stderr, "rw_send: %s\n", err);
		return 2;
	}
	expect = fopen(argv[2], "w");
	if (!expect) {
		perror(argv[2]);
		return 2;
	}
	for (size_t i = 0; i < gw_rw_config_count(rw); i++)
		rc |= push(gw_rw_config_endpoint(rw, i), (size_t)ns, (size_t)np,
			   start, step, expect);
	fclose(expect);
	gw_rw_config_free(rw);
	return rc;
}
