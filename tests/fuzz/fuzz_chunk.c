// SPDX-License-Identifier: MIT
/*
 * fuzz_chunk.c - the sample codec both ways.
 *
 * 1. The input as a chunk: decoding must not crash, must give -EBADMSG or
 *    the announced number of samples, and decoded timestamps never go back.
 *    A leading byte 0xff is replaced by a valid header and checksum for the
 *    rest, so the payload decoder is reached past the CRC.
 * 2. The input as samples to encode (a small instruction set: timestamp
 *    step and value kind per record, optionally repeated to make runs):
 *    the chunk must decode to exactly the samples appended, bit for bit,
 *    also while it is still open (in the middle of a run too).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/bits.h"
#include "common/crc32c.h"
#include "fuzz.h"
#include "store/chunk.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

#define MAXS 4096

static int64_t ts[GW_CHUNK_MAX_SAMPLES], want_t[MAXS];
static double vs[GW_CHUNK_MAX_SAMPLES], want_v[MAXS];

static void decode_checked(const uint8_t *p, size_t len)
{
	struct gw_chunk_dec d;
	long n = gw_chunk_decode_all(p, len, ts, vs, GW_CHUNK_MAX_SAMPLES);
	int64_t t, tprev = INT64_MIN;
	double v;
	long i = 0;
	int r;

	CHECK(n == -EBADMSG || n >= 1);
	for (long j = 1; j < n; j++)
		CHECK(ts[j] >= ts[j - 1]);
	/* The streaming decoder agrees with decode_all. */
	if (gw_chunk_dec_init(&d, p, len)) {
		CHECK(n == -EBADMSG);
		return;
	}
	while ((r = gw_chunk_next(&d, &t, &v)) == 1) {
		CHECK(t >= tprev);
		tprev = t;
		if (n > 0)
			CHECK(t == ts[i] && gw_bits_of(v) == gw_bits_of(vs[i]));
		i++;
	}
	CHECK(r == 0 || r == -EBADMSG);
	CHECK(r == 0 ? n == i : n == -EBADMSG);
	CHECK(i <= (long)gw_chunk_dec_count(&d));
}

/* Input 0xff, then a count byte and a payload: a header is made for it. */
static void decode_with_header(const uint8_t *p, size_t len)
{
	uint8_t *buf;
	uint32_t crc;

	if (len < 2)
		return;
	buf = malloc(len + 6);
	if (!buf)
		return;
	buf[0] = len & 1 ? 3 : 2; /* the format version, both read */
	buf[1] = 0;
	buf[2] = p[1];
	buf[3] = 0;
	memcpy(buf + 8, p + 2, len - 2);
	crc = gw_crc32c(gw_crc32c(0, buf, 4), buf + 8, len - 2);
	for (int i = 0; i < 4; i++)
		buf[4 + i] = (uint8_t)(crc >> (8 * i));
	decode_checked(buf, len + 6);
	free(buf);
}

static uint64_t take(const uint8_t **p, const uint8_t *end, unsigned n)
{
	uint64_t v = 0;

	while (n-- && *p < end)
		v = v << 8 | *(*p)++;
	return v;
}

static const uint64_t special[8] = {
	0x8000000000000000ULL, 0x7ff0000000000000ULL, 0xfff0000000000000ULL,
	0x7ff8000000000000ULL, 0x7ff0000000000001ULL, 0x0000000000000001ULL,
	0x7fefffffffffffffULL, 0x433fffffffffffffULL,
};

static void check_open(struct gw_chunk_enc *e, size_t n)
{
	size_t len;
	const uint8_t *p = gw_chunk_bytes(e, &len);
	long got = gw_chunk_decode_all(p, len, ts, vs, GW_CHUNK_MAX_SAMPLES);

	CHECK(got == (long)n);
	for (size_t i = 0; i < n; i++)
		CHECK(ts[i] == want_t[i] &&
		      gw_bits_of(vs[i]) == gw_bits_of(want_v[i]));
}

static void encode_from(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	struct gw_chunk_enc e;
	uint64_t t = take(&p, end, 8);
	double v = 0;
	size_t n = 0, reps;
	int r;

	gw_chunk_enc_init(&e);
	while (p < end && n < MAXS) {
		unsigned op = *p++;
		uint64_t room = 0x7fffffffffffffffULL - t, step;

		switch (op & 3) {
		case 0:
			step = 0;
			break;
		case 1:
			step = 1000 + take(&p, end, 1) % 8;
			break;
		case 2:
			step = take(&p, end, 2);
			break;
		default:
			step = take(&p, end, 8);
			break;
		}
		if (n && step > room)
			step = room;
		switch ((op >> 2) & 7) {
		case 0:
			break;
		case 1:
			v = (double)(int8_t)take(&p, end, 1);
			break;
		case 2:
			v = gw_double_of(take(&p, end, 8));
			break;
		case 3:
			v = (double)(int64_t)take(&p, end, 3) / 1000;
			break;
		case 4:
			v = gw_double_of(special[take(&p, end, 1) % 8]);
			break;
		case 5:
			v += (double)(int16_t)take(&p, end, 2);
			break;
		case 6:
			v = (double)take(&p, end, 7) * 1048576.0;
			break;
		default:
			v = (double)(int64_t)take(&p, end, 8) / 10;
			break;
		}
		if (n)
			t += step;
		/* Now and then a timestamp from the past: refused. */
		if (n && (op & 0xe0) == 0xe0 && want_t[n - 1] != INT64_MIN)
			CHECK(gw_chunk_append(&e, want_t[n - 1] - 1, v) ==
			      -EDOM);
		r = gw_chunk_append(&e, (int64_t)t, v);
		if (r == -ENOSPC)
			break;
		CHECK(r == 0);
		want_t[n] = (int64_t)t;
		want_v[n++] = v;
		if (op >= 0xf0)
			check_open(&e, n);
		/*
		 * Ops 0x20..0x3f, 0xa0..0xbf: the same step and value up to
		 * 255 times more (a run); with 0x80 the open chunk is checked
		 * on both sides of every power of two (where the run's length
		 * takes another bit).
		 */
		reps = (op & 0x60) == 0x20 ? take(&p, end, 1) : 0;
		for (size_t i = 1; i <= reps && n < MAXS; i++) {
			room = 0x7fffffffffffffffULL - t;
			t += step < room ? step : room;
			r = gw_chunk_append(&e, (int64_t)t, v);
			if (r == -ENOSPC)
				goto out;
			CHECK(r == 0);
			want_t[n] = (int64_t)t;
			want_v[n++] = v;
			if ((op & 0x80) && (!(i & (i - 1)) || !(i & (i + 1))))
				check_open(&e, n);
		}
	}
out:
	if (n)
		check_open(&e, n);
	gw_chunk_enc_release(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size && data[0] == 0xff)
		decode_with_header(data, size);
	else
		decode_checked(data, size);
	if (size > 1)
		encode_from(data + 1, size - 1);
	return 0;
}
