/* Text rendering of CFI rules in the notation of
 * `readelf --debug-dump=frames-interp`, so tables can be diffed against
 * binutils. */
#ifndef CFI_DUMP_H
#define CFI_DUMP_H

#include <stddef.h>
#include <stdio.h>

#include "table.h"

/* readelf's name for an x86-64 DWARF register, or NULL. */
const char *cfi_reg_name(unsigned regno);

/* The CFA column: "rsp+8", "rbp+16", "*(rsp+16)+8" (DEREF),
 * "*(rsp+8+r9*8)+8" (DEREF_INDEX), "plt(rsp+8,11)", "exp" (unsupported),
 * "undef" (no unwind info). */
void cfi_format_cfa(const struct cfi_rule *r, char *buf, size_t size);
/* A register column: "u", "s", "c-16", "v+8", "r3 (rbx)", "exp", "vexp". */
void cfi_format_reg(const struct cfi_rule *r, unsigned type, int off, char *buf, size_t size);

/* A row after its address: CFA, rbp, return address, then "rbx=c-24"
 * and the like for each of rbx and r12-r15 with a rule, and "signal" for
 * signal trampolines ("undef" where there is no unwind info). */
void cfi_format_row(const struct cfi_rule *r, char *buf, size_t size);

/* Writes one line per row: its address and cfi_format_row's text. */
int cfi_dump_table(const struct cfi_table *t, FILE *out);

#endif
