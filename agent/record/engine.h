/*
 * The recording engine: everything between the options and the profile.
 * It loads the BPF programs (bpf/cfiprof.bpf.c), starts the CFI table
 * workers, reads the targets' mappings, attaches process tracking, the
 * per-CPU sampling events and the off-CPU programs, and then turns the
 * ring buffer's records into aggregated stacks until told to stop.
 *
 * In the order it is used:
 *   engine_open          checks and prepares; no kernel object yet
 *   engine_load          the BPF object, targets, -- CMD forked held, attaching
 *   engine_start         lets -- CMD run: the profile's time starts
 *   engine_run_until     handles records until a deadline, a stop request,
 *                        the targets' exit or an error; may be called again
 *   engine_stop          stops sampling and takes in what is still queued
 *   engine_build_profile symbolizes what was aggregated since the start
 *   engine_close         frees everything (after any of the above)
 * `record` builds one profile at the end; `cfiprof agent` calls run_until
 * and engine_cut in turn, each cut a profile of its own, and engine_stop
 * only once, before the last cut.
 */
#ifndef AGENT_RECORD_ENGINE_H
#define AGENT_RECORD_ENGINE_H

#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include <linux/perf_event.h>

#include "agent/cli/record_options.h"
#include "agent/container/cgroup_target.h"
#include "agent/offcpu/offcpu.h"
#include "agent/perf/perf_events.h"
#include "agent/procs/procs.h"
#include "agent/util/memstat.h"
#include "agent/profile/profile_build.h"
#include "agent/profile/stacks.h"
#include "agent/record/events.h"
#include "agent/unwind/debug_cache.h"
#include "agent/unwind/modules.h"
#include "agent/unwind/tables.h"
#include "agent/util/child.h"

struct cfiprof_bpf;

/* An event on-CPU samples are taken of; sample_event.event indexes the
 * engine's list of them (engine_event).  What outputs need to name the
 * samples' values and weigh them. */
struct record_event_desc {
	const char *name;            /* as the user spelt it, or the default's name */
	struct perf_event_attr attr; /* as opened: type, config, freq or sample_period */
	uint64_t period;             /* what one sample stands for: -c N, or the
				      * nominal 1e9/F ns of a clock sampled at F Hz,
				      * or 1 */
	const char *unit;            /* of period: "nanoseconds" (clocks) or "count" */
};
struct ring_buffer;
struct bpf_link;

/* fork, exec, exit, mmap, mprotect, munmap (bpf/proc_track.h) */
#define ENGINE_TRACKING_PROGS 8

struct record_engine {
	const struct record_opts *o;
	struct cfiprof_bpf *skel;
	struct symbolizer *sym;
	struct debug_cache debug_cache; /* decompressed debug files, for sym */
	struct module_registry mods;
	struct proc_registry procs;
	struct table_manager tables;
	struct cgroup_target cg;     /* --cgroup, resolved */
	struct stack_agg agg;
	struct record_events events; /* the records' handler and its counts */
	struct offcpu off;
	struct perf_sampler sampler;
	struct record_event_desc *event_descs; /* engine_event */
	uint32_t nevents;
	struct ring_buffer *rb;
	struct bpf_link *tracking[ENGINE_TRACKING_PROGS];
	struct held_child cmd;       /* -- CMD (agent/record/launch.h; targets.h) */
	struct pollfd *pid_fds;      /* -p's processes (-t's threads), to see them exit */
	int stats_fd;                /* BPF run-time statistics (--stats), or -1 */
	uint64_t last_sweep_ns;      /* tables_sweep */
	/* the profile */
	struct table_stats startup;  /* the tables' figures when sampling started */
	struct timespec wall_start;  /* CLOCK_REALTIME */
	uint64_t start_ns;           /* monotonic */
	uint64_t duration_ns;        /* set by engine_build_profile */
	long peak_rss_recording_kb;  /* before the profile was symbolized */
	/* what the agent held of each kind at its largest (--stats) */
	uint64_t ring_buffer_rss;    /* BPF maps mapped in, before engine_stop unmapped them */
	struct profile_build_mem profile_mem; /* of the last profile built */
	/* figures.c's: the RSS's parts, read at most every
	 * FIGURES_MEMSTAT_EVERY_NS unless the RSS moved (smaps is long: the
	 * daemon reads its figures every second) */
	struct memstat memstat;
	bool memstat_ok;
	uint64_t memstat_read_ns;
	uint64_t memstat_rss;        /* the RSS when it was read */
	/* engine_cut: where the next profile starts */
	struct timespec cut_wall;
	uint64_t cut_ns;             /* 0: at engine_start */
	uint64_t cuts;
};

