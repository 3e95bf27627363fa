/* The mapping search shared by the BPF walker, BPF's munmap filter and the
 * agent (bpf/mapping_search.h), through the agent's proc_find() and
 * directly, against a linear scan. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/procs/procs.h"
#include "bpf/mapping_search.h"

/* [0x1000, 0x2000) [0x2000, 0x3000) gap [0x5000, 0x8000) gap [0x10000, 0x10001) */
static struct code_mapping maps[] = {
	{ .start = 0x1000, .end = 0x2000 },
	{ .start = 0x2000, .end = 0x3000 },
	{ .start = 0x5000, .end = 0x8000 },
	{ .start = 0x10000, .end = 0x10001 },
};

static struct proc proc_of(struct code_mapping *m, uint32_t n)
{
	struct proc p = { .pid = 1, .maps = m, .n = n };

	return p;
}

/* The index proc_find must give, or -1. */
static long scan(const struct code_mapping *m, uint32_t n, uint64_t addr)
{
	for (uint32_t i = 0; i < n; i++)
		if (addr >= m[i].start && addr < m[i].end)
			return i;
	return -1;
}

static void expect(const struct proc *p, uint64_t addr, long want)
{
	const struct code_mapping *got = proc_find(p, addr);

	if (want < 0)
		cr_assert_null(got, "0x%llx: found mapping %td, want none",
			       (unsigned long long)addr, got ? got - p->maps : -1);
	else
		cr_assert_eq(got, &p->maps[want], "0x%llx: got %td, want %ld",
			     (unsigned long long)addr, got ? got - p->maps : -1, want);
}

Test(proc_find, empty)
{
	struct proc p = proc_of(NULL, 0);

	expect(&p, 0, -1);
	expect(&p, 0x1000, -1);
	expect(&p, UINT64_MAX, -1);
}

Test(proc_find, edges)
{
	struct proc p = proc_of(maps, 4);

	expect(&p, 0, -1);           /* before the first */
	expect(&p, 0xfff, -1);
	expect(&p, 0x1000, 0);       /* exact start */
	expect(&p, 0x1fff, 0);
	expect(&p, 0x2000, 1);       /* one's end is the next one's start */
	expect(&p, 0x2fff, 1);
	expect(&p, 0x3000, -1);      /* end exclusive, in a gap */
	expect(&p, 0x4fff, -1);
	expect(&p, 0x5000, 2);
	expect(&p, 0x7fff, 2);
	expect(&p, 0x8000, -1);
	expect(&p, 0xffff, -1);
	expect(&p, 0x10000, 3);      /* the last, one byte long */
	expect(&p, 0x10001, -1);     /* past the last */
	expect(&p, UINT64_MAX - 1, -1);
	expect(&p, UINT64_MAX, -1);  /* addr + 1 wraps */
}

Test(proc_find, single)
{
	struct proc p = proc_of(&maps[2], 1);

	expect(&p, 0x4fff, -1);
	expect(&p, 0x5000, 0);
	expect(&p, 0x7fff, 0);
	expect(&p, 0x8000, -1);
}

/* A mapping reaching the top of the address space: the last address it
 * could hold is below its (exclusive) end. */
Test(proc_find, top_of_address_space)
{
	struct code_mapping top[] = {
		{ .start = 0x1000, .end = 0x2000 },
		{ .start = UINT64_MAX - 0xfff, .end = UINT64_MAX },
	};
	struct proc p = proc_of(top, 2);

	expect(&p, UINT64_MAX - 0x1000, -1);
	expect(&p, UINT64_MAX - 0xfff, 1);
	expect(&p, UINT64_MAX - 1, 1);
	expect(&p, UINT64_MAX, -1);
}

/* Every size up to a few hundred mappings, every boundary and every gap,
 * against the linear scan. */
