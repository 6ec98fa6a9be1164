// SPDX-License-Identifier: MIT
/*
 * codec.c - the sample codec (src/store/chunk.c) against a plain Gorilla
 * encoder and zstd on raw 16-byte samples, on simulated GPU telemetry and
 * on a real DCGM trace.  Built and run by bench/codec.sh.
 *
 * Usage: codec [-h HOURS] [-g GPUS] [-j JITTER_MS] [-b SECONDS] [DCGM_CSV]
 *
 * The simulated collector stamps samples at 1 s ticks plus 0..JITTER_MS ms
 * (default 4); -b is the minimum time spent timing each figure.
 *
 * For each dataset and chunk length (120, 720, 3600 samples) it prints
 * bytes per sample, encode and decode speed (samples per second, one
 * core) of each codec.  Every chunk is decoded and compared bit for bit
 * before anything is timed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "collect/nvml/nvml_abi.h"
#include "common/bits.h"
#include "store/chunk.h"
#include "bench/datasets.h"

#define MAXCHUNK 3600
#define OUTCAP	 (MAXCHUNK * 24 + 1024)

static void die(const char *msg)
{
	fprintf(stderr, "codec: %s\n", msg);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- Gorilla, as in the paper (dod timestamps, XOR values) ---- */

struct bw {
	uint8_t *p;
	uint64_t pos;
};

static void bw_put(struct bw *w, uint64_t v, unsigned n)
{
	if (n < 64)
		v &= (1ULL << n) - 1;
	while (n) {
		unsigned off = (unsigned)(w->pos & 7), take = 8 - off;

		if (take > n)
			take = n;
		w->p[w->pos >> 3] |=
			(uint8_t)(((v >> (n - take)) & ((1u << take) - 1))
				  << (8 - off - take));
		w->pos += take;
		n -= take;
	}
}

static uint64_t br_get(const uint8_t *p, uint64_t *pos, unsigned n)
{
	uint64_t v = 0;

	while (n) {
		unsigned off = (unsigned)(*pos & 7), take = 8 - off;

		if (take > n)
			take = n;
		v = v << take | (uint64_t)((p[*pos >> 3] >> (8 - off - take)) &
					   ((1u << take) - 1));
		*pos += take;
		n -= take;
	}
	return v;
}

static size_t gorilla_enc(const int64_t *t, const double *v, size_t n,
			  uint8_t *out)
{
	struct bw w = { out, 0 };
	uint64_t prev = gw_bits_of(v[0]);
	int64_t dprev = 0;
	unsigned lead = 0, len = 0;

	memset(out, 0, OUTCAP);
	bw_put(&w, (uint64_t)t[0], 64);
	bw_put(&w, prev, 64);
	for (size_t i = 1; i < n; i++) {
		int64_t d = t[i] - t[i - 1], dod = d - dprev;
		uint64_t x = gw_bits_of(v[i]) ^ prev;

		dprev = d;
		if (dod == 0)
			bw_put(&w, 0, 1);
		else if (dod >= -64 && dod <= 63)
			bw_put(&w, 2, 2), bw_put(&w, (uint64_t)dod, 7);
		else if (dod >= -256 && dod <= 255)
			bw_put(&w, 6, 3), bw_put(&w, (uint64_t)dod, 9);
		else if (dod >= -2048 && dod <= 2047)
			bw_put(&w, 14, 4), bw_put(&w, (uint64_t)dod, 12);
		else
			bw_put(&w, 15, 4), bw_put(&w, (uint64_t)dod, 64);
		prev = gw_bits_of(v[i]);
		if (!x) {
			bw_put(&w, 0, 1);
			continue;
		}
		unsigned l = (unsigned)__builtin_clzll(x);
		unsigned tr = (unsigned)__builtin_ctzll(x);

		if (l > 31)
			l = 31;
		if (len && l >= lead && tr >= 64 - lead - len) {
			bw_put(&w, 2, 2);
			bw_put(&w, x >> (64 - lead - len), len);
		} else {
			lead = l;
			len = 64 - l - tr;
			bw_put(&w, 3, 2);
			bw_put(&w, lead, 5);
			bw_put(&w, len - 1, 6);
			bw_put(&w, x >> tr, len);
		}
	}
	return (size_t)((w.pos + 7) / 8);
}

