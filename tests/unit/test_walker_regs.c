/*
 * The walker's register tracking (bpf/walker.h, built for userspace): which
 * registers it knows after each step, on hand-made tables and stacks.
 * rbx and r12-r15 stay known through frames that save them (OFFSET, read
 * from the stack), compute them (VAL_OFFSET) or leave them alone; the
 * caller-saved registers do not; and a CFA on a register the walker does
 * not know ends the walk as unsupported_rule, never with a guess.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/walker_user.h"
#include "cfi/table.h"
#include "tests/unit/walker_fixture.h"

/* Code: four functions of 0x100 bytes from CODE; the stack: STACK_WORDS
 * words from STACK. */
#define CODE        0x400000ull
#define FN(i)       (CODE + 0x100 * (i))
#define STACK       0x7fff0000ull
#define STACK_WORDS 64
#define AT(i)       (STACK + 8 * (i))

#define RA_AT8 .ra_type = CFI_REG_OFFSET, .ra_off = -8
#define CFA(r, o) .cfa_type = CFI_CFA_REG, .cfa_reg = (r), .cfa_off = (o)
#define RBX 0
#define OUTERMOST ((struct cfi_rule){ CFA(7, 8), .ra_type = CFI_REG_UNDEFINED })

struct walk {
	struct cfi_table table;
	uint64_t stack[STACK_WORDS];
	struct walker_user_input in;
	struct sample_event *ev;
};

/* rules[i] is FN(i)'s (the last is _start-like: RA undefined). */
static void setup(struct walk *w, const struct cfi_rule *rules, int n)
{
	static struct walker_mapping map = { .start = CODE, .end = CODE + 0x1000, .bias = 0,
					     .table_id = 1, .module_id = 1 };
	static struct walker_user_table tab;
	walker_fixture_table(&w->table, CODE, NULL, rules, n, FN(n));
	tab.id = 1;
	tab.table = &w->table;
	walker_fixture_input(&w->in, &map, 1, &tab, 1, STACK, w->stack, sizeof(w->stack));
	w->ev = calloc(1, sizeof(*w->ev));
	cr_assert_not_null(w->ev);
}

static void walk(struct walk *w, unsigned want_frames, unsigned want_end)
{
	cr_assert_eq(walker_user_walk(&w->in, w->ev, NULL), 0);
	cr_assert_eq(w->ev->nuser, want_frames, "%u frames, want %u (end %u)", w->ev->nuser,
		     want_frames, w->ev->end_reason);
	cr_assert_eq(w->ev->end_reason, want_end, "end %u, want %u", w->ev->end_reason, want_end);
	cfi_table_free(&w->table);
	free(w->ev);
}

/* FN(0) (the leaf) has CFA = rsp + 16, RA at CFA - 8 and rbx's rule
 * `rbx`; FN(1) has CFA = rbx + 32 (glibc's lazy-binding trampoline);
 * FN(2) is outermost.  rbx's value in FN(1) is AT(10), its CFA AT(14). */
static void trampoline_case(struct walk *w, struct cfi_rule leaf, uint64_t rbx_in_leaf)
{
	const struct cfi_rule rules[3] = {
		leaf,
		{ CFA(3, 32), RA_AT8 },
		OUTERMOST,
	};

	setup(w, rules, 3);
	w->in.regs[WALKER_USER_RIP] = FN(0) + 4;
	w->in.regs[7] = AT(0);
	w->in.regs[3] = rbx_in_leaf;
	w->stack[0] = AT(10);       /* where the leaf saved the caller's rbx (CFA - 16) */
	w->stack[1] = FN(1) + 9;    /* the leaf's RA */
	w->stack[13] = FN(2) + 9;   /* FN(1)'s RA, at its CFA AT(14) - 8 */
}

Test(walker_regs, saved_rbx_is_read_from_the_stack)
{
	struct walk w;

	/* rbx itself holds garbage: the caller's is the one saved. */
	trampoline_case(&w, (struct cfi_rule){ CFA(7, 16), RA_AT8, .csr_type[RBX] = CFI_REG_OFFSET,
					       .csr_off[RBX] = -16 }, 0xdead);
	walk(&w, 3, WALK_END_OUTERMOST);
}

