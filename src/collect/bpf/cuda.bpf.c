/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * cuda.bpf.c - the kernel side of the eBPF collector.
 *
 * Two generic programs serve every probed CUDA symbol: gw_entry (uprobe)
 * and gw_return (uretprobe).  Which API a hit belongs to, and what to do
 * with its arguments, comes from the attach cookie (cuda_bpf.h), set per
 * symbol by the loader from its API table (probes_api.c).  Everything is
 * aggregated here; userspace reads the maps, and only rare events go
 * through a ring buffer.
 *
 *   entry   count a hit; remember {start, epoch, args 1-4} per thread and
 *           symbol in `inflight`; a free is matched at entry (so that an
 *           address reused by another thread's allocation before this
 *           return runs is not lost)
 *   return  latency = now - start; per (tgid, api) in `stats`: calls,
 *           errors, bytes, copy bytes by kind, total and sync time, log2
 *           histogram; per (tgid, api, code) in `errors`; a successful
 *           allocation reads the pointer written through argument 1 and
 *           enters (tgid, ptr) in `allocs`; errors raise a rate-limited
 *           API_ERROR event; a process's first call raises FIRST_CALL
 *   exec    (sched_process_exec) EXEC event (tgid, comm, filename) for
 *           every exec; a process known here starts a new generation of
 *           allocations
 *   exit    (sched_process_exit) when the thread group dies and the
 *           process is known here: remove it from `procs`, EXIT event
 *
 * Counts never depend on events: a full ring buffer or the rate limit
 * only loses the event, and is counted in `counters`.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cuda_bpf.h"

#define NSEC_PER_SEC 1000000000ull
/* cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY alike */
#define CUDA_ERROR_OOM 2

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before load. */
const volatile __u32 error_events_per_sec = 10;
const volatile __u32 oom_events_per_sec = 10;

/*
 * Bumped by the loader each time the high-rate probes are attached again:
 * a high-rate return whose entry was recorded in an older epoch belongs to
 * a call whose return probe was missing for a while, and is not counted.
 */
__u64 epoch = 0;

static const struct gw_bpf_stat zero_stat;

/* Sizes are the defaults; the loader sets them from its options. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct gw_bpf_inflight_key);
	__type(value, struct gw_bpf_inflight);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct gw_bpf_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 32768);
	__type(key, struct gw_bpf_stat_key);
	__type(value, struct gw_bpf_stat);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct gw_bpf_err_key);
	__type(value, __u64);
} errors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 262144);
	__type(key, struct gw_bpf_alloc_key);
	__type(value, struct gw_bpf_alloc);
} allocs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct gw_bpf_rate);
} ratelimit SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GW_BPF_CTR_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* EXIT, API_ERROR and FIRST_CALL events. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* EXEC events: many on a busy node, so they cannot crowd out exits. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} execs SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* floor(log2(v)), 0 for v <= 1. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r, shift;

	r = (v > 0xffffffffull) << 5;
	v >>= r;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (__u32)(v >> 1);
	return r;
}

/*
 * A process enters `procs`: tell userspace while the process is most likely
 * still alive, so that its attribution (/proc/PID) can be read even when it
 * runs for a few milliseconds.
 */
static __always_inline void first_call_event(__u32 tgid)
{
	struct gw_bpf_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(GW_BPF_CTR_DROPPED_EVENTS);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = GW_BPF_EV_FIRST_CALL;
	e->pid = tgid;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline struct gw_bpf_proc *get_proc(__u32 tgid)
{
	struct gw_bpf_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	struct gw_bpf_proc n = {};
	long r;

	if (p)
		return p;
	n.gen = bpf_ktime_get_ns();
	r = bpf_map_update_elem(&procs, &tgid, &n, BPF_NOEXIST);
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p && r)
		count(GW_BPF_CTR_DROPPED_PIDS);
	if (p && !r)
		first_call_event(tgid);
	return p;
}

