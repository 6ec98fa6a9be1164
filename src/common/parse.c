/* SPDX-License-Identifier: MIT */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gw_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		  unsigned long long *out)
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

static const struct {
	const char *unit;
	uint64_t ns;
} prom_units[] = {
	{ "y", 365ULL * 24 * 3600 * 1000000000ULL },
	{ "w", 7ULL * 24 * 3600 * 1000000000ULL },
	{ "d", 24ULL * 3600 * 1000000000ULL },
	{ "h", 3600ULL * 1000000000ULL },
	{ "m", 60ULL * 1000000000ULL },
	{ "s", 1000000000ULL },
	{ "ms", 1000000ULL },
};

#define NPROM_UNITS (sizeof(prom_units) / sizeof(prom_units[0]))

static int say(char *msg, size_t msgn, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int say(char *msg, size_t msgn, int err, const char *fmt, ...)
{
	va_list ap;

	if (msg && msgn) {
		va_start(ap, fmt);
		vsnprintf(msg, msgn, fmt, ap);
		va_end(ap);
	}
	return err;
}

int gw_parse_prom_duration(const char *s, size_t n, int64_t *ms, char *msg,
			   size_t msgn)
{
	uint64_t total = 0;
	size_t i = 0, last = 0;

	if (!s || n == 0)
		return say(msg, msgn, -EINVAL, "empty duration string");
	if (n == 1 && s[0] == '0') {
		*ms = 0;
		return 0;
	}
	while (i < n) {
		uint64_t v = 0;
		size_t d = i, u, k;
		bool big = false;

		while (i < n && isdigit((unsigned char)s[i])) {
			if (v > (UINT64_MAX - 9) / 10)
				big = true;
			else
				v = v * 10 + (uint64_t)(s[i] - '0');
			i++;
		}
		if (i == d || big)
			goto invalid;
		u = i;
		while (i < n && !isdigit((unsigned char)s[i]))
			i++;
		if (i == u)
			goto invalid;
		for (k = 0; k < NPROM_UNITS; k++)
			if (strlen(prom_units[k].unit) == i - u &&
			    memcmp(prom_units[k].unit, s + u, i - u) == 0)
				break;
		if (k == NPROM_UNITS)
			return say(msg, msgn, -EINVAL,
				   "unknown unit \"%.*s\" in duration \"%.*s\"",
				   (int)(i - u), s + u, (int)n, s);
		if (k + 1 <= last)
			goto invalid; /* a unit again, or a larger one after */
		last = k + 1;
		if (v > (UINT64_MAX >> 1) / prom_units[k].ns)
			return say(msg, msgn, -ERANGE, "duration out of range");
		total += v * prom_units[k].ns;
		if (total > (uint64_t)INT64_MAX)
			return say(msg, msgn, -ERANGE, "duration out of range");
	}
	*ms = (int64_t)(total / 1000000ULL);
	return 0;
invalid:
	return say(msg, msgn, -EINVAL, "not a valid duration string: \"%.*s\"",
		   (int)n, s);
}

/* The settings' older form: a decimal number with at most one unit. */
static int decimal_duration(const char *s, double *out)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = { { "ms", 0.001 },	   { "s", 1 },	   { "m", 60 },
		      { "h", 3600 },	   { "d", 86400 }, { "w", 7 * 86400 },
		      { "y", 365 * 86400 } };
	char num[64];
	size_t n = strlen(s);
	double mult = 1, v;
	int err;

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
	*out = v * mult;
	return 0;
}

int gw_parse_duration(const char *s, double min, double max, double *out)
{
	int64_t ms;
	double v;
	int err;

	if (!s)
		return -EINVAL;
	err = gw_parse_prom_duration(s, strlen(s), &ms, NULL, 0);
	if (err == 0)
		v = (double)ms / 1000.0;
	else if (err == -EINVAL)
		err = decimal_duration(s, &v);
	if (err)
		return err;
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
	} units[] = { { "KiB", 1ull << 10 },
		      { "MiB", 1ull << 20 },
		      { "GiB", 1ull << 30 },
		      { "TiB", 1ull << 40 },
		      { "K", 1ull << 10 },
		      { "M", 1ull << 20 },
		      { "G", 1ull << 30 },
		      { "T", 1ull << 40 },
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
