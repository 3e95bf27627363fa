/*
 * An open-addressing hash index from a 64-bit hash to small integer ids.
 * Several ids may share a hash: lookups take an equality callback that
 * compares the caller's key with the object an id names.
 */
#ifndef SYMBOLIZE_TABLE_H
#define SYMBOLIZE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sym_table_slot {
	uint64_t hash;
	int32_t id;     /* -1: empty */
};

struct sym_table {
	struct sym_table_slot *slots;
	size_t mask;    /* capacity - 1; capacity is 0 or a power of two */
	size_t count;
};

typedef bool (*sym_table_eq)(void *ctx, int32_t id);

/* The id whose hash is `hash` and for which eq(ctx, id) holds, or -1. */
int32_t sym_table_find(const struct sym_table *t, uint64_t hash, sym_table_eq eq, void *ctx);

/* For ids that index an array of strings: the id of `s`, whose hash is
 * `hash`, among strs[], or -1. */
int32_t sym_table_find_str(const struct sym_table *t, uint64_t hash, char *const *strs,
			   const char *s);

/* Adds `id` (>= 0) under `hash`.  0, or -ENOMEM. */
int sym_table_insert(struct sym_table *t, uint64_t hash, int32_t id);

/* Removes `id`, added under `hash`.  0, or -ENOENT. */
int sym_table_remove(struct sym_table *t, uint64_t hash, int32_t id);

/* Makes room for `n` ids in all: inserting up to that many neither grows
 * the table nor moves its ids.  0, or -ENOMEM. */
int sym_table_reserve(struct sym_table *t, size_t n);

/* The ids in slot order, which depends only on their hashes and on the
 * order of the inserts and reserves:
 *	for (size_t pos = 0; (id = sym_table_next(t, &pos)) >= 0;)
 * -1 after the last. */
int32_t sym_table_next(const struct sym_table *t, size_t *pos);

void sym_table_free(struct sym_table *t);

#endif
