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

/* Sets *idx to the number of mappings starting below `limit`, which is
 * the index of the first one starting at or above it (n if none).
 * Returns 0, or -1 as soon as start_at fails. */
static __always_inline int mapping_lower_bound(const void *arr, __u32 n, __u64 limit,
					       mapping_start_fn start_at, __u32 *idx)
{
	__u32 lo = 0, hi = n;
	__u64 start;
	int i;

	for (i = 0; i < MAPPING_SEARCH_STEPS && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		if (start_at(arr, mid, &start))
			return -1;
		if (start < limit)
			lo = mid + 1;
		else
			hi = mid;
	}
	*idx = lo;
	return 0;
}

#endif /* CFIPROF_MAPPING_SEARCH_H */
