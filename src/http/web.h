/* SPDX-License-Identifier: MIT */
/*
 * web.h - the web page at / (src/http/web/), embedded in the binary.
 *
 * The build (cmake/webembed.cmake) turns every file of src/http/web/ into
 * one entry of gw_web_assets: its bytes, the same gzip'd once at build
 * time, its content type and an ETag.  Nothing is read from disk or the
 * network at run time.  The page itself only asks the agent's own API with
 * relative URLs (api/v1/...), so it works behind a reverse proxy, TLS or
 * basic auth in front of the agent.
 *
 * Serving (http/server.c): GET or HEAD of "/" is index.html; of
 * "/NAME" an asset by its path under src/http/web/.  The gzip'd bytes go to
 * a client whose Accept-Encoding names gzip (Content-Encoding: gzip), the
 * plain ones otherwise; both with "Vary: Accept-Encoding", an ETag (its
 * representation's) and "Cache-Control: no-cache", and an If-None-Match
 * that names the ETag is answered 304.  The table is constant: any thread.
 */
#ifndef GW_HTTP_WEB_H
#define GW_HTTP_WEB_H

#include <stdbool.h>
#include <stddef.h>

struct gw_web_asset {
	const char *path; /* "/index.html", "/vendor/uPlot.iife.min.js" */
	const char *type; /* Content-Type */
	const char *hash; /* 16 hex digits of the SHA-256 of the bytes */
	const unsigned char *raw;
	unsigned long raw_len;
	const unsigned char *gz;
	unsigned long gz_len;
};

/* Generated: the assets, ended by an entry with a NULL path. */
extern const struct gw_web_asset gw_web_assets[];

/* The asset a URL path names ("/" is "/index.html"), or NULL. */
const struct gw_web_asset *gw_web_find(const char *path);

/* Whether an Accept-Encoding header value accepts gzip (not "gzip;q=0"). */
bool gw_web_accepts_gzip(const char *accept_encoding);

/* Writes the quoted ETag of a's plain or gzip'd bytes into out (at least
 * 24 bytes): "0123456789abcdef" or "0123456789abcdef-gz". */
void gw_web_etag(const struct gw_web_asset *a, bool gz, char *out,
		 size_t outlen);

/* Whether an If-None-Match header value names etag (or is "*"). */
bool gw_web_etag_matches(const char *if_none_match, const char *etag);

#endif
