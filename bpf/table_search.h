/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The lookup of an address in a CFI table (cfi/FORMAT.md), written once for
 * the BPF walker and for the agent's cfi_table_lookup(), so that the tests,
 * the oracles and `cfiprof cfi dump --at` exercise the code the walker runs.
 * Each side supplies how to reach bytes of the blob: BPF reads chunks of
 * the table's array map, the agent points into the blob.  Compiles as BPF
 * (bounded loop, every index checked against its chunk where the verifier
 * can see it) and as userspace C.
 */
#ifndef CFIPROF_TABLE_SEARCH_H
#define CFIPROF_TABLE_SEARCH_H

#include "abi.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef barrier_var /* bpf_helpers.h's */
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

/* The header fields a lookup needs.  The walker caches them for as long as
 * frames stay in one table; the agent has the header at hand. */
struct cfi_table_geom {
	__u64 base, end;
	__u32 page_shift, npages, pages_off;
};

/* A pointer to `size` bytes at byte offset `off` of `table`, or NULL when
 * they are outside the blob or straddle two chunks.  BPF has no indirect
 * calls: pass a function the compiler can inline (a static
 * __always_inline one, named directly). */
typedef const __u8 *(*cfi_table_at_fn)(const void *table, __u32 off, __u32 size);

/* A function BPF's verifier checks once on its own (bpf/walker_env_bpf.h
 * defines it so); elsewhere a plain one. */
#ifndef WALKER_SUBPROG
#define WALKER_SUBPROG static inline
#endif

/* One chunk of a table, as an object a function can be given. */
struct cfi_chunk {
	__u8 b[CFI_CHUNK_SIZE];
};

/* The last of the rows lo < row < hi (their start offsets are bytes at
 * row_off + row in `c`) that starts at or below key, or lo if none does.
 * Returns it, with the steps taken in bits 16 and up, or -1 if the rows
 * are outside the chunk or the search did not settle.
 *
 * The halving has no branch on what it reads: such a branch doubled the
 * paths the verifier follows at each step, and once it could tell the
 * loop's end from the bounds, it kept them all apart.  And it is a
 * function of its own in BPF, checked once: inlined, every path that led
 * to the search went through it again (the walker no longer loaded on
 * kernel 6.18's verifier). */
WALKER_SUBPROG int cfi_rows_search(const struct cfi_chunk *c, __u32 row_off, __u32 lo, __u32 hi,
				   __u32 key)
{
	__u32 cand = lo + 1, len = hi - lo - 1, x;
	int i;

	if (!c || hi <= lo || len > CFI_SUBPAGE_SIZE)
		return -1;
	for (i = 0; i < CFI_SEARCH_STEPS && len; i++) {
		__u32 half = len / 2, at_or_below;

		x = cand + half;
		barrier_var(x);
		x += row_off;
		if (x > CFI_CHUNK_SIZE - 1)
			return -1;
		/* Both are bytes: the difference is negative exactly when the
		 * row starts past key. */
		at_or_below = 1 - (((__u32)key - c->b[x]) >> 31);
		/* Unknown to the compiler, which would turn the products by
		 * a 0 or 1 below back into branches. */
		barrier_var(at_or_below);
		cand += at_or_below * (half + 1);
		len = half - at_or_below * (~len & 1);
	}
	if (len || cand > 0xffff)
		return -1;
	return (int)((cand - 1) | (__u32)i << 16);
}

/* Finds the row in force at file address `vaddr`.  Returns 1 with its rule
 * index in *rule_idx (the caller checks it against nrules as it reads the
 * rule), 0 if vaddr is outside [base, end), -1 if the table breaks its
 * format.  *comparisons, if not NULL, receives the row comparisons made:
 * tests hold them to the loop bound. */
/* The file addresses [lo, hi) of a row: all of them have its rule. */
struct cfi_row_span {
	__u64 lo, hi;
};

/* cfi_table_search, and with 1 the span of the row found in *span (if not
 * NULL): the walker keeps it, so that the next frame in the same row (a
 * recursion, a loop of calls) skips the search. */
