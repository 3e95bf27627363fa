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

/* The CFA column: "rsp+8", "rbp+16", "exp", "undef" (no unwind info). */
void cfi_format_cfa(const struct cfi_rule *r, char *buf, size_t size);
/* A register column: "u", "s", "c-16", "v+8", "r3 (rbx)", "exp", "vexp". */
void cfi_format_reg(const struct cfi_rule *r, unsigned type, int off, char *buf, size_t size);

/* Writes one line per row: address, CFA, rbp, return address, and
 * "signal" for signal trampolines. */
int cfi_dump_table(const struct cfi_table *t, FILE *out);

#endif
