/*
 * The merge accumulator.  Every string added is interned into the
 * accumulator's arena, so that mappings, locations and samples compare
 * by content with pointer comparisons and outlive the profile they came
 * from.  Mappings, locations and samples are each an array plus a hash
 * index (symbolize/table.h) over their content; samples refer to merged
 * locations by id, locations to merged mappings, so a sample's identity
 * is a flat run of integers and pointers.
 *
 * An add is two passes: the first finds or appends every kept sample
 * (appended ones with zero values) and can fail, in which case what it
 * appended is taken back; the second, which cannot fail, sums the
 * values.  So a failed add leaves the merge as it was.
 *
 * The arrays' element pointers (a location's frames, a sample's locs,
 * values and labels) move when the arrays grow: the entries keep
 * offsets, and profile_merge_result points them at the arrays.
 */
#include "agent/profile/profile_merge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/array.h"
#include "symbolize/intern.h"
#include "symbolize/table.h"

#define NO_ID UINT32_MAX

struct loc_meta {
	uint64_t hash;
	uint32_t frame0;        /* index of the first frame in frames */
};

struct sample_meta {
	uint64_t hash;
	size_t loc0, label0;    /* offsets in sample_locs and labels */
};

struct profile_merge {
	struct profile p;               /* the result, pointed at the arrays */
	bool typed;                     /* the first profile fixed the types */
	struct sym_arena arena;
	struct sym_intern strs;
	uint64_t nadded;

	struct profile_mapping *maps;
	uint64_t *map_hash;
	uint32_t nmaps, cap_maps, cap_map_hash;
	struct sym_table map_index;

	struct prof_frame *frames;
	uint32_t nframes, cap_frames;

	struct prof_location *locs;
	struct loc_meta *loc_meta;
	uint32_t nlocs, cap_locs, cap_loc_meta;
	struct sym_table loc_index;

	struct prof_sample *samples;
	struct sample_meta *sample_meta;
	uint32_t nsamples, cap_samples, cap_sample_meta;
	int64_t *values;                /* ntypes per sample */
	size_t cap_values;
	uint32_t *sample_locs;
	size_t nsample_locs, cap_sample_locs;
	struct prof_label *labels;
	size_t nlabels, cap_labels;
	struct sym_table sample_index;
};

struct profile_merge *profile_merge_new(void)
{
	struct profile_merge *m = calloc(1, sizeof(*m));

	if (m)
		sym_intern_init(&m->strs, &m->arena);
	return m;
}

void profile_merge_free(struct profile_merge *m)
{
	if (!m)
		return;
	sym_intern_free(&m->strs);
	sym_arena_free(&m->arena);
	free(m->maps);
	free(m->map_hash);
	sym_table_free(&m->map_index);
	free(m->frames);
	free(m->locs);
	free(m->loc_meta);
	sym_table_free(&m->loc_index);
	free(m->samples);
	free(m->sample_meta);
	free(m->values);
	free(m->sample_locs);
	free(m->labels);
	sym_table_free(&m->sample_index);
	free(m);
}

static size_t table_bytes(const struct sym_table *t)
{
	return t->slots ? (t->mask + 1) * sizeof(*t->slots) : 0;
}

size_t profile_merge_bytes(const struct profile_merge *m)
{
	return sizeof(*m) + m->arena.bytes +
	       m->strs.cap * (sizeof(*m->strs.strs) + sizeof(*m->strs.lens)) +
	       table_bytes(&m->strs.index) +
	       m->cap_maps * sizeof(*m->maps) + m->cap_map_hash * sizeof(*m->map_hash) +
	       table_bytes(&m->map_index) + m->cap_frames * sizeof(*m->frames) +
	       m->cap_locs * sizeof(*m->locs) + m->cap_loc_meta * sizeof(*m->loc_meta) +
	       table_bytes(&m->loc_index) + m->cap_samples * sizeof(*m->samples) +
	       m->cap_sample_meta * sizeof(*m->sample_meta) + m->cap_values * sizeof(*m->values) +
	       m->cap_sample_locs * sizeof(*m->sample_locs) + m->cap_labels * sizeof(*m->labels) +
	       table_bytes(&m->sample_index);
}

