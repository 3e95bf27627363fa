#include "funcindex.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"

/* Deeper DIE nesting is ignored (bad input must not exhaust the stack). */
#define MAX_DEPTH 128

struct collect {
	struct sym_fn *v;
	size_t n, cap;
	int imports;     /* imported units followed, against import cycles */
	bool c_unit;     /* walking a C unit's DIEs (is_c_unit) */
	bool oom;
};

static void add_fn(struct collect *c, Dwarf_Addr lo, Dwarf_Addr hi, Dwarf_Die *die)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct sym_fn *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			c->oom = true;
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n].lo = lo;
	c->v[c->n].hi = hi;
	c->v[c->n].die = *die;
	c->n++;
}

/* Whether DIEs with this tag can hold function definitions.  An inlined
 * subroutine's subtree is the inlined body (blocks, variables, call
 * sites, more inlining): a nested function called from it is defined in
 * its out-of-line parent or that parent's abstract instance, both
 * DW_TAG_subprogram.  Its subtree is most of an optimized unit's DIEs
 * (ceval.c's), and walking it was half of what symbolizing cost. */
static bool may_hold_functions(int tag, bool c_unit)
{
	switch (tag) {
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_interface_type:
		/* (C has no member functions: only members live there) */
		return !c_unit;
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_subprogram:       /* nested functions (GNU C) */
	case DW_TAG_lexical_block:
	case DW_TAG_compile_unit:
	case DW_TAG_partial_unit:
		return true;
	default:
		return false;
	}
}

/* Whether the unit is C, whose types hold no functions. */
static bool is_c_unit(Dwarf_Die *cu)
{
	switch (dwarf_srclang(cu)) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_C99:
	case DW_LANG_C11:
#ifdef DW_LANG_C17
	case DW_LANG_C17:
#endif
		return true;
	default:
		return false;
	}
}

static void walk(struct collect *c, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	bool c_unit = c->c_unit;

	if (depth > MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);

		if (c->oom)
			return;
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0)
				if (hi > lo)
					add_fn(c, lo, hi, &child);
		}
		if (tag == DW_TAG_imported_unit) {
			Dwarf_Attribute a;
			Dwarf_Die unit;

			if (c->imports < 4096 &&
			    dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &a), &unit)) {
				c->imports++;
				/* (a partial unit of a C unit's: dwz's language
				 * may differ, so it is judged on its own) */
				c->c_unit = is_c_unit(&unit) && c_unit;
				walk(c, &unit, depth + 1);
				c->c_unit = c_unit;
			}
		} else if (may_hold_functions(tag, c_unit) && dwarf_haschildren(&child) > 0) {
			walk(c, &child, depth + 1);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int cmp_fn(const void *pa, const void *pb)
{
	const struct sym_fn *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return (a->hi > b->hi) - (a->hi < b->hi);
}

struct cu_key {
	const struct sym_fnindex *x;
	Dwarf_Off off;
};

static bool cu_eq(void *ctx, int32_t id)
{
	const struct cu_key *k = ctx;

	return k->x->cus[id].cu == k->off;
}

static struct sym_cu_fns *get_cu(struct sym_fnindex *x, Dwarf_Die *cudie)
{
	struct cu_key k = { x, dwarf_dieoffset(cudie) };
	uint64_t h = sym_hash_u64(k.off);
	int32_t id = sym_table_find(&x->index, h, cu_eq, &k);
	struct collect c = { 0 };
	struct sym_cu_fns *u;

	if (id >= 0)
		return &x->cus[id];
	if (x->count >= INT32_MAX)
		return NULL;
	if (x->count == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 16;
		struct sym_cu_fns *v = realloc(x->cus, cap * sizeof(*v));

		if (!v)
			return NULL;
		x->cus = v;
		x->cap = cap;
	}
	c.c_unit = is_c_unit(cudie);
	walk(&c, cudie, 0);
	if (c.oom) {
		free(c.v);
		return NULL;
	}
	u = &x->cus[x->count];
	memset(u, 0, sizeof(*u));
	u->cu = k.off;
	u->fns = c.v;
	u->count = c.n;
	if (c.n) {
		qsort(u->fns, c.n, sizeof(*u->fns), cmp_fn);
		u->maxhi = malloc(c.n * sizeof(*u->maxhi));
		if (!u->maxhi) {
			free(c.v);
			return NULL;
		}
		for (size_t i = 0; i < c.n; i++)
			u->maxhi[i] = i && u->maxhi[i - 1] > u->fns[i].hi ? u->maxhi[i - 1] : u->fns[i].hi;
	}
	if (sym_table_insert(&x->index, h, (int32_t)x->count)) {
		free(u->fns);
		free(u->maxhi);
		return NULL;
	}
	x->count++;
	return u;
}

int sym_fnindex_find(struct sym_fnindex *x, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die *out)
{
	struct sym_cu_fns *u = get_cu(x, cudie);
	size_t lo = 0, hi;
	const struct sym_fn *best = NULL;

	if (!u)
		return -ENOMEM;
	if (!u->count || pc < u->fns[0].lo)
		return 0;
	/* The last function starting at or below pc... */
	hi = u->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->fns[mid].lo <= pc)
			lo = mid;
		else
			hi = mid;
	}
	/* ...and any earlier one still covering it: the smallest wins. */
	for (size_t i = lo + 1; i-- > 0 && u->maxhi[i] > pc;) {
		const struct sym_fn *f = &u->fns[i];

		if (f->lo <= pc && pc < f->hi && (!best || f->hi - f->lo < best->hi - best->lo))
			best = f;
	}
	if (!best)
		return 0;
	*out = best->die;
	return 1;
}

