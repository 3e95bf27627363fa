/*
 * One counting run of `cfiprof stat`, from setting up to tearing down:
 * the targets become counter units, the counters are opened (a command
 * held before its exec meanwhile), enabled, and read when the run ends
 * (the command exits, the -p targets are gone, --duration passes, or
 * SIGINT/SIGTERM), and every -I interval on the way.
 *
 * The wait is a poll() on a signalfd (SIGINT, SIGTERM, SIGCHLD) and
 * timerfds (interval, duration), so a signal never interrupts a print and
 * Ctrl-C always ends with the counts so far.
 */
#ifndef AGENT_STAT_RUN_H
#define AGENT_STAT_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/cli/stat_options.h"
#include "agent/perf/counters.h"
#include "agent/stat/sink.h"
#include "agent/stat/stat_output.h"
#include "agent/stat/targets.h"
#include "agent/util/child.h"

struct stat_run {
	const struct stat_opts *o;
	struct stat_sink sink;              /* where the counts are printed */
	sigset_t orig_mask;                 /* before SIGINT, SIGTERM, SIGCHLD were blocked */
	bool masked;
	int sfd;                            /* signalfd of those three */
	struct held_child child;            /* -- CMD */
	struct target_units units;
	int cgroup_fd;                      /* --cgroup, -1: none */
	struct counters ctr;
	bool enable_on_exec;                /* the kernel enables the counters at CMD's exec */
	struct counter_reading *now, *last; /* [unit][event]: this read, the last printed */
	struct stat_value *vals;            /* [unit][event]: scratch for printing */
	uint64_t t0, t_last;                /* monotonic ns: start, last interval */
	bool interval_header;               /* printed already */
};

/* Makes an empty run of `o`: stat_run_close() is safe from here on. */
void stat_run_init(struct stat_run *r, const struct stat_opts *o);

/* Everything before counting: signals, CMD started held, units,
 * counters opened (and, with -v, described).  Returns 0, or a negative
 * errno having printed why. */
int stat_run_open(struct stat_run *r);

/* Starts counting: the counters are enabled (or CMD's exec enables them)
 * and CMD is let go.  Returns 0, or a negative errno having printed why. */
int stat_run_start(struct stat_run *r);

/* Waits for the end of counting, printing -I intervals meanwhile.
 * Returns the signal that stopped it, 0, or a negative errno (printed). */
int stat_run_wait(struct stat_run *r);

/* Stops counting and reads the final counts into r->now; *t_end is when.
 * A command still running is left running.  0 or a negative errno
 * (printed). */
int stat_run_stop(struct stat_run *r, uint64_t *t_end);

/* Reads every counter into r->now.  0 or a negative errno (printed). */
int stat_run_read(struct stat_run *r);

/* Gives up the -o file if it is still open, ends the command, closes
 * and frees everything. */
void stat_run_close(struct stat_run *r);

#endif
