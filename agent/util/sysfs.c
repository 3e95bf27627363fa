#include "agent/util/sysfs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/util/errbuf.h"

int sysfs_read_line(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	size_t n;
	int ret;

	if (!f) {
		ret = -errno;
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
