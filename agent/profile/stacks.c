#include "agent/profile/stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/util/array.h"
#include "symbolize/intern.h"

/* The index starts with room for this many stacks: profiles have
 * hundreds. */
#define STACKS_FIRST 512

/* Sealed stacks are deflated this many bytes at a time: a few thousand
 * stacks, enough for zlib to find what the stacks of one program share. */
#define SEAL_BLOCK (64 * 1024)

/* stack_agg_next's position once past the index: this bit, the block
 * (bits 32..62) and the offset in it (bits 0..31). */
#define POS_SEALED ((size_t)1 << 63)
_Static_assert(sizeof(size_t) == 8, "stack_agg_next's positions want a 64-bit size_t");

struct stack_cursor {
	unsigned char *raw;        /* sealed block `block`, inflated */
	size_t cap_raw;
	uint32_t block;            /* UINT32_MAX: none yet */
	struct stack *s;           /* the stack last decoded */
	uint32_t cap_frames;
	struct frame_mapping *maps; /* its frame mappings */
	uint32_t cap_maps;
};

static uint64_t hash_mapping(const struct frame_mapping *m)
{
	uint64_t h = sym_hash_u64(m->start ^ (m->end << 17) ^ (m->offset << 31));

	h = sym_hash_u64(h ^ m->bias);
	return sym_hash_u64(h ^ (uintptr_t)m->mod);
}

static bool same_mapping(const struct frame_mapping *x, const struct frame_mapping *y)
{
	return x->start == y->start && x->end == y->end && x->offset == y->offset &&
	       x->bias == y->bias && x->mod == y->mod;
}

struct fm_key {
	const struct stack_agg *a;
	const struct frame_mapping *m;
	uint32_t id;
};

static bool slot_has_content(void *ctx, int32_t slot)
{
	const struct fm_key *k = ctx;

	return same_mapping(&k->a->mappings[slot].m, k->m);
}

static bool slot_has_id(void *ctx, int32_t slot)
{
	const struct fm_key *k = ctx;

	return k->a->mappings[slot].id == k->id;
}

static int32_t slot_of_id(const struct stack_agg *a, uint32_t id)
{
	struct fm_key k = { a, NULL, id };

	return sym_table_find(&a->mapping_by_id, sym_hash_u64(id), slot_has_id, &k);
}

uint32_t stack_agg_frame_mapping(struct stack_agg *a, const struct code_mapping *m)
{
	struct frame_mapping fm = { m->start, m->end, m->offset, m->bias, m->mod };
	struct fm_key k = { a, &fm, 0 };
	uint64_t h = hash_mapping(&fm);
	int32_t slot = sym_table_find(&a->mapping_by_content, h, slot_has_content, &k);
	uint32_t id = a->last_mapping_id + 1;

	if (slot >= 0) {
		a->mappings[slot].unused_seals = 0;
		return a->mappings[slot].id;
	}
	/* Ids stop short of FRAME_MARK; slots are the index's int32_t. */
	if (id >= FRAME_MARK || a->nmappings >= INT32_MAX ||
	    array_reserve_first(&a->mappings, &a->cap_mappings, a->nmappings + 1, 64) ||
	    sym_table_reserve(&a->mapping_by_content, a->nmappings + 1) ||
	    sym_table_reserve(&a->mapping_by_id, a->nmappings + 1))
		return 0;
	slot = (int32_t)a->nmappings++;
	a->mappings[slot] = (struct mapping_slot){ fm, id, 0 };
	sym_table_insert(&a->mapping_by_content, h, slot);
	sym_table_insert(&a->mapping_by_id, sym_hash_u64(id), slot);
	a->last_mapping_id = id;
	return id;
}

const struct frame_mapping *stack_agg_mapping(const struct stack_agg *a, const struct stack *s,
					      uint32_t id)
{
	int32_t slot;

	if (!id || id == FRAME_KERNEL || id == FRAME_MARK)
		return NULL;
	if (s && s->maps)
		return id <= s->nmaps ? &s->maps[id - 1] : NULL;
	slot = slot_of_id(a, id);
	return slot >= 0 ? &a->mappings[slot].m : NULL;
}

