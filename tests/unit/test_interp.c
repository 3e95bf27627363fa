/* Call frame instruction interpretation (cfi/interp.c): every DW_CFA
 * opcode, run on a hand-assembled CIE + FDE, checked row by row. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "bytebuf.h"
#include "cfi/interp.h"

#define VADDR 0x10000u

struct icase {
	uint8_t version;      /* 0: 3 (RA column as ULEB128) */
	uint64_t code_align;  /* 0: 1 */
	int64_t data_align;   /* 0: -8 */
	uint32_t ra_reg;      /* 0: 16 */
	bool signal;
	uint8_t fde_enc;      /* DW_EH_PE_absptr or pcrel|sdata4 */
	const uint8_t *cie;   /* NULL: CFA = rsp + 8, RA at CFA - 8 */
	size_t ncie;
	const uint8_t *fde;
	size_t nfde;
	uint64_t start, range;
	/* A pcrel|sdata4 DW_CFA_set_loc operand to fill in at this offset of
	 * the FDE instructions (0: none), since it depends on where they land. */
	size_t pcrel_at;
	uint64_t pcrel_target;
};

struct row {
	uint64_t addr;
	struct cfi_rule rule;
};

struct rows {
	struct row v[64];
	size_t n;
	size_t stop_after; /* return 5 from this call on (0: never) */
};

static int collect(void *ctx, uint64_t addr, const struct cfi_rule *rule)
{
	struct rows *r = ctx;

	cr_assert_lt(r->n, 64, "too many rows");
	r->v[r->n].addr = addr;
	r->v[r->n].rule = *rule;
	r->n++;
	if (r->stop_after && r->n >= r->stop_after)
		return 5;
	return 0;
}

static const uint8_t std_cie[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };

static void put_addr(struct bytebuf *b, uint8_t enc, uint64_t v, bool is_range)
{
	if (enc == DW_EH_PE_absptr)
		bb_u64(b, v);
	else if (is_range)
		bb_u32(b, (uint32_t)v);
	else
		bb_u32(b, (uint32_t)(v - (VADDR + b->n)));
}

/* What the interpreter reported of the last run, for a caller that
 * reuses an FDE's rows (cfi/compile.c). */
static struct {
	uint64_t last_loc;
	bool set_loc, reached_end;
} seen;

/* Assembles the case into an .eh_frame, parses it and runs the FDE. */
static int run(const struct icase *c, struct rows *out, struct cfi_error *err)
{
	static struct bytebuf b;
	struct cfi_section sec;
	struct cfi_fdeset set = { 0 };
	struct cfi_ptr_ctx ctx = { .addr_size = 8 };
	struct cfi_interp ip = { 0 };
	uint8_t version = c->version ? c->version : 3;
	size_t ci, fi, insns;
	int ret;

	b.n = 0;
	ci = cie_open(&b, true, false);
	bb_u8(&b, version);
	bb_str(&b, c->signal ? "zRS" : "zR");
	bb_uleb(&b, c->code_align ? c->code_align : 1);
	bb_sleb(&b, c->data_align ? c->data_align : -8);
	if (version == 1)
		bb_u8(&b, (uint8_t)(c->ra_reg ? c->ra_reg : 16));
	else
		bb_uleb(&b, c->ra_reg ? c->ra_reg : 16);
	bb_uleb(&b, 1);
	bb_u8(&b, c->fde_enc);
	if (c->cie)
		bb_bytes(&b, c->cie, c->ncie);
	else
		bb_bytes(&b, std_cie, sizeof(std_cie));
	entry_close(&b, ci);

	fi = fde_open(&b, true, false, ci);
	put_addr(&b, c->fde_enc, c->start, false);
	put_addr(&b, c->fde_enc, c->range, true);
	bb_uleb(&b, 0);
	insns = b.n;
	bb_bytes(&b, c->fde, c->nfde);
	if (c->pcrel_at)
		bb_put_u32_at(&b, insns + c->pcrel_at,
			      (uint32_t)(c->pcrel_target - (VADDR + insns + c->pcrel_at)));
	entry_close(&b, fi);

	sec = (struct cfi_section){ .data = b.p, .size = b.n, .vaddr = VADDR, .is_eh = true,
				    .name = ".eh_frame" };
	memset(err, 0, sizeof(*err));
	cr_assert_eq(cfi_parse_section(&sec, &ctx, &set, err), 0, "assembly: %s", err->msg);
	cr_assert_eq(set.nfdes, 1);
	out->n = 0;
	ret = cfi_interp_fde(&ip, &sec, &set.cies[set.fdes[0].cie], &set.fdes[0], &ctx, collect,
			     out, err);
	seen.last_loc = ip.last_loc;
	seen.set_loc = ip.set_loc;
	seen.reached_end = ip.reached_end;
	cfi_interp_free(&ip);
	cfi_fdeset_free(&set);
	return ret;
}

