/* SPDX-License-Identifier: MIT */
/*
 * anomaly.c - per-series baselines on the ingest path.  The table is open
 * addressing with linear probing over a power-of-two array, at most half
 * full, deleting by backward shift (no tombstones, so probes stay short
 * however many series come and go).  Key 0 marks an empty slot.
 */
#include "pipeline/anomaly.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "pipeline/tscsv.h"

#define MIN_SLOTS   1024u
#define EVICT_MAX_S (30u * 86400u)
/* A series labelled with a pid belongs to one process: a pid that comes
 * back is another process, so its model goes after an hour of silence,
 * whatever opts.evict_s says (it would hold memory for nothing). */
#define PROC_EVICT_MS (3600 * 1000LL)

struct entry {
	uint64_t key;	  /* 0: empty */
	int64_t seen_ms;  /* timestamp of the last sample */
	bool per_process; /* labelled with a pid: ends with its process */
	/* Its open episode is explained by a workload change wl_lead_ms
	 * before its onset (cleared on load). */
	bool workload;
	uint32_t wl_lead_ms;
	float lo, hi; /* the range of its values that scored below the
		       * threshold (or were not judged) or came in an
		       * explained episode's window; NaN: none yet */
	struct gw_detect d;
};

/* A recent episode, for the explanations of the ones after it. */
struct recent {
	int64_t onset_ms, end_ms; /* end_ms 0 while open */
	uint64_t key;
	float peak, change; /* change: relative to expected at onset */
	float first;	    /* the score at the onset */
	int64_t settle_ms;  /* explain again at this time; 0: fixed */
	uint32_t wl_len;    /* of the workload change's text */
	char name[128];
	char gpu[40], pid[40]; /* 'gpu="1"', 'pid="42"'; "": no such label */
	char explain[480];     /* fixed once settled */
};

/* The workload of one GPU: its count of compute processes and when the
 * count last changed (or was first seen). */
struct workload {
	char scope[40]; /* gpu="N"; "" unused */
	double procs;
	int64_t seen_ms, change_ms;
	bool changed; /* change_ms is set */
};

/* A process seen on a GPU, by a sample of a GW_ANOMALY_PLACEMENT_PREFIX
 * series. */
struct placement {
	char gpu[40], pid[40]; /* "" unused */
	int64_t seen_ms;
};

#define WORKLOADS	  64
#define PLACEMENTS	  256
#define RECENT		  64
#define EXPLAIN_WINDOW_MS (10 * 60 * 1000)
#define EXPLAIN_MAX	  5
/* An episode's explanation waits this long for co-occurring onsets of
 * other layers read a moment later (anomaly.h). */
#define EXPLAIN_SETTLE_MS 2000

struct gw_anomaly {
	struct gw_anomaly_opts o;
	struct gw_detect_config cfg;
	struct entry *t;
	size_t slots, max_slots, n;
	int64_t next_sweep_ms;
	struct gw_anomaly_stats st;
	struct recent recent[RECENT];
	unsigned int recent_next;
	struct workload wl[WORKLOADS];
	struct placement pl[PLACEMENTS];
};

void gw_anomaly_opts_default(struct gw_anomaly_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_series = 100000;
	o->evict_s = 7 * 86400;
	gw_detect_opts_default(&o->detect);
}

int gw_anomaly_new(struct gw_anomaly **out, const struct gw_anomaly_opts *o)
{
	struct gw_anomaly *a;
	int err;

	*out = NULL;
	if (o->max_series < 1 || o->max_series > 10000000 || o->evict_s < 1 ||
	    o->evict_s > EVICT_MAX_S)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->o = *o;
	err = gw_detect_config_init(&a->cfg, &o->detect);
	if (err)
		goto err_free;
	a->max_slots = MIN_SLOTS;
	while (a->max_slots < 2 * (size_t)o->max_series)
		a->max_slots *= 2;
	a->slots = MIN_SLOTS;
	a->t = calloc(a->slots, sizeof(*a->t));
	if (!a->t) {
		err = -ENOMEM;
		goto err_free;
	}
	*out = a;
	return 0;
err_free:
	free(a);
	return err;
}

