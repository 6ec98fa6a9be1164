// SPDX-License-Identifier: MIT
/*
 * fuzz_salvage.c - the reader of damaged index.db files (store/salvage.c)
 * on arbitrary bytes: the first four bytes (little-endian) say how many
 * of the rest are the database image, the remainder is its log.  Whatever
 * it finds must be well formed: series ids in range with a non-empty key
 * without NUL, head rows with t_min <= t_max and data, a watermark on an
 * hour.  Anything else aborts; so do the sanitizers.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "store/store_int.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_store_salvage sv;
	size_t dblen;
	uint32_t n;

	if (size < 4)
		return 0;
	memcpy(&n, data, 4);
	data += 4;
	size -= 4;
	dblen = n <= size ? n : size;
	if (gw_store_salvage_mem(data, dblen,
				 size > dblen ? data + dblen : NULL,
				 size - dblen, &sv) != 0)
		return 0;
	for (size_t i = 0; i < sv.nseries; i++) {
		CHECK(sv.series[i].id > 0 && sv.series[i].id < UINT32_MAX);
		CHECK(sv.series[i].key && sv.series[i].key[0]);
	}
	for (size_t i = 0; i < sv.nrows; i++) {
		CHECK(sv.rows[i].t_min <= sv.rows[i].t_max);
		CHECK(sv.rows[i].data && sv.rows[i].len > 0);
	}
	CHECK(!sv.have_watermark || sv.watermark % MS_HOUR == 0);
	gw_store_salvage_release(&sv);
	return 0;
}
