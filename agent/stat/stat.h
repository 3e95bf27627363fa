/* `cfiprof stat`: count hardware, software, cache and tracepoint events
 * of a command, processes, CPUs or a cgroup, as perf stat does. */
#ifndef AGENT_STAT_H
#define AGENT_STAT_H

int cmd_stat(int argc, char **argv);

#endif
