/* SPDX-License-Identifier: MIT */
/*
 * chunk.c - the sample codec (contract in chunk.h, format and the reasons
 * for it in docs/internals/codec.md).
 *
 * A chunk is an 8-byte header and a bit stream, most significant bit
 * first.  Timestamps are coded as the difference between each interval
 * and a tracked reference interval; values as the difference between a
 * decimal-scaled integer and its prediction, or, once a value has no exact
 * decimal form, XORed with the previous value for the rest of the chunk.
 * Every residual goes through one adaptive Exp-Golomb code whose parameter
 * follows the recent residual sizes, so the decoder learns it without
 * side information.  After a sample that was predicted exactly (timestamp
 * and value residual both zero) comes the length of the run of further
 * exactly predicted samples, in the same adaptive code; those samples cost
 * nothing else.  An open run is coded provisionally past the write
 * position when the chunk's bytes are taken, and overwritten by the next
 * append.
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

#define VERSION	  2
#define HDR	  8  /* version, flags, count (LE16), CRC-32C (LE32) */
#define ESC	  24 /* a run of ESC one-bits is an escape */
#define KMAX	  40 /* largest Exp-Golomb parameter; ESC - 1 + KMAX < 64 */
#define KSHIFT	  3  /* the size estimate averages over ~2^KSHIFT samples */
#define ZCAP	  (1ULL << 40) /* residuals above this count as this for k */
#define JUMP	  64  /* interval residuals beyond this reset the base */
#define SCALE_MAX 15  /* decimal scales 10^0..10^15 (4 bits) */
#define SLACK	  64  /* room kept past the write position: one sample */
#define ZT_RUNS	  128 /* zero timestamp residuals (x 256) for runs to pay */
#define ZT0	  128 /* the share of zero timestamp residuals to start with */

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

/* After an interval d was coded as residual r against m->base. */
static void time_update(struct gw_chunk_model *m, uint64_t d, uint64_t r,
			int first)
{
	int64_t rs = (int64_t)r, q;

	stat_update(&m->kt, &m->zt, gw_zigzag(r));
	m->tprev += d;
	if (first || rs < -JUMP || rs > JUMP) {
		m->base = d;
		m->acc = 0;
		return;
	}
	/* Fold the residuals into the base slowly: jitter averages out. */
	m->acc += rs;
	q = m->acc / 8;
	m->base += (uint64_t)q;
	m->acc -= q * 8;
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

	time_update(m, m->base, 0, 0);
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
	return m->zt >= ZT_RUNS;
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

static void put(struct gw_chunk_enc *e, uint64_t v, unsigned n)
{
	uint8_t *p;
	unsigned off;

	if (n == 0)
		return;
	if (n > 56) {
		put(e, v >> 32, n - 32);
		put(e, v & 0xffffffffu, 32);
		return;
	}
	p = e->p + HDR + (e->pos >> 3);
	off = (unsigned)(e->pos & 7);
	v &= (1ULL << n) - 1;
	store_be64(p, load_be64(p) | v << (64 - off - n));
	e->pos += n;
}

/* An escape in the value stream: a residual's escape and a 2-bit code. */
static void put_esc(struct gw_chunk_enc *e, unsigned code)
{
	struct gw_chunk_model *m = &e->m;

	if (flagged(m->kv, m->zv))
		put(e, 1, 1);
	put(e, ((1ULL << ESC) - 1) << 2 | code, ESC + 2);
}

/*
 * z in the Exp-Golomb code of parameter k: p one-bits and a zero, then
 * the p + k low bits of z + 2^k (which has p + k + 1 bits).  Returns 0,
 * writing nothing, when p would reach ESC.
 */
static int put_eg(struct gw_chunk_enc *e, uint64_t z, unsigned k)
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
	put(e, (1ULL << (p + 1)) - 2, p + 1);
	put(e, m & ((1ULL << (nb - 1)) - 1), nb - 1);
	return 1;
}

/*
 * A residual with the stream's statistics: 1 when written, 0 when it needs
 * an escape (then the flag, if any, and the ESC one-bits are written and
 * the caller follows with the escape's content).
 */
static int put_res(struct gw_chunk_enc *e, uint64_t z, uint64_t a, uint32_t zr)
{
	unsigned k = kof(a);

	if (flagged(a, zr)) {
		if (!z) {
			put(e, 0, 1);
			return 1;
		}
		put(e, 1, 1);
		z--;
	}
	if (put_eg(e, z, k))
		return 1;
	put(e, (1ULL << ESC) - 1, ESC);
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

/* Returns whether the timestamp was exactly predicted. */
static int enc_time(struct gw_chunk_enc *e, int64_t t)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t d = (uint64_t)t - m->tprev, r = d - m->base;

	if (!put_res(e, gw_zigzag(r), m->kt, m->zt))
		put(e, r, 64);
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
		put(e, 0, 1);
		return 1;
	}
	lead = (unsigned)__builtin_clzll(x);
	trail = (unsigned)__builtin_ctzll(x);
	if (lead > 31)
		lead = 31;
	if (m->wlen && lead >= m->lead && trail >= 64u - m->lead - m->wlen) {
		put(e, 2, 2);
		put(e, x >> (64 - m->lead - m->wlen), m->wlen);
		return 0;
	}
	len = 64 - lead - trail;
	put(e, 3u << 11 | lead << 6 | (len - 1), 13);
	put(e, x >> trail, len);
	m->lead = (uint8_t)lead;
	m->wlen = (uint8_t)len;
	return 0;
}

