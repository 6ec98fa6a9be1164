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

#define VERSION 2
#define HDR 8		/* version, flags, count (LE16), CRC-32C (LE32) */
#define ESC 24		/* a run of ESC one-bits is an escape */
#define KMAX 40		/* largest Exp-Golomb parameter; ESC - 1 + KMAX < 64 */
#define KSHIFT 3	/* the size estimate averages over ~2^KSHIFT samples */
#define ZCAP (1ULL << 40) /* residuals above this count as this for k */
#define JUMP 64		/* interval residuals beyond this reset the base */
#define SCALE_MAX 15	/* decimal scales 10^0..10^15 (4 bits) */
#define SLACK 64	/* room kept past the write position: one sample */
#define ZT_RUNS 128	/* zero timestamp residuals (x 256) for runs to pay */
#define ZT0 128		/* the share of zero timestamp residuals to start with */

enum { MODE_DEC, MODE_XOR };
enum { ESC_RAW, ESC_SCALE, ESC_XOR, ESC_BAD };

static const double p10[SCALE_MAX + 1] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
	1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
};

/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78). */
static const uint32_t crc_tab[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c,
	0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
	0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54, 0x5d1d08bf, 0xaf768bbc,
	0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512,
	0x4b5fa6e6, 0xb93425e5, 0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
	0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595, 0x417b1dbc, 0xb3109ebf,
	0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f,
	0xed03a29b, 0x1f682198, 0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
	0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096, 0xa65c047d, 0x5437877e,
	0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e,
	0x90a324fa, 0x62c8a7f9, 0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
	0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93, 0x082f63b7, 0xfa44e0b4,
	0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b,
	0xb4091bff, 0x466298fc, 0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
	0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d, 0xef087a76, 0x1d63f975,
	0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905,
	0xd9f75af1, 0x2b9cd9f2, 0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
	0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8,
	0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78,
	0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
	0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81, 0x34f4f86a, 0xc69f7b69,
	0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = crc_tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static uint64_t dbits(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static double bitsd(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static uint64_t zz(uint64_t r)
{
	return (r << 1) ^ (0 - (r >> 63));
}

static uint64_t unzz(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

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

	stat_update(&m->kt, &m->zt, zz(r));
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
	int32_t s = m->score + (int32_t)bitlen(zz(r1)) -
		    (int32_t)bitlen(zz(r2));

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
	if (dbits((double)n / p10[s]) != dbits(v))
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
static int put_res(struct gw_chunk_enc *e, uint64_t z, uint64_t a,
		   uint32_t zr)
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

	if (!put_res(e, zz(r), m->kt, m->zt))
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
	uint64_t z = zz(iv - val_pred(m));

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
		return enc_xor(e, dbits(v));
	if (to_scaled(v, m->scale, &iv)) {
		hit = enc_residual(e, iv);
		m->vprev = dbits(v);
		return hit;
	}
	for (s = m->scale + 1u; s <= SCALE_MAX; s++) {
		if (!to_scaled(v, s, &iv))
			continue;
		put_esc(e, ESC_SCALE);
		put(e, s, 4);
		rescale(m, s);
		(void)enc_residual(e, iv);
		m->vprev = dbits(v);
		return 0;
	}
	/* No exact decimal form: XOR for the rest of the chunk. */
	put_esc(e, ESC_XOR);
	m->mode = MODE_XOR;
	(void)enc_xor(e, dbits(v));
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
	uint64_t u = dbits(v), iv;

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
	cap = e->cap ? e->cap * 2 : 256;
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
	m->vprev = dbits(v);
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
	crc = crc32c(~0u, e->p, 4);
	crc = ~crc32c(crc, e->p + HDR, e->len - HDR);
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

	r = unzz(get_res(d, m->kt, m->zt, &esc));
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
		return bitsd(m->vprev);
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
	return bitsd(m->vprev);
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
	iv = val_pred(m) + unzz(z);
	val_update(m, iv, z);
	m->vprev = dbits(from_scaled(iv, m->scale));
	*hit = z == 0 && !esc_seen;
	return bitsd(m->vprev);
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
		m->vprev = dbits(from_scaled(m->ivp, m->scale));
	*t = (int64_t)m->tprev;
	*v = bitsd(m->vprev);
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
	crc = crc32c(~0u, p, 4);
	crc = ~crc32c(crc, p + HDR, len - HDR);
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
	if (d->i == d->n && (d->end - d->pos >= 8 || get(d, (unsigned)(d->end - d->pos)))) {
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