static void run_ok(const struct icase *c, struct rows *out)
{
	struct cfi_error err;
	int ret = run(c, out, &err);

	cr_assert_eq(ret, 0, "interp failed (%d): %s", ret, err.msg);
}

static void run_bad(const struct icase *c, const char *what)
{
	struct rows out = { .n = 0 };
	struct cfi_error err;
	int ret = run(c, &out, &err);

	cr_assert_eq(ret, -EBADMSG, "%s: got %d", what, ret);
	cr_assert_neq(err.msg[0], 0, "%s: no message", what);
}

static void expect_row(const struct rows *r, size_t i, uint64_t addr, struct cfi_rule w)
{
	const struct cfi_rule *g;

	cr_assert_lt(i, r->n, "row %zu missing (%zu rows)", i, r->n);
	g = &r->v[i].rule;
	cr_assert_eq(r->v[i].addr, addr, "row %zu: addr 0x%llx, want 0x%llx", i,
		     (unsigned long long)r->v[i].addr, (unsigned long long)addr);
	cr_assert_eq(g->cfa_type, w.cfa_type, "row %zu: cfa_type %u want %u", i, g->cfa_type, w.cfa_type);
	cr_assert_eq(g->cfa_reg, w.cfa_reg, "row %zu: cfa_reg %u want %u", i, g->cfa_reg, w.cfa_reg);
	cr_assert_eq(g->cfa_off, w.cfa_off, "row %zu: cfa_off %d want %d", i, g->cfa_off, w.cfa_off);
	cr_assert_eq(g->cfa_off2, w.cfa_off2, "row %zu: cfa_off2 %d want %d", i, g->cfa_off2, w.cfa_off2);
	cr_assert_eq(g->rbp_type, w.rbp_type, "row %zu: rbp_type %u want %u", i, g->rbp_type, w.rbp_type);
	cr_assert_eq(g->rbp_off, w.rbp_off, "row %zu: rbp_off %d want %d", i, g->rbp_off, w.rbp_off);
	cr_assert_eq(g->ra_type, w.ra_type, "row %zu: ra_type %u want %u", i, g->ra_type, w.ra_type);
	cr_assert_eq(g->ra_off, w.ra_off, "row %zu: ra_off %d want %d", i, g->ra_off, w.ra_off);
	cr_assert_eq(g->flags, w.flags, "row %zu: flags 0x%x want 0x%x", i, g->flags, w.flags);
	cr_assert_eq(memcmp(g, &w, sizeof(w)), 0, "row %zu: padding differs", i);
}

#define RULE(...) ((struct cfi_rule){ __VA_ARGS__ })
#define CFA(r, o) .cfa_type = CFI_CFA_REG, .cfa_reg = (r), .cfa_off = (o)
#define RA_AT(o) .ra_type = CFI_REG_OFFSET, .ra_off = (o)
#define RBP_AT(o) .rbp_type = CFI_REG_OFFSET, .rbp_off = (o)
#define FDE(...) .fde = (const uint8_t[]){ __VA_ARGS__ }, \
		 .nfde = sizeof((const uint8_t[]){ __VA_ARGS__ })
#define CIE(...) .cie = (const uint8_t[]){ __VA_ARGS__ }, \
		 .ncie = sizeof((const uint8_t[]){ __VA_ARGS__ })

/* ---- location advances ------------------------------------------------ */

Test(advance, advance_loc_factored)
{
	struct icase c = {
		.code_align = 4, .start = 0x1000, .range = 0x100,
		/* advance 1; def_cfa_offset 16; offset r6 2; advance 10; def_cfa_offset 8 */
		FDE(0x41, 0x0e, 0x10, 0x86, 0x02, 0x4a, 0x0e, 0x08),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 3);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x1004, RULE(CFA(7, 16), RBP_AT(-16), RA_AT(-8)));
	expect_row(&r, 2, 0x1004 + 40, RULE(CFA(7, 8), RBP_AT(-16), RA_AT(-8)));
	/* Position-independent rows, ended inside the FDE: reusable. */
	cr_assert_eq(seen.last_loc, 0x1004 + 40);
	cr_assert(!seen.set_loc && !seen.reached_end);
}

