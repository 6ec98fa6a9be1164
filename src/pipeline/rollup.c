/* SPDX-License-Identifier: MIT */
/*
 * rollup.c - window aggregates and the rollup chunk of rollup.h.
 *
 * Rollup chunk, version 1: columns, so that like sits next to like (the
 * varints and the XOR double coding are sketch.h's wire primitives):
 *
 *   u8      version = 1
 *   varint  n (<= GW_ROLLUP_CHUNK_MAX)
 *   n x     t: the first as a zigzag varint, then the first delta, then
 *           deltas of deltas (zigzag; modulo 2^64, so any int64 fits);
 *           strictly increasing
 *   n x     count: varint, a whole number <= 2^53
 *   for the m rollups with count > 0 only, column by column:
 *   m x     t - t_last: zigzag varint
 *   m x     sum, then m x min, max, sumsq, last: each an XOR double
 *           against the previous value of its own column (0 to start)
 *   m x     the sketch (gw_sketch_encode, self-delimiting)
 *   u32     CRC-32C of everything before it, little-endian
 *
 * An empty rollup carries only t and its count 0.  The decoder checks the
 * checksum first, then every field: lengths, min <= max with last between
 * them, sumsq not negative or NaN, the sketches, and that the columns end
 * exactly at the checksum.  Encoding what it decoded gives the same bytes.
 */
#include "pipeline/rollup.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ROLLUP_VERSION 1
#define COUNT_MAX 9007199254740992.0 /* 2^53: every whole number below fits */

/* ---- the aggregate ---- */

static void empty(struct gw_rollup *r, int64_t t_end)
{
	r->t = t_end;
	r->t_last = INT64_MIN;
	r->count = 0;
	r->sum = 0;
	r->sumsq = 0;
	r->min = NAN;
	r->max = NAN;
	r->last = NAN;
}

void gw_rollup_init(struct gw_rollup *r, int64_t t_end)
{
	empty(r, t_end);
	gw_sketch_init(&r->sk);
}

void gw_rollup_release(struct gw_rollup *r)
{
	gw_sketch_release(&r->sk);
	empty(r, r->t);
}

void gw_rollup_reset(struct gw_rollup *r, int64_t t_end)
{
	empty(r, t_end);
	gw_sketch_reset(&r->sk);
}

int gw_rollup_add(struct gw_rollup *r, int64_t t, double v)
{
	if (isnan(v))
		return 0;
	if (r->count == 0 || v < r->min)
		r->min = v;
	if (r->count == 0 || v > r->max)
		r->max = v;
	if (r->count == 0 || t >= r->t_last) {
		r->last = v;
		r->t_last = t;
	}
	r->count += 1;
	r->sum += v;
	r->sumsq += v * v;
	return gw_sketch_add(&r->sk, v);
}

int gw_rollup_merge(struct gw_rollup *dst, const struct gw_rollup *src)
{
	/* src may be dst: its fields are read before dst changes. */
	struct gw_rollup s = *src;
	int err;

	if (s.count == 0)
		return 0;
	err = gw_sketch_merge(&dst->sk, &src->sk);
	if (err)
		return err;
	if (dst->count == 0 || s.min < dst->min)
		dst->min = s.min;
	if (dst->count == 0 || s.max > dst->max)
		dst->max = s.max;
	if (dst->count == 0 || s.t_last >= dst->t_last) {
		dst->last = s.last;
		dst->t_last = s.t_last;
	}
	dst->count += s.count;
	dst->sum += s.sum;
	dst->sumsq += s.sumsq;
	return 0;
}

double gw_rollup_mean(const struct gw_rollup *r)
{
	if (!(r->count > 0))
		return NAN;
	return r->sum / r->count;
}

double gw_rollup_stddev(const struct gw_rollup *r)
{
	double mean, var;

	if (!(r->count > 0))
		return NAN;
	if (r->min == r->max)
		return 0; /* all equal: exactly, whatever the rounding */
	/*
	 * E[x^2] - mean^2 with mean^2 unrounded (fma).  The difference of two
	 * close numbers can still come out a few ulps below zero when all
	 * values are (nearly) equal: that is a variance of 0.
	 */
	mean = r->sum / r->count;
	var = fma(-mean, mean, r->sumsq / r->count);
	if (var < 0)
		var = 0;
	return sqrt(var);
}