uint64_t profile_merge_samples(const struct profile_merge *m)
{
	return m->nadded;
}

/* The accumulator's copy of s; NULL stays NULL.  *oom is set when out of
 * memory (and NULL returned). */
static const char *intern(struct profile_merge *m, const char *s, bool *oom)
{
	const char *c;

	if (!s)
		return NULL;
	c = sym_intern(&m->strs, s);
	if (!c)
		*oom = true;
	return c;
}

static bool same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static bool same_type(const struct prof_value_type *a, const struct prof_value_type *b)
{
	return same_str(a->type, b->type) && same_str(a->unit, b->unit);
}

static int check_profile(const struct profile *p)
{
	uint32_t i, j;

	if (p->ntypes > PROF_MAX_VALUES || (p->ntypes && p->default_type >= p->ntypes))
		return -EINVAL;
	if ((p->nmappings && !p->mappings) || (p->nlocations && !p->locations) ||
	    (p->nsamples && !p->samples) || (p->ncomments && !p->comments))
		return -EINVAL;
	for (i = 0; i < p->nlocations; i++) {
		const struct prof_location *l = &p->locations[i];

		if (l->mapping > p->nmappings || !l->nframes || !l->frames)
			return -EINVAL;
		for (j = 0; j < l->nframes; j++)
			if (!l->frames[j].function)
				return -EINVAL;
	}
	for (i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if ((s->nlocs && !s->locs) || (s->nlabels && !s->labels) ||
		    (p->ntypes && !s->values))
			return -EINVAL;
		for (j = 0; j < s->nlocs; j++)
			if (s->locs[j] >= p->nlocations)
				return -EINVAL;
		for (j = 0; j < s->nlabels; j++)
			if (!s->labels[j].key)
				return -EINVAL;
	}
	return 0;
}

/* ---- mappings -------------------------------------------------------- */

struct map_key {
	const struct profile_merge *m;
	const struct profile_mapping *want;   /* interned strings */
};

static bool map_eq(void *ctx, int32_t id)
{
	const struct map_key *k = ctx;
	const struct profile_mapping *a = &k->m->maps[id], *b = k->want;

	return a->start == b->start && a->limit == b->limit && a->file_offset == b->file_offset &&
	       a->path == b->path && a->build_id == b->build_id;
}

/* The merged id + 1 of source mapping `src` (1-based; 0: none), added if
 * new; 0 with *oom when out of memory. */
static uint32_t map_id(struct profile_merge *m, const struct profile *p, uint32_t src,
		       uint32_t *cache, bool *oom)
{
	const struct profile_mapping *s;
	struct profile_mapping want;
	struct map_key k = { m, &want };
	uint64_t h;
	int32_t id;

	if (!src)
		return 0;
	if (cache[src - 1] != NO_ID)
		return cache[src - 1];
	s = &p->mappings[src - 1];
	want = (struct profile_mapping){ s->start, s->limit, s->file_offset,
					 intern(m, s->path, oom), intern(m, s->build_id, oom) };
	if (*oom)
		return 0;
	uint64_t key[5] = { want.start, want.limit, want.file_offset, (uintptr_t)want.path,
			    (uintptr_t)want.build_id };

	h = sym_hash_bytes(key, sizeof(key));
	id = sym_table_find(&m->map_index, h, map_eq, &k);
	if (id < 0) {
		if (m->nmaps >= INT32_MAX || array_reserve(&m->maps, &m->cap_maps, m->nmaps + 1) ||
		    array_reserve(&m->map_hash, &m->cap_map_hash, m->nmaps + 1) ||
		    sym_table_insert(&m->map_index, h, (int32_t)m->nmaps)) {
			*oom = true;
			return 0;
		}
		m->maps[m->nmaps] = want;
		m->map_hash[m->nmaps] = h;
		id = (int32_t)m->nmaps++;
	}
	return cache[src - 1] = (uint32_t)id + 1;
}

/* ---- locations ------------------------------------------------------- */

struct loc_key {
	const struct profile_merge *m;
	const struct prof_location *want;     /* frames: interned, at m->frames + frame0 */
	uint32_t frame0;
};

