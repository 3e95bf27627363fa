/*
 * Which walks the walker (bpf/walker.h, built for userspace) calls
 * complete: `outermost` only where the stack says it ends (a rule with
 * the return address undefined, or a frame-pointer chain ending in rbp
 * 0, as the x86-64 ABI has it), never where a frame's CFI places a return
 * address and the word there is 0.  CI once had a Go sample end as
 * outermost at main.chainC, a function with a caller, after one CFI step
 * (record-go, ASan agent, no frame-pointer step in the run): a 0 read
 * where chainC's return address was is a short stack, bad_frame.  Also
 * for walks resumed from a stack snapshot or an exit stack, which the
 * agent finishes with the same code.  Nor where the word read is above
 * every user address space.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/walker_user.h"
#include "cfi/table.h"
#include "tests/unit/walker_fixture.h"

/* Code: functions of 0x100 bytes from CODE; the stack: STACK_WORDS words
 * from STACK. */
#define CODE        0x400000ull
#define FN(i)       (CODE + 0x100 * (i))
#define STACK       0x7fff0000ull
#define STACK_WORDS 64
#define AT(i)       (STACK + 8 * (i))

#define RA_AT8 .ra_type = CFI_REG_OFFSET, .ra_off = -8
#define CFA(r, o) .cfa_type = CFI_CFA_REG, .cfa_reg = (r), .cfa_off = (o)
#define OUTERMOST ((struct cfi_rule){ CFA(7, 8), .ra_type = CFI_REG_UNDEFINED })

/* The three functions of a goroutine as Go's .debug_frame has them:
 * FN(0) main.chainC (CFA = rsp + 96 in its body), FN(1) its caller
 * (CFA = rsp + 48), FN(2) runtime.goexit (TOPFRAME: RA undefined). */
static const struct cfi_rule go_rules[] = {
	{ CFA(7, 96), RA_AT8 },
	{ CFA(7, 48), RA_AT8 },
	OUTERMOST,
};

struct walk {
	struct cfi_table table;
	struct walker_mapping map;
	struct walker_user_table tab;
	uint64_t stack[STACK_WORDS];
	struct walker_user_input in;
	struct sample_event *ev;
};

/* rules[i] is FN(i)'s; `ntables` 0: the code has no table (frame
 * pointers). */
static void setup(struct walk *w, const struct cfi_rule *rules, int n, int ntables)
{
	walker_fixture_table(&w->table, CODE, NULL, rules, n, FN(n));
	w->tab = (struct walker_user_table){ .id = 1, .table = &w->table };
	w->map = (struct walker_mapping){ .start = CODE, .end = CODE + 0x1000,
					  .table_id = ntables ? 1 : 0, .module_id = 1 };
	walker_fixture_input(&w->in, &w->map, 1, &w->tab, (__u32)ntables, STACK, w->stack,
			     sizeof(w->stack));
	w->ev = calloc(1, sizeof(*w->ev));
	cr_assert_not_null(w->ev);
}

static void walk(struct walk *w, const uint64_t *want, unsigned n, unsigned want_end)
{
	walker_fixture_check(&w->in, w->ev, want, n, want_end);
	cfi_table_free(&w->table);
	free(w->ev);
}

/* Interrupted in FN(0)'s body at rsp AT(0): its return address is at
 * AT(11) (CFA AT(12) - 8), FN(1)'s at AT(17) (CFA AT(18) - 8). */
static void go_case(struct walk *w, uint64_t ra_of_fn0)
{
	setup(w, go_rules, 3, 1);
	w->in.regs[WALKER_USER_RIP] = FN(0) + 0x70;
	w->in.regs[7] = AT(0);
	w->in.regs[6] = AT(10);
	w->stack[11] = ra_of_fn0;
	w->stack[17] = FN(2) + 1;
}

Test(walker_ends, the_goroutine_root_is_outermost)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70, FN(1) + 0x1f, FN(2) };

	go_case(&w, FN(1) + 0x20);
	walk(&w, want, 3, WALK_END_OUTERMOST);
}

/* The CI sample: one frame, main.chainC, whose return address read 0. */
Test(walker_ends, a_zero_return_address_is_a_bad_frame_not_the_outermost)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70 };

	go_case(&w, 0);
	walk(&w, want, 1, WALK_END_BAD_FRAME);
}

/* Further up: the frames before stay, the walk is still short. */
Test(walker_ends, a_zero_return_address_further_up)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70, FN(1) + 0x1f };

	go_case(&w, FN(1) + 0x20);
	w.stack[17] = 0;
	walk(&w, want, 2, WALK_END_BAD_FRAME);
}

/* A return address no user code can be at: libcrypto 3's bn_gather5,
 * whose FDE has no rules while it realigns rsp, leaves the walker reading
 * an all-ones mask there (CI's walker-openssl, snapshot 25).  The frame
 * is dropped, not kept as 0xfffffffffffffffe ending no_mapping; one
 * below 2^56 is still a frame. */