void gw_anomaly_free(struct gw_anomaly *a)
{
	if (!a)
		return;
	free(a->t);
	free(a);
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

bool gw_anomaly_eligible(const char *name, enum gw_metric_type type,
			 enum gw_sample_kind kind)
{
	static const char *const own[] = {
		"gpuwatch_agent_",   "gpuwatch_store_",
		"gpuwatch_ebpf_",    "gpuwatch_cupti_",
		"gpuwatch_statsd_",  "gpuwatch_rules_",
		"gpuwatch_alerts",   "gpuwatch_alertmanager_",
		"gpuwatch_anomaly_", "ALERTS",
	};
	static const char ts[] = "_timestamp_seconds";
	size_t len;

	if (!(type == GW_GAUGE && kind == GW_SAMPLE_PLAIN) &&
	    !(type == GW_SUMMARY && kind == GW_SAMPLE_QUANTILE))
		return false;
	if (!name || !*name || strchr(name, ':'))
		return false;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (has_prefix(name, own[i]))
			return false;
	len = strlen(name);
	return !(len >= sizeof(ts) - 1 &&
		 strcmp(name + len - (sizeof(ts) - 1), ts) == 0);
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

/* One word into the state: xor, multiply (spreads bits up), xorshift
 * (spreads them down); a bijection of the state for a given word, so keys
 * that differ in one word always differ. */
static uint64_t step(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	return h ^ h >> 29;
}

/* Word at a time, the length folded into the last word. */
static uint64_t hash_bytes(uint64_t h, const char *s, size_t len)
{
	uint64_t w;

	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&w, s, 8);
		h = step(h, w);
	}
	w = 0;
	memcpy(&w, s, len);
	return step(h, w ^ (uint64_t)len << 56);
}

static uint64_t key_of(const char *name, const char *labels)
{
	size_t ln = strlen(name), ll = labels ? strlen(labels) : 0;
	uint64_t h = hash_bytes(ln * 0x100000001b3ull, name, ln);

	h = mix(hash_bytes(h, labels ? labels : "", ll));
	return h ? h : 1;
}

/* The slot holding key, or the empty slot where it would go. */
static struct entry *probe(struct entry *t, size_t slots, uint64_t key)
{
	size_t mask = slots - 1;

	for (size_t i = key & mask;; i = (i + 1) & mask)
		if (t[i].key == key || t[i].key == 0)
			return &t[i];
}

static int grow(struct gw_anomaly *a)
{
	size_t ns = a->slots * 2;
	struct entry *nt = calloc(ns, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < a->slots; i++)
		if (a->t[i].key)
			*probe(nt, ns, a->t[i].key) = a->t[i];
	free(a->t);
	a->t = nt;
	a->slots = ns;
	return 0;
}

/* The label key="V" of labels (key is 'gpu="' or 'pid="') into out;
 * "" when it has none (or a value too long for out). */
static void label_of(const char *labels, const char *key, char *out, size_t n)
{
	out[0] = '\0';
	for (const char *p = labels ? strstr(labels, key) : NULL; p;
	     p = strstr(p + 1, key)) {
		const char *end;

		if (p != labels && p[-1] != ',')
			continue;
		end = strchr(p + strlen(key), '"');
		if (end && (size_t)(end - p + 1) < n) {
			memcpy(out, p, (size_t)(end - p + 1));
			out[end - p + 1] = '\0';
		}
		return;
	}
}

/* name{labels} less the labels every series of a GPU or process has
 * (gpu, uuid, pid, comm and the attribution labels), so that the clocks
 * or the kernels of one GPU are told apart: gpuwatch_gpu_clock_hertz{
 * clock="sm"}. */
