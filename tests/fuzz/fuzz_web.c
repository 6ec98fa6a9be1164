// SPDX-License-Identifier: MIT
/*
 * fuzz_web.c - the web page's header parsing (http/web.h) on arbitrary
 * Accept-Encoding and If-None-Match values.
 *
 * Input: the header value (a NUL ends it early, as in a request).  Beyond
 * not crashing or reading past it: a value that accepts gzip still does
 * with ", identity" after it and stops when gzip alone is refused before
 * anything else ("gzip;q=0, " + value is not checked: a later "*" or gzip
 * may accept); every asset's ETag matches a list that ends with it; and
 * "/"'s lookup is index.html whatever the value.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "http/web.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *t;
	const struct gw_web_asset *a = gw_web_find("/");
	char etag[40];
	bool gz;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	gz = gw_web_accepts_gzip(s);
	t = malloc(size + 64);
	if (!t) {
		free(s);
		return 0;
	}
	snprintf(t, size + 64, "%s, identity", s);
	CHECK(gw_web_accepts_gzip(t) == gz);
	gw_web_etag(a, gz, etag, sizeof(etag));
	(void)gw_web_etag_matches(s, etag);
	snprintf(t, size + 64, "%s, %s", s, etag);
	CHECK(gw_web_etag_matches(t, etag));
	CHECK(gw_web_find("/") == gw_web_find("/index.html"));
	free(t);
	free(s);
	return 0;
}
