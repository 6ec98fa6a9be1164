/* SPDX-License-Identifier: MIT */
/*
 * sketch.c - the DDSketch-style quantile sketch of sketch.h.
 *
 * Buckets.  A magnitude m >= DBL_MIN goes to bucket i = ceil(log_g(m)),
 * g = (1 + a) / (1 - a), which covers (g^(i-1), g^i]; the bucket answers
 * 2 g^i / (g + 1) = g^i (1 - a), whose relative distance to any point of
 * the bucket is at most a.  The constants use a = 0.0099999, a hair under
 * GW_SKETCH_ALPHA, so that the rounding of log() and exp() (1e-13
 * relative at the extremes) can never push an answer past 1%.  Indexes run
 * from index_of(DBL_MIN) (about -35400) to index_of(DBL_MAX) (about
 * +35500); +-Inf go to the top one.  The answer is then clamped into
 * [min, max], which only ever moves it closer to the true value.
 *
 * Collapsing.  When a side would hold GW_SKETCH_MAX_BINS + 1 buckets, its
 * lowest is folded into the next one up, and a value below the lowest
 * bucket of a full side goes into that bucket.  The result depends only on
 * the multiset of values, not their order or how they were split between
 * merged sketches: the top MAX - 1 buckets are exact and the lowest holds
 * everything at or below the MAX-th highest index seen.  cpos / cneg count
 * the values in pos[0] / neg[0] that are not at that bucket's own index
 * (a folded bucket's whole count; that count includes the earlier
 * collapsed values, so it replaces rather than adds).
 *
 * Encoding, version 1 (all varints LEB128, unsigned unless noted):
 *
 *   u8      version = 1
 *   varint  nan
 *   varint  zero
 *   side    negative buckets, then side positive buckets:
 *             varint nbins (<= GW_SKETCH_MAX_BINS)
 *             nbins x { index: the first as a zigzag varint, the others
 *                       as index - previous - 1;  varint count >= 1 }
 *             varint collapsed, only when nbins == GW_SKETCH_MAX_BINS
 *   if count > 0: min as an XOR double against 0, max against min
 *
 * count is not stored: it is zero plus the buckets' counts.  The decoder
 * accepts exactly what the encoder writes (canonical varints, indexes in
 * range, counts that do not overflow, min <= max on the right sides of
 * zero), so decode-then-encode gives back the same bytes.
 */
#include "store/sketch.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/bits.h"

#define SKETCH_VERSION 1
#define INIT_CAP       8

/* a = 0.0099999: ln g = 2 atanh(a), its inverse, and ln(1 - a). */
#define LN_GAMMA     0.020000466686667723871
#define INV_LN_GAMMA 49.998833310554610799
#define LN_1M_ALPHA  (-0.010050234843405532602)

/* ---- buckets ---- */

/* m >= DBL_MIN, or +Inf. */
static int32_t index_of(double m)
{
	if (!(m <= DBL_MAX))
		m = DBL_MAX;
	return (int32_t)ceil(log(m) * INV_LN_GAMMA);
}

static int32_t index_min(void)
{
	return index_of(DBL_MIN);
}

static int32_t index_max(void)
{
	return index_of(DBL_MAX);
}

static double bin_value(int32_t i)
{
	double v = exp((double)i * LN_GAMMA + LN_1M_ALPHA);

	return v > DBL_MAX ? DBL_MAX : v;
}

static double clamp(const struct gw_sketch *s, double v)
{
	if (v < s->min)
		return s->min;
	if (v > s->max)
		return s->max;
	return v;
}

/* One side: the positive or the mirrored negative buckets. */
struct side {
	struct gw_sketch_bin **bins;
	uint32_t *n, *cap;
	uint64_t *coll;
};

static struct side side_pos(struct gw_sketch *s)
{
	return (struct side){ &s->pos, &s->npos, &s->cappos, &s->cpos };
}

static struct side side_neg(struct gw_sketch *s)
{
	return (struct side){ &s->neg, &s->nneg, &s->capneg, &s->cneg };
}

static int side_grow(struct side sd)
{
	uint32_t cap = *sd.cap ? *sd.cap * 2 : INIT_CAP;
	struct gw_sketch_bin *b;

	if (cap > GW_SKETCH_MAX_BINS)
		cap = GW_SKETCH_MAX_BINS;
	b = realloc(*sd.bins, (size_t)cap * sizeof(*b));
	if (!b)
		return -ENOMEM;
	*sd.bins = b;
	*sd.cap = cap;
	return 0;
}

