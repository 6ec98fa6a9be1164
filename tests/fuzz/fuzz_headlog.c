// SPDX-License-Identifier: MIT
/*
 * fuzz_headlog.c - the head log's record parser (store/headlog.c,
 * gw_headlog_parse) on arbitrary bytes, as a replay after a crash may
 * meet them where a record's checksum happens to hold.  What it gives
 * must be well formed: each key a string of the length it claims, all
 * keys before the first group of samples, no sample outside a group.
 * Anything else aborts; so do the sanitizers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "store/store_int.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

struct seen {
	size_t keys, groups, samples;
};

static void on_series(void *ctx, uint64_t id, const char *key)
{
	struct seen *s = ctx;

	(void)id;
	CHECK(key && s->groups == 0);
	s->keys += strlen(key) < (1u << 30);
}

static void on_group(void *ctx, uint64_t id)
{
	(void)id;
	((struct seen *)ctx)->groups++;
}

static void on_sample(void *ctx, int64_t t, double v)
{
	struct seen *s = ctx;

	(void)t;
	(void)v;
	CHECK(s->groups > 0);
	s->samples++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen seen = { 0 };
	const struct gw_headlog_sink sink = { &seen, on_series, on_group,
					      on_sample };
	int r = gw_headlog_parse(data, size, &sink);

	CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
	/* every sample costs the input at least 9 bytes */
	CHECK(seen.samples <= size / 9);
	return 0;
}