static void name_of(const char *name, const char *labels, char *out, size_t n)
{
	static const char *const common[] = { "gpu",	      "uuid", "pid",
					      "comm",	      "job",  "pod_uid",
					      "container_id", NULL };
	size_t len = (size_t)snprintf(out, n, "%s", name);
	bool open = false;
	const char *p = labels ? labels : "";

	while (*p && len + 2 < n) {
		const char *eq = strchr(p, '='), *v, *end;
		bool skip = false;

		if (!eq || eq[1] != '"')
			break;
		for (v = eq + 2, end = v; *end && *end != '"'; end++)
			if (*end == '\\' && end[1])
				end++;
		if (!*end)
			break;
		for (size_t k = 0; common[k]; k++)
			if ((size_t)(eq - p) == strlen(common[k]) &&
			    strncmp(p, common[k], (size_t)(eq - p)) == 0)
				skip = true;
		if (!skip) {
			int k = snprintf(out + len, n - len, "%s%.*s",
					 open ? "," : "{", (int)(end + 1 - p),
					 p);

			if (k < 0 || (size_t)k >= n - len)
				break;
			len += (size_t)k;
			open = true;
		}
		p = end + 1;
		if (*p == ',')
			p++;
	}
	if (open && len + 1 < n) {
		out[len++] = '}';
		out[len] = '\0';
	} else if (open) {
		snprintf(out, n, "%s", name);
	}
}

static void fmt_change(char *out, size_t n, const struct recent *r)
{
	if (isfinite(r->change) && fabsf(r->change) < 100)
		snprintf(out, n, "%s %+.0f%%", r->name, 100 * r->change);
	else
		snprintf(out, n, "%s", r->name);
}

/* The layer of a metric, for onsets at the same time: a limit set on
 * the GPU 0, the rest of the hardware 1, CUDA 2, the application 3. */
static int layer_of(const char *name)
{
	if (strncmp(name, "gpuwatch_gpu_power_limit", 24) == 0)
		return 0;
	if (strncmp(name, "gpuwatch_gpu_", 13) == 0)
		return 1;
	if (strncmp(name, "gpuwatch_cuda_", 14) == 0)
		return 2;
	return 3;
}

/* The most recent onset first; at the same onset the higher layer first,
 * so that the lower (the likelier cause) comes last. */
static int cmp_onset_desc(const void *x, const void *y)
{
	const struct recent *a = *(const struct recent *const *)x;
	const struct recent *b = *(const struct recent *const *)y;

	if (a->onset_ms != b->onset_ms)
		return a->onset_ms < b->onset_ms ? 1 : -1;
	return layer_of(b->name) - layer_of(a->name);
}

/* pid ran on gpu at or after since_ms (a placement sample said so). */
static bool placed(const struct gw_anomaly *a, const char *pid, const char *gpu,
		   int64_t since_ms)
{
	for (size_t i = 0; i < PLACEMENTS; i++)
		if (a->pl[i].seen_ms >= since_ms &&
		    strcmp(a->pl[i].pid, pid) == 0 &&
		    strcmp(a->pl[i].gpu, gpu) == 0)
			return true;
	return false;
}

/* o's episode may explain r's: both of one process (the same pid, on
 * the same GPU where both say), else of one GPU and not of two
 * processes, else one of a process (CUDA's series: a pid, no gpu) and
 * one of a GPU that process ran on in the window before r's onset. */
static bool related(const struct gw_anomaly *a, const struct recent *r,
		    const struct recent *o)
{
	const struct recent *p = r->pid[0] ? r : o, *g = r->pid[0] ? o : r;

	if (r->pid[0] && o->pid[0])
		return strcmp(r->pid, o->pid) == 0 &&
		       (!r->gpu[0] || !o->gpu[0] ||
			strcmp(r->gpu, o->gpu) == 0);
	if (r->gpu[0] && o->gpu[0])
		return strcmp(r->gpu, o->gpu) == 0;
	return p->pid[0] && g->gpu[0] && !g->pid[0] &&
	       placed(a, p->pid, g->gpu, r->onset_ms - EXPLAIN_WINDOW_MS);
}

