#include "agent/profile/profile_build.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "agent/profile/service_name.h"
#include "agent/util/array.h"
#include "agent/util/memstat.h"
#include "bpf/abi.h"
#include "symbolize/intern.h"

#define MAX_INLINE 32

/* A module's DWARF session is ended and begun again once it takes more
 * of the heap than this (symbolize_by_module), checked every so many
 * lookups: mallinfo2 walks malloc's free lists. */
#define PROFILE_DWARF_BUDGET (8ull << 20)
#define PROFILE_DWARF_CHECK_EVERY 16

const char *walk_end_name(unsigned reason)
{
	static const char *const names[WALK_END_NR] = {
		[WALK_END_OUTERMOST] = "outermost",
		[WALK_END_NO_MAPPING] = "no_mapping",
		[WALK_END_NO_TABLE] = "no_table",
		[WALK_END_UNSUPPORTED] = "unsupported_rule",
		[WALK_END_READ_FAULT] = "read_fault",
		[WALK_END_DEPTH] = "depth_limit",
		[WALK_END_BAD_FRAME] = "bad_frame",
		[WALK_END_NO_USER] = "kernel_thread",
		[WALK_END_FP_FAILED] = "fp_fallback_failed",
		[WALK_END_STACK_SWITCH] = "stack_switch",
		[WALK_END_IN_EXEC] = "in_exec",
	};

	return reason < WALK_END_NR && names[reason] ? names[reason] : "unknown";
}

static const char *keep(struct built_profile *b, const char *fmt, ...)
{
	char *s;
	va_list ap;
	int n;

	if (array_reserve_first(&b->strings, &b->cap_strings, b->nstrings + 1, 256))
		return "?";
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return "?";
	b->strings[b->nstrings++] = s;
	return s;
}

/* A location is one distinct (address, frame mapping): made from the
 * first frame met there. */
struct loc_key {
	const struct frame_ref *made_from;   /* by location */
	const struct frame_ref *f;
};

static uint64_t loc_hash(const struct frame_ref *f)
{
	return sym_hash_u64(f->addr ^ ((uint64_t)f->mapping << 40));
}

