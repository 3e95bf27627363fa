/*
 * Atomic replacement of a file: the data goes to a temporary file in the
 * destination's directory, which is fsync'ed and renamed over the
 * destination only when everything succeeded.  On any failure the
 * temporary file is unlinked and the destination is left untouched.
 *
 * Every function that can fail returns 0 or a negative errno and puts a
 * one-line reason (no trailing newline) into errbuf.
 */
#ifndef AGENT_UTIL_ATOMIC_FILE_H
#define AGENT_UTIL_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

struct atomic_file {
	int fd;                 /* of the temporary file; -1 when closed */
	char *path;             /* destination */
	char *tmp_path;         /* temporary file, NULL once renamed/unlinked */
};

/* Creates the temporary file for `path` with `mode` (less the umask):
 * 0666 for outputs the user reads, 0644 for the table cache. */
int atomic_file_open(struct atomic_file *af, const char *path, mode_t mode, char *errbuf,
		     size_t errlen);

/* Writes all of buf (retrying short writes and EINTR).  On failure the
 * file is still open: call atomic_file_abort. */
int atomic_file_write(struct atomic_file *af, const void *buf, size_t len,
		      char *errbuf, size_t errlen);

/* fsyncs, closes and renames the temporary file over the destination,
 * then (best effort) fsyncs the directory.  Always releases `af`; on
 * failure the temporary file is unlinked. */
int atomic_file_commit(struct atomic_file *af, char *errbuf, size_t errlen);

/* Closes and unlinks the temporary file and releases `af`.  Safe to call
 * again, and after a failed open or a commit (it does nothing then). */
void atomic_file_abort(struct atomic_file *af);

/* open (mode 0666) + write + commit of one buffer. */
int atomic_file_write_all(const char *path, const void *buf, size_t len,
			  char *errbuf, size_t errlen);

#endif
