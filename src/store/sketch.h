/* SPDX-License-Identifier: MIT */
/*
 * sketch.h - a mergeable quantile sketch with a relative-error guarantee
 * (the DDSketch idea: logarithmic buckets of ratio gamma = (1+a)/(1-a)).
 *
 * Contract
 * - Relative accuracy GW_SKETCH_ALPHA (1%): for any quantile q of the values
 *   added (or of the union of merged sketches), gw_sketch_quantile returns x
 *   with |x - v_q| <= 0.01 * |v_q|, where v_q is the exact q-quantile under
 *   the "lower" definition (rank floor(q * (count - 1)), 0-based, of the
 *   sorted values).  Zero is exact.  Negative values are kept in a mirror
 *   set of buckets.  NaN is ignored (counted in nan); +-Inf are clamped to
 *   the largest representable bucket.  Subnormal values (magnitude below
 *   DBL_MIN) count as zero: their error is below DBL_MIN, not relative.
 *   The extremes are exact: q = 0 gives min, q = 1 gives max.
 * - Merging is exact: merge(a, b) answers as one sketch fed a's and b's
 *   values would (the same state and encoding, collapsed or not, whatever
 *   the order of adds and merges).
 * - A bucket holds at most 2^32 - 1 values: past that an add or merge is
 *   -EOVERFLOW; that and -ENOMEM leave the sketch unchanged.
 * - Bounded: at most GW_SKETCH_MAX_BINS non-empty buckets per sign; beyond
 *   that the lowest-magnitude buckets are collapsed into one (accuracy is
 *   kept for the upper quantiles, as in DDSketch's collapsing variant) and
 *   the collapse is counted.
 * - Serialised form: versioned, compact (varints, delta-coded indexes);
 *   gw_sketch_decode checks everything and returns -EBADMSG on any
 *   malformed input, never reading outside [p, p+len).
 *
 * Memory: a sketch owns a heap array of bins; _release frees it.  Not
 * thread-safe.  Errors: 0 or -errno.
 */
#ifndef GW_SKETCH_H
#define GW_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define GW_SKETCH_ALPHA	   0.01
#define GW_SKETCH_MAX_BINS 2048

struct gw_sketch_bin {
	int32_t index;
	uint32_t count;
};

struct gw_sketch {
	struct gw_sketch_bin *pos, *neg; /* sorted by index */
	uint32_t npos, nneg, cappos, capneg;
	uint64_t zero;	/* values equal to 0 */
	uint64_t count; /* all values but NaN */
	uint64_t nan;
	uint64_t collapsed; /* values moved by collapsing */
	double min, max;    /* exact extremes (NaN when empty) */
	/* Private: collapsed = cpos + cneg; the collapsed values all sit in
	 * pos[0] / neg[0], and knowing how many per side keeps merging
	 * exact and independent of the order of the values. */
	uint64_t cpos, cneg;
};

void gw_sketch_init(struct gw_sketch *s);
void gw_sketch_release(struct gw_sketch *s);
void gw_sketch_reset(struct gw_sketch *s);

/* Adds one value (weight 1).  -ENOMEM leaves the sketch unchanged. */
__attribute__((warn_unused_result)) int gw_sketch_add(struct gw_sketch *s,
						      double v);
/* Adds a value n times. */
__attribute__((warn_unused_result)) int gw_sketch_add_n(struct gw_sketch *s,
							double v, uint64_t n);

/*
 * Memory, for owners that keep a budget: the bytes of bin arrays s holds,
 * and the most that adding v (any weight) would allocate (0 when v fits in
 * the arrays s has: an existing bucket, a free slot, zero, NaN or a full
 * side that collapses).
 */
size_t gw_sketch_bytes(const struct gw_sketch *s);
size_t gw_sketch_add_grows(const struct gw_sketch *s, double v);

/* dst += src. */
__attribute__((warn_unused_result)) int
gw_sketch_merge(struct gw_sketch *dst, const struct gw_sketch *src);

/* The q-quantile (0 <= q <= 1); NaN for an empty sketch or q outside. */
double gw_sketch_quantile(const struct gw_sketch *s, double q);

