#include "agent/container/cgroup_target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent/util/array.h"
#include "agent/util/errbuf.h"

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

/* The path `arg` names below the cgroup2 mount `mnt` (unused for an
 * absolute one), before anything in it is resolved. */
static int candidate_path(const char *arg, const char *mnt, char *cand, size_t len)
{
	int n;

	if (arg[0] == '/') {
		n = snprintf(cand, len, "%s", arg);
	} else {
		n = snprintf(cand, len, "%s/%s", mnt, arg);
		/* Relative to /sys/fs/cgroup, as on a unified host, works on
		 * a hybrid one too ("unified/..."). */
		if (n < (int)len && access(cand, F_OK) && strcmp(mnt, "/sys/fs/cgroup")) {
			char alt[PATH_MAX + 32];

			if (snprintf(alt, sizeof(alt), "/sys/fs/cgroup/%s", arg) < (int)sizeof(alt) &&
			    !access(alt, F_OK))
				n = snprintf(cand, len, "%s", alt);
		}
	}
	return n >= PATH_MAX || n >= (int)len ? -ENAMETOOLONG : 0;
}

int cgroup_arg_path(const char *arg, char *path, size_t len)
{
	char mnt[PATH_MAX] = "", root[PATH_MAX];
	int ret;

	if (arg[0] != '/') {
		ret = cgroup2_mount(mnt, sizeof(mnt), root, sizeof(root));
		if (ret)
			return ret;
	}
	return candidate_path(arg, mnt, path, len);
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
	ret = candidate_path(arg, mnt, cand, sizeof(cand));
	if (ret) {
		errbuf_set(errbuf, errlen, "--cgroup %.64s...: path too long", arg);
		return ret;
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
	if (array_reserve_first(&pv->v, &pv->cap, pv->n + 1, 64))
		return -ENOMEM;
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
	if (array_reserve(&todo, &cap, 1) || !(todo[0] = strdup(t->dir))) {
		free(todo);
		return -ENOMEM;
	}
	ntodo = 1;
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
			if (array_reserve(&todo, &cap, ntodo + 1)) {
				ret = -ENOMEM;
				break;
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