/* ---- checksum ---- */

/* CRC-32C, reflected polynomial 0x82f63b78, four bits at a time. */
static const uint32_t crc_nibble[16] = {
	0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1,
	0x417b1dbc, 0x5125dad3, 0x61c69362, 0x7198540d,
	0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9,
	0xc38d26c4, 0xd3d3e1ab, 0xe330a81a, 0xf36e6f75,
};

uint32_t gw_rollup_crc32c(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	crc = ~crc;
	for (i = 0; i < n; i++) {
		crc ^= b[i];
		crc = (crc >> 4) ^ crc_nibble[crc & 15];
		crc = (crc >> 4) ^ crc_nibble[crc & 15];
	}
	return ~crc;
}

/* ---- encoding ---- */

static uint64_t bits_of(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static double double_of(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

/* What the decoder accepts of one rollup's own fields. */
static bool fields_valid(const struct gw_rollup *r)
{
	if (r->count == 0)
		return true;
	return r->min <= r->max && r->last >= r->min && r->last <= r->max &&
	       r->sumsq >= 0;
}

static bool count_valid(double c)
{
	return c >= 0 && c <= COUNT_MAX && c == floor(c);
}

enum { COL_SUM, COL_MIN, COL_MAX, COL_SUMSQ, COL_LAST, NCOLS };

static double column(const struct gw_rollup *r, int c)
{
	switch (c) {
	case COL_SUM:
		return r->sum;
	case COL_MIN:
		return r->min;
	case COL_MAX:
		return r->max;
	case COL_SUMSQ:
		return r->sumsq;
	default:
		return r->last;
	}
}

static double *column_ref(struct gw_rollup *r, int c)
{
	switch (c) {
	case COL_SUM:
		return &r->sum;
	case COL_MIN:
		return &r->min;
	case COL_MAX:
		return &r->max;
	case COL_SUMSQ:
		return &r->sumsq;
	default:
		return &r->last;
	}
}

static int append_crc(struct gw_buf *out, size_t start)
{
	uint32_t crc = gw_rollup_crc32c(0, out->p + start, out->len - start);
	uint8_t le[4] = { (uint8_t)crc, (uint8_t)(crc >> 8),
			  (uint8_t)(crc >> 16), (uint8_t)(crc >> 24) };

	return gw_buf_add(out, le, sizeof(le));
}

int gw_rollup_encode(const struct gw_rollup *r, size_t n, struct gw_buf *out)
{
	struct gw_sketch_wr w;
	size_t start = out->len, i;
	uint64_t prev_t = 0, prev_d = 0, prev;
	int c, err;

	if (n > GW_ROLLUP_CHUNK_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if ((i > 0 && r[i].t <= r[i - 1].t) ||
		    !count_valid(r[i].count) || !fields_valid(&r[i]))
			return -EINVAL;
	}

	gw_sketch_wr_init(&w, out);
	gw_sketch_wr_u8(&w, ROLLUP_VERSION);
	gw_sketch_wr_varint(&w, n);
	for (i = 0; i < n; i++) {
		uint64_t t = (uint64_t)r[i].t, d = t - prev_t;

		gw_sketch_wr_svarint(&w, i < 2 ? d : d - prev_d);
		prev_d = d;
		prev_t = t;
	}
	for (i = 0; i < n; i++)
		gw_sketch_wr_varint(&w, (uint64_t)r[i].count);
	for (i = 0; i < n; i++) {
		if (r[i].count > 0)
			gw_sketch_wr_svarint(&w, (uint64_t)r[i].t -
							 (uint64_t)r[i].t_last);
	}
	for (c = 0; c < NCOLS; c++) {
		prev = 0;
		for (i = 0; i < n; i++) {
			uint64_t x;

			if (r[i].count == 0)
				continue;
			x = bits_of(column(&r[i], c));
			gw_sketch_wr_xor(&w, x ^ prev);
			prev = x;
		}
	}
	err = gw_sketch_wr_finish(&w);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		if (r[i].count == 0)
			continue;
		err = gw_sketch_encode(&r[i].sk, out);
		if (err)
			goto err;
	}
	err = append_crc(out, start);
	if (err)
		goto err;
	return 0;
err:
	out->len = start;
	if (out->p)
		out->p[start] = '\0';
	return err;
}

/* ---- decoding ---- */

void gw_rollup_free_array(struct gw_rollup *r, size_t n)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < n; i++)
		gw_rollup_release(&r[i]);
	free(r);
}

