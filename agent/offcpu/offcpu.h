/*
 * Off-CPU profiling in `cfiprof record` (--off-cpu, --off-cpu-only): the
 * agent's half of bpf/offcpu.h.  It configures and attaches the scheduler
 * programs, turns their records into off-CPU (and, with --wakers,
 * woken-by) stacks, collects the threads still blocked when recording
 * stops, and prints the top blocking stacks.
 */
#ifndef AGENT_OFFCPU_H
#define AGENT_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/profile/profile.h"
#include "agent/profile/stacks.h"

#define OFFCPU_MIN_DEFAULT_NS 1000000ull  /* --off-cpu-min default: 1 ms */

struct offcpu_opts {
	bool enabled;      /* --off-cpu or --off-cpu-only */
	bool only;         /* --off-cpu-only: no on-CPU sampling */
	bool preempted;    /* --off-cpu-preempted */
	bool wakers;       /* --wakers */
	bool min_given;    /* --off-cpu-min was on the command line */
	uint64_t min_ns;   /* --off-cpu-min */
	bool mark_root;    /* folded output: "[off-cpu]" above the comm */
};

struct cfiprof_bpf;
struct symbolizer;
struct pending_waker;

struct offcpu {
	const struct offcpu_opts *o;
	struct symbolizer *sym;            /* kernel names, to trim tracing frames */
	struct bpf_link *links[3];         /* sched_switch, sched_waking, sched_exit_tp */
	struct pending_waker *pending;     /* waker records waiting for their sample */
	uint32_t npending, next_pending;
	struct frame_ref *chain;           /* scratch: a woken-by stack */
	uint64_t samples, wakers_paired, wakers_unpaired, still_blocked, stash_left;
	uint64_t no_mark;                  /* synthetic frames lost to out of memory */
	uint32_t held_cmd_pid;             /* -- CMD: held by us (at exec, at its entry) until */
	                                   /* held_cmd_until_ns: those stops are not its own */
	uint64_t held_cmd_until_ns, held_cmd_stops;
};

/* "0", "1ms", "500us", "2s", "100ns" (no unit: nanoseconds) into *ns;
 * -EINVAL if not a duration. */
int offcpu_parse_duration(const char *s, uint64_t *ns);

/* Before the BPF object is loaded: the configuration and the stashes'
 * value size, for `depth` user frames (the off-CPU depth, which may be
 * below --max-depth: bpf/abi.h); the scheduler programs are not even
 * loaded without --off-cpu. */
int offcpu_configure(struct cfiprof_bpf *skel, const struct offcpu_opts *o, uint32_t depth,
		     bool kernel);

/* Sets up `oc` for options `o` (kept by reference); `sym` (may be NULL)
 * names kernel frames to trim.  Returns 0 or -ENOMEM. */
int offcpu_init(struct offcpu *oc, const struct offcpu_opts *o, struct symbolizer *sym);

int offcpu_attach(struct offcpu *oc, struct cfiprof_bpf *skel, char *err, size_t errlen);
void offcpu_detach(struct offcpu *oc);

/* `-- CMD` is held stopped (ptrace) until the agent has read its
 * mappings: periods of `pid` blocked since before `until_ns` (monotonic)
 * are the profiler's doing, not the program's, and are left out. */
void offcpu_ignore_before(struct offcpu *oc, uint32_t pid, uint64_t until_ns);

/* What offcpu_record keeps of an off-CPU sample (not a waker record), for
 * outputs that list samples one by one: false for a stop of the held
 * -- CMD, which it leaves out; otherwise *skip is the number of leaf
 * kernel frames it drops (the scheduler's own, below __schedule). */
bool offcpu_sample_kept(struct offcpu *oc, uint32_t pid, uint64_t time_ns,
			const struct frame_ref *frames, uint32_t nkernel, uint32_t *skip);

/* An off-CPU sample or waker record whose frames the caller resolved
 * (kernel frames first, then user frames, leaf first; nkernel of them
 * kernel).  Adds the stacks to `agg`.  Returns 0 or -ENOMEM. */
int offcpu_record(struct offcpu *oc, struct stack_agg *agg, uint32_t pid, uint32_t tid,
		  const char *comm, uint8_t end_reason, uint8_t flags, uint32_t peer_tid,
		  uint64_t time_ns, uint64_t weight, struct frame_ref *frames, uint32_t n,
		  uint32_t nkernel);

/* The aggregation was cut (a daemon's interval): waker records waiting
 * for their sample are dropped, counted as unpaired. */
void offcpu_cut(struct offcpu *oc);

/* Threads still blocked when recording stops (the scheduler programs
 * detached): their blocked time up to now is a sample too, passed to
 * `on_event` like a ring buffer record. */
int offcpu_flush(struct offcpu *oc, struct cfiprof_bpf *skel,
		 int (*on_event)(void *ctx, void *data, size_t size), void *ctx);

/* The end-of-run summary: the top blocking stacks by total blocked time,
 * and what was lost. */
void offcpu_print_summary(const struct offcpu *oc, struct cfiprof_bpf *skel,
			  const struct profile *p, int type_off_cpu, int type_off_events, FILE *f);
void offcpu_print_stats(const struct offcpu *oc, struct cfiprof_bpf *skel, FILE *f);

void offcpu_free(struct offcpu *oc);

#endif
