#include "agent/profile/stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/array.h"
#include "symbolize/intern.h"

/* The index starts with room for this many stacks: profiles have
 * hundreds. */
#define STACKS_FIRST 512

uint32_t stack_agg_frame_mapping(struct stack_agg *a, const struct code_mapping *m)
{
	uint32_t i;

	/* Few distinct mappings, and samples of one process cluster: search
	 * from the newest. */
	for (i = a->nframe_mappings; i > 0; i--) {
		const struct frame_mapping *p = &a->frame_mappings[i - 1];

		if (p->start == m->start && p->end == m->end && p->offset == m->offset &&
		    p->mod == m->mod && p->bias == m->bias)
			return i;
	}
	if (array_reserve_first(&a->frame_mappings, &a->cap_frame_mappings, a->nframe_mappings + 1,
				64))
		return 0;
	a->frame_mappings[a->nframe_mappings] =
		(struct frame_mapping){ m->start, m->end, m->offset, m->bias, m->mod };
	return ++a->nframe_mappings;
}

/* A sample as stack_agg_add_kind looks it up. */
struct stack_key {
	const struct stack_agg *a;   /* its labels are the current ones */
	uint32_t pid, tid;
	const char *comm;
	uint8_t end_reason;
	const struct frame_ref *frames;
	uint32_t n;
};

static uint64_t hash_stack(const struct stack_key *k)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)k->pid << 32 | k->tid);
	uint32_t i;

	/* Interned: the pointers stand for the strings. */
	h ^= (uintptr_t)k->a->cur_container_id * 0x9e3779b97f4a7c15ull;
	h ^= (uintptr_t)k->a->cur_cgroup * 0xc2b2ae3d27d4eb4full;

	h = (h ^ k->end_reason) * 0x100000001b3ull;
	for (i = 0; i < 16 && k->comm[i]; i++)
		h = (h ^ (uint8_t)k->comm[i]) * 0x100000001b3ull;
	for (i = 0; i < k->n; i++) {
		h ^= k->frames[i].addr + ((uint64_t)k->frames[i].mapping << 48);
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 31;
	}
	return h;
}

static bool stack_eq(void *ctx, int32_t id)
{
	const struct stack_key *k = ctx;
	const struct stack *s = k->a->stacks[id];

	return s->pid == k->pid && s->tid == k->tid && s->end_reason == k->end_reason &&
	       s->container_id == k->a->cur_container_id && s->cgroup == k->a->cur_cgroup &&
	       s->nframes == k->n && !strncmp(s->comm, k->comm, sizeof(s->comm)) &&
	       !memcmp(s->frames, k->frames, k->n * sizeof(*k->frames));
}

int64_t stack_agg_mark(struct stack_agg *a, const char *name)
{
	uint64_t h = sym_hash_bytes(name, strlen(name));
	int32_t id = sym_table_find_str(&a->mark_index, h, a->marks, name);
	char *copy;

	if (id >= 0)
		return id;
	/* ids are the index's int32_t */
	if (a->nmarks > INT32_MAX || array_reserve(&a->marks, &a->cap_marks, a->nmarks + 1))
		return -ENOMEM;
	copy = strdup(name);
	if (!copy || sym_table_insert(&a->mark_index, h, (int32_t)a->nmarks)) {
		free(copy);
		return -ENOMEM;
	}
	a->marks[a->nmarks] = copy;
	return a->nmarks++;
}

/* The owned copy of `v`: few distinct values (one per container and
 * cgroup), so a linear search is enough. */
static const char *label_str(struct stack_agg *a, const char *cur, const char *v, int *err)
{
	uint32_t i;
	char *copy;

	if (!v || !*v)
		return NULL;
	/* Per sample: consecutive samples are mostly of one process. */
	if (cur && !strcmp(cur, v))
		return cur;
	for (i = 0; i < a->nlabel_strs; i++)
		if (!strcmp(a->label_strs[i], v))
			return a->label_strs[i];
	copy = array_reserve(&a->label_strs, &a->cap_label_strs, a->nlabel_strs + 1) ? NULL : strdup(v);
	if (!copy) {
		*err = -ENOMEM;
		return NULL;
	}
	a->label_strs[a->nlabel_strs++] = copy;
	return copy;
}

int stack_agg_set_labels(struct stack_agg *a, const char *container_id, const char *cgroup)
{
	int err = 0;

	a->cur_container_id = label_str(a, a->cur_container_id, container_id, &err);
	a->cur_cgroup = label_str(a, a->cur_cgroup, cgroup, &err);
	return err;
}

int stack_agg_add(struct stack_agg *a, uint32_t pid, uint32_t tid, const char *comm,
		  uint8_t end_reason, const struct frame_ref *frames, uint32_t n, uint64_t weight)
{
	return stack_agg_add_kind(a, STACK_ON_CPU, pid, tid, comm, end_reason, frames, n, weight);
}

/* A new stack for the sample `k`, added to the index under `h`. */
static struct stack *new_stack(struct stack_agg *a, const struct stack_key *k, uint64_t h)
{
	struct stack *s;

	if (a->n > INT32_MAX || array_reserve(&a->stacks, &a->cap, a->n + 1))
		return NULL;
	s = calloc(1, sizeof(*s) + k->n * sizeof(*k->frames));
	if (!s || sym_table_insert(&a->index, h, (int32_t)a->n)) {
		free(s);
		return NULL;
	}
	s->pid = k->pid;
	s->tid = k->tid;
	strncpy(s->comm, k->comm, sizeof(s->comm) - 1);
	s->end_reason = k->end_reason;
	s->container_id = a->cur_container_id;
	s->cgroup = a->cur_cgroup;
	s->nframes = k->n;
	memcpy(s->frames, k->frames, k->n * sizeof(*k->frames));
	a->stacks[a->n++] = s;
	return s;
}

int stack_agg_add_kind(struct stack_agg *a, enum stack_kind kind, uint32_t pid, uint32_t tid,
		       const char *comm, uint8_t end_reason, const struct frame_ref *frames,
		       uint32_t n, uint64_t weight)
{
	struct stack_key k = { a, pid, tid, comm, end_reason, frames, n };
	uint64_t h = hash_stack(&k);
	struct stack *s;
	int32_t id;

	/* Room for one more before the lookup, found or not: when the index
	 * grows decides its slot order, which profiles list stacks in. */
	if (sym_table_reserve(&a->index, a->n < STACKS_FIRST ? STACKS_FIRST : a->n + 1))
		return -ENOMEM;
	id = sym_table_find(&a->index, h, stack_eq, &k);
	s = id >= 0 ? a->stacks[id] : new_stack(a, &k, h);
	if (!s)
		return -ENOMEM;
	s->count[kind]++;
	s->weight[kind] += weight;
	a->samples[kind]++;
	a->weight[kind] += weight;
	return 0;
}

const struct stack *stack_agg_next(const struct stack_agg *a, size_t *pos)
{
	int32_t id = sym_table_next(&a->index, pos);

	return id >= 0 ? a->stacks[id] : NULL;
}

void stack_agg_free(struct stack_agg *a)
{
	uint32_t i;

	for (i = 0; i < a->n; i++)
		free(a->stacks[i]);
	free(a->stacks);
	sym_table_free(&a->index);
	free(a->frame_mappings);
	for (i = 0; i < a->nmarks; i++)
		free(a->marks[i]);
	free(a->marks);
	sym_table_free(&a->mark_index);
	for (i = 0; i < a->nlabel_strs; i++)
		free(a->label_strs[i]);
	free(a->label_strs);
	memset(a, 0, sizeof(*a));
}
