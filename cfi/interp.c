#include "interp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	DW_CFA_nop = 0x00, DW_CFA_set_loc = 0x01, DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03, DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05, DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07, DW_CFA_same_value = 0x08, DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a, DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c, DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e, DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10, DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12, DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14, DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_MIPS_advance_loc8 = 0x1d,
	DW_CFA_GNU_window_save = 0x2d, DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
	DW_CFA_advance_loc = 0x40, DW_CFA_offset = 0x80, DW_CFA_restore = 0xc0,
};

enum {
	DW_OP_deref = 0x06, DW_OP_and = 0x1a, DW_OP_mul = 0x1e, DW_OP_plus = 0x22,
	DW_OP_plus_uconst = 0x23, DW_OP_shl = 0x24, DW_OP_ge = 0x2a,
	DW_OP_lit0 = 0x30, DW_OP_lit31 = 0x4f, DW_OP_breg0 = 0x70, DW_OP_breg31 = 0x8f,
};

/* Operand * factor.  A product past int64 (only crafted CFI has one)
 * saturates: the rule then holds an offset no field can store, so it is
 * marked CFI_RULE_TOO_BIG instead of silently wrapping. */
static int64_t factored_u(uint64_t v, int64_t f)
{
	int64_t out;

	if (v > INT64_MAX || __builtin_mul_overflow((int64_t)v, f, &out))
		return INT64_MAX;
	return out;
}

static int64_t factored_s(int64_t v, int64_t f)
{
	int64_t out;

	if (__builtin_mul_overflow(v, f, &out))
		return INT64_MAX;
	return out;
}

/* loc + delta * code_align, or false if it wraps. */
static bool advance_to(uint64_t loc, uint64_t delta, uint64_t code_align, uint64_t *out)
{
	uint64_t d;

	return !__builtin_mul_overflow(delta, code_align, &d) && !__builtin_add_overflow(loc, d, out);
}

/* A register's rule as the table stores it, converted when an
 * instruction sets it rather than for every row it is in force. */
struct reg_state {
	uint8_t type;  /* enum cfi_reg_type */
	bool too_big;  /* its offset or register number fits no field: off is 0 */
	int16_t off;   /* offset from CFA, or register number */
};

static struct reg_state reg_state_of(uint8_t type, int64_t off)
{
	struct reg_state s = { .type = type };

	if (type == CFI_REG_OFFSET || type == CFI_REG_VAL_OFFSET || type == CFI_REG_REGISTER) {
		if (off < INT16_MIN || off > INT16_MAX)
			s.too_big = true;
		else
			s.off = (int16_t)off;
	}
	return s;
}

struct cfa_state {
	bool is_expr;
	uint64_t reg;
	int64_t off;
	const uint8_t *expr;
	size_t expr_len;
};

struct frame_state {
	struct cfa_state cfa;
	struct reg_state rbp, ra;
	struct reg_state csr[CFI_CSR_NR]; /* CFI_CSR_DWARF order */
	bool cfa_too_big;
	/* The state as the table stores it, kept in step by every change
	 * (sync_cfa, sync_reg), so that a row costs no conversion: rows
	 * outnumber the changes that make them. */
	struct cfi_rule rule;
};

/* Index of DWARF register `reg` in frame_state.csr, or -1. */
static int csr_index(uint64_t reg)
{
	if (reg == 3)
		return 0;
	if (reg >= 12 && reg <= 15)
		return (int)reg - 11;
	return -1;
}

