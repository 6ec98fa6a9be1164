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

#define MIN_SLOTS   1024u
#define EVICT_MAX_S (30u * 86400u)

struct entry {
	uint64_t key;	 /* 0: empty */
	int64_t seen_ms; /* timestamp of the last sample */
	struct gw_detect d;
};

struct gw_anomaly {
	struct gw_anomaly_opts o;
	struct gw_detect_config cfg;
	struct entry *t;
	size_t slots, max_slots, n;
	int64_t next_sweep_ms;
	struct gw_anomaly_stats st;
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
		"gpuwatch_agent_",
		"gpuwatch_store_",
		"gpuwatch_ebpf_",
		"gpuwatch_cupti_",
		"gpuwatch_statsd_",
		"gpuwatch_rules_",
		"gpuwatch_alertmanager_",
		"gpuwatch_anomaly_",
		"ALERTS",
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
	uint64_t key;
	struct entry *e;
	double score;

	if (out)
		memset(out, 0, sizeof(*out));
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
		gw_detect_init(&e->d);
		a->n++;
	}
	e->seen_ms = t_ms;
	score = gw_detect_update(&e->d, &a->cfg, t_ms, v, &ev);
	if (!isnan(score))
		a->st.scores++;
	if (ev == GW_DETECT_ONSET)
		a->st.episodes++;
	if (out) {
		out->event = ev;
		out->in_episode = e->d.active || ev == GW_DETECT_END;
		out->peak = e->d.peak;
		out->onset_ms = e->d.onset_ms;
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

	if (now_ms < a->next_sweep_ms)
		return;
	a->next_sweep_ms = now_ms + (horizon / 8 > 0 ? horizon / 8 : 1);
	/* A removal may shift a later entry into slot i: look at i again.
	 * Entries only move backwards into the hole, never behind i except
	 * ones already kept, so nothing stale is passed over. */
	for (size_t i = 0; i < a->slots;) {
		if (a->t[i].key && now_ms - a->t[i].seen_ms > horizon) {
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
#define MODELS_VERSION 1u

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
		/* The restart's silence is not a gap in the series. */
		gw_baseline_resume(&slot->d.b);
		kept++;
	}
	*loaded = kept;
out:
	fclose(f);
	return err;
}
