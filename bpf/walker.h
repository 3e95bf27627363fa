/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The DWARF user-stack walker, shared by every program that samples stacks
 * (on-CPU perf_event, off-CPU sched_switch).  It steps frames with the CFI
 * tables the agent compiled (cfi/FORMAT.md), one bpf_loop iteration per
 * frame, and records why it stopped.
 *
 * The same source compiles into the userspace library bpf/walker_user.c:
 * what differs between the two (user memory, tables, mappings, the loop,
 * miss reports) is behind the shim, bpf/walker_env_bpf.h in BPF and
 * bpf/walker_env_user.h in userspace.
 */
#ifndef CFIPROF_WALKER_H
#define CFIPROF_WALKER_H

#ifdef __bpf__
#include "walker_env_bpf.h"
#else
#include "walker_env_user.h"
#endif
#include "abi.h"
#include "mapping_search.h"
#include "table_search.h"
#include "walk_state.h"

#define DWARF_RBP 6
#define DWARF_RSP 7

/* What the bpf_loop callback gets: it must live on the stack. */
struct loop_ctx {
	struct walk_state *st;
	struct sample_event *ev;
	void *table;          /* table st->tbl_id, as walker_table_get gave it */
	void *table_prev;     /* table st->tbl_prev_id, or NULL */
	WALKER_ENV_FIELDS
};

/* Whether the walk's window (struct walk_state) holds the `size` bytes
 * at `addr`, `off` bytes into it. */
static __always_inline int window_holds(const struct walk_state *st, __u64 addr, __u64 off,
					__u32 size)
{
	return addr >= st->win_base && off <= st->win_len && st->win_len - off >= size;
}

/* out[0] (and out[1] for 16 bytes): the window's words `off` bytes in. */
static __always_inline void window_copy(const struct walk_state *st, __u64 off, __u64 *out,
					__u32 size)
{
	__u32 i = (off >> 3) & (WALK_WIN_SIZE / 8 - 1);

	out[0] = st->win[i];
	if (size > 8)
		out[1] = st->win[i + 1];
}

/* Reads the word of user memory at `addr` into *out, through the walk's
 * window: a read outside it reads the window anew, from addr to the end
 * of addr's page, at most WALK_WIN_SIZE bytes.  The window never crosses
 * a page, so it faults exactly where the read it serves would; a read the
 * window cannot take (unaligned, a fault) is made as is.  Returns
 * non-zero with *out zeroed on a fault, as walker_read_user.  Called, not
 * inlined: a dozen places read, and the window's code once is cheaper
 * for the verifier and the instruction cache; the reads of every frame
 * test the window inline first (stack_read_hot).  Global in BPF, for the
 * verifier to check once on its own: checked at each call, every way out
 * of it multiplied the paths that follow the call, and the verifier gave
 * up on the walker on kernel 6.18. */
WALKER_SUBPROG int stack_read(WALKER_SUBPROG_LC_PARAM struct walk_state *st, __u64 addr,
			      __u64 *out)
{
	__u64 off;
	__u32 len;

	if (!st || !out)
		return -1;
	off = addr - st->win_base;
	if ((addr & 7) || WALK_BENCH_NO_WINDOW)
		goto direct;
	if (!window_holds(st, addr, off, sizeof(*out))) {
		len = 4096 - (addr & 4095);
		if (len > WALK_WIN_SIZE)
			len = WALK_WIN_SIZE;
		if (len < sizeof(*out) || walker_read_user(lc, st->win, len, addr)) {
			st->win_len = 0;
			goto direct;
		}
		st->win_base = addr;
		st->win_len = len;
		off = 0;
	}
	window_copy(st, off, out, sizeof(*out));
	return 0;
direct:
	return walker_read_user(lc, out, sizeof(*out), addr) ? -1 : 0;
}

/* stack_read of out[0] (and of out[1] for 16 bytes: the window that the
 * first read leaves nearly always holds it). */
static __always_inline int stack_read_words(struct loop_ctx *lc, struct walk_state *st,
					    __u64 addr, __u64 *out, __u32 size)
{
	if (stack_read(WALKER_SUBPROG_LC_ARG(lc) st, addr, out)) {
		if (size > 8)
			out[1] = 0;
		return -1;
	}
	return size > 8 ? stack_read(WALKER_SUBPROG_LC_ARG(lc) st, addr + 8, out + 1) : 0;
}

static __always_inline int read_user_u64(struct loop_ctx *lc, __u64 addr, __u64 *out)
{
	return stack_read(WALKER_SUBPROG_LC_ARG(lc) lc->st, addr, out);
}

/* stack_read where every frame reads (step_cfi's return address and
 * rbp): a read the window holds is served here, inline, with
 * stack_read's own test; the call was most of such a read's cost.
 * Anything else is stack_read's. */
static __always_inline int stack_read_hot(struct loop_ctx *lc, struct walk_state *st, __u64 addr,
					  __u64 *out, __u32 size)
{
	__u64 off = addr - st->win_base;

	if (!(addr & 7) && window_holds(st, addr, off, size) && size <= 16 &&
	    !WALK_BENCH_NO_WINDOW) {
		window_copy(st, off, out, size);
		return 0;
	}
	return stack_read_words(lc, st, addr, out, size);
}

/* Loads table `id` into lc->table and its header into st->tbls[tbl_at]:
 * the table before it if that is the one (swapped), else a lookup, the
 * current one becoming the one before. */
