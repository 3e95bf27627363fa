/*
 * The cgroup that `--cgroup PATH` names, resolved once for every command
 * that takes the option: where the cgroup2 hierarchy is mounted (unified
 * or hybrid host, escaped mount points), the directory the path leads to
 * after symlinks and "..", its id as BPF sees it, and the processes in it
 * and below it.
 */
#ifndef AGENT_CGROUP_TARGET_H
#define AGENT_CGROUP_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cgroup_target {
	char dir[PATH_MAX];   /* its directory on this host, resolved */
	char path[PATH_MAX];  /* as /proc/PID/cgroup's "0::" line names it */
	/* bpf_get_current_cgroup_id() of a task directly in it.  On cgroup2
	 * the kernfs node id, which is also the directory's inode number
	 * and its name_to_handle_at() handle (checked against BPF by the
	 * container suite's cgroup-id test). */
	uint64_t id;
	/* Its depth below the hierarchy's root (0 for the root): a task is
	 * in it or below it iff bpf_get_current_ancestor_cgroup_id(level)
	 * == id.  Counted from `path`, so absolute only when the agent runs
	 * in the initial cgroup namespace (on the host, as it should). */
	int level;
};

/* Where cgroup v2 is mounted in this mount namespace (/sys/fs/cgroup on a
 * unified host, /sys/fs/cgroup/unified on a hybrid one), and the cgroup
 * that mount shows at its top (mountinfo's root field, "/" unless mounted
 * from inside a cgroup namespace).  -ENOENT when there is none. */
int cgroup2_mount(char *mnt, size_t mntlen, char *root, size_t rootlen);

/* Resolves `arg` as given to --cgroup: an absolute directory on the
 * cgroup2 mount, or a path relative to it (relative to /sys/fs/cgroup is
 * accepted too, e.g. "unified/x" on a hybrid host).  Symlinks and ".."
 * are resolved; the result must still be a directory of the cgroup2
 * filesystem.  -ENOENT (no such cgroup), -ENOTDIR, -EMEDIUMTYPE (a
 * directory, but not of cgroup v2), -ENAMETOOLONG: with a one-line
 * message in errbuf naming `arg` and the reason. */
int cgroup_resolve(const char *arg, struct cgroup_target *t, char *errbuf, size_t errlen);

/* The path `arg` names before symlinks and ".." are resolved, as
 * cgroup_resolve() starts from it: `arg` itself when absolute, else below
 * the cgroup2 mount (or below /sys/fs/cgroup where only that exists).
 * For callers that word their own messages about what the user gave.
 * -ENOENT when `arg` is relative and no cgroup2 is mounted,
 * -ENAMETOOLONG when the path does not fit `len`. */
int cgroup_arg_path(const char *arg, char *path, size_t len);

/* The cgroup v2 id of the directory `dirfd` (0 for the directory itself)
 * or of `path` relative to it, as bpf_get_current_cgroup_id() names it. */
int cgroup_id_at(int dirfd, const char *path, uint64_t *id);

/* Whether a process whose cgroup_info.path is `proc_path` is in the
 * target's cgroup or one below it. */
bool cgroup_path_within(const struct cgroup_target *t, const char *proc_path);

/* Every process (tgid) in the target's cgroup and in the cgroups below
 * it, from their cgroup.procs files, sorted.  *pids is malloc'ed (NULL
 * when empty).  Cgroups removed while walking are skipped. */
int cgroup_target_pids(const struct cgroup_target *t, int **pids, size_t *n);

#endif
