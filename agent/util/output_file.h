/*
 * Where a command's -o goes (record's profile, stat's counts), opened
 * before the work starts so that a path that cannot be written fails at
 * once, and written at the end:
 *
 *   "-", /dev/stdout     stdout (see output_file_open); like a shell, the
 *   /dev/stderr,         descriptor itself is written into, so that a file
 *   /dev/fd/N,           it is keeps its offset and stays the same file
 *   /proc/self/fd/N
 *   a character device   written straight into (/dev/null stays itself)
 *   or a FIFO            (opening one waits for its reader, as a shell's
 *                        '>' does)
 *   a regular file, or   replaced atomically (atomic_file.h): a temporary
 *   no file yet          file in the same directory, renamed over it once
 *                        everything was written; mode 0644 whatever the
 *                        umask
 *   a symlink            written through: its target is what the above
 *                        applies to, and the link stays.  The path is the
 *                        user's own, so it is followed as cp or a shell
 *                        would; a dangling one is refused, as cp does.
 *   anything else        refused: directories, sockets, block devices
 *
 * Every function that can fail returns 0 or a negative errno and puts a
 * one-line reason, naming the path, into errbuf.
 */
#ifndef AGENT_UTIL_OUTPUT_FILE_H
#define AGENT_UTIL_OUTPUT_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/util/atomic_file.h"

#define OUTPUT_FILE_MODE 0644

struct output_file {
	struct atomic_file af;  /* a regular file being replaced */
	int fd;                 /* stdout, a device or a FIFO; -1 otherwise */
	const char *path;       /* as given ("-" for stdout), not copied */
	bool open;
};

#define OUTPUT_FILE_INIT { .af = ATOMIC_FILE_INIT, .fd = -1 }

/* Opens `path` (which must outlive `of`) as the table above says.  For
 * stdout, the output is a copy of the descriptor stdout had, and stdout
 * itself becomes a copy of stderr: whatever else this process, or a
 * command it runs, prints on stdout goes to stderr and cannot get mixed
 * into the output. */
int output_file_open(struct output_file *of, const char *path, char *errbuf, size_t errlen);

/* Writes all of buf.  On failure the file is still open: call
 * output_file_abort. */
int output_file_write(struct output_file *of, const void *buf, size_t len, char *errbuf,
		      size_t errlen);

/* Puts a regular file in place, or closes the stream.  Always releases
 * `of`. */
int output_file_commit(struct output_file *of, char *errbuf, size_t errlen);

/* What ends a write that returned `ret`: commit when it is 0, else abort.
 * Returns ret, or what the commit returned. */
int output_file_finish(struct output_file *of, int ret, char *errbuf, size_t errlen);

/* Gives up: a regular file is left as it was (what a stream was sent
 * stays sent).  Safe in every state, and again. */
void output_file_abort(struct output_file *of);

/* open + write + commit of one buffer. */
int output_file_write_all(const char *path, const void *buf, size_t len, char *errbuf,
			  size_t errlen);

#endif
