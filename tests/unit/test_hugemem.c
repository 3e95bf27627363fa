/* The compiler's large arrays (cfi/hugemem.c): contents kept across every
 * kind of resize, large arrays mapped apart at 2 MiB boundaries and
 * advised for huge pages, small ones left to malloc. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "cfi/hugemem.h"

#define MIB ((size_t)1 << 20)

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

static void check(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 31 + seed))
			cr_assert_fail("byte %zu of %zu is %u, was %u", i, n, p[i], (uint8_t)(i * 31 + seed));
}

/* The flags smaps shows for the mapping holding p ("hg": MADV_HUGEPAGE),
 * with the mapping's bounds. */
static bool vma_of(const void *p, uintptr_t *lo, uintptr_t *hi, char *flags, size_t flags_len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false, found = false;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			in = (uintptr_t)p >= a && (uintptr_t)p < b;
			if (in) {
				*lo = a;
				*hi = b;
			}
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, flags_len, "%s", line + 8);
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

Test(hugemem, small_arrays_stay_with_malloc)
{
	uint8_t *p = cfi_huge_resize(NULL, 0, 1000);

	cr_assert_not_null(p);
	fill(p, 1000, 1);
	p = cfi_huge_resize(p, 1000, 64 * 1024);
	cr_assert_not_null(p);
	check(p, 1000, 1);
	/* malloc's block: not at a 2 MiB boundary's mapping of its own. */
	cr_assert_neq((uintptr_t)p & (2 * MIB - 1), 0);
	cfi_huge_free(p, 64 * 1024);
}

Test(hugemem, growing_past_the_threshold_keeps_the_contents)
{
	size_t size = 4096, next;
	uint8_t *p = cfi_huge_resize(NULL, 0, size);

	cr_assert_not_null(p);
	fill(p, size, 7);
	/* 4 KiB to 32 MiB by doubling: malloc, then malloc to a mapping,
	 * then mapping to mapping (moved or grown in place). */
	for (; size < 32 * MIB; size = next) {
		next = size * 2;
		p = cfi_huge_resize(p, size, next);
		cr_assert_not_null(p, "resize to %zu", next);
		check(p, size, 7);
		fill(p, next, 7);
		if (next >= cfi_huge_min())
			cr_assert_eq((uintptr_t)p & (2 * MIB - 1), 0, "%zu bytes at %p", next, p);
	}
	cfi_huge_free(p, size);
}

Test(hugemem, large_arrays_are_advised_for_huge_pages_once_enabled)
{
	size_t size = 6 * MIB + 123;
	uint8_t *p = cfi_huge_resize(NULL, 0, size);
	uintptr_t lo, hi;
	char flags[256];

	cr_assert_not_null(p);
	fill(p, size, 3);
	cr_assert(vma_of(p, &lo, &hi, flags, sizeof(flags)));
	cr_assert_not(strstr(flags, " hg"), "advised before being enabled: VmFlags:%s", flags);
	cfi_huge_free(p, size);

	cfi_huge_pages_enable();
	p = cfi_huge_resize(NULL, 0, size);
	cr_assert_not_null(p);
	fill(p, size, 3);
	cr_assert(vma_of(p, &lo, &hi, flags, sizeof(flags)));
	cr_assert(strstr(flags, " hg"), "VmFlags:%s", flags);
	cr_assert_eq(lo, (uintptr_t)p);
	cr_assert_eq(hi - lo, 8 * MIB, "mapped %zu bytes for %zu", (size_t)(hi - lo), size);
	cfi_huge_free(p, size);
	/* Gone, not handed back to malloc. */
	cr_assert_not(vma_of(p, &lo, &hi, flags, sizeof(flags)) && lo <= (uintptr_t)p &&
		      (uintptr_t)p < hi && strstr(flags, " hg"));

	/* Enabled, arrays leave malloc from a smaller size. */
	cr_assert_eq(cfi_huge_min(), CFI_HUGE_MIN_ENABLED);
	size = CFI_HUGE_MIN_ENABLED;
	p = cfi_huge_zalloc(size);
	cr_assert_not_null(p);
	cr_assert_eq((uintptr_t)p & (2 * MIB - 1), 0, "%zu bytes at %p", size, p);
	cr_assert(vma_of(p, &lo, &hi, flags, sizeof(flags)));
	cr_assert(strstr(flags, " hg"), "VmFlags:%s", flags);
	cfi_huge_free(p, size);
	p = cfi_huge_resize(NULL, 0, CFI_HUGE_MIN_ENABLED - 1);
	cr_assert_not_null(p);
	cr_assert_neq((uintptr_t)p & (2 * MIB - 1), 0, "malloc's, below the threshold");
	cfi_huge_free(p, CFI_HUGE_MIN_ENABLED - 1);
}

Test(hugemem, shrinking_below_the_threshold_returns_to_malloc)
{
	size_t big = 3 * MIB, small = 100 * 1024;
	uint8_t *p = cfi_huge_resize(NULL, 0, big);

	cr_assert_not_null(p);
	fill(p, big, 9);
	p = cfi_huge_resize(p, big, small);
	cr_assert_not_null(p);
	check(p, small, 9);
	cr_assert_neq((uintptr_t)p & (2 * MIB - 1), 0);
	cfi_huge_free(p, small);
}

Test(hugemem, growing_within_the_mapping_keeps_the_address)
{
	uint8_t *p = cfi_huge_resize(NULL, 0, 3 * MIB), *q;

	cr_assert_not_null(p);
	fill(p, 3 * MIB, 5);
	/* Still 4 MiB mapped: nothing moves. */
	q = cfi_huge_resize(p, 3 * MIB, 4 * MIB);
	cr_assert_eq(q, p);
	check(q, 3 * MIB, 5);
	cfi_huge_free(q, 4 * MIB);
}
