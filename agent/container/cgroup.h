/*
 * Which cgroup, and so which container, a process is in: the contents of
 * /proc/PID/cgroup, which become the cgroup and container_id labels of
 * its samples.
 */
#ifndef AGENT_CGROUP_H
#define AGENT_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent/container/container_id.h"

/* What /proc/PID/cgroup says about a process. */
struct cgroup_info {
	/* The cgroup v2 path (the "0::" line), relative to the reader's
	 * cgroup namespace, as in `--cgroup` and in the "cgroup" label.
	 * "" when the host has no cgroup v2 hierarchy. */
	char path[PATH_MAX];
	bool has_v2;
	/* The innermost container the paths name ("" when none): from the
	 * v2 path, else from the first v1 line naming one (a v1-only or
	 * hybrid host where the runtime manages v1 controllers only). */
	char container_id[CONTAINER_ID_LEN + 1];
	enum container_runtime runtime;
};

/* Parses the contents of a /proc/PID/cgroup file (`len` bytes, need not
 * be NUL-terminated).  0 on success; -EINVAL when a line is not
 * "HIERARCHY-ID:CONTROLLERS:/PATH" or there is no line at all;
 * -ENAMETOOLONG when a path does not fit PATH_MAX (the kernel's own
 * limit).  `ci` is cleared first, also on error. */
int cgroup_parse(const char *buf, size_t len, struct cgroup_info *ci);

/* cgroup_parse() of /proc/PID/cgroup.  -ESRCH when the process is gone. */
int cgroup_read(int pid, struct cgroup_info *ci);

#endif
