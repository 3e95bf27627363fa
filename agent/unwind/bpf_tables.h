/*
 * Moving CFI tables into the walker's BPF maps (bpf/maps.h): each table
 * becomes an array map of CFI_CHUNK_SIZE chunks inside cfi_tables.  The
 * table manager (tables.h) is the only caller.  (Processes' mappings are
 * published by agent/procs/bpf_procs.h.)
 */
#ifndef AGENT_UNWIND_BPF_TABLES_H
#define AGENT_UNWIND_BPF_TABLES_H

#include <stdint.h>

#include "bpf/abi.h"
#include "cfi/table.h"

/* Loads `t` as table `id`.  Returns 0 or a negative errno.  The kernel
 * memory it takes (chunks rounded up) is added to *kernel_bytes. */
int bpf_table_load(int outer_fd, uint32_t id, const struct cfi_table *t, uint64_t *kernel_bytes);
int bpf_table_unload(int outer_fd, uint32_t id);

/* Reads table `id` back from the kernel into `t` (cfi_table_open'd: free
 * it with cfi_table_free), for the agent's own walks of stack snapshots.
 * Returns 0, -ENOENT if it is not loaded, or another negative errno. */
int bpf_table_read(int outer_fd, uint32_t id, struct cfi_table *t);

#endif
