/*
 * Kernel function symbols from /proc/kallsyms: read once, sorted by
 * address, looked up by binary search.
 */
#ifndef SYMBOLIZE_KALLSYMS_H
#define SYMBOLIZE_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "intern.h"

struct sym_ksym {
	uint64_t addr;
	const char *name;    /* "func", or "func [module]" */
};

struct sym_kallsyms {
	struct sym_ksym *syms;   /* sorted by address, one per address */
	size_t count;
	bool restricted;         /* every address read as 0 (kptr_restrict) */
};

/* Reads the text symbols (types t, T, w, W) of a kallsyms-format file,
 * names allocated in `arena`.  0, or a negative errno (the file could
 * not be read; `k` is then empty). */
int sym_kallsyms_load(struct sym_kallsyms *k, const char *path, struct sym_arena *arena);

/* The symbol containing `addr` (the last one at or below it), or NULL:
 * below the first symbol, or addresses unavailable. */
const struct sym_ksym *sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t addr);

void sym_kallsyms_free(struct sym_kallsyms *k);

#endif
