/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - addresses to names for the CPU profiler.  See symbols.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifdef GW_HAVE_DEMANGLE
#include <libiberty/demangle.h>
#endif

#include "collect/bpf/symbols.h"

#define MAX_SYMS      (1u << 21) /* per file */
#define MAX_STRS      (64u << 20)
#define MAX_MAPS      1024	 /* executable mappings per process */
#define MAX_PERF_SYMS (1u << 20) /* per process */
#define BUILD_ID_MAX  64	 /* hex digits */

struct sym {
	uint64_t addr, size;
	uint32_t name; /* offset into strs */
};

struct segment {
	uint64_t off, vaddr, filesz;
};

struct file {
	dev_t dev;
	ino_t ino;
	uint64_t used; /* round of last use */
	char build_id[BUILD_ID_MAX + 1];
	struct sym *syms;
	uint32_t nsyms;
	char *strs;
	size_t nstrs;
	struct segment seg[16];
	unsigned int nseg;
};

#define FILE_LAZY (-3) /* a file not looked at yet */

struct map {
	uint64_t start, end, off;
	int file;      /* index into files, -1 none (anonymous or gone),
			  FILE_LAZY: loaded at the first lookup in it */
	char *path;    /* the file's path in the process's namespace */
	char base[64]; /* file name, "" for anonymous */
	dev_t dev;
	ino_t ino;
};

struct proc {
	uint32_t pid;
	uint64_t read_round; /* maps last read */
	struct map *maps;
	unsigned int nmaps;
	/* /tmp/perf-PID.map */
	struct sym *perf;
	uint32_t nperf;
	char *perf_strs;
	size_t perf_nstrs;
	off_t perf_size; /* the file's size when read */
	uint64_t perf_round;
};

struct gw_symbols {
	struct file *files;
	unsigned int nfiles, max_files;
	struct proc *procs;
	unsigned int nprocs, max_procs;
	uint64_t round;
	struct sym *ksyms;
	uint32_t nksyms;
	char *kstrs;
	int kloaded;
	struct gw_symbols_stats st;
};

struct gw_symbols *gw_symbols_new(unsigned int max_files,
				  unsigned int max_procs)
{
	struct gw_symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->max_files = max_files ? max_files : 256;
	s->max_procs = max_procs ? max_procs : 1024;
	s->files = calloc(s->max_files, sizeof(*s->files));
	s->procs = calloc(s->max_procs, sizeof(*s->procs));
	if (!s->files || !s->procs) {
		gw_symbols_free(s);
		return NULL;
	}
	s->round = 1;
	elf_version(EV_CURRENT);
	return s;
}

static void file_release(struct file *f)
{
	free(f->syms);
	free(f->strs);
	memset(f, 0, sizeof(*f));
}

static void maps_free(struct map *v, unsigned int n)
{
	for (unsigned int i = 0; v && i < n; i++)
		free(v[i].path);
	free(v);
}

static void proc_release(struct proc *p)
{
	maps_free(p->maps, p->nmaps);
	free(p->perf);
	free(p->perf_strs);
	memset(p, 0, sizeof(*p));
}

void gw_symbols_free(struct gw_symbols *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; s->files && i < s->nfiles; i++)
		file_release(&s->files[i]);
	for (unsigned int i = 0; s->procs && i < s->nprocs; i++)
		proc_release(&s->procs[i]);
	free(s->files);
	free(s->procs);
	free(s->ksyms);
	free(s->kstrs);
	free(s);
}

void gw_symbols_round(struct gw_symbols *s)
{
	s->round++;
}

void gw_symbols_stats(const struct gw_symbols *s, struct gw_symbols_stats *st)
{
	*st = s->st;
}

/* ---- symbol tables ---- */

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The symbol holding addr: the last one at or below it, within its size
 * (a size of 0 is taken as reaching the next symbol). */
static const struct sym *find_sym(const struct sym *v, uint32_t n,
				  uint64_t addr)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (v[lo - 1].size && addr >= v[lo - 1].addr + v[lo - 1].size)
		return NULL;
	return &v[lo - 1];
}