static bool loc_eq(void *ctx, int32_t id)
{
	const struct loc_key *k = ctx;

	return k->made_from[id].addr == k->f->addr && k->made_from[id].mapping == k->f->mapping;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Symbolizes one frame, of mapping `fm` (NULL: none known), into
 * b->frames from index nf (room for MAX_INLINE); returns the count. */
static uint32_t symbolize(struct built_profile *b, const struct stack_agg *a, struct symbolizer *sym,
			  const struct frame_ref *f, const struct frame_mapping *fm, uint32_t nf)
{
	struct sym_frame sf[MAX_INLINE];
	struct prof_frame *out = &b->frames[nf];
	int n, i;

	if (f->mapping == FRAME_MARK) {
		/* (copied: the profile may outlive the aggregation) */
		out->function = f->addr < a->nmarks ? sym_intern(&b->comms, a->marks[f->addr]) : "[?]";
		if (!out->function)
			out->function = "[?]";
		out->system_name = NULL;
		out->file = NULL;
		out->line = 0;
		return 1;
	}
	if (f->mapping == FRAME_KERNEL) {
		if (sym && symbolizer_kernel(sym, f->addr, &sf[0]) > 0) {
			out->function = sf[0].function;
		} else {
			out->function = keep(b, "[kernel]+0x%llx", (unsigned long long)f->addr);
		}
		out->system_name = NULL;
		out->file = NULL;
		out->line = 0;
		return 1;
	}
	if (fm) {
		if (fm->mod && fm->mod->sym >= 0 && sym) {
			n = symbolizer_lookup(sym, fm->mod->sym, f->addr - fm->bias, sf, MAX_INLINE);
			if (n > 0) {
				for (i = 0; i < n; i++) {
					out[i].function = sf[i].function;
					out[i].system_name = sf[i].system_name;
					out[i].file = sf[i].file;
					out[i].line = sf[i].line;
				}
				return (uint32_t)n;
			}
		}
		out->function = fm->mod ? keep(b, "%s+0x%llx", base_name(fm->mod->path),
					      (unsigned long long)(f->addr - fm->bias))
				       : keep(b, "[anon]+0x%llx", (unsigned long long)f->addr);
	} else {
		out->function = keep(b, "[unknown]+0x%llx", (unsigned long long)f->addr);
	}
	out->system_name = NULL;
	out->file = NULL;
	out->line = 0;
	return 1;
}

/* The profile's frame mappings: live stacks' and sealed stacks' alike,
 * each once (ids 1..n). */
struct prof_maps {
	struct frame_mapping *v;
	uint32_t n, cap;
	struct sym_table index;
};

struct prof_map_key {
	const struct prof_maps *pm;
	const struct frame_mapping *m;
};

static bool prof_map_eq(void *ctx, int32_t id)
{
	const struct prof_map_key *k = ctx;

	/* Four integers and a pointer: no padding to compare. */
	return !memcmp(&k->pm->v[id], k->m, sizeof(*k->m));
}

/* The id of `m`, added if `add`; 0 when not found (or out of memory). */
static uint32_t prof_map_id(struct prof_maps *pm, const struct frame_mapping *m, bool add)
{
	struct prof_map_key k = { pm, m };
	uint64_t h = sym_hash_bytes(m, sizeof(*m));
	int32_t id = sym_table_find(&pm->index, h, prof_map_eq, &k);

	if (id >= 0 || !add)
		return (uint32_t)(id + 1);
	if (pm->n >= INT32_MAX || array_reserve_first(&pm->v, &pm->cap, pm->n + 1, 64) ||
	    sym_table_insert(&pm->index, h, (int32_t)pm->n))
		return 0;
	pm->v[pm->n] = *m;
	return ++pm->n;
}

struct sym_addr {
	int module;
	uint64_t vaddr;
};

static int cmp_sym_addr(const void *x, const void *y)
{
	const struct sym_addr *a = x, *b = y;

	if (a->module != b->module)
		return a->module < b->module ? -1 : 1;
	return a->vaddr < b->vaddr ? -1 : a->vaddr > b->vaddr;
}

/* What symbolizing a module takes of the heap now, since `*t` was
 * begun: libdw's (its DWARF, and each unit's line table, kept until the
 * session ends) and the module's indexes; the results cached meanwhile
 * are the symbolizer's, not the session's.  (Not the resident set: the
 * pages of the files libdw maps are read once per session, and a
 * session begun again would read them again: dwarf_tally_files.) */
struct dwarf_tally {
	uint64_t heap0, kept0, files0;
};

static void dwarf_tally_begin(struct dwarf_tally *t, const struct symbolizer *sym)
{
	t->heap0 = memstat_heap_in_use();
	t->kept0 = symbolizer_cache_bytes(sym);
	t->files0 = memstat_file_resident();
}

/* The pages of files touched since `*t` was begun: libelf maps the
 * object or its debug file whole, and each section libdw reads stays
 * resident until the session ends (libpython's DWARF: 8 MiB, as much as
 * the session's heap).  Reported, not held to the budget: most are read
 * as the session opens, which a new session reads again (measured: held
 * to the budget, libpython's sessions began again 70 to 140 times, and
 * record -a's CPU time grew by half). */
static uint64_t dwarf_tally_files(const struct dwarf_tally *t)
{
	uint64_t files = memstat_file_resident();

	return files > t->files0 ? files - t->files0 : 0;
}

static uint64_t dwarf_tally_now(const struct dwarf_tally *t, const struct symbolizer *sym)
{
	uint64_t heap = memstat_heap_in_use(), kept = symbolizer_cache_bytes(sym);
	uint64_t grown = heap > t->heap0 ? heap - t->heap0 : 0;
	uint64_t results = kept > t->kept0 ? kept - t->kept0 : 0;

	return grown > results ? grown - results : 0;
}

/* Whether the session ended (a module kept open does not). */
static bool dwarf_end_session(struct symbolizer *sym, int module, const struct dwarf_tally *t,
			      struct profile_build_mem *mem)
{
	uint64_t took = dwarf_tally_now(t, sym), files = dwarf_tally_files(t);

	if (took > mem->dwarf_peak) {
		mem->dwarf_peak = took;
		snprintf(mem->dwarf_peak_module, sizeof(mem->dwarf_peak_module), "%s",
			 symbolizer_module_path(sym, module) ?: "");
	}
	if (files > mem->dwarf_files_peak)
		mem->dwarf_files_peak = files;
	/* Give the freed DWARF indexes back, or the heap keeps the largest
	 * module's high-water mark for the next (a module kept open, the
	 * daemon's symbolizer_keep_open, frees nothing). */
	if (!symbolizer_release(sym, module))
		return false;
	malloc_trim(0);
	return true;
}

/* Symbolizes every user address one module at a time, releasing each
 * module's DWARF once its addresses are done: the agent then holds one
 * module's debug information at a time (libc's alone is tens of MiB),
 * not all of them.  Within a module too: libdw keeps every unit's line
 * table it read until the session ends, which for a large object with
 * many units sampled is tens of MiB, so a session past `budget` bytes
 * of the heap ends and the next address opens a new one (the
 * addresses are in order: units already read are seldom read again).
 * The lookups below are answered from the symbolizer's cache.  Without
 * memory for the list, they are simply done below, all modules held. */
static void symbolize_by_module(const struct stack_agg *a, struct symbolizer *sym,
				uint64_t total_frames, uint64_t budget, struct profile_build_mem *mem)
{
	struct sym_addr *v = malloc((total_frames + 1) * sizeof(*v));
	struct sym_frame sf[MAX_INLINE];
	struct dwarf_tally tally;
	const struct stack *s;
	uint64_t n = 0, i, since_check = 0;
	size_t pos;
	uint32_t j;

	if (!v)
		return;
	for (pos = 0; (s = stack_agg_next(a, &pos));) {
		for (j = 0; j < s->nframes && n < total_frames; j++) {
			const struct frame_ref *f = &s->frames[j];
			const struct frame_mapping *fm = stack_agg_mapping(a, s, f->mapping);

			if (fm && fm->mod && fm->mod->sym >= 0)
				v[n++] = (struct sym_addr){ fm->mod->sym, f->addr - fm->bias };
		}
	}
	qsort(v, n, sizeof(*v), cmp_sym_addr);
	for (i = 0; i < n; i++) {
		/* An address looked up already is not looked up again, but it
		 * may be its module's last: the session still ends there (it
		 * was left open, libc's debug file mapped while libpython's
		 * DWARF was read: 9 MiB more of peak RSS). */
		bool again = i && v[i].module == v[i - 1].module && v[i].vaddr == v[i - 1].vaddr;

		if (!i || v[i].module != v[i - 1].module)
			dwarf_tally_begin(&tally, sym);
		if (!again)
			symbolizer_lookup(sym, v[i].module, v[i].vaddr, sf, MAX_INLINE);
		if (i + 1 == n || v[i + 1].module != v[i].module) {
			dwarf_end_session(sym, v[i].module, &tally, mem);
			since_check = 0;
		} else if (!again && ++since_check == PROFILE_DWARF_CHECK_EVERY) {
			since_check = 0;
			if (dwarf_tally_now(&tally, sym) > budget) {
				mem->dwarf_restarts += dwarf_end_session(sym, v[i].module, &tally, mem);
				dwarf_tally_begin(&tally, sym);
			}
		}
	}
	free(v);
}

/* The sample types the options ask for, in a fixed order; the period is
 * the sampling period when there are on-CPU samples, else 1 ns. */
static void set_types(struct built_profile *b, const struct profile_opts *o)
{
	struct profile *p = &b->p;

	b->type_samples = b->type_cpu = b->type_off_cpu = b->type_off_events = b->type_woken_by = -1;
	b->type_event0 = -1;
	if (!o->off_cpu_only && o->nevents) {
		uint32_t i;

		b->type_event0 = (int)p->ntypes;
		b->nevents = o->nevents;
		for (i = 0; i < o->nevents; i++) {
			p->types[p->ntypes++] = (struct prof_value_type){
				keep(b, "%s-samples", o->events[i].name), "count" };
			p->types[p->ntypes++] = (struct prof_value_type){ o->events[i].name,
									  o->events[i].unit };
		}
		p->period_type = p->types[b->type_event0 + 1];
		p->period = o->events[0].period;
		p->default_type = (uint32_t)b->type_event0 + 1;
	} else if (!o->off_cpu_only) {
		b->type_samples = (int)p->ntypes;
		p->types[p->ntypes++] = (struct prof_value_type){ "samples", "count" };
		b->type_cpu = (int)p->ntypes;
		p->types[p->ntypes++] = (struct prof_value_type){ "cpu", "nanoseconds" };
		p->period_type = p->types[b->type_cpu];
		p->period = o->period_ns;
		p->default_type = (uint32_t)b->type_cpu;
	}
	if (o->off_cpu || o->off_cpu_only) {
		b->type_off_cpu = (int)p->ntypes;
		p->types[p->ntypes++] = (struct prof_value_type){ "off_cpu", "nanoseconds" };
		b->type_off_events = (int)p->ntypes;
		p->types[p->ntypes++] = (struct prof_value_type){ "off_cpu_events", "count" };
		if (o->woken_by) {
			b->type_woken_by = (int)p->ntypes;
			p->types[p->ntypes++] = (struct prof_value_type){ "woken_by", "nanoseconds" };
		}
		if (o->off_cpu_only) {
			p->period_type = p->types[b->type_off_cpu];
			p->period = 1;
			p->default_type = (uint32_t)b->type_off_cpu;
		}
	}
}

/* The labels the loop in profile_build gives every sample (or, for the
 * last two, those of containers and cgroups): keep the two in step. */
static const char *const own_labels[] = { "pid", "tid", "comm", "walk_end", "container_id", "cgroup",
					  "container_name" };

bool profile_label_is_own(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(own_labels) / sizeof(own_labels[0]); i++)
		if (!strcmp(key, own_labels[i]))
			return true;
	return false;
}

