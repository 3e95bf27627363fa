/* The compiler's large arrays (cfi/hugemem.c): contents kept across every
 * kind of resize, large arrays mapped apart at 2 MiB boundaries and
 * advised for huge pages, small ones left to malloc; in the arena of
 * record and the agent, one reservation cut into blocks, whose freed
 * memory goes back to the kernel and reads as zeroes. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "cfi/hugemem.h"
#include "tests/unit/smaps.h"

#define MIB ((size_t)1 << 20)

/* The flags smaps shows for the mapping holding p ("hg": MADV_HUGEPAGE),
 * with the mapping's bounds. */
static bool vma_of(const void *p, uintptr_t *lo, uintptr_t *hi, char *flags, size_t flags_len)
{
	struct smaps_vma v;

	if (!smaps_find(p, 0, &v))
		return false;
	*lo = v.lo;
	*hi = v.hi;
	snprintf(flags, flags_len, "%s", v.flags);
	return true;
}

/* The resident bytes of the mapping holding p. */
static size_t rss_of(const void *p)
{
	struct smaps_vma v;

	cr_assert(smaps_find(p, 0, &v), "no mapping holds %p", p);
	return v.rss;
}

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

/* Resizes an array filled with `seed`'s bytes from `size` to `next`:
 * the first `size` bytes kept, then all filled again. */
