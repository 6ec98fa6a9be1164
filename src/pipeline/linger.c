/* SPDX-License-Identifier: MIT */
/*
 * linger.c - exited processes' last values, kept for a grace period.  See
 * linger.h.
 */
#include "linger.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/catalog.h"

struct entry {
	uint64_t key;
	double until;	    /* monotonic seconds */
	double exited_unix; /* the marker's value */
	bool fresh;	    /* taken this pass: its samples are in dst */
	char labels[GW_LINGER_LABELS_MAX];
	struct gw_snap snap;
};

struct gw_linger {
	double grace;
	const char *source;
	unsigned int max_procs, max_samples;
	struct entry *v; /* oldest exit first */
	unsigned int n;
	size_t samples;
	uint64_t evicted, refused, expired;
};

struct gw_linger *gw_linger_new(double grace_s, unsigned int max_procs,
				unsigned int max_samples, const char *source)
{
	struct gw_linger *l;

	if (!(grace_s >= 0) || !source || !*source)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->grace = grace_s;
	l->source = source;
	l->max_procs = max_procs ? max_procs : GW_LINGER_DEFAULT_MAX_PROCS;
	l->max_samples =
		max_samples ? max_samples : GW_LINGER_DEFAULT_MAX_SAMPLES;
	l->v = calloc(l->max_procs, sizeof(*l->v));
	if (!l->v) {
		free(l);
		return NULL;
	}
	return l;
}

void gw_linger_free(struct gw_linger *l)
{
	if (!l)
		return;
	for (unsigned int i = 0; i < l->n; i++)
		gw_snap_release(&l->v[i].snap);
	free(l->v);
	free(l);
}

/* Removes entry i, keeping the order of the others. */
static void drop(struct gw_linger *l, unsigned int i)
{
	l->samples -= l->v[i].snap.n;
	gw_snap_release(&l->v[i].snap);
	memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(*l->v));
	l->n--;
}

static int find(const struct gw_linger *l, uint64_t key)
{
	for (unsigned int i = 0; i < l->n; i++)
		if (l->v[i].key == key)
			return (int)i;
	return -1;
}

int gw_linger_take(struct gw_linger *l, uint64_t key, const struct gw_snap *src,
		   const char *labels, double exited_unix, double now)
{
	struct gw_snap copy;
	struct entry *e;
	size_t len;
	int i;

	if (!l || !src || !labels)
		return -EINVAL;
	len = strlen(labels);
	if (!len || len >= GW_LINGER_LABELS_MAX)
		return -EINVAL;
	i = find(l, key);
	if (i >= 0)
		drop(l, (unsigned int)i);
	if (l->grace <= 0)
		return 0;
	gw_snap_init(&copy);
	if (gw_snap_copy(&copy, src, labels) == 0 && !copy.dropped) {
		gw_snap_release(&copy);
		return 0;
	}
	if (copy.dropped || copy.n > l->max_samples) {
		gw_snap_release(&copy);
		l->refused++;
		return -ENOSPC;
	}
	/* Room: the oldest exits leave first. */
	while (l->n > 0 &&
	       (l->n == l->max_procs || l->samples + copy.n > l->max_samples)) {
		drop(l, 0);
		l->evicted++;
	}
	e = &l->v[l->n++];
	memset(e, 0, sizeof(*e));
	e->snap = copy;
	e->key = key;
	e->until = now + l->grace;
	e->exited_unix = exited_unix;
	e->fresh = true;
	memcpy(e->labels, labels, len + 1);
	l->samples += copy.n;
	return (int)copy.n;
}

void gw_linger_forget(struct gw_linger *l, uint64_t key)
{
	int i = l ? find(l, key) : -1;

	if (i >= 0)
		drop(l, (unsigned int)i);
}

int gw_linger_has(const struct gw_linger *l, uint64_t key)
{
	return l && find(l, key) >= 0;
}

void gw_linger_emit(struct gw_linger *l, struct gw_snap *dst, double now)
{
	if (!l)
		return;
	for (unsigned int i = 0; i < l->n;) {
		if (now >= l->v[i].until) {
			drop(l, i);
			l->expired++;
			continue;
		}
		i++;
	}
	for (unsigned int i = 0; i < l->n; i++) {
		struct entry *e = &l->v[i];

		if (!e->fresh)
			gw_snap_copy(dst, &e->snap, NULL);
		e->fresh = false;
		gw_snap_add(dst, GW_FAM(PROCESS_EXITED_TIMESTAMP_SECONDS),
			    e->exited_unix, e->labels, "source", l->source,
			    NULL);
	}
}

void gw_linger_stats(const struct gw_linger *l, struct gw_linger_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!l)
		return;
	st->procs = l->n;
	st->samples = l->samples;
	st->evicted = l->evicted;
	st->refused = l->refused;
	st->expired = l->expired;
}
