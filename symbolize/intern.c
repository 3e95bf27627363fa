#include "intern.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE (64 * 1024)

struct sym_arena_chunk {
	struct sym_arena_chunk *next;
	size_t size;            /* usable bytes in data */
	_Alignas(16) unsigned char data[];
};

void *sym_arena_alloc(struct sym_arena *a, size_t size, size_t align)
{
	struct sym_arena_chunk *c = a->head;
	size_t off = (a->used + align - 1) & ~(align - 1);

	if (!c || off > c->size || size > c->size - off) {
		bool big = size > CHUNK_SIZE / 4;
		size_t want = big ? size : CHUNK_SIZE;

		c = calloc(1, sizeof(*c) + want);
		if (!c)
			return NULL;
		c->size = want;
		a->bytes += sizeof(*c) + want;
		if (big && a->head) {
			/* A big block gets its own chunk, behind the current one. */
			c->next = a->head->next;
			a->head->next = c;
			return c->data;
		}
		c->next = a->head;
		a->head = c;
		off = 0;
	}
	a->used = off + size;
	return c->data + off;
}

void sym_arena_free(struct sym_arena *a)
{
	struct sym_arena_chunk *c = a->head;

	while (c) {
		struct sym_arena_chunk *next = c->next;

		free(c);
		c = next;
	}
	a->head = NULL;
	a->used = 0;
	a->bytes = 0;
}

uint64_t sym_hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return sym_hash_u64(h);
}

uint64_t sym_hash_u64(uint64_t x)
{
	/* splitmix64's finalizer */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

void sym_intern_init(struct sym_intern *in, struct sym_arena *arena)
{
	memset(in, 0, sizeof(*in));
	in->arena = arena;
}

void sym_intern_free(struct sym_intern *in)
{
	free(in->strs);
	free(in->lens);
	sym_table_free(&in->index);
	in->strs = NULL;
	in->lens = NULL;
	in->count = in->cap = 0;
}

struct key {
	const struct sym_intern *in;
	const char *s;
	size_t n;
};

static bool key_eq(void *ctx, int32_t id)
{
	const struct key *k = ctx;

	return k->in->lens[id] == k->n && memcmp(k->in->strs[id], k->s, k->n) == 0;
}

const char *sym_intern_n(struct sym_intern *in, const char *s, size_t n)
{
	struct key k = { in, s, n };
	uint64_t h;
	int32_t id;
	char *copy;

	if (n > UINT32_MAX)
		return NULL;
	h = sym_hash_bytes(s, n);
	id = sym_table_find(&in->index, h, key_eq, &k);
	if (id >= 0)
		return in->strs[id];
	if (in->count >= INT32_MAX)
		return NULL;
	if (in->count == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 256;
		const char **strs = realloc(in->strs, cap * sizeof(*strs));

		if (!strs)
			return NULL;
		in->strs = strs;
		uint32_t *lens = realloc(in->lens, cap * sizeof(*lens));

		if (!lens)
			return NULL;
		in->lens = lens;
		in->cap = cap;
	}
	copy = sym_arena_alloc(in->arena, n + 1, 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, n);
	copy[n] = '\0';
	if (sym_table_insert(&in->index, h, (int32_t)in->count))
		return NULL;
	in->strs[in->count] = copy;
	in->lens[in->count] = (uint32_t)n;
	in->count++;
	return copy;
}

const char *sym_intern(struct sym_intern *in, const char *s)
{
	return sym_intern_n(in, s, strlen(s));
}