/* Returns whether the residual was zero. */
static int enc_residual(struct gw_chunk_enc *e, uint64_t iv)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t z = gw_zigzag(iv - val_pred(m));

	if (!put_res(e, z, m->kv, m->zv)) {
		put(e, ESC_RAW, 2);
		put(e, z, 64);
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
		put(e, s, 4);
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

	if ((uint64_t)t - m->tprev != m->base)
		return 0;
	if (m->mode == MODE_XOR)
		return u == m->vprev;
	if (u == m->vprev && val_pred(m) == m->ivp)
		return 1;
	return to_scaled(v, m->scale, &iv) && iv == val_pred(m);
}

/* Clears the open run's provisional code past pos. */
static void clear_prov(struct gw_chunk_enc *e)
{
	size_t from, to;

	if (!e->prov)
		return;
	from = HDR + (size_t)(e->pos >> 3);
	to = HDR + (size_t)((e->pos + e->prov + 7) >> 3);
	e->p[from] &= (uint8_t)(0xff00u >> (e->pos & 7));
	memset(e->p + from + 1, 0, to - from - 1);
	e->prov = 0;
}

void gw_chunk_enc_init(struct gw_chunk_enc *e)
{
	memset(e, 0, sizeof(*e));
	e->m.zt = ZT0;
}

void gw_chunk_enc_release(struct gw_chunk_enc *e)
{
	free(e->p);
	gw_chunk_enc_init(e);
}

void gw_chunk_enc_reset(struct gw_chunk_enc *e)
{
	uint8_t *p = e->p;
	size_t cap = e->cap;

	if (p)
		memset(p, 0, e->len);
	gw_chunk_enc_init(e);
	e->p = p;
	e->cap = cap;
}

static int reserve(struct gw_chunk_enc *e)
{
	size_t need = HDR + (size_t)(e->pos >> 3) + SLACK, cap;
	uint8_t *p;

	if (need <= e->cap)
		return 0;
	/* Doubling while small, then by a quarter: an hour's chunk is the
	 * head's largest buffer, and doubling would leave up to half of it
	 * unused in every series. */
	cap = !e->cap ? 256 : e->cap < 4096 ? e->cap * 2 : e->cap + e->cap / 4;
	if (cap < need)
		cap = need;
	if (cap > GW_CHUNK_MAX_BYTES + SLACK)
		cap = GW_CHUNK_MAX_BYTES + SLACK;
	p = realloc(e->p, cap);
	if (!p)
		return -ENOMEM;
	memset(p + e->cap, 0, cap - e->cap);
	e->p = p;
	e->cap = cap;
	return 0;
}

/* One more exactly predicted sample in the open run: nothing is written. */
static int append_run(struct gw_chunk_enc *e, double v)
{
	struct gw_chunk_model *m = &e->m;
	uint64_t bits = e->pos + res_bits(e->run + 1u, m->kr, m->zr);
	size_t len = HDR + (size_t)((bits + 7) >> 3);

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
	uint64_t oldpos = e->pos;
	uint32_t oldrun = e->run;
	size_t len, from, to;
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
	clear_prov(e);
	if (e->n == 0) {
		put(e, (uint64_t)t, 64);
		e->t0 = t;
		e->m.tprev = (uint64_t)t;
	} else {
		if (e->m.rmode) {
			/* The run ends here: its length, then this sample. */
			(void)put_res(e, e->run, e->m.kr, e->m.zr);
			stat_update(&e->m.kr, &e->m.zr, e->run);
			e->m.rmode = 0;
			e->run = 0;
		}
		hit = enc_time(e, t);
	}
	hit &= enc_value(e, v);
	len = HDR + (size_t)((e->pos + 7) >> 3);
	if (len <= GW_CHUNK_MAX_BYTES) {
		e->m.rmode = (uint8_t)(hit && runs_pay(&e->m));
		e->n++;
		e->len = len;
		return 0;
	}
	/* Too big: clear the bits just written and forget the sample. */
	from = HDR + (size_t)(oldpos >> 3);
	to = len;
	e->p[from] &= (uint8_t)(0xff00u >> (oldpos & 7));
	memset(e->p + from + 1, 0, to - from - 1);
	e->pos = oldpos;
	e->m = saved;
	e->run = oldrun;
	return -ENOSPC;
}

