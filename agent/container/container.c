#include "agent/container/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent/util/errbuf.h"

/* ---- /proc/PID/cgroup ------------------------------------------------ */

static bool all_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *prefix, size_t *plen)
{
	*plen = strlen(prefix);
	return n >= *plen && !memcmp(s, prefix, *plen);
}

/* Runtimes put a container's processes in a cgroup named after the
 * container, with a prefix saying whose it is; systemd's cgroup driver
 * adds ".scope".  Conmon, podman's and cri-o's monitor process, lives in
 * a cgroup named like its container's but is not in the container. */
static const struct {
	const char *prefix;
	enum container_runtime rt;
} id_prefixes[] = {
	{ "libpod-conmon-", CONTAINER_RT_NONE },
	{ "crio-conmon-", CONTAINER_RT_NONE },
	{ "libpod-payload-", CONTAINER_RT_PODMAN },   /* --cgroups=split */
	{ "libpod-", CONTAINER_RT_PODMAN },
	{ "cri-containerd-", CONTAINER_RT_CONTAINERD },
	{ "crio-", CONTAINER_RT_CRIO },
	{ "docker-", CONTAINER_RT_DOCKER },
};

/* The container one path component names, if any (*id then points at
 * its ID in `c`).  `parent` is the component above it. */
static enum container_runtime component_id(const char *c, size_t n, const char *parent,
					   size_t parent_len, const char **id)
{
	static const char scope[] = ".scope";
	size_t i, plen;
	bool unit = false;

	if (n > sizeof(scope) - 1 && !memcmp(c + n - (sizeof(scope) - 1), scope, sizeof(scope) - 1)) {
		n -= sizeof(scope) - 1;
		unit = true;
	}
	for (i = 0; i < sizeof(id_prefixes) / sizeof(id_prefixes[0]); i++) {
		if (!has_prefix(c, n, id_prefixes[i].prefix, &plen))
			continue;
		if (id_prefixes[i].rt == CONTAINER_RT_NONE || n - plen != CONTAINER_ID_LEN ||
		    !all_hex(c + plen, CONTAINER_ID_LEN))
			return CONTAINER_RT_NONE;
		*id = c + plen;
		return id_prefixes[i].rt;
	}
	/* The cgroupfs drivers: /docker/ID, /kubepods/QOS/podUID/ID, ... */
	if (!unit && n == CONTAINER_ID_LEN && all_hex(c, n)) {
		*id = c;
		return parent_len == 6 && !memcmp(parent, "docker", 6) ? CONTAINER_RT_DOCKER
									: CONTAINER_RT_UNKNOWN;
	}
	return CONTAINER_RT_NONE;
}

enum container_runtime container_id_of_path(const char *path, size_t len, char *id)
{
	size_t end = len;

	id[0] = 0;
	/* From the last component up: the innermost container wins, and a
	 * conmon's cgroup falls through to whatever contains it. */
	while (end > 0) {
		size_t start = end, pstart, pend;
		const char *found = NULL;
		enum container_runtime rt;

		while (start > 0 && path[start - 1] != '/')
			start--;
		pend = start ? start - 1 : 0;
		pstart = pend;
		while (pstart > 0 && path[pstart - 1] != '/')
			pstart--;
		rt = component_id(path + start, end - start, path + pstart, pend - pstart, &found);
		if (rt != CONTAINER_RT_NONE) {
			memcpy(id, found, CONTAINER_ID_LEN);
			id[CONTAINER_ID_LEN] = 0;
			return rt;
		}
		end = pend;
	}
	return CONTAINER_RT_NONE;
}