/* Drops the mapping in `slot`: the last slot fills the hole. */
static void drop_mapping(struct stack_agg *a, int32_t slot)
{
	int32_t last = (int32_t)a->nmappings - 1;
	struct mapping_slot *m = &a->mappings[slot];

	sym_table_remove(&a->mapping_by_content, hash_mapping(&m->m), slot);
	sym_table_remove(&a->mapping_by_id, sym_hash_u64(m->id), slot);
	if (slot != last) {
		struct mapping_slot *l = &a->mappings[last];

		/* Cannot fail: each index just lost an entry and takes one. */
		sym_table_remove(&a->mapping_by_content, hash_mapping(&l->m), last);
		sym_table_remove(&a->mapping_by_id, sym_hash_u64(l->id), last);
		*m = *l;
		sym_table_insert(&a->mapping_by_content, hash_mapping(&m->m), slot);
		sym_table_insert(&a->mapping_by_id, sym_hash_u64(m->id), slot);
	}
	a->nmappings--;
}

/* After a seal: the mappings no live stack uses go, once two seals in a
 * row found them so -- the second seal at least 250 ms later, time for
 * whoever holds an id (an off-CPU waker's frames, waiting for the
 * wakee's record) to be done with it. */
static void drop_unused_mappings(struct stack_agg *a)
{
	uint32_t i, j;
	int32_t slot;

	for (i = 0; i < a->nmappings; i++)
		a->mappings[i].unused_seals++;
	for (i = 0; i < a->n; i++)
		for (j = 0; j < a->stacks[i]->nframes; j++) {
			const struct frame_ref *f = &a->stacks[i]->frames[j];

			if (f->mapping && f->mapping != FRAME_KERNEL && f->mapping != FRAME_MARK &&
			    (slot = slot_of_id(a, f->mapping)) >= 0)
				a->mappings[slot].unused_seals = 0;
		}
	for (i = a->nmappings; i > 0; i--)
		if (a->mappings[i - 1].unused_seals >= 2)
			drop_mapping(a, (int32_t)(i - 1));
}

/* A sample as stack_agg_add_kind looks it up. */
struct stack_key {
	const struct stack_agg *a;   /* its labels are the current ones */
	uint32_t pid, tid;
	const char *comm;
	uint8_t end_reason;
	uint16_t event;
	const struct frame_ref *frames;
	uint32_t n;
};

/* The labels a stack carries besides its sample's own (interned: the
 * pointers stand for the strings). */
struct stack_labels {
	const char *container_id, *cgroup, *service_name, *container_name;
};

static struct stack_labels cur_labels(const struct stack_agg *a)
{
	return (struct stack_labels){ a->cur_container_id, a->cur_cgroup, a->cur_service_name,
				      a->cur_container_name };
}

/* The hash of a sample with the labels `l`. */
static uint64_t hash_stack(const struct stack_key *k, struct stack_labels l)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)k->pid << 32 | k->tid);
	uint32_t i;

	h ^= (uintptr_t)l.container_id * 0x9e3779b97f4a7c15ull;
	h ^= (uintptr_t)l.cgroup * 0xc2b2ae3d27d4eb4full;
	h ^= (uintptr_t)l.service_name * 0x165667b19e3779f9ull;
	h ^= (uintptr_t)l.container_name * 0x27d4eb2f165667c5ull;

	h = (h ^ k->end_reason) * 0x100000001b3ull;
	h = (h ^ k->event) * 0x100000001b3ull;
	for (i = 0; i < 16 && k->comm[i]; i++)
		h = (h ^ (uint8_t)k->comm[i]) * 0x100000001b3ull;
	for (i = 0; i < k->n; i++) {
		h ^= k->frames[i].addr + ((uint64_t)k->frames[i].mapping << 48);
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 31;
	}
	return h;
}

