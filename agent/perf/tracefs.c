#include "agent/perf/tracefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent/util/caps.h"
#include "agent/util/errbuf.h"
#include "agent/util/sysfs.h"

#define TRACEFS_DIR "/sys/kernel/tracing"
/* Where debugfs shows tracefs, for setups that only mount debugfs. */
#define DEBUGFS_TRACING_DIR "/sys/kernel/debug/tracing"

/* An fd of `dir` if a tracefs is mounted there, else -1.  O_PATH without
 * O_DIRECTORY: debugfs mounts tracefs on its tracing directory the first
 * time a lookup crosses it (an automount), and that mount would stay in
 * the machine's mount table; such a lookup stops short of it. */
static int open_mounted(const char *dir)
{
	int fd = open(dir, O_PATH | O_CLOEXEC);
	struct statfs st;

	if (fd < 0)
		return -1;
	if (fstatfs(fd, &st) || st.f_type != TRACEFS_MAGIC) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A tracefs mount that is in no mount namespace's tree: only the fd
 * fsmount() returns reaches it, and it goes away with the fd, so with the
 * process.  Read-only: nothing here writes to tracefs. */
static int open_detached(char *err, size_t errlen)
{
	static const int need[] = { CAP_SYS_ADMIN };
	const char *step = "fsopen";
	char hint[96];
	int fs, mnt = -1, e;

	fs = fsopen("tracefs", FSOPEN_CLOEXEC);
	if (fs >= 0) {
		step = "fsconfig";
		if (!fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
			step = "fsmount";
			mnt = fsmount(fs, FSMOUNT_CLOEXEC,
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					      MOUNT_ATTR_NOEXEC);
		}
	}
	e = errno;
	if (fs >= 0)
		close(fs);
	if (mnt >= 0)
		return mnt;
	errbuf_set(err, errlen,
		   "no tracefs is mounted on %s or %s, and mounting one of its own failed: %s: %s%s",
		   TRACEFS_DIR, DEBUGFS_TRACING_DIR, step, strerror(e),
		   e == EPERM ? caps_refusal_hint(need, 1, "", hint, sizeof(hint))
		   : e == ENODEV ? " (a kernel without CONFIG_TRACING)"
				 : "");
	return -e;
}

int tracefs_dir(char *err, size_t errlen)
{
	static int dir = -1;
	int fd;

	if (dir >= 0)
		return dir;
	fd = open_mounted(TRACEFS_DIR);
	if (fd < 0)
		fd = open_mounted(DEBUGFS_TRACING_DIR);
	if (fd < 0)
		fd = open_detached(err, errlen);
	if (fd >= 0)
		dir = fd;
	return fd;
}

/* Subsystem and event names become path components: no way out of the
 * events directory. */
static bool valid_component(const char *s)
{
	return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

int tracefs_event_id(const char *sys, const char *event, uint64_t *id, char *err, size_t errlen)
{
	char path[4096], buf[32], *end;
	unsigned long long v;
	int dir, ret;

	if (!valid_component(sys) || !valid_component(event)) {
		errbuf_set(err, errlen, "'%s:%s' is not a tracepoint name", sys, event);
		return -EINVAL;
	}
	dir = tracefs_dir(err, errlen);
	if (dir < 0)
		return dir;
	if ((size_t)snprintf(path, sizeof(path), "events/%s/%s/id", sys, event) >= sizeof(path)) {
		errbuf_set(err, errlen, "tracepoint name '%s:%s' is too long", sys, event);
		return -ENAMETOOLONG;
	}
	ret = sysfs_read_line_at(dir, path, buf, sizeof(buf), err, errlen);
	if (ret == -ENOENT)
		errbuf_set(err, errlen, "unknown tracepoint '%s:%s' (no %s in tracefs)", sys, event, path);
	else if (ret)
		errbuf_set(err, errlen, "tracefs: %s: %s", path, strerror(-ret));
	if (ret)
		return ret;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end) {
		errbuf_set(err, errlen, "tracefs: %s: '%s' is not an id", path, buf);
		return -EIO;
	}
	*id = v;
	return 0;
}

static int list_dir(int dir, const char *path, struct dirent ***out)
{
	int n = scandirat(dir, path, out, NULL, alphasort);

	return n < 0 ? -errno : n;
}

static void free_list(struct dirent **l, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

int tracefs_glob(const char *sys_pattern, const char *event_pattern,
		 int (*fn)(void *ctx, const char *sys, const char *event), void *ctx,
		 char *err, size_t errlen)
{
	struct dirent **systems = NULL;
	char path[4096];
	int dir, nsys, i, matches = 0, ret = 0;

	dir = tracefs_dir(err, errlen);
	if (dir < 0)
		return dir;
	nsys = list_dir(dir, "events", &systems);
	if (nsys < 0) {
		errbuf_set(err, errlen, "tracefs: events: %s", strerror(-nsys));
		return nsys;
	}
	for (i = 0; i < nsys && ret == 0; i++) {
		const char *sys = systems[i]->d_name;
		struct dirent **events = NULL;
		int nev, j;

		if (sys[0] == '.' || fnmatch(sys_pattern, sys, 0))
			continue;
		snprintf(path, sizeof(path), "events/%s", sys);
		nev = list_dir(dir, path, &events);
		if (nev < 0)
			continue; /* a file such as events/enable */
		for (j = 0; j < nev && ret == 0; j++) {
			const char *ev = events[j]->d_name;
			struct stat st;

			if (ev[0] == '.' || fnmatch(event_pattern, ev, 0))
				continue;
			if ((size_t)snprintf(path, sizeof(path), "events/%s/%s/id", sys, ev) >= sizeof(path) ||
			    fstatat(dir, path, &st, 0))
				continue;
			matches++;
			ret = fn(ctx, sys, ev);
		}
		free_list(events, nev);
	}
	free_list(systems, nsys);
	return ret ? ret : matches;
}
