/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - user stacks without frame pointers: a sample's user registers
 * and a copy of the top of its stack (profile.bpf.c's raw samples) are
 * unwound with elfutils' libdwfl from the call frame information
 * (.eh_frame, .debug_frame) of the files the process maps, as
 * `perf --call-graph dwarf` does.
 *
 * The process's module list is read once (/proc/PID/maps) and kept, at
 * most max_procs processes (the least recently used leave); a process
 * whose maps can no longer be read (it exited) unwinds to its leaf only.
 * Memory beyond the copied stack is never read: the unwind stops there.
 *
 * Also here: gw_unwind_has_fp(), whether an executable keeps frame
 * pointers (its functions start with push %rbp; mov %rsp,%rbp).
 *
 * Not thread-safe.
 */
#ifndef GW_BPF_UNWIND_H
#define GW_BPF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct gw_unwind;

struct gw_unwind *gw_unwind_new(unsigned int max_procs);
void gw_unwind_free(struct gw_unwind *u);

/*
 * Unwinds one sample of pid: regs in DWARF x86-64 order (rax rdx rcx rbx
 * rsi rdi rbp rsp r8..r15 rip), stack the len bytes copied from regs[7]
 * (rsp) up.  Writes at most max return addresses, leaf first (the leaf is
 * regs[16]); returns how many (>= 1).
 */
unsigned int gw_unwind_stack(struct gw_unwind *u, uint32_t pid,
			     const uint64_t regs[17], const void *stack,
			     size_t len, uint64_t *ips, unsigned int max);

/* The process exited or exec'd: drop its module list. */
void gw_unwind_forget(struct gw_unwind *u, uint32_t pid);

/*
 * 1 when the executable of pid keeps frame pointers, 0 when it does not
 * or cannot be told (stripped, unreadable), -errno when it cannot be read.
 */
int gw_unwind_has_fp(uint32_t pid);

#endif
