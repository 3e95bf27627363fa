#include "agent/util/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/util/errbuf.h"

int sysfs_read_line_at(int dirfd, const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	size_t n;
	int ret;

	if (!f) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		errbuf_set(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		errbuf_set(err, errlen, "%s: empty", path);
		return -EIO;
	}
	fclose(f);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

int sysfs_read_line(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	return sysfs_read_line_at(AT_FDCWD, path, buf, len, err, errlen);
}
