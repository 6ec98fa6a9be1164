/* SPDX-License-Identifier: MIT */
/*
 * chunk.c - the sample codec (contract in chunk.h, format and the reasons
 * for it in docs/internals/codec.md).
 *
 * A chunk (version 3) is an 8-byte header, the timestamp stream's length
 * and two bit streams, most significant bit first: timestamps (and run
 * lengths), then values.  Series read at the same instants have the same
 * timestamp stream, which the store's zstd blocks keep once.  Timestamps
 * are coded as their distance from a tracked tick grid (a phase-locked
 * loop: jitter is coded once) in a Rice code; values as the difference
 * between a decimal-scaled integer and its prediction, or, once a value
 * has no exact decimal form, XORed with the previous value for the rest
 * of the chunk.  Residuals go through adaptive codes whose parameters
 * follow the recent residual sizes, so the decoder learns them without
 * side information.  After a sample that was predicted exactly (timestamp
 * and value residual both zero), where timestamps are regular, comes the
 * length of the run of further exactly predicted samples; those samples
 * cost nothing else.  An open run's length is coded when the chunk is
 * assembled.  Version 2 (one interleaved stream, timestamps against a
 * tracked interval) is still read.
 *
 * All arithmetic on timestamps, intervals and scaled integers is done on
 * uint64_t, wrapping, identically in the encoder and the decoder: any int64
 * timestamp and any double round-trip, and arbitrary input cannot cause
 * signed overflow.
 */
#include "store/chunk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/bits.h"
#include "common/crc32c.h"

#define VERSION	   3  /* written; 2 is still read */
#define HDR	   8  /* version, flags, count (LE16), CRC-32C (LE32) */
#define ESC	   24 /* a run of ESC one-bits is an escape */
#define KMAX	   40 /* largest Exp-Golomb parameter; ESC - 1 + KMAX < 64 */
#define KSHIFT	   3  /* the size estimate averages over ~2^KSHIFT samples */
#define ZCAP	   (1ULL << 40) /* residuals above this count as this for k */
#define JUMP	   64	/* interval residuals beyond this reset the base */
#define GS	   4096 /* version 3: the grid's fixed point, 1/GS ms */
#define GRID_P	   64	/* the grid moves by at least GRID_P/GS of a residual */
#define GRID_I	   4	/* ... and the interval by at least GRID_I/GS of it */
#define NR_MAX	   65535
#define RICE_LIM   3   /* Rice quotients below this; above, the tail code */
#define SCALE_MAX  15  /* decimal scales 10^0..10^15 (4 bits) */
#define SLACK	   64  /* room kept past the write position: one sample */
#define ZT_RUNS	   128 /* zero timestamp residuals (x 256) for runs to pay */
#define ZT0	   128 /* the share of zero timestamp residuals to start with */
#define ZT0_V3	   0   /* version 3: runs wait for regular timestamps to show */
#define ZT_RUNS_V3 224 /* and for nearly all of them exactly predicted */

enum { MODE_DEC, MODE_XOR };
enum { ESC_RAW, ESC_SCALE, ESC_XOR, ESC_BAD };

static const double p10[SCALE_MAX + 1] = {
	1e0, 1e1, 1e2,	1e3,  1e4,  1e5,  1e6,	1e7,
	1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
};

static unsigned bitlen(uint64_t x)
{
	return x ? 64 - (unsigned)__builtin_clzll(x) : 0;
}

static uint64_t load_be64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static void store_be64(uint8_t *p, uint64_t w)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	memcpy(p, &w, sizeof(w));
}

/* ---- the model: what encoder and decoder both update ---- */

/*
 * How a residual is coded depends on two running statistics, kept per
 * stream (timestamps, values) and updated identically on both sides:
 * a - the mean size of the non-zero residuals (x 2^KSHIFT), giving the
 *     Exp-Golomb parameter k;
 * zr - the share of zero residuals (x 256).  When zeros are common enough
 *     that a one-bit flag pays (zr * k > 256 - zr), a residual is a flag
 *     bit first: 0 = zero, 1 = the code of z - 1.
 */
static unsigned kof(uint64_t a)
{
	unsigned k = bitlen(a >> KSHIFT);

	k = k ? k - 1 : 0;
	return k > KMAX ? KMAX : k;
}

static int flagged(uint64_t a, uint32_t zr)
{
	return zr * kof(a) > 256 - zr;
}

static void stat_update(uint64_t *a, uint32_t *zr, uint64_t z)
{
	*zr = *zr - (*zr >> 4) + (z ? 0 : 16);
	if (z)
		*a = *a - (*a >> KSHIFT) + (z > ZCAP ? ZCAP : z);
}

/* floor(x / GS). */
static int64_t floor_gs(int64_t x)
{
	return x >= 0 ? x / GS : -((-x + GS - 1) / GS);
}

