/*
 * Which container a cgroup path names: runtimes put a container's
 * processes in a cgroup named after its 64-hex-digit id, with a prefix
 * saying whose it is (docker-ID.scope, cri-containerd-ID.scope, ...).
 */
#ifndef AGENT_CONTAINER_ID_H
#define AGENT_CONTAINER_ID_H

#include <stddef.h>

/* Every runtime recognized here names containers with 64 hex digits. */
#define CONTAINER_ID_LEN 64

enum container_runtime {
	CONTAINER_RT_NONE,          /* not in a container (or one not recognized) */
	CONTAINER_RT_DOCKER,        /* docker-ID.scope, /docker/ID */
	CONTAINER_RT_CONTAINERD,    /* cri-containerd-ID.scope */
	CONTAINER_RT_CRIO,          /* crio-ID.scope, crio-ID */
	CONTAINER_RT_PODMAN,        /* libpod-ID.scope, libpod-ID, libpod-payload-ID */
	CONTAINER_RT_UNKNOWN,       /* a bare ID (cgroupfs driver of Kubernetes, ECS, ...) */
};

/* The container named by one cgroup path (e.g. "/system.slice/docker-ID.scope"):
 * writes the ID into `id` (CONTAINER_ID_LEN + 1 bytes) and returns its
 * runtime, or CONTAINER_RT_NONE (id "").  Components are examined from
 * the last, so nested containers give the innermost one. */
enum container_runtime container_id_of_path(const char *path, size_t len, char *id);

/* "docker", "containerd", "cri-o", "podman", "unknown"; "" for none. */
const char *container_runtime_name(enum container_runtime rt);

#endif
