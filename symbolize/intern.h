/*
 * Memory for the symbolizer's results: a bump arena freed all at once,
 * and a set of interned strings allocated from it, so that each distinct
 * function or file name is stored once and compares by pointer.
 */
#ifndef SYMBOLIZE_INTERN_H
#define SYMBOLIZE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

struct sym_arena_chunk;

struct sym_arena {
	struct sym_arena_chunk *head;
	size_t used;    /* bytes used in head */
	size_t bytes;   /* total bytes allocated from the system */
};

/* Zeroed arena memory aligned to `align` (a power of two <= 16), or NULL. */
void *sym_arena_alloc(struct sym_arena *a, size_t size, size_t align);
void sym_arena_free(struct sym_arena *a);

struct sym_intern {
	struct sym_arena *arena;   /* where the strings live */
	const char **strs;         /* by id */
	uint32_t *lens;
	size_t count, cap;
	struct sym_table index;    /* hash of the string -> id */
};

void sym_intern_init(struct sym_intern *in, struct sym_arena *arena);
void sym_intern_free(struct sym_intern *in);

/* The interned copy of s[0..n), or NULL when out of memory. */
const char *sym_intern_n(struct sym_intern *in, const char *s, size_t n);
const char *sym_intern(struct sym_intern *in, const char *s);

uint64_t sym_hash_bytes(const void *p, size_t n);
uint64_t sym_hash_u64(uint64_t x);

#endif
