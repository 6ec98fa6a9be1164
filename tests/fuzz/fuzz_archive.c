// SPDX-License-Identifier: MIT
/*
 * fuzz_archive.c - the cold tier's readers of text from the bucket and the
 * environment on arbitrary bytes; the first byte picks one:
 *
 *   0  the manifest (export/archive.c): what parses formats back to the
 *      same text and parses again to the same fields
 *   1  a ListObjectsV2 answer (export/s3.c): every object has a key
 *      without NUL, an ETag without quotes; a truncated answer has a token
 *   2  the shared credentials file (export/s3.c): a profile found has both
 *      keys
 *
 * Anything else aborts; so do the sanitizers.
 */
#include <stdlib.h>
#include <string.h>

#include "export/archive.h"
#include "export/s3.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static int on_object(void *ctx, const struct gw_s3_object *o)
{
	size_t *n = ctx;

	CHECK(o->key[0] && strlen(o->key) < sizeof(o->key));
	CHECK(!strchr(o->etag, '"'));
	(*n)++;
	return *n > 100000 ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	size_t len;

	if (size < 1)
		return 0;
	len = size - 1;
	switch (data[0] % 3) {
	case 0: {
		struct gw_archive_manifest m, m2;
		char out[4096];
		int n;

		if (gw_archive_manifest_parse(text, len, &m) != 0)
			return 0;
		n = gw_archive_manifest_format(&m, out, sizeof(out));
		CHECK(n > 0);
		CHECK(gw_archive_manifest_parse(out, (size_t)n, &m2) == 0);
		CHECK(strcmp(m.partition, m2.partition) == 0);
		CHECK(m.bytes == m2.bytes);
		CHECK(strcmp(m.sha256, m2.sha256) == 0);
		CHECK(strcmp(m.md5, m2.md5) == 0);
		CHECK(strlen(m.sha256) == 64 && strlen(m.md5) == 32);
		break;
	}
	case 1: {
		char token[1024];
		bool more;
		size_t n = 0;

		if (gw_s3_parse_list(text, len, on_object, &n, &more, token,
				     sizeof(token)) == 0)
			CHECK(!more || token[0]);
		break;
	}
	default: {
		struct gw_s3_config c;
		char err[256];

		memset(&c, 0, sizeof(c));
		if (gw_s3_parse_credentials(text, len, "default", &c, err,
					    sizeof(err)) == 0)
			CHECK(c.access_key[0] && c.secret_key[0]);
	}
	}
	return 0;
}
