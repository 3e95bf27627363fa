/* The open-addressing hash index of symbolize/table.c: inserts, lookups
 * and removals checked against a plain array, with hashes chosen to
 * collide and to wrap around the end of the slot array, where
 * backward-shift deletion is easiest to get wrong. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "symbolize/table.h"

#define N 200

/* The model: id i lives under hashes[i] while present[i]. */
static uint64_t hashes[N];
static bool present[N];

static bool id_is(void *ctx, int32_t id)
{
	return *(int32_t *)ctx == id;
}

static int32_t find(const struct sym_table *t, int32_t want)
{
	return sym_table_find(t, hashes[want], id_is, &want);
}

static void check_model(const struct sym_table *t)
{
	size_t n = 0;

	for (int32_t i = 0; i < N; i++) {
		cr_assert_eq(find(t, i), present[i] ? i : -1, "id %d (hash %#llx)", i,
			     (unsigned long long)hashes[i]);
		n += present[i];
	}
	cr_assert_eq(t->count, n);
}

Test(sym_table, remove_keeps_every_other_id_reachable)
{
	struct sym_table t = { 0 };
	uint32_t seed = 12345;

	/* Few distinct home slots, many near the end of the 64 or more
	 * slots: long runs that wrap to slot 0. */
	for (int32_t i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		hashes[i] = (seed >> 8) % 5 ? 0xfffffff0u + (seed >> 16) % 16 : (seed >> 12) % 4;
		present[i] = false;
	}
	for (int32_t i = 0; i < N; i++) {
		cr_assert_eq(sym_table_insert(&t, hashes[i], i), 0);
		present[i] = true;
	}
	check_model(&t);
	/* Remove in a scrambled order, checking everything after each. */
	for (int32_t k = 0; k < N; k++) {
		int32_t i = (k * 7919) % N;

		cr_assert_eq(sym_table_remove(&t, hashes[i], i), 0, "removing id %d", i);
		present[i] = false;
		cr_assert_eq(sym_table_remove(&t, hashes[i], i), -ENOENT, "id %d removed twice", i);
		if (k % 10 == 0 || k > N - 10)
			check_model(&t);
		/* Put some back: removals and inserts interleave. */
		if (k % 3 == 0) {
			cr_assert_eq(sym_table_insert(&t, hashes[i], i), 0);
			present[i] = true;
			cr_assert_eq(sym_table_remove(&t, hashes[i], i), 0);
			present[i] = false;
		}
	}
	check_model(&t);
	cr_assert_eq(t.count, 0);
	sym_table_free(&t);
}

Test(sym_table, remove_needs_hash_and_id)
{
	struct sym_table t = { 0 };
	int32_t id = 1;

	cr_assert_eq(sym_table_remove(&t, 7, 1), -ENOENT, "empty table");
	cr_assert_eq(sym_table_insert(&t, 7, 1), 0);
	cr_assert_eq(sym_table_insert(&t, 7, 2), 0);
	cr_assert_eq(sym_table_remove(&t, 8, 1), -ENOENT, "right id, wrong hash");
	cr_assert_eq(sym_table_remove(&t, 7, 3), -ENOENT, "right hash, wrong id");
	cr_assert_eq(sym_table_remove(&t, 7, 1), 0);
	cr_assert_eq(sym_table_find(&t, 7, id_is, &id), -1);
	id = 2;
	cr_assert_eq(sym_table_find(&t, 7, id_is, &id), 2);
	sym_table_free(&t);
}