/* Appends name to a string blob; offset in *off. */
static int add_str(char **strs, size_t *n, size_t *cap, const char *name,
		   uint32_t *off)
{
	size_t len = strlen(name) + 1;

	if (*n + len > MAX_STRS)
		return -ENOSPC;
	if (*n + len > *cap) {
		size_t c = *cap ? *cap * 2 : 65536;
		char *v;

		while (c < *n + len)
			c *= 2;
		v = realloc(*strs, c);
		if (!v)
			return -ENOMEM;
		*strs = v;
		*cap = c;
	}
	memcpy(*strs + *n, name, len);
	*off = (uint32_t)*n;
	*n += len;
	return 0;
}

static void hex(const unsigned char *b, size_t n, char *out, size_t outlen)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 2 < outlen; i++, k += 2)
		snprintf(out + k, 3, "%02x", b[i]);
	out[k < outlen ? k : 0] = '\0';
}

/* The GNU build id note of an ELF file, hex, "" when none. */
static void elf_build_id(Elf *e, char *out, size_t outlen)
{
	Elf_Scn *scn = NULL;

	out[0] = '\0';
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d &&
		       (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    doff + nh.n_descsz <= d->d_size &&
			    memcmp((char *)d->d_buf + noff, "GNU", 4) == 0) {
				hex((unsigned char *)d->d_buf + doff,
				    nh.n_descsz, out, outlen);
				return;
			}
		}
	}
}

/* Reads the function symbols of one table kind (SHT_SYMTAB or
 * SHT_DYNSYM) into f; the count read. */
static uint32_t read_syms(Elf *e, struct file *f, Elf64_Word type, size_t *cap,
			  size_t *strcap)
{
	Elf_Scn *scn = NULL;
	uint32_t n0 = f->nsyms;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t cnt;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type ||
		    sh.sh_entsize == 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < cnt && f->nsyms < MAX_SYMS; i++) {
			GElf_Sym sm;
			const char *nm;
			char *dm = NULL;
			int r;

			if (!gelf_getsym(d, (int)i, &sm) ||
			    GELF_ST_TYPE(sm.st_info) != STT_FUNC ||
			    sm.st_shndx == SHN_UNDEF || sm.st_value == 0)
				continue;
			nm = elf_strptr(e, sh.sh_link, sm.st_name);
			if (!nm || !*nm || *nm == '@')
				continue;
			if (f->nsyms == *cap) {
				size_t c = *cap ? *cap * 2 : 1024;
				struct sym *v =
					realloc(f->syms, c * sizeof(*v));

				if (!v)
					return f->nsyms - n0;
				f->syms = v;
				*cap = c;
			}
#ifdef GW_HAVE_DEMANGLE
			if (nm[0] == '_' && nm[1] == 'Z')
				dm = cplus_demangle(nm,
						    DMGL_PARAMS | DMGL_ANSI);
#endif
			if (!dm && strchr(nm, '@')) {
				/* name@VERSION, name@@VERSION: the name */
				dm = strndup(nm,
					     (size_t)(strchr(nm, '@') - nm));
			}
			r = add_str(&f->strs, &f->nstrs, strcap, dm ? dm : nm,
				    &f->syms[f->nsyms].name);
			free(dm);
			if (r)
				return f->nsyms - n0;
			f->syms[f->nsyms].addr = sm.st_value;
			f->syms[f->nsyms].size = sm.st_size;
			f->nsyms++;
		}
	}
	return f->nsyms - n0;
}

/* Loads segments, build id and symbols of the ELF file open at fd;
 * 1 when they came from a full .symtab, 0 from .dynsym or none, -EINVAL. */
static int load_elf(int fd, struct file *f, bool syms_only)
{
	int full = 0;
	size_t cap = 0, strcap = 0, nph;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (!e)
		return -EINVAL;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -EINVAL;
	}
	if (!syms_only) {
		elf_build_id(e, f->build_id, sizeof(f->build_id));
		if (elf_getphdrnum(e, &nph) == 0)
			for (size_t i = 0; i < nph && f->nseg < 16; i++) {
				GElf_Phdr ph;

				if (!gelf_getphdr(e, (int)i, &ph) ||
				    ph.p_type != PT_LOAD)
					continue;
				f->seg[f->nseg++] = (struct segment){
					ph.p_offset, ph.p_vaddr, ph.p_filesz
				};
			}
	}
	if (read_syms(e, f, SHT_SYMTAB, &cap, &strcap))
		full = 1;
	else
		read_syms(e, f, SHT_DYNSYM, &cap, &strcap);
	elf_end(e);
	if (f->nsyms > 1)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), cmp_sym);
	return full;
}

