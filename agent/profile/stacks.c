#include "agent/profile/stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t stack_agg_frame_mapping(struct stack_agg *a, const struct proc_mapping *m)
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
	if (a->nframe_mappings == a->cap_frame_mappings) {
		uint32_t ncap = a->cap_frame_mappings ? a->cap_frame_mappings * 2 : 64;
		void *p = realloc(a->frame_mappings, ncap * sizeof(*a->frame_mappings));

		if (!p)
			return 0;
		a->frame_mappings = p;
		a->cap_frame_mappings = ncap;
	}
	a->frame_mappings[a->nframe_mappings] =
		(struct frame_mapping){ m->start, m->end, m->offset, m->bias, m->mod };
	return ++a->nframe_mappings;
}

static uint64_t hash_stack(const struct stack_agg *a, uint32_t pid, uint32_t tid, const char *comm,
			   uint8_t end, const struct frame_ref *f, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)pid << 32 | tid);
	uint32_t i;

	/* Interned: the pointers stand for the strings. */
	h ^= (uintptr_t)a->cur_container_id * 0x9e3779b97f4a7c15ull;
	h ^= (uintptr_t)a->cur_cgroup * 0xc2b2ae3d27d4eb4full;

	h = (h ^ end) * 0x100000001b3ull;
	for (i = 0; i < 16 && comm[i]; i++)
		h = (h ^ (uint8_t)comm[i]) * 0x100000001b3ull;
	for (i = 0; i < n; i++) {
		h ^= f[i].addr + ((uint64_t)f[i].mapping << 48);
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 31;
	}
	return h;
}

static bool same(const struct stack_agg *a, const struct stack *s, uint64_t h, uint32_t pid,
		 uint32_t tid, const char *comm, uint8_t end, const struct frame_ref *f, uint32_t n)
{
	return s->hash == h && s->pid == pid && s->tid == tid && s->end_reason == end &&
	       s->container_id == a->cur_container_id && s->cgroup == a->cur_cgroup &&
	       s->nframes == n && !strncmp(s->comm, comm, sizeof(s->comm)) &&
	       !memcmp(s->frames, f, n * sizeof(*f));
}

static int grow(struct stack_agg *a)
{
	uint32_t ncap = a->cap ? a->cap * 2 : 1024, i, j;
	struct stack **ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (i = 0; i < a->cap; i++) {
		if (!a->slots[i])
			continue;
		for (j = a->slots[i]->hash & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1))
			;
		ns[j] = a->slots[i];
	}
	free(a->slots);
	a->slots = ns;
	a->cap = ncap;
	return 0;
}

static uint64_t hash_name(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static int marks_grow(struct stack_agg *a)
{
	uint32_t ncap = a->mark_cap ? a->mark_cap * 2 : 64, i, j;
	uint32_t *slots = calloc(ncap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < a->nmarks; i++) {
		for (j = hash_name(a->marks[i]) & (ncap - 1); slots[j]; j = (j + 1) & (ncap - 1))
			;
		slots[j] = i + 1;
	}
	free(a->mark_slots);
	a->mark_slots = slots;
	a->mark_cap = ncap;
	return 0;
}

int64_t stack_agg_mark(struct stack_agg *a, const char *name)
{
	uint32_t j;

	if ((a->nmarks + 1) * 2 > a->mark_cap && marks_grow(a))
		return -ENOMEM;
	for (j = hash_name(name) & (a->mark_cap - 1); a->mark_slots[j]; j = (j + 1) & (a->mark_cap - 1))
		if (!strcmp(a->marks[a->mark_slots[j] - 1], name))
			return a->mark_slots[j] - 1;
	if (a->nmarks == a->cap_marks) {
		uint32_t ncap = a->cap_marks ? a->cap_marks * 2 : 64;
		void *p = realloc(a->marks, ncap * sizeof(*a->marks));

		if (!p)
			return -ENOMEM;
		a->marks = p;
		a->cap_marks = ncap;
	}
	a->marks[a->nmarks] = strdup(name);
	if (!a->marks[a->nmarks])
		return -ENOMEM;
	a->mark_slots[j] = ++a->nmarks;
	return a->nmarks - 1;
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
	if (a->nlabel_strs == a->cap_label_strs) {
		uint32_t ncap = a->cap_label_strs ? a->cap_label_strs * 2 : 16;
		char **p = realloc(a->label_strs, ncap * sizeof(*p));

		if (!p) {
			*err = -ENOMEM;
			return NULL;
		}
		a->label_strs = p;
		a->cap_label_strs = ncap;
	}
	copy = strdup(v);
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

int stack_agg_add_kind(struct stack_agg *a, enum stack_kind kind, uint32_t pid, uint32_t tid,
		       const char *comm, uint8_t end_reason, const struct frame_ref *frames,
		       uint32_t n, uint64_t weight)
{
	uint64_t h = hash_stack(a, pid, tid, comm, end_reason, frames, n);
	struct stack *s;
	uint32_t j;

	if ((a->n + 1) * 2 > a->cap && grow(a))
		return -ENOMEM;
	for (j = h & (a->cap - 1); (s = a->slots[j]); j = (j + 1) & (a->cap - 1)) {
		if (same(a, s, h, pid, tid, comm, end_reason, frames, n))
			goto found;
	}
	s = calloc(1, sizeof(*s) + n * sizeof(*frames));
	if (!s)
		return -ENOMEM;
	s->hash = h;
	s->pid = pid;
	s->tid = tid;
	strncpy(s->comm, comm, sizeof(s->comm) - 1);
	s->end_reason = end_reason;
	s->container_id = a->cur_container_id;
	s->cgroup = a->cur_cgroup;
	s->nframes = n;
	memcpy(s->frames, frames, n * sizeof(*frames));
	a->slots[j] = s;
	a->n++;
found:
	s->count[kind]++;
	s->weight[kind] += weight;
	a->samples[kind]++;
	a->weight[kind] += weight;
	return 0;
}

void stack_agg_free(struct stack_agg *a)
{
	uint32_t i;

	for (i = 0; i < a->cap; i++)
		free(a->slots[i]);
	free(a->slots);
	free(a->frame_mappings);
	for (i = 0; i < a->nmarks; i++)
		free(a->marks[i]);
	free(a->marks);
	free(a->mark_slots);
	for (i = 0; i < a->nlabel_strs; i++)
		free(a->label_strs[i]);
	free(a->label_strs);
	memset(a, 0, sizeof(*a));
}
