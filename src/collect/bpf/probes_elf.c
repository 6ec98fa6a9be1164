/* SPDX-License-Identifier: MIT */
/*
 * probes_elf.c - symbol resolution for the eBPF loader (probes_int.h):
 * which functions of the CUDA API table an ELF file defines (.dynsym and
 * .symtab, with the _ptsz/_ptds spellings and symbol versions), and at
 * which file offsets, where the uprobes attach.
 */
#include "probes_int.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

static const char *const variant_suffix[NVARIANTS] = { "", "_ptsz", "_ptds" };

static int cmp_name_api(const void *name, const void *api)
{
	return strcmp(name, gw_cuda_apis[*(const unsigned short *)api].name);
}

/* The api called name (exactly), or -1. */
static int api_by_name(const struct gw_probes *p, const char *name)
{
	const unsigned short *a =
		bsearch(name, p->by_name, NAPIS, sizeof(*a), cmp_name_api);

	return a ? *a : -1;
}

/*
 * The symbol id of an ELF symbol name ("cudaMemcpy_ptds@@libcudart.so.13"
 * and the like), or -1 when it is none of the table's APIs in libs.
 */
static int match_symbol(const struct gw_probes *p, const char *name,
			unsigned int libs)
{
	char base[96];
	size_t n = strcspn(name, "@");
	unsigned int var = VAR_PLAIN;
	int api;

	if (name[0] != 'c' || name[1] != 'u' || n >= sizeof(base) || n < 4)
		return -1;
	memcpy(base, name, n);
	base[n] = '\0';
	for (unsigned int v = VAR_PTSZ; v < NVARIANTS; v++) {
		size_t sl = strlen(variant_suffix[v]);

		if (n > sl && !strcmp(base + n - sl, variant_suffix[v])) {
			base[n - sl] = '\0';
			var = v;
			break;
		}
	}
	api = api_by_name(p, base);
	if (api < 0 || !(gw_cuda_apis[api].lib & libs))
		return -1;
	return api * NVARIANTS + (int)var;
}

/* File offset of a virtual address, from the loadable segments. */
static int vaddr_to_off(Elf *e, size_t phnum, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Looks up every table symbol of libs in the file's .dynsym and .symtab
 * (executables with cudart linked in statically have it only in .symtab).
 * A global definition wins over a weak one, which wins over a local one.
 */
int gw_probes_resolve(struct gw_probes *p, int fd, unsigned int libs,
		      struct found *found)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t phnum;
	Elf *e;
	int r = 0;

	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) ||
	    gelf_getclass(e) != ELFCLASS64 || elf_getphdrnum(e, &phnum)) {
		gw_probes_seterr(p, "not a 64-bit ELF file: %s",
				 elf_errmsg(-1));
		r = -ENOEXEC;
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		gw_probes_seterr(p, "not an executable or shared object");
		r = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = NULL;
		GElf_Shdr sh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		while ((d = elf_getdata(scn, d))) {
			for (size_t i = 0; i < n; i++) {
				const char *name;
				GElf_Sym sm;
				uint64_t off;
				int id, rank, bind;

				if (!gelf_getsym(d, (int)i, &sm))
					break;
				if (GELF_ST_TYPE(sm.st_info) != STT_FUNC ||
				    sm.st_shndx == SHN_UNDEF || !sm.st_value)
					continue;
				name = elf_strptr(e, sh.sh_link, sm.st_name);
				if (!name)
					continue;
				id = match_symbol(p, name, libs);
				if (id < 0)
					continue;
				bind = GELF_ST_BIND(sm.st_info);
				rank = bind == STB_GLOBAL  ? 3
				       : bind == STB_WEAK  ? 2
				       : bind == STB_LOCAL ? 1
							   : 0;
				if (rank <= found[id].rank ||
				    vaddr_to_off(e, phnum, sm.st_value, &off))
					continue;
				found[id].off = off;
				found[id].rank = rank;
			}
		}
	}
out:
	elf_end(e);
	return r;
}
