/*
 * The command `cfiprof stat -- CMD` runs: started held before its exec
 * (agent/util/child.h) so that its counters are open before its first
 * instruction, released once they are, and whose exit status becomes
 * stat's own.
 */
#ifndef AGENT_STAT_COMMAND_H
#define AGENT_STAT_COMMAND_H

#include <signal.h>

#include "agent/util/child.h"

/* Starts cmd held, with `mask` as its signal mask (the one cfiprof had
 * before blocking the signals it reads from a signalfd).  Returns 0, or
 * a negative errno having printed why. */
int stat_command_start(struct held_child *ch, char **cmd, sigset_t *mask);

/* Lets it exec.  Returns 0, or the negative errno of its failed exec,
 * having printed it. */
int stat_command_run(struct held_child *ch, char **cmd);

/* `cfiprof stat`'s exit status after a run that printed its counts:
 * CMD's own when it ran to its end (as perf stat's), else 0 (no command,
 * one still running, or counting stopped by `stop_signal`). */
int stat_command_exit_status(const struct held_child *ch, int stop_signal);

#endif