Test(advance, advance_loc1_2_4_8)
{
	struct icase c = {
		.code_align = 2, .start = 0x100000, .range = 0x100000,
		FDE(0x02, 0xff, 0x0e, 0x10,
		    0x03, 0x34, 0x12, 0x0e, 0x18,
		    0x04, 0x00, 0x00, 0x01, 0x00, 0x0e, 0x20,
		    0x1d, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x0e, 0x28),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 5);
	expect_row(&r, 0, 0x100000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x100000 + 0xff * 2, RULE(CFA(7, 16), RA_AT(-8)));
	expect_row(&r, 2, 0x1001fe + 0x1234 * 2, RULE(CFA(7, 24), RA_AT(-8)));
	expect_row(&r, 3, 0x102666 + 0x10000 * 2, RULE(CFA(7, 32), RA_AT(-8)));
	expect_row(&r, 4, 0x122666 + 0x100 * 2, RULE(CFA(7, 40), RA_AT(-8)));
}

Test(advance, set_loc_absptr)
{
	struct icase c = {
		.start = 0x1000, .range = 0x100,
		FDE(0x01, 0x10, 0x10, 0, 0, 0, 0, 0, 0, 0x0e, 0x10,
		    0x01, 0x80, 0x10, 0, 0, 0, 0, 0, 0, 0x0e, 0x18),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 3);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x1010, RULE(CFA(7, 16), RA_AT(-8)));
	expect_row(&r, 2, 0x1080, RULE(CFA(7, 24), RA_AT(-8)));
	cr_assert(seen.set_loc, "rows placed by set_loc are not the FDE's at another start");
}

Test(advance, set_loc_pcrel_uses_fde_encoding)
{
	struct icase c = {
		.fde_enc = DW_EH_PE_pcrel | DW_EH_PE_sdata4, .start = 0x1000, .range = 0x100,
		FDE(0x01, 0, 0, 0, 0, 0x0e, 0x10),
		.pcrel_at = 1, .pcrel_target = 0x1040,
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x1040, RULE(CFA(7, 16), RA_AT(-8)));
	cr_assert(seen.set_loc);
}

Test(advance, set_loc_backwards)
{
	struct icase c = {
		.start = 0x1000, .range = 0x100,
		FDE(0x41, 0x01, 0x00, 0x10, 0, 0, 0, 0, 0, 0),
	};

	run_bad(&c, "set_loc back to the FDE start");
}

Test(advance, clipped_at_fde_end)
{
	struct icase past = {
		.start = 0x1000, .range = 0x10,
		/* the advance of 0x20 leaves the FDE: nothing after it counts */
		FDE(0x0e, 0x10, 0x02, 0x20, 0x0e, 0x18, 0x41, 0x0e, 0x20),
	};
	struct icase exact = {
		.start = 0x1000, .range = 0x10,
		FDE(0x41, 0x0e, 0x10, 0x4f, 0x0e, 0x18, 0x41),
	};
	struct rows r = { .n = 0 };

	run_ok(&past, &r);
	cr_assert_eq(r.n, 1);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 16), RA_AT(-8)));
	cr_assert(seen.reached_end, "instructions left unread are not this FDE's rows elsewhere");

	/* 1 + 15 reaches the end exactly: no row starts at 0x1010. */
	run_ok(&exact, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 16), RA_AT(-8)));
	cr_assert(seen.reached_end);
}

Test(advance, zero_advance_emits_nothing)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x40, 0x0e, 0x10, 0x02, 0x00, 0x03, 0x00, 0x00, 0x0e, 0x18, 0x41),
	};
	struct rows r = { .n = 0 };

	/* Nothing changes after the advance: no second row. */
	run_ok(&c, &r);
	cr_assert_eq(r.n, 1);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 24), RA_AT(-8)));
}

Test(advance, callback_stops_interpretation)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x41, 0x0e, 0x10, 0x41, 0x0e, 0x18, 0x41, 0x0e, 0x20, 0x41),
	};
	struct rows r = { .n = 0, .stop_after = 2 };
	struct cfi_error err;

	cr_assert_eq(run(&c, &r, &err), 5);
	cr_assert_eq(r.n, 2);
}

/* ---- register rules --------------------------------------------------- */

Test(regs, offset_variants)
{
	struct icase c = {
		.data_align = -4, .start = 0x1000, .range = 0x10,
		CIE(0x0c, 0x07, 0x08, 0x90, 0x02),
		FDE(0x86, 0x04,             /* offset r6, 4 * -4 */
		    0x41, 0x05, 0x06, 0x05, /* offset_extended r6, 5 * -4 */
		    0x41, 0x11, 0x06, 0x7e, /* offset_extended_sf r6, -2 * -4 */
		    0x41, 0x2f, 0x06, 0x03, /* GNU_negative_offset_extended r6, -(3 * -4) */
		    0x41, 0x11, 0x10, 0x7c), /* offset_extended_sf r16, -4 * -4 */
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 5);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RBP_AT(-16), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RBP_AT(-20), RA_AT(-8)));
	expect_row(&r, 2, 0x1002, RULE(CFA(7, 8), RBP_AT(8), RA_AT(-8)));
	expect_row(&r, 3, 0x1003, RULE(CFA(7, 8), RBP_AT(12), RA_AT(-8)));
	expect_row(&r, 4, 0x1004, RULE(CFA(7, 8), RBP_AT(12), RA_AT(16)));
}

