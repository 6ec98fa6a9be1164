// SPDX-License-Identifier: MIT
/*
 * fuzz_parse.c - the strict parsers on arbitrary text.
 *
 * Input: one selector byte (which bounds to use), then text; the text is
 * split at '\n' and each piece is given to every parser.  Beyond not
 * crashing, a success must mean what the contract says: the value is in
 * range, a uint is exactly its digits, a host has no bare ':' and the port
 * fits in 16 bits, and an error is -EINVAL or -ERANGE.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static const struct {
	unsigned long long min, max;
} ubounds[] = {
	{ 0, ~0ULL }, { 0, 65535 }, { 1, 64 }, { 5, 5 }, { 100, 10 },
};

static const struct {
	double min, max;
} dbounds[] = {
	{ 0, 1e12 }, { 0.1, 3600 }, { 0.0001, 1 }, { -1e300, 1e300 }, { 1, 0 },
};

static void check_err(int r)
{
	CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
}

static void one_uint(const char *s, unsigned int sel)
{
	unsigned long long min = ubounds[sel % 5].min;
	unsigned long long max = ubounds[sel % 5].max;
	unsigned long long v = 0xdeadbeef;
	const char *digits = s;
	char back[32];
	int r = gw_parse_uint(s, min, max, &v);

	check_err(r);
	if (r) {
		CHECK(v == 0xdeadbeef);
		return;
	}
	CHECK(v >= min && v <= max);
	/* Exactly the decimal digits of v, perhaps with leading zeros. */
	while (digits[0] == '0' && digits[1] != '\0')
		digits++;
	snprintf(back, sizeof(back), "%llu", v);
	CHECK(strcmp(back, digits) == 0);
}

static void one_double(const char *s, unsigned int sel)
{
	double min = dbounds[sel % 5].min, max = dbounds[sel % 5].max;
	double v = -12345;
	int r = gw_parse_double(s, min, max, &v);

	check_err(r);
	if (r) {
		CHECK(v == -12345);
		return;
	}
	CHECK(isfinite(v) && v >= min && v <= max);
	CHECK(s[0] != '\0');
}

static void one_duration(const char *s, unsigned int sel)
{
	double min = dbounds[sel % 5].min, max = dbounds[sel % 5].max;
	double v = -12345, plain;
	int r = gw_parse_duration(s, min, max, &v);

	check_err(r);
	if (r) {
		CHECK(v == -12345);
		return;
	}
	CHECK(isfinite(v) && v >= min && v <= max && v >= 0);
	/* Without a unit a duration is a plain number of seconds. */
	if (gw_parse_double(s, -1e300, 1e300, &plain) == 0)
		CHECK(plain == v);
}

/* Prometheus' grammar: a success is a duration >= 0 that a setting reads
 * the same; an error leaves the output alone and says why. */
static void one_prom_duration(const char *s, unsigned int sel)
{
	int64_t ms = -12345;
	char msg[64] = "";
	double secs = -1;
	int r = gw_parse_prom_duration(s, strlen(s), &ms, sel % 2 ? msg : NULL,
				       sizeof(msg));

	check_err(r);
	if (r) {
		CHECK(ms == -12345);
		CHECK(!(sel % 2) || msg[0] != '\0');
		return;
	}
	CHECK(ms >= 0 && s[0] != '\0');
	CHECK(gw_parse_duration(s, 0, 1e300, &secs) == 0);
	CHECK(secs == (double)ms / 1000.0);
}

static void one_hostport(const char *s, unsigned int sel)
{
	char host[64];
	size_t hostlen = sel % 2 ? sizeof(host) : 8;
	unsigned int port = 70000;
	char back[128];
	int r;

	memset(host, 'X', sizeof(host));
	r = gw_parse_hostport(s, host, hostlen, &port);
	check_err(r);
	if (r) {
		CHECK(port == 70000);
		return;
	}
	CHECK(port <= 65535);
	CHECK(memchr(host, '\0', hostlen) != NULL);
	/* A v6 host came in brackets; rebuild the input from the parts. */
	if (s[0] == '[')
		snprintf(back, sizeof(back), "[%s]:", host);
	else {
		CHECK(strchr(host, ':') == NULL);
		snprintf(back, sizeof(back), "%s:", host);
	}
	CHECK(strncmp(s, back, strlen(back)) == 0);
	{
		unsigned long long p;

		CHECK(gw_parse_uint(s + strlen(back), 0, 65535, &p) == 0);
		CHECK(p == port);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int sel;
	char *text, *line, *next;

	if (size < 1)
		return 0;
	sel = data[0];
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	for (line = text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		one_uint(line, sel);
		one_double(line, sel);
		one_duration(line, sel);
		one_prom_duration(line, sel);
		one_hostport(line, sel);
		sel = sel / 5 + 1;
	}
	free(text);
	return 0;
}
