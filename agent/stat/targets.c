#include "agent/stat/targets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent/container/cgroup_target.h"
#include "agent/perf/cpus.h"
#include "agent/util/array.h"
#include "agent/util/errbuf.h"

int targets_add_unit(struct target_units *u, pid_t pid, int cpu)
{
	if (array_reserve(&u->v, &u->cap, (size_t)u->n + 1))
		return -ENOMEM;
	u->v[u->n++] = (struct counter_unit){ .pid = pid, .cpu = cpu };
	return 0;
}

void targets_free(struct target_units *u)
{
	free(u->v);
	*u = (struct target_units){ 0 };
}

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* Whether units [from, to) hold a thread that units [0, from) hold. */
static bool threads_met_before(const struct target_units *u, int from, int to)
{
	int i, j;

	for (i = from; i < to; i++)
		for (j = 0; j < from; j++)
			if (u->v[j].cpu == -1 && u->v[j].pid == u->v[i].pid)
				return true;
	return false;
}

int targets_add_threads(struct target_units *u, int pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int found = 0, ret = 0, first = u->n;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d)) && !ret) {
		if (!all_digits(de->d_name))
			continue;
		ret = targets_add_unit(u, (pid_t)atoi(de->d_name), -1);
		found++;
	}
	closedir(d);
	/* /proc/TID/task lists TID's whole process: -p PID,TID (or PID
	 * twice) names it again, and its threads would count twice.  Threads
	 * born since the first listing are counted there too, by inherit. */
	if (!ret && threads_met_before(u, first, u->n))
		u->n = first;
	return ret ? ret : found ? 0 : -ESRCH;
}

bool targets_process_alive(int pid)
{
	char path[300], state = 0;
	struct dirent *de;
	bool alive = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!alive && (de = readdir(d))) {
		FILE *f;

		if (!all_digits(de->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, de->d_name);
		f = fopen(path, "re");
		/* "tid (comm) S ...": comm may hold spaces and parentheses. */
		if (f) {
			char line[512], *rp;

			if (fgets(line, sizeof(line), f) && (rp = strrchr(line, ')')) && rp[1] == ' ')
				state = rp[2];
			fclose(f);
			alive = state && state != 'Z' && state != 'X';
		}
	}
	closedir(d);
	return alive;
}

/* The messages `cfiprof stat` has always given, whichever step of the
 * resolution failed: they name the path before it was resolved. */
static int cgroup_error(const char *arg, int ret, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int path_ret = cgroup_arg_path(arg, path, sizeof(path));

	if (path_ret == -ENAMETOOLONG)
		errbuf_set(err, errlen, "--cgroup: %s: %s", arg, strerror(ENAMETOOLONG));
	else if (path_ret)
		errbuf_set(err, errlen, "--cgroup: %s: no cgroup2 file system is mounted", arg);
	else if (ret == -EMEDIUMTYPE)
		errbuf_set(err, errlen, "--cgroup: %s is not a cgroup v2 directory", path);
	else
		errbuf_set(err, errlen, "--cgroup: %s: %s", path, strerror(-ret));
	return ret;
}

int targets_open_cgroup(const char *arg, char *err, size_t errlen)
{
	struct cgroup_target t;
	struct statfs st;
	int fd, ret;

	ret = cgroup_resolve(arg, &t, err, errlen);
	if (ret)
		return cgroup_error(arg, ret, err, errlen);
	fd = open(t.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cgroup_error(arg, -errno, err, errlen);
	/* The kernel filters on what fd is: the directory resolved a moment
	 * ago may have been replaced since. */
	if (fstatfs(fd, &st) || st.f_type != CGROUP2_SUPER_MAGIC) {
		close(fd);
		return cgroup_error(arg, -EMEDIUMTYPE, err, errlen);
	}
	return fd;
}

int targets_add_cpus(struct target_units *u, const bool *only, char *err, size_t errlen)
{
	int ncpus = cpu_count_possible(), cpu, ret;
	bool *online = calloc((size_t)ncpus, sizeof(bool));

	if (!online)
		return -ENOMEM;
	ret = cpu_online_set(online, ncpus, err, errlen);
	for (cpu = 0; cpu < ncpus && !ret; cpu++) {
		if (only && !only[cpu])
			continue;
		if (!online[cpu]) {
			if (!only)
				continue;
			errbuf_set(err, errlen, "CPU %d is offline", cpu);
			ret = -ENODEV;
			break;
		}
		ret = targets_add_unit(u, -1, cpu);
	}
	free(online);
	return ret;
}
