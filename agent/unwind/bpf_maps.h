/*
 * Moving CFI tables and process mappings into the walker's BPF maps
 * (bpf/walker.h): each table becomes an array map of CFI_CHUNK_SIZE chunks
 * inside cfi_tables; each process's sorted mappings entries of the
 * proc_mappings hash, with their count and live slot in proc_infos.
 */
#ifndef AGENT_BPF_MAPS_H
#define AGENT_BPF_MAPS_H

#include <stdint.h>

#include "bpf/abi.h"
#include "cfi/table.h"

/* Loads `t` as table `id`.  Returns 0 or a negative errno.  The kernel
 * memory it takes (chunks rounded up) is added to *kernel_bytes. */
int bpf_table_load(int outer_fd, uint32_t id, const struct cfi_table *t, uint64_t *kernel_bytes);
int bpf_table_unload(int outer_fd, uint32_t id);

/* Which of a process's two mapping slots is live, and how many entries
 * each holds in the kernel. */
struct bpf_proc_slots {
	uint32_t live;
	uint32_t n[2];
};

/* Publishes the mappings of process `pid` (sorted by start) into the slot
 * not in use, then makes it the live one: walks in progress finish with
 * the old array, and no walk ever sees half of an update.  No map-of-maps
 * is touched, so this does not wait for an RCU grace period. */
int bpf_proc_load(int mappings_fd, int infos_fd, uint32_t pid, const struct cfi_mapping *m,
		  uint32_t n, uint32_t generation, struct bpf_proc_slots *slots);

/* Removes every entry of `pid` (its proc_info may already be gone). */
int bpf_proc_unload(int mappings_fd, int infos_fd, uint32_t pid, struct bpf_proc_slots *slots);

/* Counter `idx` (enum cfiprof_counter) summed over CPUs; 0 if unreadable. */
uint64_t bpf_counter_sum(int counters_fd, uint32_t idx);

#endif
