/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Every map the BPF programs share with each other and with the agent,
 * with the values they hold, and the load-time configuration.  Who writes
 * which map is said at each; bpf/abi.h has the layouts the agent sees.
 */
#ifndef CFIPROF_MAPS_H
#define CFIPROF_MAPS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "abi.h"

const volatile struct cfiprof_config cfg = {
	.max_depth = CFIPROF_MAX_DEPTH_DEFAULT,
};

/* One table: an array of chunks of its blob.  BPF_F_INNER_MAP lets each
 * table's array have its own number of chunks. */
struct cfi_chunk_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, CFI_CHUNK_SIZE);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, CFIPROF_MAX_TABLES);
	__type(key, __u32);                 /* table id */
	__array(values, struct cfi_chunk_map);
} cfi_tables SEC(".maps");

/* ---- the profiled processes ------------------------------------------
 *
 * Each of these maps has one writer at any time:
 *
 *   target_pids    -p's pids and -- CMD's: the agent writes them before
 *                  it attaches the process tracking programs
 *                  (proc_track.h), and never again.  From then on only
 *                  those programs write it: on_fork adds the children of
 *                  targets, on_free removes the processes that exited
 *                  once their task is freed.
 *   target_tids    -t's threads: the agent writes them before it attaches
 *                  process tracking, and never again; from then on only
 *                  on_free writes it, removing each thread that exited once
 *                  its task is freed (its tid, reused, names another thread).
 *   proc_epochs    BPF writes it (proc_track.h): at the fork, exec and exit
 *                  of a profiled process its entry becomes the time, before
 *                  the record telling the agent is sent, its low bit set
 *                  for an exit (abi.h CFIPROF_EPOCH_EXIT).  The agent only
 *                  deletes the entry of a process whose exit it handled,
 *                  its proc_infos and proc_mappings entries gone
 *                  (agent/procs/bpf_procs.h: why that is safe).
 *   proc_infos,    the agent only (agent/procs/bpf_procs.c).  It reads
 *   proc_mappings  proc_epochs[tgid] (absent: 0), then /proc/PID/maps,
 *                  and publishes the mappings with that epoch in
 *                  proc_info; it removes them after the exit record.
 *
 * A walk uses a process's mappings only while proc_info.epoch equals the
 * process's proc_epochs entry (proc_info_current): the instant a process
 * execs or exits, the mappings published for it are dead to every walk,
 * long before the agent has read its record.  An absent entry means no
 * fork, exec or exit was seen since the agent read the mappings (or it
 * was evicted: that process has not been walked for longest). */

/* Every profiled process's mappings (see struct mapping_key): 512K in all
 * (32768 processes of 8 executable mappings, in both slots), allocated as
 * used, with no limit per process.  The bucket array is allocated up front
 * whatever the flags: 16 bytes an entry, 8 MiB. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 19);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mapping_key);
	__type(value, struct walker_mapping);
} proc_mappings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);                 /* tgid */
	__type(value, struct proc_info);
} proc_infos SEC(".maps");

/* LRU: the entries of exited processes the agent has not deleted yet
 * (or whose exit record was lost) stay until room is needed, and the
 * entries walks look up are the last to go. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);                 /* tgid */
	__type(value, __u64);               /* bpf_ktime_get_ns() of its last fork, exec or exit */
} proc_epochs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);                 /* tgid */
	__type(value, __u8);
} target_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CFIPROF_MAX_TIDS); /* the agent sets -t's number */
	__type(key, __u32);                 /* tid */
	__type(value, __u8);
} target_tids SEC(".maps");

/* Bumped after every change to what proc_info_current answers: by BPF at
 * each new epoch (proc_track.h), by the agent after each publication or
 * removal of a proc_info and each epoch it deletes (agent/procs/
 * bpf_procs.c, through the skeleton's mmapped .bss).  A sample's answer
 * is kept per CPU with the count it was read under (proc_seen_get). */
__u64 proc_changes;

/* The proc_info of `tgid` if its mappings are those of the program
 * running now, else NULL (see above). */
