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
#include "collect/sim/sim.h"
#include "store/chunk.h"

#define MAXCHUNK 3600
#define OUTCAP (MAXCHUNK * 24 + 1024)

struct series {
	char name[48];
	size_t n, cap;
	int64_t *t;
	double *v;
};

struct dataset {
	const char *name;
	struct series *s;
	size_t ns;
};

static void die(const char *msg)
{
	fprintf(stderr, "codec: %s\n", msg);
	exit(1);
}

static void push(struct series *s, int64_t t, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->t = realloc(s->t, s->cap * sizeof(*s->t));
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->t || !s->v)
			die("out of memory");
	}
	s->t[s->n] = t;
	s->v[s->n++] = v;
}

static uint64_t bits_of(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static double of_bits(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- (a) simulated telemetry ---- */

enum {
	M_TEMP, M_MEMTEMP, M_POWER, M_ENERGY, M_UTIL, M_MEMUTIL, M_MEMUSED,
	M_MEMFREE, M_SM, M_MEMCLK, M_GFX, M_VIDEO, M_FAN, M_PCIETX, M_PCIERX,
	M_PLIMIT, M_PSTATE, M_REASONS, M_NVTX, M_NVRX, NMETRIC
};

static const char *const metric_name[NMETRIC] = {
	"temp_c", "mem_temp_c", "power_w", "energy_mj", "util_gpu",
	"util_mem", "mem_used_b", "mem_free_b", "clock_sm", "clock_mem",
	"clock_gfx", "clock_video", "fan_pct", "pcie_tx_kbs", "pcie_rx_kbs",
	"power_limit_w", "pstate", "clk_reasons", "nvlink_tx", "nvlink_rx",
};

static uint64_t rng = 0x1234567;
static char sim_name[96];

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void read_gpu(const struct gw_nvml_fns *f, gw_nvml_device_t h,
		     double *val, int *ok)
{
	unsigned int u;
	unsigned long long ull;
	int si;
	struct gw_nvml_utilization ut;
	struct gw_nvml_memory mem;
	struct gw_nvml_field_value fv[3];

	memset(ok, 0, NMETRIC * sizeof(*ok));
#define GET(m, call, expr)                          \
	do {                                        \
		if ((call) == GW_NVML_SUCCESS) {    \
			val[m] = (expr);            \
			ok[m] = 1;                  \
		}                                   \
	} while (0)
	GET(M_TEMP, f->device_get_temperature(h, GW_NVML_TEMPERATURE_GPU, &u),
	    (double)u);
	GET(M_POWER, f->device_get_power_usage(h, &u), (double)u / 1000.0);
	GET(M_ENERGY, f->device_get_total_energy_consumption(h, &ull),
	    (double)ull);
	if (f->device_get_utilization_rates(h, &ut) == GW_NVML_SUCCESS) {
		val[M_UTIL] = ut.gpu;
		val[M_MEMUTIL] = ut.memory;
		ok[M_UTIL] = ok[M_MEMUTIL] = 1;
	}
	if (f->device_get_memory_info(h, &mem) == GW_NVML_SUCCESS) {
		val[M_MEMUSED] = (double)mem.used;
		val[M_MEMFREE] = (double)mem.free;
		ok[M_MEMUSED] = ok[M_MEMFREE] = 1;
	}
	GET(M_SM, f->device_get_clock_info(h, GW_NVML_CLOCK_SM, &u), u);
	GET(M_MEMCLK, f->device_get_clock_info(h, GW_NVML_CLOCK_MEM, &u), u);
	GET(M_GFX, f->device_get_clock_info(h, GW_NVML_CLOCK_GRAPHICS, &u), u);
	GET(M_VIDEO, f->device_get_clock_info(h, GW_NVML_CLOCK_VIDEO, &u), u);
	GET(M_FAN, f->device_get_fan_speed(h, &u), u);
	GET(M_PCIETX, f->device_get_pcie_throughput(
			      h, GW_NVML_PCIE_UTIL_TX_BYTES, &u), u);
	GET(M_PCIERX, f->device_get_pcie_throughput(
			      h, GW_NVML_PCIE_UTIL_RX_BYTES, &u), u);
	GET(M_PLIMIT, f->device_get_enforced_power_limit(h, &u),
	    (double)u / 1000.0);
	GET(M_PSTATE, f->device_get_performance_state(h, &si), si);
	GET(M_REASONS, f->device_get_clocks_event_reasons(h, &ull),
	    (double)ull);
	memset(fv, 0, sizeof(fv));
	fv[0].field_id = GW_NVML_FI_DEV_MEMORY_TEMP;
	fv[1].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
	fv[2].field_id = GW_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
	fv[1].scope_id = fv[2].scope_id = 0xffffffffu;
	if (f->device_get_field_values(h, 3, fv) == GW_NVML_SUCCESS) {
		for (int i = 0; i < 3; i++) {
			int m = i == 0 ? M_MEMTEMP : i == 1 ? M_NVTX : M_NVRX;
			double x;

			if (fv[i].nvml_return != GW_NVML_SUCCESS)
				continue;
			switch (fv[i].value_type) {
			case GW_NVML_VALUE_TYPE_DOUBLE:
				x = fv[i].value.d;
				break;
			case GW_NVML_VALUE_TYPE_UNSIGNED_INT:
				x = fv[i].value.ui;
				break;
			case GW_NVML_VALUE_TYPE_UNSIGNED_LONG:
				x = (double)fv[i].value.ul;
				break;
			case GW_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
				x = (double)fv[i].value.ull;
				break;
			case GW_NVML_VALUE_TYPE_SIGNED_LONG_LONG:
				x = (double)fv[i].value.sll;
				break;
			default:
				x = fv[i].value.si;
				break;
			}
			val[m] = x;
			ok[m] = 1;
		}
	}
#undef GET
}

static void load_sim(struct dataset *ds, unsigned gpus, unsigned hours,
		     unsigned jitter)
{
	struct gw_sim_opts o = { .gpus = gpus, .seed = 1, .manual_clock = 1 };
	const struct gw_nvml_fns *f;
	gw_nvml_device_t h[GW_SIM_MAX_GPUS];
	double val[NMETRIC];
	int ok[NMETRIC];
	int64_t t0 = 1767225600000LL; /* 2026-01-01 00:00 UTC, in ms */

	if (gw_sim_start(&o))
		die("gw_sim_start failed");
	f = gw_sim_fns();
	if (f->init() != GW_NVML_SUCCESS)
		die("simulated init failed");
	for (unsigned g = 0; g < gpus; g++)
		if (f->device_get_handle_by_index(g, &h[g]) != GW_NVML_SUCCESS)
			die("no simulated device");
	snprintf(sim_name, sizeof(sim_name),
		 "simulated H200 telemetry, %u GPUs x %u h, jitter 0-%u ms",
		 gpus, hours, jitter);
	ds->name = sim_name;
	ds->ns = (size_t)gpus * NMETRIC;
	ds->s = calloc(ds->ns, sizeof(*ds->s));
	if (!ds->s)
		die("out of memory");
	for (unsigned g = 0; g < gpus; g++)
		for (int m = 0; m < NMETRIC; m++)
			snprintf(ds->s[g * NMETRIC + m].name,
				 sizeof(ds->s[0].name), "%s", metric_name[m]);
	for (unsigned long step = 0; step < hours * 3600ul; step++) {
		gw_sim_advance(1.0);
		for (unsigned g = 0; g < gpus; g++) {
			/* The collector's clock: 1 s ticks, a few ms late. */
			int64_t t = t0 + (int64_t)step * 1000 +
				    (int64_t)(rnd() % (jitter + 1));

			read_gpu(f, h[g], val, ok);
			for (int m = 0; m < NMETRIC; m++)
				if (ok[m])
					push(&ds->s[g * NMETRIC + m], t,
					     val[m]);
		}
	}
	f->shutdown();
	gw_sim_stop();
}

/* ---- (b) the DCGM wide CSV ---- */

static int64_t parse_time(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!strptime(s, "%Y-%m-%d %H:%M:%S", &tm))
		return -1;
	return (int64_t)timegm(&tm) * 1000;
}

static void load_dcgm(struct dataset *ds, const char *path)
{
	FILE *fp = fopen(path, "r");
	char line[4096], *hdr[64];
	char header[4096];
	int ncol = 0;

	if (!fp)
		die("cannot open the DCGM csv");
	if (!fgets(header, sizeof(header), fp))
		die("empty csv");
	header[strcspn(header, "\r\n")] = '\0';
	for (char *tok = header, *next; tok && ncol < 64; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		hdr[ncol++] = tok;
	}
	if (ncol < 7)
		die("unexpected csv header");
	ds->name = "real DCGM trace (GWDG, 4x A100, 10 min interval)";
	ds->ns = 4 * (size_t)(ncol - 6);
	ds->s = calloc(ds->ns, sizeof(*ds->s));
	if (!ds->s)
		die("out of memory");
	for (size_t i = 0; i < ds->ns; i++)
		snprintf(ds->s[i].name, sizeof(ds->s[i].name), "%s",
			 hdr[6 + i % (size_t)(ncol - 6)] + 12);
	while (fgets(line, sizeof(line), fp)) {
		char *col[64], *end;
		int n = 0;
		long gpu;
		int64_t t;

		line[strcspn(line, "\r\n")] = '\0';
		for (char *tok = line, *next; tok && n < 64; tok = next) {
			next = strchr(tok, ',');
			if (next)
				*next++ = '\0';
			col[n++] = tok;
		}
		if (n != ncol)
			continue;
		t = parse_time(col[0]);
		gpu = strtol(col[2], &end, 10);
		if (t < 0 || *end || gpu < 0 || gpu > 3)
			continue;
		for (int c = 6; c < ncol; c++) {
			double v;

			if (!*col[c])
				continue;
			v = strtod(col[c], &end);
			if (*end)
				continue;
			push(&ds->s[(size_t)gpu * (size_t)(ncol - 6) +
				    (size_t)(c - 6)],
			     t, v);
		}
	}
	fclose(fp);
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
		w->p[w->pos >> 3] |= (uint8_t)(((v >> (n - take)) &
						((1u << take) - 1))
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
		v = v << take |
		    (uint64_t)((p[*pos >> 3] >> (8 - off - take)) &
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
	uint64_t prev = bits_of(v[0]);
	int64_t dprev = 0;
	unsigned lead = 0, len = 0;

	memset(out, 0, OUTCAP);
	bw_put(&w, (uint64_t)t[0], 64);
	bw_put(&w, prev, 64);
	for (size_t i = 1; i < n; i++) {
		int64_t d = t[i] - t[i - 1], dod = d - dprev;
		uint64_t x = bits_of(v[i]) ^ prev;

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
		prev = bits_of(v[i]);
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
	v[0] = of_bits(prev);
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
		v[i] = of_bits(prev);
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
static size_t run_size(const struct codec *c, const struct dataset *ds,
		       size_t clen, size_t *samples)
{
	size_t bytes = 0;

	*samples = 0;
	for (size_t i = 0; i < ds->ns; i++) {
		const struct series *s = &ds->s[i];

		for (size_t o = 0; o < s->n; o += clen) {
			size_t n = s->n - o < clen ? s->n - o : clen;
			size_t len = c->enc(s->t + o, s->v + o, n, out);

			if (c->dec(out, len, n, dt, dv))
				die("decode failed");
			for (size_t j = 0; j < n; j++)
				if (dt[j] != s->t[o + j] ||
				    bits_of(dv[j]) != bits_of(s->v[o + j]))
					die("round trip mismatch");
			bytes += len;
			*samples += n;
		}
	}
	return bytes;
}

/* Samples per second encoding (or, with dec, decoding) the dataset. */
static double run_speed(const struct codec *c, const struct dataset *ds,
			size_t clen, int dec, double budget)
{
	double t0 = now_s(), el;
	size_t samples = 0;

	do {
		for (size_t i = 0; i < ds->ns; i++) {
			const struct series *s = &ds->s[i];

			for (size_t o = 0; o < s->n; o += clen) {
				size_t n = s->n - o < clen ? s->n - o : clen;
				size_t len;

				if (!dec) {
					c->enc(s->t + o, s->v + o, n, out);
				} else {
					/* Encoded once per chunk, not timed. */
					double a = now_s();

					len = c->enc(s->t + o, s->v + o, n, out);
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

static void report(const struct dataset *ds, double budget)
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
		printf("| codec            | bytes/sample | ratio | encode Msamples/s"
		       " | decode Msamples/s |\n");
		printf("|------------------|-------------:|------:|------------------:"
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
static void per_metric(const struct dataset *ds)
{
	printf("\nper metric, chunks of 3600 (bytes/sample): gpuwatch chunk /"
	       " Gorilla; then timestamps alone (values all 0)\n\n");
	printf("| metric              | chunk | Gorilla |\n");
	printf("|---------------------|------:|--------:|\n");
	for (size_t m = 0; m < ds->ns; m++) {
		size_t b[2] = { 0, 0 }, n = 0, k;
		struct dataset one;
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
		struct series z = *&ds->s[0];
		struct dataset one = { "", &z, 1 };

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
	struct dataset sim, dcgm;
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
	if (!hours || !gpus || gpus > GW_SIM_MAX_GPUS)
		die("bad -h or -g");
	zc = ZSTD_createCCtx();
	zd = ZSTD_createDCtx();
	if (!zc || !zd)
		die("zstd contexts");
	gw_chunk_enc_init(&our_enc);
	load_sim(&sim, gpus, hours, jitter);
	report(&sim, budget);
	per_metric(&sim);
	if (optind < argc) {
		load_dcgm(&dcgm, argv[optind]);
		report(&dcgm, budget);
		per_metric(&dcgm);
	}
	gw_chunk_enc_release(&our_enc);
	ZSTD_freeCCtx(zc);
	ZSTD_freeDCtx(zd);
	return 0;
}
