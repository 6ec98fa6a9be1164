/* SPDX-License-Identifier: MIT */
/*
 * rw_queue.c - the store-backed remote_write queue of one endpoint
 * (contract and stream model in rw_queue.h).
 *
 * One round, for each stream in turn (1m, raw, then every open push):
 *
 *   due? --no--> next stream
 *    | yes
 *    v
 *   aged out of retention? --yes--> count dropped, cursor = horizon
 *    |
 *    v
 *   select (cursor, slice end] --> shape (policy, guard, suppression,
 *   external labels) --> batches of max_samples_per_send --> sink
 *    |
 *    +-- all acknowledged (or refused) --> cursor = slice end, state saved
 *    +-- stopped --> round ends, cursor unchanged
 */
#include "export/rw_queue.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/worker.h"
#include "export/rw_agg.h"
#include "pipeline/catalog.h"
#include "query/promql.h"

#define MINUTE		60000
#define ROLLUP_SLICE	10	      /* windows per 1m slice, at most */
#define ROLLUP_READ	20000	      /* rollups one 1m slice reads, about */
#define RAW_SPAN_MIN	1000	      /* ms of data per raw slice */
#define RAW_SPAN_MAX	(10 * MINUTE) /* ... */
#define RAW_SPAN_START	MINUTE	      /* before a rate is known */
#define EVENT_EVERY	5000	      /* ms of data between event scans */
#define READ_MAX	50000000      /* samples one select may load */
#define READ_TIMEOUT_NS (30ull * 1000000000ull)
#define GUARD_MAX	(1u << 21) /* slots for output series remembered */
#define STATE_MAGIC	"gpuwatch-remote-write-state 1"

enum { ST_1M, ST_RAW, ST_EVENTS, ST_N };

/* The last sample sent of one output series (open addressing by hash). */
struct guard {
	uint64_t h; /* 0: empty slot */
	int64_t t;  /* last sent */
	double v;
};

/* A selector list: nsets matcher lists, any of which selects. */
struct msets {
	struct gw_matcher **m;
	size_t *nm;
	size_t n;
};

struct push {
	struct msets sel;
	char *key;	    /* the selectors' text, to merge pushes */
	int64_t start, end; /* end under q->mu */
	int64_t cursor;
	int64_t span; /* ms per slice */
	double rate;  /* samples per ms of data, last slice */
};

struct out_series {
	struct gw_labels labels;
	int64_t *t;
	double *v;
	size_t n, cap;
};

struct batch {
	struct out_series *s;
	size_t n, cap;
	uint64_t samples;
	int64_t tmax;
	struct gw_rw_series *view;
	size_t view_cap;
};

struct gw_rw_queue {
	struct gw_rw_queue_opts o;
	char *name, *url, *state_path;
	struct gw_label *ext; /* external labels, names sorted */
	size_t next;
	char *ext_block;
	struct msets raw; /* raw selectors (policy raw: everything) */
	struct msets all; /* {__name__=~".+"} */
	struct msets alerts, scores;
	int64_t cur[ST_N];
	int64_t raw_span;
	int64_t win; /* windows per 1m slice: fewer with many series */
	double raw_rate, rate_1m; /* output samples per ms of data */
	struct guard *guard;
	size_t nguard, guard_cap; /* guard_cap: a power of two */
	struct batch b;
	struct gw_buf key;
	struct gw_rw_agg agg; /* a 1m slice's groups (o.without) */
	char *without[GW_RW_QUEUE_MAX_WITHOUT];	    /* o.without, copied */
	char *sum_without[GW_RW_QUEUE_MAX_WITHOUT]; /* o.sum_without */
	_Atomic bool stop;
	struct gw_worker *w;	/* main thread's handle */
	struct gw_worker *self; /* the same, as the thread knows it */

	pthread_mutex_t mu; /* pushes, stats */
	struct push *push[GW_RW_QUEUE_MAX_PUSHES];
	size_t npush;
	struct gw_rw_queue_stats st;
};

/* ---- small pieces ---- */