static int cmp_range(const void *pa, const void *pb)
{
	const struct sym_cu_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return (a->hi > b->hi) - (a->hi < b->hi);
}

static int build_ranges(struct sym_fnindex *x, Dwfl_Module *mod)
{
	Dwarf *dbg = dwfl_module_getdwarf(mod, &x->bias);
	Dwarf_CU *unit = NULL;
	Dwarf_Die cudie;
	uint8_t type;
	size_t cap = 0;

	x->ranges_built = true;
	if (!dbg)
		return 0;
	while (dwarf_get_units(dbg, unit, &unit, NULL, &type, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (type != DW_UT_compile)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (x->nranges == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct sym_cu_range *v = realloc(x->ranges, nc * sizeof(*v));

				if (!v)
					return -ENOMEM;
				x->ranges = v;
				cap = nc;
			}
			x->ranges[x->nranges].lo = lo;
			x->ranges[x->nranges].hi = hi;
			x->ranges[x->nranges].cu = cudie;
			x->nranges++;
		}
	}
	if (!x->nranges)
		return 0;
	qsort(x->ranges, x->nranges, sizeof(*x->ranges), cmp_range);
	x->ranges_maxhi = malloc(x->nranges * sizeof(*x->ranges_maxhi));
	if (!x->ranges_maxhi)
		return -ENOMEM;
	for (size_t i = 0; i < x->nranges; i++)
		x->ranges_maxhi[i] = i && x->ranges_maxhi[i - 1] > x->ranges[i].hi ?
				     x->ranges_maxhi[i - 1] : x->ranges[i].hi;
	return 0;
}

int sym_fnindex_cu(struct sym_fnindex *x, Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Die *cu,
		   Dwarf_Addr *bias)
{
	Dwarf_Addr pc;
	size_t lo = 0, hi;

	if (!x->ranges_built) {
		int rc = build_ranges(x, mod);

		if (rc) {
			/* (try again next time) */
			free(x->ranges);
			free(x->ranges_maxhi);
			x->ranges = NULL;
			x->ranges_maxhi = NULL;
			x->nranges = 0;
			x->ranges_built = false;
			return rc;
		}
	}
	pc = addr - x->bias;
	if (!x->nranges || pc < x->ranges[0].lo)
		return 0;
	hi = x->nranges;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->ranges[mid].lo <= pc)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = lo + 1; i-- > 0 && x->ranges_maxhi[i] > pc;) {
		if (x->ranges[i].lo <= pc && pc < x->ranges[i].hi) {
			*cu = x->ranges[i].cu;
			*bias = x->bias;
			return 1;
		}
	}
	return 0;
}

void sym_fnindex_free(struct sym_fnindex *x)
{
	free(x->ranges);
	free(x->ranges_maxhi);
	for (size_t i = 0; i < x->count; i++) {
		free(x->cus[i].fns);
		free(x->cus[i].maxhi);
	}
	free(x->cus);
	sym_table_free(&x->index);
	memset(x, 0, sizeof(*x));
}
