// SPDX-License-Identifier: MIT
/*
 * fuzz_promql.c - the PromQL parser on arbitrary text.
 *
 * Beyond not crashing or leaking: a failure is -EINVAL with a message in
 * Prometheus' form ("L:C: parse error: ...") and a position inside the
 * query; a success formats to a canonical text that parses again and
 * formats identically, with the same static type (unless the added
 * parentheses take it past the nesting limit).  The selector parser
 * and the duration parser see the same text.  The whole input, NUL bytes
 * included, goes to gw_promql_parse_len: a NUL is an error (in a comment
 * too), and every error message is valid UTF-8 whatever the input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "fuzz.h"
#include "query/promql.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static void check_error(const char *q, const struct gw_promql_error *e)
{
	unsigned line, col;
	int used = 0;

	CHECK(e->pos <= strlen(q));
	CHECK(sscanf(e->msg, "%u:%u: parse error: %n", &line, &col, &used) ==
	      2);
	CHECK(used > 0 && e->msg[used] != '\0');
	CHECK(line >= 1 && col >= 1);
	for (const char *p = e->msg; *p;) {
		size_t u =
			gw_utf8_len((const unsigned char *)p, SIZE_MAX, NULL);

		CHECK(u > 0);
		p += u;
	}
}

/* The raw bytes: with a NUL among them, parsing fails. */
static void one_raw(const uint8_t *data, size_t size)
{
	struct gw_promql_error e;
	struct gw_pq_node *n = NULL;
	int r = gw_promql_parse_len((const char *)data, size, &n, &e);

	if (r == 0) {
		CHECK(!memchr(data, 0, size));
		gw_promql_free(n);
		return;
	}
	CHECK(n == NULL);
	CHECK(r == -EINVAL || r == -ENOMEM);
	if (r == -EINVAL)
		for (const char *p = e.msg; *p;) {
			size_t u = gw_utf8_len((const unsigned char *)p,
					       SIZE_MAX, NULL);

			CHECK(u > 0);
			p += u;
		}
}

static char *format(const struct gw_pq_node *n)
{
	struct gw_buf b;
	size_t len;
	int r;

	gw_buf_init(&b, 1u << 22);
	r = gw_promql_format(n, &b);
	if (r) {
		/* Only memory may run short, never the logic. */
		CHECK(r == -ENOMEM);
		gw_buf_release(&b);
		return NULL;
	}
	return gw_buf_detach(&b, &len);
}

static void one_query(const char *q)
{
	struct gw_promql_error e;
	struct gw_pq_node *n = NULL, *n2 = NULL;
	char *f1, *f2;
	int r = gw_promql_parse(q, &n, &e);

	if (r) {
		CHECK(r == -EINVAL || r == -ENOMEM);
		CHECK(n == NULL);
		if (r == -EINVAL)
			check_error(q, &e);
		return;
	}
	CHECK(n != NULL);
	f1 = format(n);
	if (!f1)
		goto out;
	r = gw_promql_parse(f1, &n2, &e);
	/* The canonical form adds parentheses, which count as nesting: near
	 * GW_PROMQL_MAX_DEPTH it may pass the limit. */
	if (r == -ENOMEM || (r == -EINVAL && strstr(e.msg, "nests too deeply")))
		goto out;
	if (r) {
		fprintf(stderr,
			"canonical form does not parse:\n  %s\n  %s\n  %s\n", q,
			f1, e.msg);
		abort();
	}
	CHECK(n2->type == n->type);
	f2 = format(n2);
	if (f2 && strcmp(f1, f2) != 0) {
		fprintf(stderr, "format not stable:\n  %s\n  %s\n  %s\n", q, f1,
			f2);
		abort();
	}
	free(f2);
out:
	free(f1);
	gw_promql_free(n);
	gw_promql_free(n2);
}

static void one_selector(const char *q)
{
	struct gw_promql_error e;
	struct gw_matcher *m = NULL;
	size_t nm = 0;
	int r = gw_promql_parse_selector(q, &m, &nm, &e);

	if (r) {
		CHECK(m == NULL && nm == 0);
		if (r == -EINVAL)
			check_error(q, &e);
		return;
	}
	CHECK(nm >= 1);
	gw_matchers_free(m, nm);
}

static void one_duration(const char *q)
{
	int64_t ms = -1;
	int r = gw_promql_duration(q, &ms);

	if (r) {
		CHECK(r == -EINVAL && ms == -1);
		return;
	}
	CHECK(ms >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *q;

	if (size > GW_PROMQL_MAX_QUERY + 16)
		return 0;
	q = malloc(size + 1);
	if (!q)
		return 0;
	memcpy(q, data, size);
	q[size] = '\0';
	one_raw(data, size);
	one_query(q);
	one_selector(q);
	one_duration(q);
	free(q);
	return 0;
}
