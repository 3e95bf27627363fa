/*
 * A command forked and held before its exec until released, so that the
 * sampling or counting of its pid is in place before its first
 * instruction; a failed exec is reported back with its errno.
 */
#ifndef AGENT_CHILD_H
#define AGENT_CHILD_H

#include <sys/types.h>

/* Forks argv[0] held: the child waits for held_child_release, calls
 * before_exec(arg) (if not NULL; non-zero makes it exit 127), then
 * execvp()s.  On success *pid is the child and *go_fd, *exec_fd the two
 * ends held_child_release takes.  Returns 0 or a negative errno. */
int held_child_spawn(char **argv, int (*before_exec)(void *arg), void *arg, pid_t *pid,
		     int *go_fd, int *exec_fd);

/* Lets the child exec, waits until it did, and closes both fds.  Returns
 * 0, or the negative errno of its failed exec (the child then exits 127:
 * reap it).  Closing go_fd without releasing makes the child exit 127. */
int held_child_release(int go_fd, int exec_fd);

#endif
