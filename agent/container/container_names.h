/*
 * The names of the containers on this node, by id, read from the state
 * their runtimes keep on disk (the parsers: container_meta.h), in order:
 *   Docker      /var/lib/docker/containers/ID/config.v2.json
 *   runc        /run/runc/ID/state.json (podman, CRI-O),
 *               /run/containerd/runc/k8s.io/ID/state.json,
 *               /run/docker/runtime-runc/moby/ID/state.json:
 *               Kubernetes' annotations; for podman and CRI-O the bundle,
 *               whose containers/storage names the container
 *               (BUNDLE/../../containers.json)
 *   crun        /run/crun/ID/status: the bundle, whose config.json has the
 *               annotations, else as for runc
 *   containerd  /run/containerd/io.containerd.runtime.v2.task/k8s.io/ID/config.json
 *   podman      /var/lib/containers/storage/overlay-containers/containers.json
 *
 * The agent runs as root and these files are the runtimes': a file is
 * read only if it is a regular file owned by root, writable by nobody
 * else, reached without following a symbolic link, and not too big (a
 * size per kind).  Anything else -- or no name in it -- and the container
 * is known by its id alone.  Paths are resolved under the root directory
 * of PID 1 (/proc/1/root): the host's files also when the agent runs in a
 * container of its own with the host's pid namespace.
 *
 * Names are cached by id while processes of the container are known (a
 * reference each), at most CONTAINER_NAMES_MAX containers at a time.
 */
#ifndef AGENT_CONTAINER_NAMES_H
#define AGENT_CONTAINER_NAMES_H

#include <stdint.h>

#include "agent/container/container_meta.h"

#define CONTAINER_NAMES_MAX 4096

struct container_names;

/* A cache resolving paths under `root` (NULL: /proc/1/root, else / when
 * that cannot be opened).  NULL: no memory, or `root` cannot be opened. */
struct container_names *container_names_new(const char *root);

/* The names of container `id` (64 hex digits), with a reference the
 * caller gives back with container_names_put; the first reference reads
 * the runtimes' files (a name "": no runtime's file names it, and it is
 * not looked for again while referenced).  NULL: too many containers or
 * no memory.  Either way, without a name its id is all there is. */
const struct container_meta *container_names_get(struct container_names *c, const char *id);

/* Gives back a reference container_names_get returned (NULL: nothing);
 * the last one releases the entry. */
void container_names_put(struct container_names *c, const struct container_meta *m);

/* Containers cached now, and files refused for being unsafe (owner,
 * mode, type, size, a symbolic link on the way). */
uint32_t container_names_count(const struct container_names *c);
uint64_t container_names_refused(const struct container_names *c);

void container_names_free(struct container_names *c);

#endif
