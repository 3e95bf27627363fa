/* .eh_frame / .debug_frame structure parsing (cfi/ehframe.c) on hand-made
 * section images. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "bytebuf.h"
#include "cfi/ehframe.h"

#define EH_VADDR 0x2000u

/* x86-64 initial instructions: CFA = rsp + 8, RA at CFA - 8. */
static const uint8_t std_insns[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };

static struct cfi_ptr_ctx ctx8(void)
{
	struct cfi_ptr_ctx c;

	memset(&c, 0, sizeof(c));
	c.addr_size = 8;
	return c;
}

static struct cfi_section eh_sec(const struct bytebuf *b)
{
	struct cfi_section s = { .data = b->p, .size = b->n, .vaddr = EH_VADDR, .is_eh = true,
				 .name = ".eh_frame" };

	return s;
}

static struct cfi_section dbg_sec(const struct bytebuf *b)
{
	struct cfi_section s = { .data = b->p, .size = b->n, .vaddr = 0, .is_eh = false,
				 .name = ".debug_frame" };

	return s;
}

/* A version 1 "zR" CIE with pcrel|sdata4 FDE addresses, as GCC emits. */
static size_t put_cie_zR(struct bytebuf *b, uint64_t code_align, int64_t data_align)
{
	size_t c = cie_open(b, true, false);

	bb_u8(b, 1);
	bb_str(b, "zR");
	bb_uleb(b, code_align);
	bb_sleb(b, data_align);
	bb_u8(b, 16);
	bb_uleb(b, 1);
	bb_u8(b, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	bb_bytes(b, std_insns, sizeof(std_insns));
	entry_close(b, c);
	return c;
}

/* The pcrel|sdata4 encoding of `target` at the current position. */
static void put_pcrel4(struct bytebuf *b, uint64_t target)
{
	bb_u32(b, (uint32_t)(target - (EH_VADDR + b->n)));
}

/* An FDE for a "zR" CIE: pcrel start, range, empty augmentation data. */
static size_t put_fde_zR(struct bytebuf *b, size_t cie, uint64_t start, uint32_t range,
			 const uint8_t *insns, size_t n)
{
	size_t f = fde_open(b, true, false, cie);

	put_pcrel4(b, start);
	bb_u32(b, range);
	bb_uleb(b, 0);
	bb_bytes(b, insns, n);
	entry_close(b, f);
	return f;
}

static int parse(const struct cfi_section *s, struct cfi_fdeset *set, struct cfi_error *err)
{
	struct cfi_ptr_ctx c = ctx8();

	memset(set, 0, sizeof(*set));
	memset(err, 0, sizeof(*err));
	return cfi_parse_section(s, &c, set, err);
}

static void expect_corrupt(const struct cfi_section *s, const char *what)
{
	struct cfi_fdeset set;
	struct cfi_error err;
	int ret = parse(s, &set, &err);

	cr_assert_eq(ret, -EBADMSG, "%s: got %d", what, ret);
	cr_assert_neq(err.msg[0], 0, "%s: no message", what);
	cr_assert_not_null(strstr(err.msg, s->name), "%s: message \"%s\" does not name the section",
			   what, err.msg);
	cfi_fdeset_free(&set);
}

Test(cie, version1_zR_and_pcrel_fde)
{
	static const uint8_t fi[] = { 0x41, 0x0e, 0x10 };
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c, f, cie_insns;

	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "zR");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	/* Version 1 stores the RA column as a ubyte: 0x90 is 144, not the
	 * start of a ULEB128. */
	bb_u8(&b, 0x90);
	bb_uleb(&b, 1);
	bb_u8(&b, 0x1b);
	cie_insns = b.n;
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);
	f = put_fde_zR(&b, c, 0x401000, 0x30, fi, sizeof(fi));
	s = eh_sec(&b);

	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.ncies, 1);
	cr_assert_eq(set.nfdes, 1);
	cr_assert_eq(set.cies[0].offset, 0);
	cr_assert_eq(set.cies[0].version, 1);
	cr_assert_eq(set.cies[0].code_align, 1);
	cr_assert_eq(set.cies[0].data_align, -8);
	cr_assert_eq(set.cies[0].ra_reg, 144);
	cr_assert_eq(set.cies[0].fde_enc, 0x1b);
	cr_assert_eq(set.cies[0].lsda_enc, DW_EH_PE_omit);
	cr_assert_eq(set.cies[0].addr_size, 8);
	cr_assert(set.cies[0].has_z);
	cr_assert_not(set.cies[0].signal);
	cr_assert_eq(set.cies[0].insns, b.p + cie_insns);
	cr_assert_eq(set.cies[0].insns_end, b.p + f);

	cr_assert_eq(set.fdes[0].start, 0x401000);
	cr_assert_eq(set.fdes[0].end, 0x401030);
	cr_assert_eq(set.fdes[0].cie, 0);
	cr_assert_eq(set.fdes[0].offset, f);
	/* length, CIE pointer, start, range, augmentation length */
	cr_assert_eq(set.fdes[0].insns, b.p + f + 4 + 4 + 4 + 4 + 1);
	cr_assert_eq(set.fdes[0].insns_end, b.p + b.n);
	cr_assert_eq(set.zero_length, 0);
	cfi_fdeset_free(&set);
}

