/*
 * The profiled processes as the walker sees them (bpf/walker.h): each
 * process's executable mappings, sorted, as entries of the proc_mappings
 * hash, and its proc_infos entry saying how many there are and which of
 * its two slots is live.  This file is the only userspace writer of those
 * two maps; who writes them when is said in agent/procs/procs.h.
 */
#ifndef AGENT_PROCS_BPF_PROCS_H
#define AGENT_PROCS_BPF_PROCS_H

#include <stdint.h>

#include "bpf/abi.h"

/* The descriptors of the BPF maps a process is published in. */
struct bpf_proc_maps {
	int mappings_fd;           /* proc_mappings */
	int infos_fd;              /* proc_infos */
};

/* Which of a process's two mapping slots is live, and how many entries
 * each holds in the kernel. */
struct bpf_proc_slots {
	uint32_t live;
	uint32_t n[2];
};

/* Publishes the mappings of process `pid` (sorted by start) into the slot
 * not in use, then makes it the live one: walks in progress finish with
 * the old array, and no walk ever sees half of an update.  No map-of-maps
 * is touched, so this does not wait for an RCU grace period.  Returns 0
 * or a negative errno. */
int bpf_proc_publish(const struct bpf_proc_maps *maps, uint32_t pid, const struct cfi_mapping *m,
		     uint32_t n, uint32_t generation, struct bpf_proc_slots *slots);

/* Removes every entry of `pid` (its proc_info may already be gone). */
int bpf_proc_unpublish(const struct bpf_proc_maps *maps, uint32_t pid, struct bpf_proc_slots *slots);

#endif
