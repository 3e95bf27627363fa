#include "table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int32_t sym_table_find(const struct sym_table *t, uint64_t hash, sym_table_eq eq, void *ctx)
{
	if (!t->slots)
		return -1;
	for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
		const struct sym_table_slot *sl = &t->slots[i];

		if (sl->id < 0)
			return -1;
		if (sl->hash == hash && eq(ctx, sl->id))
			return sl->id;
	}
}

struct str_key {
	char *const *strs;
	const char *s;
};

static bool str_eq(void *ctx, int32_t id)
{
	const struct str_key *k = ctx;

	return !strcmp(k->strs[id], k->s);
}

int32_t sym_table_find_str(const struct sym_table *t, uint64_t hash, char *const *strs,
			   const char *s)
{
	struct str_key k = { strs, s };

	return sym_table_find(t, hash, str_eq, &k);
}

static void place(struct sym_table_slot *slots, size_t mask, uint64_t hash, int32_t id)
{
	size_t i = hash & mask;

	while (slots[i].id >= 0)
		i = (i + 1) & mask;
	slots[i].hash = hash;
	slots[i].id = id;
}

static int resize(struct sym_table *t, size_t cap)
{
	struct sym_table_slot *slots = malloc(cap * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		slots[i].id = -1;
	if (t->slots) {
		for (size_t i = 0; i <= t->mask; i++)
			if (t->slots[i].id >= 0)
				place(slots, cap - 1, t->slots[i].hash, t->slots[i].id);
		free(t->slots);
	}
	t->slots = slots;
	t->mask = cap - 1;
	return 0;
}

int sym_table_reserve(struct sym_table *t, size_t n)
{
	size_t cap = t->slots ? t->mask + 1 : 64;

	/* Load factor at most 1/2: probes stay short. */
	while (n > cap / 2) {
		if (cap > SIZE_MAX / 2 / sizeof(*t->slots))
			return -ENOMEM;
		cap *= 2;
	}
	return t->slots && cap == t->mask + 1 ? 0 : resize(t, cap);
}

int sym_table_insert(struct sym_table *t, uint64_t hash, int32_t id)
{
	int rc = sym_table_reserve(t, t->count + 1);

	if (rc)
		return rc;
	place(t->slots, t->mask, hash, id);
	t->count++;
	return 0;
}

int sym_table_remove(struct sym_table *t, uint64_t hash, int32_t id)
{
	size_t i, j;

	if (!t->slots)
		return -ENOENT;
	for (i = hash & t->mask; t->slots[i].id != id || t->slots[i].hash != hash; i = (i + 1) & t->mask)
		if (t->slots[i].id < 0)
			return -ENOENT;
	/* Backward-shift deletion instead of a tombstone: every later slot
	 * of the run that may live in the hole moves into it, so lookups,
	 * which stop at the first empty slot, still reach every id. */
	for (j = (i + 1) & t->mask; t->slots[j].id >= 0; j = (j + 1) & t->mask) {
		size_t home = t->slots[j].hash & t->mask;

		/* Slot j may move to i unless its home lies cyclically in (i, j]. */
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].id = -1;
	t->count--;
	return 0;
}

int32_t sym_table_next(const struct sym_table *t, size_t *pos)
{
	while (t->slots && *pos <= t->mask) {
		int32_t id = t->slots[(*pos)++].id;

		if (id >= 0)
			return id;
	}
	return -1;
}

void sym_table_free(struct sym_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->count = 0;
}