static __always_inline int table_enter(struct loop_ctx *lc, __u32 id)
{
	struct walk_state *st = lc->st;
	const struct cfi_table_header *h;
	struct walk_table *w;
	void *t;

	if (lc->table && st->tbl_id == id)
		return 0;
	if (lc->table_prev && st->tbl_prev_id == id && !WALK_BENCH_NO_TABLE_PREV) {
		t = lc->table;
		lc->table = lc->table_prev;
		lc->table_prev = t;
		st->tbl_prev_id = st->tbl_id;
		st->tbl_id = id;
		st->tbl_at ^= 1;
		return 0;
	}
	t = walker_table_get(lc, id);
	if (!t)
		return -1;
	h = (const void *)table_at(t, 0, sizeof(*h));
	if (!h || h->magic != CFI_TABLE_MAGIC || h->version != CFI_TABLE_VERSION)
		return -1;
	/* The current table becomes the one before, its header where it is. */
	if (lc->table) {
		lc->table_prev = lc->table;
		st->tbl_prev_id = st->tbl_id;
		st->tbl_at ^= 1;
	}
	lc->table = t;
	st->tbl_id = id;
	w = &st->tbls[st->tbl_at & 1];
	w->shift = h->page_shift;
	w->npages = h->npages;
	w->pages_off = h->pages_off;
	w->rules_off = h->rules_off;
	w->nrules = h->nrules;
	w->base = h->base;
	w->end = h->end;
	return 0;
}

/* The rule for file address `vaddr` in the current table, as a pointer
 * into the walk's kept rows (valid until the next lookup): 1 if found, 0
 * if the address has no unwind information, -1 on a table error.  A
 * pointer, not a copy: most frames take a kept row, and copying its 32
 * bytes out to read them back cost a few percent of a walk (bench/README.md,
 * "the kept row's rule read in place"). */
static __always_inline int table_lookup(struct loop_ctx *lc, __u64 vaddr,
					const struct cfi_rule **rule)
{
	struct walk_state *st = lc->st;
	const struct walk_table *w;
	struct cfi_table_geom g;
	const struct cfi_rule *r;
	struct cfi_row_span span;
	struct walk_row *row;
	__u32 idx;
	int ret;

	/* A row found before (struct walk_state rows): its rule, without a
	 * search. */
	idx = ((vaddr + st->tbl_id) * 0x9e3779b97f4a7c15ull) >> (64 - WALK_ROWS_SHIFT);
	barrier_var(idx);
	row = &st->rows[idx & (WALK_ROWS - 1)];
	if (row->tbl == st->tbl_id && vaddr - row->lo < row->hi - row->lo && !WALK_BENCH_NO_ROWS) {
		*rule = &row->rule;
		return row->rule.cfa_type == CFI_CFA_UNDEF ? 0 : 1;
	}
	w = &st->tbls[st->tbl_at & 1];
	g = (struct cfi_table_geom){
		.base = w->base,
		.end = w->end,
		.page_shift = w->shift,
		.npages = w->npages,
		.pages_off = w->pages_off,
	};
	ret = cfi_table_search_span(&g, lc->table, table_at, vaddr, &idx, NULL, &span);
	if (ret <= 0)
		return ret;
	if (idx >= w->nrules)
		return -1;
	r = (const void *)table_at(lc->table, w->rules_off + idx * sizeof(*r), sizeof(*r));
	if (!r)
		return -1;
	row->rule = *r;
	row->lo = span.lo;
	row->hi = span.hi;
	row->tbl = st->tbl_id;
	*rule = &row->rule;
	return row->rule.cfa_type == CFI_CFA_UNDEF ? 0 : 1;
}

/* Whether mapping `idx` of the process's array is still `m`: then it is
 * the one a search would find for an address in it (the array is sorted
 * and disjoint). */
static __always_inline int mapping_current(struct walk_state *st, walker_mappings_t *arr,
					   __u32 idx, const struct walker_mapping *m)
{
	const struct walker_mapping *e;

	if (idx >= st->nmappings)
		return 0;
	e = mapping_at(arr, idx);
	return e && e->start == m->start && e->end == m->end && e->bias == m->bias &&
	       e->table_id == m->table_id && e->module_id == m->module_id;
}

/* Makes st->prev the current mapping, and st->cur the one before. */
static __always_inline void mapping_swap(struct walk_state *st)
{
	struct walker_mapping t = st->cur;
	__u32 t_idx = st->cur_idx;
	__u8 t_old = st->cur_old;
	__u64 t_gen = st->cur_gen;

	st->cur = st->prev;
	st->cur_idx = st->prev_idx;
	st->cur_old = st->prev_old;
	st->cur_gen = st->prev_gen;
	st->prev = t;
	st->prev_idx = t_idx;
	st->prev_old = t_old;
	st->prev_gen = t_gen;
}

/* find_mapping where neither kept mapping will do as it is: addr in
 * neither, or in one kept from an earlier walk and not yet checked.
 * Checked against the array if it is there, else searched.  Called, not
 * inlined, and global in BPF: inlined, its map lookups had walk_one keep
 * its values on the stack in every frame, even in the frames (nearly
 * all) that stay in a kept mapping. */
WALKER_SUBPROG int find_mapping_slow(WALKER_SUBPROG_LC_PARAM struct walk_state *st, __u64 addr)
{
	walker_mappings_t arr;
	const struct walker_mapping *m;
	__u32 idx;
	WALKER_SUBPROG_LC_LOCAL(st);

	if (!st)
		return -1;
	walker_mappings_init(lc, &arr);
	if (st->have_cur && addr >= st->cur.start && addr < st->cur.end) {
		if (mapping_current(st, &arr, st->cur_idx, &st->cur)) {
			st->cur_old = 0;
			st->cur_gen = st->gen;
			return 0;
		}
	} else if (st->have_prev && addr >= st->prev.start && addr < st->prev.end &&
		   mapping_current(st, &arr, st->prev_idx, &st->prev)) {
		mapping_swap(st);
		st->cur_old = 0;
		st->cur_gen = st->gen;
		return 0;
	}
	/* Only the last mapping starting at or below addr can hold it.  At
	 * addr = 2^64 - 1, addr + 1 wraps to 0 and finds none: no mapping
	 * holds that address, as ends are exclusive. */
	if (mapping_lower_bound(&arr, st->nmappings, addr + 1, mapping_start_at, &idx) || idx == 0)
		return -1;
	m = mapping_at(&arr, idx - 1);
	if (!m || addr >= m->end)
		return -1;
	if (st->have_cur) {
		st->prev = st->cur;
		st->prev_idx = st->cur_idx;
		st->prev_old = st->cur_old;
		st->prev_gen = st->cur_gen;
		st->have_prev = 1;
	}
	st->cur = *m;
	st->cur_idx = idx - 1;
	st->cur_old = 0;
	st->cur_gen = st->gen;
	st->have_cur = 1;
	return 0;
}

