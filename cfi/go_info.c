#include "go_info.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <string.h>

/* dwarf.h's, which clashes with cfi/ehframe.h's DW_EH_PE_* names. */
#define DW_TAG_member 0x0d
#define DW_TAG_structure_type 0x13
#define DW_AT_data_member_location 0x38
#define DW_OP_plus_uconst 0x23

/* The struct fields the walker reads, by type and field name. */
enum go_field {
	F_G_M, F_G_SCHED, F_G_STACK, F_M_G0, F_M_CURG, F_GOBUF_SP, F_GOBUF_PC, F_GOBUF_BP,
	F_STACK_LO, F_STACK_HI, F_NR
};

static const struct {
	const char *type, *field;
} go_fields[F_NR] = {
	[F_G_M] = { "runtime.g", "m" },
	[F_G_SCHED] = { "runtime.g", "sched" },
	[F_G_STACK] = { "runtime.g", "stack" },
	[F_M_G0] = { "runtime.m", "g0" },
	[F_M_CURG] = { "runtime.m", "curg" },
	[F_GOBUF_SP] = { "runtime.gobuf", "sp" },
	[F_GOBUF_PC] = { "runtime.gobuf", "pc" },
	[F_GOBUF_BP] = { "runtime.gobuf", "bp" },
	[F_STACK_LO] = { "runtime.stack", "lo" },
	[F_STACK_HI] = { "runtime.stack", "hi" },
};

static int member_offset(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	Dwarf_Op *ops;
	size_t nops;

	if (!dwarf_attr(m, DW_AT_data_member_location, &a))
		return -ENOENT;
	if (!dwarf_formudata(&a, &w)) {
		*off = w;
		return 0;
	}
	/* Older producers: an expression, DW_OP_plus_uconst N. */
	if (!dwarf_getlocation(&a, &ops, &nops) && nops == 1 && ops[0].atom == DW_OP_plus_uconst) {
		*off = ops[0].number;
		return 0;
	}
	return -ENOENT;
}

/* Fills the offsets of the fields of struct `die` that go_fields names. */
static void struct_fields(Dwarf_Die *die, const char *name, uint64_t *offs, unsigned *found)
{
	Dwarf_Die m;
	int i;

	if (dwarf_child(die, &m))
		return;
	do {
		const char *fname;
		uint64_t off;

		if (dwarf_tag(&m) != DW_TAG_member || !(fname = dwarf_diename(&m)))
			continue;
		for (i = 0; i < F_NR; i++) {
			if (*found & (1u << i) || strcmp(go_fields[i].type, name) ||
			    strcmp(go_fields[i].field, fname) || member_offset(&m, &off))
				continue;
			offs[i] = off;
			*found |= 1u << i;
		}
	} while (!dwarf_siblingof(&m, &m));
}

static int dwarf_fields(Elf *elf, uint64_t *offs)
{
	unsigned found = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw;

	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		return -ENOENT;
	while (found != (1u << F_NR) - 1 &&
	       !dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu, d;

		if (dwarf_offdie(dw, off + hsize, &cu) && !dwarf_child(&cu, &d)) {
			do {
				const char *name;

				if (dwarf_tag(&d) != DW_TAG_structure_type ||
				    !(name = dwarf_diename(&d)) || strncmp(name, "runtime.", 8))
					continue;
				struct_fields(&d, name, offs, &found);
			} while (!dwarf_siblingof(&d, &d));
		}
		off = next;
	}
	dwarf_end(dw);
	return found == (1u << F_NR) - 1 ? 0 : -ENOENT;
}

/* [start, end) of the function named `name` or `name`.abi0. */
static int func_range(Elf *elf, const char *name, uint64_t *start, uint64_t *end)
{
	size_t len = strlen(name);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		n = d->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !(s = elf_strptr(elf, sh.sh_link, sym.st_name)) || strncmp(s, name, len) ||
			    (s[len] && strcmp(s + len, ".abi0")))
				continue;
			*start = sym.st_value;
			*end = sym.st_value + sym.st_size;
			return 0;
		}
	}
	return -ENOENT;
}

