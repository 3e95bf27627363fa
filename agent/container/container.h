/*
 * Processes in containers, seen from the host: which cgroup and which
 * container a process is in (/proc/PID/cgroup), the cgroup that
 * `--cgroup PATH` names, and the files a process sees, opened without ever
 * leaving its root.
 *
 * The agent runs on the host and is given host pids.  A container's files
 * are reached through /proc/PID/root, but a path walked from there follows
 * the container's symlinks, and an absolute symlink such as
 * /usr/bin/app -> /etc/shadow would otherwise resolve against the agent's
 * root, on the host.  container_open() resolves every component inside the
 * process's root (openat2 RESOLVE_IN_ROOT), as the kernel does for the
 * process itself.
 */
#ifndef AGENT_CONTAINER_H
#define AGENT_CONTAINER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every runtime recognized here names containers with 64 hex digits. */
#define CONTAINER_ID_LEN 64

enum container_runtime {
	CONTAINER_RT_NONE,          /* not in a container (or one not recognized) */
	CONTAINER_RT_DOCKER,        /* docker-ID.scope, /docker/ID */
	CONTAINER_RT_CONTAINERD,    /* cri-containerd-ID.scope */
	CONTAINER_RT_CRIO,          /* crio-ID.scope, crio-ID */
	CONTAINER_RT_PODMAN,        /* libpod-ID.scope, libpod-ID, libpod-payload-ID */
	CONTAINER_RT_UNKNOWN,       /* a bare ID (cgroupfs driver of Kubernetes, ECS, ...) */
};

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

/* The container named by one cgroup path (e.g. "/system.slice/docker-ID.scope"):
 * writes the ID into `id` (CONTAINER_ID_LEN + 1 bytes) and returns its
 * runtime, or CONTAINER_RT_NONE (id "").  Components are examined from
 * the last, so nested containers give the innermost one. */
enum container_runtime container_id_of_path(const char *path, size_t len, char *id);

/* "docker", "containerd", "cri-o", "podman", "unknown"; "" for none. */
const char *container_runtime_name(enum container_runtime rt);

/* The cgroup that `--cgroup PATH` names. */
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

/* Opens `path` as process `pid` sees it: through its root directory
 * (/proc/PID/root, which also puts the walk in its mount namespace), with
 * every component -- "..", absolute and relative symlinks -- resolved
 * inside that root, never above it, and /proc magic links refused.
 * A relative `path` is taken from the root too.
 *
 * `flags` may only ask for reading (O_RDONLY, O_PATH, O_DIRECTORY,
 * O_NOFOLLOW, O_NONBLOCK, O_NOATIME); O_CLOEXEC is always added.
 * Returns a file descriptor, or a negative errno with a one-line message
 * in errbuf naming the path and the pid: -ESRCH (the process is gone),
 * -ENOENT (also for a symlink whose target exists only outside the root),
 * -ELOOP (a magic link, or too many symlinks), -EINVAL (flags asking for
 * more than reading), -ENOSYS (the kernel has no openat2: before Linux
 * 5.6 there is no safe way, so no file is opened at all), or whatever
 * else openat2 says (-EACCES, ...). */
int container_open(int pid, const char *path, int flags, char *errbuf, size_t errlen);

/* The same below a root directory already open (`root_fd`, e.g. an
 * O_PATH descriptor of /proc/PID/root kept for many opens). */
int container_open_at(int root_fd, const char *path, int flags, char *errbuf, size_t errlen);

/* An O_PATH descriptor of /proc/PID/root, or -ESRCH. */
int container_root(int pid);

#endif