/* x / GS rounded to the nearest integer (halves up). */
static int64_t round_gs(int64_t x)
{
	return floor_gs(x + GS / 2);
}

/*
 * The interval the next timestamp is predicted at.  Version 2: the base.
 * Version 3: from the last sample's grid point (the timestamp less its
 * estimated jitter, off) one interval of base + bf/GS on, to the nearest
 * millisecond.  Either way, a sample exactly predicted has this interval.
 */
static uint64_t interval_pred(const struct gw_chunk_model *m)
{
	if (m->ver < 3)
		return m->base;
	return m->base + (uint64_t)round_gs((int64_t)m->bf - m->off);
}

/* Version 3: the Rice parameter, the smallest k with 2^k >= the mean. */
static unsigned rice_k(uint64_t ka)
{
	unsigned k = ka > (1u << KSHIFT) ? bitlen(ka - 1) - KSHIFT : 0;

	return k > KMAX ? KMAX : k;
}

/* Version 3, after an in-range residual rs: the phase-locked loop. */
static void grid_update(struct gw_chunk_model *m, int64_t rs)
{
	int64_t n, p, i, x, bf;

	if (m->nr < NR_MAX)
		m->nr++;
	/*
	 * The gains of a least-squares line through the samples since the
	 * reset (the alpha-beta filter's start), down to GRID_P and GRID_I:
	 * a new grid settles within a few samples, a long one averages the
	 * jitter out over ~GS/GRID_P samples.
	 */
	n = m->nr;
	p = 2 * (2 * n - 1) * GS / (n * (n + 1));
	i = 6 * GS / (n * (n + 1));
	if (p < GRID_P)
		p = GRID_P;
	if (i < GRID_I)
		i = GRID_I;
	/* The new offset: the timestamp less the grid point, which moved by
	 * p/GS of the residual; less the rounding the prediction made. */
	x = (int64_t)m->bf - m->off;
	m->off = (int32_t)((GS - p) * rs - (x - GS * round_gs(x)));
	bf = m->bf + i * rs;
	x = floor_gs(bf);
	m->base += (uint64_t)x;
	m->bf = (int32_t)(bf - x * GS);
}

/* After an interval d was coded as residual r against interval_pred(). */
static void time_update(struct gw_chunk_model *m, uint64_t d, uint64_t r,
			int first)
{
	int64_t rs = (int64_t)r, q;
	uint64_t z = gw_zigzag(r);
	unsigned k;
	int jump = first || rs < -JUMP || rs > JUMP;

	m->tprev += d;
	if (m->ver < 3) {
		stat_update(&m->kt, &m->zt, z);
		if (jump) {
			m->base = d;
			m->acc = 0;
			return;
		}
		/* Fold the residuals into the base slowly: jitter averages
		 * out. */
		m->acc += rs;
		q = m->acc / 8;
		m->base += (uint64_t)q;
		m->acc -= q * 8;
		return;
	}
	/*
	 * Version 3 follows the collector's tick grid: jitter is coded once,
	 * against the grid, not twice as a difference of two jitters.
	 */
	m->zt = m->zt - (m->zt >> 4) + (z ? 0 : 16);
	k = rice_k(m->ka);
	if (z >> k >= RICE_LIM) {
		uint64_t t = z - ((uint64_t)RICE_LIM << k);

		m->kj = m->kj - (m->kj >> KSHIFT) + (t > ZCAP ? ZCAP : t);
	}
	if (!jump) {
		m->ka = m->ka - (m->ka >> KSHIFT) + (z > ZCAP ? ZCAP : z);
		m->lj = 0;
		grid_update(m, rs);
		return;
	}
	/* A jump (a gap, a new phase) moves the grid to this sample; the
	 * interval is taken from it only when two come in a row (a new
	 * interval), or at the start. */
	if (first || m->lj) {
		m->base = d;
		m->bf = 0;
		m->nr = 1;
	}
	m->off = 0;
	m->lj = 1;
}

static uint64_t val_pred(const struct gw_chunk_model *m)
{
	return m->score > 0 ? m->ivp + m->dvp : m->ivp;
}

/* After the scaled integer iv was coded as residual z (zigzag). */
static void val_update(struct gw_chunk_model *m, uint64_t iv, uint64_t z)
{
	uint64_t r1 = iv - m->ivp, r2 = r1 - m->dvp;
	int32_t s = m->score + (int32_t)bitlen(gw_zigzag(r1)) -
		    (int32_t)bitlen(gw_zigzag(r2));

	m->score = s > 8 ? 8 : s < -8 ? -8 : s;
	stat_update(&m->kv, &m->zv, z);
	m->dvp = r1;
	m->ivp = iv;
}

/*
 * One sample of a run: the timestamp and the value exactly as predicted,
 * the statistics updated as if both residuals had been coded.  Returns
 * whether the scaled integer changed (the value then has to be rebuilt).
 */
