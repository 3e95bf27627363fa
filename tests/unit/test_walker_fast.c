/*
 * The walker's fast paths (bpf/walker.h, built for userspace), issue 15:
 * the row of the last lookup kept for the next frame, the mapping before
 * the current one kept for a walk going back to it, and user memory read
 * a window at a time.  Each must give the frames the plain path gives:
 * a row's rule only inside that row, a window only where the read it
 * serves would succeed, and an exact read wherever the window cannot.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/table_search.h"
#include "bpf/walker_env_user.h"
#include "cfi/table.h"
#include "tests/unit/walker_fixture.h"

#define CODE        0x400000ull
#define FN(i)       (CODE + 0x100 * (i))
#define LIB         0x7f0000000000ull
#define STACK       0x7fff0000ull     /* page-aligned */
#define STACK_WORDS 1024
#define AT(i)       (STACK + 8 * (i))

#define RA_AT8 .ra_type = CFI_REG_OFFSET, .ra_off = -8
#define CFA(r, o) .cfa_type = CFI_CFA_REG, .cfa_reg = (r), .cfa_off = (o)
#define OUTERMOST ((struct cfi_rule){ CFA(7, 8), .ra_type = CFI_REG_UNDEFINED })

struct walk {
	struct cfi_table table[2];
	struct walker_user_table tab[2];
	struct walker_mapping map[2];
	uint64_t stack[STACK_WORDS];
	struct walker_user_input in;
	struct sample_event *ev;
};

/* Table `t` (id t + 1), covering [start, start + 0x1000) with rows at
 * start + at[i] of rules[i], mapped at `start`. */
static void add_table(struct walk *w, int t, uint64_t start, const uint64_t *at,
		      const struct cfi_rule *rules, int n)
{
	walker_fixture_table(&w->table[t], start, at, rules, n, start + 0x1000);
	w->tab[t] = (struct walker_user_table){ .id = t + 1, .table = &w->table[t] };
	w->map[t] = (struct walker_mapping){ .start = start, .end = start + 0x1000,
					     .table_id = t + 1, .module_id = t + 1 };
}

static void setup(struct walk *w, int ntables)
{
	walker_fixture_input(&w->in, w->map, ntables, w->tab, ntables, STACK, w->stack,
			     sizeof(w->stack));
	w->ev = calloc(1, sizeof(*w->ev));
	cr_assert_not_null(w->ev);
}

static void check(struct walk *w, const uint64_t *want, unsigned n, unsigned want_end)
{
	walker_fixture_check(&w->in, w->ev, want, n, want_end);
}

static void done(struct walk *w, int ntables)
{
	int t;

	for (t = 0; t < ntables; t++)
		cfi_table_free(&w->table[t]);
	free(w->ev);
}

/* FN(0) has two rows: [FN(0), FN(0) + 0x80) CFA = rsp + 16, and from
 * FN(0) + 0x80 CFA = rsp + 32; FN(1) is outermost.  A recursion through
 * FN(0) whose return addresses alternate between the two rows: a row kept
 * beyond its end (the function's, the page's) gives the next frame the
 * other row's rule and a wrong frame. */
Test(walker_fast, a_kept_row_serves_only_its_own_addresses)
{
	static const uint64_t at[] = { 0, 0x80, 0x100 };
	static const struct cfi_rule rules[] = {
		{ CFA(7, 16), RA_AT8 },
		{ CFA(7, 32), RA_AT8 },
		OUTERMOST,
	};
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x10, FN(0) + 0x8f, FN(0) + 0x8f, FN(0) + 0x1f,
				  FN(0) + 0x1f, FN(0) + 0x8f, FN(1) + 8 };

	add_table(&w, 0, CODE, at, rules, 3);
	setup(&w, 1);
	w.in.regs[WALKER_USER_RIP] = FN(0) + 0x10;   /* row 0: CFA AT(2) */
	w.in.regs[7] = AT(0);
	w.stack[1] = FN(0) + 0x90;                   /* row 1: CFA AT(6) */
	w.stack[5] = FN(0) + 0x90;                   /* row 1 again: CFA AT(10) */
	w.stack[9] = FN(0) + 0x20;                   /* row 0: CFA AT(12) */
	w.stack[11] = FN(0) + 0x20;                  /* row 0 again: CFA AT(14) */
	w.stack[13] = FN(0) + 0x90;                  /* row 1: CFA AT(18) */
	w.stack[17] = FN(1) + 9;                     /* outermost */
	check(&w, want, 7, WALK_END_OUTERMOST);
	done(&w, 1);
}