void cfi_classify_cfa_expr(const uint8_t *expr, size_t len, struct cfi_rule *rule)
{
	struct cfi_reader r;
	uint8_t op, reg;
	int64_t off;

	rule->cfa_type = CFI_CFA_EXPR;
	rule->cfa_reg = 0;
	rule->cfa_off = 0;
	rule->cfa_off2 = 0;
	rule->cfa_reg2 = 0;
	cfi_reader_init(&r, expr, len, 0);

	op = cfi_read_u8(&r);
	if (r.err || op < DW_OP_breg0 || op > DW_OP_breg31)
		return;
	reg = (uint8_t)(op - DW_OP_breg0);
	off = cfi_read_sleb(&r);
	if (r.err || off < INT32_MIN || off > INT32_MAX)
		return;
	op = cfi_read_u8(&r);

	if (op == DW_OP_deref) {
		/* GCC's realigned-stack pattern: CFA = *(reg + off) [+ k]. */
		uint64_t add = 0;

		if (cfi_reader_left(&r)) {
			if (cfi_read_u8(&r) != DW_OP_plus_uconst)
				return;
			add = cfi_read_uleb(&r);
			if (r.err || add > INT16_MAX || cfi_reader_left(&r))
				return;
		}
		rule->cfa_type = CFI_CFA_DEREF;
		rule->cfa_reg = reg;
		rule->cfa_off = (int32_t)off;
		rule->cfa_off2 = (int16_t)add;
		return;
	}

	/* OpenSSL's bn_mul_mont keeps its caller's rsp in a slot indexed by
	 * num (r9): breg7 off; bregN 0; lit8; mul; plus; deref; plus_uconst k */
	if (op >= DW_OP_breg0 && op < DW_OP_breg0 + 16) {
		uint8_t reg2 = (uint8_t)(op - DW_OP_breg0);
		uint64_t add;

		if (cfi_read_sleb(&r) != 0 || cfi_read_u8(&r) != DW_OP_lit0 + 8 ||
		    cfi_read_u8(&r) != DW_OP_mul || cfi_read_u8(&r) != DW_OP_plus ||
		    cfi_read_u8(&r) != DW_OP_deref || cfi_read_u8(&r) != DW_OP_plus_uconst)
			return;
		add = cfi_read_uleb(&r);
		if (r.err || add > INT16_MAX || cfi_reader_left(&r) || reg2 == DWARF_REG_RSP)
			return;
		rule->cfa_type = CFI_CFA_DEREF_INDEX;
		rule->cfa_reg = reg;
		rule->cfa_reg2 = reg2;
		rule->cfa_off = (int32_t)off;
		rule->cfa_off2 = (int16_t)add;
		return;
	}

	/* The lazy-binding PLT: rsp + off, plus 8 once the entry's push ran:
	 * breg7 off; breg16 0; lit15; and; litN; ge; lit3; shl; plus */
	if (reg == DWARF_REG_RSP && op == DW_OP_breg0 + DWARF_REG_RIP) {
		uint8_t thr;

		if (cfi_read_sleb(&r) != 0 || cfi_read_u8(&r) != DW_OP_lit0 + 15 ||
		    cfi_read_u8(&r) != DW_OP_and)
			return;
		thr = cfi_read_u8(&r);
		if (thr < DW_OP_lit0 || thr > DW_OP_lit31)
			return;
		if (cfi_read_u8(&r) != DW_OP_ge || cfi_read_u8(&r) != DW_OP_lit0 + 3 ||
		    cfi_read_u8(&r) != DW_OP_shl || cfi_read_u8(&r) != DW_OP_plus ||
		    r.err || cfi_reader_left(&r))
			return;
		rule->cfa_type = CFI_CFA_PLT;
		rule->cfa_reg = DWARF_REG_RSP;
		rule->cfa_off = (int32_t)off;
		rule->cfa_off2 = (int16_t)(thr - DW_OP_lit0);
	}
}

static void sync_flags(struct frame_state *st)
{
	st->rule.flags = (uint8_t)((st->rule.flags & CFI_RULE_SIGNAL) |
				   (st->cfa_too_big || st->rbp.too_big || st->ra.too_big
					    ? CFI_RULE_TOO_BIG : 0));
}

/* After any change of the CFA rule. */
static void sync_cfa(struct frame_state *st)
{
	struct cfi_rule *rule = &st->rule;

	rule->cfa_reg = rule->cfa_reg2 = 0;
	rule->cfa_off = 0;
	rule->cfa_off2 = 0;
	st->cfa_too_big = false;
	if (st->cfa.is_expr && !st->cfa.expr) {
		/* No CFA rule at all yet (a CIE without def_cfa): nothing the
		 * walker can follow. */
		rule->cfa_type = CFI_CFA_EXPR;
	} else if (st->cfa.is_expr) {
		cfi_classify_cfa_expr(st->cfa.expr, st->cfa.expr_len, rule);
	} else {
		rule->cfa_type = CFI_CFA_REG;
		if (st->cfa.reg > UINT8_MAX || st->cfa.off < INT32_MIN || st->cfa.off > INT32_MAX) {
			st->cfa_too_big = true;
		} else {
			rule->cfa_reg = (uint8_t)st->cfa.reg;
			rule->cfa_off = (int32_t)st->cfa.off;
		}
	}
	sync_flags(st);
}

