/*
 * The capabilities the kernel checks, for messages that name the one a
 * refused operation lacked: "root" may hold neither CAP_BPF nor
 * CAP_PERFMON (a container, a systemd unit, capsh --drop), and
 * "needs root" then sends its user looking in the wrong place.
 */
#ifndef AGENT_CAPS_H
#define AGENT_CAPS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the process holds `cap` (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN,
 * ...) in its effective set.  CAP_SYS_ADMIN counts for CAP_BPF and
 * CAP_PERFMON, as the kernel takes it in their place. */
bool caps_have(int cap);

/* Why an operation needing all of caps[0..n) was refused (EPERM, EACCES),
 * as a parenthesized suffix for a message: " (the process lacks CAP_BPF
 * and CAP_PERFMON)" naming those missing, or `otherwise` (may be "") when
 * none is: then the refusal has another cause.  Written to buf, returned. */
const char *caps_refusal_hint(const int *caps, int n, const char *otherwise, char *buf, size_t len);

/* "CAP_BPF" for CAP_BPF, and so on for those cfiprof needs; "a
 * capability" for the others. */
const char *caps_name(int cap);

#endif
