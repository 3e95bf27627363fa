#include "agent/container/container_names.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/container/container_id.h"

/* Bounds on what is read: a container's own files are kilobytes (runc's
 * state with a large seccomp profile some tens); containers.json lists
 * every container of a store, a few hundred bytes each. */
#define STATE_FILE_MAX (4u << 20)
#define STORAGE_FILE_MAX (32u << 20)

struct name_entry {
	struct container_meta meta;   /* first: what callers hold */
	char id[CONTAINER_ID_LEN + 1];
	uint32_t refs;
};

struct container_names {
	int root_fd;
	struct name_entry **v;
	uint32_t n;
	uint64_t refused;
};

struct container_names *container_names_new(const char *root)
{
	struct container_names *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->v = calloc(CONTAINER_NAMES_MAX, sizeof(*c->v));
	c->root_fd = open(root ? root : "/proc/1/root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* PID 1's root needs ptrace access to it: without, our own is
	 * the host's in all but a container of the agent's own. */
	if (c->root_fd < 0 && !root)
		c->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!c->v || c->root_fd < 0) {
		if (c->root_fd >= 0)
			close(c->root_fd);
		free(c->v);
		free(c);
		return NULL;
	}
	return c;
}

/* Reads `path` (absolute, resolved under the root) into a malloc'd
 * buffer if it is a file only root could have written: -ENOENT when it
 * is not there, -EPERM when it is there but unsafe (counted). */
static int read_safe(struct container_names *c, const char *path, size_t max, char **buf,
		     size_t *len)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
		/* in the root, and no symbolic link anywhere on the way: a
		 * link planted in a directory a container can write would
		 * lead elsewhere */
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	size_t got = 0;
	char *b = NULL;
	int fd, ret;

	while (*path == '/')
		path++;
	fd = (int)syscall(SYS_openat2, c->root_fd, path, &how, sizeof(how));
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : (c->refused++, -EPERM);
	ret = -EPERM;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & S_IWOTH) ||
	    ((st.st_mode & S_IWGRP) && st.st_gid != 0) || st.st_size < 0 || (size_t)st.st_size > max)
		goto out;
	/* the size may change under us: never more than `max` */
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, b + got, (size_t)st.st_size + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto out;
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > (size_t)st.st_size)
			goto out;   /* grown since: read again next time */
	}
	*buf = b;
	*len = got;
	b = NULL;
	ret = 0;
out:
	if (ret == -EPERM)
		c->refused++;
	free(b);
	close(fd);
	return ret;
}

typedef int (*meta_parser)(const char *buf, size_t len, struct container_meta *m);

static int from_file(struct container_names *c, const char *path, meta_parser parse,
		     struct container_meta *m)
{
	char *buf;
	size_t len;
	int ret = read_safe(c, path, STATE_FILE_MAX, &buf, &len);

	if (ret)
		return ret;
	ret = parse(buf, len, m);
	free(buf);
	return ret;
}

/* The store's containers.json of a podman or CRI-O bundle,
 * STORE/overlay-containers/ID/userdata: only a path of that shape, for
 * this id, is followed. */
static int from_bundle(struct container_names *c, const char *bundle, const char *id,
		       struct container_meta *m)
{
	size_t n = strlen(bundle), idlen = strlen(id), tail = 1 + idlen + strlen("/userdata");
	const char *dir_end, *dir;
	char path[4096];
	char *buf;
	size_t len;
	int ret;

	if (bundle[0] != '/' || n <= tail || strcmp(bundle + n - strlen("/userdata"), "/userdata") ||
	    memcmp(bundle + n - tail + 1, id, idlen) || bundle[n - tail] != '/')
		return -ENOENT;
	dir_end = bundle + n - tail;     /* at the '/' before the id */
	for (dir = dir_end; dir > bundle && dir[-1] != '/'; dir--)
		;
	if (dir_end - dir <= (ptrdiff_t)strlen("-containers") ||
	    memcmp(dir_end - strlen("-containers"), "-containers", strlen("-containers")) ||
	    strstr(bundle, "/../") || strstr(bundle, "/./") ||
	    snprintf(path, sizeof(path), "%.*s/containers.json", (int)(dir_end - bundle), bundle) >=
		    (int)sizeof(path))
		return -ENOENT;
	ret = read_safe(c, path, STORAGE_FILE_MAX, &buf, &len);
	if (ret)
		return ret;
	ret = container_meta_from_storage(buf, len, id, m);
	free(buf);
	return ret;
}

