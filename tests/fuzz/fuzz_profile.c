// SPDX-License-Identifier: MIT
/*
 * fuzz_profile.c - the profile readers on arbitrary bytes: pprof
 * (gzip'd or plain protobuf, gw_prof_add_pprof) and folded stacks
 * (gw_prof_add_folded).
 *
 * Beyond not crashing: whatever was read is written again as folded,
 * JSON and pprof, and the pprof read back holds the same stacks with the
 * same total.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "store/profile.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_prof *p = gw_prof_new(1000), *q;
	struct gw_buf a, b, c;
	char *copy = malloc(size ? size : 1);
	int r;

	if (!p || !copy) {
		gw_prof_free(p);
		free(copy);
		return 0;
	}
	memcpy(copy, data, size);
	/* Errors are expected; what was read before one stays, within the
	 * bound of distinct stacks. */
	r = gw_prof_add_pprof(p, copy, size, 0);
	r |= gw_prof_add_folded(p, copy, size, 1);
	CHECK(r <= 0 && gw_prof_nstacks(p) <= 1000);
	free(copy);
	gw_buf_init(&a, 64u << 20);
	gw_buf_init(&b, 64u << 20);
	gw_buf_init(&c, 64u << 20);
	gw_prof_folded(p, &a);
	gw_prof_json(p, &c);
	if (gw_prof_pprof(p, &b) == 0 && !gw_buf_error(&b)) {
		q = gw_prof_new(1000);
		CHECK(q);
		CHECK(gw_prof_add_pprof(q, b.p, b.len, 0) == 0);
		CHECK(gw_prof_total(q, 0) ==
		      gw_prof_total(p, 0) - gw_prof_total(p, 1));
		gw_prof_free(q);
	}
	gw_buf_release(&a);
	gw_buf_release(&b);
	gw_buf_release(&c);
	gw_prof_free(p);
	return 0;
}