/*
 * The q-quantile as Prometheus computes it (quantile_over_time, the
 * quantile aggregation): rank h = q * (count - 1), the values of ranks
 * floor(h) and floor(h) + 1 interpolated linearly.  Each of the two is the
 * sketch's (within GW_SKETCH_ALPHA of the exact value, the extremes
 * exact), so when they have the same sign the answer is within
 * GW_SKETCH_ALPHA of the exact interpolated quantile; across zero the
 * error is at most GW_SKETCH_ALPHA times the larger of the two
 * magnitudes.  NaN for an empty sketch or q outside [0, 1].
 */
double gw_sketch_quantile_interp(const struct gw_sketch *s, double q);

/* Appends the serialised sketch to out. */
__attribute__((warn_unused_result)) int
gw_sketch_encode(const struct gw_sketch *s, struct gw_buf *out);

/*
 * Decodes one sketch from p[0..len) into s (which is reset first);
 * *used = bytes consumed.  0 or -EBADMSG / -ENOMEM.
 */
__attribute__((warn_unused_result)) int gw_sketch_decode(struct gw_sketch *s,
							 const uint8_t *p,
							 size_t len,
							 size_t *used);

/*
 * Private: the wire primitives of the sketch encoding, shared with
 * rollup.c (the rollup chunk uses the same varints and double coding).
 * Not for other modules.
 *
 * A writer stages bytes and appends them to out in pieces; the first
 * error sticks, and _finish truncates out back to where the writer began,
 * so a failed encode leaves out as it was.
 *
 * Doubles are coded as the XOR of their bits with a previous value's: one
 * byte (leading zero bytes << 4 | meaningful bytes), then the meaningful
 * bytes, most significant first; 0x00 alone is an XOR of 0.  Readers
 * accept only that canonical form.
 */
struct gw_sketch_wr {
	struct gw_buf *out;
	size_t start; /* out->len when the writer began */
	size_t n;     /* staged bytes */
	int err;
	uint8_t tmp[256];
};

struct gw_sketch_rd {
	const uint8_t *p, *end;
};

void gw_sketch_wr_init(struct gw_sketch_wr *w, struct gw_buf *out);
void gw_sketch_wr_u8(struct gw_sketch_wr *w, uint8_t v);
void gw_sketch_wr_varint(struct gw_sketch_wr *w, uint64_t v);
/* v taken as two's complement, zigzag-mapped, then a varint. */
void gw_sketch_wr_svarint(struct gw_sketch_wr *w, uint64_t v);
void gw_sketch_wr_xor(struct gw_sketch_wr *w, uint64_t x);
/* The bytes gw_sketch_wr_xor writes for x. */
size_t gw_sketch_xor_len(uint64_t x);
/* Flushes; 0, or the first error with out truncated back. */
__attribute__((warn_unused_result)) int
gw_sketch_wr_finish(struct gw_sketch_wr *w);

/* Each returns 0 or -EBADMSG (short input, overlong or non-canonical). */
__attribute__((warn_unused_result)) int gw_sketch_rd_u8(struct gw_sketch_rd *r,
							uint8_t *v);
__attribute__((warn_unused_result)) int
gw_sketch_rd_varint(struct gw_sketch_rd *r, uint64_t *v);
__attribute__((warn_unused_result)) int
gw_sketch_rd_svarint(struct gw_sketch_rd *r, uint64_t *v);
__attribute__((warn_unused_result)) int gw_sketch_rd_xor(struct gw_sketch_rd *r,
							 uint64_t *x);

/*
 * Private, for rollup.c: the "bare" encoding of a sketch whose extremes
 * are kept elsewhere (a rollup's min and max).  It leaves out the
 * version, nan (which must be 0), min and max, and the index of each
 * non-empty side's top bucket (the one its extreme falls in).
 *
 * gw_sketch_bare_ok: whether s can be coded so (not empty, no NaN
 * counted, and its extremes and top buckets as a sketch fed values has
 * them).  gw_sketch_encode_bare appends it to out (-EINVAL when not
 * bare_ok).  gw_sketch_decode_bare is gw_sketch_decode with the extremes
 * given back: it checks them as that does, and gives the very sketch.
 */
bool gw_sketch_bare_ok(const struct gw_sketch *s);
__attribute__((warn_unused_result)) int
gw_sketch_encode_bare(const struct gw_sketch *s, struct gw_buf *out);
__attribute__((warn_unused_result)) int
gw_sketch_decode_bare(struct gw_sketch *s, const uint8_t *p, size_t len,
		      double min, double max, size_t *used);

#endif
