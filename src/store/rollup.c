/* SPDX-License-Identifier: MIT */
/*
 * rollup.c - window aggregates and the rollup chunk of rollup.h.
 *
 * Rollup chunk, version 2: columns, so that like sits next to like (the
 * varints and the XOR double coding are sketch.h's wire primitives), and
 * per-rollup flags for what need not be stored:
 *
 *   u8      version = 2
 *   varint  n (<= GW_ROLLUP_CHUNK_MAX)
 *   n x     t: the first as a zigzag varint, then the first delta, then
 *           deltas of deltas (zigzag; modulo 2^64, so any int64 fits);
 *           strictly increasing
 *   runs    the n rollups' flags (below) as { varint flags, varint run
 *           length - 1 }, each run's flags unlike the one before
 *   count   varint (a whole number <= 2^53), for the rollups whose flags
 *           lack COUNT_SAME (the previous rollup's count; 0 before the
 *           first)
 *   for the m rollups with count > 0 only, column by column:
 *   t - t_last: zigzag varint, unless TL_SAME (the previous non-empty
 *           rollup's; 0 before the first)
 *   min, then max, last, sum, sumsq: each an XOR double against the
 *           previous non-empty rollup's value of its column (0 to start),
 *           unless implied: max by MAX_IS_MIN (bit for bit), last by
 *           LAST_IS_MIN or else LAST_IS_MAX, sum and sumsq, only with
 *           MAX_IS_MIN, by SUM_N (0.0 + count * min) and SUMSQ_N
 *           (0.0 + count * (min * min)), which a window of equal values
 *           built by gw_rollup_add usually has
 *   the sketches by their form (two flag bits): FULL gw_sketch_encode;
 *           BARE gw_sketch_encode_bare (the extremes are the rollup's,
 *           -0.0 taken as 0); DERIVED nothing: it is the sketch of
 *           count - 1 values min and one max (every single-sample or
 *           constant window, every one whose values share a bucket)
 *   u32     CRC-32C of everything before it, little-endian
 *
 * Version 3 adds first and reset (columns and flags), version 4 a mode
 * byte before each column that stores a value: XOR doubles as above, or
 * decimal (put_dec, docs/internals/rollups.md).
 *
 * The encoder sets every flag that holds (flags_of), so a column of
 * regular windows is a single run; an empty rollup carries only t and
 * COUNT_SAME or its count 0.  The decoder checks the checksum first, then
 * every field: lengths, min <= max with last between them, sumsq not
 * negative or NaN, the sketches, that the flags are exactly the ones the
 * encoder would set for what they decoded to, and that the columns end
 * exactly at the checksum.  Encoding what it decoded gives the same bytes
 * (a version 3 chunk comes back as version 4, every field the same).
 */
#include "store/rollup.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/bits.h"
#include "common/crc32c.h"

#define ROLLUP_VERSION 4		  /* written; 2 and 3 are still read */
#define COUNT_MAX      9007199254740992.0 /* 2^53: every whole number below fits */

/* ---- the aggregate ---- */

