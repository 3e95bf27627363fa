/*
 * Atomic replacement of a file: the data goes to a temporary file in the
 * destination's directory, which is fsync'ed and renamed over the
 * destination only when everything succeeded.  On any failure the
 * temporary file is unlinked and the destination is left untouched.
 *
 * Everything happens relative to one open directory: the temporary file
 * is created there with O_EXCL|O_NOFOLLOW (a name planted in the
 * directory, symlink or not, is never opened), and the rename replaces
 * whatever is at the destination's name without following it.  The file
 * gets exactly the mode asked for, whatever the umask.
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
	int dir_fd;             /* where both names live; -1 once released */
	char *name;             /* destination, in dir_fd */
	char *tmp_name;         /* temporary file, NULL once renamed/unlinked */
	char *path;             /* destination as the messages name it */
};

#define ATOMIC_FILE_INIT { .fd = -1, .dir_fd = -1 }

/* Creates the temporary file for `path`, whose directory part is looked
 * up as given (symlinks in it are followed: it is the caller's path).
 * The base name must be a file name: "", "dir/", "." and ".." are
 * -EISDIR, and one longer than NAME_MAX -ENAMETOOLONG. */
int atomic_file_open(struct atomic_file *af, const char *path, mode_t mode, char *errbuf,
		     size_t errlen);

/* The same in the directory open at dir_fd (duplicated: the caller keeps
 * its own), for `name`, a single path component.  `dir_path` only names
 * the directory in messages. */
int atomic_file_openat(struct atomic_file *af, int dir_fd, const char *dir_path, const char *name,
		       mode_t mode, char *errbuf, size_t errlen);

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

#endif
