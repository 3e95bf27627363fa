#include "agent/procs/cgroup_cache.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/container/cgroup_target.h"

static struct cgroup_entry *find(struct cgroup_cache *c, uint64_t id)
{
	uint32_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].id == id)
			return &c->v[i];
	return NULL;
}

/* The cgroup2 mount, if the paths /proc/PID/cgroup gives are paths on it
 * (it shows the root of our cgroup namespace); else NULL. */
static const char *mount_point(struct cgroup_cache *c)
{
	char mnt[PATH_MAX], root[PATH_MAX];

	if (!c->mount_state) {
		c->mount_state = -1;
		if (!cgroup2_mount(mnt, sizeof(mnt), root, sizeof(root)) && !strcmp(root, "/") &&
		    (c->mount = strdup(mnt)))
			c->mount_state = 1;
	}
	return c->mount_state > 0 ? c->mount : NULL;
}

/* The id of cgroup v2 `path` (its directory's inode number on the
 * cgroup2 mount), or 0.  What a read found is filed under the id of the
 * cgroup it found, not the record's: the process may have moved since
 * its record, or have none (found by its samples, or read late, after
 * an exec that changed its cgroup). */
static uint64_t path_id(struct cgroup_cache *c, const char *path)
{
	const char *mnt = mount_point(c);
	char dir[PATH_MAX];
	struct stat st;

	if (!mnt || path[0] != '/' ||
	    snprintf(dir, sizeof(dir), "%s%s", mnt, path) >= (int)sizeof(dir))
		return 0;
	return stat(dir, &st) ? 0 : (uint64_t)st.st_ino;
}

/* Files what c->ci says under `id`, in place of the least recently used
 * entry when the cache is full. */
static void insert(struct cgroup_cache *c, uint64_t id)
{
	struct cgroup_entry *e;
	char *path = NULL;
	uint32_t i;

	if (c->ci->has_v2 && !(path = strdup(c->ci->path)))
		return;
	if (!c->v && !(c->v = calloc(CGROUP_CACHE_MAX, sizeof(*c->v)))) {
		free(path);
		return;
	}
	if (c->n < CGROUP_CACHE_MAX) {
		e = &c->v[c->n++];
	} else {
		e = &c->v[0];
		for (i = 1; i < c->n; i++)
			if (c->v[i].used < e->used)
				e = &c->v[i];
		free(e->path);
		c->evicted++;
	}
	e->id = id;
	e->used = c->tick;
	e->path = path;
	memcpy(e->container_id, c->ci->container_id, sizeof(e->container_id));
}

int cgroup_cache_labels(struct cgroup_cache *c, int pid, uint64_t cgroup_id,
			struct cgroup_labels *out)
{
	struct cgroup_entry *e = cgroup_id ? find(c, cgroup_id) : NULL;
	uint64_t read_id;
	int ret;

	c->tick++;
	if (e) {
		e->used = c->tick;
		c->hits++;
		out->path = e->path;
		out->container_id = e->container_id;
		return 0;
	}
	if (!c->ci && !(c->ci = malloc(sizeof(*c->ci))))
		return -ENOMEM;
	ret = cgroup_read(pid, c->ci);
	if (ret)
		return ret;
	c->reads++;
	if (c->ci->has_v2 && (read_id = path_id(c, c->ci->path)) && !find(c, read_id))
		insert(c, read_id);
	out->path = c->ci->has_v2 ? c->ci->path : NULL;
	out->container_id = c->ci->container_id;
	return 0;
}

void cgroup_cache_free(struct cgroup_cache *c)
{
	uint32_t i;

	for (i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	free(c->ci);
	free(c->mount);
	memset(c, 0, sizeof(*c));
}