/* Writes r's explanation after its workload text: the episodes of the
 * same GPU (or process) open or ended within EXPLAIN_WINDOW_MS that began
 * at or before upto_ms, the most recent first, the earliest (the likely
 * cause) last with its onset: "b -30% <- a -40% since 2026-12-03
 * 12:03:10".  One per metric name (the earliest onset of, say, the sm,
 * graphics and video clocks; at the same onset the larger change), at
 * most EXPLAIN_MAX, the highest peaks. */
static void explain(struct gw_anomaly *a, struct recent *r, int64_t upto_ms)
{
	const struct recent *pick[RECENT];
	size_t np = 0, len = r->wl_len;

	r->explain[len] = '\0';
	for (size_t i = 0; i < RECENT; i++) {
		const struct recent *o = &a->recent[i];

		if (o == r || !o->key || o->key == r->key ||
		    o->onset_ms > upto_ms || !related(a, r, o) ||
		    (o->end_ms &&
		     r->onset_ms - o->end_ms > EXPLAIN_WINDOW_MS) ||
		    r->onset_ms - o->onset_ms > 6 * EXPLAIN_WINDOW_MS)
			continue;
		pick[np++] = o;
	}
	/* One per metric name: its earliest onset (at the same onset the
	 * larger change, then the higher peak: the sm clock's -29% over the
	 * video clock's -22%). */
	for (size_t i = 0; i < np; i++) {
		size_t fl = strcspn(pick[i]->name, "{");

		for (size_t j = i + 1; j < np;) {
			const struct recent *x = pick[i], *y = pick[j];

			if (strcspn(y->name, "{") != fl ||
			    strncmp(x->name, y->name, fl) != 0) {
				j++;
				continue;
			}
			if (y->onset_ms < x->onset_ms ||
			    (y->onset_ms == x->onset_ms &&
			     (fabsf(y->change) > fabsf(x->change) ||
			      (fabsf(y->change) == fabsf(x->change) &&
			       y->peak > x->peak))))
				pick[i] = y;
			pick[j] = pick[--np];
		}
	}
	/* Keep the highest peaks, then order by onset. */
	while (np > EXPLAIN_MAX) {
		size_t lo = 0;

		for (size_t i = 1; i < np; i++)
			if (pick[i]->peak < pick[lo]->peak)
				lo = i;
		pick[lo] = pick[--np];
	}
	qsort(pick, np, sizeof(pick[0]), cmp_onset_desc);
	for (size_t i = 0; i < np; i++) {
		char one[192], when[40];
		int k;
		const char *sep = i ? " <- " : len ? "; " : "";

		fmt_change(one, sizeof(one), pick[i]);
		if (i + 1 == np) {
			gw_tscsv_fmt_time(pick[i]->onset_ms, when,
					  sizeof(when));
			k = snprintf(r->explain + len, sizeof(r->explain) - len,
				     "%s%s since %s", sep, one, when);
		} else {
			k = snprintf(r->explain + len, sizeof(r->explain) - len,
				     "%s%s", sep, one);
		}
		if (k < 0 || (size_t)k >= sizeof(r->explain) - len)
			break;
		len += (size_t)k;
	}
}

/* Records an onset in the ring and explains it (above) with what began
 * until then; settle_ms: when to explain it again (0: never). */