/* The file bytes of code at [start, end), or NULL. */
static const uint8_t *code_at(const struct cfi_elf *e, uint64_t start, uint64_t end)
{
	size_t i;

	for (i = 0; i < e->nload; i++)
		if (start >= e->load[i].start && end >= start &&
		    end - e->load[i].start <= e->load[i].filesz &&
		    e->load[i].offset + e->load[i].filesz <= e->size)
			return (const uint8_t *)e->map + e->load[i].offset + (start - e->load[i].start);
	return NULL;
}

static int32_t s32_at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* From systemstack's code: the TLS slot of g (its first load of g, `mov
 * %fs:disp32, reg`) and the return address of its call of the function
 * on g0 (the first `call *reg`: the other, to badsystemstack, follows). */
static int systemstack_code(const struct cfi_elf *e, struct cfi_go_info *gi)
{
	uint64_t start, end, i;
	const uint8_t *c;
	bool tls = false;

	if (func_range(e->elf, "runtime.systemstack", &start, &end) || end - start < 16 ||
	    !(c = code_at(e, start, end)))
		return -ENOENT;
	for (i = 0; i + 9 <= end - start && !tls; i++)
		if (c[i] == 0x64 && (c[i + 1] & 0xf8) == 0x48 && c[i + 2] == 0x8b &&
		    (c[i + 3] & 0xc7) == 0x04 && c[i + 4] == 0x25) {
			gi->tls_g = s32_at(c + i + 5);
			tls = true;
		}
	if (!tls)
		return -ENOENT;
	for (; i + 2 <= end - start; i++)
		if (c[i] == 0xff && (c[i + 1] & 0xf8) == 0xd0) {
			gi->systemstack_ret = start + i + 2;
			return 0;
		}
	return -ENOENT;
}

/* From gosave_systemstack_switch's first instruction: the pc it saves in
 * g.sched (`lea rel32(%rip), %r9` or `mov $imm32, %r9`), which differs
 * between Go versions (systemstack_switch, or 8 bytes into it). */
static int gosave_code(const struct cfi_elf *e, struct cfi_go_info *gi)
{
	uint64_t start, end;
	const uint8_t *c;

	if (func_range(e->elf, "gosave_systemstack_switch", &start, &end) || end - start < 7 ||
	    !(c = code_at(e, start, start + 7)))
		return -ENOENT;
	if (c[0] == 0x4c && c[1] == 0x8d && c[2] == 0x0d)
		gi->systemstack_switch = start + 7 + (int64_t)s32_at(c + 3);
	else if (c[0] == 0x49 && c[1] == 0xc7 && c[2] == 0xc1)
		gi->systemstack_switch = (uint64_t)(int64_t)s32_at(c + 3);
	else
		return -ENOENT;
	return 0;
}

int cfi_go_info_find(const struct cfi_elf *e, struct cfi_go_info *gi)
{
	uint64_t offs[F_NR];
	Elf *elf;
	int i, ret;

	memset(gi, 0, sizeof(*gi));
	if (systemstack_code(e, gi) || gosave_code(e, gi))
		return -ENOENT;
	/* A handle of our own: libdw inflates compressed sections in it. */
	elf = elf_memory(e->map, e->size);
	if (!elf)
		return -ENOENT;
	ret = dwarf_fields(elf, offs);
	elf_end(elf);
	if (ret)
		return ret;
	for (i = 0; i < F_NR; i++)
		if (offs[i] > UINT16_MAX - 8)
			return -ENOENT;
	gi->magic = CFI_GO_INFO_MAGIC;
	gi->g_m = (uint16_t)offs[F_G_M];
	gi->g_sched = (uint16_t)offs[F_G_SCHED];
	gi->g_stack = (uint16_t)offs[F_G_STACK];
	gi->m_g0 = (uint16_t)offs[F_M_G0];
	gi->m_curg = (uint16_t)offs[F_M_CURG];
	gi->gobuf_sp = (uint16_t)offs[F_GOBUF_SP];
	gi->gobuf_pc = (uint16_t)offs[F_GOBUF_PC];
	gi->gobuf_bp = (uint16_t)offs[F_GOBUF_BP];
	gi->stack_lo = (uint16_t)offs[F_STACK_LO];
	gi->stack_hi = (uint16_t)offs[F_STACK_HI];
	return 0;
}
