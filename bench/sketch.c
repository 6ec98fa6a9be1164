// SPDX-License-Identifier: MIT
/*
 * bench/sketch.c - the cost of the quantile sketch and the rollups on
 * GPU-like gauges: ns per add, per merge, per encode / decode, and the
 * encoded sizes of 1-minute and 1-hour windows and of rollup chunks.
 * Built and run by bench/sketch.sh.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "store/rollup.h"
#include "store/sketch.h"

#define NVAL (1 << 20)

static uint64_t rng = 0x853c49e6748fea9bull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double unif(void)
{
	return (double)(rnd() >> 11) * 0x1.0p-53;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "bench: %s failed\n", what);
	exit(1);
}

/* The gauges: a random walk, as a real temperature or power reading is. */
static double temperature(uint64_t i)
{
	static double t = 60;

	(void)i;
	t += (double)((int)(rnd() % 3) - 1);
	if (t < 30)
		t = 30;
	if (t > 90)
		t = 90;
	return t;
}

static double power(uint64_t i)
{
	static double p = 300;

	(void)i;
	p += (unif() - 0.5) * 40;
	if (p < 100)
		p = 100;
	if (p > 700)
		p = 700;
	return round(p * 1000) / 1000;
}

static double wide(uint64_t i)
{
	(void)i;
	return exp(8 * (unif() - 0.5) * 2);
}

static void fill(double *v, size_t n, double (*gen)(uint64_t))
{
	for (size_t i = 0; i < n; i++)
		v[i] = gen(i);
}

/* Timings are the best of REPEAT runs: the machine may be shared. */
#define REPEAT 5

static double sketch_adds(const double *v)
{
	struct gw_sketch s;
	double t0, t;

	gw_sketch_init(&s);
	t0 = now_ns();
	for (size_t i = 0; i < NVAL; i++) {
		if (i % 3600 == 0)
			gw_sketch_reset(&s);
		if (gw_sketch_add(&s, v[i]))
			die("add");
	}
	t = (now_ns() - t0) / NVAL;
	gw_sketch_release(&s);
	return t;
}

static double rollup_adds(const double *v)
{
	struct gw_rollup r;
	double t0, t;

	gw_rollup_init(&r, 0);
	t0 = now_ns();
	for (size_t i = 0; i < NVAL; i++) {
		if (i % 3600 == 0)
			gw_rollup_reset(&r, (int64_t)i);
		if (gw_rollup_add(&r, (int64_t)i * 1000, v[i]))
			die("rollup add");
	}
	t = (now_ns() - t0) / NVAL;
	gw_rollup_release(&r);
	return t;
}

static void bench_add(const char *name, const double *v)
{
	double ts = INFINITY, tr = INFINITY;

	for (int k = 0; k < REPEAT; k++) {
		ts = fmin(ts, sketch_adds(v));
		tr = fmin(tr, rollup_adds(v));
	}
	printf("%-12s gw_sketch_add %6.1f ns   gw_rollup_add %6.1f ns\n", name,
	       ts, tr);
}

static size_t sketch_bytes(const double *v, size_t n, uint32_t *bins)
{
	struct gw_sketch s;
	struct gw_buf b;
	size_t len;

	gw_sketch_init(&s);
	gw_buf_init(&b, 1 << 24);
	for (size_t i = 0; i < n; i++)
		if (gw_sketch_add(&s, v[i]))
			die("add");
	if (gw_sketch_encode(&s, &b))
		die("encode");
	len = b.len;
	*bins = s.npos + s.nneg;
	gw_buf_release(&b);
	gw_sketch_release(&s);
	return len;
}

static void bench_sizes(const char *name, const double *v)
{
	uint32_t b1, b60;
	size_t m = sketch_bytes(v, 60, &b1), h = sketch_bytes(v, 3600, &b60);

	printf("%-12s 1-minute sketch %4zu bytes (%u buckets)   1-hour sketch "
	       "%5zu bytes (%u buckets)\n",
	       name, m, b1, h, b60);
}

