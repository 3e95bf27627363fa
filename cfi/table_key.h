/*
 * The name of a compiled table: what identifies the object it is compiled
 * from, and how.  The object's build-id where it has one, else a checksum
 * of the bytes the table is made of; suffixed "-eh" (.debug_frame
 * ignored) or "-dbg" (a separate debug file contributed .debug_frame).
 * Two objects with one key compile to the same table, so a table store
 * (agent/unwind/cache.h) can share it between them.
 */
#ifndef CFI_TABLE_KEY_H
#define CFI_TABLE_KEY_H

#include <stddef.h>

#include "compile.h"
#include "elffile.h"

#define CFI_TABLE_KEY_MAX 160

/* The key for `e` compiled with `opts` (NULL: the defaults), at most
 * CFI_TABLE_KEY_MAX bytes with its NUL. */
void cfi_table_key(const struct cfi_elf *e, const struct cfi_compile_opts *opts,
		   char *key, size_t size);

#endif