const uint8_t *gw_chunk_bytes(struct gw_chunk_enc *e, size_t *len)
{
	uint64_t pos = e->pos;
	uint32_t crc;

	if (e->n == 0) {
		*len = 0;
		return NULL;
	}
	/* An open run: its length as it stands, past the write position. */
	clear_prov(e);
	if (e->m.rmode && e->run) {
		(void)put_res(e, e->run, e->m.kr, e->m.zr);
		e->prov = (uint32_t)(e->pos - pos);
		e->pos = pos;
	}
	e->len = HDR + (size_t)((pos + e->prov + 7) >> 3);
	e->p[0] = VERSION;
	e->p[1] = 0;
	e->p[2] = (uint8_t)(e->n & 0xff);
	e->p[3] = (uint8_t)(e->n >> 8);
	crc = gw_crc32c(gw_crc32c(0, e->p, 4), e->p + HDR, e->len - HDR);
	for (int i = 0; i < 4; i++)
		e->p[4 + i] = (uint8_t)(crc >> (8 * i));
	*len = e->len;
	return e->p;
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

/* The 64 bits at the read position (zeros past the end), unconsumed. */
static uint64_t peek(const struct gw_chunk_dec *d)
{
	size_t byte = HDR + (size_t)(d->pos >> 3);
	uint64_t w = 0;

	if (d->pos >= d->end)
		return 0;
	if (byte + 8 <= d->len) {
		w = load_be64(d->p + byte);
	} else {
		for (size_t i = 0; i < 8; i++)
			w = w << 8 | (byte + i < d->len ? d->p[byte + i] : 0);
	}
	return w << (d->pos & 7);
}

static uint64_t get(struct gw_chunk_dec *d, unsigned n)
{
	uint64_t v;

	if (n == 0)
		return 0;
	if (n > 56) {
		v = get(d, n - 32) << 32;
		return v | get(d, 32);
	}
	if (d->end - d->pos < n) {
		d->bad = 1;
		d->pos = d->end;
		return 0;
	}
	v = peek(d) >> (64 - n);
	d->pos += n;
	return v;
}

/* One-bits before a zero, at most ESC; consumes them and the zero. */
static unsigned get_ones(struct gw_chunk_dec *d)
{
	uint64_t w = peek(d);
	unsigned ones = ~w ? (unsigned)__builtin_clzll(~w) : 64;

	if (ones >= ESC) {
		get(d, ESC);
		return ESC;
	}
	get(d, ones + 1);
	return ones;
}

/* A residual as put_res writes it; *esc is set on an escape. */
static uint64_t get_res(struct gw_chunk_dec *d, uint64_t a, uint32_t zr,
			int *esc)
{
	unsigned k = kof(a), p;
	uint64_t m, z1 = 0;

	*esc = 0;
	if (flagged(a, zr)) {
		if (!get(d, 1))
			return 0;
		z1 = 1;
	}
	p = get_ones(d);
	if (p == ESC) {
		*esc = 1;
		return 0;
	}
	m = 1ULL << (p + k) | get(d, p + k);
	return m - (1ULL << k) + z1;
}

/* Returns whether the timestamp was exactly predicted. */
static int dec_time(struct gw_chunk_dec *d, int64_t *t)
{
	struct gw_chunk_model *m = &d->m;
	uint64_t r, dt;
	int esc;

	r = gw_unzigzag(get_res(d, m->kt, m->zt, &esc));
	if (esc)
		r = get(d, 64);
	dt = m->base + r;
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

	*hit = !get(d, 1);
	if (*hit)
		return gw_double_of(m->vprev);
	if (get(d, 1)) {
		lead = (unsigned)get(d, 5);
		len = (unsigned)get(d, 6) + 1;
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
	m->vprev ^= get(d, m->wlen) << (64 - m->lead - m->wlen);
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
		z = get_res(d, m->kv, m->zv, &esc);
		if (!esc)
			break;
		esc_seen = 1;
		switch (get(d, 2)) {
		case ESC_RAW:
			z = get(d, 64);
			goto residual;
		case ESC_SCALE:
			s = (unsigned)get(d, 4);
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

	if (m->base > (uint64_t)INT64_MAX - m->tprev) {
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

	len = get_res(d, m->kr, m->zr, &esc);
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
	uint64_t bits;

	memset(d, 0, sizeof(*d));
	d->bad = 1;
	if (!p || len < HDR + 9 || len > GW_CHUNK_MAX_BYTES)
		return -EBADMSG;
	if (p[0] != VERSION || p[1] != 0)
		return -EBADMSG;
	d->n = (uint32_t)p[2] | (uint32_t)p[3] << 8;
	want = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
	       (uint32_t)p[7] << 24;
	crc = gw_crc32c(gw_crc32c(0, p, 4), p + HDR, len - HDR);
	bits = (uint64_t)(len - HDR) * 8;
	/* A run can hold any number of samples in a few bits. */
	if (d->n == 0 || crc != want) {
		d->n = 0;
		return -EBADMSG;
	}
	d->p = p;
	d->len = len;
	d->end = bits;
	d->m.zt = ZT0;
	d->bad = 0;
	return 0;
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
		ts = (int64_t)get(d, 64);
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
	/* After the last sample only zero padding may follow. */
	if (d->i == d->n &&
	    (d->end - d->pos >= 8 || get(d, (unsigned)(d->end - d->pos)))) {
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