Test(cie, version3_uleb_ra)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c;

	c = cie_open(&b, true, false);
	bb_u8(&b, 3);
	bb_str(&b, "zR");
	bb_uleb(&b, 4);
	bb_sleb(&b, -4);
	bb_uleb(&b, 144); /* 0x90 0x01 */
	bb_uleb(&b, 1);
	bb_u8(&b, 0x1b);
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);
	put_fde_zR(&b, c, 0x5000, 0x10, NULL, 0);
	s = eh_sec(&b);

	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.cies[0].version, 3);
	cr_assert_eq(set.cies[0].code_align, 4);
	cr_assert_eq(set.cies[0].data_align, -4);
	cr_assert_eq(set.cies[0].ra_reg, 144);
	cr_assert_eq(set.cies[0].fde_enc, 0x1b);
	cr_assert_eq(set.fdes[0].start, 0x5000);
	cr_assert_eq(set.fdes[0].end, 0x5010);
	cfi_fdeset_free(&set);
}

/* DWARF 4 .debug_frame CIE: "" augmentation, address and segment sizes. */
static size_t put_v4_cie(struct bytebuf *b, uint8_t addr_size, uint8_t seg_size)
{
	size_t c = cie_open(b, false, false);

	bb_u8(b, 4);
	bb_str(b, "");
	bb_u8(b, addr_size);
	bb_u8(b, seg_size);
	bb_uleb(b, 1);
	bb_sleb(b, -8);
	bb_uleb(b, 16);
	bb_bytes(b, std_insns, sizeof(std_insns));
	entry_close(b, c);
	return c;
}

Test(cie, version4_address_size)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c, f;

	c = put_v4_cie(&b, 8, 0);
	f = fde_open(&b, false, false, c);
	bb_u64(&b, 0x123456789aull);
	bb_u64(&b, 0x40);
	bb_u8(&b, 0x41);
	entry_close(&b, f);
	s = dbg_sec(&b);
	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.cies[0].version, 4);
	cr_assert_eq(set.cies[0].addr_size, 8);
	cr_assert_eq(set.cies[0].has_z, false);
	cr_assert_eq(set.fdes[0].start, 0x123456789aull);
	cr_assert_eq(set.fdes[0].end, 0x123456789aull + 0x40);
	cr_assert_eq(set.fdes[0].insns, b.p + f + 4 + 4 + 16);
	cfi_fdeset_free(&set);

	/* address_size 4 makes the FDE's absptr fields 4 bytes wide. */
	b.n = 0;
	c = put_v4_cie(&b, 4, 0);
	f = fde_open(&b, false, false, c);
	bb_u32(&b, 0x8000);
	bb_u32(&b, 0x20);
	bb_u8(&b, 0x41);
	entry_close(&b, f);
	s = dbg_sec(&b);
	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.cies[0].addr_size, 4);
	cr_assert_eq(set.fdes[0].start, 0x8000);
	cr_assert_eq(set.fdes[0].end, 0x8020);
	cr_assert_eq(set.fdes[0].insns, b.p + f + 4 + 4 + 8);
	cfi_fdeset_free(&set);
}

Test(cie, version4_segment_size_rejected)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;

	put_v4_cie(&b, 8, 1);
	s = dbg_sec(&b);
	expect_corrupt(&s, "segment_size 1");

	b.n = 0;
	put_v4_cie(&b, 2, 0);
	s = dbg_sec(&b);
	expect_corrupt(&s, "address_size 2");
}

