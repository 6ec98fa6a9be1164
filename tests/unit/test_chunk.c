// SPDX-License-Identifier: MIT
/*
 * test_chunk.c - the sample codec: every series comes back bit for bit
 * (special doubles, extreme and repeated timestamps, random bits, real-ish
 * GPU telemetry), the open chunk decodes at every length, runs of exactly
 * predicted samples (constant gauges at exact ticks) cost next to nothing
 * and survive being taken mid-run, the limits and errors the contract
 * promises, and damaged chunks are refused without a crash.  Series come
 * from a seeded PRNG, so a failure reproduces.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/bits.h"
#include "store/chunk.h"

#define MAXN 4096

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s;
}

/* splitmix64 */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rndn(uint64_t n)
{
	return rnd() % n;
}

static double rnd01(void)
{
	return (double)(rnd() >> 11) * 0x1p-53;
}

struct series {
	int64_t t[MAXN];
	double v[MAXN];
	size_t n;
};

static struct series S;
static int64_t dt_[GW_CHUNK_MAX_SAMPLES];
static double dv_[GW_CHUNK_MAX_SAMPLES];

/* Decodes p both ways and checks it holds exactly s's first n samples. */
static void check_decodes(const uint8_t *p, size_t len, const int64_t *t,
			  const double *v, size_t n)
{
	struct gw_chunk_dec d;
	int64_t ts;
	double val;
	long got;
	size_t i;

	got = gw_chunk_decode_all(p, len, dt_, dv_, GW_CHUNK_MAX_SAMPLES);
	assert_int_equal(got, (long)n);
	for (i = 0; i < n; i++) {
		if (dt_[i] != t[i] || gw_bits_of(dv_[i]) != gw_bits_of(v[i]))
			fail_msg("sample %zu: got (%lld, %016llx) want "
				 "(%lld, %016llx)",
				 i, (long long)dt_[i],
				 (unsigned long long)gw_bits_of(dv_[i]),
				 (long long)t[i],
				 (unsigned long long)gw_bits_of(v[i]));
	}
	assert_int_equal(gw_chunk_dec_init(&d, p, len), 0);
	assert_int_equal(gw_chunk_dec_count(&d), n);
	for (i = 0; i < n; i++) {
		assert_int_equal(gw_chunk_next(&d, &ts, &val), 1);
		assert_true(ts == t[i]);
		assert_true(gw_bits_of(val) == gw_bits_of(v[i]));
	}
	assert_int_equal(gw_chunk_next(&d, &ts, &val), 0);
	assert_int_equal(gw_chunk_next(&d, &ts, &val), 0);
}

/*
 * Encodes s; with every_step the open chunk is finalised and decoded after
 * each append.  Returns the chunk's size.
 */
static size_t roundtrip(const struct series *s, int every_step)
{
	struct gw_chunk_enc e;
	const uint8_t *p;
	size_t len = 0, i;

	gw_chunk_enc_init(&e);
	for (i = 0; i < s->n; i++) {
		assert_int_equal(gw_chunk_append(&e, s->t[i], s->v[i]), 0);
		assert_int_equal(gw_chunk_count(&e), i + 1);
		if (every_step) {
			p = gw_chunk_bytes(&e, &len);
			check_decodes(p, len, s->t, s->v, i + 1);
		}
	}
	if (s->n) {
		p = gw_chunk_bytes(&e, &len);
		assert_non_null(p);
		check_decodes(p, len, s->t, s->v, s->n);
		assert_true(gw_chunk_first(&e) == s->t[0]);
		assert_true(gw_chunk_last(&e) == s->t[s->n - 1]);
	}
	gw_chunk_enc_release(&e);
	return len;
}

/* ---- value and timestamp generators ---- */

static const uint64_t special_bits[] = {
	0x0000000000000000ULL, /* +0 */
	0x8000000000000000ULL, /* -0 */
	0x7ff0000000000000ULL, /* +Inf */
	0xfff0000000000000ULL, /* -Inf */
	0x7ff8000000000000ULL, /* quiet NaN */
	0xfff8000000000000ULL, /* negative quiet NaN */
	0x7ff0000000000001ULL, /* signalling NaN, smallest payload */
	0x7fffffffffffffffULL, /* NaN, all payload bits */
	0xfff4000000000abcULL, /* negative signalling NaN with payload */
	0x0000000000000001ULL, /* smallest denormal */
	0x800fffffffffffffULL, /* largest negative denormal */
	0x0010000000000000ULL, /* DBL_MIN */
	0x7fefffffffffffffULL, /* DBL_MAX */
	0xffefffffffffffffULL, /* -DBL_MAX */
	0x4340000000000000ULL, /* 2^53 */
	0x433fffffffffffffULL, /* 2^53 - 1 */
	0xc340000000000001ULL, /* -(2^53 + 2) */
	0x3ff0000000000000ULL, /* 1 */
	0x3fb999999999999aULL, /* 0.1 */
	0x3fd3333333333334ULL, /* 0.1 + 0.2 */
};

#define NSPECIAL (sizeof(special_bits) / sizeof(special_bits[0]))