static int get_columns(struct gw_sketch_rd *rd, struct gw_rollup *r, size_t n)
{
	uint64_t prev_t = 0, prev_d = 0, x, prev;
	size_t i, used;
	int c, err;

	for (i = 0; i < n; i++) {
		if (gw_sketch_rd_svarint(rd, &x))
			return -EBADMSG;
		prev_d = i < 2 ? x : prev_d + x;
		prev_t += prev_d;
		r[i].t = (int64_t)prev_t;
		if (i > 0 && r[i].t <= r[i - 1].t)
			return -EBADMSG;
	}
	for (i = 0; i < n; i++) {
		if (gw_sketch_rd_varint(rd, &x) || x > (uint64_t)COUNT_MAX)
			return -EBADMSG;
		r[i].count = (double)x;
	}
	for (i = 0; i < n; i++) {
		if (r[i].count == 0)
			continue;
		if (gw_sketch_rd_svarint(rd, &x))
			return -EBADMSG;
		r[i].t_last = (int64_t)((uint64_t)r[i].t - x);
	}
	for (c = 0; c < NCOLS; c++) {
		prev = 0;
		for (i = 0; i < n; i++) {
			if (r[i].count == 0)
				continue;
			if (gw_sketch_rd_xor(rd, &x))
				return -EBADMSG;
			prev ^= x;
			*column_ref(&r[i], c) = double_of(prev);
		}
	}
	for (i = 0; i < n; i++) {
		if (r[i].count == 0)
			continue;
		if (!fields_valid(&r[i]))
			return -EBADMSG;
		err = gw_sketch_decode(&r[i].sk, rd->p,
				       (size_t)(rd->end - rd->p), &used);
		if (err)
			return err;
		rd->p += used;
	}
	return rd->p == rd->end ? 0 : -EBADMSG;
}

int gw_rollup_decode(const uint8_t *p, size_t len, struct gw_rollup **out,
		     size_t *n)
{
	struct gw_sketch_rd rd;
	struct gw_rollup *r = NULL;
	uint64_t count = 0;
	uint32_t crc;
	uint8_t version;
	size_t i;
	int err = -EBADMSG;

	*out = NULL;
	*n = 0;
	if (len < 2 + 4)
		return -EBADMSG;
	crc = (uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 |
	      (uint32_t)p[len - 2] << 16 | (uint32_t)p[len - 1] << 24;
	if (gw_rollup_crc32c(0, p, len - 4) != crc)
		return -EBADMSG;
	rd.p = p;
	rd.end = p + len - 4;
	if (gw_sketch_rd_u8(&rd, &version) || version != ROLLUP_VERSION ||
	    gw_sketch_rd_varint(&rd, &count) || count > GW_ROLLUP_CHUNK_MAX)
		return -EBADMSG;
	/* Each rollup takes two bytes at least (t and count). */
	if ((uint64_t)(rd.end - rd.p) / 2 < count)
		return -EBADMSG;
	if (count == 0)
		return rd.p == rd.end ? 0 : -EBADMSG;
	r = malloc((size_t)count * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		gw_rollup_init(&r[i], 0);
	err = get_columns(&rd, r, (size_t)count);
	if (err)
		goto err_free;
	*out = r;
	*n = (size_t)count;
	return 0;
err_free:
	gw_rollup_free_array(r, (size_t)count);
	return err;
}
