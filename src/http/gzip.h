/* SPDX-License-Identifier: MIT */
/*
 * gzip.h - gzip'd HTTP answers (Content-Encoding: gzip), as Prometheus
 * sends its API and /metrics answers to a client that asks for them
 * (Accept-Encoding: gzip).  server.c compresses an API reply in the query
 * worker that built it and /metrics in the server thread; nobody gets
 * gzip without asking, and every answer that could be compressed says
 * "Vary: Accept-Encoding".
 *
 * Contract
 * - gw_http_gzip compresses len bytes of in into a new heap buffer (*out,
 *   *outlen; the caller frees it), a single gzip member (RFC 1952) at
 *   GW_HTTP_GZIP_LEVEL.  -ENOMEM, or -EIO if zlib fails.  Stateless: any
 *   thread.
 * - gw_http_gzip_worth: whether a body of len bytes and this content type
 *   (NULL: JSON) is worth compressing for a client whose Accept-Encoding
 *   is ae: the client accepts gzip (http/web.h's rule), the body is at
 *   least GW_HTTP_GZIP_MIN bytes and its type is text or JSON (pprof is
 *   gzip'd already).
 */
#ifndef GW_HTTP_GZIP_H
#define GW_HTTP_GZIP_H

#include <stdbool.h>
#include <stddef.h>

/* zlib's fastest level: JSON and the exposition format are repetitive
 * enough that it gets most of level 6's ratio at a third of its CPU. */
#define GW_HTTP_GZIP_LEVEL 1
/* Smaller bodies fit one packet anyway. */
#define GW_HTTP_GZIP_MIN 512

__attribute__((warn_unused_result)) int
gw_http_gzip(const void *in, size_t len, char **out, size_t *outlen);

bool gw_http_gzip_worth(const char *ae, const char *content_type, size_t len);

#endif