static int64_t now_ms(const struct gw_rw_queue *q)
{
	struct timespec ts;

	if (q->o.now)
		return q->o.now(q->o.now_ctx);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t floor_minute(int64_t t)
{
	return t >= 0 ? t / MINUTE * MINUTE
		      : -((-t + MINUTE - 1) / MINUTE) * MINUTE;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	uint64_t h = gw_fnv1a64(p, n);

	h ^= h >> 29;
	return h ? h : 1; /* 0 marks a free slot of the guard */
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && strcmp(s + n - m, suf) == 0;
}

const char *gw_rw_push_reason_name(enum gw_rw_push_reason r)
{
	static const char *const names[] = { "request", "alert", "anomaly" };

	return r < GW_RW_PUSH_REASONS ? names[r] : "?";
}

static void msets_release(struct msets *s)
{
	for (size_t i = 0; i < s->n; i++)
		gw_matchers_free(s->m[i], s->nm[i]);
	free(s->m);
	free(s->nm);
	memset(s, 0, sizeof(*s));
}

/* Appends one parsed selector to s. */
static int msets_add_text(struct msets *s, const char *text, char *err,
			  size_t errlen)
{
	struct gw_promql_error perr;
	struct gw_matcher **m;
	size_t *nm;
	bool nonempty = false;
	int r;

	m = realloc(s->m, (s->n + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	s->m = m;
	nm = realloc(s->nm, (s->n + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	s->nm = nm;
	memset(&perr, 0, sizeof(perr));
	r = gw_promql_parse_selector(text, &s->m[s->n], &s->nm[s->n], &perr);
	if (r) {
		perr.msg[sizeof(perr.msg) - 1] = '\0';
		snprintf(err, errlen, "selector %s: %s", text,
			 perr.msg[0] ? perr.msg : strerror(-r));
		return r == -ENOMEM ? r : -EINVAL;
	}
	for (size_t j = 0; j < s->nm[s->n]; j++)
		nonempty |= !gw_matcher_matches_empty(&s->m[s->n][j]);
	s->n++;
	if (!nonempty) {
		snprintf(err, errlen,
			 "selector %s: needs at least one matcher that does "
			 "not match the empty string",
			 text);
		return -EINVAL;
	}
	return 0;
}

/* Deep copy of one matcher list into s. */
static int msets_add_copy(struct msets *s, const struct gw_matcher *src,
			  size_t n)
{
	struct gw_matcher **m, *v;
	size_t *nm;
	int r;

	m = realloc(s->m, (s->n + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	s->m = m;
	nm = realloc(s->nm, (s->n + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	s->nm = nm;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		r = gw_matcher_init(&v[i], src[i].op, src[i].name, src[i].value,
				    NULL, 0);
		if (r) {
			gw_matchers_free(v, i);
			return r;
		}
	}
	s->m[s->n] = v;
	s->nm[s->n] = n;
	s->n++;
	return 0;
}

static bool msets_match(const struct msets *s, const struct gw_labels *l)
{
	for (size_t i = 0; i < s->n; i++)
		if (gw_matchers_match(s->m[i], s->nm[i], l))
			return true;
	return false;
}

/* ---- how a series leaves under the rollup policy ---- */

/* SH_STATE: a gauge whose catalogue unit is "state" (0 or 1), or a
 * setting (a GW_SETTING row: a limit, a maximum, a level moving in steps):
 * both leave as the state rollups. */
enum shape { SH_GAUGE, SH_STATE, SH_LAST, SH_SKIP };

/*
 * The finest step of a gauge's rollups (:1m_avg, _min, _max, _stddev) as
 * the policy sends them, for the readings whose scale the hardware fixes:
 * a thousandth of a ratio, a tenth of a degree, a watt, a megahertz (NVML
 * reads clocks in MHz, utilisation in whole percent, temperatures in
 * whole degrees), 10 MB of memory, 10 MB/s of PCIe.  Below these a digit
 * tells an operator nothing, yet a small value's fine digits would set
 * the decimal scale of the receiver's whole block of that series
 * (docs/internals/remote-write-queue.md, "Precision").  Families not
 * listed keep their significant digits only.
 */
static const struct {
	enum gw_catalog_id id;
	double step;
} rollup_steps[] = {
	{ GW_CATALOG_GPU_TEMPERATURE_CELSIUS, 0.1 },
	{ GW_CATALOG_GPU_MEMORY_TEMPERATURE_CELSIUS, 0.1 },
	{ GW_CATALOG_GPU_POWER_WATTS, 1 },
	{ GW_CATALOG_GPU_CLOCK_HERTZ, 1e6 },
	{ GW_CATALOG_GPU_MEMORY_USED_BYTES, 1e7 },
	{ GW_CATALOG_GPU_MEMORY_FREE_BYTES, 1e7 },
	{ GW_CATALOG_GPU_PROCESS_MEMORY_USED_BYTES, 1e7 },
	{ GW_CATALOG_GPU_PCIE_THROUGHPUT_BYTES_PER_SECOND, 1e7 },
	{ GW_CATALOG_GPU_UTILIZATION_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_MEMORY_UTILIZATION_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_FAN_SPEED_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_PROCESS_SM_UTILIZATION_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_PROCESS_MEMORY_UTILIZATION_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_SM_OCCUPANCY_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_SM_ACTIVE_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_TENSOR_ACTIVE_RATIO, 1e-3 },
	{ GW_CATALOG_GPU_DRAM_BANDWIDTH_UTILIZATION_RATIO, 1e-3 },
};

/* How the series named name leaves; *step (if not NULL): its rollups'
 * finest step (rollup_steps), 0 for none. */
static enum shape shape_of(const char *name, double *step)
{
	static const char *const last[] = { "_total", "_bucket", "_info",
					    "_count", "_sum",	 "_created" };

	if (step)
		*step = 0;
	if (strchr(name, ':'))
		return SH_SKIP;
	if (strcmp(name, "ALERTS") == 0 ||
	    strcmp(name, "ALERTS_FOR_STATE") == 0)
		return SH_LAST;
	for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++)
		if (has_suffix(name, last[i]))
			return SH_LAST;
	for (size_t i = 0; i < GW_CATALOG_COUNT; i++) {
		const struct gw_family *f = &gw_catalog[i].fam;

		if (strcmp(f->name, name) != 0)
			continue;
		for (size_t k = 0;
		     step && k < sizeof(rollup_steps) / sizeof(rollup_steps[0]);
		     k++)
			if ((size_t)rollup_steps[k].id == i)
				*step = rollup_steps[k].step;
		if (f->type != GW_GAUGE)
			return SH_LAST;
		return gw_catalog[i].setting ||
				       strcmp(gw_catalog[i].unit, "state") == 0
			       ? SH_STATE
			       : SH_GAUGE;
	}
	return SH_GAUGE;
}

/* A counter that leaves summed over o.sum_without: its series carries one
 * of those labels. */
static bool summed(const struct gw_rw_queue *q, const char *name,
		   const struct gw_labels *labels)
{
	return has_suffix(name, "_total") &&
	       gw_rw_agg_applies(labels, (const char *const *)q->sum_without,
				 q->o.nsum_without);
}

static const char *const out_names[GW_RW_OUTS] = { "avg", "min", "max",
						   "stddev", "count_samples" };

const char *gw_rw_out_name(enum gw_rw_out o)
{
	return o < GW_RW_OUTS ? out_names[o] : "?";
}

int gw_rw_outs_parse(const char *list, unsigned int *mask)
{
	unsigned int m = 0;
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ","), k;

		for (k = 0; k < GW_RW_OUTS; k++)
			if (strlen(out_names[k]) == n &&
			    strncmp(p, out_names[k], n) == 0)
				break;
		if (k == GW_RW_OUTS)
			return -EINVAL;
		m |= 1u << k;
		p += n;
		if (*p == ',')
			p++;
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

/*
 * Significant digits of a counter's value (its last each minute) where
 * the policy rounds.  A function of the value alone: rounding keeps the
 * order of values (a counter never goes down by it, a reset stays one),
 * and a batch sent again after a restart carries the same values.  The
 * error is half a unit of the ninth digit: 0.5 J of an energy counter at
 * 1e8 J, 5 MB of NVLink bytes at 6.7e15.
 */
#define COUNTER_DIGITS 9

/* v to a multiple of 10^k, as the decimal text of that multiple reads. */
static double round_pow10(double v, double k)
{
	double s;

	if (k < -300 || k > 300)
		return v;
	if (k < 0) {
		s = pow(10, -k);
		return round(v * s) / s;
	}
	s = pow(10, k);
	return round(v / s) * s;
}

/*
 * v to digits significant decimal digits (0: v as it is), or coarser:
 * to the largest power of ten not above noise (ignored unless > 0), the
 * standard error of the statistic v is (docs/internals/remote-write-
 * queue.md, "Precision").  Digits below a statistic's own sampling
 * error say nothing, and cost the receiver most of its bytes.
 */
static double round_stat(double v, unsigned int digits, double noise)
{
	double k;

	if (!digits || v == 0 || !isfinite(v))
		return v;
	k = floor(log10(fabs(v))) - (double)digits + 1;
	/* (a step 0.1 or 1e-3 is a power of ten its double is just off) */
	if (noise > 0 && isfinite(noise) && floor(log10(noise) + 1e-12) > k)
		k = floor(log10(noise) + 1e-12);
	return round_pow10(v, k);
}

/* A counter's value c as it leaves under its own name: the 1-minute
 * stream's and a raw push's the same, or a push would make it go down. */
static double counter_out(const struct gw_rw_queue *q, double c)
{
	return q->o.precision ? round_stat(c, COUNTER_DIGITS, 0) : c;
}

/* ---- the guard: no output series goes back in time; suppression ---- */

static struct guard *guard_find(struct gw_rw_queue *q, uint64_t h)
{
	size_t mask = q->guard_cap - 1, i = h & mask;

	for (;;) {
		struct guard *g = &q->guard[i];

		if (g->h == h || g->h == 0)
			return g;
		i = (i + 1) & mask;
	}
}

/*
 * Whether sample (t, v) of the output series with hash h goes out:
 * never at or before the last sent; with suppress, not when equal to the
 * last sent value within the heartbeat.  Records what goes.
 */
static bool admit(struct gw_rw_queue *q, uint64_t h, int64_t t, double v,
		  bool suppress)
{
	struct guard *g;

	if (q->nguard >= q->guard_cap / 2) {
		/* Full: forget everything (values are sent again once). */
		memset(q->guard, 0, q->guard_cap * sizeof(*q->guard));
		q->nguard = 0;
		gw_warn("remote_write %s: more than %zu output series; the "
			"suppression state was reset",
			q->name, q->guard_cap / 2);
	}
	g = guard_find(q, h);
	if (g->h == 0) {
		*g = (struct guard){ .h = h, .t = t, .v = v };
		q->nguard++;
		return true;
	}
	if (t <= g->t)
		return false;
	if (suppress && q->o.heartbeat_ms >= 0 &&
	    memcmp(&g->v, &v, sizeof(v)) == 0 && t - g->t < q->o.heartbeat_ms) {
		pthread_mutex_lock(&q->mu);
		q->st.samples_suppressed++;
		pthread_mutex_unlock(&q->mu);
		return false;
	}
	g->t = t;
	g->v = v;
	return true;
}

/* ---- batches ---- */

static void batch_clear(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		gw_labels_release(&b->s[i].labels);
		b->s[i].n = 0;
	}
	b->n = 0;
	b->samples = 0;
	b->tmax = 0;
}

static void batch_release(struct batch *b)
{
	batch_clear(b);
	for (size_t i = 0; i < b->cap; i++) {
		free(b->s[i].t);
		free(b->s[i].v);
	}
	free(b->s);
	free(b->view);
	memset(b, 0, sizeof(*b));
}

/* Sends what the batch holds; 0, or -EINTR when stopped. */
static int batch_send(struct gw_rw_queue *q)
{
	struct batch *b = &q->b;
	enum gw_rw_outcome out;
	size_t k = 0;

	if (!b->samples) {
		batch_clear(b);
		return 0;
	}
	if (b->view_cap < b->n) {
		struct gw_rw_series *v = realloc(b->view, b->n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->view = v;
		b->view_cap = b->n;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (!b->s[i].n)
			continue;
		b->view[k++] = (struct gw_rw_series){
			.labels = &b->s[i].labels,
			.t = b->s[i].t,
			.v = b->s[i].v,
			.n = b->s[i].n,
		};
	}
	out = q->o.sink.send(q->o.sink.ctx, b->view, k, b->samples, &q->stop);
	if (out == GW_RW_STOPPED)
		return -EINTR;
	pthread_mutex_lock(&q->mu);
	if (out == GW_RW_SENT) {
		q->st.samples_sent += b->samples;
		q->st.batches_sent++;
		if (b->tmax > q->st.highest_acked_ms)
			q->st.highest_acked_ms = b->tmax;
	} else {
		q->st.samples_refused += b->samples;
	}
	pthread_mutex_unlock(&q->mu);
	batch_clear(b);
	return 0;
}

/* Opens an output series in the batch, taking labels. */
static int batch_series(struct batch *b, struct gw_labels *labels)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct out_series *s = realloc(b->s, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		memset(s + b->cap, 0, (cap - b->cap) * sizeof(*s));
		b->s = s;
		b->cap = cap;
	}
	b->s[b->n].labels = *labels;
	memset(labels, 0, sizeof(*labels));
	b->s[b->n].n = 0;
	b->n++;
	return 0;
}

/* Adds a sample to the newest output series; sends a full batch (the
 * series goes on in the next one).  0, -ENOMEM or -EINTR. */
static int batch_add(struct gw_rw_queue *q, int64_t t, double v)
{
	struct batch *b = &q->b;
	struct out_series *s = &b->s[b->n - 1];
	struct gw_labels again;
	int r;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		int64_t *nt = realloc(s->t, cap * sizeof(*nt));
		double *nv;

		if (!nt)
			return -ENOMEM;
		s->t = nt;
		nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = cap;
	}
	s->t[s->n] = t;
	s->v[s->n] = v;
	s->n++;
	b->samples++;
	if (t > b->tmax)
		b->tmax = t;
	if (b->samples < q->o.max_samples_per_send)
		return 0;
	r = gw_labels_dup(&again, &s->labels);
	if (r)
		return r;
	r = batch_send(q);
	if (!r)
		r = batch_series(b, &again);
	gw_labels_release(&again);
	return r;
}

/*
 * The output labels: in with __name__ replaced by name (NULL: kept) and
 * the external labels it lacks.  Its key's hash in *h.
 */
static int out_labels(struct gw_rw_queue *q, const struct gw_labels *in,
		      const char *name, struct gw_labels *out, uint64_t *h)
{
	struct gw_label pairs[GW_LABELS_MAX + 16];
	size_t n = 0;
	int r;

	for (size_t i = 0; i < in->n && n < GW_LABELS_MAX; i++) {
		if (name && strcmp(in->v[i].name, "__name__") == 0)
			pairs[n++] = (struct gw_label){ "__name__", name };
		else
			pairs[n++] = in->v[i];
	}
	for (size_t i = 0; i < q->next; i++)
		if (!gw_labels_get(in, q->ext[i].name))
			pairs[n++] = q->ext[i];
	r = gw_labels_from(out, pairs, n);
	if (r)
		return r;
	gw_buf_reset(&q->key);
	r = gw_labels_key(out, &q->key);
	if (r) {
		gw_labels_release(out);
		return r;
	}
	*h = hash_bytes(q->key.p, q->key.len);
	return 0;
}

/* ---- reading the store ---- */

static int select_set(struct gw_rw_queue *q, const struct msets *sel, size_t i,
		      int64_t mint, int64_t maxt, enum gw_tier tier,
		      struct gw_series_set *out)
{
	struct gw_query_limits lim = {
		.max_samples = READ_MAX,
		.cancel = &q->stop,
	};
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	lim.deadline_ns = (uint64_t)ts.tv_sec * 1000000000ull +
			  (uint64_t)ts.tv_nsec + READ_TIMEOUT_NS;
	memset(out, 0, sizeof(*out));
	return q->o.q->select(q->o.q->ctx, sel->m[i], sel->nm[i], mint, maxt,
			      tier, &lim, out);
}

static void count_aged_out(struct gw_rw_queue *q, uint64_t n)
{
	pthread_mutex_lock(&q->mu);
	q->st.samples_aged_out += n;
	pthread_mutex_unlock(&q->mu);
	if (q->o.sink.aged_out && n)
		q->o.sink.aged_out(q->o.sink.ctx, n);
}

/* Cursors and rates are written by the queue's thread under the lock:
 * the metrics are read from any thread. */
static void set_cursor(struct gw_rw_queue *q, int64_t *c, int64_t v)
{
	pthread_mutex_lock(&q->mu);
	*c = v;
	pthread_mutex_unlock(&q->mu);
}

static void set_rate(struct gw_rw_queue *q, double *r, double v)
{
	pthread_mutex_lock(&q->mu);
	*r = v;
	pthread_mutex_unlock(&q->mu);
}

/*
 * Data of a stream between its cursor and the tier's retention horizon is
 * counted dropped and skipped: the store may drop it at any moment.
 */
static void age_out(struct gw_rw_queue *q, const struct msets *sel,
		    enum gw_tier tier, int64_t *cursor, int64_t now)
{
	int64_t ret = q->o.retention_ms[tier], horizon;
	uint64_t n = 0;

	if (ret <= 0 || *cursor >= now - ret)
		return;
	horizon = now - ret;
	if (tier != GW_TIER_RAW)
		horizon = floor_minute(horizon);
	if (horizon <= *cursor)
		return;
	for (size_t i = 0; i < sel->n; i++) {
		struct gw_series_set set;

		if (select_set(q, sel, i, *cursor + 1, horizon, tier, &set))
			continue;
		for (size_t k = 0; k < set.n; k++)
			n += set.s[k].n;
		gw_series_set_release(&set);
	}
	count_aged_out(q, n);
	gw_warn("remote_write %s: %" PRIu64 " samples from %" PRId64
		" to %" PRId64 " (ms) aged out of the store's retention "
		"before they were sent",
		q->name, n, *cursor, horizon);
	set_cursor(q, cursor, horizon);
}

/* ---- the state file ---- */

static void state_save(struct gw_rw_queue *q)
{
	char tmp[PATH_MAX + 8], text[512];
	int fd, n;
	bool ok;

	if (!q->state_path)
		return;
	n = snprintf(text, sizeof(text),
		     STATE_MAGIC "\n1m %" PRId64 "\nraw %" PRId64
				 "\nevents %" PRId64
				 "\nrate1m %.9g\nrateraw %.9g\n",
		     q->cur[ST_1M], q->cur[ST_RAW], q->cur[ST_EVENTS],
		     q->rate_1m, q->raw_rate);
	snprintf(tmp, sizeof(tmp), "%s.tmp", q->state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	ok = fd >= 0 && write(fd, text, (size_t)n) == n;
	if (fd >= 0 && close(fd) < 0)
		ok = false;
	if (ok && rename(tmp, q->state_path) < 0)
		ok = false;
	if (!ok) {
		pthread_mutex_lock(&q->mu);
		q->st.state_write_errors++;
		pthread_mutex_unlock(&q->mu);
		gw_warn("remote_write %s: cannot write %s: %s", q->name,
			q->state_path, strerror(errno));
	}
}

/* 0 with the cursors set, -ENOENT (no file), -EBADMSG. */
static int state_load(struct gw_rw_queue *q)
{
	char text[512], *p, *end;
	const char *keys[ST_N] = { "\n1m ", "\nraw ", "\nevents " };
	int64_t v[ST_N];
	ssize_t n;
	int fd;

	fd = open(q->state_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return -EBADMSG;
	text[n] = '\0';
	if (strncmp(text, STATE_MAGIC "\n", strlen(STATE_MAGIC) + 1) != 0)
		return -EBADMSG;
	for (int i = 0; i < ST_N; i++) {
		long long x;

		p = strstr(text, keys[i]);
		if (!p)
			return -EBADMSG;
		p += strlen(keys[i]);
		errno = 0;
		x = strtoll(p, &end, 10);
		if (errno || end == p || *end != '\n')
			return -EBADMSG;
		v[i] = x;
	}
	memcpy(q->cur, v, sizeof(v));
	/* Optional: the rates seen, for the backlog estimate. */
	p = strstr(text, "\nrate1m ");
	if (p)
		q->rate_1m = strtod(p + 8, NULL);
	p = strstr(text, "\nrateraw ");
	if (p)
		q->raw_rate = strtod(p + 9, NULL);
	if (!(q->rate_1m >= 0 && q->rate_1m < 1e9))
		q->rate_1m = 0;
	if (!(q->raw_rate >= 0 && q->raw_rate < 1e9))
		q->raw_rate = 0;
	return 0;
}

/* ---- streams ---- */

#define ALL_OUTS ((1u << GW_RW_OUTS) - 1)

/*
 * Output o of a gauge's window w, at the policy's precision: no finer
 * than the statistic's standard error, from the window's own spread s
 * over n samples: s / sqrt(n) for the mean, s / sqrt(2 (n - 1)) for the
 * spread itself, and a quarter of s for the extremes; and no finer than
 * step, the family's (rollup_steps; 0: none).
 */
static double gauge_out(const struct gw_rw_queue *q, const struct gw_rollup *w,
			size_t o, double step)
{
	double s = gw_rollup_stddev(w), n = w->count;
	/* (precision 0: every digit, the stddev's too) */
	unsigned int sd_digits = q->o.precision && q->o.stddev_precision
					 ? q->o.stddev_precision
					 : q->o.precision;

	switch (o) {
	case GW_RW_OUT_AVG:
		return round_stat(gw_rollup_mean(w), q->o.precision,
				  fmax(s / sqrt(n), step));
	case GW_RW_OUT_MIN:
		return round_stat(w->min, q->o.precision, fmax(s / 4, step));
	case GW_RW_OUT_MAX:
		return round_stat(w->max, q->o.precision, fmax(s / 4, step));
	case GW_RW_OUT_STDDEV:
		return round_stat(
			s, sd_digits,
			fmax(n > 1 ? s / sqrt(2 * (n - 1)) : 0, step));
	default:
		return n;
	}
}

/*
 * Sends n 1-minute windows of a series: as its last value each minute
 * under its own name (last), or as the gauge outputs in outs, named
 * NAME:1m<tag>_OUTPUT (tag "" or "_without_pid").  0, -ENOMEM, -EINTR.
 */
static int send_windows(struct gw_rw_queue *q, const struct gw_labels *labels,
			const char *base, const char *tag, bool last,
			unsigned int outs, const struct gw_rollup *r0, size_t n,
			double step)
{
	char name[512];
	int r = 0;

	for (size_t o = 0; o < (last ? 1u : (size_t)GW_RW_OUTS) && !r; o++) {
		struct gw_labels ol;
		uint64_t h;
		bool open = false;

		if (!last && !(outs & (1u << o)))
			continue;
		if (!last)
			snprintf(name, sizeof(name), "%s:1m%s_%s", base, tag,
				 out_names[o]);
		r = out_labels(q, labels, last ? NULL : name, &ol, &h);
		if (r)
			break;
		for (size_t k = 0; k < n && !r; k++) {
			const struct gw_rollup *w = &r0[k];
			double v;
			int64_t t = w->t;

			if (w->count <= 0)
				continue;
			if (last) {
				/* (an old chunk may not know it) */
				t = w->t_last != INT64_MIN ? w->t_last
							   : w->t - 1;
				v = counter_out(q, w->last);
			} else {
				v = gauge_out(q, w, o, step);
			}
			if (!admit(q, h, t, v, true))
				continue;
			if (!open) {
				r = batch_series(&q->b, &ol);
				open = true;
				if (r)
					break;
			}
			r = batch_add(q, t, v);
		}
		gw_labels_release(&ol);
	}
	return r;
}

/* The 1-minute stream: one slice of completed windows.  1: progress, 0:
 * nothing due, <0: stopped or failed. */
static int slice_1m(struct gw_rw_queue *q)
{
	int64_t now = now_ms(q), due, end, *c = &q->cur[ST_1M];
	struct gw_series_set set;
	uint64_t before = q->st.samples_sent, nread = 0, per;
	int r;

	age_out(q, &q->all, GW_TIER_1M, c, now);
	due = floor_minute(now - q->o.settle_ms);
	if (due <= *c)
		return 0;
	end = due < *c + q->win * MINUTE ? due : *c + q->win * MINUTE;
	r = select_set(q, &q->all, 0, *c + 1, end, GW_TIER_1M, &set);
	if (r == -ECANCELED)
		return -EINTR;
	if (r) {
		gw_warn("remote_write %s: cannot read 1m rollups: %s", q->name,
			strerror(-r));
		return r;
	}
	for (size_t i = 0; i < set.n && !r; i++) {
		const struct gw_series_data *d = &set.s[i];
		const char *base = gw_labels_get(&d->labels, "__name__");
		double step = 0;
		enum shape sh = base ? shape_of(base, &step) : SH_SKIP;

		if (sh == SH_SKIP)
			continue;
		unsigned int outs = q->o.outputs ? q->o.outputs : ALL_OUTS;

		if (q->o.process_outputs && gw_labels_get(&d->labels, "pid"))
			outs = q->o.process_outputs;
		else if (sh == SH_STATE && q->o.state_outputs)
			outs = q->o.state_outputs;
		if (sh == SH_LAST && msets_match(&q->raw, &d->labels))
			continue; /* sent raw under the same name */
		if (sh != SH_LAST &&
		    gw_rw_agg_applies(&d->labels,
				      (const char *const *)q->without,
				      q->o.nwithout)) {
			r = gw_rw_agg_add(&q->agg, d,
					  (const char *const *)q->without,
					  q->o.nwithout, outs, 0);
			continue;
		}
		if (sh == SH_LAST && summed(q, base, &d->labels)) {
			r = gw_rw_agg_add(&q->agg, d,
					  (const char *const *)q->sum_without,
					  q->o.nsum_without, 0, 1);
			continue;
		}
		r = send_windows(q, &d->labels, base, "", sh == SH_LAST, outs,
				 d->r, d->n, step);
	}
	gw_rw_agg_finish(&q->agg);
	for (size_t i = 0; i < q->agg.n && !r; i++) {
		const struct gw_rw_agg_group *g = &q->agg.g[i];
		const char *name = gw_labels_get(&g->labels, "__name__");
		double step = 0;

		if (name)
			shape_of(name, &step);
		r = send_windows(q, &g->labels, name, g->tag, g->sum, g->outs,
				 g->w, g->n, step);
	}
	gw_rw_agg_clear(&q->agg);
	for (size_t i = 0; i < set.n; i++)
		nread += set.s[i].n;
	gw_series_set_release(&set);
	if (!r)
		r = batch_send(q);
	if (r)
		return r == -EINTR ? r : (batch_clear(&q->b), r);
	/* Memory: a slice's rollups are all read at once (each with its
	 * sketch); with many series, fewer windows a slice. */
	per = nread / (uint64_t)((end - *c) / MINUTE);
	q->win = per ? (int64_t)(ROLLUP_READ / per) : ROLLUP_SLICE;
	q->win = q->win < 1 ? 1 : q->win > ROLLUP_SLICE ? ROLLUP_SLICE : q->win;
	set_rate(q, &q->rate_1m,
		 (double)(q->st.samples_sent - before) / (double)(end - *c));
	set_cursor(q, c, end);
	state_save(q);
	return 1;
}

/*
 * One slice of raw samples of sel from *cursor to at most limit; span and
 * rate adapt so a slice is about one batch.  A push (push) leaves out the
 * counters that leave summed: under their own name beside the sum, a
 * member would be counted twice by a central sum().  1, 0 (nothing due),
 * <0.
 */
static int slice_raw(struct gw_rw_queue *q, const struct msets *sel,
		     int64_t *cursor, int64_t limit, int64_t *span,
		     double *rate, bool wait_deadline, bool push)
{
	int64_t end, from = *cursor;
	uint64_t n = 0;
	int r = 0;

	if (limit <= from)
		return 0;
	if (wait_deadline && limit - from < q->o.batch_send_deadline_ms)
		return 0;
	end = from + *span < limit ? from + *span : limit;
	for (size_t i = 0; i < sel->n && !r; i++) {
		struct gw_series_set set;

		r = select_set(q, sel, i, from + 1, end, GW_TIER_RAW, &set);
		if (r == -ECANCELED)
			return -EINTR;
		if (r) {
			gw_warn("remote_write %s: cannot read raw samples: %s",
				q->name, strerror(-r));
			return r;
		}
		for (size_t k = 0; k < set.n && !r; k++) {
			const struct gw_series_data *d = &set.s[k];
			const char *name =
				gw_labels_get(&d->labels, "__name__");
			struct gw_labels ol;
			uint64_t h;
			bool open = false;
			/* a push of a counter the 1-minute stream also sends */
			bool ctr =
				push && name && shape_of(name, NULL) == SH_LAST;

			if (push && name && summed(q, name, &d->labels))
				continue;
			r = out_labels(q, &d->labels, NULL, &ol, &h);
			if (r)
				break;
			for (size_t j = 0; j < d->n && !r; j++) {
				double v =
					ctr ? counter_out(q, d->v[j]) : d->v[j];

				if (!admit(q, h, d->t[j], v, false))
					continue;
				if (!open) {
					r = batch_series(&q->b, &ol);
					open = true;
					if (r)
						break;
				}
				n++;
				r = batch_add(q, d->t[j], v);
			}
			gw_labels_release(&ol);
		}
		gw_series_set_release(&set);
	}
	if (!r)
		r = batch_send(q);
	if (r) {
		if (r != -EINTR)
			batch_clear(&q->b);
		return r;
	}
	if (n) {
		set_rate(q, rate, (double)n / (double)(end - from));
		double want = (double)q->o.max_samples_per_send / *rate;

		*span = want < RAW_SPAN_MIN   ? RAW_SPAN_MIN
			: want > RAW_SPAN_MAX ? RAW_SPAN_MAX
					      : (int64_t)want;
	} else {
		*span = RAW_SPAN_MAX;
	}
	set_cursor(q, cursor, end);
	return 1;
}

static int slice_rawstream(struct gw_rw_queue *q)
{
	int64_t now = now_ms(q);
	int r;

	if (!q->raw.n)
		return 0;
	age_out(q, &q->raw, GW_TIER_RAW, &q->cur[ST_RAW], now);
	r = slice_raw(q, &q->raw, &q->cur[ST_RAW], now - q->o.settle_ms,
		      &q->raw_span, &q->raw_rate, true, false);
	if (r > 0)
		state_save(q);
	return r;
}

static void push_free(struct push *p)
{
	if (!p)
		return;
	msets_release(&p->sel);
	free(p->key);
	free(p);
}

/* One slice of push i; removes it once done.  1, 0, <0. */
static int slice_push(struct gw_rw_queue *q, size_t i)
{
	struct push *p = q->push[i];
	int64_t now = now_ms(q), end, limit;
	int r;

	pthread_mutex_lock(&q->mu);
	end = p->end;
	pthread_mutex_unlock(&q->mu);
	age_out(q, &p->sel, GW_TIER_RAW, &p->cursor, now);
	limit = now - q->o.settle_ms < end ? now - q->o.settle_ms : end;
	r = slice_raw(q, &p->sel, &p->cursor, limit, &p->span, &p->rate,
		      limit < end, true);
	if (r < 0)
		return r;
	pthread_mutex_lock(&q->mu);
	if (p->cursor >= p->end) {
		q->push[i] = q->push[--q->npush];
		q->st.pushes_open = q->npush;
		pthread_mutex_unlock(&q->mu);
		push_free(p);
		return 1;
	}
	pthread_mutex_unlock(&q->mu);
	return r;
}

/* ---- pushes ---- */

static int push_key(const struct gw_matcher *const *sets, const size_t *nm,
		    size_t nsets, struct gw_buf *out)
{
	static const char *const ops[] = { "=", "!=", "=~", "!~" };

	for (size_t i = 0; i < nsets; i++) {
		gw_buf_puts(out, i ? ";" : "");
		for (size_t j = 0; j < nm[i]; j++)
			gw_buf_putf(out, "%s%s%s\"%s\"", j ? "," : "",
				    sets[i][j].name, ops[sets[i][j].op],
				    sets[i][j].value);
	}
	return gw_buf_error(out);
}

int gw_rw_queue_push(struct gw_rw_queue *q,
		     const struct gw_matcher *const *sets, const size_t *nm,
		     size_t nsets, int64_t start_ms, int64_t end_ms,
		     enum gw_rw_push_reason why)
{
	struct gw_buf key;
	struct push *p = NULL;
	int r;

	if (end_ms < start_ms || !nsets || why >= GW_RW_PUSH_REASONS)
		return -EINVAL;
	gw_buf_init(&key, 1 << 20);
	r = push_key(sets, nm, nsets, &key);
	if (r)
		goto out;
	pthread_mutex_lock(&q->mu);
	for (size_t i = 0; i < q->npush; i++) {
		struct push *o = q->push[i];

		if (strcmp(o->key, key.p) == 0 && start_ms <= o->end) {
			if (end_ms > o->end)
				o->end = end_ms;
			q->st.pushes[why]++;
			pthread_mutex_unlock(&q->mu);
			goto out;
		}
	}
	if (q->npush == GW_RW_QUEUE_MAX_PUSHES) {
		q->st.pushes_refused++;
		pthread_mutex_unlock(&q->mu);
		r = -ENOSPC;
		goto out;
	}
	pthread_mutex_unlock(&q->mu);
	p = calloc(1, sizeof(*p));
	r = -ENOMEM;
	if (!p)
		goto out;
	for (size_t i = 0; i < nsets; i++) {
		r = msets_add_copy(&p->sel, sets[i], nm[i]);
		if (r)
			goto out;
	}
	p->key = strdup(key.p);
	if (!p->key) {
		r = -ENOMEM;
		goto out;
	}
	p->start = start_ms;
	p->end = end_ms;
	p->cursor = start_ms - 1;
	p->span = RAW_SPAN_START;
	pthread_mutex_lock(&q->mu);
	if (q->npush == GW_RW_QUEUE_MAX_PUSHES) {
		q->st.pushes_refused++;
		r = -ENOSPC;
	} else {
		q->push[q->npush++] = p;
		q->st.pushes[why]++;
		q->st.pushes_open = q->npush;
		p = NULL;
		r = 0;
	}
	pthread_mutex_unlock(&q->mu);
	if (!r && q->w)
		gw_worker_wake(q->w);
out:
	push_free(p);
	gw_buf_release(&key);
	return r;
}

/* The series an event concerns: the process, else the GPU, else (an
 * anomaly) the series itself (name: its name, NULL for an alert). */
static int event_push(struct gw_rw_queue *q, const struct gw_labels *l,
		      const char *name, int64_t first, int64_t last,
		      enum gw_rw_push_reason why)
{
	static const char *const ids[] = { "pid", "uuid", "gpu" };
	struct gw_matcher m[GW_LABELS_MAX];
	const struct gw_matcher *sets[1] = { m };
	size_t n = 0;
	int r = 0;

	for (size_t i = 0; i < 3 && !n; i++) {
		const char *v = gw_labels_get(l, ids[i]);

		if (v) {
			r = gw_matcher_init(&m[0], GW_MATCH_EQ, ids[i], v, NULL,
					    0);
			if (r)
				return r;
			n = 1;
		}
	}
	if (!n && name) {
		for (size_t i = 0; i < l->n && !r; i++) {
			const char *v = strcmp(l->v[i].name, "__name__") == 0
						? name
						: l->v[i].value;

			r = gw_matcher_init(&m[n], GW_MATCH_EQ, l->v[i].name, v,
					    NULL, 0);
			if (!r)
				n++;
		}
	}
	if (n && !r)
		r = gw_rw_queue_push(q, sets, &n, 1,
				     first - q->o.event_before_ms,
				     last + q->o.event_after_ms, why);
	for (size_t i = 0; i < n; i++)
		gw_matcher_release(&m[i]);
	return r;
}

/* Finds firing alerts and anomaly scores over the threshold in the data
 * since the last scan and opens pushes for them. */
static void scan_events(struct gw_rw_queue *q)
{
	int64_t *c = &q->cur[ST_EVENTS];
	int64_t to = now_ms(q) - q->o.settle_ms;
	struct gw_series_set set;
	char base[512];

	int r;

	if (!q->o.events || to - *c < EVENT_EVERY)
		return;
	r = select_set(q, &q->alerts, 0, *c + 1, to, GW_TIER_RAW, &set);
	gw_dbg("remote_write %s: events in (%" PRId64 ", %" PRId64
	       "]: %d, %zu firing alert series",
	       q->name, *c, to, r, r ? 0 : set.n);
	if (!r) {
		for (size_t i = 0; i < set.n; i++)
			if (set.s[i].n &&
			    event_push(q, &set.s[i].labels, NULL, set.s[i].t[0],
				       set.s[i].t[set.s[i].n - 1],
				       GW_RW_PUSH_ALERT) == -ENOSPC)
				break;
		gw_series_set_release(&set);
	}
	r = select_set(q, &q->scores, 0, *c + 1, to, GW_TIER_RAW, &set);
	gw_dbg("remote_write %s: %d, %zu anomaly score series", q->name, r,
	       r ? 0 : set.n);
	if (!r) {
		for (size_t i = 0; i < set.n; i++) {
			const struct gw_series_data *d = &set.s[i];
			const char *nm = gw_labels_get(&d->labels, "__name__");
			int64_t first = INT64_MIN, last = INT64_MIN;
			size_t len;

			for (size_t k = 0; k < d->n; k++) {
				if (!(d->v[k] >= q->o.anomaly_threshold))
					continue;
				if (first == INT64_MIN)
					first = d->t[k];
				last = d->t[k];
			}
			if (first == INT64_MIN || !nm)
				continue;
			len = strlen(nm) - strlen(":anomaly_score");
			snprintf(base, sizeof(base), "%.*s", (int)len, nm);
			if (event_push(q, &d->labels, base, first, last,
				       GW_RW_PUSH_ANOMALY) == -ENOSPC)
				break;
		}
		gw_series_set_release(&set);
	}
	set_cursor(q, c, to);
	state_save(q);
}

/* ---- a round ---- */

/* The backlog estimate and the lag, from the cursors and the rates seen
 * (q->mu held). */
static void fill_gauges(struct gw_rw_queue *q, struct gw_rw_queue_stats *st)
{
	int64_t now = now_ms(q), h = now - q->o.settle_ms, behind = 0;
	double backlog = 0;

	if (q->o.policy == GW_RW_POLICY_ROLLUP &&
	    floor_minute(h) > q->cur[ST_1M]) {
		behind = floor_minute(h) - q->cur[ST_1M];
		backlog += q->rate_1m * (double)(h - q->cur[ST_1M]);
	}
	if (q->raw.n && h > q->cur[ST_RAW]) {
		if (h - q->cur[ST_RAW] > behind)
			behind = h - q->cur[ST_RAW];
		backlog += q->raw_rate * (double)(h - q->cur[ST_RAW]);
	}
	for (size_t i = 0; i < q->npush; i++) {
		const struct push *p = q->push[i];
		int64_t lim = h < p->end ? h : p->end;

		if (lim > p->cursor)
			backlog += p->rate * (double)(lim - p->cursor);
	}
	st->backlog_samples = (uint64_t)backlog;
	st->lag_seconds = (double)behind / 1000.0;
}

static bool stopping(const struct gw_rw_queue *q)
{
	return atomic_load(&q->stop) ||
	       (q->self && gw_worker_stopping(q->self));
}

/* Runs one stream's slices until it has nothing due or its share of the
 * round (max_lag / 2) is used. */
static int serve(struct gw_rw_queue *q, int (*fn)(struct gw_rw_queue *),
		 int *sent)
{
	double until = gw_now_mono() + (double)q->o.max_lag_ms / 2000.0;
	int r;

	do {
		r = fn(q);
		if (r > 0)
			(*sent)++;
	} while (r > 0 && gw_now_mono() < until && !stopping(q));
	return r < 0 ? r : 0;
}

int gw_rw_queue_step(struct gw_rw_queue *q)
{
	int sent = 0, r = 0;
	size_t n;

	scan_events(q);
	if (q->o.policy == GW_RW_POLICY_ROLLUP)
		r = serve(q, slice_1m, &sent);
	if (r == -EINTR)
		return r;
	r = serve(q, slice_rawstream, &sent);
	if (r == -EINTR)
		return r;
	pthread_mutex_lock(&q->mu);
	n = q->npush;
	pthread_mutex_unlock(&q->mu);
	/* Newest first, so a push that ends is replaced by one already
	 * served; every open push gets a slice per round. */
	for (size_t i = n; i-- > 0;) {
		double until = gw_now_mono() + (double)q->o.max_lag_ms / 2000.0;

		do {
			pthread_mutex_lock(&q->mu);
			n = q->npush;
			pthread_mutex_unlock(&q->mu);
			if (i >= n)
				break;
			r = slice_push(q, i);
			if (r > 0)
				sent++;
		} while (r > 0 && gw_now_mono() < until && !stopping(q));
		if (r == -EINTR)
			return r;
	}
	return sent;
}

static double round_fn(struct gw_worker *w, void *arg)
{
	struct gw_rw_queue *q = arg;
	int r;

	q->self = w;
	r = gw_rw_queue_step(q);
	if (r == -EINTR || stopping(q))
		return GW_WORKER_EXIT;
	/* Something sent: go on at once; else look again in a second (a
	 * failing read also waits a second). */
	return r > 0 ? 0.0 : 1.0;
}

/* ---- life ---- */

static int parse_external(struct gw_rw_queue *q, char *err, size_t errlen)
{
	size_t bytes = 0;
	char *p;

	q->ext = calloc(q->o.nexternal + 1, sizeof(*q->ext));
	for (size_t i = 0; i < q->o.nexternal; i++)
		bytes += strlen(q->o.external[i]) + 1;
	q->ext_block = malloc(bytes + 1);
	if (!q->ext || !q->ext_block)
		return -ENOMEM;
	p = q->ext_block;
	for (size_t i = 0; i < q->o.nexternal; i++) {
		const char *s = q->o.external[i];
		char *eq;
		size_t n = strlen(s);

		memcpy(p, s, n + 1);
		eq = strchr(p, '=');
		if (!eq || eq == p || !eq[1]) {
			snprintf(err, errlen,
				 "external label %s: expected NAME=VALUE", s);
			return -EINVAL;
		}
		*eq = '\0';
		for (const char *c = p; *c; c++)
			if (!((*c >= 'a' && *c <= 'z') ||
			      (*c >= 'A' && *c <= 'Z') || *c == '_' ||
			      (c > p && *c >= '0' && *c <= '9'))) {
				snprintf(err, errlen,
					 "external label %s: bad label name",
					 s);
				return -EINVAL;
			}
		for (size_t k = 0; k < q->next; k++)
			if (strcmp(q->ext[k].name, p) == 0) {
				snprintf(err, errlen,
					 "external label %s: given twice", p);
				return -EINVAL;
			}
		q->ext[q->next++] = (struct gw_label){ p, eq + 1 };
		p += n + 1;
	}
	return 0;
}

static bool label_name_ok(const char *l)
{
	size_t n = strlen(l);

	if (!n || strcmp(l, "__name__") == 0 ||
	    !(isalpha((unsigned char)l[0]) || l[0] == '_'))
		return false;
	for (size_t k = 1; k < n; k++)
		if (!(isalnum((unsigned char)l[k]) || l[k] == '_'))
			return false;
	return true;
}

int gw_rw_without_parse(const char *list, char *buf, size_t buflen,
			const char **names, size_t *n)
{
	char *p, *save = NULL;

	*n = 0;
	if (strlen(list) >= buflen)
		return -ENOSPC;
	strcpy(buf, list);
	if (strcmp(buf, "none") == 0)
		return 0;
	for (p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (*n == GW_RW_QUEUE_MAX_WITHOUT || !label_name_ok(p))
			return -EINVAL;
		names[(*n)++] = p;
	}
	return 0;
}

/* Copies a list of label names (o.without, o.sum_without) into dst: -EINVAL
 * for a name that is not a label name or is __name__ (*n is cut to the
 * names copied), -ENOMEM. */
static int copy_labels(struct gw_rw_queue *q, const char *const *src, size_t *n,
		       char **dst, char *err, size_t errlen)
{
	for (size_t i = 0; i < *n; i++) {
		const char *l = src[i];

		if (!l || !label_name_ok(l) || strlen(l) > 48) {
			snprintf(err, errlen,
				 "remote_write %s: '%s' is not a label to "
				 "aggregate over",
				 q->o.name, l ? l : "");
			*n = i;
			return -EINVAL;
		}
		dst[i] = strdup(l);
		if (!dst[i]) {
			*n = i;
			snprintf(err, errlen, "remote_write queue: %s",
				 strerror(ENOMEM));
			return -ENOMEM;
		}
	}
	return 0;
}

int gw_rw_queue_new(const struct gw_rw_queue_opts *o, struct gw_rw_queue **out,
		    char *err, size_t errlen)
{
	struct gw_rw_queue *q;
	int64_t now;
	int r = -ENOMEM;

	*out = NULL;
	if (!o || o->sz < sizeof(*o) || !o->name || !o->url || !o->q ||
	    !o->sink.send || o->nraw > GW_RW_QUEUE_MAX_RAW ||
	    o->nwithout > GW_RW_QUEUE_MAX_WITHOUT ||
	    o->nsum_without > GW_RW_QUEUE_MAX_WITHOUT) {
		snprintf(err, errlen, "remote_write queue: bad options");
		return -EINVAL;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		goto nomem;
	q->o = *o;
	pthread_mutex_init(&q->mu, NULL);
	gw_buf_init(&q->key, 1 << 20);
	gw_rw_agg_init(&q->agg);
	if (!q->o.max_samples_per_send)
		q->o.max_samples_per_send = 2000;
	if (!q->o.batch_send_deadline_ms)
		q->o.batch_send_deadline_ms = 5000;
	if (!q->o.settle_ms)
		q->o.settle_ms = 10000;
	if (!q->o.heartbeat_ms)
		q->o.heartbeat_ms = 4 * MINUTE;
	if (!q->o.max_lag_ms)
		q->o.max_lag_ms = 30000;
	if (!q->o.event_before_ms)
		q->o.event_before_ms = 10 * MINUTE;
	if (!q->o.event_after_ms)
		q->o.event_after_ms = 10 * MINUTE;
	if (!(q->o.anomaly_threshold > 0))
		q->o.anomaly_threshold = 0.95;
	q->name = strdup(o->name);
	q->url = strdup(o->url);
	q->state_path = o->state_path ? strdup(o->state_path) : NULL;
	q->guard_cap = GUARD_MAX;
	if (o->guard_max && o->guard_max <= GUARD_MAX / 2) {
		q->guard_cap = 64;
		while (q->guard_cap < 2 * (size_t)o->guard_max)
			q->guard_cap *= 2;
	}
	q->guard = calloc(q->guard_cap, sizeof(*q->guard));
	if (!q->name || !q->url || (o->state_path && !q->state_path) ||
	    !q->guard)
		goto nomem;
	q->o.name = q->name;
	q->o.url = q->url;
	q->o.state_path = q->state_path;
	r = copy_labels(q, o->without, &q->o.nwithout, q->without, err, errlen);
	q->o.without = NULL;
	if (!r)
		r = copy_labels(q, o->sum_without, &q->o.nsum_without,
				q->sum_without, err, errlen);
	q->o.sum_without = NULL;
	if (r)
		goto fail;
	r = parse_external(q, err, errlen);
	q->o.external = NULL;
	if (r)
		goto fail;
	r = msets_add_text(&q->all, "{__name__=~\".+\"}", err, errlen);
	if (!r)
		r = msets_add_text(&q->alerts, "ALERTS{alertstate=\"firing\"}",
				   err, errlen);
	if (!r)
		r = msets_add_text(&q->scores,
				   "{__name__=~\".+:anomaly_score\"}", err,
				   errlen);
	if (!r && o->policy == GW_RW_POLICY_RAW)
		r = msets_add_text(&q->raw, "{__name__=~\".+\"}", err, errlen);
	for (size_t i = 0; i < o->nraw && !r && o->policy != GW_RW_POLICY_RAW;
	     i++)
		r = msets_add_text(&q->raw, o->raw[i], err, errlen);
	q->o.raw = NULL;
	if (r)
		goto fail;
	q->raw_span = RAW_SPAN_START;
	q->win = ROLLUP_SLICE;
	now = now_ms(q);
	r = q->state_path ? state_load(q) : -ENOENT;
	if (r) {
		if (r != -ENOENT)
			gw_warn("remote_write %s: %s is not a watermark file; "
				"starting at the present",
				q->name, q->state_path);
		q->cur[ST_1M] = floor_minute(now - q->o.settle_ms);
		q->cur[ST_RAW] = now - q->o.settle_ms;
		q->cur[ST_EVENTS] = now - q->o.settle_ms;
		state_save(q);
	} else {
		gw_info("remote_write %s: resuming from %.3f (1m), %.3f (raw)",
			q->name, (double)q->cur[ST_1M] / 1000.0,
			(double)q->cur[ST_RAW] / 1000.0);
	}
	/* The rollup cursor is a window end. */
	q->cur[ST_1M] = floor_minute(q->cur[ST_1M]);
	*out = q;
	return 0;
nomem:
	r = -ENOMEM;
	snprintf(err, errlen, "remote_write queue: %s", strerror(ENOMEM));
fail:
	gw_rw_queue_free(q);
	return r;
}

int gw_rw_queue_start(struct gw_rw_queue *q, unsigned int index)
{
	char name[GW_WORKER_NAME_MAX + 1];
	struct gw_worker_opts wo = {
		.round = round_fn,
		.arg = q,
		.period = 1.0,
		.table = q->o.workers,
	};

	snprintf(name, sizeof(name), "gw-rw-%u", index % 1000);
	wo.name = name;
	return gw_worker_start(&wo, &q->w);
}

void gw_rw_queue_request_stop(struct gw_rw_queue *q)
{
	if (q && q->w)
		gw_worker_request_stop(q->w);
}

int gw_rw_queue_stop(struct gw_rw_queue *q, double deadline)
{
	double soft = deadline - 0.5;
	int r;

	if (!q || !q->w)
		return 0;
	gw_rw_queue_request_stop(q);
	r = gw_worker_join(q->w, soft);
	if (r) {
		atomic_store(&q->stop, true); /* cut the send in flight */
		r = gw_worker_join(q->w, deadline);
	}
	if (r)
		return r;
	gw_worker_free(q->w);
	q->w = NULL;
	return 0;
}

void gw_rw_queue_free(struct gw_rw_queue *q)
{
	if (!q)
		return;
	if (q->w && gw_rw_queue_stop(q, gw_now_mono() + 1.0))
		return; /* a thread still runs: leave it its memory */
	for (size_t i = 0; i < q->npush; i++)
		push_free(q->push[i]);
	msets_release(&q->all);
	msets_release(&q->alerts);
	msets_release(&q->scores);
	msets_release(&q->raw);
	batch_release(&q->b);
	gw_buf_release(&q->key);
	gw_rw_agg_release(&q->agg);
	for (size_t i = 0; i < q->o.nwithout; i++)
		free(q->without[i]);
	for (size_t i = 0; i < q->o.nsum_without; i++)
		free(q->sum_without[i]);
	free(q->guard);
	free(q->ext);
	free(q->ext_block);
	free(q->name);
	free(q->url);
	free(q->state_path);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

void gw_rw_queue_stats(struct gw_rw_queue *q, struct gw_rw_queue_stats *st)
{
	pthread_mutex_lock(&q->mu);
	*st = q->st;
	fill_gauges(q, st);
	pthread_mutex_unlock(&q->mu);
}

void gw_rw_queue_publish(struct gw_rw_queue *q, struct gw_snap *s)
{
	struct gw_rw_queue_stats st;
	const char *n = q->name, *u = q->url;

	gw_rw_queue_stats(q, &st);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_SAMPLES_SUPPRESSED_TOTAL),
		    (double)st.samples_suppressed, NULL, "remote_name", n,
		    "url", u, NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_SAMPLES_PENDING),
		    (double)st.backlog_samples, NULL, "remote_name", n, "url",
		    u, NULL);
	gw_snap_add(s,
		    GW_FAM(REMOTE_STORAGE_QUEUE_HIGHEST_SENT_TIMESTAMP_SECONDS),
		    (double)st.highest_acked_ms / 1000.0, NULL, "remote_name",
		    n, "url", u, NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_QUEUE_LAG_SECONDS), st.lag_seconds,
		    NULL, "remote_name", n, "url", u, NULL);
	for (int i = 0; i < GW_RW_PUSH_REASONS; i++)
		gw_snap_add(s, GW_FAM(REMOTE_STORAGE_RAW_PUSHES_TOTAL),
			    (double)st.pushes[i], NULL, "remote_name", n, "url",
			    u, "reason",
			    gw_rw_push_reason_name((enum gw_rw_push_reason)i),
			    NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_RAW_PUSHES_OPEN),
		    (double)st.pushes_open, NULL, "remote_name", n, "url", u,
		    NULL);
	if (q->o.sink.publish)
		q->o.sink.publish(q->o.sink.ctx, s);
}