/* The span of a row (cfi_table_search_span): every address in it has
 * the row's rule, the addresses just outside it another row or none.
 * (table_at: the userspace shim's, bpf/walker_env_user.h.) */
Test(walker_fast, a_row_span_is_exactly_its_row)
{
	/* rows of various lengths, one crossing the page (the compiler
	 * starts each page with a row of its own) */
	static const uint64_t at[] = { 0, 3, 0x40, 0x41, 0x300, 0x2100, 0x2108, 0x2f00 };
	struct cfi_rule rules[8];
	const struct cfi_table_header *h;
	struct cfi_table_geom g;
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_error err = { "" };
	struct cfi_table t;
	uint64_t a;
	int i;

	cr_assert_not_null(b);
	for (i = 0; i < 8; i++) {
		rules[i] = (struct cfi_rule){ CFA(7, 8 * (i + 1)), RA_AT8 };
		cr_assert_eq(cfi_builder_add(b, CODE + at[i], &rules[i]), 0);
	}
	cr_assert_eq(cfi_builder_finish(b, CODE + 0x3000, 0, &t, &err), 0, "%s", err.msg);
	cfi_builder_free(b);
	h = t.blob;
	g = (struct cfi_table_geom){ .base = h->base, .end = h->end, .page_shift = h->page_shift,
				     .npages = h->npages, .pages_off = h->pages_off };
	for (a = CODE; a < CODE + 0x3000; a++) {
		struct cfi_row_span span;
		__u32 idx, other, lo_idx;

		cr_assert_eq(cfi_table_search_span(&g, &t, table_at, a, &idx, NULL, &span), 1,
			     "%#llx", (unsigned long long)a);
		cr_assert(span.lo <= a && a < span.hi, "%#llx not in [%#llx, %#llx)",
			  (unsigned long long)a, (unsigned long long)span.lo,
			  (unsigned long long)span.hi);
		/* its ends: the same row just inside, another just outside */
		cr_assert_eq(cfi_table_search(&g, &t, table_at, span.lo, &lo_idx, NULL), 1);
		cr_assert_eq(lo_idx, idx);
		cr_assert_eq(cfi_table_search(&g, &t, table_at, span.hi - 1, &other, NULL), 1);
		cr_assert_eq(other, idx);
		if (span.hi < CODE + 0x3000 && cfi_table_search(&g, &t, table_at, span.hi, &other,
								 NULL) == 1) {
			/* the next row, or the same rule going on into the next
			 * 256-byte sub-page (spans end there: see the format) */
			cr_assert(other != idx || (span.hi & (CFI_SUBPAGE_SIZE - 1)) == 0,
				  "%#llx: the row goes on past its span's end %#llx",
				  (unsigned long long)a, (unsigned long long)span.hi);
		}
	}
	cfi_table_free(&t);
}

/* A program FN(0..1) and a library's function at LIB, each with its
 * table: a walk program -> library -> program -> library -> program's
 * outermost frame comes back to each mapping (the one before the current
 * one is kept, and so is the table before the current one) and must
 * still use each one's own table and bias.
 * `walks` times, with the state kept between walks if `keep`. */
