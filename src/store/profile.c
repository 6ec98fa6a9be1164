/* SPDX-License-Identifier: MIT */
/*
 * profile.c - CPU profiles in memory and as pprof, folded and JSON.  See
 * profile.h.
 *
 * Names are interned in one open-addressing table (FNV-1a), stacks in
 * another keyed by their frame ids; both grow by doubling.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "store/labels.h"
#include "store/profile.h"

#define DEFAULT_MAX_STACKS 100000
#define MAX_NAMES	   (1u << 22)
#define MAX_FRAMES	   (1u << 26) /* frame ids over all stacks */

struct stack {
	uint32_t off, n; /* into frames */
	int64_t v[2];
};

struct gw_prof {
	/* names */
	char **names;
	uint32_t nnames, capnames;
	uint32_t *nhash; /* name id + 1, 0 = empty */
	uint32_t nhcap;
	/* stacks */
	uint32_t *frames; /* name ids, root first */
	size_t nframes, capframes;
	struct stack *st;
	size_t nst, capst, max_stacks;
	uint32_t *shash; /* stack index + 1 */
	size_t shcap;
	uint64_t dropped;
	bool diff;
	int64_t time_ns, duration_ns, period_ns;
	const char *vtype, *vunit; /* NULL: CPU samples */
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV0 0xcbf29ce484222325ull

struct gw_prof *gw_prof_new(size_t max_stacks)
{
	struct gw_prof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->max_stacks = max_stacks ? max_stacks : DEFAULT_MAX_STACKS;
	p->nhcap = 256;
	p->shcap = 256;
	p->nhash = calloc(p->nhcap, sizeof(*p->nhash));
	p->shash = calloc(p->shcap, sizeof(*p->shash));
	if (!p->nhash || !p->shash) {
		gw_prof_free(p);
		return NULL;
	}
	return p;
}

void gw_prof_free(struct gw_prof *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p->nhash);
	free(p->frames);
	free(p->st);
	free(p->shash);
	free(p);
}

static int name_rehash(struct gw_prof *p)
{
	uint32_t cap = p->nhcap * 2, *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nnames; i++) {
		uint64_t k = fnv(p->names[i], strlen(p->names[i]), FNV0);
		uint32_t j = (uint32_t)k & (cap - 1);

		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = i + 1;
	}
	free(p->nhash);
	p->nhash = h;
	p->nhcap = cap;
	return 0;
}

/* The id of name (cut to GW_PROF_NAME_MAX - 1 bytes), added if new. */
static int intern(struct gw_prof *p, const char *name, size_t len, uint32_t *id)
{
	uint64_t k;
	uint32_t j;
	char *s;

	/* A name ends at a NUL byte (folded text may hold one). */
	len = strnlen(name, len);
	if (len >= GW_PROF_NAME_MAX)
		len = GW_PROF_NAME_MAX - 1;
	k = fnv(name, len, FNV0);
	for (j = (uint32_t)k & (p->nhcap - 1); p->nhash[j];
	     j = (j + 1) & (p->nhcap - 1)) {
		const char *o = p->names[p->nhash[j] - 1];

		if (strncmp(o, name, len) == 0 && o[len] == '\0') {
			*id = p->nhash[j] - 1;
			return 0;
		}
	}
	if (p->nnames >= MAX_NAMES)
		return -ENOSPC;
	if (p->nnames == p->capnames) {
		uint32_t cap = p->capnames ? p->capnames * 2 : 64;
		char **v = realloc(p->names, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->names = v;
		p->capnames = cap;
	}
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, name, len);
	s[len] = '\0';
	p->names[p->nnames] = s;
	p->nhash[j] = p->nnames + 1;
	*id = p->nnames++;
	if (p->nnames * 2 > p->nhcap)
		return name_rehash(p);
	return 0;
}

static uint64_t stack_key(const uint32_t *f, size_t n)
{
	return fnv(f, n * sizeof(*f), FNV0);
}

static int stack_rehash(struct gw_prof *p)
{
	size_t cap = p->shcap * 2;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < p->nst; i++) {
		size_t j = stack_key(p->frames + p->st[i].off, p->st[i].n) &
			   (cap - 1);

		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (uint32_t)i + 1;
	}
	free(p->shash);
	p->shash = h;
	p->shcap = cap;
	return 0;
}

/* a + b and a * b, held at INT64_MIN / INT64_MAX instead of overflowing
 * (a profile read from outside may hold any value and period). */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

