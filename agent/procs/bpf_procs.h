/*
 * The profiled processes as the walker sees them (bpf/walker.h): each
 * process's executable mappings, sorted, as entries of the proc_mappings
 * hash, and its proc_infos entry saying how many there are, which of its
 * two slots is live and which epoch of the process they belong to.  The
 * only writer of those two maps, and the agent's only writer of
 * target_pids; BPF writes the epochs (proc_epochs), which this deletes
 * once a process's exit was handled.  The protocol is in bpf/maps.h.
 */
#ifndef AGENT_PROCS_BPF_PROCS_H
#define AGENT_PROCS_BPF_PROCS_H

#include <stdint.h>

#include "bpf/abi.h"

/* The descriptors of the BPF maps a process is published in. */
struct bpf_proc_maps {
	int mappings_fd;           /* proc_mappings */
	int infos_fd;              /* proc_infos */
	int epochs_fd;             /* proc_epochs: read, and an exited process's deleted */
	int targets_fd;            /* target_pids: until tracking is attached */
	/* BPF's proc_changes (the skeleton's mmapped .bss), bumped after
	 * every change of proc_infos or deletion from proc_epochs: walks
	 * keep their last process's proc_info while it holds still.  NULL
	 * where no BPF program reads these maps (tests). */
	__u64 *changes;
};

/* Which of a process's two mapping slots is live, and how many entries
 * each holds in the kernel. */
struct bpf_proc_slots {
	uint32_t live;
	uint32_t n[2];
};

/* Profiles `pid` (and, once process tracking is attached, the children
 * it forks).  Only before tracking is attached: from then on BPF alone
 * writes target_pids.  Returns 0 or a negative errno. */
int bpf_proc_add_target(const struct bpf_proc_maps *maps, uint32_t pid);

/* The epoch of `pid` now: read it before reading the mappings to publish
 * with it.  0 if BPF has none (saw no fork, exec or exit of it). */
uint64_t bpf_proc_epoch(const struct bpf_proc_maps *maps, uint32_t pid);

/* Publishes the mappings of process `pid` (sorted by start), read in
 * `epoch`, into the slot not in use, then makes it the live one: walks in
 * progress finish with the old array, and no walk ever sees half of an
 * update.  Each publication has a gen of its own (struct proc_info): a
 * live array never changes under one.  No map-of-maps is touched, so this
 * does not wait for an RCU grace period.  Returns 0 or a negative errno. */
int bpf_proc_publish(const struct bpf_proc_maps *maps, uint32_t pid, const struct walker_mapping *m,
		     uint32_t n, uint64_t epoch, struct bpf_proc_slots *slots);

/* Deletes the epoch of `pid`, which exited and whose entries are gone:
 * no walk can match them any more, and the entry would otherwise stay
 * until the LRU map is full (a busy machine's exits fill it in half an
 * hour).  Safe against the pid's reuse: the new process's fork comes
 * after the exit in the ring buffer, so its mappings are read (with the
 * epoch as it is then) after this, and a fork or exec of it that raced
 * with the deletion leaves an entry absent, read as 0 and published so. */
void bpf_proc_forget_epoch(const struct bpf_proc_maps *maps, uint32_t pid);

/* Removes every entry of `pid` (its proc_info may already be gone). */
int bpf_proc_unpublish(const struct bpf_proc_maps *maps, uint32_t pid, struct bpf_proc_slots *slots);

#endif