static int from_runc(struct container_names *c, const char *path, const char *id,
		     struct container_meta *m)
{
	char bundle[4096], *buf;
	size_t len;
	int ret = read_safe(c, path, STATE_FILE_MAX, &buf, &len);

	if (ret)
		return ret;
	ret = container_meta_from_runc_state(buf, len, m, bundle, sizeof(bundle));
	free(buf);
	if (ret == -ENOENT && bundle[0])
		ret = from_bundle(c, bundle, id, m);
	return ret;
}

/* crun keeps no annotations of its own: the bundle's OCI config has them
 * (CRI-O's Kubernetes names), else its storage names it (podman). */
static int from_crun(struct container_names *c, const char *id, struct container_meta *m)
{
	char path[4096 + 32], bundle[4096], *buf;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "/run/crun/%s/status", id);
	ret = read_safe(c, path, STATE_FILE_MAX, &buf, &len);
	if (ret)
		return ret;
	ret = container_meta_bundle_of_crun(buf, len, bundle, sizeof(bundle));
	free(buf);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	if (bundle[0] == '/' && !from_file(c, path, container_meta_from_oci, m))
		return 0;
	return from_bundle(c, bundle, id, m);
}

static int from_podman_store(struct container_names *c, const char *id, struct container_meta *m)
{
	char *buf;
	size_t len;
	int ret = read_safe(c, "/var/lib/containers/storage/overlay-containers/containers.json",
			    STORAGE_FILE_MAX, &buf, &len);

	if (ret)
		return ret;
	ret = container_meta_from_storage(buf, len, id, m);
	free(buf);
	return ret;
}

static void resolve(struct container_names *c, const char *id, struct container_meta *m)
{
	static const char *const runc_roots[] = { "/run/runc", "/run/containerd/runc/k8s.io",
						  "/run/docker/runtime-runc/moby" };
	char path[256];
	size_t i;

	snprintf(path, sizeof(path), "/var/lib/docker/containers/%s/config.v2.json", id);
	if (!from_file(c, path, container_meta_from_docker, m))
		return;
	for (i = 0; i < sizeof(runc_roots) / sizeof(runc_roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/state.json", runc_roots[i], id);
		if (!from_runc(c, path, id, m))
			return;
	}
	if (!from_crun(c, id, m))
		return;
	snprintf(path, sizeof(path), "/run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/config.json",
		 id);
	if (!from_file(c, path, container_meta_from_oci, m))
		return;
	if (!from_podman_store(c, id, m))
		return;
	memset(m, 0, sizeof(*m));
}

static bool valid_id(const char *id)
{
	size_t i;

	for (i = 0; i < CONTAINER_ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return id[CONTAINER_ID_LEN] == 0;
}

const struct container_meta *container_names_get(struct container_names *c, const char *id)
{
	struct name_entry *e;
	uint32_t i;

	if (!c || !id || !valid_id(id))
		return NULL;
	/* a node runs some tens of containers: a scan is enough */
	for (i = 0; i < c->n; i++)
		if (!strcmp(c->v[i]->id, id)) {
			c->v[i]->refs++;
			return &c->v[i]->meta;
		}
	if (c->n == CONTAINER_NAMES_MAX || !(e = calloc(1, sizeof(*e))))
		return NULL;
	memcpy(e->id, id, CONTAINER_ID_LEN + 1);
	resolve(c, id, &e->meta);
	e->refs = 1;
	c->v[c->n++] = e;
	return &e->meta;
}

void container_names_put(struct container_names *c, const struct container_meta *m)
{
	uint32_t i;

	if (!c || !m)
		return;
	for (i = 0; i < c->n; i++)
		if (&c->v[i]->meta == m) {
			if (--c->v[i]->refs == 0) {
				free(c->v[i]);
				c->v[i] = c->v[--c->n];
			}
			return;
		}
}

uint32_t container_names_count(const struct container_names *c)
{
	return c ? c->n : 0;
}

uint64_t container_names_refused(const struct container_names *c)
{
	return c ? c->refused : 0;
}

void container_names_free(struct container_names *c)
{
	uint32_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	close(c->root_fd);
	free(c);
}