/* Finds the mapping holding `addr` into st->cur: most frames are in the
 * mapping of the frame before, or (a walk going back and forth between
 * a program and its libc) in the one before that, found or checked
 * already. */
static __always_inline int find_mapping(struct loop_ctx *lc, __u64 addr)
{
	struct walk_state *st = lc->st;

	if (st->have_cur && !st->cur_old && addr >= st->cur.start && addr < st->cur.end)
		return 0;
	if (st->have_prev && !st->prev_old && addr >= st->prev.start && addr < st->prev.end) {
		mapping_swap(st);
		return 0;
	}
	return find_mapping_slow(WALKER_SUBPROG_LC_ARG(lc) st, addr);
}

static __always_inline __u64 reg_value(struct loop_ctx *lc, struct walk_state *st, __u32 reg,
				       int *ok)
{
	__u64 v;
	__u32 bit;

	*ok = 1;
	if (reg == DWARF_RSP)
		return st->sp;
	if (reg == DWARF_RBP) {
		*ok = st->bp_valid;
		return st->bp;
	}
	if (reg >= 16) {
		*ok = 0;
		return 0;
	}
	/* Keep the mask in the code: the verifier needs the bound on the
	 * very register used as the index. */
	barrier_var(reg);
	reg &= 15;
	bit = 1u << reg;
	if (st->saved & bit) {
		/* A callee saved it on the stack: read it now that it counts. */
		st->saved &= ~bit;
		if (read_user_u64(lc, st->regs[reg], &v)) {
			*ok = 0;
			return 0;
		}
		st->regs[reg] = v;
		st->known |= bit;
	}
	if (!(st->known & bit)) {
		*ok = 0;
		return 0;
	}
	return st->regs[reg];
}

/* Whether rule `r` says where rbx or r12-r15 are (any but
 * CFI_REG_UNMENTIONED, which is 0): most rules of most code do not, and
 * their step keeps the five registers as they are. */
static __always_inline int rule_mentions_csr(const struct cfi_rule *r)
{
	__u32 types;

	__builtin_memcpy(&types, r->csr_type, sizeof(types));
	return types || r->csr_type[CFI_CSR_NR - 1];
}

/* The callee-saved registers rbx and r12-r15 in the caller of the frame
 * whose CFA is `cfa`, by a rule that mentions them (rule_mentions_csr;
 * the caller-saved registers are already dropped from known and saved):
 * a register saved at CFA + off is noted by address (reg_value reads it
 * if ever needed), one the frame did not touch keeps what it had, any
 * other rule loses it.  Global in BPF: to the verifier the switch, five
 * registers deep, is 4^5 paths, and it kept them apart on kernel 6.18.
 * Called only for such rules: the call and its checks, some 20 of the
 * ~200 BPF instructions of a frame, did nothing in most frames. */
WALKER_SUBPROG int step_csr(struct walk_state *st, const struct cfi_rule *r, __u64 cfa)
{
	__u32 known, saved;
	int i;

	if (!st || !r)
		return 0;
	known = st->known;
	saved = st->saved;
	for (i = 0; i < CFI_CSR_NR; i++) {
		__u32 reg = CFI_CSR_DWARF(i), bit = 1u << reg;

		switch (r->csr_type[i]) {
		case CFI_REG_UNMENTIONED:
		case CFI_REG_SAME:
			break;
		case CFI_REG_OFFSET:
			st->regs[reg] = cfa + (__s64)r->csr_off[i];
			saved |= bit;
			known &= ~bit;
			break;
		case CFI_REG_VAL_OFFSET:
			st->regs[reg] = cfa + (__s64)r->csr_off[i];
			known |= bit;
			saved &= ~bit;
			break;
		default:
			known &= ~bit;
			saved &= ~bit;
			break;
		}
	}
	st->known = known;
	st->saved = saved;
	return 0;
}

/* At a signal trampoline, rsp points at the kernel's ucontext: the
 * interrupted registers are at SIGCTX_*_OFF from it. */
static __always_inline int step_signal(struct loop_ctx *lc, struct walk_state *st)
{
	__u64 ip, sp, bp;

	if (read_user_u64(lc, st->sp + SIGCTX_IP_OFF, &ip) ||
	    read_user_u64(lc, st->sp + SIGCTX_SP_OFF, &sp))
		return WALK_END_READ_FAULT;
	st->bp_valid = !read_user_u64(lc, st->sp + SIGCTX_BP_OFF, &bp);
	st->bp = bp;
	/* The interrupted rbx and r12-r15 are in the ucontext too. */
	st->regs[3] = st->sp + SIGCTX_BX_OFF;
	st->regs[12] = st->sp + SIGCTX_R12_OFF;
	st->regs[13] = st->sp + SIGCTX_R13_OFF;
	st->regs[14] = st->sp + SIGCTX_R14_OFF;
	st->regs[15] = st->sp + SIGCTX_R15_OFF;
	st->saved = CFI_CSR_MASK;
	st->known = 0;
	st->ip = ip;
	st->sp = sp;
	st->exact = 1;   /* the interrupted instruction itself, not a return address */
	st->first = 0;
	st->signal_frames++;
	return -1;
}

