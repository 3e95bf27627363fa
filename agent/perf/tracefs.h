/*
 * tracefs, where the kernel publishes tracepoint ids.  The one mounted at
 * /sys/kernel/tracing (or /sys/kernel/debug/tracing) when there is one;
 * otherwise a tracefs mount of this process's own that is attached
 * nowhere (fsmount(2)): a fresh machine mounts no tracefs, and cfiprof
 * adds no mount to anybody's mount table.  Everything is read relative
 * to its directory fd.
 */
#ifndef AGENT_TRACEFS_H
#define AGENT_TRACEFS_H

#include <stddef.h>
#include <stdint.h>

/* A directory fd of tracefs's root, for openat() and the like: opened on
 * the first call (creating the detached mount if no tracefs is mounted)
 * and kept until the process ends; the caller does not close it.  Not
 * thread-safe: the first call comes from one thread.  Returns the fd or a
 * negative errno with the reason in err. */
int tracefs_dir(char *err, size_t errlen);

/* The id of tracepoint `sys`:`event` (events/SYS/EVENT/id), the config of
 * a PERF_TYPE_TRACEPOINT event.  -ENOENT: no such tracepoint. */
int tracefs_event_id(const char *sys, const char *event, uint64_t *id, char *err, size_t errlen);

/* Calls fn for every tracepoint whose subsystem and name match the
 * fnmatch(3) patterns, in alphabetical order; stops at fn's first non-zero
 * return and returns it.  Returns the number of matches otherwise, or a
 * negative errno. */
int tracefs_glob(const char *sys_pattern, const char *event_pattern,
		 int (*fn)(void *ctx, const char *sys, const char *event), void *ctx,
		 char *err, size_t errlen);

#endif