Test(proc_find, against_scan)
{
	enum { N = 300 };
	struct code_mapping *m = calloc(N, sizeof(*m));
	uint64_t at = 0x400000;

	cr_assert_not_null(m);
	srand(7);
	for (uint32_t i = 0; i < N; i++) {
		at += (uint64_t)(rand() % 3) * 0x1000; /* sometimes adjacent */
		m[i].start = at;
		at += 0x1000 + (uint64_t)(rand() % 16) * 0x1000;
		m[i].end = at;
	}
	for (uint32_t n = 0; n <= N; n++) {
		struct proc p = proc_of(m, n);

		for (uint32_t i = 0; i < n; i++) {
			const uint64_t q[] = { m[i].start - 1, m[i].start, m[i].start + 1,
					       m[i].end - 1, m[i].end, m[i].end + 1 };

			for (size_t k = 0; k < sizeof(q) / sizeof(q[0]); k++)
				expect(&p, q[k], scan(m, n, q[k]));
		}
		expect(&p, 0, scan(m, n, 0));
		expect(&p, UINT64_MAX, -1);
	}
	free(m);
}

/* ---- mapping_lower_bound itself (the munmap filter's use) ------------- */

struct starts {
	const __u64 *v;
	__u32 fail_at;   /* index whose read fails, or UINT32_MAX */
	__u32 *reads;
};

static int start_at(const void *arr, __u32 idx, __u64 *start)
{
	const struct starts *s = arr;

	(*s->reads)++;
	if (idx == s->fail_at)
		return -1;
	*start = s->v[idx];
	return 0;
}

Test(mapping_lower_bound, counts_starts_below_limit)
{
	static const __u64 v[] = { 0x1000, 0x2000, 0x5000, 0x10000 };
	static const struct { __u64 limit; __u32 want; } q[] = {
		{ 0, 0 }, { 0x1000, 0 }, { 0x1001, 1 }, { 0x2000, 1 }, { 0x2001, 2 },
		{ 0x5000, 2 }, { 0xffff, 3 }, { 0x10000, 3 }, { 0x10001, 4 },
		{ UINT64_MAX, 4 },
	};

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		__u32 idx = 999, reads = 0;
		struct starts s = { .v = v, .fail_at = UINT32_MAX, .reads = &reads };

		cr_assert_eq(mapping_lower_bound(&s, 4, q[i].limit, start_at, &idx), 0);
		cr_assert_eq(idx, q[i].want, "limit 0x%llx: %u, want %u",
			     (unsigned long long)q[i].limit, idx, q[i].want);
		/* A binary search: at most ceil(log2(n + 1)) reads. */
		cr_assert_leq(reads, 3);
	}
}

Test(mapping_lower_bound, empty_reads_nothing)
{
	__u32 idx = 999, reads = 0;
	struct starts s = { .v = NULL, .fail_at = UINT32_MAX, .reads = &reads };

	cr_assert_eq(mapping_lower_bound(&s, 0, 0x1000, start_at, &idx), 0);
	cr_assert_eq(idx, 0);
	cr_assert_eq(reads, 0);
}

/* A mapping that cannot be read fails the search: the munmap filter then
 * assumes an overlap, the walker finds no mapping. */
Test(mapping_lower_bound, failed_read)
{
	static const __u64 v[] = { 0x1000, 0x2000, 0x5000, 0x10000 };
	__u32 idx = 999, reads = 0;
	struct starts s = { .v = v, .fail_at = 2, .reads = &reads };

	/* The first probe of 4 is index 2. */
	cr_assert_eq(mapping_lower_bound(&s, 4, 0x3000, start_at, &idx), -1);
	cr_assert_eq(reads, 1);
	cr_assert_eq(idx, 999, "*idx is left alone on failure");
	/* A failure at an index the search never probes goes unnoticed. */
	s.fail_at = 3;
	cr_assert_eq(mapping_lower_bound(&s, 4, 0x1800, start_at, &idx), 0);
	cr_assert_eq(idx, 1);
}
