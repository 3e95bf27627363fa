/*
 * glibc's lazy binding, again and again, in one process: so that samples
 * land in ld.so's resolver, _dl_runtime_resolve_xsavec (whose CFA is
 * rbx+32) and _dl_fixup under it, with a known chain.
 *
 * rec-lazybind is linked -z lazy against librec-lazytargets.so (the
 * walker suite's lazy.c built -DLAZY_TARGETS: lazy_t000 .. lazy_t333d,
 * 256 functions) and has lazy.c's lazy_call_all, which calls every
 * target through its PLT.  After each round main puts their GOT slots
 * back to the PLT stubs they held at start, so that the next round binds
 * them all afresh.
 *
 * usage: rec-lazybind SECONDS   (of CPU time)
 */
#define LAZY_CALLER
#include "tests/walker/lazy.c"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SLOTS 512

static ElfW(Addr) *slots[MAX_SLOTS];
static ElfW(Addr) stubs[MAX_SLOTS];
static int nslots;

/* ld.so relocates the pointers of a PIE's dynamic section in place
 * (glibc's ADJUST_DYN_INFO); take them as they are if they already are. */
static ElfW(Addr) dyn_ptr(ElfW(Addr) v, ElfW(Addr) bias)
{
	return v < bias ? v + bias : v;
}

static int find_slots(struct dl_phdr_info *info, size_t size, void *data)
{
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Rela) *rel = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	size_t relsz = 0, i;
	int k;

	(void)size;
	(void)data;
	/* The program itself comes first, with an empty name. */
	for (k = 0; k < info->dlpi_phnum; k++)
		if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
			dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[k].p_vaddr);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_JMPREL)
			rel = (const void *)dyn_ptr(dyn->d_un.d_ptr, info->dlpi_addr);
		else if (dyn->d_tag == DT_PLTRELSZ)
			relsz = dyn->d_un.d_val;
		else if (dyn->d_tag == DT_SYMTAB)
			symtab = (const void *)dyn_ptr(dyn->d_un.d_ptr, info->dlpi_addr);
		else if (dyn->d_tag == DT_STRTAB)
			strtab = (const void *)dyn_ptr(dyn->d_un.d_ptr, info->dlpi_addr);
	}
	for (i = 0; rel && symtab && strtab && i < relsz / sizeof(*rel); i++) {
		const char *name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;

		if (ELF64_R_TYPE(rel[i].r_info) != R_X86_64_JUMP_SLOT || strncmp(name, "lazy_t", 6) ||
		    nslots == MAX_SLOTS)
			continue;
		slots[nslots] = (ElfW(Addr) *)(info->dlpi_addr + rel[i].r_offset);
		stubs[nslots] = *slots[nslots];
		nslots++;
	}
	return 1;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;
	clock_t end;
	int x = 0, k;

	/* Before the first call: the slots still hold their PLT stubs. */
	dl_iterate_phdr(find_slots, NULL);
	if (nslots != 256) {
		fprintf(stderr, "rec-lazybind: %d lazy GOT slots, want 256 (linked -z now?)\n",
			nslots);
		return 1;
	}
	end = clock() + (clock_t)(secs * CLOCKS_PER_SEC);
	while (clock() < end) {
		x = lazy_call_all(x);
		if (*slots[0] == stubs[0]) {
			fprintf(stderr, "rec-lazybind: lazy_t000 was not bound lazily\n");
			return 1;
		}
		for (k = 0; k < nslots; k++)
			*slots[k] = stubs[k];
	}
	printf("%d\n", x);
	return 0;
}
