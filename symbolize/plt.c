#include "plt.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/* The relocations of the object that name a symbol, by the address they
 * patch (a GOT slot). */
struct slot {
	uint64_t addr;
	const char *name;
};

struct slots {
	struct slot *v;
	size_t n, cap;
	/* .rela.plt in order: what a lazy IBT stub's push index refers to */
	const char **jump;
	size_t njump;
};

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool push_slot(struct slots *s, uint64_t addr, const char *name)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct slot *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return false;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct slot){ addr, name };
	return true;
}

/* The name of symbol `index` of the symbol table section `symscn`. */
static const char *sym_name(Elf *elf, Elf_Scn *symscn, size_t index)
{
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Data *d = elf_getdata(symscn, NULL);

	if (!d || !gelf_getshdr(symscn, &sh) || !gelf_getsym(d, (int)index, &sym) || !sym.st_name)
		return NULL;
	return elf_strptr(elf, sh.sh_link, sym.st_name);
}

/* Every RELA relocation with a named symbol (x86-64's PLT relocations
 * are RELA), and .rela.plt's in order.  false: no memory. */
static bool read_slots(Elf *elf, size_t shstrndx, struct slots *s)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Scn *symscn;
		Elf_Data *d;
		const char *secname;
		bool is_jump;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(symscn = elf_getscn(elf, sh.sh_link)) || !(d = elf_getdata(scn, NULL)))
			continue;
		secname = elf_strptr(elf, shstrndx, sh.sh_name);
		is_jump = secname && !strcmp(secname, ".rela.plt");
		n = sh.sh_size / sh.sh_entsize;
		if (is_jump && !s->jump) {
			s->jump = calloc(n ? n : 1, sizeof(*s->jump));
			if (!s->jump)
				return false;
			s->njump = n;
		}
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;
			const char *name;

			if (!gelf_getrela(d, (int)i, &r) || !GELF_R_SYM(r.r_info))
				continue;
			name = sym_name(elf, symscn, GELF_R_SYM(r.r_info));
			if (!name || !*name)
				continue;
			if (is_jump && s->jump && s->njump == n)
				s->jump[i] = name;
			if (!push_slot(s, r.r_offset, name))
				return false;
		}
	}
	if (s->n) /* (qsort and bsearch take no NULL array, even empty) */
		qsort(s->v, s->n, sizeof(*s->v), cmp_slot);
	return true;
}

static const char *slot_name(const struct slots *s, uint64_t addr)
{
	struct slot key = { addr, NULL };
	const struct slot *hit = s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), cmp_slot) : NULL;

	return hit ? hit->name : NULL;
}

static uint32_t le32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The function the stub at `addr` (its bytes `code`, `len` long) calls:
 * through `jmp *disp32(%rip)` (ff 25, bnd-prefixed or not: the slot must
 * be one a relocation names), else, for a lazy IBT stub (endbr64; push
 * imm32; bnd jmp PLT0), by the .rela.plt index it pushes. */
static const char *stub_target(const struct slots *s, uint64_t addr, const unsigned char *code,
			       size_t len)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		if (code[i] == 0xff && code[i + 1] == 0x25) {
			int32_t disp = (int32_t)le32(code + i + 2);
			const char *name = slot_name(s, addr + i + 6 + (int64_t)disp);

			if (name)
				return name;
		}
	}
	if (len >= 9 && !memcmp(code, "\xf3\x0f\x1e\xfa\x68", 5)) {
		uint32_t index = le32(code + 5);

		if (index < s->njump && s->jump[index])
			return s->jump[index];
	}
	return NULL;
}

static bool is_plt_section(const char *name)
{
	return name && (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
			!strcmp(name, ".plt.got"));
}

static int cmp_stub(const void *a, const void *b)
{
	const struct sym_plt_stub *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void build(struct sym_plt *p, Dwfl_Module *mod)
{
	GElf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	struct slots s = { 0 };
	struct sym_plt_stub *v = NULL;
	size_t n = 0, cap = 0, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;

	p->built = true;
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, &shstrndx) || !read_slots(elf, shstrndx, &s) || !s.n)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		uint64_t ent;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !is_plt_section(elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		/* (.plt.got stubs are 8 bytes without IBT, 16 with it) */
		ent = sh.sh_entsize ? sh.sh_entsize : 16;
		for (uint64_t off = 0; off + ent <= d->d_size; off += ent) {
			const char *name = stub_target(&s, sh.sh_addr + off,
						       (const unsigned char *)d->d_buf + off, ent);

			if (!name)
				continue;   /* PLT0, or a stub of no symbol */
			if (n == cap) {
				size_t c = cap ? cap * 2 : 32;
				struct sym_plt_stub *nv = realloc(v, c * sizeof(*nv));

				if (!nv)
					goto out;
				v = nv;
				cap = c;
			}
			v[n++] = (struct sym_plt_stub){ sh.sh_addr + off + bias,
							sh.sh_addr + off + ent + bias, name };
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_stub);
	p->stubs = v;
	p->count = n;
	v = NULL;
out:
	free(v);
	free(s.v);
	free(s.jump);
}

const char *sym_plt_find(struct sym_plt *p, Dwfl_Module *mod, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!p->built)
		build(p, mod);
	hi = p->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->stubs[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < p->stubs[lo - 1].hi ? p->stubs[lo - 1].name : NULL;
}

void sym_plt_free(struct sym_plt *p)
{
	free(p->stubs);
	memset(p, 0, sizeof(*p));
}