/* Adds value to the stack of ids f[0..n). */
static int add_ids(struct gw_prof *p, const uint32_t *f, size_t n,
		   int64_t value, int col)
{
	size_t j = stack_key(f, n) & (p->shcap - 1);
	struct stack *s;

	/* Frames exist before the first stack, even one without frames, so
	 * that p->frames + off never offsets a null pointer. */
	if (!p->frames) {
		p->frames = malloc(64 * sizeof(*p->frames));
		if (!p->frames)
			return -ENOMEM;
		p->capframes = 64;
	}
	for (; p->shash[j]; j = (j + 1) & (p->shcap - 1)) {
		s = &p->st[p->shash[j] - 1];
		if (s->n == n &&
		    memcmp(p->frames + s->off, f, n * sizeof(*f)) == 0) {
			s->v[col] = sat_add(s->v[col], value);
			return 0;
		}
	}
	if (p->nst >= p->max_stacks || p->nframes + n > MAX_FRAMES) {
		p->dropped += value > 0 ? (uint64_t)value : 0;
		return 0;
	}
	if (p->nframes + n > p->capframes) {
		size_t cap = p->capframes ? p->capframes * 2 : 1024;
		uint32_t *v;

		while (cap < p->nframes + n)
			cap *= 2;
		v = realloc(p->frames, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->frames = v;
		p->capframes = cap;
	}
	if (p->nst == p->capst) {
		size_t cap = p->capst ? p->capst * 2 : 64;
		struct stack *v = realloc(p->st, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->st = v;
		p->capst = cap;
	}
	memcpy(p->frames + p->nframes, f, n * sizeof(*f));
	s = &p->st[p->nst];
	s->off = (uint32_t)p->nframes;
	s->n = (uint32_t)n;
	s->v[0] = s->v[1] = 0;
	s->v[col] = value;
	p->nframes += n;
	p->shash[j] = (uint32_t)++p->nst;
	if (p->nst * 2 > p->shcap)
		return stack_rehash(p);
	return 0;
}

int gw_prof_add(struct gw_prof *p, const char *const *frames, size_t n,
		int64_t value, int col)
{
	uint32_t ids[GW_PROF_MAX_DEPTH];
	size_t skip = 0;
	int r;

	if (col < 0 || col > 1)
		return -EINVAL;
	if (n > GW_PROF_MAX_DEPTH)
		skip = n - GW_PROF_MAX_DEPTH;
	for (size_t i = skip; i < n; i++) {
		r = intern(p, frames[i], strlen(frames[i]), &ids[i - skip]);
		if (r)
			return r;
	}
	if (col == 1)
		p->diff = true;
	return add_ids(p, ids, n - skip, value, col);
}

void gw_prof_set_diff(struct gw_prof *p)
{
	p->diff = true;
}

void gw_prof_set_value_type(struct gw_prof *p, const char *type,
			    const char *unit)
{
	p->vtype = type;
	p->vunit = unit;
}

void gw_prof_set_time(struct gw_prof *p, int64_t time_ns, int64_t duration_ns,
		      int64_t period_ns)
{
	p->time_ns = time_ns;
	p->duration_ns = duration_ns;
	p->period_ns = period_ns;
}

int64_t gw_prof_total(const struct gw_prof *p, int col)
{
	int64_t t = 0;

	for (size_t i = 0; i < p->nst; i++)
		t = sat_add(t, p->st[i].v[col & 1]);
	return t;
}

size_t gw_prof_nstacks(const struct gw_prof *p)
{
	return p->nst;
}

uint64_t gw_prof_dropped(const struct gw_prof *p)
{
	return p->dropped;
}

/* ---- gzip ---- */

int gw_prof_gzip(const void *data, size_t len, struct gw_buf *out)
{
	z_stream z;
	unsigned char chunk[16384];
	int r, zr;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			r = -EIO;
			goto out;
		}
		r = gw_buf_add(out, chunk, sizeof(chunk) - z.avail_out);
		if (r)
			goto out;
	} while (zr != Z_STREAM_END);
	r = 0;
out:
	deflateEnd(&z);
	return r;
}

