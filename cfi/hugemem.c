#include "hugemem.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static bool huge_pages;
static size_t huge_min = CFI_HUGE_MIN;
/* cfi_huge_arena_enable_one_shot: freed blocks keep their memory. */
static bool keep_freed;

/*
 * The arena (cfi_huge_arena_enable): one reservation of address space,
 * advised for huge pages, cut into blocks of whole granules.  Blocks tile
 * [0, top) in address order, used or free, and no two free blocks touch.
 * A free block gives its huge pages back to the kernel when it is freed,
 * so they read as zeroes, but for the arena's first CFI_HUGE_ARENA_KEEP
 * bytes, one huge page, kept until a trim, and for its parts of huge pages
 * that blocks in use share: giving such a part back splits the huge page,
 * and the block that takes the hole next faults there in 4 KiB pages
 * (~13 µs a page on this VM, against ~0.2 in 2 MiB pages).  cc1's compile:
 * 1,357-2,569 page faults and 59-78 ms of CPU with every part given back,
 * 688-696 and 35-48 ms with every part kept, at 22.1-22.8 MB of peak RSS
 * against 19.1-21.2; `record -a` (bench/record_rss.sh) peaked at 32.7
 * MiB so, over its 32 MiB target, until the compiler's rows took 4 bytes
 * of address instead of 8: 30.0 MiB now (bench/README.md, "2026-12-04
 * (night)", under "Miss to loaded").  Kept parts are not zeroes:
 * cfi_huge_zalloc clears a block's partial huge pages.
 * Most tables are small, their arrays a few blocks of 64 KiB: when those
 * went back after each compile, the next compile took a fresh huge page,
 * the kernel clearing 2 MiB for it, and `record -a`'s compile CPU for all
 * tables rose (bench/lazy.sh: 104 to 126 ms, medians of 5) though cc1's
 * fell.  Compiles run in several threads at once (two table workers, each
 * with a helper), so one lock guards the blocks; it is taken only when an
 * array is made, grown or freed, a few dozen times a compile.
 *
 * A one-shot compile (cfi_huge_arena_enable_one_shot) gives nothing back:
 * a freed block's memory, huge pages already faulted in, serves the arrays
 * that follow, and cfi_huge_zalloc clears what of a block was used
 * before (below `dirty`).  With an array a mapping of its own instead,
 * libLLVM-15's compile faulted in 22 huge pages, 12,000 pages in all, for
 * arrays of which several are a few hundred KiB, and a freed array's
 * pages went back to the kernel to be cleared again for the next.
 */
#define ARENA_SPAN ((size_t)64 << 30)
#define ARENA_GRANULE ((size_t)64 << 10)
#define ARENA_BLOCKS 256

struct arena_block {
	size_t off, len;
	bool used;
};

static struct {
	pthread_mutex_t lock;
	uint8_t *base;
	struct arena_block b[ARENA_BLOCKS];
	int n;
	size_t top;
	/* The end of what was ever written since the last block at the top was
	 * freed: what freeing the top gives back. */
	size_t high;
	/* The end of what any block ever reached: past it, untouched zeroes. */
	size_t dirty;
} arena = { .lock = PTHREAD_MUTEX_INITIALIZER };

void cfi_huge_pages_enable(void)
{
	huge_pages = true;
	huge_min = CFI_HUGE_MIN_ENABLED;
}

int cfi_huge_arena_enable(void)
{
	size_t span = ARENA_SPAN + HUGE_PAGE;
	uint8_t *p, *a;

	if (arena.base)
		return 0;
	/* Address space only: MAP_NORESERVE, and nothing is touched here. */
	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	a = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + ARENA_SPAN, (size_t)(p + span - (a + ARENA_SPAN)));
	/* Advice only: with THP off the arena works in 4 KiB pages. */
	madvise(a, ARENA_SPAN, MADV_HUGEPAGE);
	arena.base = a;
	huge_min = CFI_HUGE_MIN_ENABLED;
	return 0;
}

int cfi_huge_arena_enable_one_shot(void)
{
	int ret = cfi_huge_arena_enable();

	if (ret)
		return ret;
	huge_pages = true;
	keep_freed = true;
	return 0;
}

void cfi_huge_arena_trim(void)
{
	if (!arena.base)
		return;
	pthread_mutex_lock(&arena.lock);
	if (!arena.n)
		madvise(arena.base, CFI_HUGE_ARENA_KEEP, MADV_DONTNEED);
	pthread_mutex_unlock(&arena.lock);
}

static bool in_arena(const void *p)
{
	return arena.base && (const uint8_t *)p >= arena.base &&
	       (const uint8_t *)p < arena.base + ARENA_SPAN;
}

static size_t granules(size_t size)
{
	return (size + ARENA_GRANULE - 1) & ~(ARENA_GRANULE - 1);
}

static size_t huge_down(size_t off)
{
	return off & ~(HUGE_PAGE - 1);
}