static int run_step(struct gw_chunk_model *m)
{
	uint64_t iv;
	int moved;

	time_update(m, interval_pred(m), 0, 0);
	if (m->mode == MODE_XOR)
		return 0;
	iv = val_pred(m);
	moved = iv != m->ivp;
	val_update(m, iv, 0);
	return moved;
}

/*
 * Whether an exactly predicted sample opens a run: only where timestamps
 * are mostly exactly predicted.  With jitter a zero residual is chance,
 * the run after it is almost always empty, and its length would cost a
 * bit for nothing.
 */
static int runs_pay(const struct gw_chunk_model *m)
{
	return m->zt >= (m->ver < 3 ? ZT_RUNS : ZT_RUNS_V3);
}

static void rescale(struct gw_chunk_model *m, unsigned s)
{
	uint64_t f = 1;

	for (unsigned i = m->scale; i < s; i++)
		f *= 10;
	m->ivp *= f;
	m->dvp *= f;
	m->scale = (uint8_t)s;
}

/* The exact integer n with n / 10^s == v bit for bit, if there is one. */
static int to_scaled(double v, unsigned s, uint64_t *out)
{
	double x = v * p10[s], f;
	int64_t n;

	if (!(x >= -0x1p53 && x <= 0x1p53))
		return 0;
	n = (int64_t)x;
	f = x - (double)n;
	if (f >= 0.5)
		n++;
	else if (f <= -0.5)
		n--;
	if (gw_bits_of((double)n / p10[s]) != gw_bits_of(v))
		return 0;
	*out = (uint64_t)n;
	return 1;
}

static double from_scaled(uint64_t iv, unsigned s)
{
	return (double)(int64_t)iv / p10[s];
}

/* ---- encoder ---- */

/* n low bits of v at the stream's write position (room: reserve()). */
static void put(struct gw_chunk_bits *w, uint64_t v, unsigned n)
{
	uint8_t *p;
	unsigned off;

	if (n == 0)
		return;
	if (n > 56) {
		put(w, v >> 32, n - 32);
		put(w, v & 0xffffffffu, 32);
		return;
	}
	p = w->p + (w->pos >> 3);
	off = (unsigned)(w->pos & 7);
	v &= (1ULL << n) - 1;
	store_be64(p, load_be64(p) | v << (64 - off - n));
	w->pos += n;
}

/* The two streams of a version 3 chunk. */
#define WT(e) (&(e)->w[0]) /* timestamps and run lengths */
#define WV(e) (&(e)->w[1]) /* values */

/* An escape in the value stream: a residual's escape and a 2-bit code. */
static void put_esc(struct gw_chunk_enc *e, unsigned code)
{
	struct gw_chunk_model *m = &e->m;

	if (flagged(m->kv, m->zv))
		put(WV(e), 1, 1);
	put(WV(e), ((1ULL << ESC) - 1) << 2 | code, ESC + 2);
}

/*
 * z in the Exp-Golomb code of parameter k: p one-bits and a zero, then
 * the p + k low bits of z + 2^k (which has p + k + 1 bits).  Returns 0,
 * writing nothing, when p would reach ESC.
 */
static int put_eg(struct gw_chunk_bits *w, uint64_t z, unsigned k)
{
	uint64_t m;
	unsigned nb, p;

	if (z >= 1ULL << 62)
		return 0;
	m = z + (1ULL << k);
	nb = bitlen(m);
	p = nb - 1 - k;
	if (p >= ESC)
		return 0;
	put(w, (1ULL << (p + 1)) - 2, p + 1);
	put(w, m & ((1ULL << (nb - 1)) - 1), nb - 1);
	return 1;
}

/*
 * A residual with the stream's statistics: 1 when written, 0 when it needs
 * an escape (then the flag, if any, and the ESC one-bits are written and
 * the caller follows with the escape's content).
 */
static int put_res(struct gw_chunk_bits *w, uint64_t z, uint64_t a, uint32_t zr)
{
	unsigned k = kof(a);

	if (flagged(a, zr)) {
		if (!z) {
			put(w, 0, 1);
			return 1;
		}
		put(w, 1, 1);
		z--;
	}
	if (put_eg(w, z, k))
		return 1;
	put(w, (1ULL << ESC) - 1, ESC);
	return 0;
}

/* Bits put_res writes for a z that needs no escape (a run length). */
static unsigned res_bits(uint64_t z, uint64_t a, uint32_t zr)
{
	unsigned k = kof(a), f = 0, p;

	if (flagged(a, zr)) {
		if (!z)
			return 1;
		f = 1;
		z--;
	}
	p = bitlen(z + (1ULL << k)) - 1 - k;
	return f + 2 * p + k + 1;
}