static int refuse_mem(void *ctx, uint64_t vaddr, uint64_t *out)
{
	(void)vaddr;
	(void)out;
	++*(int *)ctx;
	return -EFAULT;
}

/* "zPLR" with the personality encoded as `penc`. */
static void check_zPLR(uint8_t penc)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	struct cfi_ptr_ctx ctx = ctx8();
	int mem_calls = 0, ret;
	size_t c, f, fde_insns;

	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "zPLR");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_u8(&b, 16);
	bb_uleb(&b, 1 + 4 + 1 + 1);
	bb_u8(&b, penc);
	put_pcrel4(&b, 0x9000);
	bb_u8(&b, 0x1b); /* L */
	bb_u8(&b, 0x1b); /* R */
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);

	f = fde_open(&b, true, false, c);
	put_pcrel4(&b, 0x401000);
	bb_u32(&b, 0x80);
	bb_uleb(&b, 4);
	put_pcrel4(&b, 0x7000); /* LSDA */
	fde_insns = b.n;
	bb_u8(&b, 0x41);
	entry_close(&b, f);
	s = eh_sec(&b);

	/* The personality's value is not needed, and a GOT slot that cannot
	 * be read must not fail the parse. */
	ctx.read_mem = refuse_mem;
	ctx.mem_ctx = &mem_calls;
	memset(&set, 0, sizeof(set));
	memset(&err, 0, sizeof(err));
	ret = cfi_parse_section(&s, &ctx, &set, &err);
	cr_assert_eq(ret, 0, "penc 0x%x: %s", penc, err.msg);
	cr_assert_eq(mem_calls, 0, "penc 0x%x: the personality slot was read", penc);
	cr_assert_eq(set.cies[0].lsda_enc, 0x1b);
	cr_assert_eq(set.cies[0].fde_enc, 0x1b);
	cr_assert_eq(set.cies[0].insns, b.p + c + 8 + 1 + 5 + 1 + 1 + 1 + 1 + 7);
	cr_assert_eq(set.fdes[0].start, 0x401000);
	cr_assert_eq(set.fdes[0].end, 0x401080);
	cr_assert_eq(set.fdes[0].insns, b.p + fde_insns);
	cfi_fdeset_free(&set);
}

Test(cie, zPLR_pcrel_personality)
{
	check_zPLR(DW_EH_PE_pcrel | DW_EH_PE_sdata4);
}

Test(cie, zPLR_indirect_personality)
{
	check_zPLR(DW_EH_PE_indirect | DW_EH_PE_pcrel | DW_EH_PE_sdata4);
}

Test(cie, zRS_signal_frame)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c;

	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "zRS");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_u8(&b, 16);
	bb_uleb(&b, 1);
	bb_u8(&b, 0x1b);
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);
	put_fde_zR(&b, c, 0x401000, 0x10, NULL, 0);
	put_cie_zR(&b, 1, -8);
	s = eh_sec(&b);

	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.ncies, 2);
	cr_assert(set.cies[0].signal);
	cr_assert_not(set.cies[1].signal);
	cr_assert_eq(set.fdes[0].start, 0x401000);
	cfi_fdeset_free(&set);
}

Test(cie, eh_pointer_skipped)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c, f;

	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "eh");
	bb_u64(&b, 0xffffffffffffffffull); /* GCC 2.x exception table */
	bb_uleb(&b, 2);
	bb_sleb(&b, -4);
	bb_u8(&b, 16);
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);
	/* No 'z' and no 'R': absptr addresses, no augmentation data length. */
	f = fde_open(&b, true, false, c);
	bb_u64(&b, 0x400100);
	bb_u64(&b, 0x20);
	bb_u8(&b, 0x41);
	entry_close(&b, f);
	s = eh_sec(&b);

	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.cies[0].code_align, 2);
	cr_assert_eq(set.cies[0].data_align, -4);
	cr_assert_eq(set.cies[0].ra_reg, 16);
	cr_assert_eq(set.cies[0].fde_enc, DW_EH_PE_absptr);
	cr_assert_not(set.cies[0].has_z);
	cr_assert_eq(set.fdes[0].start, 0x400100);
	cr_assert_eq(set.fdes[0].end, 0x400120);
	cr_assert_eq(set.fdes[0].insns, b.p + f + 4 + 4 + 16);
	cfi_fdeset_free(&set);
}

