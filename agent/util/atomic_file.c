#include "agent/util/atomic_file.h"
#include "agent/util/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TMP_ATTEMPTS 100

static void release(struct atomic_file *af)
{
	if (af->dir_fd >= 0)
		close(af->dir_fd);
	free(af->name);
	free(af->tmp_name);
	free(af->path);
	*af = (struct atomic_file)ATOMIC_FILE_INIT;
}

void atomic_file_abort(struct atomic_file *af)
{
	if (af->fd >= 0)
		close(af->fd);
	af->fd = -1;
	if (af->tmp_name && af->dir_fd >= 0)
		unlinkat(af->dir_fd, af->tmp_name, 0);
	release(af);
}

/* "<dir>/<name>" for messages; NULL if out of memory. */
static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "",
			 name);
	return s;
}

/* Takes dir_fd (owned from here on) and creates the temporary file in it. */
static int create_tmp(struct atomic_file *af, int dir_fd, const char *dir_path, const char *name,
		      const char *path, mode_t mode, char *errbuf, size_t errlen)
{
	static unsigned counter;
	struct timespec ts;
	size_t tmplen;
	int err = 0;

	af->dir_fd = dir_fd;
	af->name = strdup(name);
	af->path = path ? strdup(path) : join(dir_path, name);
	/* ".<name>.<pid>.<n>.tmp" */
	tmplen = strlen(name) + 64;
	af->tmp_name = malloc(tmplen);
	if (!af->name || !af->path || !af->tmp_name) {
		release(af);
		errbuf_set(errbuf, errlen, "%s: out of memory", path ? path : name);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (int i = 0; i < TMP_ATTEMPTS; i++) {
		unsigned n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);

		/* the name is cut so that the suffix fits in NAME_MAX */
		snprintf(af->tmp_name, tmplen, ".%.200s.%ld.%x%lx.tmp", name, (long)getpid(), n,
			 (unsigned long)ts.tv_nsec);
		/* O_EXCL: never an existing file, nor (with O_NOFOLLOW, which
		 * O_EXCL implies but says twice) a symlink's target.  O_RDWR:
		 * a writer may read back what it wrote (libelf's ELF_C_RDWR). */
		af->fd = openat(dir_fd, af->tmp_name,
				O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (af->fd >= 0)
			break;
		err = errno;
		if (err != EEXIST)
			break;
	}
	if (af->fd < 0) {
		free(af->tmp_name);
		af->tmp_name = NULL;
		errbuf_set(errbuf, errlen, "%s: cannot create a temporary file in %s: %s", af->path,
			   dir_path, strerror(err));
		release(af);
		return -err;
	}
	/* The mode asked for, not what the umask leaves of it. */
	if (fchmod(af->fd, mode) < 0) {
		err = errno;
		errbuf_set(errbuf, errlen, "%s: setting mode %04o: %s", af->path, (unsigned)mode,
			   strerror(err));
		atomic_file_abort(af);
		return -err;
	}
	return 0;
}

static int check_name(const char *name, const char *path, char *errbuf, size_t errlen)
{
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		errbuf_set(errbuf, errlen, "%s: is a directory", path);
		return -EISDIR;
	}
	if (strlen(name) > NAME_MAX) {
		errbuf_set(errbuf, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	return 0;
}

int atomic_file_openat(struct atomic_file *af, int dir_fd, const char *dir_path, const char *name,
		       mode_t mode, char *errbuf, size_t errlen)
{
	int ret, fd;

	*af = (struct atomic_file)ATOMIC_FILE_INIT;
	ret = check_name(name, name, errbuf, errlen);
	if (ret)
		return ret;
	if (strchr(name, '/')) {
		errbuf_set(errbuf, errlen, "%s: not a file name", name);
		return -EINVAL;
	}
	fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		errbuf_set(errbuf, errlen, "%s: %s", dir_path, strerror(-ret));
		return ret;
	}
	return create_tmp(af, fd, dir_path, name, NULL, mode, errbuf, errlen);
}

int atomic_file_open(struct atomic_file *af, const char *path, mode_t mode, char *errbuf,
		     size_t errlen)
{
	const char *slash, *base;
	char *dir;
	int ret, fd;

	*af = (struct atomic_file)ATOMIC_FILE_INIT;
	if (!path || !*path) {
		errbuf_set(errbuf, errlen, "empty output path");
		return -EINVAL;
	}
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	ret = check_name(base, path, errbuf, errlen);
	if (ret)
		return ret;
	dir = !slash ? strdup(".") : slash == path ? strdup("/") :
		strndup(path, (size_t)(slash - path));
	if (!dir) {
		errbuf_set(errbuf, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	/* Readable for the fsync after the rename; a directory we may only
	 * write and search still takes the file, unsynced. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == EACCES)
		fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		errbuf_set(errbuf, errlen, "%s: cannot create a temporary file in %s: %s", path, dir,
			   strerror(-ret));
	} else {
		ret = create_tmp(af, fd, dir, base, path, mode, errbuf, errlen);
	}
	free(dir);
	return ret;
}

int atomic_file_write(struct atomic_file *af, const void *buf, size_t len,
		      char *errbuf, size_t errlen)
{
	const uint8_t *p = buf;

	if (af->fd < 0) {
		errbuf_set(errbuf, errlen, "write to a closed output file");
		return -EBADF;
	}
	while (len) {
		ssize_t n = write(af->fd, p, len);

		if (n < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			errbuf_set(errbuf, errlen, "writing %s: %s", af->path, strerror(err));
			return -err;
		}
		if (n == 0) {
			errbuf_set(errbuf, errlen, "writing %s: no progress", af->path);
			return -EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int atomic_file_commit(struct atomic_file *af, char *errbuf, size_t errlen)
{
	int err;

	if (af->fd < 0 || !af->tmp_name) {
		errbuf_set(errbuf, errlen, "commit of a closed output file");
		atomic_file_abort(af);
		return -EBADF;
	}
	if (fsync(af->fd) < 0) {
		err = errno;
		errbuf_set(errbuf, errlen, "fsync %s: %s", af->path, strerror(err));
		goto fail;
	}
	err = close(af->fd) < 0 ? errno : 0;
	af->fd = -1;
	if (err && err != EINTR) {
		errbuf_set(errbuf, errlen, "closing %s: %s", af->path, strerror(err));
		goto fail;
	}
	if (renameat(af->dir_fd, af->tmp_name, af->dir_fd, af->name) < 0) {
		err = errno;
		errbuf_set(errbuf, errlen, "renaming the temporary file to %s: %s", af->path,
			   strerror(err));
		goto fail;
	}
	free(af->tmp_name);
	af->tmp_name = NULL;
	fsync(af->dir_fd);      /* best effort: the rename has happened already */
	release(af);
	return 0;
fail:
	atomic_file_abort(af);
	return -err;
}