static void note_onset(struct gw_anomaly *a, uint64_t key, const char *name,
		       const char *labels, int64_t t_ms, double v,
		       double expected, float score, const struct workload *w,
		       int64_t settle_ms)
{
	struct recent *r = &a->recent[a->recent_next++ % RECENT];

	memset(r, 0, sizeof(*r));
	r->key = key;
	r->onset_ms = t_ms;
	r->peak = r->first = score;
	r->change = expected != 0 && isfinite(expected)
			    ? (float)((v - expected) / fabs(expected))
			    : NAN;
	name_of(name, labels, r->name, sizeof(r->name));
	label_of(labels, "gpu=\"", r->gpu, sizeof(r->gpu));
	label_of(labels, "pid=\"", r->pid, sizeof(r->pid));
	if (!r->gpu[0] && !r->pid[0])
		return;
	if (w) {
		char when[40];
		int k;

		gw_tscsv_fmt_time(w->change_ms, when, sizeof(when));
		k = snprintf(r->explain, sizeof(r->explain),
			     "workload change (%.0f compute processes) at %s",
			     w->procs, when);
		if (k > 0 && (size_t)k < sizeof(r->explain))
			r->wl_len = (uint32_t)k;
	}
	explain(a, r, t_ms);
	r->settle_ms = settle_ms;
}

/* The workload of the GPU scope (gpu="N"), or NULL when none is known. */
static struct workload *workload_of(struct gw_anomaly *a, const char *scope)
{
	if (!scope[0])
		return NULL;
	for (size_t i = 0; i < WORKLOADS; i++)
		if (strcmp(a->wl[i].scope, scope) == 0)
			return &a->wl[i];
	return NULL;
}

/* Notes that the process of labels' pid ran on the GPU of its gpu at
 * t_ms.  A new pair takes a free slot, else the one seen least recently. */
static void place(struct gw_anomaly *a, const char *labels, int64_t t_ms)
{
	char gpu[40], pid[40];
	struct placement *p = NULL, *old = &a->pl[0];

	label_of(labels, "gpu=\"", gpu, sizeof(gpu));
	label_of(labels, "pid=\"", pid, sizeof(pid));
	if (!gpu[0] || !pid[0])
		return;
	for (size_t i = 0; i < PLACEMENTS && !p; i++) {
		if (strcmp(a->pl[i].pid, pid) == 0 &&
		    strcmp(a->pl[i].gpu, gpu) == 0)
			p = &a->pl[i];
		else if (old->pid[0] &&
			 (!a->pl[i].pid[0] || a->pl[i].seen_ms < old->seen_ms))
			old = &a->pl[i];
	}
	if (!p) {
		p = old;
		memcpy(p->gpu, gpu, sizeof(gpu));
		memcpy(p->pid, pid, sizeof(pid));
		p->seen_ms = t_ms;
	} else if (t_ms > p->seen_ms) {
		p->seen_ms = t_ms;
	}
}

void gw_anomaly_workload(struct gw_anomaly *a, const char *name,
			 const char *labels, int64_t t_ms, double v)
{
	char scope[40];
	struct workload *w;

	if (a && name &&
	    strncmp(name, GW_ANOMALY_PLACEMENT_PREFIX,
		    sizeof(GW_ANOMALY_PLACEMENT_PREFIX) - 1) == 0) {
		place(a, labels, t_ms);
		return;
	}
	if (!a || !name || strcmp(name, GW_ANOMALY_WORKLOAD_NAME) != 0 ||
	    !isfinite(v))
		return;
	label_of(labels, "gpu=\"", scope, sizeof(scope));
	if (!scope[0])
		return;
	w = workload_of(a, scope);
	if (!w) {
		/* A new GPU takes a free slot, else the one seen least
		 * recently.  Its first count is no change: what runs on it
		 * may have run for days (a fault in the first minutes of
		 * the agent must not pass for a job's start). */
		w = &a->wl[0];
		for (size_t i = 1; i < WORKLOADS && w->scope[0]; i++)
			if (!a->wl[i].scope[0] || a->wl[i].seen_ms < w->seen_ms)
				w = &a->wl[i];
		snprintf(w->scope, sizeof(w->scope), "%s", scope);
		w->procs = v;
		w->changed = false;
	} else if (v != w->procs) {
		w->procs = v;
		w->change_ms = t_ms;
		w->changed = true;
		a->st.workload_changes++;
	}
	w->seen_ms = t_ms;
}