static double special(void)
{
	return gw_double_of(special_bits[rndn(NSPECIAL)]);
}

static double any_nan(void)
{
	uint64_t payload = rnd() & 0x000fffffffffffffULL;

	return gw_double_of(0x7ff0000000000000ULL | (rnd() & (1ULL << 63)) |
			    (payload ? payload : 1));
}

/* Regular 1 s steps in ms with a few ms of jitter, from a random start. */
static void times_jitter(struct series *s, int jitter)
{
	int64_t base = (int64_t)(1700000000000LL + (int64_t)rndn(1000000));

	for (size_t i = 0; i < s->n; i++)
		s->t[i] = base + (int64_t)i * 1000 +
			  (jitter ? (int64_t)rndn((uint64_t)jitter + 1) : 0);
}

/* Anything non-decreasing: repeats, small and huge steps, both ends. */
static void times_wild(struct series *s)
{
	uint64_t t = rnd();

	switch (rndn(3)) {
	case 0:
		t = 0x8000000000000000ULL; /* INT64_MIN */
		break;
	case 1:
		t = 0x8000000000000000ULL + rndn(1000);
		break;
	}
	for (size_t i = 0; i < s->n; i++) {
		/* Steps left to INT64_MAX (t holds the int64's bits). */
		uint64_t room = 0x7fffffffffffffffULL - t;
		uint64_t step;

		switch (rndn(6)) {
		case 0:
			step = 0;
			break;
		case 1:
			step = 1000;
			break;
		case 2:
			step = rndn(100);
			break;
		case 3:
			step = rnd() >> rndn(64);
			break;
		case 4:
			step = room; /* straight to INT64_MAX */
			break;
		default:
			step = 1000 + rndn(9) - 4;
			break;
		}
		if (step > room)
			step = room >> rndn(4);
		t += step;
		s->t[i] = (int64_t)t;
	}
}

static double p10pow(int e)
{
	double p = 1;

	while (e-- > 0)
		p *= 10;
	return p;
}

static double gauge(double *x, double lo, double hi, double step, double q)
{
	*x += (rnd01() - 0.5) * step;
	if (*x < lo)
		*x = lo;
	if (*x > hi)
		*x = hi;
	return round(*x * q) / q;
}

/* Values of one of many kinds, chosen by kind. */
static void values(struct series *s, unsigned kind)
{
	double x = 50 + rnd01() * 20, c = (double)(rnd() >> 24);
	size_t i;

	for (i = 0; i < s->n; i++) {
		double v;

		switch (kind) {
		case 0: /* random bit patterns */
			v = gw_double_of(rnd());
			break;
		case 1: /* special values only */
			v = special();
			break;
		case 2: /* NaNs with random payloads */
			v = any_nan();
			break;
		case 3: /* temperature: integer, slow */
			v = gauge(&x, 20, 95, 0.6, 1);
			break;
		case 4: /* power in W, 3 decimals */
			v = gauge(&x, 50, 700, 20, 1000);
			break;
		case 5: /* energy counter in mJ */
			c += 250000 + (double)rndn(100000);
			v = c;
			break;
		case 6: /* MiB-multiple byte counts */
			if (rndn(50) == 0)
				x = (double)rndn(80 * 1024);
			v = round(x) * 1048576;
			break;
		case 7: /* alternating regimes, in runs */
			switch ((i / 37) % 5) {
			case 0:
				v = round(x) + (double)rndn(3);
				break;
			case 1:
				v = rnd01();
				break;
			case 2:
				v = gauge(&x, -100, 100, 3, 100);
				break;
			case 3:
				v = special();
				break;
			default:
				v = gw_double_of(rnd());
				break;
			}
			break;
		case 8: /* decimals gaining digits: scale grows */
			v = round(rnd01() * 1e6) / p10pow((int)(i * 16 / s->n));
			break;
		case 9: /* constant, sometimes a special value */
			v = i % 97 == 50 ? special() : 42;
			break;
		case 10: /* integers near and past 2^53, negative too */
			v = (double)(int64_t)((rnd() >> 10) - (1ULL << 53));
			break;
		default: /* mixed: anything in any order */
			v = rndn(4) == 0   ? special()
			    : rndn(3) == 0 ? gw_double_of(rnd())
					   : gauge(&x, -1e3, 1e3, 5, 10);
			break;
		}
		s->v[i] = v;
	}
}

/* ---- round trips ---- */

static void roundtrip_property(void **state)
{
	(void)state;
	for (unsigned round = 0; round < 600; round++) {
		rng_seed(0x5eed0000 + round);
		S.n = 1 + (size_t)rndn(round % 10 == 0 ? MAXN : 300);
		switch (rndn(3)) {
		case 0:
			times_wild(&S);
			break;
		default:
			times_jitter(&S, (int)rndn(8));
			break;
		}
		values(&S, round % 12);
		roundtrip(&S, 0);
	}
}

static void every_prefix_decodes(void **state)
{
	(void)state;
	for (unsigned kind = 0; kind < 12; kind++) {
		rng_seed(0xabc0 + kind);
		S.n = 150;
		if (kind % 2)
			times_wild(&S);
		else
			times_jitter(&S, 5);
		values(&S, kind);
		roundtrip(&S, 1);
	}
}

