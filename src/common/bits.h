/* SPDX-License-Identifier: MIT */
/*
 * bits.h - small encoding helpers shared by the codecs: a double's bits as
 * a uint64_t and back, zigzag mapping, and LEB128 varints.
 *
 * Everything is static inline and pure apart from the buffer/pointer it is
 * given; thread-safe as far as its arguments are.
 *
 * Varints are LEB128: seven bits a byte, least significant group first,
 * the top bit set on every byte but the last; a uint64_t takes at most
 * GW_VARINT_MAX bytes.  The writer always emits the shortest form.  The
 * reader takes a bounded input (*p advances past what it read, also on
 * failure) and returns -EBADMSG for input that ends inside a varint or
 * runs past ten bytes.  By default it is lenient otherwise: overlong forms
 * (trailing zero groups) are accepted and bits above 63 in the tenth byte
 * are ignored.  With GW_VARINT_CANONICAL it accepts exactly what the writer
 * emits: no trailing zero group, and a tenth byte of 0 or 1 only.
 */
#ifndef GW_BITS_H
#define GW_BITS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"

#define GW_VARINT_MAX	    10
#define GW_VARINT_CANONICAL 1u /* flag: reject non-shortest forms */

static inline uint64_t gw_bits_of(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static inline double gw_double_of(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

/* v taken as two's complement: 0, -1, 1, -2, ... map to 0, 1, 2, 3, ... */
static inline uint64_t gw_zigzag(uint64_t v)
{
	return (v << 1) ^ (0 - (v >> 63));
}

static inline uint64_t gw_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* Writes v's varint to out[0..GW_VARINT_MAX); returns the bytes used. */
static inline size_t gw_varint_enc(uint8_t *out, uint64_t v)
{
	size_t k = 0;

	while (v >= 0x80) {
		out[k++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[k++] = (uint8_t)v;
	return k;
}

/* Appends v's varint to b; a failure stays in b, as with gw_buf_put(). */
static inline void gw_varint_put(struct gw_buf *b, uint64_t v)
{
	uint8_t tmp[GW_VARINT_MAX];

	gw_buf_put(b, tmp, gw_varint_enc(tmp, v));
}

/* Reads one varint from [*p, end) into *out; flags: GW_VARINT_CANONICAL. */
__attribute__((warn_unused_result)) static inline int
gw_varint_get_flags(const uint8_t **p, const uint8_t *end, uint64_t *out,
		    unsigned int flags)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	for (;;) {
		if (*p >= end)
			return -EBADMSG;
		b = *(*p)++;
		/* The tenth byte holds bit 63 only and ends the varint. */
		if (shift == 63 &&
		    ((b & 0x80) || ((flags & GW_VARINT_CANONICAL) && b > 1)))
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
		shift += 7;
	}
	/* overlong: a trailing zero group */
	if ((flags & GW_VARINT_CANONICAL) && b == 0 && shift > 0)
		return -EBADMSG;
	*out = v;
	return 0;
}

/* The lenient reader (see above). */
__attribute__((warn_unused_result)) static inline int
gw_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	return gw_varint_get_flags(p, end, out, 0);
}

#endif
