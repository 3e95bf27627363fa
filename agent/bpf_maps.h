/*
 * Moving CFI tables and process mappings into the walker's BPF maps
 * (bpf/walker.h): each table becomes an array map of CFI_CHUNK_SIZE chunks
 * inside cfi_tables; each process's sorted mappings an array map inside
 * proc_mappings, with its count in proc_infos.
 */
#ifndef AGENT_BPF_MAPS_H
#define AGENT_BPF_MAPS_H

#include <stdint.h>

#include "../bpf/abi.h"
#include "../cfi/table.h"

/* Loads `t` as table `id`.  Returns 0 or a negative errno.  The kernel
 * memory it takes (chunks rounded up) is added to *kernel_bytes. */
int bpf_table_load(int outer_fd, uint32_t id, const struct cfi_table *t, uint64_t *kernel_bytes);
int bpf_table_unload(int outer_fd, uint32_t id);

/* Publishes the mappings of process `pid` (sorted by start). */
int bpf_proc_load(int mappings_fd, int infos_fd, uint32_t pid, const struct cfi_mapping *m,
		  uint32_t n, uint32_t generation);
int bpf_proc_unload(int mappings_fd, int infos_fd, uint32_t pid);

/* Counter `idx` (enum cfiprof_counter) summed over CPUs; 0 if unreadable. */
uint64_t bpf_counter_sum(int counters_fd, uint32_t idx);

#endif
