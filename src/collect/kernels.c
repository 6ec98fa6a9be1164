/* SPDX-License-Identifier: MIT */
/*
 * kernels.c - each process's CUDA kernels and launch handles, for the
 * launch call paths.  See kernels.h.
 */
#include "collect/kernels.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/cupti/export.h"
#include "common/hash.h"
#include "gpuwatch/cupti_ring.h"

struct kern {
	uint64_t hash;	    /* of the mangled name */
	uint64_t disp_hash; /* of the demangled name */
	double count, ns;
	char name[GW_KERNELS_NAME_MAX]; /* demangled */
};

struct handle {
	uint64_t handle, hash;
	uint32_t kind;
};

struct proc {
	uint32_t pid;
	uint64_t used;
	struct kern *k; /* grown by doubling up to GW_KERNELS_MAX */
	unsigned int nk, capk;
	struct handle *h;
	unsigned int nh, caph;
};

struct gw_kernels {
	pthread_mutex_t lock;
	struct proc *procs;
	unsigned int nprocs, max_procs;
	uint64_t clock;
	struct gw_kernels_stats st;
};

struct gw_kernels *gw_kernels_new(unsigned int max_procs)
{
	struct gw_kernels *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->max_procs = max_procs ? max_procs : 256;
	k->procs = calloc(k->max_procs, sizeof(*k->procs));
	if (!k->procs) {
		free(k);
		return NULL;
	}
	pthread_mutex_init(&k->lock, NULL);
	return k;
}

static void proc_release(struct proc *p)
{
	free(p->k);
	free(p->h);
	memset(p, 0, sizeof(*p));
}

