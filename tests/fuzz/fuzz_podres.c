// SPDX-License-Identifier: MIT
/*
 * fuzz_podres.c - the decoder of the kubelet's pod-resources answers
 * (collect/podres/podres.h) on arbitrary bytes.
 *
 * Input: one selector byte, then the bytes.
 *   sel & 1 == 0: the bytes are the whole gRPC body (frame header and all);
 *   sel & 1 == 1: the bytes are the protobuf message, put in a valid frame,
 *                 so that the message decoder sees every input.
 * Beyond not crashing: a decoded set stays within its bound, every entry
 * has a terminated, non-empty device id and terminated names, the entries
 * are sorted, and a failed decode leaves an empty set.
 */
#include <stdlib.h>
#include <string.h>

#include "collect/podres/podres.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static int terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_podres_set s;
	uint8_t *buf = NULL;
	const uint8_t *body;
	size_t len;
	int r;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		len = size - 1 + 5;
		buf = malloc(len);
		if (!buf)
			return 0;
		buf[0] = 0;
		buf[1] = (uint8_t)((size - 1) >> 24);
		buf[2] = (uint8_t)((size - 1) >> 16);
		buf[3] = (uint8_t)((size - 1) >> 8);
		buf[4] = (uint8_t)(size - 1);
		memcpy(buf + 5, data + 1, size - 1);
		body = buf;
	} else {
		body = data + 1;
		len = size - 1;
	}
	r = gw_podres_decode(body, len, &s);
	if (r) {
		CHECK(r < 0);
		CHECK(s.n == 0 && s.dev == NULL);
	} else {
		CHECK(s.n <= GW_PODRES_MAX_DEVICES);
		for (unsigned int i = 0; i < s.n; i++) {
			const struct gw_podres_dev *d = &s.dev[i];

			CHECK(terminated(d->device, sizeof(d->device)));
			CHECK(d->device[0]);
			CHECK(terminated(d->pod, sizeof(d->pod)));
			CHECK(terminated(d->ns, sizeof(d->ns)));
			CHECK(terminated(d->container, sizeof(d->container)));
			if (i)
				CHECK(strcmp(s.dev[i - 1].device, d->device) <=
				      0);
		}
	}
	gw_podres_set_release(&s);
	free(buf);
	return 0;
}