static bool is_tag(const struct profile_opts *o, const char *key)
{
	for (uint32_t i = 0; i < o->ntags; i++)
		if (!strcmp(o->tag_keys[i], key))
			return true;
	return false;
}

int profile_build(const struct stack_agg *a, struct symbolizer *sym, const struct profile_opts *o,
		  struct built_profile *b)
{
	bool add_service = o->service_name && !is_tag(o, "service_name");
	bool add_host = o->hostname && !is_tag(o, "hostname");
	uint64_t total_frames = 0, nstacks = 0, nlabels;
	struct sym_table loc_index = { 0 };
	struct prof_maps pm = { 0 };
	struct frame_ref *loc_made_from = NULL;
	uint32_t nloc = 0, nf = 0, ns = 0, nl = 0, i, j, k;
	uint32_t *profile_mapping_of = NULL;
	uint32_t nmappings = 0, kernel_mapping = 0;
	uint64_t kernel_lo = UINT64_MAX, kernel_hi = 0;
	uint32_t locs_used = 0, frames_cap = 0, *frame_start = NULL;
	const struct stack *s;
	size_t pos;
	int ret = -ENOMEM;

	memset(b, 0, sizeof(*b));
	if (o->nevents > PROF_MAX_EVENTS)
		return -EINVAL;
	sym_intern_init(&b->comms, &b->comm_arena);
	set_types(b, o);
	for (pos = 0; (s = stack_agg_next(a, &pos)); nstacks++) {
		total_frames += s->nframes;
		for (j = 0; j < s->nframes; j++) {
			const struct frame_ref *f = &s->frames[j];
			const struct frame_mapping *fm = stack_agg_mapping(a, s, f->mapping);

			if (fm && !prof_map_id(&pm, fm, true))
				goto out;
			if (f->mapping == FRAME_KERNEL) {
				kernel_lo = f->addr < kernel_lo ? f->addr : kernel_lo;
				kernel_hi = f->addr > kernel_hi ? f->addr : kernel_hi;
			}
		}
	}
	if (nstacks != stack_agg_count(a) || nstacks > UINT32_MAX - 1)
		goto out;   /* a sealed block could not be read: no memory */
	b->mem.stacks = stack_agg_bytes(a);
	if (sym)
		symbolize_by_module(a, sym, total_frames,
				    o->dwarf_budget ? o->dwarf_budget : PROFILE_DWARF_BUDGET, &b->mem);
	/* Indexed by location: as many as frames at most, but seldom near
	 * that; calloc leaves the pages never written unmapped. */
	loc_made_from = calloc(total_frames + 1, sizeof(*loc_made_from));
	b->locations = calloc(total_frames + 1, sizeof(*b->locations));
	frame_start = calloc(total_frames + 1, sizeof(*frame_start));
	b->locs = calloc(total_frames + 1, sizeof(*b->locs));
	b->samples = calloc(nstacks + 1, sizeof(*b->samples));
	b->values = calloc((nstacks + 1) * b->p.ntypes, sizeof(*b->values));
	nlabels = (nstacks + 1) * (9 + o->ntags);
	b->labels = calloc(nlabels, sizeof(*b->labels));
	b->mappings = calloc(pm.n + 1, sizeof(*b->mappings));   /* + the kernel's */
	profile_mapping_of = calloc(pm.n + 1, sizeof(*profile_mapping_of));
	if (!loc_made_from || !b->locations || !b->locs || !b->samples || !b->values || !b->labels ||
	    !b->mappings || !profile_mapping_of || !frame_start)
		goto out;