static __always_inline int cfi_table_search_span(const struct cfi_table_geom *g, const void *table,
						 cfi_table_at_fn at, __u64 vaddr, __u32 *rule_idx,
						 __u32 *comparisons, struct cfi_row_span *span)
{
	const struct cfi_page *pg;
	const __u8 *blk;
	__u64 off;
	__u32 page, key, sub, lo, hi, first, last, o, row_off, nrows, x, pal_idx;
	int ret;

	if (vaddr < g->base || vaddr >= g->end)
		return 0;
	off = vaddr - g->base;
	if (g->page_shift < CFI_PAGE_SHIFT_MIN || g->page_shift > CFI_PAGE_SHIFT_MAX)
		return -1;
	page = off >> g->page_shift;
	key = off & ((1u << g->page_shift) - 1);
	sub = key >> CFI_SUBPAGE_SHIFT;
	key &= CFI_SUBPAGE_SIZE - 1;
	if (page >= g->npages)
		return -1;
	pg = (const void *)at(table, g->pages_off + page * sizeof(*pg), sizeof(*pg));
	if (!pg)
		return -1;
	nrows = pg->nrows;
	/* Index from the chunk's start, not the block's: the bounds checks
	 * below are then against a constant the verifier knows. */
	o = pg->block_off & (CFI_CHUNK_SIZE - 1);
	blk = at(table, pg->block_off - o, 1);
	if (!blk)
		return -1;
	x = o + 2 * sub;
	if (x > CFI_CHUNK_SIZE - 4)
		return -1;
	first = *(const __u16 *)(blk + x);
	last = *(const __u16 *)(blk + x + 2);
	if (first > last || last > nrows || last == 0)
		return -1;
	row_off = o + 2 * (CFI_SUBPAGES(g->page_shift) + 1);
	/* The last row starting at or below key: one of the sub-page's own, or
	 * the row before them, in force at its start (row 0 starts the page,
	 * so sub-page 0 has its own row at offset 0). */
	lo = first ? first - 1 : 0;
	hi = last;
	ret = cfi_rows_search((const struct cfi_chunk *)blk, row_off, lo, hi, key);
	if (ret < 0)
		return -1;
	lo = ret & 0xffff;
	if (comparisons)
		*comparisons = (__u32)ret >> 16;
	x = row_off + nrows + lo;
	if (x > CFI_CHUNK_SIZE - 1)
		return -1;
	pal_idx = blk[x];
	if (pal_idx >= pg->npalette)
		return -1;
	x = row_off + 2 * nrows + 2 * pal_idx;
	if (x > CFI_CHUNK_SIZE - 2)
		return -1;
	*rule_idx = *(const __u16 *)(blk + x);
	if (span) {
		__u64 sub_lo = g->base + ((__u64)page << g->page_shift) +
			       ((__u64)sub << CFI_SUBPAGE_SHIFT);
		__u64 lo_addr = sub_lo, hi_addr = sub_lo + CFI_SUBPAGE_SIZE;
		__u64 at;
		__u8 row_lo, row_hi;

		/* The row's part inside the sub-page: from its start, or the
		 * sub-page's if it began before, to the next row's start, or
		 * the sub-page's end (the rows of other sub-pages would take
		 * a search over first_row to place), or the table's.  Rows
		 * out of order (a broken table) give an empty span, never
		 * kept. */
		/* 64 bits, in one register for the check and the reads: a
		 * copy of a 32-bit x zero-extended apart from the one
		 * checked is unbounded to the verifier. */
		at = row_off + lo;
		barrier_var(at);
		if (at > CFI_CHUNK_SIZE - 2)
			return -1;
		row_lo = blk[at];
		row_hi = blk[at + 1];
		if (lo >= first)
			lo_addr += row_lo;
		if (lo + 1 < last)
			hi_addr = sub_lo + row_hi;
		if (hi_addr > g->end)
			hi_addr = g->end;
		span->lo = lo_addr;
		span->hi = lo_addr <= vaddr && vaddr < hi_addr ? hi_addr : lo_addr;
	}
	return 1;
}

static __always_inline int cfi_table_search(const struct cfi_table_geom *g, const void *table,
					    cfi_table_at_fn at, __u64 vaddr, __u32 *rule_idx,
					    __u32 *comparisons)
{
	return cfi_table_search_span(g, table, at, vaddr, rule_idx, comparisons, NULL);
}

#endif /* CFIPROF_TABLE_SEARCH_H */