/* Frame-pointer step for code without CFI: [rbp] = caller's rbp,
 * [rbp + 8] = return address. */
static __always_inline int step_fp(struct loop_ctx *lc, struct walk_state *st)
{
	__u64 ra, bp;

	/* The x86-64 ABI has the outermost frame set rbp to 0 (ld.so's and
	 * libc's _start do, without CFI for themselves). */
	if (st->bp_valid && st->bp == 0)
		return WALK_END_OUTERMOST;
	if (!st->bp_valid || st->bp < st->sp || (st->bp & 7))
		return WALK_END_FP_FAILED;
	if (read_user_u64(lc, st->bp + 8, &ra) || read_user_u64(lc, st->bp, &bp))
		return WALK_END_READ_FAULT;
	st->sp = st->bp + 16;
	st->bp = bp;
	st->ip = ra;
	st->exact = 0;
	st->first = 0;
	/* Code without CFI says nothing of what it saved where. */
	st->known = st->saved = 0;
	st->via_fp = 1;
	st->fp_steps++;
	return -1;
}

/* Whether `ip` is the x86-64 rt_sigreturn trampoline, known by its code
 * as libgcc (x86_64_fallback_frame_state) and libunwind know it: the
 * frame a signal handler returns to, when its restorer has no CFI (musl,
 * Go's runtime.sigreturn, a raw rt_sigaction's SA_RESTORER).  Two
 * encodings of mov $15 then syscall: 48 c7 c0 0f 00 00 00 0f 05 (mov
 * $15, %rax: glibc, Go, musl 1.1.20 on) and b8 0f 00 00 00 0f 05 (movl
 * $15, %eax: older musl, assemblers that shorten it). */
static __always_inline int sigreturn_at(struct loop_ctx *lc, __u64 ip)
{
	__u64 w;
	__u8 last;

	if (walker_read_code(lc, &w, sizeof(w), ip))
		return 0;
	if ((w & 0x00ffffffffffffffull) == 0x00050f0000000fb8ull)
		return 1;
	return w == 0x0f0000000fc0c748ull && !walker_read_code(lc, &last, 1, ip + 8) && last == 0x05;
}

/* Whether an interrupted ip (st->exact) is on a sigreturn trampoline: at
 * its first instruction (the kernel's "return" into it taken, its code
 * not yet run) or right after its syscall (a sample in the kernel during
 * rt_sigreturn sees that ip).  Either way rsp is at the ucontext.  Go's
 * runtime.sigreturn has CFI, the entry rule CFA = rsp + 8 that makes
 * uc_flags a return address: walk_one asks here only at that rule. */
static __noinline int sigreturn_on(struct loop_ctx *lc, __u64 ip)
{
	__u64 w[2];

	if (sigreturn_at(lc, ip))
		return 1;
	/* ip - 9 .. ip + 6 holds either encoding ending at ip (see
	 * sigreturn_at): the 9-byte one from its first byte, the 7-byte one
	 * from its third.  Unreadable (ip - 9 before the mapping), only the
	 * 7-byte one can end at ip. */
	if (walker_read_code(lc, w, sizeof(w), ip - 9))
		return !walker_read_code(lc, w, sizeof(w[0]), ip - 7) &&
		       (w[0] & 0x00ffffffffffffffull) == 0x00050f0000000fb8ull;
	if (w[0] == 0x0f0000000fc0c748ull && (w[1] & 0xff) == 0x05)
		return 1;
	return (((w[0] >> 16) | (w[1] << 48)) & 0x00ffffffffffffffull) == 0x00050f0000000fb8ull;
}

/* A step where no CFI describes the code at st->ip: through the kernel's
 * signal frame if ip is a sigreturn trampoline (the frame recorded is
 * the trampoline itself, as for a CFI_RULE_SIGNAL rule), else by frame
 * pointer, or (`no_mapping`: no mapping holds ip) not at all.  Only code
 * without CFI pays for the check; a function of its own, called, so that
 * the CFI path's code in walk_one stays as it was, and global in BPF: the
 * verifier checks it once, not again along every path to each call. */
WALKER_SUBPROG int step_no_cfi(WALKER_SUBPROG_LC_PARAM struct walk_state *st,
			       struct sample_event *ev, __u32 n, int no_mapping)
{
	WALKER_SUBPROG_LC_LOCAL(st);

	/* (masked first: to the verifier the upper half of a global
	 * function's 32-bit argument is unknown) */
	n &= 0xffff;
	if (!st || !ev || n >= CFIPROF_MAX_DEPTH_LIMIT)
		return WALK_END_UNSUPPORTED;
	if (sigreturn_at(lc, st->ip)) {
		ev->addrs[n] = st->ip;
		return step_signal(lc, st);
	}
	return no_mapping ? WALK_END_NO_MAPPING : step_fp(lc, st);
}

/* One CFI step.  Returns -1 to go on, or a walk-end reason.  (The steps
 * take lc for the shim's reads and st, which is lc->st, as it is: BPF
 * would otherwise load it again after every store through st.)  Global
 * in BPF, checked once on its own: inlined, each of its ways out went on
 * as a path of its own through the rest of the frame, and the verifier
 * gave up on kernel 6.18. */
