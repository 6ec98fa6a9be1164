/* SPDX-License-Identifier: MIT */
/*
 * The remote_write queue over a real store (SQLite, in a temporary
 * directory) with a fake clock, and a recording sink standing in for the
 * encoder and client: what leaves, in which order, under which names,
 * across an outage and a restart, and what is counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/rw_queue.h"
#include "query/promql.h"
#include "store/store.h"

#define T0     1764547200000LL /* 2025-12-01 00:00:00 UTC */
#define MINUTE 60000
#define MAXREC 200000

struct rec {
	char key[256];
	int64_t t;
	double v;
};

struct fx {
	char dir[64];
	char state[96];
	struct gw_store *s;
	struct gw_store_opts so;
	int64_t now;
	bool down; /* the sink answers STOPPED, as a client does at shutdown
		      while its endpoint is unreachable */
	bool refuse;
	struct rec *r;
	size_t n;
	size_t batches;
	uint64_t aged;
};

static int64_t fake_now(void *ctx)
{
	return ((struct fx *)ctx)->now;
}

static enum gw_rw_outcome sink_send(void *ctx, const struct gw_rw_series *s,
				    size_t n, uint64_t samples,
				    const _Atomic bool *stop)
{
	struct fx *f = ctx;
	uint64_t count = 0;

	(void)stop;
	if (f->down)
		return GW_RW_STOPPED;
	if (f->refuse)
		return GW_RW_REFUSED;
	for (size_t i = 0; i < n; i++) {
		struct gw_buf key;

		gw_buf_init(&key, 4096);
		assert_int_equal(gw_labels_key(s[i].labels, &key), 0);
		for (size_t k = 0; k < s[i].n; k++) {
			struct rec *r = &f->r[f->n++];

			assert_true(f->n < MAXREC);
			if (k)
				assert_true(s[i].t[k] > s[i].t[k - 1]);
			snprintf(r->key, sizeof(r->key), "%s", key.p);
			r->t = s[i].t[k];
			r->v = s[i].v[k];
			count++;
		}
		gw_buf_release(&key);
	}
	assert_int_equal(count, samples);
	assert_true(samples <= 50);
	f->batches++;
	return GW_RW_SENT;
}

