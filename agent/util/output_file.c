#include "agent/util/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/util/errbuf.h"

static const char *output_name(const struct output_file *of)
{
	return strcmp(of->path, "-") ? of->path : "stdout";
}

static int fail(char *errbuf, size_t errlen, const char *path, int err)
{
	errbuf_set(errbuf, errlen, "%s: %s", path, strerror(err));
	return -err;
}

/* The descriptor a path names as a shell's redirections take it: "-" and
 * /dev/stdout are 1, /dev/stderr 2, /dev/fd/N and /proc/self/fd/N are N.
 * -1 for any other path. */
static int named_fd(const char *path)
{
	static const char *const fd_dirs[] = { "/dev/fd/", "/proc/self/fd/" };
	char *end;
	long n;

	if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"))
		return STDOUT_FILENO;
	if (!strcmp(path, "/dev/stderr"))
		return STDERR_FILENO;
	for (size_t i = 0; i < sizeof(fd_dirs) / sizeof(fd_dirs[0]); i++) {
		size_t len = strlen(fd_dirs[i]);

		if (strncmp(path, fd_dirs[i], len) || path[len] < '0' || path[len] > '9')
			continue;
		errno = 0;
		n = strtol(path + len, &end, 10);
		return errno || *end || n > INT_MAX ? -1 : (int)n;
	}
	return -1;
}

/* Writes into descriptor `fd` itself, through a copy: the same open file,
 * so a file a shell opened for us keeps its offset (and its O_APPEND),
 * and stays the file it was, not a new one renamed over it. */
static int open_fd(struct output_file *of, int fd, char *errbuf, size_t errlen)
{
	of->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (of->fd < 0)
		return fail(errbuf, errlen, output_name(of), errno);
	/* The output owns what was stdout; anything else printed there from
	 * now on (a command run with -- CMD inherits fd 1) goes to stderr. */
	if (fd == STDOUT_FILENO) {
		fflush(stdout);
		dup2(STDERR_FILENO, STDOUT_FILENO);
	}
	of->open = true;
	return 0;
}

/* A device or a FIFO, checked to be the very file `st` describes. */
static int open_stream(struct output_file *of, const char *path, const struct stat *st,
		       char *errbuf, size_t errlen)
{
	struct stat now;
	int fd;

	/* Non-blocking: a device must not hold us in open (a serial line
	 * waiting for its carrier).  A FIFO without a reader is ENXIO then,
	 * and is opened again to wait for one, as a shell's '>' does. */
	fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENXIO && S_ISFIFO(st->st_mode))
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fail(errbuf, errlen, path, errno);
	if (fstat(fd, &now) || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
	    (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
		close(fd);
		errbuf_set(errbuf, errlen, "%s: replaced while being opened", path);
		return -EAGAIN;
	}
	/* Writes wait for the reader, rather than fail with EAGAIN. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		int err = errno;

		close(fd);
		return fail(errbuf, errlen, path, err);
	}
	of->fd = fd;
	of->open = true;
	return 0;
}

/* A regular file at `path`, or none yet: replaced atomically.  Through a
 * symlink, its target is replaced and the link stays. */
static int open_regular(struct output_file *of, const char *path, char *errbuf, size_t errlen)
{
	struct stat lst;
	char *target = NULL;
	int ret;

	if (!lstat(path, &lst) && S_ISLNK(lst.st_mode)) {
		target = realpath(path, NULL);
		if (!target)
			return fail(errbuf, errlen, path, errno);
	}
	ret = atomic_file_open(&of->af, target ? target : path, OUTPUT_FILE_MODE, errbuf, errlen);
	free(target);
	if (!ret)
		of->open = true;
	return ret;
}

int output_file_open(struct output_file *of, const char *path, char *errbuf, size_t errlen)
{
	struct stat st, lst;
	int fd;

	*of = (struct output_file)OUTPUT_FILE_INIT;
	of->path = path;
	if (!path || !*path) {
		errbuf_set(errbuf, errlen, "empty output path");
		return -EINVAL;
	}
	fd = named_fd(path);
	if (fd >= 0)
		return open_fd(of, fd, errbuf, errlen);
	if (stat(path, &st)) {
		int err = errno;

		if (err != ENOENT)
			return fail(errbuf, errlen, path, err);
		if (!lstat(path, &lst) && S_ISLNK(lst.st_mode)) {
			errbuf_set(errbuf, errlen, "%s: not writing through a dangling symlink", path);
			return -ENOENT;
		}
		return open_regular(of, path, errbuf, errlen);
	}
	if (S_ISREG(st.st_mode))
		return open_regular(of, path, errbuf, errlen);
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		return open_stream(of, path, &st, errbuf, errlen);
	if (S_ISDIR(st.st_mode))
		return fail(errbuf, errlen, path, EISDIR);
	errbuf_set(errbuf, errlen, "%s: not a regular file, character device or FIFO", path);
	return -EINVAL;
}

int output_file_write(struct output_file *of, const void *buf, size_t len, char *errbuf,
		      size_t errlen)
{
	const uint8_t *p = buf;

	if (of->af.fd >= 0)
		return atomic_file_write(&of->af, buf, len, errbuf, errlen);
	if (of->fd < 0) {
		errbuf_set(errbuf, errlen, "write to a closed output file");
		return -EBADF;
	}
	while (len) {
		ssize_t n = write(of->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errbuf_set(errbuf, errlen, "writing %s: %s", output_name(of),
				   n < 0 ? strerror(errno) : "no progress");
			return n < 0 ? -errno : -EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int output_file_commit(struct output_file *of, char *errbuf, size_t errlen)
{
	int ret = 0;

	if (!of->open) {
		errbuf_set(errbuf, errlen, "commit of a closed output file");
		return -EBADF;
	}
	if (of->fd < 0) {
		ret = atomic_file_commit(&of->af, errbuf, errlen);
	} else if (close(of->fd) < 0 && errno != EINTR) {
		ret = -errno;
		errbuf_set(errbuf, errlen, "closing %s: %s", output_name(of),
			   strerror(-ret));
	}
	*of = (struct output_file)OUTPUT_FILE_INIT;
	return ret;
}

void output_file_abort(struct output_file *of)
{
	atomic_file_abort(&of->af);
	if (of->fd >= 0)
		close(of->fd);
	*of = (struct output_file)OUTPUT_FILE_INIT;
}

int output_file_finish(struct output_file *of, int ret, char *errbuf, size_t errlen)
{
	if (!ret)
		return output_file_commit(of, errbuf, errlen);
	output_file_abort(of);
	return ret;
}

int output_file_write_all(const char *path, const void *buf, size_t len, char *errbuf,
			  size_t errlen)
{
	struct output_file of;
	int ret;

	ret = output_file_open(&of, path, errbuf, errlen);
	if (ret < 0)
		return ret;
	return output_file_finish(&of, output_file_write(&of, buf, len, errbuf, errlen), errbuf,
				  errlen);
}