Test(cie, unknown_augmentation_with_z_skipped)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c, insns;

	/* 'R' is understood, then 'X' and what follows are skipped by the
	 * 'z' length, 3 unknown bytes included. */
	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "zRXY");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_u8(&b, 16);
	bb_uleb(&b, 4);
	bb_u8(&b, 0x1b);
	bb_u8(&b, 0xee);
	bb_u8(&b, 0xee);
	bb_u8(&b, 0xee);
	insns = b.n;
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);
	put_fde_zR(&b, c, 0x401000, 0x10, NULL, 0);
	s = eh_sec(&b);

	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.cies[0].insns, b.p + insns);
	cr_assert_eq(set.cies[0].fde_enc, 0x1b);
	cr_assert_eq(set.fdes[0].start, 0x401000);
	cfi_fdeset_free(&set);
}

Test(cie, unknown_augmentation_without_z)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c;

	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "Q");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_u8(&b, 16);
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);
	s = eh_sec(&b);
	expect_corrupt(&s, "augmentation Q");
}

static void check_dwarf64(bool eh)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c, f;

	c = cie_open(&b, eh, true);
	bb_u8(&b, 3);
	bb_str(&b, "");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_uleb(&b, 16);
	bb_bytes(&b, std_insns, sizeof(std_insns));
	entry_close(&b, c);
	f = fde_open(&b, eh, true, c);
	bb_u64(&b, 0x700000);
	bb_u64(&b, 0x100);
	bb_u8(&b, 0x41);
	entry_close(&b, f);
	s = eh ? eh_sec(&b) : dbg_sec(&b);

	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.ncies, 1);
	cr_assert_eq(set.nfdes, 1);
	/* 0xffffffff, 8-byte length, 8-byte id */
	cr_assert_eq(set.cies[0].insns, b.p + c + 20 + 1 + 1 + 3);
	cr_assert_eq(set.fdes[0].start, 0x700000);
	cr_assert_eq(set.fdes[0].end, 0x700100);
	cr_assert_eq(set.fdes[0].insns, b.p + f + 20 + 16);
	cr_assert_eq(set.fdes[0].insns_end, b.p + b.n);
	cfi_fdeset_free(&set);
}

Test(entry, dwarf64_debug_frame)
{
	check_dwarf64(false);
}

Test(entry, dwarf64_eh_frame)
{
	check_dwarf64(true);
}

Test(entry, dwarf64_cie_id_is_64_bits)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c;

	/* A 64-bit entry whose id is only 0xffffffff is an FDE pointing at
	 * offset 0xffffffff, not a CIE. */
	c = entry_open(&b, true, 0xffffffffull);
	bb_u8(&b, 3);
	bb_str(&b, "");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_uleb(&b, 16);
	entry_close(&b, c);
	s = dbg_sec(&b);
	expect_corrupt(&s, "64-bit entry with a 32-bit CIE id");
}

Test(entry, zero_terminator_ends_eh_frame)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c;

	c = put_cie_zR(&b, 1, -8);
	put_fde_zR(&b, c, 0x401000, 0x10, NULL, 0);
	bb_u32(&b, 0);
	/* Whatever follows the terminator is not .eh_frame. */
	for (int i = 0; i < 16; i++)
		bb_u8(&b, 0xfe);
	s = eh_sec(&b);
	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.nfdes, 1);
	cfi_fdeset_free(&set);
}

Test(entry, zero_length_padding_in_debug_frame)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c, f;

	c = put_v4_cie(&b, 8, 0);
	bb_u32(&b, 0);
	f = fde_open(&b, false, false, c);
	bb_u64(&b, 0x1000);
	bb_u64(&b, 0x10);
	entry_close(&b, f);
	s = dbg_sec(&b);
	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.nfdes, 1);
	cr_assert_eq(set.fdes[0].start, 0x1000);
	cfi_fdeset_free(&set);
}