/* Inflates a gzip (or zlib) stream into out, at most GW_PROF_MAX_RAW. */
static int gunzip(const void *data, size_t len, struct gw_buf *out)
{
	z_stream z;
	unsigned char chunk[16384];
	int r, zr;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END) {
			r = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			goto out;
		}
		if (zr == Z_OK && z.avail_out == sizeof(chunk) &&
		    z.avail_in == 0) {
			r = -EINVAL; /* truncated */
			goto out;
		}
		if (out->len + sizeof(chunk) - z.avail_out > GW_PROF_MAX_RAW) {
			r = -ENOSPC;
			goto out;
		}
		r = gw_buf_add(out, chunk, sizeof(chunk) - z.avail_out);
		if (r)
			goto out;
	} while (zr != Z_STREAM_END);
	r = 0;
out:
	inflateEnd(&z);
	return r;
}

/* ---- pprof in ---- */

static const char *pstr(const Perftools__Profiles__Profile *pr, int64_t i)
{
	if (i < 0 || (size_t)i >= pr->n_string_table || !pr->string_table[i])
		return NULL;
	return pr->string_table[i];
}

static const Perftools__Profiles__Location *
find_loc(const Perftools__Profiles__Profile *pr, uint64_t id)
{
	/* pprof writers number locations 1..n in order; try that first. */
	if (id >= 1 && id <= pr->n_location && pr->location[id - 1]->id == id)
		return pr->location[id - 1];
	for (size_t i = 0; i < pr->n_location; i++)
		if (pr->location[i]->id == id)
			return pr->location[i];
	return NULL;
}

static const Perftools__Profiles__Function *
find_fn(const Perftools__Profiles__Profile *pr, uint64_t id)
{
	if (id >= 1 && id <= pr->n_function && pr->function[id - 1]->id == id)
		return pr->function[id - 1];
	for (size_t i = 0; i < pr->n_function; i++)
		if (pr->function[i]->id == id)
			return pr->function[i];
	return NULL;
}

int gw_prof_add_pprof(struct gw_prof *p, const void *data, size_t len, int col)
{
	const unsigned char *d = data;
	Perftools__Profiles__Profile *pr = NULL;
	struct gw_buf raw;
	const char *names[GW_PROF_MAX_DEPTH];
	int r = 0;

	if (col < 0 || col > 1)
		return -EINVAL;
	gw_buf_init(&raw, GW_PROF_MAX_RAW + 16384);
	if (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
		r = gunzip(data, len, &raw);
		if (r)
			goto out;
		d = (const unsigned char *)raw.p;
		len = raw.len;
	}
	pr = perftools__profiles__profile__unpack(NULL, len, d);
	if (!pr) {
		r = -EINVAL;
		goto out;
	}
	if (col == 1)
		p->diff = true;
	if (pr->time_nanos &&
	    (p->time_ns == 0 || pr->time_nanos < p->time_ns)) {
		int64_t end = p->time_ns + p->duration_ns;

		p->time_ns = pr->time_nanos;
		if (end > p->time_ns)
			p->duration_ns = end - p->time_ns;
	}
	if (pr->time_nanos + pr->duration_nanos > p->time_ns + p->duration_ns)
		p->duration_ns =
			pr->time_nanos + pr->duration_nanos - p->time_ns;
	if (pr->period > 0 && p->period_ns == 0)
		p->period_ns = pr->period;
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];
		size_t n = 0;

		if (s->n_value == 0)
			continue;
		/* location_id[0] is the leaf; a location's lines are
		 * innermost first. */
		for (size_t k = s->n_location_id; k-- > 0;) {
			const Perftools__Profiles__Location *l =
				find_loc(pr, s->location_id[k]);

			if (!l) {
				r = -EINVAL;
				goto out;
			}
			for (size_t m = l->n_line; m-- > 0;) {
				const Perftools__Profiles__Function *f =
					find_fn(pr, l->line[m]->function_id);
				const char *nm = f ? pstr(pr, f->name) : NULL;

				if (!nm) {
					r = -EINVAL;
					goto out;
				}
				if (n == GW_PROF_MAX_DEPTH) {
					/* keep the leaf end */
					memmove(names, names + 1,
						(n - 1) * sizeof(*names));
					n--;
				}
				names[n++] = nm;
			}
			if (l->n_line == 0) {
				if (n == GW_PROF_MAX_DEPTH) {
					memmove(names, names + 1,
						(n - 1) * sizeof(*names));
					n--;
				}
				names[n++] = "[unknown]";
			}
		}
		r = gw_prof_add(p, names, n, s->value[0], col);
		if (r)
			goto out;
	}
