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
 * Arrays under CFI_HUGE_MIN stay with malloc.  Larger ones are mappings of
 * their own, at 2 MiB boundaries, never malloc's memory, so that advice
 * given to one ends with it and never lingers over memory malloc hands out
 * again (khugepaged would fill such a range's holes).
 *
 * Huge pages are a trade of memory for time: while an array grows, its
 * last huge page is partly used, up to 2 MiB of RSS more per array.  So
 * they are asked for only where time counts and memory does not: the
 * one-shot `cfiprof cfi` commands turn them on; record and the agent,
 * which compile beside everything else they hold, keep 4 KiB pages (with
 * huge pages `record -a`'s peak RSS rose from 27.7 to 32.4 MiB,
 * bench/record_rss.sh).
 */
#ifndef CFI_HUGEMEM_H
#define CFI_HUGEMEM_H

#include <stddef.h>

#define CFI_HUGE_MIN ((size_t)1 << 20)

/* From now on, arrays mapped anew are advised MADV_HUGEPAGE.  Call before
 * any compile starts (the setting is read without a lock). */
void cfi_huge_pages_enable(void);

/* realloc for these arrays: `old_size` is the size `p` was given (0 with
 * p NULL), `new_size` the size wanted.  The contents up to the smaller
 * size are kept.  Returns the array, or NULL with `p` untouched. */
void *cfi_huge_resize(void *p, size_t old_size, size_t new_size);

/* calloc for these arrays: `size` bytes of zeroes (pages a large one
 * never touches cost nothing).  Free with cfi_huge_free. */
void *cfi_huge_zalloc(size_t size);

/* Frees an array of `size` bytes (the last size given for it). */
void cfi_huge_free(void *p, size_t size);

#endif