Test(regs, restore_and_restore_extended)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		CIE(0x0c, 0x07, 0x08, 0x90, 0x01, 0x86, 0x02),
		FDE(0x86, 0x04, 0x90, 0x03, 0x41, 0xc6, 0x41, 0x06, 0x10),
	};
	struct icase unmentioned = {
		.start = 0x1000, .range = 0x10,
		FDE(0x86, 0x02, 0x41, 0xc6, 0x41, 0x86, 0x03, 0x41, 0x06, 0x06),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 3);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RBP_AT(-32), RA_AT(-24)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RBP_AT(-16), RA_AT(-24)));
	expect_row(&r, 2, 0x1002, RULE(CFA(7, 8), RBP_AT(-16), RA_AT(-8)));

	/* Restoring a register the CIE never mentioned makes it unmentioned. */
	run_ok(&unmentioned, &r);
	cr_assert_eq(r.n, 4);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RBP_AT(-16), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 2, 0x1002, RULE(CFA(7, 8), RBP_AT(-24), RA_AT(-8)));
	expect_row(&r, 3, 0x1003, RULE(CFA(7, 8), RA_AT(-8)));
}

Test(regs, undefined_and_same_value)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x08, 0x06, 0x41, 0x07, 0x10, 0x41, 0x08, 0x10),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 3);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), .rbp_type = CFI_REG_SAME, RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), .rbp_type = CFI_REG_SAME,
				       .ra_type = CFI_REG_UNDEFINED));
	expect_row(&r, 2, 0x1002, RULE(CFA(7, 8), .rbp_type = CFI_REG_SAME,
				       .ra_type = CFI_REG_SAME));
}

Test(regs, register_rule)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x09, 0x10, 0x03, 0x41, 0x09, 0x06, 0x0c),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), .ra_type = CFI_REG_REGISTER, .ra_off = 3));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), .rbp_type = CFI_REG_REGISTER, .rbp_off = 12,
				       .ra_type = CFI_REG_REGISTER, .ra_off = 3));
}

Test(regs, expression_and_val_expression)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		/* The blocks hold 0x76, which as an instruction would be an
		 * advance: they must be skipped whole. */
		FDE(0x10, 0x06, 0x02, 0x76, 0x00, 0x41,
		    0x16, 0x10, 0x03, 0x76, 0x78, 0x06, 0x0e, 0x10),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), .rbp_type = CFI_REG_EXPR, RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 16), .rbp_type = CFI_REG_EXPR,
				       .ra_type = CFI_REG_VAL_EXPR));
}

Test(regs, val_offset_and_sf)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x14, 0x06, 0x03, 0x41, 0x15, 0x10, 0x7f),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), .rbp_type = CFI_REG_VAL_OFFSET, .rbp_off = -24,
				       RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), .rbp_type = CFI_REG_VAL_OFFSET, .rbp_off = -24,
				       .ra_type = CFI_REG_VAL_OFFSET, .ra_off = 8));
}

Test(regs, ra_column_from_cie)
{
	struct icase c = {
		.ra_reg = 30, .start = 0x1000, .range = 0x10,
		CIE(0x0c, 0x07, 0x08),
		/* offset r30; r16 is an ordinary register here; undefined r30 */
		FDE(0x9e, 0x01, 0x41, 0x90, 0x03, 0x41, 0x07, 0x1e, 0x41, 0x86, 0x02),
	};
	struct icase v1 = {
		.version = 1, .ra_reg = 30, .start = 0x1000, .range = 0x10,
		CIE(0x0c, 0x07, 0x08),
		FDE(0x90, 0x03, 0x41, 0x05, 0x1e, 0x02),
	};
	struct rows r = { .n = 0 };

	/* The r16 rule changes nothing tracked, so 0x1001 starts no row. */
	run_ok(&c, &r);
	cr_assert_eq(r.n, 3);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x1002, RULE(CFA(7, 8), .ra_type = CFI_REG_UNDEFINED));
	expect_row(&r, 2, 0x1003, RULE(CFA(7, 8), RBP_AT(-16), .ra_type = CFI_REG_UNDEFINED));

	run_ok(&v1, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RA_AT(-16)));
}

/* ---- state stack ------------------------------------------------------ */