static void sink_aged(void *ctx, uint64_t n)
{
	((struct fx *)ctx)->aged += n;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	f->r = calloc(MAXREC, sizeof(*f->r));
	assert_non_null(f->r);
	snprintf(f->dir, sizeof(f->dir), "/tmp/gw-rwq-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->state, sizeof(f->state), "%s/rw.state", f->dir);
	gw_store_opts_defaults(&f->so);
	f->so.dir = f->dir;
	f->so.now = fake_now;
	f->so.now_ctx = f;
	f->now = T0;
	assert_int_equal(gw_store_open(&f->s, &f->so, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	gw_store_close(f->s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f->r);
	free(f);
	return 0;
}

static struct gw_rw_queue *new_queue(struct fx *f, enum gw_rw_policy policy,
				     const char *const *raw, size_t nraw)
{
	static const char *const ext[] = { "instance=node-1", "cluster=c1" };
	struct gw_rw_queue_opts o = {
		.sz = sizeof(o),
		.name = "central",
		.url = "http://127.0.0.1:1/api/v1/write",
		.state_path = f->state,
		.q = gw_store_queryable(f->s),
		.sink = { .ctx = f, .send = sink_send, .aged_out = sink_aged },
		.policy = policy,
		.external = ext,
		.nexternal = 2,
		.raw = raw,
		.nraw = nraw,
		.max_samples_per_send = 50,
		.events = true,
		.now = fake_now,
		.now_ctx = f,
	};
	struct gw_rw_queue *q;
	char err[256];

	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
	return q;
}

/* Appends one sample per second from t0 to t1 (exclusive) of a gauge
 * and a counter on two GPUs. */
static void feed(struct fx *f, int64_t t0, int64_t t1)
{
	for (int64_t t = t0; t < t1; t += 1000) {
		for (int g = 0; g < 2; g++) {
			char l[64];
			double x = (double)(t - T0) / 1000.0;

			snprintf(l, sizeof(l), "gpu=\"%d\",uuid=\"GPU-%d\"", g,
				 g);
			assert_int_equal(
				gw_store_append(
					f->s,
					"gpuwatch_gpu_temperature_celsius", l,
					t, 40 + g + fmod(x, 7)),
				0);
			assert_int_equal(
				gw_store_append(
					f->s,
					"gpuwatch_gpu_energy_joules_total", l,
					t, 100 * x + g),
				0);
		}
		f->now = t + 1;
	}
}

/* Steps until nothing is due. */
static void drain(struct gw_rw_queue *q);

/* A queue of the rollup policy at 3 significant digits, into the sink,
 * for the precision tests (which add to it). */
static struct gw_rw_queue_opts precision_opts(struct fx *f)
{
	return (struct gw_rw_queue_opts){
		.sz = sizeof(struct gw_rw_queue_opts),
		.name = "central",
		.url = "http://127.0.0.1:1/api/v1/write",
		.q = gw_store_queryable(f->s),
		.sink = { .ctx = f, .send = sink_send },
		.now = fake_now,
		.now_ctx = f,
		.precision = 3,
	};
}

/* The edge policy's precision and a process's rollups: a gauge's :1m_avg
 * and :1m_stddev keep 3 significant digits (max, 102, has no more; the
 * gauge has no step, test_precision_steps has those); a series
 * with a pid label leaves as the rollups asked for only, a GPU's as all
 * five. */
static void test_precision_process(void **state)
{
	static const char *const ext[] = { "instance=node-1" };
	struct fx *f = *state;
	struct gw_rw_queue_opts o = precision_opts(f);
	struct gw_rw_queue *q;
	char err[256];
	size_t avg = 0, max = 0, pmin = 0, pavg = 0, gmin = 0, gcount = 0;
	unsigned int mask;

	o.external = ext;
	o.nexternal = 1;
	o.process_outputs = (1u << GW_RW_OUT_AVG) | (1u << GW_RW_OUT_MAX);
	f->now = T0;
	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
	for (int64_t t = T0; t < T0 + 3 * MINUTE; t += 1000) {
		double x = (double)((t - T0) / 1000 % 7) / 3; /* 1/3 steps */

		assert_int_equal(gw_store_append(f->s, "app_tokens_per_second",
						 "gpu=\"0\"", t, 100 + x),
				 0);
		assert_int_equal(
			gw_store_append(
				f->s, "gpuwatch_gpu_process_memory_used_bytes",
				"gpu=\"0\",pid=\"7\"", t,
				1e9 * (double)(1 + (t - T0) / MINUTE) + x),
			0);
		f->now = t + 1;
	}
	f->now = T0 + 3 * MINUTE + 11000;
	drain(q);
	for (size_t i = 0; i < f->n; i++) {
		const struct rec *r = &f->r[i];
		const char *k = r->key;

		if (strncmp(k, "app_tokens_per_second:1m_avg{", 29) == 0 ||
		    strncmp(k, "app_tokens_per_second:1m_stddev{", 32) == 0) {
			double e = floor(log10(fabs(r->v)));
			double m = r->v * pow(10, 2 - e);

			assert_true(fabs(m - round(m)) < 1e-6);
			avg++;
		}
		if (strncmp(k, "app_tokens_per_second:1m_max{", 29) == 0) {
			assert_true(fabs(r->v - (100 + 6.0 / 3)) < 1e-12);
			max++;
		}
		gmin += strncmp(k, "app_tokens_per_second:1m_min{", 29) == 0;
		gcount += strncmp(k, "app_tokens_per_second:1m_count_samples{",
				  39) == 0;
		pavg += strncmp(k,
				"gpuwatch_gpu_process_memory_used_bytes:1m_"
				"avg{",
				46) == 0;
		pmin += strncmp(k,
				"gpuwatch_gpu_process_memory_used_bytes:1m_min",
				46) == 0 ||
			strncmp(k,
				"gpuwatch_gpu_process_memory_used_bytes:1m_"
				"stddev",
				49) == 0 ||
			strncmp(k,
				"gpuwatch_gpu_process_memory_used_bytes:1m_"
				"count",
				48) == 0;
	}
	assert_true(avg >= 3); /* 3 windows of avg, stddev the same */
	assert_true(max >= 1 && gmin >= 1 && gcount >= 1);
	assert_int_equal(pavg, 3);
	assert_int_equal(pmin, 0);
	gw_rw_queue_free(q);

	assert_int_equal(gw_rw_outs_parse("avg,max", &mask), 0);
	assert_int_equal(mask, (1u << GW_RW_OUT_AVG) | (1u << GW_RW_OUT_MAX));
	assert_int_equal(gw_rw_outs_parse("count_samples", &mask), 0);
	assert_int_equal(mask, 1u << GW_RW_OUT_COUNT);
	assert_int_equal(gw_rw_outs_parse("avg,median", &mask), -EINVAL);
	assert_int_equal(gw_rw_outs_parse("", &mask), -EINVAL);
}

/* The energy counter of the test below at t: 583.123 J a second from
 * 1e8, and from 10.5 again after a reset at T0 + 4 min. */
static double energy_at(int64_t t)
{
	double s = (double)(t - T0) / 1000;

	return t < T0 + 4 * MINUTE ? 1e8 + 583.123 * s
				   : 10.5 + 583.123 * (s - 240);
}

/* The precision rules: a noisy gauge's rollups keep no digit below their
 * standard error (a mean of 60 readings of 1.23e9 and 5.12e9 B/s is
 * 3.2e9, its extremes 1.2e9 and 5.1e9, where 3 significant digits would
 * keep noise); a counter keeps 9 significant digits of its value, which
 * never makes it go down and keeps its reset. */
static void test_precision_noise_counter(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue_opts o = precision_opts(f);
	struct gw_rw_queue *q;
	char err[256];
	size_t avg = 0, min = 0, max = 0, energy = 0, exact = 0, resets = 0;
	double last = 0;

	o.stddev_precision = 2;
	f->now = T0;
	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
	for (int64_t t = T0; t < T0 + 8 * MINUTE; t += 1000) {
		double v = (t - T0) / 1000 % 2 ? 5.123456e9 : 1.234567e9;

		assert_int_equal(
			gw_store_append(f->s,
					"gpuwatch_gpu_pcie_throughput_bytes_"
					"per_second",
					"gpu=\"0\",direction=\"rx\"", t, v),
			0);
		assert_int_equal(
			gw_store_append(f->s,
					"gpuwatch_gpu_energy_joules_total",
					"gpu=\"0\"", t, energy_at(t)),
			0);
		f->now = t + 1;
	}
	f->now = T0 + 8 * MINUTE + 11000;
	drain(q);
	for (size_t i = 0; i < f->n; i++) {
		const struct rec *r = &f->r[i];
		const char *k = r->key;

		if (strstr(k, "pcie_throughput_bytes_per_second:1m_avg{")) {
			assert_true(r->v == 3.2e9);
			avg++;
		} else if (strstr(k, "pcie_throughput_bytes_per_second:1m_"
				     "min{")) {
			assert_true(r->v == 1.2e9);
			min++;
		} else if (strstr(k, "pcie_throughput_bytes_per_second:1m_"
				     "max{")) {
			assert_true(r->v == 5.1e9);
			max++;
		} else if (strstr(k, "gpuwatch_gpu_energy_joules_total{")) {
			double c = energy_at(r->t);
			char text[32];

			/* 9 significant digits: 1e8 J to the joule */
			snprintf(text, sizeof(text), "%.9g", r->v);
			assert_true(strtod(text, NULL) == r->v);
			assert_true(fabs(r->v - c) <= 5e-9 * c);
			exact += r->v == c;
			if (r->v < last) { /* the reset, still one */
				assert_true(r->t >= T0 + 4 * MINUTE &&
					    r->t < T0 + 5 * MINUTE);
				resets++;
			}
			last = r->v;
			energy++;
		}
	}
	/* the same every minute: sent at the first and after the 4-minute
	 * heartbeat only */
	assert_int_equal(avg, 2);
	assert_int_equal(min, 2);
	assert_int_equal(max, 2);
	assert_int_equal(energy, 8);
	assert_true(exact < 8); /* the joule's decimals are gone */
	assert_int_equal(resets, 1);
	gw_rw_queue_free(q);
}

/* A counter pushed raw (a request for a window, as around an alert) while
 * the 1-minute stream sends it too, at precision 3: every value that
 * leaves has at most 9 significant digits, and in time order they never
 * go down (an exact raw value followed by a lower rounded one would read
 * as a reset centrally). */
static void feed_energy(struct fx *f, int64_t t0, int64_t t1)
{
	for (int64_t t = t0; t < t1; t += 1000) {
		assert_int_equal(
			gw_store_append(
				f->s, "gpuwatch_gpu_energy_joules_total",
				"gpu=\"0\"", t,
				1.23456789e8 +
					583.123456 * (double)(t - T0) / 1000),
			0);
		f->now = t + 1;
	}
}

static void test_push_counter_precision(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue_opts o = precision_opts(f);
	struct gw_rw_queue *q;
	struct gw_matcher *m;
	struct gw_promql_error perr;
	struct rec *got;
	size_t nm, n = 0;
	char err[256];

	f->now = T0;
	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
	feed_energy(f, T0, T0 + 3 * MINUTE);
	f->now = T0 + 3 * MINUTE + 11000;
	drain(q); /* the stream: minutes 1 to 3 */
	memset(&perr, 0, sizeof(perr));
	assert_int_equal(
		gw_promql_parse_selector("gpuwatch_gpu_energy_joules_total", &m,
					 &nm, &perr),
		0);
	/* then raw from the minute the stream reached on, into the future */
	assert_int_equal(gw_rw_queue_push(q,
					  (const struct gw_matcher *const *)&m,
					  &nm, 1, T0 + 3 * MINUTE,
					  T0 + 5 * MINUTE, GW_RW_PUSH_REQUEST),
			 0);
	gw_matchers_free(m, nm);
	/* in time as the agent runs: 10 s of samples, then the queue */
	for (int64_t t = T0 + 3 * MINUTE; t < T0 + 6 * MINUTE; t += 10000) {
		feed_energy(f, t, t + 10000);
		drain(q);
	}
	f->now = T0 + 6 * MINUTE + 11000;
	drain(q);
	got = calloc(f->n + 1, sizeof(*got));
	assert_non_null(got);
	for (size_t i = 0; i < f->n; i++)
		if (strncmp(f->r[i].key, "gpuwatch_gpu_energy_joules_total{",
			    33) == 0)
			got[n++] = f->r[i];
	assert_true(n >= 3 + 120); /* minutes 1-3, the raw 2 minutes */
	for (size_t i = 0; i < n; i++) {
		char text[32];

		snprintf(text, sizeof(text), "%.9g", got[i].v);
		assert_true(strtod(text, NULL) == got[i].v);
		for (size_t j = 0; j < n; j++)
			if (got[j].t > got[i].t && got[j].v < got[i].v)
				fail_msg("%.17g at %lld, then %.17g at %lld",
					 got[i].v, (long long)got[i].t,
					 got[j].v, (long long)got[j].t);
	}
	free(got);
	gw_rw_queue_free(q);
}

/* The value sent last of the series whose key starts with prefix and
 * holds label (NAN: none). */
static double last_value(const struct fx *f, const char *prefix,
			 const char *label)
{
	double v = NAN;

	for (size_t i = 0; i < f->n; i++)
		if (strncmp(f->r[i].key, prefix, strlen(prefix)) == 0 &&
		    strstr(f->r[i].key, label))
			v = f->r[i].v;
	return v;
}

/* The readings' steps: a quiet minute of a GPU's power, utilisation,
 * memory and clock leaves without the digits finer than a watt, a
 * thousandth, 10 MB and a megahertz, its stddev at 0 where the spread
 * is below half a step; a gauge without a step (an application's)
 * keeps its 3 significant digits at any scale; precision 0 sends every
 * digit. */
static void test_precision_steps(void **state)
{
	static const struct {
		const char *name, *out;
		double v, noise, want, want_exact;
	} g[] = {
		{ "gpuwatch_gpu_power_watts", ":1m_avg{", 61.2345, 0, 61,
		  61.2345 },
		{ "gpuwatch_gpu_power_watts", ":1m_stddev{", 61.2345, 0.3, 0,
		  0.3 },
		{ "gpuwatch_gpu_utilization_ratio", ":1m_avg{", 0.0123456, 0,
		  0.012, 0.0123456 },
		{ "gpuwatch_gpu_memory_used_bytes", ":1m_max{", 8.123456e10, 0,
		  8.12e10, 8.123456e10 },
		{ "gpuwatch_gpu_memory_used_bytes", ":1m_min{", 1.234567e6, 0,
		  0, 1.234567e6 },
		{ "gpuwatch_gpu_clock_hertz", ":1m_avg{", 2.345678e7, 0, 2.3e7,
		  2.345678e7 },
		{ "app_step_seconds", ":1m_avg{", 0.0123456, 0, 0.0123,
		  0.0123456 },
		{ "app_step_seconds", ":1m_max{", 1234.56, 0, 1230, 1234.56 },
	};
	size_t ng = sizeof(g) / sizeof(g[0]);

	for (unsigned int precision = 3;; precision = 0) {
		struct fx *f = *state;
		struct gw_rw_queue_opts o = precision_opts(f);
		struct gw_rw_queue *q;
		char err[256];

		f->n = 0;
		o.precision = precision;
		o.stddev_precision = 2;
		f->now = T0;
		assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
		for (int64_t t = T0; t < T0 + MINUTE; t += 1000) {
			double sign = (t - T0) / 1000 % 2 ? 1 : -1;

			for (size_t i = 0; i < ng; i++) {
				char l[32];

				/* its own series, so each case leaves */
				snprintf(l, sizeof(l), "gpu=\"%zu\"", i);
				assert_int_equal(
					gw_store_append(
						f->s, g[i].name, l, t,
						g[i].v + sign * g[i].noise),
					0);
			}
			f->now = t + 1;
		}
		f->now = T0 + MINUTE + 11000;
		drain(q);
		for (size_t i = 0; i < ng; i++) {
			char key[128], l[32];
			double v,
				want = precision ? g[i].want : g[i].want_exact;

			snprintf(key, sizeof(key), "%s%s", g[i].name, g[i].out);
			snprintf(l, sizeof(l), "gpu=\"%zu\"", i);
			v = last_value(f, key, l);
			if (g[i].noise > 0 && !precision) /* of +-noise */
				want = g[i].noise;
			if (fabs(v - want) > 1e-9 * fabs(want))
				fail_msg("%s%s: sent %.17g, want %.17g "
					 "(precision %u)",
					 g[i].name, g[i].out, v, want,
					 precision);
		}
		gw_rw_queue_free(q);
		if (!precision)
			break;
		/* a second run's minute on a fresh store and queue */
		teardown(state);
		setup(state);
	}
}

/* Steps until nothing is due. */
static void drain(struct gw_rw_queue *q)
{
	for (int i = 0; i < 10000; i++)
		if (gw_rw_queue_step(q) <= 0)
			return;
	fail_msg("the queue never ran dry");
}

static size_t count_key(const struct fx *f, const char *prefix)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += strncmp(f->r[i].key, prefix, strlen(prefix)) == 0;
	return n;
}

/* Every (key, t) once; per key in time order across batches. */
static void check_order(const struct fx *f)
{
	for (size_t i = 0; i < f->n; i++)
		for (size_t j = i + 1; j < f->n; j++)
			if (strcmp(f->r[i].key, f->r[j].key) == 0)
				assert_true(f->r[j].t > f->r[i].t);
}

/* Raw policy: every stored sample leaves once, with the external labels,
 * each series in time order. */
static void test_raw_everything(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue *q = new_queue(f, GW_RW_POLICY_RAW, NULL, 0);
	struct gw_rw_queue_stats st;

	feed(f, T0, T0 + 3 * MINUTE);
	f->now = T0 + 3 * MINUTE + 20000;
	drain(q);
	check_order(f);
	assert_int_equal(count_key(f, "gpuwatch_gpu_temperature_celsius{"),
			 2 * 180);
	assert_int_equal(count_key(f, "gpuwatch_gpu_energy_joules_total{"),
			 2 * 180);
	assert_non_null(strstr(f->r[0].key, "instance=\"node-1\""));
	assert_non_null(strstr(f->r[0].key, "cluster=\"c1\""));
	gw_rw_queue_stats(q, &st);
	assert_int_equal(st.samples_sent, f->n);
	assert_int_equal(st.highest_acked_ms, T0 + 3 * MINUTE - 1000);
	gw_rw_queue_free(q);
}

/* An outage, then a restart during it: nothing lost, nothing twice,
 * every series in time order. */
static void test_outage_restart(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue *q = new_queue(f, GW_RW_POLICY_RAW, NULL, 0);

	/* The clock stays with the data: what is stored after a time has
	 * passed the settle delay would be late. */
	feed(f, T0, T0 + 2 * MINUTE);
	drain(q);
	assert_true(f->n >= 4 * 100 && f->n < 4 * 120);
	f->down = true;
	feed(f, T0 + 2 * MINUTE, T0 + 5 * MINUTE);
	f->now = T0 + 5 * MINUTE + 15000;
	assert_int_equal(gw_rw_queue_step(q), -EINTR);
	gw_rw_queue_free(q); /* the agent stops during the outage */
	feed(f, T0 + 5 * MINUTE, T0 + 7 * MINUTE);
	q = new_queue(f, GW_RW_POLICY_RAW, NULL, 0);
	f->down = false;
	/* Raw data waits up to the batch deadline (5 s) to fill a batch:
	 * look 10 s past it. */
	f->now = T0 + 7 * MINUTE + 20000;
	drain(q);
	check_order(f);
	assert_int_equal(f->n, 4 * 7 * 60);
	for (size_t i = 0; i < f->n; i++)
		assert_true(f->r[i].t >= T0 && f->r[i].t < T0 + 7 * MINUTE);
	gw_rw_queue_free(q);
}

/* Rollups: a gauge as NAME:1m_avg/min/max/stddev/count_samples at the
 * window's end, equal to the window's samples; a counter as its last
 * sample each minute under its own name; unchanged values suppressed
 * until the heartbeat. */
static void test_rollup_policy(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue *q = new_queue(f, GW_RW_POLICY_ROLLUP, NULL, 0);
	struct gw_rw_queue_stats st;
	const char *gpu0 = "{cluster=\"c1\",gpu=\"0\",instance=\"node-1\","
			   "uuid=\"GPU-0\"}";
	char key[256];
	size_t nwin = 0, ncount = 0;

	feed(f, T0, T0 + 10 * MINUTE);
	f->now = T0 + 10 * MINUTE + 11000;
	drain(q);
	check_order(f);
	/* Windows ending at T0+1m .. T0+10m; the first holds the samples
	 * from the queue's start on only where the store had them: all. */
	for (size_t i = 0; i < f->n; i++) {
		const struct rec *r = &f->r[i];
		int64_t start = r->t - MINUTE;
		double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY, c = 0;

		snprintf(key, sizeof(key),
			 "gpuwatch_gpu_temperature_celsius:1m_avg%s", gpu0);
		if (strcmp(r->key, key) != 0)
			continue;
		nwin++;
		for (int64_t t = start; t < r->t; t += 1000) {
			double x = 40 + fmod((double)(t - T0) / 1000.0, 7);

			sum += x;
			sq += x * x;
			mn = fmin(mn, x);
			mx = fmax(mx, x);
			c++;
		}
		assert_true(fabs(r->v - sum / c) < 1e-9);
		for (size_t j = 0; j < f->n; j++) {
			const struct rec *o = &f->r[j];
			char k2[256];

			if (o->t != r->t)
				continue;
			snprintf(k2, sizeof(k2),
				 "gpuwatch_gpu_temperature_celsius:1m_min%s",
				 gpu0);
			if (strcmp(o->key, k2) == 0)
				assert_true(o->v == mn);
			snprintf(k2, sizeof(k2),
				 "gpuwatch_gpu_temperature_celsius:1m_max%s",
				 gpu0);
			if (strcmp(o->key, k2) == 0)
				assert_true(o->v == mx);
			snprintf(k2, sizeof(k2),
				 "gpuwatch_gpu_temperature_celsius:1m_stddev%s",
				 gpu0);
			if (strcmp(o->key, k2) == 0)
				assert_true(fabs(o->v -
						 sqrt(sq / c -
						      (sum / c) * (sum / c))) <
					    1e-6);
		}
	}
	assert_int_equal(nwin, 10);
	/* count_samples is 60 every minute: sent at the first window and
	 * again once the 4-minute heartbeat is due. */
	snprintf(key, sizeof(key),
		 "gpuwatch_gpu_temperature_celsius:1m_count_samples%s", gpu0);
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->r[i].key, key) == 0) {
			assert_true(f->r[i].v == 60);
			ncount++;
		}
	assert_int_equal(ncount, 3); /* minutes 1, 5 and 9 */
	gw_rw_queue_stats(q, &st);
	assert_true(st.samples_suppressed >= 2 * 7);
	/* The counter: its own name, the last sample of each minute. */
	snprintf(key, sizeof(key), "gpuwatch_gpu_energy_joules_total%s", gpu0);
	ncount = 0;
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->r[i].key, key) == 0) {
			assert_int_equal(f->r[i].t % MINUTE, MINUTE - 1000);
			assert_true(f->r[i].v ==
				    100 * (double)(f->r[i].t - T0) / 1000.0);
			ncount++;
		}
	assert_int_equal(ncount, 10);
	assert_int_equal(count_key(f, "gpuwatch_gpu_temperature_celsius{"), 0);
	gw_rw_queue_free(q);
}

