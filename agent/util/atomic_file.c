#include "agent/util/atomic_file.h"
#include "agent/util/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TMP_ATTEMPTS 100

static void release(struct atomic_file *af)
{
	free(af->path);
	free(af->tmp_path);
	af->path = NULL;
	af->tmp_path = NULL;
	af->fd = -1;
}

void atomic_file_abort(struct atomic_file *af)
{
	if (af->fd >= 0)
		close(af->fd);
	if (af->tmp_path)
		unlink(af->tmp_path);
	release(af);
}

/* The directory part of path ("." if none), or NULL if out of memory. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int atomic_file_open(struct atomic_file *af, const char *path, mode_t mode, char *errbuf,
		     size_t errlen)
{
	static unsigned counter;
	const char *slash, *base;
	size_t dirlen, tmplen;
	struct timespec ts;
	int err = 0;

	af->fd = -1;
	af->path = NULL;
	af->tmp_path = NULL;
	if (!path || !*path) {
		errbuf_set(errbuf, errlen, "empty output path");
		return -EINVAL;
	}
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	dirlen = (size_t)(base - path);
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		errbuf_set(errbuf, errlen, "%s: is a directory", path);
		return -EISDIR;
	}
	af->path = strdup(path);
	/* "<dir>/.<base>.<pid>.<n>.tmp" */
	tmplen = strlen(path) + 64;
	af->tmp_path = malloc(tmplen);
	if (!af->path || !af->tmp_path) {
		release(af);
		errbuf_set(errbuf, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (int i = 0; i < TMP_ATTEMPTS; i++) {
		unsigned n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);

		/* the base name is cut so that the suffix fits in NAME_MAX */
		snprintf(af->tmp_path, tmplen, "%.*s.%.200s.%ld.%x%lx.tmp", (int)dirlen, path, base,
			 (long)getpid(), n, (unsigned long)ts.tv_nsec);
		af->fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (af->fd >= 0)
			return 0;
		err = errno;
		if (err != EEXIST)
			break;
	}
	free(af->tmp_path);
	af->tmp_path = NULL;
	{
		char *dir = dir_of(path);

		errbuf_set(errbuf, errlen, "%s: cannot create a temporary file in %s: %s",
			path, dir ? dir : ".", strerror(err));
		free(dir);
	}
	release(af);
	return -err;
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
			errbuf_set(errbuf, errlen, "writing %s: %s", af->tmp_path, strerror(err));
			return -err;
		}
		if (n == 0) {
			errbuf_set(errbuf, errlen, "writing %s: no progress", af->tmp_path);
			return -EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void fsync_dir(const char *path)
{
	char *dir = dir_of(path);
	int fd;

	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);      /* best effort: the rename has happened already */
		close(fd);
	}
	free(dir);
}

int atomic_file_commit(struct atomic_file *af, char *errbuf, size_t errlen)
{
	int err;

	if (af->fd < 0 || !af->tmp_path) {
		errbuf_set(errbuf, errlen, "commit of a closed output file");
		atomic_file_abort(af);
		return -EBADF;
	}
	if (fsync(af->fd) < 0) {
		err = errno;
		errbuf_set(errbuf, errlen, "fsync %s: %s", af->tmp_path, strerror(err));
		goto fail;
	}
	err = close(af->fd) < 0 ? errno : 0;
	af->fd = -1;
	if (err && err != EINTR) {
		errbuf_set(errbuf, errlen, "closing %s: %s", af->tmp_path, strerror(err));
		goto fail;
	}
	if (rename(af->tmp_path, af->path) < 0) {
		err = errno;
		errbuf_set(errbuf, errlen, "renaming %s to %s: %s", af->tmp_path, af->path,
			strerror(err));
		goto fail;
	}
	free(af->tmp_path);
	af->tmp_path = NULL;
	fsync_dir(af->path);
	release(af);
	return 0;
fail:
	atomic_file_abort(af);
	return -err;
}

int atomic_file_write_all(const char *path, const void *buf, size_t len,
			  char *errbuf, size_t errlen)
{
	struct atomic_file af;
	int ret;

	ret = atomic_file_open(&af, path, 0666, errbuf, errlen);
	if (ret < 0)
		return ret;
	ret = atomic_file_write(&af, buf, len, errbuf, errlen);
	if (ret < 0) {
		atomic_file_abort(&af);
		return ret;
	}
	return atomic_file_commit(&af, errbuf, errlen);
}
