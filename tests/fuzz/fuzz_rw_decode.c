// SPDX-License-Identifier: MIT
/*
 * fuzz_rw_decode.c - remote_write's decoder on arbitrary bytes: as they
 * are, and wrapped in valid snappy so that protobuf-c's unpacking is
 * reached.  Must answer 0 or an error, never crash; what it decodes is
 * consistent (counts match the arrays, every string is readable).
 */
#include <errno.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "export/rw.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static void check(const void *p, size_t n)
{
	struct gw_rw_decoded *d = NULL;
	int err = gw_rw_decode(p, n, &d);
	size_t total = 0;

	CHECK(err == 0 || err == -EINVAL || err == -ENOMEM);
	if (err) {
		CHECK(d == NULL);
		return;
	}
	for (size_t i = 0; i < d->n; i++) {
		for (size_t k = 0; k < d->s[i].nlabels; k++)
			total += strlen(d->s[i].labels[k].name) +
				 strlen(d->s[i].labels[k].value);
		for (size_t k = 0; k < d->s[i].n; k++)
			total += (size_t)(d->s[i].t[k] & 1);
	}
	(void)total;
	gw_rw_decoded_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t zlen = snappy_max_compressed_length(size);
	char *z = malloc(zlen);

	check(data, size);
	if (z &&
	    snappy_compress((const char *)data, size, z, &zlen) == SNAPPY_OK)
		check(z, zlen);
	free(z);
	return 0;
}
