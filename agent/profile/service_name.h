/*
 * The service_name label the agent gives every sample: what backends
 * (Pyroscope's series, Parca's and Grafana's selectors) group a fleet's
 * profiles by.  A container is its name, else its id; a process outside
 * containers is its systemd unit, else its program's comm.
 */
#ifndef AGENT_PROFILE_SERVICE_NAME_H
#define AGENT_PROFILE_SERVICE_NAME_H

#include <stddef.h>

/* The systemd unit a cgroup v2 path is in: its last component that is a
 * unit name ending in ".service" or ".scope" ("/system.slice/nginx.service"
 * -> "nginx.service", also "user@0.service" and "session-3.scope"); NULL
 * when none is.  Returns a pointer into `cgroup` and the unit's length in
 * *len (it is not NUL-terminated there when a component follows). */
const char *service_name_unit(const char *cgroup, size_t *len);

/* The service_name of a process from what is known of it (NULL or "":
 * unknown): the container's name, else its id, else the unit of its
 * cgroup, else its comm, else "unknown".  Returns a pointer into one of
 * them (or to a constant) and the length in *len. */
const char *service_name(const char *container_name, const char *container_id,
			 const char *cgroup, const char *comm, size_t *len);

#endif
