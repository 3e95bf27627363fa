/*
 * The walker at Go's runtime.systemstack (bpf/walker.h's step_go_switch,
 * built for userspace), on a hand-made table and memory: a frame on g0
 * that returns into systemstack's call goes on at g.m.curg.sched on the
 * goroutine's stack, up to the goroutine's root.  Every way the state can
 * be stale or the record wrong ends the walk as stack_switch right at
 * systemstack, with no frame from either stack beyond it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/walker_user.h"
#include "cfi/table.h"

/* Code: FN(0) a function on g0, FN(1) "runtime.systemstack", FN(2) the
 * goroutine's function that called it, FN(3) its root (runtime.goexit). */
#define CODE        0x400000ull
#define FN(i)       (CODE + 0x100 * (i))
#define SYS_RET     (FN(1) + 0x29)   /* after systemstack's call on g0 */
#define SYS_BAD_RET (FN(1) + 0x84)   /* after its call of badsystemstack */
#define SWITCH_PC   (FN(1) + 0xe0)   /* what gosave_systemstack_switch saves */

/* Memory, in words from MEM: the g0 stack [0, 64), the goroutine's stack
 * [128, 192), g0 at 256, the goroutine's g at 320, m at 384, and the
 * TLS block below fs base at 480. */
#define MEM         0x7fff0000ull
#define MEM_WORDS   512
#define AT(i)       (MEM + 8 * (i))
#define G0          AT(256)
#define CURG        AT(320)
#define M           AT(384)
#define FS_BASE     AT(480)

/* Offsets as Go 1.19's, though any do: the walker reads them from the
 * record. */
static const struct cfi_go_info go_info = {
	.magic = CFI_GO_INFO_MAGIC, .tls_g = -8,
	.systemstack_ret = SYS_RET, .systemstack_switch = SWITCH_PC,
	.g_m = 0x30, .g_sched = 0x38, .g_stack = 0, .m_g0 = 0, .m_curg = 0xc0,
	.gobuf_sp = 0, .gobuf_pc = 8, .gobuf_bp = 0x30, .stack_lo = 0, .stack_hi = 8,
};

#define RA_AT8 .ra_type = CFI_REG_OFFSET, .ra_off = -8
#define CFA(r, o) .cfa_type = CFI_CFA_REG, .cfa_reg = (r), .cfa_off = (o)

struct walk {
	struct cfi_table table;
	uint64_t mem[MEM_WORDS];
	struct cfi_go_info gi;
	struct walker_mapping map;
	struct walker_user_table tab;
	struct walker_user_input in;
	struct sample_event ev;
	bool other_frames;  /* the frames are not FN(0), systemstack's call, ... */
	const char *what;   /* the case, for messages */
};

static void put(struct walk *w, uint64_t addr, uint64_t v)
{
	cr_assert(addr >= MEM && addr < AT(MEM_WORDS));
	w->mem[(addr - MEM) / 8] = v;
}

/* A sample in FN(0) on g0 while the goroutine is in systemstack. */
static struct walk *setup(void)
{
	struct walk *w = calloc(1, sizeof(*w));

	cr_assert_not_null(w);
	w->what = "";
	w->gi = go_info;
	/* FN(0): CFA = rsp + 16; its RA, at AT(11), returns into systemstack. */
	w->in.regs[WALKER_USER_RIP] = FN(0) + 4;
	w->in.regs[7] = AT(10);
	w->in.regs[6] = 0;
	put(w, AT(11), SYS_RET);
	/* Words the CFI would read as callers were the switch ignored: a
	 * walk through them would show FN(2) twice. */
	put(w, AT(12), FN(2) + 9);
	/* TLS: g is g0; g0's m; m's g0 and curg; the stacks' bounds. */
	put(w, FS_BASE - 8, G0);
	put(w, G0 + 0x30, M);
	put(w, M + 0, G0);
	put(w, M + 0xc0, CURG);
	put(w, G0 + 0, AT(0));
	put(w, G0 + 8, AT(64));
	put(w, CURG + 0, AT(128));
	put(w, CURG + 8, AT(192));
	/* curg.sched as gosave_systemstack_switch left it: sp at systemstack's
	 * return address into FN(2) (its CFA is sp + 8), bp FN(2)'s. */
	put(w, CURG + 0x38 + 0, AT(140));
	put(w, CURG + 0x38 + 8, SWITCH_PC);
	put(w, CURG + 0x38 + 0x30, AT(150));
	put(w, AT(140), FN(2) + 9);
	/* FN(2): CFA = rsp + 16 = AT(143), RA at AT(142) into FN(3), the root. */
	put(w, AT(142), FN(3) + 9);
	w->in.fs_base = FS_BASE;
	return w;
}