WALKER_SUBPROG int step_cfi(WALKER_SUBPROG_LC_PARAM struct walk_state *st, const struct cfi_rule *r)
{
	__u64 cfa, ra, bp, base, old_sp;
	int ok;
	WALKER_SUBPROG_LC_LOCAL(st);

	if (!st || !r)
		return WALK_END_UNSUPPORTED;
	old_sp = st->sp;
	/* (one test for the three rare cases on the common path) */
	if (r->flags & (CFI_RULE_SIGNAL | CFI_RULE_TOO_BIG | CFI_RULE_STACK_SWITCH)) {
		if (r->flags & CFI_RULE_SIGNAL)
			return step_signal(lc, st);
		if (r->flags & CFI_RULE_TOO_BIG)
			return WALK_END_UNSUPPORTED;
		/* The callers are on the stack Go's runtime switched from
		 * (step_go_switch may go on there). */
		return WALK_END_STACK_SWITCH;
	}

	switch (r->cfa_type) {
	case CFI_CFA_REG:
		base = reg_value(lc, st, r->cfa_reg, &ok);
		if (!ok)
			return WALK_END_UNSUPPORTED;
		cfa = base + (__s64)r->cfa_off;
		break;
	case CFI_CFA_DEREF:
		base = reg_value(lc, st, r->cfa_reg, &ok);
		if (!ok)
			return WALK_END_UNSUPPORTED;
		if (read_user_u64(lc, base + (__s64)r->cfa_off, &cfa))
			return WALK_END_READ_FAULT;
		cfa += (__s64)r->cfa_off2;
		break;
	case CFI_CFA_PLT:
		cfa = st->sp + (__s64)r->cfa_off + (((st->ip & 15) >= (__u64)r->cfa_off2) ? 8 : 0);
		break;
	case CFI_CFA_DEREF_INDEX: {
		__u64 idx;

		base = reg_value(lc, st, r->cfa_reg, &ok);
		if (!ok)
			return WALK_END_UNSUPPORTED;
		idx = reg_value(lc, st, r->cfa_reg2, &ok);
		if (!ok)
			return WALK_END_UNSUPPORTED;
		if (read_user_u64(lc, base + (__s64)r->cfa_off + idx * 8, &cfa))
			return WALK_END_READ_FAULT;
		cfa += (__s64)r->cfa_off2;
		break;
	}
	default:
		return WALK_END_UNSUPPORTED;
	}

	/* The common prologue saves rbp right below the return address:
	 * fetch both with one user read. */
	if (r->ra_type == CFI_REG_OFFSET && r->rbp_type == CFI_REG_OFFSET &&
	    r->rbp_off == r->ra_off - 8) {
		__u64 pair[2];

		if (stack_read_hot(lc, st, cfa + (__s64)r->rbp_off, pair, sizeof(pair)))
			return WALK_END_READ_FAULT;
		st->bp = pair[0];
		st->bp_valid = 1;
		ra = pair[1];
		goto step;
	}

	switch (r->ra_type) {
	case CFI_REG_OFFSET:
		if (stack_read_hot(lc, st, cfa + (__s64)r->ra_off, &ra, sizeof(ra)))
			return WALK_END_READ_FAULT;
		break;
	case CFI_REG_UNDEFINED:
		return WALK_END_OUTERMOST;
	case CFI_REG_REGISTER:
		ra = reg_value(lc, st, (__u32)r->ra_off, &ok);
		if (!ok)
			return WALK_END_UNSUPPORTED;
		break;
	default:
		return WALK_END_UNSUPPORTED;
	}

	switch (r->rbp_type) {
	case CFI_REG_UNMENTIONED:
	case CFI_REG_SAME:
		break;
	case CFI_REG_OFFSET:
		st->bp_valid = !stack_read_hot(lc, st, cfa + (__s64)r->rbp_off, &bp, sizeof(bp));
		st->bp = bp;
		break;
	case CFI_REG_VAL_OFFSET:
		st->bp = cfa + (__s64)r->rbp_off;
		st->bp_valid = 1;
		break;
	default:
		st->bp_valid = 0;
		break;
	}

step:
	/* The rule says the frame saved a return address, and the word
	 * there is 0: no caller's code is at 0, and an outermost frame says
	 * it is one by its rule (the return address undefined: glibc's _start
	 * and clone, Go's TOPFRAME functions).  Registers and memory out of
	 * step (a thread's first instants on its new stack, a word read
	 * where the frame no longer is) read so; walk_one would take the 0
	 * for the end of the stack and call a short stack complete.  Nor is
	 * any caller's code at or above 2^56, past the largest user address
	 * space x86-64 has (5-level paging): a word there is data read where
	 * the CFI wrongly places the return address (Debian's libcrypto 3
	 * has bn_gather5 realign rsp under an FDE without rules, and its
	 * saved words are all-ones masks).  Kept, it would be a frame at
	 * 0xffff..., and a library mapped since could never explain it. */
	if (!ra || ra >= CFIPROF_USER_ADDR_END)
		return WALK_END_BAD_FRAME;
	/* Caller-saved registers are lost after every step. */
	st->known &= CFI_CSR_MASK;
	st->saved &= CFI_CSR_MASK;
	if (rule_mentions_csr(r))
		step_csr(st, r, cfa);
	st->sp = cfa;
	st->ip = ra;
	st->exact = 0;
	st->first = 0;
	st->cfi_steps++;
	/* Callers live at higher addresses; anything else is corruption or a
	 * loop that would otherwise run to the depth limit. */
	if (cfa <= old_sp)
		return WALK_END_BAD_FRAME;
	return -1;
}

/* Where step_cfi stopped at a row of Go's runtime that switched stacks
 * (CFI_RULE_STACK_SWITCH `r`), with st at that function's frame: if it is
 * runtime.systemstack's call of its argument on g0, moves st onto the
 * goroutine's stack, where gosave_systemstack_switch left it in
 * g.m.curg.sched, as Go's traceback does, and steps to systemstack's
 * caller there by systemstack's own CFI.  Returns step_cfi's result if it
 * did, else WALK_END_STACK_SWITCH: anywhere else (mcall, morestack: the
 * g0 code under them may reschedule, and m.curg be another goroutine
 * already), without the binary's record (bpf/abi.h struct cfi_go_info), or
 * where a check fails -- never a frame from a stale stack.  A function of
 * its own, called once the step ended: walks that never meet a switch
 * keep walk_one's code as it was. */