static void empty(struct gw_rollup *r, int64_t t_end)
{
	r->t = t_end;
	r->t_last = INT64_MIN;
	r->t_first = INT64_MIN;
	r->count = 0;
	r->sum = 0;
	r->sumsq = 0;
	r->min = NAN;
	r->max = NAN;
	r->last = NAN;
	r->first = NAN;
	r->reset = 0;
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
	if (r->count == 0 || t < r->t_first) {
		r->first = v;
		r->t_first = t;
	}
	if (r->count == 0 || t >= r->t_last) {
		if (r->count > 0 && v < r->last) {
			/* A counter's reset; a second one in the window, or
			 * a drop from zero or below, is a gauge's. */
			if (r->reset != 0 || !(r->last > 0))
				r->reset = NAN;
			else
				r->reset += r->last;
		}
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
	if (dst->count == 0) {
		dst->first = s.first;
		dst->t_first = s.t_first;
		dst->reset = s.reset;
	} else if (!gw_rollup_has_first(dst) || !gw_rollup_has_first(&s)) {
		dst->first = NAN; /* not known: neither are the resets */
		dst->t_first = INT64_MIN;
		dst->reset = NAN;
	} else if (s.t_first >= dst->t_last) { /* src after dst */
		dst->reset += s.reset + (s.first < dst->last ? dst->last : 0);
	} else if (s.t_last <= dst->t_first) { /* src before dst */
		dst->reset += s.reset + (dst->first < s.last ? s.last : 0);
		dst->first = s.first;
		dst->t_first = s.t_first;
	} else { /* overlapping: no order between them */
		dst->reset += s.reset;
		if (s.t_first < dst->t_first) {
			dst->first = s.first;
			dst->t_first = s.t_first;
		}
	}
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

/* ---- encoding ---- */

/* What the decoder accepts of one rollup's own fields (version 3: with
 * its first sample and resets, unless it does not know them). */
static bool fields_valid(const struct gw_rollup *r, int version)
{
	if (r->count == 0)
		return version < 3 || r->reset == 0;
	if (!(r->min <= r->max && r->last >= r->min && r->last <= r->max &&
	      r->sumsq >= 0))
		return false;
	return version < 3 || (r->t_first <= r->t_last && r->first >= r->min &&
			       r->first <= r->max);
}

static bool count_valid(double c)
{
	return c >= 0 && c <= COUNT_MAX && c == floor(c);
}

/* The double columns, in the order they are stored and decoded: a field
 * that can be implied is implied by those before it. */
enum {
	COL_MIN,
	COL_MAX,
	COL_LAST,
	COL_FIRST,
	COL_SUM,
	COL_SUMSQ,
	COL_RESET,
	NCOLS
};

static const int cols_v2[] = { COL_MIN, COL_MAX, COL_LAST, COL_SUM, COL_SUMSQ };
static const int cols_v3[] = { COL_MIN, COL_MAX,   COL_LAST, COL_FIRST,
			       COL_SUM, COL_SUMSQ, COL_RESET };

static double *column_ref(struct gw_rollup *r, int c)
{
	switch (c) {
	case COL_MIN:
		return &r->min;
	case COL_MAX:
		return &r->max;
	case COL_LAST:
		return &r->last;
	case COL_FIRST:
		return &r->first;
	case COL_SUM:
		return &r->sum;
	case COL_SUMSQ:
		return &r->sumsq;
	default:
		return &r->reset;
	}
}

static double column(const struct gw_rollup *r, int c)
{
	return *column_ref((struct gw_rollup *)r, c);
}

/* Per-rollup flags: what is implied rather than stored. */
enum {
	F_COUNT_SAME = 1 << 0,	/* count: the previous rollup's (0 first) */
	F_MAX_IS_MIN = 1 << 1,	/* max: min, bit for bit */
	F_LAST_IS_MIN = 1 << 2, /* last: min */
	F_LAST_IS_MAX = 1 << 3, /* last: max (and not min) */
	F_SUM_N = 1 << 4,	/* max is min, sum: 0.0 + count * min */
	F_SUMSQ_N = 1 << 5,	/* max is min, sumsq: 0.0 + count * min^2 */
	F_TL_SAME = 1 << 6,	/* t - t_last: the previous non-empty's */
	F_SK_SHIFT = 7,		/* two bits, the sketch's form; */
	F_ALL_V2 = (1 << 9) - 1,
	/* version 3: */
	F_TF_SAME = 1 << 9,	  /* t_last - t_first: the previous one's */
	F_FIRST_IS_MIN = 1 << 10, /* first: min */
	F_FIRST_IS_MAX = 1 << 11, /* first: max (and not min) */
	F_NO_RESET = 1 << 12,	  /* reset: 0.0 */
	F_NO_COUNTER = 1 << 13,	  /* reset: NaN, no counter's window */
	F_ALL = (1 << 14) - 1,
};

enum { SK_FULL, SK_BARE, SK_DERIVED };

static bool implied(unsigned int f, int c)
{
	switch (c) {
	case COL_MIN:
		return false;
	case COL_MAX:
		return f & F_MAX_IS_MIN;
	case COL_LAST:
		return f & (F_LAST_IS_MIN | F_LAST_IS_MAX);
	case COL_FIRST:
		return f & (F_FIRST_IS_MIN | F_FIRST_IS_MAX);
	case COL_SUM:
		return f & F_SUM_N;
	case COL_SUMSQ:
		return f & F_SUMSQ_N;
	default:
		return f & (F_NO_RESET | F_NO_COUNTER);
	}
}

/* The implied value of column c (the columns before it are known). */
static double implied_value(const struct gw_rollup *r, unsigned int f, int c)
{
	switch (c) {
	case COL_MAX:
		return r->min;
	case COL_LAST:
		return f & F_LAST_IS_MIN ? r->min : r->max;
	case COL_FIRST:
		return f & F_FIRST_IS_MIN ? r->min : r->max;
	case COL_SUM:
		return 0.0 + r->count * r->min;
	case COL_SUMSQ:
		return 0.0 + r->count * (r->min * r->min);
	default:
		return f & F_NO_RESET ? 0.0 : NAN;
	}
}

static bool same(double a, double b)
{
	return gw_bits_of(a) == gw_bits_of(b);
}

/* The sketch keeps 0 for -0.0. */
static double norm(double v)
{
	return v == 0 ? 0.0 : v;
}

/* The sketch of count - 1 values min and one max, into s. */
static int rebuild(struct gw_sketch *s, const struct gw_rollup *r)
{
	int err;

	gw_sketch_reset(s);
	err = gw_sketch_add_n(s, r->min, (uint64_t)r->count - 1);
	if (err)
		return err;
	return gw_sketch_add(s, r->max);
}

static bool sketch_same(const struct gw_sketch *a, const struct gw_sketch *b)
{
	return a->count == b->count && a->zero == b->zero && a->nan == b->nan &&
	       a->collapsed == b->collapsed && a->cpos == b->cpos &&
	       a->cneg == b->cneg && same(a->min, b->min) &&
	       same(a->max, b->max) && a->npos == b->npos &&
	       a->nneg == b->nneg &&
	       (!a->npos ||
		!memcmp(a->pos, b->pos, a->npos * sizeof(*a->pos))) &&
	       (!a->nneg || !memcmp(a->neg, b->neg, a->nneg * sizeof(*a->neg)));
}

/*
 * The form of a non-empty rollup's sketch: derived when it is exactly
 * what (count, min, max) rebuild (at most two buckets), bare when its
 * extremes are the rollup's, else full.  tmp is scratch.
 */
static int sketch_form(const struct gw_rollup *r, struct gw_sketch *tmp,
		       unsigned int *form)
{
	const struct gw_sketch *s = &r->sk;
	int err;

	if (s->nan == 0 && s->collapsed == 0 &&
	    s->count == (uint64_t)r->count &&
	    s->npos + s->nneg + (s->zero > 0) <= 2) {
		err = rebuild(tmp, r);
		if (err && err != -EOVERFLOW)
			return err;
		if (!err && sketch_same(s, tmp)) {
			*form = SK_DERIVED;
			return 0;
		}
	}
	if (gw_sketch_bare_ok(s) && same(s->min, norm(r->min)) &&
	    same(s->max, norm(r->max)))
		*form = SK_BARE;
	else
		*form = SK_FULL;
	return 0;
}

/* What the flags of the rollups so far leave behind for the next. */
struct prev {
	double count;
	uint64_t tl; /* t - t_last */
	uint64_t tf; /* t_last - t_first */
};

/* The flags the encoder gives r; the decoder checks its input by them. */
static int flags_of(const struct gw_rollup *r, struct prev *pv,
		    struct gw_sketch *tmp, int version, unsigned int *out)
{
	unsigned int f = 0, form;
	uint64_t tl;
	int err;

	if (r->count == pv->count)
		f |= F_COUNT_SAME;
	pv->count = r->count;
	if (r->count == 0) {
		*out = f;
		return 0;
	}
	tl = (uint64_t)r->t - (uint64_t)r->t_last;
	if (tl == pv->tl)
		f |= F_TL_SAME;
	pv->tl = tl;
	if (same(r->max, r->min)) {
		f |= F_MAX_IS_MIN;
		if (same(r->sum, implied_value(r, f, COL_SUM)))
			f |= F_SUM_N;
		if (same(r->sumsq, implied_value(r, f, COL_SUMSQ)))
			f |= F_SUMSQ_N;
	}
	if (same(r->last, r->min))
		f |= F_LAST_IS_MIN;
	else if (same(r->last, r->max))
		f |= F_LAST_IS_MAX;
	if (version >= 3) {
		uint64_t tf = (uint64_t)r->t_last - (uint64_t)r->t_first;

		if (tf == pv->tf)
			f |= F_TF_SAME;
		pv->tf = tf;
		if (same(r->first, r->min))
			f |= F_FIRST_IS_MIN;
		else if (same(r->first, r->max))
			f |= F_FIRST_IS_MAX;
		if (same(r->reset, 0.0))
			f |= F_NO_RESET;
		else if (same(r->reset, NAN))
			f |= F_NO_COUNTER;
	}
	err = sketch_form(r, tmp, &form);
	if (err)
		return err;
	*out = f | form << F_SK_SHIFT;
	return 0;
}

static int append_crc(struct gw_buf *out, size_t start)
{
	uint32_t crc = gw_crc32c(0, out->p + start, out->len - start);
	uint8_t le[4] = { (uint8_t)crc, (uint8_t)(crc >> 8),
			  (uint8_t)(crc >> 16), (uint8_t)(crc >> 24) };

	return gw_buf_add(out, le, sizeof(le));
}

/*
 * What a double column's value is XORed with: the previous non-empty
 * rollup's value of the column (0 to start); for first, the previous
 * one's last (the sample just before it), or its own last to start.
 */
static uint64_t xor_ref(const struct gw_rollup *r, int c, uint64_t prev,
			uint64_t prev_last, bool started)
{
	if (c != COL_FIRST)
		return prev;
	return started ? prev_last : gw_bits_of(r->last);
}

/*
 * Version 4 codes a column in decimal where that is shorter: a value v as
 * (m, d), v = the double d units in the last place from m / 10^e, with e
 * one per column and chunk, |m| <= 2^53 and |d| <= DEC_D_MAX.  Division
 * by an exact power of ten rounds correctly, so m / 10^e is the same
 * double wherever it is computed: the values are kept bit for bit, and a
 * sum of decimals a few ulps off its decimal costs a few bits, not eight
 * bytes.
 */
#define DEC_E_MAX 18
#define DEC_D_MAX 63
#define DEC_XOR	  0xff	    /* the column's mode byte: XOR doubles */
#define M_MAX	  COUNT_MAX /* |m|: every whole number up to it fits */

static const double pow10_tab[DEC_E_MAX + 1] = {
	1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
};

/* v as (m, d) at e: 1, or 0 where |d| would be too large, -1 where |m|
 * would (or v is not finite): then at every larger e too, since |v| 10^e
 * only grows with e (rounding is monotonic). */
static int dec_of(double v, int e, int64_t *m, int64_t *d)
{
	double x = v * pow10_tab[e];
	int64_t mm, dd;

	if (!(fabs(x) <= M_MAX))
		return -1;
	mm = llround(x);
	dd = (int64_t)(gw_bits_of(v) - gw_bits_of((double)mm / pow10_tab[e]));
	if (dd < -DEC_D_MAX || dd > DEC_D_MAX)
		return 0;
	*m = mm;
	*d = dd;
	return 1;
}

static double dec_value(int64_t m, int e, int64_t d)
{
	return gw_double_of(gw_bits_of((double)m / pow10_tab[e]) + (uint64_t)d);
}

static size_t varint_len(uint64_t v)
{
	uint8_t tmp[GW_VARINT_MAX];

	return gw_varint_enc(tmp, v);
}

/* Whether the column's i-th rollup stores a value. */
static bool coded(const struct gw_rollup *r, const uint16_t *flags, size_t i,
		  int c)
{
	return r[i].count > 0 && !implied(flags[i], c);
}

/* Whether every stored value of the column has its (m, d) at e (1; where
 * md is not NULL, the i-th value's are md[2 i] and md[2 i + 1] then), or
 * not (0), or not at any e from this one on (-1: dec_of). */
static int dec_all(const struct gw_rollup *r, size_t n, const uint16_t *flags,
		   int c, int e, int64_t *md, size_t *bad)
{
	int64_t m, d;
	size_t i;
	int ok;

	for (i = 0; i < n; i++) {
		if (!coded(r, flags, i, c))
			continue;
		ok = dec_of(column(&r[i], c), e, &m, &d);
		if (ok != 1) {
			if (bad)
				*bad = i;
			return ok;
		}
		if (md) {
			md[2 * i] = m;
			md[2 * i + 1] = d;
		}
	}
	return 1;
}

/* The column's stored values as XOR doubles, written to w unless it is
 * NULL; returns their bytes (0: none stored). */
static size_t xor_column(struct gw_sketch_wr *w, const struct gw_rollup *r,
			 size_t n, const uint16_t *flags, int c)
{
	uint64_t prev = 0, prev_last = 0;
	bool started = false;
	size_t i, len = 0;

	for (i = 0; i < n; i++) {
		uint64_t x, ref;

		if (r[i].count == 0)
			continue;
		x = gw_bits_of(column(&r[i], c));
		ref = xor_ref(&r[i], c, prev, prev_last, started);
		if (!implied(flags[i], c)) {
			len += gw_sketch_xor_len(x ^ ref);
			if (w)
				gw_sketch_wr_xor(w, x ^ ref);
		}
		prev = x;
		prev_last = gw_bits_of(r[i].last);
		started = true;
	}
	return len;
}

static size_t xor_size(const struct gw_rollup *r, size_t n,
		       const uint16_t *flags, int c)
{
	return xor_column(NULL, r, n, flags, c);
}

/* The fewest bits that hold z. */
static unsigned int bits_for(uint64_t z)
{
	unsigned int bits = 0;

	while (z >> bits)
		bits++;
	return bits;
}

/* The i-th value's (m, d) at e: from md where dec_all filled it. */
static void md_get(const struct gw_rollup *r, const int64_t *md, size_t i,
		   int c, int e, int64_t *m, int64_t *d)
{
	if (md) {
		*m = md[2 * i];
		*d = md[2 * i + 1];
	} else {
		(void)dec_of(column(&r[i], c), e, m, d);
	}
}

/*
 * The column's mode: the smallest e at which every stored value has its
 * (m, d), with the fewest bits for d (e | bits << 5), where that is
 * shorter than the XOR doubles; else DEC_XOR.  md, where not NULL: 2 n
 * int64_t, which then hold each stored value's (m, d) at that e (the
 * encoder's, so that each value's is found once).
 */
static unsigned int col_mode(const struct gw_rollup *r, size_t n,
			     const uint16_t *flags, int c, int64_t *md)
{
	size_t i, xlen = xor_size(r, n, flags, c), dlen = 0, bad = n;
	uint64_t zmax = 0, pm = 0;
	unsigned int bits;
	int64_t m = 0, d = 0;
	int e = 0;

	if (!xlen)
		return DEC_XOR;
	for (; e <= DEC_E_MAX; e++) {
		int ok;

		/* The value that did not fit at the last e is tried first:
		 * most often it does not fit at this one either. */
		if (bad < n) {
			ok = dec_of(column(&r[bad], c), e, &m, &d);
			if (ok < 0)
				return DEC_XOR;
			if (ok == 0)
				continue;
		}
		ok = dec_all(r, n, flags, c, e, md, &bad);
		if (ok == 1)
			break;
		if (ok < 0)
			return DEC_XOR; /* a value too large at every e */
	}
	if (e > DEC_E_MAX)
		return DEC_XOR;
	for (i = 0; i < n; i++) {
		if (!coded(r, flags, i, c))
			continue;
		md_get(r, md, i, c, e, &m, &d);
		if (gw_zigzag((uint64_t)d) > zmax)
			zmax = gw_zigzag((uint64_t)d);
	}
	bits = bits_for(zmax);
	for (i = 0; i < n; i++) {
		if (!coded(r, flags, i, c))
			continue;
		md_get(r, md, i, c, e, &m, &d);
		dlen += varint_len(gw_zigzag((uint64_t)m - pm) << bits |
				   gw_zigzag((uint64_t)d));
		pm = (uint64_t)m;
	}
	return dlen < xlen ? (unsigned int)e | bits << 5 : DEC_XOR;
}

/*
 * What col_mode would say of a decimal column the decoder read at
 * (e, bits), from what it read (the largest zigzag d, dlen bytes of
 * varints): no smaller e holds every value, bits is the fewest, and the
 * varints are shorter than the XOR doubles.
 */
static bool dec_canonical(const struct gw_rollup *r, size_t n,
			  const uint16_t *flags, int c, int e,
			  unsigned int bits, uint64_t zmax, size_t dlen)
{
	int k;

	if (bits != bits_for(zmax))
		return false;
	for (k = 0; k < e; k++)
		if (dec_all(r, n, flags, c, k, NULL, NULL) == 1)
			return false;
	return dlen < xor_size(r, n, flags, c);
}

/* A version 4 column: its mode byte (none where no value is stored),
 * then its values if decimal; false: the XOR doubles follow.  md: 2 n
 * int64_t of room. */
static bool put_dec(struct gw_sketch_wr *w, const struct gw_rollup *r, size_t n,
		    const uint16_t *flags, int c, int64_t *md)
{
	unsigned int mode = col_mode(r, n, flags, c, md), bits = mode >> 5;
	uint64_t pm = 0;
	size_t i;

	for (i = 0; i < n && !coded(r, flags, i, c); i++)
		;
	if (i == n)
		return true;
	gw_sketch_wr_u8(w, (uint8_t)mode);
	if (mode == DEC_XOR)
		return false;
	for (; i < n; i++) {
		if (!coded(r, flags, i, c))
			continue;
		gw_sketch_wr_varint(
			w, gw_zigzag((uint64_t)md[2 * i] - pm) << bits |
				   gw_zigzag((uint64_t)md[2 * i + 1]));
		pm = (uint64_t)md[2 * i];
	}
	return true;
}

static void put_columns(struct gw_sketch_wr *w, const struct gw_rollup *r,
			size_t n, const uint16_t *flags, int version,
			int64_t *md)
{
	const int *cols = version >= 3 ? cols_v3 : cols_v2;
	size_t ncols = version >= 3 ? NCOLS : NCOLS - 2;
	uint64_t prev_t = 0, prev_d = 0, prev;
	size_t i, j;

	gw_sketch_wr_u8(w, (uint8_t)version);
	gw_sketch_wr_varint(w, n);
	for (i = 0; i < n; i++) {
		uint64_t t = (uint64_t)r[i].t, d = t - prev_t;

		gw_sketch_wr_svarint(w, i < 2 ? d : d - prev_d);
		prev_d = d;
		prev_t = t;
	}
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && flags[j] == flags[i]; j++)
			;
		gw_sketch_wr_varint(w, flags[i]);
		gw_sketch_wr_varint(w, j - i - 1);
	}
	for (i = 0; i < n; i++) {
		if (!(flags[i] & F_COUNT_SAME))
			gw_sketch_wr_varint(w, (uint64_t)r[i].count);
	}
	/* Version 3 codes both as differences from the previous ones:
	 * jittered windows then take a byte, not three. */
	prev = 0;
	for (i = 0; i < n; i++) {
		uint64_t tl = (uint64_t)r[i].t - (uint64_t)r[i].t_last;

		if (r[i].count == 0)
			continue;
		if (!(flags[i] & F_TL_SAME))
			gw_sketch_wr_svarint(w, version >= 3 ? tl - prev : tl);
		prev = tl;
	}
	prev = 0;
	for (i = 0; i < n && version >= 3; i++) {
		uint64_t tf = (uint64_t)r[i].t_last - (uint64_t)r[i].t_first;

		if (r[i].count == 0)
			continue;
		if (!(flags[i] & F_TF_SAME))
			gw_sketch_wr_svarint(w, tf - prev);
		prev = tf;
	}
	for (size_t k = 0; k < ncols; k++) {
		int c = cols[k];

		if (version < 4 || !put_dec(w, r, n, flags, c, md))
			(void)xor_column(w, r, n, flags, c);
	}
}