/* Builds the table (with the Go record unless `no_record`) and walks. */
static void walk(struct walk *w, bool no_record, unsigned want_frames, unsigned want_end)
{
	const struct cfi_rule rules[4] = {
		{ CFA(7, 16), RA_AT8 },
		{ CFA(7, 8), RA_AT8, .flags = CFI_RULE_STACK_SWITCH },
		{ CFA(7, 16), RA_AT8 },
		{ CFA(7, 8), .ra_type = CFI_REG_UNDEFINED },
	};
	static const uint64_t want[4] = { FN(0) + 4, SYS_RET - 1, FN(2) + 8, FN(3) + 8 };
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_error err = { "" };
	struct walker_user_result res;
	unsigned i;

	cr_assert_not_null(b);
	for (i = 0; i < 4; i++)
		cr_assert_eq(cfi_builder_add(b, FN(i), &rules[i]), 0);
	cr_assert_eq(cfi_builder_finish(b, FN(4), 0, &w->table, &err), 0, "%s", err.msg);
	cfi_builder_free(b);
	if (!no_record)
		cr_assert_eq(cfi_table_add_go(&w->table, &w->gi, &err), 0, "%s", err.msg);
	w->map = (struct walker_mapping){ .start = CODE, .end = CODE + 0x1000, .table_id = 1,
					  .module_id = 1 };
	w->tab = (struct walker_user_table){ .id = 1, .table = &w->table };
	w->in.mappings = &w->map;
	w->in.nmappings = 1;
	w->in.tables = &w->tab;
	w->in.ntables = 1;
	w->in.stack_base = MEM;
	w->in.stack = w->mem;
	w->in.stack_size = sizeof(w->mem);
	w->in.max_depth = CFIPROF_MAX_DEPTH_DEFAULT;

	cr_assert_eq(walker_user_walk(&w->in, &w->ev, &res), 0);
	cr_assert_eq(w->ev.end_reason, want_end, "%s: end %u, want %u", w->what, w->ev.end_reason,
		     want_end);
	cr_assert_eq(w->ev.nuser, want_frames, "%s: %u frames, want %u", w->what, w->ev.nuser,
		     want_frames);
	for (i = 0; i < want_frames && i < 4 && !w->other_frames; i++)
		cr_assert_eq(w->ev.addrs[i], want[i], "frame %u: %#llx, want %#llx", i,
			     (unsigned long long)w->ev.addrs[i], (unsigned long long)want[i]);
	cr_assert_eq(res.go_switches, want_end == WALK_END_OUTERMOST);
	cfi_table_free(&w->table);
	free(w);
}

#define STOPS(w) walk((w), false, 2, WALK_END_STACK_SWITCH)

Test(walker_go, systemstack_goes_on_on_the_goroutines_stack)
{
	walk(setup(), false, 4, WALK_END_OUTERMOST);
}

Test(walker_go, from_gsignal_too)
{
	struct walk *w = setup();

	/* A signal handler on gsignal interrupted g0: the same m's g0 stack. */
	put(w, FS_BASE - 8, AT(300));
	put(w, AT(300) + 0x30, M);
	walk(w, false, 4, WALK_END_OUTERMOST);
}

Test(walker_go, no_record_stops)
{
	walk(setup(), true, 2, WALK_END_STACK_SWITCH);
}

Test(walker_go, unknown_fs_base_stops)
{
	struct walk *w = setup();

	w->in.fs_base = 0;
	STOPS(w);
}

