/* SPDX-License-Identifier: MIT */
/* remote_write's WriteRequest: the bytes on the wire, round trips, refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/rw.h"

/*
 * The protocol's bytes, written out by hand from prompb's field numbers:
 * WriteRequest{timeseries=1: TimeSeries{labels=1: Label{name=1, value=2},
 * samples=2: Sample{value=1 (double), timestamp=2 (varint)}}}.  A receiver
 * reads exactly this; the encoder must produce it.
 */
static void wire_bytes_are_prompb(void **state)
{
	static const unsigned char want[] = {
		0x0a, 0x1d, /* timeseries, 29 bytes */
		0x0a, 0x0d, /* labels, 13 bytes */
		0x0a, 0x08, '_',  '_', 'n', 'a', 'm', 'e',  '_',  '_',
		0x12, 0x01, 'a', /* value "a" */
		0x12, 0x0c,	 /* samples, 12 bytes */
		0x09, 0,    0,	  0,   0,   0,	 0,   0xf0, 0x3f, /* value 1.0 */
		0x10, 0xe8, 0x07, /* timestamp 1000 */
	};
	struct gw_labels l;
	int64_t t = 1000;
	double v = 1.0;
	struct gw_rw_series s;
	struct gw_buf b;
	size_t raw_len = 0, n = 0;
	char raw[64];

	(void)state;
	assert_int_equal(gw_labels_parse(&l, "a", NULL), 0);
	s = (struct gw_rw_series){ .labels = &l, .t = &t, .v = &v, .n = 1 };
	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_rw_encode(&s, 1, &b, &raw_len), 0);
	assert_int_equal(raw_len, sizeof(want));
	assert_int_equal(snappy_uncompressed_length(b.p, b.len, &n), SNAPPY_OK);
	assert_int_equal(n, sizeof(want));
	n = sizeof(raw);
	assert_int_equal(snappy_uncompress(b.p, b.len, raw, &n), SNAPPY_OK);
	assert_memory_equal(raw, want, sizeof(want));
	gw_buf_release(&b);
	gw_labels_release(&l);
}

/* Many series, labels and samples (NaN, infinities, negative times) come
 * back exactly as sent, in the same order. */
static void round_trip(void **state)
{
	enum { NS = 50, NP = 300 };
	struct gw_labels l[NS];
	struct gw_rw_series s[NS];
	static int64_t t[NS][NP];
	static double v[NS][NP];
	struct gw_rw_decoded *d;
	struct gw_buf b;
	size_t raw_len = 0;

	(void)state;
	for (int i = 0; i < NS; i++) {
		char text[128];

		snprintf(text, sizeof(text),
			 "gpu=\"%d\",uuid=\"GPU-%04d\",zone=\"é\\\"\\n\"", i,
			 i * 7);
		assert_int_equal(gw_labels_parse(&l[i],
						 "gpuwatch_gpu_power_watts",
						 text),
				 0);
		for (int k = 0; k < NP; k++) {
			t[i][k] = -5000 + (int64_t)k * 1000 + (k % 3);
			v[i][k] = k % 17 == 0	? NAN
				  : k % 19 == 0 ? -INFINITY
						: (double)(i * 1000 + k) / 7.0;
		}
		s[i] = (struct gw_rw_series){ .labels = &l[i],
					      .t = t[i],
					      .v = v[i],
					      .n = (size_t)(i % 5 ? NP : 0) };
	}
	gw_buf_init(&b, 64 << 20);
	assert_int_equal(gw_rw_encode(s, NS, &b, &raw_len), 0);
	assert_true(raw_len > b.len); /* snappy found the repetition */
	assert_int_equal(gw_rw_decode(b.p, b.len, &d), 0);
	assert_int_equal(d->n, NS);
	for (int i = 0; i < NS; i++) {
		assert_int_equal(d->s[i].nlabels, l[i].n);
		for (size_t k = 0; k < l[i].n; k++) {
			assert_string_equal(d->s[i].labels[k].name,
					    l[i].v[k].name);
			assert_string_equal(d->s[i].labels[k].value,
					    l[i].v[k].value);
		}
		assert_int_equal(d->s[i].n, s[i].n);
		for (size_t k = 0; k < s[i].n; k++) {
			assert_int_equal(d->s[i].t[k], t[i][k]);
			if (isnan(v[i][k]))
				assert_true(isnan(d->s[i].v[k]));
			else
				assert_true(d->s[i].v[k] == v[i][k]);
		}
	}
	gw_rw_decoded_free(d);
	for (int i = 0; i < NS; i++)
		gw_labels_release(&l[i]);
	gw_buf_release(&b);
}

