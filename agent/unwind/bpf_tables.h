/*
 * Moving CFI tables into the walker's BPF maps (bpf/maps.h): each table
 * becomes an array map of CFI_CHUNK_SIZE chunks inside cfi_tables.  The
 * table manager (tables.h) is the only caller.  (Processes' mappings are
 * published by agent/procs/bpf_procs.h.)
 */
#ifndef AGENT_UNWIND_BPF_TABLES_H
#define AGENT_UNWIND_BPF_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/abi.h"
#include "cfi/table.h"

/* Loads `t` as table `id`.  Returns 0 or a negative errno.  The kernel
 * memory it takes (chunks rounded up) is added to *kernel_bytes. */
int bpf_table_load(int outer_fd, uint32_t id, const struct cfi_table *t, uint64_t *kernel_bytes);
int bpf_table_unload(int outer_fd, uint32_t id);

/* bpf_table_load in two steps, so that the slow one can be batched:
 *
 * bpf_table_fill: a new inner map holding `t`, not yet in cfi_tables.
 * Returns its fd (the caller closes it once published) or a negative
 * errno.
 *
 * bpf_table_publish: puts the inner maps fds[0..n) into cfi_tables as
 * tables ids[0..n); ret[k] is 0 or the negative errno of k.  Every update
 * of a map of maps makes the kernel wait for an RCU grace period before
 * the call returns (milliseconds; tens on a busy machine), once per call:
 * a batch pays it once for all. */
int bpf_table_fill(const struct cfi_table *t);
void bpf_table_publish(int outer_fd, const uint32_t *ids, const int *fds, int *ret, uint32_t n);

/* Whether table `id` is in cfi_tables, where walks find it: true from
 * the moment a bpf_table_publish call put it there, before the call
 * returns.  (A lookup waits for no grace period.) */
bool bpf_table_present(int outer_fd, uint32_t id);

/* Reads table `id` back from the kernel into `t` (cfi_table_open'd: free
 * it with cfi_table_free), for the agent's own walks of stack snapshots.
 * Returns 0, -ENOENT if it is not loaded, or another negative errno. */
int bpf_table_read(int outer_fd, uint32_t id, struct cfi_table *t);

#endif
