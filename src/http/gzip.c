// SPDX-License-Identifier: MIT
/*
 * gzip.c - one-shot gzip of an HTTP answer; see gzip.h.
 */
#include "http/gzip.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>

#include "http/web.h"

int gw_http_gzip(const void *in, size_t len, char **out, size_t *outlen)
{
	z_stream z;
	uLong bound;
	char *buf;
	int err;

	*out = NULL;
	*outlen = 0;
	if (len > (size_t)UINT32_MAX)
		return -EINVAL;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, GW_HTTP_GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	/* deflateBound counts the zlib wrapper (6 bytes); gzip's is 18. */
	bound = deflateBound(&z, (uLong)len) + 32;
	buf = malloc(bound);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)buf;
	z.avail_out = (uInt)bound;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		free(buf);
		err = -EIO;
		goto out;
	}
	*out = buf;
	*outlen = bound - z.avail_out;
	err = 0;
out:
	deflateEnd(&z);
	return err;
}

bool gw_http_gzip_worth(const char *ae, const char *content_type, size_t len)
{
	if (len < GW_HTTP_GZIP_MIN || !gw_web_accepts_gzip(ae))
		return false;
	return !content_type || strncasecmp(content_type, "text/", 5) == 0 ||
	       strncasecmp(content_type, "application/json", 16) == 0 ||
	       strncasecmp(content_type, "application/openmetrics-text", 28) ==
		       0;
}
