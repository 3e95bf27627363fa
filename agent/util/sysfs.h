/* One-line files of sysfs, procfs and tracefs ("0-1", a tracepoint id). */
#ifndef AGENT_SYSFS_H
#define AGENT_SYSFS_H

#include <stddef.h>

/* The first line of `path` into buf, without its newline and trailing
 * blanks.  Returns 0, -EIO when the file is empty, or the negative errno
 * of fopen (-ENOENT: no such file), with "PATH: reason" in err. */
int sysfs_read_line(const char *path, char *buf, size_t len, char *err, size_t errlen);

/* The same with `path` relative to the directory fd `dirfd` (openat(2);
 * AT_FDCWD: the working directory). */
int sysfs_read_line_at(int dirfd, const char *path, char *buf, size_t len, char *err, size_t errlen);

#endif
