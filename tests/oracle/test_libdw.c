/*
 * The second oracle: elfutils' libdw interprets the same CFI on its own, and
 * every row of cfiprof's table must say what libdw says.
 *
 * The object to check comes from the environment, so that meson registers
 * one test per object, each with its own timeout:
 *   CFI_ORACLE_OBJECT   the ELF file
 *   CFI_ORACLE_EH_ONLY  "1": compile with no_debug_frame and ignore
 *                       .debug_frame on libdw's side too
 *
 * Checks, all counted as mismatches (the test asserts there are none):
 *   - at the first and last address of every table row, libdw's frame has
 *     the same CFA, rbp (6) and return address rules as the row, and the
 *     same signal-frame flag; at those of every "undef" row (a gap) libdw
 *     finds no FDE in either section;
 *   - every row libdw has, in every FDE that starts in an executable
 *     segment, is found in the table with the same rules: the table covers
 *     everything libdw can unwind, row by row.
 * Where both sections describe an address, .eh_frame wins, as in cfiprof
 * and in the program's own unwinder.
 *
 * libdw starts every CIE from the x86-64 ABI's initial rules, in which rbp
 * and the return address are "same value": it reports a register the CFI
 * never mentions exactly as one marked DW_CFA_same_value, so the two kinds
 * are one here, and only "undefined" is told apart from them.
 *
 * The FDE list for the second sweep is read with dwarf_next_cfi and the
 * pointer encodings decoded here; libdw's own lookups then confirm it, as
 * each walk starts with one.
 *
 * libdw resolves overlapping FDEs by whichever it happened to cache first,
 * not by the greatest start at or below the address (cfiprof's rule), so it
 * cannot arbitrate them: an object with overlapping FDEs in one section is
 * reported as a failure rather than checked against an answer that depends
 * on the order of the queries.
 */
#include <criterion/criterion.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfi/compile.h"
#include "cfi/dump.h"

#define REG_RBP 6
#define MAX_REPORTS 25

/* DWARF constants, spelled out here: <dwarf.h> clashes with cfi/reader.h,
 * and the oracle should not borrow the code under test's definitions. */
enum {
	OP_deref = 0x06, OP_and = 0x1a, OP_mul = 0x1e, OP_plus = 0x22, OP_plus_uconst = 0x23, OP_shl = 0x24,
	OP_ge = 0x2a, OP_lit0 = 0x30, OP_lit3 = 0x33, OP_lit8 = 0x38, OP_lit15 = 0x3f, OP_lit31 = 0x4f,
	OP_breg0 = 0x70, OP_breg7 = 0x77, OP_breg16 = 0x80, OP_breg31 = 0x8f, OP_regx = 0x90,
	OP_bregx = 0x92, OP_call_frame_cfa = 0x9c, OP_stack_value = 0x9f,
};
enum {
	PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02, PE_udata4 = 0x03,
	PE_udata8 = 0x04, PE_sleb128 = 0x09, PE_sdata2 = 0x0a, PE_sdata4 = 0x0b,
	PE_sdata8 = 0x0c, PE_pcrel = 0x10, PE_datarel = 0x30, PE_indirect = 0x80,
};

struct range {
	uint64_t start, end;
};

struct rangevec {
	struct range *v;
	size_t n, cap;
};

/* One CFI section as libdw sees it. */
struct source {
	const char *name;     /* ".eh_frame" or ".debug_frame" */
	Dwarf_CFI *cfi;       /* NULL: the section is not used */
	Elf *elf;             /* whose section it is */
	Elf_Data *data;       /* the section's (decompressed) bytes */
	uint64_t vaddr;       /* address of data->d_buf[0], for pc-relative pointers */
	struct rangevec fdes; /* FDEs starting in an executable segment, sorted */
};

struct oracle {
	const char *path;
	bool eh_only;
	int fd, dbg_fd;
	Elf *elf, *dbg_elf;
	Dwarf *dw;
	struct source eh, dbg;
	struct range exec[64];
	size_t nexec;
	int no_match;         /* libdw's error code for "no FDE covers it" */

	struct cfi_elf e;
	struct cfi_table t;
	struct cfi_compile_stats st;

	uint64_t rows, addrs, libdw_rows, mismatches;
	uint64_t cfa_types[CFI_CFA_TYPE_MAX + 1];  /* rows by CFA rule, to show what was covered */
};

enum found { FOUND_NONE, FOUND_EH, FOUND_DBG, FOUND_ERROR };

static void mismatch(struct oracle *o, const char *fmt, ...)
{
	va_list ap;

	if (++o->mismatches > MAX_REPORTS)
		return;
	printf("MISMATCH %s%s: ", o->path, o->eh_only ? " (eh-only)" : "");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (o->mismatches == MAX_REPORTS)
		printf("(further mismatches are counted, not shown)\n");
}