out:
	if (pr)
		perftools__profiles__profile__free_unpacked(pr, NULL);
	gw_buf_release(&raw);
	return r;
}

int gw_prof_add_folded(struct gw_prof *p, const char *text, size_t len, int col)
{
	const char *end = text + len, *line = text;
	uint32_t ids[GW_PROF_MAX_DEPTH];
	int r;

	if (col < 0 || col > 1)
		return -EINVAL;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *sp, *f;
		size_t n = 0;
		char num[32], *ep;
		long long v;

		if (le > line && le[-1] == '\r')
			le--;
		if (le == line) {
			line = nl ? nl + 1 : end;
			continue;
		}
		for (sp = le; sp > line && sp[-1] != ' '; sp--)
			;
		if (sp == line || (size_t)(le - sp) >= sizeof(num) || le == sp)
			return -EINVAL;
		memcpy(num, sp, (size_t)(le - sp));
		num[le - sp] = '\0';
		errno = 0;
		v = strtoll(num, &ep, 10);
		if (*ep || errno)
			return -EINVAL;
		le = sp - 1; /* the space */
		for (f = line; f <= le;) {
			const char *semi = memchr(f, ';', (size_t)(le - f));
			const char *fe = semi ? semi : le;

			if (n == GW_PROF_MAX_DEPTH) {
				memmove(ids, ids + 1, (n - 1) * sizeof(*ids));
				n--;
			}
			r = intern(p, f, (size_t)(fe - f), &ids[n++]);
			if (r)
				return r;
			f = fe + 1;
		}
		if (col == 1)
			p->diff = true;
		r = add_ids(p, ids, n, v, col);
		if (r)
			return r;
		line = nl ? nl + 1 : end;
	}
	return 0;
}

/* ---- pprof out ---- */

/*
 * Locations are one per (function), functions one per name: a name is
 * both, so location id = function id = name id + 1, and string index =
 * name id + FIRST_NAME.
 */
enum { S_EMPTY, S_SAMPLES, S_COUNT, S_CPU, S_NS, FIRST_NAME };