/* The workload change that explains a sample of this series at t_ms: the
 * last change on its GPU at most GW_ANOMALY_WORKLOAD_MS before it, or
 * NULL. */
static const struct workload *explaining(struct gw_anomaly *a,
					 const char *labels, int64_t t_ms)
{
	char scope[40];
	const struct workload *w;

	label_of(labels, "gpu=\"", scope, sizeof(scope));
	w = workload_of(a, scope);
	if (!w || !w->changed || w->change_ms > t_ms ||
	    t_ms - w->change_ms > GW_ANOMALY_WORKLOAD_MS)
		return NULL;
	return w;
}

/* v is within the range the series took before, widened by a quarter of
 * its width on each side (an idle GPU a little cooler than ever before is
 * still idle; a GPU heating 0.5 C/s past its hottest is not). */
static bool in_range(const struct entry *e, double v)
{
	double m = ((double)e->hi - (double)e->lo) / 4;

	return v >= (double)e->lo - m && v <= (double)e->hi + m;
}

/* The open episode of key in the ring, or NULL. */
static struct recent *open_of(struct gw_anomaly *a, uint64_t key)
{
	for (size_t i = 0; i < RECENT; i++)
		if (a->recent[i].key == key && !a->recent[i].end_ms)
			return &a->recent[i];
	return NULL;
}

double gw_anomaly_feed(struct gw_anomaly *a, const char *name,
		       const char *labels, enum gw_metric_type type,
		       enum gw_sample_kind kind, int64_t t_ms, double v)
{
	return gw_anomaly_judge(a, name, labels, type, kind, t_ms, v, NULL);
}

double gw_anomaly_judge(struct gw_anomaly *a, const char *name,
			const char *labels, enum gw_metric_type type,
			enum gw_sample_kind kind, int64_t t_ms, double v,
			struct gw_anomaly_verdict *out)
{
	enum gw_detect_event ev;
	double expected;
	uint64_t key;
	struct entry *e;
	double score;