Test(walker_ends, a_return_address_above_user_space_is_a_bad_frame)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70 };

	go_case(&w, ~0ull);
	walk(&w, want, 1, WALK_END_BAD_FRAME);
}

Test(walker_ends, a_return_address_at_2_56_is_a_bad_frame_below_it_is_kept)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70 };
	const uint64_t want_below[] = { FN(0) + 0x70, (1ull << 56) - 2 };

	go_case(&w, 1ull << 56);
	walk(&w, want, 1, WALK_END_BAD_FRAME);
	go_case(&w, (1ull << 56) - 1);
	walk(&w, want_below, 2, WALK_END_NO_MAPPING);
}

/* The agent's walks from a stack snapshot (bpf/abi.h struct
 * stack_snapshot: the registers BPF knew and the rip bit, 0x1ffff at the
 * first frame) and from an exit stack (bpf/proc_track.h send_exit_stack:
 * 0xffff), stopping at a missing table, as agent/record/snapshots.c's
 * try_finish runs them. */
static void resumed_zero_return_address(__u32 known)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70 };

	go_case(&w, 0);
	w.in.regs_known = known;
	w.in.stop_at_miss = 1;
	walk(&w, want, 1, WALK_END_BAD_FRAME);
}

Test(walker_ends, from_a_snapshot_a_zero_return_address_is_a_bad_frame)
{
	resumed_zero_return_address(0x1ffff);
}

Test(walker_ends, from_an_exit_stack_a_zero_return_address_is_a_bad_frame)
{
	resumed_zero_return_address(0xffff);
}

/* Code without a table, by frame pointer: the ABI's end of the chain,
 * rbp 0, is the outermost frame, as it was. */
Test(walker_ends, a_frame_pointer_chain_ending_in_rbp_0_is_outermost)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70, FN(1) + 0x1f };

	setup(&w, go_rules, 3, 0);
	w.in.regs[WALKER_USER_RIP] = FN(0) + 0x70;
	w.in.regs[7] = AT(0);
	w.in.regs[6] = AT(10);
	w.stack[10] = 0;             /* the caller's rbp: the chain ends there */
	w.stack[11] = FN(1) + 0x20;
	walk(&w, want, 2, WALK_END_OUTERMOST);
}

/* A frame whose table is not loaded yet (a miss), walked by frame pointer
 * instead: rbp 0 there proves no outermost frame (code built without
 * frame pointers holds anything in rbp), so the walk ends short,
 * fp_fallback_failed.  CI had rec-threads' worker end "outermost" at
 * thread_leaf so (offcpu-preempted under ASan on a loaded machine: the
 * switch came before the fixture's table was loaded). */
Test(walker_ends, rbp_0_where_the_table_is_not_loaded_is_no_outermost_frame)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x70 };

	setup(&w, go_rules, 3, 1);
	walker_fixture_input(&w.in, &w.map, 1, &w.tab, 0, STACK, w.stack, sizeof(w.stack));
	w.in.regs[WALKER_USER_RIP] = FN(0) + 0x70;
	w.in.regs[7] = AT(0);
	w.in.regs[6] = 0;
	w.stack[11] = FN(1) + 0x20;
	walk(&w, want, 1, WALK_END_FP_FAILED);
}

/* A snapshot's stack with pages that could not be read (struct
 * stack_snapshot holes: a big frame's untouched locals): reads there
 * fault, reads in the pages after them do not.  FN(0)'s frame is 8.5 KB
 * (sort's main has 8.6), its return address on page 3 of the copy, which
 * starts 0x100 bytes before its page 0 ends. */
#define BIG_WORDS (4 * 512)
static void big_frame(struct walk *w, uint64_t *stack, __u32 holes)
{
	static const struct cfi_rule rules[] = { { CFA(7, 0x100 + 8192 + 16), RA_AT8 }, OUTERMOST };
	const __u64 base = STACK + 0xf00;

	setup(w, rules, 2, 1);
	walker_fixture_input(&w->in, &w->map, 1, &w->tab, 1, base, stack, BIG_WORDS * 8);
	w->in.regs[WALKER_USER_RIP] = FN(0) + 0x70;
	w->in.regs[7] = base;
	/* the return address: at CFA - 8, on the copy's page 3 */
	stack[(0x100 + 8192 + 8) / 8] = FN(1) + 0x20;
	w->in.stack_holes = holes;
}

Test(walker_ends, a_snapshot_hole_under_the_return_address_is_read_over)
{
	static struct walk w;
	static uint64_t stack[BIG_WORDS];
	const uint64_t want[] = { FN(0) + 0x70, FN(1) + 0x1f };

	big_frame(&w, stack, 1u << 1 | 1u << 2);
	walk(&w, want, 2, WALK_END_OUTERMOST);
}

Test(walker_ends, a_snapshot_hole_where_the_return_address_is_faults)
{
	static struct walk w;
	static uint64_t stack[BIG_WORDS];
	const uint64_t want[] = { FN(0) + 0x70 };

	big_frame(&w, stack, 1u << 3);
	walk(&w, want, 1, WALK_END_READ_FAULT);
}
