/*
 * tracefs, where the kernel publishes tracepoint ids: found at
 * /sys/kernel/tracing (or under debugfs), and mounted at
 * /sys/kernel/tracing when no tracefs is mounted anywhere we look.
 */
#ifndef AGENT_TRACEFS_H
#define AGENT_TRACEFS_H

#include <stddef.h>
#include <stdint.h>

/* The directory tracefs is mounted on, mounting it if needed.  The string
 * is static.  Returns 0 or a negative errno with the reason in err. */
int tracefs_root(const char **root, char *err, size_t errlen);

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
