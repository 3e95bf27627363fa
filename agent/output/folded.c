/*
 * Folded stacks: "comm;root;...;leaf VALUE\n" per distinct stack, the
 * input of flamegraph.pl and similar tools.
 *
 * Frames are function names, root first, with each location's inline
 * chain expanded (the real function before the functions inlined into
 * it).  Characters that would make a line ambiguous are replaced: ';'
 * (the frame separator) by ':', control characters (newlines) by '?'.
 * Values of identical stacks are summed, stacks whose raw sum is 0 are
 * dropped, and the sum is divided by `scale`, rounding down.  Lines are
 * sorted bytewise, so the output depends only on the profile's content.
 */
#include "agent/output/folded.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/array.h"
#include "agent/util/errbuf.h"
#include "agent/util/output_file.h"
#include "symbolize/intern.h"

struct buf {
	char *data;
	size_t len, cap;
	bool oom;
};

/* Out of memory sticks: the output is abandoned, so the appends after a
 * failed one need no checks. */
static bool buf_reserve(struct buf *b, size_t more)
{
	if (!b->oom && (more > SIZE_MAX - b->len ||
			array_reserve_first(&b->data, &b->cap, b->len + more, 256)))
		b->oom = true;
	return !b->oom;
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (!buf_reserve(b, n + 1))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* appends a frame or comm, made safe for the folded format */
static void buf_add_name(struct buf *b, const char *s)
{
	size_t n = strlen(s);

	if (!buf_reserve(b, n + 1))
		return;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == ';')
			c = ':';
		else if ((unsigned char)c < 0x20 || c == 0x7f)
			c = '?';
		b->data[b->len++] = c;
	}
	b->data[b->len] = '\0';
}

struct stack {
	char *key;
	int64_t total;
};

struct stacks {
	struct stack *v;
	size_t n, cap;
	struct sym_table index;  /* hash of a key -> index into v */
};

struct key_ref {
	const struct stacks *st;
	const char *key;
};

static bool key_eq(void *ctx, int32_t id)
{
	const struct key_ref *k = ctx;

	return !strcmp(k->st->v[id].key, k->key);
}

/* the stack for key, added with total 0 if new; NULL on out of memory */
static struct stack *stacks_get(struct stacks *st, const char *key)
{
	struct key_ref k = { st, key };
	uint64_t h = sym_hash_bytes(key, strlen(key));
	int32_t id = sym_table_find(&st->index, h, key_eq, &k);
	char *copy;

	if (id >= 0)
		return &st->v[id];
	if (st->n > INT32_MAX || array_reserve_first(&st->v, &st->cap, st->n + 1, 128))
		return NULL;
	copy = strdup(key);
	if (!copy || sym_table_insert(&st->index, h, (int32_t)st->n)) {
		free(copy);
		return NULL;
	}
	st->v[st->n] = (struct stack){ copy, 0 };
	return &st->v[st->n++];
}

static void stacks_free(struct stacks *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->v[i].key);
	free(st->v);
	sym_table_free(&st->index);
}

static int cmp_stack(const void *a, const void *b)
{
	return strcmp(((const struct stack *)a)->key, ((const struct stack *)b)->key);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b) && (a < 0))
		q--;
	return q;
}

int folded_write(const struct profile *p, uint32_t type_index, int64_t scale,
		 const char *path, char *errbuf, size_t errlen)
{
	return folded_write_sum(p, &type_index, 1, scale, path, errbuf, errlen);
}

int folded_write_sum(const struct profile *p, const uint32_t *types, uint32_t ntypes,
		     int64_t scale, const char *path, char *errbuf, size_t errlen)
{
	struct output_file of;
	int ret = output_file_open(&of, path, errbuf, errlen);

	if (ret < 0)
		return ret;
	return output_file_finish(&of, folded_write_sum_to(p, types, ntypes, scale, &of, errbuf,
							   errlen), errbuf, errlen);
}

int folded_write_sum_to(const struct profile *p, const uint32_t *types, uint32_t ntypes,
			int64_t scale, struct output_file *of, char *errbuf, size_t errlen)
{
	struct stacks st = { 0 };
	struct buf key = { 0 }, out = { 0 };
	int ret = 0;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !of) {
		errbuf_set(errbuf, errlen, "folded: no profile or no output");
		return -EINVAL;
	}
	for (uint32_t t = 0; t < ntypes; t++) {
		if (types[t] >= p->ntypes || types[t] >= PROF_MAX_VALUES) {
			errbuf_set(errbuf, errlen, "folded: sample type %u out of range (%u types)",
				types[t], p->ntypes);
			return -EINVAL;
		}
	}
	if (scale <= 0) {
		errbuf_set(errbuf, errlen, "folded: scale %lld must be positive", (long long)scale);
		return -EINVAL;
	}
	if ((p->nsamples && !p->samples) || (p->nlocations && !p->locations)) {
		errbuf_set(errbuf, errlen, "folded: profile has a count without an array");
		return -EINVAL;
	}

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		struct stack *stk;

		if ((s->nlocs && !s->locs) || (ntypes && !s->values)) {
			errbuf_set(errbuf, errlen, "folded: sample %u has a count without an array", i);
			ret = -EINVAL;
			goto out;
		}
		key.len = 0;
		buf_add_name(&key, s->comm ? s->comm : "unknown");
		/* locs are leaf first: walk them backwards for root first */
		for (uint32_t j = s->nlocs; j-- > 0;) {
			const struct prof_location *l;

			if (s->locs[j] >= p->nlocations) {
				errbuf_set(errbuf, errlen,
					"folded: sample %u: location %u out of range (%u locations)",
					i, s->locs[j], p->nlocations);
				ret = -EINVAL;
				goto out;
			}
			l = &p->locations[s->locs[j]];
			if (l->nframes && !l->frames) {
				errbuf_set(errbuf, errlen, "folded: location %u has no frames array",
					s->locs[j]);
				ret = -EINVAL;
				goto out;
			}
			/* frames are innermost first: the real function is last */
			for (uint32_t k = l->nframes; k-- > 0;) {
				buf_add(&key, ";", 1);
				buf_add_name(&key, l->frames[k].function ? l->frames[k].function : "");
			}
		}
		if (key.oom)
			goto oom;
		stk = stacks_get(&st, key.data);
		if (!stk)
			goto oom;
		for (uint32_t t = 0; t < ntypes; t++) {
			if (__builtin_add_overflow(stk->total, s->values[types[t]], &stk->total)) {
				errbuf_set(errbuf, errlen, "folded: value of stack %s overflows",
					key.data);
				ret = -EOVERFLOW;
				goto out;
			}
		}
	}

	/* Sorted for output: the index is stale from here on. */
	if (st.n)
		qsort(st.v, st.n, sizeof(*st.v), cmp_stack);
	buf_reserve(&out, 1);
	if (out.data)
		out.data[0] = '\0';
	for (size_t i = 0; i < st.n; i++) {
		char num[32];
		int n;

		if (!st.v[i].total)
			continue;
		n = snprintf(num, sizeof(num), " %lld\n",
			     (long long)floor_div(st.v[i].total, scale));
		buf_add(&out, st.v[i].key, strlen(st.v[i].key));
		buf_add(&out, num, (size_t)n);
	}
	if (out.oom)
		goto oom;
	ret = output_file_write(of, out.data, out.len, errbuf, errlen);
	goto out;
oom:
	errbuf_set(errbuf, errlen, "folded: out of memory");
	ret = -ENOMEM;
out:
	stacks_free(&st);
	free(key.data);
	free(out.data);
	return ret;
}