/*
 * Version 3's timestamp residual: a Rice code of parameter k for quotients
 * below RICE_LIM (bounded jitter costs near its entropy, where Exp-Golomb
 * spends a bit more), else RICE_LIM one-bits and the rest in Exp-Golomb
 * with its own running size (gaps, first intervals).  0 on an escape.
 */
static int put_tres(struct gw_chunk_enc *e, uint64_t z)
{
	const struct gw_chunk_model *m = &e->m;
	unsigned k = rice_k(m->ka);
	uint64_t q = z >> k;

	if (q < RICE_LIM) {
		put(WT(e), ((1ULL << q) - 1) << 1, (unsigned)q + 1);
		put(WT(e), z, k);
		return 1;
	}
	put(WT(e), (1ULL << RICE_LIM) - 1, RICE_LIM);
	return put_res(WT(e), z - ((uint64_t)RICE_LIM << k), m->kj, 0);
}

/* Returns whether the timestamp was exactly predicted. */
static int enc_time(struct gw_chunk_enc *e, int64_t t)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t d = (uint64_t)t - m->tprev, r = d - interval_pred(m);

	/* The encoder writes version 3 only. */
	if (!put_tres(e, gw_zigzag(r)))
		put(WT(e), r, 64);
	time_update(m, d, r, e->n == 1);
	return r == 0;
}

/* Returns whether the value repeats the last one. */
static int enc_xor(struct gw_chunk_enc *e, uint64_t u)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t x = u ^ m->vprev;
	unsigned lead, trail, len;

	m->vprev = u;
	if (!x) {
		put(WV(e), 0, 1);
		return 1;
	}
	lead = (unsigned)__builtin_clzll(x);
	trail = (unsigned)__builtin_ctzll(x);
	if (lead > 31)
		lead = 31;
	if (m->wlen && lead >= m->lead && trail >= 64u - m->lead - m->wlen) {
		put(WV(e), 2, 2);
		put(WV(e), x >> (64 - m->lead - m->wlen), m->wlen);
		return 0;
	}
	len = 64 - lead - trail;
	put(WV(e), 3u << 11 | lead << 6 | (len - 1), 13);
	put(WV(e), x >> trail, len);
	m->lead = (uint8_t)lead;
	m->wlen = (uint8_t)len;
	return 0;
}

/* Returns whether the residual was zero. */
static int enc_residual(struct gw_chunk_enc *e, uint64_t iv)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t z = gw_zigzag(iv - val_pred(m));

	if (!put_res(WV(e), z, m->kv, m->zv)) {
		put(WV(e), ESC_RAW, 2);
		put(WV(e), z, 64);
	}
	val_update(m, iv, z);
	return z == 0;
}

/* Returns whether the value was exactly predicted, without an escape. */
static int enc_value(struct gw_chunk_enc *e, double v)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t iv;
	unsigned s;
	int hit;

	if (m->mode == MODE_XOR)
		return enc_xor(e, gw_bits_of(v));
	if (to_scaled(v, m->scale, &iv)) {
		hit = enc_residual(e, iv);
		m->vprev = gw_bits_of(v);
		return hit;
	}
	for (s = m->scale + 1u; s <= SCALE_MAX; s++) {
		if (!to_scaled(v, s, &iv))
			continue;
		put_esc(e, ESC_SCALE);
		put(WV(e), s, 4);
		rescale(m, s);
		(void)enc_residual(e, iv);
		m->vprev = gw_bits_of(v);
		return 0;
	}
	/* No exact decimal form: XOR for the rest of the chunk. */
	put_esc(e, ESC_XOR);
	m->mode = MODE_XOR;
	(void)enc_xor(e, gw_bits_of(v));
	return 0;
}

/*
 * Whether (t, v) is exactly what the model predicts, i.e. whether coding
 * it would give a zero timestamp residual and a zero value residual with
 * no escape.  The shortcut: in decimal mode the last value is always
 * exactly its integer at the current scale, so repeating its bits repeats
 * the integer.
 */
static int predicted(const struct gw_chunk_model *m, int64_t t, double v)
{
	uint64_t u = gw_bits_of(v), iv;

	if ((uint64_t)t - m->tprev != interval_pred(m))
		return 0;
	if (m->mode == MODE_XOR)
		return u == m->vprev;
	if (u == m->vprev && val_pred(m) == m->ivp)
		return 1;
	return to_scaled(v, m->scale, &iv) && iv == val_pred(m);
}

void gw_chunk_enc_init(struct gw_chunk_enc *e)
{
	memset(e, 0, sizeof(*e));
	e->m.zt = ZT0_V3;
	e->m.ver = VERSION;
}

void gw_chunk_enc_release(struct gw_chunk_enc *e)
{
	free(e->p);
	free(e->w[0].p);
	free(e->w[1].p);
	gw_chunk_enc_init(e);
}