static int64_t sext(uint64_t v, unsigned n)
{
	uint64_t m = 1ULL << (n - 1);

	return (int64_t)((v ^ m) - m);
}

static int gorilla_dec(const uint8_t *p, size_t len, size_t n, int64_t *t,
		       double *v)
{
	uint64_t pos = 0, prev;
	int64_t dprev = 0;
	unsigned lead = 0, wl = 0;

	(void)len;
	t[0] = (int64_t)br_get(p, &pos, 64);
	prev = br_get(p, &pos, 64);
	v[0] = gw_double_of(prev);
	for (size_t i = 1; i < n; i++) {
		int64_t dod;

		if (!br_get(p, &pos, 1))
			dod = 0;
		else if (!br_get(p, &pos, 1))
			dod = sext(br_get(p, &pos, 7), 7);
		else if (!br_get(p, &pos, 1))
			dod = sext(br_get(p, &pos, 9), 9);
		else if (!br_get(p, &pos, 1))
			dod = sext(br_get(p, &pos, 12), 12);
		else
			dod = (int64_t)br_get(p, &pos, 64);
		dprev += dod;
		t[i] = t[i - 1] + dprev;
		if (br_get(p, &pos, 1)) {
			if (br_get(p, &pos, 1)) {
				lead = (unsigned)br_get(p, &pos, 5);
				wl = (unsigned)br_get(p, &pos, 6) + 1;
			}
			prev ^= br_get(p, &pos, wl) << (64 - lead - wl);
		}
		v[i] = gw_double_of(prev);
	}
	return 0;
}

/* ---- the codecs behind one interface ---- */

struct codec {
	const char *name;
	size_t (*enc)(const int64_t *t, const double *v, size_t n,
		      uint8_t *out);
	int (*dec)(const uint8_t *p, size_t len, size_t n, int64_t *t,
		   double *v);
};

static struct gw_chunk_enc our_enc;

static size_t ours_enc(const int64_t *t, const double *v, size_t n,
		       uint8_t *out)
{
	const uint8_t *p;
	size_t len;

	gw_chunk_enc_reset(&our_enc);
	for (size_t i = 0; i < n; i++)
		if (gw_chunk_append(&our_enc, t[i], v[i]))
			die("gw_chunk_append failed");
	p = gw_chunk_bytes(&our_enc, &len);
	memcpy(out, p, len);
	return len;
}

static int ours_dec(const uint8_t *p, size_t len, size_t n, int64_t *t,
		    double *v)
{
	return gw_chunk_decode_all(p, len, t, v, n) == (long)n ? 0 : -1;
}

static ZSTD_CCtx *zc;
static ZSTD_DCtx *zd;
static int zlevel;
static uint8_t raw[MAXCHUNK * 16];

static size_t zstd_enc(const int64_t *t, const double *v, size_t n,
		       uint8_t *out)
{
	size_t r;

	for (size_t i = 0; i < n; i++) {
		memcpy(raw + 16 * i, &t[i], 8);
		memcpy(raw + 16 * i + 8, &v[i], 8);
	}
	r = ZSTD_compressCCtx(zc, out, OUTCAP, raw, n * 16, zlevel);
	if (ZSTD_isError(r))
		die("zstd compress failed");
	return r;
}

static int zstd_dec(const uint8_t *p, size_t len, size_t n, int64_t *t,
		    double *v)
{
	size_t r = ZSTD_decompressDCtx(zd, raw, sizeof(raw), p, len);

	if (ZSTD_isError(r) || r != n * 16)
		return -1;
	for (size_t i = 0; i < n; i++) {
		memcpy(&t[i], raw + 16 * i, 8);
		memcpy(&v[i], raw + 16 * i + 8, 8);
	}
	return 0;
}