static void special_values_and_timestamps(void **state)
{
	(void)state;
	/* Each special value after each other one, at the int64 extremes. */
	S.n = 0;
	for (size_t i = 0; i < NSPECIAL; i++) {
		for (size_t j = 0; j < NSPECIAL; j++) {
			S.t[S.n] = INT64_MIN + (int64_t)S.n;
			S.v[S.n++] = gw_double_of(special_bits[i]);
			S.t[S.n] = INT64_MIN + (int64_t)S.n;
			S.v[S.n++] = gw_double_of(special_bits[j]);
		}
	}
	roundtrip(&S, 0);

	/* The whole int64 range in one step, then repeats at INT64_MAX. */
	S.n = 0;
	S.t[S.n] = INT64_MIN;
	S.v[S.n++] = -0.0;
	S.t[S.n] = INT64_MAX;
	S.v[S.n++] = 0.0;
	S.t[S.n] = INT64_MAX;
	S.v[S.n++] = -0.0;
	S.t[S.n] = INT64_MAX;
	S.v[S.n++] = gw_double_of(0x7ff0000000000001ULL);
	roundtrip(&S, 1);

	/* Steps that swing between 1 and 2^63 - 1 and back. */
	{
		static const int64_t swing[] = {
			INT64_MIN, -1, 0, INT64_MAX - 1, INT64_MAX,
		};

		S.n = 0;
		for (size_t i = 0; i < sizeof(swing) / sizeof(swing[0]); i++) {
			S.t[S.n] = swing[i];
			S.v[S.n++] = (double)i;
		}
		roundtrip(&S, 1);
	}

	/* A single sample, the same timestamp many times. */
	S.n = 1;
	S.t[0] = -1;
	S.v[0] = gw_double_of(0xfff4000000000abcULL);
	roundtrip(&S, 1);
	S.n = 500;
	for (size_t i = 0; i < S.n; i++) {
		S.t[i] = 7;
		S.v[i] = (double)(i % 3);
	}
	roundtrip(&S, 0);
}

/* Telemetry the store really keeps stays small; a user sees disk use. */
static void gpu_telemetry_is_compact(void **state)
{
	size_t len;

	(void)state;
	rng_seed(7);
	S.n = 3600;
	/* Exact 1 s steps and a temperature: about 2 bits a sample. */
	times_jitter(&S, 0);
	values(&S, 3);
	len = roundtrip(&S, 0);
	assert_true(len < S.n / 3);
	/* A few ms of jitter and power with 3 decimals: well under raw. */
	times_jitter(&S, 4);
	values(&S, 4);
	len = roundtrip(&S, 0);
	assert_true(len < S.n * 4);
	/* An energy counter: much less than its 8 raw bytes. */
	values(&S, 5);
	len = roundtrip(&S, 0);
	assert_true(len < S.n * 4);
}

/* ---- timestamps on a collector's tick grid (format version 3) ---- */

/*
 * Jitter is coded once, against the grid the collector ticks on: a
 * constant gauge read every second 0-2 ms late costs about 3.4 bits a
 * sample (version 2, which coded differences of two jitters, took 4),
 * and so does a clock that drifts, after gaps and a change of interval.
 */
static void jitter_costs_its_entropy(void **state)
{
	size_t len;

	(void)state;
	rng_seed(11);
	S.n = 3600;
	for (size_t i = 0; i < S.n; i++) {
		S.t[i] = 1764547200000LL + 1000 * (int64_t)i + (int64_t)rndn(3);
		S.v[i] = 61.0;
	}
	len = roundtrip(&S, 0);
	assert_true(len * 8 < S.n * 36 / 10);
	/* A clock 0.3 ms slow a tick, its readings 0-2 ms late. */
	for (size_t i = 0; i < S.n; i++)
		S.t[i] = 1764547200000LL + 1000 * (int64_t)i +
			 (int64_t)(0.3 * (double)i) + (int64_t)rndn(3);
	len = roundtrip(&S, 0);
	assert_true(len * 8 < S.n * 36 / 10);
	/* A missed reading every 100, and the interval doubled halfway. */
	for (size_t i = 0, k = 0; i < S.n; k++) {
		int64_t g = k < 2000 ? 1000 * (int64_t)k
				     : 2000000 + 2000 * (int64_t)(k - 2000);

		if (k % 100 == 50)
			continue;
		S.t[i++] = 1764547200000LL + g + (int64_t)rndn(3);
	}
	len = roundtrip(&S, 0);
	assert_true(len * 8 < S.n * 40 / 10);
}

/*
 * Series read at the same instants (a GPU's metrics share a collector's
 * timestamp) have byte-identical timestamp streams, whatever their values:
 * the store's zstd blocks then keep those bytes once.
 */