Test(fde, cie_pointer_conventions)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c1, c2, f;

	/* eh: FDEs of two CIEs, interleaved; each pointer counts back from
	 * its own field. */
	c1 = put_cie_zR(&b, 1, -8);
	c2 = put_cie_zR(&b, 4, -4);
	put_fde_zR(&b, c2, 0x2000, 0x10, NULL, 0);
	put_fde_zR(&b, c1, 0x1000, 0x10, NULL, 0);
	s = eh_sec(&b);
	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.ncies, 2);
	cr_assert_eq(set.nfdes, 2);
	cr_assert_eq(set.cies[set.fdes[0].cie].offset, c2);
	cr_assert_eq(set.cies[set.fdes[0].cie].code_align, 4);
	cr_assert_eq(set.cies[set.fdes[1].cie].offset, c1);
	cr_assert_eq(set.cies[set.fdes[1].cie].code_align, 1);
	cfi_fdeset_free(&set);

	/* debug: the pointer is the CIE's section offset. */
	b.n = 0;
	c1 = put_v4_cie(&b, 8, 0);
	c2 = cie_open(&b, false, false);
	bb_u8(&b, 3);
	bb_str(&b, "");
	bb_uleb(&b, 8);
	bb_sleb(&b, -8);
	bb_uleb(&b, 16);
	entry_close(&b, c2);
	f = fde_open(&b, false, false, c2);
	bb_u64(&b, 0x3000);
	bb_u64(&b, 0x10);
	entry_close(&b, f);
	f = fde_open(&b, false, false, c1);
	bb_u64(&b, 0x4000);
	bb_u64(&b, 0x10);
	entry_close(&b, f);
	s = dbg_sec(&b);
	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.nfdes, 2);
	cr_assert_eq(set.cies[set.fdes[0].cie].code_align, 8);
	cr_assert_eq(set.cies[set.fdes[1].cie].code_align, 1);
	cr_assert_eq(set.fdes[1].start, 0x4000);
	cfi_fdeset_free(&set);
}

Test(fde, cie_after_its_fde)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t f, c;

	/* The FDE's pointer is patched once the CIE's offset is known. */
	f = fde_open(&b, false, false, 0);
	bb_u64(&b, 0x6000);
	bb_u64(&b, 0x10);
	entry_close(&b, f);
	c = put_v4_cie(&b, 8, 0);
	bb_put_u32_at(&b, f + 4, (uint32_t)c);
	s = dbg_sec(&b);

	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	/* Parsed once, when the FDE needed it, not again when reached. */
	cr_assert_eq(set.ncies, 1);
	cr_assert_eq(set.cies[0].offset, c);
	cr_assert_eq(set.nfdes, 1);
	cr_assert_eq(set.fdes[0].cie, 0);
	cr_assert_eq(set.fdes[0].start, 0x6000);
	cfi_fdeset_free(&set);
}

Test(fde, zero_length_not_kept)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_fdeset set;
	struct cfi_error err;
	struct cfi_section s;
	size_t c;

	c = put_cie_zR(&b, 1, -8);
	put_fde_zR(&b, c, 0x401000, 0, NULL, 0);
	put_fde_zR(&b, c, 0x402000, 0x20, NULL, 0);
	put_fde_zR(&b, c, 0x403000, 0, NULL, 0);
	s = eh_sec(&b);
	cr_assert_eq(parse(&s, &set, &err), 0, "%s", err.msg);
	cr_assert_eq(set.zero_length, 2);
	cr_assert_eq(set.nfdes, 1);
	cr_assert_eq(set.fdes[0].start, 0x402000);
	cfi_fdeset_free(&set);
}

/* ---- corrupt sections ------------------------------------------------- */

Test(corrupt, length_past_section_end)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c;

	size_t f;
	uint32_t len;

	/* The last FDE's length claims one byte more than the section has. */
	c = put_cie_zR(&b, 1, -8);
	f = put_fde_zR(&b, c, 0x401000, 0x10, NULL, 0);
	memcpy(&len, b.p + f, 4);
	bb_put_u32_at(&b, f, len + 1);
	s = eh_sec(&b);
	expect_corrupt(&s, "FDE length past the end");

	b.n = 0;
	bb_u32(&b, 100);
	bb_u32(&b, 0);
	s = eh_sec(&b);
	expect_corrupt(&s, "CIE length past the end");

	/* A DWARF64 escape without room for the 8-byte length. */
	b.n = 0;
	bb_u32(&b, 0xffffffffu);
	bb_u32(&b, 8);
	s = dbg_sec(&b);
	expect_corrupt(&s, "truncated 64-bit length");
}