const char *container_runtime_name(enum container_runtime rt)
{
	switch (rt) {
	case CONTAINER_RT_DOCKER: return "docker";
	case CONTAINER_RT_CONTAINERD: return "containerd";
	case CONTAINER_RT_CRIO: return "cri-o";
	case CONTAINER_RT_PODMAN: return "podman";
	case CONTAINER_RT_UNKNOWN: return "unknown";
	case CONTAINER_RT_NONE: break;
	}
	return "";
}

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
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *p;
	ssize_t n;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return errno == ENOENT ? -ESRCH : -errno;
	}
	for (;;) {
		if (len == cap) {
			/* 1 MiB: far above 16 hierarchies of PATH_MAX paths. */
			if (cap >= (1u << 20)) {
				n = -1;
				errno = EFBIG;
				break;
			}
			p = realloc(buf, cap * 2);
			if (!p) {
				n = -1;
				errno = ENOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (n < 0) {
		int err = errno;

		close(fd);
		free(buf);
		return -err;
	}
	close(fd);
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

/* ---- the cgroup2 hierarchy and --cgroup ------------------------------- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = 0;
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

/* The cgroup2 mount holding `dir` (the longest mount point above it), or
 * the first cgroup2 mount when `dir` is NULL. */
static int find_cgroup2_mount(const char *dir, char *mnt, size_t mntlen, char *root,
			      size_t rootlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0, best = 0;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *fields[5], *sep, *save = NULL, *tok;
		int i;

		sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		*sep = 0;
		for (i = 0, tok = strtok_r(line, " ", &save); tok && i < 5;
		     tok = strtok_r(NULL, " ", &save))
			fields[i++] = tok;
		if (i < 5)
			continue;
		unescape_mountinfo(fields[3]);
		unescape_mountinfo(fields[4]);
		if (dir && (!path_under(dir, fields[4]) || strlen(fields[4]) <= best))
			continue;
		if (strlen(fields[4]) >= mntlen || strlen(fields[3]) >= rootlen) {
			ret = -ENAMETOOLONG;
			continue;
		}
		strcpy(mnt, fields[4]);
		strcpy(root, fields[3]);
		best = strlen(fields[4]);
		ret = 0;
		if (!dir)
			break;
	}
	free(line);
	fclose(f);
	return ret;
}

int cgroup2_mount(char *mnt, size_t mntlen, char *root, size_t rootlen)
{
	return find_cgroup2_mount(NULL, mnt, mntlen, root, rootlen);
}

int cgroup_id_at(int dirfd, const char *path, uint64_t *id)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h;
	struct stat st;
	int mount_id;
	const char *p = path && path[0] ? path : "";
	int flags = p[0] ? 0 : AT_EMPTY_PATH;

	/* cgroup2 hands out its 64-bit node id as the file handle, and
	 * the same number is the inode number on 64-bit kernels. */
	h.fh.handle_bytes = sizeof(h.id);
	if (name_to_handle_at(dirfd, p, &h.fh, &mount_id, flags) == 0 &&
	    h.fh.handle_bytes == sizeof(h.id)) {
		memcpy(id, h.fh.f_handle, sizeof(*id));
		return 0;
	}
	if (errno != EOPNOTSUPP && errno != EOVERFLOW)
		return -errno;
	if (fstatat(dirfd, p, &st, flags))
		return -errno;
	*id = st.st_ino;
	return 0;
}

static int check_cgroup2_dir(const char *arg, const char *dir, char *errbuf, size_t errlen)
{
	struct statfs sfs;
	struct stat st;

	if (stat(dir, &st) || statfs(dir, &sfs)) {
		int err = errno;

		errbuf_set(errbuf, errlen, "--cgroup %s: %s: %s", arg, dir, strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode)) {
		errbuf_set(errbuf, errlen, "--cgroup %s: %s is not a directory", arg, dir);
		return -ENOTDIR;
	}
	if ((unsigned long)sfs.f_type != CGROUP2_SUPER_MAGIC) {
		errbuf_set(errbuf, errlen, "--cgroup %s: %s is not a cgroup v2 directory (%s)", arg,
			   dir, (unsigned long)sfs.f_type == CGROUP_SUPER_MAGIC
			   ? "it is of a cgroup v1 hierarchy" : "not on a cgroup filesystem");
		return -EMEDIUMTYPE;
	}
	return 0;
}

int cgroup_resolve(const char *arg, struct cgroup_target *t, char *errbuf, size_t errlen)
{
	char mnt[PATH_MAX], root[PATH_MAX], cand[PATH_MAX + 32];
	const char *rel, *c;
	int ret, n;

	memset(t, 0, sizeof(*t));
	if (!arg[0]) {
		errbuf_set(errbuf, errlen, "--cgroup: empty path");
		return -EINVAL;
	}
	ret = cgroup2_mount(mnt, sizeof(mnt), root, sizeof(root));
	if (ret) {
		errbuf_set(errbuf, errlen, "--cgroup %s: no cgroup v2 filesystem is mounted", arg);
		return ret;
	}
	if (arg[0] == '/') {
		n = snprintf(cand, sizeof(cand), "%s", arg);
	} else {
		n = snprintf(cand, sizeof(cand), "%s/%s", mnt, arg);
		/* Relative to /sys/fs/cgroup, as on a unified host, works on
		 * a hybrid one too ("unified/..."). */
		if (n < (int)sizeof(cand) && access(cand, F_OK) && strcmp(mnt, "/sys/fs/cgroup")) {
			char alt[PATH_MAX + 32];

			if (snprintf(alt, sizeof(alt), "/sys/fs/cgroup/%s", arg) < (int)sizeof(alt) &&
			    !access(alt, F_OK))
				n = snprintf(cand, sizeof(cand), "%s", alt);
		}
	}
	if (n >= PATH_MAX) {
		errbuf_set(errbuf, errlen, "--cgroup %.64s...: path too long", arg);
		return -ENAMETOOLONG;
	}
	if (!realpath(cand, t->dir)) {
		int err = errno;

		if (err == ENOENT)
			errbuf_set(errbuf, errlen, "--cgroup %s: no such cgroup (%s does not exist)",
				   arg, cand);
		else
			errbuf_set(errbuf, errlen, "--cgroup %s: %s: %s", arg, cand, strerror(err));
		return -err;
	}
	ret = check_cgroup2_dir(arg, t->dir, errbuf, errlen);
	if (ret)
		return ret;
	ret = find_cgroup2_mount(t->dir, mnt, sizeof(mnt), root, sizeof(root));
	if (ret) {
		errbuf_set(errbuf, errlen, "--cgroup %s: %s is on no cgroup v2 mount of this namespace",
			   arg, t->dir);
		return -EMEDIUMTYPE;
	}
	rel = t->dir + (strcmp(mnt, "/") ? strlen(mnt) : 0);
	n = snprintf(t->path, sizeof(t->path), "%s%s", strcmp(root, "/") ? root : "", rel);
	if (n >= (int)sizeof(t->path)) {
		errbuf_set(errbuf, errlen, "--cgroup %.64s...: path too long", arg);
		return -ENAMETOOLONG;
	}
	if (!t->path[0])
		strcpy(t->path, "/");
	for (c = t->path; *c; c++)
		if (*c == '/' && c[1] && c[1] != '/')
			t->level++;
	ret = cgroup_id_at(AT_FDCWD, t->dir, &t->id);
	if (ret) {
		errbuf_set(errbuf, errlen, "--cgroup %s: cannot get the id of %s: %s", arg, t->dir,
			   strerror(-ret));
		return ret;
	}
	return 0;
}

bool cgroup_path_within(const struct cgroup_target *t, const char *proc_path)
{
	return path_under(proc_path, t->path);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

struct pid_vec {
	int *v;
	size_t n, cap;
};

static int pid_push(struct pid_vec *pv, int pid)
{
	if (pv->n == pv->cap) {
		size_t ncap = pv->cap ? pv->cap * 2 : 64;
		int *p = realloc(pv->v, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		pv->v = p;
		pv->cap = ncap;
	}
	pv->v[pv->n++] = pid;
	return 0;
}

/* Adds the pids of one cgroup.procs; a cgroup removed meanwhile has none. */
static int read_procs(int dfd, struct pid_vec *pv)
{
	int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	if (fd < 0)
		return errno == ENOENT || errno == ENODEV ? 0 : -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (!ret && getline(&line, &cap, f) > 0) {
		char *end;
		long pid = strtol(line, &end, 10);

		if (end != line && pid > 0 && pid <= INT32_MAX)
			ret = pid_push(pv, (int)pid);
	}
	if (!ret && ferror(f) && errno != ENODEV)
		ret = -EIO;
	free(line);
	fclose(f);
	return ret;
}

/* Depth-first over the cgroup tree; children are named relative to the
 * target so that no more than one directory is open at a time. */
int cgroup_target_pids(const struct cgroup_target *t, int **pids, size_t *n)
{
	struct pid_vec pv = { 0 };
	char **todo = NULL;
	size_t ntodo = 0, cap = 0, i, k;
	int ret = 0;

	*pids = NULL;
	*n = 0;
	todo = malloc(sizeof(*todo));
	if (!todo || !(todo[0] = strdup(t->dir))) {
		free(todo);
		return -ENOMEM;
	}
	ntodo = cap = 1;
	while (ntodo && !ret) {
		char *dir = todo[--ntodo];
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d;
		struct dirent *de;

		if (dfd < 0) {
			if (errno != ENOENT)
				ret = -errno;
			free(dir);
			continue;
		}
		ret = read_procs(dfd, &pv);
		d = ret ? NULL : fdopendir(dfd);
		if (!d) {
			close(dfd);
			ret = ret ? ret : -ENOMEM;
			free(dir);
			continue;
		}
		while (!ret && (de = readdir(d))) {
			char *child;

			if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (ntodo == cap) {
				char **p = realloc(todo, cap * 2 * sizeof(*p));

				if (!p) {
					ret = -ENOMEM;
					break;
				}
				todo = p;
				cap *= 2;
			}
			if (asprintf(&child, "%s/%s", dir, de->d_name) < 0) {
				ret = -ENOMEM;
				break;
			}
			todo[ntodo++] = child;
		}
		closedir(d);
		free(dir);
	}
	for (i = 0; i < ntodo; i++)
		free(todo[i]);
	free(todo);
	if (ret) {
		free(pv.v);
		return ret;
	}
	/* A process migrating during the walk can be seen twice. */
	if (pv.n)
		qsort(pv.v, pv.n, sizeof(*pv.v), int_cmp);
	for (i = k = 0; i < pv.n; i++)
		if (!k || pv.v[k - 1] != pv.v[i])
			pv.v[k++] = pv.v[i];
	*pids = pv.v;
	*n = k;
	if (!k) {
		free(pv.v);
		*pids = NULL;
	}
	return 0;
}

/* ---- files as a process sees them ------------------------------------ */

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