int gw_rollup_encode(const struct gw_rollup *r, size_t n, struct gw_buf *out)
{
	struct prev pv = { 0, 0, 0 };
	struct gw_sketch_wr w;
	struct gw_sketch tmp;
	size_t start = out->len, i;
	uint16_t *flags = NULL;
	int64_t *md = NULL;
	int version = ROLLUP_VERSION;
	unsigned int f;
	int err;

	if (n > GW_ROLLUP_CHUNK_MAX)
		return -EINVAL;
	/* Rollups read from version 2 (reset NaN, and no first sample
	 * unless empty) are written as version 2: nothing is made up. */
	for (i = 0; i < n; i++)
		if (isnan(r[i].reset) &&
		    (r[i].count == 0 || r[i].t_first == INT64_MIN))
			version = 2;
	if (n == 0)
		version = 2; /* nothing differs: as an empty one always was */
	for (i = 0; i < n; i++) {
		if ((i > 0 && r[i].t <= r[i - 1].t) ||
		    !count_valid(r[i].count) || !fields_valid(&r[i], version))
			return -EINVAL;
	}
	flags = malloc((n ? n : 1) * sizeof(*flags));
	md = malloc((n ? 2 * n : 1) * sizeof(*md));
	if (!flags || !md) {
		free(flags);
		free(md);
		return -ENOMEM;
	}
	gw_sketch_init(&tmp);
	for (i = 0; i < n; i++) {
		err = flags_of(&r[i], &pv, &tmp, version, &f);
		if (err)
			goto out;
		flags[i] = (uint16_t)f;
	}
	gw_sketch_wr_init(&w, out);
	put_columns(&w, r, n, flags, version, md);
	err = gw_sketch_wr_finish(&w);
	if (err)
		goto out;
	for (i = 0; i < n && !err; i++) {
		if (r[i].count == 0)
			continue;
		switch ((flags[i] >> F_SK_SHIFT) & 3) {
		case SK_FULL:
			err = gw_sketch_encode(&r[i].sk, out);
			break;
		case SK_BARE:
			err = gw_sketch_encode_bare(&r[i].sk, out);
			break;
		default:
			break;
		}
	}
	if (!err)
		err = append_crc(out, start);
out:
	if (err) {
		out->len = start;
		if (out->p)
			out->p[start] = '\0';
	}
	gw_sketch_release(&tmp);
	free(flags);
	free(md);
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

/*
 * A version 4 column's mode byte and, if decimal, its values (the implied
 * ones filled in), each checked to be what the encoder writes: 0 when
 * done, 1 when the XOR doubles follow, -EBADMSG.
 */
static int get_dec(struct gw_sketch_rd *rd, struct gw_rollup *r, size_t n,
		   const uint16_t *flags, int c)
{
	uint64_t pm = 0, u, zd, zmax = 0;
	const uint8_t *start;
	unsigned int bits;
	uint8_t mode;
	int64_t m, m2, d2;
	size_t i;
	int e;

	for (i = 0; i < n && !coded(r, flags, i, c); i++)
		;
	if (i == n) {
		for (i = 0; i < n; i++)
			if (r[i].count > 0)
				*column_ref(&r[i], c) =
					implied_value(&r[i], flags[i], c);
		return 0;
	}
	if (gw_sketch_rd_u8(rd, &mode))
		return -EBADMSG;
	if (mode == DEC_XOR)
		return 1;
	start = rd->p;
	e = mode & 31;
	bits = mode >> 5;
	if (e > DEC_E_MAX)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		double *v = column_ref(&r[i], c);

		if (r[i].count == 0)
			continue;
		if (implied(flags[i], c)) {
			*v = implied_value(&r[i], flags[i], c);
			continue;
		}
		if (gw_sketch_rd_varint(rd, &u))
			return -EBADMSG;
		zd = u & ((1u << bits) - 1);
		m = (int64_t)(pm + gw_unzigzag(u >> bits));
		if (zd > 2 * DEC_D_MAX || m > (int64_t)M_MAX ||
		    m < -(int64_t)M_MAX)
			return -EBADMSG;
		*v = dec_value(m, e, (int64_t)gw_unzigzag(zd));
		if (dec_of(*v, e, &m2, &d2) != 1 || m2 != m)
			return -EBADMSG;
		pm = (uint64_t)m;
		if (zd > zmax)
			zmax = zd;
	}
	return dec_canonical(r, n, flags, c, e, bits, zmax,
			     (size_t)(rd->p - start))
		       ? 0
		       : -EBADMSG;
}