static size_t zstd3_enc(const int64_t *t, const double *v, size_t n,
			uint8_t *out)
{
	zlevel = 3;
	return zstd_enc(t, v, n, out);
}

static size_t zstd19_enc(const int64_t *t, const double *v, size_t n,
			 uint8_t *out)
{
	zlevel = 19;
	return zstd_enc(t, v, n, out);
}

static const struct codec codecs[] = {
	{ "gpuwatch chunk", ours_enc, ours_dec },
	{ "Gorilla (paper)", gorilla_enc, gorilla_dec },
	{ "zstd -3 raw", zstd3_enc, zstd_dec },
	{ "zstd -19 raw", zstd19_enc, zstd_dec },
};

#define NCODEC (sizeof(codecs) / sizeof(codecs[0]))

static uint8_t out[OUTCAP];
static int64_t dt[MAXCHUNK];
static double dv[MAXCHUNK];

/* Bytes of the whole dataset in chunks of clen; checks every round trip. */
static size_t run_size(const struct codec *c, const struct bench_dataset *ds,
		       size_t clen, size_t *samples)
{
	size_t bytes = 0;

	*samples = 0;
	for (size_t i = 0; i < ds->ns; i++) {
		const struct bench_series *s = &ds->s[i];

		for (size_t o = 0; o < s->n; o += clen) {
			size_t n = s->n - o < clen ? s->n - o : clen;
			size_t len = c->enc(s->t + o, s->v + o, n, out);

			if (c->dec(out, len, n, dt, dv))
				die("decode failed");
			for (size_t j = 0; j < n; j++)
				if (dt[j] != s->t[o + j] ||
				    gw_bits_of(dv[j]) !=
					    gw_bits_of(s->v[o + j]))
					die("round trip mismatch");
			bytes += len;
			*samples += n;
		}
	}
	return bytes;
}

/* Samples per second encoding (or, with dec, decoding) the dataset. */
static double run_speed(const struct codec *c, const struct bench_dataset *ds,
			size_t clen, int dec, double budget)
{
	double t0 = now_s(), el;
	size_t samples = 0;

	do {
		for (size_t i = 0; i < ds->ns; i++) {
			const struct bench_series *s = &ds->s[i];

			for (size_t o = 0; o < s->n; o += clen) {
				size_t n = s->n - o < clen ? s->n - o : clen;
				size_t len;

				if (!dec) {
					c->enc(s->t + o, s->v + o, n, out);
				} else {
					/* Encoded once per chunk, not timed. */
					double a = now_s();

					len = c->enc(s->t + o, s->v + o, n,
						     out);
					t0 += now_s() - a;
					if (c->dec(out, len, n, dt, dv))
						die("decode failed");
				}
				samples += n;
			}
		}
		el = now_s() - t0;
	} while (el < budget);
	return (double)samples / el;
}

static void report(const struct bench_dataset *ds, double budget)
{
	size_t total = 0;
	static const size_t lens[] = { 120, 720, 3600 };

	for (size_t i = 0; i < ds->ns; i++)
		total += ds->s[i].n;
	printf("\n## %s\n\n%zu series, %zu samples; raw samples are 16 bytes"
	       " (int64 ms + float64)\n",
	       ds->name, ds->ns, total);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		printf("\nchunks of %zu samples:\n\n", lens[l]);
		printf("| codec            | bytes/sample | ratio | encode "
		       "Msamples/s"
		       " | decode Msamples/s |\n");
		printf("|------------------|-------------:|------:|------------"
		       "------:"
		       "|------------------:|\n");
		for (size_t c = 0; c < NCODEC; c++) {
			size_t n, b = run_size(&codecs[c], ds, lens[l], &n);
			double bs = (double)b / (double)n;
			double heavy = strstr(codecs[c].name, "19") ? 0.2 : 1;
			double e = run_speed(&codecs[c], ds, lens[l], 0,
					     budget * heavy);
			double d = run_speed(&codecs[c], ds, lens[l], 1,
					     budget * heavy);

			printf("| %-16s | %12.3f | %5.1f | %17.2f | %17.2f |\n",
			       codecs[c].name, bs, 16 / bs, e / 1e6, d / 1e6);
		}
	}
}