	/* pprof takes the first mapping for the main binary: executables
	 * first, then the rest in the order they were met. */
	for (k = 0; k < 2; k++) {
		for (i = 0; i < pm.n; i++) {
			const struct frame_mapping *fm = &pm.v[i];
			struct profile_mapping *m;

			if (!fm->mod || fm->mod->is_main != (k == 0))
				continue;
			m = &b->mappings[nmappings++];
			m->start = fm->start;
			m->limit = fm->end;
			m->file_offset = fm->offset;
			m->path = fm->mod->path;
			m->build_id = fm->mod->build_id;
			profile_mapping_of[i + 1] = nmappings;
		}
	}
	/* Kernel frames get a mapping of their own, named as perf names it,
	 * so that pprof tells them from user code (-show_from, the mapping
	 * of a location).  It spans the kernel addresses sampled: the
	 * kernel's text is not ours to read. */
	if (kernel_lo <= kernel_hi) {
		struct profile_mapping *m = &b->mappings[nmappings++];

		m->start = kernel_lo;
		m->limit = kernel_hi == UINT64_MAX ? kernel_hi : kernel_hi + 1;
		m->path = "[kernel.kallsyms]";
		m->build_id = "";
		kernel_mapping = nmappings;
	}

	for (pos = 0; (s = stack_agg_next(a, &pos));) {
		const char *comm = sym_intern_n(&b->comms, s->comm, strnlen(s->comm, sizeof(s->comm)));
		struct prof_sample *ps;
		struct prof_label *lab;
		int64_t *values;

		if (!comm || ns == nstacks)
			goto out;
		ps = &b->samples[ns];
		values = &b->values[(size_t)ns++ * b->p.ntypes];
		ps->values = values;
		ps->locs = &b->locs[locs_used];
		ps->nlocs = s->nframes;
		for (j = 0; j < s->nframes; j++) {
			/* A location is an address in one of the profile's
			 * mappings, whatever the stack numbered it. */
			const struct frame_mapping *sfm = stack_agg_mapping(a, s, s->frames[j].mapping);
			uint32_t map_id = sfm ? prof_map_id(&pm, sfm, false) : 0;
			struct frame_ref fr = { s->frames[j].addr,
						sfm || s->frames[j].mapping == FRAME_KERNEL ||
						s->frames[j].mapping == FRAME_MARK ? s->frames[j].mapping : 0 };
			const struct frame_ref *f = &fr;
			struct loc_key key = { loc_made_from, f };
			uint64_t h;
			int32_t id;

			if (sfm)
				fr.mapping = map_id;
			h = loc_hash(f);
			id = sym_table_find(&loc_index, h, loc_eq, &key);
			if (id < 0) {
				struct prof_location *l = &b->locations[nloc];

				l->address = f->addr;
				l->mapping = map_id ? profile_mapping_of[map_id] :
					     f->mapping == FRAME_KERNEL ? kernel_mapping : 0;
				if (nloc > INT32_MAX ||
				    array_reserve_first(&b->frames, &frames_cap, nf + MAX_INLINE, 4096) ||
				    sym_table_insert(&loc_index, h, (int32_t)nloc))
					goto out;
				frame_start[nloc] = nf;
				l->nframes = symbolize(b, a, sym, f, map_id ? &pm.v[map_id - 1] : NULL, nf);
				nf += l->nframes;
				loc_made_from[nloc] = *f;
				id = (int32_t)nloc++;
			}
			b->locs[locs_used++] = (uint32_t)id;
		}
		if (b->type_samples >= 0)
			values[b->type_samples] = (int64_t)s->count[STACK_ON_CPU];
		if (b->type_cpu >= 0)
			values[b->type_cpu] = (int64_t)s->count[STACK_ON_CPU] * o->period_ns;
		/* A stack is of one event: a stack_agg never holds an index
		 * beyond the events it was given. */
		if (b->type_event0 >= 0 && s->event < o->nevents) {
			values[b->type_event0 + 2 * s->event] = (int64_t)s->count[STACK_ON_CPU];
			/* the periods the samples carried: -F adapts a
			 * non-clock event's period as it goes */
			values[b->type_event0 + 2 * s->event + 1] = (int64_t)s->weight[STACK_ON_CPU];
		}
		if (b->type_off_cpu >= 0)
			values[b->type_off_cpu] = (int64_t)s->weight[STACK_OFF_CPU];
		if (b->type_off_events >= 0)
			values[b->type_off_events] = (int64_t)s->count[STACK_OFF_CPU];
		if (b->type_woken_by >= 0)
			values[b->type_woken_by] = (int64_t)s->weight[STACK_WOKEN_BY];
		ps->comm = comm;
		lab = &b->labels[nl];
		lab[0] = (struct prof_label){ .key = "pid", .num = s->pid };
		lab[1] = (struct prof_label){ .key = "tid", .num = s->tid };
		lab[2] = (struct prof_label){ .key = "comm", .str = comm };
		lab[3] = (struct prof_label){ .key = "walk_end", .str = walk_end_name(s->end_reason) };
		ps->nlabels = 4;
		/* The aggregation's strings are its own: copied, so that the
		 * profile outlives it (a daemon's cut empties it at once). */
		if (s->container_id) {
			const char *v = sym_intern(&b->comms, s->container_id);

			if (!v)
				goto out;
			lab[ps->nlabels++] = (struct prof_label){ .key = "container_id", .str = v };
		}
		if (s->cgroup) {
			const char *v = sym_intern(&b->comms, s->cgroup);

			if (!v)
				goto out;
			lab[ps->nlabels++] = (struct prof_label){ .key = "cgroup", .str = v };
		}
		if (s->container_name) {
			const char *v = sym_intern(&b->comms, s->container_name);

			if (!v)
				goto out;
			lab[ps->nlabels++] = (struct prof_label){ .key = "container_name", .str = v };
		}
		if (add_service) {
			size_t len = s->service_name ? strlen(s->service_name) : 0;
			/* The process's, when it was known (agent/procs): else
			 * what the sample says, its thread's comm included. */
			const char *name = s->service_name ? s->service_name :
					   service_name(NULL, s->container_id, s->cgroup, comm, &len);

			/* a unit is a piece of the cgroup path: a string of its own */
			name = sym_intern_n(&b->comms, name, len);
			if (!name)
				goto out;
			lab[ps->nlabels++] = (struct prof_label){ .key = "service_name", .str = name };
		}
		if (add_host)
			lab[ps->nlabels++] = (struct prof_label){ .key = "hostname", .str = o->hostname };
		for (k = 0; k < o->ntags; k++)
			lab[ps->nlabels++] = (struct prof_label){ .key = o->tag_keys[k], .str = o->tag_vals[k] };
		ps->labels = lab;
		nl += ps->nlabels;
	}