static bool loc_eq(void *ctx, int32_t id)
{
	const struct loc_key *k = ctx;
	const struct prof_location *a = &k->m->locs[id], *b = k->want;
	const struct prof_frame *fa = &k->m->frames[k->m->loc_meta[id].frame0];
	const struct prof_frame *fb = &k->m->frames[k->frame0];

	if (a->address != b->address || a->mapping != b->mapping || a->nframes != b->nframes)
		return false;
	for (uint32_t i = 0; i < a->nframes; i++)
		if (fa[i].function != fb[i].function || fa[i].file != fb[i].file ||
		    fa[i].line != fb[i].line || fa[i].system_name != fb[i].system_name)
			return false;
	return true;
}

/* The merged id of source location `src`, added if new; NO_ID when out of
 * memory.  Its frames are interned at the end of m->frames and kept
 * there only when the location is new. */
static uint32_t loc_id(struct profile_merge *m, const struct profile *p, uint32_t src,
		       uint32_t *loc_cache, uint32_t *map_cache)
{
	const struct prof_location *s = &p->locations[src];
	struct prof_location want = { .address = s->address, .nframes = s->nframes };
	struct loc_key k = { m, &want, m->nframes };
	uint64_t h = sym_hash_u64(s->address);
	bool oom = false;
	int32_t id;

	if (loc_cache[src] != NO_ID)
		return loc_cache[src];
	want.mapping = map_id(m, p, s->mapping, map_cache, &oom);
	if (oom || s->nframes > UINT32_MAX - m->nframes ||
	    array_reserve_first(&m->frames, &m->cap_frames, m->nframes + s->nframes, 256))
		return NO_ID;
	h = sym_hash_u64(h ^ want.mapping);
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct prof_frame *f = &s->frames[i];
		struct prof_frame *t = &m->frames[m->nframes + i];
		uint64_t fk[4];

		t->function = intern(m, f->function, &oom);
		t->file = intern(m, f->file, &oom);
		t->line = f->line;
		t->system_name = intern(m, f->system_name, &oom);
		fk[0] = h;
		fk[1] = (uintptr_t)t->function ^ ((uint64_t)(uint32_t)t->line << 32);
		fk[2] = (uintptr_t)t->file;
		fk[3] = (uintptr_t)t->system_name;
		h = sym_hash_bytes(fk, sizeof(fk));
	}
	if (oom)
		return NO_ID;
	id = sym_table_find(&m->loc_index, h, loc_eq, &k);
	if (id < 0) {
		if (m->nlocs >= INT32_MAX || array_reserve(&m->locs, &m->cap_locs, m->nlocs + 1) ||
		    array_reserve(&m->loc_meta, &m->cap_loc_meta, m->nlocs + 1) ||
		    sym_table_insert(&m->loc_index, h, (int32_t)m->nlocs))
			return NO_ID;
		m->locs[m->nlocs] = want;
		m->loc_meta[m->nlocs] = (struct loc_meta){ h, m->nframes };
		m->nframes += s->nframes;
		id = (int32_t)m->nlocs++;
	}
	return loc_cache[src] = (uint32_t)id;
}

/* ---- samples --------------------------------------------------------- */

/* A source sample translated into the merge's ids and strings, in
 * scratch arrays. */
struct sample_key {
	const struct profile_merge *m;
	const uint32_t *locs;
	uint32_t nlocs;
	const struct prof_label *labels;
	uint32_t nlabels;
	const char *comm;
};

static bool sample_eq(void *ctx, int32_t id)
{
	const struct sample_key *k = ctx;
	const struct prof_sample *s = &k->m->samples[id];
	const struct sample_meta *meta = &k->m->sample_meta[id];
	const struct prof_label *la = &k->m->labels[meta->label0];

	if (s->nlocs != k->nlocs || s->nlabels != k->nlabels || s->comm != k->comm)
		return false;
	if (k->nlocs && memcmp(&k->m->sample_locs[meta->loc0], k->locs, k->nlocs * sizeof(*k->locs)))
		return false;
	for (uint32_t i = 0; i < k->nlabels; i++)
		if (la[i].key != k->labels[i].key || la[i].str != k->labels[i].str ||
		    la[i].num != k->labels[i].num || la[i].num_unit != k->labels[i].num_unit)
			return false;
	return true;
}

