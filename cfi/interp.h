/*
 * Runs the call-frame instructions of a CIE and FDE (DWARF 5 section 6.4.2)
 * and reports, for each address range of the FDE, the unwind rule needed to
 * step one frame on x86-64: how to find the CFA, the return address and the
 * callee-saved registers rbp, rbx and r12-r15.  Other registers are parsed
 * and dropped.
 */
#ifndef CFI_INTERP_H
#define CFI_INTERP_H

#include "bpf/abi.h"
#include "ehframe.h"

#define DWARF_REG_RBP 6
#define DWARF_REG_RSP 7
#define DWARF_REG_RIP 16

/* Called once per row, in increasing address order, for the address at
 * which the row starts.  Consecutive rows may carry equal rules.  A
 * non-zero return stops the interpretation and is passed back. */
typedef int (*cfi_row_fn)(void *ctx, uint64_t addr, const struct cfi_rule *rule);

/* Scratch space for the remember_state stack, reused across FDEs; the
 * state a CIE's initial instructions left, kept for the next FDE of a
 * CIE with the same instructions (which must not change while `ip` is in
 * use); and what the last cfi_interp_fde met, for a caller that reuses
 * an FDE's rows for another FDE of the same CIE and instruction bytes:
 * they are the same rows moved by the difference of the starts when
 * neither used DW_CFA_set_loc (an absolute location) and neither FDE's
 * end cut the instructions short. */
struct cfi_interp {
	void *stack;
	size_t cap;
	void *cie_state;    /* the state after cie_key's instructions, or NULL */
	struct cfi_cie cie_key;
	uint64_t last_loc;  /* the location the instructions left off at */
	bool set_loc;       /* DW_CFA_set_loc was met */
	bool reached_end;   /* an advance reached the FDE's end: the rest is unread */
	/* cfi_interp_fde_numbered's cache of steps from rule to rule, and
	 * the number of the last CIE's initial rule. */
	struct cfi_step *steps;
	size_t nsteps, cap_steps;
	uint64_t steps_taken;  /* runs of instructions looked up, not interpreted */
	const struct cfi_cie *numbered_cie;
	uint32_t numbered_cie_idx;
	/* Its cache of FDE shapes: the rules an FDE's runs of instructions
	 * lead to, for FDEs whose instructions differ only in how far they
	 * advance.  The table's entries, and a pool of their rules and
	 * bytes. */
	struct cfi_shape *shapes;
	size_t nshapes, cap_shapes;
	uint32_t *shape_pool;
	size_t shape_pool_len, shape_pool_cap;
	uint64_t shapes_taken; /* FDEs whose rows came from a shape */
	bool no_shapes;        /* tests: steps only */
};

int cfi_interp_fde(struct cfi_interp *ip, const struct cfi_section *sec,
		   const struct cfi_cie *cie, const struct cfi_fde *fde,
		   const struct cfi_ptr_ctx *ctx, cfi_row_fn fn, void *fnctx,
		   struct cfi_error *err);

/* A caller's numbering of rules: `number` gives a rule's number (the
 * same for equal rules, stable for the numbering's life), `rule` the rule
 * of a number, `row` takes a row by number.  Non-zero returns stop the
 * interpretation and are passed back. */
struct cfi_numbering {
	int (*number)(void *ctx, const struct cfi_rule *rule, uint32_t *idx);
	const struct cfi_rule *(*rule)(void *ctx, uint32_t idx);
	int (*row)(void *ctx, uint64_t addr, uint32_t idx);
	void *ctx;
};

/* cfi_interp_fde for a caller that numbers rules: the same rows, in the
 * same order, each by its rule's number.  An FDE whose instructions are
 * those of one met before under the same CIE, but for the distances its
 * advances move, takes that FDE's rules at its own locations; runs of
 * instructions met before from the same rule (numbered below 65536) are
 * looked up instead of interpreted.  Both from caches `ip` keeps: `ip`
 * must serve one numbering only, and sections and CIEs that stay where
 * they are. */
int cfi_interp_fde_numbered(struct cfi_interp *ip, const struct cfi_section *sec,
			    const struct cfi_cie *cie, const struct cfi_fde *fde,
			    const struct cfi_ptr_ctx *ctx, const struct cfi_numbering *nb,
			    struct cfi_error *err);

void cfi_interp_free(struct cfi_interp *ip);

/* Recognises the CFA expressions x86-64 code uses in practice: the
 * stack-realignment dereference, the PLT pattern and OpenSSL's indexed
 * dereference.  Fills cfa_type and
 * the cfa fields of `rule` (CFI_CFA_EXPR if neither).  Exposed for tests. */
void cfi_classify_cfa_expr(const uint8_t *expr, size_t len, struct cfi_rule *rule);

#endif
