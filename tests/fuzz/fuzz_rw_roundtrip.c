// SPDX-License-Identifier: MIT
/*
 * fuzz_rw_roundtrip.c - remote_write's encoder and decoder together.
 *
 * The input is read as a batch of series (a small instruction set): per
 * series a byte of label choices, label values, a sample count, then per
 * sample a timestamp step and a value.  A step byte of 0 or 0xff makes the
 * series go back in time or repeat a timestamp, which the encoder must
 * refuse with -EINVAL (and only then).  Otherwise the batch is encoded,
 * decoded with protobuf-c, and every label, timestamp and value (bit for
 * bit) must come back in order.
 */
#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "export/rw.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

#define MAX_SERIES  16
#define MAX_SAMPLES 256

struct reader {
	const uint8_t *p;
	size_t n;
};

static unsigned int take(struct reader *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "__name__", "gpu", "uuid",
					     "job",	 "le",	"zone" };
	static int64_t t[MAX_SERIES][MAX_SAMPLES];
	static double v[MAX_SERIES][MAX_SAMPLES];
	struct reader r = { data, size };
	struct gw_labels l[MAX_SERIES];
	struct gw_rw_series s[MAX_SERIES];
	struct gw_rw_decoded *d;
	size_t ns = 0, raw_len = 0;
	bool disorder = false;
	struct gw_buf b;
	int err;

	ns = take(&r) % (MAX_SERIES + 1);
	for (size_t i = 0; i < ns; i++) {
		struct gw_label pairs[6];
		char vals[6][9];
		unsigned int mask = take(&r), np = 0, n;
		int64_t ts = (int64_t)(take(&r) << 24) - 1000000;

		for (unsigned int k = 0; k < 6; k++) {
			if (!(mask & (1u << k)))
				continue;
			for (unsigned int j = 0; j < 8; j++) {
				unsigned int c = take(&r);

				vals[k][j] = (char)(c ? c : 'x');
			}
			vals[k][take(&r) % 9] = '\0';
			pairs[np++] = (struct gw_label){ names[k], vals[k] };
		}
		if (gw_labels_from(&l[i], pairs, np))
			abort();
		n = take(&r) % MAX_SAMPLES;
		for (unsigned int k = 0; k < n; k++) {
			unsigned int step = take(&r);
			uint64_t bits = 0;

			if (step == 0 || step == 0xff)
				disorder |= k > 0;
			ts += step == 0xff ? -1
			      : step == 0  ? 0
					   : (int64_t)step * 997;
			t[i][k] = ts;
			for (unsigned int j = 0; j < 8; j++)
				bits = bits << 8 | take(&r);
			memcpy(&v[i][k], &bits, sizeof(bits));
		}
		s[i] = (struct gw_rw_series){
			.labels = &l[i], .t = t[i], .v = v[i], .n = n
		};
	}
	gw_buf_init(&b, 64u << 20);
	err = gw_rw_encode(s, ns, &b, &raw_len);
	if (disorder) {
		CHECK(err == -EINVAL && b.len == 0);
		goto out;
	}
	CHECK(err == 0);
	err = gw_rw_decode(b.p, b.len, &d);
	CHECK(err == 0);
	CHECK(d->n == ns);
	for (size_t i = 0; i < ns; i++) {
		CHECK(d->s[i].nlabels == l[i].n);
		for (size_t k = 0; k < l[i].n; k++) {
			CHECK(!strcmp(d->s[i].labels[k].name, l[i].v[k].name));
			CHECK(!strcmp(d->s[i].labels[k].value,
				      l[i].v[k].value));
		}
		CHECK(d->s[i].n == s[i].n);
		for (size_t k = 0; k < s[i].n; k++) {
			CHECK(d->s[i].t[k] == t[i][k]);
			/* Bit for bit, except that -0 arrives as 0: proto3
			 * does not send a double equal to 0 (protobuf-c
			 * and Prometheus' Go encoder alike). */
			CHECK(!memcmp(&d->s[i].v[k], &v[i][k],
				      sizeof(double)) ||
			      (v[i][k] == 0 && d->s[i].v[k] == 0 &&
			       !signbit(d->s[i].v[k])));
		}
	}
	gw_rw_decoded_free(d);
out:
	gw_buf_release(&b);
	for (size_t i = 0; i < ns; i++)
		gw_labels_release(&l[i]);
	return 0;
}