static uint64_t sample_hash(const struct sample_key *k)
{
	uint64_t h = sym_hash_bytes(k->locs, k->nlocs * sizeof(*k->locs));

	h ^= sym_hash_u64((uintptr_t)k->comm);
	for (uint32_t i = 0; i < k->nlabels; i++) {
		const struct prof_label *l = &k->labels[i];
		uint64_t lk[5] = { h, (uintptr_t)l->key, (uintptr_t)l->str, (uint64_t)l->num,
				   (uintptr_t)l->num_unit };

		h = sym_hash_bytes(lk, sizeof(lk));
	}
	return h;
}

/* Scratch space of one add. */
struct add_state {
	uint32_t *map_cache;    /* source mapping -> merged id + 1 */
	uint32_t *loc_cache;    /* source location -> merged id */
	uint32_t *target;       /* source sample -> merged sample, NO_ID: not kept */
	uint32_t *locs;         /* one sample's merged location ids */
	struct prof_label *labels;
	uint32_t cap_locs, cap_labels;
};

static void add_state_free(struct add_state *st)
{
	free(st->map_cache);
	free(st->loc_cache);
	free(st->target);
	free(st->locs);
	free(st->labels);
}

/* The merged id of source sample s, appended with zero values if new;
 * NO_ID when out of memory. */
static uint32_t sample_id(struct profile_merge *m, const struct profile *p,
			  const struct prof_sample *s, uint32_t ntypes, struct add_state *st)
{
	struct sample_key k = { m, st->locs, s->nlocs, st->labels, s->nlabels, NULL };
	bool oom = false;
	uint64_t h;
	int32_t id;

	if (array_reserve(&st->locs, &st->cap_locs, s->nlocs) ||
	    array_reserve(&st->labels, &st->cap_labels, s->nlabels))
		return NO_ID;
	k.locs = st->locs;
	k.labels = st->labels;
	for (uint32_t i = 0; i < s->nlocs; i++) {
		st->locs[i] = loc_id(m, p, s->locs[i], st->loc_cache, st->map_cache);
		if (st->locs[i] == NO_ID)
			return NO_ID;
	}
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const struct prof_label *l = &s->labels[i];
		struct prof_label *t = &st->labels[i];

		/* a string label's number and unit mean nothing: not part of it */
		*t = (struct prof_label){ .key = intern(m, l->key, &oom) };
		if (l->str) {
			t->str = intern(m, l->str, &oom);
		} else {
			t->num = l->num;
			t->num_unit = intern(m, l->num_unit, &oom);
		}
	}
	k.comm = intern(m, s->comm, &oom);
	if (oom)
		return NO_ID;
	h = sample_hash(&k);
	id = sym_table_find(&m->sample_index, h, sample_eq, &k);
	if (id >= 0)
		return (uint32_t)id;
	if (m->nsamples >= INT32_MAX ||
	    array_reserve(&m->samples, &m->cap_samples, m->nsamples + 1) ||
	    array_reserve(&m->sample_meta, &m->cap_sample_meta, m->nsamples + 1) ||
	    array_reserve(&m->values, &m->cap_values, ((size_t)m->nsamples + 1) * ntypes) ||
	    array_reserve_first(&m->sample_locs, &m->cap_sample_locs, m->nsample_locs + s->nlocs, 256) ||
	    array_reserve_first(&m->labels, &m->cap_labels, m->nlabels + s->nlabels, 256) ||
	    sym_table_insert(&m->sample_index, h, (int32_t)m->nsamples))
		return NO_ID;
	memcpy(&m->sample_locs[m->nsample_locs], st->locs, s->nlocs * sizeof(*st->locs));
	memcpy(&m->labels[m->nlabels], st->labels, s->nlabels * sizeof(*st->labels));
	memset(&m->values[(size_t)m->nsamples * ntypes], 0, ntypes * sizeof(*m->values));
	m->samples[m->nsamples] = (struct prof_sample){ .nlocs = s->nlocs, .nlabels = s->nlabels,
							.comm = k.comm };
	m->sample_meta[m->nsamples] = (struct sample_meta){ h, m->nsample_locs, m->nlabels };
	m->nsample_locs += s->nlocs;
	m->nlabels += s->nlabels;
	return m->nsamples++;
}

