/*
 * The compiler's large arrays (FDEs, segments, rows), on transparent huge
 * pages.
 *
 * A compile's arrays are fresh memory, and on a VM each fresh 4 KiB page
 * costs a guest fault and, the first time, the host's: ~5 µs here, so
 * libLLVM-15's ~28 MB of arrays (~7,000 faults) were a third of its
 * compile's wall time.  Touching 40 MB took 29-58 ms in 4 KiB pages and
 * 6-11 ms in 2 MiB pages (bench/README.md, "CFI compile").
 *
 * Arrays under cfi_huge_min() bytes stay with malloc.  Larger ones are
 * mappings of their own, at 2 MiB boundaries, never malloc's memory, so
 * that advice given to one ends with it and never lingers over memory
 * malloc hands out again (khugepaged would fill such a range's holes).
 * The threshold is CFI_HUGE_MIN, and CFI_HUGE_MIN_ENABLED once huge pages
 * are on: then an array leaves malloc's 4 KiB pages early, before its
 * doublings have faulted in a megabyte of them (libLLVM-15's `cfi stats`:
 * 2,028 page faults at 1 MiB, 1,354 at 64 KiB; whole process 38.7 and
 * 37.5 ms against 35.4 and 35.1, `perf stat -r 21` twice alternated; peak
 * RSS 37.9 against 35.3 MiB, malloc keeping fewer freed chunks).
 *
 * Huge pages are a trade of memory for time: while an array grows, its
 * last huge page is partly used, up to 2 MiB of RSS more per array.  The
 * one-shot `cfiprof cfi` commands take that trade: in an arena that keeps
 * what is freed for the arrays that follow (cfi_huge_arena_enable_one_shot:
 * libLLVM-15's `cfi stats` 40.2 ms against 44.6 with an array a mapping
 * of its own, cfi_huge_pages_enable, medians of 100).
 * record and the agent compile beside everything else they hold, under a
 * memory budget (with mappings of their own, `record -a`'s peak RSS rose
 * from 27.7 to 32.4 MiB, bench/record_rss.sh), and a compile's wall time
 * there is what a walk missing its table waits for: they put the arrays in
 * one arena (cfi_huge_arena_enable), a reservation advised for huge pages
 * and cut into blocks, so arrays share huge pages instead of each rounding
 * its own up, and what is freed goes back to the kernel at once in whole
 * huge pages, the parts of huge pages still shared kept.  cc1's compile:
 * 4,394 page faults and 85-90 ms of CPU in 4 KiB pages, 1,245-1,376 and
 * 56-61 ms in the arena with every freed part given back, the same 19 MiB
 * peak RSS; then, side by side on a slower day, 59-78 ms with every part
 * given back against 35-48 with every shared part kept, at 22 MB peak RSS
 * against 19-21 (bench/README.md, "Miss to loaded").
 */
#ifndef CFI_HUGEMEM_H
#define CFI_HUGEMEM_H

#include <stddef.h>

#define CFI_HUGE_MIN ((size_t)1 << 20)
#define CFI_HUGE_MIN_ENABLED ((size_t)64 << 10)
/* The arena's first bytes, kept resident once touched. */
#define CFI_HUGE_ARENA_KEEP ((size_t)2 << 20)

/* The size from which arrays are mappings of their own. */
size_t cfi_huge_min(void);

/* From now on, arrays mapped anew are advised MADV_HUGEPAGE, and arrays
 * from CFI_HUGE_MIN_ENABLED bytes are mapped.  Call before any array is
 * allocated (the setting is read without a lock, and an array's size
 * says how it was allocated). */
void cfi_huge_pages_enable(void);

/* From now on, arrays from CFI_HUGE_MIN_ENABLED bytes are blocks of one
 * arena, a reservation of address space advised MADV_HUGEPAGE, used by
 * every thread; a freed block's memory is given back at once (the arena's
 * resident memory follows its blocks in use), but for the arena's first
 * CFI_HUGE_ARENA_KEEP bytes, which small compiles use again and again,
 * and for the parts of huge pages that blocks in use share.
 * cfi_huge_zalloc's blocks are zeroes, kept part or not.  When the arena
 * is out of space, arrays are mappings of their own as before.  Call before any array is allocated, as above.
 * 0, or -errno if the address space could not be reserved (arrays then
 * stay as they were). */
int cfi_huge_arena_enable(void);

/* The arena for a one-shot compile, where time counts and not memory
 * (`cfiprof cfi`): as cfi_huge_arena_enable, but a freed block's memory
 * is kept for the arrays that follow, never given back, and a table's
 * blob is a block too (cfi_huge_map_zeroes).  cfi_huge_zalloc's blocks
 * are still zeroes.  0 or -errno, as above. */
int cfi_huge_arena_enable_one_shot(void);

/* Gives the arena's kept part back too, if no array is in the arena: once
 * a burst of compiles is over (the table workers, when their queue runs
 * dry and none is compiling). */
void cfi_huge_arena_trim(void);

/* realloc for these arrays: `old_size` is the size `p` was given (0 with
 * p NULL), `new_size` the size wanted.  The contents up to the smaller
 * size are kept.  Returns the array, or NULL with `p` untouched. */
void *cfi_huge_resize(void *p, size_t old_size, size_t new_size);

/* calloc for these arrays: `size` bytes of zeroes (pages a large one
 * never touches cost nothing).  Free with cfi_huge_free. */
void *cfi_huge_zalloc(size_t size);

/* Frees an array of `size` bytes (the last size given for it). */
void cfi_huge_free(void *p, size_t size);

/* A mapping of its own of `size` bytes of zeroes, for memory that
 * outlives the compile (a table's blob, written at random in the finish:
 * 626 pages of libLLVM-15's, each a fault in 4 KiB pages), at a 2 MiB
 * boundary and advised MADV_HUGEPAGE, never in the arena (it holds no
 * block there while it lives).  With the arena, from 2 MiB and to the
 * 4 KiB page: its whole 2 MiB are huge pages, the rest is not rounded
 * up.  Where time counts more than memory (cfi_huge_pages_enable), from
 * CFI_HUGE_MIN_ENABLED and to the 2 MiB page.  NULL otherwise (huge pages
 * not enabled, or smaller) or if mapping fails: the caller then uses
 * malloc.  In the one-shot arena, a block of it.  Free with cfi_huge_unmap
 * and the same size. */
void *cfi_huge_map_zeroes(size_t size);
void cfi_huge_unmap(void *p, size_t size);

#endif