/* Adds k (>= 1) values at index idx; on error nothing changed. */
static int side_add(struct side sd, int32_t idx, uint32_t k)
{
	struct gw_sketch_bin *b = *sd.bins;
	uint32_t n = *sd.n, lo = 0, hi = n, c0;
	int err;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (b[mid].index < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && b[lo].index == idx) {
		if (b[lo].count > UINT32_MAX - k)
			return -EOVERFLOW;
		b[lo].count += k;
		return 0;
	}
	if (n < GW_SKETCH_MAX_BINS) {
		if (n == *sd.cap) {
			err = side_grow(sd);
			if (err)
				return err;
			b = *sd.bins;
		}
		memmove(&b[lo + 1], &b[lo], (size_t)(n - lo) * sizeof(*b));
		b[lo].index = idx;
		b[lo].count = k;
		*sd.n = n + 1;
		return 0;
	}
	/* Full: below the lowest bucket, the value joins it... */
	if (lo == 0) {
		if (b[0].count > UINT32_MAX - k)
			return -EOVERFLOW;
		b[0].count += k;
		*sd.coll += k;
		return 0;
	}
	/* ...otherwise it gets a bucket and the lowest folds upwards. */
	c0 = b[0].count;
	if ((lo == 1 ? k : b[1].count) > UINT32_MAX - c0)
		return -EOVERFLOW;
	memmove(&b[0], &b[1], (size_t)(lo - 1) * sizeof(*b));
	b[lo - 1].index = idx;
	b[lo - 1].count = k;
	b[0].count += c0;
	*sd.coll = c0;
	return 0;
}

/* ---- lifecycle ---- */

void gw_sketch_init(struct gw_sketch *s)
{
	memset(s, 0, sizeof(*s));
	s->min = NAN;
	s->max = NAN;
}

void gw_sketch_release(struct gw_sketch *s)
{
	free(s->pos);
	free(s->neg);
	gw_sketch_init(s);
}

void gw_sketch_reset(struct gw_sketch *s)
{
	s->npos = 0;
	s->nneg = 0;
	s->zero = 0;
	s->count = 0;
	s->nan = 0;
	s->collapsed = 0;
	s->cpos = 0;
	s->cneg = 0;
	s->min = NAN;
	s->max = NAN;
}

/* ---- adding and merging ---- */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void extremes(struct gw_sketch *s, double lo, double hi)
{
	if (s->count == 0 || lo < s->min)
		s->min = lo;
	if (s->count == 0 || hi > s->max)
		s->max = hi;
}

int gw_sketch_add_n(struct gw_sketch *s, double v, uint64_t n)
{
	double m = fabs(v);
	int err;

	if (isnan(v)) {
		s->nan = add_sat(s->nan, n);
		return 0;
	}
	if (n == 0)
		return 0;
	if (n > UINT32_MAX || s->count > UINT64_MAX - n)
		return -EOVERFLOW;
	if (v == 0)
		v = 0.0; /* -0.0 too, so that min/max never depend on order */
	if (m < DBL_MIN) {
		s->zero += n;
	} else {
		err = side_add(v > 0 ? side_pos(s) : side_neg(s), index_of(m),
			       (uint32_t)n);
		if (err)
			return err;
		s->collapsed = s->cpos + s->cneg;
	}
	extremes(s, v, v);
	s->count += n;
	return 0;
}

size_t gw_sketch_bytes(const struct gw_sketch *s)
{
	return ((size_t)s->cappos + s->capneg) * sizeof(struct gw_sketch_bin);
}

size_t gw_sketch_add_grows(const struct gw_sketch *s, double v)
{
	const struct gw_sketch_bin *b = v > 0 ? s->pos : s->neg;
	uint32_t n = v > 0 ? s->npos : s->nneg;
	uint32_t cap = v > 0 ? s->cappos : s->capneg, lo = 0, hi = n, grown;
	double m = fabs(v);
	int32_t idx;

	if (isnan(v) || m < DBL_MIN || n < cap || n >= GW_SKETCH_MAX_BINS)
		return 0;
	idx = index_of(m);
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (b[mid].index < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && b[lo].index == idx)
		return 0;
	grown = cap ? cap * 2 : INIT_CAP;
	if (grown > GW_SKETCH_MAX_BINS)
		grown = GW_SKETCH_MAX_BINS;
	return (size_t)(grown - cap) * sizeof(struct gw_sketch_bin);
}