void gw_chunk_enc_reset(struct gw_chunk_enc *e)
{
	struct gw_chunk_bits w[2];
	uint8_t *p = e->p;
	size_t cap = e->cap;

	for (int i = 0; i < 2; i++) {
		w[i] = e->w[i];
		if (w[i].p)
			memset(w[i].p, 0, (size_t)(w[i].pos >> 3) + 1);
		w[i].pos = 0;
	}
	gw_chunk_enc_init(e);
	e->p = p;
	e->cap = cap;
	e->w[0] = w[0];
	e->w[1] = w[1];
}

/* Room for one more sample in a stream: SLACK bytes past its position. */
static int reserve_bits(struct gw_chunk_bits *w)
{
	size_t need = (size_t)(w->pos >> 3) + SLACK, cap;
	uint8_t *p;

	if (need <= w->cap)
		return 0;
	/* Doubling while small, then by a quarter: an hour's chunk is the
	 * head's largest buffer, and doubling would leave up to half of it
	 * unused in every series. */
	cap = !w->cap ? 128 : w->cap < 4096 ? w->cap * 2 : w->cap + w->cap / 4;
	if (cap < need)
		cap = need;
	if (cap > GW_CHUNK_MAX_BYTES + SLACK)
		cap = GW_CHUNK_MAX_BYTES + SLACK;
	p = realloc(w->p, cap);
	if (!p)
		return -ENOMEM;
	memset(p + w->cap, 0, cap - w->cap);
	w->p = p;
	w->cap = cap;
	return 0;
}

static int reserve(struct gw_chunk_enc *e)
{
	int err = reserve_bits(WT(e));

	return err ? err : reserve_bits(WV(e));
}

/* Bytes of the LEB128 varint of x (as gw_varint_enc writes it). */
static size_t varint_len(size_t x)
{
	size_t n = 1;

	while (x >= 0x80) {
		x >>= 7;
		n++;
	}
	return n;
}

/* The chunk's size with tbits of timestamp stream and vbits of values. */
static size_t chunk_len(uint64_t tbits, uint64_t vbits)
{
	size_t tb = (size_t)((tbits + 7) >> 3), vb = (size_t)((vbits + 7) >> 3);

	return HDR + varint_len(tb) + tb + vb;
}

/* Bits of the timestamp stream, an open run's length included. */
static uint64_t time_bits(const struct gw_chunk_enc *e)
{
	const struct gw_chunk_model *m = &e->m;

	return WT(e)->pos +
	       (m->rmode && e->run ? res_bits(e->run, m->kr, m->zr) : 0);
}

/* Clears a stream's bits from pos on (a sample that did not fit). */
static void clear_from(struct gw_chunk_bits *w, uint64_t pos)
{
	size_t from = (size_t)(pos >> 3), to = (size_t)((w->pos + 7) >> 3);

	if (to <= from)
		return;
	w->p[from] &= (uint8_t)(0xff00u >> (pos & 7));
	memset(w->p + from + 1, 0, to - from - 1);
	w->pos = pos;
}

/* One more exactly predicted sample in the open run: nothing is written. */
static int append_run(struct gw_chunk_enc *e, double v)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t bits = WT(e)->pos + res_bits(e->run + 1u, m->kr, m->zr);
	size_t len = chunk_len(bits, WV(e)->pos);

	if (len > GW_CHUNK_MAX_BYTES)
		return -ENOSPC;
	(void)run_step(m);
	m->vprev = gw_bits_of(v);
	e->run++;
	e->n++;
	e->len = len;
	return 0;
}

int gw_chunk_append(struct gw_chunk_enc *e, int64_t t, double v)
{
	struct gw_chunk_model saved = e->m;
	uint64_t oldt = WT(e)->pos, oldv = WV(e)->pos;
	uint32_t oldrun = e->run;
	size_t len;
	int err, hit = 0;

	if (e->n >= GW_CHUNK_MAX_SAMPLES)
		return -ENOSPC;
	if (e->n && t < (int64_t)e->m.tprev)
		return -EDOM;
	err = reserve(e);
	if (err)
		return err;
	if (e->m.rmode && predicted(&e->m, t, v))
		return append_run(e, v);
	if (e->n == 0) {
		put(WT(e), (uint64_t)t, 64);
		e->t0 = t;
		e->m.tprev = (uint64_t)t;
	} else {
		if (e->m.rmode) {
			/* The run ends here: its length, then this sample. */
			(void)put_res(WT(e), e->run, e->m.kr, e->m.zr);
			stat_update(&e->m.kr, &e->m.zr, e->run);
			e->m.rmode = 0;
			e->run = 0;
		}
		hit = enc_time(e, t);
	}
	hit &= enc_value(e, v);
	len = chunk_len(WT(e)->pos, WV(e)->pos);
	if (len <= GW_CHUNK_MAX_BYTES) {
		e->m.rmode = (uint8_t)(hit && runs_pay(&e->m));
		e->n++;
		e->len = len;
		return 0;
	}
	/* Too big: clear the bits just written and forget the sample. */
	clear_from(WT(e), oldt);
	clear_from(WV(e), oldv);
	e->m = saved;
	e->run = oldrun;
	return -ENOSPC;
}

