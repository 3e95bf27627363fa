/*
 * The name of the node the agent profiles, for the hostname label.  In a
 * container of its own (Containerfile, daemonset.yaml) without the host's
 * UTS namespace, gethostname() names the container, not the machine: with
 * the host's pid namespace (--pid=host, hostPID), the host's UTS
 * namespace is that of PID 1 or, where PID 1 is out of reach, of the
 * outermost ancestor the agent may inspect (the runtime's shim -- conmon,
 * containerd-shim -- runs in the node's namespaces).  A helper thread
 * joins it, reads uname(), and ends: the agent's own threads stay where
 * they are.  Kubernetes users may also name the node (--hostname, from
 * the downward API's spec.nodeName).
 */
#ifndef AGENT_DAEMON_NODE_NAME_H
#define AGENT_DAEMON_NODE_NAME_H

#include <stddef.h>

/* The node's host name into buf[0..size): 0, or a negative errno when
 * not even gethostname() answered. */
int node_name(char *buf, size_t size);

#endif
