#include "agent/perf/tracefs.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "agent/util/errbuf.h"
#include "agent/util/sysfs.h"

#define TRACEFS_DIR "/sys/kernel/tracing"
/* debugfs automounts tracefs here, for kernels and setups that only
 * mount debugfs. */
#define DEBUGFS_TRACING_DIR "/sys/kernel/debug/tracing"

static bool is_tracefs(const char *dir)
{
	struct statfs st;

	return !statfs(dir, &st) && st.f_type == TRACEFS_MAGIC;
}

int tracefs_root(const char **root, char *err, size_t errlen)
{
	static const char *found;

	if (found) {
		*root = found;
		return 0;
	}
	if (is_tracefs(TRACEFS_DIR)) {
		found = TRACEFS_DIR;
	} else if (is_tracefs(DEBUGFS_TRACING_DIR)) {
		found = DEBUGFS_TRACING_DIR;
	} else {
		/* Left mounted: another tool may start using it meanwhile, and
		 * an unused tracefs mount costs nothing. */
		if (mount("tracefs", TRACEFS_DIR, "tracefs", 0, NULL) && errno != EBUSY) {
			int e = errno;

			errbuf_set(err, errlen, "tracefs is not mounted and mounting it on %s failed: %s%s",
				   TRACEFS_DIR, strerror(e),
				   e == EPERM ? " (tracepoints need root)" : "");
			return -e;
		}
		if (!is_tracefs(TRACEFS_DIR)) {
			errbuf_set(err, errlen, "%s is not a tracefs after mounting it", TRACEFS_DIR);
			return -ENODEV;
		}
		found = TRACEFS_DIR;
	}
	*root = found;
	return 0;
}

/* Subsystem and event names become path components: no way out of the
 * events directory. */
static bool valid_component(const char *s)
{
	return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

int tracefs_event_id(const char *sys, const char *event, uint64_t *id, char *err, size_t errlen)
{
	const char *root;
	char path[4096], buf[32], *end;
	unsigned long long v;
	int ret;

	if (!valid_component(sys) || !valid_component(event)) {
		errbuf_set(err, errlen, "'%s:%s' is not a tracepoint name", sys, event);
		return -EINVAL;
	}
	ret = tracefs_root(&root, err, errlen);
	if (ret)
		return ret;
	if ((size_t)snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, sys, event) >= sizeof(path)) {
		errbuf_set(err, errlen, "tracepoint name '%s:%s' is too long", sys, event);
		return -ENAMETOOLONG;
	}
	ret = sysfs_read_line(path, buf, sizeof(buf), err, errlen);
	if (ret == -ENOENT)
		errbuf_set(err, errlen, "unknown tracepoint '%s:%s' (no %s)", sys, event, path);
	if (ret)
		return ret;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end) {
		errbuf_set(err, errlen, "%s: '%s' is not an id", path, buf);
		return -EIO;
	}
	*id = v;
	return 0;
}

static int list_dir(const char *path, struct dirent ***out)
{
	int n = scandir(path, out, NULL, alphasort);

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
	const char *root;
	char path[4096];
	int nsys, i, matches = 0, ret;

	ret = tracefs_root(&root, err, errlen);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/events", root);
	nsys = list_dir(path, &systems);
	if (nsys < 0) {
		errbuf_set(err, errlen, "%s: %s", path, strerror(-nsys));
		return nsys;
	}
	for (i = 0; i < nsys && ret == 0; i++) {
		const char *sys = systems[i]->d_name;
		struct dirent **events = NULL;
		int nev, j;

		if (sys[0] == '.' || fnmatch(sys_pattern, sys, 0))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", root, sys);
		nev = list_dir(path, &events);
		if (nev < 0)
			continue; /* a file such as events/enable */
		for (j = 0; j < nev && ret == 0; j++) {
			const char *ev = events[j]->d_name;
			struct stat st;

			if (ev[0] == '.' || fnmatch(event_pattern, ev, 0))
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, sys, ev) >=
				    sizeof(path) ||
			    stat(path, &st))
				continue;
			matches++;
			ret = fn(ctx, sys, ev);
		}
		free_list(events, nev);
	}
	free_list(systems, nsys);
	return ret ? ret : matches;
}
