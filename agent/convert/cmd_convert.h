/* `cfiprof convert`: a pprof profile into flame graphs, folded stacks or
 * perf.data. */
#ifndef AGENT_CONVERT_CMD_CONVERT_H
#define AGENT_CONVERT_CMD_CONVERT_H

/* argv[0] is the command's name.  Exit status: 0, 1 when the conversion
 * fails, 2 after a usage error. */
int cmd_convert(int argc, char **argv);

#endif
