/*
 * Processes in containers, seen from the host, all of it: which cgroup
 * and container a process is in (cgroup.h, container_id.h), the cgroup
 * `--cgroup PATH` names (cgroup_target.h), and its files opened inside
 * its root (container_open.h).  For the files that use every part; new
 * code includes the part it needs.
 */
#ifndef AGENT_CONTAINER_H
#define AGENT_CONTAINER_H

#include "agent/container/cgroup.h"
#include "agent/container/cgroup_target.h"
#include "agent/container/container_id.h"
#include "agent/container/container_open.h"

#endif
