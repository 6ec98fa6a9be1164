/* SPDX-License-Identifier: MIT */
/*
 * om_export.c - writes the benchmarks' simulated GPU telemetry
 * (datasets.h: the simulator read through its NVML table at 1 s ticks plus
 * 0..JITTER ms) as OpenMetrics text with timestamps, for the PromQL
 * comparison (bench/promql-compare/compare.py): one series per GPU and
 * metric, named sim_<metric> (the energy counter sim_energy_mj_total),
 * shifted so that the last tick is at END (Unix seconds).
 *
 *   bench_om_export HOURS GPUS JITTER_MS END FILE
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/datasets.h"

/* The shortest text that reads back as the same double. */
static void put_value(FILE *f, double v)
{
	char b[40];

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	fputs(strcmp(b, "nan") == 0    ? "NaN"
	      : strcmp(b, "inf") == 0  ? "+Inf"
	      : strcmp(b, "-inf") == 0 ? "-Inf"
				       : b,
	      f);
}

static unsigned long arg(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s) {
		fprintf(stderr, "bench_om_export: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct bench_dataset ds;
	unsigned long hours, gpus, jitter;
	int64_t shift, last = INT64_MIN;
	uint64_t samples = 0;
	FILE *f;

	if (argc != 6) {
		fprintf(stderr, "usage: bench_om_export HOURS GPUS JITTER_MS "
				"END FILE\n");
		return 2;
	}
	hours = arg(argv[1], "HOURS");
	gpus = arg(argv[2], "GPUS");
	jitter = arg(argv[3], "JITTER_MS");
	bench_load_sim(&ds, (unsigned)gpus, (unsigned)hours, (unsigned)jitter);
	for (size_t i = 0; i < ds.ns; i++)
		if (ds.s[i].n && ds.s[i].t[ds.s[i].n - 1] > last)
			last = ds.s[i].t[ds.s[i].n - 1];
	/* Whole seconds, so the ticks keep their jitter. */
	shift = (int64_t)arg(argv[4], "END") * 1000 - (last - last % 1000);
	f = fopen(argv[5], "w");
	if (!f) {
		fprintf(stderr, "bench_om_export: %s: %s\n", argv[5],
			strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < ds.ns; i++) {
		const struct bench_series *s = &ds.s[i];
		bool counter = strcmp(s->name, "energy_mj") == 0;

		for (size_t k = 0; k < s->n; k++) {
			int64_t t = s->t[k] + shift;

			fprintf(f, "sim_%s%s{gpu=\"%u\"} ", s->name,
				counter ? "_total" : "", s->gpu);
			put_value(f, s->v[k]);
			fprintf(f, " %" PRId64 ".%03d\n", t / 1000,
				(int)(t % 1000));
		}
		samples += s->n;
	}
	fputs("# EOF\n", f);
	if (fclose(f) != 0) {
		fprintf(stderr, "bench_om_export: writing %s failed\n",
			argv[5]);
		return 1;
	}
	printf("{\"series\": %zu, \"samples\": %" PRIu64 "}\n", ds.ns, samples);
	bench_dataset_free(&ds);
	return 0;
}
