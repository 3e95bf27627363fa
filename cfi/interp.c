#include "interp.h"
#include "bytes_hash.h"
#include "hugemem.h"

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

/* Runs one instruction stream from location `start`.  With fn == NULL
 * (the CIE's initial instructions, or a run of an FDE's without advances)
 * no row is emitted and advances are errors.  *dirtyp says whether the
 * rule changed since the last row, on entry and on return. */
static int run_insns(struct run *run, const uint8_t *insns, const uint8_t *insns_end,
		     struct frame_state *st, const struct frame_state *initial,
		     uint64_t start, uint64_t end, cfi_row_fn fn, void *fnctx, bool *dirtyp)
{
	const struct cfi_cie *cie = run->cie;
	struct cfi_reader r;
	uint64_t loc = start;
	/* Only changes of the CFA and of the registers the walker tracks
	 * (rbp, RA, rbx, r12-r15) make a new row. */
	bool dirty = *dirtyp;
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
					*dirtyp = dirty;
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
	*dirtyp = dirty;
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

/* Sets up `run` and `st` for an FDE: the state its CIE's initial
 * instructions leave, computed or kept from the FDE before. */
static int fde_begin(struct cfi_interp *ip, struct run *run, const struct cfi_fde *fde,
		     struct frame_state *st)
{
	const struct cfi_cie *cie = run->cie;
	int ret;

	ip->set_loc = ip->reached_end = false;
	ip->last_loc = fde->start;
	if (ip->cie_state && cie_same(&ip->cie_key, cie)) {
		*st = *(const struct frame_state *)ip->cie_state;
	} else {
		bool dirty = true;

		/* Before any instruction: no CFA rule, registers unmentioned. */
		memset(st, 0, sizeof(*st));
		st->cfa.is_expr = true;
		st->cfa.expr = NULL;
		st->cfa.expr_len = 0;
		if (cie->signal)
			st->rule.flags = CFI_RULE_SIGNAL;
		sync_cfa(st);
		ret = run_insns(run, cie->insns, cie->insns_end, st, NULL, 0, 0, NULL, NULL, &dirty);
		if (ret)
			return ret;
		/* Kept unless it left states remembered (which its FDEs can
		 * restore): libLLVM-15's 98,256 FDEs have one CIE. */
		if (!run->depth && (ip->cie_state || (ip->cie_state = malloc(sizeof(*st))))) {
			*(struct frame_state *)ip->cie_state = *st;
			ip->cie_key = *cie;
		}
	}
	run->entry_off = fde->offset;
	run->what = "FDE";
	return 0;
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
	bool dirty = true;
	int ret = fde_begin(ip, &run, fde, &st);

	if (ret)
		return ret;
	/* remember_state in a CIE carries over to its FDEs' instructions. */
	initial = st;
	return run_insns(&run, fde->insns, fde->insns_end, &st, &initial,
			 fde->start, fde->end, fn, fnctx, &dirty);
}

/* ---- Rows by number, through a cache of steps --------------------------
 *
 * Between two advances an FDE's instructions move the rule in force from
 * one rule to the next, and the same moves recur: on libLLVM-15 the
 * 504,735 such runs of instructions that its interpreted FDEs hold are
 * 12,958 distinct pairs of a rule and a run's bytes.  So for a caller
 * that numbers rules (the builder), a run of common instructions met
 * before from the same rule and under the same CIE gives the next rule's
 * number from a hash table: no decoding, no rule to hash and compare.
 *
 * A step is only taken from a rule the frame state can be rebuilt from
 * (a register CFA, no field too big: state_of_rule), since after steps
 * the frame state is left behind and rebuilt from the rule when an
 * instruction must be interpreted again.  Every other instruction
 * (DW_CFA_set_loc, remember_state, expressions, ...) hands the rest of
 * the FDE to the interpreter. */

/* A run of instructions between advances (at most STEP_BYTES of them)
 * from a rule, under a CIE, and the rule it leads to, in 24 bytes so that
 * the table stays in the caches:
 *   key  the bytes, zero-padded, and their count in the top byte (0: an
 *        empty slot);
 *   val  the CIE's tag (bits 0-30, step_cie_tag), whether the run
 *        changes the rule (bit 31, for the rows), the rule before (bits
 *        32-47) and after (48-63): rule numbers are below CFI_RULES_MAX. */
struct cfi_step {
	uint64_t key[2], val;
};

#define STEP_BYTES 15
#define STEP_DIRTY ((uint64_t)1 << 31)
/* The bits of val that are part of the key: the CIE and the rule before. */
#define STEP_MATCH (((uint64_t)0xffff << 32) | 0x7fffffff)

/* Whether the rule of `st` gives back `st` through state_of_rule. */
static bool state_plain(const struct frame_state *st)
{
	return st->rule.cfa_type == CFI_CFA_REG && !(st->rule.flags & CFI_RULE_TOO_BIG);
}

/* The frame state a plain rule is the image of.  A callee-saved register
 * whose slot did not fit is CFI_REG_UNDEFINED in the rule, and comes back
 * as undefined: the same to every later instruction, which replaces or
 * restores a register whole. */
static void state_of_rule(struct frame_state *st, const struct cfi_rule *r)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->cfa.reg = r->cfa_reg;
	st->cfa.off = r->cfa_off;
	st->rbp = (struct reg_state){ .type = r->rbp_type, .off = r->rbp_off };
	st->ra = (struct reg_state){ .type = r->ra_type, .off = r->ra_off };
	for (i = 0; i < CFI_CSR_NR; i++)
		st->csr[i] = (struct reg_state){ .type = r->csr_type[i], .off = r->csr_off[i] };
	st->rule = *r;
}