static size_t huge_up(size_t off)
{
	return (off + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

static void arena_remove(int i)
{
	memmove(&arena.b[i], &arena.b[i + 1], (size_t)(arena.n - i - 1) * sizeof(arena.b[0]));
	arena.n--;
}

static int arena_find(const void *p)
{
	size_t off = (size_t)((const uint8_t *)p - arena.base);

	for (int i = 0; i < arena.n; i++)
		if (arena.b[i].off == off && arena.b[i].used)
			return i;
	/* Not a block handed out: the caller's bug, not a state to go on from. */
	abort();
}

/* The first free block that fits, split, or a new block at the top; NULL
 * when the arena is out of blocks or space. */
static void *arena_alloc_locked(size_t len)
{
	for (int i = 0; i < arena.n; i++) {
		struct arena_block *b = &arena.b[i];

		if (b->used || b->len < len)
			continue;
		if (b->len > len) {
			if (arena.n == ARENA_BLOCKS)
				return NULL;
			memmove(b + 2, b + 1, (size_t)(arena.n - i - 1) * sizeof(*b));
			arena.n++;
			b[1] = (struct arena_block){ b->off + len, b->len - len, false };
			b->len = len;
		}
		b->used = true;
		return arena.base + b->off;
	}
	if (arena.n == ARENA_BLOCKS || len > ARENA_SPAN - arena.top)
		return NULL;
	arena.b[arena.n++] = (struct arena_block){ arena.top, len, true };
	arena.top += len;
	if (arena.high < arena.top)
		arena.high = arena.top;
	if (arena.dirty < arena.top)
		arena.dirty = arena.top;
	return arena.base + arena.top - len;
}

static void *arena_alloc(size_t size)
{
	void *p;

	pthread_mutex_lock(&arena.lock);
	p = arena_alloc_locked(granules(size));
	pthread_mutex_unlock(&arena.lock);
	return p;
}

static void arena_free(void *p)
{
	size_t lo, hi;
	int i;

	pthread_mutex_lock(&arena.lock);
	i = arena_find(p);
	arena.b[i].used = false;
	if (i + 1 < arena.n && !arena.b[i + 1].used) {
		arena.b[i].len += arena.b[i + 1].len;
		arena_remove(i + 1);
	}
	if (i > 0 && !arena.b[i - 1].used) {
		arena.b[i - 1].len += arena.b[i].len;
		arena_remove(i--);
	}
	lo = arena.b[i].off;
	hi = lo + arena.b[i].len;
	if (keep_freed) {
		if (i == arena.n - 1) {
			arena_remove(i);
			arena.top = arena.high = lo;
		}
		pthread_mutex_unlock(&arena.lock);
		return;
	}
	if (i == arena.n - 1) {
		arena_remove(i);
		arena.top = lo;
		/* To the end of the huge page the highest block reached: the
		 * fault that brought it in brought all of it. */
		hi = huge_up(arena.high);
		arena.high = lo;
	} else {
		hi = huge_down(hi);
	}
	/* Back to the kernel at once, holes between blocks in use included,
	 * in whole huge pages: the parts of huge pages that blocks in use
	 * share stay (above). */
	lo = huge_up(lo);
	if (lo < CFI_HUGE_ARENA_KEEP)
		lo = CFI_HUGE_ARENA_KEEP;
	if (hi > lo)
		madvise(arena.base + lo, hi - lo, MADV_DONTNEED);
	pthread_mutex_unlock(&arena.lock);
}

/* Grows the block at p in place to `size` bytes when the space after it
 * is free or unused. */
static bool arena_grow(void *p, size_t size)
{
	size_t len = granules(size);
	bool grown = true;
	int i;

	pthread_mutex_lock(&arena.lock);
	i = arena_find(p);
	struct arena_block *b = &arena.b[i];
	if (b->len >= len) {
		/* already large enough */
	} else if (i == arena.n - 1 && len - b->len <= ARENA_SPAN - arena.top) {
		arena.top = b->off + len;
		if (arena.high < arena.top)
			arena.high = arena.top;
		if (arena.dirty < arena.top)
			arena.dirty = arena.top;
		b->len = len;
	} else if (i + 1 < arena.n && !b[1].used && b->len + b[1].len >= len) {
		size_t rest = b->len + b[1].len - len;

		b->len = len;
		if (rest) {
			b[1].off = b->off + len;
			b[1].len = rest;
		} else {
			arena_remove(i + 1);
		}
	} else {
		grown = false;
	}
	pthread_mutex_unlock(&arena.lock);
	return grown;
}

size_t cfi_huge_min(void)
{
	return huge_min;
}

static size_t mapped_len(size_t size)
{
	return (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

/* `len` bytes (a multiple of the page size) of fresh memory at a 2 MiB
 * boundary, so that every whole 2 MiB of it can be one page, advised so
 * when `advise`. */
static void *map_aligned_advised(size_t len, bool advise)
{
	size_t span = len + HUGE_PAGE, head;
	uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	head = (HUGE_PAGE - ((uintptr_t)p & (HUGE_PAGE - 1))) & (HUGE_PAGE - 1);
	if (head)
		munmap(p, head);
	if (span - head - len)
		munmap(p + head + len, span - head - len);
	/* Advice only: without it (THP "never") the array is still right. */
	if (advise)
		madvise(p + head, len, MADV_HUGEPAGE);
	return p + head;
}

static void *map_aligned(size_t len)
{
	return map_aligned_advised(len, huge_pages);
}

void *cfi_huge_resize(void *p, size_t old_size, size_t new_size)
{
	bool was_mapped = p && old_size >= huge_min;
	void *q;

	if (!p)
		old_size = 0;
	if (arena.base) {
		size_t keep = old_size < new_size ? old_size : new_size;

		if (new_size >= huge_min) {
			if (in_arena(p) && arena_grow(p, new_size))
				return p;
			q = arena_alloc(new_size);
		} else {
			q = in_arena(p) ? malloc(new_size ? new_size : 1) : NULL;
		}
		if (q) {
			if (p)
				memcpy(q, p, keep);
			cfi_huge_free(p, old_size);
			return q;
		}
		if (in_arena(p))
			return NULL;
		/* Out of the arena: malloc and mappings of their own, below. */
	}
	if (new_size < huge_min) {
		if (!was_mapped)
			return realloc(p, new_size);
		q = malloc(new_size);
		if (!q)
			return NULL;
		memcpy(q, p, new_size);
		munmap(p, mapped_len(old_size));
		return q;
	}
	if (was_mapped && mapped_len(new_size) <= mapped_len(old_size))
		return p;
	q = map_aligned(mapped_len(new_size));
	if (!q)
		return NULL;
	if (!was_mapped) {
		if (p)
			memcpy(q, p, old_size);
		free(p);
		return q;
	}
	/* Move the pages rather than copy them: the old array's huge pages
	 * stay whole at the new, equally aligned, place. */
	if (mremap(p, mapped_len(old_size), mapped_len(old_size), MREMAP_MAYMOVE | MREMAP_FIXED,
		   q) == MAP_FAILED) {
		memcpy(q, p, old_size);
		munmap(p, mapped_len(old_size));
	}
	return q;
}

void *cfi_huge_zalloc(size_t size)
{
	if (size < huge_min)
		return calloc(1, size ? size : 1);
	if (arena.base && keep_freed) {
		size_t dirty, off;
		uint8_t *p;

		pthread_mutex_lock(&arena.lock);
		dirty = arena.dirty;
		p = arena_alloc_locked(granules(size));
		pthread_mutex_unlock(&arena.lock);
		if (p) {
			off = (size_t)(p - arena.base);
			if (off < dirty)
				memset(p, 0, (off + size < dirty ? off + size : dirty) - off);
			return p;
		}
	} else if (arena.base) {
		uint8_t *p = arena_alloc(size);

		if (p) {
			size_t off = (size_t)(p - arena.base), end = off + size;
			size_t head = huge_up(off), tail = huge_down(end);

			/* Free arena memory reads as zeroes in the huge pages
			 * wholly inside the block; the part kept and the
			 * parts of shared huge pages may not. */
			if (head < CFI_HUGE_ARENA_KEEP)
				head = CFI_HUGE_ARENA_KEEP;
			if (head >= tail) {
				memset(p, 0, size);
			} else {
				memset(p, 0, head - off);
				memset(arena.base + tail, 0, end - tail);
			}
			return p;
		}
	}
	/* A fresh mapping is zeroes already. */
	return map_aligned(mapped_len(size));
}

void cfi_huge_free(void *p, size_t size)
{
	if (!p)
		return;
	if (in_arena(p))
		arena_free(p);
	else if (size >= huge_min)
		munmap(p, mapped_len(size));
	else
		free(p);
}

/* cfi_huge_map_zeroes's length: to the 2 MiB page where time counts
 * more than memory (cfi_huge_pages_enable), else to the 4 KiB page. */
static size_t zeroes_len(size_t size)
{
	return huge_pages ? mapped_len(size) : (size + 4095) & ~(size_t)4095;
}

void *cfi_huge_map_zeroes(size_t size)
{
	if (!(huge_pages || arena.base) || size < (huge_pages ? huge_min : HUGE_PAGE))
		return NULL;
	/* In the one-shot arena, memory the compile's arrays freed: a fresh
	 * mapping's huge pages had to be found and cleared, libLLVM-15's
	 * finish 6.75 ms against 5.15 (medians of 100, bench/README.md). */
	if (keep_freed)
		return cfi_huge_zalloc(size);
	return map_aligned_advised(zeroes_len(size), true);
}

void cfi_huge_unmap(void *p, size_t size)
{
	if (in_arena(p))
		arena_free(p);
	else if (p)
		munmap(p, zeroes_len(size));
}
