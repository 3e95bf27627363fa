#include "agent/util/trusted_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/util/errbuf.h"

/* Missing directories above DIR (mkdir -p), which hold nothing read. */
#define PARENT_DIR_MODE 0755

int trusted_check(const struct stat *st, const char *what, const char *path, char *errbuf,
		  size_t errlen)
{
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		errbuf_set(errbuf, errlen, "cache %s %s: owned by uid %u", what, path,
			   (unsigned)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		errbuf_set(errbuf, errlen, "cache %s %s: writable by others (mode %04o)", what, path,
			   (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

static int fail_errno(char *errbuf, size_t errlen, const char *path)
{
	int err = errno;

	errbuf_set(errbuf, errlen, "%s: %s", path, strerror(err));
	return -err;
}

/* Opens the directory `name` in parent_fd (creating it TRUSTED_DIR_MODE
 * if asked), without following it if it is a symlink, and checks it. */
static int open_checked_dir(int parent_fd, const char *name, const char *path, bool create,
			    char *errbuf, size_t errlen)
{
	bool created = false;
	struct stat st;
	int pfd, fd, ret;

	if (create) {
		if (!mkdirat(parent_fd, name, TRUSTED_DIR_MODE)) {
			created = true;
		} else if (errno != EEXIST) {
			ret = -errno;
			errbuf_set(errbuf, errlen, "%s: cannot create cache directory: %s", path,
				   strerror(-ret));
			return ret;
		}
	}
	/* O_PATH|O_NOFOLLOW: the very inode at `name`, a symlink included,
	 * looked at before anything is opened through it. */
	pfd = openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return fail_errno(errbuf, errlen, path);
	if (fstat(pfd, &st)) {
		ret = fail_errno(errbuf, errlen, path);
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		errbuf_set(errbuf, errlen, "cache directory %s: a symbolic link", path);
		ret = -EPERM;
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		errbuf_set(errbuf, errlen, "%s: %s", path, strerror(ENOTDIR));
		ret = -ENOTDIR;
		goto out;
	}
	ret = trusted_check(&st, "directory", path, errbuf, errlen);
	if (ret)
		goto out;
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = fail_errno(errbuf, errlen, path);
		goto out;
	}
	/* The mode it was made with, not what the umask left of it. */
	if (created)
		fchmod(fd, TRUSTED_DIR_MODE);
	ret = fd;
out:
	close(pfd);
	return ret;
}

/* mkdir -p of the directories above DIR, following symlinks: they are
 * the administrator's path, and hold nothing that is read. */
static void make_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(path, PARENT_DIR_MODE);
		*p = '/';
	}
	mkdir(path, PARENT_DIR_MODE);
}

int trusted_dir_open(const char *dir, const char *sub, bool create, char *subpath,
		     size_t subsize, char *errbuf, size_t errlen)
{
	char copy[PATH_MAX], *slash;
	const char *parent, *name;
	size_t len = strlen(dir);
	int pfd, dfd, sfd;

	/* "DIR/" would follow DIR even with O_NOFOLLOW. */
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (!len) {
		errbuf_set(errbuf, errlen, "empty cache directory path");
		return -EINVAL;
	}
	if (len >= sizeof(copy) ||
	    snprintf(subpath, subsize, "%.*s/%s", (int)len, dir, sub) >= (int)subsize) {
		errbuf_set(errbuf, errlen, "%s: cache path too long", dir);
		return -ENAMETOOLONG;
	}
	memcpy(copy, dir, len);
	copy[len] = 0;
	slash = strrchr(copy, '/');
	if (!slash) {
		parent = ".";
		name = copy;
	} else if (slash == copy) {
		parent = "/";
		name = copy[1] ? copy + 1 : ".";
	} else {
		*slash = 0;
		parent = copy;
		name = slash + 1;
	}
	if (create && slash && slash != copy)
		make_parents(copy);
	pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return fail_errno(errbuf, errlen, parent);
	if (slash && slash != copy)
		*slash = '/';
	dfd = open_checked_dir(pfd, name, copy, create, errbuf, errlen);
	close(pfd);
	if (dfd < 0)
		return dfd;
	sfd = open_checked_dir(dfd, sub, subpath, create, errbuf, errlen);
	close(dfd);
	return sfd;
}

int trusted_file_open(int dir_fd, const char *dir_path, const char *name, struct stat *st,
		      char *errbuf, size_t errlen)
{
	char path[PATH_MAX + NAME_MAX + 2];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir_path, name);
	/* O_NOFOLLOW: no symlink is ever read through.  O_NONBLOCK: a FIFO
	 * opens at once (and is refused below) rather than wait forever for
	 * a writer; it changes nothing for a regular file. */
	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		if (errno == ELOOP) {
			errbuf_set(errbuf, errlen, "cache file %s: a symbolic link", path);
			return -EPERM;
		}
		return fail_errno(errbuf, errlen, path);
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		errbuf_set(errbuf, errlen, "%s: not a regular file", path);
		close(fd);
		return -EBADMSG;
	}
	ret = trusted_check(st, "file", path, errbuf, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

bool trusted_warn_first(void)
{
	static bool warned;

	return !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED);
}