	if (out) {
		out->event = GW_DETECT_NONE;
		out->in_episode = false;
		out->settling = false;
		out->settled = false;
		out->explanation = "";
	}
	if (!gw_anomaly_eligible(name, type, kind))
		return NAN;
	key = key_of(name, labels);
	e = probe(a->t, a->slots, key);
	if (!e->key) {
		if (a->n >= a->o.max_series) {
			a->st.refused_cap++;
			return NAN;
		}
		if (a->n + 1 > a->slots / 2) {
			if (a->slots >= a->max_slots || grow(a)) {
				a->st.refused_memory++;
				return NAN;
			}
			e = probe(a->t, a->slots, key);
		}
		e->key = key;
		e->per_process = labels && (strncmp(labels, "pid=\"", 5) == 0 ||
					    strstr(labels, ",pid=\""));
		gw_detect_init(&e->d);
		e->lo = e->hi = NAN;
		a->n++;
	}
	e->seen_ms = t_ms;
	expected = gw_baseline_expected(&e->d.b, &a->cfg.b, &e->d.season, t_ms);
	score = gw_detect_update(&e->d, &a->cfg, t_ms, v, &ev);
	if (!isnan(score))
		a->st.scores++;
	if (ev == GW_DETECT_ONSET) {
		const struct workload *w = explaining(a, labels, t_ms);

		a->st.episodes++;
		e->workload = w != NULL;
		e->wl_lead_ms = w ? (uint32_t)(t_ms - w->change_ms) : 0;
		a->st.workload_episodes += e->workload;
		/* A series read at least every EXPLAIN_SETTLE_MS waits
		 * that long for the onsets of other layers read just
		 * after (a slower one would wait a whole interval). */
		note_onset(a, key, name, labels, t_ms, v, expected,
			   (float)score, w,
			   e->d.b.dt < EXPLAIN_SETTLE_MS
				   ? t_ms + EXPLAIN_SETTLE_MS
				   : 0);
	} else if (e->d.active && e->workload && score >= a->cfg.threshold &&
		   t_ms - e->d.onset_ms + e->wl_lead_ms >
			   GW_ANOMALY_WORKLOAD_MS &&
		   (!explaining(a, labels, t_ms) || !in_range(e, v))) {
		/* Still far out past the transient of the change that
		 * explained it, with no later change on the GPU in the
		 * window before, or at a level outside what the series
		 * took at samples not anomalous or in the windows of
		 * explained episodes (jobs move a GPU between
		 * levels it has seen; a failing fan takes it where no job
		 * took it): no longer the workload's doing, for the rest
		 * of the episode. */
		e->workload = false;
		a->st.workload_outlasted++;
	}
	/* The range: of the values not judged anomalous, and those of an
	 * explained episode inside its window (the levels jobs take the GPU
	 * to); not a fault's past the window. */
	if (isfinite(v) && (!(score >= a->cfg.threshold) ||
			    (e->d.active && e->workload &&
			     t_ms - e->d.onset_ms + e->wl_lead_ms <=
				     GW_ANOMALY_WORKLOAD_MS))) {
		if (!((float)v >= e->lo))
			e->lo = (float)v;
		if (!((float)v <= e->hi))
			e->hi = (float)v;
	}
	if (out) {
		out->event = ev;
		out->in_episode = e->d.active || ev == GW_DETECT_END;
		out->peak = e->d.peak;
		out->onset_ms = e->d.onset_ms;
		out->workload = e->workload;
	}
	if (e->d.active || ev == GW_DETECT_END) {
		struct recent *r = open_of(a, key);

		if (r) {
			bool now = r->settle_ms && (t_ms >= r->settle_ms ||
						    ev == GW_DETECT_END);

			r->peak = e->d.peak;
			if (now) {
				explain(a, r, t_ms);
				r->settle_ms = 0;
			}
			if (out) {
				out->explanation = r->explain;
				out->settling = r->settle_ms != 0;
				out->settled = now;
				out->first = r->first;
			}
			if (ev == GW_DETECT_END)
				r->end_ms = t_ms;
		}
	}
	return score;
}

/* Empties slot i and moves later members of its cluster back so that
 * every key stays reachable from its home slot. */
static void remove_at(struct gw_anomaly *a, size_t i)
{
	size_t mask = a->slots - 1, j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!a->t[j].key)
			break;
		home = a->t[j].key & mask;
		/* t[j] may fill the hole at i unless its home lies cyclically
		 * in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		a->t[i] = a->t[j];
		i = j;
	}
	a->t[i].key = 0;
	a->n--;
}

void gw_anomaly_evict(struct gw_anomaly *a, int64_t now_ms)
{
	int64_t horizon = (int64_t)a->o.evict_s * 1000;

	int64_t every = horizon < PROC_EVICT_MS ? horizon : PROC_EVICT_MS;

	if (now_ms < a->next_sweep_ms)
		return;
	a->next_sweep_ms = now_ms + (every / 8 > 0 ? every / 8 : 1);
	/* A removal may shift a later entry into slot i: look at i again.
	 * Entries only move backwards into the hole, never behind i except
	 * ones already kept, so nothing stale is passed over. */
	for (size_t i = 0; i < a->slots;) {
		if (a->t[i].key &&
		    now_ms - a->t[i].seen_ms >
			    (a->t[i].per_process && PROC_EVICT_MS < horizon
				     ? PROC_EVICT_MS
				     : horizon)) {
			remove_at(a, i);
			a->st.evicted++;
			continue;
		}
		i++;
	}
}