static uint8_t *grow_checked(uint8_t *p, size_t size, size_t next, unsigned seed)
{
	p = cfi_huge_resize(p, size, next);
	cr_assert_not_null(p, "resize to %zu", next);
	check(p, size < next ? size : next, seed);
	fill(p, next, seed);
	return p;
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
		p = grow_checked(p, size, next, 7);
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

Test(hugemem_arena, arrays_share_one_reservation_advised_for_huge_pages)
{
	uint8_t *a, *b;
	uintptr_t lo, hi, lo2, hi2;
	char flags[256];

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	cr_assert_eq(cfi_huge_arena_enable(), 0, "a second call changes nothing");
	cr_assert_eq(cfi_huge_min(), CFI_HUGE_MIN_ENABLED);
	a = cfi_huge_resize(NULL, 0, 100 * 1024);
	b = cfi_huge_zalloc(3 * MIB);
	cr_assert(a && b);
	fill(a, 100 * 1024, 1);
	fill(b, 3 * MIB, 2);
	cr_assert(vma_of(a, &lo, &hi, flags, sizeof(flags)));
	cr_assert(strstr(flags, " hg"), "VmFlags:%s", flags);
	cr_assert(vma_of(b, &lo2, &hi2, flags, sizeof(flags)));
	cr_assert(lo == lo2 && hi == hi2, "two arrays, two mappings");
	cr_assert_geq(hi - lo, (uintptr_t)64 << 30);
	/* Below the threshold: malloc's, outside the arena. */
	uint8_t *small = cfi_huge_resize(NULL, 0, CFI_HUGE_MIN_ENABLED - 1);
	cr_assert(small && ((uintptr_t)small < lo || (uintptr_t)small >= hi));
	cfi_huge_free(small, CFI_HUGE_MIN_ENABLED - 1);
	check(a, 100 * 1024, 1);
	check(b, 3 * MIB, 2);
	cfi_huge_free(a, 100 * 1024);
	cfi_huge_free(b, 3 * MIB);
}

Test(hugemem_arena, growing_keeps_the_contents_in_place_or_moved)
{
	size_t size = 4096, next;
	uint8_t *p, *other, *q;

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	p = cfi_huge_resize(NULL, 0, size);
	fill(p, size, 7);
	/* Two arrays growing in turn, as the compile's do: each in turn is
	 * the last block (grown in place) or not (moved). */
	other = cfi_huge_resize(NULL, 0, 64 * 1024);
	cr_assert_not_null(other);
	fill(other, 64 * 1024, 8);
	for (; size < 32 * MIB; size = next) {
		next = size * 2;
		p = grow_checked(p, size, next, 7);
		other = grow_checked(other, size < 64 * 1024 ? 64 * 1024 : size,
				     next < 64 * 1024 ? 64 * 1024 : next, 8);
	}
	/* The last block grows where it is. */
	q = cfi_huge_resize(other, size, size + 3 * MIB);
	cr_assert_eq(q, other);
	check(q, size, 8);
	/* And back to malloc, contents kept. */
	q = cfi_huge_resize(q, size + 3 * MIB, 1000);
	cr_assert_not_null(q);
	check(q, 1000, 8);
	cfi_huge_free(q, 1000);
	check(p, size, 7);
	cfi_huge_free(p, size);
}

Test(hugemem_arena, a_block_grows_into_the_free_block_after_it)
{
	uint8_t *a, *b, *c, *q;

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	a = cfi_huge_resize(NULL, 0, MIB);
	b = cfi_huge_resize(NULL, 0, 2 * MIB);
	c = cfi_huge_resize(NULL, 0, MIB);
	cr_assert(a && b && c);
	cr_assert(a < b && b < c, "blocks cut in address order");
	fill(a, MIB, 4);
	cfi_huge_free(b, 2 * MIB);
	q = cfi_huge_resize(a, MIB, 3 * MIB);
	cr_assert_eq(q, a, "moved though b's space was free");
	check(q, MIB, 4);
	cfi_huge_free(q, 3 * MIB);
	cfi_huge_free(c, MIB);
}

/* What the arena frees it gives back, but for its first huge page: a hole
 * between blocks in use as well as the top; and cfi_huge_zalloc's blocks
 * read as zeroes, in the part kept too (the compiler's hash slots come
 * from it). */
Test(hugemem_arena, freed_memory_is_given_back_and_reads_as_zeroes)
{
	size_t big = 8 * MIB, before;
	uint8_t *a, *b, *c;

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	a = cfi_huge_resize(NULL, 0, big);
	b = cfi_huge_resize(NULL, 0, big);
	c = cfi_huge_resize(NULL, 0, 64 * 1024);
	cr_assert(a && b && c);
	memset(a, 0xa5, big);
	memset(b, 0x5a, big);
	memset(c, 0x33, 64 * 1024);
	before = rss_of(a);
	cr_assert_geq(before, 2 * big);
	/* a is a hole now, below b. */
	cfi_huge_free(a, big);
	/* All of it but the first huge page, which the arena keeps. */
	cr_assert_leq(rss_of(b), before - (big - CFI_HUGE_ARENA_KEEP),
		      "a hole of %zu bytes kept: %zu then %zu resident", big, before, rss_of(b));
	uint8_t *z = cfi_huge_zalloc(big);
	cr_assert_eq(z, a, "the hole is taken again");
	for (size_t i = 0; i < big; i += 4096)
		cr_assert_eq(z[i], 0, "byte %zu of the hole is %#x", i, z[i]);
	/* The top: c's and b's pages go too. */
	cfi_huge_free(c, 64 * 1024);
	cfi_huge_free(b, big);
	cfi_huge_free(z, big);
	cr_assert_leq(rss_of(a), CFI_HUGE_ARENA_KEEP, "%zu bytes resident with nothing in use",
		      rss_of(a));
	z = cfi_huge_zalloc(big + 64 * 1024);
	cr_assert_eq(z, a);
	for (size_t i = 0; i < big + 64 * 1024; i += 4096)
		cr_assert_eq(z[i], 0, "byte %zu is %#x", i, z[i]);
	memset(z, 0x77, big);
	/* Trimming with an array in the arena keeps it whole. */
	cfi_huge_arena_trim();
	for (size_t i = 0; i < big; i += 4096)
		cr_assert_eq(z[i], 0x77, "byte %zu is %#x", i, z[i]);
	cfi_huge_free(z, big + 64 * 1024);
	cr_assert_geq(rss_of(a), CFI_HUGE_ARENA_KEEP / 2, "the kept part went without a trim");
	/* With none, the kept part goes too. */
	cfi_huge_arena_trim();
	cr_assert_eq(rss_of(a), 0, "%zu bytes resident after the trim", rss_of(a));
}

/* A hole's parts of the huge pages blocks in use share stay (the next
 * block there would fault them in 4 KiB pages): what goes is the whole
 * huge page between.  They keep what was written, and
 * cfi_huge_zalloc clears them. */
Test(hugemem_arena, a_hole_keeps_small_parts_of_shared_huge_pages_and_zalloc_clears_them)
{
	size_t half = MIB / 2, before, after;
	uint8_t *pad, *a, *b, *z;

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	pad = cfi_huge_resize(NULL, 0, 3 * MIB + half);
	a = cfi_huge_resize(NULL, 0, 3 * MIB);
	b = cfi_huge_resize(NULL, 0, 64 * 1024);
	cr_assert(pad && a && b);
	/* a: [3.5, 6.5) MiB, its first and last half MiB in huge pages it
	 * shares with pad and b. */
	cr_assert_eq(a, pad + 3 * MIB + half);
	cr_assert_eq(b, a + 3 * MIB);
	fill(pad, 3 * MIB + half, 1);
	memset(a, 0xa5, 3 * MIB);
	fill(b, 64 * 1024, 2);
	before = rss_of(a);
	cfi_huge_free(a, 3 * MIB);
	after = rss_of(b);
	cr_assert_eq(after, before - 2 * MIB, "%zu bytes resident, then %zu: want the one huge "
		     "page wholly free given back", before, after);
	z = cfi_huge_zalloc(3 * MIB);
	cr_assert_eq(z, a, "the hole is taken again");
	for (size_t i = 0; i < 3 * MIB; i++)
		if (z[i])
			cr_assert_fail("byte %zu of the block is %#x", i, z[i]);
	check(pad, 3 * MIB + half, 1);
	check(b, 64 * 1024, 2);
	cfi_huge_free(z, 3 * MIB);
	cfi_huge_free(b, 64 * 1024);
	cfi_huge_free(pad, 3 * MIB + half);
}

/* A larger part of a shared huge page stays too (given back, the huge
 * page would be split, and the block that takes the hole next would fault
 * there in 4 KiB pages): only the huge pages wholly inside the hole go.
 * The next block there reads as zeroes from cfi_huge_zalloc, and what the
 * blocks in use beside it hold is kept. */
Test(hugemem_arena, a_hole_keeps_large_parts_of_shared_huge_pages_too)
{
	size_t before, after;
	uint8_t *pad, *a, *b, *x;

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	pad = cfi_huge_resize(NULL, 0, 2 * MIB);
	a = cfi_huge_resize(NULL, 0, 3 * MIB + MIB / 2);
	b = cfi_huge_resize(NULL, 0, 64 * 1024);
	cr_assert(pad && a && b);
	/* a: [2, 5.5) MiB, its last 1.5 MiB in the huge page it shares with b */
	cr_assert_eq(a, pad + 2 * MIB);
	cr_assert_eq(b, a + 3 * MIB + MIB / 2);
	fill(pad, 2 * MIB, 1);
	memset(a, 0xa5, 3 * MIB + MIB / 2);
	fill(b, 64 * 1024, 2);
	before = rss_of(a);
	cfi_huge_free(a, 3 * MIB + MIB / 2);
	after = rss_of(b);
	cr_assert_eq(after, before - 2 * MIB, "%zu bytes resident, then %zu: want the one huge "
		     "page wholly free given back, the 1.5 MiB shared with b kept", before, after);
	x = cfi_huge_zalloc(3 * MIB + MIB / 2);
	cr_assert_eq(x, a);
	for (size_t i = 0; i < 3 * MIB + MIB / 2; i++)
		if (x[i])
			cr_assert_fail("byte %zu of the block is %#x", i, x[i]);
	fill(x, 3 * MIB + MIB / 2, 3);
	check(b, 64 * 1024, 2);
	check(pad, 2 * MIB, 1);
	check(x, 3 * MIB + MIB / 2, 3);
	cfi_huge_free(x, 3 * MIB + MIB / 2);
	cfi_huge_free(b, 64 * 1024);
	cfi_huge_free(pad, 2 * MIB);
}

Test(hugemem_arena, a_free_block_is_cut_for_smaller_arrays)
{
	uint8_t *a, *b, *x, *y;

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	a = cfi_huge_resize(NULL, 0, 8 * MIB);
	b = cfi_huge_resize(NULL, 0, MIB);
	cr_assert(a && b);
	cfi_huge_free(a, 8 * MIB);
	/* Both in a's place, one after the other, not the second past b. */
	x = cfi_huge_resize(NULL, 0, MIB);
	y = cfi_huge_resize(NULL, 0, 2 * MIB);
	cr_assert_eq(x, a);
	cr_assert_eq(y, a + MIB);
	cfi_huge_free(x, MIB);
	cfi_huge_free(y, 2 * MIB);
	cfi_huge_free(b, MIB);
}

/* Zeroes of a mapping of its own (a table's blob): refused with huge
 * pages not enabled, and below CFI_HUGE_MIN_ENABLED (one-shot commands)
 * or 2 MiB (the arena); else at a 2 MiB boundary, advised, zeroes, and
 * sized to 2 MiB pages in the one-shot commands, to 4 KiB ones with the
 * arena. */
static void check_zeroes_mapping(size_t size, size_t want_len)
{
	uint8_t *p = cfi_huge_map_zeroes(size);
	uintptr_t lo, hi;
	char flags[256];

	cr_assert_not_null(p, "%zu bytes", size);
	cr_assert_eq((uintptr_t)p & (2 * MIB - 1), 0, "%zu bytes at %p", size, p);
	for (size_t i = 0; i < size; i += 4096)
		cr_assert_eq(p[i], 0, "byte %zu of %zu", i, size);
	cr_assert_eq(p[size - 1], 0);
	fill(p, size, 9);
	cr_assert(vma_of(p, &lo, &hi, flags, sizeof(flags)));
	cr_assert(strstr(flags, " hg"), "VmFlags:%s", flags);
	cr_assert_eq(lo, (uintptr_t)p);
	cr_assert_eq(hi - lo, want_len, "mapped %zu bytes for %zu", (size_t)(hi - lo), size);
	cfi_huge_unmap(p, size);
	cr_assert_not(vma_of(p, &lo, &hi, flags, sizeof(flags)) && lo <= (uintptr_t)p &&
		      (uintptr_t)p < hi, "still mapped");
}

Test(hugemem, zeroes_mappings_only_once_enabled_and_from_the_threshold)
{
	cr_assert_null(cfi_huge_map_zeroes(5 * MIB), "huge pages not enabled");
	cfi_huge_pages_enable();
	cr_assert_null(cfi_huge_map_zeroes(CFI_HUGE_MIN_ENABLED - 1), "below the threshold");
	check_zeroes_mapping(CFI_HUGE_MIN_ENABLED, 2 * MIB);
	check_zeroes_mapping(2 * MIB, 2 * MIB);
	/* Time over memory in the one-shot commands: whole huge pages. */
	check_zeroes_mapping(2 * MIB + 123, 4 * MIB);
	cfi_huge_unmap(NULL, 5 * MIB);
}

Test(hugemem_arena, zeroes_mappings_stay_out_of_the_arena_and_to_the_small_page)
{
	uint8_t *a;
	uintptr_t lo, hi, lo2, hi2;
	char flags[256];

	cr_assert_eq(cfi_huge_arena_enable(), 0);
	cr_assert_null(cfi_huge_map_zeroes(2 * MIB - 1));
	a = cfi_huge_zalloc(3 * MIB);
	cr_assert_not_null(a);
	cr_assert(vma_of(a, &lo, &hi, flags, sizeof(flags)));
	/* Beside the arena's blocks, not one of them, and not rounded to a
	 * huge page (what outlives the compile costs only its pages). */
	check_zeroes_mapping(2 * MIB + 123, 2 * MIB + 4096);
	uint8_t *z = cfi_huge_map_zeroes(3 * MIB);
	cr_assert_not_null(z);
	cr_assert(vma_of(z, &lo2, &hi2, flags, sizeof(flags)));
	cr_assert(lo2 >= hi || hi2 <= lo, "in the arena");
	cfi_huge_unmap(z, 3 * MIB);
	cfi_huge_free(a, 3 * MIB);
}

/* The one-shot arena of `cfiprof cfi` keeps what is freed, written, for
 * the arrays that follow, and cfi_huge_zalloc still hands out zeroes:
 * cleared where a block was used before, untouched past that. */
Test(hugemem_one_shot, freed_memory_is_kept_and_zalloc_clears_it)
{
	size_t big = 8 * MIB, before;
	uint8_t *a, *b, *z;

	cr_assert_eq(cfi_huge_arena_enable_one_shot(), 0);
	a = cfi_huge_resize(NULL, 0, big);
	b = cfi_huge_resize(NULL, 0, 64 * 1024);
	cr_assert(a && b);
	memset(a, 0xa5, big);
	memset(b, 0x5a, 64 * 1024);
	before = rss_of(a);
	cr_assert_geq(before, big);
	cfi_huge_free(a, big);
	cr_assert_geq(rss_of(b), before, "freed memory given back: %zu then %zu resident", before,
		      rss_of(b));
	/* The hole is taken again, cleared, and so is the rest of a block
	 * reaching past the memory ever used. */
	z = cfi_huge_zalloc(big / 2);
	cr_assert_eq(z, a);
	for (size_t i = 0; i < big / 2; i += 512)
		cr_assert_eq(z[i], 0, "byte %zu of the hole is %#x", i, z[i]);
	cfi_huge_free(b, 64 * 1024);
	uint8_t *y = cfi_huge_zalloc(big);
	cr_assert_eq(y, a + big / 2, "the free space after z");
	for (size_t i = 0; i < big; i += 512)
		cr_assert_eq(y[i], 0, "byte %zu is %#x", i, y[i]);
	cr_assert_eq(y[big - 1], 0);
	cfi_huge_free(y, big);
	cfi_huge_free(z, big / 2);
	cr_assert_geq(rss_of(a), before, "nothing is given back, even with the arena empty");
}

/* The table's blob too is a block of the arena, memory the arrays freed,
 * and zeroes. */
Test(hugemem_one_shot, a_zeroes_mapping_is_a_block_of_freed_memory)
{
	size_t size = 3 * MIB + 123;
	uint8_t *a, *z;

	cr_assert_eq(cfi_huge_arena_enable_one_shot(), 0);
	cr_assert_null(cfi_huge_map_zeroes(CFI_HUGE_MIN_ENABLED - 1), "below the threshold");
	a = cfi_huge_resize(NULL, 0, size);
	cr_assert_not_null(a);
	memset(a, 0xa5, size);
	cfi_huge_free(a, size);
	z = cfi_huge_map_zeroes(size);
	cr_assert_eq(z, a, "not the freed block");
	for (size_t i = 0; i < size; i += 512)
		cr_assert_eq(z[i], 0, "byte %zu is %#x", i, z[i]);
	cr_assert_eq(z[size - 1], 0);
	cfi_huge_unmap(z, size);
	a = cfi_huge_zalloc(size);
	cr_assert_eq(a, z, "the block was not freed");
	cfi_huge_free(a, size);
}