void gw_kernels_free(struct gw_kernels *k)
{
	if (!k)
		return;
	for (unsigned int i = 0; i < k->nprocs; i++)
		proc_release(&k->procs[i]);
	free(k->procs);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

/* Under lock: pid's entry, or NULL (create: a new, empty one, evicting
 * the one updated longest ago when full). */
static struct proc *find_proc(struct gw_kernels *k, uint32_t pid, int create)
{
	struct proc *p = NULL;

	for (unsigned int i = 0; i < k->nprocs; i++)
		if (k->procs[i].pid == pid)
			return &k->procs[i];
	if (!create)
		return NULL;
	if (k->nprocs < k->max_procs) {
		p = &k->procs[k->nprocs++];
	} else {
		p = &k->procs[0];
		for (unsigned int i = 1; i < k->nprocs; i++)
			if (k->procs[i].used < p->used)
				p = &k->procs[i];
		proc_release(p);
	}
	p->pid = pid;
	return p;
}

/* Room for one more entry in an array of cap (doubling from 8 up to
 * GW_KERNELS_MAX): 0, or -ENOSPC / -ENOMEM. */
static int grow(void **v, unsigned int n, unsigned int *cap, size_t size)
{
	unsigned int c;
	void *nv;

	if (n < *cap)
		return 0;
	if (*cap >= GW_KERNELS_MAX)
		return -ENOSPC;
	c = *cap ? *cap * 2 : 8;
	if (c > GW_KERNELS_MAX)
		c = GW_KERNELS_MAX;
	nv = realloc(*v, (size_t)c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* Under lock: pid's entry (created when new), marked as just used. */
static struct proc *touch_proc(struct gw_kernels *k, uint32_t pid)
{
	struct proc *p = find_proc(k, pid, 1);

	if (p)
		p->used = ++k->clock;
	return p;
}

/* Under lock: a new, zeroed entry at the end of the array *v of *n
 * entries (room for *cap), or NULL, counted as refused, when it is full
 * or memory is short. */
static void *append(struct gw_kernels *k, void **v, unsigned int *n,
		    unsigned int *cap, size_t size)
{
	char *e;

	if (grow(v, *n, cap, size)) {
		k->st.refused++;
		return NULL;
	}
	e = (char *)*v + (size_t)(*n)++ * size;
	memset(e, 0, size);
	return e;
}

void gw_kernels_kernel(struct gw_kernels *k, uint32_t pid, uint64_t name_hash,
		       const char *mangled, double est_count, double est_ns)
{
	struct proc *p;
	struct kern *e = NULL;

	if (!k || !mangled)
		return;
	pthread_mutex_lock(&k->lock);
	p = touch_proc(k, pid);
	if (!p)
		goto out;
	for (unsigned int i = 0; i < p->nk && !e; i++)
		if (p->k[i].hash == name_hash)
			e = &p->k[i];
	if (!e) {
		e = append(k, (void **)&p->k, &p->nk, &p->capk, sizeof(*p->k));
		if (!e)
			goto out;
		e->hash = name_hash;
		/* Demangled once, as the symbolizer names host stubs. */
		gw_cupti_demangle(mangled, e->name, sizeof(e->name));
		e->disp_hash = gw_fnv1a64_str(e->name);
	}
	e->count = est_count;
	e->ns = est_ns;
out:
	pthread_mutex_unlock(&k->lock);
}

void gw_kernels_handle(struct gw_kernels *k, uint32_t pid, uint32_t kind,
		       uint64_t handle, uint64_t name_hash)
{
	struct proc *p;
	struct handle *e = NULL;

	if (!k || !handle)
		return;
	pthread_mutex_lock(&k->lock);
	p = touch_proc(k, pid);
	if (!p)
		goto out;
	for (unsigned int i = 0; i < p->nh && !e; i++)
		if (p->h[i].handle == handle && p->h[i].kind == kind)
			e = &p->h[i];
	if (!e) {
		e = append(k, (void **)&p->h, &p->nh, &p->caph, sizeof(*p->h));
		if (!e)
			goto out;
		e->handle = handle;
		e->kind = kind;
	}
	e->hash = name_hash;
out:
	pthread_mutex_unlock(&k->lock);
}

void gw_kernels_forget(struct gw_kernels *k, uint32_t pid)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	for (unsigned int i = 0; i < k->nprocs; i++)
		if (k->procs[i].pid == pid) {
			proc_release(&k->procs[i]);
			k->procs[i] = k->procs[--k->nprocs];
			memset(&k->procs[k->nprocs], 0, sizeof(k->procs[0]));
			break;
		}
	pthread_mutex_unlock(&k->lock);
}

int gw_kernels_known(struct gw_kernels *k, uint32_t pid)
{
	int known;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	known = find_proc(k, pid, 0) != NULL;
	pthread_mutex_unlock(&k->lock);
	return known;
}

int gw_kernels_lookup(struct gw_kernels *k, uint32_t pid, uint64_t arg,
		      const char *symbol, char *name, size_t len,
		      double *mean_ns)
{
	const struct kern *e = NULL;
	struct proc *p;

	*mean_ns = 0;
	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	p = find_proc(k, pid, 0);
	if (p && arg) {
		for (unsigned int i = 0; i < p->nh; i++)
			if (p->h[i].handle == arg &&
			    p->h[i].kind == GW_CRING_KFUNC_CUFUNCTION) {
				for (unsigned int j = 0; j < p->nk && !e; j++)
					if (p->k[j].hash == p->h[i].hash)
						e = &p->k[j];
				break;
			}
	}
	if (p && !e && symbol && *symbol) {
		uint64_t h = gw_fnv1a64_str(symbol);

		for (unsigned int j = 0; j < p->nk && !e; j++)
			if (p->k[j].disp_hash == h &&
			    strcmp(p->k[j].name, symbol) == 0)
				e = &p->k[j];
	}
	if (e) {
		snprintf(name, len, "%s", e->name);
		*mean_ns = e->count > 0 ? e->ns / e->count : 0;
		k->st.hits++;
	} else {
		k->st.misses++;
	}
	pthread_mutex_unlock(&k->lock);
	return e != NULL;
}

void gw_kernels_stats(struct gw_kernels *k, struct gw_kernels_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	*st = k->st;
	st->procs = k->nprocs;
	for (unsigned int i = 0; i < k->nprocs; i++) {
		st->kernels += k->procs[i].nk;
		st->handles += k->procs[i].nh;
	}
	pthread_mutex_unlock(&k->lock);
}
