// SPDX-License-Identifier: MIT
/*
 * rw_encode - the cost of remote_write's encoder (export/rw_encode.c:
 * protobuf WriteRequest + snappy) on batches shaped like what an agent
 * sends, in CPU time per sample and bytes per sample (bench/README.md,
 * "remote_write encoder").
 *
 *   bench_rw_encode [GPUS] [ROUNDS]
 *
 * Series: GPUS GPUs x 40 families (the per-GPU gauges and counters), each
 * with __name__, cluster, gpu, instance, node, uuid, as pushed centrally.
 * Two shapes, both cut into requests of max_samples_per_send (2000):
 *   rollup  one sample per series per request window (1-minute rollups:
 *           many series, few samples each);
 *   raw     60 samples per series (1 s raw samples for a minute).
 * Timestamps at a 60 s or 1 s step with a few ms of jitter; values are a
 * slow random walk with 3 decimal digits, as GPU telemetry is.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/rw.h"

#define FAMILIES 40
#define PER_SEND 2000

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(const char *shape, struct gw_labels *l, size_t ns,
		size_t per_series, int64_t step, unsigned int rounds)
{
	size_t series_per_req = PER_SEND / per_series, raw_total = 0,
	       z_total = 0, samples = 0;
	int64_t *t = malloc(ns * per_series * sizeof(*t));
	double *v = malloc(ns * per_series * sizeof(*v));
	struct gw_rw_series *s = malloc(ns * sizeof(*s));
	uint64_t rng = 42;
	struct gw_buf out;
	double t0, spent;

	if (!t || !v || !s)
		exit(1);
	for (size_t i = 0; i < ns; i++) {
		double x = 100.0 + (double)(i % 97);

		for (size_t k = 0; k < per_series; k++) {
			rng = rng * 6364136223846793005ULL +
			      1442695040888963407ULL;
			t[i * per_series + k] = 1700000000000 +
						(int64_t)k * step +
						(int64_t)(rng >> 61);
			x += ((double)(rng >> 40 & 0xff) - 127.5) / 1000.0;
			v[i * per_series + k] = round(x * 1000) / 1000;
		}
		s[i] = (struct gw_rw_series){ .labels = &l[i],
					      .t = t + i * per_series,
					      .v = v + i * per_series,
					      .n = per_series };
	}
	gw_buf_init(&out, 64u << 20);
	t0 = cpu_s();
	for (unsigned int r = 0; r < rounds; r++)
		for (size_t i = 0; i < ns; i += series_per_req) {
			size_t n = i + series_per_req > ns ? ns - i
							   : series_per_req,
			       raw = 0;

			gw_buf_reset(&out);
			if (gw_rw_encode(s + i, n, &out, &raw)) {
				fprintf(stderr, "encode failed\n");
				exit(1);
			}
			raw_total += raw;
			z_total += out.len;
			samples += n * per_series;
		}
	spent = cpu_s() - t0;
	printf("%-7s %6zu series x %2zu samples: %7.1f ns/sample CPU, "
	       "%6.2f B/sample protobuf, %6.2f B/sample on the wire "
	       "(snappy %.2fx), %.2f M samples/s\n",
	       shape, ns, per_series, spent * 1e9 / (double)samples,
	       (double)raw_total / (double)samples,
	       (double)z_total / (double)samples,
	       (double)raw_total / (double)z_total,
	       (double)samples / spent / 1e6);
	gw_buf_release(&out);
	free(s);
	free(v);
	free(t);
}

int main(int argc, char **argv)
{
	unsigned int gpus = argc > 1 ? (unsigned int)atoi(argv[1]) : 8;
	unsigned int rounds = argc > 2 ? (unsigned int)atoi(argv[2]) : 200;
	size_t ns = (size_t)gpus * FAMILIES;
	struct gw_labels *l = calloc(ns, sizeof(*l));

	if (!gpus || !rounds || !l)
		return 2;
	for (size_t i = 0; i < ns; i++) {
		char name[64], text[256];

		snprintf(name, sizeof(name), "gpuwatch_gpu_metric_%02zu:1m_avg",
			 i % FAMILIES);
		snprintf(text, sizeof(text),
			 "cluster=\"train-a\",gpu=\"%zu\",instance=\"node-0042:"
			 "9400\","
			 "node=\"node-0042\",uuid=\"GPU-%08zx-1c2d-3e4f-5a6b-"
			 "7c8d9e0f1a2b\"",
			 i / FAMILIES, i / FAMILIES * 2654435761u);
		if (gw_labels_parse(&l[i], name, text))
			return 1;
	}
	run("rollup", l, ns, 1, 60000, rounds);
	run("raw", l, ns, 60, 1000, rounds / 10 ? rounds / 10 : 1);
	for (size_t i = 0; i < ns; i++)
		gw_labels_release(&l[i]);
	free(l);
	return 0;
}