static uint64_t hash_of(const struct stack_agg *a, const struct stack *s)
{
	struct stack_key k = { a, s->pid, s->tid, s->comm, s->end_reason, s->event, s->frames,
			       s->nframes };

	return hash_stack(&k, (struct stack_labels){ s->container_id, s->cgroup, s->service_name,
						      s->container_name });
}

static bool stack_eq(void *ctx, int32_t id)
{
	const struct stack_key *k = ctx;
	const struct stack *s = k->a->stacks[id];

	return s->pid == k->pid && s->tid == k->tid && s->end_reason == k->end_reason &&
	       s->event == k->event &&
	       s->container_id == k->a->cur_container_id && s->cgroup == k->a->cur_cgroup &&
	       s->service_name == k->a->cur_service_name &&
	       s->container_name == k->a->cur_container_name &&
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

int stack_agg_set_service(struct stack_agg *a, const char *service_name,
			  const char *container_name)
{
	int err = 0;

	a->cur_service_name = label_str(a, a->cur_service_name, service_name, &err);
	a->cur_container_name = label_str(a, a->cur_container_name, container_name, &err);
	return err;
}

static int add_sample(struct stack_agg *a, enum stack_kind kind, const struct stack_key *k,
		      uint64_t weight);

int stack_agg_add(struct stack_agg *a, uint32_t pid, uint32_t tid, const char *comm,
		  uint8_t end_reason, const struct frame_ref *frames, uint32_t n, uint64_t weight)
{
	return stack_agg_add_event(a, 0, pid, tid, comm, end_reason, frames, n, weight);
}

int stack_agg_add_event(struct stack_agg *a, uint16_t event, uint32_t pid, uint32_t tid,
			const char *comm, uint8_t end_reason, const struct frame_ref *frames,
			uint32_t n, uint64_t weight)
{
	struct stack_key k = { a, pid, tid, comm, end_reason, event, frames, n };

	return add_sample(a, STACK_ON_CPU, &k, weight);
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
	s->event = k->event;
	s->container_id = a->cur_container_id;
	s->cgroup = a->cur_cgroup;
	s->service_name = a->cur_service_name;
	s->container_name = a->cur_container_name;
	s->nframes = k->n;
	memcpy(s->frames, k->frames, k->n * sizeof(*k->frames));
	a->stacks[a->n++] = s;
	return s;
}

int stack_agg_add_kind(struct stack_agg *a, enum stack_kind kind, uint32_t pid, uint32_t tid,
		       const char *comm, uint8_t end_reason, const struct frame_ref *frames,
		       uint32_t n, uint64_t weight)
{
	struct stack_key k = { a, pid, tid, comm, end_reason, 0, frames, n };

	return add_sample(a, kind, &k, weight);
}

static int add_sample(struct stack_agg *a, enum stack_kind kind, const struct stack_key *key,
		      uint64_t weight)
{
	struct stack_key k = *key;
	uint64_t h = hash_stack(&k, cur_labels(a));
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

static void put_varint(unsigned char **w, uint64_t v)
{
	while (v >= 0x80) {
		*(*w)++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*(*w)++ = (unsigned char)v;
}

static bool get_varint(const unsigned char **r, const unsigned char *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*r < end && shift < 64) {
		unsigned char c = *(*r)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

/* A label's position in label_strs + 1, 0 for none. */
static uint64_t label_code(const struct stack_agg *a, const char *v)
{
	uint32_t i;

	for (i = 0; v && i < a->nlabel_strs; i++)
		if (a->label_strs[i] == v)
			return i + 1;
	return 0;
}

/* The index + 1 of module `m` among the modules sealed mappings name (0
 * for none), added if need be; -ENOMEM. */
static int64_t seal_mod_code(struct stack_agg *a, struct module *m)
{
	uint32_t i;

	if (!m)
		return 0;
	for (i = a->nseal_mods; i > 0; i--)
		if (a->seal_mods[i - 1] == m)
			return i;
	if (array_reserve_first(&a->seal_mods, &a->cap_seal_mods, a->nseal_mods + 1, 16))
		return -ENOMEM;
	a->seal_mods[a->nseal_mods++] = m;
	return a->nseal_mods;
}

static uint64_t zigzag(uint64_t d)
{
	return (d << 1) ^ (uint64_t)-(int64_t)(d >> 63);
}

static uint64_t unzigzag(uint64_t v)
{
	return (v >> 1) ^ (uint64_t)-(int64_t)(v & 1);
}

/* Appends `s`, encoded, to the block being filled, with the frame
 * mappings its frames use: a sealed stack needs nothing of the
 * aggregation's but its labels, marks and modules. */
static int encode_stack(struct stack_agg *a, const struct stack *s)
{
	/* Every varint takes at most 10 bytes. */
	size_t most = 16 + 10 * (11 + 7 * (size_t)s->nframes + 2 * STACK_KINDS) + sizeof(s->comm);
	size_t comm_len = strnlen(s->comm, sizeof(s->comm));
	uint32_t *ids = s->nframes ? malloc(s->nframes * sizeof(*ids)) : NULL;
	uint32_t nids = 0, i, k;
	uint64_t prev = 0;
	unsigned char *w;

	if ((s->nframes && !ids) ||
	    array_reserve_first(&a->fill, &a->cap_fill, a->nfill + most, SEAL_BLOCK + 4096)) {
		free(ids);
		return -ENOMEM;
	}
	/* The stack's own numbering of its mappings, in the order its
	 * frames meet them: 1..nids. */
	for (i = 0; i < s->nframes; i++) {
		uint32_t m = s->frames[i].mapping;

		if (!stack_agg_mapping(a, NULL, m))
			continue;
		for (k = 0; k < nids && ids[k] != m; k++)
			;
		if (k == nids)
			ids[nids++] = m;
	}
	for (i = 0; i < nids; i++)
		if (seal_mod_code(a, stack_agg_mapping(a, NULL, ids[i])->mod) < 0) {
			free(ids);
			return -ENOMEM;
		}
	w = a->fill + a->nfill;
	put_varint(&w, s->pid);
	put_varint(&w, s->tid);
	*w++ = (unsigned char)comm_len;
	memcpy(w, s->comm, comm_len);
	w += comm_len;
	*w++ = s->end_reason;
	put_varint(&w, label_code(a, s->container_id));
	put_varint(&w, label_code(a, s->cgroup));
	put_varint(&w, label_code(a, s->service_name));
	put_varint(&w, label_code(a, s->container_name));
	put_varint(&w, s->event);
	put_varint(&w, nids);
	for (i = 0; i < nids; i++) {
		const struct frame_mapping *m = stack_agg_mapping(a, NULL, ids[i]);

		put_varint(&w, (uint64_t)seal_mod_code(a, m->mod));
		put_varint(&w, m->start);
		put_varint(&w, m->end - m->start);
		put_varint(&w, m->offset);
		put_varint(&w, zigzag(m->start - m->bias));
	}
	put_varint(&w, s->nframes);
	for (i = 0; i < s->nframes; i++) {
		uint32_t m = s->frames[i].mapping, local = 0;

		for (k = 0; k < nids; k++)
			if (ids[k] == m)
				local = k + 1;
		/* 0 unknown (an id no longer known too), 1 kernel, 2 mark,
		 * else the stack's mapping + 2. */
		put_varint(&w, m == FRAME_KERNEL ? 1 : m == FRAME_MARK ? 2 : local ? local + 2 : 0);
		put_varint(&w, zigzag(s->frames[i].addr - prev));
		prev = s->frames[i].addr;
	}
	for (i = 0; i < STACK_KINDS; i++) {
		put_varint(&w, s->count[i]);
		put_varint(&w, s->weight[i]);
	}
	a->nfill = (size_t)(w - a->fill);
	free(ids);
	return 0;
}

/* Deflates the block being filled once it is full. */
static int close_block(struct stack_agg *a)
{
	uLongf len = compressBound(a->nfill);
	unsigned char *z;

	if (a->nfill < SEAL_BLOCK)
		return 0;
	if (a->nsealed >= INT32_MAX ||
	    array_reserve_first(&a->sealed, &a->cap_sealed, a->nsealed + 1, 16))
		return -ENOMEM;
	z = malloc(len);
	if (!z || compress2(z, &len, a->fill, a->nfill, Z_BEST_SPEED) != Z_OK) {
		free(z);
		return -ENOMEM;
	}
	a->sealed[a->nsealed++] = (struct sealed_block){ realloc(z, len) ?: z, (uint32_t)len,
							 (uint32_t)a->nfill };
	a->nfill = 0;
	return 0;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

int stack_agg_seal(struct stack_agg *a, const uint32_t *pids, uint32_t n)
{
	struct sym_table index = { 0 };
	uint32_t *sorted, i, keep = 0;
	bool sealed = false;
	int err = 0;

	if (!n)
		return 0;
	if (!a->n) {
		drop_unused_mappings(a);
		return 0;
	}
	if (!a->cursor) {
		a->cursor = calloc(1, sizeof(*a->cursor));
		if (!a->cursor)
			return -ENOMEM;
		a->cursor->block = UINT32_MAX;
	}
	sorted = malloc(n * sizeof(*sorted));
	/* The new index is made before anything moves: once stacks are
	 * sealed, there is no going back to the old one. */
	if (!sorted || sym_table_reserve(&index, a->n < STACKS_FIRST ? STACKS_FIRST : a->n)) {
		free(sorted);
		sym_table_free(&index);
		return -ENOMEM;
	}
	memcpy(sorted, pids, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u32);
	for (i = 0; i < a->n; i++) {
		struct stack *s = a->stacks[i];

		if (!err && bsearch(&s->pid, sorted, n, sizeof(*sorted), cmp_u32) &&
		    !(err = encode_stack(a, s))) {
			free(s);
			a->nsealed_stacks++;
			sealed = true;
			err = close_block(a);
			continue;
		}
		a->stacks[keep++] = s;
	}
	free(sorted);
	if (!sealed) {
		sym_table_free(&index);
		drop_unused_mappings(a);
		return err;
	}
	/* The live stacks in the order first seen: reserved above, so no
	 * insert can fail. */
	for (i = 0; i < keep; i++)
		sym_table_insert(&index, hash_of(a, a->stacks[i]), (int32_t)i);
	sym_table_free(&a->index);
	a->index = index;
	a->n = keep;
	drop_unused_mappings(a);
	return err;
}

/* Decodes the frame mappings of the stack at *r into the cursor's. */
static bool decode_maps(const struct stack_agg *a, const unsigned char **r,
			const unsigned char *end, uint32_t *nmaps)
{
	struct stack_cursor *c = a->cursor;
	uint64_t n, mod, start, len, offset, vstart;
	uint32_t i;

	/* Five varints a mapping, a byte each at least. */
	if (!get_varint(r, end, &n) || n > (uint64_t)(end - *r) / 5)
		return false;
	if (n > c->cap_maps) {
		struct frame_mapping *m = realloc(c->maps, n * sizeof(*m));

		if (!m)
			return false;
		c->maps = m;
		c->cap_maps = (uint32_t)n;
	}
	for (i = 0; i < n; i++) {
		if (!get_varint(r, end, &mod) || !get_varint(r, end, &start) ||
		    !get_varint(r, end, &len) || !get_varint(r, end, &offset) ||
		    !get_varint(r, end, &vstart) || mod > a->nseal_mods)
			return false;
		c->maps[i] = (struct frame_mapping){ start, start + len, offset,
						     start - unzigzag(vstart),
						     mod ? a->seal_mods[mod - 1] : NULL };
	}
	*nmaps = (uint32_t)n;
	return true;
}

/* Decodes the stack at *r into the cursor's stack. */
static const struct stack *decode_stack(const struct stack_agg *a, const unsigned char **r,
					const unsigned char *end)
{
	struct stack_cursor *c = a->cursor;
	uint64_t pid, tid, cid, cg, svc, cname, event, nframes, v, prev = 0;
	unsigned comm_len, end_reason;
	const unsigned char *comm;
	uint32_t i, nmaps;
	struct stack *s;

	if (!get_varint(r, end, &pid) || !get_varint(r, end, &tid) || *r >= end)
		return NULL;
	comm_len = *(*r)++;
	if (comm_len >= sizeof(s->comm) || end - *r < comm_len + 1)
		return NULL;
	comm = *r;
	*r += comm_len;
	end_reason = *(*r)++;
	if (!get_varint(r, end, &cid) || !get_varint(r, end, &cg) || cid > a->nlabel_strs ||
	    cg > a->nlabel_strs || !get_varint(r, end, &svc) || !get_varint(r, end, &cname) ||
	    svc > a->nlabel_strs || cname > a->nlabel_strs || !get_varint(r, end, &event) || event > UINT16_MAX ||
	    !decode_maps(a, r, end, &nmaps) ||
	    !get_varint(r, end, &nframes) || nframes > (uint64_t)(end - *r))
		return NULL;
	/* (A stack of no frame still needs the struct: a sample taken in
	 * execve, without --kernel, has none.) */
	if (!c->s || nframes > c->cap_frames) {
		s = realloc(c->s, sizeof(*s) + nframes * sizeof(s->frames[0]));
		if (!s)
			return NULL;
		c->s = s;
		c->cap_frames = (uint32_t)nframes;
	}
	s = c->s;
	memset(s, 0, sizeof(*s));
	s->pid = (uint32_t)pid;
	s->tid = (uint32_t)tid;
	memcpy(s->comm, comm, comm_len);
	s->end_reason = (uint8_t)end_reason;
	s->event = (uint16_t)event;
	s->container_id = cid ? a->label_strs[cid - 1] : NULL;
	s->cgroup = cg ? a->label_strs[cg - 1] : NULL;
	s->service_name = svc ? a->label_strs[svc - 1] : NULL;
	s->container_name = cname ? a->label_strs[cname - 1] : NULL;
	s->maps = c->maps;
	s->nmaps = nmaps;
	s->nframes = (uint32_t)nframes;
	for (i = 0; i < s->nframes; i++) {
		if (!get_varint(r, end, &v) || v > (uint64_t)nmaps + 2)
			return NULL;
		s->frames[i].mapping = v == 1 ? FRAME_KERNEL : v == 2 ? FRAME_MARK : v ? (uint32_t)(v - 2) : 0;
		if (!get_varint(r, end, &v))
			return NULL;
		prev += unzigzag(v);
		s->frames[i].addr = prev;
	}
	for (i = 0; i < STACK_KINDS; i++)
		if (!get_varint(r, end, &s->count[i]) || !get_varint(r, end, &s->weight[i]))
			return NULL;
	return s;
}

/* Sealed block `b` (the one being filled: nsealed) as raw bytes. */
static const unsigned char *sealed_raw(const struct stack_agg *a, uint32_t b, size_t *len)
{
	struct stack_cursor *c = a->cursor;
	uLongf n;

	if (b == a->nsealed) {
		*len = a->nfill;
		return a->fill;
	}
	if (c->block != b) {
		n = a->sealed[b].raw_len;
		if (n > c->cap_raw) {
			unsigned char *raw = realloc(c->raw, n);

			if (!raw)
				return NULL;
			c->raw = raw;
			c->cap_raw = n;
		}
		c->block = UINT32_MAX;
		if (uncompress(c->raw, &n, a->sealed[b].data, a->sealed[b].len) != Z_OK ||
		    n != a->sealed[b].raw_len)
			return NULL;
		c->block = b;
	}
	*len = a->sealed[b].raw_len;
	return c->raw;
}

const struct stack *stack_agg_next(const struct stack_agg *a, size_t *pos)
{
	const unsigned char *raw, *r;
	const struct stack *s;
	uint32_t b;
	size_t len, off;

	if (!(*pos & POS_SEALED)) {
		int32_t id = sym_table_next(&a->index, pos);

		if (id >= 0)
			return a->stacks[id];
		*pos = POS_SEALED;
	}
	if (!a->cursor)
		return NULL;
	b = (uint32_t)((*pos & ~POS_SEALED) >> 32);
	off = *pos & 0xffffffffu;
	for (; b <= a->nsealed; b++, off = 0) {
		raw = sealed_raw(a, b, &len);
		if (!raw)
			return NULL;
		if (off < len)
			break;
	}
	if (b > a->nsealed)
		return NULL;
	r = raw + off;
	s = decode_stack(a, &r, raw + len);
	*pos = POS_SEALED | (size_t)b << 32 | (size_t)(r - raw);
	return s;
}

uint64_t stack_agg_count(const struct stack_agg *a)
{
	return a->n + a->nsealed_stacks;
}

static size_t table_bytes(const struct sym_table *t)
{
	return t->slots ? (t->mask + 1) * sizeof(*t->slots) : 0;
}

uint64_t stack_agg_bytes(const struct stack_agg *a)
{
	uint64_t n = (uint64_t)a->cap * sizeof(*a->stacks) + a->cap_fill +
		     (uint64_t)a->cap_sealed * sizeof(*a->sealed) +
		     (uint64_t)a->cap_mappings * sizeof(*a->mappings) +
		     (uint64_t)a->cap_seal_mods * sizeof(*a->seal_mods) +
		     table_bytes(&a->index) + table_bytes(&a->mapping_by_content) +
		     table_bytes(&a->mapping_by_id) + table_bytes(&a->mark_index);
	uint32_t i;

	for (i = 0; i < a->n; i++)
		n += sizeof(*a->stacks[i]) + a->stacks[i]->nframes * sizeof(a->stacks[i]->frames[0]);
	for (i = 0; i < a->nsealed; i++)
		n += a->sealed[i].len;
	if (a->cursor)
		n += sizeof(*a->cursor) + a->cursor->cap_raw +
		     sizeof(*a->cursor->s) + a->cursor->cap_frames * sizeof(a->cursor->s->frames[0]) +
		     a->cursor->cap_maps * sizeof(*a->cursor->maps);
	return n;
}

void stack_agg_fix_marks(struct stack_agg *a)
{
	a->nfixed_marks = a->nmarks;
}

int stack_agg_reset(struct stack_agg *a)
{
	struct stack_agg fresh = { 0 };
	uint32_t i, last_id = a->last_mapping_id;
	int err = 0;

	/* The fixed marks first: ids handed out (engine's event marks) stay
	 * good. */
	for (i = 0; i < a->nfixed_marks && !err; i++)
		if (stack_agg_mark(&fresh, a->marks[i]) != (int64_t)i)
			err = -ENOMEM;
	if (err) {
		stack_agg_free(&fresh);
		return err;
	}
	stack_agg_free(a);
	*a = fresh;
	a->nfixed_marks = a->nmarks;
	/* Not reused at once: a frame_ref held across the cut names no
	 * mapping of the new aggregation.  Past half the range they start
	 * again, or a daemon's months of intervals would run out of ids
	 * (FRAME_MARK) and leave every frame unknown. */
	a->last_mapping_id = last_id < FRAME_MARK / 2 ? last_id : 0;
	return 0;
}

void stack_agg_free(struct stack_agg *a)
{
	uint32_t i;

	for (i = 0; i < a->nsealed; i++)
		free(a->sealed[i].data);
	free(a->sealed);
	free(a->fill);
	if (a->cursor) {
		free(a->cursor->raw);
		free(a->cursor->s);
		free(a->cursor->maps);
		free(a->cursor);
	}
	free(a->seal_mods);
	sym_table_free(&a->mapping_by_content);
	sym_table_free(&a->mapping_by_id);

	for (i = 0; i < a->n; i++)
		free(a->stacks[i]);
	free(a->stacks);
	sym_table_free(&a->index);
	free(a->mappings);
	for (i = 0; i < a->nmarks; i++)
		free(a->marks[i]);
	free(a->marks);
	sym_table_free(&a->mark_index);
	for (i = 0; i < a->nlabel_strs; i++)
		free(a->label_strs[i]);
	free(a->label_strs);
	memset(a, 0, sizeof(*a));
}