/* A raw selector: its series also leave raw, under their own name, and
 * a counter picked raw is not sent again as a last value. */
static void test_raw_selector(void **state)
{
	struct fx *f = *state;
	static const char *const raw[] = {
		"{__name__=~\"gpuwatch_gpu_.*\",gpu=\"1\"}"
	};
	struct gw_rw_queue *q = new_queue(f, GW_RW_POLICY_ROLLUP, raw, 1);

	feed(f, T0, T0 + 3 * MINUTE);
	f->now = T0 + 3 * MINUTE + 11000;
	drain(q);
	check_order(f);
	assert_int_equal(count_key(f, "gpuwatch_gpu_energy_joules_total{"),
			 180 + 3);
	assert_int_equal(count_key(f, "gpuwatch_gpu_temperature_celsius{"),
			 180);
	assert_int_equal(
		count_key(f, "gpuwatch_gpu_temperature_celsius:1m_avg{"), 6);
	gw_rw_queue_free(q);
}

/* Pushes: raw samples of the selected series over the window, also
 * from before the push was asked for; an anomaly score over the
 * threshold pushes the GPU's series; a counter already sent as last
 * values never goes back in time. */
static void test_pushes(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue *q = new_queue(f, GW_RW_POLICY_ROLLUP, NULL, 0);
	struct gw_rw_queue_stats st;
	struct gw_matcher *m;
	struct gw_promql_error perr;
	size_t nm;

	feed(f, T0, T0 + 5 * MINUTE);
	f->now = T0 + 5 * MINUTE + 11000;
	drain(q);
	assert_int_equal(count_key(f, "gpuwatch_gpu_temperature_celsius{"), 0);
	memset(&perr, 0, sizeof(perr));
	assert_int_equal(gw_promql_parse_selector(
				 "gpuwatch_gpu_temperature_celsius{gpu=\"0\"}",
				 &m, &nm, &perr),
			 0);
	assert_int_equal(
		gw_rw_queue_push(q, (const struct gw_matcher *const *)&m, &nm,
				 1, T0 + MINUTE, T0 + 2 * MINUTE - 1,
				 GW_RW_PUSH_REQUEST),
		0);
	assert_int_equal(gw_rw_queue_push(q,
					  (const struct gw_matcher *const *)&m,
					  &nm, 1, T0 + 2 * MINUTE - 1000, T0,
					  GW_RW_PUSH_REQUEST),
			 -EINVAL);
	gw_matchers_free(m, nm);
	drain(q);
	assert_int_equal(count_key(f, "gpuwatch_gpu_temperature_celsius{"), 60);
	gw_rw_queue_stats(q, &st);
	assert_int_equal(st.pushes[GW_RW_PUSH_REQUEST], 1);
	assert_int_equal(st.pushes_open, 0);

	/* An anomaly of GPU 1 at T0+5m30s: its series, raw, from 10 min
	 * before (all of the history here) to 10 min after. */
	assert_int_equal(gw_store_append(f->s,
					 "gpuwatch_gpu_temperature_celsius:"
					 "anomaly_score",
					 "gpu=\"1\",uuid=\"GPU-1\"",
					 T0 + 5 * MINUTE + 30000, 0.99),
			 0);
	feed(f, T0 + 5 * MINUTE, T0 + 7 * MINUTE);
	f->now = T0 + 7 * MINUTE + 11000;
	drain(q);
	check_order(f);
	gw_rw_queue_stats(q, &st);
	assert_int_equal(st.pushes[GW_RW_PUSH_ANOMALY], 1);
	assert_int_equal(st.pushes_open, 1); /* until T0+15m30s */
	/* GPU 1's gauge: every raw sample from T0 to T0+7m. */
	{
		size_t n = 0;

		for (size_t i = 0; i < f->n; i++)
			n += strncmp(f->r[i].key,
				     "gpuwatch_gpu_temperature_celsius{",
				     33) == 0 &&
			     strstr(f->r[i].key, "gpu=\"1\"");
		assert_int_equal(n, 7 * 60);
	}
	feed(f, T0 + 7 * MINUTE, T0 + 16 * MINUTE);
	f->now = T0 + 16 * MINUTE + 11000;
	drain(q);
	check_order(f);
	gw_rw_queue_stats(q, &st);
	assert_int_equal(st.pushes_open, 0);
	gw_rw_queue_free(q);
}

