#include "agent/container/container_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/util/errbuf.h"

int container_root(int pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

#define READ_ONLY_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_NOATIME | O_CLOEXEC)

static int open_in_root(int root_fd, const char *path, int flags)
{
	/* openat2 refuses O_NOCTTY next to O_PATH, where it means nothing. */
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY)),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int tries, fd = -1;

	/* EAGAIN: a rename raced a ".." and the kernel could not prove the
	 * walk stayed inside; the kernel's advice is to retry. */
	for (tries = 0; tries < 16; tries++) {
		fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd < 0 ? -errno : fd;
}

static int open_checked(int root_fd, const char *path, int flags, int pid, char *errbuf,
			size_t errlen)
{
	char who[48] = "";
	int fd;

	if (pid > 0)
		snprintf(who, sizeof(who), " (as process %d sees it)", pid);
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & ~(READ_ONLY_FLAGS | O_ACCMODE))) {
		errbuf_set(errbuf, errlen, "%s: open flags 0%o ask for more than reading", path,
			   (unsigned)flags);
		return -EINVAL;
	}
	if (!path[0]) {
		errbuf_set(errbuf, errlen, "empty path");
		return -ENOENT;
	}
	fd = open_in_root(root_fd, path, flags);
	if (fd == -ENOSYS)
		errbuf_set(errbuf, errlen, "%s%s: this kernel has no openat2 (Linux 5.6 or later is "
			   "needed to resolve paths inside a container safely): not opened", path, who);
	else if (fd < 0)
		errbuf_set(errbuf, errlen, "%s%s: %s", path, who, strerror(-fd));
	return fd;
}

int container_open_at(int root_fd, const char *path, int flags, char *errbuf, size_t errlen)
{
	return open_checked(root_fd, path, flags, 0, errbuf, errlen);
}

int container_open(int pid, const char *path, int flags, char *errbuf, size_t errlen)
{
	int root = container_root(pid), fd;

	if (root < 0) {
		errbuf_set(errbuf, errlen, "process %d: %s", pid,
			   root == -ESRCH ? "no such process" : strerror(-root));
		return root;
	}
	fd = open_checked(root, path, flags, pid, errbuf, errlen);
	close(root);
	return fd;
}