/* After a change of the tracked register `reg` (a member of st). */
static void sync_reg(struct frame_state *st, const struct reg_state *reg)
{
	struct cfi_rule *rule = &st->rule;

	if (reg == &st->rbp) {
		rule->rbp_type = reg->type;
		rule->rbp_off = reg->off;
	} else if (reg == &st->ra) {
		rule->ra_type = reg->type;
		rule->ra_off = reg->off;
	} else {
		size_t i = (size_t)(reg - st->csr);

		/* A slot no field can hold loses that register only. */
		rule->csr_type[i] = reg->too_big ? CFI_REG_UNDEFINED : reg->type;
		rule->csr_off[i] = reg->off;
	}
	sync_flags(st);
}

struct run {
	const struct cfi_section *sec;
	const struct cfi_cie *cie;
	const struct cfi_ptr_ctx *ctx;
	struct cfi_interp *ip;
	struct cfi_error *err;
	uint64_t entry_off;   /* for messages */
	const char *what;     /* "CIE" or "FDE" */
	size_t depth;         /* remember_state stack depth */
};

static int push_state(struct run *run, const struct frame_state *st)
{
	struct cfi_interp *ip = run->ip;

	if (run->depth == ip->cap) {
		size_t ncap = ip->cap ? ip->cap * 2 : 8;
		void *p = realloc(ip->stack, ncap * sizeof(struct frame_state));

		if (!p)
			return cfi_fail(run->err, -ENOMEM, "out of memory");
		ip->stack = p;
		ip->cap = ncap;
	}
	((struct frame_state *)ip->stack)[run->depth++] = *st;
	return 0;
}

/* Runs one instruction stream.  With fn == NULL (the CIE's initial
 * instructions) no row is emitted and advances are errors. */
