/*
 * A command run by cfiprof (`-- CMD`), forked and held before its exec
 * until released, so that the counting or sampling of its pid is in place
 * before its first instruction; a failed exec is reported back with its
 * errno.
 *
 * The whole life of such a child, in struct held_child:
 *
 *	struct held_child ch = HELD_CHILD_INIT;
 *
 *	held_child_start(&ch, argv, NULL, NULL);    forked, held before exec
 *	...open counters or attach to ch.pid...
 *	held_child_run(&ch);                        execs now (or its errno)
 *	while (!held_child_reap(&ch, false))        running: poll, or wait
 *		...;                                on SIGCHLD
 *	held_child_exit_code(&ch);                  the shell's $?
 *	held_child_end(&ch, 2000);                  always: ends and reaps it
 *
 * held_child_end is safe in every state (never started, held, running,
 * exited), so error paths call it unconditionally.  A traced child
 * (before_exec asking PTRACE_TRACEME) stops at its exec: held_child_reap
 * ignores stops, so wait for that one with waitpid(ch.pid) yourself, and
 * record an exit found there in ch.exited and ch.status.
 */
#ifndef AGENT_CHILD_H
#define AGENT_CHILD_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

struct held_child {
	pid_t pid;               /* 0: none was started */
	int go_fd, exec_fd;      /* the release and exec-failure pipes; -1 once used */
	bool exited;             /* reaped: status and ru are valid */
	bool ended;              /* we signalled it to end: its status is not its own doing */
	int status;              /* its wait status */
	struct rusage ru;        /* its resources, and its reaped children's */
};

#define HELD_CHILD_INIT { .pid = 0, .go_fd = -1, .exec_fd = -1 }

/* Forks argv[0] held: the child waits for its release, calls
 * before_exec(arg) (if not NULL; non-zero makes it exit 127), then
 * execvp()s.  `ch` must be HELD_CHILD_INIT.  Returns 0 or a negative
 * errno (nothing was started). */
int held_child_start(struct held_child *ch, char **argv, int (*before_exec)(void *arg), void *arg);

/* Lets a held child exec and waits until it did.  Returns 0, or the
 * negative errno of its failed exec (the child is reaped by then). */
int held_child_run(struct held_child *ch);

/* Reaps the child if it has exited (waits for that when `block`), filling
 * status and ru.  Returns whether it has exited; false when none was
 * started. */
bool held_child_reap(struct held_child *ch, bool block);

/* Ends a child in any state and reaps it: a held one is told to exit, a
 * running one gets SIGTERM, and SIGKILL if it is still there grace_ms
 * later (cfiprof must not hang on a command that ignores SIGTERM). */
void held_child_end(struct held_child *ch, unsigned grace_ms);

/* What a shell would give as $?: the exit status, or 128 + the signal
 * that killed it.  -1 while it has not exited. */
int held_child_exit_code(const struct held_child *ch);

/* How it ended, for a message: "exited with status 7", "was killed by
 * signal 15 (Terminated)"; "is still running" while it has not exited. */
void held_child_describe_exit(const struct held_child *ch, char *buf, size_t len);

/* Whether execvp(file) would find something to run, searched as it
 * searches PATH, so that a command that cannot start is told before any
 * work is done for it.  0, or -ENOENT (nowhere) or -EACCES (found, but
 * not an executable file). */
int held_child_find(const char *file);

/* held_child_find, told as a shell tells it: a command that cannot be run
 * gets one line on stderr, "PROG: FILE: reason", and the status a shell
 * gives it, 127 (not found) or 126 (found, not executable).  0 if it can
 * be run. */
int held_child_check(const char *prog, const char *file);

#endif