/*
 * Writes the finished chunk (header, the timestamp stream's length, the
 * two streams) to out, which has room for chunk_len() + SLACK zeroed
 * bytes.  An open run's length is coded at the end of the timestamp
 * stream as it stands; the encoder is not changed.
 */
static size_t assemble(const struct gw_chunk_enc *e, uint8_t *out)
{
	const struct gw_chunk_model *m = &e->m;
	uint64_t tbits = time_bits(e);
	size_t tb = (size_t)((tbits + 7) >> 3);
	size_t vb = (size_t)((WV(e)->pos + 7) >> 3), at = HDR;
	uint32_t crc;

	out[0] = VERSION;
	out[1] = 0;
	out[2] = (uint8_t)(e->n & 0xff);
	out[3] = (uint8_t)(e->n >> 8);
	at += gw_varint_enc(out + at, tb);
	memcpy(out + at, WT(e)->p, (size_t)((WT(e)->pos + 7) >> 3));
	if (m->rmode && e->run) {
		struct gw_chunk_bits w = { out + at, tb + SLACK, WT(e)->pos };

		(void)put_res(&w, e->run, m->kr, m->zr);
	}
	at += tb;
	if (vb)
		memcpy(out + at, WV(e)->p, vb);
	at += vb;
	crc = gw_crc32c(gw_crc32c(0, out, 4), out + HDR, at - HDR);
	for (int i = 0; i < 4; i++)
		out[4 + i] = (uint8_t)(crc >> (8 * i));
	return at;
}

const uint8_t *gw_chunk_bytes(struct gw_chunk_enc *e, size_t *len)
{
	size_t need;

	*len = 0;
	if (e->n == 0)
		return NULL;
	need = chunk_len(time_bits(e), WV(e)->pos) + SLACK;
	if (need > e->cap) {
		uint8_t *p = realloc(e->p, need);

		/* Out of memory: NULL, the encoder unchanged (its callers
		 * report -ENOMEM and keep the samples). */
		if (!p)
			return NULL;
		e->p = p;
		e->cap = need;
	}
	memset(e->p, 0, need);
	e->len = assemble(e, e->p);
	*len = e->len;
	return e->p;
}

int gw_chunk_copy(const struct gw_chunk_enc *e, uint8_t **out, size_t *len)
{
	size_t need;

	*out = NULL;
	*len = 0;
	if (e->n == 0)
		return 0;
	need = chunk_len(time_bits(e), WV(e)->pos) + SLACK;
	*out = calloc(1, need);
	if (!*out)
		return -ENOMEM;
	*len = assemble(e, *out);
	return 0;
}

int64_t gw_chunk_first(const struct gw_chunk_enc *e)
{
	return e->t0;
}

int64_t gw_chunk_last(const struct gw_chunk_enc *e)
{
	return (int64_t)e->m.tprev;
}

/* ---- decoder ---- */

/*
 * The 64 bits at stream s's read position (zeros past its end),
 * unconsumed.
 */
static uint64_t peek(const struct gw_chunk_dec *d, unsigned s)
{
	size_t byte = d->r[s].off + (size_t)(d->r[s].pos >> 3);
	size_t lim = d->r[s].off + (size_t)(d->r[s].end >> 3);
	uint64_t w = 0;

	if (d->r[s].pos >= d->r[s].end)
		return 0;
	if (byte + 8 <= lim) {
		w = load_be64(d->p + byte);
	} else {
		for (size_t i = 0; i < 8; i++)
			w = w << 8 | (byte + i < lim ? d->p[byte + i] : 0);
	}
	return w << (d->r[s].pos & 7);
}

static uint64_t get(struct gw_chunk_dec *d, unsigned s, unsigned n)
{
	uint64_t v;

	if (n == 0)
		return 0;
	if (n > 56) {
		v = get(d, s, n - 32) << 32;
		return v | get(d, s, 32);
	}
	if (d->r[s].end - d->r[s].pos < n) {
		d->bad = 1;
		d->r[s].pos = d->r[s].end;
		return 0;
	}
	v = peek(d, s) >> (64 - n);
	d->r[s].pos += n;
	return v;
}

/* One-bits before a zero, at most ESC; consumes them and the zero. */
static unsigned get_ones(struct gw_chunk_dec *d, unsigned s)
{
	uint64_t w = peek(d, s);
	unsigned ones = ~w ? (unsigned)__builtin_clzll(~w) : 64;

	if (ones >= ESC) {
		get(d, s, ESC);
		return ESC;
	}
	get(d, s, ones + 1);
	return ones;
}

