/*
 * Samples whose BPF walk stopped where a table or the process's mappings
 * were missing (EVENT_SNAPSHOT, bpf/abi.h): they wait here, with the
 * registers of that frame and a copy of the stack above it, until the
 * table is loaded (or built for the agent alone: the process may be gone)
 * and the mappings read; then the walk is finished with the BPF walker's
 * own code (bpf/walker_user.h), the frames appended to those BPF walked,
 * and only then is the sample aggregated (events_sample_done).
 *
 * The queue is bounded (SNAPSHOTS_PENDING_MAX samples,
 * SNAPSHOTS_PENDING_BYTES of them): a sample that finds it full is
 * aggregated at once with the frames BPF walked, and counted.  So is
 * every sample that cannot be finished, with why.
 */
#ifndef AGENT_RECORD_SNAPSHOTS_H
#define AGENT_RECORD_SNAPSHOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/abi.h"

struct record_events;
struct cfiprof_bpf;

#define SNAPSHOTS_PENDING_MAX   4096u
#define SNAPSHOTS_PENDING_BYTES (32u << 20)
/* A table never comes (its process gone, and with it the build?): the
 * sample is given up after this long. */
#define SNAPSHOTS_WAIT_MAX_NS   (5000ull * 1000 * 1000)
/* How often pending samples are looked at again while some wait. */
#define SNAPSHOTS_RETRY_NS      (5ull * 1000 * 1000)

/* Why a snapshot's walk could not be finished. */
enum snapshot_unfinished {
	SNAP_NO_MAPPINGS,        /* the process was gone before its mappings were read */
	SNAP_NO_TABLE,           /* a table it needed did not come in time */
	SNAP_QUEUE_FULL,         /* too many samples were waiting */
	SNAP_PROCESS_GONE,       /* the process was forgotten while it waited */
	SNAP_IN_EXEC,            /* taken in execve, the old program's memory gone */
	SNAP_UNFINISHED_NR
};

struct snapshot_stats {
	uint64_t received;       /* EVENT_SNAPSHOT records */
	uint64_t bytes;          /* the stack bytes they carried */
	uint64_t finished;       /* walked on to their end in the agent */
	uint64_t unfinished[SNAP_UNFINISHED_NR];
	uint64_t frames_added;   /* frames the agent's walks added */
	uint64_t pending_peak;
	uint64_t exit_stacks;    /* EVENT_EXIT_STACK records */
	uint64_t exit_samples;   /* samples after exit_mm walked from one of them */
};

struct snapshot_queue {
	struct pending_snapshot **v;
	uint32_t n, cap;
	uint64_t bytes;          /* held by the pending ones */
	uint64_t next_try_ns;
	struct snapshot_stats stats;
	struct sample_event *merged; /* scratch: a finished sample */
	struct walker_mapping *maps; /* scratch: a process's mappings, for the walker */
	uint32_t cap_maps;
	uint32_t max_depth;      /* --max-depth: the walks' bound (set by the engine) */
	/* The latest EVENT_EXIT_STACK records, oldest first: a process's
	 * samples follow its exit by milliseconds. */
	struct pending_snapshot **exits;
	uint32_t nexits;
};

/* Exit stacks kept at most. */
#define SNAPSHOTS_EXIT_STACKS_MAX 64u

/* Sizes BPF's snapshot buffers for --snapshot-size `size` (0: no
 * snapshots): before the object is loaded.  0 or a negative errno. */
int snapshots_configure(struct cfiprof_bpf *skel, uint32_t size);

/* An EVENT_SNAPSHOT record, `size` bytes at `data` (the ring buffer's:
 * copied).  Malformed records are counted in ev->bad_records. */
void snapshots_add(struct record_events *ev, const void *data, size_t size, uint64_t now);

/* An EVENT_EXIT_STACK record (copied): kept for the process's samples
 * after its exit_mm, snapshots of no stack that snapshots_add finishes
 * with it when their registers are those it has. */
void snapshots_add_exit_stack(struct record_events *ev, const void *data, size_t size);

/* `pid` is a new process or program: exit stacks kept for it are not its. */
void snapshots_forget_exit_stacks(struct record_events *ev, int pid);

/* Finishes what can be finished now; with `final`, every pending sample
 * (those that cannot be finished are aggregated as BPF left them, and
 * counted).  Returns how many remain pending. */
uint32_t snapshots_run(struct record_events *ev, uint64_t now, bool final);

/* When snapshots_run should run next: UINT64_MAX if nothing waits. */
uint64_t snapshots_next_ns(const struct snapshot_queue *q);

/* The end of a recording: waits up to `timeout_ms` for the tables the
 * pending samples need, then finishes or counts every one. */
void snapshots_flush(struct record_events *ev, int timeout_ms);

void snapshots_free(struct snapshot_queue *q);

#endif
