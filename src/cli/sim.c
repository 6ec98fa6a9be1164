/* SPDX-License-Identifier: MIT */
/*
 * sim.c - `gpuwatch sim fleet`: N simulated nodes of G GPUs each, pushed to
 * a remote_write endpoint through the agent's own code, to size a fleet.
 *
 * Per node: a private simulator world read by the NVML collector's read
 * functions (collect/nvml/nvml_node.h: the agent's full metric set, its
 * names and labels, job churn, faults), its samples aggregated into
 * 1-minute windows by the store's rollup code (store/rollup.h, as the
 * store's 1m tier does), and a remote_write queue (export/rw_queue.h, the
 * agent's: policy, suppression and heartbeat, external labels, batching)
 * reading those windows from an in-memory stand-in for the store, its
 * batches relabelled, encoded and sent by the agent's sink
 * (export/rw_sink.h).  The queues run on a simulated clock; each sender
 * thread drives its share of the nodes minute by minute.
 *
 * What is measured: the thread CPU time of aggregation (rollups) and of
 * the queue's work (reading the windows, shaping, encoding, sending),
 * divided by the simulated GPU-seconds; the simulator's own time is
 * reported apart.  Bytes and samples come from the endpoint's counters.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "collect/nvml/nvml_node.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parse.h"
#include "core/config.h"
#include "export/rw.h"
#include "export/rw_queue.h"
#include "export/rw_sink.h"
#include "store/query.h"
#include "store/rollup.h"

#define MINUTE_MS    60000
#define MAX_EXTERNAL 16
#define MAX_NODES    100000
#define MAX_SENDERS  64
#define RETIRE_AFTER 10 /* windows without a sample: the series is gone */
#define SLOTS_MIN    1024
#define PROGRESS_S   30.0 /* wall seconds between progress lines */

static volatile sig_atomic_t interrupted;

struct sender;

struct series {
	uint64_t h; /* of the family and the label text */
	const void *fam;
	struct gw_labels labels;
	struct gw_rollup r; /* the window in progress */
	unsigned int idle;  /* windows in a row without a sample */
};

struct node {
	unsigned int index;
	struct gw_nvml_node *sim;
	struct series *s;
	size_t n, cap;
	uint32_t *slot; /* series index + 1; 0: empty */
	size_t nslot;
	struct gw_queryable qy;
	struct gw_rw_queue *q;
	int64_t now;	   /* the queue's clock, ms */
	int64_t t;	   /* timestamp of the samples being added */
	int64_t win_end;   /* end of the window being filled */
	int64_t phase;	   /* ms after each second its samples are taken */
	struct sender *sd; /* the thread that drives it */
	uint64_t created, samples;
	double cpu_agg; /* thread CPU seconds in ingest() */
	int err;
};

struct fleet_opts {
	const char *url;
	unsigned int nodes, gpus, senders;
	int64_t start_ms;
	int64_t duration_ms;
	bool realtime;
	double interval, detail_interval; /* seconds */
	double faults_per_gpu_day;
	uint64_t seed;
	const char *prefix;
	const char *external[MAX_EXTERNAL];
	size_t nexternal;
	int64_t heartbeat_ms;
	unsigned int precision;
	unsigned int stddev_precision;
	unsigned int outputs;
	unsigned int process_outputs;
	unsigned int state_outputs;
	char without_buf[256];
	const char *without[GW_RW_QUEUE_MAX_WITHOUT];
	size_t nwithout;
	char sum_buf[256];
	const char *sum_without[GW_RW_QUEUE_MAX_WITHOUT];
	size_t nsum_without;
	const char *drop; /* names dropped by a write_relabel_configs rule */
};

struct sender {
	struct fleet *f;
	unsigned int id;
	pthread_t th;
	struct gw_rw_sink *sink;
	/* thread CPU seconds: reading (the simulator, the collector and
	 * ingest() within), the queue's work */
	double cpu_read, cpu_send;
	_Atomic uint64_t minutes; /* node-minutes done (read by progress) */
	int err;
};

struct fleet {
	struct fleet_opts o;
	struct gw_rw_config *cfg;
	struct gw_rw_endpoint *ep;
	struct node *node;
	struct sender *snd;
	_Atomic bool stop;
};

/* ---- the in-memory store of one node: 1-minute windows ---- */

static uint64_t hash_sample(const void *fam, const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)fam;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 1099511628211ull;
	}
	h ^= h >> 31;
	return h ? h : 1;
}

static int index_rebuild(struct node *nd, size_t nslot)
{
	uint32_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	free(nd->slot);
	nd->slot = slot;
	nd->nslot = nslot;
	for (size_t i = 0; i < nd->n; i++) {
		size_t k = nd->s[i].h & (nslot - 1);

		while (slot[k])
			k = (k + 1) & (nslot - 1);
		slot[k] = (uint32_t)i + 1;
	}
	return 0;
}

