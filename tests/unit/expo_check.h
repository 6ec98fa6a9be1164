/* SPDX-License-Identifier: MIT */
/*
 * expo_check.h - for the unit tests that render an exposition: every
 * series (name and set of labels, in any order) must appear once, as
 * Prometheus requires of a scrape.  The integration tests do the same
 * with tests/integration/unique-series.awk on every /metrics they read.
 *
 *   assert_unique_series(text);
 *
 * Header-only (static functions): include it after <cmocka.h>.
 */
#ifndef GW_TEST_EXPO_CHECK_H
#define GW_TEST_EXPO_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct expo_label {
	const char *p;
	size_t n;
};

static int expo_label_cmp(const void *a, const void *b)
{
	const struct expo_label *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->p, y->p, n);

	return c ? c : (x->n > y->n) - (x->n < y->n);
}

static int expo_key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The series key of one sample line (len bytes): the name, then the
 * labels sorted, as one malloc'd string; NULL for a line that is not a
 * sample.
 */
static char *expo_series_key(const char *l, size_t len)
{
	struct expo_label lab[64];
	size_t nlab = 0, name, o = 0;
	const char *p = l, *end = l + len;
	char *key;

	if (!len || l[0] == '#')
		return NULL;
	while (p < end && *p != '{' && *p != ' ')
		p++;
	name = (size_t)(p - l);
	if (p < end && *p == '{') {
		p++;
		while (p < end && *p != '}' && nlab < 64) {
			const char *s = p;

			while (p < end && *p != '=')
				p++;
			if (p + 1 >= end || p[1] != '"')
				break;
			for (p += 2; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= end)
				break;
			p++; /* the closing quote */
			lab[nlab++] = (struct expo_label){ s, (size_t)(p - s) };
			if (p < end && *p == ',')
				p++;
		}
	}
	qsort(lab, nlab, sizeof(*lab), expo_label_cmp);
	key = malloc(len + 3);
	if (!key)
		return NULL;
	memcpy(key, l, name);
	o = name;
	key[o++] = '{';
	for (size_t i = 0; i < nlab; i++) {
		if (i)
			key[o++] = ',';
		memcpy(key + o, lab[i].p, lab[i].n);
		o += lab[i].n;
	}
	key[o++] = '}';
	key[o] = '\0';
	return key;
}

/*
 * The number of series that appear more than once in text; the first
 * such key is copied into first (firstlen bytes) when given.
 */
static size_t count_duplicate_series(const char *text, char *first,
				     size_t firstlen)
{
	size_t n = 0, cap = 0, dups = 0;
	char **keys = NULL;

	if (first && firstlen)
		first[0] = '\0';
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		char *k = expo_series_key(l, len);

		if (k) {
			if (n == cap) {
				char **nk;

				cap = cap ? 2 * cap : 256;
				nk = realloc(keys, cap * sizeof(*keys));
				if (!nk) {
					free(k);
					break;
				}
				keys = nk;
			}
			keys[n++] = k;
		}
		l = nl ? nl + 1 : NULL;
	}
	if (n > 1)
		qsort(keys, n, sizeof(*keys), expo_key_cmp);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(keys[i], keys[i - 1]) != 0)
			continue;
		if (!dups && first && firstlen)
			snprintf(first, firstlen, "%s", keys[i]);
		dups++;
	}
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return dups;
}

static void assert_unique_series(const char *text)
{
	char first[512];

	if (count_duplicate_series(text, first, sizeof(first)))
		fail_msg("the exposition repeats a series: %s", first);
}

#endif