Test(corrupt, reserved_length)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;

	bb_u32(&b, 0xfffffff0u);
	for (int i = 0; i < 32; i++)
		bb_u8(&b, 0);
	s = eh_sec(&b);
	expect_corrupt(&s, "length 0xfffffff0");
}

Test(corrupt, cie_pointer_outside)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c, f;

	/* eh: pointing before the start of the section. */
	c = put_cie_zR(&b, 1, -8);
	f = put_fde_zR(&b, c, 0x401000, 0x10, NULL, 0);
	bb_put_u32_at(&b, f + 4, (uint32_t)(f + 4 + 8));
	s = eh_sec(&b);
	expect_corrupt(&s, "eh CIE pointer before the section");

	/* debug: an offset past the end. */
	b.n = 0;
	put_v4_cie(&b, 8, 0);
	f = fde_open(&b, false, false, 0x1000);
	bb_u64(&b, 0x1000);
	bb_u64(&b, 0x10);
	entry_close(&b, f);
	s = dbg_sec(&b);
	expect_corrupt(&s, "debug CIE pointer past the end");
}

Test(corrupt, cie_pointer_at_non_cie)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c, f1, f2;

	c = put_cie_zR(&b, 1, -8);
	f1 = put_fde_zR(&b, c, 0x401000, 0x10, NULL, 0);
	f2 = put_fde_zR(&b, c, 0x402000, 0x10, NULL, 0);
	bb_put_u32_at(&b, f2 + 4, (uint32_t)(f2 + 4 - f1));
	s = eh_sec(&b);
	expect_corrupt(&s, "eh CIE pointer at an FDE");

	/* In the middle of the CIE. */
	bb_put_u32_at(&b, f2 + 4, (uint32_t)(f2 + 4 - (c + 2)));
	s = eh_sec(&b);
	expect_corrupt(&s, "eh CIE pointer into a CIE");

	b.n = 0;
	c = put_v4_cie(&b, 8, 0);
	f1 = fde_open(&b, false, false, c);
	bb_u64(&b, 0x1000);
	bb_u64(&b, 0x10);
	entry_close(&b, f1);
	f2 = fde_open(&b, false, false, f1);
	bb_u64(&b, 0x2000);
	bb_u64(&b, 0x10);
	entry_close(&b, f2);
	s = dbg_sec(&b);
	expect_corrupt(&s, "debug CIE pointer at an FDE");
}

Test(corrupt, truncated_fde_address)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c, f;

	c = put_cie_zR(&b, 1, -8);
	f = fde_open(&b, true, false, c);
	bb_u16(&b, 0x1234); /* half of an sdata4 */
	entry_close(&b, f);
	bb_u32(&b, 0);
	s = eh_sec(&b);
	expect_corrupt(&s, "2 bytes of a 4-byte address");

	/* Start complete, range missing. */
	b.n = 0;
	c = put_cie_zR(&b, 1, -8);
	f = fde_open(&b, true, false, c);
	put_pcrel4(&b, 0x401000);
	entry_close(&b, f);
	s = eh_sec(&b);
	expect_corrupt(&s, "missing range");
}

Test(corrupt, code_alignment_zero)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;

	put_cie_zR(&b, 0, -8);
	s = eh_sec(&b);
	expect_corrupt(&s, "code alignment 0");
}

Test(corrupt, bad_versions)
{
	static const uint8_t versions[] = { 0, 2, 5, 255 };
	struct cfi_section s;

	for (size_t i = 0; i < sizeof(versions); i++) {
		struct bytebuf b = { .n = 0 };
		size_t c = cie_open(&b, true, false);

		bb_u8(&b, versions[i]);
		bb_str(&b, "zR");
		bb_uleb(&b, 1);
		bb_sleb(&b, -8);
		bb_u8(&b, 16);
		bb_uleb(&b, 1);
		bb_u8(&b, 0x1b);
		entry_close(&b, c);
		s = eh_sec(&b);
		expect_corrupt(&s, "bad version");
	}
}

Test(corrupt, invalid_fde_encoding)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c;

	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "zR");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_u8(&b, 16);
	bb_uleb(&b, 1);
	bb_u8(&b, 0x07);
	entry_close(&b, c);
	s = eh_sec(&b);
	expect_corrupt(&s, "FDE encoding 0x07");
}