/* Symbols from the separate debug file named by the build id, which
 * replace those of .dynsym when it has a .symtab. */
static void load_debug(struct file *f, uint32_t pid)
{
	char path[PATH_MAX];
	size_t n = strlen(f->build_id);

	if (n < 3)
		return;
	for (int root = 0; root < 2; root++) {
		struct file d;
		int fd, full;

		if (root == 0)
			snprintf(path, sizeof(path),
				 "/proc/%u/root/usr/lib/debug/.build-id/"
				 "%.2s/%s.debug",
				 pid, f->build_id, f->build_id + 2);
		else
			snprintf(path, sizeof(path),
				 "/usr/lib/debug/.build-id/%.2s/%s.debug",
				 f->build_id, f->build_id + 2);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&d, 0, sizeof(d));
		full = load_elf(fd, &d, true);
		close(fd);
		if (full == 1 && d.nsyms) {
			free(f->syms);
			free(f->strs);
			f->syms = d.syms;
			f->nsyms = d.nsyms;
			f->strs = d.strs;
			f->nstrs = d.nstrs;
			return;
		}
		free(d.syms);
		free(d.strs);
	}
}

/* The file behind a mapping: from the cache, else loaded (evicting the
 * least recently used).  -1 when it cannot be opened. */
static int get_file(struct gw_symbols *s, uint32_t pid, const struct map *m,
		    const char *path)
{
	char p[PATH_MAX + 64];
	struct stat st;
	unsigned int slot;
	int fd;

	for (unsigned int i = 0; i < s->nfiles; i++)
		if (s->files[i].dev == m->dev && s->files[i].ino == m->ino) {
			s->files[i].used = s->round;
			return (int)i;
		}
	snprintf(p, sizeof(p), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid,
		 m->start, m->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(p, sizeof(p), "/proc/%u/root%s", pid, path);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_dev != m->dev || st.st_ino != m->ino) {
		/* Another file now lives at that path. */
		if (fstat(fd, &st) || st.st_ino != m->ino) {
			close(fd);
			return -1;
		}
	}
	if (s->nfiles < s->max_files) {
		slot = s->nfiles++;
	} else {
		slot = 0;
		for (unsigned int i = 1; i < s->nfiles; i++)
			if (s->files[i].used < s->files[slot].used)
				slot = i;
		file_release(&s->files[slot]);
		s->st.files_evicted++;
		/* Mappings pointing at the slot are stale now. */
		for (unsigned int i = 0; i < s->nprocs; i++)
			for (unsigned int k = 0; k < s->procs[i].nmaps; k++)
				if (s->procs[i].maps[k].file == (int)slot)
					s->procs[i].maps[k].file = FILE_LAZY;
	}
	s->files[slot].dev = m->dev;
	s->files[slot].ino = m->ino;
	s->files[slot].used = s->round;
	if (load_elf(fd, &s->files[slot], false) != 1)
		load_debug(&s->files[slot], pid);
	close(fd);
	s->st.files_loaded++;
	return (int)slot;
}

/* Writes a symbol's name, demangled (only names that are looked up are:
 * demangling a whole table costs more than reading it). */
static void put_name(const char *nm, char *out, size_t outlen)
{
#ifdef GW_HAVE_DEMANGLE
	if (nm[0] == '_' && nm[1] == 'Z') {
		char *dm = cplus_demangle(nm, DMGL_PARAMS | DMGL_ANSI);

		if (dm) {
			snprintf(out, outlen, "%s", dm);
			free(dm);
			return;
		}
	}
#endif
	snprintf(out, outlen, "%s", nm);
}

/* ---- processes ---- */