/* The series of (fam, labels), created when new: its index, or -errno. */
static long series_of(struct node *nd, const struct gw_family *fam,
		      const char *text, size_t len, uint64_t h)
{
	char buf[2048];
	struct series *s;
	size_t k;
	int r;

	k = h & (nd->nslot - 1);
	while (nd->slot[k]) {
		s = &nd->s[nd->slot[k] - 1];
		if (s->h == h && s->fam == fam)
			return (long)nd->slot[k] - 1;
		k = (k + 1) & (nd->nslot - 1);
	}
	if (len >= sizeof(buf))
		return -E2BIG;
	if (nd->n == nd->cap) {
		size_t cap = nd->cap ? nd->cap * 2 : 256;

		s = realloc(nd->s, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		nd->s = s;
		nd->cap = cap;
	}
	s = &nd->s[nd->n];
	memset(s, 0, sizeof(*s));
	memcpy(buf, text, len);
	buf[len] = '\0';
	r = gw_labels_parse(&s->labels, fam->name, buf);
	if (r)
		return r;
	s->h = h;
	s->fam = fam;
	gw_rollup_init(&s->r, nd->win_end);
	nd->n++;
	nd->created++;
	if (nd->n * 2 > nd->nslot) {
		r = index_rebuild(nd, nd->nslot * 2);
		if (r)
			return r;
	} else {
		nd->slot[k] = (uint32_t)nd->n;
	}
	return (long)nd->n - 1;
}

/* Adds one snapshot of the node's collector, at nd->t. */
static void ingest(void *ctx, const struct gw_snap *snap)
{
	struct node *nd = ctx;
	double c0 = gw_thread_cpu();

	for (size_t i = 0; i < snap->n && !nd->err; i++) {
		const struct gw_sample *x = &snap->v[i];
		const char *text =
			snap->labels.p ? snap->labels.p + x->labels : "";
		uint64_t h = hash_sample(x->fam, text, x->labels_len);
		long k = series_of(nd, x->fam, text, x->labels_len, h);

		if (k < 0) {
			nd->err = (int)k;
			break;
		}
		if (gw_rollup_add(&nd->s[k].r, nd->t, x->value))
			nd->err = -ENOMEM;
	}
	nd->samples += snap->n;
	nd->cpu_agg += gw_thread_cpu() - c0;
}

static bool matches(const struct gw_matcher *m, size_t nm,
		    const struct gw_labels *l)
{
	return gw_matchers_match(m, nm, l);
}

/* select(): the windows ending in [mint, maxt] (the one just completed),
 * handed over to the caller (a new empty window takes each one's place). */
static int node_select(void *ctx, const struct gw_matcher *m, size_t nm,
		       int64_t mint, int64_t maxt, enum gw_tier tier,
		       struct gw_query_limits *lim, struct gw_series_set *out)
{
	struct node *nd = ctx;
	size_t n = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (tier != GW_TIER_1M)
		return 0;
	out->s = calloc(nd->n ? nd->n : 1, sizeof(*out->s));
	if (!out->s)
		return -ENOMEM;
	for (size_t i = 0; i < nd->n; i++) {
		struct series *s = &nd->s[i];
		struct gw_series_data *d = &out->s[n];

		if (s->r.count <= 0 || s->r.t < mint || s->r.t > maxt ||
		    !matches(m, nm, &s->labels))
			continue;
		d->r = malloc(sizeof(*d->r));
		if (!d->r)
			goto nomem;
		r = gw_labels_dup(&d->labels, &s->labels);
		if (r) {
			free(d->r);
			d->r = NULL;
			goto nomem;
		}
		d->tier = GW_TIER_1M;
		d->n = 1;
		*d->r = s->r; /* moved: the sketch goes with it */
		gw_rollup_init(&s->r, s->r.t + MINUTE_MS);
		n++;
		lim->samples++;
	}
	out->n = n;
	return 0;
nomem:
	out->n = n;
	gw_series_set_release(out);
	return -ENOMEM;
}

static enum gw_tier node_pick_tier(void *ctx, int64_t mint, int64_t maxt,
				   int64_t step_ms)
{
	(void)ctx;
	(void)mint;
	(void)maxt;
	(void)step_ms;
	return GW_TIER_1M;
}

static int node_series(void *ctx, const struct gw_matcher *const *sets,
		       const size_t *nm, size_t nsets, int64_t mint,
		       int64_t maxt, struct gw_query_limits *lim,
		       struct gw_label_set_list *out)
{
	(void)ctx, (void)sets, (void)nm, (void)nsets, (void)mint, (void)maxt;
	(void)lim;
	memset(out, 0, sizeof(*out));
	return 0;
}

static int node_label_values(void *ctx, const char *name,
			     const struct gw_matcher *const *sets,
			     const size_t *nm, size_t nsets, int64_t mint,
			     int64_t maxt, struct gw_query_limits *lim,
			     struct gw_string_list *out)
{
	(void)ctx, (void)name, (void)sets, (void)nm, (void)nsets;
	(void)mint, (void)maxt, (void)lim;
	memset(out, 0, sizeof(*out));
	return 0;
}

static int64_t node_now(void *ctx)
{
	return ((struct node *)ctx)->now;
}

/* After a window was sent: what the queue did not take starts over; series
 * silent for RETIRE_AFTER windows (a process that ended) are let go. */
static int node_next_window(struct node *nd)
{
	size_t k = 0;
	bool retired = false;

	nd->win_end += MINUTE_MS;
	for (size_t i = 0; i < nd->n; i++) {
		struct series *s = &nd->s[i];

		s->idle = s->r.count > 0 || s->r.t >= nd->win_end ? 0
								  : s->idle + 1;
		if (s->idle >= RETIRE_AFTER) {
			gw_labels_release(&s->labels);
			gw_rollup_release(&s->r);
			retired = true;
			continue;
		}
		if (s->r.t != nd->win_end)
			gw_rollup_reset(&s->r, nd->win_end);
		if (k != i)
			nd->s[k] = *s;
		k++;
	}
	nd->n = k;
	return retired ? index_rebuild(nd, nd->nslot) : 0;
}

static void node_release(struct node *nd)
{
	gw_rw_queue_free(nd->q);
	gw_nvml_node_free(nd->sim);
	for (size_t i = 0; i < nd->n; i++) {
		gw_labels_release(&nd->s[i].labels);
		gw_rollup_release(&nd->s[i].r);
	}
	free(nd->s);
	free(nd->slot);
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double unit(uint64_t *x)
{
	return (double)(splitmix(x) >> 11) / 9007199254740992.0;
}

/* Faults of one node: a Poisson number per GPU over the run, of a kind,
 * time and length drawn from the seed (at most GW_SIM_MAX_FAULTS). */
static void node_faults(const struct fleet_opts *o, unsigned int index,
			struct gw_sim_opts *so)
{
	double mean =
		o->faults_per_gpu_day * (double)o->duration_ms / 86400000.0;
	uint64_t x = o->seed ^ (0xA24BAED4963EE407ull * (index + 1));

	for (unsigned int g = 0; g < o->gpus; g++) {
		/* Knuth's Poisson draw; the means are small */
		double l = exp(-mean), p = unit(&x);

		while (p > l && so->nfaults < GW_SIM_MAX_FAULTS) {
			struct gw_sim_fault *f = &so->faults[so->nfaults++];

			f->kind = (enum gw_sim_fault_kind)(splitmix(&x) % 5);
			f->gpu = g;
			f->after_s = unit(&x) * (double)o->duration_ms / 1000;
			f->duration_s = 60.0 + unit(&x) * 1140.0;
			p *= unit(&x);
		}
	}
}

static int node_init(struct fleet *f, struct node *nd, unsigned int index,
		     char *err, size_t errlen)
{
	const struct fleet_opts *o = &f->o;
	struct gw_sim_opts so;
	struct gw_rw_queue_opts qo;
	const char *ext[MAX_EXTERNAL + 1];
	char inst[128];
	size_t next = 0;
	int r;

	memset(nd, 0, sizeof(*nd));
	nd->index = index;
	memset(&so, 0, sizeof(so));
	so.gpus = o->gpus;
	so.day_s = 86400;
	so.seed = o->seed ^ (0x9E3779B97F4A7C15ull * (index + 1));
	node_faults(o, index, &so);
	r = gw_nvml_node_new(&so, &nd->sim);
	if (r) {
		snprintf(err, errlen, "node %u: simulator: %s", index,
			 strerror(-r));
		return r;
	}
	nd->phase = 1 + (int64_t)((so.seed >> 20) % 998);
	nd->win_end = o->start_ms + MINUTE_MS;
	r = index_rebuild(nd, SLOTS_MIN);
	if (r)
		return r;
	nd->qy = (struct gw_queryable){
		.ctx = nd,
		.pick_tier = node_pick_tier,
		.select = node_select,
		.series = node_series,
		.label_values = node_label_values,
	};
	snprintf(inst, sizeof(inst), "instance=%s%u", o->prefix, index);
	ext[next++] = inst;
	for (size_t i = 0; i < o->nexternal; i++)
		ext[next++] = o->external[i];
	memset(&qo, 0, sizeof(qo));
	qo.sz = sizeof(qo);
	qo.name = gw_rw_endpoint_name(f->ep);
	qo.url = gw_rw_endpoint_url(f->ep);
	qo.q = &nd->qy;
	nd->sd = &f->snd[index % o->senders];
	qo.sink = gw_rw_sink_of(nd->sd->sink);
	qo.policy = GW_RW_POLICY_ROLLUP;
	qo.external = ext;
	qo.nexternal = next;
	qo.max_samples_per_send =
		gw_rw_endpoint_queue(f->ep)->max_samples_per_send;
	qo.heartbeat_ms = o->heartbeat_ms;
	qo.precision = o->precision;
	qo.stddev_precision = o->stddev_precision;
	qo.outputs = o->outputs;
	qo.process_outputs = o->process_outputs;
	qo.state_outputs = o->state_outputs;
	qo.without = o->without;
	qo.nwithout = o->nwithout;
	qo.sum_without = o->sum_without;
	qo.nsum_without = o->nsum_without;
	qo.now = node_now;
	qo.now_ctx = nd;
	qo.guard_max = 1024 + 640 * o->gpus; /* ~450 output series a GPU */
	/* the queue starts at its present: the fleet's start */
	nd->now = o->start_ms + 10000;
	return gw_rw_queue_new(&qo, &nd->q, err, errlen);
}

/* ---- the sender threads ---- */

static int64_t wall_ms(void)
{
	return (int64_t)(gw_now_real() * 1000);
}

/* One minute of one node: read, aggregate, send.  0 or -errno. */
static int node_minute(struct sender *sd, struct node *nd, int64_t m)
{
	const struct fleet_opts *o = &sd->f->o;
	int64_t t0 = o->start_ms + m * MINUTE_MS;
	int64_t step = (int64_t)llround(o->interval * 1000);
	int64_t detail = (int64_t)llround(o->detail_interval * 1000);
	double c0, c1;
	int r;

	for (int64_t dt = 0; dt < MINUTE_MS; dt += step) {
		int64_t since = m * MINUTE_MS + dt;

		nd->t = t0 + dt + nd->phase;
		c0 = gw_thread_cpu();
		gw_nvml_node_read(nd->sim, (double)(since + nd->phase) / 1000,
				  since % detail == 0, ingest, nd);
		c1 = gw_thread_cpu();
		sd->cpu_read += c1 - c0;
		if (nd->err)
			return nd->err;
	}
	c0 = gw_thread_cpu();
	nd->now = t0 + MINUTE_MS + 10000; /* the queue's settle time */
	do
		r = gw_rw_queue_step(nd->q);
	while (r > 0 && !atomic_load(&sd->f->stop));
	if (r >= 0)
		r = node_next_window(nd);
	c1 = gw_thread_cpu();
	sd->cpu_send += c1 - c0;
	atomic_fetch_add(&sd->minutes, 1);
	return r == -EINTR ? 0 : r;
}

static void *sender_main(void *arg)
{
	struct sender *sd = arg;
	struct fleet *f = sd->f;
	int64_t minutes = f->o.duration_ms / MINUTE_MS;

	for (int64_t m = 0; m < minutes && !atomic_load(&f->stop); m++) {
		int64_t due = f->o.start_ms + (m + 1) * MINUTE_MS + 10000;

		/* In real time a minute is sent once it is over, as a node
		 * would (the queue's settle time after it). */
		while (f->o.realtime && wall_ms() < due &&
		       !atomic_load(&f->stop)) {
			struct timespec ts = { 0, 100000000 };

			nanosleep(&ts, NULL);
		}
		for (unsigned int i = sd->id;
		     i < f->o.nodes && !sd->err && !atomic_load(&f->stop);
		     i += f->o.senders)
			sd->err = node_minute(sd, &f->node[i], m);
		if (sd->err)
			break;
	}
	return NULL;
}

/* ---- the command ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch sim fleet --url URL [OPTION]...\n"
		"\n"
		"Simulates a fleet of nodes, each with its own simulated GPUs, "
		"and "
		"pushes what\n"
		"their agents would push to a Prometheus remote_write endpoint "
		"(VictoriaMetrics,\n"
		"Prometheus with --web.enable-remote-write-receiver, Mimir, "
		"Thanos), through\n"
		"the agent's own code: the NVML collector reading the "
		"simulator "
		"(the full metric\n"
		"set, job and process churn, faults), the store's 1-minute "
		"rollups, and the\n"
		"remote_write queue with the agent's default edge policy "
		"(rollups of gauges as\n"
		"NAME:1m_avg|min|max|stddev|count_samples at 3 significant "
		"digits, 2 for the\n"
		"stddev, none below the minute's standard error or the "
		"reading's step\n"
		"(0.001 of a ratio, 0.1 C, 1 W, 1 MHz, 10 MB, 10 MB/s); a "
		"0/1 gauge or a\n"
		"setting as :1m_avg only; a process's gauges merged over pid "
		"as\n"
		"NAME:1m_without_pid_max, a GPU's link states over link; "
		"counters as their\n"
		"last value each minute at 9 significant digits, a GPU's "
		"per-link NVLink\n"
		"counters summed; unchanged values suppressed with a "
		"heartbeat), its encoder\n"
		"and client.\n"
		"Each node is its own `instance`.  Then it reports what that "
		"costs.\n"
		"\n"
		"Unlike an agent, a simulated node keeps no local store: its "
		"durability is the\n"
		"in-memory window being sent (a receiver that is down is "
		"retried, "
		"but nothing\n"
		"survives the end of this command), there are no raw samples "
		"(no raw picks,\n"
		"no raw pushes around alerts or anomalies: the simulation runs "
		"no alert rules),\n"
		"and the agent's self-metrics are not sent.\n"
		"\n"
		"Time: from --start for --duration, minute by minute.  A start "
		"in "
		"the past runs\n"
		"accelerated (as fast as the CPU and the receiver allow; "
		"timestamps are those\n"
		"of the simulated time); the part of the run that reaches the "
		"present goes in\n"
		"real time, each minute sent 10 s after it ends, as agents "
		"do.\n"
		"\n"
		"Options:\n"
		"  --url URL               the remote_write endpoint "
		"(required)\n"
		"  --nodes N               simulated nodes (default 4)\n"
		"  --gpus G                GPUs per node, 1..64 (default 8)\n"
		"  --start TIME            first minute: now, -DURATION (e.g. "
		"-1d, -90m), Unix\n"
		"                          seconds; rounded down to a minute "
		"(default now)\n"
		"  --duration DURATION     simulated time, whole minutes "
		"(default "
		"10m)\n"
		"  --senders K             sender threads, each with its own "
		"connection; the\n"
		"                          nodes are shared among them "
		"(default 4)\n"
		"  --interval SECONDS      fast set, as the agent's (default "
		"1)\n"
		"  --detail-interval SECONDS  detail set (default 30)\n"
		"  --faults-per-gpu-day F  faults drawn per GPU per simulated "
		"day "
		"(thermal\n"
		"                          runaway, ECC storm, XID 79, PCIe "
		"downgrade, power\n"
		"                          cap; 1 to 20 minutes each; default "
		"0.05)\n"
		"  --seed N                the simulation's seed (default 1)\n"
		"  --instance-prefix P     instance label: P followed by the "
		"node's number\n"
		"                          (default sim-node-)\n"
		"  --external-label NAME=VALUE  added to every series "
		"(repeatable, at most 16;\n"
		"                          e.g. cluster=sim)\n"
		"  --heartbeat DURATION    resend an unchanged value after "
		"this "
		"long (default\n"
		"                          4m; 0: never suppress)\n"
		"  --precision DIGITS      significant digits kept of :1m_avg, "
		"_min, _max, _stddev\n"
		"                          (a counter keeps 9 when this is not "
		"0)\n"
		"                          (0: all; default as the agent's "
		"--remote-write-precision)\n"
		"  --stddev-precision DIGITS  the same for :1m_stddev (0: as "
		"--precision;\n"
		"                          default as the agent's "
		"--remote-write-stddev-precision)\n"
		"  --rollups LIST          rollups of a gauge: all, or some of "
		"avg,min,max,\n"
		"                          stddev,count_samples (default as "
		"the agent's\n"
		"                          --remote-write-rollups)\n"
		"  --process-rollups LIST  rollups of a process's gauges: all, "
		"or "
		"some of\n"
		"                          avg,min,max,stddev,count_samples "
		"(default as the\n"
		"                          agent's "
		"--remote-write-process-rollups)\n"
		"  --state-rollups LIST    rollups of a 0/1 gauge: all, or "
		"some of those (default\n"
		"                          as the agent's "
		"--remote-write-state-rollups)\n"
		"  --without LABELS        labels a gauge is aggregated over, "
		"or none (default\n"
		"                          as the agent's "
		"--remote-write-without)\n"
		"  --sum-without LABELS    labels a counter is summed over, or "
		"none (default as\n"
		"                          the agent's "
		"--remote-write-sum-without)\n"
		"  --drop REGEX            output series whose name matches "
		"are "
		"dropped, as a\n"
		"                          write_relabel_configs drop rule on "
		"__name__ would\n"
		"                          (counted, reason relabel): to size "
		"a policy\n"
		"  --log-level LEVEL       error, warn, info, debug (default "
		"error)\n"
		"  -h, --help              show this help\n"
		"\n"
		"Report (stdout, one `name value` a line): the fleet's size, "
		"start and simulated\ntime; "
		"samples_generated (what the collectors produced); "
		"samples_sent (acknowledged),\n"
		"samples_suppressed, samples_per_second_sent (per wall second) "
		"and\n"
		"samples_per_gpu_minute; requests; wire_bytes (after snappy), "
		"uncompressed_bytes,\n"
		"wire_bytes_per_gpu_day; edge_cpu_seconds and "
		"edge_cpu_ms_per_gpu_second: the\n"
		"CPU of aggregation (finding each sample's series, adding it "
		"to "
		"the window)\n"
		"plus the queue's (reading the windows, shaping, relabelling, "
		"encoding, sending);\n"
		"sim_cpu_seconds: the simulator and the collector, not "
		"counted; "
		"errors:\n"
		"samples_failed (refused, 4xx), samples_retried, "
		"request_failures, and\n"
		"series_created.\n"
		"\n"
		"Progress (stderr, every 30 s of wall time): the simulated "
		"minutes done, the\n"
		"samples acknowledged and their rate, and the time left at "
		"that pace.\n"
		"\n"
		"Figures per GPU are over the node-minutes simulated: SIGINT "
		"stops a run after\n"
		"the minute each sender is on and reports what it did.\n"
		"\n"
		"Exit status: 0 when every sample was acknowledged, 1 when "
		"some "
		"were refused or\n"
		"the run failed, 2 for bad usage.\n"
		"\n"
		"Examples:\n"
		"  gpuwatch sim fleet --url http://127.0.0.1:8428/api/v1/write "
		"--nodes 1250 \\\n"
		"      --start -1h --duration 1h --senders 8\n"
		"  gpuwatch sim fleet --url http://vm:8428/api/v1/write "
		"--nodes 2 "
		"--duration 30m\n");
}

static int parse_uint(const char *flag, const char *s, unsigned int min,
		      unsigned int max, unsigned int *out)
{
	double v;

	if (gw_parse_double(s, min, max, &v) || v != floor(v)) {
		fprintf(stderr,
			"gpuwatch sim fleet: %s: '%s' is not a whole number "
			"in %u..%u\n",
			flag, s, min, max);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

static int parse_start(const char *s, int64_t *out)
{
	double v;

	if (strcmp(s, "now") == 0) {
		*out = wall_ms();
		return 0;
	}
	if (s[0] == '-' &&
	    gw_parse_duration(s + 1, 0, 10 * 365 * 86400.0, &v) == 0) {
		*out = wall_ms() - (int64_t)llround(v * 1000);
		return 0;
	}
	if (gw_parse_double(s, 1e9, 1e10, &v) == 0) {
		*out = (int64_t)llround(v * 1000);
		return 0;
	}
	fprintf(stderr,
		"gpuwatch sim fleet: --start: '%s' is not now, -DURATION or "
		"Unix seconds\n",
		s);
	return -EINVAL;
}

/* The edge policy's defaults: the agent's own (its settings table), so
 * that a fleet simulated without options is the agent's default. */
static int agent_defaults(struct fleet_opts *o)
{
	struct gw_config *c = malloc(sizeof(*c));
	int r = 0;

	if (!c)
		return -ENOMEM;
	gw_config_defaults(c);
	o->heartbeat_ms = (int64_t)llround(c->rw_heartbeat * 1000);
	o->precision = c->rw_precision;
	o->stddev_precision = c->rw_stddev_precision;
	if ((strcmp(c->rw_rollups, "all") != 0 &&
	     gw_rw_outs_parse(c->rw_rollups, &o->outputs)) ||
	    (strcmp(c->rw_process_rollups, "all") != 0 &&
	     gw_rw_outs_parse(c->rw_process_rollups, &o->process_outputs)) ||
	    (strcmp(c->rw_state_rollups, "all") != 0 &&
	     gw_rw_outs_parse(c->rw_state_rollups, &o->state_outputs)) ||
	    gw_rw_without_parse(c->rw_without, o->without_buf,
				sizeof(o->without_buf), o->without,
				&o->nwithout) ||
	    gw_rw_without_parse(c->rw_sum_without, o->sum_buf,
				sizeof(o->sum_buf), o->sum_without,
				&o->nsum_without))
		r = -EINVAL;
	free(c);
	return r;
}

static int parse_args(int argc, char **argv, struct fleet_opts *o)
{
	enum {
		O_URL = 256,
		O_NODES,
		O_GPUS,
		O_START,
		O_DURATION,
		O_SENDERS,
		O_INTERVAL,
		O_DETAIL,
		O_FAULTS,
		O_SEED,
		O_PREFIX,
		O_EXTERNAL,
		O_HEARTBEAT,
		O_PRECISION,
		O_STDDEV_PRECISION,
		O_ROLLUPS,
		O_PROCESS,
		O_STATE,
		O_WITHOUT,
		O_SUM_WITHOUT,
		O_DROP,
		O_LOG,
	};
	static const struct option opts[] = {
		{ "url", required_argument, NULL, O_URL },
		{ "nodes", required_argument, NULL, O_NODES },
		{ "gpus", required_argument, NULL, O_GPUS },
		{ "start", required_argument, NULL, O_START },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "senders", required_argument, NULL, O_SENDERS },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "detail-interval", required_argument, NULL, O_DETAIL },
		{ "faults-per-gpu-day", required_argument, NULL, O_FAULTS },
		{ "seed", required_argument, NULL, O_SEED },
		{ "instance-prefix", required_argument, NULL, O_PREFIX },
		{ "external-label", required_argument, NULL, O_EXTERNAL },
		{ "heartbeat", required_argument, NULL, O_HEARTBEAT },
		{ "precision", required_argument, NULL, O_PRECISION },
		{ "stddev-precision", required_argument, NULL,
		  O_STDDEV_PRECISION },
		{ "rollups", required_argument, NULL, O_ROLLUPS },
		{ "process-rollups", required_argument, NULL, O_PROCESS },
		{ "state-rollups", required_argument, NULL, O_STATE },
		{ "without", required_argument, NULL, O_WITHOUT },
		{ "sum-without", required_argument, NULL, O_SUM_WITHOUT },
		{ "drop", required_argument, NULL, O_DROP },
		{ "log-level", required_argument, NULL, O_LOG },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *start = "now";
	enum gw_log_level lvl = GW_LOG_ERROR;
	double v;
	int c;

	o->nodes = 4;
	o->gpus = 8;
	o->senders = 4;
	o->duration_ms = 10 * MINUTE_MS;
	o->interval = 1;
	o->detail_interval = 30;
	o->faults_per_gpu_day = 0.05;
	o->seed = 1;
	o->prefix = "sim-node-";
	if (agent_defaults(o))
		return -EINVAL;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 1;
		case O_URL:
			o->url = optarg;
			break;
		case O_NODES:
			if (parse_uint("--nodes", optarg, 1, MAX_NODES,
				       &o->nodes))
				return -EINVAL;
			break;
		case O_GPUS:
			if (parse_uint("--gpus", optarg, 1, GW_SIM_MAX_GPUS,
				       &o->gpus))
				return -EINVAL;
			break;
		case O_SENDERS:
			if (parse_uint("--senders", optarg, 1, MAX_SENDERS,
				       &o->senders))
				return -EINVAL;
			break;
		case O_START:
			start = optarg;
			break;
		case O_DURATION:
			if (gw_parse_duration(optarg, 60, 400 * 86400.0, &v) ||
			    fmod(v, 60) != 0) {
				fprintf(stderr,
					"gpuwatch sim fleet: --duration: '%s' "
					"is not whole minutes (1m to 400d)\n",
					optarg);
				return -EINVAL;
			}
			o->duration_ms = (int64_t)v * 1000;
			break;
		case O_INTERVAL:
		case O_DETAIL:
			if (gw_parse_duration(optarg, 0.1, 60, &v) ||
			    fmod(60000, llround(v * 1000)) != 0) {
				fprintf(stderr,
					"gpuwatch sim fleet: %s: '%s' must "
					"divide a minute (0.1 s to 60 s)\n",
					c == O_INTERVAL ? "--interval"
							: "--detail-interval",
					optarg);
				return -EINVAL;
			}
			*(c == O_INTERVAL ? &o->interval
					  : &o->detail_interval) = v;
			break;
		case O_FAULTS:
			if (gw_parse_double(optarg, 0, 1000,
					    &o->faults_per_gpu_day)) {
				fprintf(stderr,
					"gpuwatch sim fleet: "
					"--faults-per-gpu-day: '%s' is not a "
					"number in 0..1000\n",
					optarg);
				return -EINVAL;
			}
			break;
		case O_SEED:
			if (gw_parse_double(optarg, 0, 9007199254740992.0,
					    &v) ||
			    v != floor(v)) {
				fprintf(stderr,
					"gpuwatch sim fleet: --seed: '%s' is "
					"not a whole number\n",
					optarg);
				return -EINVAL;
			}
			o->seed = (uint64_t)v;
			break;
		case O_PREFIX:
			o->prefix = optarg;
			break;
		case O_EXTERNAL:
			if (o->nexternal == MAX_EXTERNAL ||
			    !strchr(optarg, '=') || optarg[0] == '=') {
				fprintf(stderr,
					"gpuwatch sim fleet: --external-label: "
					"'%s' is not NAME=VALUE (at most %d)\n",
					optarg, MAX_EXTERNAL);
				return -EINVAL;
			}
			o->external[o->nexternal++] = optarg;
			break;
		case O_HEARTBEAT:
			if (gw_parse_duration(optarg, 0, 86400, &v)) {
				fprintf(stderr,
					"gpuwatch sim fleet: --heartbeat: '%s' "
					"is not a duration\n",
					optarg);
				return -EINVAL;
			}
			o->heartbeat_ms =
				v > 0 ? (int64_t)llround(v * 1000) : -1;
			break;
		case O_PRECISION:
			if (parse_uint("--precision", optarg, 0, 17,
				       &o->precision))
				return -EINVAL;
			break;
		case O_STDDEV_PRECISION:
			if (parse_uint("--stddev-precision", optarg, 0, 17,
				       &o->stddev_precision))
				return -EINVAL;
			break;
		case O_PROCESS:
			if (strcmp(optarg, "all") == 0) {
				o->process_outputs = 0;
			} else if (gw_rw_outs_parse(optarg,
						    &o->process_outputs)) {
				fprintf(stderr,
					"gpuwatch sim fleet: "
					"--process-rollups: "
					"'%s' is not all or a list of avg, "
					"min, max, stddev, count_samples\n",
					optarg);
				return -EINVAL;
			}
			break;
		case O_ROLLUPS:
			if (strcmp(optarg, "all") == 0) {
				o->outputs = 0;
			} else if (gw_rw_outs_parse(optarg, &o->outputs)) {
				fprintf(stderr,
					"gpuwatch sim fleet: --rollups: "
					"'%s' is not all or a list of avg, "
					"min, max, stddev, count_samples\n",
					optarg);
				return -EINVAL;
			}
			break;
		case O_STATE:
			if (strcmp(optarg, "all") == 0) {
				o->state_outputs = 0;
			} else if (gw_rw_outs_parse(optarg,
						    &o->state_outputs)) {
				fprintf(stderr,
					"gpuwatch sim fleet: --state-rollups: "
					"'%s' is not all or a list of avg, "
					"min, max, stddev, count_samples\n",
					optarg);
				return -EINVAL;
			}
			break;
		case O_WITHOUT:
			if (gw_rw_without_parse(optarg, o->without_buf,
						sizeof(o->without_buf),
						o->without, &o->nwithout)) {
				fprintf(stderr,
					"gpuwatch sim fleet: --without: '%s' "
					"is not none or a list of at most %d "
					"label names\n",
					optarg, GW_RW_QUEUE_MAX_WITHOUT);
				return -EINVAL;
			}
			break;
		case O_SUM_WITHOUT:
			if (gw_rw_without_parse(
				    optarg, o->sum_buf, sizeof(o->sum_buf),
				    o->sum_without, &o->nsum_without)) {
				fprintf(stderr,
					"gpuwatch sim fleet: --sum-without: "
					"'%s' is not none or a list of at "
					"most %d label names\n",
					optarg, GW_RW_QUEUE_MAX_WITHOUT);
				return -EINVAL;
			}
			break;
		case O_DROP:
			if (strpbrk(optarg, "'\n")) {
				fprintf(stderr, "gpuwatch sim fleet: --drop: "
						"no quote or "
						"newline in the regex\n");
				return -EINVAL;
			}
			o->drop = optarg;
			break;
		case O_LOG:
			if (gw_log_level_parse(optarg, &lvl)) {
				fprintf(stderr,
					"gpuwatch sim fleet: --log-level: '%s' "
					"is not a log level\n",
					optarg);
				return -EINVAL;
			}
			break;
		default:
			fprintf(stderr,
				"gpuwatch sim fleet: unknown or incomplete "
				"option '%s'; see --help\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpuwatch sim fleet: unexpected '%s'\n",
			argv[optind]);
		return -EINVAL;
	}
	if (!o->url) {
		fprintf(stderr, "gpuwatch sim fleet: --url is required\n");
		return -EINVAL;
	}
	if (fmod(o->detail_interval * 1000, o->interval * 1000) != 0) {
		fprintf(stderr, "gpuwatch sim fleet: --detail-interval must be "
				"a multiple of --interval\n");
		return -EINVAL;
	}
	if (parse_start(start, &o->start_ms))
		return -EINVAL;
	o->start_ms = o->start_ms / MINUTE_MS * MINUTE_MS;
	o->realtime = o->start_ms + o->duration_ms + 10000 > wall_ms();
	if (o->senders > o->nodes)
		o->senders = o->nodes;
	gw_log_set_level(lvl);
	return 0;
}