/* The columns of n rollups into r, their flags into flags. */
static int get_columns(struct gw_sketch_rd *rd, struct gw_rollup *r, size_t n,
		       uint16_t *flags, int version)
{
	const int *cols = version >= 3 ? cols_v3 : cols_v2;
	size_t ncols = version >= 3 ? NCOLS : NCOLS - 2;
	uint64_t prev_t = 0, prev_d = 0, x, run, prev;
	unsigned int all = version >= 3 ? F_ALL : F_ALL_V2;
	double count = 0;
	size_t i, k;

	for (i = 0; i < n; i++) {
		if (gw_sketch_rd_svarint(rd, &x))
			return -EBADMSG;
		prev_d = i < 2 ? x : prev_d + x;
		prev_t += prev_d;
		r[i].t = (int64_t)prev_t;
		if (i > 0 && r[i].t <= r[i - 1].t)
			return -EBADMSG;
	}
	/* Runs of flags: each run's differ from the one before. */
	for (i = 0; i < n; i += run + 1) {
		if (gw_sketch_rd_varint(rd, &x) || x > all ||
		    gw_sketch_rd_varint(rd, &run) || run >= n - i ||
		    (i > 0 && x == flags[i - 1]))
			return -EBADMSG;
		for (k = 0; k <= run; k++)
			flags[i + k] = (uint16_t)x;
	}
	for (i = 0; i < n; i++) {
		if (!(flags[i] & F_COUNT_SAME)) {
			if (gw_sketch_rd_varint(rd, &x) ||
			    x > (uint64_t)COUNT_MAX)
				return -EBADMSG;
			count = (double)x;
		}
		r[i].count = count;
	}
	prev = 0;
	for (i = 0; i < n; i++) {
		if (r[i].count == 0)
			continue;
		if (!(flags[i] & F_TL_SAME)) {
			if (gw_sketch_rd_svarint(rd, &x))
				return -EBADMSG;
			prev = version >= 3 ? prev + x : x;
		}
		r[i].t_last = (int64_t)((uint64_t)r[i].t - prev);
	}
	prev = 0;
	for (i = 0; i < n; i++) {
		if (version < 3) {
			/* Not known: the reader falls back (rollup.h). */
			r[i].reset = NAN;
			continue;
		}
		if (r[i].count == 0)
			continue;
		if (!(flags[i] & F_TF_SAME)) {
			if (gw_sketch_rd_svarint(rd, &x))
				return -EBADMSG;
			prev += x;
		}
		r[i].t_first = (int64_t)((uint64_t)r[i].t_last - prev);
	}
	for (k = 0; k < ncols; k++) {
		int c = cols[k];
		uint64_t prev_last = 0;
		bool started = false;
		int err;

		if (version >= 4) {
			err = get_dec(rd, r, n, flags, c);
			if (err < 0)
				return err;
			if (err == 0)
				continue;
		}
		prev = 0;
		for (i = 0; i < n; i++) {
			double *v = column_ref(&r[i], c);

			if (r[i].count == 0)
				continue;
			if (implied(flags[i], c)) {
				*v = implied_value(&r[i], flags[i], c);
			} else {
				if (gw_sketch_rd_xor(rd, &x))
					return -EBADMSG;
				*v = gw_double_of(x ^ xor_ref(&r[i], c, prev,
							      prev_last,
							      started));
			}
			prev = gw_bits_of(*v);
			prev_last = gw_bits_of(r[i].last);
			started = true;
		}
		/* XOR doubles only where decimal would not be shorter. */
		if (version >= 4 && col_mode(r, n, flags, c, NULL) != DEC_XOR)
			return -EBADMSG;
	}
	return 0;
}