static __noinline int step_go_switch(struct loop_ctx *lc, struct walk_state *st,
				     const struct cfi_rule *r)
{
	const struct cfi_table_header *h;
	const struct cfi_go_info *gi;
	__u64 g, m, g0, curg, lo, hi, sp, pc, bp, fs;
	__u32 off;

	/* Interrupted inside systemstack itself: which stack rsp is on
	 * depends on the instruction. */
	if (st->exact)
		return WALK_END_STACK_SWITCH;
	h = (const void *)table_at(lc->table, 0, sizeof(*h));
	if (!h || !h->go_off)
		return WALK_END_STACK_SWITCH;
	off = h->go_off;
	gi = (const void *)table_at(lc->table, off, sizeof(*gi));
	if (!gi || gi->magic != CFI_GO_INFO_MAGIC || st->ip - st->cur.bias != gi->systemstack_ret)
		return WALK_END_STACK_SWITCH;
	/* st must be on the g0 stack of the current g's m (g is g0 itself,
	 * or gsignal where a signal handler interrupted g0). */
	fs = walker_fs_base(lc);
	if (!fs || read_user_u64(lc, fs + (__s64)gi->tls_g, &g) || !g ||
	    read_user_u64(lc, g + gi->g_m, &m) || !m || read_user_u64(lc, m + gi->m_g0, &g0) ||
	    !g0 || read_user_u64(lc, g0 + gi->g_stack + gi->stack_lo, &lo) ||
	    read_user_u64(lc, g0 + gi->g_stack + gi->stack_hi, &hi) || st->sp < lo || st->sp > hi)
		return WALK_END_STACK_SWITCH;
	/* The goroutine: its sched as systemstack saved it (pc is the one
	 * gosave_systemstack_switch stores, and systemstack clears sp on its
	 * way back), its sp on its own stack. */
	if (read_user_u64(lc, m + gi->m_curg, &curg) || !curg || curg == g0 ||
	    read_user_u64(lc, curg + gi->g_sched + gi->gobuf_pc, &pc) ||
	    pc != gi->systemstack_switch + st->cur.bias ||
	    read_user_u64(lc, curg + gi->g_sched + gi->gobuf_sp, &sp) ||
	    read_user_u64(lc, curg + gi->g_sched + gi->gobuf_bp, &bp) ||
	    read_user_u64(lc, curg + gi->g_stack + gi->stack_lo, &lo) ||
	    read_user_u64(lc, curg + gi->g_stack + gi->stack_hi, &hi) || sp < lo || sp >= hi)
		return WALK_END_STACK_SWITCH;
	st->sp = sp;
	st->bp = bp;
	st->bp_valid = 1;
	/* Go's ABI keeps no other register across calls. */
	st->known = st->saved = 0;
	st->go_switches++;
	st->made_rule = *r;
	st->made_rule.flags &= ~CFI_RULE_STACK_SWITCH;
	return step_cfi(WALKER_SUBPROG_LC_ARG(lc) st, &st->made_rule);
}

/* Tells the agent that table `id` is needed, once per walk (the shim
 * limits it further: BPF to once per CFIPROF_MISS_INTERVAL_NS for each
 * process).  The agent compiles it (or reads it from the disk cache) and
 * loads it; until then the walker steps through that code by frame
 * pointer. */
static __always_inline void report_miss(struct loop_ctx *lc, struct walk_state *st, __u32 id,
					__u32 module_id)
{
	if (st->missed_id == id)
		return;
	st->missed_id = id;
	walker_miss_notify(lc, st, id, module_id);
}

/* Where a table or the mappings are missing, a walk that may take a
 * snapshot (st->snap_want) stops at frame n -- not recorded: the agent's
 * walk from the snapshot records it -- rather than guess by frame
 * pointer.  Returns whether it stopped.  Not inlined: inlined, clang
 * gives walk_one a return path through a register the verifier sees
 * uninitialised ("R3 !read_ok"); a call costs nothing where tables
 * are loaded. */
static __attribute__((noinline)) int walk_stop_for_snapshot(struct walk_state *st, __u32 n)
{
	if (!st->snap_want)
		return 0;
	st->n = n;
	st->snapshot = 1;
	return 1;
}

/* The registers of the frame a walk stopped at for a snapshot, as
 * struct stack_snapshot carries them: every register the walk knows
 * there, by DWARF number.  Those a callee saved must have been read
 * (walk_resolve_saved): their slots are below the copied stack.
 * (walk_resume is the way back: a register the walker learns to track is
 * added to both.) */
static __always_inline void walk_snapshot_regs(const struct walk_state *st,
					       struct stack_snapshot *s)
{
	__builtin_memcpy(s->regs, st->regs, sizeof(st->regs));
	s->known = (st->known & ~st->saved) | (1u << DWARF_RSP);
	if (st->bp_valid)
		s->known |= 1u << DWARF_RBP;
	else
		s->known &= ~(1u << DWARF_RBP);
	s->regs[DWARF_RBP] = st->bp;
	s->regs[DWARF_RSP] = st->sp;
	s->regs[STACK_SNAPSHOT_IP] = st->ip;
	s->known |= 1u << STACK_SNAPSHOT_IP;
	s->ret_addr = !st->exact;
}

/* Sets st's registers from a snapshot's (walk_snapshot_regs), to walk on
 * from the frame where BPF stopped.  Call after walk_begin. */