Test(corrupt, augmentation_data_overrun)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_section s;
	size_t c;

	/* 'z' declares 1 byte but "PR" needs 1 + 4 + 1. */
	c = cie_open(&b, true, false);
	bb_u8(&b, 1);
	bb_str(&b, "zPR");
	bb_uleb(&b, 1);
	bb_sleb(&b, -8);
	bb_u8(&b, 16);
	bb_uleb(&b, 1);
	bb_u8(&b, 0x1b);
	bb_u32(&b, 0);
	bb_u8(&b, 0x1b);
	entry_close(&b, c);
	s = eh_sec(&b);
	expect_corrupt(&s, "augmentation longer than declared");
}

/* .eh_frame_hdr for `fdes` (offsets in .eh_frame at EH_VADDR) at HDR_VADDR,
 * as ld writes it: version 1, pcrel|sdata4 .eh_frame pointer, udata4
 * count, datarel|sdata4 table of (start, FDE) pairs; `count` may lie. */
#define HDR_VADDR 0x1000u
static struct cfi_section put_hdr(struct bytebuf *h, const size_t *fdes, size_t n, uint32_t count,
				  uint8_t table_enc)
{
	struct cfi_section s;

	h->n = 0;
	bb_u8(h, 1);
	bb_u8(h, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	bb_u8(h, DW_EH_PE_udata4);
	bb_u8(h, table_enc);
	bb_u32(h, (uint32_t)(EH_VADDR - (HDR_VADDR + 4)));
	bb_u32(h, count);
	for (size_t i = 0; i < n; i++) {
		bb_u32(h, (uint32_t)(0x401000 + 0x100 * i - HDR_VADDR));
		bb_u32(h, (uint32_t)(EH_VADDR + fdes[i] - HDR_VADDR));
	}
	s = (struct cfi_section){ .data = h->p, .size = h->n, .vaddr = HDR_VADDR, .is_eh = true,
				  .name = ".eh_frame_hdr" };
	return s;
}

Test(hdr, entry_near_is_the_first_fde_at_or_past_the_hint)
{
	struct bytebuf b = { .n = 0 }, h;
	size_t fdes[8], c = put_cie_zR(&b, 1, -8), i;
	struct cfi_section eh, hdr;

	for (i = 0; i < 8; i++)
		fdes[i] = put_fde_zR(&b, c, 0x401000 + 0x100 * i, 0x10, std_insns, sizeof(std_insns));
	eh = eh_sec(&b);
	hdr = put_hdr(&h, fdes, 8, 8, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, fdes[3]), fdes[3]);
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, fdes[3] + 1), fdes[4]);
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, 1), fdes[0]);
	/* Past the last FDE: the last one still. */
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, b.n), fdes[7]);
	/* A count larger than the table holds is cut to it. */
	hdr = put_hdr(&h, fdes, 8, 0xffffffffu, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, b.n), fdes[7]);
}

Test(hdr, entry_near_without_a_table_it_reads)
{
	struct bytebuf b = { .n = 0 }, h;
	size_t c = put_cie_zR(&b, 1, -8), fde = put_fde_zR(&b, c, 0x401000, 0x10, NULL, 0);
	size_t outside = b.n + 64;
	struct cfi_section eh = eh_sec(&b), hdr;

	hdr = put_hdr(&h, &fde, 1, 1, DW_EH_PE_datarel | DW_EH_PE_udata8);
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, 0), 0, "other table encoding");
	hdr = put_hdr(&h, &fde, 1, 0, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, 0), 0, "no entries");
	hdr = put_hdr(&h, &outside, 1, 1, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, 0), 0, "FDE past .eh_frame");
	hdr = put_hdr(&h, &fde, 1, 1, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	hdr.size = 3;
	cr_assert_eq(cfi_eh_frame_hdr_entry_near(&hdr, &eh, 0), 0, "truncated header");
}

/* The header's FDE count, for sizing the parse's arrays: as far as the
 * section holds entries, and 0 for a table it cannot read. */