static __always_inline struct gw_bpf_stat *get_stat(__u32 tgid, __u32 api)
{
	struct gw_bpf_stat_key k = { .tgid = tgid, .api = api };
	struct gw_bpf_stat *s = bpf_map_lookup_elem(&stats, &k);

	if (s)
		return s;
	bpf_map_update_elem(&stats, &k, &zero_stat, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&stats, &k);
	if (!s)
		count(GW_BPF_CTR_DROPPED_STATS);
	return s;
}

static __always_inline void count_error(__u32 tgid, __u32 api, __s32 code)
{
	struct gw_bpf_err_key k = { .tgid = tgid, .api = api, .code = code };
	__u64 one = 1, *c = bpf_map_lookup_elem(&errors, &k);

	if (c) {
		__sync_fetch_and_add(c, 1);
		return;
	}
	if (!bpf_map_update_elem(&errors, &k, &one, BPF_NOEXIST))
		return;
	/* Lost the race to another CPU, or the map is full. */
	c = bpf_map_lookup_elem(&errors, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	else
		count(GW_BPF_CTR_DROPPED_STATS);
}

/* May tgid raise one more error event in this second? */
static __always_inline bool rate_ok(__u32 tgid, bool oom)
{
	struct gw_bpf_rate n = {}, *r;
	__u64 now = bpf_ktime_get_ns();

	r = bpf_map_lookup_elem(&ratelimit, &tgid);
	if (!r) {
		n.window_ns = now;
		bpf_map_update_elem(&ratelimit, &tgid, &n, BPF_NOEXIST);
		r = bpf_map_lookup_elem(&ratelimit, &tgid);
		if (!r)
			return false;
	}
	/* Races between CPUs only blur the limit, never a count. */
	if (now - r->window_ns >= NSEC_PER_SEC) {
		r->window_ns = now;
		r->errors = 0;
		r->ooms = 0;
	}
	if (oom) {
		if (r->ooms >= oom_events_per_sec)
			return false;
		r->ooms++;
	} else {
		if (r->errors >= error_events_per_sec)
			return false;
		r->errors++;
	}
	return true;
}

static __always_inline void error_event(__u32 tgid, __u32 api, __s32 code,
					__u64 size, struct gw_bpf_proc *p)
{
	bool oom = code == CUDA_ERROR_OOM;
	struct gw_bpf_event *e;

	if (!rate_ok(tgid, oom)) {
		count(GW_BPF_CTR_RATELIMITED);
		return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(GW_BPF_CTR_DROPPED_EVENTS);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = GW_BPF_EV_API_ERROR;
	e->pid = tgid;
	e->api = api;
	e->code = code;
	e->size = size;
	e->live_bytes = p->live_bytes;
	e->flags = oom ? GW_BPF_EVF_OOM : 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void proc_add(struct gw_bpf_proc *p, __u64 size,
				     __u32 flags, int sign)
{
	__u64 bytes = sign > 0 ? size : -size, n = sign > 0 ? 1 : -1ull;

	if (flags & GW_BPF_F_HOST) {
		__sync_fetch_and_add(&p->host_bytes, bytes);
		__sync_fetch_and_add(&p->host_allocs, n);
	} else {
		__sync_fetch_and_add(&p->live_bytes, bytes);
		__sync_fetch_and_add(&p->live_allocs, n);
	}
}

/* A successful allocation: *pp now holds the address. */
static __always_inline void track(struct gw_bpf_proc *p, __u32 tgid, __u32 api,
				  __u64 pp, __u64 size, __u32 flags)
{
	struct gw_bpf_alloc_key k = { .tgid = tgid };
	struct gw_bpf_alloc v = {}, *old;
	__u64 ptr = 0;

	if (!pp || !size)
		return;
	if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)pp) || !ptr)
		return;
	k.ptr = ptr;
	/*
	 * The address is already known when the runtime's allocation went
	 * through a probed driver call, or a free went unseen: replace it.
	 */
	old = bpf_map_lookup_elem(&allocs, &k);
	if (old && old->gen == p->gen)
		proc_add(p, old->size, old->flags, -1);
	v.size = size;
	v.ts_ns = bpf_ktime_get_ns();
	v.gen = p->gen;
	v.api = api;
	v.flags = flags & GW_BPF_F_HOST;
	if (bpf_map_update_elem(&allocs, &k, &v, BPF_ANY)) {
		count(GW_BPF_CTR_DROPPED_ALLOCS);
		if (old)
			bpf_map_delete_elem(&allocs, &k);
		return;
	}
	proc_add(p, size, v.flags, 1);
}

