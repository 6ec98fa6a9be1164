/* SPDX-License-Identifier: MIT */
/* The embedded web page (http/web.h): the table the build made, and the
 * Accept-Encoding and If-None-Match parsing that chooses what is sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "http/gzip.h"
#include "http/web.h"

/* Every file is there, "/" is the page, and its gzip'd bytes inflate to
 * its plain ones (the build's gzip, checked with zlib). */
static void assets(void **state)
{
	const struct gw_web_asset *a;
	int n = 0;

	(void)state;
	assert_ptr_equal(gw_web_find("/"), gw_web_find("/index.html"));
	assert_non_null(gw_web_find("/app.js"));
	assert_non_null(gw_web_find("/vendor/uPlot.iife.min.js"));
	assert_non_null(gw_web_find("/vendor/uPlot.LICENSE.txt"));
	assert_null(gw_web_find("/nothing"));
	assert_null(gw_web_find("/../index.html"));
	assert_null(gw_web_find(""));
	assert_null(gw_web_find(NULL));
	assert_string_equal(gw_web_find("/")->type, "text/html; charset=utf-8");
	for (a = gw_web_assets; a->path; a++, n++) {
		static unsigned char out[1 << 20];
		z_stream z;

		memset(&z, 0, sizeof(z));
		assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
		z.next_in = (unsigned char *)a->gz;
		z.avail_in = (unsigned int)a->gz_len;
		z.next_out = out;
		z.avail_out = sizeof(out);
		assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
		assert_int_equal(z.total_out, a->raw_len);
		assert_memory_equal(out, a->raw, a->raw_len);
		inflateEnd(&z);
		assert_true(a->gz_len < a->raw_len);
		assert_int_equal(strlen(a->hash), 16);
	}
	assert_true(n >= 6);
}

static void accept_encoding(void **state)
{
	(void)state;
	assert_true(gw_web_accepts_gzip("gzip"));
	assert_true(gw_web_accepts_gzip("gzip, deflate, br"));
	assert_true(gw_web_accepts_gzip("deflate, GZIP;q=0.5"));
	assert_true(gw_web_accepts_gzip("br;q=1.0, gzip ; q=0.8"));
	assert_true(gw_web_accepts_gzip("*"));
	assert_true(gw_web_accepts_gzip("gzip;q=0.01"));
	assert_false(gw_web_accepts_gzip(NULL));
	assert_false(gw_web_accepts_gzip(""));
	assert_false(gw_web_accepts_gzip("identity"));
	assert_false(gw_web_accepts_gzip("x-gzip2, gzipx, deflate"));
	assert_false(gw_web_accepts_gzip("gzip;q=0"));
	assert_false(gw_web_accepts_gzip("gzip; q=0.000, br"));
	assert_false(gw_web_accepts_gzip("*;q=0"));
	assert_false(gw_web_accepts_gzip(",,, ;"));
}

/* An API answer gzip'd for the client inflates to the same bytes, and is
 * much smaller: a range query's JSON repeats itself. */
static void gzip_answer(void **state)
{
	static char json[200000];
	size_t n = 0, gzlen;
	char *gz, back[sizeof(json)];
	z_stream z;

	(void)state;
	n += (size_t)snprintf(json, sizeof(json),
			      "{\"status\":\"success\",\"data\":{\"result\":[");
	for (int i = 0; n < sizeof(json) - 100; i++)
		n += (size_t)snprintf(json + n, sizeof(json) - n,
				      "%s[%d,\"%d.%d\"]", i ? "," : "",
				      1796330000 + i, 70 + i % 7, i % 10);
	assert_int_equal(gw_http_gzip(json, n, &gz, &gzlen), 0);
	assert_true(gzlen < n / 4);
	assert_int_equal((unsigned char)gz[0], 0x1f); /* a gzip member */
	assert_int_equal((unsigned char)gz[1], 0x8b);
	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	z.next_in = (unsigned char *)gz;
	z.avail_in = (uInt)gzlen;
	z.next_out = (unsigned char *)back;
	z.avail_out = sizeof(back);
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	assert_int_equal(z.total_out, n);
	assert_memory_equal(back, json, n);
	inflateEnd(&z);
	free(gz);
	/* Nothing at all is a valid gzip too. */
	assert_int_equal(gw_http_gzip("", 0, &gz, &gzlen), 0);
	assert_true(gzlen >= 18);
	free(gz);
}

/* Only for a client that asks, only text and JSON, only when it pays. */
static void gzip_worth(void **state)
{
	(void)state;
	assert_true(gw_http_gzip_worth("gzip", NULL, 4096));
	assert_true(gw_http_gzip_worth("deflate, gzip, br",
				       "text/plain; "
				       "version=0.0.4",
				       4096));
	assert_true(gw_http_gzip_worth(
		"gzip", "application/openmetrics-text; version=1.0.0", 4096));
	assert_false(gw_http_gzip_worth(NULL, NULL, 4096));
	assert_false(gw_http_gzip_worth("", NULL, 4096));
	assert_false(gw_http_gzip_worth("identity", NULL, 4096));
	assert_false(gw_http_gzip_worth("gzip;q=0", NULL, 4096));
	assert_false(gw_http_gzip_worth("gzip", "application/octet-stream",
					4096)); /* pprof: gzip'd already */
	assert_false(gw_http_gzip_worth("gzip", NULL, GW_HTTP_GZIP_MIN - 1));
	assert_true(gw_http_gzip_worth("gzip", NULL, GW_HTTP_GZIP_MIN));
}

static void etags(void **state)
{
	const struct gw_web_asset *a = gw_web_find("/");
	char plain[40], gz[40], want[96];

	(void)state;
	gw_web_etag(a, false, plain, sizeof(plain));
	gw_web_etag(a, true, gz, sizeof(gz));
	snprintf(want, sizeof(want), "\"%s\"", a->hash);
	assert_string_equal(plain, want);
	snprintf(want, sizeof(want), "\"%s-gz\"", a->hash);
	assert_string_equal(gz, want);
	assert_true(gw_web_etag_matches(gz, gz));
	assert_true(gw_web_etag_matches("*", gz));
	assert_false(gw_web_etag_matches(plain, gz));
	snprintf(want, sizeof(want), "\"x\", W/%s", gz);
	assert_true(gw_web_etag_matches(want, gz));
	assert_false(gw_web_etag_matches(NULL, gz));
	assert_false(gw_web_etag_matches("", gz));
	assert_false(gw_web_etag_matches("\"\"", gz));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(assets),     cmocka_unit_test(accept_encoding),
		cmocka_unit_test(etags),      cmocka_unit_test(gzip_answer),
		cmocka_unit_test(gzip_worth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
