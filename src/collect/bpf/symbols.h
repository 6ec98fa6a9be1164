/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - instruction pointers to function names, for the CPU
 * profiler.
 *
 * User addresses: the process's executable mappings (/proc/PID/maps); the
 * file behind one is opened as /proc/PID/map_files/START-END (which still
 * works when the file was deleted or replaced) or else through
 * /proc/PID/root (the process's mount namespace: containers).  Its
 * symbols come from .symtab, else .dynsym, else the separate debug file
 * /usr/lib/debug/.build-id/xx/yyyy.debug (in the process's root, then the
 * host's); C++ names are demangled.  Anonymous executable memory (JITs,
 * CPython 3.12 with -X perf) is looked up in /tmp/perf-PID.map, read again
 * when it grows.  Kernel addresses come from /proc/kallsyms.
 *
 * What cannot be named is "[module]" (the mapping's file name) or
 * "[unknown]": a stripped binary, a process that exited before its maps
 * were read.  Nothing here trusts a file: every offset is checked.
 *
 * Caches: files keyed by (device, inode) with their build id, at most
 * max_files (least recently used evicted); processes' mappings at most
 * max_procs, dropped with gw_symbols_forget().  Not thread-safe.
 */
#ifndef GW_BPF_SYMBOLS_H
#define GW_BPF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct gw_symbols;

struct gw_symbols *gw_symbols_new(unsigned int max_files,
				  unsigned int max_procs);
void gw_symbols_free(struct gw_symbols *s);

/* Starts a new round: a process's mappings are read again at most once
 * per round, when an address falls outside the known ones. */
void gw_symbols_round(struct gw_symbols *s);

/* The name of a user address of pid, written to out (always terminated). */
void gw_symbols_user(struct gw_symbols *s, uint32_t pid, uint64_t ip, char *out,
		     size_t outlen);
/* The name of a kernel address. */
void gw_symbols_kernel(struct gw_symbols *s, uint64_t ip, char *out,
		       size_t outlen);

/* The build id (hex) of pid's executable, "" if none; 0 or -errno. */
__attribute__((warn_unused_result)) int
gw_symbols_build_id(struct gw_symbols *s, uint32_t pid, char *out,
		    size_t outlen);

void gw_symbols_forget(struct gw_symbols *s, uint32_t pid);

struct gw_symbols_stats {
	uint64_t files_loaded;
	uint64_t files_evicted;
	uint64_t unknown; /* addresses without a name */
	uint64_t lookups;
};
void gw_symbols_stats(const struct gw_symbols *s, struct gw_symbols_stats *st);

#endif