int gw_prof_pprof(const struct gw_prof *p, struct gw_buf *out)
{
	Perftools__Profiles__Profile pr = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[2] = {
		PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
		PERFTOOLS__PROFILES__VALUE_TYPE__INIT
	};
	Perftools__Profiles__ValueType period =
		PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType *vtp[2] = { &vt[0], &vt[1] };
	Perftools__Profiles__Sample *samples = NULL, **sp = NULL;
	Perftools__Profiles__Location *locs = NULL, **lp = NULL;
	Perftools__Profiles__Line *lines = NULL, **linep = NULL;
	Perftools__Profiles__Function *fns = NULL, **fp = NULL;
	uint64_t *ids = NULL;
	int64_t *vals = NULL;
	char **strs = NULL;
	size_t ns = 0, nsamples = p->nst * (p->diff ? 2 : 1);
	int64_t per = p->period_ns > 0 ? p->period_ns : 1;
	uint8_t *raw = NULL;
	size_t rawlen;
	int r = -ENOMEM;

	samples = calloc(nsamples ? nsamples : 1, sizeof(*samples));
	sp = calloc(nsamples ? nsamples : 1, sizeof(*sp));
	vals = calloc(nsamples ? nsamples * 2 : 1, sizeof(*vals));
	ids = calloc(p->nframes ? p->nframes : 1, sizeof(*ids));
	locs = calloc(p->nnames ? p->nnames : 1, sizeof(*locs));
	lp = calloc(p->nnames ? p->nnames : 1, sizeof(*lp));
	lines = calloc(p->nnames ? p->nnames : 1, sizeof(*lines));
	linep = calloc(p->nnames ? p->nnames : 1, sizeof(*linep));
	fns = calloc(p->nnames ? p->nnames : 1, sizeof(*fns));
	fp = calloc(p->nnames ? p->nnames : 1, sizeof(*fp));
	strs = calloc(FIRST_NAME + p->nnames, sizeof(*strs));
	if (!samples || !sp || !vals || !ids || !locs || !lp || !lines ||
	    !linep || !fns || !fp || !strs)
		goto out;
	strs[S_EMPTY] = (char *)"";
	strs[S_SAMPLES] = (char *)"samples";
	strs[S_COUNT] = (char *)"count";
	strs[S_CPU] = (char *)"cpu";
	strs[S_NS] = (char *)"nanoseconds";
	if (p->vtype && p->vunit) {
		/* One value type: the first two strings are its own. */
		strs[S_SAMPLES] = (char *)p->vtype;
		strs[S_COUNT] = (char *)p->vunit;
	}
	for (uint32_t i = 0; i < p->nnames; i++) {
		strs[FIRST_NAME + i] = p->names[i];
		perftools__profiles__function__init(&fns[i]);
		fns[i].id = i + 1;
		fns[i].name = FIRST_NAME + i;
		fns[i].system_name = FIRST_NAME + i;
		fp[i] = &fns[i];
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = i + 1;
		linep[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].n_line = 1;
		locs[i].line = &linep[i];
		lp[i] = &locs[i];
	}
	/* location ids of each stack, leaf first */
	for (size_t i = 0; i < p->nst; i++) {
		const struct stack *s = &p->st[i];

		for (uint32_t k = 0; k < s->n; k++)
			ids[s->off + k] = p->frames[s->off + s->n - 1 - k] + 1;
	}
	for (size_t i = 0; i < p->nst; i++) {
		for (int c = 0; c < (p->diff ? 2 : 1); c++) {
			const struct stack *s = &p->st[i];
			int64_t v = c == 0 ? s->v[0] : sat_mul(s->v[1], -1);

			if (v == 0)
				continue;
			perftools__profiles__sample__init(&samples[ns]);
			samples[ns].n_location_id = s->n;
			samples[ns].location_id = ids + s->off;
			samples[ns].n_value = p->vtype ? 1 : 2;
			samples[ns].value = vals + 2 * ns;
			vals[2 * ns] = v;
			vals[2 * ns + 1] = sat_mul(v, per);
			sp[ns] = &samples[ns];
			ns++;
		}
	}
	vt[0].type = S_SAMPLES;
	vt[0].unit = S_COUNT;
	vt[1].type = S_CPU;
	vt[1].unit = S_NS;
	period.type = p->vtype ? S_SAMPLES : S_CPU;
	period.unit = p->vtype ? S_COUNT : S_NS;
	pr.n_sample_type = p->vtype ? 1 : 2;
	pr.sample_type = vtp;
	pr.n_sample = ns;
	pr.sample = sp;
	pr.n_location = p->nnames;
	pr.location = lp;
	pr.n_function = p->nnames;
	pr.function = fp;
	pr.n_string_table = FIRST_NAME + p->nnames;
	pr.string_table = strs;
	pr.time_nanos = p->time_ns;
	pr.duration_nanos = p->duration_ns;
	pr.period_type = &period;
	pr.period = per;
	rawlen = perftools__profiles__profile__get_packed_size(&pr);
	raw = malloc(rawlen ? rawlen : 1);
	if (!raw)
		goto out;
	perftools__profiles__profile__pack(&pr, raw);
	r = gw_prof_gzip(raw, rawlen, out);
out:
	free(raw);
	free(samples);
	free(sp);
	free(vals);
	free(ids);
	free(locs);
	free(lp);
	free(lines);
	free(linep);
	free(fns);
	free(fp);
	free(strs);
	return r;
}

/* ---- text out ---- */

static int cmp_frames(const void *a, const void *b, void *ctx)
{
	const struct gw_prof *sp = ctx;
	const struct stack *x = &sp->st[*(const uint32_t *)a];
	const struct stack *y = &sp->st[*(const uint32_t *)b];

	for (uint32_t i = 0; i < x->n && i < y->n; i++) {
		int c = strcmp(sp->names[sp->frames[x->off + i]],
			       sp->names[sp->frames[y->off + i]]);

		if (c)
			return c;
	}
	return x->n < y->n ? -1 : x->n > y->n;
}

/* Stack indexes sorted by their frames (NULL on -ENOMEM); glibc's
 * qsort_r, so that query threads can sort at once. */
static uint32_t *sorted(const struct gw_prof *p)
{
	uint32_t *o = malloc((p->nst ? p->nst : 1) * sizeof(*o));

	if (!o)
		return NULL;
	for (size_t i = 0; i < p->nst; i++)
		o[i] = (uint32_t)i;
	qsort_r(o, p->nst, sizeof(*o), cmp_frames, (void *)p);
	return o;
}

