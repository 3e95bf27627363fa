/*
 * How `cfiprof record -- CMD` runs its command.  The command's life is
 * the shared held child's (agent/util/child.h: started held before its
 * exec so that its pid is a target before its first instruction, reaped,
 * ended); what is record's own is ptrace.  The command asks to be traced
 * before its exec, so that, released, it stops right after the exec and
 * once more at its entry point, after ld.so mapped its libraries: the
 * agent reads its mappings and loads their tables before the program's
 * own code runs, then detaches.
 */
#ifndef AGENT_RECORD_LAUNCH_H
#define AGENT_RECORD_LAUNCH_H

#include <stdint.h>

#include "agent/util/child.h"

/* Starts argv held before its exec, to be traced from the exec on.  `ch`
 * must be HELD_CHILD_INIT.  Returns 0 or a negative errno (message
 * printed). */
int launch_start(struct held_child *ch, char **argv);

/* Lets it exec and waits until it stopped right after the exec.  Returns
 * 0, or a negative errno: the exec failed (message printed; the child is
 * reaped), or it did not stop (-ECHILD): it exited instead, which is in
 * ch->exited and ch->status for the caller to tell, or the wait failed
 * (message printed). */
int launch_exec(struct held_child *ch, const char *name);

/* Lets the program stopped at its exec run until its entry point, and
 * leaves it stopped there.  On any failure it is left stopped wherever it
 * is, which is still safe to detach from, unless it exited on the way (a
 * library missing, a constructor calling exit()): that is in ch->exited
 * and ch->status, and the return is -ECHILD. */
int launch_run_to_entry(struct held_child *ch);

/* Lets it run on its own, untraced; *released_ns is when (monotonic),
 * taken before it runs again.  Returns 0 or a negative errno (message
 * printed). */
int launch_detach(const struct held_child *ch, const char *name, uint64_t *released_ns);

/* After the profile: SIGTERM, and a wait as long as it takes; ch->ended
 * says it was ended so, and is false if it had exited by itself.  No
 * SIGKILL after a grace, unlike held_child_end: a second Ctrl-C cuts the
 * wait short, and launch_close kills it then. */
void launch_stop(struct held_child *ch);

/* In any state (never started, held, stopped traced, running, exited):
 * SIGKILL at once, and reaped. */
void launch_close(struct held_child *ch);

#endif
