/* SPDX-License-Identifier: MIT */
#include "web.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const struct gw_web_asset *gw_web_find(const char *path)
{
	const struct gw_web_asset *a;

	if (!path)
		return NULL;
	if (strcmp(path, "/") == 0)
		path = "/index.html";
	for (a = gw_web_assets; a->path; a++)
		if (strcmp(a->path, path) == 0)
			return a;
	return NULL;
}

/* The next comma-separated token of s (spaces trimmed) in [*b, *e). */
static const char *next_token(const char *s, const char **b, const char **e)
{
	while (*s == ' ' || *s == '\t' || *s == ',')
		s++;
	if (!*s)
		return NULL;
	*b = s;
	while (*s && *s != ',')
		s++;
	*e = s;
	while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
	return s;
}

/* Whether a q= parameter in [b, e) says zero ("q=0", "q=0.0", "q=0.000"). */
static bool q_zero(const char *b, const char *e)
{
	const char *q;

	for (q = b; q + 2 <= e; q++) {
		if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
			q += 2;
			if (q >= e || *q != '0')
				return false;
			for (q++; q < e && (*q == '.' || *q == '0'); q++)
				;
			return q == e || *q == ' ' || *q == ';';
		}
	}
	return false;
}

bool gw_web_accepts_gzip(const char *ae)
{
	const char *b, *e, *s = ae;

	if (!ae)
		return false;
	while ((s = next_token(s, &b, &e))) {
		size_t n = (size_t)(e - b);
		const char *semi = memchr(b, ';', n);
		size_t name = semi ? (size_t)(semi - b) : n;

		while (name && (b[name - 1] == ' ' || b[name - 1] == '\t'))
			name--;
		if (!((name == 4 && strncasecmp(b, "gzip", 4) == 0) ||
		      (name == 1 && b[0] == '*')))
			continue;
		if (semi && q_zero(semi, e))
			continue;
		return true;
	}
	return false;
}

void gw_web_etag(const struct gw_web_asset *a, bool gz, char *out,
		 size_t outlen)
{
	snprintf(out, outlen, "\"%s%s\"", a->hash, gz ? "-gz" : "");
}

bool gw_web_etag_matches(const char *inm, const char *etag)
{
	const char *b, *e, *s = inm;
	size_t n = strlen(etag);

	if (!inm)
		return false;
	while ((s = next_token(s, &b, &e))) {
		if (e - b == 1 && *b == '*')
			return true;
		if (e - b >= 2 && b[0] == 'W' && b[1] == '/')
			b += 2; /* weak comparison, as If-None-Match wants */
		if ((size_t)(e - b) == n && memcmp(b, etag, n) == 0)
			return true;
	}
	return false;
}