Test(walker_regs, untouched_rbx_stays_known)
{
	struct walk w;

	trampoline_case(&w, (struct cfi_rule){ CFA(7, 16), RA_AT8 }, AT(10));
	walk(&w, 3, WALK_END_OUTERMOST);
}

Test(walker_regs, val_offset_rbx_is_computed)
{
	struct walk w;

	/* The leaf's CFA is AT(2): rbx = CFA + 64 = AT(10). */
	trampoline_case(&w, (struct cfi_rule){ CFA(7, 16), RA_AT8, .csr_type[RBX] = CFI_REG_VAL_OFFSET,
					       .csr_off[RBX] = 64 }, 0xdead);
	walk(&w, 3, WALK_END_OUTERMOST);
}

Test(walker_regs, lost_rbx_ends_the_walk)
{
	struct walk w;

	trampoline_case(&w, (struct cfi_rule){ CFA(7, 16), RA_AT8, .csr_type[RBX] = CFI_REG_UNDEFINED },
			AT(10));
	walk(&w, 2, WALK_END_UNSUPPORTED);
}

Test(walker_regs, unreadable_saved_rbx_ends_the_walk)
{
	struct walk w;

	/* Saved far outside the captured stack: a read fault there loses rbx. */
	trampoline_case(&w, (struct cfi_rule){ CFA(7, 16), RA_AT8, .csr_type[RBX] = CFI_REG_OFFSET,
					       .csr_off[RBX] = 0x4000 }, AT(10));
	walk(&w, 2, WALK_END_UNSUPPORTED);
}

Test(walker_regs, caller_saved_registers_are_lost_after_a_step)
{
	const struct cfi_rule rules[3] = {
		{ CFA(7, 16), RA_AT8 },
		{ CFA(0, 32), RA_AT8 },   /* CFA on rax: known in the first frame only */
		OUTERMOST,
	};
	struct walk w;

	setup(&w, rules, 3);
	w.in.regs[WALKER_USER_RIP] = FN(0) + 4;
	w.in.regs[7] = AT(0);
	w.in.regs[0] = AT(10);
	w.stack[1] = FN(1) + 9;
	w.stack[13] = FN(2) + 9;
	walk(&w, 2, WALK_END_UNSUPPORTED);
}

Test(walker_regs, indexed_dereference_cfa)
{
	/* bn_mul_mont: CFA = *(rsp + 8 + r9 * 8) + 8, in the first frame. */
	const struct cfi_rule rules[2] = {
		{ .cfa_type = CFI_CFA_DEREF_INDEX, .cfa_reg = 7, .cfa_reg2 = 9, .cfa_off = 8,
		  .cfa_off2 = 8, RA_AT8 },
		OUTERMOST,
	};
	struct walk w;

	setup(&w, rules, 2);
	w.in.regs[WALKER_USER_RIP] = FN(0) + 4;
	w.in.regs[7] = AT(0);
	w.in.regs[9] = 4;
	w.stack[5] = AT(20);          /* rsp + 8 + 4 * 8: the caller's rsp */
	w.stack[20] = FN(1) + 9;      /* the RA at CFA - 8 = AT(21) - 8 */
	walk(&w, 2, WALK_END_OUTERMOST);
}

/* issue 13: Go's runtime.sigreturn at FN(0), its code mov $15,%rax;
 * syscall, its CFI the entry rule CFA = rsp + 8 (Go's .debug_frame).  A
 * sample on it (at its first instruction, or right after the syscall)
 * has rsp at the kernel's ucontext, whose first word, uc_flags (6), that
 * rule takes for a return address.  The walk must step through the
 * signal frame to the interrupted FN(1) + 4, then on to FN(2). */
static const uint8_t go_sigreturn[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05, 0xcc };
static const uint8_t short_sigreturn[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05, 0xcc };

struct code {
	const uint8_t *bytes;
	size_t size;
};

