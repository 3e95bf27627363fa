/*
 * The function symbols of a module's symbol table (.symtab, else .dynsym,
 * as libdwfl picks them), sorted once for binary search: libdwfl's own
 * dwfl_module_addrinfo scans the whole table on every call.
 *
 * Like dwfl_module_addrinfo, a symbol with a size that contains the address
 * wins; else the closest sizeless symbol before it in the same section.
 * Among aliases, global beats weak beats local, functions beat untyped.
 *
 * The index holds its own copy of the names: it outlives the Dwfl it was
 * built from, and serves the module's next session (the same file) as
 * it is.
 */
#ifndef SYMBOLIZE_SYMTAB_H
#define SYMBOLIZE_SYMTAB_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sym_symbol {
	uint64_t lo, hi;     /* hi: lo + size, or the section's end if sizeless */
	const char *name;    /* in the index's `names` */
	uint32_t rank;       /* smaller is better */
	uint32_t order;      /* index in the table: ties keep table order */
};

struct sym_symtab {
	bool built;
	struct sym_symbol *sized, *sizeless;   /* each sorted by lo */
	uint64_t *sized_maxhi;                 /* largest hi of sized[0..i] */
	size_t nsized, nsizeless;
	char *names;                           /* the symbols' names, one block */
	size_t names_len;
};

/* The name of the function symbol at the module address `addr`, or NULL;
 * *start gets its address.  Builds the index on first use (an index that
 * could not be built for lack of memory is empty). */
const char *sym_symtab_find(struct sym_symtab *t, Dwfl_Module *mod, uint64_t addr,
			    uint64_t *start);

/* The heap the index holds, for the agent's memory accounting. */
size_t sym_symtab_bytes(const struct sym_symtab *t);

void sym_symtab_free(struct sym_symtab *t);

#endif