/* A frame name for the folded form: ';' and newlines would split it. */
static void put_folded_name(struct gw_buf *out, const char *s)
{
	for (; *s; s++)
		gw_buf_put(out,
			   (*s == ';' || *s == '\n' || *s == '\r') ? ":" : s,
			   1);
}

void gw_prof_folded(const struct gw_prof *p, struct gw_buf *out)
{
	uint32_t *o = sorted(p);

	if (!o) {
		gw_buf_set_error(out, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < p->nst; i++) {
		const struct stack *s = &p->st[o[i]];

		if (s->v[0] == 0 && s->v[1] == 0)
			continue;
		for (uint32_t k = 0; k < s->n; k++) {
			if (k)
				gw_buf_put(out, ";", 1);
			put_folded_name(out, p->names[p->frames[s->off + k]]);
		}
		if (p->diff)
			gw_buf_putf(out, " %lld %lld\n", (long long)s->v[1],
				    (long long)s->v[0]);
		else
			gw_buf_putf(out, " %lld\n", (long long)s->v[0]);
	}
	free(o);
}

void gw_prof_json(const struct gw_prof *p, struct gw_buf *out)
{
	uint32_t *o = sorted(p);
	bool first = true;

	if (!o) {
		gw_buf_set_error(out, -ENOMEM);
		return;
	}
	gw_buf_putf(out, "{\"samples\":%lld", (long long)gw_prof_total(p, 0));
	if (p->diff)
		gw_buf_putf(out, ",\"base_samples\":%lld",
			    (long long)gw_prof_total(p, 1));
	gw_buf_puts(out, ",\"stacks\":[");
	for (size_t i = 0; i < p->nst; i++) {
		const struct stack *s = &p->st[o[i]];

		if (s->v[0] == 0 && s->v[1] == 0)
			continue;
		gw_buf_puts(out, first ? "{\"frames\":[" : ",{\"frames\":[");
		first = false;
		for (uint32_t k = 0; k < s->n; k++) {
			if (k)
				gw_buf_put(out, ",", 1);
			gw_json_str(out, p->names[p->frames[s->off + k]]);
		}
		gw_buf_putf(out, "],\"value\":%lld", (long long)s->v[0]);
		if (p->diff)
			gw_buf_putf(out, ",\"base\":%lld", (long long)s->v[1]);
		gw_buf_puts(out, "}");
	}
	gw_buf_puts(out, "]}");
	free(o);
}

/* ---- functions ---- */

static int cmp_fn(const void *a, const void *b, void *ctx)
{
	const struct gw_prof_fn *x = a, *y = b;
	int sort_col = *(const int *)ctx;

	if (x->flat[sort_col] != y->flat[sort_col])
		return x->flat[sort_col] > y->flat[sort_col] ? -1 : 1;
	if (x->cum[sort_col] != y->cum[sort_col])
		return x->cum[sort_col] > y->cum[sort_col] ? -1 : 1;
	return strcmp(x->name, y->name);
}

int gw_prof_functions(const struct gw_prof *p, int col, struct gw_prof_fn **out,
		      size_t *n)
{
	struct gw_prof_fn *f = calloc(p->nnames ? p->nnames : 1, sizeof(*f));
	uint64_t *seen = calloc(p->nnames ? p->nnames : 1, sizeof(*seen));
	size_t k = 0;

	if (!f || !seen) {
		free(f);
		free(seen);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nnames; i++)
		f[i].name = p->names[i];
	for (size_t i = 0; i < p->nst; i++) {
		const struct stack *s = &p->st[i];

		if (s->n == 0)
			continue;
		for (int c = 0; c < 2; c++)
			f[p->frames[s->off + s->n - 1]].flat[c] =
				sat_add(f[p->frames[s->off + s->n - 1]].flat[c],
					s->v[c]);
		for (uint32_t j = 0; j < s->n; j++) {
			uint32_t id = p->frames[s->off + j];

			if (seen[id] == i + 1)
				continue; /* recursion: once per stack */
			seen[id] = i + 1;
			for (int c = 0; c < 2; c++)
				f[id].cum[c] = sat_add(f[id].cum[c], s->v[c]);
		}
	}
	free(seen);
	/* drop names no stack uses any more */
	for (uint32_t i = 0; i < p->nnames; i++)
		if (f[i].cum[0] || f[i].cum[1])
			f[k++] = f[i];
	col &= 1;
	qsort_r(f, k, sizeof(*f), cmp_fn, &col);
	*out = f;
	*n = k;
	return 0;
}