	/* b->frames moved while growing: point the locations at it now. */
	for (i = 0; i < nloc; i++)
		b->locations[i].frames = &b->frames[frame_start[i]];

	b->p.time_nanos = o->time_nanos;
	b->p.duration_nanos = o->duration_nanos;
	b->p.mappings = b->mappings;
	b->p.nmappings = nmappings;
	b->p.locations = b->locations;
	b->p.nlocations = nloc;
	b->p.samples = b->samples;
	b->p.nsamples = ns;
	b->p.comments = o->comments;
	b->p.ncomments = o->ncomments;
	if (sym)
		b->mem.symbols = symbolizer_cache_bytes(sym);
	ret = 0;
out:
	sym_table_free(&loc_index);
	sym_table_free(&pm.index);
	free(pm.v);
	free(loc_made_from);
	free(profile_mapping_of);
	free(frame_start);
	if (ret)
		profile_built_free(b);
	return ret;
}

void profile_built_free(struct built_profile *b)
{
	uint32_t i;

	for (i = 0; i < b->nstrings; i++)
		free(b->strings[i]);
	free(b->strings);
	free(b->mappings);
	free(b->locations);
	free(b->frames);
	free(b->samples);
	free(b->values);
	free(b->labels);
	free(b->locs);
	sym_intern_free(&b->comms);
	sym_arena_free(&b->comm_arena);
	memset(b, 0, sizeof(*b));
}