static __always_inline void untrack(__u32 tgid, __u64 ptr)
{
	struct gw_bpf_alloc_key k = { .tgid = tgid, .ptr = ptr };
	struct gw_bpf_alloc *a;
	struct gw_bpf_proc *p;
	__u64 size, gen;
	__u32 flags;

	if (!ptr)
		return;
	a = bpf_map_lookup_elem(&allocs, &k);
	if (!a)
		return;
	size = a->size;
	gen = a->gen;
	flags = a->flags;
	/* Only the CPU that deletes it accounts for it. */
	if (bpf_map_delete_elem(&allocs, &k))
		return;
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (p && p->gen == gen)
		proc_add(p, size, flags, -1);
}

SEC("uprobe")
int gw_entry(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct gw_bpf_inflight_key k = {};
	struct gw_bpf_inflight *f, n;

	count(GW_BPF_CTR_HITS);
	k.pid_tgid = bpf_get_current_pid_tgid();
	k.sym = GW_BPF_COOKIE_SYM(cookie);
	if (GW_BPF_COOKIE_OP(cookie) == GW_BPF_OP_FREE)
		untrack(k.pid_tgid >> 32, PT_REGS_PARM1(ctx));
	f = bpf_map_lookup_elem(&inflight, &k);
	if (!f) {
		__builtin_memset(&n, 0, sizeof(n));
		n.epoch = epoch;
		n.arg[0] = PT_REGS_PARM1(ctx);
		n.arg[1] = PT_REGS_PARM2(ctx);
		n.arg[2] = PT_REGS_PARM3(ctx);
		n.arg[3] = PT_REGS_PARM4(ctx);
		n.start_ns = bpf_ktime_get_ns();
		bpf_map_update_elem(&inflight, &k, &n, BPF_ANY);
		return 0;
	}
	/* This thread's own entry: nobody else writes it. */
	f->epoch = epoch;
	f->arg[0] = PT_REGS_PARM1(ctx);
	f->arg[1] = PT_REGS_PARM2(ctx);
	f->arg[2] = PT_REGS_PARM3(ctx);
	f->arg[3] = PT_REGS_PARM4(ctx);
	f->start_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe")
int gw_return(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), now = bpf_ktime_get_ns();
	__u32 op = GW_BPF_COOKIE_OP(cookie), api = GW_BPF_COOKIE_API(cookie);
	__u32 flags = GW_BPF_COOKIE_FLAGS(cookie), tgid, kind;
	struct gw_bpf_inflight_key k = {};
	__u64 start, ns, arg0, arg1, arg2, arg3, size = 0;
	struct gw_bpf_inflight *f;
	struct gw_bpf_proc *p;
	struct gw_bpf_stat *s;
	__s32 rc;

	k.pid_tgid = bpf_get_current_pid_tgid();
	k.sym = GW_BPF_COOKIE_SYM(cookie);
	f = bpf_map_lookup_elem(&inflight, &k);
	if (!f || !f->start_ns)
		return 0;
	start = f->start_ns;
	f->start_ns = 0;
	if ((flags & GW_BPF_F_HIGH_RATE) && f->epoch != epoch) {
		count(GW_BPF_CTR_STALE);
		return 0;
	}
	arg0 = f->arg[0];
	arg1 = f->arg[1];
	arg2 = f->arg[2];
	arg3 = f->arg[3];
	ns = now > start ? now - start : 0;
	rc = (__s32)PT_REGS_RC(ctx);
	tgid = k.pid_tgid >> 32;

	p = get_proc(tgid);
	if (!p)
		return 0;
	if (op == GW_BPF_OP_ALLOC)
		size = arg1;
	else if (op == GW_BPF_OP_COPY)
		size = arg2;
	else if (op == GW_BPF_OP_MEMSET)
		size = arg2 << (GW_BPF_COOKIE_SHIFT(cookie) & 7);

	s = get_stat(tgid, api);
	if (s) {
		__u32 b = log2_u64(ns);

		__sync_fetch_and_add(&s->calls, 1);
		__sync_fetch_and_add(&s->ns_total, ns);
		__sync_fetch_and_add(
			&s->hist[b < GW_BPF_HIST_BUCKETS
					 ? b
					 : GW_BPF_HIST_BUCKETS - 1],
			1);
		if (op == GW_BPF_OP_SYNC)
			__sync_fetch_and_add(&s->sync_ns, ns);
		if (rc) {
			__sync_fetch_and_add(&s->errors, 1);
		} else if (size) {
			__sync_fetch_and_add(&s->bytes, size);
			if (op == GW_BPF_OP_COPY) {
				kind = flags & GW_BPF_F_KIND_ARG
					       ? (__u32)arg3
					       : GW_BPF_COOKIE_KIND(cookie);
				if (kind >= GW_BPF_COPY_KINDS)
					kind = GW_BPF_COPY_DEFAULT;
				__sync_fetch_and_add(&s->copy_bytes[kind],
						     size);
			}
		}
	}
	if (rc) {
		count_error(tgid, api, rc);
		error_event(tgid, api, rc, size, p);
	} else if (op == GW_BPF_OP_ALLOC) {
		track(p, tgid, api, arg0, arg1, flags);
	}
	return 0;
}