static void same_instants_same_timestamp_bytes(void **state)
{
	static struct series b;
	struct gw_chunk_enc ea, eb;
	const uint8_t *pa, *pb, *q;
	size_t la, lb, at;
	uint64_t tb = 0;

	(void)state;
	rng_seed(5);
	S.n = b.n = 3600;
	times_jitter(&S, 2);
	memcpy(b.t, S.t, sizeof(S.t));
	values(&S, 4); /* power, three decimals */
	for (size_t i = 0; i < b.n; i++)
		b.v[i] = (double)(i / 600); /* a clock that steps */
	gw_chunk_enc_init(&ea);
	gw_chunk_enc_init(&eb);
	for (size_t i = 0; i < S.n; i++) {
		assert_int_equal(gw_chunk_append(&ea, S.t[i], S.v[i]), 0);
		assert_int_equal(gw_chunk_append(&eb, b.t[i], b.v[i]), 0);
	}
	pa = gw_chunk_bytes(&ea, &la);
	pb = gw_chunk_bytes(&eb, &lb);
	check_decodes(pa, la, S.t, S.v, S.n);
	/* The timestamp stream's length (a varint after the header), then
	 * the stream: the same in both, and most of the smaller chunk. */
	q = pa + 8;
	assert_int_equal(gw_varint_get(&q, pa + la, &tb), 0);
	at = (size_t)(q - pa);
	assert_true(at + tb <= la && at + tb <= lb);
	assert_memory_equal(pa + 8, pb + 8, at - 8 + tb);
	assert_true(tb > lb / 2);
	assert_memory_not_equal(pa + at + tb, pb + at + tb, 8);
	gw_chunk_enc_release(&ea);
	gw_chunk_enc_release(&eb);
}

/* A version 2 chunk (written by the previous encoder) still decodes. */
static const uint8_t chunk_v2[] = {
	0x02, 0x00, 0xc8, 0x00, 0x9b, 0x64, 0x31, 0x6e, 0x00, 0x00, 0x01, 0x9a,
	0xd7, 0x35, 0x84, 0x00, 0xfc, 0xaf, 0xfe, 0xf4, 0xc0, 0x08, 0x20, 0x02,
	0x41, 0x04, 0x82, 0x20, 0x28, 0x0a, 0x04, 0x81, 0x40, 0xa0, 0x90, 0x28,
	0x14, 0x24, 0x14, 0x14, 0x24, 0x14, 0x14, 0x48, 0x50, 0x86, 0x10, 0x43,
	0x10, 0x86, 0x21, 0x0c, 0x88, 0xc8, 0x8c, 0x88, 0xc8, 0x92, 0x84, 0x79,
	0xa9, 0xff, 0xff, 0xff, 0xa5, 0xc0, 0xc7, 0x03, 0x1c, 0x0c, 0xa1, 0x09,
	0x42, 0x13, 0xf8, 0x04, 0x78, 0x66, 0x00, 0x00, 0x00, 0x71, 0xc9, 0xc7,
	0x33, 0x83, 0x8e, 0x4c, 0xf3, 0x38, 0x33, 0xc9, 0x9e, 0x67, 0x0f, 0xff,
	0x8e, 0x23, 0x9e, 0x5e, 0x58, 0x76, 0x79, 0x98, 0xb3, 0xc9, 0x9e, 0x66,
	0x48, 0xc0, 0xe3, 0x80, 0x1a, 0x00, 0x48, 0x01, 0x40, 0x0a, 0x00, 0x90,
	0x02, 0x80, 0x14, 0x02, 0x40, 0x14, 0x01, 0x40, 0x24, 0x01, 0x40, 0x28,
	0x09, 0x00, 0xa0, 0x14, 0x04, 0x80, 0xa0, 0x28, 0x12, 0x03, 0xff, 0xff,
	0xff, 0xb4, 0xed, 0x3a, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xae, 0x03, 0x00,
	0x7f, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x82, 0x80, 0xea, 0xaa, 0xaa, 0xaa,
	0xaa, 0xaa, 0xc0, 0xc0, 0x0a, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xe0, 0x60,
	0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xd0, 0x50, 0x0d, 0x55, 0x55, 0x55,
	0x55, 0x55, 0x58, 0x18, 0x01, 0x55, 0x55, 0x55, 0x55, 0x55, 0x5c, 0x0c,
	0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfa, 0x14, 0x1f, 0x55, 0x55, 0x55,
	0x55, 0x55, 0x56, 0x0c, 0x00, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xae, 0x0c,
	0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf8, 0x38, 0x06, 0xaa, 0xaa, 0xaa,
	0xaa, 0xaa, 0xa8, 0x50, 0x02, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xb1, 0x40,
	0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x87, 0x01, 0xd5, 0x55, 0x55, 0x55,
	0x55, 0x55, 0x14, 0x00, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xac, 0x50, 0x07,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xe1, 0xc0, 0x35, 0x55, 0x55, 0x55, 0x55,
	0x55, 0x45, 0x00, 0x2a, 0xaa, 0xaa, 0xaa, 0xaa, 0xab, 0x28, 0x03, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xf1, 0xd4, 0x75, 0x55, 0x55, 0x55, 0x55, 0x55,
	0x48, 0x43, 0x10, 0x8c, 0x88, 0xc8, 0x8c, 0x88, 0xc9, 0x09, 0x40,
};