static void back_and_forth(int walks, int keep)
{
	static const uint64_t at_prog[] = { 0, 0x100 };
	static const struct cfi_rule prog[] = { { CFA(7, 16), RA_AT8 }, OUTERMOST };
	static const uint64_t at_lib[] = { 0 };
	static const struct cfi_rule lib[] = { { CFA(7, 32), RA_AT8 } };
	static struct walk w;
	const uint64_t want[] = { LIB + 0x10, FN(0) + 8, LIB + 0x18, FN(0) + 0x18, FN(1) + 8 };
	int i;

	add_table(&w, 0, CODE, at_prog, prog, 2);
	add_table(&w, 1, LIB, at_lib, lib, 1);
	setup(&w, 2);
	if (keep) {
		w.in.keep = calloc(1, walker_user_state_size());
		cr_assert_not_null(w.in.keep);
	}
	w.in.regs[WALKER_USER_RIP] = LIB + 0x10;   /* lib: CFA AT(4) */
	w.in.regs[7] = AT(0);
	w.stack[3] = FN(0) + 9;                    /* prog: CFA AT(6) */
	w.stack[5] = LIB + 0x19;                   /* lib: CFA AT(10) */
	w.stack[9] = FN(0) + 0x19;                 /* prog: CFA AT(12) */
	w.stack[11] = FN(1) + 9;                   /* outermost */
	for (i = 0; i < walks; i++) {
		struct walker_user_result res;

		check(&w, want, 5, WALK_END_OUTERMOST);
		/* Each table looked up once a walk: going back to the table
		 * before takes the one kept. */
		cr_assert_eq(walker_user_walk(&w.in, w.ev, &res), 0);
		cr_expect_eq(res.table_gets, 2, "%u table lookups, want 2", res.table_gets);
	}
	free(w.in.keep);
	done(&w, 2);
}

Test(walker_fast, back_and_forth_between_two_objects)
{
	back_and_forth(1, 0);
}

/* Walks a stack of `n` frames of FN(0) (CFA = rsp + `frame`, RA at
 * CFA - 8) from AT(first), then FN(1)'s outermost one, with `size` bytes
 * of it captured (0: all). */
static void chain(unsigned first, unsigned frame, unsigned n, uint64_t size)
{
	static const uint64_t at[] = { 0, 0x100 };
	const struct cfi_rule rules[] = { { CFA(7, frame), RA_AT8 }, OUTERMOST };
	static struct walk w;
	uint64_t sp = AT(first), want[128];
	unsigned i;

	cr_assert_lt(n, 128);
	add_table(&w, 0, CODE, at, rules, 2);
	setup(&w, 1);
	if (size)
		w.in.stack_size = size;
	w.in.regs[WALKER_USER_RIP] = FN(0) + 0x10;
	w.in.regs[7] = sp;
	want[0] = FN(0) + 0x10;
	for (i = 1; i <= n; i++) {
		sp += frame;
		memcpy((char *)w.stack + (sp - 8 - STACK), &(uint64_t){ i < n ? FN(0) + 0x20 : FN(1) + 9 },
		       8);
		want[i] = i < n ? FN(0) + 0x1f : FN(1) + 8;
	}
	check(&w, want, n + 1, WALK_END_OUTERMOST);
	done(&w, 1);
}

/* The captured stack ends mid-page, right after the last frame: a window
 * read to the page's end faults there, the exact read of each return
 * address does not and must be made. */
Test(walker_fast, a_window_past_readable_memory_falls_back_to_the_read)
{
	chain(0, 40, 5, 5 * 40);   /* the last RA is the last word captured */
}

/* Frames across page boundaries (a window stops at its page's end), and
 * more frames than a window holds: from STACK + 1600 to STACK + 7200. */
Test(walker_fast, frames_across_pages_and_windows)
{
	chain(200, 56, 100, 0);
}

/* CFAs 4 bytes off alignment every other frame: return addresses at
 * unaligned addresses are read as they are. */
Test(walker_fast, unaligned_return_addresses)
{
	chain(0, 36, 8, 0);
}

/* CODE mapped (map[0]) from the first of two objects whose code sits at
 * the same place: FN(0)'s CFA is rsp + 16 in the first, rsp + 32 in the
 * second (map[1]).  The walk starts at FN(0) + 0x10 with rsp AT(0) and
 * keeps its state in `keep` from one walk to the next. */
static void two_objects_at_code(struct walk *w, void *keep)
{
	static const uint64_t at[] = { 0, 0x100 };
	static const struct cfi_rule first[] = { { CFA(7, 16), RA_AT8 }, OUTERMOST };
	static const struct cfi_rule second[] = { { CFA(7, 32), RA_AT8 }, OUTERMOST };

	cr_assert_not_null(keep);
	add_table(w, 0, CODE, at, first, 2);
	add_table(w, 1, CODE, at, second, 2);
	setup(w, 2);
	w->in.nmappings = 1;
	w->in.keep = keep;
	w->in.regs[WALKER_USER_RIP] = FN(0) + 0x10;
	w->in.regs[7] = AT(0);
}