/* A watermark older than the raw tier's retention: the samples in
 * between are counted as aged out, the rest sent. */
static void test_retention(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue_opts o;
	struct gw_rw_queue *q;
	struct gw_rw_queue_stats st;
	char err[256];
	FILE *fp;

	feed(f, T0, T0 + 10 * MINUTE);
	fp = fopen(f->state, "w");
	assert_non_null(fp);
	fprintf(fp,
		"gpuwatch-remote-write-state 1\n1m %lld\nraw %lld\nevents "
		"%lld\n",
		(long long)T0 - 1, (long long)T0 - 1, (long long)T0 - 1);
	fclose(fp);
	o = (struct gw_rw_queue_opts){
		.sz = sizeof(o),
		.name = "central",
		.url = "http://x/",
		.state_path = f->state,
		.q = gw_store_queryable(f->s),
		.sink = { .ctx = f, .send = sink_send, .aged_out = sink_aged },
		.policy = GW_RW_POLICY_RAW,
		.max_samples_per_send = 50,
		.retention_ms = { 4 * MINUTE, 0, 0 },
		.now = fake_now,
		.now_ctx = f,
	};
	f->now = T0 + 10 * MINUTE + 10500;
	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
	drain(q);
	gw_rw_queue_stats(q, &st);
	/* (T0 - 1, now - 4 min]: T0 .. T0 + 370 s, of 4 series; the rest
	 * up to now - 10 s is sent. */
	assert_int_equal(st.samples_aged_out, 4 * 371);
	assert_int_equal(f->aged, 4 * 371);
	assert_int_equal(f->n, 4 * 229);
	gw_rw_queue_free(q);
}