/* tp_btf: raw tracepoints need no tracefs mounted. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(gw_exec, struct task_struct *task, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gw_bpf_event *e;
	struct gw_bpf_proc *p;
	__u64 live = 0;
	bool had = false;

	/* The old image's GPU memory went with its address space. */
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (p) {
		had = true;
		live = p->live_bytes;
		p->gen = bpf_ktime_get_ns();
		p->live_bytes = 0;
		p->live_allocs = 0;
		p->host_bytes = 0;
		p->host_allocs = 0;
	}
	e = bpf_ringbuf_reserve(&execs, sizeof(*e), 0);
	if (!e) {
		count(GW_BPF_CTR_DROPPED_EXECS);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = GW_BPF_EV_EXEC;
	e->pid = tgid;
	e->live_bytes = live;
	e->flags = had ? GW_BPF_EVF_HAD_GPU : 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename),
				  BPF_CORE_READ(bprm, filename));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(gw_exit, struct task_struct *task)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gw_bpf_event *e;
	struct gw_bpf_proc *p;
	__u64 live;
	bool dead;
	int code;

	/*
	 * Fires for every thread; the process is gone with its last one.
	 * Newer kernels pass group_dead; on older ones signal->live has
	 * reached 0 (two exiting threads can both read 0: deleting the
	 * procs entry below decides which one reports).  The branch not
	 * taken on this kernel is dead code to the verifier.
	 */
	if (bpf_core_field_exists(struct trace_event_raw_sched_process_exit,
				  group_dead))
		dead = (bool)ctx[1];
	else
		dead = BPF_CORE_READ(task, signal, live.counter) == 0;
	if (!dead)
		return 0;
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 0;
	live = p->live_bytes;
	if (bpf_map_delete_elem(&procs, &tgid))
		return 0;
	bpf_map_delete_elem(&ratelimit, &tgid);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(GW_BPF_CTR_DROPPED_EVENTS);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	code = BPF_CORE_READ(task, exit_code);
	e->type = GW_BPF_EV_EXIT;
	e->pid = tgid;
	e->exit_code = (code >> 8) & 0xff;
	e->signal = code & 0x7f;
	e->flags = code & 0x80 ? GW_BPF_EVF_COREDUMP : 0;
	e->live_bytes = live;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}