static const uint8_t *skip_leb(const uint8_t *p, const uint8_t *e)
{
	while (p < e && (*p & 0x80))
		p++;
	return p < e ? p + 1 : NULL;
}

/* Whether the instruction with opcode `op` is an advance steps take. */
static bool is_advance(uint8_t op)
{
	return (op & 0xc0) == DW_CFA_advance_loc || op == DW_CFA_advance_loc1 ||
	       op == DW_CFA_advance_loc2 || op == DW_CFA_advance_loc4;
}

/* The end of the instruction at p (< e), if it is one steps take other
 * than an advance; NULL if it is another, or truncated. */
static inline const uint8_t *insn_end(const uint8_t *p, const uint8_t *e)
{
	switch (*p & 0xc0) {
	case DW_CFA_advance_loc:
		return NULL;
	case DW_CFA_offset:
		return skip_leb(p + 1, e);
	case DW_CFA_restore:
		return p + 1;
	}
	switch (*p) {
	case DW_CFA_nop:
		return p + 1;
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_register:
	case DW_CFA_GNU_args_size:
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
		return skip_leb(p + 1, e);
	case DW_CFA_def_cfa:
	case DW_CFA_offset_extended:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_register:
		p = skip_leb(p + 1, e);
		return p ? skip_leb(p, e) : NULL;
	}
	return NULL;
}

/* The end of the run of instructions at p: at the next advance (or e),
 * with *common set, or with *common clear if an instruction before that
 * is one steps do not take, or truncated (left to the interpreter). */
static const uint8_t *run_end(const uint8_t *p, const uint8_t *e, bool *common)
{
	while (p < e && !is_advance(*p)) {
		p = insn_end(p, e);
		if (!p) {
			*common = false;
			return NULL;
		}
	}
	*common = true;
	return p;
}

/* A CIE's tag in a step: where it is, in which section (a CIE is the
 * same everywhere in a compile), or -1 past the 1 GiB the tag can say. */
static int64_t step_cie_tag(const struct cfi_section *sec, const struct cfi_cie *cie)
{
	if (cie->offset >= (1u << 30))
		return -1;
	return (int64_t)(cie->offset | (sec->is_eh ? 1u << 30 : 0));
}

/* The key of the `len` bytes (1 to STEP_BYTES) at p: two loads where the
 * section has 16 bytes from p, as it has but at its end.  Both ways give
 * the same key on a little-endian machine only. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "run_key masks the high bytes");
static void run_key(uint64_t k[2], const uint8_t *p, size_t len, const uint8_t *sec_end)
{
	size_t i;

	if (sec_end - p >= 16) {
		memcpy(k, p, 16);
		if (len < 8) {
			k[0] &= ((uint64_t)1 << (8 * len)) - 1;
			k[1] = 0;
		} else {
			k[1] &= ((uint64_t)1 << (8 * (len - 8))) - 1;
		}
	} else {
		k[0] = k[1] = 0;
		for (i = 0; i < len; i++)
			k[i / 8] |= (uint64_t)p[i] << (8 * (i % 8));
	}
	k[1] |= (uint64_t)len << 56;
}

/* The slot of the step from (key, val & STEP_MATCH), or the empty slot
 * where it goes. */