/* A refused batch (4xx) is not retried; the watermark moves on. */
static void test_refused(void **state)
{
	struct fx *f = *state;
	struct gw_rw_queue *q = new_queue(f, GW_RW_POLICY_RAW, NULL, 0);
	struct gw_rw_queue_stats st;

	feed(f, T0, T0 + MINUTE);
	f->now = T0 + MINUTE + 15000;
	f->refuse = true;
	drain(q);
	gw_rw_queue_stats(q, &st);
	assert_int_equal(st.samples_refused, 4 * 60);
	assert_int_equal(st.samples_sent, 0);
	f->refuse = false;
	assert_int_equal(gw_rw_queue_step(q), 0);
	gw_rw_queue_free(q);
}

/* Finds the value sent for key at t; NAN when none. */
static double sent_at(const struct fx *f, const char *key, int64_t t)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->r[i].t == t && strcmp(f->r[i].key, key) == 0)
			return f->r[i].v;
	return NAN;
}

/*
 * --remote-write-without pid: the processes of one GPU and comm leave as
 * one series whose windows are over all their samples; another comm is
 * another group; no rollup keeps a pid.  --remote-write-state-rollups avg:
 * a 0/1 gauge (catalogue unit "state") leaves as :1m_avg alone, the share
 * of its minute at 1.  --remote-write-rollups avg,max: a gauge's other
 * rollups stay home.
 */