/* Samples out of order, repeated timestamps and unsorted labels are
 * refused, and the buffer is left as it was. */
static void refuses_disorder(void **state)
{
	struct gw_label pairs[2] = { { "b", "1" }, { "a", "2" } };
	struct gw_labels good, bad = { .v = pairs, .n = 2 };
	int64_t t_back[] = { 2000, 1000 }, t_same[] = { 1000, 1000 },
		t_ok[] = { 1000, 2000 };
	double v[] = { 1, 2 };
	struct gw_rw_series s;
	struct gw_buf b;
	size_t raw_len = 0;

	(void)state;
	assert_int_equal(gw_labels_parse(&good, "m", "a=\"1\""), 0);
	gw_buf_init(&b, 1 << 20);
	assert_int_equal(gw_buf_adds(&b, "keep"), 0);
	s = (struct gw_rw_series){
		.labels = &good, .t = t_back, .v = v, .n = 2
	};
	assert_int_equal(gw_rw_encode(&s, 1, &b, &raw_len), -EINVAL);
	s.t = t_same;
	assert_int_equal(gw_rw_encode(&s, 1, &b, &raw_len), -EINVAL);
	s = (struct gw_rw_series){ .labels = &bad, .t = t_ok, .v = v, .n = 2 };
	assert_int_equal(gw_rw_encode(&s, 1, &b, &raw_len), -EINVAL);
	assert_int_equal(b.len, 4);
	assert_string_equal(b.p, "keep");
	/* And a full buffer is -ENOSPC, nothing half-written. */
	gw_buf_release(&b);
	gw_buf_init(&b, 8);
	s = (struct gw_rw_series){ .labels = &good, .t = t_ok, .v = v, .n = 2 };
	assert_int_equal(gw_rw_encode(&s, 1, &b, &raw_len), -ENOSPC);
	assert_int_equal(b.len, 0);
	gw_buf_release(&b);
	gw_labels_release(&good);
}

/* Bytes that are not a snappy WriteRequest are an error, never a crash. */
static void decode_refuses_garbage(void **state)
{
	static const unsigned char junk[] = {
		0xff, 0xff, 0xff, 0xff, 0x0f, 0x00
	};
	char z[64], bad_pb[] = { 0x0a, 0x7f, 0x01 };
	size_t zlen = sizeof(z);
	struct gw_rw_decoded *d = (void *)1;

	(void)state;
	assert_int_equal(gw_rw_decode(junk, sizeof(junk), &d), -EINVAL);
	assert_null(d);
	assert_int_equal(gw_rw_decode("", 0, &d), -EINVAL);
	/* Valid snappy around a truncated message. */
	assert_int_equal(snappy_compress(bad_pb, sizeof(bad_pb), z, &zlen),
			 SNAPPY_OK);
	assert_int_equal(gw_rw_decode(z, zlen, &d), -EINVAL);
	/* An empty request is valid. */
	zlen = sizeof(z);
	assert_int_equal(snappy_compress("", 0, z, &zlen), SNAPPY_OK);
	assert_int_equal(gw_rw_decode(z, zlen, &d), 0);
	assert_int_equal(d->n, 0);
	gw_rw_decoded_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wire_bytes_are_prompb),
		cmocka_unit_test(round_trip),
		cmocka_unit_test(refuses_disorder),
		cmocka_unit_test(decode_refuses_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
