/*
 * What `cfiprof stat` counts, as counter units (counters.h): the threads
 * of a process, the online CPUs (or some of them), and the cgroup v2
 * directory that filters CPU-wide counting.
 */
#ifndef AGENT_TARGETS_H
#define AGENT_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/perf/counters.h"

/* A growing array of units: zero-initialized is empty. */
struct target_units {
	struct counter_unit *v;
	int n;
	unsigned cap;
};

/* Appends one unit.  0 or -ENOMEM. */
int targets_add_unit(struct target_units *u, pid_t pid, int cpu);

/* One unit per thread `pid` has now (/proc/PID/task), none when the
 * units hold the process already (-p PID,PID or PID,TID).  -ESRCH when
 * the process does not exist. */
int targets_add_threads(struct target_units *u, int pid);

/* One unit per online CPU, or per CPU set in `only` (a bitmap of
 * cpu_count_possible() entries; NULL: every online CPU), each of which
 * must be online (-ENODEV otherwise, with the reason in err). */
int targets_add_cpus(struct target_units *u, const bool *only, char *err, size_t errlen);

void targets_free(struct target_units *u);

/* Whether any thread of `pid` still runs (is not a zombie): a process
 * whose leader exited can live on in its other threads. */
bool targets_process_alive(int pid);

/* An O_RDONLY fd of the cgroup v2 directory `arg` names, as --cgroup
 * takes it (cgroup_resolve(): absolute, relative to the cgroup2 mount or
 * to /sys/fs/cgroup, through symlinks and "..").  A negative errno with
 * the reason in err, worded as `cfiprof stat` always has, naming the path
 * before resolution. */
int targets_open_cgroup(const char *arg, char *err, size_t errlen);

#endif
