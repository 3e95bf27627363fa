/*
 * Directories and files under a directory the agent, running as root, is
 * told to use (--cache-dir): what it reads and writes there must not be
 * someone else's to choose.  Shared by the caches kept there (the CFI
 * tables, agent/unwind/cache.h; decompressed debug files,
 * agent/unwind/debug_cache.h), whose headers say what this means for them.
 *
 *   - DIR and DIR/SUB are opened without following a symlink
 *     (O_PATH|O_NOFOLLOW, then fstat of that very inode), and must be
 *     directories owned by the effective user or root, with no group or
 *     other write permission.  DIR's parents are followed and not
 *     checked: everything below DIR is reached from DIR's open fd, never
 *     by path again, so whoever controls a parent can take the cache away
 *     but not point a read or write elsewhere.
 *   - A file is opened O_NOFOLLOW|O_NONBLOCK (a FIFO cannot block) and
 *     must be a regular file with the same owner and permission rules.
 *   - What is created is the agent's own: directories TRUSTED_DIR_MODE
 *     (missing parents of DIR 0755), whatever the umask.
 *
 * Functions return a negative errno with a one-line reason in errbuf.
 */
#ifndef AGENT_UTIL_TRUSTED_DIR_H
#define AGENT_UTIL_TRUSTED_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#define TRUSTED_DIR_MODE 0700
#define TRUSTED_FILE_MODE 0600

/* Only we or root can have written `st`, and nobody else can write it
 * now: 0, or -EPERM.  `what` ("directory", "file") and `path` name it. */
int trusted_check(const struct stat *st, const char *what, const char *path, char *errbuf,
		  size_t errlen);

/* Opens DIR/SUB (SUB a single component), checking both, creating them
 * (and DIR's missing parents) if `create`.  The path of DIR/SUB goes to
 * subpath.  Returns its fd, -ENOENT (missing and not created), -EPERM
 * (either is not trusted) or another negative errno. */
int trusted_dir_open(const char *dir, const char *sub, bool create, char *subpath,
		     size_t subsize, char *errbuf, size_t errlen);

/* Opens `name` in the trusted directory dir_fd (named dir_path) read-only,
 * and fstats it into *st.  Returns the fd; -ENOENT (no message), -EPERM (a
 * symbolic link, or not trusted), -EBADMSG (not a regular file) or another
 * negative errno. */
int trusted_file_open(int dir_fd, const char *dir_path, const char *name, struct stat *st,
		      char *errbuf, size_t errlen);

/* True the first time it is called in the process: the cache's users (CFI
 * tables, debug-file copies) warn of an untrusted directory once in all,
 * not once each. */
bool trusted_warn_first(void);

#endif
