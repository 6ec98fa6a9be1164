/* SPDX-License-Identifier: MIT */
/*
 * ldcache.h - reading the dynamic loader's cache (/etc/ld.so.cache, what
 * `ldconfig -p` prints): which file the loader maps for a library name,
 * so that the eBPF probes can attach to the host's CUDA libraries before
 * any process loads them.
 *
 * The format is glibc's "glibc-ld.so.cache1.1" (written by every glibc
 * since 2.32, alone or after the old "ld.so-1.7.0" table): a header, then
 * nlibs entries of { int32 flags; uint32 key, value; uint32 osversion;
 * uint64 hwcap }, with key (the name, "libcudart.so.13") and value (the
 * path) as offsets of NUL-terminated strings from the start of the new
 * header.  Only that format is read; a cache in the old format alone
 * gives -ENOEXEC.
 *
 * The buffer is untrusted: every offset and string is checked against its
 * length, nothing is read past it, and no entry is handed out twice
 * unless the file lists it twice.
 *
 * Thread safety: pure, no state.
 */
#ifndef GW_LDCACHE_H
#define GW_LDCACHE_H

#include <stddef.h>

#define GW_LDCACHE_PATH	   "/etc/ld.so.cache"
#define GW_LDCACHE_MAX_LEN (64u << 20) /* larger files are refused */

/*
 * Calls cb(ctx, name, path) for every entry of the cache text buf (len
 * bytes, no NUL needed); name and path are NUL-terminated strings inside
 * buf, valid during the call.  Entries whose strings do not end within
 * buf are skipped and counted in *bad when bad is not NULL.  Returns the
 * number of entries handed out, or -ENOEXEC when buf holds no cache in
 * the new format (bad magic, version or sizes), or cb's own negative
 * value, which stops the walk.
 */
__attribute__((warn_unused_result)) int
gw_ldcache_parse(const void *buf, size_t len,
		 int (*cb)(void *ctx, const char *name, const char *path),
		 void *ctx, unsigned int *bad);

#endif