static __always_inline void walk_resume(struct walk_state *st, const __u64 *regs, __u32 known,
					__u8 ret_addr)
{
	__builtin_memcpy(st->regs, regs, sizeof(st->regs));
	st->ip = regs[STACK_SNAPSHOT_IP];
	st->sp = regs[DWARF_RSP];
	st->bp = regs[DWARF_RBP];
	st->bp_valid = (known >> DWARF_RBP) & 1;
	st->first = (known & 0xffff) == 0xffff;
	st->known = (__u16)known;
	st->saved = 0;
	st->exact = !ret_addr;
}

static long walk_one(__u32 i, void *ctx)
{
	struct loop_ctx *lc = ctx;
	struct walk_state *st = lc->st;
	struct sample_event *ev = lc->ev;
	const struct cfi_rule *rule = NULL;
	__u64 pc;
	__u32 n = st->n;
	int ret;

	(void)i;
	if (n >= walker_max_depth(lc) || n >= CFIPROF_MAX_DEPTH_LIMIT) {
		st->end = WALK_END_DEPTH;
		return 1;
	}
	if (st->ip == 0) {
		st->end = WALK_END_OUTERMOST;
		return 1;
	}
	/* A return address points after the call, possibly past the end of
	 * the caller's function (a call to a noreturn function): look up
	 * the call instruction itself. */
	pc = st->exact ? st->ip : st->ip - 1;
	ev->addrs[n] = pc;
	st->n = n + 1;

	if (find_mapping(lc, pc)) {
		/* A frame-pointer step through code built without frame
		 * pointers reads whatever rbp held: a "return address" outside
		 * every mapping is that guess failing, not code we have yet to
		 * learn of.  Drop it: a short stack, not a wrong frame. */
		if (st->via_fp) {
			st->n = n;
			st->end = WALK_END_FP_FAILED;
			return 1;
		}
		/* Code the agent has not read the mappings of: none of the
		 * process's yet (or not since its exec), or a library mapped
		 * since.  A snapshot lets it walk from this frame once it has;
		 * without one, a trampoline there is still known by its code. */
		if (walk_stop_for_snapshot(st, n)) {
			st->end = WALK_END_NO_MAPPING;
			return 1;
		}
		ret = step_no_cfi(WALKER_SUBPROG_LC_ARG(lc) st, ev, n, 1);
		goto stepped;
	}
	st->via_fp = 0;
	if (st->cur.table_id == 0) {
		ret = step_no_cfi(WALKER_SUBPROG_LC_ARG(lc) st, ev, n, 0);
	} else {
		if (table_enter(lc, st->cur.table_id)) {
			report_miss(lc, st, st->cur.table_id, st->cur.module_id);
			ret = walk_stop_for_snapshot(st, n) ? WALK_END_NO_TABLE : step_fp(lc, st);
			/* rbp 0 ends a frame-pointer chain, but this code has
			 * CFI, and may keep anything in rbp: no proof of the
			 * outermost frame, a short stack. */
			if (ret == WALK_END_OUTERMOST)
				ret = WALK_END_FP_FAILED;
			/* A part of fp_steps: only the steps step_fp took. */
			if (ret < 0)
				st->miss_steps++;
			goto stepped;
		}
		ret = table_lookup(lc, pc - st->cur.bias, &rule);
		if (ret < 0) {
			st->end = WALK_END_UNSUPPORTED;
			return 1;
		}
		/* A signal trampoline is entered by "returning" to its first
		 * instruction: ip - 1 found its FDE (which starts one byte early
		 * for that reason), but the frame is the trampoline itself. */
		if (ret > 0 && (rule->flags & CFI_RULE_SIGNAL))
			ev->addrs[n] = st->ip;
		/* An interrupted ip on a trampoline whose CFI (Go's) is the
		 * entry rule: the signal frame is at rsp whatever it says. */
		if (ret > 0 && st->exact && rule->cfa_type == CFI_CFA_REG &&
		    rule->cfa_reg == DWARF_RSP && rule->cfa_off == 8 && sigreturn_on(lc, st->ip)) {
			st->made_rule = *rule;
			st->made_rule.flags |= CFI_RULE_SIGNAL;
			rule = &st->made_rule;
		}
		ret = ret ? step_cfi(WALKER_SUBPROG_LC_ARG(lc) st, rule) :
			    step_no_cfi(WALKER_SUBPROG_LC_ARG(lc) st, ev, n, 0);
	}
stepped:
	if (ret >= 0) {
		/* (only step_cfi ends so, with `rule` its rule) */
		if (ret == WALK_END_STACK_SWITCH && rule)
			ret = step_go_switch(lc, st, rule);
		if (ret >= 0) {
			st->end = ret;
			return 1;
		}
	}
	return 0;
}

/* Starts a walk of process `tgid` (0 in userspace) from the registers
 * already in st (DWARF-numbered, with ip, sp and bp). */
static __always_inline void walk_begin(struct walk_state *st, __u32 tgid)
{
	st->n = 0;
	st->fp_steps = st->cfi_steps = st->signal_frames = st->miss_steps = 0;
	st->missed_id = 0;
	/* cur and prev stay, checked before use (find_mapping) */
	st->cur_old = st->prev_old = 1;
	if (WALK_BENCH_NO_KEEP)
		st->have_cur = st->have_prev = 0;
	st->tgid = tgid;
	st->end = WALK_END_OUTERMOST;
	st->tbl_id = st->tbl_prev_id = 0;
	st->via_fp = 0;
	st->snapshot = 0;
	st->win_len = 0;
}

/* The process's mappings are publication `gen` (struct proc_info; 0:
 * unknown): the kept mappings found or checked under it are used without
 * a look at the array.  The agent publishes every change under a gen of
 * its own, never reused, so under the same gen the array is the one they
 * were found in; a different gen (or another process's) checks them. */