static void fixture_sample(int i, int64_t *t, double *v)
{
	*t = 1764547200000LL + 1000LL * i +
	     ((i < 60 || i >= 140) ? i * 7 % 3 : 0) + (i >= 100 ? 5000 : 0);
	*v = i < 50    ? 42.0
	     : i < 120 ? (i % 10) * 0.25
	     : i < 160 ? 2.5
	     : i < 180 ? i / 3.0
		       : 7.0;
}

static void version_2_still_decodes(void **state)
{
	struct gw_chunk_enc e;
	size_t len;
	const uint8_t *p;

	(void)state;
	assert_int_equal(chunk_v2[0], 2);
	for (int i = 0; i < 200; i++)
		fixture_sample(i, &S.t[i], &S.v[i]);
	S.n = 200;
	check_decodes(chunk_v2, sizeof(chunk_v2), S.t, S.v, S.n);
	/* The same samples written now: version 3, and no larger. */
	gw_chunk_enc_init(&e);
	for (size_t i = 0; i < S.n; i++)
		assert_int_equal(gw_chunk_append(&e, S.t[i], S.v[i]), 0);
	p = gw_chunk_bytes(&e, &len);
	assert_int_equal(p[0], 3);
	assert_true(len <= sizeof(chunk_v2));
	check_decodes(p, len, S.t, S.v, S.n);
	gw_chunk_enc_release(&e);
}

/* ---- runs of exactly predicted samples ---- */

/* A value that repeats in runs of geometric length, broken in many ways. */
static void runs_broken(struct series *s, unsigned how)
{
	int64_t t = 1700000000000LL;
	double v = 42;

	for (size_t i = 0; i < s->n; i++) {
		if (i && rndn(40) == 0) {
			switch (how % 6) {
			case 0: /* one changed value, then back */
				s->t[i] = t += 1000;
				s->v[i] = v + 1;
				continue;
			case 1: /* a new level */
				v += (double)rndn(5) - 2;
				break;
			case 2: /* one late timestamp, then on the grid */
				s->t[i] = t + 1003;
				s->v[i] = v;
				t += 1000;
				continue;
			case 3: /* a gap: the interval changes for a while */
				t += 5000;
				break;
			case 4: /* a repeated timestamp */
				t -= 1000;
				break;
			default: /* a NaN: XOR mode from there on */
				v = gw_double_of(0x7ff8000000000000ULL |
						 rndn(8));
				break;
			}
		}
		s->t[i] = t += 1000;
		s->v[i] = v;
	}
}

static void constant_runs_decode_mid_run(void **state)
{
	(void)state;
	/* A constant at exact ticks, taken after every append. */
	rng_seed(31);
	S.n = MAXN;
	times_jitter(&S, 0);
	for (size_t i = 0; i < S.n; i++)
		S.v[i] = 42;
	roundtrip(&S, 1);
	/* The same in XOR mode (a NaN), and at one repeated timestamp. */
	S.n = 1000;
	for (size_t i = 0; i < S.n; i++) {
		S.t[i] = i < 2 ? (int64_t)i : 7;
		S.v[i] = gw_double_of(0x7ff0000000000001ULL);
	}
	roundtrip(&S, 1);
	/* A counter rising by exactly the same step: predicted too. */
	times_jitter(&S, 0);
	for (size_t i = 0; i < S.n; i++)
		S.v[i] = 1e9 + 12.5 * (double)i;
	roundtrip(&S, 1);
	/* The run ends exactly at INT64_MAX. */
	S.n = 300;
	for (size_t i = 0; i < S.n; i++) {
		S.t[i] = INT64_MAX - (int64_t)(S.n - 1 - i) * 1000;
		S.v[i] = -0.0;
	}
	roundtrip(&S, 1);
}

static void runs_broken_decode_mid_run(void **state)
{
	(void)state;
	for (unsigned how = 0; how < 6; how++) {
		rng_seed(0x7a11 + how);
		S.n = 1500;
		runs_broken(&S, how);
		roundtrip(&S, 1);
	}
	/* Runs broken by exactly one sample, after runs of every length. */
	S.n = 0;
	for (size_t len = 0; len < 70 && S.n < MAXN - 80; len++) {
		for (size_t j = 0; j < len + 2; j++) {
			S.t[S.n] = (int64_t)S.n * 10;
			S.v[S.n++] = 3.25;
		}
		S.t[S.n] = (int64_t)S.n * 10;
		S.v[S.n++] =
			len % 2 ? 3.5 : gw_double_of(0x400a000000000000ULL);
	}
	roundtrip(&S, 1);
}

