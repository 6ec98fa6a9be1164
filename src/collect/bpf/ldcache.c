/* SPDX-License-Identifier: MIT */
/*
 * ldcache.c - glibc's ld.so.cache, the "1.1" format.  See ldcache.h.
 *
 * Layout (glibc's sysdeps/generic/dl-cache.h), all in the host's byte
 * order:
 *
 *   old table (optional)  "ld.so-1.7.0", pad, uint32 nlibs,
 *                         nlibs x { int32 flags; uint32 key, value }
 *   new header            "glibc-ld.so.cache" "1.1", uint32 nlibs,
 *                         uint32 len_strings, uint8 flags, 3 pad,
 *                         uint32 extension_offset, 3 x uint32 unused
 *                         (48 bytes), aligned to 8 after an old table
 *   entries               nlibs x { int32 flags; uint32 key, value;
 *                         uint32 osversion; uint64 hwcap } (24 bytes)
 *   strings               NUL-terminated; key and value are offsets
 *                         from the new header
 */
#include "ldcache.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define OLD_MAGIC     "ld.so-1.7.0"
#define OLD_MAGIC_LEN 11
#define OLD_HDR	      16 /* magic, pad to 4, nlibs */
#define OLD_ENTRY     12
#define NEW_MAGIC     "glibc-ld.so.cache1.1"
#define NEW_MAGIC_LEN 20
#define NEW_HDR	      48
#define NEW_ENTRY     24

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The string at off from base (len bytes from base on), or NULL. */
static const char *str_at(const unsigned char *base, size_t len, uint32_t off)
{
	if (off >= len || !memchr(base + off, '\0', len - off))
		return NULL;
	return (const char *)base + off;
}

int gw_ldcache_parse(const void *buf, size_t len,
		     int (*cb)(void *ctx, const char *name, const char *path),
		     void *ctx, unsigned int *bad)
{
	const unsigned char *p = buf, *h;
	size_t off = 0, hlen;
	uint32_t nlibs;
	int n = 0;

	if (!p || !cb)
		return -EINVAL;
	if (len >= OLD_HDR && memcmp(p, OLD_MAGIC, OLD_MAGIC_LEN) == 0) {
		uint64_t end = OLD_HDR + (uint64_t)get_u32(p + 12) * OLD_ENTRY;

		off = (size_t)((end + 7) & ~(uint64_t)7);
		if (end > len || off > len)
			return -ENOEXEC;
	}
	if (len - off < NEW_HDR ||
	    memcmp(p + off, NEW_MAGIC, NEW_MAGIC_LEN) != 0)
		return -ENOEXEC;
	h = p + off;
	hlen = len - off;
	nlibs = get_u32(h + 20);
	if ((uint64_t)nlibs * NEW_ENTRY > hlen - NEW_HDR)
		return -ENOEXEC;
	for (uint32_t i = 0; i < nlibs; i++) {
		const unsigned char *e = h + NEW_HDR + (size_t)i * NEW_ENTRY;
		const char *name = str_at(h, hlen, get_u32(e + 4));
		const char *path = str_at(h, hlen, get_u32(e + 8));
		int r;

		if (!name || !path) {
			if (bad)
				(*bad)++;
			continue;
		}
		r = cb(ctx, name, path);
		if (r < 0)
			return r;
		if (n < INT32_MAX)
			n++;
	}
	return n;
}
