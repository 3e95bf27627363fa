/* symbolize/table.c: the hash index from 64-bit hashes to ids.  Lookups,
 * reserve, growth and iteration over keys whose poor hash many share; and
 * removal (used by agent/procs/) checked against a plain array, with
 * hashes chosen to collide and to wrap around the end of the slot array,
 * where backward-shift deletion is easiest to get wrong. */
#include <criterion/criterion.h>
#include <errno.h>
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

/* Removal, against a model: id i of NR lives under hashes[i] while
 * present[i]. */
#define NR 200

static uint64_t hashes[NR];
static bool present[NR];

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

	for (int32_t i = 0; i < NR; i++) {
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
	for (int32_t i = 0; i < NR; i++) {
		seed = seed * 1103515245u + 12345u;
		hashes[i] = (seed >> 8) % 5 ? 0xfffffff0u + (seed >> 16) % 16 : (seed >> 12) % 4;
		present[i] = false;
	}
	for (int32_t i = 0; i < NR; i++) {
		cr_assert_eq(sym_table_insert(&t, hashes[i], i), 0);
		present[i] = true;
	}
	check_model(&t);
	/* Remove in a scrambled order, checking everything after each. */
	for (int32_t k = 0; k < NR; k++) {
		int32_t i = (k * 7919) % NR;

		cr_assert_eq(sym_table_remove(&t, hashes[i], i), 0, "removing id %d", i);
		present[i] = false;
		cr_assert_eq(sym_table_remove(&t, hashes[i], i), -ENOENT, "id %d removed twice", i);
		if (k % 10 == 0 || k > NR - 10)
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