/* A constant gauge is nearly free; one change costs a few bytes. */
static void constant_runs_are_nearly_free(void **state)
{
	size_t len, len1;

	(void)state;
	rng_seed(5);
	S.n = 3600;
	times_jitter(&S, 0);
	for (size_t i = 0; i < S.n; i++)
		S.v[i] = 1980;
	/* The first ~32 samples are coded (1 bit for each residual) before
	 * a run opens: version 3 waits for the timestamps to show
	 * themselves regular. */
	len = roundtrip(&S, 0);
	assert_true(len <= 48);
	/* One changed sample in the middle. */
	S.v[1800] = 1985;
	len1 = roundtrip(&S, 0);
	assert_true(len1 <= len + 8);
	/* A step to another level every 100 samples. */
	for (size_t i = 0; i < S.n; i++)
		S.v[i] = (double)(1000 + 15 * (i / 100));
	len = roundtrip(&S, 0);
	assert_true(len <= 36 * 8 + 32);
}

static void run_to_max_samples(void **state)
{
	struct gw_chunk_enc e;
	const uint8_t *p;
	uint8_t copy[64];
	size_t len, len2;

	(void)state;
	gw_chunk_enc_init(&e);
	for (uint32_t i = 0; i < GW_CHUNK_MAX_SAMPLES; i++) {
		assert_int_equal(gw_chunk_append(&e, (int64_t)i * 1000, 7.5),
				 0);
		/* Taken now and then while the run grows. */
		if (i % 4096 == 4095 || i == 2) {
			p = gw_chunk_bytes(&e, &len);
			assert_int_equal(
				gw_chunk_decode_all(p, len, dt_, dv_,
						    GW_CHUNK_MAX_SAMPLES),
				(long)i + 1);
			assert_true(dt_[i] == (int64_t)i * 1000);
			assert_true(gw_bits_of(dv_[i]) == gw_bits_of(7.5));
		}
	}
	p = gw_chunk_bytes(&e, &len);
	assert_true(len <= 48);
	memcpy(copy, p, len);
	/* Full by count, in the middle of the run: nothing changes. */
	assert_int_equal(
		gw_chunk_append(&e, (int64_t)GW_CHUNK_MAX_SAMPLES * 1000, 7.5),
		-ENOSPC);
	assert_int_equal(gw_chunk_count(&e), GW_CHUNK_MAX_SAMPLES);
	p = gw_chunk_bytes(&e, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(p, copy, len);
	assert_int_equal(
		gw_chunk_decode_all(p, len, dt_, dv_, GW_CHUNK_MAX_SAMPLES),
		GW_CHUNK_MAX_SAMPLES);
	for (uint32_t i = 0; i < GW_CHUNK_MAX_SAMPLES; i++)
		if (dt_[i] != (int64_t)i * 1000 ||
		    gw_bits_of(dv_[i]) != gw_bits_of(7.5))
			fail_msg("sample %u", i);
	/* A run reset and started again in the same allocation. */
	gw_chunk_enc_reset(&e);
	S.n = 50;
	for (size_t i = 0; i < S.n; i++) {
		S.t[i] = (int64_t)i;
		S.v[i] = 1;
		assert_int_equal(gw_chunk_append(&e, S.t[i], S.v[i]), 0);
	}
	p = gw_chunk_bytes(&e, &len);
	check_decodes(p, len, S.t, S.v, S.n);
	gw_chunk_enc_release(&e);
}

/*
 * The size limit met while a run is open: the chunk is filled with big
 * samples to a few bytes short of the limit, then a run grows until its
 * length no longer fits.  The refused append changes nothing, and the
 * chunk still takes a sample that fits.
 */
static int64_t big_t[GW_CHUNK_MAX_SAMPLES];
static double big_v[GW_CHUNK_MAX_SAMPLES];
static uint8_t big_copy[GW_CHUNK_MAX_BYTES];

static void full_by_size_mid_run(void **state)
{
	struct gw_chunk_enc e;
	int64_t *ts = big_t;
	double *vs = big_v;
	uint8_t *copy = big_copy;
	const uint8_t *p;
	uint64_t t = 0, v = 0;
	size_t len = 0, len2, n = 0, run = 0;
	int r;

	(void)state;
	rng_seed(77);
	gw_chunk_enc_init(&e);
	/* Big samples (as in full_by_size) to some 50 bytes short. */
	while (len < GW_CHUNK_MAX_BYTES - 64) {
		t += n % 2 ? 1ULL << 48 : 0;
		v ^= n % 2 ? 0x8000000000000002ULL |
				     (rnd() & 0x3ffffffffffffffcULL)
			   : 0x4000000000000001ULL |
				     (rnd() & 0x3ffffffffffffffeULL);
		assert_int_equal(
			gw_chunk_append(&e, (int64_t)t, gw_double_of(v)), 0);
		ts[n] = (int64_t)t;
		vs[n++] = gw_double_of(v);
		/* (A sample adds < 32 bytes; the checksum is not free.) */
		if (n % 64 == 0 || len >= GW_CHUNK_MAX_BYTES - 4096)
			p = gw_chunk_bytes(&e, &len);
	}
	/* Cheap samples (sign flips, same timestamp) up to 2 bytes short. */
	for (;;) {
		p = gw_chunk_bytes(&e, &len);
		if (len >= GW_CHUNK_MAX_BYTES - 2)
			break;
		v ^= 1ULL << 63;
		assert_int_equal(
			gw_chunk_append(&e, (int64_t)t, gw_double_of(v)), 0);
		ts[n] = (int64_t)t;
		vs[n++] = gw_double_of(v);
	}
	assert_int_equal(len, GW_CHUNK_MAX_BYTES - 2);
	/* The same sample again and again: a run, until its length won't fit. */
	for (;;) {
		r = gw_chunk_append(&e, (int64_t)t, gw_double_of(v));
		if (r)
			break;
		ts[n] = (int64_t)t;
		vs[n++] = gw_double_of(v);
		run++;
	}
	assert_int_equal(r, -ENOSPC);
	assert_true(n < GW_CHUNK_MAX_SAMPLES);
	assert_true(run > 10); /* a run, not one sample */
	assert_int_equal(gw_chunk_count(&e), n);
	p = gw_chunk_bytes(&e, &len);
	assert_true(len <= GW_CHUNK_MAX_BYTES);
	memcpy(copy, p, len);
	/* Refused again, and a sample that ends the run does not fit either. */
	assert_int_equal(gw_chunk_append(&e, (int64_t)t, gw_double_of(v)),
			 -ENOSPC);
	assert_int_equal(gw_chunk_append(&e, (int64_t)t, 1.5), -ENOSPC);
	assert_int_equal(gw_chunk_count(&e), n);
	p = gw_chunk_bytes(&e, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(p, copy, len);
	check_decodes(p, len, ts, vs, n);
	gw_chunk_enc_release(&e);
}

/* ---- limits and errors ---- */

static void out_of_order_changes_nothing(void **state)
{
	struct gw_chunk_enc e;
	const uint8_t *p;
	uint8_t before[256];
	size_t len, len2;

	(void)state;
	gw_chunk_enc_init(&e);
	assert_int_equal(gw_chunk_append(&e, 1000, 1.5), 0);
	assert_int_equal(gw_chunk_append(&e, 2000, 2.5), 0);
	p = gw_chunk_bytes(&e, &len);
	assert_true(len <= sizeof(before));
	memcpy(before, p, len);
	assert_int_equal(gw_chunk_append(&e, 1999, 3.5), -EDOM);
	assert_int_equal(gw_chunk_append(&e, INT64_MIN, 3.5), -EDOM);
	assert_int_equal(gw_chunk_count(&e), 2);
	assert_true(gw_chunk_last(&e) == 2000);
	p = gw_chunk_bytes(&e, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(p, before, len);
	/* The same timestamp again is fine. */
	assert_int_equal(gw_chunk_append(&e, 2000, 4.5), 0);
	S.n = 3;
	S.t[0] = 1000, S.t[1] = 2000, S.t[2] = 2000;
	S.v[0] = 1.5, S.v[1] = 2.5, S.v[2] = 4.5;
	p = gw_chunk_bytes(&e, &len);
	check_decodes(p, len, S.t, S.v, 3);
	gw_chunk_enc_release(&e);
}

static void full_by_count(void **state)
{
	struct gw_chunk_enc e;
	const uint8_t *p;
	size_t len, len2;
	uint8_t *copy;

	(void)state;
	gw_chunk_enc_init(&e);
	for (uint32_t i = 0; i < GW_CHUNK_MAX_SAMPLES; i++)
		assert_int_equal(gw_chunk_append(&e, (int64_t)i * 1000,
						 (double)(i % 100)),
				 0);
	p = gw_chunk_bytes(&e, &len);
	copy = malloc(len);
	assert_non_null(copy);
	memcpy(copy, p, len);
	assert_int_equal(gw_chunk_append(&e, INT64_MAX, 1), -ENOSPC);
	assert_int_equal(gw_chunk_count(&e), GW_CHUNK_MAX_SAMPLES);
	p = gw_chunk_bytes(&e, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(p, copy, len);
	assert_int_equal(
		gw_chunk_decode_all(p, len, dt_, dv_, GW_CHUNK_MAX_SAMPLES),
		GW_CHUNK_MAX_SAMPLES);
	assert_true(dt_[GW_CHUNK_MAX_SAMPLES - 1] ==
		    (int64_t)(GW_CHUNK_MAX_SAMPLES - 1) * 1000);
	/* Too little room in the caller's arrays. */
	assert_int_equal(
		gw_chunk_decode_all(p, len, dt_, dv_, GW_CHUNK_MAX_SAMPLES - 1),
		-ENOSPC);
	free(copy);

	/* Reset empties it; the allocation is reused. */
	gw_chunk_enc_reset(&e);
	assert_int_equal(gw_chunk_count(&e), 0);
	assert_null(gw_chunk_bytes(&e, &len));
	assert_int_equal(len, 0);
	assert_int_equal(gw_chunk_append(&e, 5, 6), 0);
	S.n = 1;
	S.t[0] = 5;
	S.v[0] = 6;
	p = gw_chunk_bytes(&e, &len);
	check_decodes(p, len, S.t, S.v, 1);
	gw_chunk_enc_release(&e);
}

static void full_by_size(void **state)
{
	struct gw_chunk_enc e;
	const uint8_t *p;
	size_t len = 0, len2;
	uint8_t *copy;
	uint64_t t = 0x8000000000000000ULL; /* INT64_MIN */
	uint64_t v = 0;
	uint32_t n;
	int r = 0;

	(void)state;
	rng_seed(99);
	gw_chunk_enc_init(&e);
	/*
	 * Steps alternating between 0 and 2^48, and values whose XOR with
	 * the previous one never fits the last window: some 17 bytes a
	 * sample, so the size limit comes before the count.
	 */
	for (n = 0; n < GW_CHUNK_MAX_SAMPLES; n++) {
		t += n % 2 ? 1ULL << 48 : 0;
		v ^= n % 2 ? 0x8000000000000002ULL |
				     (rnd() & 0x3ffffffffffffffcULL)
			   : 0x4000000000000001ULL |
				     (rnd() & 0x3ffffffffffffffeULL);
		r = gw_chunk_append(&e, (int64_t)t, gw_double_of(v));
		if (r)
			break;
	}
	assert_int_equal(r, -ENOSPC);
	assert_true(n < GW_CHUNK_MAX_SAMPLES);
	assert_int_equal(gw_chunk_count(&e), n);
	p = gw_chunk_bytes(&e, &len);
	assert_true(len <= GW_CHUNK_MAX_BYTES);
	assert_true(len > GW_CHUNK_MAX_BYTES - 64);
	copy = malloc(len);
	assert_non_null(copy);
	memcpy(copy, p, len);
	/* Another big sample fails the same way and changes nothing. */
	assert_int_equal(gw_chunk_append(&e, INT64_MAX, gw_double_of(rnd())),
			 -ENOSPC);
	p = gw_chunk_bytes(&e, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(p, copy, len);
	assert_int_equal(
		gw_chunk_decode_all(p, len, dt_, dv_, GW_CHUNK_MAX_SAMPLES), n);
	free(copy);
	gw_chunk_enc_release(&e);
}

/* ---- damaged input ---- */

/* Decodes whatever p is; anything but -EBADMSG must be a valid series. */
static long decode_any(const uint8_t *p, size_t len)
{
	long r = gw_chunk_decode_all(p, len, dt_, dv_, GW_CHUNK_MAX_SAMPLES);

	if (r < 0)
		assert_int_equal(r, -EBADMSG);
	for (long i = 1; i < r; i++)
		assert_true(dt_[i] >= dt_[i - 1]);
	return r;
}

static void corruption_is_detected(void **state)
{
	struct gw_chunk_enc e;
	const uint8_t *p;
	uint8_t buf[512];
	size_t len;

	(void)state;
	for (unsigned kind = 0; kind < 12; kind++) {
		rng_seed(0xbad0 + kind);
		S.n = 24;
		times_jitter(&S, 3);
		values(&S, kind);
		gw_chunk_enc_init(&e);
		for (size_t i = 0; i < S.n; i++)
			assert_int_equal(gw_chunk_append(&e, S.t[i], S.v[i]),
					 0);
		p = gw_chunk_bytes(&e, &len);
		assert_true(len <= sizeof(buf));
		memcpy(buf, p, len);
		/* Every single bit flip. */
		for (size_t bit = 0; bit < len * 8; bit++) {
			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			assert_int_equal(decode_any(buf, len), -EBADMSG);
			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		/* Every truncation, and one byte too many. */
		for (size_t l = 0; l < len; l++)
			assert_int_equal(decode_any(buf, l), -EBADMSG);
		buf[len] = 0;
		assert_int_equal(decode_any(buf, len + 1), -EBADMSG);
		assert_int_equal(decode_any(buf, len), (long)S.n);
		assert_int_equal(decode_any(NULL, 0), -EBADMSG);
		gw_chunk_enc_release(&e);
	}
}

static void garbage_never_crashes(void **state)
{
	uint8_t buf[300];

	(void)state;
	rng_seed(4242);
	for (unsigned round = 0; round < 20000; round++) {
		size_t len = (size_t)rndn(sizeof(buf));

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		if (len >= 2 && rndn(2)) {
			buf[0] = 2; /* a plausible header, wrong checksum */
			buf[1] = 0;
		}
		decode_any(buf, len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_property),
		cmocka_unit_test(every_prefix_decodes),
		cmocka_unit_test(special_values_and_timestamps),
		cmocka_unit_test(gpu_telemetry_is_compact),
		cmocka_unit_test(jitter_costs_its_entropy),
		cmocka_unit_test(version_2_still_decodes),
		cmocka_unit_test(same_instants_same_timestamp_bytes),
		cmocka_unit_test(constant_runs_decode_mid_run),
		cmocka_unit_test(runs_broken_decode_mid_run),
		cmocka_unit_test(constant_runs_are_nearly_free),
		cmocka_unit_test(run_to_max_samples),
		cmocka_unit_test(full_by_size_mid_run),
		cmocka_unit_test(out_of_order_changes_nothing),
		cmocka_unit_test(full_by_count),
		cmocka_unit_test(full_by_size),
		cmocka_unit_test(corruption_is_detected),
		cmocka_unit_test(garbage_never_crashes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