/* A residual as put_res writes it; *esc is set on an escape. */
static uint64_t get_res(struct gw_chunk_dec *d, unsigned s, uint64_t a,
			uint32_t zr, int *esc)
{
	unsigned k = kof(a), p;
	uint64_t m, z1 = 0;

	*esc = 0;
	if (flagged(a, zr)) {
		if (!get(d, s, 1))
			return 0;
		z1 = 1;
	}
	p = get_ones(d, s);
	if (p == ESC) {
		*esc = 1;
		return 0;
	}
	m = 1ULL << (p + k) | get(d, s, p + k);
	return m - (1ULL << k) + z1;
}

/* A version 3 timestamp residual as put_tres writes it. */
static uint64_t get_tres(struct gw_chunk_dec *d, int *esc)
{
	const struct gw_chunk_model *m = &d->m;
	unsigned k = rice_k(m->ka), q = 0;

	*esc = 0;
	while (q < RICE_LIM && get(d, d->it, 1))
		q++;
	if (q < RICE_LIM)
		return (uint64_t)q << k | get(d, d->it, k);
	return get_res(d, d->it, m->kj, 0, esc) + ((uint64_t)RICE_LIM << k);
}

/* Returns whether the timestamp was exactly predicted. */
static int dec_time(struct gw_chunk_dec *d, int64_t *t)
{
	struct gw_chunk_model *m = &d->m;
	uint64_t r, dt;
	int esc;

	r = gw_unzigzag(m->ver < 3 ? get_res(d, d->it, m->kt, m->zt, &esc)
				   : get_tres(d, &esc));
	if (esc)
		r = get(d, d->it, 64);
	dt = interval_pred(m) + r;
	/* The interval may not carry the timestamp past INT64_MAX. */
	if (dt > (uint64_t)INT64_MAX - m->tprev) {
		d->bad = 1;
		return 0;
	}
	time_update(m, dt, r, d->i == 1);
	*t = (int64_t)m->tprev;
	return r == 0 && !esc;
}

/* *hit is set when the value repeats the last one. */
static double dec_xor(struct gw_chunk_dec *d, int *hit)
{
	struct gw_chunk_model *m = &d->m;
	unsigned lead, len;

	*hit = !get(d, d->iv, 1);
	if (*hit)
		return gw_double_of(m->vprev);
	if (get(d, d->iv, 1)) {
		lead = (unsigned)get(d, d->iv, 5);
		len = (unsigned)get(d, d->iv, 6) + 1;
		if (lead + len > 64) {
			d->bad = 1;
			return 0;
		}
		m->lead = (uint8_t)lead;
		m->wlen = (uint8_t)len;
	} else if (!m->wlen) {
		d->bad = 1;
		return 0;
	}
	m->vprev ^= get(d, d->iv, m->wlen) << (64 - m->lead - m->wlen);
	return gw_double_of(m->vprev);
}

/* *hit is set when the value was exactly predicted, without an escape. */
static double dec_value(struct gw_chunk_dec *d, int *hit)
{
	struct gw_chunk_model *m = &d->m;
	uint64_t z, iv;
	unsigned s;
	int esc, esc_seen = 0;

	*hit = 0;
	if (m->mode == MODE_XOR)
		return dec_xor(d, hit);
	/* Scales only grow, so this loop runs at most SCALE_MAX + 2 times. */
	for (;;) {
		z = get_res(d, d->iv, m->kv, m->zv, &esc);
		if (!esc)
			break;
		esc_seen = 1;
		switch (get(d, d->iv, 2)) {
		case ESC_RAW:
			z = get(d, d->iv, 64);
			goto residual;
		case ESC_SCALE:
			s = (unsigned)get(d, d->iv, 4);
			if (s <= m->scale || d->bad) {
				d->bad = 1;
				return 0;
			}
			rescale(m, s);
			continue;
		case ESC_XOR:
			m->mode = MODE_XOR;
			return dec_xor(d, &esc);
		default:
			d->bad = 1;
			return 0;
		}
	}
residual:
	iv = val_pred(m) + gw_unzigzag(z);
	val_update(m, iv, z);
	m->vprev = gw_bits_of(from_scaled(iv, m->scale));
	*hit = z == 0 && !esc_seen;
	return gw_double_of(m->vprev);
}

/* A sample of a run. */
static void dec_run(struct gw_chunk_dec *d, int64_t *t, double *v)
{
	struct gw_chunk_model *m = &d->m;

	if (interval_pred(m) > (uint64_t)INT64_MAX - m->tprev) {
		d->bad = 1;
		return;
	}
	if (run_step(m))
		m->vprev = gw_bits_of(from_scaled(m->ivp, m->scale));
	*t = (int64_t)m->tprev;
	*v = gw_double_of(m->vprev);
}