Test(walker_go, other_return_into_systemstack_stops)
{
	struct walk *w = setup();

	/* badsystemstack's return: no switch happened. */
	put(w, AT(11), SYS_BAD_RET);
	w->other_frames = true;
	walk(w, false, 2, WALK_END_STACK_SWITCH);
}

Test(walker_go, sample_inside_systemstack_stops)
{
	struct walk *w = setup();

	/* Interrupted in systemstack itself: rsp may be on either stack. */
	w->in.regs[WALKER_USER_RIP] = SYS_RET;
	w->in.regs[7] = AT(12);
	w->other_frames = true;
	walk(w, false, 1, WALK_END_STACK_SWITCH);
}

/* States where g.m.curg.sched or the stacks cannot be trusted, one word
 * of memory changed each. */
static const struct {
	uint64_t addr, value;
	const char *what;
} stale_states[] = {
	{ G0 + 0, AT(20), "the frame is not on g0's stack" },
	{ M + 0xc0, 0, "no curg (dropg: the goroutine left the m)" },
	{ CURG + 0x38 + 8, FN(2) + 9, "sched saved by mcall or gogo, not gosave_systemstack_switch" },
	{ CURG + 0x38, 0, "sched.sp cleared by systemstack on its way back" },
	{ CURG + 0x38, AT(200), "sched.sp off the goroutine's stack" },
	{ FS_BASE - 8, 0, "no g in TLS" },
};

Test(walker_go, stale_states_stop)
{
	size_t i;

	for (i = 0; i < sizeof(stale_states) / sizeof(stale_states[0]); i++) {
		struct walk *w = setup();

		w->what = stale_states[i].what;
		put(w, stale_states[i].addr, stale_states[i].value);
		STOPS(w);
	}
}

Test(walker_go, wrong_offsets_stop)
{
	struct walk *w = setup();

	/* g.sched 8 bytes off: pc reads bp. */
	w->gi.g_sched += 8;
	STOPS(w);
	w = setup();
	/* m.curg wrong: reads some other word of m (0). */
	w->gi.m_curg += 8;
	STOPS(w);
	w = setup();
	/* the TLS slot wrong */
	w->gi.tls_g = -16;
	STOPS(w);
}

/* cfi_table_open refuses a record a walker would read wrongly. */
Test(walker_go, record_is_validated)
{
	struct cfi_builder *b = cfi_builder_new();
	const struct cfi_rule r = { CFA(7, 8), RA_AT8 };
	struct cfi_error err = { "" };
	struct cfi_table t, bad;
	struct cfi_table_header *h;
	uint8_t *blob;

	cr_assert_eq(cfi_builder_add(b, FN(0), &r), 0);
	cr_assert_eq(cfi_builder_finish(b, FN(1), 0, &t, &err), 0, "%s", err.msg);
	cfi_builder_free(b);
	cr_assert_null(cfi_table_go(&t));
	cr_assert_eq(cfi_table_add_go(&t, &go_info, &err), 0, "%s", err.msg);
	cr_assert_not_null(cfi_table_go(&t));
	cr_assert_eq(cfi_table_go(&t)->systemstack_ret, SYS_RET);
	cr_assert_eq(t.hdr->go_off % 8, 0);
	/* A second record has no place. */
	cr_assert_lt(cfi_table_add_go(&t, &go_info, &err), 0);

	blob = malloc(t.size);
	cr_assert_not_null(blob);
	h = (struct cfi_table_header *)blob;
	memcpy(blob, t.blob, t.size);
	h->go_off += 4;       /* misaligned */
	cr_assert_eq(cfi_table_open(&bad, blob, t.size, &err), -EBADMSG);
	memcpy(blob, t.blob, t.size);
	h->go_off = (uint32_t)t.size - 8;   /* past the end */
	cr_assert_eq(cfi_table_open(&bad, blob, t.size, &err), -EBADMSG);
	memcpy(blob, t.blob, t.size);
	((struct cfi_go_info *)(blob + h->go_off))->magic ^= 1;
	cr_assert_eq(cfi_table_open(&bad, blob, t.size, &err), -EBADMSG);
	free(blob);
	cfi_table_free(&t);
}