static bool fits(int64_t v, int bits)
{
	return v >= -(INT64_C(1) << (bits - 1)) && v < (INT64_C(1) << (bits - 1));
}

/* ---- FDE ranges, read with dwarf_next_cfi ------------------------------ */

static size_t value_size(uint8_t enc, const uint8_t *p, const uint8_t *end)
{
	size_t n = 0;

	switch (enc & 0x0f) {
	case PE_absptr: return 8;
	case PE_udata2: case PE_sdata2: return 2;
	case PE_udata4: case PE_sdata4: return 4;
	case PE_udata8: case PE_sdata8: return 8;
	case PE_uleb128: case PE_sleb128:
		while (p + n < end && (p[n] & 0x80))
			n++;
		return n + 1;
	default: return 0;
	}
}

static bool read_value(uint8_t enc, const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	size_t size = value_size(enc, p, end);
	uint64_t v = 0;
	unsigned shift = 0;

	if (!size || size > (size_t)(end - p))
		return false;
	switch (enc & 0x0f) {
	case PE_uleb128:
	case PE_sleb128:
		for (size_t i = 0; i < size; i++, shift += 7)
			if (shift < 64)
				v |= (uint64_t)(p[i] & 0x7f) << shift;
		if ((enc & 0x0f) == PE_sleb128 && shift < 64 && (p[size - 1] & 0x40))
			v |= ~UINT64_C(0) << shift;
		break;
	default:
		for (size_t i = 0; i < size; i++)
			v |= (uint64_t)p[i] << (8 * i);
		if ((enc & 0x0f) == PE_sdata2)
			v = (uint64_t)(int64_t)(int16_t)v;
		else if ((enc & 0x0f) == PE_sdata4)
			v = (uint64_t)(int64_t)(int32_t)v;
		break;
	}
	*pp = p + size;
	*out = v;
	return true;
}

/* The pointer encoding of the FDEs of a CIE: the 'R' augmentation, or
 * absolute pointers. */
static bool fde_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const char *a = cie->augmentation;
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;

	*enc = PE_absptr;
	if (a[0] == 'e' && a[1] == 'h')
		a += 2;
	if (*a != 'z') {
		/* Without 'z' only letters that carry no data can be skipped. */
		while (*a == 'S')
			a++;
		return *a == 0;
	}
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (p >= end)
				return false;
			*enc = *p++;
			return true;
		case 'L':
			p++;
			break;
		case 'P': {
			uint8_t pe;
			size_t n;

			if (p >= end)
				return false;
			pe = *p++;
			n = value_size(pe, p, end);
			if (!n)
				return false;
			p += n;
			break;
		}
		case 'S': case 'B': case 'G':
			break;
		default:
			/* Unknown, and 'R' not seen before it: the default stands. */
			return true;
		}
	}
	return true;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

static bool in_exec(const struct oracle *o, uint64_t addr)
{
	for (size_t i = 0; i < o->nexec; i++)
		if (addr >= o->exec[i].start && addr < o->exec[i].end)
			return true;
	return false;
}

static void list_fdes(struct oracle *o, struct source *s)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(s->elf, NULL);
	struct { Dwarf_Off off; uint8_t enc; } *cies = NULL;
	size_t ncies = 0, cap = 0, i;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry ent;
	bool eh = s == &o->eh;
	int r;

	while ((r = dwarf_next_cfi(ident, s->data, eh, off, &next, &ent)) == 0) {
		const uint8_t *p, *end = ent.fde.end;
		uint64_t start, len;
		uint8_t enc = 0;
		bool have = false;

		if (dwarf_cfi_cie_p(&ent)) {
			off = next;
			continue;
		}
		for (i = 0; i < ncies; i++)
			if (cies[i].off == ent.fde.CIE_pointer) {
				enc = cies[i].enc;
				have = true;
			}
		if (!have) {
			Dwarf_CFI_Entry c;
			Dwarf_Off cn;

			cr_assert_eq(dwarf_next_cfi(ident, s->data, eh, ent.fde.CIE_pointer, &cn, &c), 0,
				     "%s: %s: no CIE at 0x%" PRIx64, o->path, s->name,
				     (uint64_t)ent.fde.CIE_pointer);
			cr_assert(dwarf_cfi_cie_p(&c));
			cr_assert(fde_encoding(&c.cie, &enc), "%s: %s: CIE at 0x%" PRIx64
				  " has an augmentation this test cannot read", o->path, s->name,
				  (uint64_t)ent.fde.CIE_pointer);
			if (ncies == cap) {
				cap = cap ? 2 * cap : 16;
				cies = realloc(cies, cap * sizeof(*cies));
				cr_assert(cies);
			}
			cies[ncies].off = ent.fde.CIE_pointer;
			cies[ncies++].enc = enc;
		}
		p = ent.fde.start;
		cr_assert((enc & 0x70) == 0 || (enc & 0x70) == PE_pcrel,
			  "%s: %s: FDE pointer encoding 0x%x not handled by this test", o->path,
			  s->name, enc);
		cr_assert(!(enc & PE_indirect));
		{
			uint64_t field = s->vaddr + (uint64_t)(p - (const uint8_t *)s->data->d_buf);

			cr_assert(read_value(enc, &p, end, &start) && read_value(enc & 0x0f, &p, end, &len),
				  "%s: %s: truncated FDE at 0x%" PRIx64, o->path, s->name, (uint64_t)off);
			if ((enc & 0x70) == PE_pcrel)
				start += field;
		}
		if (len && in_exec(o, start)) {
			struct rangevec *v = &s->fdes;

			if (v->n == v->cap) {
				v->cap = v->cap ? 2 * v->cap : 1024;
				v->v = realloc(v->v, v->cap * sizeof(*v->v));
				cr_assert(v->v);
			}
			v->v[v->n].start = start;
			v->v[v->n++].end = start + len;
		}
		off = next;
	}
	cr_assert_geq(r, 0, "%s: %s: dwarf_next_cfi: %s", o->path, s->name, dwarf_errmsg(-1));
	free(cies);
	qsort(s->fdes.v, s->fdes.n, sizeof(*s->fdes.v), cmp_range);
	for (i = 1; i < s->fdes.n; i++)
		if (s->fdes.v[i].start < s->fdes.v[i - 1].end)
			mismatch(o, "%s: FDEs [%" PRIx64 ", %" PRIx64 ") and [%" PRIx64 ", %" PRIx64
				 ") overlap; libdw cannot arbitrate them", s->name,
				 s->fdes.v[i - 1].start, s->fdes.v[i - 1].end, s->fdes.v[i].start,
				 s->fdes.v[i].end);
}