/* ---- adding ---------------------------------------------------------- */

struct merge_counts {
	uint32_t nmaps, nframes, nlocs, nsamples;
	size_t nsample_locs, nlabels;
};

/* Takes back what a failed add appended: the entries beyond `c`. */
static void roll_back(struct profile_merge *m, const struct merge_counts *c)
{
	while (m->nsamples > c->nsamples) {
		m->nsamples--;
		sym_table_remove(&m->sample_index, m->sample_meta[m->nsamples].hash,
				 (int32_t)m->nsamples);
	}
	while (m->nlocs > c->nlocs) {
		m->nlocs--;
		sym_table_remove(&m->loc_index, m->loc_meta[m->nlocs].hash, (int32_t)m->nlocs);
	}
	while (m->nmaps > c->nmaps) {
		m->nmaps--;
		sym_table_remove(&m->map_index, m->map_hash[m->nmaps], (int32_t)m->nmaps);
	}
	m->nframes = c->nframes;
	m->nsample_locs = c->nsample_locs;
	m->nlabels = c->nlabels;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* The first profile's types and comments, interned: 0 or -ENOMEM. */
static int take_types(struct profile_merge *m, const struct profile *p, struct profile *t)
{
	const char **comments = NULL;
	bool oom = false;

	for (uint32_t i = 0; i < p->ntypes; i++) {
		t->types[i].type = intern(m, p->types[i].type, &oom);
		t->types[i].unit = intern(m, p->types[i].unit, &oom);
	}
	t->ntypes = p->ntypes;
	t->default_type = p->default_type;
	t->period = p->period;
	t->period_type.type = intern(m, p->period_type.type, &oom);
	t->period_type.unit = intern(m, p->period_type.unit, &oom);
	if (p->ncomments) {
		comments = sym_arena_alloc(&m->arena, p->ncomments * sizeof(*comments),
					   _Alignof(const char *));
		if (!comments)
			return -ENOMEM;
		for (uint32_t i = 0; i < p->ncomments; i++)
			comments[i] = intern(m, p->comments[i], &oom);
	}
	t->comments = comments;
	t->ncomments = p->ncomments;
	return oom ? -ENOMEM : 0;
}

static bool types_match(const struct profile *a, const struct profile *b)
{
	if (a->ntypes != b->ntypes || a->period != b->period ||
	    (a->ntypes && a->default_type != b->default_type) ||
	    !same_type(&a->period_type, &b->period_type))
		return false;
	for (uint32_t i = 0; i < a->ntypes; i++)
		if (!same_type(&a->types[i], &b->types[i]))
			return false;
	return true;
}

int profile_merge_add(struct profile_merge *m, const struct profile *p,
		      bool (*keep)(const struct prof_sample *s, void *ctx), void *ctx)
{
	struct merge_counts before = { m->nmaps, m->nframes, m->nlocs, m->nsamples,
				       m->nsample_locs, m->nlabels };
	struct add_state st = { 0 };
	struct profile types = { 0 };
	uint64_t kept = 0;
	uint32_t i, j;
	int ret;

	if (!p)
		return -EINVAL;
	ret = check_profile(p);
	if (ret)
		return ret;
	if (m->typed && !types_match(&m->p, p))
		return -EINVAL;
	if (!m->typed && take_types(m, p, &types))
		return -ENOMEM;
	ret = -ENOMEM;
	st.map_cache = malloc((p->nmappings + 1) * sizeof(*st.map_cache));
	st.loc_cache = malloc((p->nlocations + 1) * sizeof(*st.loc_cache));
	st.target = malloc((p->nsamples + 1) * sizeof(*st.target));
	if (!st.map_cache || !st.loc_cache || !st.target)
		goto out;
	memset(st.map_cache, 0xff, p->nmappings * sizeof(*st.map_cache));
	memset(st.loc_cache, 0xff, p->nlocations * sizeof(*st.loc_cache));
	for (i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		st.target[i] = NO_ID;
		if (keep && !keep(s, ctx))
			continue;
		st.target[i] = sample_id(m, p, s, p->ntypes, &st);
		if (st.target[i] == NO_ID) {
			roll_back(m, &before);
			goto out;
		}
		kept++;
	}

	/* Nothing can fail from here on. */
	if (!m->typed) {
		memcpy(m->p.types, types.types, sizeof(types.types));
		m->p.ntypes = types.ntypes;
		m->p.default_type = types.default_type;
		m->p.period = types.period;
		m->p.period_type = types.period_type;
		m->p.comments = types.comments;
		m->p.ncomments = types.ncomments;
		m->p.time_nanos = p->time_nanos;
		m->p.duration_nanos = p->duration_nanos;
		m->typed = true;
	} else {
		int64_t end = add_sat(m->p.time_nanos, m->p.duration_nanos);
		int64_t p_end = add_sat(p->time_nanos, p->duration_nanos);

		if (p->time_nanos < m->p.time_nanos)
			m->p.time_nanos = p->time_nanos;
		if (p_end > end)
			end = p_end;
		m->p.duration_nanos = end - m->p.time_nanos;
	}
	for (i = 0; i < p->nsamples; i++) {
		int64_t *v;

		if (st.target[i] == NO_ID)
			continue;
		v = &m->values[(size_t)st.target[i] * p->ntypes];
		for (j = 0; j < p->ntypes; j++)
			v[j] = add_sat(v[j], p->samples[i].values[j]);
	}
	m->nadded += kept;
	ret = 0;
out:
	add_state_free(&st);
	return ret;
}

const struct profile *profile_merge_result(struct profile_merge *m)
{
	struct profile *p = &m->p;
	uint32_t i;

	for (i = 0; i < m->nlocs; i++)
		m->locs[i].frames = &m->frames[m->loc_meta[i].frame0];
	for (i = 0; i < m->nsamples; i++) {
		struct prof_sample *s = &m->samples[i];

		s->locs = &m->sample_locs[m->sample_meta[i].loc0];
		s->labels = &m->labels[m->sample_meta[i].label0];
		s->values = &m->values[(size_t)i * p->ntypes];
	}
	p->mappings = m->maps;
	p->nmappings = m->nmaps;
	p->locations = m->locs;
	p->nlocations = m->nlocs;
	p->samples = m->samples;
	p->nsamples = m->nsamples;
	return p;
}

/* ---- labels ---------------------------------------------------------- */

static const struct prof_label *find_label(const struct prof_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (s->labels[i].key && !strcmp(s->labels[i].key, key))
			return &s->labels[i];
	return NULL;
}

const char *prof_sample_label_str(const struct prof_sample *s, const char *key)
{
	const struct prof_label *l = find_label(s, key);

	return l ? l->str : NULL;
}

int64_t prof_sample_label_num(const struct prof_sample *s, const char *key)
{
	const struct prof_label *l = find_label(s, key);

	return l && !l->str ? l->num : 0;
}

bool prof_sample_label_matches(const struct prof_sample *s, void *filter)
{
	const struct prof_label_filter *f = filter;
	const struct prof_label *l = find_label(s, f->key);

	if (!l)
		return false;
	return f->str ? l->str && !strcmp(l->str, f->str) : !l->str && l->num == f->num;
}

struct value_key {
	const char *const *values;
	const char *want;
};

static bool value_eq(void *ctx, int32_t id)
{
	const struct value_key *k = ctx;

	return !strcmp(k->values[id], k->want);
}

int profile_label_values(const struct profile *p, const char *key, const char ***values,
			 size_t *n)
{
	struct sym_table index = { 0 };
	const char **v = NULL;
	size_t nv = 0, cap = 0;
	int ret = 0;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const char *s = prof_sample_label_str(&p->samples[i], key);
		struct value_key k = { v, s };
		uint64_t h;

		if (!s)
			continue;
		h = sym_hash_bytes(s, strlen(s));
		if (sym_table_find(&index, h, value_eq, &k) >= 0)
			continue;
		if (nv >= INT32_MAX || array_reserve(&v, &cap, nv + 1) ||
		    sym_table_insert(&index, h, (int32_t)nv)) {
			ret = -ENOMEM;
			break;
		}
		v[nv++] = s;
	}
	sym_table_free(&index);
	if (ret) {
		free(v);
		v = NULL;
		nv = 0;
	}
	*values = v;
	*n = nv;
	return ret;
}
