/*
 * A container's name, from the state its runtime keeps on disk: the
 * parsers of those files (JSON, json-c), one per format.  They are pure
 * (bytes in, names out) so that the fuzzer and the unit tests feed them
 * directly; agent/container/container_names.h finds and reads the files.
 *
 * A name is what the runtime shows its users: `docker run --name`,
 * `podman run --name`, Kubernetes' container in its pod.  The service a
 * container is (the service_name label) is its name, or for Kubernetes
 * NAMESPACE/CONTAINER, as Pyroscope's eBPF profiler groups pods: the
 * container's name in its pod spec is stable across the pod's restarts
 * and replicas, where the pod's name is not.
 */
#ifndef AGENT_CONTAINER_META_H
#define AGENT_CONTAINER_META_H

#include <stddef.h>

/* Docker, podman and Kubernetes (a DNS-1123 label or subdomain) names are
 * at most this long, in [A-Za-z0-9_.-]: anything else is refused. */
#define CONTAINER_NAME_MAX 253

struct container_meta {
	char name[CONTAINER_NAME_MAX + 1];         /* "" when unknown */
	char service[2 * CONTAINER_NAME_MAX + 2];  /* "" when unknown */
};

/* Docker's /var/lib/docker/containers/ID/config.v2.json: its "Name"
 * ("/web" -> "web"). */
int container_meta_from_docker(const char *buf, size_t len, struct container_meta *m);

/* An OCI runtime config.json (containerd's and CRI-O's bundles): the
 * Kubernetes names among its "annotations". */
int container_meta_from_oci(const char *buf, size_t len, struct container_meta *m);

/* runc's state.json (RUNC_ROOT/ID/state.json): the annotations runc keeps
 * as "config"."labels" ("KEY=VALUE"), as in an OCI config.json; and the
 * bundle's path ("bundle=PATH") in `bundle` (`size` bytes; "" when
 * absent or too long), which names where podman and CRI-O keep the
 * container's storage.  -ENOENT with `bundle` set: no name here, but
 * maybe in the storage. */
int container_meta_from_runc_state(const char *buf, size_t len, struct container_meta *m,
				   char *bundle, size_t size);

/* crun's status file (CRUN_ROOT/ID/status): the bundle's path, as for
 * runc's state; no name.  0 with `bundle` set, -ENOENT when it names
 * none (or one too long), -EINVAL when it is no JSON object. */
int container_meta_bundle_of_crun(const char *buf, size_t len, char *bundle, size_t size);

/* containers/storage's containers.json (podman, CRI-O): the first of
 * "names" of the container whose "id" is `id`. */
int container_meta_from_storage(const char *buf, size_t len, const char *id,
				struct container_meta *m);

/* All return 0 with `m` set (name and service non-empty), -ENOENT when
 * the file holds no valid name, -EINVAL when it is no JSON of that
 * shape.  `m` is cleared first. */

#endif
