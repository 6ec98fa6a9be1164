/* SPDX-License-Identifier: MIT */
/* datasets.c - see datasets.h. */
#include "bench/datasets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/sim/sim.h"

static void die(const char *msg)
{
	fprintf(stderr, "bench: %s\n", msg);
	exit(1);
}

static void push(struct bench_series *s, int64_t t, double v)
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

/* ---- (a) simulated telemetry ---- */

enum {
	M_TEMP,
	M_MEMTEMP,
	M_POWER,
	M_ENERGY,
	M_UTIL,
	M_MEMUTIL,
	M_MEMUSED,
	M_MEMFREE,
	M_SM,
	M_MEMCLK,
	M_GFX,
	M_VIDEO,
	M_FAN,
	M_PCIETX,
	M_PCIERX,
	M_PLIMIT,
	M_PSTATE,
	M_REASONS,
	M_NVTX,
	M_NVRX,
	NMETRIC
};

static const char *const metric_name[NMETRIC] = {
	"temp_c",   "mem_temp_c",  "power_w",	  "energy_mj",
	"util_gpu", "util_mem",	   "mem_used_b",  "mem_free_b",
	"clock_sm", "clock_mem",   "clock_gfx",	  "clock_video",
	"fan_pct",  "pcie_tx_kbs", "pcie_rx_kbs", "power_limit_w",
	"pstate",   "clk_reasons", "nvlink_tx",	  "nvlink_rx",
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
#define GET(m, call, expr)                                                     \
	do {                                                                   \
		if ((call) == GW_NVML_SUCCESS) {                               \
			val[m] = (expr);                                       \
			ok[m] = 1;                                             \
		}                                                              \
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
	GET(M_PCIETX,
	    f->device_get_pcie_throughput(h, GW_NVML_PCIE_UTIL_TX_BYTES, &u),
	    u);
	GET(M_PCIERX,
	    f->device_get_pcie_throughput(h, GW_NVML_PCIE_UTIL_RX_BYTES, &u),
	    u);
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

void bench_load_sim(struct bench_dataset *ds, unsigned gpus, unsigned hours,
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
		for (int m = 0; m < NMETRIC; m++) {
			snprintf(ds->s[g * NMETRIC + m].name,
				 sizeof(ds->s[0].name), "%s", metric_name[m]);
			ds->s[g * NMETRIC + m].gpu = g;
		}
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

void bench_load_dcgm(struct bench_dataset *ds, const char *path)
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
	for (size_t i = 0; i < ds->ns; i++) {
		snprintf(ds->s[i].name, sizeof(ds->s[i].name), "%s",
			 hdr[6 + i % (size_t)(ncol - 6)] + 12);
		ds->s[i].gpu = (unsigned)(i / (size_t)(ncol - 6));
	}
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

void bench_dataset_free(struct bench_dataset *ds)
{
	for (size_t i = 0; i < ds->ns; i++) {
		free(ds->s[i].t);
		free(ds->s[i].v);
	}
	free(ds->s);
	memset(ds, 0, sizeof(*ds));
}
