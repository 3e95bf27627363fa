/* `cfiprof agent` (cmd_agent.c): the daemon.  The record engine
 * (agent/record/engine.h) samples for as long as it runs; a profile is
 * cut every --interval and whenever an HTTP pull request's window opens
 * or closes, and each cut goes to whoever waits for it. */
#ifndef AGENT_DAEMON_AGENT_H
#define AGENT_DAEMON_AGENT_H

int cmd_agent(int argc, char **argv);

#endif