/* The sketches, and every rollup checked against its flags. */
static int get_sketches(struct gw_sketch_rd *rd, struct gw_rollup *r, size_t n,
			const uint16_t *flags, int version,
			struct gw_sketch *tmp)
{
	struct prev pv = { 0, 0, 0 };
	unsigned int f;
	size_t i, used;
	int err;

	for (i = 0; i < n; i++) {
		if (r[i].count > 0) {
			if (!fields_valid(&r[i], version))
				return -EBADMSG;
			switch ((flags[i] >> F_SK_SHIFT) & 3) {
			case SK_FULL:
				err = gw_sketch_decode(
					&r[i].sk, rd->p,
					(size_t)(rd->end - rd->p), &used);
				break;
			case SK_BARE:
				err = gw_sketch_decode_bare(
					&r[i].sk, rd->p,
					(size_t)(rd->end - rd->p),
					norm(r[i].min), norm(r[i].max), &used);
				break;
			case SK_DERIVED:
				used = 0;
				err = rebuild(&r[i].sk, &r[i]);
				if (err == -EOVERFLOW)
					err = -EBADMSG;
				break;
			default:
				err = -EBADMSG;
				break;
			}
			if (err)
				return err;
			rd->p += used;
		}
		/* Only what the encoder writes: the same flags again. */
		err = flags_of(&r[i], &pv, tmp, version, &f);
		if (err)
			return err;
		if (f != flags[i])
			return -EBADMSG;
	}
	return rd->p == rd->end ? 0 : -EBADMSG;
}