static struct cfi_step *step_find(const struct cfi_interp *ip, const uint64_t key[2],
				  uint64_t match)
{
	struct cfi_step *t = ip->steps;
	size_t mask = ip->cap_steps - 1, j;
	uint64_t h = (key[0] ^ (match * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	h = (h ^ (h >> 29) ^ key[1]) * 0xc4ceb9fe1a85ec53ull;
	for (j = (h ^ (h >> 32)) & mask; t[j].key[1]; j = (j + 1) & mask)
		if (t[j].key[0] == key[0] && t[j].key[1] == key[1] &&
		    (t[j].val & STEP_MATCH) == match)
			break;
	return &t[j];
}

/* Remembers a step; nothing if memory runs out (steps are a cache). */
static void step_add(struct cfi_interp *ip, const uint64_t key[2], uint64_t val)
{
	struct cfi_step *slot;

	if ((ip->nsteps + 1) * 2 > ip->cap_steps) {
		size_t ncap = ip->cap_steps ? ip->cap_steps * 2 : 1024, i;
		struct cfi_step *old = ip->steps, *t = cfi_huge_zalloc(ncap * sizeof(*t));

		if (!t)
			return;
		ip->steps = t;
		ip->cap_steps = ncap;
		for (i = 0; old && i < ncap / 2; i++)
			if (old[i].key[1])
				*step_find(ip, old[i].key, old[i].val & STEP_MATCH) = old[i];
		cfi_huge_free(old, ncap / 2 * sizeof(*old));
	}
	slot = step_find(ip, key, val & STEP_MATCH);
	*slot = (struct cfi_step){ .key = { key[0], key[1] }, .val = val };
	ip->nsteps++;
}

/* ---- Rules by shape ------------------------------------------------------
 *
 * Compilers emit the same instructions for functions that differ only in
 * the length of their code between two changes of the frame: the same
 * pushes, saves and pops, advancing by other distances.  Such FDEs go
 * through the same rules in the same order, each starting where its own
 * advances lead.  On libLLVM-15 the 35,211 distinct instruction streams
 * of its FDEs have about 3,200 shapes (the streams with every advance's
 * operand left out, counted in readelf's dump).  So an FDE whose every run of
 * instructions is one steps take is read once for its shape and its
 * advances, and if an earlier FDE under the same CIE had that shape, its
 * rows are the earlier FDE's rules at the locations its own advances
 * give: one lookup for the FDE instead of one a run (on libLLVM-15,
 * 37,100 FDEs by 2,531 shapes in the two threads, and 48,800 runs left
 * to steps of the 498,450 before; 289.0 -> 248.8 M instructions).
 * Locations are computed as the interpreter does (an advance of 0 makes
 * no row, rows stop at the FDE's end), and an FDE whose advances wrap
 * before its end is left to the interpreter, which reports it.
 *
 * The shape is the instruction bytes with each advance (advance_loc,
 * advance_loc1, 2 and 4) replaced by the single byte SHAPE_ADVANCE, and
 * DW_CFA_nop left out: read from the left it gives back the runs, every
 * other instruction being whole, so equal shapes are equal runs but for
 * their nops, which change nothing.  A shape's entry holds, for each run,
 * the number of the rule in force after it and whether it changed the
 * rule (bit 0), the second making rows where the interpreter's do.
 *
 * An FDE not found by its shape is interpreted from the scan, not read
 * again: its runs' ends and its locations are in it, and so are those of
 * an FDE whose scan stopped (at an instruction steps do not take, most
 * often DW_CFA_remember_state) up to its last advance before that.  Read
 * twice, medium objects, whose FDEs seldom share shapes, lost 4-10 % to
 * shapes (callgrind, whole process: libc 11.65 -> 12.43 M, /usr/bin/perf
 * 18.01 -> 19.84); read once, 11.99 and 19.05, libLLVM-15 248.2 -> 245.3. */

#define SHAPE_ADVANCE 0x40
/* Longer shapes, or with more runs, are left to steps: 28 of the 39,663
 * FDEs of libLLVM-15 read for their shape (and the buffers are on the
 * stack). */
#define SHAPE_BYTES 512
#define SHAPE_RUNS 128

struct cfi_shape {
	uint32_t hash;   /* 0: an empty slot (shape_hash is never 0) */
	uint32_t tag;    /* the CIE's (step_cie_tag) */
	uint32_t at;     /* in the pool: nruns rules, then the shape's bytes */
	uint16_t len, nruns;
};

/* An FDE's shape and the locations its advances lead to. */
struct shape_scan {
	/* (16 bytes past the longest shape: run_key loads 16 at a time) */
	uint8_t bytes[SHAPE_BYTES + 16];
	size_t len, nadv;
	uint64_t loc[SHAPE_RUNS - 1];
	uint16_t adv_at[SHAPE_RUNS - 1];  /* where each advance's marker is */
	const uint8_t *resume;  /* in the FDE, after the last advance read */
};

/* The end of the advance at p (which run_end stopped at) and its
 * operand, or NULL if it is truncated. */
static const uint8_t *advance_at(const uint8_t *p, const uint8_t *e, uint32_t *adv)
{
	ptrdiff_t width;

	if ((*p & 0xc0) == DW_CFA_advance_loc) {
		*adv = *p & 0x3f;
		return p + 1;
	}
	width = *p == DW_CFA_advance_loc1 ? 2 : *p == DW_CFA_advance_loc2 ? 3 : 5;
	if (e - p < width)
		return NULL;
	if (width == 2) {
		*adv = p[1];
	} else if (width == 3) {
		uint16_t v;

		memcpy(&v, p + 1, sizeof(v));
		*adv = v;
	} else {
		memcpy(adv, p + 1, sizeof(*adv));
	}
	return p + width;
}

/* Never 0, which marks an empty slot. */
static uint32_t shape_hash(const uint8_t *p, size_t len, uint32_t tag)
{
	uint32_t h = cfi_hash_bytes(tag, p, len);

	return h ? h : 1;
}

/* Reads the FDE's instructions into `s`: true if all of them make its
 * shape.  False if some instruction is not one steps take, the shape is
 * too long, or an advance wraps before the FDE's end (locations past it
 * are never used, and not checked); the runs up to the last advance read
 * are still in `s` (s->nadv of them, and their advances), and s->resume
 * is where the instructions after that advance begin: the interpreter
 * reads those runs from the shape, not again from the FDE.
 * DW_CFA_nop is left out of the shape: it changes nothing.  The commonest
 * instructions (a CFA offset or a register's slot below 128, GCC's every
 * push and pop) are copied as they are met, the others through
 * insn_end. */
static bool shape_scan(struct shape_scan *s, const struct cfi_fde *fde, uint64_t code_align)
{
	const uint8_t *p = fde->insns, *e = fde->insns_end, *q, *resume = p;
	/* Room for the longest instruction steps take: two LEB128s of 10. */
	uint8_t *out = s->bytes, *out_end = s->bytes + SHAPE_BYTES - 24;
	uint64_t loc = fde->start;
	size_t na = 0;

	while (p < e) {
		uint8_t op = *p;
		uint32_t adv;

		if (out > out_end)
			goto partial;
		if ((op == DW_CFA_def_cfa_offset || (op & 0xc0) == DW_CFA_offset) && e - p >= 2 &&
		    !(p[1] & 0x80)) {
			out[0] = op;
			out[1] = p[1];
			out += 2;
			p += 2;
			continue;
		}
		if (op == DW_CFA_nop) {
			p++;
			continue;
		}
		if (!is_advance(op)) {
			q = insn_end(p, e);
			if (!q || q - p > 21)
				goto partial;
			memcpy(out, p, (size_t)(q - p));
			out += q - p;
			p = q;
			continue;
		}
		q = advance_at(p, e, &adv);
		if (!q || na == SHAPE_RUNS - 1)
			goto partial;
		if (loc < fde->end && !advance_to(loc, adv, code_align, &loc))
			goto partial;
		p = resume = q;
		s->loc[na] = loc;
		s->adv_at[na++] = (uint16_t)(out - s->bytes);
		*out++ = SHAPE_ADVANCE;
	}
	s->len = (size_t)(out - s->bytes);
	s->nadv = na;
	return true;
partial:
	s->nadv = na;
	s->resume = resume;
	return false;
}

/* The slot of the shape in `s` under CIE tag `tag`, or the empty slot
 * where it goes. */
static struct cfi_shape *shape_find(const struct cfi_interp *ip, const struct shape_scan *s,
				    uint32_t tag, uint32_t hash)
{
	struct cfi_shape *t = ip->shapes;
	size_t mask = ip->cap_shapes - 1, j;

	for (j = hash & mask; t[j].hash; j = (j + 1) & mask)
		if (t[j].hash == hash && t[j].tag == tag && t[j].len == s->len &&
		    t[j].nruns == s->nadv + 1 &&
		    !memcmp(ip->shape_pool + t[j].at + t[j].nruns, s->bytes, s->len))
			break;
	return &t[j];
}

/* Remembers a shape and its runs' rules; nothing if memory runs out (a
 * cache, as steps). */
static void shape_add(struct cfi_interp *ip, const struct shape_scan *s, uint32_t tag,
		      uint32_t hash, const uint32_t *runs)
{
	size_t words = s->nadv + 1 + (s->len + 3) / 4;
	struct cfi_shape *slot;

	if ((ip->nshapes + 1) * 2 > ip->cap_shapes) {
		size_t ncap = ip->cap_shapes ? ip->cap_shapes * 2 : 1024, i;
		struct cfi_shape *old = ip->shapes, *t = cfi_huge_zalloc(ncap * sizeof(*t));

		if (!t)
			return;
		ip->shapes = t;
		ip->cap_shapes = ncap;
		for (i = 0; old && i < ncap / 2; i++) {
			size_t j;

			if (!old[i].hash)
				continue;
			for (j = old[i].hash & (ncap - 1); t[j].hash; j = (j + 1) & (ncap - 1))
				;
			t[j] = old[i];
		}
		cfi_huge_free(old, ncap / 2 * sizeof(*old));
	}
	if (ip->shape_pool_len + words > ip->shape_pool_cap) {
		size_t ncap = ip->shape_pool_cap ? ip->shape_pool_cap * 2 : 16384;
		uint32_t *pool;

		while (ncap < ip->shape_pool_len + words)
			ncap *= 2;
		pool = cfi_huge_resize(ip->shape_pool, ip->shape_pool_cap * sizeof(*pool),
				       ncap * sizeof(*pool));
		if (!pool)
			return;
		ip->shape_pool = pool;
		ip->shape_pool_cap = ncap;
	}
	slot = shape_find(ip, s, tag, hash);
	*slot = (struct cfi_shape){ .hash = hash, .tag = tag, .at = (uint32_t)ip->shape_pool_len,
				    .len = (uint16_t)s->len, .nruns = (uint16_t)(s->nadv + 1) };
	memcpy(ip->shape_pool + ip->shape_pool_len, runs, (s->nadv + 1) * sizeof(*runs));
	memcpy(ip->shape_pool + ip->shape_pool_len + s->nadv + 1, s->bytes, s->len);
	ip->shape_pool_len += words;
	ip->nshapes++;
}

/* The FDE's rows from a shape's rules, at the locations of `s`, as the
 * loop of cfi_interp_fde_numbered would make them. */
static int shape_rows(struct cfi_interp *ip, const struct cfi_shape *sh,
		      const struct shape_scan *s, const struct cfi_fde *fde,
		      const struct cfi_numbering *nb)
{
	const uint32_t *runs = ip->shape_pool + sh->at;
	uint64_t loc = fde->start;
	uint32_t cur = runs[0] >> 1;
	bool dirty = true;
	size_t i;
	int ret;

	for (i = 0; i < s->nadv; i++) {
		if (s->loc[i] != loc) {
			if (dirty) {
				ret = nb->row(nb->ctx, loc, cur);
				if (ret)
					return ret;
				dirty = false;
			}
			loc = s->loc[i];
			if (loc >= fde->end) {
				ip->reached_end = true;
				ip->last_loc = loc;
				return 0;
			}
		}
		dirty |= runs[i + 1] & 1;
		cur = runs[i + 1] >> 1;
	}
	ip->last_loc = loc;
	if (loc < fde->end && dirty)
		return nb->row(nb->ctx, loc, cur);
	return 0;
}

/* Turns rows by rule into rows by number, for the interpreter's slow
 * path. */
struct numbered_fn {
	const struct cfi_numbering *nb;
};

static int numbered_row(void *ctx, uint64_t addr, const struct cfi_rule *rule)
{
	const struct cfi_numbering *nb = ((struct numbered_fn *)ctx)->nb;
	uint32_t idx;
	int ret = nb->number(nb->ctx, rule, &idx);

	return ret ? ret : nb->row(nb->ctx, addr, idx);
}

/* The row at `loc`: the rule numbered `*cur` when `*have`, else st's rule
 * numbered now (and steps may start from it if it is plain). */
static int numbered_row_at(const struct cfi_numbering *nb, const struct frame_state *st,
			   uint64_t loc, uint32_t *cur, bool *have)
{
	if (!*have) {
		int ret = nb->number(nb->ctx, &st->rule, cur);

		if (ret)
			return ret;
		*have = state_plain(st);
	}
	return nb->row(nb->ctx, loc, *cur);
}

int cfi_interp_fde_numbered(struct cfi_interp *ip, const struct cfi_section *sec,
			    const struct cfi_cie *cie, const struct cfi_fde *fde,
			    const struct cfi_ptr_ctx *ctx, const struct cfi_numbering *nb,
			    struct cfi_error *err)
{
	struct run run = {
		.sec = sec, .cie = cie, .ctx = ctx, .ip = ip, .err = err,
		.entry_off = cie->offset, .what = "CIE",
	};
	struct numbered_fn slow = { .nb = nb };
	const uint8_t *p = fde->insns, *e = fde->insns_end, *key_end = sec->data + sec->size;
	struct frame_state st, initial;
	struct shape_scan shape;
	uint32_t runs[SHAPE_RUNS], hash = 0;
	size_t nruns = 0, nrecorded = 0;  /* runs read from the shape; rules noted */
	uint64_t loc = fde->start;
	uint32_t cur = 0;
	/* have: `cur` numbers the rule in force and st can be rebuilt from
	 * it; stale: st was left behind by steps; from_shape: runs are read
	 * from the scanned shape (their ends and locations found by the
	 * scan), all of them or those up to `partial`'s last advance; keep:
	 * the shape is all the FDE's and new, and its runs' rules are noted
	 * as they come (until one has no number). */
	bool dirty = true, have = false, stale = false, from_shape = false, partial = false;
	bool keep = false;
	int64_t tag = step_cie_tag(sec, cie);
	int ret;

	if (tag >= 0 && !ip->no_shapes) {
		bool whole = shape_scan(&shape, fde, cie->code_align);

		if (whole) {
			hash = shape_hash(shape.bytes, shape.len, (uint32_t)tag);
			if (ip->cap_shapes) {
				const struct cfi_shape *sh = shape_find(ip, &shape, (uint32_t)tag,
									hash);

				/* (An FDE of this shape began under this CIE:
				 * so would this one, fde_begin is skipped.) */
				if (sh->hash) {
					ip->set_loc = ip->reached_end = false;
					ip->shapes_taken++;
					return shape_rows(ip, sh, &shape, fde, nb);
				}
			}
			keep = from_shape = true;
			e = shape.bytes + shape.len;
		} else if (shape.nadv) {
			partial = from_shape = true;
			e = shape.bytes + shape.adv_at[shape.nadv - 1] + 1;
		}
		/* The shape's runs are the FDE's without their nops, which
		 * change nothing: the same rules, and steps by the same keys
		 * as an FDE without nops would look up. */
		if (from_shape) {
			p = shape.bytes;
			key_end = shape.bytes + sizeof(shape.bytes);
		}
	}
	ret = fde_begin(ip, &run, fde, &st);
	if (ret)
		return ret;
	initial = st;
	if (state_plain(&st)) {
		if (ip->numbered_cie != cie) {
			ret = nb->number(nb->ctx, &st.rule, &ip->numbered_cie_idx);
			if (ret)
				return ret;
			ip->numbered_cie = cie;
		}
		cur = ip->numbered_cie_idx;
		have = true;
	}
	while (p < e) {
		bool common = true;
		const uint8_t *q;
		uint64_t new_loc;
		bool run_dirty = false;

		if (from_shape)
			q = shape.bytes + (nruns < shape.nadv ? shape.adv_at[nruns] : shape.len);
		else
			q = run_end(p, e, &common);
		if (common && q > p) {
			size_t len = (size_t)(q - p);
			bool steps = have && tag >= 0 && cur <= 0xffff && len <= STEP_BYTES;
			bool changed = false;
			uint64_t key[2] = { 0, 0 }, match = (uint64_t)tag | (uint64_t)cur << 32;
			uint32_t next;

			if (steps) {
				run_key(key, p, len, key_end);
				if (ip->cap_steps) {
					const struct cfi_step *hit = step_find(ip, key, match);

					if (hit->key[1]) {
						cur = (uint32_t)(hit->val >> 48);
						run_dirty = !!(hit->val & STEP_DIRTY);
						dirty |= run_dirty;
						stale = true;
						ip->steps_taken++;
						p = q;
						goto advance;
					}
				}
			}
			if (stale)
				state_of_rule(&st, nb->rule(nb->ctx, cur));
			stale = false;
			ret = run_insns(&run, p, q, &st, &initial, loc, fde->end, NULL, NULL, &changed);
			if (ret)
				return ret;
			dirty |= changed;
			run_dirty = changed;
			p = q;
			if (!state_plain(&st)) {
				have = false;
				goto advance;
			}
			ret = nb->number(nb->ctx, &st.rule, &next);
			if (ret)
				return ret;
			if (steps && next <= 0xffff)
				step_add(ip, key, match | (changed ? STEP_DIRTY : 0) |
						       (uint64_t)next << 48);
			cur = next;
			have = true;
		}
advance:
		if (from_shape) {
			/* (A run whose rule has no number and the shape is not
			 * kept; its runs are read on.) */
			if (keep && have && cur <= UINT32_MAX >> 1)
				runs[nrecorded++] = cur << 1 | run_dirty;
			else
				keep = false;
			if (p == e)
				break;
			new_loc = shape.loc[nruns++];
			if (++p == e && partial) {
				/* The rest is the FDE's, from after this advance. */
				from_shape = false;
				p = shape.resume;
				e = fde->insns_end;
				key_end = sec->data + sec->size;
			}
		} else {
			const uint8_t *next_p;
			uint32_t adv;

			if (p == e)
				break;
			/* An advance (run_end stopped at one); a truncated one,
			 * or one that wraps, is the interpreter's to report. */
			if (!common)
				break;
			next_p = advance_at(p, e, &adv);
			if (!next_p || !advance_to(loc, adv, cie->code_align, &new_loc))
				break;
			p = next_p;
		}
		if (new_loc == loc)
			continue;
		if (dirty) {
			ret = numbered_row_at(nb, &st, loc, &cur, &have);
			if (ret)
				return ret;
			dirty = false;
		}
		loc = new_loc;
		if (loc >= fde->end) {
			ip->reached_end = true;
			ip->last_loc = loc;
			return 0;
		}
	}
	if (p < e) {
		if (stale)
			state_of_rule(&st, nb->rule(nb->ctx, cur));
		return run_insns(&run, p, e, &st, &initial, loc, fde->end, numbered_row, &slow,
				 &dirty);
	}
	ip->last_loc = loc;
	/* (Instructions that end in an advance, or none at all, end in an
	 * empty run the loop did not go through.) */
	if (keep && nrecorded == shape.nadv) {
		if (have && cur <= UINT32_MAX >> 1)
			runs[nrecorded++] = cur << 1;
		else
			keep = false;
	}
	if (keep)
		shape_add(ip, &shape, (uint32_t)tag, hash, runs);
	if (loc < fde->end && dirty) {
		return numbered_row_at(nb, &st, loc, &cur, &have);
	}
	return 0;
}

void cfi_interp_free(struct cfi_interp *ip)
{
	free(ip->stack);
	ip->stack = NULL;
	ip->cap = 0;
	free(ip->cie_state);
	ip->cie_state = NULL;
	cfi_huge_free(ip->steps, ip->cap_steps * sizeof(*ip->steps));
	ip->steps = NULL;
	ip->cap_steps = ip->nsteps = 0;
	ip->numbered_cie = NULL;
	cfi_huge_free(ip->shapes, ip->cap_shapes * sizeof(*ip->shapes));
	ip->shapes = NULL;
	ip->cap_shapes = ip->nshapes = 0;
	cfi_huge_free(ip->shape_pool, ip->shape_pool_cap * sizeof(*ip->shape_pool));
	ip->shape_pool = NULL;
	ip->shape_pool_cap = ip->shape_pool_len = 0;
}
