/* SPDX-License-Identifier: MIT */
/*
 * s3.h - a small client for S3-compatible object storage (AWS S3, MinIO,
 * Ceph RGW, s3rver...): put, get, head, list and delete objects, each one
 * HTTP request signed with AWS Signature Version 4 by libcurl
 * (CURLOPT_AWS_SIGV4).  What the cold tier (archive.h) needs, nothing
 * more: single PUTs (no multipart), ListObjectsV2.
 *
 * Addressing: s3://BUCKET/PREFIX names the place.  Without an endpoint the
 * AWS one of the region is used, virtual-hosted
 * (https://BUCKET.s3.REGION.amazonaws.com/KEY); with one (--archive-endpoint
 * http://minio:9000) path style (ENDPOINT/BUCKET/KEY) unless told
 * otherwise.
 *
 * Credentials follow the AWS conventions: AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN from the environment, else
 * the profile AWS_PROFILE (default "default") of the shared credentials
 * file AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials); the
 * region from the setting, else AWS_REGION, AWS_DEFAULT_REGION, else
 * us-east-1.
 *
 * Errors: 0 or -errno, with one line in err saying what happened, the
 * server's error code and message included: -ENOENT (404), -EACCES (403:
 * wrong credentials, clock skew, no permission), -EIO (another HTTP
 * status), -ECONNREFUSED (no connection: refused, DNS, TLS), -ETIMEDOUT,
 * -ECANCELED (the caller's cancel callback), -EBADMSG (an answer that does
 * not parse), -EFBIG (beyond the caller's size bound).
 *
 * Thread safety: a struct gw_s3 is used by one thread at a time (each
 * thread makes its own with gw_s3_new from the same config).
 */
#ifndef GW_EXPORT_S3_H
#define GW_EXPORT_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gw_s3_config {
	char bucket[64];
	char prefix[512];   /* without leading or trailing '/'; may be "" */
	char endpoint[512]; /* scheme://host[:port]; "" = AWS */
	char region[64];
	bool path_style;
	char access_key[128];
	char secret_key[256];
	char session_token[2048];
	double timeout; /* seconds a request may take; 0: 300 */
};

/*
 * Fills c from the archive URL (s3://BUCKET[/PREFIX], where ${NAME} is the
 * environment variable NAME, ${HOSTNAME} the host's name if unset), the
 * endpoint (""
 * or NULL: AWS), the region ("" or NULL: from the environment) and the
 * addressing style ("path", "virtual" or "auto"), then the credentials as
 * above.  0 or -EINVAL with a message.
 */
__attribute__((warn_unused_result)) int
gw_s3_config_init(struct gw_s3_config *c, const char *url, const char *endpoint,
		  const char *region, const char *style, char *err,
		  size_t errlen);

/*
 * Reads [profile] of an AWS shared credentials file's text: 0 when both
 * keys were found, -ENOENT when the profile or a key is missing, -EINVAL
 * for a malformed line (line number in err).  Exposed for the fuzzer.
 */
__attribute__((warn_unused_result)) int
gw_s3_parse_credentials(const char *text, size_t len, const char *profile,
			struct gw_s3_config *c, char *err, size_t errlen);

struct gw_s3;

__attribute__((warn_unused_result)) int gw_s3_new(const struct gw_s3_config *c,
						  struct gw_s3 **out);
void gw_s3_free(struct gw_s3 *s3);

/* Called during transfers: nonzero stops the request (-ECANCELED). */
void gw_s3_set_cancel(struct gw_s3 *s3, int (*cancel)(void *ctx), void *ctx);

/* The full key of name under the prefix ("PREFIX/name"). */
void gw_s3_key(const struct gw_s3 *s3, const char *name, char *out, size_t len);

/*
 * PUTs the file at path (len bytes) as key, with its SHA-256 (hex) as
 * x-amz-content-sha256 (servers that check it refuse a body that does not
 * match); *etag gets the ETag the server answered, quotes removed.
 */
__attribute__((warn_unused_result)) int
gw_s3_put_file(struct gw_s3 *s3, const char *key, const char *path,
	       uint64_t len, const char *sha256_hex, char etag[80], char *err,
	       size_t errlen);
__attribute__((warn_unused_result)) int
gw_s3_put_mem(struct gw_s3 *s3, const char *key, const void *data, size_t len,
	      char *err, size_t errlen);

/* HEAD: size and ETag (quotes removed). */
__attribute__((warn_unused_result)) int
gw_s3_head(struct gw_s3 *s3, const char *key, uint64_t *size, char etag[80],
	   char *err, size_t errlen);

/*
 * GETs key into memory (at most max bytes, NUL-terminated; *out malloc'd)
 * or through sink (called with each piece; nonzero stops it: -ECANCELED
 * unless the sink returns its own -errno).
 */
__attribute__((warn_unused_result)) int
gw_s3_get_mem(struct gw_s3 *s3, const char *key, size_t max, char **out,
	      size_t *len, char *err, size_t errlen);
__attribute__((warn_unused_result)) int
gw_s3_get(struct gw_s3 *s3, const char *key,
	  int (*sink)(void *ctx, const void *p, size_t n), void *ctx, char *err,
	  size_t errlen);

__attribute__((warn_unused_result)) int
gw_s3_delete(struct gw_s3 *s3, const char *key, char *err, size_t errlen);

/* One object of a listing. */
struct gw_s3_object {
	char key[1024];
	uint64_t size;
	char etag[80];
	char modified[40];
};

/*
 * Lists the keys under the prefix PREFIX/under (ListObjectsV2, every page):
 * fn for each object, in the server's (lexical) order; fn's nonzero stops
 * it and is returned.
 */
__attribute__((warn_unused_result)) int
gw_s3_list(struct gw_s3 *s3, const char *under,
	   int (*fn)(void *ctx, const struct gw_s3_object *o), void *ctx,
	   char *err, size_t errlen);

/*
 * Parses one ListObjectsV2 answer: fn for each <Contents>; *truncated and
 * token (the NextContinuationToken, "" if none).  0, fn's nonzero, or
 * -EBADMSG.  Exposed for the fuzzer.
 */
__attribute__((warn_unused_result)) int
gw_s3_parse_list(const char *xml, size_t len,
		 int (*fn)(void *ctx, const struct gw_s3_object *o), void *ctx,
		 bool *truncated, char *token, size_t tokenlen);

#endif