int gw_sketch_add(struct gw_sketch *s, double v)
{
	return gw_sketch_add_n(s, v, 1);
}

/* How one side of a merge is to be applied. */
struct plan {
	bool in_place;		   /* src's indexes are all in dst's */
	struct gw_sketch_bin *tmp; /* else: the new buckets (owned) */
	uint32_t n;
	uint64_t coll;
};

/*
 * Plans dst side += src side without changing either: in place when src
 * adds no index, else into a new array, folded down to MAX buckets.
 */
static int side_plan(const struct gw_sketch_bin *d, uint32_t nd, uint64_t cd,
		     const struct gw_sketch_bin *s, uint32_t ns, uint64_t cs,
		     struct plan *pl)
{
	uint32_t i = 0, j = 0, u = 0, k;
	uint64_t fold = 0;
	struct gw_sketch_bin *t;
	int32_t low;

	memset(pl, 0, sizeof(*pl));
	while (i < nd || j < ns) {
		if (j == ns || (i < nd && d[i].index < s[j].index)) {
			i++;
		} else if (i == nd || s[j].index < d[i].index) {
			j++;
		} else {
			if (d[i].count > UINT32_MAX - s[j].count)
				return -EOVERFLOW;
			i++;
			j++;
		}
		u++;
	}
	if (u == nd) {
		pl->in_place = true;
		pl->n = nd;
		pl->coll = cd + (ns && s[0].index == d[0].index ? cs : 0);
		return 0;
	}
	t = malloc((size_t)u * sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (i = j = k = 0; k < u; k++) {
		if (j == ns || (i < nd && d[i].index < s[j].index)) {
			t[k] = d[i++];
		} else if (i == nd || s[j].index < d[i].index) {
			t[k] = s[j++];
		} else {
			t[k].index = d[i].index;
			t[k].count = d[i++].count + s[j++].count;
		}
	}
	if (u > GW_SKETCH_MAX_BINS) {
		k = u - GW_SKETCH_MAX_BINS;
		for (i = 0; i < k; i++)
			fold += t[i].count;
		if (fold > UINT32_MAX - t[k].count) {
			free(t);
			return -EOVERFLOW;
		}
		t[k].count += (uint32_t)fold;
		memmove(t, t + k, (size_t)GW_SKETCH_MAX_BINS * sizeof(*t));
		u = GW_SKETCH_MAX_BINS;
	}
	low = t[0].index;
	pl->tmp = t;
	pl->n = u;
	pl->coll = fold + (nd && d[0].index == low ? cd : 0) +
		   (ns && s[0].index == low ? cs : 0);
	return 0;
}

static void side_apply(struct side sd, const struct gw_sketch_bin *s,
		       uint32_t ns, struct plan *pl)
{
	struct gw_sketch_bin *d = *sd.bins;
	uint32_t i = 0, j;

	if (pl->in_place) {
		for (j = 0; j < ns; j++) {
			while (d[i].index < s[j].index)
				i++;
			d[i].count += s[j].count;
		}
	} else {
		free(*sd.bins);
		*sd.bins = pl->tmp;
		*sd.cap = pl->n;
		pl->tmp = NULL;
	}
	*sd.n = pl->n;
	*sd.coll = pl->coll;
}

int gw_sketch_merge(struct gw_sketch *dst, const struct gw_sketch *src)
{
	/* src may be dst: everything of src is read before dst changes. */
	uint64_t count = src->count, zero = src->zero, nan = src->nan;
	double lo = src->min, hi = src->max;
	struct plan pp, pn;
	int err;

	if (count == 0) {
		dst->nan = add_sat(dst->nan, nan);
		return 0;
	}
	if (dst->count > UINT64_MAX - count)
		return -EOVERFLOW;
	err = side_plan(dst->pos, dst->npos, dst->cpos, src->pos, src->npos,
			src->cpos, &pp);
	if (err)
		return err;
	err = side_plan(dst->neg, dst->nneg, dst->cneg, src->neg, src->nneg,
			src->cneg, &pn);
	if (err)
		goto out_pos;
	side_apply(side_pos(dst), src->pos, src->npos, &pp);
	side_apply(side_neg(dst), src->neg, src->nneg, &pn);
	dst->collapsed = dst->cpos + dst->cneg;
	dst->zero += zero;
	dst->nan = add_sat(dst->nan, nan);
	extremes(dst, lo, hi);
	dst->count += count;
	return 0;
out_pos:
	free(pp.tmp);
	return err;
}

/* ---- queries ---- */

/* The value of 0-based rank `rank` (< count) as the buckets know it:
 * min and max exactly, the rest their bucket's answer within [min, max]. */
static double at_rank(const struct gw_sketch *s, uint64_t rank)
{
	uint64_t cum = 0;
	uint32_t i;

	if (rank == 0)
		return s->min;
	if (rank >= s->count - 1)
		return s->max;
	for (i = s->nneg; i-- > 0;) {
		cum += s->neg[i].count;
		if (cum > rank)
			return clamp(s, -bin_value(s->neg[i].index));
	}
	cum += s->zero;
	if (cum > rank)
		return clamp(s, 0.0);
	for (i = 0; i < s->npos; i++) {
		cum += s->pos[i].count;
		if (cum > rank)
			return clamp(s, bin_value(s->pos[i].index));
	}
	return s->max; /* not reached: the buckets hold count values */
}

double gw_sketch_quantile(const struct gw_sketch *s, double q)
{
	uint64_t last;
	double r;

	if (s->count == 0 || !(q >= 0 && q <= 1))
		return NAN;
	last = s->count - 1;
	r = floor(q * (double)last);
	return at_rank(s, r >= (double)last ? last : (uint64_t)r);
}

double gw_sketch_quantile_interp(const struct gw_sketch *s, double q)
{
	uint64_t last, lo;
	double r, w, a, b;

	if (s->count == 0 || !(q >= 0 && q <= 1))
		return NAN;
	last = s->count - 1;
	r = q * (double)last;
	lo = floor(r) >= (double)last ? last : (uint64_t)floor(r);
	w = r - (double)lo;
	a = at_rank(s, lo);
	if (lo == last || w <= 0)
		return a;
	b = at_rank(s, lo + 1);
	/* Prometheus' quantile: the same expression, the same rounding. */
	return a * (1 - w) + b * w;
}

/* ---- wire primitives ---- */

void gw_sketch_wr_init(struct gw_sketch_wr *w, struct gw_buf *out)
{
	w->out = out;
	w->start = out->len;
	w->n = 0;
	w->err = 0;
}

static void wr_flush(struct gw_sketch_wr *w)
{
	if (!w->err && w->n)
		w->err = gw_buf_add(w->out, w->tmp, w->n);
	w->n = 0;
}

/* Room for k more staged bytes (k <= 16). */
static uint8_t *wr_room(struct gw_sketch_wr *w, size_t k)
{
	if (w->n + k > sizeof(w->tmp))
		wr_flush(w);
	return w->tmp + w->n;
}

void gw_sketch_wr_u8(struct gw_sketch_wr *w, uint8_t v)
{
	*wr_room(w, 1) = v;
	w->n++;
}

void gw_sketch_wr_varint(struct gw_sketch_wr *w, uint64_t v)
{
	w->n += gw_varint_enc(wr_room(w, GW_VARINT_MAX), v);
}

void gw_sketch_wr_svarint(struct gw_sketch_wr *w, uint64_t v)
{
	gw_sketch_wr_varint(w, gw_zigzag(v));
}

size_t gw_sketch_xor_len(uint64_t x)
{
	if (x == 0)
		return 1;
	return 9 - (unsigned int)__builtin_clzll(x) / 8 -
	       (unsigned int)__builtin_ctzll(x) / 8;
}

void gw_sketch_wr_xor(struct gw_sketch_wr *w, uint64_t x)
{
	uint8_t *p = wr_room(w, 9);
	unsigned int lead, nb, k;

	if (x == 0) {
		*p = 0;
		w->n++;
		return;
	}
	lead = (unsigned int)__builtin_clzll(x) / 8;
	nb = (unsigned int)gw_sketch_xor_len(x) - 1;
	p[0] = (uint8_t)(lead << 4 | nb);
	for (k = 0; k < nb; k++)
		p[1 + k] = (uint8_t)(x >> (8 * (7 - lead - k)));
	w->n += 1 + nb;
}

int gw_sketch_wr_finish(struct gw_sketch_wr *w)
{
	wr_flush(w);
	if (w->err) {
		w->out->len = w->start;
		if (w->out->p)
			w->out->p[w->start] = '\0';
	}
	return w->err;
}

int gw_sketch_rd_u8(struct gw_sketch_rd *r, uint8_t *v)
{
	if (r->p >= r->end)
		return -EBADMSG;
	*v = *r->p++;
	return 0;
}

int gw_sketch_rd_varint(struct gw_sketch_rd *r, uint64_t *v)
{
	return gw_varint_get_flags(&r->p, r->end, v, GW_VARINT_CANONICAL);
}

int gw_sketch_rd_svarint(struct gw_sketch_rd *r, uint64_t *v)
{
	uint64_t z;
	int err = gw_sketch_rd_varint(r, &z);

	if (err)
		return err;
	*v = gw_unzigzag(z);
	return 0;
}

int gw_sketch_rd_xor(struct gw_sketch_rd *r, uint64_t *x)
{
	unsigned int lead, nb, k;
	uint64_t v = 0;
	uint8_t h;

	if (gw_sketch_rd_u8(r, &h))
		return -EBADMSG;
	if (h == 0) {
		*x = 0;
		return 0;
	}
	lead = h >> 4;
	nb = h & 15;
	if (nb == 0 || lead + nb > 8 || (size_t)(r->end - r->p) < nb)
		return -EBADMSG;
	/* Canonical: the first and last meaningful bytes are not zero. */
	if (r->p[0] == 0 || r->p[nb - 1] == 0)
		return -EBADMSG;
	for (k = 0; k < nb; k++)
		v = v << 8 | r->p[k];
	r->p += nb;
	*x = v << (8 * (8 - lead - nb));
	return 0;
}

/* ---- encoding ---- */

static void put_side(struct gw_sketch_wr *w, const struct gw_sketch_bin *b,
		     uint32_t n, uint64_t coll)
{
	uint32_t i;

	gw_sketch_wr_varint(w, n);
	for (i = 0; i < n; i++) {
		if (i == 0)
			gw_sketch_wr_svarint(w, (uint64_t)(int64_t)b[0].index);
		else
			gw_sketch_wr_varint(w, (uint64_t)((int64_t)b[i].index -
							  b[i - 1].index - 1));
		gw_sketch_wr_varint(w, b[i].count);
	}
	if (n == GW_SKETCH_MAX_BINS)
		gw_sketch_wr_varint(w, coll);
}

int gw_sketch_encode(const struct gw_sketch *s, struct gw_buf *out)
{
	struct gw_sketch_wr w;

	gw_sketch_wr_init(&w, out);
	gw_sketch_wr_u8(&w, SKETCH_VERSION);
	gw_sketch_wr_varint(&w, s->nan);
	gw_sketch_wr_varint(&w, s->zero);
	put_side(&w, s->neg, s->nneg, s->cneg);
	put_side(&w, s->pos, s->npos, s->cpos);
	if (s->count > 0) {
		gw_sketch_wr_xor(&w, gw_bits_of(s->min));
		gw_sketch_wr_xor(&w, gw_bits_of(s->max) ^ gw_bits_of(s->min));
	}
	return gw_sketch_wr_finish(&w);
}

/* ---- decoding ---- */

static int get_side(struct gw_sketch_rd *r, struct side sd, uint64_t *total)
{
	int32_t lo = index_min(), hi = index_max();
	struct gw_sketch_bin *b;
	uint64_t n, x, c;
	int64_t idx = 0;
	uint32_t i;

	if (gw_sketch_rd_varint(r, &n) || n > GW_SKETCH_MAX_BINS)
		return -EBADMSG;
	if (n == 0)
		return 0;
	/* Each bucket takes two bytes at least: no allocation for nothing. */
	if ((uint64_t)(r->end - r->p) / 2 < n)
		return -EBADMSG;
	if (*sd.cap < n) {
		b = realloc(*sd.bins, (size_t)n * sizeof(*b));
		if (!b)
			return -ENOMEM;
		*sd.bins = b;
		*sd.cap = (uint32_t)n;
	}
	b = *sd.bins;
	for (i = 0; i < n; i++) {
		if (i == 0) {
			if (gw_sketch_rd_svarint(r, &x))
				return -EBADMSG;
			if ((int64_t)x < lo || (int64_t)x > hi)
				return -EBADMSG;
			idx = (int64_t)x;
		} else {
			if (gw_sketch_rd_varint(r, &x) ||
			    x >= (uint64_t)(hi - idx))
				return -EBADMSG;
			idx += (int64_t)x + 1;
		}
		if (gw_sketch_rd_varint(r, &c) || c == 0 || c > UINT32_MAX ||
		    *total > UINT64_MAX - c)
			return -EBADMSG;
		b[i].index = (int32_t)idx;
		b[i].count = (uint32_t)c;
		*total += c;
	}
	*sd.n = (uint32_t)n;
	if (n == GW_SKETCH_MAX_BINS) {
		/* The lowest bucket keeps at least its own index's value. */
		if (gw_sketch_rd_varint(r, &c) || c >= b[0].count)
			return -EBADMSG;
		*sd.coll = c;
	}
	return 0;
}

/* Which of neg / zero / pos a finite-or-infinite value falls in. */
static int sign_class(double v)
{
	if (fabs(v) < DBL_MIN)
		return 0;
	return v < 0 ? -1 : 1;
}

/* The classes of the lowest and the highest value the buckets hold. */
static int lowest_class(const struct gw_sketch *s)
{
	return s->nneg ? -1 : s->zero ? 0 : 1;
}

static int highest_class(const struct gw_sketch *s)
{
	return s->npos ? 1 : s->zero ? 0 : -1;
}

/* Ordered, no NaN, no -0.0 (an add never makes one), and each extreme in
 * the outermost class holding values. */
static bool extremes_ok(const struct gw_sketch *s)
{
	return s->min <= s->max && gw_bits_of(s->min) != gw_bits_of(-0.0) &&
	       gw_bits_of(s->max) != gw_bits_of(-0.0) &&
	       sign_class(s->min) == lowest_class(s) &&
	       sign_class(s->max) == highest_class(s);
}

int gw_sketch_decode(struct gw_sketch *s, const uint8_t *p, size_t len,
		     size_t *used)
{
	struct gw_sketch_rd r = { p, p + len };
	uint64_t total, x, y;
	uint8_t version;
	int err = -EBADMSG;

	gw_sketch_reset(s);
	if (gw_sketch_rd_u8(&r, &version) || version != SKETCH_VERSION)
		goto err;
	if (gw_sketch_rd_varint(&r, &s->nan) ||
	    gw_sketch_rd_varint(&r, &s->zero))
		goto err;
	total = s->zero;
	err = get_side(&r, side_neg(s), &total);
	if (err)
		goto err;
	err = get_side(&r, side_pos(s), &total);
	if (err)
		goto err;
	err = -EBADMSG;
	s->collapsed = s->cpos + s->cneg;
	if (total > 0) {
		if (gw_sketch_rd_xor(&r, &x) || gw_sketch_rd_xor(&r, &y))
			goto err;
		s->min = gw_double_of(x);
		s->max = gw_double_of(x ^ y);
		if (!extremes_ok(s))
			goto err;
	}
	s->count = total;
	*used = (size_t)(r.p - p);
	return 0;
err:
	gw_sketch_reset(s);
	return err;
}

/* ---- the bare encoding (sketch.h) ----
 *
 *   varint  zero
 *   side    the negative buckets, present only when min is in the
 *           negative class; then the positive side, present only when
 *           max is in the positive class (the classes say a side is
 *           non-empty exactly then):
 *             varint nbins - 1 (nbins <= GW_SKETCH_MAX_BINS)
 *             varint the top bucket's count (its index is the extreme's)
 *             nbins - 1 x { varint gap: index above - index - 1,
 *                           varint count >= 1 }, downwards
 *             varint collapsed, only when nbins == GW_SKETCH_MAX_BINS
 */

bool gw_sketch_bare_ok(const struct gw_sketch *s)
{
	if (s->count == 0 || s->nan != 0 || !extremes_ok(s))
		return false;
	if ((s->npos < GW_SKETCH_MAX_BINS && s->cpos) ||
	    (s->nneg < GW_SKETCH_MAX_BINS && s->cneg))
		return false;
	/* The classes make a side non-empty exactly when its extreme is in
	 * it, so these indexes are of magnitudes >= DBL_MIN. */
	if (s->npos && s->pos[s->npos - 1].index != index_of(s->max))
		return false;
	if (s->nneg && s->neg[s->nneg - 1].index != index_of(-s->min))
		return false;
	return true;
}

static void put_side_bare(struct gw_sketch_wr *w, const struct gw_sketch_bin *b,
			  uint32_t n, uint64_t coll)
{
	uint32_t i;

	if (n == 0)
		return;
	gw_sketch_wr_varint(w, n - 1);
	gw_sketch_wr_varint(w, b[n - 1].count);
	for (i = n - 1; i-- > 0;) {
		gw_sketch_wr_varint(w, (uint64_t)((int64_t)b[i + 1].index -
						  b[i].index - 1));
		gw_sketch_wr_varint(w, b[i].count);
	}
	if (n == GW_SKETCH_MAX_BINS)
		gw_sketch_wr_varint(w, coll);
}

int gw_sketch_encode_bare(const struct gw_sketch *s, struct gw_buf *out)
{
	struct gw_sketch_wr w;

	if (!gw_sketch_bare_ok(s))
		return -EINVAL;
	gw_sketch_wr_init(&w, out);
	gw_sketch_wr_varint(&w, s->zero);
	put_side_bare(&w, s->neg, s->nneg, s->cneg);
	put_side_bare(&w, s->pos, s->npos, s->cpos);
	return gw_sketch_wr_finish(&w);
}

/* One present side, its top bucket at index top. */
static int get_side_bare(struct gw_sketch_rd *r, struct side sd, int32_t top,
			 uint64_t *total)
{
	int32_t lo = index_min();
	struct gw_sketch_bin *b;
	int64_t idx = top;
	uint64_t n, x, c;
	uint32_t i;

	if (gw_sketch_rd_varint(r, &n) || n >= GW_SKETCH_MAX_BINS)
		return -EBADMSG;
	n++;
	/* Each bucket takes a byte at least: no allocation for nothing. */
	if ((uint64_t)(r->end - r->p) < n)
		return -EBADMSG;
	if (*sd.cap < n) {
		b = realloc(*sd.bins, (size_t)n * sizeof(*b));
		if (!b)
			return -ENOMEM;
		*sd.bins = b;
		*sd.cap = (uint32_t)n;
	}
	b = *sd.bins;
	for (i = (uint32_t)n; i-- > 0;) {
		if (i + 1 < n) {
			if (gw_sketch_rd_varint(r, &x) ||
			    x >= (uint64_t)(idx - lo))
				return -EBADMSG;
			idx -= (int64_t)x + 1;
		}
		if (gw_sketch_rd_varint(r, &c) || c == 0 || c > UINT32_MAX ||
		    *total > UINT64_MAX - c)
			return -EBADMSG;
		b[i].index = (int32_t)idx;
		b[i].count = (uint32_t)c;
		*total += c;
	}
	*sd.n = (uint32_t)n;
	if (n == GW_SKETCH_MAX_BINS) {
		if (gw_sketch_rd_varint(r, &c) || c >= b[0].count)
			return -EBADMSG;
		*sd.coll = c;
	}
	return 0;
}

int gw_sketch_decode_bare(struct gw_sketch *s, const uint8_t *p, size_t len,
			  double min, double max, size_t *used)
{
	struct gw_sketch_rd r = { p, p + len };
	uint64_t total;
	int err = -EBADMSG;

	gw_sketch_reset(s);
	if (gw_sketch_rd_varint(&r, &s->zero))
		goto err;
	total = s->zero;
	if (sign_class(min) < 0) {
		err = get_side_bare(&r, side_neg(s), index_of(-min), &total);
		if (err)
			goto err;
	}
	if (sign_class(max) > 0) {
		err = get_side_bare(&r, side_pos(s), index_of(max), &total);
		if (err)
			goto err;
	}
	err = -EBADMSG;
	s->collapsed = s->cpos + s->cneg;
	s->count = total;
	s->min = min;
	s->max = max;
	/* Also makes the sketch non-empty: see gw_sketch_bare_ok. */
	if (!extremes_ok(s))
		goto err;
	*used = (size_t)(r.p - p);
	return 0;
err:
	gw_sketch_reset(s);
	return err;
}
