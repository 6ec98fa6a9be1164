// SPDX-License-Identifier: MIT
/*
 * fuzz_zblock.c - the readers of a closed partition's zstd blocks and of
 * packed key lists (store/compact.c) on arbitrary bytes.  The first byte
 * chooses: 0, the rest as a block's content; 1, as a key list's content
 * (both compressed here, so that the fuzzer reaches the record parsers);
 * 2 and 3, the rest as a zstd frame of either; 4, the rest as an hour
 * block's ids column.  What the readers hand out
 * must be in range: chunk bytes inside the block (the sanitizers watch),
 * series and ids in (0, 2^32-1), t_min <= t_max, keys NUL-terminated.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "fuzz.h"
#include "store/store_int.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static int on_chunk(void *ctx, const struct gw_zchunk *c)
{
	volatile uint8_t sink = 0;

	(void)ctx;
	CHECK(c->series > 0 && c->series < UINT32_MAX);
	CHECK(c->t_min <= c->t_max);
	for (size_t i = 0; i < c->len; i++)
		sink ^= c->data[i];
	(void)sink;
	return 0;
}

static int on_key(void *ctx, int64_t id, const char *key)
{
	(void)ctx;
	CHECK(id > 0 && id < UINT32_MAX);
	CHECK(strlen(key) <= (1u << 20));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *z = data + 1;
	size_t zlen = size ? size - 1 : 0;
	uint8_t *buf = NULL;
	int r;

	if (!size)
		return 0;
	if (data[0] < 2) {
		size_t cap = ZSTD_compressBound(zlen);

		buf = malloc(cap ? cap : 1);
		if (!buf)
			return 0;
		zlen = ZSTD_compress(buf, cap, data + 1, size - 1, 1);
		CHECK(!ZSTD_isError(zlen));
		z = buf;
	}
	if (data[0] == 4) {
		/* an hour block's ids column against a few wanted ids */
		static const uint32_t want[] = {
			1, 2, 7, 300, 70000, 1u << 31
		};

		(void)gw_store_ids_any(data + 1, size - 1, want,
				       sizeof(want[0]), 6, UINT32_MAX);
		r = 0;
	} else if (data[0] % 2 == 0)
		r = gw_store_zblock_each(z, zlen, on_chunk, NULL);
	else
		r = gw_store_each_packed(z, zlen, 1u << 24, on_key, NULL);
	CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
	free(buf);
	return 0;
}