/* A run's length, after an exactly predicted sample. */
static void dec_run_len(struct gw_chunk_dec *d)
{
	struct gw_chunk_model *m = &d->m;
	uint64_t len;
	int esc;

	len = get_res(d, d->it, m->kr, m->zr, &esc);
	if (esc || len > d->n - d->i) {
		d->bad = 1;
		return;
	}
	stat_update(&m->kr, &m->zr, len);
	m->rmode = 0;
	d->left = (uint32_t)len;
	/* Unless the run reaches the end, a sample that breaks it follows. */
	d->closing = len < d->n - d->i;
}

int gw_chunk_dec_init(struct gw_chunk_dec *d, const uint8_t *p, size_t len)
{
	uint32_t crc, want;
	const uint8_t *q = p + HDR;
	size_t at;
	uint64_t tb;

	memset(d, 0, sizeof(*d));
	d->bad = 1;
	if (!p || len < HDR + 9 || len > GW_CHUNK_MAX_BYTES)
		return -EBADMSG;
	if ((p[0] != 2 && p[0] != VERSION) || p[1] != 0)
		return -EBADMSG;
	d->n = (uint32_t)p[2] | (uint32_t)p[3] << 8;
	want = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
	       (uint32_t)p[7] << 24;
	crc = gw_crc32c(gw_crc32c(0, p, 4), p + HDR, len - HDR);
	/* A run can hold any number of samples in a few bits. */
	if (d->n == 0 || crc != want) {
		d->n = 0;
		return -EBADMSG;
	}
	if (p[0] >= 3) {
		/* The timestamp stream's length, then the stream. */
		if (gw_varint_get_flags(&q, p + len, &tb,
					GW_VARINT_CANONICAL) ||
		    tb > len - (size_t)(q - p)) {
			d->n = 0;
			return -EBADMSG;
		}
		at = (size_t)(q - p);
		d->r[0].off = at;
		d->r[0].end = tb * 8;
		d->r[1].off = at + (size_t)tb;
		d->r[1].end = (uint64_t)(len - at - (size_t)tb) * 8;
		d->iv = 1;
	} else {
		d->r[0].off = HDR;
		d->r[0].end = (uint64_t)(len - HDR) * 8;
	}
	d->p = p;
	d->len = len;
	/*
	 * Version 3 opens no run before the timestamps have shown themselves
	 * regular (a run depends on the value too): where they jitter, the
	 * timestamp stream is a function of the timestamps alone.
	 */
	d->m.zt = p[0] >= 3 ? ZT0_V3 : ZT0;
	d->m.ver = p[0];
	d->bad = 0;
	return 0;
}

/* Whether stream s has only zero padding (under a byte) left. */
static int padding_only(struct gw_chunk_dec *d, unsigned s)
{
	uint64_t left = d->r[s].end - d->r[s].pos;

	return left < 8 && !get(d, s, (unsigned)left) && !d->bad;
}

int gw_chunk_next(struct gw_chunk_dec *d, int64_t *t, double *v)
{
	int64_t ts = 0;
	double val = 0;
	int th, vh;

	if (d->bad)
		return -EBADMSG;
	if (d->i >= d->n)
		return 0;
	if (d->m.rmode && !d->left)
		dec_run_len(d);
	if (d->i == 0) {
		ts = (int64_t)get(d, d->it, 64);
		d->m.tprev = (uint64_t)ts;
		val = dec_value(d, &vh);
	} else if (d->left) {
		dec_run(d, &ts, &val);
		d->left--;
	} else if (!d->bad) {
		th = dec_time(d, &ts);
		val = dec_value(d, &vh);
		/* A run is only ever broken by a sample it could not hold. */
		if (th && vh && d->closing)
			d->bad = 1;
		d->closing = 0;
		d->m.rmode = (uint8_t)(th && vh && runs_pay(&d->m));
	}
	if (d->bad)
		return -EBADMSG;
	d->i++;
	/* After the last sample only zero padding may follow, in each
	 * stream. */
	if (d->i == d->n &&
	    (!padding_only(d, d->it) || !padding_only(d, d->iv))) {
		d->bad = 1;
		return -EBADMSG;
	}
	*t = ts;
	*v = val;
	return 1;
}

long gw_chunk_decode_all(const uint8_t *p, size_t len, int64_t *t, double *v,
			 size_t cap)
{
	struct gw_chunk_dec d;
	long i = 0;
	int r;

	if (gw_chunk_dec_init(&d, p, len))
		return -EBADMSG;
	if (cap < d.n)
		return -ENOSPC;
	while ((r = gw_chunk_next(&d, &t[i], &v[i])) == 1)
		i++;
	return r < 0 ? r : i;
}