#define PY(out)                                                                \
	"gpuwatch_gpu_process_memory_used_bytes:1m_without_pid_" out           \
	"{comm=\"py\",gpu=\"0\",instance=\"n1\"}"

static void test_without_state(void **state)
{
	struct fx *f = *state;
	static const char *const ext[] = { "instance=n1" };
	static const char *const without[] = { "pid" };
	struct gw_rw_queue_opts o = {
		.sz = sizeof(o),
		.name = "central",
		.url = "http://127.0.0.1:1/api/v1/write",
		.q = gw_store_queryable(f->s),
		.sink = { .ctx = f, .send = sink_send },
		.external = ext,
		.nexternal = 1,
		.now = fake_now,
		.now_ctx = f,
		.max_samples_per_send = 50,
		.outputs = (1u << GW_RW_OUT_AVG) | (1u << GW_RW_OUT_MAX),
		.process_outputs = (1u << GW_RW_OUTS) - 1,
		.state_outputs = 1u << GW_RW_OUT_AVG,
		.without = without,
		.nwithout = 1,
	};
	struct gw_rw_queue *q;
	char err[256];
	size_t pids = 0, up_other = 0, power = 0, power_other = 0;

	f->now = T0;
	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
	for (int64_t t = T0; t < T0 + 3 * MINUTE; t += 1000) {
		int64_t s = (t - T0) / 1000;

		/* pid 7: 100 + s; pid 8: 1000 (second minute: absent) */
		assert_int_equal(
			gw_store_append(
				f->s, "gpuwatch_gpu_process_memory_used_bytes",
				"gpu=\"0\",pid=\"7\",comm=\"py\"", t,
				100 + (double)s),
			0);
		if (s < 60 || s >= 120)
			assert_int_equal(
				gw_store_append(
					f->s,
					"gpuwatch_gpu_process_memory_used_"
					"bytes",
					"gpu=\"0\",pid=\"8\",comm=\"py\"", t,
					1000),
				0);
		assert_int_equal(
			gw_store_append(
				f->s, "gpuwatch_gpu_process_memory_used_bytes",
				"gpu=\"0\",pid=\"9\",comm=\"other\"", t, 5),
			0);
		assert_int_equal(gw_store_append(f->s,
						 "gpuwatch_gpu_power_watts",
						 "gpu=\"0\"", t, 100 + s % 3),
				 0);
		/* up the whole first minute, 15 s of the second */
		assert_int_equal(gw_store_append(f->s, "gpuwatch_gpu_up",
						 "gpu=\"0\"", t,
						 s < 75 ? 1 : 0),
				 0);
		f->now = t + 1;
	}
	f->now = T0 + 3 * MINUTE + 11000;
	drain(q);
	for (size_t i = 0; i < f->n; i++) {
		pids += strstr(f->r[i].key, "pid=") != NULL;
		power += strncmp(f->r[i].key,
				 "gpuwatch_gpu_power_watts:1m_avg{", 32) == 0 ||
			 strncmp(f->r[i].key,
				 "gpuwatch_gpu_power_watts:1m_max{", 32) == 0;
		power_other += strncmp(f->r[i].key,
				       "gpuwatch_gpu_power_watts:", 25) == 0 &&
			       (strstr(f->r[i].key, ":1m_min{") ||
				strstr(f->r[i].key, ":1m_stddev{") ||
				strstr(f->r[i].key, ":1m_count_samples{"));
		up_other += strncmp(f->r[i].key, "gpuwatch_gpu_up:", 16) == 0 &&
			    strncmp(f->r[i].key, "gpuwatch_gpu_up:1m_avg{",
				    23) != 0;
	}
	assert_int_equal(pids, 0);
	assert_true(power >= 2);
	assert_int_equal(power_other, 0);
	assert_int_equal(up_other, 0);
	/* first minute: pid 7 100..159, pid 8 1000 x 60 */
	assert_true(sent_at(f, PY("count_samples"), T0 + MINUTE) == 120);
	assert_true(fabs(sent_at(f, PY("avg"), T0 + MINUTE) -
			 (60 * 129.5 + 60 * 1000) / 120) < 1e-9);
	assert_true(sent_at(f, PY("min"), T0 + MINUTE) == 100);
	assert_true(sent_at(f, PY("max"), T0 + MINUTE) == 1000);
	/* second minute: pid 7 alone, 160..219 */
	assert_true(sent_at(f, PY("max"), T0 + 2 * MINUTE) == 219);
	assert_true(fabs(sent_at(f, PY("stddev"), T0 + 2 * MINUTE) -
			 sqrt((60.0 * 60 - 1) / 12)) < 1e-9);
	/* another comm, another group */
	assert_true(sent_at(f,
			    "gpuwatch_gpu_process_memory_used_bytes:1m_without_"
			    "pid_max{comm=\"other\",gpu=\"0\",instance=\"n1\"}",
			    T0 + MINUTE) == 5);
	assert_true(sent_at(f,
			    "gpuwatch_gpu_up:1m_avg{gpu=\"0\",instance=\"n1\"}",
			    T0 + MINUTE) == 1);
	assert_true(fabs(sent_at(f,
				 "gpuwatch_gpu_up:1m_avg{gpu=\"0\",instance="
				 "\"n1\"}",
				 T0 + 2 * MINUTE) -
			 0.25) < 1e-12);
	gw_rw_queue_free(q);
}