Test(hdr, fde_count_is_what_the_table_holds)
{
	struct bytebuf b = { .n = 0 }, h;
	size_t fdes[8], c = put_cie_zR(&b, 1, -8), i;
	struct cfi_section hdr;

	for (i = 0; i < 8; i++)
		fdes[i] = put_fde_zR(&b, c, 0x401000 + 0x100 * i, 0x10, std_insns, sizeof(std_insns));
	hdr = put_hdr(&h, fdes, 8, 8, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	cr_expect_eq(cfi_eh_frame_hdr_fdes(&hdr), 8);
	hdr = put_hdr(&h, fdes, 8, 5, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	cr_expect_eq(cfi_eh_frame_hdr_fdes(&hdr), 5, "the count, not the table's room");
	hdr = put_hdr(&h, fdes, 8, 0xffffffffu, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	cr_expect_eq(cfi_eh_frame_hdr_fdes(&hdr), 8, "a count past the section");
	hdr = put_hdr(&h, fdes, 8, 8, DW_EH_PE_datarel | DW_EH_PE_udata8);
	cr_expect_eq(cfi_eh_frame_hdr_fdes(&hdr), 0, "other table encoding");
	hdr = put_hdr(&h, fdes, 8, 8, DW_EH_PE_datarel | DW_EH_PE_sdata4);
	hdr.size = 3;
	cr_expect_eq(cfi_eh_frame_hdr_fdes(&hdr), 0, "truncated header");
}

/* A parse into a set with room reserved finds the same FDEs, past the
 * room too. */
Test(hdr, reserved_set_parses_the_same)
{
	struct bytebuf b = { .n = 0 };
	size_t c = put_cie_zR(&b, 1, -8), i;
	struct cfi_fdeset plain = { 0 }, reserved = { 0 };
	struct cfi_ptr_ctx ctx = ctx8();
	struct cfi_error err = { { 0 } };
	struct cfi_section eh;

	for (i = 0; i < 300; i++)
		put_fde_zR(&b, c, 0x401000 + 0x100 * i, 0x10, std_insns, sizeof(std_insns));
	eh = eh_sec(&b);
	cr_assert_eq(cfi_fdeset_reserve(&reserved, 70), 0);
	cr_assert_eq(cfi_parse_section(&eh, &ctx, &plain, &err), 0, "%s", err.msg);
	cr_assert_eq(cfi_parse_section(&eh, &ctx, &reserved, &err), 0, "%s", err.msg);
	cr_assert_eq(reserved.nfdes, 300);
	cr_assert_eq(plain.nfdes, 300);
	for (i = 0; i < 300; i++)
		cr_assert_eq(memcmp(&reserved.fdes[i], &plain.fdes[i], sizeof(plain.fdes[i])), 0,
			     "FDE %zu", i);
	cfi_fdeset_free(&plain);
	cfi_fdeset_free(&reserved);
}

/* Where a parse of [0, to) stops says whether `to` is an entry's start. */
Test(entry, parse_stops_at_an_entry_end_or_the_terminator)
{
	struct bytebuf b = { .n = 0 };
	struct cfi_ptr_ctx cx = ctx8();
	struct cfi_fdeset set = { 0 };
	struct cfi_error err = { { 0 } };
	struct cfi_section s;
	size_t c = put_cie_zR(&b, 1, -8), f1, f2, end1;
	uint64_t stop = 0;

	f1 = put_fde_zR(&b, c, 0x401000, 0x10, std_insns, sizeof(std_insns));
	f2 = put_fde_zR(&b, c, 0x402000, 0x10, std_insns, sizeof(std_insns));
	end1 = b.n;
	bb_u32(&b, 0);
	put_fde_zR(&b, c, 0x403000, 0x10, std_insns, sizeof(std_insns));
	s = eh_sec(&b);
	cr_assert_eq(cfi_parse_entries(&s, &cx, 0, f2, &set, &stop, &err), 0, "%s", err.msg);
	cr_assert_eq(stop, f2, "ends where the second FDE starts");
	cfi_fdeset_free(&set);
	cr_assert_eq(cfi_parse_entries(&s, &cx, 0, f1 + 1, &set, &stop, &err), 0, "%s", err.msg);
	cr_assert_eq(stop, f2, "the entry across the limit is read whole");
	cr_assert_eq(set.nfdes, 1);
	cfi_fdeset_free(&set);
	cr_assert_eq(cfi_parse_entries(&s, &cx, 0, b.n, &set, &stop, &err), 0, "%s", err.msg);
	cr_assert_eq(stop, end1, "stops at the terminator, not past it");
	cr_assert_eq(set.nfdes, 2);
	cfi_fdeset_free(&set);
}
