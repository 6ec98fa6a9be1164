/* SPDX-License-Identifier: MIT */
/*
 * vmlinux.h - the few kernel types cuda.bpf.c uses, written by hand.
 *
 * A full `bpftool btf dump file /sys/kernel/btf/vmlinux format c` is
 * ~135,000 lines and belongs to one kernel build; this header holds only
 * what the probes touch.  Kernel structures are marked preserve_access_index,
 * so every field access is a CO-RE relocation that libbpf resolves against
 * the running kernel's BTF at load time: only field names must match, not
 * layouts.  struct pt_regs is the exception: it is the x86-64 register
 * frame, a stable ABI, and bpf_tracing.h reads it directly.
 *
 * Defining __VMLINUX_H__ makes bpf_tracing.h use the kernel's pt_regs
 * field names (di, si, ...), as with a generated vmlinux.h.
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef int pid_t;
typedef _Bool bool;
enum { false = 0, true = 1 };

/* UAPI constants (include/uapi/linux/bpf.h); stable by definition. */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

enum {
	BPF_F_NO_PREALLOC = 1U << 0,
};

/* x86-64 register frame (arch/x86/include/asm/ptrace.h). */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
};

/* The context of a perf_event program (include/uapi/linux/bpf_perf_event.h). */
struct bpf_perf_event_data {
	struct pt_regs regs;
	__u64 sample_period;
	__u64 addr;
};

#pragma clang attribute push(__attribute__((preserve_access_index)),           \
			     apply_to = record)

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
};

struct task_struct {
	int exit_code;
	pid_t pid;
	pid_t tgid;
	struct signal_struct *signal;
};

struct linux_binprm {
	const char *filename;
};

/*
 * Only its existence matters: kernels whose sched_process_exit
 * tracepoint passes group_dead as a second argument define it.
 */
struct trace_event_raw_sched_process_exit {
	bool group_dead;
};

#pragma clang attribute pop

#endif