/*
 * --remote-write-without pid,link and --remote-write-sum-without link: a
 * GPU's NVLink error counters leave summed over their links under their
 * own name (a minute a link missed is not sent), its link states as one
 * :1m_without_link_avg, a process's gauge still as _without_pid (the
 * labels it carried); a setting (the power limit) leaves as :1m_avg
 * alone.
 */
#define ERRS                                                                   \
	"gpuwatch_gpu_nvlink_errors_total{gpu=\"0\",instance=\"n1\",type="     \
	"\"crc\"}"

static void test_links_settings(void **state)
{
	struct fx *f = *state;
	static const char *const ext[] = { "instance=n1" };
	static const char *const without[] = { "pid", "link" };
	static const char *const sum_without[] = { "link" };
	struct gw_rw_queue_opts o = {
		.sz = sizeof(o),
		.name = "central",
		.url = "http://127.0.0.1:1/api/v1/write",
		.q = gw_store_queryable(f->s),
		.sink = { .ctx = f, .send = sink_send },
		.external = ext,
		.nexternal = 1,
		.now = fake_now,
		.now_ctx = f,
		.max_samples_per_send = 50,
		.state_outputs = 1u << GW_RW_OUT_AVG,
		.without = without,
		.nwithout = 2,
		.sum_without = sum_without,
		.nsum_without = 1,
	};
	struct gw_rw_queue *q;
	char err[256];
	size_t links = 0, limit_other = 0, limit_avg = 0, pids = 0;

	f->now = T0;
	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), 0);
	for (int64_t t = T0; t < T0 + 3 * MINUTE; t += 1000) {
		int64_t s = (t - T0) / 1000;

		for (int l = 0; l < 3; l++) {
			char lab[64];

			snprintf(lab, sizeof(lab),
				 "gpu=\"0\",link=\"%d\",type=\"crc\"", l);
			/* link 2 misses the second minute */
			if (l < 2 || s < 60 || s >= 120)
				assert_int_equal(
					gw_store_append(
						f->s,
						"gpuwatch_gpu_nvlink_errors_"
						"total",
						lab, t,
						l == 2 ? 10
						       : (double)(l + 1) * s),
					0);
			snprintf(lab, sizeof(lab), "gpu=\"0\",link=\"%d\"", l);
			assert_int_equal(
				gw_store_append(f->s, "gpuwatch_gpu_nvlink_up",
						lab, t, l < 2),
				0);
		}
		assert_int_equal(
			gw_store_append(f->s, "gpuwatch_gpu_power_limit_watts",
					"gpu=\"0\"", t, 300),
			0);
		assert_int_equal(
			gw_store_append(
				f->s, "gpuwatch_gpu_process_memory_used_bytes",
				"gpu=\"0\",pid=\"7\",comm=\"py\"", t, 5),
			0);
		f->now = t + 1;
	}
	f->now = T0 + 3 * MINUTE + 11000;
	drain(q);
	for (size_t i = 0; i < f->n; i++) {
		const char *k = f->r[i].key;

		links += strstr(k, "link=") != NULL;
		pids += strstr(k, "pid=") != NULL;
		limit_avg +=
			strncmp(k, "gpuwatch_gpu_power_limit_watts:1m_avg{",
				38) == 0;
		limit_other +=
			strncmp(k, "gpuwatch_gpu_power_limit_watts", 30) == 0 &&
			strncmp(k, "gpuwatch_gpu_power_limit_watts:1m_avg{",
				38) != 0;
	}
	assert_int_equal(links, 0);
	assert_int_equal(pids, 0);
	assert_true(limit_avg >= 1);
	assert_int_equal(limit_other, 0);
	/* minute 1: 59 + 118 + 10 at the last sample's time */
	assert_true(sent_at(f, ERRS, T0 + 59000) == 187);
	/* minute 2: link 2 missed it, no sum sent */
	assert_true(isnan(sent_at(f, ERRS, T0 + 119000)));
	assert_true(sent_at(f, ERRS, T0 + 179000) == 179 + 358 + 10);
	assert_true(fabs(sent_at(f,
				 "gpuwatch_gpu_nvlink_up:1m_without_link_avg{"
				 "gpu=\"0\",instance=\"n1\"}",
				 T0 + MINUTE) -
			 2.0 / 3) < 1e-9);
	assert_true(sent_at(f,
			    "gpuwatch_gpu_process_memory_used_bytes:1m_without_"
			    "pid_max{comm=\"py\",gpu=\"0\",instance=\"n1\"}",
			    T0 + MINUTE) == 5);

	/* A push of GPU 0's series raw: the link states go, per link; the
	 * summed counters do not (a central sum() would count them twice
	 * beside their sum). */
	{
		struct gw_promql_error perr;
		struct gw_matcher *m;
		size_t nm, up = 0, errs = 0;

		memset(&perr, 0, sizeof(perr));
		assert_int_equal(
			gw_promql_parse_selector("{gpu=\"0\"}", &m, &nm, &perr),
			0);
		assert_int_equal(
			gw_rw_queue_push(
				q, (const struct gw_matcher *const *)&m, &nm, 1,
				T0, T0 + MINUTE - 1, GW_RW_PUSH_REQUEST),
			0);
		gw_matchers_free(m, nm);
		drain(q);
		for (size_t i = 0; i < f->n; i++) {
			up += strncmp(f->r[i].key, "gpuwatch_gpu_nvlink_up{",
				      23) == 0;
			errs += strstr(f->r[i].key, "link=") &&
				strncmp(f->r[i].key,
					"gpuwatch_gpu_nvlink_errors_total{",
					33) == 0;
		}
		assert_int_equal(up, 3 * 60);
		assert_int_equal(errs, 0);
	}
	gw_rw_queue_free(q);
}

