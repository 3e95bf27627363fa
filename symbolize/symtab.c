#include "symtab.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

struct vec {
	struct sym_symbol *v;
	size_t n, cap;
};

static bool push(struct vec *v, const struct sym_symbol *s)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		struct sym_symbol *nv = realloc(v->v, cap * sizeof(*nv));

		if (!nv)
			return false;
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = *s;
	return true;
}

static int cmp_symbol(const void *pa, const void *pb)
{
	const struct sym_symbol *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	/* The preferred alias last: searches go backwards from the end. */
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	return a->order > b->order ? -1 : a->order < b->order;
}

static uint32_t rank_of(const GElf_Sym *sym)
{
	uint32_t r;

	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		r = 0;
		break;
	case STB_WEAK:
		r = 2;
		break;
	default:
		r = 4;
		break;
	}
	return r + (GELF_ST_TYPE(sym->st_info) == STT_NOTYPE);
}

/* Copies the names out of libelf's string table into one block of the
 * index's own, so that the index outlives the module's Dwfl: the agent
 * ends a module's libdwfl session after every profile it symbolizes, and
 * sorting the table again each time cost it more than any lookup. */
static bool own_names(struct sym_symtab *t, struct vec *a, struct vec *b)
{
	struct vec *vs[2] = { a, b };
	size_t len = 0, at = 0;
	char *names;

	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < vs[k]->n; i++)
			len += strlen(vs[k]->v[i].name) + 1;
	names = malloc(len ? len : 1);
	if (!names)
		return false;
	for (int k = 0; k < 2; k++) {
		const char *prev = NULL;

		for (size_t i = 0; i < vs[k]->n; i++) {
			const char *name = vs[k]->v[i].name;
			size_t n;

			/* The same string twice in a row (one symbol seen
			 * through two tables' aliases): one copy. */
			if (name == prev) {
				vs[k]->v[i].name = vs[k]->v[i - 1].name;
				continue;
			}
			prev = name;
			n = strlen(name) + 1;
			memcpy(names + at, name, n);
			vs[k]->v[i].name = names + at;
			at += n;
		}
	}
	t->names = names;
	t->names_len = at;
	return true;
}

static void build(struct sym_symtab *t, Dwfl_Module *mod)
{
	struct vec sized = { 0 }, sizeless = { 0 };
	int n = dwfl_module_getsymtab(mod);

	t->built = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr, bias = 0;
		GElf_Word shndx = 0;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
		int type = GELF_ST_TYPE(sym.st_info);
		Elf_Scn *scn;
		GElf_Shdr shdr;
		struct sym_symbol s;

		if (!name || !*name || !elf || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		scn = elf_getscn(elf, shndx);
		if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_EXECINSTR))
			continue;
		s.lo = addr;
		s.name = name;
		s.rank = rank_of(&sym);
		s.order = (uint32_t)i;
		if (sym.st_size) {
			s.hi = addr + sym.st_size;
			if (s.hi > s.lo && !push(&sized, &s))
				goto oom;
		} else {
			s.hi = shdr.sh_addr + shdr.sh_size + bias;
			if (s.hi > s.lo && !push(&sizeless, &s))
				goto oom;
		}
	}
	if (sized.n) {
		t->sized_maxhi = malloc(sized.n * sizeof(*t->sized_maxhi));
		if (!t->sized_maxhi)
			goto oom;
		qsort(sized.v, sized.n, sizeof(*sized.v), cmp_symbol);
		for (size_t i = 0; i < sized.n; i++)
			t->sized_maxhi[i] = i && t->sized_maxhi[i - 1] > sized.v[i].hi ?
					    t->sized_maxhi[i - 1] : sized.v[i].hi;
	}
	if (sizeless.n)
		qsort(sizeless.v, sizeless.n, sizeof(*sizeless.v), cmp_symbol);
	if (!own_names(t, &sized, &sizeless))
		goto oom;
	t->sized = sized.v;
	t->nsized = sized.n;
	t->sizeless = sizeless.v;
	t->nsizeless = sizeless.n;
	return;
oom:
	free(sized.v);
	free(sizeless.v);
	free(t->sized_maxhi);
	t->sized_maxhi = NULL;
}

size_t sym_symtab_bytes(const struct sym_symtab *t)
{
	return (t->nsized + t->nsizeless) * sizeof(struct sym_symbol) +
	       t->nsized * sizeof(*t->sized_maxhi) + t->names_len;
}

/* The number of symbols with lo <= addr (the index after the last one). */
static size_t upper(const struct sym_symbol *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *sym_symtab_find(struct sym_symtab *t, Dwfl_Module *mod, uint64_t addr,
			    uint64_t *start)
{
	size_t i;

	if (!t->built)
		build(t, mod);
	/* The sized symbol with the highest start that contains addr. */
	for (i = upper(t->sized, t->nsized, addr); i-- > 0 && t->sized_maxhi[i] > addr;) {
		if (addr < t->sized[i].hi) {
			*start = t->sized[i].lo;
			return t->sized[i].name;
		}
	}
	/* Else the closest sizeless one, if addr is still in its section and
	 * no sized symbol starts between them (whose end addr is past). */
	i = upper(t->sizeless, t->nsizeless, addr);
	if (i && addr < t->sizeless[i - 1].hi) {
		size_t j = upper(t->sized, t->nsized, addr);

		if (j && t->sized[j - 1].lo >= t->sizeless[i - 1].lo)
			return NULL;
		*start = t->sizeless[i - 1].lo;
		return t->sizeless[i - 1].name;
	}
	return NULL;
}

void sym_symtab_free(struct sym_symtab *t)
{
	free(t->sized);
	free(t->sizeless);
	free(t->sized_maxhi);
	free(t->names);
	memset(t, 0, sizeof(*t));
}
