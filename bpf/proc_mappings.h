/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's mapping array as BPF sees it: entries of the proc_mappings
 * hash keyed (tgid, slot | index), searched with mapping_search.h.  Used
 * by the walker and by the munmap filter.
 */
#ifndef CFIPROF_PROC_MAPPINGS_H
#define CFIPROF_PROC_MAPPINGS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "abi.h"
#include "maps.h"
#include "mapping_search.h"

/* An array is named by the key of its element 0: (tgid, slot). */
static __always_inline struct walker_mapping *mapping_at(const struct mapping_key *arr, __u32 idx)
{
	struct mapping_key key = { .tgid = arr->tgid, .idx = arr->idx | idx };

	return bpf_map_lookup_elem(&proc_mappings, &key);
}

/* mapping_start_fn for mapping_lower_bound(). */
static __always_inline int mapping_start_at(const void *arr, __u32 idx, __u64 *start)
{
	struct walker_mapping *m = mapping_at(arr, idx);

	if (!m)
		return -1;
	*start = m->start;
	return 0;
}

#endif /* CFIPROF_PROC_MAPPINGS_H */
