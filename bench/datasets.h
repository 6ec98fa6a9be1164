/* SPDX-License-Identifier: MIT */
/*
 * datasets.h - the benchmarks' data: simulated GPU telemetry read through
 * the simulator's NVML function table at 1 s ticks (with a few ms of
 * collector jitter), and a real DCGM trace from a CSV (bench/data/, see its
 * SOURCES.md).  Each series is one metric of one GPU.
 */
#ifndef GW_BENCH_DATASETS_H
#define GW_BENCH_DATASETS_H

#include <stddef.h>
#include <stdint.h>

struct bench_series {
	char name[48]; /* metric, e.g. "temp_c" or "GPU_TEMP" */
	unsigned gpu;
	size_t n, cap;
	int64_t *t; /* ms */
	double *v;
};

struct bench_dataset {
	const char *name;
	struct bench_series *s;
	size_t ns;
};

/* GPUS simulated H200s for HOURS, 1 s ticks plus 0..JITTER ms. */
void bench_load_sim(struct bench_dataset *ds, unsigned gpus, unsigned hours,
		    unsigned jitter);
/* The DCGM "wide" CSV: one row per (time, gpu), one column per field. */
void bench_load_dcgm(struct bench_dataset *ds, const char *path);
void bench_dataset_free(struct bench_dataset *ds);

#endif