Test(state, remember_restore_nested_3)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x0e, 0x10, 0x0a,             /* A: rsp+16 */
		    0x41, 0x0e, 0x18, 0x86, 0x03, 0x0a, /* B: rsp+24, rbp -24 */
		    0x41, 0x0e, 0x20, 0x0a,       /* C: rsp+32, rbp -24 */
		    0x41, 0x0c, 0x06, 0x10,
		    0x41, 0x0b, 0x41, 0x0b, 0x41, 0x0b),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 7);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 16), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 24), RBP_AT(-24), RA_AT(-8)));
	expect_row(&r, 2, 0x1002, RULE(CFA(7, 32), RBP_AT(-24), RA_AT(-8)));
	expect_row(&r, 3, 0x1003, RULE(CFA(6, 16), RBP_AT(-24), RA_AT(-8)));
	expect_row(&r, 4, 0x1004, RULE(CFA(7, 32), RBP_AT(-24), RA_AT(-8)));
	expect_row(&r, 5, 0x1005, RULE(CFA(7, 24), RBP_AT(-24), RA_AT(-8)));
	expect_row(&r, 6, 0x1006, RULE(CFA(7, 16), RA_AT(-8)));
}

Test(state, restore_without_remember)
{
	struct icase none = { .start = 0x1000, .range = 0x10, FDE(0x41, 0x0b) };
	struct icase extra = { .start = 0x1000, .range = 0x10, FDE(0x0a, 0x0b, 0x41, 0x0b) };
	struct rows r = { .n = 0 };
	struct cfi_error err;

	cr_assert_eq(run(&none, &r, &err), -EBADMSG);
	cr_assert_not_null(strstr(err.msg, "restore_state"), "message: %s", err.msg);
	run_bad(&extra, "one restore_state too many");
}

Test(state, remember_in_cie_carries_over)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		CIE(0x0c, 0x07, 0x08, 0x90, 0x01, 0x0a),
		FDE(0x0e, 0x10, 0x41, 0x0b),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 16), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RA_AT(-8)));
}

/* ---- CFA rules -------------------------------------------------------- */

Test(cfa, def_cfa_family)
{
	struct icase c = {
		.data_align = -4, .start = 0x1000, .range = 0x10,
		CIE(0x0c, 0x07, 0x08, 0x90, 0x02),
		FDE(0x0c, 0x06, 0x10,       /* def_cfa: offset not factored */
		    0x41, 0x12, 0x07, 0x7e, /* def_cfa_sf: -2 * -4 */
		    0x41, 0x0d, 0x06,       /* def_cfa_register keeps the offset */
		    0x41, 0x0e, 0x80, 0x01, /* def_cfa_offset 128 */
		    0x41, 0x13, 0x7c),      /* def_cfa_offset_sf: -4 * -4 */
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 5);
	expect_row(&r, 0, 0x1000, RULE(CFA(6, 16), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 2, 0x1002, RULE(CFA(6, 8), RA_AT(-8)));
	expect_row(&r, 3, 0x1003, RULE(CFA(6, 128), RA_AT(-8)));
	expect_row(&r, 4, 0x1004, RULE(CFA(6, 16), RA_AT(-8)));
}

Test(cfa, def_cfa_expression)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
		    0x41, 0x0f, 0x03, 0x77, 0x08, 0x06,
		    0x41, 0x0f, 0x02, 0x96, 0x00, /* nop-like: not a known pattern */
		    0x41, 0x0c, 0x07, 0x10),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 4);
	expect_row(&r, 0, 0x1000, RULE(.cfa_type = CFI_CFA_PLT, .cfa_reg = 7, .cfa_off = 8,
				       .cfa_off2 = 11, RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(.cfa_type = CFI_CFA_DEREF, .cfa_reg = 7, .cfa_off = 8,
				       RA_AT(-8)));
	expect_row(&r, 2, 0x1002, RULE(.cfa_type = CFI_CFA_EXPR, RA_AT(-8)));
	expect_row(&r, 3, 0x1003, RULE(CFA(7, 16), RA_AT(-8)));
}

Test(misc, args_size_and_nop)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x2e, 0x80, 0x01, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x41, 0x2e, 0x10, 0x00, 0x00, 0x00),
	};
	struct rows r = { .n = 0 };

	/* args_size and nop change no rule: one row only. */
	run_ok(&c, &r);
	cr_assert_eq(r.n, 1);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 16), RA_AT(-8)));
}

Test(misc, untracked_registers_make_no_rows)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		/* saves of r8 and rsi between advances, then a CFA change */
		FDE(0x41, 0x88, 0x02, 0x41, 0x84, 0x03, 0x41, 0x0e, 0x10),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x1003, RULE(CFA(7, 16), RA_AT(-8)));
}

#define CSR(i, t, o) .csr_type[i] = (t), .csr_off[i] = (o)

