/*
 * `cfiprof record -- CMD`: the command is forked held before its exec,
 * so that its pid is a target before its first instruction; released, it
 * stops again (ptrace) right after the exec and once more at its entry
 * point, after ld.so mapped its libraries, so that the agent can read
 * its mappings and load their tables before the program's own code runs.
 */
#ifndef AGENT_RECORD_LAUNCH_H
#define AGENT_RECORD_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct launch {
	char **argv;
	pid_t pid;                 /* 0: none (not started, or failed to exec) */
	int go_fd, exec_fd;        /* held_child_release's ends, until released */
	bool exited;               /* reaped: status is its wait status */
	int status;
	uint64_t released_ns;      /* when it was let run (monotonic) */
};

/* Forks argv held before its exec.  Returns 0 or a negative errno. */
int launch_spawn(struct launch *l, char **argv);

/* Lets it exec and waits until it stopped right after the exec.  Returns
 * 0, or a negative errno with a message printed: the exec failed (the
 * child is reaped and pid 0), or it did not stop (-ECHILD; exited). */
int launch_exec(struct launch *l);

/* Lets the program stopped at its exec run until its entry point, and
 * leaves it stopped there.  On any failure it is left stopped wherever it
 * is, which is still safe to detach from. */
int launch_run_to_entry(struct launch *l);

/* Lets it run on its own, untraced.  Returns 0 or a negative errno
 * (message printed). */
int launch_detach(struct launch *l);

/* Collects its exit status if it has exited; with `wait`, waits for it. */
void launch_reap(struct launch *l, bool wait);

/* Sends it `sig` and waits for it, unless it has exited. */
void launch_kill(struct launch *l, int sig);

/* Closes what is left: a command never released exits (127); one still
 * running is killed. */
void launch_close(struct launch *l);

#endif