static int run_insns(struct run *run, const uint8_t *insns, const uint8_t *insns_end,
		     struct frame_state *st, const struct frame_state *initial,
		     uint64_t start, uint64_t end, cfi_row_fn fn, void *fnctx)
{
	const struct cfi_cie *cie = run->cie;
	struct cfi_reader r;
	uint64_t loc = start;
	/* Only changes of the CFA and of the registers the walker tracks
	 * (rbp, RA, rbx, r12-r15) make a new row. */
	bool dirty = true;
	int ret;

#define BAD(reason) cfi_fail(run->err, -EBADMSG, "%s: %s at offset 0x%llx: %s", \
			     run->sec->name, run->what, (unsigned long long)run->entry_off, reason)

	cfi_reader_init(&r, insns, (size_t)(insns_end - insns), 0);
	while (cfi_reader_left(&r)) {
		uint8_t op = cfi_read_u8(&r);
		uint64_t reg = 0, new_loc = loc;
		bool advance = false, wrapped = false;
		struct reg_state *target = NULL;
		uint8_t rtype = CFI_REG_UNMENTIONED;
		int64_t roff = 0;
		bool set_reg = false;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			wrapped = !advance_to(loc, op & 0x3f, cie->code_align, &new_loc);
			advance = true;
			break;
		case DW_CFA_offset:
			reg = op & 0x3f;
			rtype = CFI_REG_OFFSET;
			roff = factored_u(cfi_read_uleb(&r), cie->data_align);
			set_reg = true;
			break;
		case DW_CFA_restore:
			reg = op & 0x3f;
			goto restore;
		default:
			switch (op) {
			case DW_CFA_nop:
				break;
			case DW_CFA_set_loc: {
				struct cfi_reader lr = r;
				struct cfi_ptr_ctx pctx = *run->ctx;

				/* Operand is encoded like the FDE's initial location. */
				lr.base = run->sec->data;
				lr.vaddr = run->sec->vaddr;
				lr.pos = r.pos;
				lr.end = r.end;
				pctx.addr_size = cie->addr_size;
				run->ip->set_loc = true;
				if (cfi_read_encoded(&lr, cie->fde_enc, &pctx, &new_loc))
					return BAD("undecodable DW_CFA_set_loc");
				r.pos = lr.pos;
				if (new_loc < loc)
					return BAD("DW_CFA_set_loc moves backwards");
				advance = true;
				break;
			}
			case DW_CFA_advance_loc1:
				wrapped = !advance_to(loc, cfi_read_u8(&r), cie->code_align, &new_loc);
				advance = true;
				break;
			case DW_CFA_advance_loc2:
				wrapped = !advance_to(loc, cfi_read_u16(&r), cie->code_align, &new_loc);
				advance = true;
				break;
			case DW_CFA_advance_loc4:
				wrapped = !advance_to(loc, cfi_read_u32(&r), cie->code_align, &new_loc);
				advance = true;
				break;
			case DW_CFA_MIPS_advance_loc8:
				wrapped = !advance_to(loc, cfi_read_u64(&r), cie->code_align, &new_loc);
				advance = true;
				break;
			case DW_CFA_offset_extended:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_OFFSET;
				roff = factored_u(cfi_read_uleb(&r), cie->data_align);
				set_reg = true;
				break;
			case DW_CFA_offset_extended_sf:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_OFFSET;
				roff = factored_s(cfi_read_sleb(&r), cie->data_align);
				set_reg = true;
				break;
			case DW_CFA_GNU_negative_offset_extended:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_OFFSET;
				roff = factored_u(cfi_read_uleb(&r), cie->data_align);
				roff = roff == INT64_MAX || roff == INT64_MIN ? INT64_MAX : -roff;
				set_reg = true;
				break;
			case DW_CFA_val_offset:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_VAL_OFFSET;
				roff = factored_u(cfi_read_uleb(&r), cie->data_align);
				set_reg = true;
				break;
			case DW_CFA_val_offset_sf:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_VAL_OFFSET;
				roff = factored_s(cfi_read_sleb(&r), cie->data_align);
				set_reg = true;
				break;
			case DW_CFA_restore_extended:
				reg = cfi_read_uleb(&r);
				goto restore;
			case DW_CFA_undefined:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_UNDEFINED;
				set_reg = true;
				break;
			case DW_CFA_same_value:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_SAME;
				set_reg = true;
				break;
			case DW_CFA_register:
				reg = cfi_read_uleb(&r);
				rtype = CFI_REG_REGISTER;
				roff = factored_u(cfi_read_uleb(&r), 1);
				set_reg = true;
				break;
			case DW_CFA_expression:
			case DW_CFA_val_expression: {
				uint64_t len;

				reg = cfi_read_uleb(&r);
				len = cfi_read_uleb(&r);
				if (r.err || len > cfi_reader_left(&r))
					return BAD("truncated expression");
				r.pos += len;
				rtype = op == DW_CFA_expression ? CFI_REG_EXPR : CFI_REG_VAL_EXPR;
				set_reg = true;
				break;
			}
			case DW_CFA_remember_state:
				ret = push_state(run, st);
				if (ret)
					return ret;
				break;
			case DW_CFA_restore_state:
				if (!run->depth)
					return BAD("DW_CFA_restore_state without remember_state");
				{
					/* The CFA is not part of the remembered register set in
					 * DWARF 2, but every consumer (GCC, libdw, readelf)
					 * restores it too, and producers rely on that. */
					*st = ((struct frame_state *)run->ip->stack)[--run->depth];
				}
				break;
			case DW_CFA_def_cfa:
				st->cfa.is_expr = false;
				st->cfa.reg = cfi_read_uleb(&r);
				st->cfa.off = factored_u(cfi_read_uleb(&r), 1);
				sync_cfa(st);
				break;
			case DW_CFA_def_cfa_sf:
				st->cfa.is_expr = false;
				st->cfa.reg = cfi_read_uleb(&r);
				st->cfa.off = factored_s(cfi_read_sleb(&r), cie->data_align);
				sync_cfa(st);
				break;
			case DW_CFA_def_cfa_register:
				st->cfa.is_expr = false;
				st->cfa.reg = cfi_read_uleb(&r);
				sync_cfa(st);
				break;
			case DW_CFA_def_cfa_offset:
				st->cfa.off = factored_u(cfi_read_uleb(&r), 1);
				/* The commonest change of all (every push and pop):
				 * only the offset of a register CFA moved. */
				if (!st->cfa.is_expr && !st->cfa_too_big && st->cfa.off <= INT32_MAX)
					st->rule.cfa_off = (int32_t)st->cfa.off;
				else
					sync_cfa(st);
				break;
			case DW_CFA_def_cfa_offset_sf:
				st->cfa.off = factored_s(cfi_read_sleb(&r), cie->data_align);
				sync_cfa(st);
				break;
			case DW_CFA_def_cfa_expression: {
				uint64_t len = cfi_read_uleb(&r);

				if (r.err || len > cfi_reader_left(&r))
					return BAD("truncated CFA expression");
				st->cfa.is_expr = true;
				st->cfa.expr = r.pos;
				st->cfa.expr_len = (size_t)len;
				r.pos += len;
				sync_cfa(st);
				break;
			}
			case DW_CFA_GNU_args_size:
				(void)cfi_read_uleb(&r);
				break;
			default: {
				char why[64];

				snprintf(why, sizeof(why), "unknown DW_CFA opcode 0x%02x", op);
				return BAD(why);
			}
			}
		}
		if (r.err)
			return BAD(r.err == -ENODATA ? "truncated instruction" : "malformed operand");

		if (set_reg) {
			if (reg == DWARF_REG_RBP)
				target = &st->rbp;
			else if (reg == cie->ra_reg)
				target = &st->ra;
			else if (csr_index(reg) >= 0)
				target = &st->csr[csr_index(reg)];
			if (target) {
				*target = reg_state_of(rtype, roff);
				sync_reg(st, target);
				dirty = true;
			}
		} else if (!advance && op != DW_CFA_nop && op != DW_CFA_GNU_args_size) {
			dirty = true; /* a CFA rule or state stack change */
		}
		if (advance) {
			if (!fn)
				return BAD("location advance in CIE instructions");
			if (wrapped || new_loc < loc)
				return BAD("location advance wraps around");
			if (new_loc > loc) {
				if (dirty) {
					ret = fn(fnctx, loc, &st->rule);
					if (ret)
						return ret;
					dirty = false;
				}
				loc = new_loc;
				/* Instructions past the FDE's range describe no code. */
				if (loc >= end) {
					run->ip->reached_end = true;
					run->ip->last_loc = loc;
					return 0;
				}
			}
		}
		continue;

