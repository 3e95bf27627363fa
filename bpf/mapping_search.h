/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The binary search of a process's executable mappings (sorted by start),
 * written once for the BPF walker, BPF's munmap filter and the agent.
 * Each side supplies how to read the start of mapping i: BPF probes the
 * proc_mappings hash, the agent indexes an array.  Compiles as BPF (the
 * loop has a bound the verifier can see) and as userspace C.
 */
#ifndef CFIPROF_MAPPING_SEARCH_H
#define CFIPROF_MAPPING_SEARCH_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Halvings that settle any __u32 count of mappings: the bound the
 * verifier needs, never reached before lo meets hi. */
#define MAPPING_SEARCH_STEPS 32

/* Stores the start of mapping `idx` of `arr` in *start; non-zero if that
 * mapping cannot be read.  BPF has no indirect calls: pass a function the
 * compiler can inline (a static __always_inline one, named directly). */
typedef int (*mapping_start_fn)(const void *arr, __u32 idx, __u64 *start);

/* 1 if a < b, else 0, without a branch: BPF has no conditional set or
 * move, so a comparison used as a value would be a branch. */
static __always_inline __u64 mapping_search_below(__u64 a, __u64 b)
{
	__u64 lt = ((~a & b) | ((~a | b) & (a - b))) >> 63;

	/* Unknown to the compiler, which would see the comparison, or the
	 * products by a 0 or 1 it is used in, and branch on it. */
	asm volatile("" : "+r"(lt));
	return lt;
}

/* Sets *idx to the number of mappings starting below `limit`, which is
 * the index of the first one starting at or above it (n if none).
 * Returns 0, or -1 as soon as start_at fails.
 *
 * The halving has no branch on what it reads: a branch there doubled the
 * paths the verifier follows at each step, and once it could tell the
 * loop's end from the bounds it kept all of them apart (the walker no
 * longer loaded on kernel 6.18's verifier).  Each step looks at the
 * middle of the `len` candidates from `base` and keeps the half that can
 * hold the answer. */
static __always_inline int mapping_lower_bound(const void *arr, __u32 n, __u64 limit,
					       mapping_start_fn start_at, __u32 *idx)
{
	__u32 base = 0, len = n;
	__u64 start;
	int i;

	for (i = 0; i < MAPPING_SEARCH_STEPS && len; i++) {
		__u32 half = len / 2, below;

		if (start_at(arr, base + half, &start))
			return -1;
		below = (__u32)mapping_search_below(start, limit);
		/* below: past the middle, len - half - 1 left (half, or
		 * half - 1 for an even len); else the half before it. */
		base += below * (half + 1);
		len = half - below * (~len & 1);
	}
	*idx = base;
	return 0;
}

#endif /* CFIPROF_MAPPING_SEARCH_H */