/* ---- opening -------------------------------------------------------------- */

static Elf_Scn *find_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static void section_data(struct oracle *o, struct source *s, Elf_Scn *scn)
{
	GElf_Shdr sh;

	cr_assert(gelf_getshdr(scn, &sh));
	/* libdw decompresses the sections it reads in place; do it here for
	 * the ones it has not read (yet). */
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		cr_assert_fail("%s: %s: cannot decompress: %s", o->path, s->name, elf_errmsg(-1));
	cr_assert(gelf_getshdr(scn, &sh));
	s->data = elf_getdata(scn, NULL);
	cr_assert(s->data && s->data->d_buf, "%s: %s: no data", o->path, s->name);
	s->vaddr = sh.sh_addr;
}

/* Without section headers, .eh_frame is where .eh_frame_hdr points; it
 * runs to its zero terminator, at the latest to the end of its segment. */
static void eh_frame_from_phdrs(struct oracle *o, size_t phnum)
{
	GElf_Phdr hdr = { 0 }, ph;
	const uint8_t *p, *end;
	Elf_Data *d;
	uint64_t ptr, field;
	size_t i;

	for (i = 0; i < phnum; i++) {
		cr_assert(gelf_getphdr(o->elf, (int)i, &ph));
		if (ph.p_type == PT_GNU_EH_FRAME)
			hdr = ph;
	}
	cr_assert(hdr.p_filesz >= 4, "%s: no .eh_frame section and no PT_GNU_EH_FRAME", o->path);
	d = elf_getdata_rawchunk(o->elf, (int64_t)hdr.p_offset, hdr.p_filesz, ELF_T_BYTE);
	cr_assert(d && d->d_buf, "%s: unreadable PT_GNU_EH_FRAME", o->path);
	p = d->d_buf;
	end = p + d->d_size;
	cr_assert_eq(p[0], 1, "%s: .eh_frame_hdr version %u", o->path, p[0]);
	field = hdr.p_vaddr + 4;
	p += 4;
	cr_assert(read_value(((const uint8_t *)d->d_buf)[1], &p, end, &ptr));
	switch (((const uint8_t *)d->d_buf)[1] & 0x70) {
	case PE_absptr: break;
	case PE_pcrel: ptr += field; break;
	case PE_datarel: ptr += hdr.p_vaddr; break; /* from .eh_frame_hdr's start */
	default: cr_assert_fail("%s: .eh_frame_hdr pointer encoding 0x%x", o->path,
				((const uint8_t *)d->d_buf)[1]);
	}
	for (i = 0; i < phnum; i++) {
		cr_assert(gelf_getphdr(o->elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && ptr >= ph.p_vaddr && ptr < ph.p_vaddr + ph.p_filesz) {
			o->eh.data = elf_getdata_rawchunk(o->elf, (int64_t)(ph.p_offset + ptr - ph.p_vaddr),
							  ph.p_vaddr + ph.p_filesz - ptr, ELF_T_BYTE);
			o->eh.vaddr = ptr;
			break;
		}
	}
	cr_assert(o->eh.data && o->eh.data->d_buf, "%s: .eh_frame at %" PRIx64 " not in the file",
		  o->path, ptr);
}

static void open_oracle(struct oracle *o)
{
	struct cfi_compile_opts opts = { 0 };
	struct cfi_error err = { { 0 } };
	const char *only = getenv("CFI_ORACLE_EH_ONLY");
	const char *dbg_path = NULL;
	size_t phnum, i;
	int ret;

	memset(o, 0, sizeof(*o));
	o->fd = o->dbg_fd = -1;
	o->path = getenv("CFI_ORACLE_OBJECT");
	cr_assert(o->path && *o->path, "CFI_ORACLE_OBJECT names no object to check");
	o->eh_only = only && !strcmp(only, "1");

	/* The table under test. */
	ret = cfi_elf_open_path(&o->e, o->path, &err);
	cr_assert_eq(ret, 0, "%s", err.msg);
	opts.path = o->path;
	opts.no_debug_frame = o->eh_only;
	ret = cfi_compile(&o->e, &opts, &o->t, &o->st, &err);
	cr_assert_eq(ret, 0, "cfi_compile: %s", err.msg);

	/* The same object through libelf. */
	elf_version(EV_CURRENT);
	o->fd = open(o->path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(o->fd, 0, "%s: %s", o->path, strerror(errno));
	o->elf = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	cr_assert(o->elf, "%s: %s", o->path, elf_errmsg(-1));
	cr_assert_eq(elf_getphdrnum(o->elf, &phnum), 0);
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		cr_assert(gelf_getphdr(o->elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			cr_assert_lt(o->nexec, sizeof(o->exec) / sizeof(o->exec[0]));
			o->exec[o->nexec].start = ph.p_vaddr;
			o->exec[o->nexec++].end = ph.p_vaddr + ph.p_memsz;
		}
	}

	o->eh.name = ".eh_frame";
	o->eh.cfi = dwarf_getcfi_elf(o->elf);
	if (o->eh.cfi) {
		Elf_Scn *scn = find_section(o->elf, ".eh_frame");

		o->eh.elf = o->elf;
		if (scn)
			section_data(o, &o->eh, scn);
		else
			eh_frame_from_phdrs(o, phnum);
	}

	/* .debug_frame from the object itself, or from the separate debug
	 * file the compiler chose. */
	o->dbg.name = ".debug_frame";
	if (!o->eh_only) {
		if (o->st.debug_file[0]) {
			dbg_path = o->st.debug_file;
			cr_assert(!find_section(o->elf, ".debug_frame"),
				  "%s: has .debug_frame, yet the compiler used %s", o->path, dbg_path);
			o->dbg_fd = open(dbg_path, O_RDONLY | O_CLOEXEC);
			cr_assert_geq(o->dbg_fd, 0, "%s: %s", dbg_path, strerror(errno));
			o->dbg_elf = elf_begin(o->dbg_fd, ELF_C_READ_MMAP, NULL);
			cr_assert(o->dbg_elf, "%s: %s", dbg_path, elf_errmsg(-1));
		} else if (find_section(o->elf, ".debug_frame")) {
			dbg_path = o->path;
			o->dbg_elf = o->elf;
		}
	}
	if (dbg_path) {
		Elf_Scn *scn;

		o->dw = dwarf_begin_elf(o->dbg_elf, DWARF_C_READ, NULL);
		cr_assert(o->dw, "%s: dwarf_begin_elf: %s", dbg_path, dwarf_errmsg(-1));
		o->dbg.cfi = dwarf_getcfi(o->dw);
		cr_assert(o->dbg.cfi, "%s: dwarf_getcfi: %s", dbg_path, dwarf_errmsg(-1));
		scn = find_section(o->dbg_elf, ".debug_frame");
		cr_assert(scn, "%s: no .debug_frame section", dbg_path);
		o->dbg.elf = o->dbg_elf;
		section_data(o, &o->dbg, scn);
	}

	/* libdw's DWARF_E_NO_MATCH is internal; its message is not. */
	o->no_match = -1;
	for (int code = 1; code < 200; code++) {
		const char *m = dwarf_errmsg(code);

		if (m && !strcmp(m, "no matching address range")) {
			o->no_match = code;
			break;
		}
	}
	cr_assert_geq(o->no_match, 0, "libdw has no \"no matching address range\" error");

	if (o->eh.cfi)
		list_fdes(o, &o->eh);
	if (o->dbg.cfi)
		list_fdes(o, &o->dbg);
}

static void close_oracle(struct oracle *o)
{
	free(o->eh.fdes.v);
	free(o->dbg.fdes.v);
	if (o->eh.cfi)
		dwarf_cfi_end(o->eh.cfi);
	if (o->dw)
		dwarf_end(o->dw);
	if (o->dbg_elf && o->dbg_elf != o->elf)
		elf_end(o->dbg_elf);
	if (o->elf)
		elf_end(o->elf);
	if (o->dbg_fd >= 0)
		close(o->dbg_fd);
	if (o->fd >= 0)
		close(o->fd);
	cfi_table_free(&o->t);
	cfi_elf_close(&o->e);
}

/* ---- libdw's view of one address ------------------------------------------ */

/* The frame libdw unwinds `addr` with: .eh_frame first, then .debug_frame. */
static enum found libdw_frame(struct oracle *o, uint64_t addr, Dwarf_Frame **fr, char *why,
			      size_t n)
{
	struct source *src[2] = { &o->eh, &o->dbg };

	o->addrs++;
	for (int i = 0; i < 2; i++) {
		int e;

		if (!src[i]->cfi)
			continue;
		if (dwarf_cfi_addrframe(src[i]->cfi, addr, fr) == 0)
			return i == 0 ? FOUND_EH : FOUND_DBG;
		e = dwarf_errno();
		if (e != o->no_match) {
			snprintf(why, n, "libdw %s: %s", src[i]->name, dwarf_errmsg(e));
			return FOUND_ERROR;
		}
	}
	return FOUND_NONE;
}

static int format_ops(char *buf, size_t n, const Dwarf_Op *ops, size_t nops)
{
	int len = 0;

	if (!nops)
		return snprintf(buf, n, ops ? "undefined" : "same");
	for (size_t i = 0; i < nops && (size_t)len < n; i++)
		len += snprintf(buf + len, n - (size_t)len, "%s0x%x(%" PRId64 ",%" PRId64 ")",
				i ? " " : "", ops[i].atom, (int64_t)ops[i].number,
				(int64_t)ops[i].number2);
	return len;
}

/* Does libdw's CFA agree with the rule?  Sets *big when the CFA does not
 * fit struct cfi_rule. */
static bool check_cfa(const struct cfi_rule *r, Dwarf_Frame *f, bool *big, char *why, size_t n)
{
	Dwarf_Op *ops;
	size_t nops;
	bool ok = false;

	if (dwarf_frame_cfa(f, &ops, &nops)) {
		snprintf(why, n, "dwarf_frame_cfa: %s", dwarf_errmsg(-1));
		return false;
	}
	switch (r->cfa_type) {
	case CFI_CFA_REG:
		/* libdw's form of "register + offset". */
		if (nops == 1 && ops[0].atom == OP_bregx) {
			int64_t off = (int64_t)ops[0].number2;

			if (ops[0].number > UINT8_MAX || !fits(off, 32))
				*big = ok = true;
			else
				ok = ops[0].number == r->cfa_reg && off == r->cfa_off;
		}
		break;
	case CFI_CFA_DEREF:
		/* breg<r> off; deref [; plus_uconst k] */
		ok = (nops == 2 || nops == 3) && ops[0].atom == OP_breg0 + r->cfa_reg &&
		     (int64_t)ops[0].number == r->cfa_off && ops[1].atom == OP_deref &&
		     (nops == 2 ? r->cfa_off2 == 0
				: ops[2].atom == OP_plus_uconst && ops[2].number == (Dwarf_Word)r->cfa_off2);
		break;
	case CFI_CFA_PLT: {
		/* breg7 off; breg16 0; lit15; and; lit<t>; ge; lit3; shl; plus */
		static const uint8_t shape[] = {
			OP_breg7, OP_breg16, OP_lit15, OP_and, 0, OP_ge,
			OP_lit3, OP_shl, OP_plus,
		};

		ok = nops == 9 && r->cfa_reg == 7 && (int64_t)ops[0].number == r->cfa_off &&
		     ops[1].number == 0 && ops[4].atom == OP_lit0 + r->cfa_off2;
		for (size_t i = 0; ok && i < 9; i++)
			ok = !shape[i] || ops[i].atom == shape[i];
		break;
	}
	case CFI_CFA_DEREF_INDEX:
		/* breg<r> off; breg<r2> 0; lit8; mul; plus; deref; plus_uconst k */
		ok = nops == 7 && ops[0].atom == OP_breg0 + r->cfa_reg &&
		     (int64_t)ops[0].number == r->cfa_off && ops[1].atom == OP_breg0 + r->cfa_reg2 &&
		     ops[1].number == 0 && ops[2].atom == OP_lit8 && ops[3].atom == OP_mul &&
		     ops[4].atom == OP_plus && ops[5].atom == OP_deref &&
		     ops[6].atom == OP_plus_uconst && ops[6].number == (Dwarf_Word)r->cfa_off2;
		break;
	case CFI_CFA_EXPR:
		/* Any expression; only not one of the forms above, which the
		 * walker could have run. */
		ok = nops > 0 && ops[0].atom != OP_bregx;
		if (ok && (nops == 2 || nops == 3) && ops[0].atom >= OP_breg0 &&
		    ops[0].atom <= OP_breg31 && fits((int64_t)ops[0].number, 32) &&
		    ops[1].atom == OP_deref &&
		    (nops == 2 || (ops[2].atom == OP_plus_uconst && ops[2].number <= INT16_MAX)))
			ok = false;
		if (ok && nops == 9 && ops[0].atom == OP_breg7 && fits((int64_t)ops[0].number, 32) &&
		    ops[1].atom == OP_breg16 && ops[1].number == 0 && ops[2].atom == OP_lit15 &&
		    ops[3].atom == OP_and && ops[4].atom >= OP_lit0 && ops[4].atom <= OP_lit31 &&
		    ops[5].atom == OP_ge && ops[6].atom == OP_lit3 && ops[7].atom == OP_shl &&
		    ops[8].atom == OP_plus)
			ok = false;
		if (ok && nops == 7 && ops[0].atom >= OP_breg0 && ops[0].atom <= OP_breg31 &&
		    fits((int64_t)ops[0].number, 32) && ops[1].atom >= OP_breg0 &&
		    ops[1].atom < OP_breg16 && ops[1].atom != OP_breg7 && ops[1].number == 0 &&
		    ops[2].atom == OP_lit8 && ops[3].atom == OP_mul && ops[4].atom == OP_plus &&
		    ops[5].atom == OP_deref && ops[6].atom == OP_plus_uconst &&
		    ops[6].number <= INT16_MAX)
			ok = false;
		break;
	default:
		break;
	}
	if (!ok) {
		int len = snprintf(why, n, "CFA: libdw ");

		format_ops(why + len, n - (size_t)len, ops, nops);
	}
	return ok;
}

/* Does libdw's rule for `regno` agree with the rule's (type, off)?  libdw
 * reports a register the CFI never mentions by the x86-64 ABI's default,
 * which for rbp and the return address is "same value". */
static bool check_reg(const char *what, unsigned type, int16_t off, Dwarf_Frame *f, int regno,
		      bool *big, char *why, size_t n)
{
	Dwarf_Op mem[3], *ops;
	size_t nops, i = 1;
	int64_t v = 0;
	bool ok = false, value;

	if (dwarf_frame_register(f, regno, mem, &ops, &nops)) {
		snprintf(why, n, "%s: dwarf_frame_register: %s", what, dwarf_errmsg(-1));
		return false;
	}
	switch (type) {
	case CFI_REG_UNMENTIONED:
	case CFI_REG_SAME:
		ok = nops == 0 && ops == NULL;
		break;
	case CFI_REG_UNDEFINED:
		ok = nops == 0 && ops != NULL;
		break;
	case CFI_REG_OFFSET:
	case CFI_REG_VAL_OFFSET:
		/* call_frame_cfa [; plus_uconst off] [; stack_value] */
		if (nops < 1 || ops[0].atom != OP_call_frame_cfa)
			break;
		if (i < nops && ops[i].atom == OP_plus_uconst)
			v = (int64_t)ops[i++].number;
		value = i < nops && ops[i].atom == OP_stack_value;
		if (value)
			i++;
		if (i != nops || value != (type == CFI_REG_VAL_OFFSET))
			break;
		if (!fits(v, 16))
			*big = ok = true;
		else
			ok = v == off;
		break;
	case CFI_REG_REGISTER:
		if (nops != 1 || ops[0].atom != OP_regx)
			break;
		if (ops[0].number > INT16_MAX)
			*big = ok = true;
		else
			ok = (int64_t)ops[0].number == off;
		break;
	case CFI_REG_EXPR:
	case CFI_REG_VAL_EXPR:
		/* libdw pushes the CFA first, and marks a value with stack_value. */
		ok = nops >= 1 && ops[0].atom == OP_call_frame_cfa &&
		     (ops[nops - 1].atom == OP_stack_value) == (type == CFI_REG_VAL_EXPR);
		break;
	default:
		break;
	}
	if (!ok) {
		int len = snprintf(why, n, "%s: libdw ", what);

		format_ops(why + len, n - (size_t)len, ops, nops);
	}
	return ok;
}

/* rbx and r12-r15.  A slot no s16 holds is stored as undefined (the
 * register is lost, the rule still works): libdw then has an offset that
 * does not fit. */
static bool check_csr(const struct cfi_rule *r, Dwarf_Frame *f, char *why, size_t n)
{
	for (int i = 0; i < CFI_CSR_NR; i++) {
		const char *name = cfi_reg_name(CFI_CSR_DWARF(i));
		bool big = false;

		if (check_reg(name, r->csr_type[i], r->csr_off[i], f, CFI_CSR_DWARF(i), &big, why, n) &&
		    !big)
			continue;
		/* libdw's default for a register the CFI never mentions is
		 * libebl's ABI rule, "undefined" for rbx and r12-r15. */
		if (r->csr_type[i] == CFI_REG_UNMENTIONED &&
		    check_reg(name, CFI_REG_UNDEFINED, 0, f, CFI_CSR_DWARF(i), &big, why, n))
			continue;
		if (r->csr_type[i] == CFI_REG_UNDEFINED) {
			big = false;
			if (check_reg(name, CFI_REG_OFFSET, 0, f, CFI_CSR_DWARF(i), &big, why, n) && big)
				continue;
			big = false;
			if (check_reg(name, CFI_REG_VAL_OFFSET, 0, f, CFI_CSR_DWARF(i), &big, why, n) &&
			    big)
				continue;
		}
		if (!why[0])
			snprintf(why, n, "%s: libdw's offset overflows", name);
		return false;
	}
	return true;
}

static void describe_rule(const struct cfi_rule *r, char *buf, size_t n)
{
	char row[256];

	cfi_format_row(r, row, sizeof(row));
	snprintf(buf, n, "%s%s (cfa type %u r%u %+d %+d, rbp/ra types %u/%u)", row,
		 r->flags & CFI_RULE_TOO_BIG ? " too-big" : "", r->cfa_type, r->cfa_reg, r->cfa_off,
		 r->cfa_off2, r->rbp_type, r->ra_type);
}

/* Compares the rule cfiprof has at `addr` with libdw's frame there.
 * Returns the end of libdw's row, or 0 if libdw has none. */
static uint64_t check_addr(struct oracle *o, uint64_t addr, const struct cfi_rule *r,
			   const char *context)
{
	Dwarf_Frame *f = NULL;
	char why[512] = "", mine[256];
	Dwarf_Addr start, end;
	bool signal = false, big = false;
	enum found found;
	int ra;

	found = libdw_frame(o, addr, &f, why, sizeof(why));
	if (!r || r->cfa_type == CFI_CFA_UNDEF) {
		if (found == FOUND_EH || found == FOUND_DBG)
			mismatch(o, "%s %" PRIx64 ": cfiprof has %s, libdw unwinds it with %s",
				 context, addr, r ? "an undef row" : "no row",
				 found == FOUND_EH ? ".eh_frame" : ".debug_frame");
		else if (found == FOUND_ERROR)
			mismatch(o, "%s %" PRIx64 ": cfiprof has no rule, %s", context, addr, why);
		free(f);
		return 0;
	}
	describe_rule(r, mine, sizeof(mine));
	if (found != FOUND_EH && found != FOUND_DBG) {
		mismatch(o, "%s %" PRIx64 ": cfiprof has %s, libdw %s", context, addr, mine,
			 found == FOUND_NONE ? "finds no FDE" : why);
		return 0;
	}
	ra = dwarf_frame_info(f, &start, &end, &signal);
	if (ra < 0) {
		mismatch(o, "%s %" PRIx64 ": dwarf_frame_info: %s", context, addr, dwarf_errmsg(-1));
		free(f);
		return 0;
	}
	if (!check_cfa(r, f, &big, why, sizeof(why)) ||
	    !check_reg("rbp", r->rbp_type, r->rbp_off, f, REG_RBP, &big, why, sizeof(why)) ||
	    !check_reg("ra", r->ra_type, r->ra_off, f, ra, &big, why, sizeof(why)) ||
	    !check_csr(r, f, why, sizeof(why)))
		mismatch(o, "%s %" PRIx64 " (%s row %" PRIx64 "..%" PRIx64 "): cfiprof %s; %s",
			 context, addr, found == FOUND_EH ? ".eh_frame" : ".debug_frame",
			 (uint64_t)start, (uint64_t)end, mine, why);
	else if (big != !!(r->flags & CFI_RULE_TOO_BIG))
		mismatch(o, "%s %" PRIx64 ": cfiprof %s; libdw's values %s the fields", context, addr,
			 mine, big ? "overflow" : "fit");
	else if (signal != !!(r->flags & CFI_RULE_SIGNAL))
		mismatch(o, "%s %" PRIx64 ": cfiprof %s; libdw says %sa signal frame", context, addr,
			 mine, signal ? "" : "not ");
	free(f);
	return end > addr ? end : addr + 1;
}

/* ---- the two sweeps -------------------------------------------------------- */

static void check_rows(struct oracle *o)
{
	struct cfi_row_iter it;
	uint64_t addr, prev_addr = 0;
	uint32_t rule, prev_rule = 0;
	bool have = false;

	cfi_row_iter_init(&it, &o->t);
	for (;;) {
		bool more = cfi_row_iter_next(&it, &addr, &rule);

		if (!more)
			addr = o->t.hdr->end;
		if (have) {
			const struct cfi_rule *r = &o->t.rules[prev_rule];

			cr_assert_lt(prev_addr, addr, "rows out of order at %" PRIx64, addr);
			o->rows++;
			if (r->cfa_type <= CFI_CFA_TYPE_MAX)
				o->cfa_types[r->cfa_type]++;
			check_addr(o, prev_addr, r, "row start");
			if (addr - 1 != prev_addr)
				check_addr(o, addr - 1, r, "row end");
		}
		if (!more)
			break;
		prev_addr = addr;
		prev_rule = rule;
		have = true;
	}
}

static const struct cfi_rule *table_rule(struct oracle *o, uint64_t addr)
{
	int idx = cfi_table_lookup(&o->t, addr, NULL);

	return idx < 0 ? NULL : &o->t.rules[idx];
}

/* The FDE list is decoded here, not by libdw: libdw's first row of the FDE
 * must start at its start, and its last row end at its end. */
static void confirm_fde(struct oracle *o, struct source *s, const struct range *g)
{
	uint64_t at[2] = { g->start, g->end - 1 };

	for (int k = 0; k < 2; k++) {
		Dwarf_Frame *f = NULL;
		Dwarf_Addr start = 0, end = 0;

		o->addrs++;
		if (dwarf_cfi_addrframe(s->cfi, at[k], &f) || dwarf_frame_info(f, &start, &end, NULL) < 0)
			mismatch(o, "%s FDE %" PRIx64 "..%" PRIx64 ": libdw has no frame at %" PRIx64 ": %s",
				 s->name, g->start, g->end, at[k], dwarf_errmsg(-1));
		else if (k == 0 ? start != g->start : end != g->end)
			mismatch(o, "%s FDE %" PRIx64 "..%" PRIx64 ": libdw's row at %" PRIx64 " is %"
				 PRIx64 "..%" PRIx64, s->name, g->start, g->end, at[k], (uint64_t)start,
				 (uint64_t)end);
		free(f);
	}
}

/* Walks libdw's rows through each FDE; the lookup at each row start picks
 * the section exactly as the row sweep does. */
static void check_fdes(struct oracle *o, struct source *s)
{
	for (size_t i = 0; i < s->fdes.n; i++) {
		const struct range *g = &s->fdes.v[i];
		uint64_t a = g->start;

		confirm_fde(o, s, g);

		while (a < g->end) {
			const struct cfi_rule *r = table_rule(o, a);
			uint64_t next;

			o->libdw_rows++;
			if (!r || r->cfa_type == CFI_CFA_UNDEF) {
				Dwarf_Frame *f = NULL;
				char why[256] = "";
				enum found found = libdw_frame(o, a, &f, why, sizeof(why));

				free(f);
				if (found == FOUND_EH || found == FOUND_DBG) {
					mismatch(o, "%s FDE %" PRIx64 "..%" PRIx64 ": libdw unwinds %" PRIx64
						 " (from %s), cfiprof has %s", s->name, g->start, g->end, a,
						 found == FOUND_EH ? ".eh_frame" : ".debug_frame",
						 r ? "an undef row" : "no row");
				} else {
					mismatch(o, "%s FDE %" PRIx64 "..%" PRIx64 ": libdw cannot unwind %"
						 PRIx64 " inside it (%s)", s->name, g->start, g->end, a,
						 found == FOUND_NONE ? "no match" : why);
				}
				break;
			}
			next = check_addr(o, a, r, s == &o->eh ? "eh FDE row" : "debug FDE row");
			if (!next)
				break;
			a = next;
		}
	}
}

Test(oracle, libdw, .description = "every table row agrees with libdw's CFI interpretation")
{
	struct oracle o;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	open_oracle(&o);
	check_rows(&o);
	check_fdes(&o, &o.eh);
	check_fdes(&o, &o.dbg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s%s: %" PRIu64 " rows checked (CFA undef/reg/deref/plt/expr/deref-index %" PRIu64
	       "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 "), %" PRIu64 " libdw rows walked in %zu+%zu FDEs, %"
	       PRIu64 " addresses checked, %" PRIu64 " mismatches%s%s (%.1f s)\n",
	       o.path, o.eh_only ? " (eh-only)" : "", o.rows, o.cfa_types[CFI_CFA_UNDEF],
	       o.cfa_types[CFI_CFA_REG], o.cfa_types[CFI_CFA_DEREF], o.cfa_types[CFI_CFA_PLT],
	       o.cfa_types[CFI_CFA_EXPR], o.cfa_types[CFI_CFA_DEREF_INDEX], o.libdw_rows, o.eh.fdes.n, o.dbg.fdes.n, o.addrs,
	       o.mismatches, o.st.debug_file[0] ? "; debug file " : "", o.st.debug_file,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	fflush(stdout);
	cr_expect_gt(o.rows, 0);
	cr_expect_gt(o.eh.fdes.n + o.dbg.fdes.n, 0);
	cr_assert_eq(o.mismatches, 0, "%s: %" PRIu64 " mismatches with libdw", o.path, o.mismatches);
	close_oracle(&o);
}
