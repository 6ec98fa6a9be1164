// SPDX-License-Identifier: MIT
/*
 * fuzz_sketch.c - the quantile sketch and the rollup chunk on arbitrary
 * bytes, three ways at once:
 *
 * 1. as an encoded sketch: gw_sketch_decode either refuses it (-EBADMSG)
 *    or gives a sketch whose encoding is exactly the bytes it consumed,
 *    and which decodes again to the same quantiles;
 * 2. as a rollup chunk, as given and with a valid checksum appended (so
 *    the parser behind the checksum is reached): refused, or re-encoded
 *    to the very same bytes (version 3: to version 4 with every field
 *    the same);
 * 3. as little-endian doubles added to a sketch: every quantile must be
 *    within 1% of the exact one from a sort (the contract's exceptions
 *    aside: subnormals, +-Inf, ranks moved by collapsing), a merge of
 *    parts must equal the whole, and a round trip must change nothing;
 *    the same values in rollups (the parts and the whole) must come
 *    back from a rollup chunk bit for bit, sketches included.
 *
 * Any violation aborts.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "fuzz.h"
#include "store/rollup.h"
#include "store/sketch.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

#define MAX_VALUES 4096
#define BUF_MAX	   (64u << 20)
#define PARTS	   3

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void same_quantiles(const struct gw_sketch *a, const struct gw_sketch *b)
{
	CHECK(a->count == b->count);
	for (int i = 0; i <= 100; i++) {
		double x = gw_sketch_quantile(a, i / 100.0);
		double y = gw_sketch_quantile(b, i / 100.0);

		CHECK(memcmp(&x, &y, sizeof(x)) == 0);
	}
}

/* Encodes s; the bytes must equal want[0..n) when want is given. */
static void reencode(const struct gw_sketch *s, const uint8_t *want, size_t n)
{
	struct gw_sketch d;
	struct gw_buf b;
	size_t used;

	gw_buf_init(&b, BUF_MAX);
	gw_sketch_init(&d);
	CHECK(gw_sketch_encode(s, &b) == 0);
	if (want)
		CHECK(b.len == n && memcmp(b.p, want, n) == 0);
	CHECK(gw_sketch_decode(&d, (const uint8_t *)b.p, b.len, &used) == 0);
	CHECK(used == b.len);
	same_quantiles(s, &d);
	gw_sketch_release(&d);
	gw_buf_release(&b);
}

static void as_sketch(const uint8_t *data, size_t size)
{
	struct gw_sketch s;
	size_t used = 0;
	int r;

	gw_sketch_init(&s);
	r = gw_sketch_decode(&s, data, size, &used);
	CHECK(r == 0 || r == -EBADMSG);
	if (r == 0) {
		CHECK(used <= size);
		reencode(&s, data, used);
	} else {
		CHECK(s.count == 0 && s.npos == 0 && s.nneg == 0);
	}
	gw_sketch_release(&s);
}

static void chunk_round_trip(const struct gw_rollup *r, size_t n);

static void as_chunk(const uint8_t *data, size_t size)
{
	struct gw_rollup *r = NULL;
	struct gw_buf b;
	size_t n = 0;
	int rc;

	rc = gw_rollup_decode(data, size, &r, &n);
	CHECK(rc == 0 || rc == -EBADMSG);
	if (rc != 0) {
		CHECK(r == NULL && n == 0);
		return;
	}
	gw_buf_init(&b, BUF_MAX);
	CHECK(gw_rollup_encode(r, n, &b) == 0);
	/* Version 3 is written again as version 4, every field the same;
	 * the others have one encoding. */
	if (data[0] == 3)
		chunk_round_trip(r, n);
	else
		CHECK(b.len == size && memcmp(b.p, data, size) == 0);
	for (size_t i = 0; i < n; i++) {
		CHECK(r[i].count == 0 || r[i].min <= r[i].max);
		reencode(&r[i].sk, NULL, 0);
	}
	gw_buf_release(&b);
	gw_rollup_free_array(r, n);
}

static void as_chunk_payload(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size + 4);
	uint32_t c;

	if (!p)
		return;
	if (size)
		memcpy(p, data, size);
	c = gw_crc32c(0, data, size);
	p[size] = (uint8_t)c;
	p[size + 1] = (uint8_t)(c >> 8);
	p[size + 2] = (uint8_t)(c >> 16);
	p[size + 3] = (uint8_t)(c >> 24);
	as_chunk(p, size + 4);
	free(p);
}

static void check_close(double got, double want)
{
	if (fabs(want) < DBL_MIN) {
		CHECK(fabs(got) < DBL_MIN);
	} else if (isinf(want)) {
		CHECK(got == want || (signbit(got) == signbit(want) &&
				      fabs(got) >= DBL_MAX / 1.03));
	} else {
		CHECK(fabs(got - want) <= GW_SKETCH_ALPHA * fabs(want));
	}
}

static void same_bits(double a, double b)
{
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
}

static void same_sketch(const struct gw_sketch *a, const struct gw_sketch *b)
{
	struct gw_buf x, y;

	CHECK(a->zero == b->zero && a->nan == b->nan &&
	      a->collapsed == b->collapsed && a->cpos == b->cpos &&
	      a->cneg == b->cneg && a->npos == b->npos && a->nneg == b->nneg);
	same_bits(a->min, b->min);
	same_bits(a->max, b->max);
	CHECK(!a->npos ||
	      memcmp(a->pos, b->pos, a->npos * sizeof(*a->pos)) == 0);
	CHECK(!a->nneg ||
	      memcmp(a->neg, b->neg, a->nneg * sizeof(*a->neg)) == 0);
	same_quantiles(a, b);
	gw_buf_init(&x, BUF_MAX);
	gw_buf_init(&y, BUF_MAX);
	CHECK(gw_sketch_encode(a, &x) == 0 && gw_sketch_encode(b, &y) == 0);
	CHECK(x.len == y.len && memcmp(x.p, y.p, x.len) == 0);
	gw_buf_release(&x);
	gw_buf_release(&y);
}

