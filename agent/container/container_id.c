#include "agent/container/container_id.h"

#include <stdbool.h>
#include <string.h>

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