Test(csr, saves_make_rows)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		/* advance 1; offset rbx 2; advance 1; offset r12 3; advance 1;
		 * def_cfa_offset 16; advance 1; offset_extended r15 0x1001 (CFA-32776:
		 * no s16 holds it); advance 1; restore rbx; val_offset r13 1;
		 * same_value r14; advance 1; restore r12 */
		FDE(0x41, 0x83, 0x02, 0x41, 0x8c, 0x03, 0x41, 0x0e, 0x10,
		    0x41, 0x05, 0x0f, 0x81, 0x20,
		    0x41, 0xc3, 0x14, 0x0d, 0x01, 0x08, 0x0e,
		    0x41, 0xcc),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 7);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RA_AT(-8), CSR(0, CFI_REG_OFFSET, -16)));
	expect_row(&r, 2, 0x1002, RULE(CFA(7, 8), RA_AT(-8), CSR(0, CFI_REG_OFFSET, -16),
				       CSR(1, CFI_REG_OFFSET, -24)));
	expect_row(&r, 3, 0x1003, RULE(CFA(7, 16), RA_AT(-8), CSR(0, CFI_REG_OFFSET, -16),
				       CSR(1, CFI_REG_OFFSET, -24)));
	/* A slot no field holds loses r15 alone, not the rule. */
	expect_row(&r, 4, 0x1004, RULE(CFA(7, 16), RA_AT(-8), CSR(0, CFI_REG_OFFSET, -16),
				       CSR(1, CFI_REG_OFFSET, -24), CSR(4, CFI_REG_UNDEFINED, 0)));
	expect_row(&r, 5, 0x1005, RULE(CFA(7, 16), RA_AT(-8), CSR(1, CFI_REG_OFFSET, -24),
				       CSR(2, CFI_REG_VAL_OFFSET, -8), CSR(3, CFI_REG_SAME, 0),
				       CSR(4, CFI_REG_UNDEFINED, 0)));
	expect_row(&r, 6, 0x1006, RULE(CFA(7, 16), RA_AT(-8), CSR(2, CFI_REG_VAL_OFFSET, -8),
				       CSR(3, CFI_REG_SAME, 0), CSR(4, CFI_REG_UNDEFINED, 0)));
}

Test(csr, remember_restore_state)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		/* offset rbx 2; remember; advance 1; restore rbx; advance 1;
		 * restore_state */
		FDE(0x83, 0x02, 0x0a, 0x41, 0xc3, 0x41, 0x0b),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 3);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8), CSR(0, CFI_REG_OFFSET, -16)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), RA_AT(-8)));
	expect_row(&r, 2, 0x1002, RULE(CFA(7, 8), RA_AT(-8), CSR(0, CFI_REG_OFFSET, -16)));
}

Test(misc, signal_flag)
{
	struct icase c = {
		.signal = true, .start = 0x1000, .range = 0x10,
		FDE(0x41, 0x0e, 0x10),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RA_AT(-8), .flags = CFI_RULE_SIGNAL));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 16), RA_AT(-8), .flags = CFI_RULE_SIGNAL));
}

Test(misc, too_big)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		FDE(0x86, 0x80, 0x20,                         /* 4096 * -8 = INT16_MIN: fits */
		    0x41, 0x86, 0x88, 0x27,                   /* 5000 * -8 = -40000 */
		    0x41, 0x86, 0x02, 0x0c, 0xac, 0x02, 0x08, /* CFA in register 300 */
		    0x41, 0x0c, 0x07, 0x80, 0x80, 0x80, 0x80, 0x08, /* CFA offset 2^31 */
		    0x41, 0x0c, 0x07, 0x08, 0x09, 0x10, 0xc0, 0xb8, 0x02), /* RA in r40000 */
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 5);
	expect_row(&r, 0, 0x1000, RULE(CFA(7, 8), RBP_AT(-32768), RA_AT(-8)));
	expect_row(&r, 1, 0x1001, RULE(CFA(7, 8), .rbp_type = CFI_REG_OFFSET, RA_AT(-8),
				       .flags = CFI_RULE_TOO_BIG));
	expect_row(&r, 2, 0x1002, RULE(.cfa_type = CFI_CFA_REG, RBP_AT(-16), RA_AT(-8),
				       .flags = CFI_RULE_TOO_BIG));
	expect_row(&r, 3, 0x1003, RULE(.cfa_type = CFI_CFA_REG, RBP_AT(-16), RA_AT(-8),
				       .flags = CFI_RULE_TOO_BIG));
	expect_row(&r, 4, 0x1004, RULE(CFA(7, 8), RBP_AT(-16), .ra_type = CFI_REG_REGISTER,
				       .flags = CFI_RULE_TOO_BIG));
}

