/* SPDX-License-Identifier: MIT */
/*
 * unwind.c - DWARF unwinding of copied user stacks with libdwfl.  See
 * unwind.h.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/bpf/unwind.h"

#define NREGS 17

/* What the callbacks read: the sample being unwound. */
struct sample {
	uint32_t pid;
	const uint64_t *regs;
	const unsigned char *stack;
	size_t len;
	uint64_t *ips;
	unsigned int n, max;
};

struct proc {
	uint32_t pid;
	Dwfl *dwfl; /* NULL: the maps could not be read */
	uint64_t used;
	struct sample *cur; /* the sample the callbacks see */
};

struct gw_unwind {
	struct proc *procs;
	unsigned int nprocs, max;
	uint64_t clock;
};

static char *debuginfo_path;

static const Dwfl_Callbacks dwfl_cb = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct proc *p = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return (pid_t)p->pid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct proc *p = arg;
	const struct sample *s = p->cur;
	uint64_t sp = s->regs[7];

	(void)dwfl;
	if (addr < sp || addr - sp + sizeof(*result) > s->len)
		return false;
	memcpy(result, s->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct proc *p = thread_arg;
	Dwarf_Word regs[NREGS];

	for (int i = 0; i < NREGS; i++)
		regs[i] = p->cur->regs[i];
	if (!dwfl_thread_state_registers(thread, 0, NREGS, regs))
		return false;
	dwfl_thread_state_register_pc(thread, regs[16]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_cb = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct gw_unwind *gw_unwind_new(unsigned int max_procs)
{
	struct gw_unwind *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->max = max_procs ? max_procs : 64;
	u->procs = calloc(u->max, sizeof(*u->procs));
	if (!u->procs) {
		free(u);
		return NULL;
	}
	return u;
}

static void proc_release(struct proc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	memset(p, 0, sizeof(*p));
}

void gw_unwind_free(struct gw_unwind *u)
{
	if (!u)
		return;
	for (unsigned int i = 0; i < u->nprocs; i++)
		proc_release(&u->procs[i]);
	free(u->procs);
	free(u);
}

void gw_unwind_forget(struct gw_unwind *u, uint32_t pid)
{
	for (unsigned int i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid) {
			proc_release(&u->procs[i]);
			u->procs[i] = u->procs[--u->nprocs];
			memset(&u->procs[u->nprocs], 0, sizeof(u->procs[0]));
			return;
		}
}

/* The module list of pid, attached for unwinding; NULL when unreadable. */
static struct proc *get_proc(struct gw_unwind *u, uint32_t pid)
{
	struct proc *p = NULL;
	Dwfl *d;

	u->clock++;
	for (unsigned int i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid) {
			u->procs[i].used = u->clock;
			return &u->procs[i];
		}
	if (u->nprocs < u->max) {
		p = &u->procs[u->nprocs++];
	} else {
		p = &u->procs[0];
		for (unsigned int i = 1; i < u->nprocs; i++)
			if (u->procs[i].used < p->used)
				p = &u->procs[i];
		proc_release(p);
	}
	p->pid = pid;
	p->used = u->clock;
	d = dwfl_begin(&dwfl_cb);
	if (!d)
		return p;
	dwfl_report_begin(d);
	if (dwfl_linux_proc_report(d, (pid_t)pid) != 0 ||
	    dwfl_report_end(d, NULL, NULL) != 0 ||
	    !dwfl_attach_state(d, NULL, (pid_t)pid, &thread_cb, p)) {
		dwfl_end(d);
		return p;
	}
	p->dwfl = d;
	return p;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct sample *s = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	/* A return address points after the call: name the call. */
	if (!activation && s->n > 0)
		pc--;
	s->ips[s->n++] = pc;
	return s->n == s->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

unsigned int gw_unwind_stack(struct gw_unwind *u, uint32_t pid,
			     const uint64_t regs[17], const void *stack,
			     size_t len, uint64_t *ips, unsigned int max)
{
	struct sample s = {
		.pid = pid,
		.regs = regs,
		.stack = stack,
		.len = len,
		.ips = ips,
		.max = max,
	};
	struct proc *p;

	if (max == 0)
		return 0;
	p = get_proc(u, pid);
	if (p && p->dwfl) {
		p->cur = &s;
		/* -1 when the walk stops early: what was found is kept. */
		(void)!dwfl_getthread_frames(p->dwfl, (pid_t)pid, frame_cb, &s);
		p->cur = NULL;
	}
	if (s.n == 0)
		ips[s.n++] = regs[16];
	return s.n;
}

/* ---- frame pointers ---- */

/* push %rbp; mov %rsp,%rbp, after an optional endbr64. */
static bool fp_prologue(const unsigned char *b)
{
	static const unsigned char endbr[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const unsigned char pro[4] = { 0x55, 0x48, 0x89, 0xe5 };

	if (memcmp(b, endbr, 4) == 0)
		b += 4;
	return memcmp(b, pro, 4) == 0;
}

int gw_unwind_has_fp(uint32_t pid)
{
	char path[64];
	Elf *e;
	Elf_Scn *scn = NULL;
	unsigned int checked = 0, with = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e) {
		close(fd);
		return -EINVAL;
	}
	while ((scn = elf_nextscn(e, scn)) && checked < 64) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t cnt;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    sh.sh_entsize == 0)
			continue;
		d = elf_getdata(scn, NULL);
		cnt = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < cnt && checked < 64; i++) {
			GElf_Sym sm;
			GElf_Shdr ts;
			Elf_Scn *text;
			unsigned char b[8];
			off_t off;

			if (!gelf_getsym(d, (int)i, &sm) ||
			    GELF_ST_TYPE(sm.st_info) != STT_FUNC ||
			    sm.st_size < 16 || sm.st_shndx == SHN_UNDEF ||
			    sm.st_shndx >= SHN_LORESERVE)
				continue;
			text = elf_getscn(e, sm.st_shndx);
			if (!text || !gelf_getshdr(text, &ts) ||
			    ts.sh_type != SHT_PROGBITS ||
			    sm.st_value < ts.sh_addr ||
			    sm.st_value + 8 > ts.sh_addr + ts.sh_size)
				continue;
			off = (off_t)(ts.sh_offset +
				      (sm.st_value - ts.sh_addr));
			if (pread(fd, b, sizeof(b), off) != (ssize_t)sizeof(b))
				continue;
			checked++;
			with += fp_prologue(b);
		}
	}
	elf_end(e);
	close(fd);
	/* Most functions set up a frame where the compiler keeps them. */
	return checked >= 4 && with * 2 >= checked;
}