/* One progress line on stderr: minutes done of the fleet's, samples
 * acknowledged, their rate since the start, the time left at that pace. */
static void progress(const struct fleet *f, double wall_s)
{
	struct gw_rw_stats st;
	uint64_t done = 0;
	double total =
		(double)f->o.nodes * (double)(f->o.duration_ms / MINUTE_MS);
	double frac;

	for (unsigned int i = 0; i < f->o.senders; i++)
		done += atomic_load(&f->snd[i].minutes);
	gw_rw_endpoint_stats(f->ep, &st);
	frac = total > 0 ? (double)done / total : 0;
	fprintf(stderr,
		"gpuwatch sim fleet: %.1f of %.0f simulated minutes (%.1f%%), "
		"%" PRIu64 " samples acknowledged (%.0f/s)",
		(double)done / f->o.nodes, total / f->o.nodes, 100 * frac,
		st.samples_sent,
		wall_s > 0 ? (double)st.samples_sent / wall_s : 0);
	if (frac > 0 && !f->o.realtime)
		fprintf(stderr, ", about %.0f min left",
			wall_s * (1 - frac) / frac / 60);
	fputc('\n', stderr);
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void report(const struct fleet *f, double wall_s)
{
	const struct fleet_opts *o = &f->o;
	struct gw_rw_stats st;
	uint64_t in = 0, created = 0, suppressed = 0, refused = 0, fails = 0;
	double sim = 0, send = 0, agg = 0, gpus = (double)o->nodes * o->gpus;
	double sim_s = (double)o->duration_ms / 1000, gpu_s, gpu_days;
	uint64_t node_minutes = 0;

	for (unsigned int i = 0; i < o->senders; i++) {
		sim += f->snd[i].cpu_read;
		send += f->snd[i].cpu_send;
		node_minutes += atomic_load(&f->snd[i].minutes);
	}
	for (unsigned int i = 0; i < o->nodes; i++) {
		struct gw_rw_queue_stats qs;

		in += f->node[i].samples;
		created += f->node[i].created;
		agg += f->node[i].cpu_agg;
		if (!f->node[i].q)
			continue;
		gw_rw_queue_stats(f->node[i].q, &qs);
		suppressed += qs.samples_suppressed;
		refused += qs.samples_refused;
	}
	gw_rw_endpoint_stats(f->ep, &st);
	for (int i = 0; i < GW_RW_FAIL_COUNT; i++)
		fails += st.failures[i];
	sim -= agg;
	/* what was simulated: all of it unless interrupted */
	gpu_s = (double)node_minutes * o->gpus * 60;
	if (gpu_s <= 0)
		gpu_s = 1;
	gpu_days = gpu_s / 86400;
	printf("nodes %u\ngpus %.0f\nsimulated_seconds %.0f\n", o->nodes, gpus,
	       sim_s);
	printf("start_seconds %" PRId64 "\n", o->start_ms / 1000);
	printf("wall_seconds %.1f\nsenders %u\n", wall_s, o->senders);
	printf("node_minutes %" PRIu64 " of %.0f\n", node_minutes,
	       (double)o->nodes * (sim_s / 60));
	printf("samples_generated %" PRIu64 "\n", in);
	printf("series_created %" PRIu64 "\n", created);
	printf("samples_sent %" PRIu64 "\n", st.samples_sent);
	printf("samples_suppressed %" PRIu64 "\n", suppressed);
	printf("samples_per_second_sent %.0f\n",
	       wall_s > 0 ? (double)st.samples_sent / wall_s : 0);
	printf("samples_per_gpu_minute %.2f\n",
	       (double)st.samples_sent / (gpu_s / 60));
	printf("wire_bytes %" PRIu64 "\nuncompressed_bytes %" PRIu64 "\n",
	       st.bytes_sent, st.bytes_raw_sent);
	printf("wire_bytes_per_gpu_day %.0f\n",
	       (double)st.bytes_sent / gpu_days);
	printf("wire_bytes_per_sample %.3f\n",
	       st.samples_sent ? (double)st.bytes_sent / st.samples_sent : 0);
	printf("edge_cpu_seconds %.3f\n", agg + send);
	printf("edge_cpu_aggregation_seconds %.3f\n", agg);
	printf("edge_cpu_queue_seconds %.3f\n", send);
	printf("edge_cpu_ms_per_gpu_second %.6f\n",
	       (agg + send) * 1000 / gpu_s);
	printf("sim_cpu_seconds %.3f\n", sim);
	printf("samples_failed %" PRIu64 "\n", st.samples_failed + refused);
	printf("samples_dropped_relabel %" PRIu64 "\n",
	       st.samples_dropped[GW_RW_DROP_RELABEL]);
	printf("samples_retried %" PRIu64 "\n", st.samples_retried);
	printf("request_failures %" PRIu64 "\n", fails);
	for (unsigned int i = 0; i < st.ncodes; i++)
		printf("requests{code=\"%d\"} %" PRIu64 "\n", st.codes[i].code,
		       st.codes[i].n);
}

static int fleet_run(int argc, char **argv)
{
	struct fleet f;
	const char *url;
	char err[512];
	double w0, next_progress;
	int r, status = 1;
	unsigned int made = 0;
	struct sigaction sa;

	memset(&f, 0, sizeof(f));
	r = parse_args(argc, argv, &f.o);
	if (r)
		return r > 0 ? 0 : 2;
	url = f.o.url;
	if (f.o.drop) {
		char yaml[4096];
		int n = snprintf(yaml, sizeof(yaml),
				 "- url: '%s'\n"
				 "  write_relabel_configs:\n"
				 "  - source_labels: [__name__]\n"
				 "    regex: '%s'\n"
				 "    action: drop\n",
				 f.o.url, f.o.drop);

		r = n > 0 && (size_t)n < sizeof(yaml)
			    ? gw_rw_config_new(NULL, 0, yaml, (size_t)n,
					       "--drop", 1, &f.cfg, err,
					       sizeof(err))
			    : -E2BIG;
		if (r == -E2BIG)
			snprintf(err, sizeof(err), "--url or --drop too long");
	} else {
		r = gw_rw_config_new(&url, 1, NULL, 0, NULL, 0, &f.cfg, err,
				     sizeof(err));
	}
	if (r) {
		fprintf(stderr, "gpuwatch sim fleet: --url: %s\n", err);
		return 2;
	}
	f.ep = gw_rw_config_endpoint(f.cfg, 0);
	f.node = calloc(f.o.nodes, sizeof(*f.node));
	f.snd = calloc(f.o.senders, sizeof(*f.snd));
	if (!f.node || !f.snd) {
		fprintf(stderr, "gpuwatch sim fleet: out of memory\n");
		goto out;
	}
	for (unsigned int i = 0; i < f.o.senders; i++) {
		f.snd[i].f = &f;
		f.snd[i].id = i;
		r = gw_rw_sink_new(f.ep, &f.snd[i].sink);
		if (r) {
			fprintf(stderr, "gpuwatch sim fleet: out of memory\n");
			goto out;
		}
	}
	/* Each node's queue sends through the sink of the thread that
	 * drives it. */
	for (; made < f.o.nodes; made++) {
		r = node_init(&f, &f.node[made], made, err, sizeof(err));
		if (r) {
			fprintf(stderr, "gpuwatch sim fleet: node %u: %s\n",
				made, r == -ENOMEM ? "out of memory" : err);
			made++;
			goto out;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr,
		"gpuwatch sim fleet: %u nodes x %u GPUs, %.0f simulated "
		"minutes from %.0f, %s, %u senders, to %s\n",
		f.o.nodes, f.o.gpus, (double)f.o.duration_ms / MINUTE_MS,
		(double)f.o.start_ms / 1000,
		f.o.start_ms + 2 * MINUTE_MS > wall_ms() ? "real time"
		: f.o.realtime ? "accelerated to the present"
			       : "accelerated",
		f.o.senders, f.o.url);
	w0 = gw_now_mono();
	for (unsigned int i = 0; i < f.o.senders; i++)
		if (pthread_create(&f.snd[i].th, NULL, sender_main,
				   &f.snd[i])) {
			fprintf(stderr, "gpuwatch sim fleet: cannot start a "
					"thread\n");
			atomic_store(&f.stop, true);
			for (unsigned int k = i; k < f.o.senders; k++)
				f.snd[k].th = pthread_self();
			break;
		}
	next_progress = w0 + PROGRESS_S;
	for (;;) {
		bool done = true;
		struct timespec ts = { 0, 50000000 };

		if (gw_now_mono() >= next_progress) {
			progress(&f, gw_now_mono() - w0);
			next_progress += PROGRESS_S;
		}
		if (interrupted && !atomic_load(&f.stop)) {
			atomic_store(&f.stop, true);
			for (unsigned int i = 0; i < f.o.nodes; i++)
				gw_rw_queue_request_stop(f.node[i].q);
		}
		for (unsigned int i = 0; i < f.o.senders; i++)
			if (!pthread_equal(f.snd[i].th, pthread_self()) &&
			    pthread_tryjoin_np(f.snd[i].th, NULL) == EBUSY)
				done = false;
			else
				f.snd[i].th = pthread_self();
		if (done)
			break;
		nanosleep(&ts, NULL);
	}
	status = 0;
	for (unsigned int i = 0; i < f.o.senders; i++)
		if (f.snd[i].err) {
			fprintf(stderr, "gpuwatch sim fleet: sender %u: %s\n",
				i, strerror(-f.snd[i].err));
			status = 1;
		}
	report(&f, gw_now_mono() - w0);
	{
		struct gw_rw_stats st;

		gw_rw_endpoint_stats(f.ep, &st);
		if (st.samples_failed || interrupted)
			status = 1;
	}
out:
	for (unsigned int i = 0; i < made; i++)
		node_release(&f.node[i]);
	for (unsigned int i = 0; f.snd && i < f.o.senders; i++)
		gw_rw_sink_free(f.snd[i].sink);
	free(f.node);
	free(f.snd);
	gw_rw_config_free(f.cfg);
	return status;
}

static void sim_usage(FILE *out)
{
	fprintf(out, "Usage: gpuwatch sim fleet [OPTION]...\n"
		     "\n"
		     "Simulations:\n"
		     "  fleet   N simulated nodes pushing to a remote_write "
		     "endpoint through the\n"
		     "          agent's own code, with the cost it measured\n"
		     "\n"
		     "Run 'gpuwatch sim fleet --help' for its options.\n");
}

int gw_cmd_sim(int argc, char **argv)
{
	if (argc < 2) {
		sim_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		sim_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "fleet") == 0)
		return fleet_run(argc - 1, argv + 1);
	fprintf(stderr,
		"gpuwatch sim: '%s' is not a simulation; see "
		"'gpuwatch sim --help'\n",
		argv[1]);
	return 2;
}
