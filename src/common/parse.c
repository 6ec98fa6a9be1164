/* SPDX-License-Identifier: MIT */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int gw_parse_uint(const char *s, unsigned long long min,
		  unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int gw_parse_double(const char *s, double min, double max, double *out)
{
	double v;
	char *end;

	if (!s || !*s || isspace((unsigned char)s[0]) || strpbrk(s, "xXpP"))
		return -EINVAL; /* no hex floats: "0x10" is not a number of seconds */
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(v))
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int gw_parse_duration(const char *s, double min, double max, double *out)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = { { "ms", 0.001 }, { "s", 1 }, { "m", 60 }, { "h", 3600 },
		      { "d", 86400 }, { "w", 7 * 86400 }, { "y", 365 * 86400 } };
	char num[64];
	size_t n;
	double mult = 1, v;
	int err;

	if (!s)
		return -EINVAL;
	n = strlen(s);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t k = strlen(units[i].suffix);

		if (n > k && strcmp(s + n - k, units[i].suffix) == 0 &&
		    isdigit((unsigned char)s[n - k - 1])) {
			mult = units[i].mult;
			n -= k;
			break;
		}
	}
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = '\0';
	err = gw_parse_double(num, 0, 1e12, &v);
	if (err)
		return err;
	v *= mult;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int gw_parse_bytes(const char *s, unsigned long long *out)
{
	static const struct {
		const char *suffix;
		unsigned long long mult;
	} units[] = { { "KiB", 1ull << 10 }, { "MiB", 1ull << 20 },
		      { "GiB", 1ull << 30 }, { "TiB", 1ull << 40 },
		      { "K", 1ull << 10 },   { "M", 1ull << 20 },
		      { "G", 1ull << 30 },   { "T", 1ull << 40 },
		      { "B", 1 } };
	unsigned long long mult = 1, v;
	char num[64];
	size_t n;
	int err;

	if (!s)
		return -EINVAL;
	n = strlen(s);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t k = strlen(units[i].suffix);

		if (n > k && strcmp(s + n - k, units[i].suffix) == 0) {
			mult = units[i].mult;
			n -= k;
			break;
		}
	}
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = '\0';
	err = gw_parse_uint(num, 0, ~0ULL / mult, &v);
	if (err)
		return err;
	*out = v * mult;
	return 0;
}

int gw_parse_hostport(const char *s, char *host, size_t hostlen,
		      unsigned int *port)
{
	const char *colon, *h = s;
	size_t hl;
	unsigned long long p;
	int err;

	if (!s)
		return -EINVAL;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
		if (memchr(s, ':', hl))
			return -EINVAL; /* bare IPv6 needs brackets */
	}
	if (hl >= hostlen)
		return -ERANGE;
	err = gw_parse_uint(colon + 1, 0, 65535, &p);
	if (err)
		return err;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (unsigned int)p;
	return 0;
}