static void test_bad_options(void **state)
{
	struct fx *f = *state;
	static const char *const bad_sel[] = { "{job=~\".*\"}" };
	static const char *const bad_ext[] = { "cluster" };
	struct gw_rw_queue_opts o = {
		.sz = sizeof(o),
		.name = "c",
		.url = "u",
		.q = gw_store_queryable(f->s),
		.sink = { .ctx = f, .send = sink_send },
		.raw = bad_sel,
		.nraw = 1,
	};
	struct gw_rw_queue *q;
	char err[256] = "";

	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "selector"));
	o.nraw = 0;
	o.external = bad_ext;
	o.nexternal = 1;
	assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "NAME=VALUE"));
	{
		static const char *const bad_without[] = { "pid", "__name__" };
		const char *names[GW_RW_QUEUE_MAX_WITHOUT];
		char buf[64];
		size_t n;

		o.nexternal = 0;
		o.without = bad_without;
		o.nwithout = 2;
		assert_int_equal(gw_rw_queue_new(&o, &q, err, sizeof(err)),
				 -EINVAL);
		assert_non_null(strstr(err, "'__name__'"));
		assert_int_equal(gw_rw_without_parse("pid,link", buf,
						     sizeof(buf), names, &n),
				 0);
		assert_int_equal(n, 2);
		assert_string_equal(names[1], "link");
		assert_int_equal(gw_rw_without_parse("none", buf, sizeof(buf),
						     names, &n),
				 0);
		assert_int_equal(n, 0);
		assert_int_equal(gw_rw_without_parse("pid,a-b", buf,
						     sizeof(buf), names, &n),
				 -EINVAL);
		assert_int_equal(gw_rw_without_parse("pid,", buf, sizeof(buf),
						     names, &n),
				 0);
		assert_int_equal(n, 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_raw_everything, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_outage_restart, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rollup_policy, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_raw_selector, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pushes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_precision_process, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_precision_steps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_push_counter_precision,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_precision_noise_counter,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_links_settings, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_without_state, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_options, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