static struct proc *get_proc(struct gw_symbols *s, uint32_t pid)
{
	for (unsigned int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (s->nprocs == s->max_procs) {
		/* Evict the one read longest ago. */
		unsigned int o = 0;

		for (unsigned int i = 1; i < s->nprocs; i++)
			if (s->procs[i].read_round < s->procs[o].read_round)
				o = i;
		proc_release(&s->procs[o]);
		s->procs[o].pid = pid;
		return &s->procs[o];
	}
	s->procs[s->nprocs].pid = pid;
	return &s->procs[s->nprocs++];
}

void gw_symbols_forget(struct gw_symbols *s, uint32_t pid)
{
	for (unsigned int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid) {
			proc_release(&s->procs[i]);
			s->procs[i] = s->procs[--s->nprocs];
			memset(&s->procs[s->nprocs], 0, sizeof(s->procs[0]));
			return;
		}
}

/* Reads the executable mappings of pid; -errno (the process is gone). */
static int read_maps(struct gw_symbols *s, struct proc *p)
{
	char path[64], line[PATH_MAX + 256];
	FILE *fp;
	struct map *v = NULL;
	unsigned int n = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	v = calloc(MAX_MAPS, sizeof(*v));
	if (!v) {
		fclose(fp);
		return -ENOMEM;
	}
	while (fgets(line, sizeof(line), fp) && n < MAX_MAPS) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;
		const char *name, *base;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start,
			   &end, perms, &off, &maj, &min, &ino, &pos) < 7 ||
		    perms[2] != 'x')
			continue;
		name = line + pos;
		line[strcspn(line, "\n")] = '\0';
		v[n].start = start;
		v[n].end = end;
		v[n].off = off;
		v[n].dev = makedev(maj, min);
		v[n].ino = (ino_t)ino;
		v[n].file = -1;
		if (ino && name[0] == '/') {
			char *del;

			base = strrchr(name, '/') + 1;
			snprintf(v[n].base, sizeof(v[n].base), "%s", base);
			del = strstr(v[n].base, " (deleted)");
			if (del)
				*del = '\0';
			v[n].path = strdup(name);
			v[n].file = v[n].path ? FILE_LAZY : -1;
		} else if (name[0] == '[') {
			snprintf(v[n].base, sizeof(v[n].base), "%s", name);
		}
		n++;
	}
	fclose(fp);
	maps_free(p->maps, p->nmaps);
	p->maps = v;
	p->nmaps = n;
	p->read_round = s->round;
	return 0;
}

/* The pid inside the process's own namespace (the perf map's name). */
static uint32_t ns_pid(uint32_t pid)
{
	char path[64], line[256];
	uint32_t last = pid;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	fp = fopen(path, "re");
	if (!fp)
		return pid;
	while (fgets(line, sizeof(line), fp))
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *t = line + 6, *end;

			for (;;) {
				unsigned long v = strtoul(t, &end, 10);

				if (end == t)
					break;
				last = (uint32_t)v;
				t = end;
			}
			break;
		}
	fclose(fp);
	return last;
}

/* (Re)reads /tmp/perf-PID.map when it changed size. */
static void read_perf_map(struct proc *p, uint64_t round)
{
	char path[PATH_MAX], line[1024];
	size_t cap = 0, strcap = 0;
	struct stat st;
	FILE *fp;

	if (p->perf_round == round)
		return;
	p->perf_round = round;
	snprintf(path, sizeof(path), "/proc/%u/root/tmp/perf-%u.map", p->pid,
		 ns_pid(p->pid));
	if (stat(path, &st) || st.st_size == p->perf_size)
		return;
	fp = fopen(path, "re");
	if (!fp)
		return;
	free(p->perf);
	free(p->perf_strs);
	p->perf = NULL;
	p->perf_strs = NULL;
	p->nperf = 0;
	p->perf_nstrs = 0;
	p->perf_size = st.st_size;
	while (fgets(line, sizeof(line), fp) && p->nperf < MAX_PERF_SYMS) {
		unsigned long long a, sz;
		int pos = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx %llx %n", &a, &sz, &pos) < 2 || !pos ||
		    !line[pos])
			continue;
		if (p->nperf == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct sym *v = realloc(p->perf, c * sizeof(*v));

			if (!v)
				break;
			p->perf = v;
			cap = c;
		}
		if (add_str(&p->perf_strs, &p->perf_nstrs, &strcap, line + pos,
			    &p->perf[p->nperf].name))
			break;
		p->perf[p->nperf].addr = a;
		p->perf[p->nperf].size = sz;
		p->nperf++;
	}
	fclose(fp);
	if (p->nperf > 1)
		qsort(p->perf, p->nperf, sizeof(*p->perf), cmp_sym);
}

