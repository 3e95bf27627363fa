#include "agent/container/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/util/array.h"

/* One line: HIERARCHY-ID ':' CONTROLLERS ':' PATH, the path absolute
 * (a cgroup name may hold ':', so it is everything after the second). */
static int parse_line(const char *s, size_t n, struct cgroup_info *ci, char *v1_id,
		      enum container_runtime *v1_rt)
{
	const char *c1, *c2, *path;
	size_t plen, i;
	bool v2;

	for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		;
	if (i == 0 || i > 10 || i == n || s[i] != ':')
		return -EINVAL;
	c1 = s + i;
	c2 = memchr(c1 + 1, ':', n - i - 1);
	if (!c2)
		return -EINVAL;
	path = c2 + 1;
	plen = n - (size_t)(path - s);
	if (!plen || path[0] != '/')
		return -EINVAL;
	if (memchr(s, 0, n))
		return -EINVAL;
	if (plen >= PATH_MAX)
		return -ENAMETOOLONG;
	v2 = i == 1 && s[0] == '0' && c2 == c1 + 1;
	if (v2) {
		if (ci->has_v2)
			return -EINVAL;   /* the kernel writes one */
		ci->has_v2 = true;
		memcpy(ci->path, path, plen);
		ci->path[plen] = 0;
		ci->runtime = container_id_of_path(path, plen, ci->container_id);
	} else if (*v1_rt == CONTAINER_RT_NONE) {
		*v1_rt = container_id_of_path(path, plen, v1_id);
	}
	return 0;
}

int cgroup_parse(const char *buf, size_t len, struct cgroup_info *ci)
{
	char v1_id[CONTAINER_ID_LEN + 1] = "";
	enum container_runtime v1_rt = CONTAINER_RT_NONE;
	size_t at = 0, lines = 0;
	int ret;

	memset(ci, 0, sizeof(*ci));
	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;

		ret = parse_line(buf + at, n, ci, v1_id, &v1_rt);
		if (ret) {
			memset(ci, 0, sizeof(*ci));
			return ret;
		}
		lines++;
		at += n + 1;
	}
	if (!lines)
		return -EINVAL;
	if (ci->runtime == CONTAINER_RT_NONE && v1_rt != CONTAINER_RT_NONE) {
		memcpy(ci->container_id, v1_id, sizeof(v1_id));
		ci->runtime = v1_rt;
	}
	return 0;
}

/* The whole of a /proc file: they are generated on read, so one read()
 * of a large enough buffer is not guaranteed to be all of it. */
static int read_proc_file(const char *path, char **out, size_t *outlen)
{
	/* 1 MiB: far above 16 hierarchies of PATH_MAX paths. */
	static const size_t most = 1u << 20;
	size_t cap = 0, len = 0;
	char *buf = NULL;
	ssize_t n = 0;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	do {
		if (len == cap) {
			err = cap >= most ? -EFBIG : array_reserve_first(&buf, &cap, len + 1, 4096);
			if (err)
				break;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0)
			err = -errno;
		else
			len += (size_t)n;
	} while (n > 0);
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

int cgroup_read(int pid, struct cgroup_info *ci)
{
	char path[64], *buf;
	size_t len;
	int ret;

	memset(ci, 0, sizeof(*ci));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	ret = read_proc_file(path, &buf, &len);
	if (ret)
		return ret;
	/* A process that exited between open and read shows nothing. */
	ret = len ? cgroup_parse(buf, len, ci) : -ESRCH;
	free(buf);
	return ret;
}

