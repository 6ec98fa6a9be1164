/* SPDX-License-Identifier: MIT */
/*
 * inject.c - what the injection library costs per event inside a CUDA
 * process, measured on the CPU (no GPU needed):
 *
 *   1. per kernel record: walking an activity buffer of CUDA 13 kernel
 *      records with the real libcupti's cuptiActivityGetNextRecord and
 *      folding each into the tables (gw_agg_record), over NAMES kernel
 *      names, next to a baseline that walks the same buffer and only sums
 *      the durations - the least any consumer of the records does.  This
 *      runs on CUPTI's buffer thread, not on the thread that launches.
 *   2. per API callback that the library keeps (sync, allocation, error):
 *      the bookkeeping gw_agg_callback + gw_agg_sync do.
 *   3. one summary written to the ring (every second in the process).
 *
 * usage: bench_inject [RECORDS [NAMES]]    (defaults 2000000 and 50)
 * Exit 77 when libcupti cannot be loaded.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti_activity.h>

#include "inject/agg.h"
#include "inject/ring.h"

typedef CUptiResult (*next_fn)(uint8_t *, size_t, CUpti_Activity **);

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long arg(const char *s, long def, long lo, long hi)
{
	char *end;
	long v;

	if (!s)
		return def;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "bench_inject: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long nrec = arg(argc > 1 ? argv[1] : NULL, 2000000, 1000, 100000000);
	long nnames = arg(argc > 2 ? argv[2] : NULL, 50, 1, 1000);
	const size_t per_buf = 4096; /* records per 1 MiB-ish buffer */
	size_t bytes = per_buf * sizeof(CUpti_ActivityKernel10);
	uint8_t *buf = aligned_alloc(8, bytes);
	char(*names)[64] = calloc((size_t)nnames, sizeof(*names));
	struct gw_agg *agg = NULL;
	void *lib;
	next_fn next;
	double t0, base_ns = 0, agg_ns = 0, sum = 0;
	long done = 0;

	lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libcupti.so.12", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "bench_inject: no libcupti: %s\n", dlerror());
		return 77;
	}
	*(void **)&next = dlsym(lib, "cuptiActivityGetNextRecord");
	if (!next || !buf || !names || gw_agg_new(&agg)) {
		fprintf(stderr, "bench_inject: setup failed\n");
		return 1;
	}
	for (long i = 0; i < nnames; i++)
		snprintf(names[i], sizeof(names[i]),
			 "_Z%zukernel_%ldILi128EEvPKfPfi",
			 strlen("kernel_") + 1 +
				 (size_t)snprintf(NULL, 0, "%ld", i),
			 i);
	memset(buf, 0, bytes);
	for (size_t i = 0; i < per_buf; i++) {
		CUpti_ActivityKernel10 *k = (void *)(buf + i * sizeof(*k));

		k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k->start = 1000000 + i * 10000;
		k->end = k->start + 2000 + (i * 7919) % 50000;
		k->name = names[(i * 31) % (size_t)nnames];
		k->gridX = 256, k->gridY = 1, k->gridZ = 1;
		k->blockX = 128, k->blockY = 1, k->blockZ = 1;
		k->registersPerThread = 32;
		k->staticSharedMemory = 4096;
	}

	while (done < nrec) {
		CUpti_Activity *r = NULL;

		t0 = now_ns();
		while (next(buf, bytes, &r) == CUPTI_SUCCESS) {
			const CUpti_ActivityKernel10 *k = (const void *)r;

			sum += (double)(k->end - k->start);
		}
		base_ns += now_ns() - t0;
		r = NULL;
		t0 = now_ns();
		while (next(buf, bytes, &r) == CUPTI_SUCCESS)
			gw_agg_record(agg, r);
		agg_ns += now_ns() - t0;
		done += (long)per_buf;
	}
	printf("kernel records: %ld over %ld names\n", done, nnames);
	printf("  walk only (baseline)      %7.1f ns/record\n", base_ns / done);
	printf("  walk + fold (ours)        %7.1f ns/record   ratio %.2f\n",
	       agg_ns / done, agg_ns / base_ns);
	printf("  ours alone                %7.1f ns/record\n",
	       (agg_ns - base_ns) / done);

	t0 = now_ns();
	for (long i = 0; i < 1000000; i++) {
		gw_agg_callback(agg);
		gw_agg_sync(agg, (int)(i & 3), 1000);
	}
	printf("API callback bookkeeping    %7.1f ns/call\n",
	       (now_ns() - t0) / 1e6);

	{
		char dir[] = "/tmp/gw-bench-inject.XXXXXX";
		struct gw_cring ring;
		double w = 0;
		int n = 0;

		if (!mkdtemp(dir) ||
		    gw_cring_open(&ring, dir, 1u << 20, "bench")) {
			fprintf(stderr, "bench_inject: ring setup failed\n");
			return 1;
		}
		for (int i = 0; i < 100; i++) {
			/* every kernel changed since the last summary */
			for (long j = 0; j < nnames; j++)
				gw_agg_record(
					agg,
					(const CUpti_Activity
						 *)(void *)(buf +
							    (size_t)j *
								    sizeof(CUpti_ActivityKernel10)));
			/* nothing reads here: keep the ring from filling */
			__atomic_store_n(&ring.hdr->tail, ring.head,
					 __ATOMIC_RELEASE);
			t0 = now_ns();
			n += gw_agg_write(agg, &ring, GW_CUPTI_ST_OK, 1, 1) ==
			     0;
			w += now_ns() - t0;
		}
		printf("summary to the ring         %7.1f us (%ld kernels "
		       "changed; %d/100 fit)\n",
		       w / 100 / 1e3, nnames, n);
		gw_cring_close(&ring, 1, 0);
		rmdir(dir);
	}
	fprintf(stderr, "(checksum %g)\n", sum);
	gw_agg_free(agg);
	free(names);
	free(buf);
	return 0;
}