static __always_inline struct proc_info *proc_info_current(__u32 tgid)
{
	struct proc_info *pi = bpf_map_lookup_elem(&proc_infos, &tgid);
	__u64 *epoch;

	if (!pi)
		return NULL;
	epoch = bpf_map_lookup_elem(&proc_epochs, &tgid);
	return epoch && *epoch != pi->epoch ? NULL : pi;
}

/* ---- counters, the ring buffer, walk state ---------------------------- */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CFIPROF_RINGBUF_SIZE);
} events SEC(".maps");

/* When each (process, table) miss was last reported (struct miss_key).
 * LRU: a busy host has more pairs than fit, and a forgotten pair merely
 * reports again.  The agent deletes the entries older than
 * CFIPROF_MISS_INTERVAL_NS at each cut (agent/record/engine.c), which
 * would otherwise stay, those of exited processes, until it is full. */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct miss_key);
	__type(value, __u64);
} miss_last SEC(".maps");

#include "walk_state.h"

/* The last process a sample on this CPU found current (proc_info_current),
 * and what the walk needs of its proc_info, valid while proc_changes is
 * still `changes`: the same process sampled again costs no hash lookup.
 * Only a current process is kept: the lookup of an epoch that disagrees
 * marks its LRU entry used, which keeps it from being evicted (an
 * evicted epoch would read as "no change" and revive dead mappings). */
struct proc_seen {
	__u64 changes;
	__u64 gen;
	__u32 tgid;       /* 0: none kept */
	__u32 nmappings;
	__u32 slot;
	__u32 pad;
};

struct sample_scratch {
	struct walk_state st;
	struct proc_seen seen;
	struct sample_event ev;
	/* The user registers a walk starts from: here, not on the program's
	 * stack, where they took 168 of the 512 bytes the program and the
	 * walker's frames share. */
	struct pt_regs regs;
};

/* Fills `ps` with what the walk needs of `tgid`'s current proc_info
 * (zeros: none), from the kept answer if nothing changed since.  The
 * count is read before the lookups: a change during them leaves the
 * answer kept under a stale count, looked up again next time. */
static __always_inline void proc_seen_get(struct proc_seen *ps, __u32 tgid)
{
	__u64 changes = *(volatile __u64 *)&proc_changes;
	struct proc_info *pi;

	if (ps->tgid == tgid && ps->changes == changes && !WALK_BENCH_NO_PROC_SEEN)
		return;
	pi = proc_info_current(tgid);
	if (!pi) {
		*ps = (struct proc_seen){ 0 };
		return;
	}
	ps->changes = changes;
	ps->gen = pi->gen;
	ps->tgid = tgid;
	ps->nmappings = pi->nmappings;
	ps->slot = pi->slot & MAPPING_SLOT_BIT;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_scratch);
} scratch SEC(".maps");

/* Hits of each tracepoint event since its last sample, per CPU: the
 * kernel runs a tracepoint's programs at every hit whatever the perf
 * event's sample_period, so -c N is counted here. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CFIPROF_MAX_EVENTS);
	__type(key, __u32);
	__type(value, __u64);
} tp_hits SEC(".maps");

/* --cgroup: the one cgroup (v2) whose tasks, and its descendants', are
 * profiled. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/* Stack snapshots (bpf/abi.h) are put together here, one buffer per CPU
 * (index: the CPU): a struct stack_snapshot, then the stack.  Not a
 * per-CPU array, whose values stop at 32 KiB.  The agent sizes it at load
 * time: --snapshot-size bytes and one page (bpf/snapshot.h), one per
 * possible CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct stack_snapshot) + CFIPROF_SNAPSHOT_PAGE);
} snap_bufs SEC(".maps");

/* Counters (enum cfiprof_counter), per CPU: summed by the agent. */
static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

static __always_inline void add_count(__u32 idx, __u64 n)
{
	__u64 *v;

	if (!n)
		return;
	v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += n;
}

#endif /* CFIPROF_MAPS_H */
