/* SPDX-License-Identifier: MIT */
/*
 * hash.h - FNV-1a, 64 bits: the hash of hash tables keyed by label sets,
 * names and URLs.  Not collision-resistant: a caller compares the keys
 * themselves after the hashes match, and never lets a hash alone decide
 * anything an untrusted input could aim at.  The values are stable (an
 * endpoint's state file is named by its URL's hash).
 *
 * gw_hash_str: XXH3 (libxxhash), eight bytes at a time, for the hot
 * in-memory tables (the store's series index): its values may change
 * with the library, so nothing kept on disk is keyed by it.
 */
#ifndef GW_HASH_H
#define GW_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Header-only: inlined, nothing to link. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define GW_FNV1A64_BASIS 0xcbf29ce484222325ull
#define GW_FNV1A64_PRIME 0x100000001b3ull

/* Over the n bytes at p. */
static inline uint64_t gw_fnv1a64(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = GW_FNV1A64_BASIS;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= GW_FNV1A64_PRIME;
	}
	return h;
}

/* Over a NUL-terminated string, without the NUL. */
static inline uint64_t gw_fnv1a64_str(const char *s)
{
	uint64_t h = GW_FNV1A64_BASIS;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= GW_FNV1A64_PRIME;
	}
	return h;
}

/* Over a NUL-terminated string, without the NUL; in memory only. */
static inline uint64_t gw_hash_str(const char *s)
{
	return XXH3_64bits(s, strlen(s));
}

#endif
