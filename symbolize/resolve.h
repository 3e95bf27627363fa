/*
 * One address of one libdw module to its inline chain: function names
 * from DWARF (falling back to .symtab/.dynsym), file:line from the line
 * table and the DW_AT_call_file/DW_AT_call_line of inlined subroutines.
 */
#ifndef SYMBOLIZE_RESOLVE_H
#define SYMBOLIZE_RESOLVE_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>

#include "funcindex.h"
#include "intern.h"
#include "symtab.h"
#include "symbolize.h"

/* Longest inline chain kept (the real function included): deeper
 * inlining loses its innermost frames. */
#define SYM_MAX_CHAIN 64

/* Fills `out` (SYM_MAX_CHAIN frames) innermost first, strings interned in
 * `in`, function DIEs found through `fx` and symbols through `st` (the
 * module's indexes).  Returns
 * the number of frames, 0 when neither DWARF nor a symbol table knows the
 * address, or -ENOMEM.  The last frame's function may be NULL: the caller
 * names it. */
int sym_resolve(Dwfl_Module *mod, struct sym_fnindex *fx, struct sym_symtab *st, uint64_t addr,
		bool demangle, struct sym_intern *in, struct sym_frame *out);

#endif
