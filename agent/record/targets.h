/*
 * What `cfiprof record` profiles, set up before sampling starts: -p's
 * processes, -t's threads (their processes followed, the threads alone
 * sampled), every process (-a), a user's (-u) or a cgroup's, or -- CMD.
 * Their pids go into target_pids (-t's tids into target_tids) before
 * process tracking is attached (from then on BPF alone writes them,
 * bpf/maps.h); their mappings are read; and the tables
 * of what the processes named on the command line map are loaded
 * up front, so that their stacks are complete from the first sample, not
 * from the first miss.  Everything else -- children, -a, --cgroup, later
 * dlopen()s -- loads its tables on its first miss.
 */
#ifndef AGENT_RECORD_TARGETS_H
#define AGENT_RECORD_TARGETS_H

#include "agent/record/engine.h"

/* Before process tracking is attached.  -- CMD is forked, held before
 * its exec (untraced when it only times the recording, o->cmd_times);
 * -p's processes and -t's threads are watched for their exit.  0, or a
 * negative errno (message printed). */
int targets_setup(struct record_engine *e);

/* Whether every -p process (-t thread) has exited (false without -p or
 * -t): recording them is over.  Children they left are not waited for,
 * as with `stat -p`. */
bool targets_exited(const struct record_engine *e);

/* Once sampling runs: -ESRCH, with a message, if the -p processes (-t
 * threads) all exited while it was set up (nothing of theirs can be
 * recorded).  Then a -- CMD that times the recording of other targets
 * (o->cmd_times) execs: 0, or its exec's negative errno (message
 * printed). */
int targets_check_started(struct record_engine *e);

void targets_close(struct record_engine *e);

/* Lets -- CMD exec.  Stopped after the exec, the program and its loader
 * are read; then the loader maps the libraries and the program stops
 * again at its entry point, so that everything it links against is
 * known, and its tables loaded, before its own code runs; e->startup
 * takes the tables' figures then.  Later dlopen()s are picked up by the
 * first sample that misses them.  0, or a negative errno (message
 * printed): -ECHILD if it exited before reaching its entry point. */
int targets_release_cmd(struct record_engine *e);

#endif