/* FN(0)'s code is the trampoline; every other byte reads as int3. */
static int read_code(const void *arg, __u64 addr, void *dst, __u32 size)
{
	const struct code *c = arg;
	uint8_t *d = dst;

	if (addr < CODE || addr + size > CODE + 0x1000)
		return -14;
	for (__u32 i = 0; i < size; i++)
		d[i] = addr + i >= FN(0) && addr + i - FN(0) < c->size ? c->bytes[addr + i - FN(0)] :
									 0xcc;
	return 0;
}

static void sigreturn_case(const struct code *code, uint64_t ip)
{
	const struct cfi_rule rules[3] = {
		{ CFA(7, 8), RA_AT8 },
		{ CFA(7, 16), RA_AT8 },
		OUTERMOST,
	};
	struct walk w;

	setup(&w, rules, 3);
	w.in.read_code = read_code;
	w.in.read_code_arg = code;
	w.in.regs[WALKER_USER_RIP] = ip;
	w.in.regs[7] = AT(0);
	w.stack[0] = 6;                    /* uc_flags */
	w.stack[(40 + 15 * 8) / 8] = AT(30);  /* the interrupted rsp (sigcontext's sp) */
	w.stack[(40 + 16 * 8) / 8] = FN(1) + 4; /* and rip */
	w.stack[31] = FN(2) + 9;           /* FN(1)'s RA, at its CFA AT(32) - 8 */
	cr_assert_eq(walker_user_walk(&w.in, w.ev, NULL), 0);
	cr_expect_eq(w.ev->nuser, 3, "%u frames (end %u), want 3", w.ev->nuser, w.ev->end_reason);
	cr_expect_eq(w.ev->addrs[0], ip);
	cr_expect_eq(w.ev->addrs[1], FN(1) + 4, "not the interrupted instruction: %#llx",
		     (unsigned long long)w.ev->addrs[1]);
	cr_expect_eq(w.ev->end_reason, WALK_END_OUTERMOST, "end %u", w.ev->end_reason);
	cfi_table_free(&w.table);
	free(w.ev);
}

Test(walker_regs, go_sigreturn_at_its_first_instruction)
{
	struct code c = { go_sigreturn, sizeof(go_sigreturn) };

	sigreturn_case(&c, FN(0));
}

Test(walker_regs, go_sigreturn_after_its_syscall)
{
	struct code c = { go_sigreturn, sizeof(go_sigreturn) };

	sigreturn_case(&c, FN(0) + 9);
}

Test(walker_regs, short_sigreturn_after_its_syscall)
{
	struct code c = { short_sigreturn, sizeof(short_sigreturn) };

	sigreturn_case(&c, FN(0) + 7);
}

/* The same rule and stack at an entry whose code is no trampoline: an
 * ordinary CFI step, uc_flags' 6 taken as the return address (nothing
 * maps it: the walk ends there). */
Test(walker_regs, entry_rule_elsewhere_is_a_plain_step)
{
	static const uint8_t other[] = { 0x48, 0xc7, 0xc0, 0x0e, 0, 0, 0, 0x0f, 0x05, 0xcc };
	const struct cfi_rule rules[3] = { { CFA(7, 8), RA_AT8 }, { CFA(7, 16), RA_AT8 }, OUTERMOST };
	struct code c = { other, sizeof(other) };
	struct walk w;

	setup(&w, rules, 3);
	w.in.read_code = read_code;
	w.in.read_code_arg = &c;
	w.in.regs[WALKER_USER_RIP] = FN(0) + 9;
	w.in.regs[7] = AT(0);
	w.stack[0] = 6;
	walk(&w, 2, WALK_END_NO_MAPPING);
}

/* The same, two bytes into FN(0): the bytes before ip are all readable. */
Test(walker_regs, short_sigreturn_after_its_syscall_inside_the_mapping)
{
	static const uint8_t code[] = { 0xcc, 0xcc, 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05, 0xcc };
	struct code c = { code, sizeof(code) };

	sigreturn_case(&c, FN(0) + 9);
}