int gw_rollup_decode(const uint8_t *p, size_t len, struct gw_rollup **out,
		     size_t *n)
{
	struct gw_sketch_rd rd;
	struct gw_rollup *r = NULL;
	struct gw_sketch tmp;
	uint16_t *flags = NULL;
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
	if (gw_crc32c(0, p, len - 4) != crc)
		return -EBADMSG;
	rd.p = p;
	rd.end = p + len - 4;
	if (gw_sketch_rd_u8(&rd, &version) || version < 2 ||
	    version > ROLLUP_VERSION || gw_sketch_rd_varint(&rd, &count) ||
	    count > GW_ROLLUP_CHUNK_MAX)
		return -EBADMSG;
	/* Each rollup takes a byte at least (its t). */
	if ((uint64_t)(rd.end - rd.p) < count)
		return -EBADMSG;
	if (count == 0)
		return rd.p == rd.end ? 0 : -EBADMSG;
	r = malloc((size_t)count * sizeof(*r));
	flags = malloc((size_t)count * sizeof(*flags));
	if (!r || !flags) {
		free(r);
		free(flags);
		return -ENOMEM;
	}
	for (i = 0; i < count; i++)
		gw_rollup_init(&r[i], 0);
	gw_sketch_init(&tmp);
	err = get_columns(&rd, r, (size_t)count, flags, version);
	if (!err)
		err = get_sketches(&rd, r, (size_t)count, flags, version, &tmp);
	gw_sketch_release(&tmp);
	free(flags);
	if (err)
		goto err_free;
	*out = r;
	*n = (size_t)count;
	return 0;
err_free:
	gw_rollup_free_array(r, (size_t)count);
	return err;
}