/* Factored offsets whose product overflows int64 must not wrap into a
 * plausible small offset: the rule is flagged CFI_RULE_TOO_BIG. */
Test(misc, huge_factored_offsets)
{
	struct icase c = {
		.start = 0x1000, .range = 0x10,
		/* offset r6, 2^62 * -8 = -2^65 */
		FDE(0x86, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40,
		    /* def_cfa_sf r7, 2^61 * -8 = -2^64 */
		    0x41, 0x12, 0x07, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20),
	};
	struct rows r = { .n = 0 };

	run_ok(&c, &r);
	cr_assert_eq(r.n, 2);
	cr_assert_eq(r.v[0].rule.flags & CFI_RULE_TOO_BIG, CFI_RULE_TOO_BIG,
		     "rbp at CFA - 2^65 taken as CFA%+d", r.v[0].rule.rbp_off);
	cr_assert_eq(r.v[1].rule.flags & CFI_RULE_TOO_BIG, CFI_RULE_TOO_BIG,
		     "CFA = rsp - 2^64 taken as rsp%+d", r.v[1].rule.cfa_off);
}

/* ---- errors ----------------------------------------------------------- */

Test(errors, unknown_opcode)
{
	struct icase in_fde = { .start = 0x1000, .range = 0x10, FDE(0x41, 0x3f) };
	struct icase in_cie = { .start = 0x1000, .range = 0x10, CIE(0x0c, 0x07, 0x08, 0x3f),
				FDE(0x41) };
	struct rows r = { .n = 0 };
	struct cfi_error err;

	cr_assert_eq(run(&in_fde, &r, &err), -EBADMSG);
	cr_assert_not_null(strstr(err.msg, "0x3f"), "message: %s", err.msg);
	cr_assert_eq(run(&in_cie, &r, &err), -EBADMSG);
	cr_assert_not_null(strstr(err.msg, "0x3f"), "message: %s", err.msg);
	cr_assert_not_null(strstr(err.msg, "CIE"), "message: %s", err.msg);
}

