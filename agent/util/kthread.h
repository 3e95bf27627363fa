/* Kernel threads, which have pids but no user-space memory or code. */
#ifndef AGENT_KTHREAD_H
#define AGENT_KTHREAD_H

#include <stddef.h>

/* Whether `pid` is a kernel thread (PF_KTHREAD in /proc/PID/stat), its
 * name into comm (len bytes, may be NULL).  1 yes, 0 no, or a negative
 * errno (-ENOENT: no such process). */
int kthread_check(int pid, char *comm, size_t len);

#endif