/* n rollups through a chunk: the same fields, bit for bit. */
static void chunk_round_trip(const struct gw_rollup *r, size_t n)
{
	struct gw_rollup *d = NULL;
	struct gw_buf b;
	size_t k;

	gw_buf_init(&b, BUF_MAX);
	CHECK(gw_rollup_encode(r, n, &b) == 0);
	CHECK(gw_rollup_decode((const uint8_t *)b.p, b.len, &d, &k) == 0);
	CHECK(k == n);
	for (size_t i = 0; i < n; i++) {
		CHECK(d[i].t == r[i].t && d[i].t_last == r[i].t_last);
		same_bits(d[i].count, r[i].count);
		same_bits(d[i].sum, r[i].sum);
		same_bits(d[i].min, r[i].min);
		same_bits(d[i].max, r[i].max);
		same_bits(d[i].sumsq, r[i].sumsq);
		same_bits(d[i].last, r[i].last);
		CHECK(d[i].t_first == r[i].t_first);
		same_bits(d[i].first, r[i].first);
		same_bits(d[i].reset, r[i].reset);
		same_sketch(&d[i].sk, &r[i].sk);
	}
	gw_rollup_free_array(d, k);
	gw_buf_release(&b);
}

static void as_values(const uint8_t *data, size_t size)
{
	struct gw_rollup rp[PARTS + 1];
	struct gw_sketch all, part[PARTS], merged;
	struct gw_rollup ro;
	struct gw_buf a, m;
	uint64_t nneg = 0, lo1, hi1, lo2, hi2;
	size_t n = 0, nv = size / 8, i;
	double *v, den;

	if (nv > MAX_VALUES)
		nv = MAX_VALUES;
	v = malloc((nv ? nv : 1) * sizeof(*v));
	if (!v)
		return;
	gw_sketch_init(&all);
	gw_sketch_init(&merged);
	for (i = 0; i < PARTS; i++)
		gw_sketch_init(&part[i]);
	gw_rollup_init(&ro, 0);
	for (i = 0; i <= PARTS; i++)
		gw_rollup_init(&rp[i], (int64_t)i * 60000);
	gw_buf_init(&a, BUF_MAX);
	gw_buf_init(&m, BUF_MAX);

	for (i = 0; i < nv; i++) {
		double x;

		memcpy(&x, data + 8 * i, sizeof(x));
		CHECK(gw_sketch_add(&all, x) == 0);
		CHECK(gw_sketch_add(&part[data[8 * i] % PARTS], x) == 0);
		CHECK(gw_rollup_add(&ro, (int64_t)i, x) == 0);
		CHECK(gw_rollup_add(&rp[data[8 * i + 1] % (PARTS + 1)],
				    (int64_t)(data[8 * i + 2] % 4), x) == 0);
		if (!isnan(x))
			v[n++] = x == 0 ? 0.0 : x;
	}
	CHECK(all.count == n && ro.count == (double)n);
	CHECK(all.collapsed == all.cpos + all.cneg);

	/* Merge of the parts equals the whole, bytes and all. */
	for (i = PARTS; i-- > 0;)
		CHECK(gw_sketch_merge(&merged, &part[i]) == 0);
	CHECK(gw_sketch_encode(&all, &a) == 0);
	CHECK(gw_sketch_encode(&merged, &m) == 0);
	CHECK(a.len == m.len && memcmp(a.p, m.p, a.len) == 0);
	same_quantiles(&all, &merged);
	reencode(&all, (const uint8_t *)a.p, a.len);

	if (n > 0) {
		qsort(v, n, sizeof(*v), cmp_double);
		CHECK(memcmp(&all.min, &v[0], sizeof(double)) == 0);
		CHECK(memcmp(&all.max, &v[n - 1], sizeof(double)) == 0);
		CHECK(ro.min == v[0] && ro.max == v[n - 1]);
		/* Ranks moved by collapsing: the smallest magnitudes of each
		 * side, next to the zero bucket. */
		for (i = 0; i < all.nneg; i++)
			nneg += all.neg[i].count;
		lo1 = nneg - all.cneg;
		hi1 = nneg;
		lo2 = nneg + all.zero;
		hi2 = lo2 + all.cpos;
		/* Some 256 ranks, and those next to a collapsed range; q is
		 * the middle of rank i's interval. */
		den = n > 1 ? (double)(n - 1) : 1;
		for (i = 0; i < n; i++) {
			double q = ((double)i + 0.5) / den;

			if ((i >= lo1 && i < hi1) || (i >= lo2 && i < hi2))
				continue;
			if (i % (n / 256 + 1) != 0 && i + 1 != lo1 &&
			    i != hi1 && i + 1 != lo2 && i != hi2 && i + 1 != n)
				continue;
			check_close(gw_sketch_quantile(&all, q > 1 ? 1 : q),
				    v[i]);
		}
	}

	chunk_round_trip(rp, PARTS + 1);
	chunk_round_trip(&ro, 1);

	gw_buf_release(&a);
	gw_buf_release(&m);
	for (i = 0; i <= PARTS; i++)
		gw_rollup_release(&rp[i]);
	gw_rollup_release(&ro);
	for (i = 0; i < PARTS; i++)
		gw_sketch_release(&part[i]);
	gw_sketch_release(&merged);
	gw_sketch_release(&all);
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_sketch(data, size);
	as_chunk(data, size);
	as_chunk_payload(data, size);
	as_values(data, size);
	return 0;
}