static struct map *find_map(struct gw_symbols *s, struct proc *p, uint64_t ip)
{
	for (unsigned int i = 0; i < p->nmaps; i++) {
		struct map *m = &p->maps[i];

		if (ip < m->start || ip >= m->end)
			continue;
		if (m->file == FILE_LAZY) {
			m->file = get_file(s, p->pid, m, m->path);
			if (m->file < 0)
				m->file = -1;
		}
		return m;
	}
	return NULL;
}

void gw_symbols_user(struct gw_symbols *s, uint32_t pid, uint64_t ip, char *out,
		     size_t outlen)
{
	struct proc *p = get_proc(s, pid);
	struct map *m;
	const struct file *f;
	const struct sym *sm;
	uint64_t foff;

	s->st.lookups++;
	m = find_map(s, p, ip);
	if (!m && p->read_round != s->round) {
		if (read_maps(s, p) == 0)
			m = find_map(s, p, ip);
	}
	if (!m || m->file < 0) {
		if (!m || m->base[0] == '\0' || m->base[0] == '[') {
			read_perf_map(p, s->round);
			sm = find_sym(p->perf, p->nperf, ip);
			if (sm) {
				snprintf(out, outlen, "%s",
					 p->perf_strs + sm->name);
				return;
			}
		}
		s->st.unknown++;
		if (m && m->base[0])
			snprintf(out, outlen, "%s%s%s",
				 m->base[0] == '[' ? "" : "[", m->base,
				 m->base[0] == '[' ? "" : "]");
		else
			snprintf(out, outlen, "[unknown]");
		return;
	}
	f = &s->files[m->file];
	foff = ip - m->start + m->off;
	sm = NULL;
	for (unsigned int i = 0; i < f->nseg; i++)
		if (foff >= f->seg[i].off &&
		    foff < f->seg[i].off + f->seg[i].filesz) {
			sm = find_sym(f->syms, f->nsyms,
				      foff - f->seg[i].off + f->seg[i].vaddr);
			break;
		}
	if (sm) {
		put_name(f->strs + sm->name, out, outlen);
		return;
	}
	s->st.unknown++;
	snprintf(out, outlen, "[%s]", m->base);
}

int gw_symbols_build_id(struct gw_symbols *s, uint32_t pid, char *out,
			size_t outlen)
{
	char path[64];
	Elf *e;
	int fd;

	(void)s;
	out[0] = '\0';
	/* The note only: the symbols are read when a sample needs them. */
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF)
		elf_build_id(e, out, outlen);
	if (e)
		elf_end(e);
	close(fd);
	return 0;
}

/* ---- kernel ---- */

static void load_kallsyms(struct gw_symbols *s)
{
	size_t cap = 0, strcap = 0, nstrs = 0;
	char line[512];
	FILE *fp;

	s->kloaded = 1;
	fp = fopen("/proc/kallsyms", "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp) && s->nksyms < MAX_SYMS) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 ||
		    a == 0 ||
		    (type != 't' && type != 'T' && type != 'W' && type != 'w'))
			continue;
		if (s->nksyms == cap) {
			size_t c = cap ? cap * 2 : 65536;
			struct sym *v = realloc(s->ksyms, c * sizeof(*v));

			if (!v)
				break;
			s->ksyms = v;
			cap = c;
		}
		if (add_str(&s->kstrs, &nstrs, &strcap, name,
			    &s->ksyms[s->nksyms].name))
			break;
		s->ksyms[s->nksyms].addr = a;
		s->ksyms[s->nksyms].size = 0;
		s->nksyms++;
	}
	fclose(fp);
	if (s->nksyms > 1)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), cmp_sym);
}

void gw_symbols_kernel(struct gw_symbols *s, uint64_t ip, char *out,
		       size_t outlen)
{
	const struct sym *sm;

	if (!s->kloaded)
		load_kallsyms(s);
	s->st.lookups++;
	sm = find_sym(s->ksyms, s->nksyms, ip);
	if (sm) {
		snprintf(out, outlen, "%s", s->kstrs + sm->name);
		return;
	}
	s->st.unknown++;
	snprintf(out, outlen, "[kernel]");
}
