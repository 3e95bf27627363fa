#include "hugemem.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static bool huge_pages;
static size_t huge_min = CFI_HUGE_MIN;

void cfi_huge_pages_enable(void)
{
	huge_pages = true;
	huge_min = CFI_HUGE_MIN_ENABLED;
}

size_t cfi_huge_min(void)
{
	return huge_min;
}

static size_t mapped_len(size_t size)
{
	return (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

/* `len` bytes (a multiple of HUGE_PAGE) of fresh memory at a 2 MiB
 * boundary, so that every 2 MiB of it can be one page. */
static void *map_aligned(size_t len)
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
	if (huge_pages)
		madvise(p + head, len, MADV_HUGEPAGE);
	return p + head;
}

void *cfi_huge_resize(void *p, size_t old_size, size_t new_size)
{
	bool was_mapped = p && old_size >= huge_min;
	void *q;

	if (!p)
		old_size = 0;
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
	/* A fresh mapping is zeroes already. */
	return map_aligned(mapped_len(size));
}

void cfi_huge_free(void *p, size_t size)
{
	if (!p)
		return;
	if (size >= huge_min)
		munmap(p, mapped_len(size));
	else
		free(p);
}