static __always_inline void walk_trust_kept(struct walk_state *st, __u64 gen)
{
	st->gen = gen;
	if (!gen || WALK_BENCH_NO_GEN)
		return;
	if (st->cur_gen == gen)
		st->cur_old = 0;
	if (st->prev_gen == gen)
		st->prev_old = 0;
}

static __always_inline void walk_init_done(struct walk_state *st)
{
	st->known = 0xffff;
	st->saved = 0;
	st->bp_valid = 1;
	st->first = 1;
	st->exact = 1;
}

/* A walk stopped for a snapshot hands its registers over by value: what
 * callees saved, noted by address (below the stack the snapshot copies),
 * is read now. */
static __always_inline void walk_resolve_saved(struct loop_ctx *lc, struct walk_state *st)
{
	int ok;

	if (!st->saved)
		return;
	reg_value(lc, st, CFI_CSR_DWARF(0), &ok);
	reg_value(lc, st, CFI_CSR_DWARF(1), &ok);
	reg_value(lc, st, CFI_CSR_DWARF(2), &ok);
	reg_value(lc, st, CFI_CSR_DWARF(3), &ok);
	reg_value(lc, st, CFI_CSR_DWARF(4), &ok);
}

/* Walks every frame of lc->st into lc->ev, then sets ev->nuser and
 * ev->end_reason.  st and ev are lc's, passed for BPF's sake: lc is on
 * the stack, and reading them from it again costs instructions. */
static __always_inline void walk_run(struct loop_ctx *lc, struct walk_state *st,
				     struct sample_event *ev)
{
	walker_loop(CFIPROF_MAX_DEPTH_LIMIT + 1, walk_one, lc);
	if (st->snapshot)
		walk_resolve_saved(lc, st);
	ev->nuser = st->n;
	ev->end_reason = st->end;
	/* A miss whose frame-pointer step failed still cut the stack short.
	 * (A snapshot took no such step: the agent walks on.) */
	if (st->missed_id && !st->snapshot)
		ev->flags |= SAMPLE_FLAG_MISSED;
}

#ifdef __bpf__
/* Fills st's registers from a copy of the user registers. */
static __always_inline void walk_init_regs(struct walk_state *st, const struct pt_regs *regs)
{
	st->ip = regs->ip;
	st->sp = regs->sp;
	st->bp = regs->bp;
	st->regs[0] = regs->ax;
	st->regs[1] = regs->dx;
	st->regs[2] = regs->cx;
	st->regs[3] = regs->bx;
	st->regs[4] = regs->si;
	st->regs[5] = regs->di;
	st->regs[6] = regs->bp;
	st->regs[7] = regs->sp;
	st->regs[8] = regs->r8;
	st->regs[9] = regs->r9;
	st->regs[10] = regs->r10;
	st->regs[11] = regs->r11;
	st->regs[12] = regs->r12;
	st->regs[13] = regs->r13;
	st->regs[14] = regs->r14;
	st->regs[15] = regs->r15;
	walk_init_done(st);
}

#define WALK_ENOENT 2 /* (vmlinux.h has no errno values) */

/* bpf_find_vma callback: the address is mapped. */
static long vma_holds(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	*(int *)data = 1;
	return 0;
}

/* Whether the current task is inside an execve past its point of no
 * return: its registers saved at entry are the old program's, whose
 * address space is gone.  Nothing of the old program can be walked
 * (reads go to the new address space) and nothing of the new one exists
 * yet.  The new mm is known by its code, not placed until the program is
 * mapped (load_elf_binary sets start_code just before it starts the new
 * program), and after that by the pc, in none of its mappings
 * (bpf_find_vma; it cannot tell while the mm's lock is held, and the
 * sample stays as walked).  Rare: in_execve is set for the length of an
 * execve. */
static __always_inline int old_program_gone(__u64 pc)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm;
	int mapped = 0;

	if (!BPF_CORE_READ_BITFIELD(task, in_execve))
		return 0;
	mm = task->mm;
	if (!mm)
		return 0;
	if (!mm->start_code)
		return 1;
	return bpf_find_vma(task, pc, vma_holds, &mapped, 0) == -WALK_ENOENT && !mapped;
}

/* Walks the user stack of the current task from `regs` into sc->ev.
 * Sets ev->nuser and ev->end_reason. */
static __always_inline void walk_user(struct sample_scratch *sc, const struct pt_regs *regs, __u32 tgid)
{
	struct walk_state *st = &sc->st;
	struct loop_ctx lc = { .st = st, .ev = &sc->ev };
	struct proc_seen *ps = &sc->seen;

	walk_begin(st, tgid);
	walk_init_regs(st, regs);

	proc_seen_get(ps, tgid);
	st->nmappings = ps->nmappings;
	st->slot = ps->slot;
	walk_trust_kept(st, ps->gen);
	walk_run(&lc, st, &sc->ev);
	/* (Asked only of a walk that failed: one in the old program's
	 * registers cannot reach its outermost frame in the new address
	 * space, and a complete walk pays nothing for the question.) */
	if (st->end != WALK_END_OUTERMOST && old_program_gone(regs->ip)) {
		sc->ev.nuser = 0;
		sc->ev.end_reason = WALK_END_IN_EXEC;
		sc->ev.flags &= ~SAMPLE_FLAG_MISSED;
		st->snapshot = 0;
	}
	/* The whole before its part, for a reader between the two. */
	add_count(CNT_FP_STEPS, st->fp_steps);
	add_count(CNT_MISS_FP_STEPS, st->miss_steps);
	add_count(CNT_CFI_STEPS, st->cfi_steps);
	add_count(CNT_SIGNAL_FRAMES, st->signal_frames);
}
#endif /* __bpf__ */

#endif /* CFIPROF_WALKER_H */
