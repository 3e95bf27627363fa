/*
 * The files a process in a container sees, opened from the host without
 * ever leaving its root.
 *
 * The agent runs on the host and is given host pids.  A container's files
 * are reached through /proc/PID/root, but a path walked from there follows
 * the container's symlinks, and an absolute symlink such as
 * /usr/bin/app -> /etc/shadow would otherwise resolve against the agent's
 * root, on the host.  container_open() resolves every component inside the
 * process's root (openat2 RESOLVE_IN_ROOT), as the kernel does for the
 * process itself.
 */
#ifndef AGENT_CONTAINER_OPEN_H
#define AGENT_CONTAINER_OPEN_H

#include <stddef.h>

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
