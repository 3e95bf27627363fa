/*
 * What the agent does with each record of the events ring buffer
 * (bpf/abi.h): a sample's frames are resolved to the mappings they were
 * in and aggregated; process records move the process registry along
 * (agent/procs/lifecycle.h); a miss record asks for a table.  Records
 * that do not parse are counted, never trusted.
 */
#ifndef AGENT_RECORD_EVENTS_H
#define AGENT_RECORD_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/abi.h"
#include "agent/offcpu/offcpu.h"
#include "agent/procs/procs.h"
#include "agent/profile/stacks.h"
#include "agent/record/snapshots.h"
#include "agent/unwind/modules.h"
#include "agent/unwind/tables.h"

/* Exec-to-first-complete-stack times kept for the percentiles. */
#define EVENTS_FIRST_WINDOW 65536u

struct sample_log;

struct record_events {
	/* where records go (set by the caller) */
	struct proc_registry *procs;
	struct module_registry *mods;  /* miss records name a table by module */
	struct table_manager *tables;
	struct stack_agg *agg;
	struct offcpu *off;            /* off-CPU samples and waker records */
	struct sample_log *log;        /* --format perf: every sample, or NULL */
	/* folded output of several events: the mark frame (stack_agg_mark)
	 * put at the root of each event's samples */
	bool mark_events;
	int64_t event_marks[CFIPROF_MAX_EVENTS];
	/* -- CMD, forked by the agent: what it does before its exec is the
	 * agent's code, not the program's (perf counts from the exec too) */
	uint32_t cmd_pid;
	uint64_t cmd_exec_ns;          /* monotonic; UINT64_MAX: not yet */
	/* what came */
	uint64_t records;              /* every record handled */
	uint64_t end_reasons[WALK_END_NR + 1]; /* per walk end; [WALK_END_NR]: unknown */
	uint64_t bad_records;          /* malformed: wrong size, kind or counts */
	uint64_t misses_released;      /* misses for a module released since */
	uint64_t agg_errors;           /* samples not aggregated: out of memory */
	uint64_t code_maps;        /* EVENT_CODE_MAP records */
	uint64_t proc_events[EVENT_MUNMAP + 1]; /* process records, by kind */
	uint64_t event_samples[CFIPROF_MAX_EVENTS]; /* on-CPU samples aggregated, per event */
	uint64_t before_exec;          /* on-CPU samples of -- CMD before its exec: dropped */
	uint64_t missed_samples;       /* walked partly by frame pointer: a table was missing */
	uint64_t unmapped_dropped;     /* no_mapping walks whose last return address lay in
					* none of the process's mappings, as read since: dropped */
	uint64_t replaced_resolved;    /* samples resolved with the mappings of a program
					* replaced since (an exec) or of the parent of a child
					* not read before its exec (procs_mappings_at) */
	uint64_t program_unknown;      /* samples with user frames left unresolved: the
					* mappings known of the process are of a program
					* that started after the sample */
	/* time from a new process's exec to its first complete stack */
	uint64_t *first_complete_ns;
	uint32_t nfirst, cap_first;  /* the last EVENTS_FIRST_WINDOW processes' */
	uint64_t first_total;
	struct frame_ref *frames;      /* scratch for one sample */
	struct sample_event *trimmed;  /* scratch: a sample without its last user frame */
	/* samples whose walk waits for a table or mappings (set max_depth) */
	struct snapshot_queue snaps;
};

/* Allocates the scratch; the caller sets the pointers.  0 or -ENOMEM. */
int events_init(struct record_events *ev);

/* Handles one record (a ring_buffer_sample_fn; ctx is the struct
 * record_events).  Always returns 0: a bad record is counted, and the
 * ring buffer goes on. */
int events_handle(void *ctx, void *data, size_t size);

/* A sample walked to its end (events_handle's, or a stack snapshot's
 * once the agent finished its walk): counted, its user frames resolved
 * with the mappings of `maps` (NULL: none known), labelled as `p` (NULL:
 * unknown process), and aggregated. */
void events_sample_done(struct record_events *ev, struct proc *p, const struct proc *maps,
			const struct sample_event *s, uint64_t now);

void events_free(struct record_events *ev);

#endif
