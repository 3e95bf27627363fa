/*
 * Per compilation unit, the address ranges of its function definitions
 * (DW_TAG_subprogram DIEs with code), built the first time the unit is
 * asked about and then searched by binary search.
 *
 * libdw's dwarf_getscopes does not look inside DW_TAG_namespace or type
 * DIEs, where rustc (and some compilers for C++) put function definitions;
 * this index walks the whole unit, following DW_TAG_imported_unit (dwz).
 *
 * Also, per module, the address ranges of its compilation units, for the
 * objects whose units libdwfl cannot find by address (it relies on
 * .debug_aranges, which clang does not emit by default).
 */
#ifndef SYMBOLIZE_FUNCINDEX_H
#define SYMBOLIZE_FUNCINDEX_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "table.h"

struct sym_fn {
	Dwarf_Addr lo, hi;   /* one range of the function: [lo, hi) */
	Dwarf_Die die;
};

struct sym_cu_fns {
	Dwarf_Off cu;        /* the unit's DIE offset */
	struct sym_fn *fns;  /* sorted by lo */
	Dwarf_Addr *maxhi;   /* maxhi[i]: the largest hi of fns[0..i] */
	size_t count;
};

struct sym_cu_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die cu;
};

struct sym_fnindex {
	struct sym_cu_fns *cus;
	size_t count, cap;
	struct sym_table index;   /* hash of the unit offset -> cus[] */

	bool ranges_built;
	struct sym_cu_range *ranges;   /* sorted by lo */
	Dwarf_Addr *ranges_maxhi;
	size_t nranges;
	Dwarf_Addr bias;               /* of the module's DWARF */
};

/* The innermost function definition in the unit `cudie` containing the
 * DWARF address `pc`: 1 and *out, 0 if none, -ENOMEM. */
int sym_fnindex_find(struct sym_fnindex *x, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die *out);

/* The compilation unit whose ranges contain the module address `addr`:
 * 1 with *cu and *bias (DWARF address = addr - bias), 0 if none,
 * -ENOMEM. */
int sym_fnindex_cu(struct sym_fnindex *x, Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Die *cu,
		   Dwarf_Addr *bias);

void sym_fnindex_free(struct sym_fnindex *x);

#endif