/* Merging 60 minute sketches into an hour, and hours into a day. */
static void bench_merge(const char *name, const double *v)
{
	enum { MIN = 60, REP = 200 };
	struct gw_sketch mins[MIN], hour, day, hours[24];
	double t0, tm, th;

	for (int m = 0; m < MIN; m++) {
		gw_sketch_init(&mins[m]);
		for (int i = 0; i < 60; i++)
			if (gw_sketch_add(&mins[m], v[m * 60 + i]))
				die("add");
	}
	gw_sketch_init(&hour);
	tm = INFINITY;
	for (int k = 0; k < REPEAT; k++) {
		t0 = now_ns();
		for (int rep = 0; rep < REP; rep++) {
			gw_sketch_reset(&hour);
			for (int m = 0; m < MIN; m++)
				if (gw_sketch_merge(&hour, &mins[m]))
					die("merge");
		}
		tm = fmin(tm, (now_ns() - t0) / (REP * MIN));
	}
	for (int h = 0; h < 24; h++) {
		gw_sketch_init(&hours[h]);
		for (int i = 0; i < 3600; i++)
			if (gw_sketch_add(&hours[h], v[h * 3600 + i]))
				die("add");
	}
	gw_sketch_init(&day);
	th = INFINITY;
	for (int k = 0; k < REPEAT; k++) {
		t0 = now_ns();
		for (int rep = 0; rep < REP; rep++) {
			gw_sketch_reset(&day);
			for (int h = 0; h < 24; h++)
				if (gw_sketch_merge(&day, &hours[h]))
					die("merge");
		}
		th = fmin(th, (now_ns() - t0) / (REP * 24));
	}
	printf("%-12s merge minute->hour %6.0f ns   hour->day %6.0f ns "
	       "(day: %u buckets)\n",
	       name, tm, th, day.npos + day.nneg);
	for (int m = 0; m < MIN; m++)
		gw_sketch_release(&mins[m]);
	for (int h = 0; h < 24; h++)
		gw_sketch_release(&hours[h]);
	gw_sketch_release(&hour);
	gw_sketch_release(&day);
}

/* A day of 1-minute rollups as one chunk, and 30 days of 1-hour ones. */
static void bench_chunk(const char *name, const double *v)
{
	enum { DAYMIN = 1440, HOURS = 720, REP = 20 };
	struct gw_rollup *r = malloc(DAYMIN * sizeof(*r)), *d;
	struct gw_buf b;
	size_t n, minute_bytes;
	double t0, te, td;
	int64_t t = 1700000000000;

	if (!r)
		die("malloc");
	gw_buf_init(&b, 1 << 26);
	for (int i = 0; i < DAYMIN; i++) {
		gw_rollup_init(&r[i], t + (i + 1) * 60000);
		for (int s = 0; s < 60; s++)
			if (gw_rollup_add(&r[i], t + i * 60000 + s * 1000,
					  v[i * 60 + s]))
				die("rollup add");
	}
	te = td = INFINITY;
	for (int k = 0; k < REPEAT; k++) {
		t0 = now_ns();
		for (int rep = 0; rep < REP; rep++) {
			gw_buf_reset(&b);
			if (gw_rollup_encode(r, DAYMIN, &b))
				die("encode");
		}
		te = fmin(te, (now_ns() - t0) / (REP * DAYMIN));
		t0 = now_ns();
		for (int rep = 0; rep < REP; rep++) {
			if (gw_rollup_decode((const uint8_t *)b.p, b.len, &d,
					     &n))
				die("decode");
			gw_rollup_free_array(d, n);
		}
		td = fmin(td, (now_ns() - t0) / (REP * DAYMIN));
	}
	minute_bytes = b.len;
	for (int i = 0; i < DAYMIN; i++)
		gw_rollup_release(&r[i]);

	/* 1-hour rollups over 30 days (3600 samples each, walked on). */
	for (int h = 0; h < HOURS; h++) {
		gw_rollup_init(&r[h], t + (h + 1) * 3600000LL);
		for (int s = 0; s < 3600; s++)
			if (gw_rollup_add(&r[h], t + h * 3600000LL + s * 1000,
					  v[((size_t)h * 3600 + s) % NVAL]))
				die("rollup add");
	}
	gw_buf_reset(&b);
	if (gw_rollup_encode(r, HOURS, &b))
		die("encode");
	printf("%-12s chunk of 1440 minute rollups %6zu bytes (%.1f/rollup)"
	       "   720 hour rollups %6zu bytes (%.1f/rollup)\n"
	       "%-12s chunk encode %5.0f ns/rollup   decode %5.0f ns/rollup\n",
	       name, minute_bytes, (double)minute_bytes / DAYMIN, b.len,
	       (double)b.len / HOURS, "", te, td);
	for (int h = 0; h < HOURS; h++)
		gw_rollup_release(&r[h]);
	free(r);
	gw_buf_release(&b);
}

int main(void)
{
	static const struct {
		const char *name;
		double (*gen)(uint64_t);
	} gauges[] = {
		{ "temperature", temperature },
		{ "power", power },
		{ "wide", wide },
	};
	double *v = malloc(NVAL * sizeof(*v));

	if (!v)
		die("malloc");
	printf("values: temperature = integer random walk in 30..90, power = "
	       "random walk in 100..700 W\nwith 3 decimals, wide = "
	       "lognormal over about 7 decades\n\n");
	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
		fill(v, NVAL, gauges[g].gen);
		bench_add(gauges[g].name, v);
		bench_sizes(gauges[g].name, v);
		bench_merge(gauges[g].name, v);
		bench_chunk(gauges[g].name, v);
		printf("\n");
	}
	free(v);
	return 0;
}