/* Per metric, 3600-sample chunks: where the bytes go. */
static void per_metric(const struct bench_dataset *ds)
{
	printf("\nper metric, chunks of 3600 (bytes/sample): gpuwatch chunk /"
	       " Gorilla; then timestamps alone (values all 0)\n\n");
	printf("| metric              | chunk | Gorilla |\n");
	printf("|---------------------|------:|--------:|\n");
	for (size_t m = 0; m < ds->ns; m++) {
		size_t b[2] = { 0, 0 }, n = 0, k;
		struct bench_dataset one;
		int seen = 0;

		for (k = 0; k < m; k++)
			if (!strcmp(ds->s[k].name, ds->s[m].name))
				seen = 1;
		if (seen)
			continue;
		for (k = m; k < ds->ns; k++) {
			if (strcmp(ds->s[k].name, ds->s[m].name))
				continue;
			one.s = &ds->s[k];
			one.ns = 1;
			for (int c = 0; c < 2; c++)
				b[c] += run_size(&codecs[c], &one, 3600, &n);
		}
		for (k = m, n = 0; k < ds->ns; k++)
			if (!strcmp(ds->s[k].name, ds->s[m].name))
				n += ds->s[k].n;
		if (n)
			printf("| %-19s | %5.3f | %7.3f |\n", ds->s[m].name,
			       (double)b[0] / (double)n,
			       (double)b[1] / (double)n);
	}
	{
		size_t b[2] = { 0, 0 }, n = 0, nn;
		struct bench_series z = *&ds->s[0];
		struct bench_dataset one = { "", &z, 1 };

		z.v = calloc(z.n, sizeof(double));
		if (!z.v)
			die("out of memory");
		for (int c = 0; c < 2; c++)
			b[c] = run_size(&codecs[c], &one, 3600, &nn);
		n = nn;
		printf("| %-19s | %5.3f | %7.3f |\n", "(timestamps only)",
		       (double)b[0] / (double)n, (double)b[1] / (double)n);
		free(z.v);
	}
}

int main(int argc, char **argv)
{
	unsigned hours = 4, gpus = 8, jitter = 4;
	double budget = 0.3;
	struct bench_dataset sim, dcgm;
	int opt;

	while ((opt = getopt(argc, argv, "h:g:j:b:")) != -1) {
		switch (opt) {
		case 'h':
			hours = (unsigned)atoi(optarg);
			break;
		case 'g':
			gpus = (unsigned)atoi(optarg);
			break;
		case 'j':
			jitter = (unsigned)atoi(optarg);
			break;
		case 'b':
			budget = atof(optarg);
			break;
		default:
			die("usage: codec [-h HOURS] [-g GPUS] [-j JITTER_MS] "
			    "[-b SECONDS] [DCGM_WIDE_CSV]");
		}
	}
	if (!hours || !gpus || gpus > 64)
		die("bad -h or -g");
	zc = ZSTD_createCCtx();
	zd = ZSTD_createDCtx();
	if (!zc || !zd)
		die("zstd contexts");
	gw_chunk_enc_init(&our_enc);
	bench_load_sim(&sim, gpus, hours, jitter);
	report(&sim, budget);
	per_metric(&sim);
	if (optind < argc) {
		bench_load_dcgm(&dcgm, argv[optind]);
		report(&dcgm, budget);
		per_metric(&dcgm);
	}
	gw_chunk_enc_release(&our_enc);
	ZSTD_freeCCtx(zc);
	ZSTD_freeDCtx(zd);
	return 0;
}
