/*
 * Names for the PLT stubs of a module ("sin@plt", as objdump and perf
 * name them): the stubs have no symbols of their own.  As binutils does
 * it for x86-64, each stub of .plt, .plt.sec (IBT's second PLT) and
 * .plt.got is decoded: its indirect jump's GOT slot is the r_offset of
 * the relocation (JUMP_SLOT, GLOB_DAT) that names the function; a lazy
 * IBT .plt stub, which jumps to PLT0, pushes its .rela.plt index instead.
 * Built on first use, then searched by binary search.
 */
#ifndef SYMBOLIZE_PLT_H
#define SYMBOLIZE_PLT_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sym_plt_stub {
	uint64_t lo, hi;     /* module addresses of the stub */
	const char *name;    /* the symbol's, in libelf's string table */
};

struct sym_plt {
	bool built;
	struct sym_plt_stub *stubs;   /* sorted by lo */
	size_t count;
};

/* The name of the function whose PLT stub holds the module address
 * `addr` (without "@plt"), or NULL if `addr` is in no stub known. */
const char *sym_plt_find(struct sym_plt *p, Dwfl_Module *mod, uint64_t addr);

void sym_plt_free(struct sym_plt *p);

#endif