Test(errors, truncated_operands)
{
	static const struct { uint8_t b[10]; size_t n; const char *what; } cases[] = {
		{ { 0x0c, 0x07 }, 2, "def_cfa without offset" },
		{ { 0x0e, 0x80 }, 2, "unterminated ULEB128" },
		{ { 0x86 }, 1, "offset without offset" },
		{ { 0x02 }, 1, "advance_loc1" },
		{ { 0x03, 0x01 }, 2, "advance_loc2" },
		{ { 0x04, 0x01, 0x00, 0x00 }, 4, "advance_loc4" },
		{ { 0x1d, 1, 0, 0, 0, 0, 0, 0 }, 8, "MIPS_advance_loc8" },
		{ { 0x01, 0x00, 0x10, 0, 0 }, 5, "set_loc" },
		{ { 0x0f, 0x05, 0x77, 0x08 }, 4, "def_cfa_expression block" },
		{ { 0x10, 0x06, 0x03, 0x00 }, 4, "expression block" },
		{ { 0x16, 0x10 }, 2, "val_expression length" },
		{ { 0x09, 0x10 }, 2, "register" },
		{ { 0x2e }, 1, "GNU_args_size" },
		{ { 0x06 }, 1, "restore_extended" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct icase c = { .start = 0x1000, .range = 0x10, .fde = cases[i].b,
				   .nfde = cases[i].n };

		run_bad(&c, cases[i].what);
	}
}

Test(errors, advance_or_restore_in_cie)
{
	struct icase adv = { .start = 0x1000, .range = 0x10, CIE(0x0c, 0x07, 0x08, 0x41),
			     FDE(0x00) };
	struct icase rst = { .start = 0x1000, .range = 0x10, CIE(0x0c, 0x07, 0x08, 0xc6),
			     FDE(0x00) };

	run_bad(&adv, "advance_loc in a CIE");
	run_bad(&rst, "restore in a CIE");
}

/* ---- CFA expression patterns ------------------------------------------ */

static struct cfi_rule classify(const uint8_t *e, size_t n)
{
	struct cfi_rule r;

	/* Stale fields must be overwritten. */
	memset(&r, 0x55, sizeof(r));
	cfi_classify_cfa_expr(e, n, &r);
	return r;
}

Test(classify, deref)
{
	static const uint8_t e[] = { 0x76, 0x78, 0x06 };
	static const uint8_t e16[] = { 0x76, 0x78, 0x06, 0x23, 0x10 };
	struct cfi_rule r = classify(e, sizeof(e));

	cr_assert_eq(r.cfa_type, CFI_CFA_DEREF);
	cr_assert_eq(r.cfa_reg, 6);
	cr_assert_eq(r.cfa_off, -8);
	cr_assert_eq(r.cfa_off2, 0);

	r = classify(e16, sizeof(e16));
	cr_assert_eq(r.cfa_type, CFI_CFA_DEREF);
	cr_assert_eq(r.cfa_reg, 6);
	cr_assert_eq(r.cfa_off, -8);
	cr_assert_eq(r.cfa_off2, 16);
}

Test(classify, plt)
{
	static const uint8_t e11[] = { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	static const uint8_t e10[] = { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22 };
	struct cfi_rule r = classify(e11, sizeof(e11));

	cr_assert_eq(r.cfa_type, CFI_CFA_PLT);
	cr_assert_eq(r.cfa_reg, 7);
	cr_assert_eq(r.cfa_off, 8);
	cr_assert_eq(r.cfa_off2, 11);

	r = classify(e10, sizeof(e10));
	cr_assert_eq(r.cfa_type, CFI_CFA_PLT);
	cr_assert_eq(r.cfa_off, 8);
	cr_assert_eq(r.cfa_off2, 10);
}

Test(classify, deref_index)
{
	/* OpenSSL's bn_mul_mont: breg7 8; breg9 0; lit8; mul; plus; deref;
	 * plus_uconst 8 */
	static const uint8_t e[] = { 0x77, 0x08, 0x79, 0x00, 0x38, 0x1e, 0x22, 0x06, 0x23, 0x08 };
	struct cfi_rule r = classify(e, sizeof(e));

	cr_assert_eq(r.cfa_type, CFI_CFA_DEREF_INDEX);
	cr_assert_eq(r.cfa_reg, 7);
	cr_assert_eq(r.cfa_reg2, 9);
	cr_assert_eq(r.cfa_off, 8);
	cr_assert_eq(r.cfa_off2, 8);
}

Test(classify, other_expressions)
{
	static const struct { uint8_t b[16]; size_t n; const char *what; } cases[] = {
		{ { 0 }, 0, "empty" },
		{ { 0x77, 0x08, 0x06, 0x06 }, 4, "breg7 8; deref; deref" },
		{ { 0x77, 0x08 }, 2, "breg7 8" },
		{ { 0x76, 0x78, 0x06, 0x23, 0xc0, 0xb8, 0x02 }, 7, "deref; plus_uconst 40000" },
		{ { 0x76, 0x78, 0x06, 0x23, 0x10, 0x06 }, 6, "deref; plus_uconst; trailing op" },
		{ { 0x76, 0x78, 0x06, 0x22, 0x10 }, 5, "deref; plus; 0x10" },
		{ { 0x76, 0x78, 0x06, 0x30, 0x10 }, 5, "deref; lit0; 0x10" },
		{ { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22, 0x96 }, 12,
		  "PLT pattern with a trailing op" },
		{ { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24 }, 10,
		  "PLT pattern without plus" },
		{ { 0x76, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 }, 11,
		  "PLT pattern on rbp" },
		{ { 0x77, 0x08, 0x80, 0x01, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 }, 11,
		  "PLT pattern with breg16 1" },
		{ { 0x9c }, 1, "call_frame_cfa" },
		{ { 0x77, 0x08, 0x79, 0x00, 0x34, 0x1e, 0x22, 0x06, 0x23, 0x08 }, 10,
		  "indexed deref scaled by 4" },
		{ { 0x77, 0x08, 0x79, 0x00, 0x38, 0x1e, 0x22, 0x06 }, 8,
		  "indexed deref without plus_uconst" },
		{ { 0x77, 0x08, 0x79, 0x01, 0x38, 0x1e, 0x22, 0x06, 0x23, 0x08 }, 10,
		  "indexed deref with breg9 1" },
		{ { 0x77, 0x08, 0x77, 0x00, 0x38, 0x1e, 0x22, 0x06, 0x23, 0x08 }, 10,
		  "indexed deref by rsp" },
		{ { 0x77, 0x08, 0x79, 0x00, 0x38, 0x1e, 0x22, 0x06, 0x23, 0x08, 0x06 }, 11,
		  "indexed deref with a trailing op" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfi_rule r = classify(cases[i].b, cases[i].n);

		cr_assert_eq(r.cfa_type, CFI_CFA_EXPR, "%s: type %u", cases[i].what, r.cfa_type);
		cr_assert_eq(r.cfa_reg, 0, "%s", cases[i].what);
		cr_assert_eq(r.cfa_off, 0, "%s", cases[i].what);
		cr_assert_eq(r.cfa_off2, 0, "%s", cases[i].what);
		cr_assert_eq(r.cfa_reg2, 0, "%s", cases[i].what);
	}
}
