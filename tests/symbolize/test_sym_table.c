/* symbolize/table.c: the hash index from 64-bit hashes to ids. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "symbolize/table.h"

#define N 1000

/* The objects the ids name: here, just their keys. */
static uint64_t keys[N];

static bool key_eq(void *ctx, int32_t id)
{
	return keys[id] == *(const uint64_t *)ctx;
}

/* A poor hash, so that many keys share one. */
static uint64_t hash_of(uint64_t key)
{
	return key % 97;
}

static void insert_all(struct sym_table *t, int32_t n)
{
	for (int32_t i = 0; i < n; i++) {
		keys[i] = (uint64_t)i * 7919;
		cr_assert_eq(sym_table_insert(t, hash_of(keys[i]), i), 0);
		cr_assert_leq(t->count * 2, t->mask + 1, "more than half full");
	}
}

Test(sym_table, finds_every_id_among_shared_hashes)
{
	struct sym_table t = { 0 };
	uint64_t absent = 5;

	cr_expect_eq(sym_table_find(&t, 0, key_eq, &absent), -1, "empty");
	insert_all(&t, N);
	cr_expect_eq(t.count, N);
	for (int32_t i = 0; i < N; i++)
		cr_expect_eq(sym_table_find(&t, hash_of(keys[i]), key_eq, &keys[i]), i);
	cr_expect_eq(sym_table_find(&t, hash_of(absent), key_eq, &absent), -1);
	sym_table_free(&t);
}

Test(sym_table, reserve_makes_room_up_front)
{
	struct sym_table t = { 0 };
	struct sym_table_slot *slots;
	size_t mask;

	cr_assert_eq(sym_table_reserve(&t, 600), 0);
	cr_expect_eq(t.mask + 1, 2048, "a power of two, at most half full");
	slots = t.slots;
	insert_all(&t, 600);
	cr_expect_eq(t.slots, slots, "grown by an insert");
	cr_assert_eq(sym_table_reserve(&t, 10), 0);
	cr_expect_eq(t.slots, slots, "shrunk");
	/* Growing a full table keeps its ids. */
	cr_assert_eq(sym_table_reserve(&t, 5000), 0);
	mask = t.mask;
	cr_expect_geq(mask + 1, 10000);
	for (int32_t i = 0; i < 600; i++)
		cr_expect_eq(sym_table_find(&t, hash_of(keys[i]), key_eq, &keys[i]), i);
	cr_expect_eq(sym_table_reserve(&t, 0), 0);
	cr_expect_eq(t.mask, mask);
	sym_table_free(&t);
}

/* Inserting grows the table as reserving one more does: the same
 * slots. */
Test(sym_table, insert_grows_as_reserve_does)
{
	struct sym_table a = { 0 }, b = { 0 };

	for (int32_t i = 0; i < N; i++) {
		keys[i] = (uint64_t)i * 7919;
		cr_assert_eq(sym_table_insert(&a, keys[i], i), 0);
		cr_assert_eq(sym_table_reserve(&b, (size_t)i + 1), 0);
		cr_assert_eq(sym_table_insert(&b, keys[i], i), 0);
	}
	cr_assert_eq(a.mask, b.mask);
	cr_expect_eq(memcmp(a.slots, b.slots, (a.mask + 1) * sizeof(*a.slots)), 0);
	sym_table_free(&a);
	sym_table_free(&b);
}

Test(sym_table, next_lists_every_id_once_in_slot_order)
{
	struct sym_table t = { 0 };
	bool seen[N] = { false };
	size_t pos = 0, last = 0;
	int32_t id, n = 0;

	cr_expect_eq(sym_table_next(&t, &pos), -1, "empty");
	/* Distinct hashes below the capacity: slot order is hash order. */
	for (int32_t i = N - 1; i >= 0; i--)
		cr_assert_eq(sym_table_insert(&t, (uint64_t)i, i), 0);
	for (pos = 0; (id = sym_table_next(&t, &pos)) >= 0; n++) {
		cr_assert(id < N && !seen[id], "id %d", id);
		seen[id] = true;
		cr_expect_eq(id, n, "in slot order");
		cr_expect_gt(pos, last);
		last = pos;
	}
	cr_expect_eq(n, N);
	cr_expect_eq(sym_table_next(&t, &pos), -1, "stays at the end");
	sym_table_free(&t);
}

Test(sym_table, finds_strings_by_content)
{
	char *strs[] = { "alpha", "beta", "gamma" };
	char key[] = "beta";
	struct sym_table t = { 0 };

	/* One hash for all: only the strings tell them apart. */
	for (int32_t i = 0; i < 3; i++)
		cr_assert_eq(sym_table_insert(&t, 42, i), 0);
	cr_expect_eq(sym_table_find_str(&t, 42, strs, key), 1, "a copy of the string");
	cr_expect_eq(sym_table_find_str(&t, 42, strs, "gamma"), 2);
	cr_expect_eq(sym_table_find_str(&t, 42, strs, "delta"), -1);
	cr_expect_eq(sym_table_find_str(&t, 41, strs, "alpha"), -1, "another hash");
	sym_table_free(&t);
}