int gw_anomaly_score_name(const char *name, char *out, size_t len)
{
	int n = snprintf(out, len, "%s" GW_ANOMALY_SUFFIX, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void gw_anomaly_stats(const struct gw_anomaly *a, struct gw_anomaly_stats *st)
{
	*st = a->st;
	st->series = a->n;
}

int gw_anomaly_episode_name(const char *name, char *out, size_t len)
{
	int n = snprintf(out, len, "%s" GW_ANOMALY_EPISODE_SUFFIX, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * The models file: a header (magic, format version, the size of one
 * record, the record count), the records (key, last-seen time, the
 * detector's state as plain data), and the CRC-32C of all that.  A file
 * of another version or record size (another build's layout), a short
 * file or a bad CRC is refused as a whole: the models learn again.
 */
#define MODELS_MAGIC   0x54444d47u /* "GMDT" */
#define MODELS_VERSION 4u

struct models_head {
	uint32_t magic, version, record, pad;
	uint64_t count;
};

int gw_anomaly_save(const struct gw_anomaly *a, const char *path)
{
	struct models_head h = { MODELS_MAGIC, MODELS_VERSION,
				 (uint32_t)sizeof(struct entry), 0, a->n };
	char tmp[4096];
	uint32_t crc;
	FILE *f;
	int err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "wb");
	if (!f)
		return -errno;
	crc = gw_crc32c(0, &h, sizeof(h));
	if (fwrite(&h, sizeof(h), 1, f) != 1)
		err = -EIO;
	for (size_t i = 0; !err && i < a->slots; i++) {
		if (!a->t[i].key)
			continue;
		crc = gw_crc32c(crc, &a->t[i], sizeof(a->t[i]));
		if (fwrite(&a->t[i], sizeof(a->t[i]), 1, f) != 1)
			err = -EIO;
	}
	if (!err && fwrite(&crc, sizeof(crc), 1, f) != 1)
		err = -EIO;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		err = err ? err : -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int gw_anomaly_load(struct gw_anomaly *a, const char *path, size_t *loaded)
{
	struct models_head h;
	struct entry e;
	uint32_t crc, want;
	size_t kept = 0;
	FILE *f = fopen(path, "rb");
	int err = 0;

	*loaded = 0;
	if (!f)
		return -errno;
	if (fread(&h, sizeof(h), 1, f) != 1 || h.magic != MODELS_MAGIC ||
	    h.version != MODELS_VERSION || h.record != sizeof(struct entry) ||
	    h.count > 2 * (uint64_t)a->o.max_series) {
		err = -EINVAL;
		goto out;
	}
	/* Check the whole file before taking anything from it. */
	crc = gw_crc32c(0, &h, sizeof(h));
	for (uint64_t i = 0; i < h.count; i++) {
		if (fread(&e, sizeof(e), 1, f) != 1) {
			err = -EINVAL;
			goto out;
		}
		crc = gw_crc32c(crc, &e, sizeof(e));
	}
	if (fread(&want, sizeof(want), 1, f) != 1 || want != crc ||
	    fgetc(f) != EOF) {
		err = -EINVAL;
		goto out;
	}
	if (fseek(f, (long)sizeof(h), SEEK_SET) != 0) {
		err = -errno;
		goto out;
	}
	for (uint64_t i = 0; i < h.count && a->n < a->o.max_series; i++) {
		struct entry *slot;

		if (fread(&e, sizeof(e), 1, f) != 1 || !e.key) {
			err = -EINVAL;
			goto out;
		}
		slot = probe(a->t, a->slots, e.key);
		if (!slot->key) {
			if (a->n + 1 > a->slots / 2) {
				if (a->slots >= a->max_slots || grow(a))
					break;
				slot = probe(a->t, a->slots, e.key);
			}
			a->n++;
		}
		*slot = e;
		slot->workload = false;
		slot->wl_lead_ms = 0;
		/* The restart's silence is not a gap in the series. */
		gw_baseline_resume(&slot->d.b);
		kept++;
	}
	*loaded = kept;
out:
	fclose(f);
	return err;
}
