/*
 * What is counted, as counter units (counters.h): the threads of a
 * process, the online CPUs (or some of them), a cgroup v2 directory.
 */
#ifndef AGENT_TARGETS_H
#define AGENT_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/perf/counters.h"

/* Appends one unit to the array *units of *n.  0 or -ENOMEM. */
int targets_add_unit(struct counter_unit **units, int *n, pid_t pid, int cpu);

/* One unit per thread `pid` has now (/proc/PID/task).  -ESRCH when the
 * process does not exist. */
int targets_add_threads(struct counter_unit **units, int *n, int pid);

/* One unit per online CPU, or per CPU set in `only` (a bitmap of
 * cpu_count_possible() entries; NULL: every online CPU), each of which
 * must be online (-ENODEV otherwise, with the reason in err). */
int targets_add_cpus(const bool *only, struct counter_unit **units, int *n, char *err,
		     size_t errlen);

/* Whether any thread of `pid` still runs (is not a zombie): a process
 * whose leader exited can live on in its other threads. */
bool targets_process_alive(int pid);

/* An O_RDONLY fd of the cgroup v2 directory `arg`: an absolute path, or
 * one relative to the cgroup2 mount (as perf -G takes it).  A negative
 * errno with the reason in err when it is missing or not cgroup v2. */
int targets_open_cgroup(const char *arg, char *err, size_t errlen);

#endif
