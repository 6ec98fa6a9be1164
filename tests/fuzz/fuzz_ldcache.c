// SPDX-License-Identifier: MIT
/*
 * fuzz_ldcache.c - gw_ldcache_parse() on arbitrary bytes as
 * /etc/ld.so.cache.
 *
 * The input is copied into a buffer of exactly its size, so a read past
 * the end is an ASan report.  Beyond not crashing: every name and path
 * handed out lies inside the buffer and ends there with a NUL; the count
 * returned is the number of calls, or -ENOEXEC with no call at all; a
 * callback that stops the walk stops it at once; and a second parse gives
 * the same answer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collect/bpf/ldcache.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

struct walk {
	const char *buf;
	size_t len;
	unsigned int calls, stop_at;
	unsigned long sum; /* of name and path lengths */
};

static void inside(const struct walk *w, const char *s)
{
	size_t n;

	CHECK(s >= w->buf && s < w->buf + w->len);
	n = strnlen(s, (size_t)(w->buf + w->len - s));
	CHECK(s + n < w->buf + w->len);
}

static int cb(void *ctx, const char *name, const char *path)
{
	struct walk *w = ctx;

	inside(w, name);
	inside(w, path);
	w->sum += strlen(name) + strlen(path);
	w->calls++;
	if (w->stop_at && w->calls == w->stop_at)
		return -ECANCELED;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct walk w = { 0 }, again = { 0 }, stop = { 0 };
	unsigned int bad = 0, bad2 = 0;
	char *buf = malloc(size ? size : 1);
	int r, r2;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	w.buf = again.buf = stop.buf = buf;
	w.len = again.len = stop.len = size;
	r = gw_ldcache_parse(buf, size, cb, &w, &bad);
	if (r == -ENOEXEC) {
		CHECK(w.calls == 0 && bad == 0);
	} else {
		CHECK(r >= 0 && (unsigned int)r == w.calls);
	}
	r2 = gw_ldcache_parse(buf, size, cb, &again, &bad2);
	CHECK(r2 == r && bad2 == bad && again.sum == w.sum);
	if (w.calls > 1) {
		stop.stop_at = 1;
		CHECK(gw_ldcache_parse(buf, size, cb, &stop, NULL) ==
		      -ECANCELED);
		CHECK(stop.calls == 1);
	}
	free(buf);
	return 0;
}