enum engine_stop_reason {
	ENGINE_STOP_REQUESTED,       /* *stop was set (a signal) */
	ENGINE_DEADLINE,
	ENGINE_CMD_EXITED,
	ENGINE_TARGETS_EXITED,       /* every -p process (-t thread) exited */
	ENGINE_READ_ERROR,           /* the ring buffer failed (message printed): what
				      * came before is kept, the run has failed */
};

/* Checks what can be checked without the kernel (--cgroup) and allocates.
 * `o` is kept by reference.  0, or a negative errno (message printed). */
int engine_open(struct record_engine *e, const struct record_opts *o);

/* Everything up to sampling; -- CMD is forked and held before its exec.
 * 0, or a negative errno (message printed). */
int engine_load(struct record_engine *e);

/* Releases -- CMD (once its libraries' tables are loaded) and starts the
 * profile's clock.  0, or a negative errno (message printed): also when
 * the targets exited while they were set up (-ECHILD for -- CMD, whose
 * status is then in e->cmd; -ESRCH for -p and -t). */
int engine_start(struct record_engine *e);

/* Handles records until `deadline_ns` (monotonic; 0: none), *stop, or
 * the targets' exit. */
enum engine_stop_reason engine_run_until(struct record_engine *e, uint64_t deadline_ns,
					 const volatile sig_atomic_t *stop);

/* Stops sampling, handles what is still in the ring buffer and the
 * threads still blocked, lets queued table work finish, and ends -- CMD
 * if it still runs.  Final: no records are handled afterwards, so the
 * ring buffer is unmapped here, before symbolizing needs the memory. */
void engine_stop(struct record_engine *e);

/* Symbolizes the stacks aggregated since engine_start into `bp` (free it
 * with profile_built_free).  0 or -ENOMEM. */
int engine_build_profile(struct record_engine *e, struct built_profile *bp);

/* A daemon's interval: the profile of what was aggregated since the last
 * cut (the first: since engine_start), symbolized into `bp`, after which
 * aggregation starts afresh; tables, mappings and symbols stay warm.
 * Profiles of successive cuts tile time: each starts where the one
 * before ended (time_nanos, duration_nanos).  0 or -ENOMEM (what was
 * aggregated is then kept for the next cut). */
int engine_cut(struct record_engine *e, struct built_profile *bp);

/* What a cut held, counted without building it: the samples of each
 * stack kind (stack_agg.samples), the distinct stacks, its length. */
struct cut_tally {
	uint64_t samples[STACK_KINDS];
	uint64_t stacks;
	uint64_t duration_ns;
};

/* engine_cut for a cut nobody consumes: the aggregation since the last
 * cut is counted into `t` and dropped, neither built nor symbolized (a
 * daemon with no pull open and nothing to push would spend most of its
 * time symbolizing profiles it throws away).  Returns 0 or -ENOMEM (what
 * was aggregated then stays for the next cut). */
int engine_cut_discard(struct record_engine *e, struct cut_tally *t);

/* The events on-CPU samples are taken of (none with --off-cpu-only),
 * known once engine_load has opened them; idx is sample_event.event. */
uint32_t engine_nevents(const struct record_engine *e);
const struct record_event_desc *engine_event(const struct record_engine *e, uint32_t idx);

/* A BPF counter (enum cfiprof_counter) summed over CPUs. */
uint64_t engine_counter(const struct record_engine *e, uint32_t idx);

void engine_close(struct record_engine *e);

#endif