restore:
		if (r.err)
			return BAD("truncated instruction");
		if (!initial)
			return BAD("DW_CFA_restore in CIE instructions");
		if (reg == DWARF_REG_RBP) {
			st->rbp = initial->rbp;
			sync_reg(st, &st->rbp);
		} else if (reg == cie->ra_reg) {
			st->ra = initial->ra;
			sync_reg(st, &st->ra);
		} else if (csr_index(reg) >= 0) {
			st->csr[csr_index(reg)] = initial->csr[csr_index(reg)];
			sync_reg(st, &st->csr[csr_index(reg)]);
		}
		dirty = true;
	}

	run->ip->last_loc = loc;
	if (fn && loc < end && dirty)
		return fn(fnctx, loc, &st->rule);
	return 0;
#undef BAD
}

/* Whether the initial instructions of CIEs a and b leave the same state:
 * the same bytes, read with the same factors, return address register and
 * signal mark (their advances and DW_CFA_set_loc are errors). */
static bool cie_same(const struct cfi_cie *a, const struct cfi_cie *b)
{
	return a->insns == b->insns && a->insns_end == b->insns_end &&
	       a->code_align == b->code_align && a->data_align == b->data_align &&
	       a->ra_reg == b->ra_reg && a->signal == b->signal;
}

int cfi_interp_fde(struct cfi_interp *ip, const struct cfi_section *sec,
		   const struct cfi_cie *cie, const struct cfi_fde *fde,
		   const struct cfi_ptr_ctx *ctx, cfi_row_fn fn, void *fnctx,
		   struct cfi_error *err)
{
	struct run run = {
		.sec = sec, .cie = cie, .ctx = ctx, .ip = ip, .err = err,
		.entry_off = cie->offset, .what = "CIE",
	};
	struct frame_state st, initial;
	int ret;

	ip->set_loc = ip->reached_end = false;
	ip->last_loc = fde->start;
	if (ip->cie_state && cie_same(&ip->cie_key, cie)) {
		st = *(const struct frame_state *)ip->cie_state;
	} else {
		/* Before any instruction: no CFA rule, registers unmentioned. */
		memset(&st, 0, sizeof(st));
		st.cfa.is_expr = true;
		st.cfa.expr = NULL;
		st.cfa.expr_len = 0;
		if (cie->signal)
			st.rule.flags = CFI_RULE_SIGNAL;
		sync_cfa(&st);
		ret = run_insns(&run, cie->insns, cie->insns_end, &st, NULL, 0, 0, NULL, NULL);
		if (ret)
			return ret;
		/* Kept unless it left states remembered (which its FDEs can
		 * restore): libLLVM-15's 98,256 FDEs have one CIE. */
		if (!run.depth && (ip->cie_state || (ip->cie_state = malloc(sizeof(st))))) {
			*(struct frame_state *)ip->cie_state = st;
			ip->cie_key = *cie;
		}
	}
	/* remember_state in a CIE carries over to its FDEs' instructions. */
	initial = st;
	run.entry_off = fde->offset;
	run.what = "FDE";
	return run_insns(&run, fde->insns, fde->insns_end, &st, &initial,
			 fde->start, fde->end, fn, fnctx);
}

void cfi_interp_free(struct cfi_interp *ip)
{
	free(ip->stack);
	ip->stack = NULL;
	ip->cap = 0;
	free(ip->cie_state);
	ip->cie_state = NULL;
}