/* BPF keeps its walk state from one sample to the next (per CPU): the
 * mapping a walk ended in is used by the next only once the process's
 * array still holds it.  Here the code at CODE is another object by the
 * second walk (another table: CFA = rsp + 32, not rsp + 16). */
Test(walker_fast, a_kept_mapping_is_checked_against_the_array)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x10, FN(1) + 8 };
	void *keep = calloc(1, walker_user_state_size());

	two_objects_at_code(&w, keep);
	w.stack[1] = FN(1) + 9;      /* at CFA AT(2) - 8 */
	check(&w, want, 2, WALK_END_OUTERMOST);

	/* the same walk again: from the kept state */
	check(&w, want, 2, WALK_END_OUTERMOST);

	/* CODE is now mapped from table 2's object */
	w.map[0] = w.map[1];
	w.map[0].start = CODE;
	w.stack[1] = 0;
	w.stack[3] = FN(1) + 9;      /* at CFA AT(4) - 8 */
	check(&w, want, 2, WALK_END_OUTERMOST);

	/* and then nothing is mapped: the kept mapping is no longer the
	 * process's */
	w.in.nmappings = 0;
	check(&w, want, 1, WALK_END_NO_MAPPING);
	free(keep);
	done(&w, 2);
}

/* Under one publication of the process's mappings (its gen) the kept
 * mappings are used as they are, unchecked: the agent never changes a
 * live array under a gen.  Another gen, or none (0), checks them. */
Test(walker_fast, a_kept_mapping_is_trusted_under_its_gen_alone)
{
	static struct walk w;
	const uint64_t want[] = { FN(0) + 0x10, FN(1) + 8 };
	void *keep = calloc(1, walker_user_state_size());
	struct walker_user_result res;

	two_objects_at_code(&w, keep);
	w.in.mappings_gen = 7;
	w.stack[1] = FN(1) + 9;      /* table 1's return address, at CFA AT(2) - 8 */
	w.stack[3] = FN(1) + 9;      /* table 2's, at CFA AT(4) - 8 */
	check(&w, want, 2, WALK_END_OUTERMOST);

	/* The array changes (what the agent never does under a gen): gen 7
	 * still walks with the kept mapping, table 1's, without a look at
	 * the array. */
	w.map[0] = w.map[1];
	w.map[0].start = CODE;
	w.stack[3] = 0;
	check(&w, want, 2, WALK_END_OUTERMOST);
	cr_assert_eq(walker_user_walk(&w.in, w.ev, &res), 0);
	cr_expect_eq(res.mapping_gets, 0, "%u lookups of the mapping array", res.mapping_gets);

	/* Published again, gen 8: the kept mapping is checked, and table 2's
	 * found (table 1's would read 0 at AT(3): a frame short). */
	w.stack[1] = 0;
	w.stack[3] = FN(1) + 9;
	w.in.mappings_gen = 8;
	check(&w, want, 2, WALK_END_OUTERMOST);
	cr_assert_eq(walker_user_walk(&w.in, w.ev, &res), 0);
	cr_expect_eq(res.mapping_gets, 0, "gen 8, checked once, trusted since");
	w.in.mappings_gen = 9;
	cr_assert_eq(walker_user_walk(&w.in, w.ev, &res), 0);
	cr_expect_gt(res.mapping_gets, 0, "gen 9 not checked");

	/* Gen 0 (no proc_info) is never trusted, even after walks under 0. */
	w.in.mappings_gen = 0;
	check(&w, want, 2, WALK_END_OUTERMOST);
	w.in.nmappings = 0;
	check(&w, want, 1, WALK_END_NO_MAPPING);
	free(keep);
	done(&w, 2);
}

/* Rows kept from walk to walk, of two objects taking turns, and a
 * mapping of the first object coming back (the one before the current
 * one, kept too). */
Test(walker_fast, kept_rows_and_mappings_over_many_walks)
{
	back_and_forth(5, 1);
}
