/*
 * What a process's cgroup says of it (its cgroup v2 path and container
 * id: the cgroup and container_id labels), read from /proc/PID/cgroup
 * once per cgroup rather than once per program: BPF's process records
 * carry the cgroup's id (bpf/abi.h cfiprof_proc_event.cgroup_id), and a
 * host starts its programs in a few cgroups.
 *
 * An id is a cgroup's kernfs id, the inode number of its directory on the
 * cgroup2 mount.  On 64-bit kernels the id is the whole inode number,
 * generation included, so it is never reused: entries of removed cgroups
 * are merely stale, and the least recently used go when the cache is full.
 */
#ifndef AGENT_PROCS_CGROUP_CACHE_H
#define AGENT_PROCS_CGROUP_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/container/cgroup.h"

/* A node runs some hundreds of cgroups at most: a scan of this many ids
 * costs less than the one read it saves. */
#define CGROUP_CACHE_MAX 512

struct cgroup_labels {
	const char *path;          /* its cgroup v2 path, or NULL */
	const char *container_id;  /* "" when none */
};

struct cgroup_entry {
	uint64_t id;
	uint64_t used;             /* the cache's tick at its last lookup */
	char *path;                /* NULL: no cgroup v2 */
	char container_id[CONTAINER_ID_LEN + 1];
};

struct cgroup_cache {
	struct cgroup_entry *v;
	uint32_t n;
	uint64_t tick;
	struct cgroup_info *ci;    /* the last read (PATH_MAX: not on the stack) */
	/* Where cgroup v2 is mounted, to find the id of the cgroup a read
	 * found (the process may have moved since its record); 0: not
	 * looked up yet, -1: none usable (reads then go uncached). */
	int mount_state;
	char *mount;
	uint64_t hits;             /* labels taken from the cache */
	uint64_t reads;            /* /proc/PID/cgroup read */
	uint64_t evicted;          /* entries dropped to make room */
};

/* The labels of process `pid`, whose cgroup was `cgroup_id` at its last
 * record (0: unknown, always read).  A read is cached under the id of
 * the cgroup it found, whatever `cgroup_id` said.  What `out` points
 * to holds until the next call.  -ESRCH: the process is gone. */
int cgroup_cache_labels(struct cgroup_cache *c, int pid, uint64_t cgroup_id,
			struct cgroup_labels *out);

void cgroup_cache_free(struct cgroup_cache *c);

#endif
